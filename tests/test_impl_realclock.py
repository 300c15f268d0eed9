"""``impl.Queue`` on the real monotonic clock: the sweeper thread on real time, and many threads.

Real time is used only to let deadlines pass; every bound is generous (seconds where the work
takes milliseconds) and no assertion depends on how long anything took.
"""

from __future__ import annotations

import functools
import threading
from collections import Counter

from impl import Empty, Queue, ShutDown
from model_tests.support import BOUND, RealProbeClock, Spawn, WaitCall


def test_an_undeleted_message_is_redelivered_to_a_blocked_receiver(spawn: Spawn) -> None:
    with Queue[str](visibility_timeout=0.05) as q:
        q.send("A", id="a")
        first = q.receive()
        assert first.attempt == 1
        second = spawn(lambda: q.receive(timeout=BOUND)).result(2 * BOUND)
        assert (second.id, second.attempt) == ("a", 2)
        assert q.delete(first.receipt) is False
        assert q.delete(second.receipt) is True


def _far(call: WaitCall) -> bool:
    """A wait for a deadline at least half an hour away."""
    return call.deadline is not None and call.deadline >= call.now + 1800


def test_the_sweeper_wakes_for_a_deadline_earlier_than_the_one_it_waits_for(
    spawn: Spawn,
) -> None:
    clock = RealProbeClock()
    with Queue[str](visibility_timeout=3600, clock=clock) as q:
        q.send("A", id="a")
        q.send("B", id="b")
        q.receive()
        assert clock.wait_for_call(_far)  # the sweeper now waits an hour for "a"
        q.receive(visibility_timeout=0.05)  # "b" is due much sooner: the sweeper must re-aim
        again = spawn(lambda: q.receive(timeout=BOUND)).result(2 * BOUND)
        assert (again.id, again.attempt) == ("b", 2)


def test_receive_with_a_timeout_gives_up_on_an_empty_queue() -> None:
    with Queue[str]() as q:
        try:
            q.receive(timeout=0.01)
        except Empty:
            pass
        else:
            raise AssertionError("an empty queue delivered something")


def test_many_producers_and_consumers_deliver_every_message_exactly_once_without_expiry(
    spawn: Spawn,
) -> None:
    """With no visibility timeout nothing is redelivered, so a small capacity, many blocking
    senders and receivers, and every message delivered once show that no wakeup is lost."""
    producers, consumers, per_producer = 4, 4, 250
    delivered: Counter[str] = Counter()
    lock = threading.Lock()
    with Queue[str](capacity=3, visibility_timeout=None) as q:

        def produce(p: int) -> None:
            for n in range(per_producer):
                q.send(f"{p}:{n}", id=f"m{p}-{n}", timeout=BOUND)

        def consume() -> None:
            while True:
                try:
                    m = q.receive(timeout=BOUND)
                except ShutDown:
                    return
                with lock:
                    delivered[m.body] += 1
                assert q.delete(m.receipt)

        pcalls = [spawn(functools.partial(produce, p)) for p in range(producers)]
        ccalls = [spawn(consume) for _ in range(consumers)]
        for call in pcalls:
            call.result(6 * BOUND)
        q.shutdown()  # consumers drain what is left, then stop
        for call in ccalls:
            call.result(6 * BOUND)
        assert len(delivered) == producers * per_producer
        assert set(delivered.values()) == {1}
        assert q.stats().done == producers * per_producer
