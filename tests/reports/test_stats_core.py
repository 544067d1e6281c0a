"""The statistics core alone: events in, record out, no I/O (reports/stats.py).

The events come from the real clock core driven with a fake time and numbered as the
runtime numbers them (seq, at, the batch's state.seq), so corrections, restarts and
envelopes look exactly as in a stored log. Every expected figure is worked out by hand in
the case's comment.
"""

from __future__ import annotations

from typing import Any

import pytest

from clock_service.core.commands import (
    Extension,
    Foul,
    NewFrame,
    NewMatch,
    Pause,
    Result,
    Resume,
    SetTime,
    Shot,
    Start,
    Turn,
    Undo,
)
from clock_service.edges.reports.stats import build_match, effective_events, foul_rule, opens_step
from harness.reports import EARLY_POT, Table


def shots(table: Table) -> list[tuple[int, int | None, str | None]]:
    """(player, used_ms, outcome) of every attempt."""
    return [(s.player, s.used_ms, s.outcome) for s in build_match(table.log, "t").shots]


# -- corrections ----------------------------------------------------------------------------

def test_an_undone_shot_comes_back_paused_and_counts_once() -> None:
    t = Table()
    t.timed(9000)                 # shot at 26 s left ...
    t.do(Undo())                  # ... taken back: paused at 26 s
    t.wait(5000)                  # paused: nothing counts
    t.do(Resume())
    t.wait(4000)
    t.do(Shot())                  # 9 + 4 = 13 s
    assert shots(t) == [(0, 13000, "shot")]


def test_an_undone_expiry_takes_the_time_foul_and_the_visit_back() -> None:
    t = Table()
    t.do(Start())
    t.wait(36000)                 # expiry at 35 s: time foul, turn to Petrov
    t.do(Undo(reason="the shot was in time"))  # paused at 0 for Ivanov
    t.do(Shot())                  # the whole 35 s used, a shot played in time
    record = build_match(t.log, "t")
    assert shots(t) == [(0, 35000, "shot")]
    frame = record.frames[0]
    assert (frame.fouls, len(frame.visits)) == ([], 1)
    assert record.stats is not None
    assert (record.stats[0].time_fouls, record.stats[0].visits, record.stats[1].visits) == (
        0, 1, 0)


def test_an_undone_start_leaves_no_attempt_and_two_undos_take_two_steps() -> None:
    t = Table()
    t.do(Start())
    t.wait(3000)
    t.do(Undo())                  # the start taken back: ready again, 35 s shown
    t.timed(7000)                 # the 3 s of the undone start are not counted
    assert shots(t) == [(0, 7000, "shot")]
    u = Table()
    u.timed(5000)
    u.do(Undo())                  # the shot
    u.do(Undo())                  # the start
    assert shots(u) == []
    u.timed(7000)
    assert shots(u) == [(0, 7000, "shot")]


def test_an_undone_winning_pot_reopens_the_frame_and_an_undone_new_frame_removes_it() -> None:
    t = Table(race_to=2)
    t.timed(4000)
    t.do(Result(whites_potted=0, legal_break=True))          # Petrov's visit
    t.timed(6000)
    t.do(Result(**EARLY_POT))                                 # Petrov wins frame 1 ...
    t.do(Undo(reason="wrong pocket"))                         # ... not so
    record = build_match(t.log, "t")
    assert (record.frames[0].winner, record.frames[0].reason, record.score) == (None, None,
                                                                                 [0, 0])
    t.do(Result(whites_potted=1))                             # credited instead
    t.do(NewFrame(winner=1, reason="conceded"))               # referee's award: 0-1
    t.do(Undo())                                              # taken back
    record = build_match(t.log, "t")
    assert [f.number for f in record.frames] == [1]
    assert (record.frames[0].winner, record.frames[0].whites) == (None, [0, 1])


def test_an_undone_turn_gives_the_visit_back() -> None:
    t = Table()
    t.do(Turn())
    t.do(Undo())
    t.timed(2000)
    record = build_match(t.log, "t")
    assert [v.player for v in record.frames[0].visits] == [0]
    assert shots(t) == [(0, 2000, "shot")]


# -- time, by the clock's own figures ---------------------------------------------------------

def test_an_extension_in_ready_dies_with_the_visit_but_counts_as_used() -> None:
    t = Table()
    t.do(Extension())             # Ivanov, shown before a start
    t.do(Turn())                  # the turn passes: the extension is gone (12.5: used)
    t.timed(10000)                # Petrov: 10 s, no extension on his shot
    record = build_match(t.log, "t")
    assert shots(t) == [(1, 10000, "shot")]
    assert record.frames[0].shots[0].extension is False
    assert record.stats is not None
    assert (record.stats[0].extensions, record.stats[1].extensions) == (1, 0)


def test_a_set_time_correction_is_the_official_figure() -> None:
    t = Table()
    t.do(Start())
    t.wait(10000)                 # 25 s left
    t.do(SetTime(remaining_ms=20000, reason="started late"))  # the referee: 20 s left
    t.wait(8000)
    t.do(Shot())                  # 12 s left: 35 - 12 = 23 s used, officially
    record = build_match(t.log, "t")
    shot = record.frames[0].shots[0]
    assert (shot.used_ms, shot.corrected) == (23000, True)


def test_a_restart_pause_is_not_a_step_and_costs_no_time() -> None:
    t = Table()
    t.timed(3000)
    t.do(Result(whites_potted=1, legal_break=True))
    t.do(Start())
    t.wait(4000)
    t.number(t.clock.recover(t.now, t.now + 60000))  # down a minute: paused at 31 s
    t.now += 60000
    t.do(Resume())
    t.wait(5000)
    t.do(Shot())                  # 4 + 5 = 9 s: the minute down costs nothing
    assert shots(t) == [(0, 3000, "shot"), (0, 9000, "shot")]
    t.do(Undo())                  # the shot
    t.do(Undo())                  # the resume (the restart's pause is no step) ...
    t.do(Undo())                  # ... and the start: ready again
    t.timed(6000)
    assert shots(t) == [(0, 3000, "shot"), (0, 6000, "shot")]


def test_without_a_timer_shots_count_and_times_are_none() -> None:
    t = Table(timer=False)
    t.timed(9000)
    t.do(Result(whites_potted=1, legal_break=True))
    t.do(Result(whites_potted=0))  # reported without start/shot: still a shot played
    record = build_match(t.log, "t")
    assert shots(t) == [(0, None, "shot"), (0, None, "shot")]
    assert record.stats is not None
    ivanov = record.stats[0]
    assert (ivanov.shots, ivanov.timed_shots, ivanov.mean_ms, ivanov.max_ms, ivanov.over_20s,
            ivanov.share_over_30s, ivanov.whites) == (2, 0, None, None, None, None, 1)


def test_shots_decided_by_the_camera_say_so() -> None:
    t = Table()
    t.timed(3000, by="camera")
    t.do(Start())
    t.wait(1000)
    t.do(Shot(by="camera"))
    assert [s.by for s in build_match(t.log, "t").shots] == ["camera", "camera"]


def test_a_match_record_stops_at_the_next_match() -> None:
    t = Table(race_to=1)
    t.timed(5000)
    t.do(NewMatch(players=["Sidorov", "Petrov"], reason="postponed"))
    t.timed(7000)
    first = build_match(t.log, "t")
    assert (first.players, [s.used_ms for s in first.shots]) == (["Ivanov", "Petrov"], [5000])
    start = next(i for i, e in enumerate(t.log) if e["type"] == "match.started")
    second = build_match(t.log[start:], "t")
    assert (second.number, second.players, [s.used_ms for s in second.shots]) == (
        2, ["Sidorov", "Petrov"], [7000])


def test_pauses_warnings_and_a_second_pause_do_not_change_the_time() -> None:
    t = Table()
    t.do(Start())
    t.wait(27000)                 # warnings at 10 s left pass by
    t.do(Pause())
    t.wait(30000)
    t.do(Resume())
    t.wait(2000)
    t.do(Pause())
    t.wait(1000)
    t.do(Resume())
    t.wait(1500)
    t.do(Shot())                  # 27 + 2 + 1.5 = 30.5 s
    record = build_match(t.log, "t")
    shot = record.frames[0].shots[0]
    assert (shot.used_ms, shot.pauses, len(record.frames[0].pauses)) == (30500, 2, 2)


def test_foul_stop_and_its_foul_belong_to_the_same_attempt() -> None:
    t = Table()
    t.do(Start())
    t.wait(6000)
    t.do(Foul(reason="touched a ball"))
    t.do(Start())                 # Petrov accepts (10.4)
    t.wait(1000)
    t.do(Foul(reason="double hit", player=1, rule="9"))
    record = build_match(t.log, "t")
    assert [(s.player, s.used_ms, s.outcome, s.fouls) for s in record.shots] == [
        (0, 6000, "foul", ["9"]), (1, 1000, "foul", ["9"])]  # a free-text foul: 9 (D10)


@pytest.mark.parametrize(("data", "rule"), [
    ({"rule": "7.3", "code": "call_not_fulfilled"}, "7.3"),  # the event's own word first
    ({"code": "shot_time"}, "12.4"),   # no rule: its code's (rules/fouls.py FOUL_RULES)
    ({"code": "illegal_break"}, "4.3"),
    ({"code": "double_hit"}, "9"),
    ({"reason": "moved the rack"}, "9"),  # nothing: a general foul, 9's last item (D10)
    ({"code": "no_such_code"}, "9"),
])
def test_a_foul_without_its_rule_gets_the_rule_of_its_code_never_10_1(
        data: dict[str, Any], rule: str) -> None:
    assert foul_rule(data) == rule


# -- where a step begins ------------------------------------------------------------------------

def _e(kind: str, **data: Any) -> dict[str, Any]:
    return {"type": kind, "seq": 1, "at": 0, "data": data}


@pytest.mark.parametrize(("event", "prev", "opens"), [
    (_e("clock.started"), None, True),
    (_e("clock.stopped", reason="shot"), None, True),
    (_e("clock.paused", reason="referee"), None, True),
    (_e("clock.paused", reason="restart"), None, False),
    (_e("clock.warning"), None, False),
    (_e("turn", reason="turn"), None, True),
    (_e("turn", reason="turn"), _e("clock.stopped", reason="turn"), False),
    (_e("turn", reason="hand_back"), None, True),
    (_e("turn", reason="foul"), _e("foul"), False),
    (_e("turn", reason="time_foul"), _e("foul"), False),
    (_e("foul"), None, True),
    (_e("foul"), _e("turn", reason="time_foul"), True),  # a foul command after an expiry
    (_e("foul"), _e("clock.expired"), False),
    (_e("foul"), _e("shot.result"), False),
    (_e("foul"), _e("clock.stopped", reason="foul"), False),
    (_e("frame.ended", reason="referee"), None, True),   # new_frame from ready
    (_e("frame.ended"), _e("foul"), False),
    (_e("frame.ended"), _e("respot"), False),
    (_e("frame.ended"), _e("clock.stopped", reason="new_frame"), False),
    (_e("frame.started"), None, True),                    # new_frame after the frame ended
    (_e("frame.started"), _e("frame.ended", reason="referee"), False),
    (_e("frame.started"), _e("frame.ended", reason="technical_loss"), True),
    (_e("frame.started"), _e("match.started"), False),
    (_e("match.ended"), _e("frame.ended"), False),
    (_e("respot"), _e("shot.result"), False),
    (_e("call.announced"), None, True),                   # any command's own event
    (_e("correction.undone"), None, False),
], ids=lambda v: None if isinstance(v, bool) else None)
def test_opens_step(event: dict[str, Any], prev: dict[str, Any] | None, opens: bool) -> None:
    assert opens_step(event, prev) is opens


def test_effective_events_keep_the_undo_and_drop_the_step() -> None:
    t = Table()
    t.timed(1000)
    before = len(t.log)
    t.do(Turn())
    t.do(Undo())
    kept = effective_events(t.log)
    assert [e["type"] for e in kept[before:]] == ["correction.undone"]
