"""What every service that serves tables shares, whoever keeps their time.

``Runtime`` (runtime.py) runs the tables' clocks; the hall's ``HallRuntime``
(mqtt/hall.py) mirrors tables whose clocks run on their own Pis. Both answer the API
(``ServedRuntime``, below) from this: the live tables by id, each one's state
and snapshot as of its last published event, the hub of WebSocket clients and the hall
feed, the status of the parts and the faults. Nothing here runs a clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from clock_service.core.commands import Command
from clock_service.core.errors import UnknownTable
from clock_service.core.transitions import ClockPhase
from clock_service.service.hub import HALL, Hub, encode
from clock_service.service.status import Health
from clock_service.service.storage import Store
from clock_service.service.timesource import TimeSource

__all__ = ["ServedRuntime", "ServedTables", "ServedTable", "Publisher", "match_id", "HALL_FIELDS",
           "CLOSE_ARCHIVED", "STORE_WAIT_S"]

STORE_WAIT_S = 5.0
STORE_FAULT = "store.write"
# WebSocket close code for the clients of a table that was archived (as for no such table).
CLOSE_ARCHIVED = 4404
# What the hall feed tells about each table: what a hall card shows, and no more.
HALL_FIELDS = ("table", "seq", "phase", "timer", "player", "players", "remaining_ms",
               "limit_ms", "deadline", "server_time", "round", "frame", "fouls",
               "extensions_left", "whites", "frames_won", "match_clock",
               # who won the frame, and the match (number, score, over, winner): the hall card
               # says "match over" with the winner and links the match's protocol (issue 23)
               "frame_winner", "match")


# A publisher (MQTT, the broadcast feeds) gets (table_id, wire events, their JSON) once they
# are durable: what leaves the service must be in its store, or a crash could reuse a seq
# already sent.
Publisher = Callable[[str, list[dict[str, Any]], list[str]], None]


def match_id(table_id: str, number: int) -> str:
    """A match's id: its table and its number on that table ("7.2"; table ids have no dot)."""
    return f"{table_id}.{number}"


class ServedTable(Protocol):
    """One live table as served: its last seq, and the state its last published event
    carried (what snapshots and the hall feed show)."""

    id: str
    seq: int
    published_seq: int
    published_state: dict[str, Any]

    def state(self, now: float) -> dict[str, Any]:
        """The table's state at ``now`` (its clock's, or the mirrored one)."""
        ...


TableT = TypeVar("TableT", bound=ServedTable)


class ServedTables(Generic[TableT]):
    # Whether tables are created and archived here (the hall service mirrors them: True
    # there, and its create/archive answer hall_read_only). The hall feed says it.
    read_only: bool = False

    def __init__(self, store: Store, time: TimeSource, hub: Hub | None = None, *,
                 store_wait_s: float = STORE_WAIT_S) -> None:
        self.store = store
        self.time = time
        self.hub = hub or Hub()
        self.tables: dict[str, TableT] = {}
        self._publishers: list[Publisher] = []  # subscribe()
        # How long a command waits for its events to be on disk before answering 503.
        self.store_wait_s = store_wait_s
        self._running = False
        # Status of the parts and faults for people (TEAM convention 2): /api/health,
        # snapshots and status messages to the clients of the tables concerned.
        self.health = Health(time.now_ms)
        self.health.listeners.append(self._faults_changed)
        self.health.register("store", self._store_status)

    def subscribe(self, publisher: Publisher) -> None:
        """Tell ``publisher`` each table's events once they are durable (on the loop)."""
        self._publishers.append(publisher)

    def unsubscribe(self, publisher: Publisher) -> None:
        if publisher in self._publishers:
            self._publishers.remove(publisher)

    def _open_store(self) -> None:
        """Open the store, its writer's trouble reported as a fault (on the loop)."""
        loop = asyncio.get_running_loop()

        def store_trouble(error: BaseException | None) -> None:  # from the writer thread
            loop.call_soon_threadsafe(self._store_trouble, error)

        self.store.on_trouble = store_trouble
        self.store.open()

    # -- status and faults -------------------------------------------------------------------------
    def _store_status(self) -> dict[str, Any]:
        store = self.store
        commit_ms = sorted(store.commit_ms)
        return {"writable": store.failing_since is None, "commits": store.commits,
                "commit_ms_p50": commit_ms[len(commit_ms) // 2] if commit_ms else None,
                "commit_ms_p99": commit_ms[int(len(commit_ms) * 0.99)] if commit_ms else None,
                "commit_ms_max": commit_ms[-1] if commit_ms else None,
                "write_errors": store.write_errors, "pending": store.pending}

    def _store_trouble(self, error: BaseException | None) -> None:
        if error is None:
            self.health.clear(STORE_FAULT)
            return
        self.health.fault(
            STORE_FAULT, component="store", code="store_unwritable",
            message=f"the event store cannot write ({type(error).__name__}: {error}): the "
            "clocks keep running, but what happened since is not yet durable; it is stored "
            "and sent in order when the disk recovers, and lost if the service stops first")

    def _faults_changed(self, table_id: str | None) -> None:
        """Send the clients of the table(s) concerned their current list of faults; the
        hall feed gets every fault."""
        for tid in self.hub.tables() if table_id is None else [table_id]:
            if tid != HALL:
                self.hub.send(tid, encode(self.status_message(tid)))
        if self.hub.count(HALL):
            self.hub.send(HALL, encode({"type": "status", "table": None,
                                        "faults": self.health.faults()}))

    def status_message(self, table_id: str) -> dict[str, Any]:
        return {"type": "status", "table": table_id, "faults": self.health.faults(table_id),
                **self.liveness(table_id)}

    def liveness(self, table_id: str) -> dict[str, Any]:
        """Whether the table's state is live, for its snapshot and status messages and the
        hall cards: always where the clock runs (the hall service says when a mirrored
        table is not: its pages then stop counting at ``stale_since``)."""
        return {"live": True, "stale_since": None}

    # -- tables ----------------------------------------------------------------------------------
    def table(self, table_id: str) -> TableT:
        table = self.tables.get(table_id)
        if table is None:
            raise UnknownTable(table_id)
        return table

    def state(self, table_id: str) -> dict[str, Any]:
        table = self.table(table_id)
        return self._state(table, self.time.now_ms())

    def _state(self, table: TableT, now: float) -> dict[str, Any]:
        state = table.state(now)
        state["table"] = table.id
        match = state.get("match")
        if isinstance(match, dict) and "number" in match:
            # (A hall's mirror of a table heard first through a catch-up has no state until
            # the table's retained one arrives: lean replayed events carry none.)
            match["id"] = match_id(table.id, match["number"])
        state["seq"] = table.seq
        state["server_time"] = now
        return state

    def snapshot(self, table_id: str) -> tuple[int, dict[str, Any]]:
        """The state as of the last published event, its running time brought up to now."""
        table = self.table(table_id)
        state = dict(table.published_state)
        now = self.time.now_ms()
        if state.get("phase") == ClockPhase.RUNNING and state.get("deadline") is not None:
            state["remaining_ms"] = max(0, int(state["deadline"] - now + 0.999999))
        match_clock = state.get("match_clock")
        if match_clock and match_clock.get("deadline") is not None:
            state["match_clock"] = {**match_clock, "remaining_ms": max(
                0, int(match_clock["deadline"] - now + 0.999999))}
        state["server_time"] = now
        return table.published_seq, state

    def _archived(self, table_id: str, archive_id: str) -> None:
        """The table's archive is durable: close its clients, tell the hall feed."""
        self.hub.close_table(table_id, CLOSE_ARCHIVED,
                             f"table {table_id} was archived as {archive_id}")
        if self.hub.count(HALL):
            self.hub.send(HALL, encode({"type": "removed", "table": table_id,
                                        "archived_as": archive_id}))

    # -- the hall feed (/ws/hall) ------------------------------------------------------------------
    def hall_summary(self, table_id: str) -> dict[str, Any]:
        """A table as the hall shows it, as of its last published event."""
        _, state = self.snapshot(table_id)
        return {**{key: state.get(key) for key in HALL_FIELDS}, **self.liveness(table_id)}

    def _tell_hall(self, table_id: str) -> None:
        """The hall feed's card of a table, after its events were published."""
        if self.hub.count(HALL) and table_id in self.tables:
            self.hub.send(HALL, encode({"type": "table", "table": self.hall_summary(table_id)}))

    def hall_message(self) -> dict[str, Any]:
        """The first message of the hall feed: every live table, and every fault."""
        return {"type": "hall", "server_time": self.time.now_ms(),
                "read_only": self.read_only,
                "tables": [self.hall_summary(tid) for tid in sorted(self.tables)],
                "faults": self.health.faults()}


# What the API needs from a runtime: the table service's ``Runtime`` (runtime.py, which runs
# the clocks) and the hall's ``HallRuntime`` (edges/mqtt/hall.py, which mirrors tables whose
# clocks run on their own Pis) implement it, both on ``ServedTables``.
class ServedRuntime(Protocol):
    @property
    def read_only(self) -> bool:
        """Tables are not created or archived here (the hall): the hall feed says it."""
        ...

    @property
    def time(self) -> TimeSource: ...

    @property
    def hub(self) -> Hub:
        """The WebSocket clients of each table and of the hall feed."""
        ...

    @property
    def health(self) -> Health: ...

    @property
    def store(self) -> Store:
        """Read for event logs, archives, replays and the match reports."""
        ...

    @property
    def tables(self) -> Mapping[str, object]:
        """The live tables by id."""
        ...

    async def start(self, default_table: str | None = None) -> None: ...

    async def stop(self) -> None: ...

    def table(self, table_id: str) -> object:
        """The table, or ``UnknownTable``."""
        ...

    def state(self, table_id: str) -> dict[str, Any]: ...

    def snapshot(self, table_id: str) -> tuple[int, dict[str, Any]]:
        """(seq, state) as of the last published event, for a WebSocket's first message."""
        ...

    def liveness(self, table_id: str) -> dict[str, Any]: ...

    def hall_message(self) -> dict[str, Any]: ...

    async def create_table(
        self, table_id: str, players: list[str], *, timer: bool = True,
        profile: dict[str, Any] | None = None, first_breaker: int = 0,
        race_to: int | None = None, event: str | None = None, referee: str | None = None,
        match_limit_ms: int | None = None, at_match_limit: str = "leader_wins",
    ) -> dict[str, Any]: ...

    async def archive_table(self, table_id: str) -> dict[str, Any]: ...

    async def command(self, table_id: str, command: Command) -> dict[str, Any]:
        """The state once the command's events are durable; refusals raise."""
        ...
