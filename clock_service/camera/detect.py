"""Balls on the bed, from one camera frame (numpy + OpenCV; pure computation, no I/O).

1. The frame is warped onto the bed image (``geometry``): only the playing area inside the
   cushions remains, at about 5.5 mm per pixel.
2. The felt is whatever most of the bed looks like *in this frame*: the median colour (Lab)
   of the bed and its spread. Per frame, so lighting flicker, a hall's felt colour and a
   slow change of light need no setting. A pixel is felt when its chroma is close to the
   felt's and its lightness is between a shadow's and a little above the felt's.
3. Everything else (balls, cue, hands, arms) is foreground. Its distance transform tells
   shapes apart: a ball's centre is a local maximum about one ball radius from the
   nearest felt; a cue is far thinner, an arm far wider. Touching balls keep their own
   maxima. A maximum is refined to the ball's centre (mean shift on the foreground) and
   labelled white or coloured from its inner disk's chroma.
4. ``felt_fraction`` answers the tracker's question "is this spot bare felt now?": a ball
   that has left its spot shows the felt under it; a ball hidden by an arm does not.

Tunables are in millimetres of the table so they do not depend on the camera's resolution.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from clock_service.camera.core import Detection
from clock_service.camera.geometry import BED_PX_PER_MM, Calibration, pockets_mm

__all__ = ["BallDetector", "BedView", "find_table_corners"]


@dataclass
class BedView:
    """One frame on the bed: what the detector found and the masks it can still be asked
    about (``felt_fraction``)."""

    detections: list[Detection]
    felt: np.ndarray  # uint8 mask, 255 where the bed shows felt
    depth: np.ndarray  # distance (px) of each foreground pixel from the nearest felt
    felt_share: float  # share of the bed that is felt (an arm over the table lowers it)
    candidates: int  # local maxima of ball size before filtering (clutter)
    scale: float  # bed px per mm

    def felt_fraction(self, spot: tuple[float, float], radius_mm: float,
                      ignore: Iterable[tuple[float, float]] = ()) -> float:
        """How bare is the spot where a ball rested? The share of its core (half a ball's
        radius) that is felt or only thinly covered (a cue shaft, the edge of a sleeve),
        leaving out the disks of the balls in ``ignore`` (balls standing there now).

        A ball still on its spot, seen or hidden under an arm, keeps its core at least half
        a radius away from any felt: 0.0. A ball gone shows felt, or a cue over the felt:
        near 1.0. 0.0 too when nothing is left to look at."""
        s = self.scale
        cx, cy, r = spot[0] * s, spot[1] * s, radius_mm * s * 0.5
        h, w = self.felt.shape
        x0, x1 = max(0, int(cx - r)), min(w, int(cx + r) + 2)
        y0, y1 = max(0, int(cy - r)), min(h, int(cy + r) + 2)
        if x0 >= x1 or y0 >= y1:
            return 0.0
        yy, xx = np.mgrid[y0:y1, x0:x1]
        inside = (xx - cx) ** 2 + (yy - cy) ** 2 <= r * r
        rr = (radius_mm * s * 1.05) ** 2
        for ox, oy in ignore:
            inside &= (xx - ox * s) ** 2 + (yy - oy * s) ** 2 > rr
        n = int(inside.sum())
        if n < 3:
            return 0.0
        bare = (self.felt[y0:y1, x0:x1] > 0) | (self.depth[y0:y1, x0:x1] < 0.45 * radius_mm * s)
        return float(bare[inside].sum()) / n


class BallDetector:
    """Frame in, ``BedView`` out. Build once per calibration; cheap to call per frame."""

    def __init__(self, calibration: Calibration, *, frame_size: tuple[int, int] | None = None
                 ) -> None:
        if frame_size is not None and tuple(frame_size) != tuple(calibration.frame_size):
            calibration = calibration.scaled(frame_size)
        self.calibration = calibration
        self.bed_size = calibration.bed_size
        self.scale = BED_PX_PER_MM
        self.radius_mm = calibration.ball_mm / 2
        self.r_px = self.radius_mm * self.scale
        self.matrix = calibration.image_to_bed()
        self._pre: float | None = None
        self._maps: tuple[Any, Any, tuple[int, ...]] | None = None
        self._felt_ref = (np.zeros(3, np.float32), np.ones(3, np.float32))
        # Downscale big frames first (area averaging: less noise, no aliasing) when the
        # bed spans more than twice the bed image's pixels.
        span = max(math.dist(a, b) for a, b in zip(calibration.ordered(),
                                                   calibration.ordered()[1:], strict=False))
        factor = (self.bed_size[0] * 1.3) / span
        if factor < 0.55:
            self._pre = factor
            pre = np.diag([1 / factor, 1 / factor, 1.0])
            self.matrix = self.matrix @ pre
        w, h = self.bed_size
        # Pocket mouths are never felt and never a resting ball's place: left out.
        self.valid = np.full((h, w), 255, np.uint8)
        for x, y in pockets_mm(calibration.table_mm):
            cv2.circle(self.valid, (round(x * self.scale), round(y * self.scale)),
                       round(52 * self.scale), 0, -1)
        self._kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3))
        peak = 2 * round(self.r_px * 0.8) + 1
        self._peak_kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (peak, peak))
        step = 6
        self._sample = (slice(step // 2, None, step), slice(step // 2, None, step))
        yy, xx = np.mgrid[-int(self.r_px) - 2:int(self.r_px) + 3,
                          -int(self.r_px) - 2:int(self.r_px) + 3]
        self._patch = (yy, xx)

    def bed(self, frame: np.ndarray) -> np.ndarray:
        """The frame warped onto the bed image (BGR)."""
        if self._pre is not None:
            frame = cv2.resize(frame, None, fx=self._pre, fy=self._pre,
                               interpolation=cv2.INTER_AREA)
        if self._maps is None or self._maps[2] != frame.shape[:2]:
            self._maps = self._remap_tables(frame.shape[:2])
        return cv2.remap(frame, self._maps[0], self._maps[1], cv2.INTER_LINEAR)

    def _remap_tables(self, shape: tuple[int, ...]) -> tuple[Any, Any, tuple[int, ...]]:
        """The warp as fixed-point lookup tables, built once: a remap per frame costs less
        than recomputing the homography for every pixel."""
        w, h = self.bed_size
        inverse = np.linalg.inv(self.matrix)
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        pts = np.stack([xx, yy, np.ones_like(xx)], axis=-1) @ inverse.T.astype(np.float32)
        map_x = (pts[..., 0] / pts[..., 2]).astype(np.float32)
        map_y = (pts[..., 1] / pts[..., 2]).astype(np.float32)
        fixed, frac = cv2.convertMaps(map_x, map_y, cv2.CV_16SC2)
        return fixed, frac, tuple(shape)

    def detect(self, frame: np.ndarray) -> BedView:
        bed = self.bed(frame)
        lab = cv2.cvtColor(bed, cv2.COLOR_BGR2Lab)
        felt = self._felt(lab)
        fg = cv2.bitwise_and(cv2.bitwise_not(felt), self.valid)
        fg = cv2.morphologyEx(fg, cv2.MORPH_OPEN, self._kernel)
        dist = cv2.distanceTransform(fg, cv2.DIST_L2, 3)
        r = self.r_px
        peaks = (dist >= cv2.dilate(dist, self._peak_kernel)) & (dist >= 0.55 * r) \
            & (dist <= 1.5 * r)
        ys, xs = np.nonzero(peaks)
        order = np.argsort(-dist[ys, xs])
        taken: list[tuple[float, float]] = []
        detections: list[Detection] = []
        for i in order:
            x, y = float(xs[i]), float(ys[i])
            if any((x - a) ** 2 + (y - b) ** 2 < (1.2 * r) ** 2 for a, b in taken):
                continue
            taken.append((x, y))
            found = self._refine(fg, lab, x, y, float(dist[ys[i], xs[i]]))
            if found is not None:
                detections.append(found)
        share = float(np.count_nonzero(felt[self._sample])) / felt[self._sample].size
        return BedView(detections, felt, dist, share, len(taken), self.scale)

    def _felt(self, lab: np.ndarray) -> np.ndarray:
        sample = lab[self._sample].reshape(-1, 3).astype(np.float32)
        med = np.median(sample, axis=0)
        mad = np.median(np.abs(sample - med), axis=0) * 1.4826
        l_med, a_med, b_med = (float(v) for v in med)
        ta = max(7.0, 4.0 * float(mad[1]))
        tb = max(7.0, 4.0 * float(mad[2]))
        tl = max(22.0, 4.0 * float(mad[0]))
        self._felt_ref = (med.astype(np.float32), np.array([tl, ta, tb], np.float32))
        lo = (0.5 * l_med, a_med - ta, b_med - tb)
        hi = (min(255.0, l_med + tl), a_med + ta, b_med + tb)
        return cv2.inRange(lab, lo, hi)

    def _refine(self, fg: np.ndarray, lab: np.ndarray, x: float, y: float, depth: float
                ) -> Detection | None:
        """The ball's centre: a weighted mean over its disk, each pixel weighted by how far
        its colour is from the felt's (a soft edge gives the sub-pixel position); the
        ball's kind from its inner disk's chroma."""
        r = self.r_px
        yy, xx = self._patch
        h, w = fg.shape
        cx, cy = int(round(x)), int(round(y))
        py, px = yy + cy, xx + cx
        ok = (py >= 0) & (py < h) & (px >= 0) & (px < w)
        pyc, pxc = np.clip(py, 0, h - 1), np.clip(px, 0, w - 1)
        disk0 = ok & ((px - x) ** 2 + (py - y) ** 2 <= (0.95 * r) ** 2)
        fill = float((fg[pyc, pxc][disk0] > 0).sum()) / max(1, int(disk0.sum()))
        if fill < 0.8:
            return None
        patch = lab[pyc, pxc].astype(np.float32)
        ref, tol = self._felt_ref
        away = np.abs(patch - ref) / tol
        weight = np.clip(np.max(away, axis=2) - 0.7, 0.0, 1.0) * ok
        for _ in range(4):
            disk = (px - x) ** 2 + (py - y) ** 2 <= (1.25 * r) ** 2
            wsum = float(weight[disk].sum())
            if wsum <= 0:
                return None
            nx = float((weight[disk] * px[disk]).sum()) / wsum
            ny = float((weight[disk] * py[disk]).sum()) / wsum
            moved = math.hypot(nx - x, ny - y)
            x, y = nx, ny
            if moved < 0.02:
                break
        inner = ok & ((px - x) ** 2 + (py - y) ** 2 <= (0.6 * r) ** 2)
        if not inner.any():
            return None
        pix = patch[inner]
        a = float(pix[:, 1].mean()) - 128
        b = float(pix[:, 2].mean()) - 128
        chroma = math.hypot(a, b)
        kind = "white" if chroma < 16 else "colour"
        confidence = min(1.0, fill) * (1.0 if 0.7 * r <= depth <= 1.3 * r else 0.7)
        return Detection(x / self.scale, y / self.scale, kind, round(confidence, 3))

    def felt_fractions(self, view: BedView, spots: Sequence[tuple[float, float]],
                       ignore: Sequence[tuple[float, float]]) -> list[float]:
        return [view.felt_fraction(s, self.radius_mm, ignore) for s in spots]


def find_table_corners(frame: np.ndarray) -> list[tuple[float, float]] | None:
    """A first guess of the bed's four corners: the largest region of the colour found in
    the middle of the frame (the felt), as a quadrilateral. The cushions are felt too, so
    the guess may sit on their outer edge; the referee corrects it on the calibration page.
    None when no plausible quadrilateral is found."""
    h, w = frame.shape[:2]
    scale = 640.0 / w if w > 640 else 1.0
    small = cv2.resize(frame, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA) \
        if scale < 1 else frame
    lab = cv2.cvtColor(small, cv2.COLOR_BGR2Lab)
    sh, sw = lab.shape[:2]
    centre = lab[int(sh * 0.35):int(sh * 0.65), int(sw * 0.35):int(sw * 0.65)].reshape(-1, 3)
    med = np.median(centre, axis=0)
    lo = (med[0] * 0.5, med[1] - 12, med[2] - 12)
    hi = (min(255.0, med[0] * 1.5 + 10), med[1] + 12, med[2] + 12)
    mask = cv2.inRange(lab, lo, hi)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (15, 15))
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, kernel)
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, kernel)
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    if not contours:
        return None
    hull = cv2.convexHull(max(contours, key=cv2.contourArea))
    if cv2.contourArea(hull) < 0.1 * sw * sh:
        return None
    perimeter = cv2.arcLength(hull, True)
    for eps in np.linspace(0.01, 0.1, 19):
        quad = cv2.approxPolyDP(hull, eps * perimeter, True)
        if len(quad) == 4:
            pts = quad.reshape(4, 2).astype(float) / scale
            # clockwise from the top-left-most corner
            start = int(np.argmin(pts.sum(axis=1)))
            pts = np.roll(pts, -start, axis=0)
            if (pts[1][0] - pts[0][0]) * (pts[3][1] - pts[0][1]) \
                    - (pts[1][1] - pts[0][1]) * (pts[3][0] - pts[0][0]) < 0:
                pts = np.array([pts[0], pts[3], pts[2], pts[1]])
            return [(round(float(x), 1), round(float(y), 1)) for x, y in pts]
    return None
