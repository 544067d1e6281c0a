"""A table's clock and its log, numbered as the runtime numbers it (for the reports tests)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from clock_service.core.clock import TableClock
from clock_service.core.commands import (
    Command,
    Extension,
    NewFrame,
    Pause,
    Result,
    Resume,
    Shot,
    Start,
    Undo,
)
from clock_service.core.errors import RuleRefusal
from clock_service.core.events import Event
from clock_service.service.storage import Store

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


def play_200_shots(seed: int = 14) -> Table:
    """A 200-shot open-ended match on table 'bench': 5 frames of 40 shots, with pauses,
    an extension, a time foul and an undone shot per frame (the benchmark's match)."""
    rng = random.Random(seed)
    table = Table(race_to=None, table_id="bench")
    shots = 0
    for frame in range(5):
        for i in range(40):
            if i == 7:
                table.do(Extension())
            table.do(Start())
            if i == 20:  # a time foul once per frame (the player at the table)
                table.wait(36_000)
                table.do(Start())  # the opponent accepts
            limit = table.clock.shot_limit() or 20_000
            used = rng.randint(3000, limit - 1000)
            if i % 9 == 4:  # a pause inside the shot
                table.wait(used // 2)
                table.do(Pause())
                table.wait(20_000)
                table.do(Resume())
                table.wait(used - used // 2)
            else:
                table.wait(used)
            table.do(Shot())
            if i == 30:  # pressed too soon, taken back, played 2 s later
                table.do(Undo())
                table.do(Resume())
                table.wait(2000)
                table.do(Shot())
            table.do(Result(whites_potted=0, legal_break=True) if i == 0
                     else Result(whites_potted=0))
            shots += 1
        table.do(NewFrame(winner=frame % 2, reason="time is up for the session"))
    assert shots == 200
    return table


def write_table(store: Store, table: Table) -> None:
    first, *rest = table.batches
    store.create_table(table.table_id, {"players": list(table.players)},
                       table.clock.to_dict(), first, first[-1]["seq"],
                       created_at=int(first[0]["at"]))
    for batch in rest:
        store.append(table.table_id, batch, None, batch[-1]["seq"])
    table.batches = []
