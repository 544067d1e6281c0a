"""The publisher's core (clock_service/edges/mqtt/feed.py), synchronous and table-driven.

A small simulated broker link runs each scenario: steps are executed (a Send is "on the
wire", a Read is answered from a list that plays the store), and the test decides which
sends the broker acknowledges and when the connection drops. What reaches the broker is
checked for the issue's promise: in order within each connection run, nothing missing,
``acked`` never past an unacknowledged event.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from clock_service.edges.mqtt.feed import Read, Send, SendState, TableFeed


def ev(seq: int) -> str:
    return f'{{"seq":{seq}}}'


def st(seq: int) -> str:
    return f'{{"state":{seq}}}'


@dataclass
class Link:
    feed: TableFeed
    store: list[int] = field(default_factory=list)  # durable seqs, the store's content
    wire: list[int] = field(default_factory=list)  # event seqs handed to the broker, in order
    unacked: list[int] = field(default_factory=list)
    states: list[int] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)
    missing: set[int] = field(default_factory=set)  # seqs the store "lost"

    def make(self, count: int) -> None:
        """``count`` new durable events."""
        first = self.feed.latest + 1
        seqs = list(range(first, first + count))
        self.store.extend(seqs)
        self.feed.durable([(s, ev(s)) for s in seqs], st(seqs[-1]))

    def run(self, *, answer_reads: bool = True) -> None:
        """Execute steps until nothing more happens (reads answered at once)."""
        while True:
            steps = self.feed.steps()
            if not steps:
                return
            for step in steps:
                if isinstance(step, Send):
                    assert step.text == ev(step.seq)
                    self.wire.append(step.seq)
                    self.unacked.append(step.seq)
                elif isinstance(step, SendState):
                    assert step.state == st(step.seq)
                    self.states.append(step.seq)
                else:
                    self.reads.append(step)
                    if answer_reads:
                        self.answer(step)

    def answer(self, read: Read) -> None:
        rows = [(s, ev(s)) for s in self.store
                if read.first <= s <= read.last and s not in self.missing]
        self.feed.loaded(read, rows)

    def ack(self, count: int | None = None) -> None:
        """The broker acknowledges the oldest ``count`` sends (all by default), in order."""
        count = len(self.unacked) if count is None else count
        for seq in self.unacked[:count]:
            self.feed.acknowledged(seq)
        del self.unacked[:count]

    def drop(self) -> None:
        self.feed.disconnect()
        self.unacked.clear()

    def connect(self) -> None:
        self.feed.connect()
        self.run()


def test_live_events_go_out_in_order_and_the_state_after_them() -> None:
    link = Link(TableFeed("t", acked=0, latest=0))
    link.connect()
    assert link.wire == [] and link.states == []
    link.make(3)
    link.run()
    assert link.wire == [1, 2, 3] and link.states == [3] and link.reads == []
    link.ack()
    assert link.feed.acked == 3 and link.feed.behind == 0
    link.make(1)
    link.run()
    assert link.wire == [1, 2, 3, 4] and link.states == [3, 4]


def test_nothing_is_sent_while_disconnected_and_the_missed_go_first_on_reconnect() -> None:
    link = Link(TableFeed("t", acked=0, latest=0))
    link.connect()
    link.make(2)
    link.run()
    link.ack()
    link.drop()
    link.make(5)  # seqs 3..7 while the broker is away
    link.run()
    assert link.wire == [1, 2]
    link.connect()
    link.make(1)  # 8: must not overtake 3..7
    link.run()
    assert link.wire == [1, 2, 3, 4, 5, 6, 7, 8]
    assert link.states[-1] == 8


@pytest.mark.parametrize(("acked_before_drop", "resent"), [
    (0, [1, 2, 3, 4]),   # nothing acknowledged: all again
    (2, [3, 4]),         # the unacknowledged ones again, in order
    (4, []),             # all acknowledged: nothing again
])
def test_unacknowledged_events_are_sent_again_after_a_drop(acked_before_drop: int,
                                                           resent: list[int]) -> None:
    link = Link(TableFeed("t", acked=0, latest=0))
    link.connect()
    link.make(4)
    link.run()
    link.ack(acked_before_drop)
    link.drop()
    assert link.feed.acked == acked_before_drop
    link.connect()
    assert link.wire == [1, 2, 3, 4, *resent]


def test_a_restart_publishes_from_the_stored_acked_seq_through_the_store() -> None:
    # The store holds 1..700; the broker had 1..100 (recorded in the store).
    feed = TableFeed("t", acked=100, latest=700, window=16, keep=64, read_batch=50)
    link = Link(feed, store=list(range(1, 701)))
    link.connect()
    for _ in range(200):
        link.ack()
        link.run()
    assert link.wire == list(range(101, 701))
    assert link.reads[0] == Read(101, 150)
    assert all(r.last - r.first < 50 for r in link.reads)
    assert feed.acked == 700 and link.states == []  # no state known yet: none sent
    link.make(1)
    link.run()
    assert link.wire[-1] == 701 and link.states == [701]


def test_the_state_known_at_start_is_sent_once_caught_up() -> None:
    feed = TableFeed("t", acked=3, latest=5, state=st(5))
    link = Link(feed, store=[1, 2, 3, 4, 5])
    link.connect()
    assert link.wire == [4, 5] and link.states == [5]
    link.drop()
    link.connect()  # a new connection (the broker may have lost it): sent again
    assert link.states == [5, 5]


def test_at_most_window_events_are_in_flight() -> None:
    link = Link(TableFeed("t", acked=0, latest=0, window=4, keep=8))
    link.connect()
    link.make(10)
    link.run()
    assert link.wire == [1, 2, 3, 4] and link.states == []
    link.ack(2)
    link.run()
    assert link.wire == [1, 2, 3, 4, 5, 6]
    link.ack()
    link.run()
    link.ack()
    link.run()
    link.ack()
    link.run()
    assert link.wire == list(range(1, 11)) and link.states == [10]
    # 9 and 10 were past keep (8) when made: they came from the store
    assert [r.first for r in link.reads] == [9]


def test_acked_rises_only_over_an_unbroken_run() -> None:
    feed = TableFeed("t", acked=0, latest=0)
    link = Link(feed)
    link.connect()
    link.make(5)
    link.run()
    for seq, expected in [(2, 0), (3, 0), (1, 3), (5, 3), (4, 5)]:
        feed.acknowledged(seq)
        assert feed.acked == expected, seq


def test_a_replay_request_sends_again_from_there_then_goes_on() -> None:
    link = Link(TableFeed("t", acked=0, latest=0))
    link.connect()
    link.make(6)
    link.run()
    link.ack()
    link.feed.replay(2)
    link.make(1)
    link.run()
    assert link.wire == [1, 2, 3, 4, 5, 6, 3, 4, 5, 6, 7]
    assert link.states[-1] == 7
    link.ack()
    assert link.feed.acked == 7
    link.feed.replay(10)  # ahead of what exists: nothing
    link.feed.replay(-1)
    link.run()
    assert link.wire[-1] == 7


def test_a_read_answered_after_the_connection_dropped_is_ignored() -> None:
    feed = TableFeed("t", acked=0, latest=5)
    link = Link(feed, store=[1, 2, 3, 4, 5])
    feed.connect()
    link.run(answer_reads=False)
    stale = link.reads[-1]
    link.drop()
    feed.loaded(stale, [(s, ev(s)) for s in range(1, 6)])
    assert feed.steps() == []
    link.connect()
    assert link.wire == [1, 2, 3, 4, 5]


def test_events_the_store_lost_are_skipped_and_counted_not_waited_for() -> None:
    feed = TableFeed("t", acked=0, latest=6)
    link = Link(feed, store=[1, 2, 3, 4, 5, 6], missing={3, 4})
    link.connect()
    link.ack()
    link.run()
    assert link.wire == [1, 2, 5, 6] and feed.skipped == 2 and feed.acked == 6


def test_events_told_twice_or_past_a_gap_do_not_break_the_order() -> None:
    # Never expected (the runtime tells every commit once, in order), but a publisher must
    # not stop for it: a repeat is ignored, a skipped one is read from the store.
    feed = TableFeed("t", acked=0, latest=3)
    link = Link(feed, store=[1, 2, 3, 4, 5, 6])
    feed.durable([(2, ev(2)), (3, ev(3))], st(3))
    feed.durable([(6, ev(6))], st(6))
    assert (feed.latest, feed.resyncs) == (6, 1)
    link.connect()
    assert link.wire == [1, 2, 3, 4, 5, 6] and link.states == [6]


def test_a_stored_acked_past_the_log_starts_again_from_one() -> None:
    # The store says the broker has 50 but the table made 10: not this table's history.
    feed = TableFeed("t", acked=50, latest=10)
    link = Link(feed, store=list(range(1, 11)))
    link.connect()
    assert link.wire == list(range(1, 11))


def test_memory_stays_bounded_through_a_long_outage() -> None:
    feed = TableFeed("t", acked=0, latest=0, window=4, keep=16)
    link = Link(feed)
    link.connect()
    link.drop()
    for _ in range(500):
        link.make(1)
    assert len(feed._texts) <= 16
    link.connect()
    while link.unacked:
        link.ack()
        link.run()
    assert link.wire == list(range(1, 501)) and feed.acked == 500
    assert len(feed._texts) == 0
