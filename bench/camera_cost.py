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
them with valgrind's callgrind, frame by frame and piece by piece: the child runs under
callgrind with its instrumentation off (Python, numpy and OpenCV start at valgrind's plain
speed), a few frames go by uncounted (warm-up), and then each piece of each frame is
counted alone, between two client requests (``CALLGRIND_TOGGLE_COLLECT``) made from a
ten-line C helper compiled here with gcc and loaded with ctypes; each piece's count is
dumped (``CALLGRIND_DUMP_STATS_AT``) and read back. Instruction counts do not depend on the
machine's load, only the wall time does. Two instruction sets, each in its own process
(the libraries choose their SIMD code at import from these environment variables):

- ``avx2``: as this machine runs it but without AVX-512 (valgrind has none): the CPU-ms
  of the same code, measured natively, give this core's instructions a cycle on it;
- ``sse``: 128-bit SIMD only (OpenCV's and numpy's AVX dispatch off, libjpeg-turbo forced to
  SSE2, no Intel IPP): the vector width a Cortex-A72 or A76 has (NEON), and no IPP, which
  an ARM build of OpenCV does not have. The count a Pi would need is taken from this one.

    python bench/camera_cost.py [--frames 60] [--instructions [--iframes 10]]
Prints figures and writes bench/results/camera_cost.json; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import math
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

    # one clip per size for every count up to 75 frames: rendered once, never under valgrind
    seconds = 3.0 if count <= 75 else math.ceil(count / 30 + 0.5)
    path = cache / f"cost_{size[0]}x{size[1]}_{seconds:g}s.avi"
    meta = Path(str(path) + ".json")
    if meta.exists():
        truth = Truth.from_dict(json.loads(meta.read_text()))
    else:
        truth = write_video(path, seconds=seconds, seed=11, size=size, fps=30.0,
                            first_strike_ms=(300, 600))
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


class Marks:
    """Callgrind's client requests, from Python: a small C helper compiled with gcc (the
    requests are inline machine code in valgrind/callgrind.h, not a library call)."""

    SOURCE = """#include <valgrind/callgrind.h>
void cg_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void cg_toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
void cg_dump(const char *what) { CALLGRIND_DUMP_STATS_AT(what); }
"""

    def __init__(self, library: Path) -> None:
        import ctypes

        self.lib = ctypes.CDLL(str(library))
        self.lib.cg_dump.argtypes = [ctypes.c_char_p]

    @classmethod
    def build(cls, where: Path) -> Path:
        source, library = where / "cg_marks.c", where / "cg_marks.so"
        source.write_text(cls.SOURCE)
        subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-o", str(library), str(source)],
                       check=True)
        return library


def measure(size: tuple[int, int], count: int, cache: Path, pieces: tuple[str, ...] = PIECES,
            marks: Marks | None = None, warm: int = 0) -> dict[str, float]:
    """Median CPU ms of each piece over ``count`` frames after ``warm`` uncounted ones; under
    callgrind (``marks``), each piece of each counted frame is counted and dumped alone."""
    import cv2
    import numpy as np

    if os.environ.get("SHOTCLOCK_COST_NO_IPP"):
        cv2.ipp.setUseIPP(False)  # an ARM build of OpenCV has no Intel IPP

    from clock_service.edges.camera.evidence import ClipStore, Evidence
    from clock_service.edges.camera.geometry import Calibration
    from clock_service.edges.camera.pipeline import FramePipeline

    cv2.setNumThreads(1)
    jpegs, truth = frames_of(size, warm + count, cache)
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

        def piece(name: str, counted: bool, work: Any, *args: Any) -> Any:
            if not counted or name not in costs:
                return work(*args)
            if marks is not None:
                marks.lib.cg_toggle()
                out = work(*args)
                marks.lib.cg_toggle()
                marks.lib.cg_dump(name.encode())
                return out
            t = time.thread_time()
            out = work(*args)
            costs[name].append(time.thread_time() - t)
            return out

        looks = (("ring", evidence.on_frame), ("look", full.process),
                 ("look_small", small.process))
        for k, data in enumerate(jpegs):
            counted = k >= warm
            if counted and k == warm and marks is not None:
                marks.lib.cg_start()
            frame = piece("read", counted, cv2.imdecode, np.frombuffer(data, np.uint8),
                          cv2.IMREAD_COLOR)
            for name, work in looks:
                if name in costs:
                    piece(name, counted, work, frame, k * 1000 / 30)
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


# The vector width of each count (see the docstring). Valgrind knows no AVX-512, so ``avx2``
# has it off natively too, so that the CPU-ms and the instructions are of the same code.
ISAS: dict[str, dict[str, str]] = {
    "avx2": {"OPENCV_CPU_DISABLE": "AVX512F",
             "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"},
    "sse": {"OPENCV_CPU_DISABLE": "AVX512F,AVX2,FMA3,FP16,AVX",
            "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
            "JSIMD_FORCESSE2": "1", "SHOTCLOCK_COST_NO_IPP": "1"},
}


def child(resolution: str, count: int, isa: str, *, valgrind: Path | None = None,
          warm: int = 3) -> dict[str, float] | None:
    """One process at ``isa``: CPU ms a frame of each piece (median), or under callgrind
    (``valgrind`` = the marks' library) instructions a frame of each piece (median)."""
    env = {**os.environ, **ISAS[isa], "PYTHONHASHSEED": "0"}
    cmd = [sys.executable, __file__, "--one", resolution, str(count), str(warm)]
    if valgrind is None:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
            return None
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
               f"--callgrind-out-file={out}", *cmd, "--marks", str(valgrind)]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=6 * 3600)
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
            return None
        counts: dict[str, list[int]] = {}
        for dump in Path(tmp).glob("callgrind.out.*"):
            text = dump.read_text(errors="replace")
            what = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.M)
            total = re.search(r"^totals: (\d+)", text, re.M)
            if what and total:
                counts.setdefault(what.group(1), []).append(int(total.group(1)))
    return {p: float(sorted(v)[len(v) // 2]) for p, v in counts.items()}


def pi_needs(instructions: dict[str, float]) -> dict[str, Any]:
    """What each step needs on a Pi 4 and a Pi 5: the 128-bit count over the core's
    instructions a second (its clock times the instructions a cycle assumed), at the
    assumption's middle and its two ends."""
    read, ring, look, small = (instructions[p] for p in PIECES)
    per_step = {"full": (read + ring + look, 30.0), "small": (read + ring + small, 30.0),
                "no_ring": (read + small, 30.0), "light 15/s": (read + small, 15.0),
                "light 12.5/s": (read + small, 12.5)}
    out: dict[str, Any] = {}
    for core, (ghz, ipcs) in PI_CORES.items():
        rows = {}
        for step, (n, fps) in per_step.items():
            ms = [1000 * n / (ghz * 1e9 * ipc) for ipc in ipcs]  # high IPC, mid, low
            rows[step] = {"ms_frame": round(ms[1], 1),
                          "ms_frame_range": [round(ms[0], 1), round(ms[2], 1)],
                          "core_share": round(ms[1] * fps / 1000, 3),
                          "core_share_range": [round(ms[0] * fps / 1000, 3),
                                               round(ms[2] * fps / 1000, 3)]}
        out[core] = rows
    return out


# Published clocks (Raspberry Pi Ltd's product briefs) and the instructions a cycle assumed,
# (high, middle, low) (docs/camera.md says why): a Pi 4 (Cortex-A72, 1.5 GHz; 1.8 GHz on
# boards from 2022) and a Pi 5 (Cortex-A76, 2.4 GHz).
PI_CORES: dict[str, tuple[float, tuple[float, float, float]]] = {
    "Pi 4 A72 1.5 GHz": (1.5, (1.2, 1.0, 0.8)), "Pi 4 A72 1.8 GHz": (1.8, (1.2, 1.0, 0.8)),
    "Pi 5 A76 2.4 GHz": (2.4, (1.8, 1.5, 1.2))}
HERE_GHZ = 2.6  # this machine's virtual EPYC (Zen 4), /proc/cpuinfo's cpu MHz


def counted(name: str, frames: int, iframes: int, cache: Path, library: Path
            ) -> dict[str, Any]:
    """Per instruction set: CPU ms a frame of each piece natively, instructions a frame of
    each piece under callgrind, and this core's instructions a cycle on each."""
    out: dict[str, Any] = {}
    frames_of(SIZES[name], 3 + max(frames, iframes), cache)  # rendered here, not under valgrind
    for isa in ISAS:
        ms = child(name, frames, isa)
        counts = child(name, iframes, isa, valgrind=library)
        row: dict[str, Any] = {"pieces_ms": ms, "instructions": counts}
        if ms and counts and all(p in counts for p in PIECES):
            row["ipc_here"] = {p: round(counts[p] / (ms[p] * HERE_GHZ * 1e6), 2)
                               for p in PIECES if ms.get(p)}
            total_n = sum(counts[p] for p in PIECES)
            total_ms = sum(ms[p] for p in PIECES)
            row["ipc_here"]["all"] = round(total_n / (total_ms * HERE_GHZ * 1e6), 2)
        out[isa] = row
        print(f"  {isa}: CPU ms " + ", ".join(f"{p} {v}" for p, v in (ms or {}).items())
              + "; instructions (M) " + ", ".join(f"{p} {v / 1e6:.2f}"
                                                  for p, v in (counts or {}).items())
              + (f"; instructions a cycle here {row['ipc_here']}" if "ipc_here" in row else ""),
              flush=True)
    sse = out.get("sse", {}).get("instructions")
    if sse and all(p in sse for p in PIECES):
        out["pi"] = pi_needs(sse)
        for core, need in out["pi"].items():
            print(f"  {core}: " + "; ".join(
                f"{step} {v['ms_frame']} ms a frame ({v['ms_frame_range'][0]}-"
                f"{v['ms_frame_range'][1]}), {v['core_share']:.0%} of a core"
                for step, v in need.items()))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--instructions", action="store_true",
                        help="also count instructions a frame with callgrind (minutes of CPU)")
    parser.add_argument("--iframes", type=int, default=10,
                        help="frames counted under callgrind, after 3 uncounted")
    parser.add_argument("--sizes", default=",".join(SIZES),
                        help="which of 480p,720p,1080p (default: all)")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--marks", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    cache = Path(tempfile.gettempdir()) / "shotclock-camera-cost"
    cache.mkdir(exist_ok=True)
    if args.one:  # a child: N frames after W uncounted, at the instruction set of its env
        resolution, n, warm = args.one
        marks = Marks(args.marks) if args.marks else None
        cost = measure(SIZES[resolution], int(n), cache, marks=marks, warm=int(warm))
        print(json.dumps(cost))
        return 0
    results: dict[str, Any] = {"machine": platform.processor() or platform.machine(),
                               "load_before": os.getloadavg()}
    build = tempfile.TemporaryDirectory()
    library = Marks.build(Path(build.name)) if args.instructions else None
    for name, size in SIZES.items():
        if name not in args.sizes.split(","):
            continue
        cost = measure(size, args.frames, cache)
        row: dict[str, Any] = {"pieces_ms": cost, "steps": steps(cost)}
        results[name] = row
        print(f"\n{name} {size[0]}x{size[1]}: pieces (CPU ms a frame, median of "
              f"{args.frames}): " + ", ".join(f"{p} {v}" for p, v in cost.items()), flush=True)
        for step, v in row["steps"].items():
            print(f"  {step:13} {v['ms_frame']:7.2f} ms a frame x {v['fps']:4g}/s = "
                  f"{v['ms_second']:6.1f} ms a second ({v['core_share']:.1%} of a core)")
        if library is not None:
            row["counted"] = counted(name, args.frames, args.iframes, cache, library)
    build.cleanup()
    results["load_after"] = os.getloadavg()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "camera_cost.json").write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
