"""Races with real threads, driven by the fake clock: no sleeps, every wait bounded.

- delete versus sweep: both orders are correct; the queue must match the spec for the order
  that happened;
- a receiver blocked with no timeout is woken by the sweeper thread's redelivery;
- a sender blocked on a full queue is woken by delete, by cancel and by dead-lettering;
- many producers and consumers, some of which crash, with a driver moving the clock: nothing is
  lost, each message is deleted exactly once or dead-lettered, attempts run 1, 2, 3, ...;
- delays and batches (issue 14): a receiver (or a receive_batch) blocked with no timeout is
  woken by the sweeper firing a delay; a blocked send_batch wakes only when all its entries fit
  (room for one of two is not enough, and nothing of the batch is accepted meanwhile); a batch
  larger than the capacity is a ValueError before any waiting.

To know that a thread is really blocked before acting, the tests use
:class:`~model_tests.support.ProbeClock`, which logs every wait on it: the queue calls
``clock.wait`` with its lock held, and the lock is only released inside that wait, so once the
wait is logged any later call that takes the lock finds the thread waiting.
"""

from __future__ import annotations

import queue
import threading
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable
from functools import partial

import pytest

import impl
import spec
from model_tests.projection import from_snapshot, from_state
from model_tests.support import BOUND, NEVER, Call, ProbeClock, Spawn


def _after(barrier: threading.Barrier, fn: Callable[[], object]) -> Callable[[], object]:
    """``fn``, to be called once every party has reached ``barrier``."""

    def run() -> object:
        barrier.wait()
        return fn()

    return run


# -- (a) delete versus sweep --------------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("max_receives", [None, 1])
def test_delete_races_the_sweep_and_either_order_is_consistent(max_receives: int | None) -> None:
    orders: Counter[str] = Counter()
    config = spec.Config(capacity=2, max_receives=max_receives)
    for i in range(200):
        clock = ProbeClock()
        with impl.Queue[str](
            capacity=2, visibility_timeout=1.0, max_receives=max_receives, clock=clock
        ) as q:
            q.send("A", id="a")
            q.send("B", id="b")
            m = q.receive(block=False)
            # The sweeper thread is waiting for the deadline before time passes; otherwise it
            # could see the new time on its first round and win every race. Its wait is logged
            # with the queue's lock held, so once we hold the lock it is asleep in that wait.
            assert clock.wait_for_call(lambda c: c.deadline is not None), "no sweeper waited"
            with q.mutex:
                pass
            # Past the deadline, but no sweeper has run: the receipt is still live.
            clock.advance(1.0, wake=False)
            barrier = threading.Barrier(2, timeout=BOUND)
            # Alternate who starts first: under the GIL the thread that reaches the barrier last
            # tends to run on, so this lets both orders happen.
            delete = _after(barrier, partial(q.delete, m.receipt))
            sweep = _after(barrier, q.sweep)
            if i % 2:
                deleter, sweeper = Call(delete, "deleter"), Call(sweep, "sweep")
            else:
                sweeper, deleter = Call(sweep, "sweep"), Call(delete, "deleter")
            sweeper.result()
            deleted = deleter.result()
            assert isinstance(deleted, bool)

            s = spec.initial(config)
            s, _ = spec.send(s, "a", "A")
            s, _ = spec.send(s, "b", "B")
            s, d = spec.receive(s, now=0.0, vt=1.0)
            assert d is not None
            if deleted:  # delete, then expire: nothing left to expire
                s, ok = spec.delete(s, d.receipt)
                s, _ = spec.expire(s, 1.0)
            else:  # expire, then delete: the receipt is stale by then
                s, _ = spec.expire(s, 1.0)
                s, ok = spec.delete(s, d.receipt)
            assert ok is deleted
            assert from_snapshot(q.snapshot()) == from_state(s)
            assert q.delete(m.receipt) is False, "a receipt acted twice"
            orders["delete first" if deleted else "sweep first"] += 1
    assert sum(orders.values()) == 200
    print(f"orders seen: {dict(orders)}")


# -- (b) a blocked receiver is woken by the sweeper's redelivery ---------------------------------


@pytest.mark.timeout(60)
def test_blocked_receiver_is_woken_by_the_sweepers_redelivery(spawn: Spawn) -> None:
    clock = ProbeClock()
    with impl.Queue[str](visibility_timeout=5.0, clock=clock) as q:
        q.send("A", id="a")
        first = q.receive(block=False)
        # No timeout: advancing the clock does not wake this receiver by itself; only a notify
        # from whoever makes a message visible (here the sweeper thread) can.
        receiver = spawn(q.receive)
        assert clock.wait_for_thread(receiver.thread), "the receiver never blocked"
        spawn(lambda: clock.advance(5.0)).result()
        m = receiver.result()  # fails the test if the sweeper's release did not wake it
    assert (m.id, m.body, m.attempt) == ("a", "A", 2)
    assert m.receipt != first.receipt


# -- (c) a blocked sender is woken by whatever frees a slot --------------------------------------


def _free_by_delete(q: impl.Queue[str], clock: ProbeClock, m: impl.Message[str]) -> None:
    assert q.delete(m.receipt)


def _free_by_cancel(q: impl.Queue[str], clock: ProbeClock, m: impl.Message[str]) -> None:
    assert q.cancel(m.id)


def _free_by_dead_lettering_on_retry(
    q: impl.Queue[str], clock: ProbeClock, m: impl.Message[str]
) -> None:
    assert q.retry(m.receipt)  # max_receives=1: this release dead-letters


def _free_by_dead_lettering_on_expiry(
    q: impl.Queue[str], clock: ProbeClock, m: impl.Message[str]
) -> None:
    clock.advance(5.0)  # the sweeper thread expires the delivery, which dead-letters it


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "free",
    [
        _free_by_delete,
        _free_by_cancel,
        _free_by_dead_lettering_on_retry,
        _free_by_dead_lettering_on_expiry,
    ],
    ids=["delete", "cancel", "dead-letter by retry", "dead-letter by the sweeper"],
)
def test_blocked_sender_is_woken_when_a_slot_is_freed(
    free: Callable[[impl.Queue[str], ProbeClock, impl.Message[str]], None],
    spawn: Spawn,
) -> None:
    clock = ProbeClock()
    with impl.Queue[str](capacity=1, visibility_timeout=5.0, max_receives=1, clock=clock) as q:
        q.send("A", id="a")
        m = q.receive(block=False)  # in flight, still holding the only slot
        sender = spawn(lambda: q.send("B", id="b"))
        assert clock.wait_for_thread(sender.thread), "the sender never blocked"
        assert not sender.finished
        free(q, clock, m)
        # Fails the test if the freed slot did not wake the sender.
        assert sender.result() == "b"
    assert [x.id for x in q.snapshot().visible] == ["b"]


# -- (d) producers, consumers (some crash) and a clock driver -----------------------------------

PRODUCERS = 4
CONSUMERS = 4
PER_PRODUCER = 50
MESSAGES = PRODUCERS * PER_PRODUCER
MAX_RECEIVES = 3
VT = 2.0


def _crashes(consumer: int, id: str, attempt: int) -> bool:
    """Consumers 0 and 1 crash on about half their deliveries (deterministic, per delivery)."""
    return consumer < 2 and zlib.crc32(f"{id}/{attempt}".encode()) % 2 == 0


@pytest.mark.timeout(120)
def test_many_producers_and_crashing_consumers_lose_nothing() -> None:
    clock = impl.FakeClock()
    q = impl.Queue[str](capacity=16, visibility_timeout=VT, max_receives=MAX_RECEIVES, clock=clock)
    lock = threading.Lock()
    deliveries: dict[str, list[int]] = defaultdict(list)
    deleted: Counter[str] = Counter()
    crashed: queue.Queue[str | None] = queue.Queue()
    all_terminal = threading.Event()

    def check_finished() -> None:
        s = q.stats()
        if s.done + s.dead == MESSAGES and not all_terminal.is_set():
            all_terminal.set()
            q.shutdown()  # wakes every blocked consumer with ShutDown
            crashed.put(None)  # wakes the driver

    def produce(p: int) -> None:
        for j in range(PER_PRODUCER):
            q.send(f"body-{p}-{j}", id=f"p{p}-{j}")

    def consume(c: int) -> None:
        while True:
            try:
                m = q.receive()
            except impl.ShutDown:
                return
            with lock:
                deliveries[m.id].append(m.attempt)
            assert m.body == f"body-{m.id[1:]}"
            if _crashes(c, m.id, m.attempt):
                crashed.put(m.id)  # never deletes: only expiry brings the message back
                continue
            if q.delete(m.receipt):
                with lock:
                    deleted[m.id] += 1
                check_finished()
            # A False delete: this delivery expired first and was handed to someone else (or
            # dead-lettered). At-least-once: the work may have been done twice.

    def drive() -> None:
        # Each crash leaves a delivery whose deadline is at most VT ahead: move the clock past it,
        # then sweep so that any dead-lettering is applied before checking for the end.
        while crashed.get(timeout=BOUND * 3) is not None:
            clock.advance(VT)
            q.sweep()
            check_finished()

    try:
        workers = [Call(partial(produce, p), f"producer-{p}") for p in range(PRODUCERS)]
        workers += [Call(partial(consume, c), f"consumer-{c}") for c in range(CONSUMERS)]
        driver = Call(drive, "driver")
        finished = all_terminal.wait(BOUND * 6)
        for w in [*workers, driver]:
            w.result()  # fails the test if the worker is stuck or raised
    finally:
        q.close()
        crashed.put(None)
    assert finished, f"not every message finished: {q.stats()}"

    snap = q.snapshot()
    ids = {f"p{p}-{j}" for p in range(PRODUCERS) for j in range(PER_PRODUCER)}
    dead = {m.id for m in snap.dead}
    assert (snap.visible, snap.in_flight, snap.cancelled) == ((), (), frozenset())
    assert snap.done | dead == ids, "a message was lost"
    assert not snap.done & dead, "a message is both done and dead"
    assert set(deleted) == snap.done and set(deleted.values()) <= {1}, "deleted more than once"
    for id in ids:
        attempts = deliveries[id]
        assert sorted(attempts) == list(range(1, len(attempts) + 1)), f"{id}: attempts {attempts}"
        if id in dead:
            assert len(attempts) == MAX_RECEIVES, f"{id} dead after {attempts}"
    for m in snap.dead:
        assert m.attempt == MAX_RECEIVES
    redelivered = sum(1 for a in deliveries.values() if len(a) > 1)
    print(f"{len(snap.done)} deleted, {len(dead)} dead-lettered, {redelivered} redelivered")


# -- (e) delays and batches ----------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("batch", [False, True], ids=["receive", "receive_batch"])
def test_blocked_receiver_is_woken_when_a_delay_fires(batch: bool, spawn: Spawn) -> None:
    """A delayed message becomes visible only when the sweeper fires its delay; that sweep
    must wake a receiver blocked with no timeout (which the clock moving does not wake)."""
    clock = ProbeClock()
    with impl.Queue[str](delay=2.0, clock=clock) as q:
        q.send("A", id="a")  # the queue's delay
        q.send("B", id="b", delay=3.0)
        receiver = spawn((lambda: q.receive_batch(10)) if batch else (lambda: [q.receive()]))
        assert clock.wait_for_thread(receiver.thread), "the receiver never blocked"
        assert q.stats().delayed == 2 and not receiver.finished
        spawn(lambda: clock.advance(2.0)).result()
        got = receiver.result()  # fails the test if the delay's firing did not wake it
        assert [(m.id, m.body, m.attempt) for m in got] == [("a", "A", 1)]
        assert [m.id for m in q.snapshot().delayed] == ["b"]


@pytest.mark.timeout(60)
def test_blocked_send_batch_wakes_only_when_all_its_entries_fit(spawn: Spawn) -> None:
    clock = ProbeClock()
    with impl.Queue[str](capacity=3, clock=clock) as q:
        for x in ("a", "b", "c"):
            q.send(x.upper(), id=x)
        a, b = q.receive(), q.receive()
        sender = spawn(lambda: q.send_batch([impl.Entry("D", id="d"), impl.Entry("E", id="e")]))
        name = sender.thread.name
        assert clock.wait_for_thread(sender.thread), "the sender never blocked"
        waits = {id(c) for c in clock.calls if c.thread == name}
        assert q.delete(a.receipt)  # room for one: not enough
        # The delete may wake the sender (one slot can enable a single send); it then finds room
        # for one of its two entries, accepts none and waits again. Once it waits again (logged
        # with the lock held) and we hold the lock, it is asleep: nothing of the batch was
        # accepted. (A queue that knows the sender needs two need not wake it at all: then this
        # waits NEVER seconds for a wait that does not come, and the sender still sleeps.)
        clock.wait_for_call(lambda c: c.thread == name and id(c) not in waits, timeout=NEVER)
        with q.mutex:
            assert not sender.finished
            snap = q.snapshot()
        assert not {"d", "e"} & {m.id for m in (*snap.visible, *snap.in_flight)}
        assert q.stats().visible == 1
        assert q.delete(b.receipt)  # room for both
        assert sender.result() == ["d", "e"]
        assert [m.id for m in q.snapshot().visible] == ["c", "d", "e"]


@pytest.mark.timeout(60)
def test_a_batch_larger_than_the_capacity_is_a_value_error_before_waiting(spawn: Spawn) -> None:
    clock = ProbeClock()
    with impl.Queue[str](capacity=2, clock=clock) as q:
        entries = [impl.Entry(x, id=x.lower()) for x in "ABC"]
        call = spawn(lambda: q.send_batch(entries))  # blocking, no timeout
        with pytest.raises(ValueError, match="capacity"):
            call.result()
        assert not [c for c in clock.calls if c.thread == call.thread.name], "it waited"
        assert q.stats() == impl.Stats(0, 0, 0, 0, 0, 0)
        assert q.send_batch(entries[:2]) == ["a", "b"]  # no id of the refused batch was taken
