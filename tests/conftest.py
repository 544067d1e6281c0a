from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.thread_server import ThreadServer

# `make test-fast` (pytest --fast): the pure cores and the unit tests, for the inner loop.
# These directories and files are left out whole (servers, brokers, Chromium, real time);
# anything else that starts a server or a broker is skipped when it tries (harness/server.py,
# harness/broker.py), so a new slow test cannot slip into the fast set unnoticed.
SLOW = (
    "tests/browser/", "tests/faults/", "tests/mqtt/", "tests/contract/",
    "tests/camera/test_e2e_camera.py", "tests/camera/test_camera_calibration.py",
    "tests/reports/test_reports_e2e.py", "tests/reports/test_worker_lifetime.py",
    "tests/hardware/test_install.py", "tests/hardware/test_install_script.py",
    "tests/hardware/test_firmware.py", "tests/hardware/test_serve_faults.py",
    "tests/hardware/test_serve_serial.py", "tests/hardware/test_remote.py",
    "tests/test_e2e.py", "tests/test_client.py",
)
SLOW_MARKERS = ("e2e", "browser", "mqtt", "serial")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fast", action="store_true",
                     help="the pure cores and unit tests only: no servers, no browser, no "
                          "broker, nothing in real time (make test-fast)")


# Every process a test starts (shotclock serve/hall, their reports workers and
# multiprocessing's resource trackers, mosquitto, chromium, emulators) stays a descendant of
# this pytest process: it is made a child subreaper (Linux prctl), so a process orphaned by
# its parent's death (a SIGKILLed serve's worker) is handed to pytest instead of init. At the
# end of the session any such process still alive fails the run (issue 18).
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
LEFTOVER_GRACE_S = 10.0

@pytest.fixture
def server(tmp_path: Path) -> Iterator[ThreadServer]:
    """``shotclock serve``'s service on a free loopback port and a fresh SQLite file, in a
    thread of this process (harness/thread_server.py): a test that kills, restarts or
    signals it starts a ServerProcess instead."""
    with ThreadServer(tmp_path / "shotclock.db") as service:
        yield service


@pytest.fixture
def webhook_receiver() -> Iterator[Any]:
    """A results webhook's receiver on a free loopback port that takes every POST (200)
    (tests/tournament/test_results_webhook.py ``Receiver``)."""
    from tests.tournament.test_results_webhook import Receiver

    receiver = Receiver(fail=0)
    try:
        yield receiver
    finally:
        receiver.close()


_reaping = False


def pytest_configure(config: pytest.Config) -> None:
    global _reaping
    import harness.broker
    import harness.server

    if config.getoption("--fast"):
        harness.server.FAST = harness.broker.FAST = True
    # Services forked from one that has imported them (harness/zygote.py): 1 s of CPU less
    # per start, about two hundred starts in `make test`. SHOTCLOCK_TEST_FORK=0: fresh ones.
    harness.server.FORK = os.environ.get("SHOTCLOCK_TEST_FORK", "1") != "0"
    if not sys.platform.startswith("linux") or hasattr(config, "workerinput"):
        return  # with pytest-xdist the controller reaps: its workers' children are its too
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        _reaping = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]
                                  ) -> Iterator[None]:
    """After pytest-randomly shuffled the modules (it wraps this hook too; a conftest's
    wrapper is outside an installed plugin's), keep each directory of tests/ together, in
    the shuffled order of its first module: Playwright's sync API runs an event loop in
    this thread while the browser package's Chromium is up, so an async test of another
    package must not run between two browser modules (and Chromium starts once)."""
    rootpath = Path(str(config.rootpath))
    if config.getoption("--fast"):
        keep, slow = [], []
        for item in items:
            path = Path(str(item.path)).relative_to(rootpath).as_posix()
            if path.startswith(SLOW) or any(item.get_closest_marker(m) for m in SLOW_MARKERS):
                slow.append(item)
            else:
                keep.append(item)
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = keep
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


def _ours() -> list[Any]:
    """Live descendants of this pytest process (zombies are dead; they wait to be reaped),
    but for its own multiprocessing resource tracker (it ends when pytest does) and
    pytest-xdist's workers."""
    import psutil

    exempt = set()
    tracker = getattr(sys.modules.get("multiprocessing.resource_tracker"), "_resource_tracker",
                      None)
    if tracker is not None and getattr(tracker, "_pid", None):
        exempt.add(tracker._pid)
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.pid in exempt or proc.status() == psutil.STATUS_ZOMBIE:
                continue
            if any("execnet" in part for part in proc.cmdline()):
                continue
        except psutil.Error:
            continue
        found.append(proc)
    return found


def _describe(proc: Any) -> str:
    try:
        return f"{proc.pid} {' '.join(proc.cmdline())[:160]}"
    except Exception:  # noqa: BLE001 - it may have just ended
        return str(proc.pid)


@pytest.hookimpl(trylast=True)  # after pytest's own, which tears down the fixtures still
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:  # up (Ctrl-C)
    """Fail the run if a process started by the tests outlived them (killed then, so it
    does not outlive the run too). In-process reports workers are shut down first: they
    end with pytest, they are not left behind. Runs after the fixtures' teardown: on an
    interrupted run, a module's server is stopped by its fixture, not reported here."""
    from harness.zygote import Zygote

    Zygote.close_all()  # its running children, if any, are left for the check below
    if not _reaping:
        return  # not Linux, or a pytest-xdist worker (the controller checks)
    worker = sys.modules.get("clock_service.edges.reports.worker")
    if worker is not None:
        worker.shutdown()
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while (left := _ours()) and time.monotonic() < deadline:
        time.sleep(0.2)
    if not left:
        return
    described = [_describe(p) for p in left]
    for proc in left:
        with contextlib.suppress(Exception):  # gone meanwhile
            proc.kill()
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    text = (f"{len(left)} process(es) started by the tests were still alive "
            f"{LEFTOVER_GRACE_S:g} s after the session (killed now):\n  "
            + "\n  ".join(described))
    if reporter is not None:
        reporter.write_sep("=", "processes left behind", red=True)
        reporter.write_line(text)
    else:
        print(text, file=sys.stderr)
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
