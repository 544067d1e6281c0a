"""Matches as records: the statistics core, charts, protocol and exports.

- :mod:`.stats` -- the pure statistics core: a match's events in, its record out (no I/O).
- The match index and the reading of a match's events live in the store
  (:mod:`clock_service.service.storage.index`, :mod:`clock_service.service.storage.records`); the
  reports read through them.
- :mod:`.charts` -- the pictures as SVG text (pure).
- :mod:`.protocol` -- the protocol page as HTML (pure), ru/en, for ``report.css``.
- :mod:`.export` -- CSV (one row per shot) and JSON.
- :mod:`.records` -- reading a match from a store and building its record (blocking).
- :mod:`.service` -- ``Reports``: the listing and records for the API, off the event loop.
- :mod:`.worker` -- the reports process: records and their outputs made off the service.
- :mod:`.routes` -- the HTTP routes (``/api/matches``, ``/report``).
- :mod:`.cli` -- ``shotclock report``.
"""
