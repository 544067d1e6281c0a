"""The table-side hardware of this service: the display's brightness."""

from __future__ import annotations

from typing import Any, Protocol

from fastapi import APIRouter

from clock_service.core.errors import NoHardware
from clock_service.service.doors import error_responses
from clock_service.service.wire.http import BrightnessRequest, BrightnessResponse

__all__ = ["router", "Dimmable"]


class Dimmable(Protocol):
    """What the route needs of the hardware (firmware_bridge.monitor.HardwareMonitor)."""

    table: str

    def set_brightness(self, level: int) -> int:
        """Set the display's level; LookupError when there is none that can be dimmed."""
        ...


def router(hardware: Dimmable | None) -> APIRouter:
    """The brightness route over this service's display (None: it drives none)."""
    routes = APIRouter()

    @routes.put("/api/hardware/brightness", tags=["hardware"], response_model=None,
                responses={200: {"model": BrightnessResponse},
                           **error_responses(400, 401, 403, 404, 413, 422, 429)})
    async def set_brightness(body: BrightnessRequest) -> dict[str, Any]:
        """Dim or brighten this service's table display (night/day); 404 no_hardware when
        it drives none that can be dimmed. Not stored: the configured level comes back
        after a restart."""
        try:
            if hardware is None:
                raise LookupError("no table-side hardware is configured")
            level = hardware.set_brightness(body.level)
        except LookupError as exc:
            raise NoHardware(f"cannot dim: {exc}") from None
        return {"brightness": level, "table": hardware.table}

    return routes
