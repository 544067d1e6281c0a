"""The pages served by the service: referee console, stream overlay, table display, hall view.

Everything is served from this package (no CDN, no build step): each page is a static HTML
file under ``static/`` that loads the shared modules in ``static/js/`` (connection, clock
offset, countdown rendering, i18n, the phases generated from the core's tables). The table
is chosen in the browser (``?table=ID``).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["mount_pages", "STATIC_DIR", "PAGES"]

STATIC_DIR = Path(__file__).parent / "static"

# URL path -> HTML file under STATIC_DIR.
PAGES: dict[str, str] = {
    "/": "hall.html",
    "/referee": "referee.html",
    "/overlay": "overlay.html",
    "/display": "display.html",
    "/calibrate": "calibrate.html",  # the overhead camera's table corners (issue 15)
    "/clips": "clips.html",  # the camera's clips of a match, frame by frame (issue 21)
    # Live match statistics for commentators (reports, issue 14); the protocol page
    # (/report?match=ID) is rendered by clock_service/edges/reports/routes.py.
    "/stats": "stats.html",
    # The director's desk (issue 36): tables, referees' tokens, the draw, results.
    "/desk": "desk.html",
}


def _page_route(app: FastAPI, path: str, filename: str) -> None:
    file = STATIC_DIR / filename

    async def page() -> FileResponse:
        # no-cache: a page left open at a table must pick up a new version on reload.
        return FileResponse(file, media_type="text/html; charset=utf-8",
                            headers={"Cache-Control": "no-cache"})

    app.add_api_route(path, page, methods=["GET"], include_in_schema=False,
                      name=f"page:{filename}")


def mount_pages(app: FastAPI) -> None:
    """Serve the pages at /, /referee, /overlay, /display and their assets under /static."""
    for path, filename in PAGES.items():
        _page_route(app, path, filename)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
