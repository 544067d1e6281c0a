"""The benchmark's lean WebSocket client (bench.py's observers, bench_mqtt.py's table
watchers): a thousand of them share one core."""

from __future__ import annotations

import asyncio
import base64
import os
import time
from typing import Any

__all__ = ["Observer"]


class Observer(asyncio.Protocol):
    """A lean WebSocket client for the observers (a thousand of them share one core):
    handshake, then frames parsed just enough to read each event's seq. Server frames are
    unmasked; pings are answered (masked pong) so uvicorn keeps the connection."""

    def __init__(self, path: str, on_event: Any) -> None:
        self.path = path
        self.on_event = on_event
        self.buffer = b""
        self.upgraded = False
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None
        self.snapshot = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        key = base64.b64encode(os.urandom(16)).decode()
        # The service answers only to its own names and addresses (clock_service/service/
        # hosts.py): name it by the address connected to.
        host, port = transport.get_extra_info("peername")[:2]
        transport.write((f"GET {self.path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                         "Upgrade: websocket\r\n"
                         f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                         "Sec-WebSocket-Version: 13\r\n\r\n").encode())

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        buffer = self.buffer + data
        if not self.upgraded:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                self.buffer = buffer
                return
            if not buffer.startswith(b"HTTP/1.1 101"):
                self.opened.set_exception(ConnectionError(buffer[:200].decode(errors="replace")))
                return
            self.upgraded = True
            buffer = buffer[end + 4:]
        pos = 0
        size = len(buffer)
        while size - pos >= 2:
            opcode = buffer[pos] & 0x0F
            length = buffer[pos + 1] & 0x7F
            head = 2
            if length == 126:
                if size - pos < 4:
                    break
                length = int.from_bytes(buffer[pos + 2:pos + 4], "big")
                head = 4
            elif length == 127:
                if size - pos < 10:
                    break
                length = int.from_bytes(buffer[pos + 2:pos + 10], "big")
                head = 10
            if size - pos < head + length:
                break
            start = pos + head
            pos = start + length
            if opcode == 1:
                if not self.snapshot:  # the first message is the snapshot
                    self.snapshot = True
                    self.opened.set_result(None)
                    continue
                i = buffer.find(b'"seq":', start, pos) + 6
                j = buffer.find(b",", i, pos)
                self.on_event(int(buffer[i:j]), now)
            elif opcode == 9 and self.transport is not None:  # ping -> pong
                payload = buffer[start:pos]
                self.transport.write(bytes([0x8A, 0x80 | len(payload)]) + b"\0\0\0\0" + payload)
            elif opcode == 8 and self.transport is not None:
                self.transport.close()
        self.buffer = buffer[pos:]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.opened.done():
            self.opened.set_exception(exc or ConnectionError("closed"))
        if not self.closed.done():
            self.closed.set_result(None)
