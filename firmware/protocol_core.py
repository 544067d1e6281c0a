# ruff: noqa: UP031, UP032  -- %-formatting on purpose: MicroPython ports differ on f-strings.
"""Wire protocol between the shot-clock host and a display controller, and the controller logic.

This one file runs unchanged on CPython (host, emulator, tests) and on MicroPython (the
Pico firmware), so it keeps to their common subset: no dataclasses, no typing imports,
no f-strings, no int.to_bytes keywords; type hints live in comments for mypy. COBS and
CRC-16 are implemented here because MicroPython has neither ``cobs`` nor ``binascii.crc_hqx``.
The host imports it as ``firmware_bridge.protocol_core`` (a symlink to this file), so the
host and the firmware cannot drift apart. Byte layout and timing: see PROTOCOL.md.
"""

VERSION = 2  # 2: brightness and flags in the frame; chirp and refusal tones

# Message types. Host -> controller: FRAME, HEARTBEAT. Controller -> host: ACK, HELLO, STATUS.
MSG_FRAME = 0x01
MSG_HEARTBEAT = 0x02
MSG_ACK = 0x03
MSG_HELLO = 0x04
MSG_STATUS = 0x05
MSG_NAMES = {
    MSG_FRAME: "FRAME",
    MSG_HEARTBEAT: "HEARTBEAT",
    MSG_ACK: "ACK",
    MSG_HELLO: "HELLO",
    MSG_STATUS: "STATUS",
}

# Must equal clock_service.core.readout.STAGES (a test checks): the wire carries the index.
STAGES = ("off", "ready", "running", "warning", "critical", "paused", "expired", "frame_over")

BUZZ_NONE = 0
BUZZ_BEEP = 1  # a warning threshold (12.x warnings)
BUZZ_LONG = 2  # the shot time ran out (12.4)
BUZZ_CHIRP = 3  # a long press registered (the correction is on its way)
BUZZ_REFUSED = 4  # the service refused a press (e.g. stale_press): three short pips
BUZZ_NAMES = ("none", "beep", "long", "chirp", "refused")
# Each tone as on/off durations in ms, starting with "on"; shared by the firmware, the
# emulator and the Pi's own buzzer so a refusal sounds the same everywhere.
BUZZ_PATTERNS = ((), (150,), (1500,), (40,), (80, 80, 80, 80, 80))

# Frame flags.
FLAG_OFFLINE = 0x01  # the link to the hall service is lost: the time shown is an estimate
BRIGHTNESS_MAX = 7

STATUS_OK = 0
STATUS_NO_HEARTBEAT = 1
STATUS_BAD_FRAMES = 2

HEADER_LEN = 4  # version, type, seq (u16 big-endian)
CRC_LEN = 2
MAX_TEXT = 8
MAX_PAYLOAD = 56
MAX_RAW = HEADER_LEN + MAX_PAYLOAD + CRC_LEN  # 62
# COBS adds one byte per 254 plus one; anything longer between delimiters is garbage.
MAX_ENCODED = MAX_RAW + MAX_RAW // 254 + 1

HEARTBEAT_MS = 250
TIMEOUT_MS = 1000

# stage, player, ext0, ext1, fouls0, fouls1, buzz kind, buzz seq, brightness, flags, text len
FRAME_FIXED_LEN = 11


def crc16(data, crc=0):
    # type: (bytes | bytearray, int) -> int
    """CRC-16/XMODEM (poly 0x1021, init 0, no reflection): equals ``binascii.crc_hqx(data, 0)``."""
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = (crc << 1 ^ 4129) & 65535 if crc & 32768 else crc << 1 & 65535
    return crc


def cobs_encode(data):
    # type: (bytes) -> bytes
    """Consistent Overhead Byte Stuffing: the output holds no zero byte (same as ``cobs.cobs``)."""
    out = bytearray()
    code_index = 0
    out.append(0)  # placeholder for the first code byte
    code = 1
    last = len(data) - 1
    for i in range(len(data)):
        byte = data[i]
        if byte == 0:
            out[code_index] = code
            code_index = len(out)
            out.append(0)
            code = 1
        else:
            out.append(byte)
            code += 1
            # A full 254-byte run closes its block; a new one opens only if data follows
            # (the reference encoding adds no empty trailing block).
            if code == 0xFF and i != last:
                out[code_index] = code
                code_index = len(out)
                out.append(0)
                code = 1
    out[code_index] = code
    return bytes(out)


def cobs_decode(data):
    # type: (bytes) -> bytes
    """Inverse of :func:`cobs_encode`; raises ValueError on a malformed block."""
    out = bytearray()
    index = 0
    length = len(data)
    while index < length:
        code = data[index]
        if code == 0:
            raise ValueError("zero byte inside a COBS block")
        end = index + code
        if end > length:
            raise ValueError("COBS block truncated")
        for i in range(index + 1, end):
            if data[i] == 0:
                raise ValueError("zero byte inside a COBS block")
            out.append(data[i])
        index = end
        if code != 0xFF and index < length:
            out.append(0)
    return bytes(out)


def encode_packet(msg_type, seq, payload=b""):
    # type: (int, int, bytes) -> bytes
    """One message on the wire: 0x00, COBS(version type seq payload crc), 0x00.

    The leading delimiter ends whatever garbage or half frame came before, so the receiver
    resynchronises on the very next packet instead of losing it too.
    """
    if len(payload) > MAX_PAYLOAD:
        raise ValueError("payload of %d bytes exceeds the cap %d" % (len(payload), MAX_PAYLOAD))
    if not 0 <= msg_type <= 0xFF:
        raise ValueError("message type %r out of range" % (msg_type,))
    seq &= 0xFFFF
    raw = bytearray((VERSION, msg_type, seq >> 8, seq & 0xFF))
    raw.extend(payload)
    crc = crc16(raw)
    raw.append(crc >> 8)
    raw.append(crc & 0xFF)
    return b"\x00" + cobs_encode(bytes(raw)) + b"\x00"


def decode_packet(block):
    # type: (bytes) -> tuple
    """Decode one COBS block (without delimiters) into (type, seq, payload); ValueError if bad."""
    if len(block) > MAX_ENCODED:
        raise ValueError("block of %d bytes exceeds the cap" % len(block))
    raw = cobs_decode(block)
    if len(raw) < HEADER_LEN + CRC_LEN:
        raise ValueError("packet of %d bytes is too short" % len(raw))
    body = raw[:-CRC_LEN]
    crc = (raw[-2] << 8) | raw[-1]
    if crc16(body) != crc:
        raise ValueError("CRC mismatch")
    if body[0] != VERSION:
        raise ValueError("protocol version %d, expected %d" % (body[0], VERSION))
    return body[1], (body[2] << 8) | body[3], bytes(body[HEADER_LEN:])


class Decoder:
    """Splits a byte stream at 0x00 delimiters and yields valid packets, skipping bad ones.

    Never raises on input: garbage, truncated packets and overlong runs are counted in
    ``errors`` and dropped, and decoding resumes at the next delimiter.
    """

    def __init__(self):
        # type: () -> None
        self.buffer = bytearray()
        self.overflow = False  # inside an overlong run: drop bytes until the next delimiter
        self.errors = 0
        self.packets = 0

    def feed(self, data):
        # type: (bytes) -> list
        """Feed received bytes; return a list of (type, seq, payload) tuples."""
        packets = []
        for byte in data:
            if byte == 0:
                if self.overflow:
                    self.overflow = False
                elif self.buffer:
                    try:
                        packets.append(decode_packet(bytes(self.buffer)))
                        self.packets += 1
                    except ValueError:
                        self.errors += 1
                self.buffer = bytearray()
            elif not self.overflow:
                if len(self.buffer) >= MAX_ENCODED:
                    self.buffer = bytearray()
                    self.overflow = True
                    self.errors += 1
                else:
                    self.buffer.append(byte)
        return packets


def encode_frame(text, stage, player, ext, fouls, buzz_kind=BUZZ_NONE, buzz_seq=0,
                 brightness=BRIGHTNESS_MAX, flags=0):
    # type: (str, str, int, tuple, tuple, int, int, int, int) -> bytes
    """The FRAME payload: a full, idempotent picture of the display.

    The buzzer rides along as (kind, seq): the controller sounds it when ``buzz_seq``
    changes, so resending the same frame (heartbeat, reconnect) never repeats a beep.
    """
    if stage not in STAGES:
        raise ValueError("unknown stage %r" % (stage,))
    data = text.encode()
    if len(data) > MAX_TEXT:
        raise ValueError("display text %r longer than %d bytes" % (text, MAX_TEXT))
    fields = (STAGES.index(stage), player, ext[0], ext[1], fouls[0], fouls[1], buzz_kind,
              buzz_seq, brightness, flags)
    for value in fields:
        if not 0 <= value <= 0xFF:
            raise ValueError("frame field %r out of byte range in %r" % (value, fields))
    if not 0 <= buzz_kind < len(BUZZ_NAMES):
        raise ValueError("unknown buzzer kind %r" % (buzz_kind,))
    if brightness > BRIGHTNESS_MAX:
        raise ValueError("brightness %r above %d" % (brightness, BRIGHTNESS_MAX))
    return bytes(fields) + bytes((len(data),)) + data


def decode_frame(payload):
    # type: (bytes) -> tuple
    """Inverse of encode_frame.

    Returns (text, stage, player, (ext0, ext1), (fouls0, fouls1), buzz_kind, buzz_seq,
    brightness, flags).
    """
    if len(payload) < FRAME_FIXED_LEN:
        raise ValueError("frame payload of %d bytes is too short" % len(payload))
    n = payload[10]
    if n > MAX_TEXT or len(payload) != FRAME_FIXED_LEN + n:
        raise ValueError("frame text length %d does not match the payload" % n)
    if payload[0] >= len(STAGES):
        raise ValueError("unknown stage index %d" % payload[0])
    if payload[6] >= len(BUZZ_NAMES):
        raise ValueError("unknown buzzer kind %d" % payload[6])
    if payload[8] > BRIGHTNESS_MAX:
        raise ValueError("brightness %d above %d" % (payload[8], BRIGHTNESS_MAX))
    text = bytes(payload[FRAME_FIXED_LEN:]).decode()
    return (
        text,
        STAGES[payload[0]],
        payload[1],
        (payload[2], payload[3]),
        (payload[4], payload[5]),
        payload[6],
        payload[7],
        payload[8],
        payload[9],
    )


def buzzer_on(kind, elapsed_ms):
    # type: (int, int) -> bool | None
    """Whether tone ``kind`` drives the buzzer ``elapsed_ms`` after it began; None when over."""
    t = elapsed_ms
    on = True
    for duration in BUZZ_PATTERNS[kind]:
        if t < duration:
            return on
        t -= duration
        on = not on
    return None


def encode_ack(acked_seq, status=STATUS_OK):
    # type: (int, int) -> bytes
    acked_seq &= 0xFFFF
    return bytes((acked_seq >> 8, acked_seq & 0xFF, status))


def decode_ack(payload):
    # type: (bytes) -> tuple
    """(acked seq, status code)."""
    if len(payload) != 3:
        raise ValueError("ACK payload must be 3 bytes, got %d" % len(payload))
    return (payload[0] << 8) | payload[1], payload[2]


# --- seven-segment font, shared by the Pico firmware and the host's TM1637 driver ----------
# Bits: 0x01 a (top), 0x02 b, 0x04 c, 0x08 d, 0x10 e, 0x20 f, 0x40 g (middle), 0x80 dp/colon.
DIGIT_SEGMENTS = (0x3F, 0x06, 0x5B, 0x4F, 0x66, 0x6D, 0x7D, 0x07, 0x7F, 0x6F)
# Letters: "Err"/"oFF" and, at the end of a match, "nEXt" (X drawn as H: no x on 7 segments).
CHAR_SEGMENTS = {" ": 0x00, "-": 0x40, "_": 0x08, "E": 0x79, "r": 0x50, "o": 0x5C, "F": 0x71,
                 "n": 0x54, "X": 0x76, "t": 0x78}
SEG_DP = 0x80
MODULES = ("dp", "colon")
# On the common 4-digit "clock" module the 0x80 bit of digit 2 (index 1) is the colon
# between digits 2 and 3, and no digit has a decimal point.
COLON_CELL = 1


def _cells(text):
    # type: (str) -> list
    cells = []  # type: list
    for ch in text:
        if (ch == "." or ch == ":") and cells:
            cells[-1] |= SEG_DP
        elif "0" <= ch <= "9":
            cells.append(DIGIT_SEGMENTS[ord(ch) - 48])
        else:
            cells.append(CHAR_SEGMENTS.get(ch, 0x00))
    return cells


def text_to_segments(text, digits=4, module="dp"):
    # type: (str, int, str) -> bytes
    """Segment bytes for ``text`` on a ``module`` ("dp": a point per digit; "colon": one
    colon after digit 2 and no points).

    On "dp" modules the text is right-aligned and a '.' or ':' lights the previous digit's
    point. A colon module cannot show "4.9" that way (it would read "49"): tenths put the
    seconds left of the colon and the tenth right of it (" 4:9 "), so they are never
    mistaken for whole seconds.
    """
    if module not in MODULES:
        raise ValueError("unknown display module %r; expected one of %r" % (module, MODULES))
    if module == "colon" and text.count(".") == 1 and ":" not in text and digits > COLON_CELL + 1:
        left, right = text.split(".", 1)
        head = _cells(left)[-(COLON_CELL + 1):]
        head = [0] * (COLON_CELL + 1 - len(head)) + head
        head[COLON_CELL] |= SEG_DP
        tail = _cells(right)[:digits - COLON_CELL - 1]
        return bytes(head + tail + [0] * (digits - COLON_CELL - 1 - len(tail)))
    cells = _cells(text)[-digits:]
    return bytes([0] * (digits - len(cells)) + cells)


def segments_to_text(segments):
    # type: (bytes) -> str
    """Inverse of text_to_segments for digits, '-', ' ' and points (tests decode the wire)."""
    out = ""
    for seg in segments:
        base = seg & 0x7F
        if base in DIGIT_SEGMENTS:
            out += str(DIGIT_SEGMENTS.index(base))
        else:
            ch = "?"
            for key in CHAR_SEGMENTS:
                if CHAR_SEGMENTS[key] == base:
                    ch = key
                    break
            out += ch
        if seg & SEG_DP:
            out += "."
    return out.strip()


FAULT_SEGMENTS = bytes((0x40, 0x40, 0x40, 0x40))  # "----": the host is gone; never stale digits


def plain_ticks_diff(a, b):
    # type: (int, int) -> int
    """``a - b`` for a clock that never wraps (CPython's monotonic ms)."""
    return a - b


class ControllerCore:
    """The display controller's logic without I/O: bytes and the time in, replies and events out.

    Used by the Pico firmware (firmware/main.py) and the host-side emulator alike. Events are
    tuples: ("display", frame), ("buzzer", name), ("fault", reason). ``frame`` is the
    decode_frame tuple. A fault blanks the digits so a dead host never leaves stale time.

    ``ticks_diff``: how to subtract two times. MicroPython's ``time.ticks_ms()`` wraps (every
    2**30 ms on the Pico, about 12.4 days), so the firmware passes ``time.ticks_diff``; a
    plain subtraction across the wrap would never (or at once) report the host silent.
    """

    def __init__(self, timeout_ms=TIMEOUT_MS, ticks_diff=plain_ticks_diff):
        # type: (int, object) -> None
        self.timeout_ms = timeout_ms
        self.ticks_diff = ticks_diff
        self.decoder = Decoder()
        self.seq = 0
        self.frame = None  # type: tuple | None
        self.shown = None  # type: tuple | None  # what the digits show: frame minus buzzer
        self.buzz_seq = None  # type: int | None
        self.last_valid_ms = 0
        self.fault = None  # type: str | None

    def _next_seq(self):
        # type: () -> int
        self.seq = (self.seq + 1) & 0xFFFF
        return self.seq

    def boot(self, now_ms):
        # type: (int) -> bytes
        """Reset to power-on state; returns the HELLO packet that makes the host resend at once."""
        self.decoder = Decoder()
        self.frame = None
        self.shown = None
        self.buzz_seq = None
        self.fault = None
        self.last_valid_ms = now_ms
        return encode_packet(MSG_HELLO, self._next_seq(), b"shotclock-display/2")

    def feed(self, data, now_ms):
        # type: (bytes, int) -> tuple
        """Process received bytes; returns (reply bytes to send, list of events)."""
        replies = bytearray()
        events = []  # type: list
        for msg_type, seq, payload in self.decoder.feed(data):
            if msg_type not in (MSG_FRAME, MSG_HEARTBEAT):
                continue  # a controller ignores controller-bound types it does not know
            if msg_type == MSG_HEARTBEAT and not payload:
                frame = self.frame  # a bare heartbeat: keep showing what we have
            else:
                try:
                    frame = decode_frame(payload)
                except ValueError:
                    self.decoder.errors += 1
                    continue
            self.last_valid_ms = now_ms
            replies.extend(encode_packet(MSG_ACK, self._next_seq(), encode_ack(seq)))
            recovered = self.fault is not None
            self.fault = None
            if frame is None:
                continue
            self.frame = frame
            if self.buzz_seq is None:
                # First frame after boot: adopt its buzz seq, so a beep from before our reset
                # is not sounded late.
                self.buzz_seq = frame[6]
            elif frame[6] != self.buzz_seq:
                self.buzz_seq = frame[6]
                if frame[5] != BUZZ_NONE:
                    events.append(("buzzer", BUZZ_NAMES[frame[5]]))
            shown = frame[:5] + frame[7:9]  # the picture: text .. fouls, brightness, flags
            if shown != self.shown or recovered:
                self.shown = shown
                events.append(("display", frame))
        return bytes(replies), events

    def tick(self, now_ms):
        # type: (int) -> list
        """Call often (every few ms): detects the host going silent past the timeout."""
        elapsed = self.ticks_diff(now_ms, self.last_valid_ms)  # type: ignore[operator]
        if self.fault is None and elapsed >= self.timeout_ms:
            self.fault = "no-heartbeat"
            self.shown = None
            return [("fault", self.fault)]
        return []
