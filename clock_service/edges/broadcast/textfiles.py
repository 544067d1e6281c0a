"""One small text file per field, for OBS and Wirecast text sources (``shotclock feed``).

OBS ("Read from file") and Wirecast re-read a text file about ten times a second. A file
rewritten in place can be read half-written and flicker on air, so each file is replaced
whole: written to a temporary file in the same directory, then renamed over the old one
(atomic on POSIX: a reader opens either the old file or the new one).

Written safely (issue 35 point 5). The directory must be the writer's own (``Directory``):
a real directory, not a symlink, owned by the user the writer runs as, and not writable
by its group or by anyone; else nothing is written and the refusal says why. A missing one
is created (0755). Checking the directory given, rather than making a private subdirectory
in it, keeps the files where the producer points OBS, and is the only check that holds: a
subdirectory of a directory others can write is still theirs to rename away and replace by
a symlink between two runs. The directory is then held open and every file is created,
renamed and removed relative to it (``dir_fd``), so a path swapped after the check is never
followed. A temporary file has a random name (``.clock.txt.<16 hex>.tmp``) and is opened
``O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC``: whatever is already at that name, a planted
symlink included, makes the open fail (another name is tried), never writes through it.
The rename replaces a symlink at the final name; it never writes where one points.
Temporaries left by a crash are removed when the directory is opened. A table's own
subdirectory (``DIR/<id>/`` in ``shotclock feed`` without ``--table``) is made and checked
the same way, and only for a valid table id (clock_service.core.ids): never ``..``, ``/``, a
NUL or a long name.

On a Pi the files live on an SD card, so a file is written only when its text changes, and
never fsynced: 0 fsyncs per update. None is needed: what is on air after a power cut is
rewritten whole at start-up (nothing is taken as already on disk), and a file the rename
left empty or old shows at most until then; ext4 also flushes a file renamed over another
before the rename commits (``auto_da_alloc``). While a clock runs that is ``clock.txt`` once
a second above 5 s and ten times a second below, about 20-40 bytes a second with the
metadata the rename costs; names and scores only when they change. The counts are kept
(``writes``, ``bytes``) and shown by ``shotclock feed``.

Files (``<column>.txt`` for the feed columns, README "Broadcast without code"):
``clock.txt`` (the digits as the table shows them), ``player_a.txt``, ``player_b.txt``,
``score_a.txt``, ``score_b.txt``, ``fouls_a.txt``, ... (every column but ``table``,
``remaining_ms`` and ``seq``, which change without anything on air changing).

Where the system has no ``*at()`` calls (Windows), files are named by path: the random
``O_EXCL`` temporaries and the rename hold, the owner and mode checks do not apply.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clock_service.core.errors import UnsafeDirectory
from clock_service.core.ids import TABLE_ID_RULE, is_table_id
from clock_service.core.text import visible
from clock_service.edges.broadcast.rows import FIELDS

__all__ = ["TextFiles", "Directory", "FILE_OF", "file_names", "TEMP_FLAGS"]

# Column -> file name. The clock is clock.txt; every other column keeps its name.
# match_clock_ms changes every second with match_clock (one write more a second for nothing).
SKIPPED = frozenset({"table", "remaining_ms", "seq", "match_clock_ms"})
FILE_OF: dict[str, str] = {
    column: ("clock.txt" if column == "remaining" else f"{column}.txt")
    for column in FIELDS if column not in SKIPPED
}

# Relative to a held directory (openat, mkdirat, renameat, unlinkat): POSIX; not Windows.
_AT = {os.open, os.mkdir, os.rename, os.unlink, os.stat} <= os.supports_dir_fd
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
TEMP_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
              | getattr(os, "O_BINARY", 0))
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
# A temporary of ours: .<file>.<random hex>.tmp (or .<file>.<pid>.tmp, before issue 35).
_TEMP = re.compile(r"\.[a-z_]+\.txt\.[0-9a-f]{1,16}\.tmp")
TEMP_TRIES = 8


def file_names() -> list[str]:
    return sorted(FILE_OF.values())


def _check_own(shown: Path, st: os.stat_result) -> None:
    """Refuse a directory that is not a directory, or that others may write in."""
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeDirectory(f"{shown} is a symlink: give the directory it points to "
                              "(the files are written only into a real directory)")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeDirectory(f"{shown} is not a directory")
    if not hasattr(os, "geteuid"):  # Windows: ACLs, not modes
        return
    if st.st_uid != os.geteuid():
        raise UnsafeDirectory(
            f"{shown} belongs to user id {st.st_uid}, not to this one ({os.geteuid()}): "
            "give a directory of the user the feed runs as")
    if st.st_mode & 0o022:
        who = "anyone" if st.st_mode & 0o002 else "its group"
        raise UnsafeDirectory(
            f"{shown} can be written by {who} (mode {stat.S_IMODE(st.st_mode):o}): whoever "
            f"can write in it could put a link where a file goes. chmod go-w {shown}, or "
            "give a directory of your own")


class Directory:
    """A directory this process owns, held open: every file in it is named relative to it."""

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path = path
        self.fd = fd  # None where there is no dir_fd (Windows): names are joined to path

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Directory:
        """The directory at ``path``, created (0755, its parents as usual) when missing;
        refused (UnsafeDirectory) unless it is the running user's own."""
        path = Path(path)
        made = False
        if not os.path.lexists(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                os.mkdir(path, 0o755)
                made = True
        return cls._open(path, str(path), None, made)

    def child(self, name: str) -> Directory:
        """The subdirectory ``name`` (a table id only), created when missing."""
        if not is_table_id(name):
            raise UnsafeDirectory(f"{name[:40]!r} is not a table id ({TABLE_ID_RULE}): no "
                                  f"directory made for it in {self.path}")
        made = False
        with contextlib.suppress(FileExistsError):
            os.mkdir(self._at(name), 0o755, dir_fd=self.fd)
            made = True
        return self._open(self.path / name, self._at(name), self.fd, made)

    @classmethod
    def _open(cls, shown: Path, where: str, dir_fd: int | None, made: bool) -> Directory:
        _check_own(shown, os.stat(where, dir_fd=dir_fd, follow_symlinks=False))
        if not _AT:
            directory = cls(shown, None)
        else:
            # O_NOFOLLOW | O_DIRECTORY: a symlink swapped in since the stat is refused.
            try:
                fd = os.open(where, _DIR_FLAGS, dir_fd=dir_fd)
            except NotADirectoryError:
                raise UnsafeDirectory(f"{shown} changed into a symlink or a file while "
                                      "it was opened") from None
            try:
                if made:  # ours, whatever the umask (002 would make it group-writable)
                    os.fchmod(fd, 0o755)
                _check_own(shown, os.fstat(fd))  # what is open, not what was named
            except BaseException:
                os.close(fd)
                raise
            directory = cls(shown, fd)
        directory._sweep()
        return directory

    def _at(self, name: str) -> str:
        return name if self.fd is not None else str(self.path / name)

    def _sweep(self) -> None:
        """Remove the temporaries a crash left (the directory is ours: only we made them)."""
        for name in os.listdir(self.fd if self.fd is not None else self.path):
            if _TEMP.fullmatch(name):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._at(name), dir_fd=self.fd)

    def replace(self, name: str, data: bytes) -> None:
        """``name`` replaced whole by ``data``: a new temporary file, then a rename. No
        fsync (see the module's docstring)."""
        for _ in range(TEMP_TRIES):
            temp = f".{name}.{secrets.token_hex(8)}.tmp"
            try:
                fd = os.open(self._at(temp), TEMP_FLAGS, 0o644, dir_fd=self.fd)
                break
            except FileExistsError:  # something is at that name (a planted link): not it
                continue
        else:
            raise FileExistsError(f"{TEMP_TRIES} temporary names for {name} in {self.path} "
                                  "were all taken")
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(self._at(temp), self._at(name), src_dir_fd=self.fd,
                       dst_dir_fd=self.fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(self._at(temp), dir_fd=self.fd)
            raise

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class TextFiles:
    """The files of one table in one directory; ``update(row)`` writes what changed."""

    def __init__(self, directory: Directory | str | os.PathLike[str]) -> None:
        self.directory = (directory if isinstance(directory, Directory)
                          else Directory.open(directory))
        self.shown: dict[str, str] = {}  # file name -> text on disk
        self.writes = 0
        self.bytes = 0

    def update(self, row: Mapping[str, Any]) -> int:
        """Write every file whose text differs from what is on disk; returns how many."""
        written = 0
        for column, name in FILE_OF.items():
            # One line a file, nothing hidden or reordered: a line break or a bidi
            # override in a name (a store from before the rule) is shown as U+FFFD.
            text = visible(row.get(column, ""))
            if self.shown.get(name) != text:
                self._replace(name, text)
                written += 1
        return written

    def blank(self, name: str = "clock.txt") -> None:
        """Empty one file (the service cannot be heard: no stale time on air)."""
        if self.shown.get(name) != "":
            self._replace(name, "")

    def close(self) -> None:
        self.directory.close()

    def _replace(self, name: str, text: str) -> None:
        data = text.encode("utf-8")
        self.directory.replace(name, data)
        self.shown[name] = text
        self.writes += 1
        self.bytes += len(data)
