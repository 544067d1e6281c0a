"""What every HTTP door shares: the error answers, the guard, the served parts.

- ``Guard``: the one check of who may use a door (the access table,
  clock_service/service/access.py), a dependency of the whole app;
- ``Served``: the parts every router of the API reads (the runtime, the settings, the
  limits, the credentials), typed, kept by ``create_app`` as ``app.state.served``; the
  routers of the other edges get their own parts when they are made (their factories);
- the error answers: each ``ShotClockError`` class's status, the OpenAPI responses.
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import Depends, Request
from fastapi.responses import JSONResponse
from starlette.requests import HTTPConnection

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
from clock_service.service import access
from clock_service.service.auth import Authority, Credential
from clock_service.service.limits import Limits
from clock_service.service.live import ServedRuntime
from clock_service.service.settings import Settings
from clock_service.service.wire.http import ErrorResponse

__all__ = ["STATUS", "error_responses", "status_of", "error_response", "token_matches",
           "Guard", "Served", "served_of", "credential_of", "bearer_token", "plain_integers",
           "runtime_of", "invalid_json"]

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


def bearer_token(request: HTTPConnection) -> str | None:
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


class Guard:
    """The one check of every HTTP door (a dependency of the whole app): the route's
    declaration in the access table (clock_service/service/access.py) against the
    request's credential. A route with no declaration is refused (fail closed).

    The credential is kept on the request for the route (``credential_of``): a command is
    recorded with who sent it. ``places``: the tables this service's own parts serve, for
    the doors whose table is not in the path (``{"display": "1", "camera": "1"}``)."""

    def __init__(self, authority: Authority, places: Mapping[str, str] | None = None) -> None:
        self.authority = authority
        self.places = dict(places or {})

    async def __call__(self, connection: HTTPConnection) -> None:
        if connection.scope["type"] != "http":
            return  # a WebSocket checks each message (clock_service/service/envelope.py)
        route = connection.scope.get("route")
        path = getattr(route, "path", None)
        method = connection.scope.get("method", "GET")
        door = access.door_of(method, path) if isinstance(path, str) else None
        if door is None:
            raise Forbidden(f"{method} {path or connection.url.path} is not in the access "
                            "table (clock_service/service/access.py)", code="undeclared_door")
        if door.who is access.Who.ANYONE:
            return  # reading: a token offered with it is not even looked at
        offered = bearer_token(connection)
        credential = self.authority.identify(offered)
        if offered and self.authority.enabled and credential is None:
            raise NotAuthorized("the token is wrong or was revoked")
        table_id: str | None = None
        if door.table == "path":
            table_id = connection.path_params.get("table_id")
        elif door.table is not None:
            table_id = self.places.get(door.table)
        access.check(door, credential, table_id, f"{method} {path}")
        connection.state.credential = credential


def credential_of(request: Request) -> Credential:
    """The credential the guard let in (a route whose door is not ``anyone``)."""
    credential: Credential | None = getattr(request.state, "credential", None)
    if credential is None:
        raise NotAuthorized("this needs a referee or director token")
    return credential


@dataclass(frozen=True)
class Served:
    """The parts the API's routers read: the runtime the app serves (a table service's or
    the hall's mirror), the settings, the limits and the credentials; ``replays``: how
    many WebSocket replays may read the store at once."""

    runtime: ServedRuntime
    settings: Settings
    limits: Limits
    authority: Authority
    replays: asyncio.Semaphore


def served_of(connection: HTTPConnection) -> Served:
    served: Served = connection.app.state.served
    return served


def runtime_of(request: HTTPConnection) -> ServedRuntime:
    """The runtime the app serves (a table service's or the hall's mirror)."""
    return served_of(request).runtime
