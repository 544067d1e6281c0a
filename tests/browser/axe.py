"""axe-core in the browser tests: the accessibility rules run inside a page.

axe-core comes from npm (tests/browser/npm/package.json, installed by ``make node-deps``
with the exact version of its package-lock.json). It is put into every page of a browser
context as an init script (through DevTools, which the pages' Content-Security-Policy does
not govern: the pages themselves stay under it), then ``violations`` runs it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.server import ROOT

AXE = ROOT / "tests" / "browser" / "npm" / "node_modules" / "axe-core" / "axe.min.js"
SERIOUS = ("critical", "serious")


def with_axe(context: Any) -> None:
    """Every page opened in ``context`` from now on has axe-core (window.axe)."""
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `make node-deps` (npm ci in tests/browser/npm)",
                    pytrace=False)
    context.add_init_script(path=str(AXE))


def violations(page: Any, impacts: tuple[str, ...] = SERIOUS) -> list[dict[str, Any]]:
    """axe's violations of these impacts on the page as it is now: each with its rule, its
    impact, what it asks for and (up to five of) the elements that break it."""
    found = page.evaluate("""async () => {
        const result = await axe.run(document, {resultTypes: ['violations']});
        return result.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ') + ': ' + n.failureSummary)}));
    }""")
    return [v for v in found if v["impact"] in impacts]
