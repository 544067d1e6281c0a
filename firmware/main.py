# ruff: noqa: UP031  -- MicroPython: %-formatting, no f-strings in the firmware
"""Reference MicroPython firmware for a Raspberry Pi Pico display controller.

Copy ``protocol_core.py`` and this file to the Pico (``mpremote cp firmware/*.py :``).
All protocol and display logic is in protocol_core.ControllerCore (tested on CPython and on
the MicroPython unix port); ``Table`` below is the loop's logic with the pins handed in (the
tests run it under the unix port with a fake ``machine``); ``run()`` wires real pins.

Link: USB (default, ``USE_USB = True``): the Pico's USB-CDC port, which the udev rule
(deploy/99-shotclock-display.rules) names /dev/shotclock-display. Keyboard interrupt is
disabled on it first thing (``micropython.kbd_intr(-1)``): the host may already be sending
when the Pico boots, and a 0x03 byte inside a frame is data, not Ctrl-C, so the controller
never drops to its REPL. For maintenance (``mpremote``) connect GP22 (MAINT_PIN) to GND
while it starts: it then stays at the REPL. ``USE_USB = False``: UART0 at BAUD instead.

Wiring (Pico GP numbers):
  UART0 (USE_USB = False): GP0 TX -> host RX (Pi GPIO15), GP1 RX <- host TX (Pi GPIO14), GND.
  TM1637: GP2 -> CLK, GP3 -> DIO, 3V3 -> VCC, GND -> GND (big digits: a TM1637 driving
          LED segments through transistor drivers behaves the same). MODULE = "colon" for
          the 4-digit clock module (colon, no decimal points).
  Horn:   GP15 -> 1 kOhm -> NPN transistor or a relay/MOSFET module driving the buzzer or
          horn; never the buzzer on the pin directly. HORN_ACTIVE_HIGH = False for modules
          that switch on a low input.
  LED:    the on-board LED: steady while the host is silent (fault), blinking while the
          host says its link to the hall service is lost.

Safety: a hardware watchdog (``machine.WDT``, WDT_MS) resets the Pico if the loop ever
hangs; the reset sends HELLO and the host resends the full frame at once. Times use
``time.ticks_diff`` (ticks_ms wraps every 2**30 ms, about 12.4 days).
"""

import time

import machine
import micropython
import protocol_core as core

USE_USB = True
BAUD = 115200
MODULE = "dp"  # "colon" for the 4-digit clock module
HORN_ACTIVE_HIGH = True
WDT_MS = 2000
MAINT_PIN = 22  # tied to GND at start: stay at the REPL (maintenance), run nothing
SELF_TEST_MS = 1000
BLINK_MS = 500


class TM1637:
    """Open-drain bit-banging: release DIO for a 1, pull it low for a 0."""

    def __init__(self, clk, dio):
        self.clk = machine.Pin(clk, machine.Pin.OUT, value=1)
        self.dio = machine.Pin(dio, machine.Pin.OPEN_DRAIN, value=1)

    def _delay(self):
        time.sleep_us(5)

    def _start(self):
        self.dio.value(0)
        self._delay()

    def _stop(self):
        self.clk.value(0)
        self.dio.value(0)
        self._delay()
        self.clk.value(1)
        self._delay()
        self.dio.value(1)
        self._delay()

    def _byte(self, value):
        for i in range(8):
            self.clk.value(0)
            self.dio.value((value >> i) & 1)
            self._delay()
            self.clk.value(1)
            self._delay()
        self.clk.value(0)
        self.dio.value(1)  # release for the chip's ACK
        self._delay()
        self.clk.value(1)
        self._delay()
        self.clk.value(0)

    def write(self, segments, brightness=core.BRIGHTNESS_MAX, on=True):
        self._start()
        self._byte(0x40)
        self._stop()
        self._start()
        self._byte(0xC0)
        for seg in segments:
            self._byte(seg)
        self._stop()
        self._start()
        self._byte((0x88 if on else 0x80) | brightness)
        self._stop()


class Horn:
    """The buzzer or horn, playing protocol_core.BUZZ_PATTERNS without blocking the loop."""

    def __init__(self, pin, active_high, ticks_diff):
        self.pin = pin
        self.active_high = active_high
        self.ticks_diff = ticks_diff
        self.kind = None
        self.started = 0
        self._set(False)

    def _set(self, on):
        self.pin.value(1 if on == self.active_high else 0)

    def play(self, kind, now):
        self.kind = kind
        self.started = now
        self.update(now)

    def update(self, now):
        if self.kind is None:
            return
        level = core.buzzer_on(self.kind, self.ticks_diff(now, self.started))
        if level is None:
            self.kind = None
            self._set(False)
        else:
            self._set(level)


class Table:
    """One pass of the controller loop: bytes and the time in; digits, horn, LED out."""

    def __init__(self, digits, horn, led, write, ticks_diff, module=MODULE):
        self.digits = digits
        self.horn = horn
        self.led = led
        self.write = write
        self.ticks_diff = ticks_diff
        self.module = module
        self.ctl = core.ControllerCore(core.TIMEOUT_MS, ticks_diff)
        self.frame = None  # the frame to show (after the self-test)
        self.test_until = None
        self.shown = None  # (segments, brightness, on) on the chip now

    def boot(self, now):
        """Self-test (every segment, a chirp), then HELLO: the host sends the frame at once."""
        self.test_until = now
        self._show(core.text_to_segments("8.8.8.8.", 4, self.module), core.BRIGHTNESS_MAX)
        self.horn.play(core.BUZZ_CHIRP, now)
        self.led.value(0)
        self.write(self.ctl.boot(now))

    def step(self, data, now):
        replies, events = self.ctl.feed(data, now)
        if replies:
            self.write(replies)
        events += self.ctl.tick(now)
        for kind, value in events:
            if kind == "display":
                self.frame = value
            elif kind == "fault":
                self.frame = None
            elif kind == "buzzer":
                self.horn.play(core.BUZZ_NAMES.index(value), now)
        self.horn.update(now)
        self._render(now)

    def _render(self, now):
        if self.test_until is not None:
            if self.ticks_diff(now, self.test_until) < SELF_TEST_MS:
                return
            self.test_until = None
        if self.ctl.fault is not None:
            self.led.value(1)
            self._show(core.FAULT_SEGMENTS, core.BRIGHTNESS_MAX)
            return
        frame = self.frame
        if frame is None:
            return
        segments = core.text_to_segments(frame[0], 4, self.module)
        offline = frame[8] & core.FLAG_OFFLINE
        blink_off = offline and (now // BLINK_MS) % 2 == 1
        if blink_off:  # the link to the hall is lost: the colon blinks, so does the LED
            cells = bytearray(segments)
            cells[core.COLON_CELL] ^= core.SEG_DP
            segments = bytes(cells)
        self.led.value(1 if offline and not blink_off else 0)
        self._show(segments, frame[7], frame[0] != "" or frame[1] != "off")

    def _show(self, segments, brightness, on=True):
        picture = (segments, brightness, on)
        if picture != self.shown:
            self.digits.write(segments, brightness, on)
            self.shown = picture


def open_link():
    if USE_USB:
        import select
        import sys

        # A 0x03 byte in a frame must not be Ctrl-C (run() already said so; kept here so
        # the link never opens without it): without it the Pico drops to its REPL and
        # stops showing and acknowledging (issue 10, defect 4).
        micropython.kbd_intr(-1)
        poll = select.poll()
        poll.register(sys.stdin, select.POLLIN)

        def read():
            data = b""
            while len(data) < 256 and poll.poll(0):
                data += sys.stdin.buffer.read(1)
            return data

        return read, sys.stdout.buffer.write
    uart = machine.UART(0, baudrate=BAUD, tx=machine.Pin(0), rx=machine.Pin(1), rxbuf=256)

    def read():
        n = uart.any()
        return uart.read(n) if n else b""

    return read, uart.write


def maintenance_requested():
    """GP22 tied to GND at start: the REPL stays usable (no loop, no watchdog)."""
    return machine.Pin(MAINT_PIN, machine.Pin.IN, machine.Pin.PULL_UP).value() == 0


def run():
    if USE_USB:
        micropython.kbd_intr(-1)  # before anything else: frames may already be arriving
    if maintenance_requested():
        micropython.kbd_intr(3)
        print("shotclock: maintenance mode (REPL)")
        return
    read, write = open_link()
    wdt = machine.WDT(timeout=WDT_MS)  # a hung loop resets the Pico
    horn = Horn(machine.Pin(15, machine.Pin.OUT), HORN_ACTIVE_HIGH, time.ticks_diff)
    led = machine.Pin("LED", machine.Pin.OUT, value=0)
    table = Table(TM1637(2, 3), horn, led, write, time.ticks_diff)
    table.boot(time.ticks_ms())
    while True:
        wdt.feed()
        table.step(read(), time.ticks_ms())
        time.sleep_ms(2)


if __name__ == "__main__":
    run()
