"""The draw on a real service: imported with ``shotclock draw import FILE`` and over HTTP,
refused with the line and the reason, assigned, kept across a SIGKILL, and a table's next
match started from it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli import Ran, shotclock
from tests.server import ServerProcess, http

TOKEN = "t0ken"
DRAW = ("number,player1,player2,race_to,event,round,table\n"
        "1,Ivanov,Petrov,1,City cup,Round 1,1\n"
        "2,Sidorov,Orlov,1,City cup,Round 1,2\n"
        "3,Smirnov,Kuznetsov,1,City cup,Round 2,next\n")


def cli(*args: str) -> Ran:
    """``shotclock draw ARGS``, run by this process (tests/cli.py)."""
    return shotclock("draw", *args)


def post_text(server: ServerProcess, path: str, text: str, kind: str,
              token: str | None = TOKEN) -> tuple[int, dict]:
    import urllib.error
    import urllib.request
    request = urllib.request.Request(server.url + path, data=text.encode(), method="POST",
                                     headers={"Content-Type": kind,
                                              **({"Authorization": f"Bearer {token}"}
                                                 if token else {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_draw_import_assign_restart_and_start_next(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "s.db", env={"SHOTCLOCK_REFEREE_TOKEN": TOKEN}).start()
    try:
        assert http("POST", server.url + "/api/tables",
                    {"id": "2", "players": ["A", "B"]}, TOKEN)[0] == 201
        bad = tmp_path / "bad.csv"
        bad.write_text(DRAW.replace("Orlov", "=cmd|' /C calc'!A0").replace(",next", ",7"),
                       encoding="utf-8")
        refused = cli("import", str(bad), "--server", server.url, "--token", TOKEN)
        assert refused.returncode == 1, refused
        assert "line 3: player2 \"=cmd|' /C calc'!A0\" starts with '='" in refused.stderr
        assert "line 4: unknown table '7'" in refused.stderr
        assert http("GET", server.url + "/api/draw")[1]["matches"] == []  # nothing imported
        assert post_text(server, "/api/draw", DRAW, "text/csv", token=None)[0] == 401
        good = tmp_path / "draw.csv"
        good.write_text(DRAW, encoding="utf-8")
        done = cli("import", str(good), "--server", server.url, "--token", TOKEN)
        assert done.returncode == 0, done.stderr
        assert "3 matches imported" in done.stdout
        again = post_text(server, "/api/draw", DRAW, "text/csv")
        assert again[0] == 422 and again[1]["error"]["problems"][0] == {
            "line": 2, "reason": "match number 1 is already in the draw",
            "code": "draw_number_taken", "data": {"number": 1}}

        status, moved = http("POST", server.url + "/api/draw/3/assign", {"table": "2"}, TOKEN)
        assert status == 200 and moved["table"] == "2"
        server.kill()  # the draw is in the store: a crash keeps it
        server.start()
        view = http("GET", server.url + "/api/draw")[1]
        assert [m["number"] for m in view["tables"]["2"]["queue"]] == [2, 3]
        assert view["tables"]["1"]["next"]["players"] == ["Ivanov", "Petrov"]
        assert http("GET", server.url + "/api/tables/1/next")[1]["next"]["number"] == 1

        # Table 1's default match was never begun: the draw's first starts with no reason.
        status, state = http("POST", server.url + "/api/tables/1/next", {}, TOKEN)
        assert status == 200, state
        assert state["players"] == ["Ivanov", "Petrov"] and state["match"]["race_to"] == 1
        view = http("GET", server.url + "/api/draw")[1]
        assert view["tables"]["1"]["playing"]["match_id"] == state["match"]["id"]
        assert view["tables"]["1"]["next"] is None  # nothing left for table 1
        # The match ends (race to 1): it is done in the draw.
        assert http("POST", server.url + "/api/tables/1/commands",
                    {"command": "new_frame", "winner": 0, "reason": "walkover"}, TOKEN)[0] == 200
        view = http("GET", server.url + "/api/draw")[1]
        assert [m["status"] for m in view["matches"]] == ["done", "queued", "queued"]
        status, body = http("POST", server.url + "/api/tables/1/next", {}, TOKEN)
        assert (status, body["error"]["code"]) == (409, "no_next_match")
    finally:
        server.stop()
