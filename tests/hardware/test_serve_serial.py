"""``shotclock serve`` with SHOTCLOCK_HARDWARE=serial against the display emulator on a pty.

The real server runs as a subprocess; the emulator runs in this process and records every
frame it decodes, exactly what the big digits would show.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from firmware_bridge.emulator import DisplayEmulator
from harness.bare_loop import BareLoop
from tests.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.serial]


def _texts(emu: DisplayEmulator) -> list[str]:
    return [line.split()[1] for line in emu.lines if line.startswith("DISPLAY ")]


# What the digits promise (clock_service/core/readout.py, driver.py, serial_display.py): each
# tenth is drawn at the instant the deadline says, never before it; a wake-up that comes
# late draws the tenth that is true then (a display shows the latest, never a backlog:
# the tenths in between are skipped), so the digits lag the truth by the wake-up error of
# the chain behind a frame (the service's loop, its serial thread, the pty, the emulator's
# thread in this process), which a loaded machine stretches to tens or hundreds of ms.
TENTH_S = 0.1
# The typical frame's lag (the median): under half a tenth, or, on a machine whose own
# typical wake-up is slower (a bare loop in its own process over the same moments,
# harness/bare_loop.py: its 75th percentile), three of those (three wake-ups behind a
# frame) + 10 ms. Skipping every other tenth lags the median by a tenth.
ON_TIME_S = 0.05
# The worst frame's lag, and the expiry's: a gross bound (five tenths), or four times the
# bare loop's worst + 100 ms. Not tighter: the bare loop samples the machine every 10 ms
# and is one wake-up, not three; under load 11-16 (two CPU hogs and this test at nice 10)
# one frame lagged 338 ms while the bare loop's worst was 74 ms, and 185 ms against 15 ms.
WORST_S = 0.5
EARLY_S = 0.005  # this process's reading of the service's timeline (both align to the wall)


def _check_countdown(emu: DisplayEmulator, mark: int, deadline_ms: float, sent: float,
                     answered: float, bare: BareLoop) -> None:
    """The frames drawn from ``mark`` on: the countdown in tenths from 2.0, strictly down,
    then the expired frame and the long tone. Whatever the load: no frame is drawn before
    its tenth begins, nor the expiry before the deadline. On time: the median frame's lag
    (how long after its tenth ended the digits still showed it) within ``ON_TIME_S`` or the
    bare loop's typical allowance, so at most half the tenths are skipped or late; the
    worst lag, and the expiry, within ``WORST_S`` or the bare loop's worst allowance. A
    display drawing every other tenth, only on heartbeats, or 60 ms late fails the median
    on a machine that keeps time; one drawing early fails on any."""
    bare_samples = bare.stop()
    assert bare_samples, "the bare loop recorded nothing"
    wall = time.time() - time.monotonic()  # the service's timeline is aligned the same way
    deadline = deadline_ms / 1000.0 - wall  # on this process's monotonic clock
    assert sent + 2.0 - EARLY_S <= deadline <= answered + 2.0 + EARLY_S, \
        (deadline - sent, deadline - answered)
    # `times` grows before `lines` (the emulator's thread may still be adding a line)
    frames = [(line.split()[1], line.split()[2], at)
              for line, at in zip(emu.lines[mark:], emu.times[mark:], strict=False)
              if line.startswith("DISPLAY ")]
    stages = [stage for _, stage, _ in frames]
    assert "expired" in stages, frames
    end = stages.index("expired")
    countdown, (text, _, expired_at) = frames[:end], frames[end]
    assert text == "0.0", frames
    shown = [text for text, _, _ in countdown]
    assert all(stage == "critical" for _, stage, _ in countdown), frames  # < 5 s: critical
    tenths = [round(float(text) * 10) for text in shown]
    # From 2.0, or later when the start itself was drawn late (a clean-clone run: the start
    # answered in 297 ms, its first running frame read 1.8): the skipped tenths are judged
    # below as the lag of the "2.0" the display still showed (its ready frame).
    assert tenths and tenths[0] <= 20, shown
    assert tenths == sorted(set(tenths), reverse=True), shown  # strictly down, no backlog
    long_at = emu.times[emu.lines.index("BUZZER long", mark)]
    window = sorted(late for at, late in bare_samples
                    if (deadline - 2.0 - TENTH_S + wall) * 1000 <= at
                    <= (expired_at + wall) * 1000)
    assert window, "the bare loop has no samples over the countdown"
    typical = max(ON_TIME_S, 3 * window[len(window) * 3 // 4] / 1000 + 0.01)
    worst = max(WORST_S, 4 * window[-1] / 1000 + 0.1)
    report = []  # per frame: text, drawn at (s before the deadline) / lag behind the truth
    lags = []
    problems = []
    for i, (text, _, at) in enumerate(countdown):
        due = deadline - tenths[i] * TENTH_S  # the digits should read `text` from here ...
        if at < due - EARLY_S:
            problems.append(f"{text} drawn {(due - at) * 1000:.1f} ms before its tenth")
        if tenths[i] == 0:  # "0.0" as the deadline passes, before the expiry's frame
            continue
        over = due + TENTH_S  # ... until here
        replaced = countdown[i + 1][2] if i + 1 < len(countdown) else expired_at
        lags.append(replaced - over)
        report.append(f"{text}@{deadline - at:+.3f}/{lags[-1] * 1000:+.0f}ms")
    if tenths[0] < 20:
        lags.append(countdown[0][2] - (deadline - 2.0 + TENTH_S))
        report.append(f"2.0(ready)/{lags[-1] * 1000:+.0f}ms")
    lags.sort()
    median = lags[len(lags) // 2]
    if median > typical:
        problems.append(f"the median frame lagged {median * 1000:.1f} ms")
    if lags[-1] > worst:
        problems.append(f"a frame lagged {lags[-1] * 1000:.1f} ms")
    for what, at in (("the expired frame", expired_at), ("the long tone", long_at)):
        if at < deadline - EARLY_S:
            problems.append(f"{what} {(deadline - at) * 1000:.1f} ms before the deadline")
        if at - deadline > worst:
            problems.append(f"{what} {(at - deadline) * 1000:.1f} ms after the deadline")
    print(f"countdown: median lag {median * 1000:.1f} ms, worst {lags[-1] * 1000:.1f} ms "
          f"(allowed {typical * 1000:.0f} / {worst * 1000:.0f}; bare loop p75 "
          f"{window[len(window) * 3 // 4]:.1f} ms, worst {window[-1]:.1f} ms), expired "
          f"{(expired_at - deadline) * 1000:+.1f} ms: {' '.join(report)}")
    assert not problems, (problems, f"bare loop worst {window[-1]:.1f} ms", report)


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
        assert display.wait_line("DISPLAY 35 running p0 ext=1,1 fouls=0,0", timeout=3.0)
        assert display.wait_line("DISPLAY 34 running p0 ext=1,1 fouls=0,0", timeout=3.0), \
            display.lines
        status, state = server.command("1", "pause")
        assert status == 200 and state["phase"] == "paused", state
        # the paused digits are the time the service kept (34 unless the answer took a
        # second on a loaded machine), and nothing is drawn after them
        paused = f"DISPLAY {math.ceil(state['remaining_ms'] / 1000)} paused"
        assert display.wait_for(lambda lines: lines[-1].startswith(paused), 3.0), \
            (paused, display.lines[-3:])
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
    bare: BareLoop | None = None
    try:
        # the configured table does not exist yet: nothing is shown, nothing fails
        status, created = server.post("/api/tables", {
            "id": "hw", "players": ["Ivanov", "Petrov"],
            "profile": {"shot_ms": 2000, "floor_ms": 2000, "warnings_ms": [1000]},
        })
        assert status == 201, created
        assert display.wait_line("DISPLAY 2.0 ready p0 ext=1,1 fouls=0,0", timeout=2.0), \
            display.lines
        bare = BareLoop()  # the machine's own wake-up error meanwhile (_check_countdown)
        mark = len(display.lines)
        sent = time.monotonic()
        status, state = server.command("hw", "start")
        answered = time.monotonic()
        assert status == 200 and state["phase"] == "running", state
        assert display.wait_line("BUZZER long", timeout=4.0, start=mark), display.lines[mark:]
        assert display.wait_for(
            lambda lines: any(x.startswith("DISPLAY 0.0 expired") for x in lines[mark:]), 2.0), \
            display.lines[mark:]
        # the digits counted down in tenths (below 5 s) to the end, then the time foul
        # (12.4's long tone), each on time: judged by _check_countdown
        _check_countdown(display, mark, state["deadline"], sent, answered, bare)
        assert display.buzzes == ["beep", "long"]  # the 1 s warning, then 12.4's long tone
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
        if bare is not None:
            bare.stop()
        server.stop()
