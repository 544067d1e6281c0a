"""Issue 21 point 7: the camera thread paces its own CPU time in a sliding 100 ms window
(the cgroup's quota period), so a burst of frame work cannot use up the period's quota
the clock's loop needs. Pure: a fake wall clock and a fake thread CPU clock."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from clock_service.edges.camera import budget
from clock_service.edges.camera.adapter import CameraAdapter
from clock_service.edges.camera.budget import BudgetSettings, Pacer, Shedder

MS = 0.001


@pytest.mark.parametrize(("cap_ms", "steps", "delay_ms"), [
    # steps: (wall ms, thread CPU ms, was it a frame's work) notes, then delay at the last
    (None, [(0, 0, False), (30, 30, True)], 0.0),           # no quota: never waits
    (10, [(0, 0, False), (10, 8, True)], 100.0),            # 8 used + 8 expected > 10: wait
    # until the frame's span has left the window
    (10, [(0, 0, False), (10, 2, True)], 0.0),              # 2 used + 2 expected: fits
    (10, [(0, 0, False), (10, 4, True), (20, 8, True)], 90.0),  # 8 + 4 > 10: the first span
    # leaves at 110 (4 + 4 <= 10)
    (10, [(0, 0, False), (10, 8, True), (150, 8, False)], 0.0),  # the window is empty again
    # a frame dearer than the cap goes alone, once the window is empty
    (5, [(0, 0, False), (8, 8, True)], 100.0),
    (5, [(0, 0, False), (8, 8, True), (108, 8, False)], 0.0),
    # ... its own waits (some microseconds of CPU each) do not keep the window full (a
    # bench run stalled at 1 frame in 40 s that way)
    (5, [(0, 0, False), (8, 8, True), (108, 8.02, False)], 0.0),
    (5, [(0, 0, False), (8, 8, True), (108, 9, False)], 100.0),  # 1 ms is not idle
    # a span's CPU is counted as late in it as it can be: 10 ms of CPU in a 200 ms span
    # (sleeps in it) can all be in its last 10 ms, so it counts until 100 ms after its end
    (12, [(0, 0, False), (200, 10, True)], 100.0),
])
def test_delay_before_the_next_frame(cap_ms: float | None, steps: list[tuple[float, float, bool]],
                                     delay_ms: float) -> None:
    pacer = Pacer(None if cap_ms is None else cap_ms * MS)
    for wall, cpu, work in steps:
        pacer.note(wall * MS, cpu * MS, work)
    assert pacer.delay(steps[-1][0] * MS) == pytest.approx(delay_ms * MS)


def test_expected_cost_is_the_p90_of_recent_frames() -> None:
    pacer = Pacer(0.01, keep=10)
    assert pacer.expected == 0.0
    wall = cpu = 0.0
    pacer.note(wall, cpu, False)
    for cost in [1, 1, 1, 1, 1, 1, 1, 1, 1, 9]:  # one dear frame in ten
        wall += 0.05
        cpu += cost * MS
        pacer.note(wall, cpu, True)
    assert pacer.expected == pytest.approx(9 * MS)
    for _ in range(10):  # forgotten after `keep` frames
        wall += 0.05
        cpu += 2 * MS
        pacer.note(wall, cpu, True)
    assert pacer.expected == pytest.approx(2 * MS)


def simulate(cap_ms: float | None, cost_ms: float, period_ms: float, seconds: float = 2.0
             ) -> tuple[int, float, int]:
    """A camera thread on fake clocks: frames due every ``period_ms`` (a file plays in real
    time: the ones it falls behind on are dropped), each costing ``cost_ms`` of CPU run in
    one piece. Returns frames done, the most CPU in any 100 ms (ms), frames dropped."""
    pacer = Pacer(None if cap_ms is None else cap_ms * MS)
    wall = cpu = 0.0
    work: list[tuple[float, float]] = []  # the CPU's busy intervals (wall)
    pacer.note(wall, cpu, False)
    index = done = dropped = 0
    while wall < seconds:
        pacer.note(wall, cpu, True)
        wait = pacer.delay(wall)
        while wait > 0:
            wall += wait
            cpu += 0.02 * MS  # a wait's own bookkeeping
            pacer.note(wall, cpu, False)
            wait = pacer.delay(wall)
        due = index * period_ms * MS
        if wall < due:  # the source waits for the frame (no CPU)
            wall = due
        newest = int(wall / (period_ms * MS) + 1e-9)  # frames due by now: the newest read
        dropped += max(0, newest - index)
        index = newest + 1
        work.append((wall, wall + cost_ms * MS))
        wall += cost_ms * MS
        cpu += cost_ms * MS
        done += 1
    most = 0.0
    for t in [i * 0.5 * MS for i in range(int(seconds / (0.5 * MS)) + 1)]:
        used = sum(max(0.0, min(e, t) - max(s, t - 0.1)) for s, e in work)
        most = max(most, used)
    return done, most / MS, dropped


@pytest.mark.parametrize(("cap_ms", "cost_ms", "most_ms", "frames"), [
    # 720p at 30 fps (60 frames in 2 s); the cap is half the quota's 100 ms (pace_share 0.5)
    (None, 8.0, 24.0, 61),     # no quota: every frame, 3 of them (24 ms) in some 100 ms
    (12.5, 8.0, 8.0, 20),      # a quarter of a core: 8 used + 8 expected > 12.5, so one
    # frame per 100 ms (10 fps), the others dropped
    (12.5, 3.0, 9.0, 61),      # cheap frames: every one, at most 3 (9 ms) in a 100 ms
    (6.25, 8.0, 8.0, 20),      # an eighth: a frame dearer than the cap goes alone
    (25.0, 8.0, 24.0, 57),     # half a core: 3 frames in 100 ms fit, a 4th waits
])
def test_the_camera_cpu_in_any_100_ms_stays_under_the_cap(
        cap_ms: float | None, cost_ms: float, most_ms: float, frames: int) -> None:
    done, most, dropped = simulate(cap_ms, cost_ms, 1000 / 30)
    assert most == pytest.approx(most_ms)
    if cap_ms is not None:
        assert most <= max(cap_ms, cost_ms) + 1e-9
    assert done == frames
    assert done + dropped >= 60  # every frame of the 2 s is done or counted as dropped


def test_the_cap_is_a_share_of_the_quota() -> None:
    def cap(quota: float | None, share: float = 0.5) -> float | None:
        fake = SimpleNamespace(shedder=Shedder(1.0, BudgetSettings(pace_share=share)))
        return CameraAdapter._pace_cap(fake, quota)  # type: ignore[arg-type]

    assert cap(0.25) == pytest.approx(12.5 * MS)
    assert cap(0.125) == pytest.approx(6.25 * MS)
    assert cap(None) is None                  # no quota: no cap
    assert cap(0.25, share=0.0) is None       # pacing off
    assert budget.PACE_WINDOW_S == 0.1


def test_each_piece_of_a_frame_waits_for_its_own_expected_cost() -> None:
    # a read (2 ms) and a look (7 ms) in the last 100 ms: 9 used of a 10 ms cap
    pacer = Pacer(10 * MS)
    for wall, cpu, kind in [(0, 0, False), (5, 2, "read"), (15, 9, "look")]:
        pacer.note(wall * MS, cpu * MS, kind)
    assert pacer.expect("read") == pytest.approx(2 * MS)
    assert pacer.expect("look") == pytest.approx(7 * MS)
    assert pacer.expected == pytest.approx(9 * MS)  # a frame: its pieces together
    # a read fits once the first read has left the window (7 + 2 <= 10) ...
    assert pacer.delay(15 * MS, "read") == pytest.approx(90 * MS)
    # ... a look only once the last look has too (7 + 7 > 10)
    assert pacer.delay(15 * MS, "look") == pytest.approx(100 * MS)


@pytest.mark.parametrize(("cap_ms", "costs_ms", "source_fps", "leave_out", "fps"), [
    (None, {"read": 3, "look": 5}, 30.0, (), 30.0),          # no quota: the source's rate
    (None, {"read": 3}, None, (), None),                     # ... not known
    (12.5, {}, 30.0, (), 30.0),                              # nothing measured yet
    # pieces of 8 ms a frame in a 12.5 ms cap per 100 ms: half the dearest piece (4 ms) of
    # the cap goes unused, whole pieces being fitted in what is left of it
    (12.5, {"read": 2.5, "ring": 1.5, "look": 4}, 30.0, (), (12.5 - 2) / 8 / 0.1),
    (12.5, {"read": 2.5, "ring": 1.5, "look": 4}, 30.0, ("ring",), (12.5 - 2) / 6.5 / 0.1),
    (12.5, {"read": 0.5, "look": 1.5}, 30.0, (), 30.0),      # cheap: the source's rate
    # the look (8 ms) is dearer than the cap (6.25): a frame spans windows
    (6.25, {"read": 2.5, "look": 8}, 30.0, (), (6.25 - 4) / 10.5 / 0.1),
    # a sixteenth: an 8 ms look is more than 1.5 caps (4.7 ms): too dear to run at all
    (3.125, {"read": 2.5, "look": 8}, 30.0, (), 0.0),
    (0.25, {}, 30.0, (), 0.0),  # a sixteenth leaves a 0.25 ms cap: off before trying
])
def test_the_frames_a_second_the_cap_allows(
        cap_ms: float | None, costs_ms: dict[str, float], source_fps: float | None,
        leave_out: tuple[str, ...], fps: float | None) -> None:
    pacer = Pacer(None if cap_ms is None else cap_ms * MS)
    wall = cpu = 0.0
    pacer.note(wall, cpu, False)
    for kind, cost in costs_ms.items():
        wall += 0.05
        cpu += cost * MS
        pacer.note(wall, cpu, kind)
    got = pacer.capacity(source_fps, leave_out)
    assert got == (None if fps is None else pytest.approx(fps))
    pacer.forget()
    if cap_ms is None or cap_ms >= 1:
        assert pacer.capacity(source_fps) == source_fps  # forgotten: nothing measured


@pytest.mark.parametrize(("quota", "cap_ms"), [
    # the defaults: 0.75 of the quota's 100 ms, at most the quota's less 6 ms for the loop
    (0.25, 18.75),      # a quarter of a core
    (0.125, 6.5),       # an eighth: the loop's 6 ms is the limit
    (0.0625, 0.25),     # a sixteenth: a quarter of a millisecond, no frame fits (off)
    (0.05, 0.0),        # less than the loop's reserve: nothing
    (None, None),
])
def test_the_loop_keeps_its_reserve_of_every_quota_period(quota: float | None,
                                                          cap_ms: float | None) -> None:
    cap = budget.pace_cap(quota, BudgetSettings())
    assert cap == (None if cap_ms is None else pytest.approx(cap_ms * MS))


def test_frames_are_spread_evenly_at_the_pace_the_cap_allows() -> None:
    pacer = Pacer(16 * MS)
    pacer.note(0.0, 0.0, False)
    pacer.begin(0.0)
    pacer.note(2 * MS, 2 * MS, "read")
    pacer.note(8 * MS, 8 * MS, "look")
    assert pacer.spacing() == pytest.approx(50 * MS)  # 8 ms a frame in 16 ms per 100 ms
    # the next frame's read would fit the window now (8 + 2 <= 16), but is spaced
    assert pacer.delay(10 * MS, "read", first=True) == pytest.approx(40 * MS)
    assert pacer.delay(10 * MS, "read") == 0.0  # not a frame's first piece: no spacing
    assert Pacer(None).spacing() == 0.0
