"""Building and rendering match records in a separate process: the clock never waits on it.

A record, a protocol page or a chart is Python work of tens of milliseconds. In a thread of
the service it would hold the GIL in turns with the event loop: every one of the loop's
I/O calls would then wait for the GIL to come back (up to the 5 ms switch interval each),
and an expiry due meanwhile would fire late (measured: 100+ ms late with eight readers
fetching protocols; bench/reports_bench.py). Readers need no token, so they must not be
able to do that. The work runs in one worker process instead; the loop only awaits a
future. The worker reads the store file with its own connection (WAL: beside the writer)
and keeps the records and the rendered outputs it made, keyed by the match's last seq, so
a finished match is built once and a live one once per event.

Everything crossing the process boundary is plain data: arguments are strings, numbers and
dicts; results are ``(code, text)``: ``("ok", body)`` or an error code and its message.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import sqlite3
import threading
import urllib.parse
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

__all__ = ["render", "executor", "reset_executor", "shutdown", "RECORDS_CACHED",
           "OUTPUTS_CACHED"]

RECORDS_CACHED = 32
OUTPUTS_CACHED = 128
# The worker's scheduling priority below the service's: on a busy machine the clock's
# process gets the CPU first (Linux CFS: nice 10 weighs about a tenth of nice 0).
WORKER_NICE = 10

# -- in the worker process ---------------------------------------------------------------------

_conns: dict[str, sqlite3.Connection] = {}
_records: OrderedDict[tuple[str, str, int], tuple[dict[str, Any], Any]] = OrderedDict()
_outputs: OrderedDict[tuple[Any, ...], str] = OrderedDict()
builds = 0  # records built in this process (cache misses)
rendered = 0  # outputs made in this process (cache misses)


def _connect(db: str) -> sqlite3.Connection:
    conn = _conns.get(db)
    if conn is None:
        uri = "file:" + urllib.parse.quote(str(Path(db).resolve())) + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=10000")
        _conns[db] = conn
    return conn


def _remember(cache: OrderedDict[Any, Any], key: Any, value: Any, size: int) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > size:
        cache.popitem(last=False)


def render(db: str, match_id: str, kind: str, options: dict[str, Any]) -> tuple[str, str]:
    """One output of one match: ``kind`` is ``json``, ``csv``, ``svg`` or ``html``."""
    global builds, rendered
    from clock_service.edges.reports.charts import CHARTS, chart_svg
    from clock_service.edges.reports.export import record_json, shots_csv
    from clock_service.edges.reports.protocol import render_protocol
    from clock_service.edges.reports.records import build_from_store
    from clock_service.service.storage.index import match_row, split_match_id
    from clock_service.service.storage.records import last_seq

    conn = _connect(db)
    key = split_match_id(match_id)
    summary = None if key is None else match_row(conn, *key)
    if key is None or summary is None:
        return "unknown_match", match_id
    last = last_seq(conn, summary)
    record_key = (db, match_id, last)
    cached = _records.get(record_key)
    if cached is None:
        cached = (summary, build_from_store(conn, summary, last))
        builds += 1
        _remember(_records, record_key, cached, RECORDS_CACHED)
    summary, record = cached
    output_key = (db, match_id, last, kind, tuple(sorted(options.items())))
    text = _outputs.get(output_key)
    if text is None:
        if kind == "json":
            import json

            text = json.dumps(record_json(summary, record, bool(options.get("shots", True))),
                              ensure_ascii=False, separators=(",", ":"))
        elif kind == "csv":
            text = shots_csv(record, locale=str(options.get("locale", "en")))
        elif kind == "svg":
            text = chart_svg(CHARTS[options["chart"]], record, frame=options.get("frame"),
                             lang=options.get("lang", "en"), width=options.get("width"),
                             height=options.get("height"))
        elif kind == "html":
            text = render_protocol(summary, record, lang=options.get("lang", "en"))
        else:
            raise ValueError(f"unknown output {kind!r}")
        rendered += 1
        _remember(_outputs, output_key, text, OUTPUTS_CACHED)
    return "ok", text


def _lower_priority() -> None:
    """Yield the CPU to the service (WORKER_NICE)."""
    import contextlib

    with contextlib.suppress(AttributeError, OSError):
        os.nice(WORKER_NICE)


PR_SET_PDEATHSIG = 1  # linux/prctl.h
PARENT_POLL_S = 1.0


def _die_with(parent: int, pdeathsig: bool) -> None:
    """End this worker when the service that started it ends, however it ends (SIGKILL, a
    crash, the OOM killer): a worker blocked on its task queue never sees its parent go (it
    holds the queue's write end itself), and it keeps multiprocessing's resource tracker
    alive with it. On Linux the kernel sends SIGKILL when the parent dies (prctl
    PR_SET_PDEATHSIG; only when the spawning thread is the service's main thread, since the
    signal follows the thread); everywhere a daemon thread also watches the parent pid and
    exits when this process is handed to another parent."""
    import signal
    import sys

    if pdeathsig and sys.platform.startswith("linux"):
        import contextlib
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    def orphaned() -> bool:
        return os.getppid() != parent

    if orphaned():  # gone before the signal was asked for
        os._exit(0)

    def watch() -> None:
        import time

        while not orphaned():
            time.sleep(PARENT_POLL_S)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _start_worker(parent: int, pdeathsig: bool) -> None:
    """The worker's initializer: lower priority, and die with the service. Ctrl-C in the
    service's terminal reaches the whole process group: the worker leaves SIGINT to the
    service (which then ends it) instead of printing a KeyboardInterrupt traceback of its
    own from the pool's wait (issue 23)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _lower_priority()
    _die_with(parent, pdeathsig)


def stats() -> dict[str, int]:
    """What this process has made (``builds``, ``rendered``) and keeps (``records``,
    ``outputs``): run in the worker (``executor().submit(stats)``), what the worker did."""
    return {"builds": builds, "rendered": rendered, "records": len(_records),
            "outputs": len(_outputs)}


# -- in the service ----------------------------------------------------------------------------

_lock = threading.Lock()
_executor: ProcessPoolExecutor | None = None


def executor() -> ProcessPoolExecutor:
    """The one worker process (started on first use, spawned: never a fork of a process
    with threads; at a lower priority than the service, WORKER_NICE)."""
    global _executor
    with _lock:
        if _executor is None:
            # The process is spawned by the thread that first submits work: the service's
            # loop (main) thread, where PR_SET_PDEATHSIG follows the process's life.
            main = threading.current_thread() is threading.main_thread()
            _executor = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_worker, initargs=(os.getpid(), main))
        return _executor


def reset_executor(broken: ProcessPoolExecutor) -> None:
    """After the worker died (BrokenProcessPool): the next call starts a new one."""
    global _executor
    with _lock:
        if _executor is broken:
            _executor = None
    broken.shutdown(wait=False, cancel_futures=True)


@atexit.register
def _shutdown() -> None:
    if _executor is not None:
        _executor.shutdown(wait=False, cancel_futures=True)


__all__ += ["BrokenProcessPool", "stats"]


def shutdown() -> None:
    """End the worker, if there is one, and wait for it (it ends with the service's process
    otherwise: a service in a test's thread, stopped, leaves none behind)."""
    global _executor
    with _lock:
        pool, _executor = _executor, None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)
