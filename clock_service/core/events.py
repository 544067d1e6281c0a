"""Events the core emits. The runtime gives each a per-table ``seq`` and a unix-ms ``at``.

Each event type is defined once, here: its name on the wire, its payload (the fields of
its ``data``, as a TypedDict), one line for the documents, and whether the match index
reads it. The core builds every event through its type (``FRAME_STARTED({...})``), so
mypy checks each payload where it is written against its definition: a missing, extra or
mistyped field is an error. clock_service/service/wire.py derives each payload's pydantic model
(the OpenAPI and AsyncAPI schemas) from the same TypedDict, adding only each field's wire
type and description; ``EVENT_TYPES``, the document's messages and the match index's
``INDEXED_TYPES`` come from ``EVENTS``. This module imports no pydantic: the core stays
pure, and a payload is a plain dict at run time (making an event through its type costs
one call more than ``Event(name, {...})``, about 0.1 us). (No ``from __future__ import
annotations`` here: Python 3.11's TypedDict would then take every ``NotRequired`` field for
a required one.)

The payloads use the core's Python types (a player is an ``int``, a pair a ``list[int]``,
an enum its value); their order here is the order of the fields in the documents, the
order on the wire is the order each payload is written in.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Literal, NotRequired, Protocol, TypedDict, TypeVar

__all__ = ["Event", "EventType", "EVENTS", "EVENT_TYPES", "INDEXED_TYPES", "StopReason",
           "TurnReason", "Decision", "SlowPlayScope", "PauseReason"]


# -- the payloads: the fields of each event's data ----------------------------------------

StopReason = Literal["shot", "turn", "foul", "new_frame"]
SlowPlayScope = Literal["frame", "match"]
PauseReason = Literal["referee", "restart", "power_lost"]
TurnReason = Literal["turn", "result", "foul", "time_foul", "hand_back"]
Decision = Literal["leader_wins", "drawn", "frame_decides", "tie_break_frame",
                   "next_frame_decides", "shot_clock_on"]

class TableCreatedData(TypedDict):
    table: str
    players: list[str]
    timer: bool
    profile: dict[str, Any]
    first_breaker: int
    race_to: int | None
    event: NotRequired[str]
    referee: NotRequired[str]
    match_limit_ms: NotRequired[int]
    at_match_limit: NotRequired[str]


class MatchStartedData(TypedDict):
    number: int
    players: list[str]
    timer: bool
    profile: dict[str, Any]
    first_breaker: int
    race_to: int | None
    match_limit_ms: NotRequired[int]
    at_match_limit: NotRequired[str]
    event: NotRequired[str]
    referee: NotRequired[str]
    reason: NotRequired[str]


class TableArchivedData(TypedDict):
    archived_as: str


class FrameStartedData(TypedDict):
    frame: int
    breaker: int
    player: int
    visit: int
    round: int
    limit_ms: int | None


class FrameEndedData(TypedDict):
    frame: int
    winner: int | None
    reason: str
    frames_won: list[int]
    rule: str | None
    outside_rules: bool
    referee_reason: str | None
    fouls: list[int]


class MatchEndedData(TypedDict):
    winner: int | None
    score: list[int]
    frames_won: list[int]
    race_to: int | None
    frames: int
    by_time_limit: bool
    drawn: bool


class MatchSignedData(TypedDict):
    first: int
    last: int
    digest: str
    algorithm: Literal["ed25519"]
    key: str
    fingerprint: str
    signature: str


class ShotResultData(TypedDict):
    player: int
    frame: int
    visit: int
    report: dict[str, Any]
    outcome: dict[str, Any]
    whites: list[int]
    fouls: list[int]


class CallAnnouncedData(TypedDict):
    call: dict[str, Any]
    replaced: dict[str, Any] | None
    frame: int
    visit: int
    phase: str
    player: int
    remaining_ms: int | None
    deadline: float | None


class RespotData(TypedDict):
    player: int | None
    respots: list[dict[str, Any]]
    instructions: list[str]


class ClockRunData(TypedDict):
    limit_ms: int | None
    player: int
    remaining_ms: int | None
    deadline: float | None


class ClockStoppedData(TypedDict):
    reason: StopReason
    player: int
    remaining_ms: int | None
    deadline: float | None


class ClockPausedData(TypedDict):
    reason: PauseReason
    remaining_ms: int | None
    player: NotRequired[int]
    deadline: NotRequired[float | None]


class ClockExtendedData(TypedDict):
    player: int
    extension_ms: int
    remaining_ms: int | None
    deadline: float | None


class ClockWarningData(TypedDict):
    threshold_ms: int
    remaining_ms: int
    deadline: float
    player: int


class ClockExpiredData(TypedDict):
    player: int
    deadline: float
    remaining_ms: Literal[0]
    late_ms: float


class ClockCorrectedData(TypedDict):
    by: str
    reason: str | None
    player: int
    remaining_ms: int | None
    deadline: float | None


class CorrectionUndoneData(TypedDict):
    undone: str
    by: str
    reason: str | None
    remaining_ms: int | None


class FoulData(TypedDict):
    player: int
    reason: str
    rule: str
    code: str
    breaches: list[dict[str, Any]]
    fouls: list[int]
    technical_loss: bool


class TurnData(TypedDict):
    player: int
    visit: int
    round: int
    limit_ms: int | None
    reason: TurnReason


class ShotClockOnData(TypedDict):
    reason: str
    scope: SlowPlayScope
    limit_ms: int
    frame: int
    player: int
    remaining_ms: int | None
    deadline: float | None


class ShotClockOffData(TypedDict):
    frame: int
    reason: Literal["frame_ended"]


class MatchClockData(TypedDict):
    limit_ms: int
    remaining_ms: int
    deadline: float | None
    at_limit: str


class MatchClockWarningData(MatchClockData):
    threshold_ms: int


class MatchClockExpiredData(MatchClockData):
    late_ms: float
    rule: str
    text: str


class MatchClockAppliedData(TypedDict):
    at_limit: str
    decision: Decision
    rule: str
    winner: int | None
    score: list[int]
    frame: int


# -- the event types ------------------------------------------------------------------------

_P = TypeVar("_P", bound=Mapping[str, Any])


@dataclass(frozen=True)
class EventType(Generic[_P]):
    """One event type, defined once: its name on the wire, its payload (the TypedDict of
    its ``data``), one line for the documents, and whether the match index reads it.
    Calling it with a payload makes the event: ``TURN({"player": 1, ...})``."""

    name: str
    payload: type[_P]
    description: str
    indexed: bool = False  # storage/index.py builds the match list from these

    @property
    def message(self) -> str:
        """The name of its message model: ``clock.started`` -> ``ClockStartedEvent``."""
        return "".join(part.capitalize() for part in re.split(r"[._]", self.name)) + "Event"

    def __call__(self, data: _P) -> "Event":
        return Event(self.name, data)


# In the order the documents list them.
TABLE_CREATED = EventType(
    "table.created", TableCreatedData, "The table was created (its first event).",
    indexed=True)
TABLE_ARCHIVED = EventType(
    "table.archived", TableArchivedData,
    "The table was archived (DELETE /api/tables/{id}; its last event): its clients are "
    "closed with 4404, its events stay under data.archived_as.", indexed=True)
FRAME_STARTED = EventType(
    "frame.started", FrameStartedData, "A frame began; the breaker is at the table (I3).",
    indexed=True)
FRAME_ENDED = EventType(
    "frame.ended", FrameEndedData,
    "The frame ended: 3.2, technical loss (10.5) or the referee.", indexed=True)
MATCH_ENDED = EventType(
    "match.ended", MatchEndedData,
    "The match was won (race_to); only undo or new_match from here.", indexed=True)
MATCH_SIGNED = EventType(
    "match.signed", MatchSignedData,
    "The table service signed the match's record (its events up to match.ended) with its "
    "Ed25519 key; the protocol and the hall verify it (issue 20).")
MATCH_STARTED = EventType(
    "match.started", MatchStartedData,
    "new_match: the table's next match began (frame.started follows); the previous one "
    "stays on record (GET /api/matches/{id}).", indexed=True)
SHOT_RESULT = EventType(
    "shot.result", ShotResultData,
    "The referee's report of a shot as the rules applied it (sections 3-11); foul, respot, "
    "turn or frame.ended follow.")
CALL_ANNOUNCED = EventType(
    "call.announced", CallAnnouncedData,
    "The strict call announced before the shot (7.1); the next shot.result is judged "
    "against it.")
RESPOT = EventType(
    "respot", RespotData,
    "Balls to put back before the next shot (11.x); the clock waits for start (I14).")
CLOCK_STARTED = EventType("clock.started", ClockRunData, "The clock counts down (I15).")
CLOCK_RESUMED = EventType(
    "clock.resumed", ClockRunData, "The clock counts down again after a pause.")
CLOCK_STOPPED = EventType(
    "clock.stopped", ClockStoppedData, "The clock stopped (shot, turn, foul, new_frame).")
CLOCK_PAUSED = EventType(
    "clock.paused", ClockPausedData, "Paused by the referee, or after a restart.")
CLOCK_EXTENDED = EventType(
    "clock.extended", ClockExtendedData, "An extension was added (12.5-12.7).")
CLOCK_WARNING = EventType(
    "clock.warning", ClockWarningData, "The remaining time crossed a warning threshold.")
CLOCK_EXPIRED = EventType(
    "clock.expired", ClockExpiredData, "Time ran out (12.4); a time foul and a turn follow.")
CLOCK_CORRECTED = EventType(
    "clock.corrected", ClockCorrectedData, "set_time: the remaining time was corrected.")
CORRECTION_UNDONE = EventType(
    "correction.undone", CorrectionUndoneData, "undo: the last step was taken back.",
    indexed=True)
FOUL = EventType(
    "foul", FoulData, "A counted foul (10.1, 12.4, I12); the second is a technical loss.")
TURN = EventType("turn", TurnData, "The turn passed: a new visit of the other player.")
SHOT_CLOCK_ON = EventType(
    "shot_clock.on", ShotClockOnData,
    "Slow play: the referee switched the shot clock on (shot_clock_on, 12.1) for the rest "
    "of the frame or the match.")
MATCH_CLOCK_STARTED = EventType(
    "match_clock.started", MatchClockData,
    "The match's first break: its time limit (match_limit_ms) counts.")
MATCH_CLOCK_PAUSED = EventType(
    "match_clock.paused", MatchClockData, "The referee's pause stopped the match clock too.")
MATCH_CLOCK_RESUMED = EventType(
    "match_clock.resumed", MatchClockData, "The match clock counts again.")
MATCH_CLOCK_WARNING = EventType(
    "match_clock.warning", MatchClockWarningData, "10 or 5 minutes of the match are left.")
MATCH_CLOCK_EXPIRED = EventType(
    "match_clock.expired", MatchClockExpiredData,
    "The match's time limit was reached; the organiser's choice (at_limit) applies, citing "
    "its rule.")
MATCH_CLOCK_APPLIED = EventType(
    "match_clock.applied", MatchClockAppliedData,
    "The organiser's choice at the limit did something: a winner, a draw, a tie-break "
    "frame, the shot clock.")
SHOT_CLOCK_OFF = EventType(
    "shot_clock.off", ShotClockOffData,
    "The frame for which slow play was switched on ended: no shot clock from the next "
    "frame.")

EVENTS: dict[str, EventType[Any]] = {kind.name: kind for kind in (
    TABLE_CREATED, TABLE_ARCHIVED, FRAME_STARTED, FRAME_ENDED, MATCH_ENDED, MATCH_SIGNED,
    MATCH_STARTED, SHOT_RESULT, CALL_ANNOUNCED, RESPOT, CLOCK_STARTED, CLOCK_RESUMED,
    CLOCK_STOPPED, CLOCK_PAUSED, CLOCK_EXTENDED, CLOCK_WARNING, CLOCK_EXPIRED,
    CLOCK_CORRECTED, CORRECTION_UNDONE, FOUL, TURN, SHOT_CLOCK_ON, MATCH_CLOCK_STARTED,
    MATCH_CLOCK_PAUSED, MATCH_CLOCK_RESUMED, MATCH_CLOCK_WARNING, MATCH_CLOCK_EXPIRED,
    MATCH_CLOCK_APPLIED, SHOT_CLOCK_OFF,
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

    def caused_by(self, command: _Envelope) -> "Event":
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
