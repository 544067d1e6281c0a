"""The independent scene generator (harness/scenes.py) and a small robustness matrix
(issue 21 points 1 and 2): short 640x480 clips of a few conditions through the service's
``FramePipeline``; in each, the camera meets the targets or says camera_not_sure, and never
starts or stops the clock wrongly."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("cv2")

from bench.camera_matrix import run  # noqa: E402
from harness.scenes import CONDITIONS, HELD_OUT, TUNING, TUNING_MORE, Scene, SceneTruth, judge  # noqa: E402


def small(name: str, **changes: object) -> object:
    return replace(CONDITIONS[name], size=(640, 480), shots=1, **changes)  # type: ignore[arg-type]


def test_tuning_and_held_out_sets_are_apart_and_fixed() -> None:
    names = [c.name for c in TUNING + TUNING_MORE + HELD_OUT]
    assert len(set(names)) == len(names) == 24
    tuning = TUNING + TUNING_MORE
    assert len({c.seed for c in tuning}) == len(tuning)
    assert {c.seed for c in tuning}.isdisjoint({c.seed for c in HELD_OUT})
    assert all(c.seed > 9000 for c in HELD_OUT) and all(c.seed < 9000 for c in tuning)
    varied = TUNING + HELD_OUT
    assert {c.felt for c in varied} >= {"green", "blue", "red", "grey"}
    assert {c.balls for c in varied} >= {"white", "ivory", "yellowish", "aged"}
    assert {c.light for c in varied} == {"spot", "bar3", "gradient"}
    assert max(c.tilt for c in varied) == 25 and any(c.k1 < 0 for c in varied)
    assert {c.size for c in varied} >= {(640, 480), (1280, 720), (1920, 1080)}
    assert {c.fps for c in varied} >= {15, 30, 60}


def test_the_truth_matches_what_is_drawn() -> None:
    """The strike is when the ball starts to move in the pictures: the frame before the
    truth's strike frame shows the cue ball where it rested, two frames later it has left;
    the corners are inside the frame; each rest follows its strike."""
    scene = Scene(small("t_grey_hues_480p15_hard", noise=0.0, exposure=0.0))  # type: ignore[arg-type]
    frames = {k: f for k, _, f in scene.frames()}
    truth: SceneTruth = scene.truth
    assert len(truth.strikes) == 1 and len(truth.rests) == 2
    assert truth.rests[0] == 0 and truth.strikes[0] < truth.rests[1]
    assert all(0 <= x < 640 and 0 <= y < 480 for x, y in truth.corners)
    k = truth.strike_frame(truth.strikes[0])
    before, at_rest = frames[k - 1], frames[max(0, k - 3)]
    after = frames[k + 2]
    # the pixels of the bed that changed: nothing (but the cue) between two frames at rest,
    # the ball's disk once it rolls
    moved = np.abs(after.astype(int) - before.astype(int)).sum(axis=2) > 60
    still = np.abs(before.astype(int) - at_rest.astype(int)).sum(axis=2) > 60
    assert moved.sum() > still.sum() + 20
    assert math.isclose(truth.duration, len(frames) * 1000 / truth.fps)


def test_judge_tells_a_wrong_stop_from_a_declared_miss() -> None:
    truth = SceneTruth(30.0, (640, 480), [], rests=[0.0, 4000.0], strikes=[2000.0],
                       moving=[(2000.0, 4000.0)], duration=6000.0)
    good = [("rest", 0.0, 300.0, 5.0), ("strike", 2000.0, 2066.0, 5.0),
            ("rest", 3900.0, 4300.0, 5.0)]
    assert judge(truth, good).verdict() == "meets"
    declared = [("rest", 0.0, 300.0, 5.0), ("unsure", 1500.0, 1500.0, 5.0),
                ("sure", 4500.0, 4500.0, 5.0)]
    assert judge(truth, declared).verdict() == "not_sure"
    false = good + [("strike", 1000.0, 1066.0, 5.0)]
    assert judge(truth, false).verdict() == "WRONG"
    wrong_start = good + [("rest", 2600.0, 2900.0, 5.0)]
    assert judge(truth, wrong_start).verdict() == "WRONG"
    # decided 50 ms before the last ball stopped: a start with a ball still rolling
    early = [("rest", 0.0, 300.0, 5.0), ("strike", 2000.0, 2066.0, 5.0),
             ("rest", 3650.0, 3950.0, 5.0)]
    assert judge(truth, early).verdict() == "WRONG"
    silent_miss = [("rest", 0.0, 300.0, 5.0), ("rest", 3900.0, 4300.0, 5.0)]
    assert judge(truth, silent_miss).verdict() == "MISSES"
    slow = [(kind, at, decided, 200.0) for kind, at, decided, _ in good]
    assert judge(truth, slow).verdict() == "MISSES"


@pytest.mark.parametrize("name", ["t_green_white_spot", "t_blue_ivory_bar3_mjpeg",
                                  "t_green_ivory_hand_60fps"])
def test_small_matrix_never_acts_wrongly(name: str) -> None:
    """A decision's latency is judged by the deciding frame's CPU time on this thread, not
    its wall time: this test shares two cores with other tests and runs at a lower priority
    than the serial group, so a frame's wall time measures the neighbours (a clean-clone run
    failed the 150 ms target twice with every strike and rest right). The wall-time target
    is bench/camera_matrix.py's, on a machine that runs only the benchmark."""
    cond = small(name, fps=15.0)  # a short clip: seconds of CPU, not tens
    row = run(cond, latency="cpu")  # type: ignore[arg-type]
    shown = json.dumps(row)  # the whole row: a dict in an assert message is cut short
    assert row["false"] == 0 and row["wrong_rests"] == 0, shown
    assert row["verdict"] in ("meets", "not_sure"), shown
