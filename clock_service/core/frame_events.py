"""The events the frame's rules make through the table clock: counted fouls, re-spots, a
frame's end and a match's end (events.py defines each). No I/O.

The rules (``rules.Match``, ``rules.FrameRules``) own the facts and say what a command
made of them in an ``Outcome``; these build the events that tell the table and the
clients, from that outcome and the match.
"""

from __future__ import annotations

from clock_service.core.events import FOUL, FRAME_ENDED, MATCH_ENDED, RESPOT, Event
from clock_service.core.rules import EndReason, Match, Outcome

__all__ = ["foul_events", "respot_events", "frame_ended", "match_ended"]


def foul_events(outcome: Outcome, fouls: list[int]) -> list[Event]:
    """One ``foul`` per counted foul (10.1, I12); ``fouls``: the frame's count after it."""
    return [FOUL({
        "player": foul.player, "reason": foul.reason, "rule": foul.rule,
        "code": foul.code.value, "breaches": [b.to_dict() for b in foul.breaches],
        "fouls": fouls, "technical_loss": outcome.frame_over,
    }) for foul in outcome.fouls]


def respot_events(outcome: Outcome) -> list[Event]:
    """The balls to put back (11.x): instructions; the referee starts the clock when done
    (I14)."""
    if not outcome.respots:
        return []
    return [RESPOT({
        "player": outcome.next_player,
        "respots": [r.to_dict() for r in outcome.respots],
        "instructions": [r.instruction for r in outcome.respots],
    })]


def frame_ended(match: Match, frame: int, referee_reason: str | None) -> Event:
    """The frame ``frame`` ended: by the rules (3.2, 10.5-10.6) or by the referee (D9)."""
    rules = match.frame
    assert rules.end_reason is not None  # the rules or the referee ended it
    return FRAME_ENDED({
        "frame": frame, "winner": rules.winner, "reason": rules.end_reason.value,
        "frames_won": list(match.score), "rule": rules.end_rule,
        "outside_rules": rules.end_reason is EndReason.REFEREE,
        "referee_reason": referee_reason, "fouls": list(rules.fouls),
    })


def match_ended(match: Match, frames: int) -> Event:
    """The match is over: won by the race, or decided by its time limit (12.1)."""
    return MATCH_ENDED({
        "winner": match.winner, "score": list(match.score),
        "frames_won": list(match.score), "race_to": match.race_to,
        "frames": frames, "by_time_limit": match.decided_by_limit, "drawn": match.drawn,
    })
