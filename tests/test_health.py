"""The status and faults channel (clock_service/service/status.py, TEAM convention 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clock_service.service.hub import Subscriber
from clock_service.service.runtime import Runtime
from clock_service.service.status import Health
from clock_service.service.storage import Store
from clock_service.service.timesource import FakeTime


def test_components_show_each_provider_and_survive_a_broken_one() -> None:
    health = Health(lambda: 1000.0)
    health.register("mqtt", lambda: {"connected": True})

    def broken() -> dict[str, Any]:
        raise OSError("no such device")

    health.register("camera", broken)
    assert health.components() == {"mqtt": {"connected": True},
                                   "camera": {"error": "OSError: no such device"}}
    health.unregister("camera")
    assert list(health.components()) == ["mqtt"]


def test_faults_are_told_once_per_change_and_filtered_by_table() -> None:
    now = [1000.0]
    health = Health(lambda: now[0])
    told: list[str | None] = []
    health.listeners.append(told.append)
    health.fault("hw.display.1", component="hardware", code="display_silent",
                 message="no ack", table="1")
    health.fault("hw.display.1", component="hardware", code="display_silent",
                 message="no ack", table="1")  # the same again: nothing to tell
    now[0] = 2500.0
    health.fault("mqtt", component="mqtt", code="broker_down", message="refused")
    assert told == ["1", None]
    assert [f["key"] for f in health.faults("1")] == ["hw.display.1", "mqtt"]
    assert [f["key"] for f in health.faults("2")] == ["mqtt"]
    assert [f["key"] for f in health.faults()] == ["hw.display.1", "mqtt"]
    # An update keeps the time it was first raised; moving it tells both tables.
    now[0] = 4000.0
    health.fault("hw.display.1", component="hardware", code="display_silent",
                 message="no ack for 3 s", table="2")
    assert told[-2:] == ["1", "2"]
    (fault,) = [f for f in health.faults("2") if f["key"] == "hw.display.1"]
    assert fault == {"key": "hw.display.1", "component": "hardware", "code": "display_silent",
                     "message": "no ack for 3 s", "table": "2", "since": 1000,
                     "level": "error"}
    health.clear("hw.display.1")
    health.clear("hw.display.1")  # already clear: nothing to tell
    assert told[-1] == "2" and len(told) == 5
    assert [f["key"] for f in health.faults()] == ["mqtt"]


def drain(sub: Subscriber) -> list[dict[str, Any]]:
    out = []
    while not sub.queue.empty():
        item = sub.queue.get_nowait()
        assert item is not None
        out.append(json.loads(item[1]))
    return out


@pytest.fixture
async def rt(tmp_path: Path):
    runtime = Runtime(Store(tmp_path / "clock.db"), FakeTime())
    await runtime.start(default_table=None)
    yield runtime
    await runtime.stop()


async def test_status_messages_reach_the_clients_of_the_tables_concerned(rt: Runtime) -> None:
    await rt.create_table("a", ["A", "B"])
    await rt.create_table("b", ["A", "B"])
    sub_a, sub_b = rt.hub.subscribe("a"), rt.hub.subscribe("b")
    rt.health.fault("cam.a", component="camera", code="camera_unsure", message="blurred",
                    table="a")
    assert drain(sub_a) == [rt.status_message("a")]
    assert drain(sub_a) == [] and drain(sub_b) == []
    assert rt.status_message("a")["faults"][0]["code"] == "camera_unsure"
    rt.health.fault("mqtt", component="mqtt", code="broker_down", message="refused")
    (to_a,), (to_b,) = drain(sub_a), drain(sub_b)
    assert [f["key"] for f in to_a["faults"]] == ["cam.a", "mqtt"]
    assert (to_b["table"], [f["key"] for f in to_b["faults"]]) == ("b", ["mqtt"])
    rt.health.clear("cam.a")
    assert [m["faults"] for m in drain(sub_a)] == [rt.health.faults("a")]
    assert drain(sub_b) == []
    assert rt.health.components()["store"]["writable"] is True
