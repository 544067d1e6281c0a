"""How fast the table-side display tells the truth about faults (issue 10).

Not a test: it measures and prints. Run ``.venv/bin/python bench/hardware_faults.py -n 5``.

A real ``shotclock serve`` (subprocess, ``SHOTCLOCK_HARDWARE=serial``) drives the display
emulator (this process, on a pty). Each round measures, on the monotonic clock of this
process:

- ACK silence: the emulator stops acknowledging (as a Pico at its REPL) until
  ``display_not_acknowledging`` is in ``/api/health`` (polled every 20 ms; the service
  needs 1 s of silence by design, plus its 0.25 s check);
- SIGTERM: the signal until the emulator decodes the blank frame (a client connected);
- SIGKILL: the signal until the emulator reports ``FAULT no-heartbeat`` (its timeout is
  1000 ms by design: the figure is that plus the heartbeat phase, up to 250 ms).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from firmware_bridge.emulator import DisplayEmulator  # noqa: E402
from harness.server import ServerProcess  # noqa: E402

READY = "DISPLAY 35 ready p0 ext=1,1 fouls=0,0"


def serve(tmp: Path, emulator: DisplayEmulator, n: int) -> ServerProcess:
    config = tmp / "hw.toml"
    config.write_text('kind = "serial"\nself_test = false\n[buttons]\nenabled = false\n')
    return ServerProcess(tmp / f"clock{n}.db", env={
        "SHOTCLOCK_HARDWARE_CONFIG": str(config), "SHOTCLOCK_SERIAL_PORT": emulator.path,
    }).start()


def faults(server: ServerProcess) -> set[str]:
    return {f["code"] for f in server.get("/api/health")["faults"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=5, help="rounds (default 5)")
    args = parser.parse_args()
    from websockets.sync.client import connect

    figures: dict[str, list[float]] = {"ack_silence_s": [], "sigterm_blank_ms": [],
                                       "sigkill_fault_ms": []}
    emulator = DisplayEmulator(timeout_ms=1000, quiet=True)
    emulator.start()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for n in range(args.n):
            mark = len(emulator.lines)
            server = serve(tmp, emulator, n)
            try:
                assert emulator.wait_line(READY, timeout=5.0, start=mark)
                emulator.repl()
                start = time.monotonic()
                while "display_not_acknowledging" not in faults(server):
                    time.sleep(0.02)
                figures["ack_silence_s"].append(time.monotonic() - start)
                emulator.repl(False)
                with connect(server.ws_url + "/ws/tables/1") as ws:
                    ws.recv(timeout=2)
                    mark = len(emulator.lines)
                    start = time.monotonic()
                    assert server.proc is not None
                    server.proc.terminate()
                    assert emulator.wait_for(lambda lines, m=mark: any(
                        x.startswith("DISPLAY (blank)") for x in lines[m:]), 3.0)
                    figures["sigterm_blank_ms"].append((time.monotonic() - start) * 1000)
            finally:
                server.stop()
            mark = len(emulator.lines)
            server = serve(tmp, emulator, n + 1000)
            try:
                assert emulator.wait_for(lambda lines, m=mark: any(
                    x.startswith("DISPLAY 35") for x in lines[m:]), 5.0), emulator.lines[-8:]
                mark = len(emulator.lines)
                start = time.monotonic()
                server.kill()
                assert emulator.wait_for(
                    lambda lines, m=mark: "FAULT no-heartbeat" in lines[m:], 3.0)
                figures["sigkill_fault_ms"].append((time.monotonic() - start) * 1000)
            finally:
                server.stop()
    emulator.stop()
    for name, values in figures.items():
        print(f"{name:18} n={len(values)}  median {statistics.median(values):8.3f}  "
              f"max {max(values):8.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
