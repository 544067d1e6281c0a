"""A referee's command to a table, over HTTP (the WebSocket takes the same, sockets.py)."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from clock_service.core.commands import parse_command
from clock_service.service.auth import stamp
from clock_service.service.doors import credential_of, error_responses, invalid_json, runtime_of
from clock_service.service.wire.fields import TableId
from clock_service.service.wire.http import TableState

__all__ = ["router"]

router = APIRouter()


@router.post("/api/tables/{table_id}/commands", tags=["commands"], response_model=None,
             responses={200: {"model": TableState},
                        **error_responses(400, 401, 403, 404, 409, 413, 422, 429, 503)},
             openapi_extra={"requestBody": {
                 "required": True, "content": {"application/json": {"schema": {
                     "$ref": "#/components/schemas/Command"}}}}})
async def post_command(table_id: TableId, request: Request) -> dict[str, Any] | JSONResponse:
    """A referee command: one of the known names with its own fields (the body schema
    is generated from the core's command registry). 200: the state once its events are
    durable. 409: refused by the rules; 422: malformed (the message names the field),
    or a report the rules cannot accept (e.g. a potted colour without its route)."""
    runtime = runtime_of(request)
    runtime.table(table_id)  # 404 before 422: an unknown table is the bigger mistake
    credential = credential_of(request)  # a referee of this table (the access table)
    try:
        payload = json.loads(await request.body())
    except ValueError:
        return invalid_json()
    return await runtime.command(table_id, stamp(parse_command(payload), credential, "http"))
