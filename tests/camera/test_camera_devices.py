"""Issue 21 point 6, real devices in code: a USB webcam asked for MJPEG 720p30 with a
one-frame buffer, and the Raspberry Pi camera module through picamera2 (tested against a
fake ``Picamera2`` with the same methods: libcamera cannot run here)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from clock_service.edges.camera import source as source_module
from clock_service.edges.camera.picamera import PicameraSource
from clock_service.edges.camera.source import (
    FrameSource,
    SourceError,
    SourceSpec,
    make_source,
    parse_source,
)

cv2 = pytest.importorskip("cv2")
np = pytest.importorskip("numpy")


@pytest.mark.parametrize(("text", "spec"), [
    ("picamera2", SourceSpec("picamera2", 0)),
    ("picamera2:1", SourceSpec("picamera2", 1)),
    (" PiCamera2:0 ", SourceSpec("picamera2", 0)),
    ("picamera", SourceSpec("picamera2", 0)),
    ("0", SourceSpec("device", 0)),
    ("/dev/video2", SourceSpec("device", "/dev/video2")),
])
def test_the_source_setting_names_the_pi_camera(text: str, spec: SourceSpec) -> None:
    assert parse_source(text) == spec
    assert spec.live


@pytest.mark.parametrize("text", ["picamera2:x", "picamera2:", "picamera3"])
def test_a_bad_pi_camera_setting_is_refused_with_the_forms_it_takes(text: str) -> None:
    with pytest.raises(ValueError, match="picamera2:1"):
        parse_source(text)


class FakeCapture:
    """cv2.VideoCapture of a V4L2 device: what was asked of it, in order."""

    opened: list[tuple[Any, Any]] = []

    def __init__(self, target: Any, api: Any = None) -> None:
        FakeCapture.opened.append((target, api))
        self.props: list[tuple[int, float]] = []

    def set(self, prop: int, value: float) -> bool:
        self.props.append((prop, value))
        return True

    def get(self, prop: int) -> float:
        asked = dict(self.props)
        return float(asked.get(prop, 0.0))

    def isOpened(self) -> bool:  # noqa: N802 - OpenCV's name
        return True

    def grab(self) -> bool:
        return True

    def retrieve(self) -> tuple[bool, Any]:
        return True, np.zeros((720, 1280, 3), np.uint8)

    def release(self) -> None:
        pass


def test_a_usb_webcam_is_opened_as_mjpeg_720p30_with_a_one_frame_buffer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cv2, "VideoCapture", FakeCapture)
    FakeCapture.opened = []
    clock = [1000.0]
    source = FrameSource(SourceSpec("device", "/dev/video0"), lambda: clock[0])
    source.open()
    assert FakeCapture.opened == [("/dev/video0", cv2.CAP_V4L2)]
    props = source.cap.props
    names = [p for p, _ in props]
    asked = dict(props)
    assert asked[cv2.CAP_PROP_FOURCC] == cv2.VideoWriter_fourcc(*"MJPG")
    assert (asked[cv2.CAP_PROP_FRAME_WIDTH], asked[cv2.CAP_PROP_FRAME_HEIGHT]) == (1280, 720)
    assert asked[cv2.CAP_PROP_FPS] == 30 and asked[cv2.CAP_PROP_BUFFERSIZE] == 1
    # the format before the size (V4L2 checks a size against the format)
    assert names.index(cv2.CAP_PROP_FOURCC) < names.index(cv2.CAP_PROP_FRAME_WIDTH)
    assert source.size == (1280, 720) and source.fps == 30.0
    frame, at = source.read()
    assert frame.shape == (720, 1280, 3) and at == 1000.0 and source.dropped == []


class BufferingCamera:
    """A V4L2 webcam on the fake clock: a frame every 33.3 ms into the driver's ring of
    ``buffers`` (the oldest lost when full, as uvcvideo does); ``grab`` takes the oldest
    buffered frame at once, or waits for the next one; ``retrieve`` decodes the last
    grabbed (its "image" is its true capture time)."""

    def __init__(self, time: Any, origin: float, buffers: int = 4) -> None:
        self.time = time
        self.origin = origin
        self.buffers = buffers
        self.next_k = 0  # next frame the camera captures
        self.taken = -1  # last frame handed to a grab
        self.grabbed: float | None = None
        self.decoded = 0

    def _captured(self, k: int) -> float:
        return self.origin + 1.0 + k * 1000 / 30

    def grab(self) -> bool:
        now = self.time.now_ms()
        while self._captured(self.next_k) <= now:
            self.next_k += 1
        queued = list(range(max(self.taken + 1, self.next_k - self.buffers), self.next_k))
        if queued:
            self.taken = queued[0]
        else:  # wait for the camera's next frame (and 2 ms to transfer it)
            self.time.advance(self._captured(self.next_k) + 2 - now)
            self.taken = self.next_k
            self.next_k += 1
        self.grabbed = self._captured(self.taken)
        return True

    def retrieve(self) -> tuple[bool, Any]:
        self.decoded += 1
        return True, self.grabbed


@pytest.mark.parametrize("cost_ms", [5.0, 150.0, 400.0])
def test_a_live_camera_behind_a_slow_detector_hands_over_a_fresh_frame(cost_ms: float) -> None:
    from clock_service.service.timesource import FakeTime

    time = FakeTime()
    camera = BufferingCamera(time, origin=time.now_ms())
    source = FrameSource(SourceSpec("device", 0), time.now_ms)
    source.cap = camera
    errors = []
    for _ in range(40):
        captured, at = source.read()
        errors.append(at - captured)  # stamped at hand-over: how much later than captured
        time.advance(cost_ms)  # the detector
    assert camera.decoded == 40  # only the frame handed over is decoded
    # every frame handed over was captured within the transfer time of its stamp (2 ms),
    # not up to four frames (133 ms) before it as the oldest buffered frame would be
    assert max(errors) <= 2.0 + 1e-6, errors
    if cost_ms > 1000 / 30:
        assert source.drained >= 3 * 39  # the full buffers were left out, undecoded
    else:
        assert source.drained == 0


class FakeRequest:
    def __init__(self, camera: FakePicamera2, metadata: dict[str, Any]) -> None:
        self.camera = camera
        self.metadata = metadata

    def make_array(self, name: str) -> Any:
        assert name == "main"
        if self.camera.broken_array:
            raise RuntimeError("buffer lost")
        width, height = self.camera.configured["main"]["size"]
        return np.full((height, width, 3), self.camera.requests % 256, np.uint8)

    def get_metadata(self) -> dict[str, Any]:
        return self.metadata

    def release(self) -> None:
        self.camera.released += 1


class FakePicamera2:
    """What PicameraSource uses of picamera2.Picamera2, with the same names and shapes."""

    made: list[FakePicamera2] = []

    def __init__(self, camera_num: int = 0) -> None:
        self.camera_num = camera_num
        self.configured: dict[str, Any] = {}
        self.started = self.stopped = self.closed = False
        self.requests = 0
        self.released = 0
        self.broken_array = False
        self.timestamps: list[int | None] = []
        self.fail_capture = False
        FakePicamera2.made.append(self)

    def create_video_configuration(self, main: dict[str, Any] | None = None, lores: Any = None,
                                   raw: Any = None, transform: Any = None,
                                   colour_space: Any = None, buffer_count: int = 6,
                                   controls: dict[str, Any] | None = None,
                                   display: str | None = "main",
                                   encode: str | None = "main", **_: Any) -> dict[str, Any]:
        return {"main": dict(main or {}), "buffer_count": buffer_count,
                "controls": dict(controls or {})}

    def configure(self, config: dict[str, Any]) -> None:
        self.configured = config

    def start(self) -> None:
        self.started = True

    def capture_request(self) -> FakeRequest:
        if self.fail_capture:
            raise RuntimeError("camera frontend timeout")
        self.requests += 1
        stamp = self.timestamps.pop(0) if self.timestamps else None
        return FakeRequest(self, {} if stamp is None else {"SensorTimestamp": stamp})

    def stop(self) -> None:
        self.stopped = True

    def close(self) -> None:
        self.closed = True


def test_the_pi_camera_module_gives_bgr_720p30_frames_timed_at_the_sensor() -> None:
    FakePicamera2.made = []
    mono = [50_000_000_000]  # the kernel's monotonic clock, ns
    now = [9_000.0]
    source = PicameraSource(SourceSpec("picamera2", 1), lambda: now[0],
                            camera_factory=FakePicamera2, monotonic_ns=lambda: mono[0])
    source.open()
    [cam] = FakePicamera2.made
    assert cam.camera_num == 1 and cam.started
    assert cam.configured["main"] == {"size": (1280, 720), "format": "RGB888"}
    assert cam.configured["buffer_count"] == 2
    assert cam.configured["controls"] == {"FrameRate": 30.0}
    assert source.size == (1280, 720) and source.fps == 30.0 and source.origin is None
    # exposure read out 40 ms before it was handed over: timed then
    cam.timestamps = [mono[0] - 40_000_000, None, mono[0] - 5_000_000_000, mono[0] + 10]
    frame, at = source.read()
    assert frame.shape == (720, 1280, 3) and frame.dtype == np.uint8
    assert at == pytest.approx(8_960.0)
    # no timestamp, one from another clock (5 s back), one from the future: handed-over time
    for _ in range(3):
        assert source.read()[1] == 9_000.0
    assert cam.released == 4 and source.index == 4  # every buffer back to libcamera
    cam.broken_array = True
    with pytest.raises(SourceError, match="broken frame"):
        source.read()
    assert cam.released == 5  # released even when the array could not be made
    cam.broken_array = False
    cam.fail_capture = True
    with pytest.raises(SourceError, match="stopped giving frames"):
        source.read()
    source.close()
    assert cam.stopped and cam.closed and source.cam is None
    with pytest.raises(SourceError):
        source.read()


def test_a_pi_camera_that_cannot_open_is_a_source_error() -> None:
    def absent(number: int) -> Any:
        raise IndexError("list index out of range")  # picamera2 with no camera attached

    source = PicameraSource(SourceSpec("picamera2", 0), lambda: 0.0, camera_factory=absent)
    with pytest.raises(SourceError, match="cannot open the Pi camera 0"):
        source.open()


def test_picamera2_is_imported_only_when_the_pi_camera_is_opened(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "picamera2", None)  # not installed (as here)
    source = make_source(SourceSpec("picamera2", 0), lambda: 0.0)
    assert isinstance(source, PicameraSource)
    with pytest.raises(SourceError, match="apt install python3-picamera2"):
        source.open()
    assert isinstance(make_source(SourceSpec("device", 0), lambda: 0.0), FrameSource)
    assert source_module.V4L2_SIZE == (1280, 720)


def _eight_greys(folder: Any, fourcc: str) -> Any:
    """A 10 fps file of 8 frames, frame k grey 20 * k."""
    path = folder / ("v.avi" if fourcc == "MJPG" else "v.mp4")
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), 10.0, (64, 48))
    for k in range(8):
        writer.write(np.full((48, 64, 3), 20 * k, np.uint8))
    writer.release()
    return path


@pytest.mark.parametrize("fourcc", ["MJPG", "mp4v"])
def test_a_file_behind_past_its_end_hands_over_its_last_frame_then_ends(
        tmp_path: Any, fourcc: str) -> None:
    """A machine behind real time by more than what is left of the file: the frames before
    the last are dropped and the last is handed over (it used to drop them all and end with
    nothing: a short file could end with no frame looked at, clean-clone run 73)."""
    path = _eight_greys(tmp_path, fourcc)
    clock = [1000.0]
    source = FrameSource(SourceSpec("file", str(path)), lambda: clock[0],
                         lambda seconds: None)
    source.open()
    try:
        assert source.frame_count == 8
        source.read()  # frame 0, at 1000
        clock[0] += 5000.0  # 50 frames later: the file's 8 are all past
        frame, at = source.read()
        assert source.dropped == [1100.0 + 100 * k for k in range(6)] and at == 1700.0
        assert abs(float(frame.mean()) - 140) < 4  # frame 7, the last
        with pytest.raises(SourceError, match="ended"):
            source.read()
        assert source.ended
    finally:
        source.close()


@pytest.mark.parametrize("fourcc", ["MJPG", "mp4v"])
def test_a_file_drops_frames_behind_real_time_and_an_mjpeg_one_decodes_only_those_handed_over(
        tmp_path: Any, fourcc: str) -> None:
    """Issue 21 point 7: a dropped MJPEG frame is not decoded (as a webcam's is not); the
    frames handed over are the right ones, decoded as OpenCV's reader decodes them."""
    path = _eight_greys(tmp_path, fourcc)
    clock = [1000.0]

    def sleep(seconds: float) -> None:
        clock[0] += seconds * 1000

    source = FrameSource(SourceSpec("file", str(path)), lambda: clock[0], sleep)
    source.open()
    try:
        assert source.packets == (fourcc == "MJPG")
        frame, at = source.read()
        assert frame.shape == (48, 64, 3) and at == 1000.0
        assert abs(float(frame.mean()) - 0) < 4
        clock[0] += 450.0  # 4.5 frames later: frames 1-3 dropped, frame 4 handed over
        frame, at = source.read()
        assert source.dropped == [1100.0, 1200.0, 1300.0] and at == 1400.0
        assert abs(float(frame.mean()) - 80) < 4
    finally:
        source.close()
