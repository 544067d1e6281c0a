"""Helpers for the fault tests: the service with chosen settings (in a thread of the test,
or a process where the process is what is tested), WebSocket clients."""

from __future__ import annotations

import base64
import json
import os
import socket
from pathlib import Path
from typing import Any

from harness.server import Service
from harness.thread_server import ThreadServer
from tests.server import ServerProcess, http

# Short and plain: the tests drive the clock in real time.
SHORT_PROFILE = {"shot_ms": 1500, "floor_ms": 1000, "full_rounds": 100, "extension_ms": 1000,
                 "warnings_ms": [500]}


# The per-address limits off and no token, unless a test says otherwise.
BASE = {"SHOTCLOCK_COMMAND_RATE": "0", "SHOTCLOCK_READ_RATE": "0", "SHOTCLOCK_MESSAGE_RATE": "0",
        "SHOTCLOCK_HANDSHAKE_RATE": "0", "SHOTCLOCK_REFEREE_TOKEN": ""}


def start_server(tmp: Path, **env: str) -> ThreadServer:
    """The service in a thread of the test (harness/thread_server.py)."""
    return ThreadServer(tmp / "faults.db", env={**BASE, **env}).start()


def start_process(tmp: Path, **env: str) -> ServerProcess:
    """``shotclock serve`` in a process of its own: to kill it."""
    return ServerProcess(tmp / "faults.db", env={**BASE, **env}).start()


def freeze_buckets(monkeypatch: Any) -> None:
    """The per-address token buckets (clock_service/service/limits.py) of a service in this
    process stop refilling: their clock stands still from now on, so what a test spends
    stays spent however long its requests take on this machine."""
    import time

    from clock_service.service import limits

    now = time.monotonic()
    monkeypatch.setattr(limits, "time", type("Frozen", (), {"monotonic": staticmethod(
        lambda: now)}))


def create_table(server: Service, table_id: str, token: str | None = None,
                 **extra: Any) -> dict[str, Any]:
    body = {"id": table_id, "players": ["Ivanov", "Petrov"], "profile": SHORT_PROFILE, **extra}
    status, state = server.post("/api/tables", body, token=token)
    assert status == 201, (status, state)
    return state


def all_events(server: Service, table_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while True:
        status, page = http("GET", f"{server.url}/api/tables/{table_id}/events"
                                   f"?since={events[-1]['seq'] if events else 0}&limit=10000")
        assert status == 200, (status, page)
        if not page:
            return events
        events += page


def decode(text: str | bytes) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(text)
    return message


class RawWebSocket:
    """A WebSocket client on a plain blocking socket, for a client that stops reading at
    the TCP level: nothing reads the socket until :meth:`read_until_closed` is called, and
    its receive buffer is tiny, so the server's writes back up quickly."""

    def __init__(self, server: Service, path: str, rcvbuf: int = 2048) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.connect(("127.0.0.1", server.port))
        self.sock.settimeout(5.0)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                           "Upgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += self._recv()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), head
        first = self.next_frame()
        assert first is not None and first[0] == 1
        self.snapshot = decode(first[1])

    def has_more(self) -> bool:
        """Something after what was read has arrived (peeked at: nothing is consumed)."""
        try:
            return bool(self.buffer) or bool(
                self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except BlockingIOError:
            return False

    def _recv(self) -> bytes:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed without a close frame")
        return chunk

    def next_frame(self) -> tuple[int, bytes] | None:
        while True:
            buf = self.buffer
            length, head = (buf[1] & 0x7F, 2) if len(buf) >= 2 else (-1, 2)
            if length == 126:
                length, head = (int.from_bytes(buf[2:4], "big"), 4) if len(buf) >= 4 else (-1, 4)
            elif length == 127:
                length, head = (int.from_bytes(buf[2:10], "big"), 10) if len(buf) >= 10 \
                    else (-1, 10)
            if length >= 0 and len(buf) >= head + length:
                self.buffer = buf[head + length:]
                return buf[0] & 0x0F, buf[head:head + length]
            self.buffer += self._recv()

    def read_until_closed(self) -> tuple[list[dict[str, Any]], int, str]:
        """Every message still buffered, then the close frame's code and reason."""
        messages = []
        while True:
            frame = self.next_frame()
            assert frame is not None
            opcode, payload = frame
            if opcode == 1:
                messages.append(decode(payload))
            elif opcode == 8:
                code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005
                return messages, code, payload[2:].decode(errors="replace")

    def close(self) -> None:
        self.sock.close()
