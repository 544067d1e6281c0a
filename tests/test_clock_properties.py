"""Random referees against the clock core: whatever is pressed, in any order, at any time,
the invariants of SPEC "Timing semantics" hold. Hypothesis shrinks any failure to the
shortest sequence of presses that breaks one."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clock_service.core.clock import PHASES, TableClock
from clock_service.core.commands import (
    Extension,
    Foul,
    HandBack,
    NewFrame,
    Pause,
    Resume,
    SetTime,
    Shot,
    Start,
    Turn,
    Undo,
    parse_command,
)
from clock_service.core.errors import InvalidCommand, RuleRefusal
from clock_service.core.profile import Profile

# 300 in `make test`; PROPERTY_EXAMPLES=20000 for a longer hunt.
EXAMPLES = int(os.environ.get("PROPERTY_EXAMPLES", "300"))
PROFILE = Profile(shot_ms=3000, full_rounds=1, step_ms=500, floor_ms=2000, extension_ms=1500,
                  warnings_ms=(2000, 1000))

def result_command(whites: int, legal_break: bool | None) -> Any:
    # legal_break is required on the break and refused after it (4.2, D11).
    body = {"command": "result", "whites_potted": whites}
    return parse_command(body if legal_break is None else {**body, "legal_break": legal_break})


commands = st.one_of(
    st.just(Start()), st.just(Shot()), st.just(Extension()), st.just(Pause()),
    st.just(Resume()), st.just(Turn()), st.just(HandBack()), st.just(Undo()),
    st.builds(Foul, reason=st.just("touched a ball"), player=st.sampled_from([None, 0, 1])),
    st.builds(NewFrame, winner=st.sampled_from([None, 0, 1]),
              reason=st.sampled_from([None, "abandoned"])),  # needed mid-frame (D9)
    st.builds(SetTime, remaining_ms=st.integers(1, 5000)),
    st.builds(result_command, st.integers(0, 4),  # what the shot did (sections 3-11)
              st.sampled_from([None, True, False])),
)
# (ms to wait, then a press): up to 40 presses over up to 100 s of play.
steps = st.lists(st.tuples(st.integers(0, 2500), commands), min_size=1, max_size=40)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=steps, timer=st.booleans())
def test_invariants_hold_for_any_sequence_of_presses(steps: list[Any], timer: bool) -> None:
    clock = TableClock(["A", "B"], timer=timer, profile=PROFILE)
    now = 1_000_000.0
    clock.open(now)
    frame = clock.frame
    for wait, command in steps:
        # Time passes; the runtime wakes the clock at each of its deadlines on the way.
        target = now + wait
        while (wake := clock.next_wakeup()) is not None and wake <= target:
            assert wake >= now - 1e-6, "a deadline in the past was never fired"
            deadline = clock.deadline
            events = clock.advance(wake)
            for event in events:
                if event.type == "clock.expired":  # never before the deadline (12.4)
                    assert deadline is not None and wake >= deadline
                    assert event.data["late_ms"] == 0
            now = wake
        now = target
        before = clock.to_dict()
        allowed = clock.state(now)["allowed"]
        try:
            clock.handle(command, now)
        except RuleRefusal as refusal:
            # `allowed` (convention 3) never lists a command the rules then refuse.
            assert command.name not in allowed, (command.name, allowed, str(refusal))
            if not refusal.events:
                assert clock.to_dict() == before
        except InvalidCommand:
            # Legal now, but the fields are wrong (a report that cannot happen): nothing changes.
            assert command.name in allowed, (command.name, allowed)
            assert clock.to_dict() == before
        else:
            assert command.name in allowed, (command.name, allowed)
        state = clock.state(now)
        assert state["phase"] in PHASES
        assert state["round"] == (state["visit"] + 1) // 2
        assert all(0 <= left <= PROFILE.extensions_per_frame for left in state["extensions_left"])
        assert all(0 <= fouls <= 2 for fouls in state["fouls"])
        assert all(0 <= whites <= 3 for whites in state["whites"])
        if not timer:
            assert state["remaining_ms"] is None and clock.next_wakeup() is None
        elif state["phase"] != "frame_over":
            assert state["remaining_ms"] is not None and state["remaining_ms"] >= 0
            # Never more than the shot's limit plus what extensions and corrections added.
            assert state["remaining_ms"] <= max(5000, state["limit_ms"]) + 2 * 1500
        if state["phase"] == "running" and timer:
            assert state["deadline"] is not None and state["deadline"] > now - 1e-6
        else:
            assert state["deadline"] is None
        # A new frame starts clean (10.5, 12.5, I3); an undo may take the frame back.
        if state["frame"] > frame and state["phase"] == "ready" and state["visit"] == 1:
            assert state["fouls"] == [0, 0] and state["extensions_left"] == [1, 1]
        frame = state["frame"]
        # Persisted and restored, the clock is the same clock.
        assert TableClock.from_dict(clock.to_dict()).state(now) == state
