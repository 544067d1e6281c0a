"""Issue 20, finding 7: a camera URL's credentials (user part, path or query) are never
shown, without a token or with one: ``/api/camera``, ``/api/health``, the fault strip and
the service's log show the scheme and host only. A real ``shotclock serve`` with a stream
URL nobody answers (the camera is unreachable: its fault names the source)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.server import ServerProcess, free_port

pytestmark = pytest.mark.e2e

SECRET = "s3cr3t-Pa55"


def test_camera_credentials_never_leave_the_service(tmp_path: Path) -> None:
    pytest.importorskip("cv2")
    url = (f"http://admin:{SECRET}@127.0.0.1:{free_port()}/user=admin_password={SECRET}"
           f"/video.mjpg?token={SECRET}&password={SECRET}")
    server = ServerProcess(tmp_path / "cam.db", log_level="info",
                           env={"SHOTCLOCK_CAMERA": url}).start()
    try:
        deadline = time.monotonic() + 30
        while True:
            health = server.get("/api/health")
            if any(f["component"] == "camera" for f in health["faults"]):
                break
            assert time.monotonic() < deadline, health
            time.sleep(0.2)
        shown = [server.get("/api/camera"), health, server.get("/api/tables/1")]
    finally:
        server.stop()
    log = server.log.read_text(errors="replace")
    for text in [*map(str, shown), log]:
        assert SECRET not in text
        assert "admin" not in text
    assert "http://127.0.0.1:" in str(shown[0]) and "http://127.0.0.1:" in str(shown[1])
