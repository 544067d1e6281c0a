"""The reports worker process (clock_service/edges/reports/worker.py) ends with its service,
however the service ends: a SIGKILLed ``shotclock serve`` used to leave the worker, and
multiprocessing's resource tracker with it, running for good (issue 18)."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from tests.server import ServerProcess
from tests.waiting import until

pytestmark = pytest.mark.e2e


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except psutil.NoSuchProcess:
            pass
    return out


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_the_worker_and_its_resource_tracker_end_with_the_service(
        tmp_path: Path, how: str) -> None:
    server = ServerProcess(tmp_path / "clock.db").start()
    try:
        assert server.get("/api/matches/1.1")["id"] == "1.1"  # made by the worker
        assert server.proc is not None
        service = psutil.Process(server.proc.pid)
        children = service.children(recursive=True)
        lines = [" ".join(c.cmdline()) for c in children]
        assert any("spawn_main" in line for line in lines), lines  # the worker
        assert any("resource_tracker" in line for line in lines), lines
        if how == "SIGKILL":
            server.kill()  # no shutdown hook, no atexit: only the kernel and the worker know
        else:
            server.stop()
        until(lambda: not alive(children), timeout=15.0,
              what=f"the worker and tracker to end: {alive(children)}")
    finally:
        server.stop()
