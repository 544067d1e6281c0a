"""Match: race to K frames, alternating breaks (I3), fouls reset per frame (10.5)."""

from __future__ import annotations

import json

import pytest

from clock_service.core.rules import (
    Call,
    InvalidResult,
    Match,
    Route,
    RuleRefusal,
    ShotResult,
)

BANK = Call("bottom_left", ["right_bottom"], ["cue>colour"])
BANK_ROUTE = Route("bottom_left", ["cue>colour", "right_bottom"])


def win_frame_by_colour(match: Match) -> None:
    """The breaker pots 3 whites on the break (4.6, 5.4), then the coloured ball (3.2)."""
    match.shot(ShotResult(whites_potted=3, legal_break=True))
    match.shot(ShotResult(colour_potted=True, call=BANK, route=BANK_ROUTE))


def lose_frame_by_fouls(match: Match, player: int) -> None:
    match.record_foul(player, "12.4", "shot time exceeded")
    match.record_foul(player, "12.4", "shot time exceeded")


def test_default_is_a_single_frame() -> None:
    match = Match()
    assert (match.race_to, match.frame_number, match.frame.breaker) == (1, 1, 0)
    win_frame_by_colour(match)
    assert match.score == (1, 0) and match.over and match.winner == 0
    with pytest.raises(RuleRefusal) as caught:
        match.start_next_frame()
    assert caught.value.code == "match_over"


@pytest.mark.parametrize(
    ("first_breaker", "expected"),
    [pytest.param(0, [0, 1, 0, 1, 0], id="I3-player-0-first"),
     pytest.param(1, [1, 0, 1, 0, 1], id="I3-player-1-first")],
)
def test_I3_breaks_alternate_by_frame(first_breaker: int, expected: list[int]) -> None:
    match = Match.best_of(11, first_breaker=first_breaker)
    breakers = []
    for _ in expected:
        breakers.append(match.frame.breaker)
        assert match.frame.player_at_table == match.frame.breaker
        lose_frame_by_fouls(match, 0)  # player 1 wins every frame
        match.start_next_frame()
    assert breakers == expected
    assert [match.breaker_of(n) for n in range(1, 6)] == expected


def test_race_to_three_ends_with_the_third_frame_won() -> None:
    match = Match(race_to=3)
    win_frame_by_colour(match)  # frame 1, player 0 breaks and wins
    match.start_next_frame()
    win_frame_by_colour(match)  # frame 2, player 1 breaks and wins
    match.start_next_frame()
    lose_frame_by_fouls(match, 1)  # frame 3 to player 0
    assert match.score == (2, 1) and not match.over
    match.start_next_frame()
    lose_frame_by_fouls(match, 1)
    assert match.score == (3, 1) and match.over and match.winner == 0
    assert match.frame_number == 4


def test_10_5_fouls_reset_with_the_new_frame() -> None:
    match = Match(race_to=2)
    match.record_foul(0, "12.4", "shot time exceeded")
    match.accept()
    match.record_foul(1, "12.4", "shot time exceeded")
    match.hand_back()
    match.record_foul(1, "9", "touched a ball")  # second foul of player 1 (10.5)
    assert match.frame.over and match.score == (1, 0)
    match.start_next_frame()
    assert match.frame.fouls == (0, 0) and match.frame.credited == (0, 0)


def test_next_frame_only_after_the_current_one_ends() -> None:
    match = Match(race_to=2)
    with pytest.raises(RuleRefusal) as caught:
        match.start_next_frame()
    assert caught.value.code == "frame_in_progress"
    assert match.frame_number == 1


@pytest.mark.parametrize(
    ("build", "code"),
    [
        pytest.param(lambda: Match(race_to=0), "bad_match", id="race-to-zero"),
        pytest.param(lambda: Match(first_breaker=2), "unknown_player", id="breaker-2"),
        pytest.param(lambda: Match.best_of(4), "bad_match", id="best-of-even"),
    ],
)
def test_match_settings_are_validated(build, code: str) -> None:
    with pytest.raises(InvalidResult) as caught:
        build()
    assert caught.value.code == code


def test_best_of_is_a_race_to_the_majority() -> None:
    assert Match.best_of(5).race_to == 3
    assert Match.best_of(1).race_to == 1


def _states() -> list[Match]:
    fresh = Match(race_to=2, first_breaker=1)
    mid = Match(race_to=2)
    win_frame_by_colour(mid)
    mid.start_next_frame()
    mid.shot(ShotResult(whites_potted=1, legal_break=True))
    ended = Match()
    lose_frame_by_fouls(ended, 0)
    return [fresh, mid, ended]


@pytest.mark.parametrize("state", _states(), ids=["fresh", "second-frame", "over"])
def test_match_round_trips_through_json(state: Match) -> None:
    copy = Match.from_dict(json.loads(json.dumps(state.to_dict())))
    assert copy == state
    assert (copy.score, copy.winner, copy.frame_number) == (
        state.score, state.winner, state.frame_number)


@pytest.mark.parametrize(
    "patch",
    [
        pytest.param({"score": [1, 0]}, id="score-without-a-finished-frame"),
        pytest.param({"frame_number": 2}, id="frame-number-ahead-of-score"),
        pytest.param({"score": [2, 0], "frame_number": 3}, id="score-past-the-race"),
    ],
)
def test_impossible_match_state_is_refused(patch: dict) -> None:
    data = {**Match(race_to=2).to_dict(), **patch}
    with pytest.raises(InvalidResult) as caught:
        Match.from_dict(data)
    assert caught.value.code == "bad_state"
