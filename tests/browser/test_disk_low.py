"""The store's disk running low (issue 19, "Low disk space raises a fault on the console
and in /api/health well before writes fail"): ``shotclock serve``'s service whose
``SHOTCLOCK_DISK_LOW_MB`` is above the free space of its disk (the check is a statvfs of
the store's directory, at start and every minute), and one whose setting is below it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from harness.thread_server import ThreadServer
from tests.browser.conftest import PHONE, Traffic, shoot

pytestmark = pytest.mark.browser


def free_mb(path: Path) -> int:
    return shutil.disk_usage(path).free // 1_000_000


def test_the_console_and_health_say_disk_low_below_the_setting(
        tmp_path: Path, context: Any, traffic: Traffic) -> None:
    for name in ("low", "ok"):
        (tmp_path / name).mkdir()
    low = ThreadServer(tmp_path / "low" / "clock.db", env={
        "SHOTCLOCK_DISK_LOW_MB": str(free_mb(tmp_path) + 100_000)})  # 100 GB more than free
    low.start()
    try:
        faults = [f for f in low.get("/api/health")["faults"] if f["code"] == "disk_low"]
        assert len(faults) == 1, faults
        assert faults[0]["component"] == "store" and "SHOTCLOCK_DISK_LOW_MB" in faults[0]["message"]
        page = context.new_page()
        page.set_viewport_size(PHONE)
        page.goto(f"{low.url}/referee?table=1&lang=en")
        fault = page.locator("#status .fault[data-code='disk_low']")
        expect(fault).to_contain_text("the store's disk is nearly full", timeout=10_000)
        expect(fault).to_have_attribute("data-level", "error")
        shoot(page, "console-disk-low-phone-en")
        page.locator("#lang").click()
        expect(fault).to_contain_text("на диске журнала почти нет места")
        shoot(page, "console-disk-low-phone-ru")
        # The clock still runs: a command is answered and stored.
        status, _ = low.command("1", "start")
        assert status == 200
        page.close()  # before its server stops (it would try to reconnect)
    finally:
        low.stop()
    ok = ThreadServer(tmp_path / "ok" / "clock.db", env={"SHOTCLOCK_DISK_LOW_MB": "1"})
    ok.start()
    try:
        assert not [f for f in ok.get("/api/health")["faults"] if f["code"] == "disk_low"]
        page = context.new_page()
        page.goto(f"{ok.url}/referee?table=1&lang=en")
        page.wait_for_function("window.shotclockConnection.status === 'live'")
        expect(page.locator("#status .fault")).to_have_count(0)
        page.close()
    finally:
        ok.stop()
    assert traffic.errors == [], json.dumps(traffic.errors)
