"""harness/suite.py, the runner behind `make test`: the serial run's session is favoured."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import suite


def test_a_run_in_a_session_of_its_own_gets_the_autogroup_nice() -> None:
    if os.geteuid() != 0 or not Path("/proc/self/autogroup").exists():
        pytest.skip("needs root and a kernel with autogroups (as on CI)")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                             start_new_session=True)
    mine = Path("/proc/self/autogroup").read_text()
    try:
        suite.favour_session(child.pid, -5)
        assert Path(f"/proc/{child.pid}/autogroup").read_text().split()[-1] == "-5"
        assert Path("/proc/self/autogroup").read_text() == mine  # only the child's session
    finally:
        child.kill()
        child.wait()


def test_a_service_whose_chosen_port_was_taken_meanwhile_gets_another(tmp_path: Path) -> None:
    """harness.server: free_port()'s port taken before the service binds it (clean-clone run
    50): a first start tries another; a port the test named is not changed."""
    import socket

    from harness.server import ServerProcess

    server = ServerProcess(tmp_path / "s.db")
    taken = server.port
    with socket.socket() as thief:
        thief.bind(("127.0.0.1", taken))
        thief.listen()
        server.start()
        try:
            assert server.port != taken
            server.get("/api/health")  # answers (200) on its new port
        finally:
            server.stop()
        named = ServerProcess(tmp_path / "n.db", port=taken)
        with pytest.raises(RuntimeError, match="address already in use"):
            named.start()
