"""The match clock and slow play on the pages (issue 25): display, overlay, console and
hall show the match's time left and the organiser's choice at the limit; the console
offers the shot clock on request in a match without one."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from harness.server import Service
from tests.browser.conftest import FAST_PROFILE, make_table, wait_past

LIMIT = 601_000  # 10 min 1 s: the 10-minute warning comes a second after the first break


def test_match_clock_on_display_overlay_console_and_hall(shared_server: Service,
                                                         context: Any) -> None:
    server = shared_server
    # A minute's shot: the pages' checks after the start take seconds on a loaded machine,
    # and a 3 s shot (FAST_PROFILE) could run out before the pause below (409).
    make_table(server, "mc", race_to=3, match_limit_ms=LIMIT, at_match_limit="tie_break_frame",
               profile={**FAST_PROFILE, "shot_ms": 60_000, "floor_ms": 30_000})
    pages = {}
    for name, path in (("display", "/display?table=mc&lang=en"),
                       ("overlay", "/overlay?table=mc&lang=en"),
                       ("referee", "/referee?table=mc&lang=en"), ("hall", "/?lang=en")):
        page = context.new_page()
        page.goto(f"{server.url}{path}")
        pages[name] = page
    clocks = {name: (page.locator('[data-table="mc"] .match-clock') if name == "hall"
                     else page.locator("#match-clock")) for name, page in pages.items()}
    for name, clock in clocks.items():  # before the first break: the whole limit, waiting
        expect(clock, name).to_have_text("Match 10:01 · from the break")
        assert "tie-break frame" in (clock.get_attribute("title") or ""), name
    # The organiser's choice, written in the match, shown to the players on the display.
    expect(pages["display"].locator("#match-limit-choice")).to_have_text(
        "at the limit: the frame in play is finished, the leader wins (level: a tie-break "
        "frame)")
    seq = int(server.get("/api/tables/mc")["seq"])
    assert server.command("mc", "start")[0] == 200
    wait_past(pages["display"], seq)
    for name, clock in clocks.items():  # counting down, and at 10 min left the warning look
        expect(clock, name).to_have_attribute("data-stage", "warn", timeout=10_000)
        expect(clock, name).to_have_text(re.compile(r"^Match (10:00|9:\d\d)$"))
    assert server.command("mc", "pause")[0] == 200
    for name, clock in clocks.items():
        expect(clock, name).to_contain_text("paused")


def test_no_match_clock_no_line(shared_server: Service, context: Any) -> None:
    make_table(shared_server, "nomc")
    page = context.new_page()
    page.goto(f"{shared_server.url}/display?table=nomc&lang=en")
    page.wait_for_function("window.shotclockConnection && window.shotclockConnection.lastSeq > 0")
    expect(page.locator("#match-clock")).to_be_hidden()


def test_console_switches_the_shot_clock_on_for_slow_play(shared_server: Service,
                                                          context: Any) -> None:
    server = shared_server
    make_table(server, "slow", timer=False)
    console = context.new_page()
    console.goto(f"{server.url}/referee?table=slow&lang=en")
    display = context.new_page()
    display.goto(f"{server.url}/display?table=slow&lang=en")
    button = console.locator("#btn-shot-clock-on")
    expect(button).to_be_visible()
    expect(button).to_have_text("Shot clock on")
    display.wait_for_function("window.shotclockConnection && window.shotclockConnection.lastSeq > 0")
    expect(display.locator("#clock")).to_have_text(re.compile(r"^[-–]+$"))  # none (12.1)
    console.once("dialog", lambda dialog: dialog.accept("play is clearly stalled"))
    seq = int(server.get("/api/tables/slow")["seq"])
    button.click()
    wait_past(display, seq)
    expect(display.locator("#clock")).to_have_text("60")  # the profile's slow_play_ms
    expect(button).to_be_hidden()
    events = server.get("/api/tables/slow/events?since=0")
    on = [e for e in (events["events"] if isinstance(events, dict) else events)
          if e["type"] == "shot_clock.on"]
    assert on and on[0]["data"]["reason"] == "play is clearly stalled"
