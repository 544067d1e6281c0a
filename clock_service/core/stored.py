"""The table clock's stored form: which of its facts a snapshot holds (the store's state,
every undo entry), and how states stored by older versions read back. No I/O.

A snapshot is a dict of plain JSON values: the clock's own facts (``FIELDS``) and, under
``"match"``, the rules' state (``rules.Match.to_dict``). Fields added after states were
first stored read back with the value an old state means (``DEFAULTS``); a state stored
before the rules joined the clock gets its match rebuilt from what it kept
(``legacy_match``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["FIELDS", "DEFAULTS", "legacy_match"]

# The clock's own facts in a snapshot, by their attribute names on ``TableClock``.
FIELDS = (
    "frame", "breaker", "visit", "player", "phase", "remaining", "deadline",
    "pending_warnings", "extensions_used", "last_step_at", "shot_played", "frame_shots",
    "slow_play", "slow_play_reason", "limit_pending",
)
# Fields added after states were first stored, with the value an old state means.
DEFAULTS: dict[str, Any] = {"last_step_at": None, "shot_played": False, "frame_shots": 2,
                            "slow_play": None, "slow_play_reason": None,
                            "limit_pending": None}


def legacy_match(data: Mapping[str, Any], first_breaker: int) -> dict[str, Any]:
    """A state stored before the rules joined the clock: fouls, choice and score only."""
    over = data["phase"] == "frame_over"
    winner = data.get("frame_winner")
    fouler = data.get("hand_back_to")
    score = list(data.get("frames_won", [0, 0]))
    number = max(1, data["frame"])
    return {
        "race_to": None, "first_breaker": first_breaker, "score": score,
        "undecided": max(0, number - (0 if over else 1) - sum(score)),
        "frame_number": number,
        "frame": {
            "breaker": data["breaker"], "player_at_table": data["player"],
            "break_done": data["visit"] > 1, "credited": [0, 0],
            "fouls": list(data.get("fouls", [0, 0])),
            "choice_for": None if fouler is None else 1 - fouler,
            "winner": winner if over else None,
            "end_reason": (data.get("frame_end_reason") or "referee") if over else None,
        },
    }
