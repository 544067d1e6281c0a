"""Clients that offer only what a test names, to see what a served TLS port accepts from
outside: Python's ssl (suites, one curve) and OpenSSL's own s_client (any group)."""

from __future__ import annotations

import socket
import ssl
import subprocess
from pathlib import Path

CBC_TLS12 = ("ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA384", "ECDHE-RSA-AES128-SHA256",
             "ECDHE-RSA-AES256-SHA")
REFUSED = (ssl.SSLError, ConnectionResetError, BrokenPipeError)


def handshake(port: int, ca: Path, *, version: ssl.TLSVersion | None = None,
              ciphers: str | None = None, curve: str | None = None) -> tuple[str, str]:
    """A client offering only these: (protocol, suite) it agreed on with the served port;
    raises one of REFUSED when the port refuses it."""
    ctx = ssl.create_default_context(cafile=str(ca))
    if version is not None:
        ctx.minimum_version = ctx.maximum_version = version
    if ciphers is not None:
        ctx.set_ciphers(ciphers)
    if curve is not None:
        ctx.set_ecdh_curve(curve)  # the client's supported groups: this one only
    with socket.create_connection(("127.0.0.1", port), timeout=20) as raw, \
            ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        suite, protocol, _ = tls.cipher()  # type: ignore[misc]
        return protocol, suite


def s_client(port: int, ca: Path, *args: str) -> str:
    """OpenSSL's own client: the key exchange group the served port chose ('' if none)."""
    done = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-CAfile",
                           str(ca), *args], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("Server Temp Key:"):
            return line.split(":", 1)[1].split(",")[0].strip()
    assert "Cipher is (NONE)" in done.stdout or done.returncode, done.stdout + done.stderr
    return ""
