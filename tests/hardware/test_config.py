"""Hardware configuration: env and TOML, validation messages, the device factory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from firmware_bridge.config import HardwareConfig, build_devices, load_config
from firmware_bridge.errors import HardwareConfigError, HardwareError
from firmware_bridge.gpio import GpioButtons, GpioBuzzer, TM1637Display
from firmware_bridge.serial_display import SerialDisplay

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "shotclock.toml.example"


def test_defaults_are_no_hardware_for_table_1() -> None:
    config = load_config({})
    assert config.kind == "none" and config.table_id == "1"
    assert build_devices(config) == (None, None, None)


def test_env_overrides_the_file(tmp_path: Path) -> None:
    path = tmp_path / "hw.toml"
    path.write_text(
        'kind = "gpio"\ntable_id = 3\n[serial]\nport = "/dev/ttyACM0"\nbaudrate = 57600\n'
        "[buttons]\ndebounce_ms = 20\n[buttons.pins]\npause = 24\n"
    )
    config = load_config(
        {
            "SHOTCLOCK_HARDWARE_CONFIG": str(path),
            "SHOTCLOCK_HARDWARE": "serial",
            "SHOTCLOCK_SERIAL_PORT": "loop://",
        }
    )
    assert config.kind == "serial" and config.serial_port == "loop://"
    assert config.table_id == "3" and config.baudrate == 57600 and config.debounce_ms == 20
    assert config.button_pins["pause"] == 24 and config.button_pins["start_shot"] == 17


def test_shipped_example_is_valid() -> None:
    config = load_config({"SHOTCLOCK_HARDWARE_CONFIG": str(EXAMPLE)})
    assert config.kind in ("gpio", "serial", "none")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "usb"}, "kind must be one of"),
        ({"kind": "serial"}, "needs a port"),
        ({"kind": "gpio", "tm1637_clk": 17}, "both use BCM pin 17"),
        ({"button_pins": {"start_shot": 40}}, "BCM pin 0..27, got 40"),
        ({"button_pins": {"shot": 4}}, "unknown buttons"),
        ({"brightness": 9}, "brightness must be 0..7, got 9"),
        ({"debounce_ms": 2000}, "debounce_ms < long_press_ms"),
        ({"double_press_ms": -5}, "double_press_ms must be 0..5000"),
        ({"baudrate": 0}, "baud rate"),
        ({"display_module": "clock"}, "display.module must be one of"),
        ({"long_press": ("start",)}, "long_press: unknown buttons"),
        ({"hid_keys": {"KEY_A": "start_shot"}}, "hid.device is not"),
        ({"hid_device": "/dev/input/event0", "hid_keys": {"KEY_A": "go"}}, "unknown button"),
        ({"kind": "serial", "serial_port": "/dev/serial0",
          "button_pins": {"start_shot": 14}}, "UART on BCM 14/15"),
    ],
)
def test_invalid_config_names_the_key_and_value(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(HardwareConfigError, match=message) as info:
        HardwareConfig(**kwargs)
    assert isinstance(info.value, HardwareError) and isinstance(info.value, ValueError)


def test_bad_file_errors(tmp_path: Path) -> None:
    with pytest.raises(HardwareConfigError, match="no file"):
        load_config({"SHOTCLOCK_HARDWARE_CONFIG": str(tmp_path / "missing.toml")})
    bad = tmp_path / "bad.toml"
    bad.write_text("kind = \n")
    with pytest.raises(HardwareConfigError, match="not valid TOML"):
        load_config({"SHOTCLOCK_HARDWARE_CONFIG": str(bad)})
    bad.write_text('kidn = "gpio"\n')
    with pytest.raises(HardwareConfigError, match="unknown key 'kidn'"):
        load_config({"SHOTCLOCK_HARDWARE_CONFIG": str(bad)})
    bad.write_text('[display]\nmodul = "colon"\n')  # a typo inside a section is named too
    with pytest.raises(HardwareConfigError, match="unknown key 'display.modul'"):
        load_config({"SHOTCLOCK_HARDWARE_CONFIG": str(bad)})


def test_build_gpio_devices(mock_factory: Any, wait_until: Any) -> None:
    config = HardwareConfig(kind="gpio", display_module="colon", buzzer_active_high=False)
    display, buzzer, buttons = build_devices(config, now_ms=lambda: 5.0)
    try:
        assert isinstance(display, TM1637Display) and display.module == "colon"
        assert isinstance(buzzer, GpioBuzzer) and not buzzer.active_high
        assert isinstance(buttons, GpioButtons)
        presses: list[Any] = []
        buttons.start(presses.append)
        mock_factory.pin(27).drive_low()
        assert wait_until(lambda: bool(presses))
        assert presses[0].at_ms == 5.0  # the service's clock is the one used
    finally:
        for device in (display, buzzer, buttons):
            assert device is not None
            device.close()


def test_build_serial_devices(mock_factory: Any) -> None:
    config = HardwareConfig(kind="serial", serial_port="loop://", buttons_enabled=False)
    display, buzzer, buttons = build_devices(config)
    try:
        assert isinstance(display, SerialDisplay) and buzzer is display and buttons is None
    finally:
        assert display is not None
        display.close()
