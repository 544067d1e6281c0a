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
``down_after`` windows in a row under a third of it.

Too few frames looked at is the same policy's other input (the pacer below and the
shedder are one): a rest is decided ``rest_ms`` (300) after the balls stopped, at the
first frame looked at after that, so a rest within 400 ms needs a frame looked at about
every 100 ms, and timing a strike from a ball's run needs frames as close. So, besides the
CPU steps, each window:

- the frames a second the pacer lets the camera look at within its CPU cap
  (``Pacer.capacity``: the cap over a frame's median cost, at most the source's rate)
  under ``decide_fps`` (12; checked at every frame looked at too, ``Shedder.check``, once
  5 have been): ``no_ring`` at once when dropping the clips' ring (its JPEG
  encodes) gives enough, else ``not_sure`` at once (decides nothing, ``camera_not_sure``);
- under ``watch_fps`` (3), or a piece of a frame's work too dear to be run without
  risking the loop's quota period (more than ``ALONE_MAX`` times the cap): ``off`` at once
  (``camera_off``; tried again at ``not_sure`` after ``off_retry_s``);
- the frames a second actually looked at (measured; a machine too busy to give the camera
  even its share) under half of ``decide_fps`` for ``up_after`` windows: ``not_sure``;
- back to deciding after ``down_after`` windows in a row with the capacity at least
  ``back_margin`` times ``decide_fps``.

The level is the higher of the CPU step and the frames' verdict; ``reason`` says which.
The camera's thread also runs at a lower priority (10 steps nicer) than the loop, so
within its share the loop's timers take the CPU first.

``Shedder`` is pure (fed the measurements); ``cpu_budget`` and ``throttled_count`` read
the cgroup (v1 or v2) once a window.

The shedder works on 1 s averages. Under a cgroup the kernel counts the quota per 100 ms
period: a burst of frame work that uses up one period's quota just before an expiry falls
due makes the whole process wait for the next period, the loop's timer with it (measured:
an expiry 110 ms late at a quarter of a core, the bare loop's max 15). So ``Pacer`` also
bounds the camera thread's own CPU time (``time.thread_time``) in any sliding
``PACE_WINDOW_S`` (the cgroup's default period): a frame's work is done in pieces
(reading and decoding it, encoding it into the clips' ring, looking at it), and before
each the CPU used in the last 100 ms plus the piece's expected cost (p90 of recent pieces
of its kind) must stay under ``pace_share`` of the quota's 100 ms, else it waits until it
does (the source drops the frames it falls behind on, counted as skipped). A piece dearer
than the cap alone is let through only when the window is empty but for the thread's idle
bookkeeping (under ``IDLE_SHARE`` of the cap, or ``IDLE_MIN_S``). No quota, no cap: the
machine's own cores are the limit.
"""

from __future__ import annotations

import collections
import contextlib
import math
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ALONE_MAX", "LEVELS", "PACE_WINDOW_S", "SMALL_SCALE", "STRIDE", "BudgetSettings",
           "Pacer", "Shedder", "cpu_budget", "cpu_period", "cpu_quota", "lower_priority",
           "pace_cap", "stride_for", "throttled_count"]

LEVELS = ("full", "small", "no_ring", "light", "not_sure", "off")
FULL, SMALL, NO_RING, LIGHT, NOT_SURE, OFF = range(6)
# 1 frame in this many is looked at, per level (light: at least this; ``stride_for`` says
# how many for the frames a second the camera can afford)
STRIDE = (1, 1, 1, 2, 6, 0)
SMALL_SCALE = 0.7  # ``small``: the bed image at this share of its scale (half the pixels)
SMALL_COST = 0.5  # a small look's cost against a full one's, until it is measured
CAMERA_NICE = 10
THROTTLED_SHARE = 0.3  # held back in this share of a window's quota periods: over budget
PACE_WINDOW_S = 0.1  # the pacer's sliding window: the cgroup's default quota period
IDLE_SHARE = 0.1  # a window with at most this share of the cap used counts as empty
IDLE_MIN_S = 0.0005  # ... or this much CPU (under a tiny cap its own waits cost more)
# a piece of frame work dearer than this many caps would, run alone, leave the loop too
# little of the quota period (the cap is half of it): the camera cannot run, it goes off
ALONE_MAX = 1.5
MIN_CAP_S = 0.001  # a cap under this is no room to work in: off without trying


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
    # (0: no pacing), and under the quota's less ``loop_reserve_ms``: the rest of each
    # quota period is the loop's (a command, a broadcast cost the same whatever the quota).
    # Measured (bench/README.md): at a quarter of a core 0.5 left about 13 frames a second
    # looked at, unevenly (a rest decided 467 ms after its first still frame), 0.65 about
    # 17 (a rest 411 ms after the last ball's stop), 0.75 about 21 (300 ms at most)
    pace_share: float = 0.75
    loop_reserve_ms: float = 6.0
    # frames looked at a second needed to decide (rest_ms 300 + a frame every ~83 ms: a
    # rest within 400 ms), and to be worth watching at all
    decide_fps: float = 12.5
    watch_fps: float = 3.0
    back_margin: float = 1.25  # the capacity needed to decide again, in decide_fps


def pace_cap(quota: float | None, settings: BudgetSettings) -> float | None:
    """The camera thread's CPU allowed in any ``PACE_WINDOW_S``, in seconds: ``pace_share``
    of the quota's, at most the quota's less ``loop_reserve_ms`` (0 when that leaves
    nothing: the camera cannot run); None (no cap) without a quota or with pacing off."""
    if quota is None or settings.pace_share <= 0:
        return None
    period = quota * PACE_WINDOW_S
    return max(0.0, min(settings.pace_share * period,
                        period - settings.loop_reserve_ms / 1000))


class Shedder:
    """The level from the measured CPU use and the frames the camera can look at, window
    by window (pure: no clock, no I/O)."""

    def __init__(self, cores: float, settings: BudgetSettings | None = None) -> None:
        self.settings = settings or BudgetSettings()
        self.cores = max(0.01, cores)
        self.level = FULL
        self.cpu_level = FULL  # the CPU steps (no_ring, light, not_sure, off)
        self.frames_level = FULL  # too few frames: not_sure or off
        self._over = 0
        self._under = 0
        self._slow = 0
        self._fast = 0
        self.last_use = 0.0  # the last window's CPU use, in cores
        self.last_rate: float | None = None  # frames looked at a second in the last window
        self.last_capacity: float | None = None  # frames a second the pacer allows
        self.last_need: float | None = None  # frames a second every frame needs
        self.reason = ""
        self.changes = 0

    @property
    def limit(self) -> float:
        """The service's CPU use allowed, in cores."""
        return self.settings.share * self.cores

    def feed(self, cpu_s: float, wall_s: float, throttled: bool = False,
             looked: int | None = None, capacity: float | None = None,
             lean: float | None = None, small: float | None = None,
             need: float | None = None) -> int | None:
        """One window: ``cpu_s`` of CPU used in ``wall_s`` of time, ``throttled`` when the
        cgroup held the process back, ``looked`` frames looked at (None: none were to be,
        e.g. no calibration), ``capacity`` the frames a second the pacer allows (None: not
        known), ``lean`` the same without the clips' ring (None: as ``capacity``). The new
        level when it changes, else None."""
        if wall_s <= 0:
            return None
        s = self.settings
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
        if self._over >= s.up_after and self.cpu_level < OFF:
            self.cpu_level += 1
            self._over = self._under = 0
        elif self._under >= s.down_after and self.cpu_level > FULL:
            self.cpu_level -= 1
            self._over = self._under = 0
        self._frames(None if looked is None else looked / wall_s, capacity, lean, small, need)
        level = max(self.cpu_level, self.frames_level)
        if self.frames_level >= self.cpu_level and self.frames_level > FULL:
            self.reason = self._frames_reason()
        elif self.cpu_level > FULL:
            self.reason = (f"short of CPU (the service used {use:.2f} of "
                           f"{self.limit:.2f} cores)")
        else:
            self.reason = ""
        return None if level == self.level else self._set(level)

    def check(self, capacity: float | None, lean: float | None = None,
              small: float | None = None, need: float | None = None) -> int | None:
        """Between windows (at every frame): the capacities' verdict when it is worse than
        the level, at once (a quota seen, or frames dearer than they were, need not wait
        for the window's end to stop the camera deciding on too few frames). Never
        lowers the level. The new level when it changes, else None."""
        now = self._verdict(capacity, capacity if lean is None else lean, 1.0, small, need)
        if now <= self.frames_level:
            return None
        self.frames_level = now
        self._slow = self._fast = 0
        self.last_capacity = capacity if lean is None else lean
        level = max(self.cpu_level, self.frames_level)
        if level == self.level:
            return None
        if self.frames_level >= self.cpu_level:
            self.reason = self._frames_reason()
        return self._set(level)

    def _verdict(self, capacity: float | None, lean: float | None, k: float,
                 small: float | None = None, need: float | None = None) -> int:
        """What the frames a second the camera can afford say (``k``: the thresholds'
        factor, more to come back), step by step as a person would shed (issue 37 point 5):
        every frame (``need``: the source's rate; the decide rate when not known) at full
        detail with the clips (``capacity``), then a smaller image of the table
        (``small``), then without the clips (``lean``), then fewer frames down to
        ``decide_fps`` (light), then not sure, then off."""
        s = self.settings
        need = s.decide_fps if need is None else need
        if lean is not None and lean < s.watch_fps:
            return OFF
        if lean is not None and lean < s.decide_fps * k:
            return NOT_SURE
        if capacity is None or capacity >= need * k:
            return FULL
        if small is not None and small >= need * k:
            return SMALL
        if lean is None or lean >= need * k:
            return NO_RING
        return LIGHT

    def _frames(self, rate: float | None, capacity: float | None,
                lean: float | None, small: float | None = None,
                need: float | None = None) -> None:
        """The frames' verdict: FULL, SMALL, NO_RING, LIGHT (each the first that affords
        the frames it needs), NOT_SURE (too few even so) or OFF."""
        s = self.settings
        self.last_rate = rate
        self.last_capacity = capacity if lean is None else lean
        self.last_need = need
        lean = capacity if lean is None else lean
        now = self._verdict(capacity, lean, 1.0, small, need)
        if now > self.frames_level:
            self.frames_level = now
            self._slow = self._fast = 0
            return
        deciding = max(self.cpu_level, self.frames_level) < NOT_SURE
        if deciding and rate is not None and rate < s.decide_fps / 2:
            self._slow += 1
            self._fast = 0
            if self._slow >= s.up_after:
                self.frames_level = NOT_SURE
                self._slow = 0
            return
        self._slow = 0
        back = self._verdict(capacity, lean, s.back_margin, small, need)
        if back < self.frames_level < OFF:  # off is left by ``retry`` only
            self._fast += 1
            if self._fast >= s.down_after:
                self.frames_level = back
                self._fast = 0
        else:
            self._fast = 0

    def _frames_reason(self) -> str:
        s = self.settings
        cap = self.last_capacity
        if self.frames_level == OFF:
            return (f"too little CPU to look at frames ({cap:.1f} a second within its share, "
                    f"{s.watch_fps:g} needed to watch)" if cap is not None and cap > 0 else
                    "too little CPU for one frame's work within its share of the quota")
        if cap is not None and cap < s.decide_fps:
            return (f"too few frames: {cap:.1f} a second within its CPU share, "
                    f"{s.decide_fps:g} needed to decide")
        need = self.last_need if self.last_need is not None else s.decide_fps
        if self.frames_level == SMALL:
            return (f"a smaller image of the table looked at: the full one costs more than "
                    f"{need:g} frames a second allow")
        if self.frames_level == NO_RING:
            return ("the clips' ring dropped to keep every frame looked at "
                    f"({cap:.1f} a second without it)" if cap is not None else
                    "the clips' ring dropped to keep every frame looked at")
        if self.frames_level == LIGHT and cap is not None:
            return (f"fewer frames looked at: {cap:.1f} a second within its CPU share "
                    f"(at least {s.decide_fps:g} to decide)")
        rate = self.last_rate
        return (f"too few frames looked at ({rate:.1f} a second; {s.decide_fps:g} needed to "
                "decide)" if rate is not None else "too few frames looked at")

    def retry(self) -> int:
        """After ``off_retry_s`` off: back at ``not_sure`` (watching, deciding nothing)."""
        self.cpu_level = min(self.cpu_level, NOT_SURE)
        self.frames_level = min(self.frames_level, NOT_SURE)
        self._slow = self._fast = self._over = self._under = 0
        return self._set(NOT_SURE)

    def _set(self, level: int) -> int:
        self.level = level
        self.changes += 1
        return level


class Pacer:
    """The camera thread's CPU time in a sliding window (pure: fed wall and CPU clocks).

    ``note(wall, cpu, work)`` at each step closes the span since the last note (``work``:
    the kind of work it was, e.g. ``"read"`` or ``"look"``, whose CPU cost feeds that
    kind's estimate; True is ``"frame"``; False: bookkeeping, counted in the window but in
    no estimate). ``delay(wall, kind)`` is how long to wait before a piece of work of that
    kind so that the CPU used in the window ending then, plus its expected cost, is at
    most ``cap_s`` (0: go now). ``cap_s`` None: no cap. A frame's work is paced in pieces
    (reading it, looking at it), so no one piece is dearer than the cap where the frame as
    a whole would be."""

    def __init__(self, cap_s: float | None, window_s: float = PACE_WINDOW_S,
                 keep: int = 30, quantile: float = 0.9) -> None:
        self.cap_s = cap_s
        self.window_s = window_s
        self.keep = keep
        self.quantile = quantile
        self._costs: dict[str, collections.deque[float]] = {}
        self._spans: collections.deque[tuple[float, float, float]] = collections.deque()
        self._last: tuple[float, float] | None = None
        self._began: float | None = None  # when the last frame's first piece began
        # without a cap (no quota): the CPU seconds a second the camera's thread may use
        # (one thread: at most a core), against which ``capacity`` weighs a frame's cost
        # (a real Pi has no quota: it is a slower CPU all the time; issue 37 point 5)
        self.allowance: float | None = None
        self.waits = 0  # pieces of work that waited for the window
        self.waited_s = 0.0

    def note(self, wall: float, cpu: float, work: bool | str = True) -> None:
        kind = "frame" if work is True else (work or None)
        if self._last is not None:
            start, cpu_start = self._last
            used = max(0.0, cpu - cpu_start)
            if wall > start:
                self._spans.append((start, wall, used))
            if kind is not None:
                self._costs.setdefault(kind, collections.deque(maxlen=self.keep)).append(used)
        self._last = (wall, cpu)
        while self._spans and self._spans[0][1] <= wall - self.window_s:
            self._spans.popleft()

    def expect(self, kind: str = "frame", quantile: float | None = None) -> float:
        """A piece of work's expected CPU cost: the ``quantile`` (default the pacer's, p90)
        of the recent ones of its kind (0 before any)."""
        costs = self._costs.get(kind)
        if not costs:
            return 0.0
        ordered = sorted(costs)
        q = self.quantile if quantile is None else quantile
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def count(self, kind: str) -> int:
        """How many recent pieces of ``kind`` the estimate rests on."""
        return len(self._costs.get(kind, ()))

    @property
    def expected(self) -> float:
        """A frame's expected CPU cost: its pieces' together."""
        return sum(self.expect(kind) for kind in self._costs)

    def forget(self) -> None:
        """The costs measured so far forgotten (the camera starts again after a pause)."""
        self._costs.clear()

    def capacity(self, source_fps: float | None = None, leave_out: tuple[str, ...] = (),
                 instead: dict[str, float] | None = None) -> float | None:
        """Frames a second the cap lets the camera do, each with all its pieces at their
        median cost (at most ``source_fps``). Pieces are whole: a piece starts only when
        it fits what is left of the window's cap, so about half the dearest piece of the
        cap goes unused on average (measured: 19.5-21.8 frames a second looked at a
        quarter of a core, 13-16 at 3/16, 4.7 at an eighth while deciding; the cap over
        the frame's cost alone said 13 at an eighth). 0: a piece is dearer than ``ALONE_MAX``
        caps, too dear to run at all, or the cap is under ``MIN_CAP_S``. None: no cap and no
        source rate, or nothing measured yet. ``leave_out``: kinds of work not counted (what
        it would be without them); ``instead``: kinds counted at these costs (estimates of
        work not measured yet). Without a cap, the ``allowance`` over a frame's cost (None:
        no allowance known, ``source_fps``)."""
        costs = [self.expect(kind, 0.5) for kind in self._costs
                 if kind not in leave_out and kind not in (instead or {})]
        costs += [cost for kind, cost in (instead or {}).items() if kind not in leave_out]
        if self.cap_s is None:
            if self.allowance is None or not costs or sum(costs) <= 0:
                return source_fps
            fps = self.allowance / sum(costs)
            return fps if source_fps is None else min(source_fps, fps)
        if self.cap_s < MIN_CAP_S:
            return 0.0
        if not costs or sum(costs) <= 0:
            return source_fps
        if max(costs) > ALONE_MAX * self.cap_s:
            return 0.0
        usable = self.cap_s - max(costs) / 2
        if usable <= 0:
            return 0.0
        fps = usable / sum(costs) / self.window_s
        return fps if source_fps is None else min(source_fps, fps)

    def used(self, wall: float) -> float:
        """CPU used in the window ending at ``wall``, at most: a span's CPU counted as
        late in its span as it can be (never less than the truth)."""
        since = wall - self.window_s
        return sum(min(cpu, max(0.0, end - max(start, since))) for start, end, cpu
                   in self._spans)

    def spacing(self) -> float:
        """Seconds between frames at the even pace the cap allows (a frame's expected
        cost spread over the window's cap), so that the frames looked at are evenly spread
        rather than in bursts with a long gap after each (a rest is decided at the first
        frame looked at after its ``rest_ms``: the gaps are its lateness)."""
        if not self.cap_s:
            return 0.0
        return self.window_s * self.expected / self.cap_s

    def begin(self, wall: float) -> None:
        """A frame's first piece begins now (see ``delay(first=True)``)."""
        self._began = wall

    def delay(self, wall: float, kind: str = "frame", first: bool = False) -> float:
        """Seconds to wait before the next piece of ``kind`` fits (0: now); ``first``: it
        is a frame's first piece, which also waits for ``spacing`` since the last one's."""
        if self.cap_s is None:
            return 0.0
        earliest = wall
        if first and self._began is not None:
            earliest = max(wall, self._began + self.spacing())
        need = self.cap_s - self.expect(kind)
        candidates = [earliest] + [end + self.window_s for _, end, _ in self._spans]
        # a piece dearer than the cap goes alone: in a window with no more than the
        # thread's idle bookkeeping in it (its waits cost some microseconds each)
        alone = max(IDLE_SHARE * self.cap_s, IDLE_MIN_S)
        for at in sorted(c for c in candidates if c >= earliest):
            used = self.used(at)
            if used <= need or used <= alone:
                return at - wall
        return earliest - wall + self.window_s  # unreachable: the window is empty by then

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


def cpu_period() -> float:
    """The process's cgroup CPU period in seconds (v1 ``cpu.cfs_period_us`` or v2
    ``cpu.max``): the kernel counts the quota and ``nr_throttled`` per period. 0.1 (the
    kernel's default) without one. A 4 ms period throttles 25 times as often as a 100 ms
    one for the same share: counted against 100 ms periods it looked like a camera always
    held back, and the camera turned itself off using a third of its share (issue 37)."""
    for d in _cgroup_dirs():
        with contextlib.suppress(OSError, ValueError):
            period = d / "cpu.cfs_period_us"
            if period.exists():
                return max(1e-4, int(period.read_text()) / 1e6)
            limit = d / "cpu.max"
            if limit.exists():
                fields = limit.read_text().split()
                if len(fields) >= 2:
                    return max(1e-4, int(fields[1]) / 1e6)
    return 0.1


def stride_for(level: int, source_fps: float | None, capacity: float | None,
               settings: BudgetSettings) -> int:
    """1 frame in how many is looked at, at ``level``. At ``light`` the frame rate is
    lowered only as far as needed, from the source's rate towards ``decide_fps``: the
    fewest frames left out that the camera can afford (``capacity``, frames a second),
    never under ``decide_fps``."""
    base = STRIDE[level]
    if level != LIGHT or not source_fps:
        return base
    most = max(1, int(source_fps / settings.decide_fps))  # still deciding within 400 ms
    need = base if not capacity else math.ceil(source_fps / capacity - 1e-9)
    return max(1, min(most, max(base, need)))


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
