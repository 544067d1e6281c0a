"""Issue 21 point 7: on a machine with too little CPU the camera sheds its own work in
steps (the ring, then frames, then its decisions with camera_not_sure, then itself with
camera_off) and comes back when it can; its thread runs below the loop's priority."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from clock_service.edges.camera import budget
from clock_service.edges.camera.adapter import CameraAdapter
from clock_service.edges.camera.budget import BudgetSettings, Shedder
from clock_service.edges.camera.evidence import ClipStore, Evidence
from clock_service.edges.camera.source import SourceSpec
from clock_service.service.runtime import Runtime
from tests.camera.test_camera_adapter import rt  # noqa: F401
from tests.waiting import until_async

np = pytest.importorskip("numpy")

S = BudgetSettings(share=0.5, window_s=1.0, up_after=2, down_after=3, off_retry_s=30.0)


@pytest.mark.parametrize(("windows", "levels"), [
    # (cpu used in a 1 s window, throttled) -> the level after each window; 1 core, limit 0.5
    ([(0.4, False)] * 4, [0, 0, 0, 0]),                      # within the limit: nothing shed
    ([(0.6, False)] * 2, [0, 1]),                            # two windows over: one level up
    ([(0.6, False), (0.4, False), (0.6, False)], [0, 0, 0]),  # not in a row: no change
    ([(0.3, True)] * 2, [0, 1]),                             # throttled by the cgroup: over
    ([(0.9, False)] * 10, [0, 1, 1, 2, 2, 3, 3, 4, 4, 5]),   # on and on: off at last
    ([(0.9, False)] * 4 + [(0.1, False)] * 6, [0, 1, 1, 2, 2, 2, 1, 1, 1, 0]),  # back down
    ([(0.1, False)] * 3, [0, 0, 0]),                         # never below full
    ([(0.3, False)] * 2 + [(0.9, False)] * 2, [0, 0, 0, 1]),
])
def test_levels_from_the_cpu_used(windows: list[tuple[float, bool]], levels: list[int]) -> None:
    shedder = Shedder(1.0, S)
    seen = []
    for cpu, throttled in windows:
        shedder.feed(cpu, 1.0, throttled)
        seen.append(shedder.level)
    assert seen == levels
    assert budget.LEVELS == ("full", "small", "no_ring", "light", "not_sure", "off")
    assert budget.STRIDE[budget.LIGHT] == 2 and budget.STRIDE[budget.NOT_SURE] > 2


def test_off_comes_back_at_not_sure_and_the_limit_follows_the_budget() -> None:
    shedder = Shedder(0.25, S)
    assert shedder.limit == pytest.approx(0.125)
    for _ in range(10):
        shedder.feed(0.2, 1.0)
    assert shedder.level == budget.OFF
    assert shedder.retry() == budget.NOT_SURE
    assert shedder.feed(0.2, 0.0) is None  # an empty window changes nothing


def test_the_budget_is_the_cgroups_quota_or_the_cpus() -> None:
    cores = budget.cpu_budget()
    assert 0 < cores <= len(os.sched_getaffinity(0))


class BusyFile:
    """A 30 fps source whose frames cost CPU to read (as a decoder does)."""

    ended = False
    index = 0
    origin = 0.0
    size = (320, 180)
    dropped: tuple[float, ...] = ()

    def __init__(self, spec: SourceSpec, clock: Any) -> None:
        self.clock = clock
        self.opened = 0

    def open(self) -> None:
        self.opened += 1

    def read(self) -> tuple[Any, float]:
        time.sleep(1 / 200)
        end = time.thread_time() + 0.002
        while time.thread_time() < end:  # a decode's worth of this thread's CPU
            pass
        self.index += 1
        return np.zeros((180, 320, 3), np.uint8), self.clock()

    def close(self) -> None:
        pass


async def test_short_of_cpu_the_camera_sheds_says_so_and_turns_off(
        rt: Runtime, tmp_path: Path) -> None:  # noqa: F811
    sources: list[BusyFile] = []

    def factory(spec: SourceSpec) -> BusyFile:
        sources.append(BusyFile(spec, rt.time.now_ms))
        return sources[-1]

    evidence = Evidence(ClipStore(tmp_path / "clips", 10, 10**9), "1")
    settings = BudgetSettings(share=0.5, window_s=0.1, up_after=1, down_after=3,
                              off_retry_s=1.0)
    # a machine with a hundredth of a core: the camera's reads alone are over its limit
    cam = CameraAdapter(rt, "1", SourceSpec("file", "x.mp4"), "x.mp4", mode="auto",
                        calibration_path=tmp_path / "none.json", source_factory=factory,
                        evidence=evidence, budget_settings=settings, cores=0.01)
    levels = recorded_levels(cam)
    cam.attach()
    try:
        await until_async(lambda: budget.OFF in levels, 20.0)
        # a read costs 2 ms; half of a hundredth of a core affords 2.5 a second, under
        # the 3 needed to watch: off at once, from what a frame costs (issue 37 point 5),
        # not after five windows of CPU steps (those: test_levels_from_the_cpu_used)
        assert levels[0] == budget.OFF
        codes = {f["code"] for f in rt.health.faults()}
        assert "camera_off" in codes and "camera_not_sure" in codes
        assert cam.status()["budget"]["name"] == "off"
        # off says why; the status round does not call it "gives no frames"
        await until_async(lambda: "camera_disconnected" not in {
            f["code"] for f in rt.health.faults()}, 20.0)
        # it tries again (watching, not deciding) after off_retry_s
        await until_async(lambda: len(sources) >= 2 and levels[-1] == budget.NOT_SURE, 20.0)
        # its thread runs below the loop's priority (unless the loop is already at the
        # lowest, 19: then it says it could not, niced False)
        thread = cam._thread
        tid = thread.native_id if thread is not None else None
        loop_nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        assert thread is not None and cam.niced == (loop_nice < 19), (cam.niced, loop_nice)
        assert tid is not None and os.getpriority(os.PRIO_PROCESS, tid) == min(
            19, loop_nice + budget.CAMERA_NICE)
    finally:
        cam.close()


async def test_with_cpu_to_spare_nothing_is_shed(rt: Runtime, tmp_path: Path) -> None:  # noqa: F811
    def factory(spec: SourceSpec) -> BusyFile:
        return BusyFile(spec, rt.time.now_ms)

    settings = BudgetSettings(share=0.5, window_s=0.05, up_after=1, down_after=3)
    cam = CameraAdapter(rt, "1", SourceSpec("file", "x.mp4"), "x.mp4", mode="auto",
                        calibration_path=tmp_path / "none.json", source_factory=factory,
                        budget_settings=settings, cores=1000.0)
    cam.attach()
    try:
        await until_async(lambda: cam.shedder.changes == 0 and cam.frames > 40, 20.0)
        assert cam.shed_level == budget.FULL and cam.not_looked == 0
    finally:
        cam.close()


F = BudgetSettings(share=0.9, window_s=1.0, up_after=2, down_after=3, decide_fps=12.0,
                   watch_fps=3.0, back_margin=1.25)


@pytest.mark.parametrize(("windows", "levels"), [
    # (frames looked at in a 1 s window, frames a second the pacer allows, the same
    # without the clips' ring) -> the level after each window; CPU use always low
    ([(15, 20.0, 25.0)] * 3, [0, 0, 0]),                    # enough frames: full
    ([(8, 8.0, 8.0)], [4]),                                  # the cap allows 8 a second:
    # not sure at once, before a decision on too few frames
    ([(10, 10.0, 14.0)], [2]),                               # the ring's cost is the
    # difference: the ring shed, the camera still decides
    ([(2, 2.0, 2.0)], [5]),                                  # too few to watch: off
    ([(0, 0.0, 0.0)], [5]),                                  # a piece too dear to run
    ([(5, 20.0, 20.0)] * 2, [0, 4]),                         # allowed 20, looked at 5
    # (a machine too busy to give the camera its share): not sure after two windows
    ([(5, 20.0, 20.0), (15, 20.0, 20.0), (5, 20.0, 20.0)], [0, 0, 0]),  # not in a row
    ([(8, 8.0, 8.0)] * 2 + [(16, 16.0, 16.0)] * 3, [4, 4, 4, 4, 0]),  # back after three
    # windows with the capacity at least 1.25 x 12
    ([(8, 8.0, 8.0)] + [(14, 14.0, 14.0)] * 4, [4, 4, 4, 4, 4]),  # 14 is not 15: stays
    # at not_sure it looks at 1 frame in 6 (2 a second): that is not "too few" there
    ([(8, 8.0, 8.0)] + [(2, 16.0, 16.0)] * 3, [4, 4, 4, 0]),
    ([(None, None, None)] * 3, [0, 0, 0]),                   # nothing to look at (not
    # calibrated) and no cap: nothing known, nothing shed
])
def test_too_few_frames_looked_at_is_not_sure_then_off(
        windows: list[tuple[int | None, float | None, float | None]],
        levels: list[int]) -> None:
    shedder = Shedder(0.25, F)
    seen = []
    for looked, capacity, lean in windows:
        shedder.feed(0.01, 1.0, False, looked=looked, capacity=capacity, lean=lean)
        seen.append(shedder.level)
    assert seen == levels


def test_the_policy_says_why_and_off_comes_back_at_not_sure() -> None:
    shedder = Shedder(0.25, F)
    assert shedder.feed(0.01, 1.0, looked=8, capacity=8.0) == budget.NOT_SURE
    assert shedder.reason == "too few frames: 8.0 a second within its CPU share, 12 needed " \
        "to decide"
    assert shedder.feed(0.01, 1.0, looked=1, capacity=0.0) == budget.OFF
    assert "too little CPU for one frame's work" in shedder.reason
    assert shedder.retry() == budget.NOT_SURE
    for _ in range(2):
        assert shedder.feed(0.01, 1.0, looked=3, capacity=20.0) is None
    assert shedder.feed(0.01, 1.0, looked=3, capacity=20.0) == budget.FULL
    assert shedder.reason == ""
    # the CPU steps still count: over the limit for two windows, one step up, said so
    shedder.feed(0.3, 1.0, looked=15, capacity=20.0)
    assert shedder.feed(0.3, 1.0, looked=15, capacity=20.0) == budget.SMALL
    assert shedder.reason.startswith("short of CPU")


def read_cost_s(reads: int = 15) -> float:
    """The median CPU cost of a BusyFile read on this machine, now (2.2 ms here; more on a
    slow or crowded one, where the fixed cap of 2.5 ms this test once used turned the
    camera off instead of not sure, as in CI's run for stop 31)."""
    source = BusyFile(SourceSpec("file", "x.mp4"), time.monotonic)
    costs = []
    for _ in range(reads):
        before = time.thread_time()
        source.read()
        costs.append(time.thread_time() - before)
    return sorted(costs)[reads // 2]


@pytest.mark.parametrize(("cap_reads", "level", "code"), [
    # The cap (half the quota's 100 ms) in reads: the pacer allows (cap - read / 2) / read
    # reads a window of 0.1 s. At 1.2 reads, 7 frames a second: between watching (3) and
    # deciding (12), not sure, for reads from about 0.7 to 1.5 times the cost measured just
    # before (off past 1.5: too few to watch).
    (1.2, budget.NOT_SURE, "camera_not_sure"),
    # A cap under MIN_CAP_S (1 ms) gives no room to work in: off, whatever a read costs.
    (None, budget.OFF, "camera_off"),
])
async def test_the_pacers_frames_reach_the_faults(
        rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        cap_reads: float | None, level: int, code: str) -> None:
    quota = 0.005 if cap_reads is None else cap_reads * read_cost_s() / 0.05
    monkeypatch.setattr(budget, "cpu_quota", lambda: quota)
    settings = BudgetSettings(window_s=0.1, up_after=2, down_after=50, off_retry_s=30.0,
                              pace_share=0.5, loop_reserve_ms=0.0)
    cam = CameraAdapter(rt, "1", SourceSpec("file", "x.mp4"), "x.mp4", mode="auto",
                        calibration_path=tmp_path / "none.json",
                        source_factory=lambda spec: BusyFile(spec, rt.time.now_ms),
                        budget_settings=settings, cores=1000.0)
    levels = recorded_levels(cam)
    cam.attach()
    try:
        await until_async(lambda: level in levels, 20.0)
        assert levels[0] == level  # straight there: no decision on too few frames first
        faults = {f["code"]: f["message"] for f in rt.health.faults()}
        assert code in faults and "too" in faults[code]
        status = cam.status()["budget"]
        assert status["name"] == budget.LEVELS[level] and status["log"][0]["why"]
        assert status["paced"]["cap_ms"] == pytest.approx(quota * 50, abs=0.01)  # (rounded)
    finally:
        cam.close()


@pytest.mark.parametrize(("level_before", "capacity", "lean", "after"), [
    # between windows, at a frame: (frames a second allowed, without the ring) -> level
    (budget.FULL, 20.0, 20.0, None),                 # enough: nothing to say
    (budget.FULL, 8.0, 8.0, budget.NOT_SURE),        # too few: not sure now
    (budget.FULL, 10.0, 14.0, budget.NO_RING),       # the ring shed (no small one known)
    (budget.FULL, 0.0, 0.0, budget.OFF),             # nothing fits: off now
    (budget.NOT_SURE, 20.0, 20.0, None),             # never lowers: back takes windows
    (budget.NOT_SURE, 8.0, 8.0, None),               # already said
])
def test_too_few_frames_are_said_at_the_frame_not_at_the_windows_end(
        level_before: int, capacity: float, lean: float, after: int | None) -> None:
    shedder = Shedder(0.25, F)
    if level_before == budget.NOT_SURE:
        shedder.feed(0.01, 1.0, looked=8, capacity=8.0)
    assert shedder.level == level_before
    assert shedder.check(capacity, lean) == after
    if after is not None:
        assert shedder.level == after and shedder.reason


def test_the_frames_a_second_rest_on_the_median_cost() -> None:
    pacer = budget.Pacer(0.0125)
    wall = cpu = 0.0
    pacer.note(wall, cpu, False)
    for cost_ms in [5, 5, 5, 5, 40]:  # one frame of five slowed down (a loaded moment)
        wall += 0.1
        cpu += cost_ms / 1000
        pacer.note(wall, cpu, "look")
    assert pacer.count("look") == 5
    assert pacer.capacity(30.0) == pytest.approx((12.5 - 2.5) / 5 / 0.1)  # 20, not 1
    assert pacer.expect("look") == pytest.approx(0.040)  # the pacing keeps the p90


async def test_off_for_a_quota_with_no_room_stays_off_without_opening_the_source(
        rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setattr(budget, "cpu_quota", lambda: 0.0625)  # a sixteenth: a 0.25 ms cap
    sources: list[BusyFile] = []

    def factory(spec: SourceSpec) -> BusyFile:
        sources.append(BusyFile(spec, rt.time.now_ms))
        return sources[-1]

    cam = CameraAdapter(rt, "1", SourceSpec("file", "x.mp4"), "x.mp4", mode="auto",
                        calibration_path=tmp_path / "none.json", source_factory=factory,
                        budget_settings=BudgetSettings(window_s=0.1, off_retry_s=0.05),
                        cores=1000.0)
    cam.attach()
    try:
        await until_async(lambda: cam.off_kept >= 3, 20.0)
        assert len(sources) == 1 and cam.shed_level == budget.OFF
        assert "camera_off" in {f["code"] for f in rt.health.faults()}
    finally:
        cam.close()


def recorded_levels(cam: CameraAdapter) -> list[int]:
    """Every budget level told to the loop, in order (the adapter's own handling kept)."""
    levels: list[int] = []
    told = cam._on_shed

    def record(new: int, why: str = "") -> None:
        levels.append(new)
        told(new, why)

    cam._on_shed = record  # type: ignore[method-assign]
    return levels


N = BudgetSettings(share=0.9, window_s=1.0, up_after=2, down_after=3, decide_fps=12.5,
                   watch_fps=3.0, back_margin=1.25)


@pytest.mark.parametrize(("full", "small", "lean", "need", "level"), [
    # frames a second the camera can afford: (at full detail with the clips, the smaller
    # image with the clips, the smaller image alone), the source's rate -> the level:
    # the steps a person would take (issue 37 point 5)
    (40.0, 80.0, 90.0, 30.0, budget.FULL),       # every frame at full detail
    (20.0, 35.0, 40.0, 30.0, budget.SMALL),      # a smaller image of the table
    (20.0, 25.0, 31.0, 30.0, budget.NO_RING),    # and no clips
    (10.0, 14.0, 16.0, 30.0, budget.LIGHT),      # fewer frames, still 12.5 or more
    (10.0, 14.0, 16.0, 15.0, budget.NO_RING),    # a 15 fps camera: every frame is needed
    (8.0, 10.0, 12.0, 30.0, budget.NOT_SURE),    # under 12.5 a second: not sure
    (1.0, 2.0, 2.5, 30.0, budget.OFF),           # under 3: off
])
def test_the_steps_follow_what_frames_cost_against_the_frame_interval(
        full: float, small: float, lean: float, need: float, level: int) -> None:
    shedder = Shedder(0.25, N)
    shedder.feed(0.01, 1.0, looked=int(need), capacity=full, lean=lean, small=small,
                 need=need)
    assert shedder.level == level, shedder.reason
    assert (shedder.reason == "") == (level == budget.FULL)


@pytest.mark.parametrize(("level", "fps", "capacity", "stride"), [
    (budget.FULL, 30.0, 10.0, 1),
    (budget.LIGHT, 30.0, 16.0, 2),   # 15 a second: the most it can afford, over 12.5
    (budget.LIGHT, 60.0, 16.0, 4),   # 15 of 60
    (budget.LIGHT, 60.0, 25.0, 3),   # 20 of 60: no fewer than it must
    (budget.LIGHT, 30.0, 5.0, 2),    # never under 12.5 a second (not sure says the rest)
    (budget.LIGHT, 25.0, 13.0, 2),   # 12.5 of 25
    (budget.NOT_SURE, 30.0, 5.0, 6),
])
def test_light_lowers_the_frame_rate_no_further_than_it_must(
        level: int, fps: float, capacity: float, stride: int) -> None:
    assert budget.stride_for(level, fps, capacity, N) == stride


def test_without_a_quota_frames_are_weighed_against_a_core() -> None:
    """A real Pi has no quota: it is a slower CPU all the time. With no cap, the frames a
    second come from what a frame costs against the camera thread's allowance (a core at
    most, within the service's share): a 40 ms frame affords 25 a second of 30."""
    pacer = budget.Pacer(None)
    pacer.allowance = 1.0
    wall = cpu = 0.0
    pacer.note(wall, cpu, False)
    for _ in range(5):
        wall += 0.05
        cpu += 0.040
        pacer.note(wall, cpu, "look")
    assert pacer.capacity(30.0) == pytest.approx(25.0)
    pacer.allowance = None
    assert pacer.capacity(30.0) == 30.0


def test_the_cgroups_period_is_read_not_assumed(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 37: under 1 ms of every 4 ms the camera counted the cgroup's throttled periods
    against 100 ms ones, found itself always held back, and turned off using a third of
    its share. The period is the cgroup's own (v1 and v2)."""
    v1 = tmp_path / "v1"
    v1.mkdir()
    (v1 / "cpu.cfs_period_us").write_text("4000\n")
    (v1 / "cpu.cfs_quota_us").write_text("1000\n")
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cpu.max").write_text("25000 100000\n")
    monkeypatch.setattr(budget, "_cgroup_dirs", lambda: [v1])
    assert budget.cpu_period() == pytest.approx(0.004)
    assert budget.cpu_quota() == pytest.approx(0.25)
    monkeypatch.setattr(budget, "_cgroup_dirs", lambda: [v2])
    assert budget.cpu_period() == pytest.approx(0.1)
    assert budget.cpu_quota() == pytest.approx(0.25)
    monkeypatch.setattr(budget, "_cgroup_dirs", lambda: [])
    assert budget.cpu_period() == pytest.approx(0.1) and budget.cpu_quota() is None
