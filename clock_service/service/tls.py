"""``shotclock tls init``: a hall's own certificate authority and a certificate per device.

On the venue's Wi-Fi everything a referee sends (the bearer token, the MQTT passwords, the
token inside MQTT commands) can be read by anyone who knows the passphrase (WPA2-PSK), or
who runs a relay (issue 20, finding 5). TLS keeps it private; a hall has no public name,
so it gets its own CA:

    shotclock tls init --out /etc/shotclock/tls --device hall-server=hall-server,10.0.0.2 \\
        --device table-7=table-7.local,10.0.0.17

- ``ca.crt`` / ``ca.key``: the hall CA (made once; later runs reuse it, so devices added
  later chain to the same CA). The director installs ``ca.crt`` on the consoles' phones and
  tablets, the hall's browsers and OBS machines (it pins nothing else), and gives it to the
  MQTT clients (``SHOTCLOCK_MQTT_CA``). ``ca.key`` stays with the director, off the venue.
- ``<device>.crt`` / ``<device>.key``: a server certificate for each name, valid for the
  host names and addresses listed (``shotclock serve --tls-cert --tls-key``, the broker's
  ``certfile``/``keyfile``).

Keys are ECDSA P-256 (fast on a Pi); private keys are written mode 600.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Device", "init", "parse_device", "add_parser", "run"]

CA_DAYS = 3650
DEVICE_DAYS = 825


@dataclass(frozen=True)
class Device:
    name: str
    hosts: tuple[str, ...]  # DNS names and IP addresses the certificate is valid for


def parse_device(spec: str) -> Device:
    """``NAME`` or ``NAME=host,10.0.0.7,...`` (the name itself is always one of the hosts)."""
    name, _, rest = spec.partition("=")
    name = name.strip()
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"a device needs a name (a file name), got {spec!r}")
    hosts = [name, *(h.strip() for h in rest.split(",") if h.strip())]
    return Device(name, tuple(dict.fromkeys(hosts)))


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    path.chmod(0o600)


def init(out: Path, devices: list[Device], *, hall: str = "shot clock hall",
         now: datetime.datetime | None = None) -> list[Path]:
    """Make (or reuse) the CA in ``out`` and a certificate for each device; the files
    written, in order."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    out.mkdir(parents=True, exist_ok=True)
    now = now or datetime.datetime.now(datetime.UTC)
    written: list[Path] = []
    ca_crt, ca_key_path = out / "ca.crt", out / "ca.key"
    if ca_crt.exists() and ca_key_path.exists():
        ca_cert = x509.load_pem_x509_certificate(ca_crt.read_bytes())
        loaded = serialization.load_pem_private_key(ca_key_path.read_bytes(), None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{ca_key_path} is not an EC key")
        ca_key = loaded
    else:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{hall} CA"),
                             x509.NameAttribute(NameOID.ORGANIZATION_NAME, "shotclock")])
        ca_cert = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True,
                content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
        _write_private(ca_key_path, ca_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
        ca_crt.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
        written += [ca_crt, ca_key_path]
    for device in devices:
        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = []
        for host in device.hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, device.name)]))
            .issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=DEVICE_DAYS))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
        crt_path, key_path = out / f"{device.name}.crt", out / f"{device.name}.key"
        _write_private(key_path, key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
        crt_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        written += [crt_path, key_path]
    return written


def add_parser(sub: Any) -> None:
    tls = sub.add_parser("tls", help="TLS for the hall: a CA and device certificates")
    tls_sub = tls.add_subparsers(dest="tls_cmd", required=True)
    init_parser = tls_sub.add_parser(
        "init", help="make (or reuse) the hall CA in --out and a certificate per --device")
    init_parser.add_argument("--out", required=True, help="directory for ca.crt/ca.key and "
                             "<device>.crt/<device>.key")
    init_parser.add_argument("--device", action="append", default=[],
                             help="NAME or NAME=host,10.0.0.7,... (repeatable): a server "
                             "certificate for those names and addresses")
    init_parser.add_argument("--hall", default="shot clock hall", help="the CA's name")


def run(args: argparse.Namespace) -> int:
    try:
        devices = [parse_device(spec) for spec in args.device]
        written = init(Path(args.out), devices, hall=args.hall)
    except (ValueError, OSError) as exc:
        print(f"shotclock tls init: {exc}", file=sys.stderr)
        return 78
    for path in written:
        print(path)
    print(f"shotclock tls init: install {Path(args.out) / 'ca.crt'} on the consoles and "
          "browsers of the hall (and SHOTCLOCK_MQTT_CA); keep ca.key off the venue",
          file=sys.stderr)
    return 0
