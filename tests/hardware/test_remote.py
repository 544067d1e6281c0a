"""The remote bridge (``shotclock-bridge``) against a real server, with fake devices."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from firmware_bridge.interfaces import FakeButtons, FakeBuzzer, FakeDisplay
from firmware_bridge.remote import ClockOffset, RemoteBridge
from tests.server import ServerProcess

TOKEN = "s3cret"


async def until(condition: Callable[[], bool], timeout: float = 2.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.005)


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[ServerProcess]:
    proc = ServerProcess(tmp_path / "clock.db", env={"SHOTCLOCK_REFEREE_TOKEN": TOKEN})
    await asyncio.to_thread(proc.start)
    yield proc
    await asyncio.to_thread(proc.stop)


def test_clock_offset_keeps_the_shortest_round_trip() -> None:
    offset = ClockOffset(keep=3)
    assert offset.offset_ms == 0.0
    offset.add(1000.0, 6010.0, 1020.0)  # rtt 20: offset 4000 +- 10
    offset.add(2000.0, 7002.0, 2004.0)  # rtt 4: offset 5000 +- 2
    offset.add(3000.0, 9000.0, 3100.0)  # rtt 100: a slow sample, ignored
    assert offset.offset_ms == 5000.0 and offset.rtt_ms == 4.0
    with pytest.raises(ValueError, match="before its ping"):
        offset.add(10.0, 0.0, 5.0 - 10)


@pytest.mark.e2e
async def test_press_runs_the_clock_and_survives_a_server_crash(
    server: ServerProcess,
) -> None:
    display, buzzer, buttons = FakeDisplay(), FakeBuzzer(), FakeButtons()
    bridge = RemoteBridge(server.ws_url, "1", token=TOKEN, display=display, buzzer=buzzer,
                          buttons=buttons, backoff_min_s=0.05, backoff_max_s=0.2)
    # This Pi's clock is 7 s behind the server's: without the ping/pong offset the digits
    # would read 42 instead of 35.
    bridge.time.local._offset_ms -= 7000
    runner = asyncio.create_task(bridge.run())
    try:
        await until(lambda: bridge.connected.is_set() and bridge.time.offset.rtt_ms is not None)
        assert bridge.referee
        assert abs(bridge.time.offset.offset_ms - 7000) < 50, bridge.time.offset.samples
        assert display.frames[-1].text == "35" and display.frames[-1].stage == "ready"

        # the start/shot button becomes a WebSocket command; the service runs the clock
        buttons.press("start_shot", at_ms=bridge.time.now_ms())
        await until(lambda: display.frames[-1].stage == "running")
        assert display.frames[-1].text == "35"
        assert (await asyncio.to_thread(server.get, "/api/tables/1"))["phase"] == "running"
        await until(lambda: display.frames[-1].text == "34", timeout=1.5)
        assert bridge.refusals == []

        # crash: SIGKILL, then the same store and port again
        before = bridge.last_seq
        assert before is not None
        await asyncio.to_thread(server.kill)
        await until(lambda: not bridge.connected.is_set())
        await asyncio.to_thread(server.start)
        await until(lambda: bridge.connected.is_set(), timeout=3.0)
        assert bridge.connects == 2
        # recovered paused, with the time it had when the service was last alive
        await until(lambda: display.frames[-1].stage == "paused")
        assert bridge.state["phase"] == "paused"
        assert bridge.last_seq is not None and bridge.last_seq > before
        # last alive <= 0.5 s before the kill, after "34" was shown: 33.x or 34.x s left
        assert 33000 < bridge.state["remaining_ms"] < 35000, bridge.state
        assert display.frames[-1].text in ("35", "34"), display.frames[-1]
        assert buzzer.calls == []

        # the pause button resumes it through the new connection
        buttons.press("pause", at_ms=bridge.time.now_ms())
        await until(lambda: display.frames[-1].stage == "running")
    finally:
        runner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await runner
    assert display.closed and buttons.on_press is None


@pytest.mark.e2e
async def test_without_the_token_presses_are_refused(server: ServerProcess) -> None:
    display, buttons = FakeDisplay(), FakeButtons()
    bridge = RemoteBridge(server.ws_url, "1", display=display, buttons=buttons)
    runner = asyncio.create_task(bridge.run())
    try:
        await until(bridge.connected.is_set)
        assert not bridge.referee
        buttons.press("start_shot", at_ms=0.0)
        await until(lambda: bool(bridge.refusals))
        assert "token" in bridge.refusals[0]
        assert display.frames[-1].stage == "ready"
    finally:
        runner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await runner
