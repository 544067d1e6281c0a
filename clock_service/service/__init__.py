"""The service: the runtime around the core, the store, the hub, auth, limits, settings.

Imports the core, never an edge.
"""
