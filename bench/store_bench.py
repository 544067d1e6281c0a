"""What the store costs an SD card: bytes written to disk and fsyncs per hour, store bytes
per event, commit time, beside the same figures of the release before issue 19 (a7c2b03).

Not a test: it measures and prints; it asserts nothing. ``make bench`` runs it (about two
minutes here); ``--quick`` in about a minute. Each profile runs a real ``shotclock serve``
(uvicorn, a fresh SQLite file on the disk, not tmpfs) and drives it over HTTP, time-
compressed: the commands of a shot every 25 s are sent as fast as the service answers,
then the figures are scaled to an hour by the number of shots (144 an hour), plus the
idle rate of the same service for the rest of the hour (what it writes with no command:
the heartbeat). Measured per profile:

- bytes written to disk: ``write_bytes`` of ``/proc/<pid>/io`` (what reached the block
  layer: WAL, database, checkpoints; the tmpfs heartbeat is not on a disk);
- fsyncs: ``strace -f -e trace=fsync,fdatasync`` on every thread of the service;
- store bytes per event: the file size after a clean stop (WAL checkpointed) over events;
- commit time p50/p99: the server's own commits (``/api/health``: ``commit_ms_p50`` and
  the client-side command round trip, which includes the commit and its fsync).

Profiles: ``idle`` (one table, no clock running, 20 s), ``one`` (one table, a shot every
25 s), ``hall16`` (16 tables at once), and the soak (16 tables through a time-compressed
tournament day: a match per table after another, RSS and store size sampled).
Then ``bench/bench.py --quick`` (RSS, expiry p99 beside a bare loop, command-to-client
latency) for both trees in the same run. Results: ``bench/results/store_bench.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
BASELINE = "a7c2b03"  # main before issue 19
SHOTS_PER_HOUR = 3600 / 25
HALL_TABLES = 16
HOURS_A_YEAR = 10 * 365  # a hall open 10 h a day


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Service:
    """``shotclock serve`` of one source tree on a fresh store, with strace counting its
    fsyncs on every thread."""

    def __init__(self, tree: Path, workdir: Path, name: str) -> None:
        self.tree, self.db = tree, workdir / f"{name}.db"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / f"{name}.log"
        self.trace = workdir / f"{name}.strace"
        self.proc: subprocess.Popen[bytes] | None = None
        self.tracer: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(self.tree), "SHOTCLOCK_DISPLAY": "none",
               "SHOTCLOCK_COMMAND_RATE": "100000", "SHOTCLOCK_COMMAND_BURST": "100000",
               "SHOTCLOCK_READ_RATE": "100000", "SHOTCLOCK_READ_BURST": "100000"}
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "clock_service", "serve", "--host", "127.0.0.1",
                 "--port", str(self.port), "--db", str(self.db), "--log-level", "warning"],
                cwd=self.tree, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/api/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            raise RuntimeError(self.log.read_text()[-2000:])
        time.sleep(0.5)  # its start-up writes done
        if shutil.which("strace"):
            tids = [str(t.id) for t in psutil.Process(self.proc.pid).threads()]
            args = ["strace", "-f", "-qq", "-e", "trace=fsync,fdatasync", "-e", "signal=none",
                    "-o", str(self.trace)]
            for tid in tids:
                args += ["-p", tid]
            self.tracer = subprocess.Popen(args, stderr=subprocess.DEVNULL)
            time.sleep(1.0)  # attached

    def io(self) -> tuple[int, int]:
        """(bytes written to disk, fsyncs so far)."""
        assert self.proc is not None
        written = psutil.Process(self.proc.pid).io_counters().write_bytes
        syncs = 0
        if self.trace.exists():
            syncs = sum(1 for line in self.trace.read_text(errors="replace").splitlines()
                        if "fsync(" in line or "fdatasync(" in line)
        return written, syncs

    def rss_mb(self) -> float:
        assert self.proc is not None
        return psutil.Process(self.proc.pid).memory_info().rss / 1e6

    def stop(self) -> None:
        if self.tracer is not None:
            self.tracer.send_signal(signal.SIGINT)
            self.tracer.wait(10)
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)

    def store_bytes(self) -> int:
        """Bytes the store's pages hold (committed, the WAL's included; free pages not)."""
        import sqlite3

        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            size = conn.execute("PRAGMA page_size").fetchone()[0]
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            free = conn.execute("PRAGMA freelist_count").fetchone()[0]
            return int((pages - free) * size)
        finally:
            conn.close()

    def events(self) -> int:
        return event_count(self.db)


async def play_shots(http: httpx.AsyncClient, table: str, shots: int,
                     latencies: list[float]) -> int:
    """A shot every 25 s, compressed: start, shot, and a turn every second shot; every 20th
    shot a pause/resume and every 30th an undo. Returns the commands sent."""
    sent = 0

    async def command(name: str, **fields: Any) -> None:
        nonlocal sent
        started = time.perf_counter()
        await http.post(f"/api/tables/{table}/commands", json={"command": name, **fields})
        latencies.append((time.perf_counter() - started) * 1000)
        sent += 1

    for i in range(shots):
        await command("start")
        if i % 20 == 7:
            await command("pause")
            await command("resume")
        await command("shot")
        if i % 30 == 11:
            await command("undo")
            await command("resume")
            await command("shot")
        if i % 2:
            await command("turn")
    return sent


async def profile(service: Service, tables: int, shots: int) -> dict[str, Any]:
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=service.url, timeout=30) as http:
        for n in range(tables):
            table = f"t{n}"
            await http.post("/api/tables", json={"id": table, "players": ["A", "B"]})
        await asyncio.sleep(0.5)
        written0, syncs0 = service.io()
        started = time.monotonic()
        sent = sum(await asyncio.gather(*(play_shots(http, f"t{n}", shots, latencies)
                                          for n in range(tables))))
        await asyncio.sleep(0.3)
        elapsed = time.monotonic() - started
        written, syncs = service.io()
        health = (await http.get("/api/health")).json()["components"]["store"]
    latencies.sort()
    return {"tables": tables, "shots": shots * tables, "commands": sent,
            "seconds": round(elapsed, 2), "bytes": written - written0,
            "fsyncs": syncs - syncs0,
            "command_ms_p50": round(latencies[len(latencies) // 2], 2),
            "command_ms_p99": round(latencies[int(len(latencies) * 0.99)], 2),
            "commit_ms_p50": health.get("commit_ms_p50"),
            "commit_ms_p99": health.get("commit_ms_p99"),
            "commit_ms_max": health.get("commit_ms_max")}


# A shot short enough to wait for its warnings: two fire before every shot.
WARNING_PROFILE = {"shot_ms": 2000, "floor_ms": 2000, "step_ms": 0, "extension_ms": 1000,
                   "warnings_ms": [1500, 1000]}


async def warnings_profile(service: Service, shots: int) -> dict[str, Any]:
    """One table whose clock runs into two warnings before every shot (start, both
    warnings, shot, turn): fsyncs per command with the warnings firing. Each shot waits
    for its two warnings in the table's log (about 1 s)."""
    sent = warnings = 0
    async with httpx.AsyncClient(base_url=service.url, timeout=30) as http:
        made = await http.post("/api/tables", json={"id": "w", "players": ["A", "B"],
                                                    "profile": WARNING_PROFILE})
        if made.status_code >= 300:
            raise RuntimeError(f"the warnings table: {made.status_code} {made.text}")
        await asyncio.sleep(0.5)
        seq = len((await http.get("/api/tables/w/events?since=0")).json())
        written0, syncs0 = service.io()
        started = time.monotonic()
        for _ in range(shots):
            await http.post("/api/tables/w/commands", json={"command": "start"})
            seen = 0
            while seen < 2:
                await asyncio.sleep(0.05)
                page = (await http.get(f"/api/tables/w/events?since={seq}")).json()
                seen = sum(1 for e in page if e["type"] == "clock.warning")
            warnings += seen
            await http.post("/api/tables/w/commands", json={"command": "shot"})
            await http.post("/api/tables/w/commands", json={"command": "turn"})
            sent += 3
            seq = (await http.get("/api/tables/w")).json()["seq"]
        await asyncio.sleep(0.3)
        elapsed = time.monotonic() - started
        written, syncs = service.io()
    return {"shots": shots, "commands": sent, "warnings": warnings,
            "seconds": round(elapsed, 2), "bytes": written - written0,
            "fsyncs": syncs - syncs0, "fsyncs_per_command": round((syncs - syncs0) / sent, 2)}


def idle(service: Service, seconds: float) -> dict[str, Any]:
    written0, syncs0 = service.io()
    time.sleep(seconds)
    written, syncs = service.io()
    return {"seconds": seconds, "bytes": written - written0, "fsyncs": syncs - syncs0}


def per_hour(run: dict[str, Any], idle_run: dict[str, Any], tables: int) -> dict[str, float]:
    """A shot every 25 s on ``tables`` tables for an hour: the run's cost per shot times
    144 shots a table, plus what the service writes with no command (its idle rate; the
    old heartbeat committed twice a second whether a clock ran or not) for the hour."""
    shots = run["shots"]
    idle_per_s_bytes = idle_run["bytes"] / idle_run["seconds"]
    idle_per_s_syncs = idle_run["fsyncs"] / idle_run["seconds"]
    busy_bytes = max(0.0, run["bytes"] - idle_per_s_bytes * run["seconds"])
    busy_syncs = max(0.0, run["fsyncs"] - idle_per_s_syncs * run["seconds"])
    scale = SHOTS_PER_HOUR * tables / shots
    return {"bytes_per_hour": busy_bytes * scale + idle_per_s_bytes * 3600,
            "fsyncs_per_hour": busy_syncs * scale + idle_per_s_syncs * 3600,
            "fsyncs_per_command": run["fsyncs"] / max(1, run["commands"]),
            "commands_per_hour": run["commands"] * scale}


def event_count(db: Path, but: str | None = None) -> int:
    """Events in the store (``but``: except that table's)."""
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM events WHERE table_id IS NOT ?",
                                (but,)).fetchone()[0])
    finally:
        conn.close()


async def soak(service: Service, tables: int, matches: int, sample_s: float
               ) -> dict[str, Any]:
    """A tournament day, time-compressed: every table plays ``matches`` matches of 40
    shots back to back (new_match between them); RSS and the store's size sampled."""
    samples: list[tuple[float, float, int]] = []
    done = asyncio.Event()

    async def sampler() -> None:
        started = time.monotonic()
        while not done.is_set():
            samples.append((round(time.monotonic() - started, 1), round(service.rss_mb(), 1),
                            service.store_bytes()))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), sample_s)

    async def table_day(http: httpx.AsyncClient, table: str) -> None:
        latencies: list[float] = []
        for _ in range(matches):
            await play_shots(http, table, 40, latencies)
            await http.post(f"/api/tables/{table}/commands",
                            json={"command": "new_match", "reason": "soak"})

    async with httpx.AsyncClient(base_url=service.url, timeout=30) as http:
        for n in range(tables):
            await http.post("/api/tables", json={"id": f"s{n}", "players": ["A", "B"]})
        bytes0, events0 = service.store_bytes(), service.events()
        task = asyncio.create_task(sampler())
        await asyncio.gather(*(table_day(http, f"s{n}") for n in range(tables)))
        done.set()
        await task
        await asyncio.sleep(0.5)
        grown, added = service.store_bytes() - bytes0, service.events() - events0
    return {"tables": tables, "matches_per_table": matches, "samples": samples,
            "events": added, "store_bytes_per_event": round(grown / max(1, added), 1),
            "rss_mb_start": samples[0][1], "rss_mb_end": samples[-1][1],
            "rss_mb_max": max(s[1] for s in samples),
            "store_bytes_end": samples[-1][2]}


def baseline_tree(workdir: Path, ref: str = BASELINE) -> Path:
    tree = workdir / "baseline"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
        tar.extractall(tree, filter="data")
    return tree


def run_tree(tree: Path, name: str, workdir: Path, quick: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    shots = 12 if quick else 30
    # idle and one table on one service
    service = Service(tree, workdir, f"{name}-one")
    service.start()
    try:
        out["idle"] = idle(service, 10 if quick else 20)
        out["one"] = asyncio.run(profile(service, 1, shots * 2))
        out["warnings"] = asyncio.run(warnings_profile(service, 8 if quick else 16))
    finally:
        service.stop()
    out["one"]["events"] = event_count(service.db, but="w")  # not the warnings profile's
    out["one"]["store_bytes"] = service.store_bytes()
    # 16 tables, then the soak on the same service
    service = Service(tree, workdir, f"{name}-hall")
    service.start()
    try:
        out["hall16"] = asyncio.run(profile(service, HALL_TABLES, shots))
        out["soak"] = asyncio.run(soak(service, HALL_TABLES, 1 if quick else 2,
                                       5.0 if quick else 10.0))
        out["soak"]["rss_mb_after"] = round(service.rss_mb(), 1)
    finally:
        service.stop()
    out["hall16"]["store_bytes"] = service.store_bytes()
    # What an event adds to the store (the soak's growth over its events: the tables, undo
    # checkpoints and index pages a store has anyway are not per event).
    out["store_bytes_per_event"] = out["soak"]["store_bytes_per_event"]
    out["archive"] = archive_figures(tree, service.db)
    out["one_per_hour"] = per_hour(out["one"], out["idle"], 1)
    out["hall16_per_hour"] = per_hour(out["hall16"], out["idle"], HALL_TABLES)
    out["idle_per_hour"] = {"bytes": out["idle"]["bytes"] / out["idle"]["seconds"] * 3600,
                            "fsyncs": out["idle"]["fsyncs"] / out["idle"]["seconds"] * 3600}
    hall = out["hall16_per_hour"]
    events_per_command = (out["one"]["events"] - 2) / max(1, out["one"]["commands"])
    events_a_year = hall["commands_per_hour"] * events_per_command * HOURS_A_YEAR
    out["events_a_year_16_tables"] = round(events_a_year)
    out["year_live_store_gb"] = round(events_a_year * out["store_bytes_per_event"] / 1e9, 2)
    per_event = out["archive"].get("archive_bytes_per_event")
    if per_event is not None:
        # 30 days live (store), the rest of the year archived (files).
        live = events_a_year * 30 / 365 * out["store_bytes_per_event"]
        out["year_with_archive_gb"] = round((live + events_a_year * per_event) / 1e9, 2)
    return out


def archive_figures(tree: Path, db: Path) -> dict[str, Any]:
    """``shotclock store archive --days 0`` on the stopped service's store: every finished
    match to its file; the files' bytes per event."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-m", "clock_service", "store", "archive",
                           "--db", str(db), "--days", "0"], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        return {"error": (done.stderr or done.stdout)[-300:]}
    stats = subprocess.run([sys.executable, "-m", "clock_service", "store", "stats",
                            "--db", str(db), "--json"], cwd=tree, env=env,
                           capture_output=True, text=True, timeout=60)
    data = json.loads(stats.stdout)
    events = data["archived_events"]
    return {"archived_matches": data["archived_matches"], "archived_events": events,
            "archive_bytes": data["archive_bytes"],
            "archive_bytes_per_event": round(data["archive_bytes"] / events, 1)
            if events else None, "live_store_after": data["used_bytes"]}


def bench_py(tree: Path, workdir: Path, name: str, seconds: float) -> dict[str, Any]:
    """bench/bench.py of ``tree``: 16 tables, 10 clients each, ``seconds`` long (shots of
    2-3 s run out: the expiries' lateness beside the bare loop's)."""
    result = workdir / f"{name}-bench.json"
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, str(tree / "bench" / "bench.py"), "--seconds", str(seconds),
         "--drift-seconds", "3", "--no-mqtt", "--no-attacks", "--tables", "16",
         "--clients", "10", "--out", str(result)],
        cwd=tree, env=env, capture_output=True, text=True, timeout=300)
    if not result.exists():
        return {"error": done.stderr[-1500:]}
    data = json.loads(result.read_text())
    scenario = data["scenarios"][-1]
    keep = {k: scenario.get(k) for k in ("expiry_late_ms", "bare_loop_late_ms",
                                          "expiry_p99_ratio", "cmd_to_last_client_ms",
                                          "ack_ms", "server_rss_mb")}
    return {"scenario": {k: scenario.get(k) for k in ("tables", "clients")}, **keep}


def show(name: str, r: dict[str, Any]) -> None:
    one, hall, idle_h = r["one_per_hour"], r["hall16_per_hour"], r["idle_per_hour"]
    print(f"\n== {name}")
    print(f"idle hour:        {idle_h['bytes'] / 1e6:9.2f} MB written, "
          f"{idle_h['fsyncs']:7.0f} fsyncs")
    print(f"one table / hour: {one['bytes_per_hour'] / 1e6:9.2f} MB written, "
          f"{one['fsyncs_per_hour']:7.0f} fsyncs ({one['fsyncs_per_command']:.2f} a command)")
    print(f"16 tables / hour: {hall['bytes_per_hour'] / 1e6:9.2f} MB written, "
          f"{hall['fsyncs_per_hour']:7.0f} fsyncs ({hall['fsyncs_per_command']:.2f} a command)")
    print(f"store bytes / event: {r['store_bytes_per_event']:.0f}; a 16-table hall 10 h a "
          f"day for a year ({r['events_a_year_16_tables'] / 1e6:.1f} M events): "
          f"{r['year_live_store_gb']:.1f} GB all in the store; with archiving after 30 days: "
          f"{r.get('year_with_archive_gb', 'n/a')} GB (archive: {r['archive']})")
    w = r["warnings"]
    print(f"warnings firing: {w['fsyncs']} fsyncs for {w['commands']} commands and "
          f"{w['warnings']} warnings ({w['fsyncs_per_command']:.2f} a command)")
    for key in ("one", "hall16"):
        run = r[key]
        print(f"{key}: command round trip p50 {run['command_ms_p50']} ms p99 "
              f"{run['command_ms_p99']} ms; commit p50 {run['commit_ms_p50']} "
              f"p99 {run.get('commit_ms_p99')} max {run['commit_ms_max']} ms")
    soak_run = r["soak"]
    print(f"soak: RSS {soak_run['rss_mb_start']} -> {soak_run['rss_mb_end']} MB "
          f"(max {soak_run['rss_mb_max']}), store {soak_run['store_bytes_end'] / 1e6:.2f} MB")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--no-bench-py", action="store_true")
    parser.add_argument("--baseline", default=BASELINE,
                        help=f"the tree to compare with (a git ref; default {BASELINE}, "
                        "main before issue 19)")
    parser.add_argument("--warnings-only", action="store_true",
                        help="only the warnings profile (fsyncs per command), both trees")
    parser.add_argument("--out", type=Path, default=RESULTS / "store_bench.json")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="store-bench-", dir=ROOT / "bench"))
    results: dict[str, Any] = {"load": os.getloadavg(), "strace": bool(shutil.which("strace"))}
    try:
        trees = {"now": ROOT}
        if not args.no_baseline:
            trees[args.baseline] = baseline_tree(workdir, args.baseline)
        for name, tree in trees.items():
            if args.warnings_only:
                service = Service(tree, workdir, f"{name}-warnings")
                service.start()
                try:
                    results[name] = {"warnings": asyncio.run(warnings_profile(service, 8))}
                finally:
                    service.stop()
                print(name, json.dumps(results[name]))
                continue
            results[name] = run_tree(tree, name, workdir, args.quick)
            show(name, results[name])
            if not args.no_bench_py:
                results[name]["bench_py"] = bench_py(tree, workdir, name,
                                                     5.0 if args.quick else 10.0)
                print("bench.py:", json.dumps(results[name]["bench_py"]))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"\nload average {results['load']}; results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
