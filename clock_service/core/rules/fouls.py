"""Fouls as data: a code for every kind, the rule it breaks, and the referee's general fouls.

Section 9 lists the fouls of the discipline; its last item is "any other breach of the
general Russian-billiards rules that applies here". The referee reports the common ones
of those with a structured :class:`GeneralFoul` (D10): a :class:`FoulCode`, and for two
of them a detail (which balls left the table; what touched a ball). Free text remains
(``other``) for anything else. The fouls the rules find themselves (an illegal break,
over the limit, the coloured ball off its call, the time) have codes too, so every
counted foul carries one code per rule it broke (:class:`Breach`), and a page can word
it in its own language without parsing English.

The discipline's rules cite the general rules only as 9's last item, so every general
foul maps to rule "9"; its consequence is that of any foul (10.1-10.6). Two have more:

- ``ball_off_table``: the balls that left the table are re-spotted by section 11
  (the coloured ball on the back spot, 11.1; whites at the back cushion, 11.2).
- ``out_of_turn``: the foul is the player's who played out of turn, which is not the
  player at the table; the ``foul`` command names him (by default the seated player),
  and a shot ``result`` cannot carry it (its shooter is the player at the table).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, NoReturn

from clock_service.core.rules.errors import InvalidResult
from clock_service.core.text import LINE, clean, refusal

__all__ = [
    "FOUL_RULES",
    "GENERAL_FOULS",
    "Breach",
    "FoulCode",
    "GeneralFoul",
    "OffTableBall",
    "TouchedWith",
]

MAX_FOUL_TEXT: Final = LINE.cap


def _unknown(what: str, code: str, value: object, allowed: Iterable[str]) -> NoReturn:
    raise InvalidResult(f"unknown {what} {value!r}; allowed: {', '.join(allowed)}", code=code)


class FoulCode(StrEnum):
    """Every kind of foul, with a stable name (the rule it breaks: :data:`FOUL_RULES`)."""

    # General fouls the referee sees (9, last item; D10).
    BALL_OFF_TABLE = "ball_off_table"
    DOUBLE_HIT = "double_hit"
    PUSH_SHOT = "push_shot"
    NO_BALL_CONTACT = "no_ball_contact"
    TOUCHED_BALL = "touched_ball"
    OUT_OF_TURN = "out_of_turn"
    OTHER = "other"
    # Fouls the rules find in the report of a shot, and the clock's own.
    ILLEGAL_BREAK = "illegal_break"
    OVER_LIMIT = "over_limit"
    COLOUR_WITHOUT_CALL = "colour_without_call"
    WHITE_AND_COLOUR = "white_and_colour"
    CALL_NOT_FULFILLED = "call_not_fulfilled"
    UNANNOUNCED_CONTACT = "unannounced_contact"
    COLOUR_BEFORE_THREE = "colour_before_three"
    SHOT_TIME = "shot_time"

    @classmethod
    def _missing_(cls, value: object) -> NoReturn:
        _unknown("foul code", "unknown_foul_code", value, (c.value for c in cls))


#: The rule each code breaks. ``call_not_fulfilled`` is 7.3 unless the judge names another
#: (7.4 an unannounced contact, 8.2/8.3 a special shot not played as called).
FOUL_RULES: Final[Mapping[FoulCode, str]] = {
    FoulCode.BALL_OFF_TABLE: "9",
    FoulCode.DOUBLE_HIT: "9",
    FoulCode.PUSH_SHOT: "9",
    FoulCode.NO_BALL_CONTACT: "9",
    FoulCode.TOUCHED_BALL: "9",
    FoulCode.OUT_OF_TURN: "9",
    FoulCode.OTHER: "9",
    FoulCode.ILLEGAL_BREAK: "4.3",
    FoulCode.OVER_LIMIT: "5.6",
    FoulCode.COLOUR_WITHOUT_CALL: "9",  # 9, second item; 6.3 requires the call
    FoulCode.WHITE_AND_COLOUR: "9",  # 9, third item
    FoulCode.CALL_NOT_FULFILLED: "7.3",
    FoulCode.UNANNOUNCED_CONTACT: "7.4",
    FoulCode.COLOUR_BEFORE_THREE: "6.2",
    FoulCode.SHOT_TIME: "12.4",
}

#: The codes a referee may report as a general foul (``foul`` command, ``result``).
GENERAL_FOULS: Final = frozenset({
    FoulCode.BALL_OFF_TABLE, FoulCode.DOUBLE_HIT, FoulCode.PUSH_SHOT,
    FoulCode.NO_BALL_CONTACT, FoulCode.TOUCHED_BALL, FoulCode.OUT_OF_TURN, FoulCode.OTHER,
})

_GENERAL_TEXT: Final[Mapping[FoulCode, str]] = {
    FoulCode.BALL_OFF_TABLE: "ball off the table",
    FoulCode.DOUBLE_HIT: "double hit",
    FoulCode.PUSH_SHOT: "push shot",
    FoulCode.NO_BALL_CONTACT: "the cue ball touched no ball",
    FoulCode.TOUCHED_BALL: "touched a ball",
    FoulCode.OUT_OF_TURN: "played out of turn",
    FoulCode.OTHER: "general rule",
}


class OffTableBall(StrEnum):
    """A ball that left the table (``ball_off_table``)."""

    COLOUR = "colour"
    WHITE = "white"

    @classmethod
    def _missing_(cls, value: object) -> NoReturn:
        _unknown("ball", "unknown_ball", value, (b.value for b in cls))


class TouchedWith(StrEnum):
    """What touched a ball (``touched_ball``)."""

    HAND = "hand"
    CUE = "cue"
    CLOTHING = "clothing"

    @classmethod
    def _missing_(cls, value: object) -> NoReturn:
        _unknown("touched_with", "unknown_touched_with", value, (b.value for b in cls))


def _check_text(name: str, value: object) -> str:
    """The referee's words as kept, by the one rule of human text (core/text.py)."""
    reason = refusal(value, LINE)
    if reason is not None:
        raise InvalidResult(f"{name}: {reason}", code="bad_text")
    return clean(value, LINE)


@dataclass(frozen=True)
class Breach:
    """One rule a foul broke: its code, rule and reason, and the general foul's detail."""

    code: FoulCode
    rule: str
    reason: str
    balls: tuple[OffTableBall, ...] = ()
    touched_with: TouchedWith | None = None
    text: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", FoulCode(self.code))
        for name in ("rule", "reason"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise InvalidResult(f"breach.{name} must be a non-empty string, got {value!r}",
                                    code="bad_text")
        object.__setattr__(self, "balls", tuple(OffTableBall(b) for b in self.balls))
        if self.touched_with is not None:
            object.__setattr__(self, "touched_with", TouchedWith(self.touched_with))

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code.value, "rule": self.rule, "reason": self.reason,
            "balls": [b.value for b in self.balls],
            "touched_with": None if self.touched_with is None else self.touched_with.value,
            "text": self.text,
        }


@dataclass(frozen=True)
class GeneralFoul:
    """A general foul the referee saw (9, last item; D10): a code and its detail.

    - ``balls``: for ``ball_off_table`` (required there, nowhere else), the balls that
      left the table: ``colour`` at most once, ``white`` once per white.
    - ``touched_with``: for ``touched_ball`` only, optional: hand, cue or clothing.
    - ``text``: free text; required for ``other``, a note for any other code.
    """

    code: FoulCode
    balls: tuple[OffTableBall, ...] = ()
    touched_with: TouchedWith | None = None
    text: str | None = None

    def __post_init__(self) -> None:
        code = FoulCode(self.code)
        object.__setattr__(self, "code", code)
        if code not in GENERAL_FOULS:
            allowed = ", ".join(sorted(c.value for c in GENERAL_FOULS))
            raise InvalidResult(
                f"referee_foul.code {code.value!r} is found by the rules, not reported; "
                f"allowed: {allowed}", code="not_a_general_foul")
        if isinstance(self.balls, str | bytes) or not isinstance(self.balls, Iterable):
            raise InvalidResult(f"referee_foul.balls must be a list, got {self.balls!r}",
                                code="bad_sequence")
        balls = tuple(OffTableBall(b) for b in self.balls)
        object.__setattr__(self, "balls", balls)
        if self.touched_with is not None:
            object.__setattr__(self, "touched_with", TouchedWith(self.touched_with))
        if self.text is not None:
            object.__setattr__(self, "text", _check_text("referee_foul.text", self.text))
        if code is FoulCode.BALL_OFF_TABLE:
            if not balls:
                raise InvalidResult(
                    "referee_foul.balls is missing: which balls left the table (colour, white), "
                    "to re-spot them (11.1-11.2)", code="missing_balls")
            if balls.count(OffTableBall.COLOUR) > 1 or balls.count(OffTableBall.WHITE) > 7:
                raise InvalidResult(
                    f"referee_foul.balls {[b.value for b in balls]}: one coloured ball and "
                    "seven whites (1.1)", code="too_many_balls")
        elif balls:
            raise InvalidResult("referee_foul.balls is for ball_off_table only",
                                code="balls_without_off_table")
        if self.touched_with is not None and code is not FoulCode.TOUCHED_BALL:
            raise InvalidResult("referee_foul.touched_with is for touched_ball only",
                                code="touched_with_without_touch")
        if code is FoulCode.OTHER and self.text is None:
            raise InvalidResult("referee_foul.text is missing: describe the foul (code other)",
                                code="missing_text")

    @property
    def rule(self) -> str:
        return FOUL_RULES[self.code]

    @property
    def whites_off(self) -> int:
        return self.balls.count(OffTableBall.WHITE)

    @property
    def colour_off(self) -> bool:
        return OffTableBall.COLOUR in self.balls

    @property
    def reason(self) -> str:
        """In English, as the event's ``reason``; pages word it from the code."""
        if self.code is FoulCode.OTHER:  # the referee's own words
            assert self.text is not None
            return self.text
        reason = _GENERAL_TEXT[self.code]
        if self.balls:
            what = []
            if self.colour_off:
                what.append("the coloured ball")
            if self.whites_off:
                what.append("1 white" if self.whites_off == 1 else f"{self.whites_off} whites")
            reason += ": " + " and ".join(what)
        if self.touched_with is not None:
            reason += f" with the {self.touched_with.value}"
        if self.text is not None:
            reason += f" ({self.text})"
        return reason

    def breach(self) -> Breach:
        return Breach(self.code, self.rule, self.reason, self.balls, self.touched_with,
                      self.text)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code.value,
            "balls": [b.value for b in self.balls],
            "touched_with": None if self.touched_with is None else self.touched_with.value,
            "text": self.text,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GeneralFoul:
        extra = sorted(set(data) - {"code", "balls", "touched_with", "text"})
        if extra:
            raise InvalidResult(f"unknown referee_foul field(s): {', '.join(extra)}",
                                code="unknown_field")
        if "code" not in data:
            raise InvalidResult("referee_foul.code is missing", code="missing_field")
        return cls(code=data["code"], balls=data.get("balls") or (),
                   touched_with=data.get("touched_with"), text=data.get("text"))

    @classmethod
    def parse(cls, value: GeneralFoul | Mapping[str, Any] | str) -> GeneralFoul:
        """From a GeneralFoul, its JSON object, or free text (code ``other``)."""
        if isinstance(value, GeneralFoul):
            return value
        if isinstance(value, str):
            return cls(FoulCode.OTHER, text=value)
        if isinstance(value, Mapping):
            return cls.from_dict(value)
        raise InvalidResult(
            f"referee_foul must be a text or an object {{code, balls?, touched_with?, text?}}, "
            f"got {value!r}", code="bad_referee_foul")
