"""One error hierarchy for the whole service.

``RuleRefusal`` is "the referee asked for something the rules forbid" (HTTP 409);
``InvalidInput`` is "the request itself is malformed" (HTTP 422); ``UnknownTable`` is 404.
Hardware failures live in ``firmware_bridge.errors`` and never reach the referee as a refusal.
Every error carries a stable machine ``code`` and a message that states the fact.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ShotClockError",
    "RuleRefusal",
    "InvalidInput",
    "InvalidCommand",
    "InvalidProfile",
    "UnknownTable",
    "UnknownMatch",
    "UnknownToken",
    "TableExists",
    "NotAuthorized",
    "StoreError",
    "HallReadOnly",
    "TableUnreachable",
    "ForwardedError",
    "NoHardware",
    "StoreLocked",
    "StoreCorrupt",
    "TooManyTables",
    "Forbidden",
    "UnsafeDirectory",
]


class ShotClockError(Exception):
    code = "error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else self.code

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


class RuleRefusal(ShotClockError):
    """A well-formed command the rules do not allow now (e.g. a second extension, 12.5)."""

    code = "refused"

    def __init__(self, message: str, *, code: str, rule: str | None = None) -> None:
        super().__init__(message, code=code)
        self.rule = rule
        # What happened anyway before the refusal (a due expiry, I17); the runtime publishes it.
        self.events: list[Any] = []

    def to_dict(self) -> dict[str, str]:
        out = super().to_dict()
        if self.rule:
            out["rule"] = self.rule
        return out


class InvalidInput(ShotClockError, ValueError):
    code = "invalid_input"


class InvalidCommand(InvalidInput):
    code = "invalid_command"


class InvalidProfile(InvalidInput):
    code = "invalid_profile"


class UnknownTable(ShotClockError, LookupError):
    code = "unknown_table"

    def __init__(self, table_id: str) -> None:
        super().__init__(f"no table {table_id!r}", code="unknown_table")
        self.table_id = table_id


class UnknownMatch(ShotClockError, LookupError):
    code = "unknown_match"

    def __init__(self, match_id: str) -> None:
        super().__init__(f"no match {match_id!r} (a match id is '<table>.<number>', "
                         "e.g. '1.1'; GET /api/matches lists them)", code="unknown_match")


class UnknownToken(ShotClockError, LookupError):
    """No issued token has this id (revoking one: 404)."""

    code = "unknown_token"

    def __init__(self, token_id: str) -> None:
        super().__init__(f"no token {token_id!r}", code="unknown_token")
        self.token_id = token_id


class TableExists(ShotClockError):
    code = "table_exists"


class NotAuthorized(ShotClockError, PermissionError):
    code = "unauthorized"


class StoreError(ShotClockError, RuntimeError):
    code = "store_error"


class HallReadOnly(ShotClockError):
    """The hall mirrors the tables of a hall; it does not own them (409): a table is
    created on the service of its own Pi."""

    code = "hall_read_only"
    http_status = 409


class TableUnreachable(ShotClockError, ConnectionError):
    """A command for a table whose service is offline or did not answer in time (503):
    the table's own console (on its Pi) still works."""

    code = "table_unreachable"
    http_status = 503


class ForwardedError(ShotClockError):
    """A table's own refusal of a command forwarded to it by the hall, passed on as it
    came (status, code, message, rule)."""

    def __init__(self, status: int, code: str, message: str, rule: str | None = None) -> None:
        super().__init__(message, code=code)
        self.http_status = status
        self.rule = rule

    def to_dict(self) -> dict[str, str]:
        out = super().to_dict()
        if self.rule:
            out["rule"] = self.rule
        return out


class NoHardware(ShotClockError, LookupError):
    """The service drives no table-side device that can do this (e.g. dim the digits)."""

    code = "no_hardware"


class StoreLocked(StoreError):
    """Another process holds the store: two writers would interleave two clocks' logs."""

    code = "store_locked"


class StoreUnwritable(StoreError, PermissionError):
    """The store's path cannot be written (a read-only root, a card remounted read-only,
    a directory the service's user cannot write): a restart cannot help."""

    code = "store_unwritable"


class StoreCorrupt(StoreError):
    """The store failed its integrity check at start."""

    code = "store_corrupt"


class TooManyTables(ShotClockError):
    """The service keeps at most ``max_tables`` live tables (SHOTCLOCK_MAX_TABLES)."""

    code = "too_many_tables"


class Forbidden(ShotClockError, PermissionError):
    """Not from here: a foreign Origin, or over a per-address cap."""

    code = "forbidden"


class UnsafeDirectory(ShotClockError, PermissionError):
    """A directory the service would write files into is not its own: a symlink, not a
    directory, another user's, or writable by its group or by anyone (issue 35 point 5)."""

    code = "unsafe_directory"
