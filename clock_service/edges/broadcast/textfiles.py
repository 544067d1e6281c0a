"""One small text file per field, for OBS and Wirecast text sources (``shotclock feed``).

OBS ("Read from file") and Wirecast re-read a text file about ten times a second. A file
rewritten in place can be read half-written and flicker on air, so each file is replaced
whole: written to a temporary file in the same directory, then renamed over the old one
(``os.replace``: atomic on POSIX, a reader opens either the old file or the new one).

On a Pi the files live on an SD card, so a file is written only when its text changes, and
never fsynced (what is on air after a power cut is rewritten at start-up): while a clock
runs that is ``clock.txt`` once a second above 5 s and ten times a second below, about
20-40 bytes a second with the metadata the rename costs; names and scores only when they
change. The counts are kept (``writes``, ``bytes``) and shown by ``shotclock feed``.

Files (``<column>.txt`` for the feed columns, README "Broadcast without code"):
``clock.txt`` (the digits as the table shows them), ``player_a.txt``, ``player_b.txt``,
``score_a.txt``, ``score_b.txt``, ``fouls_a.txt``, ... (every column but ``table``,
``remaining_ms`` and ``seq``, which change without anything on air changing).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clock_service.edges.broadcast.rows import FIELDS

__all__ = ["TextFiles", "FILE_OF", "file_names"]

# Column -> file name. The clock is clock.txt; every other column keeps its name.
SKIPPED = frozenset({"table", "remaining_ms", "seq"})
FILE_OF: dict[str, str] = {
    column: ("clock.txt" if column == "remaining" else f"{column}.txt")
    for column in FIELDS if column not in SKIPPED
}


def file_names() -> list[str]:
    return sorted(FILE_OF.values())


class TextFiles:
    """The files of one table in one directory; ``update(row)`` writes what changed."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.shown: dict[str, str] = {}  # file name -> text on disk
        self.writes = 0
        self.bytes = 0

    def update(self, row: Mapping[str, Any]) -> int:
        """Write every file whose text differs from what is on disk; returns how many."""
        written = 0
        for column, name in FILE_OF.items():
            text = str(row.get(column, ""))
            if self.shown.get(name) != text:
                self._replace(name, text)
                written += 1
        return written

    def blank(self, name: str = "clock.txt") -> None:
        """Empty one file (the service cannot be heard: no stale time on air)."""
        if self.shown.get(name) != "":
            self._replace(name, "")

    def _replace(self, name: str, text: str) -> None:
        data = text.encode("utf-8")
        final = self.directory / name
        # Same directory, so the rename never crosses a file system; a name OBS never reads.
        temp = self.directory / f".{name}.{os.getpid()}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(temp, final)
        self.shown[name] = text
        self.writes += 1
        self.bytes += len(data)
