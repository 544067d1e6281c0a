"""TLS for the hall: one policy for every TLS connection, and ``shotclock tls init`` /
``shotclock tls renew``, the hall's own certificate authority and a certificate per device.

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
  ``certfile``/``keyfile``), for 398 days; ``shotclock tls renew`` renews them from the
  same CA before they end.

Keys are ECDSA P-256 (fast on a Pi); private keys are written mode 600.

The policy (issue 35, point 9): Mozilla's "intermediate" configuration, its TLS 1.2 part
narrowed to ECDHE with AES-GCM or ChaCha20-Poly1305 (no CBC suite, no static RSA, no DHE)
and the key exchange to X25519 and P-256, for the service and the hall (``server_context``,
given to uvicorn) and for their connections out (``client_context``: the MQTT broker).
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import ipaddress
import logging
import os
import ssl
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

__all__ = ["Device", "Renewed", "init", "renew", "parse_device", "server_context",
           "client_context", "TLS12_CIPHERS", "GROUPS", "add_parser", "run"]

log = logging.getLogger(__name__)

CA_DAYS = 3650
# 398 days: the longest a browser accepts for a server certificate (CA/Browser Forum
# baseline requirements, and Apple's and Chrome's rule since 2020). Counted as the rules
# count it: from notBefore to notAfter inclusive, each a whole second.
DEVICE_DAYS = 398
# Backdated so that a device whose clock is a little behind (a Pi has no real-time clock
# and may boot before NTP answers) accepts a certificate made a moment ago.
BACKDATE = datetime.timedelta(minutes=5)

# -- the policy --------------------------------------------------------------------------

# Mozilla "intermediate" (ssl-config.mozilla.org, guidelines 5.7), TLS 1.2 suites with ECDHE
# key exchange only: its three DHE suites are left out (a DHE handshake costs a Pi far more
# and protects nothing ECDHE does not). Both ECDSA (our own certificates) and RSA (a
# certificate from elsewhere) are kept. TLS 1.3's own suites (OpenSSL's three, all AEAD)
# are left as they are.
TLS12_CIPHERS = ":".join((
    "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
))
# The key exchange groups, for TLS 1.2 and 1.3 alike (OpenSSL's default adds X448, P-384,
# P-521 and, in 1.3, finite-field groups).
GROUPS = ("X25519", "P-256")
_SSL_CTRL_SET_GROUPS_LIST = 92  # openssl/ssl.h, 1.1.1 to 3.x: SSL_CTX_set1_groups_list


def _loaded_libssl() -> str | None:
    """The libssl this process's ``ssl`` module uses (Linux: from /proc/self/maps)."""
    import _ssl  # noqa: F401  (loads libssl, if it is a shared library)

    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if "/libssl.so" in path:
                    return path
    except OSError:
        return None
    return None


def _openssl_set_groups(ctx: ssl.SSLContext, groups: str) -> bool:
    """SSL_CTX_set1_groups_list on the context's own SSL_CTX (Python before 3.15 has no
    ``set_groups``). CPython's SSLContext object is its object header followed by the
    ``SSL_CTX *`` (Modules/_ssl.c, unchanged since 3.2); the pointer is used only after
    SSL_CTX_get_options through it reads the same 64-bit options that ``ctx.options``
    reads. False when any of that does not hold (nothing is changed then)."""
    if sys.implementation.name != "cpython":
        return False
    path = _loaded_libssl()
    if path is None:
        return False
    try:
        lib = ctypes.CDLL(path)
        get_options = lib.SSL_CTX_get_options
        ctrl = lib.SSL_CTX_ctrl
    except (OSError, AttributeError):
        return False
    get_options.restype = ctypes.c_uint64
    get_options.argtypes = [ctypes.c_void_p]
    ctrl.restype = ctypes.c_long
    ctrl.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_long, ctypes.c_char_p]
    pointer = ctypes.c_void_p.from_address(id(ctx) + object.__basicsize__).value
    if not pointer or get_options(pointer) != int(ctx.options):
        return False
    return bool(ctrl(pointer, _SSL_CTRL_SET_GROUPS_LIST, 0, groups.encode()) == 1)


def _restrict_groups(ctx: ssl.SSLContext) -> str:
    """Only X25519 and P-256; how it was done (for the log and the tests)."""
    groups = ":".join(GROUPS)
    set_groups = getattr(ctx, "set_groups", None)  # Python 3.15
    if set_groups is not None:
        set_groups(groups)
        return "set_groups"
    if _openssl_set_groups(ctx, groups):
        return "SSL_CTX_set1_groups_list"
    # Still within the policy, without X25519: one curve is all Python's API can set.
    ctx.set_ecdh_curve("prime256v1")
    log.warning("TLS: this Python cannot limit the key exchange to X25519 and P-256; "
                "P-256 only")
    return "set_ecdh_curve"


def _apply_policy(ctx: ssl.SSLContext) -> ssl.SSLContext:
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers(TLS12_CIPHERS)
    # Compression (CRIME) and renegotiation (a client-driven CPU cost) off.
    ctx.options |= ssl.OP_NO_COMPRESSION | ssl.OP_NO_RENEGOTIATION
    _restrict_groups(ctx)
    return ctx


def server_context(certfile: str | os.PathLike[str], keyfile: str | os.PathLike[str]
                   ) -> ssl.SSLContext:
    """What ``serve`` and ``hall`` serve HTTPS and wss:// with."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certfile, keyfile)
    # No TLS 1.2 session tickets: their key lives as long as the process (months on a
    # Pi) and whoever gets it decrypts every recorded session (Mozilla: tickets off).
    ctx.options |= ssl.OP_NO_TICKET
    return _apply_policy(ctx)


def client_context(cafile: str | None = None) -> ssl.SSLContext:
    """Verifying (the hall CA, or the system's), with the same suites and groups."""
    return _apply_policy(ssl.create_default_context(cafile=cafile))


# -- certificates ------------------------------------------------------------------------


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


def _write(path: Path, data: bytes, *, private: bool) -> None:
    """Replace ``path`` whole (a reader sees the old file or the new one), keeping the old
    file's owner, group and mode (a broker key owned by mosquitto stays readable to it); a
    private key never more open than 600."""
    try:
        old = path.stat()
    except FileNotFoundError:
        old = None
    mode = 0o600 if private else 0o644
    if old is not None:
        mode = old.st_mode & (0o600 if private else 0o777)
    tmp = path.with_name(f".{path.name}.new")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            if old is not None and (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                os.fchown(f.fileno(), old.st_uid, old.st_gid)
            os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _device_cert(ca_cert: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, name: str,
                 san: x509.SubjectAlternativeName, key: ec.EllipticCurvePrivateKey,
                 now: datetime.datetime) -> x509.Certificate:
    """A server (and client) certificate for ``san``, DEVICE_DAYS long, never past the CA."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    begins = now - BACKDATE
    ends = min(begins + datetime.timedelta(days=DEVICE_DAYS, seconds=-1),
               ca_cert.not_valid_after_utc)
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_cert.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(begins).not_valid_after(ends)
        .add_extension(san, critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=False, crl_sign=False,
            content_commitment=False, key_encipherment=False, data_encipherment=False,
            key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                              ExtendedKeyUsageOID.CLIENT_AUTH]),
                       critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
            ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256()))


def _load_ca(out: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    ca_crt, ca_key_path = out / "ca.crt", out / "ca.key"
    if not ca_key_path.exists():
        raise ValueError(f"{ca_key_path} is not here: renew where the hall CA's key is kept "
                         "(the director's machine), then copy the device files over")
    ca_cert = x509.load_pem_x509_certificate(ca_crt.read_bytes())
    ca_key = serialization.load_pem_private_key(ca_key_path.read_bytes(), None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{ca_key_path} is not an EC key")
    if ca_key.public_key() != ca_cert.public_key():
        raise ValueError(f"{ca_key_path} is not the key of {ca_crt}")
    return ca_cert, ca_key


def _utcnow(now: datetime.datetime | None) -> datetime.datetime:
    return now or datetime.datetime.now(datetime.UTC)


def init(out: Path, devices: list[Device], *, hall: str = "shot clock hall",
         now: datetime.datetime | None = None) -> list[Path]:
    """Make (or reuse) the CA in ``out`` and a certificate for each device; the files
    written, in order."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    out.mkdir(parents=True, exist_ok=True)
    now = _utcnow(now)
    written: list[Path] = []
    ca_crt, ca_key_path = out / "ca.crt", out / "ca.key"
    if ca_crt.exists() and ca_key_path.exists():
        ca_cert, ca_key = _load_ca(out)
    else:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{hall} CA"),
                             x509.NameAttribute(NameOID.ORGANIZATION_NAME, "shotclock")])
        ca_cert = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True,
                content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
        _write(ca_key_path, _key_pem(ca_key), private=True)
        _write(ca_crt, ca_cert.public_bytes(serialization.Encoding.PEM), private=False)
        written += [ca_crt, ca_key_path]
    for device in devices:
        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = []
        for host in device.hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        cert = _device_cert(ca_cert, ca_key, device.name, x509.SubjectAlternativeName(names),
                            key, now)
        crt_path, key_path = out / f"{device.name}.crt", out / f"{device.name}.key"
        _write(key_path, _key_pem(key), private=True)
        _write(crt_path, cert.public_bytes(serialization.Encoding.PEM), private=False)
        written += [crt_path, key_path]
    return written


@dataclass(frozen=True)
class Renewed:
    name: str
    old_end: datetime.datetime
    new_end: datetime.datetime | None  # None: not renewed (still valid past --within)
    new_key: bool
    ca_ends: bool = False  # cut short: the hall CA itself ends then


def renew(out: Path, names: list[str] | None = None, *, keep_keys: bool = False,
          within_days: int | None = None, now: datetime.datetime | None = None
          ) -> list[Renewed]:
    """Renew the device certificates in ``out`` (``names``, or every one the hall CA there
    issued) from that CA, for the same names and addresses: a new key each (or the same
    key with ``keep_keys``); with ``within_days`` only those ending within that many
    days."""
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    now = _utcnow(now)
    ca_cert, ca_key = _load_ca(out)
    if names:
        paths = []
        for name in names:
            path = out / f"{parse_device(name).name}.crt"
            if path.name == "ca.crt" or not path.exists():
                raise ValueError(f"no device certificate {path} (tls init makes one)")
            paths.append(path)
    else:
        paths = sorted(p for p in out.glob("*.crt") if p.name != "ca.crt")
    done: list[Renewed] = []
    for crt_path in paths:
        name = crt_path.stem
        old = x509.load_pem_x509_certificate(crt_path.read_bytes())
        try:
            old.verify_directly_issued_by(ca_cert)
        except (ValueError, TypeError, InvalidSignature) as exc:
            if names:
                raise ValueError(f"{crt_path} was not issued by {out / 'ca.crt'}") from exc
            continue  # another CA's certificate kept in the same folder: not ours to renew
        old_end = old.not_valid_after_utc
        if within_days is not None and old_end - now > datetime.timedelta(days=within_days):
            done.append(Renewed(name, old_end, None, False))
            continue
        key_path = out / f"{name}.key"
        if keep_keys:
            loaded = serialization.load_pem_private_key(key_path.read_bytes(), None)
            if not isinstance(loaded, ec.EllipticCurvePrivateKey) or (
                    loaded.public_key() != old.public_key()):
                raise ValueError(f"{key_path} is not the key of {crt_path}")
            key = loaded
        else:
            key = ec.generate_private_key(ec.SECP256R1())
        san = old.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        cert = _device_cert(ca_cert, ca_key, name, san, key, now)
        if not keep_keys:
            _write(key_path, _key_pem(key), private=True)
        _write(crt_path, cert.public_bytes(serialization.Encoding.PEM), private=False)
        done.append(Renewed(name, old_end, cert.not_valid_after_utc, not keep_keys,
                            cert.not_valid_after_utc == ca_cert.not_valid_after_utc))
    return done


# -- the commands ------------------------------------------------------------------------

RENEW_HELP = """\
Renew device certificates from the hall CA in --out (its ca.key must be there), for the
same names and addresses, each for 398 days again (never past the CA's own end). Every
certificate the CA issued in --out, or only the --device ones.

Keys: a new key pair for each renewed certificate by default, so that a key copied off a
device stops being of use when its old certificate ends, and a renewal is also the routine
way to replace a key that may have leaked. --keep-keys keeps each device's key (when the
key cannot be replaced, e.g. another system holds it). Clients trust the hall CA, not a
key: nothing needs to change on the consoles, browsers or MQTT clients.

Files are replaced whole, keeping their owner, group and mode (a broker's key owned by
mosquitto stays readable to it). The services read their certificate when they start:
restart them afterwards (sudo systemctl restart shotclock; mosquitto for broker.crt).

For a timer: --within 30 renews only the certificates ending in the next 30 days.
"""


def add_parser(sub: Any) -> None:
    tls = sub.add_parser("tls", help="TLS for the hall: a CA and device certificates")
    tls_sub = tls.add_subparsers(dest="tls_cmd", required=True)
    init_parser = tls_sub.add_parser(
        "init", help="make (or reuse) the hall CA in --out and a certificate per --device")
    init_parser.add_argument("--out", required=True, help="directory for ca.crt/ca.key and "
                             "<device>.crt/<device>.key")
    init_parser.add_argument("--device", action="append", default=[],
                             help="NAME or NAME=host,10.0.0.7,... (repeatable): a server "
                             "certificate for those names and addresses, for 398 days")
    init_parser.add_argument("--hall", default="shot clock hall", help="the CA's name")
    renew_parser = tls_sub.add_parser(
        "renew", help="renew device certificates from the existing hall CA",
        description=RENEW_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    renew_parser.add_argument("--out", required=True,
                              help="the directory of tls init: ca.crt, ca.key, <device>.crt")
    renew_parser.add_argument("--device", action="append", default=[],
                              help="renew only this device (repeatable); default: all")
    renew_parser.add_argument("--keep-keys", action="store_true",
                              help="keep each device's key instead of a new one")
    renew_parser.add_argument("--within", type=int, default=None, metavar="DAYS",
                              help="only the certificates ending within DAYS days")


def run(args: argparse.Namespace) -> int:
    prog = f"shotclock tls {args.tls_cmd}"
    out = Path(args.out)
    try:
        if args.tls_cmd == "renew":
            if args.within is not None and not 0 <= args.within <= 3650:
                raise ValueError("--within: 0 to 3650 days")
            renewed = renew(out, args.device, keep_keys=args.keep_keys,
                            within_days=args.within)
        else:
            written = init(out, [parse_device(spec) for spec in args.device], hall=args.hall)
    except (ValueError, OSError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 78
    if args.tls_cmd == "renew":
        for r in renewed:
            if r.new_end is None:
                print(f"{r.name}: kept, valid until {r.old_end:%Y-%m-%d}")
            else:
                print(f"{r.name}: renewed, valid until {r.new_end:%Y-%m-%d} (was "
                      f"{r.old_end:%Y-%m-%d}), {'new' if r.new_key else 'same'} key")
        ca_end = next((r.new_end for r in renewed if r.ca_ends), None)
        if ca_end is not None:
            print(f"{prog}: the hall CA ends on {ca_end:%Y-%m-%d} and no "
                  "certificate it signs lasts longer: make a new hall CA (tls init --out "
                  "<a new folder>) and install its ca.crt everywhere before then",
                  file=sys.stderr)
        if not renewed:
            print(f"{prog}: no device certificate of this CA in {out}", file=sys.stderr)
            return 78
        if any(r.new_end is not None for r in renewed):
            print(f"{prog}: restart what serves them (sudo systemctl restart shotclock; "
                  "mosquitto for the broker's); copy each device's files to it first",
                  file=sys.stderr)
        return 0
    for path in written:
        print(path)
    print(f"{prog}: install {out / 'ca.crt'} on the consoles and browsers of the hall (and "
          "SHOTCLOCK_MQTT_CA); keep ca.key off the venue", file=sys.stderr)
    return 0
