"""One MQTT connection on the asyncio loop: paho-mqtt driven by the loop's own reader and
writer callbacks (the technique aiomqtt uses), so no thread runs Python beside the clock.

Only the TCP connect (name lookup, handshake) runs in a worker thread: it may block for
seconds on an unreachable host. Everything after it is non-blocking on the loop:
``publish`` queues the packet and returns its message id at once; the broker's PUBACK
arrives later through ``on_ack(mid, ok)`` (``ok`` False for an MQTT 5 failure reason code,
e.g. 135 "not authorized" from the ACL). A lost connection ends ``closed``.

Each ``Connection`` is used for one connection only; reconnecting makes a new one, so
nothing queued inside paho survives a drop (the callers keep their own account of what
the broker has, and send again from there).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable
from typing import Any

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from clock_service.edges.mqtt.topics import BrokerTarget
from clock_service.service.tls import client_context

__all__ = ["Connection", "ConnectError", "Message", "reason_text", "publish_properties"]

log = logging.getLogger(__name__)

# MQTT 5 DISCONNECT reason: another client connected with the same client id.
SESSION_TAKEN_OVER = 142



def publish_properties(response_topic: str | None,
                       correlation: bytes | None) -> Properties | None:
    """The MQTT 5 properties of a request/response publish (response topic, correlation
    data), or None for a plain one."""
    if response_topic is None and correlation is None:
        return None
    props = Properties(PacketTypes.PUBLISH)
    if response_topic is not None:
        props.ResponseTopic = response_topic
    if correlation is not None:
        props.CorrelationData = correlation
    return props

class ConnectError(ConnectionError):
    """The broker could not be reached or refused the connection (``reason`` says why)."""

    def __init__(self, message: str, reason: int | None = None, *,
                 refused: bool = False) -> None:
        super().__init__(message)
        self.reason = reason  # the MQTT 5 reason code, when the broker gave one
        self.refused = refused  # the broker answered the CONNECT with a failure


class Message:
    """A received message: topic, payload and the MQTT 5 request properties."""

    __slots__ = ("topic", "payload", "retain", "response_topic", "correlation")

    def __init__(self, topic: str, payload: bytes, retain: bool,
                 response_topic: str | None, correlation: bytes | None) -> None:
        self.topic = topic
        self.payload = payload
        self.retain = retain
        self.response_topic = response_topic
        self.correlation = correlation


def reason_text(code: Any) -> str:
    return f"{getattr(code, 'value', code)} ({code})"


class Connection:
    def __init__(
        self, target: BrokerTarget, client_id: str, *,
        on_message: Callable[[Message], None] | None = None,
        on_ack: Callable[[int, bool], None] | None = None,
        will: tuple[str, bytes] | None = None,
        clean_start: bool = True,
        session_expiry_s: int = 0,
        keepalive_s: int = 10,
        max_inflight: int = 64,
    ) -> None:
        self.target = target
        self.client_id = client_id
        self.on_message = on_message
        self.on_ack = on_ack
        self.keepalive_s = keepalive_s
        self.clean_start = clean_start
        self.session_expiry_s = session_expiry_s
        self._loop = asyncio.get_running_loop()
        self.connected: asyncio.Future[None] = self._loop.create_future()
        # The connection ended: None for our own disconnect, else what broke it.
        self.closed: asyncio.Future[BaseException | None] = self._loop.create_future()
        self._acks: dict[int, asyncio.Future[Any]] = {}
        self._fd: int | None = None
        self.max_inflight = max_inflight
        # The broker's Receive Maximum (CONNACK): more QoS 1 messages in flight than that and
        # an MQTT 5 broker drops the connection (Mosquitto says 20). paho does not heed it.
        self.receive_maximum = 65535
        self._unacked: set[int] = set()  # QoS 1 message ids the broker has not acknowledged
        self._misc: asyncio.Task[None] | None = None
        client = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2,
                             client_id=client_id, protocol=paho.MQTTv5,
                             reconnect_on_failure=False)
        client.max_inflight_messages_set(max_inflight)
        if target.username is not None:
            client.username_pw_set(target.username, target.password)
        if target.tls:
            # Verified: the broker's certificate must chain to the hall CA (or a system CA)
            # and name the host; a wrong CA fails the connect. The hall's TLS policy.
            client.tls_set_context(client_context(target.ca))
        if will is not None:
            client.will_set(will[0], will[1], qos=1, retain=True)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_publish = self._on_publish
        client.on_subscribe = self._on_subscribe
        client.on_message = self._on_message
        client.on_socket_open = self._on_socket_open
        client.on_socket_close = self._on_socket_close
        client.on_socket_register_write = self._on_register_write
        client.on_socket_unregister_write = self._on_unregister_write
        self._client = client

    # -- lifecycle ---------------------------------------------------------------------------
    async def connect(self, timeout_s: float = 10.0) -> None:
        """Connect and wait for the broker's CONNACK; raises ``ConnectError``."""
        props = Properties(PacketTypes.CONNECT)
        if self.session_expiry_s:
            props.SessionExpiryInterval = self.session_expiry_s
        try:
            async with asyncio.timeout(timeout_s):
                await self._loop.run_in_executor(None, self._blocking_connect, props)
                await asyncio.shield(self.connected)
        except TimeoutError:
            self._abort(ConnectError(f"no answer from {self.target.host}:{self.target.port} "
                                     f"within {timeout_s:g} s"))
            raise ConnectError(f"no answer from {self.target.host}:{self.target.port} within "
                               f"{timeout_s:g} s") from None
        except OSError as exc:
            self._abort(exc)
            raise ConnectError(f"cannot connect to {self.target.host}:{self.target.port}: "
                               f"{exc}") from exc
        except ConnectError as exc:
            self._abort(exc)
            raise

    def _blocking_connect(self, props: Properties) -> None:
        self._client.connect(self.target.host, self.target.port, keepalive=self.keepalive_s,
                             clean_start=self.clean_start, properties=props)
        sock = self._client.socket()
        if isinstance(sock, socket.socket):
            # paho leaves Nagle on: an event and the state right after it would wait for
            # the broker's delayed ACK (up to 40 ms on Linux). Each message goes at once.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    async def disconnect(self, timeout_s: float = 2.0, drain_s: float = 1.0) -> None:
        """Disconnect cleanly (the broker then does not publish the will), once the QoS 1
        messages in flight are acknowledged (``drain_s`` at most): Mosquitto 2.0 takes a
        DISCONNECT right behind an unacknowledged empty retained message (the clearing of
        a retained one) for an error, and publishes the will."""
        if self.closed.done():
            return
        if self.connected.done() and self.connected.exception() is None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(drain_s):
                    while self._unacked and not self.closed.done():
                        await asyncio.sleep(0.01)
            if self.closed.done():
                return
            self._client.disconnect()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):
                    await asyncio.shield(self.closed)
        self._abort(None)

    def _abort(self, error: BaseException | None) -> None:
        """Drop the socket and end the connection (no callback of it runs after this)."""
        if self._fd is not None:
            self._loop.remove_reader(self._fd)
            self._loop.remove_writer(self._fd)
            self._fd = None
        with contextlib.suppress(Exception):
            self._client._sock_close()  # noqa: SLF001 - paho has no public "drop now"
        if self._misc is not None:
            self._misc.cancel()
        self._finish(error)

    def _finish(self, error: BaseException | None) -> None:
        if not self.connected.done():
            self.connected.set_exception(error or ConnectError("closed before connecting"))
            self.connected.exception()  # retrieved: the closed future carries it too
        if not self.closed.done():
            self.closed.set_result(error)
        # A waiting subscribe fails with the reason, never with CancelledError: the task
        # waiting on it is not being cancelled, and a CancelledError there once ended a
        # table's publisher for good (issue 20, finding 1: a client taking over its id).
        for future in self._acks.values():
            if not future.done():
                future.set_exception(ConnectError(
                    f"the connection ended before the broker answered ({error})"
                    if error is not None else "the connection was closed"))
                future.exception()  # retrieved: nobody may be waiting any more
        self._acks.clear()

    # -- use -------------------------------------------------------------------------------------
    def publish(self, topic: str, payload: bytes | str, *, qos: int = 1, retain: bool = False,
                response_topic: str | None = None, correlation: bytes | None = None) -> int:
        """Queue a message; returns its message id (``on_ack`` tells when the broker took a
        QoS 1 message). Never waits. Raises ``ConnectionError`` when not connected."""
        if self.closed.done():
            raise ConnectionError("the MQTT connection is closed")
        props = publish_properties(response_topic, correlation)
        info = self._client.publish(topic, payload, qos=qos, retain=retain, properties=props)
        if info.rc != paho.MQTT_ERR_SUCCESS:
            raise ConnectionError(f"publish to {topic} failed: {paho.error_string(info.rc)}")
        if qos:
            self._unacked.add(info.mid)
        return info.mid

    async def subscribe(self, topics: list[tuple[str, int]], timeout_s: float = 10.0) -> None:
        """Subscribe and wait for the SUBACK; raises ``ConnectError`` if any is refused."""
        result, mid = self._client.subscribe(topics)
        if result != paho.MQTT_ERR_SUCCESS or mid is None:
            raise ConnectionError(f"subscribe failed: {paho.error_string(result)}")
        future: asyncio.Future[Any] = self._loop.create_future()
        self._acks[mid] = future
        try:
            async with asyncio.timeout(timeout_s):
                codes = await future
        finally:
            self._acks.pop(mid, None)
        refused = [(t, c) for (t, _), c in zip(topics, codes, strict=False)
                   if getattr(c, "is_failure", False)]
        if refused:
            raise ConnectError(f"subscription refused by the broker: "
                               f"{', '.join(f'{t}: {reason_text(c)}' for t, c in refused)}",
                               reason=int(refused[0][1].value))

    # -- paho callbacks (on the loop, except socket-open from the connect thread) ---------------
    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any,
                    properties: Any) -> None:
        if self.connected.done():
            return
        receive_maximum = getattr(properties, "ReceiveMaximum", None)
        if isinstance(receive_maximum, int) and receive_maximum > 0:
            self.receive_maximum = receive_maximum
            # paho keeps the rest queued until PUBACKs free a slot. Its setter refuses once
            # connected (for a change to or from 0, "not tested"); nothing is in flight yet
            # while the CONNACK is handled, and both values are > 0.
            client._max_inflight_messages = min(self.max_inflight,  # noqa: SLF001
                                                receive_maximum)
        if reason.is_failure:
            self.connected.set_exception(ConnectError(
                f"the broker at {self.target.host}:{self.target.port} refused the connection: "
                f"{reason_text(reason)}", reason=int(reason.value), refused=True))
        else:
            self.connected.set_result(None)

    def _on_disconnect(self, client: Any, userdata: Any, flags: Any, reason: Any,
                       properties: Any) -> None:
        error: BaseException | None = None
        code = int(getattr(reason, "value", -1))
        if getattr(flags, "is_disconnect_packet_from_server", False):
            if code != 0:
                error = ConnectError(f"the broker closed the connection: {reason_text(reason)}",
                                     reason=code)
        elif code != 0:
            error = ConnectError("the connection to the broker was lost", reason=code)
        if not self.connected.done():
            self._finish(error or ConnectError("closed before the CONNACK"))
        else:
            self._finish(error)
        if self._misc is not None:
            self._misc.cancel()

    def _on_publish(self, client: Any, userdata: Any, mid: int, reason: Any,
                    properties: Any) -> None:
        self._unacked.discard(mid)
        if self.on_ack is not None:
            self.on_ack(mid, not getattr(reason, "is_failure", False))

    def _on_subscribe(self, client: Any, userdata: Any, mid: int, reasons: Any,
                      properties: Any) -> None:
        future = self._acks.pop(mid, None)
        if future is not None and not future.done():
            future.set_result(list(reasons))

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        if self.on_message is None:
            return
        props = getattr(message, "properties", None)
        self.on_message(Message(
            message.topic, message.payload, bool(message.retain),
            getattr(props, "ResponseTopic", None) if props is not None else None,
            getattr(props, "CorrelationData", None) if props is not None else None))

    def _on_socket_open(self, client: Any, userdata: Any, sock: Any) -> None:
        # From the connect thread: hop onto the loop.
        self._loop.call_soon_threadsafe(self._watch, sock.fileno())

    def _watch(self, fd: int) -> None:
        if self.closed.done():
            return
        self._fd = fd
        self._loop.add_reader(fd, self._readable)
        self._misc = self._loop.create_task(self._misc_loop())

    def _readable(self) -> None:
        try:
            self._client.loop_read()
        except Exception as exc:  # a broken socket: the connection is over
            self._abort(exc)

    def _on_socket_close(self, client: Any, userdata: Any, sock: Any) -> None:
        if self._fd is not None:
            self._loop.remove_reader(self._fd)
            self._loop.remove_writer(self._fd)
            self._fd = None

    def _on_register_write(self, client: Any, userdata: Any, sock: Any) -> None:
        fd = sock.fileno()
        if self._loop.is_running() and _on_loop(self._loop):
            self._loop.add_writer(fd, self._writable)
        else:
            self._loop.call_soon_threadsafe(self._loop.add_writer, fd, self._writable)

    def _on_unregister_write(self, client: Any, userdata: Any, sock: Any) -> None:
        self._loop.remove_writer(sock.fileno())

    def _writable(self) -> None:
        try:
            self._client.loop_write()
        except Exception as exc:
            self._abort(exc)

    async def _misc_loop(self) -> None:
        """Keepalive pings and their timeouts (paho's loop_misc), once a second."""
        with contextlib.suppress(asyncio.CancelledError):
            while self._client.loop_misc() == paho.MQTT_ERR_SUCCESS:
                await asyncio.sleep(1.0)
            if not self.closed.done():
                self._abort(ConnectError("the broker stopped answering (keepalive)"))


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
