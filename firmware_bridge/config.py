"""Which table-side hardware a service drives, from the environment and an optional TOML file.

Environment (wins over the file):
  SHOTCLOCK_HARDWARE         none | gpio | serial   (default: none, or the file's ``kind``)
  SHOTCLOCK_SERIAL_PORT      e.g. /dev/shotclock-display, /dev/serial0, loop://
  SHOTCLOCK_HARDWARE_CONFIG  path to a TOML file (see deploy/shotclock.toml.example)
"""

from __future__ import annotations

import contextlib
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from firmware_bridge.errors import HardwareConfigError, HardwareError
from firmware_bridge.gpio import DEFAULT_BUTTON_PINS, DEFAULT_BUZZER_PIN, DEFAULT_TM1637_PINS
from firmware_bridge.interfaces import BUTTONS, ButtonPress, Buttons, Buzzer, Display

__all__ = ["KINDS", "HardwareConfig", "CombinedButtons", "load_config", "build_devices",
           "permission_problems"]

KINDS = ("none", "gpio", "serial")
BCM_PINS = range(0, 28)
MODULES = ("dp", "colon")


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
    buzzer_active_high: bool = True  # False: a relay/module that switches on a low input
    tm1637_clk: int = DEFAULT_TM1637_PINS[0]
    tm1637_dio: int = DEFAULT_TM1637_PINS[1]
    display_module: str = "dp"  # "colon": the 4-digit clock module (colon, no points)
    brightness: int = 7
    debounce_ms: float = 10.0
    long_press_ms: float = 1000.0
    long_press: tuple[str, ...] = ("start_shot",)  # buttons whose long press corrects
    # A second press of the same button (GPIO or pedal) within this many ms is ignored (23).
    double_press_ms: float = 300.0
    hid_device: str | None = None  # a USB clicker / foot pedal (/dev/input/by-id/...)
    hid_keys: Mapping[str, str] = field(default_factory=dict)  # KEY_* -> button
    self_test: bool = True  # all segments and a chirp at start-up

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
        unknown = set(self.long_press) - set(BUTTONS)
        if unknown:
            raise HardwareConfigError(
                f"buttons.long_press: unknown buttons {sorted(unknown)}; expected {BUTTONS}")
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
        if self.kind == "serial" and self.serial_port == "/dev/serial0" and {14, 15} & set(used):
            raise HardwareConfigError(
                "serial.port /dev/serial0 is the UART on BCM 14/15, which a button also uses")
        if isinstance(self.brightness, bool) or self.brightness not in range(8):
            raise HardwareConfigError(f"display.brightness must be 0..7, got {self.brightness!r}")
        if self.display_module not in MODULES:
            raise HardwareConfigError(
                f"display.module must be one of {MODULES}, got {self.display_module!r}")
        if not 0 < self.debounce_ms < self.long_press_ms:
            raise HardwareConfigError(
                f"need 0 < debounce_ms < long_press_ms, got {self.debounce_ms!r}, "
                f"{self.long_press_ms!r}"
            )
        if (isinstance(self.double_press_ms, bool)
                or not isinstance(self.double_press_ms, int | float)
                or not 0 <= self.double_press_ms <= 5000):
            raise HardwareConfigError(
                f"buttons.double_press_ms must be 0..5000 ms, got {self.double_press_ms!r}")
        for key, button in self.hid_keys.items():
            if button not in BUTTONS:
                raise HardwareConfigError(
                    f"hid.keys.{key}: unknown button {button!r}; expected one of {BUTTONS}")
        if self.hid_keys and not self.hid_device:
            raise HardwareConfigError("hid.keys is set but hid.device is not")


# TOML layout -> field names. Flat keys so the example file reads like a wiring sheet.
_TOML_KEYS = {
    ("kind",): "kind",
    ("table_id",): "table_id",
    ("self_test",): "self_test",
    ("serial", "port"): "serial_port",
    ("serial", "baudrate"): "baudrate",
    ("buttons", "enabled"): "buttons_enabled",
    ("buttons", "debounce_ms"): "debounce_ms",
    ("buttons", "long_press_ms"): "long_press_ms",
    ("buttons", "long_press"): "long_press",
    ("buttons", "double_press_ms"): "double_press_ms",
    ("buttons", "pins"): "button_pins",
    ("buzzer", "pin"): "buzzer_pin",
    ("buzzer", "tonal"): "buzzer_tonal",
    ("buzzer", "active_high"): "buzzer_active_high",
    ("display", "clk"): "tm1637_clk",
    ("display", "dio"): "tm1637_dio",
    ("display", "module"): "display_module",
    ("display", "brightness"): "brightness",
    ("hid", "device"): "hid_device",
    ("hid", "keys"): "hid_keys",
}
_SECTIONS = {path[0] for path in _TOML_KEYS if len(path) == 2}


def _from_toml(data: Mapping[str, Any], source: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    known = {path for path in _TOML_KEYS}
    for key, value in data.items():
        if key in _SECTIONS:
            if not isinstance(value, Mapping):
                raise HardwareConfigError(f"{source}: [{key}] must be a table, got {value!r}")
            for sub in value:
                if (key, sub) not in known:
                    raise HardwareConfigError(f"{source}: unknown key '{key}.{sub}'")
        elif (key,) not in known:
            raise HardwareConfigError(f"{source}: unknown key {key!r}")
    for path, name in _TOML_KEYS.items():
        node: Any = data
        for part in path:
            node = node.get(part) if isinstance(node, Mapping) else None
        if node is not None:
            values[name] = node
    pins = values.get("button_pins")
    if pins is not None:
        if not isinstance(pins, Mapping):
            raise HardwareConfigError(f"{source}: buttons.pins must be a table, got {pins!r}")
        # Given pins replace the defaults one by one; 0/false removes a default button.
        merged = {**DEFAULT_BUTTON_PINS, **pins}
        values["button_pins"] = {k: v for k, v in merged.items() if v is not False}
    for name in ("long_press",):
        if name in values:
            if not isinstance(values[name], list):
                raise HardwareConfigError(f"{source}: buttons.long_press must be a list of "
                                          f"button names, got {values[name]!r}")
            values[name] = tuple(values[name])
    if "hid_keys" in values and not isinstance(values["hid_keys"], Mapping):
        raise HardwareConfigError(f"{source}: hid.keys must be a table, got "
                                  f"{values['hid_keys']!r}")
    if "table_id" in values:
        values["table_id"] = str(values["table_id"])
    return values


def load_config(environ: Mapping[str, str] | None = None) -> HardwareConfig:
    """Build the config from the environment (default ``os.environ``) and the TOML it names."""
    from clock_service.service.settings import Settings

    settings = Settings.from_env(environ)
    values: dict[str, Any] = {}
    path = settings.hardware_config
    if path:
        try:
            with Path(path).open("rb") as f:
                data = tomllib.load(f)
        except FileNotFoundError as exc:
            raise HardwareConfigError(f"SHOTCLOCK_HARDWARE_CONFIG: no file at {path!r}") from exc
        except PermissionError as exc:
            raise HardwareConfigError(f"SHOTCLOCK_HARDWARE_CONFIG: cannot read {path!r} "
                                      f"({exc.strerror})") from exc
        except tomllib.TOMLDecodeError as exc:
            raise HardwareConfigError(f"{path}: not valid TOML: {exc}") from exc
        values |= _from_toml(data, path)
    if settings.hardware:
        values["kind"] = settings.hardware
    if settings.serial_port:
        values["serial_port"] = settings.serial_port
    names = {f.name for f in fields(HardwareConfig)}
    assert set(values) <= names
    try:
        return HardwareConfig(**values)
    except TypeError as exc:  # e.g. a string where a number belongs
        raise HardwareConfigError(f"{path or 'hardware config'}: {exc}") from exc


class CombinedButtons:
    """Several button sources (GPIO buttons, a USB pedal) as one ``Buttons``."""

    def __init__(self, sources: list[Buttons]) -> None:
        self.sources = sources

    def start(self, on_press: Callable[[ButtonPress], None]) -> None:
        for source in self.sources:
            source.start(on_press)

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for source in self.sources:
            status = getattr(source, "status", None)
            if status is not None:
                out.update(status())
        return out

    def close(self) -> None:
        for source in self.sources:
            with contextlib.suppress(Exception):
                source.close()


def permission_problems(config: HardwareConfig, *, access: Callable[[str, int], bool] = os.access,
                        exists: Callable[[str], bool] = os.path.exists,
                        gpiochips: list[str] | None = None) -> list[tuple[str, str, str]]:
    """(device, group, message) for every configured device this process may not open.

    The usual cause of "no GPIO device opens" or "display port unavailable" on a fresh
    install is a user outside the ``gpio`` / ``dialout`` / ``input`` group; saying so beats a
    bare EACCES (issue 10, defect 10).
    """
    if config.kind == "none" and not config.hid_device:
        return []
    wanted: list[tuple[str, str]] = []
    if config.kind == "gpio" or (config.kind == "serial" and config.buttons_enabled):
        chips = sorted(str(p) for p in Path("/dev").glob("gpiochip*")) if gpiochips is None \
            else gpiochips
        wanted += [(chip, "gpio") for chip in chips]
    if config.kind == "serial" and config.serial_port and config.serial_port.startswith("/dev/"):
        wanted.append((config.serial_port, "dialout"))
    if config.hid_device:
        wanted.append((config.hid_device, "input"))
    user = _user()
    problems = []
    for device, group in wanted:
        if exists(device) and not access(device, os.R_OK | os.W_OK):
            problems.append((device, group,
                             f"no permission to open {device}: user {user} is not in group "
                             f"{group!r} (sudo usermod -aG {group} {user}, then restart)"))
    return problems


def _user() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):
        return str(os.geteuid())


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

    For "none" the caller supplies its own (terminal) display; a HID pedal still works. In
    serial mode the controller drives digits and horn; buttons still come from the Pi's
    GPIO unless disabled.
    """

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

    from firmware_bridge.gpio import _monotonic_ms

    clock = now_ms or _monotonic_ms
    sources: list[Buttons] = []
    if config.buttons_enabled and config.kind != "none" and config.button_pins:
        from firmware_bridge.gpio import GpioButtons

        gpio_buttons = opened("buttons", lambda: GpioButtons(
            config.button_pins,
            debounce_ms=config.debounce_ms,
            long_press_ms=config.long_press_ms,
            long_press=config.long_press,
            double_press_ms=config.double_press_ms,
            now_ms=clock,
        ))
        if gpio_buttons is not None:
            sources.append(gpio_buttons)
    if config.hid_device:
        from firmware_bridge.hid import HidButtons

        device = config.hid_device
        pedal = opened("pedal", lambda: HidButtons(device, config.hid_keys, now_ms=clock,
                                                   double_press_ms=config.double_press_ms))
        if pedal is not None:
            sources.append(pedal)
    buttons: Buttons | None = (
        None if not sources else sources[0] if len(sources) == 1 else CombinedButtons(sources))
    if config.kind == "none":
        return None, None, buttons
    if config.kind == "serial":
        from firmware_bridge.serial_display import SerialDisplay

        assert config.serial_port is not None
        # Never fails here: the port is opened (and reopened) by the driver's own thread.
        serial_display = SerialDisplay(config.serial_port, config.baudrate,
                                       brightness=config.brightness)
        return serial_display, serial_display, buttons
    from firmware_bridge.gpio import GpioBuzzer, TM1637Display

    display = opened("display", lambda: TM1637Display(
        config.tm1637_clk, config.tm1637_dio, brightness=config.brightness,
        module=config.display_module))
    buzzer_pin = config.buzzer_pin
    buzzer = (
        opened("buzzer", lambda: GpioBuzzer(buzzer_pin, tonal=config.buzzer_tonal,
                                            active_high=config.buzzer_active_high))
        if buzzer_pin is not None
        else None
    )
    return display, buzzer, buttons
