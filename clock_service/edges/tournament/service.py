"""The tournament around the tables, in the service: the draw's queues and the next match.

Holds the draw (``draw.Draw``) in memory, written through to the store's ``draw`` table
(its one writer, awaited before answering) and read back at start. Watches the tables'
events (a runtime listener, on the loop) for the end of a draw match, and for a match
started by hand between a pair the draw has queued (a table created for it from the hall
form, or a referee's ``new_match``): that draw match is then the one playing there, not
queued to be played again (issue 36). Starting a draw match on a table is the table's
own ``new_match`` command with the draw's players, race and event: the clock and its log
stay the only owner of a match.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from clock_service.core.commands import NewMatch
from clock_service.core.errors import InvalidCommand, InvalidInput, RuleRefusal
from clock_service.edges.tournament.draw import Draw, DrawMatch, parse_draw
from clock_service.service.auth import Credential, stamp
from clock_service.service.runtime import Runtime

__all__ = ["Tournament"]

log = logging.getLogger(__name__)


class Tournament:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.draw = Draw()
        self.listeners: list[Callable[[str, dict[str, Any]], None]] = []
        # feed_info's answers for one version of one draw: (draw, version, {table: info})
        self._feed: tuple[Draw, int, dict[str, dict[str, Any]]] = (self.draw, -1, {})
        self._starting: set[str] = set()  # tables whose new match comes from the draw now

    async def start(self) -> None:
        store = self.runtime.store

        def load() -> list[DrawMatch]:
            rows = store.reader_connection().execute(
                "SELECT body FROM draw ORDER BY number").fetchall()
            return [DrawMatch.from_dict(json.loads(r[0])) for r in rows]

        self.draw = Draw(await asyncio.to_thread(load))
        self.runtime.listen(self._on_events)

    async def stop(self) -> None:
        self.runtime.unlisten(self._on_events)

    # -- the tables' events (on the loop, before the store write: no waiting here) ---------
    def _on_events(self, table_id: str, wires: list[dict[str, Any]],
                   state: dict[str, Any]) -> None:
        for wire in wires:
            if wire["type"] in ("table.created", "match.started"):
                if table_id not in self._starting:
                    self._started_by_hand(table_id, state)
            elif wire["type"] == "match.ended":
                match_id = state.get("match", {}).get("id")
                finished = self.draw.finish(table_id, match_id) if match_id else None
                if finished is not None:
                    self._save([finished], None)
                for listener in self.listeners:
                    listener(table_id, wire)

    def _started_by_hand(self, table_id: str, state: dict[str, Any]) -> None:
        """A match not started from the draw: if the draw has its pair queued, that match
        is the one playing on this table now (and the match played there before is done)."""
        match_id = state.get("match", {}).get("id")
        players = state.get("players") or []
        if not match_id or len(players) != 2:
            return
        queued = self.draw.same_pair(players, table_id)
        if queued is not None:
            self._save(self.draw.start(queued.number, table_id, match_id), None)
            log.info("draw: match %s (%s) is playing on table %s, started by hand",
                     queued.number, queued.title, table_id)

    # -- persistence ------------------------------------------------------------------------
    def _execute(self, statements: list[tuple[str, tuple[Any, ...]]],
                 done: asyncio.Future[None] | None) -> None:
        loop = asyncio.get_running_loop()

        def from_writer(error: BaseException | None) -> None:
            if done is not None:
                loop.call_soon_threadsafe(_settle, done, error)

        self.runtime.store.execute(statements, done=from_writer)

    def _save(self, matches: list[DrawMatch], done: asyncio.Future[None] | None) -> None:
        self._execute(
            [("INSERT INTO draw (number, body) VALUES (?, ?) ON CONFLICT(number) DO UPDATE "
              "SET body = excluded.body", (m.number, json.dumps(m.to_dict())))
             for m in matches], done)

    async def _durable(self, write: Callable[[asyncio.Future[None]], None]) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        write(done)
        await asyncio.wait_for(asyncio.shield(done), self.runtime.store_wait_s)

    async def _saved(self, matches: list[DrawMatch]) -> None:
        await self._durable(lambda done: self._save(matches, done))

    # -- the draw -----------------------------------------------------------------------------
    async def import_draw(self, text: str, kind: str) -> list[DrawMatch]:
        """Check the whole file against the live tables and the draw so far; store it."""
        matches = parse_draw(text, kind=kind, tables=self.runtime.tables,
                             taken=self.draw.matches)
        await self._saved(matches)
        self.draw.add(matches)
        # A table already playing one of these pairs (made for it before the draw came):
        # that match is playing there, not queued to be played again.
        for table_id in sorted(self.runtime.tables):
            state = self.runtime.state(table_id)
            if not state["match"]["over"] and self.draw.playing(table_id) is None:
                self._started_by_hand(table_id, state)
        return matches

    def _queued(self, number: int, table: str | None, what: str) -> DrawMatch:
        match = self.draw.get(number)
        if match is None:
            raise InvalidInput(f"no match {number} in the draw", code="unknown_draw_match")
        if table is not None and table not in self.runtime.tables:
            raise InvalidInput(f"no table {table!r}", code="unknown_table")
        if match.status != "queued":
            raise RuleRefusal(f"{what} refused: match {number} is {match.status}; only a "
                              "queued match moves", code="match_started")
        return match

    async def assign(self, number: int, table: str | None,
                     position: int | None = None) -> DrawMatch:
        """Put a queued match in a table's queue (None: the next free table's), at
        ``position`` in it (0: first) when given: the director's reorder."""
        self._queued(number, table, "assign")
        changed = self.draw.assign(number, table, position)
        await self._saved(changed)
        return changed[0]

    async def clear(self) -> int:
        count = len(self.draw.matches)
        await self._durable(lambda done: self._execute([("DELETE FROM draw", ())], done))
        self.draw = Draw()
        return count

    def view(self) -> dict[str, Any]:
        return self.draw.to_dict(self.runtime.tables)

    def feed_info(self, table_id: str) -> dict[str, Any]:
        """What the broadcast feeds show of the draw for a table (rows.NO_DRAW's keys): the
        event and round of the draw's match last started there (with its match id: the
        feed shows them while that match is the table's), the next match's players and
        race. Asked at every poll for every table, so kept until the draw changes
        (Draw.version)."""
        draw, version, cache = self._feed
        if draw is not self.draw or version != self.draw.version:
            cache = {}
            self._feed = (self.draw, self.draw.version, cache)
        info = cache.get(table_id)
        if info is None:
            started = self.draw.playing(table_id) or max(
                (m for m in self.draw.matches.values()
                 if m.playing_on == table_id and m.match_id), default=None,
                key=lambda m: m.number)
            nxt = self.draw.next_for(table_id)
            info = cache[table_id] = {
                "match_id": None if started is None else started.match_id,
                "event": None if started is None else started.event or "",
                "event_round": None if started is None else started.round or "",
                "next": None if nxt is None else {"players": list(nxt.players),
                                                  "race_to": nxt.race_to},
            }
        return info

    def draw_number(self, match_id: str) -> int | None:
        """The draw's number of a match started from it (results carry it)."""
        return next((m.number for m in self.draw.matches.values() if m.match_id == match_id),
                    None)

    def next_for(self, table_id: str) -> DrawMatch | None:
        self.runtime.table(table_id)  # 404 for an unknown table
        return self.draw.next_for(table_id)

    async def start_next(self, table_id: str, credential: Credential,
                         reason: str | None = None) -> dict[str, Any]:
        """The table's next match from the draw: ``new_match`` with its players, race and
        event, recorded as sent by ``credential`` (``source`` ``draw:<its name>``).
        Refused (409) when the draw has none for the table."""
        match = self.next_for(table_id)
        if match is None:
            raise RuleRefusal(f"start next match refused: the draw has no match for table "
                              f"{table_id} (its queue and the next-free-table list are empty)",
                              code="no_next_match")
        return await self._start(match, table_id, credential, reason)

    async def start_match(self, number: int, table_id: str, credential: Credential,
                          reason: str | None = None) -> dict[str, Any]:
        """Any queued match of the draw, started on ``table_id`` now (the director's desk):
        as ``start_next``, whichever queue it was in."""
        return await self._start(self._queued(number, table_id, "start"), table_id,
                                 credential, reason)

    async def _start(self, match: DrawMatch, table_id: str, credential: Credential,
                     reason: str | None) -> dict[str, Any]:
        event = ", ".join(x for x in (match.event, match.round) if x) or None
        command = stamp(NewMatch(players=list(match.players), race_to=match.race_to,
                                 event=event, reason=reason, source="draw"), credential, "http")
        if credential.director:  # a director's offered source is kept as it is: name it
            command = replace(command, source=f"draw:{credential.name}")
        before = self.runtime.state(table_id)
        self._starting.add(table_id)
        try:
            state = await self.runtime.command(table_id, command)
        except InvalidCommand as exc:
            if exc.code != "missing_reason":
                raise
            raise _in_play(table_id, before) from None
        finally:
            self._starting.discard(table_id)
        await self._saved(self.draw.start(match.number, table_id, state["match"]["id"]))
        return state


def _in_play(table_id: str, state: dict[str, Any]) -> RuleRefusal:
    """The refusal to start a match over one in play (the core's missing_reason, said for
    the desk: which match, how far it is)."""
    players = state.get("players") or ["?", "?"]
    score = (state.get("match") or {}).get("score") or [0, 0]
    return RuleRefusal(
        f"start refused: table {table_id} is playing {players[0]} – {players[1]} "
        f"({score[0]}:{score[1]}, frame {state.get('frame')}); start the next match once it "
        "is over, or give the reason for leaving it unfinished", code="match_in_play")


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
