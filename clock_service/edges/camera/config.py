"""Which camera a service watches its table with, from its settings
(clock_service/service/settings.py: camera, camera_mode, camera_table, camera_calibration)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from clock_service.edges.camera.modes import MODES
from clock_service.edges.camera.source import SourceSpec, parse_source

if TYPE_CHECKING:
    from clock_service.service.settings import Settings

__all__ = ["CameraConfig", "load_camera_config"]


@dataclass(frozen=True)
class CameraConfig:
    source: str
    spec: SourceSpec
    mode: str
    table_id: str
    calibration_path: Path
    clips: int = 0
    clips_mb: int = 0
    clips_dir: Path | None = None


def load_camera_config(settings: Settings) -> CameraConfig | None:
    """None when no camera is set; ``ValueError`` (with the reason) for a bad setting."""
    source = (settings.camera or "").strip()
    if not source:
        return None
    spec = parse_source(source)
    mode = settings.camera_mode
    if mode not in MODES:
        raise ValueError(f"SHOTCLOCK_CAMERA_MODE must be one of {list(MODES)}, got {mode!r}")
    if settings.camera_clips < 0 or settings.camera_clips_mb < 0:
        raise ValueError("SHOTCLOCK_CAMERA_CLIPS and SHOTCLOCK_CAMERA_CLIPS_MB cannot be "
                         "negative")
    return CameraConfig(source, spec, mode, settings.camera_table_id,
                        settings.camera_calibration_path, settings.camera_clips,
                        settings.camera_clips_mb, settings.camera_clips_dir)
