"""Who may use which door: one table for every HTTP route, WebSocket message and MQTT message.

Every door of the service is declared here once, with who may use it:

- ``anyone``: no credential (reading: states, events, pages, feeds, the draw, results);
- ``any referee``: any live credential, a referee's of any table or a director's (a
  console asking what its own token is);
- ``table referee``: a referee of *this* table, or a director (commands, corrections, the
  next match, the camera's calibration, the display's brightness);
- ``director``: a director's credential (creating and archiving tables, tokens, the draw,
  the results' outbox).

The doors ask this table and decide nothing by themselves: the HTTP guard
(``clock_service.service.doors.Guard``, one dependency of the whole app), the WebSocket
sessions and the MQTT publisher (``clock_service.service.envelope``). A route with no
declaration is refused (fail closed) and fails the test that walks the app's routes
(tests/test_access.py). ``python -m clock_service.service.access`` prints the table as
docs/api.md shows it.

Without ``SHOTCLOCK_REFEREE_TOKEN`` the service is open (loopback, or ``--open``): every
caller is the director (clock_service/service/auth.py ``OPEN``).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from enum import StrEnum

from clock_service.core.errors import NotAuthorized
from clock_service.service.auth import Credential

__all__ = ["Who", "Door", "HTTP", "MESSAGES", "PAGES", "door_of", "check", "allows",
           "route_key", "markdown"]


class Who(StrEnum):
    ANYONE = "anyone"
    ANY_REFEREE = "any referee"
    TABLE_REFEREE = "table referee"
    DIRECTOR = "director"


@dataclass(frozen=True)
class Door:
    """Who may use a door, and why (one line, for docs/api.md).

    ``table``: where a ``table referee`` door finds its table: the path parameter
    ``table_id`` (``"path"``), or the table this service's own ``"display"`` or
    ``"camera"`` serves."""

    who: Who
    why: str
    table: str | None = None

    def __post_init__(self) -> None:
        if (self.who is Who.TABLE_REFEREE) != (self.table is not None):
            raise ValueError(f"a table referee's door names where its table is: {self}")


def _anyone(why: str) -> Door:
    return Door(Who.ANYONE, why)


def _director(why: str) -> Door:
    return Door(Who.DIRECTOR, why)


def _referee(why: str, table: str = "path") -> Door:
    return Door(Who.TABLE_REFEREE, why, table)


# (method, path as the route declares it, convertors left out) -> door. HEAD is GET's door.
HTTP: dict[tuple[str, str], Door] = {
    # the service
    ("GET", "/api/health"): _anyone("the parts' status and faults (no secrets)"),
    ("GET", "/openapi.json"): _anyone("the HTTP contract"),
    ("GET", "/docs"): _anyone("the HTTP contract, as a page"),
    ("GET", "/docs/oauth2-redirect"): _anyone("part of the /docs page"),
    ("GET", "/redoc"): _anyone("the HTTP contract, as a page"),
    # tokens
    ("POST", "/api/tokens"): _director("issue a referee's or a director's token"),
    ("GET", "/api/tokens"): _director("every issued token (never the token itself)"),
    ("DELETE", "/api/tokens/{token_id}"): _director("revoke a token"),
    ("GET", "/api/tokens/me"): Door(Who.ANY_REFEREE, "what the offered token is"),
    # tables and their clocks
    ("GET", "/api/tables"): _anyone("every live table's state"),
    ("POST", "/api/tables"): _director("create a table"),
    ("GET", "/api/tables/{table_id}"): _anyone("one table's state"),
    ("DELETE", "/api/tables/{table_id}"): _director("archive a table (its events stay)"),
    ("POST", "/api/tables/{table_id}/commands"): _referee("a command or a correction"),
    ("POST", "/api/tables/{table_id}/preview"): _referee(
        "what a command would do, changing nothing"),
    ("GET", "/api/tables/{table_id}/events"): _anyone("a table's event log"),
    ("GET", "/api/archive"): _anyone("the archived tables"),
    ("GET", "/api/archive/{archive_id}/events"): _anyone("an archived table's event log"),
    ("PUT", "/api/hardware/brightness"): _referee("the table display's brightness", "display"),
    # matches and reports
    ("GET", "/api/matches"): _anyone("the matches played"),
    ("GET", "/api/matches/{match_id}"): _anyone("a match's frames and statistics"),
    ("GET", "/api/matches/{match_id}/shots.csv"): _anyone("a match's shots as CSV"),
    ("GET", "/api/matches/{match_id}/charts/{chart}.svg"): _anyone("a match's charts"),
    # the tournament around the table
    ("GET", "/api/presets"): _anyone("the named time profiles"),
    ("GET", "/api/presets/{name}"): _anyone("one named time profile"),
    ("GET", "/api/draw"): _anyone("the draw and every table's queue"),
    ("POST", "/api/draw"): _director("import the draw"),
    ("POST", "/api/draw/{number}/assign"): _director(
        "put a queued match in a table's queue, or at another place in it"),
    ("POST", "/api/draw/{number}/start"): _director("start a queued match on a table now"),
    ("DELETE", "/api/draw"): _director("forget the draw"),
    ("GET", "/api/tables/{table_id}/next"): _anyone("what a table plays next"),
    ("POST", "/api/tables/{table_id}/next"): _referee("start the table's next match"),
    ("GET", "/api/results"): _anyone("the results of the matches played"),
    ("GET", "/api/results.csv"): _anyone("the results as CSV"),
    ("GET", "/api/results/outbox"): _director("the results webhook's deliveries"),
    ("GET", "/api/results/webhook"): _director("where the results go (never the secret)"),
    ("PUT", "/api/results/webhook"): _director("set where the results go (the environment wins)"),
    ("GET", "/api/results/{match_id}"): _anyone("one match's result"),
    # broadcast feeds
    ("GET", "/feeds/tables.{fmt}"): _anyone("every table's row for a graphics switcher"),
    ("GET", "/feeds/tables/{table_id}.{fmt}"): _anyone("one table's row"),
    # the camera
    ("GET", "/api/camera"): _anyone("the camera's status"),
    ("GET", "/api/camera/frame.jpg"): _anyone("the camera's last frame"),
    ("GET", "/api/camera/view.jpg"): _anyone("the last frame with what the camera sees"),
    ("GET", "/api/camera/clips"): _anyone("the shots' clips"),
    ("GET", "/api/camera/clips/{name}"): _anyone("one shot's clip"),
    ("GET", "/api/matches/{match_id}/clips"): _anyone("a match's clips"),
    ("PUT", "/api/camera/calibration"): _referee("the camera's calibration", "camera"),
    # WebSockets: anyone may follow; what a socket may send is in MESSAGES
    ("WEBSOCKET", "/ws/tables/{table_id}"): _anyone("follow a table (messages: MESSAGES)"),
    ("WEBSOCKET", "/ws/hall"): _anyone("follow every table's card"),
    ("GET", "/static/{path}"): _anyone("the pages' scripts, styles and images"),
}

# The pages (web_ui): each reads through the API, with the visitor's own token if any.
PAGES = ("/", "/referee", "/overlay", "/display", "/calibrate", "/clips", "/stats", "/report",
         "/desk")
for _page in PAGES:
    HTTP[("GET", _page)] = _anyone("a page")

# A message on a table's WebSocket or on its MQTT commands topic, by ``type``.
MESSAGES: dict[str, Door] = {
    "ping": _anyone("the clock offset and the link's liveness"),
    "command": _referee("a command or a correction"),
}

_CONVERTOR = re.compile(r"\{(\w+):[^}]+\}")


def route_key(method: str, path: str) -> tuple[str, str]:
    """The table's key of a route: HEAD asks GET's door; ``{id:conv}`` reads ``{id}``."""
    return ("GET" if method == "HEAD" else method, _CONVERTOR.sub(r"{\1}", path))


def door_of(method: str, path: str) -> Door | None:
    return HTTP.get(route_key(method, path))


def allows(door: Door, credential: Credential | None, table_id: str | None) -> bool:
    if door.who is Who.ANYONE:
        return True
    if credential is None:
        return False
    if door.who is Who.DIRECTOR:
        return credential.director
    if door.who is Who.TABLE_REFEREE:  # no table: the part is not here (a director learns so)
        return credential.may_command(table_id) if table_id is not None else credential.director
    return True  # ANY_REFEREE


def check(door: Door, credential: Credential | None, table_id: str | None,
          what: str) -> None:
    """Raise NotAuthorized (no credential, or a revoked or wrong one) or Forbidden (a
    credential without the right) unless ``door`` lets ``credential`` in. ``what``: the
    door as a person says it (``POST /api/draw``)."""
    if allows(door, credential, table_id):
        return
    if credential is None:
        raise NotAuthorized(f"{what} needs a {door.who} token: Authorization: Bearer <token>")
    if door.who is Who.DIRECTOR:
        credential.check_director(what)
    if table_id is None:  # a table referee's door whose part this service does not have
        credential.check_director(f"{what} (this service has no {door.table})")
    else:
        credential.check_table(table_id)


def markdown() -> str:
    """The access table as docs/api.md shows it (generated; a test keeps it current)."""
    lines = ["| door | who | what |", "| --- | --- | --- |"]
    for (method, path), door in HTTP.items():
        if path in PAGES:
            continue
        lines.append(f"| `{method} {path}` | {door.who} | {door.why} |")
    lines.append(f"| `GET` pages: {', '.join(f'`{p}`' for p in PAGES)} | anyone | the pages |")
    for kind, door in MESSAGES.items():
        lines.append(f"| message `{kind}` (WebSocket, MQTT) | {door.who} | {door.why} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clock_service.service.access",
                                     description="Print the access table (markdown).")
    parser.parse_args(argv)
    sys.stdout.write(markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
