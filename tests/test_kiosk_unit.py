"""The Chromium kiosk unit for a table's screen (deploy/shotclock-kiosk.service, issue 9.15):
a valid unit that opens the display in kiosk mode with the autoplay policy the browser tests
run under (so their "sound on without a click" holds for the kiosk too)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.browser.conftest import CHROMIUM_ARGS

UNIT = Path(__file__).resolve().parents[1] / "deploy" / "shotclock-kiosk.service"
AUTOPLAY = "--autoplay-policy=no-user-gesture-required"


def unit_lines() -> dict[str, list[str]]:
    """key -> values, continuation lines joined."""
    text = UNIT.read_text().replace("\\\n", " ")
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            out.setdefault(key.strip(), []).append(value.strip())
    return out


def test_kiosk_unit_opens_the_display_in_kiosk_mode_with_sound_allowed() -> None:
    unit = unit_lines()
    (exec_start,) = unit["ExecStart"]
    words = exec_start.split()
    assert words[0] == "/usr/bin/chromium" and "--kiosk" in words
    assert AUTOPLAY in words and AUTOPLAY in CHROMIUM_ARGS
    assert words[-1] == "${SHOTCLOCK_KIOSK_URL}"  # braced: one argument, & and all
    (url,) = [v.split("=", 1)[1] for v in unit["Environment"] if v.startswith("SHOTCLOCK_KIOSK_URL=")]
    assert "/display?table=" in url and "kiosk=1" in url
    assert unit["Restart"] == ["always"]


def test_kiosk_unit_is_valid_for_systemd() -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.fail("systemd-analyze is missing: make test-deps installs it (package systemd)")
    result = subprocess.run([analyze, "verify", str(UNIT)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert "shotclock-kiosk.service" not in result.stderr, result.stderr
