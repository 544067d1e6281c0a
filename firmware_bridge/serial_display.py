"""Display and buzzer on a serial display controller (protocol: firmware/PROTOCOL.md).

The clock must never wait for a cable: ``show``, ``beep`` and ``long_tone`` only put the
latest state in a one-slot mailbox and wake a background thread. That thread owns the port:
it writes frames, sends a heartbeat every 250 ms, reads ACK/HELLO, and when anything fails it
closes the port and reopens it with exponential backoff, resending the full frame at once.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any

from clock_service.core.readout import DisplayFrame
from firmware_bridge import protocol_core as core
from firmware_bridge.errors import HardwareConfigError, HardwareError
from firmware_bridge.protocol import (
    HEARTBEAT_MS,
    Ack,
    BuzzKind,
    Hello,
    Status,
    StreamDecoder,
    WireFrame,
    encode_frame,
)

__all__ = ["SerialDisplay"]

log = logging.getLogger(__name__)

# pyserial's read timeout in the reader thread: bounds how long a close waits for it.
READ_TIMEOUT_S = 0.05
# The controller ACKs every valid packet, and a heartbeat goes out every 250 ms: this long
# without an ACK while sending means it is not listening (dead, wrong firmware, wrong
# baud rate, or dropped to its REPL), whatever the port says.
ACK_SILENCE_S = 1.0


class SerialDisplay:
    """Big digits and the horn behind a display controller on a serial port (Display + Buzzer).

    Wiring: the controller's USB-CDC port (``/dev/shotclock-display`` via the udev rule, or
    ``/dev/serial/by-id/...``), or the Pi's UART0 (GPIO14 TXD -> controller RX, GPIO15 RXD <-
    controller TX, GND - GND, 3.3 V levels) as ``/dev/serial0``. ``port`` may also be any
    pyserial URL, e.g. ``loop://`` or ``socket://host:port``.
    """

    def __init__(
        self,
        port: str,
        baudrate: int = 115200,
        *,
        heartbeat_s: float = HEARTBEAT_MS / 1000,
        backoff_min_s: float = 0.1,
        backoff_max_s: float = 2.0,
        write_timeout_s: float = 0.5,
        brightness: int = core.BRIGHTNESS_MAX,
    ) -> None:
        if heartbeat_s <= 0 or backoff_min_s <= 0 or backoff_max_s < backoff_min_s:
            raise ValueError(
                f"need heartbeat_s > 0 and 0 < backoff_min_s <= backoff_max_s, got "
                f"{heartbeat_s=}, {backoff_min_s=}, {backoff_max_s=}"
            )
        self.port = port
        self.baudrate = baudrate
        self.heartbeat_s = heartbeat_s
        self.backoff_min_s = backoff_min_s
        self.backoff_max_s = backoff_max_s
        self.write_timeout_s = write_timeout_s
        self._check_brightness(brightness)
        self.brightness = brightness
        # The mailbox: the latest picture and buzzer request. Guarded by _lock, held for
        # a few attribute writes only, so show() never waits on the I/O thread.
        self._lock = threading.Lock()
        self._frame: DisplayFrame | None = None
        self._buzzer: BuzzKind = "none"
        self._buzz_seq = 0
        self._dirty = False
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._serial: Any = None
        self._broken = threading.Event()  # set by the reader when the port fails
        self._reader: threading.Thread | None = None
        # Counters for status pages and tests.
        self.connects = 0
        self.frames_sent = 0
        self.heartbeats_sent = 0
        self.hellos = 0
        self.last_ack_seq: int | None = None
        self.last_ack_at: float | None = None  # time.monotonic()
        self.opened_at: float | None = None  # time.monotonic() of the last successful open
        self.last_sent_at: float | None = None  # time.monotonic() of the last packet written
        self.open_error: OSError | Exception | None = None  # why the last open failed
        self.blanked = False  # the blank frame went out on close
        self._seq = 0
        self._thread = threading.Thread(
            target=self._run, name=f"serial-display {port}", daemon=True
        )
        self._thread.start()

    # --- Display and Buzzer: never block, never raise ------------------------------------

    def show(self, frame: DisplayFrame) -> None:
        with self._lock:
            self._frame = frame
            self._dirty = True
        self._wake.set()

    def beep(self) -> None:
        self._buzz("beep")

    def long_tone(self) -> None:
        self._buzz("long")

    def chirp(self) -> None:
        self._buzz("chirp")

    def refused(self) -> None:
        self._buzz("refused")

    @staticmethod
    def _check_brightness(level: int) -> None:
        if isinstance(level, bool) or not isinstance(level, int) or not (
                0 <= level <= core.BRIGHTNESS_MAX):
            raise HardwareConfigError(
                f"display brightness must be 0..{core.BRIGHTNESS_MAX}, got {level!r}")

    def set_brightness(self, level: int) -> None:
        """Dim or brighten the big digits (0..7); goes out with the next frame at once."""
        self._check_brightness(level)
        with self._lock:
            self.brightness = level
            self._dirty = True
        self._wake.set()

    def _buzz(self, kind: BuzzKind) -> None:
        # A new buzz_seq is what makes the controller sound; resends of the frame do not.
        with self._lock:
            self._buzzer = kind
            self._buzz_seq = (self._buzz_seq + 1) & 0xFF
            self._dirty = True
        self._wake.set()

    def close(self) -> None:
        """Blank the digits (a stopped service must not leave a time lit), then close."""
        self._closing.set()
        self._wake.set()
        self._thread.join(2.0)

    @property
    def connected(self) -> bool:
        return self._serial is not None

    def ack_age_s(self, now: float | None = None) -> float | None:
        """Seconds since the last ACK (or since the port opened, if none came yet); None
        while the port is closed."""
        if self._serial is None or self.opened_at is None:
            return None
        now = time.monotonic() if now is None else now
        since = max(self.opened_at, self.last_ack_at or self.opened_at)
        return max(0.0, now - since)

    def ack_silent(self, now: float | None = None) -> bool:
        """Packets go out but nothing has been acknowledged for ACK_SILENCE_S: the
        controller is not listening even though the port is open (issue 10, defect 4)."""
        age = self.ack_age_s(now)
        return age is not None and age >= ACK_SILENCE_S and self.last_sent_at is not None

    def status(self) -> dict[str, Any]:
        """For /api/health: cheap attribute reads only (called from the event loop)."""
        age = self.ack_age_s()
        return {
            "port": self.port, "connected": self.connected, "connects": self.connects,
            "acknowledging": self.connected and not self.ack_silent(),
            "last_ack_age_ms": None if age is None else round(age * 1000),
            "frames_sent": self.frames_sent, "heartbeats_sent": self.heartbeats_sent,
            "hellos": self.hellos, "brightness": self.brightness,
            "error": None if self.open_error is None or self.connected else str(self.open_error),
        }

    # --- the I/O thread -------------------------------------------------------------------

    def _next_seq(self) -> int:
        self._seq = (self._seq + 1) & 0xFFFF
        return self._seq

    def _open(self) -> bool:
        import serial  # lazy: pyserial is in the "hardware" extra

        try:
            port = serial.serial_for_url(
                self.port,
                baudrate=self.baudrate,
                timeout=READ_TIMEOUT_S,
                write_timeout=self.write_timeout_s,
            )
        except (serial.SerialException, OSError, ValueError) as exc:
            log.debug("display port %s not available: %s", self.port, exc)
            # pyserial wraps the OSError; keep the errno (EACCES: the dialout group).
            self.open_error = exc
            return False
        self.open_error = None
        self._broken.clear()
        self.opened_at = time.monotonic()
        self.last_sent_at = None
        self._serial = port
        self.connects += 1
        log.info("display port %s open (connect #%d)", self.port, self.connects)
        self._reader = threading.Thread(
            target=self._read_loop,
            args=(port,),
            name=f"serial-display-reader {self.port}",
            daemon=True,
        )
        self._reader.start()
        return True

    def _drop(self, reason: str) -> None:
        port, self._serial = self._serial, None
        if port is None:
            return
        if reason == "closed":
            log.info("display port %s closed", self.port)
        else:
            log.warning("display port %s lost (%s); reconnecting", self.port, reason)
        with contextlib.suppress(Exception):
            port.cancel_read()
        if self._reader is not None:
            self._reader.join(READ_TIMEOUT_S * 4)
        with contextlib.suppress(Exception):
            port.close()

    def _run(self) -> None:
        backoff = self.backoff_min_s
        next_heartbeat = 0.0
        failing_since: float | None = None
        while not self._closing.is_set():
            if self._serial is None:
                if not self._open():
                    if failing_since is None:
                        failing_since = time.monotonic()
                        log.warning("display port %s unavailable; retrying", self.port)
                    self._closing.wait(backoff)
                    backoff = min(backoff * 2, self.backoff_max_s)
                    continue
                failing_since = None
                backoff = self.backoff_min_s
                next_heartbeat = 0.0  # a fresh port gets the full frame at once
                with self._lock:
                    self._dirty = True
            self._wake.wait(max(0.0, next_heartbeat - time.monotonic()))
            self._wake.clear()
            if self._closing.is_set():
                break
            if self._broken.is_set():
                self._drop("read failed")
                continue
            with self._lock:
                frame, buzzer, buzz_seq, dirty = (
                    self._frame,
                    self._buzzer,
                    self._buzz_seq,
                    self._dirty,
                )
                self._dirty = False
            now = time.monotonic()
            if not dirty and now < next_heartbeat:
                continue
            try:
                packet = self._packet(frame, buzzer, buzz_seq, heartbeat=not dirty)
            except HardwareError as exc:
                log.error("display frame dropped: %s", exc)
                next_heartbeat = now + self.heartbeat_s
                continue
            try:
                self._serial.write(packet)
            except Exception as exc:  # noqa: BLE001 - any port failure means reconnect
                with self._lock:
                    self._dirty = True  # whatever we failed to send goes out after reconnect
                self._drop(f"write failed: {exc}")
                continue
            self.last_sent_at = time.monotonic()
            if dirty:
                self.frames_sent += 1
            else:
                self.heartbeats_sent += 1
            next_heartbeat = now + self.heartbeat_s
        self._blank()
        self._drop("closed")

    def _blank(self) -> None:
        """The last word on close: a blank frame, so the digits go dark at once rather
        than after the controller's 1 s heartbeat timeout (and never keep a time lit)."""
        port = self._serial
        if port is None:
            return
        with self._lock:
            player = self._frame.player if self._frame is not None else 0
            buzzer, buzz_seq, brightness = self._buzzer, self._buzz_seq, self.brightness
        try:
            port.write(encode_frame(self._next_seq(), WireFrame(
                DisplayFrame("", "off", player), buzzer, buzz_seq, brightness)))
            port.flush()
            self.blanked = True
        except Exception as exc:  # noqa: BLE001 - closing anyway
            log.debug("display port %s: blank frame not sent: %s", self.port, exc)

    def _packet(
        self, frame: DisplayFrame | None, buzzer: BuzzKind, buzz_seq: int, *, heartbeat: bool
    ) -> bytes:
        if frame is None:
            # Nothing to show yet: a bare heartbeat keeps the controller out of its fault state.
            return core.encode_packet(core.MSG_HEARTBEAT, self._next_seq(), b"")
        return encode_frame(
            self._next_seq(), WireFrame(frame, buzzer, buzz_seq, self.brightness),
            heartbeat=heartbeat,
        )

    def _read_loop(self, port: Any) -> None:
        decoder = StreamDecoder()
        while self._serial is port and not self._closing.is_set():
            try:
                data = port.read(port.in_waiting or 1)
            except Exception as exc:  # noqa: BLE001 - unplugged USB raises many kinds
                log.debug("display port read failed: %s", exc)
                self._broken.set()
                self._wake.set()
                return
            if not data:
                continue
            for message in decoder.feed(data):
                if isinstance(message, Hello):
                    # The controller (re)booted and shows nothing: send the full frame now.
                    self.hellos += 1
                    log.info("display controller says hello (%s)", message.info)
                    with self._lock:
                        self._dirty = True
                    self._wake.set()
                elif isinstance(message, Ack):
                    self.last_ack_seq = message.acked_seq
                    self.last_ack_at = time.monotonic()
                elif isinstance(message, Status):
                    log.warning("display controller status %d %s", message.code, message.text)
