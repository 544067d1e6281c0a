from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server import ServerProcess

# Tests that measure time against the wall clock (expiry lateness, latencies, timeouts, real
# gpiozero hold times, a live camera): never run them beside other tests. `make test` runs
# everything in one process; `pytest -n 2 -m "not serial"` then `pytest -m serial` splits a
# run for speed (pytest-xdist is in the test extra).
SERIAL = (
    "tests/faults/",
    "tests/mqtt/",
    "tests/camera/test_e2e_camera.py",
    "tests/reports/test_reports_e2e.py",
    "tests/hardware/test_buttons.py",
    "tests/hardware/test_gpio.py",
    "tests/hardware/test_remote.py",
    "tests/hardware/test_serial_display.py",
    "tests/hardware/test_serve_faults.py",
    "tests/hardware/test_serve_serial.py",
    "tests/browser/test_overlay.py",
    "tests/browser/test_display.py",
    "tests/test_e2e.py",
    "tests/test_client.py",
    "tests/test_press_time.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(str(config.rootpath))
    for item in items:
        if Path(str(item.path)).relative_to(root).as_posix().startswith(SERIAL):
            item.add_marker(pytest.mark.serial)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A real `shotclock serve` on a free loopback port and a fresh SQLite file."""
    proc = ServerProcess(tmp_path / "shotclock.db").start()
    try:
        yield proc
    finally:
        proc.stop()
