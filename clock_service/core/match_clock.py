"""The match clock: a time limit for a whole match (an organiser's choice, 12.1). No I/O.

Counted from the match's first break, paused only by the referee's pause. Like the shot
clock it keeps an absolute deadline while it runs and derives every remaining time from
it; warnings at 10 and 5 minutes left; at the limit the organiser's choice, written in the
match (``at_limit``), is applied by the table's clock (``clock.TableClock``), which owns the
frames and the score. What each choice does, and the rule it cites, is the table below.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clock_service.core.errors import InvalidInput
from clock_service.core.events import (
    MATCH_CLOCK_EXPIRED,
    MATCH_CLOCK_PAUSED,
    MATCH_CLOCK_RESUMED,
    MATCH_CLOCK_STARTED,
    MATCH_CLOCK_WARNING,
    Event,
    MatchClockData,
)

__all__ = ["MatchClock", "AT_LIMIT", "AtLimit", "MATCH_WARNINGS_MS", "MAX_MATCH_MS",
           "check_match_limit"]

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


class MatchClock:
    """Phases: ``waiting`` (before the first break), ``running``, ``paused`` (the referee's
    pause), ``expired`` (the limit was reached), ``stopped`` (the match ended first)."""

    def __init__(self, limit_ms: int, at_limit: str = "leader_wins") -> None:
        check_match_limit(limit_ms, at_limit)
        self.limit_ms = limit_ms
        self.at_limit = at_limit
        self.phase = "waiting"
        self.deadline: float | None = None  # while running
        self.remaining: int = limit_ms  # authoritative when not running
        self.started_at: float | None = None
        self.pending_warnings = [w for w in MATCH_WARNINGS_MS if w < limit_ms]

    def remaining_ms(self, now: float) -> int:
        if self.phase == "running" and self.deadline is not None:
            return _ceil_ms(self.deadline - now)
        return self.remaining

    def next_wakeup(self) -> float | None:
        if self.phase != "running" or self.deadline is None:
            return None
        if self.pending_warnings:
            return self.deadline - self.pending_warnings[0]
        return self.deadline

    # -- steps (the table's clock calls these; each returns its events) -----------------
    def start(self, now: float) -> list[Event]:
        """The first break of the match: the limit starts counting."""
        if self.phase != "waiting":
            return []
        self.phase = "running"
        self.started_at = now
        self.deadline = now + self.remaining
        return [MATCH_CLOCK_STARTED(self._data(now))]

    def pause(self, now: float) -> list[Event]:
        if self.phase != "running":
            return []
        self.remaining = self.remaining_ms(now)
        self.deadline = None
        self.phase = "paused"
        return [MATCH_CLOCK_PAUSED(self._data(now))]

    def resume(self, now: float) -> list[Event]:
        if self.phase != "paused":
            return []
        self.phase = "running"
        self.deadline = now + self.remaining
        return [MATCH_CLOCK_RESUMED(self._data(now))]

    def stop(self, now: float) -> list[Event]:
        """The match ended before its limit: the clock stops where it is."""
        if self.phase in ("expired", "stopped"):
            return []
        self.remaining = self.remaining_ms(now)
        self.deadline = None
        self.phase = "stopped"
        self.pending_warnings = []
        return []

    def advance(self, now: float) -> tuple[list[Event], bool]:
        """Warnings due at ``now`` and whether the limit was reached now."""
        if self.phase != "running" or self.deadline is None:
            return [], False
        if now >= self.deadline:
            deadline = self.deadline
            self.phase = "expired"
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
        self.pending_warnings = self.pending_warnings[len(due):]
        return [MATCH_CLOCK_WARNING({**self._data(now), "threshold_ms": due[-1]})], False

    def _data(self, now: float) -> MatchClockData:
        return {"limit_ms": self.limit_ms, "remaining_ms": self.remaining_ms(now),
                "deadline": self.deadline if self.phase == "running" else None,
                "at_limit": self.at_limit}

    # -- reading and persistence ------------------------------------------------------------
    def state(self, now: float) -> dict[str, Any]:
        choice = AT_LIMIT[self.at_limit]
        return {"limit_ms": self.limit_ms, "phase": self.phase,
                "remaining_ms": self.remaining_ms(now),
                "deadline": self.deadline if self.phase == "running" else None,
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
        clock.phase = data["phase"]
        clock.deadline = data["deadline"]
        clock.remaining = data["remaining"]
        clock.started_at = data["started_at"]
        clock.pending_warnings = list(data["pending_warnings"])
        return clock
