"""The camera's pure parts, table-driven: the watcher (rest and strike from detections,
time injected), the assist/auto policy, the geometry and the source setting."""

from __future__ import annotations

import math

import pytest

from clock_service.edges.camera.core import (
    Detection,
    Observation,
    Rest,
    Strike,
    Sure,
    Unsure,
    Watcher,
    WatchSettings,
)
from clock_service.edges.camera.geometry import Calibration, CalibrationError
from clock_service.edges.camera.modes import TableView, command_for
from clock_service.edges.camera.pipeline import look_at
from clock_service.edges.camera.source import parse_source, redact

FRAME = 1000 / 30
BALLS = [(500.0, 500.0, "white"), (1500.0, 800.0, "white"), (2500.0, 1200.0, "colour")]


def still(at: float, moved: dict[int, tuple[float, float]] | None = None,
          hidden: frozenset[int] = frozenset(), felt: dict[int, float] | None = None,
          extra: tuple[Detection, ...] = (), quality: float = 1.0) -> Observation:
    balls = []
    for i, (x, y, kind) in enumerate(BALLS):
        if i in hidden:
            continue
        if moved and i in moved:
            x, y = moved[i]
        balls.append(Detection(x, y, kind))
    return Observation(at, tuple(balls) + extra, felt or {}, quality)


def run(watcher: Watcher, frames: list[Observation]) -> list[object]:
    out: list[object] = []
    for obs in frames:
        out += watcher.feed(obs)
    return out


def at_rest(watcher: Watcher, start: float = 0.0) -> float:
    """Feed still frames until the watcher says rest; the time after."""
    t = start
    while watcher.state != "rest":
        watcher.feed(still(t))
        t += FRAME
    return t


@pytest.mark.parametrize(("rest_ms", "frames_needed"), [(300, 10), (500, 16), (100, 4)])
def test_rest_needs_rest_ms_of_stillness_and_is_timed_at_its_first_frame(
        rest_ms: float, frames_needed: int) -> None:
    w = Watcher(WatchSettings(rest_ms=rest_ms))
    frames = [still(1000 + k * FRAME) for k in range(frames_needed)]
    decisions = run(w, frames)
    assert decisions == [Rest(1000.0, frames[-1].at, 3)]
    assert frames[-1].at - 1000 >= rest_ms and frames[-2].at - 1000 < rest_ms


@pytest.mark.parametrize(("jitter_mm", "rests"), [
    (0.0, 1), (3.0, 1), (4.9, 1),
    (6.0, 1),  # seen at two places 6 mm apart, again and again: one ball, the detector's
    (30.0, 1),  # noise (a touching ball, a hand beside it): two balls cannot overlap
])
def test_detection_noise_is_not_a_ball_moving(jitter_mm: float, rests: int) -> None:
    w = Watcher()
    frames = [still(k * FRAME, {0: (500 + (jitter_mm if k % 2 else 0), 500)})
              for k in range(30)]
    assert sum(isinstance(d, Rest) for d in run(w, frames)) == rests


def test_a_ball_coming_back_over_its_own_path_is_not_at_rest() -> None:
    # Off a cushion (or another ball) a ball passes the places it rolled over before:
    # seen at each of them twice, with other places in between, it is not a ball seen
    # still there (the bench session's false rest and strike at 477.1 s, seed 7).
    out = [300 - 32 * k for k in range(9)]  # to the cushion at 44
    back = [44 + 20 * j - 0.4 * j * j for j in range(1, 26)]  # back, slowing to a stop
    xs = out + back + [back[-1]] * 15
    w = Watcher()
    frames = [still(k * FRAME, {1: (x, 800)}) for k, x in enumerate(xs)]
    rests = [d for d in run(w, frames) if isinstance(d, Rest)]
    stopped = len(out) + len(back) - 1
    assert len(rests) == 1 and rests[0].at >= (stopped - 4) * FRAME, (rests, stopped)


@pytest.mark.parametrize("creep_mm", [2.0, 4.0, 6.0])
def test_a_ball_creeping_on_keeps_the_balls_from_rest(creep_mm: float) -> None:
    # slower than still_mm a frame, but never back: after a few frames it is elsewhere
    w = Watcher()
    frames = [still(k * FRAME, {0: (500 + creep_mm * k, 500)}) for k in range(40)]
    assert [d for d in run(w, frames) if isinstance(d, Rest)] == []


def test_a_rolling_ball_delays_rest_until_it_stops() -> None:
    w = Watcher()
    frames = [still(k * FRAME, {1: (1500 + 10 * min(k, 20), 800)}) for k in range(40)]
    rests = [d for d in run(w, frames) if isinstance(d, Rest)]
    assert len(rests) == 1 and rests[0].at == pytest.approx(20 * FRAME)


@pytest.mark.parametrize(("looked", "decides"), [
    (lambda k: True, True), (lambda k: k % 2 == 1, True), (lambda k: k % 2 == 0, True),
    (lambda k: k % 3 == 0, False), (lambda k: k % 3 == 1, False),
    (lambda k: k % 3 == 2, False),
])
def test_frames_not_looked_at_time_the_rest_within_a_frame(looked: object,
                                                          decides: bool) -> None:
    # a camera thread behind real time looks at one frame in 2 or 3 while balls roll
    # (pipeline.look_at); the ball stops at frame 20: the rest is put among the frames
    # left out, within one frame of it. One frame in 3 is 10 a second looked at: too few
    # to tell a rest within 400 ms, not sure (issue 37 point 5: the frames looked at
    # count, not the frames captured)
    w = Watcher()
    decisions: list[object] = []
    for k in range(50):
        at = k * FRAME
        if k < 5 or looked(k):  # type: ignore[operator]
            decisions += w.feed(still(at, {1: (1500 + 10 * min(k, 20), 800)}))
        else:
            w.skip(at)
    rests = [d for d in decisions if isinstance(d, Rest)]
    if not decides:
        assert rests == [] and not w.sure, decisions
        return
    assert len(rests) == 1 and abs(rests[0].at - 20 * FRAME) <= FRAME + 1e-6, rests


@pytest.mark.parametrize(("lag_ms", "state", "left_out", "look"), [
    (30.0, "moving", 0, True),  # keeping up: every frame
    (240.0, "moving", 0, True),
    (300.0, "moving", 0, False),  # behind while balls roll: one in 2
    (300.0, "moving", 1, True),
    (600.0, "moving", 1, False),  # further behind: one in 3, never fewer
    (600.0, "moving", 2, True),
    (5000.0, "moving", 2, True),
    (300.0, "rest", 0, True),  # at rest every frame: the strike is timed to its frame
    (5000.0, "rest", 0, True),
])
def test_a_camera_behind_real_time_leaves_out_frames_only_while_balls_roll(
        lag_ms: float, state: str, left_out: int, look: bool) -> None:
    assert look_at(lag_ms, state, left_out) is look


def test_a_hidden_ball_waits_for_the_count_then_is_recounted() -> None:
    w = Watcher(WatchSettings(recount_ms=1000))
    t = at_rest(w)
    run(w, strike_frames(t, t + 3.5 * FRAME, 2.0))  # a strike: moving again
    assert w.state == "moving"
    # one ball hidden (an arm over it): no rest until recount_ms
    frames = [still(5000 + k * FRAME, hidden=frozenset({2})) for k in range(40)]
    rests = [(f.at, d) for f in frames for d in w.feed(f) if isinstance(d, Rest)]
    assert len(rests) == 1 and rests[0][0] - 5000 >= 1000 and rests[0][1].balls == 2


def strike_frames(start: float, t0: float, speed: float, felt: float = 1.0,
                  kind_ok: bool = True) -> list[Observation]:
    """Frames from ``start`` on the camera's grid; ball 0 struck at ``t0`` along +x at
    ``speed`` mm/ms; its spot shows ``felt`` once the ball is a third of a radius away."""
    frames = []
    for k in range(14):
        t = start + k * FRAME
        d = max(0.0, (t - t0) * speed)
        moved = {0: (500 + d, 500.0)} if d > 0 else None
        spot = felt if d > 0.3 * 34 else 0.0
        obs = still(t, moved, felt={1: spot})
        if not kind_ok and d > 0:
            obs = Observation(t, tuple(Detection(b.x, b.y, "colour") if b.x == 500 + d else b
                                       for b in obs.balls), obs.spots_felt)
        frames.append(obs)
    return frames


@pytest.mark.parametrize("speed", [0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("phase", [0.1, 0.5, 0.9])
def test_strike_is_the_first_frame_after_the_ball_left_its_spot(speed: float,
                                                               phase: float) -> None:
    w = Watcher()
    t = at_rest(w)
    t0 = t + 3 * FRAME + phase * FRAME  # contact between two frames
    strikes = [d for d in run(w, strike_frames(t, t0, speed)) if isinstance(d, Strike)]
    assert len(strikes) == 1
    strike = strikes[0]
    first_after = t + 4 * FRAME
    assert abs(strike.at - first_after) < 1e-6 or (  # the first frame after the contact,
        abs(strike.at - (first_after - FRAME)) < 1e-6 and phase < 0.2)  # or just before it
    assert abs(strike.estimate - t0) < 3.0
    assert strike.kind == "white" and w.state == "moving"


@pytest.mark.parametrize(("felt", "kind_ok", "strikes"), [
    (1.0, True, 1),   # the spot is bare felt and the ball runs away: a strike
    (0.3, True, 0),   # the spot is covered (an arm over the ball): no strike
    (1.0, False, 0),  # the thing away from the spot is not a ball of its kind
])
def test_a_strike_needs_a_bare_spot_and_the_ball_running_from_it(
        felt: float, kind_ok: bool, strikes: int) -> None:
    w = Watcher()
    t = at_rest(w)
    decisions = run(w, strike_frames(t, t + 5.5 * FRAME, 2.0, felt=felt, kind_ok=kind_ok))
    assert sum(isinstance(d, Strike) for d in decisions) == strikes


def test_a_cue_or_an_arm_over_still_balls_is_not_a_strike() -> None:
    w = Watcher()
    t = at_rest(w)
    frames = []
    for k in range(60):
        at = t + k * FRAME
        # an arm hides ball 1 and its spot; a hand-sized blob wanders near it; the cue's
        # shadow makes ball 0's detection shift by a third of a radius (no felt behind)
        hand = Detection(1500 + 40 * (k % 7), 870 + 10 * (k % 5), "colour")
        frames.append(still(at, {0: (500 + 11 * (k % 2), 500)}, hidden=frozenset({1}),
                            felt={1: 0.0, 2: 0.0}, extra=(hand,)))
    assert [d for d in run(w, frames) if isinstance(d, Strike)] == []
    assert w.state == "rest"


def test_a_ball_hidden_at_the_rest_joins_when_seen_still() -> None:
    w = Watcher(WatchSettings(recount_ms=200))
    t = 0.0
    while w.state != "rest":
        w.feed(still(t, hidden=frozenset({2})))
        t += FRAME
    assert len(w.spots()) == 2
    for _ in range(12):
        w.feed(still(t))
        t += FRAME
    assert len(w.spots()) == 3


@pytest.mark.parametrize(("low_frames", "decisions"), [
    (10, []),                      # a short bad spell (< 500 ms): nothing
    (20, ["unsure"]),              # 650 ms of a bad view: unsure
])
def test_a_bad_view_makes_the_watcher_unsure(low_frames: int, decisions: list[str]) -> None:
    w = Watcher()
    t = at_rest(w)
    got = run(w, [still(t + k * FRAME, quality=0.2) for k in range(low_frames)])
    assert [type(d).__name__.lower() for d in got] == decisions
    if decisions:
        assert not w.sure and w.state == "moving"
        back = run(w, [still(t + (low_frames + k) * FRAME) for k in range(40)])
        assert isinstance(back[0], Sure) and any(isinstance(d, Rest) for d in back)
        assert isinstance(got[0], Unsure)


# -- the policy --------------------------------------------------------------------------
REST = Rest(1000.0, 1300.0, 8)
STRIKE = Strike(5000.0, 5100.0, "white", (0.0, 0.0), 4990.0)


@pytest.mark.parametrize(("mode", "decision", "phase", "waiting", "sent"), [
    ("auto", REST, "ready", False, "start"),
    ("auto", REST, "ready", True, None),       # the referee's result comes first (I15)
    ("auto", REST, "expired", False, None),    # accepting after a time foul is 10.4's choice
    ("auto", REST, "running", False, None),
    ("auto", STRIKE, "running", False, "shot"),
    ("auto", STRIKE, "paused", False, None),   # the referee stopped play
    ("auto", STRIKE, "ready", False, None),
    ("assist", REST, "ready", False, None),    # assist only shows
    ("assist", STRIKE, "running", False, None),
])
def test_the_camera_sends_only_what_is_its_to_decide(mode: str, decision: Rest | Strike,
                                                    phase: str, waiting: bool,
                                                    sent: str | None) -> None:
    view = TableView(phase=phase, results_in_use=waiting, result_pending=waiting)
    command = command_for(decision, view, mode)
    assert (command.name if command else None) == sent
    if command is not None:
        assert command.by == "camera" and command.source == "camera"
        assert command.at == decision.at  # the frame's capture time


def test_table_view_knows_when_a_result_is_awaited() -> None:
    view = TableView()
    view.apply([{"type": "clock.stopped", "data": {"reason": "shot"}}], {"phase": "ready"})
    assert view.result_pending and not view.waiting_for_result  # no result used yet
    view.apply([{"type": "shot.result", "data": {}}], {"phase": "ready"})
    assert view.results_in_use and not view.result_pending
    view.apply([{"type": "clock.stopped", "data": {"reason": "shot"}}], {"phase": "ready"})
    assert view.waiting_for_result


# -- geometry and settings -------------------------------------------------------------
def test_calibration_round_trip_and_refusals(tmp_path: object) -> None:
    cal = Calibration(((100, 80), (1180, 70), (1200, 650), (90, 640)), (1280, 720))
    assert Calibration.from_dict(cal.to_dict()) == cal
    assert cal.bed_size == (512, 256)
    with pytest.raises(CalibrationError, match="4 corners"):
        Calibration(((0, 0), (1, 1), (2, 2)), (10, 10))
    with pytest.raises(CalibrationError, match="convex"):
        Calibration(((100, 80), (1200, 650), (1180, 70), (90, 640)), (1280, 720))
    with pytest.raises(CalibrationError, match="outside"):
        Calibration(((100, 80), (1180, 70), (1200, 650), (90, 2000)), (1280, 720))


@pytest.mark.parametrize(("text", "kind"), [
    ("0", "device"), ("/dev/video2", "device"), ("rtsp://u:p@cam/stream", "stream"),
    ("http://cam:8080/video", "stream")])
def test_camera_sources(text: str, kind: str) -> None:
    assert parse_source(text).kind == kind


def test_a_missing_file_is_refused_and_urls_hide_passwords() -> None:
    with pytest.raises(ValueError, match="not a device"):
        parse_source("/no/such/video.mp4")
    assert redact("rtsp://admin:secret@10.0.0.5/live") == "rtsp://10.0.0.5"
    # Issue 20, finding 7: credentials in the path or the query never shown either.
    assert redact("http://10.0.0.5:8080/video?user=admin&password=secret") == \
        "http://10.0.0.5:8080"
    assert redact("rtsp://cam.local/user=admin_password=secret_channel=1") == "rtsp://cam.local"
    assert redact("/dev/video0") == "/dev/video0"


# -- regressions from the benchmark's session (issue 15: zero missed, zero false strikes) --
EIGHT = [(400.0 + 380 * i, 300.0 + 150 * (i % 4), "colour" if i == 7 else "white")
         for i in range(8)]


def table(at: float, moved: dict[int, tuple[float, float]] | None = None,
          hidden: frozenset[int] = frozenset(), extra: tuple[Detection, ...] = (),
          felt: dict[int, float] | None = None) -> Observation:
    balls = []
    for i, (x, y, kind) in enumerate(EIGHT):
        if i in hidden:
            continue
        x, y = (moved or {}).get(i, (x, y))
        balls.append(Detection(x, y, kind))
    return Observation(at, tuple(balls) + extra, felt or {}, 1.0)


def settle8(w: Watcher, t: float = 0.0) -> float:
    while w.state != "rest":
        w.feed(table(t))
        t += FRAME
    return t


@pytest.mark.parametrize("extra_kind", ["white", "colour"])
def test_rest_comes_while_something_else_moves_over_the_bed(extra_kind: str) -> None:
    # Every detection that was not where a still ball was restarted the count: a hand the
    # detector took for a ball, moving, kept the balls from rest until the strike came
    # (missed: the watcher was not at rest).
    w = Watcher()
    run(w, [table(k * FRAME, {0: (400 + 30 * k, 300)}) for k in range(10)])  # a ball rolls
    rests = []
    for k in range(10, 40):
        hand = Detection(1500 + 23 * k, 1200 - 11 * k, extra_kind)
        rests += [d for d in w.feed(table(k * FRAME, {0: (670, 300)}, extra=(hand,)))
                  if isinstance(d, Rest)]
    assert len(rests) == 1
    assert rests[0].at == pytest.approx(9 * FRAME) and rests[0].balls == 8


def test_a_still_hand_is_no_hidden_ball_and_leaving_is_no_strike() -> None:
    # A stray hand lay still on the bed for a while: it was taken for a ball hidden at the
    # rest and given a spot; when it left, its spot showed felt and "a ball of its kind"
    # ran from it: a false strike while an arm moved over still balls.
    w = Watcher()
    t = settle8(w)
    frames = []
    for k in range(40):
        x = 2000.0 if k < 20 else 2000.0 + 40 * (k - 19)  # still 650 ms, then leaves
        frames.append(table(t + k * FRAME, extra=(Detection(x, 900, "colour"),),
                            felt=dict.fromkeys(range(1, 12), 0.0) | {9: 1.0, 10: 1.0}))
    assert [d for d in run(w, frames) if isinstance(d, Strike)] == []
    assert len(w.spots()) == 8 and w.state == "rest"


def test_the_strike_is_timed_from_the_ball_not_from_the_hand_behind_it() -> None:
    # The path back from the moving ball to its spot takes, frame by frame, the farthest
    # ball of its kind on its line: a hand behind the spot (the coloured ball's kind:
    # skin) was on that line, and the strike was put long before the contact (a true
    # strike scored as missed + false). Only what lies ahead of the spot counts.
    w = Watcher()
    t = settle8(w)
    t0 = t + 5.4 * FRAME  # contact, between two frames
    frames = []
    for k in range(12):
        at = t + k * FRAME
        d = max(0.0, (at - t0) * 1.5)  # ball 2 (the coloured one is 7) runs along +x
        hand = Detection(EIGHT[7][0] - 45 - 8 * (k % 3), EIGHT[7][1], "colour")
        moved = {7: (EIGHT[7][0] + d, EIGHT[7][1])}
        frames.append(table(at, moved, extra=(hand,),
                            felt={8: 1.0 if d > 12 else 0.0}))
    strikes = [d for d in run(w, frames) if isinstance(d, Strike)]
    assert len(strikes) == 1 and strikes[0].kind == "colour"
    assert strikes[0].at == pytest.approx(t + 6 * FRAME)  # the first frame after contact


def test_after_a_rest_with_a_ball_hidden_a_rolling_ball_still_holds_the_rest_back() -> None:
    # With each ball followed on its own (above), "as many still balls as at the last
    # rest" is not enough after a rest counted with one ball under an arm (7 of 8): the
    # eighth may be the one still rolling. Only all the balls there can be, still, or
    # every ball seen still, is a rest.
    w = Watcher(WatchSettings(recount_ms=600))
    t = 0.0
    while w.state != "rest":
        w.feed(table(t, hidden=frozenset({5})))
        t += FRAME
    assert w.expected == 7
    w.state = "moving"  # a strike (tested elsewhere); now ball 5 is seen, rolling
    rests = []
    for k in range(30):
        x = EIGHT[5][0] + 20 * min(k, 20)  # rolls for 20 frames, then stops
        rests += [(k, d) for d in w.feed(table(t + k * FRAME, {5: (x, EIGHT[5][1])}))
                  if isinstance(d, Rest)]
    assert len(rests) == 1 and rests[0][0] >= 20 + 9


def test_a_cue_ball_that_hits_a_ball_at_once_is_timed_from_its_spot() -> None:
    # The cue ball hit a ball a few centimetres away and nearly stopped: its own path
    # back said "a second ago", and the earliest of the two balls was taken: a strike a
    # second before the contact. A ball seen still on its spot was not yet struck.
    w = Watcher()
    t = settle8(w)
    t0 = t + 3.6 * FRAME
    frames = []
    for k in range(8):
        at = t + k * FRAME
        dt = max(0.0, at - t0)
        cue = (EIGHT[2][0] + min(dt * 1.5, 30 + dt * 0.05), EIGHT[2][1])  # stops at once
        hit = (EIGHT[3][0] + max(0.0, dt - 5) * 1.4, EIGHT[3][1] + max(0.0, dt - 5) * 0.5)
        bare = dt > 0
        frames.append(table(at, {2: cue, 3: hit}, felt={3: 1.0 if bare else 0.0,
                                                        4: 1.0 if bare else 0.0}))
    strikes = [d for d in run(w, frames) if isinstance(d, Strike)]
    assert len(strikes) == 1
    assert strikes[0].at == pytest.approx(t + 4 * FRAME)


def test_the_struck_ball_is_followed_not_the_cue_ball_that_stopped_by_its_spot() -> None:
    # The cue ball hit a ball a few centimetres away and stopped beside that ball's spot,
    # nearer to it than the struck ball by the second frame: the struck ball is the one
    # to follow (the bench session's strike two frames late at 449.1 s, seed 7).
    w = Watcher()
    t = settle8(w)
    hit = t + 2.5 * FRAME
    sx, sy = EIGHT[3][0], EIGHT[3][1]
    frames = []
    for k in range(7):
        at = t + k * FRAME
        moved = {3: (sx + max(0.0, at - hit) * 1.2, sy)}
        if at > hit:  # the cue ball, rolling in, then stopped beside the spot
            moved[2] = (sx - 150, sy + 100) if at < hit + FRAME else (sx - 50, sy)
        frames.append(table(at, moved, felt={4: 1.0 if at > hit else 0.0}))
    strikes = [d for d in run(w, frames) if isinstance(d, Strike)]
    assert len(strikes) == 1 and strikes[0].spot == (sx, sy)
    assert strikes[0].at == pytest.approx(t + 3 * FRAME)


def test_a_ball_struck_towards_a_cushion_behind_it_is_timed_from_its_first_move() -> None:
    # Struck into the cushion just behind it, the ball comes back over its spot and runs
    # away: its run away starts frames after the strike; the frames between, that show it
    # off its spot on the other side, are frames it had moved in (the bench session's
    # strike three frames late at 244.6 s, seed 11).
    w = Watcher()
    t = settle8(w)
    hit = t + 2.5 * FRAME
    sx, sy = EIGHT[2][0], EIGHT[2][1]
    frames = []
    for k in range(10):
        at = t + k * FRAME
        dt = max(0.0, at - hit)
        dx = -0.66 * dt if dt < 40 else -26.4 + 0.9 * (dt - 40)
        frames.append(table(at, {2: (sx + dx, sy)}, felt={3: 1.0 if abs(dx) > 34 else 0.0}))
    strikes = [d for d in run(w, frames) if isinstance(d, Strike)]
    assert len(strikes) == 1 and strikes[0].at == pytest.approx(t + 3 * FRAME), strikes


def test_a_rolling_ball_missed_for_a_frame_still_holds_the_recount_back() -> None:
    # After a strike the seven other balls lie still for more than recount_ms while the
    # struck one rolls on; the detector misses it for a frame (at a cushion): that is no
    # rest of seven (the bench session's rest 3 s early at 127.9 s, seed 11).
    w = Watcher()
    t = settle8(w)
    ox, oy = EIGHT[0][0], EIGHT[0][1]
    decisions: list[object] = []
    for k in range(120):
        at = t + k * FRAME
        step = min(k, 90)
        hidden = frozenset({0}) if k == 75 else frozenset()
        decisions += w.feed(table(at, {0: (ox + 20 * step, oy + 10 * step)}, hidden=hidden,
                                  felt={1: 1.0 if k else 0.0}))
    rests = [d for d in decisions if isinstance(d, Rest)]
    assert [type(d).__name__ for d in decisions][:1] == ["Strike"]
    assert len(rests) == 1 and rests[0].balls == 8 and rests[0].at >= t + 89 * FRAME, rests


@pytest.mark.parametrize("fps", [30.0, 15.0])
@pytest.mark.parametrize(("speed", "decel"), [
    (10.0, 0.0), (20.0, 0.0), (30.0, 0.0),  # creeping on at a steady pace, then stopped
    (30.0, 0.1), (60.0, 0.1), (200.0, 0.6),  # slowing on the cloth to its stop (m/s^2)
])
@pytest.mark.parametrize("noise", [0.0, 0.15])
def test_a_slow_roll_out_is_moving_until_it_stops(speed: float, decel: float, fps: float,
                                                 noise: float) -> None:
    """Issue 37 point 4: a ball creeping 10-30 mm/s towards a cushion or a pocket stays
    within still_mm of one place for the whole stillness window, and was taken for still:
    rests were decided 100-230 ms before the last ball stopped. Now a rest is decided only
    once no ball drifted by about half a pixel (visible_mm) over the window, after the true
    stop; its ``at`` is the last moment the ball was seen moving (within the part of the
    roll no camera can see: under visible_mm left to go). The noise: the balls' median jump
    from frame to frame was 0.01-0.32 mm on the generator's held-out scenes; at 15 frames a
    second and 0.3 mm a 10 mm/s creep is at the edge of what 5 frames can tell."""
    import random

    rng = random.Random(int(speed * 10 + decel * 100 + fps + noise * 10))
    period = 1000.0 / fps
    a = decel / 1000.0  # mm/ms^2
    v = speed / 1000.0  # mm/ms
    start = 0.0  # rolling from the first frame (a rest before would make it a strike)
    duration = v / a if a > 0 else 1500.0  # ms rolling
    stop = start + duration
    visible = 1.4

    def x_at(t: float) -> float:
        u = min(max(0.0, t - start), duration)
        return 1500.0 + v * u - 0.5 * a * u * u

    w = Watcher(WatchSettings(visible_mm=visible))
    decisions: list[object] = []
    t = 0.0
    while t < stop + 1500:
        x = x_at(t) + rng.gauss(0, noise)
        decisions += w.feed(still(t, {1: (x, 800.0 + rng.gauss(0, noise))}))
        t += period
    rests = [d for d in decisions if isinstance(d, Rest)]
    assert len(rests) == 1, rests
    rest = rests[0]
    assert rest.decided_at >= stop, (rest, stop)
    # the roll's last part no camera sees: the time under visible_mm to go
    unseen = math.sqrt(2 * visible / a) if a > 0 else visible / v
    assert stop - unseen - 2 * period <= rest.at <= stop + 2 * period, (rest, stop, unseen)
    assert rest.decided_at - stop <= 300 + 3 * period + noise * 200, (rest, stop)


@pytest.mark.parametrize(("covered", "rest_by_ms", "balls"), [
    # an arm over ball 3 while ball 0 rolls to its stop: ball 3 keeps its place, the rest
    # comes on time with all 8 (it waited the recount, 1.2 s, and counted 7)
    (True, 300 + 3 * FRAME, 8),
    # its place shows felt: the ball is gone (potted, knocked away): a recount, as before
    (False, 1200 + 3 * FRAME, 7),
])
def test_a_ball_hidden_under_an_arm_keeps_its_place(covered: bool, rest_by_ms: float,
                                                   balls: int) -> None:
    """Issue 37 point 2: a ball hidden for a moment under an arm keeps its last place, and
    comes back when seen again (no newcomer, no strike)."""
    w = Watcher()
    t = 0.0
    frames: list[Observation] = []
    for k in range(60):  # ball 0 rolls for 30 frames; ball 3 hidden from frame 10 to 70
        at = k * FRAME
        gone = frozenset({3}) if k >= 10 else frozenset()
        frames.append(table(at, {0: (400 + 10 * min(k, 30), 300)}, hidden=gone))
    decisions: list[object] = []
    for obs in frames:
        asked = w.spots()  # what the pipeline asks about before each frame
        felt = {sid: (0.0 if covered else 1.0) for sid in asked}
        decisions += w.feed(Observation(obs.at, obs.balls, felt, obs.quality))
    stop = 30 * FRAME
    rests = [d for d in decisions if isinstance(d, Rest)]
    assert len(rests) == 1, decisions
    assert rests[0].balls == balls and stop <= rests[0].decided_at <= stop + rest_by_ms, rests
    # ball 3 comes back where it was: nothing new, nothing struck
    t = 60 * FRAME
    later: list[object] = []
    for k in range(30):
        later += w.feed(table(t + k * FRAME, {0: (700, 300)},
                              felt=dict.fromkeys(w.spots(), 0.0)))
    assert [d for d in later if isinstance(d, Strike)] == []
    if covered:
        assert len(w.spots()) == 8


def test_a_ball_moved_a_little_is_not_also_hidden_at_its_old_place() -> None:
    """Its old place, half under it, reads as covered: counted as a hidden ball too, it
    stood in for a ball still rolling, and a rest came 700 ms before the last ball stopped
    (the small matrix's t_green_ivory_hand_60fps at 15 fps). A ball of its kind seen within
    two radii is that ball; and no hidden ball counts while a ball seen now still rolls."""
    w = Watcher()
    decisions: list[object] = []
    for k in range(60):
        at = k * FRAME
        moved = {0: (400 + 15 * min(k, 45), 300)}  # ball 0 rolls until frame 45
        if k >= 15:
            moved[3] = (EIGHT[3][0] + 40, EIGHT[3][1])  # ball 3 nudged 40 mm, then still
        obs = table(at, moved)
        felt = dict.fromkeys(w.spots(), 0.0)  # every place asked about reads as covered
        decisions += w.feed(Observation(obs.at, obs.balls, felt, obs.quality))
    rests = [d for d in decisions if isinstance(d, Rest)]
    assert rests and all(r.decided_at >= 45 * FRAME for r in rests), rests
    assert rests[0].balls == 8


def test_a_ball_seen_a_few_mm_aside_for_a_frame_is_not_a_second_ball() -> None:
    """The pooltool render p_t_olive_aged_lens_480p (a rest 1160 ms before the last ball
    stopped): at 480p the coloured ball's centre wandered 2-7 mm from frame to frame, a
    frame put it at a new place 6 mm aside, and that place counted as a still ball too
    (its ball is seen within half a radius of it, frame after frame). With the count made
    up, a white still rolling at 60 mm/s was not waited for. Places of one kind less than
    a radius apart are one ball (two balls cannot be closer than two radii), still since
    the later of them."""
    w = Watcher(WatchSettings(balls=8))
    decisions: list[object] = []
    k = 0
    while w.state != "rest":  # the opening rest, all eight seen
        decisions += w.feed(table(k * FRAME))
        k += 1
    first_rest = k
    # a strike: ball 0 runs off, and is then still rolling (60 mm/s) near the far cushion;
    # the coloured ball (7) is seen at its place, twice 6 mm aside, 333 ms apart
    x0, y0, _ = EIGHT[7]
    for i in range(90):
        at = (first_rest + i) * FRAME
        roll = 400 + 1.5 * min(i, 40) * FRAME + 0.06 * max(0, i - 40) * FRAME
        moved = {0: (roll, 300.0), 7: (x0 + (6.0 if i in (50, 60) else 0.0), y0)}
        obs = table(at, moved)
        # a spot no ball stands on shows felt (the detector's answer)
        felt = {sid: 0.0 if any(math.hypot(b.x - x, b.y - y) < 10 for b in obs.balls)
                else 1.0 for sid, (x, y) in w.spots().items()}
        decisions += w.feed(Observation(at, obs.balls, felt, obs.quality))
    assert sum(isinstance(d, Strike) for d in decisions) == 1
    rests = [d for d in decisions if isinstance(d, Rest)]
    assert len(rests) == 1, rests  # the opening one only: ball 0 never stopped


@pytest.mark.parametrize(("stop_frame", "missed"), [
    (0, (1, 4)),  # the opening: the pair at rest from the first frame (the e2e test's video)
    (9, (12,)),  # the cue ball rolls in and stops against the other white
])
def test_a_touching_ball_missed_for_a_frame_does_not_move_its_neighbour(
        stop_frame: int, missed: tuple[int, ...]) -> None:
    """tests/camera/test_e2e_camera.py on CI: the opening rest was timed 5 frames late. Two
    whites touch (the detector puts their centres 67 mm apart, a 68 mm ball); a frame that
    missed one of them found the other within two radii of its place, took it for that
    ball moved, and put the rest's instant after that frame. A ball of its kind two radii
    away is another ball."""
    w = Watcher(WatchSettings(rest_ms=300.0))
    decisions: list[object] = []
    for k in range(stop_frame + 14):
        ax = 500.0 - 1.0 * FRAME * max(0, stop_frame - k)  # 1 mm/ms until it stops
        balls = ([] if k in missed else [Detection(ax, 500.0, "white")]) + [
            Detection(567.0, 500.0, "white"), Detection(2500.0, 1200.0, "colour")]
        decisions += w.feed(Observation(k * FRAME, tuple(balls), {}, 1.0))
    rests = [d for d in decisions if isinstance(d, Rest)]
    assert len(rests) == 1 and rests[0].at == pytest.approx(stop_frame * FRAME), rests

