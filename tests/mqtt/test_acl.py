"""The role accounts' broker authorisation (harness/roles.acl), enforced by a real
Mosquitto with a password file: issue 13 point 3, "referees may publish commands;
overlays and the hall may only subscribe" (the hall may also forward commands and ask for
replays, never publish a table's own topics). The shipped config, one account per Pi:
tests/mqtt/test_accounts.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clock_service.edges.mqtt.publisher import MqttPublisher
from clock_service.edges.mqtt.topics import parse_url
from clock_service.service.runtime import Runtime
from tests.broker import Broker
from tests.mqtt.conftest import ROLES, settings
from tests.mqtt.watcher import Watcher
from tests.waiting import until_async

pytestmark = pytest.mark.mqtt

NOT_AUTHORIZED = 135
DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "mosquitto"
ROOT = "shotclock/v1/hall/tables/1"



def login(broker: Broker, role: str, client_id: str | None = None) -> Watcher:
    return Watcher(broker.port, user=role, password=ROLES[role], client_id=client_id)


async def test_only_referees_command_and_nobody_else_speaks_for_a_table(
        runtime: Runtime, secured_broker: Broker) -> None:
    broker = secured_broker
    url = broker.url(user="table", password=ROLES["table"])
    publisher = MqttPublisher(runtime, parse_url(url), settings(referee_token="tok"))
    await publisher.start()
    await until_async(lambda: publisher.tables["1"].feed.acked == 2)  # the table may publish
    overlay = login(broker, "overlay")
    referee = login(broker, "referee", client_id="desk")
    hall = login(broker, "hall")
    try:
        overlay.subscribe(f"{ROOT}/#")  # granted, but the broker delivers only what it may read
        referee.subscribe("shotclock/v1/hall/replies/desk")
        command = json.dumps({"command": "start", "token": "tok"})

        # An overlay (subscriber only) cannot publish a command: the broker refuses it.
        assert overlay.publish(f"{ROOT}/commands", command) == NOT_AUTHORIZED

        # A referee can; the reply comes back on its own response topic. Its start is
        # accepted: the overlay's, refused by the broker before it, never reached the table.
        assert referee.publish(f"{ROOT}/commands", command,
                               response_topic="shotclock/v1/hall/replies/desk",
                               correlation=b"1") < 128
        await until_async(lambda: any(m.topic.endswith("/replies/desk") for m in referee.messages))
        reply = next(m for m in referee.messages if m.topic.endswith("/replies/desk")).json()
        assert "error" not in reply, reply
        assert runtime.state("1")["phase"] == "running"

        # Nobody but the table publishes its events, state or status.
        for who in (overlay, referee, hall):
            for kind in ("events", "state", "status"):
                assert who.publish(f"{ROOT}/{kind}", b"{}") == NOT_AUTHORIZED, kind
        # The overlay saw the table's events, and never a command (they carry the token),
        # nor the referee's reply.
        await until_async(lambda: [m.json()["type"] for m in overlay.on(f"{ROOT}/events")] == [
                  "clock.started"])
        seen = {m.topic.rsplit("/", 1)[1] for m in overlay.messages}
        assert seen <= {"events", "state", "status"}
        assert all(m.json()["seq"] for m in overlay.on(f"{ROOT}/events"))
        # Another client cannot read the referee's replies (each reads only its own).
        with login(broker, "referee", client_id="spy") as spy:
            spy.subscribe("shotclock/v1/hall/replies/desk")
            spy.subscribe("shotclock/v1/hall/replies/spy")  # its own: it may read that
            referee.publish(f"{ROOT}/commands", json.dumps({"command": "pause", "token": "tok"}),
                            response_topic="shotclock/v1/hall/replies/desk", correlation=b"2")
            await until_async(lambda: sum(m.topic.endswith("/desk") for m in referee.messages) == 2)
            # Proof that the desk's reply would have reached the spy by now: the table
            # answers on one connection, in order, and the broker queues to each client in
            # the order it routed; so a reply to the spy's own request, asked after the
            # desk's reply was out, comes after anything of the desk's it was sent.
            spy.publish(f"{ROOT}/commands", json.dumps({"command": "fly", "token": "tok"}),
                        response_topic="shotclock/v1/hall/replies/spy", correlation=b"3")
            got = await until_async(lambda: [m for m in list(spy.messages)
                                             if m.topic.endswith("/replies/spy")],
                                    what="the spy's own reply")
            assert got[0].correlation == b"3" and got[0].json()["error"]["code"] == \
                "unknown_command", got[0]
            assert [m.topic for m in spy.messages] == ["shotclock/v1/hall/replies/spy"]
    finally:
        for client in (overlay, referee, hall):
            client.close()
        await publisher.close()


def test_a_wrong_password_is_refused(secured_broker: Broker) -> None:
    with pytest.raises(ConnectionRefusedError, match="Not authorized"):
        Watcher(secured_broker.port, user="overlay", password="nope")
