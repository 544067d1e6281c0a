"""The charts' legends on /stats (issue 23: in Russian at 1080p a legend lost a label):
every entry is drawn inside the picture, smaller or on a second line, never cut; figures
in the pictures are written as the reader's language writes them."""

from __future__ import annotations

import re

import pytest

from clock_service.edges.reports.charts import _dec, distribution_svg, timeline_svg
from clock_service.edges.reports.stats import MatchRecord, build_match
from harness.reports import Table

NAMES = ["Александр Петров-Водкин-Ястржембский", "Александр Николаевич Иванов-Салтыков"]


def record() -> MatchRecord:
    """A frame of a few timed shots between two players with 36-character names."""
    from clock_service.core.commands import Shot, Start

    table = Table(players=(NAMES[0], NAMES[1]))
    for _ in range(3):
        table.do(Start())
        table.wait(2500)
        table.do(Shot())
    return build_match(table.log, table="t")


@pytest.mark.parametrize("width", [400, 700, 1200])
def test_every_legend_entry_is_inside_the_picture(width: int) -> None:
    svg = timeline_svg(record(), lang="ru", width=width, height=300)
    texts = re.findall(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="start" font-size="(\d+)"[^>]*>([^<]+)</text>', svg)
    legend = [(float(x), int(size), label) for x, size, label in texts
              if label in NAMES or label in ("фол", "продление")]
    assert {label for _, _, label in legend} == {*NAMES, "фол", "продление"}
    for x, size, label in legend:
        # 8.5 px a character at 14 px: the estimate the legend itself is laid out with
        assert x + 8.5 * size / 14 * len(label) <= width, (label, x, size, width)
        assert size >= 9


def test_decimals_in_the_pictures_follow_the_language() -> None:
    assert (_dec(2.5, "ru"), _dec(2.5, "en"), _dec(3.0, "ru")) == ("2,5", "2.5", "3")
    ru = distribution_svg(record(), lang="ru", width=1200, height=400)
    # the legend's mean: 2,5 s a shot in Russian, 2.5 s in English
    assert re.search(r">[^<]*2,5 с\)<", ru), ru[:2000]
    assert re.search(r">[^<]*2\.5 s\)<", distribution_svg(record(), lang="en", width=1200, height=400))
