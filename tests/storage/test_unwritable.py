"""A store path that cannot be written (a read-only root: Raspberry Pi OS's overlay file
system, a card the kernel remounted read-only) stops ``shotclock serve`` with one line that
names the path and the fix, and exit status 73, which the units list in
RestartPreventExitStatus (before: an uncaught EROFS, and systemd restarting it each second)."""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clock_service.core.errors import StoreUnwritable
from clock_service.edges.cli.main import EXIT_STORE_UNWRITABLE
from clock_service.service.storage import Store

ROOT = Path(__file__).resolve().parents[2]


def _read_only_mount_works(where: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c",
                            f"mount -t tmpfs -o ro tmpfs {where} && ! touch {where}/x"],
                           capture_output=True, timeout=10)
    return probe.returncode == 0


@pytest.mark.parametrize("db", ["shotclock.db", "sub/shotclock.db"])
def test_serve_on_a_read_only_file_system_says_so_once_and_exits_73(
        tmp_path: Path, db: str) -> None:
    where = tmp_path / "ro"
    where.mkdir()
    if not _read_only_mount_works(where):
        pytest.skip("no user namespace here to mount a read-only file system")
    serve = f"exec {sys.executable} -m clock_service serve --port 0 --db {where}/{db}"
    done = subprocess.run(["unshare", "-rm", "sh", "-c",
                           f"mount -t tmpfs -o ro tmpfs {where} && {serve}"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == EXIT_STORE_UNWRITABLE == 73, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert f"{where}/{db}" in lines[0] and "read-only" in lines[0]
    assert "ReadWritePaths=" in lines[0] and "deploy/README.md" in lines[0]
    assert "Traceback" not in done.stderr


def test_a_lock_file_that_cannot_be_created_is_store_unwritable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def refusing(path: str, *args: object, **kwargs: object) -> int:
        if str(path).endswith(".lock"):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refusing)
    store = Store(tmp_path / "s.db")
    with pytest.raises(StoreUnwritable) as info:
        store.lock()
    assert re.search(r"s\.db\.lock: the file system is read-only", str(info.value))


def test_the_units_do_not_restart_a_store_that_cannot_be_written() -> None:
    for unit in ("deploy/shotclock.service", "deploy/mosquitto/shotclock-hall.service"):
        text = (ROOT / unit).read_text()
        line = next(x for x in text.splitlines() if x.startswith("RestartPreventExitStatus="))
        assert str(EXIT_STORE_UNWRITABLE) in line.split("=", 1)[1].split(), unit
