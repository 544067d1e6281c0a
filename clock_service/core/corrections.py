"""The table clock's corrections: the undo stack (SPEC "Corrections"). No I/O.

Before each undoable step (a command, an expiry) the clock's state is remembered with the
step's name and instant; ``undo`` takes back the last one, up to ``UNDO_DEPTH`` deep. A
correction is an event itself (``correction.undone``): history is never rewritten. The
states are kept as JSON text, so that a hall of tables does not hold thousands of small
dicts for the garbage collector to walk (its full passes showed up as 100 ms stalls at 500
tables); the store keeps each entry as a row of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["Corrections", "UNDO_DEPTH", "Entry"]

UNDO_DEPTH = 20

# (step, at, state as JSON)
Entry = tuple[str, float, str]


class Corrections:
    """The steps that can be taken back, oldest first."""

    __slots__ = ("entries",)

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self.entries: list[Entry] = list(entries)

    def remember(self, step: str, at: float, before: Mapping[str, Any]) -> None:
        self.entries.append((step, at, json.dumps(before, separators=(",", ":"))))
        del self.entries[:-UNDO_DEPTH]

    def take_back(self) -> tuple[str, float, dict[str, Any]]:
        """The last step, its instant and the state before it; it is no longer kept."""
        step, at, state = self.entries.pop()
        return step, at, json.loads(state)

    @property
    def last_step(self) -> str | None:
        """What undo would take back now (state ``can_undo``)."""
        return self.entries[-1][0] if self.entries else None

    def to_list(self) -> list[list[Any]]:
        # Entries are immutable tuples: this copy shares their text.
        return [list(entry) for entry in self.entries]

    @classmethod
    def from_stored(cls, entries: Sequence[Any]) -> Corrections:
        """As ``to_list`` wrote them, or as dicts (``step``, ``at``, ``state``) of older stores."""
        return cls((e["step"], e["at"], json.dumps(e["state"])) if isinstance(e, dict) else
                   (e[0], e[1], e[2]) for e in entries)
