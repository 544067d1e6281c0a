"""Issue 35, findings 2 and 7, from outside: a real ``shotclock serve`` over HTTP and its
WebSocket, its feeds read back and parsed.

- One control character in a player's name (``new_match`` or a draw line) made
  ``/feeds/tables.xml`` ill-formed for every table, and right-to-left overrides and
  zero-width characters were accepted in names: now every door refuses them with a 422
  that names the field and the character (docs/policy.md, "Human text").
- ``GET /api/matches?since=9223372036854775808`` was a 500 (SQLite's OverflowError): now a
  422, as ``/api/tables/{id}/events`` answers.
- A name in Cyrillic works everywhere, tokens' names included (a token named
  "Судья стола 1" was refused).
"""

from __future__ import annotations

import csv
import io
import json
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.sync.client import connect

from tests.faults.conftest import start_server
from tests.server import ServerProcess, http

pytestmark = pytest.mark.e2e

TOKEN = "text-and-numbers-t0ken-9f3a"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    proc = start_server(tmp_path_factory.mktemp("text"), SHOTCLOCK_REFEREE_TOKEN=TOKEN)
    try:
        yield proc
    finally:
        proc.stop()


def command(server: ServerProcess, table: str, body: dict[str, Any],
            token: str = TOKEN) -> tuple[int, Any]:
    return http("POST", f"{server.url}/api/tables/{table}/commands", body, token)


def table(server: ServerProcess, table_id: str, *players: str) -> None:
    status, body = http("POST", f"{server.url}/api/tables",
                        {"id": table_id, "players": list(players or ("Ivanov", "Petrov"))},
                        TOKEN)
    assert status == 201, body


def get_text(server: ServerProcess, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(server.url + path, timeout=10) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")


def new_match(players: list[str], **fields: Any) -> dict[str, Any]:
    return {"command": "new_match", "players": players, "race_to": 2,
            "reason": "the draw changed", **fields}


def test_a_control_character_in_a_name_is_refused_and_the_xml_feed_stays_well_formed(
        server: ServerProcess) -> None:
    table(server, "vt")
    status, body = command(server, "vt", new_match(["Iv\u000ban", "Petrov"]))
    # The feed of every table parses (it did not, for all tables, once one name held it).
    feed_status, text = get_text(server, "/feeds/tables.xml")
    assert feed_status == 200
    rows = ET.fromstring(text).findall("row")
    assert [r.findtext("player_a") for r in rows if r.findtext("table") == "vt"] == ["Ivanov"]
    assert status == 422, body
    assert "players.0: U+000B (LINE TABULATION) is a control character" in (
        body["error"]["message"]), body
    assert http("GET", f"{server.url}/api/tables/vt")[1]["players"] == ["Ivanov", "Petrov"]
    # The same name at table creation: the same reason, the same field.
    status, body = http("POST", f"{server.url}/api/tables",
                        {"id": "vt2", "players": ["Iv\u000ban", "Petrov"]}, TOKEN)
    assert status == 422 and "players.0: U+000B (LINE TABULATION) is a control character" in (
        body["error"]["message"]), body


# (table, field, value, the character named): the free-text fields of new_match.
HIDDEN = [
    ("h1", "players.1", "\u202eRLO", "U+202E (RIGHT-TO-LEFT OVERRIDE) is a bidirectional control"),
    ("h2", "players.0", "Pe\u200dtrov",
     "U+200D (ZERO WIDTH JOINER) is an invisible format character"),
    ("h3", "event", "Cup \u2066final\u2069",
     "U+2066 (LEFT-TO-RIGHT ISOLATE) is a bidirectional control"),
    ("h4", "referee", "\ufeffOrlov",
     "U+FEFF (ZERO WIDTH NO-BREAK SPACE) is an invisible format character"),
    ("h5", "reason", "two\nlines", "U+000A (LINE FEED) is a control character"),
    ("h6", "players.0", "\ud800", "U+D800 is an unpaired surrogate"),
]


@pytest.mark.parametrize(("table_id", "field", "value", "said"), HIDDEN,
                         ids=[h[0] for h in HIDDEN])
def test_bidi_zero_width_and_other_hidden_characters_are_refused_naming_them(
        server: ServerProcess, table_id: str, field: str, value: str, said: str) -> None:
    table(server, table_id)
    players = ["Ivanov", "Petrov"]
    body = new_match(players)
    if field.startswith("players."):
        players[int(field[-1])] = value
    else:
        body[field] = value
    status, answer = command(server, table_id, body)
    assert status == 422 and f"{field}: {said}" in answer["error"]["message"], answer
    assert http("GET", f"{server.url}/api/tables/{table_id}")[1]["players"] == [
        "Ivanov", "Petrov"]


def test_the_websocket_refuses_the_same_name_with_the_same_reason(server: ServerProcess) -> None:
    table(server, "ws")
    with connect(f"{server.ws_url}/ws/tables/ws?token={TOKEN}", open_timeout=5) as socket:
        assert json.loads(socket.recv(timeout=5))["type"] == "snapshot"
        socket.send(json.dumps({"type": "command", "id": 7,
                                **new_match(["Ivanov", "\u202eRLO"])}))
        reply = json.loads(socket.recv(timeout=5))
    assert (reply["type"], reply["id"], reply["status"]) == ("error", 7, 422), reply
    assert "players.1: U+202E (RIGHT-TO-LEFT OVERRIDE)" in reply["error"]["message"]


def test_a_draw_line_with_a_control_character_gets_the_same_reason(
        server: ServerProcess) -> None:
    table(server, "dr")
    csv_text = ("number,player1,player2,race_to,event,round,table\n"
                "1,Ivanov,Petrov,3,City cup,Round 1,dr\n"
                "2,\"Iv\u000ban\",Orlov,3,City cup,Round 1,dr\n")
    request = urllib.request.Request(f"{server.url}/api/draw", data=csv_text.encode(),
                                     method="POST", headers={
                                         "content-type": "text/csv",
                                         "authorization": f"Bearer {TOKEN}"})
    try:
        urllib.request.urlopen(request, timeout=10)
        pytest.fail("the draw was imported")
    except urllib.error.HTTPError as exc:
        assert exc.code == 422
        problems = json.loads(exc.read())["error"]["problems"]
    why = "U+000B (LINE TABULATION) is a control character"
    assert problems == [{"line": 3, "reason": f"player1: {why}", "code": "draw_bad_text",
                         "data": {"column": "player1", "why": why}}]
    assert http("GET", f"{server.url}/api/draw")[1]["matches"] == []  # nothing imported


def test_markup_characters_and_cyrillic_go_out_escaped_in_xml_and_csv(
        server: ServerProcess) -> None:
    names = ['<Ivan & "Co">', "Пётр 'Ёлкин'"]
    table(server, "esc", *names)
    status, text = get_text(server, "/feeds/tables/esc.xml")
    assert status == 200
    row = ET.fromstring(text).find("row")
    assert row is not None
    assert [row.findtext("player_a"), row.findtext("player_b")] == names
    status, answer = command(server, "esc", new_match(["=cmd|' /C calc'!A0", "Пётр"]))
    assert status == 200, answer
    status, text = get_text(server, "/feeds/tables/esc.csv")
    cells = next(csv.DictReader(io.StringIO(text)))
    assert cells["player_a"] == "'=cmd|' /C calc'!A0"  # text to a spreadsheet, not a formula
    assert cells["player_b"] == "Пётр"


def test_names_are_kept_in_nfc_without_the_spaces_around(server: ServerProcess) -> None:
    table(server, "nfc", "  Se\u0301bastien ", "李小龍")
    state = http("GET", f"{server.url}/api/tables/nfc")[1]
    assert state["players"] == ["S\u00e9bastien", "李小龍"]


def test_a_token_named_in_cyrillic_is_issued_and_recorded(server: ServerProcess) -> None:
    table(server, "ru")
    status, issued = http("POST", f"{server.url}/api/tokens",
                          {"role": "referee", "tables": ["ru"], "name": "Судья стола 1"}, TOKEN)
    assert status == 201, issued
    assert issued["name"] == "Судья стола 1"
    status, state = command(server, "ru", {"command": "start"}, issued["token"])
    assert status == 200, state
    events = http("GET", f"{server.url}/api/tables/ru/events?since={state['seq'] - 1}")[1]
    assert events[-1]["source"] == "http:Судья стола 1"
    status, refused = http("POST", f"{server.url}/api/tokens",
                           {"role": "referee", "tables": ["ru"], "name": "Судья\u200b"}, TOKEN)
    assert status == 422 and "U+200B (ZERO WIDTH SPACE)" in refused["error"]["message"]


@pytest.mark.parametrize("path", [
    "/api/matches?since=9223372036854775808",
    "/api/matches?since=9007199254740993",
    "/api/tables?limit=9223372036854775808",
    "/api/tables/1/events?since=9223372036854775808",
    "/api/matches/1.1/charts/shots.svg?frame=9223372036854775808",
])
def test_a_number_beyond_its_bound_is_a_422_not_a_500(server: ServerProcess,
                                                        path: str) -> None:
    status, body = http("GET", server.url + path)
    assert status == 422, (path, status, body)


def test_bounded_numbers_in_a_command_are_refused(server: ServerProcess) -> None:
    table(server, "num")
    for body, field in ((new_match(["A", "B"], race_to=10**30), "race_to"),
                        ({"command": "start", "at": -1}, "at"),
                        ({"command": "start", "at": 2**60}, "at")):
        status, answer = command(server, "num", body)
        assert status == 422 and field in answer["error"]["message"], (body, answer)
