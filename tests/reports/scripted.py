"""A scripted match with known shot times, played against the real app on a fake clock.

Race to 2, Ivanov (0) breaking first, the rules' default time profile (35 s for two
rounds, then 5 s less per round down to 20 s; one 15 s extension per player per frame).
Every figure the record must show is computed by hand in ``SHOTS``, ``FRAMES`` and
``PLAYERS`` below, from the comments of the script, not by the code under test.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from clock_service.service.timesource import FakeTime
from tests.waiting import settle

EARLY_POT = {
    "colour_potted": True,
    "call": {"pocket": "bottom_left", "cushions": ["right_bottom"], "contacts": ["cue>colour"],
             "shot_type": "early_cushion"},
    "route": {"pocket": "bottom_left", "path": ["cue>colour", "right_bottom"]},
}

Command = Callable[..., Awaitable[dict[str, Any]]]


async def play_match_1(command: Command, time: FakeTime,
                       settle: Callable[[], Awaitable[None]]) -> None:
    """Commands and time, with what each shot used (by the clock, pauses excluded)."""

    async def wait(ms: int) -> None:
        time.advance(ms)
        await settle()

    async def timed(ms: int) -> None:
        """start, ``ms`` on the clock, shot."""
        await command("start")
        await wait(ms)
        await command("shot")

    # Frame 1, Ivanov breaks. Visit 1 (round 1, limit 35 s).
    await timed(12000)                                          # Ivanov 12.0
    await command("result", whites_potted=2, legal_break=True)  # 4.6: stays
    await command("start")
    await wait(8000)
    await command("pause")
    await wait(60000)                                           # paused: not counted
    await command("resume")
    await wait(10000)
    await command("shot")                                       # Ivanov 18.0
    await command("result", whites_potted=0)                    # turn: visit 2
    # Visit 2, Petrov (round 1).
    await command("start")
    await wait(30000)
    await command("extension")                                  # 5 s left + 15 s
    await wait(14000)
    await command("shot")                                       # Petrov 44.0, extension
    await command("result", whites_potted=1)                    # stays
    await timed(21000)                                          # Petrov 21.0
    await command("result", whites_potted=0)                    # visit 3
    # Visit 3, Ivanov (round 2): runs out, time foul 12.4, visit 4 to Petrov.
    await command("start")
    await wait(35000)                                           # Ivanov 35.0, time foul
    # Visit 4, Petrov accepts and pots the called coloured ball (3.2, an early pot): 0-1.
    await timed(5000)                                           # Petrov 5.0
    await command("result", **EARLY_POT)
    await command("new_frame")

    # Frame 2, Petrov breaks. Visit 1 (round 1).
    await timed(31000)                                          # Petrov 31.0
    await command("result", whites_potted=0, legal_break=True)  # visit 2
    # Visit 2, Ivanov: the extension asked before the start (I16): 50 s on the clock.
    await command("extension")
    await timed(40000)                                          # Ivanov 40.0, extension
    await command("result", whites_potted=1)                    # stays
    await timed(9000)                                           # pressed too soon:
    await command("undo", reason="shot not played yet")         # back, paused at 26 s
    await wait(3000)                                            # paused: not counted
    await command("resume")
    await wait(2000)
    await command("shot")                                       # Ivanov 11.0
    await command("result", whites_potted=0)                    # visit 3
    # Visit 3, Petrov (round 2): a foul while the clock runs (9, free text), visit 4 to Ivanov.
    await command("start")
    await wait(6000)                                            # 6.0 on the clock, no shot
    await command("foul", reason="touched a ball")
    await command("hand_back")                                  # 10.4: visit 5
    # Visit 5, Petrov (round 3, limit 30 s): a push shot (9), his second foul: 10.5, 1-1.
    await timed(25500)                                          # Petrov 25.5
    await command("result", whites_potted=0, referee_foul="push shot")
    await command("new_frame")

    # Frame 3, Ivanov breaks. Visit 1 (round 1).
    await timed(20000)                                          # Ivanov 20.0
    await command("result", whites_potted=0, legal_break=True)  # visit 2
    await command("start")
    await wait(35000)                                           # Petrov 35.0, time foul
    # Visit 3, Ivanov (round 2) accepts and pots the called coloured ball: 2-1, over.
    await timed(7000)                                           # Ivanov 7.0
    await command("result", **EARLY_POT)


# One row per timed attempt: frame, visit, round, player, limit_ms, used_ms, extension,
# outcome, fouls (the CSV's first columns after the match id).
SHOTS = [
    (1, 1, 1, "Ivanov", 35000, 12000, 0, "shot", ""),
    (1, 1, 1, "Ivanov", 35000, 18000, 0, "shot", ""),
    (1, 2, 1, "Petrov", 35000, 44000, 1, "shot", ""),
    (1, 2, 1, "Petrov", 35000, 21000, 0, "shot", ""),
    (1, 3, 2, "Ivanov", 35000, 35000, 0, "time_foul", "12.4"),
    (1, 4, 2, "Petrov", 35000, 5000, 0, "shot", ""),
    (2, 1, 1, "Petrov", 35000, 31000, 0, "shot", ""),
    (2, 2, 1, "Ivanov", 35000, 40000, 1, "shot", ""),
    (2, 2, 1, "Ivanov", 35000, 11000, 0, "shot", ""),
    (2, 3, 2, "Petrov", 35000, 6000, 0, "foul", "9"),
    (2, 5, 3, "Petrov", 30000, 25500, 0, "shot", "9"),
    (3, 1, 1, "Ivanov", 35000, 20000, 0, "shot", ""),
    (3, 2, 1, "Petrov", 35000, 35000, 0, "time_foul", "12.4"),
    (3, 3, 2, "Ivanov", 35000, 7000, 0, "shot", ""),
]

# Frame: number -> (breaker, winner, reason, duration_ms = the waits of the frame, whites).
FRAMES = {
    1: (0, 1, "legal_colour_pot", 12000 + 8000 + 60000 + 10000 + 30000 + 14000 + 21000
        + 35000 + 5000, [2, 1]),
    2: (1, 0, "technical_loss", 31000 + 40000 + 9000 + 3000 + 2000 + 6000 + 25500, [1, 0]),
    3: (0, 0, "legal_colour_pot", 20000 + 35000 + 7000, [0, 0]),
}

# Per player: (scope, player) -> figures. Times of the shots played (not expiries or stops):
#   Ivanov: 12.0 18.0 | 40.0 11.0 | 20.0 7.0   sorted 7 11 12 18 20 40, sum 108
#   Petrov: 44.0 21.0 5.0 | 31.0 25.5 | -      sorted 5 21 25.5 31 44, sum 126.5
# p90 = the ceil(0.9 n)-th smallest; over 20 s / 30 s: strictly more.
PLAYERS: dict[tuple[str, int], dict[str, Any]] = {
    ("match", 0): dict(
        shots=6, timed_shots=6, mean_ms=18000, median_ms=15000, p90_ms=40000, max_ms=40000,
        total_ms=108000, over_20s=1, over_30s=1, share_over_20s=0.1667,
        share_over_30s=0.1667, extensions=1, time_fouls=1, fouls=1,
        fouls_by_rule={"12.4": 1}, whites=3, visits=6, frames_won=2, breaks=2, breaks_won=1),
    ("match", 1): dict(
        shots=5, timed_shots=5, mean_ms=25300, median_ms=25500, p90_ms=44000, max_ms=44000,
        total_ms=126500, over_20s=4, over_30s=2, share_over_20s=0.8, share_over_30s=0.4,
        extensions=1, time_fouls=1, fouls=3, fouls_by_rule={"9": 2, "12.4": 1},
        whites=1, visits=6, frames_won=1, breaks=1, breaks_won=0),
    ("frame1", 0): dict(
        shots=2, mean_ms=15000, median_ms=15000, p90_ms=18000, max_ms=18000, over_20s=0,
        share_over_20s=0.0, extensions=0, time_fouls=1, fouls=1, whites=2, visits=2,
        frames_won=0, breaks=1, breaks_won=0),
    ("frame1", 1): dict(
        shots=3, mean_ms=23333, median_ms=21000, p90_ms=44000, max_ms=44000, over_20s=2,
        share_over_20s=0.6667, over_30s=1, share_over_30s=0.3333, extensions=1,
        time_fouls=0, fouls=0, whites=1, visits=2, frames_won=1, breaks=0),
    ("frame2", 0): dict(
        shots=2, mean_ms=25500, median_ms=25500, p90_ms=40000, over_20s=1, over_30s=1,
        share_over_30s=0.5, extensions=1, fouls=0, whites=1, visits=2, frames_won=1),
    ("frame2", 1): dict(
        shots=2, mean_ms=28250, median_ms=28250, p90_ms=31000, over_20s=2,
        share_over_20s=1.0, over_30s=1, fouls=2, fouls_by_rule={"9": 2},
        time_fouls=0, whites=0, visits=3, breaks=1, breaks_won=0),
    ("frame3", 0): dict(
        shots=2, mean_ms=13500, median_ms=13500, p90_ms=20000, over_20s=0, visits=2,
        frames_won=1, breaks=1, breaks_won=1),
    ("frame3", 1): dict(  # no shot played: the time figures are absent, not 0
        shots=0, timed_shots=0, mean_ms=None, median_ms=None, p90_ms=None, max_ms=None,
        over_20s=None, share_over_20s=None, time_fouls=1, fouls=1, visits=1),
}


async def settle_runtime(runtime: Any) -> None:
    """Until every event emitted so far (timer-driven ones too) is durable and published."""
    await settle(runtime)
