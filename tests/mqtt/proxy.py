"""A TCP relay between an MQTT client and the broker, in its own thread, that can hold back
the broker's next SUBACK: the moment a connection is between SUBSCRIBE and SUBACK is then
as long as a test needs (issue 20, finding 1: a client taking over the connection's id
just then cancelled the SUBACK future, and the CancelledError ended the loop for good).
It also keeps what went through it, as a relay on the venue's Wi-Fi would."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from tests.server import free_port

__all__ = ["Relay"]

SUBACK = 0x90


def _packets(buffer: bytearray) -> list[bytes]:
    """Whole MQTT packets at the front of ``buffer`` (removed from it)."""
    out: list[bytes] = []
    while len(buffer) >= 2:
        length, multiplier, i = 0, 1, 1
        while True:
            if i >= len(buffer):
                return out
            byte = buffer[i]
            length += (byte & 0x7F) * multiplier
            multiplier *= 128
            i += 1
            if not byte & 0x80:
                break
        if len(buffer) < i + length:
            return out
        out.append(bytes(buffer[:i + length]))
        del buffer[:i + length]
    return out


class Relay:
    def __init__(self, broker_port: int, *, mqtt: bool = True) -> None:
        self.broker_port = broker_port
        self.mqtt = mqtt  # False: bytes relayed as they come (TLS), no SUBACK holding
        self.port = free_port()
        self.hold_suback = threading.Event()  # set: drop the next SUBACK, then clear
        self.held = threading.Event()  # a SUBACK was dropped
        self.seen = bytearray()  # every byte either way
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: Any = None
        self._tasks: set[asyncio.Task[Any]] = set()

    def start(self) -> Relay:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def stop(self) -> None:
        """Close the listener and every relayed connection, then end the thread."""
        async def shutdown() -> None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._client, "127.0.0.1", self.port))
        self._ready.set()
        self._loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.broker_port)
        except OSError:
            writer.close()
            return

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter,
                       down: bool) -> None:
            buffer = bytearray()
            try:
                while data := await src.read(65536):
                    self.seen += data
                    if not down or not self.mqtt:
                        dst.write(data)
                        await dst.drain()
                        continue
                    buffer += data
                    for packet in _packets(buffer):
                        if packet[0] & 0xF0 == SUBACK and self.hold_suback.is_set():
                            self.hold_suback.clear()
                            self.held.set()
                            continue
                        dst.write(packet)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                dst.close()

        await asyncio.gather(pump(reader, up_writer, False), pump(up_reader, writer, True))
