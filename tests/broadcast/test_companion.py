"""The Bitfocus Companion module (integrations/companion) against a real ``shotclock
serve``: node's own test runner runs its tests (test/*.test.js), which fork the module as
Companion does and press its buttons. Skipped, saying so, only where npm is not installed;
the node dependencies come from the committed package-lock.json (``npm ci``, which ``make
test`` runs; done here too when they are missing)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.thread_server import ThreadServer
from tests.server import ROOT

pytestmark = pytest.mark.e2e

MODULE = ROOT / "integrations" / "companion"
TOKEN = "companion-t0ken"
PROFILE = {"shot_ms": 2500, "full_rounds": 1, "step_ms": 500, "floor_ms": 2000,
           "extension_ms": 5000, "warnings_ms": [2000]}


def node_modules() -> None:
    installed = MODULE / "node_modules" / ".package-lock.json"
    lock = MODULE / "package-lock.json"
    if installed.exists() and installed.stat().st_mtime >= lock.stat().st_mtime:
        return
    run = subprocess.run(["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund"],
                         cwd=MODULE, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]


@pytest.mark.skipif(shutil.which("npm") is None or shutil.which("node") is None,
                    reason="node/npm are not installed: the Companion module's tests need "
                    "them (apt-get install nodejs npm)")
def test_the_companion_module_against_a_real_service(tmp_path: Path) -> None:
    node_modules()
    server = ThreadServer(tmp_path / "companion.db",
                           env={"SHOTCLOCK_REFEREE_TOKEN": TOKEN}).start()
    try:
        status, body = server.post("/api/tables", {"id": "deck", "players": ["Anna", "Boris"],
                                                   "profile": PROFILE}, TOKEN)
        assert status == 201, body
        tests = sorted(str(p.relative_to(MODULE)) for p in (MODULE / "test").glob("*.test.js"))
        run = subprocess.run(
            ["node", "--test", "--test-reporter=spec", *tests], cwd=MODULE,
            env={**os.environ, "SHOTCLOCK_URL": server.url, "SHOTCLOCK_TOKEN": TOKEN,
                 "SHOTCLOCK_TABLE": "deck"},
            capture_output=True, text=True, timeout=180, check=False)
    finally:
        server.stop()
    report = run.stdout[-6000:] + run.stderr[-3000:]
    assert run.returncode == 0, report
    # Every test ran (none skipped for want of the service) and passed.
    assert "ℹ fail 0" in run.stdout and "ℹ skipped 0" in run.stdout, report
    assert "ℹ pass 5" in run.stdout, report
