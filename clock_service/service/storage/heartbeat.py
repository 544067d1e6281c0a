"""The service's proof of life while a clock runs, kept in memory (tmpfs), not on disk.

Recovery (``TableClock.recover``) gives a clock that was running when the service died the
time it had when the service was last known alive. That moment used to be a row the
heartbeat committed (with an fsync) every 500 ms, all day: 7,200 fsyncs an hour on an SD
card. It is now written, only while a clock runs, into a small file on a memory file
system (``/dev/shm``): no disk write, no fsync. The file outlives the process (a crash, a
``kill -9``, systemd's restart), so a killed clock comes back with at most the time it had
at the last heartbeat, as before. It does not outlive the machine: after a power cut the
store's own facts are used (the clean stop's ``alive_at``, or the table's last event),
which are durable (see README "Recovery").

The file is named after the store's path and holds the store's random id, so a copy of
another store (or a store replaced by a backup) never takes a stale proof of life.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

__all__ = ["AliveFile", "MEMORY_DIRS"]

# Where a file lives in memory on Linux (Raspberry Pi OS included); the first that exists
# and is writable is used; failing all, the store's own directory (written without fsync).
MEMORY_DIRS = ("/dev/shm", "/run/shm")
_WIDTH = 48


class AliveFile:
    def __init__(self, path: Path, store_id: str) -> None:
        self.path = path
        self.store_id = store_id
        self._fd: int | None = None
        self.writes = 0

    @classmethod
    def for_store(cls, db: str, store_id: str) -> AliveFile:
        key = hashlib.sha256(str(Path(db).resolve()).encode()).hexdigest()[:16]
        name = f"shotclock-{key}.alive"
        for directory in MEMORY_DIRS:
            if os.path.isdir(directory) and os.access(directory, os.W_OK):
                return cls(Path(directory) / name, store_id)
        return cls(Path(db).parent / f".{Path(db).name}.alive", store_id)

    def write(self, alive_at_ms: float) -> None:
        """Overwrite the proof of life in place (one pwrite, no fsync). Never raises: a
        failure only makes recovery fall back on the store's own facts."""
        line = f"{self.store_id} {alive_at_ms:.3f}".ljust(_WIDTH - 1)[:_WIDTH - 1] + "\n"
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            os.pwrite(self._fd, line.encode(), 0)
            self.writes += 1
        except OSError:
            self.close()

    def read(self) -> float | None:
        try:
            text = self.path.read_text(encoding="ascii", errors="replace")
        except OSError:
            return None
        parts = text.split()
        if len(parts) != 2 or parts[0] != self.store_id:
            return None
        try:
            return float(parts[1])
        except ValueError:
            return None

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def remove(self) -> None:
        self.close()
        with contextlib.suppress(OSError):
            self.path.unlink()
