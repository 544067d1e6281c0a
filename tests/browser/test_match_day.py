"""The pages through a whole match as people at an event live it (issue 23): one press is
one press, the link never cries wolf, every end is readable. One server for the module;
each test makes its own table on it."""

from __future__ import annotations

import math
import os
import re
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from harness.server import Service
from tests.browser.conftest import Traffic, make_table, shoot
from tests.server import ServerProcess

pytestmark = pytest.mark.browser

TABLET = {"width": 1024, "height": 768}
SLOW = {"shot_ms": 30_000, "floor_ms": 20_000, "extension_ms": 15_000, "warnings_ms": [10_000]}
GUARD_MS = 300  # the console's default double-press guard (keymap.js DEFAULT_GUARD_MS)


def open_page(context: Any, server: Service, path: str, viewport: dict[str, int],
              lang: str = "en") -> Any:
    page = context.new_page()
    page.set_viewport_size(viewport)
    sep = "&" if "?" in path else "?"
    page.goto(f"{server.url}{path}{sep}lang={lang}")
    return page


def open_console(context: Any, server: Service, table: str, viewport: dict[str, int],
                 lang: str = "en") -> Any:
    page = open_page(context, server, f"/referee?table={table}", viewport, lang)
    page.wait_for_function("window.shotclockConnection && window.shotclockConnection.status === 'live'")
    return page


def event_types(server: Service, table: str, since: int = 0) -> list[str]:
    return [e["type"] for e in server.get(f"/api/tables/{table}/events?since={since}")]


def seq_of(server: Service, table: str) -> int:
    return int(server.get(f"/api/tables/{table}")["seq"])


def past_guard(page: Any) -> None:
    """A referee's next deliberate press comes after the guard window: wait it out (this
    is the person's pace, not a wait for the service)."""
    page.wait_for_timeout(GUARD_MS + 50)


def test_a_double_press_is_one_press(shared_server: Service, human_context: Any,
                                     traffic: Traffic) -> None:
    """Build point 1: PageDown twice 40 ms apart is Start only (it once made Start then a
    0.04 s Shot); two taps of the main button in one instant are one command; the console
    says "Ignored: double press". A later press (past 300 ms) is the next command."""
    # Both presses from inside the page, 40 ms apart by the page's own clock, the second
    # after a busy wait in the same task: two CDP key presses from here could land more than
    # the guard's 300 ms apart on a loaded machine, and so could a 40 ms timer (clean-clone
    # run 51: no banner, and the console offered "Undo: shot", so the page had taken both,
    # Start and Shot). The gap the page saw is returned: a machine that stalled the page
    # itself for the guard's 300 ms between them made two presses, rightly, and the test
    # tries again.
    for attempt in range(3):
        table = f"dbl{attempt}"
        make_table(shared_server, table, profile=SLOW)
        page = open_console(human_context, shared_server, table, TABLET)
        main, banner = page.locator("#btn-main"), page.locator("#banner")
        # The console has drawn the table's state: its main button offers Start.
        expect(main).to_have_attribute("data-command", "start")
        gap = page.evaluate("""() => {
            const press = () => document.dispatchEvent(new KeyboardEvent(
                "keydown", {key: "PageDown", code: "PageDown", bubbles: true, cancelable: true}));
            const first = performance.now();
            press();
            while (performance.now() - first < 40) { /* the bounce */ }
            const second = performance.now();
            press();
            return second - first;
        }""")
        if gap < GUARD_MS - 50:
            break
        print(f"the page saw its two presses {gap:.0f} ms apart: again, on a new table")
        page.close()
    else:
        pytest.fail(f"the page could not press twice within {GUARD_MS - 50} ms in 3 tries")
    try:
        expect(banner).to_have_attribute("data-code", "ignored")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\npresses {gap:.0f} ms apart\n"
                             f"events: {event_types(shared_server, table)}\n"
                             f"page errors: {traffic.errors}") from None
    expect(banner).to_contain_text("Ignored:")
    expect(banner).to_contain_text("double press")
    shoot(page, "console-ignored-double-press-tablet")
    expect(main).to_have_attribute("data-command", "shot")
    page.wait_for_function(f"window.shotclockConnection.lastSeq >= {seq_of(shared_server, table)}")
    assert event_types(shared_server, table).count("clock.started") == 1
    assert "clock.stopped" not in event_types(shared_server, table)

    past_guard(page)
    page.keyboard.press("PageDown")  # the shot, deliberately
    expect(main).to_have_attribute("data-command", "start")
    # Two taps of the main button in the same instant (a finger's bounce on a touch screen).
    past_guard(page)
    seq = seq_of(shared_server, table)
    page.evaluate("() => { const b = document.getElementById('btn-main'); b.click(); b.click(); }")
    expect(banner).to_have_attribute("data-code", "ignored")
    expect(main).to_have_attribute("data-command", "shot")
    page.wait_for_function(f"window.shotclockConnection.lastSeq > {seq}")
    assert event_types(shared_server, table, seq) == ["clock.started"]


def test_a_main_tap_while_its_command_is_on_its_way_is_ignored(
        shared_server: Service, human_context: Any) -> None:
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
        shared_server: Service, context: Any) -> None:
    """I18: start then shot a few ms apart (here straight to the service, as a button or
    another console could) stands, and the console's card asks whether it was a double
    press, with the rule, and the undo is on screen."""
    make_table(shared_server, "quick", profile=SLOW)
    page = open_console(context, shared_server, "quick", TABLET, lang="ru")
    # The presses 40 ms apart at the table, each carrying its instant (`at`), as a button
    # box does: the service times them there, however late the requests arrive (a loaded
    # machine once sent them over 0.3 s apart, and nothing was flagged). The instants are
    # on the service's clock, as it read it when it answered /api/health, 100 ms before
    # that, so both are in the past when they arrive. (This process's time.time() was 30 ms
    # off that clock once; the console's estimate of it was ahead by more than 100 ms in
    # clean-clone run 45, and a press from the future takes effect when it arrives: the
    # card then said 0,09 s.)
    pressed = float(shared_server.get("/api/health")["server_time"]) - 100.0
    assert shared_server.command("quick", "start", at=pressed)[0] == 200
    assert shared_server.command("quick", "shot", at=pressed + 40)[0] == 200
    card = page.locator("#outcome")
    expect(card).to_be_visible()
    expect(page.locator("#outcome-title")).to_contain_text("двойное нажатие?")
    # 0.04 s (less if the table's last step came after `pressed`); decimals as in Russian
    expect(page.locator("#outcome-title")).to_contain_text(re.compile(r"0,0[0-4] с"))
    expect(page.locator("#outcome-lines")).to_contain_text("I18")
    expect(page.locator("#btn-undo")).to_be_in_viewport()
    shoot(page, "console-quick-shot-tablet-ru")
    # A shot played at a human pace gets no such card.
    assert shared_server.command("quick", "start")[0] == 200
    page.wait_for_timeout(GUARD_MS + 100)  # real time under test: a human pace, past the guard
    assert shared_server.command("quick", "shot")[0] == 200
    page.wait_for_function(f"window.shotclockConnection.lastSeq >= {seq_of(shared_server, 'quick')}")
    expect(card).to_be_hidden()


def test_unassigned_clicker_keys_say_so(shared_server: Service, context: Any) -> None:
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


def open_all(context: Any, server: Service, table: str, query: str = "") -> dict[str, Any]:
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


@pytest.mark.serial
def test_a_healthy_link_never_says_no_news(shared_server: Service, context: Any) -> None:
    """Build point 2: the stale threshold follows the ping interval (staleAfter in
    connection.js: one interval plus max(interval, 700 ms)). 10 s of a healthy run at each
    page's own default (pings every 1000 ms, stale after 2000; the display every 500 ms,
    stale after 1200) on all five pages at once while the clock runs: not one status change
    after 'live'. (It was 30 pings at ?ping=250, stale after 950 ms: a margin that does not
    scale down with the interval, and which a slow machine's busy cores crossed in 3 of 8
    clean-clone runs, stale for 53-103 ms.)"""
    make_table(shared_server, "healthy", profile=SLOW)
    pages = open_all(context, shared_server, "healthy")
    assert shared_server.command("healthy", "start")[0] == 200
    pages["referee"].wait_for_timeout(10_000)  # real time under test: no status change
    logs = status_logs(pages)
    for name, log in logs.items():
        assert [s for s, _ in log if s != "connecting"] == ["live"], f"{name}: {log}"
    assert pages["referee"].evaluate("window.shotclockConnection.staleMs") == 2000
    assert pages["display"].evaluate("window.shotclockConnection.staleMs") == 1200
    clock_box = pages["referee"].locator("#clock-box")
    assert "stale" not in (clock_box.get_attribute("class") or "")
    assert shared_server.get("/api/tables/healthy")["phase"] == "running"


@pytest.mark.serial
def test_a_page_held_up_by_its_own_device_does_not_blame_the_link(
        shared_server: Service, context: Any) -> None:
    """A page whose own thread is held up (a busy or sleeping device) for longer than the
    stale threshold sent no ping meanwhile: the silence is its own, and it gives the link a
    fresh ping before it says "no news" (connection.js isStale). A healthy link flashed
    "stale" for 53-90 ms in clean-clone runs on a slow, busy machine before."""
    make_table(shared_server, "held-up", profile=SLOW)  # not "held": one server, one module
    page = open_page(context, shared_server, "/referee?table=held-up&ping=250", TABLET)
    page.wait_for_function("window.shotclockConnection && window.shotclockConnection.status === 'live'")
    assert shared_server.command("held-up", "start")[0] == 200
    for _ in range(3):  # the page's thread busy for 1.5 s (stale after 950 ms), three times
        page.evaluate("() => { const t = performance.now(); while (performance.now() - t < 1500) {} }")
        page.wait_for_timeout(1000)  # real time under test: the link judged again, awake
    log = page.evaluate("window.shotclockConnection.statusLog")
    assert [s for s, _ in log if s != "connecting"] == ["live"], log


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


@pytest.mark.serial
def test_every_page_notices_a_hung_service_within_3_s(own_server: ServerProcess, context: Any) -> None:
    """Build point 2: the service stopped (SIGSTOP, no close, no message). Every page, the
    hall included, says so within 3 s of stopping (default pings), and its digits freeze
    (the same text 1.5 s later); after SIGCONT all are live again."""
    make_table(own_server, "hung", profile={**SLOW, "shot_ms": 60_000})
    pages = open_all(context, own_server, "hung")
    assert own_server.command("hung", "start")[0] == 200
    pages["hall"].locator(".card[data-table='hung'][data-stage='running']").wait_for()
    assert own_server.proc is not None
    clocks = {"referee": "#clock", "display": "#clock", "hall": ".card[data-table='hung'] .clock"}
    for name, selector in clocks.items():  # every text the digits show from now on
        pages[name].evaluate("""sel => {
            const el = document.querySelector(sel);
            window.__digits = [el.innerText];
            new MutationObserver(() => window.__digits.push(el.innerText)).observe(
                el, {childList: true, characterData: true, subtree: true});
        }""", selector)
    t0 = time.monotonic()
    stopped_at = time.time() * 1000.0  # the pages' statusLog is in the same unix ms
    os.kill(own_server.proc.pid, signal.SIGSTOP)
    try:
        seen = set()
        while len(seen) < len(pages) and time.monotonic() - t0 < 6:
            for name, page in pages.items():
                feed = "window.shotclockHall" if name == "hall" else (
                    "window.shotclockStats.conn" if name == "stats" else "window.shotclockConnection")
                if name not in seen and page.evaluate(f"{feed}.status") != "live":
                    seen.add(name)
            time.sleep(0.05)
        # When each page said so, by its own record (not when this loop, asking five pages in
        # turn, got round to it): the first status after 'live' logged after the stop.
        detected = {name: round((next((at for status, at in log
                                       if at >= stopped_at and status != "live"), math.inf)
                                 - stopped_at) / 1000.0, 2)
                    for name, log in status_logs(pages).items() if name in seen}
        print("hung service noticed after (s):", detected)
        slow = {n: s for n, s in detected.items() if s > 3.0}
        assert len(detected) == len(pages) and not slow, f"noticed after (s): {detected}"
        for name in clocks:  # each page has drawn since it noticed (two animation frames)
            pages[name].evaluate(
                "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        before = {n: pages[n].locator(sel).inner_text() for n, sel in clocks.items()}
        pages["hall"].wait_for_timeout(1500)  # real time under test: hung, no page counts on
        after = {n: pages[n].locator(sel).inner_text() for n, sel in clocks.items()}
        # Frozen: the same digits, neither counting down on old data nor jumping back up to
        # the last message heard (the console once went 58 -> 60 here: it froze at the last
        # message, up to its 2 s stale threshold before it noticed; connection.js frozenAt).
        assert after == before, f"digits moved: {before} -> {after}"
        for name in clocks:
            shown = [float(t) for t in pages[name].evaluate("window.__digits") if t.strip()]
            assert all(b <= a for a, b in zip(shown, shown[1:], strict=False)), (name, shown)
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


# -- every end is readable; nothing needed at a time foul is off-screen -----------------------
SIZES = {"phone": {"width": 390, "height": 844}, "tablet": TABLET,
         "tv": {"width": 1920, "height": 1080}, "pi": {"width": 800, "height": 480}}
# Two-part surnames up to 40 characters; two players called Александр (issue 23 point 5).
LONG_NAMES = {"ru": ("Александр Петров-Водкин-Ястржембский", "Александр Николаевич Иванов-Салтыков"),
              "en": ("Maximilian Alexander Fitzgerald-Johnson", "Maximilian Worthington-Smythe")}
MATCH_OVER = {"ru": "матч окончен", "en": "match over"}

# Every visible element with text of its own: its text is not cut (scrollWidth <=
# clientWidth; where it hides overflow, scrollHeight <= clientHeight) and it is inside the
# screen's width. Visually hidden labels (1 px, for screen readers) are not text on screen.
CUT_TEXTS = """() => {
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    if (!el.checkVisibility({ visibilityProperty: true })) continue;
    if (![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
    const r = el.getBoundingClientRect();
    if (r.width <= 1 || r.height <= 1) continue;
    const cs = getComputedStyle(el);
    const what = `${el.id || el.className || el.tagName}: ${el.textContent.trim().slice(0, 50)}`;
    if (el.scrollWidth > el.clientWidth + 1) out.push(`cut across (${el.scrollWidth} > ${el.clientWidth}) ${what}`);
    if (['hidden', 'clip'].includes(cs.overflowY) && el.scrollHeight > el.clientHeight + 1)
      out.push(`cut below (${el.scrollHeight} > ${el.clientHeight}) ${what}`);
    if (r.left < -1 || r.right > innerWidth + 1) out.push(`outside the screen (${Math.round(r.left)}..${Math.round(r.right)}) ${what}`);
  }
  return out;
}"""

# Pairs that must never overlap when both are shown (issue 23: "МАТЧ ОКОНЧЕН" over
# "ПОБЕДА В МАТЧЕ:" on the display).
NO_OVERLAP = {
    "display": ["#phase", "#over-title", "#over-why", "#over-score", "#clock", ".scoreline", ".players"],
    "referee": ["#over-name", "#over-why", "#phase", ".facts", "#p0 .name", "#p1 .name"],
    "overlay": ["#p0 .name", "#p1 .name", "#p0 .call-tag", "#p1 .call-tag", ".info", "#over-title", "#over-why"],
    "hall": [".card .p0 .name", ".card .p1 .name", ".card .mid", ".card .result"],
}
OVERLAPS = """(sels) => {
  const boxes = [];
  for (const sel of sels) for (const el of document.querySelectorAll(sel)) {
    if (!el.checkVisibility({ visibilityProperty: true })) continue;
    const r = el.getBoundingClientRect();
    if (r.width > 1 && r.height > 1) boxes.push([sel, el, r]);
  }
  const out = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const [sa, a, ra] = boxes[i], [sb, b, rb] = boxes[j];
    if (a.contains(b) || b.contains(a)) continue;
    const w = Math.min(ra.right, rb.right) - Math.max(ra.left, rb.left);
    const h = Math.min(ra.bottom, rb.bottom) - Math.max(ra.top, rb.top);
    if (w > 2 && h > 2) out.push(`${sa} overlaps ${sb} (${Math.round(w)}x${Math.round(h)})`);
  }
  return out;
}"""
# Every state's screenshot at every size (80 a language) costs ~40 s of PNG encoding on a
# loaded 2-core machine: by default the time foul and the match's end only, every state with
# SHOTCLOCK_SCREENSHOTS=all (the checks run on every state either way).
SCREENSHOTS_ALL = os.environ.get("SHOTCLOCK_SCREENSHOTS") == "all"
# The pages refit their texts on the next frame after a resize; the test refits at once.
REFIT = "() => { window.dispatchEvent(new Event('resize')); window.shotclockRefit && window.shotclockRefit(); }"


# The visible texts of a page (each element's own text), leaving out the clock's digits
# (the firmware's "4.9" in every language) and what the referee typed (names).
VISIBLE_TEXTS = """() => {
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('.clock, #clock, dialog:not([open]), script, style')) continue;
    if (!el.checkVisibility({ visibilityProperty: true })) continue;
    const r = el.getBoundingClientRect();
    if (r.width <= 1 || r.height <= 1) continue;
    const own = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join(' ').trim();
    if (own) out.push(own);
    if (el.title) out.push(el.title);
  }
  return out;
}"""

# The glossary: the rules' own words (rules.ru.txt, 12.2-12.7, 10.4-10.5) and the product's
# writing rules (issue 23 point 11). pattern -> what to write instead.
GLOSSARY = {
    "ru": {
        r"(?i)раунд": "круг (12.2-12.3)",
        r"(?i)\bпрод\.": "Продл. (one abbreviation of продление, 12.5)",
        r"(?i)race to|правило race": "до N побед",
        r"\d\.\d+\s?с\b": "a decimal comma in Russian (2,5 с)",
        r"(?i)экстеншн|таймаут|тайм-аут": "продление / пауза (12.5, 12.8)",
        r"(?i)\b(time|foul|frame|match|undo|shot|start|winner|over)\b": "Russian, not English",
        r"\s-\s?с\b": "a figure, not '-' (камера: удар в - с)",
    },
    "en": {
        r"[А-Яа-яЁё]": "English, not Russian",
        r"\d,\d+\s?s\b": "a decimal point in English (2.5 s)",
        r"(?i)\bround-robin|\binning": "round / visit (12.2)",
    },
    "both": {
        r"\{\w+\}": "a filled placeholder",
        r"\b(undefined|null|NaN)\b": "a value",
    },
}
# Not prose: key names, the language toggle's own name, the players' names (any language).
KEYS_AND_CODES = re.compile("|".join([r"\b(Space|PageDown|PageUp|ArrowRight|ArrowLeft|Enter|[A-Z])\b",
                                      "Русский", "English",
                                      *(re.escape(n) for pair in LONG_NAMES.values() for n in pair)]))


def glossary_breaches(texts: list[tuple[str, str]], lang: str) -> list[str]:
    out = []
    for where, text in texts:
        plain = KEYS_AND_CODES.sub("", text)
        for pattern, instead in {**GLOSSARY[lang], **GLOSSARY["both"]}.items():
            if re.search(pattern, plain):
                out.append(f"{where}: {text!r}: write {instead}")
    return out


def test_the_glossary_check_finds_each_kind_of_breach() -> None:
    """The glossary check itself (or it could pass by matching nothing)."""
    bad = [("x", "Раунд 2"), ("x", "Прод."), ("x", "правило race to 2"), ("x", "2.5 с"),
           ("x", "камера: удар в - с"), ("x", "Time foul"), ("x", "{name} wins")]
    assert len(glossary_breaches(bad, "ru")) >= len(bad)
    assert glossary_breaches([("x", "Круг 2 · Продл. · до 2 побед · 2,5 с · правило 10.4 · Space")],
                             "ru") == []
    assert len(glossary_breaches([("x", "Фол"), ("x", "2,5 s")], "en")) == 2
    assert glossary_breaches([("x", "Round 2 · Ext. · 2.5 s · race to 2")], "en") == []


def in_viewport(page: Any, selector: str) -> bool:
    return bool(page.evaluate("""(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
        return r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight + 0.5 && r.right <= innerWidth + 0.5; }""",
                              selector))


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_every_state_is_readable_at_four_sizes(
        shared_server: Service, context: Any, lang: str) -> None:
    """Build points 3 and 4, as people at an event live it: a match with 40-character names
    played to its end; at phone, tablet, TV and the Pi's 800x480, in each state, every text on
    the console, display, overlay and hall is whole and inside the screen, the texts that
    share a place do not overlap, at a time foul the console's main button and Undo are on
    screen without scrolling, and at the end every page names the winner in full with the
    score in the winner's favour. A screenshot of each goes to test-artifacts/."""
    table = f"read-{lang}"
    a, b = LONG_NAMES[lang]
    # Two minutes a shot: the running state must not run out while a loaded machine looks.
    make_table(shared_server, table, players=(a, b), race_to=2, profile={**SLOW, "shot_ms": 120_000})
    pages = {name: open_page(context, shared_server, f"/{name}?table={table}", TABLET, lang)
             for name in ("referee", "display", "overlay")}
    pages["hall"] = open_page(context, shared_server, "/", TABLET, lang)
    for name, page in pages.items():
        feed = "window.shotclockHall" if name == "hall" else "window.shotclockConnection"
        page.wait_for_function(f"{feed} && {feed}.status === 'live'")
    problems: list[str] = []
    texts: list[tuple[str, str]] = []

    def synced() -> None:
        seq = seq_of(shared_server, table)
        for name, page in pages.items():
            if name == "hall":
                page.wait_for_function(
                    f"(window.shotclockHallCards.get('{table}')?.state?.seq ?? -1) >= {seq}")
            else:
                page.wait_for_function(f"window.shotclockConnection.lastSeq >= {seq}")

    def look(state: str) -> None:
        t0 = time.monotonic()
        synced()
        for name, page in pages.items():
            for size, viewport in SIZES.items():
                page.set_viewport_size(viewport)
                page.evaluate(REFIT)
                where = f"{name} {state} {size} {lang}"
                problems.extend(f"{where}: {p}" for p in page.evaluate(CUT_TEXTS))
                problems.extend(f"{where}: {p}" for p in page.evaluate(OVERLAPS, NO_OVERLAP[name]))
                if name == "referee" and state == "time-foul":
                    for sel in ("#btn-main", "#btn-undo"):
                        if not in_viewport(page, sel):
                            problems.append(f"{where}: {sel} is off-screen")
                if size == "tablet":
                    texts.extend((f"{name} {state}", text) for text in page.evaluate(VISIBLE_TEXTS))
                if SCREENSHOTS_ALL or state in ("time-foul", "match-over"):
                    shoot(page, f"{name}-{state}-{size}-{lang}")
        print(f"look {state} {lang}: {time.monotonic() - t0:.1f} s")

    def cmd(command: str, **fields: Any) -> None:
        status, body = shared_server.command(table, command, **fields)
        assert status == 200, body

    for command, fields in (("start", {}), ("shot", {}), ("result", {"legal_break": True})):
        cmd(command, **fields)
    cmd("call", pocket="bottom_left", cushions=["right_bottom"])
    cmd("start")
    look("running")  # with the call in force: its tags beside the names
    cmd("set_time", remaining_ms=200, reason="test")
    pages["referee"].locator("#clock-box[data-stage='expired']").wait_for()
    look("time-foul")
    cmd("start")
    for _ in range(2):
        cmd("foul", code="touched_ball", touched_with="hand", player=0)  # a technical loss: frame 1 to b
    look("frame-over")
    cmd("new_frame")
    for _ in range(2):
        cmd("foul", code="touched_ball", touched_with="hand", player=0)
    look("match-over")
    assert not problems, "\n".join(problems[:40])
    # Every visible text of every state against the glossary of the rules' terms.
    wrong = glossary_breaches(texts, lang)
    assert not wrong, "\n".join(wrong[:40])

    # The end, on every page: the winner (b, on the right) in full, "match over", 0:2 (the
    # left player's score first on every page, issue 36).
    for size in ("phone", "pi"):
        for page in pages.values():
            page.set_viewport_size(SIZES[size])
        referee, display, overlay, hall = (pages[n] for n in ("referee", "display", "overlay", "hall"))
        expect(referee.locator("#over-name")).to_contain_text(b)
        expect(referee.locator("#phase")).to_have_text(MATCH_OVER[lang])
        expect(display.locator("#over-title")).to_contain_text(b)
        expect(display.locator("#phase")).to_have_text(MATCH_OVER[lang])
        expect(display.locator("#over-score")).to_have_text("0 : 2")
        expect(display.locator("#over-score .won")).to_have_text("2")
        expect(overlay.locator("#over-title")).to_have_text(b)
        expect(overlay.locator("#over-why")).to_contain_text("0:2")
        expect(overlay.locator("#over-why")).to_contain_text(MATCH_OVER[lang])
        card = hall.locator(f".card[data-table='{table}']")
        expect(card).to_have_attribute("data-look", "match_over")
        expect(card.locator(".result")).to_contain_text(b)
        expect(card.locator(".result")).to_contain_text("0:2")
        expect(card.locator(".phase")).to_have_text(MATCH_OVER[lang])
        for locator in (referee.locator("#over-name"), display.locator("#over-title"),
                        overlay.locator("#over-title"), card.locator(".result")):
            box = locator.bounding_box()
            assert box is not None and box["height"] > 10, f"{locator} has no height: {box}"


def test_a_new_match_keeps_the_event_and_the_referee(shared_server: Service, context: Any) -> None:
    """Point 12: the New match dialog is pre-filled with the table's last match's event and
    referee (its protocol prints them); what is sent is what the dialog then says."""
    make_table(shared_server, "cup", race_to=1, profile=SLOW, event="City cup", referee="Sidorova")
    page = open_console(context, shared_server, "cup", TABLET)
    page.locator("#btn-new-match").click()
    expect(page.locator("#match-event")).to_have_value("City cup")
    expect(page.locator("#match-referee")).to_have_value("Sidorova")
    page.locator("#match-reason").fill("players swapped")
    page.locator("#match-ok").click()
    expect(page.locator("#match-dialog")).to_be_hidden()
    page.wait_for_function("window.shotclockConnection.state.match.number === 2")
    latest = shared_server.get("/api/matches?table=cup&limit=1")["matches"][0]
    assert (latest["event"], latest["referee"]) == ("City cup", "Sidorova")


def test_confirming_a_foul_result_says_so(shared_server: Service, context: Any) -> None:
    """Point 8 of the issue: the confirmation of a result that is a foul says so, and one
    that is the player's second foul says it loses the frame (10.5), from the service's own
    verdict (POST /preview on a copy of the table: nothing changes until it is sent)."""
    make_table(shared_server, "warn", profile=SLOW)
    for command, fields in (("start", {}), ("shot", {}), ("result", {"legal_break": True}),
                            ("foul", {"code": "double_hit", "player": 1}),  # Petrov's first
                            ("hand_back", {}),  # Ivanov hands the table back (10.4)
                            ("start", {}), ("shot", {})):
        assert shared_server.command("warn", command, **fields)[0] == 200, command
    seq = seq_of(shared_server, "warn")
    page = open_console(context, shared_server, "warn", TABLET)
    page.locator("#res-foul").select_option("double_hit")
    page.locator("#res-send").click()
    dialog = page.locator("#result-dialog")
    expect(dialog).to_be_visible()
    expect(page.locator("#result-title")).to_have_text("This result loses the frame — send it?")
    expect(page.locator("#result-warning")).to_contain_text("Technical loss: second foul of Petrov")
    expect(page.locator("#result-warning")).to_contain_text("(10.5)")
    shoot(page, "console-result-warns-technical-loss-tablet")
    assert seq_of(shared_server, "warn") == seq  # the preview changed nothing
    page.locator("#result-dialog button[value=cancel]").click()
    assert seq_of(shared_server, "warn") == seq


def test_calibrate_without_a_camera_says_so(shared_server: Service, context: Any) -> None:
    """Point 11: /calibrate on a service without a camera is not a bare "Not Found"."""
    page = open_page(context, shared_server, "/calibrate", TABLET, "ru")
    expect(page.locator("#msg")).to_have_text("камера не настроена (SHOTCLOCK_CAMERA)")


def test_the_open_call_editor_keeps_shot_on_a_phone_screen(
        shared_server: Service, context: Any) -> None:
    """Point 13: on a phone the call editor opens below the buttons and the page scrolls to
    it; while the clock runs, the Shot button floats on screen and is the main button."""
    make_table(shared_server, "float", profile=SLOW)
    for command, fields in (("start", {}), ("shot", {}), ("result", {"legal_break": True}),
                            ("start", {})):
        assert shared_server.command("float", command, **fields)[0] == 200, command
    page = open_console(context, shared_server, "float", {"width": 390, "height": 844})
    expect(page.locator("#btn-main")).to_have_attribute("data-command", "shot")
    page.locator("#btn-result").click()
    expect(page.locator("#result-panel")).to_be_visible()
    floating = page.locator("#btn-float-main")
    expect(floating).to_be_visible()
    assert in_viewport(page, "#btn-float-main") and not in_viewport(page, "#btn-main")
    expect(floating).to_have_text("Shot")
    shoot(page, "console-call-editor-shot-floats-phone")
    seq = seq_of(shared_server, "float")
    floating.click()
    page.wait_for_function(f"window.shotclockConnection.lastSeq > {seq}")
    assert event_types(shared_server, "float", seq)[0] == "clock.stopped"
    expect(floating).to_be_hidden()  # the clock no longer runs
