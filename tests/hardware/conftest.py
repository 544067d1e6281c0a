"""Fixtures for the table-side hardware tests: fresh mock pins, an emulated display on a pty."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from firmware_bridge.emulator import DisplayEmulator
from tests.waiting import until


@pytest.fixture
def mock_factory() -> Iterator[object]:
    """A fresh gpiozero MockFactory per test, reset afterwards (else GPIOPinInUse leaks)."""
    from gpiozero import Device
    from gpiozero.pins.mock import MockFactory

    factory = MockFactory()
    previous = Device.pin_factory
    Device.pin_factory = factory
    yield factory
    factory.reset()
    Device.pin_factory = previous


@pytest.fixture
def pwm_factory() -> Iterator[object]:
    """Like mock_factory, with PWM-capable pins (TonalBuzzer)."""
    from gpiozero import Device
    from gpiozero.pins.mock import MockFactory, MockPWMPin

    factory = MockFactory(pin_class=MockPWMPin)
    previous = Device.pin_factory
    Device.pin_factory = factory
    yield factory
    factory.reset()
    Device.pin_factory = previous


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[DisplayEmulator]:
    """A display controller emulator on a pty, reachable at a stable symlink (like udev's)."""
    emu = DisplayEmulator(timeout_ms=300, link=str(tmp_path / "shotclock-display"))
    emu.start()
    yield emu
    emu.stop()


def _wait_until(condition: Callable[[], bool], timeout: float = 1.0) -> bool:
    """Poll a condition (tests.waiting.until) for state that has no condition variable:
    true, or an AssertionError saying what was awaited."""
    return bool(until(condition, timeout, 0.002))


@pytest.fixture
def wait_until() -> Callable[..., bool]:
    return _wait_until
