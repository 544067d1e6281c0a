"""Issue 21 point 5: the ring of recent frames and a clip for every rest, strike and time
foul (frames from 2 s before to 1 s after, with their capture times), bounded retention,
served at /api/camera/clips. Real JPEGs and real files; the fake clock for the service."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from clock_service.core.commands import Start
from clock_service.edges.camera.adapter import CameraAdapter
from clock_service.edges.camera.core import Rest, Strike
from clock_service.edges.camera.evidence import (
    AFTER_MS,
    BEFORE_MS,
    ClipStore,
    Evidence,
    EvidenceSettings,
    FrameRing,
)
from clock_service.edges.camera.source import SourceSpec
from clock_service.service.runtime import Runtime
from tests.camera.test_camera_adapter import DeadCamera, rt, settle  # noqa: F401
from tests.waiting import until_async

cv2 = pytest.importorskip("cv2")
np = pytest.importorskip("numpy")

PERIOD = 1000 / 30


def frame(k: int, size: tuple[int, int] = (1280, 720)) -> Any:
    """A 720p frame whose grey level tells its number (k % 200)."""
    return np.full((size[1], size[0], 3), 20 + k % 200, np.uint8)


def level(jpeg: bytes) -> int:
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    return int(round(float(image.mean())))


def test_the_ring_is_bounded_by_age_count_and_bytes() -> None:
    ring = FrameRing(max_ms=1000, max_frames=10, max_bytes=10_000)
    for k in range(40):
        ring.add(k * PERIOD, b"x" * 100)
    assert len(ring.frames) == 10 and ring.bytes == 1000  # count
    ring = FrameRing(max_ms=1000, max_frames=1000, max_bytes=10_000)
    for k in range(40):
        ring.add(k * PERIOD, b"x" * 100)
    assert ring.frames[0][0] >= ring.newest - 1000  # age: 31 frames of 33 ms
    assert len(ring.frames) == 31
    ring = FrameRing(max_ms=10_000, max_frames=1000, max_bytes=1000)
    for k in range(40):
        ring.add(k * PERIOD, b"x" * 300)
    assert ring.bytes <= 1000 and len(ring.frames) == 3  # bytes


def test_a_clip_holds_2_s_before_to_1_s_after_with_each_frames_capture_time(
        tmp_path: Path) -> None:
    evidence = Evidence(ClipStore(tmp_path / "clips", 10, 50_000_000), "1")
    try:
        instant = 3000.0
        clip_id = None
        for k in range(200):
            at = 1000 + k * PERIOD
            if k == 10:
                clip_id = evidence.request("strike", instant, decided_at=instant + 40)
            evidence.on_frame(frame(k), at)
            if at < instant + AFTER_MS:
                assert evidence.saved == 0  # cut only once the second after is in
        evidence.flush()
        assert clip_id == "1-3000-strike" and evidence.saved == 1
        meta = evidence.store.meta(clip_id)
        assert meta is not None and meta["kind"] == "strike" and meta["at"] == 3000.0
        assert meta["decided_at"] == 3040.0 and meta["table"] == "1"
        times = [f["at"] for f in meta["frames"]]
        assert times == sorted(times)
        assert instant - BEFORE_MS <= times[0] < instant - BEFORE_MS + PERIOD
        assert instant + AFTER_MS - PERIOD < times[-1] <= instant + AFTER_MS
        assert len(times) == 91  # 1000 to 4000 ms, both ends on the 30 fps grid
        # the MJPEG file is the frames one after another: each one where the JSON says,
        # downscaled to 480 wide, and the frame it says (its grey level)
        data = (tmp_path / "clips" / f"{clip_id}.mjpeg").read_bytes()
        assert len(data) == meta["bytes"] == sum(f["bytes"] for f in meta["frames"])
        for f in meta["frames"][::15]:
            jpeg = data[f["offset"]:f["offset"] + f["bytes"]]
            image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
            assert image.shape == (270, 480, 3)
            k = round((f["at"] - 1000) / PERIOD)
            assert abs(level(jpeg) - (20 + k)) <= 2
        zipped = zipfile.ZipFile(io.BytesIO(evidence.store.zipped(clip_id) or b""))
        names = zipped.namelist()
        assert len(names) == 92 and names[-1] == f"{clip_id}/times.json"
        assert json.loads(zipped.read(names[-1]))["frames"] == meta["frames"]
        [listed] = evidence.store.list()
        assert listed["n_frames"] == 91 and "frames" not in listed
        status = evidence.status()
        assert status["ring_frames"] <= 4500 / PERIOD + 1 and status["saved"] == 1
    finally:
        evidence.close()


def test_retention_keeps_the_newest_clips_within_count_and_bytes(tmp_path: Path) -> None:
    store = ClipStore(tmp_path, max_clips=3, max_bytes=10**9)
    for i in range(5):
        store.save(f"1-{i}-rest", {"kind": "rest", "at": float(i)}, [(float(i), b"j" * 100)])
    assert [m["id"] for m in store.list()] == ["1-2-rest", "1-3-rest", "1-4-rest"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"1-{i}-rest.{ext}" for i in (2, 3, 4) for ext in ("json", "mjpeg"))
    store = ClipStore(tmp_path / "b", max_clips=100, max_bytes=250)
    for i in range(5):
        store.save(f"1-{i}-rest", {"kind": "rest", "at": float(i)}, [(float(i), b"j" * 100)])
    assert [m["id"] for m in store.list()] == ["1-3-rest", "1-4-rest"]
    with pytest.raises(ValueError):
        store.save("../x", {}, [])
    assert store.meta("../1-3-rest") is None and store.video_path("..") is None


def test_waiting_clips_are_bounded(tmp_path: Path) -> None:
    evidence = Evidence(ClipStore(tmp_path, 10, 10**9), "1")
    ids = [evidence.request("rest", 1000.0 + i) for i in range(12)]
    assert ids.count(None) == 4 and evidence.status()["refused"] == 4


async def test_the_service_asks_a_clip_for_each_rest_strike_and_time_foul(
        rt: Runtime, tmp_path: Path) -> None:  # noqa: F811
    time = rt.fake  # type: ignore[attr-defined]
    evidence = Evidence(ClipStore(tmp_path / "clips", 10, 10**9), "1",
                        EvidenceSettings(width=320))
    cam = CameraAdapter(rt, "1", SourceSpec("device", "/dev/video9"), "/dev/video9",
                        mode="assist", calibration_path=tmp_path / "none.json",
                        source_factory=DeadCamera, evidence=evidence)
    cam.attach()
    try:
        t0 = time.now_ms()
        cam._on_decision(Rest(t0 - 300, t0, 8))
        await rt.command("1", Start(at=t0 - 100))
        time.advance(5000)
        s_at = time.now_ms() - 50
        cam._on_decision(Strike(s_at, time.now_ms(), "white", (0.0, 0.0), s_at - 2))
        # the referee does not stop it: the clock runs out (a time foul)
        await rt.command("1", Start()) if rt.state("1")["phase"] != "running" else None
        deadline = rt.state("1")["deadline"]
        time.advance(deadline - time.now_ms() + 1)
        for _ in range(200):
            if rt.state("1")["phase"] == "expired":
                break
            await settle(rt)
        assert rt.state("1")["phase"] == "expired"
        await settle(rt)
        assert [d["clip"] for d in cam.status()["decisions"]] == [
            f"1-{int(t0 - 300)}-rest", f"1-{int(s_at)}-strike"]
        # the camera thread's part, done here: frames from before the rest to after the foul
        start, end = t0 - 2500, time.now_ms() + 1100
        k = 0
        while start + k * PERIOD <= end:
            evidence.on_frame(frame(k, (640, 360)), start + k * PERIOD)
            k += 1
        evidence.flush()
        kinds = sorted(m["kind"] for m in evidence.store.list())
        assert kinds == ["rest", "strike", "time_foul"]
        [foul] = [m for m in evidence.store.list() if m["kind"] == "time_foul"]
        assert foul["at"] == deadline  # at the deadline, not when the expiry was told
        assert cam.status()["evidence"]["saved"] == 3
    finally:
        cam.close()


def test_clips_are_listed_and_served_as_json_mjpeg_and_zip(tmp_path: Path) -> None:
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from clock_service.edges.camera.routes import camera_router

    store = ClipStore(tmp_path, 10, 10**9)
    jpegs = [cv2.imencode(".jpg", frame(k, (64, 36)))[1].tobytes() for k in range(3)]
    store.save("1-5000-rest", {"kind": "rest", "at": 5000.0},
               [(4000.0 + i, j) for i, j in enumerate(jpegs)])

    class Adapter:
        evidence = Evidence(store, "1")

    app = FastAPI()
    app.include_router(camera_router(Adapter()))  # type: ignore[arg-type]
    with TestClient(app) as client:
        listed = client.get("/api/camera/clips").json()["clips"]
        assert [c["id"] for c in listed] == ["1-5000-rest"] and listed[0]["n_frames"] == 3
        meta = client.get("/api/camera/clips/1-5000-rest.json").json()
        assert [f["at"] for f in meta["frames"]] == [4000.0, 4001.0, 4002.0]
        video = client.get("/api/camera/clips/1-5000-rest.mjpeg")
        assert video.headers["content-type"] == "video/x-motion-jpeg"
        assert video.content == b"".join(jpegs)
        zipped = client.get("/api/camera/clips/1-5000-rest.zip")
        assert zipped.headers["content-type"] == "application/zip"
        assert len(zipfile.ZipFile(io.BytesIO(zipped.content)).namelist()) == 4
        answer = client.get("/api/camera/clips/nope.json")
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "no_clip"
        for bad in ("1-5000-rest.avi", "..json", "a b.mjpeg"):  # no clip's name: malformed
            assert client.get(f"/api/camera/clips/{bad}").status_code == 422, bad
        # a path out of the directory does not even reach the route
        assert client.get("/api/camera/clips/..%2F..%2Fetc.json").status_code == 404
    Adapter.evidence = None  # type: ignore[assignment]
    app = FastAPI()
    app.include_router(camera_router(Adapter()))  # type: ignore[arg-type]
    with TestClient(app) as client:
        assert client.get("/api/camera/clips").json()["error"]["code"] == "no_clips"


class LaggingFile:
    """A source whose first 5 frames come 400 ms after their capture (the thread behind
    real time), the next 5 fresh, then the end of the file."""

    ended = False
    origin = None
    size = (320, 180)
    now: Any = None

    def __init__(self, spec: SourceSpec) -> None:
        self.index = 0
        self.dropped: list[float] = []

    def open(self) -> None:
        pass

    def read(self) -> tuple[Any, float]:
        if self.index == 10:
            LaggingFile.ended = self.ended = True
            from clock_service.edges.camera.source import SourceError

            raise SourceError("the video file ended")
        self.index += 1
        lag = 400.0 if self.index <= 5 else 0.0
        return frame(self.index, self.size), LaggingFile.now() - lag

    def close(self) -> None:
        pass


async def test_a_camera_behind_real_time_sheds_the_ring_before_the_decisions(
        rt: Runtime, tmp_path: Path) -> None:  # noqa: F811
    LaggingFile.now = rt.time.now_ms
    evidence = Evidence(ClipStore(tmp_path / "clips", 10, 10**9), "1")
    cam = CameraAdapter(rt, "1", SourceSpec("file", "x.mp4"), "x.mp4", mode="assist",
                        calibration_path=tmp_path / "none.json",
                        source_factory=LaggingFile, evidence=evidence)
    cam.attach()
    try:
        # The capture thread runs niced (budget.lower_priority): on a loaded machine its
        # ten frames may take longer than a fixed 5 s to be scheduled.
        await until_async(lambda: cam.ended, 30.0, what="the lagging file to end")
        assert cam.frames == 10
        status = cam.status()["evidence"]
        assert status["shed"] == 5 and status["ring_frames"] == 5
    finally:
        cam.close()
