"""The HTTP and WebSocket API: an app factory with a lifespan around the runtime."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import Depends, FastAPI, Query, Request, WebSocket
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.websockets import WebSocketDisconnect, WebSocketState

from clock_service.commands import parse_command
from clock_service.errors import (
    InvalidInput,
    NoHardware,
    NotAuthorized,
    RuleRefusal,
    ShotClockError,
    StoreError,
    TableExists,
    UnknownTable,
)
from clock_service.hub import CLOSE_TOO_SLOW, Hub, Subscriber, encode
from clock_service.limits import TokenBucket, install, too_deep
from clock_service.reports.routes import install_reports
from clock_service.reports.service import UnknownMatch
from clock_service.runtime import Runtime
from clock_service.schemas import (
    BrightnessRequest,
    BrightnessResponse,
    CommandRequest,
    CreateTable,
    ErrorResponse,
    HealthResponse,
    TableState,
    WireEvent,
)
from clock_service.settings import Settings
from clock_service.store import Store
from clock_service.timesource import RealTime, TimeSource
from web_ui import mount_pages

__all__ = ["create_app"]

log = logging.getLogger(__name__)

STATUS = {RuleRefusal: 409, InvalidInput: 422, UnknownTable: 404, UnknownMatch: 404,
          TableExists: 409,
          NotAuthorized: 401, StoreError: 503, NoHardware: 404}
ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse} for code in (401, 404, 409, 422, 503)
}
CLOSE_POLICY = 1008
CLOSE_UNKNOWN_TABLE = 4404


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


# Makes the runtime the API serves: ``shotclock hall`` gives a mirror of a hall's tables
# (clock_service/mqtt/hall.py), which answers the same methods.
RuntimeFactory = Callable[[Settings, TimeSource], Runtime]


def create_app(settings: Settings | None = None, *, time: TimeSource | None = None,
               runtime_factory: RuntimeFactory | None = None) -> FastAPI:
    settings = settings or Settings.from_env()
    time = time or RealTime()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if runtime_factory is None:
            runtime = Runtime(Store(settings.db), time, Hub(settings.ws_queue))
        else:
            runtime = runtime_factory(settings, time)
        app.state.runtime = runtime
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
    install(app, max_body_bytes=settings.max_message_bytes,
            command_rate=settings.command_rate, command_burst=settings.command_burst)

    @app.exception_handler(ShotClockError)
    async def on_shotclock_error(request: Request, exc: ShotClockError) -> JSONResponse:
        return _error(exc)

    @app.exception_handler(RequestValidationError)
    async def on_validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}" for e in exc.errors()
        )
        return JSONResponse(
            {"error": {"code": "invalid_request", "message": problems or "malformed request"}},
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

    @app.get("/api/health", tags=["service"], response_model=None,
             responses={200: {"model": HealthResponse}})
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
             responses={200: {"model": list[TableState]}})
    async def list_tables(request: Request) -> list[dict[str, Any]]:
        runtime = runtime_of(request)
        return [runtime.state(table_id) for table_id in runtime.tables]

    @app.post("/api/tables", tags=["tables"], status_code=201, response_model=None,
              responses={201: {"model": TableState}, **ERRORS},
              dependencies=[Depends(require_referee)])
    async def create_table(body: CreateTable, request: Request) -> dict[str, Any]:
        return await runtime_of(request).create_table(
            body.id, body.players, timer=body.timer, profile=body.profile,
            first_breaker=body.first_breaker, race_to=body.race_to,
            event=body.event, referee=body.referee,
        )

    @app.get("/api/tables/{table_id}", tags=["tables"], response_model=None,
             responses={200: {"model": TableState}, **ERRORS})
    async def get_table(table_id: str, request: Request) -> dict[str, Any]:
        return runtime_of(request).state(table_id)

    @app.post("/api/tables/{table_id}/commands", tags=["commands"], response_model=None,
              responses={200: {"model": TableState}, **ERRORS},
              dependencies=[Depends(require_referee)])
    async def post_command(table_id: str, body: CommandRequest, request: Request) -> dict[str, Any]:
        runtime = runtime_of(request)
        runtime.table(table_id)  # 404 before 422: an unknown table is the bigger mistake
        return await runtime.command(table_id, parse_command(body.model_dump()))

    @app.put("/api/hardware/brightness", tags=["hardware"], response_model=None,
             responses={200: {"model": BrightnessResponse}, **ERRORS},
             dependencies=[Depends(require_referee)])
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
             responses={200: {"model": list[WireEvent]}, **ERRORS})
    async def get_events(
        table_id: str, request: Request,
        since: int = Query(0, ge=0, description="return events with seq > since"),
        limit: int = Query(1000, ge=1, le=10_000),
    ) -> list[dict[str, Any]]:
        """The table's event log from the store, in seq order (paginate with since)."""
        return await runtime_of(request).events_since(table_id, since, limit=limit)

    @app.websocket("/ws/tables/{table_id}")
    async def table_socket(websocket: WebSocket, table_id: str) -> None:
        await WsSession(websocket, table_id, websocket.app.state.runtime, settings).run()

    install_reports(app)
    mount_pages(app)
    return app


RAW_SEND = "shotclock.raw_send"


class _ShotClockApp(FastAPI):
    """FastAPI, keeping each WebSocket's server ``send`` in its scope.

    Every message sent through Starlette passes through every middleware's wrapper (about
    ten async layers); a table's event fanned out to a thousand clients paid that a
    thousand times. Event frames go straight to the server's ``send`` instead; the
    handshake, errors and closes still take the usual way.
    """

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            scope[RAW_SEND] = send
        await super().__call__(scope, receive, send)


class WsSession:
    """One WebSocket client of a table, as a small state machine:

    handshake (token check) -> snapshot -> replay (``?since=N``, from the store) -> live
    -> closed. A sender task drains the client's bounded queue; a receiver task takes
    commands (when the client holds the referee token) and pings; when either ends the
    other is cancelled.
    """

    def __init__(self, websocket: WebSocket, table_id: str, runtime: Runtime,
                 settings: Settings) -> None:
        self.ws = websocket
        self.table_id = table_id
        self.runtime = runtime
        self.settings = settings
        self.state = "handshake"
        self.referee = False
        self.sub: Subscriber | None = None
        self.commands = TokenBucket(settings.command_rate, settings.command_burst)

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
        if not raw.isdigit():
            raise InvalidInput(f"since must be a whole number >= 0, got {raw!r}")
        return int(raw)

    async def run(self) -> None:
        token, subprotocol = self._offered_token()
        expected = self.settings.referee_token
        if token is not None and expected is not None and not token_matches(expected, token):
            await self.ws.close(code=CLOSE_POLICY, reason="wrong referee token")
            return
        self.referee = expected is None or token is not None
        await self.ws.accept(subprotocol=subprotocol)
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
        except (WebSocketDisconnect, ConnectionError):
            pass
        finally:
            self.state = "closed"
            hub.unsubscribe(self.sub)

    async def _send_now(self, message: dict[str, Any]) -> None:
        await asyncio.wait_for(self.ws.send_text(encode(message)),
                               self.settings.ws_send_timeout_s)

    async def _snapshot_and_replay(self, since: int | None) -> None:
        self.state = "snapshot"
        seq, state = self.runtime.snapshot(self.table_id)
        self.snapshot_seq = seq
        await self._send_now({"type": "snapshot", "seq": seq, "table": self.table_id,
                              "state": state, "referee": self.referee,
                              "faults": self.runtime.health.faults(self.table_id)})
        if since is not None and since < seq:
            self.state = "replay"
            for event in await self.runtime.events_since(self.table_id, since, until=seq):
                await self.ws.send_text(encode(event))

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
            if exc is not None and not isinstance(exc, WebSocketDisconnect | ConnectionError):
                log.warning("table %s: websocket session ended: %r", self.table_id, exc)

    async def _send_loop(self) -> None:
        assert self.sub is not None
        queue = self.sub.queue
        send_text = self._direct_sender()
        while True:
            item = await queue.get()
            if item is None:  # cut off by the hub: too slow
                await self._close(CLOSE_TOO_SLOW, self.sub.dropped or "too slow")
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

    async def _receive_loop(self) -> None:
        assert self.sub is not None
        while True:
            message = await self.ws.receive()
            if message["type"] == "websocket.disconnect":
                raise WebSocketDisconnect(message.get("code", 1000))
            text = message.get("text")
            if text is None:  # a binary frame: commands are JSON text, but say so politely
                text = (message.get("bytes") or b"").decode("utf-8", errors="replace")
            reply = await self._answer(text)
            self.sub.offer(0, encode(reply))

    async def _answer(self, text: str) -> dict[str, Any]:
        if len(text) > self.settings.max_message_bytes:
            return {"type": "error", "error": {
                "code": "message_too_large",
                "message": f"messages are limited to {self.settings.max_message_bytes} bytes"}}
        try:
            if too_deep(text):
                raise ValueError("nested too deep")
            message = json.loads(text)
        except ValueError:
            return {"type": "error", "error": {"code": "invalid_json",
                                               "message": "a message must be a JSON object"}}
        if not isinstance(message, dict):
            return {"type": "error", "error": {"code": "invalid_json",
                                               "message": "a message must be a JSON object"}}
        msg_id = message.get("id")
        kind = message.get("type", "command" if "command" in message else None)
        if kind == "ping":
            return {"type": "pong", "id": msg_id, "client_time": message.get("client_time"),
                    "server_time": self.runtime.time.now_ms()}
        if kind != "command":
            return {"type": "error", "id": msg_id, "error": {
                "code": "unknown_message", "message": f"unknown message type {kind!r}; "
                "send {\"type\": \"command\", \"command\": ...} or {\"type\": \"ping\"}"}}
        try:
            if not self.referee:
                raise NotAuthorized("commands need the referee token (subprotocol "
                                    "bearer.<token> or ?token=)")
            wait = self.commands.take()
            if wait > 0:
                return {"type": "error", "id": msg_id, "status": 429, "error": {
                    "code": "rate_limited", "message": f"more than {self.commands.rate:g} "
                    f"commands a second on this connection; retry in {wait:.2f} s"}}
            payload = {k: v for k, v in message.items() if k != "type"}
            state = await self.runtime.command(self.table_id, parse_command(payload))
        except ShotClockError as exc:
            return {"type": "error", "id": msg_id, "status": _status(exc), "error": exc.to_dict()}
        return {"type": "ack", "id": msg_id, "state": state}
