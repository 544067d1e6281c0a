"""What the store writes (issue 19): lean events, undo checkpoints in O(change), nothing
while nothing happens, the proof of life in memory. Fake clock, real SQLite file."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from clock_service.core.clock import UNDO_DEPTH
from clock_service.core.commands import NewMatch, Pause, Resume, Shot, Start, Turn, Undo
from clock_service.service.hub import Hub
from clock_service.service.runtime import HEARTBEAT_MS, Runtime
from clock_service.service.storage import Store
from clock_service.service.timesource import FakeTime
from tests.waiting import until_async

SHORT = {"shot_ms": 30000, "floor_ms": 20000, "step_ms": 500, "extension_ms": 2000,
         "warnings_ms": [2000, 1000]}


async def settle(runtime: Runtime) -> None:
    for _ in range(5000):
        if all(t.published_seq == t.seq for t in runtime.tables.values()) \
                and runtime.store.pending == 0:
            return
        await asyncio.sleep(0.001)
    raise AssertionError("the store did not catch up")


@pytest.fixture
async def rt(tmp_path: Path):
    time = FakeTime()
    runtime = Runtime(Store(tmp_path / "clock.db"), time, Hub())
    await runtime.start(default_table=None)
    runtime.fake = time  # type: ignore[attr-defined]
    yield runtime
    await runtime.stop()


def rows(db: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


async def play(rt: Runtime, table: str, shots: int) -> None:
    time: FakeTime = rt.fake  # type: ignore[attr-defined]
    for i in range(shots):
        await rt.command(table, Start())
        time.advance(1500)
        if i % 5 == 2:
            await rt.command(table, Pause())
            await rt.command(table, Resume())
        await rt.command(table, Shot())
        await rt.command(table, Turn())
    await settle(rt)


async def test_events_are_stored_lean_and_sent_live_with_the_state(rt: Runtime) -> None:
    await rt.create_table("t", ["A", "B"], profile=SHORT)
    sub = rt.hub.subscribe("t")
    await play(rt, "t", 30)
    db = rt.store.path
    bodies = [json.loads(b) for (b,) in rows(db, "SELECT body FROM events")]
    assert len(bodies) > 100 and not any("state" in b for b in bodies)
    # Live: every event with the state after its command; for a command's events the
    # same state (the batch's), encoded once.
    live = []
    while not sub.queue.empty():
        item = sub.queue.get_nowait()
        assert item is not None
        live.append(json.loads(item[1]))
    assert live and all(m["state"]["seq"] >= m["seq"] for m in live)
    stored = {e["seq"]: e for e in rt.store.events_since("t", 0)}
    for message in live:
        assert {k: v for k, v in message.items() if k != "state"} == stored[message["seq"]]
    # A few hundred bytes a row (it was ~1.2 KB of state each, an overflow page).
    (average,) = rows(db, "SELECT avg(length(body) + coalesce(length(proj), 0)) "
                          "FROM events")[0]
    assert average < 250, average
    # The batch column keeps what the reports' digest read of the state: the batch's seq.
    batches = rows(db, "SELECT seq, batch FROM events WHERE batch IS NOT NULL")
    assert all(batch > seq for seq, batch in batches)


async def test_undo_checkpoints_are_rows_written_one_per_step(rt: Runtime) -> None:
    time: FakeTime = rt.fake  # type: ignore[attr-defined]
    await rt.create_table("t", ["A", "B"], profile=SHORT)
    db = rt.store.path
    counts = []
    for _ in range(UNDO_DEPTH + 5):
        await rt.command("t", Start())
        time.advance(700)
        await rt.command("t", Shot())
        await settle(rt)
        counts.append(rows(db, "SELECT count(*), min(n), max(n) FROM undo")[0])
    # Two steps a loop: rows grow by two, then stay at the depth (the oldest dropped).
    assert [c[0] for c in counts[:3]] == [2, 4, 6]
    assert all(c[0] <= UNDO_DEPTH for c in counts) and counts[-1][0] == UNDO_DEPTH
    assert counts[-1][2] - counts[-1][1] + 1 == UNDO_DEPTH  # numbered on: never rewritten
    core = rows(db, "SELECT core FROM tables WHERE id = 't'")[0][0]
    assert "history" not in json.loads(core) and len(core) < 2500
    # An undo drops its row; the state it restores is the checkpoint's.
    before = rt.state("t")
    state = await rt.command("t", Undo())
    await settle(rt)
    assert (state["can_undo"], state["phase"]) == ("start", "paused")
    assert rows(db, "SELECT count(*) FROM undo")[0][0] == UNDO_DEPTH - 1
    assert before["seq"] < state["seq"]


async def test_undo_works_across_a_restart_from_the_stored_checkpoints(tmp_path: Path) -> None:
    time = FakeTime()
    db = tmp_path / "clock.db"
    first = Runtime(Store(db), time)
    await first.start(default_table=None)
    await first.create_table("t", ["A", "B"], profile=SHORT)
    await first.command("t", Start())
    time.advance(1000)
    await first.command("t", Shot())
    await first.command("t", Turn())
    await first.stop()
    second = Runtime(Store(db), time)
    await second.start(default_table=None)
    try:
        assert second.state("t")["can_undo"] == "turn"
        state = await second.command("t", Undo())
        assert (state["player"], state["can_undo"]) == (0, "shot")
        state = await second.command("t", Undo())  # the shot: running again, frozen
        assert (state["can_undo"], state["phase"]) == ("start", "paused")
        await second.command("t", Resume())  # a new step after the undos: a new row
        await settle(second)
        ns = [n for (n,) in rows(str(db), "SELECT n FROM undo ORDER BY n")]
        assert len(ns) == 2 and ns == sorted(set(ns)), ns
        # A new match ends the correction history: no row left.
        await second.command("t", Shot())
        await second.command("t", NewMatch(reason="test"))
        await settle(second)
        assert rows(str(db), "SELECT count(*) FROM undo")[0][0] == 0
    finally:
        await second.stop()


async def test_nothing_is_written_while_no_clock_runs(rt: Runtime) -> None:
    time: FakeTime = rt.fake  # type: ignore[attr-defined]
    await rt.create_table("t", ["A", "B"], profile=SHORT)
    await rt.command("t", Start())
    await rt.command("t", Pause())
    await settle(rt)
    commits, alive = rt.store.commits, rt.store.alive_file
    assert alive is not None
    writes = alive.writes
    time.advance(60 * 60 * 1000)  # an idle hour: 7,200 heartbeats' worth of time
    await asyncio.sleep(0.05)
    assert (rt.store.commits, alive.writes) == (commits, writes)
    # While a clock runs: a proof of life every beat, in memory; no commit of its own.
    await rt.command("t", Resume())
    await settle(rt)
    commits = rt.store.commits
    time.advance(10 * HEARTBEAT_MS + 1)
    await until_async(lambda: alive.writes - writes >= 10, 5.0)
    assert rt.store.commits == commits
    assert alive.read() == pytest.approx(time.now_ms(), abs=HEARTBEAT_MS)


async def test_a_killed_service_gives_back_no_time_from_its_proof_of_life(
        tmp_path: Path) -> None:
    time = FakeTime()
    db = tmp_path / "clock.db"
    first = Runtime(Store(db), time)
    await first.start(default_table=None)
    await first.create_table("t", ["A", "B"], profile=SHORT)
    await first.command("t", Start())
    started = time.now_ms()
    time.advance(7 * HEARTBEAT_MS + 100)  # last proof of life 3.5 s after the start
    await settle(first)
    # killed: no stop, no clean proof of life in the store; the writer just ends
    first._running = False  # noqa: SLF001
    assert first.store.alive_file is not None
    alive_path = first.store.alive_file.path
    first.store.alive_file = None  # the process is gone; the file in memory stays
    first.store.close()
    assert alive_path.exists()
    time.advance(60_000)
    second = Runtime(Store(db), time)
    await second.start(default_table=None)
    try:
        state = second.state("t")
        had_at_kill = SHORT["shot_ms"] - (7 * HEARTBEAT_MS + 100)
        # At most the time it had at its last proof of life, never more than at the kill
        # plus one beat: 30 s - 3.5 s.
        assert state["phase"] == "paused"
        assert had_at_kill <= state["remaining_ms"] <= had_at_kill + HEARTBEAT_MS
        assert state["remaining_ms"] == SHORT["shot_ms"] - 7 * HEARTBEAT_MS
        assert started < time.now_ms()
    finally:
        await second.stop()
    assert not alive_path.exists()  # a clean stop removes it


def test_a_new_store_is_made_in_incremental_vacuum_mode_and_reopens_without_a_vacuum(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """auto_vacuum must be set before the file is switched to WAL (which writes its header):
    a new store made in NONE mode was VACUUMed at its second open, reading every page."""
    path = tmp_path / "new.db"
    for _ in range(2):
        store = Store(path)
        store.open()
        store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # INCREMENTAL
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert "finishing the event store's migration" not in caplog.text
