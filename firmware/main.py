"""Reference MicroPython firmware for a Raspberry Pi Pico display controller.

Copy ``protocol_core.py`` and this file to the Pico (``mpremote cp firmware/*.py :``).
All protocol and display logic is in protocol_core.ControllerCore (tested on CPython);
this file is only the hardware: a UART, a TM1637 module and a buzzer/horn pin.

Wiring (Pico GP numbers):
  UART0: GP0 TX -> host RX (Pi GPIO15), GP1 RX <- host TX (Pi GPIO14), GND - GND.
         Or leave USE_USB = True to talk over the Pico's USB-CDC port instead.
  TM1637: GP2 -> CLK, GP3 -> DIO, 3V3 -> VCC, GND -> GND (big digits: a TM1637 driving
          LED segments through transistor drivers behaves the same).
  Horn:   GP15 -> transistor/relay driving the buzzer or horn, active high.
  Fault LED: the on-board LED lights while the host is silent.
"""

import time

import machine
import protocol_core as core

USE_USB = False
BAUD = 115200
BEEP_MS = 150
LONG_MS = 1500
BRIGHTNESS = 7


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

    def write(self, segments, brightness=BRIGHTNESS):
        self._start()
        self._byte(0x40)
        self._stop()
        self._start()
        self._byte(0xC0)
        for seg in segments:
            self._byte(seg)
        self._stop()
        self._start()
        self._byte(0x88 | brightness)
        self._stop()


def open_link():
    if USE_USB:
        import select
        import sys

        poll = select.poll()
        poll.register(sys.stdin, select.POLLIN)

        def read():
            data = b""
            while poll.poll(0):
                data += sys.stdin.buffer.read(1)
            return data

        return read, sys.stdout.buffer.write
    uart = machine.UART(0, baudrate=BAUD, tx=machine.Pin(0), rx=machine.Pin(1), rxbuf=256)

    def read():
        n = uart.any()
        return uart.read(n) if n else b""

    return read, uart.write


def main():
    read, write = open_link()
    digits = TM1637(2, 3)
    horn = machine.Pin(15, machine.Pin.OUT, value=0)
    fault_led = machine.Pin("LED", machine.Pin.OUT, value=0)
    ctl = core.ControllerCore(core.TIMEOUT_MS)
    digits.write(core.FAULT_SEGMENTS)
    write(ctl.boot(time.ticks_ms()))
    horn_off_at = None
    while True:
        now = time.ticks_ms()
        # ticks_ms wraps every ~12 days; across a wrap the difference is negative, which at
        # worst delays one fault report until the next valid message resets the baseline.
        replies, events = ctl.feed(read(), now)
        if replies:
            write(replies)
        events += ctl.tick(now)
        for kind, value in events:
            if kind == "display":
                fault_led.value(0)
                digits.write(core.text_to_segments(value[0], 4))
            elif kind == "fault":
                fault_led.value(1)
                digits.write(core.FAULT_SEGMENTS)
            elif kind == "buzzer":
                horn.value(1)
                horn_off_at = time.ticks_add(now, LONG_MS if value == "long" else BEEP_MS)
        if horn_off_at is not None and time.ticks_diff(now, horn_off_at) >= 0:
            horn.value(0)
            horn_off_at = None
        time.sleep_ms(2)


main()
