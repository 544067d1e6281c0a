"""Issue 21 point 5: a clip carries its match and the clock's steps in its window (the
referee steps through it beside the clock's times), the list is filtered and bounded, and
the match record links its clips."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clock_service.core.commands import Start
from clock_service.edges.camera.adapter import CameraAdapter
from clock_service.edges.camera.core import Rest
from clock_service.edges.camera.evidence import ClipStore, Evidence, EvidenceSettings
from clock_service.edges.camera.source import SourceSpec
from clock_service.service.runtime import Runtime
from tests.camera.test_camera_adapter import DeadCamera, rt, settle  # noqa: F401

cv2 = pytest.importorskip("cv2")
np = pytest.importorskip("numpy")

PERIOD = 1000 / 30


async def test_a_clip_names_its_match_and_the_clock_steps_in_its_window(
        rt: Runtime, tmp_path: Path) -> None:  # noqa: F811
    time = rt.fake  # type: ignore[attr-defined]
    evidence = Evidence(ClipStore(tmp_path / "clips", 10, 10**9), "1",
                        EvidenceSettings(width=160))
    cam = CameraAdapter(rt, "1", SourceSpec("device", "/dev/video9"), "/dev/video9",
                        mode="assist", calibration_path=tmp_path / "none.json",
                        source_factory=DeadCamera, evidence=evidence)
    cam.attach()
    try:
        t0 = time.now_ms()
        cam._on_decision(Rest(t0 - 300, t0, 8))  # the camera: balls stopped
        await rt.command("1", Start(at=t0 - 270))  # the referee's start, 30 ms later
        await settle(rt)
        assert cam.match_id == "1.1"
        start, end = t0 - 2500, t0 + 1000
        k = 0
        while start + k * PERIOD <= end:
            evidence.on_frame(np.full((90, 160, 3), k % 200, np.uint8), start + k * PERIOD)
            k += 1
        evidence.flush()
        [clip] = evidence.store.list()
        assert clip["match"] == "1.1" and clip["kind"] == "rest"
        assert clip["clock"] == [{"type": "clock.started", "at": round(t0 - 270, 1),
                                  "by": "referee"}]
        # a step outside the clip's window is not in it
        assert cam.clock_between(t0 + 5000, t0 + 6000) == []
    finally:
        cam.close()


def _app(store: ClipStore, table: str = "1") -> Any:
    from fastapi import FastAPI

    from clock_service.edges.camera.routes import camera_router

    class Adapter:
        evidence = Evidence(store, table)
        table_id = table

    app = FastAPI()
    app.include_router(camera_router(Adapter()))  # type: ignore[arg-type]
    return app


def test_the_list_is_filtered_and_bounded_and_a_match_lists_its_clips(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    store = ClipStore(tmp_path, 200, 10**9)
    jpeg = cv2.imencode(".jpg", np.zeros((8, 8, 3), np.uint8))[1].tobytes()
    for i in range(120):
        match = "1.1" if i < 100 else "1.2"
        kind = ("rest", "strike", "time_foul")[i % 3]
        store.save(f"1-{10_000 + i}-{kind}", {"kind": kind, "at": 10_000.0 + i,
                                              "table": "1", "match": match},
                   [(10_000.0 + i, jpeg)])
    with TestClient(_app(store)) as client:
        listed = client.get("/api/camera/clips").json()["clips"]
        assert len(listed) == 100 and listed[-1]["at"] == 10_119.0  # the newest 100
        assert len(client.get("/api/camera/clips?limit=5").json()["clips"]) == 5
        for bad in ("limit=101", "limit=0", "match=1", "match=..%2F1.1", "kind=foul",
                    "table=a%20b"):
            assert client.get(f"/api/camera/clips?{bad}").status_code == 422, bad
        second = client.get("/api/camera/clips?match=1.2").json()["clips"]
        assert [c["at"] for c in second] == [10_000.0 + i for i in range(100, 120)]
        strikes = client.get("/api/camera/clips?match=1.2&kind=strike").json()["clips"]
        assert {c["kind"] for c in strikes} == {"strike"} and len(strikes) == 7
        assert client.get("/api/camera/clips?table=2").json()["clips"] == []
        of_match = client.get("/api/matches/1.2/clips").json()
        assert of_match["match"] == "1.2" and len(of_match["clips"]) == 20
        first = of_match["clips"][0]
        assert first["view"] == f"/clips?match=1.2&clip={first['id']}"
        assert client.get("/api/matches/1.3/clips").json()["clips"] == []
        assert client.get("/api/matches/x/clips").status_code == 422
