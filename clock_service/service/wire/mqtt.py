"""MQTT (SHOTCLOCK_MQTT_URL, clock_service/edges/mqtt): the same messages on a broker's
topics, for the AsyncAPI document; the status, the command with its token, the replay.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union, get_args

from pydantic import (
    BaseModel,
    Field,
    RootModel,
    create_model,
)

from clock_service.service.wire.commands import CommandMessage
from clock_service.service.wire.fields import MAX_SEQ
from clock_service.service.wire.state import ClosedModel

__all__ = ["MQTT_COMMANDS", "MqttCommandMessage", "MqttStatus", "ReplayRequest"]


class MqttStatus(RootModel[Literal["online", "offline"]]):
    """``.../status``, retained, plain text: ``online`` while the table's service is
    connected; ``offline`` when it leaves, and as its last will when it vanishes."""


# A token is a secret, not human text: shown to nobody, compared whole (auth.py).
MAX_TOKEN_LENGTH = 1024


Token = Annotated[str, Field(max_length=MAX_TOKEN_LENGTH, json_schema_extra={
    "format": "password"})]


MQTT_TOKEN_DOC = ("the referee token (SHOTCLOCK_REFEREE_TOKEN of the table's service), "
                  "needed when it has one: the broker's ACL says who may publish here, the "
                  "token says who may command")


def _with_token(model: type[BaseModel]) -> type[BaseModel]:
    """The WebSocket command ``model`` with the referee token in the payload (MQTT has no
    handshake to carry it)."""
    return create_model(
        f"Mqtt{model.__name__}", __base__=model, __doc__=model.__doc__,
        token=(Token | None, Field(None, description=MQTT_TOKEN_DOC)))


MQTT_COMMANDS: tuple[type[BaseModel], ...] = tuple(
    _with_token(m) for m in get_args(CommandMessage.model_fields["root"].annotation))


class MqttCommandMessage(RootModel[Annotated[
    Union[MQTT_COMMANDS],  # type: ignore[valid-type]  # noqa: UP007 - built, not written
    Field(discriminator="command"),
]]):
    """A referee command on ``.../commands``: the WebSocket command with ``token``."""


class ReplayRequest(ClosedModel):
    """On ``.../commands``: send the table's events after ``since`` again, in order, on its
    events topic (the hall asks for what a broker restart lost). No token needed (reading
    never does; the ACL says who may publish here); no reply."""

    type: Literal["replay"]
    since: int = Field(ge=0, le=MAX_SEQ, description="the last seq the asker has")
    id: Any = Field(None, description="ignored")
