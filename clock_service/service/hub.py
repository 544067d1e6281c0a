"""Fan-out of a table's durable events to its WebSocket clients.

Each client has one bounded queue. Publishing never waits: an event is encoded to JSON
once and put in every queue; a client whose queue is full is cut off with a reason (it
reconnects with ``?since=`` and loses nothing), so a slow or dead client can never
delay the clock, the store or the other clients.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Hub", "Subscriber", "CLOSE_TOO_SLOW", "DEFAULT_QUEUE", "HALL"]

log = logging.getLogger(__name__)

DEFAULT_QUEUE = 1024
# WebSocket close code for a client that could not keep up (application range 4000-4999).
CLOSE_TOO_SLOW = 4001
# The hub key of the hall feed (/ws/hall): never a table id (those are [A-Za-z0-9_-]).
HALL = "*hall"


def encode(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"))


@dataclass(eq=False)
class Subscriber:
    table_id: str
    queue: asyncio.Queue[tuple[int, str] | None] = field(
        default_factory=lambda: asyncio.Queue(DEFAULT_QUEUE))
    last_seq: int = 0  # the last event seq put in the queue (for the cut-off reason)
    dropped: str | None = None  # why the hub cut this client off
    close_code: int = CLOSE_TOO_SLOW  # the close code that goes with it

    def offer(self, seq: int, text: str) -> bool:
        """Queue a message without waiting; False (and cut off) when the queue is full."""
        if self.dropped is not None:
            return False
        try:
            self.queue.put_nowait((seq, text))
        except asyncio.QueueFull:
            # What is queued is dropped, so resume from just before the first lost event
            # (not from last_seq: the client never got the queued ones).
            first_lost = self._wake_with_close() or seq or self.last_seq + 1
            self.dropped = (
                f"too slow: {self.queue.maxsize} messages waiting; "
                f"reconnect with ?since={max(first_lost - 1, 0)}"
            )
            return False
        if seq:
            self.last_seq = seq
        return True

    def _wake_with_close(self) -> int:
        """Drop what is queued (the client resumes from the store) and wake the sender;
        return the lowest event seq dropped (0 if none)."""
        lowest = 0
        while not self.queue.empty():
            item = self.queue.get_nowait()
            if item is not None and item[0] and (not lowest or item[0] < lowest):
                lowest = item[0]
        self.queue.put_nowait(None)
        return lowest


class Hub:
    def __init__(self, queue_size: int = DEFAULT_QUEUE) -> None:
        self.queue_size = queue_size
        self._subs: dict[str, set[Subscriber]] = {}
        self.delivered = 0
        self.cut_off = 0

    def subscribe(self, table_id: str) -> Subscriber:
        sub = Subscriber(table_id, asyncio.Queue(self.queue_size))
        self._subs.setdefault(table_id, set()).add(sub)
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        subs = self._subs.get(sub.table_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[sub.table_id]

    def count(self, table_id: str | None = None) -> int:
        if table_id is None:
            return sum(len(s) for s in self._subs.values())
        return len(self._subs.get(table_id, ()))

    def close_table(self, table_id: str, code: int, reason: str) -> None:
        """Let go of every client of a table, to be closed with ``code`` and ``reason``
        after what is already queued for them."""
        for sub in list(self._subs.pop(table_id, ())):
            if sub.dropped is None:
                sub.dropped, sub.close_code = reason, code
                try:
                    sub.queue.put_nowait(None)
                except asyncio.QueueFull:
                    sub._wake_with_close()

    def tables(self) -> list[str]:
        """The tables that have clients now."""
        return list(self._subs)

    def send(self, table_id: str, text: str) -> None:
        """Offer a message that is not an event (no seq: a status) to every client of the
        table, under the same queue bound as events."""
        subs = self._subs.get(table_id)
        if not subs:
            return
        for sub in list(subs):
            if not sub.offer(0, text) and sub.dropped:
                self._cut(table_id, subs, sub)

    def _cut(self, table_id: str, subs: set[Subscriber], sub: Subscriber) -> None:
        self.cut_off += 1
        log.warning("table %s: client cut off: %s", table_id, sub.dropped)
        subs.discard(sub)

    def publish(self, table_id: str, events: list[dict[str, Any]], texts: list[str]) -> None:
        """Offer events to every client of the table; ``texts`` is their JSON (made once by
        the runtime for the store and every client)."""
        subs = self._subs.get(table_id)
        if not subs:
            return
        for event, text in zip(events, texts, strict=True):
            for sub in list(subs):
                if sub.offer(event["seq"], text):
                    self.delivered += 1
                elif sub.dropped:
                    self._cut(table_id, subs, sub)
