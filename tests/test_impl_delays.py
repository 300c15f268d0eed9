"""``impl.Queue``'s delays (issue 14): the second kind of timer, on the same heap as deadlines.

A delayed send holds its message ``DELAYED`` (counting against capacity) until the sweep at or
after its ``visible_at`` appends it to the visible tail; delays and deadlines fire in one order
(by due time, ties in the order the timers were started). The race test shows a receiver
blocked with no timeout woken by the sweeper thread when a delay fires: fake clock, no sleeps.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from impl import Empty, FakeClock, Full, Queue, SnapshotMessage, Stats
from model_tests.support import BOUND, ProbeClock, Spawn


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def q(clock: FakeClock) -> Iterator[Queue[str]]:
    with Queue[str](visibility_timeout=None, clock=clock) as queue:
        yield queue


def _visible(q: Queue[str]) -> list[str]:
    return [m.id for m in q.snapshot().visible]


def _after(q: Queue[str], clock: FakeClock, dt: float) -> list[str]:
    """Move the clock on by ``dt`` and sweep; the visible ids then."""
    clock.advance(dt)
    q.sweep()
    return _visible(q)


# -- a delayed message ------------------------------------------------------------------------


def test_a_delayed_message_is_invisible_until_its_visible_at(
    q: Queue[str], clock: FakeClock
) -> None:
    assert q.send("A", id="a", delay=2.0) == "a"
    assert q.stats() == Stats(visible=0, in_flight=0, done=0, cancelled=0, dead=0, delayed=1)
    assert q.snapshot().delayed == (SnapshotMessage("a", "A", 0, None, visible_at=2.0),)
    with pytest.raises(Empty):
        q.receive(block=False)
    assert _after(q, clock, 1.75) == []
    assert q.snapshot().delayed[0].visible_at == 2.0
    assert _after(q, clock, 0.25) == ["a"]  # due at exactly 2.0: fires
    assert q.stats().delayed == 0 and q.snapshot().delayed == ()
    m = q.receive(block=False)
    assert (m.id, m.body, m.attempt) == ("a", "A", 1)


def test_a_delay_fires_only_in_a_sweep(clock: FakeClock) -> None:
    # The window of the contract: the clock passed visible_at, nothing swept yet (no sweeper
    # can run: it is the clock's advance that would wake it, and this clock is never waited on
    # before the check). A sweep then makes it visible.
    with Queue[str](clock=clock) as q:
        q.send("A", id="a", delay=1.0)
        with q.mutex:  # hold the lock: the sweeper cannot fire it under us
            clock.advance(1.0)
            assert q.stats().delayed == 1
        q.sweep()
        assert _visible(q) == ["a"]


def test_a_fired_delay_appends_to_the_visible_tail(q: Queue[str], clock: FakeClock) -> None:
    q.send("A", id="a")
    q.send("B", id="b", delay=1.0)
    q.send("C", id="c")
    assert _visible(q) == ["a", "c"]
    assert _after(q, clock, 1.0) == ["a", "c", "b"]


def test_the_queue_default_delay_and_a_send_that_overrides_it(clock: FakeClock) -> None:
    with Queue[str](delay=3.0, visibility_timeout=None, clock=clock) as q:
        assert q.delay == 3.0
        q.send("A", id="a")  # the queue's delay
        q.send("B", id="b", delay=None)  # the queue's delay
        q.send("C", id="c", delay=0)  # none: visible at once
        q.send("D", id="d", delay=1.0)
        assert _visible(q) == ["c"]
        assert [(m.id, m.visible_at) for m in q.snapshot().delayed] == [
            ("a", 3.0),
            ("b", 3.0),
            ("d", 1.0),
        ]
        assert _after(q, clock, 1.0) == ["c", "d"]
        assert _after(q, clock, 2.0) == ["c", "d", "a", "b"]  # ties: in send order
        assert "delay=3.0" in repr(q)


def test_delayed_messages_count_against_capacity(clock: FakeClock) -> None:
    with Queue[str](capacity=1, clock=clock) as q:
        q.send("A", id="a", delay=5.0)
        with pytest.raises(Full):
            q.send("B", id="b", block=False)
        assert q.cancel("a") is True  # frees the slot at once
        assert q.send("B", id="b", block=False) == "b"
        assert _after(q, clock, 5.0) == ["b"]  # the cancelled delay never fires
        assert q.snapshot().cancelled == frozenset({"a"})


def test_cancel_of_a_delayed_message(q: Queue[str], clock: FakeClock) -> None:
    q.send("A", id="a", delay=1.0)
    assert q.cancel("a") is True
    assert q.cancel("a") is False
    assert q.stats() == Stats(visible=0, in_flight=0, done=0, cancelled=1, dead=0, delayed=0)
    assert _after(q, clock, 1.0) == []


# -- one timer order for delays and deadlines -------------------------------------------------


def test_a_deadline_and_a_delay_due_together_fire_in_the_order_they_started(
    clock: FakeClock,
) -> None:
    with Queue[str](visibility_timeout=1.0, clock=clock) as q:
        q.send("A", id="a")
        q.receive(block=False)  # a's deadline timer: due 1, started first
        q.send("B", id="b", delay=1.0)  # b's delay timer: due 1, started second
        assert _after(q, clock, 1.0) == ["a", "b"]
    clock = FakeClock()
    with Queue[str](visibility_timeout=1.0, clock=clock) as q:
        q.send("B", id="b", delay=1.0)  # the delay first this time
        q.send("A", id="a")
        q.receive(block=False)
        assert _after(q, clock, 1.0) == ["b", "a"]


def test_timers_fire_by_due_time_before_start_order(clock: FakeClock) -> None:
    with Queue[str](visibility_timeout=2.0, clock=clock) as q:
        q.send("A", id="a")
        q.receive(block=False)  # due 2
        q.send("B", id="b", delay=1.0)  # due 1
        q.send("C", id="c", delay=3.0)  # due 3
        steps: list[object] = []
        q.record_trace(steps.append)
        clock.advance(5.0)  # the sweeper thread or this sweep: one sweep fires all three
        q.sweep()
        assert steps == [("expire", (), id, 5.0) for id in ("b", "a", "c")]
        assert _visible(q) == ["b", "a", "c"]


def test_change_visibility_keeps_the_timer_s_place(clock: FakeClock) -> None:
    with Queue[str](visibility_timeout=5.0, clock=clock) as q:
        q.send("A", id="a")
        q.send("C", id="c")
        a = q.receive(block=False)  # timer 1 (deadline 5)
        c = q.receive(block=False, visibility_timeout=None)  # timer 2 (no deadline yet)
        q.send("D", id="d", delay=2.0)  # timer 3
        assert q.change_visibility(a.receipt, 2.0)  # moved to 2, keeps place 1
        assert q.change_visibility(c.receipt, 2.0)  # keeps its receive's place, 2
        assert _after(q, clock, 2.0) == ["a", "c", "d"]


def test_the_sweeper_wakes_for_a_delay_earlier_than_the_deadline_it_waits_for() -> None:
    clock = ProbeClock()
    with Queue[str](visibility_timeout=10.0, clock=clock) as q:
        q.send("A", id="a")
        q.receive(block=False)
        assert clock.wait_for_call(lambda c: c.thread.endswith("-sweeper") and c.deadline == 10.0)
        q.send("B", id="b", delay=1.0)
        assert clock.wait_for_call(lambda c: c.thread.endswith("-sweeper") and c.deadline == 1.0)
        assert q.health().sweeper_running


# -- the race: a blocked receiver wakes when a delay fires -------------------------------------


def test_a_blocked_receiver_wakes_when_the_sweeper_fires_a_delay(spawn: Spawn) -> None:
    clock = ProbeClock()
    with Queue[str](visibility_timeout=None, clock=clock) as q:
        q.send("A", id="a", delay=1.0)  # starts the sweeper, which waits until 1
        assert clock.wait_for_call(lambda c: c.thread.endswith("-sweeper") and c.deadline == 1.0)
        call = spawn(q.receive)  # no timeout: only a notify can wake it
        assert clock.wait_for_sleepers(q.not_empty, 1)
        clock.advance(1.0)  # wakes the sweeper only; it fires the delay and notifies not_empty
        m = call.result(BOUND)
        assert (m.id, m.attempt) == ("a", 1)


def test_a_blocked_receive_batch_wakes_when_a_delay_fires(spawn: Spawn) -> None:
    clock = ProbeClock()
    with Queue[str](visibility_timeout=None, clock=clock) as q:
        q.send("A", id="a", delay=1.0)
        q.send("B", id="b", delay=1.0)
        call = spawn(lambda: q.receive_batch(10))
        assert clock.wait_for_sleepers(q.not_empty, 1)
        clock.advance(1.0)
        got = call.result(BOUND)
        # Both fire in one sweep, one step, so the woken receiver finds both visible.
        assert [m.id for m in got] == ["a", "b"]


# -- bad delays, traces -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("delay", "error"),
    [(-1.0, ValueError), (math.nan, ValueError), (math.inf, ValueError), (True, TypeError)],
    ids=["negative", "nan", "inf", "bool"],
)
def test_a_bad_delay_is_refused_naming_it(q: Queue[str], delay: object, error: type) -> None:
    with pytest.raises(error, match=r"^delay must"):
        q.send("A", id="a", delay=delay)  # type: ignore[arg-type]
    with pytest.raises(error, match=r"^delay must"):
        Queue[str](delay=delay)  # type: ignore[arg-type]
    assert q.stats() == Stats(0, 0, 0, 0, 0, 0)
    assert q.send("A", id="a") == "a"  # the id was not reserved


def test_a_delay_that_overflows_the_clock_is_refused_before_waiting() -> None:
    with Queue[str](clock=FakeClock(start=1e308)) as q:
        with pytest.raises(ValueError, match=r"^delay is too large"):
            q.send("A", id="a", delay=1e308)
        assert q.stats().delayed == 0


def test_the_trace_of_sends_and_delays(q: Queue[str], clock: FakeClock) -> None:
    steps: list[object] = []
    q.record_trace(steps.append)
    q.send("A", id="a")
    q.send("B", id="b", delay=1.5)
    clock.advance(1.5)
    q.sweep()
    assert steps == [
        ("send", ("a", 0.0), True, 0.0),
        ("send", ("b", 1.5), True, 0.0),
        ("expire", (), "b", 1.5),
    ]


def test_health_counts_a_delay_as_an_armed_timer(clock: FakeClock) -> None:
    q = Queue[str](visibility_timeout=None, clock=clock)
    q.send("A", id="a", delay=1.0)
    q.close()
    h = q.health()
    assert not h.sweeper_running and not h.expiry_stalled  # closed: only sweep() fires it
    clock.advance(1.0)
    q.sweep()
    assert _visible(q) == ["a"]
