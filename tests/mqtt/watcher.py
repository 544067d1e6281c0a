"""A plain paho-mqtt client for the MQTT tests. It lives in :mod:`harness.watcher`, shared
with the benchmark (which imports no test code)."""

from harness.watcher import Got, Watcher

__all__ = ["Got", "Watcher"]
