"""What the camera's decisions mean for a table's clock, in ``assist`` or ``auto`` mode. Pure.

``auto``: the camera sends ``start`` when the balls come to rest (I15) and ``shot`` at the
strike, both ``by: camera`` with the frame's capture time as ``at`` (TEAM convention 1:
the core times the step at that instant, and I17 is unchanged: a strike seen after the
deadline is too late, the expiry stands). It never decides what is the referee's:

- no ``start`` in ``expired``: starting there accepts the position after a time foul
  (10.4), the opponent's choice;
- no ``start`` while the shot's result is awaited at a table whose referee reports
  results: the console refuses a result once the clock runs (I15), so the camera waits for
  it (the core then starts the clock at the later of the rest and the result);
- no ``shot`` while ``paused``: the referee stopped play.

``assist``: nothing is sent; the console shows the decision and the referee's press is
compared with it. The referee can always override: undo takes back a camera step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clock_service.core.commands import Command, Shot, Start
from clock_service.core.transitions import ClockPhase
from clock_service.edges.camera.core import Decision, Rest, Strike

__all__ = ["MODES", "TableView", "command_for"]

MODES = ("assist", "auto")
# Events after which a shot's result is no longer awaited.
_RESULT_DONE = frozenset({"shot.result", "turn", "foul", "frame.started", "frame.ended",
                          "match.ended"})


@dataclass
class TableView:
    """What the camera adapter needs to know of its table, kept up from its events."""

    phase: str = ClockPhase.FRAME_OVER
    deadline: float | None = None
    results_in_use: bool = False  # this referee reports shot results
    result_pending: bool = False  # a shot was played, its result not reported yet

    def apply(self, events: list[dict[str, Any]], state: dict[str, Any]) -> None:
        for event in events:
            kind = event.get("type")
            if kind == "clock.stopped" and (event.get("data") or {}).get("reason") == "shot":
                self.result_pending = True
            elif kind in _RESULT_DONE:
                self.result_pending = False
                if kind == "shot.result":
                    self.results_in_use = True
        self.phase = str(state.get("phase", self.phase))
        self.deadline = state.get("deadline")

    @property
    def waiting_for_result(self) -> bool:
        return self.results_in_use and self.result_pending


def command_for(decision: Decision, view: TableView, mode: str) -> Command | None:
    """The command the camera sends for ``decision`` now, or None."""
    if mode != "auto":
        return None
    if isinstance(decision, Rest):
        if view.phase == ClockPhase.READY and not view.waiting_for_result:
            return Start(at=decision.at, by="camera", source="camera")
        return None
    if isinstance(decision, Strike) and view.phase == ClockPhase.RUNNING:
        return Shot(at=decision.at, by="camera", source="camera")
    return None
