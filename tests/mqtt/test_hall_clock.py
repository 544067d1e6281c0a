"""The hall says when a table's clock is off its own (a Pi without NTP: it has no real-time
clock): the deadlines in the events are on the table's clock, so the hall's pages would
count down to the wrong instant. In-process: a table runtime whose clock reads an hour
late, its publisher, the hall runtime, a real broker."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from clock_service.core.commands import Pause, Resume, Start
from clock_service.edges.mqtt.hall import HallRuntime
from clock_service.edges.mqtt.publisher import MqttPublisher
from clock_service.edges.mqtt.topics import parse_url
from clock_service.service.hub import Hub
from clock_service.service.runtime import Runtime
from clock_service.service.storage import Store
from clock_service.service.timesource import RealTime
from tests.broker import Broker
from tests.mqtt.conftest import settings
from tests.waiting import until_async

pytestmark = pytest.mark.mqtt

HOUR_MS = 3_600_000.0



@pytest.mark.parametrize("late_by_ms", [HOUR_MS, 0.0])
async def test_a_table_clock_off_the_halls_is_a_fault(tmp_path: Path, broker: Broker,
                                                      late_by_ms: float) -> None:
    table_time = RealTime()
    table_time._offset_ms -= late_by_ms  # this Pi's clock reads an hour late
    table = Runtime(Store(tmp_path / "table.db"), table_time)
    await table.start(default_table="7")
    target = parse_url(broker.url())
    publisher = MqttPublisher(table, target, settings())
    hall = HallRuntime(Store(tmp_path / "hall.db"), RealTime(), Hub(), target, settings(),
                       client_id="hall-test")
    await hall.start()
    try:
        await publisher.start()
        await until_async(lambda: "7" in hall.tables and hall.tables["7"].published_seq == 2)
        await table.command("7", Start())
        for _ in range(6):  # live events, a few ms apart
            for command in (Pause(), Resume()):
                await table.command("7", command)
                await asyncio.sleep(0.02)  # real time is the data: live samples, spaced
        await until_async(lambda: hall.tables["7"].published_seq == table.tables["7"].published_seq)
        offset = hall.skews["7"].offset_ms
        assert offset is not None and late_by_ms <= offset < late_by_ms + 1000
        faults = [f for f in hall.health.faults("7") if f["code"] == "table_clock_off"]
        if late_by_ms:
            assert len(faults) == 1 and "3600 s behind" in faults[0]["message"], faults
        else:
            assert faults == []
    finally:
        await publisher.close()
        await hall.stop()
        await table.stop()
