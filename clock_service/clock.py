"""The shot clock of one table: commands and the time go in, events come out. No I/O.

Time is a float of milliseconds on one monotonic timeline given by the caller (the
runtime aligns it with unix ms at start, so deadlines read as unix ms). The clock keeps a
deadline while it runs and derives every remaining time from it; nothing is counted.
The caller asks ``next_wakeup()`` when it must call ``advance(now)`` again.

Which command is legal in which phase is the table just below; everything the rules add
on top (12.5 once per frame, 12.7 before time runs out, 10.4 only after a foul) is checked
in the command's handler, and every refusal names the command, the phase and the rule.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import Any

from clock_service.commands import (
    Command,
    Extension,
    Foul,
    HandBack,
    NewFrame,
    Pause,
    Resume,
    SetTime,
    Shot,
    Start,
    Turn,
    Undo,
)
from clock_service.errors import InvalidInput, RuleRefusal
from clock_service.events import Event
from clock_service.profile import Profile

__all__ = ["TableClock", "PHASES", "ALLOWED", "round_of_visit"]

PHASES = ("ready", "running", "paused", "expired", "frame_over")

# ---------------------------------------------------------------------------------------
# The transition table. command -> the phases in which it may be given.
#   ready      the next shot's limit is shown, not counting (balls moving, re-spots 11.4)
#   running    counting down (I15: from balls at rest to cue tip on the cue ball)
#   paused     referee stoppage, remaining time frozen
#   expired    time ran out (12.4): time foul taken, turn passed; waiting for the
#              opponent to accept (start) or hand back (10.4)
#   frame_over technical loss (10.5) or the referee ended the frame; only a new frame
ALLOWED: dict[str, frozenset[str]] = {
    "start": frozenset({"ready", "expired"}),
    "shot": frozenset({"running", "paused"}),
    "extension": frozenset({"ready", "running", "paused"}),
    "pause": frozenset({"running"}),
    "resume": frozenset({"paused"}),
    "turn": frozenset({"ready", "running", "paused"}),
    "foul": frozenset({"ready", "running", "paused", "expired"}),
    "hand_back": frozenset({"ready", "expired"}),
    "new_frame": frozenset(PHASES),
    "undo": frozenset(PHASES),
    "set_time": frozenset({"ready", "running", "paused"}),
}

# Why a command is refused in a phase, where the generic message would not say enough:
# (command, phase) -> (code, message, rule).
REFUSALS: dict[tuple[str, str], tuple[str, str, str | None]] = {
    ("start", "running"): ("already_running", "the clock is already running", None),
    ("start", "paused"): ("paused", "the clock is paused: resume it instead", None),
    ("shot", "ready"): (
        "not_running", "the clock was not started for this shot: start it first", "I15"),
    ("shot", "expired"): (
        "too_late", "the shot time has already run out; the expiry stands", "I17"),
    ("extension", "expired"): (
        "extension_too_late", "an extension must be asked before the main time runs out", "12.7"),
    ("pause", "ready"): ("not_running", "the clock is not running", None),
    ("pause", "paused"): ("already_paused", "the clock is already paused", None),
    ("resume", "ready"): ("not_paused", "the clock is not paused: start it instead", None),
    ("resume", "running"): ("not_paused", "the clock is already running", None),
    ("turn", "expired"): (
        "turn_already_passed",
        "the turn already passed on the time foul; start (accept) or hand back", "10.4"),
    ("hand_back", "running"): (
        "already_accepted", "the opponent already accepted by playing on", "10.4"),
    ("set_time", "expired"): (
        "expired", "time already ran out: undo the expiry first, then set the time", "I17"),
}

FRAME_OVER_REFUSAL = ("frame_over", "the frame is over: start a new frame", None)

UNDO_DEPTH = 50


def round_of_visit(visit: int) -> int:
    """Round r holds visits 2r-1 and 2r (SPEC: round = ceil(visit / 2))."""
    return (visit + 1) // 2


def _ceil_ms(value: float) -> int:
    return max(0, math.ceil(value - 1e-6))


class TableClock:
    """Clock and foul state of one table's match; see the module docstring."""

    def __init__(
        self,
        players: Sequence[str],
        *,
        timer: bool = True,
        profile: Profile | None = None,
        first_breaker: int = 0,
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
        self.frame = 0
        self.breaker = first_breaker
        self.visit = 1
        self.player = first_breaker
        self.phase = "frame_over"  # until open() starts frame 1
        self.remaining: int | None = None  # authoritative when not running
        self.deadline: float | None = None  # authoritative while running
        self.pending_warnings: list[int] = []
        self.extensions_used = [0, 0]
        self.fouls = [0, 0]
        self.hand_back_to: int | None = None  # the fouler, while the 10.4 choice is open
        self.frame_winner: int | None = None
        self.frame_end_reason: str | None = None
        self.frames_won = [0, 0]
        self.history: list[dict[str, Any]] = []  # the correction (undo) stack

    # -- derived -----------------------------------------------------------------------
    @property
    def round(self) -> int:
        return round_of_visit(self.visit)

    def shot_limit(self) -> int | None:
        return self.profile.shot_limit(self.round) if self.timer else None

    def remaining_ms(self, now: float) -> int | None:
        if not self.timer:
            return None
        if self.phase == "running" and self.deadline is not None:
            return _ceil_ms(self.deadline - now)
        return self.remaining

    def next_wakeup(self) -> float | None:
        """The next instant at which ``advance`` has something to do (warning or expiry)."""
        if self.phase != "running" or self.deadline is None:
            return None
        if self.pending_warnings:
            return self.deadline - self.pending_warnings[0]
        return self.deadline

    def state(self, now: float) -> dict[str, Any]:
        per = self.profile.extensions_per_frame
        return {
            "phase": self.phase,
            "remaining_ms": self.remaining_ms(now),
            "limit_ms": self.shot_limit(),
            "deadline": self.deadline if self.phase == "running" else None,
            "player": self.player,
            "players": list(self.players),
            "round": self.round,
            "visit": self.visit,
            "extensions_left": [max(0, per - used) for used in self.extensions_used],
            "fouls": list(self.fouls),
            "frame": self.frame,
            "breaker": self.breaker,
            "timer": self.timer,
            "hand_back_to": self.hand_back_to,
            "frame_winner": self.frame_winner,
            "frame_end_reason": self.frame_end_reason,
            "frames_won": list(self.frames_won),
            "can_undo": self.history[-1]["step"] if self.history else None,
            "profile": self.profile.to_dict(),
        }

    # -- entry points --------------------------------------------------------------------
    def open(self, now: float) -> list[Event]:
        """Start frame 1 of the match (table creation)."""
        if self.frame != 0:
            raise RuntimeError("open() is for a new table only")
        return self._start_frame(now)

    def advance(self, now: float) -> list[Event]:
        """Emit what is due at ``now``: warnings at the profile's thresholds, then expiry."""
        if self.phase != "running" or self.deadline is None:
            return []
        deadline = self.deadline
        if now >= deadline:
            return self._expire(now)
        due = [w for w in self.pending_warnings if now >= deadline - w]
        if not due:
            return []
        # Woken late past several thresholds (a stalled host): announce only the latest,
        # one beep rather than a burst of stale ones.
        self.pending_warnings = self.pending_warnings[len(due):]
        return [Event("clock.warning", {
            "threshold_ms": due[-1],
            "remaining_ms": _ceil_ms(deadline - now),
            "deadline": deadline,
            "player": self.player,
        })]

    def handle(self, command: Command, now: float) -> list[Event]:
        """Apply a referee command at ``now``; return its events.

        Due deadlines are applied first, so a press that arrives at or after the deadline
        is too late (I17, tie rule: the expiry wins at ``now >= deadline``). If the command
        is then refused, ``RuleRefusal.events`` carries what happened anyway (the expiry)
        and nothing else has changed.
        """
        events = self.advance(now)
        try:
            self._check_allowed(command.name)
            before = self._dump()
            try:
                events += self._handlers[command.name](self, command, now)
            except Exception:
                self._load(before)
                raise
        except RuleRefusal as refusal:
            refusal.events = events
            raise
        if command.undoable:
            self._remember(command.name, now, before)
        events += self.advance(now)  # e.g. resume or set_time with nothing left
        return events

    def recover(self, alive_at: float, now: float) -> list[Event]:
        """After a restart: a running clock comes back paused with the time it had when the
        service was last known alive, so downtime never causes a time foul (12.4). If the
        deadline had already passed while the service was alive, the expiry stands."""
        if self.phase != "running" or self.deadline is None:
            return []
        left = self.deadline - alive_at
        if left <= 0:
            return self.advance(max(now, self.deadline))
        self.phase = "paused"
        self.remaining = _ceil_ms(left)
        self.deadline = None
        return [Event("clock.paused", {"remaining_ms": self.remaining, "reason": "restart"})]

    # -- the rules on top of the table ------------------------------------------------------
    def _check_allowed(self, name: str) -> None:
        phase = self.phase
        if phase in ALLOWED[name]:
            return
        code, message, rule = REFUSALS.get(
            (name, phase),
            FRAME_OVER_REFUSAL if phase == "frame_over" else
            ("not_allowed", f"not allowed while the clock is {phase}", None),
        )
        self._refuse(name, code, message, rule)

    def _refuse(self, name: str, code: str, message: str, rule: str | None) -> None:
        suffix = f" ({rule})" if rule else ""
        raise RuleRefusal(f"{name} refused in phase {self.phase}: {message}{suffix}",
                          code=code, rule=rule)

    def _on_start(self, command: Start, now: float) -> list[Event]:
        if self.phase == "expired":  # the opponent accepts the position (10.4)
            self.remaining = self.shot_limit()
        self.hand_back_to = None
        self.phase = "running"
        return [self._clock_event("clock.started", now, self._run(now))]

    def _on_shot(self, command: Shot, now: float) -> list[Event]:
        event = self._clock_event("clock.stopped", now, {"reason": "shot"})
        self._make_ready(self.shot_limit())
        return [event]

    def _on_extension(self, command: Extension, now: float) -> list[Event]:
        if not self.timer:
            self._refuse("extension", "no_timer", "this match is played without a timer", "12.1")
        player = self.player
        if self.extensions_used[player] >= self.profile.extensions_per_frame:
            self._refuse("extension", "extension_used",
                         f"{self.players[player]} already used the extension this frame", "12.5")
        left = self.remaining_ms(now) or 0
        if left <= 0:
            self._refuse("extension", "extension_too_late", "the main time has run out", "12.7")
        self.extensions_used[player] += 1
        extra = self.profile.extension_ms
        if self.phase == "running":
            assert self.deadline is not None
            self._set_deadline(self.deadline + extra, now)
        else:
            self.remaining = left + extra  # I16: ready or paused, it adds to this shot
        return [self._clock_event("clock.extended", now,
                                  {"player": player, "extension_ms": extra})]

    def _on_pause(self, command: Pause, now: float) -> list[Event]:
        self.remaining = self.remaining_ms(now)
        self.deadline = None
        self.phase = "paused"
        return [self._clock_event("clock.paused", now, {"reason": "referee"})]

    def _on_resume(self, command: Resume, now: float) -> list[Event]:
        self.phase = "running"
        return [self._clock_event("clock.resumed", now, self._run(now))]

    def _on_turn(self, command: Turn, now: float) -> list[Event]:
        events = self._stop_if_counting(now, "turn")
        self.hand_back_to = None
        return events + self._pass_turn(1 - self.player, "turn", now)

    def _on_foul(self, command: Foul, now: float) -> list[Event]:
        events = self._stop_if_counting(now, "foul")
        fouler = self.player if command.player is None else command.player
        return events + self._add_foul(fouler, command.reason, command.rule or "10.1", now)

    def _on_hand_back(self, command: HandBack, now: float) -> list[Event]:
        if self.hand_back_to is None:
            self._refuse("hand_back", "no_foul_pending", "there is no foul to hand back", "10.4")
        to = self.hand_back_to
        assert to is not None
        self.hand_back_to = None
        return self._pass_turn(to, "hand_back", now)

    def _on_new_frame(self, command: NewFrame, now: float) -> list[Event]:
        events = self._stop_if_counting(now, "new_frame")
        if self.phase != "frame_over":
            events += self._end_frame(command.winner, "referee", now)
        return events + self._start_frame(now)

    def _on_undo(self, command: Undo, now: float) -> list[Event]:
        if not self.history:
            self._refuse("undo", "nothing_to_undo", "there is nothing to undo", None)
        entry = self.history.pop()
        self._load(entry["state"])
        if self.phase == "running" and self.deadline is not None:
            # Back as it was at that step, but frozen: the referee resumes when ready.
            self.remaining = _ceil_ms(self.deadline - entry["at"])
            self.deadline = None
            self.phase = "paused"
        return [Event("correction.undone", {
            "undone": entry["step"], "by": command.by, "reason": command.reason,
            "remaining_ms": self.remaining_ms(now),
        })]

    def _on_set_time(self, command: SetTime, now: float) -> list[Event]:
        if not self.timer:
            self._refuse("set_time", "no_timer", "this match is played without a timer", "12.1")
        if self.phase == "running":
            self._set_deadline(now + command.remaining_ms, now)
        else:
            self.remaining = command.remaining_ms
        return [self._clock_event("clock.corrected", now,
                                  {"by": command.by, "reason": command.reason})]

    _handlers: dict[str, Callable[[TableClock, Any, float], list[Event]]] = {
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
    }

    # -- building blocks -------------------------------------------------------------------
    def _run(self, now: float) -> dict[str, Any]:
        """Turn the shown remaining time into a deadline (start, resume)."""
        if self.timer:
            self._set_deadline(now + (self.remaining or 0), now)
        return {"limit_ms": self.shot_limit()}

    def _set_deadline(self, deadline: float, now: float) -> None:
        self.deadline = deadline
        left = deadline - now
        # Announce only the thresholds still ahead; after an extension the ones that are
        # ahead again are announced again.
        self.pending_warnings = [w for w in self.profile.warnings_ms if w < left]

    def _make_ready(self, remaining: int | None) -> None:
        self.phase = "ready"
        self.deadline = None
        self.pending_warnings = []
        self.remaining = remaining if self.timer else None

    def _stop_if_counting(self, now: float, reason: str) -> list[Event]:
        if self.phase not in ("running", "paused"):
            return []
        event = self._clock_event("clock.stopped", now, {"reason": reason})
        self._make_ready(self.remaining_ms(now))
        return [event]

    def _pass_turn(self, to: int, reason: str, now: float) -> list[Event]:
        """A new visit begins whenever the right to shoot passes (turn, foul, hand-back)."""
        self.visit += 1
        self.player = to
        self._make_ready(self.shot_limit())
        return [Event("turn", {
            "player": to, "visit": self.visit, "round": self.round,
            "limit_ms": self.shot_limit(), "reason": reason,
        })]

    def _add_foul(self, fouler: int, reason: str, rule: str, now: float) -> list[Event]:
        """Fouls count per player per frame whatever their cause (I12); the second one is
        a technical loss (10.5-10.6) that needs no 10.4 choice (I13)."""
        self.fouls[fouler] += 1
        technical_loss = self.fouls[fouler] >= 2
        events = [Event("foul", {
            "player": fouler, "reason": reason, "rule": rule,
            "fouls": list(self.fouls), "technical_loss": technical_loss,
        })]
        if technical_loss:
            return events + self._end_frame(1 - fouler, "technical_loss", now)
        self.hand_back_to = fouler  # the opponent now chooses (10.4)
        if fouler == self.player:
            events += self._pass_turn(1 - fouler, "time_foul" if rule == "12.4" else "foul", now)
        return events

    def _expire(self, now: float) -> list[Event]:
        before = self._dump()
        fouler = self.player
        deadline = self.deadline
        self.phase = "expired"
        self.deadline = None
        self.pending_warnings = []
        self.remaining = 0
        events = [Event("clock.expired", {
            "player": fouler, "deadline": deadline, "remaining_ms": 0,
            "late_ms": round(now - (deadline or now), 3),
        })]
        events += self._add_foul(fouler, "time", "12.4", now)
        if self.phase == "ready":  # the foul passed the turn: show 0 until someone acts
            self.phase = "expired"
            self.remaining = 0
        self._remember("expiry", now, before)
        return events

    def _end_frame(self, winner: int | None, reason: str, now: float) -> list[Event]:
        self.phase = "frame_over"
        self.deadline = None
        self.pending_warnings = []
        self.remaining = None
        self.hand_back_to = None
        self.frame_winner = winner
        self.frame_end_reason = reason
        if winner is not None:
            self.frames_won[winner] += 1
        return [Event("frame.ended", {
            "frame": self.frame, "winner": winner, "reason": reason,
            "frames_won": list(self.frames_won),
        })]

    def _start_frame(self, now: float) -> list[Event]:
        self.frame += 1
        # Breaks alternate by frame (I3).
        self.breaker = (self.first_breaker + self.frame - 1) % 2
        self.player = self.breaker
        self.visit = 1  # the break opens visit 1
        self.fouls = [0, 0]  # 10.5: counts reset when a frame ends
        self.extensions_used = [0, 0]  # 12.5: once per frame
        self.hand_back_to = None
        self.frame_winner = None
        self.frame_end_reason = None
        self._make_ready(self.shot_limit())
        return [Event("frame.started", {
            "frame": self.frame, "breaker": self.breaker, "player": self.player,
            "visit": self.visit, "round": self.round, "limit_ms": self.shot_limit(),
        })]

    def _clock_event(self, kind: str, now: float, data: dict[str, Any]) -> Event:
        return Event(kind, {
            **data,
            "player": data.get("player", self.player),
            "remaining_ms": self.remaining_ms(now),
            "deadline": self.deadline if self.phase == "running" else None,
        })

    def _remember(self, step: str, now: float, before: dict[str, Any]) -> None:
        self.history.append({"step": step, "at": now, "state": before})
        del self.history[:-UNDO_DEPTH]

    # -- persistence -------------------------------------------------------------------------
    _FIELDS = (
        "frame", "breaker", "visit", "player", "phase", "remaining", "deadline",
        "pending_warnings", "extensions_used", "fouls", "hand_back_to", "frame_winner",
        "frame_end_reason", "frames_won",
    )

    def _dump(self) -> dict[str, Any]:
        return {name: copy.copy(getattr(self, name)) for name in self._FIELDS}

    def _load(self, data: dict[str, Any]) -> None:
        for name in self._FIELDS:
            setattr(self, name, copy.copy(data[name]))

    def to_dict(self) -> dict[str, Any]:
        return {
            "players": list(self.players),
            "timer": self.timer,
            "profile": self.profile.to_dict(),
            "first_breaker": self.first_breaker,
            "history": copy.deepcopy(self.history),
            **self._dump(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableClock:
        clock = cls(data["players"], timer=data["timer"],
                    profile=Profile.from_partial(data["profile"]),
                    first_breaker=data["first_breaker"])
        clock._load(data)
        clock.history = copy.deepcopy(data.get("history", []))
        return clock
