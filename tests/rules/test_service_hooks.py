"""What the clock needs from the rules: pass_turn, end_by_referee, open-ended matches."""

from __future__ import annotations

import json

import pytest

from clock_service.core.rules import (
    EndReason,
    FrameRules,
    InvalidResult,
    Match,
    Phase,
    RuleRefusal,
    ShotResult,
    Turn,
)


def test_pass_turn_is_a_shot_without_credit_or_foul_I1() -> None:
    frame = FrameRules(breaker=0)
    outcome = frame.pass_turn()
    assert (outcome.turn, outcome.next_player, outcome.fouls) == (Turn.PASSES, 1, ())
    assert frame.break_done and frame.phase is Phase.PLAY and frame.player_at_table == 1
    assert frame.credited == (0, 0) and frame.fouls == (0, 0)


def test_pass_turn_waits_for_the_10_4_choice() -> None:
    frame = FrameRules()
    frame.record_foul(0, "10.1", "touched a ball")
    before = frame.to_dict()
    with pytest.raises(RuleRefusal) as caught:
        frame.pass_turn()
    assert caught.value.code == "choice_pending" and caught.value.rule == "10.4"
    assert frame.to_dict() == before


@pytest.mark.parametrize("winner", [0, 1, None])
def test_end_by_referee_and_round_trip(winner: int | None) -> None:
    frame = FrameRules()
    frame.shot(ShotResult(whites_potted=1, legal_break=True))
    frame.end_by_referee(winner, "abandoned")
    assert frame.over and frame.phase is Phase.OVER and frame.winner == winner
    assert frame.end_reason is EndReason.REFEREE
    assert FrameRules.from_dict(json.loads(json.dumps(frame.to_dict()))) == frame
    with pytest.raises(InvalidResult):
        frame.shot(ShotResult(whites_potted=1))


def test_open_ended_match_never_ends_and_counts_undecided_frames() -> None:
    match = Match(race_to=None)
    for frame_number in range(1, 6):
        match.end_frame_by_referee(None if frame_number == 3 else 0, "time is up")
        assert not match.over and match.winner is None
        copy = Match.from_dict(json.loads(json.dumps(match.to_dict())))
        assert copy == match
        match.start_next_frame()
    assert (match.score, match.undecided, match.frame_number) == ((4, 0), 1, 6)


def test_referee_award_can_win_a_race() -> None:
    match = Match(race_to=1)
    match.end_frame_by_referee(1, "walkover")
    assert match.over and match.winner == 1
    with pytest.raises(RuleRefusal) as caught:
        match.start_next_frame()
    assert caught.value.code == "match_over"


def test_impossible_undecided_count_is_refused() -> None:
    data = {**Match(race_to=2).to_dict(), "undecided": 1}
    with pytest.raises(InvalidResult) as caught:
        Match.from_dict(data)
    assert caught.value.code == "bad_state"
