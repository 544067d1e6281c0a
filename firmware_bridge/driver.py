"""The table-side face of one clock: display redraws and buzzer tones from the state.

Shared by the in-process :class:`~firmware_bridge.bridge.TableBridge` and the remote
bridge (``remote.py``): both hand it the latest state and the events that led to it; it
redraws exactly when the digits change (a timer at ``next_change_ms``, derived from the
deadline), beeps at warnings and sounds the long tone at expiry (12.4). It never counts:
every frame is rendered from the deadline and the time source's ``now_ms``, which for the
remote bridge is the server's timeline (local clock plus the measured offset).
A device that fails is logged and skipped; nothing here raises into the caller.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from clock_service.core.readout import DisplayFrame, next_change_ms, render
from clock_service.service.timesource import Timer, TimeSource
from firmware_bridge.interfaces import Buzzer, Display

__all__ = ["DeviceDriver", "BUZZES", "SELF_TEST_TEXT", "SELF_TEST_MS"]

log = logging.getLogger(__name__)

# Which event sounds which tone.
BUZZES = {"clock.warning": "beep", "clock.expired": "long_tone"}
# The boot self-test: every segment and point lit (88:88 on a colon module), for this long.
SELF_TEST_TEXT = "8.8.8.8."
SELF_TEST_MS = 1000.0


class DeviceDriver:
    """Keeps one table's display and buzzer in step with its state. Loop thread only."""

    def __init__(
        self, time: TimeSource, *, display: Display | None = None, buzzer: Buzzer | None = None,
    ) -> None:
        self.time = time
        self.display = display
        self.buzzer = buzzer
        self.state: dict[str, Any] = {}
        self.last_frame: DisplayFrame | None = None
        self.offline = False  # remote bridge: the link to the service is down
        self._timer: Timer | None = None
        self._testing_until: float | None = None
        self._stopped = False

    def update(
        self, state: Mapping[str, Any], events: Iterable[Mapping[str, Any]] = (),
        *, sound: bool = True,
    ) -> None:
        """A new state and the events that led to it; ``sound=False`` redraws silently
        (events replayed after a reconnect that are too old to announce)."""
        self.state = dict(state)
        events = list(events)
        if events:
            self._testing_until = None  # the clock moved: the self-test gives way at once
        if sound:
            for event in events:
                kind = BUZZES.get(str(event.get("type")))
                if kind is not None:
                    self.buzz(kind)
        self.redraw()

    def set_offline(self, offline: bool) -> None:
        """The remote bridge lost (or regained) the service: redraw in the offline style."""
        if offline != self.offline:
            self.offline = offline
            self.redraw()

    def self_test(self, duration_ms: float = SELF_TEST_MS) -> None:
        """Boot self-test: all segments lit for ``duration_ms`` and a chirp, then the clock."""
        self._cancel()
        self._testing_until = self.time.now_ms() + duration_ms
        frame = DisplayFrame(SELF_TEST_TEXT, "off", 0)
        if self.display is not None:
            try:
                self.display.show(frame)
            except Exception:
                log.exception("display failed")
        self.last_frame = frame
        self.buzz("chirp")
        self._timer = self.time.call_at(self._testing_until, self.redraw)

    def buzz(self, kind: str) -> None:
        if self.buzzer is None:
            return
        try:
            getattr(self.buzzer, kind)()
        except Exception:
            log.exception("buzzer %s failed", kind)

    def blank(self) -> None:
        """The service is stopping: digits off now, and no more redraws (defect 6)."""
        self._cancel()
        self._stopped = True
        frame = DisplayFrame("", "off", int(self.state.get("player", 0) or 0))
        if self.display is not None and frame != self.last_frame:
            try:
                self.display.show(frame)
            except Exception:
                log.exception("display failed")
        self.last_frame = frame

    def redraw(self) -> None:
        self._cancel()
        if self._stopped:
            return
        now = self.time.now_ms()
        if self._testing_until is not None:
            if now < self._testing_until:
                self._timer = self.time.call_at(self._testing_until, self.redraw)
                return
            self._testing_until = None
        if not self.state:
            return
        frame = render(self.state, now)
        if self.offline:
            frame = dataclasses.replace(frame, offline=True)
        if frame != self.last_frame and self.display is not None:
            try:
                self.display.show(frame)
            except Exception:
                log.exception("display failed")
        self.last_frame = frame
        wake = next_change_ms(self.state, now)
        if wake is not None:
            self._timer = self.time.call_at(wake, self.redraw)

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def close(self) -> None:
        """Stop the redraw timer and close the devices (each on its own: one failing
        does not keep the other open)."""
        self._cancel()
        closed: list[int] = []
        for device in (self.display, self.buzzer):
            if device is None or id(device) in closed:  # a SerialDisplay is both
                continue
            closed.append(id(device))
            try:
                device.close()
            except Exception:
                log.exception("closing %r failed", device)
