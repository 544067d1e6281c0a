"""Drives one table's local devices (display, buzzer, buttons) from the runtime.

The runtime tells the bridge of every event at once (before the store write). The bridge
keeps the latest state and redraws the display exactly when its digits change (a timer
at ``next_change_ms``, derived from the deadline), beeps at warnings and sounds the long
tone at expiry. Button presses arrive from driver threads and hop onto the event loop
with ``call_soon_threadsafe``; the core is only ever touched from the loop.
A device that fails is logged and skipped; it never raises into the clock.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from clock_service.commands import Command, Extension, Pause, Resume, Shot, Start, Turn, Undo
from clock_service.errors import ShotClockError
from clock_service.runtime import Runtime
from clock_service.timesource import Timer
from firmware_bridge.interfaces import ButtonPress, Buttons, Buzzer, Display
from firmware_bridge.render import DisplayFrame, next_change_ms, render

__all__ = ["TableBridge", "command_for_press"]

log = logging.getLogger(__name__)


def command_for_press(press: ButtonPress, phase: str) -> Command | None:
    """One button per job (SPEC "Hardware"): start/shot toggles by phase; pause toggles;
    a long press of start/shot takes back the last step (a correction, logged)."""
    if press.button == "start_shot":
        if press.long:
            return Undo(by="button", reason="long press of start/shot")
        if phase in ("ready", "expired"):
            return Start()
        if phase in ("running", "paused"):
            return Shot()
        return None
    if press.button == "extension":
        return Extension()
    if press.button == "turn":
        return Turn()
    if press.button == "pause":
        return Resume() if phase == "paused" else Pause()
    return None


class TableBridge:
    def __init__(
        self, runtime: Runtime, table_id: str, *, display: Display | None = None,
        buzzer: Buzzer | None = None, buttons: Buttons | None = None,
    ) -> None:
        self.runtime = runtime
        self.table_id = table_id
        self.display = display
        self.buzzer = buzzer
        self.buttons = buttons
        self.state: dict[str, Any] = {}
        self.last_frame: DisplayFrame | None = None
        self.refusals: list[str] = []
        self._timer: Timer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def attach(self) -> None:
        """Call on the event loop after the runtime started."""
        self._loop = asyncio.get_running_loop()
        self.runtime.listeners.append(self.on_events)
        if self.table_id in self.runtime.tables:
            self.state = self.runtime.state(self.table_id)
            self.redraw()
        if self.buttons is not None:
            self.buttons.start(self.on_press_threadsafe)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for device in (self.buttons, self.display, self.buzzer):
            if device is not None:
                try:
                    device.close()
                except Exception:
                    log.exception("closing %r failed", device)

    # -- from the runtime (loop thread) ----------------------------------------------------
    def on_events(self, table_id: str, events: list[dict[str, Any]], state: dict[str, Any]) -> None:
        if table_id != self.table_id:
            return
        self.state = state
        for event in events:
            if event["type"] == "clock.warning":
                self._buzz("beep")
            elif event["type"] == "clock.expired":
                self._buzz("long_tone")
        self.redraw()

    def _buzz(self, kind: str) -> None:
        if self.buzzer is None:
            return
        try:
            getattr(self.buzzer, kind)()
        except Exception:
            log.exception("buzzer %s failed", kind)

    def redraw(self) -> None:
        now = self.runtime.time.now_ms()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        frame = render(self.state, now)
        if frame != self.last_frame and self.display is not None:
            try:
                self.display.show(frame)
            except Exception:
                log.exception("display failed")
        self.last_frame = frame
        wake = next_change_ms(self.state, now)
        if wake is not None:
            self._timer = self.runtime.time.call_at(wake, self.redraw)

    # -- from the buttons (any thread) --------------------------------------------------------
    def on_press_threadsafe(self, press: ButtonPress) -> None:
        loop = self._loop
        if loop is None:
            return
        loop.call_soon_threadsafe(self.on_press, press)

    def on_press(self, press: ButtonPress) -> None:
        command = command_for_press(press, str(self.state.get("phase", "")))
        if command is None:
            return
        task = asyncio.ensure_future(self.runtime.command(self.table_id, command))
        task.add_done_callback(self._after_press)

    def _after_press(self, task: asyncio.Future[Any]) -> None:
        exc = task.exception()
        if isinstance(exc, ShotClockError):
            # A refused press: the display keeps the true state; the log says why.
            self.refusals.append(exc.message)
            log.info("table %s: button press refused: %s", self.table_id, exc.message)
        elif exc is not None:
            log.error("table %s: button press failed: %r", self.table_id, exc)
