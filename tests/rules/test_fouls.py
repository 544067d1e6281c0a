"""Fouls as data (9, 10.x; D5, D10): a code per kind, the rule it breaks, the general fouls
the referee reports with their consequences, one act = one foul listing every breach."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clock_service.core.rules import (
    FOUL_RULES,
    GENERAL_FOULS,
    Call,
    FoulCode,
    FrameRules,
    GeneralFoul,
    InvalidResult,
    Route,
    ShotResult,
    Turn,
)
from tests.rules.test_frame import BANK, BANK_ROUTE, colour, frame, on_break


def test_every_code_maps_to_a_rule() -> None:
    assert set(FOUL_RULES) == set(FoulCode)
    assert {FOUL_RULES[c] for c in GENERAL_FOULS} == {"9"}
    assert FOUL_RULES[FoulCode.SHOT_TIME] == "12.4"
    assert FOUL_RULES[FoulCode.ILLEGAL_BREAK] == "4.3"
    assert FOUL_RULES[FoulCode.OVER_LIMIT] == "5.6"


# -- the referee's general fouls: validation ----------------------------------------------
INVALID = [
    pytest.param({"code": "sneezed"}, "unknown_foul_code", "sneezed", id="unknown-code"),
    pytest.param({"code": "over_limit"}, "not_a_general_foul", "found by the rules",
                 id="D10-a-foul-the-rules-find-is-not-reported"),
    pytest.param({"code": "ball_off_table"}, "missing_balls", "which balls",
                 id="D10-11-ball-off-table-needs-the-balls"),
    pytest.param({"code": "ball_off_table", "balls": ["colour", "colour"]}, "too_many_balls",
                 "one coloured ball", id="1.1-one-coloured-ball"),
    pytest.param({"code": "ball_off_table", "balls": ["red"]}, "unknown_ball", "red",
                 id="unknown-ball"),
    pytest.param({"code": "ball_off_table", "balls": "colour"}, "bad_sequence", "list",
                 id="balls-not-a-list"),
    pytest.param({"code": "double_hit", "balls": ["white"]}, "balls_without_off_table",
                 "ball_off_table only", id="balls-only-for-ball-off-table"),
    pytest.param({"code": "push_shot", "touched_with": "hand"}, "touched_with_without_touch",
                 "touched_ball only", id="touched-with-only-for-touched-ball"),
    pytest.param({"code": "touched_ball", "touched_with": "elbow"}, "unknown_touched_with",
                 "elbow", id="unknown-touched-with"),
    pytest.param({"code": "other"}, "missing_text", "describe", id="other-needs-text"),
    pytest.param({"code": "other", "text": " "}, "bad_text", "text", id="blank-text"),
    pytest.param({"code": "other", "text": "x" * 201}, "bad_text", "200", id="long-text"),
    pytest.param({"code": "double_hit", "speed": 3}, "unknown_field", "speed",
                 id="unknown-field"),
    pytest.param({"balls": []}, "missing_field", "code", id="missing-code"),
]


@pytest.mark.parametrize(("data", "code", "shown"), INVALID)
def test_invalid_general_foul_is_refused_with_a_code(data: dict[str, Any], code: str,
                                                     shown: str) -> None:
    with pytest.raises(InvalidResult) as caught:
        GeneralFoul.from_dict(data)
    assert caught.value.code == code
    assert shown in str(caught.value)


@pytest.mark.parametrize(("value", "reason"), [
    pytest.param("cue touched the coloured ball", "cue touched the coloured ball",
                 id="free-text-is-code-other"),
    pytest.param({"code": "double_hit"}, "double hit", id="double-hit"),
    pytest.param({"code": "push_shot", "text": "long follow-through"},
                 "push shot (long follow-through)", id="note-with-a-code"),
    pytest.param({"code": "no_ball_contact"}, "the cue ball touched no ball", id="no-contact"),
    pytest.param({"code": "touched_ball", "touched_with": "clothing"},
                 "touched a ball with the clothing", id="touched-with-clothing"),
    pytest.param({"code": "ball_off_table", "balls": ["white", "colour", "white"]},
                 "ball off the table: the coloured ball and 2 whites", id="balls-off"),
    pytest.param({"code": "out_of_turn"}, "played out of turn", id="out-of-turn"),
])
def test_general_foul_parses_and_words_itself(value: Any, reason: str) -> None:
    foul = GeneralFoul.parse(value)
    assert foul.reason == reason and foul.rule == "9"
    assert GeneralFoul.from_dict(json.loads(json.dumps(foul.to_dict()))) == foul


# -- a general foul on a shot: its consequence (D10) ---------------------------------------
def general(code: str, **kw: Any) -> GeneralFoul:
    return GeneralFoul.from_dict({"code": code, **kw})


# Each case: the frame, the result; then the breach codes, the re-spots (ball, count, cause)
# and the whites credited after.
SHOT_FOULS = [
    pytest.param(frame(credited=(1, 0)), ShotResult(whites_potted=1,
                                                    referee_foul=general("double_hit")),
                 ["double_hit"], [("white", 1, "10.3")], (1, 0),
                 id="9-I5-double-hit-white-not-credited-respotted"),
    pytest.param(frame(), ShotResult(referee_foul=general("push_shot")), ["push_shot"], [],
                 (0, 0), id="9-push-shot"),
    pytest.param(frame(), ShotResult(referee_foul=general("no_ball_contact")),
                 ["no_ball_contact"], [], (0, 0), id="9-no-ball-contact"),
    pytest.param(frame(), ShotResult(referee_foul=general("touched_ball", touched_with="cue")),
                 ["touched_ball"], [], (0, 0), id="9-touched-a-ball-with-the-cue"),
    pytest.param(frame(), ShotResult(referee_foul=general("ball_off_table", balls=["colour"])),
                 ["ball_off_table"], [("colour", 1, "9")], (0, 0),
                 id="9-11.1-coloured-ball-off-the-table-back-on-the-spot"),
    pytest.param(frame(credited=(1, 0)),
                 ShotResult(whites_potted=1, referee_foul=general(
                     "ball_off_table", balls=["white", "white"])),
                 ["ball_off_table"], [("white", 1, "10.3"), ("white", 2, "9")], (1, 0),
                 id="9-11.2-two-whites-off-the-table-and-one-potted-all-back"),
    pytest.param(frame(break_done=False),
                 on_break(whites_potted=2, referee_foul=general("ball_off_table",
                                                                balls=["white"])),
                 ["ball_off_table"], [("white", 2, "10.3"), ("white", 1, "9")], (0, 0),
                 id="4.8-9-a-ball-off-the-table-spoils-a-legal-break"),
    pytest.param(frame(), ShotResult(referee_foul=general("other", text="jumped a ball")),
                 ["other"], [], (0, 0), id="9-free-text-remains"),
    # D5: one act, one foul, every rule it broke in order.
    pytest.param(frame(credited=(3, 0)),
                 colour(None, None, whites=1, referee_foul=general("double_hit")),
                 ["white_and_colour", "over_limit", "double_hit"],
                 [("white", 1, "5.7"), ("colour", 1, "I8")], (3, 0),
                 id="D5-9-5.6-9-three-breaches-one-foul"),
    pytest.param(frame(break_done=False),
                 on_break(whites_potted=4, legal_break=False),
                 ["illegal_break", "over_limit"], [("white", 4, "5.7")], (0, 0),
                 id="D5-4.3-5.6-illegal-break-over-the-limit"),
]


@pytest.mark.parametrize(("start", "result", "codes", "respots", "credited"), SHOT_FOULS)
def test_general_and_shot_fouls_carry_codes_and_consequences(
    start: FrameRules, result: ShotResult, codes: list[str],
    respots: list[tuple[str, int, str]], credited: tuple[int, int],
) -> None:
    outcome = start.shot(result)
    assert len(outcome.fouls) == 1 and start.fouls == (1, 0)  # one count for 10.5 (D5)
    foul = outcome.fouls[0]
    assert [b.code.value for b in foul.breaches] == codes
    assert foul.code.value == codes[0] and foul.rule == FOUL_RULES[foul.code]
    assert [b.rule for b in foul.breaches] == [FOUL_RULES[b.code] for b in foul.breaches]
    if len(codes) > 1:
        assert all(f"({b.rule})" in foul.reason for b in foul.breaches)
    assert [(r.ball.value, r.count, r.cause) for r in outcome.respots] == respots
    assert start.credited == credited
    assert outcome.choice_for == 1  # 10.4
    data = outcome.to_dict()["fouls"][0]
    assert data["code"] == codes[0] and [b["code"] for b in data["breaches"]] == codes


# Codes of the fouls the rules find in a report.
FOUND = [
    pytest.param(frame(credited=(3, 0)), colour(None, None), "colour_without_call", "9",
                 id="6.3-9-colour-without-call"),
    pytest.param(frame(credited=(1, 0)), colour(BANK, BANK_ROUTE, whites=1), "white_and_colour",
                 "9", id="9-white-and-colour"),
    pytest.param(frame(credited=(3, 0)), colour(BANK, Route("bottom_right",
                                                            ["cue>colour", "right_bottom"])),
                 "call_not_fulfilled", "7.3", id="7.3-call-not-fulfilled"),
    pytest.param(frame(credited=(1, 0)),
                 colour(Call("top_left", [], ["cue>colour"], "early_combination"),
                        Route("top_left", ["cue>colour"])),
                 "call_not_fulfilled", "8.3", id="8.3-special-call-not-played"),
    pytest.param(frame(credited=(3, 0)), colour(BANK, Route("bottom_left", [
        "cue>colour", "white2>colour", "right_bottom"])), "unannounced_contact", "7.4",
                 id="7.4-unannounced-contact-colour-potted"),
    pytest.param(frame(credited=(1, 0)), ShotResult(whites_potted=1, call=BANK, route=Route(
        None, ["cue>colour", "top", "right_bottom"])), "unannounced_contact", "7.4",
                 id="7.4-unannounced-contact-white-potted"),
    pytest.param(frame(credited=(2, 0)), colour(BANK, BANK_ROUTE), "colour_before_three", "6.2",
                 id="6.1-6.2-colour-before-three"),
    pytest.param(frame(credited=(2, 0)), ShotResult(whites_potted=2), "over_limit", "5.6",
                 id="5.6-over-limit"),
]


@pytest.mark.parametrize(("start", "result", "code", "rule"), FOUND)
def test_fouls_the_rules_find_have_codes(start: FrameRules, result: ShotResult, code: str,
                                         rule: str) -> None:
    foul = start.shot(result).fouls[0]
    assert (foul.code.value, foul.rule) == (code, rule)


# -- a general foul outside a shot: the foul command (referee_foul) ------------------------
def test_ball_off_table_outside_a_shot_is_respotted() -> None:
    start = frame(credited=(2, 0))
    outcome = start.referee_foul(0, general("ball_off_table", balls=["white"]))
    assert [(r.ball.value, r.count, r.rule, r.cause) for r in outcome.respots] == [
        ("white", 1, "11.2", "9")]
    assert (outcome.turn, outcome.choice_for, start.fouls) == (Turn.PASSES, 1, (1, 0))


def test_out_of_turn_is_the_seated_players_foul_the_shooter_chooses() -> None:
    start = frame(at_table=0)
    outcome = start.referee_foul(1, general("out_of_turn"))
    assert (outcome.player, outcome.turn, outcome.next_player, outcome.choice_for) == (
        1, Turn.STAYS, 0, 0)
    assert outcome.fouls[0].code is FoulCode.OUT_OF_TURN and start.fouls == (0, 1)


def test_second_general_foul_is_a_technical_loss_without_respots() -> None:
    start = frame(fouls=(1, 0))
    outcome = start.referee_foul(0, general("ball_off_table", balls=["colour"]))
    assert outcome.frame_over and outcome.winner == 1 and outcome.respots == ()


@pytest.mark.parametrize(("build", "code"), [
    pytest.param(lambda: ShotResult(referee_foul=general("out_of_turn")), "out_of_turn_in_result",
                 id="D10-out-of-turn-is-not-a-shot-result"),
    pytest.param(lambda: ShotResult(colour_potted=True, referee_foul=general(
        "ball_off_table", balls=["colour"])), "colour_potted_and_off_table",
                 id="colour-potted-and-off-the-table"),
    pytest.param(lambda: ShotResult(whites_potted=6, referee_foul=general(
        "ball_off_table", balls=["white", "white"])), "too_many_whites", id="1.1-eight-whites"),
    pytest.param(lambda: ShotResult(referee_foul=5), "bad_referee_foul", id="not-text-or-object"),
])
def test_impossible_general_foul_in_a_result(build: Any, code: str) -> None:
    with pytest.raises(InvalidResult) as caught:
        build()
    assert caught.value.code == code


def test_whites_off_the_table_count_against_the_whites_on_it() -> None:
    start = frame(credited=(3, 3))  # one white left on the table
    before = start.to_dict()
    with pytest.raises(InvalidResult) as caught:
        start.shot(ShotResult(whites_potted=1, referee_foul=general("ball_off_table",
                                                                    balls=["white"])))
    assert caught.value.code == "too_many_whites"
    with pytest.raises(InvalidResult):
        start.referee_foul(0, general("ball_off_table", balls=["white", "white"]))
    assert start.to_dict() == before


def test_report_round_trips_with_a_general_foul() -> None:
    result = ShotResult(whites_potted=1, referee_foul=general("touched_ball",
                                                              touched_with="hand"))
    data = json.loads(json.dumps(result.to_dict()))
    assert data["referee_foul"] == {"code": "touched_ball", "balls": [], "touched_with": "hand",
                                    "text": None}
    assert ShotResult.from_dict(data) == result
