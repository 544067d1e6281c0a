"""Pull feeds for video switchers: ``GET /feeds/tables.{json,xml,csv}`` and
``GET /feeds/tables/{id}.{json,xml,csv}`` (README "Broadcast feeds").

vMix and TriCaster poll these, up to ten times a second each, so they must cost the clock
nothing: everything comes from memory (the state each table published last and the last
notable event, kept by :class:`FeedBoard` as the runtime publishes; no store read), each
table's row is encoded once per state version and tenth of a second (rows.py) and shared
by every poller, a whole body is cached until one of its rows changes, and a poller whose
``If-None-Match`` matches gets 304 with no body. Reading needs no token, as every read of
this service; the read limits (limits.py) charge a feed as a table's state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from clock_service.edges.broadcast import rows as r
from clock_service.service.live import ServedTables
from clock_service.service.wire.fields import TableId
from clock_service.service.wire.http import ErrorResponse

__all__ = ["FeedBoard", "router", "MEDIA_TYPES"]

Format = Literal["json", "xml", "csv"]
Lang = Literal["en", "ru"]

# The charset said outright for every format (issue 36: a switcher that guesses read the
# Cyrillic names as Latin-1); the bodies are UTF-8, JSON without \u escapes (rows.json_row).
MEDIA_TYPES: dict[str, str] = {
    "json": "application/json; charset=utf-8",
    "xml": "application/xml; charset=utf-8",
    "csv": "text/csv; charset=utf-8",
}
_ENCODE_ROW: dict[str, Callable[[dict[str, Any]], str]] = {
    "json": r.json_row, "xml": r.xml_row, "csv": r.csv_row}
_ENCODE_BODY: dict[str, Callable[[Iterable[str]], str]] = {
    "json": r.to_json, "xml": r.to_xml, "csv": r.to_csv}
ALL = "*"


class FeedBoard:
    """What the feeds serve, kept from the runtime's publications: per table its last
    notable event; per (table, format, language) its last encoded row; per (tables,
    format, language) the last body with its ETag. Bounded: one entry per live table and
    combination (2 languages x 3 formats), dropped when a table is archived.

    ``around``: what the draw says about a table (rows.NO_DRAW without one; the table
    service's tournament sets its ``feed_info`` here, ``attach_draw``). Asked at every poll
    for every table: it must answer from memory."""

    def __init__(self, runtime: ServedTables[Any]) -> None:
        self.runtime = runtime
        self.around: Callable[[str], Mapping[str, Any]] = lambda _table: r.NO_DRAW
        self.last_event: dict[str, dict[str, Any]] = {}
        # The event each table's match was started with (table.created, match.started),
        # heard since this service started; before that, the table's creation's (match 1).
        self.events: dict[str, str | None] = {}
        self._rows: dict[tuple[str, str, str], tuple[tuple[Any, ...], str]] = {}
        self._bodies: dict[tuple[str, str, str], tuple[tuple[Any, ...], bytes, str]] = {}
        self.encoded_rows = 0  # rows encoded (for the benchmark and the tests)
        self.encoded_bodies = 0
        runtime.subscribe(self._published)

    def attach_draw(self, around: Callable[[str], Mapping[str, Any]]) -> None:
        self.around = around

    def _published(self, table_id: str, wires: list[dict[str, Any]], texts: list[str]) -> None:
        for wire in wires:
            kind = wire.get("type")
            if kind in ("table.created", "match.started"):
                self.events[table_id] = (wire.get("data") or {}).get("event")
            if kind in r.NOTABLE:
                self.last_event[table_id] = {"type": kind, "data": wire.get("data") or {},
                                             "seq": wire.get("seq"), "at": wire.get("at")}
            elif kind == "table.archived":
                self._forget(table_id)
            elif kind == "table.created":
                self.last_event.pop(table_id, None)

    def _forget(self, table_id: str) -> None:
        self.last_event.pop(table_id, None)
        self.events.pop(table_id, None)
        for key in [k for k in self._rows if k[0] == table_id]:
            del self._rows[key]
        for key in [k for k in self._bodies if k[0] == table_id]:
            del self._bodies[key]

    def state_of(self, table_id: str) -> dict[str, Any]:
        """The table's last published state with its liveness (raises UnknownTable).

        The state itself, not a copy, while the table is live (every table of this service:
        rows never change it): a poll of a hall of tables copied every table's state twice
        (0.3 ms of the loop's time a poll on this machine, for nothing)."""
        state = self.runtime.table(table_id).published_state
        live = self.runtime.liveness(table_id)
        if live.get("live", True):
            return state
        return {**state, **live}

    def event_of(self, table_id: str, state: Mapping[str, Any]) -> str | None:
        """The event the table's match was started with: heard, or (match 1, before this
        service heard its start) the table's creation's, kept in its config."""
        if table_id in self.events:
            return self.events[table_id]
        if (state.get("match") or {}).get("number", 1) != 1:
            return None
        config = getattr(self.runtime.tables.get(table_id), "config", None) or {}
        event = config.get("event")
        return str(event) if event else None

    def _row(self, table_id: str, state: Mapping[str, Any], around: Mapping[str, Any],
             now_ms: float, lang: str) -> dict[str, Any]:
        return r.row(state, self.last_event.get(table_id), now_ms, lang, around,
                     self.event_of(table_id, state))

    def row(self, table_id: str, now_ms: float, lang: str = "en") -> dict[str, Any]:
        """The row of one table now, as the feeds show it (also for the text files)."""
        return self._row(table_id, self.state_of(table_id), self.around(table_id), now_ms,
                         lang)

    def body(self, table_ids: list[str], scope: str, fmt: str, lang: str,
             now_ms: float) -> tuple[bytes, str]:
        """(encoded body, ETag) of these tables' rows now, re-encoding only what changed."""
        states = [self.state_of(tid) for tid in table_ids]
        arounds = [self.around(tid) for tid in table_ids]
        # The draw's answer is part of the key: a match queued next changes no seq.
        keys = tuple((r.row_key(state, now_ms), r.around_key(around))
                     for state, around in zip(states, arounds, strict=True))
        cached = self._bodies.get((scope, fmt, lang))
        if cached is not None and cached[0] == keys:
            return cached[1], cached[2]
        encode = _ENCODE_ROW[fmt]
        parts = []
        for tid, state, around, key in zip(table_ids, states, arounds, keys, strict=True):
            hit = self._rows.get((tid, fmt, lang))
            if hit is None or hit[0] != key:
                values = self._row(tid, state, around, now_ms, lang)
                hit = (key, encode(values))
                self._rows[(tid, fmt, lang)] = hit
                self.encoded_rows += 1
            parts.append(hit[1])
        body = _ENCODE_BODY[fmt](parts).encode()
        etag = '"' + hashlib.blake2b(body, digest_size=10).hexdigest() + '"'
        self._bodies[(scope, fmt, lang)] = (keys, body, etag)
        self.encoded_bodies += 1
        return body, etag


# A graphics template (CasparCG, a browser graphics system) runs on an origin of its own and
# reads the feed with fetch(): the rows are public reads (no token, as every read here), so
# any origin may read them; with no credentials and only GET, nothing more is exposed.
_CORS = {"Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": "ETag"}


def _answer(request: Request, body: bytes, etag: str, fmt: str) -> Response:
    headers = {"ETag": etag, "Cache-Control": "no-cache", **_CORS}
    offered = request.headers.get("if-none-match", "")
    if offered and (offered.strip() == "*" or etag in
                    (tag.strip().removeprefix("W/") for tag in offered.split(","))):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=MEDIA_TYPES[fmt], headers=headers)


_LANG = Query(description="language of last_event: en or ru")
_FEED_DOC: dict[int | str, dict[str, Any]] = {
    200: {"description": "the rows (columns: README \"Broadcast feeds\")", "content": {
        "application/json": {}, "application/xml": {}, "text/csv": {}}},
    304: {"description": "If-None-Match matched the current ETag: nothing changed"},
    422: {"model": ErrorResponse, "description": "an unknown format or language"},
    429: {"model": ErrorResponse, "description": "over the read rate of this address "
          "(rate_limited; see Retry-After)"},
}


def router(board: FeedBoard) -> APIRouter:
    """The feeds over ``board`` (made by the composition root beside the runtime)."""
    routes = APIRouter(tags=["feeds"])

    @routes.get("/feeds/tables.{fmt}", response_model=None, responses=_FEED_DOC)
    async def all_tables_feed(request: Request, fmt: Format,
                              lang: Annotated[Lang, _LANG] = "en") -> Response:
        """Every live table, one row each, sorted by id: JSON (an array of objects), XML
        (``/feed/row``) or CSV (a header line). From memory; ETag and 304."""
        ids = sorted(board.runtime.tables)
        body, etag = board.body(ids, ALL, fmt, lang, board.runtime.time.now_ms())
        return _answer(request, body, etag, fmt)

    @routes.get("/feeds/tables/{table_id}.{fmt}", response_model=None,
                responses={**_FEED_DOC, 404: {"model": ErrorResponse,
                                              "description": "no such table (unknown_table)"}})
    async def table_feed(request: Request, table_id: TableId, fmt: Format,
                         lang: Annotated[Lang, _LANG] = "en") -> Response:
        """One table's row (an array of one, a ``/feed`` of one ``row``, or a header line and
        one line). From memory; ETag and 304."""
        board.runtime.table(table_id)  # 404 unknown_table
        body, etag = board.body([table_id], table_id, fmt, lang, board.runtime.time.now_ms())
        return _answer(request, body, etag, fmt)

    return routes
