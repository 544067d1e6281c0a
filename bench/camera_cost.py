"""What a camera frame costs, per resolution and per step of the budget (issue 37 point 5).

For 480p, 720p and 1080p frames of the synthetic table (harness/synthetic.py, MJPEG q80 as
a USB webcam sends them), the CPU time of each piece of a frame's work on this machine's
one thread (``time.thread_time``), as the service does it (``edges/camera/adapter.py``):

- ``read``: decoding the MJPEG frame (a webcam's frame arrives compressed);
- ``ring``: the clips' ring (downscale to 480 wide and JPEG q60, ``evidence.Evidence``);
- ``look``: the detector and the watcher at full detail (``FramePipeline.process``);
- ``look_small``: the same on the smaller image of the table (``budget.SMALL_SCALE``).

and the steps of the budget built from them: ``full`` (read + ring + look), ``small`` (read
+ ring + look_small), ``no_ring`` (read + look_small), ``light`` (the same at 12.5 or 15
frames a second: the frames left out are not read). Printed as CPU-ms a frame, CPU-ms a
second of video at the camera's 30 fps and the share of one core.

Instructions a frame: ``perf stat -e instructions`` is the tool, but this machine's virtual
CPU has no counters (``perf stat`` says ``<not supported>``), so ``--instructions`` counts
them with valgrind (callgrind, every instruction executed by the process): two runs of N and
4N frames of one piece, the difference over 3N frames (the start-up cancels out).

    python bench/camera_cost.py [--frames 60] [--instructions]
Prints figures and writes bench/results/camera_cost.json; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "results"
SIZES = {"480p": (640, 360), "720p": (1280, 720), "1080p": (1920, 1080)}
PIECES = ("read", "ring", "look", "look_small")


def frames_of(size: tuple[int, int], count: int, cache: Path) -> tuple[list[bytes], Any]:
    """``count`` MJPEG-encoded frames of a synthetic table at ``size`` (balls rolling and a
    player at it), and its truth (for the calibration)."""
    import cv2

    from harness.synthetic import Truth, write_video

    path = cache / f"cost_{size[0]}x{size[1]}_{count}.avi"
    meta = Path(str(path) + ".json")
    if meta.exists():  # rendered once (not again under valgrind: 50 times slower there)
        truth = Truth.from_dict(json.loads(meta.read_text()))
    else:
        truth = write_video(path, seconds=max(2.0, count / 30 + 0.5), seed=11, size=size,
                            fps=30.0, first_strike_ms=(300, 600))
    cap = cv2.VideoCapture(str(path))
    out: list[bytes] = []
    while len(out) < count:
        ok, frame = cap.read()
        if not ok:
            break
        ok, buf = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, 80])
        out.append(buf.tobytes())
    cap.release()
    return out, truth


def measure(size: tuple[int, int], count: int, cache: Path, pieces: tuple[str, ...] = PIECES
            ) -> dict[str, float]:
    """Median CPU ms of each piece over ``count`` frames."""
    import cv2
    import numpy as np

    from clock_service.edges.camera.evidence import ClipStore, Evidence
    from clock_service.edges.camera.geometry import Calibration
    from clock_service.edges.camera.pipeline import FramePipeline

    cv2.setNumThreads(1)
    jpegs, truth = frames_of(size, count, cache)
    first = cv2.imdecode(np.frombuffer(jpegs[0], np.uint8), cv2.IMREAD_COLOR)
    calibration = Calibration(tuple(truth.corners), size)
    try:
        from clock_service.edges.camera.appearance import learn_appearance

        calibration = learn_appearance(calibration, first)
    except ValueError:
        pass
    full = FramePipeline(calibration, size)
    small = FramePipeline(calibration, size)
    small.use_small(True)
    full.warm_up()
    small.warm_up()
    with tempfile.TemporaryDirectory() as tmp:
        evidence = Evidence(ClipStore(Path(tmp), 10, 10**9), "1")
        costs: dict[str, list[float]] = {p: [] for p in pieces}
        for k, data in enumerate(jpegs):
            at = k * 1000 / 30
            t = time.thread_time()
            frame = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
            if "read" in costs:
                costs["read"].append(time.thread_time() - t)
            if "ring" in costs:
                t = time.thread_time()
                evidence.on_frame(frame, at)
                costs["ring"].append(time.thread_time() - t)
            if "look" in costs:
                t = time.thread_time()
                full.process(frame, at)
                costs["look"].append(time.thread_time() - t)
            if "look_small" in costs:
                t = time.thread_time()
                small.process(frame, at)
                costs["look_small"].append(time.thread_time() - t)
        evidence.close()
    return {p: round(1000 * sorted(v)[len(v) // 2], 3) for p, v in costs.items() if v}


def steps(cost: dict[str, float], fps: float = 30.0) -> dict[str, dict[str, float]]:
    """Each step's CPU ms a frame looked at, and a second of video."""
    read, ring, look, small = (cost[p] for p in PIECES)
    out = {"full": (read + ring + look, fps), "small": (read + ring + small, fps),
           "no_ring": (read + small, fps), "light 15/s": (read + small, 15.0),
           "light 12.5/s": (read + small, 12.5)}
    return {name: {"ms_frame": round(ms, 2), "fps": rate, "ms_second": round(ms * rate, 1),
                   "core_share": round(ms * rate / 1000, 3)}
            for name, (ms, rate) in out.items()}


def instructions(resolution: str, piece: str, count: int) -> float | None:
    """Instructions a frame of ``piece`` at ``resolution``, counted by callgrind: runs of
    ``count`` and ``4 * count`` frames, the difference over ``3 * count``."""
    totals = []
    for n in (count, 4 * count):
        frames_of(SIZES[resolution], n, Path(tempfile.gettempdir()) / "shotclock-camera-cost")
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "callgrind.out"
            cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                   sys.executable, __file__, "--one", resolution, piece, str(n)]
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600,
                                  env={**os.environ, "PYTHONHASHSEED": "0"})
            found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
            if found is None:
                print(done.stderr[-2000:], file=sys.stderr)
                return None
            totals.append(int(found.group(1)))
    return (totals[1] - totals[0]) / (3 * count)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--instructions", action="store_true",
                        help="also count instructions a frame with valgrind (slow: minutes)")
    parser.add_argument("--iframes", type=int, default=4,
                        help="frames of the shorter valgrind run (the longer: 4 times)")
    parser.add_argument("--sizes", default=",".join(SIZES),
                        help="which of 480p,720p,1080p (default: all)")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    cache = Path(tempfile.gettempdir()) / "shotclock-camera-cost"
    cache.mkdir(exist_ok=True)
    if args.one:  # a child under valgrind: one piece, N frames
        resolution, piece, n = args.one
        measure(SIZES[resolution], int(n), cache, (piece,))
        return 0
    results: dict[str, Any] = {"machine": platform.processor() or platform.machine(),
                               "load_before": os.getloadavg()}
    for name, size in SIZES.items():
        if name not in args.sizes.split(","):
            continue
        cost = measure(size, args.frames, cache)
        row: dict[str, Any] = {"pieces_ms": cost, "steps": steps(cost)}
        if args.instructions:
            row["instructions"] = {p: instructions(name, p, args.iframes) for p in PIECES}
        results[name] = row
        print(f"\n{name} {size[0]}x{size[1]}: pieces (CPU ms a frame, median of "
              f"{args.frames}): " + ", ".join(f"{p} {v}" for p, v in cost.items()))
        for step, v in row["steps"].items():
            print(f"  {step:13} {v['ms_frame']:7.2f} ms a frame x {v['fps']:4g}/s = "
                  f"{v['ms_second']:6.1f} ms a second ({v['core_share']:.1%} of a core)")
        if args.instructions:
            print("  instructions a frame: " + ", ".join(
                f"{p} {v / 1e6:.1f} M" if v else f"{p} ?"
                for p, v in row["instructions"].items()))
    results["load_after"] = os.getloadavg()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "camera_cost.json").write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
