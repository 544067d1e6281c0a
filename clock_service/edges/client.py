"""A consumer's view of the service: follow a table's events, send referee commands.

Following (a rules engine, a stream graphics system, a logger)::

    import asyncio
    from clock_service.edges.client import follow

    async def main() -> None:
        async for event in follow("http://127.0.0.1:8000", "1", since=0):
            print(event["seq"], event["type"], event["data"])

    asyncio.run(main())

``follow`` yields every event of the table after ``since``, each exactly once and in
``seq`` order, for as long as the caller keeps iterating. It survives the things a
long-lived follower meets: the server restarting (even killed outright), the network
dropping, and the server cutting off a client that fell behind (close code 4001). Each
time it reconnects with ``?since=<last seq it yielded>``, so the server replays what was
missed from its store; it backs off exponentially (with jitter) while the server is away.
It never skips: if a message arrives whose ``seq`` is not the next one, it drops the
connection and asks again from the last seq it has; duplicates are dropped by ``seq``.

It gives up only when retrying cannot help: an unknown table (close 4404, raised as
:class:`UnknownTableError`) or a refused request such as a wrong token (close 1008,
:class:`FollowError`).

Sending a command (blocking; from asyncio code use ``asyncio.to_thread``)::

    from clock_service.edges.client import send_command, CommandRefused

    state = send_command("http://127.0.0.1:8000", "1", "start", token="...")
    try:
        send_command(base, "1", "result", whites_potted=1, legal_break=True)
    except CommandRefused as refused:
        print(refused.status, refused.code, refused.message, refused.rule)

No I/O happens at import; the only dependency is ``websockets``.
"""

from __future__ import annotations

import asyncio
import json
import random
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

__all__ = ["follow", "send_command", "CommandRefused", "FollowError", "UnknownTableError",
           "ws_url_of"]

CLOSE_POLICY = 1008
CLOSE_TOO_SLOW = 4001
CLOSE_UNKNOWN_TABLE = 4404


class FollowError(Exception):
    """The server refused the follower in a way that retrying cannot fix."""


class UnknownTableError(FollowError, LookupError):
    """The table does not exist on the server (close code 4404, or HTTP 404)."""


class CommandRefused(Exception):
    """A command answered with an error: 409 (the rules refuse it), 422 (malformed),
    404 (unknown table), 401 (token), with the service's ``code`` and ``message``."""

    def __init__(self, status: int, code: str, message: str, rule: str | None = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.rule = rule


def ws_url_of(base_url: str, table_id: str, since: int) -> str:
    """``http://host:port`` (or ``ws://``) -> the table's WebSocket URL with ``?since=``."""
    parts = urllib.parse.urlsplit(base_url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    path = parts.path.rstrip("/") + f"/ws/tables/{urllib.parse.quote(table_id, safe='')}"
    return urllib.parse.urlunsplit((scheme, parts.netloc, path, f"since={since}", ""))


async def follow(
    base_url: str,
    table_id: str,
    since: int = 0,
    *,
    token: str | None = None,
    snapshots: bool = False,
    backoff_s: float = 0.1,
    max_backoff_s: float = 5.0,
    open_timeout_s: float = 5.0,
) -> AsyncIterator[dict[str, Any]]:
    """Yield the table's events with ``seq > since``, each once and in order, forever.

    ``snapshots=True`` also yields the ``snapshot`` message each (re)connection starts with
    (its ``seq`` is the last event it reflects; it is not an event and is not de-duplicated).
    ``token`` is the referee token, only needed if the server wants it for this socket.
    Events replayed from the store after a (re)connection (those up to the snapshot's
    ``seq``) carry no ``state``; live events do (README, WebSocket).
    """
    if isinstance(since, bool) or not isinstance(since, int) or since < 0:
        raise ValueError(f"since must be a whole number >= 0, got {since!r}")
    last = since
    delay = backoff_s
    headers = {"Authorization": f"Bearer {token}"} if token else None
    while True:
        try:
            async with connect(ws_url_of(base_url, table_id, last), open_timeout=open_timeout_s,
                               additional_headers=headers, max_size=2**24) as ws:
                async for raw in ws:
                    message = json.loads(raw)
                    kind = message.get("type")
                    if kind == "snapshot":
                        delay = backoff_s  # connected and answered: the next retry is quick
                        if snapshots:
                            yield message
                        continue
                    if kind == "error":
                        _raise_for_error(message.get("error") or {})
                        continue
                    seq = message.get("seq")
                    if not isinstance(seq, int) or seq <= last:
                        continue  # a duplicate (or a reply to a command): already yielded
                    if seq != last + 1:
                        break  # a gap: never skip; ask again from the last one we have
                    last = seq
                    yield message
        except ConnectionClosed as closed:
            code = closed.rcvd.code if closed.rcvd is not None else None
            if code == CLOSE_UNKNOWN_TABLE:
                raise UnknownTableError(f"no table {table_id!r} at {base_url}") from closed
            if code == CLOSE_POLICY:
                reason = closed.rcvd.reason if closed.rcvd is not None else ""
                raise FollowError(f"the server refused the follower: {reason}") from closed
            # 4001 (too slow), a restart, a dropped network: resume from ``last``.
        except InvalidStatus as refused:
            status = refused.response.status_code
            if status == 404:
                raise UnknownTableError(f"no table {table_id!r} at {base_url}") from refused
            if status in (401, 403):
                raise FollowError(f"the server refused the follower: HTTP {status}") from refused
        except (OSError, InvalidHandshake, TimeoutError, EOFError):
            pass  # the server is away: retry with backoff
        await asyncio.sleep(delay * random.uniform(0.5, 1.0))
        delay = min(max_backoff_s, delay * 2)


def _raise_for_error(error: dict[str, Any]) -> None:
    code = str(error.get("code", "error"))
    message = str(error.get("message", ""))
    if code == "unknown_table":
        raise UnknownTableError(message)
    if code in ("invalid_input", "unauthorized"):
        raise FollowError(f"{code}: {message}")


def send_command(
    base_url: str,
    table_id: str,
    command: str,
    *,
    token: str | None = None,
    timeout_s: float = 10.0,
    **fields: Any,
) -> dict[str, Any]:
    """POST one referee command; return the table's new state or raise ``CommandRefused``."""
    url = (base_url.rstrip("/")
           + f"/api/tables/{urllib.parse.quote(table_id, safe='')}/commands")
    body = json.dumps({"command": command, **fields}).encode()
    request = urllib.request.Request(url, data=body, method="POST")
    request.add_header("content-type", "application/json")
    if token:
        request.add_header("authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            state: dict[str, Any] = json.loads(response.read())
            return state
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            error = json.loads(raw).get("error", {})
        except (ValueError, AttributeError):
            error = {"code": "http_error", "message": raw.decode(errors="replace")[:200]}
        raise CommandRefused(exc.code, str(error.get("code", "error")),
                             str(error.get("message", "")), error.get("rule")) from exc
