"""The overlay as a broadcast graphics team asks for it (issue 24 point 4): ?layout=third,
bug (corner) and clock (alone, full screen), inside the title-safe area (10%; 5% with
?safe=action), transparent around the graphic, every text readable on light and on dark
video (a contrast ratio of 4.5:1 or more, computed here from the page's own colours at both
ends of every animation, and from screenshots over a light and a dark frame), in-and-out
animations that never hide a change of state, and a clock-only mode from 10 s down."""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np
import pytest

from harness.server import Service
from tests.browser.conftest import FULL_HD, SCREENSHOTS, make_table, shoot

pytestmark = pytest.mark.browser

W, H = FULL_HD["width"], FULL_HD["height"]
LIGHT, DARK = (255, 255, 255), (0, 0, 0)

# Every visible text of the overlay with its colour and the backgrounds behind it (each
# ancestor's colour, gradient stops and opacity), for the contrast computed in Python.
MEASURE = """() => {
  const parse = (c) => {
    const m = /rgba?\\(([^)]+)\\)/.exec(c || "");
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const out = [];
  for (const el of document.querySelectorAll("#stage *")) {
    const own = [...el.childNodes].filter((n) => n.nodeType === 3 && n.textContent.trim())
      .map((n) => n.textContent.trim()).join(" ");
    if (!own || !el.getClientRects().length) continue;
    const style = getComputedStyle(el);
    if (style.visibility === "hidden") continue;
    const chain = [];
    for (let e = el; e && e !== document.documentElement; e = e.parentElement) chain.unshift(e);
    let opacity = 1;
    const layers = [];
    for (const e of chain) {
      const s = getComputedStyle(e);
      opacity *= Number(s.opacity);
      layers.push({ bg: parse(s.backgroundColor), stops: (s.backgroundImage.match(/rgba?\\([^)]+\\)/g) || []).map(parse), opacity });
    }
    if (opacity < 0.01) continue; // off air
    out.push({ text: own.slice(0, 40), where: el.id || el.className, fg: parse(style.color), layers, opacity });
  }
  return out;
}"""

# Both ends of every running animation: each one paused at its start, measured, at the end
# of its first iteration, measured, then played on.
EXTREMES = """(measure) => {
  const measureFn = eval(measure);
  const all = document.getAnimations();
  const results = [];
  for (const end of [false, true]) {
    for (const a of all) {
      a.pause();
      const timing = a.effect.getComputedTiming();
      a.currentTime = end ? Math.max(0, Number(timing.duration) - 1) : 0;
    }
    results.push(...measureFn());
  }
  for (const a of all) a.play();
  return results;
}"""


def luminance(rgb: tuple[float, float, float]) -> float:
    def channel(c: float) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def over(top: list[float], alpha: float, under: tuple[float, float, float]
         ) -> tuple[float, float, float]:
    return tuple(t * alpha + u * (1 - alpha) for t, u in zip(top[:3], under, strict=True))  # type: ignore[return-value]


def worst_contrast(item: dict[str, Any], video: tuple[int, int, int]) -> float:
    """The text's contrast with what is behind it over this video, the worst over the
    stops of any gradient behind it."""
    backs: list[tuple[float, float, float]] = [video]
    for layer in item["layers"]:
        colours = [c for c in [layer["bg"], *layer["stops"]] if c and c[3] > 0]
        if not colours:
            continue
        backs = [over(c, c[3] * layer["opacity"], b) for b in backs for c in colours]
    fg = item["fg"]
    return min(contrast(over(fg, fg[3] * item["opacity"], b), b) for b in backs)


def open_page(context: Any, server: Service, query: str) -> Any:
    page = context.new_page()
    page.set_viewport_size(FULL_HD)
    page.goto(f"{server.url}/overlay?{query}")
    page.wait_for_function("window.shotclockConnection && window.shotclockConnection.status === 'live'")
    return page


def settled(page: Any) -> None:
    """The in-animation over: the graphic where it stays."""
    page.wait_for_function("document.getElementById('third').getAnimations()"
                           ".every((a) => a.playState === 'finished')", timeout=5000)


def post(server: Service, table: str, command: str, **fields: Any) -> None:
    status, body = server.command(table, command, **fields)
    assert status == 200, body


def box(page: Any, selector: str) -> dict[str, float]:
    b = page.locator(selector).bounding_box()
    assert b is not None, selector
    return b


# The boxes of the graphic and the flash tab as drawn now (a hidden one has none).
DRAWN_BOXES = """() => Object.fromEntries(['third', 'flash'].map((id) => document.getElementById(id))
  .map((e) => [e.id, e.getBoundingClientRect(), getComputedStyle(e).visibility])
  .filter(([, r, visibility]) => r.width > 0 && r.height > 0 && visibility !== 'hidden')
  .map(([id, r]) => [id, {x: r.x, y: r.y, width: r.width, height: r.height}]))"""

FLASH_AT_REST = """() => {
  const flash = document.getElementById('flash'), third = document.getElementById('third');
  const still = (el) => el.getAnimations().every((a) => a.playState === 'finished');
  if (flash.classList.contains('hidden') || !still(flash) || !still(third)) return null;
  const r = flash.getBoundingClientRect();
  return {x: r.x, y: r.y, width: r.width, height: r.height};
}"""


def inside(b: dict[str, float], margin: float) -> bool:
    return (b["x"] >= W * margin - 0.5 and b["y"] >= H * margin - 0.5
            and b["x"] + b["width"] <= W * (1 - margin) + 0.5
            and b["y"] + b["height"] <= H * (1 - margin) + 0.5)


def png(data: bytes) -> np.ndarray:
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    assert image is not None
    return image  # BGR(A)


@pytest.mark.parametrize("query, where", [
    ("layout=third", "bottom"), ("layout=third&position=top", "top"),
    ("layout=bug&corner=tl", "tl"), ("layout=bug&corner=tr", "tr"),
    ("layout=bug&corner=bl", "bl"), ("layout=bug&corner=br", "br"),
    ("layout=clock", "middle"), ("layout=bug&corner=br&safe=action", "br"),
])
def test_each_layout_sits_in_the_safe_area_on_a_transparent_picture(
        shared_server: Service, context: Any, query: str, where: str) -> None:
    table = "safe" + str(abs(hash(query)) % 10_000)
    make_table(shared_server, table, players=("Александр Константинопольский", "Petrov"))
    page = open_page(context, shared_server, f"table={table}&lang=en&{query}")
    post(shared_server, table, "extension")  # the flash tab is on air too (not on the clock)
    page.wait_for_function("window.shotclockFlashes.length > 0")
    margin = 0.05 if "safe=action" in query else 0.10
    if "clock" not in query:
        # The tab is on air for 3.5 s: measured in the page at the first moment it and the
        # graphic stand still (a loaded machine took longer than that between two calls).
        flash = page.wait_for_function(FLASH_AT_REST, timeout=10_000)
        assert inside(flash, margin), flash
    settled(page)
    graphic = box(page, "#third")
    assert inside(graphic, margin), (query, graphic)
    middle = (graphic["x"] + graphic["width"] / 2, graphic["y"] + graphic["height"] / 2)
    expected = {"bottom": middle[1] > H / 2, "top": middle[1] < H / 2, "middle":
                abs(middle[0] - W / 2) < 2 and abs(middle[1] - H / 2) < 2,
                "tl": middle[0] < W / 2 and middle[1] < H / 2,
                "tr": middle[0] > W / 2 and middle[1] < H / 2,
                "bl": middle[0] < W / 2 and middle[1] > H / 2,
                "br": middle[0] > W / 2 and middle[1] > H / 2}[where]
    assert expected, (where, graphic)
    if where == "br":  # snug in the corner of its safe area
        assert abs(graphic["x"] + graphic["width"] - W * (1 - margin)) < 1.5
        assert abs(graphic["y"] + graphic["height"] - H * (1 - margin)) < 1.5
    # Names in full, nothing cut (issue 23's rule holds in every layout).
    cut = page.eval_on_selector_all(
        "#third .name, #third .info", "els => els.filter(e => e.offsetParent !== null"
        " && (e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1))"
        ".map(e => e.className + ': ' + e.textContent)")
    assert cut == [], cut
    if "clock" in query:  # the clock alone
        assert page.locator("#p0").is_hidden() and page.locator("#frames0").is_hidden()
        assert page.locator("#flash").is_hidden()
        assert graphic["height"] > H * 0.4
    # Chromium's picture of the page: transparent everywhere but the graphic. The flash tab
    # may end its hold while the picture is taken: what is drawn is what was on the page
    # just before or just after it, each measured in one call (a clean-clone run saw the
    # tab visible, then had no box for it: it ended its hold between two calls).

    def on_page() -> list[dict[str, float]]:
        page.wait_for_function("[...document.querySelectorAll('#third, #flash')].every((e) =>"
                               " e.getAnimations().every((a) => a.playState !== 'running'))",
                               timeout=5000)
        drawn: dict[str, dict[str, float]] = page.evaluate(DRAWN_BOXES)
        assert "third" in drawn, drawn
        return list(drawn.values())

    drawn = on_page()
    image = png(page.screenshot(omit_background=True))
    drawn += on_page()
    assert image.shape[2] == 4
    alpha = image[:, :, 3]
    for x, y in [(2, 2), (W - 3, 2), (2, H - 3), (W - 3, H - 3), (W // 2, 5), (5, H // 2)]:
        assert alpha[y, x] == 0, (query, x, y)
    assert alpha[int(middle[1]), int(middle[0])] >= 220  # the panels: 90% and more
    outside = alpha.copy()
    for b in drawn:  # with room for the box shadow (30 px blur, 8 px down)
        outside[max(0, int(b["y"]) - 40):int(b["y"] + b["height"]) + 50,
                max(0, int(b["x"]) - 40):int(b["x"] + b["width"]) + 40] = 0
    assert int(outside.max()) == 0, f"{query}: something drawn outside the graphic"
    shoot(page, f"overlay-{query.replace('&', '-').replace('=', '_')}")


def test_every_text_is_readable_on_light_and_dark_video(
        shared_server: Service, context: Any) -> None:
    table = "contrast"
    make_table(shared_server, table, race_to=1,
               # A long shot: measuring nine pages took over 30 s on a loaded machine, and
               # the clock ran out before the test set its time to the warnings.
               profile={"shot_ms": 600_000, "floor_ms": 20_000, "extension_ms": 2000,
                        "warnings_ms": [10_000, 5000]})
    pages = {f"{theme}/{layout}": open_page(
        context, shared_server, f"table={table}&lang=ru&theme={theme}&layout={layout}")
        for theme in ("dark", "light", "green") for layout in ("third", "bug", "clock")}
    worst: dict[str, tuple[float, str]] = {}
    seen: set[str] = set()

    def measure(state: str, again: Any = None) -> None:
        for name, page in pages.items():
            if again is not None:  # the state made again before each page's measure
                again(page)
            for item in page.evaluate(EXTREMES, MEASURE):
                seen.add(item["where"])
                for video_name, video in (("light", LIGHT), ("dark", DARK)):
                    ratio = worst_contrast(item, video)
                    key = f"{name} {state} {item['where']} {item['text']!r} on {video_name} video"
                    if ratio < worst.get("min", (99.0, ""))[0]:
                        worst["min"] = (ratio, key)
                    assert ratio >= 4.5, f"{key}: contrast {ratio:.2f} {item}"

    def wait_all(expression: str) -> None:
        for page in pages.values():
            page.wait_for_function(expression, timeout=10_000)

    def tab_on_air(page: Any) -> None:
        """The event's tab back on air if its timer took it off: it is on air 3.5 s, and
        waiting for nine pages and measuring them takes longer on a loaded machine (issue
        18), which left the tab unmeasured. What is measured is its look (the stylesheet),
        which the timer does not change; its kind is checked to be the event's."""
        page.evaluate("() => { const f = document.getElementById('flash');"
                      " if (f.dataset.kind) f.classList.remove('hidden'); }")

    measure("ready")
    post(shared_server, table, "extension")
    wait_all("document.querySelector('#flash').dataset.kind === 'extension' || "
             "new URLSearchParams(location.search).get('layout') === 'clock'")
    measure("extension", tab_on_air)
    post(shared_server, table, "start")
    measure("running")
    # The warning (10 s and under) and the critical stage (5 s and under) last seconds while
    # the clock runs, and measuring nine pages can take longer on a busy machine: the time
    # is set again before each page is measured.

    def set_running(remaining_ms: int) -> None:
        """The clock running with this much left. Measuring one page took over 9 s once on a
        loaded machine, so the clock may have run out meanwhile: the referee's way back is
        undo (I17: the expiry stands until undone; undo leaves the clock paused)."""
        status, body = shared_server.command(table, "set_time", remaining_ms=remaining_ms)
        if status == 409 and body["error"]["code"] == "expired":
            post(shared_server, table, "undo")
            post(shared_server, table, "set_time", remaining_ms=remaining_ms)
            post(shared_server, table, "resume")
        else:
            assert status == 200, body

    def at(remaining_ms: int, stage: str) -> Any:
        def again(page: Any) -> None:
            set_running(remaining_ms)
            page.wait_for_function(
                f"document.querySelector('#third').dataset.stage === '{stage}'", timeout=10_000)
        return again

    measure("warning", at(9000, "warning"))
    measure("critical", at(4500, "critical"))
    set_running(4500)  # (time left to pause in)
    post(shared_server, table, "pause")
    wait_all("document.querySelector('#third').dataset.stage === 'paused'")
    measure("paused")
    post(shared_server, table, "resume")
    wait_all("document.querySelector('#third').dataset.stage === 'expired'")
    # the expiry: flashing centre, the time foul (amber mark), the tab
    wait_all("document.querySelector('#flash').dataset.kind === 'expired' || "
             "new URLSearchParams(location.search).get('layout') === 'clock'")  # (no tabs there)
    measure("expired", tab_on_air)
    post(shared_server, table, "hand_back")
    post(shared_server, table, "foul", reason="push shot", player=0)  # the second: red, lost
    wait_all("document.querySelector('#third').dataset.stage === 'frame_over'")
    wait_all("document.querySelector('#flash').dataset.kind === 'match_won' || "
             "new URLSearchParams(location.search).get('layout') === 'clock'")  # (no tabs there)
    measure("match over", tab_on_air)
    assert {"clock", "name", "flash"} <= {w.split()[0] for w in seen if w} | seen, seen
    print(f"lowest contrast: {worst['min'][0]:.2f} ({worst['min'][1]})")


def test_screenshots_over_a_light_and_a_dark_frame(
        shared_server: Service, context: Any) -> None:
    """The overlay in an iframe over a picture, as OBS composes it: the digits and the names
    keep 4.5:1 with their panel in the pixels themselves."""
    table = "frames"
    make_table(shared_server, table, players=("Ivanov", "Petrov"))
    frames = {"light": "linear-gradient(135deg, #ffffff, #f1efe6 40%, #d9f0ff)",
              "dark": "linear-gradient(135deg, #000000, #1b1f24 50%, #0b2a1a)"}
    for layout in ("third", "bug", "clock"):
        url = f"{shared_server.url}/overlay?table={table}&lang=en&layout={layout}"
        for name, picture in frames.items():
            page = context.new_page()
            page.set_viewport_size(FULL_HD)
            page.set_content(
                f'<body style="margin:0;background:{picture}">'
                f'<iframe src="{url}" style="border:0;width:{W}px;height:{H}px;display:block">'
                "</iframe></body>")
            frame = page.frame_locator("iframe")
            frame.locator("#clock").wait_for()
            inner = next(f for f in page.frames if "/overlay" in f.url)
            for _ in range(500):
                if inner.evaluate("window.shotclockConnection?.status === 'live' && "
                                  "document.getElementById('third').getAnimations()"
                                  ".every((a) => a.playState === 'finished')"):
                    break
                page.wait_for_timeout(20)
            shot = page.screenshot()
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            (SCREENSHOTS / f"overlay-{layout}-over-{name}-frame.png").write_bytes(shot)
            image = png(shot)
            checked = ["#clock"] + (["#p0 .name"] if layout != "clock" else [])
            for selector in checked:
                b = frame.locator(selector).bounding_box()
                assert b is not None
                crop = image[int(b["y"]) + 2:int(b["y"] + b["height"]) - 2,
                             int(b["x"]) + 2:int(b["x"] + b["width"]) - 2, :3]
                ratio = pixel_contrast(crop)
                assert ratio >= 4.5, f"{layout} {selector} over a {name} frame: {ratio:.2f}"


def pixel_contrast(crop: np.ndarray) -> float:
    """Text and panel from the pixels: the panel is the commonest colour, the text the
    commonest colour far from it (glyph interiors, not their anti-aliased edges)."""
    # (with numpy: a Counter of pixel tuples took 14 s of the suite's CPU, issue 18)
    flat = crop.reshape(-1, 3).astype(np.int32)
    codes, counts = np.unique(flat[:, 0] << 16 | flat[:, 1] << 8 | flat[:, 2], return_counts=True)
    colours = np.stack([codes >> 16, codes >> 8 & 255, codes & 255], axis=1)
    panel = colours[np.argmax(counts)]
    far = np.abs(colours - panel).sum(axis=1) > 150
    assert far.any(), "no text pixels found"
    text = colours[far][np.argmax(counts[far])]
    bgr = lambda c: (int(c[2]), int(c[1]), int(c[0]))  # noqa: E731
    return contrast(bgr(text), bgr(panel))


def test_clock_only_from_ten_seconds_and_animations_never_hide_a_change(
        shared_server: Service, context: Any) -> None:
    table = "tenonly"
    make_table(shared_server, table, profile={"shot_ms": 12_000, "floor_ms": 8000,
                                              "extension_ms": 2000, "warnings_ms": [10_000]})
    page = open_page(context, shared_server, f"table={table}&lang=en&layout=clock&from=10")
    # Every animation frame: on or off air, the graphic's opacity, the digits.
    page.evaluate("""() => {
      window.airSamples = [];
      const third = document.getElementById('third');
      const sample = () => {
        window.airSamples.push([third.dataset.air, Number(getComputedStyle(third).opacity),
          document.getElementById('clock').textContent, performance.now()]);
        requestAnimationFrame(sample);
      };
      requestAnimationFrame(sample);
    }""")
    assert page.evaluate("document.getElementById('third').dataset.air") == "off"
    # The graphic as it comes on air, taken by the page at that moment: "10" is on air 1 s
    # and "9" the next, and a loaded machine can spend that on two calls from here (issue 18).
    page.evaluate("""() => {
      const third = document.getElementById('third');
      const seen = new MutationObserver(() => {
        if (third.dataset.air !== 'on') return;
        seen.disconnect();
        window.firstOnAir = { opacity: getComputedStyle(third).opacity,
          text: document.getElementById('clock').textContent,
          animations: third.getAnimations().map((a) => a.effect.getKeyframes()
            .flatMap((k) => Object.keys(k)).filter((p) => !['offset', 'easing', 'composite', 'computedOffset'].includes(p))) };
      });
      seen.observe(third, { attributes: true, attributeFilter: ['data-air'] });
    }""")
    post(shared_server, table, "start")  # 12 s: off air until 10 s are left
    on = page.wait_for_function("window.firstOnAir || null", timeout=8000)
    assert on["opacity"] == "1" and on["text"] in ("10", "9"), on
    assert all("opacity" not in props for props in on["animations"]), on  # it moves in
    post(shared_server, table, "shot")  # the shot played: nothing to show: it fades out
    page.wait_for_function("document.getElementById('third').dataset.air === 'off'")
    page.wait_for_function("Number(getComputedStyle(document.getElementById('third')).opacity) === 0",
                           timeout=3000)
    post(shared_server, table, "start")
    post(shared_server, table, "set_time", remaining_ms=3000)  # on air at once, in tenths
    page.wait_for_function("document.getElementById('third').dataset.air === 'on'")
    page.wait_for_function("document.getElementById('third').dataset.stage === 'expired'",
                           timeout=8000)
    # The page's sampler has recorded a frame since the expiry was drawn (it lagged a frame
    # behind the stage on CI: the last sample still read 0.1).
    page.wait_for_function("(s => s.length && s[s.length - 1][2] === '0.0')(window.airSamples)")
    samples = page.evaluate("window.airSamples")
    assert len(samples) > 60
    on_air = [s for s in samples if s[0] == "on"]
    assert on_air and all(s[1] == 1 for s in on_air), \
        [s for s in on_air if s[1] != 1][:5]  # never faded in, never half there
    # On air: only the last 10 s and the expiry, the digits as the table shows them.
    for _, _, text, _ in on_air:
        assert text == "0.0" or text == "10" or float(text) <= 10, text
    assert on_air[-1][2] == "0.0"
    # Off air: invisible but for the out-fade (0.3 s) after going off.
    went_off = [samples[i][3] for i in range(1, len(samples))
                if samples[i][0] == "off" and samples[i - 1][0] == "on"]
    for _, opacity, _, at in (s for s in samples if s[0] == "off" and s[1] > 0):
        assert any(0 <= at - t <= 600 for t in went_off), (opacity, at, went_off)
    shoot(page, "overlay-clock-from-10-expired")
