"""The announced call (issue 12: the `call` command, the state's `announced_call`) on the
display (spectators at 4 m) and the overlay (the stream) while it is in force: from the
call until the shot's result judges it, then gone; the lower third keeps its height."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from harness.server import Service
from tests.browser.conftest import FULL_HD, Traffic, make_table, shoot

pytestmark = pytest.mark.browser

PI = {"width": 800, "height": 480}
SLOW = {"shot_ms": 30_000, "floor_ms": 20_000, "extension_ms": 15_000, "warnings_ms": [10_000]}


def post(server: Service, table: str, command: str, **fields: Any) -> dict[str, Any]:
    status, body = server.command(table, command, **fields)
    assert status == 200, body
    return body


def test_the_call_in_force_is_on_the_display_and_the_overlay_until_it_is_judged(
        shared_server: Service, context: Any, traffic: Traffic) -> None:
    table = "called"
    make_table(shared_server, table, profile=SLOW)
    for command, fields in (("start", {}), ("shot", {}), ("result", {"legal_break": True})):
        post(shared_server, table, command, **fields)  # the break: no call on it
    display = context.new_page()
    display.set_viewport_size(PI)
    display.goto(f"{shared_server.url}/display?table={table}&lang=en")
    overlay = context.new_page()
    overlay.set_viewport_size(FULL_HD)
    overlay.goto(f"{shared_server.url}/overlay?table={table}&lang=en")
    call = display.locator("#call")
    tag = overlay.locator("#p1 .call-tag")  # Petrov is at the table after the break
    expect(overlay.locator("#p1")).to_have_class("side right at-table")
    expect(call).to_be_hidden()
    third_height = overlay.locator("#third").bounding_box()["height"]

    state = post(shared_server, table, "call", pocket="bottom_left", cushions=["right_bottom"])
    assert state["announced_call"]["pocket"] == "bottom_left"
    expect(call).to_have_text("Call: bottom left pocket · cushion right lower")
    expect(tag).to_have_text("Callbottom left · 1 cushion")
    expect(overlay.locator("#p0 .call-tag")).to_be_hidden()
    # Large enough for 4 m (at least 4% of the screen height), on one line, inside the screen.
    box = call.bounding_box()
    assert box is not None and box["height"] >= 0.04 * PI["height"]
    assert box["x"] >= 0 and box["x"] + box["width"] <= PI["width"]
    assert box["y"] + box["height"] <= PI["height"]
    assert overlay.locator("#third").bounding_box()["height"] == third_height  # no taller
    assert overlay.evaluate("(() => { const e = document.querySelector('#p1 .call-tag b');"
                            " return e.scrollWidth <= e.clientWidth + 1; })()")  # not cut
    tag_box, third_box = tag.bounding_box(), overlay.locator("#third").bounding_box()
    assert tag_box["y"] >= third_box["y"] and tag_box["y"] + tag_box["height"] <= third_box["y"] + third_box["height"]
    post(shared_server, table, "start")
    expect(display.locator("body")).to_have_attribute("data-stage", "running")
    expect(call).to_be_visible()  # in force while the shot is played
    shoot(display, "display-call-pi")
    shoot(overlay, "overlay-call-1080p")
    display.locator("#lang").click()
    expect(call).to_have_text("Заказ: нижняя левая луза · борт правый нижний")
    shoot(display, "display-call-pi-ru")

    post(shared_server, table, "shot")
    post(shared_server, table, "result", colour_potted=False)  # judged: the call is spent
    expect(call).to_be_hidden()
    expect(tag).to_be_hidden()
    assert traffic.errors == []
