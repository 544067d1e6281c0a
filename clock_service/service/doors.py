"""What the routers share: the error answers, the referee check, the parts on ``app.state``.

``create_app`` puts the parts the composition root built on ``app.state`` (``runtime``,
``settings``, ``limits``, ``reports``, ``hardware``); the routers read them from the
request, so a router module holds no state of its own.
"""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import Depends, Request
from fastapi.responses import JSONResponse

from clock_service.core.errors import (
    Forbidden,
    InvalidInput,
    NoHardware,
    NotAuthorized,
    RuleRefusal,
    ShotClockError,
    StoreError,
    TableExists,
    TooManyTables,
    UnknownMatch,
    UnknownTable,
    UnknownToken,
)
from clock_service.service.auth import Authority, Credential
from clock_service.service.live import ServedRuntime
from clock_service.service.wire import ErrorResponse

__all__ = ["STATUS", "error_responses", "status_of", "error_response", "token_matches",
           "auth_of", "credential_of",
           "bearer_token", "plain_integers", "require_referee", "REFEREE", "runtime_of",
           "invalid_json"]

STATUS = {RuleRefusal: 409, InvalidInput: 422, UnknownTable: 404, UnknownMatch: 404,
          UnknownToken: 404, TableExists: 409, TooManyTables: 409, NotAuthorized: 401,
          Forbidden: 403,
          StoreError: 503, NoHardware: 404}

_ERROR_TEXT = {
    400: "the body is not JSON (invalid_json)",
    401: "the referee token is missing or wrong (unauthorized)",
    403: "a page of another site (origin_not_allowed), or a token without the right: "
         "another table's referee (forbidden_table), a referee's token where a director's "
         "is needed (director_only)",
    404: "no such table (unknown_table)",
    409: "refused by the rules (the code and rule say which), or the table exists / too "
         "many tables",
    413: "the body is over the size limit (too_large)",
    422: "malformed: the message names the field",
    429: "over the rate limit of this address (rate_limited; see Retry-After)",
    503: "applied, but the event store did not confirm it in time (store_unavailable)",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of these error statuses."""
    out: dict[int | str, dict[str, Any]] = {}
    for code in codes:
        out[code] = {"model": ErrorResponse, "description": _ERROR_TEXT[code]}
        if code == 429:
            out[code]["headers"] = {"Retry-After": {
                "description": "seconds until a retry can succeed", "schema": {"type": "integer"}}}
    return out


def status_of(exc: ShotClockError) -> int:
    """The HTTP status of an error (also sent in WebSocket and MQTT error replies)."""
    own = getattr(exc, "http_status", None)  # errors that carry their own (the hall's)
    if isinstance(own, int):
        return own
    for cls, status in STATUS.items():
        if isinstance(exc, cls):
            return status
    return 500


def error_response(exc: ShotClockError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, NotAuthorized) else None
    return JSONResponse({"error": exc.to_dict()}, status_code=status_of(exc), headers=headers)


def invalid_json() -> JSONResponse:
    return JSONResponse({"error": {"code": "invalid_json", "message": "the body is not JSON"}},
                        status_code=400)


def token_matches(expected: str | None, offered: str | None) -> bool:
    if expected is None:
        return True
    # Constant-time comparison: the token must not leak through response timing.
    return offered is not None and hmac.compare_digest(offered.encode(), expected.encode())


def bearer_token(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, if any."""
    header = request.headers.get("authorization", "")
    return header[7:].strip() if header[:7].lower() == "bearer " else None


def plain_integers(*names: str) -> Any:
    """A dependency: these query parameters, when given, are integers written in digits.
    (pydantic would read '1.0', ' 1', '+1' or '1_000' as integers.)"""

    def check(request: Request) -> None:
        for name in names:
            for raw in request.query_params.getlist(name):
                if not (raw.isascii() and raw.isdigit()):
                    raise InvalidInput(f"{name} must be a whole number >= 0 written in "
                                       f"digits, got {raw[:40]!r}", code="invalid_request")

    return Depends(check)


def require_referee(request: Request) -> None:
    """A credential (the env token or an issued one, clock_service/service/auth.py), kept on the
    request for the route to check its role and tables (``credential_of``)."""
    request.state.credential = auth_of(request).require(
        bearer_token(request), "Authorization: Bearer <token>")


def auth_of(request: Request) -> Authority:
    auth: Authority = request.app.state.runtime.auth
    return auth


def credential_of(request: Request) -> Credential:
    credential: Credential = request.state.credential
    return credential


# The dependencies of a route that needs the referee token.
REFEREE = [Depends(require_referee)]


def runtime_of(request: Request) -> ServedRuntime:
    """The runtime the app serves (a table service's or the hall's mirror)."""
    runtime: ServedRuntime = request.app.state.runtime
    return runtime
