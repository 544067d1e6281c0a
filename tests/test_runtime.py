"""The asyncio shell with the fake clock and a real SQLite file: no test sleeps for the clock."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clock_service.core.commands import Extension, Pause, Shot, Start, Turn
from clock_service.core.errors import InvalidInput, RuleRefusal, UnknownTable
from clock_service.service.hub import Hub
from clock_service.service.runtime import Runtime
from clock_service.service.storage import Store
from clock_service.service.timesource import FakeTime
from tests.waiting import settle

SHORT = {"shot_ms": 3000, "floor_ms": 2000, "step_ms": 500, "extension_ms": 2000,
         "warnings_ms": [2000, 1000]}


@pytest.fixture
async def rt(tmp_path: Path):
    time = FakeTime()
    runtime = Runtime(Store(tmp_path / "clock.db"), time, Hub())
    await runtime.start(default_table=None)
    runtime.fake = time  # type: ignore[attr-defined]
    yield runtime
    await runtime.stop()


async def test_the_runtime_wakes_at_each_deadline_and_expires_on_time(rt: Runtime) -> None:
    time: FakeTime = rt.fake  # type: ignore[attr-defined]
    seen: list[tuple[str, float]] = []
    rt.listen(lambda tid, events, state: seen.extend(
        (e["type"], time.now_ms()) for e in events))
    await rt.create_table("t", ["A", "B"], profile=SHORT)
    start = time.now_ms()
    await rt.command("t", Start())
    time.advance(5000)  # fires every timer due on the way, each at its own instant
    await settle(rt)
    timeline = [(kind, at - start) for kind, at in seen if kind.startswith("clock.")
                or kind in ("foul", "turn")]
    assert timeline == [
        ("clock.started", 0), ("clock.warning", 1000), ("clock.warning", 2000),
        ("clock.expired", 3000), ("foul", 3000), ("turn", 3000),
    ]
    events = await rt.events_since("t", 0)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-3]["data"]["late_ms"] == 0


async def test_many_tables_each_expire_at_their_own_deadline(rt: Runtime) -> None:
    time: FakeTime = rt.fake  # type: ignore[attr-defined]
    expired: dict[str, float] = {}

    def on_events(tid: str, events: list[dict[str, Any]], state: dict[str, Any]) -> None:
        if any(e["type"] == "clock.expired" for e in events):
            expired[tid] = time.now_ms()

    rt.listen(on_events)
    deadlines = {}
    for i in range(20):
        await rt.create_table(f"t{i}", ["A", "B"], profile=SHORT)
        time.advance(7)
        state = await rt.command(f"t{i}", Start())
        deadlines[f"t{i}"] = state["deadline"]
    time.advance(4000)
    assert expired == deadlines


async def test_a_refused_command_changes_nothing_in_state_or_store(rt: Runtime) -> None:
    await rt.create_table("t", ["A", "B"], profile=SHORT)
    await rt.command("t", Extension())
    await settle(rt)
    before_state = rt.state("t")
    before_events = rt.store.event_count("t")
    with pytest.raises(RuleRefusal, match=r"12\.5"):
        await rt.command("t", Extension())
    with pytest.raises(RuleRefusal):
        await rt.command("t", Shot())
    await settle(rt)
    assert rt.state("t") == before_state
    assert rt.store.event_count("t") == before_events


async def test_a_press_after_the_deadline_publishes_the_expiry_then_refuses(rt: Runtime) -> None:
    time: FakeTime = rt.fake  # type: ignore[attr-defined]
    await rt.create_table("t", ["A", "B"], profile=SHORT)
    await rt.command("t", Start())
    # The timer has not been driven (as if the loop were busy) when the press arrives.
    time._now += 3000  # noqa: SLF001 - move time without firing timers
    with pytest.raises(RuleRefusal) as info:
        await rt.command("t", Shot())
    assert info.value.rule == "I17"
    await settle(rt)
    types = [e["type"] for e in await rt.events_since("t", 0)]
    assert "clock.expired" in types and types[-1] == "turn"


async def test_unknown_table(rt: Runtime) -> None:
    with pytest.raises(UnknownTable):
        await rt.command("nope", Start())


@pytest.mark.parametrize("table_id", ["7\n", "", "..", "a/b", "a\x00", "z" * 33, "Стол", 7])
async def test_a_table_id_is_the_whole_string_of_the_rule(rt: Runtime, table_id: Any) -> None:
    """One rule (clock_service.core.ids), matched whole: "7\\n" passed ``^...$`` before."""
    with pytest.raises(InvalidInput) as refused:
        await rt.create_table(table_id, ["A", "B"])
    assert refused.value.code == "invalid_table_id" and rt.tables == {}


async def test_restart_rebuilds_tables_and_pauses_a_running_clock(tmp_path: Path) -> None:
    time = FakeTime()
    db = tmp_path / "clock.db"
    first = Runtime(Store(db), time)
    await first.start(default_table=None)
    await first.create_table("t", ["A", "B"], profile=SHORT)
    await first.command("t", Turn())
    await first.command("t", Start())
    time.advance(1200)  # a warning at 2 s left fired; heartbeats every 500 ms
    await settle(first)
    await first.stop()  # stop() records a last heartbeat, as a clean shutdown would
    time.advance(60_000)  # a minute of downtime
    second = Runtime(Store(db), time)
    await second.start(default_table=None)
    await settle(second)
    state = second.state("t")
    assert (state["phase"], state["remaining_ms"], state["player"], state["visit"]) == (
        "paused", 1800, 1, 2)
    events = await second.events_since("t", 0)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "clock.paused" and events[-1]["data"]["reason"] == "restart"
    await second.stop()


async def test_hub_gets_events_only_after_they_are_durable(rt: Runtime) -> None:
    await rt.create_table("t", ["A", "B"], profile=SHORT)
    sub = rt.hub.subscribe("t")
    state = await rt.command("t", Start())
    stored = rt.store.events_since("t", 0)
    seq, text = sub.queue.get_nowait()  # type: ignore[misc]
    assert seq == state["seq"] and stored[-1]["seq"] == seq
    assert '"type":"clock.started"' in text


async def test_a_failing_listener_never_stops_the_clock(rt: Runtime) -> None:
    def broken(*_: Any) -> None:
        raise RuntimeError("display on fire")

    rt.listen(broken)
    await rt.create_table("t", ["A", "B"], profile=SHORT)
    state = await rt.command("t", Start())
    assert state["phase"] == "running"
    await rt.command("t", Pause())
    assert rt.state("t")["phase"] == "paused"


async def test_a_clock_started_between_heartbeats_recovers_no_more_than_its_limit(
        tmp_path: Path) -> None:
    time = FakeTime()
    db = tmp_path / "clock.db"
    first = Runtime(Store(db), time)
    await first.start(default_table=None)  # heartbeat now
    await first.create_table("t", ["A", "B"], profile=SHORT)
    time.advance(300)  # no heartbeat yet (every 500 ms)
    await first.command("t", Start())
    await settle(first)
    # crash: no shutdown hook, no last heartbeat
    first._running = False  # noqa: SLF001
    first.store.close()
    time.advance(60_000)
    second = Runtime(Store(db), time)
    await second.start(default_table=None)
    # alive at the later of the last heartbeat and the last event (the start itself)
    assert (second.state("t")["phase"], second.state("t")["remaining_ms"]) == ("paused", 3000)
    await second.stop()


def _failing_disk(store: Store, failures: int) -> list[int]:
    """Make the next ``failures`` commits fail as a full disk does; count the attempts."""
    import sqlite3

    real_commit = store._commit  # noqa: SLF001
    attempts = [0]

    def commit(conn: sqlite3.Connection, batch: list[Any]) -> None:
        attempts[0] += 1
        if attempts[0] <= failures:
            raise sqlite3.OperationalError("database or disk is full")
        real_commit(conn, batch)

    store._commit = commit  # type: ignore[method-assign]  # noqa: SLF001
    return attempts


async def test_a_failing_disk_delays_events_but_never_loses_or_reorders_them(
        rt: Runtime) -> None:
    await rt.create_table("t", ["A", "B"], profile=SHORT)
    sub = rt.hub.subscribe("t")
    attempts = _failing_disk(rt.store, failures=3)
    state = await rt.command("t", Start())  # retried until the disk takes it
    assert attempts[0] >= 4 and rt.store.write_errors >= 3
    assert state["phase"] == "running"
    await rt.command("t", Pause())
    published, statuses = [], []
    while not sub.queue.empty():
        item = sub.queue.get_nowait()
        assert item is not None
        if item[0]:
            published.append(item[0])
        else:  # no seq: a status message (the store fault raised, then cleared)
            statuses.append([f["code"] for f in json.loads(item[1])["faults"]])
    stored = [e["seq"] for e in await rt.events_since("t", 0)]
    assert stored == list(range(1, len(stored) + 1))
    assert published == stored[-2:]  # clock.started, clock.paused: in order, once each
    assert statuses == [["store_unwritable"], []]
    assert rt.health.faults() == [] and rt.health.components()["store"]["writable"]


async def test_a_disk_down_longer_than_the_wait_answers_503_and_catches_up(
        rt: Runtime) -> None:
    from clock_service.core.errors import StoreError

    await rt.create_table("t", ["A", "B"], profile=SHORT)
    rt.store_wait_s = 0.2
    _failing_disk(rt.store, failures=6)  # about 0.05+0.1+0.2+0.4+0.8 s of retries
    with pytest.raises(StoreError) as info:
        await rt.command("t", Start())
    assert info.value.code == "store_unavailable"
    assert rt.state("t")["phase"] == "running"  # applied: the clock did not wait on the disk
    await settle(rt)  # the disk recovers: the events land and are published, in order
    stored = [e["type"] for e in await rt.events_since("t", 0)]
    assert stored[-1] == "clock.started"
    assert rt.tables["t"].published_seq == rt.tables["t"].seq == len(stored)
