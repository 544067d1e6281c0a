"""The statistics core: one match's events in, its record out. No I/O, no clock.

Input is the match's slice of its table's event log, in seq order, exactly as stored (wire
events: ``type``, ``seq``, ``at``, ``data`` and the ``state`` after the command). Output is
a :class:`MatchRecord`: frames with their shots, visits, fouls and extensions, and the
per-player statistics of each frame and of the match.

**Corrections first.** ``undo`` takes back the last *step* (a command or an expiry) without
rewriting history: the step's events stay in the log and a ``correction.undone`` follows.
:func:`effective_events` replays the log with the clock's own step stack and drops every
event of a step that was taken back, so the record is built from what stands. A step
begins with the first event its command emits; :func:`opens_step` says which events do
(``clock.started`` always, a ``foul`` only when it is not the consequence of an expiry, a
result or a foul-stop in the same batch, ...). Events of one batch share ``state.seq``.

**Time used by a shot** is taken from the clock's own figures, never from wall-clock
differences (conventions 9): the remaining time when the clock started for the shot, plus
the extensions granted while it was counting, less what was left when the shot was
played (0 at expiry). A pause freezes the remaining time, so pauses are excluded; a
``set_time`` correction counts as the referee's official figure; a restart (the clock
comes back paused with the time it had when the service was last alive) costs nothing.
Without a timer (12.1) there are no time figures at all: they are ``None``, never 0.

**Definitions** (hand-checkable; the tests compute them by hand):
- a *shot* is a shot played: the clock stopped by ``shot`` (or, without ``start``/``shot``
  presses, a reported ``result``); clock stops by ``turn``/``foul``/``new_frame`` and
  expiries are kept as timed attempts with that outcome but are not shots;
- mean and median are rounded to the nearest ms (median of an even count: the mean of the
  two middle values); p90 is the nearest rank: the ceil(0.9 n)-th smallest;
- shares over 20 s / 30 s: shots with ``used_ms`` strictly above 20000 / 30000, over the
  timed shots;
- visits: the player's visits to the table (the break opens visit 1; every turn, time foul
  or hand-back opens the next);
- frame duration: ``frame.ended.at - frame.started.at`` (wall clock, pauses included: it
  is how long the frame took, not anybody's shot time);
- breaks won: frames the player broke and won.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clock_service.core.rules.fouls import FOUL_RULES, FoulCode

__all__ = [
    "Shot", "FoulRecord", "ExtensionRecord", "Visit", "FrameRecord", "PlayerStats",
    "MatchRecord", "build_match", "effective_events", "opens_step", "player_stats",
    "OVER_20_MS", "OVER_30_MS", "TIME_FOUL_RULE", "foul_rule",
]

OVER_20_MS = 20_000
OVER_30_MS = 30_000
TIME_FOUL_RULE = "12.4"

# Events that are never a referee's step: the clock's own warnings, a restart's pause, the
# undo itself, and the openings of a table or a match (their history starts empty).
_NON_STEP = frozenset({"clock.warning", "correction.undone", "table.created", "match.started",
                       "table.archived"})
# Events that tell what a step (or a wake-up) also did and are never a step themselves: the
# match clock's, and slow play ending with its frame. ``effective_events`` looks through
# them, so the event after one is judged by the event before it (a frame.started after
# frame.ended + shot_clock.off belongs to the new_frame step as it did before).
_ASIDE = frozenset({"match_clock.started", "match_clock.paused", "match_clock.resumed",
                    "match_clock.warning", "match_clock.expired", "match_clock.applied",
                    "shot_clock.off"})


def _aside(event: Mapping[str, Any]) -> bool:
    kind = event["type"]
    if kind in _ASIDE:
        return True
    # The shot clock switched on by the match's time limit (not the referee's command).
    return kind == "shot_clock.on" and (event.get("data") or {}).get("reason") == \
        "match time limit"


# Events that always begin a step: a command's first (and usually only) event.
_ALWAYS_STEP = frozenset({"clock.started", "clock.resumed", "clock.extended",
                          "clock.corrected", "clock.expired", "shot.result", "clock.stopped"})


@dataclass(slots=True)
class Shot:
    """One timed attempt (from ``clock.started`` to its stop) or one untimed reported shot."""

    frame: int
    visit: int
    player: int
    number: int  # 1.. within the frame
    limit_ms: int | None
    start_remaining_ms: int | None
    started_at: int
    start_seq: int
    extension_ms: int = 0  # granted while this shot was counting or shown before its start
    granted_ms: int = 0  # of which added after the start (the part not in start_remaining)
    end_remaining_ms: int | None = None
    outcome: str | None = None  # shot | time_foul | turn | foul | new_frame; None: running
    ended_at: int | None = None
    end_seq: int | None = None
    pauses: int = 0
    corrected: bool = False
    fouls: list[str] = field(default_factory=list)  # rules of the fouls this shot caused
    whites: int | None = None  # credited by this shot (shot.result)
    colour_potted: bool | None = None
    by: str | None = None  # who decided the shot (referee, camera), when the log says

    @property
    def round(self) -> int:
        return (self.visit + 1) // 2

    @property
    def extension(self) -> bool:
        return self.extension_ms > 0

    @property
    def played(self) -> bool:
        return self.outcome == "shot"

    @property
    def used_ms(self) -> int | None:
        """The clock's time taken off this shot's allowance (see the module docstring)."""
        if self.start_remaining_ms is None or self.end_remaining_ms is None:
            return None
        return max(0, self.start_remaining_ms + self.granted_ms - self.end_remaining_ms)

    def to_dict(self) -> dict[str, Any]:
        return {
            "frame": self.frame, "visit": self.visit, "round": self.round,
            "number": self.number, "player": self.player, "limit_ms": self.limit_ms,
            "used_ms": self.used_ms, "extension": self.extension,
            "extension_ms": self.extension_ms, "outcome": self.outcome,
            "fouls": list(self.fouls), "whites": self.whites,
            "colour_potted": self.colour_potted, "pauses": self.pauses,
            "corrected": self.corrected, "by": self.by, "started_at": self.started_at,
            "ended_at": self.ended_at, "start_seq": self.start_seq, "end_seq": self.end_seq,
        }


@dataclass(slots=True, frozen=True)
class FoulRecord:
    frame: int
    visit: int
    player: int
    rule: str
    reason: str
    at: int
    seq: int
    technical_loss: bool
    code: str | None = None  # the structured foul's code (rules.FoulCode), when recorded
    note: str | None = None  # the referee's own words with a coded foul

    @property
    def time_foul(self) -> bool:
        return self.rule == TIME_FOUL_RULE

    def to_dict(self) -> dict[str, Any]:
        out = {"frame": self.frame, "visit": self.visit, "player": self.player,
               "rule": self.rule, "reason": self.reason, "time_foul": self.time_foul,
               "technical_loss": self.technical_loss, "at": self.at, "seq": self.seq}
        if self.code is not None:
            out["code"] = self.code
        if self.note is not None:
            out["note"] = self.note
        return out


@dataclass(slots=True, frozen=True)
class ExtensionRecord:
    frame: int
    visit: int
    player: int
    extension_ms: int
    at: int
    seq: int

    def to_dict(self) -> dict[str, Any]:
        return {"frame": self.frame, "visit": self.visit, "player": self.player,
                "extension_ms": self.extension_ms, "at": self.at, "seq": self.seq}


@dataclass(slots=True)
class Visit:
    number: int
    player: int
    started_at: int
    ended_at: int | None = None
    reason: str | None = None  # how it began: break, turn, result, foul, time_foul, hand_back

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "round": (self.number + 1) // 2, "player": self.player,
                "started_at": self.started_at, "ended_at": self.ended_at,
                "reason": self.reason}


@dataclass(slots=True, frozen=True)
class PlayerStats:
    """One player's figures over a frame or a match. Time figures are None without a timer
    (12.1), or when there is no timed shot to take them from."""

    shots: int
    timed_shots: int
    mean_ms: int | None
    median_ms: int | None
    p90_ms: int | None
    max_ms: int | None
    total_ms: int | None
    over_20s: int | None
    over_30s: int | None
    share_over_20s: float | None
    share_over_30s: float | None
    extensions: int
    time_fouls: int
    fouls: int
    fouls_by_rule: dict[str, int]
    whites: int
    visits: int
    frames_won: int
    breaks: int
    breaks_won: int

    def to_dict(self) -> dict[str, Any]:
        return {name: (dict(value) if isinstance(value, dict) else value)
                for name, value in ((f, getattr(self, f)) for f in self.__dataclass_fields__)}


@dataclass(slots=True)
class FrameRecord:
    number: int
    breaker: int
    started_at: int
    start_seq: int
    ended_at: int | None = None
    winner: int | None = None
    reason: str | None = None  # legal_colour_pot | technical_loss | referee; None: in play
    shots: list[Shot] = field(default_factory=list)
    visits: list[Visit] = field(default_factory=list)
    fouls: list[FoulRecord] = field(default_factory=list)
    extensions: list[ExtensionRecord] = field(default_factory=list)
    pauses: list[tuple[int, int | None]] = field(default_factory=list)  # (at, resumed at)
    whites: list[int] = field(default_factory=lambda: [0, 0])
    stats: tuple[PlayerStats, PlayerStats] | None = None

    @property
    def duration_ms(self) -> int | None:
        return None if self.ended_at is None else self.ended_at - self.started_at

    def to_dict(self, shots: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "number": self.number, "breaker": self.breaker, "winner": self.winner,
            "reason": self.reason, "started_at": self.started_at, "ended_at": self.ended_at,
            "duration_ms": self.duration_ms, "whites": list(self.whites),
            "visits": len(self.visits),
            "fouls": [f.to_dict() for f in self.fouls],
            "extensions": [e.to_dict() for e in self.extensions],
            "players": [s.to_dict() for s in self.stats or ()],
        }
        if shots:
            out["shots"] = [s.to_dict() for s in self.shots]
            out["visit_log"] = [v.to_dict() for v in self.visits]
            out["pauses"] = [list(p) for p in self.pauses]
        return out


@dataclass(slots=True)
class MatchRecord:
    table: str | None
    number: int
    players: list[str]
    timer: bool
    race_to: int | None
    profile: dict[str, Any] | None
    first_breaker: int
    event: str | None
    referee: str | None
    started_at: int
    start_seq: int
    last_seq: int
    ended_at: int | None = None
    winner: int | None = None
    over: bool = False
    frames: list[FrameRecord] = field(default_factory=list)
    stats: tuple[PlayerStats, PlayerStats] | None = None
    # SHA-256 of the match's events as read from the store, set by whoever read them
    # (storage/records.load_events says exactly what is hashed): a printed protocol can be
    # checked against the log.
    digest: str | None = None
    # The verdict on the table's signature (clock_service/service/signing.py), set by whoever read
    # the events: {"status": verified|unverified|unsigned, "fingerprint", ...}.
    signature: dict[str, Any] | None = None

    @property
    def id(self) -> str:
        return f"{self.table}.{self.number}"

    @property
    def score(self) -> list[int]:
        won = [0, 0]
        for frame in self.frames:
            if frame.winner in (0, 1):
                won[frame.winner] += 1
        return won

    @property
    def shots(self) -> list[Shot]:
        return [shot for frame in self.frames for shot in frame.shots]

    def to_dict(self, shots: bool = True) -> dict[str, Any]:
        return {
            "id": self.id, "table": self.table, "number": self.number,
            "players": list(self.players), "timer": self.timer, "race_to": self.race_to,
            "profile": self.profile, "first_breaker": self.first_breaker,
            "event": self.event, "referee": self.referee, "started_at": self.started_at,
            "ended_at": self.ended_at, "over": self.over, "winner": self.winner,
            "score": self.score, "start_seq": self.start_seq, "last_seq": self.last_seq,
            "log_sha256": self.digest, "signature": self.signature,
            "players_stats": [s.to_dict() for s in self.stats or ()],
            "frames": [f.to_dict(shots) for f in self.frames],
        }


# -- corrections ------------------------------------------------------------------------------

def _batch(event: Mapping[str, Any]) -> Any:
    """Events emitted together (one command, or one wake-up) share the state they carry."""
    state = event.get("state")
    if isinstance(state, Mapping) and "seq" in state:
        return ("seq", state["seq"])
    return ("at", event.get("at"))


def opens_step(event: Mapping[str, Any], prev: Mapping[str, Any] | None) -> bool:
    """Whether ``event`` is the first event of a referee's step (a command the clock keeps
    for undo, or an expiry). ``prev`` is the event before it in the same batch, or None.

    The sequences a step emits (clock.py): start, shot, pause, resume, extension, set_time:
    one clock event; turn: [clock.stopped(turn)] turn; foul: [clock.stopped(foul)] foul
    [turn | frame.ended [match.ended]]; hand_back: turn(hand_back); new_frame:
    [clock.stopped(new_frame)] [frame.ended [match.ended]] [frame.started]; result:
    shot.result foul* [respot] [turn | frame.ended [match.ended]]; expiry: clock.expired
    foul (turn | frame.ended [match.ended]). Any other event type is a command's own
    event (e.g. call.announced) and so begins a step.
    """
    kind = event["type"]
    data = event.get("data") or {}
    if kind in _NON_STEP:
        return False
    if kind == "clock.paused":
        return data.get("reason") not in ("restart", "power_lost")  # the service's own
    if kind in _ALWAYS_STEP:
        return True
    before = prev["type"] if prev is not None else None
    before_reason = (prev.get("data") or {}).get("reason") if prev is not None else None
    if kind == "turn":
        reason = data.get("reason")
        if reason == "turn":
            return not (before == "clock.stopped" and before_reason == "turn")
        return reason == "hand_back"  # foul, time_foul, result: part of their step
    if kind == "foul":
        return not (before in ("clock.expired", "shot.result", "foul")
                    or (before == "clock.stopped" and before_reason == "foul"))
    if kind == "frame.ended":
        return not (before in ("foul", "shot.result", "respot")
                    or (before == "clock.stopped" and before_reason == "new_frame"))
    if kind == "frame.started":
        return not (before in ("match.started", "table.created")
                    or (before == "frame.ended" and before_reason == "referee"))
    return kind not in ("match.ended", "respot")


def effective_events(events: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The events that stand: every step taken back by an undo is dropped with all its
    events (and whatever followed it up to the undo); the ``correction.undone`` stays."""
    cancelled = bytearray(len(events))
    steps: list[int] = []
    prev: Mapping[str, Any] | None = None
    prev_batch: Any = None
    for i, event in enumerate(events):
        if _aside(event):
            continue
        batch = _batch(event)
        if event["type"] == "correction.undone":
            if steps:
                start = steps.pop()
                cancelled[start:i] = b"\x01" * (i - start)
        elif opens_step(event, prev if batch == prev_batch else None):
            steps.append(i)
        prev, prev_batch = event, batch
    return [e for i, e in enumerate(events) if not cancelled[i]]


# -- the record -------------------------------------------------------------------------------

def _half_up(value: float) -> int:
    return int(math.floor(value + 0.5))


def _median(values: Sequence[int]) -> int:
    n = len(values)
    middle = n // 2
    return values[middle] if n % 2 else _half_up((values[middle - 1] + values[middle]) / 2)


def player_stats(player: int, shots: Iterable[Shot], fouls: Iterable[FoulRecord],
                 extensions: Iterable[ExtensionRecord], visits: Iterable[Visit], *,
                 timer: bool, whites: int, frames_won: int, breaks: int,
                 breaks_won: int) -> PlayerStats:
    """A player's figures over the given frame or match parts (see the module docstring)."""
    played = [s for s in shots if s.player == player and s.played]
    times = sorted(u for u in (s.used_ms for s in played) if u is not None) if timer else []
    own_fouls = [f for f in fouls if f.player == player]
    by_rule = Counter(f.rule for f in own_fouls)
    n = len(times)
    timed = n > 0
    over_20 = sum(1 for t in times if t > OVER_20_MS)
    over_30 = sum(1 for t in times if t > OVER_30_MS)
    return PlayerStats(
        shots=len(played), timed_shots=n,
        mean_ms=_half_up(sum(times) / n) if timed else None,
        median_ms=_median(times) if timed else None,
        p90_ms=times[math.ceil(0.9 * n) - 1] if timed else None,
        max_ms=times[-1] if timed else None,
        total_ms=sum(times) if timed else None,
        over_20s=over_20 if timed else None, over_30s=over_30 if timed else None,
        share_over_20s=round(over_20 / n, 4) if timed else None,
        share_over_30s=round(over_30 / n, 4) if timed else None,
        extensions=sum(1 for e in extensions if e.player == player),
        time_fouls=by_rule.get(TIME_FOUL_RULE, 0), fouls=len(own_fouls),
        fouls_by_rule=dict(sorted(by_rule.items(), key=_rule_order)),
        whites=whites, visits=sum(1 for v in visits if v.player == player),
        frames_won=frames_won, breaks=breaks, breaks_won=breaks_won,
    )


def _rule_order(item: tuple[str, int]) -> tuple[tuple[int | str, ...], str]:
    """'4.3' before '10.1' before '12.4' (numerically, part by part)."""
    parts = tuple(int(p) if p.isdigit() else p for p in item[0].replace("-", ".").split("."))
    return tuple(p if isinstance(p, int) else 10**9 for p in parts), item[0]


class _Builder:
    """Walks the effective events forward (no undo left to handle)."""

    def __init__(self, table: str | None) -> None:
        self.table = table
        self.match: MatchRecord | None = None
        self.frame: FrameRecord | None = None
        self.visit: Visit | None = None
        self.shot: Shot | None = None  # counting (running or paused)
        self.awaiting_result: Shot | None = None  # played, its result not yet reported
        self.batch_shot: tuple[Any, Shot] | None = None  # the attempt a batch ended
        self.pending_extension: tuple[int, int] | None = None  # shown before the start
        self.pause_open = False

    def open_match(self, event: Mapping[str, Any]) -> None:
        data = event.get("data") or {}
        number = 1 if event["type"] == "table.created" else int(data.get("number") or 1)
        self.match = MatchRecord(
            table=self.table if self.table is not None else data.get("table"),
            number=number, players=list(data.get("players") or ["", ""]),
            timer=bool(data.get("timer", True)), race_to=data.get("race_to"),
            profile=data.get("profile"), first_breaker=int(data.get("first_breaker") or 0),
            event=data.get("event"), referee=data.get("referee"),
            started_at=int(event["at"]), start_seq=int(event["seq"]),
            last_seq=int(event["seq"]))

    def feed(self, event: Mapping[str, Any]) -> None:
        kind = event["type"]
        if self.match is None:
            if kind in ("table.created", "match.started"):
                self.open_match(event)
            return  # events before the match opened are not this match's
        self.match.last_seq = int(event["seq"])
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, event, event.get("data") or {})

    # -- frames and visits --------------------------------------------------------------------
    def on_frame_started(self, event: Mapping[str, Any], data: Mapping[str, Any]) -> None:
        assert self.match is not None
        breaker = int(data.get("breaker", data.get("player", 0)))
        self.frame = FrameRecord(number=int(data.get("frame") or len(self.match.frames) + 1),
                                 breaker=breaker, started_at=int(event["at"]),
                                 start_seq=int(event["seq"]))
        self.match.frames.append(self.frame)
        self.shot = self.awaiting_result = self.pending_extension = None
        self.pause_open = False
        self._new_visit(int(data.get("visit") or 1), int(data.get("player", breaker)),
                        int(event["at"]), "break")

    def _new_visit(self, number: int, player: int, at: int, reason: str | None) -> None:
        assert self.frame is not None
        if self.visit is not None and self.visit.ended_at is None:
            self.visit.ended_at = at
        self.visit = Visit(number, player, at, reason=reason)
        self.frame.visits.append(self.visit)
        self.pending_extension = None  # an extension shown in ready dies with the visit
        self.awaiting_result = None

    def on_turn(self, event: Mapping[str, Any], data: Mapping[str, Any]) -> None:
        if self.frame is None:
            return
        self._close_shot(event, "turn")
        self._new_visit(int(data.get("visit") or (self.visit.number + 1 if self.visit else 1)),
                        int(data.get("player", 0)), int(event["at"]), data.get("reason"))

    def on_frame_ended(self, event: Mapping[str, Any], data: Mapping[str, Any]) -> None:
        if self.frame is None:
            return
        self._close_shot(event, "new_frame")
        at = int(event["at"])
        self.frame.ended_at = at
        self.frame.winner = data.get("winner")
        self.frame.reason = data.get("reason")
        if self.visit is not None and self.visit.ended_at is None:
            self.visit.ended_at = at
        self._end_pause(at)

    def on_match_ended(self, event: Mapping[str, Any], data: Mapping[str, Any]) -> None:
        assert self.match is not None
        self.match.over = True
        self.match.winner = data.get("winner")
        self.match.ended_at = int(event["at"])

    # -- the clock ------------------------------------------------------------------------------
    def on_clock_started(self, event: Mapping[str, Any], data: Mapping[str, Any]) -> None:
        if self.frame is None or self.visit is None:
            return
        player = int(data.get("player", self.visit.player))
        shot = Shot(frame=self.frame.number, visit=self.visit.number, player=player,
                    number=len(self.frame.shots) + 1, limit_ms=data.get("limit_ms"),
                    start_remaining_ms=data.get("remaining_ms") if self.match and
                    self.match.timer else None,
                    started_at=int(event["at"]), start_seq=int(event["seq"]),
                    by=_by(event))
        if self.pending_extension is not None and self.pending_extension[0] == player:
            shot.extension_ms += self.pending_extension[1]
        self.pending_extension = None
        self.awaiting_result = None
        self.frame.shots.append(shot)
        self.shot = shot

    def on_clock_extended(self, event: Mapping[str, Any], data: Mapping[str, Any]) -> None:
        if self.frame is None or self.visit is None:
            return
        player = int(data.get("player", self.visit.player))
        extra = int(data.get("extension_ms") or 0)
        self.frame.extensions.append(ExtensionRecord(
            self.frame.number, self.visit.number, player, extra, int(event["at"]),
            int(event["seq"])))
        if self.shot is not None:
            self.shot.extension_ms += extra
            self.shot.granted_ms += extra
        else:  # shown in ready before the start (I16): already in the start's remaining
            self.pending_extension = (player, extra)

    def on_clock_paused(self, event: Mapping[str, Any], data: Mapping[str, Any]) -> None:
        if self.shot is not None:
            self.shot.pauses += 1
        if self.frame is not None and not self.pause_open:
            self.frame.pauses.append((int(event["at"]), None))
            self.pause_open = True

    def _end_pause(self, at: int) -> None:
        if self.pause_open and self.frame is not None and self.frame.pauses:
            started, _ = self.frame.pauses[-1]
            self.frame.pauses[-1] = (started, at)
        self.pause_open = False

    def on_clock_resumed(self, event: Mapping[str, Any], data: Mapping[str, Any]) -> None:
        self._end_pause(int(event["at"]))

    def on_clock_corrected(self, event: Mapping[str, Any], data: Mapping[str, Any]) -> None:
        # set_time: the referee's figure replaces the clock's. The time used stays "what was
        # taken off the allowance", now by the official count (module docstring).
        if self.shot is not None:
            self.shot.corrected = True

    def on_clock_stopped(self, event: Mapping[str, Any], data: Mapping[str, Any]) -> None:
        reason = data.get("reason") or "shot"
        shot = self._close_shot(event, reason, data.get("remaining_ms"))
        if shot is not None and reason == "shot":
            self.awaiting_result = shot
            stopper = _by(event)
            if stopper is not None:
                shot.by = stopper

    def on_clock_expired(self, event: Mapping[str, Any], data: Mapping[str, Any]) -> None:
        self._close_shot(event, "time_foul", 0)

    def _close_shot(self, event: Mapping[str, Any], outcome: str,
                    remaining: int | None = None) -> Shot | None:
        shot = self.shot
        if shot is None:
            return None
        self.shot = None
        shot.outcome = outcome
        shot.end_remaining_ms = remaining if shot.start_remaining_ms is not None else None
        shot.ended_at = int(event["at"])
        shot.end_seq = int(event["seq"])
        self._end_pause(int(event["at"]))
        self.batch_shot = (_batch(event), shot)
        return shot

    # -- the rules ------------------------------------------------------------------------------
    def on_shot_result(self, event: Mapping[str, Any], data: Mapping[str, Any]) -> None:
        if self.frame is None or self.visit is None:
            return
        outcome = data.get("outcome") or {}
        report = data.get("report") or {}
        shot = self.awaiting_result
        player = int(data.get("player", self.visit.player))
        if shot is None or shot.player != player:
            # A result reported without the clock (e.g. no timer): an untimed shot.
            shot = Shot(frame=self.frame.number, visit=self.visit.number, player=player,
                        number=len(self.frame.shots) + 1, limit_ms=None,
                        start_remaining_ms=None, started_at=int(event["at"]),
                        start_seq=int(event["seq"]), outcome="shot",
                        ended_at=int(event["at"]), end_seq=int(event["seq"]), by=_by(event))
            self.frame.shots.append(shot)
        self.awaiting_result = None
        shot.whites = int(outcome.get("whites_credited") or 0)
        shot.colour_potted = bool(report.get("colour_potted"))
        whites = data.get("whites")
        if isinstance(whites, list) and len(whites) == 2:
            self.frame.whites = [int(whites[0]), int(whites[1])]
        self.batch_shot = (_batch(event), shot)

    def on_foul(self, event: Mapping[str, Any], data: Mapping[str, Any]) -> None:
        if self.frame is None or self.visit is None:
            return
        foul = FoulRecord(
            frame=self.frame.number, visit=self.visit.number,
            player=int(data.get("player", self.visit.player)),
            rule=foul_rule(data), reason=str(data.get("reason") or ""),
            at=int(event["at"]), seq=int(event["seq"]),
            technical_loss=bool(data.get("technical_loss")),
            code=data.get("code"), note=_note(data))
        self.frame.fouls.append(foul)
        if self.batch_shot is not None and self.batch_shot[0] == _batch(event):
            shot = self.batch_shot[1]
            if shot.player == foul.player:
                shot.fouls.append(foul.rule)


def foul_rule(data: Mapping[str, Any]) -> str:
    """The rule a foul broke, as its event says (every ``foul`` event carries ``rule``).
    Should one lack it: the rule of its code (rules/fouls.py ``FOUL_RULES``), else rule 9's
    last item, a general foul (D10). Never 10.1: that rule says a first foul is recorded;
    it is what follows a foul, not a rule anyone breaks."""
    rule = data.get("rule")
    if isinstance(rule, str) and rule:
        return rule
    codes = {code.value: rule for code, rule in FOUL_RULES.items()}
    return codes.get(str(data.get("code")), FOUL_RULES[FoulCode.OTHER])


def _note(data: Mapping[str, Any]) -> str | None:
    """The referee's words given with a coded foul (the first breach's ``text``)."""
    breaches = data.get("breaches")
    if isinstance(breaches, list) and breaches and isinstance(breaches[0], Mapping):
        text = breaches[0].get("text")
        return text if isinstance(text, str) and text else None
    return None


def _by(event: Mapping[str, Any]) -> str | None:
    """Who decided it (command envelope ``by``: referee or camera), when recorded."""
    data = event.get("data") or {}
    by = data.get("by", event.get("by"))
    return by if isinstance(by, str) else None


_HANDLERS = {
    "frame.started": _Builder.on_frame_started,
    "frame.ended": _Builder.on_frame_ended,
    "match.ended": _Builder.on_match_ended,
    "turn": _Builder.on_turn,
    "clock.started": _Builder.on_clock_started,
    "clock.extended": _Builder.on_clock_extended,
    "clock.paused": _Builder.on_clock_paused,
    "clock.resumed": _Builder.on_clock_resumed,
    "clock.corrected": _Builder.on_clock_corrected,
    "clock.stopped": _Builder.on_clock_stopped,
    "clock.expired": _Builder.on_clock_expired,
    "shot.result": _Builder.on_shot_result,
    "foul": _Builder.on_foul,
}


def build_match(events: Sequence[Mapping[str, Any]], table: str | None = None) -> MatchRecord:
    """The record of the match whose events (from its opening event on, in seq order) are
    given. Events after a later ``match.started`` are ignored: they are the next match's."""
    builder = _Builder(table)
    for event in effective_events(events):
        if event["type"] == "match.started" and builder.match is not None:
            break
        builder.feed(event)
    match = builder.match
    if match is None:
        raise ValueError("no table.created or match.started among the events: not a match")
    for frame in match.frames:
        frame.stats = (_frame_stats(match, frame, 0), _frame_stats(match, frame, 1))
    match.stats = (_match_stats(match, 0), _match_stats(match, 1))
    return match


def _frame_stats(match: MatchRecord, frame: FrameRecord, player: int) -> PlayerStats:
    broke = frame.breaker == player
    won = frame.winner == player
    return player_stats(player, frame.shots, frame.fouls, frame.extensions, frame.visits,
                        timer=match.timer, whites=frame.whites[player],
                        frames_won=int(won), breaks=int(broke), breaks_won=int(broke and won))


def _match_stats(match: MatchRecord, player: int) -> PlayerStats:
    frames = match.frames
    return player_stats(
        player, (s for f in frames for s in f.shots), (x for f in frames for x in f.fouls),
        (e for f in frames for e in f.extensions), (v for f in frames for v in f.visits),
        timer=match.timer, whites=sum(f.whites[player] for f in frames),
        frames_won=sum(1 for f in frames if f.winner == player),
        breaks=sum(1 for f in frames if f.breaker == player),
        breaks_won=sum(1 for f in frames if f.breaker == player and f.winner == player))
