"""A power cut, as the referee sees it (docs/RULES.md I19): a real ``shotclock serve`` is
killed while its clock runs and its proof of life in memory (tmpfs) is removed, as a power
cut removes it; started again, the clock is paused with the time of its last saved event,
and the console says, in ru and en, that the power was lost and to check the time, until
the referee's next command."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from clock_service.service.storage.heartbeat import MEMORY_DIRS
from tests.browser.conftest import PHONE, Traffic, make_table, shoot
from tests.server import ServerProcess

pytestmark = pytest.mark.browser


def alive_files(db: Path) -> list[Path]:
    """The service's proof of life in memory (storage/heartbeat.py names it by the path)."""
    key = hashlib.sha256(str(db.resolve()).encode()).hexdigest()[:16]
    return [p for p in (Path(d) / f"shotclock-{key}.alive" for d in MEMORY_DIRS) if p.exists()]


def test_after_a_power_cut_the_console_says_check_the_time(
        tmp_path: Path, context: Any, traffic: Traffic) -> None:
    server = ServerProcess(tmp_path / "clock.db").start()
    try:
        make_table(server, "p", profile={"shot_ms": 60_000, "floor_ms": 30_000})
        status, started = server.command("p", "start")
        assert status == 200, started
        assert alive_files(server.db)  # written at start
        server.kill()  # SIGKILL: the machine goes down ...
        for path in alive_files(server.db):
            path.unlink(missing_ok=True)  # ... and memory with it (/run/shm: a link)
        server.start()
        state = server.get("/api/tables/p")
        assert state["phase"] == "paused"
        assert 0 < state["remaining_ms"] <= 60_000
        last = server.get("/api/tables/p/events?since=0")[-1]
        assert (last["type"], last["data"]["reason"]) == ("clock.paused", "power_lost")
        faults = [f for f in server.get("/api/health")["faults"] if f["code"] == "power_lost"]
        assert len(faults) == 1 and faults[0]["table"] == "p", faults
        at = faults[0]["vars"]["at"]
        page = context.new_page()
        page.set_viewport_size(PHONE)
        page.goto(f"{server.url}/referee?table=p&lang=en")
        fault = page.locator("#status .fault[data-code='power_lost']")
        expect(fault).to_contain_text(f"the power was lost at about {at} UTC", timeout=10_000)
        expect(fault).to_contain_text("check the time")
        expect(fault).to_have_attribute("data-level", "warning")
        shoot(page, "console-power-lost-phone-en")
        page.locator("#lang").click()
        expect(fault).to_contain_text(f"питание пропадало около {at} UTC")
        shoot(page, "console-power-lost-phone-ru")
        # The referee resumes: the notice goes.
        status, _ = server.command("p", "resume")
        assert status == 200
        expect(page.locator("#status .fault[data-code='power_lost']")).to_have_count(
            0, timeout=10_000)
        assert not [f for f in server.get("/api/health")["faults"]
                    if f["code"] == "power_lost"]
        page.close()
    finally:
        server.stop()
    assert traffic.errors == [], json.dumps(traffic.errors)
