"""Issue 21 point 5: the referee steps through the camera's clip on the console, frame by
frame beside the clock's times, with thumb-sized controls, at phone, tablet and 800x480
sizes; the match record and its protocol page link the match's clips."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import shoot
from tests.server import CAMERA_NICE, ServerProcess

cv2 = pytest.importorskip("cv2")
np = pytest.importorskip("numpy")

from harness.synthetic import write_video  # noqa: E402

PERIOD = 1000 / 30
N = 91  # 2 s before to 1 s after at 30 fps


def level(k: int) -> int:
    return 20 + 2 * k  # each frame's grey level tells its index


def _clips(folder: Path, rest_at: float) -> None:
    """Two clips of match 1.1 as the camera keeps them: a rest (the clock started 30 ms
    after the balls stopped) and a strike 5.67 s later (the clock stopped 30 ms after)."""
    from clock_service.edges.camera.evidence import ClipStore

    store = ClipStore(folder, 100, 10**9)
    for kind, at, step in (
            ("rest", rest_at, {"type": "clock.started", "at": rest_at + 30, "by": "camera"}),
            ("strike", rest_at + 5670, {"type": "clock.stopped", "at": rest_at + 5700,
                                        "by": "camera", "reason": "shot"})):
        frames = []
        for k in range(N):
            img = np.full((270, 480, 3), level(k), np.uint8)
            frames.append((at - 2000 + k * PERIOD,
                           cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 90])[1].tobytes()))
        store.save(f"1-{int(at)}-{kind}", {"kind": kind, "at": at, "table": "1",
                                          "match": "1.1", "clock": [step]}, frames)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    folder = tmp_path_factory.mktemp("clips")
    video = folder / "table.mp4"
    write_video(video, seconds=1, seed=3, size=(320, 180), fps=30.0)
    rest_at = (time.time() // 1 - 60) * 1000 + 200  # a minute ago, at .20 of its second
    _clips(folder / "camera-clips", rest_at)
    proc = ServerProcess(folder / "shotclock.db", env={"SHOTCLOCK_CAMERA": str(video)}, nice=CAMERA_NICE).start()
    proc.rest_at = rest_at  # type: ignore[attr-defined]
    try:
        yield proc
    finally:
        proc.stop()


def shown_level(page: Any) -> float:
    return float(page.evaluate("""(() => {
        const img = document.querySelector('#clip-view .cv-frame');
        const c = document.createElement('canvas');
        c.width = img.naturalWidth; c.height = img.naturalHeight;
        const ctx = c.getContext('2d'); ctx.drawImage(img, 0, 0);
        const d = ctx.getImageData(0, 0, c.width, c.height).data;
        let sum = 0;
        for (let i = 0; i < d.length; i += 4) sum += d[i];
        return sum / (d.length / 4);
    })()"""))


def frame_is(page: Any, k: int) -> None:
    page.wait_for_function(f"document.getElementById('clip-view').dataset.frame === '{k}'")
    assert abs(shown_level(page) - level(k)) <= 2, (k, shown_level(page))


@pytest.mark.parametrize(("name", "viewport"), [
    ("phone", {"width": 390, "height": 844}),
    ("tablet", {"width": 1024, "height": 768}),
    ("small", {"width": 800, "height": 480}),
])
def test_the_referee_steps_through_a_clip_beside_the_clocks_times(
        context: Any, server: ServerProcess, name: str, viewport: dict[str, int]) -> None:
    page = context.new_page()
    page.set_viewport_size(viewport)
    page.goto(server.url + "/referee?table=1")
    page.wait_for_function("!document.getElementById('clips-btn').classList.contains('hidden')")
    # the Video button fits in the console's bar beside the others
    for sel in ("#clips-btn", "#keys-btn", "#token-btn", "#lang"):
        box = page.locator(sel).bounding_box()
        assert box["x"] + box["width"] <= viewport["width"] and box["height"] >= 44, (sel, box)
    assert page.locator("#table-id").bounding_box()["width"] > 0  # the table's name stays
    shoot(page, f"console-video-button-{name}")
    page.click("#clips-btn")
    view = "document.getElementById('clip-view')"
    page.wait_for_function(f"{view}.dataset.state === 'ready'")
    # the newest clip opens at the frame of its instant: the strike, 2 s into its clip
    assert page.evaluate(f"{view}.dataset.clip").endswith("-strike")
    frame_is(page, 60)
    assert "Frame 61 of 91" in page.inner_text("#clip-view .cv-pos")
    times = page.locator("#clip-view .cv-times li").all_inner_texts()
    assert re.fullmatch(r"tip met the ball \d\d:\d\d:\d\d\.87", times[0]), times
    assert times[1] == "clock stopped by the camera .90", times
    # the other clip from the list: the rest
    page.click("#clip-view .cv-list button[data-clip$='-rest']")
    page.wait_for_function(f"{view}.dataset.clip.endsWith('-rest') && {view}.dataset.state === 'ready'")
    frame_is(page, 60)
    times = page.locator("#clip-view .cv-times li").all_inner_texts()
    assert re.fullmatch(r"balls stopped \d\d:\d\d:\d\d\.20", times[0]), times
    assert times[1] == "clock started by the camera .23", times
    # the controls: on screen without scrolling, thumb-sized
    for sel in (".cv-prev", ".cv-play", ".cv-next", ".cv-back"):
        box = page.locator(f"#clip-view {sel}").bounding_box()
        assert box["height"] >= 48 and box["width"] >= 48, (sel, box)
        assert box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"], (sel, box)
        assert box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"], (sel, box)
    img = page.locator("#clip-view .cv-frame").bounding_box()
    assert img["width"] >= min(300, viewport["width"] - 40) and img["y"] + img["height"] <= viewport["height"]
    shoot(page, f"clip-viewer-{name}")
    # frame by frame
    page.click("#clip-view .cv-next")
    frame_is(page, 61)
    assert "+0.03 s" in page.inner_text("#clip-view .cv-pos")
    page.click("#clip-view .cv-prev")
    page.click("#clip-view .cv-prev")
    frame_is(page, 59)
    # a time of the clock's: its frame
    page.click("#clip-view .cv-times li:nth-child(2) button")
    frame_is(page, 61)  # .23 is nearest the frame at +33 ms
    # play to the end, then it stops by itself
    page.click("#clip-view .cv-play")
    page.wait_for_function(f"{view}.dataset.frame === '{N - 1}' && {view}.dataset.playing === '0'",
                           timeout=20_000)
    assert abs(shown_level(page) - level(N - 1)) <= 2
    # back to the clock
    page.click("#clip-view .cv-back")
    page.wait_for_function("!document.getElementById('clip-dialog').open")
    assert page.locator("#btn-main").is_visible()


def test_the_match_record_links_its_clips(context: Any, server: ServerProcess) -> None:
    record = server.get("/api/matches/1.1")
    assert record["clips"] == "/api/matches/1.1/clips"
    clips = server.get(record["clips"])["clips"]
    assert [c["kind"] for c in clips] == ["rest", "strike"]
    page = context.new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(server.url + "/report?match=1.1&lang=ru")
    page.click("a.clips-link")
    page.wait_for_url(re.compile(r"/clips\?match=1\.1"))
    view = "document.getElementById('clip-view')"
    page.wait_for_function(f"{view}.dataset.state === 'ready'")
    assert page.locator("#clip-view .cv-back").inner_text() == "Назад к протоколу"
    times = page.locator("#clip-view .cv-times li").all_inner_texts()
    assert times[1] == "часы остановлены камерой .90", times
    shoot(page, "clip-viewer-from-report")
    page.click("#clip-view .cv-back")
    page.wait_for_url(re.compile(r"/report\?match=1\.1"))
    # the bounds hold over HTTP too
    import urllib.error
    import urllib.request
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(server.url + "/api/camera/clips?limit=1000")
    assert refused.value.code == 422
