"""Properties of any sequence of referee commands on a frame (5.3, 5.9, 10.5, 3.2)."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from clock_service.core.rules import (
    Call,
    FrameRules,
    Outcome,
    Phase,
    Route,
    RulesError,
    ShotResult,
    Turn,
)

CALLS = [
    None,
    Call("bottom_left", ["right_bottom"], ["cue>colour"]),
    Call("bottom_left", ["right_bottom"], ["cue>colour"], "early_cushion"),
    Call("top_left", [], ["cue>white1", "white1>colour"], "early_combination"),
]
POTTED_ROUTES = [
    Route("bottom_left", ["cue>colour", "right_bottom"]),
    Route("bottom_left", ["cue>colour", "right_bottom", "bottom"], jaw_before_drop=True),
    Route("bottom_right", ["cue>colour", "right_bottom"]),
    Route("top_left", ["cue>white1", "white1>colour"]),
    Route("top_left", ["cue>colour"], unannounced_contact=True),
]
MISSED_ROUTES = [None, Route(None, ["cue>colour"]), Route(None, ["cue>colour", "top", "bottom"])]


@st.composite
def shot_results(draw: st.DrawFn, frame: FrameRules) -> ShotResult:
    colour = draw(st.booleans())
    on_break = frame.phase is Phase.BREAK
    call = None if on_break else draw(st.sampled_from(CALLS))
    if on_break:
        route = None
    elif colour:
        route = draw(st.sampled_from(POTTED_ROUTES))
    else:
        route = draw(st.sampled_from(MISSED_ROUTES))
    return ShotResult(
        whites_potted=draw(st.integers(0, frame.whites_on_table)),
        colour_potted=colour,
        call=call,
        route=route,
        legal_break=draw(st.booleans()) if on_break else None,
        referee_foul=draw(st.sampled_from([None, None, None, "push shot"])),
    )


def step(frame: FrameRules, data: st.DataObject) -> Outcome:
    command = data.draw(st.sampled_from(["shot", "shot", "shot", "foul", "accept", "hand_back"]))
    if command == "shot":
        return frame.shot(data.draw(shot_results(frame)))
    if command == "foul":
        return frame.record_foul(data.draw(st.integers(0, 1)), "12.4", "shot time exceeded")
    return frame.accept() if command == "accept" else frame.hand_back()


@settings(max_examples=int(os.environ.get("PROPERTY_EXAMPLES", "300")), deadline=None)
@given(st.integers(0, 1), st.data())
def test_any_command_sequence_keeps_the_frame_invariants(breaker: int, data: st.DataObject) -> None:
    frame = FrameRules(breaker=breaker)
    ends = 0
    for _ in range(40):
        before = frame.to_dict()
        credited, fouls = frame.credited, frame.fouls
        try:
            outcome = step(frame, data)
        except RulesError:
            assert frame.to_dict() == before  # a refusal changes nothing
            continue
        # 5.3, 5.9: credits stay within 0..3 and never go down.
        assert all(0 <= c <= 3 for c in frame.credited)
        assert all(now >= was for now, was in zip(frame.credited, credited, strict=True))
        assert sum(frame.credited) - sum(credited) == outcome.whites_credited
        assert frame.whites_on_table >= 1
        # I12: every reported foul is counted, never more than two per player (10.5).
        assert sum(frame.fouls) - sum(fouls) == len(outcome.fouls) <= 1
        assert all(0 <= f <= 2 for f in frame.fouls)
        # I1: credited whites and a foul never come together; credit keeps the turn.
        if outcome.whites_credited:
            assert not outcome.fouls and outcome.turn is Turn.STAYS
        if outcome.fouls and not outcome.frame_over:
            assert outcome.choice_for == 1 - outcome.fouls[0].player  # 10.4
        ends += outcome.frame_over
        assert ends <= 1  # 3.2, 10.5: a frame ends once
        assert FrameRules.from_dict(frame.to_dict()) == frame
    if frame.over:
        assert ends == 1 and frame.phase is Phase.OVER
