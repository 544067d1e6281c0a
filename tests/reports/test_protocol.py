"""The protocol page as a pure function of the record (reports/protocol.py)."""

from __future__ import annotations

import re

import pytest

from clock_service.core.commands import Foul
from clock_service.core.rules.fouls import FoulCode
from clock_service.edges.reports.protocol import TEXTS, render_protocol
from clock_service.edges.reports.stats import build_match
from harness.reports import Table


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_every_foul_code_has_a_name_in_the_protocol(lang: str) -> None:
    missing = [c.value for c in FoulCode
               if c is not FoulCode.OTHER and f"code.{c.value}" not in TEXTS[lang]]
    assert missing == []


def test_the_russian_protocol_uses_the_rules_words() -> None:
    # Rules 12.2-12.3 count "круги" (issue 9 point 19); the pages' own check is test_i18n.
    assert [k for k, v in TEXTS["ru"].items() if re.search("раунд", v, re.IGNORECASE)] == []


@pytest.mark.parametrize(("lang", "shown"), [
    ("ru", ["двойное касание: cue lifted", "touched the colour"]),
    ("en", ["double hit: cue lifted", "touched the colour"]),
])
def test_coded_fouls_show_their_name_and_the_referees_note(lang: str, shown: list[str]) -> None:
    t = Table(players=("Ivanov", "<script>alert(1)</script>"))
    t.do(Foul(code="double_hit", reason="cue lifted"))
    t.do(Foul(reason="touched the colour", player=1))
    html = render_protocol({"status": "playing", "ended_at": None}, build_match(t.log, "t"),
                           lang=lang)
    assert re.findall(r'<td data-stat="what">([^<]*)</td>', html) == shown
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
