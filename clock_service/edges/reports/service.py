"""The match listing and records for the API, without holding up the event loop.

The listing reads the store in a worker thread; every record and everything made from it
is built in the reports worker process (:mod:`.worker`) from the store file (the blocking
reading and building: :mod:`.records`). It needs only a store's connection and path, so it
serves ``shotclock serve``'s store and the hall mirror's alike.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from typing import Any

from clock_service.core.errors import UnknownMatch
from clock_service.edges.reports import worker
from clock_service.service.storage.index import list_matches_json

__all__ = ["Reports"]


class Reports:
    """Match listing and records for the API.

    Listing runs in a worker thread on the store's reader connection (a keyset query whose
    JSON SQLite makes: the GIL is released while it runs). Records and everything made
    from them (JSON, CSV, charts, the protocol) are built in the reports worker process
    (reports/worker.py), which reads the store file itself: the event loop only waits on a
    future, whatever the readers ask for.
    """

    def __init__(self, connect: Callable[[], sqlite3.Connection], db: str) -> None:
        self._connect = connect  # this thread's reader connection
        self.db = db

    # -- listing (worker threads) ---------------------------------------------------------------
    def list_sync(self, *, table: str | None, since: int | None, after: str | None,
                  limit: int) -> str:
        """One page as the JSON text of ``MatchPage``."""
        try:
            text, next_id = list_matches_json(self._connect(), table=table, since=since,
                                              after=after, limit=limit)
        except KeyError:  # a well-formed match id (the pattern) that is not there: 404
            raise UnknownMatch(str(after)) from None
        return f'{{"matches":{text},"next":{json.dumps(next_id)}}}'

    async def list(self, **kwargs: Any) -> str:
        return await asyncio.to_thread(lambda: self.list_sync(**kwargs))

    # -- records (the worker process) -------------------------------------------------------------
    async def output(self, match_id: str, kind: str, **options: Any) -> str:
        """The match's ``kind`` output (json, csv, svg, html) as text, made by the worker."""
        loop = asyncio.get_running_loop()
        for attempt in (1, 2):
            pool = worker.executor()
            try:
                code, text = await loop.run_in_executor(
                    pool, worker.render, self.db, match_id, kind, options)
                break
            except worker.BrokenProcessPool:
                worker.reset_executor(pool)  # it died (killed?): a new one, once
                if attempt == 2:
                    raise
        if code == "unknown_match":
            raise UnknownMatch(match_id)
        return text
