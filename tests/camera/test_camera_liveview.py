"""Issue 21 point 3b: what the detector sees, as the calibration page shows it. The image
(outlines where the balls are, the felt mask), and its bounds: one encode at a time, at
most MAX_RATE new images a second for all clients, waiting requests capped."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from clock_service.edges.camera.geometry import Calibration
from clock_service.edges.camera.liveview import LiveView, Seen, outlines, render_seen

cv2 = pytest.importorskip("cv2")
np = pytest.importorskip("numpy")

SIZE = (1280, 720)
CORNERS = ((140.0, 110.0), (1140.0, 110.0), (1140.0, 610.0), (140.0, 610.0))
FELT = (40, 115, 30)


def table(balls_mm: list[tuple[float, float]]) -> tuple[Any, Calibration, Seen]:
    """A flat green bed with white balls at ``balls_mm``, and the detector's view of it."""
    from clock_service.edges.camera.detect import BallDetector

    cal = Calibration(CORNERS, SIZE)
    img = np.full((SIZE[1], SIZE[0], 3), 60, np.uint8)
    to_frame = np.linalg.inv(cal.image_to_bed(1.0))
    bed = np.array(CORNERS, np.int32)
    cv2.fillConvexPoly(img, bed, FELT)
    for x, y in balls_mm:
        u, v, w = to_frame @ np.array([x, y, 1.0])
        r = cal.ball_mm / 2 * (CORNERS[1][0] - CORNERS[0][0]) / cal.table_mm[0]
        cv2.circle(img, (round(u / w), round(v / w)), round(r), (235, 235, 235), -1,
                   cv2.LINE_AA)
    detector = BallDetector(cal, frame_size=SIZE)
    view = detector.detect(img)
    seen = Seen(img, 1000.0, 1, tuple((d.x, d.y, d.kind) for d in view.detections), view.felt,
                view.felt_share, detector.scale, detector.calibration, cal)
    return img, cal, seen


def decode(jpeg: bytes) -> Any:
    return cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)


def test_the_outlines_ring_each_ball_and_the_felt_mask_greys_the_cloth() -> None:
    spots = [(600.0, 500.0), (1800.0, 900.0), (2800.0, 300.0)]
    img, cal, seen = table(spots)
    assert len(seen.balls) == 3
    to_frame = np.linalg.inv(cal.image_to_bed(1.0))
    for (x, y), line in zip(sorted(spots), sorted(outlines(seen), key=lambda ln: ln[0]),
                            strict=True):
        u, v, w = to_frame @ np.array([x, y, 1.0])
        radius = [math.dist((u / w, v / w), p) for p in line]
        ball_px = cal.ball_mm / 2 * 1000 / cal.table_mm[0]
        assert all(0.8 * ball_px < r < 1.25 * ball_px for r in radius), (radius, ball_px)
    plain = decode(render_seen(seen, felt=False))
    masked = decode(render_seen(seen, felt=True))
    assert plain.shape[1] == 800  # 1280 wide, shrunk to the page's width
    k = 800 / SIZE[0]
    # the ring is drawn round the ball (magenta 1.5 radii out), not over it
    (x, y), _ = spots[0], None
    u, v, w = to_frame @ np.array([x, y, 1.0])
    cx, cy = u / w * k, v / w * k
    ring_r = 1.5 * cal.ball_mm / 2 * 1000 / cal.table_mm[0] * k
    ring = [plain[round(cy + ring_r * math.sin(a)), round(cx + ring_r * math.cos(a))]
            for a in np.linspace(0, 2 * math.pi, 12, endpoint=False)]
    assert sum(1 for b, g, r in ring if b > 150 and r > 150 and g < 120) >= 8, ring
    # the cloth is washed grey where it is felt (its colour gone); a ball and the floor not
    def chroma(px: Any) -> int:
        return int(px.max()) - int(px.min())

    felt_px = (round(1100 * k), round(400 * k))  # bare felt
    assert chroma(plain[felt_px[1], felt_px[0]]) > 60
    assert chroma(masked[felt_px[1], felt_px[0]]) < 0.4 * chroma(plain[felt_px[1], felt_px[0]])
    assert abs(int(masked[round(cy), round(cx)].sum()) - int(plain[round(cy), round(cx)].sum())) < 40
    assert abs(int(masked[20, 20].sum()) - int(plain[20, 20].sum())) < 30


def test_all_clients_together_get_at_most_max_rate_images_a_second() -> None:
    _, cal, seen = table([(600.0, 500.0)])

    async def scenario() -> None:
        live = LiveView(max_rate=4.0, max_waiting=16)
        # 30 clients at once for the same frame: one encode, every one gets it
        images = await asyncio.gather(*(live.image(seen, cal, felt=False) for _ in range(30)))
        assert live.encodes == 1 and {im.number for im in images} == {1}
        assert images[0].balls == 1 and images[0].size == SIZE
        # a newer frame asked for at once: the image already made (younger than 1/4 s)
        newer = Seen(seen.frame, seen.at + 33, 2, seen.balls, seen.felt, seen.felt_share,
                     seen.bed_scale, seen.calibration, cal)
        again = await live.image(newer, cal, felt=False)
        assert again.number == 1 and live.encodes == 1
        # the felt mask is its own image
        await live.image(newer, cal, felt=True)
        assert live.encodes == 2
        # a new calibration: the same frame seen again by its detector
        moved = Calibration(tuple((x + 2, y) for x, y in CORNERS), SIZE)
        live.min_interval = 0.0
        image = await live.image(newer, moved, felt=False)
        assert live.encodes == 3 and image.of is moved and image.balls == 1

    asyncio.run(scenario())


def test_requests_waiting_for_an_encode_are_capped() -> None:
    _, cal, seen = table([])

    async def scenario() -> None:
        live = LiveView(max_rate=1000.0, max_waiting=3)
        waiting = []
        async with live._lock:  # an encode in progress
            for _ in range(3):
                waiting.append(asyncio.ensure_future(live.image(seen, cal, felt=False)))
            await asyncio.sleep(0)
            assert live.busy()
        await asyncio.gather(*waiting)
        assert not live.busy() and live.waiting == 0

    asyncio.run(scenario())
