"""The match index: one row per match, derived from the event log, for listing.

The event log is the one source. This index only says where each match lies in its
table's log (``start_seq`` .. ``end_seq``) and what a listing shows (players, score,
status); the statistics are always built from the events themselves.

It is kept by the store's writer in the same transaction as the events it derives from:
:func:`index_ops` turns a batch of wire events into SQL statements on the caller's thread
(the event loop: a handful of dict lookups), and the writer runs them after inserting the
events, so the index can never disagree with a committed log. If the ``matches`` table is
missing (a store from before this index, or dropped by hand) or of another version, the
store rebuilds it from the log when it opens (:func:`ensure_index`).

A match opens with ``table.created`` (number 1) or ``match.started`` (``new_match``: the
next number; the previous match ends with the event before it). ``frame.*``,
``match.ended`` and ``correction.undone`` (an undo may take a frame or the match's end
back) refresh its score and status from the match summary after the event: the live event's
state, which the store does not keep, so the store keeps this summary (:func:`projection`)
in the event's ``proj`` column and a rebuild reads it there. ``table.archived``
(``DELETE /api/tables/{id}``) closes the table's current match; the store then moves the
table's events and its matches to the archive id in one transaction (``Store._archive``),
so an archived table's matches stay addressable as ``<archive id>.<number>``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

from clock_service.core.events import INDEXED_TYPES

__all__ = [
    "INDEX_VERSION", "SCHEMA", "INDEXED_TYPES", "REFRESH_TYPES", "projection", "index_ops",
    "ensure_index", "rebuild_index",
    "list_matches", "list_matches_json", "match_row", "MAX_PAGE", "split_match_id",
]

INDEX_VERSION = "3"
MAX_PAGE = 200

SCHEMA = """
CREATE TABLE IF NOT EXISTS matches (
    table_id   TEXT NOT NULL,
    number     INTEGER NOT NULL,
    start_seq  INTEGER NOT NULL,
    end_seq    INTEGER,           -- the match's last event, once the next match opened
    started_at INTEGER NOT NULL,  -- unix ms of its opening event
    ended_at   INTEGER,           -- match.ended, or the next match's opening
    status     TEXT NOT NULL,     -- playing | over | closed (left for the next match)
    players    TEXT NOT NULL,     -- JSON [name, name]
    timer      INTEGER NOT NULL,
    race_to    INTEGER,
    score      TEXT NOT NULL,     -- JSON frames won [a, b]
    frames     INTEGER NOT NULL,  -- frames started
    winner     INTEGER,
    info       TEXT NOT NULL,     -- JSON: event, referee, first_breaker, profile
    PRIMARY KEY (table_id, number)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS matches_by_start ON matches (started_at, table_id, number);
CREATE INDEX IF NOT EXISTS matches_by_table ON matches (table_id, started_at, number);
"""

# The events that open a match. Every event the index reads: INDEXED_TYPES (events.EVENTS).
OPENING = frozenset({"table.created", "match.started"})
# The events whose match summary (score, status) the index takes: ``projection``.
REFRESH_TYPES = frozenset({"frame.started", "frame.ended", "match.ended", "correction.undone"})

_INSERT = (
    "INSERT OR REPLACE INTO matches (table_id, number, start_seq, end_seq, started_at, "
    "ended_at, status, players, timer, race_to, score, frames, winner, info) "
    "VALUES (?, ?, ?, NULL, ?, NULL, 'playing', ?, ?, ?, '[0, 0]', 0, NULL, ?)")
_CLOSE_PREVIOUS = (
    "UPDATE matches SET status = CASE status WHEN 'over' THEN 'over' ELSE 'closed' END, "
    "ended_at = coalesce(ended_at, ?), end_seq = ?, "
    "info = CASE WHEN ? IS NULL THEN info ELSE json_set(info, '$.closed_reason', ?) END "
    "WHERE table_id = ? AND number < ? AND end_seq IS NULL")
_CLOSE_ALL = (
    "UPDATE matches SET status = CASE status WHEN 'over' THEN 'over' ELSE 'closed' END, "
    "ended_at = coalesce(ended_at, ?), end_seq = ? WHERE table_id = ? AND end_seq IS NULL")
_CURRENT = "coalesce(?, (SELECT max(number) FROM matches WHERE table_id = ?))"
_REFRESH = (
    "UPDATE matches SET score = ?, frames = ?, winner = ?, "
    "status = CASE WHEN status = 'closed' THEN status WHEN ? THEN 'over' ELSE 'playing' END, "
    "ended_at = CASE WHEN ? THEN coalesce(ended_at, ?) ELSE NULL END "
    f"WHERE table_id = ? AND number = {_CURRENT} AND status != 'closed'")

Op = tuple[str, tuple[Any, ...]]


def projection(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the index reads of an event beyond its body: the match summary after it (from
    the live event's state), for the events of ``REFRESH_TYPES``; the store keeps it in the
    event's ``proj`` column. None for the others, or an event without its state."""
    if event.get("type") not in REFRESH_TYPES:
        return None
    proj = event.get("proj")
    if isinstance(proj, Mapping):
        return dict(proj)
    state = event.get("state")
    summary = state.get("match") if isinstance(state, Mapping) else None
    if not isinstance(summary, Mapping):
        return None
    return {"number": summary.get("number"), "score": summary.get("score"),
            "frames": state.get("frame") if isinstance(state, Mapping) else None,
            "winner": summary.get("winner"), "over": bool(summary.get("over"))}


def index_ops(table_id: str, events: Iterable[Mapping[str, Any]]) -> list[Op]:
    """SQL statements that bring the index up to date with ``events`` (in seq order)."""
    ops: list[Op] = []
    for event in events:
        kind = event["type"]
        if kind not in INDEXED_TYPES:
            continue
        data = event.get("data") or {}
        seq, at = int(event["seq"]), int(event["at"])
        if kind == "table.archived":
            ops.append((_CLOSE_ALL, (at, seq, table_id)))
            continue
        if kind in OPENING:
            number = 1 if kind == "table.created" else int(data.get("number") or 0)
            if number < 1:
                continue  # not a match this index can number
            if number > 1:
                reason = data.get("reason")
                ops.append((_CLOSE_PREVIOUS, (at, seq - 1, reason, reason, table_id, number)))
            info = {k: data.get(k) for k in ("event", "referee", "first_breaker", "profile")}
            ops.append((_INSERT, (
                table_id, number, seq, at, json.dumps(list(data.get("players") or [])),
                int(bool(data.get("timer", True))), data.get("race_to"), json.dumps(info))))
            continue
        summary = projection(event)
        if summary is None:
            continue  # an event without its state (not from this service): nothing to say
        over = bool(summary.get("over"))
        ops.append((_REFRESH, (
            json.dumps(list(summary.get("score") or [0, 0])), int(summary.get("frames") or 0),
            summary.get("winner"), over, over, at, table_id, summary.get("number"), table_id)))
    return ops


def rebuild_index(conn: sqlite3.Connection) -> int:
    """Derive the whole index from the log again (in the caller's transaction)."""
    conn.execute("DELETE FROM matches")
    marks = ",".join("?" * len(INDEXED_TYPES))
    rows = conn.execute(
        f"SELECT table_id, body, proj FROM events WHERE type IN ({marks}) "
        "ORDER BY table_id, seq", sorted(INDEXED_TYPES))
    count = 0
    for table_id, body, proj in rows.fetchall():
        event = json.loads(body)
        if proj is not None:
            event["proj"] = json.loads(proj)
        for sql, params in index_ops(table_id, [event]):
            conn.execute(sql, params)
            count += 1
    # Matches archived to files (storage/archive.py) have no events here: their rows as
    # they were when archived.
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'archived_matches'").fetchone():
        for (summary_text,) in conn.execute("SELECT summary FROM archived_matches").fetchall():
            m = json.loads(summary_text)
            info = {k: m.get(k) for k in ("event", "referee", "first_breaker", "profile")}
            if m.get("closed_reason") is not None:
                info["closed_reason"] = m["closed_reason"]
            conn.execute(
                "INSERT OR REPLACE INTO matches (table_id, number, start_seq, end_seq, "
                "started_at, ended_at, status, players, timer, race_to, score, frames, winner, "
                "info) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (m["table"], m["number"], m["start_seq"], m["end_seq"], m["started_at"],
                 m["ended_at"], m["status"], json.dumps(m["players"]), int(bool(m["timer"])),
                 m["race_to"], json.dumps(m["score"]), m["frames"], m["winner"],
                 json.dumps(info)))
            count += 1
    conn.execute(
        "INSERT INTO meta (key, value) VALUES ('matches_index', ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (INDEX_VERSION,))
    return count


def ensure_index(conn: sqlite3.Connection) -> bool:
    """Create the index; rebuild it from the log when it was missing or of another version.
    Returns whether it was rebuilt. Runs before the writer starts (``Store.open``)."""
    existed = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'matches'").fetchone()
    conn.executescript(SCHEMA)
    row = conn.execute("SELECT value FROM meta WHERE key = 'matches_index'").fetchone()
    if existed and row is not None and row[0] == INDEX_VERSION:
        return False
    conn.execute("BEGIN IMMEDIATE")
    try:
        rebuild_index(conn)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return True


# -- reads ----------------------------------------------------------------------------------

_COLUMNS = ("table_id, number, start_seq, end_seq, started_at, ended_at, status, players, "
            "timer, race_to, score, frames, winner, info")
# A listing row as JSON, made by SQLite (in C, the GIL released): a page goes out as text,
# never decoded and encoded again in Python.
_ROW_JSON = (
    "json_object('id', table_id || '.' || number, 'table', table_id, 'number', number, "
    "'status', status, 'players', json(players), "
    "'timer', json(CASE timer WHEN 0 THEN 'false' ELSE 'true' END), 'race_to', race_to, "
    "'score', json(score), 'frames', frames, 'winner', winner, 'started_at', started_at, "
    "'ended_at', ended_at, 'event', json_extract(info, '$.event'), "
    "'referee', json_extract(info, '$.referee'), "
    "'first_breaker', json_extract(info, '$.first_breaker'), "
    "'start_seq', start_seq, 'end_seq', end_seq, "
    "'closed_reason', json_extract(info, '$.closed_reason'))")


def split_match_id(match_id: str) -> tuple[str, int] | None:
    """'7.2' -> ('7', 2); None when it is not a match id."""
    table_id, dot, number = match_id.rpartition(".")
    if not dot or not table_id or not number.isdigit() or len(number) > 9:
        return None
    return table_id, int(number)


def _summary(row: tuple[Any, ...]) -> dict[str, Any]:
    (table_id, number, start_seq, end_seq, started_at, ended_at, status, players, timer,
     race_to, score, frames, winner, info) = row
    extra = json.loads(info)
    return {
        "id": f"{table_id}.{number}", "table": table_id, "number": number, "status": status,
        "players": json.loads(players), "timer": bool(timer), "race_to": race_to,
        "score": json.loads(score), "frames": frames, "winner": winner,
        "started_at": started_at, "ended_at": ended_at,
        "event": extra.get("event"), "referee": extra.get("referee"),
        "first_breaker": extra.get("first_breaker"), "profile": extra.get("profile"),
        "start_seq": start_seq, "end_seq": end_seq, "closed_reason": extra.get("closed_reason"),
    }


def match_row(conn: sqlite3.Connection, table_id: str, number: int) -> dict[str, Any] | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM matches WHERE table_id = ? AND number = ?",
                       (table_id, number)).fetchone()
    return None if row is None else _summary(row)


def list_matches_json(conn: sqlite3.Connection, *, table: str | None = None,
                      since: int | None = None, after: str | None = None,
                      limit: int = 50) -> tuple[str, str | None]:
    """Newest first: (one page of match summaries as a JSON array, the id to pass as
    ``after`` for the next page or None). Keyset pagination: a page costs the same at the
    end of the list as at its start. ``KeyError`` for an ``after`` that is no match."""
    limit = max(1, min(limit, MAX_PAGE))
    where: list[str] = []
    args: list[Any] = []
    if table is not None:
        where.append("table_id = ?")
        args.append(table)
    if since is not None:
        where.append("started_at >= ?")
        args.append(since)
    if after is not None:
        key = split_match_id(after)
        row = None if key is None else conn.execute(
            "SELECT started_at FROM matches WHERE table_id = ? AND number = ?", key).fetchone()
        if key is None or row is None:
            raise KeyError(after)
        where.append("(started_at, table_id, number) < (?, ?, ?)")
        args += [row[0], key[0], key[1]]
    sql = (f"SELECT {_ROW_JSON}, table_id || '.' || number FROM matches"
           + (f" WHERE {' AND '.join(where)}" if where else "")
           + " ORDER BY started_at DESC, table_id DESC, number DESC LIMIT ?")
    rows = conn.execute(sql, (*args, limit + 1)).fetchall()
    page = rows[:limit]
    text = "[" + ",".join(r[0] for r in page) + "]"
    return text, (page[-1][1] if len(rows) > limit else None)


def list_matches(conn: sqlite3.Connection, **kwargs: Any) -> tuple[list[dict[str, Any]],
                                                                   str | None]:
    """:func:`list_matches_json`, decoded (for Python callers)."""
    text, next_id = list_matches_json(conn, **kwargs)
    return json.loads(text), next_id
