"""The harness behind the tests: a service's port chosen anew when it was taken meanwhile,
and a service in a thread letting go of its store when it stops."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from harness.server import ServerProcess
from harness.thread_server import ThreadServer


@pytest.mark.parametrize(("kind", "refusal"), [(ServerProcess, "address already in use"),
                                               (ThreadServer, "did not start")])
def test_a_service_whose_chosen_port_was_taken_meanwhile_gets_another(
        tmp_path: Path, kind: type[ServerProcess] | type[ThreadServer], refusal: str) -> None:
    """free_port()'s port taken before the service binds it (clean-clone run 50): a first
    start tries another; a port the test named is not changed."""
    server = kind(tmp_path / "s.db")
    taken = server.port
    with socket.socket() as thief:
        thief.bind(("127.0.0.1", taken))
        thief.listen()
        server.start()
        try:
            assert server.port != taken
            assert server.post("/api/tables", {"id": "t", "players": ["A", "B"]})[0] == 201
        finally:
            server.stop()
        named = kind(tmp_path / "n.db", port=taken)
        with pytest.raises(RuntimeError, match=refusal):
            named.start()


def test_a_service_in_a_thread_lets_go_of_its_store_when_it_stops(tmp_path: Path) -> None:
    server = ThreadServer(tmp_path / "t.db").start()
    try:
        assert server.running
        assert server.post("/api/tables", {"id": "t", "players": ["A", "B"]})[0] == 201
    finally:
        server.stop()
    assert not server.running
    again = ThreadServer(tmp_path / "t.db").start()  # the store's lock was let go
    try:
        assert again.get("/api/tables/t")["table"] == "t"
    finally:
        again.stop()
