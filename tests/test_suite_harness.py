"""The harness behind the tests: a service's port chosen anew when it was taken meanwhile."""

from __future__ import annotations

from pathlib import Path

import pytest


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


def test_a_service_in_a_thread_whose_chosen_port_was_taken_gets_another(tmp_path: Path) -> None:
    """harness.thread_server: the same, for a service in a thread; stopped, it lets go of its
    store, so that another start serves the same one."""
    import socket

    from harness.thread_server import ThreadServer

    server = ThreadServer(tmp_path / "t.db")
    taken = server.port
    with socket.socket() as thief:
        thief.bind(("127.0.0.1", taken))
        thief.listen()
        server.start()
        try:
            assert server.port != taken and server.running
            assert server.post("/api/tables", {"id": "t", "players": ["A", "B"]})[0] == 201
        finally:
            server.stop()
        assert not server.running
        named = ThreadServer(tmp_path / "n.db", port=taken)
        with pytest.raises(RuntimeError, match="did not start"):
            named.start()
    again = ThreadServer(tmp_path / "t.db").start()
    try:
        assert again.get("/api/tables/t")["table"] == "t"
    finally:
        again.stop()
