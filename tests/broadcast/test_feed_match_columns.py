"""The feeds' columns of the match around the frame (issue 36 point 4): the match clock,
the event and round, the frame's and the match's winner, match over and the draw's next
match, through the table service's own app (the fake clock, in process), in JSON as UTF-8
without escapes, with the charset said in every format; every older column kept, in its
place."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from clock_service.edges.broadcast import rows
from clock_service.edges.broadcast.textfiles import FILE_OF
from clock_service.edges.cli.main import table_service
from clock_service.service.settings import Settings
from clock_service.service.timesource import FakeTime

# The columns a switcher was bound to before issue 36, in their order: never renamed,
# dropped or moved (a CSV source reads them by position).
OLD_FIELDS = (
    "table", "player_a", "player_b", "score_a", "score_b", "race_to", "frame", "round",
    "at_table", "at_table_name", "remaining", "remaining_ms", "phase", "stage",
    "extension_used_a", "extension_used_b", "extensions_left_a", "extensions_left_b",
    "fouls_a", "fouls_b", "whites_a", "whites_b", "last_event", "alert", "alert_kind",
    "live", "seq",
)
DRAW = ("number,player1,player2,race_to,event,round,table\n"
        "1,Сидоров,Орлов,2,Кубок города,Финал,m\n"
        "2,Smith,Кузнецов,3,Кубок города,За 3-е место,m\n")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    service = table_service(Settings(db=str(tmp_path / "t.db"), display="none",
                                     default_table=None), time=FakeTime())
    with TestClient(service.app) as client:
        yield client


def feed(client: TestClient, fmt: str = "json", table: str = "m") -> Any:
    answer = client.get(f"/feeds/tables/{table}.{fmt}?lang=ru")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].endswith("charset=utf-8"), answer.headers
    assert answer.headers["access-control-allow-origin"] == "*"  # a template's fetch()
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(answer.content.decode("utf-8"))))[0]
    raw = answer.content
    assert b"\\u" not in raw and "ов".encode() in raw  # UTF-8 as it is, no escapes
    return json.loads(raw)[0]


def command(client: TestClient, name: str, **fields: Any) -> dict[str, Any]:
    answer = client.post("/api/tables/m/commands", json={"command": name, **fields})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_the_old_columns_keep_their_names_and_places() -> None:
    assert rows.FIELDS[:len(OLD_FIELDS)] == OLD_FIELDS
    assert len(set(rows.FIELDS)) == len(rows.FIELDS)


def test_match_clock_winners_event_round_and_the_next_match(client: TestClient) -> None:
    created = client.post("/api/tables", json={
        "id": "m", "players": ["Иванов", "Петров"], "race_to": 1, "event": "Открытый турнир",
        "match_limit_ms": 1_500_000, "at_match_limit": "leader_wins"})
    assert created.status_code == 201, created.text
    row = feed(client)
    assert list(row) == list(rows.FIELDS)
    # Before the first break: the whole limit, waiting; the event the table was made with.
    assert (row["match_clock"], row["match_clock_ms"], row["match_clock_stage"]) == (
        "25:00", 1_500_000, "ok")
    assert (row["event"], row["event_round"]) == ("Открытый турнир", "")
    assert (row["frame_winner"], row["match_winner"], row["match_over"]) == ("", "", 0)
    assert (row["next_player_a"], row["next_player_b"], row["next_race_to"]) == ("", "", "")

    # The draw queues two matches for the table: the first is next, on air before it starts.
    imported = client.post("/api/draw", content=DRAW.encode(),
                           headers={"content-type": "text/csv"})
    assert imported.status_code == 201, imported.text
    row = feed(client)
    assert (row["next_player_a"], row["next_player_b"], row["next_race_to"]) == (
        "Сидоров", "Орлов", 2)
    assert row["event"] == "Открытый турнир"  # the match in play is not the draw's

    # Petrov wins the only frame (race to 1): frame and match winner, match over.
    command(client, "start")
    command(client, "new_frame", winner=1, reason="Иванов сдал партию")
    row = feed(client)
    assert row["phase"] == "frame_over"
    assert (row["frame_winner"], row["frame_winner_name"]) == ("b", "Петров")
    assert (row["match_winner"], row["match_winner_name"], row["match_over"]) == (
        "b", "Петров", 1)
    assert row["match_clock_stage"] in ("ok", "expired")
    text = feed(client, "csv")
    assert (text["match_winner_name"], text["match_over"]) == ("Петров", "1")

    # The draw's next match starts: its event and round, apart; the one after it is next.
    started = client.post("/api/tables/m/next", json={})
    assert started.status_code == 200, started.text
    row = feed(client)
    assert (row["player_a"], row["player_b"]) == ("Сидоров", "Орлов")
    assert (row["event"], row["event_round"]) == ("Кубок города", "Финал")
    assert (row["next_player_a"], row["next_player_b"], row["next_race_to"]) == (
        "Smith", "Кузнецов", 3)
    assert (row["frame_winner"], row["match_winner"], row["match_over"]) == ("", "", 0)
    xml = client.get("/feeds/tables/m.xml?lang=ru")
    assert xml.headers["content-type"] == "application/xml; charset=utf-8"
    assert "<event_round>Финал</event_round>".encode() in xml.content


def test_a_running_match_clock_counts_in_the_feed_between_polls(tmp_path: Path) -> None:
    """The row of a running match clock changes with its seconds, without a new event:
    the cached body is not served past them."""
    time = FakeTime()
    service = table_service(Settings(db=str(tmp_path / "t.db"), display="none",
                                     default_table=None), time=time)
    board_rows = []
    with TestClient(service.app) as client:
        assert client.post("/api/tables", json={
            "id": "m", "players": ["Иванов", "Петров"], "match_limit_ms": 660_000,
            "profile": {"shot_ms": 60_000, "floor_ms": 30_000, "step_ms": 1000,
                        "extension_ms": 15_000}}).status_code == 201
        command(client, "start")
        command(client, "shot")  # the shot clock stands ready; the match clock runs on
        board_rows.append(feed(client))
        client.portal.call(time.advance, 30_500)  # on the app's loop: its timers fire there
        board_rows.append(feed(client))
        client.portal.call(time.advance, 30_000)  # past the 10-minute warning
        board_rows.append(feed(client))
    first, later, warned = board_rows
    assert first["match_clock"] == "11:00" and first["match_clock_stage"] == "ok"
    assert later["seq"] == first["seq"]  # no event: the cached row is not served for it
    assert later["match_clock"] == "10:30" and later["match_clock_stage"] == "ok"
    assert warned["match_clock"] == "10:00" and warned["match_clock_stage"] == "warn"


def test_the_text_files_get_the_new_columns_but_not_the_milliseconds() -> None:
    for column in ("match_clock", "event", "event_round", "frame_winner_name",
                   "match_winner_name", "match_over", "next_player_a", "next_race_to"):
        assert FILE_OF[column] == f"{column}.txt"
    assert "match_clock_ms" not in FILE_OF  # it changes every second with match_clock


@pytest.mark.parametrize("guide", ["vmix", "obs", "casparcg", "companion"])
def test_every_switcher_guide_binds_every_column(guide: str) -> None:
    """A column added to the feeds is added to each one-page guide (docs/bind/) and to the
    reference (docs/broadcast.md), or this fails."""
    from tests.server import ROOT

    text = (ROOT / "docs" / "bind" / f"{guide}.md").read_text()
    reference = (ROOT / "docs" / "broadcast.md").read_text()
    for column in rows.FIELDS:
        name = "clock.txt" if guide == "obs" and column == "remaining" else column
        assert f"`{column}`" in reference, column
        assert f"`{name}" in text or f"`{column}`" in text, (guide, column)
