"""Record a scene's detections once, replay the watcher on them in a second (a dev tool
for the camera's self-check, issue 21 point 2).

The expensive part of a matrix row is rendering, encoding and detecting (1-2 minutes a
condition on the shared machine); the watcher (``core.Watcher``) is pure and costs
milliseconds. ``record`` keeps, per frame, what the pipeline hands the watcher: the
capture time, the detections, the frame's quality and the bed's "bare" mask that
``BedView.felt_fraction`` reads (felt, or foreground thinner than 0.45 radius), packed to
bits. ``replay`` feeds a fresh watcher from it exactly as ``FramePipeline.process`` does
and scores it with ``harness.scenes.judge``.

    python bench/camera_replay.py record t_wide_lens_tilt25_aged_mp4v [--out DIR]
    python bench/camera_replay.py replay DIR/t_wide_lens_tilt25_aged_mp4v.npz
Recordings are not committed (bench/results is ignored).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clock_service.edges.camera.core import (  # noqa: E402
    Detection,
    Observation,
    Rest,
    Strike,
    Sure,
    Unsure,
    Watcher,
    WatchSettings,
)
from harness.scenes import CONDITIONS, SceneTruth, judge  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "replay"


def record(name: str, out: Path) -> Path:
    import cv2

    sys.path.insert(0, str(ROOT / "bench"))
    from camera_matrix import calibrate

    from clock_service.edges.camera.pipeline import FramePipeline, frame_quality
    from harness.scenes import Scene, encode_frames

    cv2.setNumThreads(1)
    cond = CONDITIONS[name]
    scene = Scene(cond)
    pipeline: FramePipeline | None = None
    ats, quality, shares, cands, masks, balls = [], [], [], [], [], []
    meta: dict[str, Any] = {}
    for _, at, frame, _used in encode_frames(scene.frames(), cond):
        if pipeline is None:
            calibration = calibrate(cond.name, cond.seed, scene.truth.corners, cond.size, frame)
            pipeline = FramePipeline(calibration, cond.size)
            s = pipeline.watcher.settings
            meta = {"ball_mm": s.ball_mm, "calibrated": s.calibrated,
                    "radius_mm": pipeline.detector.radius_mm}
        view = pipeline.detector.detect(frame)
        r = pipeline.detector.radius_mm * view.scale
        bare = (view.felt > 0) | (view.depth < 0.45 * r)
        ats.append(at)
        quality.append(frame_quality(view))
        shares.append(view.felt_share)
        cands.append(view.candidates)
        masks.append(np.packbits(bare, axis=None))
        balls.append([(b.x, b.y, b.kind == "white", b.confidence) for b in view.detections])
        meta["scale"] = view.scale
        meta["shape"] = list(view.felt.shape)
    t = scene.truth
    meta["truth"] = {"fps": t.fps, "size": list(t.size), "corners": t.corners,
                     "rests": t.rests, "strikes": t.strikes, "moving": t.moving,
                     "busy": t.busy, "placements": t.placements, "balls": t.balls,
                     "duration": t.duration}
    meta["name"] = name
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.npz"
    flat = np.array([b for frame_balls in balls for b in frame_balls], np.float64) \
        .reshape(-1, 4)
    counts = np.array([len(b) for b in balls], np.int32)
    np.savez_compressed(path, at=np.array(ats), quality=np.array(quality),
                        share=np.array(shares), cands=np.array(cands),
                        masks=np.stack(masks), balls=flat, counts=counts,
                        meta=np.array(json.dumps(meta)))
    return path


class Recording:
    def __init__(self, path: Path) -> None:
        data = np.load(path)
        self.meta = json.loads(str(data["meta"]))
        self.at = data["at"]
        self.quality = data["quality"]
        self.share = data["share"]
        self.cands = data["cands"]
        self.masks = data["masks"]
        self.shape = tuple(self.meta["shape"])
        counts = data["counts"]
        flat = data["balls"]
        self.balls: list[tuple[Detection, ...]] = []
        i = 0
        for n in counts:
            self.balls.append(tuple(Detection(float(x), float(y), "white" if w else "colour",
                                              float(c)) for x, y, w, c in flat[i:i + n]))
            i += int(n)
        t = self.meta["truth"]
        self.truth = SceneTruth(t["fps"], tuple(t["size"]), [tuple(c) for c in t["corners"]],
                                t["rests"], t["strikes"], [tuple(m) for m in t["moving"]],
                                [tuple(b) for b in t["busy"]], t["placements"], t["balls"],
                                t["duration"])

    def bare(self, k: int) -> np.ndarray:
        n = self.shape[0] * self.shape[1]
        return np.unpackbits(self.masks[k], count=n).reshape(self.shape).astype(bool)

    def observations(self, watcher: Watcher) -> Iterator[Observation]:
        """Each frame's observation, with the spots the watcher asks about answered as
        ``FramePipeline.process`` answers them (it must be fed before the next is made):
        by ``BedView.felt_fraction`` on the recorded bare-felt mask."""
        from clock_service.edges.camera.detect import BedView

        scale = self.meta["scale"]
        radius = self.meta["radius_mm"]
        deep = np.full(self.shape, np.inf, np.float32)  # the mask already holds the depth
        for k in range(len(self.at)):
            balls = self.balls[k]
            spots = watcher.spots()
            felt: dict[int, float] = {}
            if spots:
                view = BedView(list(balls), self.bare(k).astype(np.uint8) * 255, deep, 1.0,
                               0, scale)
                near = radius * 0.3
                pts = [(b.x, b.y) for b in balls]
                for sid, (x, y) in spots.items():
                    if any(abs(x - bx) < near and abs(y - by) < near for bx, by in pts):
                        felt[sid] = 0.0
                        continue
                    felt[sid] = view.felt_fraction((x, y), radius, pts)
            yield Observation(float(self.at[k]), balls, felt, float(self.quality[k]))


def replay(path: Path, settings: WatchSettings | None = None, verbose: bool = False
           ) -> dict[str, Any]:
    rec = Recording(path)
    m = rec.meta
    watcher = Watcher(settings or WatchSettings(ball_mm=m["ball_mm"],
                                                calibrated=m["calibrated"]))
    decisions: list[tuple[str, float, float, float]] = []
    for obs in rec.observations(watcher):
        for d in watcher.feed(obs):
            if verbose:
                print(f"  {obs.at:8.0f} {d}")
            if isinstance(d, Rest):
                decisions.append(("rest", d.at, d.decided_at, 0.0))
            elif isinstance(d, Strike):
                decisions.append(("strike", d.at, d.decided_at, 0.0))
            elif isinstance(d, Unsure):
                decisions.append(("unsure", d.at, d.at, 0.0))
            elif isinstance(d, Sure):
                decisions.append(("sure", d.at, d.at, 0.0))
    row = judge(rec.truth, decisions).row()
    row["name"] = m["name"]
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("names", nargs="+")
    rec.add_argument("--out", type=Path, default=RESULTS)
    rep = sub.add_parser("replay")
    rep.add_argument("paths", nargs="+", type=Path)
    rep.add_argument("-v", action="store_true")
    args = parser.parse_args()
    if args.cmd == "record":
        for name in args.names:
            print(record(name, args.out), flush=True)
        return 0
    for path in args.paths:
        row = replay(path, verbose=args.v)
        keys = ("strikes", "missed", "false", "strike_frames", "rests", "missed_rests",
                "wrong_rests", "rest_decided_ms", "not_sure_periods", "verdict")
        print(row["name"], {k: row[k] for k in keys}, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
