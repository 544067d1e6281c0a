"""The remote bridge (``shotclock-bridge``) against a real server, with fake devices."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from firmware_bridge.interfaces import FakeButtons, FakeBuzzer, FakeDisplay
from firmware_bridge.remote import ClockOffset, RemoteBridge
from harness.bare_loop import BareLoopThread
from tests.server import ServerProcess
from tests.waiting import until_async

TOKEN = "s3cret"



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
        await until_async(
            lambda: bridge.connected.is_set() and bridge.time.offset.rtt_ms is not None)
        assert bridge.referee
        # within half the round trip of its best sample (the server answered somewhere in
        # it), whatever a loaded machine made of the round trips; both timelines are
        # aligned with the same wall clock, so the truth is 7000 (+ 1 ms of alignment)
        rtt = bridge.time.offset.rtt_ms
        assert rtt is not None
        assert abs(bridge.time.offset.offset_ms - 7000) <= rtt / 2 + 1, \
            bridge.time.offset.samples
        assert display.frames[-1].text == "35" and display.frames[-1].stage == "ready"

        # the start/shot button becomes a WebSocket command; the service runs the clock
        buttons.press("start_shot", at_ms=bridge.time.now_ms())
        await until_async(lambda: display.frames[-1].stage == "running")
        assert display.frames[-1].text == "35"
        assert (await asyncio.to_thread(server.get, "/api/tables/1"))["phase"] == "running"
        await until_async(lambda: display.frames[-1].text == "34", timeout=3.0)
        assert bridge.refusals == []

        # crash: SIGKILL, then the same store and port again
        before = bridge.last_seq
        assert before is not None
        deadline = bridge.state["deadline"]
        await asyncio.to_thread(server.kill)
        killed_by = bridge.time.now_ms()  # the server's timeline, as this Pi reads it
        await until_async(lambda: not bridge.connected.is_set())
        await asyncio.to_thread(server.start)
        await until_async(lambda: bridge.connected.is_set(), timeout=3.0)
        assert bridge.connects == 2
        # recovered paused, with the time it had when the service was last alive
        await until_async(lambda: display.frames[-1].stage == "paused")
        assert bridge.state["phase"] == "paused"
        assert bridge.last_seq is not None and bridge.last_seq > before
        # last alive before the kill (and <= 0.5 s before it): at least the time left at
        # the kill (less this Pi's reading error, half a round trip), less than at the start
        # (measured from the kill, not from "34": a loaded machine may take a while to kill)
        recovered = bridge.state["remaining_ms"]
        assert deadline - killed_by - rtt / 2 - 2 <= recovered < 35000, \
            (recovered, deadline - killed_by, rtt, bridge.state)
        assert display.frames[-1].text == str(math.ceil(recovered / 1000)), display.frames[-1]
        assert buzzer.calls == []

        # the pause button resumes it through the new connection
        buttons.press("pause", at_ms=bridge.time.now_ms())
        await until_async(lambda: display.frames[-1].stage == "running")
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
        await until_async(bridge.connected.is_set)
        assert not bridge.referee
        buttons.press("start_shot", at_ms=0.0)
        await until_async(lambda: bool(bridge.refusals))
        assert "token" in bridge.refusals[0]
        assert display.frames[-1].stage == "ready"
    finally:
        runner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await runner


def test_a_new_connection_keeps_the_old_offset_until_it_measures_one() -> None:
    offset = ClockOffset()
    offset.add(1000.0, 8000.0, 1002.0)  # offset 6999
    offset.restart()
    assert offset.offset_ms == 6999.0  # no jump while reconnecting
    offset.add(5000.0, 12003.0, 5010.0)  # a worse round trip, but the only new sample
    assert offset.offset_ms == 6998.0 and len(offset.samples) == 1


@pytest.mark.e2e
@pytest.mark.serial
async def test_a_frozen_service_shows_offline_and_a_lost_press_is_never_applied(
    server: ServerProcess,
) -> None:
    """Defects 8 and 9 together: the service freezes (SIGSTOP) right after a shot press.

    The display goes to its offline style within 1.5 s and keeps an honest estimate; the
    press is reported lost (with the refusal pips) and, when the service wakes 3 s later,
    it refuses that press as stale instead of stopping the clock late. After the
    reconnect the digits resync without going backwards."""
    import signal

    from firmware_bridge.remote import COMMAND_TIMEOUT_S, LINK_LOST_MS

    assert 1.0 <= COMMAND_TIMEOUT_S <= 3.0 and LINK_LOST_MS <= 1000
    display, buzzer, buttons = FakeDisplay(), FakeBuzzer(), FakeButtons()
    bridge = RemoteBridge(server.ws_url, "1", token=TOKEN, display=display, buzzer=buzzer,
                          buttons=buttons, backoff_min_s=0.05, backoff_max_s=0.2)
    runner = asyncio.create_task(bridge.run())
    assert server.proc is not None
    bare: BareLoopThread | None = None
    try:
        await until_async(
            lambda: bridge.connected.is_set() and bridge.time.offset.rtt_ms is not None)
        assert bridge.online
        # a press that was held up 2.5 s somewhere: refused, and the buzzer says so
        buttons.press("start_shot", at_ms=bridge.time.now_ms() - 2500)
        await until_async(lambda: bool(bridge.refusals))
        assert "ms old" in bridge.refusals[0] and buzzer.calls == ["refused"]
        assert display.frames[-1].stage == "ready"

        buttons.press("start_shot", at_ms=bridge.time.now_ms())
        await until_async(lambda: display.frames[-1].stage == "running")

        bare = BareLoopThread()  # this process's own wake-up error while frozen
        server.proc.send_signal(signal.SIGSTOP)
        frozen = time.monotonic()
        buttons.press("start_shot", at_ms=bridge.time.now_ms())  # the shot: no answer comes
        await until_async(lambda: display.frames[-1].offline, timeout=4.0)
        bare.stop()
        # within 1.5 s, or later by as much as this process's own wake-ups were at worst
        # meanwhile (a bare loop in a thread of its own: the bridge's loop is this one)
        assert time.monotonic() - frozen < 1.5 + bare.max_late() / 1000, bare.max_late()
        assert display.frames[-1].stage == "running" and display.frames[-1].text != ""
        await until_async(lambda: bridge.lost_presses == 1, timeout=COMMAND_TIMEOUT_S + 1.0)
        assert buzzer.calls == ["refused", "refused"]
        # Real time under test: the shot pressed while frozen is over 3 s old when it lands.
        await asyncio.sleep(max(0.0, 3.2 - (time.monotonic() - frozen)))
        server.proc.send_signal(signal.SIGCONT)

        await until_async(lambda: bridge.online and bridge.connects >= 2, timeout=5.0)
        state = await asyncio.to_thread(server.get, "/api/tables/1")
        assert state["phase"] == "running", state  # the late shot was refused, not applied
        events = await asyncio.to_thread(server.get, "/api/tables/1/events")
        assert [e["type"] for e in events].count("clock.stopped") == 0
        await until_async(lambda: not display.frames[-1].offline)
        # the digits only ever counted down: no jump backwards across the outage
        running = [int(f.text) for f in display.frames
                   if f.stage in ("running", "warning") and f.text.isdigit()]
        assert running == sorted(running, reverse=True), running
        assert bridge.outages >= 1
    finally:
        if bare is not None:
            bare.stop()
        server.proc.send_signal(signal.SIGCONT)
        runner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await runner
