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
from clock_service.edges.api.headers import EMBEDDABLE, SecurityHeaders
from clock_service.edges.api.health import router as health_router
from clock_service.edges.api.preview import router as preview_router
from clock_service.edges.api.sockets import RAW_SEND
from clock_service.edges.api.sockets import router as sockets_router
from clock_service.edges.api.tables import router as tables_router
from clock_service.edges.api.tokens import tokens_router
from clock_service.service.auth import Authority
from clock_service.service.doors import Guard, Served, error_response, invalid_json
from clock_service.service.hosts import HostGuard, Hosts
from clock_service.service.limits import Limits, install, networks
from clock_service.service.live import ServedRuntime
from clock_service.service.settings import Settings
from clock_service.service.wire.commands import command_union

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
    # The names this service answers to (clock_service/service/hosts.py: DNS rebinding).
    hosts = Hosts.of(settings, trusted=networks(settings.trusted_proxies))
    limits = Limits(command_rate=settings.command_rate, command_burst=settings.command_burst,
                    read_rate=settings.read_rate, read_burst=settings.read_burst,
                    message_rate=settings.message_rate, message_burst=settings.message_burst,
                    handshake_rate=settings.handshake_rate,
                    handshake_burst=settings.handshake_burst,
                    max_sockets_per_address=settings.max_sockets_per_address,
                    trusted_proxies=settings.trusted_proxies,
                    allowed_origins=settings.allowed_origins, hosts=hosts)
    app.state.served = Served(runtime, settings, limits, authority,
                              asyncio.Semaphore(max(1, settings.max_replays)))
    # Outermost first: the headers (on every answer, refusals too), the host check (before
    # anything else looks at the request), the limits.
    install(app, max_body_bytes=settings.max_message_bytes, limits=limits)
    app.add_middleware(HostGuard, hosts=hosts)
    app.add_middleware(SecurityHeaders, trusted=limits.trusted)
    app.exception_handler(405)(_on_method_not_allowed)
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
    """FastAPI, keeping each WebSocket's server ``send`` in its scope, answering ``HEAD``
    wherever ``GET`` is answered, and 405 with every method the path takes.

    Every message sent through Starlette passes through every middleware's wrapper (about
    ten async layers); a table's event fanned out to a thousand clients paid that a
    thousand times. Event frames go straight to the server's ``send`` instead; the
    handshake, errors and closes still take the usual way.

    FastAPI's routes take only the methods they name: a ``HEAD`` (an uptime check) got
    405 on every page and most routes. It is served here as the ``GET`` (same status and
    headers, ``Content-Length`` included) without the body. The routes are looked at for
    a ``HEAD`` or a 405 only: matching every route cost each request 0.2 ms.
    """

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            scope[RAW_SEND] = send
        elif scope["type"] == "http" and scope.get("method") == "HEAD":
            routes = self._route_methods(scope)
            if "GET" in routes and "HEAD" not in routes:
                await super().__call__({**scope, "method": "GET"}, receive, _bodiless(send))
                return
        await super().__call__(scope, receive, send)

    def methods_of(self, scope: Any) -> set[str]:
        """Every method the path takes: of every route matching it (Starlette names only
        the first route's, so GET /api/tables answered a PUT with Allow: GET, without
        POST), and ``HEAD`` wherever ``GET``."""
        methods = self._route_methods(scope)
        return (methods | {"HEAD"}) if "GET" in methods else methods

    def _route_methods(self, scope: Any) -> set[str]:
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


def _bodiless(send: Any) -> Any:
    """``send`` for a HEAD served as a GET: the start as it is, every body part empty."""

    async def without_body(message: Any) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            message = {**message, "body": b""}
        await send(message)

    return without_body


async def _on_method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
    """405 naming in ``Allow`` every method the path takes (ShotClockApp.methods_of)."""
    app = request.app
    allowed = sorted(app.methods_of(request.scope) if isinstance(app, ShotClockApp) else ())
    if not allowed:  # a mount's 405 (/static: GET and HEAD), not a route's
        allowed = ["GET", "HEAD"]
    return JSONResponse(
        {"error": {"code": "method_not_allowed",
                   "message": f"{request.method} is not allowed here; allowed: "
                              f"{', '.join(allowed)}"}},
        status_code=405, headers={"Allow": ", ".join(allowed)})
