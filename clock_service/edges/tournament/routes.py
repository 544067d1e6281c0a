"""HTTP routes of the tournament around the table (reading needs no referee token)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse, Response

from clock_service.core import presets
from clock_service.core.errors import ShotClockError
from clock_service.edges.tournament.draw import MAX_DRAW_NUMBER, DrawError, Problem
from clock_service.edges.tournament.results import Results, results_csv
from clock_service.edges.tournament.schemas import (
    DRAW_BODY,
    AssignIn,
    DrawMatchOut,
    DrawOut,
    DrawRefused,
    NextOut,
    OutboxOut,
    ResultOut,
    ResultsOut,
    StartMatchIn,
    StartNextIn,
    WebhookIn,
    WebhookOut,
)
from clock_service.edges.tournament.service import Tournament
from clock_service.service.doors import credential_of, error_responses
from clock_service.service.wire.fields import MatchId, PresetName, TableId, TextLine
from clock_service.service.wire.http import ErrorResponse
from clock_service.service.wire.state import PresetOut

__all__ = ["router"]


class NotServedHere(ShotClockError, LookupError):
    """A tournament route on a service that does not keep the tournament (404)."""

    code = "not_served_here"
    http_status = 404


# -- the draw --------------------------------------------------------------------------------
_DRAW_ERRORS = error_responses(400, 401, 404, 409, 422, 503)


def _refused(problems: list[Problem]) -> JSONResponse:
    error = DrawError(problems)
    return JSONResponse({"error": {"code": error.code, "message": str(error),
                                   "problems": [p.to_dict() for p in problems]}},
                        status_code=422)


# -- results out ------------------------------------------------------------------------------
def router(tournament: Tournament | None, results: Results | None) -> APIRouter:
    """The presets, the draw and the results out; on the hall service (which keeps
    neither draw nor results) their routes answer 404 ``not_served_here``."""

    def served() -> Tournament:
        if tournament is None:  # the hall service mirrors tables; the draw lives on serve
            raise NotServedHere("the draw is kept by the table service (shotclock serve), "
                                "not by the hall service")
        return tournament

    def made() -> Results:
        if results is None:
            raise NotServedHere("results are made by the table service (shotclock serve), "
                                "not by the hall service")
        return results

    routes = APIRouter(tags=["tournament"])

    @routes.get("/api/presets", response_model=list[PresetOut])
    async def list_presets() -> list[dict[str, Any]]:
        """The named time profiles: built-in (section 12, WPA §20, Mosconi-style, two
        extensions in the deciding frame) and the federation's own (SHOTCLOCK_PRESETS_DIR).
        Name one in a table's or match's profile: ``{"preset": "wpa-20"}``."""
        return [p.to_dict() for p in presets.library().presets.values()]

    @routes.get("/api/presets/{name}", response_model=PresetOut,
                responses={404: {"model": ErrorResponse}})
    async def get_preset(name: PresetName) -> Any:
        """One preset with its source and its full profile."""
        preset = presets.library().presets.get(name)
        if preset is None:
            return JSONResponse({"error": {
                "code": "unknown_preset",
                "message": f"no preset {name!r}; known: {sorted(presets.library().presets)}"}},
                status_code=404)
        return preset.to_dict()

    @routes.get("/api/draw", response_model=DrawOut)
    async def get_draw(request: Request) -> dict[str, Any]:
        """The draw: each live table's queue, what it plays now and next, the matches waiting
        for the next free table (``unassigned``), and every match with its status."""
        return served().view()

    @routes.post("/api/draw", status_code=201, responses={
        **error_responses(401, 403, 413, 503), 422: {"model": DrawRefused}},
        openapi_extra={"requestBody": DRAW_BODY})
    async def import_draw(request: Request) -> Any:
        """Import a draw: CSV (header ``number,player1,player2,race_to,event,round,table``) or
        JSON (a list of ``{number, players: [a, b], race_to, event, round, table}``); ``table``
        empty or ``next``: the next free table. A bad file is refused as a whole (422
        ``invalid_draw``) with every bad line and its reason in ``problems``; nothing changes."""
        kind = "json" if "json" in request.headers.get("content-type", "") else "csv"
        body = await request.body()
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return _refused([Problem(1, "the file is not UTF-8 text", code="draw_not_utf8")])
        try:
            matches = await served().import_draw(text, kind)
        except DrawError as exc:
            return _refused(exc.problems)
        return {"imported": len(matches), "matches": [m.to_dict() for m in matches]}

    @routes.post("/api/draw/{number}/assign", response_model=DrawMatchOut,
                 responses=_DRAW_ERRORS)
    async def assign_match(request: Request,
                           number: Annotated[int, Path(ge=1, le=MAX_DRAW_NUMBER)],
                           body: AssignIn) -> dict[str, Any]:
        """Put a queued match in a table's queue (``table``), or back to the next free table
        (``table`` null); with ``position``, at that place in the queue (0: first): the
        director's reorder. 409 ``match_started`` once it was started."""
        return (await served().assign(number, body.table, body.position)).to_dict()

    @routes.post("/api/draw/{number}/start", responses=_DRAW_ERRORS)
    async def start_match(request: Request,
                          number: Annotated[int, Path(ge=1, le=MAX_DRAW_NUMBER)],
                          body: StartMatchIn) -> Any:
        """Start this queued match on ``table`` now, whichever queue it was in (the
        director's desk): the table's ``new_match`` with its players, race and event. 200
        the table's new state; 409 ``match_in_play`` while the table's match is under way
        (give ``reason`` to leave it unfinished), ``clock_counting`` while a shot is timed,
        ``match_started`` once this match was started."""
        return await served().start_match(number, body.table, credential_of(request),
                                          body.reason)

    @routes.delete("/api/draw", responses=_DRAW_ERRORS)
    async def clear_draw(request: Request) -> dict[str, int]:
        """Forget the draw (the matches played stay on record as matches)."""
        return {"removed": await served().clear()}

    @routes.get("/api/tables/{table_id}/next", response_model=NextOut, responses=_DRAW_ERRORS)
    async def next_match(request: Request, table_id: TableId) -> dict[str, Any]:
        """What the table plays next from the draw (its queue, else the next free table's
        first), or null."""
        match = served().next_for(table_id)
        return {"table": table_id, "next": None if match is None else match.to_dict()}

    @routes.post("/api/tables/{table_id}/next", responses=_DRAW_ERRORS)
    async def start_next_match(request: Request, table_id: TableId,
                               body: StartNextIn | None = None) -> Any:
        """Start the table's next match from the draw: a ``new_match`` with its players, race
        and event (``reason`` needed to leave a match unfinished, as for new_match). 200 the
        new state; 409 ``no_next_match``."""
        reason = None if body is None else body.reason
        return await served().start_next(table_id, credential_of(request), reason)

    @routes.get("/api/results", response_model=ResultsOut)
    async def list_results(request: Request,
                           event: Annotated[TextLine | None, Query(
                               description="only this event's matches")] = None,
                           table: Annotated[TableId | None, Query()] = None,
                           ) -> dict[str, Any]:
        """Every finished match's result (format ``shotclock.result/1``, README "Results
        out"), in the order they ended, at most 500."""
        return {"results": await made().event_results(event, table)}

    @routes.get("/api/results.csv", response_class=Response,
                responses={200: {"content": {"text/csv": {}}}})
    async def results_as_csv(request: Request,
                             event: Annotated[TextLine | None, Query()] = None,
                             table: Annotated[TableId | None, Query()] = None,
                             ) -> Response:
        """The same as CSV, one row per match (columns: README "Results out")."""
        rows = await made().event_results(event, table)
        return Response(results_csv(rows), media_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": 'attachment; filename="results.csv"'})

    @routes.get("/api/results/outbox", response_model=OutboxOut)
    async def results_outbox(request: Request) -> dict[str, Any]:
        """The webhook's deliveries (the last 100): attempts, sent or when the next try is."""
        results = made()
        return await asyncio.to_thread(results.outbox)

    @routes.get("/api/results/webhook", response_model=WebhookOut)
    async def webhook(request: Request) -> dict[str, Any]:
        """Where the results go: the URL, whether POSTs are signed (never the secret), and
        whether the environment set it (then the desk cannot change it)."""
        return made().webhook_config()

    @routes.put("/api/results/webhook", response_model=WebhookOut,
                responses=error_responses(400, 401, 403, 409, 413, 422, 429, 503))
    async def set_webhook(request: Request, body: WebhookIn) -> dict[str, Any]:
        """Set the results webhook from the desk: kept in the store, used at once (the
        finished matches from now on). 409 ``webhook_from_environment`` when
        SHOTCLOCK_RESULTS_WEBHOOK is set: the environment wins."""
        return await made().configure(body.url, body.secret)

    @routes.get("/api/results/{match_id}", response_model=ResultOut,
                responses={404: {"model": ErrorResponse}})
    async def one_result(request: Request, match_id: MatchId) -> dict[str, Any]:
        """One finished match's result; 404 ``unknown_match`` before it is over."""
        return await made().result(match_id)

    return routes
