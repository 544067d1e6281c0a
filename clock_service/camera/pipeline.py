"""One frame through the vision: detector (numpy/OpenCV) then watcher (pure). No I/O.

Used the same way by the camera thread in the service and by the benchmark, so what is
measured is what runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clock_service.camera.core import Decision, Observation, Watcher, WatchSettings
from clock_service.camera.detect import BallDetector, BedView
from clock_service.camera.geometry import Calibration

__all__ = ["FramePipeline", "FrameResult", "frame_quality"]

MAX_CANDIDATES = 24  # more ball-sized things than this on the bed: clutter, not a table


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
        self.detector = BallDetector(calibration, frame_size=frame_size)
        settings = settings or WatchSettings(ball_mm=calibration.ball_mm)
        self.watcher = Watcher(settings)

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
