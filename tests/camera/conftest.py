"""Short synthetic videos, rendered once per test session (never committed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("cv2")

from harness.synthetic import Truth, write_video  # noqa: E402


@pytest.fixture(scope="session")
def two_shots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Truth]:
    """About 10 s at 640x360, 30 fps: the opening rest, two strikes, two rests."""
    path = tmp_path_factory.mktemp("camera") / "two_shots.mp4"
    truth = write_video(path, max_shots=2, seed=5, size=(640, 360), fps=30.0,
                        first_strike_ms=(1500, 2200))
    assert len(truth.strikes) == 2 and len(truth.rests) == 3
    return path, truth


@pytest.fixture(scope="session")
def calibration_file(tmp_path_factory: pytest.TempPathFactory,
                     two_shots: tuple[Path, Truth]) -> Path:
    _, truth = two_shots
    path = tmp_path_factory.mktemp("camera") / "calibration.json"
    path.write_text(json.dumps({"corners": truth.corners, "frame_size": list(truth.size)}))
    return path
