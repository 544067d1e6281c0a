"""Issue 35, build points 4 and 7, the pure parts: which names the service answers to
(clock_service/service/hosts.py), the Origin check against them (limits.py), the one
redaction (redaction.py) and the log filter that keeps uvicorn's lines whole (server.py).
The same findings from outside, against a real service: tests/faults/test_hosts_and_headers.py.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from clock_service.edges.api.server import TokenRedactor
from clock_service.service.hosts import HostGuard, Hosts, split_host
from clock_service.service.limits import Limits, networks
from clock_service.service.redaction import is_secret_name, redact, redact_all


@pytest.mark.parametrize(("value", "expected"), [
    ("localhost", ("localhost", None)),
    ("LocalHost:8000", ("localhost", 8000)),
    ("pi-7.local.", ("pi-7.local", None)),
    ("127.0.0.1:80", ("127.0.0.1", 80)),
    ("[::1]:8000", ("::1", 8000)),
    ("[::1]", ("::1", None)),
    ("::1", ("::1", None)),  # not valid in Host, but unambiguous
    ("host:", ("host", None)),
    ("host:http", None), ("[::1", None), ("[::1]x", None), ("", None), (":80", None),
    ("host:123456", None),
])
def test_split_host(value: str, expected: tuple[str, int | None] | None) -> None:
    assert split_host(value) == expected


def _hosts(listen: str = "127.0.0.1", allowed: tuple[str, ...] = (),
           interfaces: tuple[str, ...] = ("127.0.0.1", "192.168.1.7", "fe80::1"),
           **kwargs: Any) -> Hosts:
    return Hosts(listen=[listen], allowed=allowed, hostname="pi-7",
                 interfaces=lambda: interfaces, **kwargs)


@pytest.mark.parametrize(("listen", "allowed", "name", "arrived_at", "own"), [
    # always: localhost, the hostname and <hostname>.local, loopback
    ("127.0.0.1", (), "localhost", None, True),
    ("127.0.0.1", (), "pi-7", None, True),
    ("127.0.0.1", (), "pi-7.local", None, True),
    ("127.0.0.1", (), "127.0.0.1", None, True),
    ("127.0.0.1", (), "127.3.4.5", None, True),
    ("127.0.0.1", (), "::1", None, True),
    # a rebinding name never is, whatever it resolves to
    ("127.0.0.1", (), "evil.test", "127.0.0.1", False),
    ("127.0.0.1", (), "pi-7.evil.test", None, False),
    ("127.0.0.1", (), "localhost.evil.test", None, False),
    # the address listened on; for 0.0.0.0 every interface's
    ("192.168.1.7", (), "192.168.1.7", None, True),
    ("127.0.0.1", (), "192.168.1.7", None, False),
    ("0.0.0.0", (), "192.168.1.7", None, True),
    ("::", (), "fe80::1", None, True),
    ("0.0.0.0", (), "10.9.9.9", None, False),
    # the address the connection arrived at (IPv4 inside IPv6 too), and an in-process
    # client's name for it
    ("0.0.0.0", (), "10.1.1.1", "10.1.1.1", True),
    ("::", (), "10.1.1.1", "::ffff:10.1.1.1", True),
    ("127.0.0.1", (), "testserver", "testserver", True),
    # SHOTCLOCK_ALLOWED_HOSTS: names, addresses (a port is ignored), subdomains, any
    ("127.0.0.1", ("clock.hall.example",), "clock.hall.example", None, True),
    ("127.0.0.1", ("Clock.Hall.Example.:443",), "clock.hall.example", None, True),
    ("127.0.0.1", ("203.0.113.9",), "203.0.113.9", None, True),
    ("127.0.0.1", ("*.hall.example",), "table-3.hall.example", None, True),
    ("127.0.0.1", ("*.hall.example",), "hall.example", None, False),
    ("127.0.0.1", ("*.hall.example",), "evilhall.example", None, False),
    ("127.0.0.1", ("*",), "evil.test", None, True),
    # a name to listen on is one of ours
    ("raspberrypi.lan", (), "raspberrypi.lan", None, True),
])
def test_which_names_are_ours(listen: str, allowed: tuple[str, ...], name: str,
                              arrived_at: str | None, own: bool) -> None:
    assert _hosts(listen, allowed).is_own(name, arrived_at) is own


@pytest.mark.parametrize("item", ["http://clock.example", "*.", "clock.*", "[::1", "a:b:c"])
def test_a_wrong_allowed_host_is_refused_at_start(item: str) -> None:
    with pytest.raises(ValueError, match="SHOTCLOCK_ALLOWED_HOSTS"):
        _hosts(allowed=(item,))


def test_interfaces_are_read_again_for_an_unknown_address_at_most_every_10_s() -> None:
    now = [0.0]
    reads: list[float] = []
    current = {"192.168.1.7"}

    def interfaces() -> set[str]:
        reads.append(now[0])
        return set(current)

    hosts = Hosts(listen=["0.0.0.0"], hostname="pi", interfaces=interfaces,
                  clock=lambda: now[0])
    assert reads == [0.0]
    current.add("192.168.1.8")  # DHCP gave it another address
    now[0] = 5.0
    assert not hosts.is_own("192.168.1.8")  # too soon to look again
    now[0] = 10.0
    assert hosts.is_own("192.168.1.8")
    for _ in range(100):  # an attacker's unknown addresses cost one reading per 10 s
        assert not hosts.is_own("10.0.0.1")
    assert reads == [0.0, 10.0]


def _scope(host: str | None, *, origin: str | None = None, peer: str = "127.0.0.1",
           forwarded_host: str | None = None, kind: str = "http",
           server: tuple[str, int] = ("127.0.0.1", 8000)) -> dict[str, Any]:
    headers = [(b"host", host.encode())] if host is not None else []
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    if forwarded_host is not None:
        headers.append((b"x-forwarded-host", forwarded_host.encode()))
    return {"type": kind, "method": "POST", "path": "/api/tables", "headers": headers,
            "client": (peer, 40000), "server": server, "query_string": b"",
            "extensions": {"websocket.http.response": {}} if kind == "websocket" else {}}


@pytest.mark.parametrize(("host", "origin", "extra", "allowed"), [
    # issue 35 finding 3: the Origin equal to the request's own Host passed
    ("evil.test", "http://evil.test", {}, False),
    ("evil.test:8000", "http://evil.test:8000", {}, False),
    ("127.0.0.1:8000", "http://127.0.0.1:8000", {}, True),
    ("localhost:8000", "http://localhost:8000", {}, True),
    # another of our names is one of our pages; another port is another site
    ("127.0.0.1:8000", "http://localhost:8000", {}, True),
    ("127.0.0.1:8000", "http://localhost:3000", {}, False),
    ("pi-7.local", "http://pi-7.local:80", {}, True),
    ("pi-7.local", "https://pi-7.local", {}, True),  # behind a TLS proxy on 443
    ("127.0.0.1:8000", "http://evil.test", {}, False),
    ("127.0.0.1:8000", "null", {}, False),
    (None, "http://127.0.0.1:8000", {}, False),
    # SHOTCLOCK_ALLOWED_ORIGINS
    ("127.0.0.1:8000", "http://obs.example:8080", {}, True),
    # a trusted proxy's X-Forwarded-Host is what the browser addressed
    ("127.0.0.1:8000", "https://clock.hall.example",
     {"peer": "10.0.0.2", "forwarded_host": "clock.hall.example"}, True),
    ("127.0.0.1:8000", "https://clock.hall.example",
     {"peer": "10.0.0.3", "forwarded_host": "clock.hall.example"}, False),
])
def test_the_origin_is_checked_against_our_names(host: str | None, origin: str,
                                                 extra: dict[str, Any], allowed: bool) -> None:
    trusted = networks(["10.0.0.2"])
    hosts = Hosts(listen=["127.0.0.1"], allowed=["clock.hall.example"], hostname="pi-7",
                  trusted=trusted, interfaces=lambda: ())
    limits = Limits(command_rate=0, command_burst=1, allowed_origins=["http://obs.example:8080"],
                    trusted_proxies=["10.0.0.2"], hosts=hosts)
    assert limits.origin_allowed(_scope(host, origin=origin, **extra)) is allowed


def test_with_any_host_allowed_the_origin_must_still_be_the_host_addressed() -> None:
    hosts = Hosts(listen=["127.0.0.1"], allowed=["*"], hostname="pi", interfaces=lambda: ())
    limits = Limits(command_rate=0, command_burst=1, hosts=hosts)
    assert limits.origin_allowed(_scope("clock.example", origin="http://clock.example"))
    assert not limits.origin_allowed(_scope("clock.example", origin="http://evil.test"))


async def _call(guard: HostGuard, scope: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    sent: list[dict[str, Any]] = []
    reached = False

    async def app(scope: Any, receive: Any, send: Any) -> None:
        nonlocal reached
        reached = True

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    guard.app = app
    await guard(scope, receive, send)
    return sent, reached


@pytest.mark.parametrize(("scope", "passes"), [
    (_scope("127.0.0.1:8000"), True),
    (_scope("clock.hall.example"), True),
    (_scope(None), True),  # HTTP/1.0 without Host: no browser
    (_scope("evil.test"), False),
    (_scope("evil.test", kind="websocket"), False),
    (_scope("[::1"), False),  # malformed
    # a client's X-Forwarded-Host is ignored; a trusted proxy's is checked, every name in it
    (_scope("127.0.0.1", forwarded_host="evil.test"), True),
    (_scope("127.0.0.1", peer="10.0.0.2", forwarded_host="evil.test"), False),
    (_scope("127.0.0.1", peer="10.0.0.2", forwarded_host="clock.hall.example"), True),
    (_scope("127.0.0.1", peer="10.0.0.2", forwarded_host="localhost, evil.test"), False),
])
def test_the_guard_refuses_before_the_app(scope: dict[str, Any], passes: bool) -> None:
    hosts = Hosts(listen=["127.0.0.1"], allowed=["clock.hall.example"], hostname="pi-7",
                  trusted=networks(["10.0.0.2"]), interfaces=lambda: ())
    guard = HostGuard(None, hosts=hosts)  # type: ignore[arg-type]
    sent, reached = asyncio.run(_call(guard, scope))
    assert reached is passes
    if not passes:
        start = sent[0]
        assert start["status"] == 421
        assert start["type"] == f"{'websocket.' if scope['type'] == 'websocket' else ''}" \
                                "http.response.start"
        assert b'"code": "host_not_allowed"' in sent[1]["body"]


def test_a_websocket_server_without_the_response_extension_gets_a_close() -> None:
    guard = HostGuard(None, hosts=Hosts(hostname="pi", interfaces=lambda: ()))  # type: ignore
    scope = _scope("evil.test", kind="websocket")
    scope["extensions"] = {}
    sent, reached = asyncio.run(_call(guard, scope))
    assert not reached and sent == [{"type": "websocket.close", "code": 1008}]


# -- one redaction -----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "shown"), [
    ("https://user:hunter2@hooks.example/r?key=abc&x=1",
     "https://user:***@hooks.example/r?key=***&x=1"),
    ("mqtt://table:pw@broker:1883/hall", "mqtt://table:***@broker:1883/hall"),
    ("https://sk_live_123@api.example/v1", "https://***@api.example/v1"),
    ("GET /api/health?token=x HTTP/1.1", "GET /api/health?token=*** HTTP/1.1"),
    ("GET /api/health?%74oken=x HTTP/1.1", "GET /api/health?%74oken=*** HTTP/1.1"),
    ("GET /x?TOKEN=x&Api-Key=y&sig=z&since=5", "GET /x?TOKEN=***&Api-Key=***&sig=***&since=5"),
    ("/r?signature=a;password=b#secret=c", "/r?signature=***;password=***#secret=***"),
    ("/x?access_token=a&x-amz-signature=b", "/x?access_token=***&x-amz-signature=***"),
    ("Authorization: Bearer abc.def", "Authorization: Bearer ***"),
    ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic ***"),
    ("subprotocols bearer.abc123, json", "subprotocols bearer.***, json"),
    ("'url': 'https://h/?key=k'", "'url': 'https://h/?key=***'"),
    # nothing else changes
    ("GET /api/tables?after=7&limit=10 HTTP/1.1", "GET /api/tables?after=7&limit=10 HTTP/1.1"),
    ("https://hooks.example/results", "https://hooks.example/results"),
    ("a=b", "a=b"), ("/x?token=", "/x?token="), ("user@example.org", "user@example.org"),
])
def test_redact(text: str, shown: str) -> None:
    assert redact(text) == shown


def test_redact_known_secrets_wherever_they_are() -> None:
    token = "director token/0"
    text = f"offered {token} and /ws?t={'director%20token%2F0'}"
    assert redact(text, [token]) == "offered *** and /ws?t=***"
    assert redact_all({"a": [f"x {token}"], "n": 3}, [token]) == {"a": ["x ***"], "n": 3}


@pytest.mark.parametrize(("name", "secret"), [
    ("token", True), ("%74oken", True), ("TOKEN", True), ("api_key", True),
    ("api-key", True), ("apikey", True), ("sig", True), ("client_secret", True),
    ("since", False), ("limit", False), ("table", False), ("keyboard", False),
])
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


# -- the log filter keeps uvicorn's access lines whole ----------------------------------------

def test_the_redactor_keeps_an_access_record_uvicorn_can_format() -> None:
    from uvicorn.logging import AccessFormatter

    record = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", "/api/health?%74oken=x&token=s3cret-t0ken", "1.1", 200),
        None)
    assert TokenRedactor("s3cret-t0ken").filter(record)
    line = AccessFormatter('%(levelprefix)s %(client_addr)s - "%(request_line)s" '
                           "%(status_code)s", use_colors=False).format(record)
    assert line == ('INFO:     127.0.0.1:5000 - "GET /api/health?%74oken=***&token=*** '
                    'HTTP/1.1" 200 OK')


def test_the_redactor_falls_back_to_the_whole_message_when_args_do_not_fit() -> None:
    class Url:
        def __repr__(self) -> str:
            return "<https://u:pw@h/>"

    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "failed: %r", (Url(),), None)
    TokenRedactor(None).filter(record)
    assert record.getMessage() == "failed: <https://u:***@h/>"


def test_config_shows_a_secret_as_stars_and_a_secret_url_without_its_credentials() -> None:
    from clock_service.service import settings as config

    loaded = config.load({"SHOTCLOCK_REFEREE_TOKEN": "looks://like-a-url",
                          "SHOTCLOCK_MQTT_URL": "mqtt://table:pw@broker:1883/hall",
                          "SHOTCLOCK_ALLOWED_HOSTS": "clock.hall.example *.hall.example"})
    shown = {row["name"]: row["value"] for row in config.effective(loaded)}
    assert shown["referee_token"] == "***"
    assert shown["mqtt_url"] == "mqtt://table:***@broker:1883/hall"
    assert shown["allowed_hosts"] == ("clock.hall.example", "*.hall.example")
