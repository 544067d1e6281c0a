"""harness/suite.py, the runner of `make test`: the rest's processes in sessions of their own
(Chromium's, under Playwright) get the rest's niceness, and the suite's own session keeps
its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from harness.suite import _lower_sessions

AUTOGROUP = Path("/proc/sys/kernel/sched_autogroup_enabled")
pytestmark = pytest.mark.skipif(
    not AUTOGROUP.exists() or AUTOGROUP.read_text().strip() != "1",
    reason="the kernel's autogroups are off here (or not Linux): niceness is global")

# A parent in this session with two children: one in a session of its own, one not.
FAMILY = """
import subprocess, sys, time
sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
apart = subprocess.Popen(sleep, start_new_session=True)
near = subprocess.Popen(sleep)
print(apart.pid, near.pid, flush=True)
time.sleep(60)
"""


def autogroup(pid: int) -> str:
    return Path(f"/proc/{pid}/autogroup").read_text().strip()  # "/autogroup-672 nice 0"


def test_a_session_of_its_own_is_lowered_and_ours_is_not() -> None:
    ours = autogroup(os.getpid())
    parent = subprocess.Popen([sys.executable, "-c", FAMILY], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        apart, near = (int(pid) for pid in parent.stdout.readline().split())
        # (not asserting its nice 0 first: under make test, the suite lowers it too)
        assert autogroup(apart).split()[0] != ours.split()[0]
        lowered: set[str] = set()
        _lower_sessions(parent.pid, 10, lowered)
        assert autogroup(apart).endswith("nice 10")
        assert autogroup(near) == autogroup(parent.pid) == ours  # this session: untouched
        assert lowered == {autogroup(apart).split()[0]}
    finally:
        for child in psutil.Process(parent.pid).children(recursive=True):
            child.kill()
        parent.kill()
        parent.wait()
