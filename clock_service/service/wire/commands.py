"""Messages to a table and their replies: ping and pong, ack and error, and one model per
referee command, derived from the core's registry (clock_service/core/commands.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import MISSING
from dataclasses import fields as dataclass_fields
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    StrictBool,
    StrictFloat,
    StrictInt,
    create_model,
)

from clock_service.core.commands import (
    BY,
    COMMANDS,
    ENVELOPE_FIELDS,
    MAX_AT_MS,
    MAX_RACE_TO,
    MAX_SET_MS,
    SAME,
    Command,
)
from clock_service.core.match_clock import (
    MAX_MATCH_MS,
)
from clock_service.core.rules import (
    WHITES,
    Cushion,
    OffTableBall,
    Pocket,
    ShotType,
    TouchedWith,
)
from clock_service.service.wire.events import UnixMs
from clock_service.service.wire.fields import (
    AT_DOC,
    BY_DOC,
    SOURCE_DOC,
    AtLimitCode,
    PersonName,
    PlayerIndex,
    TextLine,
)
from clock_service.service.wire.http import ProfileIn
from clock_service.service.wire.state import (
    CONTACT_PATTERN,
    CallSpec,
    ClosedModel,
    GeneralFoulCode,
    GeneralFoulSpec,
    RouteSpec,
    WsErrorBody,
    WsTableState,
)

__all__ = ["AckMessage", "COMMAND_FIELD_TYPES", "CommandMessage", "ErrorMessage", "MESSAGE_FIELDS",
           "PingMessage", "PongMessage", "command_message", "command_models", "command_union"]


class PongMessage(ClosedModel):
    type: Literal["pong"]
    id: Any = Field(description="the ping's id, echoed")
    client_time: Any = Field(description="the ping's client_time, echoed")
    server_time: UnixMs


class AckMessage(ClosedModel):
    type: Literal["ack"]
    id: Any = Field(description="the command's id, echoed")
    state: WsTableState = Field(description="the state after the command (its events were "
                                "sent before this)")


class ErrorMessage(ClosedModel):
    type: Literal["error"]
    id: Any = Field(None, description="the message's id, echoed; absent when the message "
                    "could not be read (invalid_json, message_too_large) and on connect")
    status: int | None = Field(None, description="HTTP-like status of a refused command "
                               "(401, 404, 409, 422, 429); absent otherwise")
    error: WsErrorBody


class PingMessage(BaseModel):
    """For the clock offset; any other field is ignored."""

    type: Literal["ping"]
    id: Any = Field(None, description="echoed in the pong")
    client_time: float | None = Field(None, description="the client's clock, echoed")


Names = Annotated[list[PersonName], Field(min_length=2, max_length=2)]


# A field means the same in every command that has it: its exact type where the dataclass
# type alone says too little (a player is an int, but only 0 or 1; a pocket a str, but one
# of six names).
COMMAND_FIELD_TYPES: dict[str, Any] = {
    "player": PlayerIndex,
    "winner": PlayerIndex,
    "first_breaker": PlayerIndex,
    "remaining_ms": Annotated[StrictInt, Field(ge=1, le=MAX_SET_MS)],
    "whites_potted": Annotated[StrictInt, Field(ge=0, le=WHITES)],
    "race_to": Annotated[StrictInt, Field(ge=1, le=MAX_RACE_TO)],
    "players": Names,
    "profile": ProfileIn,
    "call": CallSpec,
    "route": RouteSpec,
    "pocket": Pocket,
    "cushions": list[Cushion],
    "contacts": list[Annotated[str, Field(pattern=CONTACT_PATTERN)]],
    "shot_type": ShotType,
    "code": GeneralFoulCode,
    "balls": list[OffTableBall],
    "touched_with": TouchedWith,
    "scope": Literal["frame", "match"],
    "match_limit_ms": Annotated[StrictInt, Field(ge=1000, le=MAX_MATCH_MS)],
    "at_match_limit": AtLimitCode,
    "referee_foul": TextLine | GeneralFoulSpec,
    "at": (Annotated[StrictInt, Field(ge=0, le=MAX_AT_MS)]
           | Annotated[StrictFloat, Field(ge=0, le=MAX_AT_MS)]),
    "referee": PersonName,
    "by": Literal[BY],  # a command that declares its own ``by`` takes any text (see below)
}


COMMAND_FIELD_DOCS: dict[str, str] = {
    "at": AT_DOC,
    "by": BY_DOC,
    "source": SOURCE_DOC,
    "player": "default: the player at the table",
    "winner": "who won the frame; left out or null: nobody",
    "rule": "default 10.1",
    "remaining_ms": "the remaining time to set, ms",
    "legal_break": "the break only; left out: legal",
    "whites_potted": "whites potted on this shot",
    "cushions": "the coloured ball's cushions, in order",
    "contacts": "ball-to-ball contacts 'striker>struck', in order (balls: cue, colour, "
                "white1..white7)",
    "race_to": "frames to win; null: open-ended",
    "event": "for the protocol's header",
    "referee": "for the protocol's header",
    "scope": "shot_clock_on: for the rest of the frame or of the match (default match)",
    "match_limit_ms": "the match's time limit (from its first break); null: none",
    "at_match_limit": "the organiser's choice at the limit (see POST /api/tables)",
}


# Fields of the message that are not the command's (commands.ENVELOPE_FIELDS besides
# ``command``): name -> (type, description). A name the core adds without an entry here
# is documented as any JSON value.
MESSAGE_FIELDS: dict[str, tuple[Any, str]] = {
    "id": (Any, "echoed in the WebSocket ack or error"),
}


def _hint_type(hint: Any) -> Any:
    """A JSON type for a dataclass field's type hint (None handled by the caller)."""
    if hint is str:
        return TextLine
    if hint is bool:
        return StrictBool
    if hint is int:
        return StrictInt
    if hint is float:
        return StrictInt | StrictFloat
    origin = get_origin(hint)
    if origin in (list, tuple, Sequence):
        (item, *_) = get_args(hint) or (Any,)
        return list[_hint_type(item)]  # type: ignore[misc]
    return dict[str, Any]


def _field_annotation(cls: type[Command], name: str, hint: Any) -> tuple[Any, bool]:
    """(type, whether it may be left out without a default: the core's SAME)."""
    args = get_args(hint) if get_origin(hint) in (Union, UnionType) else (hint,)
    same = any(getattr(a, "__name__", "") == "_Same" for a in args)
    optional = type(None) in args
    rest = [a for a in args if a is not type(None) and getattr(a, "__name__", "") != "_Same"]
    own = name in cls.__dict__.get("__annotations__", {})
    if name == "by" and own:  # a correction names who made it: a person's name
        base: Any = PersonName
    else:
        base = COMMAND_FIELD_TYPES.get(name) or _hint_type(rest[0])
    return (base | None if optional else base), same


def _command_model(cls: type[Command], *, websocket: bool) -> type[BaseModel]:
    hints = get_type_hints(cls)
    definitions: dict[str, Any] = {
        "command": (Literal[cls.name], Field(description=f"the command: {cls.name}")),
    }
    if websocket:
        definitions["type"] = (Literal["command"], Field(
            "command", description="may be left out when the message has a 'command'"))
    for name in sorted(ENVELOPE_FIELDS - {"command"}):
        kind, doc = MESSAGE_FIELDS.get(name, (Any, "any JSON value"))
        definitions[name] = (kind, Field(None, description=doc))
    for f in dataclass_fields(cls):
        if not f.init:
            continue
        annotation, same = _field_annotation(cls, f.name, hints[f.name])
        info: dict[str, Any] = {"description": COMMAND_FIELD_DOCS.get(f.name)}
        if same or f.default is SAME:  # left out: as before (no JSON default to show)
            info["default_factory"] = lambda: None
            info["description"] = "left out: as before" + (
                f"; {info['description']}" if info["description"] else "")
        elif f.default is not MISSING:
            info["default"] = f.default
        elif f.default_factory is not MISSING:
            info["default"] = f.default_factory()
        if isinstance(info.get("default"), tuple):
            info["default"] = list(info["default"])
        definitions[f.name] = (annotation, Field(**info))
    words = "".join(part.capitalize() for part in cls.name.split("_"))
    model: type[BaseModel] = create_model(
        f"{'Ws' if websocket else ''}{words}Command",
        __config__=ConfigDict(extra="forbid"),
        __doc__=" ".join((cls.__doc__ or f"The {cls.name} command.").split()),
        **definitions,
    )
    return model


def command_models(*, websocket: bool = False) -> dict[str, type[BaseModel]]:
    """Command name -> its request model, for every command in the registry now."""
    return {name: _command_model(cls, websocket=websocket)
            for name, cls in sorted(COMMANDS.items())}


def command_union(*, websocket: bool = False) -> Any:
    """A discriminated union (on ``command``) of every command's model."""
    models = tuple(command_models(websocket=websocket).values())
    return Annotated[Union[models], Field(discriminator="command")]  # noqa: UP007


def command_message() -> type[RootModel[Any]]:
    """The WebSocket command message, as one root model (AsyncAPI, contract test)."""
    base: Any = RootModel[command_union(websocket=True)]  # type: ignore[misc]
    message: type[RootModel[Any]] = create_model(
        "CommandMessage", __base__=base,
        __doc__="A referee command; needs the referee token when the service has one.")
    return message


CommandMessage = command_message()
