"""The draw in the browser (issue 25 point 4): imported from the hall page, played through
two tables, the next match started from the console; the display says what is next; a bad
file is refused on the hall page with the line and the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from harness.thread_server import ThreadServer
from tests.browser.conftest import make_table, wait_past
from tests.waiting import until

DRAW = ("number,player1,player2,race_to,event,round,table\n"
        "1,Ivanov,Petrov,1,City cup,Round 1,1\n"
        "2,Sidorov,Orlov,1,City cup,Round 1,2\n"
        "3,Smirnov,Kuznetsov,1,City cup,Round 2,1\n"
        "4,Popov,Vasiliev,1,City cup,Round 2,next\n")


def finish_match(server: ThreadServer, table: str, winner: int) -> None:
    status, body = server.command(table, "new_frame", winner=winner, reason="walkover")
    assert status == 200 and body["match"]["over"], body


def test_draw_imported_played_through_two_tables_next_started_from_the_console(
        server: ThreadServer, context: Any, tmp_path: Path) -> None:
    make_table(server, "2", players=("A", "B"))
    hall = context.new_page()
    hall.goto(f"{server.url}/?lang=en")
    expect(hall.locator("#draw")).to_be_visible()
    bad = tmp_path / "bad.csv"
    bad.write_text(DRAW.replace("Kuznetsov", "=1+1").replace(",next", ",5"), encoding="utf-8")
    hall.locator('#draw-upload input[type="file"]').set_input_files(str(bad))
    hall.locator("#draw-upload button").click()
    result = hall.locator("#draw-result")
    expect(result).to_contain_text("Refused, nothing imported:")
    expect(result).to_contain_text("line 4: player2 “=1+1” starts with “=”")
    expect(result).to_contain_text("line 5: there is no table “5”: the tables are 1, 2")
    good = tmp_path / "draw.csv"
    good.write_text(DRAW, encoding="utf-8")
    hall.locator('#draw-upload input[type="file"]').set_input_files(str(good))
    hall.locator("#draw-upload button").click()
    expect(result).to_have_text("4 matches imported")
    queue1 = hall.locator('.draw-queue[data-table="1"] li')
    expect(queue1).to_have_count(2)
    expect(queue1.nth(0)).to_contain_text("1. Ivanov – Petrov · race to 1 · City cup, Round 1")
    expect(hall.locator('.draw-queue[data-table=""] li')).to_have_text(
        ["4. Popov – Vasiliev · race to 1 · City cup, Round 2"])

    # The tables' first matches (the open-ended ones made at start are left with a reason).
    for table in ("1", "2"):
        status, _ = server.post(f"/api/tables/{table}/next", {"reason": "the draw starts"})
        assert status == 200
    console = context.new_page()
    console.goto(f"{server.url}/referee?table=1&lang=en")
    display = context.new_page()
    display.goto(f"{server.url}/display?table=1&lang=en")
    expect(display.locator("#p0 .name")).to_have_text("Ivanov")
    expect(console.locator("#btn-next-match")).to_be_hidden()
    expect(console.locator("#btn-main")).to_be_visible()

    # Table 1's match ends: the display says what is next, the console offers it.
    seq = int(server.get("/api/tables/1")["seq"])
    finish_match(server, "1", 0)
    wait_past(display, seq)
    expect(display.locator("#next-match")).to_have_text("Next: Smirnov – Kuznetsov, race to 1")
    start_next = console.locator("#btn-next-match")
    expect(start_next).to_be_visible()
    expect(start_next).to_contain_text("Start next match")
    expect(console.locator("#btn-main")).to_be_hidden()  # in the main button's place
    box_next, box_main = start_next.bounding_box(), None
    start_next.click()
    expect(display.locator("#p0 .name")).to_have_text("Smirnov")
    expect(display.locator("#p1 .name")).to_have_text("Kuznetsov")
    expect(display.locator("#next-match")).to_be_hidden()
    expect(console.locator("#btn-main")).to_be_visible()
    box_main = console.locator("#btn-main").bounding_box()
    assert box_next and box_main and abs(box_next["y"] - box_main["y"]) < 2  # same place
    expect(start_next).to_be_hidden()

    # Table 2 plays its queue, then the match for the next free table.
    console2 = context.new_page()
    console2.goto(f"{server.url}/referee?table=2&lang=en")
    finish_match(server, "2", 1)
    expect(console2.locator("#btn-next-match")).to_contain_text(
        "Next: Popov – Vasiliev, race to 1")
    console2.locator("#btn-next-match").click()
    expect(console2.locator("#p0 .name")).to_have_text("Popov")

    # The hall: each table playing its draw match, nothing left for the next free table.
    # The service's answer first (both matches playing), then the page, which reads
    # GET /api/draw every 5 s: one period and its request's time under load.
    until(lambda: [m["status"] for m in server.get("/api/draw")["matches"]][2:] == [
        "playing", "playing"], 15, 0.1, "matches 3 and 4 playing on the service")
    expect(hall.locator('.draw-queue[data-table="1"] li.playing')).to_contain_text(
        "3. Smirnov – Kuznetsov", timeout=15_000)
    expect(hall.locator('.draw-queue[data-table="2"] li.playing')).to_contain_text(
        "4. Popov – Vasiliev", timeout=15_000)
    expect(hall.locator('.draw-queue[data-table=""] .muted')).to_have_text("no match",
                                                                       timeout=15_000)
    view = server.get("/api/draw")
    assert [(m["number"], m["status"], m["playing_on"]) for m in view["matches"]] == [
        (1, "done", "1"), (2, "done", "2"), (3, "playing", "1"), (4, "playing", "2")]


def test_assign_form_moves_a_match_to_a_tables_queue(server: ThreadServer,
                                                     context: Any) -> None:
    make_table(server, "2", players=("A", "B"))
    status, _ = server.post("/api/draw", None)  # an empty body is no draw
    assert status == 422
    import urllib.request
    request = urllib.request.Request(server.url + "/api/draw", data=DRAW.encode(),
                                     method="POST", headers={"Content-Type": "text/csv"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 201
    hall = context.new_page()
    hall.goto(f"{server.url}/?lang=en")
    form = hall.locator("#draw-assign")
    expect(form.locator('select[name="number"] option')).to_have_count(4)
    form.locator('select[name="number"]').select_option("4")
    form.locator('select[name="table"]').select_option("2")
    form.locator("button").click()
    expect(hall.locator('.draw-queue[data-table="2"] li')).to_have_count(2)
    expect(hall.locator('.draw-queue[data-table=""] .muted')).to_have_text("no match")
