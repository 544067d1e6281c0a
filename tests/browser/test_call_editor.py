"""Issue 12 on the console: the call announced before the shot (7.1), the break's legality as
an explicit choice (4.2, D11), general fouls with their codes (9, D10), in both languages."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from harness.server import Service
from tests.browser.conftest import PHONE, Traffic, make_table, shoot
from tests.browser.test_console import open_console, visible_small_targets

pytestmark = pytest.mark.browser

SLOW = {"shot_ms": 60_000, "floor_ms": 30_000}


def post(server: Service, table: str, command: str, **fields: Any) -> dict[str, Any]:
    status, body = server.command(table, command, **fields)
    assert status == 200, body
    return body


def events(server: Service, table: str, kind: str) -> list[dict[str, Any]]:
    return [e["data"] for e in server.get(f"/api/tables/{table}/events") if e["type"] == kind]


def test_call_announced_before_the_shot_then_the_result_judged_by_it(
        shared_server: Service, context: Any, traffic: Traffic) -> None:
    make_table(shared_server, "call1", profile=SLOW)
    for command, fields in (("start", {}), ("shot", {}),
                            ("result", {"whites_potted": 3, "legal_break": True})):
        post(shared_server, "call1", command, **fields)  # Ivanov: 3 whites on the break
    page = open_console(context, shared_server, "call1", PHONE)
    button = page.locator("#btn-result")
    panel = page.locator("#result-panel")
    expect(button).to_have_text("Call…")  # before the shot: the call (7.1)
    page.locator("#btn-main").click()  # start: the clock runs, the call is still open
    expect(page.locator("#btn-main")).to_have_attribute("data-command", "shot")
    expect(button).to_be_enabled()
    button.click()
    expect(panel).to_have_attribute("data-mode", "call")
    expect(page.locator("#res-title-text")).to_have_text("Call")
    expect(page.locator("#res-announced")).to_contain_text("No call announced yet")
    for hidden in ("#res-main", "#res-break-row", "#res-foul-row", "#res-send", "#res-route"):
        expect(page.locator(hidden)).to_be_hidden()
    page.locator("#call-table [data-pocket='bottom_left']").click()
    page.locator("#call-table [data-cushion='right_bottom']").click()
    expect(page.locator("#call-cushions")).to_have_text("right lower")
    assert visible_small_targets(page) == []
    panel.scroll_into_view_if_needed()
    shoot(page, "referee-call-before-shot-phone")
    page.locator("#res-announce").click()
    expect(button).to_have_text("Call ✓…")
    state = shared_server.get("/api/tables/call1")
    assert state["announced_call"] == {"pocket": "bottom_left", "cushions": ["right_bottom"],
                                       "contacts": [], "shot_type": "normal"}
    announced = events(shared_server, "call1", "call.announced")
    assert len(announced) == 1 and announced[0]["phase"] == "running"

    # The shot: the panel is now the result, judged against the announced call.
    page.locator("#btn-main").click()
    expect(page.locator("#btn-main")).to_have_attribute("data-command", "start")
    expect(button).to_have_text("Shot result…")
    button.click()
    expect(panel).to_have_attribute("data-mode", "result")
    expect(page.locator("#res-announced")).to_contain_text(
        "Announced before the shot bottom left · right lower")
    expect(page.locator("#res-called")).to_be_hidden()  # the call is the announced one
    page.locator("#route-copy").click()  # "as called": the route from the announced call
    expect(page.locator("#res-colour")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#route-pocket")).to_have_text("bottom left")
    expect(page.locator("#route-path")).to_have_text("right lower")
    panel.scroll_into_view_if_needed()
    shoot(page, "referee-result-after-announced-call-phone")
    page.locator("#res-send").click()
    expect(page.locator("#result-question")).to_contain_text("Announced before the shot")
    page.locator("#result-ok").click()
    card = page.locator("#outcome")
    expect(card).to_contain_text("Frame over. Winner: Ivanov")
    expect(card).to_contain_text("Called before the shot: bottom left · right lower ✓")
    shoot(page, "referee-call-card-en-phone")
    page.locator("#lang").click()
    expect(card).to_contain_text("Заказ до удара: нижняя левая · правый нижний ✓")
    shoot(page, "referee-call-card-ru-phone")
    result = events(shared_server, "call1", "shot.result")[-1]
    assert result["report"]["call"] is None  # the result said only what happened
    assert result["report"]["route"]["path"] == ["right_bottom"]
    assert (result["outcome"]["call_timing"], result["outcome"]["call_verdict"]["fulfilled"]) == (
        "announced", True)
    assert traffic.errors == []


def test_break_legality_and_general_fouls_with_codes(
        shared_server: Service, context: Any, traffic: Traffic) -> None:
    make_table(shared_server, "call2", profile=SLOW, race_to=3)
    page = open_console(context, shared_server, "call2", PHONE, lang="ru")
    button = page.locator("#btn-result")
    expect(button).to_have_text("Результат удара…")  # the break has no call (4.4)
    # Start, then shot, each once its answer is in: a second tap while the first press is on
    # its way is the same command again (the state says "ready" until then), and the
    # "start" check below would pass at once on the old state.
    page.locator("#btn-main").click()
    expect(page.locator("#btn-main")).to_have_attribute("data-command", "shot")
    page.locator("#btn-main").click()
    expect(page.locator("#btn-main")).to_have_attribute("data-command", "start")
    expect(page.locator("#btn-undo")).to_have_attribute("data-step", "shot")
    button.click()
    # The break's legality: one tap, "legal" preselected and marked as the default (D11).
    yes, no = page.locator("#res-break-yes"), page.locator("#res-break-no")
    expect(yes).to_have_attribute("aria-pressed", "true")
    expect(yes).to_contain_text("по умолчанию")
    expect(no).to_have_text("Неправильный: фол 4.3")
    shoot(page, "referee-break-choice-ru-phone")
    no.click()
    page.locator("#res-send").click()
    card = page.locator("#outcome")
    expect(card).to_contain_text("Фол — Ivanov: неправильный разбой")
    expect(card.locator("li.foul .rule")).to_have_text("правило 4.3")
    assert events(shared_server, "call2", "shot.result")[-1]["report"]["legal_break"] is False

    # A general foul from the foul dialog, with its code and detail (9, D10).
    post(shared_server, "call2", "hand_back")  # Ivanov plays on from the position (D7)
    page.locator("#btn-foul").click()
    page.locator("#foul-reason").select_option("ball_off_table")
    expect(page.locator("#foul-balls-row")).to_be_visible()
    page.locator("#foul-balls").select_option("colour")
    page.locator("#foul-player").select_option("1")  # Petrov, from his chair
    shoot(page, "referee-foul-dialog-codes-ru-phone")
    page.locator("#foul-ok").click()
    expect(card).to_contain_text("шар вылетел со стола: цветной")
    expect(card).to_contain_text("Выставить: цветной — на заднюю отметку")  # 11.1
    foul = events(shared_server, "call2", "foul")[-1]
    assert (foul["player"], foul["code"], foul["rule"], foul["breaches"][0]["balls"]) == (
        1, "ball_off_table", "9", ["colour"])
    shoot(page, "referee-foul-card-ru-phone")
    # Out of turn is the foul of the one who played: the dialog proposes the seated player.
    page.locator("#lang").click()  # and in English
    page.locator("#btn-foul").click()
    state = shared_server.get("/api/tables/call2")
    page.locator("#foul-reason").select_option("out_of_turn")
    expect(page.locator("#foul-player")).to_have_value(str(1 - state["player"]))
    page.locator("#foul-reason").select_option("touched_ball")
    expect(page.locator("#foul-with-row")).to_be_visible()
    page.locator("#foul-with").select_option("clothing")
    page.locator("#foul-player").select_option("0")
    page.locator("#foul-ok").click()
    expect(card).to_contain_text("touched a ball with the clothing")
    assert events(shared_server, "call2", "foul")[-1]["breaches"][0]["touched_with"] == "clothing"
    assert traffic.errors == []
