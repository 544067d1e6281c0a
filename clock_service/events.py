"""Events the core emits. The runtime gives each a per-table ``seq`` and a unix-ms ``at``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

__all__ = ["Event", "EventType", "EVENTS", "EVENT_TYPES", "INDEXED_TYPES"]


@dataclass(frozen=True)
class EventType:
    """One event type, defined once: its name on the wire, the model of its ``data``, one
    line for the documents, and whether the match index reads it.

    ``payload`` names the pydantic model in clock_service/schemas.py (the core stays free
    of pydantic); schemas.py builds each event's message model from it and fails at import
    when one is missing. The AsyncAPI and OpenAPI documents, ``EVENT_TYPES``, the
    document's messages and the match index's ``INDEXED_TYPES`` all come from ``EVENTS``.
    """

    name: str
    payload: str
    description: str
    indexed: bool = False  # storage/index.py builds the match list from these

    @property
    def message(self) -> str:
        """The name of its message model: ``clock.started`` -> ``ClockStartedEvent``."""
        return "".join(part.capitalize() for part in re.split(r"[._]", self.name)) + "Event"


# In the order the documents list them.
EVENTS: dict[str, EventType] = {kind.name: kind for kind in (
    EventType("table.created", "TableCreatedData",
              "The table was created (its first event).", indexed=True),
    EventType("table.archived", "TableArchivedData",
              "The table was archived (DELETE /api/tables/{id}; its last event): its clients "
              "are closed with 4404, its events stay under data.archived_as.", indexed=True),
    EventType("frame.started", "FrameStartedData",
              "A frame began; the breaker is at the table (I3).", indexed=True),
    EventType("frame.ended", "FrameEndedData",
              "The frame ended: 3.2, technical loss (10.5) or the referee.", indexed=True),
    EventType("match.ended", "MatchEndedData",
              "The match was won (race_to); only undo or new_match from here.", indexed=True),
    EventType("match.signed", "MatchSignedData",
              "The table service signed the match's record (its events up to match.ended) "
              "with its Ed25519 key; the protocol and the hall verify it (issue 20)."),
    EventType("match.started", "MatchStartedData",
              "new_match: the table's next match began (frame.started follows); the "
              "previous one stays on record (GET /api/matches/{id}).", indexed=True),
    EventType("shot.result", "ShotResultData",
              "The referee's report of a shot as the rules applied it (sections 3-11); foul, "
              "respot, turn or frame.ended follow."),
    EventType("call.announced", "CallAnnouncedData",
              "The strict call announced before the shot (7.1); the next shot.result is "
              "judged against it."),
    EventType("respot", "RespotData",
              "Balls to put back before the next shot (11.x); the clock waits for start "
              "(I14)."),
    EventType("clock.started", "ClockRunData", "The clock counts down (I15)."),
    EventType("clock.resumed", "ClockRunData", "The clock counts down again after a pause."),
    EventType("clock.stopped", "ClockStoppedData",
              "The clock stopped (shot, turn, foul, new_frame)."),
    EventType("clock.paused", "ClockPausedData", "Paused by the referee, or after a restart."),
    EventType("clock.extended", "ClockExtendedData", "An extension was added (12.5-12.7)."),
    EventType("clock.warning", "ClockWarningData",
              "The remaining time crossed a warning threshold."),
    EventType("clock.expired", "ClockExpiredData",
              "Time ran out (12.4); a time foul and a turn follow."),
    EventType("clock.corrected", "ClockCorrectedData",
              "set_time: the remaining time was corrected."),
    EventType("correction.undone", "CorrectionUndoneData",
              "undo: the last step was taken back.", indexed=True),
    EventType("foul", "FoulData",
              "A counted foul (10.1, 12.4, I12); the second is a technical loss."),
    EventType("turn", "TurnData", "The turn passed: a new visit of the other player."),
    EventType("shot_clock.on", "ShotClockOnData",
              "Slow play: the referee switched the shot clock on (shot_clock_on, 12.1) for "
              "the rest of the frame or the match."),
    EventType("match_clock.started", "MatchClockData",
              "The match's first break: its time limit (match_limit_ms) counts."),
    EventType("match_clock.paused", "MatchClockData",
              "The referee's pause stopped the match clock too."),
    EventType("match_clock.resumed", "MatchClockData", "The match clock counts again."),
    EventType("match_clock.warning", "MatchClockWarningData",
              "10 or 5 minutes of the match are left."),
    EventType("match_clock.expired", "MatchClockExpiredData",
              "The match's time limit was reached; the organiser's choice (at_limit) "
              "applies, citing its rule."),
    EventType("match_clock.applied", "MatchClockAppliedData",
              "The organiser's choice at the limit did something: a winner, a draw, a "
              "tie-break frame, the shot clock."),
    EventType("shot_clock.off", "ShotClockOffData",
              "The frame for which slow play was switched on ended: no shot clock from the "
              "next frame."),
)}
EVENT_TYPES = frozenset(EVENTS)
INDEXED_TYPES = frozenset(name for name, kind in EVENTS.items() if kind.indexed)


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
