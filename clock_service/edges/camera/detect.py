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
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from clock_service.edges.camera.core import Detection
from clock_service.edges.camera.geometry import BED_PX_PER_MM, TABLE_MM, Calibration, pockets_mm
from clock_service.edges.camera.looks import builtin_kind

__all__ = ["BallDetector", "BedView", "Geometry", "find_table_corners"]

# A ball's centre lies this deep inside the foreground (in radii): a whole ball about 1.0;
# less when a cue crosses it or the pocket mask cuts it, more with its shadow or a ball
# touching it.
DEPTH = (0.6, 1.5)
# On a ridge (a cue, an arm) the depth 3/4 radius away on both sides drops by less than this.
RIDGE_DROP = 0.4
FELT_HUE_MIN = 4.0  # the felt's tolerances (HSV, 8 bits) are never tighter than these
FELT_SAT_MIN = 20.0
FELT_GREY = 90.0  # a felt less saturated than this (of 255) is told without its hue
DEPTH_STEPS = 16.0  # depth maxima are compared in 1/16 pixel steps
FELT_EVERY = 10  # frames between two measurements of the felt's hue and saturation
# A ball's lightness is told against the felt around it: the felt's mean over blocks of
# this size (mm), where a block is at least this share felt (else the whole bed's felt)
FELT_BLOCK_MM = 220.0
FELT_BLOCK_SHARE = 0.25
CHROMA_WEIGHT = 0.35  # colour counts less than value at a ball's edge (a codec smears it)
DISK = 1.25  # a ball's centre is the mean over this many radii around it (soft edge, shadow)
# A ball's centre is at least a radius from the cushion; with slack for the corners
# clicked a little off and for a tilted camera, which shows a ball frozen on the cushion
# up to a third of a radius nearer the edge (its top is nearer the camera), anything
# closer (a hand or a sleeve coming over the rail, cut by the bed's edge) is not a ball.
EDGE = 0.45
SHOWN = 0.7  # a ball's core is shown this much at least (the rest past the bed's edge)
# Balls that touch (``_clusters``): a blob of more than this many balls' area is looked at
# ball by ball; a centre's disk is this much foreground at least; two centres are this many
# radii apart at least (touching balls: 2); the disks explain this share of the blob.
CLUSTER_AREA = 1.6
CLUSTER_FILL = 0.8
CLUSTER_GAP = 1.6
CLUSTER_EXPLAINED = 0.8
# ... and its shading fits a sphere's this well at least (normalised correlation): a flat
# sleeve or a hand over the felt is not a pile of balls
CLUSTER_SHADED = 0.3


@dataclass
class Geometry:
    """The shape part of one frame: the bed, its masks and the ball-sized maxima."""

    bed: np.ndarray
    hsv: np.ndarray
    felt: np.ndarray
    fg: np.ndarray
    dist: np.ndarray
    xs: np.ndarray
    ys: np.ndarray
    depth: np.ndarray
    share: float
    candidates: int


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

    def __init__(self, calibration: Calibration, *, frame_size: tuple[int, int] | None = None,
                 px_per_mm: float | None = None) -> None:
        if frame_size is not None and tuple(frame_size) != tuple(calibration.frame_size):
            calibration = calibration.scaled(frame_size)
        self.calibration = calibration
        span = max(math.dist(a, b) for a, b in zip(calibration.ordered(),
                                                   calibration.ordered()[1:], strict=False))
        if px_per_mm is None:
            # BED_PX_PER_MM, or fewer pixels when the camera shows the table smaller (the
            # bed image never has more pixels than the frame shows it with)
            px_per_mm = min(BED_PX_PER_MM, span / calibration.table_mm[0])
        self.scale = px_per_mm
        # the camera's own pixels per mm of the table (the bed's long side in the frame):
        # half of one is the least a ball can be seen to move (issue 37 point 4)
        self.frame_px_per_mm = span / calibration.table_mm[0]
        self.bed_size = (round(calibration.table_mm[0] * px_per_mm),
                         round(calibration.table_mm[1] * px_per_mm))
        self.appearance = calibration.appearance
        # a ball's radius on the bed image: learned at calibration (a tilted camera or a wide
        # lens shows it larger than the ball), else the ball's own
        self.radius_mm = (self.appearance.ball_radius_mm if self.appearance is not None
                          else calibration.ball_mm / 2)
        self.r_px = self.radius_mm * self.scale
        self.matrix = calibration.image_to_bed(px_per_mm)
        self._maps: tuple[Any, Any, tuple[int, ...]] | None = None
        self._felt_ref = (np.zeros(3, np.float32), np.ones(3, np.float32))
        # A frame that shows the bed at twice the bed image's size or more is first shrunk
        # by a whole factor, averaging blocks of pixels (less noise, no aliasing, and
        # OpenCV's fastest resize); the warp then samples about one pixel per bed pixel.
        self._shrink = 1
        while span / (2 * self._shrink) >= self.bed_size[0]:
            self._shrink *= 2  # powers of two: OpenCV's area resize is fastest for them
        if self._shrink > 1:
            n = float(self._shrink)  # a shrunk pixel's centre, in the frame's pixels
            self.matrix = self.matrix @ np.array([[n, 0, (n - 1) / 2], [0, n, (n - 1) / 2],
                                                  [0, 0, 1.0]])
        self.interpolation = cv2.INTER_LINEAR
        w, h = self.bed_size
        # Pocket mouths are never felt and never a resting ball's place: left out.
        self.valid = np.full((h, w), 255, np.uint8)
        for x, y in pockets_mm(calibration.table_mm):
            cv2.circle(self.valid, (round(x * self.scale), round(y * self.scale)),
                       round(52 * self.scale), 0, -1)
        self._kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (3, 3))
        peak = 2 * round(self.r_px * 0.6) + 1  # touching balls (2 r apart) keep both
        self._peak_kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (peak, peak))
        step = 12
        self._sample = (slice(step // 2, None, step), slice(step // 2, None, step))
        angles = np.arange(8) * (np.pi / 4)
        reach = 0.75 * self.r_px
        # every direction as far as the axes reach (whole pixels), the diagonals sampled
        # between pixels (_on_ridge): rounded to whole pixels, a small bed image's
        # diagonals fell short (0.6 radius at 4.7 px, against 0.85 on the axes), and a
        # lone ball drawn out a little by its shadow or a clipped white's bloom read as a
        # ridge (issue 37, the pooltool renders under warm lamps)
        reach = float(max(1, math.ceil(reach)))
        self._ridge_offsets = (np.cos(angles) * reach, np.sin(angles) * reach)
        half = int(math.ceil(DISK * self.r_px)) + 1
        yy, xx = np.mgrid[-half:half + 1, -half:half + 1]
        self._patch = (yy, xx)
        self._core = (yy * yy + xx * xx) <= (0.95 * self.r_px) ** 2
        # a disk of the ball's radius (for how much of it is foreground) and a shaded
        # sphere of that radius, zero-mean (for where a ball's shading fits: _clusters)
        size = 2 * int(math.ceil(self.r_px)) + 1
        yy, xx = np.mgrid[:size, :size] - size // 2
        rho = np.hypot(xx, yy) / max(self.r_px, 1.0)
        inner = (rho <= 1.0).astype(np.float32)
        self._disk_kernels = (inner / inner.sum(),
                              np.where(rho <= 1.0, 0.55 + 0.45 * np.sqrt(np.clip(1 - rho * rho,
                                                                                 0, 1)),
                                       0.45).astype(np.float32))
        self._felt_lightness = 0.0
        self._felt_mask: np.ndarray | None = None  # the felt of the frame being looked at
        if self.appearance is not None:  # the learned felt, until this frame's is measured
            self._felt_ref = (np.array(self.appearance.felt_hsv, np.float32),
                              np.array(self.appearance.felt_tol, np.float32))
            self._felt_lightness = self.appearance.felt_lightness
        self._frames = 0
        # how deep a ball's centre lies in the foreground, in radii: learned at calibration
        # too (a wide lens shows the middle of the table magnified against its corners)
        self.depth_band = DEPTH if self.appearance is None else \
            (DEPTH[0], max(DEPTH[1], self.appearance.depth_max))

    def bed(self, frame: np.ndarray) -> np.ndarray:
        """The frame warped onto the bed image (BGR)."""
        shrink = self._shrink
        while shrink > 1:
            # halved again and again: OpenCV's area resize has a vector path for halving
            # only; a quarter in one step cost 3.2 times two halvings (1080p: the smaller
            # bed's look took more instructions than the full one's, issue 37 point 5)
            h, w = frame.shape[:2]
            frame = cv2.resize(frame, (w // 2, h // 2), interpolation=cv2.INTER_AREA)
            shrink //= 2
        if self._maps is None or self._maps[2] != frame.shape[:2]:
            self._maps = self._remap_tables(frame.shape[:2])
        return cv2.remap(frame, self._maps[0], self._maps[1], self.interpolation)

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

    def geometry(self, frame: np.ndarray) -> Geometry:
        """The shape part of ``detect``: the bed, its felt, the foreground and the ball-sized
        maxima of its depth (one per ball, before colours are looked at)."""
        bed = self.bed(frame)
        hsv = cv2.cvtColor(bed, cv2.COLOR_BGR2HSV)  # 3x cheaper than Lab, shade-proof hue
        felt = self._felt(hsv)
        fg = cv2.bitwise_and(cv2.bitwise_not(felt), self.valid)
        fg = cv2.morphologyEx(fg, cv2.MORPH_OPEN, self._kernel)
        dist = cv2.distanceTransform(fg, cv2.DIST_L2, 3)
        r = self.r_px
        # local maxima of ball depth (OpenCV all the way: no full-size numpy temporaries)
        depth8 = cv2.convertScaleAbs(dist, alpha=DEPTH_STEPS)  # 1/16 px steps, uint8
        peaks = cv2.bitwise_and(cv2.compare(depth8, cv2.dilate(depth8, self._peak_kernel),
                                            cv2.CMP_GE),
                                cv2.inRange(dist, self.depth_band[0] * r,
                                            self.depth_band[1] * r))
        found = cv2.findNonZero(peaks)
        share = float(np.count_nonzero(felt[self._sample])) / felt[self._sample].size
        empty = np.zeros(0, np.intp)
        if found is None:
            return Geometry(bed, hsv, felt, fg, dist, empty, empty, np.zeros(0, np.float32),
                            share, 0)
        found = found.reshape(-1, 2)
        xs, ys = found[:, 0].astype(np.intp), found[:, 1].astype(np.intp)
        depth = dist[ys, xs]
        keep = ~self._on_ridge(dist, xs, ys, depth)
        xs, ys, depth = xs[keep], ys[keep], depth[keep]
        # strongest first; a weaker maximum within 1.2 radii of a stronger one is the same ball
        taken: list[int] = []
        for i in np.argsort(-depth, kind="stable"):
            x, y = int(xs[i]), int(ys[i])
            if all((x - int(xs[j])) ** 2 + (y - int(ys[j])) ** 2 >= (1.2 * r) ** 2
                   for j in taken):
                taken.append(int(i))
        chosen = np.array(taken, np.intp)
        xs, ys, depth = self._clusters(fg, hsv, xs[chosen], ys[chosen], depth[chosen])
        return Geometry(bed, hsv, felt, fg, dist, xs, ys, depth, share, len(xs))

    def _clusters(self, fg: np.ndarray, hsv: np.ndarray, xs: np.ndarray, ys: np.ndarray,
                  depth: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Balls that touch, counted and placed by their known size (issue 37 point 1).

        The depth's maxima find a lone ball and each ball of a chain, but not the balls of
        a triangle or a rack: their blob is deep all over, its maxima fall between balls
        or out of the depth band. So a blob larger than ``CLUSTER_AREA`` balls is looked at
        again: ball centres are where a shaded sphere of the calibrated radius fits the
        blob's lightness best (normalised correlation: a sphere's own pixels only, so its
        neighbours do not matter; ``CLUSTER_SHADED`` at least), each at least
        ``CLUSTER_GAP`` radii from the next and with its disk ``CLUSTER_FILL`` foreground.
        Taken only when those disks explain the blob (``CLUSTER_EXPLAINED`` of it): an arm,
        a sleeve, a cue across balls is not a pile of ball-sized disks, and keeps the
        depth's maxima (the ridge test)."""
        r = self.r_px
        disk = math.pi * r * r
        count, labels, stats, _ = cv2.connectedComponentsWithStats(fg, connectivity=8)
        big = [i for i in range(1, count) if stats[i, cv2.CC_STAT_AREA] >= CLUSTER_AREA * disk]
        if not big:
            return xs, ys, depth
        value = hsv[..., 2]
        h, w = fg.shape
        pad = int(math.ceil(1.5 * r)) + 1
        keep = np.ones(len(xs), bool)
        new_x: list[int] = []
        new_y: list[int] = []
        for i in big:
            x0, y0 = int(stats[i, cv2.CC_STAT_LEFT]), int(stats[i, cv2.CC_STAT_TOP])
            x1 = x0 + int(stats[i, cv2.CC_STAT_WIDTH])
            y1 = y0 + int(stats[i, cv2.CC_STAT_HEIGHT])
            x0, y0, x1, y1 = max(0, x0 - pad), max(0, y0 - pad), min(w, x1 + pad), min(h, y1 + pad)
            mine = (labels[y0:y1, x0:x1] == i).astype(np.float32)
            found = self._fit_disks(mine, value[y0:y1, x0:x1])
            if found is None:
                continue
            inside = (xs >= x0) & (xs < x1) & (ys >= y0) & (ys < y1)
            inside[inside] = labels[ys[inside], xs[inside]] == i
            if len(found) < int(inside.sum()):
                continue  # the depth found more: keep those
            keep &= ~inside
            for fx, fy in found:
                new_x.append(fx + x0)
                new_y.append(fy + y0)
        if not new_x:
            return xs, ys, depth
        return (np.concatenate([xs[keep], np.array(new_x, np.intp)]),
                np.concatenate([ys[keep], np.array(new_y, np.intp)]),
                np.concatenate([depth[keep], np.full(len(new_x), r, np.float32)]))

    def _fit_disks(self, mine: np.ndarray, value: np.ndarray) -> list[tuple[int, int]] | None:
        """The centres (ROI pixels) of the balls that make up one blob (``mine``: 1.0 on
        its pixels), or None when ball-sized disks do not explain it."""
        r = self.r_px
        kernel, template = self._disk_kernels
        half = kernel.shape[0] // 2
        if mine.shape[0] <= kernel.shape[0] or mine.shape[1] <= kernel.shape[1]:
            return None
        fill = cv2.filter2D(mine, -1, kernel, borderType=cv2.BORDER_CONSTANT)
        fit = np.full(mine.shape, -1.0, np.float32)
        fit[half:half + mine.shape[0] - 2 * half, half:half + mine.shape[1] - 2 * half] = \
            cv2.matchTemplate(value.astype(np.float32), template, cv2.TM_CCOEFF_NORMED)
        # a ball's centre: its disk nearly all of the blob, and its shading's best fit near
        score = np.where((fill >= CLUSTER_FILL) & (mine > 0) & (fit >= CLUSTER_SHADED),
                         fit + fill, -10.0).astype(np.float32)
        peaks = (score >= cv2.dilate(score, self._peak_kernel)) & (score > 0)
        ys, xs = np.nonzero(peaks)
        order = np.argsort(-score[ys, xs], kind="stable")
        gap2 = (CLUSTER_GAP * r) ** 2
        chosen: list[tuple[int, int]] = []
        for j in order:
            x, y = int(xs[j]), int(ys[j])
            if all((x - cx) ** 2 + (y - cy) ** 2 >= gap2 for cx, cy in chosen):
                chosen.append((x, y))
        if len(chosen) < 2:
            return None
        covered = np.zeros(mine.shape, np.uint8)
        for x, y in chosen:
            cv2.circle(covered, (x, y), int(round(DISK * r)), 1, -1)  # its soft edge too
        explained = float((covered * mine).sum()) / max(1.0, float(mine.sum()))
        return chosen if explained >= CLUSTER_EXPLAINED else None

    def detect(self, frame: np.ndarray) -> BedView:
        g = self.geometry(frame)
        self._felt_mask = g.felt
        if len(g.xs) == 0:
            return BedView([], g.felt, g.dist, g.share, g.candidates, self.scale)
        detections = self._refine(g.fg, g.hsv, g.bed, g.xs, g.ys, g.depth)
        return BedView(detections, g.felt, g.dist, g.share, g.candidates, self.scale)

    def felt_model(self) -> tuple[np.ndarray, np.ndarray]:
        """The felt's (median hue, saturation, value) and tolerances as last measured."""
        return self._felt_ref[0].copy(), self._felt_ref[1].copy()

    def felt_lightness(self) -> float:
        return self._felt_lightness

    def inner_lab(self, bed: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        """(n, 3) mean 8-bit Lab (a, b centred on 0) of each disk of 0.6 radius around the
        bed positions ``xs``, ``ys`` (pixels)."""
        r = self.r_px
        yy, xx = self._patch
        h, w = bed.shape[:2]
        cx, cy = np.round(xs).astype(np.intp), np.round(ys).astype(np.intp)
        py = np.clip(cy[:, None, None] + yy[None], 0, h - 1)
        px = np.clip(cx[:, None, None] + xx[None], 0, w - 1)
        inner = ((xx * xx + yy * yy) <= (0.6 * r) ** 2)[None]
        count = max(1, int(inner.sum()))
        mean = (bed[py, px] * inner[..., None]).sum(axis=(1, 2)) / count
        lab = cv2.cvtColor(mean.clip(0, 255).astype(np.uint8)[:, None], cv2.COLOR_BGR2Lab)
        return lab[:, 0].astype(np.float64) - (0.0, 128.0, 128.0)

    def _on_ridge(self, dist: np.ndarray, xs: np.ndarray, ys: np.ndarray, depth: np.ndarray
                  ) -> np.ndarray:
        """True where a maximum lies on a ridge, not on a ball: three quarters of a radius
        away on both sides along some direction the foreground is (almost) as deep as at the
        maximum. That is the middle line of a cue, an arm or a sleeve, whose width is about
        a ball's; a ball's depth falls off in every direction (a ball touching another, or
        an arm on one side, still falls off on the other side; a blurred ball, drawn out
        along its path by at most two thirds of a radius, too)."""
        h, w = dist.shape
        dx, dy = self._ridge_offsets
        px = np.clip(xs[:, None] + dx[None, :], 0, w - 1.001)
        py = np.clip(ys[:, None] + dy[None, :], 0, h - 1.001)
        x0, y0 = px.astype(np.intp), py.astype(np.intp)
        fx, fy = px - x0, py - y0
        # (n, 8): the depth in 8 directions, opposite ones 4 apart, bilinear between pixels
        around = ((dist[y0, x0] * (1 - fx) + dist[y0, x0 + 1] * fx) * (1 - fy)
                  + (dist[y0 + 1, x0] * (1 - fx) + dist[y0 + 1, x0 + 1] * fx) * fy)
        both = np.minimum(around[:, :4], around[:, 4:])
        return np.asarray(np.any(both >= (depth - RIDGE_DROP * self.r_px)[:, None], axis=1))

    def _felt(self, hsv: np.ndarray) -> np.ndarray:
        """The felt mask: the felt's median hue and saturation give or take four spreads
        (both unchanged in a shadow or under flicker), and a value from half the felt's (a
        ball's shadow) to a little above it. Hue and saturation are measured again every
        ``FELT_EVERY`` frames (the hall's light changes slowly), the value every frame (the
        mains flicker)."""
        sample = hsv[self._sample].reshape(-1, 3)
        if self._frames % FELT_EVERY == 0:
            self._felt_model(sample.astype(np.float32))
        self._frames += 1
        h_med, s_med = float(self._felt_ref[0][0]), float(self._felt_ref[0][1])
        th, ts, tv = (float(v) for v in self._felt_ref[1])
        v_med = float(np.median(sample[:, 2]))
        self._felt_ref[0][2] = v_med
        lo_s, hi_s = max(0.0, s_med - ts), min(255.0, s_med + ts)
        lo_v, hi_v = 0.5 * v_med, min(255.0, v_med + tv)
        lo_h, hi_h = h_med - th, h_med + th
        if th >= 90.0:
            lo_h, hi_h = 0.0, 179.0
        mask = cv2.inRange(hsv, (max(0.0, lo_h), lo_s, lo_v), (min(179.0, hi_h), hi_s, hi_v))
        if lo_h < 0:  # the felt's hues wrap round red
            mask = cv2.bitwise_or(mask, cv2.inRange(hsv, (180.0 + lo_h, lo_s, lo_v),
                                                    (179.0, hi_s, hi_v)))
        elif hi_h > 179:
            mask = cv2.bitwise_or(mask, cv2.inRange(hsv, (0.0, lo_s, lo_v),
                                                    (hi_h - 180.0, hi_s, hi_v)))
        return mask

    def _felt_model(self, sample: np.ndarray) -> None:
        first = float(np.median(sample[:, 0]))
        turn = (sample[:, 0] - first + 90.0) % 180.0 - 90.0  # hue is a circle of 180
        shift = float(np.median(turn))
        h_med = (first + shift) % 180.0
        mad_h = float(np.median(np.abs(turn - shift))) * 1.4826
        s_med, v_med = float(np.median(sample[:, 1])), float(np.median(sample[:, 2]))
        mad_s = float(np.median(np.abs(sample[:, 1] - s_med))) * 1.4826
        mad_v = float(np.median(np.abs(sample[:, 2] - v_med))) * 1.4826
        # a greyish felt's hue is mostly noise: not a test then (saturation and value are)
        th = 90.0 if s_med < FELT_GREY else min(60.0, max(FELT_HUE_MIN, 4.0 * mad_h))
        ts = max(FELT_SAT_MIN, 4.0 * mad_s)
        tv = max(22.0, 4.0 * mad_v)
        self._felt_ref = (np.array([h_med, s_med, v_med], np.float32),
                          np.array([th, ts, tv], np.float32))
        felt = np.array([[[h_med, s_med, v_med]]]).clip(0, 255).astype(np.uint8)
        lab = cv2.cvtColor(cv2.cvtColor(felt, cv2.COLOR_HSV2BGR), cv2.COLOR_BGR2Lab)
        self._felt_lightness = float(lab[0, 0, 0])

    def _refine(self, fg: np.ndarray, hsv: np.ndarray, bed: np.ndarray, xs: np.ndarray,
                ys: np.ndarray, depth: np.ndarray) -> list[Detection]:
        """Each candidate's centre: a weighted mean over its disk, each pixel weighted by how
        far its colour is from the felt's (a soft edge gives the sub-pixel position); its
        kind from its inner disk's colour (or not a ball at all). All candidates at once:
        one small patch per candidate, stacked; coordinates relative to its maximum."""
        r = self.r_px
        yy, xx = self._patch
        h, w = fg.shape
        py = np.clip(ys[:, None, None] + yy[None], 0, h - 1)
        px = np.clip(xs[:, None, None] + xx[None], 0, w - 1)
        # filled: a ball's core is all foreground, over the part of it the bed shows. A
        # ball frozen on a cushion seen by a tilted camera stands partly over the bed's
        # edge (its top is nearer the camera: issue 37, the pooltool renders): the part
        # over the edge is not there to be filled, but most of the core must be shown
        core = self._core[None] & (py == ys[:, None, None] + yy[None]) \
            & (px == xs[:, None, None] + xx[None])
        shown = core.sum(axis=(1, 2))
        fill = ((fg[py, px] > 0) & core).sum(axis=(1, 2)) / np.maximum(1, shown)
        keep = (fill >= 0.8) & (shown >= SHOWN * self._core.sum())
        if not keep.any():
            return []
        xs, ys, depth, fill = xs[keep], ys[keep], depth[keep], fill[keep]
        py, px = py[keep], px[keep]
        n = len(xs)
        patch = hsv[py, px].astype(np.float32)  # (n, p, p, 3)
        ref, tol = self._felt_ref
        # how unlike the felt each pixel is, in felt tolerances (a shadow is like the felt)
        hue, sat, val = patch[..., 0], patch[..., 1], patch[..., 2]
        dh = np.abs((hue - ref[0] + 90.0) % 180.0 - 90.0) * ((sat >= 0.5 * ref[1]) / tol[0])
        dv = np.where(val >= ref[2], (val - ref[2]) / tol[2],
                      (ref[2] - val) / (0.5 * ref[2] + 1.0))
        unlike = np.maximum(CHROMA_WEIGHT * np.maximum(dh, np.abs(sat - ref[1]) / tol[1]), dv)
        weight = np.clip(unlike - 0.7, 0.0, 1.0)
        gx, gy = xx.astype(np.float32)[None], yy.astype(np.float32)[None]
        cx = np.zeros(n, np.float32)  # the centre, relative to the maximum
        cy = np.zeros(n, np.float32)
        # A ball touching another: the pixels nearer the other's centre are the other's
        # (else the mean is pulled between two places from frame to frame).
        other = ox = oy = None
        if n > 1:
            gap = (xs[:, None] - xs[None]) ** 2 + (ys[:, None] - ys[None]) ** 2
            np.fill_diagonal(gap, 1 << 30)
            other = np.argmin(gap, axis=1)
            near = gap[np.arange(n), other] < (2.6 * r) ** 2
            if near.any():  # the nearest other maximum, relative to this one (far: none)
                ox = np.where(near, xs[other] - xs, 1000).astype(np.float32)
                oy = np.where(near, ys[other] - ys, 1000).astype(np.float32)
        for _ in range(3):
            ddx, ddy = gx - cx[:, None, None], gy - cy[:, None, None]
            d2 = ddx * ddx + ddy * ddy
            wd = weight * (d2 <= (DISK * r) ** 2)
            if other is not None and ox is not None and oy is not None:
                mx = gx - (ox + cx[other])[:, None, None]  # the other's centre as it stands
                my = gy - (oy + cy[other])[:, None, None]
                wd *= d2 <= mx * mx + my * my
            wsum = wd.sum(axis=(1, 2))
            ok = wsum > 0
            safe = np.where(ok, wsum, 1.0)
            cx = np.where(ok, (wd * gx).sum(axis=(1, 2)) / safe, cx)
            cy = np.where(ok, (wd * gy).sum(axis=(1, 2)) / safe, cy)
        ddx, ddy = gx - cx[:, None, None], gy - cy[:, None, None]
        inner = ddx * ddx + ddy * ddy <= (0.6 * r) ** 2
        count = inner.sum(axis=(1, 2))
        mean = (bed[py, px] * inner[..., None]).sum(axis=(1, 2)) / np.maximum(1, count)[:, None]
        lab = cv2.cvtColor(mean.clip(0, 255).astype(np.uint8)[:, None], cv2.COLOR_BGR2Lab)
        lab = lab[:, 0].astype(np.float64)
        fx, fy = xs + cx.astype(np.float64), ys + cy.astype(np.float64)
        # a ball's centre is a radius from the cushion at least; in mm of the table (the
        # bed image's last pixel is up to a pixel short of the far cushions)
        edge = EDGE * r
        tw, th = (v * self.scale for v in self.calibration.table_mm)
        inside = (fx >= edge) & (fx <= tw - edge) & (fy >= edge) & (fy <= th - edge)
        around = self._felt_lightness_near(bed, fx, fy)
        out: list[Detection] = []
        for i in range(n):
            if count[i] == 0 or not inside[i]:
                continue
            if self.appearance is not None:
                kind = self.appearance.kind_of(float(lab[i, 0]), float(lab[i, 1]) - 128,
                                               float(lab[i, 2]) - 128, float(around[i]))
            else:
                kind = self.kind_of(float(lab[i, 0]), float(lab[i, 1]) - 128,
                                    float(lab[i, 2]) - 128, float(around[i]))
            if kind is None:
                continue  # skin, a cue, a sleeve: not a ball
            confidence = min(1.0, float(fill[i])) * (
                1.0 if 0.7 * r <= depth[i] <= 1.3 * r else 0.7)
            out.append(Detection(float(fx[i]) / self.scale, float(fy[i]) / self.scale, kind,
                                 round(confidence, 3)))
        return out

    def _felt_lightness_near(self, bed: np.ndarray, xs: np.ndarray, ys: np.ndarray
                             ) -> np.ndarray:
        """The felt's Lab lightness around each of the points ``xs``, ``ys`` (bed px): the
        felt's mean colour over blocks of ``FELT_BLOCK_MM``, interpolated between the
        blocks' centres; the whole bed's felt where a block shows too little felt (an arm
        over it). Lamps light a table unevenly: a ball at a dim end of it is darker, and so
        is the felt around it (issue 37, the pooltool renders: the coloured ball at the
        far end, at lightness 89 against 160 where it was learned, was no ball; the felt
        around it, 86 against 145)."""
        felt = self._felt_mask
        if felt is None or len(xs) == 0:
            return np.full(len(xs), self._felt_lightness)
        h, w = felt.shape
        block = FELT_BLOCK_MM * self.scale
        gw, gh = max(1, round(w / block)), max(1, round(h / block))
        share = cv2.resize(felt.astype(np.float32) * (1 / 255.0), (gw, gh),
                           interpolation=cv2.INTER_AREA)
        sums = cv2.resize(cv2.bitwise_and(bed, bed, mask=felt).astype(np.float32),
                          (gw, gh), interpolation=cv2.INTER_AREA)
        mean = sums / np.maximum(share, 1e-3)[..., None]
        grid = cv2.cvtColor((mean * (1 / 255.0)).astype(np.float32)[None].reshape(gh, gw, 3),
                            cv2.COLOR_BGR2Lab)[..., 0] * (255 / 100)  # 8-bit Lab L
        grid = np.where(share >= FELT_BLOCK_SHARE, grid, self._felt_lightness)
        gx = np.clip(xs * (gw / w) - 0.5, 0, gw - 1)
        gy = np.clip(ys * (gh / h) - 0.5, 0, gh - 1)
        x0, y0 = gx.astype(np.intp), gy.astype(np.intp)
        x1, y1 = np.minimum(x0 + 1, gw - 1), np.minimum(y0 + 1, gh - 1)
        fx, fy = gx - x0, gy - y0
        return np.asarray((grid[y0, x0] * (1 - fx) + grid[y0, x1] * fx) * (1 - fy)
                          + (grid[y1, x0] * (1 - fx) + grid[y1, x1] * fx) * fy)

    @staticmethod
    def kind_of(lightness: float, a: float, b: float, felt_lightness: float) -> str | None:
        """``colour``, ``white`` or None (not a ball) by the built-in limits
        (``looks.builtin_kind``), for a calibration that learned no appearance."""
        return builtin_kind(lightness, a, b, felt_lightness)


def find_table_corners(frame: np.ndarray) -> list[tuple[float, float]] | None:
    """A first guess of the bed's four corners: the largest region of the colour found in
    the middle of the frame (the felt), as a quadrilateral whose sides are fitted to its
    outline and moved in by a cushion's width (the cushions wear the same cloth); the
    referee checks it (``--snapshot``) or corrects it on the calibration page. None when no
    plausible quadrilateral is found."""
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
    outline = max(cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)[0],
                  key=cv2.contourArea).reshape(-1, 2).astype(np.float32)
    for eps in np.linspace(0.01, 0.1, 19):
        quad = cv2.approxPolyDP(hull, eps * perimeter, True)
        if len(quad) == 4:
            pts = _sides_met(quad.reshape(4, 2).astype(np.float32), outline) / scale
            # clockwise from the top-left-most corner
            start = int(np.argmin(pts.sum(axis=1)))
            pts = np.roll(pts, -start, axis=0)
            if (pts[1][0] - pts[0][0]) * (pts[3][1] - pts[0][1]) \
                    - (pts[1][1] - pts[0][1]) * (pts[3][0] - pts[0][0]) < 0:
                pts = np.array([pts[0], pts[3], pts[2], pts[1]])
            return [(round(float(x), 1), round(float(y), 1)) for x, y in pts]
    return None


CUSHION_MM = 45.0  # a cushion's width seen from above, rail to nose


def _sides_met(quad: np.ndarray, outline: np.ndarray) -> np.ndarray:
    """The quadrilateral's corners where its sides meet: each side a line fitted to the
    outline's points along its middle 70 % (the corner pockets cut the felt's corners, so
    the outline's own corners are off), then adjacent sides intersected. The rough corner
    stays where a side has too few points or two sides do not meet."""
    lines = []
    centre = quad.mean(axis=0)
    sides = [float(np.hypot(*(quad[(i + 1) % 4] - quad[i]))) for i in range(4)]
    long_pair = 0 if sides[0] + sides[2] >= sides[1] + sides[3] else 1
    for i in range(4):
        a, b = quad[i], quad[(i + 1) % 4]
        d = b - a
        length = float(np.hypot(*d))
        if length < 1:
            return quad.astype(float)
        u = d / length
        rel = outline - a
        along = rel @ u
        across = np.abs(rel[:, 0] * u[1] - rel[:, 1] * u[0])
        keep = outline[(along > 0.15 * length) & (along < 0.85 * length)
                       & (across < max(4.0, 0.05 * length))]
        if len(keep) < 10:
            return quad.astype(float)
        vx, vy, x0, y0 = cv2.fitLine(keep, cv2.DIST_L2, 0, 0.01, 0.01).ravel()
        # the cushions wear the same cloth: the felt seen from above ends at their outer
        # edge; the bed ends at their noses, CUSHION_MM further in
        side_mm = TABLE_MM[0] if i % 2 == long_pair else TABLE_MM[1]
        inset = length * CUSHION_MM / (side_mm + 2 * CUSHION_MM)
        nx, ny = -vy, vx
        if (centre[0] - x0) * nx + (centre[1] - y0) * ny < 0:
            nx, ny = -nx, -ny
        lines.append((float(x0 + inset * nx), float(y0 + inset * ny), float(vx), float(vy)))
    out = []
    for i in range(4):
        x1, y1, dx1, dy1 = lines[i - 1]
        x2, y2, dx2, dy2 = lines[i]
        det = dx1 * (-dy2) - dy1 * (-dx2)
        if abs(det) < 1e-6:
            return quad.astype(float)
        t = ((x2 - x1) * (-dy2) - (y2 - y1) * (-dx2)) / det
        out.append((x1 + t * dx1, y1 + t * dy1))
    return np.array(out, dtype=float)
