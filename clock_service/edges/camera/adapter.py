"""The camera in the service: a capture thread, the vision pipeline, and the table's clock.

The thread reads frames (``source``), runs each through ``FramePipeline`` (OpenCV releases
the GIL in its calls) and hops every decision onto the event loop with
``call_soon_threadsafe``; the clock is only touched from the loop, through
``runtime.command`` like any press. A slow or dead camera delays nothing but itself: the
clock's timers live on the loop, and the thread never waits on the loop.

Told by the runtime like the display (``runtime.listen``), it keeps a small view of its
table (phase, deadline, whether a result is awaited) and compares the referee's presses
with its own decisions: in ``assist`` the difference between the press and the detection
is recorded; in ``auto`` a referee's undo of a camera step or a press the camera did not
see is logged as a disagreement. Both are in ``/api/health`` ``components.camera``.

Status goes through the faults channel (TEAM convention 2): ``camera_disconnected``,
``camera_uncalibrated``, ``camera_not_sure`` (the buttons are the clock's only input
then), and in ``assist`` the info messages ``camera_balls_at_rest`` /
``camera_strike_detected`` for the console's status strip.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from clock_service.core.commands import PRESS_STALE_MS, Command
from clock_service.core.errors import ShotClockError
from clock_service.core.transitions import ClockPhase
from clock_service.edges.camera import budget
from clock_service.edges.camera.core import Decision, Rest, Strike, Sure, Unsure
from clock_service.edges.camera.evidence import Evidence
from clock_service.edges.camera.geometry import Calibration, CalibrationError
from clock_service.edges.camera.liveview import LiveView, Seen, see_again
from clock_service.edges.camera.modes import MODES, TableView, command_for
from clock_service.edges.camera.source import (
    FrameSource,
    SourceError,
    SourceSpec,
    make_source,
    redact,
)
from clock_service.service.runtime import Runtime

__all__ = ["CameraAdapter"]

log = logging.getLogger(__name__)

RECONNECT_S = (0.5, 1.0, 2.0, 5.0)
STATUS_EVERY_S = 0.5
STALE_MS = 1500.0  # no frame for this long: disconnected
MATCH_MS = 3000.0  # a press within this of a detection confirms (or contradicts) it
# A camera command whose frame is older than this when it is to be sent is not sent (the
# clock refuses a press older than PRESS_STALE_MS; the margin covers the hop to the loop,
# the command's queue and the store).
SEND_LIMIT_MS = PRESS_STALE_MS - 500.0
CLOCK_STEPS = frozenset({"clock.started", "clock.stopped", "clock.expired", "clock.paused",
                         "clock.resumed"})


class CameraAdapter:
    def __init__(self, runtime: Runtime, table_id: str, spec: SourceSpec, source_text: str, *,
                 mode: str = "assist", calibration_path: str | Path,
                 source_factory: Callable[[SourceSpec], FrameSource] | None = None,
                 evidence: Evidence | None = None,
                 budget_settings: budget.BudgetSettings | None = None,
                 cores: float | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"camera mode must be one of {MODES}, got {mode!r}")
        self.runtime = runtime
        self.table_id = table_id
        self.spec = spec
        self.source_text = redact(source_text)
        self.mode = mode
        self.calibration_path = Path(calibration_path)
        self._source_factory = source_factory or (
            lambda s: make_source(s, runtime.time.now_ms))
        self.view = TableView()
        self.evidence = evidence  # the ring of recent frames and the clips (issue 21)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._calibration: Calibration | None = None
        self._new_calibration = False
        # written by the thread, read by the loop (plain values: no lock needed for reads)
        self.connected = False
        self.ended = False
        self.frames = 0
        self.last_frame_at: float | None = None
        self.origin: float | None = None  # a file's playback origin (service ms)
        self.frame_size: tuple[int, int] | None = None
        self.last_frame: Any = None
        # the last frame looked at and what the detector saw in it (the calibration
        # page's live view, issue 21 point 3b); ``live`` makes its images (loop thread)
        self.seen: Seen | None = None
        self.live = LiveView()
        self._frame_times: collections.deque[float] = collections.deque(maxlen=60)
        self.confidence = 0.0
        self.balls = 0
        self.watch_state = "moving"
        self.sure = True
        self.cost_ms: collections.deque[float] = collections.deque(maxlen=120)
        self.skipped = 0  # frames read but not looked at (behind real time, balls rolling)
        self.drained = 0  # a live camera's buffered (old) frames left out undecoded
        self.evidence_shed = 0  # frames left out of the clips' ring: the thread was behind
        self.too_late = 0  # decisions not sent: older than SEND_LIMIT_MS (on the loop)
        # the CPU budget (issue 21 point 7): the level of work shed, written by the thread
        self.shedder = budget.Shedder(cores if cores is not None else budget.cpu_budget(),
                                      budget_settings)
        self._cores_given = cores is not None
        # the camera thread's CPU in any 100 ms kept under a share of the cgroup's quota
        # (issue 21 point 7: a burst must not use up a quota period the loop needs)
        self.pacer = budget.Pacer(self._pace_cap(budget.cpu_quota()))
        self._allow(budget.cpu_quota())
        self._last_read: float | None = None
        self.shed_level = budget.FULL
        self.niced = False
        self.not_looked = 0  # frames read but not looked at: work shed for the budget
        self.off_count = 0
        self.off_kept = 0  # retries not tried: the quota left no room
        self.looked = 0  # frames looked at (the pipeline run on them)
        self.source_fps: float | None = None
        # the budget's recent steps (service ms, level name, why): a referee's "why did the
        # camera stop deciding" and the bench's scoring of decisions made while deciding
        self.budget_log: collections.deque[dict[str, Any]] = collections.deque(maxlen=32)
        # on the loop
        self.last_rest: Rest | None = None
        self.last_strike: Strike | None = None
        self.decisions: collections.deque[dict[str, Any]] = collections.deque(maxlen=20)
        self.differences: dict[str, collections.deque[float]] = {
            "start": collections.deque(maxlen=50), "shot": collections.deque(maxlen=50)}
        self.disagreements: collections.deque[dict[str, Any]] = collections.deque(maxlen=20)
        self.sent: collections.deque[dict[str, Any]] = collections.deque(maxlen=20)
        self._camera_steps: list[str] = []  # names of the clock steps the camera made
        # the match in play (its id, "<table>.<number>") and the clock's recent steps, for
        # the clips (issue 21 point 5: the record links its clips, a clip shows the times)
        self.match_id: str | None = None
        self.clock_log: collections.deque[dict[str, Any]] = collections.deque(maxlen=64)
        if evidence is not None:
            evidence.clock_events = self.clock_between
        self._pending_rest: Rest | None = None
        self._status_timer: asyncio.TimerHandle | None = None

    # -- lifecycle (loop thread) ------------------------------------------------------------
    def attach(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._load_calibration()
        self.runtime.listen(self.on_events)
        self.runtime.health.register("camera", self.status)
        if self.table_id in self.runtime.tables:
            state = self.runtime.state(self.table_id)
            self.view.apply([], state)
            self._note_match(state)
        self._thread = threading.Thread(target=self._run, name="camera", daemon=True)
        self._thread.start()
        self._publish_status()

    def close(self) -> None:
        self._stop.set()
        if self._status_timer is not None:
            self._status_timer.cancel()
        self.runtime.unlisten(self.on_events)
        if self._thread is not None:
            self._thread.join(timeout=3.0)
        if self.evidence is not None:
            self.evidence.cut(float("inf"))
            self.evidence.close()
        self.runtime.health.unregister("camera")

    def _load_calibration(self) -> None:
        try:
            self._calibration = Calibration.load(self.calibration_path)
        except FileNotFoundError:
            log.warning("camera: no calibration at %s: open /calibrate to click the table's "
                        "corners, or run `shotclock camera calibrate`", self.calibration_path)
        except CalibrationError as exc:
            log.error("camera: calibration %s refused: %s", self.calibration_path, exc)

    def calibrate(self, calibration: Calibration) -> None:
        """A new calibration (loop thread; saved by the caller), taken by the thread at its
        next frame."""
        with self._lock:
            self._calibration = calibration
            self._new_calibration = True
        log.info("camera: calibrated, corners %s on a %dx%d frame",
                 [tuple(round(v) for v in c) for c in calibration.corners],
                 *calibration.frame_size)
        self._publish_status()

    @property
    def calibration(self) -> Calibration | None:
        return self._calibration

    # -- the capture thread -----------------------------------------------------------------
    def _run(self) -> None:
        import cv2

        from clock_service.edges.camera.pipeline import BEHIND_MS, FramePipeline, look_at

        cv2.setNumThreads(1)  # one core for the camera: predictable, leaves one for the loop
        self.niced = budget.lower_priority()  # the loop's timers first (issue 21 point 7)
        shedder = self.shedder
        attempt = 0
        while not self._stop.is_set():
            if shedder.level == budget.OFF:
                # off for want of CPU: nothing read for a while, then tried again at
                # not_sure (watching, deciding nothing) until it can do more
                self.connected = False
                self._stop.wait(shedder.settings.off_retry_s)
                if self._stop.is_set():
                    return
                self.pacer.cap_s = self._pace_cap(budget.cpu_quota())
                if self.pacer.cap_s is not None and self.pacer.cap_s < budget.MIN_CAP_S:
                    self.off_kept += 1  # the quota still leaves it no room: opening the
                    continue  # source and building the pipeline would only take the loop's CPU

                self.pacer.forget()  # measured again, at not_sure
                self._hop(self._on_shed, shedder.retry(), "tried again after being off")
            source = self._source_factory(self.spec)
            try:
                source.open()
            except SourceError as exc:
                self.connected = False
                wait = RECONNECT_S[min(attempt, len(RECONNECT_S) - 1)]
                if attempt == 0:
                    log.error("camera: %s; retrying every %g s at most", exc, RECONNECT_S[-1])
                attempt += 1
                self._stop.wait(wait)
                continue
            attempt = 0
            self.connected = True
            self.frame_size = source.size
            fps = getattr(source, "fps", None)
            self.source_fps = float(fps) if isinstance(fps, (int, float)) and fps > 0 else None
            pipeline: FramePipeline | None = None
            with self._lock:
                calibration = self._calibration
            if calibration is not None and min(source.size) > 0:
                # built before the first frame is read (its tables take a while on a busy
                # machine): a file's playback starts after it, a live frame is not aged by it
                pipeline = FramePipeline(calibration, source.size)
                pipeline.warm_up()
            behind = 0  # frames left out in a row while behind real time
            window = (time.monotonic(), time.process_time(), budget.throttled_count(),
                      self.looked)
            pacer = self.pacer
            pacer.note(time.monotonic(), time.thread_time(), work=False)
            try:
                while not self._stop.is_set():
                    window = self._measure(window, calibration is not None)
                    level = shedder.level
                    if level == budget.OFF:
                        break
                    # a frame's work in pieces (read and decode it, keep it in the ring,
                    # look at it), each waiting until it fits the window's cap (the source
                    # drops the frames it falls behind on: skipped)
                    self._pace("read", first=True)
                    self._lower_rate(level)
                    frame, at = source.read()
                    pacer.note(time.monotonic(), time.thread_time(), "read")
                    self.origin = source.origin
                    dropped = getattr(source, "dropped", ())
                    self.drained = getattr(source, "drained", 0)
                    self.skipped += len(dropped)  # behind real time: older frames dropped
                    started = time.perf_counter()
                    self.last_frame = frame
                    self.frames += 1
                    self.last_frame_at = at
                    self._frame_times.append(at)
                    lag = self.runtime.time.now_ms() - at
                    if self.evidence is not None:
                        if lag <= BEHIND_MS and level <= budget.SMALL:
                            self._pace("ring")
                            self.evidence.on_frame(frame, at)  # encoded here, off the loop
                            pacer.note(time.monotonic(), time.thread_time(), "ring")
                        else:  # behind real time: the ring is shed before the decisions
                            self.evidence_shed += 1
                            self.evidence.cut(at)
                    size = (frame.shape[1], frame.shape[0])
                    self.frame_size = size
                    with self._lock:
                        calibration = self._calibration
                        if self._new_calibration:
                            pipeline = None
                            self._new_calibration = False
                    if calibration is None:
                        self.seen = Seen(frame, at, self.frames, (), None, 0.0, 0.0, None)
                        continue
                    if pipeline is None or pipeline.frame_size != size:
                        pipeline = FramePipeline(calibration, size)
                    for dropped_at in dropped:
                        pipeline.skip(dropped_at)
                    stride = self._stride(level)
                    if stride > 1 and self.frames % stride:
                        self.not_looked += 1  # shed for the CPU budget
                        pipeline.skip(at)
                        continue
                    if not look_at(lag, pipeline.watcher.state, behind):
                        behind += 1
                        self.skipped += 1
                        pipeline.skip(at)
                        continue
                    behind = 0
                    small = level >= budget.SMALL
                    pipeline.use_small(small)
                    look = "look_small" if small else "look"
                    self._pace(look)
                    result = pipeline.process(frame, at)
                    pacer.note(time.monotonic(), time.thread_time(), look)
                    self.looked += 1
                    if pacer.count(look) >= 5 and (pacer.cap_s is not None
                                                   or pacer.allowance is not None):
                        # too few frames: said at once, not at the window's end, before
                        # a decision on them (issue 21 point 7)
                        level = self._check_frames(level)
                    self.cost_ms.append((time.perf_counter() - started) * 1000)
                    self.confidence = result.observation.quality
                    self.balls = len(result.view.detections)
                    self.watch_state = pipeline.watcher.state
                    self.sure = pipeline.watcher.sure
                    detector = pipeline.detector
                    self.seen = Seen(frame, at, self.frames,
                                     tuple((d.x, d.y, d.kind) for d in result.view.detections),
                                     result.view.felt, result.view.felt_share, detector.scale,
                                     detector.calibration, calibration, detector.radius_mm)
                    if level >= budget.NOT_SURE:
                        continue  # short of CPU: it watches, it decides nothing
                    for decision in result.decisions:
                        if isinstance(decision, Rest):
                            calibration = self._recount(calibration, decision.balls)
                        self._hop(self._on_decision, decision)
            except SourceError as exc:
                self.connected = False
                if source.ended:
                    self._see_the_last_frame()  # before it says ended: seen is then final
                    self.ended = True
                    if self.evidence is not None:  # the clips still waiting: what there is
                        self.evidence.cut(float("inf"))
                    log.info("camera: %s after %d frames", exc, source.index)
                    source.close()
                    return
                log.error("camera: %s; reconnecting", exc)
            except Exception:
                self.connected = False
                log.exception("camera: frame processing failed; restarting the camera")
                self._stop.wait(1.0)
            finally:
                source.close()

    def _recount(self, calibration: Calibration, balls: int) -> Calibration:
        """Camera thread, a rest decided with ``balls`` balls: the calibration's count of
        balls made that (issue 37 point 1: rechecked when balls are potted, or a frame is
        racked again), and saved, so that the opening check after a restart (every ball the
        calibration counted must be seen) asks for the balls there are now, not for those
        potted meanwhile. The pipeline goes on as it is."""
        appearance = calibration.appearance
        if appearance is None or appearance.balls == balls:
            return calibration
        updated = replace(calibration, appearance=replace(appearance, balls=balls))
        with self._lock:
            if self._calibration is not calibration:
                return calibration  # a new one came meanwhile: it counts for itself
            self._calibration = updated
        try:
            updated.save(self.calibration_path)
        except OSError as exc:
            log.warning("camera: the new count of balls (%d) not saved: %s", balls, exc)
        log.info("camera: %d balls at rest where the calibration counted %d: count saved",
                 balls, appearance.balls)
        return updated

    def _see_the_last_frame(self) -> None:
        """Camera thread, a file ended: when the last frame it handed over was not looked at
        (left out to catch up with real time, which is over now; a busy machine can leave
        out every frame of a short file), the detector looks at it now, for what the camera
        is shown to see (the calibration page, ``balls``). Nothing is decided from it: it is
        past, and the watcher is not fed."""
        with self._lock:
            calibration = self._calibration
        frame, seen = self.last_frame, self.seen
        looked_at = seen is not None and seen.number == self.frames
        if frame is None or calibration is None or looked_at:
            return
        blank = Seen(frame, self.last_frame_at or 0.0, self.frames, (), None, 0.0, 0.0, None)
        self.seen = see_again(blank, calibration)
        self.balls = len(self.seen.balls)

    def _pace(self, kind: str, first: bool = False) -> None:
        """Camera thread: wait until a piece of work of ``kind`` fits the pacer's cap
        (``first``: a frame's first piece, evenly spaced from the last frame's)."""
        pacer = self.pacer
        now = time.monotonic()
        pacer.note(now, time.thread_time(), work=False)  # the bookkeeping since the last
        wait = pacer.delay(now, kind, first)
        while wait > 0 and not self._stop.is_set():
            pacer.waited(wait)
            self._stop.wait(wait)
            now = time.monotonic()
            pacer.note(now, time.thread_time(), work=False)
            wait = pacer.delay(now, kind, first)
        if first:
            pacer.begin(now)

    def _measure(self, window: tuple[float, float, int | None, int], calibrated: bool = True
                 ) -> tuple[float, float, int | None, int]:
        """Camera thread: every ``window_s``, the process's CPU use, the frames looked at
        and the frames the pacer lets it look at fed to the budget's policy (one policy:
        ``budget.Shedder``); a new level is told to the loop. Returns the window now open.
        ``calibrated`` False: no frame is to be looked at (not counted as too few)."""
        started, cpu, throttled, looked = window
        now = time.monotonic()
        if now - started < self.shedder.settings.window_s:
            return window
        cpu_now = time.process_time()
        throttled_now = budget.throttled_count()
        if not self._cores_given:  # a quota set (or the process moved into one) since
            self.shedder.cores = max(0.01, budget.cpu_budget())
        quota = budget.cpu_quota()
        self.pacer.cap_s = self._pace_cap(quota)
        self._allow(quota)
        # held back by the cgroup in a good part of the window's quota periods (100 ms,
        # the kernel's default): the quota is the limit, whatever the share measured
        held = (throttled is not None and throttled_now is not None
                and throttled_now - throttled
                >= budget.THROTTLED_SHARE * (now - started) / budget.cpu_period())
        capacity, small, lean = self._capacities()
        level = self.shedder.feed(cpu_now - cpu, now - started, held,
                                  looked=self.looked - looked if calibrated else None,
                                  capacity=capacity, lean=lean, small=small,
                                  need=self._need())
        if level is not None:
            self.shed_level = level
            self._hop(self._on_shed, level, self.shedder.reason)
        return now, cpu_now, throttled_now, self.looked

    def _capacities(self) -> tuple[float | None, float | None, float | None]:
        """Frames a second the camera can afford (its cap under a quota, else its
        allowance of one core, over what a frame's pieces cost here, measured): at full
        detail with the clips, with a smaller image of the table and the clips, and with
        the smaller image alone (issue 37 point 5). A look not measured yet is estimated
        from the other (``budget.SMALL_COST``)."""
        pacer = self.pacer
        src = self.source_fps
        full = pacer.expect("look", 0.5) if pacer.count("look") else None
        small = pacer.expect("look_small", 0.5) if pacer.count("look_small") else None
        if full is None and small is None:
            costs: dict[str, float] = {}
        else:
            full = full if full is not None else (small or 0.0) / budget.SMALL_COST
            small = small if small is not None else full * budget.SMALL_COST
            costs = {"look": full, "look_small": small}
        with_full = pacer.capacity(src, leave_out=("look_small",), instead=costs or None)
        with_small = pacer.capacity(src, leave_out=("look",), instead=costs or None)
        lean = pacer.capacity(src, leave_out=("look", "ring"), instead=costs or None)
        return with_full, with_small, lean

    def _need(self) -> float | None:
        """Frames a second to look at every frame: the source's rate (or as measured)."""
        if self.source_fps:
            return self.source_fps
        fps = self.fps()
        return fps if fps > 0 else None

    def _stride(self, level: int) -> int:
        """Camera thread: 1 frame in how many is looked at, at ``level``."""
        _, _, lean = self._capacities()
        return budget.stride_for(level, self._need(), lean, self.shedder.settings)

    def _lower_rate(self, level: int) -> None:
        """Camera thread, at ``light``: the frames not to be looked at are not read either
        (a webcam's are left in its buffer, a file's dropped undecoded): the next read
        waits until the frame it will look at is due."""
        need = self._need()
        if level != budget.LIGHT or not need or self._last_read is None:
            self._last_read = time.monotonic()
            return
        due = self._last_read + self._stride(level) / need - 0.5 / need
        wait = due - time.monotonic()
        if wait > 0:
            self._stop.wait(wait)
        self._last_read = time.monotonic()

    def _check_frames(self, level: int) -> int:
        """Camera thread: the pacer's frames a second against the policy, now."""
        capacity, small, lean = self._capacities()
        new = self.shedder.check(capacity, lean, small, self._need())
        if new is None:
            return level
        self.shed_level = new
        self._hop(self._on_shed, new, self.shedder.reason)
        return new

    def _allow(self, quota: float | None) -> None:
        """Without a quota the camera's thread may use up to one core, within the
        service's share of its CPUs: what a frame costs here is weighed against that."""
        settings = self.shedder.settings
        self.pacer.allowance = None if quota is not None else \
            min(1.0, settings.share * self.shedder.cores)

    def _pace_cap(self, quota: float | None) -> float | None:
        """The camera thread's CPU allowed in any ``PACE_WINDOW_S``: ``pace_share`` of the
        cgroup's quota for it; None (no cap) without a quota or with pacing off."""
        return budget.pace_cap(quota, self.shedder.settings)

    def _on_shed(self, level: int, why: str = "") -> None:
        """Loop thread: the budget level's faults (issue 21 point 7)."""
        self.shed_level = level
        health = self.runtime.health
        shedder = self.shedder
        use = f"{shedder.last_use:.2f} of {shedder.limit:.2f} cores"
        why = why or f"short of CPU (the service used {use})"
        self.budget_log.append({"at": round(self.runtime.time.now_ms()),
                                "name": budget.LEVELS[level], "why": why})
        log.warning("camera: CPU budget level %s (%s): %s", budget.LEVELS[level], level, why)
        if level == budget.OFF:
            self.off_count += 1
            health.fault(self._key("off"), component="camera", code="camera_off",
                         message=f"camera off: {why}; use the buttons; it tries again in "
                         f"{shedder.settings.off_retry_s:.0f} s", table=self.table_id)
        else:
            health.clear(self._key("off"))
        if level >= budget.NOT_SURE:
            self._pending_rest = None
            health.fault(self._key("budget"), component="camera", code="camera_not_sure",
                         message=f"camera not sure: {why}; it decides nothing; use the "
                         "buttons", table=self.table_id)
        else:
            health.clear(self._key("budget"))

    def _hop(self, callback: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(callback, *args)

    # -- decisions (loop thread) --------------------------------------------------------------
    def _on_decision(self, decision: Decision) -> None:
        health = self.runtime.health
        if isinstance(decision, Unsure):
            health.fault(self._key("unsure"), component="camera", code="camera_not_sure",
                         message=f"camera not sure: {decision.reason}; use the buttons",
                         table=self.table_id)
            self._clear_detection()
            return
        if isinstance(decision, Sure):
            health.clear(self._key("unsure"))
            return
        kind = "rest" if isinstance(decision, Rest) else "strike"
        record: dict[str, Any] = {"type": kind,
                  "at": round(decision.at, 1), "decided_at": round(decision.decided_at, 1)}
        self.decisions.append(record)
        if self.evidence is not None:
            record["clip"] = self.evidence.request(
                kind, decision.at, decided_at=round(decision.decided_at, 1),
                match=self.match_id)
        if isinstance(decision, Rest):
            self.last_rest = decision
            self._pending_rest = decision
        else:
            self.last_strike = decision
            self._pending_rest = None
        if self.mode == "assist":
            self._show_detection(decision)
            return
        self._send(decision)

    def _send(self, decision: Rest | Strike) -> None:
        command = command_for(decision, self.view, self.mode)
        if command is None:
            if isinstance(decision, Rest) and self.view.waiting_for_result:
                log.info("camera: balls at rest; waiting for the shot's result before start")
            return
        if isinstance(decision, Rest):
            self._pending_rest = None
        self._issue(command)

    def _issue(self, command: Command) -> None:
        age = self.runtime.time.now_ms() - command.at if command.at is not None else 0.0
        if age > SEND_LIMIT_MS:
            # Never sent to be refused (issue 21 point 4): a decision this long after its
            # frame would reach the clock as a stale press (409). Timing it later than its
            # frame would be wrong, so the camera says it is not sure and the referee's
            # button is the input for this step.
            self.too_late += 1
            log.warning("camera: %s decided %.0f ms after its frame (limit %.0f ms): not "
                        "sent", command.name, age, SEND_LIMIT_MS)
            self.runtime.health.fault(
                self._key("late"), component="camera", code="camera_not_sure",
                message=f"camera not sure: its {command.name} was decided {age / 1000:.1f} s "
                "after the frame, too late for the clock; use the buttons",
                table=self.table_id)
            return
        self.runtime.health.clear(self._key("late"))
        self.sent.append({"command": command.name, "at": command.at})
        task = asyncio.ensure_future(self.runtime.command(self.table_id, command))
        task.add_done_callback(functools.partial(self._after_command, command=command))

    def _after_command(self, task: asyncio.Future[Any], *, command: Command) -> None:
        exc = task.exception()
        if exc is None:
            return  # its step is counted from its event (_compare), which comes first
        if isinstance(exc, ShotClockError):
            log.info("camera: %s refused: %s", command.name, exc.message)
            self._disagree(f"camera {command.name} refused: {exc.code}")
        else:
            log.error("camera: %s failed: %r", command.name, exc)

    def _show_detection(self, decision: Rest | Strike) -> None:
        if isinstance(decision, Rest):
            self.runtime.health.fault(
                self._key("detection"), component="camera", code="camera_balls_at_rest",
                message="balls at rest", table=self.table_id, level="info")
            return
        remaining = (self.view.deadline - decision.at) / 1000 \
            if self.view.phase == ClockPhase.RUNNING and self.view.deadline is not None else None
        text = f"strike detected at {remaining:.2f} s" if remaining is not None \
            else "strike detected"
        self.runtime.health.fault(
            self._key("detection"), component="camera", code="camera_strike_detected",
            message=text, table=self.table_id, level="info",
            vars={"s": f"{remaining:.2f}" if remaining is not None else "-"})

    def _clear_detection(self) -> None:
        self.runtime.health.clear(self._key("detection"))

    def _key(self, what: str) -> str:
        return f"camera.{what}.{self.table_id}"

    # -- the table's events (loop thread) -------------------------------------------------------
    def on_events(self, table_id: str, events: list[dict[str, Any]], state: dict[str, Any]) -> None:
        if table_id != self.table_id:
            return
        was_waiting = self.view.waiting_for_result
        self.view.apply(events, state)
        self._note_match(state)
        for event in events:
            self._compare(event)
            self._log_clock(event)
            if event.get("type") == "clock.expired" and self.evidence is not None:
                # the instant time ran out: the deadline (the event is told when the
                # service produced it, ``late_ms`` later)
                data = event.get("data") or {}
                self.evidence.request("time_foul",
                                      float(data.get("deadline") or event.get("at") or 0),
                                      match=self.match_id)
        rest = self._pending_rest
        if (self.mode == "auto" and was_waiting and not self.view.waiting_for_result
                and rest is not None and self.watch_state == "rest"):
            # the result came in while the balls were already at rest: start now (the core
            # takes the later of the rest and the result), or at the rest if still fresh
            self._send(rest if self.runtime.time.now_ms() - rest.at < SEND_LIMIT_MS
                       else Rest(self.runtime.time.now_ms(), rest.decided_at, rest.balls))

    def _note_match(self, state: dict[str, Any]) -> None:
        match = state.get("match") if isinstance(state, dict) else None
        number = match.get("number") if isinstance(match, dict) else None
        if isinstance(number, int) and number > 0:
            self.match_id = f"{self.table_id}.{number}"

    def _log_clock(self, event: dict[str, Any]) -> None:
        """The clock's steps a referee compares a clip with: started (by whom), stopped
        (why), expired (at its deadline), paused and resumed; each at its instant."""
        kind = event.get("type")
        if kind not in CLOCK_STEPS:
            return
        data = event.get("data") or {}
        at = data.get("deadline") if kind == "clock.expired" else (
            event.get("press_at") or event.get("at"))
        if at is None:
            return
        entry: dict[str, Any] = {"type": kind, "at": round(float(at), 1)}
        if event.get("by") is not None:
            entry["by"] = event.get("by")
        if data.get("reason"):
            entry["reason"] = data.get("reason")
        self.clock_log.append(entry)

    def clock_between(self, start: float, end: float) -> list[dict[str, Any]]:
        """The clock's steps from ``start`` to ``end`` (any thread: reads a copy)."""
        return [e for e in list(self.clock_log) if start <= e["at"] <= end]

    def _compare(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        by = event.get("by")
        pressed = float(event.get("press_at") or event.get("at") or 0)
        if by == "camera":
            # The camera's own step, counted when its event is told (before the store's
            # commit returns): a referee's undo right behind it must find it.
            step = {"clock.started": "start", "clock.stopped": "shot"}.get(str(kind))
            if step == "start" or (step == "shot"
                                   and (event.get("data") or {}).get("reason") == "shot"):
                self._camera_steps.append(step)
                del self._camera_steps[:-20]
        elif kind == "clock.started" and by == "referee":
            self._confirm("start", self.last_rest, pressed)
        elif (kind == "clock.stopped" and by == "referee"
              and (event.get("data") or {}).get("reason") == "shot"):
            self._confirm("shot", self.last_strike, pressed)
        elif kind == "correction.undone" and by is not None:
            undone = (event.get("data") or {}).get("undone")
            if undone in ("start", "shot") and self._camera_steps[-1:] == [undone]:
                self._camera_steps.pop()
                self._disagree(f"referee undid the camera's {undone}")

    def _confirm(self, step: str, detection: Rest | Strike | None, pressed: float) -> None:
        if detection is not None and abs(pressed - detection.at) <= MATCH_MS:
            diff = pressed - detection.at
            self.differences[step].append(round(diff, 1))
            log.info("camera: referee's %s %+.0f ms from the camera's %s", step, diff,
                     "rest" if step == "start" else "strike")
            if self.mode == "assist":
                self._clear_detection()
            return
        if self.mode == "auto":
            self._disagree(f"referee's {step} without a camera "
                           f"{'rest' if step == 'start' else 'strike'} within {MATCH_MS:.0f} ms")

    def _disagree(self, what: str) -> None:
        self.disagreements.append({"at": round(self.runtime.time.now_ms()), "what": what})
        log.warning("camera: disagreement: %s", what)

    # -- status ---------------------------------------------------------------------------------
    def fps(self) -> float:
        times = list(self._frame_times)
        if len(times) < 2 or times[-1] == times[0]:
            return 0.0
        return round((len(times) - 1) * 1000 / (times[-1] - times[0]), 1)

    def status(self) -> dict[str, Any]:
        costs = sorted(self.cost_ms)
        now = self.runtime.time.now_ms()
        fresh = self.last_frame_at is not None and now - self.last_frame_at < STALE_MS
        return {
            "source": self.source_text, "mode": self.mode, "table": self.table_id,
            "connected": bool(self.connected and fresh), "ended": self.ended,
            "calibrated": self._calibration is not None,
            "frame_size": list(self.frame_size) if self.frame_size else None,
            "frames": self.frames, "fps": self.fps(), "confidence": self.confidence,
            "sure": self.sure, "state": self.watch_state, "balls": self.balls,
            "origin": self.origin,
            # how far the last frame's capture time is behind now: a file the pipeline
            # cannot keep up with falls behind (its commands go stale after 2 s)
            "lag_ms": round(now - self.last_frame_at) if self.last_frame_at is not None
            else None,
            "cost_ms_p50": round(costs[len(costs) // 2], 2) if costs else None,
            "skipped": self.skipped,
            "drained": self.drained,
            "too_late": self.too_late,
            "decisions": list(self.decisions), "sent": list(self.sent),
            "press_minus_detection_ms": {
                step: {"n": len(v), "median": statistics.median(v) if v else None,
                       "last": list(v)[-5:]}
                for step, v in self.differences.items()},
            "disagreements": list(self.disagreements),
            "live_view": {"encodes": self.live.encodes, "refused": self.live.refused},
            "budget": {"level": self.shed_level, "name": budget.LEVELS[self.shed_level],
                       "cores": round(self.shedder.cores, 3),
                       "limit": round(self.shedder.limit, 3),
                       "use": round(self.shedder.last_use, 3), "niced": self.niced,
                       "not_looked": self.not_looked, "changes": self.shedder.changes,
                       "why": self.shedder.reason, "looked": self.looked,
                       "looked_fps": (None if self.shedder.last_rate is None
                                      else round(self.shedder.last_rate, 1)),
                       "capacity_fps": (None if self.shedder.last_capacity is None
                                        else round(self.shedder.last_capacity, 1)),
                       "log": list(self.budget_log),
                       "paced": {"cap_ms": (None if self.pacer.cap_s is None
                                            else round(self.pacer.cap_s * 1000, 2)),
                                 "waits": self.pacer.waits,
                                 "waited_s": round(self.pacer.waited_s, 2),
                                 "frame_ms": round(self.pacer.expected * 1000, 2)},
                       "off": self.off_count, "off_kept": self.off_kept},
            "evidence": ({**self.evidence.status(), "shed": self.evidence_shed}
                         if self.evidence is not None else None),
        }

    def _publish_status(self) -> None:
        """Faults from the thread's facts, every half second (loop thread)."""
        health = self.runtime.health
        now = self.runtime.time.now_ms()
        fresh = self.last_frame_at is not None and now - self.last_frame_at < STALE_MS
        if self.ended or self.shed_level == budget.OFF:  # off: camera_off says why
            health.clear(self._key("disconnected"))
        elif not (self.connected and fresh):
            health.fault(self._key("disconnected"), component="camera",
                         code="camera_disconnected",
                         message=f"camera {self.source_text} gives no frames; use the buttons",
                         table=self.table_id)
        else:
            health.clear(self._key("disconnected"))
        if self._calibration is None:
            health.fault(self._key("uncalibrated"), component="camera",
                         code="camera_uncalibrated",
                         message="the camera does not know where the table is: open "
                         "/calibrate and click its four corners", table=self.table_id)
        else:
            health.clear(self._key("uncalibrated"))
        if self._loop is not None and not self._stop.is_set():
            self._status_timer = self._loop.call_later(STATUS_EVERY_S, self._publish_status)
