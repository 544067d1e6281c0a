"""The headers every HTTP answer carries (issue 11 point 12, issue 35 build point 7).

:class:`SecurityHeaders` (pure ASGI, the outermost layer, so refusals get them too):

- ``Content-Security-Policy`` (scripts only from this service, no plugins, no ``<base>``
  games), ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``; the
  referee console, the hall and the display may not be framed (``frame-ancestors 'none'``,
  ``X-Frame-Options: DENY``: clickjacking a referee's buttons), the overlay stays
  embeddable (an OBS browser source);
- ``Strict-Transport-Security: max-age=604800`` on every answer served over TLS (uvicorn's
  own, or a trusted proxy's ``X-Forwarded-Proto: https``), never over plain HTTP. A week,
  without ``includeSubDomains``: browsers ignore it for an address, and a hall's names
  (``raspberrypi.local``) are reused by the next Pi at the next event, perhaps without
  TLS; a week covers a tournament and every visit renews it;
- ``Cache-Control: no-store`` (replacing any other) on every answer that carries or
  depends on a token: everything under ``/api/tokens``, and the answer to any request that
  offered one (``Authorization``, or a query parameter that names a secret, e.g. the
  referee console opened with ``?token=``).

See docs/policy.md, "Headers".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from clock_service.service.limits import Network, in_networks
from clock_service.service.redaction import is_secret_name

__all__ = ["SecurityHeaders", "EMBEDDABLE", "HSTS", "NO_STORE", "carries_token", "over_tls"]

# Every page: scripts only from this service, no plugins, no <base> games. Inline style
# attributes stay allowed: the pages set them.
_CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
        "form-action 'self'")
# FastAPI's /docs loads Swagger UI from a CDN and starts it with an inline script.
_CSP_DOCS = ("default-src 'self'; script-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; "
             "style-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net; img-src 'self' data: "
             "https://fastapi.tiangolo.com; object-src 'none'; base-uri 'none'; "
             "frame-ancestors 'none'")
EMBEDDABLE = frozenset({"/overlay"})

HSTS = (b"strict-transport-security", b"max-age=604800")
NO_STORE = (b"cache-control", b"no-store")

_COMMON = ((b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"))
_DOCS = (*_COMMON, (b"content-security-policy", _CSP_DOCS.encode()),
         (b"x-frame-options", b"DENY"))
_EMBEDDABLE = (*_COMMON, (b"content-security-policy", _CSP.encode()))
_PAGE = (*_COMMON, (b"content-security-policy", (_CSP + "; frame-ancestors 'none'").encode()),
         (b"x-frame-options", b"DENY"))


def _security_headers(path: str) -> tuple[tuple[bytes, bytes], ...]:
    if path in ("/docs", "/redoc"):
        return _DOCS
    if path in EMBEDDABLE:
        return _EMBEDDABLE
    return _PAGE


def carries_token(scope: Any) -> bool:
    """Whether the answer to this request carries or depends on a token."""
    if scope.get("path", "").startswith("/api/tokens"):
        return True
    for key, _ in scope.get("headers", ()):
        if key == b"authorization":
            return True
    query = scope.get("query_string", b"")
    if query and b"=" in query:
        for pair in query.split(b"&"):
            name, equals, _ = pair.partition(b"=")
            if equals and is_secret_name(name.decode("latin-1")):
                return True
    return False


def over_tls(scope: Any, trusted: tuple[Network, ...]) -> bool:
    """Whether the client reached us over TLS: uvicorn's own, or a trusted proxy's."""
    if scope.get("scheme") in ("https", "wss"):
        return True
    peer = scope.get("client")
    if not trusted or peer is None or not in_networks(peer[0], trusted):
        return False
    for key, value in scope.get("headers", ()):
        if key == b"x-forwarded-proto":
            return bool(value.split(b",")[0].strip().lower() == b"https")
    return False


class SecurityHeaders:
    """Pure ASGI: the headers above on every HTTP answer. ``trusted``: the reverse proxies
    whose ``X-Forwarded-Proto`` is believed (SHOTCLOCK_TRUSTED_PROXIES)."""

    def __init__(self, app: Any, trusted: Iterable[Network] = ()) -> None:
        self.app = app
        self.trusted = tuple(trusted)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = _security_headers(scope.get("path", ""))
        if over_tls(scope, self.trusted):
            extra = (*extra, HSTS)
        private = carries_token(scope)

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = message.get("headers", [])
                if private:
                    headers = [h for h in headers if h[0].lower() != b"cache-control"]
                    headers.append(NO_STORE)
                message["headers"] = [*headers, *extra]
            await send(message)

        await self.app(scope, receive, with_headers)
