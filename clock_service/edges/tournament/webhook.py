"""The results webhook's wire (issue 35 point 6): what a delivery carries, how it is signed,
and one POST that never follows a redirect. The outbox around it is results.py's; the
contract, with a receiver that verifies it, is docs/results.md.

A delivery is the result's JSON body and these headers:

- ``X-Shotclock-Delivery``: the delivery id, ``<match id>:<16 hex>`` (the first 16 hex
  digits of the body's SHA-256). The same for every attempt of one result (the body is made
  once), different for another result even where a store made afresh reuses a match id.
- ``X-Shotclock-Signature: t=<unix s>,v1=<hex>`` (with SHOTCLOCK_RESULTS_SECRET):
  ``v1`` is the HMAC-SHA256, keyed with the secret, of ``<t>.<delivery id>.<body>``, and
  ``t`` the time of this attempt. The time and the id are signed, so a receiver can refuse
  a delivery more than 5 minutes old and one it has already taken, and a captured delivery
  cannot be replayed later or under another id. (Before issue 35: ``sha256=<HMAC of the
  body>``, the id unsigned, no time.)
- ``X-Shotclock-Attempt: n`` (informational, not signed).

A 3xx is an answer, not a way elsewhere: it is a failed attempt (with its status and
``Location`` in the outbox), never followed. Following one sent the signed body's headers
to another host, as a GET without the body, and took that host's 200 for a delivery.

The URL may hold a secret (``user:password@``, sent as ``Authorization: Basic``; ``?key=``):
it is never shown whole. What is shown (errors, the log, /api/health) goes through
``redacted``/``scrub`` (the service's one redaction, clock_service/service/redaction.py).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping

from clock_service.core.errors import InvalidInput
from clock_service.service import redaction

__all__ = ["signature", "delivery_id", "delivery_headers", "check_url", "redacted", "scrub",
           "post", "SIGNATURE", "DELIVERY", "ATTEMPT", "SEND_TIMEOUT_S"]

SIGNATURE = "X-Shotclock-Signature"
DELIVERY = "X-Shotclock-Delivery"
ATTEMPT = "X-Shotclock-Attempt"
SEND_TIMEOUT_S = 10.0
_REASON_CHARS = 200  # of a refusal's body, in the outbox's last_error


def delivery_id(match_id: str, body: bytes) -> str:
    return f"{match_id}:{hashlib.sha256(body).hexdigest()[:16]}"


def signature(secret: str, timestamp: int, delivery: str, body: bytes) -> str:
    """The signature header's value: ``t=<timestamp>,v1=<hex HMAC-SHA256 of
    "<timestamp>.<delivery>.<body>">``."""
    signed = f"{timestamp}.{delivery}.".encode() + body
    return f"t={timestamp},v1={hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()}"


def delivery_headers(secret: str | None, match_id: str, body: bytes, attempt: int,
                     now_s: float) -> dict[str, str]:
    delivery = delivery_id(match_id, body)
    headers = {"Content-Type": "application/json", DELIVERY: delivery,
               ATTEMPT: str(attempt), "User-Agent": "shotclock"}
    if secret:
        headers[SIGNATURE] = signature(secret, int(now_s), delivery, body)
    return headers


def check_url(url: str) -> str:
    """``url`` if it is an http(s) URL with a host; InvalidInput (saying why, the URL
    redacted) otherwise: urllib would also open file:// and ftp://."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port out of range or not a number
    except ValueError as exc:
        raise InvalidInput(f"SHOTCLOCK_RESULTS_WEBHOOK is not a URL ({exc})",
                           code="invalid_results_webhook") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"SHOTCLOCK_RESULTS_WEBHOOK must be an http:// or https:// URL "
                           f"with a host, got {redacted(url)}", code="invalid_results_webhook")
    return url


def redacted(url: str) -> str:
    """``url`` as it may be shown (clock_service/service/redaction.py, the one policy for
    config, logs and health): ``https://user:***@host/path?key=***``."""
    return redaction.redact(url)


def scrub(text: str, url: str) -> str:
    """``text`` (an error message) as it may be shown: every credential redaction finds,
    and the URL's own password and query values wherever they appear, as written and
    decoded (an error may quote them outside a URL)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return redaction.redact(text, [url])
    raw = [parts.password, *(piece.partition("=")[2] for piece in parts.query.split("&"))]
    known: set[str] = {form for secret in filter(None, raw)
                       for form in (secret, urllib.parse.unquote(secret),
                                    urllib.parse.unquote_plus(secret))}
    longest_first: list[str] = sorted(known, key=len, reverse=True)
    return redaction.redact(text, longest_first)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A 3xx is the receiver's answer: raised as an HTTPError, never followed."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _basic_auth(url: str) -> tuple[str, dict[str, str]]:
    """``https://user:password@host/...`` as curl takes it: the URL without its user info,
    and an ``Authorization: Basic`` header (urllib would look the user info up as a host)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, {}
    host = parts.netloc.rpartition("@")[2]
    plain = urllib.parse.urlunsplit(parts._replace(netloc=host))
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return plain, {"Authorization": f"Basic {token}"}


def post(url: str, data: bytes, headers: Mapping[str, str]) -> str | None:
    """POST once; None on a 2xx, else what went wrong, the URL's secrets redacted
    (blocking: a worker thread)."""
    try:
        plain, auth = _basic_auth(url)
    except ValueError as exc:
        return scrub(f"{type(exc).__name__}: {exc}", url)
    request = urllib.request.Request(plain, data=data, method="POST",
                                     headers={**headers, **auth})
    try:
        with _OPENER.open(request, timeout=SEND_TIMEOUT_S) as response:
            response.read(65536)
            status = response.status
        return None if 200 <= status < 300 else f"HTTP {status}"
    except urllib.error.HTTPError as exc:
        return scrub(_refusal(exc), url)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return scrub(f"{type(exc).__name__}: {exc}", url)


def _refusal(exc: urllib.error.HTTPError) -> str:
    """``HTTP 302 Found, Location: ... (redirects are not followed)``, or ``HTTP 401
    Unauthorized: <the start of the receiver's answer>``."""
    head = f"HTTP {exc.code} {exc.reason}".rstrip()
    if 300 <= exc.code < 400:
        location = exc.headers.get("Location") if exc.headers else None
        where = redacted(location) if location else "no Location"
        return f"{head}, Location: {_printable(where)} (redirects are not followed)"
    try:
        said = exc.read(_REASON_CHARS * 4).decode("utf-8", "replace")
    except OSError:
        said = ""
    said = _printable(said)[:_REASON_CHARS]
    return f"{head}: {said}" if said else head


def _printable(text: str) -> str:
    """One line of printable characters (a receiver's words go into JSON and logs)."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())
