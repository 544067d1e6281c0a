"""CPython stand-in for MicroPython's ``micropython`` module (the unix port has its own)."""

calls = []


def kbd_intr(chr):
    calls.append(chr)
