"""Referee commands: small frozen dataclasses, validated when built.

``parse_command`` turns a JSON object (HTTP body or WebSocket message) into one of them,
refusing unknown commands, unknown or missing fields and wrong types with ``InvalidCommand``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, Final

from clock_service.core.errors import InvalidCommand, InvalidInput, InvalidProfile, RuleRefusal
from clock_service.core.match_clock import check_match_limit
from clock_service.core.presets import build_profile
from clock_service.core.profile import Profile
from clock_service.core.rules import Call, FoulCode, GeneralFoul, InvalidResult, Route, ShotResult
from clock_service.core.text import LINE, NAME, TextKind, refusal
from clock_service.core.text import clean as clean_text

__all__ = [
    "Command",
    "Start",
    "Shot",
    "Extension",
    "Pause",
    "Resume",
    "Turn",
    "Foul",
    "HandBack",
    "NewFrame",
    "NewMatch",
    "SAME",
    "check_players",
    "Undo",
    "SetTime",
    "Result",
    "AnnounceCall",
    "ShotClockOn",
    "SLOW_PLAY_SCOPES",
    "COMMANDS",
    "BY",
    "PRESS_STALE_MS",
    "PRESS_FUTURE_MS",
    "TIMED",
    "check_press_time",
    "press_instant",
    "parse_command",
    "register_command",
]

MAX_TEXT = LINE.cap  # free text: reasons, notes, event, source (clock_service/core/text.py)
MAX_NAME = NAME.cap  # a person: players, referee, who made a correction
MAX_SET_MS = 600_000
MAX_RACE_TO = 999
MAX_AT_MS = 2**53  # a press time, unix ms: exact in every JSON reader
# Fields of the message that are not the command's: its name, and a client's correlation
# id (WebSocket). The envelope proper (``at``, ``by``, ``source``) is on ``Command`` itself.
ENVELOPE_FIELDS = frozenset({"command", "id"})

# The command envelope (TEAM convention 1). ``by``: who decided it (SPEC: camera commands
# are marked ``by: camera``). ``at``: when the press (or camera frame) happened at the
# table, unix ms on the service's clock; a press that reaches the service more than
# PRESS_STALE_MS later is refused (409 stale_press: a press reported lost must not stop a
# clock seconds later), one more than PRESS_FUTURE_MS ahead is malformed (422: the
# sender's clock offset is wrong).
BY = ("referee", "camera")
PRESS_STALE_MS = 2000
PRESS_FUTURE_MS = 1000
# Steps whose instant matters: the core applies them at the press time (see clock.handle).
TIMED = frozenset({"start", "shot", "pause", "resume"})


def check_press_time(command: Command, now: float, *, fresh: bool = False) -> None:
    """A press from the future is malformed (422 ``press_in_future``: the sender's clock
    offset is wrong); with ``fresh``, a stale one is refused (409 ``stale_press``: a press
    reported lost is never applied seconds later)."""
    if command.at is None:
        return
    if not fresh and command.at - now > PRESS_FUTURE_MS:
        raise InvalidCommand(
            f"{command.name}: press time at={command.at:.0f} is {command.at - now:.0f} ms "
            f"ahead of the service's clock (at most {PRESS_FUTURE_MS} ms allowed): the "
            "sender's clock offset is wrong", code="press_in_future")
    if fresh and now - command.at > PRESS_STALE_MS:
        raise RuleRefusal(
            f"{command.name} refused: the press is {now - command.at:.0f} ms old (more "
            f"than {PRESS_STALE_MS} ms): it reached the service too late to be applied; "
            "press again", code="stale_press")


def press_instant(command: Command, now: float, last_step_at: float | None) -> float:
    """When a command takes effect: ``now``, or for a timed step with a press time,
    ``max(last step, min(now, at))`` (never after it arrived, never before the step it
    follows: a shot cannot be timed before its own start)."""
    if command.at is None or command.name not in TIMED:
        return now
    instant = min(now, float(command.at))
    if last_step_at is not None:
        instant = max(instant, last_step_at)
    return instant


def _text(value: Any, name: str, *, required: bool, kind: TextKind = LINE) -> str | None:
    """Human text of this kind (clock_service/core/text.py) as kept (stripped, NFC);
    ``None`` only when not required. InvalidCommand names the field and the reason."""
    if value is None and not required:
        return None
    try:
        return clean_text(value, kind, name)
    except InvalidInput as exc:
        raise InvalidCommand(str(exc), code="invalid_field") from exc


def _set_text(command: Command, name: str, *, required: bool, kind: TextKind = LINE) -> None:
    """The command's text field ``name`` checked and kept as cleaned."""
    object.__setattr__(command, name, _text(getattr(command, name), name, required=required,
                                            kind=kind))


def check_players(players: Any) -> tuple[str, str]:
    """Two players' names (clock_service/core/text.py, NAME), as kept, or InvalidCommand
    naming the player (``players.1: ...``)."""
    if not isinstance(players, list | tuple) or len(players) != 2:
        raise InvalidCommand(f"players must be two names, got {players!r}"[:200],
                             code="invalid_players")
    for i, player in enumerate(players):
        reason = refusal(player, NAME)
        if reason is not None:
            raise InvalidCommand(f"players.{i}: {reason}", code="invalid_players")
    return (clean_text(players[0], NAME), clean_text(players[1], NAME))


def _player(value: Any, name: str = "player") -> None:
    # type(), not isinstance: a bool is not a player, and 1.0 == 1 but is no index (a 500).
    if value is not None and (type(value) is not int or value not in (0, 1)):
        raise InvalidCommand(f"{name} must be 0 or 1, got {value!r}", code="invalid_field")


@dataclass(frozen=True)
class Command:
    """Base of every command; carries the envelope (keyword-only, recorded in its events).

    ``at``: press time (unix ms, service clock) or None (the service's arrival time);
    ``by``: ``referee`` or ``camera``; ``source``: where it came from (``console``,
    ``button``, ``pedal``, ``camera``, ``mqtt`` ...), for the log.
    """

    name: ClassVar[str] = ""
    # Undoable commands are kept on the correction stack (SPEC "Corrections").
    undoable: ClassVar[bool] = True
    at: float | None = field(default=None, kw_only=True)
    by: str = field(default="referee", kw_only=True)
    source: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        self._check_envelope()

    def _check_envelope(self, *, free_by: bool = False) -> None:
        at = self.at
        if at is not None and (isinstance(at, bool) or not isinstance(at, int | float)
                               or not math.isfinite(at) or not 0 <= at <= MAX_AT_MS):
            raise InvalidCommand(f"at must be unix ms (a number in 0..{MAX_AT_MS}), got "
                                 f"{at!r}"[:200], code="invalid_field")
        if free_by:  # corrections name who made them (undo, set_time): a person's name
            _set_text(self, "by", required=True, kind=NAME)
        elif self.by not in BY:
            raise InvalidCommand(f"by must be one of {list(BY)}, got {self.by!r}"[:200],
                                 code="invalid_field")
        _set_text(self, "source", required=False)


@dataclass(frozen=True)
class Start(Command):
    """Balls at rest and re-spots done: the shot clock starts counting (I15)."""

    name: ClassVar[str] = "start"


@dataclass(frozen=True)
class Shot(Command):
    """Cue tip on the cue ball in time: the clock stops and shows the next limit (I15)."""

    name: ClassVar[str] = "shot"


@dataclass(frozen=True)
class Extension(Command):
    """Extra time for the player at the table (12.5-12.7).

    ``player``: who asks, when the press says so (a player's own extension button); it is
    refused unless that player is at the table, so a press that crossed a turn change
    never gives the opponent the extension.
    """

    name: ClassVar[str] = "extension"
    player: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _player(self.player)


@dataclass(frozen=True)
class Pause(Command):
    name: ClassVar[str] = "pause"


@dataclass(frozen=True)
class Resume(Command):
    name: ClassVar[str] = "resume"


@dataclass(frozen=True)
class Turn(Command):
    """The right to shoot passes to the opponent: a new visit (SPEC "Visits and rounds")."""

    name: ClassVar[str] = "turn"


@dataclass(frozen=True)
class Foul(Command):
    """A foul the referee saw that is not a shot's result (9, 10.1; D10).

    ``code`` names a general foul (``rules.GeneralFoul``: ball_off_table with ``balls``,
    double_hit, push_shot, no_ball_contact, touched_ball with ``touched_with``,
    out_of_turn, other); ``reason`` is free text: the foul itself when there is no code
    (code ``other``), a note otherwise. ``rule`` belongs to a free-text foul only (a code
    brings its own rule). ``player`` defaults to the player at the table, for
    ``out_of_turn`` to the other one (who played out of turn).
    """

    name: ClassVar[str] = "foul"
    reason: str | None = None
    player: int | None = None
    rule: str | None = None
    code: str | None = None
    balls: Sequence[str] = ()
    touched_with: str | None = None
    general: GeneralFoul | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        _set_text(self, "reason", required=False)
        _player(self.player)
        _set_text(self, "rule", required=False)
        if self.code is None and self.reason is None:
            raise InvalidCommand("foul needs a code or a reason (free text)",
                                 code="missing_field")
        if self.code is not None and self.rule is not None:
            raise InvalidCommand("foul: rule comes with the code; give rule only with a "
                                 "free-text reason", code="rule_with_code")
        general = None
        if self.rule is None:
            try:
                general = GeneralFoul.from_dict({
                    "code": self.code or FoulCode.OTHER, "balls": self.balls,
                    "touched_with": self.touched_with, "text": self.reason})
            except InvalidResult as exc:
                message = str(exc).replace("referee_foul.", "")
                raise InvalidCommand(f"foul: {message}", code=exc.code) from exc
        elif self.balls or self.touched_with is not None:
            raise InvalidCommand("foul: balls and touched_with need a code",
                                 code="detail_without_code")
        object.__setattr__(self, "general", general)


@dataclass(frozen=True)
class HandBack(Command):
    """After a foul the opponent hands the turn back to the player who fouled (10.4, I2)."""

    name: ClassVar[str] = "hand_back"


@dataclass(frozen=True)
class NewFrame(Command):
    """End the current frame (with ``winner`` if the referee names one) and start the next.

    Ending a frame still in progress is a referee decision outside the rules (D9): it needs
    ``reason``, which ``frame.ended`` carries (``outside_rules: true``). After a frame
    ended by the rules (3.2, 10.5) it only starts the next one.
    """

    name: ClassVar[str] = "new_frame"
    winner: int | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _player(self.winner, "winner")
        _set_text(self, "reason", required=False)


class _Same:
    """A field of ``new_match`` left out: the previous match's setting is kept."""

    def __repr__(self) -> str:
        return "SAME"


SAME: Final = _Same()


@dataclass(frozen=True)
class NewMatch(Command):
    """A new match on the table. The previous match stays on record (GET /api/matches/{id}):
    its events stay in the log and it keeps its number; this one gets the next.

    ``players``, ``timer``, ``profile`` (partial, over the rules' defaults, as at table
    creation), ``race_to`` (null: open-ended) and ``first_breaker`` left out keep the
    previous match's; ``event`` and ``referee`` (for the protocol's header) belong to
    this match only. Not undoable: the correction history ends with the match it belongs to.
    ``reason``: why the previous match is left unfinished (a race not won, or a frame in
    progress: the rules never end a match that way, so, as for a frame (D9), the referee
    says why); not needed after a match that is over, an open-ended one between frames,
    or one not begun (frame 1 before its break, nothing played).
    """

    name: ClassVar[str] = "new_match"
    undoable: ClassVar[bool] = False
    players: Sequence[str] | _Same = SAME
    timer: bool | _Same = SAME
    profile: Mapping[str, Any] | _Same = SAME
    race_to: int | None | _Same = SAME
    first_breaker: int | _Same = SAME
    match_limit_ms: int | None | _Same = SAME
    at_match_limit: str | _Same = SAME
    event: str | None = None
    referee: str | None = None
    reason: str | None = None
    built_profile: Profile | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.players, _Same):
            object.__setattr__(self, "players", check_players(self.players))
        if not isinstance(self.timer, _Same | bool):
            raise InvalidCommand(f"timer must be true or false, got {self.timer!r}",
                                 code="invalid_field")
        if not isinstance(self.profile, _Same):
            if not isinstance(self.profile, Mapping):
                raise InvalidCommand(f"profile must be an object, got {self.profile!r}",
                                     code="invalid_profile")
            try:
                built = build_profile(self.profile)
            except InvalidProfile as exc:
                raise InvalidCommand(f"profile: {exc}", code="invalid_profile") from exc
            object.__setattr__(self, "built_profile", built)
        race = self.race_to
        if not isinstance(race, _Same) and race is not None and (
                isinstance(race, bool) or not isinstance(race, int)
                or not 1 <= race <= MAX_RACE_TO):
            raise InvalidCommand(f"race_to must be a whole number in 1..{MAX_RACE_TO} or "
                                 f"null, got {race!r}"[:200], code="invalid_race_to")
        if not isinstance(self.first_breaker, _Same):
            _player(self.first_breaker, "first_breaker")
            if self.first_breaker is None:
                raise InvalidCommand("first_breaker must be 0 or 1, got None",
                                     code="invalid_field")
        if not isinstance(self.match_limit_ms, _Same) or not isinstance(self.at_match_limit,
                                                                        _Same):
            limit = None if isinstance(self.match_limit_ms, _Same) else self.match_limit_ms
            choice = ("leader_wins" if isinstance(self.at_match_limit, _Same)
                      else self.at_match_limit)
            try:
                check_match_limit(limit, choice)
            except InvalidInput as exc:
                raise InvalidCommand(str(exc), code=exc.code) from exc
        _set_text(self, "event", required=False)
        _set_text(self, "referee", required=False, kind=NAME)
        _set_text(self, "reason", required=False)


@dataclass(frozen=True)
class Undo(Command):
    """Correction: take back the last step (a command or an expiry); itself logged."""

    name: ClassVar[str] = "undo"
    undoable: ClassVar[bool] = False
    by: str = field(default="referee", kw_only=True)  # who corrected: any short text
    reason: str | None = None

    def __post_init__(self) -> None:
        self._check_envelope(free_by=True)
        _set_text(self, "reason", required=False)


@dataclass(frozen=True)
class SetTime(Command):
    """Correction: set the remaining time of the current shot; itself logged."""

    name: ClassVar[str] = "set_time"
    remaining_ms: int
    by: str = field(default="referee", kw_only=True)  # who corrected: any short text
    reason: str | None = None

    def __post_init__(self) -> None:
        value = self.remaining_ms
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_SET_MS:
            raise InvalidCommand(
                f"remaining_ms must be a whole number of ms in 1..{MAX_SET_MS}, got {value!r}",
                code="invalid_field",
            )
        self._check_envelope(free_by=True)
        _set_text(self, "reason", required=False)


@dataclass(frozen=True)
class Result(Command):
    """What the shot just played did, as the referee saw it (sections 3-11).

    The fields mirror ``rules.ShotResult``; ``call`` and ``route`` are given as JSON objects
    (or as ``Call``/``Route``) and are built and checked by the rules themselves, so a
    report that cannot happen is refused here with the rules' own code (HTTP 422).
    ``legal_break`` is for the break only, and there it is required (4.2, D11): the
    referee says whether the break was legal; a result on the break without it is refused
    (422 ``missing_legal_break``, naming the field). The service never assumes a legal one.
    """

    name: ClassVar[str] = "result"
    whites_potted: int = 0
    colour_potted: bool = False
    call: Call | Mapping[str, Any] | None = None
    route: Route | Mapping[str, Any] | None = None
    legal_break: bool | None = None
    referee_foul: str | Mapping[str, Any] | GeneralFoul | None = None
    shot_result: ShotResult = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        try:
            call = _built("call", self.call, Call)
            route = _built("route", self.route, Route)
            result = ShotResult(
                whites_potted=self.whites_potted, colour_potted=self.colour_potted,
                call=call, route=route, legal_break=self.legal_break,
                referee_foul=(None if self.referee_foul is None
                              else GeneralFoul.parse(self.referee_foul)),
            )
        except InvalidResult as exc:
            message = str(exc).replace("shot_result.", "")
            raise InvalidCommand(f"result: {message}", code=exc.code) from exc
        except (TypeError, ValueError) as exc:  # e.g. a number where a list belongs
            raise InvalidCommand(f"result: referee_foul: {exc}",
                                 code="bad_referee_foul") from exc
        object.__setattr__(self, "call", call)
        object.__setattr__(self, "route", route)
        object.__setattr__(self, "shot_result", result)


@dataclass(frozen=True)
class AnnounceCall(Command):
    """The strict call announced before the shot (7.1-7.2, I11): the command ``call``.

    The fields are those of ``rules.Call`` (pocket, cushions, contacts, shot_type), built
    and checked by the rules themselves; a call that cannot be made is refused here with
    the rules' own code (HTTP 422). The next ``result`` is judged against it (D1).
    """

    name: ClassVar[str] = "call"
    pocket: str
    cushions: Sequence[str] = ()
    contacts: Sequence[str] = ()
    shot_type: str = "normal"
    call: Call = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()  # the envelope (at, by, source): a 500 on "at": {} otherwise
        try:
            call = _built("call", {"pocket": self.pocket, "cushions": self.cushions,
                                   "contacts": self.contacts, "shot_type": self.shot_type}, Call)
        except InvalidResult as exc:
            raise InvalidCommand(str(exc), code=exc.code) from exc
        object.__setattr__(self, "call", call)


@dataclass(frozen=True)
class ShotClockOn(Command):
    """Slow play: the referee switches the shot clock on in a match played without one
    (12.1), with the profile's ``slow_play_ms`` per shot, for the rest of the ``frame`` or
    of the ``match`` (default). ``reason`` is required: it is the referee's decision."""

    name: ClassVar[str] = "shot_clock_on"
    reason: str
    scope: str = "match"

    def __post_init__(self) -> None:
        super().__post_init__()
        _set_text(self, "reason", required=True)
        if self.scope not in SLOW_PLAY_SCOPES:
            raise InvalidCommand(f"scope must be one of {list(SLOW_PLAY_SCOPES)}, got "
                                 f"{self.scope!r}", code="invalid_field")


SLOW_PLAY_SCOPES = ("frame", "match")


def _built(name: str, value: Any, cls: type[Call] | type[Route]) -> Any:
    """A call or route from its JSON object; the rules' ``from_dict`` checks every field."""
    if value is None or isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise InvalidResult(
            f"{name} must be an object or null, got {value!r}", code=f"bad_{name}"
        )
    try:
        return cls.from_dict(value)
    except InvalidResult as exc:
        if str(exc).startswith(f"{name}"):
            raise
        raise InvalidResult(f"{name}: {exc}", code=exc.code) from exc
    except (TypeError, ValueError) as exc:  # e.g. a number where a list of names belongs
        raise InvalidResult(f"{name}: {exc}", code=f"bad_{name}") from exc


COMMANDS: dict[str, type[Command]] = {}


def register_command(cls: type[Command]) -> type[Command]:
    COMMANDS[cls.name] = cls
    return cls


for _cls in (Start, Shot, Extension, Pause, Resume, Turn, Foul, HandBack, NewFrame, Undo, SetTime,
             Result, AnnounceCall, NewMatch, ShotClockOn):
    register_command(_cls)


def parse_command(payload: Any) -> Command:
    if not isinstance(payload, Mapping):
        raise InvalidCommand(f"a command must be a JSON object, got {type(payload).__name__}")
    name = payload.get("command")
    if not isinstance(name, str):
        raise InvalidCommand(
            f"missing or non-string 'command'; known: {sorted(COMMANDS)}", code="missing_field"
        )
    cls = COMMANDS.get(name)
    if cls is None:
        raise InvalidCommand(
            f"unknown command {name!r}; known: {sorted(COMMANDS)}", code="unknown_command"
        )
    if payload.get("source") is not None:
        _text(payload["source"], "source", required=False)
    declared = {f.name: f for f in fields(cls) if f.init}
    args = {k: v for k, v in payload.items() if k not in ENVELOPE_FIELDS}
    unknown = sorted(set(args) - set(declared))
    if unknown:
        raise InvalidCommand(
            f"command {name!r} has no field(s) {unknown}; it takes {sorted(declared) or 'none'}",
            code="unknown_field",
        )
    missing = [
        f.name for f in declared.values()
        if f.name not in args and f.default is MISSING and f.default_factory is MISSING
    ]
    if missing:
        raise InvalidCommand(f"command {name!r} needs field(s) {missing}", code="missing_field")
    try:
        return cls(**args)
    except InvalidCommand:
        raise
    except (TypeError, ValueError) as exc:  # a sub-object's own validation (e.g. a call)
        raise InvalidCommand(f"command {name!r}: {exc}", code="invalid_field") from exc
