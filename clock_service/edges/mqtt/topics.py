"""Topic names and the broker URL (pure: no I/O, no paho).

Per table, under ``shotclock/v1/<hall>/tables/<id>/``:

| topic | direction | payload |
| --- | --- | --- |
| ``events`` | table -> all, QoS 1 | every event, the WebSocket event JSON (with ``seq``) |
| ``state`` | table -> all, QoS 1, retained | the table state after the last event |
| ``status`` | table -> all, QoS 1, retained | ``online``; ``offline`` (also the last will) |
| ``commands`` | referee/hall -> table, QoS 1 | a command (+ ``token``) |
| ``replay`` | hall -> table, QoS 1 | a replay request ``{"type": "replay", "since": N}``; the
  broker's ACL lets only the hall's account write it |
| ``replies`` | table -> requester | replies when the request had no MQTT 5 response topic |

Replies to a request with an MQTT 5 response topic go there (with its correlation data);
the table answers only on topics under ``shotclock/v1/<hall>/replies/``.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

from clock_service.core.errors import InvalidInput
from clock_service.core.ids import is_table_id  # a hall or table name: one topic level

__all__ = ["BrokerTarget", "Topics", "parse_url", "PREFIX", "KINDS", "ONLINE", "OFFLINE"]

PREFIX = "shotclock/v1"
KINDS = ("events", "state", "status", "commands", "replies", "replay")
ONLINE = b"online"
OFFLINE = b"offline"
DEFAULT_PORTS = {"mqtt": 1883, "mqtts": 8883}


@dataclass(frozen=True)
class BrokerTarget:
    """Where to publish: a broker and a hall (``mqtt://[user:pass@]host:port/<hall>``)."""

    host: str
    port: int
    hall: str
    username: str | None = None
    password: str | None = None
    tls: bool = False
    # The CA that signed the broker's certificate (SHOTCLOCK_MQTT_CA, a hall CA from
    # ``shotclock tls init``); None: the system's CAs.
    ca: str | None = None

    @property
    def key(self) -> str:
        """Names this broker and hall in the store (the acknowledged seq is per target):
        pointing a table at another broker publishes its log there from the start."""
        return f"{self.host}:{self.port}/{self.hall}"

    def redacted(self) -> str:
        """The URL without the password, for logs and /api/health."""
        user = f"{urllib.parse.quote(self.username, safe='')}@" if self.username else ""
        return f"{'mqtts' if self.tls else 'mqtt'}://{user}{self.host}:{self.port}/{self.hall}"


def parse_url(url: str, ca: str | None = None) -> BrokerTarget:
    """``mqtt://[user:pass@]host[:port]/<hall>`` (``mqtts://`` for TLS, verified against
    ``ca`` or the system's CAs); refuses the rest."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in DEFAULT_PORTS:
        raise InvalidInput(f"SHOTCLOCK_MQTT_URL must start with mqtt:// or mqtts://, got {url!r}",
                           code="invalid_mqtt_url")
    if not parts.hostname:
        raise InvalidInput(f"SHOTCLOCK_MQTT_URL has no host: {url!r}", code="invalid_mqtt_url")
    try:
        port = parts.port or DEFAULT_PORTS[parts.scheme]
    except ValueError:
        raise InvalidInput(f"SHOTCLOCK_MQTT_URL has a bad port: {url!r}",
                           code="invalid_mqtt_url") from None
    hall = parts.path.strip("/")
    if not is_table_id(hall):
        raise InvalidInput(
            "SHOTCLOCK_MQTT_URL must end with the hall's name (1-32 letters, digits, '-' or "
            f"'_'), e.g. mqtt://hall-server:1883/main-hall; got path {parts.path!r}",
            code="invalid_mqtt_url")
    if parts.query or parts.fragment:
        raise InvalidInput(f"SHOTCLOCK_MQTT_URL takes no query or fragment: {url!r}",
                           code="invalid_mqtt_url")
    return BrokerTarget(
        host=parts.hostname, port=port, hall=hall,
        username=urllib.parse.unquote(parts.username) if parts.username else None,
        password=urllib.parse.unquote(parts.password) if parts.password else None,
        tls=parts.scheme == "mqtts", ca=ca or None)


class Topics:
    """The topic names of one hall."""

    def __init__(self, hall: str) -> None:
        if not is_table_id(hall):
            raise InvalidInput(f"hall name must be 1-32 letters, digits, '-' or '_', "
                               f"got {hall!r}", code="invalid_mqtt_url")
        self.hall = hall
        self.root = f"{PREFIX}/{hall}"

    def table(self, table_id: str, kind: str) -> str:
        if kind not in KINDS:
            raise ValueError(f"unknown topic kind {kind!r}; known: {KINDS}")
        return f"{self.root}/tables/{table_id}/{kind}"

    def events(self, table_id: str) -> str:
        return self.table(table_id, "events")

    def state(self, table_id: str) -> str:
        return self.table(table_id, "state")

    def status(self, table_id: str) -> str:
        return self.table(table_id, "status")

    def commands(self, table_id: str) -> str:
        return self.table(table_id, "commands")

    def replay(self, table_id: str) -> str:
        return self.table(table_id, "replay")

    def replies(self, table_id: str) -> str:
        return self.table(table_id, "replies")

    def every_table(self, kind: str) -> str:
        """The subscription for one kind of topic of every table of the hall."""
        if kind not in KINDS:
            raise ValueError(f"unknown topic kind {kind!r}; known: {KINDS}")
        return f"{self.root}/tables/+/{kind}"

    def replies_to(self, client: str) -> str:
        """An MQTT 5 response topic for ``client``: under ``<hall>/replies/``, where the ACL
        lets tables answer and each client read its own (see deploy/mosquitto/acl)."""
        return f"{self.root}/replies/{client}"

    def is_reply_topic(self, topic: str) -> bool:
        """Whether a table may answer on ``topic``: only under ``<hall>/replies/``, so a
        response topic can never make a table publish on another table topic (an event
        or a state of its own would be believed by every consumer)."""
        prefix = f"{self.root}/replies/"
        return (topic.startswith(prefix) and len(topic) > len(prefix)
                and not any(c in topic for c in "+#\0"))

    def parse(self, topic: str) -> tuple[str, str] | None:
        """``(table id, kind)`` of a table topic of this hall, else None."""
        prefix = f"{self.root}/tables/"
        if not topic.startswith(prefix):
            return None
        rest = topic[len(prefix):].split("/")
        if len(rest) != 2 or rest[1] not in KINDS or not is_table_id(rest[0]):
            return None
        return rest[0], rest[1]
