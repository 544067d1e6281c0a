"""Typed host-side view of the display-controller protocol (layout in firmware/PROTOCOL.md).

The byte-level work is done by ``protocol_core`` (shared verbatim with the MicroPython
firmware); this module adds frozen dataclasses so the host never handles raw tuples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from clock_service.core.readout import DisplayFrame
from firmware_bridge import protocol_core as core
from firmware_bridge.errors import ProtocolError

__all__ = [
    "VERSION",
    "HEARTBEAT_MS",
    "TIMEOUT_MS",
    "BuzzKind",
    "WireFrame",
    "FrameMessage",
    "Ack",
    "Hello",
    "Status",
    "Message",
    "StreamDecoder",
    "encode_frame",
    "encode_ack",
    "encode_hello",
    "encode_status",
    "decode_message",
]

VERSION = core.VERSION
HEARTBEAT_MS = core.HEARTBEAT_MS
TIMEOUT_MS = core.TIMEOUT_MS

BuzzKind = Literal["none", "beep", "long", "chirp", "refused"]


@dataclass(frozen=True)
class WireFrame:
    """A FRAME payload: the display picture plus the buzzer request carried with it.

    ``buzz_seq`` changes once per buzzer request; the controller sounds ``buzzer`` only when
    it sees a new seq, so the same frame can be resent any number of times.
    """

    display: DisplayFrame
    buzzer: BuzzKind = "none"
    buzz_seq: int = 0
    brightness: int = core.BRIGHTNESS_MAX  # 0..7, as the TM1637 counts it

    def __post_init__(self) -> None:
        if self.buzzer not in core.BUZZ_NAMES:
            raise ValueError(f"buzzer must be one of {core.BUZZ_NAMES}, got {self.buzzer!r}")
        if not 0 <= self.buzz_seq <= 0xFF:
            raise ValueError(f"buzz_seq must fit a byte, got {self.buzz_seq!r}")
        if not 0 <= self.brightness <= core.BRIGHTNESS_MAX:
            raise ValueError(f"brightness must be 0..{core.BRIGHTNESS_MAX}, "
                             f"got {self.brightness!r}")

    def payload(self) -> bytes:
        d = self.display
        try:
            return core.encode_frame(
                d.text,
                d.stage,
                d.player,
                d.extensions_left,
                d.fouls,
                core.BUZZ_NAMES.index(self.buzzer),
                self.buzz_seq,
                self.brightness,
                core.FLAG_OFFLINE if d.offline else 0,
            )
        except (ValueError, UnicodeError) as exc:
            raise ProtocolError(f"cannot encode {self!r}: {exc}") from exc

    @classmethod
    def from_payload(cls, payload: bytes) -> WireFrame:
        try:
            (text, stage, player, ext, fouls, kind, buzz_seq, brightness,
             flags) = core.decode_frame(payload)
        except (ValueError, UnicodeError) as exc:
            raise ProtocolError(f"bad FRAME payload {payload.hex()}: {exc}") from exc
        display = DisplayFrame(text, stage, player, tuple(ext), tuple(fouls),
                               offline=bool(flags & core.FLAG_OFFLINE))
        return cls(display, core.BUZZ_NAMES[kind], buzz_seq, brightness)  # type: ignore[arg-type]


@dataclass(frozen=True)
class FrameMessage:
    seq: int
    frame: WireFrame | None  # None only for a bare HEARTBEAT without payload
    heartbeat: bool = False


@dataclass(frozen=True)
class Ack:
    seq: int
    acked_seq: int
    status: int = core.STATUS_OK


@dataclass(frozen=True)
class Hello:
    seq: int
    info: str


@dataclass(frozen=True)
class Status:
    seq: int
    code: int
    text: str


Message = FrameMessage | Ack | Hello | Status


def encode_frame(seq: int, frame: WireFrame, *, heartbeat: bool = False) -> bytes:
    """A FRAME (or HEARTBEAT carrying the same full frame) packet, delimiters included."""
    msg_type = core.MSG_HEARTBEAT if heartbeat else core.MSG_FRAME
    return core.encode_packet(msg_type, seq, frame.payload())


def encode_ack(seq: int, acked_seq: int, status: int = core.STATUS_OK) -> bytes:
    return core.encode_packet(core.MSG_ACK, seq, core.encode_ack(acked_seq, status))


def encode_hello(seq: int, info: str = "shotclock-display/2") -> bytes:
    return core.encode_packet(core.MSG_HELLO, seq, info.encode())


def encode_status(seq: int, code: int, text: str = "") -> bytes:
    return core.encode_packet(core.MSG_STATUS, seq, bytes((code,)) + text.encode())


def decode_message(msg_type: int, seq: int, payload: bytes) -> Message:
    """Turn one decoded packet into a typed message; ProtocolError if it makes no sense."""
    if msg_type in (core.MSG_FRAME, core.MSG_HEARTBEAT):
        heartbeat = msg_type == core.MSG_HEARTBEAT
        if heartbeat and not payload:
            return FrameMessage(seq, None, heartbeat=True)
        return FrameMessage(seq, WireFrame.from_payload(payload), heartbeat=heartbeat)
    if msg_type == core.MSG_ACK:
        try:
            acked, status = core.decode_ack(payload)
        except ValueError as exc:
            raise ProtocolError(str(exc)) from exc
        return Ack(seq, acked, status)
    if msg_type == core.MSG_HELLO:
        return Hello(seq, payload.decode(errors="replace"))
    if msg_type == core.MSG_STATUS:
        if not payload:
            raise ProtocolError("STATUS without a code byte")
        return Status(seq, payload[0], payload[1:].decode(errors="replace"))
    raise ProtocolError(f"unknown message type 0x{msg_type:02x}")


class StreamDecoder:
    """Bytes in, typed messages out; skips garbage, truncated and unknown packets by itself."""

    def __init__(self) -> None:
        self._decoder = core.Decoder()
        self.unknown = 0

    @property
    def errors(self) -> int:
        """Packets dropped: bad framing, CRC, version, length, or meaningless content."""
        return int(self._decoder.errors) + self.unknown

    def feed(self, data: bytes) -> list[Message]:
        messages: list[Message] = []
        for msg_type, seq, payload in self._decoder.feed(data):
            try:
                messages.append(decode_message(msg_type, seq, payload))
            except ProtocolError:
                self.unknown += 1
        return messages
