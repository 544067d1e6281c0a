"""The tests' forked services (harness/zygote.py) behave as started ones: their own
environment, working directory, output file and open-file limit, and the exit code a
``subprocess.Popen`` would report."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from harness.zygote import Zygote
from tests.server import ROOT, ServerProcess, free_port


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.server

    monkeypatch.setattr(harness.server, "FORK", True)


def test_a_forked_service_is_its_own_process_and_dies_as_one(forked: None, tmp_path: Path
                                                            ) -> None:
    server = ServerProcess(tmp_path / "z.db", env={"SHOTCLOCK_MAX_TABLES": "2"}, nofile=256,
                           nice=19)
    server.start()
    try:
        assert type(server.proc).__name__ == "Forked"
        pid = server.proc.pid
        assert pid != os.getpid()
        assert os.readlink(f"/proc/{pid}/cwd") == str(ROOT)
        assert int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16]) == 19
        limits = Path(f"/proc/{pid}/limits").read_text()
        assert any(line.startswith("Max open files") and line.split()[3:5] == ["256", "256"]
                   for line in limits.splitlines()), limits
        status, _ = server.post("/api/tables", {"id": "z", "players": ["A", "B"]})
        assert status == 201
        # its environment is the one asked for: two tables at most (table 1 and z)
        status, body = server.post("/api/tables", {"id": "y", "players": ["A", "B"]})
        assert status == 409 and "2" in str(body), (status, body)
        assert server.proc.poll() is None
    finally:
        server.kill()
    assert server.proc.returncode == -signal.SIGKILL
    # the same store again, in another forked child: the table is still there
    server.start()
    try:
        assert server.get("/api/tables/z")["table"] == "z"
    finally:
        server.stop()
    # uvicorn re-raises SIGTERM after its orderly stop, as in a service started afresh
    assert server.proc.returncode == -signal.SIGTERM


def test_a_refused_start_reports_its_exit_code_and_its_words(forked: None, tmp_path: Path
                                                             ) -> None:
    log = tmp_path / "bad.log"
    child = Zygote.get().spawn(["serve", "--port", "not-a-port"], env=dict(os.environ),
                               cwd=ROOT, log=log)
    assert child.wait(timeout=30) == 2
    assert "invalid int value: 'not-a-port'" in log.read_text()


def test_a_child_that_has_not_ended_is_not_reported_as_ended(forked: None, tmp_path: Path
                                                             ) -> None:
    child = Zygote.get().spawn(["serve", "--port", str(free_port()), "--db",
                                str(tmp_path / "w.db")], env=dict(os.environ),
                               cwd=ROOT, log=tmp_path / "w.log")
    try:
        assert child.poll() is None
        with pytest.raises(Exception, match="timed out"):
            child.wait(timeout=0.2)
    finally:
        child.terminate()
        assert child.wait(timeout=30) == -signal.SIGTERM
