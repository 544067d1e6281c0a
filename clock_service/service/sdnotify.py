"""systemd's notify protocol in a few lines: READY=1, WATCHDOG=1, STOPPING=1 (no dependency).

Under a unit with ``Type=notify`` and ``WatchdogSec=``, systemd sets ``$NOTIFY_SOCKET`` (a
datagram socket, ``@`` for the abstract namespace) and ``$WATCHDOG_USEC``. The service says
READY once it serves, then pats the watchdog from its event loop: a loop that hangs stops
patting and systemd restarts the service (issue 10, defect 6). Outside systemd every call
is a no-op.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Mapping

__all__ = ["notify", "watchdog_interval_s", "Watchdog"]

log = logging.getLogger(__name__)


def notify(message: str, environ: Mapping[str, str] | None = None) -> bool:
    """Send ``message`` (e.g. "READY=1") to systemd; False when not under systemd."""
    env = os.environ if environ is None else environ
    address = env.get("NOTIFY_SOCKET")
    if not address or address[0] not in "@/":
        return False
    target = "\0" + address[1:] if address[0] == "@" else address
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(target)
            sock.sendall(message.encode())
        return True
    except OSError as exc:
        log.warning("sd_notify %r to %s failed: %s", message, address, exc)
        return False


def watchdog_interval_s(environ: Mapping[str, str] | None = None) -> float | None:
    """Half of systemd's watchdog timeout (pat twice per period), or None without one."""
    env = os.environ if environ is None else environ
    usec = env.get("WATCHDOG_USEC")
    pid = env.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        value = int(usec)
    except ValueError:
        return None
    return value / 2_000_000 if value > 0 else None


class Watchdog:
    """READY=1 at start, then WATCHDOG=1 from the event loop every half period."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.environ = environ
        self.interval_s = watchdog_interval_s(environ)
        self.pats = 0
        self._task: asyncio.Task[None] | None = None

    def start(self, status: str = "") -> None:
        notify("READY=1" + (f"\nSTATUS={status}" if status else ""), self.environ)
        if self.interval_s is not None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        assert self.interval_s is not None
        while True:
            # On the loop itself: a loop stuck in a callback stops the pats.
            if notify("WATCHDOG=1", self.environ):
                self.pats += 1
            await asyncio.sleep(self.interval_s)

    async def stop(self) -> None:
        notify("STOPPING=1", self.environ)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
