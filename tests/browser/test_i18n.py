"""Every error code the service can return has a Russian and an English text (issue 9.20,
TEAM convention 5), and the Russian pages use the rules' own words (issue 9.19).

The codes are collected from the source, not listed by hand: every ``code=`` given to an
error or a fault, every error class's ``code``, every ``{"code": ...}`` the API builds, every
refusal of the state machines' tables and guards (``No(code, ...)``), and every call of a
helper that takes a ``code``. A new code without both texts fails here."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from clock_service.core.machine import No
from harness.server import Service
from tests.browser.conftest import make_table
from tests.server import ROOT

pytestmark = pytest.mark.browser

SOURCES = [ROOT / "clock_service", ROOT / "firmware_bridge"]
# f-string codes and what they can be (commands._built: call and route).
TEMPLATES = {"bad_{name}": {"bad_call", "bad_route"}}
# Codes that never reach a page or a client, each with the reason.
NEVER_SENT = {
    "http_error": "clock_service/edges/client.py: the Python client's own, for a reply it could not read",
    "bad_state": "raised only while loading a stored state: a corrupt store, not a request",
    "bad_outcome": "the rules core checking an Outcome it built itself",
    "bad_result": "the rules core called with something that is not a ShotResult (internal)",
    "bad_verdict": "the rules core checking a call verdict it built itself",
    "bad_foul": "the rules core checking a Foul it built itself",
    "invalid_mqtt_url": "a start-up configuration error of `shotclock serve`, printed, not sent",
}


def _str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


@functools.cache
def service_codes() -> dict[str, set[str]]:
    """code -> the files it comes from."""
    found: dict[str, set[str]] = {}
    templates: set[str] = set()

    def add(code: str | None, where: Path) -> None:
        if code:
            found.setdefault(code, set()).add(str(where.relative_to(ROOT)))

    trees = [(path, ast.parse(path.read_text())) for root in SOURCES for path in root.rglob("*.py")]
    # Helpers that take a code positionally (e.g. rules.call._unknown(what, code, ...)).
    takes_code: dict[str, int] = {}
    for _, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names = [a.arg for a in node.args.posonlyargs + node.args.args]
                if "code" in names and names[0] not in ("self", "cls"):
                    takes_code[node.name] = names.index("code")
    for path, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "code":
                if isinstance(node.value, ast.JoinedStr):
                    templates.add(re.sub(r"\{[^}]*\}", "{name}", ast.unparse(node.value)[2:-1]))
                add(_str(node.value), path)
            elif isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "code" for t in node.targets):
                add(_str(node.value), path)
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if _str(key) == "code":
                        add(_str(value), path)
            elif isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                index = 0 if name == No.__name__ else takes_code.get(name or "")
                if index is not None and index < len(node.args):
                    add(_str(node.args[index]), path)
    unknown = templates - set(TEMPLATES)
    assert not unknown, f"codes made from a template the test cannot expand: {unknown}"
    for template in templates:
        for code in TEMPLATES[template]:
            add(code, ROOT / "clock_service")
    return found


def test_the_collector_finds_codes_of_every_kind() -> None:
    """The collector itself: a code of each source it reads (or it could pass by finding nothing)."""
    codes = service_codes()
    for code in ("unknown_table", "unauthorized",  # error classes
                 "extension_used", "no_foul_pending", "nothing_to_undo",  # guards
                 "too_late", "frame_over",  # the refusal table
                 "too_many_whites", "choice_pending", "match_over",  # the rules
                 "unknown_pocket", "unknown_cushion",  # a helper taking the code
                 "invalid_json", "store_unwritable",  # API dicts, faults
                 "bad_call", "bad_route"):  # a template
        assert code in codes, code
    stale = set(NEVER_SENT) - set(codes)
    assert not stale, f"NEVER_SENT names codes that no longer exist: {stale}"


def test_every_error_code_has_a_russian_and_an_english_text(
        shared_server: Service, context: Any) -> None:
    make_table(shared_server, "i18n")
    page = context.new_page()
    page.goto(f"{shared_server.url}/?lang=en")
    texts = page.evaluate("""async () => {
        await import('/static/js/result.js');  // the panel adds the rules' texts
        const i18n = await import('/static/js/i18n.js');
        return i18n.errorTexts();
    }""")
    codes = service_codes()
    missing = {lang: sorted(c for c in codes if c not in NEVER_SENT and not texts[lang].get(c))
               for lang in ("en", "ru")}
    assert missing == {"en": [], "ru": []}, {
        lang: [f"{c} ({', '.join(sorted(codes[c]))})" for c in cs] for lang, cs in missing.items()}
    not_russian = sorted(c for c in codes if c in texts["ru"]
                         and not re.search("[а-яё]", texts["ru"][c], re.IGNORECASE))
    assert not_russian == [], not_russian


def test_russian_uses_the_rules_words_and_never_declines_a_name(
        shared_server: Service, context: Any) -> None:
    """Issue 9.19: "круг" (12.2-12.3), names only where they need no declension, "Отмена" and
    "Отменить" never side by side, no English appended, the connection label fits 390 px."""
    make_table(shared_server, "ru", players=("Петров", "Сидоров"), race_to=3)
    page = context.new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{shared_server.url}/?lang=ru")
    texts = page.evaluate("""async () => {
        await import('/static/js/result.js');
        const i18n = await import('/static/js/i18n.js');
        return i18n.allTexts ? i18n.allTexts() : null;
    }""")
    assert texts is not None
    ru = texts["ru"]
    # The rules' own word for 12.2-12.3.
    assert ru["label.round"] == "Круг"
    assert not [k for k, v in ru.items() if re.search("раунд", v, re.IGNORECASE)]
    # A name stands where Russian needs no case ending: first, after ":" / "—", or after
    # "игрока"/"игроку"/"игроком" (apposition). "Ход переходит к {name}" would decline it.
    declined = [f"{k}: {v}" for k, v in ru.items()
                for m in re.finditer(r"\{(name|other)\}", v)
                if m.start() > 0 and not re.search(r"(: |— |! |игрока |игроку |игроком |\()$", v[:m.start()])]
    assert declined == [], declined
    assert "(а)" not in "".join(ru.values())  # no "брал(а)": worded so no gender is needed

    # The pages themselves, in Russian: no "раунд", no English appended, Cancel/Undo apart.
    for path in ("/referee?table=ru", "/display?table=ru", "/overlay?table=ru", "/"):
        page.goto(f"{shared_server.url}{path}&lang=ru" if "?" in path else f"{shared_server.url}/?lang=ru")
        page.wait_for_load_state("load")
        if "table=" in path:
            page.wait_for_function("window.shotclockConnection.status === 'live'")
        body = page.locator("body").inner_text()
        assert "раунд" not in body.lower(), path
        if path.startswith("/referee"):
            assert "Круг" in body
            for group in page.eval_on_selector_all(
                    ".dialog-buttons, .res-actions", "els => els.map(e => e.textContent)"):
                assert not ("Отмена" in group and "Отменить" in group), group
            # The connection label fits the 390 px header row in every state.
            for status in ("connecting", "live", "stale", "offline", "unknown_table"):
                page.evaluate(f"window.shotclockConnection._setStatus('{status}')")
                fits = page.eval_on_selector(
                    "#status .conn", "e => e.scrollWidth <= e.clientWidth && e.getBoundingClientRect().right <= 390")
                assert fits, status
            page.evaluate("window.shotclockConnection._setStatus('live')")
    # The hall's refusal in Russian has no English detail appended.
    page.locator("input[name=id]").fill("ru")
    page.locator("input[name=a]").fill("А")
    page.locator("input[name=b]").fill("Б")
    page.locator("button[type=submit]").click()
    result = page.locator("#create-result")
    expect(result).to_have_text("стол с таким номером уже есть")
