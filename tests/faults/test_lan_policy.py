"""Issue 11: the policies that keep a hostile LAN away from the clock, each with a test that
fails on the code before: one store one writer (4), refusals at start (5), Origin (5), a
replay that is not read (1), token-free logs (7), the table cap and archiving (8), the hall
feed (8), forwarded addresses (9), a SIGKILL while the disk is full (10), a restart within
milliseconds of start (11), security headers (12)."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect
from websockets.typing import Origin, Subprotocol

from clock_service.edges.cli.main import EXIT_REFUSED, EXIT_STORE_CORRUPT, EXIT_STORE_LOCKED
from harness.attack import fill_store
from harness.bare_loop import BareLoopThread, gross_bound
from harness.thread_server import ThreadServer
from tests.cli import Ran, shotclock
from tests.faults.conftest import RawWebSocket, freeze_buckets
from tests.server import ServerProcess, free_port, http
from tests.waiting import until

pytestmark = pytest.mark.e2e

TOKEN = "p0licy-t0ken-9f3e"
SHORT = {"shot_ms": 30_000, "floor_ms": 20_000, "full_rounds": 10, "warnings_ms": [1000]}


def serve_once(db: Path, *args: str, env: dict[str, str] | None = None) -> Ran:
    """``shotclock serve`` expected to refuse, run to its exit by this process (tests/cli.py:
    its store lock is taken as another process's would be, on a descriptor of its own)."""
    import os

    return shotclock("serve", "--port", str(free_port()), "--db", str(db), *args,
                     env={**os.environ, "SHOTCLOCK_DISPLAY": "none",
                          "SHOTCLOCK_REFEREE_TOKEN": "", **(env or {})})


def ok(result: tuple[int, Any]) -> Any:
    status, body = result
    assert status in (200, 201), body
    return body


# -- 4: one store, one writer; a damaged store is refused -------------------------------------

def test_a_second_service_on_the_same_store_refuses_to_start(tmp_path: Path) -> None:
    first = ServerProcess(tmp_path / "one.db").start()
    try:
        second = serve_once(first.db)
        assert second.returncode == EXIT_STORE_LOCKED, second.stderr[-2000:]
        assert "in use by another shotclock process" in second.stderr
        assert f"pid {first.proc.pid}" in second.stderr  # type: ignore[union-attr]
        assert first.get("/api/health")["ok"] is True  # the first one is untouched
    finally:
        first.stop()
    again = ServerProcess(first.db).start()  # the lock went with the first process
    again.stop()


def test_a_damaged_store_is_refused_at_start(tmp_path: Path) -> None:
    server = ThreadServer(tmp_path / "damaged.db").start()  # the store it writes
    for _ in range(30):  # a few pages of events
        server.command("1", "set_time", remaining_ms=5000)
    server.stop()
    with sqlite3.connect(server.db) as db:  # everything into the main file, then damage it
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert server.db.stat().st_size > 4 * 4096
    with open(server.db, "r+b") as db:
        db.seek(2 * 4096)  # page 3: a b-tree page of the store
        db.write(b"\xff" * 4096)
    refused = serve_once(server.db)
    assert refused.returncode == EXIT_STORE_CORRUPT, refused.stderr[-2000:]
    assert "failed its integrity check" in refused.stderr


# -- 5: not open by default; Origin ---------------------------------------------------------------

def test_a_lan_address_needs_a_token_or_open(tmp_path: Path) -> None:
    refused = serve_once(tmp_path / "lan.db", "--host", "0.0.0.0")
    assert refused.returncode == EXIT_REFUSED, refused.stderr[-2000:]
    assert "without a referee token" in refused.stderr
    server = ServerProcess(tmp_path / "open.db", args=["--host", "0.0.0.0", "--open"]).start()
    server.stop()
    assert "WARNING: --open" in server.log.read_text()


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadServer]:
    """No token (loopback), one allowed foreign origin."""
    server = ThreadServer(tmp_path_factory.mktemp("origin") / "origin.db",
                          env={"SHOTCLOCK_ALLOWED_ORIGINS": "http://obs.example:8080"}).start()
    ok(server.post("/api/tables", {"id": "o", "players": ["A", "B"], "timer": False}))
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize(("origin", "status"), [
    ("http://evil.example", 403), ("null", 403), (None, 200), ("own", 200),
    ("http://obs.example:8080", 200), ("http://obs.example", 403)])
def test_commands_from_a_foreign_page_are_refused(open_server: ThreadServer,
                                                  origin: str | None, status: int) -> None:
    headers = {} if origin is None else {
        "origin": open_server.url if origin == "own" else origin}
    before = open_server.get("/api/tables/o")["seq"]
    response = httpx.post(f"{open_server.url}/api/tables/o/commands", headers=headers,
                          json={"command": "turn"})
    assert response.status_code == status, response.text
    if status == 403:
        assert response.json()["error"]["code"] == "origin_not_allowed"
        assert open_server.get("/api/tables/o")["seq"] == before


def test_a_socket_without_origin_is_read_only_and_a_foreign_one_is_refused(
        open_server: ThreadServer) -> None:
    url = f"{open_server.ws_url}/ws/tables/o"
    with pytest.raises(InvalidStatus) as refused:
        connect(url, origin=Origin("http://evil.example"))
    assert refused.value.response.status_code == 403
    with connect(url) as ws:  # no Origin: OBS, a script: it may read
        assert json.loads(ws.recv(timeout=5))["referee"] is False
        ws.send(json.dumps({"type": "command", "id": 1, "command": "turn"}))
        reply = json.loads(ws.recv(timeout=5))
        assert (reply["status"], reply["error"]["code"]) == (401, "unauthorized")
    with connect(url, origin=open_server.origin) as ws:  # a page of the service itself
        assert json.loads(ws.recv(timeout=5))["referee"] is True


# -- 1: a replay that is not read ---------------------------------------------------------------

def test_a_replay_that_is_not_read_is_cut_off_and_replays_are_capped(tmp_path: Path) -> None:
    db = tmp_path / "replay.db"
    asyncio.run(fill_store(db, "long", 3000))
    server = ThreadServer(db, env={"SHOTCLOCK_WS_SEND_TIMEOUT_S": "2",
                                   "SHOTCLOCK_MAX_REPLAYS": "1"}).start()
    try:
        stalled = RawWebSocket(server, "/ws/tables/long?since=0")  # reads the snapshot only
        connected = time.monotonic()
        # The replay's first event has come: it holds the one replay slot.
        until(stalled.has_more, 10, 0.01, "the first replayed event")
        waiting = RawWebSocket(server, "/ws/tables/long?since=0")
        # The second waits for the one replay slot for half the send timeout: 1013.
        _, code, reason = waiting.read_until_closed()
        assert code == 1013 and "since=0" in reason, (code, reason)
        # The first, still not reading past the send timeout (2 s), is cut off with where to
        # resume, the close queued behind what its buffers hold.
        time.sleep(max(0.0, connected + 3.0 - time.monotonic()))  # real time: the send timeout
        got, code, reason = stalled.read_until_closed()
        assert code == 4001, (code, reason)
        resume = int(re.search(r"since=(\d+)", reason).group(1))  # type: ignore[union-attr]
        seqs = [m["seq"] for m in got]
        assert seqs == list(range(1, len(seqs) + 1)) and resume == seqs[-1] < 3000
        assert server.get("/api/health")["clients"] == 0  # nothing held for them
        # Resuming from there gets the rest, nothing twice.
        with connect(f"{server.ws_url}/ws/tables/long?since={resume}") as ws:
            snapshot = json.loads(ws.recv(timeout=5))
            rest = [json.loads(ws.recv(timeout=10))["seq"] for _ in range(
                snapshot["seq"] - resume)]
        assert rest == list(range(resume + 1, snapshot["seq"] + 1))
    finally:
        server.stop()


# -- 7: the token never reaches the log ---------------------------------------------------------

def test_the_token_never_reaches_the_log(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "log.db", log_level="debug", args=["--access-log"],
                           env={"SHOTCLOCK_REFEREE_TOKEN": TOKEN}).start()
    try:
        assert server.command("1", "start", token=TOKEN)[0] == 200
        assert server.command("1", "pause", token=TOKEN + "x")[0] == 401
        http("GET", f"{server.url}/api/tables/1?token={TOKEN}")
        with connect(f"{server.ws_url}/ws/tables/1?token={TOKEN}") as ws:
            ws.recv(timeout=5)
        with connect(f"{server.ws_url}/ws/tables/1",
                     subprotocols=[Subprotocol(f"bearer.{TOKEN}")]) as ws:
            ws.recv(timeout=5)
        with pytest.raises(InvalidStatus):
            connect(f"{server.ws_url}/ws/tables/1?token={TOKEN[:-1]}")
    finally:
        server.stop()
    log = server.log.read_text()
    assert "token=***" in log  # the access log did carry it, redacted
    assert TOKEN not in log and TOKEN[:-1] not in log


# -- 8: a cap on tables, archiving, the hall feed ------------------------------------------------

def test_table_cap_archive_and_the_hall_feed(tmp_path: Path) -> None:
    server = ThreadServer(tmp_path / "cap.db", env={"SHOTCLOCK_REFEREE_TOKEN": TOKEN,
                                                     "SHOTCLOCK_MAX_TABLES": "3"}).start()

    def create(table: str) -> tuple[int, Any]:
        return server.post("/api/tables", {"id": table, "players": ["A", "B"]}, TOKEN)

    try:
        assert create("a")[0] == 201 and create("b")[0] == 201  # with "1": three
        status, body = create("c")
        assert (status, body["error"]["code"]) == (409, "too_many_tables")
        hall = connect(f"{server.ws_url}/ws/hall")
        first = json.loads(hall.recv(timeout=5))
        assert first["type"] == "hall"
        assert [t["table"] for t in first["tables"]] == ["1", "a", "b"]
        # serve runs these clocks: every card is live, and tables can be created here
        assert first["read_only"] is False
        assert [(t["live"], t["stale_since"]) for t in first["tables"]] == [(True, None)] * 3
        table_a = connect(f"{server.ws_url}/ws/tables/a")
        json.loads(table_a.recv(timeout=5))

        assert server.delete("/api/tables/a")[0] == 401  # the token
        archived = ok(server.delete("/api/tables/a", TOKEN))
        assert archived["archived_as"] == "a~1" and archived["table"] == "a"
        last = json.loads(table_a.recv(timeout=5))
        assert last["type"] == "table.archived" and last["data"]["archived_as"] == "a~1"
        with pytest.raises(ConnectionClosed) as closed:
            table_a.recv(timeout=5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4404
        assert json.loads(hall.recv(timeout=5)) == {"type": "removed", "table": "a",
                                                    "archived_as": "a~1"}
        assert http("GET", f"{server.url}/api/tables/a")[0] == 404
        records = server.get("/api/archive")
        assert [(r["id"], r["table"], r["seq"]) for r in records] == [("a~1", "a", last["seq"])]
        kept = server.get("/api/archive/a~1/events")
        assert [e["seq"] for e in kept] == list(range(1, last["seq"] + 1))
        assert kept[-1]["type"] == "table.archived"

        # The id is free: a new table "a" has a new log, from seq 1; the cap has room.
        assert create("a")[1]["seq"] == 2  # table.created, frame.started
        card = json.loads(hall.recv(timeout=5))
        assert card["type"] == "table" and card["table"]["table"] == "a"
        assert card["table"]["seq"] == 2
        assert ok(server.delete("/api/tables/a", TOKEN))["archived_as"] == "a~2"
        assert create("c")[0] == 201
        hall.close()

        # Pages of the table list, with the cursor in Link.
        response = httpx.get(f"{server.url}/api/tables", params={"limit": 2})
        assert [t["table"] for t in response.json()] == ["1", "b"]
        next_page = re.match(r"<([^>]+)>; rel=\"next\"", response.headers["link"])
        assert next_page is not None
        assert [t["table"] for t in server.get(next_page.group(1))] == ["c"]
    finally:
        server.stop()
    # After a restart the archive is still there and "a" is not a live table.
    server.start()
    try:
        assert [t["table"] for t in server.get("/api/tables")] == ["1", "b", "c"]
        assert [r["id"] for r in server.get("/api/archive?table=a")] == ["a~1", "a~2"]
    finally:
        server.stop()


# -- 9: forwarded addresses only from a trusted proxy --------------------------------------------

def _post_from(source: str, url: str, forwarded_for: str) -> int:
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(transport=transport, timeout=5) as client:
        return client.post(url, json={"command": "turn"},
                           headers={"x-forwarded-for": forwarded_for}).status_code


def test_forwarded_for_is_believed_only_from_a_trusted_proxy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = ThreadServer(tmp_path / "xff.db", env={
        "SHOTCLOCK_COMMAND_RATE": "1", "SHOTCLOCK_COMMAND_BURST": "5",
        "SHOTCLOCK_TRUSTED_PROXIES": "127.0.0.2"}).start()
    # The buckets' clock stands still: a bucket lets its burst of five through and no more,
    # however long the requests take (on a loaded machine ten new connections took over
    # 0.5 s each, and the bucket refilled as fast as they spent it).
    freeze_buckets(monkeypatch)
    url = f"{server.url}/api/tables/1/commands"
    try:
        # From an ordinary client (127.0.0.1), a new X-Forwarded-For each time gains nothing.
        spoofed = [_post_from("127.0.0.1", url, f"10.0.0.{i}") for i in range(10)]
        assert spoofed == [200] * 5 + [429] * 5, spoofed
        # From the proxy (127.0.0.2), each forwarded client has its own bucket ...
        proxied = [_post_from("127.0.0.2", url, f"10.0.1.{i}") for i in range(10)]
        assert proxied == [200] * 10, proxied
        # ... and one forwarded client is limited like any other, whatever it claims
        # before the proxy's own entry.
        one = [_post_from("127.0.0.2", url, f"1.2.3.{i}, 10.0.2.1") for i in range(10)]
        assert one == [200] * 5 + [429] * 5, one
    finally:
        server.stop()


# -- 10: a SIGKILL while the disk is full --------------------------------------------------------

def test_sigkill_while_the_disk_is_full_keeps_what_was_promised(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "full.db", env={"SHOTCLOCK_STORE_WAIT_S": "1"}).start()
    try:
        ok(server.post("/api/tables", {"id": "d", "players": ["A", "B"], "profile": SHORT}))
        started = ok(server.command("d", "start"))  # 200: durable
        with connect(f"{server.ws_url}/ws/tables/d") as ws:
            assert json.loads(ws.recv(timeout=5))["faults"] == []
            server.disk_full()
            # The next write fails (nothing is written between commands: the heartbeat
            # is in memory): the command's, answered 503 after SHOTCLOCK_STORE_WAIT_S.
            code, refused = server.command("d", "extension")
            assert code == 503 and refused["error"]["code"] == "store_unavailable"
            status = json.loads(ws.recv(timeout=5))
            while status["type"] != "status":  # the extension itself is not sent: not
                status = json.loads(ws.recv(timeout=5))  # durable; only the fault is
            assert [f["code"] for f in status["faults"]] == ["store_unwritable"]
            message = refused["error"]["message"]
            assert "applied on the table" in message and "not yet durable" in message
            assert "will be stored" not in message  # the old, untrue promise
            applied = server.get("/api/tables/d")
            assert applied["extensions_left"] == [0, 1]  # applied, as it says
            assert server.get("/api/health")["faults"][0]["code"] == "store_unwritable"
        server.kill()  # while the disk is still full
        server.start()
        after = server.get("/api/tables/d")
        stored = server.get("/api/tables/d/events")
        assert [e["seq"] for e in stored] == list(range(1, len(stored) + 1))
        assert "clock.extended" not in [e["type"] for e in stored]  # lost, as it said
        assert after["extensions_left"] == [1, 1]
        assert after["phase"] == "paused"
        assert after["remaining_ms"] <= started["remaining_ms"]  # never more than it had
        assert server.get("/api/health")["faults"] == []
    finally:
        server.stop()


# -- 11: a restart never gives back more time than the shot had -----------------------------------

def test_a_kill_within_ms_of_start_gives_back_no_time(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "kill.db").start()
    try:
        ok(server.post("/api/tables", {"id": "k", "players": ["A", "B"], "profile": {
            "shot_ms": 1200, "floor_ms": 1200, "warnings_ms": [500]}}))
        state = ok(server.command("k", "start"))  # durable when answered
        server.kill()  # a few ms later: no heartbeat since (every 500 ms)
        server.start()
        after = server.get("/api/tables/k")
        assert after["phase"] == "paused", after
        # The stored start's "at" is whole ms, below the instant the deadline was set: the
        # code before gave back that fraction, 1201 of a 1200 ms shot (almost every time).
        assert after["remaining_ms"] <= state["remaining_ms"] <= 1200, (state, after)
    finally:
        server.stop()


# -- 12: headers -----------------------------------------------------------------------------------

def test_security_headers(open_server: ThreadServer) -> None:
    for path in ("/", "/referee", "/display"):
        headers = httpx.get(open_server.url + path).headers
        assert headers["x-frame-options"] == "DENY", path
        csp = headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp and "script-src 'self';" in csp, path
    overlay = httpx.get(open_server.url + "/overlay").headers
    assert "x-frame-options" not in overlay  # OBS embeds it
    assert "script-src 'self';" in overlay["content-security-policy"]
    assert "frame-ancestors" not in overlay["content-security-policy"]
    api = httpx.get(open_server.url + "/api/tables").headers
    assert api["x-content-type-options"] == "nosniff"


def test_a_bare_tcp_connection_gets_no_hold_on_the_server(tmp_path: Path) -> None:
    """Point 3: a connection that sends half a request is closed after the request timeout."""
    server = ThreadServer(tmp_path / "slow.db", env={"SHOTCLOCK_REQUEST_TIMEOUT_S": "1"}).start()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock, \
                BareLoopThread() as bare:  # this process's own wake-up error meanwhile
            sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n")
            started = time.monotonic()
            assert sock.recv(1) == b""  # closed by the server
            took = time.monotonic() - started
        # at the request timeout, within a gross bound of how late this process woke then
        assert took < 1.0 + gross_bound(bare.max_late()) / 1000, (took, bare.max_late())
    finally:
        server.stop()
