"""HTTP routes of the tournament around the table (reading needs no referee token)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from clock_service import presets
from clock_service.schemas import ErrorResponse, PresetOut

__all__ = ["router"]

router = APIRouter(tags=["tournament"])


@router.get("/api/presets", response_model=list[PresetOut])
async def list_presets() -> list[dict[str, Any]]:
    """The named time profiles: built-in (section 12, WPA §20, Mosconi-style, two
    extensions in the deciding frame) and the federation's own (SHOTCLOCK_PRESETS_DIR).
    Name one in a table's or match's profile: ``{"preset": "wpa-20"}``."""
    return [p.to_dict() for p in presets.library().presets.values()]


@router.get("/api/presets/{name}", response_model=PresetOut,
            responses={404: {"model": ErrorResponse}})
async def get_preset(name: str) -> Any:
    """One preset with its source and its full profile."""
    preset = presets.library().presets.get(name)
    if preset is None:
        return JSONResponse({"error": {
            "code": "unknown_preset",
            "message": f"no preset {name!r}; known: {sorted(presets.library().presets)}"}},
            status_code=404)
    return preset.to_dict()
