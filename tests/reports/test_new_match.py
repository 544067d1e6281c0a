"""``new_match``: the table's next match, the previous one kept on record (the core, no I/O)."""

from __future__ import annotations

from typing import Any

import pytest

from clock_service.core.clock import TableClock
from clock_service.core.commands import (
    Extension,
    Foul,
    NewFrame,
    NewMatch,
    Pause,
    Shot,
    Start,
    Undo,
    parse_command,
)
from clock_service.core.errors import InvalidCommand, RuleRefusal

T0 = 1_000_000.0
QUICK = {"shot_ms": 3000, "floor_ms": 2000, "step_ms": 500, "extension_ms": 2000}


def played_out(race_to: int = 1) -> TableClock:
    """A match of one frame won by Petrov on Ivanov's two fouls (10.5): over."""
    clock = TableClock(["Ivanov", "Petrov"], race_to=race_to, profile=None)
    clock.open(T0)
    clock.handle(Foul(reason="a"), T0 + 1)
    clock.handle(Foul(reason="b", player=0), T0 + 2)
    return clock


def test_a_match_that_is_over_allows_only_undo_and_new_match() -> None:
    clock = played_out()
    assert clock.match.over
    with pytest.raises(RuleRefusal) as refused:
        clock.handle(NewFrame(), T0 + 3)
    assert refused.value.code == "match_over"
    events = clock.handle(NewMatch(players=["Sidorov", "Petrov"], event="Cup",
                                   referee="Orlov"), T0 + 4)
    assert [e.type for e in events] == ["match.started", "frame.started"]
    assert dict(events[0].data) == {
        "number": 2, "players": ["Sidorov", "Petrov"], "timer": True,
        "profile": clock.profile.to_dict(), "first_breaker": 0, "race_to": 1,
        "event": "Cup", "referee": "Orlov"}
    state = clock.state(T0 + 4)
    assert (state["frame"], state["match"]["number"], state["players"], state["fouls"],
            state["extensions_left"], state["frames_won"], state["phase"], state["player"]) == (
        1, 2, ["Sidorov", "Petrov"], [0, 0], [1, 1], [0, 0], "ready", 0)
    assert not clock.match.over


def test_the_undo_history_ends_with_the_match() -> None:
    clock = played_out()
    clock.handle(NewMatch(), T0 + 4)
    with pytest.raises(RuleRefusal) as refused:
        clock.handle(Undo(), T0 + 5)
    assert refused.value.code == "nothing_to_undo"


@pytest.mark.parametrize(("fields", "expected"), [
    ({}, {"players": ("Ivanov", "Petrov"), "timer": True, "race_to": 3, "first_breaker": 1,
          "shot_ms": 3000}),
    ({"players": [" A ", "B"]}, {"players": ("A", "B")}),
    ({"timer": False}, {"timer": False}),
    ({"race_to": None}, {"race_to": None}),
    ({"race_to": 5}, {"race_to": 5}),
    ({"first_breaker": 0}, {"first_breaker": 0}),
    ({"profile": {"shot_ms": 40000}}, {"shot_ms": 40000}),  # over the rules' defaults
], ids=["nothing: all kept", "players", "timer", "open-ended", "race", "breaker", "profile"])
def test_fields_left_out_keep_the_previous_match(fields: dict[str, Any],
                                                 expected: dict[str, Any]) -> None:
    clock = TableClock(["Ivanov", "Petrov"], race_to=3, first_breaker=1,
                       profile=None)
    clock.profile = clock.profile.from_partial(QUICK)
    clock.open(T0)
    clock.handle(parse_command({"command": "new_match", "reason": "postponed", **fields}),
                 T0 + 1)
    seen = {"players": clock.players, "timer": clock.timer, "race_to": clock.match.race_to,
            "first_breaker": clock.first_breaker, "shot_ms": clock.profile.shot_ms}
    for key, value in expected.items():
        assert seen[key] == value, key
    assert clock.player == clock.first_breaker  # I3: its first breaker breaks frame 1


def test_a_match_in_play_can_be_left_for_a_new_one_but_not_while_a_shot_is_timed() -> None:
    clock = TableClock(["Ivanov", "Petrov"], race_to=3)
    clock.open(T0)
    clock.handle(Start(), T0 + 1)
    with pytest.raises(RuleRefusal) as refused:
        clock.handle(NewMatch(), T0 + 2)
    assert refused.value.code == "clock_counting"
    clock.handle(Pause(), T0 + 3)
    with pytest.raises(RuleRefusal) as refused:
        clock.handle(NewMatch(), T0 + 4)
    assert refused.value.code == "clock_counting"
    clock.handle(Shot(), T0 + 5)
    clock.handle(Extension(), T0 + 6)
    with pytest.raises(InvalidCommand) as missing:  # unfinished: the referee says why (D9)
        clock.handle(NewMatch(), T0 + 7)
    assert missing.value.code == "missing_reason"
    assert clock.state(T0 + 7)["extensions_left"] == [0, 1]  # nothing changed
    events = clock.handle(NewMatch(reason="a player fell ill"), T0 + 7)
    assert [e.type for e in events] == ["match.started", "frame.started"]
    assert events[0].data["reason"] == "a player fell ill"
    assert clock.state(T0 + 7)["extensions_left"] == [1, 1]


# Before anything: a table made before its first match is known (issue 36: the draw's first
# match on it needed a reason). Each step leaves something standing in the match.
_BEGUN: dict[str, list[Any]] = {
    "nothing played": [],
    "started and undone": [Start(), Undo()],
    "a shot": [Start(), Shot()],
    "a frame in progress": [Start(), Shot()],
    "an extension before the break": [Extension()],
    "a foul before the break": [Foul(reason="a")],
}


@pytest.mark.parametrize(("situation", "needs_reason"), [
    ("race won", False),
    ("race in play, between frames", True),
    ("open-ended, between frames", False),
    ("open-ended, a frame in progress", True),
    ("race, nothing played", False),
    ("open-ended, nothing played", False),
    ("race, started and undone", False),
    ("race, a shot", True),
    ("race, an extension before the break", True),
    ("race, a foul before the break", True),
    ("open-ended, a foul before the break", True),
])
def test_a_reason_is_needed_only_to_leave_an_unfinished_match(situation: str,
                                                              needs_reason: bool) -> None:
    race_to = None if situation.startswith("open-ended") else (1 if situation == "race won"
                                                               else 2)
    clock = TableClock(["Ivanov", "Petrov"], race_to=race_to)
    clock.open(T0)
    if "between frames" in situation or situation == "race won":
        clock.handle(Foul(reason="a"), T0 + 1)
        clock.handle(Foul(reason="b", player=0), T0 + 2)  # 10.5: the frame is over
    for step in _BEGUN.get(situation.partition(", ")[2], []):
        clock.handle(step, T0 + 1)
    if needs_reason:
        with pytest.raises(InvalidCommand) as missing:
            clock.handle(NewMatch(), T0 + 3)
        assert missing.value.code == "missing_reason"
    else:
        events = clock.handle(NewMatch(reason="ignored"), T0 + 3)
        assert "reason" not in events[0].data  # nothing was left unfinished


@pytest.mark.parametrize(("fields", "code"), [
    ({"players": ["A"]}, "invalid_players"),
    ({"players": ["A", ""]}, "invalid_players"),
    ({"players": "AB"}, "invalid_players"),
    ({"players": ["A", "B" * 61]}, "invalid_players"),
    ({"timer": "yes"}, "invalid_field"),
    ({"profile": {"shot_ms": -1}}, "invalid_profile"),
    ({"profile": {"nonsense": 1}}, "invalid_profile"),
    ({"profile": 5}, "invalid_profile"),
    ({"race_to": 0}, "invalid_race_to"),
    ({"race_to": True}, "invalid_race_to"),
    ({"first_breaker": 2}, "invalid_field"),
    ({"first_breaker": None}, "invalid_field"),
    ({"event": 5}, "invalid_field"),
    ({"referee": "x" * 201}, "invalid_field"),
    ({"winner": 1}, "unknown_field"),
])
def test_malformed_new_match_is_refused_before_anything_changes(fields: dict[str, Any],
                                                                code: str) -> None:
    with pytest.raises(InvalidCommand) as refused:
        parse_command({"command": "new_match", **fields})
    assert refused.value.code == code


def test_the_match_number_survives_a_restart_and_old_snapshots_read_as_match_1() -> None:
    clock = played_out()
    clock.handle(NewMatch(), T0 + 4)
    again = TableClock.from_dict(clock.to_dict())
    assert again.match_number == 2 and again.state(T0)["match"]["number"] == 2
    old = clock.to_dict()
    del old["match_number"]
    assert TableClock.from_dict(old).match_number == 1
