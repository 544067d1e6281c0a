"""The draw as the director's desk drives it (issue 36), in-process over the real app and a
real SQLite store: the first match on a fresh table starts with no reason, any queued
match starts on any table, a match in play refuses it with the match named, a queue is
reordered and kept, and a pair started by hand is the draw's match playing there, not
queued to be played again ("Queued pair")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from clock_service.edges.cli.main import table_service
from clock_service.service.settings import Settings
from clock_service.service.timesource import FakeTime

DIRECTOR = "director-token-of-the-desk-test"
DIRECTOR_AUTH = {"Authorization": f"Bearer {DIRECTOR}"}
DRAW = ("number,player1,player2,race_to,event,round,table\n"
        "1,Иванов,Петров,2,Кубок,1/4,1\n"
        "2,Сидоров,Орлов,2,Кубок,1/4,next\n"
        "3,Smirnov,Kuznetsov,2,Кубок,1/4,2\n"
        "4,Popov,Vasiliev,2,Кубок,1/4,1\n")


class Desk:
    """The service as the desk's page sees it: the director's requests."""

    def __init__(self, client: TestClient) -> None:
        self.client = client

    def post(self, path: str, body: Any = None, *, auth: dict[str, str] | None = None
             ) -> tuple[int, Any]:
        answer = self.client.post(path, json=body, headers=DIRECTOR_AUTH if auth is None
                                  else auth)
        return answer.status_code, answer.json()

    def get(self, path: str) -> Any:
        answer = self.client.get(path)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def import_draw(self, text: str = DRAW) -> None:
        if "2" not in [t["table"] for t in self.get("/api/tables")]:
            assert self.post("/api/tables", {"id": "2", "players": ["A", "B"]})[0] == 201
        answer = self.client.post("/api/draw", content=text.encode(),
                                  headers={"content-type": "text/csv", **DIRECTOR_AUTH})
        assert answer.status_code == 201, answer.text

    def statuses(self) -> list[tuple[int, str, str | None]]:
        return [(m["number"], m["status"], m["playing_on"])
                for m in self.get("/api/draw")["matches"]]


def _service(db: Path) -> Any:
    return table_service(Settings(db=str(db), display="none", referee_token=DIRECTOR,
                                  command_rate=0, read_rate=0), time=FakeTime())


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[Desk]:
    with TestClient(_service(tmp_path / "desk.db").app) as client:
        yield Desk(client)


def test_the_first_match_on_a_fresh_table_starts_without_a_reason(desk: Desk) -> None:
    desk.import_draw()
    for table, players in (("1", ["Иванов", "Петров"]), ("2", ["Smirnov", "Kuznetsov"])):
        status, state = desk.post(f"/api/tables/{table}/next", {})
        assert status == 200, state
        assert state["players"] == players and state["match"]["number"] == 2
    assert desk.statuses() == [(1, "playing", "1"), (2, "queued", None), (3, "playing", "2"),
                               (4, "queued", None)]


def test_any_queued_match_starts_on_any_table_and_a_match_in_play_refuses_it(
        desk: Desk) -> None:
    desk.import_draw()
    status, state = desk.post("/api/draw/4/start", {"table": "2"})  # table 1's, on table 2
    assert status == 200, state
    assert state["players"] == ["Popov", "Vasiliev"] and state["match"]["race_to"] == 2
    # Table 2's match is under way (a foul before the break): starting over it is refused,
    # with the match named, until the director gives the reason.
    assert desk.post("/api/tables/2/commands", {"command": "foul", "reason": "x"})[0] == 200
    status, body = desk.post("/api/draw/2/start", {"table": "2"})
    assert status == 409 and body["error"]["code"] == "match_in_play", body
    assert "Popov – Vasiliev (0:0, frame 1)" in body["error"]["message"]
    status, body = desk.post("/api/tables/2/next", {})
    assert status == 409 and body["error"]["code"] == "match_in_play", body
    assert desk.statuses()[1] == (2, "queued", None)  # nothing changed
    status, state = desk.post("/api/draw/2/start", {"table": "2", "reason": "a walkover"})
    assert status == 200 and state["players"] == ["Сидоров", "Орлов"], state
    assert desk.statuses() == [(1, "queued", None), (2, "playing", "2"), (3, "queued", None),
                               (4, "done", "2")]
    # A match started is not started again; a referee's token is not the director's.
    status, body = desk.post("/api/draw/2/start", {"table": "1"})
    assert status == 409 and body["error"]["code"] == "match_started"
    _, referee = desk.post("/api/tokens", {"role": "referee", "tables": ["1"], "name": "r1"})
    status, body = desk.post("/api/draw/1/start", {"table": "1"},
                             auth={"Authorization": f"Bearer {referee['token']}"})
    assert status == 403 and body["error"]["code"] == "director_only"
    assert desk.post("/api/draw/1/start", {"table": "9"})[0] == 422  # no such table


def test_a_reordered_queue_is_kept_in_the_store(tmp_path: Path) -> None:
    with TestClient(_service(tmp_path / "s.db").app) as client:
        desk = Desk(client)
        desk.import_draw()
        status, moved = desk.post("/api/draw/4/assign", {"table": "1", "position": 0})
        assert status == 200 and (moved["number"], moved["table"]) == (4, "1")
        status, moved = desk.post("/api/draw/2/assign", {"table": "1", "position": 1})
        assert status == 200
        assert [m["number"] for m in desk.get("/api/draw")["tables"]["1"]["queue"]] == [4, 2, 1]
    with TestClient(_service(tmp_path / "s.db").app) as client:  # the service restarted
        desk = Desk(client)
        view = desk.get("/api/draw")
        assert [m["number"] for m in view["tables"]["1"]["queue"]] == [4, 2, 1]
        assert view["tables"]["1"]["next"]["number"] == 4
        status, state = desk.post("/api/tables/1/next", {})
        assert status == 200 and state["players"] == ["Popov", "Vasiliev"]


def test_a_pair_started_by_hand_is_the_draws_match_playing_there(desk: Desk) -> None:
    """Finding 1, "Queued pair": a table created from the form as Сидоров–Орлов still
    queued the draw's same pair as its next match."""
    desk.import_draw()
    status, state = desk.post("/api/tables", {"id": "3", "players": ["Сидоров", "Орлов"],
                                              "race_to": 2})
    assert status == 201, state
    assert desk.get("/api/tables/3/next")["next"] is None  # not the same pair again
    assert (2, "playing", "3") in desk.statuses()
    assert desk.get("/api/draw")["tables"]["3"]["playing"]["match_id"] == "3.1"
    # A referee's own new_match with a queued pair (either way round) is that match too.
    status, state = desk.post("/api/tables/1/commands", {
        "command": "new_match", "players": ["Петров", "Иванов"]})
    assert status == 200, state
    assert (1, "playing", "1") in desk.statuses()
    assert desk.get("/api/tables/1/next")["next"]["number"] == 4


def test_a_table_made_for_a_pair_before_the_draw_came_plays_it(desk: Desk) -> None:
    assert desk.post("/api/tables", {"id": "2", "players": ["Smirnov", "Kuznetsov"]})[0] == 201
    desk.import_draw()
    assert (3, "playing", "2") in desk.statuses()
    assert desk.get("/api/tables/2/next")["next"]["number"] == 2  # the next free table's
