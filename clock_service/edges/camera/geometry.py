"""Table geometry: the playing area's four corners in the camera image, and the bed image.

The referee (or ``shotclock camera calibrate``) gives the four corners of the playing area
inside the cushions, in the camera's pixels, in the table's order: the two corners of one
short side, then the other two, going round. A homography maps the camera image onto the
*bed image*: a top-down picture of the playing area at a fixed scale (``BED_PX_PER_MM``),
so everything outside the cushions (players, the rails, cues and arms off the bed) is
simply not in it. Positions the tracker reports are millimetres on the bed, origin at the
first corner, x along the long side.

Pure data and arithmetic (numpy only where a homography is computed); no I/O here except
``load``/``save`` of the small JSON file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clock_service.edges.camera.looks import Appearance

__all__ = [
    "TABLE_MM", "BALL_MM", "BED_PX_PER_MM", "POCKET_MM", "Calibration", "CalibrationError",
    "pockets_mm",
]

# A 12-foot Russian pyramid table: playing area 3550 x 1775 mm, balls of 68 mm.
TABLE_MM = (3550.0, 1775.0)
BALL_MM = 68.0
POCKET_MM = 60.0  # radius of a pocket's mouth zone on the bed, around its centre
# The bed image: 512 x 256 px for the whole playing area (6.9 mm a pixel;
# a ball is about 10 px across: enough for its centre to a millimetre or two, and small
# enough for a Raspberry Pi to look at 30 frames a second).
BED_PX_PER_MM = 512.0 / TABLE_MM[0]
FILE_VERSION = 2  # 1: corners and sizes; 2: and the learned ``appearance``


class CalibrationError(ValueError):
    """A calibration that cannot describe a table (wrong count, crossed or degenerate)."""


def pockets_mm(table: tuple[float, float] = TABLE_MM) -> list[tuple[float, float]]:
    """The six pocket centres on the bed's edge: four corners and the two long-side middles."""
    w, h = table
    return [(0.0, 0.0), (w / 2, 0.0), (w, 0.0), (0.0, h), (w / 2, h), (w, h)]


@dataclass(frozen=True)
class Calibration:
    """The bed's four corners in camera pixels (clockwise or not, starting anywhere along
    one short side), the camera frame size they were clicked on, the table's size."""

    corners: tuple[tuple[float, float], ...]
    frame_size: tuple[int, int]
    table_mm: tuple[float, float] = TABLE_MM
    ball_mm: float = BALL_MM
    # what the table and its balls look like, learned at calibration (appearance.py);
    # None: a version-1 file or corners only, and the detector's built-in defaults
    appearance: Appearance | None = None

    def __post_init__(self) -> None:
        corners = tuple((float(x), float(y)) for x, y in self.corners)
        if len(corners) != 4:
            raise CalibrationError(f"need 4 corners, got {len(corners)}")
        w, h = self.frame_size
        if w <= 0 or h <= 0:
            raise CalibrationError(f"frame size must be positive, got {self.frame_size!r}")
        for x, y in corners:
            if not (-0.05 * w <= x <= 1.05 * w and -0.05 * h <= y <= 1.05 * h):
                raise CalibrationError(f"corner ({x:.0f}, {y:.0f}) is outside the "
                                       f"{w}x{h} frame")
        if not _convex(corners):
            raise CalibrationError("the four corners must go round the table in order "
                                   "(a convex quadrilateral, no crossing sides)")
        area = abs(_area(corners))
        if area < 0.02 * w * h:
            raise CalibrationError(f"the table covers only {area / (w * h):.1%} of the frame")
        object.__setattr__(self, "corners", corners)

    @property
    def bed_size(self) -> tuple[int, int]:
        """(width, height) of the bed image in pixels."""
        return (round(self.table_mm[0] * BED_PX_PER_MM), round(self.table_mm[1] * BED_PX_PER_MM))

    def ordered(self) -> list[tuple[float, float]]:
        """The corners as given; the first is the bed's origin."""
        return list(self.corners)

    def bed_points(self, px_per_mm: float = BED_PX_PER_MM) -> list[tuple[float, float]]:
        """Bed-image pixel positions of the corners: the first at (0, 0), and the first side
        along the bed's long side (x) or its short side (y), whichever it is in the image."""
        w, h = (self.table_mm[0] * px_per_mm, self.table_mm[1] * px_per_mm)
        c = self.corners
        if _dist(c[0], c[1]) >= _dist(c[1], c[2]):
            return [(0.0, 0.0), (w, 0.0), (w, h), (0.0, h)]
        return [(0.0, 0.0), (0.0, h), (w, h), (w, 0.0)]

    def image_to_bed(self, px_per_mm: float = BED_PX_PER_MM) -> Any:
        """3x3 homography (numpy) from camera pixels to bed-image pixels."""
        import cv2
        import numpy as np

        src = np.array(self.ordered(), dtype=np.float32)
        dst = np.array(self.bed_points(px_per_mm), dtype=np.float32)
        return cv2.getPerspectiveTransform(src, dst)

    def scaled(self, frame_size: tuple[int, int]) -> Calibration:
        """The same table seen in a frame of another size (the camera changed resolution)."""
        sx = frame_size[0] / self.frame_size[0]
        sy = frame_size[1] / self.frame_size[1]
        return Calibration(tuple((x * sx, y * sy) for x, y in self.corners), frame_size,
                           self.table_mm, self.ball_mm, self.appearance)

    # -- the file ----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The file's content. Version 2 adds ``appearance`` (absent: not learned);
        version 1 files (no ``version``) still load."""
        out: dict[str, Any] = {
            "version": FILE_VERSION, "corners": [list(c) for c in self.corners],
            "frame_size": list(self.frame_size), "table_mm": list(self.table_mm),
            "ball_mm": self.ball_mm}
        if self.appearance is not None:
            out["appearance"] = self.appearance.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Any) -> Calibration:
        if not isinstance(data, dict):
            raise CalibrationError(f"a calibration is a JSON object, got {type(data).__name__}")
        try:
            corners = tuple((float(x), float(y)) for x, y in data["corners"])
            fw, fh = (int(v) for v in data["frame_size"])
            table = data.get("table_mm", TABLE_MM)
            tw, th = float(table[0]), float(table[1])
            ball = float(data.get("ball_mm", BALL_MM))
            version = int(data.get("version", 1))
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationError(f"bad calibration: {exc!r}") from None
        if version > FILE_VERSION:
            raise CalibrationError(f"calibration file version {version} is newer than this "
                                   f"service reads ({FILE_VERSION})")
        appearance = None
        if data.get("appearance") is not None:
            from clock_service.edges.camera.looks import Appearance
            try:
                appearance = Appearance.from_dict(data["appearance"])
            except (KeyError, TypeError, ValueError) as exc:
                raise CalibrationError(f"bad appearance in calibration: {exc}") from None
        if not (500 <= tw <= 5000 and 250 <= th <= 3000 and 30 <= ball <= 120):
            raise CalibrationError(f"implausible table {tw:g}x{th:g} mm or ball {ball:g} mm")
        return cls(corners, (fw, fh), (tw, th), ball, appearance)

    def save(self, path: str | Path) -> None:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(target.suffix + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        tmp.replace(target)

    @classmethod
    def load(cls, path: str | Path) -> Calibration:
        try:
            data = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise
        except ValueError as exc:
            raise CalibrationError(f"{path}: not JSON: {exc}") from None
        return cls.from_dict(data)


def _dist(a: Sequence[float], b: Sequence[float]) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


def _area(points: Sequence[tuple[float, float]]) -> float:
    return 0.5 * sum(points[i][0] * points[i - 1][1] - points[i - 1][0] * points[i][1]
                     for i in range(len(points)))


def _convex(points: Sequence[tuple[float, float]]) -> bool:
    signs = set()
    n = len(points)
    for i in range(n):
        (x0, y0), (x1, y1), (x2, y2) = points[i], points[(i + 1) % n], points[(i + 2) % n]
        cross = (x1 - x0) * (y2 - y1) - (y1 - y0) * (x2 - x1)
        if abs(cross) < 1e-9:
            return False
        signs.add(cross > 0)
    return len(signs) == 1
