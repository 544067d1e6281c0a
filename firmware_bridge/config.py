"""Which table-side hardware a service drives, from the environment and an optional TOML file.

Environment (wins over the file):
  SHOTCLOCK_HARDWARE         none | gpio | serial   (default: none, or the file's ``kind``)
  SHOTCLOCK_SERIAL_PORT      e.g. /dev/shotclock-display, /dev/serial0, loop://
  SHOTCLOCK_HARDWARE_CONFIG  path to a TOML file (see deploy/shotclock.toml.example)
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from firmware_bridge.errors import HardwareConfigError, HardwareError
from firmware_bridge.gpio import DEFAULT_BUTTON_PINS, DEFAULT_BUZZER_PIN, DEFAULT_TM1637_PINS
from firmware_bridge.interfaces import BUTTONS, Buttons, Buzzer, Display

__all__ = ["KINDS", "HardwareConfig", "load_config", "build_devices"]

KINDS = ("none", "gpio", "serial")
BCM_PINS = range(0, 28)


@dataclass(frozen=True)
class HardwareConfig:
    kind: str = "none"
    table_id: str = "1"
    serial_port: str | None = None
    baudrate: int = 115200
    button_pins: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_BUTTON_PINS))
    buttons_enabled: bool = True  # serial mode may still read buttons on the Pi's GPIO
    buzzer_pin: int | None = DEFAULT_BUZZER_PIN
    buzzer_tonal: bool = False
    tm1637_clk: int = DEFAULT_TM1637_PINS[0]
    tm1637_dio: int = DEFAULT_TM1637_PINS[1]
    brightness: int = 7
    debounce_ms: float = 15.0
    long_press_ms: float = 1000.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise HardwareConfigError(f"hardware kind must be one of {KINDS}, got {self.kind!r}")
        if not self.table_id or not isinstance(self.table_id, str):
            raise HardwareConfigError(f"table_id must be a non-empty string, got {self.table_id!r}")
        if self.kind == "serial" and not self.serial_port:
            raise HardwareConfigError(
                "hardware kind 'serial' needs a port: set SHOTCLOCK_SERIAL_PORT or serial.port"
            )
        if not isinstance(self.baudrate, int) or self.baudrate <= 0:
            raise HardwareConfigError(
                f"baud rate must be a positive integer, got {self.baudrate!r}"
            )
        unknown = set(self.button_pins) - set(BUTTONS)
        if unknown:
            raise HardwareConfigError(f"unknown buttons {sorted(unknown)}; expected {BUTTONS}")
        pins = {f"buttons.{k}": v for k, v in self.button_pins.items()}
        if self.kind == "gpio":
            pins |= {"display.clk": self.tm1637_clk, "display.dio": self.tm1637_dio}
        if self.buzzer_pin is not None and self.kind == "gpio":
            pins["buzzer.pin"] = self.buzzer_pin
        for name, pin in pins.items():
            if not isinstance(pin, int) or isinstance(pin, bool) or pin not in BCM_PINS:
                raise HardwareConfigError(f"{name} must be a BCM pin 0..27, got {pin!r}")
        used: dict[int, str] = {}
        for name, pin in pins.items():
            if pin in used:
                raise HardwareConfigError(f"{name} and {used[pin]} both use BCM pin {pin}")
            used[pin] = name
        if not 0 <= self.brightness <= 7:
            raise HardwareConfigError(f"display.brightness must be 0..7, got {self.brightness!r}")
        if not 0 <= self.debounce_ms < self.long_press_ms:
            raise HardwareConfigError(
                f"need 0 <= debounce_ms < long_press_ms, got {self.debounce_ms!r}, "
                f"{self.long_press_ms!r}"
            )


# TOML layout -> field names. Flat keys so the example file reads like a wiring sheet.
_TOML_KEYS = {
    ("kind",): "kind",
    ("table_id",): "table_id",
    ("serial", "port"): "serial_port",
    ("serial", "baudrate"): "baudrate",
    ("buttons", "enabled"): "buttons_enabled",
    ("buttons", "debounce_ms"): "debounce_ms",
    ("buttons", "long_press_ms"): "long_press_ms",
    ("buzzer", "pin"): "buzzer_pin",
    ("buzzer", "tonal"): "buzzer_tonal",
    ("display", "clk"): "tm1637_clk",
    ("display", "dio"): "tm1637_dio",
    ("display", "brightness"): "brightness",
}


def _from_toml(data: Mapping[str, Any], source: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    known_sections = {"serial", "buttons", "buzzer", "display"}
    for key in data:
        if key not in known_sections and (key,) not in _TOML_KEYS:
            raise HardwareConfigError(f"{source}: unknown key {key!r}")
    for path, name in _TOML_KEYS.items():
        node: Any = data
        for part in path:
            node = node.get(part) if isinstance(node, Mapping) else None
        if node is not None:
            values[name] = node
    pins = (data.get("buttons") or {}).get("pins")
    if pins is not None:
        if not isinstance(pins, Mapping):
            raise HardwareConfigError(f"{source}: buttons.pins must be a table, got {pins!r}")
        values["button_pins"] = {**DEFAULT_BUTTON_PINS, **pins}
    if "table_id" in values:
        values["table_id"] = str(values["table_id"])
    return values


def load_config(environ: Mapping[str, str] | None = None) -> HardwareConfig:
    """Build the config from the environment (default ``os.environ``) and the TOML it names."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    path = env.get("SHOTCLOCK_HARDWARE_CONFIG")
    if path:
        try:
            with Path(path).open("rb") as f:
                data = tomllib.load(f)
        except FileNotFoundError as exc:
            raise HardwareConfigError(f"SHOTCLOCK_HARDWARE_CONFIG: no file at {path!r}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise HardwareConfigError(f"{path}: not valid TOML: {exc}") from exc
        values |= _from_toml(data, path)
    if env.get("SHOTCLOCK_HARDWARE"):
        values["kind"] = env["SHOTCLOCK_HARDWARE"].strip().lower()
    if env.get("SHOTCLOCK_SERIAL_PORT"):
        values["serial_port"] = env["SHOTCLOCK_SERIAL_PORT"]
    names = {f.name for f in fields(HardwareConfig)}
    assert set(values) <= names
    return HardwareConfig(**values)


def build_devices(
    config: HardwareConfig,
    now_ms: Callable[[], float] | None = None,
    *,
    on_error: Callable[[str, Exception], None] | None = None,
) -> tuple[Display | None, Buzzer | None, Buttons | None]:
    """Real drivers for the configured hardware; (None, None, None) for "none".

    ``now_ms``: the service's clock, used to timestamp button presses at the edge.
    ``on_error``: when given, a device that fails to open is reported as
    ``on_error(name, exc)`` and left out (None) so the others still work; without it the
    failure is raised as a :class:`HardwareError`.

    For "none" the caller supplies its own (terminal) display. In serial mode the controller
    drives digits and horn; buttons still come from the Pi's GPIO unless disabled.
    """
    if config.kind == "none":
        return None, None, None

    def opened(name: str, factory: Callable[[], Any]) -> Any:
        try:
            return factory()
        except HardwareConfigError:
            raise
        except Exception as exc:
            if on_error is None:
                raise HardwareError(f"{name} failed to open: {exc}") from exc
            on_error(name, exc)
            return None

    buttons: Buttons | None = None
    if config.buttons_enabled:
        from firmware_bridge.gpio import GpioButtons, _monotonic_ms

        buttons = opened("buttons", lambda: GpioButtons(
            config.button_pins,
            debounce_ms=config.debounce_ms,
            long_press_ms=config.long_press_ms,
            now_ms=now_ms or _monotonic_ms,
        ))
    if config.kind == "serial":
        from firmware_bridge.serial_display import SerialDisplay

        assert config.serial_port is not None
        # Never fails here: the port is opened (and reopened) by the driver's own thread.
        serial_display = SerialDisplay(config.serial_port, config.baudrate)
        return serial_display, serial_display, buttons
    from firmware_bridge.gpio import GpioBuzzer, TM1637Display

    display = opened("display", lambda: TM1637Display(
        config.tm1637_clk, config.tm1637_dio, brightness=config.brightness))
    buzzer_pin = config.buzzer_pin
    buzzer = (
        opened("buzzer", lambda: GpioBuzzer(buzzer_pin, tonal=config.buzzer_tonal))
        if buzzer_pin is not None
        else None
    )
    return display, buzzer, buttons
