"""The MQTT half of docs/asyncapi.json against a real broker: every message a table's
service publishes during a frame played over MQTT (events, state, status, replies) and
every request sent to it matches, strictly, the model the document names for its channel;
every topic used is one of the document's channel addresses."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from pydantic import BaseModel

from clock_service.edges.api.asyncapi import MQTT_MESSAGES, SERVER_MESSAGES, build_asyncapi
from clock_service.edges.mqtt.publisher import MqttPublisher
from clock_service.edges.mqtt.topics import parse_url
from clock_service.service.runtime import Runtime
from clock_service.service.wire.commands import PingMessage
from clock_service.service.wire.mqtt import MqttStatus
from clock_service.service.wire.state import WsTableState
from tests.broker import Broker
from tests.mqtt.conftest import settings
from tests.mqtt.watcher import Watcher
from tests.waiting import until_async

pytestmark = pytest.mark.mqtt

TOKEN = "tok"
ROOT = "shotclock/v1/hall/tables/c"
REPLIES = "shotclock/v1/hall/replies/desk"
# A minute's shot: each press is answered over the broker long before the clock could run
# out on a loaded machine; the shot that must run out is set to 0.4 s (set_time) instead.
SHORT = {"shot_ms": 60_000, "full_rounds": 1, "step_ms": 100, "floor_ms": 30_000,
         "extension_ms": 300, "warnings_ms": [300, 150]}


def addresses() -> list[re.Pattern[str]]:
    channels = build_asyncapi()["channels"].values()
    return [re.compile("^" + re.sub(r"\\{\w+\\}", "[^/]+", re.escape(c["address"])) + "$")
            for c in channels if not c["address"].startswith("/")]



async def test_every_mqtt_message_of_a_frame_matches_the_document(
        runtime: Runtime, broker: Broker) -> None:
    await runtime.create_table("c", ["Ivanov", "Petrov"], profile=SHORT)
    publisher = MqttPublisher(runtime, parse_url(broker.url()), settings(referee_token=TOKEN))
    sent: list[tuple[type[BaseModel], dict[str, Any]]] = []
    with Watcher(broker.port, client_id="desk") as desk:
        desk.subscribe("shotclock/v1/hall/#")
        await publisher.start()
        await until_async(lambda: len(desk.on(f"{ROOT}/events")) == 2)

        async def ask(message: dict[str, Any], model: type[BaseModel],
                      response_topic: str | None = REPLIES) -> dict[str, Any]:
            sent.append((model, message))
            where = response_topic or f"{ROOT}/replies"
            before = len(desk.on(where))
            desk.publish(f"{ROOT}/commands", json.dumps(message),
                         response_topic=response_topic, correlation=b"x")
            await until_async(lambda: len(desk.on(where)) > before)
            reply: dict[str, Any] = desk.on(where)[-1].json()
            return reply

        async def ok(command: str, **fields: Any) -> None:
            reply = await ask({"command": command, "id": command, "token": TOKEN, **fields},
                              MQTT_MESSAGES["mqttCommand"])
            assert reply["type"] == "ack", reply

        for name in ("start", "extension", "pause", "resume", "shot", "turn"):
            await ok(name)
        await ok("foul", reason="touched a ball")
        await ok("hand_back")
        await ok("start")
        await ok("set_time", remaining_ms=400)
        # Petrov runs out: his second foul of the frame, a technical loss (10.5).
        await until_async(lambda: any(m.json()["type"] == "frame.ended"
                                      for m in desk.on(f"{ROOT}/events")), 5)
        refused = await ask({"type": "command", "command": "extension", "token": TOKEN},
                            MQTT_MESSAGES["mqttCommand"])
        assert refused["type"] == "error" and refused["status"] == 409
        pong = await ask({"type": "ping", "id": 1, "client_time": 5.0}, PingMessage,
                         response_topic=None)
        assert pong["type"] == "pong"
        await ok("new_frame")
        replay = {"type": "replay", "since": 3}
        sent.append((MQTT_MESSAGES["mqttReplay"], replay))
        before = len(desk.on(f"{ROOT}/events"))
        desk.publish(f"{ROOT}/replay", json.dumps(replay))
        await until_async(lambda: len(desk.on(f"{ROOT}/events")) > before)
        await until_async(lambda: desk.on(f"{ROOT}/state")[-1].json()["seq"]
                          == runtime.state("c")["seq"])
        await publisher.close()
        await until_async(lambda: desk.on(f"{ROOT}/status")[-1].payload == b"offline")
        got = list(desk.messages)

    patterns = addresses()
    kinds: set[str] = set()
    for message in got:
        if message.topic.startswith("shotclock/v1/hall/tables/1/"):
            continue  # the default table: the same, not needed twice
        assert any(p.match(message.topic) for p in patterns), message.topic
        kind = message.topic.rsplit("/", 1)[1]
        if message.topic.startswith(REPLIES):
            kind = "replies"
        kinds.add(kind)
        if kind == "status":
            MqttStatus.model_validate(message.payload.decode())
            continue
        body = message.payload.decode()
        if kind == "state":
            WsTableState.model_validate_json(body, strict=True)
        elif kind in ("events", "replies"):
            SERVER_MESSAGES[json.loads(body)["type"]].model_validate_json(body, strict=True)
        else:
            assert kind in ("commands", "replay")
    assert kinds == {"events", "state", "status", "commands", "replies", "replay"}
    for model, request in sent:
        model.model_validate(request)
