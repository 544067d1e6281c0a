"""GPIO drivers on the Raspberry Pi: buzzer, the four table buttons, TM1637 digits.

gpiozero is imported inside constructors only, so this module imports on a laptop without
it. Every driver works with gpiozero's MockFactory, which is how the tests drive them.
Pin numbers are BCM (GPIO numbers), not header positions.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from firmware_bridge import protocol_core as core
from firmware_bridge.errors import HardwareConfigError
from firmware_bridge.interfaces import BUTTONS, ButtonPress
from firmware_bridge.render import DisplayFrame

__all__ = [
    "DEFAULT_BUTTON_PINS",
    "DEFAULT_BUZZER_PIN",
    "DEFAULT_TM1637_PINS",
    "GpioBuzzer",
    "GpioButtons",
    "TM1637Display",
]

log = logging.getLogger(__name__)

DEFAULT_BUTTON_PINS: Mapping[str, int] = {
    "start_shot": 17,
    "extension": 27,
    "turn": 22,
    "pause": 23,
}
DEFAULT_BUZZER_PIN = 18  # PWM0, so a TonalBuzzer can use hardware PWM
DEFAULT_TM1637_PINS = (5, 6)  # (CLK, DIO)


def _monotonic_ms() -> float:
    return time.monotonic() * 1000


class GpioBuzzer:
    """Piezo buzzer or relay-driven horn.

    Wiring: BCM 18 (pin 12) -> buzzer + (or the base resistor of an NPN transistor / a relay
    module's IN for a horn); GND (pin 14) -> buzzer -. An active buzzer needs only on/off;
    set ``tonal=True`` for a passive piezo driven with PWM at ``tone_hz``.

    Both tones run in the background (gpiozero's blink thread or a timer): the caller never
    waits for the sound to end.
    """

    def __init__(
        self,
        pin: int = DEFAULT_BUZZER_PIN,
        *,
        active_high: bool = True,
        beep_s: float = 0.15,
        long_s: float = 1.5,
        tonal: bool = False,
        tone_hz: float = 2000.0,
    ) -> None:
        if beep_s <= 0 or long_s <= 0:
            raise HardwareConfigError(f"buzzer durations must be > 0, got {beep_s=}, {long_s=}")
        self.beep_s = beep_s
        self.long_s = long_s
        self.tonal = tonal
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        if tonal:
            from gpiozero import TonalBuzzer
            from gpiozero.tones import Tone

            self._tone = Tone(frequency=tone_hz)
            # TonalBuzzer's range is mid_tone +/- octaves; centre it on our tone.
            self._device: Any = TonalBuzzer(pin, initial_value=None, mid_tone=self._tone, octaves=1)
        else:
            from gpiozero import Buzzer

            self._device = Buzzer(pin, active_high=active_high)

    def beep(self) -> None:
        self._sound(self.beep_s)

    def long_tone(self) -> None:
        self._sound(self.long_s)

    def _sound(self, seconds: float) -> None:
        try:
            if not self.tonal:
                # A new beep replaces one still sounding: the latest event is what matters.
                self._device.beep(on_time=seconds, off_time=0, n=1, background=True)
                return
            with self._lock:
                if self._timer is not None:
                    self._timer.cancel()
                self._device.play(self._tone)
                self._timer = threading.Timer(seconds, self._silence)
                self._timer.daemon = True
                self._timer.start()
        except Exception:  # a buzzer fault must never reach the clock
            log.exception("buzzer failed")

    def _silence(self) -> None:
        with contextlib.suppress(Exception):
            self._device.stop()

    def close(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
        with contextlib.suppress(Exception):
            self._device.close()


class _ButtonState:
    __slots__ = ("last_edge_ms", "pressed_at_ms")

    def __init__(self) -> None:
        self.last_edge_ms: float | None = None
        self.pressed_at_ms: float | None = None  # an accepted press not yet released


class GpioButtons:
    """The four referee buttons, active low with the Pi's internal pull-ups.

    Wiring (default BCM pins; each button between the pin and GND, no resistor needed):
    start_shot -> BCM 17 (pin 11), extension -> BCM 27 (pin 13), turn -> BCM 22 (pin 15),
    pause -> BCM 23 (pin 16); any GND pin (e.g. pin 9) to the other side of every button.

    A press is timestamped at its edge with ``now_ms`` (pass the service's clock), and
    delivered at once: the shot clock must not wait to learn whether a press will be long.
    Debounce is our own timestamp rule (MockPin ignores gpiozero's bounce_time, and this way
    it is tested): a press counts only if the line was quiet for ``debounce_ms`` before it.
    Holding a button in ``long_press`` for ``long_press_ms`` or more additionally delivers
    ``ButtonPress(long=True)`` at release, which corrects the last press.
    """

    def __init__(
        self,
        pins: Mapping[str, int] = DEFAULT_BUTTON_PINS,
        *,
        debounce_ms: float = 15.0,
        long_press_ms: float = 1000.0,
        long_press: tuple[str, ...] = ("start_shot",),
        now_ms: Callable[[], float] = _monotonic_ms,
    ) -> None:
        unknown = set(pins) - set(BUTTONS)
        if unknown:
            raise HardwareConfigError(f"unknown buttons {sorted(unknown)}; expected {BUTTONS}")
        if len(set(pins.values())) != len(pins):
            raise HardwareConfigError(f"two buttons share a pin: {dict(pins)}")
        if debounce_ms < 0 or long_press_ms <= debounce_ms:
            raise HardwareConfigError(
                f"need 0 <= debounce_ms < long_press_ms, got {debounce_ms=}, {long_press_ms=}"
            )
        from gpiozero import Button

        self.pins = dict(pins)
        self.debounce_ms = debounce_ms
        self.long_press_ms = long_press_ms
        self.long_press = frozenset(long_press)
        self._now_ms = now_ms
        self._on_press: Callable[[ButtonPress], None] | None = None
        self._lock = threading.Lock()  # gpiozero may call back from several threads
        self._state = {name: _ButtonState() for name in self.pins}
        # bounce_time=None: debouncing in gpiozero would drop edges before we timestamp them.
        self._buttons = {
            name: Button(pin, pull_up=True, bounce_time=None) for name, pin in self.pins.items()
        }
        for name, button in self._buttons.items():
            button.when_pressed = self._edge_handler(name, True)
            button.when_released = self._edge_handler(name, False)

    def _edge_handler(self, name: str, pressed: bool) -> Callable[[], None]:
        def handler() -> None:
            self._edge(name, pressed, self._now_ms())

        return handler

    def start(self, on_press: Callable[[ButtonPress], None]) -> None:
        self._on_press = on_press

    def _edge(self, name: str, pressed: bool, at_ms: float) -> None:
        event: ButtonPress | None = None
        with self._lock:
            state = self._state[name]
            quiet = state.last_edge_ms is None or at_ms - state.last_edge_ms >= self.debounce_ms
            state.last_edge_ms = at_ms
            if pressed:
                if quiet:
                    state.pressed_at_ms = at_ms
                    event = ButtonPress(name, at_ms)
            elif state.pressed_at_ms is not None:
                held_ms = at_ms - state.pressed_at_ms
                if held_ms < self.debounce_ms:
                    # Bounce right after the press: not a release yet; a later edge decides.
                    return
                state.pressed_at_ms = None
                if name in self.long_press and held_ms >= self.long_press_ms:
                    event = ButtonPress(name, at_ms, long=True)
        if event is not None and self._on_press is not None:
            try:
                self._on_press(event)
            except Exception:  # the callback runs on gpiozero's thread: never kill it
                log.exception("button handler failed for %s", event)

    def close(self) -> None:
        self._on_press = None
        for button in self._buttons.values():
            with contextlib.suppress(Exception):
                button.close()


class TM1637Display:
    """Four 7-segment digits on a TM1637 module, bit-banged over two GPIO lines.

    Wiring (default BCM pins): CLK -> BCM 5 (pin 29), DIO -> BCM 6 (pin 31), VCC -> 3.3 V
    (pin 1; most modules also run on 5 V, but then DIO is pulled to 5 V: keep 3.3 V on a Pi),
    GND -> GND (pin 6). ``colon`` modules light the colon with digit 2's point bit.

    The TM1637 bus is open drain: a 1 on DIO is sent by releasing the line (input with
    pull-up), a 0 by driving it low, so the chip's ACK pull-down never fights our output.
    Writing takes milliseconds, so ``show`` hands the frame to a worker thread (latest wins).
    """

    CMD_DATA_AUTO = 0x40  # write display data, auto-increment address
    CMD_ADDRESS = 0xC0  # start at digit 0
    CMD_DISPLAY = 0x80  # | 0x08 display on | brightness 0..7

    def __init__(
        self,
        clk: int = DEFAULT_TM1637_PINS[0],
        dio: int = DEFAULT_TM1637_PINS[1],
        *,
        digits: int = 4,
        brightness: int = 7,
        bit_delay_s: float = 0.0,
        background: bool = True,
    ) -> None:
        if not 0 <= brightness <= 7:
            raise HardwareConfigError(f"TM1637 brightness must be 0..7, got {brightness!r}")
        if clk == dio:
            raise HardwareConfigError(f"TM1637 CLK and DIO must differ, both are {clk}")
        from gpiozero import GPIODevice

        self.digits = digits
        self.brightness = brightness
        self.bit_delay_s = bit_delay_s
        self.missing_acks = 0  # the chip did not pull DIO low after a byte: wiring fault
        self._clk_device = GPIODevice(clk)
        self._dio_device = GPIODevice(dio)
        self._clk = self._clk_device.pin
        self._dio = self._dio_device.pin
        self._clk.function = "output"
        self._clk.state = True
        self._release_dio()
        self._written: tuple[bytes, int] | None = None
        self._pending: bytes | None = None
        self._cond = threading.Condition()
        self._busy = False
        self._closing = False
        self._worker: threading.Thread | None = None
        if background:
            self._worker = threading.Thread(target=self._run, name="tm1637", daemon=True)
            self._worker.start()

    # --- Display ---------------------------------------------------------------------------

    def show(self, frame: DisplayFrame) -> None:
        self.show_segments(core.text_to_segments(frame.text, self.digits))

    def show_segments(self, segments: bytes) -> None:
        if self._worker is None:
            self._write_safely(segments)
            return
        with self._cond:
            self._pending = segments
            self._cond.notify_all()

    def set_brightness(self, level: int) -> None:
        if not 0 <= level <= 7:
            raise HardwareConfigError(f"TM1637 brightness must be 0..7, got {level!r}")
        self.brightness = level
        if self._written is not None:
            self.show_segments(self._written[0])

    def wait_idle(self, timeout: float = 1.0) -> bool:
        """Wait until every frame handed to show() is on the chip (tests, shutdown)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending is None and not self._busy, timeout)

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._worker is not None:
            self._worker.join(1.0)
        for device in (self._clk_device, self._dio_device):
            with contextlib.suppress(Exception):
                device.close()

    # --- the worker and the wire -----------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending is not None or self._closing)
                if self._closing:
                    return
                segments, self._pending = self._pending, None
                self._busy = True
            self._write_safely(segments)  # type: ignore[arg-type]
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def _write_safely(self, segments: bytes) -> None:
        if self._written == (segments, self.brightness):
            return  # identical picture: spare the bus (show() is called at every render)
        try:
            self._write(segments)
            self._written = (segments, self.brightness)
        except Exception:
            log.exception("TM1637 write failed")

    def _write(self, segments: bytes) -> None:
        self._start()
        self._byte(self.CMD_DATA_AUTO)
        self._stop()
        self._start()
        self._byte(self.CMD_ADDRESS)
        for seg in segments:
            self._byte(seg)
        self._stop()
        self._start()
        self._byte(self.CMD_DISPLAY | 0x08 | self.brightness)
        self._stop()

    def _delay(self) -> None:
        if self.bit_delay_s:
            time.sleep(self.bit_delay_s)

    def _release_dio(self) -> None:
        self._dio.function = "input"
        self._dio.pull = "up"

    def _dio_low(self) -> None:
        self._dio.function = "output"
        self._dio.state = False

    def _dio_set(self, bit: int) -> None:
        if bit:
            self._release_dio()
        else:
            self._dio_low()

    def _start(self) -> None:
        # Start condition: DIO falls while CLK is high.
        self._clk.state = True
        self._release_dio()
        self._delay()
        self._dio_low()
        self._delay()

    def _stop(self) -> None:
        # Stop condition: DIO rises while CLK is high.
        self._clk.state = False
        self._dio_low()
        self._delay()
        self._clk.state = True
        self._delay()
        self._release_dio()
        self._delay()

    def _byte(self, value: int) -> None:
        for i in range(8):  # LSB first; the chip samples DIO on CLK's rising edge
            self._clk.state = False
            self._dio_set((value >> i) & 1)
            self._delay()
            self._clk.state = True
            self._delay()
        # Ninth clock: release DIO, the chip pulls it low to acknowledge.
        self._clk.state = False
        self._release_dio()
        self._delay()
        self._clk.state = True
        self._delay()
        if self._dio.state:
            self.missing_acks += 1
        self._clk.state = False
