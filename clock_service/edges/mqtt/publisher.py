"""``shotclock serve`` on a broker (``SHOTCLOCK_MQTT_URL``): the thin adapter around
:class:`~clock_service.edges.mqtt.feed.TableFeed`.

One MQTT connection per table, each on its own task: a connection's last will is the
table's retained ``offline`` status, and MQTT allows one will per connection. For every
table it

- publishes ``online`` (retained) on connect, then every durable event in seq order, QoS 1,
  and the retained state once caught up, as its feed says; records the last event the
  broker acknowledged in the store (at most every ``flush_s``; a restart then sends again
  from there, and consumers drop duplicates by seq);
- takes commands on ``.../commands``: the same JSON as on the WebSocket, with the referee
  ``token`` in the payload when the service has one; the reply (``ack`` or ``error``, as
  on the WebSocket) goes to the MQTT 5 response topic with its correlation data, or to
  ``.../replies``;
- takes ``{"type": "replay", "since": N}`` on ``.../replay`` (only the hall's account may
  write it), which sends events after N again (the hall asks for what a broker restart
  lost): a few a second per table, a request covered by a replay in progress merged.

The clock never waits on any of it: the runtime tells the publisher after each commit
(``runtime.subscribe``) and that call only queues; a broker that is down, slow or
refusing costs the loop nothing but a failed connect in a worker thread now and then.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from typing import Any

from clock_service.edges.mqtt.connection import (
    SESSION_TAKEN_OVER,
    ConnectError,
    Connection,
    Message,
)
from clock_service.edges.mqtt.feed import Read, Send, SendState, TableFeed
from clock_service.edges.mqtt.topics import OFFLINE, ONLINE, BrokerTarget, Topics
from clock_service.service.auth import Authority
from clock_service.service.envelope import Envelope, message_kind
from clock_service.service.hub import encode
from clock_service.service.limits import TokenBucket, read_message
from clock_service.service.runtime import Runtime
from clock_service.service.settings import Settings
from clock_service.service.supervisor import cancelled_from_outside, supervise
from clock_service.service.wire.fields import MAX_SEQ

__all__ = ["MqttPublisher", "TablePublisher"]

log = logging.getLogger(__name__)

FLUSH_S = 0.5
BACKOFF_MIN_S = 0.2
BACKOFF_MAX_S = 2.0
BROKER_FAULT = "mqtt.broker"
REPLAY_RATE = 0.5
REPLAY_BURST = 2


def client_id_of(hall: str, table_id: str) -> str:
    return f"shotclock-{hall}-table-{table_id}"


class TablePublisher:
    """One table's connection: connect, publish what the feed says, reconnect forever."""

    def __init__(self, owner: MqttPublisher, table_id: str, *, acked: int, latest: int,
                 state: dict[str, Any] | None = None) -> None:
        self.owner = owner
        self.table_id = table_id
        self.feed = TableFeed(table_id, acked=acked, latest=latest, state=state,
                              window=owner.window)
        self.topics = owner.topics
        self.conn: Connection | None = None
        self.error: str | None = None  # why the last connection ended or failed
        self.refused = False  # the broker said no to the connection (CONNACK failure)
        self.connects = 0
        self.commands = TokenBucket(owner.settings.command_rate, owner.settings.command_burst)
        # Replays re-send from the store: a few a second at most, whoever asks (the hall
        # asks at most every 2 s per table); the rest are dropped and counted.
        self.replays = TokenBucket(REPLAY_RATE, REPLAY_BURST)
        self.replays_refused = 0
        self._mids: dict[int, int] = {}  # message id -> event seq, until the broker has it
        self._task: asyncio.Task[None] | None = None
        self._reads: set[asyncio.Task[None]] = set()
        self._stopping = False
        self.store_id = table_id  # where its events are in the store (archived: elsewhere)
        self._retire_task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            supervise(f"table {self.table_id}'s MQTT publisher", self._run,
                      running=lambda: not self._stopping, on_death=self._died),
            name=f"mqtt-{self.table_id}")

    def _died(self, why: str) -> None:
        self.error = f"the publisher loop ended ({why}); restarted"
        self.owner.connection_changed(self)

    async def stop(self, *, clear: bool = False) -> None:
        """Publish ``offline`` (a clean disconnect does not fire the will) and disconnect;
        ``clear``: delete the retained status and state instead (the table is gone)."""
        self._stopping = True
        retiring = self._retire_task
        if retiring is not None and retiring is not asyncio.current_task():
            retiring.cancel()
        conn = self.conn
        if conn is not None and not conn.closed.done():
            try:
                if clear:
                    conn.publish(self.topics.state(self.table_id), b"", retain=True)
                    conn.publish(self.topics.status(self.table_id), b"", retain=True)
                else:
                    conn.publish(self.topics.status(self.table_id), OFFLINE, retain=True)
                await conn.disconnect()
            except ConnectionError:
                pass
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for task in list(self._reads):
            task.cancel()

    def retire(self, store_id: str, done: Any = None) -> None:
        """The table was archived (its events now stored as ``store_id``): publish the rest
        of its log, then clear its retained messages and disconnect."""
        self.store_id = store_id

        async def finish() -> None:
            while self.feed.acked < self.feed.latest:
                await asyncio.sleep(0.05)
            await self.stop(clear=True)
            if done is not None:
                done(self)

        task = asyncio.get_running_loop().create_task(finish(), name=f"retire-{self.table_id}")
        self._retire_task = task

    # -- the connection -------------------------------------------------------------------------
    async def _run(self) -> None:
        backoff = BACKOFF_MIN_S
        target = self.owner.target
        while not self._stopping:
            conn = Connection(
                target, client_id_of(target.hall, self.table_id),
                on_message=self._on_message, on_ack=self._on_ack,
                will=(self.topics.status(self.table_id), OFFLINE), clean_start=True,
                keepalive_s=self.owner.keepalive_s, max_inflight=self.owner.window + 16)
            try:
                await conn.connect()
                # Clean session: commands sent while this table was away are not applied
                # late (a stale press could stop a clock at the wrong moment).
                await conn.subscribe([(self.topics.commands(self.table_id), 1),
                                      (self.topics.replay(self.table_id), 1)])
                conn.publish(self.topics.status(self.table_id), ONLINE, retain=True)
                self.conn = conn
                self.connects += 1
                # Events in flight within the broker's Receive Maximum, with room for the
                # state, the status and replies.
                self.feed.window = max(1, min(self.owner.window, conn.receive_maximum - 4))
                self.feed.connect()
                self.error = None
                self.refused = False
                self.owner.connection_changed(self)
                log.info("table %s: publishing to %s (from seq %d, %d behind)", self.table_id,
                         target.redacted(), self.feed.acked + 1, self.feed.behind)
                self.pump()
                backoff = BACKOFF_MIN_S
                ended = await conn.closed
                if ended is None:
                    return  # our own disconnect (stop)
                self.error = str(ended)
            except ConnectError as exc:
                self.error = str(exc)
                self.refused = exc.refused
                await conn.disconnect()
            except (ConnectionError, OSError) as exc:
                self.error = f"{type(exc).__name__}: {exc}"
                await conn.disconnect()
            except asyncio.CancelledError:
                if self._stopping or cancelled_from_outside():
                    raise
                # A future of this connection was cancelled under us (not a stop): the
                # connection is over; connect again like after any other loss.
                self.error = "the connection was cancelled under the publisher"
                conn._abort(ConnectError(self.error))
            except Exception as exc:  # a bug must not end publishing for good: log, retry
                log.exception("table %s: MQTT publisher failed", self.table_id)
                self.error = f"{type(exc).__name__}: {exc}"
                conn._abort(exc)
            finally:
                if not conn.closed.done():  # cancelled (stop) half-way: drop the socket
                    conn._abort(None)
                was_connected = self.conn is conn
                self.conn = None
                self._mids.clear()
                self.feed.disconnect()
            reason = getattr(conn.closed.result(), "reason", None) if conn.closed.done() \
                else None
            self.owner.connection_changed(self, taken_over=reason == SESSION_TAKEN_OVER)
            if was_connected:
                log.warning("table %s: lost the broker (%s); %d events wait; retrying",
                            self.table_id, self.error, self.feed.behind)
            await asyncio.sleep(backoff * random.uniform(0.5, 1.0))
            backoff = min(backoff * 2, BACKOFF_MAX_S)

    # -- publishing ------------------------------------------------------------------------------
    def durable(self, events: list[tuple[int, str]], state: dict[str, Any]) -> None:
        self.feed.durable(events, state)
        self.pump()

    def pump(self) -> None:
        """Do what the feed says now; never waits."""
        conn = self.conn
        if conn is None:
            return
        try:
            for step in self.feed.steps():
                if isinstance(step, Send):
                    mid = conn.publish(self.topics.events(self.table_id), step.text, qos=1)
                    self._mids[mid] = step.seq
                elif isinstance(step, SendState):
                    conn.publish(self.topics.state(self.table_id), encode(step.state), qos=1,
                                 retain=True)
                else:
                    self._read(step)
        except ConnectionError:
            pass  # the connection just ended: the next one starts again from ``acked``

    def _read(self, read: Read) -> None:
        async def load() -> None:
            store = self.owner.runtime.store
            count = read.last - read.first + 1
            # With each event's batch (Store.with_batch): a hall stores what the table did.
            rows = await asyncio.to_thread(store.event_texts, self.store_id, read.first - 1,
                                           read.last, count, batch=True)
            if not rows and self.store_id != self.table_id:  # renamed while we asked
                rows = await asyncio.to_thread(store.event_texts, self.table_id,
                                               read.first - 1, read.last, count, batch=True)
            self.feed.loaded(read, rows)
            self.pump()

        task = asyncio.get_running_loop().create_task(load())
        self._reads.add(task)
        task.add_done_callback(self._reads.discard)

    def _on_ack(self, mid: int, ok: bool) -> None:
        seq = self._mids.pop(mid, None)
        if seq is None:
            return  # a state, status or reply
        if not ok:
            # The broker refused it (the ACL): retrying at once cannot help. Say so, drop
            # the connection and try again later (the operator may fix the ACL).
            self.owner.refused(self, seq)
            if self.conn is not None:
                self.conn._abort(ConnectError(f"the broker refused event {seq} "
                                              "(not authorized to publish it)"))
            return
        before = self.feed.acked
        self.feed.acknowledged(seq)
        if self.feed.acked != before:
            self.owner.dirty.add(self.table_id)
        self.pump()

    # -- commands --------------------------------------------------------------------------------
    def _on_message(self, message: Message) -> None:
        parsed = self.owner.topics.parse(message.topic)
        if parsed == (self.table_id, "replay"):
            self._on_replay(message.payload)
            return
        if parsed != (self.table_id, "commands"):
            return
        # A task per message, created in arrival order: each command reaches the clock
        # (synchronously, at the start of runtime.command) in the order it came.
        task = asyncio.get_running_loop().create_task(self._answer(message))
        self._reads.add(task)
        task.add_done_callback(self._reads.discard)

    def _on_replay(self, payload: bytes) -> None:
        """A replay request on ``.../replay``, which only the hall's account may write (the
        shipped ACL): rate-limited per table, merged into one in progress. Never answered
        (the events come on the events topic)."""
        if self.replays.take() > 0:
            self.replays_refused += 1
            return
        message, _ = read_message(payload, self.owner.settings.max_message_bytes)
        since = None if message is None else message.get("since")
        if message is None or message.get("type", "replay") != "replay" or isinstance(
                since, bool) or not isinstance(since, int) or not 0 <= since <= MAX_SEQ:
            log.warning("table %s: unreadable replay request ignored", self.table_id)
            return
        if self.feed.replay(since):
            log.info("table %s: replaying the events after %d", self.table_id, since)
        self.pump()

    async def _answer(self, message: Message) -> None:
        reply = await self.owner.answer(self, message.payload)
        if reply is None:
            return
        conn = self.conn
        if conn is None:
            return
        topic = message.response_topic
        if topic is None or not self.topics.is_reply_topic(topic):
            topic = self.topics.replies(self.table_id)
        with contextlib.suppress(ConnectionError):  # gone: the requester times out
            conn.publish(topic, encode(reply), qos=1, correlation=message.correlation)

    def status(self) -> dict[str, Any]:
        return {"connected": self.conn is not None, "acked": self.feed.acked,
                "latest": self.feed.latest, "behind": self.feed.behind,
                "sent": self.feed.sent, "connects": self.connects, "error": self.error,
                "skipped": self.feed.skipped, "resyncs": self.feed.resyncs,
                "replays": self.feed.replays, "replays_merged": self.feed.merged,
                "replays_refused": self.replays_refused}


class MqttPublisher:
    """Every table of a runtime on a broker. Compose it in ``cli.py``::

        publisher = MqttPublisher(runtime, parse_url(url), settings)
        await publisher.start()     # after runtime.start()
        ...
        await publisher.close()     # before runtime.stop()
    """

    def __init__(self, runtime: Runtime, target: BrokerTarget, settings: Settings, *,
                 authority: Authority | None = None, window: int = 32,
                 keepalive_s: int = 10, flush_s: float = FLUSH_S) -> None:
        self.runtime = runtime
        # Who may command (the service's credentials, issued tokens included; a test's
        # publisher alone: the settings' token only).
        self.envelope = Envelope(runtime, authority or Authority(settings.referee_token))
        self.target = target
        self.settings = settings
        self.topics = Topics(target.hall)
        self.window = window
        self.keepalive_s = keepalive_s
        self.flush_s = flush_s
        self.tables: dict[str, TablePublisher] = {}
        self.dirty: set[str] = set()  # tables whose acked seq the store has not got yet
        # Archived tables finishing their log, by id: a new table of that id connects (with
        # the same client id) only once its predecessor is gone.
        self._retiring: dict[str, TablePublisher] = {}
        self._acked: dict[str, int] = {}
        self._flusher: asyncio.Task[None] | None = None

    async def start(self) -> None:
        store = self.runtime.store
        self._acked = await asyncio.to_thread(store.published, self.target.key)
        self.runtime.subscribe(self.on_durable)
        health = getattr(self.runtime, "health", None)
        if health is not None:
            health.register("mqtt", self.status)
        for table_id, table in self.runtime.tables.items():
            self._add(table_id, latest=table.published_seq, state=table.published_state or None)
        self._flusher = asyncio.get_running_loop().create_task(self._flush_loop())

    async def close(self) -> None:
        self.runtime.unsubscribe(self.on_durable)
        await asyncio.gather(*(t.stop() for t in [*self.tables.values(),
                                                   *self._retiring.values()]))
        if self._flusher is not None:
            self._flusher.cancel()
        self.flush()
        self.runtime.store.flush_published()  # on its own commit: none may follow

    def _add(self, table_id: str, latest: int,
             state: dict[str, Any] | None = None) -> TablePublisher:
        table = TablePublisher(self, table_id, acked=self._acked.get(table_id, 0), latest=latest,
                               state=state)
        self.tables[table_id] = table
        if table_id not in self._retiring:
            table.start()
        return table

    def _retired(self, table: TablePublisher) -> None:
        if self._retiring.get(table.table_id) is table:
            del self._retiring[table.table_id]
        successor = self.tables.get(table.table_id)
        if successor is not None and successor._task is None:
            successor.start()

    # -- from the runtime (loop thread, after each commit) ----------------------------------------
    def on_durable(self, table_id: str, wires: list[dict[str, Any]], texts: list[str]) -> None:
        table = self.tables.get(table_id)
        if table is None:  # a new table: its log starts with these events
            table = self._add(table_id, latest=wires[0]["seq"] - 1)
        table.durable([(w["seq"], t) for w, t in zip(wires, texts, strict=True)],
                      wires[-1]["state"])
        archived = next((w for w in wires if w["type"] == "table.archived"), None)
        if archived is not None:
            # Taken out of the hall (DELETE /api/tables/{id}): its log, up to table.archived,
            # still goes out; then its retained state and status are cleared. The id is
            # free: a new table of that id is a new log, published from seq 1.
            del self.tables[table_id]
            self.dirty.discard(table_id)
            self._acked.pop(table_id, None)  # the store forgets it too (archive_table)
            self._retiring[table_id] = table
            table.retire(str(archived["data"].get("archived_as") or table_id),
                         done=self._retired)

    # -- the acknowledged seqs, to the store ------------------------------------------------------
    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self.flush_s)
            self.flush()

    def flush(self) -> None:
        for table_id in sorted(self.dirty):
            table = self.tables.get(table_id)
            if table is not None:
                self.runtime.store.mark_published(self.target.key, table_id, table.feed.acked)
        self.dirty.clear()

    # -- commands over MQTT ---------------------------------------------------------------------
    async def answer(self, table: TablePublisher, payload: bytes) -> dict[str, Any] | None:
        """The reply to one message on a table's commands topic (None: no reply)."""
        settings = self.settings
        # Every message on the commands topic costs the table's bucket first, before its
        # token is looked at: guessing tokens is as slow as commanding (issue 20, finding
        # 4), and junk costs what a command costs.
        wait = table.commands.take()
        if wait > 0:
            return {"type": "error", "status": 429, "error": {
                "code": "rate_limited", "message": f"more than {table.commands.rate:g} "
                f"messages a second on this table's commands; retry in {wait:.2f} s"}}
        message, error = read_message(payload, settings.max_message_bytes)
        if message is None:
            return {"type": "error", "error": error}
        if message_kind(message) == "replay":
            return {"type": "error", "id": message.get("id"), "status": 403, "error": {
                "code": "replay_not_here",
                "message": f"replay requests go on {self.topics.replay(table.table_id)}, "
                "which only the hall's broker account may write"}}
        offered = message.get("token")
        return await self.envelope.answer(
            message, table_id=table.table_id, channel="mqtt",
            offered=offered if isinstance(offered, str) else None,
            without_token="commands over MQTT need a referee or director token in the "
                          "payload: {\"command\": ..., \"token\": ...}",
            unknown_hint=", {\"type\": \"replay\", \"since\": N}")

    # -- status and faults (TEAM convention 2) ---------------------------------------------------
    def _health(self) -> Any:
        return getattr(self.runtime, "health", None)

    def connection_changed(self, table: TablePublisher, *, taken_over: bool = False) -> None:
        health = self._health()
        if health is None:
            return
        key = f"mqtt.table.{table.table_id}"
        if taken_over:
            health.fault(key, component="mqtt", code="mqtt_table_conflict", table=table.table_id,
                         message=f"another client took over table {table.table_id}'s broker "
                         f"connection ({client_id_of(self.target.hall, table.table_id)}): two "
                         "services publish the same table id in this hall")
        elif table.conn is not None:
            health.clear(key)
        down = [t for t in self.tables.values() if t.conn is None]
        if not down:
            health.clear(BROKER_FAULT)
            return
        refused = next((t.error for t in down if t.refused), None)
        if refused is not None:
            health.fault(BROKER_FAULT, component="mqtt", code="broker_refused",
                         message=f"the MQTT broker {self.target.redacted()} refused the "
                         f"connection ({refused}): check the user and password in "
                         "SHOTCLOCK_MQTT_URL; the clocks keep time, and their events wait "
                         "(/api/health components.mqtt.behind)")
            return
        health.fault(BROKER_FAULT, component="mqtt", code="broker_unreachable",
                     message=f"the MQTT broker {self.target.redacted()} is not reachable "
                     f"({down[0].error or 'connecting'}): the clocks keep time; their events "
                     "wait and go out in order when it is back")

    def refused(self, table: TablePublisher, seq: int) -> None:
        log.error("table %s: the broker refused event %d (not authorized)", table.table_id, seq)
        health = self._health()
        if health is not None:
            health.fault(f"mqtt.table.{table.table_id}", component="mqtt",
                         code="mqtt_not_authorized", table=table.table_id,
                         message=f"the broker refused table {table.table_id}'s events (the "
                         f"ACL does not let {self.target.username or 'anonymous'} publish "
                         f"{self.topics.events(table.table_id)})")

    def status(self) -> dict[str, Any]:
        tables = {tid: t.status() for tid, t in self.tables.items()}
        return {"broker": self.target.redacted(), "hall": self.target.hall,
                "connected": sum(1 for t in tables.values() if t["connected"]),
                "tables": len(tables), "behind": sum(t["behind"] for t in tables.values()),
                "per_table": tables}

