"""The shipped broker set-up (issue 20, findings 1, 2 and 5): deploy/mosquitto/shotclock.conf
as shipped (only ports and file paths moved into a temp dir), the accounts and ACL that
deploy/mosquitto/accounts.py generates, and the certificates of ``shotclock tls init``;
a real table service and a real hall connected over TLS with the hall CA.

- a client logging in with table 7's client id (a reader's account) cannot take the
  table's connection: client ids are the user names;
- table 8's account cannot publish table 7's events, state, status or replay requests; a
  reader publishes nothing; only the hall's account asks for replays;
- the TLS handshake is real: a client with another CA is refused, and the service says so.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clock_service.service.tls import Device, init
from tests.mqtt.conftest import need_mosquitto
from tests.mqtt.watcher import Watcher
from tests.server import ServerProcess, free_port
from tests.tls_probe import CBC_TLS12, REFUSED, handshake, s_client
from tests.waiting import until

pytestmark = [pytest.mark.mqtt, pytest.mark.e2e]

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "mosquitto"
NOT_AUTHORIZED = 135
TOKEN = "hall-token-0123456789abc"
ROOT = "shotclock/v1/main/tables"


def wait(check: Any, what: str, timeout: float = 20.0) -> Any:
    """tests.waiting.until, polling the services over HTTP every 50 ms."""
    return until(check, timeout, 0.05, what)


class Shipped:
    def __init__(self, tmp: Path) -> None:
        need_mosquitto()
        self.dir = tmp / "mosquitto"
        subprocess.run([sys.executable, str(DEPLOY / "accounts.py"), "--hall", "main",
                        "--tables", "7-8", "--reader", "obs", "--referee", "desk",
                        "--broker", "127.0.0.1", "--out", str(self.dir)], check=True,
                       capture_output=True)
        self.accounts = json.loads((self.dir / "accounts.json").read_text())["accounts"]
        init(self.dir, [Device("broker", ("broker", "127.0.0.1"))], hall="test hall")
        self.ca = str(self.dir / "ca.crt")
        self.tls_port, self.port = free_port(), free_port()
        shipped = (DEPLOY / "shotclock.conf").read_text()
        conf = (shipped.replace("listener 8883", f"listener {self.tls_port} 127.0.0.1")
                .replace("listener 1883 127.0.0.1", f"listener {self.port} 127.0.0.1")
                .replace("/etc/mosquitto/shotclock/", f"{self.dir}/")
                + f"\nuser {getpass.getuser()}\npersistence_location {tmp}/\n"
                + f"log_dest file {tmp}/mosquitto.log\n")
        assert conf.count(str(self.dir)) >= 5, conf
        assert conf.count("use_username_as_clientid true") == 2
        (tmp / "mosquitto.conf").write_text(conf)
        # As on the hall server, where the drop-in mosquitto-tls.conf sets OPENSSL_CONF
        assert "OPENSSL_CONF=/etc/mosquitto/shotclock-tls.cnf" in (
            DEPLOY / "mosquitto-tls.conf").read_text()
        self.proc = subprocess.Popen(
            ["mosquitto", "-c", str(tmp / "mosquitto.conf")], stderr=subprocess.PIPE,
            env={**os.environ, "OPENSSL_CONF": str(DEPLOY / "shotclock-tls.cnf")})

        def listening() -> bool:
            assert self.proc.poll() is None, self.proc.stderr.read() if self.proc.stderr else ""
            try:
                socket.create_connection(("127.0.0.1", self.tls_port), timeout=0.5).close()
            except OSError:
                return False
            return True

        until(listening, 10, 0.02, "mosquitto to listen")

    def env_line(self, account: str) -> str:
        """The SHOTCLOCK_MQTT_URL the script wrote for ``account``, at the test's port."""
        path = next(self.dir.glob(f"env/{account}.*"))
        line = next(x for x in path.read_text().splitlines()
                    if x.startswith("SHOTCLOCK_MQTT_URL="))
        return line.split("=", 1)[1].replace("127.0.0.1:8883", f"127.0.0.1:{self.tls_port}")

    def login(self, account: str, client_id: str | None = None, ca: str | None = None
              ) -> Watcher:
        return Watcher(self.tls_port, user=account,
                       password=self.accounts[account]["password"], client_id=client_id,
                       ca=ca or self.ca)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture
def shipped(tmp_path: Path) -> Iterator[Shipped]:
    s = Shipped(tmp_path)
    try:
        yield s
    finally:
        s.stop()


def test_the_script_writes_one_account_per_pi_with_secrets_private(shipped: Shipped) -> None:
    accounts = shipped.accounts
    assert set(accounts) == {"shotclock-hall-main", "shotclock-main-table-7",
                             "shotclock-main-table-8", "obs", "desk"}
    assert len({a["password"] for a in accounts.values()}) == 5
    for name in ("accounts.json", "shotclock.passwd"):
        assert (shipped.dir / name).stat().st_mode & 0o077 == 0, name
    assert "$7$" in (shipped.dir / "shotclock.passwd").read_text()  # hashed by mosquitto
    acl = (shipped.dir / "shotclock.acl").read_text()
    assert "topic write shotclock/v1/main/tables/7/status" in acl
    assert "topic write shotclock/v1/+/" not in acl  # nobody writes every hall's tables
    env = (shipped.dir / "env" / "shotclock-main-table-7.env").read_text()
    assert "SHOTCLOCK_DEFAULT_TABLE=7" in env and "mqtts://shotclock-main-table-7:" in env
    # Run again with one more table: the accounts already there keep their passwords.
    subprocess.run([sys.executable, str(DEPLOY / "accounts.py"), "--hall", "main",
                    "--tables", "7-9", "--reader", "obs", "--referee", "desk", "--broker",
                    "127.0.0.1", "--out", str(shipped.dir)], check=True, capture_output=True)
    again = json.loads((shipped.dir / "accounts.json").read_text())["accounts"]
    assert again["shotclock-main-table-7"] == accounts["shotclock-main-table-7"]
    assert "shotclock-main-table-9" in again


def test_no_account_can_speak_for_another_table_or_take_its_connection(
        shipped: Shipped, tmp_path: Path) -> None:
    common = {"SHOTCLOCK_REFEREE_TOKEN": TOKEN, "SHOTCLOCK_MQTT_CA": shipped.ca,
              "SHOTCLOCK_READ_RATE": "0"}
    table = ServerProcess(tmp_path / "table.db", env={
        **common, "SHOTCLOCK_DEFAULT_TABLE": "7",
        "SHOTCLOCK_MQTT_URL": shipped.env_line("shotclock-main-table-7")})
    hall = ServerProcess(tmp_path / "hall.db", subcommand="hall", env={
        **common, "SHOTCLOCK_DEFAULT_TABLE": "",
        "SHOTCLOCK_MQTT_URL": shipped.env_line("shotclock-hall-main")})
    try:
        table.start()
        hall.start()
        wait(lambda: [t for t in hall.get("/api/tables") if t["table"] == "7"],
             "the hall to mirror table 7 over TLS")
        wait(lambda: hall.command("7", "start", token=TOKEN)[0] == 200, "a forwarded command")

        def table_connects() -> int:
            return int(table.get("/api/health")["components"]["mqtt"]["per_table"]["7"][
                "connects"])

        assert table_connects() == 1
        # A reader logs in with table 7's documented client id: it gets its own id.
        with shipped.login("obs", client_id="shotclock-main-table-7") as obs:
            obs.subscribe(f"{ROOT}/7/events")
            assert hall.command("7", "pause", token=TOKEN)[0] == 200
            wait(lambda: obs.on(f"{ROOT}/7/events"), "the reader to see the pause")
            for kind in ("events", "state", "status", "commands", "replay"):
                assert obs.publish(f"{ROOT}/7/{kind}", b"offline") == NOT_AUTHORIZED, kind
        assert table_connects() == 1
        assert hall.get("/api/health")["components"]["mqtt"]["connects"] == 1
        # Table 8's account speaks for table 8 only.
        with shipped.login("shotclock-main-table-8") as other:
            for kind in ("events", "state", "status", "replay", "commands"):
                assert other.publish(f"{ROOT}/7/{kind}", b"offline",
                                     retain=kind == "status") == NOT_AUTHORIZED, kind
            assert other.publish(f"{ROOT}/8/status", b"online") == 0
        # A referee desk may command (with the token), never ask for replays.
        with shipped.login("desk") as desk:
            assert desk.publish(f"{ROOT}/7/replay", b'{"since": 0}') == NOT_AUTHORIZED
        assert hall.command("7", "resume", token=TOKEN)[0] == 200
        assert table.get("/api/tables/7")["phase"] == "running"
        assert table_connects() == 1
        # A wrong CA: the handshake fails (the broker's certificate is not the other CA's).
        other_ca = tmp_path / "other"
        init(other_ca, [], hall="another hall")
        with pytest.raises(ssl.SSLError, match="CERTIFICATE_VERIFY_FAILED"):
            shipped.login("obs", ca=str(other_ca / "ca.crt"))
    finally:
        hall.stop()
        table.stop()


def test_a_service_with_the_wrong_ca_does_not_connect_and_says_why(
        shipped: Shipped, tmp_path: Path) -> None:
    other = tmp_path / "other"
    init(other, [], hall="another hall")
    table = ServerProcess(tmp_path / "table.db", env={
        "SHOTCLOCK_DEFAULT_TABLE": "7", "SHOTCLOCK_MQTT_CA": str(other / "ca.crt"),
        "SHOTCLOCK_MQTT_URL": shipped.env_line("shotclock-main-table-7")})
    try:
        table.start()
        faults = wait(lambda: [f for f in table.get("/api/health")["faults"]
                               if f["code"] == "broker_unreachable"], "broker_unreachable")
        assert "certificate" in faults[0]["message"].lower(), faults
        assert table.get("/api/health")["components"]["mqtt"]["connected"] == 0
    finally:
        table.stop()


def test_a_relay_on_the_path_reads_nothing_over_tls(shipped: Shipped) -> None:
    """Finding 5: a relay captured the MQTT passwords and the token inside commands. Over
    the shipped TLS listener it sees neither; on the plain (loopback-only) listener it
    would see both."""
    from tests.mqtt.proxy import Relay

    password = shipped.accounts["desk"]["password"]
    command = json.dumps({"command": "start", "token": TOKEN})
    for port, tls in ((shipped.tls_port, True), (shipped.port, False)):
        relay = Relay(port, mqtt=False).start()
        try:
            with Watcher(relay.port, user="desk", password=password,
                         ca=shipped.ca if tls else None) as desk:
                desk.publish(f"{ROOT}/7/commands", command)
            seen = bytes(relay.seen)
        finally:
            relay.stop()
        assert (TOKEN.encode() in seen, password.encode() in seen) == (not tls, not tls)


def test_the_shipped_broker_follows_the_hall_tls_policy(shipped: Shipped) -> None:
    """Issue 35, point 9, on the broker's TLS listener as shipped (shotclock.conf's ciphers,
    shotclock-tls.cnf's groups): each refusal beside a client differing only in that."""
    import ssl

    ca, port = Path(shipped.ca), shipped.tls_port
    v12, v13 = ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3
    with pytest.raises(REFUSED):
        handshake(port, ca, version=v12, ciphers=":".join(CBC_TLS12))
    assert handshake(port, ca, version=v12, ciphers="ECDHE-ECDSA-CHACHA20-POLY1305") == (
        "TLSv1.2", "ECDHE-ECDSA-CHACHA20-POLY1305")
    for curve in ("secp384r1", "secp521r1"):
        with pytest.raises(REFUSED):
            handshake(port, ca, version=v13, curve=curve)
    assert handshake(port, ca, version=v13, curve="prime256v1")[0] == "TLSv1.3"
    assert s_client(port, ca, "-tls1_3", "-groups", "X448") == ""
    assert s_client(port, ca, "-tls1_3", "-groups", "X25519") == "X25519"
    assert s_client(port, ca, "-tls1_2") == "X25519"


def test_the_broker_files_say_the_policy_the_service_uses() -> None:
    """shotclock.conf's ciphers and shotclock-tls.cnf's suites and groups are the service's
    own (clock_service.service.tls), so the hall has one policy."""
    from clock_service.service.tls import GROUPS, TLS12_CIPHERS

    conf = (DEPLOY / "shotclock.conf").read_text()
    assert f"\nciphers {TLS12_CIPHERS}\n" in conf
    cnf = dict(line.split(" = ", 1) for line in (DEPLOY / "shotclock-tls.cnf").read_text()
               .splitlines() if " = " in line and not line.startswith("#"))
    assert cnf["Groups"] == ":".join(GROUPS)
    assert cnf["CipherString"] == f"{TLS12_CIPHERS}:@SECLEVEL=2"
    assert cnf["MinProtocol"] == "TLSv1.2"
