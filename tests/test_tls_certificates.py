"""Issue 35, point 9, in-process: device certificates of ``shotclock tls init`` last 398
days; ``shotclock tls renew`` renews them from the hall CA (a new key, or the same with
--keep-keys), keeping names, owners and modes; the TLS policy of every context the service
makes (server and client). The served port and the broker: tests/test_tls.py,
tests/mqtt/test_accounts.py."""

from __future__ import annotations

import contextlib
import datetime
import os
import socket
import ssl
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from clock_service.edges.cli import main as cli
from clock_service.service import tls
from clock_service.service.tls import Device, init, renew

DAY = datetime.timedelta(days=1)
NOW = datetime.datetime(2027, 3, 1, 12, 0, tzinfo=datetime.UTC)


def cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def public(path: Path) -> bytes:
    key = serialization.load_pem_private_key(path.read_bytes(), None)
    return key.public_key().public_bytes(serialization.Encoding.DER,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


def validity(c: x509.Certificate) -> datetime.timedelta:
    """As the CA/Browser Forum counts it: both ends inclusive, in whole seconds."""
    return c.not_valid_after_utc - c.not_valid_before_utc + datetime.timedelta(seconds=1)


def names(c: x509.Certificate) -> list[str]:
    san = c.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return [str(n.value) for n in san]


def make_hall(out: Path, now: datetime.datetime | None) -> Path:
    init(out, [Device("table-7", ("table-7", "table-7.local", "10.0.0.17")),
               Device("broker", ("broker", "hall-server"))], now=now)
    return out


@pytest.fixture
def hall(tmp_path: Path) -> Path:
    """Made at NOW (a fixed time: renewals are made at NOW plus some days)."""
    return make_hall(tmp_path / "tls", NOW)


@pytest.fixture
def live(tmp_path: Path) -> Path:
    """Made now: its certificates are valid for real handshakes."""
    return make_hall(tmp_path / "live", None)


def test_device_certificates_last_398_days_and_sign_only(hall: Path) -> None:
    for name in ("table-7", "broker"):
        c = cert(hall / f"{name}.crt")
        assert validity(c) == 398 * DAY
        c.verify_directly_issued_by(cert(hall / "ca.crt"))
        usage = c.extensions.get_extension_for_class(x509.KeyUsage).value
        assert usage.digital_signature and not usage.key_cert_sign
    assert names(cert(hall / "table-7.crt")) == ["table-7", "table-7.local", "10.0.0.17"]
    assert validity(cert(hall / "ca.crt")) > 3000 * DAY


def test_renew_gives_every_device_398_days_more_with_a_new_key(hall: Path) -> None:
    before = {n: (cert(hall / f"{n}.crt"), public(hall / f"{n}.key"))
              for n in ("table-7", "broker")}
    later = NOW + 390 * DAY
    done = renew(hall, now=later)
    assert sorted(r.name for r in done) == ["broker", "table-7"]
    for name, (old, old_public) in before.items():
        new = cert(hall / f"{name}.crt")
        assert validity(new) == 398 * DAY
        assert new.not_valid_before_utc == later - tls.BACKDATE
        assert names(new) == names(old) and new.subject == old.subject
        assert new.serial_number != old.serial_number
        new.verify_directly_issued_by(cert(hall / "ca.crt"))
        assert public(hall / f"{name}.key") != old_public
        assert new.public_key().public_bytes(
            serialization.Encoding.DER,
            serialization.PublicFormat.SubjectPublicKeyInfo) == public(hall / f"{name}.key")
    assert {r.new_key for r in done} == {True}


def test_renew_keep_keys_only_named_and_only_when_due(hall: Path) -> None:
    key_before, broker_before = public(hall / "table-7.key"), cert(hall / "broker.crt")
    (done,) = renew(hall, ["table-7"], keep_keys=True, now=NOW + 10 * DAY)
    assert public(hall / "table-7.key") == key_before and not done.new_key
    assert cert(hall / "broker.crt") == broker_before  # not named: untouched
    # --within 30: a certificate with 388 days left is kept as it is
    (kept,) = renew(hall, ["broker"], within_days=30, now=NOW + 10 * DAY)
    assert kept.new_end is None and cert(hall / "broker.crt") == broker_before
    (due,) = renew(hall, ["broker"], within_days=30, now=NOW + 380 * DAY)
    assert due.new_end is not None and cert(hall / "broker.crt") != broker_before


def test_renew_keeps_owner_and_mode_and_never_opens_a_key(hall: Path) -> None:
    (hall / "broker.crt").chmod(0o640)
    (hall / "broker.key").chmod(0o640)  # too open: the renewed key is 600 at most
    owner = None
    if os.geteuid() == 0:  # the broker's files belong to mosquitto on a hall server
        owner = (4242, 4343)
        for suffix in ("crt", "key"):
            os.chown(hall / f"broker.{suffix}", *owner)
    renew(hall, ["broker"], now=NOW + DAY)
    assert (hall / "broker.crt").stat().st_mode & 0o777 == 0o640
    assert (hall / "broker.key").stat().st_mode & 0o777 == 0o600
    if owner is not None:
        for suffix in ("crt", "key"):
            st = (hall / f"broker.{suffix}").stat()
            assert (st.st_uid, st.st_gid) == owner
    assert not list(hall.glob(".*.new"))


def test_renew_is_never_past_the_ca_and_only_renews_its_own(hall: Path,
                                                             tmp_path: Path) -> None:
    ca_end = cert(hall / "ca.crt").not_valid_after_utc
    (capped,) = renew(hall, ["table-7"], now=ca_end - 100 * DAY)
    assert cert(hall / "table-7.crt").not_valid_after_utc == ca_end and capped.ca_ends
    other = tmp_path / "other"
    init(other, [Device("stranger", ("stranger",))], now=NOW)
    for suffix in ("crt", "key"):
        (hall / f"stranger.{suffix}").write_bytes((other / f"stranger.{suffix}").read_bytes())
    stranger = cert(hall / "stranger.crt")
    assert "stranger" not in [r.name for r in renew(hall, now=NOW + DAY)]
    assert cert(hall / "stranger.crt") == stranger
    with pytest.raises(ValueError, match="not issued by"):
        renew(hall, ["stranger"], now=NOW + DAY)
    with pytest.raises(ValueError, match="no device certificate"):
        renew(hall, ["nobody"])
    with pytest.raises(ValueError, match="no device certificate"):
        renew(hall, ["ca"])


def test_renew_without_the_ca_key_says_where_to_run_it(hall: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    (hall / "ca.key").unlink()
    assert cli.main(["tls", "renew", "--out", str(hall)]) == 78
    assert "renew where the hall CA's key is kept" in capsys.readouterr().err


def test_renew_help_says_what_happens_to_the_keys(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["tls", "renew", "--help"])
    text = capsys.readouterr().out
    for words in ("--keep-keys", "new key pair", "398 days", "--within", "restart"):
        assert words in text, words


# -- the policy --------------------------------------------------------------------------


def test_every_tls12_suite_is_ecdhe_with_an_aead_and_tls_1_1_is_off(live: Path) -> None:
    for ctx in (tls.server_context(live / "broker.crt", live / "broker.key"),
                tls.client_context(str(live / "ca.crt"))):
        assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2
        tls12 = [c for c in ctx.get_ciphers() if c["protocol"] == "TLSv1.2"]
        assert sorted(c["name"] for c in tls12) == sorted(tls.TLS12_CIPHERS.split(":"))
        for c in tls12:
            assert c["kea"] == "kx-ecdhe" and c["aead"], c


@pytest.mark.skipif(sys.version_info >= (3, 15), reason="Python's own set_groups is used")
def test_the_groups_are_set_through_openssl_on_this_python() -> None:
    """Not the fallback (P-256 only, logged): X25519 and P-256 through the context's own
    SSL_CTX. What a client sees: tests/test_tls.py."""
    assert tls._restrict_groups(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)) == (
        "SSL_CTX_set1_groups_list")


@contextlib.contextmanager
def weak_server(live: Path, *, ciphers: str | None = None, curve: str | None = None
                ) -> Iterator[int]:
    """A TLS server that offers only these (a broker or a hall set up badly): its port."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(live / "broker.crt", live / "broker.key")
    if ciphers is not None:
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_ciphers(ciphers)
    if curve is not None:
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.set_ecdh_curve(curve)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(20)

    def serve() -> None:
        with contextlib.suppress(OSError), listener.accept()[0] as conn, \
                ctx.wrap_socket(conn, server_side=True):
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        thread.join(timeout=20)
        listener.close()


@pytest.mark.parametrize(("ciphers", "curve", "agrees"), [
    ("ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA384", None, False),  # CBC only
    (None, "secp384r1", False),
    ("ECDHE-ECDSA-AES128-GCM-SHA256", None, True),
    (None, "prime256v1", True),
])
def test_the_services_clients_hold_the_broker_to_the_same_rules(
        live: Path, ciphers: str | None, curve: str | None, agrees: bool) -> None:
    """client_context (the MQTT connection to the broker, a bridge's wss://) against a
    server offering only CBC suites or only P-384, and against one that is fine."""
    ctx = tls.client_context(str(live / "ca.crt"))
    with weak_server(live, ciphers=ciphers, curve=curve) as port, \
            socket.create_connection(("127.0.0.1", port), timeout=20) as raw:
        if agrees:
            with ctx.wrap_socket(raw, server_hostname="broker") as conn:
                assert conn.version() in ("TLSv1.2", "TLSv1.3")
        else:
            with pytest.raises(ssl.SSLError):
                ctx.wrap_socket(raw, server_hostname="broker")
