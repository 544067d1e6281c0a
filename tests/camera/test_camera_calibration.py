"""Table geometry once (issue 15 point 2): ``shotclock camera calibrate`` finds the bed's
corners in a frame of the synthetic table (or takes them), saves them, says why not; and
the camera's HTTP side on a real ``shotclock serve``: status, latest frame, the
calibration the /calibrate page PUTs (referee token), the uncalibrated fault until then."""

from __future__ import annotations

import json
import math
import time
import urllib.request
from pathlib import Path

import pytest

from clock_service.edges.cli.main import main
from harness.synthetic import Truth
from tests.server import ServerProcess, http

TOKEN = "camera-test-token"


def test_calibrate_finds_the_corners_of_the_bed_and_saves_them(
        tmp_path: Path, two_shots: tuple[Path, Truth], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHOTCLOCK_CAMERA", raising=False)
    video, truth = two_shots
    out = tmp_path / "cal.json"
    shot = tmp_path / "snapshot.png"
    assert main(["camera", "calibrate", "--source", str(video), "--out", str(out),
                 "--snapshot", str(shot), "--db", str(tmp_path / "x.db")]) == 0
    saved = json.loads(out.read_text())
    assert saved["frame_size"] == list(truth.size)
    # the same corners as the renderer's truth (going round, in any starting corner):
    # within 0.6 % of the frame's width (0.2-0.3 % over eight felts and two sizes)
    for x, y in truth.corners:
        assert min(math.dist((x, y), c) for c in saved["corners"]) < 0.006 * truth.size[0], \
            (saved["corners"], truth.corners)
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["saved"] == str(out)
    assert shot.stat().st_size > 0


def test_calibrate_takes_given_corners_and_refuses_wrong_ones(
        tmp_path: Path, two_shots: tuple[Path, Truth], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("SHOTCLOCK_CAMERA", raising=False)
    video, truth = two_shots
    out = tmp_path / "cal.json"
    given = ",".join(f"{v:.1f}" for c in truth.corners for v in c)
    base = ["camera", "calibrate", "--source", str(video), "--out", str(out),
            "--db", str(tmp_path / "x.db")]
    assert main([*base, "--corners", given]) == 0
    assert json.loads(out.read_text())["corners"] == [
        [round(x, 1), round(y, 1)] for x, y in truth.corners]
    assert main([*base, "--corners", "1,2,3"]) == 2  # not 8 numbers
    assert main([*base, "--corners", "10,10,20,20,30,30,40,40"]) == 1  # on one line
    assert main(["camera", "calibrate", "--db", str(tmp_path / "x.db")]) == 2  # no source
    assert main(["camera", "calibrate", "--source", str(tmp_path / "none.mp4"),
                 "--db", str(tmp_path / "x.db")]) == 2
    err = capsys.readouterr().err
    assert "8 numbers" in err and "SHOTCLOCK_CAMERA" in err


def test_camera_routes_and_the_calibration_put_by_the_page(
        tmp_path: Path, two_shots: tuple[Path, Truth]) -> None:
    video, truth = two_shots
    cal_path = tmp_path / "calibration.json"
    server = ServerProcess(tmp_path / "shotclock.db", env={
        "SHOTCLOCK_CAMERA": str(video), "SHOTCLOCK_CAMERA_MODE": "assist",
        "SHOTCLOCK_CAMERA_CALIBRATION": str(cal_path),
        "SHOTCLOCK_REFEREE_TOKEN": TOKEN}).start()
    try:
        deadline = time.monotonic() + 20
        while (status := server.get("/api/camera"))["frames"] == 0:
            assert time.monotonic() < deadline, status
            time.sleep(0.1)
        assert status["calibrated"] is False and status["calibration"] is None
        assert status["mode"] == "assist" and status["frame_size"] == list(truth.size)
        codes = [f["code"] for f in server.get("/api/health")["faults"]]
        assert "camera_uncalibrated" in codes
        with urllib.request.urlopen(server.url + "/api/camera/frame.jpg", timeout=10) as r:
            assert r.headers["content-type"] == "image/jpeg"
            assert r.read(2) == b"\xff\xd8"
        with urllib.request.urlopen(server.url + "/calibrate", timeout=10) as r:
            assert b"calibrate.js" in r.read()

        body = {"corners": truth.corners, "frame_size": list(truth.size)}
        url = server.url + "/api/camera/calibration"
        assert http("PUT", url, body)[0] == 401  # the referee's token is needed
        assert http("PUT", url, body, token="wrong")[0] == 401
        status_code, answer = http("PUT", url, {**body, "corners": truth.corners[:3]},
                                   token=TOKEN)
        assert status_code == 422
        status_code, answer = http("PUT", url, {"corners": [[10, 10], [20, 20], [30, 30],
                                                            [40, 40]],
                                                "frame_size": list(truth.size)}, token=TOKEN)
        assert (status_code, answer["error"]["code"]) == (422, "invalid_calibration")
        assert not cal_path.exists()
        status_code, answer = http("PUT", url, body, token=TOKEN)
        assert status_code == 200, answer
        assert json.loads(cal_path.read_text())["frame_size"] == list(truth.size)
        status = server.get("/api/camera")
        assert status["calibrated"] and status["calibration"]["frame_size"] == list(truth.size)
        deadline = time.monotonic() + 5  # the faults are refreshed every half second
        while "camera_uncalibrated" in [f["code"] for f in server.get("/api/health")["faults"]]:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        server.stop()



class _Adapter:
    """What the calibration route asks of the camera: its calibration, its latest frame,
    where the file is, and ``calibrate``."""

    def __init__(self, calibration: object, frame: object, path: Path) -> None:
        self.calibration = calibration
        self.last_frame = frame
        self.calibration_path = path

    def calibrate(self, calibration: object) -> None:
        self.calibration = calibration


@pytest.mark.parametrize(("frame", "learn", "why"), [
    ("none", True, "the camera has not given a frame yet"),
    ("bare felt", True, "found 0 balls on the calibration frame"),
    ("balls", False, "learning was not asked for"),
])
def test_a_save_that_cannot_learn_keeps_the_look_learned_before(
        tmp_path: Path, two_shots: tuple[Path, Truth], frame: str, learn: bool,
        why: str) -> None:
    """Issue 37 point 3: corners saved again (the page at start-up, a referee fixing a
    corner) while no frame can be learned from replaced a learned look with the corners
    alone; strikes were then missed. The look learned before is kept, and the answer says
    so (``appearance: kept``, warning ``appearance_kept`` with why)."""
    import cv2
    import numpy as np
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from clock_service.edges.camera.appearance import learn_appearance
    from clock_service.edges.camera.geometry import Calibration
    from clock_service.edges.camera.routes import camera_router

    video, truth = two_shots
    cap = cv2.VideoCapture(str(video))
    first = cap.read()[1]
    cap.release()
    before = learn_appearance(Calibration(tuple(truth.corners), truth.size), first)
    assert before.appearance is not None
    shown = {"none": None, "balls": first,
             "bare felt": np.full_like(first, tuple(int(v) for v in np.median(
                 first.reshape(-1, 3), axis=0)))}[frame]
    path = tmp_path / "calibration.json"
    before.save(path)
    adapter = _Adapter(before, shown, path)
    app = FastAPI()
    app.include_router(camera_router(adapter))  # type: ignore[arg-type]
    moved = [(x + 2.0, y + 1.0) for x, y in truth.corners]
    with TestClient(app) as client:
        answer = client.put("/api/camera/calibration", json={
            "corners": moved, "frame_size": list(truth.size), "learn": learn})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["learned"] is False and body["appearance"] == "kept", body
    assert body["warning"]["code"] == "appearance_kept" and why in body["warning"]["message"]
    assert body["warning"]["vars"] == {"n": before.appearance.balls}
    saved = Calibration.load(path)
    assert saved.appearance is not None
    assert saved.appearance.to_dict() == before.appearance.to_dict()
    assert saved.corners == tuple(moved) and adapter.calibration.to_dict() == saved.to_dict()


def test_calibrate_at_the_command_line_keeps_the_look_learned_before(
        tmp_path: Path, two_shots: tuple[Path, Truth], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import cv2

    from clock_service.edges.camera.appearance import learn_appearance
    from clock_service.edges.camera.geometry import Calibration

    monkeypatch.delenv("SHOTCLOCK_CAMERA", raising=False)
    video, truth = two_shots
    cap = cv2.VideoCapture(str(video))
    first = cap.read()[1]
    cap.release()
    out = tmp_path / "cal.json"
    before = learn_appearance(Calibration(tuple(truth.corners), truth.size), first)
    before.save(out)
    given = ",".join(f"{v + 1:.1f}" for c in truth.corners for v in c)
    assert main(["camera", "calibrate", "--source", str(video), "--out", str(out),
                 "--corners", given, "--no-learn", "--db", str(tmp_path / "x.db")]) == 0
    kept = Calibration.load(out).appearance
    assert kept is not None and before.appearance is not None
    assert kept.to_dict() == before.appearance.to_dict()
    assert "the look learned before is kept" in capsys.readouterr().err
