"""Video evidence for disputes (issue 21 point 5): a bounded ring of recent frames and a
short clip for every rest, strike and time foul.

- ``FrameRing`` (camera thread only): the last few seconds of frames, each downscaled and
  JPEG-encoded in the camera's thread (never on the event loop), bounded in frames and
  bytes.
- ``Evidence``: the loop asks for a clip (``request``: kind and instant, thread-safe);
  the camera thread, once it holds frames ``AFTER_MS`` past the instant, takes the frames
  from ``BEFORE_MS`` before to ``AFTER_MS`` after out of the ring and hands them to a
  writer thread of its own (an SD card's write stalls neither the camera nor the loop).
- ``ClipStore``: one clip is ``<id>.mjpeg`` (the JPEG frames one after another: an MJPEG
  file ffplay/VLC play) and ``<id>.json`` (kind, instant, table, and each frame's capture
  time, offset and length in the MJPEG file), written to a temporary name and renamed.
  Retention is bounded in count and bytes (``SHOTCLOCK_CAMERA_CLIPS``,
  ``SHOTCLOCK_CAMERA_CLIPS_MB``): the oldest clips go first.

Times are service ms (the frames' capture times), the clock's own timeline, so a clip's
frames can be set next to the clock's events.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import io
import json
import logging
import os
import re
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["EvidenceSettings", "FrameRing", "ClipStore", "Evidence", "encode_frame",
           "CLIP_KINDS", "valid_clip_id"]

log = logging.getLogger(__name__)

BEFORE_MS = 2000.0
AFTER_MS = 1000.0
CLIP_KINDS = ("rest", "strike", "time_foul")
MAX_PENDING = 8  # clips asked for and not yet cut: more are refused (logged)
_ID = re.compile(r"^[A-Za-z0-9_-]{1,80}$")


def valid_clip_id(text: str) -> bool:
    return bool(_ID.match(text))


@dataclass(frozen=True)
class EvidenceSettings:
    clips: int = 100  # clips kept at most (0: no ring and no clips)
    clips_bytes: int = 256 * 1024 * 1024  # bytes of clips kept at most
    width: int = 480  # frames in the ring are downscaled to this width (never up)
    quality: int = 60  # their JPEG quality
    ring_ms: float = 4500.0  # BEFORE_MS + AFTER_MS + time for a rest to be decided
    ring_frames: int = 200
    ring_bytes: int = 8 * 1024 * 1024


def encode_frame(frame: Any, width: int, quality: int) -> bytes:
    """A frame downscaled to ``width`` (keeping its aspect) and JPEG-encoded (camera
    thread)."""
    import cv2

    height, full = frame.shape[:2]
    if full > width:
        # INTER_LINEAR: 0.3 ms for 720p -> 480 wide where INTER_AREA took 3.2 ms, as much
        # as the whole detector (bench/clip_bench.py); a little aliasing on the cushions'
        # edges is no matter for a referee stepping through a clip
        frame = cv2.resize(frame, (width, max(1, round(height * width / full))),
                           interpolation=cv2.INTER_LINEAR)
    ok, data = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return data.tobytes()


class FrameRing:
    """Recent (capture ms, JPEG) pairs, oldest first, bounded by age, count and bytes."""

    def __init__(self, max_ms: float, max_frames: int, max_bytes: int) -> None:
        self.max_ms = max_ms
        self.max_frames = max_frames
        self.max_bytes = max_bytes
        self.frames: collections.deque[tuple[float, bytes]] = collections.deque()
        self.bytes = 0

    def add(self, at: float, jpeg: bytes) -> None:
        self.frames.append((at, jpeg))
        self.bytes += len(jpeg)
        while self.frames and (len(self.frames) > self.max_frames
                               or self.bytes > self.max_bytes
                               or at - self.frames[0][0] > self.max_ms):
            self.bytes -= len(self.frames.popleft()[1])

    @property
    def newest(self) -> float | None:
        return self.frames[-1][0] if self.frames else None

    def window(self, start: float, end: float) -> list[tuple[float, bytes]]:
        return [(at, jpeg) for at, jpeg in self.frames if start <= at <= end]


class ClipStore:
    """The clips on disk, bounded in count and bytes. Any thread (file I/O: never call it
    on the event loop)."""

    def __init__(self, directory: str | Path, max_clips: int, max_bytes: int) -> None:
        self.dir = Path(directory)
        self.max_clips = max_clips
        self.max_bytes = max_bytes
        self._lock = threading.Lock()

    def save(self, clip_id: str, meta: dict[str, Any],
             frames: list[tuple[float, bytes]]) -> dict[str, Any]:
        if not valid_clip_id(clip_id):
            raise ValueError(f"bad clip id {clip_id!r}")
        self.dir.mkdir(parents=True, exist_ok=True)
        offset = 0
        listed = []
        for at, jpeg in frames:
            listed.append({"at": round(at, 1), "offset": offset, "bytes": len(jpeg)})
            offset += len(jpeg)
        meta = {**meta, "id": clip_id, "frames": listed, "bytes": offset}
        with self._lock:
            video = self.dir / f"{clip_id}.mjpeg"
            tmp = video.with_suffix(".mjpeg.tmp")
            with open(tmp, "wb") as out:
                for _, jpeg in frames:
                    out.write(jpeg)
            os.replace(tmp, video)
            sidecar = self.dir / f"{clip_id}.json"
            tmp = sidecar.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(meta))
            os.replace(tmp, sidecar)  # the clip is listed once its sidecar is there
            self._prune()
        return meta

    def _metas(self) -> list[dict[str, Any]]:
        out = []
        for path in self.dir.glob("*.json"):
            with contextlib.suppress(OSError, ValueError):
                out.append(json.loads(path.read_text()))
        return sorted(out, key=lambda m: (m.get("at", 0), m.get("id", "")))

    def _prune(self) -> None:
        metas = self._metas()
        total = sum(int(m.get("bytes", 0)) for m in metas)
        while metas and (len(metas) > self.max_clips or total > self.max_bytes):
            gone = metas.pop(0)
            total -= int(gone.get("bytes", 0))
            for ext in (".json", ".mjpeg"):
                with contextlib.suppress(FileNotFoundError):
                    (self.dir / f"{gone['id']}{ext}").unlink()

    def list(self) -> list[dict[str, Any]]:
        """Every clip kept, oldest first, without its frame list (``n_frames`` instead)."""
        if not self.dir.is_dir():
            return []
        with self._lock:
            metas = self._metas()
        return [{k: v for k, v in m.items() if k != "frames"} | {"n_frames": len(m["frames"])}
                for m in metas]

    def meta(self, clip_id: str) -> dict[str, Any] | None:
        if not valid_clip_id(clip_id):
            return None
        try:
            meta: dict[str, Any] = json.loads((self.dir / f"{clip_id}.json").read_text())
        except (OSError, ValueError):
            return None
        return meta

    def video_path(self, clip_id: str) -> Path | None:
        path = self.dir / f"{clip_id}.mjpeg"
        return path if valid_clip_id(clip_id) and path.is_file() else None

    def zipped(self, clip_id: str) -> bytes | None:
        """The clip as a zip: each frame a JPEG named by its index and capture time, and
        ``times.json`` (the sidecar)."""
        meta = self.meta(clip_id)
        path = self.video_path(clip_id)
        if meta is None or path is None:
            return None
        data = path.read_bytes()
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as out:  # JPEG: no deflate
            for i, frame in enumerate(meta["frames"]):
                name = f"{clip_id}/{i:04d}_{frame['at']:.0f}.jpg"
                out.writestr(name, data[frame["offset"]:frame["offset"] + frame["bytes"]])
            out.writestr(f"{clip_id}/times.json", json.dumps(meta, indent=1))
        return buffer.getvalue()


@dataclass
class _Request:
    kind: str
    at: float
    clip_id: str
    extra: dict[str, Any]


class Evidence:
    """The ring and the clips of one camera. ``request`` from the loop; ``on_frame`` and
    ``cut`` from the camera thread; the files from a writer thread of its own."""

    def __init__(self, store: ClipStore, table_id: str,
                 settings: EvidenceSettings | None = None) -> None:
        self.settings = settings or EvidenceSettings()
        s = self.settings
        self.store = store
        self.table_id = table_id
        self.ring = FrameRing(s.ring_ms, s.ring_frames, s.ring_bytes)
        self._pending: collections.deque[_Request] = collections.deque()
        self._lock = threading.Lock()
        self._writer: concurrent.futures.ThreadPoolExecutor | None = None
        self.saved = 0
        self.refused = 0
        # the clock's steps between two instants (service ms), set by the adapter: put in
        # each clip's sidecar at its cut, so the referee sees the frames beside the clock's
        # times. Called from the camera thread: it must only read (a copied deque).
        self.clock_events: Callable[[float, float], list[dict[str, Any]]] | None = None
        self.encode_ms: collections.deque[float] = collections.deque(maxlen=120)

    def request(self, kind: str, at: float, **extra: Any) -> str | None:
        """A clip around ``at`` (any thread). Its id, or None when too many are waiting."""
        table = re.sub(r"[^A-Za-z0-9_-]", "_", self.table_id)[:24]
        clip_id = f"{table}-{int(at)}-{kind}"
        with self._lock:
            if len(self._pending) >= MAX_PENDING:
                self.refused += 1
                log.warning("camera: clip %s not kept: %d clips already waiting",
                            clip_id, MAX_PENDING)
                return None
            self._pending.append(_Request(kind, at, clip_id, extra))
        return clip_id

    def on_frame(self, frame: Any, at: float) -> None:
        """Camera thread: the frame into the ring, then the clips now complete cut."""
        import time

        started = time.perf_counter()
        self.ring.add(at, encode_frame(frame, self.settings.width, self.settings.quality))
        self.encode_ms.append((time.perf_counter() - started) * 1000)
        self.cut(at)

    def cut(self, now: float) -> None:
        """Camera thread: clips whose last frame (``AFTER_MS`` past their instant) is in."""
        with self._lock:
            ready = [r for r in self._pending if now >= r.at + AFTER_MS]
            for r in ready:
                self._pending.remove(r)
        for r in ready:
            frames = self.ring.window(r.at - BEFORE_MS, r.at + AFTER_MS)
            meta = {"kind": r.kind, "at": round(r.at, 1), "table": self.table_id,
                    "before_ms": BEFORE_MS, "after_ms": AFTER_MS, **r.extra}
            if self.clock_events is not None:
                try:
                    meta["clock"] = self.clock_events(r.at - BEFORE_MS, r.at + AFTER_MS)
                except Exception:  # noqa: BLE001 - a clip without the clock's times is kept
                    log.exception("camera: the clock's times for clip %s", r.clip_id)
            if self._writer is None:
                self._writer = concurrent.futures.ThreadPoolExecutor(
                    1, thread_name_prefix="camera-clips")
            future = self._writer.submit(self.store.save, r.clip_id, meta, frames)
            future.add_done_callback(self._saved)

    def _saved(self, future: concurrent.futures.Future[dict[str, Any]]) -> None:
        exc = future.exception()
        if exc is not None:
            log.error("camera: clip not saved: %r", exc)
        else:
            self.saved += 1

    def flush(self, timeout: float = 5.0) -> None:
        """Wait for the clips handed to the writer (tests, close)."""
        if self._writer is not None:
            self._writer.submit(lambda: None).result(timeout=timeout)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None

    def status(self) -> dict[str, Any]:
        costs = sorted(self.encode_ms)
        return {"ring_frames": len(self.ring.frames), "ring_bytes": self.ring.bytes,
                "pending": len(self._pending), "saved": self.saved, "refused": self.refused,
                "encode_ms_p50": round(costs[len(costs) // 2], 2) if costs else None}
