"""The camera's calibration page (issue 15 point 2): the latest frame of the overhead
camera, four clicks on the bed's corners, saved; the camera takes it from the next frame."""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.browser.conftest import Traffic, shoot, watch_answers
from tests.server import CAMERA_NICE, ServerProcess
from tests.waiting import until

pytest.importorskip("cv2")

from harness.synthetic import write_resting_table, write_video  # noqa: E402


def test_four_clicks_on_the_frame_calibrate_the_camera(context: Any, tmp_path: Path) -> None:
    video = tmp_path / "table.mp4"
    truth = write_video(video, seconds=4, seed=3, size=(640, 360), fps=30.0)
    cal_path = tmp_path / "calibration.json"
    with _camera_service(tmp_path, video, cal_path) as server:
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


@pytest.fixture(scope="module")
def resting_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A 0.6 s video of a table with its balls at rest and nobody at it, and its
    calibration. (In this seed the player's arm comes into the picture at 0.67 s, and a
    hand at the cushion, learned from, counts as a ball: the calibration frame is one
    with nothing over the table, as the calibration page asks.)"""
    return write_resting_table(tmp_path_factory.mktemp("calibrate"), seconds=0.6)


@pytest.fixture(scope="module")
def sure_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The resting table for a page that must say ready, which needs a camera sure of what
    it sees: 3 s at 15 fps (its 0.6 s played forth and back). At 30 fps for 0.6 s, a
    camera slowed down as it started (two other workers and their Chromiums on two cores:
    4-10 frames a second looked at) says, rightly, that it looks at too few frames to tell
    a rest, and 0.6 s ended before the second of good frames that makes it sure again
    (CI: 'the page never said ready'). A camera that looks at 15 frames a second is sure;
    3 s leave it time to get there after a slow start."""
    return write_resting_table(tmp_path_factory.mktemp("calibrate-sure"), seconds=0.6,
                               fps=15.0, hold_s=3.0)


@pytest.fixture(scope="module")
def playing_table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same, 16 s: still playing when a page that lost its answers asks again (12 s),
    so that it is judged by what a camera watching says, not by how the file ended."""
    return write_resting_table(tmp_path_factory.mktemp("calibrate-playing"), seconds=0.6,
                               fps=15.0, hold_s=16.0)


@contextmanager
def _camera_service(tmp_path: Path, video: Path, cal: Path) -> Iterator[ServerProcess]:
    """A service whose camera plays ``video``, calibrated by the file ``cal`` (which may
    not exist yet)."""
    server = ServerProcess(tmp_path / "shotclock.db", env={
        "SHOTCLOCK_CAMERA": str(video), "SHOTCLOCK_CAMERA_CALIBRATION": str(cal)},
        nice=CAMERA_NICE).start()
    try:
        yield server
    finally:
        server.stop()


def _new_page(context: Any, traffic: Traffic, viewport: dict[str, int]) -> Any:
    page = context.new_page()
    watch_answers(page, traffic)
    page.set_viewport_size(viewport)
    return page


def _mean_chroma(page: Any) -> float:
    """The shown image's mean colourfulness (max - min channel), read back in the page. The
    page puts each new frame in the same <img> every VIEW_EVERY_MS, and while one loads the
    image has no size (a clean-clone run read 0 x 0): read it once it is whole again."""
    return float(page.evaluate("""(async () => {
        const img = document.getElementById('frame');
        for (let i = 0; i < 500 && !(img.complete && img.naturalWidth > 0); i++) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        const c = document.createElement('canvas');
        c.width = img.naturalWidth; c.height = img.naturalHeight;
        const ctx = c.getContext('2d'); ctx.drawImage(img, 0, 0);
        const d = ctx.getImageData(0, 0, c.width, c.height).data;
        let sum = 0;
        for (let i = 0; i < d.length; i += 4) {
          sum += Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]);
        }
        return sum / (d.length / 4);
    })()"""))


def _wait_ready(page: Any, server: ServerProcess, traffic: Traffic) -> tuple[str, int]:
    """Until the page says ready; what it said then (its text and the balls shown), read
    at that moment (a camera that doubts a moment later makes it say not ready again)."""
    try:
        said = page.wait_for_function("""(() => {
            const r = document.getElementById('ready');
            return r.dataset.state === 'ready' && [r.textContent, Number(r.dataset.balls)];
        })()""")  # the value itself (tests/browser/conftest.py's polling wait)
    except Exception as exc:
        raise AssertionError(f"the page never said ready: {_what_it_saw(page, server, traffic)}") from exc
    return str(said[0]), int(said[1])


def _what_it_saw(page: Any, server: ServerProcess, traffic: Traffic) -> str:
    """What the page, its requests and the camera said, for a failure's message (two
    clean-clone runs under 19% steal: the page never said ready within 30 s, cause unknown)."""
    def ask(what: Callable[[], Any]) -> Any:
        try:
            return what()
        except Exception as exc:  # a hung service or page is what this is to tell
            return f"(not known: {exc!r})"

    shown = ask(lambda: page.evaluate("""(() => {
        const r = document.getElementById('ready'), f = document.getElementById('frame');
        return {ready: r.textContent, state: r.dataset.state, balls: r.dataset.balls,
                frame: f.dataset.frame, msg: document.getElementById('msg').textContent};
    })()"""))
    camera = ask(lambda: server.get("/api/camera"))
    if isinstance(camera, dict):
        keep = ("connected", "ended", "calibrated", "frames", "fps", "sure", "state", "balls",
                "lag_ms", "cost_ms_p50", "skipped", "drained", "too_late", "live_view")
        budget = {k: camera["budget"].get(k) for k in
                  ("name", "why", "use", "limit", "looked", "not_looked", "looked_fps")}
        camera = {**{k: camera.get(k) for k in keep}, "budget": budget}
    faults = ask(lambda: [f.get("message") for f in server.get("/api/health").get("faults", [])
                          if f.get("component") == "camera"])
    asked = Counter(urlparse(u).path for u in traffic.requests
                    if not u.startswith(("blob:", "data:")))
    log = server.log.read_text(errors="replace")[-3000:]
    return (f"page {shown}; camera {camera}; camera faults {faults}; requests {dict(asked)}; "
            f"failed {traffic.failed[-10:]}; page errors {traffic.errors[-10:]}; "
            f"service log:\n{log}")


# The two tests below need the camera sure of what it sees: a camera that looks at a file in
# real time, and says "not sure" (honestly) where the machine lets it look at too few frames
# a second (CI: 1.6 a second beside three workers' Chromiums). They are serial: judged
# with about a core of their own, as the camera has on a Pi (harness/suite.py).
@pytest.mark.serial
@pytest.mark.parametrize(("name", "viewport", "lang"), [
    ("phone", {"width": 390, "height": 844}, "en"),
    ("tablet", {"width": 768, "height": 1024}, "ru"),
    ("small", {"width": 800, "height": 480}, "en"),
])
def test_the_page_shows_live_what_the_detector_sees(
        context: Any, traffic: Traffic, tmp_path: Path, sure_table: tuple[Path, Path],
        name: str, viewport: dict[str, int], lang: str) -> None:
    video, cal = sure_table
    with _camera_service(tmp_path, video, cal) as server:
        page = _new_page(context, traffic, viewport)
        page.goto(f"{server.url}/calibrate?lang={lang}")
        ready, balls = _wait_ready(page, server, traffic)
        # what the detector found (of the table's 8 balls: the detector's accuracy on
        # scenes is issue 21 points 1-3a, not this page's), in the page's language
        said = {"en": f"Ready: {balls} balls found",
                "ru": f"Готово: найдено {balls} шаров"}[lang]  # 7 and 8: "шаров"
        assert ready.startswith(said) and 7 <= balls <= 8, ready
        # the file ends; the page then shows its last frame and says so
        ended = {"en": "(the video has ended: last frame)",
                 "ru": "(видео закончилось: последний кадр)"}[lang]
        page.wait_for_function("document.getElementById('ready').textContent.endsWith("
                               f"'{ended}')")
        status = server.get("/api/camera")
        assert status["ended"] and status["calibrated"]
        # the last frame the detector looked at, as the service serves it now
        import urllib.request
        with urllib.request.urlopen(server.url + "/api/camera/view.jpg") as answer:
            last = int(answer.headers["X-Camera-Frame"])
            found = int(answer.headers["X-Camera-Balls"])
        page.wait_for_function(f"document.getElementById('frame').dataset.frame === '{last}'")
        shown = int(page.evaluate("document.getElementById('ready').dataset.balls"))
        assert shown == found and 7 <= shown <= 8, (shown, found)
        assert status["balls"] == found or last < status["frames"]
        # ready still, or, if the camera came to doubt in the file's last second (its
        # frame rate on a busy machine: the status says so), not ready and why: the page
        # says what the camera says
        text = page.inner_text("#ready")
        expected = ({"en": f"Ready: {shown} balls found", "ru": f"Готово: найдено {shown} шаров"}
                    if status["sure"] else
                    {"en": "Not ready: the camera is not sure what it sees",
                     "ru": "Не готово: камера не уверена в том, что видит"})[lang]
        assert text.startswith(expected) and text.endswith(ended), (text, status["sure"])
        # the image is what the detector saw: a frame of the camera, with its size
        assert page.evaluate("document.getElementById('marks').width") == 640
        # the whole image and the controls are on screen, the buttons thumb-sized
        box = page.locator("#frame").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"] + 1
        for button in ("#felt", "#save", "#reset"):
            b = page.locator(button).bounding_box()
            assert b["height"] >= 44 and b["y"] + b["height"] <= max(
                viewport["height"], page.evaluate("document.body.scrollHeight")), button
        shoot(page, f"calibrate-live-{name}")
        # the felt mask: the cloth turns grey in the next image the service makes
        before = _mean_chroma(page)
        page.click("#felt")
        assert page.get_attribute("#felt", "aria-pressed") == "true"
        page.wait_for_function("document.getElementById('frame').dataset.felt === '1'")
        after = _mean_chroma(page)
        assert after < 0.6 * before, (before, after)
        shoot(page, f"calibrate-live-felt-{name}")
        # the page keeps asking (about 3 a second), and the service made few images
        first = int(page.evaluate("Number(document.getElementById('frame').dataset.frame)"))
        assert first > 0
        live = server.get("/api/camera")["live_view"]
        assert live["refused"] == 0 and live["encodes"] >= 1


@pytest.mark.serial
def test_a_lost_answer_is_asked_again_and_never_said_as_no_camera(
        context: Any, traffic: Traffic, tmp_path: Path, playing_table: tuple[Path, Path]) -> None:
    """The hall's Wi-Fi loses the page's first status read, then its first image's answer:
    the page says the service did not answer (not "no camera", which would stay), asks
    again, and shows what the detector sees; an image unanswered is given up after 10 s."""
    video, cal = playing_table
    with _camera_service(tmp_path, video, cal) as server:
        page = _new_page(context, traffic, {"width": 800, "height": 480})
        held: dict[str, Any] = {}

        def hold_the_first(route: Any) -> None:
            path = urlparse(route.request.url).path
            if path in held:
                route.continue_()
            else:
                held[path] = route  # never answered by the service

        page.route("**/api/camera", hold_the_first)
        page.route("**/api/camera/view.jpg*", hold_the_first)
        page.goto(server.url + "/calibrate")
        deadline = time.monotonic() + 30
        while "/api/camera" not in held and time.monotonic() < deadline:
            page.wait_for_timeout(20)  # the route's handler is called between Playwright calls
        held["/api/camera"].abort("internetdisconnected")
        page.wait_for_function("document.getElementById('msg').textContent === "
                               "'no answer from the service: the page asks again'")
        assert page.evaluate("document.getElementById('msg').dataset.code") == "camera_unreachable"
        assert not page.evaluate("document.body.classList.contains('no-camera')")
        # asked again 2 s later; its first image is held, given up after 10 s, asked again
        _wait_ready(page, server, traffic)
        assert "/api/camera/view.jpg" in held
        views = [u for u in traffic.requests if urlparse(u).path == "/api/camera/view.jpg"]
        assert len(views) >= 2, traffic.requests
        assert page.evaluate("document.getElementById('msg').dataset.code") is None
        assert not page.evaluate("document.getElementById('felt').disabled")
        shoot(page, "calibrate-asked-again-small")


def test_saving_learns_the_balls_look_and_the_page_then_shows_them(
        context: Any, traffic: Traffic, tmp_path: Path, resting_table: tuple[Path, Path]) -> None:
    import json

    video, given = resting_table
    truth = json.loads(given.read_text())
    cal_path = tmp_path / "calibration.json"  # none yet: the page is where it is made
    with _camera_service(tmp_path, video, cal_path) as server:
        page = _new_page(context, traffic, {"width": 800, "height": 480})
        page.goto(server.url + "/calibrate")
        page.wait_for_function("document.getElementById('ready').dataset.state === 'not-ready'")
        assert "click the table's four corners" in page.inner_text("#ready")
        page.wait_for_function("document.getElementById('marks').width > 1")
        # calibrated on the video's last frame, as the fixture's comment says
        until(lambda: server.get("/api/camera")["ended"], 30.0, 0.05, "the video ended")
        box = page.locator("#marks").bounding_box()
        w, h = truth["frame_size"]
        for x, y in truth["corners"]:
            page.mouse.click(box["x"] + x * box["width"] / w, box["y"] + y * box["height"] / h)
        page.click("#save")
        page.wait_for_function("document.getElementById('msg').dataset.learned === 'true'")
        assert "It learned the balls' and the cloth's look from" in page.inner_text("#msg")
        saved = json.loads(cal_path.read_text())
        assert saved["appearance"]["balls"] >= 7
        # the same frame looked at again with the calibration just saved (the file ended)
        _wait_ready(page, server, traffic)
        assert 7 <= int(page.evaluate("document.getElementById('ready').dataset.balls")) <= 8
        shoot(page, "calibrate-learned-small")
        # corners saved again where no ball can be learned from (the frame's corner, off
        # the table): the look learned before is kept, and the page says so (issue 37)
        page.click("#reset")
        for fx, fy in ((0.02, 0.03), (0.3, 0.03), (0.3, 0.3), (0.02, 0.3)):
            page.mouse.click(box["x"] + fx * box["width"], box["y"] + fy * box["height"])
        page.click("#save")
        page.wait_for_function("document.getElementById('msg').dataset.appearance === 'kept'")
        assert "the look learned before" in page.inner_text("#msg")
        kept = json.loads(cal_path.read_text())
        assert kept["appearance"] == saved["appearance"] and kept["corners"] != saved["corners"]
        shoot(page, "calibrate-kept-small")
