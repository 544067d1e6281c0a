"""Referee commands: small frozen dataclasses, validated when built.

``parse_command`` turns a JSON object (HTTP body or WebSocket message) into one of them,
refusing unknown commands, unknown or missing fields and wrong types with ``InvalidCommand``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar

from clock_service.errors import InvalidCommand

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
    "Undo",
    "SetTime",
    "COMMANDS",
    "parse_command",
    "register_command",
]

MAX_TEXT = 200
MAX_SET_MS = 600_000
# Fields every command may carry without being part of it: a client's correlation id
# (WebSocket), and where the press came from (for the log).
ENVELOPE_FIELDS = frozenset({"command", "id", "source"})


def _text(value: Any, name: str, *, required: bool) -> None:
    if value is None and not required:
        return
    if not isinstance(value, str) or (required and not value.strip()) or len(value) > MAX_TEXT:
        raise InvalidCommand(
            f"{name} must be a non-empty string of at most {MAX_TEXT} characters, got {value!r}",
            code="invalid_field",
        )


def _player(value: Any, name: str = "player") -> None:
    if value is not None and (isinstance(value, bool) or value not in (0, 1)):
        raise InvalidCommand(f"{name} must be 0 or 1, got {value!r}", code="invalid_field")


@dataclass(frozen=True)
class Command:
    name: ClassVar[str] = ""
    # Undoable commands are kept on the correction stack (SPEC "Corrections").
    undoable: ClassVar[bool] = True


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
    """Extra time for the player at the table (12.5-12.7)."""

    name: ClassVar[str] = "extension"


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
    """A foul seen by the referee (10.1); ``player`` defaults to the player at the table."""

    name: ClassVar[str] = "foul"
    reason: str
    player: int | None = None
    rule: str | None = None

    def __post_init__(self) -> None:
        _text(self.reason, "reason", required=True)
        _player(self.player)
        _text(self.rule, "rule", required=False)


@dataclass(frozen=True)
class HandBack(Command):
    """After a foul the opponent hands the turn back to the player who fouled (10.4, I2)."""

    name: ClassVar[str] = "hand_back"


@dataclass(frozen=True)
class NewFrame(Command):
    """End the current frame (with ``winner`` if the referee names one) and start the next."""

    name: ClassVar[str] = "new_frame"
    winner: int | None = None

    def __post_init__(self) -> None:
        _player(self.winner, "winner")


@dataclass(frozen=True)
class Undo(Command):
    """Correction: take back the last step (a command or an expiry); itself logged."""

    name: ClassVar[str] = "undo"
    undoable: ClassVar[bool] = False
    by: str = "referee"
    reason: str | None = None

    def __post_init__(self) -> None:
        _text(self.by, "by", required=True)
        _text(self.reason, "reason", required=False)


@dataclass(frozen=True)
class SetTime(Command):
    """Correction: set the remaining time of the current shot; itself logged."""

    name: ClassVar[str] = "set_time"
    remaining_ms: int
    by: str = "referee"
    reason: str | None = None

    def __post_init__(self) -> None:
        value = self.remaining_ms
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_SET_MS:
            raise InvalidCommand(
                f"remaining_ms must be a whole number of ms in 1..{MAX_SET_MS}, got {value!r}",
                code="invalid_field",
            )
        _text(self.by, "by", required=True)
        _text(self.reason, "reason", required=False)


COMMANDS: dict[str, type[Command]] = {}


def register_command(cls: type[Command]) -> type[Command]:
    COMMANDS[cls.name] = cls
    return cls


for _cls in (Start, Shot, Extension, Pause, Resume, Turn, Foul, HandBack, NewFrame, Undo, SetTime):
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
    declared = {f.name: f for f in fields(cls)}
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
