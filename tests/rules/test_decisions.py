"""The service's decisions where the rules leave room (docs/RULES.md, D6-D9), in the core."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from clock_service.core.rules import (
    EndReason,
    FrameRules,
    InvalidResult,
    Match,
    Phase,
    ShotResult,
)
from tests.rules.test_frame import frame, on_break

# -- D6: a time foul before the break; D7: an illegal break ----------------------------------
# Each case: the foul, the opponent's choice; then who is at the table, whether the break is
# still to be played, and what the next report must look like.
BREAK_CASES = [
    pytest.param(lambda f: f.record_foul(0, "12.4", "time", "shot_time"), "accept", 1, True,
                 id="D6-12.4-10.4-time-foul-on-the-break-accepted-the-opponent-breaks"),
    pytest.param(lambda f: f.record_foul(0, "12.4", "time", "shot_time"), "hand_back", 0, True,
                 id="D6-12.4-10.4-time-foul-on-the-break-handed-back-the-breaker-breaks"),
    pytest.param(lambda f: f.shot(on_break(legal_break=False)), "accept", 1, False,
                 id="D7-4.3-10.4-illegal-break-accepted-the-opponent-plays-the-position"),
    pytest.param(lambda f: f.shot(on_break(legal_break=False)), "hand_back", 0, False,
                 id="D7-4.3-10.4-illegal-break-handed-back-no-re-rack-no-re-break"),
]


@pytest.mark.parametrize(("foul", "choice", "at_table", "break_pending"), BREAK_CASES)
def test_who_plays_after_a_foul_on_the_break(foul: Callable[[FrameRules], Any], choice: str,
                                             at_table: int, break_pending: bool) -> None:
    start = FrameRules(breaker=0)
    outcome = foul(start)
    assert (outcome.choice_for, start.fouls) == (1, (1, 0))
    getattr(start, choice)()
    assert start.player_at_table == at_table
    assert (start.phase is Phase.BREAK) is break_pending
    before = start.to_dict()
    # The break still to be played needs legal_break; a position played on must not have it.
    with pytest.raises(InvalidResult) as caught:
        start.shot(ShotResult() if break_pending else ShotResult(legal_break=True))
    assert caught.value.code == ("missing_legal_break" if break_pending
                                 else "legal_break_after_break")
    assert start.to_dict() == before
    report = on_break(whites_potted=1) if break_pending else ShotResult(whites_potted=1)
    assert start.shot(report).whites_credited == 1
    assert start.credited == ((1, 0) if at_table == 0 else (0, 1))


# -- D8: the foul count after the frame ends ----------------------------------------------
def test_the_count_shown_after_the_frame_is_its_final_count_the_next_starts_at_zero() -> None:
    match = Match(race_to=3)
    match.record_foul(0, "12.4", "time", "shot_time")
    match.hand_back()
    outcome = match.record_foul(0, "9", "touched a ball")
    assert outcome.end_reason is EndReason.TECHNICAL_LOSS
    assert match.frame.fouls == (2, 0)  # the frame's final count, kept while it is over
    match.start_next_frame()
    assert match.frame.fouls == (0, 0)  # 10.5: counts reset with the frame


# -- D9: the referee ends a frame in progress ---------------------------------------------
@pytest.mark.parametrize("reason", [None, "", "  "])
def test_ending_a_frame_in_progress_needs_a_reason(reason: str | None) -> None:
    match = Match()
    before = match.to_dict()
    with pytest.raises(InvalidResult) as caught:
        match.end_frame_by_referee(0, reason)
    assert caught.value.code == "missing_reason"
    assert "outside the rules" in str(caught.value)
    assert match.to_dict() == before


def test_a_referee_ending_has_no_rule() -> None:
    start = frame()
    start.end_by_referee(1, "Petrov's opponent withdrew")
    assert (start.end_reason, start.end_rule, start.winner) == (EndReason.REFEREE, None, 1)
    won = frame(credited=(3, 0), fouls=(1, 0))
    won.record_foul(0, "9", "touched a ball")
    assert won.end_rule == "10.5-10.6"
