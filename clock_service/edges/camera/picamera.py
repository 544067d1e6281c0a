"""The Raspberry Pi camera module (CSI, libcamera) as a frame source: ``SHOTCLOCK_CAMERA=
picamera2`` (the first camera) or ``picamera2:N`` (camera N). Issue 21 point 6.

A CSI camera is not a V4L2 webcam OpenCV can open: libcamera runs its image pipeline and
``picamera2`` (Debian/Raspberry Pi OS: ``apt install python3-picamera2``, not on PyPI for
every Pi) hands over its buffers. Imported lazily, on the camera thread, when the source is
opened; nothing here runs without a Pi.

The same interface as ``FrameSource``: ``open()``, ``read()`` -> (frame, capture ms),
``close()``, with ``size``, ``fps``, ``origin`` (None: live), ``index``, ``ended`` and
``dropped``. Frames are 1280x720 at 30 fps in ``RGB888``, which picamera2 lays out as
B, G, R bytes: the order OpenCV expects. Two buffers, so the frame taken is at most one
behind the sensor (as a webcam's one-frame buffer).

A frame's capture time comes from the request's ``SensorTimestamp`` (nanoseconds of the
kernel's monotonic clock at the start of the frame's exposure read-out) when it lies within
a second before now on that clock, mapped onto the service's clock; otherwise the time it
was handed over, as for a webcam.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from clock_service.edges.camera.spec import SourceError, SourceSpec

__all__ = ["PicameraSource", "SIZE", "FPS"]

SIZE = (1280, 720)
FPS = 30.0
BUFFERS = 2
TIMESTAMP_WINDOW_MS = 1000.0  # a sensor timestamp further back than this is not trusted


class PicameraSource:
    def __init__(self, spec: SourceSpec, now_ms: Callable[[], float],
                 camera_factory: Callable[[int], Any] | None = None,
                 monotonic_ns: Callable[[], int] = time.monotonic_ns) -> None:
        self.spec = spec
        self.now_ms = now_ms
        self._factory = camera_factory
        self._monotonic_ns = monotonic_ns
        self.cam: Any = None
        self.fps = FPS
        self.size: tuple[int, int] = (0, 0)
        self.origin: float | None = None
        self.index = 0
        self.ended = False
        self.dropped: list[float] = []

    def _make(self, number: int) -> Any:
        if self._factory is not None:
            return self._factory(number)
        try:
            from picamera2 import Picamera2
        except ImportError as exc:
            raise SourceError("SHOTCLOCK_CAMERA=picamera2 needs picamera2 (on Raspberry Pi "
                              "OS: apt install python3-picamera2)") from exc
        return Picamera2(camera_num=number)

    def open(self) -> None:
        number = int(self.spec.target)
        try:
            cam = self._make(number)
            config = cam.create_video_configuration(
                main={"size": SIZE, "format": "RGB888"}, buffer_count=BUFFERS,
                controls={"FrameRate": FPS})
            cam.configure(config)
            cam.start()
        except SourceError:
            raise
        except Exception as exc:  # libcamera's errors are RuntimeError, IndexError...
            raise SourceError(f"cannot open the Pi camera {number}: {exc}") from exc
        self.cam = cam
        size = (config.get("main") or {}).get("size", SIZE) if isinstance(config, dict) else SIZE
        self.size = (int(size[0]), int(size[1]))
        self.index = 0

    def read(self) -> tuple[Any, float]:
        if self.cam is None:
            raise SourceError("camera source is not open")
        try:
            request = self.cam.capture_request()
        except Exception as exc:
            raise SourceError(f"the Pi camera stopped giving frames: {exc}") from exc
        try:
            frame = request.make_array("main")
            metadata = request.get_metadata() or {}
        except Exception as exc:
            raise SourceError(f"the Pi camera gave a broken frame: {exc}") from exc
        finally:
            request.release()  # the buffer goes back to libcamera at once
        now = self.now_ms()
        at = now
        sensor = metadata.get("SensorTimestamp")
        if isinstance(sensor, int) and sensor > 0:
            age = (self._monotonic_ns() - sensor) / 1e6
            if 0.0 <= age <= TIMESTAMP_WINDOW_MS:
                at = now - age
        self.index += 1
        return frame, at

    def close(self) -> None:
        cam, self.cam = self.cam, None
        if cam is not None:
            for step in (cam.stop, cam.close):
                with contextlib.suppress(Exception):  # closing a camera that failed
                    step()
