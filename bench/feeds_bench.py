"""What the broadcast pull feeds cost the clock (issue 24 point 1, "polling at 10/s from 20
clients does not move an expiry").

One ``shotclock serve`` (per-address limits off: every client is on 127.0.0.1), TABLES
tables whose clocks expire over and over (a 1 s shot, restarted as soon as it expired).
Three phases in the same run, each PHASE_S long:

- quiet: only the expiries;
- pollers: the same, plus 20 pollers each asking 10 times a second for the whole hall's
  feed (8 JSON, 6 XML, 6 CSV; keep-alive connections, no If-None-Match: vMix fetches the
  body every time, the worst case);
- quiet again (the machine's drift over the run).

Each expiry's lateness is the core's own ``late_ms`` (the instant the loop woke it minus
its deadline, in the ``clock.expired`` event), read from the store after each phase. A bare
asyncio loop in its own process (harness/bare_loop.py) ticks every 10 ms through the whole
run: its lateness over the same moments is the machine's, beside the service's.

    .venv/bin/python bench/feeds_bench.py [--phase-s 25] [--tables 10] [--pollers 20]

Benchmarks are not tests: this prints figures and writes bench/results/feeds.json.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.bare_loop import BareLoop  # noqa: E402
from harness.server import ONE_ADDRESS_LOAD, ServerProcess  # noqa: E402
from harness.server import http as http_json  # noqa: E402

PROFILE = {"shot_ms": 1000, "full_rounds": 1, "step_ms": 0, "floor_ms": 1000,
           "extension_ms": 1000, "warnings_ms": [500]}
FORMATS = ["json"] * 8 + ["xml"] * 6 + ["csv"] * 6


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def summary(values: list[float]) -> dict[str, Any]:
    return {"n": len(values), "p50": pct(values, 0.5), "p99": pct(values, 0.99),
            "max": max(values) if values else None,
            "mean": statistics.fmean(values) if values else None}


class Driver(threading.Thread):
    """Keeps one table's clock expiring: start, let it run out, start again (a new frame
    when the second time foul ended the frame)."""

    def __init__(self, server: ServerProcess, table: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.server, self.table, self.stop_event = server, table, stop
        self.errors = 0

    def run(self) -> None:
        while not self.stop_event.is_set():
            status, _ = self.server.command(self.table, "start")
            if status == 409:
                status, _ = self.server.command(self.table, "new_frame")
                continue
            if status != 200:
                self.errors += 1
            self.stop_event.wait(PROFILE["shot_ms"] / 1000 + 0.15)


class Poller(threading.Thread):
    """One switcher polling the hall's feed at 10/s on a keep-alive connection."""

    def __init__(self, port: int, fmt: str, stop: threading.Event, rate: float = 10.0) -> None:
        super().__init__(daemon=True)
        self.port, self.fmt, self.stop_event, self.period = port, fmt, stop, 1.0 / rate
        self.times: list[float] = []
        self.bytes = 0
        self.failures = 0

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        next_at = time.monotonic()
        while not self.stop_event.is_set():
            started = time.monotonic()
            try:
                conn.request("GET", f"/feeds/tables.{self.fmt}")
                response = conn.getresponse()
                body = response.read()
                if response.status != 200:
                    self.failures += 1
                self.bytes += len(body)
                self.times.append((time.monotonic() - started) * 1000)
            except (OSError, http.client.HTTPException):
                self.failures += 1
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            next_at += self.period
            delay = next_at - time.monotonic()
            if delay > 0:
                self.stop_event.wait(delay)
            else:
                next_at = time.monotonic()
        conn.close()


def expiry_lateness(server: ServerProcess, tables: list[str], since: dict[str, int]
                    ) -> tuple[list[float], list[tuple[float, float]]]:
    late, at = [], []
    for table in tables:
        after = since[table]
        while True:
            url = f"{server.url}/api/tables/{table}/events?since={after}"
            status, events = http_json("GET", url)
            assert status == 200, events
            if not events:
                break
            for event in events:
                if event["type"] == "clock.expired":
                    late.append(float(event["data"]["late_ms"]))
                    at.append((float(event["at"]), float(event["data"]["late_ms"])))
            after = events[-1]["seq"]
    return late, at


def seqs(server: ServerProcess, tables: list[str]) -> dict[str, int]:
    return {t: int(server.get(f"/api/tables/{t}")["seq"]) for t in tables}


def run(phase_s: float, n_tables: int, n_pollers: int) -> dict[str, Any]:
    import psutil

    workdir = Path(tempfile.mkdtemp(prefix="feeds-bench-"))
    server = ServerProcess(workdir / "feeds.db", env=ONE_ADDRESS_LOAD).start()
    process = psutil.Process(server.proc.pid) if server.proc else None
    tables = [f"t{i:02d}" for i in range(n_tables)]
    for table in tables:
        status, body = server.post("/api/tables", {"id": table, "players": ["A", "B"],
                                                   "profile": PROFILE})
        assert status == 201, body
    bare = BareLoop(0.01)
    stop_drivers = threading.Event()
    drivers = [Driver(server, t, stop_drivers) for t in tables]
    for d in drivers:
        d.start()
    phases: dict[str, Any] = {}
    windows: list[tuple[str, float, float]] = []
    try:
        time.sleep(1.5)  # every clock running
        for name, pollers_on in (("quiet", False), ("pollers", True), ("quiet_again", False)):
            since = seqs(server, tables)
            stop_pollers = threading.Event()
            pollers = [Poller(server.port, FORMATS[i % len(FORMATS)], stop_pollers)
                       for i in range(n_pollers if pollers_on else 0)]
            cpu0 = process.cpu_times() if process else None
            start_unix = time.time() * 1000
            for p in pollers:
                p.start()
            time.sleep(phase_s)
            stop_pollers.set()
            for p in pollers:
                p.join(5)
            end_unix = time.time() * 1000
            cpu1 = process.cpu_times() if process else None
            late, _ = expiry_lateness(server, tables, since)
            requests = sum(len(p.times) for p in pollers)
            phases[name] = {
                "expiry_late_ms": summary(late),
                "server_cpu_percent": None if not cpu0 or not cpu1 else round(
                    100 * ((cpu1.user + cpu1.system) - (cpu0.user + cpu0.system))
                    / (phase_s), 1),
                "poll_requests": requests,
                "poll_rate_per_s": round(requests / phase_s, 1),
                "poll_failures": sum(p.failures for p in pollers),
                "poll_ms": summary([t for p in pollers for t in p.times]),
                "poll_bytes_per_s": round(sum(p.bytes for p in pollers) / phase_s),
            }
            windows.append((name, start_unix, end_unix))
    finally:
        stop_drivers.set()
        for d in drivers:
            d.join(5)
        samples = bare.stop()
        server.stop()
    for name, start, end in windows:
        ref = [late for at, late in samples if start <= at <= end]
        phases[name]["bare_loop_late_ms"] = summary(ref)
    return {"tables": n_tables, "pollers": n_pollers, "phase_s": phase_s,
            "driver_errors": sum(d.errors for d in drivers), "phases": phases}


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase-s", type=float, default=25.0)
    parser.add_argument("--tables", type=int, default=10)
    parser.add_argument("--pollers", type=int, default=20)
    args = parser.parse_args()
    result = run(args.phase_s, args.tables, args.pollers)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "feeds.json").write_text(json.dumps(result, indent=2))
    print(f"feeds bench: {result['tables']} tables expiring every ~1.2 s, "
          f"{result['pollers']} pollers x 10/s of the whole hall's feed, "
          f"{result['phase_s']:g} s per phase")
    print(f"{'phase':12} {'expiries':>8} {'late p50':>9} {'p99':>7} {'max':>7} "
          f"{'bare p50':>9} {'bare p99':>9} {'cpu %':>6} {'polls/s':>8} {'poll p99':>9} "
          f"{'KB/s':>7}")
    for name, p in result["phases"].items():
        late, bare = p["expiry_late_ms"], p["bare_loop_late_ms"]
        print(f"{name:12} {late['n']:>8} {fmt(late['p50']):>9} {fmt(late['p99']):>7} "
              f"{fmt(late['max']):>7} {fmt(bare['p50']):>9} {fmt(bare['p99']):>9} "
              f"{fmt(p['server_cpu_percent']):>6} {p['poll_rate_per_s']:>8} "
              f"{fmt(p['poll_ms']['p99']):>9} {p['poll_bytes_per_s'] / 1000:>7.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
