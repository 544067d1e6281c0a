"""The reference for "late": a bare asyncio loop in its own process, waking every few ms
with ``loop.call_at`` and recording how late each wake-up was (ms), with the unix time.

On a shared 2-core machine the loop's own error ranges from well under a millisecond to
tens of milliseconds, depending on what else runs. A test that says "this expiry was not
late" compares it with this reference over the same moments, not with a fixed number.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable
from typing import Any

__all__ = ["BareLoop", "BareLoopThread", "gross_bound", "worst_tick_late"]


def gross_bound(bare_worst_ms: float, floor_ms: float = 150.0) -> float:
    """How late (ms) an expiry may be, at the most, when a bare loop's worst wake-up over
    the same moments was ``bare_worst_ms``: ``floor_ms``, or twice that worst + 50 ms. A bare
    loop in another process (or thread) does not feel every stall of a busy service's, so
    this catches a clock held up (a blocking call: hundreds of ms, or seconds), not a few
    ms; the precision is the benchmark's (bench/README.md)."""
    return max(floor_ms, 2 * bare_worst_ms + 50)

async def worst_tick_late(work: Awaitable[Any], period_s: float = 0.01) -> float:
    """Await ``work`` on this loop while a tick every ``period_s`` measures how late this
    loop wakes up meanwhile: the worst (ms). A call that blocks the loop makes it as late as
    the call is long; judge it against a bare loop in another thread (``BareLoopThread``)
    over the same moments, with ``gross_bound``."""
    import asyncio

    loop = asyncio.get_running_loop()
    worst = 0.0

    async def tick() -> None:
        nonlocal worst
        target = loop.time() + period_s
        while True:
            await asyncio.sleep(max(0.0, target - loop.time()))
            worst = max(worst, (loop.time() - target) * 1000)
            target += period_s

    ticker = asyncio.ensure_future(tick())
    try:
        await work
    finally:
        ticker.cancel()
    return worst


SCRIPT = r"""
import asyncio, json, sys, time

async def main(period):
    loop = asyncio.get_running_loop()
    samples = []
    stop = asyncio.Event()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

    async def watch_stdin():
        await reader.read()
        stop.set()

    task = asyncio.ensure_future(watch_stdin())
    target = loop.time() + period

    def fire(target):
        samples.append((time.time() * 1000.0, (loop.time() - target) * 1000.0))
        if not stop.is_set():
            loop.call_at(target + period, fire, target + period)

    loop.call_at(target, fire, target)
    print("ready", flush=True)
    await stop.wait()
    task.cancel()
    print(json.dumps(samples))

asyncio.run(main(float(sys.argv[1])))
"""


class BareLoop:
    def __init__(self, period_s: float = 0.01) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(period_s)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.samples: list[tuple[float, float]] | None = None
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != b"ready":  # ticking from here on
            raise RuntimeError("the bare loop did not start")

    def stop(self) -> list[tuple[float, float]]:
        if self.samples is None:
            out, _ = self.proc.communicate(timeout=30)
            self.samples = [(float(at), float(late)) for at, late in json.loads(out or b"[]")]
        return self.samples

    def __enter__(self) -> BareLoop:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def max_late(self, from_ms: float = 0.0, to_ms: float = float("inf")) -> float:
        """The worst wake-up error (ms) between two unix times (it must have run then)."""
        late = [lateness for at, lateness in self.stop() if from_ms <= at <= to_ms]
        if not late:
            raise ValueError(f"the bare loop has no samples between {from_ms} and {to_ms}")
        return max(late)


class BareLoopThread:
    """The same reference as a thread of this process: a bare asyncio loop of its own.

    For a test whose service runs in the test process: when the whole process is not
    scheduled (a loaded machine), this reference is late too, while a blocking call on the
    service's loop (which releases the GIL) leaves it on time."""

    def __init__(self, period_s: float = 0.01) -> None:
        import asyncio
        import threading
        import time

        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        started = threading.Event()

        async def tick() -> None:
            loop = asyncio.get_running_loop()
            target = loop.time() + period_s
            started.set()
            while not self._stop.is_set():
                await asyncio.sleep(max(0.0, target - loop.time()))
                self.samples.append((time.time() * 1000.0, (loop.time() - target) * 1000.0))
                target += period_s

        self._thread = threading.Thread(target=lambda: asyncio.run(tick()), daemon=True,
                                        name="bare-loop")
        self._thread.start()
        started.wait(10)

    def stop(self) -> list[tuple[float, float]]:
        self._stop.set()
        self._thread.join(timeout=10)
        return self.samples

    def __enter__(self) -> BareLoopThread:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def max_late(self, from_ms: float = 0.0, to_ms: float = float("inf")) -> float:
        late = [lateness for at, lateness in self.samples if from_ms <= at <= to_ms]
        if not late:
            raise ValueError(f"the bare loop has no samples between {from_ms} and {to_ms}")
        return max(late)
