"""A 12-hour tournament day on 16 tables, time-compressed: RSS growth and store size
(issue 19, "Measure: a soak").

Not a test: it measures and prints; it asserts nothing. It runs the service's own parts
(``Runtime`` and the ``Store`` on a real SQLite file on the disk, not tmpfs) in this
process under a fake clock, so 12 hours of play take a few minutes: every table plays a
shot every 25 s of the day (start, shot, a turn every second shot), one shot in five runs
to half a second before its limit (all its warnings fire), and a new match every 150 shots
(about an hour). The fake clock moves the day forward and fires every timer on the way:
warnings, the heartbeat (every 500 ms of the day), the disk check (every minute). The
commits are real: one writer thread, fsyncs on the disk.

Measured every hour of the day: RSS of the process, the store's file (and WAL), its
used bytes and events. Run twice in the same run, in fresh processes, on the same tree:
with the store (``--store sqlite``), and with the same store whose commits are dropped
(``--store discard``: the writer thread, batching and callbacks stay, SQLite writes
nothing); the difference is what keeping the day in SQLite costs in memory.

    python bench/store_soak.py              # both, 12 h x 16 tables (about 3-4 min here)
    python bench/store_soak.py --hours 2    # shorter
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
SHOT_EVERY_MS = 25_000
NEW_MATCH_EVERY = 150  # shots a table plays per match (about an hour at 25 s a shot)
HOUR_MS = 3_600_000


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def store_files(db: Path) -> int:
    return sum(Path(f"{db}{s}").stat().st_size for s in ("", "-wal")
               if Path(f"{db}{s}").exists())


async def day(db: Path, tables: int, hours: float, store_kind: str) -> dict[str, Any]:
    from clock_service.core.commands import NewMatch, Shot, Start, Turn
    from clock_service.service.hub import Hub
    from clock_service.service.runtime import Runtime
    from clock_service.service.storage import Store
    from clock_service.service.timesource import FakeTime

    class DiscardingStore(Store):
        """The store with its writer, batching and callbacks, committing nothing."""

        def _commit(self, conn: Any, batch: list[Any]) -> None:
            return None

    clock = FakeTime()
    store = (Store if store_kind == "sqlite" else DiscardingStore)(db)
    runtime = Runtime(store, clock, Hub())
    runtime.disk_low_bytes = 1  # the minute's disk check runs (a statvfs)
    await runtime.start(default_table=None)
    ids = [f"t{n}" for n in range(tables)]
    for table in ids:
        await runtime.create_table(table, ["A", "B"])
    started = time.monotonic()
    cpu0 = time.process_time()
    day_start = clock.now_ms()
    samples: list[dict[str, Any]] = []
    commands = shots = 0

    def sample() -> None:
        reader = store.reader_connection() if store_kind == "sqlite" else None
        used = events = None
        if reader is not None:
            size = reader.execute("PRAGMA page_size").fetchone()[0]
            pages = reader.execute("PRAGMA page_count").fetchone()[0]
            free = reader.execute("PRAGMA freelist_count").fetchone()[0]
            used = (pages - free) * size
            events = reader.execute("SELECT count(*) FROM events").fetchone()[0]
        samples.append({"hour": round((clock.now_ms() - day_start) / HOUR_MS, 2),
                        "wall_s": round(time.monotonic() - started, 1),
                        "rss_mb": round(rss_mb(), 1), "file_bytes": store_files(db),
                        "used_bytes": used, "events": events})

    async def settle() -> None:
        while store.pending or any(t.published_seq != t.seq for t in runtime.tables.values()):
            await asyncio.sleep(0.001)

    sample()
    n = 0
    while clock.now_ms() - day_start < hours * HOUR_MS:
        round_start = clock.now_ms()
        states = await asyncio.gather(*(runtime.command(t, Start()) for t in ids))
        commands += len(ids)
        # Each table's shot time: 8 s, or (one table in five, in turn) half a second before
        # its limit, so every warning fires.
        at: dict[float, list[str]] = {}
        for k, (table, state) in enumerate(zip(ids, states, strict=True)):
            long_shot = (n + k) % 5 == 0
            after = (state["remaining_ms"] - 500) if long_shot else 8_000
            at.setdefault(after, []).append(table)
        for after in sorted(at):
            clock.set(round_start + after)
            await asyncio.gather(*(runtime.command(t, Shot()) for t in at[after]))
            commands += len(at[after])
        shots += len(ids)
        if n % 2:
            await asyncio.gather(*(runtime.command(t, Turn()) for t in ids))
            commands += len(ids)
        n += 1
        if n % NEW_MATCH_EVERY == 0:
            await asyncio.gather(*(runtime.command(t, NewMatch(reason="soak")) for t in ids))
            commands += len(ids)
        clock.set(max(clock.now_ms(), round_start + SHOT_EVERY_MS))
        await settle()
        if int((clock.now_ms() - day_start) // HOUR_MS) > int(
                (round_start - day_start) // HOUR_MS):
            sample()
    await settle()
    sample()
    wall = time.monotonic() - started
    cpu = time.process_time() - cpu0
    result = {"store": store_kind, "tables": tables, "hours": hours, "shots": shots,
              "commands": commands, "commits": store.commits,
              "unsynced_commits": store.unsynced_commits, "wall_s": round(wall, 1),
              "cpu_s": round(cpu, 1), "samples": samples,
              "rss_mb_start": samples[0]["rss_mb"], "rss_mb_end": samples[-1]["rss_mb"],
              "rss_mb_max": max(s["rss_mb"] for s in samples)}
    # RSS after the first hour (caches warm) to the end: the growth that would keep going.
    warm = samples[1] if len(samples) > 2 else samples[0]
    result["rss_growth_after_hour_1_mb"] = round(samples[-1]["rss_mb"] - warm["rss_mb"], 1)
    await runtime.stop()
    result["file_bytes_after_stop"] = store_files(db)
    if samples[-1]["events"]:
        result["events"] = samples[-1]["events"]
        result["used_bytes_per_event"] = round(samples[-1]["used_bytes"] / samples[-1]["events"], 1)
    return result


def run_child(kind: str, tables: int, hours: float, workdir: Path) -> dict[str, Any]:
    out = workdir / f"{kind}.json"
    done = subprocess.run(
        [sys.executable, __file__, "--child", kind, "--tables", str(tables), "--hours",
         str(hours), "--db", str(workdir / f"{kind}.db"), "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    if done.returncode != 0 or not out.exists():
        return {"error": done.stderr[-2000:]}
    return dict(json.loads(out.read_text()))


def show(r: dict[str, Any]) -> None:
    if "error" in r:
        print(r["error"])
        return
    print(f"\n== store {r['store']}: {r['tables']} tables x {r['hours']} h, {r['shots']} shots, "
          f"{r['commands']} commands, {r['commits']} commits ({r['unsynced_commits']} without "
          f"fsync); {r['wall_s']} s wall, {r['cpu_s']} s CPU")
    print(f"RSS {r['rss_mb_start']} -> {r['rss_mb_end']} MB (max {r['rss_mb_max']}; after "
          f"hour 1: {r['rss_growth_after_hour_1_mb']:+.1f} MB)")
    if r.get("events"):
        print(f"store: {r['events']} events, {r['file_bytes_after_stop'] / 1e6:.1f} MB file "
              f"after stop, {r['used_bytes_per_event']} bytes an event")
    print("hour  RSS MB  file MB")
    for s in r["samples"]:
        print(f"{s['hour']:5.1f} {s['rss_mb']:7.1f} {s['file_bytes'] / 1e6:8.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=16)
    parser.add_argument("--hours", type=float, default=12.0)
    parser.add_argument("--out", type=Path, default=RESULTS / "store_soak.json")
    parser.add_argument("--child", choices=["sqlite", "discard"], help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sys.path.insert(0, str(ROOT))
        result = asyncio.run(day(args.db, args.tables, args.hours, args.child))
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        return 0
    results: dict[str, Any] = {"load": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="store-soak-", dir=ROOT / "bench") as tmp:
        for kind in ("sqlite", "discard"):
            results[kind] = run_child(kind, args.tables, args.hours, Path(tmp))
            show(results[kind])
    a, b = results["sqlite"], results["discard"]
    if "error" not in a and "error" not in b:
        results["store_rss_cost_mb"] = round(a["rss_mb_end"] - b["rss_mb_end"], 1)
        print(f"\nthe store's share of RSS at the end of the day: "
              f"{results['store_rss_cost_mb']:+.1f} MB (sqlite minus discard, same tree)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"load average {results['load']}; results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
