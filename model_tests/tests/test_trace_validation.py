"""Trace validation: traces recorded from the real ``impl.Queue`` are behaviours of ``Queue.tla``.

``Queue.record_trace`` passes every transition to a sink inside its critical section, so a
multi-threaded run yields its transitions in linearization order. ``tla.trace.check_trace``
turns them into the constant of ``tla/TraceQueue.tla`` and asks TLC whether some behaviour of
``Queue`` takes exactly those steps with exactly those results. A run of two producers and two
consumers on a ``FakeClock`` that the test advances (with expiries, a retry, a dead letter, a
late delete racing the sweeper) must be accepted whatever the interleaving was; the same trace
doctored so that a stale receipt deletes must be rejected, at that event.

Every test name contains ``trace`` (``pytest -k trace``). The TLC runs need Java.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from impl import Entry, FakeClock, FifoQueue, Full, Queue, ShutDown, TraceStep
from model_tests.support import BOUND
from tla.tlc import available as tlc_available
from tla.trace import Event, Fifo, TraceError, check_events, check_trace, to_events

needs_java = pytest.mark.skipif(not tlc_available(), reason="TLC needs Java and tla2tools.jar")


#: What a consumer does with each message (by id), on its first delivery:
#:   ok     delete it;
#:   retry  give it back at once (retry), delete the redelivery;
#:   die    give it back every time: after max_receives = 3 deliveries it is dead-lettered;
#:   drop   forget it (its processing failed): it expires, and the redelivery is deleted after
#:          a delete with the old, now stale, receipt has returned False;
#:   late   hold it until the clock has passed its deadline, then delete it: this races the
#:          sweeper, and either order is a correct behaviour.
PLAN = {
    "m0": "ok",
    "m1": "drop",
    "m2": "retry",
    "m3": "die",
    "m4": "ok",
    "m5": "late",
    "m6": "retry",
    "m7": "drop",
}
CAPACITY = 4  # more than the 3 messages held in phase 1, so the producers can finish
VT = 2.0


class Run:
    """Two producers and two consumers on one queue with a fake clock, the trace recorded."""

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.q = Queue[str](
            capacity=CAPACITY, visibility_timeout=VT, max_receives=3, clock=self.clock
        )
        self.steps: list[TraceStep] = []
        self.q.record_trace(self.steps.append)
        # Notified by every worker after each call it made: what the test thread waits on.
        self.progress = threading.Condition()
        self.produced = 0
        self.late_holding = threading.Event()
        self.advanced = threading.Event()
        self.stale_deletes: list[bool] = []
        self.errors: list[BaseException] = []
        self.threads: list[threading.Thread] = []

    def _tick(self) -> None:
        with self.progress:
            self.progress.notify_all()

    def _worker(self, fn: Callable[[], None], name: str) -> None:
        def run() -> None:
            try:
                fn()
            except BaseException as e:  # surfaced by the test, not lost in the thread
                self.errors.append(e)
            finally:
                self._tick()

        t = threading.Thread(target=run, name=name, daemon=True)
        self.threads.append(t)
        t.start()

    def producer(self, ids: list[str]) -> None:
        for id in ids:
            self.q.send(f"body-{id}", id=id)  # blocks while the queue is full
            with self.progress:
                self.produced += 1
                self.progress.notify_all()

    def consumer(self) -> None:
        while True:
            try:
                m = self.q.receive()
            except ShutDown:
                return
            policy = PLAN[m.id]
            if policy == "die" or (policy == "retry" and m.attempt == 1):
                self.q.retry(m.receipt)
            elif policy == "drop" and m.attempt == 1:
                pass  # forgotten: the sweeper will re-queue it
            elif policy == "drop":
                stale = self.q.receipt(m.id, m.attempt - 1)
                self.stale_deletes.append(self.q.delete(stale))
                self.q.delete(m.receipt)
            elif policy == "late" and m.attempt == 1:
                self.late_holding.set()
                self._tick()
                assert self.advanced.wait(BOUND), "the test never advanced the clock"
                self.q.delete(m.receipt)  # True if it beat the sweeper, False if not
            else:
                self.q.delete(m.receipt)
            self._tick()

    def wait_until(self, predicate: Callable[[], bool], what: str) -> None:
        with self.progress:
            ok = self.progress.wait_for(lambda: bool(self.errors) or predicate(), BOUND)
        assert not self.errors, self.errors
        assert ok, f"timed out waiting until {what}: {self.q.stats()}"

    def go(self) -> None:
        ids = sorted(PLAN)
        self._worker(lambda: self.producer(ids[0::2]), "producer-0")
        self._worker(lambda: self.producer(ids[1::2]), "producer-1")
        self._worker(self.consumer, "consumer-0")
        self._worker(self.consumer, "consumer-1")
        held = sum(1 for p in PLAN.values() if p in ("drop", "late"))

        # Phase 1, no time passes: everything is finished but what is dropped or held late.
        def phase1_over() -> bool:
            s = self.q.stats()
            return (
                self.produced == len(PLAN)
                and self.late_holding.is_set()
                and s.visible == 0
                and s.in_flight == held
                and s.done + s.dead == len(PLAN) - held
            )

        self.wait_until(phase1_over, "only the dropped and the late messages are in flight")
        # Phase 2: every deadline passes; the late consumer and the sweep race.
        self.clock.advance(VT)
        self.advanced.set()
        self.q.sweep()

        def all_finished() -> bool:
            s = self.q.stats()
            return s.done + s.dead == len(PLAN) and s.in_flight == 0 and s.visible == 0

        self.wait_until(all_finished, "every message is done or dead")

    def close(self) -> None:
        self.advanced.set()
        self.q.close()  # consumers blocked in receive() raise ShutDown and return
        for t in self.threads:
            t.join(BOUND)
        assert not [t.name for t in self.threads if t.is_alive()]


@pytest.fixture(scope="module")
def recorded_run() -> Iterator[Run]:
    """One multi-threaded run, recorded once and checked by several tests."""
    run = Run()
    try:
        run.go()
    finally:
        run.close()
    yield run


# -- the recorded trace itself ------------------------------------------------------------------


def test_trace_of_a_run_records_every_transition(recorded_run: Run) -> None:
    actions = [s[0] for s in recorded_run.steps]
    assert actions.count("send") == len(PLAN)
    stats = recorded_run.q.stats()
    assert (stats.done, stats.dead) == (len(PLAN) - 1, 1)
    assert recorded_run.q.dead_letters()[0].id == "m3"
    # Both dropped messages expired; the late one expired too unless its delete won the race.
    expired = {s[2] for s in recorded_run.steps if s[0] == "expire"}
    assert {"m1", "m7"} <= expired <= {"m1", "m5", "m7"}
    assert recorded_run.stale_deletes == [False, False]
    # The recorded times are the fake clock's: 0 before the advance, VT after.
    assert {s[3] for s in recorded_run.steps} == {0.0, VT}


# -- TLC's verdicts ---------------------------------------------------------------------------


@needs_java
def test_trace_of_a_multithreaded_run_is_accepted(recorded_run: Run) -> None:
    verdict = check_trace(recorded_run.steps, capacity=CAPACITY, max_receives=3)
    assert verdict.accepted, verdict.explain() + "\n" + verdict.result.trace()
    assert verdict.matched == len(verdict.events)


def _stale_delete_index(events: list[Event]) -> int:
    return next(
        k
        for k, e in enumerate(events)
        if e["op"] == "delete" and e["ok"] is False and e["id"] in ("m1", "m7")
    )


@needs_java
def test_trace_doctored_so_a_stale_receipt_deletes_is_rejected(recorded_run: Run) -> None:
    events = to_events(recorded_run.steps)
    k = _stale_delete_index(events)
    events[k] = {**events[k], "ok": True}  # the bug of deleting by id: the stale receipt acts
    verdict = check_events(events, capacity=CAPACITY, max_receives=3)
    assert not verdict.accepted
    assert verdict.matched == k, verdict.explain()
    assert verdict.rejected_event == events[k]


@needs_java
def test_trace_doctored_to_redeliver_without_expiry_is_rejected(recorded_run: Run) -> None:
    events = to_events(recorded_run.steps)
    k = next(k for k, e in enumerate(events) if e["op"] == "expire")
    rest = [e for e in events[k + 1 :] if e["op"] != "expire"]
    doctored = events[:k] + rest  # no sweep ever ran, yet the messages come back
    verdict = check_events(doctored, capacity=CAPACITY, max_receives=3)
    assert not verdict.accepted
    # The prefix up to the removed sweep is the real run; the first event after it that relies
    # on the expiry (a redelivery, or a delete that lost to the sweeper) has no step of Queue.
    assert k <= verdict.matched < len(doctored), verdict.explain()
    rejected = verdict.rejected_event
    assert rejected is not None
    assert (rejected["op"], rejected.get("attempt")) == ("receive", 2) or (
        rejected["op"] == "delete" and rejected["ok"] is False
    ), verdict.explain()


@needs_java
def test_trace_of_every_operation_on_one_thread_is_accepted() -> None:
    clock = FakeClock(start=5.0)
    steps: list[TraceStep] = []
    with Queue[str](capacity=3, visibility_timeout=1.0, max_receives=2, clock=clock) as q:
        q.record_trace(steps.append)
        for id in ("a", "b", "c"):
            q.send(id, id=id)
        a = q.receive()
        b = q.receive()
        assert q.change_visibility(a.receipt, 3.0)  # a: deadline 8; b: deadline 6
        assert q.cancel("c") and not q.cancel("c")
        clock.advance(1.0)
        q.sweep()  # b expires
        b2 = q.receive(visibility_timeout=None)
        assert not q.retry(b.receipt) and not q.change_visibility(b.receipt, 1.0)
        assert q.change_visibility(b2.receipt, 0)  # released after 2 deliveries: dead
        assert [m.id for m in q.dead_letters()] == ["b"]
        q.send("d", id="d")
        d = q.receive()  # deadline 7
        clock.advance(2.0)
        q.sweep()  # d (deadline 7) and a (deadline 8) are both due: released by deadline
        q.record_trace(None)
        q.send("e", id="e")  # not recorded
    events = to_events(steps, start=5.0)
    assert [e["fired"] for e in events if e["op"] == "expire"] == [("b",), ("d", "a")]
    assert d.attempt == 1 and all(e.get("id") != "e" for e in events)
    verdict = check_events(events, capacity=3, max_receives=2)
    assert verdict.accepted, verdict.explain() + "\n" + verdict.result.trace()


def _batches_and_delays_run() -> list[TraceStep]:
    """One thread on a fake clock using every operation of issue 14: sends with and without a
    delay, send_batch (accepted, and refused whole for want of room), receive_batch,
    delete_batch (with a stale and a repeated receipt), change_visibility_batch (an extension
    and a release), a delay firing in the same sweep as a deadline, and purge."""
    clock = FakeClock(start=10.0)
    steps: list[TraceStep] = []
    with Queue[str](capacity=4, visibility_timeout=2.0, max_receives=3, clock=clock) as q:
        q.record_trace(steps.append)
        q.send("a", id="a")
        q.send("b", id="b", delay=2.0)  # DELAYED until 12
        assert q.send_batch([Entry("c", id="c"), Entry("d", id="d", delay=1.0)]) == ["c", "d"]
        with pytest.raises(Full):  # 4 active: a batch of two is refused whole
            q.send_batch([Entry("e", id="e"), Entry("f", id="f")], block=False)
        got = q.receive_batch(5)  # a and c, deadline 12; b and d are not deliverable yet
        assert [m.id for m in got] == ["a", "c"]
        a, c = got
        assert q.change_visibility_batch([(a.receipt, 0), (c.receipt, 3.0)]) == [True, True]
        clock.advance(1.0)
        q.sweep()  # d's delay fires at 11
        got = q.receive_batch(2, visibility_timeout=1.0)  # a (attempt 2), d; deadline 12
        assert [(m.id, m.attempt) for m in got] == [("a", 2), ("d", 1)]
        a2, _ = got
        assert q.delete_batch([a.receipt, a2.receipt, a2.receipt]) == [False, True, False]
        clock.advance(1.0)
        q.sweep()  # at 12: b's delay (started first) and d's deadline, by start order
        assert q.stats().visible == 2  # b and d; c is in flight until 13
        assert q.purge() == 3
        assert q.purge() == 0
    return steps


@needs_java
def test_trace_of_batches_delays_and_purge_is_accepted() -> None:
    steps = _batches_and_delays_run()
    assert {s[0] for s in steps} >= {
        "send",
        "send_batch",
        "receive_batch",
        "delete_batch",
        "change_visibility_batch",
        "purge",
        "expire",
    }
    events = to_events(steps, start=10.0)
    assert [e["fired"] for e in events if e["op"] == "expire"] == [("d",), ("b", "d")]
    verdict = check_events(events, capacity=4, max_receives=3)
    assert verdict.accepted, verdict.explain() + "\n" + verdict.result.trace()


@needs_java
def test_trace_doctored_so_a_delayed_message_is_delivered_early_is_rejected() -> None:
    events = to_events(_batches_and_delays_run(), start=10.0)
    k = next(k for k, e in enumerate(events) if e["op"] == "receive_batch")
    # The first receive_batch also takes b, whose delay has not fired (DelayHonoured).
    early = {**events[k], "got": (("a", 1), ("b", 1), ("c", 1))}
    verdict = check_events([*events[:k], early], capacity=4, max_receives=3)
    assert not verdict.accepted
    assert verdict.matched == k, verdict.explain()


@needs_java
def test_trace_of_a_late_delete_on_either_side_of_the_sweep_is_accepted() -> None:
    # The contract: between a deadline and the sweep the old receipt is still live, so a late
    # delete may win (a); once the sweep has released the message the same delete is refused
    # (b). close() stops the sweeper thread first, so this test decides the order itself.
    clock = FakeClock()
    steps: list[TraceStep] = []
    q = Queue[str](capacity=2, visibility_timeout=1.0, clock=clock)
    q.record_trace(steps.append)
    q.send("a", id="a")
    q.send("b", id="b")
    a, b = q.receive(), q.receive()
    q.close()
    clock.advance(1.0)
    assert q.delete(a.receipt)  # past its deadline, before any sweep: still live
    q.sweep()  # releases b only
    assert not q.delete(b.receipt)
    events = to_events(steps)
    assert [e["op"] for e in events[-3:]] == ["delete", "expire", "delete"]
    verdict = check_events(events, capacity=2, max_receives=None)
    assert verdict.accepted, verdict.explain()


# -- FIFO queues (tla/TraceQueueFifo.tla over tla/QueueFifo.tla) ------------------------------


def _fifo_run() -> list[TraceStep]:
    """One thread on a FIFO queue: two groups, a receive that skips a locked group, a retry that
    puts a message back in its place in its group, a duplicate send (a producer's retry within
    the dedup interval), a send_batch with a duplicate entry, and deletes."""
    clock = FakeClock()
    steps: list[TraceStep] = []
    with FifoQueue[str](visibility_timeout=2.0, dedup_interval=5.0, clock=clock) as q:
        q.record_trace(steps.append)
        q.send("a1", id="a1", group="g1", dedup_id="d1")
        q.send("a2", id="a2", group="g1")
        q.send("b1", id="b1", group="g2")
        a1 = q.receive()  # g1 is locked while a1 is in flight
        b1 = q.receive()  # skips g1's a2: g2's b1
        assert (a1.id, b1.id) == ("a1", "b1")
        assert q.retry(a1.receipt)  # a1 back before a2, not at the tail
        assert q.send("again", id="a1r", group="g1", dedup_id="d1") == "a1"  # a duplicate
        clock.advance(1.0)
        batch = [Entry("b2", id="b2", group="g2"), Entry("x", id="a1x", group="g1", dedup_id="d1")]
        assert q.send_batch(batch) == ["b2", "a1"]
        a1b = q.receive()
        assert (a1b.id, a1b.attempt) == ("a1", 2)
        assert q.delete(a1b.receipt) and q.delete(b1.receipt)
        assert [m.id for m in q.receive_batch(3)] == ["a2", "b2"]
    return steps


@needs_java
def test_trace_of_a_fifo_run_is_accepted() -> None:
    steps = _fifo_run()
    events = to_events(steps)
    dups = [e for e in events if e["op"] == "send" and e["dup"]]
    assert [(e["id"], e["earlier"]) for e in dups] == [("a1r", "a1")]
    batch = next(e for e in events if e["op"] == "send_batch")
    assert batch["entries"] == (("b2", 0), (f"dup{events.index(batch)}_1", 0))
    verdict = check_events(events, capacity=None, max_receives=None, fifo=Fifo(5))
    assert verdict.accepted, verdict.explain() + "\n" + verdict.result.trace()
    assert check_trace(steps, capacity=None, max_receives=None, fifo=Fifo(5)).accepted


@needs_java
def test_trace_of_a_fifo_run_doctored_to_receive_from_a_locked_group_is_rejected() -> None:
    events = to_events(_fifo_run())
    k = next(k for k, e in enumerate(events) if e["op"] == "receive" and e["id"] == "b1")
    # While a1 is in flight, the second receive takes g1's a2 instead of skipping g1.
    doctored = [*events[:k], {**events[k], "id": "a2"}, *events[k + 1 :]]
    verdict = check_events(doctored, capacity=None, max_receives=None, fifo=Fifo(5))
    assert not verdict.accepted
    assert verdict.matched == k, verdict.explain()


@needs_java
def test_trace_of_a_fifo_run_doctored_so_a_duplicate_is_accepted_is_rejected() -> None:
    events = to_events(_fifo_run())
    k = next(k for k, e in enumerate(events) if e["op"] == "send" and e["dup"])
    doctored = [*events[:k], {**events[k], "dup": False, "earlier": None}]
    verdict = check_events(doctored, capacity=None, max_receives=None, fifo=Fifo(5))
    assert not verdict.accepted
    assert verdict.matched == k, verdict.explain()


# -- turning steps into events ------------------------------------------------------------------


def test_trace_times_must_be_whole_units() -> None:
    with pytest.raises(TraceError, match="whole number"):
        to_events([("send", ("a",), True, 0.5)])
    with pytest.raises(TraceError, match="unknown action"):
        to_events([("peek", (), None, 0.0)])


def test_trace_events_take_the_time_a_deadline_was_computed_from() -> None:
    # The clock moved on (to 3) between the receive's reading (1) and its recorded step.
    events = to_events(
        [
            ("send", ("a",), True, 0.0),
            ("receive", (2.0,), ("a", 1, 3.0), 3.0),
            ("expire", (), "a", 3.0),
            ("expire", (), "b", 3.0),
            ("expire", (), "c", 4.0),
        ]
    )
    assert events[1] == {"op": "receive", "id": "a", "attempt": 1, "vt": 2, "now": 1}
    assert [e.get("fired") for e in events[2:]] == [("a", "b"), ("c",)]
