"""The three small interfaces the clock drives at a table, and fakes with a call history.

Real drivers live in ``gpio.py`` (gpiozero) and ``serial_display.py`` (pyserial); the
``terminal.py`` display shows the clock in a terminal when no hardware is configured.
A driver must never block: the bridge calls it from the event loop, and a slow or dead
device is the driver's own problem (it drops or coalesces frames, it never waits).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from clock_service.core.readout import DisplayFrame

__all__ = [
    "BUTTONS",
    "Display",
    "Buzzer",
    "Buttons",
    "ButtonPress",
    "FakeDisplay",
    "FakeBuzzer",
    "FakeButtons",
    "DOUBLE_PRESS_MS",
    "PressGuard",
]

# Physical buttons at the table. "start_shot" is one button: start when ready, shot when
# running. "extension_p1"/"extension_p2" are optional per-player extension buttons (each
# asks the extension for its own player only).
BUTTONS = ("start_shot", "extension", "turn", "pause", "extension_p1", "extension_p2")


# One press is one press (issue 23): a second press of the same button within this many ms
# of its last accepted press is a bounce (a clicker's or pedal's contact, a nervous double
# tap), not a command: Start then Shot 40 ms apart once recorded a 0.04 s shot.
DOUBLE_PRESS_MS = 300.0


class PressGuard:
    """Accepts a button's press unless the same button's last accepted press was less than
    ``window_ms`` before it (press times, ms on one clock; 0 turns the guard off).
    Pure: the drivers call it under their own lock with the press's own time."""

    def __init__(self, window_ms: float = DOUBLE_PRESS_MS) -> None:
        if not 0 <= window_ms <= 5000:
            raise ValueError(f"double_press_ms must be 0..5000, got {window_ms!r}")
        self.window_ms = window_ms
        self.ignored = 0  # presses dropped as double presses
        self._last: dict[str, float] = {}

    def accept(self, button: str, at_ms: float) -> bool:
        last = self._last.get(button)
        if self.window_ms and last is not None and 0 <= at_ms - last < self.window_ms:
            self.ignored += 1
            return False
        self._last[button] = at_ms
        return True


@dataclass(frozen=True)
class ButtonPress:
    button: str
    at_ms: float  # unix ms on the service's monotonic timeline, taken at the first edge
    long: bool = False  # a long press (held): corrects the last press
    source: str = "button"  # "button" (GPIO), "pedal"/"clicker" (USB HID) ...

    def __post_init__(self) -> None:
        if self.button not in BUTTONS:
            raise ValueError(f"unknown button {self.button!r}; expected one of {BUTTONS}")


@runtime_checkable
class Display(Protocol):
    def show(self, frame: DisplayFrame) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class Buzzer(Protocol):
    def beep(self) -> None:
        """A short beep: a warning threshold was crossed."""

    def long_tone(self) -> None:
        """A long, distinct tone: the shot time ran out (12.4)."""

    def chirp(self) -> None:
        """A very short chirp: a long press registered (its correction is on the way)."""

    def refused(self) -> None:
        """Three short pips: the service refused a press (e.g. a stale one)."""

    def close(self) -> None: ...


@runtime_checkable
class Buttons(Protocol):
    def start(self, on_press: Callable[[ButtonPress], None]) -> None:
        """Begin delivering presses. ``on_press`` may be called from any thread."""

    def close(self) -> None: ...


@dataclass
class FakeDisplay:
    frames: list[DisplayFrame] = field(default_factory=list)
    closed: bool = False

    def show(self, frame: DisplayFrame) -> None:
        self.frames.append(frame)

    def close(self) -> None:
        self.closed = True


@dataclass
class FakeBuzzer:
    calls: list[str] = field(default_factory=list)

    def beep(self) -> None:
        self.calls.append("beep")

    def long_tone(self) -> None:
        self.calls.append("long_tone")

    def chirp(self) -> None:
        self.calls.append("chirp")

    def refused(self) -> None:
        self.calls.append("refused")

    def close(self) -> None:
        self.calls.append("close")


@dataclass
class FakeButtons:
    on_press: Callable[[ButtonPress], None] | None = None

    def start(self, on_press: Callable[[ButtonPress], None]) -> None:
        self.on_press = on_press

    def press(self, button: str, at_ms: float, long: bool = False) -> None:
        assert self.on_press is not None, "buttons not started"
        self.on_press(ButtonPress(button, at_ms, long))

    def close(self) -> None:
        self.on_press = None
