"""Limits on what a client may send: body size and command rate.

Documented values (``Settings``, overridable by environment):

- ``max_message_bytes`` (``SHOTCLOCK_MAX_MESSAGE_BYTES``, default 16384): the largest HTTP
  request body and WebSocket message. A bigger HTTP body is refused with 413 before it is
  read in full; a bigger WebSocket message gets an ``error`` reply (uvicorn's
  ``ws_max_size`` closes the connection on a frame above it).
- ``command_rate`` / ``command_burst`` (``SHOTCLOCK_COMMAND_RATE``, default 20 per second;
  ``SHOTCLOCK_COMMAND_BURST``, default 60): a token bucket per client address for HTTP
  writes (``POST``/``PUT``/``PATCH``/``DELETE`` under ``/api/``) and one per WebSocket
  connection for command messages. A referee presses a few buttons a second at most; a
  hall of tables behind one NAT address stays well inside 20/s. Over it: 429 (HTTP, with
  ``Retry-After``) or an ``error`` reply with ``status`` 429 (WebSocket). ``0`` turns the
  rate limit off (benchmarks).

Every refusal is a JSON ``{"error": {"code", "message"}}`` like the rest of the API, and so
are Starlette's own HTTP errors (404 route, 405 method, 400 unreadable body), through
:func:`install`.
"""

from __future__ import annotations

import json
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

__all__ = ["TokenBucket", "RateLimiter", "LimitsMiddleware", "install", "too_deep"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Most client addresses remembered by the limiter; the least recently seen are forgotten.
MAX_CLIENTS = 4096
# Deepest JSON nesting accepted: a command is two levels deep; Python's json recursion
# limit (about 1000) must never be what refuses a message.
MAX_JSON_DEPTH = 32


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` saved up; ``take`` spends one."""

    __slots__ = ("rate", "burst", "tokens", "stamp")

    def __init__(self, rate: float, burst: int, now: float | None = None) -> None:
        self.rate = float(rate)
        self.burst = float(max(burst, 1))
        self.tokens = self.burst
        self.stamp = time.monotonic() if now is None else now

    def take(self, now: float | None = None) -> float:
        """Spend a token: 0.0 if allowed, else the seconds until one is available."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate


class RateLimiter:
    """One token bucket per key (a client address), bounded in memory."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def take(self, key: str, now: float | None = None) -> float:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(self.rate, self.burst, now)
            while len(self._buckets) > MAX_CLIENTS:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket.take(now)


def too_deep(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when brackets nest deeper than ``limit`` (strings are skipped). Cheap enough
    for a 16 KiB message, and it keeps a hostile ``[[[[...`` from reaching json.loads."""
    data = text.encode() if isinstance(text, str) else text
    depth = 0
    in_string = False
    escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return False


def _json_error(status: int, code: str, message: str,
                headers: dict[str, str] | None = None) -> tuple[int, list[tuple[bytes, bytes]],
                                                                 bytes]:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    return status, raw, body


class LimitsMiddleware:
    """Pure ASGI: refuses oversized or too-deep HTTP bodies (413/422) and too many writes
    from one address (429) before the app sees them. WebSocket traffic passes through;
    :class:`WsSession` applies the same limits per message."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int, limiter: RateLimiter) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope.get("method", "GET")
        if method in WRITE_METHODS and scope.get("path", "").startswith("/api/"):
            if self.limiter.enabled:
                client = scope.get("client")
                wait = self.limiter.take(client[0] if client else "?")
                if wait > 0:
                    await self._reply(send, *_json_error(
                        429, "rate_limited",
                        f"more than {self.limiter.rate:g} commands a second from this address "
                        f"(burst {self.limiter.burst}); retry in {wait:.2f} s",
                        {"Retry-After": str(max(1, math.ceil(wait)))}))
                    return
            await self._bounded(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _bounded(self, scope: Scope, receive: Receive, send: Send) -> None:
        limit = self.max_body_bytes
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared > limit:
                    await self._too_large(send)
                    return
        # Read the body here, bounded, then hand it to the app in one piece.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await self._too_large(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if too_deep(body):
            await self._reply(send, *_json_error(
                422, "too_deep", f"JSON nested deeper than {MAX_JSON_DEPTH} levels"))
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, send: Send) -> None:
        await self._reply(send, *_json_error(
            413, "too_large", f"request bodies are limited to {self.max_body_bytes} bytes"))

    @staticmethod
    async def _reply(send: Send, status: int, headers: list[tuple[bytes, bytes]],
                     body: bytes) -> None:
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def install(app: FastAPI, *, max_body_bytes: int, command_rate: float,
            command_burst: int) -> None:
    """Add the limits middleware and JSON error bodies for Starlette's own HTTP errors."""
    app.add_middleware(LimitsMiddleware, max_body_bytes=max_body_bytes,
                       limiter=RateLimiter(command_rate, command_burst))

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {400: "bad_request", 404: "not_found", 405: "method_not_allowed",
                413: "too_large"}.get(exc.status_code, f"http_{exc.status_code}")
        return JSONResponse({"error": {"code": code, "message": str(exc.detail)}},
                            status_code=exc.status_code, headers=exc.headers)
