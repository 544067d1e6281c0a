"""GPIO drivers against gpiozero's mock pins: buzzer, and TM1637 decoded off the wire.

The buttons have their own file (test_buttons.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from clock_service.core.readout import DisplayFrame
from firmware_bridge import protocol_core as core
from firmware_bridge.interfaces import Buzzer, Display

WaitUntil = Callable[..., bool]


class FakeClock:
    def __init__(self) -> None:
        self.ms = 1_000_000.0

    def __call__(self) -> float:
        return self.ms

    def advance(self, ms: float) -> None:
        self.ms += ms


def test_buzzer_beeps_and_long_tone_in_background(mock_factory: Any, wait_until: WaitUntil) -> None:
    from firmware_bridge.gpio import GpioBuzzer

    # The tones' lengths as measured on the pin (gpiozero's mock: the time since the last
    # change), with room for a loaded machine's late wake-ups: a blink thread's Event.wait
    # ends late, never early. The long tone is long enough to tell from the beep at once.
    buzzer = GpioBuzzer(18, beep_s=0.03, long_s=0.5)
    try:
        assert isinstance(buzzer, Buzzer)
        pin = mock_factory.pin(18)
        buzzer.beep()
        assert wait_until(lambda: [s.state for s in pin.states] == [False, True, False])
        beep_on = pin.states[2].timestamp
        buzzer.long_tone()
        # The caller does not wait for the sound: the call is back while the half-second
        # tone has not ended (it is on, or its thread has yet to switch it on). Waiting for
        # it would show the pin off again, whatever the load; a fixed bound on the call's
        # duration would not hold on a loaded machine (a thread start took 21 ms there).
        assert [s.state for s in pin.states][3:] in ([], [True]), pin.states
        assert wait_until(lambda: len(pin.states) == 5, timeout=3.0)
        long_on = pin.states[4].timestamp
        assert 0.025 <= beep_on < 0.3 and 0.45 <= long_on < 1.2, (beep_on, long_on)
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


def _picture(transactions: list[list[int]]) -> tuple[list[int], int]:
    """(segments, display control byte) from one full write: data, address+digits, control."""
    command, *segments = transactions[1]
    assert transactions[0] == [0x40] and command == 0xC0
    return segments, transactions[2][0]


def test_colon_module_shows_tenths_with_the_colon_decoded_from_the_pins(wire: Any) -> None:
    """Defect 5: on the 4-digit clock module (colon, no points) "4.9" used to read "49"."""
    from firmware_bridge.gpio import TM1637Display

    _, log = wire
    dp = TM1637Display(5, 6, background=False)
    colon = TM1637Display(12, 13, module="colon", background=False)
    try:
        for display, clk, dio in ((dp, 5, 6), (colon, 12, 13)):
            log.clear()
            display.show(DisplayFrame("4.9", "critical", 0))
            segments, _ = _picture(decode_tm1637(log, clk=clk, dio=dio))
            if display is dp:
                assert segments == [0, 0, 0x66 | 0x80, 0x6F]  # "4." "9"
            else:
                # digit 2 carries the colon bit (its only extra segment); "4" before it,
                # "9" after it: reads 4:9, never 49
                assert segments == [0, 0x66 | 0x80, 0x6F, 0]
        log.clear()
        colon.show(DisplayFrame("35", "running", 0))
        segments, _ = _picture(decode_tm1637(log, clk=12, dio=13))
        assert segments == [0, 0, 0x4F, 0x6D] and not any(s & 0x80 for s in segments)
    finally:
        dp.close()
        colon.close()


def test_close_turns_the_display_off_on_the_wire(wire: Any) -> None:
    """Defect 6: closing never sent display-off; a crash left the last time lit."""
    from firmware_bridge.gpio import TM1637Display

    _, log = wire
    display = TM1637Display(5, 6, brightness=5, background=False)
    display.show(DisplayFrame("12", "running", 0))
    log.clear()
    display.close()
    segments, control = _picture(decode_tm1637(log, clk=5, dio=6))
    assert segments == [0, 0, 0, 0] and control == 0x80  # 0x08 (display on) is clear


def test_offline_frames_blink_the_colon(wire: Any, wait_until: WaitUntil) -> None:
    from firmware_bridge.gpio import TM1637Display

    _, log = wire
    TM1637Display.BLINK_S = 0.02  # type: ignore[misc]
    display = TM1637Display(5, 6, module="colon")
    try:
        display.show(DisplayFrame("12", "running", 0, offline=True))
        assert wait_until(lambda: len(decode_tm1637(log, 5, 6)) >= 9, timeout=2.0)
        pictures = [t[1][1 + 1] for t in [decode_tm1637(log, 5, 6)[i:i + 3]
                                           for i in range(0, 9, 3)]]
        assert {p & 0x80 for p in pictures} == {0, 0x80}, pictures  # the colon blinks
        assert {p & 0x7F for p in pictures} == {0x00}  # digit 2 is blank for "12"
        log.clear()
        display.show(DisplayFrame("12", "running", 0))  # back online: steady, no colon
        assert display.wait_idle()
        log.clear()
        import time

        time.sleep(0.1)  # real time under test: a steady display does not blink meanwhile
        assert log == []
    finally:
        TM1637Display.BLINK_S = 0.5  # type: ignore[misc]
        display.close()


def test_tm1637_status_reports_a_chip_that_does_not_acknowledge(wire: Any) -> None:
    from firmware_bridge.gpio import TM1637Display

    display = TM1637Display(5, 6, background=False)
    display.show(DisplayFrame("1", "ready", 0))
    # mock pins have no chip to pull DIO low: exactly what a broken wire looks like
    assert display.status()["acknowledging"] is False and display.last_write_acked is False
    display.close()


def test_buzzer_polarity_and_tones(mock_factory: Any, wait_until: WaitUntil) -> None:
    """Defect 10: active-low relay modules: idle is high, a tone drives the pin low."""
    from firmware_bridge.gpio import GpioBuzzer

    buzzer = GpioBuzzer(18, active_high=False)
    pin = mock_factory.pin(18)
    try:
        assert pin.state is True  # silent from the start: a low-active relay stays off
        buzzer.refused()  # three pips: on, off, on, off, on
        assert wait_until(lambda: [s.state for s in pin.states][-1] is True
                          and len(pin.states) >= 7, timeout=2.0)
        levels = [s.state for s in pin.states][1:]  # after the mock pin's own initial low
        assert levels[0] is True and levels.count(False) == 3, levels
        buzzer.chirp()
        assert wait_until(lambda: len(pin.states) >= 9, timeout=1.0)
    finally:
        buzzer.close()
    assert pin.state is True
