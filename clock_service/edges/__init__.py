"""The edges: HTTP and WebSocket API, MQTT, broadcast, tournament, reports, camera, CLI.

Each imports the core and the service; edges meet only through the service (the CLI,
the composition root, is the exception: it builds every part and hands them over).
"""
