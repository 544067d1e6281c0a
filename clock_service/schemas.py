"""Request and response shapes of the HTTP API (pydantic), used for validation and OpenAPI."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CreateTable", "CommandRequest", "TableState", "ErrorBody", "ErrorResponse", "WireEvent"]


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


class CommandRequest(BaseModel):
    """A referee command. Other fields depend on the command (see README)."""

    model_config = ConfigDict(extra="allow")

    command: str = Field(examples=["start"], description=(
        "start | shot | extension | pause | resume | turn | foul (reason, player?, rule?) | "
        "hand_back | new_frame (winner?) | undo (by?, reason?) | set_time (remaining_ms, by?, "
        "reason?)"))


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
