"""The table-side hardware's status and faults, for ``/api/health`` and the console.

Plugs into the service's status channel (``runtime.health``, TEAM convention 2): the
``hardware`` component shows the display (connected, last ACK age), the buttons seen since
start-up and the pedal; a fault is raised for what needs a person: a device that failed
to open, a missing ``gpio``/``dialout``/``input`` permission, a display that does not
acknowledge (issue 10, defects 2, 4 and 10). Everything runs on the event loop: the
drivers' threads only update plain attributes that a check reads every CHECK_S.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from typing import Any

from clock_service.service.status import Health
from firmware_bridge.config import HardwareConfig, permission_problems
from firmware_bridge.interfaces import Buttons, Buzzer, Display

__all__ = ["HardwareMonitor", "CHECK_S"]

log = logging.getLogger(__name__)

CHECK_S = 0.25


def _is_permission(exc: BaseException | None) -> bool:
    while exc is not None:
        if isinstance(exc, PermissionError) or getattr(exc, "errno", None) in (
                errno.EACCES, errno.EPERM):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class HardwareMonitor:
    def __init__(self, health: Health, config: HardwareConfig) -> None:
        self.health = health
        self.config = config
        self.table = config.table_id
        self.display: Display | None = None
        self.buzzer: Buzzer | None = None
        self.buttons: Buttons | None = None
        self.failed: dict[str, str] = {}  # device -> why it did not open
        self._handle: asyncio.TimerHandle | None = None

    # -- start-up ----------------------------------------------------------------------------
    def check_permissions(self) -> None:
        """Say plainly (WARNING, and a fault) when a device's group is missing."""
        for device, _group, message in permission_problems(self.config):
            log.warning("table %s: %s", self.table, message)
            self.health.fault(f"hardware.permission.{device}", component="hardware",
                              code="no_permission", message=message, table=self.table)

    def device_failed(self, name: str, exc: Exception) -> None:
        """``build_devices``' on_error: loud and visible, never a mere log line (defect 2)."""
        why = f"{type(exc).__name__}: {exc}"
        self.failed[name] = why
        if _is_permission(exc):
            code = "no_permission"
            message = (f"{name} failed to open: no permission ({why}); add the service's user "
                       "to the gpio/dialout/input group")
        else:
            code = "device_failed"
            message = f"{name} failed to open ({why}); the clock runs without it"
        log.error("table %s: %s", self.table, message)
        self.health.fault(f"hardware.{name}.open", component="hardware", code=code,
                          message=message, table=self.table)

    def attach(self, display: Display | None, buzzer: Buzzer | None,
               buttons: Buttons | None) -> None:
        self.display, self.buzzer, self.buttons = display, buzzer, buttons
        self.health.register("hardware", self.status)
        self._handle = asyncio.get_running_loop().call_later(CHECK_S, self._tick)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    # -- the periodic check ------------------------------------------------------------------
    def _tick(self) -> None:
        try:
            self.check()
        except Exception:  # a monitor fault must never stop the clock
            log.exception("hardware check failed")
        self._handle = asyncio.get_running_loop().call_later(CHECK_S, self._tick)

    def check(self) -> None:
        """Raise or clear the display's faults from what its driver last saw."""
        display = self.display
        key = f"hardware.display.{self.table}"
        fault: tuple[str, str] | None = None
        connected = getattr(display, "connected", None)
        if connected is False:
            error = getattr(display, "open_error", None)
            if error is not None:
                port = getattr(display, "port", "?")
                if _is_permission(error):
                    fault = ("no_permission", f"display port {port}: no permission ({error}); "
                             "add the service's user to the dialout group")
                else:
                    fault = ("display_unavailable", f"display port {port} cannot be opened "
                             f"({error}); retrying")
        elif getattr(display, "ack_silent", None) is not None and display.ack_silent():  # type: ignore[union-attr]
            age = display.ack_age_s() or 0.0  # type: ignore[union-attr]
            fault = ("display_not_acknowledging",
                     f"the display controller has not acknowledged anything for {age:.1f} s: "
                     "dead, wrong firmware or baud rate, or at its REPL; the digits may be "
                     "wrong or blank")
        elif display is not None and getattr(display, "last_write_acked", None) is False:
            fault = ("display_not_acknowledging",
                     "the TM1637 did not acknowledge the last write: check CLK/DIO wiring "
                     "and power")
        if fault is None:
            self.health.clear(key)
        else:
            self.health.fault(key, component="hardware", code=fault[0], message=fault[1],
                              table=self.table)

    # -- status (cheap, no I/O) ------------------------------------------------------------------
    def set_brightness(self, level: int) -> int:
        setter = getattr(self.display, "set_brightness", None)
        if setter is None:
            raise LookupError("this table's display cannot be dimmed")
        setter(level)
        return level

    def status(self) -> dict[str, Any]:
        display = self.display
        display_status: dict[str, Any] | None = None
        if display is not None:
            get = getattr(display, "status", None)
            display_status = {"driver": type(display).__name__, **(get() if get else {})}
        buttons_status = getattr(self.buttons, "status", None)
        return {
            "kind": self.config.kind,
            "table": self.table,
            "display": display_status,
            "buzzer": None if self.buzzer is None else type(self.buzzer).__name__,
            "buttons": buttons_status() if buttons_status else None,
            "failed": dict(self.failed),
        }
