"""A match: frames played until one player reaches ``race_to`` frames won.

Best of N frames (N odd) is the race to (N + 1) // 2: :meth:`Match.best_of`.
The default is a single frame (race to 1); ``race_to=None`` is an open-ended
match that nobody wins (frames are counted, the referee decides when to stop).
The referee may also end a frame in progress (:meth:`Match.end_frame_by_referee`),
awarding it to a player or to nobody; a frame awarded to nobody is ``undecided``.
The breaker of frame 1 is player 0 unless configured, and breaks alternate by frame (I3).

The match passes commands to the current frame and counts a frame the moment
it ends; the next frame starts only when asked (:meth:`Match.start_next_frame`),
since the referee racks the balls first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clock_service.core.rules.call import Call
from clock_service.core.rules.errors import InvalidResult, RuleRefusal
from clock_service.core.rules.fouls import FoulCode, GeneralFoul
from clock_service.core.rules.frame import FrameRules, Outcome, ShotResult

__all__ = ["Match"]


class Match:
    """Score and frames of a match between players 0 and 1."""

    def __init__(self, race_to: int | None = 1, first_breaker: int = 0) -> None:
        if race_to is not None and (
            not isinstance(race_to, int) or isinstance(race_to, bool) or race_to < 1
        ):
            raise InvalidResult(
                f"match.race_to must be an integer >= 1 or null, got {race_to!r}",
                code="bad_match",
            )
        if first_breaker not in (0, 1) or isinstance(first_breaker, bool):
            raise InvalidResult(
                f"match.first_breaker must be 0 or 1, got {first_breaker!r}", code="unknown_player"
            )
        self._race_to = race_to
        self._first_breaker = first_breaker
        self._score = [0, 0]
        self._undecided = 0  # frames the referee ended without a winner
        self._frame_number = 1
        self._frame = FrameRules(breaker=first_breaker)
        # Decided outside the race by the match's time limit (the organiser's choice, 12.1):
        # a winner, or a draw.
        self._decided: int | None = None
        self._drawn = False

    @classmethod
    def best_of(cls, frames: int, first_breaker: int = 0) -> Match:
        """Best of an odd number of frames: the race to a majority of them."""
        if not isinstance(frames, int) or isinstance(frames, bool) or frames < 1 or frames % 2 == 0:
            raise InvalidResult(
                f"best_of needs an odd number of frames >= 1, got {frames!r}", code="bad_match"
            )
        return cls(race_to=(frames + 1) // 2, first_breaker=first_breaker)

    # -- reading the state ---------------------------------------------------

    @property
    def race_to(self) -> int | None:
        return self._race_to

    @property
    def first_breaker(self) -> int:
        return self._first_breaker

    @property
    def frame(self) -> FrameRules:
        """The current frame (the last one, once the match is over)."""
        return self._frame

    @property
    def frame_number(self) -> int:
        """1-based number of the current frame."""
        return self._frame_number

    @property
    def score(self) -> tuple[int, int]:
        """Frames won per player."""
        return (self._score[0], self._score[1])

    @property
    def undecided(self) -> int:
        """Frames the referee ended without a winner."""
        return self._undecided

    @property
    def winner(self) -> int | None:
        if self._decided is not None:
            return self._decided
        if self._race_to is None:
            return None
        for player in (0, 1):
            if self._score[player] >= self._race_to:
                return player
        return None

    @property
    def over(self) -> bool:
        return self.winner is not None or self._drawn

    @property
    def drawn(self) -> bool:
        return self._drawn

    @property
    def decided_by_limit(self) -> bool:
        """The match was ended by its time limit, not by the race."""
        return self._decided is not None or self._drawn

    def decide(self, winner: int | None) -> None:
        """The match's time limit ends it between frames: ``winner`` wins, or (None) it is
        drawn. Only once the frame in play is over (the clock applies the organiser's
        choice at a frame's end)."""
        if self.over:
            raise RuleRefusal("decide: the match is already over", code="match_over",
                              rule=f"race to {self._race_to}")
        if not self._frame.over:
            raise RuleRefusal(f"decide: frame {self._frame_number} is still being played",
                              code="frame_in_progress", rule="3.2, 10.5")
        if winner is None:
            self._drawn = True
        elif winner in (0, 1):
            self._decided = winner
        else:
            raise InvalidResult(f"decide: winner must be 0, 1 or None, got {winner!r}",
                                code="unknown_player")

    def breaker_of(self, frame_number: int) -> int:
        """Who breaks frame ``frame_number`` (1-based): alternating from the first (I3)."""
        if not isinstance(frame_number, int) or frame_number < 1:
            raise InvalidResult(f"frame_number must be >= 1, got {frame_number!r}",
                                code="bad_match")
        return self._first_breaker if frame_number % 2 == 1 else 1 - self._first_breaker

    # -- commands, passed to the current frame --------------------------------

    def announce(self, call: Call) -> Call | None:
        return self._frame.announce(call)

    def shot(self, result: ShotResult) -> Outcome:
        return self._counted(self._frame.shot(result))

    def record_foul(self, player: int, rule: str, reason: str,
                    code: FoulCode | str = FoulCode.OTHER) -> Outcome:
        return self._counted(self._frame.record_foul(player, rule, reason, code))

    def referee_foul(self, player: int, general: GeneralFoul) -> Outcome:
        return self._counted(self._frame.referee_foul(player, general))

    def accept(self) -> Outcome:
        return self._counted(self._frame.accept())

    def hand_back(self) -> Outcome:
        return self._counted(self._frame.hand_back())

    def pass_turn(self) -> Outcome:
        return self._frame.pass_turn()

    def end_frame_by_referee(self, winner: int | None, reason: str | None) -> None:
        """The referee ends the frame in progress: it counts for ``winner``, or for nobody.
        A decision outside the rules: it needs its ``reason`` (D9)."""
        self._frame.end_by_referee(winner, reason)
        if winner is None:
            self._undecided += 1
        else:
            self._score[winner] += 1

    def start_next_frame(self) -> FrameRules:
        """Begin the next frame once the current one is over; fouls start from zero (10.5)."""
        if self.over:
            raise RuleRefusal(
                f"start_next_frame: the match is over, won by player {self.winner} "
                f"{self._score[0]}-{self._score[1]}",
                code="match_over",
                rule=f"race to {self._race_to}",
            )
        if not self._frame.over:
            raise RuleRefusal(
                f"start_next_frame: frame {self._frame_number} is still being played",
                code="frame_in_progress",
                rule="3.2, 10.5",
            )
        self._frame_number += 1
        self._frame = FrameRules(breaker=self.breaker_of(self._frame_number))
        return self._frame

    def _counted(self, outcome: Outcome) -> Outcome:
        if outcome.winner is not None:
            self._score[outcome.winner] += 1
        return outcome

    # -- serialisation -------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        out = {
            "race_to": self._race_to,
            "first_breaker": self._first_breaker,
            "score": list(self._score),
            "undecided": self._undecided,
            "frame_number": self._frame_number,
            "frame": self._frame.to_dict(),
        }
        if self.decided_by_limit:  # only then: states stored before keep their shape
            out["decided"] = self._decided
            out["drawn"] = self._drawn
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Match:
        """Rebuild from :meth:`to_dict`; an impossible state is refused (``bad_state``)."""
        keys = {"race_to", "first_breaker", "score", "undecided", "frame_number", "frame"}
        limit_keys = {"decided", "drawn"}
        if not isinstance(data, Mapping) or set(data) not in (keys, keys | limit_keys):
            raise InvalidResult(f"match state needs fields {sorted(keys)}", code="bad_state")
        match = cls(data["race_to"], data["first_breaker"])
        score, number = data["score"], data["frame_number"]
        undecided = data["undecided"]
        frame = FrameRules.from_dict(data["frame"])
        race = match.race_to
        valid_score = (
            isinstance(score, list | tuple)
            and len(score) == 2
            and all(isinstance(s, int) and not isinstance(s, bool) for s in score)
            and all(s >= 0 and (race is None or s <= race) for s in score)
            and (race is None or min(score) < race)
            and isinstance(undecided, int)
            and not isinstance(undecided, bool)
            and undecided >= 0
        )
        played = sum(score) + undecided if valid_score else -1
        if (
            not valid_score
            or not isinstance(number, int)
            or number < 1
            or played not in (number - 1, number)
            or (played == number) != frame.over
            or (race is not None and max(score) >= race and not frame.over)  # none after last
            or frame.breaker != match.breaker_of(number)
        ):
            raise InvalidResult(f"inconsistent match state: {dict(data)}", code="bad_state")
        match._score = list(score)
        match._undecided = undecided
        match._frame_number = number
        match._frame = frame
        decided, drawn = data.get("decided"), data.get("drawn", False)
        if decided not in (None, 0, 1) or not isinstance(drawn, bool) or (
                (decided is not None or drawn) and not frame.over):
            raise InvalidResult(f"inconsistent match state: {dict(data)}", code="bad_state")
        match._decided = decided
        match._drawn = drawn
        return match

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Match):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"Match({self.to_dict()!r})"
