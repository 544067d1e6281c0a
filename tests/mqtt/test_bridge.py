"""Past one hall (issue 13 point 6): the hall's broker bridged to an upstream broker with
the shipped example (deploy/mosquitto/bridge.conf.example, its address pointed at a second
local Mosquitto). A subscriber on the upstream sees every event of the hall, in order,
and the retained state; nothing comes down: the upstream cannot command a table."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from clock_service.core.commands import Pause, Resume, Start
from clock_service.edges.mqtt.publisher import MqttPublisher
from clock_service.edges.mqtt.topics import parse_url
from clock_service.service.runtime import Runtime
from tests.broker import Broker
from tests.mqtt.conftest import settings
from tests.mqtt.watcher import Watcher
from tests.waiting import until_async

pytestmark = pytest.mark.mqtt

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "mosquitto" / "bridge.conf.example"


def bridge_config(upstream_port: int) -> str:
    """The shipped example for hall "hall", to a local upstream without TLS or password."""
    lines = []
    for line in EXAMPLE.read_text().splitlines():
        key = line.split(" ", 1)[0]
        if key in ("bridge_capath", "remote_username", "remote_password"):
            continue
        if key == "address":
            line = f"address 127.0.0.1:{upstream_port}"
        lines.append(line.replace("main-hall", "hall"))
    return "\n".join(lines) + "\n"



async def test_a_subscriber_upstream_sees_every_event(runtime: Runtime, tmp_path: Path) -> None:
    upstream = Broker(tmp_path, name="upstream").start()
    hall_broker = Broker(tmp_path, name="hall", extra=bridge_config(upstream.port)).start()
    publisher = None
    production = Watcher(upstream.port)
    try:
        production.subscribe("shotclock/v1/+/tables/+/events")
        # The bridge connects within a moment; wait for it to carry a probe from the hall.
        with Watcher(hall_broker.port) as probe:
            deadline = time.monotonic() + 15
            while not production.on("shotclock/v1/hall/tables/probe/events"):
                assert time.monotonic() < deadline, "the bridge did not come up"
                probe.publish("shotclock/v1/hall/tables/probe/events", b'{"seq": 0}')
                await asyncio.sleep(0.2)
        publisher = MqttPublisher(runtime, parse_url(hall_broker.url()), settings())
        await publisher.start()
        for command in (Start(), Pause(), Resume(), Pause()):
            await runtime.command("1", command)
        events = "shotclock/v1/hall/tables/1/events"
        await until_async(lambda: len(production.on(events)) == 6, timeout=15)
        got = [(m.json()["seq"], m.payload.decode()) for m in production.on(events)]
        stored = runtime.store.event_texts("1", 0, 100, batch=True)
        # every event, in order, as is: as stored with their batch (the two sent from the
        # store at start) or as stored with the state spliced in (the live ones)
        assert [seq for seq, _ in got] == [seq for seq, _ in stored] == [1, 2, 3, 4, 5, 6]
        for (_, payload), (_, text) in zip(got, stored, strict=True):
            lean = text.split(',"batch":')[0] if ',"batch":' in text else text[:-1]
            assert payload == text or payload.startswith(lean + ',"state":{'), payload
        # Retained state upstream for a production that tunes in later.
        with Watcher(upstream.port) as late:
            late.subscribe("shotclock/v1/hall/tables/1/state")
            late.wait_for(lambda ms: bool(ms) and ms[-1].json()["seq"] == 6)
        # Nothing comes down: a command published upstream never reaches the hall's broker
        # (nor the table). Proof that it would have: the upstream routed it (production,
        # subscribed too, gets it back, and a bridge subscribed to it upstream would have
        # been sent it then), and a probe sent up through the bridge after that has arrived.
        commands = "shotclock/v1/hall/tables/1/commands"
        with Watcher(hall_broker.port) as hall_side:
            hall_side.subscribe(commands)
            production.subscribe(commands)
            production.publish(commands, json.dumps({"command": "resume"}))
            await until_async(lambda: production.on(commands), timeout=15)
            probe_topic = "shotclock/v1/hall/tables/probe/events"
            probes = len(production.on(probe_topic))
            hall_side.publish(probe_topic, b'{"seq": 0}')
            await until_async(lambda: len(production.on(probe_topic)) > probes, timeout=15)
            assert hall_side.on(commands) == []
        assert runtime.state("1")["phase"] == "paused"
    finally:
        production.close()
        if publisher is not None:
            await publisher.close()
        hall_broker.stop()
        upstream.stop()
