"""The strict call as data and its judge: 6.3, 7.1-7.5, 8.1-8.5, I10, I11."""

from __future__ import annotations

import pytest

from clock_service.core.rules import (
    Call,
    CallVerdict,
    Contact,
    CueBall,
    Cushion,
    InvalidResult,
    Pocket,
    Route,
    ShotType,
    judge_call,
    qualifies_as_early_pot,
)

# -- vocabulary ----------------------------------------------------------------


def test_pocket_names_are_stable() -> None:
    assert [p.value for p in Pocket] == [
        "top_left", "top_right", "middle_left", "middle_right", "bottom_left", "bottom_right",
    ]
    assert [c.value for c in Cushion] == [
        "top", "bottom", "left_top", "left_bottom", "right_top", "right_bottom",
    ]


@pytest.mark.parametrize(
    ("build", "code", "shown"),
    [
        pytest.param(lambda: Pocket("corner"), "unknown_pocket", "top_left", id="7.2-pocket"),
        pytest.param(lambda: Call("corner"), "unknown_pocket", "bottom_right",
                     id="7.2-call-pocket"),
        pytest.param(lambda: Call("top_left", ["head"]), "unknown_cushion", "left_top",
                     id="7.2-cushion"),
        pytest.param(lambda: Call("top_left", shot_type="jump"), "unknown_shot_type",
                     "early_cushion", id="7.2-shot-type"),
        pytest.param(lambda: Call("top_left", contacts=["cue>red"]), "unknown_ball", "white1",
                     id="7.2-ball"),
        pytest.param(lambda: Call("top_left", contacts=["cue>colour>white1"]), "bad_contact",
                     "striker>struck", id="7.2-contact-shape"),
        pytest.param(lambda: Call("top_left", contacts=["colour>colour"]), "contact_with_itself",
                     "colour", id="7.2-contact-itself"),
        pytest.param(lambda: Call("top_left", cushions="top"), "bad_sequence", "top",
                     id="7.2-cushions-not-a-list"),
        pytest.param(lambda: Route("top_left", cue_ball="red"), "unknown_cue_ball", "colour",
                     id="8.5-cue-ball"),
        pytest.param(lambda: Route("top_left", ["cue>colour"], cue_ball="colour"),
                     "cue_is_colour", "8.5", id="8.5-cue-name-with-colour-cue-ball"),
        pytest.param(lambda: Route("top_left", ["cue>colour"], unannounced_contact=1),
                     "bad_flag", "1", id="7.4-flag-type"),
        pytest.param(lambda: Route(None, ["cue>colour", "top"], jaw_before_drop=True),
                     "jaw_without_drop", "did not drop", id="7.5-jaw-without-drop"),
        pytest.param(lambda: Route("top_left", ["cue>colour", "bottom"], jaw_before_drop=True),
                     "jaw_not_next_to_pocket", "left_top, top", id="7.5-jaw-far-cushion"),
        pytest.param(lambda: Route("top_left", ["left_top", "cue>colour"], jaw_before_drop=True),
                     "jaw_not_next_to_pocket", "cue>colour", id="7.5-jaw-last-is-contact"),
    ],
)
def test_invalid_call_or_route_is_refused_with_code(build, code: str, shown: str) -> None:
    with pytest.raises(InvalidResult) as caught:
        build()
    assert caught.value.code == code
    assert shown in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_strings_are_converted_to_the_vocabulary() -> None:
    call = Call("middle_right", ["left_top", "bottom"], ["cue>white1", ("white1", "colour")],
                "early_combination")
    assert call.pocket is Pocket.MIDDLE_RIGHT
    assert call.cushions == (Cushion.LEFT_TOP, Cushion.BOTTOM)
    assert call.contacts == (Contact("cue", "white1"), Contact("white1", "colour"))
    assert call.shot_type is ShotType.EARLY_COMBINATION
    route = Route("middle_right", ["cue>white1", "white1>colour", "left_top"])
    assert route.cushions == (Cushion.LEFT_TOP,)
    assert route.contacts == call.contacts
    assert route.cue_ball is CueBall.WHITE


def test_call_and_route_are_frozen() -> None:
    call = Call("top_left")
    with pytest.raises(AttributeError):
        call.pocket = Pocket.TOP_RIGHT  # type: ignore[misc]


@pytest.mark.parametrize(
    "value",
    [
        Call("top_left"),
        Call("bottom_right", ["top", "left_bottom"], ["cue>white1", "white1>colour"],
             "early_combination"),
    ],
)
def test_call_round_trips_through_plain_dict(value: Call) -> None:
    assert Call.from_dict(value.to_dict()) == value


@pytest.mark.parametrize(
    "value",
    [
        Route(None),
        Route("top_left", ["colour>white1", "right_top", "left_top"], cue_ball="colour",
              unannounced_contact=True, jaw_before_drop=True),
    ],
)
def test_route_round_trips_through_plain_dict(value: Route) -> None:
    assert Route.from_dict(value.to_dict()) == value


def test_from_dict_refuses_unknown_fields() -> None:
    with pytest.raises(InvalidResult) as caught:
        Call.from_dict({"pocket": "top_left", "speed": 3})
    assert caught.value.code == "unknown_field"
    assert "speed" in str(caught.value)


# -- judge_call: 7.3, 7.4, 7.5, shot type -----------------------------------------

BANK = Call("bottom_left", ["right_bottom"], ["cue>colour"])

JUDGE_CASES = [
    pytest.param(BANK, Route("bottom_left", ["cue>colour", "right_bottom"]), None,
                 id="7.3-exact-route-fulfilled"),
    pytest.param(BANK, Route("bottom_right", ["cue>colour", "right_bottom"]), "7.3",
                 id="7.3-wrong-pocket"),
    pytest.param(BANK, Route(None, ["cue>colour", "right_bottom"]), "7.3",
                 id="7.3-colour-not-potted"),
    pytest.param(BANK, Route("bottom_left", ["cue>colour"]), "7.3",
                 id="7.3-called-cushion-missed"),
    pytest.param(Call("top_left", ["bottom", "right_top"], ["cue>colour"]),
                 Route("top_left", ["cue>colour", "right_top", "bottom"]), "7.3",
                 id="7.3-cushions-in-wrong-order"),
    pytest.param(Call("top_left", [], ["cue>white1", "white1>colour"]),
                 Route("top_left", ["white1>colour", "cue>white1"]), "7.3",
                 id="7.3-contacts-in-wrong-order"),
    pytest.param(BANK, Route("bottom_left", ["cue>colour", "right_bottom", "top"]), "7.4",
                 id="7.4-unannounced-cushion"),
    pytest.param(BANK, Route("bottom_left", ["cue>colour", "white1>colour", "right_bottom"]),
                 "7.4", id="7.4-unannounced-ball-contact"),
    pytest.param(BANK, Route("bottom_left", ["cue>colour", "right_bottom"],
                             unannounced_contact=True), "7.4",
                 id="7.4-referee-flags-unannounced-contact"),
    pytest.param(BANK, Route("bottom_left", ["cue>colour", "right_bottom", "left_bottom"],
                             jaw_before_drop=True), None,
                 id="7.5-jaw-touch-before-drop-ignored"),
    pytest.param(Call("bottom_left", ["right_bottom", "bottom"], ["cue>colour"]),
                 Route("bottom_left", ["cue>colour", "right_bottom", "bottom"],
                       jaw_before_drop=True), None,
                 id="7.5-jaw-touch-named-in-call-also-fulfils"),
    pytest.param(BANK, Route("bottom_left", ["cue>colour", "right_bottom", "left_bottom"]),
                 "7.4", id="7.5-same-touch-not-at-drop-is-unannounced"),
    pytest.param(Call("bottom_left", ["right_bottom"], ["cue>colour"], "early_cushion"),
                 Route("bottom_left", ["cue>colour", "right_bottom"]), None,
                 id="8.1-8.2-early-cushion-call-fulfilled"),
    pytest.param(Call("bottom_left", [], ["cue>colour"], "early_cushion"),
                 Route("bottom_left", ["cue>colour"]), "8.2",
                 id="8.1-early-cushion-call-without-cushion"),
    pytest.param(Call("bottom_left", [], ["cue>colour"], "early_combination"),
                 Route("bottom_left", ["cue>colour"]), "8.3",
                 id="8.3-early-combination-call-with-one-white"),
    pytest.param(Call("bottom_left", [], ["cue>white1", "white1>colour"], "early_combination"),
                 Route("bottom_left", ["cue>white1", "white1>colour"]), None,
                 id="8.3-8.4-early-combination-call-fulfilled"),
]


# D3: the cue ball's first contact with an object ball is the shot itself: the call (and,
# for the direct contact, the route) may name it or leave it out; only the contacts after
# it are the combination of 7.2.
IMPLIED_CASES = [
    pytest.param(Call("bottom_left", ["right_bottom"]),
                 Route("bottom_left", ["cue>colour", "right_bottom"]), None,
                 id="D3-7.2-plain-call-without-the-direct-contact-fulfilled"),
    pytest.param(Call("bottom_left", ["right_bottom"]), Route("bottom_left", ["right_bottom"]),
                 None, id="D3-direct-contact-left-out-of-call-and-route"),
    pytest.param(BANK, Route("bottom_left", ["right_bottom"]), None,
                 id="D3-direct-contact-named-in-call-implied-in-route"),
    pytest.param(Call("top_left"), Route("top_left", ["cue>colour"]), None,
                 id="D3-direct-pot-call-names-only-the-pocket"),
    pytest.param(Call("top_left"), Route("top_left"), None,
                 id="D3-direct-pot-empty-route"),
    pytest.param(Call("bottom_left", ["right_bottom"], shot_type="early_cushion"),
                 Route("bottom_left", ["right_bottom"]), None,
                 id="D3-8.1-8.2-early-cushion-direct-contact-implied"),
    pytest.param(Call("bottom_left", ["right_bottom"], shot_type="early_cushion"),
                 Route("bottom_left", ["cue>colour", "right_bottom"]), None,
                 id="D3-8.1-8.2-early-cushion-call-without-contact"),
    pytest.param(Call("top_left", [], ["white1>colour"], "early_combination"),
                 Route("top_left", ["cue>white1", "white1>colour"]), None,
                 id="D3-8.3-combination-named-after-the-cue-balls-first-contact"),
    pytest.param(Call("top_left"), Route("top_left", ["cue>white1", "white1>colour"]), "7.4",
                 id="D3-7.4-a-combination-is-never-implied"),
    pytest.param(Call("top_left", [], ["white1>colour"]),
                 Route("top_left", ["cue>white1", "white2>white1", "white1>colour"]), "7.4",
                 id="D3-7.4-only-the-first-contact-is-implied"),
    pytest.param(Call("top_left", [], ["cue>colour", "colour>white1"]),
                 Route("top_left", ["cue>colour"]), "7.3",
                 id="D3-7.3-a-called-contact-that-did-not-happen"),
    pytest.param(Call("top_left", ["right_top"], [], "early_cushion"),
                 Route("top_left", ["colour>white1", "right_top"], cue_ball="colour"), None,
                 id="D3-8.5-colour-cue-balls-first-contact-implied-in-the-call"),
    pytest.param(Call("top_left", ["right_top"], [], "early_cushion"),
                 Route("top_left", ["right_top"], cue_ball="colour"), "8.2",
                 id="D3-8.5-8.2-nothing-implied-for-a-colour-cue-ball"),
    pytest.param(Call("bottom_left", ["right_bottom"]),
                 Route("bottom_left", ["white1>colour", "right_bottom"]), "7.4",
                 id="D3-7.4-a-white-striking-the-colour-is-not-the-cue-ball"),
]


@pytest.mark.parametrize(("call", "route", "failed_rule"), JUDGE_CASES + IMPLIED_CASES)
def test_judge_call(call: Call, route: Route, failed_rule: str | None) -> None:
    verdict = judge_call(call, route)
    assert verdict.fulfilled is (failed_rule is None)
    assert verdict.rule == failed_rule
    assert verdict.message


def test_judge_message_names_what_differs() -> None:
    verdict = judge_call(BANK, Route("bottom_right", ["cue>colour", "right_bottom"]))
    assert "bottom_left" in verdict.message and "bottom_right" in verdict.message
    verdict = judge_call(BANK, Route("bottom_left", ["cue>colour", "right_bottom", "top"]))
    assert "[top]" in verdict.message


def test_verdict_is_validated() -> None:
    with pytest.raises(InvalidResult):
        CallVerdict(True, "7.3")
    with pytest.raises(InvalidResult):
        CallVerdict(False)


# -- qualifies_as_early_pot: 8.1-8.5, I10 ----------------------------------------

EARLY_CASES = [
    pytest.param(Route("top_left", ["cue>colour", "right_top"]), (True, "8.1-8.2"),
                 id="8.1-8.2-cushion-after-ball-contact"),
    pytest.param(Route("top_left", ["cue>colour", "right_top", "bottom"]), (True, "8.1-8.2"),
                 id="8.1-several-cushions"),
    pytest.param(Route("top_left", ["colour>white1", "right_top"], cue_ball="colour"),
                 (True, "8.1-8.2"), id="8.5-colour-cue-ball-cushion-after-contact"),
    pytest.param(Route("top_left", ["right_top", "colour>white1"], cue_ball="colour"),
                 (False, "8.2"), id="8.2-refused-cushion-before-ball-contact"),
    pytest.param(Route("top_left", ["right_top"], cue_ball="colour"), (False, "8.2"),
                 id="8.2-refused-cushion-without-ball-contact"),
    pytest.param(Route("top_left", ["cue>colour"]), (False, "8.3"),
                 id="8.1-refused-direct-pot-no-cushion"),
    pytest.param(Route("top_left", ["cue>colour", "left_top"], jaw_before_drop=True),
                 (False, "8.3"), id="7.5-jaw-touch-is-not-an-early-cushion"),
    pytest.param(Route("top_left", ["cue>white1", "white1>colour"]), (True, "8.3-8.4"),
                 id="8.3-8.4-combination-two-whites-cue-ball-counts"),
    pytest.param(Route("top_left", ["white1>white2", "white2>colour"], cue_ball="white"),
                 (True, "8.3-8.4"), id="8.3-combination-two-object-whites"),
    pytest.param(Route("top_left", ["colour>white1", "white1>white2", "white2>colour"],
                       cue_ball="colour"),
                 (True, "8.3-8.4"), id="8.5-colour-cue-ball-combination-two-whites"),
    pytest.param(Route("top_left", ["colour>white1", "white1>colour"], cue_ball="colour"),
                 (False, "8.3"), id="8.3-refused-combination-one-white"),
    pytest.param(Route("top_left", ["cue>white1"]), (False, "8.3"),
                 id="8.3-refused-whites-without-the-colour"),
    pytest.param(Route("top_left", ["right_top"]), (True, "8.1-8.2"),
                 id="D3-8.1-8.2-white-cue-ball-direct-contact-implied"),
    pytest.param(Route("top_left", ["left_top"], jaw_before_drop=True), (False, "8.3"),
                 id="D3-7.5-implied-contact-then-only-a-jaw-touch-is-no-early-pot"),
]


@pytest.mark.parametrize(("route", "expected"), EARLY_CASES)
def test_qualifies_as_early_pot(route: Route, expected: tuple[bool, str]) -> None:
    assert tuple(qualifies_as_early_pot(route)) == expected


def test_implied_contact_is_only_for_a_white_cue_ball_without_contacts() -> None:
    assert Route("top_left", ["right_top"]).implied_contact == Contact("cue", "colour")
    assert Route("top_left", ["right_top"]).judged_path == (Contact("cue", "colour"),
                                                            Cushion.RIGHT_TOP)
    assert Route("top_left", ["cue>white1"]).implied_contact is None
    assert Route("top_left", ["right_top"], cue_ball="colour").implied_contact is None
    # The recorded path is what the referee said: the implied contact is not written into it.
    assert Route("top_left", ["right_top"]).to_dict()["path"] == ["right_top"]
