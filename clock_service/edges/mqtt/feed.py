"""What a table's publisher sends to the broker next: a pure core, no I/O.

One ``TableFeed`` per table. It is told what happened (an event became durable, the
connection came up or went down, the broker acknowledged an event, a store read finished,
a consumer asked for a replay) and ``steps()`` says what to do now:

- ``Send(seq, text)``: publish this event (QoS 1) on the table's ``events`` topic;
- ``Read(first, last)``: fetch these events from the store, then call ``loaded``;
- ``SendState(seq, state)``: publish the retained state (only once caught up).

The rules it keeps (issue 13, "no gap, no duplicate, after any outage"):

- Events go out in seq order, each run starting at the last one the broker acknowledged
  (``acked``) + 1: after an outage or a restart the missed ones are sent from the store,
  in order, before any newer one. A new event never overtakes an older unsent one.
- ``acked`` only rises, and only over an unbroken run of acknowledged seqs: it is what the
  store records, so a restart never skips an event the broker did not take. It may lag
  (a restart then sends a few again): consumers drop duplicates by seq.
- At most ``window`` events are in flight; the rest wait (in memory up to ``keep`` past the
  cursor, then in the store): a long outage costs neither memory nor the clock's time.
- Nothing is sent while disconnected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["TableFeed", "Send", "SendState", "Read", "Step"]

WINDOW = 32
KEEP = 512
READ_BATCH = 256


@dataclass(frozen=True)
class Send:
    seq: int
    text: str


@dataclass(frozen=True)
class SendState:
    seq: int
    state: Any  # what the adapter publishes as the retained state (encoded when sent)


@dataclass(frozen=True)
class Read:
    first: int
    last: int


Step = Send | SendState | Read


class TableFeed:
    def __init__(self, table_id: str, *, acked: int, latest: int, state: Any = None,
                 window: int = WINDOW, keep: int = KEEP, read_batch: int = READ_BATCH) -> None:
        """``acked``: from the store; ``latest``: the last durable event; ``state``: the
        table's state after it (sent, retained, once caught up: a broker that lost its
        retained messages gets it back even if the table is idle)."""
        if not 0 <= acked <= latest:
            # The store says the broker has more than the table ever made: a store from
            # elsewhere. Publish everything again rather than skip.
            acked = 0
        if window < 1 or keep < window or read_batch < 1:
            raise ValueError(f"need window >= 1, keep >= window, read_batch >= 1; got "
                             f"{window=}, {keep=}, {read_batch=}")
        self.table_id = table_id
        self.acked = acked  # every seq <= acked was acknowledged by the broker
        self.latest = latest  # the last durable event
        self.window = window
        self.keep = keep
        self.read_batch = read_batch
        self.connected = False
        self.cursor = acked  # the last seq handed out on this connection
        self.in_flight = 0
        self.sent = 0  # events handed out (resends included), for /api/health
        self.skipped = 0  # events the store did not have when asked (never expected)
        self.resyncs = 0  # events told past a seq never told (never expected)
        self._texts: dict[int, str] = {}
        self._acked_above: set[int] = set()  # acknowledged, but past a seq still in flight
        self._reading: Read | None = None
        self._state = SendState(latest, state) if state is not None else None
        self._state_sent = 0  # seq of the state sent on this connection
        # The replay in progress: from which seq, and up to where it had been sent.
        self._replay_from: int | None = None
        self._replay_until = 0
        self.replays = 0  # replays started, and requests merged into one in progress
        self.merged = 0

    @property
    def behind(self) -> int:
        """Durable events the broker has not acknowledged yet."""
        return self.latest - self.acked

    # -- what happened ------------------------------------------------------------------------
    def durable(self, events: Sequence[tuple[int, str]], state: Any = None) -> None:
        """Events are in the store (in order), with their JSON; ``state`` is the table's
        state after the last of them. One already known is ignored; one past a seq never
        told (never expected) is taken as is: the ones between are durable too, so they
        are read from the store when their turn comes (``resyncs`` counts it)."""
        for seq, text in events:
            if seq <= self.latest:
                continue
            if seq != self.latest + 1:
                self.resyncs += 1
            self.latest = seq
            if seq <= self.cursor + self.keep:  # the rest is read from the store
                self._texts[seq] = text
        if state is not None and events and events[-1][0] == self.latest:
            self._state = SendState(self.latest, state)

    def connect(self) -> None:
        """A new connection: start again from the last acknowledged event."""
        self.connected = True
        self.cursor = self.acked
        self._replay_from = None
        self.in_flight = 0
        self._state_sent = 0
        self._reading = None

    def disconnect(self) -> None:
        self.connected = False
        self.in_flight = 0
        self._reading = None

    def acknowledged(self, seq: int) -> None:
        """The broker took event ``seq`` (a PUBACK with a success reason code)."""
        self.in_flight = max(0, self.in_flight - 1)
        self._done(seq, seq)

    def replay(self, since: int) -> bool:
        """A consumer (the hall) missed events after ``since``: send them again, in order.
        Later events wait for the replay to pass them, as after a reconnect. A request
        that a replay in progress covers (it started at or before ``since``) is merged
        into it: nothing is sent twice for it (issue 20, finding 3). True: a replay
        (re)started."""
        if not (self.connected and 0 <= since < self.cursor):
            return False
        if self._replay_from is not None and self.cursor < self._replay_until:
            if since >= self._replay_from:
                self.merged += 1
                return False
        else:
            self._replay_until = self.cursor
        self._replay_from = since
        self.cursor = since
        self._state_sent = 0
        self.replays += 1
        return True

    def loaded(self, read: Read, events: Sequence[tuple[int, str]]) -> None:
        """The store answered ``read`` with ``events`` (seq, text), in order."""
        if read != self._reading:
            return  # asked on a connection that has ended: the next one asks again
        self._reading = None
        got = [(seq, text) for seq, text in events if read.first <= seq <= read.last]
        first = got[0][0] if got else read.last + 1
        if first > read.first and self.cursor == read.first - 1:
            # Never expected: the store does not have them. Go on rather than stall, and
            # count them (``skipped``, in /api/health).
            self.skipped += first - read.first
            self.cursor = first - 1
            self._done(read.first, first - 1)
        for seq, text in got:
            if seq > self.cursor:
                self._texts[seq] = text

    def _done(self, first: int, last: int) -> None:
        """Seqs ``first..last`` need no sending any more: ``acked`` rises over every
        unbroken run from its current value, and their texts are let go."""
        if last <= self.acked:
            return
        if first > self.acked + 1:
            self._acked_above.update(range(first, last + 1))
            return
        for seq in range(self.acked + 1, last + 1):
            self._texts.pop(seq, None)
        self.acked = last
        while self.acked + 1 in self._acked_above:
            self._acked_above.discard(self.acked + 1)
            self.acked += 1
            self._texts.pop(self.acked, None)
        if self._acked_above:
            self._acked_above = {seq for seq in self._acked_above if seq > self.acked}

    # -- what to do ----------------------------------------------------------------------------
    def steps(self) -> list[Step]:
        if not self.connected:
            return []
        out: list[Step] = []
        while self.in_flight < self.window and self.cursor < self.latest:
            seq = self.cursor + 1
            # At or below ``acked`` only a replay sends it: needed once, then let go.
            text = self._texts.pop(seq, None) if seq <= self.acked else self._texts.get(seq)
            if text is None:
                if self._reading is None:
                    self._reading = Read(seq, min(self.latest, self.cursor + self.read_batch))
                    out.append(self._reading)
                break
            self.cursor = seq
            self.in_flight += 1
            self.sent += 1
            out.append(Send(seq, text))
        if (self.cursor == self.latest and self._state is not None
                and self._state.seq == self.latest and self._state_sent < self.latest):
            self._state_sent = self.latest
            out.append(self._state)
        return out
