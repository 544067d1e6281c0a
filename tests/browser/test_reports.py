"""Match records in Chromium (issue 14): a real match played over HTTP, its protocol
rendered and printed to PDF (pdftoppm -> PNG under test-artifacts/report/, looked at), the
charts' marks counted, the live /stats page and the overlay's stats lower-third, and
``shotclock report --pdf`` from the command line."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from harness.server import Service
from tests.browser.conftest import FULL_HD, shoot
from tests.server import ROOT
from tests.waiting import until

pytestmark = pytest.mark.browser

ARTIFACTS = ROOT / "test-artifacts" / "report"
# Short shots so an expiry costs 3 s; a 1 s extension. Each timed shot is a start, a sleep
# of up to 0.4 s and a shot over HTTP: 3 s leaves a loaded machine 2.6 s for the two round
# trips (with 1.5 s shots the clock could run out first, and the shot was refused).
PROFILE = {"shot_ms": 3000, "full_rounds": 2, "step_ms": 250, "floor_ms": 2000,
           "extension_ms": 1000, "warnings_ms": [500]}
EARLY_POT = {
    "colour_potted": True,
    "call": {"pocket": "bottom_left", "cushions": ["right_bottom"], "contacts": ["cue>colour"],
             "shot_type": "early_cushion"},
    "route": {"pocket": "bottom_left", "path": ["cue>colour", "right_bottom"]},
}


def tenths(ms: int) -> str:
    """As the protocol and the pages print seconds: tenths, half up."""
    return f"{(ms + 50) // 100 // 10}.{(ms + 50) // 100 % 10}"


def ok(server: Service, table: str, command: str, **fields: Any) -> dict[str, Any]:
    status, body = server.command(table, command, **fields)
    assert status == 200, (command, body)
    return body  # type: ignore[no-any-return]


def timed(server: Service, table: str, seconds: float) -> None:
    ok(server, table, "start")
    time.sleep(seconds)  # real time is the data: the shot's duration in the report
    ok(server, table, "shot")


@pytest.fixture(scope="module")
def match(shared_server: Service) -> dict[str, Any]:
    """A race to 2 played over HTTP in real time: Ivanov 1 : 1 Petrov so far ... 2 : 1."""
    s, table = shared_server, "rep"
    status, state = s.post("/api/tables", {
        "id": table, "players": ["Иванов", "Petrov <b>"], "profile": PROFILE, "race_to": 2,
        "event": "Кубок города", "referee": "Орлов"})
    assert status == 201, state
    # Frame 1: Ivanov breaks, credits 2 and plays on; then nothing: Petrov's visit.
    timed(s, table, 0.2)
    ok(s, table, "result", whites_potted=2, legal_break=True)
    timed(s, table, 0.3)
    ok(s, table, "result", whites_potted=0)
    # Petrov: an extension while counting, a shot, then he pots the called colour: 0-1.
    ok(s, table, "start")
    time.sleep(0.2)  # real time is the data: a shot that took time, with its extension
    ok(s, table, "extension")
    time.sleep(0.2)
    ok(s, table, "shot")
    ok(s, table, "result", whites_potted=1)
    timed(s, table, 0.1)
    ok(s, table, "result", **EARLY_POT)
    ok(s, table, "new_frame")
    # Frame 2: Petrov breaks and lets the clock run out (time foul 12.4): Ivanov's visit.
    ok(s, table, "start")
    until(lambda: s.get(f"/api/tables/{table}")["phase"] == "expired", timeout=15.0,
          what="the 1.5 s shot to expire")
    timed(s, table, 0.2)  # Ivanov accepts: the break is still to be played (4.2)
    ok(s, table, "result", whites_potted=0, legal_break=True)
    ok(s, table, "new_frame", winner=0, reason="conceded")  # 1-1: the referee awards frame 2
    # Frame 3: Ivanov breaks, credits 1, then pots the called colour: 2-1, over.
    timed(s, table, 0.15)
    ok(s, table, "result", whites_potted=1, legal_break=True)
    timed(s, table, 0.25)
    ok(s, table, "result", **EARLY_POT)
    record = s.get(f"/api/matches/{table}.1")
    assert (record["status"], record["score"]) == ("over", [2, 1])
    return record


def test_the_protocol_renders_prints_to_a4_and_shows_the_figures(
        shared_server: Service, context: Any, match: dict[str, Any]) -> None:
    page = context.new_page()
    page.goto(f"{shared_server.url}/report?match=rep.1&lang=ru")
    expect(page.locator("h1")).to_have_text("Протокол матча")
    expect(page.locator('[data-field="score"]')).to_have_text("2 : 1")
    expect(page.locator('[data-field="event"]')).to_have_text("Кубок города")
    expect(page.locator('[data-field="player1"]')).to_have_text("Petrov <b>")  # text, not markup
    stats = match["players_stats"]
    for player in (0, 1):
        cell = page.locator(f'table.stats [data-stat="mean_ms"][data-player="{player}"]')
        expect(cell).to_have_text(tenths(stats[player]["mean_ms"]))
        shots = page.locator(f'table.stats [data-stat="shots"][data-player="{player}"]')
        expect(shots).to_have_text(str(stats[player]["shots"]))
    expect(page.locator('td[data-stat="reason"]')).to_have_text([
        "забит цветной (3.2)", "решение судьи", "забит цветной (3.2)"])
    expect(page.locator('td[data-stat="rule"]')).to_have_text(["12.4"])
    # The charts' marks: a bar per (player, 5 s bin) holding every played shot, a point
    # per played shot, a cross per time foul, an extension box, a visit bar per visit.
    played = [s for f in match["frames"] for s in f["shots"] if s["outcome"] == "shot"]
    counts = page.eval_on_selector_all(
        ".chart-distribution rect.bar",
        "bars => bars.map(b => [Number(b.dataset.player), Number(b.dataset.count)])")
    for player in (0, 1):
        assert sum(c for p, c in counts if p == player) == stats[player]["shots"]
    assert page.locator(".chart-shots circle.point").count() == len(played) == 7
    assert page.locator(".chart-shots path.time-foul").count() == 1
    assert page.locator(".chart-shots rect.extension").count() == 1
    visits = sum(len(f["visit_log"]) for f in match["frames"])
    assert page.locator(".chart-timeline rect.visit").count() == visits
    shoot(page, "report-screen-ru")

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pdf = ARTIFACTS / "protocol-ru.pdf"
    page.emulate_media(media="print")
    page.pdf(path=str(pdf), format="A4", prefer_css_page_size=True)
    pngs = to_png(pdf)
    assert 1 <= len(pngs) <= 2, pngs  # one or two A4 pages


def to_png(pdf: Path) -> list[Path]:
    """pdftoppm (poppler-utils): every page to PNG beside the PDF, to look at."""
    pdftoppm = shutil.which("pdftoppm")
    assert pdftoppm, "pdftoppm missing: apt-get install poppler-utils (make test-deps)"
    for old in pdf.parent.glob(f"{pdf.stem}-*.png"):
        old.unlink()
    subprocess.run([pdftoppm, "-r", "80", "-png", str(pdf), str(pdf.with_suffix(""))],
                   check=True, timeout=60)
    return sorted(pdf.parent.glob(f"{pdf.stem}-*.png"))


def test_shotclock_report_prints_the_pdf_from_the_store(
        shared_server: Service, match: dict[str, Any]) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pdf = ARTIFACTS / "protocol-cli-en.pdf"
    pdf.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "clock_service", "report", "rep", "--db",
         str(shared_server.db), "--pdf", str(pdf), "--lang", "en", "--csv", "-"],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    rows = done.stdout.strip().splitlines()
    assert rows[0].startswith("match,frame,visit,round,player,limit_ms,used_ms,extension")
    assert len(rows) == 1 + sum(len(f["shots"]) for f in match["frames"])
    assert 1 <= len(to_png(pdf)) <= 2


def test_the_stats_page_follows_the_match_live(shared_server: Service, context: Any,
                                               match: dict[str, Any]) -> None:
    s = shared_server
    status, _ = s.post("/api/tables", {"id": "live", "players": ["Sidorov", "Kozlov"],
                                       "profile": PROFILE})
    assert status == 201
    timed(s, "live", 0.3)
    ok(s, "live", "result", whites_potted=1, legal_break=True)
    page = context.new_page()
    page.set_viewport_size(FULL_HD)
    page.goto(f"{s.url}/stats?table=live&lang=en")
    shots = page.locator('#figures td[data-stat="shots"][data-player="0"]')
    expect(shots).to_have_text("1")
    expect(page.locator("#match-id")).to_have_text("live.1")
    timed(s, "live", 0.4)  # a second shot: the page asks again by itself
    expect(shots).to_have_text("2", timeout=8000)
    mean = s.get("/api/matches/live.1?shots=false")["players_stats"][0]["mean_ms"]
    expect(page.locator('#figures td[data-stat="mean_ms"][data-player="0"]')).to_contain_text(
        tenths(mean))
    for chart in ("distribution", "shots", "timeline"):
        page.wait_for_function(
            f"document.getElementById('chart-{chart}').complete && "
            f"document.getElementById('chart-{chart}').naturalWidth > 0")
    shoot(page, "stats-1080p")


def test_the_overlay_stats_lower_third(shared_server: Service, context: Any,
                                       match: dict[str, Any]) -> None:
    page = context.new_page()
    page.set_viewport_size(FULL_HD)
    page.goto(f"{shared_server.url}/overlay?table=rep&stats=1&lang=en")
    strip = page.locator("#stats-third")
    expect(strip).to_be_visible()
    stats = match["players_stats"]
    for player in (0, 1):
        side = strip.locator(f'.stats-side[data-player="{player}"]')
        expect(side.locator(".avg-v")).to_have_text(f"{tenths(stats[player]['mean_ms'])} s")
        expect(side.locator(".tf-v")).to_have_text(str(stats[player]["time_fouls"]))
    shoot(page, "overlay-stats-1080p")
