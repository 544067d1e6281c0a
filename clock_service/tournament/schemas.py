"""HTTP models of the draw (tournament/routes.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from clock_service.schemas import TABLE_ID_PATTERN

__all__ = ["DrawMatchOut", "DrawOut", "DrawRefused", "AssignIn", "NextOut", "StartNextIn",
           "DRAW_CSV_EXAMPLE"]

DRAW_CSV_EXAMPLE = ("number,player1,player2,race_to,event,round,table\n"
                    "1,Ivanov,Petrov,3,City cup,Round 1,1\n"
                    "2,Sidorov,Orlov,3,City cup,Round 1,next\n")


class DrawMatchOut(BaseModel):
    number: int
    players: list[str] = Field(min_length=2, max_length=2)
    race_to: int
    event: str | None
    round: str | None
    table: str | None = Field(description="the table whose queue holds it; null: the next "
                              "free table")
    status: Literal["queued", "playing", "done"]
    playing_on: str | None = Field(description="the table it was started on")
    match_id: str | None = Field(description="its match once started (GET /api/matches/{id})")


class TableQueue(BaseModel):
    queue: list[DrawMatchOut]
    playing: DrawMatchOut | None
    next: DrawMatchOut | None = Field(description="what the table plays next: its queue's "
                                      "first, else the next free table's first")


class DrawOut(BaseModel):
    tables: dict[str, TableQueue] = Field(description="every live table")
    unassigned: list[DrawMatchOut] = Field(description="queued for the next free table")
    matches: list[DrawMatchOut]


class ProblemOut(BaseModel):
    line: int = Field(description="the file's line (CSV: the header is 1; JSON: the item)")
    reason: str


class DrawRefusedBody(BaseModel):
    code: Literal["invalid_draw"]
    message: str
    problems: list[ProblemOut]


class DrawRefused(BaseModel):
    error: DrawRefusedBody


class AssignIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    table: str | None = Field(pattern=TABLE_ID_PATTERN, description="null: the next free table")


class NextOut(BaseModel):
    table: str
    next: DrawMatchOut | None


class StartNextIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str | None = Field(None, min_length=1, max_length=200,
                               description="why the match in play is left unfinished")
