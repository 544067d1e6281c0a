"""MQTT: every table on a broker, and the hall's mirror of them (issue 13).

- ``topics``: the topic names and the ``SHOTCLOCK_MQTT_URL`` (pure).
- ``feed``: what a table's publisher sends next (pure: acked seq, catch-up, order).
- ``mirror``: what the hall appends next for a table (pure: de-dup, gaps, replay asks).
- ``connection``: paho-mqtt on the asyncio loop (non-blocking; imported only with a broker).
- ``publisher``: the adapter of ``shotclock serve``: one connection per table.
- ``hall``: ``shotclock hall``, a runtime-like mirror of every table for the API.

Nothing here imports paho-mqtt at import time except ``connection``, and only the
adapters import ``connection``: the service runs without the ``mqtt`` extra.
"""
