"""Table-side hardware: LED digits, buzzer and buttons, on GPIO or a serial display controller.

Hardware libraries (gpiozero, pyserial) are imported lazily by the drivers that need them,
so the service runs and tests on a laptop without a Pi.
"""
