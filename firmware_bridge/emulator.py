"""Software emulator of the serial display controller, on a pseudo-terminal.

It runs the very same ``ControllerCore`` as the Pico firmware, so what it prints is what the
big digits would show. Run ``shotclock-display-emulator``: the first line is the serial
port to give the service (``SHOTCLOCK_SERIAL_PORT``); then one line per change, e.g.::

    /dev/pts/7
    HELLO sent
    DISPLAY 35 running p0 ext=1,1 fouls=0,0
    BUZZER beep
    FAULT no-heartbeat

Tests use :class:`DisplayEmulator` directly, in a thread, and can reset it, inject line
noise, or "pull the cable" (close the pty) and plug it back in.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import signal
import sys
import threading
import time
import tty
from collections.abc import Callable

from firmware_bridge import protocol_core as core

__all__ = ["DisplayEmulator", "describe_frame", "main"]

# How long the loop sleeps in select(): bounds fault-detection lateness and stop() latency.
POLL_S = 0.005


def describe_frame(frame: tuple) -> str:
    """One emulator line for a decoded frame tuple (see protocol_core.decode_frame)."""
    text, stage, player, ext, fouls = frame[:5]
    line = "DISPLAY {} {} p{} ext={},{} fouls={},{}".format(
        text if text else "(blank)", stage, player, ext[0], ext[1], fouls[0], fouls[1]
    )
    # Only what differs from the usual: full brightness, link up.
    if len(frame) > 8:
        if frame[7] != core.BRIGHTNESS_MAX:
            line += f" brightness={frame[7]}"
        if frame[8] & core.FLAG_OFFLINE:
            line += " offline"
    return line


class DisplayEmulator:
    """The controller side of the protocol on a pty; prints and records what it would show.

    ``link``: optional path kept as a symlink to the current pty (like the udev rule's
    /dev/shotclock-display), so a host can reopen the same name after ``plug()``.
    ``out``: where lines go (default: stdout, flushed); all lines are also kept in ``lines``.
    """

    def __init__(
        self,
        *,
        timeout_ms: int = core.TIMEOUT_MS,
        link: str | None = None,
        out: Callable[[str], None] | None = None,
        quiet: bool = False,
    ) -> None:
        self.timeout_ms = timeout_ms
        self.link = link
        self.quiet = quiet
        self._out = out
        self.core = core.ControllerCore(timeout_ms)
        self.lines: list[str] = []
        self.times: list[float] = []  # time.monotonic() at which each line was recorded
        # the controller's own clock (ms) at each line's event: what the core was given when
        # it saw the frame or raised the fault (a line's ``times`` entry can be later, by
        # however late this thread ran between the two)
        self.at_ms: list[int] = []
        self.frames: list[tuple] = []  # every distinct frame shown
        self.buzzes: list[str] = []
        self.at_repl = False
        self._changed = threading.Condition()
        self._lock = threading.RLock()  # guards the pty fds against plug/unplug from tests
        self._master: int | None = None
        self._slave: int | None = None
        self.slave_path: str | None = None
        self._generation = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The port name a host should open: the link if any, else the pty slave."""
        assert self.slave_path is not None, "emulator not started"
        return self.link or self.slave_path

    def start(self) -> str:
        """Open the pty, boot (send HELLO) and serve in a daemon thread; returns the port."""
        self._open_pty()
        self._boot()
        self._thread = threading.Thread(target=self._run, name="display-emulator", daemon=True)
        self._thread.start()
        return self.path

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
        self._close_pty()

    def __enter__(self) -> DisplayEmulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Simulate a controller reboot: forget the frame, blank, announce HELLO."""
        self._boot()

    def unplug(self) -> None:
        """Pull the cable: the pty disappears, the host's port fails and the link is gone."""
        self._emit("CABLE unplugged")
        self._close_pty()

    def plug(self) -> str:
        """Plug the cable back in: a new pty (new slave path), link updated, controller boots."""
        self._open_pty()
        self._boot()
        self._emit("CABLE plugged " + self.path)
        return self.path

    def repl(self, at_repl: bool = True) -> None:
        """Simulate a controller that dropped to its REPL (a 0x03 byte on a USB console
        without ``kbd_intr(-1)``) or hung: the port stays open, bytes are swallowed, nothing
        is shown or acknowledged. ``repl(False)`` brings it back (as after a reset)."""
        with self._lock:
            self.at_repl = at_repl
        self._emit("REPL entered" if at_repl else "REPL left")

    def inject(self, data: bytes) -> None:
        """Put raw bytes on the host -> controller line (noise, half frames) as if received."""
        with self._lock:
            if self._slave is not None:
                os.write(self._slave, data)

    # --- observation for tests ------------------------------------------------------------

    def wait_for(self, predicate: Callable[[list[str]], bool], timeout: float = 1.0) -> bool:
        """Wait until ``predicate(lines)`` holds; polls on every new line, never sleeps blind."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self.lines), timeout)

    def wait_line(self, text: str, timeout: float = 1.0, start: int = 0) -> bool:
        """Wait for a line equal to ``text`` at index >= ``start``."""
        return self.wait_for(lambda lines: text in lines[start:], timeout)

    @property
    def decode_errors(self) -> int:
        return int(self.core.decoder.errors)

    # --- internals ------------------------------------------------------------------------

    def _emit(self, line: str, at_ms: int | None = None) -> None:
        with self._changed:
            self.times.append(time.monotonic())
            self.at_ms.append(self._now_ms() if at_ms is None else at_ms)
            self.lines.append(line)
            self._changed.notify_all()
        if self.quiet and line.startswith(("DISPLAY", "CABLE", "HELLO")):
            return
        if self._out is not None:
            self._out(line)

    def _now_ms(self) -> int:
        return int(time.monotonic() * 1000)

    def _boot(self) -> None:
        with self._lock:
            hello = self.core.boot(self._now_ms())
            if self._master is not None:
                os.write(self._master, hello)
        self._emit("HELLO sent")

    def _open_pty(self) -> None:
        master, slave = os.openpty()
        tty.setraw(slave)  # no echo, no line discipline: bytes pass as they are
        with self._lock:
            self._master, self._slave = master, slave
            self.slave_path = os.ttyname(slave)
            self._generation += 1
            if self.link:
                tmp = self.link + ".tmp"
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                os.symlink(self.slave_path, tmp)
                os.replace(tmp, self.link)  # atomic: a host never sees a half-made link

    def _close_pty(self) -> None:
        with self._lock:
            if self.link:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.link)
            for fd in (self._master, self._slave):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            self._master = self._slave = None
            self._generation += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                master, generation = self._master, self._generation
            if master is None:
                self._stop.wait(POLL_S)
                now = self._now_ms()
                self._handle(self.core.tick(now), now)
                continue
            try:
                ready, _, _ = select.select([master], [], [], POLL_S)
            except (OSError, ValueError):
                ready = []  # the fd was closed under us by unplug(); the next turn sees it
            with self._lock:
                if generation != self._generation:
                    continue
                fed: list[tuple] = []
                ticked: list[tuple] = []
                fed_at = tick_at = 0
                if ready:
                    try:
                        data = os.read(master, 4096)
                    except OSError:
                        data = b""
                    if self.at_repl:
                        continue  # swallowed: no ACK, no picture
                    fed_at = self._now_ms()
                    replies, fed = self.core.feed(data, fed_at)
                    if replies:
                        with contextlib.suppress(OSError):
                            os.write(master, replies)
                if not self.at_repl:
                    tick_at = self._now_ms()
                    ticked = self.core.tick(tick_at)
            self._handle(fed, fed_at)
            self._handle(ticked, tick_at)

    def _handle(self, events: list[tuple], at_ms: int | None = None) -> None:
        for kind, value in events:
            if kind == "display":
                self.frames.append(value)
                self._emit(describe_frame(value), at_ms)
            elif kind == "buzzer":
                self.buzzes.append(value)
                self._emit("BUZZER " + value, at_ms)
            elif kind == "fault":
                self._emit("FAULT " + value, at_ms)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="shotclock-display-emulator",
        description="Emulate the shot clock's serial display controller on a pseudo-terminal.",
    )
    parser.add_argument(
        "--timeout-ms",
        type=int,
        default=core.TIMEOUT_MS,
        help="blank and report FAULT after this long without a valid message (default %(default)s)",
    )
    parser.add_argument("--link", help="also expose the pty under this path (a symlink)")
    parser.add_argument("--quiet", action="store_true", help="print only buzzer and fault lines")
    args = parser.parse_args(argv)

    def out(line: str) -> None:
        print(line, flush=True)

    emulator = DisplayEmulator(
        timeout_ms=args.timeout_ms, link=args.link, out=out, quiet=args.quiet
    )
    emulator._open_pty()
    # The first line is the port, printed before anything else so scripts can read it.
    print(emulator.path, flush=True)
    emulator._boot()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    emulator._thread = threading.Thread(target=emulator._run, daemon=True)
    emulator._thread.start()
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        emulator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
