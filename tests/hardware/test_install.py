"""The package installed into a fresh venv and run as the unit would: an unprivileged user,
cwd ``/``, only the shipped env file, hardware ``serial`` driving the emulator
(issue 10, defects 1 and 2, "How it is checked"); then SIGKILLed: the controller shows
its fault within 1.5 s.

Before the fix the unit had no working directory and the store path was relative: as user
``shotclock`` in ``/`` the service tried ``/var/shotclock.db`` and exited.

To stay fast the venv reuses the dev venv's libraries (a ``.pth`` file) and gets only this
project, built and installed with ``--no-deps``; it is Debian's ``/usr/bin/python3`` (the
dev interpreter may live where another user cannot read it). The shipped env file's paths
are moved into a scratch directory; only the port, the serial port and nothing else are
added. As root (CI) the test makes a throwaway system user; otherwise it runs as the
current (already unprivileged) user.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from firmware_bridge.emulator import DisplayEmulator
from harness.bare_loop import BareLoopThread
from tests.server import free_port, http

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A directory another user can enter (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="shotclock-install-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def unprivileged() -> Iterator[pwd.struct_passwd]:
    if os.geteuid() != 0:
        yield pwd.getpwuid(os.geteuid())  # already an unprivileged user
        return
    name = f"sctest{os.getpid() % 100000}"
    subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                    "--shell", "/usr/sbin/nologin", name], check=True, capture_output=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], capture_output=True)


def _venv(scratch: Path) -> Path:
    if not Path(SYSTEM_PYTHON).exists():
        pytest.skip(f"{SYSTEM_PYTHON} is missing: make test-deps installs python3-venv")
    venv = scratch / "venv"
    # --without-pip: ensurepip alone takes 10-30 s; the dev venv's pip installs into it.
    made = subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(venv)],
                          capture_output=True, text=True, timeout=120)
    if made.returncode != 0:
        pytest.skip(f"no venv module for {SYSTEM_PYTHON} (apt install python3-venv): "
                    f"{made.stderr[-300:]}")
    # The libraries (fastapi, uvicorn, pyserial ..., and setuptools to build) from the dev
    # venv, after the venv's own site-packages: the installed shotclock wins over the
    # editable checkout (whose finder is not loaded from a plain path entry).
    (target,) = (venv / "lib").glob("python3*/site-packages")
    dev = [p for p in site.getsitepackages() if p.endswith("site-packages")]
    if not all(_others_can_read(Path(p)) for p in dev):
        # a checkout under a private home (/root is 0700): copy the libraries instead
        copies = []
        for n, path in enumerate(dev):
            copy = scratch / f"libraries{n}"
            shutil.copytree(path, copy, symlinks=True,
                            ignore=shutil.ignore_patterns("__editable__*", "*.pth"))
            copies.append(str(copy))
        dev = copies
    (target / "dev-libraries.pth").write_text("\n".join(dev) + "\n")
    # pip --python: the dev pip installs for the venv's interpreter, so the console script's
    # shebang is the venv's python, as after a real `pip install`.
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin/python"),
                                "install", "--quiet", "--no-deps", "--no-build-isolation",
                                str(ROOT)], capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stderr[-2000:]
    assert (target / "clock_service" / "edges" / "cli" / "main.py").exists()
    assert (venv / "bin" / "shotclock").read_text().startswith(f"#!{venv}/bin/python")
    return venv


def _others_can_read(path: Path) -> bool:
    """Whether a user outside owner and group can reach ``path`` (o+x on every parent)."""
    for part in [path, *path.parents]:
        if part.exists() and not part.stat().st_mode & 0o001:
            return False
    return True


def _shipped_env(scratch: Path, state: Path, etc: Path) -> dict[str, str]:
    """deploy/shotclock.env with its /var/lib and /etc paths moved into the scratch dir."""
    env: dict[str, str] = {}
    for line in (ROOT / "deploy" / "shotclock.env").read_text().splitlines():
        if line and not line.startswith("#"):
            key, value = line.split("=", 1)
            env[key] = value.replace("/var/lib/shotclock", str(state)).replace(
                "/etc/shotclock", str(etc))
    return env


@pytest.mark.serial
def test_installed_package_serves_as_an_unprivileged_user_from_root_dir(
        scratch: Path, unprivileged: pwd.struct_passwd) -> None:
    venv = _venv(scratch)
    state, etc = scratch / "state", scratch / "etc"
    state.mkdir()
    etc.mkdir()
    shutil.copy(ROOT / "deploy" / "shotclock.toml.example", etc / "shotclock.toml")
    os.chown(state, unprivileged.pw_uid, unprivileged.pw_gid)  # what StateDirectory= does
    state.chmod(0o750)
    env = _shipped_env(scratch, state, etc)
    assert env["SHOTCLOCK_DB"] == str(state / "shotclock.db")
    emulator = DisplayEmulator(timeout_ms=1000, quiet=True)
    emulator.start()
    assert emulator.slave_path is not None
    os.chown(emulator.slave_path, unprivileged.pw_uid, -1)  # what the dialout group gives
    port = free_port()
    env |= {"SHOTCLOCK_PORT": str(port), "SHOTCLOCK_HARDWARE": "serial",
            "SHOTCLOCK_SERIAL_PORT": emulator.path, "PATH": "/usr/bin:/bin"}
    log = scratch / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([str(venv / "bin" / "shotclock"), "serve"], cwd="/", env=env,
                                user=unprivileged.pw_uid, group=unprivileged.pw_gid,
                                extra_groups=[], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        health = None
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(OSError):
                status, body = http("GET", f"http://127.0.0.1:{port}/api/health", timeout=1.0)
                if status == 200:
                    health = body
                    break
            time.sleep(0.1)
        assert health is not None, (proc.poll(), log.read_text()[-3000:])
        # the installed package, not the checkout, is what runs
        assert str(venv) in Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode(
            errors="replace")
        assert (state / "shotclock.db").exists()
        assert (state / "shotclock.db").stat().st_uid == unprivileged.pw_uid
        # hardware "serial" drives the emulator: the digits show table 1's clock
        assert emulator.wait_line("DISPLAY 35 ready p0 ext=1,1 fouls=0,0", timeout=5.0), \
            emulator.lines[-5:]
        assert health["components"]["hardware"]["kind"] == "serial"
        # The display's port is opened by its own thread: the health of the service's
        # first answer may predate it; what it says now, once the digits are drawn, may not.
        def display_up(_: list[str]) -> bool:
            display = http("GET", f"http://127.0.0.1:{port}/api/health")[1]["components"][
                "hardware"]["display"]
            return bool(display["connected"] and display["acknowledging"])

        assert emulator.wait_for(display_up, timeout=3.0)
        # the pages ship in the package
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{port}/referee?table=1",
                                    timeout=5) as page:
            assert page.status == 200 and b"<html" in page.read().lower()

        # A crash (SIGKILL: nothing runs on the way out): the controller shows its
        # host-gone pattern within 1.5 s instead of a stale time; later by as much as this
        # process's own threads woke late meanwhile (the emulator is one of them).
        start = len(emulator.lines)
        with BareLoopThread() as bare:
            killed = time.monotonic()
            proc.send_signal(signal.SIGKILL)
            assert emulator.wait_for(lambda lines: "FAULT no-heartbeat" in lines[start:], 10)
            took = time.monotonic() - killed
        assert took < 1.5 + bare.max_late() / 1000, (took, bare.max_late())
        assert not any(x.startswith("DISPLAY 3") for x in emulator.lines[start:])
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        emulator.stop()
