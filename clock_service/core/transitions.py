"""The table clock's phases and its one transition table. No I/O.

Everything that decides whether a referee command is legal, and where it leads, lives in
this file (as h11's ``_state.py``): the table (``CLOCK``: phase -> input -> where it leads
and the events it makes, or why it is refused), the check on top of it for a match that is
over, and the guards, the rules that need more of the state than the phase (12.5 once
per frame, 12.7 before time runs out, 10.4 only after a foul). ``refusal`` is the one check
``TableClock.handle`` raises and ``state()["allowed"]`` lists, so a page never keeps its
own copy of the rules. Every refusal names the command, the phase and, where one decides
it, the rule. The moves are made by ``TableClock`` through ``machine.Current.apply``; a
command's handler names the outcome when the rules decided it (the frame ended).

The inputs are the referee's commands and the clock's own: ``warning`` and ``expiry``
(the time reaches a threshold or the deadline, ``advance``), ``restart`` (the service
came back, ``recover``), ``undone`` (a step taken back while the clock counted comes back
frozen: the referee resumes) and ``time_limit`` (the match clock reached the limit).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any, Protocol

from clock_service.core.errors import RuleRefusal
from clock_service.core.events import EVENT_TYPES
from clock_service.core.machine import Back, Cell, Go, Ignore, Machine, No
from clock_service.core.match_clock import AT_LIMIT
from clock_service.core.rules import Match

__all__ = ["ClockPhase", "PHASES", "COMMAND_INPUTS", "CLOCK_INPUTS", "CLOCK", "ALLOWED",
           "FRAME_ENDS", "GUARDS", "ClockFacts", "why_not", "refusal", "allowed", "legality"]


class ClockPhase(StrEnum):
    """The table clock's phase (state.phase): ready (the next shot's limit shown, not
    counting), running (counting down, I15), paused (the referee's stoppage), expired (time
    ran out, 12.4: the opponent accepts or hands back, 10.4), frame_over (the frame ended:
    only a new frame or a new match)."""

    READY = "ready"  # the next shot's limit is shown, not counting (balls moving, 11.4)
    RUNNING = "running"  # counting down (I15: from balls at rest to cue tip on cue ball)
    PAUSED = "paused"  # referee stoppage, remaining time frozen
    # Time ran out (12.4): time foul taken, turn passed; waiting for the opponent to
    # accept (start) or hand back (10.4).
    EXPIRED = "expired"
    # The frame ended: 3.2, technical loss (10.5), or the referee; only a new frame. Also
    # a new table's phase until ``open`` starts frame 1.
    FRAME_OVER = "frame_over"


PHASES: tuple[ClockPhase, ...] = tuple(ClockPhase)
READY, RUNNING, PAUSED, EXPIRED, FRAME_OVER = PHASES

# The referee's commands (commands.COMMANDS), in the order the table lists them.
COMMAND_INPUTS = ("start", "shot", "extension", "pause", "resume", "turn", "foul",
                  "hand_back", "new_frame", "undo", "set_time", "result", "call",
                  "new_match", "shot_clock_on")
# The clock's own inputs.
CLOCK_INPUTS = ("warning", "expiry", "restart", "undone", "time_limit")

# The outcome a handler names when the rules ended the frame (3.2, 10.5-10.6) or the
# referee's award ended the match (D9): the move leads to frame_over instead.
FRAME_ENDS = "the frame ends"
_ENDS = {FRAME_ENDS: FRAME_OVER}
# What the end of a frame may make besides frame.ended: slow play switched on for the
# frame goes off, the match ends (the race), or the time limit's choice applies (12.1).
_FRAME_ENDED = ("frame.ended", "shot_clock.off", "match_clock.applied", "match.ended")
# A counted foul: re-spots (11.x), and either the turn (10.4) or the end of the frame.
_FOUL = ("respot", "turn", *_FRAME_ENDED)
# The match's time limit reached: the organiser's choice (match_clock.AT_LIMIT).
_LIMIT = ("shot_clock.on", "match_clock.applied", "match.ended")

_FRAME_IS_OVER = No("frame_over", "the frame is over: start a new frame")
_RUNNING_ONLY = Ignore("only a running clock counts")


def _not_allowed(phase: ClockPhase) -> No:
    return No("not_allowed", f"not allowed while the clock is {phase}")


def _row(phase: ClockPhase, cells: dict[str, Cell[ClockPhase]]) -> dict[str, Cell[ClockPhase]]:
    """A phase's cells, with the two every phase shares: undo goes back to the phase of the
    step taken back; the match's time limit changes no phase (the organiser's choice)."""
    return {**cells, "undo": Back(("correction.undone",)),
            "time_limit": Go(phase, may=_LIMIT)}


# phase -> input -> cell. ``Go(to, makes, may, instead)``: where it leads, the events it
# always makes, the ones it makes when the rules or the time say so, and where it leads
# instead when the rules ended the frame. ``Back``: undo, to the phase of the step taken
# back. ``Ignore``: nothing happens. ``No(code, message, rule)``: refused.
CLOCK: Machine[ClockPhase] = Machine("clock", ClockPhase, COMMAND_INPUTS + CLOCK_INPUTS, {
    READY: _row(READY, {
        "start": Go(RUNNING, ("clock.started",), ("match_clock.started",)),  # I15
        "shot": No("not_running", "the clock was not started for this shot: start it first",
                   "I15"),
        "extension": Go(READY, ("clock.extended",)),  # 12.5, I16: it adds to this shot
        "pause": No("not_running", "the clock is not running"),
        "resume": No("not_paused", "the clock is not paused: start it instead"),
        "turn": Go(READY, ("turn",)),
        "foul": Go(READY, ("foul",), _FOUL, _ENDS),
        "hand_back": Go(READY, ("turn",)),  # 10.4: only after a foul (guard)
        "new_frame": Go(READY, ("frame.ended",), ("frame.started", *_FRAME_ENDED[1:]),
                        _ENDS),  # D9
        "set_time": Go(READY, ("clock.corrected",)),
        # What the shot did (sections 3-11): once the clock stopped on the shot (I15).
        "result": Go(READY, ("shot.result",), ("foul", *_FOUL, "match_clock.started"), _ENDS),
        # The strict call, before the shot (7.1); not on the break (4.4, guard).
        "call": Go(READY, ("call.announced",)),
        "new_match": Go(READY, ("match.started", "frame.started")),
        # Slow play: the referee switches the clock on (12.1 leaves timing to the organiser).
        "shot_clock_on": Go(READY, ("shot_clock.on",)),
        "warning": _RUNNING_ONLY,
        "expiry": _RUNNING_ONLY,
        "restart": _RUNNING_ONLY,
        "undone": _RUNNING_ONLY,
    }),
    RUNNING: _row(RUNNING, {
        "start": No("already_running", "the clock is already running"),
        "shot": Go(READY, ("clock.stopped",)),  # I15: cue tip on the cue ball
        "extension": Go(RUNNING, ("clock.extended",)),
        "pause": Go(PAUSED, ("clock.paused",), ("match_clock.paused",)),
        "resume": No("not_paused", "the clock is already running"),
        "turn": Go(READY, ("clock.stopped", "turn")),
        "foul": Go(READY, ("clock.stopped", "foul"), _FOUL, _ENDS),
        "hand_back": No("already_accepted", "the opponent already accepted by playing on",
                        "10.4"),
        "new_frame": Go(READY, ("clock.stopped", "frame.ended"),
                        ("frame.started", *_FRAME_ENDED[1:]), _ENDS),
        "set_time": Go(RUNNING, ("clock.corrected",)),
        "result": No("clock_running", "the shot is still being timed: press shot when it is "
                     "played, then report its result", "I15"),
        "call": Go(RUNNING, ("call.announced",)),
        "new_match": No("clock_counting",
                        "a shot is being timed: stop the clock (shot or turn) first"),
        "shot_clock_on": Go(RUNNING, ("shot_clock.on",)),  # the full limit from now
        "warning": Go(RUNNING, ("clock.warning",)),
        # 12.4: the time foul; the turn passes (10.4), or it is the second foul (10.5).
        "expiry": Go(EXPIRED, ("clock.expired", "foul"), _FOUL, _ENDS),
        # Downtime never causes a time foul: back paused with the time it had (I19).
        "restart": Go(PAUSED, ("clock.paused",), ("clock.warning",)),
        # Back as it was at the step taken back, but frozen: the referee resumes.
        "undone": Go(PAUSED),
    }),
    PAUSED: _row(PAUSED, {
        "start": No("paused", "the clock is paused: resume it instead"),
        "shot": Go(READY, ("clock.stopped",)),
        "extension": Go(PAUSED, ("clock.extended",)),
        "pause": No("already_paused", "the clock is already paused"),
        "resume": Go(RUNNING, ("clock.resumed",), ("match_clock.resumed",)),
        "turn": Go(READY, ("clock.stopped", "turn")),
        "foul": Go(READY, ("clock.stopped", "foul"), _FOUL, _ENDS),
        "hand_back": _not_allowed(PAUSED),
        "new_frame": Go(READY, ("clock.stopped", "frame.ended"),
                        ("frame.started", *_FRAME_ENDED[1:]), _ENDS),
        "set_time": Go(PAUSED, ("clock.corrected",)),
        "result": No("clock_paused", "the clock is paused: press shot when the shot is "
                     "played, then report its result", "I15"),
        "call": Go(PAUSED, ("call.announced",)),
        "new_match": No("clock_counting", "a shot is being timed (paused): stop the clock "
                        "(shot or turn) first"),
        "shot_clock_on": Go(PAUSED, ("shot_clock.on",)),
        "warning": _RUNNING_ONLY,
        "expiry": _RUNNING_ONLY,
        "restart": _RUNNING_ONLY,
        "undone": _RUNNING_ONLY,
    }),
    EXPIRED: _row(EXPIRED, {
        "start": Go(RUNNING, ("clock.started",), ("match_clock.started",)),  # accepts, 10.4
        "shot": No("too_late", "the shot time has already run out; the expiry stands", "I17"),
        "extension": No("extension_too_late",
                        "an extension must be asked before the main time runs out", "12.7"),
        "pause": _not_allowed(EXPIRED),
        "resume": _not_allowed(EXPIRED),
        "turn": No("turn_already_passed", "the turn already passed on the time foul; start "
                   "(accept) or hand back", "10.4"),
        "foul": Go(READY, ("foul",), _FOUL, _ENDS),
        "hand_back": Go(READY, ("turn",)),  # 10.4
        "new_frame": Go(READY, ("frame.ended",), ("frame.started", *_FRAME_ENDED[1:]),
                        _ENDS),
        "set_time": No("expired", "time already ran out: undo the expiry first, then set the "
                       "time", "I17"),
        "result": No("result_after_expiry", "the shot time ran out (a time foul, 12.4); the "
                     "opponent accepts (start) or hands back first", "10.4"),
        "call": No("call_after_expiry", "the shot time ran out (a time foul, 12.4); the "
                   "opponent accepts (start) or hands back first, then announces", "10.4"),
        "new_match": Go(READY, ("match.started", "frame.started")),
        "shot_clock_on": _not_allowed(EXPIRED),
        "warning": _RUNNING_ONLY,
        "expiry": _RUNNING_ONLY,
        "restart": _RUNNING_ONLY,
        "undone": _RUNNING_ONLY,
    }),
    FRAME_OVER: _row(FRAME_OVER, {
        "start": _FRAME_IS_OVER,
        "shot": _FRAME_IS_OVER,
        "extension": _FRAME_IS_OVER,
        "pause": _FRAME_IS_OVER,
        "resume": _FRAME_IS_OVER,
        "turn": _FRAME_IS_OVER,
        "foul": _FRAME_IS_OVER,
        "hand_back": _FRAME_IS_OVER,
        "new_frame": Go(READY, ("frame.started",)),  # also ``open``: frame 1 of a new table
        "set_time": _FRAME_IS_OVER,
        "result": _FRAME_IS_OVER,
        "call": _FRAME_IS_OVER,
        # A new match whenever no shot is being timed, and once the match is over.
        "new_match": Go(READY, ("match.started", "frame.started")),
        # Between frames only for the rest of the match (guard in TableClock: scope).
        "shot_clock_on": Go(FRAME_OVER, ("shot_clock.on",)),
        "warning": _RUNNING_ONLY,
        "expiry": _RUNNING_ONLY,
        "restart": _RUNNING_ONLY,
        "undone": _RUNNING_ONLY,
    }),
}, events=EVENT_TYPES)

# command -> the phases in which the table does not refuse it (the guards may still).
ALLOWED: dict[str, frozenset[ClockPhase]] = {name: CLOCK.legal(name) for name in COMMAND_INPUTS}


# -- on top of the table: the match over, and the guards ---------------------------------

class ClockFacts(Protocol):
    """What the checks below read of the clock (``TableClock``)."""

    @property
    def phase(self) -> ClockPhase: ...
    @property
    def match(self) -> Match: ...
    @property
    def players(self) -> tuple[str, str]: ...
    @property
    def player(self) -> int: ...
    @property
    def timer(self) -> bool: ...
    @property
    def timed(self) -> bool: ...
    @property
    def slow_play(self) -> str | None: ...
    @property
    def shot_played(self) -> bool: ...
    @property
    def deciding_frame(self) -> bool: ...
    @property
    def hand_back_to(self) -> int | None: ...
    @property
    def at_match_limit(self) -> str: ...
    @property
    def extensions_used(self) -> Sequence[int]: ...
    @property
    def history(self) -> Sequence[object]: ...
    def extensions_allowed(self) -> int: ...
    def remaining_ms(self, now: float) -> int | None: ...


def refusal(clock: ClockFacts, name: str, now: float) -> RuleRefusal | None:
    """Why command ``name`` would be refused at ``now`` whatever its fields, or None: the
    one legality check (``TableClock.handle`` raises it, ``allowed`` lists what passes it)."""
    why = why_not(clock, name, now)
    if why is None:
        return None
    suffix = f" ({why.rule})" if why.rule else ""
    return RuleRefusal(f"{name} refused in phase {clock.phase}: {why.message}{suffix}",
                       code=why.code, rule=why.rule)


_SORTED = sorted(COMMAND_INPUTS)


def allowed(clock: ClockFacts, now: float) -> list[str]:
    """The commands legal at ``now``, sorted: those ``refusal`` has nothing against."""
    phase, over = clock.phase, clock.match.over  # read once for all of them
    return [name for name in _SORTED if why_not(clock, name, now, phase, over) is None]


def legality(clock: ClockFacts, now: float) -> dict[str, Any]:
    """``allowed`` and, for every other command, the code and rule of its refusal (a page
    shows why a button is disabled without a copy of the rules)."""
    legal: list[str] = []
    refused: dict[str, dict[str, str]] = {}
    phase, over = clock.phase, clock.match.over  # every state has it: read once
    for name in _SORTED:
        why = why_not(clock, name, now, phase, over)
        if why is None:
            legal.append(name)
        else:
            refused[name] = {"code": why.code, "rule": why.rule} if why.rule else {"code": why.code}
    return {"allowed": legal, "refused": refused}


def why_not(clock: ClockFacts, name: str, now: float, phase: ClockPhase | None = None,
            over: bool | None = None) -> No | None:
    """Why command ``name`` is refused at ``now`` whatever its fields, or None: the match
    is over, or the table refuses it in this phase, or a guard does (``phase`` and
    ``over``: the clock's, when the caller has read them already)."""
    match = clock.match
    if (match.over if over is None else over) and name not in ("undo", "new_match"):
        winner = match.winner
        a, b = match.score
        result = f"drawn {a}-{b}" if winner is None else f"{clock.players[winner]} won {a}-{b}"
        rule = (AT_LIMIT[clock.at_match_limit].rule if match.decided_by_limit
                else f"race to {match.race_to}")
        return No("match_over", f"the match is over: {result}; only undo or a new match is "
                  "allowed", rule)
    cell = CLOCK.table[clock.phase if phase is None else phase][name]
    if isinstance(cell, No):
        return cell
    guard = GUARDS.get(name)
    return guard(clock, now) if guard is not None else None


# Guards: what the rules forbid on top of the table, from the state alone (a refusal that
# depends on the command's fields belongs to its handler).
def _guard_timer(clock: ClockFacts, now: float) -> No | None:
    if not clock.timed:
        return No("no_timer", "this match is played without a timer", "12.1")
    return None


def _guard_extension(clock: ClockFacts, now: float) -> No | None:
    if not clock.timed:
        return _guard_timer(clock, now)
    player = clock.player
    allowed = clock.extensions_allowed()
    if clock.extensions_used[player] >= allowed:
        used = ("the extension" if allowed == 1 else
                "no extension" if allowed == 0 else f"all {allowed} extensions")
        where = "this deciding frame" if clock.deciding_frame else "this frame"
        return No("extension_used", f"{clock.players[player]} already used {used} {where}"
                  if allowed else f"the profile gives {used} in {where}", "12.5")
    if (clock.remaining_ms(now) or 0) <= 0:
        return No("extension_too_late", "the main time has run out", "12.7")
    return None


def _guard_hand_back(clock: ClockFacts, now: float) -> No | None:
    if clock.hand_back_to is None:
        return No("no_foul_pending", "there is no foul to hand back", "10.4")
    return None


def _guard_undo(clock: ClockFacts, now: float) -> No | None:
    if not clock.history:
        return No("nothing_to_undo", "there is nothing to undo")
    return None


def _guard_call(clock: ClockFacts, now: float) -> No | None:
    # The call is announced before the shot (7.1); the break has none (4.4, D2).
    if not clock.match.frame.break_done:
        return No("call_on_break", "the break is played without a call: the coloured ball "
                  "can only drop by chance on it and goes back on the spot", "4.4-4.5")
    if clock.shot_played:
        return No("call_after_shot", "the shot was already played: give its call inside "
                  "result (it is recorded as given after the shot), then announce the next "
                  "one", "7.1")
    return None


def _guard_shot_clock_on(clock: ClockFacts, now: float) -> No | None:
    if clock.timer:
        return No("already_timed", "this match is played with the shot clock", "12.1")
    if clock.slow_play == "match":
        return No("shot_clock_already_on", "the shot clock is already on for the rest of "
                  "the match (slow play)")
    return None


GUARDS: dict[str, Callable[[ClockFacts, float], No | None]] = {
    "shot_clock_on": _guard_shot_clock_on,
    "call": _guard_call,
    "extension": _guard_extension,
    "hand_back": _guard_hand_back,
    "undo": _guard_undo,
    "set_time": _guard_timer,
}
