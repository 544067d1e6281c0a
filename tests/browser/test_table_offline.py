"""Display, overlay and console opened through the hall service never count down a table
whose own service is offline: the service says so on the table's WebSocket (``live:
false``, ``stale_since``; tests/mqtt/test_hall.py checks the hall sends it) and the pages
stop at that instant and say it. The feed is faked here, as the contract says it."""

from __future__ import annotations

import json
import math
import time
from typing import Any

from playwright.sync_api import expect

from harness.server import Service
from tests.browser.conftest import FULL_HD, PHONE, Traffic, answer_pings, make_table, shoot

TABLE = "off1"


def test_pages_stop_counting_a_table_that_is_not_live(
        shared_server: Service, context: Any, traffic: Traffic) -> None:
    make_table(shared_server, TABLE, profile={"shot_ms": 60000})
    assert shared_server.command(TABLE, "start")[0] == 200
    state = shared_server.get(f"/api/tables/{TABLE}")
    now = time.time() * 1000
    state.update(deadline=now + 40_000, remaining_ms=40_000, server_time=now)
    sockets: list[Any] = []

    def feed(ws: Any) -> None:
        answer_pings(ws)
        ws.send(json.dumps({"type": "snapshot", "seq": state["seq"], "table": TABLE,
                            "state": state, "referee": True, "faults": [], "live": True,
                            "stale_since": None}))
        sockets.append(ws)

    def tell(live: bool, stale_since: float | None) -> None:
        faults = [] if live else [{
            "key": f"mqtt.table.{TABLE}", "component": "mqtt", "code": "table_offline",
            "message": "offline", "table": TABLE, "since": stale_since}]
        for ws in sockets:
            ws.send(json.dumps({"type": "status", "table": TABLE, "faults": faults,
                                "live": live, "stale_since": stale_since}))

    pages = {}
    for name, path, size in (("display", "/display", FULL_HD), ("overlay", "/overlay", FULL_HD),
                             ("referee", "/referee", PHONE)):
        page = context.new_page()
        page.set_viewport_size(size)
        page.route_web_socket(f"**/ws/tables/{TABLE}*", feed)
        page.goto(f"{shared_server.url}{path}?table={TABLE}&lang=en")
        pages[name] = page
    display, overlay, referee = pages["display"], pages["overlay"], pages["referee"]
    expect(display.locator("#clock")).not_to_have_text("--")
    expect(overlay.locator("#clock")).not_to_have_text("--")
    expect(referee.locator("#btn-main")).not_to_have_attribute("aria-disabled", "true")
    assert display.locator("#tableoff").is_hidden()

    # Counting: 39 or less shown (the snapshot said 40 s left).
    display.wait_for_function("Number(document.querySelector('#clock').textContent) < 40",
                              timeout=10_000)
    # The hall says the table went stale at an instant half a second into a whole second,
    # 0.5-1.5 s from now: the digits stop there. Not "now": the page's estimate of the
    # service's clock may be ahead of this process's by a few hundred ms on a busy machine
    # (its pings are answered here), so it may already show the next lower number, and a
    # countdown never goes back up while its state is unchanged (countdown.js Steady): a
    # clean-clone run saw 36 where "now" gave 37.
    left = state["deadline"] - time.time() * 1000
    frozen_left = (math.floor(left / 1000) - 1) * 1000 + 500
    stale_since = state["deadline"] - frozen_left
    tell(False, stale_since)
    frozen = str(math.ceil(frozen_left / 1000))
    expect(display.locator("body")).to_have_attribute("data-table", "offline")
    expect(display.locator("#clock")).to_have_text(frozen)
    expect(display.locator("#tableoff")).to_be_visible()
    expect(display.locator("#tableoff b")).to_have_text("TABLE OFFLINE")
    # The page's own link is fine, but its chip must not say "live" over stale data.
    for page in (display, referee):
        expect(page.locator("#status .conn")).to_have_text("table offline")
        expect(page.locator("#status .conn")).to_have_attribute("data-status", "table_offline")
    assert display.locator("#clock").evaluate("e => getComputedStyle(e).color") == "rgb(74, 79, 87)"
    # Nothing on air counts: no digits, no bar, a marker instead.
    expect(overlay.locator("#clock")).to_have_text("–")
    expect(overlay.locator("#phase")).to_have_text("clock offline")
    expect(overlay.locator("#third")).to_have_attribute("data-stage", "offline")
    # The console: last known, every command disabled with the reason, none sent.
    expect(referee.locator("#clock")).to_have_text(frozen)
    expect(referee.locator("#tableoff")).to_be_visible()
    main = referee.locator("#btn-main")
    expect(main).to_have_attribute("aria-disabled", "true")
    expect(main).to_have_attribute("data-why", "table_offline")
    box = main.bounding_box()
    main.click(force=True)  # aria-disabled: a tap says why
    expect(referee.locator("#banner")).to_contain_text("the table is offline")
    assert main.bounding_box() == box
    # Not counting: over more than a second (a fixed wait: it checks that nothing changes).
    display.wait_for_timeout(1100)
    assert display.locator("#clock").text_content() == frozen  # not counting
    assert referee.locator("#clock").text_content() == frozen
    shoot(display, "display-table-offline-en")
    shoot(overlay, "overlay-table-offline-en")
    shoot(referee, "referee-table-offline-phone-en")
    display.locator("#lang").click()
    expect(display.locator("#tableoff b")).to_have_text("СТОЛ НЕ В СЕТИ")
    shoot(display, "display-table-offline-ru")

    tell(True, None)  # back: the table kept time, the pages count from its deadline again
    expect(display.locator("body")).to_have_attribute("data-table", "live")
    expect(display.locator("#tableoff")).to_be_hidden()
    expect(overlay.locator("#clock")).not_to_have_text("–")
    expect(referee.locator("#btn-main")).not_to_have_attribute("aria-disabled", "true")
    expect(display.locator("#status .conn")).to_have_attribute("data-status", "live")
    live = int(display.locator("#clock").text_content() or 0)
    assert live < int(frozen)
    # The tap while offline sent nothing: a press now, sent after anything that tap could have
    # sent, is the only command the service got (its answer turns the main button to start).
    main.click()
    expect(main).to_have_attribute("data-command", "start")
    assert [e["type"] for e in shared_server.get(
        f"/api/tables/{TABLE}/events?since={state['seq']}")] == ["clock.stopped"]
    assert traffic.errors == []
