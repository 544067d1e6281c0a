"""The table-side bridge with the fake clock: digits derived from the deadline, redrawn at
each boundary, beeps at warnings and the long tone at expiry, button presses as commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from clock_service.core.readout import (
    MATCH_OVER_TEXT,
    format_remaining,
    match_text,
    next_change_ms,
    render,
)
from clock_service.service.runtime import Runtime
from clock_service.service.storage import Store
from clock_service.service.timesource import FakeTime
from firmware_bridge.bridge import TableBridge, command_for_press
from firmware_bridge.driver import DeviceDriver
from firmware_bridge.interfaces import ButtonPress, FakeButtons, FakeBuzzer, FakeDisplay
from tests.waiting import until_async

PROFILE = {"shot_ms": 7000, "floor_ms": 7000, "warnings_ms": [5000, 1000]}


@pytest.mark.parametrize(
    ("remaining", "text"),
    [(35000, "35"), (34001, "35"), (34000, "34"), (5001, "6"), (5000, "5.0"),
     (4901, "5.0"), (4900, "4.9"), (101, "0.2"), (1, "0.1"), (0, "0.0")],
)
def test_whole_seconds_round_up_and_tenths_in_the_last_five(remaining: int, text: str) -> None:
    assert format_remaining(remaining) == text


def test_next_change_is_the_next_digit_boundary() -> None:
    state = {"phase": "running", "deadline": 10_000.0, "timer": True}
    assert next_change_ms(state, 0.0) == 1000.0  # 10 -> 9 at 9 s left
    assert next_change_ms(state, 4999.5) == 5000.0  # "6" -> "5.0" at exactly 5 s left
    assert next_change_ms(state, 5000.0) == 5100.0
    assert render(state, 5050.0).text == "5.0" and render(state, 5100.0).text == "4.9"
    assert next_change_ms({**state, "phase": "paused"}, 0.0) is None


@pytest.mark.parametrize(("left_ms", "text"), [
    (1_123_001, "18:44"), (1_123_000, "18:43"), (545_000, "9:05"), (1_000, "0:01"), (0, "0:00"),
    (5_999_000, "99:59"), (6_000_000, "100"), (6_001_000, "101"), (7_200_000, "120"),
])
def test_the_match_clock_on_four_digits(left_ms: int, text: str) -> None:
    assert match_text(left_ms) == text


def test_between_frames_the_digits_show_the_match_clock_and_next_at_the_match_end() -> None:
    """Issue 36: the LED showed nothing between frames; the match clock runs on there."""
    mc = {"phase": "running", "deadline": 600_000.0, "remaining_ms": 600_000}
    over = {"phase": "frame_over", "player": 0, "match_clock": mc,
            "match": {"over": False, "score": [1, 0]}}
    frame = render(over, 0.0)
    assert (frame.text, frame.stage) == ("10:00", "frame_over")
    assert render(over, 400.0).text == "10:00"  # rounded up, as the pages
    assert render(over, 1000.0).text == "9:59"
    assert next_change_ms(over, 400.0) == 1000.0  # the loop wakes at each second
    paused = {**over, "match_clock": {"phase": "paused", "deadline": None, "remaining_ms": 61_000}}
    assert render(paused, 0.0).text == "1:01" and next_change_ms(paused, 0.0) is None
    ended = {**over, "match": {"over": True, "score": [2, 0]}}
    assert render(ended, 0.0).text == MATCH_OVER_TEXT == "nEXt"
    assert next_change_ms(ended, 0.0) is None
    no_limit = {k: v for k, v in over.items() if k != "match_clock"}
    assert render(no_limit, 0.0).text == ""  # no match clock: blank, as before
    assert render({**no_limit, "match": {"over": True}}, 0.0).text == "nEXt"


async def test_bridge_draws_every_second_then_tenths_and_sounds(tmp_path: Path) -> None:
    time = FakeTime()
    runtime = Runtime(Store(tmp_path / "b.db"), time)
    await runtime.start(default_table=None)
    display, buzzer, buttons = FakeDisplay(), FakeBuzzer(), FakeButtons()
    bridge = TableBridge(runtime, "t", display=display, buzzer=buzzer, buttons=buttons)
    bridge.attach()
    await runtime.create_table("t", ["A", "B"], profile=PROFILE)
    assert display.frames[-1].text == "7" and display.frames[-1].stage == "ready"

    buttons.press("start_shot", time.now_ms())  # from the loop thread here; threads hop
    await until_async(lambda: runtime.state("t")["phase"] == "running", what="started")
    time.advance(7000)
    texts = [f.text for f in display.frames]
    start = texts.index("7", 1)
    assert texts[start:start + 3] == ["7", "6", "5.0"]
    assert texts[start + 3:start + 5] == ["4.9", "4.8"]
    assert texts[-1] == "0.0" and display.frames[-1].stage == "expired"
    assert len([t for t in texts if "." in t]) == 51  # 5.0 .. 0.1, then 0.0
    assert buzzer.calls == ["beep", "beep", "long_tone"]

    buttons.press("start_shot", time.now_ms(), long=True)  # long press: undo the expiry
    await until_async(lambda: runtime.state("t")["phase"] == "paused", what="expiry undone")
    bridge.close()
    await runtime.stop()


@pytest.mark.parametrize(
    ("button", "phase", "long", "command"),
    [("start_shot", "ready", False, "start"), ("start_shot", "expired", False, "start"),
     ("start_shot", "running", False, "shot"), ("start_shot", "paused", False, "shot"),
     ("start_shot", "running", True, "undo"), ("pause", "running", False, "pause"),
     ("pause", "paused", False, "resume"), ("extension", "ready", False, "extension"),
     ("turn", "ready", False, "turn"), ("start_shot", "frame_over", False, None)],
)
def test_buttons_map_to_commands(button: str, phase: str, long: bool, command: str | None) -> None:
    result = command_for_press(ButtonPress(button, 0.0, long), phase)
    assert (result.name if result else None) == command


class _Timer:
    def cancel(self) -> None:
        pass


class _LateTime:
    """A time source whose timers fire only when the test says, as late as it likes."""

    def __init__(self, now_ms: float) -> None:
        self.now = now_ms
        self.timers: list[tuple[float, Callable[[], None]]] = []

    def now_ms(self) -> float:
        return self.now

    def call_at(self, at_ms: float, callback: Callable[[], None]) -> _Timer:
        self.timers.append((at_ms, callback))
        return _Timer()

    def fire_late(self, late_ms: float) -> float:
        """Fire the one pending timer ``late_ms`` after its instant; returns that instant."""
        (at, callback), = self.timers
        self.timers.clear()
        self.now = at + late_ms
        callback()
        return at


def test_a_late_wake_up_draws_the_tenth_true_then_and_keeps_the_deadlines_boundaries() -> None:
    """A display shows the latest, never a backlog: a redraw that wakes 130 ms late draws
    the tenth that is true then (skipping one), and the next wake-up is the deadline's
    next boundary, not a tenth after the late one (the digits never drift off the deadline;
    the real-time test, tests/hardware/test_serve_serial.py, leaves skipping to the load)."""
    time = _LateTime(0.0)
    display = FakeDisplay()
    driver = DeviceDriver(time, display=display)
    driver.update({"phase": "running", "deadline": 2000.0, "timer": True, "player": 0})
    assert [f.text for f in display.frames] == ["2.0"]
    assert time.fire_late(0.0) == 100.0  # 2.0 -> 1.9 at 1.9 s left
    assert time.fire_late(130.0) == 200.0  # woke at 330: 1.8 was true for 100..300 only
    assert [f.text for f in display.frames] == ["2.0", "1.9", "1.7"]
    assert time.timers[0][0] == 400.0  # the boundary after 330, not 330 + 100
    for _ in range(5):
        time.fire_late(1.0)
    assert [f.text for f in display.frames][-5:] == ["1.6", "1.5", "1.4", "1.3", "1.2"]
    assert time.timers[0][0] == 900.0
