"""``shotclock hall``: every table of a hall, mirrored from the broker, behind the same API.

The hall service owns no clock. It subscribes to ``shotclock/v1/<hall>/tables/+/...``,
appends each table's events to its own store (same schema, same seq, the same JSON text)
through a :class:`~clock_service.edges.mqtt.mirror.TableMirror` (every seq once, in order; gaps
asked for with a replay request), and gives the API what it needs of a runtime
(``clock_service.edges.api.ServedRuntime``; the part shared with ``Runtime``, which runs the
clocks, is ``served.ServedTables``): the tables, their state and snapshot (the last
event's state, its countdown brought up to now), the event log for ``?since=``, the hub
for WebSocket clients, health. So every page, endpoint and WebSocket works unchanged,
read-only for tables: a command is forwarded over MQTT to the table's own service (with
the referee token in the payload) and its reply is the hall's; creating a table is refused
(``hall_read_only``): a table is created on its own Pi.

A table whose service is offline is shown with a ``table_offline`` fault; the hall keeps
its last state and catches up when the table is back. Its card on the hall feed says it is
not live (``live: false``, ``stale_since``, the countdown frozen at that instant) while the
table is offline, not heard yet, diverged, or the hall has lost the broker: the hall page
then shows "last known", never a countdown from old data.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import random
import re
import socket
import uuid
from dataclasses import dataclass, field, fields
from typing import Any

from clock_service.core.commands import Command
from clock_service.core.errors import ForwardedError, HallReadOnly, TableUnreachable
from clock_service.core.transitions import ClockPhase
from clock_service.edges.mqtt.connection import Connection, Message
from clock_service.edges.mqtt.mirror import ClockSkew, TableMirror
from clock_service.edges.mqtt.topics import OFFLINE, ONLINE, BrokerTarget, Topics
from clock_service.service.hub import Hub, encode
from clock_service.service.limits import read_message
from clock_service.service.live import ServedTables
from clock_service.service.settings import Settings
from clock_service.service.signing import SIGNED_EVENT, check_signed
from clock_service.service.storage import Store
from clock_service.service.storage.log import lean_text
from clock_service.service.supervisor import cancelled_from_outside, supervise
from clock_service.service.timesource import TimeSource
from clock_service.service.wire.fields import MAX_SEQ

__all__ = ["HallRuntime", "MirroredTable", "command_payload"]

log = logging.getLogger(__name__)

FORWARD_TIMEOUT_S = 5.0
CAUGHT_UP_TIMEOUT_S = 2.0
TICK_S = 0.5
SESSION_EXPIRY_S = 3600
BACKOFF_MIN_S = 0.2
BACKOFF_MAX_S = 2.0
BROKER_FAULT = "mqtt.broker"
# Out-of-order events held per table while a gap is asked for: a count and their bytes (a
# hall of 200 tables holds at most 200 x 512 KiB however the broker misbehaves).
HOLD = 512
HOLD_BYTES = 512 * 1024
RECENT_DIGESTS = 512  # per table: duplicates within these are checked on the loop
MAX_STORE_CHECKS = 8  # per table: older duplicates checked in the store at once


def event_digest(event: dict[str, Any]) -> str:
    """What makes an event the one it is (its kind, seq, table, time and data), whatever
    else the store keeps of it."""
    core = {k: event.get(k) for k in ("type", "seq", "table", "at", "data")}
    return hashlib.sha256(json.dumps(core, sort_keys=True, separators=(",", ":"),
                                     ensure_ascii=False).encode()).hexdigest()[:32]


def command_payload(command: Command) -> dict[str, Any]:
    """The JSON of a parsed command, as a table's service parses it again."""
    payload: dict[str, Any] = {"command": command.name}
    for f in fields(command):
        if not f.init:
            continue
        value = getattr(command, f.name)
        payload[f.name] = value.to_dict() if hasattr(value, "to_dict") else value
    return payload


@dataclass(eq=False)
class MirroredTable:
    """A table as the hall knows it: the state its last event carried. The hall keeps no
    clock for it (the table's own service keeps the time)."""

    id: str
    seq: int = 0
    published_seq: int = 0
    published_state: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)

    def state(self, now: float) -> dict[str, Any]:
        state = dict(self.published_state)
        if state.get("phase") == ClockPhase.RUNNING and state.get("deadline") is not None:
            state["remaining_ms"] = max(0, int(state["deadline"] - now + 0.999999))
        return state


class HallRuntime(ServedTables[MirroredTable]):
    """The API's runtime on ``shotclock hall`` (clock_service.edges.api.ServedRuntime): the
    mirrored tables, read-only; commands are forwarded to each table's own service."""

    read_only = True  # tables are created and archived on their own Pi

    def __init__(self, store: Store, time: TimeSource, hub: Hub, target: BrokerTarget,
                 settings: Settings, *, client_id: str | None = None,
                 forward_timeout_s: float = FORWARD_TIMEOUT_S, tick_s: float = TICK_S) -> None:
        super().__init__(store, time, hub, store_wait_s=settings.store_wait_s)
        self.target = target
        self.settings = settings
        self.topics = Topics(target.hall)
        # A broker that binds client ids to accounts (use_username_as_clientid, the shipped
        # config) gives the hall its user name as its id: use it, so its reply topic
        # (replies/<client id>) is the one the ACL lets it read.
        self.client_id = client_id or target.username or (
            f"shotclock-hall-{target.hall}-{socket.gethostname()}-{settings.port}")[:64]
        self.reply_topic = self.topics.replies_to(self.client_id)
        self.forward_timeout_s = forward_timeout_s
        self.tick_s = tick_s
        self.mirrors: dict[str, TableMirror] = {}
        self.online: dict[str, bool] = {}
        self.conn: Connection | None = None
        self.connects = 0
        self.error: str | None = None
        self.bad_messages = 0
        self._stored: set[str] = set()  # tables with a row in the hall's store
        # Digests of the last events appended per table: an event heard again under a seq
        # must be the same one (else table_diverged); older ones are checked in the store.
        self._digests: dict[str, dict[int, str]] = {}
        self._checking: dict[str, set[int]] = {}
        self._checks: set[asyncio.Task[None]] = set()
        self.unchecked_duplicates = 0
        self.refused_tables = 0
        # Each table's signing key as first seen (its fingerprint), and signatures checked.
        self.keys: dict[str, str] = {}
        self.signatures_verified = 0
        self.diverged: set[str] = set()
        self.skews: dict[str, ClockSkew] = {}
        self._pending: dict[bytes, asyncio.Future[dict[str, Any]]] = {}
        self._waiters: dict[str, list[tuple[int, asyncio.Future[None]]]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        # Tables whose mirrored state is not live, and since when (hall clock, unix ms).
        self._stale: dict[str, float] = {}

    # -- lifecycle ----------------------------------------------------------------------------
    async def start(self, default_table: str | None = None) -> None:
        """Load the mirrored tables from the store, then follow the broker."""
        loop = asyncio.get_running_loop()
        self._open_store()
        now = self.time.now_ms()
        for stored in await asyncio.to_thread(self.store.load_tables):
            state = stored.core.get("state") or {}
            self.tables[stored.id] = MirroredTable(
                stored.id, seq=stored.seq, published_seq=stored.seq, published_state=state,
                config=stored.config)
            self.mirrors[stored.id] = TableMirror(stored.id, stored.seq, now=now, hold=HOLD,
                                                  hold_bytes=HOLD_BYTES)
            self._stale[stored.id] = now  # not heard from yet
            self._stored.add(stored.id)
        self._running = True
        self.health.register("mqtt", self._mqtt_status)
        self._tasks = [
            loop.create_task(supervise("the hall's MQTT follower", self._follow,
                                       running=lambda: self._running,
                                       on_death=self._follower_died), name="hall-mqtt"),
            loop.create_task(supervise("the hall's replay ticker", self._tick,
                                       running=lambda: self._running), name="hall-tick")]

    def _follower_died(self, why: str) -> None:
        self.error = f"the broker loop ended ({why}); restarted"
        self.health.fault(BROKER_FAULT, component="mqtt", code="broker_unreachable",
                          message=f"the hall's connection to {self.target.redacted()} ended "
                          f"({why}); it is connecting again")

    async def stop(self) -> None:
        self._running = False
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.conn is not None:
            await self.conn.disconnect()
        await asyncio.to_thread(self.store.close)

    # -- read-only for tables -----------------------------------------------------------------
    async def create_table(self, table_id: str, players: list[str], **kwargs: Any,
                           ) -> dict[str, Any]:
        raise HallReadOnly(
            f"the hall mirrors the tables of hall {self.target.hall!r}; create table "
            f"{table_id!r} on the service of its own Pi (POST /api/tables there)")

    async def archive_table(self, table_id: str) -> dict[str, Any]:
        raise HallReadOnly(
            f"the hall mirrors the tables of hall {self.target.hall!r}; archive table "
            f"{table_id!r} on the service of its own Pi (DELETE /api/tables/{table_id} there)")

    async def command(self, table_id: str, command: Command) -> dict[str, Any]:
        """Forward the command to the table's own service over MQTT; its reply is ours.
        Answers once the hall's mirror holds the command's events (read your writes)."""
        self.table(table_id)
        conn = self.conn
        if conn is None:
            raise TableUnreachable(
                f"the hall is not connected to the MQTT broker ({self.error or 'connecting'})"
                f"; table {table_id}'s own console on its Pi still works")
        if not self.online.get(table_id, False):
            raise TableUnreachable(
                f"table {table_id}'s service is offline (not connected to the broker); the "
                "hall shows its last known state, and its own console on its Pi still works")
        # The hall's own credential (its SHOTCLOCK_REFEREE_TOKEN, a director's on every
        # table) and the referee's identity: the hall's API has set by/source from the
        # referee's credential on the hall; the table keeps a director's source as given.
        payload: dict[str, Any] = {"type": "command", **command_payload(command)}
        payload["source"] = f"hall/{command.source or 'http'}"[:200]
        if self.settings.referee_token is not None:
            payload["token"] = self.settings.referee_token
        correlation = uuid.uuid4().bytes
        reply: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[correlation] = reply
        try:
            conn.publish(self.topics.commands(table_id), encode(payload), qos=1,
                         response_topic=self.reply_topic, correlation=correlation)
            answer = await asyncio.wait_for(reply, self.forward_timeout_s)
        except TimeoutError:
            raise TableUnreachable(f"table {table_id} did not answer within "
                                   f"{self.forward_timeout_s:g} s") from None
        except ConnectionError as exc:
            raise TableUnreachable(f"lost the broker while forwarding to table {table_id}: "
                                   f"{exc}") from None
        finally:
            self._pending.pop(correlation, None)
        if answer.get("type") == "ack" and isinstance(answer.get("state"), dict):
            state: dict[str, Any] = answer["state"]
            await self._caught_up(table_id, int(state.get("seq", 0)))
            return state
        error = answer.get("error") or {}
        status = answer.get("status")
        raise ForwardedError(status if isinstance(status, int) else 422,
                             str(error.get("code", "error")), str(error.get("message", "")),
                             error.get("rule"))

    async def _caught_up(self, table_id: str, seq: int) -> None:
        table = self.tables.get(table_id)
        if table is None or table.published_seq >= seq:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(table_id, []).append((seq, waiter))
        try:
            await asyncio.wait_for(waiter, CAUGHT_UP_TIMEOUT_S)
        except TimeoutError:
            log.warning("table %s: the hall's mirror is not at seq %d after %g s", table_id,
                        seq, CAUGHT_UP_TIMEOUT_S)

    # -- the broker ---------------------------------------------------------------------------
    async def _follow(self) -> None:
        backoff = BACKOFF_MIN_S
        topics = self.topics
        while self._running:
            # A persistent session: while the hall restarts, the broker keeps its events.
            conn = Connection(self.target, self.client_id, on_message=self._on_message,
                              clean_start=False, session_expiry_s=SESSION_EXPIRY_S)
            try:
                await conn.connect()
                await conn.subscribe([(topics.every_table("events"), 1),
                                      (topics.every_table("state"), 1),
                                      (topics.every_table("status"), 1),
                                      (self.reply_topic, 1)])
                self.conn = conn
                self.connects += 1
                self.error = None
                self.health.clear(BROKER_FAULT)
                self._refresh_all()
                log.info("hall %s: following %s", self.target.hall, self.target.redacted())
                backoff = BACKOFF_MIN_S
                ended = await conn.closed
                if ended is None:
                    return
                self.error = str(ended)
            except (ConnectionError, OSError) as exc:
                self.error = str(exc)
                await conn.disconnect()
            except asyncio.CancelledError:
                if not self._running or cancelled_from_outside():
                    raise
                # A future of this connection cancelled under us (its client id taken over
                # half-way through subscribing): a lost connection like any other.
                self.error = "the connection was cancelled under the hall"
                conn._abort(ConnectionError(self.error))
            except Exception as exc:  # a bug must not end the mirror for good: log, retry
                log.exception("hall %s: following the broker failed", self.target.hall)
                self.error = f"{type(exc).__name__}: {exc}"
                conn._abort(exc)
            finally:
                if not conn.closed.done():  # cancelled (stop) half-way: drop the socket
                    conn._abort(None)
                self.conn = None
                self._refresh_all()
                for future in self._pending.values():
                    if not future.done():
                        future.set_exception(ConnectionError(self.error or "disconnected"))
            self.health.fault(
                BROKER_FAULT, component="mqtt", code="broker_unreachable",
                message=f"the hall cannot reach the MQTT broker {self.target.redacted()} "
                f"({self.error}): it shows the tables as they were; the tables keep time by "
                "themselves and the hall catches up when the broker is back")
            await asyncio.sleep(backoff * random.uniform(0.5, 1.0))
            backoff = min(backoff * 2, BACKOFF_MAX_S)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.tick_s)
            now = self.time.now_ms()
            for table_id, mirror in self.mirrors.items():
                since = mirror.tick(now)
                if since is not None:
                    self._ask(table_id, since)

    def _ask(self, table_id: str, since: int) -> None:
        """Ask the table to send its events after ``since`` again (on its events topic)."""
        conn = self.conn
        if conn is None or not self.online.get(table_id, False):
            return  # asked again by the tick once it is back
        mirror = self.mirrors[table_id]
        log.info("table %s: asking for the events after %d (the table has %d)", table_id,
                 since, mirror.known)
        with contextlib.suppress(ConnectionError):  # gone: asked again on the next one
            conn.publish(self.topics.replay(table_id),
                         encode({"type": "replay", "since": since}), qos=1)

    def _mirror(self, table_id: str) -> TableMirror:
        mirror = self.mirrors.get(table_id)
        if mirror is None:
            if len(self.mirrors) >= self.settings.max_tables:
                # Invented table ids must not grow the hall without bound (issue 20,
                # finding 2): past the table cap a new id is refused, and said so.
                self._too_many(table_id)
                raise ValueError(f"table {table_id!r} would be past the hall's "
                                 f"{self.settings.max_tables} tables")
            mirror = self.mirrors[table_id] = TableMirror(
                table_id, 0, now=self.time.now_ms(), hold=HOLD, hold_bytes=HOLD_BYTES)
        return mirror

    def _too_many(self, table_id: str) -> None:
        self.refused_tables += 1
        self.health.fault(
            "mqtt.too_many_tables", component="mqtt", code="too_many_tables",
            message=f"the broker carries more tables than the hall mirrors "
            f"({self.settings.max_tables}, SHOTCLOCK_MAX_TABLES); table {table_id!r} and "
            "later ones are not shown. An account that may publish tables it does not own "
            "is the likely cause: see deploy/mosquitto/accounts.py")

    def _on_message(self, message: Message) -> None:
        """Every message is read on its own: whatever is wrong with one (unreadable, too
        big or deep, a wrong table, a bug of ours) is counted and logged, a retained one is
        cleared where the hall's account may, and the next message is read as usual
        (issue 20, finding 2: a poison retained state once kept the hall down)."""
        try:
            self._take(message)
        except Exception as exc:  # RecursionError and any bug included: never the loop's
            self.bad_messages += 1
            log.warning("unreadable message on %s (%s: %s)%s", message.topic[:200],
                        type(exc).__name__, str(exc)[:200],
                        "; retained: clearing it" if message.retain else "")
            if message.retain:
                self._clear_retained(message.topic)

    def _clear_retained(self, topic: str) -> None:
        """Clear a retained message the hall cannot read, if its account has the right (the
        shipped ACL gives it none on a table's topics: the broker refuses, and the message
        stays skipped)."""
        conn = self.conn
        if conn is None or self.topics.parse(topic) is None:
            return
        with contextlib.suppress(ConnectionError):
            conn.publish(topic, b"", qos=1, retain=True)

    def _take(self, message: Message) -> None:
        parsed = self.topics.parse(message.topic)
        if parsed is None:
            if message.topic == self.reply_topic:
                self._on_reply(message)
            return
        table_id, kind = parsed
        if not message.payload:
            return  # a retained message cleared (a table taken out of the hall)
        if kind == "status":
            if message.payload not in (ONLINE, OFFLINE):
                raise ValueError(f"status must be online or offline, got "
                                 f"{message.payload[:40]!r}")
            if table_id not in self.tables and table_id not in self.mirrors:
                self._mirror(table_id)  # counts against the table cap
            self._set_online(table_id, message.payload == ONLINE)
            return
        if kind not in ("events", "state"):
            return
        body, error = read_message(message.payload, self.settings.max_message_bytes)
        if body is None:
            raise ValueError(f"{error['code'] if error else 'invalid'}: "
                             f"{error['message'] if error else ''}")
        if kind == "events":
            self._on_event(table_id, message.payload.decode("utf-8"), body)
        else:
            seq = body.get("seq")
            if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq <= MAX_SEQ:
                raise ValueError(f"state with seq {seq!r}")
            self._caught_up_state(table_id, body)
            since = self._mirror(table_id).state(seq, self.time.now_ms())
            if since is not None:
                self._ask(table_id, since)

    def _caught_up_state(self, table_id: str, state: dict[str, Any]) -> None:
        """The table's retained state, when it is of the last event the hall has: events
        sent again from the table's store (a catch-up) carry no state (only live events
        do), so the hall's cards take the state from here once caught up."""
        table = self.tables.get(table_id)
        if (table is None or state.get("seq") != table.published_seq
                or table.published_state.get("seq") == table.published_seq):
            return
        table.published_state = state
        self._tell_hall(table_id)

    def _on_event(self, table_id: str, text: str, event: dict[str, Any]) -> None:
        seq = event.get("seq")
        if (isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq <= MAX_SEQ
                or event.get("table") != table_id or not isinstance(event.get("type"), str)
                or not isinstance(event.get("data", {}), dict)):
            raise ValueError(f"event with seq {seq!r} for table {event.get('table')!r}")
        if event["type"] == "table.archived":
            archived_as = (event.get("data") or {}).get("archived_as")
            if not isinstance(archived_as, str) or not re.fullmatch(
                    rf"{re.escape(table_id)}~[0-9]{{1,9}}", archived_as):
                raise ValueError(f"table.archived with archived_as {archived_as!r} "
                                 f"(must be {table_id}~N)")
        if table_id in self.diverged:
            return  # never mix two logs under one table id
        mirror = self._mirror(table_id)
        digest = event_digest(event)
        if seq <= mirror.seq:
            # Heard before: the same event again (a reconnect, a replay), or another one
            # under the same seq, which is never dropped silently (finding 2).
            self._check_duplicate(table_id, seq, digest)
        now = self.time.now_ms()
        verdict = mirror.event(seq, (text, event), now, size=len(text))
        if verdict.append:
            self._remember(table_id, [item for _, item in verdict.append])
            self._append(table_id, [item for _, item in verdict.append])
            if len(verdict.append) == 1 and mirror.behind == 0 and isinstance(
                    event.get("at"), int | float):  # heard live, in order: a clock sample
                self._clock_sample(table_id, float(event["at"]), now)
        if verdict.ask is not None:
            self._ask(table_id, verdict.ask)

    def _remember(self, table_id: str, items: list[tuple[str, dict[str, Any]]]) -> None:
        """Keep the digests of the last events appended: a duplicate is checked against
        them on the loop; an older one against the store, off the loop."""
        recent = self._digests.setdefault(table_id, {})
        for _, event in items:
            recent[int(event["seq"])] = event_digest(event)
        while len(recent) > RECENT_DIGESTS:
            del recent[next(iter(recent))]

    def _check_duplicate(self, table_id: str, seq: int, digest: str) -> None:
        known = self._digests.get(table_id, {}).get(seq)
        if known is not None:
            if known != digest:
                self._diverged(table_id, seq)
            return
        checking = self._checking.setdefault(table_id, set())
        if len(checking) >= MAX_STORE_CHECKS or seq in checking:
            self.unchecked_duplicates += 1  # counted (health), checked on a later copy
            return
        checking.add(seq)

        async def check() -> None:
            try:
                rows = await asyncio.to_thread(self.store.event_texts, table_id, seq - 1,
                                               seq, 1)
                if rows and rows[0][0] == seq and event_digest(
                        json.loads(rows[0][1])) != digest and table_id in self.tables:
                    self._diverged(table_id, seq)
            except Exception:
                log.exception("table %s: checking a duplicate of event %d failed", table_id,
                              seq)
            finally:
                checking.discard(seq)

        task = asyncio.get_running_loop().create_task(check())
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    def _clock_sample(self, table_id: str, at: float, now: float) -> None:
        skew = self.skews.get(table_id)
        if skew is None:
            skew = self.skews[table_id] = ClockSkew()
        skew.sample(at, now)
        off = skew.off()
        key = f"mqtt.clock.{table_id}"
        if off is None:
            if skew.offset_ms is not None:
                self.health.clear(key)
            return
        self.health.fault(
            key, component="mqtt", code="table_clock_off", table=table_id,
            message=f"table {table_id}'s clock is {abs(off) / 1000:.0f} s "
            f"{'behind' if off > 0 else 'ahead of'} the hall's: the hall's pages count its "
            "shots down to the wrong instant (its own digits are right); run NTP on its Pi "
            "from the hall server")

    def _diverged(self, table_id: str, seq: int = 1) -> None:
        if table_id in self.diverged:
            return
        self.diverged.add(table_id)
        self._refresh(table_id)
        log.error("table %s: event %d differs from the hall's copy", table_id, seq)
        what = ("started a new event log (its first event differs from the hall's: a new "
                "store on its Pi, or two services with the same table id)") if seq == 1 else (
                f"sent an event {seq} that differs from the one the hall stored at that seq "
                "(two services with one table id, a restored store on its Pi, or a forged "
                "event: check which accounts may publish its topics)")
        self.health.fault(
            f"mqtt.diverged.{table_id}", component="mqtt", code="table_diverged",
            table=table_id,
            message=f"table {table_id} {what}. The hall keeps the log it has and does not "
            "mirror the other one; to follow the table's log, move the hall's store aside "
            "(SHOTCLOCK_HALL_DB) and restart the hall")

    def _on_reply(self, message: Message) -> None:
        future = self._pending.get(message.correlation or b"")
        if future is not None and not future.done():
            try:
                future.set_result(json.loads(message.payload))
            except ValueError:
                future.set_result({"type": "error", "error": {
                    "code": "invalid_json", "message": "the table's reply was not JSON"}})

    def _set_online(self, table_id: str, online: bool) -> None:
        was = self.online.get(table_id)
        self.online[table_id] = online
        if was != online and table_id in self.tables:  # a retained status of no table: no
            self._refresh(table_id)  # first: the fault's status message carries it too
            self._show_online(table_id, online)

    def _show_online(self, table_id: str, online: bool) -> None:
        key = f"mqtt.table.{table_id}"
        if online:
            self.health.clear(key)
            log.info("table %s: online", table_id)
        else:
            self.health.fault(
                key, component="mqtt", code="table_offline", table=table_id,
                message=f"table {table_id}'s service is not connected to the broker (its "
                "network or its Pi is down): the hall shows its last known state; the "
                "table keeps time by itself and catches the hall up when it is back")

    # -- the hall's store ---------------------------------------------------------------------
    def _append(self, table_id: str, items: list[tuple[str, dict[str, Any]]]) -> None:
        wires = [event for _, event in items]
        # As received: live ones with their state; a catch-up's without its ``batch``
        # (kept in the store's column, so the match's digest is the table's own).
        lean = [lean_text(event) if "state" in event or "batch" in event else text
                for text, event in items]
        texts = [text if "state" in event else plain
                 for (text, event), plain in zip(items, lean, strict=True)]
        state = wires[-1].get("state")
        if not isinstance(state, dict):
            # Sent again from the table's store (a catch-up): replayed events carry no
            # state; keep the last known one until the retained state brings it up to date.
            known = self.tables.get(table_id)
            state = known.published_state if known is not None else {}
        last = wires[-1]["seq"]
        loop = asyncio.get_running_loop()

        def on_loop(error: BaseException | None) -> None:
            if error is not None:
                log.error("table %s: the hall could not store events up to %d: %s",
                          table_id, last, error)
                return
            self._durable(table_id, wires, texts, state, config)

        def done(error: BaseException | None) -> None:  # from the writer thread
            loop.call_soon_threadsafe(on_loop, error)

        config: dict[str, Any] = {}
        archived = next((w for w in wires if w.get("type") == "table.archived"), None)
        if table_id not in self._stored:
            first = wires[0]
            if first.get("type") == "table.created":
                config = {k: v for k, v in (first.get("data") or {}).items() if k != "table"}
            self.store.create_table(table_id, config, {"state": state}, wires, last,
                                    created_at=int(first.get("at", 0)), done=done, texts=lean)
            self._stored.add(table_id)
        else:
            self.store.append(table_id, wires, {"state": state}, last, done=done, texts=lean)
        if archived is not None:
            self._archive(table_id, str((archived.get("data") or {}).get("archived_as")),
                          int(archived.get("at", 0)))

    def _archive(self, table_id: str, archive_id: str, at: int) -> None:
        """The table was archived on its own service (DELETE there): archive the mirror the
        same way, right after its last event in the store's order. The id is free at once:
        what comes next under it is a new table's log, from seq 1."""
        for mirrored in (self.mirrors, self._digests, self.skews):
            mirrored.pop(table_id, None)
        self._stored.discard(table_id)
        self.diverged.discard(table_id)
        loop = asyncio.get_running_loop()
        old = self.tables.get(table_id)

        def on_loop(error: BaseException | None) -> None:
            if error is not None:
                log.error("table %s: the hall could not archive its mirror as %s: %s",
                          table_id, archive_id, error)
            if self.tables.get(table_id) is old:
                self.tables.pop(table_id, None)
                self._stale.pop(table_id, None)
            for key in (f"mqtt.table.{table_id}", f"mqtt.clock.{table_id}",
                        f"mqtt.diverged.{table_id}"):
                self.health.clear(key)
            self._archived(table_id, archive_id)
            log.info("table %s: archived as %s (on its own service)", table_id, archive_id)

        def done(error: BaseException | None) -> None:  # from the writer thread
            loop.call_soon_threadsafe(on_loop, error)

        self.store.archive_table(table_id, archive_id, at, done=done)

    def _durable(self, table_id: str, wires: list[dict[str, Any]], texts: list[str],
                 state: dict[str, Any], config: dict[str, Any]) -> None:
        table = self.tables.get(table_id)
        if table is None:
            table = self.tables[table_id] = MirroredTable(table_id, config=config)
            if not self.online.get(table_id, True):
                self._show_online(table_id, False)  # heard offline before its first event
            self._refresh(table_id, tell=False)  # told below
        table.seq = table.published_seq = wires[-1]["seq"]
        table.published_state = state
        self.hub.publish(table_id, wires, texts)
        self._tell_hall(table_id)  # the /ws/hall feed (api.HallSession)
        for wire in wires:
            if wire.get("type") == SIGNED_EVENT:
                self._check_signature(table_id, wire.get("data") or {})
        for publisher in self._publishers:
            try:
                publisher(table_id, wires, texts)
            except Exception:
                log.exception("table %s: publisher failed", table_id)
        waiters = self._waiters.get(table_id)
        if waiters:
            for seq, waiter in waiters:
                if seq <= table.published_seq and not waiter.done():
                    waiter.set_result(None)
            self._waiters[table_id] = [(s, w) for s, w in waiters if not w.done()]

    def _check_signature(self, table_id: str, data: dict[str, Any]) -> None:
        """A table signed a match (clock_service/service/signing.py): check it against the hall's
        own copy of the events, off the loop, and that the table signs with the key it
        used first (a new key is said, not trusted silently)."""
        fingerprint = data.get("fingerprint")
        known = self.keys.setdefault(table_id, str(fingerprint))
        if known != fingerprint:
            self.health.fault(
                f"mqtt.key.{table_id}", component="mqtt", code="table_key_changed",
                table=table_id, message=f"table {table_id} signed a match with another key "
                f"({fingerprint}; before: {known}): a new Pi or SD card, or someone else "
                "signing for it; check with the director")
        store = self.store

        def check() -> str | None:
            return check_signed(store.reader_connection(), table_id, data)

        async def run() -> None:
            try:
                problem = await asyncio.to_thread(check)
            except Exception:
                log.exception("table %s: checking a match signature failed", table_id)
                return
            if problem is None:
                self.signatures_verified += 1
                return
            log.error("table %s: match signature not verified: %s", table_id, problem)
            self.health.fault(
                f"mqtt.signature.{table_id}", component="mqtt", code="record_unverified",
                table=table_id, message=f"table {table_id}'s signed match record does not "
                f"verify on the hall: {problem}")

        task = asyncio.get_running_loop().create_task(run())
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    # -- liveness of the mirrored states (the hall feed's cards) ------------------------------
    def _is_live(self, table_id: str) -> bool:
        return (self.conn is not None and self.online.get(table_id) is True
                and table_id not in self.diverged)

    def _refresh(self, table_id: str, *, tell: bool = True) -> None:
        """Note whether the table's mirrored state is live; tell the hall feed if that
        changed (a table going offline sends no event: its card must change anyway)."""
        live = self._is_live(table_id)
        if live == (table_id not in self._stale):
            return
        if live:
            del self._stale[table_id]
        else:
            self._stale[table_id] = self.time.now_ms()
        if tell:
            self._tell_hall(table_id)
            if self.hub.count(table_id):  # the table's own pages: stop counting, or again
                self.hub.send(table_id, encode(self.status_message(table_id)))

    def _refresh_all(self) -> None:
        for table_id in list(self.tables):
            self._refresh(table_id)

    def liveness(self, table_id: str) -> dict[str, Any]:
        """Live only while the table's service and the broker are there: one source for the
        hall cards and the table's own snapshot and status messages (display, overlay and
        console opened through the hall)."""
        since = self._stale.get(table_id)
        return {"live": since is None, "stale_since": since}

    def snapshot(self, table_id: str) -> tuple[int, dict[str, Any]]:
        """The last known state; a running countdown not brought past the instant the
        table went stale (never a countdown from old data)."""
        seq, state = super().snapshot(table_id)
        since = self._stale.get(table_id)
        if since is not None and state.get("phase") == ClockPhase.RUNNING and state.get(
                "deadline") is not None:
            state["remaining_ms"] = max(0, int(state["deadline"] - since + 0.999999))
        return seq, state

    def _mqtt_status(self) -> dict[str, Any]:
        return {"broker": self.target.redacted(), "hall": self.target.hall,
                "client_id": self.client_id,
                "connected": self.conn is not None, "connects": self.connects,
                "error": self.error, "tables": len(self.mirrors),
                "online": sum(1 for v in self.online.values() if v),
                "behind": sum(m.behind for m in self.mirrors.values()),
                "duplicates": sum(m.duplicates for m in self.mirrors.values()),
                "asks": sum(m.asks for m in self.mirrors.values()),
                "diverged": sorted(self.diverged),
                "clock_offset_ms": {t: s.offset_ms for t, s in self.skews.items()},
                "bad_messages": self.bad_messages,
                "held": sum(m.held for m in self.mirrors.values()),
                "unchecked_duplicates": self.unchecked_duplicates,
                "refused_tables": self.refused_tables,
                "signatures_verified": self.signatures_verified,
                "table_keys": dict(self.keys)}
