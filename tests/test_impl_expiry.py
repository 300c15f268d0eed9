"""``impl.Queue``: visibility expiry, the sweeper thread, dead letters and at-least-once delivery.

Time is a ``FakeClock``: ``advance`` then ``sweep()`` applies every expiry due by the new time,
synchronously. The background sweeper also wakes on ``advance``; where it races with an explicit
call, the test accepts both orders the contract allows and checks the queue agrees with the one
that happened.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from impl import FakeClock, JobQueue, Queue, SnapshotMessage
from model_tests.support import Spawn


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def q(clock: FakeClock) -> Iterator[Queue[str]]:
    with Queue[str](visibility_timeout=5, clock=clock) as queue:
        yield queue


def ids(msgs: tuple[SnapshotMessage[str], ...]) -> list[str]:
    return [m.id for m in msgs]


def sweepers() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.endswith("-sweeper")]


def test_nothing_expires_before_its_deadline_and_everything_at_it(
    q: Queue[str], clock: FakeClock
) -> None:
    q.send("A", id="a")
    m = q.receive()
    clock.advance(4.999)
    q.sweep()
    assert ids(q.snapshot().in_flight) == ["a"]
    clock.advance(0.001)
    q.sweep()
    s = q.snapshot()
    assert ids(s.visible) == ["a"] and s.visible[0].attempt == 1
    assert q.delete(m.receipt) is False  # released: the old receipt is stale
    again = q.receive()
    assert again.attempt == 2 and q.delete(again.receipt)


def test_expiry_releases_by_deadline_then_receive_order(q: Queue[str], clock: FakeClock) -> None:
    for i in "abcd":
        q.send(i.upper(), id=i)
    q.receive(visibility_timeout=10)  # a: 10
    q.receive(visibility_timeout=10)  # b: 10
    q.receive(visibility_timeout=3)  # c: 3
    d = q.receive(visibility_timeout=10)  # d: 10, then moved to 3 at time 0
    assert q.change_visibility(d.receipt, 3)
    # Ties on deadline break by receive order (c before d; a before b), not by who changed last.
    clock.advance(10)
    q.sweep()
    assert ids(q.snapshot().visible) == ["c", "d", "a", "b"]


def test_a_released_message_joins_the_tail_behind_visible_ones(
    q: Queue[str], clock: FakeClock
) -> None:
    q.send("A", id="a")
    q.receive()
    q.send("B", id="b")
    q.send("C", id="c")
    clock.advance(5)
    q.sweep()
    assert ids(q.snapshot().visible) == ["b", "c", "a"]


def test_a_deleted_message_does_not_come_back(q: Queue[str], clock: FakeClock) -> None:
    q.send("A", id="a")
    assert q.delete(q.receive().receipt)
    clock.advance(100)
    q.sweep()
    s = q.snapshot()
    assert (ids(s.visible), ids(s.in_flight), s.done) == ([], [], frozenset({"a"}))


def test_a_late_delete_wins_until_the_sweep_runs(clock: FakeClock) -> None:
    # A closed queue has no sweeper thread, so nothing but sweep() expires: deterministic.
    q: Queue[str] = Queue(visibility_timeout=5, clock=clock)
    q.send("A", id="a")
    q.send("B", id="b")
    a, b = q.receive(), q.receive()
    q.close()
    clock.advance(6)
    assert q.delete(a.receipt) is True  # deadline passed, but no sweep yet: still live
    q.sweep()
    assert q.delete(b.receipt) is False  # the sweep released b first
    s = q.snapshot()
    assert (s.done, ids(s.visible)) == (frozenset({"a"}), ["b"])


def test_a_late_delete_and_the_sweeper_race_and_either_order_is_consistent(
    q: Queue[str], clock: FakeClock
) -> None:
    q.send("A", id="a")
    m = q.receive()
    clock.advance(5)  # wakes the sweeper, which may release "a" before or after the delete
    won = q.delete(m.receipt)
    q.sweep()
    s = q.snapshot()
    if won:
        assert (s.done, ids(s.visible)) == (frozenset({"a"}), [])
    else:
        assert (s.done, ids(s.visible), s.visible[0].attempt) == (frozenset(), ["a"], 1)


def test_max_receives_dead_letters_on_expiry_in_order_of_death(clock: FakeClock) -> None:
    with Queue[str](visibility_timeout=1, max_receives=2, clock=clock) as q:
        q.send("A", id="a")
        q.send("B", id="b")
        q.receive()  # a1
        clock.advance(0.5)
        q.receive()  # b1
        clock.advance(0.5)
        q.sweep()  # a back
        q.receive()  # a2, deadline 2
        clock.advance(0.5)
        q.sweep()  # b back
        q.receive()  # b2, deadline 2.5
        clock.advance(1)
        q.sweep()  # a dies at 2, b at 2.5
        assert [(m.id, m.attempt) for m in q.dead_letters()] == [("a", 2), ("b", 2)]
        assert ids(q.snapshot().dead) == ["a", "b"]
        st = q.stats()
        assert (st.visible, st.in_flight, st.dead) == (0, 0, 2)


def test_the_sweeper_redelivers_to_a_blocked_receiver_without_sweep(
    q: Queue[str], clock: FakeClock, spawn: Spawn
) -> None:
    q.send("A", id="a")
    first = q.receive()
    second = spawn(q.receive)
    assert clock.wait_for_waiters(2)  # the receiver and the sweeper are both waiting
    clock.advance(5)  # nobody calls sweep(): the sweeper thread must release "a"
    m = second.result()
    assert (m.id, m.attempt) == ("a", 2)
    assert q.delete(first.receipt) is False
    assert q.delete(m.receipt) is True


def test_a_dead_letter_wakes_a_blocked_sender(clock: FakeClock, spawn: Spawn) -> None:
    with Queue[str](capacity=1, visibility_timeout=1, max_receives=1, clock=clock) as q:
        q.send("A", id="a")
        q.receive()
        sender = spawn(lambda: q.send("B", id="b"))
        assert clock.wait_for_waiters(2)
        clock.advance(1)  # the sweeper dead-letters "a", freeing the slot
        assert sender.result() == "b"
        assert ids(q.snapshot().dead) == ["a"]


def test_the_sweeper_starts_only_when_a_finite_deadline_is_armed(clock: FakeClock) -> None:
    assert sweepers() == []
    with Queue[str](visibility_timeout=None, clock=clock) as never:
        never.send("A", id="a")
        never.receive()
        assert sweepers() == []
        never.send("B", id="b")
        never.receive(visibility_timeout=3)
        assert len(sweepers()) == 1
    jobs = JobQueue(2)
    jobs.enqueue("a", "A")
    jobs.reserve()
    assert sweepers() == []


def test_close_stops_and_joins_the_sweeper_and_no_new_one_starts(clock: FakeClock) -> None:
    q: Queue[str] = Queue(visibility_timeout=5, clock=clock)
    q.send("A", id="a")
    q.send("B", id="b")
    q.receive()
    assert len(sweepers()) == 1
    q.close()
    assert sweepers() == []
    q.receive()  # still visible after shutdown: delivered, but arms no thread
    assert sweepers() == []
    clock.advance(5)
    q.sweep()  # expiry is still applied on demand
    assert ids(q.snapshot().visible) == ["a", "b"]
    q.close()  # idempotent


def test_repeated_extensions_keep_expiry_exact_and_the_heap_bounded(
    q: Queue[str], clock: FakeClock
) -> None:
    q.send("A", id="a")
    q.send("B", id="b")
    a = q.receive()
    b = q.receive()
    for n in range(1, 500):
        assert q.change_visibility(a.receipt, 5 + n)
        assert q.change_visibility(b.receipt, 5 + n % 7)
    assert len(q.machine.timers) <= 2 * 2 + 16 + 1  # stale entries are compacted away
    clock.advance(5 + 499 % 7)
    q.sweep()
    assert ids(q.snapshot().visible) == ["b"]
    clock.advance(499 - 499 % 7)
    q.sweep()
    assert ids(q.snapshot().visible) == ["b", "a"]


def test_at_least_once_a_slow_consumer_processes_twice_an_idempotent_one_once(
    q: Queue[str], clock: FakeClock
) -> None:
    """The contract's point: delivery is at-least-once, so only an idempotent consumer is safe."""
    q.send("charge card 42", id="pay-1")
    processed: list[str] = []  # side effects a naive consumer performs
    seen: set[str] = set()  # what an idempotent consumer remembers

    def handle(body: str, msg_id: str, idempotent: bool) -> None:
        if idempotent and msg_id in seen:
            return
        seen.add(msg_id)
        processed.append(body)

    slow = q.receive()  # consumer A, slower than its visibility timeout
    clock.advance(6)
    q.sweep()
    fast = q.receive()  # consumer B gets the redelivery
    assert (slow.id, slow.attempt, fast.id, fast.attempt) == ("pay-1", 1, "pay-1", 2)
    handle(fast.body, fast.id, idempotent=False)
    assert q.delete(fast.receipt) is True
    handle(slow.body, slow.id, idempotent=False)  # A finally finishes its work...
    assert q.delete(slow.receipt) is False  # ...and its ack is refused: too late
    assert processed == ["charge card 42", "charge card 42"]  # processed twice
    processed.clear()
    seen.clear()
    handle(fast.body, fast.id, idempotent=True)
    handle(slow.body, slow.id, idempotent=True)
    assert processed == ["charge card 42"]
