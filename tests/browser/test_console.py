"""The referee console as a referee uses it with one thumb (issue 9, points 1-11): the main
button never moves, follows the phase, illegal buttons say why, cards come and go with
their shot, the foul dialog, clickers, the tablet layout, touch targets, the token and
an unknown table; the status strip with the service's faults."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from harness.server import Service
from tests.browser import conftest
from tests.browser.conftest import PHONE, Traffic, make_table, shoot, wait_past

pytestmark = pytest.mark.browser

TABLET = {"width": 1024, "height": 768}
# Long enough that nothing expires unless a test makes it.
SLOW = {"shot_ms": 30_000, "floor_ms": 20_000, "extension_ms": 15_000, "warnings_ms": [10_000]}


def open_console(context: Any, server: Service, table: str, viewport: dict[str, int],
                 lang: str = "en") -> Any:
    page = context.new_page()
    page.set_viewport_size(viewport)
    page.goto(f"{server.url}/referee?table={table}&lang={lang}")
    page.wait_for_function("window.shotclockConnection && window.shotclockConnection.status === 'live'")
    return page


def box(page: Any, selector: str) -> tuple[float, float, float, float]:
    b = page.locator(selector).bounding_box()
    assert b is not None, f"{selector} is not displayed"
    return (b["x"], b["y"], b["width"], b["height"])


def seq_of(server: Service, table: str) -> int:
    return int(server.get(f"/api/tables/{table}")["seq"])


def enabled_actions(page: Any) -> list[str]:
    return sorted(page.eval_on_selector_all(
        "#console [data-action]",
        "els => els.filter(e => e.getAttribute('aria-disabled') !== 'true').map(e => e.id)"))


def post(server: Service, table: str, command: str, **fields: Any) -> dict[str, Any]:
    status, body = server.command(table, command, **fields)
    assert status == 200, body
    return body


@pytest.mark.parametrize("size,viewport", [("phone", PHONE), ("tablet", TABLET)])
def test_main_button_never_moves_and_follows_the_phase(
        shared_server: Service, context: Any, traffic: Traffic, size: str,
        viewport: dict[str, int]) -> None:
    """Points 1, 2, 3, 4 and 6: the main button's box is the same (±1 px) in every phase, after
    a refusal, with a reason and with each card shown; its command follows the phase."""
    table = f"move-{size}"
    make_table(shared_server, table, race_to=2, profile=SLOW)
    page = open_console(context, shared_server, table, viewport)
    main = page.locator("#btn-main")
    boxes: dict[str, tuple[float, float, float, float]] = {}

    def look(name: str, command: str, label: str) -> None:
        expect(main).to_have_attribute("data-command", command)
        expect(main).to_have_text(label)
        boxes[name] = box(page, "#btn-main")
        shoot(page, f"console-{name}-{size}")

    # Ready: Start; Pause, Hand back and Undo disabled (nothing to pause, no foul, no step).
    expect(page.locator("#hint")).to_contain_text("Ivanov breaks")
    assert enabled_actions(page) == ["btn-extension", "btn-foul", "btn-main", "btn-new-frame",
                                     "btn-new-match", "btn-result", "btn-turn"]
    look("ready", "start", "Start")

    main.click()
    look("running", "shot", "Shot")
    page.keyboard.press("p")
    look("paused", "resume", "Resume")
    # Space while paused resumes: it does not record a shot (point 2).
    page.keyboard.press(" ")
    expect(main).to_have_attribute("data-command", "shot")
    assert shared_server.get(f"/api/tables/{table}")["phase"] == "running"
    stops = [e for e in shared_server.get(f"/api/tables/{table}/events")
             if e["type"] == "clock.stopped"]
    assert stops == []

    # A refusal by the server (two extensions sent before the first answer came back).
    page.evaluate("""() => { for (let i = 0; i < 2; i++)
        document.dispatchEvent(new KeyboardEvent('keydown', {key: 'e', bubbles: true})); }""")
    banner = page.locator("#banner")
    expect(banner).to_have_attribute("data-kind", "error")
    expect(banner).to_contain_text("Ivanov already used the extension this frame")
    expect(page.locator("#banner-rule")).to_have_text("rule 12.5")
    expect(banner).not_to_contain_text("(12.5)")  # the rule once, not twice
    look("refusal", "shot", "Shot")

    # A disabled button explains itself instead of sending anything (point 3).
    extension = page.locator("#btn-extension")
    expect(extension).to_have_attribute("aria-disabled", "true")
    expect(extension).to_have_attribute("title", re.compile("already used the extension.*rule 12.5"))
    seq = seq_of(shared_server, table)
    page.locator("#banner").click()  # dismissed by a tap
    expect(banner).to_be_hidden()
    extension.click(force=True)
    expect(banner).to_have_attribute("data-kind", "why")
    expect(banner).to_contain_text("Not now")
    expect(banner).to_contain_text("Ivanov already used the extension this frame")
    look("why", "shot", "Shot")
    # Nothing was sent: the next press (pause), sent after anything the tap could have sent,
    # is the only command the service got; then resume.
    page.keyboard.press("p")
    expect(main).to_have_attribute("data-command", "resume")
    assert [e["type"] for e in shared_server.get(f"/api/tables/{table}/events?since={seq}")
            ] == ["clock.paused"], "a disabled button sent a command"
    page.keyboard.press(" ")
    expect(main).to_have_attribute("data-command", "shot")

    # The summary card of a shot result (from the feed) ... gone at the next start (point 4).
    expect(banner).to_be_hidden()  # a press hides the banner
    post(shared_server, table, "shot")
    post(shared_server, table, "result", whites_potted=2, legal_break=True)
    card = page.locator("#outcome")
    expect(card).to_contain_text("Whites credited: 2")
    expect(card).to_contain_text("Ivanov stays at the table")
    look("card", "start", "Start")
    main.click()
    expect(card).to_be_hidden()
    expect(page.locator("#hint")).to_contain_text("Ivanov is timed")

    # Time runs out: the time foul has its own card; the main button accepts (10.4).
    post(shared_server, table, "set_time", remaining_ms=300)
    expect(card).to_have_attribute("data-card", "time", timeout=5000)
    expect(card).to_contain_text("Time foul — Ivanov")
    expect(card).to_contain_text("Petrov chooses")
    look("expired", "start", "Start (accept)")
    assert enabled_actions(page) == ["btn-foul", "btn-hand-back", "btn-main", "btn-new-frame",
                                     "btn-new-match", "btn-undo"]

    # Ivanov's second foul: a technical loss; everything but New frame and Undo is disabled.
    post(shared_server, table, "foul", reason="touched a ball", player=0)
    expect(card).to_contain_text("Technical loss — Ivanov")
    expect(card).to_contain_text("The frame goes to Petrov")
    expect(card).to_contain_text("Match: 0 : 1")
    look("frame-over", "new_frame", "New frame")
    assert enabled_actions(page) == ["btn-main", "btn-new-frame", "btn-new-match", "btn-undo"]

    # New frame after a won frame asks nothing: the winner is recorded (point 6).
    main.click()
    expect(page.locator("#frame")).to_have_text("2")
    expect(page.locator("#frame-dialog")).not_to_be_visible()
    state = shared_server.get(f"/api/tables/{table}")
    assert (state["frame"], state["match"]["score"], state["player"]) == (2, [0, 1], 1)
    expect(card).to_be_hidden()
    look("frame-2", "start", "Start")

    first = boxes["ready"]
    moved = {name: b for name, b in boxes.items()
             if any(abs(a - c) > 1 for a, c in zip(b, first, strict=True))}
    assert not moved, f"the main button moved: ready {first}, {moved}"
    assert traffic.errors == []


def test_foul_dialog_says_the_clock_runs_warns_of_the_second_foul_and_enter_confirms(
        shared_server: Service, context: Any, traffic: Traffic) -> None:
    """Point 5: opening the dialog pauses nothing silently; a second foul is announced as the
    technical loss it is (10.5); Enter records."""
    make_table(shared_server, "fouls", profile=SLOW)
    page = open_console(context, shared_server, "fouls", PHONE)
    page.locator("#btn-main").click()
    expect(page.locator("#btn-main")).to_have_attribute("data-command", "shot")

    def commands_sent() -> int:
        return sum(url.endswith("/api/tables/fouls/commands") for url in traffic.requests)

    sent = commands_sent()
    page.keyboard.press("f")
    dialog = page.locator("#foul-dialog")
    expect(dialog).to_be_visible()
    expect(page.locator("#foul-clock")).to_contain_text("The clock keeps running")
    expect(page.locator("#foul-second")).to_be_hidden()
    expect(page.locator("#foul-ok")).to_have_text("Record the foul")
    assert shared_server.get("/api/tables/fouls")["phase"] == "running"  # nothing paused it
    shoot(page, "console-foul-dialog-running-phone")
    page.locator("#foul-pause").click()  # offered, and it works from the dialog
    expect(page.locator("#foul-clock")).to_contain_text("The clock is paused")
    assert shared_server.get("/api/tables/fouls")["phase"] == "paused"
    # Opening the dialog sent nothing: the page sends its commands in order, and the pause's
    # answer is in, so a command sent on opening would have gone before it (the phase read
    # above could have come before such a command landed).
    assert commands_sent() == sent + 1, traffic.requests[-5:]
    page.locator("#foul-reason").select_option("touched_ball")  # a code (9, D10)
    page.locator("#foul-reason").press("Enter")  # Enter confirms, even from the select
    card = page.locator("#outcome")
    expect(card).to_contain_text("Foul — Ivanov")
    expect(card).to_contain_text("touched a ball")
    expect(card).to_contain_text("Petrov chooses")
    expect(card).to_contain_text("Ivanov: one foul — the next loses the frame")
    expect(page.locator("#p0 .mark.fouls")).to_have_attribute("data-n", "1")
    shoot(page, "console-foul-card-phone")

    # Ivanov again: the dialog says it is the second foul, a technical loss.
    page.keyboard.press("f")
    page.locator("#foul-player").select_option("0")
    warning = page.locator("#foul-second")
    expect(warning).to_be_visible()
    expect(warning).to_contain_text("Second foul of Ivanov: a technical loss, the frame goes to Petrov")
    expect(page.locator("#foul-ok")).to_have_text("Record: technical loss")
    shoot(page, "console-foul-dialog-second-phone")
    seq = seq_of(shared_server, "fouls")
    page.keyboard.press("Escape")  # and Esc records nothing: the next press is all that
    expect(dialog).to_be_hidden()  # the service gets
    page.locator("#btn-main").click()
    wait_past(page, seq)
    assert [e["type"] for e in shared_server.get(f"/api/tables/fouls/events?since={seq}")
            ] == ["clock.started"]
    assert shared_server.get("/api/tables/fouls")["fouls"] == [1, 0]
    assert traffic.errors == []


def test_clicker_and_pedal_keys_are_mappable_and_remembered(
        shared_server: Service, context: Any) -> None:
    """Point 7: PageDown/ArrowRight/Space are the main button; any key may be given to an
    action on the page, and the device remembers it."""
    make_table(shared_server, "keys", profile=SLOW)
    page = open_console(context, shared_server, "keys", PHONE)
    main = page.locator("#btn-main")
    page.keyboard.press("PageDown")
    expect(main).to_have_attribute("data-command", "shot")
    page.keyboard.press("ArrowRight")
    expect(main).to_have_attribute("data-command", "start")
    seq = seq_of(shared_server, "keys")
    page.keyboard.press("Enter")  # not mapped by default: nothing is sent ...
    page.keyboard.press("PageUp")
    page.keyboard.press("e")  # ... as the next press, handled in order after them, shows
    expect(page.locator("#p0 .mark.ext")).to_have_attribute("data-n", "0")
    events = shared_server.get(f"/api/tables/keys/events?since={seq}")
    assert [e["type"] for e in events] == ["clock.extended"], events

    # A pedal that sends Enter becomes the turn key.
    page.locator("#keys-btn").click()
    row = page.locator("#keys-rows tr[data-action='turn']")
    row.locator("button.set").click()
    expect(page.locator("#keys-listening")).to_be_visible()
    page.keyboard.press("Enter")
    expect(row.locator("kbd")).to_have_text(["T", "Enter"])
    shoot(page, "console-keys-phone")
    page.locator("#keys-done").click()
    page.keyboard.press("Enter")
    expect(page.locator("#p1")).to_have_class(re.compile("at-table"))
    # Remembered on this device.
    page.reload()
    page.wait_for_function("window.shotclockConnection.status === 'live'")
    page.keyboard.press("Enter")
    expect(page.locator("#p0")).to_have_class(re.compile("at-table"))
    assert shared_server.get("/api/tables/keys")["visit"] == 3


def visible_small_targets(page: Any) -> list[str]:
    """Every visible tap target smaller than 44x44 CSS px (a checkbox counts by its label)."""
    return page.evaluate("""() => {
        const sel = 'button, select, input:not([type=checkbox]), a, label.check, '
                  + '[data-pocket] .hit, [data-cushion] .hit';
        const small = [];
        for (const el of document.querySelectorAll(sel)) {
            const r = el.getBoundingClientRect();
            const style = getComputedStyle(el);
            if (!r.width || !r.height || style.visibility === 'hidden') continue;
            if (el.closest('.hidden, dialog:not([open]), [hidden]')) continue;
            if (r.width < 43.5 || r.height < 43.5) {
                const name = el.id || el.dataset.contact || (el.parentNode.dataset || {}).pocket
                    || (el.parentNode.dataset || {}).cushion || el.className || el.tagName;
                small.push(`${name}: ${Math.round(r.width)}x${Math.round(r.height)}`);
            }
        }
        return small;
    }""")


@pytest.mark.parametrize("size,viewport", [("phone", PHONE), ("tablet", TABLET)])
def test_every_tap_target_is_at_least_44px_and_the_tablet_shows_everything(
        shared_server: Service, context: Any, size: str, viewport: dict[str, int]) -> None:
    """Points 8 and 9: on the tablet two columns with every control and the result panel
    (editors open) in view without scrolling; everywhere, every target >= 44x44 px,
    the call editor's pockets and cushions included, and in the dialogs."""
    table = f"targets-{size}"
    make_table(shared_server, table, profile=SLOW)
    for command in ("start", "shot", "result", "start", "shot"):  # past the break, a shot played
        post(shared_server, table, command, **({"legal_break": True} if command == "result"
                                                else {}))
    page = open_console(context, shared_server, table, viewport)
    page.locator("#btn-result").click()
    page.locator("#res-colour").click()
    page.locator("#res-called").click()
    expect(page.locator("#res-call")).to_be_visible()
    assert visible_small_targets(page) == []
    if size == "tablet":
        shoot(page, "console-result-tablet")
        vw, vh = viewport["width"], viewport["height"]
        assert page.evaluate("document.scrollingElement.scrollHeight") <= vh, "the page scrolls"
        for selector in ["#btn-main", *[f"#console [data-action='{a}']" for a in (
                "extension", "turn", "pause", "foul", "hand_back", "result", "new_frame",
                "new_match", "undo")], "#result-panel", "#res-send"]:
            x, y, w, h = box(page, selector)
            assert x >= 0 and y >= 0 and x + w <= vw + 0.5 and y + h <= vh + 0.5, (selector, x, y, w, h)
        console_right = box(page, ".console")[0] + box(page, ".console")[2]
        assert box(page, "#result-panel")[0] >= console_right, "not two columns"
    page.locator("#res-tabs [data-tab='route']").click()
    expect(page.locator("#res-route")).to_be_visible()
    assert visible_small_targets(page) == []
    if size == "tablet":
        shoot(page, "console-result-route-tablet")
        assert page.evaluate("document.scrollingElement.scrollHeight") <= viewport["height"]
    # No contact label is cut (each fits its button).
    assert page.eval_on_selector_all(
        ".contact", "els => els.filter(e => e.offsetParent && e.scrollWidth > e.clientWidth)"
        ".map(e => e.textContent)") == []
    if size == "phone":
        page.locator("#res-editors").scroll_into_view_if_needed()
        shoot(page, "console-result-route-phone")
    for opener, dialog in (("#btn-foul", "#foul-dialog"), ("#keys-btn", "#keys-dialog"),
                           ("#token-btn", "#token-dialog"), ("#btn-undo", "#undo-dialog"),
                           ("#btn-new-match", "#match-dialog")):
        page.locator(opener).click()
        expect(page.locator(dialog)).to_be_visible()
        assert visible_small_targets(page) == [], dialog
        page.keyboard.press("Escape")
        expect(page.locator(dialog)).to_be_hidden()


def test_new_match_asks_first_and_the_main_button_offers_it_after_the_match(
        shared_server: Service, context: Any, traffic: Traffic) -> None:
    """new_match (match.started, match id <table>.<n>) from the console: players and frames
    to win, a confirm step (it ends the match in play), a reason when the service asks for
    one; once a match is won the main button offers it, in the same place."""
    table = "newmatch"
    make_table(shared_server, table, race_to=2, profile=SLOW)
    page = open_console(context, shared_server, table, PHONE)
    main = box(page, "#btn-main")
    # The match is under way (a shot played): leaving it is the referee's decision, with a
    # reason (a match not begun is replaced without one: issue 36).
    seq = conftest.seq_of(shared_server, table)
    post(shared_server, table, "start")
    post(shared_server, table, "shot")
    wait_past(page, seq + 1)
    button = page.locator("#btn-new-match")
    expect(button).to_have_text("New match")
    button.click()
    dialog = page.locator("#match-dialog")
    expect(dialog).to_be_visible()
    expect(page.locator("#match-ends")).to_contain_text("Match 1 (0:0) ends here")
    expect(page.locator("#match-a")).to_have_value("Ivanov")
    expect(page.locator("#match-race")).to_have_value("2")
    page.locator("#match-a").fill("Sidorov")
    page.locator("#match-race").fill("1")
    page.locator("#match-ok").click()
    # The match in play is not finished: the service wants a reason; the form stays as typed.
    expect(page.locator("#match-error")).to_contain_text("give the reason")
    expect(dialog).to_be_visible()
    expect(page.locator("#match-a")).to_have_value("Sidorov")
    shoot(page, "console-new-match-dialog-phone")
    assert shared_server.get(f"/api/tables/{table}")["match"]["number"] == 1
    page.locator("#match-reason").fill("players swapped")
    page.locator("#match-event").fill("City cup")
    page.locator("#match-ok").click()
    expect(dialog).to_be_hidden()
    expect(page.locator("#p0 .name")).to_have_text("Sidorov")
    state = shared_server.get(f"/api/tables/{table}")
    assert (state["match"]["number"], state["match"]["race_to"], state["players"]) == (
        2, 1, ["Sidorov", "Petrov"])
    started = [e for e in shared_server.get(f"/api/tables/{table}/events")
               if e["type"] == "match.started"]
    assert [(e["data"]["reason"], e["data"]["event"]) for e in started] == [
        ("players swapped", "City cup")]
    assert "referee" not in started[0]["data"]  # left empty: not sent
    # Sidorov's two fouls: a technical loss, the race to 1 is won; the main button offers
    # a new match (no reason needed now), where it always is.
    post(shared_server, table, "foul", reason="touched a ball", player=0)
    post(shared_server, table, "foul", reason="touched a ball", player=0)
    expect(page.locator("#btn-main")).to_have_attribute("data-command", "new_match")
    expect(page.locator("#btn-main")).to_have_text("New match")
    assert box(page, "#btn-main") == main
    shoot(page, "console-match-over-phone")
    page.locator("#btn-main").click()
    expect(page.locator("#match-ends")).to_contain_text("Match 2 (0:1) is over")
    before = conftest.seq_of(shared_server, table)
    page.locator("#match-ok").click()
    # The frame already reads "1" (match 2 was won in its first frame): wait for the
    # service's answer, an event past the seq read before the press, then read the match.
    conftest.wait_past(page, before)
    expect(dialog).to_be_hidden()
    expect(page.locator("#frame")).to_have_text("1")
    state = shared_server.get(f"/api/tables/{table}")
    assert (state["match"]["number"], state["phase"]) == (3, "ready"), state
    answer = shared_server.get(f"/api/tables/{table}/events?since={before}")
    assert (answer[0]["type"], answer[0]["seq"]) == ("match.started", before + 1), answer
    assert traffic.errors == []


def test_unknown_table_is_a_page_with_a_way_to_the_hall(
        shared_server: Service, context: Any) -> None:
    """Point 11: not blank buttons."""
    page = context.new_page()
    page.set_viewport_size(PHONE)
    page.goto(f"{shared_server.url}/referee?table=nope&lang=en")
    unknown = page.locator("#unknown")
    expect(unknown).to_be_visible()
    expect(unknown).to_contain_text("No such table")
    expect(unknown).to_contain_text("“nope”")
    expect(page.locator("#console")).to_be_hidden()
    link = unknown.locator("a")
    expect(link).to_have_attribute("href", "/")
    shoot(page, "console-unknown-table-phone")
    link.click()
    expect(page).to_have_url(re.compile(r"/$"))
