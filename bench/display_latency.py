"""Latency from a referee command to the table-side display: HTTP command -> digits.

Not a test: it measures and prints. Run ``.venv/bin/python bench/display_latency.py``.

A real ``shotclock serve`` (subprocess, fresh SQLite file) drives the serial display
emulator (this process, on a pseudo-terminal) with ``SHOTCLOCK_HARDWARE=serial``. For each
command (``pause`` / ``resume`` in turn, each changes the frame) the clock starts before
the HTTP request is written and stops when the emulator has decoded the new frame from the
pty: so the figure covers HTTP parsing, the core, the bridge's redraw, the serial driver's
thread hop, the write, the pty and the controller's decoder. The HTTP reply time is printed
beside it: the reply waits for the SQLite commit (fsync) while the display does not, so
the digits usually change before the referee's client hears back.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from firmware_bridge.emulator import DisplayEmulator  # noqa: E402
from harness.server import ServerProcess  # noqa: E402


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=100, help="commands to time (default 100)")
    args = parser.parse_args()

    arrivals: list[tuple[float, str]] = []
    arrived = threading.Condition()

    def on_line(line: str) -> None:
        if line.startswith("DISPLAY "):
            with arrived:
                arrivals.append((time.monotonic(), line))
                arrived.notify_all()

    def wait_stage(stage: str, after: int, timeout: float = 2.0) -> float:
        with arrived:
            ok = arrived.wait_for(
                lambda: any(f" {stage} " in line for _, line in arrivals[after:]), timeout)
            if not ok:
                raise RuntimeError(f"the display never showed {stage!r}: {arrivals[-3:]}")
            return next(t for t, line in arrivals[after:] if f" {stage} " in line)

    emulator = DisplayEmulator(out=on_line)
    port = emulator.start()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "hw.toml"
        config.write_text('kind = "serial"\ntable_id = "1"\n[buttons]\nenabled = false\n')
        server = ServerProcess(Path(tmp) / "bench.db", env={
            "SHOTCLOCK_HARDWARE": "serial", "SHOTCLOCK_SERIAL_PORT": port,
            "SHOTCLOCK_HARDWARE_CONFIG": str(config), "SHOTCLOCK_COMMAND_RATE": "0",
        }).start()
        try:
            wait_stage("ready", 0, timeout=5.0)
            status, body = server.command("1", "start")
            assert status == 200, body
            display_ms: list[float] = []
            reply_ms: list[float] = []
            for i in range(args.n):
                command, stage = ("pause", "paused") if i % 2 == 0 else ("resume", "running")
                with arrived:
                    before = len(arrivals)
                sent = time.monotonic()
                status, body = server.command("1", command)
                replied = time.monotonic()
                assert status == 200, body
                shown = wait_stage(stage, before)
                display_ms.append((shown - sent) * 1000)
                reply_ms.append((replied - sent) * 1000)
        finally:
            server.stop()
            emulator.stop()

    print(f"display latency over {args.n} commands (HTTP POST -> frame decoded by the "
          f"emulator on a pty), ms:")
    for name, values in (("command -> digits", display_ms), ("command -> HTTP reply", reply_ms)):
        print(f"  {name:22s} p50 {statistics.median(values):6.2f}  "
              f"p99 {percentile(values, 99):6.2f}  max {max(values):6.2f}  "
              f"min {min(values):6.2f}")
    print(f"  emulator decode errors: {emulator.decode_errors}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
