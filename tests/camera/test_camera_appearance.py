"""Ball appearance and size learned at calibration (issue 21 point 3a): from the table's
own frame (its felt, its balls at rest), kept in the calibration file (version 2; version-1
files still load), and used by the detector instead of its built-in colour limits."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("cv2")

from clock_service.edges.camera.appearance import Appearance, AppearanceError, learn_appearance  # noqa: E402
from clock_service.edges.camera.detect import BallDetector  # noqa: E402
from clock_service.edges.camera.geometry import Calibration, CalibrationError  # noqa: E402
from clock_service.edges.cli.main import main  # noqa: E402
from harness.scenes import CONDITIONS, Scene, encode_frames  # noqa: E402
from harness.synthetic import Truth  # noqa: E402


def first_frame(name: str, **changes: object) -> tuple[Scene, object]:
    cond = replace(CONDITIONS[name], codec="jpeg:70", **changes)  # type: ignore[arg-type]
    scene = Scene(cond)
    _, _, frame, _ = next(encode_frames(scene.frames(), cond))
    return scene, frame


def test_aged_ivory_through_a_wide_lens_is_seen_once_learned() -> None:
    """The issue's second scene: aged-ivory balls through a wide lens, where the built-in
    limits (white = chroma under 18) see almost nothing. Learned from the table's own
    frame, the balls are found."""
    scene, frame = first_frame("t_wide_lens_tilt25_aged_mp4v")
    size = scene.cond.size
    corners = Calibration(tuple(scene.truth.corners), size)
    learned = learn_appearance(corners, frame)
    a = learned.appearance
    assert a is not None and a.white_lab is not None
    assert a.white_lab[2] > 12  # yellowish: the whites' b is learned, not assumed 0
    assert len(a.colours) == 1 and a.balls >= 5
    before = BallDetector(corners, frame_size=size).detect(frame).detections  # type: ignore[arg-type]
    after = BallDetector(learned, frame_size=size).detect(frame).detections  # type: ignore[arg-type]
    assert len(before) <= 2
    # 5 of 8 here (a touching pair, stretched by the 25 degree tilt, reads as a cue's ridge,
    # and one ball lies too shallow: left for later, see /work/notes/21b.md)
    assert len(after) >= 5
    assert sorted(d.kind for d in after).count("colour") == 1


def test_no_balls_no_appearance_and_a_clear_reason() -> None:
    scene, frame = first_frame("t_green_white_spot", whites=0, coloured=(), size=(640, 480))
    with pytest.raises(AppearanceError, match="found 0 balls"):
        learn_appearance(Calibration(tuple(scene.truth.corners), (640, 480)), frame)


def test_calibration_file_versions(tmp_path: Path) -> None:
    v1 = {"corners": [[10, 10], [600, 12], [598, 300], [12, 298]], "frame_size": [640, 360]}
    old = Calibration.from_dict(v1)
    assert old.appearance is None and old.to_dict()["version"] == 2
    appearance = Appearance((60.0, 180.0, 120.0), (5.0, 30.0, 30.0), 110.0, 38.5,
                            (240.0, -2.0, 20.0), 1.5, ((130.0, 60.0, 35.0),), 8, 1.7)
    new = replace(old, appearance=appearance)
    path = tmp_path / "cal.json"
    new.save(path)
    loaded = Calibration.load(path)
    assert loaded == new and loaded.appearance == appearance
    assert loaded.scaled((1280, 720)).appearance == appearance  # in mm and colours: any size
    data = json.loads(path.read_text())
    with pytest.raises(CalibrationError, match="newer"):
        Calibration.from_dict({**data, "version": 3})
    with pytest.raises(CalibrationError, match="appearance"):
        Calibration.from_dict({**data, "appearance": {**data["appearance"],
                                                      "ball_radius_mm": 500}})


def test_shotclock_camera_calibrate_learns_unless_told_not_to(
        tmp_path: Path, two_shots: tuple[Path, Truth], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHOTCLOCK_CAMERA", raising=False)
    video, truth = two_shots
    corners = ",".join(f"{x},{y}" for x, y in truth.corners)
    out = tmp_path / "cal.json"
    base = ["camera", "calibrate", "--source", str(video), "--corners", corners,
            "--db", str(tmp_path / "x.db")]
    assert main([*base, "--out", str(out)]) == 0
    saved = json.loads(out.read_text())
    assert saved["version"] == 2 and saved["appearance"]["balls"] == 8
    assert Calibration.load(out).appearance is not None
    plain = tmp_path / "plain.json"
    assert main([*base, "--out", str(plain), "--no-learn"]) == 0
    assert "appearance" not in json.loads(plain.read_text())
    capsys.readouterr()
