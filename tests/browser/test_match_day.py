"""The pages through a whole match as people at an event live it (issue 23): one press is
one press, the link never cries wolf, every end is readable. One server for the module;
each test makes its own table on it."""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import make_table, shoot
from tests.server import ServerProcess

pytestmark = pytest.mark.browser

TABLET = {"width": 1024, "height": 768}
SLOW = {"shot_ms": 30_000, "floor_ms": 20_000, "extension_ms": 15_000, "warnings_ms": [10_000]}
GUARD_MS = 300  # the console's default double-press guard (keymap.js DEFAULT_GUARD_MS)


def open_page(context: Any, server: ServerProcess, path: str, viewport: dict[str, int],
              lang: str = "en") -> Any:
    page = context.new_page()
    page.set_viewport_size(viewport)
    sep = "&" if "?" in path else "?"
    page.goto(f"{server.url}{path}{sep}lang={lang}")
    return page


def open_console(context: Any, server: ServerProcess, table: str, viewport: dict[str, int],
                 lang: str = "en") -> Any:
    page = open_page(context, server, f"/referee?table={table}", viewport, lang)
    page.wait_for_function("window.shotclockConnection && window.shotclockConnection.status === 'live'")
    return page


def event_types(server: ServerProcess, table: str, since: int = 0) -> list[str]:
    return [e["type"] for e in server.get(f"/api/tables/{table}/events?since={since}")]


def seq_of(server: ServerProcess, table: str) -> int:
    return int(server.get(f"/api/tables/{table}")["seq"])


def past_guard(page: Any) -> None:
    """A referee's next deliberate press comes after the guard window: wait it out (this
    is the person's pace, not a wait for the service)."""
    page.wait_for_timeout(GUARD_MS + 50)


def test_a_double_press_is_one_press(shared_server: ServerProcess, human_context: Any) -> None:
    """Build point 1: PageDown twice 40 ms apart is Start only (it once made Start then a
    0.04 s Shot); two taps of the main button in one instant are one command; the console
    says "Ignored: double press". A later press (past 300 ms) is the next command."""
    make_table(shared_server, "dbl", profile=SLOW)
    page = open_console(human_context, shared_server, "dbl", TABLET)
    main, banner = page.locator("#btn-main"), page.locator("#banner")
    page.keyboard.press("PageDown")
    page.wait_for_timeout(40)
    page.keyboard.press("PageDown")
    expect(banner).to_have_attribute("data-code", "ignored")
    expect(banner).to_contain_text("Ignored:")
    expect(banner).to_contain_text("double press")
    shoot(page, "console-ignored-double-press-tablet")
    expect(main).to_have_attribute("data-command", "shot")
    page.wait_for_function(f"window.shotclockConnection.lastSeq >= {seq_of(shared_server, 'dbl')}")
    assert event_types(shared_server, "dbl").count("clock.started") == 1
    assert "clock.stopped" not in event_types(shared_server, "dbl")

    past_guard(page)
    page.keyboard.press("PageDown")  # the shot, deliberately
    expect(main).to_have_attribute("data-command", "start")
    # Two taps of the main button in the same instant (a finger's bounce on a touch screen).
    past_guard(page)
    seq = seq_of(shared_server, "dbl")
    page.evaluate("() => { const b = document.getElementById('btn-main'); b.click(); b.click(); }")
    expect(banner).to_have_attribute("data-code", "ignored")
    expect(main).to_have_attribute("data-command", "shot")
    page.wait_for_function(f"window.shotclockConnection.lastSeq > {seq}")
    assert event_types(shared_server, "dbl", seq) == ["clock.started"]


def test_a_main_tap_while_its_command_is_on_its_way_is_ignored(
        shared_server: ServerProcess, human_context: Any) -> None:
    """The console ignores a main-button tap while the previous command is unanswered (the
    button still shows the old command): held here by holding the HTTP request."""
    make_table(shared_server, "held", profile=SLOW)
    page = open_console(human_context, shared_server, "held", TABLET)
    held: list[Any] = []
    page.route("**/api/tables/held/commands", lambda route: held.append(route))
    page.locator("#btn-main").click()
    deadline = 100
    while not held and deadline:
        page.wait_for_timeout(20)
        deadline -= 1
    assert held, "the start never left the page"
    past_guard(page)  # not a double press: a second, later tap
    page.locator("#btn-main").click()
    banner = page.locator("#banner")
    expect(banner).to_have_attribute("data-code", "ignored")
    expect(banner).to_contain_text("still on its way")
    held[0].continue_()
    page.unroute("**/api/tables/held/commands")
    expect(page.locator("#btn-main")).to_have_attribute("data-command", "shot")
    page.wait_for_function(f"window.shotclockConnection.lastSeq >= {seq_of(shared_server, 'held')}")
    assert event_types(shared_server, "held").count("clock.started") == 1
    assert "clock.stopped" not in event_types(shared_server, "held")


def test_a_shot_faster_than_anyone_plays_is_flagged(
        shared_server: ServerProcess, context: Any) -> None:
    """I18: start then shot a few ms apart (here straight to the service, as a button or
    another console could) stands, and the console's card asks whether it was a double
    press, with the rule, and the undo is on screen."""
    make_table(shared_server, "quick", profile=SLOW)
    page = open_console(context, shared_server, "quick", TABLET, lang="ru")
    assert shared_server.command("quick", "start")[0] == 200
    assert shared_server.command("quick", "shot")[0] == 200
    card = page.locator("#outcome")
    expect(card).to_be_visible()
    expect(page.locator("#outcome-title")).to_contain_text("двойное нажатие?")
    # Decimals as in Russian; the two requests are a few ms apart, or a few hundred on a
    # loaded machine (still under the 0.3 s that is flagged).
    expect(page.locator("#outcome-title")).to_contain_text(re.compile(r"0,[0-2]\d с"))
    expect(page.locator("#outcome-lines")).to_contain_text("I18")
    expect(page.locator("#btn-undo")).to_be_in_viewport()
    shoot(page, "console-quick-shot-tablet-ru")
    # A shot played at a human pace gets no such card.
    assert shared_server.command("quick", "start")[0] == 200
    page.wait_for_timeout(GUARD_MS + 100)
    assert shared_server.command("quick", "shot")[0] == 200
    page.wait_for_function(f"window.shotclockConnection.lastSeq >= {seq_of(shared_server, 'quick')}")
    expect(card).to_be_hidden()


def test_unassigned_clicker_keys_say_so(shared_server: ServerProcess, context: Any) -> None:
    """Point 13: Enter, PageUp and ArrowLeft do nothing by default, and now say so."""
    make_table(shared_server, "unk", profile=SLOW)
    page = open_console(context, shared_server, "unk", TABLET)
    seq = seq_of(shared_server, "unk")
    for key, label in (("Enter", "Enter"), ("PageUp", "PageUp"), ("ArrowLeft", "ArrowLeft")):
        page.keyboard.press(key)
        expect(page.locator("#banner")).to_contain_text(f"{label} does nothing here")
    page.keyboard.press("e")  # a mapped key after them: its event is the only one
    expect(page.locator("#p0 .mark.ext")).to_have_attribute("data-n", "0")
    assert event_types(shared_server, "unk", seq) == ["clock.extended"]


# -- the link never cries wolf ---------------------------------------------------------------
PAGES_OF_A_TABLE = ("referee", "display", "overlay", "stats")


def status_logs(pages: dict[str, Any]) -> dict[str, list[list[Any]]]:
    """Every page's link status changes, [status, local ms]."""
    out = {}
    for name, page in pages.items():
        feed = "window.shotclockHall" if name == "hall" else (
            "window.shotclockStats.conn" if name == "stats" else "window.shotclockConnection")
        out[name] = page.evaluate(f"{feed}.statusLog")
    return out


def open_all(context: Any, server: ServerProcess, table: str, query: str = "") -> dict[str, Any]:
    pages = {}
    for name in PAGES_OF_A_TABLE:
        pages[name] = open_page(context, server, f"/{name}?table={table}{query}", TABLET)
    pages["hall"] = open_page(context, server, f"/{query.replace('&', '?', 1)}", TABLET)
    for name, page in pages.items():
        feed = "window.shotclockHall" if name == "hall" else (
            "window.shotclockStats && window.shotclockStats.conn" if name == "stats"
            else "window.shotclockConnection")
        page.wait_for_function(f"{feed} && {feed}.status === 'live'")
    return pages


def test_a_healthy_link_never_says_no_news(shared_server: ServerProcess, context: Any) -> None:
    """Build point 2: the stale threshold follows the ping interval (staleAfter in
    connection.js: one interval plus max(interval, 700 ms)). 30 pings of a healthy run, as 30 s
    at the default 1000 ms, are played here at ?ping=250 (7.5 s of wall time; stale after
    950 ms, a tighter margin than the default's 2000 ms) on all five pages at once while the
    clock runs: not one status change after 'live'."""
    make_table(shared_server, "healthy", profile=SLOW)
    pages = open_all(context, shared_server, "healthy", "&ping=250")
    assert shared_server.command("healthy", "start")[0] == 200
    pages["referee"].wait_for_timeout(30 * 250)
    logs = status_logs(pages)
    for name, log in logs.items():
        assert [s for s, _ in log if s != "connecting"] == ["live"], f"{name}: {log}"
    assert pages["referee"].evaluate("window.shotclockConnection.staleMs") == 950
    clock_box = pages["referee"].locator("#clock-box")
    assert "stale" not in (clock_box.get_attribute("class") or "")
    assert shared_server.get("/api/tables/healthy")["phase"] == "running"


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server of this module's own, to stop (SIGSTOP) and continue."""
    server = ServerProcess(tmp_path_factory.mktemp("matchday") / "own.db").start()
    try:
        yield server
    finally:
        if server.proc is not None and server.proc.poll() is None:
            os.kill(server.proc.pid, signal.SIGCONT)
        server.stop()


def test_every_page_notices_a_hung_service_within_3_s(own_server: ServerProcess, context: Any) -> None:
    """Build point 2: the service stopped (SIGSTOP, no close, no message). Every page, the
    hall included, says so within 3 s of stopping (default pings), and its digits freeze
    (the same text 1.5 s later); after SIGCONT all are live again."""
    make_table(own_server, "hung", profile={**SLOW, "shot_ms": 60_000})
    pages = open_all(context, own_server, "hung")
    assert own_server.command("hung", "start")[0] == 200
    pages["hall"].locator(".card[data-table='hung'][data-stage='running']").wait_for()
    assert own_server.proc is not None
    t0 = time.monotonic()
    os.kill(own_server.proc.pid, signal.SIGSTOP)
    try:
        detected = {}
        while len(detected) < len(pages) and time.monotonic() - t0 < 6:
            for name, page in pages.items():
                if name in detected:
                    continue
                feed = "window.shotclockHall" if name == "hall" else (
                    "window.shotclockStats.conn" if name == "stats" else "window.shotclockConnection")
                if page.evaluate(f"{feed}.status") != "live":
                    detected[name] = time.monotonic() - t0
            time.sleep(0.05)
        print("hung service noticed after (s):", {n: round(s, 2) for n, s in detected.items()})
        slow = {n: round(s, 2) for n, s in detected.items() if s > 3.0}
        assert len(detected) == len(pages) and not slow, f"noticed after (s): {detected}"
        clocks = {"referee": "#clock", "display": "#clock", "hall": ".card[data-table='hung'] .clock"}
        before = {n: pages[n].locator(sel).inner_text() for n, sel in clocks.items()}
        pages["hall"].wait_for_timeout(1500)
        after = {n: pages[n].locator(sel).inner_text() for n, sel in clocks.items()}
        assert after == before, f"digits ran on: {before} -> {after}"
        expect(pages["hall"].locator(".card[data-table='hung']")).to_have_attribute("data-live", "lost")
        expect(pages["overlay"].locator("#third")).to_have_attribute("data-stage", "offline")
        for name in ("hall", "referee", "display", "overlay"):
            shoot(pages[name], f"hung-service-{name}-tablet")
    finally:
        os.kill(own_server.proc.pid, signal.SIGCONT)
    for name, page in pages.items():
        feed = "window.shotclockHall" if name == "hall" else (
            "window.shotclockStats.conn" if name == "stats" else "window.shotclockConnection")
        page.wait_for_function(f"{feed}.status === 'live'", timeout=15_000)
    expect(pages["hall"].locator(".card[data-table='hung']")).to_have_attribute("data-live", "live")
