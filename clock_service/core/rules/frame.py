"""The rules state of one frame: credits, fouls, the 10.4 choice, the frame's end.

A plain object with no I/O and no notion of time, visits or rounds. The
referee's report of a shot goes in as a :class:`ShotResult`; an
:class:`Outcome` comes out saying what the rules make of it. The clock core
drives its visits from ``Outcome.turn`` (I1, I2): ``STAYS`` means the same
player plays the next shot of the same visit, ``PASSES`` means a new visit of
``Outcome.next_player``; ``None`` means the frame is over.

Whites on the table: the 7 whites (1.1), less the whites credited so far. A
shot may pot any number of them (5.5), the cue ball included when a white was
the cue ball, so one shot pots at most ``whites_on_table`` whites; a report
claiming more is refused (``too_many_whites``).

D5 (one act, one foul). One shot is at most one foul, however many rules it
breaks: it counts once for 10.5, its ``breaches`` list every rule broken (each
with its code, :mod:`.fouls`), its ``rule`` and ``code`` are the first breach
found and its ``reason`` names them all.

The frame's phase (``Phase``) moves only by its table, ``FRAME``: phase -> command -> the
next phase (and where it leads instead for what the rules made of it: a foul, the end of
the frame, a break still to play) or the refusal with its rule; each command applies its
move once, at its end (``machine.Current.apply``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, cast

from clock_service.core.machine import Current, Go, Machine, No
from clock_service.core.rules.call import Call, CallVerdict, Route, ShotType, judge_call
from clock_service.core.rules.errors import InvalidResult, RuleRefusal
from clock_service.core.rules.fouls import Breach, FoulCode, GeneralFoul

__all__ = [
    "COMMANDS",
    "CallTiming",
    "EndReason",
    "FRAME",
    "Foul",
    "FrameRules",
    "Outcome",
    "Phase",
    "Respot",
    "RespotBall",
    "RespotSpot",
    "ShotResult",
    "Turn",
    "WHITE_LIMIT",
    "WHITES",
]

WHITES: Final = 7  # 1.1
WHITE_LIMIT: Final = 3  # 5.3
_FOULS_FOR_TECHNICAL_LOSS: Final = 2  # 10.5, I12


class Phase(StrEnum):
    BREAK = "break"  # the first shot of the frame is still to be played (4.x)
    PLAY = "play"
    CHOICE = "choice"  # a foul happened; the opponent accepts or hands back (10.4, I2)
    OVER = "over"


BREAK, PLAY, CHOICE, OVER = Phase


class Turn(StrEnum):
    STAYS = "stays"  # same player, next shot of the same visit
    PASSES = "passes"  # a new visit of Outcome.next_player


class EndReason(StrEnum):
    LEGAL_COLOUR_POT = "legal_colour_pot"  # 3.2, I7
    TECHNICAL_LOSS = "technical_loss"  # 10.5-10.6, I12
    REFEREE = "referee"  # the referee ended the frame (SPEC new_frame), a winner or none


_END_RULE: Final = {
    EndReason.LEGAL_COLOUR_POT: "3.2",
    EndReason.TECHNICAL_LOSS: "10.5-10.6",
    EndReason.REFEREE: "referee",
}


class CallTiming(StrEnum):
    """When the call that judged a shot was recorded (7.1, D1)."""

    ANNOUNCED = "announced"  # the ``call`` command, before the shot (7.1)
    AFTER_SHOT = "after_shot"  # inside ``result``: the referee recording it afterwards


class RespotBall(StrEnum):
    COLOUR = "colour"
    WHITE = "white"


class RespotSpot(StrEnum):
    BACK_SPOT = "back_spot"  # 11.1
    BACK_CUSHION_MIDDLE = "back_cushion_middle"  # 11.2


# What the rules made of a command, when it decides where the command leads (the outcome
# the command names to ``Current.apply``).
FOULED = "a foul"  # 10.4: the opponent chooses
ENDS = "the frame ends"  # 3.2 (the coloured ball), 10.5-10.6 (the second foul)
BREAK_DUE = "the break still to play"  # D6: a foul before the break, then the choice

_OVER_RESULT = No("result_after_frame_end",
                  "the frame is over; no further results are accepted (3.2, 10.5)", invalid=True)
_OVER = No("frame_over", "the frame is over", "3.2, 10.5")
_CHOOSE_FIRST = No("choice_pending",
                   "the opponent must first accept the position or hand the turn back", "10.4")

# phase -> command -> cell: which command is legal in which phase (10.4, 3.2, 10.5, 4.4),
# where it leads, and why it is refused everywhere else.
FRAME: Machine[Phase] = Machine("frame", Phase, (
    "shot", "call", "record_foul", "pass_turn", "end_by_referee", "accept", "hand_back"), {
    BREAK: {
        # 4.2-4.8: credited or not, play goes on; an illegal break is a foul (4.3, D7); a
        # breaker who already fouled (a time foul before the break, D6) loses it (10.5).
        "shot": Go(PLAY, instead={FOULED: CHOICE, ENDS: OVER}),
        "call": No("call_on_break", "the break is played without a call; the coloured ball "
                   "can only drop by chance on it and goes back on the spot", "4.4-4.5"),
        "record_foul": Go(CHOICE, instead={ENDS: OVER}),  # D6: the break is still to come
        "pass_turn": Go(PLAY),  # 4.7: the break potted no white, the turn passes
        "end_by_referee": Go(OVER),  # D9
        "accept": No("no_foul_pending", "no foul to accept", "10.4"),
        "hand_back": No("no_foul_pending", "no foul to hand back", "10.4"),
    },
    PLAY: {
        # 5.2, I1: a credited white keeps the visit; 3.2 (I7) or a second foul ends it.
        "shot": Go(PLAY, instead={FOULED: CHOICE, ENDS: OVER}),
        "call": Go(PLAY),  # 7.1: announced before the shot
        "record_foul": Go(CHOICE, instead={ENDS: OVER}),  # I12: every foul counts
        "pass_turn": Go(PLAY),  # I1: the clock's turn without a reported result
        "end_by_referee": Go(OVER),
        "accept": No("no_foul_pending", "no foul to accept", "10.4"),
        "hand_back": No("no_foul_pending", "no foul to hand back", "10.4"),
    },
    CHOICE: {
        "shot": _CHOOSE_FIRST,
        "call": Go(CHOICE),  # the chooser is at the table and may announce before playing on
        "record_foul": Go(CHOICE, instead={ENDS: OVER}),  # D13: the new foul's choice
        "pass_turn": _CHOOSE_FIRST,
        "end_by_referee": Go(OVER),
        "accept": Go(PLAY, instead={BREAK_DUE: BREAK}),  # 10.4: plays the position
        "hand_back": Go(PLAY, instead={BREAK_DUE: BREAK}),  # 10.4, I2: a visit of the fouler
    },
    OVER: {
        "shot": _OVER_RESULT,
        "call": _OVER,
        "record_foul": _OVER_RESULT,
        "pass_turn": _OVER,
        "end_by_referee": _OVER,
        "accept": _OVER,
        "hand_back": _OVER,
    },
})

# Which command is legal in which phase: the table's, for every phase.
COMMANDS: Final[Mapping[Phase, frozenset[str]]] = {
    phase: frozenset(n for n in FRAME.inputs if phase in FRAME.legal(n)) for phase in Phase}


def _refused(command: str, why: No) -> RuleRefusal | InvalidResult:
    if why.invalid or why.rule is None:
        return InvalidResult(f"{command}: {why.message}", code=why.code)
    return RuleRefusal(f"{command}: {why.message}", code=why.code, rule=why.rule)


def _check_player(name: str, value: object) -> None:
    if value not in (0, 1) or isinstance(value, bool):
        raise InvalidResult(f"{name} must be 0 or 1, got {value!r}", code="unknown_player")


def _check_count(name: str, value: object, high: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= high:
        raise InvalidResult(f"{name} must be an integer 0..{high}, got {value!r}", code="bad_count")


def _check_text(name: str, value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InvalidResult(f"{name} must be a non-empty string, got {value!r}", code="bad_text")


@dataclass(frozen=True)
class ShotResult:
    """The referee's report of one shot.

    ``legal_break`` is given on the break only, and there it is required (4.2,
    D11). ``referee_foul`` is a general foul the referee saw (9, last item;
    D10): a :class:`GeneralFoul`, its JSON object, or free text (code ``other``).
    ``route`` is needed to judge a call when the coloured ball was potted;
    its ``pocket`` must agree with ``colour_potted``.
    """

    whites_potted: int = 0
    colour_potted: bool = False
    call: Call | None = None
    route: Route | None = None
    legal_break: bool | None = None
    referee_foul: GeneralFoul | None = None

    def __post_init__(self) -> None:
        whites = self.whites_potted
        if not isinstance(whites, int) or isinstance(whites, bool) or whites < 0:
            raise InvalidResult(
                f"shot_result.whites_potted must be an integer >= 0, got {whites!r}",
                code="bad_count",
            )
        if whites > WHITES:
            raise InvalidResult(
                f"shot_result.whites_potted={self.whites_potted}: there are {WHITES} whites (1.1)",
                code="too_many_whites",
            )
        if not isinstance(self.colour_potted, bool):
            raise InvalidResult(
                f"shot_result.colour_potted must be true or false, got {self.colour_potted!r}",
                code="bad_flag",
            )
        if self.legal_break is not None and not isinstance(self.legal_break, bool):
            raise InvalidResult(
                f"shot_result.legal_break must be true, false or null, got {self.legal_break!r}",
                code="bad_flag",
            )
        if self.call is not None and not isinstance(self.call, Call):
            raise InvalidResult(f"shot_result.call is not a Call: {self.call!r}", code="bad_call")
        if self.route is not None and not isinstance(self.route, Route):
            raise InvalidResult(
                f"shot_result.route is not a Route: {self.route!r}", code="bad_route"
            )
        if self.referee_foul is not None:
            foul = GeneralFoul.parse(self.referee_foul)
            object.__setattr__(self, "referee_foul", foul)
            if foul.code is FoulCode.OUT_OF_TURN:
                raise InvalidResult(
                    "shot_result.referee_foul out_of_turn: the shooter of a result is the "
                    "player at the table; record it with the foul command naming who played "
                    "out of turn (D10)", code="out_of_turn_in_result")
            if foul.colour_off and self.colour_potted:
                raise InvalidResult(
                    "shot_result: the coloured ball cannot be both potted and off the table",
                    code="colour_potted_and_off_table")
            if whites + foul.whites_off > WHITES:
                raise InvalidResult(
                    f"shot_result: {whites} whites potted and {foul.whites_off} off the table; "
                    f"there are {WHITES} whites (1.1)", code="too_many_whites")
        if self.route is not None and (self.route.pocket is not None) != self.colour_potted:
            raise InvalidResult(
                f"shot_result.route.pocket={self.route.pocket!r} contradicts "
                f"colour_potted={self.colour_potted}",
                code="route_contradicts_result",
            )
        if self.colour_potted and self.call is not None and self.route is None:
            raise InvalidResult(
                "shot_result.route is missing: a called coloured ball was potted and the "
                "call cannot be judged without the route (7.3)",
                code="missing_route",
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "whites_potted": self.whites_potted,
            "colour_potted": self.colour_potted,
            "call": None if self.call is None else self.call.to_dict(),
            "route": None if self.route is None else self.route.to_dict(),
            "legal_break": self.legal_break,
            "referee_foul": None if self.referee_foul is None else self.referee_foul.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ShotResult:
        allowed = {"whites_potted", "colour_potted", "call", "route", "legal_break",
                   "referee_foul"}
        extra = sorted(set(data) - allowed)
        if extra:
            raise InvalidResult(
                f"unknown shot_result field(s): {', '.join(extra)}", code="unknown_field"
            )
        call, route = data.get("call"), data.get("route")
        return cls(
            whites_potted=data.get("whites_potted", 0),
            colour_potted=data.get("colour_potted", False),
            call=None if call is None else Call.from_dict(call),
            route=None if route is None else Route.from_dict(route),
            legal_break=data.get("legal_break"),
            referee_foul=data.get("referee_foul"),
        )


@dataclass(frozen=True)
class Foul:
    """A counted foul (10.1, I12): who, and every rule the act broke (D5).

    ``rule``/``code`` are the first breach's; ``reason`` words them all.
    """

    player: int
    breaches: tuple[Breach, ...]

    def __post_init__(self) -> None:
        _check_player("foul.player", self.player)
        breaches = tuple(self.breaches)
        if not breaches or not all(isinstance(b, Breach) for b in breaches):
            raise InvalidResult(f"foul.breaches must be one or more Breach, got {breaches!r}",
                                code="bad_foul")
        object.__setattr__(self, "breaches", breaches)

    @property
    def rule(self) -> str:
        return self.breaches[0].rule

    @property
    def code(self) -> FoulCode:
        return self.breaches[0].code

    @property
    def reason(self) -> str:
        """One breach: its reason (the rule is ``rule``); several: each with its rule."""
        if len(self.breaches) == 1:
            return self.breaches[0].reason
        return "; ".join(f"{b.reason} ({b.rule})" for b in self.breaches)

    def to_dict(self) -> dict[str, Any]:
        return {"player": self.player, "rule": self.rule, "code": self.code.value,
                "reason": self.reason, "breaches": [b.to_dict() for b in self.breaches]}


@dataclass(frozen=True)
class Respot:
    """An instruction to the referee to re-spot balls before the next shot (11.x, I14).

    ``rule`` is where the ball goes (11.1 or 11.2); ``cause`` the rule that
    sent it back (4.5, 5.7, 10.3, I8).
    """

    ball: RespotBall
    count: int
    spot: RespotSpot
    rule: str
    cause: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "ball", RespotBall(self.ball))
        object.__setattr__(self, "spot", RespotSpot(self.spot))
        limit = 1 if self.ball is RespotBall.COLOUR else WHITES
        if not isinstance(self.count, int) or not 1 <= self.count <= limit:
            raise InvalidResult(
                f"respot.count must be 1..{limit} for {self.ball.value}, got {self.count!r}",
                code="bad_count",
            )

    @property
    def instruction(self) -> str:
        """The instruction as the referee's page shows it."""
        if self.ball is RespotBall.COLOUR:
            what, where = "the coloured ball", "on the back spot"
        else:
            what = "1 white ball" if self.count == 1 else f"{self.count} white balls"
            where = "at the middle of the back short cushion, touching it"
        return (
            f"Re-spot {what} {where} ({self.rule}); if the place is taken, as close as "
            f"possible along the racking line (11.3); before the next shot (11.4)."
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "ball": self.ball.value,
            "count": self.count,
            "spot": self.spot.value,
            "rule": self.rule,
            "cause": self.cause,
            "instruction": self.instruction,
        }


@dataclass(frozen=True)
class Outcome:
    """What the rules make of one command.

    How the clock reacts:

    - ``turn`` STAYS: the same player plays the next shot in the same visit.
      PASSES: start a visit of ``next_player``. ``None``: the frame is over,
      stop the clock.
    - ``respots``: show them; the next shot's time waits for the referee's
      "table ready" (11.4, I14, I15).
    - ``choice_for``: that player is at the table and must answer the 10.4
      choice with ``accept()`` or ``hand_back()`` before the next shot result.
    - ``fouls``: counted fouls (the clock shows them; the frame already
      counted them, I12).
    - ``frame_over``/``winner``/``end_reason``/``end_rule``: the frame ended.
    - ``call``/``call_timing``/``call_verdict``: the call the shot was judged
      against, whether it was announced before the shot or given inside the
      result (D1), and the judge's verdict when there was a route to judge.
    """

    player: int
    whites_credited: int = 0
    fouls: tuple[Foul, ...] = ()
    respots: tuple[Respot, ...] = ()
    turn: Turn | None = None
    next_player: int | None = None
    choice_for: int | None = None
    winner: int | None = None
    end_reason: EndReason | None = None
    call: Call | None = None
    call_timing: CallTiming | None = None
    call_verdict: CallVerdict | None = None

    def __post_init__(self) -> None:
        _check_player("outcome.player", self.player)
        _check_count("outcome.whites_credited", self.whites_credited, WHITE_LIMIT)
        if (self.call is None) != (self.call_timing is None) or (
            self.call is None and self.call_verdict is not None
        ):
            raise InvalidResult(
                f"outcome.call={self.call!r} with call_timing={self.call_timing!r} and "
                f"call_verdict={self.call_verdict!r}",
                code="bad_outcome",
            )
        over = self.winner is not None
        if over != (self.end_reason is not None) or over == (self.turn is not None):
            raise InvalidResult(
                f"outcome needs either a turn or a winner with a reason, got turn={self.turn!r}, "
                f"winner={self.winner!r}, end_reason={self.end_reason!r}",
                code="bad_outcome",
            )
        if (self.next_player is None) != over:
            raise InvalidResult(
                f"outcome.next_player={self.next_player!r} with winner={self.winner!r}",
                code="bad_outcome",
            )
        if self.choice_for is not None and self.choice_for != self.next_player:
            raise InvalidResult(
                f"outcome.choice_for={self.choice_for} is not the player at the table",
                code="bad_outcome",
            )

    @property
    def frame_over(self) -> bool:
        return self.winner is not None

    @property
    def end_rule(self) -> str | None:
        return None if self.end_reason is None else _END_RULE[self.end_reason]

    def to_dict(self) -> dict[str, Any]:
        return {
            "player": self.player,
            "whites_credited": self.whites_credited,
            "fouls": [f.to_dict() for f in self.fouls],
            "respots": [r.to_dict() for r in self.respots],
            "turn": None if self.turn is None else self.turn.value,
            "next_player": self.next_player,
            "choice_for": self.choice_for,
            "frame_over": self.frame_over,
            "winner": self.winner,
            "end_reason": None if self.end_reason is None else self.end_reason.value,
            "end_rule": self.end_rule,
            "call": None if self.call is None else self.call.to_dict(),
            "call_timing": None if self.call_timing is None else self.call_timing.value,
            "call_verdict": None if self.call_verdict is None else self.call_verdict.to_dict(),
        }


def _white_respot(count: int, cause: str) -> Respot:
    return Respot(RespotBall.WHITE, count, RespotSpot.BACK_CUSHION_MIDDLE, "11.2", cause)


def _colour_respot(cause: str) -> Respot:
    return Respot(RespotBall.COLOUR, 1, RespotSpot.BACK_SPOT, "11.1", cause)


def _off_table_respots(general: GeneralFoul) -> list[Respot]:
    """The balls that left the table go back like potted ones (11.1-11.2, D10)."""
    out = []
    if general.whites_off:
        out.append(_white_respot(general.whites_off, "9"))
    if general.colour_off:
        out.append(_colour_respot("9"))
    return out


def _call_text(call: Call) -> str:
    return json.dumps(call.to_dict(), separators=(", ", ": "))


class FrameRules:
    """The rules state of one frame for players 0 and 1.

    Commands: :meth:`announce`, :meth:`shot`, :meth:`record_foul`, :meth:`accept`,
    :meth:`hand_back`, :meth:`pass_turn`, :meth:`end_by_referee`; which is
    legal when is the :data:`COMMANDS` table.
    Each returns an :class:`Outcome` or raises :class:`InvalidResult` /
    :class:`RuleRefusal` without changing the state.
    """

    def __init__(self, breaker: int = 0) -> None:
        _check_player("breaker", breaker)
        self._breaker = breaker
        self._player_at_table = breaker
        self._break_done = False
        self._credited = [0, 0]
        self._fouls = [0, 0]
        self._choice_for: int | None = None
        self._winner: int | None = None
        self._end_reason: EndReason | None = None
        # The call the player at the table announced for the next shot (7.1, D1).
        self._call: Call | None = None
        self._phase = Current(FRAME, BREAK)  # moved only by FRAME

    # -- reading the state ---------------------------------------------------

    @property
    def breaker(self) -> int:
        return self._breaker

    @property
    def player_at_table(self) -> int:
        return self._player_at_table

    @property
    def break_done(self) -> bool:
        return self._break_done

    @property
    def credited(self) -> tuple[int, int]:
        """Whites credited per player, 0..3 each (5.3)."""
        return (self._credited[0], self._credited[1])

    @property
    def fouls(self) -> tuple[int, int]:
        """Fouls per player in this frame (10.1, I12)."""
        return (self._fouls[0], self._fouls[1])

    @property
    def whites_on_table(self) -> int:
        """The whites still in play: 7 less those credited (1.1); re-spotted ones are back."""
        return WHITES - sum(self._credited)

    @property
    def announced_call(self) -> Call | None:
        """The call announced for the next shot of the player at the table (7.1), if any."""
        return self._call

    @property
    def choice_for(self) -> int | None:
        """The player who must accept or hand back after a foul (10.4), if any."""
        return self._choice_for

    @property
    def winner(self) -> int | None:
        return self._winner

    @property
    def end_reason(self) -> EndReason | None:
        return self._end_reason

    @property
    def end_rule(self) -> str | None:
        """The rule that ended the frame (3.2, 10.5-10.6); None in play or by the referee."""
        if self._end_reason is None or self._end_reason is EndReason.REFEREE:
            return None
        return _END_RULE[self._end_reason]

    @property
    def over(self) -> bool:
        return self._end_reason is not None

    @property
    def phase(self) -> Phase:
        return self._phase.state

    def _phase_of_facts(self) -> Phase:
        """The phase the facts imply: how a stored frame (which keeps no phase) is read
        back; after every command it is the phase the table moved to (a test walks it)."""
        if self.over:
            return OVER
        if self._choice_for is not None:
            return CHOICE
        return PLAY if self._break_done else BREAK

    def _require(self, command: str) -> None:
        why = FRAME.cell(self.phase, command)
        if isinstance(why, No):
            raise _refused(command, why)

    def _set_player(self, player: int) -> None:
        # A call belongs to the player who announced it: a change at the table drops it (D1).
        if player != self._player_at_table:
            self._call = None
        self._player_at_table = player

    # -- commands ------------------------------------------------------------

    def announce(self, call: Call) -> Call | None:
        """The player at the table announces the call of the next shot (7.1, D1).

        Returns the call it replaces: until the shot is played the player may
        change the call; the last one announced is the one judged. Refused on
        the break (4.4, D2) and once the frame is over.
        """
        self._require("call")
        if not self._break_done:  # a choice after a time foul before the break (D2)
            raise _refused("call", cast(No, FRAME.cell(BREAK, "call")))
        if not isinstance(call, Call):
            raise InvalidResult(f"call expects a Call, got {call!r}", code="bad_call")
        replaced, self._call = self._call, call
        self._phase.apply("call")
        return replaced

    def shot(self, result: ShotResult) -> Outcome:
        """Apply the referee's report of the shot just played by the player at the table.

        The shot is judged against the call announced before it (7.1); a call
        inside ``result`` is the referee recording it after the shot (D1). Both
        at once must agree: a different call would rewrite what was announced.
        """
        self._require("shot")
        shooter = self._player_at_table
        breaking = not self._break_done
        self._check_result(result, breaking)
        timing: CallTiming | None = None
        if self._call is not None:
            if result.call is not None and result.call != self._call:
                raise RuleRefusal(
                    f"shot: the call announced before the shot was {_call_text(self._call)}; "
                    f"the result may not change it to {_call_text(result.call)}: leave the "
                    "call out of the result",
                    code="call_differs_from_announced",
                    rule="7.1",
                )
            result = dataclasses.replace(result, call=self._call)
            timing = CallTiming.ANNOUNCED
        elif result.call is not None:
            timing = CallTiming.AFTER_SHOT
        if result.colour_potted and result.call is not None and result.route is None:
            raise InvalidResult(
                "shot_result.route is missing: a called coloured ball was potted and the "
                "call cannot be judged without the route (7.3)",
                code="missing_route",
            )
        verdict = (None if result.call is None or result.route is None
                   else judge_call(result.call, result.route))
        self._call = None
        outcome = self._apply_shot(shooter, breaking, result, verdict)
        self._phase.apply("shot", ENDS if outcome.frame_over else FOULED if outcome.fouls
                          else None)
        return dataclasses.replace(outcome, call=result.call, call_timing=timing,
                                   call_verdict=verdict)

    def _apply_shot(self, shooter: int, breaking: bool, result: ShotResult,
                    verdict: CallVerdict | None) -> Outcome:
        breaches: list[Breach] = []  # every rule the shot broke; the first is the foul's (D5)
        respots: list[Respot] = []
        whites = result.whites_potted
        colour_cause: str | None = None  # why a potted coloured ball goes back
        if breaking:
            if not result.legal_break:
                breaches.append(Breach(FoulCode.ILLEGAL_BREAK, "4.3",
                                       "illegal break: the conditions of 4.2 were not met"))
            if result.colour_potted:
                colour_cause = "4.5"  # 4.4-4.5, I9: by chance, not a foul, back on the spot
        elif result.colour_potted:
            breach = self._colour_breach(result, verdict)
            if breach is not None:
                breaches.append(breach)
                colour_cause = "I8"
        # D12: a called coloured ball that did not drop is no foul by itself (whites need no
        # call, 5.1); an unannounced contact is, when a ball was potted (7.4).
        elif verdict is not None and verdict.rule == "7.4" and whites > 0:
            breaches.append(Breach(FoulCode.UNANNOUNCED_CONTACT, "7.4",
                                   f"{verdict.message}; the shot does not count and a ball "
                                   "was potted"))
        if whites and self._credited[shooter] + whites > WHITE_LIMIT:
            breaches.append(Breach(
                FoulCode.OVER_LIMIT, "5.6",
                f"{self._credited[shooter]} credited + {whites} potted would exceed "
                f"{WHITE_LIMIT} (5.3)",
            ))
        general = result.referee_foul
        if general is not None:
            breaches.append(general.breach())
        # D7: an illegal break is still the break: the opponent chooses (10.4) and plays
        # the position or hands it back; nobody breaks again and there is no re-rack.
        self._break_done = True

        if breaches:
            if whites:
                # 5.7 for the over-limit shot, 10.3 and I5 for any other foul.
                cause = "5.7" if any(b.code is FoulCode.OVER_LIMIT for b in breaches) else "10.3"
                respots.append(_white_respot(whites, cause))
            if result.colour_potted:
                # A legal pot spoilt by another foul (e.g. the referee's) goes back too (10.3).
                respots.append(_colour_respot(colour_cause or "10.3"))
            if general is not None:
                respots.extend(_off_table_respots(general))
            return self._commit_foul(Foul(shooter, tuple(breaches)), tuple(respots))

        if result.colour_potted and not breaking:
            return self._end(shooter, shooter, EndReason.LEGAL_COLOUR_POT)  # 3.2, I7

        if colour_cause is not None:
            respots.append(_colour_respot(colour_cause))
        # 5.2, 4.8, I6: credited; I1, 4.6-4.7: the turn stays only if a white was credited.
        self._credited[shooter] += whites
        if whites == 0:
            self._set_player(1 - shooter)
        return Outcome(
            player=shooter,
            whites_credited=whites,
            respots=tuple(respots),
            turn=Turn.STAYS if whites else Turn.PASSES,
            next_player=self._player_at_table,
        )

    def record_foul(self, player: int, rule: str, reason: str,
                    code: FoulCode | str = FoulCode.OTHER) -> Outcome:
        """Count a foul that is not a shot result, given by its rule: time (12.4, code
        ``shot_time``), or a referee's foul worded freely with the rule it breaks.

        It shares the count with every other foul (I12): a second foul of the
        player ends the frame (10.5-10.6, I13); a first one gives the opponent
        the 10.4 choice, replacing a choice still pending (D13). It is not a
        shot: before the break the break is still to be played, by the opponent
        if he accepts, by the breaker if he hands back (D6).
        """
        self._require("record_foul")
        foul = Foul(player, (Breach(FoulCode(code), rule, reason),))
        return self._foul_counted(self._commit_foul(foul, ()))

    def referee_foul(self, player: int, general: GeneralFoul) -> Outcome:
        """Count a general foul the referee saw outside a shot's result (9, D10), with its
        consequence: the balls off the table go back (11.1-11.2). Legal as ``record_foul``.
        """
        self._require("record_foul")
        if not isinstance(general, GeneralFoul):
            raise InvalidResult(f"referee_foul expects a GeneralFoul, got {general!r}",
                                code="bad_referee_foul")
        if general.whites_off > self.whites_on_table:
            raise InvalidResult(
                f"referee_foul.balls: {general.whites_off} whites off the table but only "
                f"{self.whites_on_table} are on it (1.1)", code="too_many_whites")
        foul = Foul(player, (general.breach(),))
        return self._foul_counted(self._commit_foul(foul, tuple(_off_table_respots(general))))

    def accept(self) -> Outcome:
        """The opponent accepts the position and plays on (10.4): same visit continues."""
        self._require("accept")
        chooser = self._chooser()
        self._choice_for = None
        self._phase.apply("accept", None if self._break_done else BREAK_DUE)
        return Outcome(player=chooser, turn=Turn.STAYS, next_player=chooser)

    def hand_back(self) -> Outcome:
        """The opponent hands the turn back to the player who fouled (10.4): a new visit (I2)."""
        self._require("hand_back")
        chooser = self._chooser()
        self._choice_for = None
        self._set_player(1 - chooser)
        self._phase.apply("hand_back", None if self._break_done else BREAK_DUE)
        return Outcome(player=chooser, turn=Turn.PASSES, next_player=self._player_at_table)

    def pass_turn(self) -> Outcome:
        """The turn passes without a reported result (the clock's plain ``turn``).

        For a referee who runs the clock but does not report results: the shot
        that ended the visit credited nothing and was no foul (I1), so nothing
        else changes. It counts as the break if the break was still to come
        (4.7: no white potted, the turn passes).
        """
        self._require("pass_turn")
        shooter = self._player_at_table
        self._break_done = True
        self._set_player(1 - shooter)
        self._phase.apply("pass_turn")
        return Outcome(player=shooter, turn=Turn.PASSES, next_player=self._player_at_table)

    def end_by_referee(self, winner: int | None, reason: str | None) -> None:
        """The referee ends the frame in progress, awarding it to ``winner`` or to nobody.

        D9: the rules never end a frame this way (only 3.2 and 10.5-10.6 do), so it is a
        referee decision outside them and needs its ``reason``.
        """
        self._require("end_by_referee")
        if reason is None or not isinstance(reason, str) or not reason.strip():
            raise InvalidResult(
                "reason is missing: ending a frame in progress is a referee decision outside "
                "the rules (they end it only by 3.2 or 10.5-10.6); give the reason",
                code="missing_reason")
        if winner is not None:
            _check_player("winner", winner)
        self._winner = winner
        self._end_reason = EndReason.REFEREE
        self._choice_for = None
        self._call = None
        self._phase.apply("end_by_referee")

    # -- internals -----------------------------------------------------------

    def _foul_counted(self, outcome: Outcome) -> Outcome:
        """A foul outside a shot moved the frame: to the choice, or to its end (10.5)."""
        self._phase.apply("record_foul", ENDS if outcome.frame_over else None)
        return outcome

    def _chooser(self) -> int:
        assert self._choice_for is not None  # guaranteed by FRAME
        return self._choice_for

    def _check_result(self, result: ShotResult, breaking: bool) -> None:
        if not isinstance(result, ShotResult):
            raise InvalidResult(f"shot expects a ShotResult, got {result!r}", code="bad_result")
        off = 0 if result.referee_foul is None else result.referee_foul.whites_off
        if off and result.whites_potted + off > self.whites_on_table:
            raise InvalidResult(
                f"shot_result: {result.whites_potted} whites potted and {off} off the table "
                f"but only {self.whites_on_table} are on it (1.1)",
                code="too_many_whites",
            )
        if result.whites_potted > self.whites_on_table:
            raise InvalidResult(
                f"shot_result.whites_potted={result.whites_potted} but only "
                f"{self.whites_on_table} whites are on the table "
                f"(7 less {sum(self._credited)} credited, 1.1)",
                code="too_many_whites",
            )
        if breaking and result.legal_break is None:
            raise InvalidResult(
                "shot_result.legal_break is missing: this is the break; say whether it was "
                "legal (true) or not (false) (4.2)",
                code="missing_legal_break",
            )
        if not breaking and result.legal_break is not None:
            raise InvalidResult(
                f"shot_result.legal_break={result.legal_break} but the break was already played",
                code="legal_break_after_break",
            )
        if breaking and (result.call is not None or result.route is not None):
            raise InvalidResult(
                "shot_result.call/route on the break: the coloured ball can only drop by "
                "chance there (4.4)",
                code="call_on_break",
            )

    def _colour_breach(self, result: ShotResult, verdict: CallVerdict | None) -> Breach | None:
        """Why a pot of the coloured ball after the break is not legal (I7, I8), or None."""
        credited = self._credited[self._player_at_table]
        if result.whites_potted:
            return Breach(FoulCode.WHITE_AND_COLOUR, "9",
                          "a white and the coloured ball potted with the same shot")
        if result.call is None:
            return Breach(FoulCode.COLOUR_WITHOUT_CALL, "9",
                          "the coloured ball potted without a call (6.3)")
        assert verdict is not None  # a called pot has a route (checked in shot)
        if not verdict.fulfilled:
            assert verdict.rule is not None
            code = (FoulCode.UNANNOUNCED_CONTACT if verdict.rule == "7.4"
                    else FoulCode.CALL_NOT_FULFILLED)
            return Breach(code, verdict.rule, f"call not fulfilled: {verdict.message}")
        if credited < WHITE_LIMIT and result.call.shot_type is ShotType.NORMAL:
            return Breach(
                FoulCode.COLOUR_BEFORE_THREE, "6.2",
                f"the coloured ball potted with {credited} whites credited; before three "
                "(6.1) only a called early pot is allowed (7.2, section 8)",
            )
        return None

    def _commit_foul(self, foul: Foul, respots: tuple[Respot, ...]) -> Outcome:
        fouler = foul.player
        self._fouls[fouler] += 1
        if self._fouls[fouler] >= _FOULS_FOR_TECHNICAL_LOSS:
            # 10.5-10.6, I12, I13: the frame is lost at once, no choice; the
            # table is racked afresh, so no re-spots (D14).
            return self._end(fouler, 1 - fouler, EndReason.TECHNICAL_LOSS, (foul,))
        before = self._player_at_table
        # 10.4, I2: the opponent is at the table and chooses; a foul of the seated player
        # leaves the shooter there, with the choice (D13).
        self._choice_for = 1 - fouler
        self._set_player(1 - fouler)
        return Outcome(
            player=fouler,
            fouls=(foul,),
            respots=respots,
            turn=Turn.STAYS if before == self._player_at_table else Turn.PASSES,
            next_player=self._player_at_table,
            choice_for=self._choice_for,
        )

    def _end(
        self, actor: int, winner: int, reason: EndReason, fouls: tuple[Foul, ...] = ()
    ) -> Outcome:
        self._winner = winner
        self._end_reason = reason
        self._choice_for = None
        self._call = None
        return Outcome(player=actor, fouls=fouls, winner=winner, end_reason=reason)

    # -- serialisation -------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "breaker": self._breaker,
            "player_at_table": self._player_at_table,
            "break_done": self._break_done,
            "credited": list(self._credited),
            "fouls": list(self._fouls),
            "choice_for": self._choice_for,
            "winner": self._winner,
            "end_reason": None if self._end_reason is None else self._end_reason.value,
            "announced_call": None if self._call is None else self._call.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FrameRules:
        """Rebuild from :meth:`to_dict`; an impossible state is refused (``bad_state``)."""
        keys = {"breaker", "player_at_table", "break_done", "credited", "fouls", "choice_for",
                "winner", "end_reason"}
        # "announced_call" came with the call command; a state stored before may lack it.
        if not isinstance(data, Mapping) or set(data) - {"announced_call"} != keys:
            got = sorted(data) if isinstance(data, Mapping) else data
            raise InvalidResult(f"frame state needs fields {sorted(keys)}, got {got}",
                                code="bad_state")
        try:
            frame = cls(data["breaker"])
            _check_player("player_at_table", data["player_at_table"])
            if not isinstance(data["break_done"], bool):
                raise InvalidResult(f"break_done={data['break_done']!r}", code="bad_state")
            for name, high in (("credited", WHITE_LIMIT), ("fouls", _FOULS_FOR_TECHNICAL_LOSS)):
                pair = data[name]
                if not isinstance(pair, list | tuple) or len(pair) != 2:
                    raise InvalidResult(f"{name}={pair!r} is not a pair", code="bad_state")
                for value in pair:
                    _check_count(name, value, high)
            winner, reason = data["winner"], data["end_reason"]
            if winner is not None:
                _check_player("winner", winner)
            end_reason = None if reason is None else EndReason(reason)
            choice_for = data["choice_for"]
            if choice_for is not None:
                _check_player("choice_for", choice_for)
            call_data = data.get("announced_call")
            call = None if call_data is None else Call.from_dict(call_data)
        except (ValueError, TypeError) as exc:
            raise InvalidResult(f"bad frame state: {exc}", code="bad_state") from exc
        over = end_reason is not None
        if (
            (winner is not None and not over)
            or (over and winner is None and end_reason is not EndReason.REFEREE)
            or (over and choice_for is not None)
            or (choice_for is not None and choice_for != data["player_at_table"])
            or (not over and max(data["fouls"]) >= _FOULS_FOR_TECHNICAL_LOSS)
            or (call is not None and (over or not data["break_done"]))
        ):
            raise InvalidResult(f"inconsistent frame state: {dict(data)}", code="bad_state")
        frame._player_at_table = data["player_at_table"]
        frame._break_done = data["break_done"]
        frame._credited = list(data["credited"])
        frame._fouls = list(data["fouls"])
        frame._choice_for = choice_for
        frame._winner = winner
        frame._end_reason = end_reason
        frame._call = call
        frame._phase.restore(frame._phase_of_facts())
        return frame

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FrameRules):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"FrameRules({self.to_dict()!r})"
