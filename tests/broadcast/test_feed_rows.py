"""The feeds' rows against the runtime with the fake clock: values equal the state, the
time as the digits show it, the last notable event in both languages, and what is cached.
No test sleeps for the clock."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from clock_service.core.commands import parse_command
from clock_service.edges.broadcast import rows
from clock_service.edges.broadcast.feeds import ALL, FeedBoard
from clock_service.service.hub import Hub
from clock_service.service.runtime import Runtime
from clock_service.service.storage.log import Store
from clock_service.service.timesource import FakeTime
from tests.waiting import settle

PROFILE = {"shot_ms": 12000, "full_rounds": 1, "step_ms": 1000, "floor_ms": 8000,
           "extension_ms": 3000, "warnings_ms": [10000, 5000]}


@pytest.fixture
async def board(tmp_path: Path):
    time = FakeTime()
    runtime = Runtime(Store(tmp_path / "clock.db"), time, Hub())
    feeds = FeedBoard(runtime)
    await runtime.start(default_table=None)
    await runtime.create_table("t1", ["Ivanov", "Петров"], profile=PROFILE, race_to=3)
    await settle(runtime)
    yield feeds, runtime, time
    await runtime.stop()


async def do(runtime: Runtime, command: str, **fields: Any) -> dict[str, Any]:
    state = await runtime.command("t1", parse_command({"command": command, **fields}))
    await settle(runtime)
    return state


def parse_all(feeds: FeedBoard, now: float, lang: str = "en") -> dict[str, dict[str, str]]:
    """The row of t1 as each format gives it, parsed by the format's own rules."""
    out = {}
    body, _ = feeds.body(["t1"], "t1", "json", lang, now)
    parsed = json.loads(body)
    assert isinstance(parsed, list) and len(parsed) == 1
    out["json"] = {k: str(v) for k, v in parsed[0].items()}
    body, _ = feeds.body(["t1"], "t1", "xml", lang, now)
    root = ET.fromstring(body)
    (node,) = root.findall("./row[table='t1']")
    out["xml"] = {child.tag: child.text or "" for child in node}
    body, _ = feeds.body(["t1"], "t1", "csv", lang, now)
    (line,) = list(csv.DictReader(io.StringIO(body.decode())))
    out["csv"] = dict(line)
    return out


async def test_every_format_holds_the_state_and_the_digits(board) -> None:
    feeds, runtime, time = board
    await do(runtime, "start")
    await do(runtime, "extension")  # 12000 + 3000 for Ivanov (12.5)
    time.advance(11_000)  # 4000 ms left: tenths (digits round up), warning
    await settle(runtime)
    await do(runtime, "foul", reason="pushed the cue ball")  # Ivanov's first foul
    state = runtime.state("t1")
    assert state["fouls"] == [1, 0] and state["player"] == 1
    await do(runtime, "start")
    time.advance(7_650)  # Petrov: 12000 - 7650 = 4350 ms left
    await settle(runtime)
    state = runtime.state("t1")
    formats = parse_all(feeds, time.now_ms())
    for fmt, got in formats.items():
        assert list(got) == list(rows.FIELDS), fmt
        assert got["table"] == "t1"
        assert (got["player_a"], got["player_b"]) == ("Ivanov", "Петров")
        assert (got["score_a"], got["score_b"], got["race_to"]) == ("0", "0", "3")
        assert got["frame"] == str(state["frame"]) and got["round"] == str(state["round"])
        assert (got["at_table"], got["at_table_name"]) == ("b", "Петров")
        assert got["phase"] == "running" and got["stage"] == "critical"
        assert got["remaining"] == "4.4", fmt  # 4350 ms rounded up to the tenth
        assert got["remaining_ms"] == "4400"
        assert (got["extension_used_a"], got["extension_used_b"]) == ("1", "0")
        assert (got["extensions_left_a"], got["extensions_left_b"]) == ("0", "1")
        assert (got["fouls_a"], got["fouls_b"]) == ("1", "0")
        assert (got["whites_a"], got["whites_b"]) == tuple(str(w) for w in state["whites"])
        assert got["alert"] == "1" and got["alert_kind"] == "warning"
        assert got["last_event"] == "5 seconds", fmt  # the 5 s warning of Petrov's shot
        assert got["seq"] == str(state["seq"]) and got["live"] == "1"


async def test_whole_seconds_above_five_then_expiry_flag_and_texts_in_both_languages(
        board) -> None:
    feeds, runtime, time = board
    await do(runtime, "start")
    time.advance(2_001)  # 9999 left: "10", warning showing
    await settle(runtime)
    row = feeds.row("t1", time.now_ms())
    assert (row["remaining"], row["remaining_ms"], row["alert"]) == ("10", 10000, 1)
    time.advance(10_000)  # expired: time foul for Ivanov (12.4)
    await settle(runtime)
    state = runtime.state("t1")
    assert state["phase"] == "expired"
    en = feeds.row("t1", time.now_ms(), "en")
    ru = feeds.row("t1", time.now_ms(), "ru")
    assert (en["remaining"], en["remaining_ms"], en["phase"]) == ("0.0", 0, "expired")
    assert en["alert"] == 1 and en["alert_kind"] == "expired"
    assert en["fouls_a"] == 1
    # The expiry's own events end with the turn passing to Petrov: the last news.
    assert en["last_event"] == "Петров to the table"
    assert ru["last_event"] == "К столу: Петров"
    await do(runtime, "start")  # Petrov accepts and plays on: the flag is gone
    row = feeds.row("t1", time.now_ms())
    assert row["alert"] == 0 and row["alert_kind"] == "" and row["stage"] == "running"


async def test_a_body_is_encoded_once_per_tenth_and_shared(board) -> None:
    feeds, runtime, time = board
    now = time.now_ms()
    first = feeds.body(["t1"], "t1", "json", "en", now)
    again = feeds.body(["t1"], "t1", "json", "en", now + 5_000)  # ready: nothing changes
    assert first == again and feeds.encoded_bodies == 1
    await do(runtime, "start")
    now = time.now_ms()
    a = feeds.body(["t1"], "t1", "json", "en", now + 1)
    b = feeds.body(["t1"], "t1", "json", "en", now + 99)  # the same tenth
    assert a == b and a[1] != first[1] and feeds.encoded_bodies == 2
    c = feeds.body(["t1"], "t1", "json", "en", now + 101)
    assert c[1] != a[1] and json.loads(c[0])[0]["remaining_ms"] == 11900
    # The all-tables body reuses the rows already encoded for t1.
    rows_before = feeds.encoded_rows
    feeds.body(["t1"], ALL, "json", "en", now + 101)
    assert feeds.encoded_rows == rows_before


async def test_an_archived_table_leaves_the_board(board) -> None:
    feeds, runtime, time = board
    await do(runtime, "start")
    await do(runtime, "extension")
    assert feeds.last_event["t1"]["type"] == "clock.extended"
    feeds.body(["t1"], "t1", "xml", "ru", time.now_ms())
    await runtime.archive_table("t1")
    assert "t1" not in feeds.last_event
    assert not [k for k in feeds._rows if k[0] == "t1"]


@pytest.mark.parametrize("name, cell", [
    ("=HYPERLINK(\"x\")", "'=HYPERLINK(\"x\")"), ("+1", "'+1"), ("-x", "'-x"),
    ("@cmd", "'@cmd"), ("-5", "-5"), ("Anna", "Anna"),
])
def test_csv_cells_never_start_a_formula(name: str, cell: str) -> None:
    values = {k: "" for k in rows.FIELDS} | {"player_a": name}
    (line,) = list(csv.reader(io.StringIO(rows.csv_row(values))))
    assert line[1] == cell


def test_xml_escapes_names() -> None:
    values = {k: "" for k in rows.FIELDS} | {"player_a": "<b>&\"Tom\"</b>"}
    node = ET.fromstring(rows.to_xml([rows.xml_row(values)])).find("./row/player_a")
    assert node is not None and node.text == "<b>&\"Tom\"</b>"


@pytest.mark.parametrize("name", ["Iv\u000ban", "Iv\u0000an", "\ud800", "Iv\uffffan",
                                  "Iv\u001ban\u202e"])
def test_xml_stays_well_formed_for_a_name_stored_before_the_text_rule(name: str) -> None:
    """Issue 35 finding 2: one such name took every table's XML feed down."""
    values = {k: "" for k in rows.FIELDS} | {"player_a": name, "player_b": "Пётр"}
    root = ET.fromstring(rows.to_xml([rows.xml_row(values)] * 2))
    assert [r.findtext("player_b") for r in root.findall("row")] == ["Пётр", "Пётр"]
    assert "\ufffd" in (root.findtext("./row/player_a") or "")


def test_the_feeds_take_the_read_limit_of_a_tables_state(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from clock_service.edges.cli.main import table_app
    from clock_service.service.limits import read_cost
    from clock_service.service.settings import Settings

    assert read_cost("/feeds/tables.json", b"") == read_cost("/api/tables/1", b"") == 0.25
    settings = Settings(db=str(tmp_path / "l.db"), read_rate=1, read_burst=1, display="none")
    with TestClient(table_app(settings)) as client:
        statuses = [client.get("/feeds/tables/1.csv").status_code for _ in range(4)]
        assert statuses == [200] * 4  # a burst of 1 token is 4 quarters
        # Then 429, once the quarter a second refills (250 ms) is spent faster than that.
        for _ in range(40):
            response = client.get("/feeds/tables/1.csv")
            if response.status_code == 429:
                break
        assert response.status_code == 429
        assert response.json()["error"]["code"] == "rate_limited"


@pytest.mark.parametrize("event, en, ru", [
    ({"type": "match_clock.warning", "data": {"threshold_ms": 600_000}},
     "10 minutes of the match left", "До конца матча 10 мин"),
    ({"type": "shot_clock.on", "data": {}}, "Shot clock on (slow play)",
     "Включены часы на удар (затяжка игры)"),
    ({"type": "foul", "data": {"player": 1, "rule": "12.4", "fouls": [0, 1]}},
     "Time foul: B (1)", "Фол по времени: B (1)"),
    ({"type": "frame.ended", "data": {"frame": 3, "winner": None}}, "Frame 3 over",
     "Партия 3 окончена"),
    ({"type": "clock.started", "data": {}}, "", ""),  # not news: never overwrites the last
])
def test_event_texts(event: dict[str, Any], en: str, ru: str) -> None:
    assert rows.event_text(event, ["A", "B"], "en") == en
    assert rows.event_text(event, ["A", "B"], "ru") == ru
    assert (event["type"] in rows.NOTABLE) == bool(en)


def test_every_notable_event_is_an_event_and_has_both_texts() -> None:
    from clock_service.core.events import EVENT_TYPES

    assert rows.NOTABLE <= EVENT_TYPES, rows.NOTABLE - EVENT_TYPES
    for lang in rows.LANGS:
        for kind in rows.NOTABLE:
            assert kind in rows._TEXTS[lang], (lang, kind)
