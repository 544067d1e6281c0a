"""SIGKILL at random moments under load: nothing acknowledged or told to a client is lost.

Each round drives a few tables over HTTP and WebSocket (referee presses and the clock's own
warnings and expiries) with clients watching, kills the server with SIGKILL at a random
moment (no shutdown hook runs, as in a crash; SQLite's WAL with synchronous=FULL makes the
power-cut case the same as far as committed transactions go), restarts it on the same file
and checks the store against everything anyone was told.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from tests.faults.conftest import all_events, create_table, decode, start_process

pytestmark = pytest.mark.e2e

TABLES = ["c1", "c2", "c3"]
ROUNDS = 4


async def watch(url: str, seen: dict[int, dict[str, Any]]) -> None:
    with contextlib.suppress(websockets.ConnectionClosed, OSError):
        async with websockets.connect(url, ping_interval=None) as ws:
            async for text in ws:
                message = decode(text)
                if message["type"] != "snapshot" and "seq" in message:
                    seen[message["seq"]] = message


async def press(http: httpx.AsyncClient, table: str, rng: random.Random,
                acked: dict[str, int]) -> None:
    """A referee pressing buttons: every 200 reply's seq must survive the crash."""
    with contextlib.suppress(httpx.HTTPError):
        while True:
            name = rng.choice(["start", "start", "shot", "pause", "resume", "extension", "turn",
                               "new_frame"])
            body = {"command": name, **({"reason": "test"} if name == "new_frame" else {})}
            response = await http.post(f"/api/tables/{table}/commands", json=body)
            if response.status_code == 200:
                acked[table] = max(acked.get(table, 0), response.json()["seq"])
            else:
                assert response.status_code == 409, response.text
            await asyncio.sleep(rng.uniform(0.0, 0.05))  # a referee's pace (load, not a wait)


async def ws_press(url: str, rng: random.Random, acked: dict[str, int], table: str,
                   origin: str) -> None:
    with contextlib.suppress(websockets.ConnectionClosed, OSError):
        async with websockets.connect(url, ping_interval=None, origin=origin) as ws:
            decode(await ws.recv())
            while True:
                await ws.send(json.dumps({"command": rng.choice(["start", "pause", "resume"])}))
                while True:
                    message = decode(await ws.recv())
                    if message["type"] == "ack":
                        acked[table] = max(acked.get(table, 0), message["state"]["seq"])
                        break
                    if message["type"] == "error":
                        break
                await asyncio.sleep(rng.uniform(0.0, 0.05))  # a referee's pace (load)


async def test_sigkill_under_load_loses_nothing_acknowledged(tmp_path: Path) -> None:
    rng = random.Random(2024)
    server = start_process(tmp_path)
    try:
        for table in TABLES:
            create_table(server, table)
        seen: dict[str, dict[int, dict[str, Any]]] = {t: {} for t in TABLES}
        acked: dict[str, int] = {}
        for round_ in range(ROUNDS):
            async with httpx.AsyncClient(base_url=server.url, timeout=5) as http:
                tasks = []
                for table in TABLES:
                    since = max(seen[table], default=0)
                    url = f"{server.ws_url}/ws/tables/{table}"
                    tasks.append(asyncio.ensure_future(watch(f"{url}?since={since}",
                                                             seen[table])))
                    tasks.append(asyncio.ensure_future(press(http, table, rng, acked)))
                tasks.append(asyncio.ensure_future(ws_press(f"{server.ws_url}/ws/tables/c1",
                                                            rng, acked, "c1", server.origin)))
                # Real time under test: load for a random while, then the kill lands wherever
                # the commands and fsyncs are.
                await asyncio.sleep(rng.uniform(0.8, 2.0))
                server.kill()  # mid-flight: commands and fsyncs in progress
                # Every client ends on its own once it has read what reached it (the
                # watchers drain their sockets, the presses get their last answers).
                await asyncio.wait(tasks, timeout=15)
                for task in tasks:
                    task.cancel()
                results = await asyncio.gather(*tasks, return_exceptions=True)
                for result in results:
                    if isinstance(result, AssertionError):
                        raise result
            server.start()
            for table in TABLES:
                stored = all_events(server, table)
                seqs = [e["seq"] for e in stored]
                assert seqs == list(range(1, len(seqs) + 1)), f"gap in {table}: {seqs}"
                by_seq = {e["seq"]: e for e in stored}
                # Everything a client was told, and everything acknowledged, is in the store.
                missing = sorted(set(seen[table]) - set(by_seq))
                assert not missing, f"round {round_}: {table} lost told events {missing}"
                assert acked.get(table, 0) <= seqs[-1], (table, acked, seqs[-1])
                for seq, message in seen[table].items():
                    # As stored: the event without the state only live events carry.
                    assert {k: v for k, v in message.items() if k != "state"} == by_seq[seq]
                    assert "state" not in by_seq[seq]
                state = server.get(f"/api/tables/{table}")
                assert state["seq"] == seqs[-1]
                # A running clock comes back paused (or expired, if its time had run out
                # while the service was still alive): never running after a restart.
                assert state["phase"] != "running", state
                last_running = next((e for e in reversed(stored)
                                     if e["type"] in ("clock.started", "clock.resumed")), None)
                if stored[-1]["type"] == "clock.paused" and \
                        stored[-1]["data"].get("reason") == "restart":
                    assert last_running is not None
            assert any(seen.values()), "no client saw anything: the load did not run"
        assert sum(len(v) for v in seen.values()) > 20
    finally:
        server.stop()
