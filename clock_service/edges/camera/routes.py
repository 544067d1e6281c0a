"""HTTP for the camera: its status, its latest frame, and the calibration the page sets.

Mounted by ``shotclock serve`` only when a camera is configured (``cli.py``).
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from pydantic import BaseModel, Field

from clock_service.edges.camera.adapter import CameraAdapter
from clock_service.edges.camera.appearance import keep_learned
from clock_service.edges.camera.geometry import Calibration, CalibrationError
from clock_service.service.wire.fields import LOG_ID_PATTERN, MATCH_ID_PATTERN

__all__ = ["camera_router", "CalibrationBody", "MAX_CLIPS_PAGE"]

MAX_CLIPS_PAGE = 100  # clips in one answer at most (the store keeps 100 by default)
MATCH_ID = MATCH_ID_PATTERN
# Pixels: a frame's size and a point on it (a corner may be clicked a little outside).
MAX_PIXELS = 65_536
Pixel = Annotated[float, Field(ge=-MAX_PIXELS, le=MAX_PIXELS)]
FrameSide = Annotated[int, Field(ge=1, le=MAX_PIXELS)]
CLIP_FILE = r"^[A-Za-z0-9_-]{1,80}\.(?:json|mjpeg|zip)$"


class CalibrationBody(BaseModel):
    corners: list[tuple[Pixel, Pixel]] = Field(
        min_length=4, max_length=4,
        description="the playing area's corners inside the cushions, in frame pixels, going "
        "round the table; the first is the bed's origin")
    frame_size: tuple[FrameSide, FrameSide] = Field(
        description="width and height of the frame clicked on")
    learn: bool = Field(True, description="learn the balls' and the felt's look from the "
                        "camera's latest frame (issue 21 point 3a; the balls at rest, apart, "
                        "nothing over the table); when it cannot, the corners are saved "
                        "alone and ``warning`` says why")


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def camera_router(camera: CameraAdapter) -> APIRouter:
    """The camera's routes over ``camera`` (mounted only when there is one). Who may
    calibrate it is in the access table (clock_service/service/access.py)."""
    router = APIRouter(prefix="/api/camera", tags=["camera"])
    matches = APIRouter()

    @router.get("")
    async def camera_status(request: Request) -> Any:
        adapter = camera
        if adapter is None:
            return _error(404, "no_camera", "no camera is configured (SHOTCLOCK_CAMERA)")
        out = adapter.status()
        cal = adapter.calibration
        out["calibration"] = cal.to_dict() if cal is not None else None
        return out

    @router.get("/frame.jpg")
    async def camera_frame(request: Request) -> Any:
        adapter = camera
        if adapter is None:
            return _error(404, "no_camera", "no camera is configured (SHOTCLOCK_CAMERA)")
        frame = adapter.last_frame
        if frame is None:
            return _error(503, "no_frame", "the camera has not given a frame yet")

        def encode() -> bytes:
            import cv2

            ok, data = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, 85])
            return bytes(data) if ok else b""

        body = await asyncio.to_thread(encode)  # off the loop: a 1080p encode takes ms
        return Response(body, media_type="image/jpeg", headers={"Cache-Control": "no-store"})

    @router.get("/view.jpg")
    async def camera_view(request: Request, felt: bool = False) -> Any:
        """What the detector sees (issue 21 point 3b): the last frame it looked at, at most
        800 px wide, with each ball's outline (white balls white, the coloured ball
        orange), the bed's outline, and with ``felt=1`` the felt mask tinted blue. Headers:
        ``X-Camera-Balls`` (balls found), ``X-Camera-Frame`` (the frame's number),
        ``X-Camera-Size`` (the frame's own size, ``1280x720``: corners are clicked in
        it). Made off the event loop, at most 4 new images a second whatever the number
        of clients (a client asking faster gets the last one again); 503 ``camera_busy`` when
        16 requests already wait."""
        adapter = camera
        if adapter is None:
            return _error(404, "no_camera", "no camera is configured (SHOTCLOCK_CAMERA)")
        seen = adapter.seen
        if seen is None:
            return _error(503, "no_frame", "the camera has not given a frame yet")
        if adapter.live.busy():
            adapter.live.refused += 1
            return _error(503, "camera_busy", "too many live view requests are waiting; ask again")
        image = await adapter.live.image(seen, adapter.calibration, felt=felt)
        return Response(image.jpeg, media_type="image/jpeg", headers={
            "Cache-Control": "no-store", "X-Camera-Balls": str(image.balls),
            "X-Camera-Frame": str(image.number),
            "X-Camera-Size": f"{image.size[0]}x{image.size[1]}"})

    def _clips(request: Request) -> Any:
        adapter = camera
        if adapter is None:
            return _error(404, "no_camera", "no camera is configured (SHOTCLOCK_CAMERA)")
        if adapter.evidence is None:
            return _error(404, "no_clips", "camera clips are off (SHOTCLOCK_CAMERA_CLIPS=0)")
        return adapter.evidence.store

    @router.get("/clips")
    async def camera_clips(
        request: Request,
        match: str | None = Query(None, pattern=MATCH_ID, description="only this match's "
                                  "clips (its id, '<table>.<number>')"),
        table: str | None = Query(None, pattern=LOG_ID_PATTERN,
                                  description="only this table's clips"),
        kind: Literal["rest", "strike", "time_foul"] | None = Query(None),
        limit: int = Query(MAX_CLIPS_PAGE, ge=1, le=MAX_CLIPS_PAGE,
                           description=f"the newest this many (at most {MAX_CLIPS_PAGE})"),
    ) -> Any:
        """The clips kept (issue 21 point 5), oldest first: id, kind (rest, strike,
        time_foul), at (the instant, service ms), table, match, bytes, n_frames and the
        clock's steps in the clip's window (``clock``)."""
        store = _clips(request)
        if isinstance(store, JSONResponse):
            return store
        clips = await asyncio.to_thread(store.list)
        if table is not None:
            clips = [c for c in clips if c.get("table") == table]
        return {"clips": _select(clips, match, kind, limit)}

    @router.get("/clips/{name}")
    async def camera_clip(name: Annotated[str, Path(pattern=CLIP_FILE)],
                          request: Request) -> Any:
        """``<id>.json`` (each frame's capture time, offset and length), ``<id>.mjpeg``
        (the frames one after another) or ``<id>.zip`` (a JPEG per frame and times.json)."""
        store = _clips(request)
        if isinstance(store, JSONResponse):
            return store
        clip_id, _, ext = name.rpartition(".")
        missing = _error(404, "no_clip", f"no clip {name!r}: see GET /api/camera/clips")
        if ext == "json":
            meta = await asyncio.to_thread(store.meta, clip_id)
            return missing if meta is None else meta
        if ext == "mjpeg":
            path = await asyncio.to_thread(store.video_path, clip_id)
            return missing if path is None else FileResponse(
                path, media_type="video/x-motion-jpeg", filename=f"{clip_id}.mjpeg")
        if ext == "zip":
            body = await asyncio.to_thread(store.zipped, clip_id)
            return missing if body is None else Response(
                body, media_type="application/zip",
                headers={"Content-Disposition": f'attachment; filename="{clip_id}.zip"'})
        return missing

    @matches.get("/api/matches/{match_id}/clips", tags=["matches", "camera"])
    async def match_clips(request: Request, match_id: str = Path(pattern=MATCH_ID)) -> Any:
        """The camera's clips of one match (the record's link to its video evidence):
        each with its viewer's address (``/clips?match=<id>&clip=<clip id>``)."""
        store = _clips(request)
        if isinstance(store, JSONResponse):
            return store
        clips = _select(await asyncio.to_thread(store.list), match_id, None, MAX_CLIPS_PAGE)
        return {"match": match_id, "clips": [
            {**clip, "view": f"/clips?match={match_id}&clip={clip['id']}"} for clip in clips]}

    @router.put("/calibration")
    async def camera_calibrate(body: CalibrationBody, request: Request) -> Any:
        adapter = camera
        if adapter is None:
            return _error(404, "no_camera", "no camera is configured (SHOTCLOCK_CAMERA)")
        try:
            calibration = Calibration(tuple(body.corners), body.frame_size)
        except CalibrationError as exc:
            return _error(422, "invalid_calibration", str(exc))
        warning: dict[str, Any] | None = None
        frame = adapter.last_frame
        if body.learn and frame is not None:
            from clock_service.edges.camera.appearance import AppearanceError, learn_appearance

            try:  # off the loop: it runs the detector over the frame
                calibration = await asyncio.to_thread(learn_appearance, calibration, frame)
            except AppearanceError as exc:
                warning = {"code": "appearance_not_learned", "message": str(exc)}
        elif body.learn:
            warning = {"code": "appearance_not_learned",
                       "message": "the camera has not given a frame yet"}
        learned = calibration.appearance is not None
        calibration = keep_learned(calibration, adapter.calibration)
        kept = not learned and calibration.appearance is not None
        if kept and calibration.appearance is not None:
            # a save that cannot learn never loses the look learned before (issue 37
            # point 3): kept, and said so
            why = warning["message"] if warning is not None else "learning was not asked for"
            warning = {"code": "appearance_kept", "message": f"{why}; the look learned "
                       f"before (from {calibration.appearance.balls} balls) is kept",
                       "vars": {"n": calibration.appearance.balls}}
        await asyncio.to_thread(calibration.save, adapter.calibration_path)
        adapter.calibrate(calibration)
        out: dict[str, Any] = {"calibration": calibration.to_dict(), "learned": learned,
                               "appearance": "learned" if learned else
                               "kept" if kept else "none"}
        if warning is not None:
            out["warning"] = warning
        return out

    outer = APIRouter()
    outer.include_router(router)
    outer.include_router(matches)
    return outer


def _select(clips: list[dict[str, Any]], match: str | None, kind: str | None,
            limit: int) -> list[dict[str, Any]]:
    """The newest ``limit`` clips of a match and kind (either None: any), oldest first."""
    out = [c for c in clips if (match is None or c.get("match") == match)
           and (kind is None or c.get("kind") == kind)]
    return out[-limit:]
