"""Issue 20, finding 5 (HTTP side): ``shotclock tls init`` makes a hall CA and a device
certificate; ``serve`` takes them and speaks HTTPS and wss:// with real handshakes (a
client with another CA is refused); plain HTTP on a LAN address warns at every start.
The broker's TLS listener: tests/mqtt/test_accounts.py."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from websockets.sync.client import connect

from tests.cli import shotclock
from tests.server import ROOT, ServerProcess, free_port

pytestmark = pytest.mark.e2e

TOKEN = "tls-director-token-0123456789"


def tls_init(out: Path, *devices: str) -> None:
    args = [a for d in devices for a in ("--device", d)]
    done = shotclock("tls", "init", "--out", str(out), *args)  # by this process
    assert done.returncode == 0, done.stderr


def get(url: str, ca: Path) -> tuple[int, bytes]:
    context = ssl.create_default_context(cafile=str(ca))
    with urllib.request.urlopen(url, context=context, timeout=10) as response:
        return response.status, response.read()


def test_serve_speaks_https_with_the_hall_ca_and_refuses_other_cas(tmp_path: Path) -> None:
    tls = tmp_path / "tls"
    tls_init(tls, "table-7=127.0.0.1,localhost")
    assert (tls / "ca.key").stat().st_mode & 0o077 == 0
    assert (tls / "table-7.key").stat().st_mode & 0o077 == 0
    # The request timeout (5 s from the TLS handshake's end to the request's last header;
    # its own tests are in tests/faults) raised: this test runs at a lower priority beside
    # the timing tests, and a client held up between its handshake and its request found its
    # connection closed once in a clean-clone run.
    server = ServerProcess(tmp_path / "tls.db", env={"SHOTCLOCK_REFEREE_TOKEN": TOKEN,
                                                     "SHOTCLOCK_REQUEST_TIMEOUT_S": "60"},
                           args=["--tls-cert", str(tls / "table-7.crt"),
                                 "--tls-key", str(tls / "table-7.key")])
    https = f"https://127.0.0.1:{server.port}"
    # ServerProcess waits on plain HTTP: against a TLS port that never answers, so start
    # it by hand and wait on HTTPS.
    server.proc = subprocess.Popen(
        [sys.executable, "-m", "clock_service", "serve", "--host", "127.0.0.1", "--port",
         str(server.port), "--db", str(server.db), "--tls-cert", str(tls / "table-7.crt"),
         "--tls-key", str(tls / "table-7.key")], cwd=ROOT, env=server.env,
        stdout=subprocess.DEVNULL, stderr=open(server.log, "wb"))  # noqa: SIM115
    began = time.monotonic()
    steps: list[str] = []  # when each step ended, for the message if one fails

    def step(name: str) -> None:
        steps.append(f"{name} at {time.monotonic() - began:.2f} s")

    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status, body = get(f"{https}/api/health", tls / "ca.crt")
                break
            except (OSError, urllib.error.URLError):
                assert time.monotonic() < deadline, server.log.read_text()[-2000:]
                time.sleep(0.1)
        assert status == 200 and json.loads(body)["ok"] is True
        step("health")
        status, page = get(f"{https}/referee?table=1", tls / "ca.crt")
        assert status == 200 and b"<html" in page.lower()
        step("page")
        # The pages open their socket as wss:// on https (connection.js): it works.
        context = ssl.create_default_context(cafile=str(tls / "ca.crt"))
        try:
            with connect(f"wss://127.0.0.1:{server.port}/ws/tables/1", ssl=context,
                         open_timeout=10) as ws:
                step("wss open")
                assert json.loads(ws.recv(timeout=10))["type"] == "snapshot"
        except TimeoutError as exc:
            # Clean-clone run 54: no answer to the upgrade in 10 s, with the machine 13-27%
            # idle (cause not found). Whether the service still answers HTTPS tells a hung
            # service from a socket-only fault.
            step(f"wss timed out ({exc})")
            try:
                get(f"{https}/api/health", tls / "ca.crt")
                step("health again")
            except OSError as again:
                step(f"health again failed: {again!r}")
            raise AssertionError("; ".join(steps) + "\n" + server.log.read_text()[-2000:]) from exc
        # Another hall's CA: the handshake is refused.
        other = tmp_path / "other"
        tls_init(other)
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            get(f"{https}/api/health", other / "ca.crt")
        # Plain HTTP to the TLS port gets nothing useful.
        with pytest.raises((urllib.error.URLError, OSError, ConnectionError)):
            urllib.request.urlopen(f"http://127.0.0.1:{server.port}/api/health", timeout=5)
        assert "WARNING: plain HTTP" not in server.log.read_text()
    finally:
        server.stop()


def test_plain_http_on_a_lan_address_warns_at_every_start(tmp_path: Path) -> None:
    for _ in range(2):
        server = ServerProcess(tmp_path / "lan.db", args=["--host", "0.0.0.0"],
                               env={"SHOTCLOCK_REFEREE_TOKEN": TOKEN}).start()
        server.stop()
    log = server.log.read_text()
    assert log.count("WARNING: plain HTTP on 0.0.0.0") == 2, log[-2000:]
    assert TOKEN not in log


def test_a_certificate_without_its_key_is_refused(tmp_path: Path) -> None:
    tls = tmp_path / "tls"
    tls_init(tls, "a=127.0.0.1", "b=127.0.0.1")
    env = {**os.environ, "SHOTCLOCK_DISPLAY": "none"}
    for args in (["--tls-cert", str(tls / "a.crt")],
                 ["--tls-cert", str(tls / "a.crt"), "--tls-key", str(tls / "b.key")]):
        done = shotclock("serve", "--port", str(free_port()), "--db", str(tmp_path / "x.db"),
                         *args, env=env)  # a refusal at start: by this process
        assert done.returncode == 78, done.stderr
