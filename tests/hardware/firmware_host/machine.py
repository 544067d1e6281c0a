"""A fake ``machine`` module: just enough of MicroPython's for firmware/main.py's classes.

Used by tests/hardware/firmware_vectors.py under both CPython and the MicroPython unix
port (which has no GPIO). Every pin records the values written to it.
"""


class Pin:
    IN = 0
    OUT = 1
    OPEN_DRAIN = 2
    PULL_UP = 1

    def __init__(self, id, mode=-1, pull=None, value=None):
        self.id = id
        self.mode = mode
        self.history = []
        if value is not None:
            self.history.append(value)

    def value(self, v=None):
        if v is None:
            return self.history[-1] if self.history else 0
        self.history.append(1 if v else 0)
        return None


class WDT:
    def __init__(self, timeout=5000):
        self.timeout = timeout
        self.fed = 0

    def feed(self):
        self.fed += 1
