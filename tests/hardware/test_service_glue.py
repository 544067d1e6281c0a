"""The pieces around the drivers: the store's default path, systemd's notify protocol,
permission checks, the USB pedal's key map, the hardware monitor and the dimming API."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from clock_service.service.sdnotify import Watchdog, notify, watchdog_interval_s
from clock_service.service.settings import Settings, default_db_path
from clock_service.service.status import Health
from firmware_bridge.config import HardwareConfig, permission_problems
from firmware_bridge.errors import HardwareConfigError

# -- defect 1: the store's default path never depends on the working directory --------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"STATE_DIRECTORY": "/var/lib/shotclock", "HOME": "/home/x"},
         "/var/lib/shotclock/shotclock.db"),
        ({"STATE_DIRECTORY": "/var/lib/shotclock:/var/lib/other"},
         "/var/lib/shotclock/shotclock.db"),
        ({"XDG_STATE_HOME": "/home/x/.state", "HOME": "/home/x"},
         "/home/x/.state/shotclock/shotclock.db"),
        ({"XDG_STATE_HOME": "relative/ignored", "HOME": "/home/x"},
         "/home/x/.local/state/shotclock/shotclock.db"),
        ({"HOME": "/home/x"}, "/home/x/.local/state/shotclock/shotclock.db"),
    ],
)
def test_default_store_path_is_the_state_directory(env: dict[str, str], expected: str) -> None:
    assert default_db_path(env) == expected


def test_settings_default_store_is_absolute_whatever_the_cwd(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")
    monkeypatch.delenv("SHOTCLOCK_DB", raising=False)
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    settings = Settings.from_env()
    assert Path(settings.db).is_absolute() and settings.db.startswith(str(tmp_path))
    assert Path(Settings().db).is_absolute()  # not "var/shotclock.db" (was: /var/shotclock.db)


# -- sd_notify: READY, WATCHDOG over a real datagram socket ----------------------------------


@pytest.fixture
def notify_socket(tmp_path: Path) -> Any:
    path = tmp_path / "notify"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(2.0)
    yield str(path), sock
    sock.close()


def test_notify_speaks_systemds_protocol(notify_socket: Any) -> None:
    path, sock = notify_socket
    assert notify("READY=1", {"NOTIFY_SOCKET": path})
    assert sock.recv(100) == b"READY=1"
    assert not notify("READY=1", {})  # not under systemd: a no-op
    env = {"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid())}
    assert watchdog_interval_s(env) == 1.0
    assert watchdog_interval_s({**env, "WATCHDOG_PID": "1"}) is None  # meant for another pid
    assert watchdog_interval_s({}) is None


async def test_watchdog_pats_from_the_event_loop(notify_socket: Any) -> None:
    path, sock = notify_socket
    dog = Watchdog({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "40000"})  # 40 ms: pat every 20
    dog.start("serving")
    assert await asyncio.to_thread(sock.recv, 100) == b"READY=1\nSTATUS=serving"
    assert await asyncio.to_thread(sock.recv, 100) == b"WATCHDOG=1"
    await asyncio.sleep(0.1)  # real time under test: the pats go on every 20 ms meanwhile
    await dog.stop()
    messages = []
    sock.settimeout(0.2)
    while True:
        try:
            messages.append(sock.recv(100))
        except TimeoutError:
            break
    assert messages[-1] == b"STOPPING=1" and b"WATCHDOG=1" in messages
    assert dog.pats >= 3


# -- defect 10: a missing group is named -------------------------------------------------------


def test_permission_problems_name_the_group() -> None:
    config = HardwareConfig(kind="serial", serial_port="/dev/ttyACM0",
                            hid_device="/dev/input/event3", hid_keys={"KEY_A": "start_shot"})

    def access(path: str, mode: int) -> bool:
        return path == "/dev/input/event3"  # only the pedal is allowed

    problems = permission_problems(config, access=access, exists=lambda p: True,
                                   gpiochips=["/dev/gpiochip0"])
    assert [(d, g) for d, g, _ in problems] == [("/dev/gpiochip0", "gpio"),
                                                 ("/dev/ttyACM0", "dialout")]
    assert "not in group 'dialout'" in problems[1][2] and "usermod -aG dialout" in problems[1][2]
    # URLs and absent devices are not permission problems
    loop = HardwareConfig(kind="serial", serial_port="loop://", buttons_enabled=False)
    assert permission_problems(loop, access=lambda p, m: False, exists=lambda p: True) == []


async def test_monitor_raises_loud_faults_for_devices_and_permissions(tmp_path: Path) -> None:
    from firmware_bridge.monitor import HardwareMonitor

    health = Health(lambda: 1000.0)
    config = HardwareConfig(kind="gpio", table_id="3")
    monitor = HardwareMonitor(health, config)
    monitor.device_failed("buttons", PermissionError(13, "Permission denied", "/dev/gpiochip0"))
    monitor.device_failed("display", RuntimeError("lgpio: running without it"))
    faults = {f["key"]: f for f in health.faults()}
    assert faults["hardware.buttons.open"]["code"] == "no_permission"
    assert faults["hardware.display.open"]["code"] == "device_failed"
    assert all(f["table"] == "3" and f["component"] == "hardware" for f in faults.values())
    monitor.attach(None, None, None)
    try:
        assert health.components()["hardware"]["failed"].keys() == {"buttons", "display"}
    finally:
        monitor.close()


# -- the USB pedal: evdev's own events through the pure key map ---------------------------------


def test_hid_keymap_turns_key_downs_into_presses_at_the_kernels_time() -> None:
    evdev = pytest.importorskip("evdev", reason="python-evdev not installable here")
    from evdev import InputEvent, ecodes

    from firmware_bridge.hid import HidKeymap

    keymap = HidKeymap({"KEY_PAGEDOWN": "start_shot", "KEY_B": "pause"})
    now_ms, wall = 5_000_000.0, 1_700_000_000.250

    def event(code: int, value: int, sec: int = 1_700_000_000, usec: int = 200_000) -> Any:
        return InputEvent(sec, usec, ecodes.EV_KEY, code, value)

    press = keymap.press(event(ecodes.KEY_PAGEDOWN, 1), now_ms, wall)
    # the kernel saw it 50 ms before we read it: the press keeps that time
    assert press is not None and (press.button, press.source) == ("start_shot", "pedal")
    assert press.at_ms == pytest.approx(now_ms - 50.0, abs=0.01)
    assert keymap.press(event(ecodes.KEY_PAGEDOWN, 2), now_ms, wall) is None  # auto-repeat
    assert keymap.press(event(ecodes.KEY_PAGEDOWN, 0), now_ms, wall) is None  # release
    assert keymap.press(event(ecodes.KEY_A, 1), now_ms, wall) is None  # not mapped
    assert keymap.press(InputEvent(0, 0, ecodes.EV_SYN, 0, 0), now_ms, wall) is None
    # a kernel stamp from a stepped wall clock is clamped, never a press from long ago
    old = keymap.press(event(ecodes.KEY_B, 1, sec=1_600_000_000), now_ms, wall)
    assert old is not None and old.at_ms == now_ms - 1000.0
    assert evdev is not None


def test_hid_keymap_refuses_bad_names() -> None:
    from firmware_bridge.hid import HidKeymap

    codes = {"KEY_A": 30}
    with pytest.raises(HardwareConfigError, match="unknown button"):
        HidKeymap({"KEY_A": "shoot"}, codes)
    with pytest.raises(HardwareConfigError, match="not a key name"):
        HidKeymap({"KEY_NOPE": "start_shot"}, codes)


# -- night/day dimming over the API --------------------------------------------------------------


def test_brightness_api_dims_the_display_or_says_there_is_none(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from clock_service.edges.cli.main import table_app, table_service
    from clock_service.service.timesource import FakeTime

    class Dimmable:
        def __init__(self) -> None:
            self.table = "1"
            self.levels: list[int] = []

        def set_brightness(self, level: int) -> int:
            self.levels.append(level)
            return level

    app = table_app(Settings(db=str(tmp_path / "c.db"), display="none",
                             referee_token="t"), time=FakeTime())
    with TestClient(app) as client:
        auth = {"Authorization": "Bearer t"}
        none = client.put("/api/hardware/brightness", json={"level": 2}, headers=auth)
        assert none.status_code == 404 and none.json()["error"]["code"] == "no_hardware"
    display = Dimmable()
    app = table_service(Settings(db=str(tmp_path / "d.db"), display="none",
                                 referee_token="t"), time=FakeTime(), hardware=display).app
    with TestClient(app) as client:
        assert client.put("/api/hardware/brightness", json={"level": 2}).status_code == 401
        ok = client.put("/api/hardware/brightness", json={"level": 2}, headers=auth)
        assert ok.status_code == 200 and ok.json() == {"brightness": 2, "table": "1"}
        bad = client.put("/api/hardware/brightness", json={"level": 8}, headers=auth)
        assert bad.status_code == 422
        assert display.levels == [2]


def test_a_missing_group_is_logged_at_warning_and_raised_as_a_fault(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Defect 10: a missing dialout/gpio permission is said as such, at WARNING."""
    import logging

    from firmware_bridge import monitor as monitor_module
    from firmware_bridge.monitor import HardwareMonitor

    config = HardwareConfig(kind="serial", serial_port="/dev/ttyACM0", buttons_enabled=False)
    monkeypatch.setattr(monitor_module, "permission_problems", lambda c: permission_problems(
        c, access=lambda p, m: False, exists=lambda p: True, gpiochips=[]))
    health = Health(lambda: 1.0)
    with caplog.at_level(logging.WARNING, logger="firmware_bridge.monitor"):
        HardwareMonitor(health, config).check_permissions()
    (record,) = [r for r in caplog.records
                 if r.name == "firmware_bridge.monitor" and "dialout" in r.getMessage()]
    assert record.levelno == logging.WARNING and "/dev/ttyACM0" in record.getMessage()
    (fault,) = health.faults()
    assert fault["code"] == "no_permission" and "dialout" in fault["message"]


def test_unconfigured_bridge_and_refused_config_exit_78(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Defect 10: the units' RestartPreventExitStatus=78 keeps them from restart-looping."""
    from clock_service.edges.cli.main import EX_CONFIG, main
    from firmware_bridge import remote

    monkeypatch.delenv("SHOTCLOCK_SERVER", raising=False)
    assert remote.main([]) == EX_CONFIG == 78
    monkeypatch.setenv("SHOTCLOCK_HARDWARE", "usb")
    assert remote.main(["--server", "ws://127.0.0.1:1"]) == EX_CONFIG
    with pytest.raises(SystemExit) as info:
        main(["serve", "--db", str(tmp_path / "x.db")])
    assert info.value.code == EX_CONFIG


def test_the_terminal_display_says_the_link_is_lost() -> None:
    import io

    from clock_service.core.readout import DisplayFrame
    from firmware_bridge.terminal import TerminalDisplay

    out = io.StringIO()
    terminal = TerminalDisplay("1", stream=out)
    terminal.show(DisplayFrame("12", "running", 0))
    terminal.show(DisplayFrame("11", "running", 0, offline=True))
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and "LINK LOST" in lines[1] and "LINK LOST" not in lines[0]


def test_hid_keymap_ignores_a_pedal_double_press() -> None:
    """Issue 23: a pedal's contact bounce (two key-downs 40-250 ms apart) is one press; the
    guard measures the kernel's own stamps, so a late read does not make a double."""
    pytest.importorskip("evdev", reason="python-evdev not installable here")
    from evdev import InputEvent, ecodes

    from firmware_bridge.hid import HidKeymap

    keymap = HidKeymap({"KEY_PAGEDOWN": "start_shot", "KEY_PAGEUP": "pause"})
    wall0, now0 = 1_700_000_000.0, 5_000_000.0

    def down(code: int, at_s: float) -> Any:
        sec = int(wall0 + at_s)
        return InputEvent(sec, round((wall0 + at_s - sec) * 1e6), ecodes.EV_KEY, code, 1)

    def press(code: int, at_s: float, read_late_s: float = 0.01) -> Any:
        return keymap.press(down(code, at_s), now0 + (at_s + read_late_s) * 1000,
                            wall0 + at_s + read_late_s)

    assert press(ecodes.KEY_PAGEDOWN, 0.0) is not None
    assert press(ecodes.KEY_PAGEDOWN, 0.04) is None  # 40 ms: a bounce
    assert press(ecodes.KEY_PAGEDOWN, 0.25, read_late_s=0.3) is None  # read late, still 250 ms
    assert press(ecodes.KEY_PAGEUP, 0.26) is not None  # another button
    assert press(ecodes.KEY_PAGEDOWN, 0.31) is not None  # 310 ms after the accepted one
    assert keymap.guard.ignored == 2
    off = HidKeymap({"KEY_PAGEDOWN": "start_shot"}, double_press_ms=0)
    at = [off.press(down(ecodes.KEY_PAGEDOWN, s), now0 + s * 1000, wall0 + s) for s in (0, 0.04)]
    assert all(p is not None for p in at)
