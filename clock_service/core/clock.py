"""The shot clock of one table: commands and the time go in, events come out. No I/O.

Time is a float of milliseconds on one monotonic timeline given by the caller (the
runtime aligns it with unix ms at start, so deadlines read as unix ms). The clock keeps a
deadline while it runs and derives every remaining time from it; nothing is counted.
The caller asks ``next_wakeup()`` when it must call ``advance(now)`` again.

``TableClock`` is the face the runtime uses; its parts, each with one job:

- ``transitions``: the phases and the one transition table (where each command leads,
  and every refusal with its rule), with the guards on top: ``refusal(name, now)`` is the
  one legality check (``handle`` raises it, ``state()["allowed"]`` lists what passes it);
- ``countdown.Countdown``: the shot's deadline, the time left, the warnings ahead;
- ``time_limit.MatchLimit``: the match's time limit, its clock and the organiser's choice;
- ``corrections.Corrections``: the undo stack;
- ``frame_events``: the events of the rules' outcomes (fouls, re-spots, ends);
- ``table_state``: the state as the pages read it; ``stored``: the stored form.

The phase moves only by the table: each handler here applies its command's move once
(``self._phase.apply``), naming the outcome when the rules ended the frame.

One owner of each fact. The clock owns time, phase, visit, round and the player at the
table. The frame rules (``rules.Match`` holding a ``FrameRules``, kept in ``self.match``)
own credited whites, the foul count (one count for time, referee and shot fouls, I12), the
10.4 choice and the frame's and the match's result; the clock reads those from the rules
and drives its visits from the rules' ``Outcome``. Every command that changes the turn
(``result``, ``turn``, ``foul``, ``hand_back``, the implicit accept by ``start``) goes
through the rules too, so the two always agree on who is at the table. The rules' state
is part of ``_dump``/``_load``: undo, refusals and restarts restore it with the clock's.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import Any, TypedDict, TypeVar

from clock_service.core import stored
from clock_service.core.commands import (
    SAME,
    AnnounceCall,
    Command,
    Extension,
    Foul,
    HandBack,
    NewFrame,
    NewMatch,
    Pause,
    Result,
    Resume,
    SetTime,
    Shot,
    ShotClockOn,
    Start,
    Turn,
    Undo,
    check_press_time,
    press_instant,
)
from clock_service.core.corrections import UNDO_DEPTH, Corrections, Entry
from clock_service.core.countdown import Countdown, ceil_ms
from clock_service.core.errors import InvalidCommand, InvalidInput, RuleRefusal
from clock_service.core.events import (
    CALL_ANNOUNCED,
    CLOCK_CORRECTED,
    CLOCK_EXPIRED,
    CLOCK_EXTENDED,
    CLOCK_PAUSED,
    CLOCK_RESUMED,
    CLOCK_STARTED,
    CLOCK_STOPPED,
    CLOCK_WARNING,
    CORRECTION_UNDONE,
    FRAME_STARTED,
    MATCH_STARTED,
    SHOT_CLOCK_OFF,
    SHOT_CLOCK_ON,
    SHOT_RESULT,
    TURN,
    Decision,
    Event,
    MatchStartedData,
    PauseReason,
    SlowPlayScope,
    StopReason,
    TurnReason,
)
from clock_service.core.frame_events import foul_events, frame_ended, match_ended, respot_events
from clock_service.core.machine import Current
from clock_service.core.match_clock import MatchClock
from clock_service.core.profile import Profile
from clock_service.core.rules import FoulCode, InvalidResult, Match, Outcome, RulesError
from clock_service.core.rules import RuleRefusal as RulesRefusal
from clock_service.core.rules import Turn as TurnOutcome
from clock_service.core.table_state import table_state
from clock_service.core.time_limit import MatchLimit
from clock_service.core.transitions import (
    ALLOWED,
    CLOCK,
    FRAME_ENDS,
    PHASES,
    ClockPhase,
    allowed,
    refusal,
)

__all__ = ["TableClock", "PHASES", "ALLOWED", "ClockPhase", "round_of_visit", "UNDO_DEPTH"]

READY, RUNNING, PAUSED, EXPIRED, FRAME_OVER = PHASES

_T = TypeVar("_T")


class _Shown(TypedDict):
    """The shot clock as every clock event shows it: the player at the table, the time
    left, and the deadline while the clock keeps running."""

    player: int
    remaining_ms: int | None
    deadline: float | None


def _fact(path: str) -> Any:
    """A fact one of the clock's parts owns, under the name the runtime, the stored
    snapshots and the tests know it by: ``_fact("countdown.remaining")`` makes
    ``clock.remaining`` read and write ``clock.countdown.remaining`` (read in C:
    ``state()`` and every snapshot read several of these)."""
    part, name = path.split(".")

    def write(clock: TableClock, value: Any) -> None:
        setattr(getattr(clock, part), name, value)

    return property(attrgetter(path), write)


def round_of_visit(visit: int) -> int:
    """Round r holds visits 2r-1 and 2r (SPEC: round = ceil(visit / 2))."""
    return (visit + 1) // 2


class TableClock:
    """Clock and foul state of one table's match; see the module docstring."""

    def __init__(
        self,
        players: Sequence[str],
        *,
        timer: bool = True,
        profile: Profile | None = None,
        first_breaker: int = 0,
        race_to: int | None = None,
        match_limit_ms: int | None = None,
        at_match_limit: str = "leader_wins",
    ) -> None:
        names = [str(p).strip() if isinstance(p, str) else p for p in players]
        if len(names) != 2 or not all(isinstance(p, str) and 0 < len(p) <= 60 for p in names):
            raise InvalidInput(
                f"players must be two names of 1..60 characters, got {list(players)!r}",
                code="invalid_players",
            )
        if first_breaker not in (0, 1):
            raise InvalidInput(f"first_breaker must be 0 or 1, got {first_breaker!r}")
        self.players: tuple[str, str] = (names[0], names[1])
        self.timer = bool(timer)
        self.profile = profile or Profile()
        self.first_breaker = first_breaker
        try:
            # The frame rules and the score: race_to None is an open-ended match.
            self.match = Match(race_to, first_breaker)
        except RulesError as exc:
            raise InvalidInput(str(exc), code="invalid_race_to") from exc
        # The match's time limit and the organiser's choice at it (match_clock.AT_LIMIT).
        self.time_limit = MatchLimit(match_limit_ms, at_match_limit)
        # 1 for the table's first match; new_match counts on (the match's id is
        # "<table>.<number>", GET /api/matches/{id}).
        self.match_number = 1
        self.frame = 0
        self.breaker = first_breaker
        self.visit = 1
        self.player = first_breaker
        # The phase, moved only by the table (transitions.CLOCK): frame_over until open()
        # starts frame 1.
        self._phase = Current(CLOCK, FRAME_OVER)
        self.countdown = Countdown()
        self.extensions_used = [0, 0]
        # Shots played this frame (``shot`` presses; the break's result counts when its
        # clock was not timed): the one after the first is the shot after the break.
        self.frame_shots = 0
        # Slow play (shot_clock_on): None, or "frame"/"match", the rest of which it lasts.
        self.slow_play: str | None = None
        self.slow_play_reason: str | None = None
        # The instant of the last step (a command, an expiry, a restart): a press time given
        # with a command is never placed before it (see ``press_instant``).
        self.last_step_at: float | None = None
        # True from ``shot`` until the next result, start or change of turn: the shot was
        # played and its result is still to come, so a ``call`` now would be after it (7.1).
        self.shot_played = False
        self.corrections = Corrections()

    # -- the parts' facts, by the names the runtime, the store and the tests use -------------
    remaining: int | None = _fact("countdown.remaining")  # shown while it does not count
    deadline: float | None = _fact("countdown.deadline")  # the shot runs out, while counting
    pending_warnings: list[int] = _fact("countdown.pending_warnings")
    history: list[Entry] = _fact("corrections.entries")  # (step, at, state as JSON)
    match_clock: MatchClock | None = _fact("time_limit.clock")
    match_limit_ms: int | None = _fact("time_limit.limit_ms")
    at_match_limit: str = _fact("time_limit.at_limit")
    # After the limit: the choice still to apply when the frame in play ends.
    limit_pending: str | None = _fact("time_limit.pending")

    phase: ClockPhase = property(attrgetter("_phase.state"))  # type: ignore[assignment]

    # -- derived -----------------------------------------------------------------------
    @property
    def round(self) -> int:
        return round_of_visit(self.visit)

    # Facts owned by the rules (I12, 10.4, 3.2, 10.5), read from them.
    @property
    def fouls(self) -> list[int]:
        return list(self.match.frame.fouls)

    @property
    def whites(self) -> list[int]:
        return list(self.match.frame.credited)

    @property
    def hand_back_to(self) -> int | None:
        """The fouler, while the opponent's 10.4 choice is open."""
        chooser = self.match.frame.choice_for
        return None if chooser is None else 1 - chooser

    @property
    def frame_winner(self) -> int | None:
        return self.match.frame.winner

    @property
    def frame_end_reason(self) -> str | None:
        reason = self.match.frame.end_reason
        return None if reason is None else reason.value

    @property
    def frames_won(self) -> list[int]:
        return list(self.match.score)

    @property
    def deciding_frame(self) -> bool:
        """The frame in play decides the match: both players one frame from the race."""
        if self.time_limit.deciding:  # the time limit's deciding frame
            return True
        race = self.match.race_to
        return race is not None and self.match.score == (race - 1, race - 1)

    def extensions_allowed(self) -> int:
        """Extensions per player in this frame (12.5; the profile's deciding-frame number)."""
        return self.profile.extensions(self.deciding_frame)

    @property
    def timed(self) -> bool:
        """The shot clock counts: the match is timed (12.1), or the referee switched the
        clock on for slow play (``shot_clock_on``)."""
        return self.timer or self.slow_play is not None

    def shot_limit(self) -> int | None:
        if not self.timed:
            return None
        if self.slow_play is not None:  # one flat limit, no reduction by round
            return self.profile.slow_play_ms
        if self.frame_shots == 1 and self.profile.after_break_ms is not None:
            # The first shot after the break (WPA §20: up to 60 s).
            return self.profile.after_break_ms
        return self.profile.shot_limit(self.round)

    def remaining_ms(self, now: float) -> int | None:
        if not self.timed:
            return None
        if self.phase is RUNNING:
            return self.countdown.left(now)
        return self.countdown.remaining

    def next_wakeup(self) -> float | None:
        """The next instant at which ``advance`` has something to do: a warning or expiry
        of the shot clock or of the match clock."""
        shot = self.countdown.wakeup() if self.phase is RUNNING else None
        match = self.time_limit.wakeup()
        if shot is None or match is None:
            return shot if match is None else match
        return min(shot, match)

    def state(self, now: float) -> dict[str, Any]:
        return table_state(self, now)

    def allowed(self, now: float) -> list[str]:
        """The commands legal at ``now``, sorted: those ``refusal`` has nothing against."""
        return allowed(self, now)

    def refusal(self, name: str, now: float) -> RuleRefusal | None:
        """Why ``name`` would be refused at ``now`` whatever its fields, or None.

        The one legality check: ``handle`` raises it, ``allowed`` lists what passes it.
        Due deadlines are the caller's business (``handle`` advances first).
        """
        return refusal(self, name, now)

    # -- entry points --------------------------------------------------------------------
    def open(self, now: float) -> list[Event]:
        """Start frame 1 of the match (table creation)."""
        if self.frame != 0:
            raise RuntimeError("open() is for a new table only")
        self.last_step_at = now
        events = self._start_frame(now)
        self._phase.apply("new_frame")  # frame_over -> ready, as a new frame
        return events

    def advance(self, now: float) -> list[Event]:
        """Emit what is due at ``now``: the shot clock's warnings at the profile's
        thresholds, then its expiry; then the match clock's warnings and its limit."""
        return self._advance_shot(now) + self._advance_match(now)

    def _advance_match(self, now: float) -> list[Event]:
        if self.time_limit.clock is None:
            return []
        events, reached = self.time_limit.advance(now)
        if reached:
            events += self._limit_reached(now)
        return events

    def _advance_shot(self, now: float) -> list[Event]:
        deadline = self.deadline
        if self.phase is not RUNNING or deadline is None:
            return []
        if now >= deadline:
            return self._expire(now)
        threshold = self.countdown.due(now)
        if threshold is None:
            return []
        self._phase.apply("warning")
        return [CLOCK_WARNING({
            "threshold_ms": threshold,
            "remaining_ms": ceil_ms(deadline - now),
            "deadline": deadline,
            "player": self.player,
        })]

    def handle(self, command: Command, now: float) -> list[Event]:
        """Apply a referee command at ``now``; return its events.

        Due deadlines are applied first, so a press that arrives at or after the deadline
        is too late (I17, tie rule: the expiry wins at ``now >= deadline``). If the command
        is then refused, ``RuleRefusal.events`` carries what happened anyway (the expiry)
        and nothing else has changed.

        A command that carries its press time (``at``, TEAM convention 1) is refused when
        that press is stale (409 ``stale_press``) or from the future (422), and a timed step
        (start, shot, pause, resume) happens at ``press_instant``: the table's press, not
        the network's delay, decides how much time was used.
        """
        pressed = command.at is not None
        if pressed:
            check_press_time(command, now)
        events = self.advance(now)
        try:
            if pressed:
                check_press_time(command, now, fresh=True)
            refused = self.refusal(command.name, now)
            if refused is not None:
                raise refused
            at = self.press_instant(command, now)
            before = self._dump()
            try:
                made = self._handlers[command.name](self, command, at)
            except Exception:
                self._load(before)
                raise
        except RuleRefusal as refused:
            refused.events = events
            raise
        events += [e.caused_by(command) for e in made]
        if command.undoable:
            self.corrections.remember(command.name, at, before)
        self.last_step_at = at
        events += self.advance(now)  # e.g. resume or set_time with nothing left
        return events

    def press_instant(self, command: Command, now: float) -> float:
        """When a command takes effect (``commands.press_instant``)."""
        return press_instant(command, now, self.last_step_at)

    def recover(self, alive_at: float, now: float, *, power_lost: bool = False) -> list[Event]:
        """After a restart: a running clock comes back paused with the time it had when the
        service was last known alive, so downtime never causes a time foul (12.4). If the
        deadline had already passed while the service was alive, the expiry stands.

        ``power_lost`` (I19): the machine lost power, so the proof of life in memory is
        gone and ``alive_at`` is the table's last durable event. The clock comes back
        paused at that moment (reason ``power_lost``: the referee checks the time). The
        shot's warnings are stored without an fsync of their own (README "Durability"):
        one that was sent may have been lost with the power, and its seq must never be
        given to another event. So the warnings this snapshot still had ahead are derived
        again first, with the seqs they had or would have had (each is a function of the
        snapshot: threshold, deadline, player), then the pause. Never the expiry: it is
        synced before it is sent, so one that was sent is in the store. (A resume sets
        the warnings ahead of the time left again.)"""
        deadline = self.deadline
        if self.phase is not RUNNING or deadline is None:
            return []
        left = deadline - alive_at
        if left <= 0:
            return self.advance(max(now, deadline))
        events: list[Event] = []
        if power_lost:
            events = [CLOCK_WARNING({
                "threshold_ms": w, "remaining_ms": w, "deadline": deadline,
                "player": self.player}) for w in self.pending_warnings]
        self.last_step_at = now
        self._phase.apply("restart")
        # ``alive_at`` may be a stored event's time, rounded down below the moment the
        # deadline was set: never give back more than the shot had then.
        had = self.remaining if self.remaining is not None else ceil_ms(left)
        self.countdown.freeze(min(ceil_ms(left), had))
        reason: PauseReason = "power_lost" if power_lost else "restart"
        return [*events, CLOCK_PAUSED({"reason": reason, **self._shown(now)})]

    # -- the commands ----------------------------------------------------------------------
    def _rules(self, name: str, action: Callable[[], _T]) -> _T:
        """Run a rules command; its refusals become the service's (409 / 422)."""
        try:
            return action()
        except RulesRefusal as exc:
            raise RuleRefusal(f"{name} refused in phase {self.phase}: {exc}",
                              code=exc.code, rule=exc.rule) from exc
        except InvalidResult as exc:  # fields named as in the command ("legal_break")
            message = str(exc).replace("shot_result.", "")
            raise InvalidCommand(f"{name}: {message}", code=exc.code) from exc

    def _accept_if_choice_open(self, name: str) -> None:
        """Playing on accepts the position (10.4, D15): start, turn and result imply it."""
        if self.match.frame.choice_for is not None:
            self._rules(name, self.match.accept)

    def _frame_ends(self) -> str | None:
        """The outcome a command names when the rules ended the frame (3.2, 10.5-10.6) or
        the referee's award ended the match: its move leads to frame_over instead."""
        return FRAME_ENDS if self.match.frame.over else None

    def _on_start(self, command: Start, now: float) -> list[Event]:
        if self.phase is EXPIRED:  # the opponent accepts the position (10.4)
            self.remaining = self.shot_limit()
        self._accept_if_choice_open("start")
        self._phase.apply("start")
        self.shot_played = False
        return [CLOCK_STARTED({"limit_ms": self._run(now), **self._shown(now)}),
                *self.time_limit.step("start", now)]

    def _on_shot(self, command: Shot, now: float) -> list[Event]:
        event = CLOCK_STOPPED({"reason": "shot", **self._shown(now, stopping=True)})
        self.frame_shots += 1
        self._make_ready(self.shot_limit())
        self.shot_played = True
        self._phase.apply("shot")
        return [event]

    def _on_call(self, command: AnnounceCall, now: float) -> list[Event]:
        """The strict call announced before the shot (7.1); ``result`` is judged against it."""
        replaced = self._rules("call", lambda: self.match.announce(command.call))
        self._phase.apply("call")
        return [CALL_ANNOUNCED({
            "call": command.call.to_dict(),
            "replaced": None if replaced is None else replaced.to_dict(),
            "frame": self.frame, "visit": self.visit, "phase": self.phase,
            **self._shown(now),
        })]

    def _on_extension(self, command: Extension, now: float) -> list[Event]:
        player = self.player
        if command.player is not None and command.player != player:
            raise RuleRefusal(
                f"extension refused in phase {self.phase}: {self.players[command.player]} asked "
                f"for it, but {self.players[player]} is at the table (12.5)",
                code="not_at_table", rule="12.5")
        left = self.remaining_ms(now) or 0
        self._phase.apply("extension")
        self.extensions_used[player] += 1
        extra = self.profile.extension_ms
        if self.phase is RUNNING:
            assert self.deadline is not None
            self._count_to(self.deadline + extra, now)
        else:
            self.remaining = left + extra  # I16: ready or paused, it adds to this shot
        return [CLOCK_EXTENDED({"player": player, "extension_ms": extra,
                                "remaining_ms": self.remaining_ms(now),
                                "deadline": self.deadline if self.phase is RUNNING else None})]

    def _on_pause(self, command: Pause, now: float) -> list[Event]:
        self.countdown.freeze(self.remaining_ms(now))
        self._phase.apply("pause")
        # The referee's pause is the only one that stops the match clock too.
        return [CLOCK_PAUSED({"reason": "referee", **self._shown(now)}),
                *self.time_limit.step("pause", now)]

    def _on_resume(self, command: Resume, now: float) -> list[Event]:
        self._phase.apply("resume")
        return [CLOCK_RESUMED({"limit_ms": self._run(now), **self._shown(now)}),
                *self.time_limit.step("resume", now)]

    def _on_turn(self, command: Turn, now: float) -> list[Event]:
        events = self._stop_if_counting(now, "turn")
        self._accept_if_choice_open("turn")
        outcome = self._rules("turn", self.match.pass_turn)  # no result reported: I1
        assert outcome.next_player is not None
        events += self._pass_turn(outcome.next_player, "turn", now)
        self._phase.apply("turn")
        return events

    def _on_foul(self, command: Foul, now: float) -> list[Event]:
        """A foul the referee saw outside a shot's result (9, D10), or one given by its rule."""
        events = self._stop_if_counting(now, "foul")
        general = command.general
        fouler = command.player
        if fouler is None:  # out of turn: the one who played is not the player at the table
            out_of_turn = general is not None and general.code is FoulCode.OUT_OF_TURN
            fouler = 1 - self.player if out_of_turn else self.player
        who = fouler
        if general is None:
            assert command.rule is not None and command.reason is not None
            rule, reason = command.rule, command.reason
            record = lambda: self.match.record_foul(who, rule, reason)  # noqa: E731
        else:
            record = lambda: self.match.referee_foul(who, general)  # noqa: E731
        events += self._add_foul(record, "foul", now)
        self._phase.apply("foul", self._frame_ends())
        return events

    def _on_hand_back(self, command: HandBack, now: float) -> list[Event]:
        outcome = self._rules("hand_back", self.match.hand_back)
        assert outcome.next_player is not None
        events = self._pass_turn(outcome.next_player, "hand_back", now)
        self._phase.apply("hand_back")
        return events

    def _on_new_frame(self, command: NewFrame, now: float) -> list[Event]:
        events = self._stop_if_counting(now, "new_frame")
        if self.phase is not FRAME_OVER:
            self._rules("new_frame", lambda: self.match.end_frame_by_referee(
                command.winner, command.reason))  # D9: outside the rules, with a reason
            events += self._frame_ended(now, referee_reason=command.reason)
        if not self.match.over:  # unless the referee's award decided the match
            events += self._start_frame(now)
        self._phase.apply("new_frame", self._frame_ends())
        return events

    def _on_new_match(self, command: NewMatch, now: float) -> list[Event]:
        """The next match on this table, from frame 1 (I3: its first breaker breaks).

        Everything was checked before anything changes (the command validated its fields;
        ``Match`` here cannot refuse them). The undo history is dropped: a correction never
        reaches back into the previous match, which is now a closed record.
        """
        def kept(value: Any, current: Any) -> Any:
            return current if value is SAME else value

        unfinished = (not self.match.over and not self._nothing_played()
                      and (self.match.race_to is not None or self.phase is not FRAME_OVER))
        if unfinished and command.reason is None:  # as D9 for a frame
            raise InvalidCommand(
                "new_match: reason is missing: the match in play is not finished (no winner "
                "yet, or a frame in progress); leaving it is the referee's decision: give "
                "the reason", code="missing_reason")

        race_to = kept(command.race_to, self.match.race_to)
        first_breaker = kept(command.first_breaker, self.first_breaker)
        match = Match(race_to, first_breaker)
        self.players = kept(command.players, self.players)
        self.timer = kept(command.timer, self.timer)
        self.profile = command.built_profile or self.profile
        self.first_breaker = first_breaker
        self.match = match
        self.time_limit = MatchLimit(kept(command.match_limit_ms, self.match_limit_ms),
                                     kept(command.at_match_limit, self.at_match_limit))
        self.slow_play = None  # slow play was that match's
        self.slow_play_reason = None
        self.match_number += 1
        self.frame = 0
        self.corrections = Corrections()
        data: MatchStartedData = {
            "number": self.match_number, "players": list(self.players), "timer": self.timer,
            "profile": self.profile.to_dict(), "first_breaker": first_breaker,
            "race_to": race_to,
        }
        if self.match_limit_ms is not None:  # the match clock, when this match has one
            data["match_limit_ms"] = self.match_limit_ms
            data["at_match_limit"] = self.at_match_limit
        if command.event is not None:
            data["event"] = command.event
        if command.referee is not None:
            data["referee"] = command.referee
        if unfinished and command.reason is not None:
            data["reason"] = command.reason
        events = [MATCH_STARTED(data), *self._start_frame(now)]
        self._phase.apply("new_match")
        return events

    def _nothing_played(self) -> bool:
        """The match in play has not begun: frame 1 before its break, the clock never run,
        no shot, foul, extension or correction standing. Replacing it leaves nothing
        unfinished (a table made before its first match is known, then started from the
        draw: no reason to give, issue 36)."""
        return (self.frame == 1 and self.phase is READY and self.frame_shots == 0
                and not self.match.frame.break_done and not any(self.frames_won)
                and not any(self.fouls) and not any(self.extensions_used)
                and (self.match_clock is None or self.match_clock.phase == "waiting")
                and self.corrections.last_step is None)

    def _on_result(self, command: Result, now: float) -> list[Event]:
        """Apply the referee's report of the shot just played (sections 3-11)."""
        report = command.shot_result  # on the break legal_break is required (4.2, D11)
        self._accept_if_choice_open("result")
        started: list[Event] = []
        if not self.match.frame.break_done:  # the break's result without its clock timed
            self.frame_shots = max(self.frame_shots, 1)
            started = self.time_limit.step("start", now)
        shooter = self.player
        outcome = self._rules("result", lambda: self.match.shot(report))
        events = [SHOT_RESULT({
            "player": shooter, "frame": self.frame, "visit": self.visit,
            "report": report.to_dict(), "outcome": outcome.to_dict(),
            "whites": self.whites, "fouls": self.fouls,
        })]
        events += foul_events(outcome, self.fouls) + respot_events(outcome)
        if outcome.frame_over:
            events += self._frame_ended(now)
        elif outcome.turn is TurnOutcome.PASSES:
            assert outcome.next_player is not None
            reason: TurnReason = "foul" if outcome.fouls else "result"
            events += self._pass_turn(outcome.next_player, reason, now)
        else:  # I1, 4.6: the same visit goes on with the same limit
            self._make_ready(self.shot_limit())
        self._phase.apply("result", self._frame_ends())
        return events + started  # last: the rules' own sequence stays as it was

    def _on_undo(self, command: Undo, now: float) -> list[Event]:
        step, at, data = self.corrections.take_back()
        self._load(data, phase=False)
        self._phase.apply("undo", back=ClockPhase(data["phase"]))
        self._keep_the_limit()
        if self.phase is RUNNING and self.deadline is not None:
            # Back as it was at that step, but frozen: the referee resumes when ready.
            self.countdown.freeze(ceil_ms(self.deadline - at))
            self._phase.apply("undone")
        return [CORRECTION_UNDONE({
            "undone": step, "by": command.by, "reason": command.reason,
            "remaining_ms": self.remaining_ms(now),
        })]

    def _on_set_time(self, command: SetTime, now: float) -> list[Event]:
        self._phase.apply("set_time")
        if self.phase is RUNNING:
            self._count_to(now + command.remaining_ms, now)
        else:
            self.remaining = command.remaining_ms
        return [CLOCK_CORRECTED({"by": command.by, "reason": command.reason,
                                 **self._shown(now)})]

    def _on_shot_clock_on(self, command: ShotClockOn, now: float) -> list[Event]:
        """Slow play: the referee switches the clock on, with the profile's flat
        ``slow_play_ms``, for the rest of the frame or of the match (12.1)."""
        if self.slow_play == command.scope:
            raise RuleRefusal(
                f"shot_clock_on refused in phase {self.phase}: the shot clock is already on "
                f"for the rest of the {command.scope} (slow play)", code="shot_clock_already_on")
        if self.phase is FRAME_OVER and command.scope == "frame":
            raise RuleRefusal(
                "shot_clock_on refused in phase frame_over: the frame is over; switch it on "
                "for the match, or once the next frame has started", code="frame_over")
        self._phase.apply("shot_clock_on")
        scope: SlowPlayScope = "frame" if command.scope == "frame" else "match"  # checked
        return [self._slow_play_on(scope, command.reason, now)]

    _handlers: dict[str, Callable[[TableClock, Any, float], list[Event]]] = {
        "shot_clock_on": _on_shot_clock_on,
        "start": _on_start,
        "shot": _on_shot,
        "extension": _on_extension,
        "pause": _on_pause,
        "resume": _on_resume,
        "turn": _on_turn,
        "foul": _on_foul,
        "hand_back": _on_hand_back,
        "new_frame": _on_new_frame,
        "undo": _on_undo,
        "set_time": _on_set_time,
        "result": _on_result,
        "call": _on_call,
        "new_match": _on_new_match,
    }

    # -- the match's time limit (the organiser's choice, 12.1) ------------------------------
    def _limit_reached(self, now: float) -> list[Event]:
        """The match clock reached the limit: the organiser's choice (match_clock.AT_LIMIT)
        switches the shot clock on now, or waits for the frame in play to end."""
        if self.match.over:
            return []
        self._phase.apply("time_limit")
        if self.time_limit.reach():
            return [self._slow_play_on("match", "match time limit", now),
                    self._applied("shot_clock_on", None)]
        if self.phase is FRAME_OVER:  # between frames: no frame in play to finish
            return self._apply_limit(now, frame_just_ended=False)
        return []

    def _keep_the_limit(self) -> None:
        """Undo never reaches the match clock: a limit reached stays reached, and a step
        taken back from before it comes back under the organiser's choice."""
        if self.match.over:
            return
        if (self.time_limit.reached and self.at_match_limit == "shot_clock"
                and self.slow_play != "match"):
            self.slow_play, self.slow_play_reason = "match", "match time limit"
        self.time_limit.keep_after_undo()

    def _applied(self, decision: Decision, winner: int | None) -> Event:
        return self.time_limit.applied(decision, winner, self.match.score, self.frame)

    def _apply_limit(self, now: float, *, frame_just_ended: bool) -> list[Event]:
        """After the limit, at the end of the frame in play (or at once between frames)."""
        if self.match.over:
            self.limit_pending = None
            return []
        verdict = self.time_limit.verdict(
            self.match.score, self.match.frame.winner if frame_just_ended else None)
        if verdict is None:
            return []
        if not verdict.ends_match:
            return [self._applied(verdict.decision, None)]
        self._rules("match_limit", lambda: self.match.decide(verdict.winner))
        self.time_limit.stop(now)
        return [self._applied(verdict.decision, verdict.winner),
                match_ended(self.match, self.frame)]

    # -- building blocks -------------------------------------------------------------------
    def _run(self, now: float) -> int | None:
        """Turn the shown remaining time into a deadline (start, resume); the shot's limit."""
        if self.timed:
            self._count_to(now + (self.remaining or 0), now)
        return self.shot_limit()

    def _count_to(self, deadline: float, now: float) -> None:
        self.countdown.count_to(deadline, now, self.profile.warnings_ms)

    def _make_ready(self, remaining: int | None) -> None:
        """The next shot's time shown, not counting (the command's move makes it ready)."""
        self.shot_played = False
        self.countdown.show(remaining if self.timed else None)

    def _slow_play_on(self, scope: SlowPlayScope, reason: str, now: float) -> Event:
        """Slow play from now (``shot_clock_on``, or the match's limit), for the rest of
        the frame or the match: the profile's flat limit per shot. Unless the clock
        already counted, a shot being played gets the full limit from now; a ready or
        paused one shows it."""
        counted = self.timed
        self.slow_play = scope
        self.slow_play_reason = reason
        limit = self.profile.slow_play_ms
        if not counted:
            if self.phase is RUNNING:
                self._count_to(now + limit, now)
            elif self.phase in (READY, PAUSED):
                self.remaining = limit
        return SHOT_CLOCK_ON({"reason": reason, "scope": scope, "limit_ms": limit,
                              "frame": self.frame, **self._shown(now)})

    def _stop_if_counting(self, now: float, reason: StopReason) -> list[Event]:
        if self.phase not in (RUNNING, PAUSED):
            return []
        event = CLOCK_STOPPED({"reason": reason, **self._shown(now, stopping=True)})
        self._make_ready(self.remaining_ms(now))
        return [event]

    def _pass_turn(self, to: int, reason: TurnReason, now: float) -> list[Event]:
        """A new visit begins whenever the right to shoot passes (turn, foul, hand-back)."""
        self.visit += 1
        self.player = to
        self._make_ready(self.shot_limit())
        return [TURN({
            "player": to, "visit": self.visit, "round": self.round,
            "limit_ms": self.shot_limit(), "reason": reason,
        })]

    def _add_foul(self, record: Callable[[], Outcome], turn_reason: TurnReason,
                  now: float) -> list[Event]:
        """Fouls count per player per frame whatever their cause, in the rules (I12); the
        second one is a technical loss (10.5-10.6) that needs no 10.4 choice (I13)."""
        outcome = self._rules("foul", record)
        events = foul_events(outcome, self.fouls) + respot_events(outcome)
        if outcome.frame_over:
            return events + self._frame_ended(now)
        # The opponent now chooses (10.4); the turn passes if the fouler was at the table.
        if outcome.turn is TurnOutcome.PASSES:
            assert outcome.next_player is not None
            events += self._pass_turn(outcome.next_player, turn_reason, now)
        return events

    def _expire(self, now: float) -> list[Event]:
        before = self._dump()
        fouler = self.player
        deadline = self.deadline
        assert deadline is not None  # only a running clock expires
        self.last_step_at = deadline
        self.countdown.show(0)
        events = [CLOCK_EXPIRED({
            "player": fouler, "deadline": deadline, "remaining_ms": 0,
            "late_ms": round(now - deadline, 3),
        })]
        events += self._add_foul(
            lambda: self.match.record_foul(fouler, "12.4", "time", FoulCode.SHOT_TIME),
            "time_foul", now)
        if self._phase.apply("expiry", self._frame_ends()) is EXPIRED:
            self.remaining = 0  # the foul passed the turn: show 0 until someone acts
        self.corrections.remember("expiry", now, before)
        return events

    def _frame_ended(self, now: float, referee_reason: str | None = None) -> list[Event]:
        """The rules ended the frame (3.2, 10.5-10.6), or the referee did (D9): stop here.

        The fouls shown from here on are the frame's final count; the next frame starts
        from zero (10.5, D8). The command's move makes the phase frame_over."""
        self.countdown.show(None)
        events = [frame_ended(self.match, self.frame, referee_reason)]
        if self.slow_play == "frame":  # switched on for the rest of the frame only
            self.slow_play = None
            self.slow_play_reason = None
            events.append(SHOT_CLOCK_OFF({"frame": self.frame, "reason": "frame_ended"}))
        if self.match.over:
            events.append(match_ended(self.match, self.frame))
            self.time_limit.stop(now)
        elif self.limit_pending is not None:  # the time limit's choice, at this frame's end
            events += self._apply_limit(now, frame_just_ended=True)
        return events

    def _start_frame(self, now: float) -> list[Event]:
        self.frame += 1
        if self.frame > 1:  # fresh frame rules: fouls and credits from zero (10.5)
            self._rules("new_frame", self.match.start_next_frame)
        # Breaks alternate by frame (I3).
        self.breaker = self.match.frame.breaker
        self.player = self.breaker
        self.visit = 1  # the break opens visit 1
        self.extensions_used = [0, 0]  # 12.5: once per frame
        self.frame_shots = 0
        self._make_ready(self.shot_limit())
        return [FRAME_STARTED({
            "frame": self.frame, "breaker": self.breaker, "player": self.player,
            "visit": self.visit, "round": self.round, "limit_ms": self.shot_limit(),
        })]

    def _shown(self, now: float, *, stopping: bool = False) -> _Shown:
        """What a clock event shows of the shot clock, after its fields (events.py)."""
        return {
            "player": self.player,
            "remaining_ms": self.remaining_ms(now),
            # A deadline only while the clock keeps running (not on the stop itself).
            "deadline": self.deadline if self.phase is RUNNING and not stopping else None,
        }

    # -- persistence (the stored form: ``stored``) ---------------------------------------------
    def _dump(self) -> dict[str, Any]:
        data = {name: copy.copy(getattr(self, name)) for name in stored.FIELDS}
        data["match"] = self.match.to_dict()
        return data

    def _load(self, data: Mapping[str, Any], *, phase: bool = True) -> None:
        """Put back a dumped state; ``phase=False``: all but the phase (undo moves it)."""
        for name in stored.FIELDS:
            if name == "phase":
                if phase:
                    self._phase.restore(data[name])
                continue
            setattr(self, name, copy.copy(data.get(name, stored.DEFAULTS.get(name))
                                          if name in stored.DEFAULTS else data[name]))
        match = data.get("match")
        self.match = Match.from_dict(match if match is not None
                                     else stored.legacy_match(data, self.first_breaker))

    def to_dict(self, *, history: bool = True) -> dict[str, Any]:
        """The clock as data; ``history=False`` without the undo history (the store keeps
        its entries as rows of their own, one written per undoable step)."""
        data = {
            "players": list(self.players),
            "timer": self.timer,
            "profile": self.profile.to_dict(),
            "first_breaker": self.first_breaker,
            "match_number": self.match_number,
            "match_limit_ms": self.match_limit_ms,
            "at_match_limit": self.at_match_limit,
            # Not in the undo dump: undo never reaches the match clock (its deadline stays).
            "match_clock": None if self.match_clock is None else self.match_clock.to_dict(),
            **self._dump(),
        }
        if history:
            data["history"] = self.corrections.to_list()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableClock:
        clock = cls(data["players"], timer=data["timer"],
                    profile=Profile.from_partial(data["profile"]),
                    first_breaker=data["first_breaker"],
                    race_to=(data.get("match") or {}).get("race_to"),
                    match_limit_ms=data.get("match_limit_ms"),
                    at_match_limit=data.get("at_match_limit", "leader_wins"))
        clock._load(data)
        if data.get("match_clock") is not None:
            clock.match_clock = MatchClock.from_dict(data["match_clock"])
        clock.match_number = int(data.get("match_number", 1))  # stored before new_match: 1
        clock.corrections = Corrections.from_stored(data.get("history", []))
        return clock
