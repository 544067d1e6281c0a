"""The call announced before the shot (7.1, D1): FrameRules.announce, then shot judged by it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from clock_service.core.rules import (
    Call,
    CallTiming,
    EndReason,
    FrameRules,
    InvalidResult,
    Route,
    RuleRefusal,
    ShotResult,
)
from tests.rules.test_frame import BANK, BANK_ROUTE, frame

OTHER = Call("top_right", ["right_bottom"], ["cue>colour"])  # the wrong pocket (7.3)


def potted(route: Route = BANK_ROUTE, **kw: Any) -> ShotResult:
    return ShotResult(colour_potted=True, route=route, **kw)


# Each case: the frame, what happens before the result (a function of the frame), the
# result, then (call judged, its timing, verdict rule or None, foul rule or None, winner).
JUDGED_CASES = [
    pytest.param(
        frame(credited=(3, 0)), lambda f: f.announce(BANK), potted(),
        (BANK, CallTiming.ANNOUNCED, None, None, 0),
        id="7.1-D1-announced-call-judges-the-route-legal-pot",
    ),
    pytest.param(
        frame(credited=(3, 0)), lambda f: None, potted(call=BANK),
        (BANK, CallTiming.AFTER_SHOT, None, None, 0),
        id="D1-call-inside-result-is-recorded-after-the-shot",
    ),
    pytest.param(
        frame(credited=(3, 0)), lambda f: f.announce(BANK), potted(call=BANK),
        (BANK, CallTiming.ANNOUNCED, None, None, 0),
        id="D1-same-call-in-result-and-announced-is-the-announced-one",
    ),
    pytest.param(
        frame(credited=(3, 0)), lambda f: (f.announce(OTHER), f.announce(BANK)), potted(),
        (BANK, CallTiming.ANNOUNCED, None, None, 0),
        id="7.1-D1-the-last-call-before-the-shot-counts",
    ),
    pytest.param(
        frame(credited=(3, 0)), lambda f: f.announce(OTHER), potted(),
        (OTHER, CallTiming.ANNOUNCED, "7.3", "7.3", None),
        id="7.3-announced-call-not-fulfilled-is-a-foul",
    ),
    pytest.param(
        frame(credited=(3, 0)), lambda f: None, potted(),
        (None, None, None, "9", None),
        id="6.3-9-no-call-at-all-is-a-foul",
    ),
    pytest.param(
        frame(credited=(1, 0)), lambda f: f.announce(BANK),
        ShotResult(whites_potted=1, route=Route(None, ["cue>colour", "top"])),
        (BANK, CallTiming.ANNOUNCED, "7.4", "7.4", None),
        id="7.4-announced-call-unannounced-cushion-white-potted-foul",
    ),
    pytest.param(
        frame(credited=(1, 0)), lambda f: f.announce(BANK), ShotResult(whites_potted=1),
        (BANK, CallTiming.ANNOUNCED, None, None, None),
        id="5.1-announced-call-no-route-white-credited-no-verdict",
    ),
    pytest.param(
        frame(credited=(3, 0), at_table=0),
        lambda f: (f.announce(BANK), f.record_foul(1, "9", "touched a ball from the chair"),
                   f.accept()),
        potted(),
        (BANK, CallTiming.ANNOUNCED, None, None, 0),
        id="I12-D1-a-foul-of-the-seated-player-keeps-the-shooters-call",
    ),
]


@pytest.mark.parametrize(("start", "before", "result", "expect"), JUDGED_CASES)
def test_shot_is_judged_against_the_announced_call(
    start: FrameRules, before: Callable[[FrameRules], Any], result: ShotResult,
    expect: tuple[Call | None, CallTiming | None, str | None, str | None, int | None],
) -> None:
    call, timing, verdict_rule, foul_rule, winner = expect
    before(start)
    outcome = start.shot(result)
    assert (outcome.call, outcome.call_timing) == (call, timing)
    if verdict_rule is None and outcome.call_verdict is not None:
        assert outcome.call_verdict.fulfilled
    else:
        assert outcome.call_verdict is None or outcome.call_verdict.rule == verdict_rule
    assert [f.rule for f in outcome.fouls] == ([] if foul_rule is None else [foul_rule])
    assert outcome.winner == winner
    if winner is not None:
        assert outcome.end_reason is EndReason.LEGAL_COLOUR_POT
    assert start.announced_call is None  # a shot uses the call up
    json.dumps(outcome.to_dict())
    data = outcome.to_dict()
    assert data["call_timing"] == (None if timing is None else timing.value)


# Each case: the frame, what happens after the announcement; then whether the call stays.
DROPPED_CASES = [
    pytest.param(lambda f: f.shot(ShotResult(whites_potted=1)), True,
                 id="I1-not-dropped-by-a-white-credited-before-the-next-shot"),
    pytest.param(lambda f: f.pass_turn(), False, id="I1-dropped-when-the-turn-passes"),
    pytest.param(lambda f: f.record_foul(0, "12.4", "shot time exceeded"), False,
                 id="12.4-dropped-by-the-callers-time-foul"),
    pytest.param(lambda f: f.record_foul(1, "9", "touched a ball"), True,
                 id="I12-kept-after-a-foul-of-the-seated-player"),
    pytest.param(lambda f: f.end_by_referee(None, "abandoned"), False, id="dropped-when-the-frame-ends"),
]


@pytest.mark.parametrize(("after", "kept"), DROPPED_CASES)
def test_the_call_belongs_to_the_player_at_the_table(
    after: Callable[[FrameRules], Any], kept: bool,
) -> None:
    start = frame(credited=(1, 0))
    start.announce(BANK)
    after(start)
    if kept and start.announced_call is None:
        # A shot uses the call up; the point of that case is the next announcement.
        start.announce(BANK)
    assert (start.announced_call == BANK) is kept


def test_announce_returns_the_call_it_replaces() -> None:
    start = frame()
    assert start.announce(OTHER) is None
    assert start.announce(BANK) == OTHER
    assert start.announced_call == BANK


def test_hand_back_drops_the_choosers_call() -> None:
    start = frame()
    start.record_foul(0, "12.4", "shot time exceeded")  # player 1 chooses, at the table
    start.announce(BANK)  # the chooser may announce before playing on
    start.hand_back()
    assert start.player_at_table == 0 and start.announced_call is None


def _nothing(f: FrameRules) -> None:
    return None


# Each case: the frame, the steps before, the refused step, the error and its code.
REFUSED_CASES = [
    pytest.param(frame(break_done=False), _nothing, lambda f: f.announce(BANK),
                 RuleRefusal, "call_on_break", id="4.4-D2-no-call-on-the-break"),
    pytest.param(frame(break_done=False), lambda f: f.record_foul(0, "12.4", "late"),
                 lambda f: f.announce(BANK),
                 RuleRefusal, "call_on_break", id="4.4-D2-no-call-after-a-time-foul-on-the-break"),
    pytest.param(frame(credited=(3, 0)), lambda f: (f.announce(BANK), f.shot(potted())),
                 lambda f: f.announce(BANK),
                 RuleRefusal, "frame_over", id="3.2-no-call-after-the-frame-ended"),
    pytest.param(frame(credited=(3, 0)), lambda f: f.announce(BANK),
                 lambda f: f.shot(potted(call=OTHER)),
                 RuleRefusal, "call_differs_from_announced",
                 id="7.1-D1-result-may-not-change-the-announced-call"),
    pytest.param(frame(credited=(3, 0)), lambda f: f.announce(BANK),
                 lambda f: f.shot(ShotResult(colour_potted=True)),
                 InvalidResult, "missing_route", id="7.3-announced-call-pot-needs-the-route"),
    pytest.param(frame(), _nothing, lambda f: f.announce("bottom_left"),
                 InvalidResult, "bad_call", id="call-must-be-a-call"),
]


@pytest.mark.parametrize(("start", "before", "act", "error", "code"), REFUSED_CASES)
def test_refused_calls_change_nothing(start: FrameRules, before: Callable[[FrameRules], Any],
                                      act: Callable[[FrameRules], Any],
                                      error: type[Exception], code: str) -> None:
    before(start)
    state = start.to_dict()
    with pytest.raises(error) as caught:
        act(start)
    assert getattr(caught.value, "code", None) == code
    assert start.to_dict() == state


def test_a_refused_result_keeps_the_announced_call() -> None:
    start = frame(credited=(3, 0))
    start.announce(BANK)
    before = start.to_dict()
    with pytest.raises(RuleRefusal) as caught:
        start.shot(potted(call=OTHER))
    assert caught.value.rule == "7.1" and "leave the call out" in str(caught.value)
    assert start.to_dict() == before and start.announced_call == BANK


def test_the_announced_call_round_trips_and_old_states_load() -> None:
    start = frame()
    start.announce(BANK)
    data = json.loads(json.dumps(start.to_dict()))
    assert data["announced_call"] == BANK.to_dict()
    assert FrameRules.from_dict(data) == start
    del data["announced_call"]  # a state stored before the call command
    assert FrameRules.from_dict(data).announced_call is None


@pytest.mark.parametrize("patch", [
    pytest.param({"break_done": False}, id="4.4-call-before-the-break"),
    pytest.param({"winner": 0, "end_reason": "referee"}, id="call-in-a-frame-over"),
    pytest.param({"announced_call": {"pocket": "nowhere"}}, id="unknown-pocket"),
    pytest.param({"announced_call": "bottom_left"}, id="not-an-object"),
])
def test_impossible_announced_call_state_is_refused(patch: dict[str, Any]) -> None:
    data = {**frame().to_dict(), "announced_call": BANK.to_dict(), **patch}
    with pytest.raises(InvalidResult) as caught:
        FrameRules.from_dict(data)
    assert caught.value.code == "bad_state"
