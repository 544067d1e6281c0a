"""The match index the store keeps beside the log (storage/index.py): kept in the events'
transaction, equal to a rebuild from the log, rebuilt when missing; keyset pages."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from clock_service.core.commands import NewFrame, NewMatch, Result, Undo
from clock_service.service.storage import Store
from clock_service.service.storage.index import MAX_PAGE, SCHEMA, index_ops, list_matches
from harness.reports import EARLY_POT, Table


def write(store: Store, table: Table, created: bool = False) -> None:
    """The table's batches into the store, as the runtime hands them over."""
    batches = table.batches
    first, rest = (batches[0], batches[1:]) if not created else (None, batches)
    if first is not None:
        store.create_table(table.table_id, {"players": list(table.players)},
                           table.clock.to_dict(), first, first[-1]["seq"],
                           created_at=int(first[0]["at"]))
    for batch in rest:
        store.append(table.table_id, batch, table.clock.to_dict(), batch[-1]["seq"])
    table.batches = []


def rows(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT * FROM matches ORDER BY table_id, number").fetchall()


def play(tmp_path: Path) -> Path:
    """Two tables: one with three matches (won, left for the next, playing), one open."""
    db = tmp_path / "index.db"
    store = Store(db)
    store.open()
    a = Table(race_to=1, table_id="a")
    a.timed(3000)
    a.do(Result(whites_potted=0, legal_break=True))
    a.timed(4000)
    a.do(Result(**EARLY_POT))                     # a.1 won by Petrov, 0-1
    a.do(NewMatch(players=["Sidorov", "Kozlov"], race_to=2))
    a.do(NewFrame(winner=0, reason="conceded"))  # a.2: 1-0, then left for a.3
    a.do(NewMatch(timer=False, reason="the hall closes"))
    b = Table(race_to=None, table_id="b")
    b.do(NewFrame(winner=1, reason="conceded"))
    b.do(Undo())                                  # the award taken back: 0-0
    write(store, a)
    write(store, b)
    store.close()
    return db


def test_the_index_says_where_each_match_lies_and_how_it_stands(tmp_path: Path) -> None:
    db = play(tmp_path)
    got = [(t, n, start, end, status, json.loads(score), frames, winner, timer,
            json.loads(info).get("closed_reason"))
           for (t, n, start, end, _, _, status, _, timer, _, score, frames, winner, info)
           in rows(db)]
    a_starts = [s for t, _, s, *_ in got if t == "a"]
    assert got == [
        ("a", 1, 1, a_starts[1] - 1, "over", [0, 1], 1, 1, 1, None),
        ("a", 2, a_starts[1], a_starts[2] - 1, "closed", [1, 0], 2, None, 1, "the hall closes"),
        ("a", 3, a_starts[2], None, "playing", [0, 0], 1, None, 0, None),
        ("b", 1, 1, None, "playing", [0, 0], 1, None, 1, None),  # the undo took frame 2 back
    ]


@pytest.mark.parametrize("damage", ["drop the table", "stale version"])
def test_a_missing_or_stale_index_is_rebuilt_from_the_log_the_same(tmp_path: Path,
                                                                  damage: str) -> None:
    db = play(tmp_path)
    live = rows(db)
    with sqlite3.connect(db) as conn:
        if damage == "drop the table":
            conn.execute("DROP TABLE matches")
        else:
            conn.execute("DELETE FROM matches WHERE number = 2")
            conn.execute("UPDATE meta SET value = '0' WHERE key = 'matches_index'")
    store = Store(db)
    store.open()
    store.close()
    assert rows(db) == live


def test_archiving_moves_the_matches_with_the_events(tmp_path: Path) -> None:
    """DELETE /api/tables/{id} (lan, issue 11) ends the log with table.archived, then the
    store moves the table's events and matches to its archive id in one transaction: the
    matches stay addressable there, the current one closed, and a rebuild agrees."""
    db = play(tmp_path)
    store = Store(db)
    store.open()
    last = {"type": "table.archived", "seq": 9999, "at": 1, "table": "b",
            "data": {"archived_as": "b~1"}}
    store.append("b", [last], None, 9999)
    store.archive_table("b", "b~1", archived_at=1)
    store.close()
    with sqlite3.connect(db) as conn:
        page, _ = list_matches(conn, table="b~1")
        gone, _ = list_matches(conn, table="b")
    assert [(m["id"], m["status"], m["end_seq"]) for m in page] == [("b~1.1", "closed", 9999)]
    assert gone == []
    live = rows(db)
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE matches")
    store = Store(db)
    store.open()
    store.close()
    assert rows(db) == live  # the rebuild agrees: the log is the one source


def test_pages_visit_every_match_once_newest_first(tmp_path: Path) -> None:
    """1500 matches on 7 tables, many started in the same ms: keyset pages of 200."""
    db = tmp_path / "many.db"
    with sqlite3.connect(db) as conn:
        conn.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);")
        conn.executescript(SCHEMA)
        for i in range(1500):
            table = f"t{i % 7}"
            event = {"type": "match.started" if i >= 7 else "table.created", "seq": i + 1,
                     "at": 1000 + i // 3, "data": {"number": i // 7 + 1, "players": ["A", "B"],
                                                   "timer": True, "race_to": None}}
            for sql, params in index_ops(table, [event]):
                conn.execute(sql, params)
        seen: list[str] = []
        after = None
        pages = 0
        while True:
            page, after = list_matches(conn, after=after, limit=MAX_PAGE)
            seen += [m["id"] for m in page]
            pages += 1
            if after is None:
                break
        expected = conn.execute("SELECT table_id || '.' || number FROM matches ORDER BY "
                                "started_at DESC, table_id DESC, number DESC").fetchall()
        one_table, _ = list_matches(conn, table="t3", limit=5)
        recent, _ = list_matches(conn, since=1000 + 1499 // 3, limit=50)
    assert seen == [e[0] for e in expected] and len(set(seen)) == 1500 and pages == 8
    assert [m["number"] for m in one_table] == [214, 213, 212, 211, 210]
    assert sorted(m["id"] for m in recent) == ["t0.215", "t1.215", "t6.214"]  # i = 1498, 1499, 1497
