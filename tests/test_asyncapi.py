"""The WebSocket contract (docs/asyncapi.json) against the models and a real server.

1. The committed document is exactly what ``build_asyncapi()`` makes from the models.
2. A real ``shotclock serve`` plays a short frame (and a restart) while a WebSocket client
   records every message; each one must validate, strictly, against the model the document
   names for its ``type``. The data models forbid extra fields, so an event field that the
   document lacks, a renamed one or a new message type fails here.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel, ValidationError
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Subprotocol

from clock_service.core.commands import COMMANDS, ENVELOPE_FIELDS
from clock_service.core.events import EVENT_TYPES
from clock_service.edges.api.asyncapi import (
    CLIENT_MESSAGES,
    DEFAULT_PATH,
    HALL_MESSAGES,
    MQTT_MESSAGES,
    SERVER_MESSAGES,
    build_asyncapi,
    render,
)
from tests.server import ServerProcess

TOKEN = "t0ken"
# A minute's shot, warnings at 300 and 150 ms left: each command gets exactly its own events
# however slowly a loaded machine answers (with 600 ms shots a warning came between a start
# and the next press). The shot that must run out is set to 400 ms (set_time).
SHORT = {"shot_ms": 60_000, "full_rounds": 1, "step_ms": 100, "floor_ms": 30_000,
         "extension_ms": 300, "warnings_ms": [300, 150]}
ENVELOPE = {"type", *ENVELOPE_FIELDS}  # the rest (at, by, source) is on Command itself


def test_the_committed_document_is_up_to_date() -> None:
    assert DEFAULT_PATH.read_text(encoding="utf-8") == render(build_asyncapi()), (
        "docs/asyncapi.json is stale: run `python -m clock_service.edges.api.asyncapi` and commit it")


def test_the_document_covers_every_event_type_and_command() -> None:
    document = build_asyncapi()
    messages = document["components"]["messages"]
    assert set(SERVER_MESSAGES) == {"snapshot", "status", "pong", "ack", "error", *EVENT_TYPES}
    assert set(messages) == (set(SERVER_MESSAGES) | set(CLIENT_MESSAGES) | set(MQTT_MESSAGES)
                             | set(HALL_MESSAGES))
    for name, model in {**SERVER_MESSAGES, **CLIENT_MESSAGES, **MQTT_MESSAGES,
                        **HALL_MESSAGES}.items():
        assert messages[name]["payload"] == {"$ref": f"#/components/schemas/{model.__name__}"}
        assert model.__name__ in document["components"]["schemas"]
    # The command union has exactly the core's commands, each with the dataclass's fields.
    union = get_args(CLIENT_MESSAGES["command"].model_fields["root"].annotation)
    models = {get_args(m.model_fields["command"].annotation)[0]: m for m in union}
    assert set(models) == set(COMMANDS)
    for name, model in models.items():
        declared = {f.name for f in fields(COMMANDS[name]) if f.init}
        assert set(model.model_fields) - ENVELOPE == declared, name
    assert {c["code"] for c in document["channels"]["table"]["x-close-codes"]} == {
        4001, 4404, 1008, 1009, 1013}
    models_by_name = {**SERVER_MESSAGES, **CLIENT_MESSAGES, **MQTT_MESSAGES}
    for name, message in messages.items():
        for example in message.get("examples", []):
            models_by_name[name].model_validate(example["payload"])


def test_an_undocumented_field_fails_validation() -> None:
    event = {"type": "foul", "seq": 3, "table": "t", "at": 1, "data": {
        "player": 0, "reason": "r", "rule": "10.1", "fouls": [1, 0], "technical_loss": False,
        "extra": 1}, "state": {}}
    with pytest.raises(ValidationError, match="extra"):
        SERVER_MESSAGES["foul"].model_validate(event)


class Recorder:
    """One WebSocket client that keeps the raw text of every message it receives."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.raw: list[str] = []
        self.sent: list[dict[str, Any]] = []
        self.ids = 0

    def receive(self, timeout: float = 5.0) -> dict[str, Any]:
        text = self.ws.recv(timeout=timeout)
        assert isinstance(text, str)
        self.raw.append(text)
        message: dict[str, Any] = json.loads(text)
        return message

    def until(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 5.0) -> list[dict[str, Any]]:
        got = []
        end = time.monotonic() + timeout
        while True:
            message = self.receive(max(0.01, end - time.monotonic()))
            got.append(message)
            if pred(message):
                return got

    def send(self, message: dict[str, Any]) -> dict[str, Any]:
        self.sent.append(message)
        self.ws.send(json.dumps(message))
        return message

    def command(self, command: str, **fields: Any) -> list[dict[str, Any]]:
        """Send a command; return the events and the ack (or the error) that answer it."""
        self.ids += 1
        msg_id = f"c{self.ids}"
        self.send({"type": "command", "id": msg_id, "command": command, **fields})
        got = self.until(lambda m: m["type"] in ("ack", "error") and m.get("id") == msg_id)
        return got

    def ok(self, command: str, **fields: Any) -> list[str]:
        got = self.command(command, **fields)
        assert got[-1]["type"] == "ack", got[-1]
        return [m["type"] for m in got[:-1]]


def validate_all(raw: list[str]) -> set[str]:
    """Every message against its model, strictly; returns the message types seen."""
    seen = set()
    for text in raw:
        kind = json.loads(text)["type"]
        model: type[BaseModel] | None = SERVER_MESSAGES.get(kind)
        assert model is not None, f"message type {kind!r} is not in the document: {text}"
        try:
            model.model_validate_json(text, strict=True)
        except ValidationError as exc:
            pytest.fail(f"{kind} does not match {model.__name__} in docs/asyncapi.json:\n"
                        f"{exc}\n{text}")
        seen.add(kind)
    return seen


def test_every_message_of_a_real_frame_matches_the_document(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "contract.db",
                           env={"SHOTCLOCK_REFEREE_TOKEN": TOKEN}).start()
    raw: list[str] = []
    try:
        status, _ = server.post("/api/tables", {"id": "c", "players": ["Ivanov", "Petrov"],
                                                "profile": SHORT, "race_to": 2}, TOKEN)
        assert status == 201
        with connect(f"{server.ws_url}/ws/tables/c?since=0",
                     subprotocols=[Subprotocol("bearer." + TOKEN)]) as ws:
            rec = Recorder(ws)
            snapshot = rec.receive()
            assert snapshot["type"] == "snapshot" and snapshot["referee"] is True
            assert [rec.receive()["type"] for _ in range(snapshot["seq"])] == [
                "table.created", "frame.started"]  # the replay
            rec.send({"type": "ping", "id": 1, "client_time": time.time() * 1000})
            assert rec.receive()["type"] == "pong"
            ws.send("not json")
            assert rec.receive()["error"]["code"] == "invalid_json"

            # Frame 1: Ivanov breaks.
            assert rec.ok("start") == ["clock.started"]
            assert rec.ok("extension") == ["clock.extended"]
            refused = rec.command("extension")[-1]
            assert (refused["status"], refused["error"]["rule"]) == (409, "12.5")
            assert rec.ok("pause") == ["clock.paused"]
            assert rec.ok("resume") == ["clock.resumed"]
            assert rec.ok("shot") == ["clock.stopped"]
            assert rec.ok("turn") == ["turn"]                          # visit 2: Petrov
            assert rec.ok("foul", reason="touched a ball") == ["foul", "turn"]
            assert rec.ok("hand_back") == ["turn"]                     # 10.4: Petrov again
            assert rec.ok("undo", by="referee", reason="misheard") == ["correction.undone"]
            assert rec.ok("set_time", remaining_ms=400, reason="test") == ["clock.corrected"]
            assert rec.ok("start") == ["clock.started"]                # Ivanov accepts
            expiry = [m["type"] for m in rec.until(lambda m: m["type"] == "turn", timeout=3)]
            # Warnings at 300 and 150 ms left (a stalled loop announces only the latest).
            assert expiry[-3:] == ["clock.expired", "foul", "turn"]
            assert set(expiry[:-3]) == {"clock.warning"}
            assert rec.ok("new_frame", reason="abandoned") == ["frame.ended",
                                                               "frame.started"]  # undecided

            # Frame 2: Petrov breaks.
            assert rec.ok("start") == ["clock.started"]
            assert rec.ok("shot") == ["clock.stopped"]
            assert rec.ok("result", whites_potted=2, legal_break=True) == ["shot.result"]
            assert rec.ok("start") == ["clock.started"]
            assert rec.ok("shot") == ["clock.stopped"]
            assert rec.ok("result", whites_potted=1, referee_foul="push shot") == [
                "shot.result", "foul", "respot", "turn"]
            assert rec.ok("new_frame", winner=1, reason="walkover") == [
                "frame.ended", "frame.started"]  # 0-1

            # Frame 3: Ivanov breaks, nothing credited; Petrov pots the called colour (3.2).
            assert rec.ok("start") == ["clock.started"]
            assert rec.ok("shot") == ["clock.stopped"]
            assert rec.ok("result", whites_potted=0, legal_break=True) == ["shot.result",
                                                                         "turn"]
            assert rec.ok("start") == ["clock.started"]
            assert rec.ok("call", pocket="bottom_left", cushions=["right_bottom"],
                          contacts=["cue>colour"], shot_type="early_cushion") == [
                "call.announced"]                                          # 7.1
            assert rec.ok("shot") == ["clock.stopped"]
            assert rec.ok("result", colour_potted=True,
                          route={"pocket": "bottom_left",
                                 "path": ["cue>colour", "right_bottom"]}) == [
                "shot.result", "frame.ended", "match.ended"]  # an early pot (8.1): 2-0
            # The table signs the finished match's record (issue 20): its own event.
            assert rec.until(lambda m: m["type"] == "match.signed", timeout=10)
            refused = rec.command("start")[-1]
            assert refused["error"]["code"] == "match_over"

            # The disk fills: the next write (nothing is written while nothing happens: a
            # table created meanwhile) makes a status message with the store fault, in the
            # snapshot of a new connection too; the disk recovers: a status message with no
            # faults, and the table is created.
            server.disk_full()
            created: list[Any] = []
            writer = threading.Thread(target=lambda: created.append(server.post(
                "/api/tables", {"id": "d", "players": ["A", "B"]}, TOKEN)))
            writer.start()
            fault = rec.until(lambda m: m["type"] == "status", timeout=5)[-1]
            assert [f["code"] for f in fault["faults"]] == ["store_unwritable"], fault
            with connect(f"{server.ws_url}/ws/tables/c") as other:
                second = Recorder(other)
                assert second.receive()["faults"] == fault["faults"]
                raw += second.raw
            server.disk_full(False)
            assert rec.until(lambda m: m["type"] == "status", timeout=5)[-1]["faults"] == []
            writer.join(10)
            assert created and created[0][0] in (201, 503), created
            # The table's next match (the first stays on record as c.1).
            assert rec.ok("new_match", players=["Sidorov", "Petrov"], race_to=1,
                          event="Cup", referee="Orlov") == ["match.started", "frame.started"]
            # Slow play in a match without the shot clock (12.1): on for the frame, off with it.
            assert rec.ok("new_match", timer=False, reason="slow-play check") == [
                "match.started", "frame.started"]
            assert rec.ok("shot_clock_on", reason="play is stalled", scope="frame") == [
                "shot_clock.on"]
            assert rec.ok("new_frame", winner=0, reason="conceded") == [
                "frame.ended", "shot_clock.off", "match.ended"]
            assert rec.until(lambda m: m["type"] == "match.signed", timeout=10)
            # The match clock: its first warning 10 min before a limit of 10 min + 1 s ...
            assert rec.ok("new_match", match_limit_ms=601_000) == [
                "match.started", "frame.started"]
            assert rec.ok("start") == ["clock.started", "match_clock.started"]
            assert rec.until(lambda m: m["type"] == "match_clock.warning", timeout=5)
            assert rec.ok("shot") == ["clock.stopped"]
            # ... and a limit of 1 s with a per-shot clock switched on at it.
            assert rec.ok("new_match", match_limit_ms=1000, at_match_limit="shot_clock",
                          reason="match clock check") == ["match.started", "frame.started"]
            assert rec.ok("start") == ["clock.started", "match_clock.started"]
            assert rec.ok("pause") == ["clock.paused", "match_clock.paused"]
            assert rec.ok("resume") == ["clock.resumed", "match_clock.resumed"]
            at_limit = rec.until(lambda m: m["type"] == "match_clock.applied", timeout=5)
            assert [m["type"] for m in at_limit][-3:] == [
                "match_clock.expired", "shot_clock.on", "match_clock.applied"]
            raw += rec.raw
            for message in rec.sent:
                CLIENT_MESSAGES[message["type"]].model_validate(message)

        # A read-only client of a second table, across a SIGKILL: clock.paused (restart).
        status, _ = server.post("/api/tables", {"id": "r", "players": ["A", "B"]}, TOKEN)
        assert status == 201
        assert server.command("r", "start", token=TOKEN)[0] == 200
        # Killed while running: it comes back paused (reason "restart") from its last
        # heartbeat or, before the first, from clock.started (the runtime takes the later).
        server.kill()
        server.start()
        with connect(f"{server.ws_url}/ws/tables/r?since=0") as ws:
            rec = Recorder(ws)
            snapshot = rec.receive()
            assert snapshot["referee"] is False
            replay = [rec.receive() for _ in range(snapshot["seq"])]
            assert replay[-1]["data"]["reason"] == "restart"
            refused = rec.command("pause")[-1]
            assert (refused["status"], refused["error"]["code"]) == (401, "unauthorized")
            # Archived: table.archived is its last event, then the close (4404).
            status, archived = server.delete("/api/tables/r", TOKEN)
            assert status == 200 and archived["archived_as"] == "r~1", archived
            last = rec.until(lambda m: m["type"] == "table.archived")[-1]
            assert last["data"] == {"archived_as": "r~1"}
            with pytest.raises(ConnectionClosed) as gone:
                rec.receive()
            assert gone.value.rcvd is not None and gone.value.rcvd.code == 4404
            raw += rec.raw

        # Connect errors: unknown table (error, then 4404), wrong token (refused: 403).
        with connect(f"{server.ws_url}/ws/tables/nope") as ws:
            rec = Recorder(ws)
            assert rec.receive()["error"]["code"] == "unknown_table"
            with pytest.raises(ConnectionClosed) as closed:
                rec.receive()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 4404
            raw += rec.raw
        with pytest.raises(InvalidStatus), connect(
                f"{server.ws_url}/ws/tables/c", subprotocols=[Subprotocol("bearer.wrong")]):
            pass
    finally:
        server.stop()

    seen = validate_all(raw)
    assert seen == set(SERVER_MESSAGES), f"never received: {set(SERVER_MESSAGES) - seen}"
