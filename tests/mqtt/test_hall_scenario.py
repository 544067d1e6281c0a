"""The hall scenario of issue 13: three table services (separate processes, separate
stores), one hall service and a broker (the shipped ACL), frames being played.

Mid-frame the broker is SIGKILLed for 5 s (it had no persistence: what it had not
delivered is gone); once the tables are back on it, one table service is SIGKILLed and
restarted. Every other phase ends on a condition (events played, reconnected), not a time. Afterwards the
hall's event log of every table equals that table's own log exactly (same seq, same JSON,
no gap, no duplicate), and no expiry on any table while the broker was away was later
than a gross bound over a bare asyncio loop in another process at its worst over that time.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from harness.bare_loop import BareLoop, gross_bound
from tests.broker import Broker
from tests.mqtt.conftest import ACL, ROLES, need_mosquitto
from tests.server import ServerProcess
from tests.waiting import until

pytestmark = [pytest.mark.mqtt, pytest.mark.e2e, pytest.mark.serial]

# Short shots so that clocks run out while the broker is away (warnings at 300/150 ms).
PROFILE = {"shot_ms": 700, "full_rounds": 1, "step_ms": 100, "floor_ms": 500,
           "extension_ms": 300, "warnings_ms": [300, 150]}
TABLES = ["tA", "tB", "tC"]


class Referee(threading.Thread):
    """Plays frames on one table over HTTP: starts, shots in time, lets some run out,
    accepts or hands back after a time foul, new frames. Retries while its service is
    down (it was killed)."""

    def __init__(self, server: ServerProcess, table: str, seed: int) -> None:
        super().__init__(daemon=True, name=f"referee-{table}")
        self.server = server
        self.table = table
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.hold = threading.Event()  # set: press nothing until it is cleared
        self.idle = threading.Event()  # set by the referee once holding: nothing in flight
        self.answered: list[tuple[float, int]] = []  # (unix ms, HTTP status) per command

    def run(self) -> None:
        while not self.stop.is_set():
            if self.hold.is_set():
                self.idle.set()
                self.stop.wait(0.02)
                continue
            self.idle.clear()
            try:
                state = self.server.get(f"/api/tables/{self.table}")
                name = self.choose(state)
                if name is not None:
                    status, _ = self.server.command(self.table, name)
                    self.answered.append((time.time() * 1000, status))
            except (OSError, AssertionError):
                pass  # the service is down (killed): try again
            self.stop.wait(self.rng.uniform(0.05, 0.25))

    def choose(self, state: dict[str, Any]) -> str | None:
        allowed = set(state.get("allowed", []))
        phase = state["phase"]
        if phase == "running":
            if self.rng.random() < 0.5:
                return "shot" if "shot" in allowed else None
            self.stop.wait(state["remaining_ms"] / 1000 + 0.05)  # let it run out
            return None
        for name in ("start", "resume", "new_frame") if phase != "expired" else (
                ("hand_back", "start") if self.rng.random() < 0.3 else ("start",)):
            if name in allowed:
                return name
        return None


def log(server: ServerProcess, table: str) -> list[dict[str, Any]]:
    return server.get(f"/api/tables/{table}/events?since=0")


def running_for_a_minute(server: ServerProcess, table: str) -> None:
    """Bring the table's clock to running (start, resume or a new frame, as its phase
    allows), then give the shot a minute."""
    for _ in range(4):
        state = server.get(f"/api/tables/{table}")
        if state["phase"] == "running":
            break
        name = next((n for n in ("start", "resume", "new_frame") if n in state["allowed"]),
                    None)
        assert name is not None, state
        assert server.command(table, name)[0] == 200
    status, state = server.command(table, "set_time", remaining_ms=60_000)
    assert status == 200 and state["phase"] == "running", state


def connected(server: ServerProcess) -> bool:
    """Every table of the service is on the broker again (its health)."""
    mqtt = server.get("/api/health")["components"]["mqtt"]
    return bool(mqtt["connected"] == mqtt["tables"] >= 1)


def test_three_tables_a_hall_a_broker_crash_and_a_table_crash(tmp_path: Path) -> None:
    need_mosquitto()
    broker = Broker(tmp_path, users=ROLES, acl=ACL.read_text()).start()
    tables = {
        tid: ServerProcess(tmp_path / f"{tid}.db", env={
            "SHOTCLOCK_MQTT_URL": broker.url("main", "table", ROLES["table"]),
            "SHOTCLOCK_DEFAULT_TABLE": "", "SHOTCLOCK_COMMAND_RATE": "0",
            "SHOTCLOCK_READ_RATE": "0"})
        for tid in TABLES}
    hall = ServerProcess(tmp_path / "hall.db", subcommand="hall", env={
        "SHOTCLOCK_MQTT_URL": broker.url("main", "hall", ROLES["hall"]),
        # The test polls whole logs until the hall has caught up: not a client to limit.
        "SHOTCLOCK_READ_RATE": "0"})
    servers = [*tables.values(), hall]
    referees: list[Referee] = []
    bare: BareLoop | None = None
    try:
        with ThreadPoolExecutor(len(servers)) as pool:
            list(pool.map(lambda s: s.start(timeout=60), servers))
        for tid, server in tables.items():
            status, body = server.post("/api/tables", {"id": tid, "players": ["A", "B"],
                                                       "profile": PROFILE})
            assert status == 201, body
        referees = [Referee(server, tid, seed) for seed, (tid, server)
                    in enumerate(tables.items())]
        for referee in referees:
            referee.start()
        # Frames are being played, and the hall mirrors every table.
        until(lambda: all(len(log(s, tid)) >= 3 for tid, s in tables.items())
              and sorted(t["table"] for t in hall.get("/api/tables")) == TABLES,
              30, 0.1, "three events on every table, mirrored by the hall")

        bare = BareLoop()
        away_from = time.time() * 1000
        broker.kill()  # mid-frame: clocks are running
        time.sleep(5.0)  # real time under test: the broker is away for 5 s (issue 13)
        broker.start()
        away_to = time.time() * 1000
        until(lambda: all(connected(s) for s in tables.values()), 30, 0.1,
              "every table service back on the broker")

        # SIGKILL a table service while its clock runs: it comes back paused (restart).
        # tB's referee holds meanwhile, and its clock is set to a minute, so no press or
        # timer lands around the kill: the log before it is known to the seq.
        tb, referee_b = tables["tB"], next(r for r in referees if r.table == "tB")
        referee_b.hold.set()
        assert referee_b.idle.wait(10), "tB's referee did not hold"
        running_for_a_minute(tb, "tB")
        killed_at = log(tb, "tB")[-1]["seq"]
        tb.kill()
        tb.start(timeout=60)
        after = until(lambda: log(tb, "tB")[killed_at:], 30, 0.1, "tB's recovery")
        assert (after[0]["type"], after[0]["data"].get("reason")) == ("clock.paused",
                                                                      "restart"), after
        # Back to the profile's shot, so that play goes on at the pace of the others.
        assert tb.command("tB", "set_time", remaining_ms=PROFILE["shot_ms"])[0] == 200
        referee_b.hold.clear()
        until(lambda: len(log(tb, "tB")) >= killed_at + 4, 30, 0.1,
              "three more events on tB after its restart")
        for referee in referees:
            referee.stop.set()
        for referee in referees:
            referee.join(timeout=10)
        bare.stop()

        # A clock left running still makes events (warnings, an expiry): compare the
        # logs once the hall has caught up with them.
        logs: dict[str, list[dict[str, Any]]] = {}
        mirrored: dict[str, list[dict[str, Any]]] = {}

        def caught_up() -> bool:
            logs.update({tid: log(server, tid) for tid, server in tables.items()})
            listed = [t["table"] for t in hall.get("/api/tables")]
            mirrored.update({tid: log(hall, tid) if tid in listed else [] for tid in TABLES})
            return mirrored == logs

        with contextlib.suppress(AssertionError):  # not in 30 s: the checks below say how
            until(caught_up, 30, 0.2, "the hall to catch up with every table")
        for tid in TABLES:
            own = logs[tid]
            assert [e["seq"] for e in own] == list(range(1, len(own) + 1))
            assert [e["seq"] for e in mirrored[tid]] == [e["seq"] for e in own], tid
            assert mirrored[tid] == own, tid  # the same events, the same JSON
        health = hall.get("/api/health")["components"]["mqtt"]
        assert health["behind"] == 0 and health["online"] == 3

        # The scenario did what it says: events while the broker was away, expiries
        # among them, and a restart of tB.
        during = {tid: [e for e in logs[tid] if away_from <= e["at"] <= away_to]
                  for tid in TABLES}
        assert all(len(events) >= 3 for events in during.values()), {
            tid: len(e) for tid, e in during.items()}
        # Each table's own service took its referee's commands meanwhile (its console
        # works without the broker and the hall).
        for referee in referees:
            ok = [s for at, s in referee.answered if away_from <= at <= away_to and s == 200]
            assert len(ok) >= 3, (referee.table, referee.answered)
        expiries = [e for events in during.values() for e in events
                    if e["type"] == "clock.expired"]
        assert expiries, "no clock ran out while the broker was away"
        # "No expiry late by more than the bare loop's error while the broker was away":
        # against the bare loop's worst wake-up over the outage, a gross bound (500 ms, or
        # twice it + 50 ms). Four services, three referees and a broker's restart share two
        # cores here, and an idle bare loop in another process is woken ahead of a busy
        # service: a quiet clean clone, 163 ms late where the bare loop's worst was 147; one
        # on a slower machine, 299 ms against 103. A clock held up by the broker (a blocking
        # publish, a reconnect) is seconds late; the precision is
        # bench/bench_mqtt_attacks.py's.
        reference = bare.max_late(away_from, away_to)
        for expiry in expiries:
            assert expiry["data"]["late_ms"] <= gross_bound(reference, floor_ms=500.0), (
                expiry["table"], expiry["data"], reference)
        print(f"\n{sum(len(v) for v in logs.values())} events on 3 tables; "
              f"{sum(len(v) for v in during.values())} while the broker was away, "
              f"{len(expiries)} expiries then (late max "
              f"{max(e['data']['late_ms'] for e in expiries):.2f} ms; bare loop max "
              f"{bare.max_late(away_from, away_to):.2f} ms); hall: {health}")
    finally:
        for referee in referees:
            referee.stop.set()
        if bare is not None:
            bare.stop()
        for server in servers:
            server.stop()
        broker.stop()
