"""``shotclock serve`` with SHOTCLOCK_HARDWARE=serial against the display emulator on a pty.

The real server runs as a subprocess; the emulator runs in this process and records every
frame it decodes, exactly what the big digits would show.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from firmware_bridge.emulator import DisplayEmulator
from tests.server import ServerProcess

pytestmark = pytest.mark.e2e


def _texts(emu: DisplayEmulator) -> list[str]:
    return [line.split()[1] for line in emu.lines if line.startswith("DISPLAY ")]


def _serve(tmp_path: Path, emu: DisplayEmulator, **env: str) -> ServerProcess:
    server = ServerProcess(tmp_path / "clock.db", env={
        "SHOTCLOCK_HARDWARE": "serial", "SHOTCLOCK_SERIAL_PORT": emu.path,
        # no Pi here: the GPIO buttons fail to open, which must not stop the service
        **env,
    })
    return server.start()


@pytest.fixture
def display() -> Iterator[DisplayEmulator]:
    emu = DisplayEmulator(timeout_ms=1000, quiet=True)
    emu.start()
    yield emu
    emu.stop()


def test_table_1_counts_down_on_the_serial_display(tmp_path: Path,
                                                   display: DisplayEmulator) -> None:
    server = _serve(tmp_path, display)
    try:
        # the ready clock of the default table is on the digits before anything is pressed
        assert display.wait_line("DISPLAY 35 ready p0 ext=1,1 fouls=0,0", timeout=3.0), \
            display.lines
        status, state = server.command("1", "start")
        assert status == 200 and state["phase"] == "running", state
        assert display.wait_line("DISPLAY 35 running p0 ext=1,1 fouls=0,0", timeout=1.0)
        assert display.wait_line("DISPLAY 34 running p0 ext=1,1 fouls=0,0", timeout=1.5), \
            display.lines
        status, state = server.command("1", "pause")
        assert status == 200
        assert display.wait_for(lambda lines: lines[-1].startswith("DISPLAY 34 paused"), 1.0)
        assert display.buzzes == []
        # the gpio buttons could not open on this machine: a fault for people (health,
        # console), the log says it too, and the service kept running (defect 2)
        log = server.log.read_text()
        assert "buttons failed to open" in log, log[-2000:]
        health = server.get("/api/health")
        faults = {f["code"]: f for f in health["faults"]}
        assert faults["device_failed"]["component"] == "hardware", health
        assert faults["device_failed"]["table"] == "1"
        hardware = health["components"]["hardware"]
        assert hardware["kind"] == "serial" and hardware["display"]["connected"], hardware
        assert hardware["display"]["acknowledging"], hardware
        assert hardware["display"]["last_ack_age_ms"] < 1000, hardware
        assert "buttons" in hardware["failed"]
        # the boot self-test lit every segment before the clock came up
        shown = _texts(display)
        assert shown[0] == "8.8.8.8." and shown.index("8.8.8.8.") < shown.index("35"), shown
    finally:
        server.stop()
    # a clean stop closes the port: the controller loses its heartbeat and blanks (FAULT)
    assert display.wait_for(lambda lines: any(x.startswith("FAULT") for x in lines), 2.0), \
        display.lines


def test_table_created_later_expires_with_the_long_tone(tmp_path: Path,
                                                        display: DisplayEmulator) -> None:
    config = tmp_path / "hw.toml"
    config.write_text('kind = "serial"\ntable_id = "hw"\n[buttons]\nenabled = false\n')
    server = _serve(tmp_path, display, SHOTCLOCK_HARDWARE_CONFIG=str(config))
    try:
        # the configured table does not exist yet: nothing is shown, nothing fails
        status, created = server.post("/api/tables", {
            "id": "hw", "players": ["Ivanov", "Petrov"],
            "profile": {"shot_ms": 2000, "floor_ms": 2000, "warnings_ms": [1000]},
        })
        assert status == 201, created
        assert display.wait_line("DISPLAY 2.0 ready p0 ext=1,1 fouls=0,0", timeout=2.0), \
            display.lines
        started = time.monotonic()
        status, state = server.command("hw", "start")
        assert status == 200, state
        assert display.wait_line("BUZZER long", timeout=3.0), display.lines
        elapsed = time.monotonic() - started
        assert 1.8 < elapsed < 2.6, elapsed
        texts = _texts(display)
        # the digits counted down in tenths (below 5 s) to the end, then the time foul
        for shown in ("2.0", "1.5", "1.0", "0.5", "0.1"):
            assert shown in texts, texts
        assert display.buzzes == ["beep", "long"]  # the 1 s warning, then 12.4's long tone
        assert display.wait_for(
            lambda lines: any(x.startswith("DISPLAY 0.0 expired") for x in lines), 1.0)
        # table 1 is not this box's table: its clock is never drawn here. Proof that it
        # would have been by now: a later command on this box's table is drawn.
        assert server.command("1", "start")[0] == 200
        drawn = len(display.lines)
        status, state = server.command("hw", "hand_back")
        assert status == 200, state
        assert display.wait_for(lambda lines: any(
            x.startswith("DISPLAY ") and " expired " not in x for x in lines[drawn:]), 2.0), \
            display.lines
        assert "35" not in _texts(display)
    finally:
        server.stop()
