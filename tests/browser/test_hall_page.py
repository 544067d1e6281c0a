"""The hall page tells live from last known (a table whose service is offline, a page that
lost the service) and offers the "New table" form only where tables are created."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from harness.server import Service
from tests.browser.conftest import FULL_HD, Traffic, answer_pings, shoot
from tests.server import ServerProcess

TOKEN = "hall-page-t0ken"


def card(table: str, *, live: bool, remaining_ms: int, now: float) -> dict[str, Any]:
    """A hall card (schemas.HallTable) of a running clock."""
    return {"table": table, "seq": 3, "phase": "running", "timer": True, "player": 0,
            "players": ["Ivanov", "Petrov"], "remaining_ms": remaining_ms, "limit_ms": 35000,
            "deadline": now + remaining_ms, "server_time": now, "round": 1, "frame": 1,
            "fouls": [0, 0], "extensions_left": [1, 1], "whites": [0, 0],
            "frames_won": [0, 0], "live": live, "stale_since": None if live else now - 60_000}


def test_the_hall_service_page_shows_offline_tables_as_last_known_and_no_form(
        shared_server: Service, context: Any, traffic: Traffic) -> None:
    # The hall service's feed (shotclock hall), as its contract says (tests/mqtt/test_hall.py
    # checks the service sends it): read-only, table 2's service offline since a minute.
    now = time.time() * 1000
    hall_message = {"type": "hall", "server_time": now, "read_only": True, "faults": [],
                    "tables": [card("1", live=True, remaining_ms=30_000, now=now),
                               card("2", live=False, remaining_ms=17_000, now=now)]}

    def feed(ws: Any) -> None:
        answer_pings(ws)
        ws.send(json.dumps(hall_message))

    page = context.new_page()
    page.set_viewport_size(FULL_HD)
    page.route_web_socket("**/ws/hall", feed)
    page.goto(shared_server.url + "/?lang=en")
    stale = page.locator("article[data-table='2']")
    live = page.locator("article[data-table='1']")
    expect(stale).to_have_attribute("data-live", "stale")
    expect(stale.locator(".stale-title")).to_have_text("Offline")
    expect(stale.locator(".stale-why")).to_contain_text("last known state")
    expect(live).to_have_attribute("data-live", "live")
    expect(page.locator("#create")).to_be_hidden()  # every POST there is 409 hall_read_only
    first = (live.locator(".clock").text_content(), stale.locator(".clock").text_content())
    assert first[1] == "17"  # remaining_ms as of when it went offline, not brought to now
    # The live one counts while the stale one does not: two of the live one's whole-second
    # changes are a second apart, in which a counting stale card would have changed too.
    expect(live.locator(".clock")).not_to_have_text(first[0] or "")
    expect(live.locator(".clock")).not_to_have_text(live.locator(".clock").text_content() or "")
    assert stale.locator(".clock").text_content() == "17"  # not counting
    shoot(page, "hall-service-offline-table-en")
    page.locator("#lang").click()
    expect(stale.locator(".stale-title")).to_have_text("Стол не в сети")
    shoot(page, "hall-service-offline-table-ru")
    assert traffic.errors == []


def test_the_hall_page_stops_every_clock_when_it_loses_the_service(
        tmp_path: Path, context: Any, traffic: Traffic) -> None:
    server = ServerProcess(tmp_path / "hall.db", env={"SHOTCLOCK_REFEREE_TOKEN": TOKEN}).start()
    try:
        page = context.new_page()
        page.set_viewport_size(FULL_HD)
        page.goto(server.url + "/?lang=en")
        assert server.command("1", "start", token=TOKEN)[0] == 200
        table = page.locator("article[data-table='1']")
        expect(table.locator(".phase")).to_have_text("running")
        expect(table).to_have_attribute("data-live", "live")
        expect(page.locator("#create")).to_be_visible()  # serve creates tables
        page.evaluate(f"localStorage.setItem('shotclock.token', '{TOKEN}')")  # the referee's
        form = page.locator("#create-form")
        for name, value in (("id", "h9"), ("a", "Orlov"), ("b", "Belov"), ("race_to", "3"),
                            ("event", "City cup"), ("referee", "Smirnov")):
            form.locator(f"[name='{name}']").fill(value)
        form.locator("button[type='submit']").click()
        expect(page.locator("#create-result")).to_have_text("Table h9 created")
        match = server.get("/api/matches?table=h9")["matches"][0]
        assert (match["event"], match["referee"], match["race_to"]) == ("City cup", "Smirnov", 3)
        server.kill()
        expect(table).to_have_attribute("data-live", "lost")
        expect(table.locator(".stale-title")).to_have_text("Connection lost")
        shown = table.locator(".clock").text_content()
        page.wait_for_timeout(1100)  # real time under test: over a second, the card must not count
        assert table.locator(".clock").text_content() == shown  # frozen, not counting down
        shoot(page, "hall-connection-lost-en")
        server.start()
        expect(table).to_have_attribute("data-live", "live", timeout=15_000)
        expect(table.locator(".stale-note")).to_be_hidden()
    finally:
        server.stop()
    # Chromium logs each refused reconnection attempt while the service is down: expected.
    assert [e for e in traffic.errors if "ERR_CONNECTION_REFUSED" not in e] == []
