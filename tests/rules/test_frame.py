"""Frame rules: sections 3-5 and 9-11 as read by I1-I13, table-driven."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clock_service.core.rules import (
    COMMANDS,
    Call,
    EndReason,
    FrameRules,
    InvalidResult,
    Outcome,
    Phase,
    Route,
    RuleRefusal,
    ShotResult,
    Turn,
)


def frame(
    credited: tuple[int, int] = (0, 0),
    fouls: tuple[int, int] = (0, 0),
    at_table: int = 0,
    break_done: bool = True,
    breaker: int = 0,
) -> FrameRules:
    """A frame in the given state, built as the store would rebuild it."""
    return FrameRules.from_dict({
        "breaker": breaker,
        "player_at_table": at_table,
        "break_done": break_done,
        "credited": list(credited),
        "fouls": list(fouls),
        "choice_for": None,
        "winner": None,
        "end_reason": None,
    })


def on_break(**kwargs: Any) -> ShotResult:
    return ShotResult(legal_break=kwargs.pop("legal_break", True), **kwargs)


BANK = Call("bottom_left", ["right_bottom"], ["cue>colour"])
BANK_ROUTE = Route("bottom_left", ["cue>colour", "right_bottom"])
EARLY_CUSHION = Call("bottom_left", ["right_bottom"], ["cue>colour"], "early_cushion")
COMBINATION = Call("top_left", [], ["cue>white1", "white1>colour"], "early_combination")
COMBINATION_ROUTE = Route("top_left", ["cue>white1", "white1>colour"])


def colour(call: Call | None, route: Route | None, whites: int = 0, **kw: Any) -> ShotResult:
    return ShotResult(whites_potted=whites, colour_potted=True, call=call, route=route, **kw)


# Each case: the starting frame, the report, then what must come out.
# expect keys: credited_by_shot, foul (rule or None), respots [(ball, count, rule, cause)],
# turn, next_player, choice_for, winner, end_reason, credited (after), fouls (after).
SHOT_CASES = [
    # -- the break (4.x, 5.4, I6, I9) --
    pytest.param(
        frame(break_done=False), on_break(whites_potted=2),
        dict(credited_by_shot=2, foul=None, respots=[], turn=Turn.STAYS, next_player=0,
             credited=(2, 0)),
        id="4.2-4.6-4.8-legal-break-two-whites-credited-turn-stays",
    ),
    pytest.param(
        frame(break_done=False), on_break(),
        dict(credited_by_shot=0, foul=None, respots=[], turn=Turn.PASSES, next_player=1,
             choice_for=None),
        id="4.7-legal-break-no-white-turn-passes",
    ),
    pytest.param(
        frame(break_done=False), on_break(whites_potted=1, legal_break=False),
        dict(credited_by_shot=0, foul="4.3", respots=[("white", 1, "11.2", "10.3")],
             turn=Turn.PASSES, next_player=1, choice_for=1, credited=(0, 0), fouls=(1, 0)),
        id="4.3-I5-illegal-break-foul-white-respotted",
    ),
    pytest.param(
        frame(break_done=False), on_break(colour_potted=True),
        dict(credited_by_shot=0, foul=None, respots=[("colour", 1, "11.1", "4.5")],
             turn=Turn.PASSES, next_player=1, choice_for=None, fouls=(0, 0)),
        id="4.4-4.5-4.7-colour-on-break-by-chance-not-a-foul-respotted",
    ),
    pytest.param(
        frame(break_done=False), on_break(whites_potted=2, colour_potted=True),
        dict(credited_by_shot=2, foul=None, respots=[("colour", 1, "11.1", "4.5")],
             turn=Turn.STAYS, next_player=0, credited=(2, 0), fouls=(0, 0)),
        id="4.4-I9-colour-and-whites-on-break-whites-credited-4.6-turn-stays",
    ),
    pytest.param(
        frame(break_done=False), on_break(colour_potted=True, legal_break=False),
        dict(credited_by_shot=0, foul="4.3", respots=[("colour", 1, "11.1", "4.5")],
             turn=Turn.PASSES, choice_for=1, fouls=(1, 0)),
        id="4.3-4.5-illegal-break-with-colour",
    ),
    pytest.param(
        frame(break_done=False), on_break(whites_potted=3),
        dict(credited_by_shot=3, foul=None, turn=Turn.STAYS, credited=(3, 0)),
        id="5.4-three-whites-on-break-fill-the-limit",
    ),
    pytest.param(
        frame(break_done=False), on_break(whites_potted=4),
        dict(credited_by_shot=0, foul="5.6", respots=[("white", 4, "11.2", "5.7")],
             turn=Turn.PASSES, choice_for=1, credited=(0, 0), fouls=(1, 0)),
        id="5.4-5.6-four-whites-on-break-over-the-limit",
    ),
    pytest.param(
        frame(break_done=False, breaker=1, at_table=1), on_break(whites_potted=1),
        dict(credited_by_shot=1, turn=Turn.STAYS, next_player=1, credited=(0, 1)),
        id="I3-4.6-player-1-breaks",
    ),
    pytest.param(
        frame(break_done=False, fouls=(1, 0)), on_break(legal_break=False),
        dict(foul="4.3", respots=[], turn=None, winner=1,
             end_reason=EndReason.TECHNICAL_LOSS, fouls=(2, 0)),
        id="4.3-10.5-I12-illegal-break-after-a-time-foul-is-technical-loss",
    ),
    # -- whites (5.x, I1, I4, I5) --
    pytest.param(
        frame(credited=(1, 0)), ShotResult(whites_potted=1),
        dict(credited_by_shot=1, foul=None, respots=[], turn=Turn.STAYS, next_player=0,
             credited=(2, 0)),
        id="5.1-5.2-I1-white-credited-turn-stays",
    ),
    pytest.param(
        frame(credited=(1, 0)), ShotResult(),
        dict(credited_by_shot=0, foul=None, turn=Turn.PASSES, next_player=1, choice_for=None,
             credited=(1, 0)),
        id="I1-nothing-potted-turn-passes",
    ),
    pytest.param(
        frame(), ShotResult(whites_potted=3),
        dict(credited_by_shot=3, foul=None, turn=Turn.STAYS, credited=(3, 0)),
        id="5.5-three-whites-in-one-shot",
    ),
    pytest.param(
        frame(credited=(2, 1)), ShotResult(whites_potted=2),
        dict(credited_by_shot=0, foul="5.6", respots=[("white", 2, "11.2", "5.7")],
             turn=Turn.PASSES, next_player=1, choice_for=1, credited=(2, 1), fouls=(1, 0)),
        id="5.6-5.7-5.8-I4-two-credited-pots-two",
    ),
    pytest.param(
        frame(), ShotResult(whites_potted=4),
        dict(credited_by_shot=0, foul="5.6", respots=[("white", 4, "11.2", "5.7")],
             turn=Turn.PASSES, choice_for=1, credited=(0, 0), fouls=(1, 0)),
        id="5.6-I4-zero-credited-four-whites-in-one-shot",
    ),
    pytest.param(
        frame(credited=(3, 0)), ShotResult(whites_potted=1),
        dict(credited_by_shot=0, foul="5.6", respots=[("white", 1, "11.2", "5.7")],
             credited=(3, 0)),
        id="5.6-5.9-three-credited-pots-one-credits-kept",
    ),
    # -- the coloured ball (3.2, 6.x, 7.x, 8.x, 9, I7, I8) --
    pytest.param(
        frame(credited=(3, 1)), colour(BANK, BANK_ROUTE),
        dict(credited_by_shot=0, foul=None, respots=[], turn=None, next_player=None,
             winner=0, end_reason=EndReason.LEGAL_COLOUR_POT, fouls=(0, 0)),
        id="3.2-6.1-7.3-I7-legal-colour-after-three-whites-with-fulfilled-call",
    ),
    pytest.param(
        frame(credited=(1, 3), at_table=1), colour(BANK, BANK_ROUTE),
        dict(winner=1, end_reason=EndReason.LEGAL_COLOUR_POT),
        id="3.2-I7-player-1-wins",
    ),
    pytest.param(
        frame(credited=(3, 0)), colour(None, None),
        dict(foul="9", respots=[("colour", 1, "11.1", "I8")], turn=Turn.PASSES, choice_for=1,
             credited=(3, 0), fouls=(1, 0)),
        id="6.3-9-I8-colour-without-call-foul-respotted",
    ),
    pytest.param(
        frame(credited=(3, 0)), colour(None, BANK_ROUTE),
        dict(foul="9", respots=[("colour", 1, "11.1", "I8")]),
        id="6.3-9-colour-with-route-but-no-call",
    ),
    pytest.param(
        frame(credited=(1, 0)), colour(EARLY_CUSHION, BANK_ROUTE, whites=1),
        dict(credited_by_shot=0, foul="9",
             respots=[("white", 1, "11.2", "10.3"), ("colour", 1, "11.1", "I8")],
             credited=(1, 0), fouls=(1, 0)),
        id="9-I5-white-and-colour-in-one-shot",
    ),
    pytest.param(
        frame(credited=(3, 0)), colour(BANK, BANK_ROUTE, whites=1),
        dict(foul="9", respots=[("white", 1, "11.2", "5.7"), ("colour", 1, "11.1", "I8")],
             credited=(3, 0)),
        id="9-5.6-white-and-colour-with-three-credited",
    ),
    pytest.param(
        frame(credited=(3, 0)), colour(BANK, Route("bottom_right", ["cue>colour", "right_bottom"])),
        dict(foul="7.3", respots=[("colour", 1, "11.1", "I8")], fouls=(1, 0)),
        id="7.3-9-call-not-fulfilled-wrong-pocket",
    ),
    pytest.param(
        frame(credited=(3, 0)), colour(BANK, Route("bottom_left", ["cue>colour"])),
        dict(foul="7.3", respots=[("colour", 1, "11.1", "I8")]),
        id="7.3-9-call-not-fulfilled-cushion-missed",
    ),
    pytest.param(
        frame(credited=(3, 0)),
        colour(BANK, Route("bottom_left", ["cue>colour", "white2>colour", "right_bottom"])),
        dict(foul="7.4", respots=[("colour", 1, "11.1", "I8")]),
        id="7.4-unannounced-ball-contact-colour-potted",
    ),
    pytest.param(
        frame(credited=(3, 0)),
        colour(BANK, Route("bottom_left", ["cue>colour", "right_bottom"],
                           unannounced_contact=True)),
        dict(foul="7.4"),
        id="7.4-referee-flags-unannounced-contact",
    ),
    pytest.param(
        frame(credited=(1, 0)),
        ShotResult(whites_potted=1, call=BANK,
                   route=Route(None, ["cue>colour", "top", "right_bottom"])),
        dict(credited_by_shot=0, foul="7.4", respots=[("white", 1, "11.2", "10.3")],
             credited=(1, 0), fouls=(1, 0)),
        id="7.4-I5-unannounced-cushion-colour-missed-white-potted-is-foul",
    ),
    pytest.param(
        frame(credited=(1, 0)),
        ShotResult(call=BANK, route=Route(None, ["cue>colour", "top", "right_bottom"])),
        dict(credited_by_shot=0, foul=None, respots=[], turn=Turn.PASSES, choice_for=None,
             fouls=(0, 0)),
        id="7.4-unannounced-cushion-nothing-potted-no-foul",
    ),
    pytest.param(
        frame(credited=(1, 0)),
        ShotResult(whites_potted=1, call=BANK, route=Route(None, ["cue>colour"])),
        dict(credited_by_shot=1, foul=None, turn=Turn.STAYS, credited=(2, 0)),
        id="7.3-5.1-called-colour-missed-white-still-credited",
    ),
    pytest.param(
        frame(credited=(3, 0)),
        colour(BANK, Route("bottom_left", ["cue>colour", "right_bottom", "bottom"],
                           jaw_before_drop=True)),
        dict(foul=None, winner=0, end_reason=EndReason.LEGAL_COLOUR_POT),
        id="7.5-jaw-touch-before-drop-ignored-legal-pot",
    ),
    pytest.param(
        frame(credited=(3, 0)),
        colour(BANK, Route("bottom_left", ["cue>colour", "right_bottom", "bottom"])),
        dict(foul="7.4", winner=None),
        id="7.5-same-touch-without-jaw-flag-is-unannounced",
    ),
    pytest.param(
        frame(credited=(0, 2)), colour(EARLY_CUSHION, BANK_ROUTE),
        dict(foul=None, winner=0, end_reason=EndReason.LEGAL_COLOUR_POT),
        id="6.2-8.1-8.2-I10-early-pot-off-cushion-after-contact-wins",
    ),
    pytest.param(
        frame(credited=(2, 0)), colour(BANK, BANK_ROUTE),
        dict(foul="6.2", respots=[("colour", 1, "11.1", "I8")], winner=None, fouls=(1, 0)),
        id="6.1-6.2-7.2-colour-before-three-whites-without-special-call-foul",
    ),
    pytest.param(
        frame(credited=(1, 0)),
        colour(Call("top_left", ["right_top"], ["colour>white1"], "early_cushion"),
               Route("top_left", ["right_top", "colour>white1"], cue_ball="colour")),
        dict(foul="8.2", respots=[("colour", 1, "11.1", "I8")], winner=None),
        id="8.2-refused-cushion-before-ball-contact-foul",
    ),
    pytest.param(
        frame(credited=(1, 0)),
        colour(Call("top_left", ["right_top"], ["colour>white1"], "early_cushion"),
               Route("top_left", ["colour>white1", "right_top"], cue_ball="colour")),
        dict(foul=None, winner=0),
        id="8.5-I10-colour-as-cue-ball-early-pot-wins",
    ),
    pytest.param(
        frame(credited=(1, 0)), colour(COMBINATION, COMBINATION_ROUTE),
        dict(foul=None, winner=0, end_reason=EndReason.LEGAL_COLOUR_POT),
        id="8.3-8.4-combination-with-two-whites-cue-ball-counts-wins",
    ),
    pytest.param(
        frame(credited=(1, 0)),
        colour(Call("top_left", [], ["cue>colour"], "early_combination"),
               Route("top_left", ["cue>colour"])),
        dict(foul="8.3", winner=None),
        id="8.3-combination-with-one-white-foul",
    ),
    pytest.param(
        frame(credited=(3, 0)),
        colour(Call("top_left", [], ["cue>colour"], "early_cushion"),
               Route("top_left", ["cue>colour"])),
        dict(foul="8.2", winner=None),
        id="7.2-7.3-special-call-not-played-as-called-with-three-whites-foul",
    ),
    # -- the cue ball's first contact is the shot (D3, issue 12 defect 1) --
    pytest.param(
        frame(credited=(3, 0)),
        colour(Call("bottom_left", ["right_bottom"]), BANK_ROUTE),
        dict(foul=None, winner=0, end_reason=EndReason.LEGAL_COLOUR_POT),
        id="D3-7.2-plain-called-pot-with-the-contact-in-the-route-wins",
    ),
    pytest.param(
        frame(credited=(3, 0)),
        colour(Call("bottom_left", ["right_bottom"]), Route("bottom_left", ["right_bottom"])),
        dict(foul=None, winner=0, end_reason=EndReason.LEGAL_COLOUR_POT),
        id="D3-plain-called-pot-without-any-contact-wins",
    ),
    pytest.param(
        frame(credited=(1, 0)),
        colour(Call("bottom_left", ["right_bottom"], shot_type="early_cushion"),
               Route("bottom_left", ["right_bottom"])),
        dict(foul=None, winner=0, end_reason=EndReason.LEGAL_COLOUR_POT),
        id="D3-6.2-8.1-8.2-early-cushion-with-the-direct-contact-implied-wins",
    ),
    pytest.param(
        frame(credited=(1, 0)),
        colour(Call("bottom_left", ["right_bottom"], shot_type="early_cushion"), BANK_ROUTE),
        dict(foul=None, winner=0, end_reason=EndReason.LEGAL_COLOUR_POT),
        id="D3-6.2-8.1-8.2-early-cushion-call-leaving-out-the-contact-wins",
    ),
    pytest.param(
        frame(credited=(1, 0)),
        colour(Call("top_left", [], ["white1>colour"], "early_combination"),
               COMBINATION_ROUTE),
        dict(foul=None, winner=0, end_reason=EndReason.LEGAL_COLOUR_POT),
        id="D3-8.3-8.4-combination-called-after-the-first-contact-wins",
    ),
    pytest.param(
        frame(credited=(3, 0)),
        colour(Call("top_left"), COMBINATION_ROUTE),
        dict(foul="7.4", respots=[("colour", 1, "11.1", "I8")], winner=None),
        id="D3-7.4-an-unannounced-combination-is-still-a-foul",
    ),
    pytest.param(
        frame(credited=(1, 0)),
        colour(Call("bottom_left", ["left_bottom"], shot_type="early_cushion"),
               Route("bottom_left", ["left_bottom"], jaw_before_drop=True)),
        dict(foul="8.2", respots=[("colour", 1, "11.1", "I8")], winner=None),
        id="D4-7.5-8.1-a-jaw-touch-before-the-drop-is-not-the-early-cushion",
    ),
    # -- general-rule fouls seen by the referee (9, I12) --
    pytest.param(
        frame(credited=(1, 0)), ShotResult(whites_potted=1, referee_foul="touched a ball"),
        dict(credited_by_shot=0, foul="9", respots=[("white", 1, "11.2", "10.3")],
             credited=(1, 0), fouls=(1, 0), choice_for=1),
        id="9-I5-referee-foul-whites-not-credited",
    ),
    pytest.param(
        frame(credited=(3, 0)), colour(BANK, BANK_ROUTE, referee_foul="double hit"),
        dict(foul="9", respots=[("colour", 1, "11.1", "10.3")], winner=None),
        id="9-10.3-referee-foul-spoils-a-legal-colour-pot",
    ),
    # -- the second foul (10.5-10.6, I12, I13) --
    pytest.param(
        frame(credited=(2, 1), fouls=(1, 0)), ShotResult(whites_potted=2),
        dict(credited_by_shot=0, foul="5.6", respots=[], turn=None, next_player=None,
             choice_for=None, winner=1, end_reason=EndReason.TECHNICAL_LOSS,
             credited=(2, 1), fouls=(2, 0)),
        id="10.5-10.6-I12-I13-second-foul-technical-loss-no-choice",
    ),
    pytest.param(
        frame(credited=(3, 0), fouls=(1, 1), at_table=1), colour(None, None),
        dict(foul="9", winner=0, end_reason=EndReason.TECHNICAL_LOSS, fouls=(1, 2)),
        id="10.5-10.6-second-foul-of-player-1",
    ),
]


@pytest.mark.parametrize(("start", "result", "expect"), SHOT_CASES)
def test_shot(start: FrameRules, result: ShotResult, expect: dict[str, Any]) -> None:
    shooter = start.player_at_table
    outcome = start.shot(result)
    assert outcome.player == shooter
    if "credited_by_shot" in expect:
        assert outcome.whites_credited == expect["credited_by_shot"]
    if "foul" in expect:
        assert [f.rule for f in outcome.fouls] == ([] if expect["foul"] is None
                                                   else [expect["foul"]])
        assert all(f.player == shooter and f.reason for f in outcome.fouls)
    if "respots" in expect:
        assert [(r.ball.value, r.count, r.rule, r.cause) for r in outcome.respots] == expect[
            "respots"
        ]
    for name in ("turn", "next_player", "choice_for", "winner", "end_reason"):
        if name in expect:
            assert getattr(outcome, name) == expect[name], name
    if "credited" in expect:
        assert start.credited == expect["credited"]
    if "fouls" in expect:
        assert start.fouls == expect["fouls"]
    # The frame's own state agrees with what the outcome said.
    assert start.over is outcome.frame_over
    assert start.winner == outcome.winner
    assert start.choice_for == outcome.choice_for
    if not outcome.frame_over:
        assert start.player_at_table == outcome.next_player
        assert start.break_done
    json.dumps(outcome.to_dict())  # plain JSON types


def test_end_rule_is_cited() -> None:
    won = frame(credited=(3, 0)).shot(colour(BANK, BANK_ROUTE))
    assert won.end_rule == "3.2"
    lost = frame(fouls=(1, 0)).record_foul(0, "12.4", "shot time exceeded")
    assert lost.end_rule == "10.5-10.6"
    assert lost.to_dict()["end_reason"] == "technical_loss"


def test_respot_instruction_reads_as_the_rules() -> None:
    outcome = frame(credited=(2, 0)).shot(colour(None, None, whites=2))
    text = [r.instruction for r in outcome.respots]
    assert text[0].startswith("Re-spot 2 white balls at the middle of the back short cushion")
    assert "(11.2)" in text[0] and "(11.3)" in text[0] and "(11.4)" in text[0]
    assert text[1].startswith("Re-spot the coloured ball on the back spot (11.1)")


def test_one_shot_is_one_foul_naming_every_breach() -> None:
    start = frame(credited=(3, 0))
    outcome = start.shot(colour(None, None, whites=1, referee_foul="push shot"))
    assert len(outcome.fouls) == 1
    reason = outcome.fouls[0].reason
    assert "(9)" in reason and "(5.6)" in reason and "push shot" in reason
    assert start.fouls == (1, 0)


# -- 10.4 choice, hand back, accept (I2) ------------------------------------------


def test_10_4_accept_keeps_the_opponent_at_the_table() -> None:
    start = frame(credited=(1, 0))
    start.shot(ShotResult(whites_potted=3))  # 5.6
    assert start.phase is Phase.CHOICE
    outcome = start.accept()
    assert (outcome.player, outcome.turn, outcome.next_player) == (1, Turn.STAYS, 1)
    assert start.phase is Phase.PLAY and start.player_at_table == 1
    assert start.shot(ShotResult(whites_potted=1)).whites_credited == 1
    assert start.credited == (1, 1)


def test_10_4_I2_hand_back_starts_a_visit_of_the_player_who_fouled() -> None:
    start = frame(credited=(1, 0))
    start.shot(ShotResult(whites_potted=3))
    outcome = start.hand_back()
    assert (outcome.player, outcome.turn, outcome.next_player) == (1, Turn.PASSES, 0)
    assert start.player_at_table == 0 and start.choice_for is None
    assert start.shot(ShotResult(whites_potted=1)).turn is Turn.STAYS
    assert start.credited == (2, 0)


def test_10_4_10_6_foul_hand_back_second_foul_is_technical_loss() -> None:
    start = frame(credited=(2, 0))
    first = start.shot(ShotResult(whites_potted=2))  # 5.6, first foul of player 0
    assert first.choice_for == 1 and not first.frame_over
    start.hand_back()
    second = start.record_foul(0, "12.4", "shot time exceeded")
    assert second.frame_over and second.winner == 1
    assert second.end_reason is EndReason.TECHNICAL_LOSS
    assert second.choice_for is None and second.turn is None  # I13
    assert start.credited == (2, 0)  # 5.9
    assert start.phase is Phase.OVER


@pytest.mark.parametrize(
    ("command", "message"),
    [
        pytest.param("hand_back", "no foul to hand back (10.4)", id="10.4-hand-back"),
        pytest.param("accept", "no foul to accept (10.4)", id="10.4-accept"),
    ],
)
@pytest.mark.parametrize("break_done", [False, True], ids=["on-break", "in-play"])
def test_10_4_choice_without_a_foul_is_refused(command: str, message: str,
                                               break_done: bool) -> None:
    start = frame(break_done=break_done)
    before = start.to_dict()
    with pytest.raises(RuleRefusal) as caught:
        getattr(start, command)()
    assert (caught.value.code, caught.value.rule) == ("no_foul_pending", "10.4")
    assert str(caught.value) == f"{command}: {message}"
    assert start.to_dict() == before


def test_10_4_shot_while_choice_pending_is_refused() -> None:
    start = frame()
    start.record_foul(0, "12.4", "shot time exceeded")
    before = start.to_dict()
    with pytest.raises(RuleRefusal) as caught:
        start.shot(ShotResult())
    assert (caught.value.code, caught.value.rule) == ("choice_pending", "10.4")
    assert start.to_dict() == before


def test_12_4_I12_time_foul_before_the_break_then_accept_opponent_breaks() -> None:
    start = frame(break_done=False)
    outcome = start.record_foul(0, "12.4", "break not played in time")
    assert (outcome.turn, outcome.next_player, outcome.choice_for) == (Turn.PASSES, 1, 1)
    start.accept()
    assert start.phase is Phase.BREAK and start.player_at_table == 1
    with pytest.raises(InvalidResult) as caught:
        start.shot(ShotResult())
    assert caught.value.code == "missing_legal_break"
    assert start.shot(on_break(whites_potted=1)).turn is Turn.STAYS
    assert start.credited == (0, 1)


def test_I12_foul_by_the_seated_player_keeps_the_shooter_at_the_table() -> None:
    start = frame(at_table=0)
    outcome = start.record_foul(1, "9", "touched a ball from the chair")
    assert (outcome.player, outcome.turn, outcome.next_player, outcome.choice_for) == (
        1, Turn.STAYS, 0, 0)
    assert start.fouls == (0, 1)


def test_I12_time_foul_while_choosing_passes_the_choice_back() -> None:
    start = frame()
    start.shot(ShotResult(whites_potted=4))  # player 0 fouls, player 1 chooses
    outcome = start.record_foul(1, "12.4", "shot time exceeded")
    assert (outcome.turn, outcome.next_player, outcome.choice_for) == (Turn.PASSES, 0, 0)
    assert start.fouls == (1, 1)
    assert start.hand_back().next_player == 1


# -- frame over, invalid reports ----------------------------------------------------


def _won_frame() -> FrameRules:
    start = frame(credited=(3, 0))
    start.shot(colour(BANK, BANK_ROUTE))
    return start


def _lost_frame() -> FrameRules:
    start = frame(fouls=(0, 1), at_table=1)
    start.record_foul(1, "12.4", "shot time exceeded")
    return start


@pytest.mark.parametrize("ended", [_won_frame, _lost_frame], ids=["3.2-won", "10.5-lost"])
def test_frame_over_refuses_everything(ended) -> None:
    start = ended()
    before = start.to_dict()
    assert COMMANDS[Phase.OVER] == frozenset()
    for attempt in (lambda: start.shot(ShotResult()),
                    lambda: start.record_foul(0, "12.4", "late")):
        with pytest.raises(InvalidResult) as caught:
            attempt()
        assert caught.value.code == "result_after_frame_end"
    for attempt in (start.accept, start.hand_back):
        with pytest.raises(RuleRefusal) as refused:
            attempt()
        assert refused.value.code == "frame_over"
    assert start.to_dict() == before


INVALID_CASES = [
    pytest.param(frame(credited=(3, 3)), lambda: ShotResult(whites_potted=2), "too_many_whites",
                 "only 1 whites are on the table", id="1.1-more-whites-than-on-the-table"),
    pytest.param(frame(), lambda: ShotResult(whites_potted=8), "too_many_whites", "8",
                 id="1.1-more-than-seven-whites"),
    pytest.param(frame(), lambda: ShotResult(whites_potted=-1), "bad_count", "-1",
                 id="5.5-negative-whites"),
    pytest.param(frame(), lambda: ShotResult(colour_potted="yes"), "bad_flag", "yes",
                 id="colour-potted-not-bool"),
    pytest.param(frame(break_done=False), lambda: ShotResult(), "missing_legal_break",
                 "legal_break", id="4.2-break-needs-legal-break"),
    pytest.param(frame(), lambda: ShotResult(legal_break=True), "legal_break_after_break",
                 "legal_break=True", id="4.2-legal-break-after-the-break"),
    pytest.param(frame(break_done=False),
                 lambda: ShotResult(colour_potted=True, legal_break=True, call=BANK,
                                    route=BANK_ROUTE),
                 "call_on_break", "4.4", id="4.4-call-on-the-break"),
    pytest.param(frame(), lambda: ShotResult(colour_potted=True, route=Route(None)),
                 "route_contradicts_result", "colour_potted=True",
                 id="7.3-route-contradicts-colour-potted"),
    pytest.param(frame(), lambda: ShotResult(route=BANK_ROUTE), "route_contradicts_result",
                 "bottom_left", id="7.3-route-pocket-without-colour-potted"),
    pytest.param(frame(), lambda: ShotResult(colour_potted=True, call=BANK), "missing_route",
                 "route", id="7.3-called-pot-without-route"),
    pytest.param(frame(), lambda: ShotResult(referee_foul=""), "bad_text", "referee_foul",
                 id="9-empty-referee-foul"),
]


@pytest.mark.parametrize(("start", "build", "code", "shown"), INVALID_CASES)
def test_invalid_report_is_refused_and_changes_nothing(start: FrameRules, build, code: str,
                                                       shown: str) -> None:
    before = start.to_dict()
    with pytest.raises(InvalidResult) as caught:
        start.shot(build())
    assert caught.value.code == code
    assert shown in str(caught.value)
    assert start.to_dict() == before


@pytest.mark.parametrize(
    ("args", "code"),
    [
        pytest.param((2, "12.4", "late"), "unknown_player", id="unknown-player"),
        pytest.param((True, "12.4", "late"), "unknown_player", id="bool-player"),
        pytest.param((0, "", "late"), "bad_text", id="empty-rule"),
        pytest.param((0, "12.4", "  "), "bad_text", id="empty-reason"),
    ],
)
def test_record_foul_validates(args: tuple[Any, str, str], code: str) -> None:
    start = frame()
    with pytest.raises(InvalidResult) as caught:
        start.record_foul(*args)
    assert caught.value.code == code
    assert start.fouls == (0, 0)


# -- serialisation --------------------------------------------------------------


def _states() -> list[FrameRules]:
    fresh = FrameRules(breaker=1)
    choosing = frame(credited=(1, 2))
    choosing.shot(ShotResult(whites_potted=3))
    return [fresh, choosing, frame(credited=(3, 2), fouls=(1, 0)), _won_frame(), _lost_frame()]


@pytest.mark.parametrize("state", _states(), ids=["fresh", "choice", "mid", "won", "lost"])
def test_frame_round_trips_through_json(state: FrameRules) -> None:
    data = json.loads(json.dumps(state.to_dict()))
    copy = FrameRules.from_dict(data)
    assert copy == state
    assert copy.phase is state.phase


@pytest.mark.parametrize(
    "patch",
    [
        pytest.param({"credited": [4, 0]}, id="5.3-four-credited"),
        pytest.param({"fouls": [2, 0]}, id="10.5-two-fouls-frame-not-over"),
        pytest.param({"winner": 0}, id="winner-without-reason"),
        pytest.param({"choice_for": 1}, id="choice-for-player-not-at-table"),
        pytest.param({"end_reason": "boredom", "winner": 0}, id="unknown-end-reason"),
        pytest.param({"break_done": "no"}, id="break-done-not-bool"),
        pytest.param({"extra": 1}, id="unknown-field"),
    ],
)
def test_impossible_state_is_refused(patch: dict[str, Any]) -> None:
    data = {**frame().to_dict(), **patch}
    with pytest.raises(InvalidResult) as caught:
        FrameRules.from_dict(data)
    assert caught.value.code == "bad_state"


def test_shot_result_round_trips() -> None:
    result = colour(BANK, BANK_ROUTE, referee_foul="push")
    assert ShotResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result


def test_outcome_is_validated() -> None:
    with pytest.raises(InvalidResult):
        Outcome(player=0)  # neither a turn nor a winner
    with pytest.raises(InvalidResult):
        Outcome(player=0, turn=Turn.STAYS, next_player=0, winner=0,
                end_reason=EndReason.LEGAL_COLOUR_POT)
