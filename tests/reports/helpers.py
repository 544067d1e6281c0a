"""A table's clock and its log, numbered as the runtime numbers it (for the reports tests)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clock_service.clock import TableClock
from clock_service.commands import Command, Shot, Start
from clock_service.errors import RuleRefusal
from clock_service.events import Event

T0 = 1_700_000_000_000.0
EARLY_POT = {
    "colour_potted": True,
    "call": {"pocket": "bottom_left", "cushions": ["right_bottom"], "contacts": ["cue>colour"],
             "shot_type": "early_cushion"},
    "route": {"pocket": "bottom_left", "path": ["cue>colour", "right_bottom"]},
}


@dataclass
class Table:
    """One table's clock and its log, numbered like the runtime does."""

    timer: bool = True
    race_to: int | None = None
    clock: TableClock = field(init=False)
    now: float = T0
    table_id: str = "t"
    players: tuple[str, str] = ("Ivanov", "Petrov")
    log: list[dict[str, Any]] = field(default_factory=list)
    batches: list[list[dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.clock = TableClock(list(self.players), timer=self.timer, race_to=self.race_to)
        created = Event("table.created", {"table": self.table_id,
                                          "players": list(self.players),
                                          "timer": self.timer, "race_to": self.race_to,
                                          "first_breaker": 0,
                                          "profile": self.clock.profile.to_dict()})
        self.number([created, *self.clock.open(self.now)])

    def number(self, events: list[Event]) -> None:
        if not events:
            return
        last = len(self.log) + len(events)
        state = self.clock.state(self.now)
        state["seq"] = last
        batch = []
        for event in events:
            batch.append({"type": event.type, "seq": len(self.log) + len(batch) + 1,
                          "table": self.table_id, "at": int(self.now), "data": dict(event.data),
                          "state": state, **event.envelope()})
        self.log += batch
        self.batches.append(batch)

    def do(self, command: Command) -> None:
        try:
            events = self.clock.handle(command, self.now)
        except RuleRefusal as refusal:
            self.number(refusal.events)
            raise
        self.number(events)

    def wait(self, ms: float) -> None:
        """Let ``ms`` pass, waking at each of the clock's own deadlines (warnings, expiry)."""
        target = self.now + ms
        while (wake := self.clock.next_wakeup()) is not None and wake <= target:
            self.now = wake
            self.number(self.clock.advance(wake))
        self.now = target

    def timed(self, ms: float, by: str = "referee") -> None:
        self.do(Start(by=by))
        self.wait(ms)
        self.do(Shot(by=by))


