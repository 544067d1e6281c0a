"""Issue 11 in the browser: the hall page follows the whole hall on one socket (point 8),
the console and the hall cannot be framed by another page while the overlay can (point
12), and the pages run under the Content-Security-Policy without a violation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from harness.thread_server import ThreadServer
from tests.browser.conftest import FULL_HD, Traffic, make_table, shoot

TOKEN = "pages-t0ken"


def test_the_hall_is_one_socket_and_follows_archiving(
        tmp_path: Path, context: Any, traffic: Traffic) -> None:
    server = ThreadServer(tmp_path / "hall.db", env={"SHOTCLOCK_REFEREE_TOKEN": TOKEN}).start()
    try:
        for table in ("h1", "h2", "h3"):
            assert server.post("/api/tables", {"id": table, "players": ["A", "B"]},
                               token=TOKEN)[0] == 201
        hall = context.new_page()
        hall.set_viewport_size(FULL_HD)
        hall.goto(server.url + "/?lang=en")
        for table in ("1", "h1", "h2", "h3"):
            expect(hall.locator(f"article[data-table='{table}'] .conn")).to_have_text("live")
        # A table created elsewhere appears, one archived disappears: no reload, no polling.
        assert server.post("/api/tables", {"id": "h4", "players": ["Orlov", "Belov"]},
                           token=TOKEN)[0] == 201
        expect(hall.locator("article[data-table='h4'] .p0 .name")).to_have_text("Orlov")
        assert server.delete("/api/tables/h2", TOKEN)[0] == 200
        expect(hall.locator("article[data-table='h2']")).to_have_count(0)
        assert server.command("h1", "start", token=TOKEN)[0] == 200
        expect(hall.locator("article[data-table='h1'] .phase")).to_have_text("running")
        shoot(hall, "hall-feed-1080p")
    finally:
        server.stop()
    # Five tables on the page, one WebSocket (the hall feed), never one per table.
    assert {url.split("/", 3)[-1] for url in traffic.sockets} == {"ws/hall"}, traffic.sockets
    assert traffic.errors == []  # no CSP violation either


def test_only_the_overlay_may_be_framed(
        shared_server: ThreadServer, context: Any, traffic: Traffic) -> None:
    make_table(shared_server, "framed")
    url = shared_server.url
    page = context.new_page()  # another page (about:blank) framing three of ours
    page.set_content(
        f'<iframe id="overlay" src="{url}/overlay?table=framed"></iframe>'
        f'<iframe id="referee" src="{url}/referee?table=framed"></iframe>'
        f'<iframe id="hall" src="{url}/"></iframe>')
    overlay = page.locator("#overlay").element_handle().content_frame()
    expect(overlay.locator("#clock")).not_to_be_empty()  # the overlay runs inside the frame
    for name in ("referee", "hall"):
        frame = page.locator(f"#{name}").element_handle().content_frame()
        # Refused (frame-ancestors 'none', X-Frame-Options DENY): Chromium shows its own
        # error page in the frame, not ours (waited for: before it loads, a frame's URL is
        # about:blank, which would pass as "not ours" too).
        for _ in range(500):
            if frame.url.startswith("chrome-error://"):
                break
            page.wait_for_timeout(20)
        assert frame.url.startswith("chrome-error://"), (name, frame.url)
    refused = [e for e in traffic.errors if "frame-ancestors" in e or "X-Frame-Options" in e]
    assert traffic.errors == refused  # nothing else went wrong
