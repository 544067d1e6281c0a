"""The asyncio shell around the cores: one process, many tables.

For each table it feeds commands into its ``TableClock``, sleeps until the clock's next
deadline (an absolute timer, no polling tick), numbers every event (``seq``, gap-free per
table), hands it to the store, and once it is durable publishes it to the hub. Local
listeners (the table-side display and buzzer) are told at once, before the store write:
they are the clock's own face and must not wait on a disk.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from clock_service.core.clock import TableClock
from clock_service.core.commands import Command, check_players
from clock_service.core.errors import (
    InvalidInput,
    RuleRefusal,
    StoreCorrupt,
    StoreError,
    TableExists,
    TooManyTables,
)
from clock_service.core.events import TABLE_ARCHIVED, TABLE_CREATED, Event, TableCreatedData
from clock_service.core.ids import TABLE_ID_RULE, is_table_id
from clock_service.core.presets import build_profile
from clock_service.core.text import LINE, NAME, clean
from clock_service.core.transitions import ClockPhase
from clock_service.service.hub import Hub, encode
from clock_service.service.live import STORE_WAIT_S, ServedTables
from clock_service.service.storage import ARCHIVE_SEP, Store
from clock_service.service.storage.log import UndoChange
from clock_service.service.timesource import RealTime, Timer, TimeSource

__all__ = ["Runtime", "TableRuntime", "Listener", "MAX_TABLES"]

log = logging.getLogger(__name__)

HEARTBEAT_MS = 500.0
WALL_STEP_LOG_MS = 1000.0  # a wall-clock step this large is logged (NTP slews smaller ones)
DISK_FAULT = "store.disk"
POWER_FAULT = "store.power_lost"  # per table: "store.power_lost:<table>" (I19)
MAINTAIN_MS = 60_000.0  # the store's disk looked at, and old matches archived, this often
ARCHIVE_EVERY_MS = 24 * 3600_000.0
STORE_CHECK_FAULT = "store.check"  # the integrity check after start found damage
MAX_TABLES = 200
# A local listener gets (table_id, wire events, state after them), on the loop thread.
Listener = Callable[[str, list[dict[str, Any]], dict[str, Any]], None]


@dataclass(eq=False)
class TableRuntime:
    id: str
    clock: TableClock
    seq: int = 0  # last seq given to an event
    published_seq: int = 0  # last seq durable and published
    published_state: dict[str, Any] = field(default_factory=dict)
    timer: Timer | None = None
    config: dict[str, Any] = field(default_factory=dict)
    # The clock's undo entries as the store has them: (row number, the entry itself), so a
    # commit writes only the entries added and drops the ones taken back (``_undo_change``).
    undo_rows: list[tuple[int, tuple[str, float, str]]] = field(default_factory=list)
    undo_next: int = 1

    def state(self, now: float) -> dict[str, Any]:
        return self.clock.state(now)


class Runtime(ServedTables[TableRuntime]):
    """The tables' clocks: the API's runtime on ``shotclock serve`` (what it shares with
    the hall's mirror, which runs no clock, is in served.py)."""

    def __init__(self, store: Store, time: TimeSource, hub: Hub | None = None, *,
                 max_tables: int = MAX_TABLES, store_wait_s: float = STORE_WAIT_S,
                 archive_days: int = 0, disk_low_bytes: int = 0) -> None:
        super().__init__(store, time, hub, store_wait_s=store_wait_s)
        self.max_tables = max_tables
        self._archives: dict[str, int] = {}  # archives made per live id (see archive_table)
        self._listeners: list[Listener] = []  # listen()
        self._heartbeat: Timer | None = None
        self._wall_step_ms = 0.0  # RealTime.wall_step_ms() last seen (_notice_wall_step)
        # The store's growth (issue 19; from the settings): finished matches older than
        # archive_days go to files (0: never); a fault when the store's disk has less than
        # disk_low_bytes free.
        self.archive_days = archive_days
        self.disk_low_bytes = disk_low_bytes
        self._maintenance: Timer | None = None
        self._archived_at: float | None = None
        self._power_notices: set[str] = set()  # tables recovered from a power cut (I19)

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self, default_table: str | None = "1") -> None:
        """Rebuild every table from the store; running clocks come back paused (recover)."""
        loop = asyncio.get_running_loop()
        self._open_store()
        if self.store.check_pending:  # a big store: its integrity check finishes now
            def checked(problem: StoreCorrupt | None) -> None:  # from the check's thread
                loop.call_soon_threadsafe(self._store_checked, problem)

            self.store.check_later(checked)
        alive_at = self.store.alive_at()
        # I19: no proof of life in memory (tmpfs: it outlives a killed process, not the
        # machine) while the store was not stopped cleanly after a table's last event:
        # the power was lost; such a table's running clock comes back paused with a fault.
        in_memory, clean_stop = self.store.proof_of_life()
        stored_tables = list(self.store.load_tables())
        if isinstance(self.time, RealTime):
            # Event times never go backwards within the store, whatever the wall clock
            # says after a power cut (no real-time clock on a Pi): see RealTime.not_before.
            last = [t for t in (alive_at, *(self.store.last_event_at(s.id)
                                            for s in stored_tables)) if t is not None]
            if last:
                self.time.not_before(max(last))
            self._wall_step_ms = self.time.wall_step_ms()
        now = self.time.now_ms()
        for stored in stored_tables:
            clock = TableClock.from_dict(stored.core)
            table = TableRuntime(stored.id, clock, seq=stored.seq, published_seq=stored.seq,
                                 config=stored.config)
            if stored.undo:
                clock.history = [(step, at, state) for _, step, at, state in stored.undo]
                table.undo_rows = [(row[0], entry)
                                   for row, entry in zip(stored.undo, clock.history, strict=True)]
                table.undo_next = stored.undo[-1][0] + 1
            table.published_state = self._state(table, now)
            self.tables[stored.id] = table
            # The service was alive at its last heartbeat and at the table's last event,
            # whichever is later (a clock started just before a crash, between beats).
            last_event = self.store.last_event_at(stored.id)
            alive = max((t for t in (alive_at, last_event) if t is not None), default=now)
            power_lost = (self.store.alive_file is not None and in_memory is None
                          and (clean_stop is None or (last_event or 0) > clean_stop))
            events = clock.recover(alive, now, power_lost=power_lost)
            if events:
                log.info("table %s: recovered after restart: %s", stored.id,
                         [e.type for e in events])
                await self._recovered(table, events, now, alive)
        self._running = True
        if self.store.alive_file is not None:  # alive from now on, whether a clock runs
            self.store.heartbeat(self.time.now_ms())  # or not: a kill is not a power cut
        self._beat()
        self._maintain()
        for table in self.tables.values():
            self._schedule(table)
        if len(self.tables) > self.max_tables:
            log.warning("the store holds %d live tables, over the limit of %d "
                        "(SHOTCLOCK_MAX_TABLES): no new table until some are archived",
                        len(self.tables), self.max_tables)
        if (default_table is not None and default_table not in self.tables
                and len(self.tables) < self.max_tables):
            await self.create_table(default_table, ["Player 1", "Player 2"])

    async def _recovered(self, table: TableRuntime, events: list[Event], now: float,
                         alive: float) -> None:
        """Store what recovery made. After a power cut (I19) the warnings derived again
        keep the time they were due at (so each is the event that may have been sent), and
        the referee is told to check the time (fault ``power_lost``, until a command on the
        table)."""
        rest = []
        for event in events:
            if event.type == "clock.warning":
                due = float(event.data["deadline"]) - float(event.data["threshold_ms"])
                await self._emit(table, [event], min(max(alive, due), now))
            else:
                rest.append(event)
        if rest:
            await self._emit(table, rest, now)
        if any(e.type == "clock.paused" and e.data.get("reason") == "power_lost"
               for e in events):
            at = datetime.fromtimestamp(alive / 1000.0, UTC).strftime("%H:%M:%S")
            self._power_notices.add(table.id)
            self.health.fault(
                f"{POWER_FAULT}:{table.id}", component="store", code="power_lost",
                table=table.id, level="warning", vars={"at": at},
                message=f"table {table.id}: the power was lost at about {at} UTC (its last "
                "saved event); its clock came back paused with the time it had then, which "
                "may be more than it had at the cut: check the time (set it if needed) "
                "before resuming")

    def _power_notice_seen(self, table_id: str) -> None:
        """A command on a table recovered from a power cut: the referee has it in hand."""
        if table_id in self._power_notices:
            self._power_notices.discard(table_id)
            self.health.clear(f"{POWER_FAULT}:{table_id}")

    async def stop(self) -> None:
        self._running = False
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        if self._maintenance is not None:
            self._maintenance.cancel()
        for table in self.tables.values():
            if table.timer is not None:
                table.timer.cancel()
        # Last proof of life: a running clock resumes from here after a planned restart.
        self.store.heartbeat(self.time.now_ms(), durable=True)
        await asyncio.to_thread(self.store.close)

    def _beat(self) -> None:
        """Proof of life for recovery, only while a clock runs (a paused or stopped clock
        needs none: it comes back as it was), into memory (Store.heartbeat): no disk write
        when nothing happens, no fsync beside the commands'."""
        if not self._running:
            return
        now = self.time.now_ms()
        if isinstance(self.time, RealTime):
            self._notice_wall_step(self.time)
        if any(t.clock.phase == ClockPhase.RUNNING for t in self.tables.values()):
            self.store.heartbeat(now)
        self._heartbeat = self.time.call_at(now + HEARTBEAT_MS, self._beat)

    def _maintain(self) -> None:
        """Every minute: the store's free disk space (a statvfs: no write); once a day
        (and at start), the archiving of old finished matches, queued to the writer."""
        if not self._running:
            return
        now = self.time.now_ms()
        self._check_disk()
        if self.archive_days > 0 and (self._archived_at is None
                                      or now - self._archived_at >= ARCHIVE_EVERY_MS):
            self._archived_at = now
            self.store.archive_matches(now - self.archive_days * 86_400_000.0)
        self._maintenance = self.time.call_at(now + MAINTAIN_MS, self._maintain)

    def _check_disk(self) -> None:
        if self.disk_low_bytes <= 0 or self.store.path == ":memory:":
            return
        try:
            free = shutil.disk_usage(os.path.dirname(os.path.abspath(self.store.path))).free
        except OSError:
            return
        if free >= self.disk_low_bytes:
            self.health.clear(DISK_FAULT)
            return
        self.health.fault(
            DISK_FAULT, component="store", code="disk_low",
            message=f"the store's disk has {free / 1e6:.0f} MB free (less than "
            f"{self.disk_low_bytes / 1e6:.0f} MB, SHOTCLOCK_DISK_LOW_MB): the clocks run, "
            "but writes fail when it is full; free space (shotclock store archive, "
            "SHOTCLOCK_ARCHIVE_DAYS) or move the store to a bigger disk")

    def _notice_wall_step(self, time: RealTime) -> None:
        """Log a wall-clock step while running (NTP arriving after a boot without a clock,
        a manual set): event times keep the service's own timeline, so say how far apart
        they now are. One ``time.time()`` per heartbeat."""
        step = time.wall_step_ms()
        if abs(step - self._wall_step_ms) >= WALL_STEP_LOG_MS:
            log.warning("the wall clock was stepped by %+.3f s; event times keep the "
                        "service's timeline (now %+.3f s from the wall clock) until a restart",
                        (step - self._wall_step_ms) / 1000.0, -step / 1000.0)
            self._wall_step_ms = step

    def _store_checked(self, problem: StoreCorrupt | None) -> None:
        if problem is None:
            log.info("the event store's integrity check finished after start: ok")
            return
        log.error("%s", problem.message)
        self.health.fault(
            STORE_CHECK_FAULT, component="store", code="store_corrupt",
            message=f"{problem.message}. Found after start: the clocks keep running; "
            "finish the match, then replace the store")

    # -- tables ----------------------------------------------------------------------------------
    async def create_table(
        self, table_id: str, players: list[str], *, timer: bool = True,
        profile: dict[str, Any] | None = None, first_breaker: int = 0,
        race_to: int | None = None, event: str | None = None, referee: str | None = None,
        match_limit_ms: int | None = None, at_match_limit: str = "leader_wins",
    ) -> dict[str, Any]:
        if not is_table_id(table_id):
            raise InvalidInput(
                f"table id must be {TABLE_ID_RULE}, got {table_id!r}",
                code="invalid_table_id",
            )
        if table_id in self.tables:
            raise TableExists(f"table {table_id!r} already exists", code="table_exists")
        if len(self.tables) >= self.max_tables:
            raise TooManyTables(
                f"the service keeps at most {self.max_tables} live tables "
                "(SHOTCLOCK_MAX_TABLES): archive one with DELETE /api/tables/{id} first")
        # Human text by the one rule (core/text.py), whoever calls (the HTTP model did too).
        players = list(check_players(players))
        event = None if event is None else clean(event, LINE, "event")
        referee = None if referee is None else clean(referee, NAME, "referee")
        clock = TableClock(players, timer=timer, profile=build_profile(profile),
                           first_breaker=first_breaker, race_to=race_to,
                           match_limit_ms=match_limit_ms, at_match_limit=at_match_limit)
        now = self.time.now_ms()
        created: TableCreatedData = {
            "table": table_id, "players": list(clock.players), "timer": clock.timer,
            "profile": clock.profile.to_dict(), "first_breaker": first_breaker,
            "race_to": race_to}
        if match_limit_ms is not None:  # the match's time limit and the organiser's choice
            created["match_limit_ms"] = match_limit_ms
            created["at_match_limit"] = at_match_limit
        # For the match protocol's header (GET /api/matches/{id}), when given.
        if event:
            created["event"] = event
        if referee:
            created["referee"] = referee
        config = {k: v for k, v in created.items() if k != "table"}
        table = TableRuntime(table_id, clock, config=config)
        self.tables[table_id] = table
        events = [TABLE_CREATED(created), *clock.open(now)]
        await self._emit(table, events, now, new_table=True)
        return self.state(table_id)

    async def archive_table(self, table_id: str) -> dict[str, Any]:
        """Take a table out of the hall: its clock stops, its clients are closed (4404), and
        its events stay in the store under ``<id>~<n>`` (n = 1, 2, ... per live id) for the
        records, ending with ``table.archived``. The id is free for a new table at once.
        Returns the archive record once it is durable."""
        table = self.table(table_id)
        number = self._archives.get(table_id)
        if number is None:
            number = await asyncio.to_thread(self.store.archive_count, table_id)
            table = self.table(table_id)  # still live after the wait?
        number += 1
        self._archives[table_id] = number
        archive_id = f"{table_id}{ARCHIVE_SEP}{number}"
        now = self.time.now_ms()
        events = [TABLE_ARCHIVED({"archived_as": archive_id})]
        published = self._emit(table, events, now)
        if table.timer is not None:
            table.timer.cancel()
            table.timer = None
        del self.tables[table_id]
        loop = asyncio.get_running_loop()
        durable: asyncio.Future[None] = loop.create_future()

        def on_loop(error: BaseException | None) -> None:
            # After table.archived was published: its clients have it, then the close.
            self._archived(table_id, archive_id)
            if not durable.done():
                if error is None:
                    durable.set_result(None)
                else:
                    durable.set_exception(error)

        def from_writer(error: BaseException | None) -> None:
            loop.call_soon_threadsafe(on_loop, error)

        self.store.archive_table(table_id, archive_id, int(now), done=from_writer,
                                 seq=table.seq)
        try:
            await asyncio.wait_for(asyncio.shield(asyncio.gather(published, durable)),
                                   self.store_wait_s)
        except TimeoutError:
            raise StoreError(
                f"table {table_id} was taken out of the hall as {archive_id}, but that is not "
                f"yet durable: the event store did not confirm it within "
                f"{self.store_wait_s:g} s; if the service stops first, the table comes back",
                code="store_unavailable") from None
        return {"table": table_id, "archived_as": archive_id, "seq": table.seq,
                "archived_at": int(now)}

    # -- commands -------------------------------------------------------------------------------
    async def command(self, table_id: str, command: Command) -> dict[str, Any]:
        """Apply a referee command; return the new state once its events are durable.

        A refusal changes nothing (``RuleRefusal`` is raised), except what was due anyway:
        an expiry that the press came too late for (I17) is published first.
        """
        table = self.table(table_id)
        now = self.time.now_ms()
        try:
            events = table.clock.handle(command, now)
        except RuleRefusal as refusal:
            if refusal.events:
                pending = self._emit(table, refusal.events, now)
                self._schedule(table)
                await pending
            raise
        pending = self._emit(table, events, now)
        self._schedule(table)  # the clock's timer is set before any disk wait
        self._power_notice_seen(table_id)
        state = self._state(table, now)
        try:
            await asyncio.wait_for(asyncio.shield(pending), self.store_wait_s)
        except TimeoutError:
            raise StoreError(
                f"the command was applied on the table, but it is not yet durable: the event "
                f"store did not confirm the write within {self.store_wait_s:g} s. Its events "
                "are stored and sent in order if the disk recovers; if the service stops "
                "first, they are lost and the table comes back as it was before",
                code="store_unavailable") from None
        return state

    # -- the clock's own wake-ups -----------------------------------------------------------------
    def _schedule(self, table: TableRuntime) -> None:
        if table.timer is not None:
            table.timer.cancel()
            table.timer = None
        wake = table.clock.next_wakeup()
        if wake is not None and self._running:
            table.timer = self.time.call_at(wake, lambda: self._on_timer(table))

    def _on_timer(self, table: TableRuntime) -> None:
        table.timer = None
        now = self.time.now_ms()
        events = table.clock.advance(now)
        if events:
            # Warnings alone are committed without an fsync of their own: the next synced
            # commit (the command that ends the shot, or the expiry) makes them durable
            # with it (WAL order), and a power cut in between is recovered by deriving them
            # again (TableClock.recover, I19). At most one fsync per command, warnings
            # firing or not; the expiry keeps its fsync (the clock's own command).
            sync = any(e.type != "clock.warning" for e in events)
            self._emit(table, events, now, sync=sync)
        self._schedule(table)

    # -- events -----------------------------------------------------------------------------------
    def _number(self, table: TableRuntime, events: list[Event], now: float
                ) -> tuple[list[dict[str, Any]], list[str], list[str]]:
        """Number the events: (wire events, each with the state after the batch; their
        lean JSON, as the store keeps and replays them; their live JSON, as the feeds send
        them). The state is built and encoded once per batch, whatever the number of
        events and clients: each live text is the lean text with the state spliced in."""
        first = table.seq + 1
        table.seq += len(events)
        state = self._state(table, now)  # its seq: the batch's last event
        state_text = encode(state)
        wires, lean, live = [], [], []
        for seq, event in enumerate(events, start=first):
            wire = {"type": event.type, "seq": seq, "table": table.id, "at": int(now),
                    **event.envelope(), "data": dict(event.data)}
            text = encode(wire)
            wire["state"] = state
            wires.append(wire)
            lean.append(text)
            live.append(f'{text[:-1]},"state":{state_text}}}')
        return wires, lean, live

    def _undo_change(self, table: TableRuntime) -> UndoChange:
        """What changed in the clock's undo entries since the last commit: entries are
        immutable tuples, pushed at the end, popped from the end, trimmed at the start and
        cleared at a new match, so identity says which are new and which are gone."""
        history = table.clock.history
        rows = table.undo_rows
        if len(rows) == len(history) and all(
                entry is current for (_, entry), current in zip(rows, history, strict=True)):
            return UndoChange()
        present = {id(entry) for entry in history}
        kept = [(n, entry) for n, entry in rows if id(entry) in present]
        known = {id(entry) for _, entry in kept}
        change = UndoChange(drop=[n for n, entry in rows if id(entry) not in present])
        for entry in history:
            if id(entry) not in known:
                change.add.append((table.undo_next, *entry))
                kept.append((table.undo_next, entry))
                table.undo_next += 1
        table.undo_rows = kept
        return change

    async def record(self, table_id: str, events: list[Event]) -> None:
        """Append events the service makes itself (a match's signature, not the clock's)
        to a table's log, in order with everything else; returns once they are durable."""
        table = self.table(table_id)
        await self._emit(table, events, self.time.now_ms())

    def _emit(self, table: TableRuntime, events: list[Event], now: float,
              new_table: bool = False, sync: bool = True) -> asyncio.Future[None]:
        """Number, tell local listeners, store; publish once durable. Returns that moment."""
        wires, lean, live = self._number(table, events, now)
        loop = asyncio.get_running_loop()
        durable: asyncio.Future[None] = loop.create_future()
        done = self._durable_callback(table, wires, durable, live)
        core = table.clock.to_dict(history=False)
        if new_table:
            self.store.create_table(table.id, table.config, core, wires,
                                    table.seq, created_at=int(now), done=done, texts=lean)
        else:
            self.store.append(table.id, wires, core, table.seq, done=done, texts=lean,
                              undo=self._undo_change(table), sync=sync)
        self._tell_listeners(table, wires, now)
        return durable

    def listen(self, listener: Listener) -> None:
        """Tell ``listener`` each table's events at once, before they are stored (the
        table-side display and buzzer, the camera, the draw): it must not wait."""
        self._listeners.append(listener)

    def unlisten(self, listener: Listener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _tell_listeners(self, table: TableRuntime, wires: list[dict[str, Any]], now: float) -> None:
        if not wires:
            return
        for listener in self._listeners:
            try:
                listener(table.id, wires, wires[-1]["state"])
            except Exception:  # a display fault never stops the clock
                log.exception("table %s: local listener failed", table.id)

    def _durable_callback(
        self, table: TableRuntime, wires: list[dict[str, Any]], durable: asyncio.Future[None],
        texts: list[str],
    ) -> Callable[[BaseException | None], None]:
        loop = asyncio.get_running_loop()

        def on_loop(error: BaseException | None) -> None:
            if error is None and wires:
                table.published_seq = wires[-1]["seq"]
                table.published_state = wires[-1]["state"]
                self.hub.publish(table.id, wires, texts)
                for publisher in self._publishers:
                    try:
                        publisher(table.id, wires, texts)
                    except Exception:  # a broker fault never stops the clock
                        log.exception("table %s: publisher failed", table.id)
                self._tell_hall(table.id)
            if not durable.done():
                if error is None:
                    durable.set_result(None)
                else:
                    durable.set_exception(error)
                    durable.exception()  # marked retrieved: timer-driven emits have no waiter

        def from_writer(error: BaseException | None) -> None:
            loop.call_soon_threadsafe(on_loop, error)

        return from_writer

    async def events_since(
        self, table_id: str, since: int, until: int | None = None, limit: int = 100_000
    ) -> list[dict[str, Any]]:
        self.table(table_id)
        return await asyncio.to_thread(self.store.events_since, table_id, since, until, limit)
