"""Every page is accessible (issue 36 point 3): axe-core, the accessibility checker, run in
Chromium on every page the service serves, in Russian and in English, in the main states of
a table (idle, running, a time foul, the match over with the next match queued, the link
down): no critical and no serious violation. Each table page is met in each state in one
language, in turn, so that both languages meet every page and every state.

axe-core comes from npm (tests/browser/axe/package-lock.json, installed by `make test`'s
node step) and is put into each page as DevTools puts a script in (an init script): the
pages keep their Content-Security-Policy, which refuses any script of the test's own.
Every violation found, of any impact, is printed; only critical and serious ones fail."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.thread_server import ThreadServer
from tests.browser.conftest import GUARD_OFF, _polling_wait
from tests.browser.screens import (
    LOADED,
    LONG_PROFILE,
    PAGE_PATHS,
    PAGE_READY,
    cmd,
    extra_pages,
    table,
)
from tests.browser.screens import _match_over as match_over
from tests.browser.screens import _time_foul as time_foul
from tests.server import ROOT

pytestmark = pytest.mark.browser

AXE = ROOT / "tests" / "browser" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
FAILING = ("critical", "serious")
TABLE_PAGES = ("referee", "display", "overlay-third")

RUN_AXE = """async (within) => {
  const result = await axe.run(within ? document.querySelector(within) : document,
                               {resultTypes: ['violations']});
  return result.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map((n) => n.target.join(' ') + ': ' + (n.failureSummary || '').split('\\n').slice(1, 2).join(' '))}));
}"""


@pytest.fixture(scope="module")
def axe_context(browser: Any) -> Iterator[Any]:
    if not AXE.exists():
        pytest.fail(f"{AXE.relative_to(ROOT)} is missing: the accessibility tests need axe-core "
                    "from npm (run `make node-deps`)", pytrace=False)
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    ctx.add_init_script(GUARD_OFF)
    ctx.add_init_script(path=str(AXE))
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture(scope="module")
def tables(shared_server: ThreadServer) -> dict[str, str]:
    """The tables in the main states; the name of each state's table."""
    server = shared_server
    table(server, "a-idle", race_to=2)
    table(server, "a-run", race_to=2, match_limit_ms=1_800_000)
    cmd(server, "a-run", "start")
    cmd(server, "a-run", "extension")
    time_foul(server, "a-foul")
    match_over(server, "a-over")
    table(server, "a-down", race_to=2, profile=LONG_PROFILE)
    return {"idle": "a-idle", "running": "a-run", "time_foul": "a-foul",
            "match_over_next": "a-over", "link_down": "a-down"}


def check(ctx: Any, url: str, ready: str, found: dict[str, list[dict[str, Any]]],
          key: str) -> None:
    page = ctx.new_page()
    page.wait_for_function = _polling_wait(page)
    try:
        page.goto(url)
        page.wait_for_load_state("load")
        page.wait_for_function(ready, timeout=20_000)
        found[key] = page.evaluate(RUN_AXE, None)
    finally:
        page.close()


# The console's dialogs, each opened as a referee opens it (axe looks at what is shown: a
# closed dialog is not checked with its page; issue 36: the token's input had no label).
DIALOGS = {"#token-btn": "#token-dialog", "#btn-foul": "#foul-dialog", "#keys-btn": "#keys-dialog",
           "#health-btn": "#health-dialog", "#btn-undo": "#undo-dialog"}


def check_dialogs(ctx: Any, url: str, found: dict[str, list[dict[str, Any]]], key: str) -> None:
    page = ctx.new_page()
    page.wait_for_function = _polling_wait(page)
    try:
        page.goto(url)
        page.wait_for_function(LIVE)
        for opener, dialog in DIALOGS.items():
            page.locator(opener).click()
            page.wait_for_function(f"document.querySelector('{dialog}').open")
            found[f"{key} {dialog}"] = page.evaluate(RUN_AXE, dialog)
            page.keyboard.press("Escape")
            page.wait_for_function(f"!document.querySelector('{dialog}').open")
    finally:
        page.close()


def summary(found: dict[str, list[dict[str, Any]]]) -> str:
    lines = []
    for key, violations in found.items():
        counts: dict[str, int] = {}
        for v in violations:
            counts[v["impact"]] = counts.get(v["impact"], 0) + 1
        lines.append(f"{key}: {json.dumps(counts) if counts else 'none'}")
        for v in violations:
            lines.append(f"    {v['impact']} {v['id']}: {v['help']}")
            lines += [f"        {n}" for n in v["nodes"]]
    return "\n".join(lines)


LIVE = "window.shotclockConnection && window.shotclockConnection.status === 'live'"
EXPIRED = ("[document.body.dataset.stage, (document.getElementById('clock-box') || {}).dataset?.stage,"
           " (document.getElementById('third') || {}).dataset?.stage].includes('expired')")


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_no_critical_or_serious_violation_on_any_page_in_any_main_state(
        shared_server: ThreadServer, axe_context: Any, tables: dict[str, str],
        lang: str) -> None:
    server, found = shared_server, {}
    states = [state for state in tables if state != "link_down"]
    for i, state in enumerate(states):
        tid = tables[state]
        # The time foul: once the page shows the 3 s shot run out (its own stage).
        ready = LIVE if state != "time_foul" else f"{LIVE} && {EXPIRED}"
        # Each table page in each state in one of the two languages, in turn: every page
        # in both languages and every state in both (the suite's CPU: axe on a page costs
        # about a second of it); the link down and the dialogs in both.
        for j, page in enumerate(TABLE_PAGES):
            if (i + j) % 2 != ("ru", "en").index(lang):
                continue
            url = server.url + PAGE_PATHS[page].format(t=tid, lang=lang)
            check(axe_context, url, ready, found, f"{state} {page} {lang}")
    # The link down: the service silent (its loop held) until the pages say so.
    tid = tables["link_down"]
    pages = {page: axe_context.new_page() for page in TABLE_PAGES}
    try:
        for page, p in pages.items():
            p.wait_for_function = _polling_wait(p)
            p.goto(server.url + PAGE_PATHS[page].format(t=tid, lang=lang))
            p.wait_for_function(LIVE)
        with server.silent():
            for page, p in pages.items():
                p.wait_for_function("window.shotclockConnection.status !== 'live'", timeout=20_000)
                found[f"link_down {page} {lang}"] = p.evaluate(RUN_AXE, None)
    finally:
        for p in pages.values():
            p.close()
    # The dialogs on a running clock of its own (a minute's shot: it does not run out meanwhile).
    table(server, f"a-dlg-{lang}", race_to=2)
    cmd(server, f"a-dlg-{lang}", "start")
    cmd(server, f"a-dlg-{lang}", "extension")
    check_dialogs(axe_context, server.url + PAGE_PATHS["referee"].format(t=f"a-dlg-{lang}", lang=lang),
                  found, f"running referee {lang}")
    for page, path in extra_pages(tables["match_over_next"], lang).items():
        check(axe_context, server.url + path, f"({PAGE_READY.get(page, 'true')}) && {LOADED}",
              found, f"pages {page} {lang}")
    report = summary(found)
    print(report)
    Path(ROOT / "test-artifacts").mkdir(exist_ok=True)
    (ROOT / "test-artifacts" / f"axe-{lang}.txt").write_text(report + "\n")
    failing = {key: [v for v in violations if v["impact"] in FAILING]
               for key, violations in found.items()}
    failing = {key: v for key, v in failing.items() if v}
    assert not failing, summary(failing)
