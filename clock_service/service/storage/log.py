"""The embedded event store: one SQLite file in WAL mode, written by one thread.

Every event is appended, with the table's core snapshot, in one transaction that is
synced to disk (``synchronous=FULL``: an acknowledged event survives a power cut) before
anyone is told of it. What is stored is lean (schema.py): the event without the table's
state, the snapshot without its undo history (the undo checkpoints are rows of their own:
a commit writes the one it adds), so an event costs a few hundred bytes of store, not an
overflow page. Nothing is written while nothing happens: the proof of life that recovery
needs while a clock runs (``heartbeat``) goes to a file in memory (tmpfs), and the MQTT
acknowledgements (``mark_published``) ride along with the next commit.

Writes are batched: whatever is queued while a commit runs goes into the next commit, so
a slow disk costs latency, never throughput or the clock's time. The event loop never
waits on SQLite: it enqueues and is called back when it is durable.

Reads (start-up, replay for ``?since=``) use their own connections; WAL lets them run
beside the writer. Reads for clients return the stored JSON text as it is (never decoded
and encoded again) and are meant to run off the event loop (``asyncio.to_thread``).

One store, one writer: ``open`` takes an exclusive ``flock`` on ``<db>.lock`` and holds it
until the process ends, so a second service on the same file refuses to start
(``StoreLocked``) instead of interleaving two clocks' histories; and it runs
``PRAGMA quick_check`` first (``StoreCorrupt``), so a damaged file is reported at start
rather than as a 500 on the table that hits the bad page.

Archived tables (``DELETE /api/tables/{id}``) keep their events under the archive id
``<id>~<n>`` (n counts the archives of that id from 1): the live id is free for a new
table, and an archived table's events stay addressable for the records.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import queue
import shutil
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clock_service.core.errors import StoreCorrupt, StoreError, StoreLocked, StoreUnwritable
from clock_service.service.storage.archive import (
    archive_dir,
    archived_event_rows,
    archived_ranges,
    read_match_file,
    write_match,
)
from clock_service.service.storage.heartbeat import AliveFile
from clock_service.service.storage.index import REFRESH_TYPES, ensure_index, index_ops, projection
from clock_service.service.storage.schema import migrate

__all__ = ["Store", "StoredTable", "ArchivedTable", "ARCHIVE_SEP", "UndoChange", "lean_text",
           "with_batch", "quick_check"]

log = logging.getLogger(__name__)


def quick_check(conn: sqlite3.Connection, budget_s: float | None = None) -> list[str] | None:
    """SQLite's findings of ``PRAGMA quick_check(5)`` on ``conn`` (``["ok"]`` when sound),
    or None when it ran past ``budget_s`` seconds (it reads every page: minutes for a big
    store on an SD card). Closes ``conn``. The service's start and ``shotclock doctor``
    both check this way."""
    try:
        if budget_s is not None:
            give_up = time.monotonic() + budget_s
            conn.set_progress_handler(lambda: int(time.monotonic() > give_up), 20_000)
        try:
            return [r[0] for r in conn.execute("PRAGMA quick_check(5)").fetchall()]
        except sqlite3.OperationalError as exc:
            if budget_s is not None and "interrupted" in str(exc):
                return None
            raise
    finally:
        conn.close()

# ``published``: per MQTT target (broker and hall) and table, the last seq the broker
# acknowledged, with every seq before it (clock_service/edges/mqtt/feed.py). It may lag behind
# (a restart then publishes a few events again: consumers drop them by seq), never lead.
# ``archive``: archived tables (DELETE /api/tables/{id}); their events are under ``id``.
# An archived table's id: the live id, this separator, and a count (never a live id).
ARCHIVE_SEP = "~"

# Backoff between attempts to commit on a failing disk.
RETRY_MIN_S = 0.05
RETRY_MAX_S = 2.0
# Most events a single commit takes; more wait for the next one.
MAX_BATCH = 512


@dataclass(frozen=True)
class StoredTable:
    id: str
    config: dict[str, Any]
    core: dict[str, Any]
    seq: int
    # The undo checkpoints, oldest first: (n, step, at, state as JSON).
    undo: list[tuple[int, str, float, str]] = field(default_factory=list)


@dataclass(frozen=True)
class UndoChange:
    """What a commit changes in a table's undo checkpoints: rows dropped (taken back by an
    undo, past the depth, or all of them at a new match) and rows added (n, step, at,
    state as JSON). O(change): one row for an undoable step, not the whole history."""

    drop: list[int] = field(default_factory=list)
    add: list[tuple[int, str, float, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.drop or self.add)


@dataclass(frozen=True)
class ArchivedTable:
    id: str  # the archive id, <table>~<n>: where its events are now
    table: str  # the id it had while live
    config: dict[str, Any]
    seq: int
    created_at: int
    archived_at: int

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "table": self.table, "config": self.config, "seq": self.seq,
                "created_at": self.created_at, "archived_at": self.archived_at}


@dataclass
class _Archive:
    table_id: str
    archive_id: str
    archived_at: int
    done: Callable[[BaseException | None], None] | None
    seq: int | None = None  # its last event (table.archived); None: the stored row's


@dataclass
class _Write:
    """One append, already encoded: JSON is made by the caller (the event loop), so the
    writer thread spends its time in SQLite and fsync with the GIL released. Python work
    in the writer thread would hold the GIL against the loop (the convoy effect: every
    I/O call of the loop then waits up to a switch interval, 5 ms, to get it back)."""

    table_id: str
    rows: list[Row]  # events: (table, seq, type, at, body, batch, proj)
    core: str | None
    seq: int
    done: Callable[[BaseException | None], None] | None
    config: str | None = None  # set for a new table
    created_at: int = 0
    # The match index's statements for these events (storage/index.py), same transaction.
    index: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    undo: UndoChange | None = None
    # False: a commit of its own needs no fsync (the shot's warnings, derived from the
    # clock's state: see ``append``).
    sync: bool = True


Row = tuple[str, int, str, int, str, int | None, str | None]


def lean_text(event: dict[str, Any]) -> str:
    """An event as the store keeps and replays it: without the table's state (nor the
    ``batch`` an MQTT catch-up adds in its place: the store keeps that in its column)."""
    return json.dumps({k: v for k, v in event.items() if k not in ("state", "batch")},
                      separators=(",", ":"))


def with_batch(body: str, batch: int | None) -> str:
    """A stored event's text with ``"batch": N`` spliced in when it was not the last event
    of its commit (``batch`` column not NULL): what the MQTT catch-up sends, so a hall
    that stores it keeps the same ``batch`` as the table, and the same match digest."""
    return body if batch is None else f'{body[:-1]},"batch":{int(batch)}}}'


def _encode(table_id: str, events: list[dict[str, Any]], core: dict[str, Any] | None,
            texts: list[str] | None = None) -> tuple[list[Row], str | None]:
    """``texts``: the events' lean JSON (``lean_text``), when the caller made it already."""
    bodies = texts if texts is not None else [lean_text(e) for e in events]
    rows: list[Row] = []
    for event, body in zip(events, bodies, strict=True):
        seq = int(event["seq"])
        state = event.get("state")
        # The live event's state.seq, or what a catch-up carries in its place (with_batch).
        batch = state.get("seq") if isinstance(state, dict) else event.get("batch")
        proj = projection(event) if event["type"] in REFRESH_TYPES else None
        rows.append((table_id, seq, event["type"], int(event["at"]), body,
                     None if batch == seq else batch,
                     None if proj is None else json.dumps(proj, separators=(",", ":"))))
    return rows, None if core is None else json.dumps(core, separators=(",", ":"))


@dataclass
class _Statements:
    """SQL of a part beside the log (the tournament's draw and outbox), in the writer's
    order and transaction."""

    statements: list[tuple[str, tuple[Any, ...]]]
    done: Callable[[BaseException | None], None] | None = None


@dataclass(frozen=True)
class _Published:
    target: str
    table_id: str
    seq: int


@dataclass
class _Job:
    """Work of the writer thread outside the batch's transaction (archiving matches: it
    writes files, then commits), in the writer's order."""

    run: Callable[[sqlite3.Connection], Any]
    done: Callable[[Any, BaseException | None], None] | None = None


_STOP = object()
_FLUSH = object()  # commit what waits (the MQTT acknowledgements) even with no event


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=10.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=10000")
    return conn


class Store:
    def __init__(self, path: str | Path, *, synchronous: str = "FULL") -> None:
        """``synchronous``: FULL (a table's own log: an acknowledged event survives a power
        cut); NORMAL for a copy that can be fetched again (the hall's mirror: WAL never
        corrupts, a power cut may only lose the last commits, which the tables replay)."""
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be FULL or NORMAL, got {synchronous!r}")
        self.synchronous = synchronous
        self.path = str(path)
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._local = threading.local()
        self.commits = 0
        self.unsynced_commits = 0  # of them, committed without an fsync (append sync=False)
        self.write_errors = 0  # failed commit attempts (each retried, see _commit_until_done)
        self._closing = False  # for the benchmark: how many fsyncs the batching saved
        # Duration of the recent commits in ms (BEGIN..COMMIT, fsync included), for /api/health.
        self.commit_ms: deque[float] = deque(maxlen=1024)
        # Told from the writer thread when writes start failing (the error) and when they
        # succeed again (None); the runtime turns it into the store fault.
        self.on_trouble: Callable[[BaseException | None], None] | None = None
        self.failing_since: float | None = None  # time.time() of the first failed attempt
        self._lock_fd: int | None = None
        self._checked = False
        self.check_pending = False  # check(budget_s) ran out: check_later finishes it
        # MQTT acknowledgements waiting for the next commit: (target, table) -> seq.
        self._published: dict[tuple[str, str], int] = {}
        self._published_lock = threading.Lock()
        self.alive_file: AliveFile | None = None  # the proof of life in memory (open)
        self.store_id = ""  # this store's random id (meta), for the alive file
        self.migrated = False  # whether open() migrated the file from an older schema

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def lock_path(self) -> str:
        return self.path + ".lock"

    def lock(self) -> None:
        """Take the store for this process (held until it ends); ``StoreLocked`` if another
        process has it. The lock file records the holder's pid, for the message."""
        if self._lock_fd is not None or self.path == ":memory:":
            return
        import fcntl

        try:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            for path in (self.path, self.path + "-wal", str(Path(self.path).parent)):
                if os.path.exists(path) and not os.access(path, os.W_OK):
                    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        except OSError as exc:
            raise self.unwritable(exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise StoreLocked(
                f"the event store {self.path} is in use by another shotclock process "
                f"(pid {holder}); two services on one store would mix two clocks' "
                "histories: stop the other one, or give this one its own --db") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._lock_fd = fd

    def unwritable(self, exc: OSError) -> StoreUnwritable:
        """The one line that says why the store cannot be written and what to do."""
        where = exc.filename or self.path
        why = ("the file system is read-only (an overlay root, or a card the kernel "
               "remounted read-only after errors)" if exc.errno == errno.EROFS else
               f"{exc.strerror or exc} (the service's user cannot write there)")
        return StoreUnwritable(
            f"the event store {self.path} cannot be written: {where}: {why}. Keep the store "
            "on a writable partition (--db or SHOTCLOCK_DB, e.g. /var/lib/shotclock/"
            "shotclock.db; under an overlay root, a writable partition named in the unit's "
            "ReadWritePaths=: see deploy/README.md)")

    def check(self, budget_s: float | None = None) -> bool:
        """``PRAGMA quick_check``; ``StoreCorrupt`` with SQLite's findings if it fails.

        ``budget_s``: give up after that long and return False, the check left for
        ``check_later``. It reads every page: a store of several GB on an SD card takes
        minutes, longer than systemd waits for READY (issue 22 point 4).
        """
        if self._checked or self.path == ":memory:" or not Path(self.path).exists():
            self._checked = True
            return True
        try:
            found = quick_check(_connect(self.path), budget_s)
        except sqlite3.DatabaseError as exc:
            found = [str(exc)]
        if found is None:
            self.check_pending = True
            return False
        rows = found
        if rows != ["ok"]:
            raise StoreCorrupt(
                f"the event store {self.path} failed its integrity check "
                f"(PRAGMA quick_check: {'; '.join(rows)}): restore it from a backup, or move "
                "it aside to start with an empty store")
        self._checked = True
        self.check_pending = False
        return True

    def check_later(self, on_result: Callable[[StoreCorrupt | None], None]) -> None:
        """Finish a check that ran out of its budget, in a thread of its own (WAL: beside
        the writer); ``on_result`` is called from that thread with the finding."""
        def run() -> None:
            try:
                self.check()
            except StoreCorrupt as exc:
                on_result(exc)
                return
            on_result(None)

        threading.Thread(target=run, name="store-check", daemon=True).start()

    def open(self) -> None:
        if self._thread is not None:
            return
        self.lock()
        if not self.check_pending:  # (a check past its budget finishes after start)
            self.check()
        try:
            conn = _connect(self.path)
            # Before WAL: switching a new, empty file to WAL writes its header, and from then
            # on auto_vacuum only changes with a VACUUM (schema.migrate sets it for a new
            # store, and would otherwise VACUUM it at its second open).
            if not conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone():
                conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
            conn.execute("PRAGMA journal_mode=WAL")
            # FULL: a commit is on disk before it returns, so an event told to a client
            # survives a power cut (WAL + NORMAL can lose the last commits). See README.
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            conn.execute("PRAGMA journal_size_limit=67108864")
            self.migrated = migrate(conn, REFRESH_TYPES)
            if ensure_index(conn):
                log.info("match index built from the event log (%s)", self.path)
            self.store_id = self._ensure_id(conn)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the event store at {self.path}: {exc}") from exc
        if self.path != ":memory:":
            self.alive_file = AliveFile.for_store(self.path, self.store_id)
        self._writer = conn
        self._thread = threading.Thread(target=self._write_loop, name="store-writer", daemon=True)
        self._thread.start()

    @staticmethod
    def _ensure_id(conn: sqlite3.Connection) -> str:
        row = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        if row is not None:
            return str(row[0])
        store_id = os.urandom(8).hex()
        conn.execute("INSERT INTO meta (key, value) VALUES ('store_id', ?)", (store_id,))
        return store_id

    def close(self) -> None:
        """Write everything queued, then stop the writer and let go of the store."""
        if self._thread is not None:
            self._closing = True
            self._queue.put(_FLUSH)
            self._queue.put(_STOP)
            self._thread.join(timeout=30)
            self._thread = None
            with contextlib.suppress(sqlite3.Error):  # leave one file, not a long WAL
                self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._writer.close()
            if self.alive_file is not None:
                # A clean stop wrote its last proof of life into the store (``heartbeat``
                # with durable=True): the copy in memory is not needed any more.
                self.alive_file.remove()
                self.alive_file = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    # -- writes (any thread; ``done`` is called from the writer thread) ----------------------
    def create_table(
        self, table_id: str, config: dict[str, Any], core: dict[str, Any],
        events: list[dict[str, Any]], seq: int, created_at: int,
        done: Callable[[BaseException | None], None] | None = None,
        texts: list[str] | None = None,
    ) -> None:
        rows, core_text = _encode(table_id, events, core, texts)
        self._queue.put(_Write(table_id, rows, core_text, seq, done, json.dumps(config),
                               created_at, index_ops(table_id, events)))

    def append(
        self, table_id: str, events: list[dict[str, Any]], core: dict[str, Any] | None,
        seq: int, done: Callable[[BaseException | None], None] | None = None,
        texts: list[str] | None = None, undo: UndoChange | None = None,
        sync: bool = True,
    ) -> None:
        """Append events (``texts``: their lean JSON, when the caller already made it; the
        events themselves may carry their ``state``: it is not stored, only what the
        projections read of it). ``core``: the table's snapshot after them (without its
        undo history); ``undo``: what changed in its undo checkpoints.

        ``sync=False``: if the batch holds nothing else, it is committed without an fsync
        (``synchronous=NORMAL`` for that one commit). It is in the WAL after any commit
        before it and before any after it, so the next synced commit makes it durable
        too; ``done`` is still called once it is committed (the events are sent then). A
        kill loses nothing (the page cache outlives the process); a power cut may lose it,
        so only events that recovery can derive again with the same seqs may ask for it
        (the shot's warnings: TableClock.recover, I19)."""
        rows, core_text = _encode(table_id, events, core, texts)
        self._queue.put(_Write(table_id, rows, core_text, seq, done,
                               index=index_ops(table_id, events), undo=undo or None,
                               sync=sync))

    def archive_table(self, table_id: str, archive_id: str, archived_at: int,
                      done: Callable[[BaseException | None], None] | None = None,
                      seq: int | None = None) -> None:
        """Move a table out of the live set: its row to ``archive`` and its events under
        ``archive_id``, in one transaction, after every write queued before it. ``seq``:
        its last event (the row's seq is only brought up to date at the end of a batch)."""
        self._queue.put(_Archive(table_id, archive_id, archived_at, done, seq))

    def heartbeat(self, alive_at_ms: float, *, durable: bool = False) -> None:
        """Record that the service is alive (for recovery of running clocks). By default in
        memory only (the alive file on tmpfs: no disk write, no fsync; it outlives the
        process, not the machine); ``durable``: in the store, committed (a clean stop)."""
        if durable or self.alive_file is None:
            self._queue.put(("alive", alive_at_ms))
        else:
            self.alive_file.write(alive_at_ms)

    def execute(self, statements: list[tuple[str, tuple[Any, ...]]],
                done: Callable[[BaseException | None], None] | None = None) -> None:
        """Run SQL statements in the writer's next commit (after every write queued
        before); ``done`` is called from the writer thread once they are durable."""
        self._queue.put(_Statements(statements, done))

    def mark_published(self, target: str, table_id: str, seq: int) -> None:
        """Record that the broker ``target`` has every event of the table up to ``seq``.
        Written with the next commit (or at close), never a commit of its own: the record
        may lag (a restart then sends a few events again), never lead."""
        with self._published_lock:
            self._published[(target, table_id)] = seq

    def flush_published(self) -> None:
        """Commit the acknowledgements waiting (when no event may follow to carry them)."""
        if self._published and self._thread is not None:
            self._queue.put(_FLUSH)

    def put_meta(self, key: str, value: str) -> None:
        """Set a ``meta`` row (issued tokens: clock_service/service/auth.py), through the writer, in
        order with everything else."""
        self.execute([("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                       (key, value))])

    def meta_items(self, prefix: str) -> list[tuple[str, str]]:
        """The ``meta`` rows whose key starts with ``prefix`` (a reader connection)."""
        rows = self._reader().execute(
            "SELECT key, value FROM meta WHERE key >= ? AND key < ? ORDER BY key",
            (prefix, prefix + "\uffff")).fetchall()
        return [(str(k), str(v)) for k, v in rows]

    def _write_loop(self) -> None:
        conn = self._writer
        stop = False
        while not stop:
            batch = [self._queue.get()]
            while len(batch) < MAX_BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            if _STOP in batch:
                stop = True
                batch = [item for item in batch if item is not _STOP]
            jobs = [item for item in batch if isinstance(item, _Job)]
            batch = [item for item in batch if not isinstance(item, _Job)]
            if batch and not (batch == [_FLUSH] and not self._published):
                self._commit_batch(conn, batch)
            for job in jobs:
                self._run_job(conn, job)

    def _run_job(self, conn: sqlite3.Connection, job: _Job) -> None:
        result, error = None, None
        try:
            result = job.run(conn)
        except Exception as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            log.exception("store job failed")
            error = exc
        if job.done is not None:
            try:
                job.done(result, error)
            except Exception:
                log.exception("store job callback failed")

    def _commit_batch(self, conn: sqlite3.Connection, batch: list[Any]) -> None:
        error = self._commit_until_done(conn, batch)
        for item in batch:
            if isinstance(item, _Write | _Archive | _Statements) and item.done is not None:
                try:
                    item.done(error)
                except Exception:
                    log.exception("store callback failed")

    def _commit_until_done(self, conn: sqlite3.Connection, batch: list[Any]) -> StoreError | None:
        """Commit the batch. A full or failing disk (OperationalError) is retried with
        backoff for as long as it takes: the batch's events keep their place in the order,
        so nothing is lost and no client ever sees a gap, only a delay. Anything else (a
        bug) fails the batch at once, and so does a retry after close() was asked."""
        delay = RETRY_MIN_S
        attempt = 0
        while True:
            try:
                started = time.perf_counter()
                self._commit(conn, batch)
                self.commit_ms.append((time.perf_counter() - started) * 1000.0)
                self.commits += 1
                if attempt:
                    log.warning("event store writable again after %d failed attempts", attempt)
                if self.failing_since is not None:
                    self.failing_since = None
                    self._tell(None)
                return None
            except Exception as exc:
                attempt += 1
                self.write_errors += 1
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                retry = isinstance(exc, sqlite3.OperationalError) and not self._closing
                if self.failing_since is None:
                    self.failing_since = time.time()
                    self._tell(exc)
                if attempt == 1 or not retry:
                    log.error("event store write failed (%s: %s)%s", type(exc).__name__, exc,
                              "; retrying until the disk recovers" if retry else "")
                if not retry:
                    return StoreError(f"event store write failed: {exc}")
                time.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)

    def _tell(self, error: BaseException | None) -> None:
        if self.on_trouble is not None:
            try:
                self.on_trouble(error)
            except Exception:
                log.exception("store trouble callback failed")

    @property
    def pending(self) -> int:
        """Writes queued and not yet committed (approximate)."""
        return self._queue.qsize()

    def _commit(self, conn: sqlite3.Connection, batch: list[Any]) -> None:
        lazy = self.synchronous == "FULL" and all(
            isinstance(item, _Write) and not item.sync for item in batch)
        if lazy:  # no fsync for this commit only (see append): set back after it
            conn.execute("PRAGMA synchronous=NORMAL")
            try:
                self._commit_sync(conn, batch)
            finally:
                conn.execute("PRAGMA synchronous=FULL")
            self.unsynced_commits += 1
            return
        self._commit_sync(conn, batch)

    def _commit_sync(self, conn: sqlite3.Connection, batch: list[Any]) -> None:
        conn.execute("BEGIN IMMEDIATE")
        cores: dict[str, tuple[str, int]] = {}  # only a table's last snapshot in a batch
        with self._published_lock:
            published, self._published = self._published, {}
        try:
            self._commit_items(conn, batch, cores, published)
        except BaseException:
            with self._published_lock:  # retried with the batch: keep the newer marks
                self._published = {**published, **self._published}
            raise

    def _commit_items(self, conn: sqlite3.Connection, batch: list[Any],
                      cores: dict[str, tuple[str, int]],
                      published: dict[tuple[str, str], int]) -> None:
        alive = None
        for item in batch:
            if item is _FLUSH:
                continue
            if isinstance(item, tuple):
                alive = item[1]
                continue
            if isinstance(item, _Published):
                published[(item.target, item.table_id)] = item.seq
                continue
            if isinstance(item, _Statements):
                for sql, params in item.statements:
                    conn.execute(sql, params)
                continue
            if isinstance(item, _Archive):
                self._archive(conn, item)
                cores.pop(item.table_id, None)
                for key in [k for k in published if k[1] == item.table_id]:
                    del published[key]  # acknowledged seqs of the archived log
                continue
            if item.config is not None:
                conn.execute(
                    "INSERT INTO tables (id, config, core, seq, created_at) VALUES (?,?,?,?,?)",
                    (item.table_id, item.config, item.core, item.seq, item.created_at),
                )
                cores.pop(item.table_id, None)
            elif item.core is not None:
                cores[item.table_id] = (item.core, item.seq)
            conn.executemany(
                "INSERT INTO events (table_id, seq, type, at, body, batch, proj) "
                "VALUES (?,?,?,?,?,?,?)", item.rows)
            for sql, params in item.index:
                conn.execute(sql, params)
            if item.undo is not None:
                conn.executemany("DELETE FROM undo WHERE table_id = ? AND n = ?",
                                 [(item.table_id, n) for n in item.undo.drop])
                conn.executemany(
                    "INSERT OR REPLACE INTO undo (table_id, n, step, at, state) "
                    "VALUES (?,?,?,?,?)", [(item.table_id, *row) for row in item.undo.add])
        conn.executemany("UPDATE tables SET core = ?, seq = ? WHERE id = ?",
                         [(core, seq, table_id) for table_id, (core, seq) in cores.items()])
        if published:
            conn.executemany(
                "INSERT INTO published (target, table_id, seq) VALUES (?,?,?) "
                "ON CONFLICT(target, table_id) DO UPDATE SET seq = excluded.seq",
                [(target, table_id, seq) for (target, table_id), seq in published.items()])
        if alive is not None:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('alive_at', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (repr(float(alive)),),
            )
        conn.execute("COMMIT")

    @staticmethod
    def _archive(conn: sqlite3.Connection, item: _Archive) -> None:
        conn.execute(
            "INSERT INTO archive (id, table_id, config, seq, created_at, archived_at) "
            "SELECT ?, id, config, coalesce(?, seq), created_at, ? FROM tables WHERE id = ?",
            (item.archive_id, item.seq, item.archived_at, item.table_id))
        conn.execute("DELETE FROM tables WHERE id = ?", (item.table_id,))
        conn.execute("UPDATE events SET table_id = ? WHERE table_id = ?",
                     (item.archive_id, item.table_id))
        # Its matches go with its events (reports: match ids become <archive id>.<n>); what
        # MQTT targets acknowledged was of the old log: a new table of this id starts at 0.
        conn.execute("UPDATE matches SET table_id = ? WHERE table_id = ?",
                     (item.archive_id, item.table_id))
        conn.execute("DELETE FROM published WHERE table_id = ?", (item.table_id,))
        conn.execute("DELETE FROM undo WHERE table_id = ?", (item.table_id,))

    # -- bounded growth: finished matches to files (storage/archive.py) ----------------------
    def archive_matches(self, ended_before_ms: float, *, limit: int = 500,
                        done: Callable[[Any, BaseException | None], None] | None = None,
                        ) -> None:
        """Queue the archiving of the finished matches that ended before
        ``ended_before_ms`` (in the writer's order); ``done(ids, error)`` from the writer."""
        self._queue.put(_Job(lambda conn: self._archive_matches(conn, ended_before_ms, limit),
                             done))

    def archive_matches_now(self, ended_before_ms: float, limit: int = 500) -> list[str]:
        """The same, waiting for it (``shotclock store archive``, tests)."""
        return list(self._wait_for(_Job(
            lambda conn: self._archive_matches(conn, ended_before_ms, limit))))

    def _archive_matches(self, conn: sqlite3.Connection, ended_before_ms: float,
                         limit: int) -> list[str]:
        from clock_service.service.storage.index import match_row
        from clock_service.service.storage.records import load_events

        rows = conn.execute(
            "SELECT table_id, number, start_seq, end_seq FROM matches m "
            "WHERE status IN ('over', 'closed') AND end_seq IS NOT NULL AND ended_at < ? "
            "AND NOT EXISTS (SELECT 1 FROM archived_matches a WHERE a.table_id = m.table_id "
            "AND a.number = m.number) ORDER BY ended_at LIMIT ?",
            (int(ended_before_ms), limit)).fetchall()
        directory = archive_dir(self.path)
        archived = []
        for table_id, number, start_seq, end_seq in rows:
            summary = match_row(conn, table_id, number)
            if summary is None:
                continue
            events = conn.execute(
                "SELECT seq, type, at, body, batch, proj FROM events WHERE table_id = ? "
                "AND seq >= ? AND seq <= ? ORDER BY seq", (table_id, start_seq, end_seq)
            ).fetchall()
            _, digest = load_events(conn, table_id, start_seq, end_seq)
            match_id = summary["id"]
            path, size = write_match(directory, match_id, summary, digest,
                                     [tuple(row) for row in events])
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("DELETE FROM events WHERE table_id = ? AND seq >= ? AND seq <= ?",
                         (table_id, start_seq, end_seq))
            conn.execute(
                "INSERT OR REPLACE INTO archived_matches (table_id, number, start_seq, "
                "end_seq, file, digest, events, bytes, summary, archived_at) "
                "VALUES (?,?,?,?,?,?,?,?,?,?)",
                (table_id, number, start_seq, end_seq, path.name, digest, len(events), size,
                 json.dumps(summary), int(time.time() * 1000)))
            conn.execute("COMMIT")
            archived.append(match_id)
        if archived:
            self.vacuum(conn)
            log.info("archived %d finished matches to %s", len(archived), directory)
        return archived

    @staticmethod
    def vacuum(conn: sqlite3.Connection, pages: int = 0) -> None:
        """Give free pages back to the file system (incremental vacuum: 0 = all of them)."""
        conn.execute(f"PRAGMA incremental_vacuum({int(pages)})").fetchall()

    def import_match(self, path: str | Path) -> str:
        """Put an archived match's events back into the live store (re-import); the
        match is then served from the store again. Runs in the writer's order."""
        document = read_match_file(Path(path))
        summary = document["match"]

        def run(conn: sqlite3.Connection) -> str:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                "INSERT OR IGNORE INTO events (table_id, seq, type, at, body, batch, proj) "
                "VALUES (?,?,?,?,?,?,?)",
                [(summary["table"], *row) for row in document["events"]])
            conn.execute("DELETE FROM archived_matches WHERE table_id = ? AND number = ?",
                         (summary["table"], summary["number"]))
            conn.execute("COMMIT")
            return str(summary["id"])

        return str(self._wait_for(_Job(run)))

    def _wait_for(self, job: _Job) -> Any:
        finished = threading.Event()
        answer: list[tuple[Any, BaseException | None]] = []

        def done(result: Any, error: BaseException | None) -> None:
            answer.append((result, error))
            finished.set()

        job.done = done
        self._queue.put(job)
        finished.wait()
        result, error = answer[0]
        if error is not None:
            raise error
        return result

    def stats(self) -> dict[str, Any]:
        """What the store holds and costs (``shotclock store stats``)."""
        reader = self._reader()
        page_size = reader.execute("PRAGMA page_size").fetchone()[0]
        pages = reader.execute("PRAGMA page_count").fetchone()[0]
        free = reader.execute("PRAGMA freelist_count").fetchone()[0]
        events = reader.execute("SELECT count(*) FROM events").fetchone()[0]
        archived = reader.execute(
            "SELECT count(*), coalesce(sum(events), 0), coalesce(sum(bytes), 0) "
            "FROM archived_matches").fetchone()
        wal = Path(self.path + "-wal")
        disk = shutil.disk_usage(Path(self.path).resolve().parent)
        used = (pages - free) * page_size
        return {
            "path": self.path, "file_bytes": pages * page_size, "used_bytes": used,
            "free_pages": free, "wal_bytes": wal.stat().st_size if wal.exists() else 0,
            "events": events, "bytes_per_event": round(used / events, 1) if events else None,
            "tables": reader.execute("SELECT count(*) FROM tables").fetchone()[0],
            "matches": reader.execute("SELECT count(*) FROM matches").fetchone()[0],
            "archived_matches": archived[0], "archived_events": archived[1],
            "archive_bytes": archived[2], "archive_dir": str(archive_dir(self.path)),
            "disk_free_bytes": disk.free, "disk_total_bytes": disk.total,
        }

    def _with_archived(self, table_id: str, since: int, upper: int, limit: int,
                       rows: list[tuple[int, str]], batch: bool = False
                       ) -> list[tuple[int, str]]:
        """``rows`` (seq, body) of the store, with the archived matches' events of that
        range read from their files: a table's log has no gap after archiving."""
        ranges = archived_ranges(self._reader(), table_id, since + 1,
                                 min(upper, rows[-1][0]) if len(rows) == limit else upper)
        if not ranges:
            return rows
        extra = [(row[0], with_batch(row[3], row[4]) if batch else row[3]) for row in
                 archived_event_rows(self.path, ranges, since + 1, upper)]
        return sorted([*rows, *extra])[:limit]

    # -- reads (any thread) -------------------------------------------------------------------
    def _reader(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = _connect(self.path)
            self._local.conn = conn
        return conn

    def reader_connection(self) -> sqlite3.Connection:
        """This thread's reader connection (for match reports, reports/service.py)."""
        return self._reader()

    def load_tables(self) -> list[StoredTable]:
        reader = self._reader()
        rows = reader.execute(
            "SELECT id, config, core, seq FROM tables ORDER BY created_at, id"
        ).fetchall()
        undo: dict[str, list[tuple[int, str, float, str]]] = {}
        for table_id, n, step, at, state in reader.execute(
                "SELECT table_id, n, step, at, state FROM undo ORDER BY table_id, n"):
            undo.setdefault(table_id, []).append((int(n), str(step), float(at), str(state)))
        return [StoredTable(r[0], json.loads(r[1]), json.loads(r[2]), r[3], undo.get(r[0], []))
                for r in rows]

    def alive_at(self) -> float | None:
        """When the service was last known alive: the later of the last proof of life in
        memory (the alive file: a killed process's last heartbeat) and in the store (a clean
        stop's)."""
        row = self._reader().execute("SELECT value FROM meta WHERE key = 'alive_at'").fetchone()
        stored = float(row[0]) if row else None
        in_memory = self.alive_file.read() if self.alive_file is not None else None
        known = [t for t in (stored, in_memory) if t is not None]
        return max(known) if known else None

    def proof_of_life(self) -> tuple[float | None, float | None]:
        """(the proof of life in memory, the last clean stop's), separately: with no proof
        in memory, a table with events after the last clean stop went down with the
        machine (a power cut, I19), not with the process."""
        row = self._reader().execute("SELECT value FROM meta WHERE key = 'alive_at'").fetchone()
        in_memory = self.alive_file.read() if self.alive_file is not None else None
        return in_memory, float(row[0]) if row else None

    def events_since(
        self, table_id: str, since: int, until: int | None = None, limit: int = 100_000
    ) -> list[dict[str, Any]]:
        """Events of a table with ``since < seq <= until``, in order."""
        return [json.loads(text) for _, text in self.event_texts(table_id, since, until, limit)]

    def event_texts(self, table_id: str, since: int, until: int | None = None,
                    limit: int = 1000, *, batch: bool = False) -> list[tuple[int, str]]:
        """(seq, stored JSON) of a table's events with ``since < seq <= until``, in order:
        sent to clients as they are (no decode, no encode). ``batch``: with ``"batch"``
        spliced in where it is not the event's own seq (the MQTT catch-up: with_batch)."""
        upper = until if until is not None else 2**62
        rows = self._reader().execute(
            "SELECT seq, body, batch FROM events WHERE table_id = ? AND seq > ? AND seq <= ? "
            "ORDER BY seq LIMIT ?",
            (table_id, since, upper, limit),
        ).fetchall()
        return self._with_archived(
            table_id, since, upper, limit,
            [(int(r[0]), with_batch(str(r[1]), r[2]) if batch else str(r[1])) for r in rows],
            batch)

    def events_json(self, table_id: str, since: int, limit: int) -> bytes:
        """A page of events as one JSON array, built from the stored text."""
        texts = [text for _, text in self.event_texts(table_id, since, None, limit)]
        return ("[" + ",".join(texts) + "]").encode()

    def archived(self, table_id: str | None = None, after: str = "",
                 limit: int = 100) -> list[ArchivedTable]:
        """Archived tables by archive id (all, or the archives of one live id)."""
        where, args = "id > ?", [after]
        if table_id is not None:
            where += " AND table_id = ?"
            args.append(table_id)
        rows = self._reader().execute(
            f"SELECT id, table_id, config, seq, created_at, archived_at FROM archive "
            f"WHERE {where} ORDER BY id LIMIT ?", (*args, limit)).fetchall()
        return [ArchivedTable(r[0], r[1], json.loads(r[2]), r[3], r[4], r[5]) for r in rows]

    def archive_record(self, archive_id: str) -> ArchivedTable | None:
        row = self._reader().execute(
            "SELECT id, table_id, config, seq, created_at, archived_at FROM archive "
            "WHERE id = ?", (archive_id,)).fetchone()
        return None if row is None else ArchivedTable(row[0], row[1], json.loads(row[2]),
                                                      row[3], row[4], row[5])

    def archive_count(self, table_id: str) -> int:
        row = self._reader().execute(
            "SELECT count(*) FROM archive WHERE table_id = ?", (table_id,)).fetchone()
        return int(row[0])

    def published(self, target: str) -> dict[str, int]:
        """Per table, the last seq the broker ``target`` acknowledged (see mark_published)."""
        rows = self._reader().execute(
            "SELECT table_id, seq FROM published WHERE target = ?", (target,)).fetchall()
        return {str(r[0]): int(r[1]) for r in rows}

    def last_event_at(self, table_id: str) -> float | None:
        """When the table's last stored event happened: the service was alive then."""
        row = self._reader().execute(
            "SELECT at FROM events WHERE table_id = ? ORDER BY seq DESC LIMIT 1", (table_id,)
        ).fetchone()
        return float(row[0]) if row else None

    def event_count(self, table_id: str) -> int:
        row = self._reader().execute(
            "SELECT count(*) FROM events WHERE table_id = ?", (table_id,)
        ).fetchone()
        return int(row[0])
