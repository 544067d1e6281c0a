"""The match clock (match_limit_ms) and every organiser's choice at the limit,
table-driven on the core with the time given by the test (no sleeping)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clock_service.core.clock import TableClock
from clock_service.core.commands import (
    NewFrame,
    NewMatch,
    Pause,
    Result,
    Resume,
    Shot,
    Start,
    Turn,
    Undo,
    parse_command,
)
from clock_service.core.errors import InvalidCommand, InvalidInput, RuleRefusal
from clock_service.core.match_clock import AT_LIMIT
from tests.waiting import settle

T0 = 1_000_000.0
HOUR = 3_600_000
MIN = 60_000


def match(limit: int = HOUR, at: str = "leader_wins", **kwargs: Any) -> TableClock:
    clock = TableClock(["Ivanov", "Petrov"], match_limit_ms=limit, at_match_limit=at,
                       **kwargs)
    clock.open(T0)
    return clock


def types(events: list) -> list[str]:
    return [e.type for e in events]


def award(clock: TableClock, winner: int, now: float) -> list:
    """The frame in play goes to ``winner`` (the referee's award, D9), and the next starts."""
    return clock.handle(NewFrame(winner=winner, reason="awarded"), now)


# -- counting ------------------------------------------------------------------------------
def test_waits_for_the_first_break_then_counts_from_it() -> None:
    clock = match()
    state = clock.state(T0 + 5 * MIN)
    assert state["match_clock"]["phase"] == "waiting"
    assert state["match_clock"]["remaining_ms"] == HOUR and clock.next_wakeup() is None
    events = clock.handle(Start(), T0 + 5 * MIN)  # the break's clock: the first break
    assert types(events) == ["clock.started", "match_clock.started"]
    assert events[1].data["deadline"] == T0 + 5 * MIN + HOUR
    clock.handle(Shot(), T0 + 5 * MIN + 1000)
    assert types(clock.handle(Start(), T0 + 6 * MIN)) == ["clock.started"]  # nothing more
    assert clock.match_clock is not None and clock.match_clock.started_at == T0 + 5 * MIN


def test_the_breaks_result_alone_starts_it() -> None:
    clock = match()
    events = clock.handle(Result(legal_break=True), T0 + 1000)
    assert types(events) == ["shot.result", "turn", "match_clock.started"]


def test_paused_only_by_the_referees_pause() -> None:
    clock = match(timer=False)
    clock.handle(Start(), T0)
    for step in (Shot(), Turn(), Start(), Shot()):  # shots, turns: the match clock runs on
        clock.handle(step, T0 + MIN)
    award(clock, 0, T0 + 2 * MIN)  # and between frames
    assert clock.state(T0 + 10 * MIN)["match_clock"]["remaining_ms"] == HOUR - 10 * MIN
    clock.handle(Start(), T0 + 10 * MIN)
    paused = clock.handle(Pause(), T0 + 10 * MIN)
    assert types(paused) == ["clock.paused", "match_clock.paused"]
    assert clock.state(T0 + 40 * MIN)["match_clock"]["remaining_ms"] == HOUR - 10 * MIN
    assert clock.next_wakeup() is None
    resumed = clock.handle(Resume(), T0 + 40 * MIN)
    assert types(resumed) == ["clock.resumed", "match_clock.resumed"]
    assert resumed[1].data["deadline"] == T0 + 30 * MIN + HOUR


def test_a_restart_does_not_pause_it() -> None:
    clock = match()
    clock.handle(Start(), T0)
    clock.recover(alive_at=T0 + 1000, now=T0 + 60_000)  # the shot clock comes back paused
    assert clock.state(T0 + 60_000)["match_clock"]["remaining_ms"] == HOUR - 60_000


@pytest.mark.parametrize(("elapsed", "expected"), [
    (HOUR - 10 * MIN - 1, []),
    (HOUR - 10 * MIN, [("match_clock.warning", 600_000)]),
    (HOUR - 5 * MIN, [("match_clock.warning", 600_000), ("match_clock.warning", 300_000)]),
])
def test_warnings_at_10_and_5_minutes_left(elapsed: int, expected: list) -> None:
    clock = match(timer=False)
    clock.handle(Start(), T0)
    seen = []
    at = T0
    while (wake := clock.next_wakeup()) is not None and wake <= T0 + elapsed:
        at = wake
        seen += [(e.type, e.data["threshold_ms"]) for e in clock.advance(at)]
    assert seen == expected


def test_woken_late_it_announces_only_the_latest_warning() -> None:
    clock = match(timer=False)
    clock.handle(Start(), T0)
    events = clock.advance(T0 + HOUR - 4 * MIN)
    assert [(e.type, e.data["threshold_ms"]) for e in events] == [
        ("match_clock.warning", 300_000)]


# -- the organiser's choices at the limit --------------------------------------------------
# (choice, frames awarded before the limit, what happens after it: frames awarded,
#  then the decisions in order, the winner, drawn)
CHOICES = [
    # The frame in play is finished and the leader wins ...
    ("leader_wins", [0], [0], ["leader_wins"], 0, False),
    # ... and level after it is a draw.
    ("leader_wins", [0], [1], ["drawn"], None, False),
    # The frame in play decides, whatever the score.
    ("frame_decides", [0, 0], [1], ["frame_decides"], 1, False),
    # The frame in play is finished; level: one tie-break frame decides it.
    ("tie_break_frame", [0], [1, 0], ["tie_break_frame", "frame_decides"], 0, False),
    ("tie_break_frame", [1], [1], ["leader_wins"], 1, False),
]


@pytest.mark.parametrize(("choice", "before", "after", "decisions", "winner", "drawn"),
                         CHOICES)
def test_the_choice_at_the_limit(choice: str, before: list[int], after: list[int],
                                 decisions: list[str], winner: int | None,
                                 drawn: bool) -> None:
    clock = match(limit=MIN, at=choice, race_to=9, timer=False)
    clock.handle(Start(), T0)
    for w in before:
        award(clock, w, T0 + 1000)
    expired = clock.advance(T0 + MIN)
    assert types(expired) == ["match_clock.expired"]
    assert expired[0].data["rule"] == AT_LIMIT[choice].rule
    assert expired[0].data["text"] == AT_LIMIT[choice].text
    assert not clock.match.over  # the frame in play goes on
    events: list = []
    for w in after:
        assert not clock.match.over
        events += award(clock, w, T0 + 2 * MIN)
    applied = [e for e in events if e.type == "match_clock.applied"]
    assert [e.data["decision"] for e in applied] == decisions
    for e in applied:  # every choice an event citing the rule it applies
        assert e.data["rule"] == AT_LIMIT[choice].rule and e.data["rule"].startswith("12.1")
    ended = [e for e in events if e.type == "match.ended"]
    assert len(ended) == 1
    assert (ended[0].data["winner"], ended[0].data["by_time_limit"], ended[0].data["drawn"]) == (
        winner, True, winner is None)
    state = clock.state(T0 + 2 * MIN)
    assert state["match"]["over"] and state["match"]["by_time_limit"]
    assert state["match"]["winner"] == winner and state["match"]["drawn"] == (winner is None)
    with pytest.raises(RuleRefusal) as info:
        clock.handle(Start(), T0 + 3 * MIN)
    assert info.value.code == "match_over" and info.value.rule == AT_LIMIT[choice].rule


def test_level_at_the_limit_the_tie_break_frame_gets_the_deciding_frame_extensions() -> None:
    from clock_service.core.profile import Profile
    clock = match(limit=MIN, at="tie_break_frame", race_to=9,
                  profile=Profile(extensions_deciding_frame=2))
    clock.handle(Start(), T0)
    clock.handle(Shot(), T0 + 100)
    clock.advance(T0 + MIN)  # limit reached at 0-0 in frame 1
    events = clock.handle(NewFrame(reason="abandoned"), T0 + MIN)  # undecided: still 0-0
    assert [e.data["decision"] for e in events if e.type == "match_clock.applied"] == [
        "tie_break_frame"]
    state = clock.state(T0 + MIN)
    assert state["deciding_frame"] and state["extensions_left"] == [2, 2]


def test_between_frames_at_the_limit_the_leader_wins_at_once() -> None:
    clock = match(limit=MIN, race_to=9, timer=False)
    clock.handle(Start(), T0)
    clock.handle(NewFrame(winner=1, reason="awarded"), T0 + 1000)
    # frame 2 (player 1 breaks, I3) ended by player 1's technical loss (10.5): 1-1
    from clock_service.core.commands import Foul, HandBack
    for step in (Foul(reason="x"), HandBack(), Foul(reason="x")):
        clock.handle(step, T0 + 2000)
    assert clock.phase == "frame_over" and clock.match.score == (1, 1)
    events = clock.advance(T0 + MIN)
    assert types(events) == ["match_clock.expired", "match_clock.applied", "match.ended"]
    assert events[1].data["decision"] == "drawn"


def test_frame_decides_between_frames_the_next_frame_decides() -> None:
    clock = match(limit=MIN, at="frame_decides", race_to=9, timer=False)
    clock.handle(Start(), T0)
    from clock_service.core.commands import Foul, HandBack
    for step in (Foul(reason="x"), HandBack(), Foul(reason="x")):
        clock.handle(step, T0 + 2000)
    events = clock.advance(T0 + MIN)
    assert [e.data.get("decision") for e in events if e.type == "match_clock.applied"] == [
        "next_frame_decides"]
    clock.handle(NewFrame(), T0 + MIN)  # the next frame starts: it decides
    assert clock.state(T0 + MIN)["deciding_frame"]
    events = award(clock, 0, T0 + 2 * MIN)
    assert clock.match.winner == 0 and "match.ended" in types(events)


def test_shot_clock_choice_switches_the_clock_on_for_the_rest() -> None:
    clock = match(limit=MIN, at="shot_clock", race_to=2, timer=False)
    clock.handle(Start(), T0)
    events = clock.advance(T0 + MIN)
    assert types(events) == ["match_clock.expired", "shot_clock.on", "match_clock.applied"]
    assert events[2].data["decision"] == "shot_clock_on"
    assert events[1].data["deadline"] == T0 + MIN + 60_000  # the shot in play: full limit
    assert clock.state(T0 + MIN)["slow_play"]["scope"] == "match"
    award(clock, 0, T0 + 2 * MIN)
    assert clock.state(T0 + 2 * MIN)["limit_ms"] == 60_000 and not clock.match.over
    award(clock, 0, T0 + 3 * MIN)
    assert clock.match.winner == 0 and not clock.match.decided_by_limit  # the race decided


def test_the_race_won_first_stops_the_match_clock() -> None:
    clock = match(limit=MIN, race_to=1, timer=False)
    clock.handle(Start(), T0)
    award(clock, 1, T0 + 1000)
    assert clock.state(T0 + 1000)["match_clock"]["phase"] == "stopped"
    assert clock.next_wakeup() is None and clock.advance(T0 + MIN) == []


# -- persistence, undo, input ----------------------------------------------------------------
def test_it_survives_the_store_round_trip_and_undo_does_not_reach_it() -> None:
    clock = match(limit=MIN, at="tie_break_frame", race_to=3)
    clock.handle(Start(), T0)
    clock.handle(Pause(), T0 + 1000)
    clock.handle(Resume(), T0 + 5000)
    again = TableClock.from_dict(json.loads(json.dumps(clock.to_dict())))
    assert again.state(T0 + 9000) == clock.state(T0 + 9000)
    assert again.match_clock is not None and clock.match_clock is not None
    assert again.match_clock.next_wakeup() == clock.match_clock.next_wakeup() == T0 + 4000 + MIN
    assert again.next_wakeup() == clock.next_wakeup()  # the shot clock's warning first
    clock.handle(Undo(), T0 + 9000)  # the resume is taken back; the match clock runs on
    assert clock.state(T0 + 9000)["match_clock"]["phase"] == "running"


def test_a_new_match_takes_its_own_limit() -> None:
    clock = match(limit=MIN)
    events = clock.handle(NewMatch(match_limit_ms=2 * HOUR, at_match_limit="frame_decides",
                                   reason="next"), T0)
    assert (events[0].data["match_limit_ms"], events[0].data["at_match_limit"]) == (
        2 * HOUR, "frame_decides")
    state = clock.state(T0)
    assert (state["match_clock"]["limit_ms"], state["match_clock"]["phase"]) == (2 * HOUR,
                                                                                 "waiting")
    clock.handle(NewMatch(match_limit_ms=None, reason="next"), T0)
    assert clock.state(T0)["match_clock"] is None


@pytest.mark.parametrize(("limit", "at"), [(999, "leader_wins"), (True, "leader_wins"),
                                           (HOUR, "coin_toss"), ("2h", "leader_wins")])
def test_bad_limits_are_refused(limit: Any, at: str) -> None:
    with pytest.raises(InvalidInput) as info:
        TableClock(["A", "B"], match_limit_ms=limit, at_match_limit=at)
    assert info.value.code == "invalid_match_limit"
    with pytest.raises(InvalidCommand):
        parse_command({"command": "new_match", "match_limit_ms": limit, "at_match_limit": at})


def test_an_old_stored_state_has_no_match_clock(tmp_path: Path) -> None:
    clock = TableClock(["A", "B"])
    clock.open(T0)
    stored = clock.to_dict()
    for key in ("match_limit_ms", "at_match_limit", "match_clock", "limit_pending"):
        stored.pop(key)
    assert TableClock.from_dict(stored).state(T0)["match_clock"] is None


# -- the runtime wakes at the match clock's deadline (absolute, no ticks) ---------------------
async def test_the_runtime_wakes_at_the_match_limit_and_stores_the_events(tmp_path: Path) -> None:

    from clock_service.service.hub import Hub
    from clock_service.service.runtime import Runtime
    from clock_service.service.storage import Store
    from clock_service.service.timesource import FakeTime

    time = FakeTime()
    runtime = Runtime(Store(tmp_path / "clock.db"), time, Hub())
    await runtime.start(default_table=None)
    try:
        seen: list[tuple[str, float]] = []
        runtime.listen(lambda tid, events, state: seen.extend(
            (e["type"], time.now_ms()) for e in events))
        await runtime.create_table("m", ["Ivanov", "Petrov"], timer=False, race_to=3,
                                   match_limit_ms=HOUR, at_match_limit="tie_break_frame")
        await runtime.command("m", Start())
        start = time.now_ms()
        # The table's timer is the match clock's next instant, nothing before it but the
        # service's own heartbeats: no tick counts the hour down.
        first = start + HOUR - 10 * MIN
        assert first in time.pending()
        assert len([t for t in time.pending() if t < first]) <= 2, time.pending()
        time.advance(HOUR)
        timeline = [(kind, at - start) for kind, at in seen if kind.startswith("match_clock")]
        assert timeline == [("match_clock.started", 0), ("match_clock.warning", HOUR - 10 * MIN),
                            ("match_clock.warning", HOUR - 5 * MIN),
                            ("match_clock.expired", HOUR)]
        assert runtime.tables["m"].timer is None  # nothing left to wake for
        state = await runtime.command("m", NewFrame(reason="abandoned"))  # 0-0: tie-break
        assert state["deciding_frame"] and state["match_clock"]["phase"] == "expired"
        await settle(runtime)  # durable, then published
        stored = await runtime.events_since("m", 0)
        applied = [e for e in stored if e["type"] == "match_clock.applied"]
        assert [e["data"]["decision"] for e in applied] == ["tie_break_frame"]
        assert applied[0]["data"]["rule"] == AT_LIMIT["tie_break_frame"].rule
        _, snapshot = runtime.snapshot("m")
        assert snapshot["match"]["at_match_limit"] == "tie_break_frame"
    finally:
        await runtime.stop()


def test_http_a_table_with_a_match_limit(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from clock_service.edges.cli.main import table_app
    from clock_service.service.settings import Settings
    from clock_service.service.timesource import FakeTime

    app = table_app(Settings(db=str(tmp_path / "c.db"), display="none"), time=FakeTime())
    with TestClient(app) as client:
        made = client.post("/api/tables", json={
            "id": "2", "players": ["Ivanov", "Petrov"], "race_to": 5,
            "match_limit_ms": 2 * HOUR, "at_match_limit": "frame_decides"})
        assert made.status_code == 201, made.text
        state = made.json()
        assert state["match"]["match_limit_ms"] == 2 * HOUR
        assert state["match_clock"]["at_limit_text"] == AT_LIMIT["frame_decides"].text
        for bad in ({"match_limit_ms": 999}, {"match_limit_ms": HOUR, "at_match_limit": "x"}):
            refused = client.post("/api/tables", json={"id": "3", "players": ["A", "B"], **bad})
            assert refused.status_code == 422, refused.text
        started = client.post("/api/tables/2/commands", json={"command": "start"})
        assert started.json()["match_clock"]["phase"] == "running"


def test_the_statistics_see_through_the_new_events_when_steps_are_undone() -> None:
    """reports.stats.effective_events: a step's events, the match clock's and slow play's
    among them, go with its undo; the events around keep their steps."""
    from clock_service.core.commands import ShotClockOn
    from clock_service.edges.reports.stats import effective_events

    clock = match(limit=MIN, at="shot_clock", race_to=5, timer=False)
    log: list[dict[str, Any]] = []

    def step(command: Any = None, at: float = T0) -> None:
        made = clock.handle(command, at) if command is not None else clock.advance(at)
        batch = len(log) + len(made)
        log.extend({"type": e.type, "data": dict(e.data), "state": {"seq": batch}}
                   for e in made)

    step(Start())                                         # clock.started, match_clock.started
    step(Shot(), T0 + 1000)
    step(ShotClockOn(reason="stalled", scope="frame"), T0 + 2000)
    step(NewFrame(winner=0, reason="x"), T0 + 3000)       # ... shot_clock.off, frame.started
    step(None, T0 + MIN)                                  # expired, shot_clock.on, applied
    step(Undo(), T0 + MIN)                                # takes back the new_frame
    # The undo drops the step and whatever followed it up to the undo (stats' rule).
    kinds = [e["type"] for e in effective_events(log)]
    assert kinds == ["clock.started", "match_clock.started", "clock.stopped", "shot_clock.on",
                     "correction.undone"]
    # The clock: the new_frame is taken back, but the limit reached stays reached: the
    # per-shot clock is on for the rest of the match, not only the frame.
    assert clock.frame == 1 and clock.state(T0 + MIN)["slow_play"]["scope"] == "match"


@pytest.mark.parametrize("choice", ["leader_wins", "tie_break_frame", "frame_decides"])
def test_undo_of_a_step_before_the_limit_keeps_the_choice_pending(choice: str) -> None:
    clock = match(limit=MIN, at=choice, race_to=5, timer=False)
    clock.handle(Start(), T0)
    clock.handle(Shot(), T0 + 1000)  # a step before the limit
    clock.advance(T0 + MIN)
    clock.handle(Undo(), T0 + MIN)
    assert clock.limit_pending == choice
    events = award(clock, 0, T0 + 2 * MIN)
    assert "match_clock.applied" in types(events)
