"""deploy/install-pi.sh on the machines it meets (issue 22 point 3), run for real with the
package manager and the system stubbed at its boundary: apt-get, apt-cache, dpkg,
dpkg-query, useradd/usermod/groupadd/getent/id, systemctl, udevadm, chgrp, uname and python3
are PATH shims that record each call (and the venv's python, made by the python3 shim,
records pip). Everything else (sed, install, tar ...) is real, into a scratch root
(DESTDIR) that holds the machine's /etc/os-release, /proc/device-tree/model and /boot.

Also the offline bundle (deploy/bundle.py, issue 22 point 2): what goes into each target's
wheels, and a bundle built with the downloads stubbed, listed and checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "deploy" / "install-pi.sh"
sys.path.insert(0, str(ROOT / "deploy"))
import bundle  # noqa: E402  (deploy/bundle.py: a script, not a package)

SHIM = r"""#!/usr/bin/env bash
# records the call, then acts as the machine described by $STUB_* would
name="$(basename "$0")"
echo "$name $*" >>"$SHIM_LOG"
state="$SHIM_STATE"
has() { [[ " $1 " == *" $2 "* ]]; }
case "$name" in
    dpkg) [[ $1 == --print-architecture ]] && echo "$STUB_ARCH" ;;
    dpkg-query)
        pkg="${!#}"
        if has "$STUB_INSTALLED $(cat "$state/debs" 2>/dev/null)" "$pkg"; then
            echo "install ok installed"
        else
            exit 1
        fi ;;
    apt-cache) has "$STUB_AVAILABLE $STUB_INSTALLED" "$2" || exit 100 ;;
    apt-get)
        if [[ $1 == install ]]; then
            for pkg in "$@"; do
                [[ $pkg == -* || $pkg == install ]] && continue
                has "$STUB_AVAILABLE $STUB_INSTALLED" "$pkg" || { echo "E: Unable to locate package $pkg" >&2; exit 100; }
                echo "$pkg" >>"$state/debs"
            done
        fi ;;
    uname) echo "$STUB_CPU" ;;
    id) grep -qx "$1" "$state/users" 2>/dev/null || exit 1 ;;
    useradd) echo "${!#}" >>"$state/users" ;;
    getent) grep -qx "$2" "$state/groups" 2>/dev/null || exit 2 ;;
    groupadd) echo "${!#}" >>"$state/groups" ;;
    python3)
        if [[ $1 == -c && $2 == *sys.version_info* ]]; then echo "$STUB_PYTHON"
        elif [[ $1 == -c && $2 == *ensurepip* ]]; then exit "${STUB_NO_ENSUREPIP:-0}"
        elif [[ $1 == -m && $2 == venv ]]; then
            venv="${!#}"
            mkdir -p "$venv/bin"
            printf '#!/usr/bin/env bash\necho "venv-python $*" >>"$SHIM_LOG"\n' >"$venv/bin/python"
            chmod +x "$venv/bin/python"
        fi ;;
esac
exit 0
"""
SHIMMED = ("apt-get", "apt-cache", "dpkg", "dpkg-query", "useradd", "usermod", "groupadd",
           "getent", "id", "systemctl", "udevadm", "chgrp", "uname", "python3")


@dataclass(frozen=True)
class Machine:
    arch: str  # dpkg --print-architecture
    cpu: str  # uname -m
    os_id: str
    version: str
    python: str
    model: str | None
    raspberry_pi_os: bool
    installed: str = ""  # Debian packages already installed
    available: str = "python3-venv python3-evdev python3-numpy python3-opencv"


PI5_64 = Machine("arm64", "aarch64", "debian", "12", "3.11", "Raspberry Pi 5 Model B Rev 1.0",
                 True, available="python3-venv python3-evdev python3-lgpio")
PI3_32 = Machine("armhf", "armv7l", "debian", "12", "3.11", "Raspberry Pi 3 Model B Rev 1.2",
                 True, available="python3-venv python3-evdev python3-lgpio python3-numpy "
                                 "python3-opencv")
ZERO_1 = Machine("armhf", "armv6l", "debian", "12", "3.11", "Raspberry Pi Zero W Rev 1.1", True)
DEBIAN_PI4 = Machine("arm64", "aarch64", "debian", "12", "3.11", "Raspberry Pi 4 Model B Rev 1.5",
                     False)  # plain Debian: no python3-lgpio in its archive
TRIXIE_PI4 = Machine("arm64", "aarch64", "debian", "13", "3.13", "Raspberry Pi 4 Model B Rev 1.5",
                     True, available="python3-venv python3-evdev python3-lgpio")
PC = Machine("amd64", "x86_64", "debian", "12", "3.11", None, False)


@dataclass
class Run:
    returncode: int
    out: str
    calls: list[str]
    root: Path

    def called(self, prefix: str) -> list[str]:
        return [c for c in self.calls if c.startswith(prefix)]


@pytest.fixture
def machine_root(tmp_path: Path):  # type: ignore[no-untyped-def]
    def make(machine: Machine) -> tuple[Path, dict[str, str]]:
        root = tmp_path / "root"
        (root / "etc").mkdir(parents=True, exist_ok=True)
        name = "Debian GNU/Linux" if machine.os_id == "debian" else machine.os_id
        (root / "etc" / "os-release").write_text(
            f'PRETTY_NAME="{name} {machine.version}"\nID={machine.os_id}\n'
            f'VERSION_ID="{machine.version}"\n')
        if machine.raspberry_pi_os:
            (root / "etc" / "rpi-issue").write_text("Raspberry Pi reference 2024-11-19\n")
        if machine.model:
            (root / "proc" / "device-tree").mkdir(parents=True, exist_ok=True)
            (root / "proc" / "device-tree" / "model").write_bytes(machine.model.encode() + b"\0")
            (root / "boot" / "firmware").mkdir(parents=True, exist_ok=True)
            (root / "boot" / "firmware" / "config.txt").write_text("[all]\n")
            (root / "boot" / "firmware" / "cmdline.txt").write_text(
                "console=serial0,115200 console=tty1 root=PARTUUID=x rootwait\n")
        shims = tmp_path / "shims"
        shims.mkdir(exist_ok=True)
        for command in SHIMMED:
            (shims / command).write_text(SHIM)
            (shims / command).chmod(0o755)
        state = tmp_path / "state"
        state.mkdir(exist_ok=True)
        env = {"PATH": f"{shims}:/usr/bin:/bin", "DESTDIR": str(root),
               "SHIM_LOG": str(tmp_path / "calls.log"), "SHIM_STATE": str(state),
               "STUB_ARCH": machine.arch, "STUB_CPU": machine.cpu,
               "STUB_PYTHON": machine.python, "STUB_INSTALLED": machine.installed,
               "STUB_AVAILABLE": machine.available, "HOME": str(tmp_path)}
        return root, env
    return make


def install(machine_root, machine: Machine, *args: str, script: Path = SCRIPT,  # type: ignore[no-untyped-def]
            extra_env: dict[str, str] | None = None) -> Run:
    root, env = machine_root(machine)
    log = Path(env["SHIM_LOG"])
    log.unlink(missing_ok=True)
    result = subprocess.run(["bash", str(script), *args], env=env | (extra_env or {}),
                            capture_output=True, text=True, timeout=60)
    calls = log.read_text().splitlines() if log.exists() else []
    return Run(result.returncode, result.stdout + result.stderr, calls, root)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def apt_installed(run: Run) -> set[str]:
    (call,) = run.called("apt-get install")
    return {w for w in call.split()[2:] if not w.startswith("-")}


# -- online, per machine -----------------------------------------------------------------------

def test_pi5_64_bit_raspberry_pi_os_gets_lgpio_evdev_and_the_locked_wheels(machine_root) -> None:  # type: ignore[no-untyped-def]
    run = install(machine_root, PI5_64)
    assert run.returncode == 0, run.out
    assert "Raspberry Pi 5" in run.out and "debian12-arm64" in run.out
    assert run.called("apt-get update")
    assert apt_installed(run) == {"python3-venv", "python3-evdev", "python3-lgpio"}
    (pip,) = run.called("venv-python -m pip install")
    assert pip.endswith(f"{ROOT}[hardware,mqtt]") and " -c " in pip
    assert run.called("python3 -m venv --system-site-packages")
    # groups: gpio, dialout, input and video (the camera, issue 21 point 6)
    assert {c.split()[-2] for c in run.called("usermod -a -G")} == {
        "gpio", "dialout", "input", "video"}
    assert run.called("systemctl enable shotclock.service")
    toml = (run.root / "etc/shotclock/shotclock.toml").read_text()
    assert 'kind = "gpio"' in toml and "enabled = true" in toml
    assert (run.root / "etc/shotclock/env").exists()
    assert (run.root / "etc/udev/rules.d/99-shotclock-display.rules").exists()
    assert (run.root / "etc/systemd/system/shotclock.service").exists()


def test_the_lock_given_to_pip_leaves_out_what_debian_provides(machine_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a pip shim that keeps the constraints file the script hands it
    keep = tmp_path / "constraints.txt"
    text = SCRIPT.read_text().replace(
        '"${PIP[@]}" install --quiet -c "$LOCK" "${SRC}[$EXTRAS]"',
        f'cp "$LOCK" {keep}; "${{PIP[@]}}" install --quiet -c "$LOCK" "${{SRC}}[$EXTRAS]"')
    assert text != SCRIPT.read_text()
    (tmp_path / "requirements.lock").symlink_to(ROOT / "requirements.lock")
    (tmp_path / "deploy").symlink_to(ROOT / "deploy")
    # the script finds deploy/ one level up from itself: run it from tmp_path/x/
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "install-pi.sh").write_text(text)
    run = install(machine_root, PI3_32, "--camera", script=tmp_path / "x" / "install-pi.sh")
    assert run.returncode == 0, run.out
    constraints = keep.read_text()
    assert "fastapi==" in constraints and "pydantic-core==" in constraints
    for debian_provided in ("evdev==", "numpy==", "opencv-python-headless=="):
        assert f"\n{debian_provided}" not in constraints, debian_provided
    # 32-bit OS and --camera: Debian's numpy and OpenCV, no camera extra from PyPI
    assert {"python3-numpy", "python3-opencv"} <= apt_installed(run)
    (pip,) = run.called("venv-python -m pip install")
    assert pip.endswith("[hardware,mqtt]")
    assert "SHOTCLOCK_CAMERA=/dev/video0" in (run.root / "etc/shotclock/env").read_text()


def test_trixie_and_the_camera_on_64_bit_take_the_camera_extra(machine_root) -> None:  # type: ignore[no-untyped-def]
    run = install(machine_root, TRIXIE_PI4, "--camera")
    assert run.returncode == 0, run.out
    assert "debian13-arm64" in run.out
    assert "python3-opencv" not in apt_installed(run)
    assert run.called("venv-python -m pip install")[0].endswith("[hardware,mqtt,camera]")


def test_an_armv6_pi_is_refused_before_anything_changes(machine_root) -> None:  # type: ignore[no-untyped-def]
    run = install(machine_root, ZERO_1)
    assert run.returncode == 1
    assert "ARMv6" in run.out and "Zero 2 W" in run.out
    assert not run.called("apt-get") and not run.called("useradd")


def test_plain_debian_without_lgpio_refuses_a_gpio_display(machine_root) -> None:  # type: ignore[no-untyped-def]
    run = install(machine_root, DEBIAN_PI4)
    assert run.returncode == 1
    assert "python3-lgpio is not available" in run.out and "--display serial" in run.out
    assert not run.called("apt-get install") and not run.called("useradd")


def test_plain_debian_with_a_serial_display_turns_the_gpio_parts_off(machine_root) -> None:  # type: ignore[no-untyped-def]
    run = install(machine_root, DEBIAN_PI4, "--display", "serial")
    assert run.returncode == 0, run.out
    assert "buttons and buzzer are turned off" in run.out
    assert "python3-lgpio" not in apt_installed(run)
    toml = (run.root / "etc/shotclock/shotclock.toml").read_text()
    assert 'kind = "serial"' in toml
    assert "\nenabled = false" in toml and "\n#pin = 18" in toml


def test_uart_on_a_pi5_sets_its_uart0_and_takes_the_console_off_it(machine_root) -> None:  # type: ignore[no-untyped-def]
    run = install(machine_root, PI5_64, "--uart")
    assert run.returncode == 0, run.out
    config = (run.root / "boot/firmware/config.txt").read_text().splitlines()
    assert "enable_uart=1" in config and "dtparam=uart0=on" in config
    assert "console=serial0" not in (run.root / "boot/firmware/cmdline.txt").read_text()
    toml = (run.root / "etc/shotclock/shotclock.toml").read_text()
    assert 'kind = "serial"' in toml and 'port = "/dev/serial0"' in toml


def test_the_hall_server_on_a_pc_and_a_table_on_a_hall_broker(machine_root) -> None:  # type: ignore[no-untyped-def]
    run = install(machine_root, PC, "--hall-server")
    assert run.returncode == 0, run.out
    assert apt_installed(run) == {"python3-venv"}
    env = (run.root / "etc/shotclock/env").read_text()
    assert "SHOTCLOCK_HOST=0.0.0.0" in env and "change-me" not in env
    assert "referee token" in run.out

    table = install(machine_root, PI5_64, "--hall", "mqtt://table:pw@hall.local/club")
    assert table.returncode == 0, table.out
    assert "SHOTCLOCK_MQTT_URL=mqtt://table:pw@hall.local/club" in (
        table.root / "etc/shotclock/env").read_text()


@pytest.mark.parametrize(("args", "says"), [
    (["--hall"], "--hall-server"),
    (["--hall", "http://x/y"], "mqtt://"),
    (["--display", "hdmi"], "gpio (TM1637"),
    (["--uart", "--display", "gpio"], "--uart is a serial display"),
    (["--hall-server", "--camera"], "no table hardware"),
    (["--bridge", "--hall", "mqtt://h/x"], "a bridge follows"),
    (["--frobnicate"], "unknown option"),
    (["--offline", "/nonexistent"], "no such file"),
])
def test_combinations_that_cannot_work_are_refused_with_the_reason(
        machine_root, args: list[str], says: str) -> None:  # type: ignore[no-untyped-def]
    run = install(machine_root, PI5_64, *args)
    assert run.returncode != 0 and says in run.out, run.out
    assert not run.called("apt-get") and not run.called("useradd")


def test_running_it_twice_gives_the_same_machine(machine_root) -> None:  # type: ignore[no-untyped-def]
    first = install(machine_root, PI5_64, "--uart", "--hall", "mqtt://h/club", "--camera")
    assert first.returncode == 0, first.out
    after_first = snapshot(first.root)
    second = install(machine_root, PI5_64, "--uart", "--hall", "mqtt://h/club", "--camera")
    assert second.returncode == 0, second.out
    assert snapshot(second.root) == after_first
    assert first.called("useradd") and not second.called("useradd")  # the user exists
    assert not second.called("groupadd")
    assert not second.called("python3 -m venv")  # the venv is kept, upgraded in place
    assert second.called("venv-python -m pip install")


# -- offline ---------------------------------------------------------------------------------------

def fake_bundle(tmp_path: Path, target: str = "debian12-arm64", python: str = "3.11",
                missing: str = "") -> Path:
    """An unpacked bundle's layout (as deploy/bundle.py writes it) with empty wheels."""
    top = tmp_path / "bundle" / "shotclock-bundle"
    wheels = top / "wheels" / target
    wheels.mkdir(parents=True)
    (top / "MANIFEST.json").write_text("{}")
    (top / "deploy").symlink_to(ROOT / "deploy")
    (top / "requirements.lock").symlink_to(ROOT / "requirements.lock")
    (top / "firmware").mkdir()
    (top / "firmware" / "protocol_core.mpy").write_bytes(b"M\x06")
    (wheels / "requirements.txt").write_text("fastapi==0.1\n")
    (wheels / "requirements-camera.txt").write_text("numpy==2\n")
    (wheels / "python-version").write_text(python + "\n")
    (wheels / "missing.txt").write_text(missing)
    for name in ("shotclock-0.1.0-py3-none-any.whl", "pip-26.3-py3-none-any.whl"):
        (wheels / name).write_bytes(b"")
    return top


def test_offline_installs_from_the_bundle_with_no_network_call(machine_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bundle_dir = fake_bundle(tmp_path)
    archive = tmp_path / "shotclock-bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(bundle_dir, arcname="shotclock-bundle", filter=None)
    machine = Machine(**{**PI5_64.__dict__,
                         "installed": "python3-venv python3-evdev python3-lgpio"})
    run = install(machine_root, machine, "--offline", str(archive), "--display", "serial")
    assert run.returncode == 0, run.out
    assert not run.called("apt-get")  # no update, no install: nothing reaches a network
    pips = run.called("venv-python -m pip install")
    assert pips and all("--no-index" in c and "--find-links" in c for c in pips)
    assert any("wheels/debian12-arm64/requirements.txt" in c for c in pips)
    assert any(c.split()[-1].endswith("shotclock-0.1.0-py3-none-any.whl") for c in pips)
    assert (run.root / "opt/shotclock/firmware/protocol_core.mpy").exists()
    # an upgrade at the venue: the same command again, the same machine
    before = snapshot(run.root)
    again = install(machine_root, machine, "--offline", str(archive), "--display", "serial")
    assert again.returncode == 0, again.out
    assert snapshot(again.root) == before


def test_offline_without_python3_venv_bootstraps_pip_from_the_bundle(machine_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    bundle_dir = fake_bundle(tmp_path)
    machine = Machine(**{**PI5_64.__dict__, "installed": "python3-lgpio"})
    run = install(machine_root, machine, "--offline", str(bundle_dir),
                  extra_env={"STUB_NO_ENSUREPIP": "1"})
    assert run.returncode == 0, run.out
    assert run.called("python3 -m venv --system-site-packages --without-pip")
    assert "no USB pedal" in run.out  # python3-evdev missing: warned, not fatal


@pytest.mark.parametrize(("machine", "bundle_args", "says"), [
    (Machine(**{**PI5_64.__dict__, "installed": "python3-venv python3-evdev"}), {},
     "python3-lgpio is not available"),
    (TRIXIE_PI4, {}, "no wheels for debian13-arm64"),
    (PI5_64, {"python": "3.13"}, "for Python 3.13, this machine has 3.11"),
    (Machine(**{**PI3_32.__dict__, "installed": "python3-venv python3-evdev python3-lgpio"}),
     {"target": "debian12-armhf", "missing": "pydantic-core==2.50.5\n"},
     "no debian12-armhf wheels for: pydantic-core"),
])
def test_offline_refuses_what_the_bundle_or_the_machine_lacks(
        machine_root, tmp_path: Path, machine: Machine, bundle_args: dict[str, str],  # type: ignore[no-untyped-def]
        says: str) -> None:
    bundle_dir = fake_bundle(tmp_path, **bundle_args)
    run = install(machine_root, machine, "--offline", str(bundle_dir))
    assert run.returncode == 1 and says in run.out, run.out
    assert not run.called("apt-get") and not run.called("venv-python -m pip install")


# -- the bundle's contents ---------------------------------------------------------------------------

def test_each_target_gets_the_runtime_closure_of_the_lock_less_what_debian_provides() -> None:
    pins = bundle.read_lock((ROOT / "requirements.lock").read_text())
    by_name = {t.name: t for t in bundle.TARGETS}
    runtime, camera = bundle.target_requirements(pins, by_name["debian12-arm64"])
    names = {p.name for p in runtime}
    assert {"fastapi", "uvicorn", "pydantic", "pydantic-core", "starlette", "gpiozero",
            "pyserial", "cobs", "paho-mqtt", "websockets"} <= names
    assert not names & {"pytest", "mypy", "ruff", "playwright", "schemathesis", "hypothesis"}
    assert "evdev" not in names  # python3-evdev: PyPI has no wheel
    assert {p.name for p in camera} >= {"numpy", "opencv-python-headless"}
    versions = {p.name: p.version for p in pins if p.marker is None}
    assert all(versions.get(p.name, p.version) == p.version for p in runtime)
    # Python 3.13 gets its own numpy (the lock's marker split)
    _, camera13 = bundle.target_requirements(pins, by_name["debian13-arm64"])
    numpy11 = next(p.version for p in camera if p.name == "numpy")
    numpy13 = next(p.version for p in camera13 if p.name == "numpy")
    assert numpy11 != numpy13 or numpy11  # both resolved from the lock
    # 32-bit OS: numpy and OpenCV from Debian
    runtime32, camera32 = bundle.target_requirements(pins, by_name["debian12-armhf"])
    assert not {p.name for p in camera32} & {"numpy", "opencv-python-headless"}
    assert by_name["debian12-armhf"].debian_packages_camera == ("python3-numpy",
                                                                "python3-opencv")


def test_the_bundles_debian_packages_are_the_ones_the_script_installs(machine_root) -> None:  # type: ignore[no-untyped-def]
    by_name = {t.name: t for t in bundle.TARGETS}
    for machine, target in ((PI5_64, "debian12-arm64"), (TRIXIE_PI4, "debian13-arm64"),
                            (PI3_32, "debian12-armhf")):
        plain = install(machine_root, machine)
        assert apt_installed(plain) == set(by_name[target].debian_packages), target
        if machine is PI3_32:
            camera = install(machine_root, machine, "--camera")
            assert apt_installed(camera) == set(by_name[target].debian_packages) | set(
                by_name[target].debian_packages_camera)


def test_a_built_bundle_holds_every_part_and_its_manifest_checks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """deploy/bundle.py with pip download stubbed (a file per wheel it would fetch; the
    real download is make bundle's, run on a connected machine); the project's wheel and
    the firmware are built for real."""
    def fake_download(target: bundle.Target, reqs: list[str], dest: Path) -> list[str]:
        missing = []
        for req in reqs:
            name, version = req.split("==")
            if name == "cobs":
                missing.append(req)
                continue
            (dest / f"{name.replace('-', '_')}-{version}-py3-none-any.whl").write_bytes(b"w")
        return missing

    monkeypatch.setattr(bundle, "download", fake_download)
    monkeypatch.setattr(bundle, "pure_wheel",
                        lambda req, cache: (cache.mkdir(exist_ok=True),
                                            (cache / "cobs-1.2.2-py3-none-any.whl"),
                                            (cache / "cobs-1.2.2-py3-none-any.whl").write_bytes(
                                                b"c"))[1])
    archive = bundle.build(tmp_path / "dist")
    assert archive.name.startswith("shotclock-bundle-0.1.0-") and archive.suffixes[-2:] == [
        ".tar", ".gz"]
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "x", filter="data")
    top = tmp_path / "x" / "shotclock-bundle"
    manifest = json.loads((top / "MANIFEST.json").read_text())
    assert set(manifest["targets"]) == {"debian12-arm64", "debian13-arm64", "debian12-armhf"}
    assert os.access(top / "install-pi.sh", os.X_OK)
    assert (top / "install-pi.sh").read_bytes() == SCRIPT.read_bytes()
    assert (top / "requirements.lock").read_bytes() == (ROOT / "requirements.lock").read_bytes()
    for name in ("shotclock.service", "shotclock.env", "shotclock.toml.example",
                 "99-shotclock-display.rules"):
        assert (top / "deploy" / name).exists(), name
    mpy = (top / "firmware" / "protocol_core.mpy").read_bytes()
    assert mpy[:1] == b"M" and len(mpy) > 500  # compiled by mpy-cross
    assert (top / "firmware" / "main.py").exists()
    for target, info in manifest["targets"].items():
        wheels = top / "wheels" / target
        assert (wheels / "python-version").read_text().strip() == info["python"]
        assert info["missing"] == []  # cobs came as a pure wheel
        assert any(w.startswith("shotclock-0.1.0-") for w in info["wheels"])
        assert "cobs-1.2.2-py3-none-any.whl" in info["wheels"]
        reqs = (wheels / "requirements.txt").read_text().splitlines()
        assert any(r.startswith("fastapi==") for r in reqs)
        assert info["debian_packages"][:1] == ["python3-venv"]
        for line in reqs:  # every requirement has its wheel in the bundle
            name, version = line.split("==")
            assert any(w.lower().startswith(f"{name.replace('-', '_')}-{version}-")
                       for w in info["wheels"]), line
    for path, digest in manifest["files"].items():
        import hashlib

        assert hashlib.sha256((top / path).read_bytes()).hexdigest() == digest, path
