"""The MQTT section of ``make bench`` (issue 13): a real Mosquitto, a real ``shotclock
serve`` publishing to it, and for the hall a real ``shotclock hall`` mirroring it.

- **Fan-out through the broker**: one table, N = 1, 100, 1000 lean MQTT subscribers (raw
  MQTT 3.1.1 over asyncio, QoS 1 with PUBACKs, in this process). A referee WebSocket sends
  pause/resume; the figure is command sent -> the LAST subscriber got its event (one
  monotonic clock), beside the WebSocket fan-out of the main benchmark (1 table x N
  clients, same definition).
- **Hall mirror lag**: 10 and 50 tables on one table service, driven by referee
  WebSockets; one WebSocket observer per table on the table service and one on the hall
  service. Lag = when the hall's observer got an event - when the table's observer got it.

Run alone: ``python bench/bench_mqtt.py [--quick]``; ``bench/bench.py`` runs it after its
own scenarios (``--no-mqtt`` skips it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import websockets

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from observer import Observer  # noqa: E402

from harness.broker import Broker  # noqa: E402
from harness.figures import summary  # noqa: E402
from harness.server import ONE_ADDRESS_LOAD, ServerProcess  # noqa: E402

__all__ = ["run_mqtt", "print_mqtt"]


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n % 128, n // 128
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _utf8(text: str) -> bytes:
    data = text.encode()
    return len(data).to_bytes(2, "big") + data


class Subscriber(asyncio.Protocol):
    """A lean MQTT 3.1.1 subscriber (a thousand share one core): CONNECT, SUBSCRIBE at
    QoS 1, then each PUBLISH parsed just enough for the event's seq, PUBACKed."""

    def __init__(self, client_id: str, topic: str, on_event: Any, qos: int = 1) -> None:
        self.client_id = client_id
        self.topic = topic
        self.qos = qos
        self.on_event = on_event
        self.buffer = b""
        loop = asyncio.get_running_loop()
        self.subscribed: asyncio.Future[None] = loop.create_future()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        body = _utf8("MQTT") + bytes([4, 0x02, 0, 0]) + _utf8(self.client_id)  # keepalive 0
        transport.write(b"\x10" + _varint(len(body)) + body)

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        buffer = self.buffer + data
        pos, size = 0, len(buffer)
        while size - pos >= 2:
            kind = buffer[pos]
            length, shift, i = 0, 0, pos + 1
            while True:
                if i >= size:
                    self.buffer = buffer[pos:]
                    return
                byte = buffer[i]
                length |= (byte & 0x7F) << shift
                shift += 7
                i += 1
                if not byte & 0x80:
                    break
            if size - i < length:
                break
            start, pos = i, i + length
            packet = kind >> 4
            if packet == 2 and self.transport is not None:  # CONNACK
                body = b"\x00\x01" + _utf8(self.topic) + bytes([self.qos])
                self.transport.write(b"\x82" + _varint(len(body)) + body)
            elif packet == 9 and not self.subscribed.done():  # SUBACK
                self.subscribed.set_result(None)
            elif packet == 3:  # PUBLISH
                qos = (kind >> 1) & 3
                topic_len = int.from_bytes(buffer[start:start + 2], "big")
                payload_at = start + 2 + topic_len
                if qos and self.transport is not None:
                    self.transport.write(b"\x40\x02" + buffer[payload_at:payload_at + 2])
                    payload_at += 2
                j = buffer.find(b'"seq":', payload_at, pos) + 6
                k = buffer.find(b",", j, pos)
                self.on_event(int(buffer[j:k]), now)
        self.buffer = buffer[pos:]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.subscribed.done():
            self.subscribed.set_exception(exc or ConnectionError("closed"))


class Referee:
    """A referee WebSocket on one table: commands with acks, the phase kept from them."""

    def __init__(self, server: ServerProcess, table: str) -> None:
        self.server = server
        self.table = table
        self.phase = "ready"
        self.remaining_ms: int | None = None
        self.ws: Any = None
        self.acks: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.ids = 0
        self.reader: asyncio.Task[None] | None = None
        self.got: dict[int, float] = {}  # event seq -> when this WebSocket received it

    async def open(self) -> None:
        self.ws = await websockets.connect(f"{self.server.ws_url}/ws/tables/{self.table}",
                                           origin=self.server.origin,
                                           max_queue=None, ping_interval=None)
        self.phase = json.loads(await self.ws.recv())["state"]["phase"]
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for text in self.ws:
                message = json.loads(text)
                if message["type"] in ("ack", "error"):
                    future = self.acks.pop(message.get("id"), None)
                    if future is not None and not future.done():
                        future.set_result(message)
                elif "state" in message:
                    self.got.setdefault(message.get("seq", 0), time.perf_counter())
                    self.phase = message["state"]["phase"]
                    self.remaining_ms = message["state"].get("remaining_ms")

    async def command(self, name: str) -> tuple[float, dict[str, Any]]:
        self.ids += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.acks[self.ids] = future
        sent = time.perf_counter()
        await self.ws.send(json.dumps({"type": "command", "command": name, "id": self.ids}))
        return sent, await future

    async def close(self) -> None:
        if self.reader is not None:
            self.reader.cancel()
        if self.ws is not None:
            await self.ws.close()


async def fanout(broker: Broker, workdir: Path, counts: list[int], seconds: float,
                 ) -> list[dict[str, Any]]:
    server = ServerProcess(workdir / "fanout.db", env={
        "SHOTCLOCK_MQTT_URL": broker.url("bench"), **ONE_ADDRESS_LOAD,
        "SHOTCLOCK_REFEREE_TOKEN": "", "SHOTCLOCK_DEFAULT_TABLE": "f"}).start(timeout=60)
    rows = []
    try:
        referee = Referee(server, "f")
        await referee.open()
        await referee.command("start")
        for n in counts:
            rows.append(await _fanout_once(broker, referee, n, seconds))
        # An audience may subscribe at QoS 0 (no PUBACK per message per subscriber; the
        # retained state covers a miss): the largest count once more that way.
        rows.append(await _fanout_once(broker, referee, max(counts), seconds, qos=0))
        await referee.close()
    finally:
        server.stop()
    return rows


async def _fanout_once(broker: Broker, referee: Referee, n: int, seconds: float,
                       qos: int = 1) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    received: dict[int, list[float]] = {}

    def on_event(seq: int, now: float) -> None:
        entry = received.get(seq)
        if entry is None:
            received[seq] = [1, now]
        else:
            entry[0] += 1
            entry[1] = now

    transports = []
    gate = asyncio.Semaphore(64)

    async def subscribe(i: int) -> None:
        async with gate:
            transport, protocol = await loop.create_connection(
                lambda: Subscriber(f"bench-{n}-{qos}-{i}", "shotclock/v1/bench/tables/f/events",
                                   on_event, qos), "127.0.0.1", broker.port)
            await protocol.subscribed
            transports.append(transport)

    await asyncio.gather(*(subscribe(i) for i in range(n)))
    sends: list[tuple[float, int]] = []
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        name = "resume" if referee.phase == "paused" else "pause"
        sent, ack = await referee.command(name)
        if ack["type"] == "ack":
            sends.append((sent, ack["state"]["seq"]))
        await asyncio.sleep(random.uniform(0.03, 0.08))
    await asyncio.sleep(0.5)
    latencies = [(received[seq][1] - sent) * 1000.0 for sent, seq in sends
                 if seq in received and received[seq][0] >= n]
    # The same commands' events on the referee's own WebSocket: the direct path,
    # measured in the same run under the same load.
    direct = [(referee.got[seq] - sent) * 1000.0 for sent, seq in sends if seq in referee.got]
    row = {"subscribers": n, "qos": qos, "commands": len(sends),
           "incomplete": len(sends) - len(latencies),
           "cmd_to_last_subscriber_ms": summary(latencies),
           "cmd_to_referee_websocket_ms": summary(direct)}
    print(f"  mqtt fan-out 1 table x {n:>4} subscribers (QoS {qos}): command -> last p50 "
          f"{_f(summary(latencies)['p50'])} p99 {_f(summary(latencies)['p99'])} ms; the "
          f"referee's own WebSocket p50 {_f(summary(direct)['p50'])} p99 "
          f"{_f(summary(direct)['p99'])} ms ({len(sends)} commands)", flush=True)
    for transport in transports:
        transport.close()
    return row


async def hall_lag(broker: Broker, workdir: Path, counts: list[int], seconds: float,
                   ) -> list[dict[str, Any]]:
    tables = ServerProcess(workdir / "tables.db", env={
        "SHOTCLOCK_MQTT_URL": broker.url("bench"), **ONE_ADDRESS_LOAD,
        "SHOTCLOCK_REFEREE_TOKEN": "", "SHOTCLOCK_DEFAULT_TABLE": ""}).start(timeout=60)
    hall = ServerProcess(workdir / "hall.db", subcommand="hall", env={
        "SHOTCLOCK_MQTT_URL": broker.url("bench"), **ONE_ADDRESS_LOAD,
        "SHOTCLOCK_REFEREE_TOKEN": ""}).start(timeout=60)
    rows = []
    loop = asyncio.get_running_loop()
    try:
        ids = [f"h{i}" for i in range(max(counts))]
        async with httpx.AsyncClient(base_url=tables.url, timeout=30) as http:
            for table_id in ids:
                (await http.post("/api/tables", json={
                    "id": table_id, "players": ["A", "B"], "profile": {
                        "shot_ms": random.randrange(2000, 3001, 100), "floor_ms": 1000,
                        "full_rounds": 1000, "extension_ms": 1000,
                        "warnings_ms": [1000, 500]}})).raise_for_status()
        async with httpx.AsyncClient(base_url=hall.url, timeout=30) as http:
            deadline = time.monotonic() + 60
            while len((await http.get("/api/tables")).json()) < len(ids):
                assert time.monotonic() < deadline, "the hall did not see every table"
                await asyncio.sleep(0.2)
        at_table: dict[tuple[str, int], float] = {}
        at_hall: dict[tuple[str, int], float] = {}
        transports = []
        for table_id in ids:
            for server, seen in ((tables, at_table), (hall, at_hall)):
                def on_event(seq: int, now: float, key: str = table_id,
                             seen: dict[tuple[str, int], float] = seen) -> None:
                    seen.setdefault((key, seq), now)

                transport, observer = await loop.create_connection(
                    lambda on_event=on_event, t=table_id: Observer(f"/ws/tables/{t}", on_event),
                    "127.0.0.1", server.port)
                await observer.opened
                transports.append(transport)
        referees = {t: Referee(tables, t) for t in ids}
        for referee in referees.values():
            await referee.open()
        for n in counts:
            at_table.clear()
            at_hall.clear()
            stop = asyncio.Event()
            drivers = [asyncio.ensure_future(_drive(referees[t], stop)) for t in ids[:n]]
            started = time.perf_counter()
            await asyncio.sleep(seconds)
            stop.set()
            await asyncio.gather(*drivers, return_exceptions=True)
            elapsed = time.perf_counter() - started
            await asyncio.sleep(1.0)
            lags = [(at_hall[key] - t) * 1000.0 for key, t in at_table.items() if key in at_hall]
            rows.append({"tables": n, "events": len(at_table),
                         "events_per_s": len(at_table) / elapsed,
                         "not_mirrored": len(at_table) - len(lags),
                         "lag_ms": summary(lags)})
            print(f"  hall mirror lag at {n:>2} tables ({len(at_table) / elapsed:.0f} events/s):"
                  f" p50 {_f(rows[-1]['lag_ms']['p50'])} p99 {_f(rows[-1]['lag_ms']['p99'])} "
                  f"max {_f(rows[-1]['lag_ms']['max'])} ms", flush=True)
        for referee in referees.values():
            await referee.close()
        for transport in transports:
            transport.close()
    finally:
        hall.stop()
        tables.stop()
    return rows


async def _drive(referee: Referee, stop: asyncio.Event) -> None:
    """A plausible referee: start, then a shot in time, a pause, or time running out."""
    rng = random.Random(hash(referee.table))
    await asyncio.sleep(rng.uniform(0, 1.0))
    while not stop.is_set():
        phase = referee.phase
        if phase in ("ready", "expired"):
            name = "start"
        elif phase == "frame_over":
            name = "new_frame"
        elif phase == "paused":
            name = "resume"
        else:
            roll = rng.random()
            if roll < 0.3:
                await asyncio.sleep((referee.remaining_ms or 3000) / 1000 + 0.2)
                continue
            name = "pause" if roll < 0.45 else "shot"
        await referee.command(name)
        await asyncio.sleep(rng.uniform(0.2, 1.2))


def _f(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}"


async def run_mqtt(quick: bool = False, seconds: float = 10.0,
                   workdir: Path | None = None) -> dict[str, Any]:
    workdir = workdir or Path(tempfile.mkdtemp(prefix="shotclock-bench-mqtt-"))
    broker = Broker(workdir).start()
    try:
        print("mqtt (a real Mosquitto; the table service publishes, QoS 1)", flush=True)
        counts = [1, 100] if quick else [1, 100, 1000]
        duration = 1.5 if quick else seconds
        result = {"fanout": await fanout(broker, workdir, counts, duration),
                  "hall": await hall_lag(broker, workdir, [10] if quick else [10, 50],
                                         duration)}
    finally:
        broker.stop()
    return result


def print_mqtt(mqtt: dict[str, Any], scenarios: list[dict[str, Any]]) -> None:
    ws = {r["clients"]: r for r in scenarios if r["tables"] == 1}
    print()
    print("command -> last client of one table (ms): WebSocket (above) vs the MQTT broker")
    print(f"{'clients':>8} {'ws p50':>8} {'ws p99':>8} {'mqtt p50':>9} {'mqtt p99':>9} "
          f"{'qos':>4} {'referee ws p50':>15}")
    for row in mqtt["fanout"]:
        n = row["subscribers"]
        w = ws.get(n, {}).get("cmd_to_last_client_ms", {})
        m = row["cmd_to_last_subscriber_ms"]
        print(f"{n:>8} {_f(w.get('p50')):>8} {_f(w.get('p99')):>8} {_f(m['p50']):>9} "
              f"{_f(m['p99']):>9} {row.get('qos', 1):>4} "
              f"{_f(row['cmd_to_referee_websocket_ms']['p50']):>15}")
    print("hall mirror lag (table service's WebSocket -> hall service's WebSocket, ms)")
    for row in mqtt["hall"]:
        lag = row["lag_ms"]
        print(f"  {row['tables']:>3} tables, {row['events_per_s']:.0f} events/s: p50 "
              f"{_f(lag['p50'])} p99 {_f(lag['p99'])} max {_f(lag['max'])} "
              f"({row['not_mirrored']} not mirrored)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "mqtt.json")
    args = parser.parse_args()
    result = asyncio.run(run_mqtt(args.quick, args.seconds))
    print_mqtt(result, [])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("SHOTCLOCK_DISPLAY", "none")
    raise SystemExit(main())
