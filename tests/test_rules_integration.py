"""The rules (sections 3-11) inside the clock: the ``result`` command, one foul count (I12),
the 10.4 choice, frames and the match, undo and persistence of the rules' state.

Through the clock core with the time given by the test (as tests/test_clock_core.py), plus
one end-to-end match over HTTP against the real server.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from clock_service.core.clock import TableClock
from clock_service.core.commands import (
    Foul,
    HandBack,
    NewFrame,
    Result,
    Shot,
    Start,
    Turn,
    Undo,
    parse_command,
)
from clock_service.core.errors import InvalidCommand, RuleRefusal
from clock_service.core.events import EVENT_TYPES, Event
from harness.server import Service
from tests.waiting import until

T0 = 1_000_000.0

# A legal, called pot of the coloured ball off one cushion (7.3): used with 3 whites (6.1).
CALL = {"pocket": "bottom_left", "cushions": ["right_bottom"], "contacts": ["cue>colour"]}
ROUTE = {"pocket": "bottom_left", "path": ["cue>colour", "right_bottom"]}


def new_clock(**kwargs: Any) -> TableClock:
    clock = TableClock(["Ivanov", "Petrov"], **kwargs)
    clock.open(T0)
    return clock


def types(events: list[Event]) -> list[str]:
    return [e.type for e in events]


def in_sync(clock: TableClock) -> None:
    """The clock and the rules agree on who is at the table."""
    if clock.phase != "frame_over":
        assert clock.player == clock.match.frame.player_at_table


def play(clock: TableClock, at: float = T0, **report: Any) -> list[Event]:
    """One shot: start, shot in time, then the referee's report of it."""
    clock.handle(Start(), at)
    clock.handle(Shot(), at + 1000)
    events = clock.handle(Result(**report), at + 2000)
    in_sync(clock)
    return events


def by_type(events: list[Event], kind: str) -> list[Event]:
    return [e for e in events if e.type == kind]


def three_whites_for_player_0(clock: TableClock) -> None:
    play(clock, whites_potted=2, legal_break=True)
    play(clock, whites_potted=1)
    assert clock.whites == [3, 0] and clock.player == 0


# -- the break (4.x) ---------------------------------------------------------------------------
def test_break_with_whites_keeps_the_turn_in_the_same_visit_4_6() -> None:
    clock = new_clock()
    events = play(clock, whites_potted=2, legal_break=True)
    assert types(events) == ["shot.result"]
    data = events[0].data
    assert data["outcome"]["whites_credited"] == 2 and data["outcome"]["turn"] == "stays"
    assert data["whites"] == [2, 0] and data["report"]["whites_potted"] == 2
    state = clock.state(T0 + 3000)
    assert (state["phase"], state["player"], state["visit"], state["limit_ms"],
            state["remaining_ms"], state["whites"], state["on_break"]) == (
        "ready", 0, 1, 35000, 35000, [2, 0], False)


def test_break_without_whites_passes_the_turn_4_7() -> None:
    clock = new_clock()
    events = play(clock, whites_potted=0, legal_break=True)
    assert types(events) == ["shot.result", "turn"]
    assert events[1].data["reason"] == "result" and events[1].data["player"] == 1
    assert (clock.player, clock.visit, clock.fouls, clock.hand_back_to) == (1, 2, [0, 0], None)


def test_a_result_on_the_break_without_legal_break_is_422_naming_the_field_D11() -> None:
    clock = new_clock()
    clock.handle(Start(), T0)
    clock.handle(Shot(), T0 + 1000)
    before = clock.to_dict()
    with pytest.raises(InvalidCommand) as info:
        clock.handle(Result(whites_potted=1), T0 + 2000)
    assert info.value.code == "missing_legal_break"
    assert "legal_break is missing" in str(info.value) and "(4.2)" in str(info.value)
    assert clock.to_dict() == before  # nothing is assumed: the break is still to be reported
    events = clock.handle(Result(whites_potted=1, legal_break=True), T0 + 3000)
    assert events[0].data["report"]["legal_break"] is True


def test_illegal_break_is_a_foul_4_3() -> None:
    clock = new_clock()
    events = play(clock, whites_potted=1, legal_break=False)
    assert types(events) == ["shot.result", "foul", "respot", "turn"]
    assert events[1].data == {
        "player": 0, "reason": "illegal break: the conditions of 4.2 were not met",
        "rule": "4.3", "code": "illegal_break", "fouls": [1, 0], "technical_loss": False,
        "breaches": [{"code": "illegal_break", "rule": "4.3", "balls": [], "touched_with": None,
                      "text": None, "reason": "illegal break: the conditions of 4.2 were not met"}]}
    assert events[3].data["reason"] == "foul"
    assert (clock.whites, clock.player, clock.hand_back_to) == ([0, 0], 1, 0)


def test_colour_on_the_break_is_respotted_not_a_foul_4_4_4_5() -> None:
    clock = new_clock()
    events = play(clock, whites_potted=1, colour_potted=True, legal_break=True)
    assert types(events) == ["shot.result", "respot"]
    respot = events[1].data
    assert respot["respots"][0]["ball"] == "colour" and respot["respots"][0]["cause"] == "4.5"
    assert respot["respots"][0]["spot"] == "back_spot" and "11.4" in respot["instructions"][0]
    # I14: the clock waits for the referee's start; the breaker keeps the turn (4.6).
    assert (clock.phase, clock.player, clock.visit, clock.fouls, clock.whites) == (
        "ready", 0, 1, [0, 0], [1, 0])
    assert clock.next_wakeup() is None


# -- whites and the coloured ball (5.x, 9, 3.2) -----------------------------------------------
def test_over_the_limit_is_a_foul_and_the_whites_go_back_5_6_5_7() -> None:
    clock = new_clock()
    play(clock, whites_potted=2, legal_break=True)
    events = play(clock, whites_potted=2)
    assert types(events) == ["shot.result", "foul", "respot", "turn"]
    assert events[1].data["rule"] == "5.6"
    assert events[2].data["respots"][0] | {"instruction": ""} == {
        "ball": "white", "count": 2, "spot": "back_cushion_middle", "rule": "11.2",
        "cause": "5.7", "instruction": ""}
    # 5.8: earlier credits stay; the opponent is at the table and chooses (10.4).
    assert (clock.whites, clock.fouls, clock.player, clock.visit, clock.hand_back_to) == (
        [2, 0], [1, 0], 1, 2, 0)


def test_white_and_colour_together_is_a_foul_9() -> None:
    clock = new_clock()
    play(clock, whites_potted=1, legal_break=True)
    events = play(clock, whites_potted=1, colour_potted=True, call=CALL, route=ROUTE)
    assert types(events) == ["shot.result", "foul", "respot", "turn"]
    assert events[1].data["rule"] == "9"
    balls = [r["ball"] for r in events[2].data["respots"]]
    assert balls == ["white", "colour"]
    assert clock.whites == [1, 0] and clock.fouls == [1, 0]


def test_legal_colour_after_three_whites_ends_the_frame_3_2() -> None:
    clock = new_clock()
    three_whites_for_player_0(clock)
    events = play(clock, colour_potted=True, call=CALL, route=ROUTE)
    assert types(events) == ["shot.result", "frame.ended"]
    assert events[1].data == {"frame": 1, "winner": 0, "reason": "legal_colour_pot",
                              "frames_won": [1, 0], "rule": "3.2", "outside_rules": False,
                              "referee_reason": None, "fouls": [0, 0]}
    state = clock.state(T0)
    assert (state["phase"], state["frame_winner"], state["frame_end_reason"]) == (
        "frame_over", 0, "legal_colour_pot")
    assert state["match"] == {"number": 1, "race_to": None, "score": [1, 0],
                              "frames_won": [1, 0], "winner": None, "over": False,
                              "undecided": 0, "match_limit_ms": None,
                              "at_match_limit": "leader_wins", "by_time_limit": False,
                              "drawn": False}
    # An open-ended match goes on: the next frame, broken by the other player (I3).
    events = clock.handle(NewFrame(), T0 + 5000)
    assert types(events) == ["frame.started"] and events[0].data["breaker"] == 1
    assert (clock.whites, clock.fouls, clock.frames_won, clock.player) == (
        [0, 0], [0, 0], [1, 0], 1)


def test_the_last_frame_ends_the_match_then_only_undo_is_allowed() -> None:
    clock = new_clock(race_to=2)
    three_whites_for_player_0(clock)
    events = play(clock, colour_potted=True, call=CALL, route=ROUTE)
    assert types(events) == ["shot.result", "frame.ended"]  # 1-0 of a race to 2
    clock.handle(NewFrame(), T0 + 5000)
    assert (clock.frame, clock.breaker, clock.player) == (2, 1, 1)
    play(clock, whites_potted=0, legal_break=True)  # Petrov's break: the turn passes (4.7)
    play(clock, whites_potted=3)
    events = play(clock, colour_potted=True, call=CALL, route=ROUTE)
    assert types(events) == ["shot.result", "frame.ended", "match.ended"]
    assert events[2].data == {"winner": 0, "score": [2, 0], "frames_won": [2, 0],
                              "race_to": 2, "frames": 2, "by_time_limit": False,
                              "drawn": False}
    for command in (NewFrame(), Start(), Turn(), Foul(reason="x")):
        with pytest.raises(RuleRefusal) as info:
            clock.handle(command, T0 + 9000)
        assert info.value.code == "match_over"
        assert "Ivanov won 2-0" in str(info.value) and "race to 2" in str(info.value)
    events = clock.handle(Undo(reason="the colour touched a white"), T0 + 9000)
    assert events[0].data["undone"] == "result"
    assert (clock.phase, clock.frames_won, clock.match.over, clock.whites) == (
        "ready", [1, 0], False, [3, 0])


def test_referee_award_can_end_the_match() -> None:
    clock = new_clock(race_to=1)
    events = clock.handle(NewFrame(winner=1, reason="Ivanov withdrew"), T0)
    assert types(events) == ["frame.ended", "match.ended"]
    assert events[0].data["reason"] == "referee" and events[1].data["winner"] == 1


# -- one foul count (I12), the 10.4 choice ---------------------------------------------------
def test_time_foul_and_referee_foul_share_one_count_technical_loss_I12() -> None:
    clock = new_clock()
    clock.handle(Start(), T0)
    events = clock.advance(T0 + 35000)  # time foul of Ivanov (12.4)
    assert types(events) == ["clock.expired", "foul", "turn"]
    assert clock.match.frame.fouls == (1, 0) and clock.state(T0)["fouls"] == [1, 0]
    clock.handle(HandBack(), T0 + 36000)  # Petrov hands it back (10.4)
    in_sync(clock)
    events = clock.handle(Foul(reason="pushed the cue ball"), T0 + 37000)
    assert types(events) == ["foul", "frame.ended"]
    assert events[0].data["technical_loss"] is True and events[0].data["fouls"] == [2, 0]
    assert events[1].data == {"frame": 1, "winner": 1, "reason": "technical_loss",
                              "frames_won": [0, 1], "rule": "10.5-10.6", "outside_rules": False,
                              "referee_reason": None, "fouls": [2, 0]}


def test_result_foul_then_time_foul_is_a_technical_loss_I12() -> None:
    clock = new_clock()
    play(clock, whites_potted=3, legal_break=True)
    play(clock, whites_potted=1)  # 5.6: the first foul of Ivanov, Petrov chooses
    clock.handle(HandBack(), T0)
    clock.handle(Start(), T0)
    events = clock.advance(T0 + 35000)
    assert types(events) == ["clock.expired", "foul", "frame.ended"]
    assert clock.frame_end_reason == "technical_loss" and clock.frames_won == [0, 1]


def test_foul_then_hand_back_through_the_clock_follows_the_rules_10_4() -> None:
    clock = new_clock()
    play(clock, whites_potted=1, legal_break=True)
    play(clock, whites_potted=3)  # over the limit: Petrov at the table, choosing
    assert (clock.player, clock.match.frame.choice_for, clock.hand_back_to) == (1, 1, 0)
    events = clock.handle(HandBack(), T0 + 5000)
    assert types(events) == ["turn"] and events[0].data["reason"] == "hand_back"
    in_sync(clock)
    assert (clock.player, clock.visit, clock.match.frame.choice_for) == (0, 3, None)
    events = play(clock, whites_potted=2)  # Ivanov plays on: 1 + 2 credited
    assert clock.whites == [3, 0] and types(events) == ["shot.result"]


def test_start_accepts_the_position_in_the_rules_too_10_4() -> None:
    clock = new_clock()
    clock.handle(Foul(reason="touched a ball"), T0)
    assert clock.match.frame.choice_for == 1
    clock.handle(Start(), T0)  # Petrov plays on: accepts
    assert clock.match.frame.choice_for is None and clock.hand_back_to is None
    with pytest.raises(RuleRefusal) as info:
        clock.handle(HandBack(), T0)
    assert info.value.rule == "10.4"


def test_a_result_while_the_choice_is_open_accepts_it() -> None:
    clock = new_clock(timer=False)
    clock.handle(Foul(reason="touched a ball"), T0)
    events = clock.handle(Result(whites_potted=1, legal_break=True), T0)
    assert types(events) == ["shot.result"] and events[0].data["player"] == 1
    assert clock.whites == [0, 1] and clock.hand_back_to is None


def test_plain_turns_keep_the_rules_in_step() -> None:
    clock = new_clock()
    for _ in range(5):
        clock.handle(Turn(), T0)
        in_sync(clock)
    assert clock.match.frame.break_done and clock.visit == 6 and clock.player == 1
    events = play(clock, whites_potted=1)  # no legal_break after the break
    assert clock.whites == [0, 1] and types(events) == ["shot.result"]
    clock.handle(Foul(reason="x"), T0)
    clock.handle(Turn(), T0)  # the chooser accepted, played, and the turn passed
    in_sync(clock)
    assert clock.player == 1 and clock.hand_back_to is None


# -- the call announced before the shot (7.1, D1) ---------------------------------------------
def three_whites_ready(clock: TableClock) -> None:
    three_whites_for_player_0(clock)
    assert clock.phase == "ready" and not clock.shot_played


@pytest.mark.parametrize("phase", ["ready", "running", "paused"])
def test_call_is_announced_while_the_player_is_at_the_table_7_1(phase: str) -> None:
    clock = new_clock()
    three_whites_ready(clock)
    if phase != "ready":
        clock.handle(Start(), T0 + 10_000)
    if phase == "paused":
        clock.handle(parse_command({"command": "pause"}), T0 + 11_000)
    events = clock.handle(parse_command({"command": "call", **CALL}), T0 + 12_000)
    assert types(events) == ["call.announced"]
    data = events[0].data
    assert data["call"] == {**CALL, "shot_type": "normal"} and data["replaced"] is None
    assert (data["player"], data["phase"], data["frame"], data["visit"]) == (0, phase, 1, 1)
    assert data["remaining_ms"] == (33_000 if phase == "running" else 35_000 if
                                    phase == "ready" else 34_000)
    assert clock.state(T0 + 12_000)["announced_call"] == data["call"]
    if phase != "ready":
        clock.handle(Shot(), T0 + 13_000)
    events = clock.handle(Result(colour_potted=True, route=ROUTE), T0 + 14_000)
    outcome = events[0].data["outcome"]
    assert events[0].data["report"]["call"] is None  # the result says only what happened
    assert (outcome["call"], outcome["call_timing"], outcome["call_verdict"]["fulfilled"]) == (
        data["call"], "announced", True)
    assert types(events) == ["shot.result", "frame.ended"]
    assert clock.state(T0)["announced_call"] is None


def test_a_call_inside_result_is_recorded_after_the_shot() -> None:
    clock = new_clock()
    three_whites_ready(clock)
    events = play(clock, colour_potted=True, call=CALL, route=ROUTE)
    assert events[0].data["outcome"]["call_timing"] == "after_shot"
    assert events[-1].data["reason"] == "legal_colour_pot"


def _expired(clock: TableClock) -> None:
    clock.handle(Start(), T0 + 10_000)
    clock.advance(T0 + 45_000)


def _after_shot(clock: TableClock) -> None:
    clock.handle(Start(), T0 + 10_000)
    clock.handle(Shot(), T0 + 11_000)


@pytest.mark.parametrize(("setup", "code", "rule"), [
    pytest.param(_after_shot, "call_after_shot", "7.1", id="7.1-after-shot"),
    pytest.param(_expired, "call_after_expiry", "10.4", id="12.4-10.4-expired"),
])
def test_call_is_refused_naming_command_phase_and_rule(setup, code: str, rule: str) -> None:
    clock = new_clock()
    three_whites_ready(clock)
    setup(clock)
    before = clock.to_dict()
    with pytest.raises(RuleRefusal) as info:
        clock.handle(parse_command({"command": "call", **CALL}), T0 + 50_000)
    assert (info.value.code, info.value.rule) == (code, rule)
    assert str(info.value).startswith(f"call refused in phase {clock.phase}: ")
    assert clock.to_dict() == before


def test_call_on_the_break_is_refused_4_4() -> None:
    clock = new_clock()
    with pytest.raises(RuleRefusal) as info:
        clock.handle(parse_command({"command": "call", **CALL}), T0)
    assert (info.value.code, info.value.rule) == ("call_on_break", "4.4-4.5")
    assert str(info.value).startswith("call refused in phase ready: ")


def test_call_in_a_frame_over_is_refused() -> None:
    clock = new_clock()
    three_whites_for_player_0(clock)
    play(clock, colour_potted=True, call=CALL, route=ROUTE)
    with pytest.raises(RuleRefusal) as info:
        clock.handle(parse_command({"command": "call", **CALL}), T0)
    assert info.value.code == "frame_over"


def test_undo_takes_back_a_call_and_restores_it_under_a_result() -> None:
    clock = new_clock()
    three_whites_ready(clock)
    clock.handle(parse_command({"command": "call", **CALL}), T0 + 10_000)
    other = {"pocket": "top_left", "cushions": [], "contacts": []}
    events = clock.handle(parse_command({"command": "call", **other}), T0 + 10_500)
    assert events[0].data["replaced"] == {**CALL, "shot_type": "normal"}
    assert clock.state(T0)["can_undo"] == "call"
    clock.handle(Undo(), T0 + 11_000)  # back to the first call
    assert clock.state(T0)["announced_call"] == {**CALL, "shot_type": "normal"}
    clock.handle(Start(), T0 + 12_000)
    clock.handle(Shot(), T0 + 13_000)
    clock.handle(Result(colour_potted=True, route=ROUTE), T0 + 14_000)
    assert clock.phase == "frame_over"
    events = clock.handle(Undo(), T0 + 15_000)  # the result: the call is back, shot played
    assert events[0].data["undone"] == "result"
    assert clock.state(T0)["announced_call"] == {**CALL, "shot_type": "normal"}
    assert clock.shot_played
    copy = TableClock.from_dict(json.loads(json.dumps(clock.to_dict())))
    assert copy.state(T0) == clock.state(T0) and copy.shot_played
    clock.handle(Undo(), T0 + 16_000)  # the shot
    clock.handle(Undo(), T0 + 16_000)  # the start
    clock.handle(Undo(), T0 + 16_000)  # the first call
    assert clock.state(T0)["announced_call"] is None and clock.history[-1][0] == "result"


def test_a_state_stored_before_the_call_command_loads() -> None:
    clock = new_clock()
    data = clock.to_dict()
    del data["shot_played"]
    del data["match"]["frame"]["announced_call"]
    copy = TableClock.from_dict(data)
    assert copy.shot_played is False and copy.state(T0)["announced_call"] is None


# -- structured general fouls (9, D10): the foul command and the result ------------------------
FOUL_COMMANDS = [
    pytest.param({"code": "double_hit"}, 0, "double_hit", [], id="9-double-hit"),
    pytest.param({"code": "push_shot", "reason": "long follow-through"}, 0, "push_shot", [],
                 id="9-push-shot-with-a-note"),
    pytest.param({"code": "no_ball_contact"}, 0, "no_ball_contact", [], id="9-no-ball-contact"),
    pytest.param({"code": "touched_ball", "touched_with": "hand"}, 0, "touched_ball", [],
                 id="9-touched-a-ball-by-hand"),
    pytest.param({"code": "ball_off_table", "balls": ["colour"]}, 0, "ball_off_table",
                 [("colour", "11.1")], id="9-11.1-ball-off-the-table"),
    pytest.param({"code": "out_of_turn"}, 1, "out_of_turn", [],
                 id="9-D10-out-of-turn-defaults-to-the-seated-player"),
    pytest.param({"code": "out_of_turn", "player": 0}, 0, "out_of_turn", [],
                 id="9-out-of-turn-named-player"),
    pytest.param({"reason": "jumped a ball"}, 0, "other", [], id="9-free-text-remains"),
    pytest.param({"reason": "moved a ball", "rule": "9"}, 0, "other", [],
                 id="9-free-text-with-its-rule"),
]


@pytest.mark.parametrize(("fields", "fouler", "code", "respots"), FOUL_COMMANDS)
def test_foul_command_with_a_code(fields: dict[str, Any], fouler: int, code: str,
                                  respots: list[tuple[str, str]]) -> None:
    clock = new_clock()
    play(clock, whites_potted=1, legal_break=True)  # Ivanov at the table
    events = clock.handle(parse_command({"command": "foul", **fields}), T0 + 5000)
    foul = by_type(events, "foul")[0].data
    assert (foul["player"], foul["code"], foul["rule"]) == (fouler, code, "9")
    assert foul["breaches"][0]["code"] == code
    got = [(r["ball"], r["rule"]) for e in by_type(events, "respot") for r in e.data["respots"]]
    assert got == respots
    assert clock.fouls == ([1, 0] if fouler == 0 else [0, 1])
    # 10.4: the fouler's opponent is at the table and chooses.
    assert (clock.player, clock.hand_back_to) == (1 - fouler, fouler)


@pytest.mark.parametrize(("fields", "code"), [
    pytest.param({}, "missing_field", id="neither-code-nor-reason"),
    pytest.param({"code": "double_hit", "rule": "9"}, "rule_with_code", id="rule-with-code"),
    pytest.param({"reason": "x", "rule": "9", "balls": ["white"]}, "detail_without_code",
                 id="detail-without-code"),
    pytest.param({"code": "ball_off_table"}, "missing_balls", id="11-which-balls"),
    pytest.param({"code": "over_limit"}, "not_a_general_foul", id="found-by-the-rules"),
    pytest.param({"code": "sneezed"}, "unknown_foul_code", id="unknown-code"),
    pytest.param({"code": "other"}, "missing_text", id="other-needs-a-reason"),
    pytest.param({"reason": ""}, "invalid_field", id="empty-reason"),
])
def test_malformed_foul_command_names_what_is_wrong(fields: dict[str, Any], code: str) -> None:
    with pytest.raises(InvalidCommand) as info:
        parse_command({"command": "foul", **fields})
    assert info.value.code == code


def test_result_with_a_structured_general_foul() -> None:
    clock = new_clock()
    play(clock, whites_potted=1, legal_break=True)
    events = play(clock, whites_potted=1, referee_foul={"code": "ball_off_table",
                                                        "balls": ["colour", "white"]})
    assert types(events) == ["shot.result", "foul", "respot", "turn"]
    report = events[0].data["report"]
    assert report["referee_foul"] == {"code": "ball_off_table", "balls": ["colour", "white"],
                                      "touched_with": None, "text": None}
    assert events[1].data["code"] == "ball_off_table"
    assert [(r["ball"], r["count"], r["cause"]) for r in events[2].data["respots"]] == [
        ("white", 1, "10.3"), ("white", 1, "9"), ("colour", 1, "9")]
    with pytest.raises(InvalidCommand) as info:
        parse_command({"command": "result", "referee_foul": {"code": "out_of_turn"}})
    assert info.value.code == "out_of_turn_in_result"


# -- decisions where the rules leave room (docs/RULES.md) ---------------------------------------
@pytest.mark.parametrize(("choice", "breaker"), [
    pytest.param(Start, 1, id="D6-accepted-the-opponent-breaks"),
    pytest.param(HandBack, 0, id="D6-handed-back-the-breaker-breaks"),
])
def test_after_a_time_foul_on_the_break_D6(choice: type, breaker: int) -> None:
    clock = new_clock()
    clock.handle(Start(), T0)
    events = clock.advance(T0 + 35_000)
    assert types(events) == ["clock.expired", "foul", "turn"]
    state = clock.state(T0 + 35_000)
    assert (state["on_break"], state["player"], state["hand_back_to"]) == (True, 1, 0)
    assert {"start", "hand_back"} <= set(state["allowed"]) and "call" not in state["allowed"]
    clock.handle(choice(), T0 + 36_000)
    if choice is Start:
        clock.handle(Shot(), T0 + 37_000)
    assert (clock.player, clock.state(T0)["on_break"]) == (breaker, True)
    with pytest.raises(InvalidCommand) as info:
        clock.handle(Result(whites_potted=1), T0 + 38_000)
    assert info.value.code == "missing_legal_break"
    events = clock.handle(Result(whites_potted=1, legal_break=True), T0 + 38_000)
    assert events[0].data["player"] == breaker and clock.whites[breaker] == 1


@pytest.mark.parametrize(("choice", "player"), [
    pytest.param(Start, 1, id="D7-accepted-the-opponent-plays-the-position"),
    pytest.param(HandBack, 0, id="D7-handed-back-no-re-rack"),
])
def test_after_an_illegal_break_the_opponent_chooses_and_nobody_re_breaks_D7(
        choice: type, player: int) -> None:
    clock = new_clock()
    events = play(clock, whites_potted=1, legal_break=False)
    assert types(events) == ["shot.result", "foul", "respot", "turn"]
    assert clock.state(T0)["on_break"] is False and clock.hand_back_to == 0
    clock.handle(choice(), T0 + 5000)
    if choice is Start:
        clock.handle(Shot(), T0 + 6000)
    assert clock.player == player
    with pytest.raises(InvalidCommand) as info:
        clock.handle(Result(whites_potted=1, legal_break=True), T0 + 7000)
    assert info.value.code == "legal_break_after_break"
    clock.handle(Result(whites_potted=1), T0 + 7000)
    assert clock.whites[player] == 1


def test_the_fouls_shown_after_the_frame_are_its_final_count_D8() -> None:
    clock = new_clock(race_to=3)
    clock.handle(Foul(reason="touched a ball"), T0)
    clock.handle(HandBack(), T0)
    events = clock.handle(Foul(code="double_hit"), T0)
    assert types(events) == ["foul", "frame.ended"]
    assert events[1].data["fouls"] == [2, 0]
    assert clock.state(T0)["fouls"] == [2, 0] and clock.phase == "frame_over"
    clock.handle(NewFrame(), T0)
    assert clock.state(T0)["fouls"] == [0, 0]


def test_new_frame_in_the_middle_of_a_frame_needs_a_reason_D9() -> None:
    clock = new_clock()
    play(clock, whites_potted=1, legal_break=True)
    before = clock.to_dict()
    with pytest.raises(InvalidCommand) as info:
        clock.handle(NewFrame(winner=0), T0 + 5000)
    assert info.value.code == "missing_reason" and "outside the rules" in str(info.value)
    assert clock.to_dict() == before
    events = clock.handle(NewFrame(winner=0, reason="Petrov withdrew: injury"), T0 + 5000)
    ended = by_type(events, "frame.ended")[0].data
    assert (ended["reason"], ended["rule"], ended["outside_rules"], ended["referee_reason"]) == (
        "referee", None, True, "Petrov withdrew: injury")
    assert (clock.frame, clock.phase, clock.fouls) == (2, "ready", [0, 0])


# -- corrections and persistence ----------------------------------------------------------------
def test_undo_of_a_result_restores_credits_fouls_and_the_turn() -> None:
    clock = new_clock()
    play(clock, whites_potted=2, legal_break=True)
    before = clock.to_dict()
    play(clock, whites_potted=2)  # over the limit: foul, turn passes
    assert (clock.fouls, clock.player) == ([1, 0], 1)
    clock.handle(Undo(), T0 + 5000)  # the result
    assert (clock.whites, clock.fouls, clock.player, clock.visit, clock.phase) == (
        [2, 0], [0, 0], 0, 1, "ready")
    clock.handle(Undo(), T0 + 5000)  # the shot
    clock.handle(Undo(), T0 + 5000)  # the start
    after = clock.to_dict()
    assert after["match"] == before["match"]
    assert clock.match.frame.choice_for is None


def test_serialisation_round_trip_keeps_the_rules_state() -> None:
    clock = new_clock(race_to=3)
    play(clock, whites_potted=2, legal_break=True)
    play(clock, whites_potted=2)  # a foul: the 10.4 choice is open
    data = json.loads(json.dumps(clock.to_dict()))
    copy = TableClock.from_dict(data)
    assert copy.to_dict() == clock.to_dict()
    assert copy.state(T0) == clock.state(T0)
    assert (copy.whites, copy.fouls, copy.hand_back_to, copy.match.race_to) == (
        [2, 0], [1, 0], 0, 3)
    copy.handle(Undo(), T0)  # the history carries the rules' state too
    assert (copy.fouls, copy.player) == ([0, 0], 0)


def test_a_state_stored_before_the_rules_joined_still_loads() -> None:
    clock = new_clock()
    clock.handle(Foul(reason="x"), T0)
    legacy = clock.to_dict()
    del legacy["match"]
    legacy.update(fouls=[1, 0], hand_back_to=0, frame_winner=None, frame_end_reason=None,
                  frames_won=[0, 0])
    legacy["history"] = []
    copy = TableClock.from_dict(legacy)
    assert (copy.fouls, copy.hand_back_to, copy.player, copy.phase) == ([1, 0], 0, 1, "ready")


# -- refusals -----------------------------------------------------------------------------------
@pytest.mark.parametrize("phase", ["running", "paused", "expired"])
def test_result_while_the_clock_runs_is_refused_naming_the_phase(phase: str) -> None:
    clock = new_clock()
    clock.handle(Start(), T0)
    if phase == "paused":
        clock.handle(parse_command({"command": "pause"}), T0 + 1000)
    if phase == "expired":
        clock.advance(T0 + 35000)
    before = clock.to_dict()
    with pytest.raises(RuleRefusal) as info:
        clock.handle(Result(whites_potted=1, legal_break=True), T0 + 2000)
    assert str(info.value).startswith(f"result refused in phase {phase}")
    assert clock.to_dict() == before


@pytest.mark.parametrize(
    ("payload", "code", "fragment"),
    [
        ({"whites_potted": -1}, "bad_count", "whites_potted"),
        ({"whites_potted": 8}, "too_many_whites", "8"),
        ({"colour_potted": "yes"}, "bad_flag", "'yes'"),
        ({"call": {"pocket": "nowhere"}}, "unknown_pocket", "'nowhere'"),
        ({"call": 5}, "bad_call", "call"),
        ({"route": {"pocket": None, "path": ["sideways"]}}, "unknown_cushion", "'sideways'"),
        ({"colour_potted": True, "call": CALL}, "missing_route", "route"),
        ({"referee_foul": ""}, "bad_text", "referee_foul"),
        ({"spin": "top"}, "unknown_field", "spin"),
    ],
)
def test_malformed_result_is_invalid_with_the_rules_code(payload: dict, code: str,
                                                         fragment: str) -> None:
    with pytest.raises(InvalidCommand) as info:
        parse_command({"command": "result", **payload})
    assert info.value.code == code
    assert fragment in str(info.value)


def test_a_report_that_cannot_happen_now_is_invalid_and_changes_nothing() -> None:
    clock = new_clock()
    play(clock, whites_potted=3, legal_break=True)
    before = clock.to_dict()
    for report, code in [({"whites_potted": 5}, "too_many_whites"),
                         ({"legal_break": True}, "legal_break_after_break")]:
        with pytest.raises(InvalidCommand) as info:
            clock.handle(Result(**report), T0 + 9000)
        assert info.value.code == code
        assert clock.to_dict() == before


def test_event_types_are_known() -> None:
    assert {"shot.result", "respot", "match.ended"} <= EVENT_TYPES


# -- a whole match over HTTP ------------------------------------------------------------------------
def _ok(result: tuple[int, Any]) -> dict[str, Any]:
    status, body = result
    assert status == 200, body
    return body


def _shot(server: Service, table: str, **report: Any) -> dict[str, Any]:
    _ok(server.command(table, "start"))
    _ok(server.command(table, "shot"))
    return _ok(server.command(table, "result", **report))


@pytest.mark.e2e
def test_a_match_race_to_two_over_http(server: Service) -> None:
    status, state = server.post("/api/tables", {"id": "m", "players": ["Ivanov", "Petrov"],
                                                "race_to": 2})
    assert status == 201, state
    assert state["match"]["race_to"] == 2 and state["on_break"] is True
    # Frame 1: Ivanov breaks, 2 whites, then 1, then the called colour (3.2).
    _shot(server, "m", whites_potted=2, legal_break=True)
    _shot(server, "m", whites_potted=1)
    state = _shot(server, "m", colour_potted=True, call=CALL, route=ROUTE)
    assert (state["phase"], state["frames_won"], state["frame_winner"]) == (
        "frame_over", [1, 0], 0)
    # Frame 2: Petrov breaks with nothing (4.7); Ivanov fouls twice (5.6 then time): lost.
    state = _ok(server.command("m", "new_frame"))
    assert (state["frame"], state["player"], state["whites"]) == (2, 1, [0, 0])
    _shot(server, "m", whites_potted=0, legal_break=True)
    _shot(server, "m", whites_potted=4)  # 5.6: Petrov chooses
    _ok(server.command("m", "hand_back"))
    state = _ok(server.command("m", "foul", reason="touched the cue ball twice"))
    assert (state["frame_end_reason"], state["frames_won"]) == ("technical_loss", [1, 1])
    # A refused result: 409 while running, 422 malformed, 422 naming legal_break on the break.
    _ok(server.command("m", "new_frame"))
    _ok(server.command("m", "start"))
    status, error = server.command("m", "result", whites_potted=1, legal_break=True)
    assert status == 409 and "phase running" in error["error"]["message"]
    _ok(server.command("m", "shot"))
    status, error = server.command("m", "result", whites_potted="two")
    assert status == 422 and error["error"]["code"] == "bad_count"
    status, error = server.command("m", "result", whites_potted=3)
    assert (status, error["error"]["code"]) == (422, "missing_legal_break")
    assert "legal_break" in error["error"]["message"]
    # Frame 3: Ivanov breaks 3 whites and pots the colour: 2-1, the match is over.
    _ok(server.command("m", "result", whites_potted=3, legal_break=True))
    state = _shot(server, "m", colour_potted=True, call=CALL, route=ROUTE)
    assert state["match"] == {"id": "m.1", "number": 1, "race_to": 2, "score": [2, 1],
                              "frames_won": [2, 1], "winner": 0, "over": True, "undecided": 0,
                              "match_limit_ms": None, "at_match_limit": "leader_wins",
                              "by_time_limit": False, "drawn": False}
    status, error = server.command("m", "new_frame")
    assert status == 409 and error["error"]["code"] == "match_over"
    assert "Ivanov won 2-1" in error["error"]["message"]

    events = server.get("/api/tables/m/events?since=0&limit=10000")
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1))
    # The service signs the finished match (issue 20): match.signed may follow (async).
    kinds = [e["type"] for e in events if e["type"] != "match.signed"]
    assert kinds[:2] == ["table.created", "frame.started"]
    assert kinds[-3:] == ["shot.result", "frame.ended", "match.ended"]
    assert kinds.count("frame.ended") == 3 and kinds.count("frame.started") == 3
    assert kinds.count("shot.result") == 7 and kinds.count("respot") == 1
    # A free-text foul breaks a general rule (9, D10); its code is "other".
    assert [(e["data"]["rule"], e["data"]["code"]) for e in events if e["type"] == "foul"] == [
        ("5.6", "over_limit"), ("9", "other")]
    ended = [e["data"] for e in events if e["type"] == "frame.ended"]
    assert [(d["winner"], d["reason"]) for d in ended] == [
        (0, "legal_colour_pot"), (1, "technical_loss"), (0, "legal_colour_pot")]
    # The last event may be match.signed, which follows match.ended asynchronously.
    assert [e["data"]["score"] for e in events if e["type"] == "match.ended"] == [[2, 1]]


@pytest.mark.e2e
def test_call_then_shot_then_result_over_http(server: Service) -> None:
    """Issue 12 over HTTP: the break's legality, a general foul with its code, the call
    announced before the shot and the result judged against it (the cue ball's contact
    implied), a frame ended by the referee with a reason, a time foul before the break, an
    illegal break played on, one shot breaking two rules."""
    status, state = server.post("/api/tables", {"id": "c", "players": ["Ivanov", "Petrov"],
                                                "race_to": 3})
    assert status == 201, state
    status, error = server.command("c", "call", **CALL)
    assert (status, error["error"]["code"], error["error"]["rule"]) == (409, "call_on_break",
                                                                       "4.4-4.5")
    _ok(server.command("c", "start"))
    _ok(server.command("c", "shot"))
    status, error = server.command("c", "result", whites_potted=2)         # 4.2, D11
    assert (status, error["error"]["code"]) == (422, "missing_legal_break")
    assert "legal_break" in error["error"]["message"]
    _ok(server.command("c", "result", whites_potted=2, legal_break=True))
    # A general foul with its code (9, D10): the ball off the table goes back (11.1).
    state = _ok(server.command("c", "foul", code="ball_off_table", balls=["colour"]))
    assert (state["fouls"], state["player"], state["hand_back_to"]) == ([1, 0], 1, 0)
    _ok(server.command("c", "hand_back"))
    _ok(server.command("c", "start"))
    _ok(server.command("c", "shot"))
    _ok(server.command("c", "result", whites_potted=1))                    # 3 credited
    # The call before the shot (7.1), naming only the pocket and the cushion (D3).
    _ok(server.command("c", "start"))
    call = {"pocket": "bottom_left", "cushions": ["right_bottom"]}
    state = _ok(server.command("c", "call", **call))
    assert state["announced_call"] == {**call, "contacts": [], "shot_type": "normal"}
    assert "call" in state["allowed"]
    state = _ok(server.command("c", "shot"))
    assert "call" not in state["allowed"]
    status, error = server.command("c", "call", **CALL)
    assert (status, error["error"]["code"]) == (409, "call_after_shot")
    assert error["error"]["message"].startswith("call refused in phase ready")
    status, error = server.command("c", "call", pocket="corner")
    assert (status, error["error"]["code"]) == (422, "unknown_pocket")
    state = _ok(server.command("c", "result", colour_potted=True, route=ROUTE))
    assert (state["frame_winner"], state["frame_end_reason"], state["fouls"]) == (
        0, "legal_colour_pot", [1, 0])  # D8: the frame's final count
    # Frame 2: a general foul inside a result, then the referee ends the frame (D9).
    _ok(server.command("c", "new_frame"))
    _ok(server.command("c", "start"))
    _ok(server.command("c", "shot"))
    _ok(server.command("c", "result", whites_potted=1, legal_break=True,
                       referee_foul={"code": "touched_ball", "touched_with": "cue"}))
    status, error = server.command("c", "new_frame", winner=0)
    assert (status, error["error"]["code"]) == (422, "missing_reason")
    state = _ok(server.command("c", "new_frame", winner=0, reason="Petrov withdrew"))
    assert (state["frame"], state["frames_won"], state["fouls"]) == (3, [2, 0], [0, 0])
    # Frame 3, Ivanov to break: a time foul before the break (D6), accepted: Petrov breaks.
    _ok(server.command("c", "start"))
    _ok(server.command("c", "set_time", remaining_ms=1, reason="test: let it run out"))
    state = until(lambda: (s := server.get("/api/tables/c"))["phase"] == "expired" and s, 5,
                  0.02, "the shot to run out")
    assert (state["player"], state["on_break"], state["fouls"]) == (1, True, [1, 0])
    _ok(server.command("c", "start"))                                      # accepted (10.4)
    _ok(server.command("c", "shot"))
    # Petrov's illegal break (4.3, D7): Ivanov plays the position; nobody breaks again.
    _ok(server.command("c", "result", legal_break=False))
    _ok(server.command("c", "start"))
    _ok(server.command("c", "shot"))
    status, error = server.command("c", "result", whites_potted=1, legal_break=True)
    assert (status, error["error"]["code"]) == (422, "legal_break_after_break")
    # One shot, several rules (D5): one foul listing each; Ivanov's second: 10.5.
    state = _ok(server.command("c", "result", whites_potted=1, colour_potted=True, call=CALL,
                              route=ROUTE, referee_foul={"code": "double_hit"}))
    assert (state["frame_end_reason"], state["fouls"], state["frames_won"]) == (
        "technical_loss", [2, 1], [2, 1])

    events = server.get("/api/tables/c/events?since=0&limit=100")
    fouls = [e["data"] for e in events if e["type"] == "foul"]
    assert [(f["code"], f["rule"]) for f in fouls] == [
        ("ball_off_table", "9"), ("touched_ball", "9"), ("shot_time", "12.4"),
        ("illegal_break", "4.3"), ("white_and_colour", "9")]
    assert [b["code"] for b in fouls[-1]["breaches"]] == ["white_and_colour", "double_hit"]
    respots = [e["data"]["respots"][0] for e in events if e["type"] == "respot"]
    assert (respots[0]["ball"], respots[0]["rule"], respots[0]["cause"]) == ("colour", "11.1",
                                                                           "9")
    announced = [e for e in events if e["type"] == "call.announced"]
    assert len(announced) == 1 and announced[0]["data"]["phase"] == "running"
    result = next(e for e in events if e["type"] == "shot.result"
                  and e["data"]["report"]["colour_potted"])
    assert result["seq"] > announced[0]["seq"]
    outcome = result["data"]["outcome"]
    assert (outcome["call_timing"], outcome["call_verdict"]["fulfilled"]) == ("announced", True)
    ended = [e["data"] for e in events if e["type"] == "frame.ended"]
    assert [(d["rule"], d["outside_rules"], d["referee_reason"], d["fouls"]) for d in ended] == [
        ("3.2", False, None, [1, 0]), (None, True, "Petrov withdrew", [0, 1]),
        ("10.5-10.6", False, None, [2, 1])]
