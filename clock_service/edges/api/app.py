"""The app: the parts the composition root built (clock_service/edges/cli/main.py), and the
routers.

``create_app`` builds nothing of the service: it is handed the runtime (a table service's
or the hall's mirror), the settings, the credentials, the other edges' routers and the
parts with a ``start``/``stop`` (devices, publishers, the camera, the tournament), starts
them with the app and stops them in reverse order, and mounts one router per resource.
Every door is checked by one guard against the access table (service/access.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from pydantic import TypeAdapter
from starlette.routing import Match

from clock_service.core.errors import ShotClockError
from clock_service.edges.api.commands import router as commands_router
from clock_service.edges.api.events import router as events_router
from clock_service.edges.api.hardware import Dimmable
from clock_service.edges.api.hardware import router as hardware_routes
from clock_service.edges.api.health import router as health_router
from clock_service.edges.api.preview import router as preview_router
from clock_service.edges.api.sockets import RAW_SEND
from clock_service.edges.api.sockets import router as sockets_router
from clock_service.edges.api.tables import router as tables_router
from clock_service.edges.api.tokens import tokens_router
from clock_service.service.auth import Authority
from clock_service.service.doors import Guard, Served, error_response, invalid_json
from clock_service.service.limits import Limits, install
from clock_service.service.live import ServedRuntime
from clock_service.service.settings import Settings
from clock_service.service.wire import command_union

__all__ = ["create_app", "Part", "SecurityHeaders", "EMBEDDABLE"]


class Part(Protocol):
    """Something that runs beside the runtime: started once the runtime has started (on
    the event loop), stopped before it stops (table-side devices, the MQTT publisher)."""

    def start(self) -> Awaitable[None]: ...

    def stop(self) -> Awaitable[None]: ...


def create_app(settings: Settings, runtime: ServedRuntime, *, authority: Authority,
               routers: Sequence[APIRouter] = (), pages: Callable[[FastAPI], None] | None = None,
               parts: Sequence[Part] = (), hardware: Dimmable | None = None,
               places: Mapping[str, str] | None = None) -> FastAPI:
    """The service's app over ``runtime``.

    ``authority``: the credentials (loaded from the store when the app starts); every door
    is checked against the access table by one guard. ``routers``: the other edges' routes,
    made by the composition root with their parts (the matches, the tournament, the feeds,
    the camera); ``pages``: mounts the pages; ``parts`` start once the runtime has started
    and stop, in reverse order, before it stops; ``hardware``: the table's display, for its
    brightness; ``places``: the tables this service's own parts serve (``display``,
    ``camera``), for the doors whose table is not in the path."""
    guard = Guard(authority, places)
    app = ShotClockApp(
        title="Shot clock",
        version="0.1.0",
        summary="Table-side shot clock for Russian billiards (rules section 12).",
        lifespan=_lifespan(runtime, settings, authority, parts),
        dependencies=[Depends(guard)],
    )
    limits = Limits(command_rate=settings.command_rate, command_burst=settings.command_burst,
                    read_rate=settings.read_rate, read_burst=settings.read_burst,
                    message_rate=settings.message_rate, message_burst=settings.message_burst,
                    handshake_rate=settings.handshake_rate,
                    handshake_burst=settings.handshake_burst,
                    max_sockets_per_address=settings.max_sockets_per_address,
                    trusted_proxies=settings.trusted_proxies,
                    allowed_origins=settings.allowed_origins)
    app.state.served = Served(runtime, settings, limits, authority,
                              asyncio.Semaphore(max(1, settings.max_replays)))
    install(app, max_body_bytes=settings.max_message_bytes, limits=limits)
    app.add_middleware(SecurityHeaders)
    app.exception_handler(ShotClockError)(_on_shotclock_error)
    app.exception_handler(RequestValidationError)(_on_validation_error)
    app.include_router(tokens_router(authority, runtime.time.now_ms))
    for router in (health_router, tables_router, commands_router, preview_router,
                   hardware_routes(hardware), events_router, sockets_router, *routers):
        app.include_router(router)
    if pages is not None:
        pages(app)
    _install_openapi(app)
    return app


def _lifespan(runtime: ServedRuntime, settings: Settings, authority: Authority,
              parts: Sequence[Part]) -> Any:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await _warm_executor()
        await runtime.start(default_table=settings.default_table)
        # The issued tokens from the store (loaded off the loop), before any part (the
        # MQTT publisher) takes a command.
        await asyncio.to_thread(authority.load)
        try:
            async with contextlib.AsyncExitStack() as started:
                for part in parts:
                    await part.start()
                    started.push_async_callback(part.stop)
                yield
        finally:
            await runtime.stop()

    return lifespan


async def _on_shotclock_error(request: Request, exc: ShotClockError) -> JSONResponse:
    return error_response(exc)


async def _on_validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return invalid_json()
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}" for e in errors
    )
    profile = all(tuple(e["loc"][:2]) == ("body", "profile") for e in errors)
    return JSONResponse(
        {"error": {"code": "invalid_profile" if profile and errors else "invalid_request",
                   "message": problems or "malformed request"}},
        status_code=422,
    )


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


# Security headers (limits what a hostile page can do with ours). Every page: scripts only
# from this service, no plugins, no <base> games. The referee console, the hall and the
# display may not be framed (clickjacking a referee's buttons); the overlay must stay
# embeddable (OBS browser source). Inline style attributes stay allowed: the pages set them.
_CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
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



class ShotClockApp(FastAPI):
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
        # The routes of the included routers too (FastAPI keeps each router as one entry).
        for route in iter_route_contexts(self.router.routes):
            route_methods = route.methods
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

