"""A table's state and the rules' report as the WebSocket and HTTP send them: the time
profile, presets, the call and the shot's outcome. Every model forbids extra fields: the
contract test validates each message a real server sends against them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
)

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
from clock_service.service.wire.fields import TextLine
from clock_service.service.wire.http import ErrorBody, MatchState, TableState

__all__ = ["ClosedModel", "BreachRecord", "CallSpec", "CallVerdictSpec", "FoulRecord",
           "GeneralFoulSpec", "RespotInstruction", "RouteSpec", "ShotOutcome", "ShotReport",
           "TimeProfile",
           "WsErrorBody", "WsMatchState", "WsTableState"]


class ClosedModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


Player = Literal[0, 1]


_BALL = "(?:" + "|".join(BALLS) + ")"


CONTACT_PATTERN = f"^{_BALL}>{_BALL}$"


PATH_ITEM_PATTERN = f"^(?:{_BALL}>{_BALL}|" + "|".join(c.value for c in Cushion) + ")$"


PlayerPair = Annotated[list[int], Field(min_length=2, max_length=2)]


class TimeProfile(ClosedModel):
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


class PresetOut(ClosedModel):
    """A named time profile (GET /api/presets)."""

    name: str = Field(examples=["wpa-20"])
    title: str = Field(examples=["WPA §20"])
    source: str = Field(description="the rule or regulation whose numbers it holds")
    builtin: bool = Field(description="shipped with the service; false: SHOTCLOCK_PRESETS_DIR")
    profile: TimeProfile


class CallSpec(ClosedModel):
    """The strict call (7.1-7.2), announced before the shot."""

    pocket: Pocket
    cushions: list[Cushion] = Field(default_factory=list,
                                    description="the coloured ball's cushions, in order")
    contacts: list[Annotated[str, Field(pattern=CONTACT_PATTERN)]] = Field(
        default_factory=list, description="ball-to-ball contacts 'striker>struck', in order "
        "(balls: cue, colour, white1..white7)", examples=[["cue>colour"]])
    shot_type: ShotType = ShotType.NORMAL


class RouteSpec(ClosedModel):
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


class GeneralFoulSpec(ClosedModel):
    """A general foul the referee saw (9, last item; D10), with its detail."""

    code: GeneralFoulCode
    balls: list[OffTableBall] = Field(
        default_factory=list, description="ball_off_table only (required there): the balls "
        "that left the table, 'white' once per white; they are re-spotted (11.1-11.2)")
    touched_with: TouchedWith | None = Field(None, description="touched_ball only (optional)")
    text: TextLine | None = Field(
        None, description="free text: required for other, a note for any other code")


class BreachRecord(ClosedModel):
    """One rule a foul broke (D5: one act is one foul listing every rule it broke)."""

    code: FoulCode
    rule: str
    reason: str
    balls: list[OffTableBall]
    touched_with: TouchedWith | None
    text: str | None


class ShotReport(ClosedModel):
    """The referee's report of a shot, as given (the announced call is in the outcome)."""

    whites_potted: int = Field(ge=0, le=WHITES)
    colour_potted: bool
    call: CallSpec | None
    route: RouteSpec | None
    legal_break: bool | None
    referee_foul: GeneralFoulSpec | None


class FoulRecord(ClosedModel):
    player: Player
    rule: str = Field(description="the first rule broken (breaches[0].rule)")
    code: FoulCode = Field(description="the first breach's code")
    reason: str = Field(description="every breach in English, with its rule")
    breaches: list[BreachRecord] = Field(min_length=1)


class RespotInstruction(ClosedModel):
    ball: RespotBall
    count: int = Field(ge=1, le=WHITES)
    spot: RespotSpot
    rule: str = Field(description="where the ball goes (11.1, 11.2)")
    cause: str = Field(description="the rule that sent it back (4.5, 5.7, 10.3, I8)")
    instruction: str = Field(description="the instruction as the referee's page shows it")


class CallVerdictSpec(ClosedModel):
    """The judge's answer on the call (7.3-7.5, 8.x)."""

    fulfilled: bool
    rule: str | None = Field(description="the rule the route broke; null when fulfilled")
    message: str


class ShotOutcome(ClosedModel):
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
