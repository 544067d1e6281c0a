"""The referee buttons: real gpiozero ``Button`` objects on ``MockFactory`` pins.

Press times come from an injected clock (the service's); the stable-low filter and the
long press run on real time (gpiozero's hold thread, the settle timers), so the tests use a
short debounce and hold time and wait for the outcome instead of sleeping blind.
Issue 10: defect 3 (a long press undid itself) and defect 7 (one spike was a full press).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from clock_service.service.runtime import Runtime
from clock_service.service.storage import Store
from clock_service.service.timesource import FakeTime
from firmware_bridge.errors import HardwareConfigError
from firmware_bridge.interfaces import ButtonPress, Buttons, FakeBuzzer, FakeDisplay
from tests.waiting import until_async

WaitUntil = Callable[..., bool]
DEBOUNCE_MS = 10.0
HOLD_MS = 120.0
SETTLED_S = DEBOUNCE_MS / 1000 * 4  # long enough for a settle timer, even under load


class FakeClock:
    def __init__(self) -> None:
        self.ms = 1_000_000.0

    def __call__(self) -> float:
        return self.ms

    def advance(self, ms: float) -> None:
        self.ms += ms


class ManualTimers:
    """The settle timers, fired when the test says the line has been quiet long enough
    (so a "spike" is a spike however slowly a loaded machine runs the test)."""

    def __init__(self) -> None:
        self.pending: list[list[Any]] = []

    def __call__(self, delay_s: float, callback: Callable[[], None]) -> Any:
        entry = [callback, False]

        class Handle:
            def cancel(self) -> None:
                entry[1] = True

        self.pending.append(entry)
        return Handle()

    def quiet(self) -> None:
        """debounce_ms of quiet on every line: run what is still scheduled."""
        due, self.pending = self.pending, []
        for callback, cancelled in due:
            if not cancelled:
                callback()


@pytest.fixture
def manual(mock_factory: Any) -> Iterator[tuple[Any, FakeClock, list[ButtonPress], ManualTimers]]:
    from firmware_bridge.gpio import GpioButtons

    clock, timers = FakeClock(), ManualTimers()
    presses: list[ButtonPress] = []
    driver = GpioButtons({"start_shot": 17, "extension": 27, "turn": 22, "pause": 23},
                         debounce_ms=DEBOUNCE_MS, long_press_ms=HOLD_MS, now_ms=clock,
                         timer=timers)
    driver.start(presses.append)
    yield driver, clock, presses, timers
    driver.close()


@pytest.fixture
def rig(mock_factory: Any) -> Iterator[tuple[Any, FakeClock, list[ButtonPress]]]:
    from firmware_bridge.gpio import GpioButtons

    clock = FakeClock()
    presses: list[ButtonPress] = []
    driver = GpioButtons({"start_shot": 17, "extension": 27, "turn": 22, "pause": 23,
                          "extension_p1": 24, "extension_p2": 25},
                         debounce_ms=DEBOUNCE_MS, long_press_ms=HOLD_MS, now_ms=clock)
    driver.start(presses.append)
    yield driver, clock, presses
    driver.close()


def _settle() -> None:
    time.sleep(SETTLED_S)  # real time under test: no press may come of the debounce window


def test_each_button_reports_its_name_and_first_edge_time(mock_factory: Any) -> None:
    from firmware_bridge.gpio import GpioButtons

    clock, timers = FakeClock(), ManualTimers()
    presses: list[ButtonPress] = []
    pins = {"start_shot": 17, "extension": 27, "turn": 22, "pause": 23,
            "extension_p1": 24, "extension_p2": 25}
    driver = GpioButtons(pins, debounce_ms=DEBOUNCE_MS, long_press_ms=HOLD_MS, now_ms=clock,
                         timer=timers)
    driver.start(presses.append)
    try:
        assert isinstance(driver, Buttons)
        for n, (name, pin) in enumerate(pins.items(), start=1):
            clock.advance(100)
            mock_factory.pin(pin).drive_low()
            at = clock.ms
            clock.advance(80)  # the clock moves on: the press keeps its first edge's time
            timers.quiet()
            mock_factory.pin(pin).drive_high()
            timers.quiet()
            assert len(presses) == n and presses[-1] == ButtonPress(name, at), presses
        assert all(s["seen"] and s["presses"] == 1 for s in driver.status().values())
        # when (the console's status view): first and latest press, at their first edges
        status = driver.status()
        assert [(status[p.button]["seen_at"], status[p.button]["last_at"]) for p in presses] == [
            (p.at_ms, p.at_ms) for p in presses]
    finally:
        driver.close()


def test_a_noise_spike_is_not_a_press(manual: Any, mock_factory: Any) -> None:
    """Defect 7: a sub-millisecond glitch used to be a full start/shot."""
    driver, clock, presses, timers = manual
    for pin in (17, 27, 22, 23):
        mock_factory.pin(pin).drive_low()
        clock.advance(0.3)
        mock_factory.pin(pin).drive_high()
    timers.quiet()  # then the lines stay high
    assert presses == [] and driver.noise == 4
    assert not any(s["seen"] for s in driver.status().values())
    mock_factory.pin(27).drive_low()  # a real press: low, and it stays low
    timers.quiet()
    assert presses == [ButtonPress("extension", clock.ms)]


def test_chattering_contacts_give_one_press_with_the_first_edge(
        manual: Any, mock_factory: Any) -> None:
    _, clock, presses, timers = manual
    pin = mock_factory.pin(22)  # turn: acts as soon as the press is stable
    pin.drive_low()
    first = clock.ms
    for _ in range(4):  # contact bounce: every edge restarts the quiet time
        clock.advance(1)
        pin.drive_high()
        clock.advance(1)
        pin.drive_low()
    timers.quiet()
    assert presses == [ButtonPress("turn", first)]
    clock.advance(100)
    pin.drive_high()
    for _ in range(3):  # release bounce
        pin.drive_low()
        pin.drive_high()
    timers.quiet()
    assert len(presses) == 1
    clock.advance(250)
    pin.drive_low()  # a real second press later (past the double-press guard) still counts
    timers.quiet()
    assert presses[-1] == ButtonPress("turn", clock.ms) and len(presses) == 2


def test_a_short_press_of_start_shot_acts_on_release_with_its_edge_time(
        manual: Any, mock_factory: Any) -> None:
    _, clock, presses, timers = manual
    pin = mock_factory.pin(17)
    pin.drive_low()
    pressed_at = clock.ms
    timers.quiet()
    assert presses == []  # it might still become a long press
    clock.advance(60)
    pin.drive_high()
    timers.quiet()
    assert presses == [ButtonPress("start_shot", pressed_at)]


def test_a_long_press_is_only_the_correction_with_gpiozero_when_held(
        rig: Any, mock_factory: Any, wait_until: WaitUntil) -> None:
    """Defect 3: the edge sent start/shot and the release undid that same press."""
    driver, clock, presses = rig
    button = driver._buttons["start_shot"]
    assert button.hold_time == HOLD_MS / 1000 and button.when_held is not None
    pin = mock_factory.pin(17)
    pin.drive_low()
    pressed_at = clock.ms
    # gpiozero's hold thread fires while the button is still down
    assert wait_until(lambda: len(presses) == 1, timeout=2.0)
    assert presses == [ButtonPress("start_shot", pressed_at, long=True)]
    assert button.is_pressed
    clock.advance(500)
    pin.drive_high()
    _settle()
    assert presses == [ButtonPress("start_shot", pressed_at, long=True)]  # nothing more
    # other buttons have no long press: holding them is one plain press
    mock_factory.pin(23).drive_low()
    assert wait_until(lambda: len(presses) == 2)
    time.sleep(HOLD_MS * 2 / 1000)  # real time under test: a hold past the long-press time
    mock_factory.pin(23).drive_high()
    _settle()
    assert [p.long for p in presses] == [True, False] and presses[-1].button == "pause"


def test_button_config_is_validated(mock_factory: Any) -> None:
    from firmware_bridge.gpio import GpioButtons

    with pytest.raises(HardwareConfigError, match="share a pin"):
        GpioButtons({"start_shot": 17, "pause": 17})
    with pytest.raises(HardwareConfigError, match="unknown buttons"):
        GpioButtons({"start": 17})
    with pytest.raises(HardwareConfigError, match="debounce_ms < long_press_ms"):
        GpioButtons({"start_shot": 17}, debounce_ms=0)


# -- through the bridge and the runtime: what the referee sees ------------------------------


async def test_a_long_press_corrects_the_previous_press_not_itself(
        tmp_path: Path, mock_factory: Any) -> None:
    from firmware_bridge.bridge import TableBridge
    from firmware_bridge.gpio import GpioButtons

    fake = FakeTime()
    runtime = Runtime(Store(tmp_path / "b.db"), fake)
    await runtime.start(default_table=None)
    await runtime.create_table("t", ["A", "B"])
    buzzer = FakeBuzzer()
    buttons = GpioButtons({"start_shot": 17, "extension_p2": 25}, debounce_ms=DEBOUNCE_MS,
                          long_press_ms=HOLD_MS, now_ms=fake.now_ms)
    bridge = TableBridge(runtime, "t", display=FakeDisplay(), buzzer=buzzer, buttons=buttons)
    bridge.attach()
    pin = mock_factory.pin(17)
    try:
        state = buttons._state["start_shot"]
        fake.advance(1000)
        pin.drive_low()
        await until_async(lambda: state.accepted)  # stable low seen
        pin.drive_high()  # a short press: start
        await until_async(lambda: runtime.state("t")["phase"] == "running")
        fake.advance(10_000)
        pin.drive_low()
        pressed = fake.now_ms()
        fake.advance(150)  # the release comes 150 ms later: the shot is timed at the press
        await until_async(lambda: state.accepted)
        pin.drive_high()
        await until_async(lambda: runtime.state("t")["phase"] == "ready")
        table = runtime.tables["t"]
        await until_async(lambda: table.published_seq == table.seq)  # on disk: readable
        stopped = [e for e in await runtime.events_since("t", 0) if e["type"] == "clock.stopped"]
        assert stopped[-1]["press_at"] == int(pressed) and stopped[-1]["source"] == "button"
        assert stopped[-1]["data"]["remaining_ms"] == 35_000 - 10_000

        # The referee holds start/shot: the shot just pressed is taken back, nothing else.
        fake.advance(2000)
        pin.drive_low()
        await until_async(lambda: "chirp" in buzzer.calls)
        await until_async(lambda: runtime.state("t")["phase"] == "paused")
        pin.drive_high()
        await asyncio.sleep(SETTLED_S * 2)  # real time: the release's debounce must add nothing
        state = runtime.state("t")
        assert state["phase"] == "paused" and state["remaining_ms"] == 25_000, state
        await until_async(lambda: table.published_seq == table.seq)
        kinds = [e["type"] for e in await runtime.events_since("t", 0)]
        assert kinds[-3:] == ["clock.started", "clock.stopped", "correction.undone"], kinds

        # Player 2's own extension button, while player 1 is at the table: refused, and
        # the buzzer says so with its "refused" pips.
        mock_factory.pin(25).drive_low()
        await until_async(lambda: "refused" in buzzer.calls)
        mock_factory.pin(25).drive_high()
        assert "not at the table" in bridge.refusals[-1] or "at the table" in bridge.refusals[-1]
        assert runtime.state("t")["extensions_left"] == [1, 1]
    finally:
        bridge.close()
        await runtime.stop()


def test_a_second_press_within_the_guard_is_ignored(manual: Any, mock_factory: Any) -> None:
    """Issue 23, one press is one press: a second press of the same button less than
    double_press_ms (300) after its last accepted press is a bounce, not a command; the
    guard measures press times (first edges), so it holds however slowly the test runs.
    gpiozero's bounce_time is not used (MockFactory ignores it anyway)."""
    driver, clock, presses, timers = manual
    turn, pause = mock_factory.pin(22), mock_factory.pin(23)

    def tap(pin: Any, hold_ms: float = 30) -> None:
        pin.drive_low()
        timers.quiet()
        clock.advance(hold_ms)
        pin.drive_high()
        timers.quiet()

    tap(turn)
    first = presses[-1].at_ms
    clock.advance(40)  # 70 ms after the first press: a clicker's double
    tap(turn)
    clock.advance(150)  # 250 ms after it: still a double
    tap(turn)
    assert [p.button for p in presses] == ["turn"] and driver.double_presses == 2
    tap(pause)  # another button is another button
    assert [p.button for p in presses] == ["turn", "pause"]
    clock.advance(300 - (clock.ms - first))  # exactly 300 ms after the accepted press
    tap(turn)
    assert [p.button for p in presses] == ["turn", "pause", "turn"]
    assert presses[-1].at_ms - first == 300


def test_start_shot_double_press_gives_one_start(manual: Any, mock_factory: Any) -> None:
    """Start/shot acts on release: a quick second press is ignored on its release too,
    while a long press (the correction) is never taken for a double press."""
    driver, clock, presses, timers = manual
    pin = mock_factory.pin(17)
    for _ in range(2):  # two short presses 100 ms apart
        pin.drive_low()
        timers.quiet()
        clock.advance(40)
        pin.drive_high()
        timers.quiet()
        clock.advance(60)
    assert len(presses) == 1 and driver.double_presses == 1
    pin.drive_low()
    driver._held("start_shot")  # what gpiozero's hold thread calls after long_press_ms
    assert presses[-1].long and len(presses) == 2


def test_guard_window_is_a_setting(mock_factory: Any) -> None:
    from firmware_bridge.gpio import GpioButtons

    clock, timers = FakeClock(), ManualTimers()
    presses: list[ButtonPress] = []
    driver = GpioButtons({"turn": 22}, debounce_ms=DEBOUNCE_MS, long_press_ms=HOLD_MS,
                         double_press_ms=0, now_ms=clock, timer=timers)
    driver.start(presses.append)
    try:
        for _ in range(2):
            mock_factory.pin(22).drive_low()
            timers.quiet()
            clock.advance(20)
            mock_factory.pin(22).drive_high()
            timers.quiet()
        assert len(presses) == 2  # 0: off
    finally:
        driver.close()
    with pytest.raises(HardwareConfigError, match="double_press_ms"):
        GpioButtons({"turn": 22}, double_press_ms=-1)
