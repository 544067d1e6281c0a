"""What the hall appends next for one table: a pure core, no I/O.

The hall hears a table's events from the broker: usually each once and in order, but a
broker restart loses what it had not delivered, a table that reconnects sends again from
the last event the broker acknowledged (duplicates), and a hall that was away misses
what happened meanwhile. ``TableMirror`` turns that into the table's own log: every seq
once, in order, nothing skipped.

- ``event(seq, payload, now)``: the next one is appended at once, with any held ones that now
  follow; a duplicate (seq already appended) is dropped; one past a gap is held (up to
  ``hold``) and the gap is asked for: ``ask`` = the seq to replay after.
- ``state(seq, now)``: the table's (retained) state says it has made ``seq`` events; if
  the mirror is behind and nothing arrives for ``idle_ms``, it asks.
- ``tick(now)``: asks again, at most every ``retry_ms``, while the mirror is still behind
  and nothing arrives (the table may have been offline when asked).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["TableMirror", "Verdict", "ClockSkew"]

RETRY_MS = 2000.0
IDLE_MS = 1000.0
HOLD = 4096


@dataclass(frozen=True)
class Verdict:
    append: list[tuple[int, Any]] = field(default_factory=list)  # in order, each the next
    ask: int | None = None  # ask the table to replay every event after this seq


class TableMirror:
    def __init__(self, table_id: str, seq: int = 0, *, now: float = 0.0,
                 retry_ms: float = RETRY_MS, idle_ms: float = IDLE_MS, hold: int = HOLD,
                 hold_bytes: int | None = None) -> None:
        self.table_id = table_id
        self.seq = seq  # the last event appended (handed to the store)
        self.known = seq  # the highest seq the table is known to have made
        self.retry_ms = retry_ms
        self.idle_ms = idle_ms
        self.hold = hold
        # Bytes of the held events at most (None: no limit but the count): a gap is asked
        # for anyway; what is not held comes again with the replay.
        self.hold_bytes = hold_bytes
        self._held_bytes = 0
        self._sizes: dict[int, int] = {}
        self.duplicates = 0
        self.asks = 0
        self._held: dict[int, Any] = {}
        self._asked_at: float | None = None
        self._progress_at = now

    @property
    def behind(self) -> int:
        return self.known - self.seq

    def event(self, seq: int, payload: Any, now: float, size: int = 0) -> Verdict:
        """Heard event ``seq`` (``payload``: whatever the adapter keeps of it; ``size``: its
        bytes, counted against ``hold_bytes`` while it is held)."""
        if seq <= self.seq:
            self.duplicates += 1
            return Verdict(ask=self._ask(now))
        self.known = max(self.known, seq)
        if seq != self.seq + 1:
            # Held only within the window and the byte budget; the rest comes again with
            # the replay.
            if seq <= self.seq + self.hold and seq not in self._held and (
                    self.hold_bytes is None or self._held_bytes + size <= self.hold_bytes):
                self._held[seq] = payload
                self._sizes[seq] = size
                self._held_bytes += size
            return Verdict(ask=self._ask(now))
        append = [(seq, payload)]
        self.seq = seq
        while (held := self._held.pop(self.seq + 1, None)) is not None:
            self.seq += 1
            self._held_bytes -= self._sizes.pop(self.seq, 0)
            append.append((self.seq, held))
        self._progress_at = now
        if self._held and min(self._held) <= self.seq:
            self._held = {s: t for s, t in self._held.items() if s > self.seq}
            for s in [s for s in self._sizes if s <= self.seq]:
                self._held_bytes -= self._sizes.pop(s)
        return Verdict(append, self._ask(now))

    @property
    def held(self) -> int:
        """Events held past a gap now."""
        return len(self._held)

    def state(self, seq: int, now: float) -> int | None:
        self.known = max(self.known, seq)
        return self._ask(now)

    def tick(self, now: float) -> int | None:
        return self._ask(now)

    def _ask(self, now: float) -> int | None:
        if self.seq >= self.known:
            self._asked_at = None
            return None
        # A gap (an event past it is held): ask at once. Behind only by the state: the
        # events may be on their way (a table catching up after an outage), so ask only
        # after a pause in them. Asked already: again only if nothing came for a while.
        idle = now - self._progress_at >= self.idle_ms
        if self._asked_at is None:
            if not (self._held or idle):
                return None
        elif not (idle and now - self._asked_at >= self.retry_ms):
            return None
        self._asked_at = now
        self.asks += 1
        return self.seq


class ClockSkew:
    """How far a table's clock is from the hall's, from the events it sends live.

    An event's ``at`` is the table's unix ms when it happened; the hall hears it a little
    later. ``hall now - at`` is the offset plus that delay (never negative), so the smallest
    of the recent samples is the offset, to within the shortest delay. Deadlines in the
    events are on the table's clock: a Pi without NTP (it has no real-time clock) makes the
    hall's pages count to the wrong instant; ``off()`` says so once it is past ``limit_ms``.
    Only events heard live count (a replay's delay is not the network's).
    """

    def __init__(self, keep: int = 32, needed: int = 8, limit_ms: float = 1000.0) -> None:
        self.keep = keep
        self.needed = needed
        self.limit_ms = limit_ms
        self._samples: list[float] = []

    def sample(self, event_at: float, heard_at: float) -> None:
        self._samples.append(heard_at - event_at)
        if len(self._samples) > self.keep:
            del self._samples[0]

    @property
    def offset_ms(self) -> float | None:
        """The hall's clock minus the table's (None: too few samples yet)."""
        if len(self._samples) < self.needed:
            return None
        return min(self._samples)

    def off(self) -> float | None:
        """The offset when it is past the limit either way, else None."""
        offset = self.offset_ms
        return offset if offset is not None and abs(offset) > self.limit_ms else None
