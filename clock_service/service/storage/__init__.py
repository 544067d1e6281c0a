"""The store: one SQLite file that keeps the event log, the tables' snapshots and the
projections derived from the log (the match index), written by one thread.

- :mod:`.log` -- :class:`Store`: the writer thread, appends, snapshots, the lock, reads.
- :mod:`.index` -- the match index the writer keeps beside the log (listing, where a
  match lies in its table's log), rebuilt from the log when missing.
- :mod:`.records` -- the reading of a match's events (and their digest) for its record.

The reports package reads through these modules; nothing here imports the reports.
"""

from clock_service.service.storage.log import ARCHIVE_SEP, ArchivedTable, Store, StoredTable

__all__ = ["Store", "StoredTable", "ArchivedTable", "ARCHIVE_SEP"]
