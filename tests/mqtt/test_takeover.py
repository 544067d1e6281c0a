"""Issue 20, finding 1: a client that logs in with a table's (or the hall's) client id just
while the connection waits for its SUBACK. The broker hands the id over and disconnects
the old connection; the pending SUBACK future was cancelled, the ``CancelledError`` went
past ``except Exception``, and the publisher (or the hall's follower) died for good: 503
``table_unreachable`` on every command through the hall. Now the loop reconnects (the
fault heals). A relay between the service and a real Mosquitto holds the SUBACK back so
that the takeover lands in that window every time."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from clock_service.edges.mqtt.publisher import MqttPublisher, client_id_of
from clock_service.edges.mqtt.topics import parse_url
from clock_service.service.runtime import Runtime
from tests.broker import Broker
from tests.mqtt.conftest import settings
from tests.mqtt.proxy import Relay
from tests.mqtt.watcher import Watcher
from tests.server import ServerProcess
from tests.waiting import until, until_async

pytestmark = pytest.mark.mqtt



@pytest.fixture
def relay(broker: Broker) -> Iterator[Relay]:
    r = Relay(broker.port).start()
    try:
        yield r
    finally:
        r.stop()


async def test_a_takeover_while_subscribing_ends_the_connection_not_the_publisher(
        runtime: Runtime, broker: Broker, relay: Relay) -> None:
    relay.hold_suback.set()
    publisher = MqttPublisher(runtime, parse_url(f"mqtt://127.0.0.1:{relay.port}/hall"),
                              settings())
    await publisher.start()
    table = publisher.tables["1"]
    try:
        await until_async(relay.held.is_set, timeout=15, what="the publisher's SUBACK to be held")
        # The attacker logs in with the table's documented client id, directly.
        attacker = await asyncio.to_thread(Watcher, broker.port,
                                           client_id=client_id_of("hall", "1"))
        try:
            # The publisher comes back by itself (and takes its id back).
            await until_async(lambda: table.conn is not None and table.feed.acked >= 2,
                              timeout=15, what="the publisher to reconnect")
            assert table._task is not None and not table._task.done()
            assert table.connects >= 1
        finally:
            await asyncio.to_thread(attacker.close)
        # And it still publishes: a command's events reach the broker.
        with Watcher(broker.port) as watcher:
            watcher.subscribe("shotclock/v1/hall/tables/1/events")
            from clock_service.core.commands import Start

            await runtime.command("1", Start())
            await until_async(lambda: any(m.json()["type"] == "clock.started"
                                          for m in watcher.messages),
                              timeout=15, what="clock.started")
    finally:
        await publisher.close()


def test_a_takeover_of_the_halls_id_while_subscribing_heals(tmp_path: Path,
                                                            broker: Broker) -> None:
    relay = Relay(broker.port).start()
    relay.hold_suback.set()
    hall = ServerProcess(tmp_path / "hall.db", subcommand="hall", env={
        "SHOTCLOCK_MQTT_URL": f"mqtt://127.0.0.1:{relay.port}/h",
        "SHOTCLOCK_DEFAULT_TABLE": ""}, args=[])
    table = ServerProcess(tmp_path / "table.db", env={
        "SHOTCLOCK_MQTT_URL": broker.url("h"), "SHOTCLOCK_DEFAULT_TABLE": "7"})
    try:
        hall.start()
        assert relay.held.wait(15), "the hall's SUBACK was not held"
        hall_id = hall.get("/api/health")["components"]["mqtt"].get("client_id")
        assert hall_id, "the hall's health names its client id"
        with Watcher(broker.port, client_id=hall_id):
            until(lambda: hall.get("/api/health")["components"]["mqtt"]["connected"], 15, 0.05,
                  "the hall to reconnect")
        table.start()
        until(lambda: [t for t in hall.get("/api/tables") if t["table"] == "7"], 15, 0.05,
              "the hall to mirror table 7")
        status, body = hall.command("7", "start")
        assert status == 200, body
    finally:
        table.stop()
        hall.stop()
        relay.stop()
