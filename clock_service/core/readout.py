"""What a table-side display shows, derived from the clock's state and the time.

The display never counts: every frame is computed from the deadline (SPEC, "Accuracy").
Whole seconds are rounded up; the last 5 seconds show tenths, as professional shot
clocks do, so "1" is on the digits for the whole last second before tenths take over.

Between frames the shot clock has nothing to show: the digits show the match clock
(``match_text``: ``18:43`` on four digits, whole minutes from 100 min), and at the end of
the match ``nEXt``, the table waiting for its next match (issue 36; firmware/PROTOCOL.md,
"What the digits show").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clock_service.core.match_clock import MatchClockPhase
from clock_service.core.transitions import ClockPhase

__all__ = ["TENTHS_BELOW_MS", "DisplayFrame", "render", "next_change_ms", "remaining_at",
           "match_text", "MATCH_OVER_TEXT"]

TENTHS_BELOW_MS = 5000
# At the end of the match, on a seven-segment display (X is drawn as H: the font has no x).
MATCH_OVER_TEXT = "nEXt"

# Stages a display can colour or flag differently (an RGB digit, an indicator LED).
STAGES = ("off", "ready", "running", "warning", "critical", "paused", "expired", "frame_over")


@dataclass(frozen=True)
class DisplayFrame:
    """One full picture of a table-side display: idempotent, so it can be resent at will."""

    text: str  # digits as shown, e.g. "35", "4.9", "0.0", "--" (timer off), "" (blank)
    stage: str  # one of STAGES
    player: int  # 0 or 1: the player at the table (an arrow or side LED)
    extensions_left: tuple[int, int] = (0, 0)
    fouls: tuple[int, int] = (0, 0)
    # The link to the hall service is lost (remote bridge): the digits are an estimate from
    # the last deadline known, shown in a distinct style (blinking colon, LINK), not the truth.
    offline: bool = False

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"unknown display stage {self.stage!r}; expected one of {STAGES}")
        if self.player not in (0, 1):
            raise ValueError(f"player must be 0 or 1, got {self.player!r}")


def remaining_at(state: Mapping[str, Any], now_ms: float) -> int | None:
    """Remaining milliseconds at ``now_ms`` (unix ms), derived from the deadline while running."""
    if not state.get("timer", True):
        return None
    if state.get("phase") == ClockPhase.RUNNING and state.get("deadline") is not None:
        return max(0, math.ceil(float(state["deadline"]) - now_ms))
    remaining = state.get("remaining_ms")
    return None if remaining is None else int(remaining)


def format_remaining(remaining_ms: int) -> str:
    """Whole seconds rounded up above 5 s; tenths (rounded up) at and below 5 s."""
    if remaining_ms > TENTHS_BELOW_MS:
        return str(math.ceil(remaining_ms / 1000))
    tenths = math.ceil(remaining_ms / 100)
    return f"{tenths // 10}.{tenths % 10}"


def match_left(state: Mapping[str, Any], now_ms: float) -> float | None:
    """The match clock's time left at ``now_ms`` (ms), or None when the match has none."""
    mc = state.get("match_clock")
    if not isinstance(mc, Mapping):
        return None
    if mc.get("phase") == MatchClockPhase.RUNNING and mc.get("deadline") is not None:
        return max(0.0, float(mc["deadline"]) - now_ms)
    left = mc.get("remaining_ms")
    return None if left is None else float(left)


def match_text(left_ms: float) -> str:
    """The match clock on four digits: ``MM:SS`` (whole seconds rounded up, as the pages
    show it) up to 99:59, whole minutes (rounded up) from 100 minutes: ``18:43``, ``9:05``,
    ``105``. A colon module lights its colon; a module with points lights digit 2's."""
    total = math.ceil(max(0.0, left_ms) / 1000)
    minutes, secs = divmod(total, 60)
    if minutes < 100:
        return f"{minutes}:{secs:02d}"
    return str(math.ceil(total / 60))


def _between_frames(state: Mapping[str, Any], now_ms: float) -> str:
    match = state.get("match")
    if isinstance(match, Mapping) and match.get("over"):
        return MATCH_OVER_TEXT
    left = match_left(state, now_ms)
    return "" if left is None else match_text(left)


def render(state: Mapping[str, Any], now_ms: float) -> DisplayFrame:
    phase = str(state.get("phase", ClockPhase.READY))
    player = int(state.get("player", 0))
    ext = tuple(int(x) for x in state.get("extensions_left", (0, 0)))
    fouls = tuple(int(x) for x in state.get("fouls", (0, 0)))
    common = {"player": player, "extensions_left": ext, "fouls": fouls}
    if phase == ClockPhase.FRAME_OVER:  # the match clock between frames; nEXt at the match end
        return DisplayFrame(text=_between_frames(state, now_ms), stage="frame_over",
                            **common)  # type: ignore[arg-type]
    remaining = remaining_at(state, now_ms)
    if remaining is None:  # no time control (12.1): show dashes, keep the player indicator
        return DisplayFrame(text="--", stage="off", **common)  # type: ignore[arg-type]
    if phase == ClockPhase.EXPIRED:
        stage = "expired"
    elif phase in (ClockPhase.READY, ClockPhase.PAUSED):
        stage = phase
    elif remaining <= TENTHS_BELOW_MS:
        stage = "critical"
    elif remaining <= 10000:
        stage = "warning"
    else:
        stage = "running"
    text = "0.0" if phase == ClockPhase.EXPIRED else format_remaining(remaining)
    return DisplayFrame(text=text, stage=stage, **common)  # type: ignore[arg-type]


def next_change_ms(state: Mapping[str, Any], now_ms: float) -> float | None:
    """The unix-ms instant at which ``render`` will next give other digits, or None if static.

    A display loop sleeps until then instead of polling, so digits change within the
    loop's wake-up error of the true instant.
    """
    if state.get("phase") == ClockPhase.FRAME_OVER:
        return _next_match_second(state, now_ms)
    if state.get("phase") != "running" or not state.get("timer", True):
        return None
    deadline = state.get("deadline")
    if deadline is None:
        return None
    remaining = float(deadline) - now_ms
    if remaining <= 0:
        return None
    step = 100 if remaining <= TENTHS_BELOW_MS else 1000
    # Digits change when remaining crosses the next multiple of `step` below it.
    boundary = math.ceil(remaining / step) * step - step
    return float(deadline) - boundary


def _next_match_second(state: Mapping[str, Any], now_ms: float) -> float | None:
    """Between frames: when the match clock's digits next change (every whole second while
    it runs; its text rounds up, as the shot clock's), or None."""
    match = state.get("match")
    mc = state.get("match_clock")
    if (isinstance(match, Mapping) and match.get("over")) or not isinstance(mc, Mapping):
        return None
    if mc.get("phase") != MatchClockPhase.RUNNING or mc.get("deadline") is None:
        return None
    remaining = float(mc["deadline"]) - now_ms
    if remaining <= 0:
        return None
    boundary = math.ceil(remaining / 1000) * 1000 - 1000
    return float(mc["deadline"]) - boundary
