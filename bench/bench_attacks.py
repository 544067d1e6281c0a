"""The hostile-LAN section of ``make bench`` (issue 11): the attacks of
tests/faults/test_lan_attacks.py, longer and bigger, against a real ``shotclock serve``
with its default limits and a referee token, measured by the same canary.

The canary: a table whose 0.7 s shots expire one after another (a referee on HTTP from
127.0.0.1 starts each); its expiry lateness (``clock.expired.data.late_ms``) beside a bare
asyncio loop woken at the same deadlines in its own process, ``/api/health`` probed every
200 ms, the server's RSS sampled. First a quiet window, then each attack from its own
loopback addresses (127.0.0.x) for ``seconds``:

- replay: 100 clients asking ``?since=0`` of a 100,000-event table and never reading;
- reads: 4 loops of ``GET .../events?limit=10000`` and ``GET /api/tables?limit=10000``;
- slowloris: 1,100 half-open connections from 4 addresses;
- sockets: 200 WebSockets from one address, held;
- commands: 32 sockets of one address with the token, ten commands in flight each.

Goal (issue 11): expiry p99 under each attack within 2x of the quiet p99. The figures are
printed and written with the rest; the benchmark asserts nothing.

Run alone: ``python bench/bench_attacks.py [--quick] [--seconds 15]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.attack import (  # noqa: E402
    TOKEN,
    Canary,
    close_all,
    command_flood,
    fill_store,
    half_open,
    read_flood,
    socket_flood,
    stalled_websockets,
    still_open,
)
from harness.server import ServerProcess  # noqa: E402


def _held_by_server(server: ServerProcess, sources: list[str]) -> int:
    """Connections the server still has from these addresses (its side: a client that does
    not read cannot tell a close it has not read from an open connection)."""
    import psutil

    assert server.proc is not None
    return sum(1 for c in psutil.Process(server.proc.pid).net_connections()
               if c.raddr and c.raddr.ip in sources)


async def _replay(server: ServerProcess, seconds: float) -> dict[str, Any]:
    stalled: list[Any] = []
    sources = [f"127.0.0.{10 + i}" for i in range(5)]
    for source in sources:
        stalled += await asyncio.to_thread(stalled_websockets, server.port,
                                           "/ws/tables/long?since=0", 20, source)
    await asyncio.sleep(seconds)
    held = _held_by_server(server, sources)
    close_all(stalled)
    return {"clients": len(stalled), "held_by_the_server_at_end": held}


async def _reads(server: ServerProcess, seconds: float) -> dict[str, Any]:
    statuses = await read_flood(server.url, ["/api/tables/long/events?since=0&limit=10000",
                                             "/api/tables?limit=10000"], seconds, "127.0.0.20")
    return {"answers": {str(k): v for k, v in sorted(statuses.items())}}


async def _slowloris(server: ServerProcess, seconds: float) -> dict[str, Any]:
    sources = [f"127.0.0.{30 + i}" for i in range(4)]
    held = await asyncio.to_thread(half_open, server.port, 1100, sources)
    await asyncio.sleep(0.5)
    open_early = await asyncio.to_thread(still_open, held)
    async with httpx.AsyncClient(base_url=server.url, timeout=5) as http:
        started = time.perf_counter()
        status = (await http.get("/api/health")).status_code
        normal_ms = (time.perf_counter() - started) * 1000.0
    await asyncio.sleep(max(0.0, seconds - 0.5))
    open_late = await asyncio.to_thread(still_open, held)
    close_all(held)
    return {"connections": len(held), "open_after_0_5_s": open_early,
            "open_at_end": open_late, "normal_request": status, "normal_request_ms": normal_ms}


async def _sockets(server: ServerProcess, seconds: float) -> dict[str, Any]:
    return await socket_flood(server.ws_url, "/ws/tables/canary", 200, seconds, "127.0.0.40")


async def _commands(server: ServerProcess, seconds: float) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=server.url,
                                 headers={"authorization": f"Bearer {TOKEN}"}) as http:
        await http.post("/api/tables", json={"id": "flood", "players": ["A", "B"]})
    result = await command_flood(server.ws_url, "flood", TOKEN, 32, seconds, "127.0.0.50",
                                 server.url)
    await asyncio.sleep(max(0.0, seconds - result["seconds"]))  # a full window either way
    return result


ATTACKS = [("replay", _replay), ("reads", _reads), ("slowloris", _slowloris),
           ("sockets", _sockets), ("commands", _commands)]


async def run_attacks(quick: bool, seconds: float, workdir: Path) -> dict[str, Any]:
    events = 3_000 if quick else 100_000
    db = workdir / "attacks.db"
    await fill_store(db, "long", events)
    server = ServerProcess(db, env={"SHOTCLOCK_REFEREE_TOKEN": TOKEN}).start(timeout=60)
    assert server.proc is not None
    canary = Canary(server.url, server.proc.pid)
    rows: list[dict[str, Any]] = []
    try:
        await canary.start()
        await asyncio.sleep(1.0)
        canary.new_window()
        await asyncio.sleep(seconds)
        rows.append({"attack": "none (quiet)", **canary.new_window().summary()})
        print_attack_row(rows[-1], header=True)
        for name, attack in ATTACKS:
            started = time.monotonic()
            detail = await attack(server, seconds)
            window = canary.new_window().summary()
            rows.append({"attack": name, **window, "detail": detail,
                         "attack_seconds": round(time.monotonic() - started, 1)})
            print_attack_row(rows[-1], header=False)
            await asyncio.sleep(2.0)  # let the server settle between attacks
            canary.new_window()
    finally:
        with contextlib.suppress(Exception):
            await canary.stop()
        server.stop()
    quiet = rows[0]["late_p99_ms"]
    for row in rows[1:]:
        p99 = row["late_p99_ms"]
        row["p99_vs_quiet"] = p99 / quiet if p99 is not None and quiet else None
    return {"events_in_long_table": events, "seconds": seconds, "rows": rows}


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def print_attack_row(row: dict[str, Any], header: bool) -> None:
    if header:
        print("\nhostile LAN (canary expiry lateness in ms; bare = a bare loop, same deadlines)")
        print(f"{'attack':>14} {'expiries':>8} {'p50':>7} {'p99':>7} {'max':>7} "
              f"{'bare p99':>8} {'health max':>10} {'rss MB':>7} {'peak MB':>7}")
    print(f"{row['attack']:>14} {row['expiries']:>8} {_fmt(row['late_p50_ms']):>7} "
          f"{_fmt(row['late_p99_ms']):>7} {_fmt(row['late_max_ms']):>7} "
          f"{_fmt(row['bare_p99_ms']):>8} {_fmt(row['health_max_ms']):>10} "
          f"{_fmt(row['rss_start_mb']):>7} {_fmt(row['rss_peak_mb']):>7}", flush=True)
    if "detail" in row:
        print(f"{'':>14} {json.dumps(row['detail'], default=str)}", flush=True)


def print_attacks_report(attacks: dict[str, Any]) -> None:
    print(f"\nhostile LAN, {attacks['seconds']:g} s per attack, "
          f"{attacks['events_in_long_table']} events in the replayed table: "
          "expiry p99 under attack / quiet p99 (goal <= 2)")
    for row in attacks["rows"][1:]:
        print(f"  {row['attack']:>10}: {_fmt(row.get('p99_vs_quiet'), 2)}  "
              f"(p99 {_fmt(row['late_p99_ms'])} ms, max {_fmt(row['late_max_ms'])} ms, "
              f"RSS +{_fmt((row['rss_peak_mb'] or 0) - (row['rss_start_mb'] or 0))} MB)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 s attacks, a small table")
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each attack")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "attacks.json")
    args = parser.parse_args()
    os.environ.setdefault("SHOTCLOCK_DISPLAY", "none")
    seconds = 3.0 if args.quick else args.seconds
    results = asyncio.run(run_attacks(args.quick, seconds,
                                      Path(tempfile.mkdtemp(prefix="shotclock-attacks-"))))
    print_attacks_report(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"\nwritten {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
