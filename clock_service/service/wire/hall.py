"""The hall feed (/ws/hall): every table's card on one socket.
"""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
)

from clock_service.core.clock import ClockPhase
from clock_service.service.wire.events import UnixMs
from clock_service.service.wire.http import FaultInfo, MatchClockState
from clock_service.service.wire.state import ClosedModel, Player, PlayerPair, WsMatchState

__all__ = ["HallMessage", "HallRemovedMessage", "HallStatusMessage", "HallTable",
           "HallTableMessage"]


class HallTable(ClosedModel):
    """One table as the hall shows it (served.HALL_FIELDS), as of its last event."""

    table: str
    seq: int
    phase: ClockPhase
    timer: bool
    player: Player
    players: list[str]
    remaining_ms: int | None
    limit_ms: int | None
    deadline: float | None = Field(description="unix ms of the expiry while running")
    server_time: float
    round: int
    frame: int
    fouls: PlayerPair
    extensions_left: PlayerPair
    whites: PlayerPair
    frames_won: PlayerPair
    match_clock: MatchClockState | None = Field(None, description="the match's time limit "
                                                "(as in the table state); null: none")
    frame_winner: Player | None = Field(description="the frame's winner once it is over")
    match: WsMatchState = Field(description="the match on the table (its number, score, "
                                "race, whether it is over and who won): the card's result "
                                "and the link to its protocol")
    live: bool = Field(description=(
        "false when this state may be out of date: on the hall service (shotclock hall), "
        "while the table's own service is offline (its MQTT status/will), the hall is not "
        "connected to the broker, or the table's log diverged. Pages then stop counting "
        "and show remaining_ms as the last known value. Always true on serve."))
    stale_since: UnixMs | None = Field(description=(
        "unix ms (this service's clock) since when the state is not live; remaining_ms is "
        "then as of that instant (a running clock is not brought up to now); null when "
        "live"))


class HallMessage(ClosedModel):
    """First message of the hall feed: every live table, and every fault."""

    type: Literal["hall"]
    server_time: UnixMs
    read_only: bool = Field(description=(
        "true on the hall service (shotclock hall): tables are created and archived on "
        "their own Pi (POST/DELETE /api/tables answer 409 hall_read_only here), so the hall "
        "page offers no form for it; commands are still forwarded to the table"))
    tables: list[HallTable] = Field(description="sorted by id")
    faults: list[FaultInfo]


class HallTableMessage(ClosedModel):
    """A table changed (or was created): its summary now. Newer seq replaces older."""

    type: Literal["table"]
    table: HallTable


class HallRemovedMessage(ClosedModel):
    """A table was archived (DELETE /api/tables/{id}): drop its card."""

    type: Literal["removed"]
    table: str
    archived_as: str


class HallStatusMessage(ClosedModel):
    """The faults changed: every current fault (any table), to replace what is shown."""

    type: Literal["status"]
    table: None = Field(description="always null: the hall gets every fault")
    faults: list[FaultInfo]
