"""A real Mosquitto broker on a free loopback port, for the MQTT tests and the benchmark.

Debian's ``mosquitto`` (``make test`` installs it as root on a fresh machine). Each broker
gets its own config in a work directory: a listener on 127.0.0.1, anonymous access or a
password file and an ACL, no persistence unless asked, a log file. It can be killed with
SIGKILL and started again on the same port, as in a crash.
"""

from __future__ import annotations

import getpass
import shutil
import socket
import subprocess
import time
from pathlib import Path

from harness.process import Child
from harness.server import free_port

__all__ = ["Broker", "MOSQUITTO", "mosquitto_missing"]

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


def mosquitto_missing() -> bool:
    return not Path(MOSQUITTO).exists()


# Set by tests/conftest.py under `pytest --fast` (make test-fast): starting one skips the test.
FAST = False


# The shared role accounts of the test and benchmark brokers (harness/roles.acl); the
# shipped ACL is per account (deploy/mosquitto/accounts.py, tests/mqtt/test_accounts.py).
ROLES = {"table": "table-pw", "referee": "referee-pw", "hall": "hall-pw", "overlay": "overlay-pw"}
ACL = Path(__file__).resolve().parent / "roles.acl"


class Broker(Child):
    """(kill: what it had not delivered is lost; it keeps no persistence.)"""

    stop_timeout = 5.0

    def __init__(self, workdir: Path, *, port: int | None = None,
                 users: dict[str, str] | None = None, acl: str | None = None,
                 extra: str = "", name: str = "broker") -> None:
        self.dir = Path(workdir) / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.name = name
        self.log = self.dir / "mosquitto.log"
        self.conf = self.dir / "mosquitto.conf"
        lines = [
            f"listener {self.port} 127.0.0.1",
            # As root (CI), mosquitto drops to user 'mosquitto', which cannot read a test's
            # private temp dir; naming the current user keeps it (no effect as non-root).
            f"user {getpass.getuser()}",
            "persistence false",
            f"log_dest file {self.log}",
            # one type per line (mosquitto reads only the first of a list)
            "log_type error", "log_type warning", "log_type notice", "log_type information",
            "max_queued_messages 100000",
            "set_tcp_nodelay true",  # as deploy/mosquitto/shotclock.conf
        ]
        if users:
            pwfile = self.dir / "passwd"
            pwfile.write_text("")
            for user, password in users.items():
                subprocess.run(["mosquitto_passwd", "-b", str(pwfile), user, password],
                               check=True, capture_output=True)
            lines += ["allow_anonymous false", f"password_file {pwfile}"]
        else:
            lines.append("allow_anonymous true")
        if acl is not None:
            aclfile = self.dir / "acl"
            aclfile.write_text(acl)
            lines.append(f"acl_file {aclfile}")
        self.conf.write_text("\n".join(lines) + "\n" + extra)
        self.proc: subprocess.Popen[bytes] | None = None

    def url(self, hall: str = "hall", user: str | None = None,
            password: str | None = None) -> str:
        auth = f"{user}:{password}@" if user else ""
        return f"mqtt://{auth}127.0.0.1:{self.port}/{hall}"

    def start(self, timeout: float = 10.0) -> Broker:
        if FAST:
            import pytest

            pytest.skip("starts a server or a broker: not in make test-fast (pytest --fast)")
        self.proc = subprocess.Popen([MOSQUITTO, "-c", str(self.conf)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                if self.log.exists():
                    err += self.log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"mosquitto exited with {self.proc.returncode}: {err}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"mosquitto did not listen on {self.port}")

