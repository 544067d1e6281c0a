"""``/api/health``: liveness, counts, each part's status and the current faults."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from clock_service.service.doors import error_responses, served_of
from clock_service.service.redaction import redact_all
from clock_service.service.wire.http import HealthResponse

__all__ = ["router"]

router = APIRouter()


@router.get("/api/health", tags=["service"], response_model=None,
            responses={200: {"model": HealthResponse}, **error_responses(429)})
async def health(request: Request) -> dict[str, Any]:
    """Liveness, counts, the status of each part (``components``) and the current
    ``faults`` (the same list the pages show). Open to anyone, so nothing in it is a
    secret or says where one lives: every string goes through the one redaction
    (clock_service/service/redaction.py), and the parts show no key paths."""
    served = served_of(request)
    runtime = served.runtime
    answer = {"ok": True, "tables": len(runtime.tables), "clients": runtime.hub.count(),
              "server_time": runtime.time.now_ms(),
              "delivered": runtime.hub.delivered, "cut_off": runtime.hub.cut_off,
              "components": runtime.health.components(),
              "faults": runtime.health.faults()}
    return dict(redact_all(answer, (served.settings.referee_token,)))
