"""Events the core emits. The runtime gives each a per-table ``seq`` and a unix-ms ``at``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

__all__ = ["Event", "EVENT_TYPES"]

EVENT_TYPES = frozenset(
    {
        "table.created",
        "table.archived",
        "frame.started",
        "frame.ended",
        "clock.started",
        "clock.stopped",
        "clock.paused",
        "clock.resumed",
        "clock.extended",
        "clock.warning",
        "clock.expired",
        "clock.corrected",
        "correction.undone",
        "foul",
        "turn",
        "match.ended",
        "match.started",
        "shot.result",
        "call.announced",
        "respot",
        "shot_clock.on",
        "shot_clock.off",
        "match_clock.started",
        "match_clock.paused",
        "match_clock.resumed",
        "match_clock.warning",
        "match_clock.expired",
        "match_clock.applied",
    }
)


class _Envelope(Protocol):
    @property
    def at(self) -> float | None: ...
    @property
    def by(self) -> str: ...
    @property
    def source(self) -> str | None: ...


@dataclass(frozen=True)
class Event:
    """One event. ``by``, ``source`` and ``press_at`` are set on the events a command made
    (TEAM convention 1: who decided it, where it came from, when it was pressed); events the
    clock makes by itself (warnings, expiry) have none."""

    type: str
    data: Mapping[str, Any] = field(default_factory=dict)
    by: str | None = None
    source: str | None = None
    press_at: float | None = None

    def __post_init__(self) -> None:
        if self.type not in EVENT_TYPES:
            raise ValueError(f"unknown event type {self.type!r}")

    def caused_by(self, command: _Envelope) -> Event:
        return replace(self, by=command.by, source=command.source, press_at=command.at)

    def envelope(self) -> dict[str, Any]:
        """The wire fields of the command that made it (empty for the clock's own events)."""
        out: dict[str, Any] = {}
        if self.by is not None:
            out["by"] = self.by
        if self.source is not None:
            out["source"] = self.source
        if self.press_at is not None:
            out["press_at"] = int(self.press_at)
        return out
