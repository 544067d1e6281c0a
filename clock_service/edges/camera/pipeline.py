"""One frame through the vision: detector (numpy/OpenCV) then watcher (pure). No I/O.

Used the same way by the camera thread in the service and by the benchmark, so what is
measured is what runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clock_service.edges.camera.core import Decision, Observation, Watcher, WatchSettings
from clock_service.edges.camera.detect import BallDetector, BedView
from clock_service.edges.camera.geometry import Calibration

__all__ = ["FramePipeline", "FrameResult", "frame_quality", "look_at"]

MAX_CANDIDATES = 24  # more ball-sized things than this on the bed: clutter, not a table
BEHIND_MS = 250.0  # a frame captured longer ago than this: the camera is behind real time
MAX_STRIDE = 3  # behind while balls roll: at least one frame in this many is looked at
VISIBLE_PX = 0.5  # a ball has moved when it drifted this many camera pixels (issue 37)


def look_at(lag_ms: float, state: str, left_out: int) -> bool:
    """Whether a frame captured ``lag_ms`` ago is looked at, ``left_out`` frames in a row
    having been left out before it. A machine too busy for every frame degrades this way:
    every frame is decoded (a file plays on in real time, a live camera's buffer is
    emptied), but while balls roll (``state`` "moving") and the frames are more than
    ``BEHIND_MS`` old, only one in 2 (one in ``MAX_STRIDE`` when further behind) is
    looked at, until the thread has caught up. The rest is then timed within half the
    frames left out (``Watcher.skip``). At rest every frame is looked at: the strike is
    timed to its frame, and the strike is what a camera behind real time must not miss.
    """
    if lag_ms <= BEHIND_MS or state != "moving":
        return True
    stride = min(MAX_STRIDE, int(lag_ms // BEHIND_MS) + 1)
    return left_out + 1 >= stride


def frame_quality(view: BedView) -> float:
    """0..1: how well this frame shows the bed. Felt over most of it and a sane number of
    ball-sized things is a good view; an arm or a cloth over half the bed is not."""
    felt = min(1.0, max(0.0, (view.felt_share - 0.35) / 0.3))
    clutter = 1.0 if view.candidates <= MAX_CANDIDATES else 0.0
    return round(felt * clutter, 3)


@dataclass
class FrameResult:
    at: float
    view: BedView
    observation: Observation
    decisions: list[Decision]


class FramePipeline:
    def __init__(self, calibration: Calibration, frame_size: tuple[int, int],
                 settings: WatchSettings | None = None) -> None:
        self.frame_size: tuple[int, int] = (int(frame_size[0]), int(frame_size[1]))
        self.detector = BallDetector(calibration, frame_size=frame_size)
        appearance = getattr(calibration, "appearance", None)
        settings = settings or WatchSettings(
            ball_mm=calibration.ball_mm,
            calibrated=appearance.balls if appearance is not None else None,
            table_mm=calibration.table_mm,
            visible_mm=VISIBLE_PX / self.detector.frame_px_per_mm)
        self.watcher = Watcher(settings)
        self._full = self.detector
        self._small: BallDetector | None = None

    def use_small(self, small: bool) -> None:
        """Look at a smaller image of the table (``budget.SMALL_SCALE`` of the bed's
        scale, about half its pixels: the budget's first step, issue 37 point 5) or the
        full one. The watcher goes on: positions are in mm either way."""
        if not small:
            self.detector = self._full
            return
        if self._small is None:
            from clock_service.edges.camera.budget import SMALL_SCALE

            full = self._full
            self._small = BallDetector(full.calibration, frame_size=self.frame_size,
                                       px_per_mm=full.scale * SMALL_SCALE)
        self.detector = self._small

    def warm_up(self) -> None:
        """OpenCV and numpy set up some tables on their first calls (half a second on a
        quiet machine, seconds on a busy one): paid here, on a plain felt-coloured frame
        and a detector thrown away, before the first real frame rather than on it (a late
        first frame is a camera behind real time, and its rest a stale command)."""
        import numpy as np

        width, height = self.frame_size
        blank = np.full((height, width, 3), (40, 115, 30), np.uint8)
        BallDetector(self.detector.calibration, frame_size=(width, height)).detect(blank)

    def skip(self, at: float) -> None:
        """A frame captured at ``at`` that is not looked at (the thread is behind)."""
        self.watcher.skip(at)

    def process(self, frame: Any, at: float) -> FrameResult:
        view = self.detector.detect(frame)
        spots = self.watcher.spots()
        felt = {}
        if spots:
            balls = [(b.x, b.y) for b in view.detections]
            near = self.detector.radius_mm * 0.3
            for spot_id, (x, y) in spots.items():
                # a ball still on its spot covers the spot's core: nothing to look at
                if any(abs(x - bx) < near and abs(y - by) < near for bx, by in balls):
                    felt[spot_id] = 0.0
                    continue
                felt[spot_id] = view.felt_fraction((x, y), self.detector.radius_mm, balls)
        obs = Observation(at, tuple(view.detections), felt, frame_quality(view))
        return FrameResult(at, view, obs, self.watcher.feed(obs))
