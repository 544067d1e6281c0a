"""A real ``shotclock serve`` process on a free loopback port, for the tests where the
process is what is tested: start it, kill it with SIGKILL, start it again on the same
SQLite file and port, send it signals, fill its disk, limit its open files. Where it is
not, a test serves the same service in a thread of its own process
(:mod:`harness.thread_server`); both are driven through :class:`Service`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.process import Child

__all__ = ["CAMERA_NICE", "ServerProcess", "Service", "free_port", "http", "ONE_ADDRESS_LOAD"]

# The per-address limits off (clock_service/service/limits.py), for a benchmark or test that drives
# many clients and tables from one address (the limits have their own tests).
ONE_ADDRESS_LOAD = {
    "SHOTCLOCK_COMMAND_RATE": "0", "SHOTCLOCK_READ_RATE": "0", "SHOTCLOCK_MESSAGE_RATE": "0",
    "SHOTCLOCK_HANDSHAKE_RATE": "0", "SHOTCLOCK_MAX_SOCKETS_PER_ADDRESS": "0",
    "SHOTCLOCK_MAX_CONNECTIONS_PER_ADDRESS": "0", "SHOTCLOCK_MAX_CONNECTIONS": "8000",
    "SHOTCLOCK_MAX_TABLES": "2000",
}

ROOT = Path(__file__).resolve().parents[1]

# A service with a camera runs at nice -10 (root only; make test's serial tests run at 0,
# the others at 15: harness/suite.py): its camera thread runs 10 steps nicer than the
# service (budget.CAMERA_NICE), at 0, so it competes with the other tests' work as on a Pi
# it has the CPU the service leaves (the camera end-to-end test, whose service ran at 0,
# looked at 219 of 339 frames beside the first run at 15: its camera thread was at 10). At 10
# it got too few frames a second to decide while three workers kept the machine busy (the
# calibrate page stayed "not sure" in a clean-clone run at load 25); at 19 it got nothing
# (the page never saw its first frame, when make test ran such tests at nice 10).
CAMERA_NICE = -10


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http(method: str, url: str, body: Any = None, token: str | None = None,
         timeout: float = 10.0) -> tuple[int, Any]:
    """A tiny blocking JSON client: (status, decoded body)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("content-type", "application/json")
    if token:
        request.add_header("authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            return exc.code, json.loads(raw)
        except ValueError:
            return exc.code, raw.decode(errors="replace")


# Set by tests/conftest.py under `pytest --fast` (make test-fast): starting one skips the test.
FAST = False
# Set by tests/conftest.py (unless SHOTCLOCK_TEST_FORK=0): a service is forked from a process
# that has imported it already (harness/zygote.py), not started as a fresh Python.
FORK = False


def _python_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith("PYTHON")}


class Service:
    """A service on a loopback ``port``, as its clients reach it: its URLs and a blocking
    JSON client."""

    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    @property
    def origin(self) -> Any:
        """The service's own origin, as its pages send it (a WebSocket client without
        Origin and without the token is read-only)."""
        from websockets.typing import Origin

        return Origin(self.url)

    def answers(self) -> bool:
        """/api/health answers 200 (a service on HTTPS asks with its own CA: tests/test_tls.py);
        OSError when nothing answers yet."""
        return http("GET", self.url + "/api/health", timeout=1.0)[0] == 200

    def get(self, path: str) -> Any:
        status, body = http("GET", self.url + path)
        assert status == 200, (status, body)
        return body

    def post(self, path: str, body: Any, token: str | None = None) -> tuple[int, Any]:
        return http("POST", self.url + path, body, token=token)

    def delete(self, path: str, token: str | None = None) -> tuple[int, Any]:
        return http("DELETE", self.url + path, token=token)

    def command(self, table: str, command: str, token: str | None = None,
                **fields: Any) -> tuple[int, Any]:
        return self.post(f"/api/tables/{table}/commands", {"command": command, **fields}, token)


class ServerProcess(Child, Service):
    def __init__(self, db: Path, *, port: int | None = None, env: dict[str, str] | None = None,
                 log: Path | None = None, subcommand: str = "serve",
                 log_level: str = "warning", nofile: int | None = None,
                 args: list[str] | None = None, nice: int | None = None,
                 fork: bool = True) -> None:
        self.subcommand = subcommand  # "serve", or "hall" (the MQTT mirror)
        self.log_level = log_level
        self.db = Path(db)
        self.port = port or free_port()
        self.port_chosen = port is None  # by free_port(): another may be chosen (start)
        self.env = {**os.environ, "SHOTCLOCK_DISPLAY": "none", **(env or {})}
        self.log = log or self.db.with_suffix(".log")
        self.proc: Any = None  # subprocess.Popen, or harness.zygote.Forked
        self.nofile = nofile  # a hard limit on the server's open files (a Pi's 1024, say)
        self.args = args or []
        # the service's niceness, whatever the test's (its camera thread runs 10 steps nicer
        # than it); making it less nice than the test needs root, and is skipped without
        self.nice = nice
        self.fork = fork  # False: a fresh Python even where FORK is on (harness/zygote.py)

    def start(self, timeout: float = 60.0) -> ServerProcess:
        """Start the service and wait for its /api/health. The port free_port() chose can be
        taken before the service binds it (another process's outgoing connection got it as
        its own port: clean-clone run 50, a bind to 0.0.0.0); at a first start the service
        then gets another one, up to twice. A restart keeps its port: pages and clients
        were told that one."""
        if FAST:
            import pytest

            pytest.skip("starts a server or a broker: not in make test-fast (pytest --fast)")
        other_ports = 2 if self.proc is None and self.port_chosen else 0
        while True:
            mark = self.log.stat().st_size if self.log.exists() else 0
            self._spawn()
            if self._wait_up(timeout):
                return self
            said = self.log.read_bytes()[mark:].decode(errors="replace")
            if not (other_ports and "address already in use" in said):
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n" + said[-3000:])
            other_ports -= 1
            self.port = free_port()

    def _spawn(self) -> None:
        out = open(self.log, "ab")  # noqa: SIM115 - owned by the process
        nofile = self.nofile

        nice = self.nice

        def limit_files() -> None:
            if nofile is not None:
                import resource
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
            if nice is not None:
                with contextlib.suppress(PermissionError):
                    os.setpriority(os.PRIO_PROCESS, 0, nice)

        argv = [self.subcommand, "--host", "127.0.0.1", "--port", str(self.port),
                "--db", str(self.db), "--log-level", self.log_level, *self.args]
        forked = FORK and self.fork
        if forked and _python_env(self.env) == _python_env(dict(os.environ)):
            from harness.zygote import Zygote

            out.close()
            self.proc = Zygote.get().spawn(argv, env=self.env, cwd=ROOT, log=self.log,
                                           nofile=nofile, nice=nice)
        else:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "clock_service", *argv],
                cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                preexec_fn=limit_files if nofile is not None or nice is not None else None,
            )
            out.close()

    def _wait_up(self, timeout: float) -> bool:
        """True once /api/health answers; False if the process ended first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                if self.answers():
                    return True
            except OSError:
                pass
            time.sleep(0.05)
        self.kill()  # never leave a server that did not come up running behind the test
        raise RuntimeError("server did not come up:\n" + self.log.read_text()[-3000:])

    @contextlib.contextmanager
    def silent(self) -> Iterator[None]:
        """The service stopped (SIGSTOP) while the block runs: no answer, no close, no
        message, its connections left open, as a hung machine or a pulled cable leaves them;
        it goes on (SIGCONT) after."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(self.proc.pid, signal.SIGCONT)

    def disk_full(self, full: bool = True) -> None:
        """Make every write of the server past the first byte of a file fail (EFBIG), as a
        full disk fails them, or undo it: the soft RLIMIT_FSIZE of the running process
        (Python ignores SIGXFSZ, so the write just fails; SQLite reports a disk I/O error).
        The server's log writes fail too while it lasts."""
        import psutil

        assert self.proc is not None
        process = psutil.Process(self.proc.pid)
        _, hard = process.rlimit(psutil.RLIMIT_FSIZE)
        process.rlimit(psutil.RLIMIT_FSIZE, (1 if full else hard, hard))
