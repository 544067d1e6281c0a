"""Issue 11: a hostile device on the hall's network cannot touch the clock.

A canary table expires a shot every 0.7 s or so while each attack runs for a few seconds
from another address; only gross failures are asserted here (an expiry more than 100 ms
later than a bare asyncio loop in its own process woke for the same deadline, the server
growing by 200 MB, /api/health, asked from a process of its own, not answering in time).
The real figures, with 10-20 s attacks, come from ``make bench`` (bench/bench.py --attacks,
bench/README.md).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.attack import (
    TOKEN,
    Canary,
    close_all,
    command_flood,
    fill_store,
    half_open,
    read_flood,
    socket_flood,
    stalled_websockets,
    still_open,
)
from tests.server import ServerProcess
from tests.waiting import until_async

pytestmark = [pytest.mark.e2e, pytest.mark.serial]

ATTACK_S = 3.0
LONG_EVENTS = 15_000  # a long table: a day of corrections (about 25 MB of stored events)
# Loose on purpose (a shared 2-core machine): a failure here is gross, not a figure.
MAX_LATE_MS = 100.0
MAX_GROWTH_MB = 200.0
MAX_HEALTH_MS = 1500.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    db = tmp_path_factory.mktemp("lan") / "lan.db"
    asyncio.run(fill_store(db, "long", LONG_EVENTS))
    # The limits at their defaults, a token, and a Pi's descriptor limit (600 here).
    # A fresh process, not one forked from the tests' zygote (harness/zygote.py): twice in
    # clean-clone runs an expiry under a flood was 140-156 ms late with a forked service.
    # On a quiet machine the two did not differ clearly (worst 1-9 ms either way), so it is
    # not known that the fork is the cause; this keeps the service as it was measured here
    # before the zygote.
    # It runs with the machine to itself (a serial test, harness/suite.py): its lateness and
    # answer times are the attack's, not other tests' Chromiums'.
    proc = ServerProcess(db, env={"SHOTCLOCK_REFEREE_TOKEN": TOKEN,
                                  "SHOTCLOCK_REQUEST_TIMEOUT_S": "2"}, nofile=600,
                         fork=False).start()
    try:
        yield proc
    finally:
        proc.stop()


_canaries = itertools.count(1)


@pytest.fixture
async def canary(server: ServerProcess) -> AsyncIterator[Canary]:
    """A canary table of this test's own: it starts fresh, whatever the module's other
    tests did before it (and in whatever order they ran)."""
    assert server.proc is not None
    bird = Canary(server.url, server.proc.pid, table=f"canary-{next(_canaries)}")
    await bird.start()
    # A quiet expiry first (one every 0.7 s or so).
    await until_async(lambda: bird.window.late_ms, timeout=10.0, what="a quiet expiry")
    bird.new_window()
    try:
        yield bird
    finally:
        await bird.stop()


def assert_unharmed(window: dict[str, Any], rss_before: float) -> None:
    # The canary kept expiring: every shot its referee started ran out, but the one still
    # running when the window closed. (How many it started is the test process's own pace:
    # the attack runs in the same event loop as the referee.)
    assert window["expiries"] >= 1 and window["expiries"] >= window["starts"] - 1, window
    # Beyond what the machine itself did to a bare loop woken at the same deadlines (other
    # work on a shared box stalls both; the attack is only on the server).
    assert window["late_max_ms"] < MAX_LATE_MS + (window["bare_max_ms"] or 0.0), window
    # /api/health answered all along, each answer within a gross bound: 1.5 s, or later by as
    # much as the bare loop was (the probe and the server share the machine's stalls).
    assert window["health_failures"] == 0, window
    assert window["health_max_ms"] < MAX_HEALTH_MS + (window["bare_max_ms"] or 0.0), window
    assert window["rss_peak_mb"] - rss_before < MAX_GROWTH_MB, window


def cap_refusals(server: ServerProcess) -> int:
    """How many times the server's log has said it refused a connection over the
    per-address cap (serving.py says why at the first refusal and every 100 after)."""
    return server.log.read_text(errors="replace").count("connections from one address (")


def rss_mb(server: ServerProcess) -> float:
    import psutil

    assert server.proc is not None
    return float(psutil.Process(server.proc.pid).memory_info().rss / 2**20)


async def test_replay_flood_streams_in_bounded_batches(server: ServerProcess,
                                                       canary: Canary) -> None:
    """Point 1: clients that ask for the whole history (?since=0) and never read hold no
    memory and cannot stall the loop; they are cut off (4001) by the send timeout."""
    before = rss_mb(server)
    stalled: list[Any] = []
    for i in range(4):  # 4 addresses x 20: the per-address socket cap is not what stops it
        stalled += await asyncio.to_thread(stalled_websockets, server.port,
                                           "/ws/tables/long?since=0", 20, f"127.0.0.{10 + i}")
    assert len(stalled) == 80
    await asyncio.sleep(ATTACK_S)  # real time under test: the canary's clock during the attack
    window = canary.new_window().summary()
    close_all(stalled)
    assert_unharmed(window, before)


async def test_heavy_reads_do_not_stall_the_clock(server: ServerProcess, canary: Canary) -> None:
    """Point 2: four loops reading the biggest pages of a long log and the table list are
    read off the loop, paginated and rate-limited (429) per address."""
    before = rss_mb(server)
    started = time.monotonic()
    statuses = await read_flood(server.url, ["/api/tables/long/events?since=0&limit=10000",
                                             "/api/tables?limit=10000"], ATTACK_S, "127.0.0.20")
    took = time.monotonic() - started
    window = canary.new_window().summary()
    # The address's read bucket (60 + 20/s): a full page of events costs 5, of tables 3.
    assert statuses.get(200, 0) <= (60 + 20 * took) / 3 + 1, statuses
    assert 500 not in statuses and 0 not in statuses, statuses
    assert_unharmed(window, before)
    # A full page is at most 1000 events, however many are asked for.
    async with httpx.AsyncClient(base_url=server.url) as http:
        page = await http.get("/api/tables/long/events", params={"since": 0, "limit": 10_000})
    assert page.status_code == 200 and len(page.json()) == 1000


async def test_slowloris_and_descriptor_exhaustion(server: ServerProcess,
                                                   canary: Canary) -> None:
    """Point 3: 800 half-open connections from 4 addresses against a server allowed 600
    open files: the per-address cap closes most at once, the request timeout the rest
    within seconds, and a normal request from elsewhere is answered all along."""
    before = rss_mb(server)
    refusals_before = cap_refusals(server)
    sources = [f"127.0.0.{30 + i}" for i in range(4)]
    held = await asyncio.to_thread(half_open, server.port, 800, sources)
    # The server closes the ones over the cap as it accepts them (a backlog's worth at a
    # time, serving.BACKLOG: on a loaded machine the last batches come a second or two
    # later; the ones under the cap stay until the request timeout, 2 s after their accept).
    deadline = time.monotonic() + 5.0
    while (open_now := await asyncio.to_thread(still_open, held)) > 4 * 64 \
            and time.monotonic() < deadline:  # SHOTCLOCK_MAX_CONNECTIONS_PER_ADDRESS
        await asyncio.sleep(0.1)
    assert open_now <= 4 * 64, open_now
    # ... and the cap closed them at their accept, not only the request timeout: the log
    # says so at the first refusal and every 100 after. (Up to 800 - 4 x 64 = 544 here; fewer
    # on a busy machine, where some connects time out in a full accept queue and a connection
    # under the cap that timed out frees its place: 301-400 in a clean clone's run on a slow
    # machine.)
    assert cap_refusals(server) > refusals_before, server.log.read_text()[-2000:]
    async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
        started = time.monotonic()
        answered = (await http.get(f"/api/tables/{canary.table}")).status_code
        took = time.monotonic() - started
    assert answered == 200, answered
    # SHOTCLOCK_REQUEST_TIMEOUT_S=2: the slow requests are closed (2 s, and some slack for
    # a loaded machine; polled, not slept).
    deadline = time.monotonic() + 5.0
    while (open_now := await asyncio.to_thread(still_open, held)) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert open_now == 0, open_now
    window = canary.new_window().summary()
    # ... and answered at once meanwhile: within 1 s, or later by as much as the bare loop
    # woke late over the same window (the machine's own stalls, not the attack's).
    assert took < 1.0 + (window["bare_max_ms"] or 0.0) / 1000, (took, window)
    close_all(held)
    assert_unharmed(window, before)


async def test_socket_flood_is_capped_per_address(server: ServerProcess, canary: Canary) -> None:
    """Point 3: one address may hold SHOTCLOCK_MAX_SOCKETS_PER_ADDRESS (32) WebSockets."""
    before = rss_mb(server)
    result = await socket_flood(server.ws_url, f"/ws/tables/{canary.table}", 60, ATTACK_S / 2,
                                "127.0.0.40")
    window = canary.new_window().summary()
    assert result["opened"] <= 32 and result["refused"] >= 28, result
    assert_unharmed(window, before)


async def test_command_rate_is_one_bucket_per_address(server: ServerProcess,
                                                      canary: Canary) -> None:
    """Point 9: 20 sockets of one address (with the token), ten commands in flight each,
    share its 20/s (burst 60); past 50 messages a second (burst 100) its sockets are
    closed: answering a flood costs the loop even when every answer is a refusal."""
    before = rss_mb(server)
    async with httpx.AsyncClient(base_url=server.url,
                                 headers={"authorization": f"Bearer {TOKEN}"}) as http:
        created = await http.post("/api/tables", json={"id": "flood", "players": ["A", "B"]})
    assert created.status_code == 201, created.text
    result = await command_flood(server.ws_url, "flood", TOKEN, 20, ATTACK_S, "127.0.0.50",
                                 server.url)
    await asyncio.sleep(max(0.0, ATTACK_S - result["seconds"]))  # real time: the full attack window
    window = canary.new_window().summary()
    # 60 saved up plus 20 a second, and a little for the clock's granularity.
    assert result["accepted"] <= 60 + 20 * result["seconds"] + 5, result
    assert result["limited"] > 0, result  # past the burst: refused
    assert result["closed"] > 0, result  # past the message rate: closed
    assert_unharmed(window, before)


def test_the_long_table_is_intact(server: ServerProcess, tmp_path: Path) -> None:
    assert server.get("/api/tables/long")["seq"] == LONG_EVENTS
