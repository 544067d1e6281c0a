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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clock_service.edges.broadcast.rows import LANGS, row_key
from clock_service.edges.broadcast.textfiles import TextFiles, file_names

if TYPE_CHECKING:
    from clock_service.edges.broadcast.feeds import FeedBoard

__all__ = ["add_parser", "run", "text_files", "TextFilesPart", "Poller", "TextFilesTask",
           "INTERVAL_S"]

log = logging.getLogger(__name__)

INTERVAL_S = 0.1  # OBS and Wirecast read a text file ten times a second
STALE_S = 3.0


class _Directories:
    """One TextFiles per table: DIR itself for the one table asked, DIR/<id>/ for every
    table otherwise."""

    def __init__(self, directory: Path, table: str | None) -> None:
        self.directory = directory
        self.table = table
        self.files: dict[str, TextFiles] = {}

    def of(self, table_id: str) -> TextFiles:
        files = self.files.get(table_id)
        if files is None:
            where = self.directory if self.table else self.directory / table_id
            files = self.files[table_id] = TextFiles(where)
        return files

    def blank(self) -> None:
        for files in self.files.values():
            files.blank()

    @property
    def writes(self) -> int:
        return sum(f.writes for f in self.files.values())

    @property
    def bytes(self) -> int:
        return sum(f.bytes for f in self.files.values())


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
        self._open = opener

    def step(self) -> None:
        """One poll: write the changed files, or note the failure (and blank the clock
        once the service has not been heard for STALE_S)."""
        request = urllib.request.Request(self.url)
        if self.etag:
            request.add_header("If-None-Match", self.etag)
        try:
            with self._open(request, timeout=2.0) as response:
                body = response.read()
                self.etag = response.headers.get("ETag")
            rows = json.loads(body)
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
        for values in rows:
            self.dirs.of(str(values["table"])).update(values)

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
        for tid, key, values in changed:
            files = self.dirs.of(tid)
            await asyncio.to_thread(files.update, values)
            self.keys[tid] = key

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
                    health.clear("feed.files")
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
    feed.add_argument("--table", default=None,
                      help="this table's files in DIR (default: every table in DIR/<id>/)")
    feed.add_argument("--server", default="http://127.0.0.1:8000", help="service base URL")
    feed.add_argument("--lang", choices=LANGS, default="en", help="language of last_event")
    feed.add_argument("--interval", type=float, default=INTERVAL_S,
                      help="seconds between polls (default 0.1)")


def run(args: argparse.Namespace) -> int:
    poller = Poller(args.server, Path(args.dir), args.table, args.lang)
    print(f"shotclock feed: {poller.url} -> {args.dir} ({', '.join(file_names())}); "
          "Ctrl-C to stop", file=sys.stderr, flush=True)
    started = time.monotonic()
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))  # systemd, kill
    with contextlib.suppress(KeyboardInterrupt):
        poller.run(max(0.02, args.interval), stop=lambda: bool(stopping))
    took = max(1e-9, time.monotonic() - started)
    print(f"shotclock feed: {poller.dirs.writes} writes, {poller.dirs.bytes} bytes in "
          f"{took:.0f} s", file=sys.stderr)
    return 0
