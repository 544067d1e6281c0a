"""A plain paho-mqtt client for the tests, in paho's own thread: an outside consumer
(a scoreboard, Node-RED ...) that does not share the service's asyncio glue.

Its waits block the calling thread: from an async test, wait with the loop free (poll
``messages`` with ``asyncio.sleep``), or the service on that loop cannot answer."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

from clock_service.edges.mqtt.connection import publish_properties

__all__ = ["Watcher", "Got"]


@dataclass(frozen=True)
class Got:
    topic: str
    payload: bytes
    retain: bool
    correlation: bytes | None

    def json(self) -> Any:
        return json.loads(self.payload)


class Watcher:
    def __init__(self, port: int, *, user: str | None = None, password: str | None = None,
                 client_id: str | None = None, ca: str | None = None,
                 host: str = "127.0.0.1") -> None:
        self.client_id = client_id or f"watcher-{uuid.uuid4().hex[:8]}"
        self.messages: list[Got] = []
        self.acks: dict[int, int] = {}  # mid -> PUBACK reason code
        self._cond = threading.Condition()
        client = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2,
                             client_id=self.client_id, protocol=paho.MQTTv5)
        if user is not None:
            client.username_pw_set(user, password)
        if ca is not None:  # TLS, verified against this CA (ssl errors raise from connect)
            import ssl

            client.tls_set_context(ssl.create_default_context(cafile=ca))
        client.on_connect = self._on_connect
        client.on_message = self._on_message
        client.on_publish = self._on_publish
        client.on_subscribe = self._on_subscribe
        self._subacks: dict[int, list[Any]] = {}
        self._refused: str | None = None
        self.client = client
        client.connect(host, port, keepalive=10)
        client.loop_start()
        self._wait(lambda: client.is_connected() or self._refused is not None, 10, "connect")
        if self._refused is not None:
            client.loop_stop()
            raise ConnectionRefusedError(self._refused)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _wait(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not check():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out waiting for {what}")
                self._cond.wait(min(left, 0.05))

    def subscribe(self, topic: str, qos: int = 1) -> list[Any]:
        _, mid = self.client.subscribe(topic, qos)
        self._wait(lambda: mid in self._subacks, 10, f"SUBACK for {topic}")
        return self._subacks[mid]

    def publish(self, topic: str, payload: str | bytes, *, response_topic: str | None = None,
                correlation: bytes | None = None, qos: int = 1, retain: bool = False) -> int:
        """Publish and wait for the broker's PUBACK; returns its reason code (135: refused)."""
        info = self.client.publish(topic, payload, qos=qos, retain=retain,
                                   properties=publish_properties(response_topic, correlation))
        self._wait(lambda: info.mid in self.acks, 10, f"PUBACK for {topic}")
        return self.acks[info.mid]

    def on(self, topic: str) -> list[Got]:
        with self._cond:
            return [m for m in self.messages if m.topic == topic]

    def wait_for(self, check: Callable[[list[Got]], bool], timeout: float = 10.0,
                 what: str = "messages") -> list[Got]:
        self._wait(lambda: check(self.messages), timeout, what)
        with self._cond:
            return list(self.messages)

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any,
                    properties: Any) -> None:
        if reason.is_failure:
            with self._cond:
                self._refused = str(reason)
                self._cond.notify_all()
            client.disconnect()

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        props = getattr(message, "properties", None)
        got = Got(message.topic, message.payload, bool(message.retain),
                  getattr(props, "CorrelationData", None) if props is not None else None)
        with self._cond:
            self.messages.append(got)
            self._cond.notify_all()

    def _on_publish(self, client: Any, userdata: Any, mid: int, reason: Any,
                    properties: Any) -> None:
        with self._cond:
            self.acks[mid] = int(getattr(reason, "value", reason))
            self._cond.notify_all()

    def _on_subscribe(self, client: Any, userdata: Any, mid: int, reasons: Any,
                      properties: Any) -> None:
        with self._cond:
            self._subacks[mid] = list(reasons)
            self._cond.notify_all()
