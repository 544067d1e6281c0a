"""``shotclock doctor`` (issue 22 point 5) against a real ``serve`` driving the display
emulator on a pty, and against broken set-ups: the wrong group, no display, a read-only
store, a LAN address without a token. Each fault is named with its fix.

Permissions: the tests run as root (CI), for whom every file is open. Doctor takes the
access check as a part (``Machine.access``, ``os.access`` by default); here it is one that
applies the real files' real owner, group and mode bits for an unprivileged user (uid
4242), so a pty left ``root:tty 0620`` or a store directory made ``0555`` is what fails.
"""

from __future__ import annotations

import dataclasses
import grp
import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from clock_service.edges.cli import doctor
from firmware_bridge.emulator import DisplayEmulator
from tests.cli import shotclock
from tests.server import ServerProcess, http
from tests.waiting import until

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
UID = 4242  # the service's user in these tests (needs no entry in /etc/passwd)
TOML = 'kind = "serial"\ntable_id = "1"\n[buttons]\nenabled = false\n'


def access_as(uid: int, gids: set[int]) -> Callable[[str | Path, int], bool]:
    """os.access for another user: the file's owner, group or other bits, as the kernel
    would apply them (parent directories not walked)."""
    def access(path: str | Path, mode: int) -> bool:
        try:
            st = os.stat(path)
        except OSError:
            return False
        if st.st_uid == uid:
            bits = (st.st_mode >> 6) & 7
        elif st.st_gid in gids:
            bits = (st.st_mode >> 3) & 7
        else:
            bits = st.st_mode & 7
        need = (4 if mode & os.R_OK else 0) | (2 if mode & os.W_OK else 0) | (
            1 if mode & os.X_OK else 0)
        return bits & need == need
    return access


@pytest.fixture
def display() -> Iterator[DisplayEmulator]:
    emu = DisplayEmulator(timeout_ms=1000, quiet=True)
    emu.start()
    yield emu
    emu.stop()


def serve(tmp_path: Path, port_path: str, **env: str) -> ServerProcess:
    config = tmp_path / "shotclock.toml"
    config.write_text(TOML)
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    return ServerProcess(state / "shotclock.db", env={
        "SHOTCLOCK_HARDWARE_CONFIG": str(config), "SHOTCLOCK_SERIAL_PORT": port_path, **env,
    }).start()


def machine_for(server: ServerProcess, monkeypatch: pytest.MonkeyPatch,
                groups: set[str], **env: str) -> doctor.Machine:
    """What `shotclock doctor` would see with the server's environment, as user 4242."""
    for key, value in server.env.items():
        if key.startswith(("SHOTCLOCK_", "GPIOZERO_")):
            monkeypatch.setenv(key, value)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("SHOTCLOCK_DB", str(server.db))
    args = doctor_args(url=server.url)
    m = doctor.machine_from_env(args)
    gids = {grp.getgrnam(g).gr_gid for g in groups}
    return dataclasses.replace(m, user="shotclock", groups=groups, euid=UID,
                               access=access_as(UID, gids), run=lambda cmd: None)


def doctor_args(**kw: str) -> object:
    import argparse

    return argparse.Namespace(json=False, url=kw.get("url"), db=None,
                              lock=str(ROOT / "requirements.lock"))


def by_id(items: list[doctor.Item]) -> dict[str, doctor.Item]:
    out = {item.id: item for item in items}
    assert len(out) == len(items), [i.id for i in items]  # one item per id
    return out


def wait_acknowledging(server: ServerProcess) -> None:
    def acknowledging() -> bool:
        hardware = http("GET", f"{server.url}/api/health")[1]["components"].get("hardware")
        return bool(hardware and (hardware.get("display") or {}).get("acknowledging"))

    until(acknowledging, 10, 0.05, "the display to acknowledge")


def wait_for_a_fault(server: ServerProcess) -> None:
    until(lambda: http("GET", f"{server.url}/api/health")[1].get("faults"), 20, 0.05,
          "a fault of the service")


def test_a_working_table_is_all_ok(tmp_path: Path, display: DisplayEmulator,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    assert display.slave_path is not None
    dialout = grp.getgrnam("dialout").gr_gid
    os.chown(display.slave_path, -1, dialout)  # what the udev rule does
    os.chmod(display.slave_path, 0o660)
    server = serve(tmp_path, display.path)
    try:
        wait_acknowledging(server)
        for path in (server.db.parent, *server.db.parent.iterdir()):
            os.chown(path, UID, -1)  # what StateDirectory= does
        m = machine_for(server, monkeypatch, groups={"dialout"})
        items = by_id(doctor.diagnose(m))
        failing = [i for i in items.values() if i.status == doctor.FAILING]
        assert not failing, failing
        for ok in ("service", "user", "hardware", "serial", "display", "store", "token",
                   "versions", "disk", "camera", "broker"):
            assert items[ok].status == doctor.OK, items[ok]
        assert "answers" in items["display"].summary
        assert "dialout" in items["user"].summary
        assert "quick_check ok" in items["store"].summary
        # nothing answers about NTP here (run is stubbed): a warning with the fix
        assert items["time"].status == doctor.WARNING and "NTP" in items["time"].fix
        text = doctor.render(list(items.values()))
        assert "[✓] Display ACK:" in text and "failing" in text.splitlines()[-1]
    finally:
        server.stop()


def test_the_wrong_group_and_a_read_only_store_are_named_with_their_fix(
        tmp_path: Path, display: DisplayEmulator, monkeypatch: pytest.MonkeyPatch) -> None:
    assert display.slave_path is not None
    os.chmod(display.slave_path, 0o620)  # root:tty, as a pty is made: not dialout's
    server = serve(tmp_path, display.path)
    try:
        wait_acknowledging(server)
        os.chmod(server.db.parent, 0o555)  # the store's directory read-only for everyone
        m = machine_for(server, monkeypatch, groups=set())
        items = by_id(doctor.diagnose(m))
        user, serial, store = items["user"], items["serial"], items["store"]
        assert user.status == doctor.FAILING and "not in group dialout" in user.summary
        assert "usermod -a -G dialout shotclock" in (user.fix or "")
        assert serial.status == doctor.FAILING and "no permission" in serial.summary
        assert store.status == doctor.FAILING and "read-only" in store.summary
        assert "chown" in (store.fix or "")
    finally:
        os.chmod(server.db.parent, 0o755)
        server.stop()


def test_no_display_and_a_lan_address_without_a_token_fail_the_cli(
        tmp_path: Path) -> None:
    missing = "/dev/shotclock-display-not-plugged-in"
    server = serve(tmp_path, missing)
    try:
        env = {**server.env, "SHOTCLOCK_DB": str(server.db),
               "SHOTCLOCK_PORT": str(server.port), "SHOTCLOCK_HOST": "0.0.0.0"}
        env.pop("SHOTCLOCK_REFEREE_TOKEN", None)
        wait_for_a_fault(server)  # the service raises the missing display's fault on its own time
        done = subprocess.run([sys.executable, "-m", "clock_service", "doctor", "--json",
                               "--url", server.url, "--env-file", ""], env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 1, done.stderr[-2000:]
        report = json.loads(done.stdout)
        items = {i["id"]: i for i in report["items"]}
        assert items["serial"]["status"] == "failing"
        assert f"{missing} does not exist" in items["serial"]["summary"]
        assert "plug the Pico in" in items["serial"]["fix"]
        assert items["display"]["status"] == "failing"  # the service says: not connected
        assert items["token"]["status"] == "failing"
        assert "no SHOTCLOCK_REFEREE_TOKEN" in items["token"]["summary"]
        assert items["service"]["status"] == "warning"  # running, with the display fault
        assert report["counts"]["failing"] >= 3
        assert set(items["serial"]) == {"id", "name", "status", "summary", "fix"}
    finally:
        server.stop()


def test_without_a_service_doctor_says_so_and_checks_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "shotclock.db"
    db.write_bytes(b"not a database, " * 512)
    monkeypatch.setenv("SHOTCLOCK_DB", str(db))
    monkeypatch.setenv("SHOTCLOCK_HARDWARE", "none")
    monkeypatch.setenv("SHOTCLOCK_MQTT_URL", "mqtt://127.0.0.1:1/hall")  # nobody there
    args = doctor_args(url="http://127.0.0.1:1")
    items = by_id(doctor.diagnose(doctor.machine_from_env(args)))
    assert items["service"].status == doctor.WARNING and "not answering" in items[
        "service"].summary
    assert items["store"].status == doctor.FAILING  # not a database: named, with the fix
    assert "move the store aside" in (items["store"].fix or "")
    assert items["broker"].status == doctor.FAILING and "unreachable" in items[
        "broker"].summary
    assert stat.S_ISREG(db.stat().st_mode)  # doctor changed nothing


def test_versions_are_checked_without_packaging_as_on_a_pi(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Pi's venv has the service's dependencies only: no ``packaging`` (the arm64
    proof found doctor depending on it)."""
    monkeypatch.setitem(sys.modules, "packaging", None)
    monkeypatch.setitem(sys.modules, "packaging.requirements", None)
    lock = tmp_path / "requirements.lock"
    text = (ROOT / "requirements.lock").read_text()
    m = dataclasses.replace(doctor.machine_from_env(doctor_args(url="http://127.0.0.1:1")),
                            lock=lock)
    lock.write_text(text)
    (item,) = doctor.check_versions(m)
    assert item.status == doctor.OK and "as locked" in item.summary, item
    fastapi = next(line for line in text.splitlines() if line.startswith("fastapi=="))
    lock.write_text(text.replace(fastapi, "fastapi==0.0.1"))
    (item,) = doctor.check_versions(m)
    assert item.status == doctor.WARNING and "fastapi" in item.summary and "0.0.1" in item.summary


def test_run_by_hand_doctor_reads_the_units_environment_file(tmp_path: Path) -> None:
    """Issue 39's boot proof: `sudo -u shotclock shotclock doctor` (deploy/README.md, the
    installer's last words) reported "kind none" and a store in ~/.local/state, not what
    the service runs with; the unit's EnvironmentFile is read now (the environment wins)."""
    store = tmp_path / "from-the-env-file.db"
    env_file = tmp_path / "env"
    env_file.write_text(f"# as /etc/shotclock/env\nSHOTCLOCK_DB={store}\n"
                        "SHOTCLOCK_HARDWARE='none'\n\nSHOTCLOCK_PORT=1\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHOTCLOCK_")}

    def store_item(*args: str, **extra: str) -> str:
        done = shotclock("doctor", "--json", *args, env={**env, **extra})  # by this process
        items = {i["id"]: i for i in json.loads(done.stdout)["items"]}
        return str(items["store"]["summary"])

    assert str(store) in store_item("--env-file", str(env_file))
    assert str(store) not in store_item("--env-file", "")
    other = tmp_path / "from-the-environment.db"
    assert str(other) in store_item("--env-file", str(env_file), SHOTCLOCK_DB=str(other))
