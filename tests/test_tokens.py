"""Issue 20, finding 6: one token for everything. Against a real ``shotclock serve``:

- the director (SHOTCLOCK_REFEREE_TOKEN) issues a referee token for table 7: it commands
  table 7 only (403 ``forbidden_table`` on table 5), creates, archives and issues nothing
  (403 ``director_only``);
- the service records who sent a command from the credential: a referee's ``by: camera``
  is recorded as ``referee``, its source names the token;
- revoked: refused from the next request, on an open WebSocket too; a new token works at
  once (rotation without a restart); issued tokens survive a restart, digests only;
- reading stays open.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect

from harness.thread_server import ThreadServer
from tests.server import http

pytestmark = pytest.mark.e2e

DIRECTOR = "director-token-0123456789"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ThreadServer]:
    s = ThreadServer(tmp_path / "tokens.db", env={"SHOTCLOCK_REFEREE_TOKEN": DIRECTOR,
                                                   "SHOTCLOCK_DEFAULT_TABLE": ""}).start()
    try:
        for table in ("5", "7"):
            status, body = s.post("/api/tables", {"id": table, "players": ["A", "B"]},
                                  token=DIRECTOR)
            assert status == 201, body
        yield s
    finally:
        s.stop()


def issue(server: ThreadServer, **body: Any) -> dict[str, Any]:
    status, issued = server.post("/api/tokens", body, token=DIRECTOR)
    assert status == 201, issued
    assert len(issued["token"]) >= 32
    return dict(issued)


def code(result: tuple[int, Any]) -> tuple[int, str]:
    status, body = result
    return status, body["error"]["code"] if isinstance(body, dict) and "error" in body else ""


def test_a_referee_token_commands_its_own_table_only(server: ThreadServer) -> None:
    referee = issue(server, role="referee", tables=["7"], name="ref7")["token"]
    assert server.command("7", "start", token=referee)[0] == 200
    assert code(server.command("5", "start", token=referee)) == (403, "forbidden_table")
    assert server.get("/api/tables/5")["phase"] == "ready"
    assert code(server.post("/api/tables", {"id": "9", "players": ["A", "B"]},
                            token=referee)) == (403, "director_only")
    assert code(server.delete("/api/tables/7", token=referee)) == (403, "director_only")
    assert code(server.post("/api/tokens", {"role": "director", "name": "me"},
                            token=referee)) == (403, "director_only")
    assert code(server.command("7", "pause", token="not-a-token-at-all")) == (
        401, "unauthorized")
    status, me = http("GET", server.url + "/api/tokens/me", token=referee)
    assert status == 200 and me == {"id": me["id"], "role": "referee", "name": "ref7",
                                    "tables": ["7"]}
    # Reading needs nothing.
    assert server.get("/api/tables/5")["phase"] == "ready"
    assert server.get("/api/tables/7/events?since=0")
    # The director commands every table.
    assert server.command("5", "start", token=DIRECTOR)[0] == 200


def test_who_sent_a_command_comes_from_the_credential(server: ThreadServer) -> None:
    referee = issue(server, role="referee", tables=["7"], name="ref7")["token"]
    status, body = server.command("7", "start", token=referee, by="camera", source="camera")
    assert status == 200, body
    status, body = server.command("7", "undo", token=referee, by="the director")
    assert status == 200, body
    events = server.get("/api/tables/7/events?since=0")
    started = next(e for e in events if e["type"] == "clock.started")
    assert started["by"] == "referee" and started["source"] == "http:ref7", started
    undone = events[-1]
    assert undone["by"] == "ref7", undone  # a correction names who made it: the token's
    # The button bridge (the director's token) keeps saying where a press came from.
    status, body = server.command("5", "start", token=DIRECTOR, source="button")
    assert status == 200, body
    started = server.get("/api/tables/5/events?since=0")[-1]
    assert (started["by"], started["source"]) == ("referee", "button")


def test_revoked_at_once_rotated_without_a_restart_and_kept_across_one(
        server: ThreadServer) -> None:
    first = issue(server, role="referee", tables=["7"], name="ref7")
    with connect(f"{server.ws_url}/ws/tables/7?token={first['token']}", open_timeout=5) as ws:
        snapshot = json.loads(ws.recv(timeout=5))
        assert snapshot["referee"] is True
        status, revoked = http("DELETE", f"{server.url}/api/tokens/{first['id']}",
                               token=DIRECTOR)
        assert status == 200 and revoked["revoked_at"] is not None
        ws.send(json.dumps({"type": "command", "command": "start", "id": 1}))
        while (reply := json.loads(ws.recv(timeout=5)))["type"] not in ("ack", "error"):
            pass
        assert reply["type"] == "error" and reply["error"]["code"] == "unauthorized", reply
    assert code(server.command("7", "start", token=first["token"])) == (401, "unauthorized")
    second = issue(server, role="referee", tables=["7"], name="ref7 b")
    assert server.command("7", "start", token=second["token"])[0] == 200
    with connect(f"{server.ws_url}/ws/tables/5?token={second['token']}", open_timeout=5) as ws:
        assert json.loads(ws.recv(timeout=5))["referee"] is False  # not its table
    server.stop()
    server.start()
    assert code(server.command("7", "pause", token=first["token"])) == (401, "unauthorized")
    assert http("GET", server.url + "/api/tokens/me", token=second["token"])[0] == 200
    assert code(server.command("5", "pause", token=second["token"]))[0] == 403
    status, listed = http("GET", server.url + "/api/tokens", token=DIRECTOR)
    assert status == 200 and [t["name"] for t in listed] == ["ref7", "ref7 b"]
    assert all("token" not in t for t in listed)
    # The store keeps digests, never a token.
    with sqlite3.connect(server.db) as db:
        stored = " ".join(v for (v,) in db.execute("SELECT value FROM meta"))
    assert first["token"] not in stored and second["token"] not in stored
