"""How ``shotclock serve`` runs uvicorn: connection caps, request timeouts, token-free logs.

- ``GuardedH11Protocol``: uvicorn's HTTP protocol with two guards it lacks. A connection
  over ``max_connections`` in all, or over ``max_connections_per_address`` from one peer
  (trusted proxies excepted), is closed at once, before it holds anything; and a request
  whose headers and body have not all arrived within ``request_timeout_s`` of its first
  byte (or of the connection, for the first request) is closed: a slowloris holds a
  descriptor for seconds, not forever. Idle keep-alive connections are closed after
  ``keep_alive_s`` (uvicorn's ``timeout_keep_alive``); uvicorn's ``limit_concurrency``
  answers 503 beyond ``max_connections``; WebSockets are pinged (``ws_ping_s``).
- ``TokenRedactor``: a logging filter on every handler that replaces the referee token and
  every other credential (clock_service/service/redaction.py: ``token=...`` and any
  secret-named parameter, percent-encoded or not, ``bearer.<token>``, ``Authorization:
  Bearer ...``, a URL's password) with ``***`` in every log line, uvicorn's access and
  error logs included, each line kept whole: under systemd the journal keeps what is
  logged.
- ``raise_open_files``: the soft descriptor limit raised to the hard one, so the caps,
  not the kernel, decide (the systemd unit sets ``LimitNOFILE``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

from clock_service.service.limits import Network, in_networks, networks
from clock_service.service.redaction import redact
from clock_service.service.settings import Settings

__all__ = ["GuardedH11Protocol", "GuardedWebSocketProtocol", "TokenRedactor",
           "install_redactor", "uvicorn_config", "raise_open_files", "is_loopback", "BACKLOG"]

log = logging.getLogger(__name__)

# The listen backlog, and so the most connections asyncio accepts in one go before any of
# them is looked at (it accepts up to ``backlog`` at once): kept small, so an over-cap flood
# is closed in batches instead of taking every descriptor first (EMFILE stalls accept()).
BACKLOG = 128
# The kernel's send buffer per connection. Left alone, loopback and LAN sockets grow theirs
# to megabytes: a client that never reads would absorb thousands of messages (each one
# work for the loop) before the send timeout could notice it. A quarter MB is still more
# than a second of events for any one client.
SEND_BUFFER = 256 * 1024

class TokenRedactor(logging.Filter):
    """Rewrites each record with its credentials as ``***``: the referee token wherever it
    is, and everything clock_service/service/redaction.py ``redact`` finds (``token=``
    and any secret-named parameter, percent-encoded or in any case; ``bearer.<token>``;
    ``Authorization: Bearer ...``; a URL's password).

    The record keeps its shape: each of its ``args`` is redacted in place, so a formatter
    that reads them (uvicorn's access log unpacks five) still formats the line. (Replacing
    the message and dropping the args made uvicorn's formatter fail on every request with
    a token: 93 lines of traceback for one ``GET /api/health?token=x``.) Only when a
    secret spans the args and the text between them is the message replaced whole."""

    def __init__(self, token: str | None) -> None:
        super().__init__()
        self.token = token

    def redact(self, text: str) -> str:
        return redact(text, (self.token,))

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to the handler to report
            return True
        redacted = self.redact(message)
        if redacted != message:
            self._redact_record(record, redacted)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        return True

    def _redact_record(self, record: logging.LogRecord, redacted: str) -> None:
        args = record.args
        if isinstance(args, tuple) and args:
            record.args = tuple(self._redact_arg(a) for a in args)
        elif isinstance(args, dict) and args:
            record.args = {k: self._redact_arg(v) for k, v in args.items()}
        record.msg = self.redact(str(record.msg))
        try:
            if record.getMessage() == redacted:
                return
        except Exception:  # an arg that no longer fits its %d: the whole message below
            pass
        record.msg, record.args = redacted, None

    def _redact_arg(self, arg: Any) -> Any:
        if isinstance(arg, str):
            return self.redact(arg)
        if isinstance(arg, int | float | bool) or arg is None:
            return arg
        text = str(arg)
        shown = self.redact(text)
        return arg if shown == text else shown


LOGGERS = ("", "uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")


def install_redactor(token: str | None) -> TokenRedactor:
    """Put the redactor on every handler of the root and uvicorn loggers (a filter on a
    handler sees every record it writes, whichever logger it came from)."""
    redactor = TokenRedactor(token)
    for name in LOGGERS:
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(f, TokenRedactor) for f in handler.filters):
                handler.addFilter(redactor)
    return redactor


def is_loopback(host: str) -> bool:
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, with connection caps and a request timeout (see above).
    Configured through class attributes (``configure``): uvicorn builds one per
    connection with its own arguments."""

    max_connections = 1000
    max_per_address = 64
    request_timeout_s = 5.0
    trusted: tuple[Network, ...] = ()
    refused = 0  # connections closed by a cap (for the benchmark)

    @classmethod
    def configure(cls, settings: Settings) -> type[GuardedH11Protocol]:
        return type("GuardedH11Protocol", (cls,), {
            "per_address": {},
            "max_connections": settings.max_connections,
            "max_per_address": settings.max_connections_per_address,
            "request_timeout_s": settings.request_timeout_s,
            "trusted": tuple(networks(settings.trusted_proxies)),
        })

    _request_timer: asyncio.TimerHandle | None = None
    _counted: str | None = None  # the peer address counted in per_address
    # HTTP connections open per peer address, for this server (one dict per configure()).
    per_address: dict[str, int] = {}

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        reason = self._over_cap()
        if reason is not None:
            cls = type(self)
            cls.refused += 1
            if cls.refused % 100 == 1:  # a flood: say it, but not 10,000 times
                log.warning("connection from %s refused: %s (%d so far)",
                            self.client[0] if self.client else "?", reason, cls.refused)
            transport.abort()
            return
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        self._arm()

    def _over_cap(self) -> str | None:
        if len(self.connections) > self.max_connections:
            return f"over {self.max_connections} connections"
        host = self.client[0] if self.client else None
        if host is None or not self.max_per_address or in_networks(host, self.trusted):
            return None
        count = self.per_address.get(host, 0)
        if count >= self.max_per_address:
            return f"over {self.max_per_address} connections from one address"
        self.per_address[host] = count + 1
        self._counted = host
        return None

    def _uncount(self) -> None:
        """After a close, or an upgrade to a WebSocket (those are capped per address by the
        app: SHOTCLOCK_MAX_SOCKETS_PER_ADDRESS)."""
        host, self._counted = self._counted, None
        if host is not None:
            left = self.per_address.get(host, 1) - 1
            if left > 0:
                self.per_address[host] = left
            else:
                self.per_address.pop(host, None)

    def _arm(self) -> None:
        if self._request_timer is None and self.request_timeout_s > 0:
            self._request_timer = self.loop.call_later(self.request_timeout_s,
                                                       self._request_too_slow)

    def _disarm(self) -> None:
        if self._request_timer is not None:
            self._request_timer.cancel()
            self._request_timer = None

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.transport.get_protocol() is not self:  # upgraded to a WebSocket
            self._disarm()
            self._uncount()
        elif self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
            self._arm()  # a request is arriving: it has request_timeout_s from its first byte
        else:
            self._disarm()  # it has all arrived; the app has it

    def _request_too_slow(self) -> None:
        self._request_timer = None
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            return
        # Still reading its headers, or a body the app is waiting for: too slow.
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._uncount()
        super().connection_lost(exc)


class GuardedWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol, for clients that stop reading.

    Its close waits, like every send, until the transport's buffer drains, and when the app
    is done it closes the transport gracefully, which also waits for the buffer to drain:
    a client that never reads kept its connection, its buffers and a descriptor forever.
    Here a close frame is queued behind what is buffered without waiting (one small frame,
    so a client that reads again gets the 4001 and its ``?since=``), and a connection still
    open ``LINGER_S`` after the app is done is aborted.
    """

    LINGER_S = 5.0

    async def send(self, message: Any) -> None:
        if message.get("type") == "websocket.close":
            self.writable.set()  # the close frame goes behind the buffer, without waiting
        await super().send(message)

    async def run_asgi(self) -> None:
        await super().run_asgi()
        self.loop.call_later(self.LINGER_S, self._abort_if_open)

    def _abort_if_open(self) -> None:
        if not self.disconnected:
            self.transport.abort()


def raise_open_files() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit; return (soft, hard) after."""
    try:
        import resource
    except ImportError:  # not POSIX
        return (-1, -1)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft, hard


def uvicorn_config(app: Any, settings: Settings, *, log_level: str, access_log: bool) -> Any:
    """The uvicorn configuration of ``shotclock serve``."""
    import uvicorn

    return uvicorn.Config(
        app, host=settings.host, port=settings.port, log_level=log_level,
        access_log=access_log, lifespan="on",
        http=GuardedH11Protocol.configure(settings), ws=GuardedWebSocketProtocol,
        ws_max_size=settings.max_message_bytes,
        ws_ping_interval=settings.ws_ping_s, ws_ping_timeout=settings.ws_ping_s,
        # No permessage-deflate: compressing every event for every client cost more CPU
        # than the JSON encoding (py-spy); the hall's network does not need it.
        ws_per_message_deflate=False,
        limit_concurrency=settings.max_connections + 16,  # our cap closes first
        timeout_keep_alive=max(1, int(settings.keep_alive_s)),
        # Forwarded headers are decided by limits.Limits (trusted proxies only); uvicorn's
        # own handling believed any loopback peer.
        proxy_headers=False, server_header=False,
        h11_max_incomplete_event_size=16 * 1024, backlog=BACKLOG,
        # HTTPS (and wss://) when a certificate is given (shotclock tls init), with the
        # hall's TLS policy (tls.server_context: no CBC suite, X25519 and P-256 only).
        ssl_certfile=settings.tls_cert, ssl_keyfile=settings.tls_key,
        ssl_context_factory=_tls_context if settings.tls_cert else None,
    )


def _tls_context(config: Any, _default: Any) -> Any:
    from clock_service.service.tls import server_context

    return server_context(config.ssl_certfile, config.ssl_keyfile)
