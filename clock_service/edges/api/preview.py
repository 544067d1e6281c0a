"""What a result would do, before it is sent (issue 23: confirming a result said a plain
"Send this result?" when it was a foul that lost the frame, 6.2).

``POST /api/tables/{id}/preview`` takes a ``result`` command as ``/commands`` does and
answers the events it would make, applied to a copy of the table's clock: nothing is
stored, published or changed. The console's confirmation then says "foul" or "technical
loss" with the rule, in the rules' own verdict instead of a copy of them in the page.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from clock_service.core.clock import TableClock
from clock_service.core.commands import parse_command
from clock_service.core.errors import InvalidCommand
from clock_service.service.doors import error_responses, invalid_json, runtime_of
from clock_service.service.wire.fields import TableId


class NotPreviewable(InvalidCommand):
    """A preview of a command other than a result, or on a service that does not run the
    table's clock (422 not_previewable)."""

__all__ = ["router"]

router = APIRouter()


@router.post("/api/tables/{table_id}/preview", tags=["commands"], response_model=None,
             responses=error_responses(400, 401, 403, 404, 409, 413, 422, 429),
             openapi_extra={"requestBody": {
                 "required": True, "content": {"application/json": {"schema": {
                     "$ref": "#/components/schemas/Command"}}}}})
async def preview_result(table_id: TableId, request: Request) -> dict[str, Any] | JSONResponse:
    """The events a ``result`` would make now (type and data of each), from a copy of the
    table's clock; nothing changes. 409/422 as the command itself would be refused."""
    runtime = runtime_of(request)
    table = runtime.table(table_id)
    clock_of_table = getattr(table, "clock", None)
    if not isinstance(clock_of_table, TableClock):  # the hall's mirror keeps no clock to copy
        raise NotPreviewable(f"preview: table {table_id!r} is not run by this service",
                             code="not_previewable")
    try:
        payload = json.loads(await request.body())
    except ValueError:
        return invalid_json()
    command = parse_command(payload)
    if command.name != "result":
        raise NotPreviewable(f"preview: only a result can be previewed, got {command.name!r}",
                             code="not_previewable")
    clock = copy.deepcopy(clock_of_table)  # a few kB; the table's own clock is not touched
    events = clock.handle(command, runtime.time.now_ms())
    return {"events": [{"type": e.type, "data": dict(e.data)} for e in events]}
