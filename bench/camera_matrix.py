"""The camera's robustness matrix (issue 21 point 2): every condition of the independent
scene generator (harness/scenes.py) through the service's own ``FramePipeline``, scored
against the generator's truth.

Per condition: missed and false strikes, strike error in frames, rests missed or decided
while balls moved (a wrong start), how long after the last ball stopped each rest was
decided, the wall time from a frame to its decision (the deciding frame's processing; the
camera thread runs frames as they come, so this is the decision's latency when it keeps
up), the camera_not_sure periods, and a verdict: ``meets`` the targets (0 missed, 0 false,
every rest decided within 400 ms, strikes within one frame, decisions < 150 ms),
``not_sure`` (it missed or was late only while it said camera_not_sure and never started or
stopped wrongly), ``MISSES`` (a target missed without saying so, no wrong start or stop) or
``WRONG`` (a false strike, or a rest decided while balls rolled).

The tuning and the held-out conditions are reported apart. The held-out ones are never
used to change the detector. Calibration as a referee does it: the four corners as
clicked (the generator's truth, with up to 2 px of click error) on the clip's first frame,
and the appearance learned from that frame when the detector supports it.

    python bench/camera_matrix.py --set tuning      # or held-out, all; --only NAME
Not a test: it prints and writes bench/results/camera_matrix.json; it asserts nothing.
Figures on the shared machine are noisy: the bare-loop figure printed beside them is a
plain numpy loop measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clock_service.edges.camera.core import Rest, Strike, Sure, Unsure  # noqa: E402
from clock_service.edges.camera.geometry import Calibration  # noqa: E402
from clock_service.edges.camera.pipeline import FramePipeline  # noqa: E402
from harness.scenes import (  # noqa: E402
    HELD_OUT,
    TUNING,
    TUNING_MORE,
    Condition,
    Scene,
    SceneTruth,
    describe,
    encode_frames,
    judge,
)

RESULTS = ROOT / "bench" / "results"


def calibrate(name: str, seed: int, true_corners: list[tuple[float, float]],
              size: tuple[int, int], frame: np.ndarray, learn: bool = True) -> Calibration:
    rng = random.Random(seed * 7)
    corners = tuple((x + rng.uniform(-2, 2), y + rng.uniform(-2, 2))
                    for x, y in true_corners)
    calibration = Calibration(corners, size)
    if not learn:
        return calibration
    try:
        from clock_service.edges.camera.appearance import AppearanceError, learn_appearance
    except ImportError:  # a detector from before issue 21 point 3a
        return calibration
    try:
        return learn_appearance(calibration, frame)
    except AppearanceError as exc:  # as `shotclock camera calibrate` does: corners only
        print(f"  {name}: nothing learned: {exc}", flush=True)
        return calibration


def run(cond: Condition, learn: bool = True, latency: str = "wall") -> dict[str, Any]:
    """One condition, judged. ``latency``: what a decision's latency is measured in, the
    deciding frame's ``wall`` time (the target, on a machine that runs only this) or its
    ``cpu`` time on this thread (what the pipeline itself costs, whatever else shares the
    cores: for tests, which share two cores with other tests at a lower priority)."""
    scene = Scene(cond)
    frames = ((at, frame, used) for _, at, frame, used in encode_frames(scene.frames(), cond))
    row = score(cond.name, cond.seed, frames, lambda: scene.truth, cond.size, learn, latency)
    row["fps"] = cond.fps
    return row


def rendered(path: Path, learn: bool = True, latency: str = "wall") -> dict[str, Any]:
    """One video of ``bench/render_scenes.py`` (pooltool + Panda3D: a renderer this project
    did not write; issue 37 point 6) and its truth (``<name>.json`` beside it), judged as
    the generator's scenes are."""
    meta = json.loads(path.with_suffix(".json").read_text())
    truth = SceneTruth(meta["fps"], tuple(meta["size"]),
                       [tuple(c) for c in meta["corners"]],
                       rests=meta["rests"], strikes=meta["strikes"],
                       moving=[tuple(m) for m in meta["moving"]],
                       busy=[tuple(b) for b in meta["busy"]],
                       balls=meta["balls"], duration=meta["duration"])

    def frames() -> Any:
        cap = cv2.VideoCapture(str(path))
        k = 0
        while True:
            ok, frame = cap.read()
            if not ok:
                break
            yield k * 1000.0 / truth.fps, frame, f"MJPEG q{meta['condition']['quality']}"
            k += 1
        cap.release()

    row = score(path.stem, int(meta["condition"]["seed"]), frames(), lambda: truth,
                truth.size, learn, latency)
    row["fps"] = truth.fps
    row["held_out"] = bool(meta.get("held_out"))
    row["renderer"] = meta.get("renderer")
    return row


def score(name: str, seed: int, frames: Any, truth_of: Any, size: tuple[int, int],
          learn: bool, latency: str) -> dict[str, Any]:
    """Frames (capture ms, BGR, codec) through the service's ``FramePipeline``, calibrated
    on the first as a referee does (the corners with up to 2 px of click error, the look
    learned), scored against the truth (``truth_of()``: complete once the frames are)."""
    if latency not in ("wall", "cpu"):
        raise ValueError(f"latency is 'wall' or 'cpu', not {latency!r}")
    pipeline: FramePipeline | None = None
    decisions: list[tuple[str, float, float, float]] = []
    cpu: list[float] = []
    codec = used = ""
    counts: list[int] = []
    jitter: list[float] = []
    learned: dict[str, Any] | None = None
    t0 = time.perf_counter()
    for at, frame, used in frames:
        codec = used
        if pipeline is None:
            calibration = calibrate(name, seed, truth_of().corners, size, frame, learn)
            appearance = getattr(calibration, "appearance", None)
            learned = appearance.summary() if appearance is not None else None
            pipeline = FramePipeline(calibration, size)
        w0, c0 = time.perf_counter(), time.thread_time()
        result = pipeline.process(frame, at)
        cpu.append((time.thread_time() - c0) * 1000)
        took = cpu[-1] if latency == "cpu" else (time.perf_counter() - w0) * 1000
        counts.append(len(result.observation.balls))
        jitter.append(pipeline.watcher.jitter)
        for d in result.decisions:
            if isinstance(d, Rest):
                decisions.append(("rest", d.at, d.decided_at, took))
            elif isinstance(d, Strike):
                decisions.append(("strike", d.at, d.decided_at, took))
            elif isinstance(d, Unsure):
                decisions.append(("unsure", d.at, d.at, took))
            elif isinstance(d, Sure):
                decisions.append(("sure", d.at, d.at, took))
    truth = truth_of()
    judged = judge(truth, decisions)
    row = judged.row()
    row.update(name=name, latency_measured=latency, frames=len(cpu), codec_used=codec,
               size=f"{size[0]}x{size[1]}", balls_true=truth.balls,
               balls_seen_median=int(np.median(counts[:10])) if counts else 0,
               cpu_ms_per_frame=round(sum(cpu) / max(1, len(cpu)), 2),
               # the balls' median jump from frame to frame (mm; the watcher's noise)
               jitter_mm=round(float(np.median(jitter)), 2) if jitter else None,
               visible_mm=round(pipeline.watcher.settings.visible_mm, 2) if pipeline else None,
               learned=learned, wall_s=round(time.perf_counter() - t0, 1))
    return row


def bare_loop_ms() -> float:
    """A fixed numpy workload, timed in the same run: how loaded the machine is."""
    a = np.random.default_rng(0).random((720, 1280), np.float32)
    t0 = time.perf_counter()
    for _ in range(20):
        cv2.GaussianBlur(a, (5, 5), 0)
    return round((time.perf_counter() - t0) / 20 * 1000, 2)


def show(rows: list[dict[str, Any]], title: str) -> None:
    print(f"\n== {title}")
    head = (f"{'condition':42} {'size':>9} {'fps':>3} {'balls':>5} {'strk':>4} {'miss':>4} "
            f"{'false':>5} {'fr_err':>6} {'rests':>5} {'r_miss':>6} {'r_wrong':>7} "
            f"{'r_ms_max':>8} {'lat_max':>7} {'cpu_ms':>6} {'unsure':>6}  verdict")
    print(head)
    for r in rows:
        print(f"{r['name']:42} {r['size']:>9} {r['fps']:>3g} "
              f"{str(r['balls_seen_median']) + '/' + str(r['balls_true']):>5} "
              f"{r['strikes']:>4} {r['missed']:>4} {r['false']:>5} "
              f"{str(r['strike_frames_abs_max']):>6} {r['rests']:>5} {r['missed_rests']:>6} "
              f"{r['wrong_rests']:>7} {str(r['rest_decided_ms_max']):>8} "
              f"{str(r['latency_ms_max']):>7} {r['cpu_ms_per_frame']:>6} "
              f"{len(r['not_sure_periods']):>6}  {r['verdict']}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", default="all",
                        choices=("tuning", "tuning-more", "held-out", "pooltool", "all"))
    parser.add_argument("--rendered", type=Path, default=RESULTS / "pooltool",
                        help="the videos of bench/render_scenes.py (pooltool + Panda3D)")
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--shots", type=int, default=None, help="shots per clip (fewer: faster)")
    parser.add_argument("--no-learn", action="store_true",
                        help="corners only: the detector's built-in colours and sizes")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--latency", choices=("wall", "cpu"), default="wall",
                        help="a decision's latency as its frame's wall time (the target, on "
                        "a quiet machine) or this thread's CPU time (on a shared one)")
    args = parser.parse_args()
    cv2.setNumThreads(1)
    sets = {"tuning": TUNING, "tuning-more": TUNING_MORE, "held-out": HELD_OUT}
    chosen = list(sets) if args.set == "all" else [args.set] if args.set in sets else []
    results: dict[str, Any] = {"machine": platform.processor() or platform.machine(),
                               "opencv": cv2.__version__, "bare_loop_ms_before": bare_loop_ms()}
    for name in chosen:
        conds = [c for c in sets[name] if not args.only or c.name in args.only]
        if args.shots is not None:
            conds = [replace(c, shots=min(c.shots, args.shots)) for c in conds]
        rows = []
        for cond in conds:
            row = run(cond, learn=not args.no_learn, latency=args.latency)
            row["condition"] = describe(cond)
            rows.append(row)
        results[name] = rows
        if rows:
            show(rows, f"{name} ({len(rows)} conditions)")
    if args.set in ("pooltool", "all"):
        videos = sorted(p for p in args.rendered.glob("*.avi")
                        if p.with_suffix(".json").exists()
                        and (not args.only or p.stem in args.only))
        for part, held in (("pooltool tuning", False), ("pooltool held-out", True)):
            rows = []
            for video in videos:
                if video.stem.startswith("p_h_") != held:
                    continue
                rows.append(rendered(video, learn=not args.no_learn, latency=args.latency))
            results[part] = rows
            if rows:
                show(rows, f"{part} ({len(rows)} videos, {args.rendered})")
    results["bare_loop_ms_after"] = bare_loop_ms()
    print(f"\nbare loop (20 GaussianBlur 720p float): {results['bare_loop_ms_before']} ms before,"
          f" {results['bare_loop_ms_after']} ms after")
    out = args.out or RESULTS / f"camera_matrix_{args.set}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
