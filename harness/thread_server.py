"""``shotclock serve``'s service (or ``hall``'s) in a thread of the test's own process, on a
free loopback port: for the tests where a process boundary is not what is tested.

It is the service ``serve`` runs, composed by the same code (``clock_service.edges.cli.main
.serve_app``: the store locked and checked, the runtime, the devices, the publisher, the
signer, the camera, the feeds, the tournament), served by the same uvicorn server with the
same configuration (connection caps, request timeouts, WebSocket protocol; ``hall``'s by
``cli.main.hall_app``), reached over real HTTP and WebSocket connections. What it does
not have is a process of its own: no
signals, no exit code, no SIGKILL, no open-file or file-size limit of its own. A test of
those starts a :class:`harness.server.ServerProcess`.

A start costs 0.06-0.08 s of the test process's CPU (a service forked from harness.zygote:
0.11-0.14 s, a fresh Python: 0.85 s); what it saves most is the process: nothing to reap,
kill or leave behind, one process to debug, and the service's parts (``runtime``) in
reach of the test.
:meth:`stop` is a clean stop (the lifespan's shutdown, the store closed and its lock let
go), after which :meth:`start` serves the same store again, on the same port.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.server import Service, free_port

__all__ = ["ThreadServer"]


class ThreadServer(Service):
    """A table service in a thread: ``env`` as ``shotclock serve`` would read it from its
    environment (the test process's own, with ``SHOTCLOCK_DISPLAY=none``, then ``env``)."""

    # The services serving now. The reports worker process (reports/worker.py) is one per
    # process, shared by them; it ends when the last of them stops, as it ends with the
    # service's process (a restarted service does not find the records it had made).
    _serving: set[ThreadServer] = set()

    def __init__(self, db: Path, *, port: int | None = None,
                 env: dict[str, str] | None = None, log_level: str = "warning",
                 subcommand: str = "serve") -> None:
        if subcommand not in ("serve", "hall"):
            raise ValueError(f"no such service: {subcommand}")
        self.subcommand = subcommand  # "serve", or "hall" (the MQTT mirror)
        self.db = Path(db)
        self.port = port or free_port()
        self.port_chosen = port is None  # by free_port(): a first start may choose another
        self._started = False
        shared = sorted(k for k, v in (env or {}).items()
                        if not k.startswith("SHOTCLOCK_") and os.environ.get(k) != v)
        if shared:  # read by libraries from os.environ (gpiozero's pin factory, say)
            raise ValueError(f"{shared}: a thread shares its process's environment; set "
                             "these in the test's own (monkeypatch.setenv), or start a "
                             "ServerProcess")
        self.env = {**os.environ, "SHOTCLOCK_DISPLAY": "none", **(env or {})}
        self.log_level = log_level
        self.serving: Any = None  # clock_service.edges.cli.main.Serving (serve), once started
        self.app: Any = None
        self._server: Any = None  # uvicorn.Server
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._failed: BaseException | None = None

    @property
    def runtime(self) -> Any:
        """The service's runtime (its tables, hub and store), for a test to look at: read
        it from the service's loop (``call``), not from the test's thread."""
        return self.app.state.served.runtime

    def start(self, timeout: float = 60.0) -> ThreadServer:
        """Compose the service, serve it in a thread, and return once /api/health answers.
        A first start on a port free_port() chose, taken meanwhile, gets another one."""
        import harness.server

        if harness.server.FAST:
            import pytest

            pytest.skip("starts a server: not in make test-fast (pytest --fast)")
        other_ports = 2 if not self._started and self.port_chosen else 0
        while True:
            store = self._compose()
            self._failed = None
            self._thread = threading.Thread(target=self._run, name=f"service-{self.port}",
                                            daemon=True)
            collector = gc.get_threshold()
            self._thread.start()
            if self._wait_up(timeout):
                # serve's server freezes what is loaded once it listens, and makes the
                # collector's passes rarer (cli.main._server): right for a service's
                # process, a leak in a test process that goes on to other tests.
                gc.unfreeze()
                gc.set_threshold(*collector)
                ThreadServer._serving.add(self)
                self._started = True
                return self
            store.close()  # it never served: its lifespan did not close it
            failed = self._failed
            if not (other_ports and isinstance(failed, SystemExit | OSError)):
                raise RuntimeError(f"the service did not start: {failed!r}") from failed
            other_ports -= 1
            self.port = free_port()

    def _compose(self) -> Any:
        """The service as its command composes it, and its uvicorn server; its store."""
        import dataclasses

        from clock_service.edges.api.server import uvicorn_config
        from clock_service.edges.cli.main import STORE_CHECK_BUDGET_S, hall_app, serve_app
        from clock_service.service.settings import Settings
        from clock_service.service.storage import Store

        settings = Settings.from_env(self.env, host="127.0.0.1", port=self.port,
                                     db=str(self.db))
        if self.subcommand == "hall":  # as ``hall`` makes its settings and its store
            settings = dataclasses.replace(settings, default_table=None, display="none")
            store = Store(settings.db, synchronous="NORMAL")
        else:
            store = Store(settings.db)
        store.lock()
        store.check(budget_s=STORE_CHECK_BUDGET_S)
        if self.subcommand == "hall":
            import uvicorn

            self.app = hall_app(settings, store)
            self._server = uvicorn.Server(uvicorn_config(
                self.app, settings, log_level=self.log_level, access_log=False))
        else:
            self.serving = serve_app(settings, store, self.env)
            self.app = self.serving.app
            self._server = self.serving.server(log_level=self.log_level, access_log=False)
        return store

    def _run(self) -> None:
        async def serve() -> None:
            self._loop = asyncio.get_running_loop()
            await self._server.serve()

        try:
            asyncio.run(serve())
        except BaseException as exc:  # noqa: BLE001 - the test's thread reports it
            self._failed = exc

    def _wait_up(self, timeout: float) -> bool:
        """True once the service answers; False if its thread ended first (uvicorn could
        not bind its port: it logs that and exits)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self._thread is not None
            if not self._thread.is_alive():
                self._failed = self._failed or SystemExit("uvicorn exited")
                return False
            if self._server.started:
                try:
                    if self.answers():
                        return True
                except OSError:
                    pass
            time.sleep(0.01)
        self.stop()
        raise RuntimeError(f"the service did not answer within {timeout:g} s")

    @property
    def running(self) -> bool:
        """Serving: started, not stopped, and its thread has not ended."""
        return self._thread is not None and self._thread.is_alive()

    def call(self, function: Any, *args: Any) -> Any:
        """``function(*args)`` run on the service's loop; its result (a coroutine function
        is awaited there)."""
        loop = self._loop
        assert loop is not None, "the service has not started"

        async def run() -> Any:
            result = function(*args)
            if asyncio.iscoroutine(result):
                result = await result
            return result

        return asyncio.run_coroutine_threadsafe(run(), loop).result(timeout=30)

    @contextlib.contextmanager
    def silent(self) -> Iterator[None]:
        """The service's loop held while the block runs: no answer, no close, no message,
        its connections left open (what ``ServerProcess.silent``'s SIGSTOP does to a
        process); it goes on after. Its sockets still accept at the kernel, as a stopped
        process's do."""
        loop = self._loop
        assert loop is not None, "the service has not started"
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            held.set()
            release.wait(timeout=120)

        loop.call_soon_threadsafe(hold)
        if not held.wait(timeout=30):
            release.set()  # when it does come round, it goes straight on
            raise RuntimeError("the service's loop did not come round within 30 s")
        try:
            yield
        finally:
            release.set()

    def stop(self) -> None:
        """A clean stop: uvicorn closes its connections, the lifespan stops every part and
        the runtime, and the store is closed."""
        if self._thread is None:
            return
        self._server.should_exit = True
        self._thread.join(timeout=30)
        if self._thread.is_alive():
            raise RuntimeError("the service did not stop within 30 s")
        self._thread = None
        ThreadServer._serving.discard(self)
        if not ThreadServer._serving:
            from clock_service.edges.reports import worker

            worker.shutdown()
        if self._failed is not None and not isinstance(self._failed, SystemExit):
            raise RuntimeError(f"the service failed: {self._failed!r}") from self._failed

    def __enter__(self) -> ThreadServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
