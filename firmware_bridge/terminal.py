"""The simulated display: the table's clock in a terminal, when no hardware is configured."""

from __future__ import annotations

import sys
from typing import TextIO

from clock_service.core.readout import DisplayFrame

__all__ = ["TerminalDisplay"]

STAGE_LOOK = {
    "ready": ("READY ", "\033[1;37m"),
    "running": ("RUN   ", "\033[1;32m"),
    "warning": ("RUN   ", "\033[1;33m"),
    "critical": ("RUN   ", "\033[1;31m"),
    "paused": ("PAUSED", "\033[1;36m"),
    "expired": ("TIME! ", "\033[1;41;37m"),
    "off": ("NO TIMER", "\033[1;37m"),
    "frame_over": ("FRAME OVER", "\033[1;35m"),
}


class TerminalDisplay:
    """Redraws one status line in place on a terminal; on a pipe, prints a line per stage
    change only, so logs stay readable."""

    def __init__(self, table_id: str, players: tuple[str, str] | None = None,
                 stream: TextIO | None = None) -> None:
        self.table_id = table_id
        self.players = players
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self._last_stage: tuple[str, bool] | None = None

    def line(self, frame: DisplayFrame) -> str:
        label, _ = STAGE_LOOK[frame.stage]
        arrow = "<- P1" if frame.player == 0 else "   P2 ->"
        ext = "/".join(str(x) for x in frame.extensions_left)
        fouls = "/".join(str(x) for x in frame.fouls)
        link = "  LINK LOST (estimate)" if frame.offline else ""
        return (f"table {self.table_id}  [{frame.text:>4}]  {label:<10} {arrow}  "
                f"extensions {ext}  fouls {fouls}{link}")

    def show(self, frame: DisplayFrame) -> None:
        text = self.line(frame)
        if self.tty:
            _, colour = STAGE_LOOK[frame.stage]
            self.stream.write(f"\r\033[K{colour}{text}\033[0m")
            self.stream.flush()
        elif (frame.stage, frame.offline) != self._last_stage:
            self.stream.write(text + "\n")
            self.stream.flush()
        self._last_stage = (frame.stage, frame.offline)

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
