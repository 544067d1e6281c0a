"""The events: one data model per event type (from clock_service/core/events.py), each
event's message model, and the other messages a table's WebSocket sends (snapshot,
status).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_type_hints

from pydantic import (
    ConfigDict,
    Field,
    create_model,
)
from pydantic.fields import FieldInfo

from clock_service.core import events
from clock_service.core.clock import ClockPhase
from clock_service.core.events import EVENTS, EventType
from clock_service.core.rules import (
    EndReason,
    FoulCode,
)
from clock_service.service.wire.fields import AtLimitCode
from clock_service.service.wire.http import FaultInfo
from clock_service.service.wire.state import (
    BreachRecord,
    CallSpec,
    ClosedModel,
    Player,
    PlayerPair,
    RespotInstruction,
    ShotOutcome,
    ShotReport,
    TimeProfile,
    WsTableState,
)

__all__ = ["CallAnnouncedData", "ClockCorrectedData", "ClockExpiredData", "ClockExtendedData",
           "ClockPausedData", "ClockRunData", "ClockStoppedData", "ClockWarningData",
           "CorrectionUndoneData", "EVENT_MODELS", "FoulData", "FrameEndedData", "FrameStartedData",
           "MatchEndedData", "MatchSignedData", "MatchStartedData", "RespotData", "ShotResultData",
           "SnapshotMessage", "StatusMessage", "TableArchivedData", "TableCreatedData", "TurnData"]


UnixMs = Annotated[float, Field(description="unix ms")]


# Each payload's model, by its TypedDict in clock_service/core/events.py.
PAYLOAD_MODELS: dict[type[Any], type[ClosedModel]] = {}


def _payload(payload: type[Any], doc: str | None = None, *, base: type[ClosedModel] = ClosedModel,
             **wire: Any) -> type[ClosedModel]:
    """The model of an event's data, derived from its payload in events.py: the same
    fields, in the same order, each one required where the payload requires it.

    ``wire`` refines a field where the payload's Python type says less than the documents
    must (a player is 0 or 1, a pair has two items, a profile has its fields) and gives its
    description: ``name=type`` or ``name=(type, Field(...))``. A field it leaves alone keeps
    the payload's type. It may name only the payload's fields, and a field the payload may
    leave out (``NotRequired``) must get a default here, a required one none: anything else
    fails at import. ``base``: the model of the payload the TypedDict extends, whose fields
    come first.
    """
    hints = get_type_hints(payload)
    unknown = sorted(set(wire) - set(hints))
    if unknown:
        raise RuntimeError(f"{payload.__name__}: {unknown} are not fields of its payload "
                           "(clock_service/core/events.py)")
    inherited = list(base.model_fields)
    names = list(hints)
    if names[:len(inherited)] != inherited:
        raise RuntimeError(f"{payload.__name__} does not extend {base.__name__}")
    fields: dict[str, Any] = {}
    for name in names[len(inherited):]:
        given = wire.get(name, hints[name])
        kind, info = given if isinstance(given, tuple) else (given, ...)
        has_default = not (info is ... or isinstance(info, FieldInfo) and info.is_required())
        if has_default == (name in payload.__required_keys__):
            raise RuntimeError(
                f"{payload.__name__}.{name}: the payload (clock_service/core/events.py) "
                + ("requires it, so its model must give it no default" if has_default else
                   "may leave it out (NotRequired), so its model must give it a default"))
        fields[name] = (kind, info)
    model: type[ClosedModel] = create_model(payload.__name__, __base__=base, __doc__=doc,
                                        __module__=__name__, **fields)
    PAYLOAD_MODELS[payload] = model
    return model


TableCreatedData = _payload(
    events.TableCreatedData,
    players=(list[str], Field(min_length=2, max_length=2)),
    profile=TimeProfile,
    first_breaker=Player,
    event=(str | None, Field(None, description="absent unless given at creation")),
    referee=(str | None, Field(None, description="absent unless given at creation")),
    match_limit_ms=(int | None, Field(None, description="absent unless given at creation")),
    at_match_limit=(AtLimitCode | None, Field(None, description="with match_limit_ms")),
)


MatchStartedData = _payload(
    events.MatchStartedData,
    "A new match on the table (new_match); the previous one stays on record.",
    number=(int, Field(description="the match's number on the table (the first is 1)")),
    players=(list[str], Field(min_length=2, max_length=2)),
    profile=TimeProfile,
    first_breaker=Player,
    match_limit_ms=(int | None, Field(None, description="this match's time limit; absent: none")),
    at_match_limit=(AtLimitCode | None, Field(None, description="with match_limit_ms")),
    event=(str | None, Field(None, description="absent unless given")),
    referee=(str | None, Field(None, description="absent unless given")),
    reason=(str | None, Field(None, description=(
        "why the previous match was left unfinished; absent when it was over (or open-ended "
        "between frames)"))),
)


TableArchivedData = _payload(
    events.TableArchivedData,
    archived_as=(str, Field(examples=['1~1'], description=(
        "the id its events are kept under now, <id>~<n>: GET /api/archive/{archive_id}/events"))),
)


FrameStartedData = _payload(
    events.FrameStartedData,
    breaker=Player,
    player=Player,
    limit_ms=(int | None, Field(description="null without a timer (12.1)")),
)


FrameEndedData = _payload(
    events.FrameEndedData,
    winner=(Player | None, Field(description="null: the referee ended it for nobody")),
    reason=EndReason,
    frames_won=PlayerPair,
    rule=(str | None, Field(description=(
        "the rule that ended it: 3.2 (legal pot of the coloured ball), 10.5-10.6 (second foul); "
        "null when the referee ended it"))),
    outside_rules=(bool, Field(description=(
        "true: the referee ended the frame in progress (new_frame), a decision outside the "
        "rules (D9)"))),
    referee_reason=(str | None, Field(description="the referee's reason when outside_rules")),
    fouls=(PlayerPair, Field(description=(
        "the frame's final foul count (10.5: the next frame starts from zero, D8)"))),
)


MatchEndedData = _payload(
    events.MatchEndedData,
    winner=(Player | None, Field(description="null: drawn at the time limit")),
    score=PlayerPair,
    frames_won=PlayerPair,
    frames=(int, Field(description="frames played")),
    by_time_limit=(bool, Field(description=(
        "ended by the match's time limit (see match_clock.applied), not by the race"))),
    drawn=(bool, Field(description="the time limit ended it level (winner null)")),
)


MatchSignedData = _payload(
    events.MatchSignedData,
    first=(int, Field(description="the first event signed (the match's first)")),
    last=(int, Field(description="the last event signed (its match.ended)")),
    digest=(str, Field(description=(
        "SHA-256 of events first..last as the protocol computes it (storage/records.py)"))),
    key=(str, Field(description="the table service's Ed25519 public key, base64 (raw)")),
    fingerprint=(str, Field(description=(
        "SHA-256 of the key, 16 bytes in groups of four hex digits, as the protocol prints it"))),
    signature=(str, Field(description=(
        "base64 Ed25519 signature of {v, table, first, last, digest} "
        "(clock_service/service/signing.py)"))),
)


ShotResultData = _payload(
    events.ShotResultData,
    player=(Player, Field(description="the shooter")),
    report=ShotReport,
    outcome=ShotOutcome,
    whites=(PlayerPair, Field(description="whites credited this frame, after the shot")),
    fouls=(PlayerPair, Field(description="fouls this frame, after the shot")),
)


CallAnnouncedData = _payload(
    events.CallAnnouncedData,
    "The strict call announced before the shot (7.1), with the clock's time then.",
    call=CallSpec,
    replaced=(CallSpec | None, Field(description=(
        "the call announced before it for the same shot (the player changed it); null: none"))),
    phase=(Literal[ClockPhase.READY, ClockPhase.RUNNING, ClockPhase.PAUSED], Field(description=(
        "the clock when it was announced: ready (before start), running, paused"))),
    player=Player,
    remaining_ms=(int | None, Field(description="the shot time left when it was announced")),
    deadline=(UnixMs | None, Field(description="null unless running")),
)


RespotData = _payload(
    events.RespotData,
    player=(Player | None, Field(description="at the table next (null: the frame is over)")),
    respots=list[RespotInstruction],
)


ClockRunData = _payload(
    events.ClockRunData,
    "clock.started and clock.resumed.",
    player=Player,
    deadline=(UnixMs | None, Field(description="unix ms of the expiry; null without a timer")),
)


ClockStoppedData = _payload(
    events.ClockStoppedData,
    player=Player,
    remaining_ms=(int | None, Field(description="left when it stopped")),
    deadline=(UnixMs | None, Field(description=(
        "the deadline that was running when it stopped; null if it was paused"))),
)


ClockPausedData = _payload(
    events.ClockPausedData,
    reason=(Literal["referee", "restart", "power_lost"], Field(description=(
        "referee; restart: after the service stopped or was killed, with the time it had when "
        "last known alive; power_lost: after a power cut, with the time it had at its last "
        "saved event, so possibly more than at the cut: the referee checks the time (fault "
        "power_lost, docs/RULES.md I19)"))),
    player=(Player | None, Field(None, description="absent when reason is restart")),
    deadline=(UnixMs | None, Field(None, description="always null; absent when reason is restart")),
)


ClockExtendedData = _payload(
    events.ClockExtendedData,
    player=Player,
    deadline=(UnixMs | None, Field(description="null unless running")),
)


ClockWarningData = _payload(
    events.ClockWarningData,
    deadline=UnixMs,
    player=Player,
)


ClockExpiredData = _payload(
    events.ClockExpiredData,
    player=Player,
    deadline=UnixMs,
    late_ms=(float, Field(description="how late the service produced the expiry, ms")),
)


ClockCorrectedData = _payload(
    events.ClockCorrectedData,
    player=Player,
    deadline=(UnixMs | None, Field(description="null unless running")),
)


CorrectionUndoneData = _payload(
    events.CorrectionUndoneData,
    undone=(str, Field(description="the step taken back: a command name or 'expiry'")),
)


FoulData = _payload(
    events.FoulData,
    player=Player,
    reason=(str, Field(description=(
        "every breach in English, with its rule; pages word the foul from code and breaches"))),
    rule=(str, Field(description="the first rule broken")),
    code=(FoulCode, Field(description="the first breach's code (rules.FoulCode)")),
    breaches=(list[BreachRecord], Field(min_length=1, description=(
        "every rule the act broke, in the order found (D5)"))),
    fouls=(PlayerPair, Field(description="fouls this frame, after this one")),
    technical_loss=(bool, Field(description="the second foul: the frame is lost (10.5)")),
)


TurnData = _payload(
    events.TurnData,
    player=Player,
)


class SnapshotMessage(ClosedModel):
    """First message of every connection: the state as of event ``seq``."""

    type: Literal["snapshot"]
    seq: int
    table: str
    state: WsTableState
    referee: bool = Field(description="whether this connection may send commands")
    faults: list[FaultInfo] = Field(description="the current faults that concern this "
                                    "table (see the status message)")
    live: bool = Field(description=(
        "false when this state may be out of date: on the hall service (shotclock hall), "
        "while the table's own service is offline, the hall has lost the broker or the "
        "table's log diverged (as the hall cards' live). The state is then the last known "
        "one, a running countdown frozen at stale_since: pages stop counting and say so. "
        "Always true on serve."))
    stale_since: UnixMs | None = Field(description=(
        "unix ms (this service's clock) since when the state is not live; null when live"))


class StatusMessage(ClosedModel):
    """The faults that concern the table changed (a part failed or recovered): the whole
    current list, to replace what is shown. Not an event: no seq, nothing stored."""

    type: Literal["status"]
    table: str
    faults: list[FaultInfo]
    live: bool = Field(description=(
        "whether the table's state is live now (see the snapshot's live): sent when it "
        "changes, e.g. the table's service went offline behind the hall service. Not live: "
        "stop counting at stale_since (remaining = deadline - stale_since for a running "
        "clock) and show the state as last known"))
    stale_since: UnixMs | None = Field(description=(
        "unix ms (this service's clock) since when the state is not live; null when live"))


class _EventMessage(ClosedModel):
    # Built when first used (the AsyncAPI document, a test), not at import: nothing a
    # service does at run time validates against them, and building the ~40 at every start
    # took 0.15 s of CPU (a few seconds on an older Pi).
    model_config = ConfigDict(extra="forbid", defer_build=True)

    seq: int = Field(description="rises by one per table, no gaps")
    table: str
    at: int = Field(description="unix ms")
    by: str | None = Field(None, description="on events a command made: who decided it "
                           "(referee, camera; for undo/set_time the name given); absent on "
                           "the clock's own events (warning, expiry)")
    source: str | None = Field(None, description="on events a command made: where it came "
                               "from, when the command said so")
    press_at: int | None = Field(None, description="on events a command made with a press "
                                 "time: that time (unix ms)")
    state: WsTableState | None = Field(None, description=(
        "live events only: the table state after the command that made it (for every event "
        "of one command, the state after the last of them). Events replayed from the store "
        "(?since=) carry none: the snapshot before them has the state they lead to"))
    batch: int | None = Field(None, description=(
        "MQTT catch-up only (events sent again from the table's store on its events "
        "topic): the seq of the last event of the commit it was made in, when that is not "
        "its own (what a live event's state.seq says); a hall stores it, so its match "
        "digests are the table's. Never on the WebSocket"))


ShotClockOnData = _payload(
    events.ShotClockOnData,
    "shot_clock_on: the referee switched the shot clock on for slow play.",
    reason=(str, Field(description="the referee's reason")),
    scope=(Literal["frame", "match"], Field(description="for the rest of the frame or match")),
    limit_ms=(int, Field(description="the profile's slow_play_ms: every shot's flat limit")),
    player=Player,
    deadline=(UnixMs | None, Field(description=(
        "set when a shot was being timed: the full limit counts from the switch"))),
)


ShotClockOffData = _payload(
    events.ShotClockOffData,
    frame=(int, Field(description="the frame whose end ended a frame's slow play")),
)


MatchClockData = _payload(
    events.MatchClockData,
    "match_clock.started (the first break), .paused and .resumed (the referee's pause).",
    deadline=(UnixMs | None, Field(description="unix ms of the limit while running")),
    at_limit=AtLimitCode,
)


MatchClockWarningData = _payload(
    events.MatchClockWarningData, base=MatchClockData,
    threshold_ms=(int, Field(description="600000 or 300000: 10 or 5 minutes left")),
)


MatchClockExpiredData = _payload(
    events.MatchClockExpiredData, base=MatchClockData,
    rule=(str, Field(description="the rule the organiser's choice applies")),
    text=(str, Field(description="the choice as shown to the players")),
)


MatchClockAppliedData = _payload(
    events.MatchClockAppliedData,
    at_limit=AtLimitCode,
    decision=(Literal["leader_wins", "drawn", "frame_decides", "tie_break_frame",
                      "next_frame_decides", "shot_clock_on"], Field(description=(
        "what the choice did: the leader won, drawn, the frame in play decided, a tie-break "
        "frame follows, the next frame decides, the shot clock switched on"))),
    rule=(str, Field(description="the rule it applies")),
    winner=Player | None,
    score=PlayerPair,
)


def _event_message(kind: EventType[Any]) -> type[_EventMessage]:
    payload = PAYLOAD_MODELS.get(kind.payload)
    if payload is None:
        raise RuntimeError(f"event {kind.name!r}: no model of its payload "
                           f"{kind.payload.__name__} here (_payload)")
    fields: dict[str, Any] = {"type": (Literal[kind.name], ...), "data": (payload, ...)}
    model: type[_EventMessage] = create_model(kind.message, __base__=_EventMessage,
                                              __module__=__name__, **fields)
    return model


# Each event's message model (``clock.started`` -> ClockStartedEvent), from events.EVENTS.
EVENT_MODELS: dict[str, type[_EventMessage]] = {
    name: _event_message(kind) for name, kind in EVENTS.items()}
