"""``shotclock-bridge``: one table's hardware on its own Pi, driven by a service elsewhere.

The bridge follows the table over the service's WebSocket (``/ws/tables/<id>``): it keeps
the latest state (the snapshot, then the ``state`` of every event) and hands it to the same
:class:`~firmware_bridge.driver.DeviceDriver` as the in-process bridge, so the digits and
tones are exactly those of ``shotclock serve``. Button presses go back as WebSocket
commands, with the referee token as the ``bearer.<token>`` subprotocol.

Timing: the deadline in the state is on the server's clock (unix ms). The bridge measures
the offset between its own clock and the server's with ping/pong (NTP-style, keeping the
sample with the shortest round trip) and renders on the server's timeline, so a Pi whose
clock is off by seconds still shows the right digits.

Faults: the connection is retried forever with exponential backoff and ``?since=<last
seq>``, so nothing is missed. The link is checked every 0.5 s (an application ping): when
nothing has been heard for LINK_LOST_MS, or the connection drops, the display switches to
its offline style within 1.5 s (issue 10, defect 9): the digits keep the estimate from the
last deadline but blink the colon (a LINK LED on the controller) and sound nothing, so they
no longer claim to be the clock. On reconnect the snapshot resyncs them; the old clock
offset is kept until a new one is measured, so the digits never jump by the offset.

Presses carry their time (``at``, on the service's timeline): the service refuses one older
than 2 s (409 stale_press), so a press the bridge gave up on (no answer within
COMMAND_TIMEOUT_S) is never applied later (issue 10, defect 8). A press while
disconnected is dropped. Either way, and on any refusal, the buzzer gives its "refused"
pips.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import itertools
import json
import logging
import signal
import sys
from collections import deque
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from clock_service.core.commands import PRESS_STALE_MS
from clock_service.service.timesource import RealTime, Timer
from clock_service.service.tls import client_context
from firmware_bridge.bridge import command_for_press
from firmware_bridge.driver import DeviceDriver
from firmware_bridge.interfaces import ButtonPress, Buttons, Buzzer, Display

__all__ = ["ClockOffset", "ServerTime", "RemoteBridge", "main"]

log = logging.getLogger(__name__)

# Replayed warnings/expiries (missed during a short outage) still sound if this recent.
FRESH_EVENT_MS = 1500.0
# The link: an application ping this often; silence this long shows the offline style.
PING_INTERVAL_S = 0.5
LINK_LOST_MS = 1000.0
# Silence this long closes the connection to reconnect (the WebSocket ping may be slower).
LINK_DEAD_MS = 3000.0
# A press unanswered this long is reported lost: the service refuses it after 2 s anyway.
COMMAND_TIMEOUT_S = PRESS_STALE_MS / 1000 + 0.5


class ClockOffset:
    """The server clock minus the local clock, from ping/pong samples.

    Each sample assumes the server read its clock half-way through the round trip; the
    error is at most half the round trip, so the sample with the shortest one of the last
    ``keep`` wins.
    """

    def __init__(self, keep: int = 8) -> None:
        self.samples: deque[tuple[float, float]] = deque(maxlen=keep)  # (rtt, offset)
        self._stale = False

    def add(self, sent_ms: float, server_ms: float, received_ms: float) -> None:
        rtt = received_ms - sent_ms
        if rtt < 0:
            raise ValueError(f"pong received before its ping was sent ({rtt} ms)")
        if self._stale:  # the first sample of a new connection replaces the old ones
            self.samples.clear()
            self._stale = False
        self.samples.append((rtt, server_ms - (sent_ms + received_ms) / 2))

    def restart(self) -> None:
        """A new connection (perhaps a restarted service with its own timeline): keep the
        old offset until the first new sample, so the digits never jump meanwhile."""
        self._stale = bool(self.samples)

    @property
    def offset_ms(self) -> float:
        return min(self.samples)[1] if self.samples else 0.0

    @property
    def rtt_ms(self) -> float | None:
        return min(self.samples)[0] if self.samples else None


class ServerTime:
    """A time source on the server's timeline: the local clock plus the measured offset."""

    def __init__(self, offset: ClockOffset | None = None) -> None:
        self.local = RealTime()
        self.offset = offset or ClockOffset()

    def local_ms(self) -> float:
        return self.local.now_ms()

    def now_ms(self) -> float:
        return self.local.now_ms() + self.offset.offset_ms

    def call_at(self, at_ms: float, callback: Callable[[], None]) -> Timer:
        return self.local.call_at(at_ms - self.offset.offset_ms, callback)


class RemoteBridge:
    def __init__(
        self, server: str, table_id: str, *, token: str | None = None,
        display: Display | None = None, buzzer: Buzzer | None = None,
        buttons: Buttons | None = None, backoff_min_s: float = 0.1, backoff_max_s: float = 5.0,
        ping_interval_s: float = PING_INTERVAL_S, command_timeout_s: float = COMMAND_TIMEOUT_S,
        link_lost_ms: float = LINK_LOST_MS, time: ServerTime | None = None,
    ) -> None:
        if not server.startswith(("ws://", "wss://")):
            raise ValueError(f"server must be a ws:// or wss:// URL, got {server!r}")
        if backoff_min_s <= 0 or backoff_max_s < backoff_min_s:
            raise ValueError(f"need 0 < backoff_min_s <= backoff_max_s, got "
                             f"{backoff_min_s=}, {backoff_max_s=}")
        self.url = f"{server.rstrip('/')}/ws/tables/{table_id}"
        self.table_id = table_id
        self.token = token
        self.time = time or ServerTime()
        self.driver = DeviceDriver(self.time, display=display, buzzer=buzzer)
        self.buttons = buttons
        self.backoff_min_s = backoff_min_s
        self.backoff_max_s = backoff_max_s
        self.ping_interval_s = ping_interval_s
        self.command_timeout_s = command_timeout_s
        self.link_lost_ms = link_lost_ms
        self._last_heard: float | None = None  # local ms of the last message from the service
        self.outages = 0
        self.last_seq: int | None = None
        self.connects = 0
        self.referee = False
        self.refusals: list[str] = []
        self.lost_presses = 0
        self._ws: Any = None
        self._ids = itertools.count(1)
        self._pings: dict[str, float] = {}  # id -> local send time
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._replay_until = 0
        self._seen_until = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self.connected = asyncio.Event()

    @property
    def state(self) -> dict[str, Any]:
        return self.driver.state

    @property
    def online(self) -> bool:
        return not self.driver.offline

    # -- the connection ------------------------------------------------------------------------
    async def run(self) -> None:
        """Follow the table until cancelled; reconnects forever with backoff."""
        from websockets.asyncio.client import connect

        self._loop = asyncio.get_running_loop()
        if self.buttons is not None:
            try:
                self.buttons.start(self.on_press_threadsafe)
            except Exception:
                log.exception("table %s: buttons failed to start", self.table_id)
        backoff = self.backoff_min_s
        subprotocols = [f"bearer.{self.token}"] if self.token else None
        self.driver.set_offline(True)  # until the first snapshot: nothing here is the truth
        watchdog = asyncio.create_task(self._link_watchdog())
        # The service's own origin: a socket without Origin (or the token) is read-only.
        split = urlsplit(self.url)
        origin = f"{'https' if split.scheme == 'wss' else 'http'}://{split.netloc}"
        try:
            while True:
                url = self.url if self.last_seq is None else f"{self.url}?since={self.last_seq}"
                try:
                    # WebSocket pings too (1 s, 1.5 s timeout): a half-open TCP connection
                    # is dropped within 2.5 s even if the application ping were stuck.
                    async with connect(url, subprotocols=subprotocols,  # type: ignore[arg-type]
                                       origin=origin,  # type: ignore[arg-type]
                                       # wss://: the hall's TLS policy, the system's CAs
                                       ssl=client_context() if split.scheme == "wss" else None,
                                       open_timeout=3, ping_interval=1.0, ping_timeout=1.5,
                                       max_size=2**20) as ws:
                        self.connects += 1
                        log.info("table %s: connected to %s", self.table_id, url)
                        backoff = self.backoff_min_s
                        await self._session(ws)
                    reason = "closed by the server"
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - any failure means: retry
                    reason = f"{type(exc).__name__}: {exc}"
                finally:
                    self._disconnected()
                log.warning("table %s: connection to %s lost (%s); retrying in %.1f s",
                            self.table_id, self.url, reason, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.backoff_max_s)
        finally:
            watchdog.cancel()
            self.close()

    async def _link_watchdog(self) -> None:
        """Offline style as soon as the service is silent for ``link_lost_ms`` (defect 9);
        a connection silent for LINK_DEAD_MS is closed so the reconnect starts."""
        while True:
            await asyncio.sleep(0.1)
            heard = self._last_heard
            if self._ws is None or heard is None:
                continue
            silent = self.time.local_ms() - heard
            if silent >= self.link_lost_ms and not self.driver.offline:
                self._go_offline(f"nothing heard for {silent:.0f} ms")
            if silent >= LINK_DEAD_MS:
                log.warning("table %s: link silent for %.1f s; reconnecting",
                            self.table_id, silent / 1000)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._ws.close(), 0.5)

    def _go_offline(self, why: str) -> None:
        if not self.driver.offline:
            self.outages += 1
            log.warning("table %s: link to the service lost (%s): the display shows it",
                        self.table_id, why)
        self.driver.set_offline(True)

    def close(self) -> None:
        if self.buttons is not None:
            try:
                self.buttons.close()
            except Exception:
                log.exception("closing %r failed", self.buttons)
            self.buttons = None
        self.driver.close()

    def _disconnected(self) -> None:
        self._ws = None
        self._last_heard = None
        self.connected.clear()
        self._go_offline("disconnected")
        self.time.offset.restart()
        self._pings.clear()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionError("connection to the service lost"))
        self._pending.clear()

    async def _session(self, ws: Any) -> None:
        self._ws = ws
        pinger = asyncio.create_task(self._ping_loop(ws))
        try:
            async for text in ws:
                self.on_message(json.loads(text))
        finally:
            pinger.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pinger

    async def _ping_loop(self, ws: Any) -> None:
        # A burst at connect for a good first offset, then every ping_interval_s: the
        # offset's drift, and the link check (the service's pongs are what we hear).
        for _ in range(4):
            await self._ping(ws)
            await asyncio.sleep(0.05)
        while True:
            await asyncio.sleep(self.ping_interval_s)
            await self._ping(ws)

    async def _ping(self, ws: Any) -> None:
        ping_id = f"p{next(self._ids)}"
        sent = self.time.local_ms()
        self._pings[ping_id] = sent
        await ws.send(json.dumps({"type": "ping", "id": ping_id, "client_time": sent}))

    # -- from the service ----------------------------------------------------------------------
    def on_message(self, message: dict[str, Any]) -> None:
        self._last_heard = self.time.local_ms()
        kind = message.get("type")
        if kind == "snapshot":
            # The state as of seq N; replayed events up to N follow (already in it).
            seq = int(message["seq"])
            self._seen_until = self.last_seq if self.last_seq is not None else seq
            self._replay_until = seq
            self.last_seq = seq
            self.referee = bool(message.get("referee"))
            self.driver.offline = False  # the snapshot is the truth again: redraw it
            self.driver.update(message["state"], sound=False)
            self.connected.set()
        elif kind == "pong":
            sent = self._pings.pop(str(message.get("id")), None)
            if sent is not None and isinstance(message.get("server_time"), int | float):
                self.time.offset.add(sent, float(message["server_time"]), self.time.local_ms())
            if self.connected.is_set():
                self.driver.set_offline(False)  # heard again after a silence
            self.driver.redraw()  # the timeline may have moved: re-aim the redraw timer
        elif kind in ("ack", "error"):
            future = self._pending.pop(str(message.get("id")), None)
            if future is not None and not future.done():
                future.set_result(message)
            elif kind == "error":
                log.warning("table %s: service says: %s", self.table_id, message.get("error"))
        elif isinstance(message.get("seq"), int) and isinstance(message.get("data"), dict):
            self._on_event(message)  # replayed events (?since=) come without the state

    def _on_event(self, event: dict[str, Any]) -> None:
        seq = int(event["seq"])
        if seq <= self._seen_until:
            return  # heard before the reconnect
        if seq <= self._replay_until:
            # Missed while away; the snapshot already holds its state. Sound it only if
            # it is recent enough to mean something at the table.
            fresh = self.time.now_ms() - float(event.get("at", 0)) < FRESH_EVENT_MS
            if fresh:
                self.driver.update(self.driver.state, [event])
            return
        state = event.get("state")
        if not isinstance(state, dict):
            return  # live events carry the state; one without it is not news to draw
        self.last_seq = seq
        self.driver.update(state, [event])

    # -- commands ------------------------------------------------------------------------------
    async def command(self, name: str, **fields: Any) -> dict[str, Any]:
        """Send a command; returns the service's ``ack`` or ``error`` message."""
        ws = self._ws
        if ws is None:
            raise ConnectionError(f"not connected to {self.url}")
        msg_id = f"c{next(self._ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        await ws.send(json.dumps({"type": "command", "id": msg_id, "command": name, **fields}))
        try:
            return await asyncio.wait_for(future, self.command_timeout_s)
        finally:
            self._pending.pop(msg_id, None)

    def on_press_threadsafe(self, press: ButtonPress) -> None:
        loop = self._loop
        if loop is not None:
            loop.call_soon_threadsafe(self.on_press, press)

    def on_press(self, press: ButtonPress) -> None:
        if press.long:
            self.driver.buzz("chirp")  # the hold registered: the correction is on its way
        command = command_for_press(press, str(self.state.get("phase", "")))
        if command is None:
            return
        if self._ws is None:
            self.driver.buzz("refused")
            log.warning("table %s: %s pressed while disconnected; dropped",
                        self.table_id, command.name)
            return
        # The press time (at) is on the service's timeline already: the buttons are
        # timestamped with this bridge's ServerTime (local clock + measured offset).
        fields = {k: v for k, v in dataclasses.asdict(command).items() if v is not None}
        task = asyncio.ensure_future(self.command(command.name, **fields))
        task.add_done_callback(lambda t: self._after_press(command.name, t))

    def _after_press(self, name: str, task: asyncio.Future[dict[str, Any]]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            # Not answered in time: the service refuses a press older than 2 s, so it
            # was applied at once or never; it will not be applied late.
            self.lost_presses += 1
            self.driver.buzz("refused")
            log.error("table %s: %s press not confirmed (%r); the service never applies a "
                      "press more than %d ms old", self.table_id, name, exc, PRESS_STALE_MS)
            return
        reply = task.result()
        if reply.get("type") == "error":
            error = reply.get("error") or {}
            self.refusals.append(str(error.get("message", error)))
            self.driver.buzz("refused")
            log.info("table %s: %s press refused: %s", self.table_id, name,
                     error.get("message", error))


EX_CONFIG = 78  # as ``shotclock serve``: the unit's RestartPreventExitStatus


def main(argv: list[str] | None = None) -> int:
    from clock_service.service.sdnotify import Watchdog
    from clock_service.service.settings import Settings
    from firmware_bridge.config import build_devices, load_config, permission_problems
    from firmware_bridge.errors import HardwareConfigError

    settings = Settings.from_env()
    parser = argparse.ArgumentParser(
        prog="shotclock-bridge",
        description="Drive this table's display, buzzer and buttons from a remote shot clock "
                    "service (hardware from SHOTCLOCK_HARDWARE / SHOTCLOCK_HARDWARE_CONFIG).",
    )
    parser.add_argument("--server", default=settings.bridge_server,
                        help="the service, e.g. ws://hall:8000 (env SHOTCLOCK_SERVER)")
    parser.add_argument("--table", default=settings.bridge_table,
                        help="table id (env SHOTCLOCK_TABLE; default: the config's table_id)")
    parser.add_argument("--token", default=settings.referee_token,
                        help="referee token, needed for the buttons when the service has one "
                             "(env SHOTCLOCK_REFEREE_TOKEN)")
    parser.add_argument("--log-level", default="info",
                        choices=["critical", "error", "warning", "info", "debug"])
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not args.server or not args.server.startswith(("ws://", "wss://")):
        print("shotclock-bridge: not configured: set SHOTCLOCK_SERVER=ws://<hall>:8000 in "
              "/etc/shotclock/env (or --server)", file=sys.stderr)
        return EX_CONFIG
    try:
        config = load_config()
    except HardwareConfigError as exc:
        print(f"shotclock-bridge: hardware configuration refused: {exc}", file=sys.stderr)
        return EX_CONFIG
    table_id = args.table or config.table_id
    for _device, _group, message in permission_problems(config):
        log.warning("table %s: %s", table_id, message)

    async def run() -> None:
        time = ServerTime()

        def device_failed(name: str, exc: Exception) -> None:
            log.error("table %s: %s failed to open (%s: %s); running without it",
                      table_id, name, type(exc).__name__, exc)

        display: Display | None
        display, buzzer, buttons = build_devices(config, now_ms=time.now_ms,
                                                 on_error=device_failed)
        if config.kind == "none":
            from firmware_bridge.terminal import TerminalDisplay

            display = TerminalDisplay(table_id)
        bridge = RemoteBridge(args.server, table_id, token=args.token, display=display,
                              buzzer=buzzer, buttons=buttons, time=time)
        if config.self_test and config.kind != "none":
            bridge.driver.self_test()
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)
        watchdog = Watchdog()
        watchdog.start(f"following table {table_id} at {args.server}")
        try:
            await bridge.run()
        finally:
            await watchdog.stop()

    with contextlib.suppress(asyncio.CancelledError, KeyboardInterrupt):
        asyncio.run(run())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
