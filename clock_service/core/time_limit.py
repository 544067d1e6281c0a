"""The match's time limit (``match_limit_ms``) and the organiser's choice at it (12.1). No I/O.

The limit's own clock is ``match_clock.MatchClock`` (its phases and steps); this part
holds it with the choice (``AT_LIMIT``) and says what the choice decides: at the limit,
``shot_clock`` switches a shot clock on for the rest of the match at once; every other
choice waits for the frame in play to end (``pending``), then decides the match or the
frame that will (``verdict``). The table clock (``clock.TableClock``) applies what it says
to the rules' match and makes the events.
"""

from __future__ import annotations

from dataclasses import dataclass

from clock_service.core.events import MATCH_CLOCK_APPLIED, Decision, Event
from clock_service.core.match_clock import (
    AT_LIMIT,
    AtLimit,
    MatchClock,
    MatchClockPhase,
    check_match_limit,
)

__all__ = ["MatchLimit", "Verdict"]


@dataclass(frozen=True)
class Verdict:
    """What the organiser's choice decides at the end of a frame after the limit."""

    decision: Decision
    winner: int | None
    ends_match: bool


class MatchLimit:
    """A match's time limit: ``limit_ms`` (None: none), the choice ``at_limit``, its clock,
    and the choice still to apply when the frame in play ends (``pending``)."""

    __slots__ = ("limit_ms", "at_limit", "clock", "pending")

    def __init__(self, limit_ms: int | None, at_limit: str = "leader_wins") -> None:
        check_match_limit(limit_ms, at_limit)
        self.limit_ms = limit_ms
        self.at_limit = at_limit
        self.clock = None if limit_ms is None else MatchClock(limit_ms, at_limit)
        # After the limit: leader_wins, tie_break_frame or frame_decides, applied when the
        # frame in play ends; None otherwise.
        self.pending: str | None = None

    @property
    def choice(self) -> AtLimit:
        return AT_LIMIT[self.at_limit]

    @property
    def reached(self) -> bool:
        return self.clock is not None and self.clock.phase is MatchClockPhase.EXPIRED

    @property
    def deciding(self) -> bool:
        """The frame in play decides the match (frame_decides, or after a tie-break)."""
        return self.pending == "frame_decides"

    # -- the clock's steps: the first break, the referee's pause and resume, the end ---------
    def step(self, name: str, now: float) -> list[Event]:
        """``start``, ``pause`` or ``resume``: the match clock follows the first break and
        the referee's pause; it never stops for anything else."""
        if self.clock is None:
            return []
        made: list[Event] = getattr(self.clock, name)(now)
        return made

    def stop(self, now: float) -> None:
        if self.clock is not None:
            self.clock.stop(now)

    def wakeup(self) -> float | None:
        return None if self.clock is None else self.clock.next_wakeup()

    def advance(self, now: float) -> tuple[list[Event], bool]:
        """The match clock's warnings due at ``now`` and whether it reached the limit now."""
        return ([], False) if self.clock is None else self.clock.advance(now)

    # -- the organiser's choice ---------------------------------------------------------------
    def reach(self) -> bool:
        """The limit was reached: True for the shot clock from now on (``shot_clock``);
        otherwise the choice waits for the end of the frame in play."""
        if self.at_limit == "shot_clock":
            return True
        self.pending = self.at_limit
        return False

    def keep_after_undo(self) -> None:
        """Undo never reaches the match clock: a step taken back from before the limit
        comes back under the choice (the table clock keeps slow play on for shot_clock)."""
        if self.reached and self.at_limit != "shot_clock" and self.pending is None:
            self.pending = self.at_limit

    def verdict(self, score: tuple[int, int], frame_winner: int | None) -> Verdict | None:
        """At the end of the frame in play (``frame_winner``: its winner; None: it had none,
        or the limit came between frames), what the pending choice decides."""
        pending = self.pending
        if pending is None:
            return None
        a, b = score
        leader = None if a == b else (0 if a > b else 1)
        if pending == "frame_decides":
            if frame_winner is None:  # no frame decided it yet: the next one will
                return Verdict("next_frame_decides", None, False)
            return self._ends(Verdict("frame_decides", frame_winner, True))
        if leader is not None:
            return self._ends(Verdict("leader_wins", leader, True))
        if pending == "tie_break_frame":
            self.pending = "frame_decides"
            return Verdict("tie_break_frame", None, False)
        return self._ends(Verdict("drawn", None, True))

    def _ends(self, verdict: Verdict) -> Verdict:
        self.pending = None
        return verdict

    def applied(self, decision: Decision, winner: int | None, score: tuple[int, int],
                frame: int) -> Event:
        """The event of what the choice did (``match_clock.applied``), citing its rule."""
        choice = self.choice
        return MATCH_CLOCK_APPLIED({
            "at_limit": choice.code, "decision": decision, "rule": choice.rule,
            "winner": winner, "score": list(score), "frame": frame})
