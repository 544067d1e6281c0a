"""The WebSockets: a table's feed (``/ws/tables/{id}``) and the hall's (``/ws/hall``).

Nothing a client without the token does may delay an expiry: a ``?since=`` replay streams
from the store in bounded batches under the same queue and send timeout as live events,
only a few replays run at once, and messages and handshakes are rate-limited per address
(limits.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, WebSocket
from starlette.websockets import WebSocketDisconnect, WebSocketState

from clock_service.core.errors import InvalidInput, UnknownTable
from clock_service.service.doors import Served, served_of
from clock_service.service.envelope import Envelope
from clock_service.service.hub import CLOSE_TOO_SLOW, HALL, Subscriber, encode
from clock_service.service.limits import Limits, client_of, read_message
from clock_service.service.live import ServedRuntime
from clock_service.service.settings import Settings
from clock_service.service.wire.fields import MAX_SEQ

__all__ = ["router", "CLOSE_POLICY", "CLOSE_UNKNOWN_TABLE", "CLOSE_TRY_LATER", "RAW_SEND",
           "WsSession", "HallSession"]

log = logging.getLogger(__name__)

CLOSE_POLICY = 1008
CLOSE_TRY_LATER = 1013  # too many replays at once: reconnect in a moment
CLOSE_UNKNOWN_TABLE = 4404
REPLAY_BATCH = 256  # events read from the store and sent per step of a replay
# The server's own ``send`` of a WebSocket, kept in its scope by the app (app.py).
RAW_SEND = "shotclock.raw_send"

router = APIRouter()


@router.websocket("/ws/tables/{table_id}")
async def table_socket(websocket: WebSocket, table_id: str) -> None:
    await WsSession(websocket, table_id, served_of(websocket)).run()


@router.websocket("/ws/hall")
async def hall_socket(websocket: WebSocket) -> None:
    await HallSession(websocket, served_of(websocket)).run()


class _Closing(Exception):
    """End a session with this close code and reason."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class _Session:
    """What the table and hall WebSockets share: the handshake's address, origin, rate and
    per-address cap checks; the bounded sender; ping/pong."""

    def __init__(self, websocket: WebSocket, served: Served) -> None:
        self.ws = websocket
        self.served = served
        self.runtime: ServedRuntime = served.runtime
        self.settings: Settings = served.settings
        self.limits: Limits = served.limits
        self.envelope = Envelope(served.runtime, served.authority)
        self.address = client_of(websocket.scope)
        self.counted = False
        self.state = "handshake"
        self.sub: Subscriber | None = None

    async def _admit(self) -> bool:
        """Refuse before the handshake completes (clients see HTTP 403): too many
        handshakes at once (everyone's), a foreign Origin, too many connections from this
        address, or over its read rate."""
        if self.limits.handshakes.take() > 0:
            return await self._refuse("too many connections at once; retry")
        if self.limits.origin_allowed(self.ws.scope) is False:
            return await self._refuse("origin not allowed")
        if self.limits.reads.enabled and self.limits.reads.take(self.address) > 0:
            return await self._refuse("too many reads from this address")
        if not self.limits.socket_opened(self.address):
            return await self._refuse("too many WebSockets from this address")
        self.counted = True
        return True

    async def _refuse(self, reason: str) -> bool:
        log.info("websocket %s from %s refused: %s", self.ws.scope.get("path"), self.address,
                 reason)
        await self.ws.close(code=CLOSE_POLICY, reason=reason)
        return False

    def _release(self) -> None:
        if self.counted:
            self.counted = False
            self.limits.socket_closed(self.address)

    async def _send_now(self, message: dict[str, Any]) -> None:
        await asyncio.wait_for(self.ws.send_text(encode(message)),
                               self.settings.ws_send_timeout_s)

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
            if isinstance(exc, _Closing):
                await self._close(exc.code, exc.reason)
            elif exc is not None and not isinstance(exc, WebSocketDisconnect | ConnectionError):
                log.warning("%s: websocket session ended: %r", self.ws.scope.get("path"), exc)

    snapshot_seq = 0

    async def _send_loop(self) -> None:
        assert self.sub is not None
        queue = self.sub.queue
        send_text = self._direct_sender()
        while True:
            item = await queue.get()
            if item is None:  # let go by the hub: too slow, or the table was archived
                await self._close(self.sub.close_code, self.sub.dropped or "too slow")
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

    async def _receive_loop(self) -> None:
        assert self.sub is not None
        while True:
            message = await self.ws.receive()
            if message["type"] == "websocket.disconnect":
                raise WebSocketDisconnect(message.get("code", 1000))
            messages = self.limits.messages
            if messages.enabled and messages.take(self.address) > 0:
                log.info("%s: websocket from %s closed: over %g messages a second",
                         self.ws.scope.get("path"), self.address, messages.rate)
                raise _Closing(CLOSE_POLICY, f"more than {messages.rate:g} messages a second "
                                             "from this address")
            text = message.get("text")
            if text is None:  # a binary frame: commands are JSON text, but say so politely
                text = (message.get("bytes") or b"").decode("utf-8", errors="replace")
            reply = await self._answer(text)
            self.sub.offer(0, encode(reply))

    def _read(self, text: str) -> dict[str, Any]:
        """The message as a JSON object, or an error reply (raised as _Reply)."""
        message, error = read_message(text, self.settings.max_message_bytes)
        if message is None:
            raise _Reply({"type": "error", "error": error})
        return message

    async def _answer(self, text: str) -> dict[str, Any]:
        try:
            message = self._read(text)
        except _Reply as reply:
            return reply.message
        if message.get("type") == "ping":
            return self.envelope.pong(message)
        return {"type": "error", "id": message.get("id"), "error": {
            "code": "unknown_message", "message": "the hall feed takes only "
            "{\"type\": \"ping\"}"}}


class _Reply(Exception):
    def __init__(self, message: dict[str, Any]) -> None:
        super().__init__(message.get("type"))
        self.message = message


class WsSession(_Session):
    """One WebSocket client of a table, as a small state machine:

    handshake (origin, address limits, token) -> snapshot -> replay (``?since=N``, streamed
    from the store) -> live -> closed. A sender task drains the client's bounded queue; a
    receiver task takes commands (when the client may) and pings; when either ends the
    other is cancelled.
    """

    def __init__(self, websocket: WebSocket, table_id: str, served: Served) -> None:
        super().__init__(websocket, served)
        self.table_id = table_id
        self.referee = False
        self.may_command = False
        self.token: str | None = None

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
        if not (raw.isascii() and raw.isdigit()) or int(raw) > MAX_SEQ:
            raise InvalidInput(f"since must be a whole number in 0..{MAX_SEQ}, got {raw[:40]!r}")
        return int(raw)

    async def run(self) -> None:
        token, subprotocol = self._offered_token()
        auth = self.served.authority
        # The limits first, then the token: a wrong token costs a handshake and a read
        # like any other, so guessing it is as slow as reading (issue 20, finding 4).
        if not await self._admit():
            return
        try:
            credential = auth.identify(token) if token is not None else None
            if token is not None and auth.enabled and credential is None:
                await self._refuse("wrong referee token")
                return
            # Commands need a token when there is one. Without Origin the client is no
            # browser page (OBS, a script): read-only unless it offers the token, so a page
            # of another site can never command through a socket (its browser sends Origin).
            # A referee's token commands its own tables only (clock_service/service/auth.py).
            has_origin = self.limits.origin_allowed(self.ws.scope) is not None
            self.token = token
            # May this socket's page offer commands (the snapshot tells it)? Each command is
            # still checked against the access table with the socket's token.
            self.referee = (credential is not None and credential.may_command(self.table_id)
                            ) if auth.enabled else has_origin
            self.may_command = auth.enabled or has_origin
            await self.ws.accept(subprotocol=subprotocol)
            await self._serve()
        finally:
            self._release()

    async def _serve(self) -> None:
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
        except _Closing as closing:
            await self._close(closing.code, closing.reason)
        except (WebSocketDisconnect, ConnectionError):
            pass
        finally:
            self.state = "closed"
            hub.unsubscribe(self.sub)

    async def _snapshot_and_replay(self, since: int | None) -> None:
        self.state = "snapshot"
        seq, state = self.runtime.snapshot(self.table_id)
        self.snapshot_seq = seq
        await self._send_now({"type": "snapshot", "seq": seq, "table": self.table_id,
                              "state": state, "referee": self.referee,
                              "faults": self.runtime.health.faults(self.table_id),
                              **self.runtime.liveness(self.table_id)})
        if since is not None and since < seq:
            self.state = "replay"
            await self._replay(since, seq)

    async def _replay(self, since: int, until: int) -> None:
        """Events since..until from the store, REPLAY_BATCH at a time (read off the loop,
        sent as stored), each send under the send timeout; at most max_replays at once."""
        replays = self.served.replays
        try:
            # Half the send timeout: a replay that waits longer is cut off (1013) before the
            # one it waits for could be (4001), so a stalled holder never starves it twice.
            async with asyncio.timeout(max(0.5, self.settings.ws_send_timeout_s / 2)):
                await replays.acquire()
        except TimeoutError:
            raise _Closing(CLOSE_TRY_LATER, f"busy: too many replays at once; reconnect with "
                                            f"?since={since}") from None
        try:
            store = self.runtime.store
            send_text = self._direct_sender()
            sent = since
            reads = self.limits.reads
            while sent < until:
                # A batch costs the address a read token, as a page of events does: a
                # replay is paced to the read rate (a client catching up on 10,000 events
                # takes 2 s; one reconnecting with ?since=0 in a loop gets nowhere fast).
                wait = reads.take(self.address) if reads.enabled else 0.0
                if wait > 0:
                    await asyncio.sleep(wait)
                batch = await asyncio.to_thread(store.event_texts, self.table_id, sent, until,
                                                REPLAY_BATCH)
                if not batch:
                    break
                for seq, text in batch:
                    try:
                        async with asyncio.timeout(self.settings.ws_send_timeout_s):
                            await send_text(text)
                    except TimeoutError:
                        raise _Closing(CLOSE_TOO_SLOW, f"send timed out; reconnect with "
                                                       f"?since={sent}") from None
                    sent = seq
                assert self.sub is not None
                if self.sub.dropped is not None:  # its live queue filled meanwhile
                    raise _Closing(CLOSE_TOO_SLOW, f"too slow: reconnect with ?since={sent}")
        finally:
            replays.release()

    async def _answer(self, text: str) -> dict[str, Any]:
        try:
            message = self._read(text)
        except _Reply as reply:
            return reply.message
        return await self.envelope.answer(
            message, table_id=self.table_id, channel="ws", offered=self.token,
            may_command=self.may_command, rate=self._rate,
            without_token="commands need the referee token (subprotocol bearer.<token>, "
                          "or ?token=) or a page of this service")

    def _rate(self) -> dict[str, Any] | None:
        """One bucket per address, shared with its HTTP writes and its other sockets."""
        limiter = self.limits.commands
        wait = limiter.take(self.address) if limiter.enabled else 0.0
        if wait <= 0:
            return None
        return {"type": "error", "status": 429, "error": {
            "code": "rate_limited", "message": f"more than {limiter.rate:g} commands "
            f"a second from this address; retry in {wait:.2f} s"}}


class HallSession(_Session):
    """The hall feed (``/ws/hall``): one socket for every table's card. First ``hall``
    (every live table's summary and every fault), then ``table`` when one changes or is
    created, ``removed`` when one is archived, ``status`` when the faults change; pings
    are answered. Read-only; the same limits as a table socket."""

    async def run(self) -> None:
        if not await self._admit():
            return
        try:
            await self.ws.accept()
            self.sub = self.runtime.hub.subscribe(HALL)
            try:
                await self._send_now(self.runtime.hall_message())
                self.state = "live"
                await self._live()
            except (WebSocketDisconnect, ConnectionError):
                pass
            finally:
                self.state = "closed"
                self.runtime.hub.unsubscribe(self.sub)
        finally:
            self._release()
