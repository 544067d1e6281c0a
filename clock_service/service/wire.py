"""Request and response shapes of the HTTP API (pydantic), used for validation and OpenAPI."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import MISSING
from dataclasses import fields as dataclass_fields
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    RootModel,
    StrictBool,
    StrictFloat,
    StrictInt,
    StringConstraints,
    WithJsonSchema,
    create_model,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from clock_service.core import events
from clock_service.core.clock import ALLOWED, ClockPhase
from clock_service.core.commands import (
    BY,
    COMMANDS,
    ENVELOPE_FIELDS,
    MAX_AT_MS,
    MAX_RACE_TO,
    MAX_SET_MS,
    PRESS_FUTURE_MS,
    PRESS_STALE_MS,
    SAME,
    Command,
)
from clock_service.core.events import EVENTS, EventType
from clock_service.core.ids import TABLE_ID_PATTERN
from clock_service.core.match_clock import (
    AT_LIMIT,
    MATCH_WARNINGS_MS,
    MAX_MATCH_MS,
    MatchClockPhase,
)
from clock_service.core.presets import NAME as PRESET_NAME
from clock_service.core.profile import MAX_MS, Profile
from clock_service.core.rules import (
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
from clock_service.core.rules import Turn as RulesTurn
from clock_service.core.text import LINE, NAME, TextKind, clean, pattern, refusal

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
    "CreateTable", "ProfileIn", "MatchState", "RefusedCommand", "TableState", "ErrorBody",
    "ErrorResponse",
    "WireEvent", "FaultInfo", "HealthResponse", "StatusMessage", "BrightnessRequest",
    "BrightnessResponse",
]




def _human_text(kind: TextKind) -> tuple[PlainValidator, WithJsonSchema]:
    """The pydantic side of every human-readable string a request carries (docs/policy.md,
    "Human text"): the core's rule (clock_service/core/text.py), so a refusal is a 422 that
    names the field and the character, and the value is kept stripped and in NFC. Its JSON
    Schema carries the rule as ``pattern`` and ``maxLength``, and ``x-human-text`` (the
    kind): tests/test_human_text.py walks every request schema for it."""

    def check(value: Any) -> str:
        reason = refusal(value, kind)
        if reason is not None:
            raise PydanticCustomError("human_text", "{reason}", {"reason": reason})
        return clean(value, kind)

    return PlainValidator(check), WithJsonSchema({
        "type": "string", "minLength": 1, "maxLength": kind.cap, "pattern": pattern(kind),
        "x-human-text": kind.name})


_NAME_CHECK, _NAME_SCHEMA = _human_text(NAME)
_LINE_CHECK, _LINE_SCHEMA = _human_text(LINE)
# A person's name (players, referee, a token's holder, who made a correction) and a line of
# text (event, round, reasons, notes, a foul's rule, a command's source).
PersonName = Annotated[str, _NAME_CHECK, _NAME_SCHEMA]
TextLine = Annotated[str, _LINE_CHECK, _LINE_SCHEMA]
# Integers are strict everywhere: 1.0 or true is not a player, a count or a time.
PlayerIndex = Annotated[StrictInt, Field(ge=0, le=1, description="0 or 1")]
# Strings that are not human text are identifiers, each with its pattern (docs/policy.md);
# the table id's is clock_service/core/ids.py's.
ARCHIVE_ID_PATTERN = r"^[A-Za-z0-9_-]{1,32}~[0-9]{1,9}$"
# A live table's id or an archive's (the match index and the camera's clips know both).
LOG_ID_PATTERN = r"^[A-Za-z0-9_-]{1,32}(?:~[0-9]{1,9})?$"
MATCH_ID_PATTERN = r"^[A-Za-z0-9_-]{1,32}(?:~[0-9]{1,9})?\.[0-9]{1,9}$"
PRESET_NAME_PATTERN = PRESET_NAME.pattern
TableId = Annotated[str, StringConstraints(pattern=TABLE_ID_PATTERN)]
ArchiveId = Annotated[str, StringConstraints(pattern=ARCHIVE_ID_PATTERN)]
LogId = Annotated[str, StringConstraints(pattern=LOG_ID_PATTERN)]
MatchId = Annotated[str, StringConstraints(pattern=MATCH_ID_PATTERN)]
PresetName = Annotated[str, StringConstraints(pattern=PRESET_NAME_PATTERN)]
# Every whole number a request carries is bounded (docs/policy.md, "Numbers"). Seqs, cursors,
# counts of the log and unix ms: exact in every JSON reader (and in SQLite's 64 bits, whose
# overflow was a 500: issue 35, finding 7).
MAX_SEQ = 2**53
_Ms = Annotated[StrictInt, Field(ge=1, le=MAX_MS)]
_Count = Annotated[StrictInt, Field(ge=0, le=MAX_MS)]
# The organiser's choices at a match's time limit (match_clock.AT_LIMIT).
AtLimitCode = Literal["leader_wins", "frame_decides", "tie_break_frame", "shot_clock"]
assert set(AtLimitCode.__args__) == set(AT_LIMIT)  # type: ignore[attr-defined]


class ProfileIn(BaseModel):
    """A partial time profile (12.2-12.7): the fields given replace the rules' defaults, and
    no other field is accepted. ``floor_ms`` must not be above ``shot_ms`` (12.3): 422
    ``invalid_profile`` otherwise."""

    model_config = ConfigDict(extra="forbid")

    shot_ms: _Ms = Field(Profile.shot_ms, description="limit of a shot in the first "
                         "full_rounds rounds (12.2)")
    full_rounds: _Count = Field(Profile.full_rounds, description="rounds at the full limit")
    step_ms: _Count = Field(Profile.step_ms, description="less per round after that (12.3)")
    floor_ms: _Ms = Field(Profile.floor_ms, description="the limit never drops below (12.3)")
    extension_ms: _Ms = Field(Profile.extension_ms, description="one extension (12.6)")
    extensions_per_frame: _Count = Field(Profile.extensions_per_frame,
                                         description="per player per frame (12.5)")
    warnings_ms: list[_Ms] = Field(list(Profile().warnings_ms), max_length=32,
                                   description="clock.warning thresholds")
    extensions_deciding_frame: _Count | None = Field(
        None, description="extensions per player in the deciding frame (both one frame from "
        "the race, or a tie-break frame); null: as extensions_per_frame")
    after_break_ms: _Ms | None = Field(None, description="limit of the first shot after the "
                                       "break (WPA §20: 60 s); null: the round's limit")
    show_from_ms: _Ms | None = Field(None, description="the players see the clock only once "
                                     "this much is left; null: always")
    slow_play_ms: _Ms = Field(Profile.slow_play_ms, description="the flat shot limit once the "
                              "referee switches the clock on for slow play (shot_clock_on)")
    preset: PresetName | None = Field(None, examples=["wpa-20"],
                               description="a named preset (GET /api/presets) as the base; "
                               "the fields given beside it override its numbers")


class CreateTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: TableId = Field(examples=["2"])
    players: list[PersonName] = Field(
        min_length=2, max_length=2, examples=[["Ivanov", "Petrov"]],
        description=f"two names of up to {NAME.cap} characters (docs/policy.md; "
        "leading and trailing spaces dropped)")
    timer: StrictBool = Field(True, description="false: a match without time control (12.1)")
    profile: ProfileIn | None = Field(
        None, description="Partial time profile; omitted fields take the rules' defaults.",
        examples=[{"shot_ms": 30000}])
    first_breaker: PlayerIndex = Field(0, description="who breaks frame 1 (I3)")
    race_to: Annotated[StrictInt, Field(ge=1, le=MAX_RACE_TO)] | None = Field(
        None, description="frames needed to win the match; null: an open-ended match "
        "(frames are counted, nobody wins it)", examples=[3])
    event: TextLine | None = Field(None,
                              description="the event (tournament) of the first match, for "
                              "its protocol", examples=["City cup, round 2"])
    match_limit_ms: Annotated[StrictInt, Field(ge=1000, le=MAX_MATCH_MS)] | None = Field(
        None, description="the match's time limit, counted from its first break, paused only "
        "by the referee's pause; null: none", examples=[7_200_000])
    at_match_limit: AtLimitCode = Field(
        "leader_wins", description="the organiser's choice at the limit: leader_wins (the "
        "frame in play is finished, the leader wins, level is a draw), frame_decides (the "
        "frame in play decides), tie_break_frame (the frame in play is finished, the leader "
        "wins, level: one tie-break frame), shot_clock (a per-shot clock, the profile's "
        "slow_play_ms, for the rest)")
    referee: PersonName | None = Field(None, description="the referee of the first match, "
                                       "for its protocol")

    def partial_profile(self) -> dict[str, Any]:
        """Only the profile fields the client gave (the core fills in the rest)."""
        return {} if self.profile is None else self.profile.model_dump(exclude_unset=True)


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
    drawn: bool = Field(description="the match's time limit ended it level (leader_wins)")
    by_time_limit: bool = Field(description="the match was ended by its time limit")
    match_limit_ms: int | None = Field(description="the match's time limit; null: none")
    at_match_limit: AtLimitCode = Field(description="the organiser's choice at the limit")


class MatchClockState(BaseModel):
    """The match clock (match_limit_ms): counted from the first break, paused only by the
    referee's pause."""

    model_config = ConfigDict(extra="forbid")

    limit_ms: int
    phase: MatchClockPhase = Field(
        description="waiting: before the first break; stopped: the match ended first")
    remaining_ms: int
    deadline: float | None = Field(description="unix ms of the limit, while running")
    started_at: float | None = Field(description="unix ms of the first break")
    at_limit: AtLimitCode
    at_limit_text: str = Field(description="the organiser's choice as shown to the players")
    rule: str = Field(description="the rule the choice applies")
    warnings_ms: list[int] = Field(description=f"match_clock.warning thresholds "
                                   f"({', '.join(str(w) for w in MATCH_WARNINGS_MS)})")


class RefusedCommand(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str = Field(description="the error code the command would be refused with now")
    rule: str | None = Field(None, description="the rule that refuses it; absent otherwise")


class SlowPlayState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scope: Literal["frame", "match"]
    reason: str | None
    limit_ms: int = Field(description="the flat shot limit (profile.slow_play_ms)")


class TableState(BaseModel):
    table: str
    seq: int = Field(description="seq of the last event reflected in this state")
    phase: ClockPhase
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
    timer: bool = Field(description="whether the shot clock counts: the match's timer "
                        "(12.1), or slow play switched on (shot_clock_on)")
    match_clock: MatchClockState | None = Field(
        description="the match's time limit (match_limit_ms); null: the match has none")
    slow_play: SlowPlayState | None = Field(
        description="the shot clock switched on by the referee (shot_clock_on); null: not")
    hand_back_to: int | None = Field(description="the fouler while the 10.4 choice is open")
    frame_winner: int | None
    frame_end_reason: str | None
    frames_won: list[int]
    can_undo: str | None = Field(description="the step an undo would take back")
    profile: dict[str, Any]
    deciding_frame: bool = Field(description="the frame in play decides the match (both one "
                                 "frame from the race): the profile's "
                                 "extensions_deciding_frame applies")
    clock_shown: bool = Field(description="whether the players see the shot clock now "
                              "(profile.show_from_ms); a running clock appears when its "
                              "deadline is show_from_ms away")
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
    """A fault that needs a person's attention (clock_service/service/status.py)."""

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


class ArchivedTable(BaseModel):
    """The answer to DELETE /api/tables/{id}."""

    table: str = Field(description="the id it had; free again for a new table")
    archived_as: str = Field(description="the id its events are kept under: <id>~<n>, n "
                             "counting the archives of that id from 1", examples=["1~1"])
    seq: int = Field(description="its last event, table.archived")
    archived_at: int = Field(description="unix ms")


class ArchiveRecord(BaseModel):
    """An archived table (GET /api/archive)."""

    id: str = Field(description="the archive id, <table>~<n>", examples=["1~1"])
    table: str = Field(description="the id it had while live")
    config: dict[str, Any] = Field(description="players, timer, profile, first_breaker, "
                                   "race_to, as created")
    seq: int = Field(description="its last event, table.archived")
    created_at: int = Field(description="unix ms")
    archived_at: int = Field(description="unix ms")


class WireEvent(BaseModel):
    type: str = Field(json_schema_extra={"enum": list(EVENTS)}, description=(
        "the event type; its data and description: docs/asyncapi.json"))
    seq: int
    table: str
    at: int = Field(description="unix ms")
    by: str | None = Field(None, description="events a command made: who decided it")
    source: str | None = Field(None, description="events a command made: where it came from")
    press_at: int | None = Field(None, description="events a command made with a press time")
    data: dict[str, Any]
    state: dict[str, Any] | None = Field(None, description=(
        "live events only: the table state after the command that made it; events read "
        "from the store (this page, a replay) carry none"))


# ---------------------------------------------------------------------------------------
# WebSocket messages (/ws/tables/{id}), for the AsyncAPI document
# (clock_service/edges/api/asyncapi.py).
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
    extensions_deciding_frame: int | None = Field(
        description="extensions per player in the deciding frame; null: as per frame")
    after_break_ms: int | None = Field(description="limit of the first shot after the break; "
                                       "null: the round's limit")
    show_from_ms: int | None = Field(description="the clock is shown only from this much "
                                     "left; null: always")
    slow_play_ms: int = Field(description="the flat limit of the slow-play clock "
                              "(shot_clock_on)")
    preset: str | None = Field(description="the preset the numbers came from; null: by hand")


class PresetOut(_Closed):
    """A named time profile (GET /api/presets)."""

    name: str = Field(examples=["wpa-20"])
    title: str = Field(examples=["WPA §20"])
    source: str = Field(description="the rule or regulation whose numbers it holds")
    builtin: bool = Field(description="shipped with the service; false: SHOTCLOCK_PRESETS_DIR")
    profile: TimeProfile


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
    text: TextLine | None = Field(
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

UnixMs = Annotated[float, Field(description="unix ms")]

# Each payload's model, by its TypedDict in clock_service/core/events.py.
PAYLOAD_MODELS: dict[type[Any], type[_Closed]] = {}


def _payload(payload: type[Any], doc: str | None = None, *, base: type[_Closed] = _Closed,
             **wire: Any) -> type[_Closed]:
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
    model: type[_Closed] = create_model(payload.__name__, __base__=base, __doc__=doc,
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
    live: bool = Field(description=(
        "false when this state may be out of date: on the hall service (shotclock hall), "
        "while the table's own service is offline, the hall has lost the broker or the "
        "table's log diverged (as the hall cards' live). The state is then the last known "
        "one, a running countdown frozen at stale_since: pages stop counting and say so. "
        "Always true on serve."))
    stale_since: UnixMs | None = Field(description=(
        "unix ms (this service's clock) since when the state is not live; null when live"))


class StatusMessage(_Closed):
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


class _EventMessage(_Closed):
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


# -- the hall feed (/ws/hall) -----------------------------------------------------------

class HallTable(_Closed):
    """One table as the hall shows it (served.HALL_FIELDS), as of its last event."""

    table: str
    seq: int
    phase: ClockPhase
    timer: bool
    player: Player
    players: list[str]
    remaining_ms: int | None
    limit_ms: int | None
    deadline: float | None = Field(description="unix ms of the expiry while running")
    server_time: float
    round: int
    frame: int
    fouls: PlayerPair
    extensions_left: PlayerPair
    whites: PlayerPair
    frames_won: PlayerPair
    match_clock: MatchClockState | None = Field(None, description="the match's time limit "
                                                "(as in the table state); null: none")
    frame_winner: Player | None = Field(description="the frame's winner once it is over")
    match: WsMatchState = Field(description="the match on the table (its number, score, "
                                "race, whether it is over and who won): the card's result "
                                "and the link to its protocol")
    live: bool = Field(description=(
        "false when this state may be out of date: on the hall service (shotclock hall), "
        "while the table's own service is offline (its MQTT status/will), the hall is not "
        "connected to the broker, or the table's log diverged. Pages then stop counting "
        "and show remaining_ms as the last known value. Always true on serve."))
    stale_since: UnixMs | None = Field(description=(
        "unix ms (this service's clock) since when the state is not live; remaining_ms is "
        "then as of that instant (a running clock is not brought up to now); null when "
        "live"))


class HallMessage(_Closed):
    """First message of the hall feed: every live table, and every fault."""

    type: Literal["hall"]
    server_time: UnixMs
    read_only: bool = Field(description=(
        "true on the hall service (shotclock hall): tables are created and archived on "
        "their own Pi (POST/DELETE /api/tables answer 409 hall_read_only here), so the hall "
        "page offers no form for it; commands are still forwarded to the table"))
    tables: list[HallTable] = Field(description="sorted by id")
    faults: list[FaultInfo]


class HallTableMessage(_Closed):
    """A table changed (or was created): its summary now. Newer seq replaces older."""

    type: Literal["table"]
    table: HallTable


class HallRemovedMessage(_Closed):
    """A table was archived (DELETE /api/tables/{id}): drop its card."""

    type: Literal["removed"]
    table: str
    archived_as: str


class HallStatusMessage(_Closed):
    """The faults changed: every current fault (any table), to replace what is shown."""

    type: Literal["status"]
    table: None = Field(description="always null: the hall gets every fault")
    faults: list[FaultInfo]


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


# -- commands, derived from the core's registry (clock_service/core/commands.py) ------------------
# One model per command in COMMANDS, its fields from the command's dataclass (the envelope
# ``at``, ``by``, ``source`` included: they are fields of Command): a command another module
# registers (register_command) appears here, in OpenAPI and in AsyncAPI by itself. The core
# (parse_command) stays the validator; these models describe exactly what it accepts
# (tests/test_command_schemas.py and the schemathesis run check that they agree).

Names = Annotated[list[PersonName], Field(min_length=2, max_length=2)]

# A field means the same in every command that has it: its exact type where the dataclass
# type alone says too little (a player is an int, but only 0 or 1; a pocket a str, but one
# of six names).
COMMAND_FIELD_TYPES: dict[str, Any] = {
    "player": PlayerIndex,
    "winner": PlayerIndex,
    "first_breaker": PlayerIndex,
    "remaining_ms": Annotated[StrictInt, Field(ge=1, le=MAX_SET_MS)],
    "whites_potted": Annotated[StrictInt, Field(ge=0, le=WHITES)],
    "race_to": Annotated[StrictInt, Field(ge=1, le=MAX_RACE_TO)],
    "players": Names,
    "profile": ProfileIn,
    "call": CallSpec,
    "route": RouteSpec,
    "pocket": Pocket,
    "cushions": list[Cushion],
    "contacts": list[Annotated[str, Field(pattern=CONTACT_PATTERN)]],
    "shot_type": ShotType,
    "code": GeneralFoulCode,
    "balls": list[OffTableBall],
    "touched_with": TouchedWith,
    "scope": Literal["frame", "match"],
    "match_limit_ms": Annotated[StrictInt, Field(ge=1000, le=MAX_MATCH_MS)],
    "at_match_limit": AtLimitCode,
    "referee_foul": TextLine | GeneralFoulSpec,
    "at": (Annotated[StrictInt, Field(ge=0, le=MAX_AT_MS)]
           | Annotated[StrictFloat, Field(ge=0, le=MAX_AT_MS)]),
    "referee": PersonName,
    "by": Literal[BY],  # a command that declares its own ``by`` takes any text (see below)
}
COMMAND_FIELD_DOCS: dict[str, str] = {
    "at": AT_DOC,
    "by": BY_DOC,
    "source": SOURCE_DOC,
    "player": "default: the player at the table",
    "winner": "who won the frame; left out or null: nobody",
    "rule": "default 10.1",
    "remaining_ms": "the remaining time to set, ms",
    "legal_break": "the break only; left out: legal",
    "whites_potted": "whites potted on this shot",
    "cushions": "the coloured ball's cushions, in order",
    "contacts": "ball-to-ball contacts 'striker>struck', in order (balls: cue, colour, "
                "white1..white7)",
    "race_to": "frames to win; null: open-ended",
    "event": "for the protocol's header",
    "referee": "for the protocol's header",
    "scope": "shot_clock_on: for the rest of the frame or of the match (default match)",
    "match_limit_ms": "the match's time limit (from its first break); null: none",
    "at_match_limit": "the organiser's choice at the limit (see POST /api/tables)",
}
# Fields of the message that are not the command's (commands.ENVELOPE_FIELDS besides
# ``command``): name -> (type, description). A name the core adds without an entry here
# is documented as any JSON value.
MESSAGE_FIELDS: dict[str, tuple[Any, str]] = {
    "id": (Any, "echoed in the WebSocket ack or error"),
}


def _hint_type(hint: Any) -> Any:
    """A JSON type for a dataclass field's type hint (None handled by the caller)."""
    if hint is str:
        return TextLine
    if hint is bool:
        return StrictBool
    if hint is int:
        return StrictInt
    if hint is float:
        return StrictInt | StrictFloat
    origin = get_origin(hint)
    if origin in (list, tuple, Sequence):
        (item, *_) = get_args(hint) or (Any,)
        return list[_hint_type(item)]  # type: ignore[misc]
    return dict[str, Any]


def _field_annotation(cls: type[Command], name: str, hint: Any) -> tuple[Any, bool]:
    """(type, whether it may be left out without a default: the core's SAME)."""
    args = get_args(hint) if get_origin(hint) in (Union, UnionType) else (hint,)
    same = any(getattr(a, "__name__", "") == "_Same" for a in args)
    optional = type(None) in args
    rest = [a for a in args if a is not type(None) and getattr(a, "__name__", "") != "_Same"]
    own = name in cls.__dict__.get("__annotations__", {})
    if name == "by" and own:  # a correction names who made it: a person's name
        base: Any = PersonName
    else:
        base = COMMAND_FIELD_TYPES.get(name) or _hint_type(rest[0])
    return (base | None if optional else base), same


def _command_model(cls: type[Command], *, websocket: bool) -> type[BaseModel]:
    hints = get_type_hints(cls)
    definitions: dict[str, Any] = {
        "command": (Literal[cls.name], Field(description=f"the command: {cls.name}")),
    }
    if websocket:
        definitions["type"] = (Literal["command"], Field(
            "command", description="may be left out when the message has a 'command'"))
    for name in sorted(ENVELOPE_FIELDS - {"command"}):
        kind, doc = MESSAGE_FIELDS.get(name, (Any, "any JSON value"))
        definitions[name] = (kind, Field(None, description=doc))
    for f in dataclass_fields(cls):
        if not f.init:
            continue
        annotation, same = _field_annotation(cls, f.name, hints[f.name])
        info: dict[str, Any] = {"description": COMMAND_FIELD_DOCS.get(f.name)}
        if same or f.default is SAME:  # left out: as before (no JSON default to show)
            info["default_factory"] = lambda: None
            info["description"] = "left out: as before" + (
                f"; {info['description']}" if info["description"] else "")
        elif f.default is not MISSING:
            info["default"] = f.default
        elif f.default_factory is not MISSING:
            info["default"] = f.default_factory()
        if isinstance(info.get("default"), tuple):
            info["default"] = list(info["default"])
        definitions[f.name] = (annotation, Field(**info))
    words = "".join(part.capitalize() for part in cls.name.split("_"))
    model: type[BaseModel] = create_model(
        f"{'Ws' if websocket else ''}{words}Command",
        __config__=ConfigDict(extra="forbid"),
        __doc__=" ".join((cls.__doc__ or f"The {cls.name} command.").split()),
        **definitions,
    )
    return model


def command_models(*, websocket: bool = False) -> dict[str, type[BaseModel]]:
    """Command name -> its request model, for every command in the registry now."""
    return {name: _command_model(cls, websocket=websocket)
            for name, cls in sorted(COMMANDS.items())}


def command_union(*, websocket: bool = False) -> Any:
    """A discriminated union (on ``command``) of every command's model."""
    models = tuple(command_models(websocket=websocket).values())
    return Annotated[Union[models], Field(discriminator="command")]  # noqa: UP007


def command_message() -> type[RootModel[Any]]:
    """The WebSocket command message, as one root model (AsyncAPI, contract test)."""
    base: Any = RootModel[command_union(websocket=True)]  # type: ignore[misc]
    message: type[RootModel[Any]] = create_model(
        "CommandMessage", __base__=base,
        __doc__="A referee command; needs the referee token when the service has one.")
    return message


CommandMessage = command_message()


__all__ += [
    "TimeProfile", "WsMatchState", "WsTableState", "WsErrorBody", "CallSpec", "RouteSpec",
    "ShotReport", "FoulRecord", "RespotInstruction", "ShotOutcome", "TableCreatedData",
    "MatchStartedData", "FrameStartedData", "FrameEndedData", "MatchEndedData",
    "MatchSignedData", "RecordSignature", "ShotResultData", "RespotData", "ClockRunData",
    "ClockStoppedData", "ClockPausedData",
    "ClockExtendedData", "ClockWarningData", "ClockExpiredData", "ClockCorrectedData",
    "CorrectionUndoneData", "FoulData", "TurnData", "EVENT_MODELS", "SnapshotMessage",
    "PongMessage", "AckMessage", "ErrorMessage", "PingMessage", "CallAnnouncedData",
    "CallVerdictSpec", "GeneralFoulSpec", "BreachRecord", "StatusMessage", "TableArchivedData",
    "HallTable", "HallMessage", "HallTableMessage", "HallRemovedMessage", "HallStatusMessage",
    "PersonName", "TextLine", "TableId", "ArchiveId", "LogId", "MatchId", "PresetName",
    "LOG_ID_PATTERN", "MATCH_ID_PATTERN", "PlayerIndex", "COMMAND_FIELD_TYPES",
    "MESSAGE_FIELDS", "TABLE_ID_PATTERN",
    "ARCHIVE_ID_PATTERN", "MAX_SEQ", "ArchiveRecord", "ArchivedTable", "command_models",
    "command_union", "command_message", "CommandMessage",
]


# ---------------------------------------------------------------------------------------
# Matches as records (GET /api/matches, /api/matches/{id}; clock_service/edges/reports/).
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


class RecordSignature(_Closed):
    status: Literal["verified", "unverified", "unsigned"] = Field(
        description="verified: the table's Ed25519 signature is valid and the events in this "
        "store are the ones signed; unverified: anything else (reason says what)")
    fingerprint: str | None = Field(description="the signing key's fingerprint")
    first: int | None = Field(description="the signed range's first event")
    last: int | None = Field(description="the signed range's last event (match.ended)")
    reason: str | None = Field(description="why it is not verified")


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
    signature: RecordSignature | None = Field(
        None, description="the verdict on the table's signature of this record (issue 20)")
    players_stats: list[PlayerStatsOut] = Field(min_length=2, max_length=2)
    frames: list[FrameOut]
    clips: str | None = Field(
        None, description="where the camera's video clips of this match are listed "
        "(/api/matches/<id>/clips); present only on a service with a camera at this "
        "match's table and clips on (issue 21 point 5)")


__all__ += ["MatchSummary", "MatchPage", "PlayerStatsOut", "ShotOut", "MatchFoulOut",
            "MatchExtensionOut", "VisitOut", "FrameOut", "MatchRecordOut"]


# ---------------------------------------------------------------------------------------
# MQTT (SHOTCLOCK_MQTT_URL, clock_service/edges/mqtt): the same messages on a broker's topics,
# for the AsyncAPI document. Events, acks, errors, pings and pongs are the models above.

class MqttStatus(RootModel[Literal["online", "offline"]]):
    """``.../status``, retained, plain text: ``online`` while the table's service is
    connected; ``offline`` when it leaves, and as its last will when it vanishes."""


# A token is a secret, not human text: shown to nobody, compared whole (auth.py).
MAX_TOKEN_LENGTH = 1024
Token = Annotated[str, Field(max_length=MAX_TOKEN_LENGTH, json_schema_extra={
    "format": "password"})]
MQTT_TOKEN_DOC = ("the referee token (SHOTCLOCK_REFEREE_TOKEN of the table's service), "
                  "needed when it has one: the broker's ACL says who may publish here, the "
                  "token says who may command")


def _with_token(model: type[BaseModel]) -> type[BaseModel]:
    """The WebSocket command ``model`` with the referee token in the payload (MQTT has no
    handshake to carry it)."""
    return create_model(
        f"Mqtt{model.__name__}", __base__=model, __doc__=model.__doc__,
        token=(Token | None, Field(None, description=MQTT_TOKEN_DOC)))


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
    since: int = Field(ge=0, le=MAX_SEQ, description="the last seq the asker has")
    id: Any = Field(None, description="ignored")


__all__ += ["MqttStatus", "MqttCommandMessage", "ReplayRequest", "MQTT_COMMANDS"]
