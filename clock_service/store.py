"""Moved to :mod:`clock_service.storage` (issue 19); kept importable for older imports."""

from clock_service.storage.log import ARCHIVE_SEP, ArchivedTable, Store, StoredTable

__all__ = ["Store", "StoredTable", "ArchivedTable", "ARCHIVE_SEP"]
