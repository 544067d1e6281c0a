"""Warnings without an fsync of their own, and a power cut (issue 19, docs/RULES.md I19).

A shot's warnings are committed without fsync (at most one fsync per command, warnings
firing or not); a power cut may lose them after they were sent. These tests make that cut
for real on the files: the store's files are copied as they are after the last synced
commit (what a disk holds when the page cache is lost), the service then runs on and sends
the warning, and the copy is what the next start finds. Fake clock, real SQLite files.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from clock_service.core.commands import Resume, Shot, Start, Turn
from clock_service.service.hub import Hub
from clock_service.service.runtime import Runtime
from clock_service.service.storage import Store
from clock_service.service.timesource import FakeTime
from tests.waiting import settle

SHORT = {"shot_ms": 30000, "floor_ms": 20000, "step_ms": 500, "extension_ms": 2000,
         "warnings_ms": [2000, 1000]}
FILES = ("", "-wal")


def copy_files(db: Path, to: Path) -> None:
    to.mkdir()
    for suffix in FILES:
        if Path(f"{db}{suffix}").exists():
            shutil.copy2(f"{db}{suffix}", to / f"clock.db{suffix}")


def power_cut(runtime: Runtime, db: Path, on_disk: Path | None) -> None:
    """The machine goes down: no clean stop, the proof of life in memory (tmpfs) is gone,
    and the disk holds ``on_disk`` (the files as they were at the last fsync)."""
    runtime._running = False  # noqa: SLF001
    alive = runtime.store.alive_file
    assert alive is not None
    runtime.store.alive_file = None
    runtime.store.close()
    alive.remove()
    if on_disk is not None:
        for suffix in (*FILES, "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        for suffix in FILES:
            if (on_disk / f"clock.db{suffix}").exists():
                shutil.copy2(on_disk / f"clock.db{suffix}", f"{db}{suffix}")


async def test_warnings_cost_no_fsync_of_their_own(tmp_path: Path) -> None:
    time = FakeTime()
    rt = Runtime(Store(tmp_path / "clock.db"), time, Hub())
    await rt.start(default_table=None)
    try:
        await rt.create_table("t", ["A", "B"], profile=SHORT)
        await settle(rt)
        synced0 = rt.store.commits - rt.store.unsynced_commits
        commands = 0
        for _ in range(5):
            state = await rt.command("t", Start())
            time.advance(state["remaining_ms"] - 500)  # both warnings fire (2 s, 1 s left)
            await settle(rt)
            await rt.command("t", Shot())
            await rt.command("t", Turn())
            commands += 3
        await settle(rt)
        types = [e["type"] for e in await rt.events_since("t", 0)]
        assert types.count("clock.warning") == 10
        synced = rt.store.commits - rt.store.unsynced_commits - synced0
        # The warnings' commits (two may share one) had no fsync.
        assert 5 <= rt.store.unsynced_commits <= 10
        assert synced <= commands  # at most one fsync per command
        # The expiry is the clock's own command: synced (it is never derived again).
        synced0 = rt.store.commits - rt.store.unsynced_commits
        state = await rt.command("t", Start())
        time.advance(state["remaining_ms"] + 10)
        await settle(rt)
        assert rt.store.commits - rt.store.unsynced_commits - synced0 == 2  # start, expiry
        assert "clock.expired" in [e["type"] for e in await rt.events_since("t", 0)][-3:]
    finally:
        await rt.stop()


async def test_a_warning_sent_then_lost_in_a_power_cut_keeps_its_seq(tmp_path: Path) -> None:
    time = FakeTime()
    db = tmp_path / "clock.db"
    first = Runtime(Store(db), time, Hub())
    await first.start(default_table=None)
    await first.create_table("t", ["A", "B"], profile=SHORT)
    await first.command("t", Start())  # synced: the disk has the clock running
    await settle(first)
    started_at = time.now_ms()
    copy_files(db, tmp_path / "disk")
    time.advance(SHORT["shot_ms"] - 1500)  # the 2 s warning fires and is sent
    await settle(first)
    warning = next(e for e in await first.events_since("t", 0) if e["type"] == "clock.warning")
    assert first.tables["t"].published_seq == warning["seq"]  # sent to the clients
    power_cut(first, db, tmp_path / "disk")  # its commit had no fsync: lost
    time.advance(120_000)

    second = Runtime(Store(db), time, Hub())
    await second.start(default_table=None)
    try:
        await settle(second)
        events = await second.events_since("t", 0)
        seqs = [e["seq"] for e in events]
        assert seqs == list(range(1, len(events) + 1))
        again = events[warning["seq"] - 1]
        # The warning clients saw has the same seq and is the same event.
        assert {k: v for k, v in again.items() if k != "state"} == \
            {k: v for k, v in warning.items() if k != "state"}
        # The 1 s warning, due after the cut, is derived too (its seq may have been seen);
        # then the pause, at the time the last saved event had: the start (I19).
        tail = events[warning["seq"]:]
        assert [e["type"] for e in tail] == ["clock.warning", "clock.paused"]
        assert tail[0]["data"]["threshold_ms"] == 1000
        assert tail[1]["data"]["reason"] == "power_lost"
        assert tail[1]["data"]["remaining_ms"] == SHORT["shot_ms"]
        state = second.state("t")
        assert (state["phase"], state["remaining_ms"]) == ("paused", SHORT["shot_ms"])
        faults = [f for f in second.health.faults("t") if f["code"] == "power_lost"]
        assert len(faults) == 1 and faults[0]["level"] == "warning"
        assert faults[0]["vars"]["at"] in faults[0]["message"]
        assert int(started_at) <= tail[1]["at"]
        # The referee resumes: the notice goes, and the warnings are ahead again.
        await second.command("t", Resume())
        assert not [f for f in second.health.faults("t") if f["code"] == "power_lost"]
        time.advance(SHORT["shot_ms"] - 500)
        await settle(second)
        after = await second.events_since("t", tail[1]["seq"])
        assert [e["type"] for e in after] == ["clock.resumed", "clock.warning", "clock.warning"]
    finally:
        await second.stop()


async def test_a_power_cut_is_told_apart_from_a_kill_and_a_clean_stop(tmp_path: Path) -> None:
    time = FakeTime()
    db = tmp_path / "clock.db"

    async def run_and_end(how: str) -> dict[str, Any]:
        rt = Runtime(Store(db), time, Hub())
        await rt.start(default_table=None)
        if "t" not in rt.tables:
            await rt.create_table("t", ["A", "B"], profile=SHORT)
        else:
            time.advance(100)
            await rt.command("t", Resume())
        time.advance(200)  # less than a heartbeat: the proof of life is the start's
        await settle(rt)
        if how == "stop":
            await rt.stop()
        elif how == "kill":  # the process dies; the file in memory stays
            rt._running = False  # noqa: SLF001
            rt.store.alive_file = None
            rt.store.close()
        else:
            power_cut(rt, db, None)
        time.advance(5000)
        again = Runtime(Store(db), time, Hub())
        await again.start(default_table=None)
        await settle(again)
        last = (await again.events_since("t", 0))[-1]
        codes = [f["code"] for f in again.health.faults("t")]
        await again.stop()
        return {"type": last["type"], "reason": last["data"].get("reason"),
                "power_lost": "power_lost" in codes}

    first = Runtime(Store(db), time, Hub())
    await first.start(default_table=None)
    await first.create_table("t", ["A", "B"], profile=SHORT)
    await first.command("t", Start())
    await first.stop()
    for how, reason in (("kill", "restart"), ("stop", "restart"), ("power", "power_lost")):
        got = await run_and_end(how)
        assert got == {"type": "clock.paused", "reason": reason,
                       "power_lost": reason == "power_lost"}, how


@pytest.mark.parametrize("synchronous", ["FULL"])
async def test_the_store_is_back_to_full_sync_after_a_warning(tmp_path: Path,
                                                              synchronous: str) -> None:
    time = FakeTime()
    rt = Runtime(Store(tmp_path / "clock.db", synchronous=synchronous), time, Hub())
    await rt.start(default_table=None)
    try:
        await rt.create_table("t", ["A", "B"], profile=SHORT)
        await rt.command("t", Start())
        time.advance(SHORT["shot_ms"] - 1500)
        await settle(rt)
        assert rt.store.unsynced_commits == 1
        # PRAGMA synchronous: 2 = FULL (read on the writer's own connection, after it).
        assert rt.store._writer.execute("PRAGMA synchronous").fetchone()[0] == 2  # noqa: SLF001
    finally:
        await rt.stop()
