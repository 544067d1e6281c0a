"""Request and response shapes of the HTTP API (pydantic), used for validation and OpenAPI."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CreateTable", "CommandRequest", "MatchState", "TableState", "ErrorBody", "ErrorResponse",
    "WireEvent",
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


class CommandRequest(BaseModel):
    """A referee command. Other fields depend on the command (see README)."""

    model_config = ConfigDict(extra="allow")

    command: str = Field(examples=["start"], description=(
        "start | shot | extension | pause | resume | turn | foul (reason, player?, rule?) | "
        "hand_back | new_frame (winner?) | undo (by?, reason?) | set_time (remaining_ms, by?, "
        "reason?) | result (whites_potted?, colour_potted?, call?, route?, legal_break?, "
        "referee_foul?)"))


class MatchState(BaseModel):
    race_to: int | None = Field(description="frames to win; null: open-ended")
    score: list[int] = Field(description="frames won per player (same as frames_won)")
    frames_won: list[int]
    winner: int | None
    over: bool
    undecided: int = Field(description="frames the referee ended without a winner")


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
    match: MatchState



class ErrorBody(BaseModel):
    code: str
    message: str
    rule: str | None = None


class ErrorResponse(BaseModel):
    error: ErrorBody


class WireEvent(BaseModel):
    type: str
    seq: int
    table: str
    at: int = Field(description="unix ms")
    data: dict[str, Any]
    state: dict[str, Any] = Field(description="the table state after the command that made it")
