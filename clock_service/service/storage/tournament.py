"""The tournament's tables in the store (issue 25): the draw, and the results outbox.

Created beside the event log's own tables when the store opens (``CREATE ... IF NOT
EXISTS``, as the log's schema is); written through the store's one writer thread
(``Store.execute``), read with a reader connection.
"""

from __future__ import annotations

__all__ = ["TOURNAMENT_SCHEMA"]

TOURNAMENT_SCHEMA = """
CREATE TABLE IF NOT EXISTS draw (
    number  INTEGER PRIMARY KEY,
    body    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS outbox (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    match_id   TEXT NOT NULL UNIQUE,
    body       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    next_at    INTEGER NOT NULL,
    last_error TEXT,
    sent_at    INTEGER
);
"""
# ``draw``: one row per match of the draw (tournament/draw.py ``DrawMatch`` as JSON).
# ``outbox``: one row per finished match's result (tournament/results.py); ``sent_at`` is
# set once the webhook acknowledged it (2xx); until then it is retried from ``next_at``.
