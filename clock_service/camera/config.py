"""Which camera a service watches its table with, from the environment.

  SHOTCLOCK_CAMERA              device (0, /dev/video0), stream URL or video file; unset: none
  SHOTCLOCK_CAMERA_MODE         assist (default) | auto
  SHOTCLOCK_CAMERA_TABLE        the table it looks at (default: the service's default table)
  SHOTCLOCK_CAMERA_CALIBRATION  the corners file (default: camera-calibration.json beside
                                the SQLite store)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from clock_service.camera.modes import MODES
from clock_service.camera.source import SourceSpec, parse_source

__all__ = ["CameraConfig", "load_camera_config"]


@dataclass(frozen=True)
class CameraConfig:
    source: str
    spec: SourceSpec
    mode: str
    table_id: str
    calibration_path: Path


def load_camera_config(db: str, default_table: str | None,
                       environ: Mapping[str, str] | None = None) -> CameraConfig | None:
    """None when no camera is set; ``ValueError`` (with the reason) for a bad setting."""
    env = os.environ if environ is None else environ
    source = (env.get("SHOTCLOCK_CAMERA") or "").strip()
    if not source:
        return None
    spec = parse_source(source)
    mode = (env.get("SHOTCLOCK_CAMERA_MODE") or "assist").strip().lower()
    if mode not in MODES:
        raise ValueError(f"SHOTCLOCK_CAMERA_MODE must be one of {list(MODES)}, got {mode!r}")
    table = (env.get("SHOTCLOCK_CAMERA_TABLE") or default_table or "1").strip()
    path = env.get("SHOTCLOCK_CAMERA_CALIBRATION") or str(
        Path(db).parent / "camera-calibration.json")
    return CameraConfig(source, spec, mode, table, Path(path))
