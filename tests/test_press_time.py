"""The command envelope (TEAM convention 1): ``at`` (press time), ``by``, ``source``.

Table-driven against the pure core with the time given by the test, then once over HTTP.
A press carries the instant it happened at the table; the core refuses it when it is
stale (409 stale_press, issue 10 defect 8: a press reported lost was applied 6 s later)
or from the future (422), and applies start/shot/pause/resume at
``max(last step, min(now, at))`` after the due expiry at ``now`` (I17).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from clock_service.core.clock import TableClock
from clock_service.core.commands import (
    PRESS_FUTURE_MS,
    PRESS_STALE_MS,
    Command,
    Extension,
    Pause,
    Resume,
    Shot,
    Start,
    Turn,
    Undo,
    parse_command,
)
from clock_service.core.errors import InvalidCommand, RuleRefusal

T0 = 1_000_000.0
LIMIT = 35_000


def new_clock() -> TableClock:
    clock = TableClock(["Ivanov", "Petrov"])
    clock.open(T0)
    return clock


def run(clock: TableClock, steps: list[tuple[Command, float]]) -> list[Any]:
    events: list[Any] = []
    for command, now in steps:
        events = clock.handle(command, now)
    return events


# (steps before, the command with its press time, arrival, expected phase, remaining_ms
#  in its clock event, deadline of the clock after it or None)
CASES = [
    pytest.param([], Start(at=T0 + 700), T0 + 1000, "running", LIMIT, T0 + 700 + LIMIT,
                 id="start-300ms-late-counts-from-the-press"),
    pytest.param([(Start(), T0)], Shot(at=T0 + 9_700), T0 + 10_000, "ready", LIMIT - 9_700,
                 None, id="shot-is-timed-at-the-press"),
    pytest.param([(Start(), T0)], Pause(at=T0 + 4_200), T0 + 5_000, "paused", LIMIT - 4_200,
                 None, id="pause-freezes-the-time-at-the-press"),
    pytest.param([(Start(), T0), (Pause(), T0 + 5_000)], Resume(at=T0 + 8_000), T0 + 8_500,
                 "running", LIMIT - 5_000, T0 + 8_000 + LIMIT - 5_000,
                 id="resume-counts-from-the-press"),
    pytest.param([(Start(), T0 + 1_000)], Shot(at=T0 + 500), T0 + 1_200, "ready", LIMIT, None,
                 id="never-before-the-step-it-follows"),
    pytest.param([], Start(at=T0 + 1_900), T0 + 1_000, "running", LIMIT, T0 + 1_000 + LIMIT,
                 id="a-little-ahead-is-now"),
    pytest.param([], Start(at=T0 + 3_000 - PRESS_STALE_MS), T0 + 3_000, "running", LIMIT,
                 T0 + 3_000 - PRESS_STALE_MS + LIMIT, id="exactly-2s-old-still-counts"),
    pytest.param([(Start(), T0)], Turn(at=T0 + 3_000), T0 + 4_000, "ready", LIMIT - 4_000,
                 None, id="turn-is-not-timed-it-stops-at-arrival"),
    pytest.param([(Start(), T0)], Extension(at=T0 + 3_000), T0 + 4_000, "running",
                 LIMIT + 15_000 - 4_000, T0 + LIMIT + 15_000,
                 id="extension-adds-to-the-deadline-whatever-at"),
]


@pytest.mark.parametrize(("before", "command", "now", "phase", "remaining", "deadline"), CASES)
def test_timed_steps_happen_at_the_press(before: list[tuple[Command, float]], command: Command,
                                         now: float, phase: str, remaining: int,
                                         deadline: float | None) -> None:
    clock = new_clock()
    run(clock, before)
    events = clock.handle(command, now)
    assert clock.phase == phase
    clock_events = [e for e in events if e.type.startswith("clock.")]
    assert clock_events[0].data["remaining_ms"] == remaining, clock_events
    assert clock.deadline == deadline
    # the press is recorded in every event the command made
    assert all(e.press_at == command.at and e.by == "referee" for e in events), events


@pytest.mark.parametrize("age", [PRESS_STALE_MS + 1, 6_000])
def test_a_stale_press_is_refused_and_changes_nothing(age: float) -> None:
    clock = new_clock()
    clock.handle(Start(), T0)
    before = clock.to_dict()
    with pytest.raises(RuleRefusal) as info:
        clock.handle(Shot(at=T0 + 10_000 - age), T0 + 10_000)
    assert info.value.code == "stale_press" and info.value.events == []
    assert f"{age:.0f} ms old" in info.value.message
    assert clock.to_dict() == before


@pytest.mark.parametrize("ahead", [PRESS_FUTURE_MS + 1, 60_000])
def test_a_press_from_the_future_is_malformed(ahead: float) -> None:
    clock = new_clock()
    before = clock.to_dict()
    with pytest.raises(InvalidCommand) as info:
        clock.handle(Start(at=T0 + ahead), T0)
    assert info.value.code == "press_in_future"
    assert clock.to_dict() == before


def test_a_press_before_the_deadline_arriving_after_it_is_too_late_i17() -> None:
    clock = new_clock()
    clock.handle(Start(), T0)
    deadline = T0 + LIMIT
    with pytest.raises(RuleRefusal) as info:
        clock.handle(Shot(at=deadline - 200, source="button"), deadline + 10)
    assert info.value.code == "too_late"
    # the expiry was applied at arrival first, and it is the clock's, not the press's
    assert [e.type for e in info.value.events] == ["clock.expired", "foul", "turn"]
    assert all(e.by is None and e.source is None for e in info.value.events)
    assert clock.phase == "expired"


def test_a_stale_press_after_the_deadline_still_publishes_the_expiry() -> None:
    clock = new_clock()
    clock.handle(Start(), T0)
    with pytest.raises(RuleRefusal) as info:
        clock.handle(Shot(at=T0 + 30_000), T0 + LIMIT + 3_000)
    assert info.value.code == "stale_press"
    assert [e.type for e in info.value.events][:1] == ["clock.expired"]


def test_resume_pressed_long_enough_ago_expires_at_once() -> None:
    clock = new_clock()
    clock.handle(Start(), T0)
    clock.handle(Pause(), T0 + LIMIT - 500)  # 500 ms left
    events = clock.handle(Resume(at=T0 + 50_000), T0 + 50_900)
    assert [e.type for e in events][:2] == ["clock.resumed", "clock.expired"]
    assert events[1].data["deadline"] == T0 + 50_500
    assert events[0].by == "referee" and events[1].by is None


def test_undo_of_a_timed_shot_gives_back_the_time_at_the_press() -> None:
    clock = new_clock()
    clock.handle(Start(), T0)
    clock.handle(Shot(at=T0 + 10_000), T0 + 11_000)
    events = clock.handle(Undo(), T0 + 15_000)
    assert clock.phase == "paused" and events[0].data["remaining_ms"] == LIMIT - 10_000


def test_by_and_source_are_recorded_on_the_commands_own_events() -> None:
    clock = new_clock()
    events = clock.handle(Start(by="camera", source="camera", at=T0 - 40), T0)
    assert [(e.type, e.by, e.source, e.press_at) for e in events] == [
        ("clock.started", "camera", "camera", T0 - 40)]
    assert events[0].envelope() == {"by": "camera", "source": "camera", "press_at": int(T0 - 40)}
    events = clock.handle(Shot(), T0 + 1000)  # no envelope: referee, no source, no press time
    assert events[0].envelope() == {"by": "referee"}


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({"command": "start", "at": "now"}, "invalid_field"),
        ({"command": "start", "at": True}, "invalid_field"),
        ({"command": "start", "at": math.nan}, "invalid_field"),
        ({"command": "start", "at": math.inf}, "invalid_field"),
        ({"command": "start", "by": "robot"}, "invalid_field"),
        ({"command": "start", "by": None}, "invalid_field"),
        ({"command": "start", "source": ""}, "invalid_field"),
        ({"command": "start", "source": "x" * 201}, "invalid_field"),
    ],
)
def test_a_malformed_envelope_is_refused(payload: dict[str, Any], code: str) -> None:
    with pytest.raises(InvalidCommand) as info:
        parse_command(payload)
    assert info.value.code == code


def test_parse_command_reads_the_envelope() -> None:
    command = parse_command({"command": "shot", "at": 1_700_000_000_123, "by": "camera",
                             "source": "camera", "id": 5})
    assert command == Shot(at=1_700_000_000_123, by="camera", source="camera")
    # corrections keep naming who made them in their own words
    assert parse_command({"command": "undo", "by": "referee A"}) == Undo(by="referee A")


# -- over HTTP: the same rules with the real app and the fake clock ----------------------------

def test_http_stale_press_is_409_and_future_is_422(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from clock_service.edges.cli.main import table_app
    from clock_service.service.settings import Settings
    from clock_service.service.timesource import FakeTime

    time = FakeTime()
    app = table_app(Settings(db=str(tmp_path / "c.db"), display="none"), time=time)
    with TestClient(app) as client:
        url = "/api/tables/1/commands"
        time.advance(5_000)  # the table was made at start: presses come later
        now = time.now_ms()
        stale = client.post(url, json={"command": "start", "at": now - 2_500})
        assert stale.status_code == 409, stale.text
        assert stale.json()["error"]["code"] == "stale_press"
        future = client.post(url, json={"command": "start", "at": now + 1_500})
        assert future.status_code == 422 and future.json()["error"]["code"] == "press_in_future"
        ok = client.post(url, json={"command": "start", "at": now - 400, "source": "button"})
        assert ok.status_code == 200, ok.text
        assert ok.json()["deadline"] == now - 400 + LIMIT
        events = client.get("/api/tables/1/events").json()
        assert events[-1]["type"] == "clock.started"
        assert (events[-1]["by"], events[-1]["source"], events[-1]["press_at"]) == (
            "referee", "button", int(now - 400))
        assert "by" not in events[0]  # table.created: nobody's press
