"""What the detector sees, for the calibration page (issue 21 point 3b).

The camera thread keeps its last looked-at frame with the detector's view of it
(``Seen``). ``LiveView`` turns that into a JPEG for the page: the frame (downscaled), each
ball's outline (its circle on the bed, projected back into the frame), the bed's outline,
and on request the felt mask tinted over the frame. It is encoded in a worker thread,
never on the event loop, one encode at a time, and at most ``MAX_RATE`` new images a
second per variant (with and without the mask) whatever the number of clients: a client
asking faster gets the image already made. Requests waiting for an encode are bounded
(``MAX_WAITING``): more get 503.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["Seen", "LiveView", "LiveImage", "render_seen", "outlines", "see_again"]

MAX_RATE = 4.0  # new images a second per variant, at most
MAX_WAITING = 16  # requests waiting for an encode, at most (more: 503)
WIDTH = 800  # the image's width at most (a phone shows less; clicks are in frame pixels)
QUALITY = 70
OUTLINE_POINTS = 16
# BGR; rings drawn 1.5 radii out, in colours no cloth or ball has
COLOURS = {"white": (255, 0, 255), "colour": (0, 165, 255)}
RING = 1.5
FELT_TINT = (70, 70, 70)  # what the detector takes for felt is shown dark grey
BED_LINE = (48, 48, 255)


@dataclass(frozen=True)
class Seen:
    """One frame the detector looked at (written by the camera thread as one object)."""

    frame: Any  # BGR frame (numpy)
    at: float  # its capture time, service ms
    number: int  # the camera's frame counter
    balls: tuple[tuple[float, float, str], ...]  # bed mm and kind
    felt: Any  # uint8 felt mask on the bed image (None: no view)
    felt_share: float
    bed_scale: float  # the bed image's px per mm
    calibration: Any  # the Calibration scaled to the frame's size (None: uncalibrated)
    of: Any = None  # the adapter's Calibration it was seen with (identity: changed or not)
    radius_mm: float = 0.0  # the ball's radius the detector looks for (0: the calibration's)


def see_again(seen: Seen, calibration: Any) -> Seen:
    """The same frame through a detector of a new calibration (worker thread): the page
    shows what a calibration just saved sees even when no new frame comes (a file that
    ended, a camera that stopped)."""
    from clock_service.edges.camera.detect import BallDetector

    h, w = seen.frame.shape[:2]
    detector = BallDetector(calibration, frame_size=(w, h))
    view = detector.detect(seen.frame)
    return Seen(seen.frame, seen.at, seen.number,
                tuple((d.x, d.y, d.kind) for d in view.detections), view.felt,
                view.felt_share, detector.scale, detector.calibration, calibration,
                detector.radius_mm)


@dataclass(frozen=True)
class LiveImage:
    jpeg: bytes
    number: int
    balls: int
    size: tuple[int, int]  # the frame's size (the image may be smaller)
    made: float  # time.monotonic() when made
    of: Any = None  # the calibration it was made with


def outlines(seen: Seen, points: int = OUTLINE_POINTS,
             ring: float = 1.0) -> list[list[tuple[float, float]]]:
    """Each ball's outline in frame pixels: its circle on the bed (the calibration's ball
    size, times ``ring``) projected into the frame, as ``points`` points."""
    import numpy as np

    cal = seen.calibration
    if cal is None or not seen.balls:
        return []
    to_frame = np.linalg.inv(cal.image_to_bed(1.0))  # bed mm -> frame px
    # the radius the detector looks for (learned at calibration: the ball as the bed image
    # shows it, with its shadow and the lens), else the calibration's ball size
    r = (seen.radius_mm or cal.ball_mm / 2) * ring
    angles = np.arange(points) * (2 * math.pi / points)
    out = []
    for x, y, _ in seen.balls:
        pts = np.stack([x + r * np.cos(angles), y + r * np.sin(angles), np.ones(points)])
        img = to_frame @ pts
        out.append([(float(u / w), float(v / w)) for u, v, w in img.T])
    return out


def render_seen(seen: Seen, *, felt: bool, width: int = WIDTH, quality: int = QUALITY) -> bytes:
    """The JPEG the page shows (worker thread: numpy and OpenCV release the GIL)."""
    import cv2
    import numpy as np

    frame = seen.frame
    h, w = frame.shape[:2]
    k = min(1.0, width / w)
    size = (max(1, round(w * k)), max(1, round(h * k)))
    img = cv2.resize(frame, size, interpolation=cv2.INTER_AREA) if k < 1 else frame.copy()
    cal = seen.calibration
    if felt and cal is not None and seen.felt is not None:
        # the bed image's felt mask, back into the frame (shrunk to the image's size)
        to_img = np.diag([k, k, 1.0]) @ np.linalg.inv(cal.image_to_bed(seen.bed_scale))
        mask = cv2.warpPerspective(seen.felt, to_img, size, flags=cv2.INTER_NEAREST)
        tint = np.empty_like(img)
        tint[:] = FELT_TINT
        washed = cv2.addWeighted(img, 0.25, tint, 0.75, 0)
        np.copyto(img, washed, where=(mask > 0)[..., None])
    if cal is not None:
        bed = np.array(cal.ordered(), np.float32) * k
        cv2.polylines(img, [np.round(bed * 4).astype(np.int32)], True, BED_LINE, 1,
                      cv2.LINE_AA, 2)
        thick = 2 if size[0] >= 480 else 1
        for (_, _, kind), line in zip(seen.balls, outlines(seen, ring=RING), strict=True):
            pts = np.round(np.array(line) * k * 4).astype(np.int32)
            cv2.polylines(img, [pts], True, COLOURS.get(kind, (0, 255, 0)), thick,
                          cv2.LINE_AA, 2)
    ok, data = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return data.tobytes()


class LiveView:
    """The images for the calibration page, made off the loop and shared by all clients
    (loop thread)."""

    def __init__(self, max_rate: float = MAX_RATE, max_waiting: int = MAX_WAITING) -> None:
        self.min_interval = 1.0 / max_rate
        self.max_waiting = max_waiting
        self._made: dict[bool, LiveImage] = {}
        self._lock = asyncio.Lock()
        self.waiting = 0
        self.encodes = 0
        self.refused = 0

    def busy(self) -> bool:
        return self.waiting >= self.max_waiting

    async def image(self, seen: Seen, calibration: Any, *, felt: bool) -> LiveImage:
        """The image of ``seen`` as the detector of ``calibration`` (the adapter's now)
        sees it, or the last one made when that is of the same frame and calibration or
        younger than the rate allows. Check ``busy()`` first."""
        self.waiting += 1
        try:
            async with self._lock:
                last = self._made.get(felt)
                now = time.monotonic()
                if last is not None and (
                        (last.number == seen.number and last.of is calibration)
                        or now - last.made < self.min_interval):
                    return last

                def make() -> tuple[bytes, int]:
                    view = seen if seen.of is calibration or calibration is None \
                        else see_again(seen, calibration)
                    return render_seen(view, felt=felt), len(view.balls)

                jpeg, balls = await asyncio.to_thread(make)
                self.encodes += 1
                h, w = seen.frame.shape[:2]
                made = LiveImage(jpeg, seen.number, balls, (w, h), time.monotonic(),
                                 calibration)
                self._made[felt] = made
                return made
        finally:
            self.waiting -= 1
