"""What the tests and the benchmark share, so that neither imports the other.

- :mod:`.suite` -- ``make test``'s two pytest runs (README.md here says how and why)
- :mod:`.thread_server` -- ``shotclock serve``'s service in a thread of the test's process
- :mod:`.server` -- a real ``shotclock serve`` (or ``hall``) process on a free loopback port
  (forked by :mod:`.zygote`)
- :mod:`.broker` -- a real Mosquitto broker for the MQTT tests and benchmark, its role
  accounts (``ROLES``, ``roles.acl``)
- :mod:`.watcher` -- a plain paho-mqtt client: an outside consumer of the hall's topics
- :mod:`.process` -- stopping (or killing) such a child process
- :mod:`.figures` -- percentiles of measured figures
- :mod:`.bare_loop` -- a bare asyncio loop in its own process: the reference for "late"
- :mod:`.attack` -- the hostile-network attacks and the canary that measures them
- :mod:`.synthetic` -- a synthetic overhead camera with the ground truth of every shot
- :mod:`.reports` -- a scripted table's clock and log for the reports tests and benchmark

Not part of the service (not installed with it): it lives beside ``tests/`` and ``bench/``.
"""
