"""The watcher's self-check (issue 21 point 2): a ball count it cannot trust says
camera_not_sure and decides nothing (no rest, no strike), table-driven with time injected
(the observations' capture times are the clock)."""

from __future__ import annotations

import pytest

from clock_service.camera.core import (
    Detection,
    Observation,
    Rest,
    Strike,
    Unsure,
    Watcher,
    WatchSettings,
)

FRAME = 1000 / 30
PLACES = [(300.0 + 170.0 * i, 400.0 + 300.0 * (i % 3)) for i in range(18)]


def frame(at: float, n: int, moved: float = 0.0) -> Observation:
    """``n`` balls still on their places (the first one moved ``moved`` mm along +x)."""
    balls = [Detection(x + (moved if i == 0 else 0.0), y, "colour" if i == 1 else "white")
             for i, (x, y) in enumerate(PLACES[:n])]
    return Observation(at, tuple(balls), {1: 1.0 if moved > 12 else 0.0})


def names(decisions: list[object]) -> list[str]:
    return [type(d).__name__.lower() for d in decisions]


def feed(w: Watcher, counts: list[int], start: float = 0.0) -> list[object]:
    out: list[object] = []
    for k, n in enumerate(counts):
        out += w.feed(frame(start + k * FRAME, n))
    return out


@pytest.mark.parametrize(("calibrated", "seen", "want"), [
    (None, 1, ["rest"]),      # nothing known of the calibration: no check before a rest
    (8, 8, ["rest"]),
    (8, 7, ["rest"]),         # one ball hidden or potted: a rest (recounted)
    (8, 4, ["rest"]),         # half of them: still believed
    (8, 3, ["unsure"]),       # fewer than half: the camera does not see the balls
    (8, 1, ["unsure"]),       # a learned look that finds 1 ball of 8
    (2, 2, ["rest"]),
    (4, 1, ["unsure"]),       # 3 of 4 missing: doubted
    (3, 1, ["rest"]),         # 3 balls left, 2 potted: the end of a frame, not a doubt
])
def test_too_few_balls_for_the_calibration_is_not_sure(calibrated: int | None, seen: int,
                                                        want: list[str]) -> None:
    w = Watcher(WatchSettings(calibrated=calibrated, recount_ms=600))
    got = feed(w, [seen] * 40)  # 1.3 s of still frames
    assert names(got) == want
    if want == ["unsure"]:
        assert isinstance(got[0], Unsure) and f"{seen} balls seen" in got[0].reason
        assert not w.sure and w.state == "moving"


@pytest.mark.parametrize(("seen", "want"), [
    (8, ["rest"]),
    (9, ["rest"]),            # a hand or a cue tip taken for a ball: not a doubt
    (10, ["unsure"]),         # two more than the table has: balls parting from a blob
    (12, ["unsure"]),
    (16, ["unsure"]),
])
def test_more_balls_than_the_table_has_is_not_sure(seen: int, want: list[str]) -> None:
    w = Watcher(WatchSettings(balls=8, calibrated=8))
    got = feed(w, [seen] * 40)
    assert names(got) == want


@pytest.mark.parametrize(("calibrated", "seen", "want"), [
    (16, 16, ["rest"]),       # a table calibrated with 16 balls apart has 16
    (16, 17, ["rest"]),
    (16, 18, ["unsure"]),
    (12, 16, ["unsure"]),
])
def test_a_table_calibrated_with_more_balls_has_them(calibrated: int, seen: int,
                                                     want: list[str]) -> None:
    w = Watcher(WatchSettings(balls=8, calibrated=calibrated))
    got = feed(w, [seen] * 40)
    assert names(got) == want


@pytest.mark.parametrize(("doubt_frames", "want"), [
    (1, ["rest"]),            # one frame in doubt: held back that frame, rest later
    (10, ["rest"]),           # 330 ms: held back, not yet unsure
    (20, ["unsure", "sure", "rest"]),  # 660 ms: unsure; a trusted count for 1 s: sure
])
def test_a_doubted_frame_decides_nothing_and_sure_comes_back(doubt_frames: int,
                                                             want: list[str]) -> None:
    w = Watcher(WatchSettings(calibrated=8))
    counts = [8] * 5 + [12] * doubt_frames + [8] * 70
    got = feed(w, counts)
    assert names(got) == want
    rest = next(d for d in got if isinstance(d, Rest))
    # the rest comes after the doubt's last frame (nothing decided inside it)
    assert rest.decided_at > (5 + doubt_frames - 1) * FRAME


def test_the_rest_count_is_the_reference_after_a_rest_and_a_strike_waits_for_trust() -> None:
    w = Watcher(WatchSettings(calibrated=None, balls=8))
    got = feed(w, [6] * 15)
    assert names(got) == ["rest"] and w.expected == 6
    # the balls still there but only 2 seen (fewer than half of the rest's 6) while ball 0
    # runs from its spot: no strike; 500 ms of it: unsure
    out: list[object] = []
    t0 = 15 * FRAME
    for k in range(20):
        obs = frame(t0 + k * FRAME, 6, moved=3.0 * (k + 1))
        obs = Observation(obs.at, obs.balls[:2], obs.spots_felt)
        out += w.feed(obs)
    assert not any(isinstance(d, Strike) for d in out)
    assert names(out) == ["unsure"]


def test_a_strike_seen_with_a_trusted_count_is_still_decided() -> None:
    w = Watcher(WatchSettings(calibrated=8))
    got = feed(w, [8] * 15)
    assert names(got) == ["rest"]
    out: list[object] = []
    t0 = 15 * FRAME
    for k in range(8):
        out += w.feed(frame(t0 + k * FRAME, 8, moved=30.0 * (k + 1)))
    assert names(out) == ["strike"]


def test_frames_not_looked_at_keep_the_doubt_as_it_was() -> None:
    w = Watcher(WatchSettings(calibrated=8))
    feed(w, [1] * 3)
    w.skip(3 * FRAME)
    assert w.doubt is not None
    assert names(feed(w, [8] * 40, start=4 * FRAME)) == ["rest"]
    assert w.doubt is None and w.sure
