"""The countdown of the shot at the table: a deadline while it runs, the time left
otherwise. No I/O.

Deadlines are absolute, on the caller's timeline of milliseconds; the time left is derived
from the deadline while the clock runs, never counted down. The warnings still ahead of a
running shot are the profile's thresholds below the time it had when its deadline was last
set; each is announced once (``due``). Whether the shot counts at all (a timed match, slow
play) and what the phase is are the table clock's (``clock.TableClock``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["Countdown", "ceil_ms"]


def ceil_ms(value: float) -> int:
    """Milliseconds rounded up (a shot never shows less time than it has), never below 0."""
    return max(0, math.ceil(value - 1e-6))


class Countdown:
    """``remaining``: the time shown while the shot does not count (and, while it counts,
    the time it had when its deadline was last set: the most a restart may give back);
    ``deadline``: while it counts; ``pending_warnings``: thresholds still ahead."""

    __slots__ = ("remaining", "deadline", "pending_warnings")

    def __init__(self) -> None:
        self.remaining: int | None = None
        self.deadline: float | None = None
        self.pending_warnings: list[int] = []

    def left(self, now: float) -> int | None:
        """The time left at ``now``: from the deadline while there is one."""
        return self.remaining if self.deadline is None else ceil_ms(self.deadline - now)

    def count_to(self, deadline: float, now: float, warnings_ms: Sequence[int]) -> None:
        """Count down to ``deadline`` (start, resume, extension, set_time, slow play)."""
        self.deadline = deadline
        left = deadline - now
        self.remaining = ceil_ms(left)
        # Announce only the thresholds still ahead; after an extension the ones that are
        # ahead again are announced again.
        self.pending_warnings = [w for w in warnings_ms if w < left]

    def show(self, remaining: int | None) -> None:
        """Stop counting and show ``remaining`` (the next shot's limit, the time left, 0
        after an expiry, nothing once the frame is over)."""
        self.deadline = None
        self.pending_warnings = []
        self.remaining = remaining

    def freeze(self, remaining: int | None) -> None:
        """Stop counting with ``remaining`` left, keeping the warnings still ahead (a pause:
        a resume sets them again from the time left)."""
        self.remaining = remaining
        self.deadline = None

    def wakeup(self) -> float | None:
        """The next instant something is due: the next warning, else the deadline."""
        if self.deadline is None:
            return None
        if self.pending_warnings:
            return self.deadline - self.pending_warnings[0]
        return self.deadline

    def due(self, now: float) -> int | None:
        """The warning due at ``now``, or None. Woken late past several thresholds (a
        stalled host), only the latest is announced: one beep, not a burst of stale ones."""
        deadline = self.deadline
        if deadline is None:
            return None
        crossed = [w for w in self.pending_warnings if now >= deadline - w]
        if not crossed:
            return None
        self.pending_warnings = self.pending_warnings[len(crossed):]
        return crossed[-1]
