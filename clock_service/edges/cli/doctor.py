"""``shotclock doctor [--json]``: checks a table's machine the way ``flutter doctor`` does
(issue 22 point 5). Each item is ok, warning or failing, and says the fix.

It reads what the service reads (the settings, the hardware configuration, the camera
setting, the store) and, when the service runs, its ``/api/health`` (the display's ACK, the
buttons seen, faults). Run it as the service's user to check that user's permissions::

    sudo -u shotclock /opt/shotclock/venv/bin/shotclock doctor

Exit status: 0 when nothing is failing, 1 otherwise. ``--json`` prints the same items for
the hall page (``{"items": [...], "counts": {...}}``).
"""

from __future__ import annotations

import argparse
import contextlib
import grp
import json
import os
import pwd
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = ["Item", "Machine", "add_parser", "run", "diagnose", "OK", "WARNING", "FAILING"]

OK, WARNING, FAILING = "ok", "warning", "failing"
MARKS = {OK: "[✓]", WARNING: "[!]", FAILING: "[✗]"}
STORE_CHECK_BUDGET_S = 20.0
LOW_DISK_MB, VERY_LOW_DISK_MB = 500, 100
EXAMPLE_TOKENS = ("change-me-to-a-long-random-token",)


@dataclass(frozen=True)
class Item:
    id: str
    name: str
    status: str
    summary: str
    fix: str | None = None


@dataclass
class Machine:
    """What the checks look at; tests build one with their own parts."""

    settings: Any
    hardware: Any | None  # firmware_bridge.config.HardwareConfig, None if refused
    hardware_error: str | None
    camera_source: str | None
    camera_error: str | None
    health: dict[str, Any] | None  # the running service's /api/health
    health_url: str
    lock: Path | None
    user: str = field(default_factory=lambda: pwd.getpwuid(os.geteuid()).pw_name)
    groups: set[str] = field(default_factory=lambda: {
        grp.getgrgid(g).gr_name for g in os.getgroups() if _group_exists(g)} | {
        grp.getgrgid(os.getegid()).gr_name})
    run: Callable[[list[str]], str | None] = field(default=lambda cmd: _run(cmd))
    euid: int = field(default_factory=os.geteuid)
    # os.access; tests pass one that applies the file modes for another user
    access: Callable[[str | Path, int], bool] = field(default=lambda p, mode: os.access(p, mode))


def _group_exists(gid: int) -> bool:
    try:
        grp.getgrgid(gid)
    except KeyError:
        return False
    return True


def _run(cmd: list[str]) -> str | None:
    """A command's output, or None when it is missing or fails."""
    if shutil.which(cmd[0]) is None:
        return None
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=5)
        if done.returncode == 0:
            return done.stdout
    return None


# -- the checks ------------------------------------------------------------------------------

def check_user(m: Machine) -> list[Item]:
    needed: dict[str, str] = {}
    hw = m.hardware
    if hw is not None:
        if hw.kind == "gpio" or (hw.kind == "serial" and hw.buttons_enabled):
            needed["gpio"] = "the GPIO header (/dev/gpiochip*)"
        if hw.kind == "serial":
            needed["dialout"] = "the display's serial port"
        if hw.hid_device:
            needed["input"] = "the USB pedal"
    if m.camera_source and m.camera_source.startswith("/dev/"):
        needed["video"] = "the camera"
    existing = {g for g in needed if _group_named(g)}
    missing = [g for g in needed if g in existing and g not in m.groups]
    items = []
    if m.euid == 0:
        items.append(Item("user", "User and groups", WARNING,
                          "running as root: the service's own permissions are not checked",
                          "run it as the service's user: sudo -u shotclock "
                          f"{sys.argv[0] or 'shotclock'} doctor"))
    elif missing:
        items.append(Item("user", "User and groups", FAILING,
                          f"user {m.user} is not in group {', '.join(missing)} "
                          f"({'; '.join(needed[g] for g in missing)})",
                          f"sudo usermod -a -G {','.join(missing)} {m.user}, then "
                          "sudo systemctl restart shotclock"))
    else:
        groups = ", ".join(sorted(g for g in needed if g in m.groups)) or "none needed"
        items.append(Item("user", "User and groups", OK, f"user {m.user}; groups: {groups}"))
    return items


def _group_named(name: str) -> bool:
    try:
        grp.getgrnam(name)
    except KeyError:
        return False
    return True


def check_hardware(m: Machine) -> list[Item]:
    from firmware_bridge.config import permission_problems

    if m.hardware is None:
        return [Item("hardware", "Hardware configuration", FAILING,
                     f"refused: {m.hardware_error}",
                     "fix the file or setting it names; the service will not start with it")]
    hw = m.hardware
    items = [Item("hardware", "Hardware configuration", OK, f"kind {hw.kind}, table {hw.table_id}")]
    denied = {device: f"no permission to open {device}: user {m.user} is not in group "
              f"{group!r}" for device, group, _ in permission_problems(hw, access=m.access)}
    uses_gpio = hw.kind == "gpio" or (hw.kind == "serial" and hw.buttons_enabled)
    if uses_gpio:
        chips = sorted(str(p) for p in Path("/dev").glob("gpiochip*"))
        factory = _pin_factory()
        if not chips:
            items.append(Item("gpio", "GPIO chip", FAILING, "no /dev/gpiochip* on this machine",
                              "a Raspberry Pi is needed for GPIO; for a Pico display with no "
                              "GPIO set kind = \"serial\" and [buttons] enabled = false"))
        elif any(c in denied for c in chips):
            items.append(Item("gpio", "GPIO chip", FAILING, denied[next(c for c in chips
                                                                        if c in denied)],
                              "add the user to group gpio and restart"))
        elif factory is not None:
            items.append(Item("gpio", "GPIO chip", FAILING, factory,
                              "sudo apt-get install python3-lgpio (Raspberry Pi OS)"))
        else:
            items.append(Item("gpio", "GPIO chip", OK, ", ".join(chips) + " (lgpio)"))
    if hw.kind == "serial":
        port = hw.serial_port or "/dev/shotclock-display"
        if port.startswith("/dev/") and not os.path.exists(port):
            items.append(Item("serial", "Serial port", FAILING, f"{port} does not exist",
                              "plug the Pico in (ls -l /dev/serial/by-id/); with --uart "
                              "reboot after the install; check the udev rule"))
        elif port in denied:
            items.append(Item("serial", "Serial port", FAILING, denied[port],
                              "add the user to group dialout and restart the service"))
        else:
            items.append(Item("serial", "Serial port", OK, f"{port} opens"))
        items.append(_display_ack(m, port))
    elif hw.kind == "gpio":
        items.append(_display_ack(m, None))
    if hw.kind != "none" and uses_gpio:
        items.append(_buttons(m))
    return items


def _pin_factory() -> str | None:
    """Why gpiozero's pin library cannot load (None: it can)."""
    try:
        import lgpio  # noqa: F401
    except ImportError:
        return "python3-lgpio is not installed (gpiozero needs it; the Pi 5 has no other)"
    return None


def _hardware_health(m: Machine) -> dict[str, Any] | None:
    if m.health is None:
        return None
    hardware = m.health.get("components", {}).get("hardware")
    return hardware if isinstance(hardware, dict) else None


def _display_ack(m: Machine, port: str | None) -> Item:
    hardware = _hardware_health(m)
    if m.health is None:
        return Item("display", "Display", WARNING,
                    f"the service is not running ({m.health_url}): its ACK is not known",
                    "sudo systemctl start shotclock, then run doctor again")
    display = (hardware or {}).get("display")
    if not display:
        return Item("display", "Display", FAILING, "the service drives no display",
                    "set kind in shotclock.toml (SHOTCLOCK_HARDWARE_CONFIG) and restart")
    if port is None:  # a TM1637 sends nothing back: the driver's writes are all there is
        return Item("display", "Display", OK, f"TM1637, {display.get('writes', 0)} writes")
    if not display.get("connected"):
        why = display.get("error") or "not connected"
        return Item("display", "Display ACK", FAILING, f"{display.get('port', port)}: {why}",
                    "check the cable and that the Pico runs firmware/main.py")
    if not display.get("acknowledging"):
        return Item("display", "Display ACK", FAILING,
                    f"{display.get('port', port)} is open but the controller does not answer",
                    "the Pico is at its REPL or runs other firmware: flash firmware/main.py; "
                    "check the baud rate")
    age = display.get("last_ack_age_ms")
    return Item("display", "Display ACK", OK, f"{display.get('port', port)} answers "
                f"(last ACK {age} ms ago)")


def _buttons(m: Machine) -> Item:
    hardware = _hardware_health(m)
    if hardware is None:
        return Item("buttons", "Buttons", WARNING, "the service is not running: presses unknown",
                    "start the service and press each button once")
    buttons = hardware.get("buttons") or {}
    pins = {name: b for name, b in buttons.items()
            if isinstance(b, dict) and "seen" in b}
    if not pins:
        return Item("buttons", "Buttons", WARNING, "no button reported by the service",
                    "check [buttons] in shotclock.toml")
    unseen = sorted(name for name, b in pins.items() if not b["seen"])
    if unseen:
        return Item("buttons", "Buttons", WARNING,
                    f"not pressed since start: {', '.join(unseen)}",
                    "press each once; a button never seen is a loose wire or a wrong pin")
    return Item("buttons", "Buttons", OK, f"all {len(pins)} seen working")


def check_camera(m: Machine) -> list[Item]:
    if m.camera_error:
        return [Item("camera", "Camera", FAILING, m.camera_error, "fix SHOTCLOCK_CAMERA*")]
    source = m.camera_source
    if not source:
        return [Item("camera", "Camera", OK, "none configured (SHOTCLOCK_CAMERA)")]
    if source.startswith("/dev/"):
        if not os.path.exists(source):
            return [Item("camera", "Camera", FAILING, f"{source} does not exist",
                         "plug the webcam in (ls /dev/video*); a Pi camera module "
                         "needs libcamera, not /dev/video0")]
        if not m.access(source, os.R_OK | os.W_OK):
            return [Item("camera", "Camera", FAILING, f"no permission to open {source}",
                         f"sudo usermod -a -G video {m.user}, then restart")]
    try:
        import cv2  # noqa: F401
    except ImportError:
        return [Item("camera", "Camera", FAILING, "OpenCV is not installed",
                     "install with --camera (32-bit OS: apt-get install python3-opencv)")]
    return [Item("camera", "Camera", OK, f"{source} opens; OpenCV present")]


def check_clock(m: Machine) -> list[Item]:
    synced = m.run(["timedatectl", "show", "-p", "NTPSynchronized", "--value"])
    if synced is not None and synced.strip() == "yes":
        return [Item("time", "Clock synchronisation", OK, "NTP synchronised (timedatectl)")]
    tracking = m.run(["chronyc", "-n", "tracking"])
    if tracking is not None and "Leap status     : Normal" in tracking:
        return [Item("time", "Clock synchronisation", OK, "synchronised (chrony)")]
    off = [f for f in (m.health or {}).get("faults", []) if f.get("code") == "table_clock_off"]
    if off:
        return [Item("time", "Clock synchronisation", FAILING, off[0].get("message", ""),
                     "run NTP from the hall server (deploy/README.md, A hall on MQTT)")]
    why = "not synchronised" if synced is not None else "no timedatectl or chrony answer"
    return [Item("time", "Clock synchronisation", WARNING,
                 f"{why}: the clock runs on its own (event times may be off the hall's)",
                 "point the Pi at the hall server's NTP (timedatectl set-ntp true; "
                 "NTP= in /etc/systemd/timesyncd.conf)")]


def check_disk(m: Machine) -> list[Item]:
    db = Path(m.settings.db)
    where = db.parent if db.parent.exists() else Path("/")
    usage = shutil.disk_usage(where)
    free_mb = usage.free / 1e6
    size = sum(p.stat().st_size for p in db.parent.glob(db.name + "*")
               if p.is_file()) / 1e6 if db.parent.exists() else 0.0
    items = []
    if free_mb < VERY_LOW_DISK_MB:
        items.append(Item("disk", "Disk space", FAILING, f"{free_mb:.0f} MB free at {where}",
                          "free space or archive old tables (shotclock store archive)"))
    elif free_mb < LOW_DISK_MB or usage.free < 0.05 * usage.total:
        items.append(Item("disk", "Disk space", WARNING, f"{free_mb:.0f} MB free at {where}",
                          "free space soon: the store stops writing when the disk is full"))
    else:
        items.append(Item("disk", "Disk space", OK,
                          f"{free_mb / 1000:.1f} GB free at {where}; the store is {size:.1f} MB"))
    device = _block_device(where)
    if device and device.startswith("mmcblk"):
        life = _emmc_life(device)
        summary = f"the store is on an SD card ({device})" + (f"; {life}" if life else "")
        items.append(Item("sd", "SD card wear", WARNING, summary,
                          "use an industrial (pSLC) card or an SSD, and a UPS at tournaments; "
                          "consumer cards can lose acknowledged writes at a power cut"))
    return items


def _block_device(path: Path) -> str | None:
    """The block device (e.g. mmcblk0) that holds ``path``, from /proc/self/mountinfo."""
    with contextlib.suppress(OSError):
        best = ("", "")
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            parts = line.split()
            mount, source = parts[4], parts[parts.index("-") + 2]
            if str(path).startswith(mount) and len(mount) > len(best[0]):
                best = (mount, source)
        name = best[1].removeprefix("/dev/")
        return name.split("p")[0] if name.startswith("mmcblk") else name or None
    return None


def _emmc_life(device: str) -> str | None:
    """eMMC and some industrial cards report wear (life_time: 0x01 = 0-10 % used)."""
    with contextlib.suppress(OSError, ValueError):
        raw = Path(f"/sys/block/{device}/device/life_time").read_text().split()
        used = max(int(x, 16) for x in raw)
        return f"wear {max(0, used - 1) * 10}-{used * 10} % of its life"
    return None


def check_store(m: Machine) -> list[Item]:
    db = Path(m.settings.db)
    if not db.exists():
        parent = next((p for p in [db.parent, *db.parent.parents] if p.exists()), Path("/"))
        if not m.access(parent, os.W_OK):
            return [Item("store", "Store", FAILING,
                         f"{db} does not exist and {parent} is not writable by {m.user}",
                         f"sudo install -d -o {m.user} {db.parent} (the unit's "
                         "StateDirectory does it)")]
        return [Item("store", "Store", OK, f"{db} will be created at the first start")]
    for path in (db.parent, db):
        if not m.access(path, os.W_OK):
            return [Item("store", "Store", FAILING, f"{path} is read-only for {m.user}",
                         f"sudo chown -R {m.user} {db.parent} (or remount the disk "
                         "read-write); the service cannot write events")]
    from clock_service.service.storage.log import quick_check

    started = time.monotonic()
    try:
        found = quick_check(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5),
                            STORE_CHECK_BUDGET_S)
    except sqlite3.DatabaseError as exc:
        found = [str(exc)]
    if found is None:
        return [Item("store", "Store integrity", WARNING,
                     f"{db}: quick_check not finished in {STORE_CHECK_BUDGET_S:.0f} s",
                     "the service finishes it after start (a store_corrupt fault if bad)")]
    rows = found
    took = time.monotonic() - started
    if rows != ["ok"]:
        return [Item("store", "Store integrity", FAILING, f"{db}: {'; '.join(rows)}",
                     "stop the service, move the store aside (keep it for the records) and "
                     "restore a backup or start empty")]
    return [Item("store", "Store integrity", OK, f"{db}: quick_check ok ({took:.1f} s)")]


def check_token(m: Machine) -> list[Item]:
    from clock_service.edges.api.server import is_loopback

    s = m.settings
    token = s.referee_token or ""
    if is_loopback(s.host):
        note = "; commands need it" if token else ""
        return [Item("token", "Referee token", OK, f"listening on {s.host} only{note}")]
    if not token:
        state = "the service refuses to start" if not s.open else "--open: anyone commands"
        return [Item("token", "Referee token", FAILING,
                     f"listening on {s.host} (the LAN) with no SHOTCLOCK_REFEREE_TOKEN: {state}",
                     "set SHOTCLOCK_REFEREE_TOKEN in /etc/shotclock/env "
                     "(openssl rand -hex 16) and restart")]
    if token in EXAMPLE_TOKENS or len(token) < 16:
        return [Item("token", "Referee token", FAILING,
                     "the token is the example's or shorter than 16 characters",
                     "set a random one: openssl rand -hex 16")]
    return [Item("token", "Referee token", OK, f"set ({len(token)} characters) on {s.host}")]


def check_broker(m: Machine) -> list[Item]:
    url = m.settings.mqtt_url
    if not url:
        return [Item("broker", "Hall broker", OK, "none configured (SHOTCLOCK_MQTT_URL)")]
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = parts.port or (8883 if parts.scheme == "mqtts" else 1883)
    try:
        with socket.create_connection((host, port), timeout=2.0):
            pass
    except OSError as exc:
        return [Item("broker", "Hall broker", FAILING, f"{host}:{port} unreachable ({exc})",
                     "the table keeps its events and sends them when the broker is back; "
                     "check the network, the hall server and mosquitto")]
    mqtt = ((m.health or {}).get("components") or {}).get("mqtt")
    extra = f"; the service: {json.dumps(mqtt)[:120]}" if mqtt else ""
    return [Item("broker", "Hall broker", OK, f"{host}:{port} reachable{extra}")]


def locked_versions(text: str) -> dict[str, set[str]]:
    """name -> the versions the lock pins for it (several where a marker splits it, e.g.
    numpy per Python version). Parsed by hand: ``packaging`` is not installed on a Pi."""
    pins: dict[str, set[str]] = {}
    for line in text.splitlines():
        if not line or line.startswith((" ", "#", "-")) or "==" not in line:
            continue
        name, version = line.split(";")[0].split("==", 1)
        pins.setdefault(_normal(name), set()).add(version.strip())
    return pins


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def check_versions(m: Machine) -> list[Item]:
    if m.lock is None:
        return [Item("versions", "Versions", WARNING, "no requirements.lock found",
                     "reinstall with install-pi.sh (it keeps the lock in /opt/shotclock)")]
    wrong, checked = [], 0
    for name, versions in sorted(locked_versions(m.lock.read_text()).items()):
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue  # not this machine's extra (the tests', the camera's)
        checked += 1
        if installed not in versions:
            wrong.append(f"{name} {installed} (lock {', '.join(sorted(versions))})")
    try:
        own = metadata.version("shotclock")
    except metadata.PackageNotFoundError:
        own = "?"
    if wrong:
        return [Item("versions", "Versions", WARNING,
                     f"{len(wrong)} of {checked} differ from the lock: {', '.join(wrong[:5])}",
                     "reinstall: sudo install-pi.sh (or --offline <bundle>)")]
    return [Item("versions", "Versions", OK,
                 f"shotclock {own}; {checked} packages as locked ({m.lock})")]


def check_service(m: Machine) -> list[Item]:
    if m.health is None:
        return [Item("service", "Service", WARNING, f"not answering at {m.health_url}",
                     "sudo systemctl start shotclock; journalctl -u shotclock -e")]
    faults = m.health.get("faults") or []
    if faults:
        codes = ", ".join(sorted({f.get("code", "?") for f in faults}))
        return [Item("service", "Service", WARNING, f"running; faults: {codes}",
                     "see /api/health or the console's status view")]
    return [Item("service", "Service", OK, "running, no faults")]


CHECKS: tuple[Callable[[Machine], list[Item]], ...] = (
    check_service, check_user, check_hardware, check_camera, check_clock, check_disk,
    check_store, check_token, check_broker, check_versions)


def diagnose(m: Machine) -> list[Item]:
    items: list[Item] = []
    for check in CHECKS:
        try:
            items += check(m)
        except Exception as exc:  # a broken check is a finding, never a traceback
            items.append(Item(check.__name__.removeprefix("check_"), check.__name__, WARNING,
                              f"could not check: {type(exc).__name__}: {exc}"))
    return items


# -- the command -----------------------------------------------------------------------------

def _find_lock() -> Path | None:
    here = Path(__file__).resolve()
    for candidate in (Path("/opt/shotclock/requirements.lock"),
                      here.parents[3] / "requirements.lock"):
        if candidate.is_file():
            return candidate
    return None


def _fetch_health(url: str) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(url, timeout=3) as answer:
            body = json.load(answer)
            return body if isinstance(body, dict) else None
    except (OSError, ValueError):
        return None


def machine_from_env(args: argparse.Namespace) -> Machine:
    from clock_service.edges.camera.config import load_camera_config
    from clock_service.service.settings import Settings
    from firmware_bridge.config import load_config
    from firmware_bridge.errors import HardwareConfigError

    settings = Settings.from_env(db=args.db) if args.db else Settings.from_env()
    hardware, hardware_error = None, None
    try:
        hardware = load_config()
    except HardwareConfigError as exc:
        hardware_error = str(exc)
    camera_source, camera_error = None, None
    try:
        camera = load_camera_config(settings)
        camera_source = camera.source if camera else None
    except ValueError as exc:
        camera_error = str(exc)
    host = settings.host if settings.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
    url = args.url or f"http://{host}:{settings.port}"
    health_url = url.rstrip("/") + "/api/health"
    return Machine(settings=settings, hardware=hardware, hardware_error=hardware_error,
                   camera_source=camera_source, camera_error=camera_error,
                   health=_fetch_health(health_url), health_url=health_url,
                   lock=Path(args.lock) if args.lock else _find_lock())


def add_parser(sub: Any) -> None:
    doctor = sub.add_parser("doctor", help="check this table's machine: each item ok, "
                            "warning or failing, with the fix")
    doctor.add_argument("--json", action="store_true", help="the same items as JSON")
    doctor.add_argument("--url", default=None, help="the running service (default: "
                        "http://127.0.0.1:SHOTCLOCK_PORT)")
    doctor.add_argument("--db", default=None, help="the store (default: SHOTCLOCK_DB)")
    doctor.add_argument("--lock", default=None, help="requirements.lock to compare the "
                        "installed versions with (default: /opt/shotclock's or the checkout's)")
    doctor.add_argument("--env-file", default=UNIT_ENV_FILE, metavar="FILE",
                        help="the service's settings, as its unit reads them (default: "
                        f"{UNIT_ENV_FILE} if it is there; '' for none); the environment "
                        "wins over it")


# What shotclock.service reads (EnvironmentFile=): run by hand (`sudo -u shotclock shotclock
# doctor`), doctor looks at the machine with the service's settings, not the defaults. The
# arm64 boot proof found it reporting "kind none" and a store in ~/.local/state without it.
UNIT_ENV_FILE = "/etc/shotclock/env"


def load_env_file(path: str) -> str | None:
    """Set each KEY=VALUE of a systemd environment file that the environment does not set
    already; the file's path if it was read."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")) or "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if key.replace("_", "").isalnum():
            os.environ.setdefault(key, value)
    return path


def render(items: list[Item]) -> str:
    lines = []
    for item in items:
        lines.append(f"{MARKS[item.status]} {item.name}: {item.summary}")
        if item.fix and item.status != OK:
            lines.append(f"    -> {item.fix}")
    counts = {s: sum(i.status == s for i in items) for s in (FAILING, WARNING)}
    if not any(counts.values()):
        lines.append("No issues found.")
    else:
        lines.append(f"Doctor found {counts[FAILING]} failing, {counts[WARNING]} warning.")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    read = load_env_file(args.env_file) if args.env_file else None
    items = diagnose(machine_from_env(args))
    if args.json:
        counts = {s: sum(i.status == s for i in items) for s in (OK, WARNING, FAILING)}
        print(json.dumps({"items": [asdict(i) for i in items], "counts": counts}, indent=1))
    else:
        if read is not None:
            print(f"(the service's settings from {read})")
        print(render(items))
    return 1 if any(i.status == FAILING for i in items) else 0
