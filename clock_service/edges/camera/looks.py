"""What a table and its balls look like (issue 21 point 3a): the ``Appearance`` learned at
calibration (``appearance.learn_appearance``) and kept in the calibration file, and the
built-in colour limits used when nothing was learned. Pure data and arithmetic; imports
nothing else of the camera (``geometry`` and ``detect`` both use it)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["Appearance", "AppearanceError", "builtin_kind"]

# The ball's kind from its inner disk (Lab): the coloured ball is saturated and warm (red,
# orange, yellow: chroma 45-75 on a camera, less only when a hand or a cue covers it), a
# white one is pale and far above the felt's lightness (a hand's edge over a blue felt
# mixes to a pale grey, well darker than a ball). Skin (chroma about 25), a cue's
# maple or dark butt, sleeves of any colour but white are neither: not a ball.
COLOUR_CHROMA = 36.0
COLOUR_WARM = 10.0  # and warm (Lab b above this): a blue or a purple sleeve is not the ball
COLOUR_HUE_DEG = 15.0  # a learned colour seen deeper: its hue within this many degrees
WHITE_CHROMA = 18.0
WHITE_ABOVE_FELT = 75.0


def builtin_kind(lightness: float, a: float, b: float, felt_lightness: float) -> str | None:
    """``colour``, ``white`` or None (not a ball) from a ball's inner disk's mean colour
    (OpenCV's 8-bit Lab, a and b centred on 0) and the felt's lightness, by the built-in
    limits (set on one renderer's pure-white balls and warm coloured one)."""
    chroma = math.hypot(a, b)
    if chroma >= COLOUR_CHROMA and b >= COLOUR_WARM:
        return "colour"
    if chroma < WHITE_CHROMA and lightness >= felt_lightness + WHITE_ABOVE_FELT:
        return "white"
    return None


VERSION = 1  # of the appearance object inside the calibration file


class AppearanceError(ValueError):
    """The frame does not show enough of the table or its balls to learn from."""


@dataclass(frozen=True)
class Appearance:
    felt_hsv: tuple[float, float, float]  # OpenCV HSV (hue 0-179), medians on the bed
    felt_tol: tuple[float, float, float]  # the felt's tolerances in hue, saturation, value
    felt_lightness: float  # Lab L (0-255) of the felt
    ball_radius_mm: float  # a ball's radius as the bed image shows it (mm of the bed)
    white_lab: tuple[float, float, float] | None  # L, a, b (a, b centred on 0) of the whites
    white_spread: float  # the whites' spread in (a, b)
    colours: tuple[tuple[float, float, float], ...]  # each coloured ball's L, a, b
    balls: int  # balls the calibration frame showed
    depth_max: float = 1.5  # a ball's centre lies at most this deep in the foreground (radii)

    def to_dict(self) -> dict[str, Any]:
        return {"version": VERSION, "felt_hsv": [round(v, 2) for v in self.felt_hsv],
                "felt_tol": [round(v, 2) for v in self.felt_tol],
                "felt_lightness": round(self.felt_lightness, 2),
                "ball_radius_mm": round(self.ball_radius_mm, 2),
                "white_lab": None if self.white_lab is None
                else [round(v, 2) for v in self.white_lab],
                "white_spread": round(self.white_spread, 2),
                "colours": [[round(v, 2) for v in c] for c in self.colours],
                "balls": self.balls, "depth_max": round(self.depth_max, 3)}

    @classmethod
    def from_dict(cls, data: Any) -> Appearance:
        if not isinstance(data, dict):
            raise ValueError("appearance must be an object")

        def three(v: Any) -> tuple[float, float, float]:
            a, b, c = (float(x) for x in v)
            return (a, b, c)

        radius = float(data["ball_radius_mm"])
        if not 10 <= radius <= 80:
            raise ValueError(f"implausible ball radius {radius:g} mm")
        white = data.get("white_lab")
        return cls(three(data["felt_hsv"]), three(data["felt_tol"]),
                   float(data["felt_lightness"]), radius,
                   None if white is None else three(white), float(data.get("white_spread", 0)),
                   tuple(three(c) for c in data.get("colours", [])), int(data.get("balls", 0)),
                   min(2.5, max(1.0, float(data.get("depth_max", 1.5)))))

    def summary(self) -> dict[str, Any]:
        return self.to_dict()

    # -- telling balls apart --------------------------------------------------------------
    def kind_of(self, lightness: float, a: float, b: float, felt_lightness: float
                ) -> str | None:
        """``white``, ``colour`` or None (not a ball) from a disk's mean Lab, against the
        colours learned. The lightness is taken relative to the felt's now, around the
        ball (the hall's light and the camera's gain change, a lamp lights one end more
        than the other; the felt changes with them). A kind the
        calibration frame did not show (no coloured ball on it, say) is told by the
        detector's built-in limits (``fallback``)."""
        if self.white_lab is not None:
            wl, wa, wb = self.white_lab
            gap = wl - self.felt_lightness  # how much lighter than the felt a white was
            tol = max(9.0, 3.0 * self.white_spread + 5.0)
            if math.hypot(a - wa, b - wb) <= tol and \
                    lightness - felt_lightness >= max(20.0, 0.45 * gap):
                return "white"
        for cl, ca, cb in self.colours:
            chroma = math.hypot(ca, cb)
            # its lightness against the felt's, as when it was learned (a ball at a dim end
            # of the table is darker, and so is the felt around it)
            if abs((lightness - felt_lightness) - (cl - self.felt_lightness)) > 70:
                continue
            if math.hypot(a - ca, b - cb) <= max(14.0, 0.4 * chroma):
                return "colour"
            # ... or its hue, as saturated as learned or up to twice as much: learned under
            # a lamp, a glossy ball's disk mixes the lamp's white into its colour; away
            # from the lamps it shows its own deeper colour (the pooltool render
            # p_t_green_rack_break: learned at chroma 56, the cue ball at 89 after the
            # break was no ball, and the next strike was timed 400 ms late from the white
            # it hit). Skin and a cue's maple share a red's hue, not its saturation.
            seen = math.hypot(a, b)
            turn = abs((math.atan2(b, a) - math.atan2(cb, ca) + math.pi) % (2 * math.pi)
                       - math.pi)
            if chroma >= COLOUR_CHROMA and turn <= math.radians(COLOUR_HUE_DEG) and \
                    chroma <= seen <= 2 * chroma:
                return "colour"
        kind = builtin_kind(lightness, a, b, felt_lightness)
        if kind == "white" and self.white_lab is not None:
            return None  # the whites are known: one unlike them is not a white
        if kind == "colour" and self.colours:
            return None
        return kind
