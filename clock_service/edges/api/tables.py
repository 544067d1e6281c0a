"""The tables: list, create, read, archive (their logs: events.py)."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from clock_service.service.doors import error_responses, plain_integers, runtime_of
from clock_service.service.limits import MAX_TABLES_PAGE
from clock_service.service.wire.fields import MAX_SEQ, TableId
from clock_service.service.wire.http import ArchivedTable, CreateTable, TableState

__all__ = ["router"]

# OpenAPI links from a created table to the routes that take its id (stateful testing).
_TABLE_LINKS = {
    name: {"operationId": operation, "parameters": {"table_id": "$response.body#/table"}}
    for name, operation in [("GetTable", "get_table_api_tables__table_id__get"),
                            ("PostCommand", "post_command_api_tables__table_id__commands_post"),
                            ("GetEvents", "get_events_api_tables__table_id__events_get"),
                            ("ArchiveTable", "archive_table_api_tables__table_id__delete")]
}

router = APIRouter()


@router.get("/api/tables", tags=["tables"], response_model=None,
            dependencies=[plain_integers("limit")],
            responses={200: {"model": list[TableState], "headers": {"Link": {
                "description": "<...?after=ID&limit=N>; rel=\"next\" when there are more",
                "schema": {"type": "string"}}}}, **error_responses(422, 429)})
async def list_tables(
    request: Request, response: Response,
    after: Annotated[str, Query(pattern=r"^[A-Za-z0-9_-]{0,32}$", description="cursor: the "
                                "last id of the page before (tables come sorted by id)")] = "",
    limit: Annotated[int, Query(ge=1, le=MAX_SEQ, description=f"at most {MAX_TABLES_PAGE} a "
                                "page (a larger limit gives that many)")] = MAX_TABLES_PAGE,
) -> list[dict[str, Any]]:
    """Live tables' states, sorted by id, a page at a time."""
    runtime = runtime_of(request)
    limit = min(limit, MAX_TABLES_PAGE)
    ids = sorted(tid for tid in runtime.tables if tid > after)
    page = ids[:limit]
    if len(ids) > limit:
        query = urlencode({"after": page[-1], "limit": limit})
        response.headers["Link"] = f'</api/tables?{query}>; rel="next"'
    return [runtime.state(table_id) for table_id in page]


@router.post("/api/tables", tags=["tables"], status_code=201, response_model=None,
             responses={201: {"model": TableState, "links": _TABLE_LINKS},
                        **error_responses(400, 401, 403, 409, 413, 422, 429, 503)})
async def create_table(body: CreateTable, request: Request) -> dict[str, Any]:
    """Create a table (the referee token). 409 ``table_exists``, or ``too_many_tables``
    over SHOTCLOCK_MAX_TABLES live tables; 422 ``invalid_profile`` also when floor_ms
    is above shot_ms. 403 ``director_only`` for a referee's token."""
    return await runtime_of(request).create_table(
        body.id, body.players, timer=body.timer, profile=body.partial_profile(),
        first_breaker=body.first_breaker, race_to=body.race_to,
        event=body.event, referee=body.referee,
        match_limit_ms=body.match_limit_ms, at_match_limit=body.at_match_limit,
    )


@router.get("/api/tables/{table_id}", tags=["tables"], response_model=None,
            responses={200: {"model": TableState}, **error_responses(404, 429)})
async def get_table(table_id: TableId, request: Request) -> dict[str, Any]:
    return runtime_of(request).state(table_id)


@router.delete("/api/tables/{table_id}", tags=["tables"], response_model=None,
               responses={200: {"model": ArchivedTable},
                          **error_responses(401, 403, 404, 429, 503)})
async def archive_table(table_id: TableId, request: Request) -> dict[str, Any]:
    """Archive a table (the referee token): it leaves the hall, its clock stops, its
    WebSocket clients get ``table.archived`` and are closed (4404). Its events stay in
    the store under ``archived_as`` (``<id>~<n>``; GET /api/archive/{archive_id}/events)
    and the id is free for a new table, which starts a new log from seq 1. 403
    ``director_only`` for a referee's token."""
    return await runtime_of(request).archive_table(table_id)
