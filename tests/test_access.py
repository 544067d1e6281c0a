"""Every door under one access table (issue 35 point 1; clock_service/service/access.py).

The routes are read from the app itself, as the composition root makes a table service
with a display and a camera (so every optional router is mounted): each has a
declaration, and each declaration has a route. Then every route is played with every kind
of credential — none, a revoked token, a referee of another table, a referee of this
table, the director — and answers as declared: refused with 401 (no credential, or a
wrong one) or 403 (one without the right), or let through (anything else: 200, 404, 422
are the route's own answers once the guard has let the request in). The WebSocket's
messages (the same envelope as MQTT's commands) are played the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import APIRoute, APIWebSocketRoute, iter_route_contexts
from fastapi.testclient import TestClient
from starlette.routing import Mount
from starlette.websockets import WebSocketDisconnect

from clock_service.edges.cli import main as cli
from clock_service.service import access
from clock_service.service.access import Who
from clock_service.service.auth import Authority
from clock_service.service.settings import Settings
from clock_service.service.timesource import FakeTime

DIRECTOR = "director-token-for-the-access-test"
# The values a route's path parameters take when it is played.
PATH_VALUES = {"table_id": "1", "token_id": "0123456789ab", "match_id": "1.1", "number": "1",
               "archive_id": "1~1", "name": "x", "chart": "shots", "fmt": "json",
               "path": "common.css"}
CREDENTIALS = ("none", "revoked", "other_referee", "referee", "director")


class _Display:
    table = "1"

    def set_brightness(self, level: int) -> int:
        return level


class _Camera:
    """What the camera's routes ask of an adapter before they answer (status, table)."""

    table_id = "1"
    evidence = None
    calibration = None

    def status(self) -> dict[str, Any]:
        return {"table": self.table_id}

    def __getattr__(self, name: str) -> Any:  # anything else: the route answers an error
        raise LookupError(name)


def _service(tmp: Path) -> Any:
    settings = Settings(db=str(tmp / "access.db"), display="none", referee_token=DIRECTOR,
                        command_rate=0, read_rate=0, message_rate=0, handshake_rate=0)
    runtime = cli.table_runtime(settings, time=FakeTime())
    reports = cli._reports(runtime)
    return cli._app(settings, runtime, reports=reports, hardware=_Display(),
                    camera=_Camera(),  # type: ignore[arg-type]
                    tournament=cli._tournament(runtime, settings, reports))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, dict[str, str]]]:
    app = _service(tmp_path_factory.mktemp("access"))
    # A route that fails past the guard (the fake camera has no frame) is let through: 500.
    with TestClient(app, raise_server_exceptions=False) as client:
        authority: Authority = app.state.served.authority
        _, referee = authority.issue("referee", ["1"], "Судья стола 1")
        _, other = authority.issue("referee", ["2"], "table 2 referee")
        record, revoked = authority.issue("referee", ["1"], "former referee")
        authority.revoke(record["id"])
        yield client, {"revoked": revoked, "other_referee": other, "referee": referee,
                       "director": DIRECTOR}


def _routes(client: TestClient) -> list[tuple[str, str]]:
    """(method, path) of every route the app serves, from the app itself."""
    found = []
    for context in iter_route_contexts(client.app.router.routes):  # type: ignore[attr-defined]
        route = context.original_route
        if isinstance(route, APIWebSocketRoute):
            found.append(("WEBSOCKET", route.path))
        elif isinstance(route, Mount):
            found.append(("GET", route.path + "/{path}"))
        else:
            path = route.path if isinstance(route, APIRoute) else context.path_format
            found += [("GET" if m == "HEAD" else m, path) for m in (context.methods or ())]
    return sorted({access.route_key(m, p) for m, p in found})


def test_every_route_is_declared_and_every_declaration_is_a_route(
        served: tuple[TestClient, dict[str, str]]) -> None:
    client, _ = served
    routes = _routes(client)
    assert len(routes) > 50 and ("POST", "/api/draw") in routes  # the walk found the app
    assert [r for r in routes if r not in access.HTTP] == []
    assert [d for d in access.HTTP if d not in routes] == []


def _expected(who: Who, credential: str) -> set[int] | None:
    """The statuses a credential must get at a door (None: anything but 401 and 403)."""
    if who is Who.ANYONE:
        return None
    if credential in ("none", "revoked"):
        return {401}
    if who is Who.DIRECTOR:
        return None if credential == "director" else {403}
    if who is Who.TABLE_REFEREE and credential == "other_referee":
        return {403}
    return None


def _http_doors() -> list[tuple[str, str]]:
    return sorted(key for key in access.HTTP if key[0] != "WEBSOCKET")


@pytest.mark.parametrize("credential", CREDENTIALS)
def test_every_http_door_answers_each_credential_as_declared(
        served: tuple[TestClient, dict[str, str]], credential: str) -> None:
    client, tokens = served
    headers = {} if credential == "none" else {"Authorization": f"Bearer {tokens[credential]}"}
    wrong = []
    for method, path in _http_doors():
        door = access.HTTP[(method, path)]
        url = path.format(**PATH_VALUES)
        if method == "DELETE" and path in ("/api/tables/{table_id}", "/api/draw"):
            # let through, these would change what the other doors are played against
            url = url.replace("/api/tables/1", "/api/tables/nothing-here")
            if path == "/api/draw" and _expected(door.who, credential) is None:
                continue  # the director may forget the draw: shown by the 403s below
        answer = client.request(method, url, headers=headers, content=b"{}")
        expected = _expected(door.who, credential)
        if expected is None:
            ok = answer.status_code not in (401, 403)
        else:
            ok = answer.status_code in expected
        if not ok:
            wrong.append(f"{method} {path}: {answer.status_code} {answer.text[:120]}")
    assert wrong == []


def test_an_undeclared_route_is_refused(tmp_path: Path) -> None:
    """Fail closed: a route added without a declaration answers 403, for the director too."""
    app = _service(tmp_path)
    app.add_api_route("/api/forgotten", lambda: {"ok": True}, methods=["GET"])
    with TestClient(app) as client:
        answer = client.get("/api/forgotten", headers={"Authorization": f"Bearer {DIRECTOR}"})
    assert answer.status_code == 403
    assert answer.json()["error"]["code"] == "undeclared_door"


@pytest.mark.parametrize("credential", CREDENTIALS)
def test_every_websocket_message_answers_each_credential_as_declared(
        served: tuple[TestClient, dict[str, str]], credential: str) -> None:
    client, tokens = served
    protocols = [] if credential == "none" else [f"bearer.{tokens[credential]}"]
    try:
        with client.websocket_connect("/ws/tables/1", subprotocols=protocols) as socket:
            assert socket.receive_json()["type"] == "snapshot"
            answers = {}
            for kind in access.MESSAGES:
                message = {"type": kind, "id": kind}
                if kind == "command":
                    message.update(command="foul", reason="access test")
                socket.send_text(json.dumps(message))
                while True:
                    reply = socket.receive_json()
                    if reply.get("id") == kind:
                        break
                answers[kind] = reply
    except WebSocketDisconnect as refused:  # closed at the handshake: a wrong or revoked token
        assert credential == "revoked" and refused.code == 1008, refused
        return
    assert credential != "revoked"
    for kind, door in access.MESSAGES.items():
        expected = _expected(door.who, credential)
        reply = answers[kind]
        if expected is None:
            assert reply["type"] in ("ack", "pong"), (kind, reply)
        else:
            assert reply["type"] == "error" and reply["status"] in expected, (kind, reply)


def test_the_next_match_is_recorded_as_the_credential_that_started_it(
        served: tuple[TestClient, dict[str, str]]) -> None:
    """Finding 1: a table-7 referee could start a match on table 1 and it was recorded as
    ``by: referee, source: draw``. The door is table 1's referee's, and the event names
    who started it."""
    client, tokens = served
    director = {"Authorization": f"Bearer {DIRECTOR}"}
    other = {"Authorization": f"Bearer {tokens['other_referee']}"}
    referee = {"Authorization": f"Bearer {tokens['referee']}"}
    draw = "number,player1,player2,race_to,event,round,table\n41,Иванов,Петров,2,Cup,1,1\n"
    text = {"Content-Type": "text/csv"}
    assert client.post("/api/draw", content=draw, headers={**other, **text}).status_code == 403
    assert client.post("/api/draw", content=draw, headers={**director, **text}).status_code == 201
    assert client.post("/api/tables/1/next", json={"reason": "access test"},
                       headers=other).status_code == 403
    assert client.delete("/api/draw", headers=other).status_code == 403
    started = client.post("/api/tables/1/next", json={"reason": "access test"}, headers=referee)
    assert started.status_code == 200, started.text
    events = client.get("/api/tables/1/events?limit=1000").json()
    match = [e for e in events if e["type"] == "match.started"][-1]
    assert match.get("source") == "draw:Судья стола 1", match


def test_the_access_table_in_the_docs_is_current() -> None:
    docs = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text()
    assert access.markdown() in docs, ("docs/api.md's access table is stale: "
                                       "python -m clock_service.service.access")
