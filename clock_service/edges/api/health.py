"""``/api/health``: liveness, counts, each part's status and the current faults."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from clock_service.service.doors import error_responses, runtime_of
from clock_service.service.wire import HealthResponse

__all__ = ["router"]

router = APIRouter()


@router.get("/api/health", tags=["service"], response_model=None,
            responses={200: {"model": HealthResponse}, **error_responses(429)})
async def health(request: Request) -> dict[str, Any]:
    """Liveness, counts, the status of each part (``components``) and the current
    ``faults`` (the same list the pages show)."""
    runtime = runtime_of(request)
    return {"ok": True, "tables": len(runtime.tables), "clients": runtime.hub.count(),
            "server_time": runtime.time.now_ms(),
            "delivered": runtime.hub.delivered, "cut_off": runtime.hub.cut_off,
            "components": runtime.health.components(),
            "faults": runtime.health.faults()}
