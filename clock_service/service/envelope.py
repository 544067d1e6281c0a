"""The command envelope: one message on a table's WebSocket or MQTT commands topic, and its
reply. One definition for both channels (issue 38 point 3).

A message is a JSON object with a ``type`` (``command`` when it has a ``command`` field and
no type): ``ping`` is answered with the service's clock (``pong``); ``command`` is a
referee's command, checked against its door in the access table
(clock_service/service/access.py ``MESSAGES``) with the credential offered on that channel,
stamped with who sent it (``by``/``source``, clock_service/service/auth.py ``stamp``) and
run; the reply is ``ack`` with the new state, or ``error`` with the HTTP status the same
refusal would have had.

What differs per channel is handed in: how the token was offered, what the channel
says when none was, and the channel's rate limit (taken once the message is known to be a
command, so a ping costs no command).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from clock_service.core.commands import Command, parse_command
from clock_service.core.errors import NotAuthorized, ShotClockError
from clock_service.service import access
from clock_service.service.auth import OPEN, Authority, Credential, stamp
from clock_service.service.timesource import TimeSource

__all__ = ["Envelope", "Commanded", "message_kind"]

Reply = dict[str, Any]


class Commanded(Protocol):
    """What the envelope runs commands on: a table service's runtime or the hall's."""

    @property
    def time(self) -> TimeSource: ...

    async def command(self, table_id: str, command: Command) -> dict[str, Any]: ...


def message_kind(message: dict[str, Any]) -> Any:
    return message.get("type", "command" if "command" in message else None)


class Envelope:
    def __init__(self, runtime: Commanded, authority: Authority) -> None:
        self.runtime = runtime
        self.authority = authority

    def pong(self, message: dict[str, Any]) -> Reply:
        return {"type": "pong", "id": message.get("id"),
                "client_time": message.get("client_time"),
                "server_time": self.runtime.time.now_ms()}

    def credential(self, offered: str | None) -> Credential | None:
        """Asked again for each command: a token revoked meanwhile stops at once."""
        if not self.authority.enabled:
            return OPEN
        return self.authority.identify(offered) if offered else None

    async def answer(self, message: dict[str, Any], *, table_id: str, channel: str,
                     offered: str | None, without_token: str,
                     may_command: bool = True,
                     rate: Callable[[], Reply | None] | None = None,
                     unknown_hint: str = "") -> Reply:
        """The reply to ``message`` on ``table_id``'s ``channel`` (``ws``, ``mqtt``).

        ``offered``: the token the channel carries (the socket's, or the message's own);
        ``without_token``: the refusal's words when a command comes without one;
        ``may_command``: False where the channel itself may not command (an open service's
        socket with no browser Origin); ``rate``: the channel's command bucket, a 429
        reply when it is empty."""
        msg_id = message.get("id")
        kind = message_kind(message)
        door = access.MESSAGES.get(kind) if isinstance(kind, str) else None
        if door is None:
            return {"type": "error", "id": msg_id, "error": {
                "code": "unknown_message", "message": f"unknown message type {kind!r}; send "
                "{\"type\": \"command\", \"command\": ...}" + unknown_hint
                + " or {\"type\": \"ping\"}"}}
        if kind == "ping":
            return self.pong(message)
        try:
            if not may_command:
                raise NotAuthorized(without_token)
            credential = self.credential(offered)
            if credential is None:
                raise NotAuthorized(without_token if not offered
                                    else "this token is wrong or was revoked")
            access.check(door, credential, table_id, f"a command on table {table_id}")
            if rate is not None:
                refused = rate()
                if refused is not None:
                    return {"id": msg_id, **refused}
            fields = {k: v for k, v in message.items() if k not in ("type", "token")}
            state = await self.runtime.command(
                table_id, stamp(parse_command(fields), credential, channel))
        except ShotClockError as exc:
            from clock_service.service.doors import status_of

            return {"type": "error", "id": msg_id, "status": status_of(exc),
                    "error": exc.to_dict()}
        return {"type": "ack", "id": msg_id, "state": state}


Answer = Callable[[dict[str, Any]], Awaitable[Reply]]
