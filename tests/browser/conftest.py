"""Browser tests: Debian's chromium driven by Playwright against ``shotclock serve``'s
service, served in a thread of the test process (harness/thread_server.py) unless the
test needs its process (a SIGKILL, a SIGSTOP, a full disk).

Chromium is required, not optional: without /usr/bin/chromium these tests fail and say
how to install it (``make browser-deps``), they do not skip.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from harness.server import Service
from harness.thread_server import ThreadServer
from tests.server import ROOT

CHROMIUM = os.environ.get("SHOTCLOCK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run",
                 # a page in a background window must keep its timers and frames going
                 "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                 "--disable-backgrounding-occluded-windows", "--autoplay-policy=no-user-gesture-required"]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
PHONE = {"width": 390, "height": 844}
FULL_HD = {"width": 1920, "height": 1080}

# A short time profile: 3 s shots, so a test sees warnings, tenths and expiry quickly.
FAST_PROFILE = {"shot_ms": 3000, "floor_ms": 2000, "step_ms": 500, "extension_ms": 2000,
                "warnings_ms": [2000, 1000]}


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: the browser tests need Debian's chromium "
                    "(run `make browser-deps` or `apt-get install chromium`)", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadServer]:
    """One service for a module's tests, in a thread; each test makes its own table on it."""
    with ThreadServer(tmp_path_factory.mktemp("browser") / "shotclock.db") as service:
        yield service


@dataclass
class Traffic:
    """Everything the pages asked for, and what they said on the console."""

    requests: list[str] = field(default_factory=list)
    sockets: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # requests that got no answer ("<error> <url>"; answers of 400 or more too, on a page
    # given to ``watch_answers``: "<status> <url>")
    failed: list[str] = field(default_factory=list)

    def outside(self) -> list[str]:
        """URLs that were not for the server on 127.0.0.1 (data: URLs are not requests, nor
        are blob: URLs: the page's own copies of what it fetched)."""
        return [u for u in self.requests + self.sockets
                if not u.startswith(("data:", "blob:")) and urlparse(u).hostname != "127.0.0.1"]


@pytest.fixture
def traffic() -> Traffic:
    return Traffic()


# The console ignores a second press of the same key or button within 300 ms, and a main
# button tap while its command is unanswered (issue 23). Tests tap as fast as the page
# answers, faster than a referee can; the `context` profile turns the guard off (0, as in
# the Keys dialog) and the guard's own tests use `human_context`, with the page's default.
GUARD_OFF = "try { localStorage.getItem('shotclock.double_press_ms') === null" \
    " && localStorage.setItem('shotclock.double_press_ms', '0') } catch (e) {}"


@pytest.fixture
def context(browser: Any, traffic: Traffic) -> Iterator[Any]:
    """A fresh browser profile (own localStorage) that records every request and page error."""
    yield from _context(browser, traffic, guard_off=True)


@pytest.fixture
def human_context(browser: Any, traffic: Traffic) -> Iterator[Any]:
    """As `context`, with the console's double-press guard as a device has it by default."""
    yield from _context(browser, traffic, guard_off=False)


def _context(browser: Any, traffic: Traffic, *, guard_off: bool) -> Iterator[Any]:
    ctx = browser.new_context(viewport=FULL_HD, locale="en-US")
    if guard_off:
        ctx.add_init_script(GUARD_OFF)
    ctx.on("request", lambda r: traffic.requests.append(r.url))
    ctx.on("requestfailed", lambda r: traffic.failed.append(f"{r.failure} {r.url}"))

    def watch(page: Any) -> None:
        page.wait_for_function = _polling_wait(page)
        page.on("websocket", lambda ws: traffic.sockets.append(ws.url))
        page.on("pageerror", lambda exc: traffic.errors.append(f"{page.url}: {exc}"))
        # A refused press (409) is logged by Chromium as a failed resource: that is expected.
        page.on("console", lambda msg: msg.type == "error"
                and not msg.text.startswith("Failed to load resource")
                and traffic.errors.append(f"{page.url}: {msg.text}"))

    ctx.on("page", watch)
    try:
        yield ctx
    finally:
        ctx.close()
    assert not traffic.outside(), f"pages asked for something outside the server: {traffic.outside()}"


def _polling_wait(page: Any) -> Any:
    """``page.wait_for_function`` that polls in the page from a function sent through
    DevTools. The pages run under the service's Content-Security-Policy (script-src 'self':
    no eval, issue 11 point 12), and Playwright's own wait_for_function evaluates its string
    predicate with eval inside the page, which that policy refuses; a function handed to
    ``page.evaluate`` is compiled by DevTools, which the page's policy does not govern. The
    pages themselves are not exempted: a violation still shows up as a console error
    (``Traffic.errors``).

    The predicate is tried every 20 ms inside the page, and one call waits up to 2 s there:
    a round trip per try (Python, Playwright's driver, the browser) cost more CPU than the
    page under test. A call cut short by a navigation is simply made again."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    def wait_for_function(expression: str, *, timeout: float = 30_000, **_: Any) -> Any:
        deadline = time.monotonic() + timeout / 1000.0
        while True:
            left_ms = max(0.0, (deadline - time.monotonic()) * 1000.0)
            try:
                found = page.evaluate(_WAIT_IN_PAGE.replace("PREDICATE", expression),
                                      min(left_ms, 2000.0))
            except PlaywrightError as exc:
                if "context was destroyed" not in str(exc) and "navigat" not in str(exc):
                    raise
                found = None
            if found is not None:
                return found["value"]
            if time.monotonic() > deadline:
                raise PlaywrightTimeout(f"wait_for_function: {expression!r} still false "
                                        f"after {timeout:g} ms")
            page.wait_for_timeout(20)

    return wait_for_function


# {value} once PREDICATE (an expression, or a function, as Playwright takes either) holds,
# null after ``ms`` (20 ms between tries, in the page).
_WAIT_IN_PAGE = """async (ms) => {
  const until = performance.now() + ms;
  for (;;) {
    let value = (PREDICATE);
    if (typeof value === 'function') value = value();
    if (value) return {value};
    if (performance.now() >= until) return null;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}"""


def watch_answers(page: Any, traffic: Traffic) -> None:
    """``page``'s answers of 400 or more go to ``traffic.failed`` too (not on every page:
    each answer is then one more message from the browser to the test)."""
    def answered(response: Any) -> None:
        if response.status >= 400:
            traffic.failed.append(f"{response.status} {response.url}")

    page.on("response", answered)


def seq_of(server: Service, table: str) -> int:
    """The table's last event seq on the service (GET /api/tables/<id>)."""
    return int(server.get(f"/api/tables/{table}")["seq"])


def wait_past(page: Any, seq: int, timeout: float = 30_000) -> int:
    """Wait until the page has taken an event after ``seq`` (the service's answer to what
    the test just did), and return the page's last seq. Take ``seq`` before the action:
    the page's own state may already read what the test expects (a frame still "1")."""
    page.wait_for_function(
        f"window.shotclockConnection && window.shotclockConnection.lastSeq > {int(seq)}",
        timeout=timeout)
    return int(page.evaluate("window.shotclockConnection.lastSeq"))


def answer_pings(ws: Any) -> None:
    """A service socket faked with ``page.route_web_socket``: answer the page's pings with
    the time now, so its clock offset and its liveness check work as against the service."""
    def answer(message: str | bytes) -> None:
        ping = json.loads(message)
        if ping.get("type") == "ping":
            ws.send(json.dumps({"type": "pong", "id": ping["id"],
                                "client_time": ping["client_time"],
                                "server_time": time.time() * 1000}))
    ws.on_message(answer)


def make_table(server: Service, table: str, players: tuple[str, str] = ("Ivanov", "Petrov"),
               **extra: Any) -> dict[str, Any]:
    body = {"id": table, "players": list(players), "profile": FAST_PROFILE, **extra}
    status, state = server.post("/api/tables", body)
    assert status == 201, state
    return state


def shoot(page: Any, name: str) -> Path:
    """A screenshot under test-artifacts/screenshots/; the overlay keeps its transparency.
    The page is brought to the front first: headless Chromium took 2.3-2.8 s to shoot a page
    other than the last one opened after its size changed, and 0.1 s once in front."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.bring_to_front()
    page.screenshot(path=str(path), omit_background="/overlay" in page.url)
    return path


# Short real-time windows (issue 18): a flash on air 1.5 s, a stage that lasts as long as a
# 3 s shot. A loaded machine can spend a second on one Playwright call, so what a page shows
# inside such a window is written down by the page itself at the moment it shows it (a
# MutationObserver installed through DevTools, which the page's CSP does not govern), and
# the test reads the record afterwards.
_RECORD = """([key, selector, attr]) => {
  const log = ((window.__recorded = window.__recorded || {})[key] = []);
  let last;
  const note = () => {
    const el = document.querySelector(selector);
    const value = el ? el.getAttribute(attr) : null;
    if (value !== last) { last = value; log.push(value); }
  };
  note();
  new MutationObserver(note).observe(document.documentElement,
    {subtree: true, childList: true, attributes: true, attributeFilter: [attr]});
}"""

_RECORD_FLASHES = """() => {
  const log = (window.__flashes = []);
  const flash = document.getElementById('flash');
  let n = window.shotclockFlashes.length;  // one entry per event put on air (overlay.js)
  new MutationObserver(() => {
    if (flash.classList.contains('hidden') || window.shotclockFlashes.length === n) return;
    n = window.shotclockFlashes.length;
    const r = flash.getBoundingClientRect(), s = getComputedStyle(flash);
    const look = {kind: flash.dataset.kind, text: flash.textContent,
                  visible: r.width > 0 && r.height > 0 && s.visibility !== 'hidden',
                  background: s.backgroundColor,
                  cut: flash.scrollWidth > flash.clientWidth || flash.scrollHeight > flash.clientHeight + 1};
    log.push(look);
  }).observe(flash, {attributes: true, childList: true, characterData: true, subtree: true});
}"""


def record_attribute(page: Any, key: str, selector: str, attr: str) -> None:
    """From now on the page writes down every value ``selector``'s ``attr`` takes (read
    them with ``recorded``)."""
    page.evaluate(_RECORD, [key, selector, attr])


def recorded(page: Any, key: str) -> list[str | None]:
    return list(page.evaluate(f"window.__recorded[{json.dumps(key)}]"))


def record_flashes(page: Any) -> None:
    """From now on the overlay writes down each flash tab it puts on air, as it looks at
    that moment: kind, text, visible, background colour, cut off (read with ``flash_seen``)."""
    page.evaluate(_RECORD_FLASHES)


def flash_seen(page: Any, kind: str, since: int = 0, timeout: float = 10_000) -> dict[str, Any]:
    """The first flash of ``kind`` the page put on air from the ``since``-th on, as it looked
    then, with its ``index`` in the record; waits for it (the page polled from here)."""
    found = page.wait_for_function(
        f"window.__flashes.map((f, index) => ({{...f, index}})).slice({int(since)})"
        f".find(f => f.kind === {json.dumps(kind)}) || null", timeout=timeout)
    return dict(found)
