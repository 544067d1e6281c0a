"""Shot clock for a Russian-billiards discipline: timing core, service, event stream, store."""

__version__ = "0.1.0"
