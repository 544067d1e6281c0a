"""A USB HID clicker (presentation remote) or foot pedal as referee buttons (python-evdev).

Plug it into the Pi; it appears as ``/dev/input/by-id/usb-...-event-kbd``. The config maps
its keys to the table's buttons, e.g. a two-pedal footswitch sending PAGE DOWN and PAGE UP::

    [hid]
    device = "/dev/input/by-id/usb-PCsensor_FootSwitch-event-kbd"
    keys = { KEY_PAGEDOWN = "start_shot", KEY_PAGEUP = "pause" }

The mapping (:class:`HidKeymap`) is pure: evdev's key events in, ``ButtonPress`` out, so it
is tested with evdev's own ``InputEvent`` objects without a device. A key acts on key-down
(value 1; auto-repeat and release are ignored) and keeps the time the kernel stamped on
the event, moved onto the service's clock. A second press of the same button within
``double_press_ms`` of its last accepted one is ignored (a pedal's contact bounce, issue 23).
A HID key has no long press: corrections come
from the console or the GPIO start/shot button. The device is grabbed, so its keys do not
also type into a kiosk browser on the same Pi. The user needs the ``input`` group.
python-evdev is imported only when a device is configured.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from firmware_bridge.errors import HardwareConfigError
from firmware_bridge.interfaces import BUTTONS, DOUBLE_PRESS_MS, ButtonPress, PressGuard

__all__ = ["HidKeymap", "HidButtons", "EV_KEY", "KEY_DOWN"]

log = logging.getLogger(__name__)

EV_KEY = 0x01  # linux/input-event-codes.h
KEY_DOWN = 1  # 0 up, 1 down, 2 auto-repeat


class KeyEvent(Protocol):
    """What the keymap reads from an event: evdev's ``InputEvent`` has exactly these."""

    type: int
    code: int
    value: int

    def timestamp(self) -> float: ...


class HidKeymap:
    """Key names (``KEY_PAGEDOWN``) to table buttons; key codes from evdev's own table."""

    def __init__(self, keys: Mapping[str, str], codes: Mapping[str, int] | None = None,
                 *, source: str = "pedal", double_press_ms: float = DOUBLE_PRESS_MS) -> None:
        if not keys:
            raise HardwareConfigError("hid.keys is empty: map at least one key to a button")
        if codes is None:
            from evdev import ecodes  # lazy: only when a HID device is configured

            codes = ecodes.ecodes
        self.source = source
        try:
            self.guard = PressGuard(double_press_ms)
        except ValueError as exc:
            raise HardwareConfigError(f"hid: {exc}") from None
        self.buttons: dict[int, str] = {}
        for key, button in keys.items():
            if button not in BUTTONS:
                raise HardwareConfigError(
                    f"hid.keys.{key}: unknown button {button!r}; expected one of {BUTTONS}")
            code = codes.get(key)
            if not isinstance(code, int) or not key.startswith(("KEY_", "BTN_")):
                raise HardwareConfigError(
                    f"hid.keys: {key!r} is not a key name like KEY_PAGEDOWN or BTN_LEFT")
            self.buttons[code] = button

    def press(self, event: KeyEvent, now_ms: float, wall_s: float) -> ButtonPress | None:
        """The press this event is, or None. ``now_ms``: the service's clock now;
        ``wall_s``: ``time.time()`` now (the kernel stamps events on the wall clock)."""
        if event.type != EV_KEY or event.value != KEY_DOWN:
            return None
        button = self.buttons.get(event.code)
        if button is None:
            return None
        # How long ago the kernel saw it, clamped to sane values (a wall-clock step or a
        # device with its own clock must not invent a press from the past or the future).
        age_ms = min(max((wall_s - event.timestamp()) * 1000.0, 0.0), 1000.0)
        at_ms = now_ms - age_ms
        if not self.guard.accept(button, at_ms):
            log.info("HID %s: a second press within %g ms ignored (double press)", button,
                     self.guard.window_ms)
            return None
        return ButtonPress(button, at_ms, source=self.source)


class HidButtons:
    """Reads one input device in a thread and delivers its mapped key presses."""

    def __init__(self, device: str, keys: Mapping[str, str], *,
                 now_ms: Callable[[], float], grab: bool = True, source: str = "pedal",
                 double_press_ms: float = DOUBLE_PRESS_MS) -> None:
        from evdev import InputDevice  # lazy: python-evdev is in the "hardware" extra

        self.keymap = HidKeymap(keys, source=source, double_press_ms=double_press_ms)
        self.path = device
        self.presses = 0
        self._now_ms = now_ms
        self._device: Any = InputDevice(device)
        self.name = str(getattr(self._device, "name", device))
        if grab:
            try:
                self._device.grab()
            except OSError as exc:  # someone else holds it: still usable, keys also type
                log.warning("HID %s: not grabbed (%s); its keys also reach other programs",
                            device, exc)
        self._on_press: Callable[[ButtonPress], None] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, on_press: Callable[[ButtonPress], None]) -> None:
        self._on_press = on_press
        self._thread = threading.Thread(target=self._run, name=f"hid {self.path}", daemon=True)
        self._thread.start()
        log.info("HID %s (%s) mapped: %s", self.path, self.name,
                 sorted(set(self.keymap.buttons.values())))

    def _run(self) -> None:
        import select

        fd = self._device.fd
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([fd], [], [], 0.2)
                if not ready:
                    continue
                events = list(self._device.read())
            except (OSError, ValueError) as exc:
                if not self._stop.is_set():
                    log.error("HID %s stopped: %s", self.path, exc)
                return
            for event in events:
                press = self.keymap.press(event, self._now_ms(), time.time())
                if press is not None and self._on_press is not None:
                    self.presses += 1
                    try:
                        self._on_press(press)
                    except Exception:
                        log.exception("HID press handler failed for %s", press)

    def status(self) -> dict[str, Any]:
        """For /api/health, under its own key beside the GPIO buttons' names."""
        return {"pedal": {"device": self.path, "name": self.name, "presses": self.presses,
                          "reading": self._thread is not None and self._thread.is_alive()}}

    def close(self) -> None:
        self._on_press = None
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
        with contextlib.suppress(Exception):
            self._device.ungrab()
        with contextlib.suppress(Exception):
            self._device.close()
