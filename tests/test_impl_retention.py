"""``retention=``: a message ages out of a queue ``retention`` seconds after it entered it.

The design note's rule 4 on the threaded shell: a third kind of timer in the one timer order
(``(due, start order)``), started at acceptance (after a delay's timer), at a dead-letter move
and at a redrive; when it fires an active message is ``AGED_OUT`` (its receipt dies, its slot
is freed); a terminal message's timer is stale. A standard queue keeps the original enqueue time
across a dead-letter move (AWS), a FIFO queue resets it. Time is a ``FakeClock``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from impl import Entry, FakeClock, FifoQueue, Queue
from model_tests.support import Spawn


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def q(clock: FakeClock) -> Iterator[Queue[str]]:
    with Queue[str](visibility_timeout=None, retention=10, clock=clock) as queue:
        yield queue


def test_a_visible_message_ages_out_at_its_enqueue_time_plus_retention(
    q: Queue[str], clock: FakeClock
) -> None:
    q.send("a", id="a")
    clock.advance(4)
    q.send("b", id="b")
    clock.advance(5.9)
    q.sweep()
    assert q.aged_out() == []
    clock.advance(0.1)  # 10.0: a's retention
    q.sweep()
    assert q.aged_out() == ["a"]
    assert [m.id for m in q.snapshot().visible] == ["b"]
    clock.advance(4)
    q.sweep()
    assert q.aged_out() == ["a", "b"]
    s = q.stats()
    assert (s.visible, s.aged_out) == (0, 2)
    assert q.snapshot().aged_out == frozenset({"a", "b"})


def test_an_in_flight_message_ages_out_and_its_receipt_dies(
    q: Queue[str], clock: FakeClock
) -> None:
    q.send("a", id="a")
    m = q.receive()
    clock.advance(10)
    q.sweep()
    assert q.aged_out() == ["a"]
    assert q.delete(m.receipt) is False
    assert q.retry(m.receipt) is False
    assert q.stats().in_flight == 0


def test_a_delayed_message_ages_out_and_its_delay_never_fires(clock: FakeClock) -> None:
    with Queue[str](retention=5, clock=clock) as q:
        q.send("a", id="a", delay=20)
        clock.advance(5)
        q.sweep()
        assert q.aged_out() == ["a"]
        clock.advance(20)
        q.sweep()
        assert q.stats().visible == 0 and q.stats().delayed == 0


def test_a_finished_messages_retention_timer_is_stale(q: Queue[str], clock: FakeClock) -> None:
    q.send("a", id="a")
    q.send("b", id="b")
    q.delete(q.receive().receipt)
    assert q.cancel("b") is True
    clock.advance(10)
    q.sweep()
    assert q.aged_out() == []
    s = q.stats()
    assert (s.done, s.cancelled, s.aged_out) == (1, 1, 0)


def test_at_a_tie_the_timer_started_first_fires_first(clock: FakeClock) -> None:
    # Retention (started at the send) and the delivery's deadline (started at the receive)
    # both due at 10: the retention timer was started first, so the message ages out and the
    # deadline is stale (it does not redeliver an aged-out message).
    with Queue[str](visibility_timeout=10, retention=10, clock=clock) as q:
        q.send("a", id="a")
        q.receive()
        clock.advance(10)
        q.sweep()
        assert q.aged_out() == ["a"]
        assert q.stats().visible == 0
    # A delay (started before the retention timer) due at the same time fires first: the
    # message is visible for no time at all and then ages out in the same sweep.
    log: list[tuple[str, object]] = []
    with Queue[str](retention=3, clock=clock) as q:
        q.record_trace(lambda step: log.append((step[0], step[2])))
        q.send("b", id="b", delay=3)
        clock.advance(3)
        q.sweep()
        assert log[-2:] == [("expire", "b"), ("age_out", "b")]
        assert q.aged_out() == ["b"]


def test_ageing_out_frees_a_slot_for_a_blocked_sender(clock: FakeClock, spawn: Spawn) -> None:
    with Queue[str](capacity=1, retention=2, clock=clock) as q:
        q.send("a", id="a")
        sender = spawn(lambda: q.send("b", id="b"))
        assert clock.wait_for_waiters(2)  # the sender and the sweeper
        clock.advance(2)  # no call: the sweeper ages "a" out
        assert sender.result() == "b"
        assert q.aged_out() == ["a"]


def test_a_batch_starts_one_retention_timer_per_entry(q: Queue[str], clock: FakeClock) -> None:
    # Retention counts from acceptance, not from when a delayed message became visible.
    q.send_batch([Entry("a", id="a"), Entry("b", id="b", delay=1)])
    clock.advance(9.5)
    q.sweep()
    assert [m.id for m in q.snapshot().visible] == ["a", "b"]
    clock.advance(0.5)
    q.sweep()
    assert q.aged_out() == ["a", "b"]


def test_retention_never_dead_letters(clock: FakeClock) -> None:
    with (
        Queue[str](clock=clock) as dlq,
        Queue[str](retention=5, max_receives=1, clock=clock, dead_letter=dlq) as q,
    ):
        q.send("a", id="a")
        q.receive()
        clock.advance(5)
        q.sweep()
        assert q.aged_out() == ["a"]
        assert q.stats().dead == 0
        assert dlq.stats().visible == 0


def test_a_standard_move_keeps_the_enqueue_time_so_it_ages_out_at_the_next_sweep(
    clock: FakeClock,
) -> None:
    with (
        Queue[str](retention=5, clock=clock) as dlq,
        Queue[str](visibility_timeout=None, max_receives=1, clock=clock, dead_letter=dlq) as q,
    ):
        q.send("old", id="old")
        m = q.receive()
        clock.advance(8)  # older than the dlq's retention already
        q.retry(m.receipt)
        assert dlq.source_of("old") is q  # moved in; the dlq's sweeper thread may already
        # have aged it out (its retention timer was due at 5 < 8 when it arrived): whichever
        # sweep comes first, the message is gone by the end of this one
        dlq.sweep()  # enqueued at 0 (kept by the move), due at 5: counted from the move it
        # would be due at 13 and still be visible here
        assert dlq.aged_out() == ["old"]
        # A message moved young keeps its time too: enqueued at 8, due at 13.
        q.send("young", id="young")
        q.retry(q.receive().receipt)
        clock.advance(4.5)
        dlq.sweep()
        assert dlq.aged_out() == ["old"]
        clock.advance(0.5)
        dlq.sweep()
        assert dlq.aged_out() == ["old", "young"]


def test_a_fifo_move_resets_the_enqueue_time(clock: FakeClock) -> None:
    with (
        FifoQueue[str](retention=5, clock=clock) as dlq,
        FifoQueue[str](visibility_timeout=None, max_receives=1, clock=clock, dead_letter=dlq) as q,
    ):
        q.send("old", id="old", group="g")
        m = q.receive()
        clock.advance(8)
        q.retry(m.receipt)  # moved at 8: due at 13 there
        dlq.sweep()
        assert dlq.aged_out() == []
        clock.advance(4.9)
        dlq.sweep()
        assert dlq.aged_out() == []
        clock.advance(0.1)
        dlq.sweep()
        assert dlq.aged_out() == ["old"]


def test_the_targets_sweeper_ages_a_moved_message_without_a_call(clock: FakeClock) -> None:
    aged = threading.Event()
    with (
        Queue[str](retention=5, clock=clock) as dlq,
        Queue[str](visibility_timeout=None, max_receives=1, clock=clock, dead_letter=dlq) as q,
    ):
        dlq.record_trace(lambda step: aged.set() if step[0] == "age_out" else None)
        q.send("a", id="a")
        q.retry(q.receive().receipt)  # the move started the dlq's sweeper, aimed at 5
        assert clock.wait_for_waiters(1)
        clock.advance(5)  # nobody calls dlq.sweep()
        assert aged.wait(30.0)
        assert dlq.aged_out() == ["a"]


def test_an_aged_out_fifo_message_in_flight_unlocks_its_group(clock: FakeClock) -> None:
    with FifoQueue[str](visibility_timeout=None, retention=5, clock=clock) as q:
        q.send("a", id="a", group="g")
        clock.advance(1)
        q.send("b", id="b", group="g")
        q.receive()  # "a" in flight: g locked
        clock.advance(4)
        q.sweep()
        assert q.aged_out() == ["a"]
        assert q.receive(block=False).id == "b"


def test_bad_retention_names_the_argument(clock: FakeClock) -> None:
    for bad, error in ((-1, ValueError), (0.0, ValueError), (float("nan"), ValueError)):
        with pytest.raises(error, match="retention"):
            Queue[str](retention=bad, clock=clock)
    with pytest.raises(TypeError, match="retention"):
        FifoQueue[str](retention=True, clock=clock)


def test_stale_timers_are_dropped_as_messages_finish(q: Queue[str]) -> None:
    for i in range(500):
        q.send("x", id=f"m{i}")
        q.delete(q.receive().receipt)
    # Each finished message left a stale retention timer: the heap is rebuilt as they pile up.
    assert len(q.machine.timers) <= 2 * q.machine.active() + 16 + 1
