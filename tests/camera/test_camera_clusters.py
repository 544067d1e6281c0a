"""Balls that touch (issue 37 point 1): each ball of a pair, a triple, a whole rack and a
ball frozen on a cushion is found and placed by its known size, at 480p, 720p and 1080p,
table-driven on small drawn frames. The old detector counted blobs of depth maxima: a
triangle of whites or a rack came out as fewer balls (a rack of 15 as 9-12), and the
calibration's count with it ("6 balls seen where the calibration showed 8")."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from clock_service.edges.camera.appearance import learn_appearance
from clock_service.edges.camera.detect import BallDetector
from clock_service.edges.camera.geometry import TABLE_MM, Calibration

W, H = TABLE_MM
R = 34.0
FELT = (40, 115, 30)
WHITE = (212, 222, 228)
IVORY = (150, 200, 222)
RED = (40, 40, 190)
WOOD = (40, 70, 110)
RAIL = 100.0  # mm of wooden rail shown round the cushions
OUT = RAIL + 45.0  # the bed's edge from the frame's (rail and cushion)
# frame pixels per mm for a camera that shows the bed across the frame's width
SCALES = {"480p": 640 / (W + 290), "720p": 1280 / (W + 290), "1080p": 1920 / (W + 290)}


def frame(scale: float, balls: list[tuple[float, float, tuple[int, int, int]]],
          seed: int = 0) -> np.ndarray:
    """The bed alone, ``scale`` px per mm, balls drawn as a renderer draws them: a shadow,
    a darker limb, a highlight towards the lamp; sensor noise over all."""
    rng = np.random.default_rng(seed)
    img = np.zeros((round((H + 2 * OUT) * scale), round((W + 2 * OUT) * scale), 3), np.uint8)
    img[:] = WOOD
    c, r = round(RAIL * scale), round(OUT * scale)
    img[c:img.shape[0] - c, c:img.shape[1] - c] = tuple(int(v * 0.85) for v in FELT)
    img[r:img.shape[0] - r, r:img.shape[1] - r] = FELT  # the cushions wear the same cloth

    def p(x: float, y: float) -> tuple[int, int]:
        return (round((x + OUT) * scale * 16), round((y + OUT) * scale * 16))

    shadow = tuple(int(c * 0.72) for c in FELT)
    for x, y, _ in balls:
        cv2.circle(img, p(x + 0.22 * R, y + 0.28 * R), round(R * 1.02 * scale * 16), shadow,
                   -1, cv2.LINE_AA, 4)
    for x, y, colour in balls:
        cv2.circle(img, p(x, y), round(R * scale * 16), tuple(int(c * 0.78) for c in colour),
                   -1, cv2.LINE_AA, 4)
        cv2.circle(img, p(x - 0.08 * R, y - 0.08 * R), round(0.8 * R * scale * 16), colour,
                   -1, cv2.LINE_AA, 4)
        cv2.circle(img, p(x - 0.3 * R, y - 0.3 * R), round(0.25 * R * scale * 16),
                   (250, 250, 250), -1, cv2.LINE_AA, 4)
    noise = rng.normal(0, 3, img.shape)
    return np.clip(img + noise, 0, 255).astype(np.uint8)


def calibration(img: np.ndarray) -> Calibration:
    """The bed's corners inside the cushions, as clicked on the frame."""
    h, w = img.shape[:2]
    scale = w / (W + 2 * OUT)
    a, bx, by = OUT * scale, (W + OUT) * scale, (H + OUT) * scale
    return Calibration(((a, a), (bx, a), (bx, by), (a, by)), (w, h))


def touching(x: float, y: float, angle: float, gap: float = 0.3) -> tuple[float, float]:
    """The centre of a ball touching the one at (x, y), towards ``angle`` (radians)."""
    d = 2 * R + gap
    return (x + d * math.cos(angle), y + d * math.sin(angle))


def rack(apex: tuple[float, float]) -> list[tuple[float, float]]:
    """A tight 15-ball pyramid, apex towards the head of the table."""
    d = 2 * R + 0.3
    return [(apex[0] + row * d * math.sqrt(3) / 2, apex[1] + (i - row / 2) * d)
            for row in range(5) for i in range(row + 1)]


def layout(case: str) -> list[tuple[float, float, tuple[int, int, int]]]:
    a = (1200.0, 700.0)
    if case == "pair":
        return [(*a, WHITE), (*touching(*a, 0.5), WHITE), (2600.0, 1200.0, RED)]
    if case == "pair, white and coloured":
        return [(*a, WHITE), (*touching(*a, 2.0), RED)]
    if case == "triple in a line":
        b = touching(*a, 0.3)
        return [(*a, WHITE), (*b, WHITE), (*touching(*b, 0.3), WHITE), (2600.0, 1200.0, RED)]
    if case == "triple in a triangle":
        return [(*a, IVORY), (*touching(*a, 0.0), IVORY), (*touching(*a, math.pi / 3), IVORY),
                (2600.0, 1200.0, RED)]
    if case == "rack":
        return [(x, y, WHITE) for x, y in rack((2400.0, H / 2))] + [(800.0, H / 2, RED)]
    if case == "frozen on a cushion":
        return [(1500.0, R + 0.5, WHITE), (2200.0, H - R - 0.5, RED), (W - R - 0.5, 900.0, WHITE),
                (*touching(1500.0, R + 0.5, 0.0), WHITE)]
    if case == "frozen on a cushion, tilted camera":
        # a tilted camera shows a ball's top nearer the edge than the ball stands: a third
        # of a radius over the cushion's nose (the pooltool renders at 4-15 degrees)
        edge = 0.7 * R
        return [(1500.0, edge, WHITE), (2200.0, H - edge, RED), (W - edge, 900.0, WHITE),
                (*touching(1500.0, edge, 0.0), WHITE)]
    raise KeyError(case)


CASES = ["pair", "pair, white and coloured", "triple in a line", "triple in a triangle",
         "rack", "frozen on a cushion", "frozen on a cushion, tilted camera"]


@pytest.mark.parametrize("resolution", list(SCALES))
@pytest.mark.parametrize("case", CASES)
def test_each_touching_ball_is_found_at_its_place(case: str, resolution: str) -> None:
    balls = layout(case)
    img = frame(SCALES[resolution], balls, seed=len(case))
    # calibrated as a referee does, on this frame (balls at rest, touching as they lie)
    found = BallDetector(learn_appearance(calibration(img), img)).detect(img).detections
    shown = [(round(d.x), round(d.y), d.kind) for d in found]
    assert len(found) == len(balls), (len(found), len(balls), shown)
    # every ball matched to one found within a fifth of a ball's diameter, of its kind
    tolerance = 0.2 * 2 * R
    left = list(found)
    for x, y, colour in balls:
        kind = "colour" if colour == RED else "white"
        best = min(left, key=lambda d: math.hypot(d.x - x, d.y - y))
        assert math.hypot(best.x - x, best.y - y) <= tolerance and best.kind == kind, \
            (case, resolution, (x, y, kind), shown)
        left.remove(best)


@pytest.mark.parametrize("resolution", list(SCALES))
def test_the_calibration_counts_a_rack_ball_by_ball(resolution: str) -> None:
    balls = layout("rack")
    img = frame(SCALES[resolution], balls)
    learned = learn_appearance(calibration(img), img)
    assert learned.appearance is not None and learned.appearance.balls == 16
