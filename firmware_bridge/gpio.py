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
from typing import Any, Protocol

from clock_service.core.readout import DisplayFrame
from firmware_bridge import protocol_core as core
from firmware_bridge.errors import HardwareConfigError
from firmware_bridge.interfaces import BUTTONS, DOUBLE_PRESS_MS, ButtonPress, PressGuard

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


class _Cancellable(Protocol):
    def cancel(self) -> None: ...


def _thread_timer(delay_s: float, callback: Callable[[], None]) -> _Cancellable:
    timer = threading.Timer(delay_s, callback)
    timer.daemon = True
    timer.start()
    return timer


class GpioBuzzer:
    """Piezo buzzer, or a horn through a transistor or relay module.

    Wiring: never drive a buzzer or horn from the GPIO pin directly (a pin gives a few mA at
    3.3 V; an active buzzer draws 20-30 mA): BCM 18 (pin 12) -> 1 kOhm -> base of an NPN
    transistor (e.g. 2N2222/BC337; emitter to GND, buzzer between 5 V and the collector, a
    1N4148 across it for a horn or relay coil), or BCM 18 -> IN of a relay/MOSFET module.
    ``active_high=False`` for modules that switch on a low input (most relay boards).
    An active buzzer needs only on/off; ``tonal=True`` drives a passive piezo with PWM at
    ``tone_hz`` (through the same transistor).

    Every tone plays in the background (gpiozero's blink thread or a timer thread): the
    caller never waits for the sound to end, and a new tone replaces one still sounding.
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
        self.active_high = active_high
        self._lock = threading.Lock()
        self._stop_tone = threading.Event()
        self._player: threading.Thread | None = None
        if tonal:
            from gpiozero import TonalBuzzer
            from gpiozero.tones import Tone

            self._tone = Tone(frequency=tone_hz)
            # TonalBuzzer's range is mid_tone +/- octaves; centre it on our tone.
            self._device: Any = TonalBuzzer(pin, initial_value=None, mid_tone=self._tone, octaves=1)
        else:
            from gpiozero import Buzzer

            # initial_value=False: a low-active relay must not click on at start-up.
            self._device = Buzzer(pin, active_high=active_high, initial_value=False)

    # The tones, as on/off patterns in ms (shared with the firmware: protocol_core).
    def beep(self) -> None:
        self._play((self.beep_s * 1000,))

    def long_tone(self) -> None:
        self._play((self.long_s * 1000,))

    def chirp(self) -> None:
        self._play(core.BUZZ_PATTERNS[core.BUZZ_CHIRP])

    def refused(self) -> None:
        self._play(core.BUZZ_PATTERNS[core.BUZZ_REFUSED])

    def _play(self, pattern: tuple[float, ...]) -> None:
        try:
            if not self.tonal:
                # A regular pattern (on, off, on, ...) is one gpiozero blink in the background.
                on = pattern[0] / 1000
                off = pattern[1] / 1000 if len(pattern) > 1 else 0.0
                self._device.beep(on_time=on, off_time=off, n=(len(pattern) + 1) // 2,
                                  background=True)
                return
            with self._lock:
                self._stop_tone.set()
                if self._player is not None:
                    self._player.join(0.1)
                self._stop_tone = threading.Event()
                self._player = threading.Thread(target=self._tonal, name="buzzer",
                                                args=(pattern, self._stop_tone), daemon=True)
                self._player.start()
        except Exception:  # a buzzer fault must never reach the clock
            log.exception("buzzer failed")

    def _tonal(self, pattern: tuple[float, ...], stop: threading.Event) -> None:
        try:
            for i, ms in enumerate(pattern):
                if i % 2 == 0:
                    self._device.play(self._tone)
                else:
                    self._device.stop()
                if stop.wait(ms / 1000):
                    break
        except Exception:
            log.exception("buzzer failed")
        finally:
            with contextlib.suppress(Exception):
                self._device.stop()

    def close(self) -> None:
        with self._lock:
            self._stop_tone.set()
            player = self._player
        if player is not None:
            player.join(0.5)
        with contextlib.suppress(Exception):
            self._device.off()
        with contextlib.suppress(Exception):
            self._device.close()


class _ButtonState:
    __slots__ = ("first_edge_ms", "accepted", "held", "settle", "presses", "seen_at_ms",
                 "last_at_ms")

    def __init__(self) -> None:
        self.first_edge_ms: float | None = None  # first edge of the current burst
        self.accepted = False  # a press passed the stable-low check and is not released
        self.held = False  # when_held fired for this press: it was the correction only
        self.settle: _Cancellable | None = None
        self.presses = 0
        self.seen_at_ms: float | None = None  # first press since start-up (self-test)
        self.last_at_ms: float | None = None  # the latest press (the console's status view)


class GpioButtons:
    """The referee buttons, active low with the Pi's internal pull-ups.

    Wiring (default BCM pins; each button between the pin and GND): start_shot -> BCM 17
    (pin 11), extension -> BCM 27 (pin 13), turn -> BCM 22 (pin 15), pause -> BCM 23 (pin
    16); optional per-player extension buttons extension_p1 / extension_p2 on any free pins;
    any GND pin (e.g. pin 9) to the other side of every button. For cables longer than a
    metre or near the table lights, add an external 4.7-10 kOhm pull-up to 3.3 V and a
    100 nF capacitor from the pin to GND (with 1 kOhm in series from the cable): an RC of
    about 0.1-1 ms that swallows spikes the software filter then never sees.

    Noise and bounce (issue 10, defect 7): an edge is only a candidate. A press counts when
    the line has then stayed stable and low for ``debounce_ms``; a spike shorter than that
    is dropped (counted in ``noise``). The press keeps the time of its *first* edge
    (``now_ms``, the service's clock), and commands carry it as their press time, so the
    filter's delay never costs the player time.

    Long press (issue 10, defect 3): a button in ``long_press`` acts on release (with its
    first edge's time); held for ``long_press_ms`` it delivers ``ButtonPress(long=True)``
    from gpiozero's own ``when_held`` instead, and its release then does nothing: a long
    press is only the correction. Other buttons act as soon as the press is stable.

    Double press (issue 23): a short press whose first edge comes less than
    ``double_press_ms`` after the same button's last accepted press is ignored (counted in
    ``double_presses``); gpiozero's ``bounce_time`` is not used (see above), so this is the
    guard. A long press (the correction) is never ignored.
    """

    def __init__(
        self,
        pins: Mapping[str, int] = DEFAULT_BUTTON_PINS,
        *,
        debounce_ms: float = 10.0,
        long_press_ms: float = 1000.0,
        long_press: tuple[str, ...] = ("start_shot",),
        double_press_ms: float = DOUBLE_PRESS_MS,
        now_ms: Callable[[], float] = _monotonic_ms,
        timer: Callable[[float, Callable[[], None]], _Cancellable] = _thread_timer,
    ) -> None:
        unknown = set(pins) - set(BUTTONS)
        if unknown:
            raise HardwareConfigError(f"unknown buttons {sorted(unknown)}; expected {BUTTONS}")
        if len(set(pins.values())) != len(pins):
            raise HardwareConfigError(f"two buttons share a pin: {dict(pins)}")
        if not 0 < debounce_ms < long_press_ms:
            raise HardwareConfigError(
                f"need 0 < debounce_ms < long_press_ms, got {debounce_ms=}, {long_press_ms=}"
            )
        from gpiozero import Button

        self.pins = dict(pins)
        self.debounce_ms = debounce_ms
        self.long_press_ms = long_press_ms
        self.long_press = frozenset(long_press) & set(self.pins)
        self.noise = 0  # candidate presses dropped as spikes
        try:
            self._guard = PressGuard(double_press_ms)
        except ValueError as exc:
            raise HardwareConfigError(str(exc)) from None
        self._now_ms = now_ms
        self._timer = timer
        self._on_press: Callable[[ButtonPress], None] | None = None
        self._lock = threading.Lock()  # gpiozero calls back from several threads
        self._state = {name: _ButtonState() for name in self.pins}
        self._buttons: dict[str, Any] = {}
        try:
            for name, pin in self.pins.items():
                # bounce_time=None: gpiozero's debounce would drop edges before we see them.
                self._buttons[name] = Button(pin, pull_up=True, bounce_time=None,
                                             hold_time=long_press_ms / 1000)
        except Exception:
            self.close()
            raise
        for name, button in self._buttons.items():
            button.when_pressed = self._edge_handler(name)
            button.when_released = self._edge_handler(name)
            if name in self.long_press:
                button.when_held = self._held_handler(name)

    def _edge_handler(self, name: str) -> Callable[[], None]:
        def handler() -> None:
            self._edge(name, self._now_ms())

        return handler

    def _held_handler(self, name: str) -> Callable[[], None]:
        def handler() -> None:
            self._held(name)

        return handler

    def start(self, on_press: Callable[[ButtonPress], None]) -> None:
        self._on_press = on_press

    def _edge(self, name: str, at_ms: float) -> None:
        with self._lock:
            state = self._state[name]
            if state.first_edge_ms is None and not state.accepted:
                state.first_edge_ms = at_ms  # a burst begins: its time is this edge's
            if state.settle is not None:
                state.settle.cancel()
            # Decide once the line has been quiet for debounce_ms (every edge restarts it).
            state.settle = self._timer(self.debounce_ms / 1000, lambda: self._settle(name))

    def _settle(self, name: str) -> None:
        event: ButtonPress | None = None
        with self._lock:
            state = self._state[name]
            state.settle = None
            low = bool(self._buttons[name].is_pressed) if name in self._buttons else False
            first = state.first_edge_ms
            if not state.accepted:
                if first is None:
                    return
                if not low:  # a spike, or bounce that ended high: no press (defect 7)
                    self.noise += 1
                    state.first_edge_ms = None
                    log.debug("button %s: spike shorter than %g ms ignored", name,
                              self.debounce_ms)
                    return
                state.accepted = True
                state.held = False
                self._count(name, state, first)
                if name not in self.long_press:
                    event = self._guarded(ButtonPress(name, first))
            elif not low:  # released, stably
                if name in self.long_press and not state.held and first is not None:
                    # a short press acts on its release
                    event = self._guarded(ButtonPress(name, first))
                state.accepted = False
                state.held = False
                state.first_edge_ms = None
        self._deliver(event)

    def _held(self, name: str) -> None:
        with self._lock:
            state = self._state[name]
            first = state.first_edge_ms
            if first is None or state.held:
                return
            if not state.accepted:  # held longer than any debounce: the press is real
                state.accepted = True
                self._count(name, state, first)
            state.held = True
            event = ButtonPress(name, first, long=True)
        self._deliver(event)

    @property
    def double_presses(self) -> int:
        """Presses ignored as a second press within ``double_press_ms``."""
        return self._guard.ignored

    def _guarded(self, press: ButtonPress) -> ButtonPress | None:
        if self._guard.accept(press.button, press.at_ms):
            return press
        log.info("button %s: second press %s ms after the last ignored (double press)",
                 press.button, f"< {self._guard.window_ms:g}")
        return None

    def _count(self, name: str, state: _ButtonState, at_ms: float) -> None:
        state.presses += 1
        state.last_at_ms = at_ms
        if state.seen_at_ms is None:
            state.seen_at_ms = at_ms
            # The boot self-test's button check: each button is reported once.
            log.info("button %s (BCM %d) works: first press seen", name, self.pins[name])

    def _deliver(self, event: ButtonPress | None) -> None:
        if event is not None and self._on_press is not None:
            try:
                self._on_press(event)
            except Exception:  # the callback runs on gpiozero's thread: never kill it
                log.exception("button handler failed for %s", event)

    def status(self) -> dict[str, Any]:
        """For /api/health: which buttons were seen working since start-up, and when (the
        service's clock, unix ms: first press and latest press)."""
        return {name: {"pin": self.pins[name], "seen": state.seen_at_ms is not None,
                       "presses": state.presses, "seen_at": state.seen_at_ms,
                       "last_at": state.last_at_ms}
                for name, state in ((name, self._state[name]) for name in self.pins)}

    def close(self) -> None:
        self._on_press = None
        with self._lock:
            for state in self._state.values():
                if state.settle is not None:
                    state.settle.cancel()
        for button in self._buttons.values():
            with contextlib.suppress(Exception):
                button.close()


class TM1637Display:
    """Four 7-segment digits on a TM1637 module, bit-banged over two GPIO lines.

    Wiring (default BCM pins): CLK -> BCM 5 (pin 29), DIO -> BCM 6 (pin 31), VCC -> 3.3 V
    (pin 1; most modules also run on 5 V, but then DIO is pulled to 5 V: keep 3.3 V on a Pi),
    GND -> GND (pin 6).

    ``module``: "dp" for modules with a decimal point per digit, "colon" for the common
    "clock" module whose only extra segment is the colon after digit 2 (issue 10, defect 5:
    "4.9" must not read "49" there; see ``protocol_core.text_to_segments``).

    The TM1637 bus is open drain: a 1 on DIO is sent by releasing the line (input with
    pull-up), a 0 by driving it low, so the chip's ACK pull-down never fights our output.
    Writing takes milliseconds, so ``show`` hands the frame to a worker thread (latest wins).
    While a frame is ``offline`` the worker blinks the colon (digit 2's point) at 1 Hz.
    ``close`` turns the display off: a stopped service never leaves a time lit.
    """

    CMD_DATA_AUTO = 0x40  # write display data, auto-increment address
    CMD_ADDRESS = 0xC0  # start at digit 0
    CMD_DISPLAY = 0x80  # | 0x08 display on | brightness 0..7
    BLINK_S = 0.5

    def __init__(
        self,
        clk: int = DEFAULT_TM1637_PINS[0],
        dio: int = DEFAULT_TM1637_PINS[1],
        *,
        digits: int = 4,
        brightness: int = 7,
        module: str = "dp",
        bit_delay_s: float = 0.0,
        background: bool = True,
    ) -> None:
        if not 0 <= brightness <= 7:
            raise HardwareConfigError(f"TM1637 brightness must be 0..7, got {brightness!r}")
        if clk == dio:
            raise HardwareConfigError(f"TM1637 CLK and DIO must differ, both are {clk}")
        if module not in core.MODULES:
            raise HardwareConfigError(
                f"display.module must be one of {core.MODULES}, got {module!r}")
        from gpiozero import GPIODevice

        self.digits = digits
        self.brightness = brightness
        self.module = module
        self.bit_delay_s = bit_delay_s
        self.missing_acks = 0  # the chip did not pull DIO low after a byte: wiring fault
        self.writes = 0
        self.last_write_acked: bool | None = None  # None until the first write
        self._clk_device = GPIODevice(clk)
        try:
            self._dio_device = GPIODevice(dio)
        except Exception:
            self._clk_device.close()
            raise
        self._clk = self._clk_device.pin
        self._dio = self._dio_device.pin
        self._clk.function = "output"
        self._clk.state = True
        self._release_dio()
        self._written: tuple[bytes, int] | None = None
        self._pending: bytes | None = None
        self._plain = bytes(digits)  # the latest picture without the blink
        self._blink = False  # the current frame is offline: blink the colon
        self._cond = threading.Condition()
        self._busy = False
        self._closing = False
        self._worker: threading.Thread | None = None
        if background:
            self._worker = threading.Thread(target=self._run, name="tm1637", daemon=True)
            self._worker.start()

    # --- Display ---------------------------------------------------------------------------

    def show(self, frame: DisplayFrame) -> None:
        segments = core.text_to_segments(frame.text, self.digits, self.module)
        with self._cond:
            self._blink = frame.offline
        self.show_segments(segments)

    def show_segments(self, segments: bytes) -> None:
        if self._worker is None:
            self._write_safely(segments)
            return
        with self._cond:
            self._pending = segments
            self._cond.notify_all()

    def set_brightness(self, level: int) -> None:
        if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= 7:
            raise HardwareConfigError(f"TM1637 brightness must be 0..7, got {level!r}")
        self.brightness = level
        if self._written is not None:
            self.show_segments(self._written[0])

    def wait_idle(self, timeout: float = 1.0) -> bool:
        """Wait until every frame handed to show() is on the chip (tests, shutdown)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending is None and not self._busy, timeout)

    def status(self) -> dict[str, Any]:
        return {"module": self.module, "brightness": self.brightness, "writes": self.writes,
                "acknowledging": self.last_write_acked is not False,
                "missing_acks": self.missing_acks}

    def blank(self) -> None:
        """Display off (digits dark), synchronously: the last thing before the lines go."""
        try:
            self._start()
            self._byte(self.CMD_DATA_AUTO)
            self._stop()
            self._start()
            self._byte(self.CMD_ADDRESS)
            for _ in range(self.digits):
                self._byte(0)
            self._stop()
            self._start()
            self._byte(self.CMD_DISPLAY)  # 0x80 without 0x08: display off
            self._stop()
            self._written = None
        except Exception:
            log.exception("TM1637 blank failed")

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._worker is not None:
            self._worker.join(1.0)
        self.blank()
        for device in (self._clk_device, self._dio_device):
            with contextlib.suppress(Exception):
                device.close()

    # --- the worker and the wire -----------------------------------------------------------

    def _run(self) -> None:
        lit = True  # the blinking colon's phase
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending is not None or self._closing,
                                    self.BLINK_S if self._blink else None)
                if self._closing:
                    return
                segments, self._pending = self._pending, None
                blink = self._blink
                if segments is None:  # the blink timer: toggle the colon
                    if not blink or self._written is None:
                        continue
                    segments = self._plain
                    lit = not lit
                else:
                    self._plain = segments
                    lit = True
                self._busy = True
            if blink and not lit:
                cells = bytearray(segments)
                cells[core.COLON_CELL] ^= core.SEG_DP
                segments = bytes(cells)
            self._write_safely(segments)
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def _write_safely(self, segments: bytes) -> None:
        if self._written == (segments, self.brightness):
            return  # identical picture: spare the bus (show() is called at every render)
        try:
            before = self.missing_acks
            self._write(segments)
            self.writes += 1
            self.last_write_acked = self.missing_acks == before
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
