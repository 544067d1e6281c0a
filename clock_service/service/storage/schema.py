"""The store's tables, and the migration of a store written by an older release, in place.

Schema 2 (issue 19: a store that lasts years on an SD card):

- ``events.body`` is the event as it is replayed (``?since=``, the events pages, the MQTT
  catch-up): type, seq, table, at, the command's envelope and ``data``; not the table's
  state, which only the live feeds carry (it was ~1.2 KB of each event, an overflow page
  each). What readers of the log used of that state has its own column:
  ``batch`` (the seq the live event's ``state.seq`` said: the last event of its commit;
  NULL when it is the event's own seq) for the reports' digest, and ``proj`` (the match's
  score after the event, for the match index) on the events the index refreshes from.
- ``tables.core`` is a table's current snapshot without its undo history; the undo
  checkpoints (the state before each undoable step, at most ``UNDO_DEPTH`` a table) are
  rows of ``undo``: a commit adds the one it makes and drops the ones it takes back.
- the file is in ``auto_vacuum=INCREMENTAL`` mode, so pages freed by the archiving of old
  matches go back to the file system (``Store.vacuum``).

A store of schema 1 (no ``schema`` in ``meta``) is migrated when it opens: the state is
taken out of every event (``batch`` and ``proj`` keep what was read of it, so every
digest computed before still verifies), the undo history moves out of ``tables.core``,
and the file is vacuumed once into incremental mode. That takes a while on a large store
(a log line says when it starts and ends) and needs free space about the size of the
file; it runs once. The events are migrated in chunks (``CHUNK_EVENTS`` a transaction,
the last key done kept in ``meta``), so a migration killed midway (a power cut, systemd)
loses at most one chunk's work and goes on where it was at the next open; the schema
version is set only when every event and the undo history are done, and a VACUUM killed
midway is done again (a store of schema 2 not in incremental mode).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable

from clock_service.service.sdnotify import notify
from clock_service.service.storage.archive import ARCHIVE_SCHEMA
from clock_service.service.storage.tournament import TOURNAMENT_SCHEMA

__all__ = ["SCHEMA", "SCHEMA_VERSION", "LEGACY_PROJ_SQL", "migrate", "has_column"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = "2"
EXTEND_US = 30_000_000  # what each EXTEND_TIMEOUT_USEC asks systemd for during a migration
# Events migrated per transaction: a kill loses at most one chunk's work (it is rolled
# back), and the WAL of one transaction stays about CHUNK_EVENTS x 5 KB (10 MB), not the
# size of the whole log.
CHUNK_EVENTS = 2000

SCHEMA = """
CREATE TABLE IF NOT EXISTS tables (
    id         TEXT PRIMARY KEY,
    config     TEXT NOT NULL,
    core       TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    table_id TEXT NOT NULL,
    seq      INTEGER NOT NULL,
    type     TEXT NOT NULL,
    at       INTEGER NOT NULL,
    body     TEXT NOT NULL,
    batch    INTEGER,
    proj     TEXT,
    PRIMARY KEY (table_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS undo (
    table_id TEXT NOT NULL,
    n        INTEGER NOT NULL,
    step     TEXT NOT NULL,
    at       REAL NOT NULL,
    state    TEXT NOT NULL,
    PRIMARY KEY (table_id, n)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS published (
    target   TEXT NOT NULL,
    table_id TEXT NOT NULL,
    seq      INTEGER NOT NULL,
    PRIMARY KEY (target, table_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS archive (
    id          TEXT PRIMARY KEY,
    table_id    TEXT NOT NULL,
    config      TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    archived_at INTEGER NOT NULL
);
"""
# Tables added to schema 2 (created in any store of it at open): the tournament's draw and
# results outbox (issue 25, storage/tournament.py).
SCHEMA += TOURNAMENT_SCHEMA
# ... and the matches archived to files (storage/archive.py).
SCHEMA += ARCHIVE_SCHEMA

# The index's projection of an event of schema 1, from the state it carried (as
# ``index.projection`` makes it from a live event's state). Used by the migration and by
# read-only readers of a schema-1 file (records.open_read_only).
LEGACY_PROJ_SQL = (
    "CASE WHEN json_type(body, '$.state.match') = 'object' THEN json_object("
    "'number', json_extract(body, '$.state.match.number'), "
    "'score', json_extract(body, '$.state.match.score'), "
    "'frames', json_extract(body, '$.state.frame'), "
    "'winner', json_extract(body, '$.state.match.winner'), "
    "'over', json_extract(body, '$.state.match.over')) END")
LEGACY_BATCH_SQL = "nullif(json_extract(body, '$.state.seq'), seq)"
LEGACY_BODY_SQL = "json_remove(body, '$.state')"


def has_column(conn: sqlite3.Connection, table: str, column: str,
               schema: str = "main") -> bool:
    return any(row[1] == column
               for row in conn.execute(f"PRAGMA {schema}.table_info({table})"))


def _version(conn: sqlite3.Connection) -> str | None:
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    return None if row is None else str(row[0])


def migrate(conn: sqlite3.Connection, indexed_types: frozenset[str], *,
            tell_every_s: float = 5.0, chunk: int = CHUNK_EVENTS,
            after_chunk: Callable[[int], None] | None = None) -> bool:
    """Create the tables, or bring a store of an older schema up to this one (in place).
    Returns whether a migration ran. ``indexed_types``: the events the match index reads
    a projection of (index.REFRESH_TYPES). Runs before the writer starts.

    A migration runs before the service is READY and can outlast systemd's start timeout on
    a big store on an SD card: every ``tell_every_s`` it asks systemd for 30 s more
    (``EXTEND_TIMEOUT_USEC``, with a STATUS line), so the unit is not killed and restarted
    into the same migration again."""
    fresh = not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'events'").fetchone()
    if fresh:
        # Must be set before the first table exists (later it takes a VACUUM).
        conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
        conn.executescript(SCHEMA)
        _set_version(conn)
        return False
    version = _version(conn)
    if version == SCHEMA_VERSION:
        conn.executescript(SCHEMA)  # tables added since (the tournament's draw, outbox)
        if conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0:
            # A migration killed in its final VACUUM (every store of schema 2 is made or
            # migrated into incremental mode): finish it.
            log.warning("finishing the event store's migration (its VACUUM)")
            _vacuum_into_incremental(conn)
        return False
    if version not in (None, "1"):
        raise sqlite3.DatabaseError(
            f"the store has schema {version}, newer than this release's {SCHEMA_VERSION}: "
            "run the release that wrote it, or restore a backup made before the upgrade")
    started = time.monotonic()
    log.warning("migrating the event store to schema %s (once; a large store takes a while)",
                SCHEMA_VERSION)
    told = [started - tell_every_s]

    def keep_systemd_waiting() -> int:  # SQLite's progress handler: 0 = go on
        now = time.monotonic()
        if now - told[0] >= tell_every_s:
            told[0] = now
            notify(f"EXTEND_TIMEOUT_USEC={EXTEND_US}\nSTATUS=migrating the event store to "
                   f"schema {SCHEMA_VERSION} (once): {now - started:.0f} s so far")
        return 0

    keep_systemd_waiting()  # at once, then every tell_every_s while SQLite works
    conn.set_progress_handler(keep_systemd_waiting, 50_000)
    try:
        moved = _migrate_v1(conn, indexed_types, chunk, after_chunk)
    finally:
        conn.set_progress_handler(None, 0)
    log.warning("event store migrated to schema %s in %.1f s (%d undo checkpoints moved)",
                SCHEMA_VERSION, time.monotonic() - started, moved)
    return True


def _migrate_events(conn: sqlite3.Connection, indexed_types: frozenset[str],
                    chunk: int, after_chunk: Callable[[int], None] | None) -> int:
    """Take the state out of every event, ``chunk`` events (in key order) a transaction.
    Resumable: a row still holding its state is one not done yet (every UPDATE keeps what
    it read of it in ``batch`` and ``proj``, in the same statement: SQLite evaluates the
    SET expressions on the old row), and the last key done is kept in ``meta`` with it, so
    a migration killed midway goes on from there when the store opens again."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'migration_cursor'").fetchone()
    cursor: tuple[str, int] = ("", -1)
    if row:
        table_id, seq = json.loads(row[0])
        cursor = (str(table_id), int(seq))
    marks = ",".join("?" * len(indexed_types))
    types = sorted(indexed_types)
    chunks = 0
    while True:
        last = conn.execute(
            "SELECT table_id, seq FROM events WHERE (table_id, seq) > (?, ?) "
            "ORDER BY table_id, seq LIMIT 1 OFFSET ?", (*cursor, chunk - 1)).fetchone()
        conn.execute("BEGIN IMMEDIATE")
        try:
            upto = "" if last is None else "AND (table_id, seq) <= (?, ?) "
            conn.execute(
                f"UPDATE events SET proj = CASE WHEN type IN ({marks}) THEN "
                f"{LEGACY_PROJ_SQL} ELSE proj END, batch = {LEGACY_BATCH_SQL}, "
                f"body = {LEGACY_BODY_SQL} WHERE (table_id, seq) > (?, ?) {upto}"
                "AND json_type(body, '$.state') IS NOT NULL",
                (*types, *cursor, *(() if last is None else tuple(last))))
            if last is not None:
                cursor = (str(last[0]), int(last[1]))
                conn.execute("INSERT INTO meta (key, value) VALUES ('migration_cursor', ?) "
                             "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                             (json.dumps(list(cursor)),))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        chunks += 1
        if after_chunk is not None:
            after_chunk(chunks)
        if last is None:
            return chunks


def _migrate_v1(conn: sqlite3.Connection, indexed_types: frozenset[str],
                chunk: int = CHUNK_EVENTS,
                after_chunk: Callable[[int], None] | None = None) -> int:
    conn.executescript(SCHEMA)  # the tables it lacks (undo); the old ones stay as they are
    if not has_column(conn, "events", "batch"):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ALTER TABLE events ADD COLUMN batch INTEGER")
        conn.execute("ALTER TABLE events ADD COLUMN proj TEXT")
        conn.execute("COMMIT")
    chunks = _migrate_events(conn, indexed_types, chunk, after_chunk)
    log.info("event store migration: the events done in %d transactions", chunks)
    conn.execute("BEGIN IMMEDIATE")
    try:
        moved = 0
        for table_id, core_text in conn.execute("SELECT id, core FROM tables").fetchall():
            core = json.loads(core_text)
            history = core.pop("history", None)
            if history is None:
                continue
            for n, entry in enumerate(history, start=1):
                if isinstance(entry, dict):  # the oldest form: {"step", "at", "state"}
                    step, at, state = entry["step"], entry["at"], json.dumps(entry["state"])
                else:
                    step, at, state = entry[0], entry[1], entry[2]
                conn.execute("INSERT INTO undo (table_id, n, step, at, state) "
                             "VALUES (?,?,?,?,?)", (table_id, n, step, float(at), state))
                moved += 1
            conn.execute("UPDATE tables SET core = ? WHERE id = ?",
                         (json.dumps(core), table_id))
        conn.execute("DELETE FROM meta WHERE key = 'migration_cursor'")
        _set_version(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    _vacuum_into_incremental(conn)
    return moved


def _vacuum_into_incremental(conn: sqlite3.Connection) -> None:
    """Give the freed pages back and switch to incremental vacuum: one full VACUUM (all or
    nothing: a kill leaves the file as it was, still in auto_vacuum NONE, and the next open
    of the store does it, see migrate)."""
    conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
    conn.execute("VACUUM")


def _set_version(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO meta (key, value) VALUES ('schema', ?) "
                 "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (SCHEMA_VERSION,))
