"""clock_service.edges.client: following a table's events across disconnects, and sending commands.

Against the real server (SIGKILL and restart in the middle), and against a scripted
WebSocket server for the cases a real server makes rare (a duplicate, a gap, close 4001).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from clock_service.edges.client import (
    CommandRefused,
    UnknownTableError,
    follow,
    send_command,
    ws_url_of,
)
from harness.server import Service
from tests.server import ServerProcess, http
from tests.waiting import until_async

pytestmark = pytest.mark.e2e


async def _collect(base: str, table: str, got: list[dict[str, Any]], until: asyncio.Future[int],
                   since: int = 0, snapshots: list[dict[str, Any]] | None = None) -> None:
    async for event in follow(base, table, since=since, snapshots=True, backoff_s=0.05,
                              max_backoff_s=0.3):
        if event["type"] == "snapshot":  # one per (re)connection
            if snapshots is not None:
                snapshots.append(event)
            continue
        got.append(event)
        if until.done() and event["seq"] >= until.result():
            return


async def _wait_for(got: list[dict[str, Any]], seq: int, timeout: float = 15.0) -> None:
    await until_async(lambda: got and got[-1]["seq"] >= seq, timeout, 0.02, f"event {seq}")


async def _send(base: str, table: str, command: str, **fields: Any) -> dict[str, Any]:
    return await asyncio.to_thread(send_command, base, table, command, **fields)


def test_ws_url_of() -> None:
    assert ws_url_of("http://h:8000/", "t 1", 7) == "ws://h:8000/ws/tables/t%201?since=7"
    assert ws_url_of("https://h/x", "1", 0) == "wss://h/x/ws/tables/1?since=0"


async def test_follower_gets_every_event_once_in_order_across_a_sigkill(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "shotclock.db").start()
    try:
        base = server.url
        status, _ = http("POST", base + "/api/tables",
                         {"id": "c", "players": ["Ivanov", "Petrov"], "race_to": 2})
        assert status == 201
        got: list[dict[str, Any]] = []
        snapshots: list[dict[str, Any]] = []
        until: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        follower = asyncio.create_task(_collect(base, "c", got, until, snapshots=snapshots))
        for _ in range(3):
            await _send(base, "c", "turn")
        state = await _send(base, "c", "start")
        await _wait_for(got, state["seq"])

        server.kill()  # mid-match, the clock running: no shutdown hook runs
        # The kill closed the follower's socket: it retries (every 0.05-0.3 s) meanwhile.
        server.start()  # same port, same SQLite file: the running clock comes back paused
        await _send(base, "c", "shot")
        await _send(base, "c", "result", whites_potted=2)
        state = await _send(base, "c", "foul", reason="touched a ball")
        assert state["fouls"] == [0, 1] and state["whites"] == [0, 2]

        log = server.get("/api/tables/c/events?since=0&limit=10000")
        until.set_result(log[-1]["seq"])
        # The last event may already be in: wait for it rather than for one more event.
        await _wait_for(got, log[-1]["seq"], timeout=20)
        follower.cancel()
    finally:
        server.stop()
    seqs = [e["seq"] for e in got]
    assert seqs == list(range(1, log[-1]["seq"] + 1)), seqs
    assert len(snapshots) >= 2, snapshots  # it did connect again after the restart
    assert [(e["seq"], e["type"], e["data"]) for e in got] == [
        (e["seq"], e["type"], e["data"]) for e in log]
    kinds = [e["type"] for e in got]
    assert "clock.paused" in kinds  # the recovery after the restart (reason "restart")
    assert "shot.result" in kinds and kinds[-2:] == ["foul", "turn"]


async def test_follow_resumes_from_since(server: Service) -> None:
    http("POST", server.url + "/api/tables", {"id": "r", "players": ["A", "B"]})
    for _ in range(4):
        await _send(server.url, "r", "turn")
    got: list[dict[str, Any]] = []
    until: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    until.set_result(6)
    await asyncio.wait_for(_collect(server.url, "r", got, until, since=3), 10)
    assert [e["seq"] for e in got] == [4, 5, 6]


async def test_follow_an_unknown_table_raises(server: Service) -> None:
    with pytest.raises(UnknownTableError):
        async for _ in follow(server.url, "nope", backoff_s=0.01):
            pass


def test_send_command_raises_the_service_error(server: Service) -> None:
    state = send_command(server.url, "1", "start")
    assert state["phase"] == "running"
    with pytest.raises(CommandRefused) as info:
        send_command(server.url, "1", "result", whites_potted=1)
    assert (info.value.status, info.value.code) == (409, "clock_running")
    assert "phase running" in info.value.message and info.value.rule == "I15"
    send_command(server.url, "1", "shot")
    with pytest.raises(CommandRefused) as info:
        send_command(server.url, "1", "result", whites_potted=-2)
    assert (info.value.status, info.value.code) == (422, "bad_count")
    with pytest.raises(CommandRefused) as info:
        send_command(server.url, "nope", "start")
    assert info.value.status == 404


# -- a scripted server: duplicates, a gap, close 4001 -------------------------------------------
def _event(seq: int) -> str:
    return json.dumps({"type": "turn", "seq": seq, "table": "s", "at": 0, "data": {"n": seq}})


async def test_follow_drops_duplicates_refills_gaps_and_reconnects_after_4001() -> None:
    asked: list[str] = []

    async def script(ws: ServerConnection) -> None:
        assert ws.request is not None
        asked.append(ws.request.path)
        since = int(ws.request.path.split("since=")[1])
        await ws.send(json.dumps({"type": "snapshot", "seq": 5, "table": "s", "state": {}}))
        if len(asked) == 1:
            # 1, 2, 2 again, then 4 (3 is missing): the follower must not skip 3.
            for seq in (1, 2, 2, 4):
                await ws.send(_event(seq))
            await ws.wait_closed()
        elif len(asked) == 2:
            for seq in range(since + 1, 5):  # the replay; then cut off as too slow
                await ws.send(_event(seq))
            await ws.close(4001, "too slow; reconnect with ?since=4")
        else:
            for seq in range(since + 1, 7):
                await ws.send(_event(seq))
            await ws.wait_closed()

    async with serve(script, "127.0.0.1", 0) as ws_server:
        port = ws_server.sockets[0].getsockname()[1]
        seqs: list[int] = []
        async for event in follow(f"http://127.0.0.1:{port}", "s", backoff_s=0.01):
            seqs.append(event["seq"])
            if event["seq"] == 6:
                break
    assert seqs == [1, 2, 3, 4, 5, 6]
    assert [p.split("?")[1] for p in asked] == ["since=0", "since=2", "since=4"]
