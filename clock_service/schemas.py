"""Request and response shapes of the HTTP API (pydantic), used for validation and OpenAPI."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, RootModel, create_model

from clock_service.clock import ALLOWED
from clock_service.commands import MAX_SET_MS, MAX_TEXT, PRESS_FUTURE_MS, PRESS_STALE_MS
from clock_service.rules import (
    BALLS,
    GENERAL_FOULS,
    WHITES,
    CallTiming,
    CueBall,
    Cushion,
    EndReason,
    FoulCode,
    OffTableBall,
    Pocket,
    RespotBall,
    RespotSpot,
    ShotType,
    TouchedWith,
)
from clock_service.rules import Turn as RulesTurn

Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]
# The command envelope (TEAM convention 1), described once for HTTP and WebSocket.
AT_DOC = ("when the press (or camera frame) happened at the table, unix ms on the service's "
          "clock (a remote bridge corrects its clock offset). Older than "
          f"{PRESS_STALE_MS} ms on arrival: 409 stale_press; more than {PRESS_FUTURE_MS} ms "
          "ahead: 422 press_in_future. start, shot, pause and resume take effect at "
          "max(last step, min(arrival, at)); an expiry already due at arrival stands (I17).")
BY_DOC = "who decided it: referee (default) or camera; recorded in its events"
SOURCE_DOC = ("where it came from (console, button, pedal, camera, mqtt ...); recorded in "
              "its events")

__all__ = [
    "CreateTable", "CommandRequest", "MatchState", "RefusedCommand", "TableState", "ErrorBody",
    "ErrorResponse",
    "WireEvent", "FaultInfo", "HealthResponse", "StatusMessage", "BrightnessRequest",
    "BrightnessResponse",
]


class CreateTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,32}$", examples=["2"])
    players: list[str] = Field(min_length=2, max_length=2, examples=[["Ivanov", "Petrov"]])
    timer: bool = Field(True, description="false: a match without time control (12.1)")
    profile: dict[str, Any] = Field(
        default_factory=dict,
        description="Partial time profile; omitted fields take the rules' defaults "
        "(shot_ms 35000, full_rounds 2, step_ms 5000, floor_ms 20000, extension_ms 15000, "
        "extensions_per_frame 1, warnings_ms [10000,5000,4000,3000,2000,1000]).",
        examples=[{"shot_ms": 30000}],
    )
    first_breaker: Literal[0, 1] = Field(0, description="who breaks frame 1 (I3)")
    race_to: int | None = Field(
        None, ge=1, description="frames needed to win the match; null: an open-ended match "
        "(frames are counted, nobody wins it)", examples=[3])
    event: str | None = Field(None, min_length=1, max_length=MAX_TEXT,
                              description="the event (tournament) of the first match, for "
                              "its protocol", examples=["City cup, round 2"])
    referee: str | None = Field(None, min_length=1, max_length=MAX_TEXT,
                                description="the referee of the first match, for its protocol")


class CommandRequest(BaseModel):
    """A referee command. Other fields depend on the command (see README)."""

    model_config = ConfigDict(extra="allow")

    command: str = Field(examples=["start"], description=(
        "start | shot | extension | pause | resume | turn | foul (code? balls? touched_with? "
        "reason? player? rule?) | hand_back | new_frame (winner?, reason: required "
        "mid-frame) | undo (by?, reason?) | set_time (remaining_ms, by?, reason?) | result "
        "(whites_potted?, colour_potted?, call?, route?, legal_break: required on the break, "
        "referee_foul?) | call (pocket, cushions?, contacts?, shot_type?)"))
    at: float | None = Field(None, description=AT_DOC, examples=[1_700_000_000_000])
    by: str = Field("referee", description=BY_DOC + "; for undo and set_time, who corrected "
                    "(any text)")
    source: str | None = Field(None, description=SOURCE_DOC, examples=["button"])


class BrightnessRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    level: int = Field(ge=0, le=7, description="0 (dimmest) .. 7 (brightest), as the TM1637 "
                       "counts; the serial controller takes the same scale", examples=[2])


class BrightnessResponse(BaseModel):
    brightness: int
    table: str = Field(description="the table whose display this service drives")


class MatchState(BaseModel):
    id: str = Field(description="the match's id, '<table>.<number>' (GET /api/matches/{id})")
    number: int = Field(description="1 for the table's first match; new_match counts on")
    race_to: int | None = Field(description="frames to win; null: open-ended")
    score: list[int] = Field(description="frames won per player (same as frames_won)")
    frames_won: list[int]
    winner: int | None
    over: bool
    undecided: int = Field(description="frames the referee ended without a winner")


class RefusedCommand(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str = Field(description="the error code the command would be refused with now")
    rule: str | None = Field(None, description="the rule that refuses it; absent otherwise")


class TableState(BaseModel):
    table: str
    seq: int = Field(description="seq of the last event reflected in this state")
    phase: Literal["ready", "running", "paused", "expired", "frame_over"]
    remaining_ms: int | None = Field(description="null when the match has no timer (12.1)")
    limit_ms: int | None
    deadline: float | None = Field(description="unix ms at which the shot expires; running only")
    server_time: float = Field(description="the server's unix ms when this state was made")
    player: Literal[0, 1]
    players: list[str]
    round: int
    visit: int
    extensions_left: list[int]
    fouls: list[int]
    frame: int
    breaker: Literal[0, 1]
    timer: bool
    hand_back_to: int | None = Field(description="the fouler while the 10.4 choice is open")
    frame_winner: int | None
    frame_end_reason: str | None
    frames_won: list[int]
    can_undo: str | None = Field(description="the step an undo would take back")
    profile: dict[str, Any]
    whites: list[int] = Field(description="whites credited per player this frame (5.2-5.3)")
    on_break: bool = Field(description="the next shot is the break of the frame (4.x)")
    announced_call: dict[str, Any] | None = Field(
        None, description="the call announced for the next shot of the player at the table "
        "(7.1, the call command), as {pocket, cushions, contacts, shot_type}; null: none")
    match: MatchState
    allowed: list[str] = Field(
        description="the commands legal right now, sorted: the clock's own transition table "
                    "and rule checks (TableClock.refusal), so a page need not keep a copy of "
                    "the rules; a command left out would be refused (409) whatever its fields",
        json_schema_extra={"items": {"type": "string", "enum": [*sorted(ALLOWED)]}})
    refused: dict[str, RefusedCommand] = Field(
        description="every command not in `allowed`, with the code (and rule) of the refusal it "
                    "would get now: what a page shows on a disabled button")



class ErrorBody(BaseModel):
    code: str
    message: str
    rule: str | None = None


class ErrorResponse(BaseModel):
    error: ErrorBody


class FaultInfo(BaseModel):
    """A fault that needs a person's attention (clock_service/health.py)."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(description="stable identity, e.g. store.write")
    component: str = Field(description="the part at fault: store, hardware, mqtt, camera ...")
    code: str = Field(description="machine code (translated by the pages)",
                      examples=["store_unwritable"])
    message: str = Field(description="the fact, in English")
    table: str | None = Field(description="the table it concerns; null: every table")
    since: int = Field(description="unix ms when it was first raised")
    level: Literal["error", "warning", "info"] = Field(
        "error", description="error | warning | info (a notice, e.g. the camera's "
        "'balls at rest' in assist mode)")
    vars: dict[str, str] | None = Field(
        None, description="values for the translated text, e.g. {\"s\": \"12.43\"}")


class HealthResponse(BaseModel):
    ok: bool = Field(description="the service answers (faults are listed apart)")
    tables: int
    clients: int = Field(description="WebSocket clients now")
    server_time: float = Field(description="unix ms")
    delivered: int = Field(description="event messages queued to clients since start")
    cut_off: int = Field(description="clients cut off for being too slow since start")
    components: dict[str, dict[str, Any]] = Field(
        description="status of each part, by name (store, hardware, mqtt, camera ...)")
    faults: list[FaultInfo] = Field(description="every current fault, oldest first")


class WireEvent(BaseModel):
    type: str
    seq: int
    table: str
    at: int = Field(description="unix ms")
    by: str | None = Field(None, description="events a command made: who decided it")
    source: str | None = Field(None, description="events a command made: where it came from")
    press_at: int | None = Field(None, description="events a command made with a press time")
    data: dict[str, Any]
    state: dict[str, Any] = Field(description="the table state after the command that made it")


# ---------------------------------------------------------------------------------------
# WebSocket messages (/ws/tables/{id}), for the AsyncAPI document (clock_service/asyncapi.py).
# Every message and event ``data`` model forbids extra fields: the contract test validates
# each message a real server sends against them, so a field the document lacks fails it.
# Enumerations come from the rules core itself (Pocket, Cushion, ...), so they cannot drift.


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


Player = Literal[0, 1]
_BALL = "(?:" + "|".join(BALLS) + ")"
CONTACT_PATTERN = f"^{_BALL}>{_BALL}$"
PATH_ITEM_PATTERN = f"^(?:{_BALL}>{_BALL}|" + "|".join(c.value for c in Cushion) + ")$"
PlayerPair = Annotated[list[int], Field(min_length=2, max_length=2)]


class TimeProfile(_Closed):
    """The time profile of a match (12.2-12.7), in full."""

    shot_ms: int = Field(description="limit of a shot in the first full_rounds rounds (12.2)")
    full_rounds: int
    step_ms: int = Field(description="5 s less per round after full_rounds (12.3)")
    floor_ms: int = Field(description="the limit never drops below this (12.3)")
    extension_ms: int = Field(description="one extension adds this much (12.6)")
    extensions_per_frame: int = Field(description="per player per frame (12.5)")
    warnings_ms: list[int] = Field(description="clock.warning thresholds, largest first")


# -- the rules' report (shot.result, and the result command) -------------------------------

class CallSpec(_Closed):
    """The strict call (7.1-7.2), announced before the shot."""

    pocket: Pocket
    cushions: list[Cushion] = Field(default_factory=list,
                                    description="the coloured ball's cushions, in order")
    contacts: list[Annotated[str, Field(pattern=CONTACT_PATTERN)]] = Field(
        default_factory=list, description="ball-to-ball contacts 'striker>struck', in order "
        "(balls: cue, colour, white1..white7)", examples=[["cue>colour"]])
    shot_type: ShotType = ShotType.NORMAL


class RouteSpec(_Closed):
    """What actually happened to the coloured ball on the shot (7.3-7.5, 8.x)."""

    pocket: Pocket | None = Field(None, description="where it dropped; null: not potted")
    path: list[Annotated[str, Field(pattern=PATH_ITEM_PATTERN)]] = Field(
        default_factory=list, description="cushion names and 'striker>struck' contacts, in "
        "order", examples=[["cue>colour", "right_bottom"]])
    cue_ball: CueBall = CueBall.WHITE
    unannounced_contact: bool = False
    jaw_before_drop: bool = False


class WsMatchState(MatchState):
    model_config = ConfigDict(extra="forbid")


class WsTableState(TableState):
    """The table state as sent over the WebSocket (snapshot, every event, ack): the same
    fields as ``TableState`` (HTTP), closed, with ``profile`` and ``match`` spelled out."""

    model_config = ConfigDict(extra="forbid")

    profile: TimeProfile  # type: ignore[assignment]
    announced_call: CallSpec | None  # type: ignore[assignment]
    match: WsMatchState


class WsErrorBody(ErrorBody):
    model_config = ConfigDict(extra="forbid")

    rule: str | None = Field(None, description="the rule that refused it; absent otherwise")


_GENERAL_CODES = sorted(c.value for c in GENERAL_FOULS)


def _general_code(value: str) -> str:
    if value not in _GENERAL_CODES:
        raise ValueError(f"not a general foul code; allowed: {', '.join(_GENERAL_CODES)}")
    return value


GeneralFoulCode = Annotated[str, AfterValidator(_general_code), Field(
    json_schema_extra={"enum": _GENERAL_CODES},
    description="a general foul (9, last item): " + ", ".join(_GENERAL_CODES))]


class GeneralFoulSpec(_Closed):
    """A general foul the referee saw (9, last item; D10), with its detail."""

    code: GeneralFoulCode
    balls: list[OffTableBall] = Field(
        default_factory=list, description="ball_off_table only (required there): the balls "
        "that left the table, 'white' once per white; they are re-spotted (11.1-11.2)")
    touched_with: TouchedWith | None = Field(None, description="touched_ball only (optional)")
    text: Annotated[str, Field(min_length=1, max_length=MAX_TEXT)] | None = Field(
        None, description="free text: required for other, a note for any other code")


class BreachRecord(_Closed):
    """One rule a foul broke (D5: one act is one foul listing every rule it broke)."""

    code: FoulCode
    rule: str
    reason: str
    balls: list[OffTableBall]
    touched_with: TouchedWith | None
    text: str | None


class ShotReport(_Closed):
    """The referee's report of a shot, as given (the announced call is in the outcome)."""

    whites_potted: int = Field(ge=0, le=WHITES)
    colour_potted: bool
    call: CallSpec | None
    route: RouteSpec | None
    legal_break: bool | None
    referee_foul: GeneralFoulSpec | None


class FoulRecord(_Closed):
    player: Player
    rule: str = Field(description="the first rule broken (breaches[0].rule)")
    code: FoulCode = Field(description="the first breach's code")
    reason: str = Field(description="every breach in English, with its rule")
    breaches: list[BreachRecord] = Field(min_length=1)


class RespotInstruction(_Closed):
    ball: RespotBall
    count: int = Field(ge=1, le=WHITES)
    spot: RespotSpot
    rule: str = Field(description="where the ball goes (11.1, 11.2)")
    cause: str = Field(description="the rule that sent it back (4.5, 5.7, 10.3, I8)")
    instruction: str = Field(description="the instruction as the referee's page shows it")


class CallVerdictSpec(_Closed):
    """The judge's answer on the call (7.3-7.5, 8.x)."""

    fulfilled: bool
    rule: str | None = Field(description="the rule the route broke; null when fulfilled")
    message: str


class ShotOutcome(_Closed):
    player: Player
    whites_credited: int
    fouls: list[FoulRecord]
    respots: list[RespotInstruction]
    turn: RulesTurn | None = Field(description="null: the frame is over")
    next_player: Player | None
    choice_for: Player | None = Field(description="who has the 10.4 choice now")
    frame_over: bool
    winner: Player | None
    end_reason: EndReason | None
    end_rule: str | None
    call: CallSpec | None = Field(description="the call the shot was judged against")
    call_timing: CallTiming | None = Field(
        description="announced: given with the call command before the shot (7.1); "
        "after_shot: given inside result by the referee recording it afterwards")
    call_verdict: CallVerdictSpec | None = Field(
        description="the judge's verdict; null when there was no call or no route")


# -- event data, one model per event type ----------------------------------------------------

Ms = Annotated[int, Field(description="milliseconds")]
UnixMs = Annotated[float, Field(description="unix ms")]


class TableCreatedData(_Closed):
    table: str
    players: list[str] = Field(min_length=2, max_length=2)
    timer: bool
    profile: TimeProfile
    first_breaker: Player
    race_to: int | None
    event: str | None = Field(None, description="absent unless given at creation")
    referee: str | None = Field(None, description="absent unless given at creation")


class MatchStartedData(_Closed):
    """A new match on the table (new_match); the previous one stays on record."""

    number: int = Field(description="the match's number on the table (the first is 1)")
    players: list[str] = Field(min_length=2, max_length=2)
    timer: bool
    profile: TimeProfile
    first_breaker: Player
    race_to: int | None
    event: str | None = Field(None, description="absent unless given")
    referee: str | None = Field(None, description="absent unless given")
    reason: str | None = Field(None, description="why the previous match was left "
                               "unfinished; absent when it was over (or open-ended between "
                               "frames)")


class FrameStartedData(_Closed):
    frame: int
    breaker: Player
    player: Player
    visit: int
    round: int
    limit_ms: int | None = Field(description="null without a timer (12.1)")


class FrameEndedData(_Closed):
    frame: int
    winner: Player | None = Field(description="null: the referee ended it for nobody")
    reason: EndReason
    frames_won: PlayerPair
    rule: str | None = Field(description="the rule that ended it: 3.2 (legal pot of the "
                             "coloured ball), 10.5-10.6 (second foul); null when the referee "
                             "ended it")
    outside_rules: bool = Field(description="true: the referee ended the frame in progress "
                                "(new_frame), a decision outside the rules (D9)")
    referee_reason: str | None = Field(description="the referee's reason when outside_rules")
    fouls: PlayerPair = Field(description="the frame's final foul count (10.5: the next "
                              "frame starts from zero, D8)")


class MatchEndedData(_Closed):
    winner: Player
    score: PlayerPair
    frames_won: PlayerPair
    race_to: int | None
    frames: int = Field(description="frames played")


class ShotResultData(_Closed):
    player: Player = Field(description="the shooter")
    frame: int
    visit: int
    report: ShotReport
    outcome: ShotOutcome
    whites: PlayerPair = Field(description="whites credited this frame, after the shot")
    fouls: PlayerPair = Field(description="fouls this frame, after the shot")


class CallAnnouncedData(_Closed):
    """The strict call announced before the shot (7.1), with the clock's time then."""

    call: CallSpec
    replaced: CallSpec | None = Field(description="the call announced before it for the "
                                      "same shot (the player changed it); null: none")
    frame: int
    visit: int
    phase: Literal["ready", "running", "paused"] = Field(
        description="the clock when it was announced: ready (before start), running, paused")
    player: Player
    remaining_ms: int | None = Field(description="the shot time left when it was announced")
    deadline: UnixMs | None = Field(description="null unless running")


class RespotData(_Closed):
    player: Player | None = Field(description="at the table next (null: the frame is over)")
    respots: list[RespotInstruction]
    instructions: list[str]


class ClockRunData(_Closed):
    """clock.started and clock.resumed."""

    limit_ms: int | None
    player: Player
    remaining_ms: int | None
    deadline: UnixMs | None = Field(description="unix ms of the expiry; null without a timer")


class ClockStoppedData(_Closed):
    reason: Literal["shot", "turn", "foul", "new_frame"]
    player: Player
    remaining_ms: int | None = Field(description="left when it stopped")
    deadline: UnixMs | None = Field(
        description="the deadline that was running when it stopped; null if it was paused")


class ClockPausedData(_Closed):
    reason: Literal["referee", "restart"]
    remaining_ms: int | None
    player: Player | None = Field(None, description="absent when reason is restart")
    deadline: UnixMs | None = Field(None, description="always null; absent when reason is "
                                    "restart")


class ClockExtendedData(_Closed):
    player: Player
    extension_ms: int
    remaining_ms: int | None
    deadline: UnixMs | None = Field(description="null unless running")


class ClockWarningData(_Closed):
    threshold_ms: int
    remaining_ms: int
    deadline: UnixMs
    player: Player


class ClockExpiredData(_Closed):
    player: Player
    deadline: UnixMs
    remaining_ms: Literal[0]
    late_ms: float = Field(description="how late the service produced the expiry, ms")


class ClockCorrectedData(_Closed):
    by: str
    reason: str | None
    player: Player
    remaining_ms: int | None
    deadline: UnixMs | None = Field(description="null unless running")


class CorrectionUndoneData(_Closed):
    undone: str = Field(description="the step taken back: a command name or 'expiry'")
    by: str
    reason: str | None
    remaining_ms: int | None


class FoulData(_Closed):
    player: Player
    reason: str = Field(description="every breach in English, with its rule; pages word the "
                        "foul from code and breaches")
    rule: str = Field(description="the first rule broken")
    code: FoulCode = Field(description="the first breach's code (rules.FoulCode)")
    breaches: list[BreachRecord] = Field(min_length=1, description="every rule the act "
                                         "broke, in the order found (D5)")
    fouls: PlayerPair = Field(description="fouls this frame, after this one")
    technical_loss: bool = Field(description="the second foul: the frame is lost (10.5)")


class TurnData(_Closed):
    player: Player
    visit: int
    round: int
    limit_ms: int | None
    reason: Literal["turn", "result", "foul", "time_foul", "hand_back"]


# -- server to client ---------------------------------------------------------------------

class SnapshotMessage(_Closed):
    """First message of every connection: the state as of event ``seq``."""

    type: Literal["snapshot"]
    seq: int
    table: str
    state: WsTableState
    referee: bool = Field(description="whether this connection may send commands")
    faults: list[FaultInfo] = Field(description="the current faults that concern this "
                                    "table (see the status message)")


class StatusMessage(_Closed):
    """The faults that concern the table changed (a part failed or recovered): the whole
    current list, to replace what is shown. Not an event: no seq, nothing stored."""

    type: Literal["status"]
    table: str
    faults: list[FaultInfo]


class _EventMessage(_Closed):
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
    state: WsTableState = Field(description="the table state after the command that made it")


class TableCreatedEvent(_EventMessage):
    type: Literal["table.created"]
    data: TableCreatedData


class FrameStartedEvent(_EventMessage):
    type: Literal["frame.started"]
    data: FrameStartedData


class FrameEndedEvent(_EventMessage):
    type: Literal["frame.ended"]
    data: FrameEndedData


class MatchStartedEvent(_EventMessage):
    type: Literal["match.started"]
    data: MatchStartedData


class MatchEndedEvent(_EventMessage):
    type: Literal["match.ended"]
    data: MatchEndedData


class ShotResultEvent(_EventMessage):
    type: Literal["shot.result"]
    data: ShotResultData


class CallAnnouncedEvent(_EventMessage):
    type: Literal["call.announced"]
    data: CallAnnouncedData


class RespotEvent(_EventMessage):
    type: Literal["respot"]
    data: RespotData


class ClockStartedEvent(_EventMessage):
    type: Literal["clock.started"]
    data: ClockRunData


class ClockResumedEvent(_EventMessage):
    type: Literal["clock.resumed"]
    data: ClockRunData


class ClockStoppedEvent(_EventMessage):
    type: Literal["clock.stopped"]
    data: ClockStoppedData


class ClockPausedEvent(_EventMessage):
    type: Literal["clock.paused"]
    data: ClockPausedData


class ClockExtendedEvent(_EventMessage):
    type: Literal["clock.extended"]
    data: ClockExtendedData


class ClockWarningEvent(_EventMessage):
    type: Literal["clock.warning"]
    data: ClockWarningData


class ClockExpiredEvent(_EventMessage):
    type: Literal["clock.expired"]
    data: ClockExpiredData


class ClockCorrectedEvent(_EventMessage):
    type: Literal["clock.corrected"]
    data: ClockCorrectedData


class CorrectionUndoneEvent(_EventMessage):
    type: Literal["correction.undone"]
    data: CorrectionUndoneData


class FoulEvent(_EventMessage):
    type: Literal["foul"]
    data: FoulData


class TurnEvent(_EventMessage):
    type: Literal["turn"]
    data: TurnData


class PongMessage(_Closed):
    type: Literal["pong"]
    id: Any = Field(description="the ping's id, echoed")
    client_time: Any = Field(description="the ping's client_time, echoed")
    server_time: UnixMs


class AckMessage(_Closed):
    type: Literal["ack"]
    id: Any = Field(description="the command's id, echoed")
    state: WsTableState = Field(description="the state after the command (its events were "
                                "sent before this)")


class ErrorMessage(_Closed):
    type: Literal["error"]
    id: Any = Field(None, description="the message's id, echoed; absent when the message "
                    "could not be read (invalid_json, message_too_large) and on connect")
    status: int | None = Field(None, description="HTTP-like status of a refused command "
                               "(401, 404, 409, 422, 429); absent otherwise")
    error: WsErrorBody


# -- client to server -------------------------------------------------------------------

class PingMessage(BaseModel):
    """For the clock offset; any other field is ignored."""

    type: Literal["ping"]
    id: Any = Field(None, description="echoed in the pong")
    client_time: float | None = Field(None, description="the client's clock, echoed")


class _CommandEnvelope(_Closed):
    type: Literal["command"] = Field(
        "command", description="may be left out when the message has a 'command'")
    id: Any = Field(None, description="echoed in the ack or error")
    source: Text | None = Field(None, description=SOURCE_DOC)
    by: Literal["referee", "camera"] = Field("referee", description=BY_DOC)
    at: float | None = Field(None, description=AT_DOC)


class StartCommand(_CommandEnvelope):
    """Balls at rest: the clock counts (I15); in expired, the opponent accepts (10.4)."""

    command: Literal["start"]


class ShotCommand(_CommandEnvelope):
    """Cue tip on the cue ball in time: the clock stops, the next limit shows (I15)."""

    command: Literal["shot"]


class ExtensionCommand(_CommandEnvelope):
    """Extra time for the player at the table, once per frame (12.5-12.7)."""

    command: Literal["extension"]
    player: Player | None = Field(None, description="who asks (a player's own extension "
                                  "button): refused with not_at_table unless at the table")


class PauseCommand(_CommandEnvelope):
    command: Literal["pause"]


class ResumeCommand(_CommandEnvelope):
    command: Literal["resume"]


class TurnCommand(_CommandEnvelope):
    """The turn passes to the opponent: a new visit."""

    command: Literal["turn"]


class FoulCommand(_CommandEnvelope):
    """A foul the referee saw that is not a shot's result (9, 10.1; D10): a code, or free
    text (code other), or free text with the rule it breaks."""

    command: Literal["foul"]
    reason: Text | None = Field(None, description="free text: the foul when there is no "
                                "code; a note otherwise")
    player: Player | None = Field(None, description="default: the player at the table; for "
                                  "out_of_turn the other one")
    rule: Text | None = Field(None, description="only with a free-text reason and no code "
                              "(default 9)")
    code: GeneralFoulCode | None = None
    balls: list[OffTableBall] = Field(default_factory=list,
                                      description="ball_off_table: the balls off the table")
    touched_with: TouchedWith | None = Field(None, description="touched_ball: with what")


class HandBackCommand(_CommandEnvelope):
    """After a foul the opponent hands the turn back (10.4)."""

    command: Literal["hand_back"]


class NewMatchCommand(_CommandEnvelope):
    """A new match on the table (not while a shot is timed); the previous one stays on
    record. Fields left out keep the previous match's, except event and referee."""

    command: Literal["new_match"]
    players: list[Annotated[str, Field(min_length=1, max_length=60)]] | None = Field(
        None, min_length=2, max_length=2, description="left out: the same players")
    timer: bool | None = Field(None, description="left out: as before")
    profile: dict[str, Any] | None = Field(
        None, description="partial, over the rules' defaults; left out: as before")
    race_to: int | None = Field(None, ge=1, description="left out: as before; null: open-ended")
    first_breaker: Player | None = Field(None, description="left out: as before")
    event: Text | None = Field(None, description="for the protocol's header")
    referee: Text | None = Field(None, description="for the protocol's header")
    reason: Text | None = Field(None, description="why the match in play is left unfinished "
                                "(needed unless it is over, or open-ended between frames: "
                                "422 missing_reason)")


class NewFrameCommand(_CommandEnvelope):
    """End the frame (for winner, or nobody) and start the next. Ending a frame in progress
    is a referee decision outside the rules: it needs a reason (D9)."""

    command: Literal["new_frame"]
    winner: Player | None = None
    reason: Text | None = Field(None, description="required while the frame is in progress "
                                "(422 missing_reason); carried by frame.ended")


class UndoCommand(_CommandEnvelope):
    """Take back the last step (a command or an expiry)."""

    command: Literal["undo"]
    by: Text = "referee"  # type: ignore[assignment]  # a correction names who made it
    reason: Text | None = None


class SetTimeCommand(_CommandEnvelope):
    """Set the remaining time of the current shot."""

    command: Literal["set_time"]
    remaining_ms: int = Field(ge=1, le=MAX_SET_MS)
    by: Text = "referee"  # type: ignore[assignment]  # a correction names who made it
    reason: Text | None = None


class ResultCommand(_CommandEnvelope):
    """What the shot just played did (sections 3-11); after shot, in ready."""

    command: Literal["result"]
    whites_potted: int = Field(0, ge=0, le=WHITES)
    colour_potted: bool = False
    call: CallSpec | None = None
    route: RouteSpec | None = None
    legal_break: bool | None = Field(None, description="required on the break (4.2): was it "
                                     "legal; left out on the break: 422 missing_legal_break; "
                                     "after the break: 422 legal_break_after_break")
    referee_foul: Text | GeneralFoulSpec | None = Field(
        None, description="a general foul seen on this shot (9; D10): free text, or "
        "{code, balls?, touched_with?, text?}; out_of_turn goes with the foul command")


class CallCommand(_CommandEnvelope):
    """The strict call, announced before the shot (7.1-7.2): while the player is at the
    table (ready, running, paused), not on the break (4.4) and not after shot; the next
    result is judged against it."""

    command: Literal["call"]
    pocket: Pocket
    cushions: list[Cushion] = Field(default_factory=list,
                                    description="the coloured ball's cushions, in order")
    contacts: list[Annotated[str, Field(pattern=CONTACT_PATTERN)]] = Field(
        default_factory=list, description="ball-to-ball contacts 'striker>struck', in order; "
        "(balls: cue, colour, white1..white7)")
    shot_type: ShotType = ShotType.NORMAL


class CommandMessage(RootModel[Annotated[
    StartCommand | ShotCommand | ExtensionCommand | PauseCommand | ResumeCommand | TurnCommand
    | FoulCommand | HandBackCommand | NewFrameCommand | UndoCommand | SetTimeCommand
    | ResultCommand | CallCommand | NewMatchCommand,
    Field(discriminator="command"),
]]):
    """A referee command; needs the referee token when the service has one."""


__all__ += [
    "TimeProfile", "WsMatchState", "WsTableState", "WsErrorBody", "CallSpec", "RouteSpec",
    "ShotReport", "FoulRecord", "RespotInstruction", "ShotOutcome",
    "TableCreatedData", "MatchStartedData", "MatchStartedEvent", "NewMatchCommand",
    "FrameStartedData", "FrameEndedData", "MatchEndedData", "ShotResultData",
    "RespotData", "ClockRunData", "ClockStoppedData", "ClockPausedData", "ClockExtendedData",
    "ClockWarningData", "ClockExpiredData", "ClockCorrectedData", "CorrectionUndoneData",
    "FoulData", "TurnData", "SnapshotMessage", "TableCreatedEvent", "FrameStartedEvent",
    "FrameEndedEvent", "MatchEndedEvent", "ShotResultEvent", "RespotEvent", "ClockStartedEvent",
    "ClockResumedEvent", "ClockStoppedEvent", "ClockPausedEvent", "ClockExtendedEvent",
    "ClockWarningEvent", "ClockExpiredEvent", "ClockCorrectedEvent", "CorrectionUndoneEvent",
    "FoulEvent", "TurnEvent", "PongMessage", "AckMessage", "ErrorMessage", "PingMessage",
    "StartCommand", "ShotCommand", "ExtensionCommand", "PauseCommand", "ResumeCommand",
    "TurnCommand", "FoulCommand", "HandBackCommand", "NewFrameCommand", "UndoCommand",
    "SetTimeCommand", "ResultCommand", "CommandMessage", "CallCommand", "CallAnnouncedData",
    "CallAnnouncedEvent", "CallVerdictSpec", "GeneralFoulSpec", "BreachRecord",
]


# ---------------------------------------------------------------------------------------
# Matches as records (GET /api/matches, /api/matches/{id}; clock_service/reports/).
# Time figures are null without a timer (12.1) or when there is no timed shot to take
# them from: absent, never 0.

MatchStatus = Literal["playing", "over", "closed"]


class MatchSummary(_Closed):
    id: str = Field(description="'<table>.<number>'", examples=["1.2"])
    table: str
    number: int = Field(description="1 for the table's first match; new_match counts on")
    status: MatchStatus = Field(description="playing; over (won: race_to reached); closed "
                                "(the table moved on to its next match before a winner)")
    players: list[str]
    timer: bool
    race_to: int | None
    score: PlayerPair = Field(description="frames won")
    frames: int = Field(description="frames started")
    winner: Player | None
    started_at: int = Field(description="unix ms")
    ended_at: int | None = Field(description="unix ms: match.ended, or the next match's start")
    event: str | None
    referee: str | None
    first_breaker: Player | None
    start_seq: int = Field(description="the match's first event in its table's log")
    end_seq: int | None = Field(description="its last event once the next match began")
    closed_reason: str | None = Field(description="closed: why it was left unfinished")


class MatchPage(_Closed):
    matches: list[MatchSummary] = Field(description="newest first")
    next: str | None = Field(description="pass as after= for the next page; null: the last")


class PlayerStatsOut(_Closed):
    """One player's figures over a frame or the match (definitions: README "Matches")."""

    shots: int = Field(description="shots played (clock stopped by shot, or a result)")
    timed_shots: int
    mean_ms: int | None
    median_ms: int | None
    p90_ms: int | None = Field(description="nearest rank")
    max_ms: int | None
    total_ms: int | None
    over_20s: int | None = Field(description="shots with used_ms > 20000")
    over_30s: int | None
    share_over_20s: float | None
    share_over_30s: float | None
    extensions: int
    time_fouls: int
    fouls: int = Field(description="every foul, time fouls included (I12)")
    fouls_by_rule: dict[str, int]
    whites: int = Field(description="whites credited")
    visits: int
    frames_won: int
    breaks: int = Field(description="frames broken")
    breaks_won: int = Field(description="frames broken and won")


class ShotOut(_Closed):
    frame: int
    visit: int
    round: int
    number: int = Field(description="1.. within the frame")
    player: Player
    limit_ms: int | None
    used_ms: int | None = Field(description="start's remaining + extensions granted while "
                                "counting - remaining at the stop (0 at expiry); pauses "
                                "excluded; null without a timer")
    extension: bool
    extension_ms: int
    outcome: Literal["shot", "time_foul", "turn", "foul", "new_frame"] | None = Field(
        description="shot: played in time; time_foul: expired; turn/foul/new_frame: the clock "
        "stopped without a shot; null: still counting")
    fouls: list[str] = Field(description="rules of the fouls this shot caused")
    whites: int | None = Field(description="credited by it (its result); null: not reported")
    colour_potted: bool | None
    pauses: int
    corrected: bool = Field(description="a set_time correction happened during it")
    by: str | None = Field(description="who decided it (referee, camera), when recorded")
    started_at: int
    ended_at: int | None
    start_seq: int
    end_seq: int | None


class MatchFoulOut(_Closed):
    frame: int
    visit: int
    player: Player
    rule: str
    reason: str
    time_foul: bool
    technical_loss: bool
    at: int
    seq: int
    code: str | None = Field(None, description="structured foul code (D10), when recorded")
    note: str | None = Field(None, description="the referee's words with a coded foul")


class MatchExtensionOut(_Closed):
    frame: int
    visit: int
    player: Player
    extension_ms: int
    at: int
    seq: int


class VisitOut(_Closed):
    number: int
    round: int
    player: Player
    started_at: int
    ended_at: int | None
    reason: str | None = Field(description="how it began: break, turn, result, foul, "
                               "time_foul, hand_back")


class FrameOut(_Closed):
    number: int
    breaker: Player
    winner: Player | None
    reason: EndReason | None = Field(description="null: still in play")
    started_at: int
    ended_at: int | None
    duration_ms: int | None = Field(description="wall clock, pauses included")
    whites: PlayerPair
    visits: int
    fouls: list[MatchFoulOut]
    extensions: list[MatchExtensionOut]
    players: list[PlayerStatsOut] = Field(min_length=2, max_length=2)
    shots: list[ShotOut] | None = Field(None, description="absent with shots=false")
    visit_log: list[VisitOut] | None = Field(None, description="absent with shots=false")
    pauses: list[list[int | None]] | None = Field(
        None, description="[paused at, resumed at]; absent with shots=false")


class MatchRecordOut(_Closed):
    id: str
    table: str
    number: int
    status: MatchStatus
    players: list[str]
    timer: bool
    race_to: int | None
    profile: dict[str, Any] | None
    first_breaker: Player
    event: str | None
    referee: str | None
    started_at: int
    ended_at: int | None
    over: bool
    winner: Player | None
    score: PlayerPair
    start_seq: int
    last_seq: int
    log_sha256: str | None = Field(description="SHA-256 of the match's events as the "
                                   "statistics read them (README \"Matches\"); the protocol "
                                   "prints it")
    closed_reason: str | None = Field(description="closed: why it was left unfinished")
    players_stats: list[PlayerStatsOut] = Field(min_length=2, max_length=2)
    frames: list[FrameOut]


__all__ += ["MatchSummary", "MatchPage", "PlayerStatsOut", "ShotOut", "MatchFoulOut",
            "MatchExtensionOut", "VisitOut", "FrameOut", "MatchRecordOut"]


# ---------------------------------------------------------------------------------------
# MQTT (SHOTCLOCK_MQTT_URL, clock_service/mqtt): the same messages on a broker's topics,
# for the AsyncAPI document. Events, acks, errors, pings and pongs are the models above.

class MqttStatus(RootModel[Literal["online", "offline"]]):
    """``.../status``, retained, plain text: ``online`` while the table's service is
    connected; ``offline`` when it leaves, and as its last will when it vanishes."""


MQTT_TOKEN_DOC = ("the referee token (SHOTCLOCK_REFEREE_TOKEN of the table's service), "
                  "needed when it has one: the broker's ACL says who may publish here, the "
                  "token says who may command")


def _with_token(model: type[BaseModel]) -> type[BaseModel]:
    """The WebSocket command ``model`` with the referee token in the payload (MQTT has no
    handshake to carry it)."""
    return create_model(
        f"Mqtt{model.__name__}", __base__=model, __doc__=model.__doc__,
        token=(str | None, Field(None, description=MQTT_TOKEN_DOC)))


MQTT_COMMANDS: tuple[type[BaseModel], ...] = tuple(
    _with_token(m) for m in get_args(CommandMessage.model_fields["root"].annotation))


class MqttCommandMessage(RootModel[Annotated[
    Union[MQTT_COMMANDS],  # type: ignore[valid-type]  # noqa: UP007 - built, not written
    Field(discriminator="command"),
]]):
    """A referee command on ``.../commands``: the WebSocket command with ``token``."""


class ReplayRequest(_Closed):
    """On ``.../commands``: send the table's events after ``since`` again, in order, on its
    events topic (the hall asks for what a broker restart lost). No token needed (reading
    never does; the ACL says who may publish here); no reply."""

    type: Literal["replay"]
    since: int = Field(ge=0, description="the last seq the asker has")
    id: Any = Field(None, description="ignored")


__all__ += ["MqttStatus", "MqttCommandMessage", "ReplayRequest", "MQTT_COMMANDS"]
