"""The HTTP and WebSocket API: an app factory with a lifespan around the runtime.

Nothing a client without the token does may delay an expiry (TEAM convention 7): store
reads run off the event loop on a reader connection and are sent as the stored JSON text,
every list is paginated with a maximum page size, reads and commands are rate-limited per
client address (limits.py), a ``?since=`` replay streams from the store in bounded batches
under the same queue and send timeout as live events, and only a few replays run at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import Depends, FastAPI, Query, Request, WebSocket
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from pydantic import TypeAdapter
from starlette.routing import Match
from starlette.websockets import WebSocketDisconnect, WebSocketState

from clock_service import presets
from clock_service.broadcast.feeds import FeedBoard
from clock_service.broadcast.feeds import router as feeds_router
from clock_service.commands import parse_command
from clock_service.errors import (
    Forbidden,
    InvalidInput,
    NoHardware,
    NotAuthorized,
    RuleRefusal,
    ShotClockError,
    StoreError,
    TableExists,
    TooManyTables,
    UnknownTable,
)
from clock_service.hub import CLOSE_TOO_SLOW, HALL, Hub, Subscriber, encode
from clock_service.limits import (
    MAX_EVENTS_PAGE,
    MAX_TABLES_PAGE,
    Limits,
    client_of,
    install,
    read_message,
)
from clock_service.reports.routes import install_reports
from clock_service.reports.service import UnknownMatch
from clock_service.runtime import Runtime
from clock_service.schemas import (
    ARCHIVE_ID_PATTERN,
    MAX_SEQ,
    ArchivedTable,
    ArchiveRecord,
    BrightnessRequest,
    BrightnessResponse,
    CreateTable,
    ErrorResponse,
    HealthResponse,
    TableState,
    WireEvent,
    command_union,
)
from clock_service.settings import Settings
from clock_service.storage import Store
from clock_service.timesource import RealTime, TimeSource
from clock_service.tournament.routes import router as tournament_router
from web_ui import mount_pages

__all__ = ["create_app", "CLOSE_POLICY", "CLOSE_UNKNOWN_TABLE", "CLOSE_TRY_LATER"]

log = logging.getLogger(__name__)

STATUS = {RuleRefusal: 409, InvalidInput: 422, UnknownTable: 404, UnknownMatch: 404,
          TableExists: 409, TooManyTables: 409, NotAuthorized: 401, Forbidden: 403,
          StoreError: 503, NoHardware: 404}
CLOSE_POLICY = 1008
CLOSE_TRY_LATER = 1013  # too many replays at once: reconnect in a moment
CLOSE_UNKNOWN_TABLE = 4404
MAX_ARCHIVE_PAGE = 200
REPLAY_BATCH = 256  # events read from the store and sent per step of a replay

_ERROR_TEXT = {
    400: "the body is not JSON (invalid_json)",
    401: "the referee token is missing or wrong (unauthorized)",
    403: "a page of another site (origin_not_allowed)",
    404: "no such table (unknown_table)",
    409: "refused by the rules (the code and rule say which), or the table exists / too "
         "many tables",
    413: "the body is over the size limit (too_large)",
    422: "malformed: the message names the field",
    429: "over the rate limit of this address (rate_limited; see Retry-After)",
    503: "applied, but the event store did not confirm it in time (store_unavailable)",
}


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    out: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        out[code] = {"model": ErrorResponse, "description": _ERROR_TEXT[code]}
        if code == 429:
            out[code]["headers"] = {"Retry-After": {
                "description": "seconds until a retry can succeed", "schema": {"type": "integer"}}}
    return out


def _status(exc: ShotClockError) -> int:
    own = getattr(exc, "http_status", None)  # errors that carry their own (the hall's)
    if isinstance(own, int):
        return own
    for cls, status in STATUS.items():
        if isinstance(exc, cls):
            return status
    return 500


def _error(exc: ShotClockError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, NotAuthorized) else None
    return JSONResponse({"error": exc.to_dict()}, status_code=_status(exc), headers=headers)


def token_matches(expected: str | None, offered: str | None) -> bool:
    if expected is None:
        return True
    # Constant-time comparison: the token must not leak through response timing.
    return offered is not None and hmac.compare_digest(offered.encode(), expected.encode())


def plain_integers(*names: str) -> Any:
    """A dependency: these query parameters, when given, are integers written in digits.
    (pydantic would read '1.0', ' 1', '+1' or '1_000' as integers.)"""

    def check(request: Request) -> None:
        for name in names:
            for raw in request.query_params.getlist(name):
                if not (raw.isascii() and raw.isdigit()):
                    raise InvalidInput(f"{name} must be a whole number >= 0 written in "
                                       f"digits, got {raw[:40]!r}", code="invalid_request")

    return Depends(check)

# Security headers (limits what a hostile page can do with ours). Every page: scripts only
# from this service, no plugins, no <base> games. The referee console, the hall and the
# display may not be framed (clickjacking a referee's buttons); the overlay must stay
# embeddable (OBS browser source). Inline style attributes stay allowed: the pages set them.
_CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
        "form-action 'self'")
# FastAPI's /docs loads Swagger UI from a CDN and starts it with an inline script.
_CSP_DOCS = ("default-src 'self'; script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
             "style-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; img-src 'self' data: "
             "https://fastapi.tiangolo.com; object-src 'none'; base-uri 'none'; "
             "frame-ancestors 'none'")
EMBEDDABLE = frozenset({"/overlay"})


def _security_headers(path: str) -> list[tuple[bytes, bytes]]:
    headers = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]
    if path in ("/docs", "/redoc"):
        return [*headers, (b"content-security-policy", _CSP_DOCS.encode()),
                (b"x-frame-options", b"DENY")]
    if path in EMBEDDABLE:
        return [*headers, (b"content-security-policy", _CSP.encode())]
    return [*headers, (b"content-security-policy", (_CSP + "; frame-ancestors 'none'").encode()),
            (b"x-frame-options", b"DENY")]


class SecurityHeaders:
    """Pure ASGI: the headers above on every HTTP response."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = _security_headers(scope.get("path", ""))

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, with_headers)


# Makes the runtime the API serves: ``shotclock hall`` gives a mirror of a hall's tables
# (clock_service/mqtt/hall.py), which answers the same methods.
RuntimeFactory = Callable[[Settings, TimeSource], Runtime]


READER_THREADS = 8


async def _warm_executor() -> None:
    """Give the loop a thread pool for store reads with every thread started now.

    A ThreadPoolExecutor starts its threads on demand, and ``Thread.start`` waits until the
    new thread has run: on a busy machine the loop stalled there for tens of ms (py-spy,
    under the replay attack), a burst of reads at a time. Started at start-up, never again.
    """
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(READER_THREADS, thread_name_prefix="reader")
    loop.set_default_executor(pool)
    barrier = threading.Barrier(READER_THREADS)
    await asyncio.gather(*(loop.run_in_executor(pool, barrier.wait)
                           for _ in range(READER_THREADS)))


def create_app(settings: Settings | None = None, *, time: TimeSource | None = None,
               runtime_factory: RuntimeFactory | None = None,
               store: Store | None = None) -> FastAPI:
    """The service. ``store``: one already locked and checked (``shotclock serve``)."""
    settings = settings or Settings.from_env()
    time = time or RealTime()
    try:
        presets.configure(settings.presets_dir)
    except presets.PresetError as exc:  # a bad preset file stops start-up, saying which
        raise SystemExit(f"SHOTCLOCK_PRESETS_DIR: {exc}") from None
    limits = Limits(command_rate=settings.command_rate, command_burst=settings.command_burst,
                    read_rate=settings.read_rate, read_burst=settings.read_burst,
                    message_rate=settings.message_rate, message_burst=settings.message_burst,
                    handshake_rate=settings.handshake_rate,
                    handshake_burst=settings.handshake_burst,
                    max_sockets_per_address=settings.max_sockets_per_address,
                    trusted_proxies=settings.trusted_proxies,
                    allowed_origins=settings.allowed_origins)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if runtime_factory is None:
            runtime = Runtime(store or Store(settings.db), time, Hub(settings.ws_queue),
                              max_tables=settings.max_tables)
        else:
            runtime = runtime_factory(settings, time)
        runtime.store_wait_s = settings.store_wait_s
        app.state.runtime = runtime
        app.state.feeds = FeedBoard(runtime)  # the broadcast feeds' memory (before start)
        app.state.replays = asyncio.Semaphore(max(1, settings.max_replays))
        await _warm_executor()
        await runtime.start(default_table=settings.default_table)
        try:
            yield
        finally:
            await runtime.stop()

    app = _ShotClockApp(
        title="Shot clock",
        version="0.1.0",
        summary="Table-side shot clock for Russian billiards (rules section 12).",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.limits = limits
    install(app, max_body_bytes=settings.max_message_bytes, limits=limits)
    app.add_middleware(SecurityHeaders)

    @app.exception_handler(ShotClockError)
    async def on_shotclock_error(request: Request, exc: ShotClockError) -> JSONResponse:
        return _error(exc)

    @app.exception_handler(RequestValidationError)
    async def on_validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return JSONResponse({"error": {"code": "invalid_json",
                                           "message": "the body is not JSON"}}, status_code=400)
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}" for e in errors
        )
        profile = all(tuple(e["loc"][:2]) == ("body", "profile") for e in errors)
        return JSONResponse(
            {"error": {"code": "invalid_profile" if profile and errors else "invalid_request",
                       "message": problems or "malformed request"}},
            status_code=422,
        )

    def runtime_of(request: Request) -> Runtime:
        runtime: Runtime = request.app.state.runtime
        return runtime

    def require_referee(request: Request) -> None:
        header = request.headers.get("authorization", "")
        offered = header[7:].strip() if header[:7].lower() == "bearer " else None
        if not token_matches(settings.referee_token, offered):
            raise NotAuthorized("this command needs the referee token: "
                                "Authorization: Bearer <token>")

    referee = [Depends(require_referee)]

    @app.get("/api/health", tags=["service"], response_model=None,
             responses={200: {"model": HealthResponse}, **_errors(429)})
    async def health(request: Request) -> dict[str, Any]:
        """Liveness, counts, the status of each part (``components``) and the current
        ``faults`` (the same list the pages show)."""
        runtime = runtime_of(request)
        return {"ok": True, "tables": len(runtime.tables), "clients": runtime.hub.count(),
                "server_time": runtime.time.now_ms(),
                "delivered": runtime.hub.delivered, "cut_off": runtime.hub.cut_off,
                "components": runtime.health.components(),
                "faults": runtime.health.faults()}

    @app.get("/api/tables", tags=["tables"], response_model=None,
             dependencies=[plain_integers("limit")],
             responses={200: {"model": list[TableState], "headers": {"Link": {
                 "description": "<...?after=ID&limit=N>; rel=\"next\" when there are more",
                 "schema": {"type": "string"}}}}, **_errors(422, 429)})
    async def list_tables(
        request: Request, response: Response,
        after: Annotated[str, Query(max_length=32, description="cursor: the last id of the "
                                    "page before (tables come sorted by id)")] = "",
        limit: Annotated[int, Query(ge=1, description=f"at most {MAX_TABLES_PAGE} a page "
                                      "(a larger limit gives that many)")] = MAX_TABLES_PAGE,
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

    @app.post("/api/tables", tags=["tables"], status_code=201, response_model=None,
              responses={201: {"model": TableState, "links": _TABLE_LINKS},
                         **_errors(400, 401, 403, 409, 413, 422, 429, 503)},
              dependencies=referee)
    async def create_table(body: CreateTable, request: Request) -> dict[str, Any]:
        """Create a table (the referee token). 409 ``table_exists``, or ``too_many_tables``
        over SHOTCLOCK_MAX_TABLES live tables; 422 ``invalid_profile`` also when floor_ms
        is above shot_ms."""
        return await runtime_of(request).create_table(
            body.id, body.players, timer=body.timer, profile=body.partial_profile(),
            first_breaker=body.first_breaker, race_to=body.race_to,
            event=body.event, referee=body.referee,
            match_limit_ms=body.match_limit_ms, at_match_limit=body.at_match_limit,
        )

    @app.get("/api/tables/{table_id}", tags=["tables"], response_model=None,
             responses={200: {"model": TableState}, **_errors(404, 429)})
    async def get_table(table_id: str, request: Request) -> dict[str, Any]:
        return runtime_of(request).state(table_id)

    @app.delete("/api/tables/{table_id}", tags=["tables"], response_model=None,
                responses={200: {"model": ArchivedTable}, **_errors(401, 403, 404, 429, 503)},
                dependencies=referee)
    async def archive_table(table_id: str, request: Request) -> dict[str, Any]:
        """Archive a table (the referee token): it leaves the hall, its clock stops, its
        WebSocket clients get ``table.archived`` and are closed (4404). Its events stay in
        the store under ``archived_as`` (``<id>~<n>``; GET /api/archive/{archive_id}/events)
        and the id is free for a new table, which starts a new log from seq 1."""
        return await runtime_of(request).archive_table(table_id)

    @app.post("/api/tables/{table_id}/commands", tags=["commands"], response_model=None,
              responses={200: {"model": TableState},
                         **_errors(400, 401, 403, 404, 409, 413, 422, 429, 503)},
              dependencies=referee, openapi_extra={"requestBody": {
                  "required": True, "content": {"application/json": {"schema": {
                      "$ref": "#/components/schemas/Command"}}}}})
    async def post_command(table_id: str, request: Request) -> dict[str, Any] | JSONResponse:
        """A referee command: one of the known names with its own fields (the body schema
        is generated from the core's command registry). 200: the state once its events are
        durable. 409: refused by the rules; 422: malformed (the message names the field),
        or a report the rules cannot accept (e.g. a potted colour without its route)."""
        runtime = runtime_of(request)
        runtime.table(table_id)  # 404 before 422: an unknown table is the bigger mistake
        try:
            payload = json.loads(await request.body())
        except ValueError:
            return JSONResponse({"error": {"code": "invalid_json",
                                           "message": "the body is not JSON"}}, status_code=400)
        return await runtime.command(table_id, parse_command(payload))

    @app.put("/api/hardware/brightness", tags=["hardware"], response_model=None,
             responses={200: {"model": BrightnessResponse},
                        **_errors(400, 401, 403, 404, 413, 422, 429)},
             dependencies=referee)
    async def set_brightness(body: BrightnessRequest, request: Request) -> dict[str, Any]:
        """Dim or brighten this service's table display (night/day); 404 no_hardware when
        it drives none that can be dimmed. Not stored: the configured level comes back
        after a restart."""
        hardware = getattr(request.app.state, "hardware", None)
        try:
            if hardware is None:
                raise LookupError("no table-side hardware is configured")
            level = hardware.set_brightness(body.level)
        except LookupError as exc:
            raise NoHardware(f"cannot dim: {exc}") from None
        return {"brightness": level, "table": hardware.table}

    @app.get("/api/tables/{table_id}/events", tags=["events"], response_model=None,
             dependencies=[plain_integers("since", "limit")],
             responses={200: {"model": list[WireEvent]}, **_errors(404, 422, 429)})
    async def get_events(
        table_id: str, request: Request,
        since: Annotated[int, Query(ge=0, le=MAX_SEQ, description="events with seq > since")
                         ] = 0,
        limit: Annotated[int, Query(ge=1, description=f"at most {MAX_EVENTS_PAGE} a page "
                                      "(a larger limit gives that many)")] = MAX_EVENTS_PAGE,
    ) -> Response:
        """The table's event log from the store, in seq order; page with ``since`` = the last
        seq of the page before."""
        runtime = runtime_of(request)
        runtime.table(table_id)
        body = await asyncio.to_thread(runtime.store.events_json, table_id, since,
                                       min(limit, MAX_EVENTS_PAGE))
        return Response(body, media_type="application/json")

    @app.get("/api/archive", tags=["archive"], response_model=None,
             dependencies=[plain_integers("limit")],
             responses={200: {"model": list[ArchiveRecord]}, **_errors(422, 429)})
    async def list_archive(
        request: Request,
        table: Annotated[str | None, Query(max_length=32, description="only the archives "
                                           "of this table id")] = None,
        after: Annotated[str, Query(max_length=48, description="cursor: the last archive id "
                                    "of the page before")] = "",
        limit: Annotated[int, Query(ge=1, description=f"at most {MAX_ARCHIVE_PAGE} a page"
                                      )] = 100,
    ) -> list[dict[str, Any]]:
        """Archived tables, by archive id."""
        store = runtime_of(request).store
        records = await asyncio.to_thread(store.archived, table, after,
                                          min(limit, MAX_ARCHIVE_PAGE))
        return [r.to_dict() for r in records]

    @app.get("/api/archive/{archive_id}/events", tags=["archive"], response_model=None,
             dependencies=[plain_integers("since", "limit")],
             responses={200: {"model": list[WireEvent]}, **_errors(404, 422, 429)})
    async def get_archived_events(
        archive_id: str, request: Request,
        since: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
        limit: Annotated[int, Query(ge=1, description=f"at most {MAX_EVENTS_PAGE} a page"
                                      )] = MAX_EVENTS_PAGE,
    ) -> Response:
        """An archived table's events, as they were sent (``table`` is its live id)."""
        store = runtime_of(request).store
        if not _ARCHIVE_ID.fullmatch(archive_id) or await asyncio.to_thread(
                store.archive_record, archive_id) is None:
            raise UnknownTable(archive_id)
        body = await asyncio.to_thread(store.events_json, archive_id, since,
                                       min(limit, MAX_EVENTS_PAGE))
        return Response(body, media_type="application/json")

    @app.websocket("/ws/tables/{table_id}")
    async def table_socket(websocket: WebSocket, table_id: str) -> None:
        await WsSession(websocket, table_id, websocket.app.state.runtime, settings,
                        limits).run()

    @app.websocket("/ws/hall")
    async def hall_socket(websocket: WebSocket) -> None:
        await HallSession(websocket, websocket.app.state.runtime, settings, limits).run()

    install_reports(app)
    app.include_router(tournament_router)
    app.include_router(feeds_router)
    mount_pages(app)
    _install_openapi(app)
    return app


_ARCHIVE_ID = re.compile(ARCHIVE_ID_PATTERN)

# OpenAPI links from a created table to the routes that take its id (stateful testing).
_TABLE_LINKS = {
    name: {"operationId": operation, "parameters": {"table_id": "$response.body#/table"}}
    for name, operation in [("GetTable", "get_table_api_tables__table_id__get"),
                            ("PostCommand", "post_command_api_tables__table_id__commands_post"),
                            ("GetEvents", "get_events_api_tables__table_id__events_get"),
                            ("ArchiveTable", "archive_table_api_tables__table_id__delete")]
}


def _install_openapi(app: FastAPI) -> None:
    """FastAPI's document, plus the command body schema generated from the registry (at
    first use, so commands registered by other modules are in it)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        document = get_openapi(title=app.title, version=app.version, summary=app.summary,
                               routes=app.routes)
        schema = TypeAdapter(command_union()).json_schema(
            ref_template="#/components/schemas/{model}")
        components = document.setdefault("components", {}).setdefault("schemas", {})
        components.update(schema.pop("$defs", {}))
        schema["description"] = ("A referee command: `command` is one of the known names, "
                                 "each with its own fields.")
        components["Command"] = schema
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]


RAW_SEND = "shotclock.raw_send"


class _ShotClockApp(FastAPI):
    """FastAPI, keeping each WebSocket's server ``send`` in its scope, and answering 405
    with every method the path takes.

    Every message sent through Starlette passes through every middleware's wrapper (about
    ten async layers); a table's event fanned out to a thousand clients paid that a
    thousand times. Event frames go straight to the server's ``send`` instead; the
    handshake, errors and closes still take the usual way.
    """

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            scope[RAW_SEND] = send
        elif scope["type"] == "http":
            allowed = self._methods_of(scope)
            if allowed and scope.get("method") not in allowed:
                await self._not_allowed(scope, receive, send, allowed)
                return
        await super().__call__(scope, receive, send)

    def _methods_of(self, scope: Any) -> set[str]:
        """Every method of every route matching the path (Starlette names only the first
        route's, so GET /api/tables answered a PUT with Allow: GET, without POST)."""
        methods: set[str] = set()
        for route in self.router.routes:
            route_methods = getattr(route, "methods", None)
            if not route_methods:
                continue
            match, _ = route.matches({**scope, "method": next(iter(route_methods))})
            if match == Match.FULL:
                methods |= set(route_methods)
        return methods

    @staticmethod
    async def _not_allowed(scope: Any, receive: Any, send: Any, allowed: set[str]) -> None:
        response = JSONResponse(
            {"error": {"code": "method_not_allowed",
                       "message": f"{scope.get('method')} is not allowed here; allowed: "
                                  f"{', '.join(sorted(allowed))}"}},
            status_code=405, headers={"Allow": ", ".join(sorted(allowed))})
        await SecurityHeaders(response)(scope, receive, send)


class _Closing(Exception):
    """End a session with this close code and reason."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class _Session:
    """What the table and hall WebSockets share: the handshake's address, origin, rate and
    per-address cap checks; the bounded sender; ping/pong."""

    def __init__(self, websocket: WebSocket, runtime: Runtime, settings: Settings,
                 limits: Limits) -> None:
        self.ws = websocket
        self.runtime = runtime
        self.settings = settings
        self.limits = limits
        self.address = client_of(websocket.scope)
        self.counted = False
        self.state = "handshake"
        self.sub: Subscriber | None = None

    async def _admit(self) -> bool:
        """Refuse before the handshake completes (clients see HTTP 403): too many
        handshakes at once (everyone's), a foreign Origin, too many connections from this
        address, or over its read rate."""
        if self.limits.handshakes.take() > 0:
            return await self._refuse("too many connections at once; retry")
        if self.limits.origin_allowed(self.ws.scope) is False:
            return await self._refuse("origin not allowed")
        if self.limits.reads.enabled and self.limits.reads.take(self.address) > 0:
            return await self._refuse("too many reads from this address")
        if not self.limits.socket_opened(self.address):
            return await self._refuse("too many WebSockets from this address")
        self.counted = True
        return True

    async def _refuse(self, reason: str) -> bool:
        log.info("websocket %s from %s refused: %s", self.ws.scope.get("path"), self.address,
                 reason)
        await self.ws.close(code=CLOSE_POLICY, reason=reason)
        return False

    def _release(self) -> None:
        if self.counted:
            self.counted = False
            self.limits.socket_closed(self.address)

    async def _send_now(self, message: dict[str, Any]) -> None:
        await asyncio.wait_for(self.ws.send_text(encode(message)),
                               self.settings.ws_send_timeout_s)

    def _direct_sender(self) -> Callable[[str], Awaitable[None]]:
        raw_send = self.ws.scope.get(RAW_SEND)
        if raw_send is None:  # mounted under another app: the usual way
            return self.ws.send_text

        async def send_text(text: str) -> None:
            try:
                await raw_send({"type": "websocket.send", "text": text})
            except OSError as exc:  # as Starlette does: the client is gone
                raise WebSocketDisconnect(code=1006) from exc

        return send_text

    async def _close(self, code: int, reason: str) -> None:
        if self.ws.application_state != WebSocketState.DISCONNECTED:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.ws.close(code=code, reason=reason[:120]), 1.0)

    async def _live(self) -> None:
        sender = asyncio.create_task(self._send_loop())
        receiver = asyncio.create_task(self._receive_loop())
        done, pending = await asyncio.wait({sender, receiver}, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for task in done:
            exc = task.exception()
            if isinstance(exc, _Closing):
                await self._close(exc.code, exc.reason)
            elif exc is not None and not isinstance(exc, WebSocketDisconnect | ConnectionError):
                log.warning("%s: websocket session ended: %r", self.ws.scope.get("path"), exc)

    snapshot_seq = 0

    async def _send_loop(self) -> None:
        assert self.sub is not None
        queue = self.sub.queue
        send_text = self._direct_sender()
        while True:
            item = await queue.get()
            if item is None:  # let go by the hub: too slow, or the table was archived
                await self._close(self.sub.close_code, self.sub.dropped or "too slow")
                return
            seq, text = item
            if seq and seq <= self.snapshot_seq:
                continue  # already in the snapshot (or the replay)
            try:
                # asyncio.timeout, not wait_for: no extra task per message per client.
                async with asyncio.timeout(self.settings.ws_send_timeout_s):
                    await send_text(text)
            except TimeoutError:
                await self._close(CLOSE_TOO_SLOW, f"send timed out; reconnect with "
                                                  f"?since={max(seq - 1, 0)}")
                return

    async def _receive_loop(self) -> None:
        assert self.sub is not None
        while True:
            message = await self.ws.receive()
            if message["type"] == "websocket.disconnect":
                raise WebSocketDisconnect(message.get("code", 1000))
            messages = self.limits.messages
            if messages.enabled and messages.take(self.address) > 0:
                log.info("%s: websocket from %s closed: over %g messages a second",
                         self.ws.scope.get("path"), self.address, messages.rate)
                raise _Closing(CLOSE_POLICY, f"more than {messages.rate:g} messages a second "
                                             "from this address")
            text = message.get("text")
            if text is None:  # a binary frame: commands are JSON text, but say so politely
                text = (message.get("bytes") or b"").decode("utf-8", errors="replace")
            reply = await self._answer(text)
            self.sub.offer(0, encode(reply))

    def _read(self, text: str) -> dict[str, Any]:
        """The message as a JSON object, or an error reply (raised as _Reply)."""
        message, error = read_message(text, self.settings.max_message_bytes)
        if message is None:
            raise _Reply({"type": "error", "error": error})
        return message

    def _pong(self, message: dict[str, Any]) -> dict[str, Any]:
        return {"type": "pong", "id": message.get("id"),
                "client_time": message.get("client_time"),
                "server_time": self.runtime.time.now_ms()}

    async def _answer(self, text: str) -> dict[str, Any]:
        try:
            message = self._read(text)
        except _Reply as reply:
            return reply.message
        if message.get("type") == "ping":
            return self._pong(message)
        return {"type": "error", "id": message.get("id"), "error": {
            "code": "unknown_message", "message": "the hall feed takes only "
            "{\"type\": \"ping\"}"}}


class _Reply(Exception):
    def __init__(self, message: dict[str, Any]) -> None:
        super().__init__(message.get("type"))
        self.message = message


class WsSession(_Session):
    """One WebSocket client of a table, as a small state machine:

    handshake (origin, address limits, token) -> snapshot -> replay (``?since=N``, streamed
    from the store) -> live -> closed. A sender task drains the client's bounded queue; a
    receiver task takes commands (when the client may) and pings; when either ends the
    other is cancelled.
    """

    def __init__(self, websocket: WebSocket, table_id: str, runtime: Runtime,
                 settings: Settings, limits: Limits) -> None:
        super().__init__(websocket, runtime, settings, limits)
        self.table_id = table_id
        self.referee = False

    def _offered_token(self) -> tuple[str | None, str | None]:
        """(token, subprotocol to echo): browsers and OBS cannot set headers, so the token
        may come as a ``bearer.<token>`` subprotocol or a ``token`` query parameter."""
        for proto in self.ws.scope.get("subprotocols", []):
            if proto.startswith("bearer."):
                return proto[len("bearer."):], proto
        header = self.ws.headers.get("authorization", "")
        if header[:7].lower() == "bearer ":
            return header[7:].strip(), None
        return self.ws.query_params.get("token"), None

    def _since(self) -> int | None:
        raw = self.ws.query_params.get("since")
        if raw is None:
            return None
        if not (raw.isascii() and raw.isdigit()) or int(raw) > MAX_SEQ:
            raise InvalidInput(f"since must be a whole number in 0..{MAX_SEQ}, got {raw[:40]!r}")
        return int(raw)

    async def run(self) -> None:
        token, subprotocol = self._offered_token()
        expected = self.settings.referee_token
        if token is not None and expected is not None and not token_matches(expected, token):
            await self._refuse("wrong referee token")
            return
        if not await self._admit():
            return
        try:
            # Commands need the token when there is one. Without Origin the client is no
            # browser page (OBS, a script): read-only unless it offers the token, so a page
            # of another site can never command through a socket (its browser sends Origin).
            has_origin = self.limits.origin_allowed(self.ws.scope) is not None
            self.referee = (token is not None) if expected is not None else has_origin
            await self.ws.accept(subprotocol=subprotocol)
            await self._serve()
        finally:
            self._release()

    async def _serve(self) -> None:
        try:
            since = self._since()
            self.runtime.table(self.table_id)
        except (InvalidInput, UnknownTable) as exc:
            await self._send_now({"type": "error", "error": exc.to_dict()})
            code = CLOSE_UNKNOWN_TABLE if isinstance(exc, UnknownTable) else CLOSE_POLICY
            await self.ws.close(code=code, reason=exc.message[:120])
            return
        hub = self.runtime.hub
        self.sub = hub.subscribe(self.table_id)  # first, so nothing published is missed
        try:
            await self._snapshot_and_replay(since)
            self.state = "live"
            await self._live()
        except _Closing as closing:
            await self._close(closing.code, closing.reason)
        except (WebSocketDisconnect, ConnectionError):
            pass
        finally:
            self.state = "closed"
            hub.unsubscribe(self.sub)

    async def _snapshot_and_replay(self, since: int | None) -> None:
        self.state = "snapshot"
        seq, state = self.runtime.snapshot(self.table_id)
        self.snapshot_seq = seq
        await self._send_now({"type": "snapshot", "seq": seq, "table": self.table_id,
                              "state": state, "referee": self.referee,
                              "faults": self.runtime.health.faults(self.table_id),
                              **self.runtime.liveness(self.table_id)})
        if since is not None and since < seq:
            self.state = "replay"
            await self._replay(since, seq)

    async def _replay(self, since: int, until: int) -> None:
        """Events since..until from the store, REPLAY_BATCH at a time (read off the loop,
        sent as stored), each send under the send timeout; at most max_replays at once."""
        replays: asyncio.Semaphore = self.ws.app.state.replays
        try:
            # Half the send timeout: a replay that waits longer is cut off (1013) before the
            # one it waits for could be (4001), so a stalled holder never starves it twice.
            async with asyncio.timeout(max(0.5, self.settings.ws_send_timeout_s / 2)):
                await replays.acquire()
        except TimeoutError:
            raise _Closing(CLOSE_TRY_LATER, f"busy: too many replays at once; reconnect with "
                                            f"?since={since}") from None
        try:
            store = self.runtime.store
            send_text = self._direct_sender()
            sent = since
            reads = self.limits.reads
            while sent < until:
                # A batch costs the address a read token, as a page of events does: a
                # replay is paced to the read rate (a client catching up on 10,000 events
                # takes 2 s; one reconnecting with ?since=0 in a loop gets nowhere fast).
                wait = reads.take(self.address) if reads.enabled else 0.0
                if wait > 0:
                    await asyncio.sleep(wait)
                batch = await asyncio.to_thread(store.event_texts, self.table_id, sent, until,
                                                REPLAY_BATCH)
                if not batch:
                    break
                for seq, text in batch:
                    try:
                        async with asyncio.timeout(self.settings.ws_send_timeout_s):
                            await send_text(text)
                    except TimeoutError:
                        raise _Closing(CLOSE_TOO_SLOW, f"send timed out; reconnect with "
                                                       f"?since={sent}") from None
                    sent = seq
                assert self.sub is not None
                if self.sub.dropped is not None:  # its live queue filled meanwhile
                    raise _Closing(CLOSE_TOO_SLOW, f"too slow: reconnect with ?since={sent}")
        finally:
            replays.release()

    async def _answer(self, text: str) -> dict[str, Any]:
        try:
            message = self._read(text)
        except _Reply as reply:
            return reply.message
        msg_id = message.get("id")
        kind = message.get("type", "command" if "command" in message else None)
        if kind == "ping":
            return self._pong(message)
        if kind != "command":
            return {"type": "error", "id": msg_id, "error": {
                "code": "unknown_message", "message": f"unknown message type {kind!r}; "
                "send {\"type\": \"command\", \"command\": ...} or {\"type\": \"ping\"}"}}
        try:
            if not self.referee:
                raise NotAuthorized("commands need the referee token (subprotocol "
                                    "bearer.<token>, or ?token=) or a page of this service")
            # One bucket per address, shared with its HTTP writes and its other sockets.
            limiter = self.limits.commands
            wait = limiter.take(self.address) if limiter.enabled else 0.0
            if wait > 0:
                return {"type": "error", "id": msg_id, "status": 429, "error": {
                    "code": "rate_limited", "message": f"more than {limiter.rate:g} commands "
                    f"a second from this address; retry in {wait:.2f} s"}}
            payload = {k: v for k, v in message.items() if k != "type"}
            state = await self.runtime.command(self.table_id, parse_command(payload))
        except ShotClockError as exc:
            return {"type": "error", "id": msg_id, "status": _status(exc), "error": exc.to_dict()}
        return {"type": "ack", "id": msg_id, "state": state}


class HallSession(_Session):
    """The hall feed (``/ws/hall``): one socket for every table's card. First ``hall``
    (every live table's summary and every fault), then ``table`` when one changes or is
    created, ``removed`` when one is archived, ``status`` when the faults change; pings
    are answered. Read-only; the same limits as a table socket."""

    async def run(self) -> None:
        if not await self._admit():
            return
        try:
            await self.ws.accept()
            self.sub = self.runtime.hub.subscribe(HALL)
            try:
                await self._send_now(self.runtime.hall_message())
                self.state = "live"
                await self._live()
            except (WebSocketDisconnect, ConnectionError):
                pass
            finally:
                self.state = "closed"
                self.runtime.hub.unsubscribe(self.sub)
        finally:
            self._release()
