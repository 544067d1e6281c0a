"""HTTP models of the draw (tournament/routes.py)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StringConstraints, TypeAdapter

from clock_service.core.commands import MAX_RACE_TO
from clock_service.edges.tournament.draw import (
    MAX_DRAW_BYTES,
    MAX_DRAW_MATCHES,
    MAX_DRAW_NUMBER,
    NEXT_FREE,
)
from clock_service.service.wire.fields import PersonName, TableId, TextLine

__all__ = ["DrawMatchOut", "DrawOut", "DrawRefused", "AssignIn", "NextOut", "StartNextIn",
           "ResultOut", "ResultsOut", "OutboxOut", "DrawLine", "DrawRow", "DRAW_BODY",
           "StartMatchIn", "WebhookIn", "WebhookOut",
           "DRAW_CSV_EXAMPLE"]

DRAW_CSV_EXAMPLE = ("number,player1,player2,race_to,event,round,table\n"
                    "1,Ivanov,Petrov,3,City cup,Round 1,1\n"
                    "2,Sidorov,Orlov,3,City cup,Round 1,next\n")


# -- the draw file, as documented (draw.parse_draw reads it, line by line, by the same rules) --
DrawNumber = Annotated[StrictInt, Field(ge=1, le=MAX_DRAW_NUMBER)]
RaceTo = Annotated[StrictInt, Field(ge=1, le=MAX_RACE_TO)]
DrawTable = TableId | Literal["next", "next free table", ""] | None
# An empty cell (or spaces): none.
Blank = Annotated[str, StringConstraints(pattern=r"^ *$")]
DrawText = TextLine | Blank | None
_DRAW_TABLE_DOC = f"a table id; empty, null or {NEXT_FREE!r}: the next free table"


class DrawLine(BaseModel):
    """One match of a JSON draw."""

    model_config = ConfigDict(extra="allow")  # parse_draw ignores other keys

    number: DrawNumber
    players: list[PersonName] = Field(min_length=2, max_length=2)
    race_to: RaceTo
    event: DrawText = None
    round: DrawText = None
    table: DrawTable = Field(None, description=_DRAW_TABLE_DOC)


class DrawRow(BaseModel):
    """One line of a CSV draw, by its columns (the header names them, in any order)."""

    number: DrawNumber
    player1: PersonName
    player2: PersonName
    race_to: RaceTo
    event: DrawText = None
    round: DrawText = None
    table: DrawTable = Field(None, description=_DRAW_TABLE_DOC)


# A JSON match names its players as ``players`` or as a CSV row does.
_LINES: dict[str, Any] = {"type": "array", "maxItems": MAX_DRAW_MATCHES, "items": {"anyOf": [
    TypeAdapter(DrawLine).json_schema(), TypeAdapter(DrawRow).json_schema()]}}
# The request body of POST /api/draw: a CSV file whose rows are DrawRow (``x-rows``), or a
# JSON list of DrawLine (or {"matches": [...]}).
DRAW_BODY: dict[str, Any] = {"required": True, "content": {
    "text/csv": {"schema": {
        "type": "string", "contentMediaType": "text/csv", "maxLength": MAX_DRAW_BYTES,
        "x-rows": TypeAdapter(DrawRow).json_schema(),
        "description": "a header line naming the columns, then one match a line"},
        "example": DRAW_CSV_EXAMPLE},
    "application/json": {"schema": {"anyOf": [_LINES, {
        "type": "object", "required": ["matches"], "properties": {"matches": _LINES}}]}}}}


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
    order: int = Field(description="its place among the queued: each queue is sorted by it "
                       "(its number until the director reorders)")


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
    reason: str = Field(description="what is wrong, in English")
    code: str = Field(description="what is wrong, as a code (draw_formula, "
                      "draw_unknown_table, ...): a page says it in its own language")
    data: dict[str, str | int] = Field(description="the code's particulars (column, value...)")


class DrawRefusedBody(BaseModel):
    code: Literal["invalid_draw"]
    message: str
    problems: list[ProblemOut]


class DrawRefused(BaseModel):
    error: DrawRefusedBody


class AssignIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    table: TableId | None = Field(description="null: the next free table")
    position: int | None = Field(None, ge=0, le=100_000, description="its place in that "
                                 "queue, 0 first (a reorder); null: where its order puts it")


class StartMatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    table: TableId = Field(description="the table to play it on")
    reason: TextLine | None = Field(None, description="why the match in play there is left "
                                    "unfinished")


class NextOut(BaseModel):
    table: str
    next: DrawMatchOut | None


class StartNextIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: TextLine | None = Field(None, description="why the match in play is left "
                                    "unfinished")


class FrameResult(BaseModel):
    number: int
    winner: int | None
    reason: str | None
    duration_ms: int | None
    whites: list[int]


class PlayerResult(BaseModel):
    name: str
    shots: int
    timed_shots: int
    mean_ms: int | None
    median_ms: int | None
    max_ms: int | None
    total_ms: int | None
    extensions: int
    time_fouls: int
    fouls: int
    whites: int
    visits: int
    frames_won: int
    breaks: int
    breaks_won: int


class ResultOut(BaseModel):
    """A finished match's result (``shotclock.result/1``): what tournament software takes."""

    format: Literal["shotclock.result/1"]
    match: str = Field(description="the match id, <table>.<number>")
    table: str
    number: int
    event: str | None
    referee: str | None
    draw_number: int | None = Field(description="its number in the draw, when started from it")
    players: list[str]
    race_to: int | None
    score: list[int] = Field(description="frames won per player")
    winner: int | None = Field(description="0 or 1; null: drawn")
    winner_name: str | None
    drawn: bool = Field(description="drawn at the match's time limit")
    by_time_limit: bool = Field(description="decided by the match's time limit")
    started_at: int | None = Field(description="unix ms")
    ended_at: int | None = Field(description="unix ms")
    duration_ms: int | None
    frames: list[FrameResult]
    stats: list[PlayerResult] = Field(description="per player, as README \"Matches\" defines")
    digest: str | None = Field(description="SHA-256 of the match's events as the statistics "
                               "read them (the protocol prints it; recompute it from the store)")
    first_seq: int | None
    last_seq: int | None


class ResultsOut(BaseModel):
    results: list[ResultOut]


class Delivery(BaseModel):
    match: str
    delivery: str = Field(description="the delivery id (X-Shotclock-Delivery): "
                          "<match id>:<16 hex of the body's SHA-256>")
    attempts: int
    sent_at: int | None = Field(description="unix ms of the 2xx; null: not yet")
    next_at: int | None = Field(description="unix ms of the next try while not sent")
    last_error: str | None = Field(description="the last failed attempt: `HTTP 302 Found, "
                                   "Location: ... (redirects are not followed)`, `HTTP 401 "
                                   "Unauthorized: <the receiver's words>`, a network error; "
                                   "a URL's password and query values as ***")


# A webhook's address: http or https, a host, no blank anywhere (results.py checks the same).
WEBHOOK_URL = r"^https?://[^/\s]+\S*$"


# The webhook's secret: shown to nobody, used whole (never human text).
WebhookSecret = Annotated[str, Field(max_length=200, json_schema_extra={"format": "password"})]


class WebhookIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(max_length=2000, pattern=WEBHOOK_URL,
                            description="http:// or https:// address that takes each "
                            "finished match's result; null: send none",
                            examples=["https://results.example.org/shotclock"])
    secret: WebhookSecret | None = Field(None, description="signs each POST "
                                         "(X-Shotclock-Signature); null or left out: keep "
                                         "the one kept; empty: none")


class WebhookOut(BaseModel):
    url: str | None = Field(description="where results go; null: nowhere")
    secret_set: bool = Field(description="whether POSTs are signed (the secret is never shown)")
    source: Literal["environment", "store"] | None = Field(
        description="environment: SHOTCLOCK_RESULTS_WEBHOOK (it wins: the desk cannot "
        "change it); store: set on the desk")
    secret_source: Literal["environment", "store"] | None


class OutboxOut(BaseModel):
    webhook: bool = Field(description="whether SHOTCLOCK_RESULTS_WEBHOOK is set")
    deliveries: list[Delivery]
