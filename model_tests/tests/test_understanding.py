"""The five "check your understanding" questions of the first seed, each answered by running it.

Read with ``docs/walkthrough.md`` (section "Check your understanding"), which explains each one:

- Q1: the duplicate-delivery race, step by step: the TLC counterexample to ``ExactlyOnce``
  replayed on ``impl.Queue``, and the line at which A's receipt goes stale;
- Q2: why receive must pick and stamp in one critical section: a mutant that does not hands
  the same delivery to two consumers;
- Q3: which condition the sweeper must signal (``not_empty``), and the lost wakeup without it;
- Q4: where the dead-letter policy lives (*release*) and who owns the receive count (the
  message's record: ``attempt``);
- Q5: why holding a lock across processing is wrong: it serialises the consumers, and it does
  not even prevent the duplicate.

No test sleeps or polls to coordinate: time is a fake clock, threads meet at events, barriers
and counted waits, and every wait is bounded so a bug fails a test instead of hanging it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import spec
from impl import Empty, FakeClock, Message, Queue, ShutDown
from model_tests.linearizability import (
    HistoryRecorder,
    Linearizable,
    NotLinearizable,
    QueueAdapter,
    check,
    format_history,
)
from model_tests.mutants import ForgetfulSweeperQueue, SplitReceiveQueue
from model_tests.support import BOUND, ProbeClock
from model_tests.tests.replay import Consumers, impl_view, tlc_view
from tla.counterexample import parse_trace

#: The TLC counterexample to ExactlyOnce, as the diagram tool keeps it beside its picture.
TRACE = Path(__file__).resolve().parents[2] / "docs" / "diagrams" / "exactly_once.trace"


# -- test devices -------------------------------------------------------------------------------
#
# For replaying TLC's trace the test plays the sweeper: ``ProbeClock.advance(dt, wake=False)``
# wakes nobody, not even the queue's sweeper thread, and the test calls ``q.sweep()`` exactly
# where the trace has a ``Sweep`` step, so a receipt is live until that line and stale after it.
# (The sweeper thread starts with the first deadline; wait until it sleeps,
# ``wait_for_waiters(1)``, before moving the time.) ``impl.FakeClock``'s ``advance`` wakes every
# wait whose deadline it reaches, as real time does.


def in_flight(q: Queue[Any]) -> dict[str, int]:
    """Id -> attempt of each in-flight message: whose receipt is live right now."""
    return {m.id: m.attempt for m in q.snapshot().in_flight}


def visible(q: Queue[Any]) -> list[tuple[str, int]]:
    return [(m.id, m.attempt) for m in q.snapshot().visible]


def start(target: Callable[[], None], name: str) -> threading.Thread:
    t = threading.Thread(target=target, name=name, daemon=True)
    t.start()
    return t


# =============================================================================================
# Q1. Trace the duplicate-delivery race step by step: A receives, the sweeper fires, B
#     receives, A deletes. At which line does A's handle become stale, and what stops A's
#     delete from harming B?
# =============================================================================================


def test_q1_duplicate_race_step_by_step() -> None:
    # The TLC counterexample to ExactlyOnce (tla/ExactlyOnce.cfg; the trace is
    # docs/diagrams/exactly_once.trace, drawn in docs/diagrams/duplicate_race.mmd), one impl call
    # per TLC step. The test plays the sweeper, so expiry happens exactly at the q.sweep() line.
    clock = ProbeClock()
    with Queue[str](capacity=1, visibility_timeout=1.0, clock=clock) as q:
        q.send("a", id="a")  # State 2, Produce: a is VISIBLE, attempt 0
        a = q.receive(block=False)  # State 3, Consume(c1): A holds receipt (a, 1), deadline 1
        assert (a.id, a.attempt, a.receipt) == ("a", 1, q.receipt("a", 1))
        assert clock.wait_for_waiters(1)  # the queue's sweeper thread sleeps for good now

        clock.advance(1.0, wake=False)  # State 4, Clock: now = 1, A's deadline has passed ...
        assert in_flight(q) == {"a": 1}  # ... but nothing happens until the sweeper runs

        # State 5, Sweep. THIS is the line at which A's receipt becomes stale: expiry *releases*
        # the message (impl/machine.py, Machine.release: it leaves in_flight and is appended to the
        # visible tail, attempt kept), and a receipt is live only while its message is in
        # flight with exactly that attempt (Machine.live; Live(r) in tla/Queue.tla).
        q.sweep()
        assert in_flight(q) == {} and visible(q) == [("a", 1)]

        b = q.receive(block=False)  # State 6, Consume(c2): B gets a again, attempt 2
        assert (b.id, b.attempt) == ("a", 2) and b.receipt != a.receipt

        before = q.snapshot()
        # State 7, Finish(c1): A did the work and deletes with its stale receipt. What stops
        # it from harming B: the receipt names the delivery (queue, id, attempt), not the
        # message; the machine finds attempt 2 in flight, not 1, so delete returns False and
        # changes nothing. B's delivery is untouched.
        assert q.delete(a.receipt) is False
        assert q.snapshot() == before

        assert q.delete(b.receipt) is True  # State 8, Finish(c2): a is DONE
        assert q.snapshot().done == frozenset({"a"})
    processed = [a.id, b.id]  # both consumers did the work
    assert processed.count("a") == 2  # processed twice: at-least-once, never exactly-once


def test_q1_a_delete_after_the_deadline_but_before_the_sweep_still_wins() -> None:
    # The other order the contract allows: a passed deadline changes nothing by itself, so a
    # late delete that lands before the sweep wins, and the sweep then has nothing to release.
    clock = ProbeClock()
    with Queue[str](visibility_timeout=1.0, clock=clock) as q:
        q.send("a", id="a")
        a = q.receive(block=False)
        assert clock.wait_for_waiters(1)  # the sweeper thread sleeps: only q.sweep() expires
        clock.advance(5.0, wake=False)
        assert q.delete(a.receipt) is True
        q.sweep()
        assert q.stats().done == 1 and visible(q) == [] and in_flight(q) == {}


def test_q1_the_same_race_with_the_queues_own_sweeper_thread() -> None:
    # With impl.FakeClock the background sweeper wakes on advance and may release a before the
    # test's q.sweep(); after q.sweep() the release has happened either way, so every outcome
    # below is the same as in the step-by-step test.
    clock = FakeClock()
    with Queue[str](capacity=1, visibility_timeout=1.0, clock=clock) as q:
        q.send("a", id="a")
        a = q.receive(block=False)
        clock.advance(1.0)
        q.sweep()
        b = q.receive(block=False)
        assert (b.id, b.attempt) == ("a", 2)
        assert q.delete(a.receipt) is False
        assert q.delete(b.receipt) is True


def test_q1_replays_the_tlc_counterexample_state_by_state() -> None:
    # Every step of the committed TLC trace becomes the impl call it stands for, and after each
    # one the queue must show exactly the state TLC printed. tests/test_diagrams.py checks that
    # the committed trace is what TLC finds today.
    steps = parse_trace(TRACE.read_text(encoding="utf-8"))
    actions = [s.action for s in steps]
    assert actions == ["Initial", "Produce", "Consume", "Clock", "Sweep", "Consume", "Finish",
                       "Finish"]  # fmt: skip
    clock = ProbeClock()  # the test plays the sweeper: Sweep steps are q.sweep()
    with Queue[str](capacity=1, visibility_timeout=None, clock=clock) as q:
        consumers = Consumers(q, clock)
        for step in consumers.replay(steps):
            assert impl_view(q.snapshot()) == tlc_view(step), f"after state {step.number}"
    # The stale delete lost, the live one won.
    assert consumers.finishes == [("c1", ("a", 1), False), ("c2", ("a", 2), True)]


# =============================================================================================
# Q2. Why must pick-visible / stamp-deadline / insert-in-flight be a single atomic step?
#     Construct the failure if it isn't.
# =============================================================================================


# The mutant lives in the catalogue of classic bugs (model_tests/mutants.py): receive picks the
# head in one critical section and stamps it in a second one, with ``between`` run in the window.


def _two_concurrent_receives(q: Queue[str], gate: Callable[[], object]) -> HistoryRecorder:
    """Send a and b, then let two consumer threads receive at once; ``gate`` lines them up."""
    rec = HistoryRecorder(QueueAdapter(visibility_timeout=None))
    rec.call("producer", "send", q.send, "A", id="a")
    rec.call("producer", "send", q.send, "B", id="b")
    errors: list[BaseException] = []

    def consumer(name: str) -> Callable[[], None]:
        def run() -> None:
            try:
                gate()
                rec.call(name, "receive", q.receive)
            except BaseException as e:
                errors.append(e)

        return run

    threads = [start(consumer(n), n) for n in ("c1", "c2")]
    for t in threads:
        t.join(BOUND)
        assert not t.is_alive()
    assert not errors, errors
    return rec


def _delivered(rec: HistoryRecorder) -> list[tuple[str, int]]:
    """(id, attempt) of every message the recorded receives returned."""
    return [(m.id, m.attempt) for c in rec.calls() if isinstance(m := c.value, Message)]


def test_q2_split_pick_and_stamp_hands_one_delivery_to_two_consumers() -> None:
    # Both consumers must have picked before either stamps: the barrier in the window makes the
    # bad interleaving happen every time, with no timing involved.
    window = threading.Barrier(2, timeout=BOUND)
    q = SplitReceiveQueue[str](visibility_timeout=None, clock=FakeClock(), between=window.wait)
    rec = _two_concurrent_receives(q, gate=lambda: None)
    got = sorted(_delivered(rec))
    assert got == [("a", 1), ("a", 1)]  # one message, one attempt, TWO consumers
    assert visible(q) == [("b", 0)]  # while b sits there, never handed out
    # AttemptsCount (deliveries of a carry attempts 1, 2, 3, ... with no repeat) is broken, and
    # OneLiveReceipt with it: both consumers hold the same "live" receipt. No sequential run of
    # the spec can explain the history:
    verdict = check(rec.history())
    assert isinstance(verdict, NotLinearizable), format_history(rec.history(), verdict)


def test_q2_the_real_receive_is_one_critical_section() -> None:
    # impl.Queue.receive pops the head, stamps attempt and deadline and records it in flight
    # under one lock: there is no window to hook into, so the barrier lines the consumers up
    # *before* the call, as close together as threads can get.
    gate = threading.Barrier(2, timeout=BOUND)
    q = Queue[str](visibility_timeout=None, clock=FakeClock())
    rec = _two_concurrent_receives(q, gate=gate.wait)
    got = sorted(_delivered(rec))
    assert got == [("a", 1), ("b", 1)]
    verdict = check(rec.history())
    assert isinstance(verdict, Linearizable), format_history(rec.history(), verdict)
    q.close()


# =============================================================================================
# Q3. The sweeper re-queues an expired message. Which condition must it signal, and what bug
#     appears if it forgets?
# =============================================================================================


# ForgetfulSweeperQueue (model_tests/mutants.py): expiry re-queues the message but does not
# signal ``not_empty``; everything else is the real queue.


@pytest.mark.parametrize("queue_class", [Queue, ForgetfulSweeperQueue], ids=["real", "forgetful"])
def test_q3_the_sweeper_must_signal_not_empty(queue_class: type[Queue[str]]) -> None:
    clock = FakeClock()
    q = queue_class(visibility_timeout=1.0, clock=clock)
    q.send("a", id="a")
    a = q.receive(block=False)  # A takes a, deadline 1; the sweeper thread now waits for t = 1
    outcome: list[object] = []
    woke = threading.Event()

    def receiver_b() -> None:
        try:
            outcome.append(q.receive())  # blocks: nothing is visible; no deadline of its own
        except ShutDown as e:
            outcome.append(e)
        woke.set()

    b = start(receiver_b, "B")
    assert clock.wait_for_waiters(2)  # the sweeper (until t = 1) and B (until notified) wait
    clock.advance(1.0)  # wakes the sweeper only, as real time would: B has no deadline
    q.sweep()  # after this line a has been released, by the sweeper thread or by us
    if queue_class is Queue:
        # The release signalled not_empty: B woke and received the redelivery.
        assert woke.wait(BOUND)
        (m,) = outcome
        assert isinstance(m, Message) and (m.id, m.attempt) == ("a", 2)
        with pytest.raises(Empty):
            q.receive(block=False)
    else:
        # The LOST WAKEUP: a is visible, B waits for it, and nobody tells B. A consumer that
        # comes later takes it at once; B would sleep until some unrelated send signals.
        assert visible(q) == [("a", 1)]
        late = q.receive(block=False)
        assert (late.id, late.attempt) == ("a", 2)
        assert not woke.is_set() and outcome == []
    q.close()  # shutdown wakes every receiver (notify_all)
    assert woke.wait(BOUND)
    b.join(BOUND)
    assert not b.is_alive()
    if queue_class is ForgetfulSweeperQueue:
        (e,) = outcome
        assert isinstance(e, ShutDown)  # B never received anything
    assert q.delete(a.receipt) is False  # and A's receipt went stale at the release, as in Q1


# =============================================================================================
# Q4. Where would you add a dead-letter policy (received N times -> sidelined), and which
#     structure owns the receive count?
# =============================================================================================


def _release_by(how: str, q: Queue[str], clock: FakeClock, m: Message[str]) -> None:
    if how == "expire":
        clock.advance(1.0)
        q.sweep()
    elif how == "retry":
        assert q.retry(m.receipt) is True
    else:
        assert q.change_visibility(m.receipt, 0) is True


@pytest.mark.parametrize("how", ["expire", "retry", "change_visibility(0)"])
def test_q4_dead_lettering_happens_in_release_and_attempt_is_the_count(how: str) -> None:
    # The policy lives in ONE place per layer: *release* (spec/transitions.py: release and
    # dead_letters_on_release; impl/machine.py: Machine.release and Machine.dies;
    # tla/Queue.tla: Release and Dies).
    # Retry and change_visibility(0) release their one message; expiry releases each due message
    # with the same release rule (in TLA+, Expire is a fold of Release over the due messages, in
    # expiry order, as Retry is Release of one). The count is the message's
    # own `attempt`, kept in its record across releases (not in a consumer, not in a receipt,
    # which only carries a copy to name one delivery).
    clock = FakeClock()
    cfg = spec.Config(capacity=1, max_receives=2)
    s = spec.initial(cfg)
    with Queue[str](capacity=1, visibility_timeout=1.0, max_receives=2, clock=clock) as q:
        q.send("A", id="a")
        s, _ = spec.send(s, "a", "A")

        m1 = q.receive(block=False)
        _release_by(how, q, clock, m1)
        assert not spec.dead_letters_on_release(cfg, m1.attempt)  # 1 < max_receives
        assert visible(q) == [("a", 1)]  # back in the FIFO; the record kept attempt 1

        m2 = q.receive(block=False)
        assert m2.attempt == 2  # the count continued from the record
        _release_by(how, q, clock, m2)
        assert spec.dead_letters_on_release(cfg, m2.attempt)  # 2 >= max_receives: DEAD

        (dead,) = q.dead_letters()
        assert (dead.id, dead.body, dead.attempt) == ("a", "A", 2)  # attempts intact
        assert q.stats() == type(q.stats())(visible=0, in_flight=0, done=0, cancelled=0, dead=1)
        assert q.delete(m2.receipt) is False  # terminal: no receipt acts on it any more
        q.send("B", id="b", block=False)  # dead-lettering freed its capacity slot

    # The spec takes the same path to the same end.
    s, d1 = spec.receive(s, 0.0, 1.0)
    assert d1 is not None
    s = spec.release(s, "a")
    s, d2 = spec.receive(s, 0.0, 1.0)
    assert d2 is not None and d2.attempt == 2
    s = spec.release(s, "a")
    m = s.get("a")
    assert s.dead == ("a",) and m is not None and (m.status, m.attempt) == (spec.Status.DEAD, 2)


# =============================================================================================
# Q5. "Hold a lock across the consumer's processing so delete and expiry can't race." Why is
#     that wrong in a real system, and what does it cost even in-memory?
# =============================================================================================


class WatchedLock:
    """A mutex that can say how many threads are waiting for it (so tests need not guess)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._held = False
        self._waiting = 0

    def acquire(self, blocking: bool = True) -> bool:
        with self._cond:
            if not blocking:
                if self._held:
                    return False
                self._held = True
                return True
            self._waiting += 1
            self._cond.notify_all()
            while self._held:
                self._cond.wait()
            self._waiting -= 1
            self._held = True
            return True

    def release(self) -> None:
        with self._cond:
            self._held = False
            self._cond.notify_all()

    def wait_for_waiters(self, n: int, timeout: float = BOUND) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._waiting >= n, timeout)


class LockHoldingConsumer:
    """The proposal: every consumer holds one shared lock from its receive to its delete."""

    def __init__(self, q: Queue[str], lock: WatchedLock) -> None:
        self.q = q
        self.lock = lock

    def receive(self) -> Message[str]:
        self.lock.acquire()
        try:
            return self.q.receive(block=False)
        except BaseException:
            self.lock.release()
            raise

    def delete(self, m: Message[str]) -> bool:
        try:
            return self.q.delete(m.receipt)
        finally:
            self.lock.release()


def test_q5_a_lock_held_across_processing_serialises_the_consumers() -> None:
    q = Queue[str](visibility_timeout=30.0, clock=FakeClock())
    q.send("A", id="a")
    q.send("B", id="b")
    lock = WatchedLock()
    log: list[str] = []
    c1_has_a, c1_may_finish, c2_has_b = threading.Event(), threading.Event(), threading.Event()

    def c1() -> None:
        me = LockHoldingConsumer(q, lock)
        m = me.receive()
        log.append(f"c1 receives {m.id}")
        c1_has_a.set()
        assert c1_may_finish.wait(BOUND)  # processing a: waits for the test, not for time
        log.append(f"c1 deletes {m.id}: {me.delete(m)}")

    def c2() -> None:
        me = LockHoldingConsumer(q, lock)
        m = me.receive()
        log.append(f"c2 receives {m.id}")
        c2_has_b.set()
        me.delete(m)

    t1 = start(c1, "c1")
    assert c1_has_a.wait(BOUND)
    t2 = start(c2, "c2")
    assert lock.wait_for_waiters(1)  # c2 is blocked on the lock ...
    assert visible(q) == [("b", 0)]  # ... while b is visible and nobody else wants it
    assert not c2_has_b.is_set()  # (it cannot have it: the lock is c1's until c1 deletes)
    c1_may_finish.set()
    assert c2_has_b.wait(BOUND)
    for t in (t1, t2):
        t.join(BOUND)
        assert not t.is_alive()
    assert log == ["c1 receives a", "c1 deletes a: True", "c2 receives b"]

    # Without the lock, the same c2 receives b while c1 is still processing a.
    q.send("C", id="c")
    q.send("D", id="d")
    first = q.receive(block=False)
    second = q.receive(block=False)  # at once: nothing to wait for
    assert (first.id, second.id) == ("c", "d") and in_flight(q) == {"c": 1, "d": 1}
    q.close()


def test_q5_a_lock_held_across_processing_does_not_prevent_the_duplicate() -> None:
    clock = FakeClock()
    with Queue[str](visibility_timeout=1.0, clock=clock) as q:
        q.send("A", id="a")
        lock = WatchedLock()
        c1, c2 = LockHoldingConsumer(q, lock), LockHoldingConsumer(q, lock)
        m1 = c1.receive()
        # c1 is slow, holding the lock. Time passes its deadline and the sweeper releases a:
        # the sweeper does not take the consumers' lock (if it had to, one stuck consumer would
        # stop every expiry, which is what visibility timeouts exist to survive).
        clock.advance(1.0)
        q.sweep()
        assert visible(q) == [("a", 1)]
        assert c1.delete(m1) is False  # the lock did not stop the race: the delete lost it
        m2 = c2.receive()  # and the next consumer processes a again
        assert (m2.id, m2.attempt) == ("a", 2)
        assert c2.delete(m2) is True
        # A consumer that crashes while holding the lock stops everyone for good, although
        # the queue itself is ready to redeliver: nobody can ever receive again.
        q.send("B", id="b")
        crashed = c1.receive()
        assert crashed.id == "b"  # ... and c1 dies here, never releasing the lock
        clock.advance(1.0)
        q.sweep()
        assert visible(q) == [("b", 1)]  # the queue redelivers,
        assert lock.acquire(blocking=False) is False  # but no consumer may receive it
