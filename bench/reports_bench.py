"""Benchmark of the match records (issue 14): statistics build time, listing, and the clock
while readers hammer the reports. Not a test: it measures and prints, asserts nothing.

1. A 200-shot match (5 frames of 40 shots; pauses, extensions, a time foul and an undo per
   frame) played on the clock core and stored as the runtime stores it. Timed:
   ``core``: the statistics core alone on the parsed events; ``from store``: what
   ``GET /api/matches/{id}`` does on a cache miss (read the events from SQLite, decode,
   digest, build); ``json``: the same plus encoding the response.
2. A store with 10,000 matches (100 tables x 100 matches, written through the store so the
   index is the real one): one page of 200 (first, middle by cursor, one table's), and a
   walk of all 10,000 through 50 pages; also over HTTP (in-process app, httpx/ASGI).
3. (unless --no-server) A real ``shotclock serve``: a table's clock expires again and again
   on a 400 ms profile while 8 readers fetch the protocol, the CSV and the charts of the
   200-shot match as fast as they can; the expiry lateness (``late_ms``) is reported beside
   the same table with no readers.

``python bench/reports_bench.py [--quick] [--no-server]``; writes bench/results/reports.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clock_service.core.clock import TableClock  # noqa: E402
from clock_service.edges.reports.export import record_json  # noqa: E402
from clock_service.edges.reports.records import build_from_store  # noqa: E402
from clock_service.edges.reports.stats import build_match  # noqa: E402
from clock_service.service.storage import Store  # noqa: E402
from clock_service.service.storage.index import list_matches_json, match_row  # noqa: E402
from clock_service.service.storage.records import load_events  # noqa: E402
from harness.reports import play_200_shots, write_table  # noqa: E402

RESULTS = ROOT / "bench" / "results"


class Timer:
    """Wall and CPU (this process) time of a block, in ms: on a shared machine the wall
    time includes waiting for a core; the CPU time is what the work itself cost."""

    def __init__(self, wall: list[float], cpu: list[float]) -> None:
        self.wall, self.cpu = wall, cpu

    def __enter__(self) -> Timer:
        self.t0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall.append((time.perf_counter() - self.t0) * 1000)
        self.cpu.append((time.process_time() - self.c0) * 1000)


def _ms(samples: list[float]) -> dict[str, float]:
    samples = sorted(samples)
    return {"p50": round(statistics.median(samples), 2), "min": round(samples[0], 2),
            "max": round(samples[-1], 2), "n": len(samples)}


def bench_stats(db: Path, runs: int) -> dict[str, Any]:
    table = play_200_shots()
    store = Store(db)
    store.open()
    write_table(store, table)
    store.close()
    store = Store(db)
    store.open()
    conn = store.reader_connection()
    events, _ = load_events(conn, "bench", 1, None)
    record = build_match(events, "bench")
    played = sum(1 for s in record.shots if s.played)
    core, from_store, with_json = ([], []), ([], []), ([], [])
    summary = match_row(conn, "bench", 1)
    assert summary is not None
    for _ in range(runs):
        with Timer(*core):
            build_match(events, "bench")
        with Timer(*from_store):
            built = build_from_store(conn, summary, None)
        with Timer(*with_json):
            json.dumps(record_json(summary, build_from_store(conn, summary, None)))
    store.close()
    return {"events": len(events), "attempts": len(built.shots), "shots_played": played,
            "core_ms": _ms(core[0]), "core_cpu_ms": _ms(core[1]),
            "from_store_ms": _ms(from_store[0]), "from_store_cpu_ms": _ms(from_store[1]),
            "from_store_json_ms": _ms(with_json[0]),
            "from_store_json_cpu_ms": _ms(with_json[1])}


def fill_matches(store: Store, tables: int, per_table: int) -> None:
    """``tables`` x ``per_table`` matches through the store (the index is written by it)."""
    t0 = 1_700_000_000_000
    for t in range(tables):
        table_id = f"t{t:03d}"
        seq = 0
        for n in range(1, per_table + 1):
            at = t0 + (n * tables + t) * 1000
            state = {"seq": 0, "frame": 1, "match": {"number": n, "score": [1, 0],
                                                   "winner": 0, "over": True}}
            opening = ({"type": "table.created", "data": {
                "table": table_id, "players": ["A", "B"], "timer": True, "race_to": 1,
                "first_breaker": 0, "profile": {}}} if n == 1 else
                {"type": "match.started", "data": {
                    "number": n, "players": ["A", "B"], "timer": True, "race_to": 1,
                    "first_breaker": 0, "profile": {}}})
            events = [opening,
                      {"type": "frame.started", "data": {"frame": 1, "breaker": 0}},
                      {"type": "frame.ended", "data": {"frame": 1, "winner": 0,
                                                       "reason": "referee"}},
                      {"type": "match.ended", "data": {"winner": 0, "score": [1, 0]}}]
            for e in events:
                seq += 1
                e.update(seq=seq, at=at, table=table_id, state=state)
            state["seq"] = seq
            if n == 1:
                core = TableClock(["A", "B"], race_to=1).to_dict()
                store.create_table(table_id, {}, core, events, seq, created_at=at)
            else:
                store.append(table_id, events, None, seq)


async def _http_walk(db: Path, pages: int) -> dict[str, Any]:
    import httpx

    from clock_service.edges.cli.main import table_app
    from clock_service.service.settings import Settings

    app = table_app(Settings(db=str(db), default_table=None, command_rate=0, read_rate=0))
    walks, firsts = [], []
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            for _ in range(pages):
                t0 = time.perf_counter()
                after, seen = None, 0
                while True:
                    url = "/api/matches?limit=200" + (f"&after={after}" if after else "")
                    page = (await client.get(url)).json()
                    seen += len(page["matches"])
                    after = page["next"]
                    if after is None:
                        break
                walks.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                await client.get("/api/matches?limit=200")
                firsts.append((time.perf_counter() - t0) * 1000)
    return {"listed": seen, "walk_all_ms": _ms(walks), "first_page_ms": _ms(firsts)}


def bench_listing(db: Path, runs: int) -> dict[str, Any]:
    store = Store(db)
    store.open()
    fill_matches(store, 100, 100)
    store.close()
    store = Store(db)
    store.open()
    conn = store.reader_connection()
    first, middle, one_table, walk, walk_cpu = [], [], [], [], []
    total = conn.execute("SELECT count(*) FROM matches").fetchone()[0]
    cursor = list_matches_json(conn, limit=200)[1]
    for _ in range(runs):
        t0 = time.perf_counter()
        list_matches_json(conn, limit=200)
        first.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        for _ in range(25):
            page, cursor = list_matches_json(conn, after=cursor, limit=200)
        middle.append((time.perf_counter() - t0) * 1000 / 25)
        t0 = time.perf_counter()
        list_matches_json(conn, table="t050", limit=200)
        one_table.append((time.perf_counter() - t0) * 1000)
        with Timer(walk, walk_cpu):
            after, seen = None, 0
            while True:
                page, after = list_matches_json(conn, after=after, limit=200)
                seen += page.count("\"id\":")
                if after is None:
                    break
        cursor = list_matches_json(conn, limit=200)[1]
    store.close()
    http = asyncio.run(_http_walk(db, max(1, runs // 4)))
    return {"matches": total, "walked": seen, "page_first_ms": _ms(first),
            "page_by_cursor_ms": _ms(middle), "page_one_table_ms": _ms(one_table),
            "walk_all_10000_ms": _ms(walk), "walk_all_10000_cpu_ms": _ms(walk_cpu),
            "http": http}


def bench_server(quick: bool) -> dict[str, Any]:
    """Expiry lateness with and without 8 readers hammering the reports."""
    import threading
    import urllib.request

    from harness.server import ServerProcess

    seconds = 4 if quick else 15
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "server.db"
        store = Store(db)
        store.open()
        write_table(store, play_200_shots())
        store.close()
        server = ServerProcess(db, env={"SHOTCLOCK_COMMAND_RATE": "0",
                                        "SHOTCLOCK_READ_RATE": "0"}).start()
        try:
            status, _ = server.post("/api/tables", {
                "id": "x", "players": ["A", "B"],
                "profile": {"shot_ms": 400, "floor_ms": 400, "warnings_ms": [200]}})
            assert status == 201

            def expiries(duration: float) -> list[float]:
                last = server.get("/api/tables/x")["seq"]
                end = time.monotonic() + duration
                while time.monotonic() < end:
                    server.command("x", "start")
                    time.sleep(0.5)
                    server.command("x", "hand_back")
                    server.command("x", "new_frame", reason="bench")
                events = server.get(f"/api/tables/x/events?since={last}&limit=10000")
                if isinstance(events, dict):  # a paginated shape
                    events = events.get("events", [])
                return [e["data"]["late_ms"] for e in events if e["type"] == "clock.expired"]

            quiet = expiries(seconds)
            stop = threading.Event()
            fetched = [0]
            paths = ["/report?match=bench.1&lang=ru", "/report?match=bench.1&lang=en",
                     "/api/matches/bench.1/shots.csv", "/api/matches/bench.1/charts/shots.svg",
                     "/api/matches/bench.1/charts/timeline.svg", "/api/matches/bench.1"]

            def reader(k: int) -> None:
                i = k
                while not stop.is_set():
                    with urllib.request.urlopen(server.url + paths[i % len(paths)],
                                                timeout=30) as r:
                        r.read()
                    fetched[0] += 1
                    i += 1

            readers = [threading.Thread(target=reader, args=(k,), daemon=True)
                       for k in range(8)]
            for r in readers:
                r.start()
            t0 = time.monotonic()
            loaded = expiries(seconds)
            elapsed = time.monotonic() - t0
            stop.set()
            for r in readers:
                r.join(timeout=30)
        finally:
            server.stop()
    return {"quiet_late_ms": _ms(quiet) if quiet else None,
            "loaded_late_ms": _ms(loaded) if loaded else None,
            "reports_per_s": round(fetched[0] / elapsed, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of seconds")
    parser.add_argument("--no-server", action="store_true", help="skip the server scenario")
    args = parser.parse_args()
    runs = 5 if args.quick else 30
    with tempfile.TemporaryDirectory() as tmp:
        results: dict[str, Any] = {"stats_200_shots": bench_stats(Path(tmp) / "s.db", runs)}
        s = results["stats_200_shots"]
        print(f"200-shot match ({s['events']} events, {s['attempts']} timed attempts), p50 "
              f"wall / CPU: core {s['core_ms']['p50']} / {s['core_cpu_ms']['p50']} ms; from "
              f"the store {s['from_store_ms']['p50']} / {s['from_store_cpu_ms']['p50']} ms; "
              f"with the JSON response {s['from_store_json_ms']['p50']} / "
              f"{s['from_store_json_cpu_ms']['p50']} ms", flush=True)
        results["listing_10000"] = bench_listing(Path(tmp) / "l.db", runs)
        li = results["listing_10000"]
        print(f"listing {li['matches']} matches: first page of 200 p50 "
              f"{li['page_first_ms']['p50']} ms, page by cursor p50 "
              f"{li['page_by_cursor_ms']['p50']} ms, one table's page p50 "
              f"{li['page_one_table_ms']['p50']} ms; all {li['walked']} in 50 pages p50 "
              f"{li['walk_all_10000_ms']['p50']} ms (CPU {li['walk_all_10000_cpu_ms']['p50']}); "
              f"over HTTP: first page p50 {li['http']['first_page_ms']['p50']} ms, all "
              f"p50 {li['http']['walk_all_ms']['p50']} ms", flush=True)
    if not args.no_server:
        results["expiry_under_report_load"] = sv = bench_server(args.quick)
        print(f"expiry late with no readers: {sv['quiet_late_ms']}; with 8 readers "
              f"({sv['reports_per_s']} reports/s): {sv['loaded_late_ms']}", flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "reports.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
