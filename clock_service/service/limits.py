"""Limits on what a client may send, read and hold open, all kept per client address.

Documented values (``Settings``, overridable by environment):

- ``max_message_bytes`` (``SHOTCLOCK_MAX_MESSAGE_BYTES``, default 16384): the largest HTTP
  request body and WebSocket message. A bigger HTTP body is refused with 413 before it is
  read in full; a bigger WebSocket message gets an ``error`` reply (uvicorn's
  ``ws_max_size`` closes the connection on a frame above it).
- ``command_rate`` / ``command_burst`` (``SHOTCLOCK_COMMAND_RATE``, default 20 per second;
  ``SHOTCLOCK_COMMAND_BURST``, default 60): ONE token bucket per client address for its
  HTTP writes (``POST``/``PUT``/``PATCH``/``DELETE`` under ``/api/``) and the commands of
  all its WebSockets together: more sockets or reconnecting gain nothing. A referee
  presses a few buttons a second at most; a hall of tables behind one NAT address stays
  well inside 20/s. Over it: 429 (HTTP, with ``Retry-After``) or an ``error`` reply with
  ``status`` 429 (WebSocket). ``0`` turns the rate limit off (benchmarks).
- ``read_rate`` / ``read_burst`` (``SHOTCLOCK_READ_RATE`` default 20 tokens a second,
  ``SHOTCLOCK_READ_BURST`` default 60): a second bucket per address for ``GET /api/...``,
  ``GET /feeds/...`` and WebSocket connections. A read costs one token plus one per 250
  events (or 100 tables) it may return, so a client paging through a long log at full
  size gets about four pages a second; a table's state, a broadcast feed or the health
  costs a quarter (80 a second). Over it: 429 with ``Retry-After``; a WebSocket handshake
  is refused.
- ``message_rate`` / ``message_burst`` (``SHOTCLOCK_MESSAGE_RATE`` default 50 a second,
  ``SHOTCLOCK_MESSAGE_BURST`` default 100): every WebSocket message (command, ping or junk)
  of an address, all its sockets together. Answering costs the server CPU even when the
  answer is a refusal, and a saturated loop wakes timers late: a socket over this is closed
  (1008). A page pings at most a few times a second; a referee presses a few buttons.
- ``handshake_rate`` / ``handshake_burst`` (``SHOTCLOCK_HANDSHAKE_RATE`` default 50 a
  second, ``SHOTCLOCK_HANDSHAKE_BURST`` default 25): WebSocket handshakes from everyone
  together. Each costs the loop a snapshot; a burst of them from many addresses (a reload
  of every page in the hall, or an attack) is spread out: the over-limit ones are refused
  (HTTP 403) and the pages retry with jittered backoff.
- ``max_sockets_per_address`` (``SHOTCLOCK_MAX_SOCKETS_PER_ADDRESS``, default 32): open
  WebSockets per address; the next handshake is refused (HTTP 403 before it opens).

The client address is the TCP peer, except behind a reverse proxy listed in
``SHOTCLOCK_TRUSTED_PROXIES`` (addresses or networks): then the last address in
``X-Forwarded-For`` that is not itself a trusted proxy. A forwarded header from anyone
else is ignored (uvicorn's own proxy-header handling is turned off: it believed loopback).

Origins: a command request (HTTP write) or a WebSocket handshake that carries an
``Origin`` header must come from a page of the service's own (its host one of the
service's names, clock_service/service/hosts.py, never merely the request's own ``Host``:
a DNS-rebinding page sends its own name in both; its port the one the request addressed)
or one listed in ``SHOTCLOCK_ALLOWED_ORIGINS``; any other is refused with 403
``origin_not_allowed`` (cross-site request forgery, cross-site WebSocket hijacking). A
request without ``Origin`` is not from a browser page (curl, the bridge, OBS); on the
WebSocket it is read-only unless it offers the referee token (see api/sockets.py).

Every refusal is a JSON ``{"error": {"code", "message"}}`` like the rest of the API, and so
are Starlette's own HTTP errors (404 route, 405 method, 400 unreadable body), through
:func:`install`.
"""

from __future__ import annotations

import ipaddress
import json
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

if TYPE_CHECKING:
    from clock_service.service.hosts import Hosts

__all__ = ["TokenBucket", "RateLimiter", "Limits", "LimitsMiddleware", "install", "too_deep",
           "CLIENT_KEY", "client_of"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
READ_METHODS = frozenset({"GET", "HEAD"})
# Most client addresses remembered by a limiter; the least recently seen are forgotten.
MAX_CLIENTS = 4096
# Deepest JSON nesting accepted: a command is two levels deep; Python's json recursion
# limit (about 1000) must never be what refuses a message.
MAX_JSON_DEPTH = 32
# A read costs one token plus one per this many events or tables it may return.
EVENTS_PER_TOKEN = 250
TABLES_PER_TOKEN = 100
MAX_EVENTS_PAGE = 1000  # the most events one read returns (api/events.py)
MAX_TABLES_PAGE = 200
# The scope key under which the middleware leaves the client address it decided on.
CLIENT_KEY = "shotclock.client"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` saved up; ``take`` spends some."""

    __slots__ = ("rate", "burst", "tokens", "stamp")

    def __init__(self, rate: float, burst: int, now: float | None = None) -> None:
        self.rate = float(rate)
        self.burst = float(max(burst, 1))
        self.tokens = self.burst
        self.stamp = time.monotonic() if now is None else now

    def take(self, now: float | None = None, cost: float = 1.0) -> float:
        """Spend ``cost`` tokens: 0.0 if allowed, else the seconds until they are there.
        A cost above the burst is charged as the whole burst (it is allowed when full)."""
        if self.rate <= 0:
            return 0.0
        cost = min(cost, self.burst)
        now = time.monotonic() if now is None else now
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= cost:
            self.tokens -= cost
            return 0.0
        return (cost - self.tokens) / self.rate


class RateLimiter:
    """One token bucket per key (a client address), bounded in memory."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def take(self, key: str, now: float | None = None, cost: float = 1.0) -> float:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(self.rate, self.burst, now)
            while len(self._buckets) > MAX_CLIENTS:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket.take(now, cost)


def networks(items: Iterable[str]) -> list[Network]:
    """SHOTCLOCK_TRUSTED_PROXIES as networks; a wrong item is a ValueError naming it."""
    out = []
    for item in items:
        try:
            out.append(ipaddress.ip_network(item.strip(), strict=False))
        except ValueError:
            raise ValueError(f"not an address or network: {item!r} "
                             "(SHOTCLOCK_TRUSTED_PROXIES)") from None
    return out


def _normal_origin(origin: str) -> str | None:
    """scheme://host[:port], lower case, default ports left out; None if it is not one."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    default = 443 if parts.scheme == "https" else 80
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != default else "")


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


class Limits:
    """The per-address limits and the origin and proxy policy of one service."""

    def __init__(self, *, command_rate: float, command_burst: int, read_rate: float = 0,
                 read_burst: int = 1, message_rate: float = 0, message_burst: int = 1,
                 handshake_rate: float = 0, handshake_burst: int = 1,
                 max_sockets_per_address: int = 0,
                 trusted_proxies: Iterable[str] = (), allowed_origins: Iterable[str] = (),
                 hosts: Hosts | None = None) -> None:
        self.commands = RateLimiter(command_rate, command_burst)
        self.reads = RateLimiter(read_rate, read_burst)
        self.messages = RateLimiter(message_rate, message_burst)
        self.handshakes = TokenBucket(handshake_rate, handshake_burst)  # everyone's
        self.max_sockets_per_address = max_sockets_per_address
        self.sockets: dict[str, int] = {}  # open WebSockets per client address
        self.trusted = networks(trusted_proxies)
        self.allowed_origins = {o for o in map(_normal_origin, allowed_origins) if o}
        self.any_origin = "*" in allowed_origins
        # This service's names, for the Origin check (None: only the allowed origins pass).
        self.hosts = hosts

    # -- who is asking ---------------------------------------------------------------------
    def is_trusted_proxy(self, host: str) -> bool:
        return in_networks(host, self.trusted)

    def client(self, scope: Scope) -> str:
        """The client's address: the TCP peer, or what a trusted proxy says it forwarded."""
        peer = scope.get("client")
        host = peer[0] if peer else "?"
        if not self.is_trusted_proxy(host):
            return str(host)
        forwarded = _header(scope, b"x-forwarded-for")
        if not forwarded:
            return str(host)
        # The right-most address a trusted proxy did not add is the client (the left part
        # of the list is whatever the client itself claimed).
        for hop in reversed([h.strip() for h in forwarded.split(",") if h.strip()]):
            if not self.is_trusted_proxy(hop):
                return hop
        return str(host)

    # -- where from ------------------------------------------------------------------------
    def origin_allowed(self, scope: Scope) -> bool | None:
        """True/False for a request with an Origin header; None when it has none. Allowed:
        SHOTCLOCK_ALLOWED_ORIGINS, or a page of this service's own: its host one of the
        service's names (clock_service/service/hosts.py, not the request's own ``Host``,
        which a rebinding page chooses) and its port the one the request addressed."""
        origin = _header(scope, b"origin")
        if origin is None:
            return None
        normal = _normal_origin(origin)
        if normal is None:
            return self.any_origin
        if self.any_origin or normal in self.allowed_origins:
            return True
        return self.hosts is not None and self.hosts.origin_is_own(scope, normal)

    # -- WebSockets per address -------------------------------------------------------------
    def socket_opened(self, address: str) -> bool:
        """Count a WebSocket of ``address``; False (nothing counted) when over the cap."""
        count = self.sockets.get(address, 0)
        if self.max_sockets_per_address and count >= self.max_sockets_per_address:
            return False
        self.sockets[address] = count + 1
        return True

    def socket_closed(self, address: str) -> None:
        count = self.sockets.get(address, 0) - 1
        if count > 0:
            self.sockets[address] = count
        else:
            self.sockets.pop(address, None)


def in_networks(host: str, nets: Iterable[Network]) -> bool:
    """True when ``host`` is an address inside one of ``nets`` (a name never is)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return any(address in net for net in nets)


def read_message(data: str | bytes, max_bytes: int
                 ) -> tuple[dict[str, Any], None] | tuple[None, dict[str, str]]:
    """A client's message (WebSocket text, MQTT payload) as ``(object, None)``, or
    ``(None, error)`` with the error's code and message: over ``max_bytes``, not UTF-8,
    not JSON, not an object, or nested deeper than MAX_JSON_DEPTH (checked before
    json.loads sees it). Never raises."""
    if len(data) > max_bytes:
        return None, {"code": "message_too_large",
                      "message": f"messages are limited to {max_bytes} bytes"}
    try:
        message = None if too_deep(data) else json.loads(data)
    except ValueError:  # UnicodeDecodeError included
        message = None
    if not isinstance(message, dict):
        return None, {"code": "invalid_json", "message": "a message must be a JSON object"}
    return message, None


def client_of(scope: Scope) -> str:
    """The address the limits middleware decided on (the peer if it did not run)."""
    address = scope.get(CLIENT_KEY)
    if address is None:
        peer = scope.get("client")
        address = peer[0] if peer else "?"
    return str(address)


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


def read_cost(path: str, query_string: bytes) -> float:
    """Tokens a read costs: a quarter for one small answer from memory (a table's state,
    the health), one plus one per EVENTS_PER_TOKEN events (TABLES_PER_TOKEN tables) a
    list may return."""
    if path.endswith("/events"):
        per, default = EVENTS_PER_TOKEN, MAX_EVENTS_PAGE
    elif path.rstrip("/") == "/api/tables":
        per, default = TABLES_PER_TOKEN, MAX_TABLES_PAGE
    elif path == "/api/health" or (path.startswith("/api/tables/") and path.count("/") == 3):
        return 0.25
    elif path.startswith("/feeds/"):
        return 0.25  # from memory, one body shared by every poller (broadcast/feeds.py)
    else:
        return 1.0
    try:
        values = parse_qs(query_string.decode("latin-1")).get("limit")
        limit = int(values[-1]) if values else default
    except ValueError:
        limit = default  # refused by validation anyway
    return 1.0 + max(0, min(limit, default)) // per


class LimitsMiddleware:
    """Pure ASGI: decides the client address (CLIENT_KEY), refuses a foreign Origin on
    writes (403), too many writes or reads from one address (429) and oversized or
    too-deep bodies (413/422) before the app sees them. WebSocket traffic passes through
    with its address decided; :class:`WsSession` applies the same limits per message."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int, limits: Limits) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        address = scope[CLIENT_KEY] = self.limits.client(scope)
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope.get("method", "GET")
        path = scope.get("path", "")
        if not path.startswith(("/api/", "/feeds/")):
            await self.app(scope, receive, send)
            return
        if method in WRITE_METHODS:
            if self.limits.origin_allowed(scope) is False:
                await self._reply(send, *_json_error(
                    403, "origin_not_allowed", f"requests from the page at "
                    f"{_header(scope, b'origin')!r} are not accepted here: only from this "
                    "service's own pages and SHOTCLOCK_ALLOWED_ORIGINS"))
                return
            if await self._limited(send, self.limits.commands, address, 1.0, "commands"):
                return
            await self._bounded(scope, receive, send)
            return
        if method in READ_METHODS and await self._limited(
                send, self.limits.reads, address,
                read_cost(path, scope.get("query_string", b"")), "reads"):
            return
        await self.app(scope, receive, send)

    async def _limited(self, send: Send, limiter: RateLimiter, address: str, cost: float,
                       what: str) -> bool:
        if not limiter.enabled:
            return False
        wait = limiter.take(address, cost=cost)
        if wait <= 0:
            return False
        await self._reply(send, *_json_error(
            429, "rate_limited",
            f"more than {limiter.rate:g} {what} a second from this address "
            f"(burst {limiter.burst}); retry in {wait:.2f} s",
            {"Retry-After": str(max(1, math.ceil(wait)))}))
        return True

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


def install(app: FastAPI, *, max_body_bytes: int, limits: Limits) -> None:
    """Add the limits middleware and JSON error bodies for Starlette's own HTTP errors."""
    app.add_middleware(LimitsMiddleware, max_body_bytes=max_body_bytes, limits=limits)

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {400: "bad_request", 404: "not_found", 405: "method_not_allowed",
                413: "too_large"}.get(exc.status_code, f"http_{exc.status_code}")
        return JSONResponse({"error": {"code": code, "message": str(exc.detail)}},
                            status_code=exc.status_code, headers=exc.headers)
