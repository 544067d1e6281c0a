"""The table side of ``shotclock serve``: the table's devices as one part of the service.

``TableSide`` opens the configured display, buzzer and buttons (hardware if configured,
else the terminal, or nothing) once the runtime has started, and closes them (the digits
blanked) before it stops. A device that fails to open is a fault in ``/api/health`` and on
the console (and in the log): the clock runs without it, and the serial driver keeps
reconnecting by itself. The display shows its self-test (all segments, a chirp) first.

``blank(config)``: the ``shotclock blank`` command's work (the units' ``ExecStopPost=``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from clock_service.service.runtime import Runtime
from clock_service.service.settings import Settings
from firmware_bridge.bridge import TableBridge
from firmware_bridge.config import HardwareConfig, build_devices
from firmware_bridge.monitor import HardwareMonitor
from firmware_bridge.terminal import TerminalDisplay

__all__ = ["TableSide", "blank"]

log = logging.getLogger("shotclock.hardware")


class TableSide:
    """The table's devices beside the API (``config``: the hardware configuration, read
    and checked before the service starts; ``monitor``: their status for /api/health)."""

    def __init__(self, runtime: Runtime, settings: Settings, config: HardwareConfig,
                 monitor: HardwareMonitor) -> None:
        self.runtime = runtime
        self.settings = settings
        self.config = config
        self.monitor = monitor
        self.bridge: TableBridge | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    @property
    def dimmable(self) -> HardwareMonitor | None:
        """The monitor, for the brightness route, when there are devices to dim."""
        return self.monitor if self.config.kind != "none" or self.config.hid_device else None

    def on_signal(self) -> None:
        """From the signal handler: hop onto the loop (call_soon_threadsafe is safe here)."""
        loop, bridge = self.loop, self.bridge
        if loop is not None and bridge is not None:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(bridge.driver.blank)

    async def start(self) -> None:
        runtime, settings, config, monitor = (self.runtime, self.settings, self.config,
                                              self.monitor)
        self.loop = asyncio.get_running_loop()
        bridge = None
        if config.kind != "none" or config.hid_device:
            monitor.check_permissions()
            display, buzzer, buttons = build_devices(
                config, now_ms=runtime.time.now_ms, on_error=monitor.device_failed)
            if display is None and settings.display == "terminal" and config.kind == "none":
                display = TerminalDisplay(config.table_id)
            bridge = TableBridge(runtime, config.table_id, display=display,
                                 buzzer=buzzer, buttons=buttons)
            monitor.attach(display, buzzer, buttons)
            log.info("table %s: %s hardware attached", config.table_id, config.kind)
        else:
            monitor.attach(None, None, None)  # /api/health still says "none"
            if settings.display == "terminal":
                table_id = settings.default_table or "1"
                bridge = TableBridge(runtime, table_id, display=TerminalDisplay(table_id))
        if bridge is not None:
            bridge.attach(self_test=config.self_test and config.kind != "none")
        self.bridge = bridge

    async def stop(self) -> None:
        self.monitor.close()
        if self.bridge is not None:
            self.bridge.close()


def blank(config: HardwareConfig) -> None:
    """Turn the configured digits off and the buzzer silent. For a serial controller a
    blank frame (the controller shows its ``----`` host-gone pattern a second later).
    Never raises: problems are logged (a blanker must never fail a unit's stop)."""
    blank_log = logging.getLogger("shotclock.blank")
    try:
        if config.kind == "gpio":
            from firmware_bridge.gpio import GpioBuzzer, TM1637Display

            TM1637Display(config.tm1637_clk, config.tm1637_dio, brightness=config.brightness,
                          module=config.display_module, background=False).close()
            if config.buzzer_pin is not None:
                GpioBuzzer(config.buzzer_pin, active_high=config.buzzer_active_high,
                           tonal=config.buzzer_tonal).close()
        elif config.kind == "serial":
            import serial

            from clock_service.core.readout import DisplayFrame
            from firmware_bridge.protocol import WireFrame, encode_frame

            assert config.serial_port is not None
            with serial.serial_for_url(config.serial_port, baudrate=config.baudrate,
                                       timeout=0.2, write_timeout=0.5) as port:
                port.write(encode_frame(0, WireFrame(DisplayFrame("", "off", 0),
                                                     brightness=config.brightness)))
                port.flush()
        blank_log.info("%s display blanked", config.kind)
    except Exception as exc:  # noqa: BLE001 - a blanker must never fail the stop
        blank_log.warning("blanking the %s display failed: %s: %s", config.kind,
                          type(exc).__name__, exc)
