"""What is never shown: credentials inside URLs and text (issue 35, build point 7).

One function, :func:`redact`, decides for every place a secret could be shown:
``shotclock config`` (clock_service/service/settings.py ``redact``), every log line
(clock_service/edges/api/server.py ``TokenRedactor``) and ``/api/health``
(clock_service/edges/api/health.py, through :func:`redact_all`). It replaces, anywhere in a
text:

- the password of a URL's user part (``https://user:***@host``); a user part without a
  password is itself a key often enough (``https://<key>@host``) that it goes whole
  (``https://***@host``);
- the value of every query or fragment parameter whose name, percent-decoded and in any
  case, names a secret (:func:`is_secret_name`: ``key``, ``token``, ``secret``,
  ``password``, ``sig``, ``signature``, ``api_key`` ... and ``*_key``, ``*_token`` ...):
  ``?%74oken=x`` and ``?TOKEN=x`` are caught as ``?token=x`` is;
- ``Bearer <token>``, ``Basic <credentials>`` and the WebSocket subprotocol
  ``bearer.<token>``;
- each known secret (the referee token) wherever it appears, percent-encoded or not.

Everything else is left as it was: a redacted line keeps its shape. See docs/policy.md,
"Secrets".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, unquote_plus

__all__ = ["REDACTED", "redact", "redact_all", "is_secret_name", "SECRET_NAMES"]

REDACTED = "***"

# Query and fragment parameter names whose value is a credential (compared percent-decoded,
# lower case, "-" read as "_").
SECRET_NAMES = frozenset({
    "key", "token", "secret", "password", "passwd", "pwd", "pass", "sig", "signature",
    "api_key", "apikey", "auth", "access_token", "refresh_token", "id_token",
    "client_secret", "credential", "credentials", "session", "sessionid",
})
SECRET_SUFFIXES = ("_key", "_token", "_secret", "_password", "_sig", "_signature",
                   "_credential")

# A URL's user part: after "scheme://", up to the "@" before the host (RFC 3986: no "/",
# "?", "#" or "@" inside it).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/?#@\s\"'<>]+)@")
# A parameter of a query or fragment: its separator, its name and its value.
_PARAMETER = re.compile(r"([?&;#])([^=&;#?\s\"'<>]+)=([^&;#\s\"'<>]*)")
_SCHEMES = [
    re.compile(r"(?i)(bearer\.)[^\s,\"';]+"),  # the WebSocket subprotocol
    re.compile(r"(?i)(\bbearer\s+)[^\s,\"';]+"),
    re.compile(r"(?i)(\bbasic\s+)[A-Za-z0-9+/=]{6,}"),
]


def is_secret_name(name: str) -> bool:
    """True when a parameter called ``name`` (as written in a URL) carries a credential."""
    plain = unquote_plus(name).strip().lower().replace("-", "_")
    return plain in SECRET_NAMES or plain.endswith(SECRET_SUFFIXES)


def _userinfo(match: re.Match[str]) -> str:
    user, colon, _ = match.group(2).partition(":")
    return f"{match.group(1)}{user}:{REDACTED}@" if colon else f"{match.group(1)}{REDACTED}@"


def _parameter(match: re.Match[str]) -> str:
    if not match.group(3) or not is_secret_name(match.group(2)):
        return match.group(0)
    return f"{match.group(1)}{match.group(2)}={REDACTED}"


def redact(text: str, known: Iterable[str | None] = ()) -> str:
    """``text`` with every credential in it replaced by ``***`` (see the module's doc);
    ``known``: secrets to replace wherever they appear (the referee token)."""
    for secret in known:
        if secret and len(secret) >= 4:  # a one-letter "secret" would blank the text
            text = text.replace(secret, REDACTED)
            encoded = quote(secret, safe="")
            if encoded != secret:
                text = text.replace(encoded, REDACTED)
    if "://" in text and "@" in text:
        text = _USERINFO.sub(_userinfo, text)
    if "=" in text:
        text = _PARAMETER.sub(_parameter, text)
    lower = text.lower()
    if "bearer" in lower or "basic" in lower:
        for pattern in _SCHEMES:
            text = pattern.sub(rf"\1{REDACTED}", text)
    return text


def redact_all(value: Any, known: Iterable[str | None] = ()) -> Any:
    """:func:`redact` over every string of a JSON-like value (dicts, lists), keys kept."""
    known = known if isinstance(known, tuple) else tuple(known)
    if isinstance(value, str):
        return redact(value, known)
    if isinstance(value, dict):
        return {k: redact_all(v, known) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_all(v, known) for v in value]
    return value
