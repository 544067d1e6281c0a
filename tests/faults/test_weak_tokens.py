"""Issue 20, finding 4: guessing the token. A weak token (the example file's ``CHANGE-ME``,
``1``) was accepted on a LAN address, and the WebSocket checked a token before its
limits, so guesses were as fast as the network. Now a LAN address refuses a weak token
(exit 78), and every path spends the client's rate before it looks at a token (MQTT:
tests/mqtt/test_hall_hostile.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from clock_service.edges.cli.main import EXIT_REFUSED
from tests.cli import Ran, shotclock
from tests.server import ServerProcess, free_port
from tests.waiting import until

pytestmark = pytest.mark.e2e

GOOD = "k3Q9-vT7x_Lm2pR8zW4n"


def serve_once(db: Path, token: str) -> Ran:
    """``shotclock serve`` on a LAN address, expected to refuse before it serves (run by
    this process: tests/cli.py)."""
    return shotclock("serve", "--host", "0.0.0.0", "--port", str(free_port()), "--db",
                     str(db), env={**os.environ, "SHOTCLOCK_DISPLAY": "none",
                                   "SHOTCLOCK_REFEREE_TOKEN": token})


@pytest.mark.parametrize("token", ["CHANGE-ME", "1", "change-me-please", "short-token-15c", "change-me-to-a-long-random-token",
                                   "abababababababababab"])
def test_a_weak_token_is_refused_on_a_lan_address(tmp_path: Path, token: str) -> None:
    refused = serve_once(tmp_path / "lan.db", token)
    assert refused.returncode == EXIT_REFUSED, refused.stderr[-2000:]
    assert "weak referee token" in refused.stderr
    if len(token) >= 12 and "change" not in token.lower():
        assert token not in refused.stderr  # the token itself is never printed


def test_a_good_token_serves_on_a_lan_address(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "ok.db", args=["--host", "0.0.0.0"],
                           env={"SHOTCLOCK_REFEREE_TOKEN": GOOD}).start()
    server.stop()


def test_websocket_token_guesses_spend_the_read_rate_first(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "ws.db", log_level="info", env={
        "SHOTCLOCK_REFEREE_TOKEN": GOOD, "SHOTCLOCK_READ_RATE": "1",
        "SHOTCLOCK_READ_BURST": "3"}).start()
    try:
        refused = 0
        for n in range(12):
            try:
                with connect(f"{server.ws_url}/ws/tables/1?token=guess-{n}", open_timeout=5):
                    pass
            except InvalidStatus:
                refused += 1
        assert refused == 12
        until(lambda: "too many reads" in server.log.read_text(), 10, 0.05,
              "the refusals logged")
        log = server.log.read_text()
        # The first few were checked (wrong token); the rest never reached the check.
        assert 1 <= log.count("wrong referee token") <= 4, log[-2000:]
        assert log.count("too many reads") >= 8
    finally:
        server.stop()
