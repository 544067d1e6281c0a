"""Reading a match's events for its record: the one query the reports build on.

The reports package reads the log through these functions (and the match index through
:mod:`.index`); nothing here imports the reports.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import urllib.parse
from pathlib import Path
from typing import Any

from clock_service.service.storage.archive import (
    ArchivedRange,
    archived_event_rows,
    archived_ranges,
)
from clock_service.service.storage.index import INDEX_VERSION, SCHEMA, rebuild_index
from clock_service.service.storage.schema import (
    LEGACY_BATCH_SQL,
    LEGACY_BODY_SQL,
    LEGACY_PROJ_SQL,
    SCHEMA_VERSION,
    has_column,
)

__all__ = ["load_events", "last_seq", "open_read_only", "StoreMissing"]


class StoreMissing(FileNotFoundError):
    """No store file at the path given."""


# What the statistics read of each stored event, projected by SQLite (in C, the GIL
# released). The clock's warnings (a fifth of a match's events) say nothing the statistics
# use and are never part of a step (stats.opens_step), so they are not even read. The last
# item is the seq the live event's state carried (its commit's last event: ``batch``, NULL
# when it is the event's own), as it was when the state was stored in the event (schema 1):
# the line is the same, so a digest computed then still verifies.
_PROJECTION = ("SELECT json_array(type, seq, at, json_extract(body, '$.data'), "
               "json_extract(body, '$.by'), coalesce(batch, seq)) FROM events "
               "WHERE table_id = ? AND seq >= ? AND seq <= ? "
               "AND type != 'clock.warning' ORDER BY seq")


def load_events(conn: sqlite3.Connection, table_id: str, first: int,
                last: int | None) -> tuple[list[dict[str, Any]], str]:
    """The table's events with ``first <= seq <= last`` (last None: to the end), as much of
    each as the statistics read, and the SHA-256 of that projection (one JSON array
    ``[type, seq, at, data, by, state.seq]`` per line, as SQLite writes it: anyone can
    recompute it from the store with the same query)."""
    upper = last if last is not None else 2**62
    ranges = archived_ranges(conn, table_id, first, upper)
    if ranges:  # some of it is in archive files (storage/archive.py): read them alike
        conn = _with_archived_events(conn, table_id, first, upper, ranges)
    rows = conn.execute(_PROJECTION, (table_id, first, upper)).fetchall()
    lines = [r[0] for r in rows]
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    events = []
    for line in lines:
        kind, seq, at, data, by, batch = json.loads(line)
        event = {"type": kind, "seq": seq, "at": at, "data": data or {},
                 "state": {"seq": batch}}
        if by is not None:
            event["by"] = by
        events.append(event)
    return events, digest


def _db_path(conn: sqlite3.Connection) -> str:
    files = {row[1]: row[2] for row in conn.execute("PRAGMA database_list")}
    return str(files.get("main") or files.get("log") or "")


def _with_archived_events(conn: sqlite3.Connection, table_id: str, first: int, upper: int,
                          ranges: list[ArchivedRange]) -> sqlite3.Connection:
    """An in-memory copy of the range's events: the store's and the archive files' (the
    same columns, so the same query and the same digest)."""
    memory = sqlite3.connect(":memory:")
    memory.execute("CREATE TABLE events (table_id TEXT, seq INTEGER, type TEXT, at INTEGER, "
                   "body TEXT, batch INTEGER, proj TEXT)")
    stored = conn.execute("SELECT seq, type, at, body, batch, proj FROM events WHERE "
                          "table_id = ? AND seq >= ? AND seq <= ?", (table_id, first, upper))
    archived = archived_event_rows(_db_path(conn), ranges, first, upper)
    memory.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?)",
                       [(table_id, *row) for row in [*stored.fetchall(), *archived]])
    return memory


def last_seq(conn: sqlite3.Connection, summary: dict[str, Any]) -> int:
    """The match's last event: its end, or for the table's current match the table's last."""
    if summary["end_seq"] is not None:
        return int(summary["end_seq"])
    row = conn.execute("SELECT max(seq) FROM events WHERE table_id = ?",
                       (summary["table"],)).fetchone()
    return int(row[0] or 0)




def open_read_only(path: str) -> sqlite3.Connection:
    """A read-only connection to the store at ``path`` (beside a running service too: WAL
    lets it), never writing to the file. A store whose match index is missing (never
    opened by this version) is read by deriving the index in memory from the log; a store
    of an older schema (schema.py), through a view that reads it as this one."""
    if not Path(path).exists():
        raise StoreMissing(f"no store at {path}")
    uri = "file:" + urllib.parse.quote(str(Path(path).resolve())) + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True)
    meta = _has(conn, "meta")
    current = conn.execute(
        "SELECT value FROM meta WHERE key = 'matches_index'").fetchone() if meta else None
    schema = conn.execute(
        "SELECT value FROM meta WHERE key = 'schema'").fetchone() if meta else None
    legacy = schema is None or schema[0] != SCHEMA_VERSION
    if (not legacy and _has(conn, "matches") and current is not None
            and current[0] == INDEX_VERSION):
        return conn
    # The store predates the index or this schema: read it through views, derive the index.
    conn.close()
    memory = sqlite3.connect(":memory:")
    memory.execute("ATTACH DATABASE ? AS log", (uri,))
    if not legacy:
        events = "SELECT * FROM log.events"
    elif has_column(memory, "events", "batch", schema="log"):
        # A migration stopped midway (schema.py: in chunks): the rows done have their
        # batch and proj, the others still their state.
        events = (f"SELECT table_id, seq, type, at, {LEGACY_BODY_SQL} AS body, "
                  f"coalesce(batch, {LEGACY_BATCH_SQL}) AS batch, "
                  f"coalesce(proj, {LEGACY_PROJ_SQL}) AS proj FROM log.events")
    else:
        events = (f"SELECT table_id, seq, type, at, {LEGACY_BODY_SQL} AS body, "
                  f"{LEGACY_BATCH_SQL} AS batch, {LEGACY_PROJ_SQL} AS proj FROM log.events")
    memory.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                         f"CREATE TEMP VIEW events AS {events};" + SCHEMA)
    rebuild_index(memory)
    return memory


def _has(conn: sqlite3.Connection, table: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                        (table,)).fetchone() is not None
