# ruff: noqa: UP031, E501  -- runs on MicroPython too: %-formatting, no f-strings
"""Firmware logic transcript: run by CPython and by the MicroPython unix port, compared byte
for byte (tests/hardware/test_firmware.py). Usage: <python> firmware_vectors.py FIRMWARE_DIR

Prints the encoded packets, CRCs, COBS blocks, segment bytes of the shared protocol core,
then a controller session (host frames in, ACKs and events out, faults across the ticks
wrap), then the firmware's own Table loop with fake pins: digits, horn and LED over time.
"""

import sys

here = sys.argv[0].rsplit("/", 1)[0] if "/" in sys.argv[0] else "."
sys.path.insert(0, sys.argv[1])  # firmware/
sys.path.insert(0, here + "/firmware_host")  # fake machine (and micropython on CPython)

import machine  # noqa: E402
import main as fw  # noqa: E402
import protocol_core as core  # noqa: E402

PERIOD = 1 << 30


def ticks_diff(a, b):
    return ((a - b + PERIOD // 2) & (PERIOD - 1)) - PERIOD // 2


def hx(data):
    return "".join("%02x" % b for b in data)


# -- the shared core -------------------------------------------------------------------------
FRAMES = [
    ("35", "running", 0, (1, 1), (0, 0), 0, 0, 7, 0),
    ("4.9", "critical", 1, (0, 1), (2, 3), 1, 7, 3, 1),
    ("0.0", "expired", 1, (0, 0), (0, 1), 2, 255, 7, 0),
    ("--", "off", 0, (0, 0), (0, 0), 3, 1, 0, 0),
    ("", "frame_over", 0, (0, 0), (0, 0), 4, 2, 5, 1),
    ("8.8.8.8.", "off", 0, (0, 0), (0, 0), 0, 0, 7, 0),
]
for i, f in enumerate(FRAMES):
    payload = core.encode_frame(f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8])
    packet = core.encode_packet(core.MSG_FRAME, i * 4097, payload)
    print("frame", i, hx(packet), core.decode_frame(payload) == f)
    for module in core.MODULES:
        print("segments", module, repr(f[0]), hx(core.text_to_segments(f[0], 4, module)))
for data in (b"", b"123456789", bytes(range(256)), b"\x00" * 7, bytes([1]) * 300):
    print("crc", len(data), core.crc16(data), hx(core.cobs_encode(data))[:80])
for kind in range(len(core.BUZZ_NAMES)):
    print("tone", core.BUZZ_NAMES[kind], [core.buzzer_on(kind, t) for t in range(0, 1600, 40)])

# -- a controller session: noise, frames, a silent host across the ticks wrap ---------------
ctl = core.ControllerCore(1000, ticks_diff)
start = PERIOD - 500
print("hello", hx(ctl.boot(start)))
stream = b"\xde\xad" + core.encode_packet(core.MSG_FRAME, 1, core.encode_frame(*FRAMES[0]))
stream += core.encode_packet(core.MSG_HEARTBEAT, 2, core.encode_frame(*FRAMES[1]))
stream += core.encode_packet(core.MSG_HEARTBEAT, 3, b"")
for n, chunk in enumerate([stream[:7], stream[7:30], stream[30:]]):
    replies, events = ctl.feed(chunk, (start + n * 10) % PERIOD)
    print("feed", n, hx(replies), events)
for dt in (900, 1019, 1020, 1500):
    print("tick", dt, ctl.tick((start + dt) % PERIOD))
print("errors", ctl.decoder.errors, ctl.decoder.packets)


# -- the firmware's loop with fake pins ------------------------------------------------------
class Digits:
    def __init__(self):
        self.writes = []

    def write(self, segments, brightness=7, on=True):
        self.writes.append((hx(segments), brightness, on))


sent = []
digits = Digits()
horn_pin = machine.Pin(15, machine.Pin.OUT)
led = machine.Pin("LED", machine.Pin.OUT, value=0)
horn = fw.Horn(horn_pin, False, ticks_diff)  # an active-low relay module
table = fw.Table(digits, horn, led, sent.append, ticks_diff, module="colon")
t0 = PERIOD - 700  # the wrap falls inside the run
table.boot(t0)
script = [
    (0, b""),
    (500, core.encode_packet(core.MSG_FRAME, 10, core.encode_frame("35", "running", 0, (1, 1), (0, 0), 0, 0, 7, 0))),
    (1100, core.encode_packet(core.MSG_FRAME, 11, core.encode_frame("4.9", "critical", 0, (1, 1), (0, 0), 4, 1, 2, 0))),
    (1300, core.encode_packet(core.MSG_FRAME, 12, core.encode_frame("4.7", "critical", 0, (1, 1), (0, 0), 4, 1, 2, 1))),
    (1800, core.encode_packet(core.MSG_HEARTBEAT, 13, b"")),
    (2300, b""),
    (3000, b""),
    (3100, core.encode_packet(core.MSG_FRAME, 14, core.encode_frame("", "off", 0, (0, 0), (0, 0), 0, 1, 7, 0))),
]
for dt, data in script:
    for step in range(0, 100, 20):  # the loop runs every few ms; sample it at 20 ms
        table.step(data if step == 0 else b"", (t0 + dt + step) % PERIOD)
    print("at", dt, "digits", digits.writes[-1], "horn", horn_pin.history[-6:], "led", led.history[-3:])
print("sent", len(sent), hx(b"".join(sent))[:120])
print("writes", len(digits.writes))
