"""The scripted match (tests/reports/scripted.py) through the real app on a fake clock:
every figure of the API, the CSV and the protocol equals the hand-computed one.

The match is played once per module (in-process app, httpx over ASGI, ``FakeTime``: no
test waits for the clock); the tests below are tables of expected figures against it.
"""

from __future__ import annotations

import asyncio
import csv
import io
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest

from clock_service.edges.cli.main import table_app
from clock_service.service.settings import Settings
from clock_service.service.timesource import FakeTime
from tests.reports.scripted import FRAMES, PLAYERS, SHOTS, play_match_1, settle_runtime

PLAYER_NAMES = ["Ivanov", "Petrov"]


async def _scenario(db: Path) -> dict[str, Any]:
    time = FakeTime()
    app = table_app(Settings(db=str(db), default_table=None, command_rate=0), time=time)
    out: dict[str, Any] = {}
    async with app.router.lifespan_context(app):
        runtime = app.state.served.runtime
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:

            async def command(name: str, **fields: Any) -> dict[str, Any]:
                reply = await client.post("/api/tables/m/commands",
                                          json={"command": name, **fields})
                assert reply.status_code == 200, (name, fields, reply.text)
                return reply.json()  # type: ignore[no-any-return]

            created = await client.post("/api/tables", json={
                "id": "m", "players": PLAYER_NAMES, "race_to": 2, "event": "City Cup",
                "referee": "Orlov"})
            assert created.status_code == 201, created.text
            await play_match_1(command, time, lambda: settle_runtime(runtime))
            out["state_after_1"] = (await client.get("/api/tables/m")).json()
            out["match_1"] = (await client.get("/api/matches/m.1")).json()
            out["match_1_brief"] = (await client.get("/api/matches/m.1?shots=false")).json()
            out["csv_1"] = (await client.get("/api/matches/m.1/shots.csv")).text
            out["csv_1_ru"] = (await client.get("/api/matches/m.1/shots.csv?locale=ru")).content
            out["html_1"] = (await client.get("/report?match=m.1&lang=en")).text
            out["html_1_ru"] = (await client.get("/report?match=m.1&lang=ru")).text
            for chart in ("distribution", "shots", "timeline"):
                reply = await client.get(f"/api/matches/m.1/charts/{chart}.svg")
                assert reply.headers["content-type"] == "image/svg+xml"
                out[f"svg_{chart}"] = reply.text

            # The next match on the table, without a timer: the first stays on record.
            time.advance(60_000)
            state = await command("new_match", players=["Sidorov", "Petrov"], timer=False,
                                  race_to=1)
            out["state_2"] = state
            await command("start")
            time.advance(9000)
            await command("shot")
            await command("result", whites_potted=1, legal_break=True)
            await command("start")
            time.advance(4000)
            await command("shot")
            await command("foul", reason="touched a ball")
            await settle_runtime(runtime)
            out["match_2"] = (await client.get("/api/matches/m.2")).json()
            out["csv_2"] = (await client.get("/api/matches/m.2/shots.csv")).text
            out["html_2"] = (await client.get("/report?match=m.2")).text
            out["svg_2_shots"] = (await client.get("/api/matches/m.2/charts/shots.svg")).text
            out["match_1_again"] = (await client.get("/api/matches/m.1")).json()
            out["list"] = (await client.get("/api/matches")).json()
            out["page_1"] = (await client.get("/api/matches?table=m&limit=1")).json()
            after = out["page_1"]["next"]
            out["page_2"] = (await client.get(f"/api/matches?table=m&limit=1&after={after}")
                             ).json()
            out["no_table"] = (await client.get("/api/matches?table=zz")).json()
            out["since"] = (await client.get(
                f"/api/matches?since={out['match_2']['started_at']}")).json()
            out["unknown"] = await client.get("/api/matches/m.9")
            out["bad_id"] = await client.get("/api/matches/nonsense")
            out["bad_cursor"] = await client.get("/api/matches?after=m.9")
            out["too_many"] = await client.get("/api/matches?limit=201")
            out["unknown_report"] = await client.get("/report?match=m.9")

            # Archived (lan, issue 11): the matches follow the events to m~1 and stay
            # addressable; a new table m starts its own match 1.
            archived = await client.delete("/api/tables/m")
            assert archived.status_code == 200, archived.text
            out["archived_as"] = archived.json()["archived_as"]
            out["archived_list"] = (await client.get(
                f"/api/matches?table={out['archived_as']}")).json()
            out["archived_1"] = (await client.get(
                f"/api/matches/{out['archived_as']}.1")).json()
            out["archived_report"] = await client.get(
                f"/report?match={out['archived_as']}.1&lang=en")
            created = await client.post("/api/tables", json={"id": "m",
                                                             "players": ["New", "Pair"]})
            assert created.status_code == 201, created.text
            out["new_m_1"] = (await client.get("/api/matches/m.1")).json()
    return out


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return asyncio.run(_scenario(tmp_path_factory.mktemp("scripted") / "m.db"))


def _stats(record: dict[str, Any], scope: str, player: int) -> dict[str, Any]:
    if scope == "match":
        return record["players_stats"][player]  # type: ignore[no-any-return]
    frame = int(scope.removeprefix("frame"))
    return record["frames"][frame - 1]["players"][player]  # type: ignore[no-any-return]


# -- the API ------------------------------------------------------------------------------------

def test_the_match_header_comes_from_the_table_and_its_end(played: dict[str, Any]) -> None:
    match = played["match_1"]
    assert {k: match[k] for k in ("id", "table", "number", "players", "timer", "race_to",
                                  "event", "referee", "over", "winner", "score", "status")} == {
        "id": "m.1", "table": "m", "number": 1, "players": PLAYER_NAMES, "timer": True,
        "race_to": 2, "event": "City Cup", "referee": "Orlov", "over": True, "winner": 0,
        "score": [2, 1], "status": "over"}
    assert played["state_after_1"]["match"]["id"] == "m.1"
    assert played["state_2"]["match"] | {"id": "m.2", "number": 2} == played["state_2"]["match"]
    assert re.fullmatch(r"[0-9a-f]{64}", match["log_sha256"])


@pytest.mark.parametrize("number", sorted(FRAMES))
def test_frames_breaker_winner_reason_duration_and_whites(played: dict[str, Any],
                                                         number: int) -> None:
    frame = played["match_1"]["frames"][number - 1]
    breaker, winner, reason, duration, whites = FRAMES[number]
    assert (frame["number"], frame["breaker"], frame["winner"], frame["reason"],
            frame["duration_ms"], frame["whites"]) == (number, breaker, winner, reason,
                                                       duration, whites)


def test_every_timed_attempt_is_a_shot_row_with_the_clock_time(played: dict[str, Any]) -> None:
    shots = [s for f in played["match_1"]["frames"] for s in f["shots"]]
    got = [(s["frame"], s["visit"], s["round"], PLAYER_NAMES[s["player"]], s["limit_ms"],
            s["used_ms"], int(s["extension"]), s["outcome"], ";".join(s["fouls"]))
           for s in shots]
    assert got == SHOTS


@pytest.mark.parametrize("key", list(PLAYERS), ids=[f"{s}-{PLAYER_NAMES[p]}" for s, p in PLAYERS])
def test_player_statistics_per_frame_and_match(played: dict[str, Any],
                                               key: tuple[str, int]) -> None:
    got = _stats(played["match_1"], *key)
    expected = PLAYERS[key]
    assert {k: got[k] for k in expected} == expected


def test_fouls_carry_their_rules_and_extensions_their_players(played: dict[str, Any]) -> None:
    fouls = [(f["frame"], f["visit"], f["player"], f["rule"], f["time_foul"],
              f["technical_loss"]) for fr in played["match_1"]["frames"] for f in fr["fouls"]]
    assert fouls == [(1, 3, 0, "12.4", True, False), (2, 3, 1, "9", False, False),
                     (2, 5, 1, "9", False, True), (3, 2, 1, "12.4", True, False)]
    extensions = [(e["frame"], e["visit"], e["player"], e["extension_ms"])
                  for fr in played["match_1"]["frames"] for e in fr["extensions"]]
    assert extensions == [(1, 2, 1, 15000), (2, 2, 0, 15000)]


# -- a new match does not erase the previous one -------------------------------------------

def test_a_new_match_leaves_the_previous_one_as_it_was(played: dict[str, Any]) -> None:
    first, again = played["match_1"], played["match_1_again"]
    assert {k: v for k, v in again.items()} == first


def test_without_a_timer_the_time_figures_are_absent_not_zero(played: dict[str, Any]) -> None:
    second = played["match_2"]
    assert (second["id"], second["players"], second["timer"], second["status"]) == (
        "m.2", ["Sidorov", "Petrov"], False, "playing")
    sidorov = second["players_stats"][0]
    assert (sidorov["shots"], sidorov["timed_shots"], sidorov["whites"], sidorov["fouls"]) == (
        2, 0, 1, 1)
    for name in ("mean_ms", "median_ms", "p90_ms", "max_ms", "total_ms", "over_20s",
                 "over_30s", "share_over_20s", "share_over_30s"):
        assert sidorov[name] is None, name
    assert [s["used_ms"] for f in second["frames"] for s in f["shots"]] == [None, None]
    rows = list(csv.DictReader(io.StringIO(played["csv_2"])))
    assert [(r["used_ms"], r["limit_ms"]) for r in rows] == [("", ""), ("", "")]
    # The protocol shows no time row at all, and no time charts.
    html = played["html_2"]
    assert 'data-stat="mean_ms"' not in html and "chart-distribution" not in html
    assert "no timer" in played["svg_2_shots"]


def test_listing_is_newest_first_paginated_and_filtered(played: dict[str, Any]) -> None:
    assert [m["id"] for m in played["list"]["matches"]] == ["m.2", "m.1"]
    assert played["list"]["next"] is None
    first = played["list"]["matches"][1]
    assert (first["status"], first["score"], first["frames"], first["winner"],
            first["end_seq"] is not None) == ("over", [2, 1], 3, 0, True)
    second = played["list"]["matches"][0]
    assert (second["status"], second["end_seq"], second["ended_at"], second["timer"]) == (
        "playing", None, None, False)
    assert [m["id"] for m in played["page_1"]["matches"]] == ["m.2"]
    assert played["page_1"]["next"] == "m.2"
    assert [m["id"] for m in played["page_2"]["matches"]] == ["m.1"]
    assert played["page_2"]["next"] is None
    assert played["no_table"] == {"matches": [], "next": None}
    assert [m["id"] for m in played["since"]["matches"]] == ["m.2"]


@pytest.mark.parametrize(("name", "status", "code"), [
    # A malformed id is malformed (docs/policy.md: ids have their patterns); a well-formed
    # one that names no match is unknown.
    ("unknown", 404, "unknown_match"), ("bad_id", 422, "invalid_request"),
    ("bad_cursor", 404, "unknown_match"), ("too_many", 422, "invalid_request"),
])
def test_errors_are_json_with_a_code(played: dict[str, Any], name: str, status: int,
                                     code: str) -> None:
    reply = played[name]
    assert (reply.status_code, reply.json()["error"]["code"]) == (status, code)


def test_a_wrong_protocol_address_is_a_page(played: dict[str, Any]) -> None:
    """Issue 23: /report with a wrong id is a page (404) that says so, not raw JSON."""
    reply = played["unknown_report"]
    assert reply.status_code == 404
    assert reply.headers["content-type"].startswith("text/html")
    assert "No such match" in reply.text and "m.9" in reply.text and 'href="/"' in reply.text


def test_an_archived_tables_matches_stay_on_record(played: dict[str, Any]) -> None:
    archive = played["archived_as"]
    assert archive == "m~1"
    listed = played["archived_list"]["matches"]
    assert [(m["id"], m["status"]) for m in listed] == [("m~1.2", "closed"), ("m~1.1", "over")]
    moved = played["archived_1"]
    for key in ("players_stats", "score", "winner", "log_sha256", "start_seq", "last_seq"):
        assert moved[key] == played["match_1"][key], key
    assert (moved["id"], moved["table"]) == ("m~1.1", "m~1")
    assert played["archived_report"].status_code == 200
    assert "2 : 1" in played["archived_report"].text
    assert (played["new_m_1"]["players"], played["new_m_1"]["frames"][0]["shots"]) == (
        ["New", "Pair"], [])


# -- the CSV ------------------------------------------------------------------------------------

def test_the_csv_has_one_row_per_shot_with_the_hand_computed_figures(
        played: dict[str, Any]) -> None:
    reader = csv.reader(io.StringIO(played["csv_1"]))
    header = next(reader)
    assert header[:10] == ["match", "frame", "visit", "round", "player", "limit_ms", "used_ms",
                           "extension", "outcome", "fouls"]
    rows = [tuple(r[:10]) for r in reader]
    assert rows == [("m.1", *(str(v) for v in shot)) for shot in SHOTS]


def test_the_russian_csv_opens_in_russian_excel(played: dict[str, Any]) -> None:
    """Issue 23: ?locale=ru starts with a UTF-8 byte-order mark and separates by ';' (the
    list separator of a Russian Windows); the rows are the same."""
    raw = played["csv_1_ru"]
    assert raw.startswith(b"\xef\xbb\xbf")
    text = raw.decode("utf-8-sig")
    assert text.splitlines()[0].startswith("match;frame;visit;round;player;")
    ru = [r[:10] for r in csv.reader(io.StringIO(text), delimiter=";")]
    en = [r[:10] for r in csv.reader(io.StringIO(played["csv_1"]))]
    assert ru == en and len(ru) == len(SHOTS) + 1


# -- the protocol -------------------------------------------------------------------------------

class _Cells(HTMLParser):
    """Text of every element with data-stat/data-field (and data-player), by key."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: dict[tuple[str, ...], str] = {}
        self._open: list[tuple[tuple[str, ...] | None, list[str]]] = []
        self.frame: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr" and a.get("data-frame"):
            self.frame = a["data-frame"]
        key: tuple[str, ...] | None = None
        if a.get("data-stat"):
            key = ("stat", a["data-stat"] or "", a.get("data-player") or "",
                   self.frame or "" if a.get("data-player") is None else "")
        elif a.get("data-field"):
            key = ("field", a["data-field"] or "")
        self._open.append((key, []))

    def handle_endtag(self, tag: str) -> None:
        if not self._open:
            return
        key, text = self._open.pop()
        if key is not None:
            self.cells[key] = "".join(text).strip()
        if self._open:
            self._open[-1][1].extend(text)
        if tag == "tbody":
            self.frame = None

    def handle_data(self, data: str) -> None:
        if self._open:
            self._open[-1][1].append(data)


def _cells(html: str) -> dict[tuple[str, ...], str]:
    parser = _Cells()
    parser.feed(html)
    return parser.cells


# Match statistics as the protocol prints them: (stat, player) -> text, from PLAYERS by hand.
PROTOCOL_STATS = {
    ("shots", 0): "6", ("shots", 1): "5",
    ("mean_ms", 0): "18.0", ("mean_ms", 1): "25.3",
    ("median_ms", 0): "15.0", ("median_ms", 1): "25.5",
    ("p90_ms", 0): "40.0", ("p90_ms", 1): "44.0",
    ("max_ms", 0): "40.0", ("max_ms", 1): "44.0",
    ("over_20s", 0): "1 (17%)", ("over_20s", 1): "4 (80%)",
    ("over_30s", 0): "1 (17%)", ("over_30s", 1): "2 (40%)",
    ("extensions", 0): "1", ("extensions", 1): "1",
    ("time_fouls", 0): "1", ("time_fouls", 1): "1",
    ("fouls", 0): "1", ("fouls", 1): "3",
    ("whites", 0): "3", ("whites", 1): "1",
    ("visits", 0): "6", ("visits", 1): "6",
    ("frames_won", 0): "2", ("frames_won", 1): "1",
    ("breaks_won", 0): "1 / 2", ("breaks_won", 1): "0 / 1",
}


@pytest.mark.parametrize("key", list(PROTOCOL_STATS), ids=lambda k: f"{k[0]}-{k[1]}")
def test_the_protocol_prints_the_hand_computed_statistics(played: dict[str, Any],
                                                          key: tuple[str, int]) -> None:
    stat, player = key
    cells = _cells(played["html_1"])
    assert cells[("stat", stat, str(player), "")] == PROTOCOL_STATS[key]


# Frames as the protocol prints them: number -> (winner, reason, duration m:ss, whites,
# fouls, time fouls, extensions).
PROTOCOL_FRAMES = {
    "1": ("Petrov", "coloured ball (3.2)", "3:15", "2 : 1", "1 : 0", "1 : 0", "0 : 1"),
    "2": ("Ivanov", "technical loss (10.5)", "1:56", "1 : 0", "0 : 2", "0 : 0", "1 : 0"),
    "3": ("Ivanov", "coloured ball (3.2)", "1:02", "0 : 0", "0 : 1", "0 : 1", "0 : 0"),
}


@pytest.mark.parametrize("frame", list(PROTOCOL_FRAMES))
def test_the_protocol_prints_each_frame_with_its_reason(played: dict[str, Any],
                                                        frame: str) -> None:
    cells = _cells(played["html_1"])
    got = tuple(cells[("stat", k, "", frame)] for k in (
        "winner", "reason", "duration", "whites", "fouls", "time_fouls", "extensions"))
    assert got == PROTOCOL_FRAMES[frame]


def test_the_protocol_header_result_fouls_and_signatures(played: dict[str, Any]) -> None:
    html = played["html_1"]
    cells = _cells(html)
    assert (cells[("field", "event")], cells[("field", "table")], cells[("field", "referee")],
            cells[("field", "score")], cells[("field", "winner")]) == (
        "City Cup", "m", "Orlov", "2 : 1", "Ivanov")
    rules = re.findall(r'data-stat="rule">([^<]*)<', html)
    assert rules == ["12.4", "9", "9", "12.4"]
    assert html.count('class="sign"') == 3
    assert "<script" not in html
    assert played["match_1"]["log_sha256"] in cells[("field", "source")]
    ru = _cells(played["html_1_ru"])
    assert ru[("stat", "reason", "", "2")] == "техническое поражение (10.5)"
    assert 'lang="ru"' in played["html_1_ru"]


# -- the pictures -----------------------------------------------------------------------------

def test_the_charts_carry_one_mark_per_shot_bin_visit_foul_and_extension(
        played: dict[str, Any]) -> None:
    dist = played["svg_distribution"]
    bars = re.findall(r'class="bar" data-player="(\d)" data-bin="(\d+)" data-count="(\d+)"',
                      dist)
    # Bins of 5 s: Ivanov 7|11,12|18|20|40 -> bins 1,2,3,4,8; Petrov 5|21|25.5|31|44 ->
    # bins 1,4,5,6,8.
    assert sorted((int(p), int(b), int(c)) for p, b, c in bars) == [
        (0, 1, 1), (0, 2, 2), (0, 3, 1), (0, 4, 1), (0, 8, 1),
        (1, 1, 1), (1, 4, 1), (1, 5, 1), (1, 6, 1), (1, 8, 1)]
    shots = played["svg_shots"]
    assert len(re.findall(r'<circle class="point"', shots)) == 11  # shots played
    assert len(re.findall(r'<path class="time-foul"', shots)) == 2
    assert len(re.findall(r'<circle class="stop"', shots)) == 1
    assert len(re.findall(r'<rect class="extension"', shots)) == 2
    assert len(re.findall(r'class="frame-sep"', shots)) == 2
    # The limit steps 35 -> 30 s at frame 2's round 3: two levels in one path.
    path = re.search(r'<path class="limit" d="([^"]+)"', shots)
    assert path is not None
    assert len({y for y in re.findall(r",([\d.]+)", path.group(1))}) == 2
    timeline = played["svg_timeline"]
    assert len(re.findall(r'<rect class="visit"', timeline)) == 4 + 5 + 3
    assert len(re.findall(r'<path class="foul-mark"', timeline)) == 4
    assert len(re.findall(r'<path class="ext-mark"', timeline)) == 2
    assert len(re.findall(r'<rect class="pause"', timeline)) == 1


# -- the contract ---------------------------------------------------------------------------

def test_every_answer_matches_its_documented_schema(played: dict[str, Any]) -> None:
    """The OpenAPI models (schemas.py) are closed: a field the document lacks fails here."""
    from clock_service.service.wire.matches import MatchPage, MatchRecordOut

    for name in ("match_1", "match_2", "match_1_again", "match_1_brief"):
        MatchRecordOut.model_validate(played[name])
    brief = played["match_1_brief"]
    assert "shots" not in brief["frames"][0] and brief["players_stats"] == played[
        "match_1"]["players_stats"]
    for name in ("list", "page_1", "page_2", "no_table", "since"):
        MatchPage.model_validate(played[name])
