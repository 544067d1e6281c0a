"""The HTTP API's own request and response shapes: tables, profiles, errors, health, the
event log, the display's brightness.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
)

from clock_service.core.clock import ALLOWED, ClockPhase
from clock_service.core.commands import (
    MAX_RACE_TO,
)
from clock_service.core.events import EVENTS
from clock_service.core.match_clock import (
    MATCH_WARNINGS_MS,
    MAX_MATCH_MS,
    MatchClockPhase,
)
from clock_service.core.profile import Profile
from clock_service.core.text import NAME
from clock_service.service.wire.fields import (
    AtLimitCode,
    PersonName,
    PlayerIndex,
    PresetName,
    TableId,
    TextLine,
    _Count,
    _Ms,
)

__all__ = ["ArchiveRecord", "ArchivedTable", "BrightnessRequest", "BrightnessResponse",
           "CreateTable", "ErrorBody", "ErrorResponse", "FaultInfo", "HealthResponse", "MatchState",
           "ProfileIn", "RefusedCommand", "TableState", "WireEvent"]


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
