"""Every page in every state a table meets, at four screen sizes and in both languages,
judged from what Chromium drew (issue 36 point 2).

One service and one browser for the whole matrix. Each state is a table of its own, driven
there through the service's API (a 3 s profile where the clock must move, long shots where
a state must stand still). A page shows a state when its own connection says so (its last
seq, its status), never after a sleep. Then the world stands still while it is looked at:
the browser's clock is paused (Playwright's clock: the pages' timers and their idea of now
stop) and, for a state that moves on the service's side (a shot running out), the service
is stopped (SIGSTOP) until every size and language has been looked at.

For each page, size and language, ``MEASURE`` (run in the page) reports:
- two visible texts that overlap (each text's own line boxes, from a Range, narrowed to its
  glyphs' height), a text under a control that is not its own, two controls that overlap;
- a text or a control outside the page's width, or below its end (a page that does not
  scroll: below the screen), or cut by an ancestor that hides its overflow (an ellipsis, a
  clipped box);
- a text covered by something else (``elementFromPoint`` at its centre is not it);
- on the display, the sizes that must be read from 4 m (``DISPLAY_MINIMA``).

``python -m tests.browser.screens`` runs the whole matrix and prints it (its screenshots in
test-artifacts/screens/); tests/browser/test_screens.py runs a share of it in `make test`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, FAST_PROFILE, GUARD_OFF, _polling_wait
from tests.server import ROOT, ServerProcess

ARTIFACTS = ROOT / "test-artifacts" / "screens"
VIEWPORTS = ((390, 844), (800, 480), (1280, 800), (1920, 1080))
LANGS = ("ru", "en")
# A shot that stands still while it is looked at, and one long enough to be frozen in.
LONG_PROFILE = {**FAST_PROFILE, "shot_ms": 60_000, "floor_ms": 30_000, "step_ms": 1000,
                "extension_ms": 15_000, "warnings_ms": [10_000, 5_000]}
# Names of 40 characters, as long as a table's form takes them in a real event's draw.
LONG_NAMES = ("Александр Константинович Ивановский-Петр", "Maximilian Alexander von Hohenberg-Stein")
assert all(len(n) == 40 for n in LONG_NAMES), [len(n) for n in LONG_NAMES]

# The display read from 4 m at 1920x1080: the smallest font sizes in px (issue 36: the match
# clock was 16 px, the next match ~16 px, the organiser's rule ~11 px). The digits at least a
# third of the height, the match clock 6%, the next match 4.4%, the rule 3%, the names 3.3%
# (a 40-letter name on two lines), fouls and extensions 4% (the display's own rule).
DISPLAY_MINIMA = {"#clock": 360, "#match-clock": 64, "#next-match": 48,
                  "#match-limit-choice": 32, ".player .name": 36, ".mark": 43}

# What is measured in the page: every problem as a line of text, and the display's sizes.
MEASURE = r"""(minima) => {
  const vw = document.documentElement.clientWidth, vh = innerHeight;
  const doc = document.scrollingElement || document.documentElement;
  const scrolls = doc.scrollHeight > vh + 1 && getComputedStyle(document.body).overflowY !== 'hidden'
    && getComputedStyle(document.documentElement).overflowY !== 'hidden';
  const bottom = scrolls ? doc.scrollHeight : vh;
  const sy = scrollY, sx = scrollX;
  const shown = (el) => el.checkVisibility({opacityProperty: true, visibilityProperty: true});
  const name = (el) => {
    if (!el) return '?';
    let s = el.tagName.toLowerCase();
    if (el.id) s += '#' + el.id;
    else if (el.classList.length) s += '.' + [...el.classList].join('.');
    const p = el.closest('[id]');
    if (p && p !== el) s = '#' + p.id + ' ' + s;
    return s;
  };
  const short = (t) => t.replace(/\s+/g, ' ').trim().slice(0, 40);
  const texts = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.textContent.trim()) continue;
    const el = n.parentElement;
    if (!el || el.closest('script,style,template,dialog:not([open]),option,select') || !shown(el)) continue;
    // Visually hidden, for screen readers only (a 1 px box, clipped): not on the screen.
    const own = el.getBoundingClientRect();
    if (own.width <= 1 || own.height <= 1) continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    for (const box of range.getClientRects()) {
      if (box.width < 1 || box.height < 1) continue;
      // The font's content area less 12% above and below: about its glyphs' height (a
      // tall font's content area is taller than its line, and is not ink).
      const inset = box.height * 0.12;
      const r = {left: box.left, right: box.right, top: box.top + inset, bottom: box.bottom - inset,
                 width: box.width, height: box.height - 2 * inset};
      texts.push({el, text: short(n.textContent), r});
    }
  }
  const controls = [...document.querySelectorAll('button,a[href],input:not([type=hidden]),select,textarea,[role=button],summary')]
    .filter((el) => !el.closest('dialog:not([open])') && shown(el))
    .map((el) => ({el, r: el.getBoundingClientRect(), text: short(el.textContent || el.value || el.getAttribute('aria-label') || '')}))
    .filter((c) => c.r.width >= 1 && c.r.height >= 1);
  const problems = [];
  const cut = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 2
    && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 2;
  const related = (a, b) => a === b || a.contains(b) || b.contains(a);
  // An element laid over others on purpose names them (data-covers="id ..."): the display's
  // no-link notice over its grey, frozen digits.
  const covers = (a, b) => [a, b].some((x, i) => {
    const c = x.closest('[data-covers]');
    const other = i ? a : b;
    return c && c.dataset.covers.split(' ').some((id) => {
      const el = document.getElementById(id);
      return el && el.contains(other);
    });
  });
  // A text inside a box that scrolls (a wide table on a phone) is read by scrolling it.
  const scroller = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const s = getComputedStyle(p);
      if (['auto', 'scroll'].includes(s.overflowX) && p.scrollWidth > p.clientWidth + 1) return p;
    }
    return null;
  };
  for (let i = 0; i < texts.length; i++) {
    for (let j = i + 1; j < texts.length; j++) {
      const a = texts[i], b = texts[j];
      if (a.el === b.el || !cut(a.r, b.r) || covers(a.el, b.el)) continue;
      problems.push(`overlap: "${a.text}" (${name(a.el)}) and "${b.text}" (${name(b.el)})`);
    }
    for (const c of controls) {
      if (c.el.contains(texts[i].el) || texts[i].el.contains(c.el) || !cut(texts[i].r, c.r)) continue;
      if (texts[i].el.closest('label') && texts[i].el.closest('label').contains(c.el)) continue;
      problems.push(`overlap: "${texts[i].text}" (${name(texts[i].el)}) under the control ${name(c.el)} "${c.text}"`);
    }
  }
  for (let i = 0; i < controls.length; i++) {
    for (let j = i + 1; j < controls.length; j++) {
      const a = controls[i], b = controls[j];
      if (related(a.el, b.el) || !cut(a.r, b.r)) continue;
      problems.push(`overlap: the controls ${name(a.el)} "${a.text}" and ${name(b.el)} "${b.text}"`);
    }
  }
  const outside = (r) => r.left < -1 || r.right > vw + 1 || r.top + sy < -1 || r.bottom + sy > bottom + 1;
  const clippedBy = (el, r) => {
    for (let p = el; p && p !== document.body && p !== document.documentElement; p = p.parentElement) {
      const s = getComputedStyle(p);
      const hides = (v) => v === 'hidden' || v === 'clip';
      const hx = hides(s.overflowX), hy = hides(s.overflowY);
      if (!hx && !hy) continue;
      const b = p.getBoundingClientRect();
      const left = b.left + p.clientLeft, top = b.top + p.clientTop;
      const right = left + p.clientWidth, bot = top + p.clientHeight;
      // 2 px: a text's box is fractional, the fitting (fit.js) works in whole pixels
      if ((hx && (r.left < left - 2 || r.right > right + 2)) || (hy && (r.top < top - 2 || r.bottom > bot + 2))) return p;
    }
    return null;
  };
  for (const t of texts) {
    const box = scroller(t.el);
    if (box) {  // inside a scrolling box: that box must be on the screen, the text in it
      const b = box.getBoundingClientRect();
      if (outside(b)) problems.push(`outside the screen: the scrolling box ${name(box)}`);
      continue;
    }
    if (outside(t.r)) problems.push(`outside the screen: "${t.text}" (${name(t.el)}) at ${Math.round(t.r.left)},${Math.round(t.r.top + sy)} ${Math.round(t.r.width)}x${Math.round(t.r.height)}`);
    const p = clippedBy(t.el, t.r);
    if (p) problems.push(`cut: "${t.text}" (${name(t.el)}) by ${name(p)}`);
    const cx = Math.min(vw - 1, Math.max(0, (t.r.left + t.r.right) / 2)), cy = (t.r.top + t.r.bottom) / 2;
    if (cy >= 0 && cy < vh) {
      const hit = document.elementFromPoint(cx, cy);
      if (hit && !related(hit, t.el) && !hit.contains(t.el) && !t.el.closest('[aria-hidden=true]')
          && getComputedStyle(hit).pointerEvents !== 'none' && !covers(hit, t.el)) {
        problems.push(`covered: "${t.text}" (${name(t.el)}) by ${name(hit)}`);
      }
    }
  }
  for (const c of controls) {
    if (scroller(c.el)) continue;  // reached by scrolling its box (checked with its texts)
    if (outside(c.r)) problems.push(`outside the screen: the control ${name(c.el)} "${c.text}"`);
    const p = clippedBy(c.el.parentElement || c.el, c.r);
    if (p && p !== c.el) problems.push(`cut: the control ${name(c.el)} "${c.text}" by ${name(p)}`);
  }
  const sizes = {};
  for (const sel of Object.keys(minima || {})) {
    const els = [...document.querySelectorAll(sel)].filter((el) => shown(el) && el.textContent.trim());
    if (els.length) sizes[sel] = Math.min(...els.map((el) => parseFloat(getComputedStyle(el).fontSize)));
  }
  return {problems: [...new Set(problems)], sizes, texts: texts.length, controls: controls.length};
}"""


@dataclass
class Shot:
    """One look: a page at a size in a language in a state."""

    state: str
    page: str
    lang: str
    size: tuple[int, int]
    problems: list[str]
    sizes: dict[str, float]
    png: Path | None


@dataclass
class State:
    """A table driven into a state. ``prepare`` makes it (through the API) before its pages
    open; ``arrive`` (optional) moves it once they are open and live (a shot set to run out
    soon); ``stage``: the stage the pages must show before they are looked at (the
    display's, the console's, the overlay's own); ``moving``: the service must be stopped
    while they are (its clock would move the state on)."""

    name: str
    prepare: Callable[[ServerProcess, str], None]
    arrive: Callable[[ServerProcess, str], None] | None = None
    stage: str | None = None
    moving: bool = False
    link_down: bool = False
    restart: bool = False  # the service killed and started again while the pages look on
    pages: tuple[str, ...] = ()


def _ok(answer: tuple[int, Any]) -> Any:
    status, body = answer
    assert status in (200, 201), body
    return body


def table(server: ServerProcess, tid: str, players: tuple[str, str] = ("Иванов", "Петров"),
          profile: dict[str, Any] | None = None, **extra: Any) -> None:
    _ok(server.post("/api/tables", {"id": tid, "players": list(players),
                                    "profile": profile or LONG_PROFILE, **extra}))


def cmd(server: ServerProcess, tid: str, name: str, **fields: Any) -> None:
    _ok(server.command(tid, name, **fields))


def _idle(s: ServerProcess, t: str) -> None:
    table(s, t, race_to=2)


def _running(s: ServerProcess, t: str) -> None:
    table(s, t, race_to=2)
    cmd(s, t, "start")


def _set(ms: int) -> Callable[[ServerProcess, str], None]:
    def arrive(s: ServerProcess, t: str) -> None:
        cmd(s, t, "set_time", remaining_ms=ms)
    return arrive


def _extension(s: ServerProcess, t: str) -> None:
    table(s, t, race_to=2)
    cmd(s, t, "start")
    cmd(s, t, "extension")
    cmd(s, t, "shot")
    cmd(s, t, "turn")
    cmd(s, t, "start")
    cmd(s, t, "extension")


def _time_foul(s: ServerProcess, t: str) -> None:
    # A 3 s shot runs out: the time foul's card and the choice to hand back (12.4, 10.4).
    # The pages wait for it themselves (State.stage "expired": their own stage).
    table(s, t, profile=FAST_PROFILE, race_to=2)
    cmd(s, t, "start")


def _frame_over(s: ServerProcess, t: str) -> None:
    # Ivanov's second foul of the frame: a technical loss, Petrov wins it (10.5); the match
    # goes on (race to 3), its clock running between frames.
    table(s, t, race_to=3, match_limit_ms=3_000_000, at_match_limit="leader_wins")
    cmd(s, t, "start")
    cmd(s, t, "foul", reason="touched a ball", player=0)
    cmd(s, t, "foul", reason="touched a ball", player=0)


def _match_over(s: ServerProcess, t: str) -> None:
    table(s, t, race_to=1, event="Кубок города")
    cmd(s, t, "start")
    cmd(s, t, "new_frame", winner=1, reason="Иванов сдал партию")
    draw = (f"number,player1,player2,race_to,event,round,table\n"
            f"{abs(hash(t)) % 9000 + 100},Smith,Кузнецов,2,Кубок города,Финал,{t}\n")
    status, body = _post_text(s, "/api/draw", draw, "text/csv")
    assert status == 201, body


def _post_text(server: ServerProcess, path: str, text: str, kind: str) -> tuple[int, Any]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(server.url + path, data=text.encode(), method="POST",
                                     headers={"content-type": kind})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _limit(s: ServerProcess, t: str) -> None:
    # Under 10 min of match time: the match clock's warning look, the organiser's rule.
    table(s, t, race_to=3, match_limit_ms=540_000, at_match_limit="tie_break_frame")
    cmd(s, t, "start")
    cmd(s, t, "shot")


def _long_names(s: ServerProcess, t: str) -> None:
    table(s, t, players=LONG_NAMES, race_to=5, match_limit_ms=1_800_000)
    cmd(s, t, "start")
    cmd(s, t, "foul", reason="touched a ball")


def _restart_prepare(s: ServerProcess, t: str) -> None:
    table(s, t, race_to=2)
    cmd(s, t, "start")


TABLE_PAGES = ("referee", "display", "overlay-third", "overlay-bug", "overlay-clock")
PAGE_PATHS = {
    "referee": "/referee?table={t}&lang={lang}",
    "display": "/display?table={t}&lang={lang}",
    "overlay-third": "/overlay?table={t}&lang={lang}",
    "overlay-bug": "/overlay?table={t}&layout=bug&lang={lang}",
    "overlay-clock": "/overlay?table={t}&layout=clock&lang={lang}",
}
# The pages about the hall and the records: the match's own, and every other page the
# service serves (web_ui.PAGES: a page added there, the director's desk, is looked at too).
RECORD_PATHS = {"/": "hall", "/stats": "stats", "/clips": "clips", "/calibrate": "calibrate"}
TABLE_PATHS = ("/referee", "/overlay", "/display")


# What each of those pages shows once it has loaded what it asks the service for (its own
# state, never a time); a page not named here: its images in, its text on the screen.
PAGE_READY = {
    "hall": "window.shotclockHallCards && window.shotclockHallCards.size > 0",
    "stats": "window.shotclockStats && window.shotclockStats.stats.record",
    "clips": "document.querySelector('#clip-view .cv-msg') && "
             "document.querySelector('#clip-view .cv-msg').textContent",
    "calibrate": "document.getElementById('msg') && document.getElementById('msg').textContent",
}
LOADED = "document.readyState === 'complete' && [...document.images].every((i) => i.complete)"


def extra_pages(tid: str, lang: str) -> dict[str, str]:
    """name -> path of every page but the table's own three, for table ``tid``'s match 1."""
    from web_ui import PAGES

    out = {"hall": f"/?lang={lang}", "stats": f"/stats?table={tid}&lang={lang}",
           "report": f"/report?match={tid}.1&lang={lang}", "clips": f"/clips?lang={lang}",
           "calibrate": f"/calibrate?lang={lang}"}
    for path in PAGES:
        if path not in RECORD_PATHS and path not in TABLE_PATHS:
            out[path.strip("/").replace("/", "-")] = f"{path}?lang={lang}"
    return out

STATES = (
    State("idle", _idle),
    State("running", _running, _set(35_000), "running", moving=True),
    State("warning", _running, _set(8_500), "warning", moving=True),
    State("critical", _running, _set(4_200), "critical", moving=True),
    State("extension", _extension),
    State("time_foul", _time_foul, stage="expired"),
    State("frame_over", _frame_over, stage="frame_over", moving=True),
    State("match_over_next", _match_over, stage="frame_over"),
    State("link_down", _running, moving=True, link_down=True),
    State("limit_under_10", _limit, moving=True),
    State("long_names", _long_names, moving=True),
    # Last: the whole service goes down and comes back (every table's running clock pauses).
    State("restart", _running, stage="paused", restart=True),
)

# In the page: what it shows of its table (for a message), and whether that is ``want``.
_PAGE_SAYS = """() => {
  const c = document.getElementById('clock-box'), o = document.getElementById('third');
  const conn = window.shotclockConnection;
  return {stage: (c && c.dataset.stage) || (o && o.dataset.stage) || document.body.dataset.stage,
          status: conn && conn.status, seq: conn && conn.lastSeq};
}"""
_PAGE_STATE = """(want) => {
  const stageOf = () => {
    const b = document.body.dataset.stage, c = document.getElementById('clock-box'),
          o = document.getElementById('third');
    return (c && c.dataset.stage) || (o && o.dataset.stage) || b;
  };
  const conn = window.shotclockConnection;
  if (want.linkDown) return Boolean(conn) && conn.status !== 'live' && conn.status !== 'connecting';
  if (!conn || conn.status !== 'live' || conn.lastSeq < want.seq) return false;
  return !want.stage || stageOf() === want.stage;
}"""


class Matrix:
    """The matrix on one service and one browser; ``run`` returns every look."""

    def __init__(self, server: ServerProcess, browser: Any, *,
                 viewports: tuple[tuple[int, int], ...] = VIEWPORTS,
                 langs: tuple[str, ...] = LANGS, states: tuple[State, ...] = STATES,
                 pages: tuple[str, ...] = TABLE_PAGES, shots: bool = True,
                 pick: Callable[[str, str, str, tuple[int, int]], bool] | None = None,
                 others: bool = True) -> None:
        self.server, self.browser = server, browser
        self.others = others  # the hall's and the records' pages too (run_others)
        self.viewports, self.langs, self.states, self.pages = viewports, langs, states, pages
        self.shots = shots
        self.pick = pick or (lambda *_: True)
        self.looks: list[Shot] = []
        self.errors: list[str] = []
        self.record_table = "s0-idle"  # whose records the stats and protocol pages show

    @contextlib.contextmanager
    def _context(self) -> Iterator[Any]:
        ctx = self.browser.new_context(viewport={"width": 1920, "height": 1080})
        ctx.add_init_script(GUARD_OFF)
        ctx.clock.install()  # runs with the real time until paused
        ctx.on("page", lambda page: page.on(
            "pageerror", lambda exc: self.errors.append(f"{page.url}: {exc}")))
        try:
            yield ctx
        finally:
            ctx.close()

    def _open(self, ctx: Any, page: str, tid: str, lang: str) -> Any:
        p = ctx.new_page()
        p.wait_for_function = _polling_wait(p)
        p.goto(self.server.url + PAGE_PATHS[page].format(t=tid, lang=lang))
        return p

    def look(self, p: Any, state: str, page: str, lang: str, size: tuple[int, int],
             freeze: Callable[[], None] | None = None) -> Shot:
        p.set_viewport_size({"width": size[0], "height": size[1]})
        p.evaluate("() => { window.shotclockRefit && window.shotclockRefit();"
                   " window.dispatchEvent(new Event('resize')); }")
        if freeze is not None:
            freeze()  # the paused clock: let the page's resize work run, 40 ms of its time
        minima = DISPLAY_MINIMA if page == "display" and size == (1920, 1080) else {}
        found = p.evaluate(MEASURE, minima)
        png = None
        if self.shots:
            png = ARTIFACTS / state / f"{page}-{lang}-{size[0]}x{size[1]}.png"
            png.parent.mkdir(parents=True, exist_ok=True)
            p.screenshot(path=str(png), omit_background=page.startswith("overlay"))
        problems = list(found["problems"])
        # The title in the page's language (issue 36: six of eight pages kept English ones).
        title = p.title()
        if lang == "ru" and not re.search("[а-яё]", title, re.IGNORECASE):
            problems.append(f"the title is not in Russian: {title!r}")
        for sel, least in minima.items():
            got = found["sizes"].get(sel)
            if got is not None and got < least:
                problems.append(f"too small at 1920x1080: {sel} {got:.0f} px < {least} px")
        shot = Shot(state, page, lang, size, problems, found["sizes"], png)
        self.looks.append(shot)
        return shot

    def run_state(self, ctx: Any, st: State, tid: str) -> None:
        st.prepare(self.server, tid)
        pages = [(page, lang) for page in (st.pages or self.pages) for lang in self.langs
                 if any(self.pick(st.name, page, lang, v) for v in self.viewports)]
        opened = {(page, lang): self._open(ctx, page, tid, lang) for page, lang in pages}
        if not opened:
            return
        seq = int(self.server.get(f"/api/tables/{tid}")["seq"])
        for key, p in opened.items():
            self._until(p, key, {"seq": seq})
        stopped = False
        try:
            if st.arrive is not None:
                st.arrive(self.server, tid)
                seq = int(self.server.get(f"/api/tables/{tid}")["seq"])
            if st.restart:
                # A crash while the clock runs: the pages see the link go (their digits
                # freeze), then the service comes back with the clock paused at its last
                # sign of life, more time than the frozen digits: they say why.
                self.server.kill()
                for key, p in opened.items():
                    self._until(p, key, {"linkDown": True})
                self.server.start()
                seq = int(self.server.get(f"/api/tables/{tid}")["seq"])
            if st.link_down:
                self._stop()
                stopped = True
            want = {"seq": seq, "linkDown": st.link_down, "stage": st.stage}
            for key, p in opened.items():
                self._until(p, key, want)
            # The pages' time stands still first (a stopped service, still counting in the
            # pages, would read as a silent link), then the service's.
            self._pause(ctx, opened)
            if st.moving and not stopped:
                self._stop()
                stopped = True
            for (page, lang), p in opened.items():
                for size in self.viewports:
                    if self.pick(st.name, page, lang, size):
                        self.look(p, st.name, page, lang, size,
                                  freeze=lambda: ctx.clock.run_for(40))
        finally:
            if stopped:
                self._continue()
            ctx.clock.resume()
            for p in opened.values():
                p.close()

    def _until(self, p: Any, key: tuple[str, str], want: dict[str, Any]) -> None:
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        try:
            p.wait_for_function(f"({_PAGE_STATE})({json.dumps(want)})", timeout=30_000)
        except PlaywrightTimeout:
            raise AssertionError(f"{key[0]} ({key[1]}) never showed {want}: it shows "
                                 f"{p.evaluate(_PAGE_SAYS)}") from None

    def _pause(self, ctx: Any, opened: dict[Any, Any]) -> None:
        """The pages' clock paused (pause_at takes seconds, and a time ahead of the
        browser's own fake clock; a loaded machine may take a while between the reading
        and the pause: up to a quarter of a second ahead, less than any page takes to call
        a link silent)."""
        from playwright.sync_api import Error as PlaywrightError

        for ahead in (30, 120, 250):
            now_ms = max(p.evaluate("Date.now()") for p in opened.values())
            try:
                ctx.clock.pause_at((now_ms + ahead) / 1000)
                return
            except PlaywrightError as exc:
                if "to the past" not in str(exc):
                    raise
        raise AssertionError("the browser's clock could not be paused")

    def _stop(self) -> None:
        os.kill(self.server.proc.pid, signal.SIGSTOP)

    def _continue(self) -> None:
        os.kill(self.server.proc.pid, signal.SIGCONT)

    def run_others(self, ctx: Any, tid: str) -> None:
        """The pages about the hall and the records, once per size and language: the hall
        with every state's table on it."""
        for lang in self.langs:
            for page, path in extra_pages(tid, lang).items():
                sizes = [v for v in self.viewports if self.pick("pages", page, lang, v)]
                if not sizes:
                    continue
                p = ctx.new_page()
                p.wait_for_function = _polling_wait(p)
                p.goto(self.server.url + path)
                p.wait_for_load_state("load")
                p.wait_for_function(f"({PAGE_READY.get(page, 'true')}) && {LOADED}")
                for size in sizes:
                    self.look(p, "pages", page, lang, size)
                p.close()

    def run(self) -> list[Shot]:
        with self._context() as ctx:
            for i, st in enumerate(self.states):
                tid = f"{i}-{st.name.replace('_', '-')}"[:12]  # ids as short as a hall's
                if st.name == "match_over_next":
                    self.record_table = tid  # a finished match: the protocol has it all
                self.run_state(ctx, st, tid)
            if self.others:
                self.run_others(ctx, self.record_table)
        return self.looks


def report(looks: list[Shot]) -> str:
    lines = []
    bad = [s for s in looks if s.problems]
    for s in bad:
        lines.append(f"{s.state} {s.page} {s.lang} {s.size[0]}x{s.size[1]}:")
        lines += [f"    {p}" for p in s.problems]
    lines.append(f"{len(looks)} looks, {len(bad)} with problems")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", action="append", help="only these states")
    parser.add_argument("--page", action="append", help="only these pages")
    parser.add_argument("--no-shots", action="store_true", help="measure only")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    import harness.server
    harness.server.FORK = False
    states = tuple(s for s in STATES if not args.state or s.name in args.state)
    pages = tuple(p for p in TABLE_PAGES if not args.page or p in args.page)
    started, cpu = time.monotonic(), time.process_time()
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        server = ServerProcess(Path(tmp) / "screens.db").start()
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                matrix = Matrix(server, browser, states=states, pages=pages,
                                shots=not args.no_shots,
                                others=not (args.page and set(args.page) <= set(TABLE_PAGES)))
                looks = matrix.run()
                browser.close()
        finally:
            server.stop()
    print(report(looks))
    print("page errors:", matrix.errors or "none")
    print(f"wall {time.monotonic() - started:.1f} s, this process's CPU "
          f"{time.process_time() - cpu:.1f} s")
    return 1 if any(s.problems for s in looks) or matrix.errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


__all__ = ["Matrix", "STATES", "State", "Shot", "VIEWPORTS", "LANGS", "report", "field"]
