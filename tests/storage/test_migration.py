"""A store written by the release before the storage package (tests/storage/fixtures:
every event carried the table's state, tables.core the undo history as full copies) opens
with this code, is migrated in place, and keeps every fact: every event replayable, the
digests of its matches as that release computed them, the undo history, the recovery."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from clock_service.core.commands import Undo
from clock_service.service.runtime import Runtime
from clock_service.service.storage import Store
from clock_service.service.storage.index import REFRESH_TYPES, list_matches
from clock_service.service.storage.records import load_events, open_read_only
from clock_service.service.timesource import FakeTime

FIXTURES = Path(__file__).parent / "fixtures"
EXPECTED = json.loads((FIXTURES / "v1_digests.json").read_text())
# The fixture's clock (make_v1_store.py): its last heartbeat, written by a clean stop.
STOPPED_AT = 1_764_000_046_850.0


@pytest.fixture
def v1_db(tmp_path: Path) -> Path:
    db = tmp_path / "v1.db"
    with gzip.open(FIXTURES / "v1_store.db.gz") as source, db.open("wb") as target:
        shutil.copyfileobj(source, target)
    return db


def digests(conn: sqlite3.Connection) -> dict[str, str]:
    """Each match's digest over its events up to the last seq the fixture's was taken at."""
    matches, _ = list_matches(conn, limit=200)
    out = {}
    for summary in matches:
        # Up to where the old release computed it (an open match has grown since).
        last = EXPECTED["matches"][summary["id"]]["last_seq"]
        _, digest = load_events(conn, summary["table"], summary["start_seq"], last)
        out[summary["id"]] = digest
    return out


def test_the_fixture_is_a_store_of_the_old_format(v1_db: Path) -> None:
    conn = sqlite3.connect(v1_db)
    assert conn.execute("SELECT count(*) FROM events WHERE json_type(body, '$.state') "
                        "= 'object'").fetchone()[0] == 78
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() is None
    histories = dict(conn.execute("SELECT id, json_array_length(core, '$.history') "
                                  "FROM tables").fetchall())
    assert histories == {"1": 1, "7": 3}


def test_a_read_only_reader_of_an_old_store_gets_the_same_digests(v1_db: Path) -> None:
    before = v1_db.read_bytes()
    conn = open_read_only(str(v1_db))
    assert digests(conn) == {k: v["digest"] for k, v in EXPECTED["matches"].items()}
    conn.close()
    assert v1_db.read_bytes() == before  # never written


async def test_an_old_store_is_migrated_in_place_and_keeps_every_fact(v1_db: Path) -> None:
    size_before = v1_db.stat().st_size
    time = FakeTime(STOPPED_AT + 60_000)
    rt = Runtime(Store(v1_db), time)
    await rt.start(default_table=None)
    try:
        assert rt.store.migrated
        conn = sqlite3.connect(v1_db)
        # Every event still there, none with the state, every one replayable in order.
        for table_id, count in EXPECTED["events"].items():
            assert conn.execute("SELECT count(*) FROM events WHERE table_id = ? AND seq <= ?",
                                (table_id, count)).fetchone()[0] == count
        assert conn.execute("SELECT count(*) FROM events WHERE json_type(body, '$.state') "
                            "IS NOT NULL").fetchone()[0] == 0
        for table_id, count in EXPECTED["events"].items():
            replay = rt.store.events_since(table_id, 0)[:count]
            assert [e["seq"] for e in replay] == list(range(1, count + 1))
            assert all(e["table"] == table_id.split("~")[0] and "data" in e for e in replay)
        # The digests of the matches, as the old release computed them (7.1 is over,
        # 9~1.1 closed by the archive: finished; the open ones up to the fixture's end).
        found = digests(conn)
        for match_id, expected in EXPECTED["matches"].items():
            assert found[match_id] == expected["digest"], match_id
        statuses = {m["id"]: (m["status"], m["score"]) for m in list_matches(conn)[0]}
        assert statuses == {k: (v["status"], v["score"])
                            for k, v in EXPECTED["matches"].items()}
        # The undo history moved out of the snapshot into its own rows.
        assert conn.execute("SELECT count(*) FROM undo WHERE table_id = '7'").fetchone()[0] \
            == 3
        assert all("history" not in json.loads(core)
                   for (core,) in conn.execute("SELECT core FROM tables"))
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental
        conn.close()
        # Table 1's clock was running at the clean stop: it comes back paused.
        assert rt.state("1")["phase"] == "paused"
        # Table 7's undo history works after the migration: the last step is taken back.
        assert rt.state("7")["can_undo"] == "start"
        state = await rt.command("7", Undo(reason="after the upgrade"))
        assert state["can_undo"] == "shot" and state["phase"] == "ready"
    finally:
        await rt.stop()
    assert v1_db.stat().st_size < size_before / 3
    # Opened again: nothing more to migrate.
    again = Store(v1_db)
    again.open()
    try:
        assert not again.migrated
    finally:
        again.close()


def test_a_migration_asks_systemd_to_wait_for_it(v1_db: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """It runs before READY: systemd's start timeout must not kill it (and restart it into
    the same migration): EXTEND_TIMEOUT_USEC while it runs."""
    import socket

    address = str(tmp_path / "notify.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(address)
    listener.settimeout(5)
    monkeypatch.setenv("NOTIFY_SOCKET", address)
    store = Store(v1_db)
    store.open()
    try:
        assert store.migrated
        message = listener.recv(4096).decode()
    finally:
        store.close()
        listener.close()
    assert message.startswith("EXTEND_TIMEOUT_USEC=30000000\nSTATUS=migrating the event store")


# Migrates the store in chunks of 20 events and is killed (SIGKILL) inside the third
# chunk's transaction, from SQLite's progress handler: a kill at any moment of a chunk.
KILLED_MIDWAY = """
import os, signal, sqlite3, sys
from clock_service.service.storage.index import REFRESH_TYPES
from clock_service.service.storage.schema import migrate

conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("PRAGMA synchronous=FULL")

def after_chunk(n):
    if n == 2:
        conn.set_progress_handler(
            lambda: os.kill(os.getpid(), signal.SIGKILL) if conn.in_transaction else 0, 1)

migrate(conn, REFRESH_TYPES, chunk=20, after_chunk=after_chunk)
print("not killed")
"""


async def test_a_migration_killed_midway_goes_on_when_the_store_opens_again(
        v1_db: Path) -> None:
    import signal
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", KILLED_MIDWAY, str(v1_db)], cwd=root,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr
    conn = sqlite3.connect(v1_db)
    # Two chunks of 20 committed; the third rolled back; not yet schema 2.
    left = conn.execute("SELECT count(*) FROM events WHERE json_type(body, '$.state') "
                        "IS NOT NULL").fetchone()[0]
    assert left == 78 - 40
    assert json.loads(conn.execute("SELECT value FROM meta WHERE key = 'migration_cursor'"
                                   ).fetchone()[0])
    assert conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() is None
    conn.close()
    # Half migrated, it still reads as it was (shotclock report, read-only).
    reader = open_read_only(str(v1_db))
    assert digests(reader) == {k: v["digest"] for k, v in EXPECTED["matches"].items()}
    reader.close()
    # Opened by the service: the migration goes on and finishes.
    rt = Runtime(Store(v1_db), FakeTime(STOPPED_AT + 60_000))
    await rt.start(default_table=None)
    try:
        assert rt.store.migrated
        for table_id, count in EXPECTED["events"].items():
            replay = rt.store.events_since(table_id, 0)[:count]
            assert [e["seq"] for e in replay] == list(range(1, count + 1))
            assert not [e for e in replay if "state" in e]
        conn = sqlite3.connect(v1_db)
        assert digests(conn) == {k: v["digest"] for k, v in EXPECTED["matches"].items()}
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == "2"
        assert conn.execute("SELECT value FROM meta WHERE key = 'migration_cursor'"
                            ).fetchone() is None
        assert conn.execute("SELECT count(*) FROM undo").fetchone()[0] == 4
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental
        conn.close()
    finally:
        await rt.stop()


def test_a_migration_killed_in_its_vacuum_finishes_it_at_the_next_open(v1_db: Path) -> None:
    # The events and the undo history are done (schema 2) but the VACUUM into incremental
    # mode did not happen (killed in it: all or nothing): the next open does it.
    conn = sqlite3.connect(v1_db, isolation_level=None)
    from clock_service.service.storage import schema

    real = schema._vacuum_into_incremental  # noqa: SLF001
    schema._vacuum_into_incremental = lambda conn: None  # noqa: SLF001
    try:
        schema.migrate(conn, REFRESH_TYPES)
    finally:
        schema._vacuum_into_incremental = real  # noqa: SLF001
    assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    conn.close()
    store = Store(v1_db)
    store.open()
    try:
        assert not store.migrated
        check = sqlite3.connect(v1_db)
        assert check.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        check.close()
    finally:
        store.close()
