"""Bounded growth (issue 19): finished matches to one compressed file each, still listed,
addressable, replayable and re-importable, with the digest they had; the store's own
commands; the low-disk fault."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest

from clock_service.core.commands import NewMatch, Shot, Start
from clock_service.edges.cli.main import main
from clock_service.service.runtime import Runtime
from clock_service.service.storage import Store
from clock_service.service.storage.archive import archive_dir, read_match_file
from clock_service.service.storage.index import list_matches, rebuild_index
from clock_service.service.storage.records import load_events
from clock_service.service.timesource import FakeTime

DAY = 86_400_000


async def settle(rt: Runtime) -> None:
    for _ in range(5000):
        if all(t.published_seq == t.seq for t in rt.tables.values()) and not rt.store.pending:
            return
        await asyncio.sleep(0.001)
    raise AssertionError("the store did not catch up")  # not a silent read of a store behind


async def three_matches(db: Path) -> tuple[FakeTime, dict[str, str]]:
    """Table 7: matches 7.1 and 7.2 closed 40 days ago, 7.3 in play; their digests."""
    time = FakeTime()
    rt = Runtime(Store(db), time)
    await rt.start(default_table=None)
    await rt.create_table("7", ["A", "B"])
    for _ in range(2):
        for _ in range(5):
            await rt.command("7", Start())
            time.advance(1500)
            await rt.command("7", Shot())
        await rt.command("7", NewMatch(reason="left"))
    await rt.command("7", Start())
    await settle(rt)
    conn = sqlite3.connect(db)
    digests = {}
    for m in list_matches(conn)[0]:
        last = m["end_seq"] or conn.execute("SELECT max(seq) FROM events").fetchone()[0]
        digests[m["id"]] = load_events(conn, "7", m["start_seq"], last)[1]
    conn.close()
    await rt.stop()
    time.advance(40 * DAY)
    return time, digests


async def test_old_finished_matches_go_to_files_and_stay_whole(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    time, digests = await three_matches(db)
    store = Store(db)
    store.open()
    try:
        before = store.event_texts("7", 0, None, 1000)
        done = store.archive_matches_now(time.now_ms() - 30 * DAY)
        assert done == ["7.1", "7.2"]  # 7.3 is in play
        conn = sqlite3.connect(db)
        ranges = conn.execute("SELECT start_seq, end_seq FROM archived_matches").fetchall()
        stored = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        assert stored == len(before) - sum(b - a + 1 for a, b in ranges)
        # Replayable: the log has no gap, the same text for every event.
        assert store.event_texts("7", 0, None, 1000) == before
        assert store.event_texts("7", 3, 9, 4) == [r for r in before if 3 < r[0] <= 9][:4]
        # Listed, and the record's digest is the one it had in the store (and the file's).
        assert [m["id"] for m in list_matches(conn)[0]] == ["7.3", "7.2", "7.1"]
        for match_id in ("7.1", "7.2"):
            m = next(x for x in list_matches(conn)[0] if x["id"] == match_id)
            assert load_events(conn, "7", m["start_seq"], m["end_seq"])[1] == \
                digests[match_id]
            document = read_match_file(archive_dir(str(db)) / f"{match_id}.json.gz")
            assert document["digest"] == digests[match_id]
        # A rebuilt index keeps the archived matches' rows.
        conn.execute("BEGIN")
        rebuild_index(conn)
        conn.execute("COMMIT")
        assert [m["id"] for m in list_matches(conn)[0]] == ["7.3", "7.2", "7.1"]
        conn.close()
        # Re-imported: back in the store, no longer archived.
        assert store.import_match(archive_dir(str(db)) / "7.1.json.gz") == "7.1"
        conn = sqlite3.connect(db)
        assert conn.execute("SELECT count(*) FROM archived_matches").fetchone()[0] == 1
        conn.close()
        assert store.event_texts("7", 0, None, 1000) == before
        stats = store.stats()
        assert stats["archived_matches"] == 1 and stats["archive_bytes"] > 0
    finally:
        store.close()


async def test_shotclock_store_stats_and_archive(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "s.db"
    await three_matches(db)
    assert main(["store", "stats", "--db", str(db), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["events"] > 20 and stats["archived_matches"] == 0
    # The fake clock's matches ended in 2023: --days 30 takes both finished ones.
    assert await asyncio.to_thread(main, ["store", "archive", "--db", str(db)]) == 0
    assert "archived 2 finished matches" in capsys.readouterr().out
    assert main(["store", "stats", "--db", str(db)]) == 0
    assert "2 matches" in capsys.readouterr().out
    # Refused while a service holds the store.
    holder = Store(db)
    holder.lock()
    try:
        assert await asyncio.to_thread(main, ["store", "archive", "--db", str(db)]) == 75
    finally:
        holder.close()


async def test_low_disk_space_is_a_fault_before_writes_fail(tmp_path: Path) -> None:
    rt = Runtime(Store(tmp_path / "s.db"), FakeTime())
    rt.disk_low_bytes = 10**18  # more than any disk has
    await rt.start(default_table=None)
    try:
        fault = next(f for f in rt.health.faults() if f["code"] == "disk_low")
        assert fault["component"] == "store" and "SHOTCLOCK_DISK_LOW_MB" in fault["message"]
        rt.disk_low_bytes = 1
        rt.time.advance(61_000)  # type: ignore[attr-defined]
        assert not [f for f in rt.health.faults() if f["code"] == "disk_low"]
    finally:
        await rt.stop()
