"""Issue 20, findings 2-4, against a real Mosquitto, a real table service and a real hall.

The broker here has the shared role accounts (harness/roles.acl): with the shared
``table`` password anyone holding it may publish any table's topics. The shipped per-Pi
accounts stop that at the broker (tests/mqtt/test_accounts.py); the hall must still
survive what such an account sends:

- a forged event at the next seq, then the real one: ``table_diverged``, never a silent drop;
- a forged ``table.archived`` with a path as its archive id: refused, the table stays;
- a retained state of 60,000 ``[``: counted, skipped, and the hall still serves (also after
  a restart, when the broker delivers it again);
- invented table ids: no more than SHOTCLOCK_MAX_TABLES are mirrored;
- replay requests: only on ``.../replay`` (the hall's account), rate-limited, merged;
- token guessing over MQTT: the rate limit answers before the token check.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.thread_server import ThreadServer
from tests.broker import Broker
from tests.mqtt.conftest import ACL, ROLES, need_mosquitto
from tests.mqtt.watcher import Watcher
from tests.waiting import until

pytestmark = [pytest.mark.mqtt, pytest.mark.e2e]

TOKEN = "ref-token-0123456789"
ROOT = "shotclock/v1/h/tables"
NOT_AUTHORIZED = 135


def wait(check: Any, what: str, timeout: float = 15.0) -> Any:
    """tests.waiting.until, polling the services over HTTP every 50 ms."""
    return until(check, timeout, 0.05, what)


class Hall:
    """The broker (a process), table 7's service and the hall in threads of the test."""

    def __init__(self, workdir: Path) -> None:
        need_mosquitto()
        self.broker = Broker(workdir, users=ROLES, acl=ACL.read_text()).start()
        common = {"SHOTCLOCK_REFEREE_TOKEN": TOKEN, "SHOTCLOCK_DEFAULT_TABLE": "",
                  "SHOTCLOCK_READ_RATE": "0"}
        self.table = ThreadServer(workdir / "table.db", env={
            **common, "SHOTCLOCK_MQTT_URL": self.broker.url("h", "table", ROLES["table"])})
        self.hall = ThreadServer(workdir / "hall.db", subcommand="hall", env={
            **common, "SHOTCLOCK_MQTT_URL": self.broker.url("h", "hall", ROLES["hall"]),
            "SHOTCLOCK_MAX_TABLES": "4"})

    def mqtt(self) -> dict[str, Any]:
        result: dict[str, Any] = self.hall.get("/api/health")["components"]["mqtt"]
        return result

    def faults(self, code: str) -> list[dict[str, Any]]:
        return [f for f in self.hall.get("/api/health")["faults"] if f["code"] == code]

    def tables(self) -> list[str]:
        return [t["table"] for t in self.hall.get("/api/tables")]

    def mirrored(self, table: str = "7") -> bool:
        return bool(self.hall.get(f"/api/tables/{table}/events?since=0")
                    == self.table.get(f"/api/tables/{table}/events?since=0"))

    def stop(self) -> None:
        self.hall.stop()
        self.table.stop()
        self.broker.stop()


@pytest.fixture
def hall(tmp_path: Path) -> Iterator[Hall]:
    h = Hall(tmp_path)
    try:
        h.table.start()
        h.hall.start()
        status, body = h.table.post("/api/tables", {"id": "7", "players": ["A", "B"]},
                                    token=TOKEN)
        assert status == 201, body
        wait(lambda: h.tables() == ["7"] and h.mirrored(), "the hall to mirror table 7")
        yield h
    finally:
        h.stop()


def shared_table_account(h: Hall) -> Watcher:
    return Watcher(h.broker.port, user="table", password=ROLES["table"])


def test_a_poison_retained_state_is_skipped_and_the_hall_stays_up(hall: Hall) -> None:
    with shared_table_account(hall) as forger:
        assert forger.publish(f"{ROOT}/9/state", b"[" * 60_000, retain=True) == 0
        assert forger.publish(f"{ROOT}/9/status", b"{\"x\": 1}", retain=True) == 0
    wait(lambda: hall.mqtt()["bad_messages"] >= 2, "the poison to be counted")
    assert hall.mqtt()["connected"] is True
    status, body = hall.hall.command("7", "start", token=TOKEN)
    assert status == 200, body
    # Restarted, the hall gets the retained poison again (and its persistent session): it
    # still comes up, connects and forwards.
    hall.hall.stop()
    hall.hall.start()
    wait(lambda: hall.mqtt()["connected"] and hall.mqtt()["online"] >= 1, "the hall back")
    wait(lambda: hall.mqtt()["bad_messages"] >= 1, "the poison counted again")
    status, body = hall.hall.command("7", "pause", token=TOKEN)
    assert status == 200, body


def test_a_forged_archive_with_a_path_is_refused_and_the_table_stays(hall: Hall,
                                                                      tmp_path: Path) -> None:
    seq = hall.table.get("/api/tables/7")["seq"]
    forged = {"type": "table.archived", "seq": seq + 1, "table": "7", "at": 1,
              "data": {"archived_as": "../../x"}}
    with shared_table_account(hall) as forger:
        forger.publish(f"{ROOT}/7/events", json.dumps(forged))
    wait(lambda: hall.mqtt()["bad_messages"] >= 1, "the forgery to be counted")
    assert "7" in hall.tables()
    assert not (tmp_path.parent / "x").exists() and not list(tmp_path.rglob("x"))
    status, body = hall.hall.command("7", "start", token=TOKEN)
    assert status == 200, body
    assert hall.mirrored()


def test_a_forged_event_then_the_real_one_is_a_divergence_never_a_silent_drop(
        hall: Hall) -> None:
    seq = hall.table.get("/api/tables/7")["seq"]
    forged = {"type": "frame.ended", "seq": seq + 1, "table": "7", "at": 1,
              "data": {"winner": 1, "reason": "technical_loss"}, "state": {"seq": seq + 1}}
    with shared_table_account(hall) as forger:
        forger.publish(f"{ROOT}/7/events", json.dumps(forged))
    wait(lambda: hall.hall.get("/api/tables/7/events?since=0")[-1]["seq"] == seq + 1,
         "the hall to take the forgery (it cannot know yet)")
    # The table's own event at that seq differs: the hall says so.
    status, body = hall.table.command("7", "start", token=TOKEN)
    assert status == 200, body
    diverged = wait(lambda: hall.faults("table_diverged"), "table_diverged")
    assert diverged[0]["table"] == "7" and str(seq + 1) in diverged[0]["message"]
    assert hall.mqtt()["diverged"] == ["7"]


def test_invented_tables_are_bounded(hall: Hall) -> None:
    with shared_table_account(hall) as forger:
        for n in range(20):
            state = {"seq": 1, "phase": "ready"}
            forger.publish(f"{ROOT}/fake{n}/state", json.dumps(state))
    wait(lambda: hall.mqtt()["refused_tables"] >= 16, "the invented tables to be refused")
    assert hall.mqtt()["tables"] <= 4
    assert hall.faults("too_many_tables")
    status, body = hall.hall.command("7", "start", token=TOKEN)
    assert status == 200, body


def test_replays_only_from_the_hall_rate_limited_and_merged(hall: Hall) -> None:
    for name in ("start", "pause", "resume", "pause", "resume"):
        assert hall.table.command("7", name, token=TOKEN)[0] == 200
    latest = hall.table.get("/api/tables/7")["seq"]
    with Watcher(hall.broker.port, user="overlay", password=ROLES["overlay"]) as overlay, \
            Watcher(hall.broker.port, user="referee", password=ROLES["referee"]) as referee, \
            Watcher(hall.broker.port, user="hall", password=ROLES["hall"],
                    client_id="hall-2") as hall_account:
        overlay.subscribe(f"{ROOT}/7/events")
        ask = json.dumps({"type": "replay", "since": 0})
        # Not a referee's (nor an overlay's) to ask: the broker refuses.
        assert referee.publish(f"{ROOT}/7/replay", ask) == NOT_AUTHORIZED
        assert overlay.publish(f"{ROOT}/7/replay", ask) == NOT_AUTHORIZED
        # On the commands topic a replay is refused by the table (it sends nothing).
        referee.subscribe(f"{ROOT}/7/replies")
        referee.publish(f"{ROOT}/7/commands", ask)
        wait(lambda: referee.on(f"{ROOT}/7/replies"), "the refusal")
        assert referee.on(f"{ROOT}/7/replies")[-1].json()["error"]["code"] == "replay_not_here"
        # The hall's account: 40 requests in 2 s. Merged and rate-limited, the table
        # re-sends its log a few times, not 40.
        for _ in range(40):
            hall_account.publish(f"{ROOT}/7/replay", ask)
            time.sleep(0.05)  # real time under test: 40 requests spread over 2 s
        # The broker took the 40 requests before this one, and the table reads its topics in
        # order: its answer proves it has taken (or refused) all 40.
        referee.publish(f"{ROOT}/7/commands", ask)
        wait(lambda: len(referee.on(f"{ROOT}/7/replies")) == 2, "the second refusal")
        mqtt = hall.table.get("/api/health")["components"]["mqtt"]["per_table"]["7"]
        assert mqtt["replays_refused"] >= 30, mqtt
        assert 1 <= mqtt["replays"] <= 6, mqtt

        def last_copies() -> int:
            return sum(m.json()["seq"] == latest for m in overlay.on(f"{ROOT}/7/events"))

        # Each replay sends up to the latest event: once every one has, all copies are in.
        wait(lambda: last_copies() >= mqtt["replays"], "every replay to reach the last event")
        copies = len(overlay.on(f"{ROOT}/7/events"))
        assert copies <= latest * 6, (copies, latest)
    # The presses went to the table's own service, not through the hall (no read-your-writes
    # there), and its clock still runs: waited for, not read once.
    wait(hall.mirrored, "the hall to mirror table 7 after the replays")


def test_guessing_the_token_over_mqtt_hits_the_rate_limit_first(hall: Hall) -> None:
    replies = f"{ROOT}/7/replies"
    with Watcher(hall.broker.port, user="referee", password=ROLES["referee"]) as guesser:
        guesser.subscribe(replies)
        for n in range(100):
            guesser.publish(f"{ROOT}/7/commands",
                            json.dumps({"command": "start", "token": f"guess-{n}"}), qos=0)
        got = wait(lambda: len(guesser.on(replies)) >= 100 and guesser.on(replies),
                   "100 replies")
        codes = [m.json()["error"]["code"] for m in got]
        # The burst (60) is checked; the rest are refused by the rate limit, unread.
        assert codes.count("rate_limited") >= 30, codes
        assert codes.count("unauthorized") <= 70
    assert hall.table.get("/api/tables/7")["phase"] == "ready"


def test_the_hall_forwards_with_its_credential_and_the_referees_identity(hall: Hall) -> None:
    assert hall.table.post("/api/tables", {"id": "8", "players": ["C", "D"]},
                           token=TOKEN)[0] == 201
    wait(lambda: "8" in hall.tables(), "the hall to mirror table 8")
    status, issued = hall.hall.post("/api/tokens", {"role": "referee", "tables": ["7"],
                                                    "name": "ref7"}, token=TOKEN)
    assert status == 201, issued
    referee = issued["token"]
    status, body = hall.hall.command("7", "start", token=referee, by="camera")
    assert status == 200, body
    started = hall.table.get("/api/tables/7/events?since=0")[-1]
    assert started["type"] == "clock.started"
    assert (started["by"], started["source"]) == ("referee", "hall/http:ref7"), started
    status, body = hall.hall.command("8", "start", token=referee)
    assert (status, body["error"]["code"]) == (403, "forbidden_table")
    assert hall.table.get("/api/tables/8")["phase"] == "ready"
    # The table never saw the referee's token: it is the hall's, not the table's.
    assert hall.table.command("7", "pause", token=referee)[0] == 401


def test_the_hall_checks_each_signed_match_against_its_own_copy(hall: Hall) -> None:
    assert hall.table.post("/api/tables", {"id": "9", "players": ["E", "F"], "race_to": 1},
                           token=TOKEN)[0] == 201
    status, body = hall.table.command("9", "new_frame", token=TOKEN, winner=1,
                                      reason="conceded")
    assert status == 200, body
    fingerprint = hall.table.get("/api/health")["components"]["signing"]["fingerprint"]
    wait(lambda: hall.mqtt()["signatures_verified"] >= 1, "the hall to verify the signature")
    assert hall.mqtt()["table_keys"]["9"] == fingerprint
    assert not hall.faults("record_unverified") and not hall.faults("table_key_changed")
    match_id = hall.hall.get("/api/matches?table=9")["matches"][0]["id"]
    assert hall.hall.get(f"/api/matches/{match_id}")["signature"]["status"] == "verified"
