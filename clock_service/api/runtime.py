"""What the API needs from a runtime: ``ServedRuntime``.

Two implement it: the table service's ``Runtime`` (clock_service/runtime.py, which runs
the clocks) and the hall's ``HallRuntime`` (clock_service/mqtt/hall.py, which mirrors
tables whose clocks run on their own Pis); both build on ``served.ServedTables``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from clock_service.commands import Command
from clock_service.health import Health
from clock_service.hub import Hub
from clock_service.storage import Store
from clock_service.timesource import TimeSource

__all__ = ["ServedRuntime"]


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

    # Who may command (clock_service/auth.Authority), set by create_app at start.
    auth: Any

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
