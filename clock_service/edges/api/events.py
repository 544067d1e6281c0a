"""The event logs: a live table's, and an archived table's.

Store reads run off the event loop on a reader connection and are sent as the stored JSON
text; every list is paginated with a maximum page size.
"""

from __future__ import annotations

import asyncio
import re
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from clock_service.core.errors import UnknownTable
from clock_service.service.doors import error_responses, plain_integers, runtime_of
from clock_service.service.limits import MAX_EVENTS_PAGE
from clock_service.service.wire.fields import ARCHIVE_ID_PATTERN, MAX_SEQ, ArchiveId, TableId
from clock_service.service.wire.http import ArchiveRecord, WireEvent

__all__ = ["router", "MAX_ARCHIVE_PAGE"]

MAX_ARCHIVE_PAGE = 200
_ARCHIVE_ID = re.compile(ARCHIVE_ID_PATTERN)
# An archive id, or empty: from the first.
ARCHIVE_CURSOR_PATTERN = r"^(?:[A-Za-z0-9_-]{1,32}~[0-9]{1,9})?$"

router = APIRouter()


@router.get("/api/tables/{table_id}/events", tags=["events"], response_model=None,
                   dependencies=[plain_integers("since", "limit")],
                   responses={200: {"model": list[WireEvent]}, **error_responses(404, 422, 429)})
async def get_events(
    table_id: TableId, request: Request,
    since: Annotated[int, Query(ge=0, le=MAX_SEQ, description="events with seq > since")
                     ] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_SEQ, description=f"at most {MAX_EVENTS_PAGE} a "
                                "page (a larger limit gives that many)")] = MAX_EVENTS_PAGE,
) -> Response:
    """The table's event log from the store, in seq order; page with ``since`` = the last
    seq of the page before."""
    runtime = runtime_of(request)
    runtime.table(table_id)
    body = await asyncio.to_thread(runtime.store.events_json, table_id, since,
                                   min(limit, MAX_EVENTS_PAGE))
    return Response(body, media_type="application/json")


@router.get("/api/archive", tags=["archive"], response_model=None,
                   dependencies=[plain_integers("limit")],
                   responses={200: {"model": list[ArchiveRecord]}, **error_responses(422, 429)})
async def list_archive(
    request: Request,
    table: Annotated[TableId | None, Query(description="only the archives of this table "
                                           "id")] = None,
    after: Annotated[str, Query(pattern=ARCHIVE_CURSOR_PATTERN, description="cursor: the "
                                "last archive id of the page before")] = "",
    limit: Annotated[int, Query(ge=1, le=MAX_SEQ, description=f"at most {MAX_ARCHIVE_PAGE} "
                                "a page")] = 100,
) -> list[dict[str, Any]]:
    """Archived tables, by archive id."""
    store = runtime_of(request).store
    records = await asyncio.to_thread(store.archived, table, after,
                                      min(limit, MAX_ARCHIVE_PAGE))
    return [r.to_dict() for r in records]


@router.get("/api/archive/{archive_id}/events", tags=["archive"], response_model=None,
                   dependencies=[plain_integers("since", "limit")],
                   responses={200: {"model": list[WireEvent]}, **error_responses(404, 422, 429)})
async def get_archived_events(
    archive_id: ArchiveId, request: Request,
    since: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_SEQ, description=f"at most {MAX_EVENTS_PAGE} "
                                "a page")] = MAX_EVENTS_PAGE,
) -> Response:
    """An archived table's events, as they were sent (``table`` is its live id)."""
    store = runtime_of(request).store
    if not _ARCHIVE_ID.fullmatch(archive_id) or await asyncio.to_thread(
            store.archive_record, archive_id) is None:
        raise UnknownTable(archive_id)
    body = await asyncio.to_thread(store.events_json, archive_id, since,
                                   min(limit, MAX_EVENTS_PAGE))
    return Response(body, media_type="application/json")
