"""The pages served by the service: referee console, stream overlay, table display, hall view.

Everything is served from this package (no CDN, no build step).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

__all__ = ["mount_pages", "STATIC_DIR"]

STATIC_DIR = Path(__file__).parent / "static"


def mount_pages(app: FastAPI) -> None:
    """Serve the pages' assets under /static (the page routes are added here too)."""
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
