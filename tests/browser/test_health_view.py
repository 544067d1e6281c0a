"""The console's status view (issue 10, "Hardware status ... on the referee console"): a
real ``shotclock serve`` driving the serial display emulator, its GPIO buttons on gpiozero's
MockFactory (GPIOZERO_PIN_FACTORY=mock). What the referee sees: display connected, the last
ACK's age, each button not pressed yet, store, MQTT, camera; refreshed while open (the
controller going silent shows within seconds); the main button never moves (issue 9.1)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from firmware_bridge.emulator import DisplayEmulator
from tests.browser.conftest import PHONE, Traffic, seq_of, shoot, wait_past
from tests.server import ServerProcess

pytestmark = pytest.mark.browser


@pytest.fixture
def table_server(tmp_path: Path) -> Iterator[tuple[ServerProcess, DisplayEmulator]]:
    emu = DisplayEmulator(timeout_ms=1000, quiet=True)
    emu.start()
    server = ServerProcess(tmp_path / "clock.db", env={
        "SHOTCLOCK_HARDWARE": "serial", "SHOTCLOCK_SERIAL_PORT": emu.path,
        "GPIOZERO_PIN_FACTORY": "mock"})
    try:
        yield server.start(), emu
    finally:
        server.stop()
        emu.stop()


def test_the_console_shows_the_tables_hardware(
        table_server: tuple[ServerProcess, DisplayEmulator], context: Any,
        traffic: Traffic) -> None:
    server, emu = table_server
    page = context.new_page()
    page.set_viewport_size(PHONE)
    page.goto(f"{server.url}/referee?table=1&lang=en")
    main = page.locator("#btn-main")
    expect(main).to_have_text("Start")
    before = main.bounding_box()
    button = page.locator("#health-btn")
    box = button.bounding_box()
    assert box and box["width"] >= 44 and box["height"] >= 44
    button.click()
    dialog = page.locator("#health-dialog")
    expect(dialog).to_be_visible()
    row = lambda key: dialog.locator(f"dd[data-key='{key}']")  # noqa: E731
    expect(row("display")).to_have_text("connected")
    expect(row("last_ack")).to_have_text(re.compile(r"^\d\.\d s ago$"))
    for name in ("start_shot", "extension", "turn", "pause"):
        expect(row(f"button.{name}")).to_have_text("not pressed since start-up")
    expect(dialog.locator("dt[data-key='button.start_shot']")).to_have_text("Button start/shot")
    expect(row("store")).to_have_text(re.compile(r"^writing"))
    expect(row("mqtt")).to_have_text("not used")
    expect(row("camera")).to_have_text("not used")
    expect(dialog.locator("#health-faults")).to_be_hidden()
    shoot(page, "referee-status-view-phone-en")

    # Refreshed while open: the controller drops to its REPL (no ACKs) ...
    emu.repl(True)
    expect(row("display")).to_have_text("connected, not acknowledging", timeout=6000)
    expect(row("last_ack")).to_have_attribute("data-level", "error")
    expect(dialog.locator("#health-faults li[data-code='display_not_acknowledging']")).to_be_visible()
    emu.repl(False)
    expect(row("display")).to_have_text("connected", timeout=6000)

    # ... and a button pressed: its row says when. Mock pins live in the server's process,
    # so the press is put into the service's real answer here.
    def pressed(route: Any) -> None:
        body = route.fetch().json()
        at = body["server_time"] - 3000
        body["components"]["hardware"]["buttons"]["turn"].update(
            seen=True, presses=2, seen_at=at - 60_000, last_at=at)
        route.fulfill(json=body)

    page.route("**/api/health", pressed)
    expect(row("button.turn")).to_have_text(
        re.compile(r"^last pressed \d\d:\d\d:\d\d, 3\.\d s ago \(2 presses\)$"))
    page.locator("#health-done").click()
    expect(dialog).to_be_hidden()
    assert main.bounding_box() == before  # the view never moved the main button
    page.locator("#lang").click()
    button.click()
    expect(dialog.locator("h2")).to_have_text("Состояние стола")
    expect(row("display")).to_have_text("подключено")
    shoot(page, "referee-status-view-phone-ru")
    seq = seq_of(server, "1")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    # No key reached the clock: the next press, sent after anything Escape could have sent,
    # is the only command the service got.
    main.click()
    wait_past(page, seq)
    assert [e["type"] for e in server.get(f"/api/tables/1/events?since={seq}")] == [
        "clock.started"]
    assert traffic.errors == [], json.dumps(traffic.errors)
