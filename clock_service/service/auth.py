"""Who may do what: the credentials a service accepts, and their roles (issue 20, finding 6).

- **director**: ``SHOTCLOCK_REFEREE_TOKEN`` (the contract's token, as before: every command
  on every table) and any director token issued through ``POST /api/tokens``. Creates and
  archives tables, commands and corrects every table, issues and revokes tokens.
- **referee**: a token issued by a director for one table or a few (``tables``). Commands
  and corrections on those tables only (403 ``forbidden_table`` elsewhere); no creating,
  archiving or issuing (403 ``director_only``).
- Reading (state, events, pages, feeds) needs no credential at all, as before.

Issued tokens are kept in the store as a SHA-256 digest (never the token), loaded at start;
issuing and revoking take effect at once, no restart (a revoked token's next request is
refused). The service records who sent a command from the credential, not from the body:
``by`` is ``referee`` (a camera is only ever the service's own camera adapter), a
correction's ``by`` is the credential's name, and ``source`` names the credential (a
referee token cannot claim to be the camera, a button or another referee).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass, replace
from typing import Any

from clock_service.core.commands import Command
from clock_service.core.errors import Forbidden, InvalidInput, NotAuthorized, UnknownToken
from clock_service.core.ids import is_table_id
from clock_service.core.text import NAME, InvalidText, clean

__all__ = ["Credential", "Authority", "DIRECTOR", "REFEREE", "OPEN", "stamp", "token_digest",
           "MIN_LENGTH", "PLACEHOLDERS", "weak_token_reason"]

DIRECTOR = "director"
REFEREE = "referee"
ROLES = (DIRECTOR, REFEREE)
TOKEN_BYTES = 24  # 32 URL-safe characters
MAX_TOKENS = 1000
# Sources only the service itself may record (its camera adapter, its own buttons).
RESERVED_SOURCES = frozenset({"camera"})
META_PREFIX = "token:"


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Credential:
    id: str  # "env" for SHOTCLOCK_REFEREE_TOKEN, else the issued token's id
    role: str
    name: str  # who, as the log records it
    tables: frozenset[str] | None = None  # None: every table

    @property
    def director(self) -> bool:
        return self.role == DIRECTOR

    def may_command(self, table_id: str) -> bool:
        return self.tables is None or table_id in self.tables

    def check_table(self, table_id: str) -> None:
        if not self.may_command(table_id):
            raise Forbidden(f"this token ({self.name}) is for table(s) "
                            f"{', '.join(sorted(self.tables or ()))}, not table {table_id}",
                            code="forbidden_table")

    def check_director(self, what: str) -> None:
        if not self.director:
            raise Forbidden(f"{what} needs a director's token; this one ({self.name}) is a "
                            "referee's", code="director_only")

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "role": self.role, "name": self.name,
                "tables": sorted(self.tables) if self.tables is not None else None}


# The open service (no SHOTCLOCK_REFEREE_TOKEN: loopback, or --open): everyone directs.
OPEN = Credential("open", DIRECTOR, "open")


def stamp(command: Command, credential: Credential, channel: str) -> Command:
    """The command as the credential may send it: ``by`` and ``source`` set from who sent
    it. ``channel``: how it came (``http``, ``ws``, ``mqtt``).

    - ``by``: ``referee`` for every command that comes over the network (``camera`` is the
      service's own camera adapter only); a correction's ``by`` (free text: who corrected)
      is the credential's name, except that a director's (the hall forwarding a referee's
      correction, a tournament desk) may name someone.
    - ``source``: a director's is kept as offered (the hall forwards ``hall/<channel>:
      <referee>``; the button bridge says ``button``), never a reserved one; a referee's is
      ``<what it offered or the channel>:<its name>``.
    """
    offered = command.source if command.source not in RESERVED_SOURCES else None
    free_by = command.by not in ("referee", "camera")  # a correction (its own words)
    if credential.director:
        by = command.by if free_by else "referee"
        source = offered or channel
    else:
        by = credential.name if free_by else "referee"
        source = f"{offered or channel}:{credential.name}"[:200]
    if by == command.by and source == command.source:
        return command
    return replace(command, by=by, source=source)


class Authority:
    """The credentials of one service: the env token and the issued ones.

    ``store``: where issued tokens live (its ``meta`` table, through the writer thread);
    None keeps them in memory only (tests)."""

    def __init__(self, env_token: str | None, store: Any = None) -> None:
        self.env_token = env_token
        self.store = store
        self._issued: dict[str, dict[str, Any]] = {}  # id -> record (digest, role, ...)
        self._by_digest: dict[str, str] = {}  # digest -> id, live tokens only

    @property
    def enabled(self) -> bool:
        """Whether commands need a credential (SHOTCLOCK_REFEREE_TOKEN is set)."""
        return self.env_token is not None

    def load(self) -> None:
        """Issued tokens from the store (blocking: call at start, off the loop)."""
        if self.store is None:
            return
        for key, value in self.store.meta_items(META_PREFIX):
            try:
                record = json.loads(value)
                self._remember(key[len(META_PREFIX):], record)
            except (ValueError, KeyError, TypeError):
                continue

    def _remember(self, token_id: str, record: dict[str, Any]) -> None:
        self._issued[token_id] = record
        if record.get("revoked_at") is None:
            self._by_digest[record["digest"]] = token_id
        else:
            self._by_digest.pop(record["digest"], None)

    def identify(self, offered: str | None) -> Credential | None:
        """The credential of a token, or None (no token, wrong or revoked). Without
        SHOTCLOCK_REFEREE_TOKEN the service is open: everyone is a director."""
        if self.env_token is None:
            return OPEN
        if not offered:
            return None
        if hmac.compare_digest(offered.encode(), self.env_token.encode()):
            return Credential("env", DIRECTOR, DIRECTOR)
        token_id = self._by_digest.get(token_digest(offered))
        if token_id is None:
            return None
        record = self._issued[token_id]
        tables = record.get("tables")
        return Credential(token_id, record["role"], record["name"],
                          frozenset(tables) if tables is not None else None)

    def require(self, offered: str | None, how: str) -> Credential:
        credential = self.identify(offered)
        if credential is None:
            raise NotAuthorized(f"this needs a referee or director token: {how}")
        return credential

    # -- issuing ---------------------------------------------------------------------------------
    def issue(self, role: str, tables: list[str] | None, name: str,
              now_ms: float | None = None) -> tuple[dict[str, Any], str]:
        """A new token: (its record as listed, the token itself, shown only now)."""
        if role not in ROLES:
            raise InvalidInput(f"role must be one of {list(ROLES)}, got {role!r}",
                               code="invalid_role")
        try:  # a person's name, by the one rule of human text (core/text.py)
            name = clean(name, NAME, "name")
        except InvalidText as exc:
            raise InvalidInput(str(exc), code="invalid_name") from exc
        if role == REFEREE:
            if not tables or not all(is_table_id(t) for t in tables):
                raise InvalidInput("a referee's token names its tables: a list of table ids",
                                   code="invalid_tables")
            tables = sorted(set(tables))
        elif tables is not None:
            raise InvalidInput("a director's token is for every table: no tables",
                               code="invalid_tables")
        if len(self._by_digest) >= MAX_TOKENS:
            raise InvalidInput(f"at most {MAX_TOKENS} live tokens; revoke some",
                               code="too_many_tokens")
        token = secrets.token_urlsafe(TOKEN_BYTES)
        token_id = secrets.token_hex(6)
        record = {"digest": token_digest(token), "role": role, "tables": tables, "name": name,
                  "created_at": int(now_ms if now_ms is not None else time.time() * 1000),
                  "revoked_at": None}
        self._remember(token_id, record)
        self._save(token_id, record)
        return self._listed(token_id, record), token

    def revoke(self, token_id: str, now_ms: float | None = None) -> dict[str, Any]:
        record = self._issued.get(token_id)
        if record is None:
            raise UnknownToken(token_id)
        if record.get("revoked_at") is None:
            record = {**record,
                      "revoked_at": int(now_ms if now_ms is not None else time.time() * 1000)}
            self._remember(token_id, record)
            self._save(token_id, record)
        return self._listed(token_id, record)

    def listed(self) -> list[dict[str, Any]]:
        return [self._listed(i, r) for i, r in sorted(self._issued.items(),
                                                     key=lambda x: x[1]["created_at"])]

    @staticmethod
    def _listed(token_id: str, record: dict[str, Any]) -> dict[str, Any]:
        return {"id": token_id, "role": record["role"], "name": record["name"],
                "tables": record["tables"], "created_at": record["created_at"],
                "revoked_at": record.get("revoked_at")}

    def _save(self, token_id: str, record: dict[str, Any]) -> None:
        if self.store is not None:
            self.store.put_meta(META_PREFIX + token_id, json.dumps(record))


# -- token strength ---------------------------------------------------------------------------
# A token guessed or read off the example env file controls every clock it covers. On a
# loopback address nothing but this machine can try one; on a LAN address (the venue's
# Wi-Fi) anyone in the hall can, so there a token must be at least ``MIN_LENGTH`` characters,
# not a placeholder from the shipped examples, and not a run of one or two characters
# (issue 20, finding 4: ``CHANGE-ME`` and ``1`` were accepted). ``shotclock tls init`` and
# ``python3 -c "import secrets; print(secrets.token_urlsafe(24))"`` make good ones.
MIN_LENGTH = 16
# The placeholders of the shipped examples (deploy/*.env*), anywhere in a token, any case
# (``change-me-to-a-long-random-token`` is long and still the example's).
PLACEHOLDERS = ("change-me", "changeme", "change_me", "replace-me", "replace_me")


def weak_token_reason(token: str) -> str | None:
    """Why ``token`` may not guard a service on a LAN address, or None if it may."""
    folded = token.strip().lower()
    for placeholder in PLACEHOLDERS:
        if placeholder in folded:
            return f"it is the placeholder {placeholder.upper()!r} from the examples"
    if len(token) < MIN_LENGTH:
        return f"it has {len(token)} characters; at least {MIN_LENGTH} are needed"
    if len(set(token)) < 6:
        return f"it uses only {len(set(token))} different characters"
    return None
