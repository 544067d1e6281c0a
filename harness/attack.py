"""A hostile device on the hall's network, and a canary that measures what it does to the clock.

Shared by ``tests/faults/test_lan_attacks.py`` (each attack 3-5 s, gross failures only) and
``bench/bench.py --attacks`` (10-20 s each, the figures in bench/README.md).

The canary is a table whose shots expire every 0.5-1 s: a referee (HTTP, with the token,
from 127.0.0.1) starts each shot as soon as the clock is ready and lets it run out. Its
lateness is the server's own ``clock.expired.data.late_ms`` (now - deadline when the core
produced the expiry). Beside it, ``/api/health`` is probed every 200 ms and the server's
memory is sampled. The attackers connect from other loopback addresses (127.0.0.2 and up:
Linux routes all of 127/8 to the loopback), so per-address limits separate them from the
canary as they would separate a phone from the referee's console.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import websockets

from harness.figures import pct

__all__ = ["Canary", "Window", "fill_store", "stalled_websockets", "half_open", "read_flood",
           "socket_flood", "command_flood", "CANARY_PROFILE", "TOKEN"]

TOKEN = "lan-canary-token"
# A shot of 0.6-0.8 s: an expiry, a time foul and a turn every 0.7 s or so.
CANARY_PROFILE = {"shot_ms": 700, "floor_ms": 500, "full_rounds": 1000, "extension_ms": 500,
                  "warnings_ms": [300]}


async def fill_store(db: Path, table_id: str, events: int) -> int:
    """Before the server starts: a table with ``events`` events in the store, as a long day
    of time corrections would leave (each event as the store keeps it). One real correction
    is made through the core; the rest are copies of it with their own seq, written in
    big batches (making 100,000 through the core would take minutes)."""
    from clock_service.core.commands import SetTime
    from clock_service.service.runtime import Runtime
    from clock_service.service.storage import Store
    from clock_service.service.timesource import FakeTime

    fake = FakeTime(time.time() * 1000.0 - 3_600_000)
    runtime = Runtime(Store(db), fake)
    await runtime.start(default_table=None)
    await runtime.create_table(table_id, ["Ivanov", "Petrov"])
    await runtime.command(table_id, SetTime(remaining_ms=20_000))
    table = runtime.tables[table_id]
    template = (await runtime.events_since(table_id, table.seq - 1))[-1]
    core = table.clock.to_dict(history=False)
    loop = asyncio.get_running_loop()
    marker = -987_654_321  # stands for the seq in the encoded copy
    text = json.dumps({**template, "seq": marker}, separators=(",", ":"))
    batch: list[dict[str, Any]] = []
    texts: list[str] = []
    for seq in range(table.seq + 1, events + 1):
        batch.append({"seq": seq, "type": template["type"], "at": template["at"]})
        texts.append(text.replace(str(marker), str(seq)))
        if len(batch) == 5000 or seq == events:
            done: asyncio.Future[None] = loop.create_future()
            runtime.store.append(table_id, batch, core, seq, texts=texts,
                                 done=lambda e, f=done: loop.call_soon_threadsafe(
                                     f.set_result, None))
            await done
            batch, texts = [], []
    table.seq = table.published_seq = max(events, table.seq)
    await runtime.stop()
    return table.seq


# The reference: a bare asyncio loop in its own process, woken at the canary's deadlines
# ("<unix ms>" lines on stdin), printing how late each wake-up was ("<ms>" lines). When the
# machine itself stalls (a shared 2-core box), it is late too; an attack is not on it.
BARE_LOOP = r"""
import asyncio, sys, time

async def main():
    loop = asyncio.get_running_loop()
    offset_ms = time.time() * 1000.0 - time.monotonic() * 1000.0
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    def fire(target):
        print((loop.time() - target) * 1000.0, flush=True)

    while line := await reader.readline():
        target = (float(line) - offset_ms) / 1000.0
        if target > loop.time():
            loop.call_at(target, fire, target)

asyncio.run(main())
"""

# /api/health asked every 200 ms from a process of its own ("ok <ms>" or "fail <ms>" lines):
# the attackers run in the test's (or the bench's) own event loop, and a probe timed there
# would also time that loop's own backlog, not the server's answer.
PROBE = r"""
import sys, time, urllib.request

url = sys.argv[1]
while True:
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            response.read()
            ok = response.status == 200
    except Exception:
        ok = False
    print("ok" if ok else "fail", (time.perf_counter() - started) * 1000.0, flush=True)
    time.sleep(0.2)
"""


@dataclass
class Window:
    """What the canary saw over one stretch of time."""

    late_ms: list[float] = field(default_factory=list)
    bare_ms: list[float] = field(default_factory=list)  # the reference loop, same deadlines
    health_ms: list[float] = field(default_factory=list)
    health_failures: int = 0
    starts: int = 0  # shots the canary's referee started
    rss_mb: list[float] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def summary(self) -> dict[str, Any]:
        return {
            "seconds": round(time.monotonic() - self.started, 2),
            "starts": self.starts, "expiries": len(self.late_ms),
            "late_p50_ms": pct(self.late_ms, 50),
            "late_p99_ms": pct(self.late_ms, 99),
            "late_max_ms": max(self.late_ms) if self.late_ms else None,
            "bare_p99_ms": pct(self.bare_ms, 99),
            "bare_max_ms": max(self.bare_ms) if self.bare_ms else None,
            "health_max_ms": max(self.health_ms) if self.health_ms else None,
            "health_failures": self.health_failures,
            "rss_start_mb": self.rss_mb[0] if self.rss_mb else None,
            "rss_peak_mb": max(self.rss_mb) if self.rss_mb else None,
        }


class Canary:
    def __init__(self, base_url: str, pid: int, token: str = TOKEN,
                 table: str = "canary") -> None:
        self.base_url = base_url
        self.ws_url = base_url.replace("http://", "ws://", 1)
        self.process = psutil.Process(pid)
        self.token = token
        self.table = table
        self.window = Window()
        self.phase = "ready"
        self.wake = asyncio.Event()
        self.tasks: list[asyncio.Task[Any]] = []
        self.http: httpx.AsyncClient | None = None
        self.bare: asyncio.subprocess.Process | None = None
        self.probe: asyncio.subprocess.Process | None = None
        self.deadlines: set[float] = set()

    async def start(self) -> None:
        self.http = httpx.AsyncClient(base_url=self.base_url, timeout=10,
                                      headers={"authorization": f"Bearer {self.token}"})
        response = await self.http.post("/api/tables", json={
            "id": self.table, "players": ["Canary A", "Canary B"], "profile": CANARY_PROFILE})
        if response.status_code == 409:  # from an earlier run on the same server
            await self.http.post(f"/api/tables/{self.table}/commands",
                                 json={"command": "new_frame"})
        else:
            response.raise_for_status()
        ws = await websockets.connect(f"{self.ws_url}/ws/tables/{self.table}",
                                      ping_interval=None, max_queue=None)
        snapshot = json.loads(await ws.recv())
        self.phase = snapshot["state"]["phase"]
        self.wake.set()
        self.bare = await asyncio.create_subprocess_exec(
            sys.executable, "-c", BARE_LOOP, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE)
        self.probe = await asyncio.create_subprocess_exec(
            sys.executable, "-c", PROBE, f"{self.base_url}/api/health",
            stdout=asyncio.subprocess.PIPE)
        for helper in (self.bare, self.probe):
            with contextlib.suppress(OSError):  # at the server's priority (test_lan_attacks)
                os.setpriority(os.PRIO_PROCESS, helper.pid,
                               os.getpriority(os.PRIO_PROCESS, self.process.pid))
        for job in (self._watch(ws), self._referee(), self._probe(), self._memory(),
                    self._reference()):
            self.tasks.append(asyncio.ensure_future(job))

    def new_window(self) -> Window:
        """Start measuring afresh; return what was measured since the last call."""
        old, self.window = self.window, Window()
        return old

    async def stop(self) -> Window:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if self.http is not None:
            await self.http.aclose()
        for helper in (self.bare, self.probe):
            if helper is not None:
                with contextlib.suppress(ProcessLookupError):
                    helper.kill()
                await helper.wait()
        return self.window

    async def _watch(self, ws: Any) -> None:
        async with ws:
            async for text in ws:
                message = json.loads(text)
                if message.get("type") == "clock.expired":
                    self.window.late_ms.append(float(message["data"]["late_ms"]))
                deadline = (message.get("data") or {}).get("deadline")
                if deadline and deadline not in self.deadlines and self.bare is not None:
                    self.deadlines.add(deadline)
                    assert self.bare.stdin is not None
                    self.bare.stdin.write(f"{deadline!r}\n".encode())
                state = message.get("state")
                if state:
                    self.phase = state["phase"]
                    self.wake.set()

    async def _referee(self) -> None:
        assert self.http is not None
        while True:
            await self.wake.wait()
            self.wake.clear()
            # expired: the time foul passed the turn; the opponent plays on with start (10.4).
            command = {"ready": "start", "expired": "start",
                       "frame_over": "new_frame"}.get(self.phase)
            if command is None:
                continue
            with contextlib.suppress(httpx.HTTPError):
                response = await self.http.post(f"/api/tables/{self.table}/commands",
                                                json={"command": command})
                if response.status_code == 200:
                    self.phase = response.json()["phase"]
                    self.window.starts += command == "start"
                elif response.status_code == 409:  # the events will say what the phase is
                    pass
                else:
                    await asyncio.sleep(0.05)
                    self.wake.set()

    async def _reference(self) -> None:
        assert self.bare is not None and self.bare.stdout is not None
        while line := await self.bare.stdout.readline():
            self.window.bare_ms.append(float(line))

    async def _probe(self) -> None:
        assert self.probe is not None and self.probe.stdout is not None
        while line := await self.probe.stdout.readline():
            verdict, ms = line.split()
            if verdict == b"ok":
                self.window.health_ms.append(float(ms))
            else:
                self.window.health_failures += 1

    async def _memory(self) -> None:
        while True:
            with contextlib.suppress(psutil.Error):
                self.window.rss_mb.append(self.process.memory_info().rss / 2**20)
            await asyncio.sleep(0.2)


# -- attackers -----------------------------------------------------------------------------------

def _raw_socket(port: int, source: str, rcvbuf: int | None = None) -> socket.socket:
    sock = socket.socket()
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.bind((source, 0))
    sock.settimeout(5)
    sock.connect(("127.0.0.1", port))
    return sock


def stalled_websockets(port: int, path: str, count: int, source: str) -> list[socket.socket]:
    """WebSocket clients that complete the handshake request and then never read a byte
    (a tiny receive buffer, so the server's sends back up at once)."""
    out = []
    for _ in range(count):
        try:
            sock = _raw_socket(port, source, rcvbuf=4096)
            key = base64.b64encode(os.urandom(16)).decode()
            sock.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                          "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                          f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
                          ).encode())
        except OSError:
            continue
        out.append(sock)
    return out


def half_open(port: int, count: int, sources: list[str]) -> list[socket.socket]:
    """Slowloris: connections that send the start of a request and then nothing."""
    out = []
    for i in range(count):
        try:
            sock = _raw_socket(port, sources[i % len(sources)])
            sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        except OSError:
            continue
        out.append(sock)
    return out


def still_open(sockets: list[socket.socket]) -> int:
    """How many of these connections the server has not closed (a closed one reads EOF)."""
    count = 0
    for sock in sockets:
        try:
            sock.setblocking(False)
            data = sock.recv(1, socket.MSG_PEEK)
            count += 1 if data else 0  # data: an answer arrived; b"": closed
        except BlockingIOError:
            count += 1  # nothing to read: still open and silent
        except OSError:
            pass
    return count


def close_all(sockets: list[socket.socket]) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.close()


async def read_flood(base_url: str, paths: list[str], seconds: float, source: str,
                     loops: int = 4) -> dict[int, int]:
    """``loops`` clients each requesting the paths in turn as fast as answers come; returns
    the count of answers by status."""
    statuses: dict[int, int] = {}

    async def loop() -> None:
        transport = httpx.AsyncHTTPTransport(local_address=source)
        async with httpx.AsyncClient(base_url=base_url, timeout=30, transport=transport) as http:
            end = time.monotonic() + seconds
            i = 0
            while time.monotonic() < end:
                try:
                    response = await http.get(paths[i % len(paths)])
                    statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
                except httpx.HTTPError:
                    statuses[0] = statuses.get(0, 0) + 1
                i += 1

    await asyncio.gather(*(loop() for _ in range(loops)))
    return statuses


async def socket_flood(ws_url: str, path: str, count: int, seconds: float,
                       source: str) -> dict[str, int]:
    """Open ``count`` WebSockets from one address (reading), hold them; count the opened
    and the refused."""
    opened: list[Any] = []
    refused = 0
    for _ in range(count):
        try:
            ws = await websockets.connect(f"{ws_url}{path}", ping_interval=None,
                                          local_addr=(source, 0), open_timeout=5)
            opened.append(ws)
        except (websockets.InvalidStatus, OSError, TimeoutError):
            refused += 1

    async def drain(ws: Any) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for _ in ws:
                pass

    readers = [asyncio.ensure_future(drain(ws)) for ws in opened]
    await asyncio.sleep(seconds)
    for reader in readers:
        reader.cancel()
    for ws in opened:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(ws.close(), 1)
    return {"opened": len(opened), "refused": refused}


async def command_flood(ws_url: str, table: str, token: str, sockets: int, seconds: float,
                        source: str, origin: str) -> dict[str, Any]:
    """A token holder's device gone wrong: ``sockets`` WebSockets from one address sending
    time corrections as fast as they are answered. Returns how many were accepted, refused
    (429), and how many sockets the server closed (over the message rate)."""
    accepted = 0
    limited = 0
    closed = 0

    async def spam(ws: Any) -> None:
        """Ten commands in flight at a time: the attempts far outrun any rate limit,
        however slow the round trip."""
        nonlocal closed
        end = time.monotonic() + seconds
        try:
            await flood(ws, end)
        except websockets.ConnectionClosed:
            closed += 1

    async def flood(ws: Any, end: float) -> None:
        nonlocal accepted, limited
        i = 0
        while time.monotonic() < end:
            ids = set()
            for _ in range(10):
                i += 1
                ids.add(i)
                await ws.send(json.dumps({"command": "set_time", "remaining_ms": 1000 + i,
                                          "id": i}))
            while ids:
                message = json.loads(await ws.recv())
                if message.get("id") in ids and message["type"] in ("ack", "error"):
                    ids.discard(message["id"])
                    if message["type"] == "ack":
                        accepted += 1
                    elif message.get("status") == 429:
                        limited += 1

    conns = []
    refused = 0
    for _ in range(sockets):
        try:
            ws = await websockets.connect(
                f"{ws_url}/ws/tables/{table}", ping_interval=None,
                subprotocols=[f"bearer.{token}"],  # type: ignore[list-item]
                local_addr=(source, 0), origin=origin, max_queue=None)
        except websockets.InvalidStatus:  # over a handshake or socket limit
            refused += 1
            continue
        await ws.recv()
        conns.append(ws)
    started = time.monotonic()
    await asyncio.gather(*(spam(ws) for ws in conns), return_exceptions=True)
    elapsed = time.monotonic() - started
    for ws in conns:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(ws.close(), 1)
    return {"accepted": accepted, "limited": limited, "closed": closed,
            "sockets": len(conns), "refused_sockets": refused, "seconds": elapsed,
            "accepted_per_s": accepted / elapsed if elapsed else None}
