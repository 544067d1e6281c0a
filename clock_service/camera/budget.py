"""The camera's CPU budget (issue 21 point 7): on a small machine the camera sheds its own
work, in steps, before the clock's loop feels it, and says so.

The clock's expiries are timers on the event loop. Under a CPU quota (a cgroup, a Pi
Zero's one slow core) a camera that uses the whole quota makes every timer wait for the
next quota period (up to 87 ms at an eighth of a core). So the camera keeps the
service's CPU use under ``share`` of what the machine gives it (the cgroup's quota, else
the cores it may run on), measured every ``window_s`` on the process's CPU time:

====  ===========  =====================================================================
lvl   name         what the camera does
====  ===========  =====================================================================
0     full         every frame looked at; the evidence ring kept
1     no_ring      the ring of recent frames (the clips) dropped: 1 ms a frame less
2     light        also looks at 1 frame in 2 (every frame is still read, in time)
3     not_sure     looks at 1 frame in 6, decides nothing (``camera_not_sure``: the
                   buttons are the clock's input); watches whether it can come back
4     off          the source closed, no frame read (fault ``camera_off``); tried again
                   at level 3 after ``off_retry_s``
====  ===========  =====================================================================

One level up after ``up_after`` windows in a row over the limit (or held back by the
cgroup in ``THROTTLED_SHARE`` of the window's quota periods); one level down after
``down_after`` windows in a row under a third of it. The camera's thread also runs at
a lower priority (10 steps nicer) than the loop, so within its
share the loop's timers take the CPU first.

``Shedder`` is pure (fed the measurements); ``cpu_budget`` and ``throttled_count`` read
the cgroup (v1 or v2) once a window.

The shedder works on 1 s averages. Under a cgroup the kernel counts the quota per 100 ms
period: a burst of frame work that uses up one period's quota just before an expiry falls
due makes the whole process wait for the next period, the loop's timer with it (measured:
an expiry 110 ms late at a quarter of a core, the bare loop's max 15). So ``Pacer`` also
bounds the camera thread's own CPU time (``time.thread_time``) in any sliding
``PACE_WINDOW_S`` (the cgroup's default period): before a frame is read and looked at, the
CPU it used in the last 100 ms plus the frame's expected cost (p90 of recent frames) must
stay under ``pace_share`` of the quota's 100 ms, else it waits until it does (the source
drops the frames it falls behind on, counted as skipped). A frame dearer than the cap
alone is let through only when the window is empty but for the thread's idle
bookkeeping (under ``IDLE_SHARE`` of the cap): one frame per 100 ms at most. No
quota, no cap: the machine's own cores are the limit.
"""

from __future__ import annotations

import collections
import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LEVELS", "PACE_WINDOW_S", "STRIDE", "BudgetSettings", "Pacer", "Shedder",
           "cpu_budget", "cpu_quota", "lower_priority", "throttled_count"]

LEVELS = ("full", "no_ring", "light", "not_sure", "off")
FULL, NO_RING, LIGHT, NOT_SURE, OFF = range(5)
STRIDE = (1, 1, 2, 6, 0)  # 1 frame in this many is looked at, per level
CAMERA_NICE = 10
THROTTLED_SHARE = 0.3  # held back in this share of a window's quota periods: over budget
PACE_WINDOW_S = 0.1  # the pacer's sliding window: the cgroup's default quota period
IDLE_SHARE = 0.1  # a window with at most this share of the cap used counts as empty


@dataclass(frozen=True)
class BudgetSettings:
    # the service's CPU use kept under this share of its budget (measured, issue 21 point
    # 7: at a quarter of a core the full camera at 720p30 used 0.227 cores with the clock's
    # expiries as punctual as a bare loop's, the loop's thread being the less nice)
    share: float = 0.9
    window_s: float = 1.0
    up_after: int = 2
    down_after: int = 10
    off_retry_s: float = 30.0
    # the camera thread's CPU in any PACE_WINDOW_S kept under this share of the quota's
    # (0: no pacing); the rest of each quota period is left to the loop
    pace_share: float = 0.5


class Shedder:
    """The level from the measured CPU use, window by window (pure: no clock, no I/O)."""

    def __init__(self, cores: float, settings: BudgetSettings | None = None) -> None:
        self.settings = settings or BudgetSettings()
        self.cores = max(0.01, cores)
        self.level = FULL
        self._over = 0
        self._under = 0
        self.last_use = 0.0  # the last window's CPU use, in cores
        self.changes = 0

    @property
    def limit(self) -> float:
        """The service's CPU use allowed, in cores."""
        return self.settings.share * self.cores

    def feed(self, cpu_s: float, wall_s: float, throttled: bool = False) -> int | None:
        """One window: ``cpu_s`` of CPU used in ``wall_s`` of time, ``throttled`` when the
        cgroup held the process back. The new level when it changes, else None."""
        if wall_s <= 0:
            return None
        use = cpu_s / wall_s
        self.last_use = use
        if throttled or use > self.limit:
            self._over += 1
            self._under = 0
        elif use < self.limit / 3:
            self._under += 1
            self._over = 0
        else:
            self._over = self._under = 0
        if self._over >= self.settings.up_after and self.level < OFF:
            return self._set(self.level + 1)
        if self._under >= self.settings.down_after and self.level > FULL:
            return self._set(self.level - 1)
        return None

    def retry(self) -> int:
        """After ``off_retry_s`` off: back at ``not_sure`` (watching, deciding nothing)."""
        return self._set(NOT_SURE)

    def _set(self, level: int) -> int:
        self.level = level
        self._over = self._under = 0
        self.changes += 1
        return level


class Pacer:
    """The camera thread's CPU time in a sliding window (pure: fed wall and CPU clocks).

    ``note(wall, cpu, work)`` at each step closes the span since the last note (``work``:
    it was a frame's work, whose CPU cost feeds the estimate). ``delay(wall)`` is how long
    to wait before the next frame so that the CPU used in the window ending then, plus
    the expected cost, is at most ``cap_s`` (0: go now). ``cap_s`` None: no cap."""

    def __init__(self, cap_s: float | None, window_s: float = PACE_WINDOW_S,
                 keep: int = 30, quantile: float = 0.9) -> None:
        self.cap_s = cap_s
        self.window_s = window_s
        self.quantile = quantile
        self._costs: collections.deque[float] = collections.deque(maxlen=keep)
        self._spans: collections.deque[tuple[float, float, float]] = collections.deque()
        self._last: tuple[float, float] | None = None
        self.waits = 0  # frames that waited for the window
        self.waited_s = 0.0

    def note(self, wall: float, cpu: float, work: bool = True) -> None:
        if self._last is not None:
            start, cpu_start = self._last
            used = max(0.0, cpu - cpu_start)
            if wall > start:
                self._spans.append((start, wall, used))
            if work:
                self._costs.append(used)
        self._last = (wall, cpu)
        while self._spans and self._spans[0][1] <= wall - self.window_s:
            self._spans.popleft()

    @property
    def expected(self) -> float:
        """A frame's expected CPU cost: the ``quantile`` of the recent ones (0 before any)."""
        if not self._costs:
            return 0.0
        ordered = sorted(self._costs)
        return ordered[min(len(ordered) - 1, int(self.quantile * len(ordered)))]

    def used(self, wall: float) -> float:
        """CPU used in the window ending at ``wall``, at most: a span's CPU counted as
        late in its span as it can be (never less than the truth)."""
        since = wall - self.window_s
        return sum(min(cpu, max(0.0, end - max(start, since))) for start, end, cpu
                   in self._spans)

    def delay(self, wall: float) -> float:
        """Seconds to wait before the next frame fits (0: now)."""
        if self.cap_s is None:
            return 0.0
        need = self.cap_s - self.expected
        candidates = [wall] + [end + self.window_s for _, end, _ in self._spans]
        # a frame dearer than the cap goes alone: in a window with no more than the
        # thread's idle bookkeeping in it (its waits cost some microseconds each)
        alone = IDLE_SHARE * self.cap_s
        for at in sorted(c for c in candidates if c >= wall):
            used = self.used(at)
            if used <= need or used <= alone:
                return at - wall
        return self.window_s  # unreachable: the window is empty by then

    def waited(self, seconds: float) -> None:
        self.waits += 1
        self.waited_s += seconds


def cpu_quota() -> float | None:
    """The process's cgroup CPU quota in cores (v1 or v2), None without one."""
    cores: float | None = None
    for d in _cgroup_dirs():
        with contextlib.suppress(OSError, ValueError):
            quota = d / "cpu.cfs_quota_us"
            if quota.exists():
                q = int(quota.read_text())
                p = int((d / "cpu.cfs_period_us").read_text())
                if q > 0 and p > 0:
                    cores = q / p if cores is None else min(cores, q / p)
                continue
            limit = d / "cpu.max"
            if limit.exists():
                q_text, p_text = limit.read_text().split()[:2]
                if q_text != "max":
                    q2 = int(q_text) / int(p_text)
                    cores = q2 if cores is None else min(cores, q2)
    return cores


def _cgroup_dirs() -> list[Path]:
    """The process's cpu cgroup directories (v1 ``cpu`` controller, or v2)."""
    out = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            names = controllers.split(",")
            rel = path.lstrip("/")
            if "cpu" in names:
                for mount in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
                    out.append(Path("/sys/fs/cgroup") / mount / rel)
            elif controllers == "":
                out.append(Path("/sys/fs/cgroup") / rel)
    return [d for d in out if d.is_dir()]


def cpu_budget() -> float:
    """The cores this process may use: its cgroup's CPU quota when there is one, else
    the CPUs it may run on."""
    try:
        cores = float(len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        cores = float(os.cpu_count() or 1)
    quota = cpu_quota()
    return cores if quota is None else min(cores, quota)


def throttled_count() -> int | None:
    """How many quota periods the process's cgroup was held back in (``nr_throttled``),
    None without a CPU cgroup."""
    for d in _cgroup_dirs():
        with contextlib.suppress(OSError, ValueError):
            for line in (d / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "nr_throttled":
                    return int(value)
    return None


def lower_priority() -> bool:
    """The calling thread ``CAMERA_NICE`` steps nicer than it was (at most 19; Linux: a
    thread's own priority), so the loop's timers take the CPU before the camera. False
    when it cannot."""
    import threading

    try:
        tid = threading.get_native_id()
        now = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, now + CAMERA_NICE))
        return now < 19
    except (AttributeError, OSError):
        return False
