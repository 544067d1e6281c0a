"""Matches as records: the statistics core, the match index, charts, protocol and exports.

- :mod:`.stats` -- the pure statistics core: a match's events in, its record out (no I/O).
- :mod:`.index` -- the match index the store's writer keeps beside the log (listing, where
  a match lies in its table's log), rebuilt from the log when missing.
- :mod:`.charts` -- the pictures as SVG text (pure).
- :mod:`.protocol` -- the protocol page as HTML (pure), ru/en, for ``report.css``.
- :mod:`.export` -- CSV (one row per shot) and JSON.
- :mod:`.service` -- reading a match from a store and building its record (blocking).
- :mod:`.worker` -- the reports process: records and their outputs made off the service.
- :mod:`.routes` -- the HTTP routes (``/api/matches``, ``/report``).
- :mod:`.cli` -- ``shotclock report``.
"""
