"""A strike needs the cue ball to leave its spot, not only its pixels to change (issue 37
point 2), shown through the whole look (drawn frames, the detector, the watcher): a hand,
a cue's practice strokes, a sleeve, or a hand of the coloured ball's own colour sliding off
it (seen as a coloured ball running away) over the cue ball at rest change its pixels and
decide nothing; the same ball leaving its spot is the strike, at its frame.

Three facts hold a strike back here, each enough alone: the cue ball seen on its spot
again (nothing further than a radius from it can be its run), its spot showing no felt
(the watcher's own table test: tests/camera/test_camera_core.py), and nothing of its kind
running away from the spot two frames in a row."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pytest

pytest.importorskip("cv2")

import cv2  # noqa: E402

from clock_service.edges.camera.appearance import learn_appearance  # noqa: E402
from clock_service.edges.camera.core import Rest, Strike  # noqa: E402
from clock_service.edges.camera.geometry import Calibration  # noqa: E402
from clock_service.edges.camera.pipeline import FramePipeline  # noqa: E402
from tests.camera.test_camera_detect import FELTS, PX, RED, SKIN, WHITE, ball, band, felt, p  # noqa: E402

FRAME = 1000 / 30
CUE_BALL = (1500.0, 900.0)
WHITES = [(500.0, 400.0), (700.0, 1300.0), (1100.0, 500.0), (2100.0, 1200.0),
          (2500.0, 500.0), (2900.0, 1000.0), (3200.0, 300.0)]
GREEN = FELTS["green"]
SLEEVE = (60, 40, 35)
RED_GLOVE = (45, 45, 175)  # the coloured ball's own colour
CUE = (60, 110, 170)  # a maple shaft


@lru_cache(maxsize=4)
def noisy_felt(seed: int) -> np.ndarray:
    """The bare felt with a sensor's noise: four noise patterns, frame after frame."""
    return felt(GREEN, seed=seed)


def table(k: int, cue_ball: tuple[float, float] = CUE_BALL, over: str = "",
          phase: float = 0.0) -> np.ndarray:
    """Frame ``k``: the balls at rest, the cue ball at ``cue_ball``, and what is over it
    (``over``: hand, cue, sleeve) at ``phase`` 0..1 of its pass over the ball."""
    img = noisy_felt(k % 4).copy()
    for x, y in WHITES:
        ball(img, x, y, WHITE, GREEN)
    ball(img, *cue_ball, RED, GREEN)
    x, y = CUE_BALL
    if over == "hand":  # a bridge hand coming in, resting over the ball, going away
        hx = x - 300 + 600 * phase
        cv2.ellipse(img, p(hx, y - 20), (round(60 * PX * 16), round(45 * PX * 16)), 20, 0,
                    360, SKIN, -1, cv2.LINE_AA, 4)
        band(img, (hx, y - 20), (hx - 200, y - 700), 80, SKIN)
    elif over == "cue":  # practice strokes: the tip sweeps to and fro across the ball
        tip = x - 60 + 120 * abs(math.sin(math.pi * 2 * phase))
        band(img, (tip - 1400, y + 15), (tip, y), 24, CUE)
    elif over == "sleeve":  # a forearm in a dark sleeve laid over the ball, drawn away
        sx = x - 250 + 500 * phase
        band(img, (sx, y + 400), (sx + 150, y - 600), 95, SLEEVE)
    elif over == "red hand":  # a hand in the coloured ball's colour, resting over the
        hx = x + 1400 * max(0.0, phase - 0.5)  # ball, then sliding off it and away
        cv2.ellipse(img, p(hx, y), (round(45 * PX * 16), round(40 * PX * 16)), 0, 0,
                    360, RED_GLOVE, -1, cv2.LINE_AA, 4)
    return img


def calibrated(img: np.ndarray) -> Calibration:
    h, w = img.shape[:2]
    corners = ((0.0, 0.0), (float(w), 0.0), (float(w), float(h)), (0.0, float(h)))
    return learn_appearance(Calibration(corners, (w, h)), img)


def settled() -> tuple[FramePipeline, int]:
    """A look calibrated on the table at rest, fed until it decides the rest."""
    first = table(0)
    look = FramePipeline(calibrated(first), (first.shape[1], first.shape[0]))
    k = 0
    while look.watcher.state != "rest":
        assert k < 30, "no rest on a still table"
        look.process(table(k), k * FRAME)
        k += 1
    return look, k


@pytest.mark.parametrize("over", ["hand", "cue", "sleeve", "red hand"])
def test_something_over_the_cue_ball_changes_its_pixels_but_is_no_strike(over: str) -> None:
    look, k0 = settled()
    decided = []
    changed = 0
    for i in range(45):
        k = k0 + i
        img = table(k, over=over, phase=i / 44)
        still = table(k)
        x, y = (round(v * PX) for v in CUE_BALL)
        # the cue ball's own pixels are not what they were: that is what is shown
        changed += int(np.abs(img[y - 8:y + 9, x - 8:x + 9].astype(int)
                              - still[y - 8:y + 9, x - 8:x + 9].astype(int)).mean() > 20)
        decided += look.process(img, k * FRAME).decisions
    assert changed >= 8, (over, changed)
    assert [d for d in decided if isinstance(d, (Strike, Rest))] == [], (over, decided)
    assert look.watcher.state == "rest"


@pytest.mark.parametrize("speed", [0.8, 2.5])  # mm/ms: a soft and a firm shot
def test_the_cue_ball_leaving_its_spot_is_the_strike_at_its_frame(speed: float) -> None:
    look, k0 = settled()
    contact = (k0 + 10.4) * FRAME  # between two frames
    decided = []
    for i in range(24):
        k = k0 + i
        at = k * FRAME
        run = max(0.0, (at - contact) * speed)
        over = "" if run > 0 else "cue"
        decided += look.process(table(k, (CUE_BALL[0] + run, CUE_BALL[1]), over=over,
                                      phase=0.25 if over else 0.0), at).decisions
    strikes = [d for d in decided if isinstance(d, Strike)]
    assert len(strikes) == 1, decided
    assert strikes[0].kind == "colour"
    assert strikes[0].at == pytest.approx((k0 + 11) * FRAME)  # the first frame after contact
