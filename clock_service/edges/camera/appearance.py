"""What this table and its balls look like, learned once at calibration (issue 21 point 3a).

The detector's built-in colour limits were set on one renderer's balls: pure white balls
and a warm coloured one. Ivory, aged-ivory or yellowish balls, a coloured ball of another
hue, a hall's own felt, a lens that makes balls look bigger near the edges: all of it is
measured instead, from one frame of the table itself with its balls at rest and nothing
over it (the referee's calibration frame), and kept in the calibration file:

- the felt: its median hue, saturation and value on the bed, their spreads, and its Lab
  lightness;
- the balls' size on the bed image: from the table's known size and the corners (the bed
  image is at a known scale), the depth of each ball's disk in the foreground (the
  distance from its centre to the nearest felt) measured on the balls found, as a radius
  in mm on the bed (a tilted camera or a wide lens shows a ball larger than 34 mm there);
- the balls' colours (8-bit Lab of each ball's inner disk): the whites' median and spread,
  and each coloured ball's own colour.

Pure computation on one frame (numpy + OpenCV); no I/O.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from clock_service.edges.camera.looks import Appearance, AppearanceError

if TYPE_CHECKING:
    import numpy as np

    from clock_service.edges.camera.geometry import Calibration

__all__ = ["Appearance", "AppearanceError", "keep_learned", "learn_appearance"]

MIN_BALLS = 2  # fewer balls than this on the calibration frame: nothing learned
DEPTH_WIDE = (0.6, 2.5)  # the depths (radii) looked at when learning
RADIUS_MIN = 0.95  # a ball's learned radius, at least this share of its own
WHITE_PALE = 18.0  # a ball this pale (Lab chroma) among the whites is one of them


def learn_appearance(calibration: Calibration, frame: np.ndarray) -> Calibration:
    """``calibration`` with the appearance of the table in ``frame`` (the balls at rest,
    nothing over the bed). Raises ``AppearanceError`` with the reason when the frame shows
    too few balls."""
    import numpy as np

    from clock_service.edges.camera.detect import BallDetector
    from clock_service.edges.camera.geometry import pockets_mm

    size = (int(frame.shape[1]), int(frame.shape[0]))
    base = replace(calibration, appearance=None)
    detector = BallDetector(base, frame_size=size)
    detector.depth_band = (DEPTH_WIDE[0], DEPTH_WIDE[1])  # look wider than it will
    geo = detector.geometry(frame)
    felt_hsv, felt_tol = detector.felt_model()
    felt_l = detector.felt_lightness()
    if len(geo.xs) < MIN_BALLS:
        raise AppearanceError(f"found {len(geo.xs)} ball{'s' if len(geo.xs) != 1 else ''} "
                              "on the calibration frame; put the balls on the table apart "
                              "from each other, clear it of hands and cues, and calibrate "
                              "again")
    labs = detector.inner_lab(geo.bed, geo.xs.astype(float), geo.ys.astype(float))
    chroma = np.hypot(labs[:, 1], labs[:, 2])
    felt_ab = _lab_of_hsv(felt_hsv)[1:]
    # a ball is unlike the felt, and not a dark grey hole (a pocket the lens moved off its
    # place, a shadow): those are left out, as is anything within a pocket's reach
    unlike = np.hypot(labs[:, 0] - felt_l, np.hypot(labs[:, 1] - felt_ab[0],
                                                    labs[:, 2] - felt_ab[1]))
    hole = (labs[:, 0] < 0.7 * felt_l) & (chroma < 20)
    s = detector.scale
    by_pocket = np.zeros(len(labs), bool)
    for px, py in pockets_mm(calibration.table_mm):
        by_pocket |= np.hypot(geo.xs / s - px, geo.ys / s - py) < 150
    keep = (unlike > 25) & ~hole & ~by_pocket
    labs = labs[keep]
    chroma = chroma[keep]
    if len(labs) < MIN_BALLS:
        raise AppearanceError(f"found {len(labs)} ball{'s' if len(labs) != 1 else ''} on the "
                              "calibration frame; put the balls on the table apart from each "
                              "other, clear it of hands and cues, and calibrate again")
    # the whites: the lightest group; their (a, b) near the median (a, b) of the light ones
    lightest = labs[labs[:, 0] >= np.percentile(labs[:, 0], 40)]
    centre = np.median(lightest[:, 1:], axis=0)
    near = np.hypot(labs[:, 1] - centre[0], labs[:, 2] - centre[1]) <= 12
    # ... and, when they are the many, every ball as pale as they are or paler: under warm
    # lamps a white right under a lamp clips to pure white while one at the table's end
    # looks brownish ivory (issue 37, the pooltool renders: whites learned as "coloured"
    # balls, and then not counted); the coloured ball is far more saturated than that
    if near.sum() >= max(1, len(labs) // 3):
        pale = chroma <= max(WHITE_PALE, float(np.max(chroma[near])) + 6.0)
        near = near | (pale & (labs[:, 0] >= felt_l + 20))
    white: tuple[float, float, float] | None = None
    spread = 0.0
    if near.sum() >= max(1, len(labs) // 3):
        w = labs[near]
        white = (float(np.median(w[:, 0])), float(np.median(w[:, 1])),
                 float(np.median(w[:, 2])))
        gaps = np.hypot(w[:, 1] - white[1], w[:, 2] - white[2])
        # the spread covers every white learned, with the slack the median gets (kind_of
        # takes 3 spreads and 5): covered exactly, the palest white (a clipped one under a
        # warm lamp, 29 from the whites' median) was a white on one frame and not the next
        spread = max(float(np.median(gaps)) * 1.4826, float(np.max(gaps)) / 3.0)
    colours = tuple((float(c[0]), float(c[1]), float(c[2])) for c in labs[~near])
    # the balls' size on the bed: the area of each lone ball's body (its pixels unlike the
    # felt and not darker than it: its shadow is left out) as a disk's
    radius_px = _body_radius(detector, geo, felt_l, felt_ab, keep)
    # never under the ball's own radius (less a little for the measure's error): seen from
    # above, a ball's outline on the bed is at least its size (its top is nearer the
    # camera), and a darker limb or a soft edge that the measure leaves out makes a ball
    # look smaller than it is: a radius too small splits nothing and finds a rack as two
    # balls (issue 37 point 1)
    nominal = calibration.ball_mm / 2
    radius_mm = nominal if radius_px is None else \
        min(max(radius_px / detector.scale, RADIUS_MIN * nominal), 1.4 * nominal)
    # the deepest ball seen (its own radius learned), with some room: the band the
    # detector will look in (never narrower than its built-in 1.5)
    ratio = geo.depth[keep] / max(1e-6, radius_mm * detector.scale)
    depth_max = float(min(DEPTH_WIDE[1], max(1.5, 1.15 * float(np.max(ratio)))))
    appearance = Appearance(
        (float(felt_hsv[0]), float(felt_hsv[1]), float(felt_hsv[2])),
        (float(felt_tol[0]), float(felt_tol[1]), float(felt_tol[2])), float(felt_l),
        radius_mm, white, spread, colours, int(len(labs)), depth_max)
    return replace(calibration, appearance=appearance)


def _lab_of_hsv(hsv: Any) -> Any:
    import cv2
    import numpy as np

    pixel = np.array([[hsv]], np.float32).clip(0, 255).astype(np.uint8)
    lab = cv2.cvtColor(cv2.cvtColor(pixel, cv2.COLOR_HSV2BGR), cv2.COLOR_BGR2Lab)
    return lab[0, 0].astype(float) - (0.0, 128.0, 128.0)


def _body_radius(detector: Any, geo: Any, felt_l: float, felt_ab: Any, keep: Any
                 ) -> float | None:
    """The median radius (bed px) of the lone balls' bodies, None when no ball is alone."""
    import cv2
    import numpy as np

    lab = cv2.cvtColor(geo.bed, cv2.COLOR_BGR2Lab).astype(np.float32) - (0.0, 128.0, 128.0)
    unlike = np.hypot(lab[..., 0] - felt_l, np.hypot(lab[..., 1] - felt_ab[0],
                                                     lab[..., 2] - felt_ab[1]))
    body = (unlike > 30) & (lab[..., 0] >= 0.9 * felt_l)
    xs, ys = geo.xs[keep], geo.ys[keep]
    r = detector.r_px
    reach = int(math.ceil(1.6 * r))
    h, w = body.shape
    radii = []
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        others = np.hypot(xs - x, ys - y)
        others[i] = np.inf
        if others.min() < 3.5 * r or not (reach <= x < w - reach and reach <= y < h - reach):
            continue
        patch = body[y - reach:y + reach + 1, x - reach:x + reach + 1]
        # less half a pixel: the disk's soft (antialiased, compressed) edge counts whole
        radii.append(math.sqrt(float(patch.sum()) / math.pi) - 0.5)
    return float(np.median(radii)) if radii else None



def keep_learned(calibration: Calibration, previous: Calibration | None) -> Calibration:
    """``calibration`` (corners saved without learning: the frame could not be learned from,
    or learning was not asked for) with the look learned before, when there was one (issue
    37 point 3: a save of the corners alone replaced a learned look, and strikes were missed
    with the built-in colours). The look is the table's and its balls', not the corners':
    it holds for new corners of the same table."""
    if calibration.appearance is not None or previous is None or previous.appearance is None:
        return calibration
    return replace(calibration, appearance=previous.appearance)
