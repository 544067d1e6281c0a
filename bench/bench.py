"""Benchmark of the shot clock service: expiry accuracy, latency at scale, memory, drift.

Not a test: it measures, prints a table and writes ``bench/results/bench.json``; it asserts
nothing about time. Run with ``make bench`` (a few minutes) or ``--quick`` (seconds).

Three processes, so the figures are honest on a small machine:

- the server: a real ``shotclock serve`` (uvicorn) on a loopback port and a fresh SQLite
  file, started like the end-to-end tests start it;
- the load: this process, one asyncio loop with the ``websockets`` client: one referee
  connection per driven table (sends the commands, sees every event) and the N observer
  clients spread over the tables;
- the reference: a bare asyncio loop in its own process, given the same deadlines as the
  server's clocks, recording how late its own ``loop.call_at`` wakes up. The server's
  ``clock.expired`` events carry ``late_ms`` (now - deadline when the core produced the
  expiry), so the two are compared in the same run, under the same machine noise.

Figures:

- expiry late p50/p99/max (server) beside the bare loop's, and the ratio of the p99s;
- command-to-last-client: from sending a command on the referee socket to the moment the
  LAST observer client of that table receives the command's last event (this process's
  monotonic clock for both ends);
- command ack round trip (includes the SQLite commit with fsync before the reply) and the
  server's own commit time (``/api/health``);
- events/s delivered to the observer clients; the server's RSS (psutil);
- drift: over a long frame (shots, pauses, extensions, expiries), the remaining time a
  client derives from the events (``deadline - now`` with its estimated clock offset)
  against the server's own remaining time read at the same instant.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import websockets

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from observer import Observer  # noqa: E402

from harness.figures import summary  # noqa: E402
from harness.server import ONE_ADDRESS_LOAD, ServerProcess  # noqa: E402

RESULTS = ROOT / "bench" / "results"

# The reference: a bare asyncio loop that wakes at the deadlines it is given on stdin
# ("<tag> <deadline unix ms>" lines) and prints its lateness per tag as JSON at EOF.
BARE_LOOP = r"""
import asyncio, json, sys, time

async def main():
    loop = asyncio.get_running_loop()
    offset_ms = time.time() * 1000.0 - time.monotonic() * 1000.0
    late = {}
    last = loop.time()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    def fire(tag, target):
        late.setdefault(tag, []).append((loop.time() - target) * 1000.0)

    while line := await reader.readline():
        tag, deadline = line.split()
        target = (float(deadline) - offset_ms) / 1000.0
        if target > loop.time():
            loop.call_at(target, fire, tag.decode(), target)
            last = max(last, target)
    await asyncio.sleep(max(0.0, last - loop.time()) + 0.05)
    print(json.dumps(late))

asyncio.run(main())
"""


@dataclass
class TableLoad:
    id: str
    shot_ms: int
    ws: Any = None
    phase: str = "ready"
    remaining_ms: int | None = None
    deadlines: set[float] = field(default_factory=set)
    acks: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)
    observers: int = 0  # observer clients subscribed in the current scenario


class Load:
    """The load generator: referee sockets that drive tables, observers that count."""

    def __init__(self, server: ServerProcess, bare: subprocess.Popen[bytes]) -> None:
        self.server = server
        self.bare = bare
        self.tag = "setup"
        self.tables: dict[str, TableLoad] = {}
        self.next_id = 0
        self.expiry_late: list[float] = []
        self.ack_ms: list[float] = []
        self.commands: list[tuple[str, int, float]] = []  # (table, last seq, sent at)
        # (table, seq) -> [observers that got it, when the last one did]
        self.received: dict[tuple[str, int], list[float]] = {}
        self.observer_messages = 0
        self.refused = 0
        self.tasks: set[asyncio.Task[Any]] = set()

    # -- referee side ------------------------------------------------------------------------
    async def open_referee(self, table: TableLoad) -> None:
        table.ws = await websockets.connect(f"{self.server.ws_url}/ws/tables/{table.id}",
                                            origin=self.server.origin,
                                            max_queue=None, ping_interval=None)
        snapshot = json.loads(await table.ws.recv())
        table.phase = snapshot["state"]["phase"]
        self._spawn(self._referee_reader(table))

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def _referee_reader(self, table: TableLoad) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for text in table.ws:
                message = json.loads(text)
                kind = message["type"]
                if kind in ("ack", "error"):
                    future = table.acks.pop(message.get("id"), None)
                    if future is not None and not future.done():
                        future.set_result(message)
                    continue
                state = message.get("state") or {}
                table.phase = state.get("phase", table.phase)
                table.remaining_ms = state.get("remaining_ms")
                data = message.get("data") or {}
                if kind == "clock.expired":
                    self.expiry_late.append(float(data["late_ms"]))
                deadline = data.get("deadline")
                if deadline is not None and deadline not in table.deadlines:
                    table.deadlines.add(deadline)
                    assert self.bare.stdin is not None
                    self.bare.stdin.write(f"{self.tag} {deadline!r}\n".encode())
                    self.bare.stdin.flush()

    async def command(self, table: TableLoad, name: str) -> dict[str, Any]:
        self.next_id += 1
        msg_id = self.next_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        table.acks[msg_id] = future
        sent = time.perf_counter()
        await table.ws.send(json.dumps({"type": "command", "command": name, "id": msg_id}))
        reply = await future
        if reply["type"] == "ack":
            self.ack_ms.append((time.perf_counter() - sent) * 1000.0)
            if table.observers:
                self.commands.append((table.id, reply["state"]["seq"], sent))
        else:
            self.refused += 1
        return reply

    async def drive(self, table: TableLoad, stop: asyncio.Event) -> None:
        """A plausible referee: start, then a shot in time, a pause, an extension, or time
        running out (expiries are what the accuracy figures need)."""
        rng = random.Random(hash(table.id))
        await asyncio.sleep(rng.uniform(0, 1.0))  # spread the deadlines
        while not stop.is_set():
            phase = table.phase
            if phase in ("ready", "expired"):
                name = "start"
            elif phase == "frame_over":
                name = "new_frame"
            elif phase == "paused":
                name = "resume"
            else:
                roll = rng.random()
                if roll < 0.4:  # let it run out
                    await asyncio.sleep((table.remaining_ms or table.shot_ms) / 1000 + 0.2)
                    continue
                name = "pause" if roll < 0.5 else "extension" if roll < 0.6 else "shot"
            await self.command(table, name)
            await asyncio.sleep(rng.uniform(0.2, 1.2) if name != "start"
                                else rng.uniform(0.3, 1.5))

    # -- observers -----------------------------------------------------------------------------
    async def observe(self, table: TableLoad, ready: asyncio.Semaphore) -> None:
        received = self.received
        table_id = table.id

        def on_event(seq: int, now: float) -> None:
            self.observer_messages += 1
            entry = received.get((table_id, seq))
            if entry is None:
                received[(table_id, seq)] = [1, now]
            else:
                entry[0] += 1
                entry[1] = now

        loop = asyncio.get_running_loop()
        async with ready:
            transport, observer = await loop.create_connection(
                lambda: Observer(f"/ws/tables/{table_id}", on_event), "127.0.0.1",
                self.server.port)
            await observer.opened
        table.observers += 1
        try:
            await observer.closed
        finally:
            transport.close()


async def create_tables(http: httpx.AsyncClient, load: Load, count: int) -> None:
    rng = random.Random(7)
    gate = asyncio.Semaphore(16)

    async def one(i: int) -> None:
        shot_ms = rng.randrange(2000, 3001, 100)
        table_id = f"b{i}"
        async with gate:
            response = await http.post("/api/tables", json={
                "id": table_id, "players": ["A", "B"], "profile": {
                    "shot_ms": shot_ms, "floor_ms": 1000, "full_rounds": 1000,
                    "extension_ms": 1000, "warnings_ms": [1000, 500]}})
            response.raise_for_status()
        load.tables[table_id] = TableLoad(table_id, shot_ms)

    await asyncio.gather(*(one(i) for i in range(len(load.tables), count)))


async def scenario(load: Load, http: httpx.AsyncClient, n_tables: int, n_clients: int,
                   seconds: float) -> dict[str, Any]:
    tables = [load.tables[f"b{i}"] for i in range(n_tables)]
    for table in tables:
        if table.ws is None:
            await load.open_referee(table)
        table.observers = 0
    load.tag = f"{n_tables}x{n_clients}"
    gate = asyncio.Semaphore(64)
    observers = [load._spawn(load.observe(tables[i % n_tables], gate)) for i in range(n_clients)]
    while sum(t.observers for t in tables) < n_clients:
        await asyncio.sleep(0.05)
    load.expiry_late, load.ack_ms, load.commands = [], [], []
    load.received.clear()
    load.observer_messages = 0
    await http.get("/api/health")
    proc = psutil.Process(load.server.proc.pid)  # type: ignore[union-attr]
    cpu_before = proc.cpu_times()
    stop = asyncio.Event()
    drivers = [asyncio.ensure_future(load.drive(t, stop)) for t in tables]
    started = time.perf_counter()
    await asyncio.sleep(seconds)
    stop.set()
    elapsed = time.perf_counter() - started
    messages = load.observer_messages
    await asyncio.sleep(0.3)  # let in-flight events reach the observers
    for driver in drivers:
        driver.cancel()
    await asyncio.gather(*drivers, return_exceptions=True)
    rss_mb = proc.memory_info().rss / 2**20
    cpu_after = proc.cpu_times()
    cpu = (cpu_after.user + cpu_after.system - cpu_before.user - cpu_before.system) / elapsed
    health = (await http.get("/api/health")).json()
    latencies, missing = [], 0
    subscribers = {t.id: t.observers for t in tables}
    for table_id, seq, sent in load.commands:
        entry = load.received.get((table_id, seq))
        if entry is None or entry[0] < subscribers[table_id]:
            missing += 1
            continue
        latencies.append((entry[1] - sent) * 1000.0)
    for task in observers:
        task.cancel()
    await asyncio.gather(*observers, return_exceptions=True)
    return {
        "tables": n_tables, "clients": n_clients, "seconds": round(elapsed, 2),
        "expiry_late_ms": summary(load.expiry_late),
        "cmd_to_last_client_ms": summary(latencies), "cmd_unmatched": missing,
        "ack_ms": summary(load.ack_ms), "refused": load.refused,
        "events_per_s": messages / elapsed, "server_rss_mb": rss_mb, "server_cpu": cpu,
        "store": health.get("components", {}).get("store"), "cut_off": health.get("cut_off"),
    }


async def drift(load: Load, http: httpx.AsyncClient, seconds: float) -> dict[str, Any]:
    """One long frame on its own table; a client keeps the deadline from the events and its
    clock offset from pings, and is compared against the server's state every 50 ms."""
    response = await http.post("/api/tables", json={
        "id": "drift", "players": ["A", "B"], "profile": {
            "shot_ms": 3000, "floor_ms": 1000, "full_rounds": 1000, "extension_ms": 1500,
            "extensions_per_frame": 1000, "warnings_ms": [1000]}})
    response.raise_for_status()
    table = TableLoad("drift", 3000)
    load.tables["drift"] = table
    await load.open_referee(table)
    watcher = await websockets.connect(f"{load.server.ws_url}/ws/tables/drift",
                                       max_queue=None, ping_interval=None)
    view: dict[str, Any] = json.loads(await watcher.recv())["state"]
    pongs: asyncio.Queue[tuple[float, float, float]] = asyncio.Queue()

    def unix_ms() -> float:
        return time.time() * 1000.0

    async def watch() -> None:
        async for text in watcher:
            message = json.loads(text)
            if message["type"] == "pong":
                pongs.put_nowait((message["client_time"], message["server_time"], unix_ms()))
            elif "state" in message:
                view.update(message["state"])

    async def ping() -> tuple[float, float]:
        """(offset estimate = server - client in ms, round trip)."""
        await watcher.send(json.dumps({"type": "ping", "client_time": unix_ms()}))
        sent, server, got = await pongs.get()
        return server - (sent + got) / 2.0, got - sent

    reader = asyncio.ensure_future(watch())
    samples = [await ping() for _ in range(20)]
    offset = min(samples, key=lambda s: s[1])[0]  # the tightest round trip wins (NTP)
    stop = asyncio.Event()
    driver = asyncio.ensure_future(load.drive(table, stop))
    errors: list[tuple[float, float]] = []  # (seconds into the frame, client - server ms)
    in_flight = 0  # samples taken while a new deadline was on its way to the client
    load.tag = "drift"
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        before = unix_ms()
        state = (await http.get("/api/tables/drift")).json()
        after = unix_ms()
        if state["phase"] == "running" and view.get("deadline") != state["deadline"]:
            in_flight += 1
        elif state["phase"] == "running":
            client_now = (before + after) / 2.0 + offset
            client_remaining = view["deadline"] - client_now
            errors.append((time.perf_counter() - started,
                           client_remaining - (state["deadline"] - state["server_time"])))
        await asyncio.sleep(0.05)
    stop.set()
    driver.cancel()
    await asyncio.gather(driver, return_exceptions=True)
    final = await ping()
    reader.cancel()
    await watcher.close()
    magnitudes = [abs(e) for _, e in errors]
    fifth = max(1, len(errors) // 5)
    first = [e for _, e in errors[:fifth]]
    last = [e for _, e in errors[-fifth:]]
    return {"seconds": seconds, "samples": len(errors), "in_flight": in_flight,
            "abs_error_ms": summary(magnitudes),
            "mean_first_fifth_ms": sum(first) / len(first) if first else None,
            "mean_last_fifth_ms": sum(last) / len(last) if last else None,
            "offset_ms": offset, "offset_change_ms": final[0] - offset,
            "events": (await http.get("/api/tables/drift")).json()["seq"]}


async def http_commands(http: httpx.AsyncClient, count: int) -> dict[str, Any]:
    """HTTP command round trips on an idle table: the reply waits for the fsync."""
    await http.post("/api/tables", json={"id": "http", "players": ["A", "B"]})
    times = []
    for i in range(count):
        name = "start" if i == 0 else ("pause" if i % 2 else "resume")
        started = time.perf_counter()
        response = await http.post("/api/tables/http/commands", json={"command": name})
        times.append((time.perf_counter() - started) * 1000.0)
        response.raise_for_status()
    return summary(times)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    table_counts = args.tables or ([1, 10] if args.quick else [1, 10, 100, 500])
    client_counts = args.clients or ([1, 10] if args.quick else [1, 100, 1000])
    seconds = 1.5 if args.quick else args.seconds
    workdir = Path(tempfile.mkdtemp(prefix="shotclock-bench-"))
    server = ServerProcess(workdir / "bench.db", env={
        **ONE_ADDRESS_LOAD, "SHOTCLOCK_REFEREE_TOKEN": "",
        "SHOTCLOCK_WS_QUEUE": "4096"}).start()
    spy = None
    if args.profile:
        # A .txt target gets py-spy's raw collapsed stacks (grep-able); anything else SVG.
        fmt = "raw" if str(args.profile).endswith(".txt") else "flamegraph"
        spy = subprocess.Popen([str(Path(sys.executable).with_name("py-spy")), "record",
                                "--format", fmt, "-o", str(args.profile),
                                "--pid", str(server.proc.pid), "-r", "100", "--nonblocking"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bare = subprocess.Popen([sys.executable, "-c", BARE_LOOP], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    load = Load(server, bare)
    results: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform()},
        "quick": args.quick, "scenarios": []}
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            await create_tables(http, load, max(table_counts))
            for n_tables in table_counts:
                for n_clients in client_counts:
                    row = await scenario(load, http, n_tables, n_clients, seconds)
                    results["scenarios"].append(row)
                    print_row(row, header=len(results["scenarios"]) == 1)
            results["drift"] = await drift(load, http, 3.0 if args.quick else args.drift_seconds)
            results["http_command_ms"] = await http_commands(http, 20 if args.quick else 200)
            results["server_rss_mb_end"] = psutil.Process(
                server.proc.pid).memory_info().rss / 2**20  # type: ignore[union-attr]
        for table in load.tables.values():
            if table.ws is not None:
                await table.ws.close()
        for task in list(load.tasks):
            task.cancel()
    finally:
        if spy is not None:
            spy.send_signal(2)  # SIGINT: py-spy writes the flame graph
            spy.wait(timeout=30)
        server.stop()
        out, _ = bare.communicate(timeout=30)
    bare_late = json.loads(out or b"{}")
    for row in results["scenarios"]:
        ref = summary(bare_late.get(f"{row['tables']}x{row['clients']}", []))
        row["bare_loop_late_ms"] = ref
        server_p99, bare_p99 = row["expiry_late_ms"]["p99"], ref["p99"]
        row["expiry_p99_ratio"] = (server_p99 / bare_p99 if server_p99 is not None
                                   and bare_p99 else None)
    if not args.no_mqtt:  # the broker section (issue 13): bench/bench_mqtt.py
        from bench_mqtt import run_mqtt

        results["mqtt"] = await run_mqtt(args.quick, seconds, workdir)
    if not args.no_attacks:  # the hostile-LAN section (issue 11): bench/bench_attacks.py
        from bench_attacks import run_attacks

        results["attacks"] = await run_attacks(
            args.quick, 3.0 if args.quick else args.attack_seconds, workdir)
    return results


def fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


COLUMNS = ("tables", "clients", "expiries", "late p50", "late p99", "late max", "ack p50",
           "ack p99", "last p50", "last p99", "events/s", "srv cpu", "rss MB")


def print_row(row: dict[str, Any], header: bool) -> None:
    if header:
        print("scale (ms; 'late' = expiry lateness in the server, 'ack' = command round trip, "
              "'last' = command to last client)")
        print(" ".join(f"{c:>9}" for c in COLUMNS))
    late, ack, last = row["expiry_late_ms"], row["ack_ms"], row["cmd_to_last_client_ms"]
    cells = (row["tables"], row["clients"], late["n"], late["p50"], late["p99"], late["max"],
             ack["p50"], ack["p99"], last["p50"], last["p99"], fmt(row["events_per_s"], 0),
             fmt(row["server_cpu"] * 100, 0) + "%", fmt(row["server_rss_mb"], 1))
    print(" ".join(f"{fmt(c):>9}" for c in cells), flush=True)


def print_report(results: dict[str, Any]) -> None:
    print()
    print("expiry accuracy against the bare asyncio loop, same run (ms late)")
    print(f"{'tables':>7} {'clients':>7} {'server p50':>10} {'p99':>7} {'max':>7} "
          f"{'bare p50':>9} {'p99':>7} {'max':>7} {'p99 ratio':>9}")
    for row in results["scenarios"]:
        s, b = row["expiry_late_ms"], row["bare_loop_late_ms"]
        print(f"{row['tables']:>7} {row['clients']:>7} {fmt(s['p50']):>10} {fmt(s['p99']):>7} "
              f"{fmt(s['max']):>7} {fmt(b['p50']):>9} {fmt(b['p99']):>7} {fmt(b['max']):>7} "
              f"{fmt(row['expiry_p99_ratio']):>9}")
    d = results["drift"]
    print()
    print(f"drift over a {d['seconds']:.0f} s frame ({d['events']} events, {d['samples']} "
          f"samples): |client remaining - server remaining| p50 {fmt(d['abs_error_ms']['p50'])}"
          f" p99 {fmt(d['abs_error_ms']['p99'])} max {fmt(d['abs_error_ms']['max'])} ms; "
          f"mean error first fifth {fmt(d['mean_first_fifth_ms'], 3)} ms, last fifth "
          f"{fmt(d['mean_last_fifth_ms'], 3)} ms; offset re-estimate moved "
          f"{fmt(d['offset_change_ms'], 3)} ms")
    h = results["http_command_ms"]
    print(f"HTTP command round trip on an idle table (fsync before the reply): p50 "
          f"{fmt(h['p50'])} p99 {fmt(h['p99'])} max {fmt(h['max'])} ms")
    print()
    print("targets")
    by = {(r["tables"], r["clients"]): r for r in results["scenarios"]}
    target = by.get((100, 1000))
    if target:
        print(f"  expiry p99 within 2x the bare loop at 100 tables/1000 clients: "
              f"{fmt(target['expiry_late_ms']['p99'])} vs {fmt(target['bare_loop_late_ms']['p99'])}"
              f" ms, ratio {fmt(target['expiry_p99_ratio'])} (target <= 2)")
    worst = max((r["cmd_to_last_client_ms"]["p99"] or 0.0 for r in results["scenarios"]
                 if r["clients"] == max(c for _, c in by)), default=None)
    print(f"  command-to-last-client p99 at {max(c for _, c in by)} clients (worst table "
          f"count): {fmt(worst)} ms (target < 20)")
    rss = [r["server_rss_mb"] for r in results["scenarios"] if r["tables"] == max(t for t, _ in by)]
    print(f"  server RSS at {max(t for t, _ in by)} tables: max {fmt(max(rss), 1)} MB "
          f"(target < 150)")
    if "mqtt" in results:
        from bench_mqtt import print_mqtt

        print_mqtt(results["mqtt"], results["scenarios"])
        big = max(results["mqtt"]["fanout"], key=lambda r: (r["subscribers"], r["qos"]))
        print(f"  command-to-last-subscriber p99 through the broker at {big['subscribers']} "
              f"QoS 1 subscribers on one table: {fmt(big['cmd_to_last_subscriber_ms']['p99'])}"
              " ms (target < 20)")


def print_attacks(results: dict[str, Any]) -> None:
    if "attacks" in results:
        from bench_attacks import print_attacks_report

        print_attacks_report(results["attacks"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each scenario")
    parser.add_argument("--tables", type=int, nargs="*", help="table counts (default 1 10 100 500)")
    parser.add_argument("--clients", type=int, nargs="*", help="client counts (default 1 100 1000)")
    parser.add_argument("--profile", type=Path, help="record the server with py-spy to this SVG")
    parser.add_argument("--drift-seconds", type=float, default=30.0)
    parser.add_argument("--no-mqtt", action="store_true",
                        help="skip the MQTT section (broker fan-out, hall mirror lag)")
    parser.add_argument("--no-attacks", action="store_true",
                        help="skip the hostile-LAN section (attacks against a canary table)")
    parser.add_argument("--attack-seconds", type=float, default=15.0,
                        help="length of each attack of the hostile-LAN section")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench.json")
    args = parser.parse_args()
    results = asyncio.run(run(args))
    print_report(results)
    print_attacks(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"\nwritten {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
