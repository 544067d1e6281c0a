"""The service's proof of life, read from outside its process as recovery reads it
(clock_service/service/storage/heartbeat.py): the end-to-end tests wait for a heartbeat instead of
sleeping past one, and know the instant a killed clock must come back with."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from clock_service.service.storage.heartbeat import AliveFile

__all__ = ["alive_at"]


def alive_at(db: Path) -> float | None:
    """The last heartbeat of the service whose store is ``db`` (unix ms), if any."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
    return AliveFile.for_store(str(db), str(row[0])).read() if row else None
