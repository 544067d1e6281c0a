"""Reading matches from a store and building their records: the I/O around the pure core.

The functions here are blocking (SQLite reads, JSON decoding, the statistics): the service
runs them in the reports worker process (:mod:`.worker`, through :class:`.service.Reports`),
``shotclock report`` directly.

They need only a store's connection, so they serve the match log of any store with the
same tables: ``shotclock serve``'s and the hall mirror's (``shotclock hall``) alike.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from clock_service.core.errors import UnknownMatch
from clock_service.edges.reports.stats import MatchRecord, build_match
from clock_service.service.signing import verify_match
from clock_service.service.storage.index import match_row, split_match_id
from clock_service.service.storage.records import last_seq, load_events

__all__ = ["read_match", "build_from_store"]


def build_from_store(conn: sqlite3.Connection, summary: dict[str, Any],
                     last: int | None = None) -> MatchRecord:
    last = last_seq(conn, summary) if last is None else last
    events, digest = load_events(conn, summary["table"], summary["start_seq"], last)
    record = build_match(events, table=summary["table"])
    record.digest = digest
    # The table's signature of the record, checked against this store (issue 20).
    record.signature = verify_match(conn, summary["table"], events).to_dict()
    record.last_seq = last
    return record


def read_match(conn: sqlite3.Connection, match_id: str) -> tuple[dict[str, Any], MatchRecord]:
    """(the index's summary, the record built from the log) of one match."""
    key = split_match_id(match_id)
    summary = None if key is None else match_row(conn, *key)
    if key is None or summary is None:
        raise UnknownMatch(match_id)
    return summary, build_from_store(conn, summary)
