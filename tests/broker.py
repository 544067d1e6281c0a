"""A real Mosquitto broker for the MQTT tests. It lives in :mod:`harness.broker`,
shared with the benchmark (which imports no test code)."""

from harness.broker import MOSQUITTO, Broker, mosquitto_missing

__all__ = ["MOSQUITTO", "Broker", "mosquitto_missing"]
