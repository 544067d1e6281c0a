"""`make run` in a terminal (issue 23 point 13): the start-up lines give the statistics,
protocol and calibration addresses, and Ctrl-C (SIGINT to the terminal's whole process
group: the service and its reports worker) ends it without a traceback from the worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server import ROOT, free_port, http
from tests.waiting import until

pytestmark = pytest.mark.e2e


def test_ctrl_c_ends_the_service_and_its_worker_without_a_traceback(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        # Its own process group, as a terminal gives a foreground job: SIGINT goes to all.
        proc = subprocess.Popen(
            [sys.executable, "-m", "clock_service", "serve", "--host", "127.0.0.1",
             "--port", str(port), "--db", str(tmp_path / "clock.db")],
            cwd=ROOT, env={**os.environ, "SHOTCLOCK_DISPLAY": "none"}, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"

        def up() -> bool:
            try:
                return http("GET", base + "/api/health", timeout=1.0)[0] == 200
            except OSError:
                return False

        until(up, timeout=60.0, what="the service to come up")
        status, record = http("GET", base + "/api/matches/1.1")  # starts the worker
        assert status == 200 and record["id"] == "1.1"
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    text = log.read_text(errors="replace")
    for address in (f"{base}/stats?table=1", f"{base}/report?match=1.1", "/calibrate"):
        assert address in text, text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert "stopped (Ctrl-C)" in text and proc.returncode == 0, (proc.returncode, text)
