"""Drives one table's local devices (display, buzzer, buttons) from the runtime.

The runtime tells the bridge of every event at once (before the store write); the bridge
hands the state to its :class:`~firmware_bridge.driver.DeviceDriver`, which redraws the
display exactly when its digits change and sounds the buzzer (shared with the remote
bridge in ``remote.py``). Button presses arrive from driver threads and hop onto the event loop
with ``call_soon_threadsafe``; the core is only ever touched from the loop.
A device that fails is logged and skipped; it never raises into the clock.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from clock_service.core.commands import Command, Extension, Pause, Resume, Shot, Start, Turn, Undo
from clock_service.core.errors import ShotClockError
from clock_service.core.readout import DisplayFrame
from clock_service.core.transitions import ClockPhase
from clock_service.service.runtime import Runtime
from firmware_bridge.driver import DeviceDriver
from firmware_bridge.interfaces import ButtonPress, Buttons, Buzzer, Display

__all__ = ["TableBridge", "command_for_press"]

log = logging.getLogger(__name__)


def command_for_press(press: ButtonPress, phase: str) -> Command | None:
    """One button per job (SPEC "Hardware"): start/shot toggles by phase; pause toggles;
    a long press of start/shot takes back the last step (a correction, logged). Every
    command carries the press's first-edge time and where it came from (the envelope)."""
    envelope: dict[str, Any] = {"at": press.at_ms, "source": press.source}
    if press.button == "start_shot":
        if press.long:
            return Undo(by="referee", reason="long press of start/shot", source=press.source)
        if phase in (ClockPhase.READY, ClockPhase.EXPIRED):
            return Start(**envelope)
        if phase in (ClockPhase.RUNNING, ClockPhase.PAUSED):
            return Shot(**envelope)
        return None
    if press.button == "extension":
        return Extension(**envelope)
    if press.button in ("extension_p1", "extension_p2"):
        return Extension(player=0 if press.button == "extension_p1" else 1, **envelope)
    if press.button == "turn":
        return Turn(**envelope)
    if press.button == "pause":
        return Resume(**envelope) if phase == ClockPhase.PAUSED else Pause(**envelope)
    return None


class TableBridge:
    """One table's devices in the service's own process (``shotclock serve``).

    It attaches by table id, so a table created after start-up is picked up from its first
    events (``table.created`` carries the full state).
    """

    def __init__(
        self, runtime: Runtime, table_id: str, *, display: Display | None = None,
        buzzer: Buzzer | None = None, buttons: Buttons | None = None,
    ) -> None:
        self.runtime = runtime
        self.table_id = table_id
        self.driver = DeviceDriver(runtime.time, display=display, buzzer=buzzer)
        self.buttons = buttons
        self.refusals: list[str] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def state(self) -> dict[str, Any]:
        return self.driver.state

    @property
    def last_frame(self) -> DisplayFrame | None:
        return self.driver.last_frame

    def attach(self, *, self_test: bool = False) -> None:
        """Call on the event loop after the runtime started. ``self_test``: light every
        segment and chirp first (the boot self-test), then show the clock."""
        self._loop = asyncio.get_running_loop()
        if self_test:
            self.driver.self_test()
        self.runtime.listen(self.on_events)
        if self.table_id in self.runtime.tables:
            self.driver.update(self.runtime.state(self.table_id))
        else:
            log.info("table %s does not exist yet; its devices wake up when it is created",
                     self.table_id)
        if self.buttons is not None:
            try:
                self.buttons.start(self.on_press_threadsafe)
            except Exception:
                log.exception("table %s: buttons failed to start", self.table_id)

    def close(self) -> None:
        self.runtime.unlisten(self.on_events)
        if self.buttons is not None:
            try:
                self.buttons.close()
            except Exception:
                log.exception("closing %r failed", self.buttons)
        self.driver.close()

    # -- from the runtime (loop thread) ----------------------------------------------------
    def on_events(self, table_id: str, events: list[dict[str, Any]], state: dict[str, Any]) -> None:
        if table_id == self.table_id:
            self.driver.update(state, events)

    # -- from the buttons (any thread) --------------------------------------------------------
    def on_press_threadsafe(self, press: ButtonPress) -> None:
        loop = self._loop
        if loop is None:
            return
        loop.call_soon_threadsafe(self.on_press, press)

    def on_press(self, press: ButtonPress) -> None:
        if press.long:
            self.driver.buzz("chirp")  # the hold registered: the correction is on its way
        command = command_for_press(press, str(self.state.get("phase", "")))
        if command is None:
            return
        task = asyncio.ensure_future(self.runtime.command(self.table_id, command))
        task.add_done_callback(self._after_press)

    def _after_press(self, task: asyncio.Future[Any]) -> None:
        exc = task.exception()
        if isinstance(exc, ShotClockError):
            # A refused press: the display keeps the true state, the buzzer says "no"
            # (three short pips, unlike any clock tone), the log says why.
            self.refusals.append(exc.message)
            self.driver.buzz("refused")
            log.info("table %s: button press refused: %s", self.table_id, exc.message)
        elif exc is not None:
            log.error("table %s: button press failed: %r", self.table_id, exc)
