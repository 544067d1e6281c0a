from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A real `shotclock serve` on a free loopback port and a fresh SQLite file."""
    proc = ServerProcess(tmp_path / "shotclock.db").start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]
                                  ) -> Iterator[None]:
    """After pytest-randomly shuffled the modules (it wraps this hook too; a conftest's
    wrapper is outside an installed plugin's), keep each directory of tests/ together, in
    the shuffled order of its first module: Playwright's sync API runs an event loop in
    this thread while the browser package's Chromium is up, so an async test of another
    package must not run between two browser modules (and Chromium starts once)."""
    rootpath = Path(str(config.rootpath))
    for item in items:
        if Path(str(item.path)).relative_to(rootpath).as_posix().startswith(SERIAL):
            item.add_marker(pytest.mark.serial)
    result = yield
    root = rootpath / "tests"
    first: dict[str, int] = {}

    def group(item: pytest.Item) -> str:
        try:
            parts = Path(str(item.path)).relative_to(root).parts
        except ValueError:  # a test file outside tests/
            return str(item.path)
        return parts[0] if len(parts) > 1 else parts[0] + "::"

    for i, item in enumerate(items):
        first.setdefault(group(item), i)
    items.sort(key=lambda item: first[group(item)])
    return result


def pytest_report_collectionfinish(config: pytest.Config) -> str | None:
    return _seed_line(config)


def _seed_line(config: pytest.Config) -> str | None:
    seed = getattr(config.option, "randomly_seed", None)
    if seed is None or not config.pluginmanager.has_plugin("randomly"):
        return None
    return (f"random order: --randomly-seed={seed} (run the same order again with "
            f"`pytest -p randomly --randomly-seed={seed} ...`; -p no:randomly for file order)")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config
                            ) -> None:
    line = _seed_line(config)
    if line:
        terminalreporter.write_line(line)
