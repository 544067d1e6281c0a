"""The match clock: a time limit for a whole match (an organiser's choice, 12.1). No I/O.

Counted from the match's first break, paused only by the referee's pause. Like the shot
clock it keeps an absolute deadline while it runs and derives every remaining time from
it; warnings at 10 and 5 minutes left; at the limit the organiser's choice, written in the
match (``at_limit``), is applied by the table's clock (``clock.TableClock``), which owns the
frames and the score. What each choice does, and the rule it cites, is the table below;
where each step leads is the other table, ``MATCH_CLOCK`` (``machine``: its ``Current.apply``
is the only code that moves the phase).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from clock_service.core.errors import InvalidInput
from clock_service.core.events import (
    EVENT_TYPES,
    MATCH_CLOCK_EXPIRED,
    MATCH_CLOCK_PAUSED,
    MATCH_CLOCK_RESUMED,
    MATCH_CLOCK_STARTED,
    MATCH_CLOCK_WARNING,
    Event,
    MatchClockData,
)
from clock_service.core.machine import Current, Go, Ignore, Machine

__all__ = ["MatchClock", "MatchClockPhase", "MATCH_CLOCK", "AT_LIMIT", "AtLimit",
           "MATCH_WARNINGS_MS", "MAX_MATCH_MS", "check_match_limit"]

MATCH_WARNINGS_MS = (600_000, 300_000)  # 10 and 5 minutes left
MAX_MATCH_MS = 24 * 3_600_000
MIN_MATCH_MS = 1000  # short ones for tests; a real limit is an hour or two
RULE = "12.1"  # the organiser decides the time control


@dataclass(frozen=True)
class AtLimit:
    """One of the organiser's choices for the match time limit."""

    code: str
    rule: str  # what the event cites
    text: str  # what the players are shown


# The organiser's choices at the limit (issue 25; the organiser decides time control, 12.1).
AT_LIMIT: dict[str, AtLimit] = {c.code: c for c in (
    AtLimit("leader_wins", f"{RULE}: match time limit, the frame in play is finished and the "
            "leader wins (level: the match is drawn)",
            "At the time limit the frame in play is finished; the leader wins, level is a draw"),
    AtLimit("frame_decides", f"{RULE}: match time limit, the frame in play decides the match",
            "At the time limit the frame in play decides the match"),
    AtLimit("tie_break_frame", f"{RULE}: match time limit, the frame in play is finished and "
            "the leader wins; level: one tie-break frame decides",
            "At the time limit the frame in play is finished; the leader wins, level: a "
            "tie-break frame"),
    AtLimit("shot_clock", f"{RULE}: match time limit, a per-shot clock (the profile's "
            "slow_play_ms) for the rest of the match",
            "At the time limit a shot clock starts for every shot until the match is won"),
)}


def check_match_limit(limit_ms: Any, at_limit: Any) -> None:
    """The match's limit (ms, or None) and the organiser's choice, or InvalidInput."""
    if limit_ms is not None and (isinstance(limit_ms, bool) or not isinstance(limit_ms, int)
                                 or not MIN_MATCH_MS <= limit_ms <= MAX_MATCH_MS):
        raise InvalidInput(f"match_limit_ms must be whole ms in {MIN_MATCH_MS}..{MAX_MATCH_MS} "
                           "or null, "
                           f"got {limit_ms!r}", code="invalid_match_limit")
    if at_limit not in AT_LIMIT:
        raise InvalidInput(f"at_match_limit must be one of {sorted(AT_LIMIT)}, got "
                           f"{at_limit!r}", code="invalid_match_limit")


def _ceil_ms(value: float) -> int:
    return max(0, math.ceil(value - 1e-6))


class MatchClockPhase(StrEnum):
    """The match clock's phase (state.match_clock.phase): waiting (before the match's first
    break), running, paused (the referee's pause), expired (the limit was reached: the
    organiser's choice applies), stopped (the match ended before its limit)."""

    WAITING = "waiting"  # before the match's first break
    RUNNING = "running"
    PAUSED = "paused"  # the referee's pause
    EXPIRED = "expired"  # the limit was reached: the organiser's choice applies
    STOPPED = "stopped"  # the match ended before its limit


WAITING, RUNNING, PAUSED, EXPIRED, STOPPED = MatchClockPhase
_OVER = Ignore("the limit was reached, or the match ended: the clock stays where it is")

# phase -> step -> cell (machine.Go: where it leads and the event it makes; Ignore: the
# step changes nothing). The table's clock calls ``start`` at every start and the break's
# result, ``pause``/``resume`` at the referee's, ``stop`` when the match ends; ``warning``
# and ``limit`` are the time reaching a threshold or the limit (``advance``).
MATCH_CLOCK: Machine[MatchClockPhase] = Machine(
    "match clock", MatchClockPhase, ("start", "pause", "resume", "warning", "limit", "stop"), {
        WAITING: {
            "start": Go(RUNNING, ("match_clock.started",)),  # the match's first break
            "pause": Ignore("not counting yet: the first break starts it"),
            "resume": Ignore("not counting yet: the first break starts it"),
            "warning": Ignore("not counting yet"),
            "limit": Ignore("not counting yet"),
            "stop": Go(STOPPED),  # the match ended before its first break
        },
        RUNNING: {
            "start": Ignore("counting since the first break"),
            "pause": Go(PAUSED, ("match_clock.paused",)),  # the referee's pause only
            "resume": Ignore("counting"),
            "warning": Go(RUNNING, ("match_clock.warning",)),  # 10 and 5 minutes left
            "limit": Go(EXPIRED, ("match_clock.expired",)),  # AT_LIMIT applies
            "stop": Go(STOPPED),
        },
        PAUSED: {
            "start": Ignore("counting since the first break (paused now)"),
            "pause": Ignore("already paused"),
            "resume": Go(RUNNING, ("match_clock.resumed",)),
            "warning": Ignore("paused"),
            "limit": Ignore("paused"),
            "stop": Go(STOPPED),
        },
        EXPIRED: {step: _OVER for step in ("start", "pause", "resume", "warning", "limit",
                                            "stop")},
        STOPPED: {step: _OVER for step in ("start", "pause", "resume", "warning", "limit",
                                            "stop")},
    }, events=EVENT_TYPES)


class MatchClock:
    """Phases: ``MatchClockPhase``; where each step leads: ``MATCH_CLOCK``."""

    def __init__(self, limit_ms: int, at_limit: str = "leader_wins") -> None:
        check_match_limit(limit_ms, at_limit)
        self.limit_ms = limit_ms
        self.at_limit = at_limit
        self._phase = Current(MATCH_CLOCK, WAITING)
        self.deadline: float | None = None  # while running
        self.remaining: int = limit_ms  # authoritative when not running
        self.started_at: float | None = None
        self.pending_warnings = [w for w in MATCH_WARNINGS_MS if w < limit_ms]

    @property
    def phase(self) -> MatchClockPhase:
        return self._phase.state

    def remaining_ms(self, now: float) -> int:
        if self.phase is RUNNING and self.deadline is not None:
            return _ceil_ms(self.deadline - now)
        return self.remaining

    def next_wakeup(self) -> float | None:
        if self.phase is not RUNNING or self.deadline is None:
            return None
        if self.pending_warnings:
            return self.deadline - self.pending_warnings[0]
        return self.deadline

    # -- steps (the table's clock calls these; each returns its events) -----------------
    def start(self, now: float) -> list[Event]:
        """The first break of the match: the limit starts counting."""
        if not self._phase.acts("start"):
            return []
        self._phase.apply("start")
        self.started_at = now
        self.deadline = now + self.remaining
        return [MATCH_CLOCK_STARTED(self._data(now))]

    def pause(self, now: float) -> list[Event]:
        if not self._phase.acts("pause"):
            return []
        self.remaining = self.remaining_ms(now)
        self.deadline = None
        self._phase.apply("pause")
        return [MATCH_CLOCK_PAUSED(self._data(now))]

    def resume(self, now: float) -> list[Event]:
        if not self._phase.acts("resume"):
            return []
        self._phase.apply("resume")
        self.deadline = now + self.remaining
        return [MATCH_CLOCK_RESUMED(self._data(now))]

    def stop(self, now: float) -> list[Event]:
        """The match ended before its limit: the clock stops where it is."""
        if not self._phase.acts("stop"):
            return []
        self.remaining = self.remaining_ms(now)
        self.deadline = None
        self._phase.apply("stop")
        self.pending_warnings = []
        return []

    def advance(self, now: float) -> tuple[list[Event], bool]:
        """Warnings due at ``now`` and whether the limit was reached now."""
        if not self._phase.acts("limit") or self.deadline is None:
            return [], False
        if now >= self.deadline:
            deadline = self.deadline
            self._phase.apply("limit")
            self.deadline = None
            self.remaining = 0
            self.pending_warnings = []
            choice = AT_LIMIT[self.at_limit]
            return [MATCH_CLOCK_EXPIRED({**self._data(now), "deadline": deadline,
                                         "late_ms": round(now - deadline, 3),
                                         "rule": choice.rule, "text": choice.text})], True
        due = [w for w in self.pending_warnings if now >= self.deadline - w]
        if not due:
            return [], False
        self._phase.apply("warning")
        self.pending_warnings = self.pending_warnings[len(due):]
        return [MATCH_CLOCK_WARNING({**self._data(now), "threshold_ms": due[-1]})], False

    def _data(self, now: float) -> MatchClockData:
        return {"limit_ms": self.limit_ms, "remaining_ms": self.remaining_ms(now),
                "deadline": self.deadline if self.phase is RUNNING else None,
                "at_limit": self.at_limit}

    # -- reading and persistence ------------------------------------------------------------
    def state(self, now: float) -> dict[str, Any]:
        choice = AT_LIMIT[self.at_limit]
        return {"limit_ms": self.limit_ms, "phase": self.phase,
                "remaining_ms": self.remaining_ms(now),
                "deadline": self.deadline if self.phase is RUNNING else None,
                "started_at": self.started_at, "at_limit": self.at_limit,
                "at_limit_text": choice.text, "rule": choice.rule,
                "warnings_ms": list(MATCH_WARNINGS_MS)}

    def to_dict(self) -> dict[str, Any]:
        return {"limit_ms": self.limit_ms, "at_limit": self.at_limit, "phase": self.phase,
                "deadline": self.deadline, "remaining": self.remaining,
                "started_at": self.started_at, "pending_warnings": list(self.pending_warnings)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MatchClock:
        clock = cls(data["limit_ms"], data["at_limit"])
        clock._phase.restore(data["phase"])
        clock.deadline = data["deadline"]
        clock.remaining = data["remaining"]
        clock.started_at = data["started_at"]
        clock.pending_warnings = list(data["pending_warnings"])
        return clock
