from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from clock_service.service.runtime import Runtime
from clock_service.service.settings import Settings
from clock_service.service.storage import Store
from clock_service.service.timesource import RealTime
from harness.broker import ACL, ROLES, Broker, mosquitto_missing

pytestmark = pytest.mark.mqtt

# The shared role accounts (ROLES, harness/roles.acl): harness/broker.py.


def need_mosquitto() -> None:
    # Like the browser tests: fail (not skip) with how to install it. `make test` does.
    if mosquitto_missing():
        pytest.fail("mosquitto is not installed (run `make test-deps` as root or "
                    "`apt-get install mosquitto`)", pytrace=False)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    """A real Mosquitto on a free loopback port, anonymous access."""
    need_mosquitto()
    b = Broker(tmp_path).start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture
def secured_broker(tmp_path: Path) -> Iterator[Broker]:
    """A real Mosquitto with the role ACL (harness/roles.acl) and one account per
    role."""
    need_mosquitto()
    b = Broker(tmp_path, users=ROLES, acl=ACL.read_text()).start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    """An in-process runtime on a real SQLite file and real time, table "1" created."""
    rt = Runtime(Store(tmp_path / "table.db"), RealTime())
    await rt.start(default_table="1")
    try:
        yield rt
    finally:
        await rt.stop()


def settings(**overrides: object) -> Settings:
    return Settings(**overrides)  # type: ignore[arg-type]
