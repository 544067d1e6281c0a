"""Reading matches from a store and building their records: the I/O around the pure core.

The reading and building functions are blocking (SQLite reads, JSON decoding, the
statistics): the service runs them in the reports worker process (:mod:`.worker`, through
:class:`Reports`), ``shotclock report`` directly.

It needs only a store's connection, so it serves the match log of any store with the
same tables: ``shotclock serve``'s and the hall mirror's (``shotclock hall``) alike.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable
from typing import Any

from clock_service.errors import ShotClockError
from clock_service.reports import worker
from clock_service.reports.stats import MatchRecord, build_match
from clock_service.signing import verify_match
from clock_service.storage.index import list_matches_json, match_row, split_match_id
from clock_service.storage.records import last_seq, load_events

__all__ = ["Reports", "UnknownMatch", "read_match", "load_events", "build_from_store",
           "last_seq"]


class UnknownMatch(ShotClockError, LookupError):
    code = "unknown_match"

    def __init__(self, match_id: str) -> None:
        super().__init__(f"no match {match_id!r} (a match id is '<table>.<number>', "
                         "e.g. '1.1'; GET /api/matches lists them)", code="unknown_match")


def build_from_store(conn: sqlite3.Connection, summary: dict[str, Any],
                     last: int | None = None) -> MatchRecord:
    last = last_seq(conn, summary) if last is None else last
    events, digest = load_events(conn, summary["table"], summary["start_seq"], last)
    record = build_match(events, table=summary["table"])
    record.digest = digest
    # The table's signature of the record, checked against this store (issue 20).
    record.signature = verify_match(conn, summary["table"], events).to_dict()
    record.last_seq = last
    return record


def read_match(conn: sqlite3.Connection, match_id: str) -> tuple[dict[str, Any], MatchRecord]:
    """(the index's summary, the record built from the log) of one match."""
    key = split_match_id(match_id)
    summary = None if key is None else match_row(conn, *key)
    if key is None or summary is None:
        raise UnknownMatch(match_id)
    return summary, build_from_store(conn, summary)


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
