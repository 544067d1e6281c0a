"""Events the core emits. The runtime gives each a per-table ``seq`` and a unix-ms ``at``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Event", "EVENT_TYPES"]

EVENT_TYPES = frozenset(
    {
        "table.created",
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
        "shot.result",
        "respot",
    }
)


@dataclass(frozen=True)
class Event:
    type: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.type not in EVENT_TYPES:
            raise ValueError(f"unknown event type {self.type!r}")
