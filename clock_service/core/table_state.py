"""The table's state as the pages and every client read it (``state``: GET, the snapshot,
``state`` on every event). No I/O.

Everything here is read from the table clock and its parts at ``now``; nothing is kept.
``allowed`` and ``refused`` come from the one legality check (``transitions``), so a page
never keeps its own copy of the rules. Its fields are documented once, as the wire's
``TableState`` (service/wire.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clock_service.core.transitions import ClockPhase, legality

if TYPE_CHECKING:
    from clock_service.core.clock import TableClock

__all__ = ["table_state"]


def table_state(clock: TableClock, now: float) -> dict[str, Any]:
    per = clock.extensions_allowed()
    remaining = clock.remaining_ms(now)
    frame = clock.match.frame
    running = clock.phase is ClockPhase.RUNNING
    return {
        "phase": clock.phase,
        "remaining_ms": remaining,
        "limit_ms": clock.shot_limit(),
        "deadline": clock.deadline if running else None,
        "player": clock.player,
        "players": list(clock.players),
        "round": clock.round,
        "visit": clock.visit,
        "extensions_left": [max(0, per - used) for used in clock.extensions_used],
        "fouls": clock.fouls,
        "frame": clock.frame,
        "breaker": clock.breaker,
        # Whether the shot clock counts now: the match's timer (12.1), or slow play.
        "timer": clock.timed,
        "slow_play": (None if clock.slow_play is None else {
            "scope": clock.slow_play, "reason": clock.slow_play_reason,
            "limit_ms": clock.profile.slow_play_ms}),
        "hand_back_to": clock.hand_back_to,
        "frame_winner": clock.frame_winner,
        "frame_end_reason": clock.frame_end_reason,
        "frames_won": clock.frames_won,
        "can_undo": clock.corrections.last_step,
        "profile": clock.profile.to_dict(),
        "deciding_frame": clock.deciding_frame,
        # The profile's show_from_ms: whether the players see the clock now (a running
        # clock appears when its deadline is show_from_ms away; pages derive that).
        "clock_shown": clock.profile.shown(remaining),
        "whites": clock.whites,
        "on_break": not frame.break_done and clock.phase is not ClockPhase.FRAME_OVER,
        "announced_call": (None if frame.announced_call is None
                           else frame.announced_call.to_dict()),
        "match": _match_summary(clock),
        "match_clock": None if clock.match_clock is None else clock.match_clock.state(now),
        **legality(clock, now),
    }


def _match_summary(clock: TableClock) -> dict[str, Any]:
    match = clock.match
    return {
        "number": clock.match_number,
        "race_to": match.race_to, "score": list(match.score), "frames_won": clock.frames_won,
        "winner": match.winner, "over": match.over, "undecided": match.undecided,
        "drawn": match.drawn, "by_time_limit": match.decided_by_limit,
        "match_limit_ms": clock.match_limit_ms, "at_match_limit": clock.at_match_limit,
    }
