"""The feeds over HTTP from a real ``shotclock serve`` with a referee token: read without
it, parsed by each format's own rules, equal to the table's state; ETag answered with 304;
errors as the rest of the API."""

from __future__ import annotations

import csv
import io
import json
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.thread_server import ThreadServer
from tests.server import http

pytestmark = pytest.mark.e2e

TOKEN = "feeds-test-token"
PROFILE = {"shot_ms": 60000, "full_rounds": 1, "step_ms": 1000, "floor_ms": 30000,
           "extension_ms": 15000}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadServer]:
    db = Path(tmp_path_factory.mktemp("feeds")) / "feeds.db"
    proc = ThreadServer(db, env={"SHOTCLOCK_REFEREE_TOKEN": TOKEN}).start()
    try:
        status, body = proc.post("/api/tables", {"id": "f1", "players": ["Anna", "Boris"],
                                                 "profile": PROFILE, "race_to": 5}, TOKEN)
        assert status == 201, body
        for command, fields in [("start", {}), ("extension", {}),
                                ("foul", {"reason": "touched a ball"})]:
            status, body = proc.command("f1", command, TOKEN, **fields)
            assert status == 200, body
        yield proc
    finally:
        proc.stop()


def get(server: ThreadServer, path: str, etag: str | None = None
        ) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(server.url + path)  # no token
    if etag:
        request.add_header("If-None-Match", etag)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def test_each_format_parsed_by_its_own_rules_equals_the_state(server: ThreadServer) -> None:
    state = server.get("/api/tables/f1")
    assert state["phase"] == "ready" and state["player"] == 1  # the foul passed the turn
    status, headers, body = get(server, "/feeds/tables/f1.json?lang=ru")
    assert status == 200 and headers["content-type"] == "application/json; charset=utf-8"
    (as_json,) = json.loads(body)
    status, headers, body = get(server, "/feeds/tables/f1.xml?lang=ru")
    assert status == 200 and headers["content-type"].startswith("application/xml")
    root = ET.fromstring(body)
    # The XPath the README gives for vMix: one table's row by its id.
    (node,) = root.findall("./row[table='f1']")
    as_xml = {child.tag: child.text or "" for child in node}
    status, headers, body = get(server, "/feeds/tables/f1.csv?lang=ru")
    assert status == 200 and headers["content-type"].startswith("text/csv")
    (as_csv,) = list(csv.DictReader(io.StringIO(body.decode("utf-8"))))
    for got in ({k: str(v) for k, v in as_json.items()}, as_xml, as_csv):
        assert got["table"] == "f1"
        assert [got["player_a"], got["player_b"]] == state["players"]
        assert [int(got["score_a"]), int(got["score_b"])] == state["match"]["score"]
        assert int(got["race_to"]) == state["match"]["race_to"] == 5
        assert int(got["frame"]) == state["frame"]
        assert got["at_table"] == "b" and got["at_table_name"] == "Boris"
        assert int(got["remaining_ms"]) == state["remaining_ms"]
        assert got["remaining"] == str(state["remaining_ms"] // 1000)
        assert got["phase"] == state["phase"] == "ready"
        assert [int(got["extensions_left_a"]), int(got["extensions_left_b"])] == \
            state["extensions_left"] == [0, 1]
        assert [int(got["extension_used_a"]), int(got["extension_used_b"])] == [1, 0]
        assert [int(got["fouls_a"]), int(got["fouls_b"])] == state["fouls"] == [1, 0]
        assert [int(got["whites_a"]), int(got["whites_b"])] == state["whites"]
        assert got["last_event"] == "К столу: Boris"
        assert got["alert"] == "0"
        assert int(got["seq"]) == state["seq"]


def test_all_tables_and_english(server: ThreadServer) -> None:
    status, _, body = get(server, "/feeds/tables.xml")
    assert status == 200
    root = ET.fromstring(body)
    ids = [node.text for node in root.findall("./row/table")]
    assert ids == sorted(t["table"] for t in server.get("/api/tables"))
    assert root.findtext("./row[table='f1']/last_event") == "Boris to the table"
    status, _, body = get(server, "/feeds/tables.csv")
    assert [r["table"] for r in csv.DictReader(io.StringIO(body.decode()))] == ids
    status, _, body = get(server, "/feeds/tables.json")
    assert [r["table"] for r in json.loads(body)] == ids


def test_etag_is_answered_with_304_until_the_state_changes(server: ThreadServer) -> None:
    status, headers, body = get(server, "/feeds/tables/f1.json")
    etag = headers["etag"]
    assert status == 200 and etag.startswith('"') and headers["cache-control"] == "no-cache"
    status, headers, again = get(server, "/feeds/tables/f1.json", etag)
    assert status == 304 and again == b"" and headers["etag"] == etag
    status, _, _ = get(server, "/feeds/tables.json", etag)  # another body, another tag
    assert status == 200
    status, body_ = server.command("f1", "turn", TOKEN)
    assert status == 200, body_
    try:
        status, headers, body = get(server, "/feeds/tables/f1.json", etag)
        assert status == 200 and headers["etag"] != etag
        assert json.loads(body)[0]["at_table"] == "a"
    finally:  # the turn back: Boris at the table, as the module's other tests expect it
        assert server.command("f1", "turn", TOKEN)[0] == 200


def test_errors_as_the_rest_of_the_api(server: ThreadServer) -> None:
    status, _, body = get(server, "/feeds/tables/nope.json")
    assert status == 404 and json.loads(body)["error"]["code"] == "unknown_table"
    status, _, body = get(server, "/feeds/tables/f1.txt")
    assert status == 422 and json.loads(body)["error"]["code"] == "invalid_request"
    status, _, body = get(server, "/feeds/tables.json?lang=de")
    assert status == 422
    status, body = http("POST", server.url + "/feeds/tables.json", {})
    assert status == 405
