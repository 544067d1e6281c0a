"""Finished matches out of the live store, one compressed file per match (issue 19).

A match that ended (``over``, or ``closed`` by the next match or the table's archive) more
than ``SHOTCLOCK_ARCHIVE_DAYS`` days ago (default 30) is written to
``<store>.archive/<match id>.json.gz``: its index row, its events exactly as stored (body,
batch, proj: the digest is computed from them as from the store) and its digest. Then its
events leave the live store, in the same transaction that records the file in
``archived_matches``, and the freed pages go back to the file system (incremental vacuum).

An archived match stays what it was:

- listed and addressable: its index row stays (``/api/matches``, ``/api/matches/{id}``,
  ``/report``, ``shotclock report``); its record is built from the file's events with the
  same query, so its digest is the one it had in the store (and the one in the file);
- replayable: a replay or a page of events that reaches into its range (``?since=``,
  ``GET .../events``, the MQTT catch-up) reads those events from the file, so a table's log
  has no gap;
- re-importable: ``shotclock store archive --import FILE`` puts its events back.

The file is written whole to a temporary name, synced, then renamed, before the events are
deleted: a crash in between leaves the events in the store (the file is written again).
"""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ARCHIVE_SCHEMA", "archive_dir", "write_match", "read_match_file",
           "ArchivedRange", "archived_ranges", "archived_event_rows", "FORMAT"]

FORMAT = "shotclock-match-archive/1"

ARCHIVE_SCHEMA = """
CREATE TABLE IF NOT EXISTS archived_matches (
    table_id    TEXT NOT NULL,
    number      INTEGER NOT NULL,
    start_seq   INTEGER NOT NULL,
    end_seq     INTEGER NOT NULL,
    file        TEXT NOT NULL,
    digest      TEXT NOT NULL,
    events      INTEGER NOT NULL,
    bytes       INTEGER NOT NULL,
    summary     TEXT NOT NULL,
    archived_at INTEGER NOT NULL,
    PRIMARY KEY (table_id, number)
) WITHOUT ROWID;
"""

EventRow = tuple[int, str, int, str, int | None, str | None]  # seq type at body batch proj


def archive_dir(db: str) -> Path:
    return Path(db + ".archive")


def write_match(directory: Path, match_id: str, summary: dict[str, Any], digest: str,
                rows: list[EventRow]) -> tuple[Path, int]:
    """Write the match's file (temporary name, fsync, rename, fsync of the directory).
    Returns (its path, its size)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{match_id}.json.gz"
    document = {"format": FORMAT, "match": summary, "digest": digest,
                "columns": ["seq", "type", "at", "body", "batch", "proj"],
                "events": [list(row) for row in rows]}
    data = gzip.compress(json.dumps(document, separators=(",", ":")).encode(), 9, mtime=0)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return path, len(data)


def read_match_file(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rb") as source:
        document: dict[str, Any] = json.loads(source.read())
    if document.get("format") != FORMAT:
        raise ValueError(f"{path}: not a match archive of this format ({FORMAT})")
    return document


@dataclass(frozen=True)
class ArchivedRange:
    table_id: str
    number: int
    start_seq: int
    end_seq: int
    file: str


def _has_archive(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                        "AND name = 'archived_matches'").fetchone() is not None


def archived_ranges(conn: sqlite3.Connection, table_id: str, first: int,
                    last: int) -> list[ArchivedRange]:
    """The archived matches of a table whose events overlap ``first..last``."""
    if not _has_archive(conn):
        return []
    rows = conn.execute(
        "SELECT table_id, number, start_seq, end_seq, file FROM archived_matches "
        "WHERE table_id = ? AND start_seq <= ? AND end_seq >= ? ORDER BY start_seq",
        (table_id, last, first)).fetchall()
    return [ArchivedRange(r[0], int(r[1]), int(r[2]), int(r[3]), str(r[4])) for r in rows]


def archived_event_rows(db: str, ranges: list[ArchivedRange], first: int,
                        last: int) -> list[EventRow]:
    """The events ``first..last`` of those archived matches, from their files, in order."""
    out: list[EventRow] = []
    for item in ranges:
        document = read_match_file(archive_dir(db) / item.file)
        for seq, kind, at, body, batch, proj in document["events"]:
            if first <= seq <= last:
                out.append((int(seq), str(kind), int(at), str(body), batch, proj))
    out.sort(key=lambda row: row[0])
    return out
