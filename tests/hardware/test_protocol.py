"""The wire protocol: core primitives against reference implementations, framing, resync."""

from __future__ import annotations

import ast
import binascii
import os
import random
from pathlib import Path

import pytest
from cobs import cobs

from clock_service.core.readout import STAGES, DisplayFrame
from firmware_bridge import protocol_core as core
from firmware_bridge.protocol import (
    Ack,
    FrameMessage,
    Hello,
    StreamDecoder,
    WireFrame,
    encode_ack,
    encode_frame,
    encode_hello,
)

ROOT = Path(__file__).resolve().parents[2]
FRAME_35 = WireFrame(DisplayFrame("35", "running", 0, (1, 1), (0, 0)))


def _samples() -> list[bytes]:
    rng = random.Random(1637)
    out = [b"", b"\x00", b"\x00\x00", b"\x11\x00\x22", bytes(range(256)) * 2]
    for n in (1, 253, 254, 255, 256, 507, 508, 509, 700):
        out.append(bytes(rng.randrange(1, 256) for _ in range(n)))  # no zeros: long runs
        out.append(bytes(rng.choice((0, 0, 1, 255, rng.randrange(256))) for _ in range(n)))
    return out


@pytest.mark.parametrize("data", _samples(), ids=lambda d: f"len{len(d)}")
def test_cobs_and_crc_match_reference_implementations(data: bytes) -> None:
    assert core.cobs_encode(data) == cobs.encode(data)
    assert core.cobs_decode(cobs.encode(data)) == data
    assert core.crc16(data) == binascii.crc_hqx(data, 0)


def test_crc16_check_value() -> None:
    # The published check value of CRC-16/XMODEM for "123456789".
    assert core.crc16(b"123456789") == 0x31C3


@pytest.mark.parametrize("bad", [b"\x05\x01\x02", b"\x02\x00", b"\x00"])
def test_cobs_decode_rejects_malformed(bad: bytes) -> None:
    with pytest.raises(ValueError):
        core.cobs_decode(bad)


def test_core_is_the_same_file_the_firmware_ships() -> None:
    # firmware_bridge/protocol_core.py is a symlink; a copy that drifted would break the Pico.
    host = ROOT / "firmware_bridge" / "protocol_core.py"
    firmware = ROOT / "firmware" / "protocol_core.py"
    assert host.read_bytes() == firmware.read_bytes()


def test_core_stays_in_the_micropython_subset() -> None:
    tree = ast.parse((ROOT / "firmware" / "protocol_core.py").read_text())
    for node in ast.walk(tree):
        assert not isinstance(node, ast.JoinedStr), f"f-string at line {node.lineno}"
        assert not isinstance(node, ast.AnnAssign), f"variable annotation at line {node.lineno}"
        if isinstance(node, ast.Import | ast.ImportFrom):
            pytest.fail(f"import at line {node.lineno}: the core must stand alone")
        if isinstance(node, ast.FunctionDef):
            assert node.returns is None and not any(a.annotation for a in node.args.args)


def test_stages_match_render() -> None:
    assert core.STAGES == STAGES


def test_frame_roundtrip_through_the_wire() -> None:
    frames = [
        WireFrame(DisplayFrame("35", "running", 0, (1, 1), (0, 0))),
        WireFrame(DisplayFrame("4.9", "critical", 1, (0, 1), (2, 3)), "beep", 7),
        WireFrame(DisplayFrame("0.0", "expired", 1, (0, 0), (0, 1)), "long", 255),
        WireFrame(DisplayFrame("--", "off", 0)),
        WireFrame(DisplayFrame("", "frame_over", 0)),
    ]
    stream = b"".join(encode_frame(i, f, heartbeat=i % 2 == 1) for i, f in enumerate(frames))
    decoded = StreamDecoder().feed(stream)
    assert [m.frame for m in decoded if isinstance(m, FrameMessage)] == frames
    assert [m.seq for m in decoded] == list(range(len(frames)))


def test_packet_layout_is_as_documented() -> None:
    packet = encode_frame(0x0102, FRAME_35)
    assert packet[0] == 0 and packet[-1] == 0 and 0 not in packet[1:-1]
    raw = cobs.decode(packet[1:-1])
    assert raw[:4] == bytes((core.VERSION, core.MSG_FRAME, 0x01, 0x02))
    assert raw[4:-2] == bytes((2, 0, 1, 1, 0, 0, 0, 0, 7, 0, 2)) + b"35"
    assert int.from_bytes(raw[-2:], "big") == binascii.crc_hqx(raw[:-2], 0)


def test_decoder_resynchronises_on_garbage_truncation_and_corruption() -> None:
    good = encode_frame(1, FRAME_35)
    corrupted = bytearray(encode_frame(2, FRAME_35))
    corrupted[5] ^= 0x40
    truncated = encode_frame(3, FRAME_35)[:-6]
    overlong = b"\x01" * 500  # longer than any legal packet: dropped without buffering it all
    wrong_version = b"\x00" + cobs.encode(b"\x09\x01\x00\x04" + b"\x00\x00") + b"\x00"
    tail = encode_frame(9, FRAME_35)
    stream = (
        os.urandom(0)
        + b"\xde\xad\xbe\xef"
        + good
        + bytes(corrupted)
        + truncated
        + overlong
        + wrong_version
        + tail
    )
    decoder = StreamDecoder()
    # Byte by byte, as a slow UART would deliver it.
    messages = [m for b in stream for m in decoder.feed(bytes((b,)))]
    assert [m.seq for m in messages] == [1, 9]
    assert decoder.errors >= 4
    assert len(decoder._decoder.buffer) == 0


def test_decoder_survives_random_noise_and_still_decodes_after() -> None:
    rng = random.Random(7)
    decoder = StreamDecoder()
    for _ in range(200):
        decoder.feed(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80))))
    assert len(decoder._decoder.buffer) <= core.MAX_ENCODED
    assert decoder.feed(encode_frame(42, FRAME_35)) == [FrameMessage(42, FRAME_35)]


def test_controller_messages_decode() -> None:
    stream = encode_hello(1) + encode_ack(2, 0xBEEF)
    assert StreamDecoder().feed(stream) == [Hello(1, "shotclock-display/2"), Ack(2, 0xBEEF)]


@pytest.mark.parametrize(
    "frame",
    [
        DisplayFrame("123456789", "running", 0),
        DisplayFrame("35", "running", 0, (256, 0)),
        DisplayFrame("35", "running", 0, (-1, 0)),
    ],
)
def test_frames_that_do_not_fit_are_refused(frame: DisplayFrame) -> None:
    from firmware_bridge.errors import ProtocolError

    with pytest.raises(ProtocolError):
        WireFrame(frame).payload()


def test_payload_cap() -> None:
    with pytest.raises(ValueError, match="cap"):
        core.encode_packet(core.MSG_FRAME, 0, bytes(core.MAX_PAYLOAD + 1))


# --- the controller logic shared by the firmware and the emulator -------------------------


def _frame(text: str, buzzer: str = "none", buzz_seq: int = 0) -> bytes:
    return encode_frame(0, WireFrame(DisplayFrame(text, "running", 0, (1, 1)), buzzer, buzz_seq))  # type: ignore[arg-type]


def test_controller_acks_shows_changes_only_and_buzzes_once_per_seq() -> None:
    ctl = core.ControllerCore(timeout_ms=1000)
    hello = ctl.boot(0)
    assert isinstance(StreamDecoder().feed(hello)[0], Hello)
    replies, events = ctl.feed(_frame("35", "beep", 3), 10)
    # The first frame after boot adopts the buzz seq: a beep from before a reset is stale.
    assert [e[0] for e in events] == ["display"]
    assert isinstance(StreamDecoder().feed(replies)[0], Ack)
    _, events = ctl.feed(_frame("35", "beep", 3), 20)  # resent (heartbeat): nothing new
    assert events == []
    _, events = ctl.feed(_frame("34", "beep", 4), 30)
    assert events[0] == ("buzzer", "beep") and events[1][0] == "display"


def test_controller_faults_after_timeout_and_recovers() -> None:
    ctl = core.ControllerCore(timeout_ms=1000)
    ctl.boot(0)
    ctl.feed(_frame("35"), 100)
    assert ctl.tick(1099) == []
    assert ctl.tick(1100) == [("fault", "no-heartbeat")]
    assert ctl.tick(1500) == []  # reported once
    _, events = ctl.feed(_frame("35"), 1600)  # same digits, but they were blanked
    assert [e[0] for e in events] == ["display"]


# --- protocol v2: brightness, flags, tones; the controller across the ticks wrap ----------


def test_v2_frame_carries_brightness_offline_and_every_tone() -> None:
    frames = [
        WireFrame(DisplayFrame("12", "running", 0, (1, 1), (0, 0), offline=True), "chirp", 1, 2),
        WireFrame(DisplayFrame("7", "ready", 1), "refused", 2, 0),
    ]
    stream = b"".join(encode_frame(i, f) for i, f in enumerate(frames))
    assert [m.frame for m in StreamDecoder().feed(stream)] == frames
    with pytest.raises(ValueError, match="brightness"):
        WireFrame(DisplayFrame("1", "ready", 0), brightness=8)


def test_controller_shows_a_brightness_or_link_change_even_with_the_same_digits() -> None:
    ctl = core.ControllerCore(timeout_ms=1000)
    ctl.boot(0)
    base = DisplayFrame("20", "running", 0)
    ctl.feed(encode_frame(1, WireFrame(base)), 1)
    _, events = ctl.feed(encode_frame(2, WireFrame(base, brightness=1)), 2)
    assert [e[0] for e in events] == ["display"] and events[0][1][7] == 1
    _, events = ctl.feed(encode_frame(3, WireFrame(
        DisplayFrame("20", "running", 0, offline=True), brightness=1)), 3)
    assert events[0][1][8] & core.FLAG_OFFLINE


def test_controller_sounds_chirp_and_refused_once_each() -> None:
    ctl = core.ControllerCore(timeout_ms=1000)
    ctl.boot(0)
    ctl.feed(_frame("35", "none", 0), 1)
    _, events = ctl.feed(_frame("35", "refused", 1), 2)
    assert events == [("buzzer", "refused")]
    _, events = ctl.feed(_frame("35", "chirp", 2), 3)
    assert events == [("buzzer", "chirp")]


@pytest.mark.parametrize("kind", range(len(core.BUZZ_NAMES)))
def test_tone_patterns_start_on_and_end(kind: int) -> None:
    pattern = core.BUZZ_PATTERNS[kind]
    total = sum(pattern)
    assert core.buzzer_on(kind, total) is None
    if pattern:
        assert core.buzzer_on(kind, 0) is True
        assert core.buzzer_on(kind, total - 1) is True  # every pattern ends with "on"
    # the refusal is three pips: on, off, on, off, on
    refused = [core.buzzer_on(core.BUZZ_REFUSED, t) for t in (0, 100, 170, 250, 330, 400)]
    assert refused == [True, False, True, False, True, None]


TICKS_PERIOD = 1 << 30  # MicroPython's ticks_ms() wraps here on the Pico


def _ticks_diff(a: int, b: int) -> int:
    """MicroPython's time.ticks_diff, for a test on CPython."""
    return ((a - b + TICKS_PERIOD // 2) & (TICKS_PERIOD - 1)) - TICKS_PERIOD // 2


def test_controller_timeout_survives_the_ticks_wrap() -> None:
    """Defect 10: across the wrap a plain subtraction is hugely negative: no fault, ever."""
    near_wrap = TICKS_PERIOD - 300
    plain = core.ControllerCore(timeout_ms=1000)
    plain.boot(near_wrap)
    wrapped = (near_wrap + 1200) % TICKS_PERIOD  # 1.2 s later, after the wrap
    assert plain.tick(wrapped) == []  # the bug: the host has been silent 1.2 s
    ctl = core.ControllerCore(timeout_ms=1000, ticks_diff=_ticks_diff)
    ctl.boot(near_wrap)
    assert ctl.tick((near_wrap + 999) % TICKS_PERIOD) == []
    assert ctl.tick(wrapped) == [("fault", "no-heartbeat")]


def test_next_at_the_match_end_is_drawn_and_read_back() -> None:
    segments = core.text_to_segments("nEXt", 4, "colon")
    assert segments == bytes((0x54, 0x79, 0x76, 0x78))
    assert core.segments_to_text(segments) == "nEXt"


@pytest.mark.parametrize(
    ("text", "module", "cells"),
    [
        ("4.9", "dp", (" ", " ", "4.", "9")),
        ("4.9", "colon", (" ", "4:", "9", " ")),  # defect 5: not "49"
        ("0.0", "colon", (" ", "0:", "0", " ")),
        ("35", "colon", (" ", " ", "3", "5")),
        ("--", "colon", (" ", " ", "-", "-")),
        ("8.8.8.8.", "colon", ("8", "8:", "8", "8")),  # the self-test: 88:88
        ("8.8.8.8.", "dp", ("8.", "8.", "8.", "8.")),
        ("", "colon", (" ", " ", " ", " ")),
        # the match clock between frames (issue 36): the colon where it is wired
        ("18:43", "colon", ("1", "8:", "4", "3")),
        ("9:05", "colon", (" ", "9:", "0", "5")),
        ("18:43", "dp", ("1", "8.", "4", "3")),
    ],
)
def test_text_to_segments_per_module(text: str, module: str, cells: tuple[str, ...]) -> None:
    segments = core.text_to_segments(text, 4, module)
    shown = []
    for seg in segments:
        base = seg & 0x7F
        ch = str(core.DIGIT_SEGMENTS.index(base)) if base in core.DIGIT_SEGMENTS else \
            {0: " ", 0x40: "-"}[base]
        # on a colon module only digit 2's 0x80 bit is wired (the colon)
        if seg & core.SEG_DP:
            ch += ":" if module == "colon" else "."
        shown.append(ch)
    if module == "colon":  # the unwired points are invisible
        shown = [c if i == core.COLON_CELL else c.rstrip(":") for i, c in enumerate(shown)]
    assert tuple(shown) == cells
