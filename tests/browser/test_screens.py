"""Every page in every state a table meets, judged from what Chromium drew (issue 36 point
2; the matrix and its checks: tests/browser/screens.py).

`make test` runs a share of the matrix, in three shards of the states: every state on every table page, each in one of the
two languages and at one of the four sizes in turn (a stable choice: every size and both
languages are met across the states and pages), the display at 1920x1080 in Russian in
every state (its minimum sizes), and every other page once, at one size. ``python -m tests.browser.screens`` runs all of it: every page at every
size in both languages in every state. The screenshots are in test-artifacts/screens/."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.screens import (
    DISPLAY_MINIMA,
    LANGS,
    STATES,
    TABLE_PAGES,
    VIEWPORTS,
    Matrix,
    State,
    report,
)
from tests.server import ServerProcess

pytestmark = pytest.mark.browser

FULL_HD = (1920, 1080)


def share(state: str, page: str, lang: str, size: tuple[int, int]) -> bool:
    """The share `make test` looks at: one language and one size per state and page, in
    turn (the same looks on every run); the display at 1920x1080 in Russian always."""
    if page == "display" and size == FULL_HD and lang == "ru":
        return True
    turn = zlib.crc32(f"{state} {page}".encode())
    return LANGS[turn % 2] == lang and VIEWPORTS[(turn // 2) % len(VIEWPORTS)] == size


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The matrix's own service: it is stopped (SIGSTOP) and restarted under its pages."""
    server = ServerProcess(Path(tmp_path_factory.mktemp("screens")) / "screens.db").start()
    try:
        yield server
    finally:
        server.stop()


# Three shards of the states, each a test of its own, so that three workers share the
# matrix (it was one test of 60-180 s, the suite's longest); the hall's and the records'
# pages go with the finished match's shard. The restart stays the last state of its shard.
SHARDS = 3


def shard_states(k: int) -> tuple[State, ...]:
    return STATES[k::SHARDS]


def test_the_share_meets_every_state_size_and_language() -> None:
    """What `make test` looks at, over its shards: every state on every table page, every
    size and both languages; the display at 1920x1080 in Russian in every state."""
    looks = {(st.name, page, lang, size)
             for k in range(SHARDS) for st in shard_states(k) for page in st.pages or TABLE_PAGES
             for lang in LANGS for size in VIEWPORTS if share(st.name, page, lang, size)}
    assert {st.name for k in range(SHARDS) for st in shard_states(k)} == {
        st.name for st in STATES}
    assert STATES[-1].restart and shard_states((len(STATES) - 1) % SHARDS)[-1] is STATES[-1]
    assert {(state, page) for state, page, _, _ in looks} == {
        (st.name, page) for st in STATES for page in st.pages or TABLE_PAGES}
    assert {size for *_, size in looks} == set(VIEWPORTS)
    assert {lang for _, _, lang, _ in looks} == set(LANGS)
    assert all((st.name, "display", "ru", FULL_HD) in looks
               for st in STATES if "display" in (st.pages or TABLE_PAGES))


@pytest.mark.parametrize("k", range(SHARDS))
def test_no_page_overlaps_cuts_or_hides_anything_in_any_state(own_server: ServerProcess,
                                                               browser: Any, k: int) -> None:
    states = shard_states(k)
    with_others = any(st.name == "match_over_next" for st in states)
    matrix = Matrix(own_server, browser, pick=share, states=states, others=with_others)
    looks = matrix.run()
    text = report(looks)
    print(text)
    assert {st.name for st in states} <= {s.state for s in looks}, [s.state for s in looks]
    # The display read from 4 m: every state's digits and match clock measured at 1920.
    measured = [s.sizes for s in looks if s.page == "display" and s.size == FULL_HD]
    assert any("#clock" in m for m in measured), measured
    if any(st.name == "limit_under_10" for st in states):
        assert any("#match-clock" in m for m in measured), "no state showed the match clock"
    if with_others:
        assert any("#next-match" in m for m in measured), "no state showed the next match"
    least = {sel: min(m[sel] for m in measured if sel in m) for sel in DISPLAY_MINIMA
             if any(sel in m for m in measured)}
    print("the display at 1920x1080, smallest font sizes (px):", least)
    assert not matrix.errors, matrix.errors
    assert not [s for s in looks if s.problems], text
