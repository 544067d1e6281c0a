"""Loops that must live: restarted whenever they end, whatever ends them.

A loop that follows a broker, a camera or a cable can end by a bug, by an exception nobody
foresaw, or by a ``CancelledError`` that does not mean "stop": a future it awaited was
cancelled by someone else (paho's connection cancelling a pending SUBACK when the broker
hands the client id to another client). ``CancelledError`` is not an ``Exception``, so an
``except Exception`` lets it end the task silently (issue 20, finding 1). ``supervise``
tells the two apart with ``Task.cancelling()`` (Python 3.11): only a cancellation of the
supervising task itself stops it.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable

__all__ = ["supervise", "cancelled_from_outside"]

log = logging.getLogger(__name__)


def cancelled_from_outside() -> bool:
    """Whether the running task was asked to stop (its ``cancel()`` was called), as opposed
    to a ``CancelledError`` coming up from a future someone else cancelled."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def supervise(name: str, body: Callable[[], Awaitable[None]], *,
                    running: Callable[[], bool],
                    on_death: Callable[[str], None] | None = None,
                    backoff_min_s: float = 0.2, backoff_max_s: float = 5.0) -> None:
    """Run ``body()`` again whenever it ends while ``running()`` says it should not have:
    it returned, raised, or a stray ``CancelledError`` ended it. ``on_death(why)`` is told
    each time (a fault, never silence); restarts back off up to ``backoff_max_s``."""
    backoff = backoff_min_s
    while running():
        try:
            await body()
            why = "it returned"
        except asyncio.CancelledError:
            if cancelled_from_outside():
                raise
            why = "CancelledError from a future it awaited"
        except Exception as exc:  # the loop's own bug: log it, restart it
            log.exception("%s failed", name)
            why = f"{type(exc).__name__}: {exc}"
        if not running():
            return
        log.error("%s ended (%s); restarting it", name, why)
        if on_death is not None:
            try:
                on_death(why)
            except Exception:
                log.exception("%s: reporting its end failed", name)
        await asyncio.sleep(backoff * random.uniform(0.5, 1.0))
        backoff = min(backoff * 2, backoff_max_s)
