"""Time sources: the real one (monotonic, aligned with unix ms at start) and a fake one.

The core works on one float timeline of milliseconds. Aligning the monotonic clock with
the wall clock once, at start, makes every instant read as unix ms for clients (``at``,
``deadline``) while a wall-clock jump (NTP) can never move a deadline.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["TimeSource", "Timer", "RealTime", "FakeTime"]

log = logging.getLogger("shotclock.time")


class Timer(Protocol):
    def cancel(self) -> None: ...


class TimeSource(Protocol):
    def now_ms(self) -> float: ...

    def call_at(self, at_ms: float, callback: Callable[[], None]) -> Timer:
        """Call ``callback`` on the event loop thread at ``at_ms`` (never before)."""
        ...


class RealTime:
    """CLOCK_MONOTONIC in ms, shifted to read as unix ms; timers through ``loop.call_at``.

    ``wall_ms`` (default ``time.time()`` in ms) is read at start to align the timeline, and
    by ``wall_step_ms`` to notice the wall clock being set while the service runs.
    """

    def __init__(self, wall_ms: Callable[[], float] | None = None) -> None:
        self._wall_ms = wall_ms or (lambda: time.time() * 1000.0)
        self._offset_ms = self._wall_ms() - time.monotonic() * 1000.0
        self.held_ms = 0.0  # how far not_before moved the timeline ahead of the wall clock

    def now_ms(self) -> float:
        return time.monotonic() * 1000.0 + self._offset_ms

    def not_before(self, at_ms: float) -> float:
        """Keep this timeline after ``at_ms`` (the store's last event or heartbeat).

        A Pi has no real-time clock: after a power cut ``fake-hwclock`` (or no clock at
        all) can start the wall clock before the time of events already stored, and event
        times (``at``) would go backwards within the store. Then the timeline starts 1 ms
        after ``at_ms`` instead, and the step is logged. Returns the shift in ms (0: none).
        """
        now = self.now_ms()
        if now > at_ms:
            return 0.0
        shift = at_ms - now + 1.0
        self._offset_ms += shift
        self.held_ms += shift
        log.warning(
            "the wall clock is %.3f s behind the store's last event (a power cut without a "
            "real-time clock, or the clock was set back): event times continue after it, "
            "%.3f s ahead of the wall clock until a restart with the clock set (NTP)",
            shift / 1000.0, shift / 1000.0)
        return shift

    def wall_step_ms(self) -> float:
        """The wall clock minus this timeline now: 0 at start (or ``-held_ms``); it moves
        when the wall clock is stepped (NTP, a manual set, a fake-hwclock restore)."""
        return self._wall_ms() - self.now_ms()

    def call_at(self, at_ms: float, callback: Callable[[], None]) -> Timer:
        loop = asyncio.get_running_loop()
        # loop.time() is time.monotonic() on Linux (the default event loop clock).
        return loop.call_at((at_ms - self._offset_ms) / 1000.0, callback)


class _FakeTimer:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeTime:
    """A clock that moves only when told, firing due timers in order (like trio's MockClock)."""

    def __init__(self, start_ms: float = 1_700_000_000_000.0) -> None:
        self._now = float(start_ms)
        self._timers: list[tuple[float, int, _FakeTimer, Callable[[], None]]] = []
        self._order = itertools.count()

    def now_ms(self) -> float:
        return self._now

    def call_at(self, at_ms: float, callback: Callable[[], None]) -> Timer:
        timer = _FakeTimer()
        heapq.heappush(self._timers, (float(at_ms), next(self._order), timer, callback))
        return timer

    def pending(self) -> list[float]:
        return sorted(at for at, _, timer, _ in self._timers if not timer.cancelled)

    def advance(self, ms: float) -> None:
        """Move forward by ``ms``, firing every timer due on the way at its own instant."""
        self.set(self._now + ms)

    def set(self, target_ms: float) -> None:
        if target_ms < self._now:
            raise ValueError(f"time cannot go backwards ({target_ms} < {self._now})")
        while self._timers and self._timers[0][0] <= target_ms:
            at, _, timer, callback = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, at)
            callback()
        self._now = target_ms
