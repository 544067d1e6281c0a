"""The MQTT doors under the access table (issue 35 point 1): every message type of a
table's commands topic (clock_service/service/access.py ``MESSAGES``), sent through a real
Mosquitto with each kind of credential — none, a revoked token, a referee of another
table, a referee of this table, the director — answers as declared; the same envelope as
the WebSocket's (clock_service/service/envelope.py). A command that is let in is recorded
with the credential's name as its source."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clock_service.edges.mqtt.publisher import MqttPublisher
from clock_service.edges.mqtt.topics import parse_url
from clock_service.service import access
from clock_service.service.access import Who
from clock_service.service.auth import Authority
from clock_service.service.runtime import Runtime
from tests.broker import Broker
from tests.mqtt.conftest import settings
from tests.mqtt.watcher import Watcher
from tests.waiting import until_async

pytestmark = pytest.mark.mqtt

DIRECTOR = "director-token-for-the-mqtt-access-test"
ROOT = "shotclock/v1/hall/tables/1"
REPLIES = "shotclock/v1/hall/replies/desk"
EXPECTED = {  # who -> credential -> the error status, or None: let in
    Who.ANYONE: {},
    Who.TABLE_REFEREE: {"none": 401, "revoked": 401, "other_referee": 403},
}


async def test_every_mqtt_message_answers_each_credential_as_declared(
        runtime: Runtime, broker: Broker) -> None:
    assert set(access.MESSAGES) == {"ping", "command"}  # the table this test plays
    authority = Authority(DIRECTOR)
    _, referee = authority.issue("referee", ["1"], "table 1 referee")
    _, other = authority.issue("referee", ["2"], "table 2 referee")
    record, revoked = authority.issue("referee", ["1"], "former referee")
    authority.revoke(record["id"])
    tokens: dict[str, str | None] = {"none": None, "revoked": revoked,
                                     "other_referee": other, "referee": referee,
                                     "director": DIRECTOR}
    publisher = MqttPublisher(runtime, parse_url(broker.url()),
                              settings(referee_token=DIRECTOR), authority=authority)
    with Watcher(broker.port, client_id="desk") as desk:
        desk.subscribe("shotclock/v1/hall/#")
        await publisher.start()
        await until_async(lambda: len(desk.on(f"{ROOT}/state")) >= 1)

        async def ask(message: dict[str, Any]) -> dict[str, Any]:
            before = len(desk.on(REPLIES))
            desk.publish(f"{ROOT}/commands", json.dumps(message), response_topic=REPLIES,
                         correlation=b"x")
            await until_async(lambda: len(desk.on(REPLIES)) > before)
            reply: dict[str, Any] = desk.on(REPLIES)[-1].json()
            return reply

        wrong = []
        for kind, door in access.MESSAGES.items():
            for credential, token in tokens.items():
                message: dict[str, Any] = {"type": kind, "id": f"{kind}-{credential}"}
                if kind == "command":
                    message.update(command="foul", reason=f"mqtt access {credential}")
                if token is not None:
                    message["token"] = token
                reply = await ask(message)
                refused = EXPECTED[door.who].get(credential)
                if refused is None and reply["type"] not in ("ack", "pong"):
                    wrong.append((kind, credential, reply))
                if refused is not None and (reply["type"] != "error"
                                            or reply["status"] != refused):
                    wrong.append((kind, credential, reply))
        await publisher.close()
    assert wrong == []
    fouls = [e for e in runtime.store.events_since("1", 0) if e.get("type") == "foul"]
    sources = {e.get("source") for e in fouls}
    assert sources == {"mqtt:table 1 referee", "mqtt"}, sources  # the referee's and the director's
