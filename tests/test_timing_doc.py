"""docs/timing.md's "The call and the result as the referee says them" is exact: every call there
is a valid `call` fulfilled by its route (7.3, D3), every command is a valid command, and
the commands play out on a real clock as the text says."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from clock_service.core.clock import TableClock
from clock_service.core.commands import AnnounceCall, parse_command
from clock_service.core.rules import Route, ShotType, judge_call, qualifies_as_early_pot

DOC = Path(__file__).resolve().parents[1] / "docs" / "timing.md"
SECTION = "### The call and the result as the referee says them"


def _tables() -> tuple[list[list[str]], list[list[str]]]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index(SECTION):]
    section = section[:section.index("\n## ", 1) if "\n## " in section else len(section)]
    rows = [[cell.strip() for cell in line.strip().strip("|").split(" | ")]
            for line in section.splitlines() if line.startswith("| \"")]
    calls = [r for r in rows if len(r) == 3]
    commands = [r for r in rows if len(r) == 2]
    return calls, commands


def _json(cell: str) -> Any:
    match = re.fullmatch(r"`(\{.*\})`", cell)
    assert match, cell
    return json.loads(match.group(1))


CALLS, COMMANDS = _tables()


def test_the_section_has_the_common_calls_and_commands() -> None:
    said = [c[0] for c in CALLS]
    assert '"Bottom left pocket, off the right cushion"' in said
    assert len(CALLS) >= 6 and len(COMMANDS) >= 8


@pytest.mark.parametrize("row", CALLS, ids=[r[0][:40] for r in CALLS])
def test_each_call_is_valid_and_its_route_fulfils_it(row: list[str]) -> None:
    said, call_cell, route_cell = row
    command = parse_command({"command": "call", **_json(call_cell)})
    assert isinstance(command, AnnounceCall)
    route = Route.from_dict(_json(route_cell))
    verdict = judge_call(command.call, route)
    assert verdict.fulfilled, (said, verdict.message)
    if command.call.shot_type is not ShotType.NORMAL:  # an early pot (6.2, section 8)
        assert qualifies_as_early_pot(route).qualifies, said


def test_the_first_row_is_the_issue_example_exactly() -> None:
    said, call_cell, _ = CALLS[0]
    assert said == '"Bottom left pocket, off the right cushion"'
    assert _json(call_cell) == {"pocket": "bottom_left", "cushions": ["right_bottom"]}


@pytest.mark.parametrize("row", COMMANDS, ids=[r[0][:40] for r in COMMANDS])
def test_each_command_is_valid(row: list[str]) -> None:
    payload = _json(row[1])
    command = parse_command(payload)  # raises on an invalid command
    assert command.name == payload["command"], (row[0], command)
    # Every field the doc shows is one the command takes (none silently dropped).
    assert not set(payload) - {"command"} - set(vars(command)), (row[0], vars(command))


def test_the_commands_play_out_on_a_clock() -> None:
    """The result rows in a plausible frame: each accepted where the text puts it."""
    by_said = {said: _json(cell) for said, cell in COMMANDS}
    clock = TableClock(["Ivanov", "Petrov"], timer=False)
    clock.open(0.0)

    def send(payload: dict[str, Any]) -> list[str]:
        return [e.type for e in clock.handle(parse_command(payload), 0.0)]

    assert send(by_said['"Legal break, two whites in"']) == ["shot.result"]
    assert send(by_said['"One white in, double hit"'])[:2] == ["shot.result", "foul"]
    assert send({"command": "hand_back"}) == ["turn"]  # Ivanov again, 2 credited
    send({"command": "result", "whites_potted": 1})  # 3 credited
    send({"command": "call", "pocket": "bottom_left", "cushions": ["right_bottom"]})
    won = send(by_said['"Coloured ball in, as called" (after a `call`)'])
    assert won == ["shot.result", "frame.ended"]
    assert clock.frame_end_reason == "legal_colour_pot"
    send({"command": "new_frame"})
    assert send(by_said['"Illegal break" (4.3)'])[:2] == ["shot.result", "foul"]
    assert send(by_said['"Frame to Ivanov: Petrov withdrew" (a frame in progress)'])[0] == (
        "frame.ended")
