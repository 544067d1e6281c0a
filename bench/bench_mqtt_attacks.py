"""Issue 20's benchmark: the MQTT attacks of finding 3 and a takeover attempt every second,
against a real Mosquitto, a real ``shotclock serve`` publishing to it and a real
``shotclock hall`` mirroring it, measured by the hostile-LAN canary (harness/attack.py:
a table whose 0.7 s shots expire one after another, its ``late_ms`` beside a bare asyncio
loop in its own process woken at the same deadlines).

The broker has the shared role accounts (harness/roles.acl) and does not bind client
ids to accounts, so every attack reaches the services (with the shipped per-Pi accounts
most of them are refused by the broker before that: tests/mqtt/test_accounts.py). Windows
of ``seconds`` each, the canary measuring throughout:

- quiet;
- replays: the hall's account asks the canary table and a 3,000-event table for a replay
  from seq 0, 20 times a second each (finding 3: it froze the mirror and sent an overlay
  124,113 duplicates in 30 s);
- replays on commands: a referee account sends the same on ``.../commands`` (refused);
- guessing: a referee account sends 200 commands a second with wrong tokens;
- takeover: a reader account logs in with the canary table's client id every second;
- all of them at once.

Each row: expiry lateness p50/p99/max, the bare loop's p99, p99 against quiet (goal <= 2),
and what the attack did (events an overlay received on the events topic, replays the table
started / merged / refused, the table's reconnects). Run alone:
``python bench/bench_mqtt_attacks.py [--quick] [--seconds 10]``. Benchmarks print figures;
they assert nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.attack import TOKEN, Canary, fill_store  # noqa: E402
from harness.broker import ACL, ROLES, Broker  # noqa: E402
from harness.server import ServerProcess  # noqa: E402
from harness.watcher import Watcher  # noqa: E402

HALL = "h"
ROOT_TOPIC = f"shotclock/v1/{HALL}/tables"


class Attacker:
    """A loop in its own thread (paho is blocking): ``step()`` every ``period`` seconds."""

    def __init__(self, name: str, step: Callable[[], None], period: float) -> None:
        self.name = name
        self.step = step
        self.period = period
        self.count = 0
        self.errors = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        due = time.monotonic()
        while not self._stop.is_set():
            try:
                self.step()
                self.count += 1
            except Exception:  # noqa: BLE001 - an attacker keeps going
                self.errors += 1
            due += self.period
            self._stop.wait(max(0.0, due - time.monotonic()))

    def start(self) -> Attacker:
        self._thread.start()
        return self

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        self._thread.join(10)
        return {"sent": self.count, "errors": self.errors}


def login(broker: Broker, role: str, client_id: str | None = None) -> Watcher:
    return Watcher(broker.port, user=role, password=ROLES[role], client_id=client_id)


def replays(broker: Broker, on: str) -> list[Attacker]:
    role = "hall" if on == "replay" else "referee"
    client = login(broker, role, client_id=f"attacker-{on}")
    ask = json.dumps({"type": "replay", "since": 0})

    def step() -> None:
        for table in ("canary", "long"):
            client.client.publish(f"{ROOT_TOPIC}/{table}/{on}", ask, qos=0)

    attacker = Attacker(f"replays on {on}", step, 1 / 20)
    attacker.stop_client = client.close  # type: ignore[attr-defined]
    return [attacker]


def guessing(broker: Broker) -> list[Attacker]:
    client = login(broker, "referee", client_id="attacker-guess")
    n = [0]

    def step() -> None:
        n[0] += 1
        client.client.publish(f"{ROOT_TOPIC}/canary/commands", json.dumps(
            {"command": "pause", "token": f"guess-{n[0]:08d}-xxxxxxxx"}), qos=0)

    attacker = Attacker("guessing", step, 1 / 200)
    attacker.stop_client = client.close  # type: ignore[attr-defined]
    return [attacker]


def takeover(broker: Broker) -> list[Attacker]:
    def step() -> None:
        with contextlib.suppress(Exception):
            login(broker, "overlay", client_id=f"shotclock-{HALL}-table-canary").close()

    attacker = Attacker("takeover", step, 1.0)
    attacker.stop_client = lambda: None  # type: ignore[attr-defined]
    return [attacker]


ATTACKS: dict[str, Callable[[Broker], list[Attacker]]] = {
    "replays": lambda b: replays(b, "replay"),
    "replays on commands": lambda b: replays(b, "commands"),
    "guessing": guessing,
    "takeover": takeover,
    "all at once": lambda b: [*replays(b, "replay"), *replays(b, "commands"), *guessing(b),
                              *takeover(b)],
}


def _mqtt(server: ServerProcess, table: str) -> dict[str, Any]:
    per: dict[str, Any] = server.get("/api/health")["components"]["mqtt"]["per_table"][table]
    return per


async def run(quick: bool, seconds: float, workdir: Path) -> dict[str, Any]:
    broker = Broker(workdir, users=ROLES, acl=ACL.read_text()).start()
    db = workdir / "table.db"
    await fill_store(db, "long", 3_000)
    common = {"SHOTCLOCK_REFEREE_TOKEN": TOKEN, "SHOTCLOCK_DEFAULT_TABLE": "",
              "SHOTCLOCK_DISPLAY": "none"}
    table = ServerProcess(db, env={
        **common, "SHOTCLOCK_MQTT_URL": broker.url(HALL, "table", ROLES["table"])})
    table.start(timeout=60)  # before the hall picks its free port (it could pick this one)
    hall = ServerProcess(workdir / "hall.db", subcommand="hall", env={
        **common, "SHOTCLOCK_MQTT_URL": broker.url(HALL, "hall", ROLES["hall"])})
    hall.start(timeout=60)
    assert table.proc is not None
    canary = Canary(table.url, table.proc.pid)
    overlay = login(broker, "overlay")
    overlay.subscribe(f"{ROOT_TOPIC}/+/events")
    rows: list[dict[str, Any]] = []
    try:
        await canary.start()
        await asyncio.sleep(2.0)
        canary.new_window()
        before = len(overlay.messages)
        await asyncio.sleep(seconds)
        rows.append({"attack": "none (quiet)", **canary.new_window().summary(),
                     "overlay_events": len(overlay.messages) - before})
        print_row(rows[-1], header=True)
        for name, make in ATTACKS.items():
            before_events = len(overlay.messages)
            before_table = _mqtt(table, "canary")
            attackers = [a.start() for a in make(broker)]
            await asyncio.sleep(seconds)
            detail = {a.name: a.stop() for a in attackers}
            for a in attackers:
                a.stop_client()  # type: ignore[attr-defined]
            window = canary.new_window().summary()
            after_table = _mqtt(table, "canary")
            long_table = _mqtt(table, "long")
            hall_mqtt = hall.get("/api/health")["components"]["mqtt"]
            detail.update({
                "overlay_events": len(overlay.messages) - before_events,
                "canary_replays": after_table["replays"] - before_table["replays"],
                "canary_merged": after_table["replays_merged"] - before_table["replays_merged"],
                "canary_refused": after_table["replays_refused"]
                - before_table["replays_refused"],
                "long_replays_total": long_table["replays"],
                "table_connects": after_table["connects"] - before_table["connects"],
                "hall_behind": hall_mqtt["behind"], "hall_connected": hall_mqtt["connected"]})
            rows.append({"attack": name, **window, "detail": detail})
            print_row(rows[-1], header=False)
            await asyncio.sleep(2.0)  # settle
            canary.new_window()
    finally:
        with contextlib.suppress(Exception):
            await canary.stop()
        overlay.close()
        hall.stop()
        table.stop()
        broker.stop()
    quiet = rows[0]["late_p99_ms"]
    for row in rows[1:]:
        p99 = row["late_p99_ms"]
        row["p99_vs_quiet"] = p99 / quiet if p99 is not None and quiet else None
    return {"seconds": seconds, "rows": rows}


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def print_row(row: dict[str, Any], header: bool) -> None:
    if header:
        print("\nMQTT attacks (canary expiry lateness in ms; bare = a bare loop, same "
              "deadlines)")
        print(f"{'attack':>20} {'expiries':>8} {'p50':>7} {'p99':>7} {'max':>7} "
              f"{'bare p99':>8}")
    print(f"{row['attack']:>20} {row['expiries']:>8} {_fmt(row['late_p50_ms']):>7} "
          f"{_fmt(row['late_p99_ms']):>7} {_fmt(row['late_max_ms']):>7} "
          f"{_fmt(row['bare_p99_ms']):>8}", flush=True)
    if "detail" in row:
        print(f"{'':>20} {json.dumps(row['detail'], default=str)}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 s windows")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each window")
    parser.add_argument("--out", type=Path,
                        default=ROOT / "bench" / "results" / "mqtt_attacks.json")
    args = parser.parse_args()
    os.environ.setdefault("SHOTCLOCK_DISPLAY", "none")
    seconds = 4.0 if args.quick else args.seconds
    results = asyncio.run(run(args.quick, seconds,
                              Path(tempfile.mkdtemp(prefix="shotclock-mqtt-attacks-"))))
    print("\nexpiry p99 under attack / quiet p99 (goal <= 2):")
    for row in results["rows"][1:]:
        print(f"  {row['attack']:>20}: {_fmt(row.get('p99_vs_quiet'), 2)}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"\nwritten {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
