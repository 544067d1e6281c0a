"""``shotclock feed --dir DIR [--table ID]`` and the same inside ``shotclock serve``
(``SHOTCLOCK_FEED_DIR``): the text files of textfiles.py, kept up to date.

Standalone, it polls the service's feed (``/feeds/tables[/ID].json``, with its ETag: an
unchanged table costs a 304) ten times a second, so it runs on the streaming PC too. In
``serve`` it reads the rows from memory on the same schedule and writes in a worker
thread: a slow SD card never delays the clock. Either way, while the service cannot be
heard for ``STALE_S`` the clock file is emptied: a number standing still on air reads as a
paused clock (the overlay's rule).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clock_service.core.errors import ShotClockError, UnsafeDirectory
from clock_service.core.ids import TABLE_ID_RULE, is_table_id
from clock_service.edges.broadcast.rows import LANGS, row_key
from clock_service.edges.broadcast.textfiles import Directory, TextFiles, file_names

if TYPE_CHECKING:
    from clock_service.edges.broadcast.feeds import FeedBoard

__all__ = ["add_parser", "run", "text_files", "TextFilesPart", "Poller", "TextFilesTask",
           "INTERVAL_S"]

log = logging.getLogger(__name__)

INTERVAL_S = 0.1  # OBS and Wirecast read a text file ten times a second
STALE_S = 3.0
# A feed's answer is read up to this: 200 tables (the service's default cap) are ~150 KB.
MAX_FEED_BYTES = 4 << 20
# Table directories at most (DIR/<id>/, one held open each): above the service's 200 live
# tables by default (SHOTCLOCK_MAX_TABLES), below a process's usual 1024 open files.
MAX_TABLE_DIRS = 512
EX_CONFIG = 78  # sysexits.h: --dir cannot be used; retrying will not help


class _Directories:
    """One TextFiles per table: DIR itself for the one table asked, DIR/<id>/ for every
    table otherwise. A table id that is not one (clock_service.core.ids: never ``..``, a
    path, a NUL, a long name), a table beyond MAX_TABLE_DIRS, or a table whose DIR/<id>/
    is not ours (a symlink, another user's: textfiles.Directory) is refused and reported
    once, and nothing is written for it; the other tables' files are written as usual."""

    def __init__(self, directory: Path, table: str | None) -> None:
        self.directory = directory
        self.table = table
        self.root: Directory | None = None
        self.files: dict[str, TextFiles] = {}
        self.refused = 0  # rows refused
        self.refusals: dict[str, str] = {}  # the refused tables (repr, shortened) -> why
        self._closed = [0, 0]  # writes and bytes of the TextFiles let go (a failure)

    def open(self) -> Directory:
        """DIR itself, checked (textfiles.Directory): refused unless it is ours."""
        if self.root is None:
            self.root = Directory.open(self.directory)
        return self.root

    def write(self, table_id: object, row: Mapping[str, Any]) -> int:
        """The table's changed files written; 0 for a refused table."""
        files = self.files.get(table_id) if isinstance(table_id, str) else None
        if files is None:
            files = self._files_of(table_id)
            if files is None:
                return 0
        return files.update(row)

    def _files_of(self, table_id: object) -> TextFiles | None:
        why = self._refusal(table_id)
        if why is None:
            assert isinstance(table_id, str)
            root = self.open()
            try:
                directory = root if self.table else root.child(table_id)
            except UnsafeDirectory as exc:
                why = str(exc)
            else:
                self.refusals.pop(repr(table_id), None)
                files = self.files[table_id] = TextFiles(directory)
                return files
        self.refused += 1
        shown = repr(table_id)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        if self.refusals.get(shown) != why and len(self.refusals) < 100:
            self.refusals[shown] = why
            log.warning("feed: refused the rows of table %s from the service: %s; nothing "
                        "written for it", shown, why)
        return None

    def _refusal(self, table_id: object) -> str | None:
        if not is_table_id(table_id):
            return f"not a table id ({TABLE_ID_RULE})"
        if self.table is not None and table_id != self.table:
            return f"not the table asked for ({self.table})"
        if len(self.files) >= MAX_TABLE_DIRS:
            return f"more than {MAX_TABLE_DIRS} tables"
        return None

    def blank(self) -> None:
        for files in self.files.values():
            files.blank()

    def close(self) -> None:
        """Let every directory go (after a failure: opened and checked again next time)."""
        for files in self.files.values():
            self._closed[0] += files.writes
            self._closed[1] += files.bytes
            if files.directory is not self.root:
                files.close()
        self.files.clear()
        if self.root is not None:
            self.root.close()
            self.root = None

    @property
    def writes(self) -> int:
        return self._closed[0] + sum(f.writes for f in self.files.values())

    @property
    def bytes(self) -> int:
        return self._closed[1] + sum(f.bytes for f in self.files.values())


class Poller:
    """The standalone writer: GET the feed with If-None-Match, write what changed."""

    def __init__(self, server: str, directory: Path, table: str | None, lang: str,
                 opener: Callable[..., Any] = urllib.request.urlopen) -> None:
        path = f"/feeds/tables/{table}.json" if table else "/feeds/tables.json"
        self.url = server.rstrip("/") + path + f"?lang={lang}"
        self.dirs = _Directories(directory, table)
        self.etag: str | None = None
        self.heard_at = time.monotonic()
        self.failing: str | None = None
        self.unwritable: str | None = None
        self._open = opener

    def step(self) -> None:
        """One poll: write the changed files, or note the failure (and blank the clock
        once the service has not been heard for STALE_S)."""
        request = urllib.request.Request(self.url)
        if self.etag:
            request.add_header("If-None-Match", self.etag)
        try:
            with self._open(request, timeout=2.0) as response:
                body = response.read(MAX_FEED_BYTES + 1)
                self.etag = response.headers.get("ETag")
            if len(body) > MAX_FEED_BYTES:
                raise ValueError(f"the answer is over {MAX_FEED_BYTES} bytes")
            rows = json.loads(body)
            if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
                raise ValueError("the answer is not a feed (a JSON array of rows)")
        except urllib.error.HTTPError as exc:
            if exc.code == 304:
                self._heard()
                return
            self._failed(f"HTTP {exc.code} from {self.url}")
            return
        except (OSError, ValueError) as exc:
            self._failed(f"{type(exc).__name__}: {exc}")
            return
        self._heard()
        try:
            for values in rows:
                self.dirs.write(values.get("table"), values)
        except (OSError, ShotClockError) as exc:
            self._unwritable(exc)
            return
        if self.unwritable is not None:
            log.info("feed: the files in %s are written again", self.dirs.directory)
            self.unwritable = None

    def _unwritable(self, exc: BaseException) -> None:
        """The files cannot be written (a removed or unsafe directory, a full disk): said
        once; the directories are opened, checked and every file written again next time."""
        why = f"{type(exc).__name__}: {exc}"
        if self.unwritable != why:
            log.warning("feed: cannot write the files in %s (%s); retrying",
                        self.dirs.directory, why)
        self.unwritable = why
        self.dirs.close()
        self.etag = None

    def _heard(self) -> None:
        self.heard_at = time.monotonic()
        if self.failing is not None:
            log.info("feed: the service answers again")
            self.failing = None

    def _failed(self, why: str) -> None:
        if self.failing is None:
            log.warning("feed: cannot read %s (%s); retrying", self.url, why)
        self.failing = why
        self.etag = None  # rewrite everything once it answers again
        if time.monotonic() - self.heard_at > STALE_S:
            self.dirs.blank()

    def run(self, interval_s: float = INTERVAL_S, stop: Callable[[], bool] = lambda: False
            ) -> None:
        next_at = time.monotonic()
        while not stop():
            self.step()
            next_at += interval_s
            delay = next_at - time.monotonic()
            if delay < 0:  # behind (a slow answer): start again from now, no burst
                next_at = time.monotonic()
                delay = 0
            time.sleep(delay)


class TextFilesTask:
    """Inside ``serve``: the rows from the app's FeedBoard ten times a second; a table's
    files are written (in a worker thread) only when its row key changed."""

    def __init__(self, board: FeedBoard, directory: Path, table: str | None,
                 lang: str) -> None:
        self.board = board
        self.dirs = _Directories(directory, table)
        self.table = table
        self.lang = lang
        self.keys: dict[str, Any] = {}

    async def step(self) -> None:
        board = self.board
        runtime = board.runtime
        now = runtime.time.now_ms()
        ids = [self.table] if self.table else sorted(runtime.tables)
        changed = []
        for tid in ids:
            if tid not in runtime.tables:
                continue
            key = row_key(board.state_of(tid), now)
            if self.keys.get(tid) != key:
                changed.append((tid, key, board.row(tid, now, self.lang)))
        refused = []
        for tid, key, values in changed:
            await asyncio.to_thread(self.dirs.write, tid, values)
            if tid in self.dirs.files:
                self.keys[tid] = key
            else:  # its directory is not ours (_Directories): tried again next time
                refused.append(tid)
        health = runtime.health
        if not refused:
            health.clear("feed.files")
            return
        why = self.dirs.refusals.get(repr(refused[0]), "refused")
        health.fault("feed.files", component="feed", code="feed_files_unwritable",
                     message=f"the text files of table {', '.join(refused)} are not "
                     f"written in {self.dirs.directory}: {why}")

    async def run(self) -> None:
        """Forever; restarted after any failure (a full disk, a removed directory) with
        the failure in /api/health, never silent."""
        loop = asyncio.get_running_loop()
        health = self.board.runtime.health
        while True:
            try:
                next_at = loop.time()
                while True:
                    await self.step()
                    next_at = max(next_at + INTERVAL_S, loop.time())
                    await asyncio.sleep(next_at - loop.time())
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("feed files in %s: %r; retrying in 1 s", self.dirs.directory, exc)
                health.fault("feed.files", component="feed", code="feed_files_unwritable",
                             message=f"the text files in {self.dirs.directory} cannot be "
                             f"written ({type(exc).__name__}: {exc})")
                self.keys.clear()  # rewrite everything when it works again
                self.dirs.close()  # and open (and check) the directories again
                await asyncio.sleep(1.0)


class TextFilesPart:
    """The text files as a part of ``serve`` (clock_service.edges.api.Part): the task runs from
    the app's start to its stop."""

    def __init__(self, task: TextFilesTask) -> None:
        self.task = task
        self._runner: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._runner = asyncio.create_task(self.task.run(), name="feed-text-files")

    async def stop(self) -> None:
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner


def text_files(board: FeedBoard, settings: Any) -> TextFilesPart | None:
    """With SHOTCLOCK_FEED_DIR, ``serve`` keeps the text files itself."""
    if not settings.feed_dir:
        return None
    if settings.feed_lang not in LANGS:
        raise SystemExit(f"SHOTCLOCK_FEED_LANG must be one of {', '.join(LANGS)}, "
                         f"got {settings.feed_lang!r}")
    return TextFilesPart(TextFilesTask(board, Path(settings.feed_dir), settings.feed_table,
                                   settings.feed_lang))


def add_parser(sub: Any) -> None:
    feed = sub.add_parser(
        "feed", help="keep one text file per field (clock.txt, player_a.txt, score_a.txt, "
        "...) for OBS/Wirecast text sources, replaced atomically when it changes")
    feed.add_argument("--dir", required=True, help="directory for the files (created)")
    feed.add_argument("--table", default=None, type=_table_id,
                      help="this table's files in DIR (default: every table in DIR/<id>/)")
    feed.add_argument("--server", default="http://127.0.0.1:8000", help="service base URL")
    feed.add_argument("--lang", choices=LANGS, default="en", help="language of last_event")
    feed.add_argument("--interval", type=float, default=INTERVAL_S,
                      help="seconds between polls (default 0.1)")


def _table_id(value: str) -> str:
    if not is_table_id(value):
        raise argparse.ArgumentTypeError(f"{value[:40]!r} is not a table id ({TABLE_ID_RULE})")
    return value


def run(args: argparse.Namespace) -> int:
    poller = Poller(args.server, Path(args.dir), args.table, args.lang)
    try:
        poller.dirs.open()
    except (OSError, ShotClockError) as exc:
        print(f"shotclock feed: cannot write the files in {args.dir}: {exc}",
              file=sys.stderr, flush=True)
        return EX_CONFIG
    print(f"shotclock feed: {poller.url} -> {args.dir} ({', '.join(file_names())}); "
          "Ctrl-C to stop", file=sys.stderr, flush=True)
    started = time.monotonic()
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))  # systemd, kill
    with contextlib.suppress(KeyboardInterrupt):
        poller.run(max(0.02, args.interval), stop=lambda: bool(stopping))
    took = max(1e-9, time.monotonic() - started)
    refused = (f"; {poller.dirs.refused} rows refused (their table ids, logged)"
               if poller.dirs.refused else "")
    print(f"shotclock feed: {poller.dirs.writes} writes, {poller.dirs.bytes} bytes in "
          f"{took:.0f} s{refused}", file=sys.stderr)
    return 0
