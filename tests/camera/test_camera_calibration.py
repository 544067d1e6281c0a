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

