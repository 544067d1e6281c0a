"""End to end: ``shotclock serve``'s service, a real SQLite file, HTTP and WebSocket clients.

The service runs in a thread of the test process (harness/thread_server.py), but where the
process is what is tested: a SIGKILL and a restart. Short time profiles keep the real-time
waits to a few seconds.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from harness.bare_loop import BareLoop, gross_bound
from harness.server import Service
from harness.thread_server import ThreadServer
from tests.alive import alive_at
from tests.server import ServerProcess, http
from tests.waiting import until

pytestmark = pytest.mark.e2e

SHORT = {"shot_ms": 1500, "full_rounds": 1, "step_ms": 250, "floor_ms": 1000,
         "extension_ms": 1000, "warnings_ms": [1000, 500]}


def create(server: Service, table: str = "e2e", token: str | None = None,
           **body: Any) -> dict[str, Any]:
    status, state = server.post("/api/tables", {"id": table, "players": ["Ivanov", "Petrov"],
                                                "profile": SHORT, **body}, token)
    assert status == 201, state
    return state


def receive(ws: ClientConnection, timeout: float = 5.0) -> dict[str, Any]:
    return json.loads(ws.recv(timeout=timeout))


def receive_until(ws: ClientConnection, kind: str, timeout: float = 5.0) -> list[dict[str, Any]]:
    got = []
    end = time.monotonic() + timeout
    while True:
        message = receive(ws, max(0.01, end - time.monotonic()))
        got.append(message)
        if message["type"] == kind:
            return got


def ok(result: tuple[int, Any]) -> dict[str, Any]:
    status, body = result
    assert status == 200, body
    return body


@pytest.mark.serial
def test_a_frame_over_http_with_every_event_over_the_websocket(server: Service) -> None:
    create(server)
    with connect(f"{server.ws_url}/ws/tables/e2e") as ws:
        snapshot = receive(ws)
        assert snapshot["type"] == "snapshot" and snapshot["state"]["phase"] == "ready"
        first_seq = snapshot["seq"]

        ok(server.command("e2e", "start"))
        ok(server.command("e2e", "shot"))                    # played in time: same visit
        ok(server.command("e2e", "turn"))                    # visit 2, Petrov
        ok(server.command("e2e", "extension"))               # Petrov's extension (12.5)
        status, error = server.command("e2e", "extension")   # the second one is refused
        assert status == 409 and error["error"]["code"] == "extension_used"
        assert "(12.5)" in error["error"]["message"]
        with BareLoop() as bare:  # the machine's own wake-up error over the expiry
            sent = time.monotonic()
            ok(server.command("e2e", "start"))
            answered = time.monotonic()
            messages = receive_until(ws, "clock.expired", timeout=8)  # Petrov: 2.5 s
            received = time.monotonic()
        messages += [receive(ws), receive(ws)]               # time foul (12.4), turn
        status, error = server.command("e2e", "shot")        # too late (I17)
        assert status == 409 and error["error"]["rule"] == "I17"
        ok(server.command("e2e", "hand_back"))               # Ivanov takes it back (10.4)
        ok(server.command("e2e", "foul", reason="touched a ball"))  # second foul: 10.5
        messages += receive_until(ws, "frame.ended")

    kinds = [m["type"] for m in messages]
    # The first shot has 1.5 s: a loaded machine may answer its start late enough (0.5 s)
    # for the clock's own 1 s warning to come before the shot, which is right. The order of
    # the presses' events is checked without them; Petrov's shot, which runs out, has both.
    pressed = [k for k in kinds if k != "clock.warning"]
    assert pressed[:3] == ["clock.started", "clock.stopped", "turn"], kinds
    last_start = len(kinds) - 1 - kinds[::-1].index("clock.started")
    assert kinds[last_start:kinds.index("clock.expired")].count("clock.warning") == 2, kinds
    expired = messages[kinds.index("clock.expired")]
    assert expired["data"]["player"] == 1
    # Prompt, by the core's own measure: a gross bound (the precision is the benchmark's,
    # bench/README.md). Under 150 ms, or twice a bare loop's worst wake-up (its own
    # process, the same moments) + 50 ms when the machine was slower: a bare loop in
    # another process does not feel every stall of this one (a clean clone: 109 ms late
    # where the bare loop's worst was 53 ms). A clock that expired on a coarse tick, or
    # from the wrong instant, is later than that.
    late, at = expired["data"]["late_ms"], expired["at"]
    allowance = bare.max_late(at - late - 1000, at + 250)
    assert 0 <= late < gross_bound(allowance), (expired["data"], allowance)
    # 1.5 s + 1 s extension, measured by the client: never before 2.5 s after the request,
    # and seen within 1 s (+ the allowance) of 2.5 s after the answer
    assert received - sent >= 2.5 and received - answered < 3.5 + allowance / 1000, \
        (received - sent, received - answered, allowance)
    assert kinds[-4:] == ["turn", "clock.stopped", "foul", "frame.ended"] or kinds[-3:] == [
        "turn", "foul", "frame.ended"]
    ended = messages[-1]
    assert ended["data"]["winner"] == 0 and ended["data"]["reason"] == "technical_loss"
    # seq rises by one with no gaps, and matches the store's log
    seqs = [m["seq"] for m in messages]
    assert seqs == list(range(first_seq + 1, first_seq + 1 + len(seqs)))
    log = server.get("/api/tables/e2e/events?since=0")
    assert [e["seq"] for e in log] == list(range(1, seqs[-1] + 1))
    assert [e["type"] for e in log if e["seq"] > first_seq] == kinds
    state = server.get("/api/tables/e2e")
    assert (state["phase"], state["fouls"], state["frames_won"]) == ("frame_over", [0, 2], [1, 0])


def test_reconnect_with_since_receives_exactly_the_missed_events(server: Service) -> None:
    # A minute's shot: no warning or expiry of the clock's own among the presses' events,
    # however slowly the machine lets this test press (SHORT warns 0.5 s after a start).
    create(server, profile={**SHORT, "shot_ms": 60000, "floor_ms": 30000})
    with connect(f"{server.ws_url}/ws/tables/e2e") as ws:
        last_seen = receive(ws)["seq"]
        ok(server.command("e2e", "start"))
        last_seen = receive(ws)["seq"]
    # offline while these happen
    ok(server.command("e2e", "pause"))
    ok(server.command("e2e", "resume"))
    ok(server.command("e2e", "shot"))
    ok(server.command("e2e", "turn"))
    with connect(f"{server.ws_url}/ws/tables/e2e?since={last_seen}") as ws:
        snapshot = receive(ws)
        assert snapshot["type"] == "snapshot"
        replay = [receive(ws) for _ in range(snapshot["seq"] - last_seen)]
        assert [m["type"] for m in replay] == ["clock.paused", "clock.resumed",
                                               "clock.stopped", "turn"]
        assert [m["seq"] for m in replay] == list(range(last_seen + 1, snapshot["seq"] + 1))
        ok(server.command("e2e", "start"))  # then live, with no gap and no repeat
        live = receive(ws)
        assert (live["type"], live["seq"]) == ("clock.started", snapshot["seq"] + 1)


def test_sigkill_restart_keeps_state_and_history(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "crash.db").start()
    try:
        create(server, profile={**SHORT, "shot_ms": 60000, "floor_ms": 30000})
        ok(server.command("e2e", "turn"))
        ok(server.command("e2e", "extension"))
        ok(server.command("e2e", "start"))
        before = server.get("/api/tables/e2e")
        log_before = server.get("/api/tables/e2e/events?since=0")
        started_at = log_before[-1]["at"]
        # At least one heartbeat (every 500 ms) while running, then the kill.
        until(lambda: (alive_at(server.db) or 0) > started_at, 10, 0.02, "a heartbeat")
        server.kill()
        last_alive = alive_at(server.db)
        assert last_alive is not None
        time.sleep(1.0)  # real time under test: the downtime must not count against the player
        server.start()
        after = server.get("/api/tables/e2e")
        log_after = server.get("/api/tables/e2e/events?since=0")
    finally:
        server.stop()
    assert log_after[: len(log_before)] == log_before  # history intact
    assert [e["seq"] for e in log_after] == list(range(1, len(log_after) + 1))
    assert log_after[-1]["type"] == "clock.paused" and log_after[-1]["data"]["reason"] == "restart"
    assert after["phase"] == "paused"
    # remaining = what it had when last known alive: at its last heartbeat (12.4)
    assert log_before[-1]["type"] == "clock.started"
    assert abs(after["remaining_ms"] - math.ceil(before["deadline"] - last_alive)) <= 1
    for key in ("player", "visit", "round", "extensions_left", "fouls", "frame", "players"):
        assert after[key] == before[key], key
    assert after["seq"] == log_after[-1]["seq"]


def test_bad_input_gets_clear_errors_and_changes_nothing(server: Service) -> None:
    create(server)
    before = server.get("/api/tables/e2e")
    cases = [
        ({"command": "fly"}, 422, "unknown_command"),
        ({"cmd": "start"}, 422, "missing_field"),
        ({"command": "foul"}, 422, "missing_field"),
        ({"command": "set_time", "remaining_ms": "ten"}, 422, "invalid_field"),
        ({"command": "shot"}, 409, "not_running"),
        ({"command": "resume"}, 409, "not_paused"),
        ({"command": "hand_back"}, 409, "no_foul_pending"),
    ]
    for body, status, code in cases:
        got_status, got = server.post("/api/tables/e2e/commands", body)
        assert (got_status, got["error"]["code"]) == (status, code), (body, got)
        assert got["error"]["message"]
    status, got = server.post("/api/tables/nope/commands", {"command": "start"})
    assert (status, got["error"]["code"]) == (404, "unknown_table")
    status, got = http("POST", server.url + "/api/tables/e2e/commands", None)
    assert (status, got["error"]["code"]) == (400, "invalid_json")  # no body: not JSON
    for body, code in [
        ({"id": "x", "players": ["A"]}, "invalid_request"),
        ({"id": "bad id!", "players": ["A", "B"]}, "invalid_request"),
        ({"id": "p", "players": ["A", "B"], "profile": {"shot_ms": -1}}, "invalid_profile"),
        ({"id": "p", "players": ["A", "B"], "profile": {"floor_ms": 50000}}, "invalid_profile"),
        ({"id": "e2e", "players": ["A", "B"]}, "table_exists"),
    ]:
        status, got = server.post("/api/tables", body)
        assert status in (409, 422) and got["error"]["code"] == code, (body, got)
    after = server.get("/api/tables/e2e")
    assert {k: v for k, v in after.items() if k != "server_time"} == {
        k: v for k, v in before.items() if k != "server_time"}
    assert [t["table"] for t in server.get("/api/tables")] == ["1", "e2e"]


def test_referee_token_guards_commands_not_reading(tmp_path: Path) -> None:
    server = ThreadServer(tmp_path / "auth.db", env={"SHOTCLOCK_REFEREE_TOKEN": "s3cret"}).start()
    try:
        status, got = server.command("1", "start")
        assert status == 401 and got["error"]["code"] == "unauthorized"
        status, _ = server.command("1", "start", token="wrong")
        assert status == 401
        assert server.get("/api/tables/1")["phase"] == "ready"  # reading needs no token
        ok(server.command("1", "start", token="s3cret"))
        # WebSocket: read-only without a token; commands refused
        with connect(f"{server.ws_url}/ws/tables/1") as ws:
            assert receive(ws)["referee"] is False
            ws.send(json.dumps({"type": "command", "id": 1, "command": "pause"}))
            reply = receive(ws)
            assert reply["type"] == "error" and reply["error"]["code"] == "unauthorized"
        # ... and allowed with the token as a subprotocol (browsers cannot set headers)
        with connect(f"{server.ws_url}/ws/tables/1", subprotocols=["bearer.s3cret"]) as ws:
            assert receive(ws)["referee"] is True
            ws.send(json.dumps({"type": "command", "id": 2, "command": "pause"}))
            messages = receive_until(ws, "ack")
            assert messages[0]["type"] == "clock.paused" and messages[-1]["id"] == 2
        with pytest.raises(InvalidStatus), connect(
                f"{server.ws_url}/ws/tables/1", subprotocols=["bearer.nope"]):
            pass
        assert server.get("/api/tables/1")["phase"] == "paused"
    finally:
        server.stop()


def test_websocket_ping_and_errors_keep_the_connection_usable(server: Service) -> None:
    with connect(f"{server.ws_url}/ws/tables/1", origin=server.origin) as ws:
        receive(ws)
        ws.send("not json")
        assert receive(ws)["error"]["code"] == "invalid_json"
        ws.send(json.dumps({"type": "command", "id": "a", "command": "shot"}))
        reply = receive(ws)
        assert (reply["status"], reply["error"]["code"]) == (409, "not_running")
        ws.send(json.dumps({"type": "ping", "id": 9, "client_time": 1.5}))
        pong = receive(ws)
        assert pong["type"] == "pong" and pong["client_time"] == 1.5
        assert abs(pong["server_time"] - time.time() * 1000) < 2000
        ws.send(json.dumps({"type": "command", "id": "b", "command": "start"}))
        assert [m["type"] for m in receive_until(ws, "ack")] == ["clock.started", "ack"]
    with connect(f"{server.ws_url}/ws/tables/none") as ws:
        assert receive(ws)["error"]["code"] == "unknown_table"


def test_shotclock_follow_prints_every_event_as_json_lines(server: Service) -> None:
    import subprocess
    import sys

    ok(server.command("1", "start"))
    ok(server.command("1", "pause"))
    proc = subprocess.Popen([sys.executable, "-m", "clock_service", "follow", "1",
                             "--server", server.url, "--since", "2"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [json.loads(proc.stdout.readline()) for _ in range(2)]
    finally:
        proc.terminate()
        proc.wait(timeout=5)
    assert [(e["seq"], e["type"]) for e in lines] == [(3, "clock.started"), (4, "clock.paused")]
