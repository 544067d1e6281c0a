"""Waiting for a condition instead of sleeping a fixed time (TEAM: tests that cannot race).

``until`` polls a check from a test's thread, ``until_async`` from its event loop; both give
the check's truthy value back and fail with what was awaited when the time is up. The
timeouts are generous on purpose: a loaded 2-core machine is slow, never wrong."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["settle", "until", "until_async"]

T = TypeVar("T")


def until(check: Callable[[], T], timeout: float = 10.0, interval: float = 0.01,
          what: str | None = None) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still not true after {timeout:g} s: {what or check}")
        time.sleep(interval)


async def until_async(check: Callable[[], T], timeout: float = 10.0, interval: float = 0.005,
                      what: str | None = None) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still not true after {timeout:g} s: {what or check}")
        await asyncio.sleep(interval)


async def settle(runtime: Any, timeout: float = 10.0) -> None:
    """Until every event a runtime has emitted so far (timer-driven ones too) is durable
    and published: ``published_seq`` has caught up with ``seq`` on every table."""
    await until_async(lambda: all(t.published_seq >= t.seq for t in runtime.tables.values()),
                      timeout, 0.001, "every event durable and published")
