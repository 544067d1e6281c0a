"""A child process a test or the benchmark starts and must not leave behind."""

from __future__ import annotations

import signal
import subprocess

__all__ = ["Child"]


class Child:
    """``proc``: the process once started. ``stop`` asks it to end (SIGTERM) and kills it
    when it does not within ``stop_timeout``; ``kill`` is SIGKILL, as a crash or a power
    cut ends it (no shutdown hook runs)."""

    proc: subprocess.Popen[bytes] | None = None
    stop_timeout = 10.0

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                self.kill()
