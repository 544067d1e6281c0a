"""Results out (issue 25 point 5): a finished match's result, for the whole event as JSON
and CSV, and optionally POSTed to a webhook from an outbox in the store.

The result is made from the match's record (reports: frames, statistics, the SHA-256 of its
log as the statistics read it) and its ``match.ended`` event (a time limit's decision).
Delivery: when ``match.ended`` is durable, the result's JSON text is written to the store's
``outbox`` (durable), then POSTed, signed (webhook.py: ``X-Shotclock-Signature: t=<unix
s>,v1=<HMAC-SHA256 of "t.delivery id.body">``, ``X-Shotclock-Delivery``), until the receiver
answers 2xx; anything else (a 3xx included: never followed) is retried with exponential
backoff (from SHOTCLOCK_RESULTS_RETRY_S, doubling to 5 minutes). A row is marked sent only
after a 2xx, so a restart resumes where it was: nothing is lost. A receiver may see a
delivery again only if the service stopped between its 2xx and the mark (the same delivery
id, signed afresh: docs/results.md).

Where the webhook's URL and secret come from: SHOTCLOCK_RESULTS_WEBHOOK and
SHOTCLOCK_RESULTS_SECRET when set (the environment wins: the desk cannot change them),
else what the director set on the desk (``PUT /api/results/webhook``), kept in the store's
``meta`` and taking effect at once, no restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
import logging
import random
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from clock_service.core.errors import InvalidInput, RuleRefusal, UnknownMatch
from clock_service.core.text import csv_cell
from clock_service.edges.tournament.webhook import (
    check_url,
    delivery_headers,
    delivery_id,
    post,
    redacted,
    scrub,
)
from clock_service.service.runtime import Runtime
from clock_service.service.storage.index import split_match_id

__all__ = ["Results", "result_from", "results_csv", "FORMAT", "RESULT_COLUMNS",
           "MAX_RETRY_S"]

log = logging.getLogger(__name__)

FORMAT = "shotclock.result/1"
MAX_RETRY_S = 300.0
MAX_RESULTS = 500
MAX_URL = 2000
MAX_SECRET = 200
# The webhook set on the desk (the environment's is never written here).
URL_KEY, SECRET_KEY = "results_webhook_url", "results_webhook_secret"
RESULT_COLUMNS = ("match", "table", "event", "player1", "player2", "race_to", "score1",
                  "score2", "winner", "drawn", "by_time_limit", "frames", "started_at",
                  "ended_at", "duration_ms", "shots1", "shots2", "mean_ms1", "mean_ms2",
                  "fouls1", "fouls2", "extensions1", "extensions2", "draw_number", "digest")
_STAT_KEYS = ("shots", "timed_shots", "mean_ms", "median_ms", "max_ms", "total_ms",
              "extensions", "time_fouls", "fouls", "whites", "visits", "frames_won", "breaks",
              "breaks_won")


def result_from(record: Mapping[str, Any], ended: Mapping[str, Any] | None,
                draw_number: int | None = None) -> dict[str, Any]:
    """A finished match's result from its record (GET /api/matches/{id}) and the data of
    its ``match.ended`` event."""
    ended = ended or {}
    players = list(record["players"])
    winner = record.get("winner")
    started, finished = record.get("started_at"), record.get("ended_at")
    return {
        "format": FORMAT,
        "match": record["id"], "table": record["table"], "number": record["number"],
        "event": record.get("event"), "referee": record.get("referee"),
        "draw_number": draw_number,
        "players": players, "race_to": record.get("race_to"),
        "score": list(record["score"]),
        "winner": winner, "winner_name": None if winner is None else players[winner],
        "drawn": bool(ended.get("drawn", False)),
        "by_time_limit": bool(ended.get("by_time_limit", False)),
        "started_at": started, "ended_at": finished,
        "duration_ms": (None if started is None or finished is None else finished - started),
        "frames": [{"number": f["number"], "winner": f["winner"], "reason": f["reason"],
                    "duration_ms": f["duration_ms"], "whites": f["whites"]}
                   for f in record.get("frames", [])],
        "stats": [{"name": players[i], **{k: s.get(k) for k in _STAT_KEYS}}
                  for i, s in enumerate(record["players_stats"])],
        "digest": record.get("log_sha256"),
        "first_seq": record.get("start_seq"), "last_seq": record.get("last_seq"),
    }


def results_csv(results: Iterable[Mapping[str, Any]]) -> str:
    """One row per finished match (RESULT_COLUMNS)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(RESULT_COLUMNS)
    for r in results:
        a, b = r["stats"]
        writer.writerow([csv_cell(v) for v in (
            r["match"], r["table"], r["event"], r["players"][0], r["players"][1], r["race_to"],
            r["score"][0], r["score"][1], r["winner_name"], r["drawn"], r["by_time_limit"],
            len(r["frames"]), r["started_at"], r["ended_at"], r["duration_ms"], a["shots"],
            b["shots"], a["mean_ms"], b["mean_ms"], a["fouls"], b["fouls"], a["extensions"],
            b["extensions"], r["draw_number"], r["digest"])])
    return out.getvalue()



class MatchRecords(Protocol):
    """Where a finished match's record comes from (the app's match reports,
    clock_service/edges/reports/service.py ``Reports``), handed over by the composition
    root."""

    async def output(self, match_id: str, kind: str, **options: Any) -> str: ...

class Results:
    """Results of the matches on this service's store, and their webhook outbox."""

    def __init__(self, runtime: Runtime, reports: MatchRecords, *, webhook: str | None = None,
                 secret: str | None = None, retry_s: float = 2.0,
                 draw_number: Any = None, wall: Callable[[], float] = time.time) -> None:
        self.runtime = runtime
        self.reports = reports
        # Refused before the service starts (InvalidInput): urllib opens file:// too.
        # The environment's (settings) win over the desk's kept in the store.
        self.env_webhook = None if webhook is None else check_url(webhook)
        self.env_secret = secret
        self.webhook = self.env_webhook
        self.wall = wall  # the signature's t: the receiver compares it with its own clock
        self.secret = secret
        self._stored_secret: str | None = None
        self._begun = False
        self.retry_s = max(0.05, retry_s)
        self.draw_number = draw_number or (lambda match_id: None)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._pending: set[asyncio.Task[None]] = set()
        self.delivered = 0
        self.failures = 0

    # -- results ------------------------------------------------------------------------------
    def _ended(self, match_id: str) -> dict[str, Any] | None:
        """The match's own match.ended data, from the log (blocking: a worker thread)."""
        key = split_match_id(match_id)
        if key is None:
            return None
        conn = self.runtime.store.reader_connection()
        row = conn.execute("SELECT start_seq, end_seq FROM matches WHERE table_id = ? AND "
                           "number = ?", key).fetchone()
        if row is None:
            return None
        found = conn.execute(
            "SELECT json_extract(body, '$.data') FROM events WHERE table_id = ? AND seq >= ? "
            "AND seq <= ? AND type = 'match.ended' ORDER BY seq DESC LIMIT 1",
            (key[0], row[0], row[1] if row[1] is not None else 2**62)).fetchone()
        return None if found is None else json.loads(found[0])

    async def result(self, match_id: str) -> dict[str, Any]:
        record = json.loads(await self.reports.output(match_id, "json", shots=False))
        if record.get("status") != "over":
            raise UnknownMatch(match_id)  # no result before the match is over
        ended = await asyncio.to_thread(self._ended, match_id)
        return result_from(record, ended, self.draw_number(match_id))

    def _finished_ids(self, event: str | None, table: str | None) -> list[str]:
        conn = self.runtime.store.reader_connection()
        sql = ("SELECT table_id, number FROM matches WHERE status = 'over'"
               + (" AND json_extract(info, '$.event') = ?" if event is not None else "")
               + (" AND table_id = ?" if table is not None else "")
               + " ORDER BY ended_at, table_id, number LIMIT ?")
        params: list[Any] = [p for p in (event, table) if p is not None] + [MAX_RESULTS]
        return [f"{t}.{n}" for t, n in conn.execute(sql, params).fetchall()]

    async def event_results(self, event: str | None = None,
                            table: str | None = None) -> list[dict[str, Any]]:
        """Every finished match (of the event, of the table), in the order they ended."""
        ids = await asyncio.to_thread(self._finished_ids, event, table)
        return [await self.result(match_id) for match_id in ids]

    # -- the outbox -----------------------------------------------------------------------------
    def on_durable(self, table_id: str, wires: list[dict[str, Any]], texts: list[str]) -> None:
        """A runtime publisher: called once events are durable, on the loop."""
        if self.webhook is None:
            return
        for wire in wires:
            if wire["type"] == "match.ended":
                match_id = wire["state"]["match"]["id"]
                task = asyncio.get_running_loop().create_task(self._enqueue_logged(match_id))
                self._pending.add(task)
                task.add_done_callback(self._pending.discard)

    async def _enqueue_logged(self, match_id: str) -> None:
        try:
            await self.enqueue(match_id)
        except Exception:  # the backfill at the next start picks it up
            log.exception("results: cannot put %s in the outbox", match_id)

    async def enqueue(self, match_id: str) -> None:
        body = json.dumps(await self.result(match_id), ensure_ascii=False,
                          separators=(",", ":"))
        now = int(self.runtime.time.now_ms())
        await self._write([("INSERT INTO outbox (match_id, body, created_at, next_at) VALUES "
                            "(?, ?, ?, ?) ON CONFLICT(match_id) DO NOTHING",
                            (match_id, body, now, now))])
        self._wake.set()

    async def _write(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def settle(error: BaseException | None) -> None:
            if not done.done():
                if error is None:
                    done.set_result(None)
                else:
                    done.set_exception(error)

        def from_writer(error: BaseException | None) -> None:
            loop.call_soon_threadsafe(settle, error)

        self.runtime.store.execute(statements, done=from_writer)
        await asyncio.wait_for(asyncio.shield(done), self.runtime.store_wait_s)

    def _missing(self, since: int) -> list[str]:
        """Finished matches since the webhook was configured that are not in the outbox
        (their match.ended was durable, the service stopped before the outbox row was)."""
        rows = self.runtime.store.reader_connection().execute(
            "SELECT table_id || '.' || number FROM matches WHERE status = 'over' AND "
            "ended_at >= ? AND table_id || '.' || number NOT IN (SELECT match_id FROM outbox) "
            "ORDER BY ended_at", (since,)).fetchall()
        return [r[0] for r in rows]

    def _since(self) -> int | None:
        row = self.runtime.store.reader_connection().execute(
            "SELECT value FROM meta WHERE key = 'results_webhook_since'").fetchone()
        return None if row is None else int(float(row[0]))

    # -- where the webhook comes from -----------------------------------------------------------
    def _stored(self) -> tuple[str | None, str | None]:
        rows = dict(self.runtime.store.reader_connection().execute(
            "SELECT key, value FROM meta WHERE key IN (?, ?)", (URL_KEY, SECRET_KEY)).fetchall())
        return rows.get(URL_KEY), rows.get(SECRET_KEY)

    def webhook_config(self) -> dict[str, Any]:
        """The webhook as the desk shows it (never the secret itself)."""
        source = None if self.webhook is None else (
            "environment" if self.env_webhook is not None else "store")
        return {"url": self.webhook, "secret_set": bool(self.secret), "source": source,
                "secret_source": None if not self.secret else (
                    "environment" if self.env_secret else "store")}

    async def configure(self, url: str | None, secret: str | None) -> dict[str, Any]:
        """The director's webhook, kept in the store and used from now on. ``url`` None
        stops sending (the outbox keeps what is not sent); ``secret`` None keeps the one
        kept, "" removes it. Refused (409) while the environment sets the webhook."""
        if self.env_webhook is not None:
            raise RuleRefusal("the results webhook is set by SHOTCLOCK_RESULTS_WEBHOOK on the "
                              "service: change it there (the environment wins)",
                              code="webhook_from_environment")
        if url is not None:
            url = url.strip()
            try:
                if len(url) > MAX_URL:
                    raise InvalidInput("too long")
                check_url(url)
            except InvalidInput:
                raise InvalidInput(f"the webhook must be an http:// or https:// address with a "
                                   f"host, of at most {MAX_URL} characters, got "
                                   f"{redacted(url[:200])}", code="invalid_webhook") from None
        kept = self._stored_secret if secret is None else (secret or None)
        if kept is not None and len(kept) > MAX_SECRET:
            raise InvalidInput(f"the webhook's secret is longer than {MAX_SECRET} characters",
                               code="invalid_webhook")
        statements: list[tuple[str, tuple[Any, ...]]] = []
        for key, value in ((URL_KEY, url), (SECRET_KEY, kept)):
            statements.append(("DELETE FROM meta WHERE key = ?", (key,)) if value is None else
                              ("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) "
                               "DO UPDATE SET value = excluded.value", (key, value)))
        await self._write(statements)
        self._stored_secret = kept
        self.webhook = url
        self.secret = self.env_secret or kept
        if self.webhook is not None:
            await self._begin()
        self._wake.set()
        return self.webhook_config()

    async def start(self) -> None:
        if self.env_webhook is None:
            self.webhook, self._stored_secret = await asyncio.to_thread(self._stored)
            self.secret = self.env_secret or self._stored_secret
        if self.webhook is not None:
            await self._begin()

    async def _begin(self) -> None:
        """Send from now on: the results missed since the webhook was first set (also those
        that ended while the desk had taken it away), then each match as it ends."""
        assert self.webhook is not None
        log.log(logging.INFO if self.secret else logging.WARNING,
                "results: every finished match is POSTed to %s (%s)", redacted(self.webhook),
                "signed" if self.secret else "NOT signed: set SHOTCLOCK_RESULTS_SECRET, or "
                "the receiver cannot tell these results are ours")
        since = await asyncio.to_thread(self._since)
        if since is None:  # the first start with a webhook: results from now on
            since = int(self.runtime.time.now_ms())
            await self._write([("INSERT INTO meta (key, value) VALUES "
                                "('results_webhook_since', ?) ON CONFLICT(key) DO NOTHING",
                                (str(since),))])
        for match_id in await asyncio.to_thread(self._missing, since):
            await self._enqueue_logged(match_id)
        if self._begun:
            return
        self._begun = True
        self.runtime.subscribe(self.on_durable)
        self._task = asyncio.get_running_loop().create_task(self._run(), name="results-webhook")

    async def stop(self) -> None:
        self._begun = False
        self.runtime.unsubscribe(self.on_durable)
        for task in [self._task, *self._pending]:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _due(self, now: int) -> tuple[list[tuple[int, str, str, int]], int | None]:
        conn = self.runtime.store.reader_connection()
        rows = conn.execute("SELECT id, match_id, body, attempts FROM outbox WHERE sent_at IS "
                            "NULL AND next_at <= ? ORDER BY id LIMIT 20", (now,)).fetchall()
        later = conn.execute("SELECT min(next_at) FROM outbox WHERE sent_at IS NULL "
                             "AND next_at > ?", (now,)).fetchone()
        return rows, (later[0] if later else None)

    async def _run(self) -> None:
        """Forever; restarted after any failure with the failure in /api/health."""
        health = self.runtime.health
        while True:
            try:
                while True:
                    self._wake.clear()
                    if self.webhook is None:  # the desk took it away: wait for another
                        await self._wake.wait()
                        continue
                    now = int(self.runtime.time.now_ms())
                    rows, later = await asyncio.to_thread(self._due, now)
                    for row in rows:
                        await self._send(*row)
                    if rows:
                        continue
                    wait = None if later is None else max(0.0, (later - now) / 1000.0)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), wait)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                why = scrub(f"{type(exc).__name__}: {exc}", self.webhook or "")
                log.warning("results webhook: %s; retrying in 1 s", why)
                health.fault("results.webhook", component="results", code="results_outbox",
                             message=f"the results outbox failed ({why})")
                await asyncio.sleep(1.0)

    async def _send(self, row_id: int, match_id: str, body: str, attempts: int) -> None:
        assert self.webhook is not None
        data = body.encode()
        headers = delivery_headers(self.secret, match_id, data, attempts + 1, self.wall())
        error = await asyncio.to_thread(post, self.webhook, data, headers)
        now = int(self.runtime.time.now_ms())
        if error is None:
            await self._write([("UPDATE outbox SET sent_at = ?, attempts = attempts + 1, "
                                "last_error = NULL WHERE id = ?", (now, row_id))])
            self.delivered += 1
            self.runtime.health.clear("results.webhook")
            return
        self.failures += 1
        delay = min(MAX_RETRY_S, self.retry_s * 2 ** attempts) * random.uniform(0.9, 1.1)
        await self._write([("UPDATE outbox SET attempts = attempts + 1, next_at = ?, "
                            "last_error = ? WHERE id = ?",
                            (now + int(delay * 1000), error[:500], row_id))])
        self.runtime.health.fault(
            "results.webhook", component="results", code="results_webhook_failing",
            level="warning", message=f"the results webhook did not take {match_id} "
            f"({error}); retrying in {delay:.1f} s")

    def outbox(self) -> dict[str, Any]:
        conn: sqlite3.Connection = self.runtime.store.reader_connection()
        rows = conn.execute("SELECT match_id, body, attempts, sent_at, next_at, last_error "
                            "FROM outbox ORDER BY id DESC LIMIT 100").fetchall()
        return {"webhook": self.webhook is not None, "deliveries": [
            {"match": m, "delivery": delivery_id(m, b.encode()), "attempts": a,
             "sent_at": s, "next_at": None if s else n, "last_error": e}
            for m, b, a, s, n, e in rows]}
