"""Shot clock on request (slow play): a match without the shot clock (12.1) in which the
referee switches it on (``shot_clock_on``, with a reason) for the rest of the frame or of
the match, at the profile's ``slow_play_ms``. Synchronous core, time given by the test."""

from __future__ import annotations

import json

import pytest

from clock_service.core.clock import TableClock
from clock_service.core.commands import (
    Extension,
    Foul,
    HandBack,
    NewFrame,
    NewMatch,
    Pause,
    Shot,
    ShotClockOn,
    Start,
    Turn,
    Undo,
    parse_command,
)
from clock_service.core.errors import InvalidCommand, RuleRefusal
from clock_service.core.profile import Profile

T0 = 1_000_000.0
SLOW = 60_000


def untimed(**kwargs: object) -> TableClock:
    clock = TableClock(["Ivanov", "Petrov"], timer=False, **kwargs)  # type: ignore[arg-type]
    clock.open(T0)
    return clock


def types(events: list) -> list[str]:
    return [e.type for e in events]


def test_switched_on_mid_frame_while_a_shot_is_played_then_a_time_foul() -> None:
    clock = untimed()
    clock.handle(Start(), T0)
    clock.handle(Shot(), T0 + 90_000)  # no clock: 90 s is no foul (12.1)
    clock.handle(Turn(), T0 + 91_000)
    clock.handle(Start(), T0 + 92_000)
    assert clock.state(T0 + 150_000)["remaining_ms"] is None and clock.next_wakeup() is None
    events = clock.handle(ShotClockOn(reason="play is clearly stalled"), T0 + 150_000)
    assert types(events) == ["shot_clock.on"]
    on = events[0].data
    assert (on["reason"], on["scope"], on["limit_ms"], on["player"]) == (
        "play is clearly stalled", "match", SLOW, 1)
    assert on["deadline"] == T0 + 150_000 + SLOW  # the full limit counts from the switch
    state = clock.state(T0 + 160_000)
    assert (state["timer"], state["remaining_ms"], state["limit_ms"]) == (True, 50_000, SLOW)
    assert state["slow_play"] == {"scope": "match", "reason": "play is clearly stalled",
                                  "limit_ms": SLOW}
    assert clock.next_wakeup() == T0 + 150_000 + SLOW - 10_000  # the first warning
    warned = clock.advance(T0 + 200_000)
    assert types(warned) == ["clock.warning"]
    expired = clock.advance(T0 + 210_000)
    assert types(expired)[:2] == ["clock.expired", "foul"]
    assert expired[1].data["rule"] == "12.4" and clock.fouls == [0, 1]


@pytest.mark.parametrize(("phase_steps", "remaining"), [
    ([], SLOW),                      # ready: the next shot's limit is shown
    ([Start(), Pause()], SLOW),      # paused: the shot gets the full limit, frozen
])
def test_switched_on_when_ready_or_paused(phase_steps: list, remaining: int) -> None:
    clock = untimed()
    for step in phase_steps:
        clock.handle(step, T0)
    clock.handle(ShotClockOn(reason="stalled"), T0 + 5000)
    assert clock.remaining_ms(T0 + 9000) == remaining
    assert clock.next_wakeup() is None  # not counting until start / resume


@pytest.mark.parametrize(("scope", "after_frame"), [("frame", False), ("match", True)])
def test_scope_frame_ends_with_the_frame_scope_match_lasts(scope: str,
                                                           after_frame: bool) -> None:
    clock = untimed(race_to=3)
    clock.handle(ShotClockOn(reason="stalled", scope=scope), T0)
    for _ in range(5):  # every visit the same flat limit, no reduction by round
        assert clock.state(T0)["limit_ms"] == SLOW
        clock.handle(Turn(), T0)
    events = clock.handle(NewFrame(winner=0, reason="conceded"), T0)
    assert ("shot_clock.off" in types(events)) is not after_frame
    state = clock.state(T0)
    assert (state["timer"], state["limit_ms"]) == (
        (True, SLOW) if after_frame else (False, None))
    assert clock.next_wakeup() is None


def test_switched_on_for_the_match_between_frames() -> None:
    clock = untimed(race_to=3)
    for step in (Foul(reason="x"), HandBack(), Foul(reason="x")):  # technical loss (10.5)
        clock.handle(step, T0)
    assert clock.phase == "frame_over"
    with pytest.raises(RuleRefusal, match="the frame is over"):
        clock.handle(ShotClockOn(reason="stalled", scope="frame"), T0)
    clock.handle(ShotClockOn(reason="stalled", scope="match"), T0)
    assert clock.slow_play == "match"


def test_the_profile_sets_the_slow_play_limit_and_extensions_apply() -> None:
    clock = untimed(profile=Profile(slow_play_ms=45_000, extension_ms=15_000))
    clock.handle(ShotClockOn(reason="stalled"), T0)
    clock.handle(Start(), T0)
    clock.handle(Extension(), T0 + 1000)  # 12.5 once per frame, under slow play too
    assert clock.remaining_ms(T0 + 1000) == 45_000 + 15_000 - 1000
    with pytest.raises(RuleRefusal) as info:
        clock.handle(Extension(), T0 + 2000)
    assert info.value.code == "extension_used"


@pytest.mark.parametrize(("setup", "command", "code", "rule"), [
    ("timed match", ShotClockOn(reason="x"), "already_timed", "12.1"),
    ("on for the match", ShotClockOn(reason="x"), "shot_clock_already_on", None),
    ("on for the frame", ShotClockOn(reason="x", scope="frame"), "shot_clock_already_on", None),
])
def test_refusals_say_why_and_change_nothing(setup: str, command: ShotClockOn, code: str,
                                            rule: str | None) -> None:
    if setup == "timed match":
        clock = TableClock(["A", "B"])
        clock.open(T0)
    else:
        clock = untimed()
        clock.handle(ShotClockOn(reason="first", scope=setup.rsplit(" ", 1)[1]), T0)
    before = clock.to_dict()
    with pytest.raises(RuleRefusal) as info:
        clock.handle(command, T0 + 1)
    assert (info.value.code, info.value.rule) == (code, rule)
    assert str(info.value).startswith("shot_clock_on refused in phase ready")
    assert clock.to_dict() == before


def test_frame_scope_upgraded_to_the_match_keeps_the_shots_time() -> None:
    clock = untimed()
    clock.handle(ShotClockOn(reason="stalled", scope="frame"), T0)
    clock.handle(Start(), T0)
    clock.handle(ShotClockOn(reason="still stalled", scope="match"), T0 + 20_000)
    assert clock.remaining_ms(T0 + 20_000) == 40_000 and clock.slow_play == "match"


@pytest.mark.parametrize(("payload", "code"), [
    ({"command": "shot_clock_on"}, "missing_field"),
    ({"command": "shot_clock_on", "reason": " "}, "invalid_field"),
    ({"command": "shot_clock_on", "reason": "x", "scope": "set"}, "invalid_field"),
])
def test_malformed_shot_clock_on(payload: dict, code: str) -> None:
    with pytest.raises(InvalidCommand) as info:
        parse_command(payload)
    assert info.value.code == code


def test_undo_takes_it_back_and_a_restart_keeps_it() -> None:
    clock = untimed()
    clock.handle(ShotClockOn(reason="stalled", scope="frame"), T0)
    again = TableClock.from_dict(json.loads(json.dumps(clock.to_dict())))
    assert again.state(T0) == clock.state(T0)
    clock.handle(Undo(), T0)
    assert (clock.slow_play, clock.state(T0)["timer"], clock.state(T0)["slow_play"]) == (
        None, False, None)


def test_a_new_match_starts_without_it() -> None:
    clock = untimed()
    clock.handle(ShotClockOn(reason="stalled"), T0)
    clock.handle(NewMatch(reason="next"), T0)
    assert (clock.slow_play, clock.state(T0)["timer"]) == (None, False)
