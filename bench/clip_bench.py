"""Benchmark of the camera's video evidence (issue 21 point 5): what the ring of recent
frames and the clips add to the camera thread at 720p30, in CPU and bytes.

Not a test: it measures and prints. Frames are the synthetic table's (tests/camera/
synthetic.py: sensor noise, flicker, a cue and arms) at 1280x720, JPEG-compressed and
decoded once as a camera stream would be. For each frame: the ring's work (downscale to
480 wide and JPEG at quality 60, ``evidence.encode_frame``) and, in the same run for
scale, the detector pipeline the camera thread runs anyway; CPU of this thread
(``thread_time``), OpenCV on one thread as in the service. Then what a clip weighs and
what an hour of play writes, for an assumed number of clips an hour (``--clips-per-hour``:
a rest and a strike a shot, a shot every ~30 s: 240).

    python bench/clip_bench.py [--frames 150] [--clips-per-hour 240]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import cv2

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clock_service.edges.camera.evidence import (  # noqa: E402
    AFTER_MS,
    BEFORE_MS,
    EvidenceSettings,
    encode_frame,
)
from clock_service.edges.camera.geometry import Calibration  # noqa: E402
from clock_service.edges.camera.pipeline import FramePipeline  # noqa: E402
from harness.synthetic import SyntheticTable  # noqa: E402

FPS = 30.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=150)
    parser.add_argument("--clips-per-hour", type=int, default=240)
    args = parser.parse_args()
    cv2.setNumThreads(1)
    size = (1280, 720)
    s = EvidenceSettings()
    table = SyntheticTable(seed=3, size=size)
    images = []
    for _, at, image in table.frames(seconds=args.frames / table.fps):
        ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 80])
        images.append((at, cv2.imdecode(data, cv2.IMREAD_COLOR)))
    pipeline = FramePipeline(Calibration(table.corners, size), size)
    for at, image in images[:5]:  # warm-up
        encode_frame(image, s.width, s.quality)
        pipeline.process(image, at)
    pipeline = FramePipeline(Calibration(table.corners, size), size)
    enc_cpu, det_cpu, sizes = [], [], []
    for at, image in images:
        c0 = time.thread_time()
        jpeg = encode_frame(image, s.width, s.quality)
        c1 = time.thread_time()
        pipeline.process(image, at)
        c2 = time.thread_time()
        enc_cpu.append((c1 - c0) * 1000)
        det_cpu.append((c2 - c1) * 1000)
        sizes.append(len(jpeg))
    enc = sum(enc_cpu) / len(enc_cpu)
    det = sum(det_cpu) / len(det_cpu)
    frame_bytes = sum(sizes) / len(sizes)
    clip_frames = int((BEFORE_MS + AFTER_MS) / 1000 * FPS) + 1
    clip_bytes = clip_frames * frame_bytes
    ring_frames = min(s.ring_frames, int(s.ring_ms / 1000 * FPS) + 1)
    out = {
        "frames": len(images), "size": "1280x720", "ring_width": s.width,
        "jpeg_quality": s.quality, "load_average": [round(v, 1) for v in os.getloadavg()],
        "encode_cpu_ms_mean": round(enc, 2),
        "detector_cpu_ms_mean_same_run": round(det, 2),
        "encode_core_share_at_30fps": round(enc * FPS / 1000, 3),
        "encode_cpu_s_per_hour": round(enc * FPS * 3600 / 1000),
        "jpeg_bytes_mean": round(frame_bytes),
        "ring_frames": ring_frames, "ring_bytes": round(ring_frames * frame_bytes),
        "clip_frames": clip_frames, "clip_bytes": round(clip_bytes),
        "clips_per_hour_assumed": args.clips_per_hour,
        "clip_bytes_written_per_hour": round(clip_bytes * args.clips_per_hour),
        "default_retention_clips": s.clips,
        "default_retention_mb": s.clips_bytes // (1024 * 1024),
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
