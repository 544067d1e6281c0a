"""GPIO drivers against gpiozero's mock pins: buzzer, and TM1637 decoded off the wire.

The buttons have their own file (test_buttons.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from firmware_bridge import protocol_core as core
from firmware_bridge.interfaces import Buzzer, Display
from firmware_bridge.render import DisplayFrame

WaitUntil = Callable[..., bool]


class FakeClock:
    def __init__(self) -> None:
        self.ms = 1_000_000.0

    def __call__(self) -> float:
        return self.ms

    def advance(self, ms: float) -> None:
        self.ms += ms


def test_buzzer_beeps_and_long_tone_in_background(mock_factory: Any, wait_until: WaitUntil) -> None:
    import time

    from firmware_bridge.gpio import GpioBuzzer

    buzzer = GpioBuzzer(18, beep_s=0.03, long_s=0.12)
    try:
        assert isinstance(buzzer, Buzzer)
        pin = mock_factory.pin(18)
        start = time.perf_counter()
        buzzer.beep()
        assert time.perf_counter() - start < 0.01  # the caller does not wait for the sound
        assert wait_until(lambda: [s.state for s in pin.states] == [False, True, False])
        beep_on = pin.states[2].timestamp
        buzzer.long_tone()
        assert wait_until(lambda: len(pin.states) == 5, timeout=1.0)
        long_on = pin.states[4].timestamp
        assert 0.02 <= beep_on < 0.1 and 0.1 <= long_on < 0.3, (beep_on, long_on)
    finally:
        buzzer.close()


def test_tonal_buzzer_plays_and_stops(pwm_factory: Any, wait_until: WaitUntil) -> None:
    from firmware_bridge.gpio import GpioBuzzer

    buzzer = GpioBuzzer(18, beep_s=0.03, tonal=True, tone_hz=2000)
    try:
        pin = pwm_factory.pin(18)
        buzzer.beep()
        assert pin.frequency == pytest.approx(2000, rel=0.01) and pin.state > 0
        assert wait_until(lambda: not pin.state, timeout=1.0)
    finally:
        buzzer.close()


# --- TM1637: record both lines in order and decode the two-wire protocol ------------------


@pytest.fixture
def wire() -> Iterator[tuple[Any, list[tuple[int, bool]]]]:
    from gpiozero import Device
    from gpiozero.pins.mock import MockFactory, MockPin

    log: list[tuple[int, bool]] = []

    class RecordingPin(MockPin):
        """Logs every level change of every pin in one ordered list (timestamps can tie)."""

        def _change_state(self, value: bool) -> bool:
            changed = bool(super()._change_state(value))
            if changed:
                log.append((int(self.info.name.removeprefix("GPIO")), value))
            return changed

    factory = MockFactory(pin_class=RecordingPin)
    previous = Device.pin_factory
    Device.pin_factory = factory
    yield factory, log
    factory.reset()
    Device.pin_factory = previous


def decode_tm1637(log: list[tuple[int, bool]], clk: int, dio: int) -> list[list[int]]:
    """Transactions (start..stop) as lists of bytes, sampling DIO on CLK rising edges."""
    levels = {clk: True, dio: True}
    transactions: list[list[int]] = []
    bits: list[int] | None = None
    for pin, level in log:
        before = dict(levels)
        levels[pin] = level
        if pin == dio and before[clk] and levels[clk]:
            if not level:  # DIO falls with CLK high: start
                bits = []
            elif bits is not None:  # DIO rises with CLK high: stop
                # The stop condition itself clocks once with DIO low: one extra bit at most.
                assert len(bits) % 9 == 1 and bits[-1] == 0, f"stop after {len(bits)} bits"
                data = [bits[i : i + 8] for i in range(0, len(bits) - 1, 9)]  # skip ACKs
                transactions.append([sum(b << n for n, b in enumerate(byte)) for byte in data])
                bits = None
        elif pin == clk and level and bits is not None:
            bits.append(1 if levels[dio] else 0)
    return transactions


def test_tm1637_bit_banging_decodes_to_the_digits_shown(wire: Any) -> None:
    from firmware_bridge.gpio import TM1637Display

    _, log = wire
    display = TM1637Display(5, 6, brightness=3, background=False)
    assert isinstance(display, Display)
    shown = {}
    for text in ("35", "4.9", "0.0", "--", ""):
        log.clear()
        display.show(DisplayFrame(text, "running", 0))
        transactions = decode_tm1637(log, clk=5, dio=6)
        assert transactions[0] == [0x40] and transactions[2] == [0x88 | 3]
        command, *segments = transactions[1]
        assert command == 0xC0 and len(segments) == 4
        shown[text] = core.segments_to_text(bytes(segments))
    assert shown == {"35": "35", "4.9": "4.9", "0.0": "0.0", "--": "--", "": ""}
    assert display.missing_acks > 0  # no chip on mock pins: nobody pulls DIO low for ACK
    display.close()


def test_tm1637_skips_identical_frames_and_works_in_background(wire: Any) -> None:
    from firmware_bridge.gpio import TM1637Display

    _, log = wire
    display = TM1637Display(5, 6)
    try:
        display.show(DisplayFrame("12", "running", 0))
        assert display.wait_idle()
        log.clear()
        display.show(DisplayFrame("12", "running", 1))  # same digits: nothing on the bus
        assert display.wait_idle()
        assert log == []
        display.set_brightness(1)
        assert display.wait_idle()
        assert decode_tm1637(log, 5, 6)[2] == [0x88 | 1]
    finally:
        display.close()


def test_tm1637_segment_font() -> None:
    assert core.text_to_segments("35") == bytes((0, 0, 0x4F, 0x6D))
    assert core.text_to_segments("4.9") == bytes((0, 0, 0x66 | 0x80, 0x6F))
    assert core.text_to_segments("12:30") == bytes((0x06, 0x5B | 0x80, 0x4F, 0x3F))
