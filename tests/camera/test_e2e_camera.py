"""End to end: ``shotclock serve`` watching a synthetic video in ``auto`` mode plays a
frame's visits with no button pressed; the event log's start and shot times match the
video's ground truth within one frame (issue 15)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from harness.synthetic import Truth
from tests.server import CAMERA_NICE, ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.serial]

FRAME_MS = 1000 / 30


def _camera(server: ServerProcess) -> dict[str, Any]:
    camera: dict[str, Any] = server.get("/api/health")["components"]["camera"]
    return camera


def test_auto_mode_starts_at_rest_and_stops_at_the_strike_with_capture_times(
        tmp_path: Path, two_shots: tuple[Path, Truth], calibration_file: Path) -> None:
    video, truth = two_shots
    server = ServerProcess(tmp_path / "shotclock.db", env={
        "SHOTCLOCK_CAMERA": str(video), "SHOTCLOCK_CAMERA_MODE": "auto",
        "SHOTCLOCK_CAMERA_CALIBRATION": str(calibration_file)}, nice=CAMERA_NICE).start()
    try:
        deadline = time.monotonic() + truth.frames / truth.fps + 30
        lag = 0
        while not (camera := _camera(server))["ended"]:
            assert time.monotonic() < deadline, camera
            if camera["frames"] > 5 and camera["lag_ms"] is not None:
                lag = max(lag, camera["lag_ms"])
            time.sleep(0.25)
        camera = _camera(server)
        events = server.get("/api/tables/1/events?since=0")
        health = server.get("/api/health")
        # a clip for each rest and strike (issue 21 point 5), written by the camera's
        # writer thread: those still waiting when the file ended are cut with what there is
        clips_deadline = time.monotonic() + 15
        while len(clips := server.get("/api/camera/clips")["clips"]) < len(camera["decisions"]):
            assert time.monotonic() < clips_deadline, (clips, camera["evidence"])
            time.sleep(0.2)
        metas = [server.get(f"/api/camera/clips/{c['id']}.json") for c in clips]
    finally:
        server.stop()
    # how far behind real time the camera ran (a busy machine): said when it fails
    load = {"lag_max_ms": lag, "cost_ms_p50": camera["cost_ms_p50"],
            "skipped": camera["skipped"]}
    origin = camera["origin"]
    assert camera["calibrated"] and camera["frames"] > 0.8 * truth.frames, (
        {k: camera[k] for k in ("frames", "skipped", "drained", "lag_ms", "cost_ms_p50")},
        {k: camera["budget"][k] for k in ("name", "why", "log", "looked", "paced", "use")})
    starts = [e for e in events if e["type"] == "clock.started"]
    shots = [e for e in events if e["type"] == "clock.stopped" and e["data"]["reason"] == "shot"]
    assert all(e["by"] == "camera" and e["source"] == "camera" for e in starts + shots), starts
    # three rests (the opening one and one after each shot), two strikes, in that order
    assert len(starts) == 3 and len(shots) == 2, ([e["type"] for e in events], load,
                                                  camera["sent"], camera["decisions"])
    kinds = [e["type"] for e in events if e in starts or e in shots]
    assert kinds == ["clock.started", "clock.stopped"] * 2 + ["clock.started"]
    # The instant the core applied each step, from the clock's own figures (deadline and
    # remaining), against the video's truth on the service's timeline.
    # A rest is timed at the last moment a ball was seen moving by a visible amount (issue
    # 37 point 4): within the last ball's last 5 mm (the watcher's still_mm), between the
    # moment they began and its stop, give or take a frame (the opening rest: its first
    # frame; CI had it 5 frames late, a touching ball missed for a frame taken for its
    # neighbour moved).
    for started, settle, stop in zip(starts, truth.settles, truth.rests, strict=True):
        at = started["data"]["deadline"] - started["data"]["remaining_ms"] - origin
        assert settle - FRAME_MS - 1 <= at <= stop + FRAME_MS + 1, (at, settle, stop, load)
        assert started["press_at"] is not None
    for shot, start, true in zip(shots, starts, truth.strikes, strict=False):
        at = start["data"]["deadline"] - shot["data"]["remaining_ms"]
        assert abs(at - (origin + true)) <= FRAME_MS + 1, (at - origin, true, load)
    assert not [f for f in health["faults"] if f["code"] == "camera_not_sure"]
    # the clips: one per decision, named in it, each frame within 2 s before to 1 s after
    assert sorted(c["id"] for c in clips) == sorted(d["clip"] for d in camera["decisions"])
    assert sorted(c["kind"] for c in clips) == ["rest"] * 3 + ["strike"] * 2
    for meta in metas:
        times = [f["at"] for f in meta["frames"]]
        assert times and times == sorted(times), meta["id"]
        assert meta["at"] - 2000 <= times[0] and times[-1] <= meta["at"] + 1000, meta["id"]
        assert meta["bytes"] == sum(f["bytes"] for f in meta["frames"]) > 0
