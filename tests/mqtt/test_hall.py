"""``shotclock hall`` (issue 13 point 4): real processes, the shipped ACL.

A broker with the shipped ACL, one table service (user ``table``, referee token set) and
the hall service (user ``hall``, the same token). The hall serves the same HTTP and
WebSocket contract and pages for the table, read-only: commands are forwarded over MQTT to
the table's service and answered with its reply; creating a table is refused.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect

from clock_service.service.wire.events import SnapshotMessage, StatusMessage
from clock_service.service.wire.hall import HallMessage, HallTable
from harness.thread_server import ThreadServer
from tests.broker import Broker
from tests.mqtt.conftest import ACL, ROLES, need_mosquitto
from tests.mqtt.watcher import Watcher
from tests.server import ServerProcess
from tests.waiting import until

pytestmark = [pytest.mark.mqtt, pytest.mark.e2e]

TOKEN = "ref-token"
SHORT = {"shot_ms": 60000}


class Hall:
    """The broker (a process), table 7's service and the hall, each in a thread of the test
    or, where the test kills it (its last will, its session left at the broker), in a
    process of its own (``processes``: "table", "hall")."""

    def __init__(self, workdir: Path, processes: tuple[str, ...] = ()) -> None:
        need_mosquitto()
        self.broker = Broker(workdir, users=ROLES, acl=ACL.read_text()).start()
        # READ_RATE 0: these tests compare whole logs in tight loops, faster than the
        # per-address read limit lets a client (clock_service/service/limits.py).
        common = {"SHOTCLOCK_REFEREE_TOKEN": TOKEN, "SHOTCLOCK_DEFAULT_TABLE": "",
                  "SHOTCLOCK_READ_RATE": "0"}
        table = ServerProcess if "table" in processes else ThreadServer
        hall = ServerProcess if "hall" in processes else ThreadServer
        self.table: Any = table(workdir / "table.db", env={
            **common, "SHOTCLOCK_MQTT_URL": self.broker.url("h", "table", ROLES["table"])})
        self.hall: Any = hall(workdir / "hall.db", subcommand="hall", env={
            **common, "SHOTCLOCK_MQTT_URL": self.broker.url("h", "hall", ROLES["hall"])})

    def stop(self) -> None:
        self.hall.stop()
        self.table.stop()
        self.broker.stop()


@pytest.fixture
def hall(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Hall]:
    """A broker, table 7's service and the hall of its own for each test: the tests kill,
    archive and replace what they are given, and each must pass alone and in any order
    (the two services start side by side). Parametrized indirectly with the services to
    run as processes."""
    h = Hall(tmp_path, getattr(request, "param", ()))
    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda server: server.start(), (h.table, h.hall)))
        status, _ = h.table.post("/api/tables", {"id": "7", "players": ["Ivanov", "Petrov"],
                                                 "profile": SHORT}, token=TOKEN)
        assert status == 201
        poll(lambda: table_ids(h.hall) == ["7"], "the hall to see table 7")
        yield h
    finally:
        h.stop()


def poll(check: Any, what: str) -> Any:
    """tests.waiting.until, polling the services over HTTP every 50 ms for up to 15 s."""
    return until(check, 15.0, 0.05, what)


# Not a status (online/offline) of a table no one has: the hall counts it as a bad message
# and changes nothing. Published by a client after a message M reached the broker, it
# reaches a subscriber of both after M (mosquitto queues to each client in order).
MARKER = "shotclock/v1/h/tables/marker/status"


def late_marker(hall: Hall, late: Watcher) -> list[Any]:
    """What ``late`` got before a marker published now: the retained messages of what it
    has subscribed to (the broker queues them with the SUBACK, before any later message)."""
    late.subscribe(MARKER)
    with Watcher(hall.broker.port, user="table", password=ROLES["table"]) as table:
        assert table.publish(MARKER, b"marker") == 0
    got = late.wait_for(lambda ms: any(m.topic == MARKER for m in ms), what="the marker")
    return got[:[m.topic for m in got].index(MARKER)]


def table_ids(server: ServerProcess) -> list[str]:
    return [t["table"] for t in server.get("/api/tables")]


def logs_equal(h: Hall, table: str = "7") -> bool:
    return bool(h.table.get(f"/api/tables/{table}/events?since=0")
                == h.hall.get(f"/api/tables/{table}/events?since=0"))


def without_time(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if k not in ("server_time", "remaining_ms")}


def test_the_hall_serves_the_tables_state_and_log(hall: Hall) -> None:
    poll(lambda: logs_equal(hall), "the logs to match")
    assert without_time(hall.hall.get("/api/tables/7")) == without_time(
        hall.table.get("/api/tables/7"))
    health = hall.hall.get("/api/health")
    mqtt = health["components"]["mqtt"]
    assert (mqtt["connected"], mqtt["online"], mqtt["behind"]) == (True, 1, 0)
    # The hall feed (/ws/hall) of the hall service has the mirrored table's card, then its
    # live changes (the table's own events, forwarded here).
    with connect(f"{hall.hall.ws_url}/ws/hall") as feed:
        first = json.loads(feed.recv(timeout=5))
        assert first["type"] == "hall" and [t["table"] for t in first["tables"]] == ["7"]
        card = first["tables"][0]
        assert card["seq"] == hall.table.get("/api/tables/7")["seq"]
        assert hall.table.command("7", "extension", token=TOKEN)[0] == 200
        while True:
            message = json.loads(feed.recv(timeout=5))
            if message["type"] == "table" and message["table"]["seq"] > card["seq"]:
                break
    for page in ("/", "/overlay?table=7", "/referee?table=7", "/display?table=7"):
        with urllib.request.urlopen(hall.hall.url + page, timeout=10) as response:
            assert response.status == 200 and b"<html" in response.read().lower(), page


def test_commands_to_the_hall_are_forwarded_to_the_table(hall: Hall) -> None:
    status, body = hall.hall.command("7", "start")
    assert status == 401 and body["error"]["code"] == "unauthorized"  # the hall's own check
    status, state = hall.hall.command("7", "start", token=TOKEN)
    assert status == 200 and state["phase"] == "running"
    # Read your writes: the hall's mirror has the command's events when it answers.
    assert hall.hall.get("/api/tables/7")["seq"] == state["seq"]
    assert hall.table.get("/api/tables/7")["phase"] == "running"
    status, body = hall.hall.command("7", "start", token=TOKEN)  # the table's own refusal
    assert status == 409 and body["error"]["code"] == "already_running"
    status, body = hall.hall.command("7", "foul", token=TOKEN)
    assert status == 422 and body["error"]["code"] == "missing_field"
    status, body = hall.hall.command("nope", "start", token=TOKEN)
    assert status == 404 and body["error"]["code"] == "unknown_table"
    status, body = hall.hall.post("/api/tables", {"id": "8", "players": ["A", "B"]}, token=TOKEN)
    assert status == 409 and body["error"]["code"] == "hall_read_only"
    status, _ = hall.hall.command("7", "pause", token=TOKEN)
    assert status == 200
    poll(lambda: logs_equal(hall), "the logs to match")
    # Match records are built from the stored events: the hall's are the table's.
    matches = hall.table.get("/api/matches?table=7")
    assert matches["matches"] and hall.hall.get("/api/matches?table=7") == matches
    match_id = matches["matches"][0]["id"]
    assert hall.hall.get(f"/api/matches/{match_id}") == hall.table.get(f"/api/matches/{match_id}")


def test_the_hall_websocket_replays_and_goes_live(hall: Hall) -> None:
    log = hall.hall.get("/api/tables/7/events?since=0")
    since = log[-1]["seq"] - 2
    with connect(f"{hall.hall.ws_url}/ws/tables/7?since={since}",
                 subprotocols=[f"bearer.{TOKEN}"]) as ws:  # type: ignore[list-item]
        snapshot = json.loads(ws.recv(timeout=5))
        assert snapshot["type"] == "snapshot" and snapshot["referee"] is True
        assert snapshot["seq"] == log[-1]["seq"]
        replay = [json.loads(ws.recv(timeout=5)) for _ in range(2)]
        assert replay == log[-2:]
        # Whatever the table's phase, a command that makes an event.
        command = {"paused": "resume", "running": "pause"}.get(snapshot["state"]["phase"],
                                                                "start")
        ws.send(json.dumps({"type": "command", "id": "w1", "command": command}))
        live = json.loads(ws.recv(timeout=5))
        assert live["seq"] == snapshot["seq"] + 1 and live["table"] == "7"
        ack = json.loads(ws.recv(timeout=5))
        assert (ack["type"], ack["id"]) == ("ack", "w1")


def hall_cards(feed: Any, wanted: Any) -> dict[str, Any]:
    """Read the hall feed until a card of table 7 satisfies ``wanted``; that card."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        message = json.loads(feed.recv(timeout=15))
        cards = ([message["table"]] if message["type"] == "table"
                 else message["tables"] if message["type"] == "hall" else [])
        for card in cards:
            HallTable.model_validate(card)
            if card["table"] == "7" and wanted(card):
                return dict(card)
    raise TimeoutError("no such card of table 7 on the hall feed")


@pytest.mark.parametrize("hall", [("table",)], indirect=True, ids=["table-process"])
def test_a_table_that_goes_offline_and_back(hall: Hall) -> None:
    feed = connect(f"{hall.hall.ws_url}/ws/hall", legacy=True)  # open till it is back
    first = json.loads(feed.recv(timeout=5))
    HallMessage.model_validate(first)
    assert first["read_only"] is True  # the hall page hides its "New table" form for it
    assert [(t["live"], t["stale_since"]) for t in first["tables"]] == [(True, None)]
    running = first["tables"][0]
    if running["phase"] != "running":  # a running clock
        go = "resume" if running["phase"] == "paused" else "start"
        assert hall.table.command("7", go, token=TOKEN)[0] == 200
        running = hall_cards(feed, lambda c: c["phase"] == "running")
    # The table's own feed on the hall (what its display, overlay and console read).
    table_ws = connect(f"{hall.hall.ws_url}/ws/tables/7", legacy=True)
    snapshot = json.loads(table_ws.recv(timeout=5))
    SnapshotMessage.model_validate(snapshot)
    assert (snapshot["live"], snapshot["stale_since"]) == (True, None)
    killed_at = time.time() * 1000
    hall.table.kill()  # SIGKILL: the broker publishes the last will (offline)
    # The card says the state is no longer live, and its countdown stops where it was.
    stale = hall_cards(feed, lambda c: not c["live"])
    assert stale["seq"] == running["seq"] and stale["phase"] == "running"
    assert killed_at - 100 <= stale["stale_since"] <= time.time() * 1000
    assert stale["remaining_ms"] == max(0, int(stale["deadline"] - stale["stale_since"] + 0.999999))
    time.sleep(0.3)  # real time under test: the stale countdown must not move meanwhile
    with connect(f"{hall.hall.ws_url}/ws/hall") as later:  # a page opened later: the same
        card = json.loads(later.recv(timeout=5))["tables"][0]
        assert (card["live"], card["remaining_ms"]) == (False, stale["remaining_ms"])
    # The table's WebSocket is told, with the same instant (one source in the hall).
    while (status := json.loads(table_ws.recv(timeout=5)))["type"] != "status":
        pass
    StatusMessage.model_validate(status)
    assert (status["live"], status["stale_since"]) == (False, stale["stale_since"])
    table_ws.close()
    with connect(f"{hall.hall.ws_url}/ws/tables/7") as later:  # opened later: frozen state
        snapshot = json.loads(later.recv(timeout=5))
        SnapshotMessage.model_validate(snapshot)
        assert (snapshot["live"], snapshot["stale_since"]) == (False, stale["stale_since"])
        assert snapshot["state"]["phase"] == "running"
        assert snapshot["state"]["remaining_ms"] == stale["remaining_ms"]  # not counting
    table_ws = connect(f"{hall.hall.ws_url}/ws/tables/7", legacy=True)  # open till it is back
    assert json.loads(table_ws.recv(timeout=5))["live"] is False

    def offline() -> bool:
        faults = hall.hall.get("/api/health")["faults"]
        return any(f["code"] == "table_offline" and f["table"] == "7" for f in faults)

    poll(offline, "the table_offline fault")
    status, body = hall.hall.command("7", "start", token=TOKEN)
    assert status == 503 and body["error"]["code"] == "table_unreachable"
    # known offline: refused as offline at once, not after waiting the forward timeout out
    # (which says "did not answer within 5 s")
    assert "is offline" in body["error"]["message"], body
    assert hall.hall.get("/api/tables/7")["table"] == "7"  # still shown as last seen
    hall.table.start()
    poll(lambda: not offline(), "the fault to clear")
    back = hall_cards(feed, lambda c: c["live"])
    assert back["stale_since"] is None
    feed.close()
    while (status := json.loads(table_ws.recv(timeout=5)))["type"] != "status" or not status[
            "live"]:
        pass
    assert status["stale_since"] is None
    table_ws.close()
    status, _ = hall.hall.command("7", "turn", token=TOKEN)
    assert status == 200
    poll(lambda: logs_equal(hall), "the logs to match")


def test_a_hall_without_its_broker_shows_every_card_as_last_known(hall: Hall) -> None:
    with connect(f"{hall.hall.ws_url}/ws/hall") as feed:
        assert json.loads(feed.recv(timeout=5))["tables"][0]["live"] is True
        hall.broker.kill()  # the mirror can no longer hear the table: not live
        stale = hall_cards(feed, lambda c: not c["live"])
        assert stale["stale_since"] is not None
        hall.broker.start()
        assert hall_cards(feed, lambda c: c["live"])["stale_since"] is None
    poll(lambda: hall.table.get("/api/health")["faults"] == [], "the table to reconnect")


@pytest.mark.parametrize("hall", [("hall",)], indirect=True, ids=["hall-process"])
def test_the_hall_asks_for_what_the_broker_lost(hall: Hall) -> None:
    # The hall is away; the table plays on; then the broker crashes (no persistence: the
    # events it kept for the hall's session are gone). The returning hall learns from the
    # table's retained state how far the table is, and asks it to replay the rest.
    hall.hall.kill()
    for name in ("start", "pause", "resume", "pause"):
        status, body = hall.table.command("7", name, token=TOKEN)
        assert status == 200, body
    hall.broker.kill()
    hall.broker.start()
    poll(lambda: hall.table.get("/api/health")["faults"] == [], "the table to reconnect")
    hall.hall.start()
    poll(lambda: logs_equal(hall), "the hall to catch up")
    assert hall.hall.get("/api/health")["components"]["mqtt"]["asks"] >= 1


def test_a_table_archived_on_its_service_is_archived_on_the_hall(hall: Hall) -> None:
    # DELETE on the table's own service: table.archived goes out last, the hall archives its
    # mirror the same way (under the same <id>~<n>), and a new table 7 is a new log there.
    before = hall.table.get("/api/tables/7/events?since=0")
    status, archived = hall.table.delete("/api/tables/7", token=TOKEN)
    assert status == 200, archived
    status, body = hall.hall.delete("/api/tables/7", token=TOKEN)
    assert status in (404, 409), body  # the hall never archives on its own
    poll(lambda: "7" not in table_ids(hall.hall), "the hall to archive table 7")

    def retained() -> list[Any]:
        with Watcher(hall.broker.port, user="overlay", password=ROLES["overlay"]) as late:
            late.subscribe("shotclock/v1/h/tables/7/state")
            late.subscribe("shotclock/v1/h/tables/7/status")
            return late_marker(hall, late)

    # Once its last event is acknowledged, the table clears its retained state and status
    # (a clean disconnect: no "offline" will).
    poll(lambda: retained() == [], "the retained state and status to be cleared")
    status, _ = hall.table.post("/api/tables", {"id": "7", "players": ["Ivanov", "Sidorov"],
                                                "profile": SHORT}, token=TOKEN)
    assert status == 201
    poll(lambda: "7" in table_ids(hall.hall) and logs_equal(hall), "the new table 7")
    fresh = hall.hall.get("/api/tables/7/events?since=0")
    assert fresh[0]["seq"] == 1 and fresh[0]["data"]["players"] == ["Ivanov", "Sidorov"]
    assert len(before) > len(fresh) or before[0] != fresh[0]
    faults = hall.hall.get("/api/health")["faults"]
    assert not [f for f in faults if f["table"] == "7"], faults
    assert archived["archived_as"] == "7~1"
    matches = hall.table.get("/api/matches?table=7~1")
    assert matches["matches"] and hall.hall.get("/api/matches?table=7~1") == matches


def test_a_table_that_starts_a_new_log_is_not_mixed_into_the_old_one(hall: Hall) -> None:
    # The table's Pi gets a new store (a new SD card) and table 7 is created again: its
    # seqs start at 1 once more. The hall must not take them as duplicates of the old log
    # (nor append them to it): it keeps the old log and says why.
    before = hall.hall.get("/api/tables/7/events?since=0")
    hall.table.stop()
    hall.table.db.rename(hall.table.db.with_suffix(".old"))
    for suffix in ("-wal", "-shm"):
        Path(str(hall.table.db) + suffix).unlink(missing_ok=True)
    hall.table.start()
    status, _ = hall.table.post("/api/tables", {"id": "7", "players": ["Sidorov", "Petrov"],
                                                "profile": SHORT}, token=TOKEN)
    assert status == 201

    def diverged() -> bool:
        faults = hall.hall.get("/api/health")["faults"]
        return any(f["code"] == "table_diverged" and f["table"] == "7" for f in faults)

    poll(diverged, "the table_diverged fault")
    status, started = hall.table.command("7", "start", token=TOKEN)
    assert status == 200
    # The broker has the new log's clock.started (the table's PUBACK), so the hall gets it
    # before a marker published after it; once the hall has counted the marker (a bad
    # message), it has read clock.started too, and must not have taken it.
    poll(lambda: hall.table.get("/api/health")["components"]["mqtt"]["per_table"]["7"][
        "acked"] >= started["seq"], "the table's clock.started at the broker")
    bad = hall.hall.get("/api/health")["components"]["mqtt"]["bad_messages"]
    with Watcher(hall.broker.port, user="table", password=ROLES["table"]) as table:
        assert table.publish(MARKER, b"marker") == 0
    poll(lambda: hall.hall.get("/api/health")["components"]["mqtt"]["bad_messages"] > bad,
         "the hall to read the marker")
    assert hall.hall.get("/api/tables/7/events?since=0") == before


def test_the_hall_refuses_what_serve_refuses(tmp_path: Path) -> None:
    """A hall forwards commands to the tables: on a non-loopback address it wants a referee
    token (or --open), like serve (exit 78); and its store is its own (exit 75)."""
    import os

    from clock_service.edges.cli.main import EXIT_REFUSED, EXIT_STORE_LOCKED
    from clock_service.service.storage import Store
    from tests.cli import shotclock

    env = {k: v for k, v in os.environ.items() if k != "SHOTCLOCK_REFEREE_TOKEN"}
    base = ["hall", "--mqtt", "mqtt://127.0.0.1:1/h", "--db", str(tmp_path / "hall.db")]
    refused = shotclock(*base, "--host", "0.0.0.0", env=env)  # by this process: tests/cli.py
    assert refused.returncode == EXIT_REFUSED, refused.stderr
    assert "without a referee token" in refused.stderr
    holder = Store(tmp_path / "hall.db")  # another holder: its own descriptor's lock
    holder.lock()
    try:
        locked = shotclock(*base, env=env)
        assert locked.returncode == EXIT_STORE_LOCKED, locked.stderr
    finally:
        holder.close()


@pytest.mark.parametrize("where", ["systemd", "user"])
def test_the_hall_store_is_where_serve_keeps_its_own_whatever_the_cwd(
        tmp_path: Path, where: str) -> None:
    """Run from / (as a unit is): the default store is $STATE_DIRECTORY/hall.db under systemd,
    else the user's state directory, as serve's shotclock.db; never /var/hall.db. Told by the
    lock: with that file held, the hall exits EXIT_STORE_LOCKED naming it."""
    import os
    import subprocess
    import sys

    from clock_service.edges.cli.main import EXIT_STORE_LOCKED
    from clock_service.service.storage import Store

    env = {k: v for k, v in os.environ.items() if k not in (
        "SHOTCLOCK_HALL_DB", "SHOTCLOCK_DB", "STATE_DIRECTORY", "XDG_STATE_HOME",
        "SHOTCLOCK_REFEREE_TOKEN")}
    env["HOME"] = str(tmp_path / "home")
    if where == "systemd":
        env["STATE_DIRECTORY"] = str(tmp_path / "state")
        expected = tmp_path / "state" / "hall.db"
    else:
        expected = tmp_path / "home" / ".local" / "state" / "shotclock" / "hall.db"
    holder = Store(str(expected))
    holder.lock()
    try:
        run = subprocess.run([sys.executable, "-m", "clock_service", "hall", "--mqtt",
                              "mqtt://127.0.0.1:1/h"], cwd="/", env=env, capture_output=True,
                             text=True, timeout=60)
    finally:
        holder.close()
    assert run.returncode == EXIT_STORE_LOCKED, run.stderr
    assert str(expected) in run.stderr


@pytest.mark.parametrize("hall", [("hall",)], indirect=True, ids=["hall-process"])
def test_a_match_caught_up_by_the_hall_has_the_tables_digest(hall: Hall) -> None:
    # Events sent again from the table's store (a catch-up) carry no state; the hall stores
    # each event's batch (the last seq of the commit it came in) from the "batch" the
    # catch-up splices in, so the match's digest (log_sha256) is the table's own. A turn
    # while the clock runs commits two events (clock.stopped, turn): the first one's batch
    # is not its own seq.
    hall.hall.kill()
    for name in ("start", "turn", "start", "pause", "resume", "turn"):
        status, body = hall.table.command("7", name, token=TOKEN)
        assert status == 200, body
    hall.broker.kill()  # its session's queue for the hall is lost: the hall must ask
    hall.broker.start()
    poll(lambda: hall.table.get("/api/health")["faults"] == [], "the table to reconnect")
    hall.hall.start()
    poll(lambda: logs_equal(hall), "the hall to catch up")
    assert hall.hall.get("/api/health")["components"]["mqtt"]["asks"] >= 1
    mine = hall.table.get("/api/matches/7.1")
    assert mine["log_sha256"]
    poll(lambda: hall.hall.get("/api/matches/7.1")["log_sha256"] == mine["log_sha256"],
         "the hall's digest of match 7.1 to be the table's")
