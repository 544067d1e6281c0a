"""The camera's calibration page (issue 15 point 2): the latest frame of the overhead
camera, four clicks on the bed's corners, saved; the camera takes it from the next frame."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import shoot
from tests.server import ServerProcess

pytest.importorskip("cv2")

from harness.synthetic import write_video  # noqa: E402


def test_four_clicks_on_the_frame_calibrate_the_camera(context: Any, tmp_path: Path) -> None:
    video = tmp_path / "table.mp4"
    truth = write_video(video, seconds=4, seed=3, size=(640, 360), fps=30.0)
    cal_path = tmp_path / "calibration.json"
    server = ServerProcess(tmp_path / "shotclock.db", env={
        "SHOTCLOCK_CAMERA": str(video), "SHOTCLOCK_CAMERA_CALIBRATION": str(cal_path)}).start()
    try:
        page = context.new_page()
        page.goto(server.url + "/calibrate")
        page.wait_for_function("document.getElementById('frame').naturalWidth > 0 && "
                               "document.getElementById('marks').width > 1")
        assert page.evaluate("document.getElementById('save').disabled")
        box = page.locator("#marks").bounding_box()
        sx, sy = box["width"] / truth.size[0], box["height"] / truth.size[1]
        for x, y in truth.corners:
            page.mouse.click(box["x"] + x * sx, box["y"] + y * sy)
        assert "4 of 4" in page.inner_text("#msg")
        shoot(page, "calibrate-four-corners")
        page.click("#save")
        page.wait_for_function("document.getElementById('msg').textContent.includes('Saved')")
        cal = server.get("/api/camera")["calibration"]
        assert cal["frame_size"] == list(truth.size)
        for (x, y), (cx, cy) in zip(truth.corners, cal["corners"], strict=True):
            assert math.dist((x, y), (cx, cy)) < 1.5, (truth.corners, cal["corners"])
        assert cal_path.exists()
        # the page shows the saved corners when it is opened again
        page.reload()
        page.wait_for_function("document.getElementById('msg').textContent.includes('4 of 4')")
    finally:
        server.stop()
