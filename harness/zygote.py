"""Start ``shotclock serve`` (and ``hall``) for the tests by forking a process that has
already imported the service, instead of starting Python afresh each time.

The suite starts about two hundred services. A fresh ``python -m clock_service serve``
spent about 1.0 s of CPU before it answered, three quarters of it importing FastAPI,
pydantic, uvicorn and the service's own modules; on the 2-core machine that runs
``make test`` that was a fifth of the suite's CPU. Here one process per pytest process (the
zygote: ``python -m harness.zygote FD``) imports them once and forks a child for each start;
the child sets its working directory, environment, output file and open-file limit as the
test asked, then runs ``clock_service.edges.cli.main`` as ``python -m`` would (``runpy``, as
``__main__``), and exits through the interpreter's exit handlers. It is the same service
code in its own process, on its own port, with its own SQLite file: a test can SIGKILL it,
restart it, fill its disk, and see its exit code, as with ``subprocess.Popen``
(:class:`Forked` is the part of Popen's interface the tests use).

What a fresh interpreter gives and a fork does not, the child does itself: default signal
handlers, a fresh ``random`` seed, the time zone of its environment. A start whose
environment changes how Python itself starts (any ``PYTHON*`` variable) is not forked:
``harness.server`` starts Python afresh for it, as it does everywhere when this is off
(``SHOTCLOCK_TEST_FORK=0``, or the benchmark, which measures the real start).

The zygote reaps its children and reports each one's exit code; it ends when the test
process closes its end (or dies). A child that outlives it is re-parented as any orphan is
(to the pytest process, which fails the run for a process left behind).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["Forked", "Zygote"]

ROOT = Path(__file__).resolve().parents[1]

# What `shotclock serve` and `hall` import before they answer (python -X importtime): the
# service's modules pull in FastAPI, pydantic, starlette and the rest. A module missing here
# is imported by the child, as without the zygote.
PRELOAD = (
    "clock_service.edges.cli.main", "clock_service.edges.api",
    "clock_service.edges.api.server",
    "clock_service.edges.broadcast.cli", "clock_service.edges.cli.config",
    "clock_service.edges.reports.cli", "clock_service.edges.tournament.cli",
    "clock_service.edges.cli.doctor", "clock_service.service.storage.cli",
    "clock_service.service.tls", "clock_service.edges.camera.config",
    "clock_service.edges.mqtt.hall",
    "clock_service.edges.mqtt.publisher", "paho.mqtt.client",
    "firmware_bridge.config", "firmware_bridge.monitor", "firmware_bridge.bridge",
    "firmware_bridge.terminal",
    "uvicorn", "uvicorn.loops.asyncio", "uvicorn.lifespan.on", "uvicorn.protocols.http.h11_impl",
    "uvicorn.protocols.websockets.websockets_impl",
    "cryptography.hazmat.primitives.serialization", "resource",
)


# --- the zygote (its own process) ----------------------------------------------------------

def _preload() -> None:
    import importlib
    import warnings

    with warnings.catch_warnings():  # a deprecation said at import: the child's to say
        warnings.simplefilter("ignore")
        for name in PRELOAD:
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
    # A fork copies only the thread that forks: a thread started by an import would be
    # missing in every child, with whatever lock it held still held.
    if threading.active_count() != 1:
        raise SystemExit(f"harness.zygote: an import started a thread: {threading.enumerate()}")


def _child(request: dict[str, Any]) -> int:
    """In the forked child: become the process the test asked for, run the CLI, and return
    its exit code (after the interpreter's exit handlers, as at a normal exit)."""
    import atexit
    import random
    import runpy
    import traceback

    code: Any = 0
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        time.tzset()
        random.seed()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        out = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        if request.get("nofile") is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_NOFILE, (request["nofile"],) * 2)
        if request.get("nice") is not None:
            with contextlib.suppress(PermissionError):  # less nice than the zygote: root only
                os.setpriority(os.PRIO_PROCESS, 0, request["nice"])
        sys.argv = [str(ROOT / "clock_service" / "edges" / "cli" / "main.py"), *request["argv"]]
        runpy.run_module("clock_service.edges.cli.main", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
    except BaseException:  # noqa: BLE001 - printed, as the interpreter would
        traceback.print_exc()
        code = 1
    try:
        # as Python's own exit does: join the threads that are not daemons, then atexit
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
    finally:
        if code is None:
            code = 0
        elif not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
    return int(code)


def _serve(fd: int) -> None:
    conn = socket.socket(fileno=fd)
    _preload()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the test process decides
    selector = selectors.DefaultSelector()
    selector.register(conn, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)

    def send(message: dict[str, Any]) -> None:
        conn.sendall(json.dumps(message).encode() + b"\n")

    def reap() -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            send({"exit": pid, "code": os.waitstatus_to_exitcode(status)})

    buffer = b""
    while True:
        for key, _ in selector.select():
            if key.fileobj == wake_r:
                os.read(wake_r, 4096)
                reap()
                continue
            data = conn.recv(65536)
            if not data:
                return  # the test process is done (or dead)
            buffer += data
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                request = json.loads(line)
                pid = os.fork()
                if pid == 0:
                    code = 1
                    try:
                        signal.set_wakeup_fd(-1)
                        for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
                            signal.signal(number, signal.SIG_DFL)
                        signal.signal(signal.SIGINT, signal.default_int_handler)
                        selector.close()
                        conn.close()
                        os.close(wake_r)
                        os.close(wake_w)
                        code = _child(request)
                    finally:
                        os._exit(code)
                send({"id": request["id"], "pid": pid})
        reap()


# --- the test process's side -----------------------------------------------------------------

class Zygote:
    """The test process's zygote, started on first use (:meth:`get`)."""

    _instance: Zygote | None = None
    _guard = threading.Lock()

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        self._sock = ours
        # its own words (an import that failed, say) go to a file of its own, not to the
        # output of whichever test happened to start it
        self.log = Path(tempfile.gettempdir()) / f"shotclock-zygote-{os.getpid()}.log"
        with open(self.log, "wb") as log:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "harness.zygote", str(theirs.fileno())],
                pass_fds=[theirs.fileno()], cwd=ROOT, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT)
        theirs.close()
        self._lock = threading.Lock()
        self._buffer = b""
        self._exits: dict[int, int] = {}
        self._replies: dict[int, int] = {}
        self._next = 0

    @classmethod
    def get(cls) -> Zygote:
        with cls._guard:
            if cls._instance is None or cls._instance._proc.poll() is not None:
                cls._instance = cls()
            return cls._instance

    @classmethod
    def close_all(cls) -> None:
        """End the zygote (its running children are not touched)."""
        with cls._guard:
            zygote, cls._instance = cls._instance, None
        if zygote is not None:
            zygote._sock.close()
            try:
                zygote._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                zygote._proc.kill()
                zygote._proc.wait()
            if zygote._proc.returncode == 0 and zygote.log.stat().st_size == 0:
                zygote.log.unlink()  # it had nothing to say

    def _read(self, timeout: float | None) -> None:
        """Take what the zygote said within ``timeout`` seconds (under ``_lock``)."""
        self._sock.settimeout(timeout)
        try:
            data = self._sock.recv(65536)
        except (TimeoutError, BlockingIOError):
            return
        if not data:
            raise RuntimeError(f"harness.zygote ended:\n{self.log.read_text()[-3000:]}")
        self._buffer += data
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            message = json.loads(line)
            if "exit" in message:
                self._exits[message["exit"]] = message["code"]
            else:
                self._replies[message["id"]] = message["pid"]

    def spawn(self, argv: list[str], *, env: dict[str, str], cwd: Path, log: Path,
              nofile: int | None = None, nice: int | None = None) -> Forked:
        with self._lock:
            self._next += 1
            ident = self._next
            self._sock.sendall(json.dumps({"id": ident, "argv": argv, "env": env,
                                           "cwd": str(cwd), "log": str(log),
                                           "nofile": nofile, "nice": nice}).encode() + b"\n")
            deadline = time.monotonic() + 30
            while ident not in self._replies:
                if time.monotonic() > deadline:
                    raise RuntimeError("harness.zygote did not fork within 30 s")
                self._read(1.0)
            return Forked(self, self._replies.pop(ident), argv)

    def exit_code(self, pid: int, timeout: float | None) -> int | None:
        """``pid``'s exit code, waiting up to ``timeout`` seconds (None: for good) for it
        (another thread may spawn meanwhile: the lock is held for a fifth of a second)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                if pid in self._exits:
                    return self._exits[pid]
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                self._read(0.2 if left is None else min(left, 0.2))
                if pid in self._exits:
                    return self._exits[pid]
                if left == 0.0:
                    return None


class Forked:
    """A forked service, as much of ``subprocess.Popen`` as the tests use."""

    stdin = stdout = stderr = None

    def __init__(self, zygote: Zygote, pid: int, argv: list[str]) -> None:
        self._zygote = zygote
        self.pid = pid
        self.args = ["python", "-m", "clock_service", *argv]
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._zygote.exit_code(self.pid, 0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._zygote.exit_code(self.pid, timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
