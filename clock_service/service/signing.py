"""Signed match records (issue 20, finding 8): the protocol's SHA-256 alone is no signature.

A store edited by hand (players renamed) gives a protocol whose digest matches its own log.
So each table service has an Ed25519 key, made at its first start (``<db>.key`` beside the
store, mode 600; ``SHOTCLOCK_SIGNING_KEY`` names another file), and when a match ends
(``match.ended`` durable) it signs that match's record: the table, the seq range and the
digest of its events (the same projection the protocol prints, storage/records.py). The
signature goes into the table's log as a ``match.signed`` event, so it travels with the log
to the hall over MQTT and survives every copy.

Verification (``verify_match``, used by the protocol, the record JSON and the hall):
the signature must be valid for the key it names, the digest recomputed from *this* store
over the signed range must equal the signed one, and nothing but signatures may follow
the signed range in the match. The protocol then says "signed by table 7's key,
fingerprint ab12 cd34 ..."; anything else shows as unverified, with why. A store edited
after the signature fails the digest; a re-signed one needs the key file; a key swapped
shows a different fingerprint (compare it with the one the director noted at install, or
with the hall's, which remembers each table's first key).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from clock_service.core.events import MATCH_SIGNED, MatchSignedData

__all__ = ["Signer", "MatchSigner", "fingerprint", "signed_message", "verify_signature",
           "verify_match", "check_signed", "key_path_for", "SIGNED_EVENT"]

log = logging.getLogger(__name__)

SIGNED_EVENT = MATCH_SIGNED.name
ALGORITHM: Final = "ed25519"


def key_path_for(db: str) -> Path:
    """Where a store's signing key lives by default: beside it, ``<db>.key``."""
    return Path(f"{db}.key")


def fingerprint(public_raw: bytes) -> str:
    """SHA-256 of the raw public key, the first 16 bytes in groups of four hex digits."""
    digest = hashlib.sha256(public_raw).hexdigest()[:32]
    return " ".join(digest[i:i + 4] for i in range(0, 32, 4))


def signed_message(table: str, first: int, last: int, digest: str) -> bytes:
    """The bytes a signature covers: which table, which events, their digest."""
    return json.dumps({"v": 1, "table": table, "first": first, "last": last,
                       "digest": digest}, sort_keys=True, separators=(",", ":")).encode()


def verify_signature(public_b64: str, message: bytes, signature_b64: str) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        key = Ed25519PublicKey.from_public_bytes(base64.b64decode(public_b64, validate=True))
        key.verify(base64.b64decode(signature_b64, validate=True), message)
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True


class Signer:
    """This service's key (made on first use, kept in ``path`` mode 600)."""

    def __init__(self, path: Path) -> None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        self.path = path
        if path.exists():
            loaded = serialization.load_pem_private_key(path.read_bytes(), None)
            if not isinstance(loaded, Ed25519PrivateKey):
                raise ValueError(f"{path} is not an Ed25519 key")
            self._key = loaded
        else:
            self._key = Ed25519PrivateKey.generate()
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(self._key.private_bytes(serialization.Encoding.PEM,
                                                serialization.PrivateFormat.PKCS8,
                                                serialization.NoEncryption()))
        raw = self._key.public_key().public_bytes(serialization.Encoding.Raw,
                                                  serialization.PublicFormat.Raw)
        self.public_b64 = base64.b64encode(raw).decode()
        self.fingerprint = fingerprint(raw)

    def sign(self, table: str, first: int, last: int, digest: str) -> MatchSignedData:
        """The ``match.signed`` event's data."""
        signature = self._key.sign(signed_message(table, first, last, digest))
        return {"first": first, "last": last, "digest": digest, "algorithm": ALGORITHM,
                "key": self.public_b64, "fingerprint": self.fingerprint,
                "signature": base64.b64encode(signature).decode()}


def digest_of(conn: sqlite3.Connection, table: str, first: int, last: int) -> str:
    from clock_service.service.storage.records import load_events

    return load_events(conn, table, first, last)[1]


@dataclass(frozen=True)
class Verdict:
    status: str  # verified | unverified | unsigned
    fingerprint: str | None = None
    first: int | None = None
    last: int | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "fingerprint": self.fingerprint, "first": self.first,
                "last": self.last, "reason": self.reason}


def check_signed(conn: sqlite3.Connection, table: str, data: dict[str, Any]) -> str | None:
    """Why a ``match.signed`` event's data does not hold against the store behind ``conn``
    (None: it holds). The hall checks each one it mirrors."""
    try:
        first, last = int(data["first"]), int(data["last"])
        digest, key, signature = str(data["digest"]), str(data["key"]), str(data["signature"])
    except (KeyError, TypeError, ValueError):
        return "the signature event is malformed"
    if not verify_signature(key, signed_message(table, first, last, digest), signature):
        return "the signature does not match the signed digest"
    if digest_of(conn, table, first, last) != digest:
        return f"events {first}..{last} here differ from the ones the table signed"
    return None


def verify_match(conn: sqlite3.Connection, table: str, events: list[dict[str, Any]]
                 ) -> Verdict:
    """The verdict on a match's record from ``events`` (what load_events gave for the
    match's range: type, seq, data ...) and the store behind ``conn``."""
    signed = [e for e in events if e.get("type") == SIGNED_EVENT]
    if not signed:
        return Verdict("unsigned", reason="no signature in the log (a match still being "
                       "played, or recorded before signing existed)")
    data = signed[-1].get("data") or {}
    fp = data.get("fingerprint") if isinstance(data.get("fingerprint"), str) else None
    try:
        first, last = int(data["first"]), int(data["last"])
        digest, key, signature = str(data["digest"]), str(data["key"]), str(data["signature"])
    except (KeyError, TypeError, ValueError):
        return Verdict("unverified", fp, reason="the signature event is malformed")
    try:
        actual_fp = fingerprint(base64.b64decode(key, validate=True))
    except ValueError:
        return Verdict("unverified", fp, first, last, reason="the key is not base64")
    if actual_fp != fp:
        return Verdict("unverified", actual_fp, first, last,
                       reason="the fingerprint shown is not the key's")
    if not verify_signature(key, signed_message(table, first, last, digest), signature):
        return Verdict("unverified", fp, first, last,
                       reason="the signature does not match the signed digest")
    if digest_of(conn, table, first, last) != digest:
        return Verdict("unverified", fp, first, last,
                       reason=f"events {first}..{last} in this store differ from the ones "
                       "signed (edited after the match)")
    later = [e for e in events if e.get("seq", 0) > last and e.get("type") != SIGNED_EVENT]
    if later:
        return Verdict("unverified", fp, first, last,
                       reason=f"events after the signed range ({later[0]['seq']}...) are "
                       "not signed")
    return Verdict("verified", fp, first, last)


class MatchSigner:
    """Signs each match when its ``match.ended`` is durable (a runtime publisher: called on
    the loop after each commit, it only schedules). The digest is read off the loop (a
    reader connection in a thread), the signature is a ``match.signed`` event in the
    table's log."""

    def __init__(self, runtime: Any, signer: Signer) -> None:
        self.runtime = runtime
        self.signer = signer
        self.signed = 0
        self._tasks: set[asyncio.Task[None]] = set()

    def attach(self) -> None:
        self.runtime.subscribe(self.on_durable)
        health = getattr(self.runtime, "health", None)
        if health is not None:
            # Whether records are signed and by which key, not where the key lives:
            # /api/health is open to anyone (the path is in `shotclock config`).
            health.register("signing", lambda: {"on": True,
                                                "fingerprint": self.signer.fingerprint,
                                                "signed": self.signed})

    def detach(self) -> None:
        self.runtime.unsubscribe(self.on_durable)
        for task in list(self._tasks):
            task.cancel()

    def on_durable(self, table_id: str, wires: list[dict[str, Any]], texts: list[str]) -> None:
        for wire in wires:
            if wire.get("type") == "match.ended":
                task = asyncio.get_running_loop().create_task(
                    self._sign(table_id, int(wire["seq"])))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _sign(self, table_id: str, last: int) -> None:
        store = self.runtime.store

        def read() -> tuple[int, str] | None:
            conn = store.reader_connection()
            row = conn.execute("SELECT start_seq FROM matches WHERE table_id = ? AND "
                               "start_seq <= ? ORDER BY number DESC LIMIT 1",
                               (table_id, last)).fetchone()
            if row is None:
                return None
            first = int(row[0])
            return first, digest_of(conn, table_id, first, last)

        try:
            found = await asyncio.to_thread(read)
            if found is None:
                log.error("table %s: no match found to sign up to event %d", table_id, last)
                return
            first, digest = found
            data = self.signer.sign(table_id, first, last, digest)
            await self.runtime.record(table_id, [MATCH_SIGNED(data)])
            self.signed += 1
        except Exception:  # never the clock's problem: the record stays unsigned, said so
            log.exception("table %s: signing the match up to event %d failed", table_id, last)
