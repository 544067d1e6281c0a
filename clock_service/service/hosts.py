"""The names this service answers to (issue 35, build point 4: DNS rebinding).

A page on a rebinding domain (``evil.test`` answering first with its own address, then
with 127.0.0.1 or the Pi's) is, to the browser, the same origin as the service: it may
read the answers and send commands. What it cannot change is the name the browser puts in
``Host``: its own. So a request is served only when its ``Host`` is one of this service's
names or addresses (:class:`Hosts`):

- ``localhost`` (and ``ip6-localhost``), the machine's hostname and ``<hostname>.local``;
- every loopback address; the address the service listens on (for ``0.0.0.0`` or ``::``
  every address of the machine's interfaces, read again, at most every 10 s, when an
  unknown address is asked for: DHCP moves them); the address the connection arrived at;
- ``SHOTCLOCK_ALLOWED_HOSTS``: more names or addresses, ``*.example.org`` for the
  subdomains of one, ``*`` for any (the check off).

The port in ``Host`` is not compared: a rebinding page has its own name whatever the
port, and a port forward (80 to 8000) or a proxy changes the port the browser names.

Behind a reverse proxy listed in ``SHOTCLOCK_TRUSTED_PROXIES`` every name of its
``X-Forwarded-Host`` must be one of them too (a proxy that rewrites ``Host`` to its
upstream passes the browser's name there; one that appends to a client's header does not
let the client's own entry through). Anyone else's ``X-Forwarded-Host`` is ignored.

:class:`HostGuard` (pure ASGI, outside the limits) refuses any other request before a
handler runs: HTTP ``421 host_not_allowed`` with the API's JSON error body; a WebSocket
handshake the same 421 (ASGI's ``websocket.http.response``; servers without it answer
403), never accepted. A request without ``Host`` (HTTP/1.0, never a browser) passes.

The Origin check of commands and WebSocket handshakes
(clock_service/service/limits.py ``Limits.origin_allowed``) asks :meth:`Hosts.origin_is_own`:
the Origin's host must be one of these names and its port the one the request was
addressed to; the request's own ``Host`` alone proves nothing.

An in-process test client (Starlette's TestClient, httpx's ASGITransport) reports the
name it used as the address the request arrived at, so it passes as a real client
reaching the service by its address does. See docs/policy.md, "Hosts".
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import socket
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from clock_service.service.limits import ASGIApp, Network, Receive, Scope, Send, in_networks

__all__ = ["Hosts", "HostGuard", "split_host", "local_addresses", "REFUSED_STATUS"]

log = logging.getLogger(__name__)

REFUSED_STATUS = 421  # Misdirected Request: this server does not answer to that name
LOOPBACK_NAMES = ("localhost", "ip6-localhost", "ip6-loopback")
# Seconds between two readings of the interfaces' addresses (on an unknown address only).
REFRESH_S = 10.0
# Host header values remembered as allowed (so the next request with it costs one set
# lookup); past this many, the others are checked each time (names x ports is unbounded).
REMEMBERED = 256
# Refused names logged one by one; past this many, or for a name logged already, a count
# at most once every SUMMARY_S (a flood must not flood the journal).
LOGGED_NAMES = 64
SUMMARY_S = 60.0


def split_host(value: str) -> tuple[str, int | None] | None:
    """A ``Host`` value's name (lower case, without a trailing dot, an IPv6 address without
    its brackets) and its port (None: none given); None when it is not one."""
    value = value.strip()
    if value.startswith("["):
        name, closed, rest = value[1:].partition("]")
        if not closed or (rest and not rest.startswith(":")):
            return None
        port = rest[1:]
    elif value.count(":") == 1:
        name, _, port = value.partition(":")
    else:  # no port, or an IPv6 address without brackets (not valid, but unambiguous)
        name, port = value, ""
    if port and not (port.isascii() and port.isdigit() and len(port) <= 5):
        return None
    name = name.rstrip(".").lower()
    if not name:
        return None
    return name, int(port) if port else None


def _address(name: str) -> str | None:
    """``name`` as an address in its usual text (IPv4 inside IPv6 as IPv4), or None when
    it is a name."""
    if not name or not (name[0].isdigit() or ":" in name):
        return None
    try:
        address = ipaddress.ip_address(name.partition("%")[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


def local_addresses() -> set[str]:
    """The addresses of this machine's interfaces (Linux: each interface's IPv4 address,
    every IPv6 one); empty where they cannot be read."""
    found: set[str] = set()
    with contextlib.suppress(OSError, ImportError):
        import fcntl
        import struct

        siocgifaddr = 0x8915
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            for _, name in socket.if_nameindex():
                with contextlib.suppress(OSError):
                    answer = fcntl.ioctl(probe.fileno(), siocgifaddr,
                                         struct.pack("256s", name.encode()[:15]))
                    found.add(socket.inet_ntoa(answer[20:24]))
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/if_inet6").read_text().splitlines():
            raw = line.split()[0]
            if len(raw) == 32:
                found.add(str(ipaddress.IPv6Address(bytes.fromhex(raw))))
    return found


class Hosts:
    """This service's names and addresses (see the module's doc)."""

    def __init__(self, *, listen: Iterable[str] = ("127.0.0.1",), allowed: Iterable[str] = (),
                 trusted: Iterable[Network] = (), hostname: str | None = None,
                 interfaces: Callable[[], Iterable[str]] = local_addresses,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.any = False  # SHOTCLOCK_ALLOWED_HOSTS=*
        self.names: set[str] = set(LOOPBACK_NAMES)
        self.addresses: set[str] = set()
        self.suffixes: list[str] = []  # ".example.org" for *.example.org
        self.everywhere = False  # listening on 0.0.0.0 or ::
        self.trusted = tuple(trusted)
        self._interfaces = interfaces
        self._clock = clock
        machine = (socket.gethostname() if hostname is None else hostname).lower().rstrip(".")
        for name in {machine, machine.split(".")[0]} - {""}:
            self.names |= {name, f"{name}.local"}
        for item in listen:
            self._add(item, listening=True)
        for item in allowed:
            self._add(item, listening=False)
        self._refreshed = -REFRESH_S
        if self.everywhere:
            self._refresh()

    @classmethod
    def of(cls, settings: Any, trusted: Iterable[Network] = ()) -> Hosts:
        """The names of the service ``settings`` (host, allowed_hosts) describe."""
        return cls(listen=[settings.host], allowed=settings.allowed_hosts, trusted=trusted)

    def _add(self, item: str, *, listening: bool) -> None:
        """A name or address to answer to; one of SHOTCLOCK_ALLOWED_HOSTS that is neither
        is a ValueError naming it (the service does not start on a typo)."""
        text = item.strip().lower()
        if text == "*" and not listening:
            self.any = True
            return
        if text.startswith("*.") and not listening and split_host(text[2:]) is not None:
            self.suffixes.append("." + text[2:].rstrip("."))
            return
        parsed = split_host(text)
        if parsed is None or any(c in parsed[0] for c in "*/@") or (
                ":" in parsed[0] and _address(parsed[0]) is None):
            if listening:
                return  # uvicorn says what is wrong with the address to listen on
            raise ValueError(f"not a host name or address: {item!r} (SHOTCLOCK_ALLOWED_HOSTS; "
                             "a name, an address, *.example.org or *)")
        name = parsed[0]
        address = _address(name)
        if address is None:
            self.names.add(name)
        elif listening and ipaddress.ip_address(address).is_unspecified:
            self.everywhere = True
        else:
            self.addresses.add(address)

    def _refresh(self) -> None:
        self._refreshed = self._clock()
        self.addresses |= {a for a in map(_address, self._interfaces()) if a}

    def describe(self) -> list[str]:
        """The names and addresses, for the start banner and the docs."""
        if self.any:
            return ["*"]
        return (sorted(self.names) + [f"*{s}" for s in self.suffixes]
                + sorted(self.addresses) + (["every interface"] if self.everywhere else []))

    # -- the checks --------------------------------------------------------------------------
    def is_own(self, name: str, arrived_at: str | None = None) -> bool:
        """Whether ``name`` (as :func:`split_host` gives it) is one of ours; ``arrived_at``:
        the address the request's connection arrived at (ASGI's ``server``)."""
        if self.any or name in self.names or name in self.addresses:
            return True
        if self.suffixes and name.endswith(tuple(self.suffixes)):
            return True
        address = _address(name)
        if address is None:
            return name == arrived_at  # an in-process client's name for the server
        if address in self.addresses or ipaddress.ip_address(address).is_loopback:
            return True
        if arrived_at is not None and _address(arrived_at) == address:
            # A connection arrived at it: an address of this machine, for good (where the
            # interfaces cannot be read, the next request by it is one set lookup).
            self.addresses.add(address)
            return True
        if self.everywhere and self._clock() - self._refreshed >= REFRESH_S:
            self._refresh()
            return address in self.addresses
        return False

    def forwarded_by_proxy(self, scope: Scope) -> bool:
        peer = scope.get("client")
        return bool(self.trusted) and peer is not None and in_networks(peer[0], self.trusted)

    def addressed(self, scope: Scope) -> tuple[str, int | None] | None:
        """The name and port the client addressed: a trusted proxy's first
        ``X-Forwarded-Host``, else ``Host``; None without either (or a malformed one)."""
        host = forwarded = None
        for key, value in scope.get("headers", ()):
            if key == b"host":
                host = value
            elif key == b"x-forwarded-host" and forwarded is None:
                forwarded = value
        if forwarded is not None and self.forwarded_by_proxy(scope):
            host = forwarded.split(b",")[0]
        return None if host is None else split_host(bytes(host).decode("latin-1"))

    def origin_is_own(self, scope: Scope, origin: str) -> bool:
        """Whether a page at ``origin`` (``scheme://host[:port]``) is one of this
        service's own: its host one of our names (with ``*``: the one the request
        addressed), its port the one the request addressed (either left out: the scheme's
        default)."""
        scheme, _, rest = origin.partition("://")
        parsed = split_host(rest)
        addressed = self.addressed(scope)
        if parsed is None or addressed is None:
            return False
        name, port = parsed
        server = scope.get("server")
        own = name == addressed[0] if self.any else self.is_own(
            name, str(server[0]) if server else None)
        default = 443 if scheme == "https" else 80
        return own and (port or default) == (addressed[1] or default)


class HostGuard:
    """Pure ASGI: refuses an HTTP request or WebSocket handshake whose ``Host`` (or a
    trusted proxy's ``X-Forwarded-Host``) is not one of :class:`Hosts` (see the module's
    doc). Allowed ``Host`` values are remembered: the usual request costs a header scan
    and one set lookup."""

    def __init__(self, app: ASGIApp, *, hosts: Hosts) -> None:
        self.app = app
        self.hosts = hosts
        self._allowed: set[bytes] = set()
        self._logged: set[str] = set()
        self.refused = 0
        self._summarised = (0, time.monotonic())  # (refused, when) at the last count logged

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            refused = self.refused_name(scope)
            if refused is not None:
                await self._refuse(scope, send, refused)
                return
        await self.app(scope, receive, send)

    def refused_name(self, scope: Scope) -> str | None:
        """The name a request is refused for, or None when it may pass."""
        hosts = self.hosts
        proxied = bool(hosts.trusted) and hosts.forwarded_by_proxy(scope)
        names: list[bytes] = []  # every Host (a second one must not slip past)
        for key, value in scope.get("headers", ()):
            if key == b"host":
                names.append(value)
            elif key == b"x-forwarded-host" and proxied:
                names.extend(value.split(b","))
        for value in names:
            if value not in self._allowed and not self._allows(scope, value):
                return bytes(value).decode("latin-1").strip()
        return None

    def _allows(self, scope: Scope, value: bytes) -> bool:
        parsed = split_host(bytes(value).decode("latin-1"))
        if parsed is None:
            return False
        name = parsed[0]
        server = scope.get("server")
        arrived_at = str(server[0]) if server else None
        if not self.hosts.is_own(name, arrived_at):
            return False
        # Remembered, unless only an in-process client's own name for the server.
        if (name != arrived_at or name in self.hosts.addresses) and \
                len(self._allowed) < REMEMBERED:
            self._allowed.add(bytes(value))
        return True

    async def _refuse(self, scope: Scope, send: Send, name: str) -> None:
        self.refused += 1
        shown = name[:100]
        peer = scope.get("client")
        if len(self._logged) < LOGGED_NAMES and shown not in self._logged:
            self._logged.add(shown)
            log.warning("refused a request for %r from %s: not one of this service's names "
                        "(if it is, add it to SHOTCLOCK_ALLOWED_HOSTS; docs/policy.md, Hosts)",
                        shown, peer[0] if peer else "?")
        elif time.monotonic() - self._summarised[1] >= SUMMARY_S:
            before, since = self._summarised
            self._summarised = (self.refused, time.monotonic())
            log.warning("%d requests refused in the last %.0f s for a name that is not this "
                        "service's", self.refused - before, self._summarised[1] - since)
        body = json.dumps({"error": {
            "code": "host_not_allowed",
            "message": f"this service does not answer to the name {shown!r}: open it by one "
                       "of its own names or addresses (or add this one to "
                       "SHOTCLOCK_ALLOWED_HOSTS on the service)"}}).encode()
        headers = [(b"content-type", b"application/json"),
                   (b"content-length", str(len(body)).encode())]
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": REFUSED_STATUS,
                        "headers": headers})
            await send({"type": "http.response.body", "body": body})
        elif "websocket.http.response" in scope.get("extensions", {}):
            await send({"type": "websocket.http.response.start", "status": REFUSED_STATUS,
                        "headers": headers})
            await send({"type": "websocket.http.response.body", "body": body})
        else:
            await send({"type": "websocket.close", "code": 1008})

