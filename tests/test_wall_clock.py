"""Event times never go backwards within a store (issue 22 point 4): a Pi has no real-time
clock, so after a power cut the wall clock may start before the events already stored.
The service's timeline then continues after the store's last event and says so; a wall-clock
step while it runs is logged too. Real SQLite, RealTime with an injected wall clock."""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path

import pytest

from clock_service.core.commands import Start, Turn
from clock_service.service.runtime import Runtime
from clock_service.service.storage import Store
from clock_service.service.timesource import RealTime
from tests.waiting import until_async

HOUR_MS = 3_600_000.0


def wall(offset_ms: float) -> RealTime:
    return RealTime(lambda: time.time() * 1000.0 + offset_ms)


def test_not_before_moves_the_timeline_only_when_the_wall_clock_is_behind(
        caplog: pytest.LogCaptureFixture) -> None:
    ahead = wall(0)
    assert ahead.not_before(ahead.now_ms() - 10_000) == 0.0
    assert not caplog.records
    behind = wall(-HOUR_MS)
    last = time.time() * 1000.0  # the store's last event, an hour "after" this wall clock
    with caplog.at_level(logging.WARNING, "shotclock.time"):
        shift = behind.not_before(last)
    assert HOUR_MS - 5_000 < shift < HOUR_MS + 5_000
    assert behind.now_ms() > last and behind.held_ms == shift
    (record,) = caplog.records
    assert "behind the store's last event" in record.getMessage()
    assert f"{shift / 1000:.3f} s" in record.getMessage()


async def test_events_after_a_restart_with_the_clock_set_back_come_after_the_stored_ones(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "clock.db"
    first = Runtime(Store(db), wall(0))
    await first.start(default_table=None)
    await first.create_table("t", ["A", "B"])
    await first.command("t", Turn())
    await first.command("t", Start())
    await first.stop()
    stored = await _events(db)
    # a power cut; fake-hwclock restores a time an hour before the last event
    with caplog.at_level(logging.WARNING, "shotclock.time"):
        second = Runtime(Store(db), wall(-HOUR_MS))
        await second.start(default_table=None)
    try:
        events = await second.events_since("t", 0)
        ats = [e["at"] for e in events]
        assert len(events) > len(stored)
        assert ats == sorted(ats), ats  # never backwards within the store
        assert events[len(stored)]["at"] > stored[-1]["at"]
        assert any("behind the store's last event" in r.getMessage() for r in caplog.records)
    finally:
        await second.stop()


async def _events(db: Path) -> list[dict[str, int]]:
    import sqlite3

    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT seq, at FROM events WHERE table_id = 't' ORDER BY seq")
        return [{"seq": seq, "at": at} for seq, at in rows]


async def test_a_wall_clock_step_while_running_is_logged_and_moves_no_event_time(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    step = {"ms": 0.0}
    clock = RealTime(lambda: time.time() * 1000.0 + step["ms"])
    runtime = Runtime(Store(tmp_path / "clock.db"), clock)
    await runtime.start(default_table=None)
    try:
        before = clock.now_ms()
        step["ms"] = 7 * HOUR_MS  # NTP arrives after a boot at the last shutdown's time
        with caplog.at_level(logging.WARNING, "clock_service.service.runtime"):
            runtime._beat()  # the heartbeat (every 500 ms) notices it
        assert clock.now_ms() - before < 60_000  # the timeline did not jump
        (record,) = [r for r in caplog.records if "stepped" in r.getMessage()]
        # the step as the beat saw it: 7 h, and the real time between the two readings
        # (3 ms once on a loaded machine: "+25200.003 s")
        stepped = re.search(r"stepped by ([+-][0-9.]+) s", record.getMessage())
        assert stepped and abs(float(stepped[1]) - 25200.0) < 1.0, record.getMessage()
        caplog.clear()
        runtime._beat()  # logged once, not every beat
        assert not [r for r in caplog.records if "stepped" in r.getMessage()]
    finally:
        await runtime.stop()


# -- a big store does not hold READY back (issue 22 point 4) -----------------------------------

def _big_store(path: Path, rows: int = 20_000) -> None:
    import sqlite3

    store = Store(path)
    store.open()
    store.close()
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE filler (n INTEGER PRIMARY KEY, x TEXT)")
        db.executemany("INSERT INTO filler (x) VALUES (?)", (("x" * 200,) for _ in range(rows)))
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # all of it in the main file
    db.close()


def test_a_check_past_its_budget_returns_and_finishes_later(tmp_path: Path) -> None:
    db = tmp_path / "big.db"
    _big_store(db)
    store = Store(db)
    store.lock()
    assert store.check(budget_s=0.0) is False and store.check_pending
    store.open()  # no second check in the way of READY
    results: list[object] = []
    import threading

    done = threading.Event()
    store.check_later(lambda problem: (results.append(problem), done.set()))
    assert done.wait(30)
    assert results == [None] and not store.check_pending
    store.close()
    small = Store(tmp_path / "small.db")
    assert small.check(budget_s=10.0) is True  # (no file yet: nothing to check)


async def test_damage_found_after_start_is_a_store_corrupt_fault_and_the_clock_runs(
        tmp_path: Path) -> None:

    db = tmp_path / "big.db"
    _big_store(db)
    with open(db, "r+b") as f:  # a leaf page of the filler table, near the file's end
        f.seek(db.stat().st_size - 3 * 4096)
        f.write(b"\xff" * 4096)
    store = Store(db)
    store.lock()
    store.check_pending = True  # as when check(budget_s) ran out (the test above)
    runtime = Runtime(store, wall(0))
    await runtime.start(default_table=None)
    try:
        await runtime.create_table("t", ["A", "B"])
        faults = await until_async(runtime.health.faults, 15, 0.05, "a fault")
        assert [f["code"] for f in faults] == ["store_corrupt"], faults
        assert "failed its integrity check" in faults[0]["message"]
        await runtime.command("t", Turn())  # the clock still takes commands
        await runtime.command("t", Start())
        assert runtime.state("t")["phase"] == "running"
    finally:
        await runtime.stop()
