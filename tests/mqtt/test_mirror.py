"""The hall's mirror core (clock_service/edges/mqtt/mirror.py), synchronous and table-driven."""

from __future__ import annotations

import random

import pytest

from clock_service.edges.mqtt.mirror import ClockSkew, TableMirror


def t(seq: int) -> str:
    return f"e{seq}"


def feed(mirror: TableMirror, seqs: list[int], now: float = 0.0) -> tuple[list[int], list[int]]:
    """(appended seqs, asks) after hearing ``seqs`` in this order."""
    appended: list[int] = []
    asks: list[int] = []
    for seq in seqs:
        verdict = mirror.event(seq, t(seq), now)
        assert [text for _, text in verdict.append] == [t(s) for s, _ in verdict.append]
        appended += [s for s, _ in verdict.append]
        if verdict.ask is not None:
            asks.append(verdict.ask)
    return appended, asks


@pytest.mark.parametrize(("heard", "appended", "asks"), [
    ([1, 2, 3], [1, 2, 3], []),                        # in order
    ([1, 2, 2, 3, 1], [1, 2, 3], []),                  # duplicates dropped
    ([1, 3, 4], [1], [1]),                             # a gap: held, asked at once, once
    ([1, 3, 2], [1, 2, 3], [1]),                       # the gap filled: held ones follow
    ([2], [], [0]),                                    # the first heard is not seq 1
    ([1, 2, 5, 3, 4, 6], [1, 2, 3, 4, 5, 6], [2]),
])
def test_events_become_the_tables_log(heard: list[int], appended: list[int],
                                      asks: list[int]) -> None:
    mirror = TableMirror("t")
    assert feed(mirror, heard) == (appended, asks)
    assert mirror.seq == (appended[-1] if appended else 0)


def test_a_mirror_restarted_from_its_store_drops_what_it_has() -> None:
    mirror = TableMirror("t", seq=10)
    assert feed(mirror, [9, 10, 11]) == ([11], [])
    assert mirror.duplicates == 2


def test_behind_by_the_state_asks_only_after_a_pause_in_the_events() -> None:
    mirror = TableMirror("t", seq=0, idle_ms=1000, retry_ms=2000)
    # A table catching up after an outage: its state says 5 while 1..5 are on their way.
    assert mirror.state(5, now=0.0) is None
    assert feed(mirror, [1, 2], now=500.0) == ([1, 2], [])
    assert mirror.tick(1400.0) is None           # 900 ms since the last event
    assert mirror.tick(1500.0) == 2              # a pause of 1 s: ask after 2
    assert mirror.tick(2000.0) is None           # asked: wait
    assert mirror.tick(3500.0) == 2              # nothing came: ask again
    assert feed(mirror, [3, 4, 5], now=3600.0) == ([3, 4, 5], [])
    assert mirror.tick(9000.0) is None and mirror.behind == 0
    assert mirror.asks == 2


def test_a_replay_that_is_progressing_is_not_asked_for_again() -> None:
    mirror = TableMirror("t", seq=0, idle_ms=1000, retry_ms=2000)
    assert feed(mirror, [1, 50], now=0.0) == ([1], [1])
    for i, seq in enumerate(range(2, 50)):  # the replay, slowly: one every 100 ms
        assert feed(mirror, [seq], now=100.0 * (i + 1))[1] == []
        assert mirror.tick(100.0 * (i + 1) + 50) is None
    assert mirror.seq == 50 and mirror.asks == 1


def test_held_events_are_bounded() -> None:
    mirror = TableMirror("t", hold=10)
    feed(mirror, [1, *range(3, 100)])
    assert len(mirror._held) <= 10
    appended, _ = feed(mirror, list(range(2, 100)))
    assert appended == list(range(2, 100))


def test_any_order_with_duplicates_and_replays_gives_the_log_once() -> None:
    rng = random.Random(13)
    for _ in range(200):
        n = rng.randint(1, 60)
        heard = list(range(1, n + 1))
        # the broker loses some, the table resends some, reconnects duplicate a tail
        heard = [s for s in heard if rng.random() > 0.2]
        for _ in range(rng.randint(0, 3)):
            start = rng.randint(1, n)
            heard += list(range(start, min(n, start + rng.randint(0, 10)) + 1))
        mirror = TableMirror("t", idle_ms=0, retry_ms=0)
        appended, asks = feed(mirror, heard)
        # The last ones may all be lost: the table's retained state tells the mirror.
        state_ask = mirror.state(n, 0.5)
        if state_ask is not None:
            asks.append(state_ask)
        now = 1.0
        while mirror.seq < n:  # the table answers each ask with everything after it
            ask = mirror.tick(now) if not asks else asks.pop()
            assert ask is not None
            got, asks = feed(mirror, list(range(ask + 1, n + 1)), now)
            appended += got
            now += 1
        assert appended == list(range(1, n + 1))


@pytest.mark.parametrize(("offset", "delays", "expected"), [
    (0.0, [3, 5, 2, 40, 7, 2, 9, 3], None),             # in step (a few ms of delay)
    (-2500.0, [3, 5, 2, 40, 7, 2, 9, 3], -2498.0),      # the table's clock 2.5 s ahead
    (3600_000.0, [3] * 8, 3600_003.0),                  # an hour behind (no NTP)
    (-2500.0, [3] * 7, None),                           # too few samples to say
])
def test_a_tables_clock_off_the_halls_is_seen(offset: float, delays: list[float],
                                              expected: float | None) -> None:
    skew = ClockSkew(needed=8, limit_ms=1000)
    for i, delay in enumerate(delays):
        at = 1_000_000.0 + 1000 * i                      # the table's clock
        skew.sample(at, at + offset + delay)             # the hall's clock when heard
    assert skew.off() == expected


def test_the_offset_follows_the_recent_samples() -> None:
    skew = ClockSkew(keep=4, needed=2)
    for heard_minus_at in (5000.0, 5002.0, 3.0, 4.0, 6.0, 2.0):  # NTP corrected the table
        skew.sample(0.0, heard_minus_at)
    assert skew.offset_ms == 2.0 and skew.off() is None
