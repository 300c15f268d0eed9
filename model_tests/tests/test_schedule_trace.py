"""Thread-level trace validation: what the threads of the real ``impl.Queue`` did at its
synchronisation points is a behaviour of ``tla/ThreadedQueue.tla`` (``tla/threaded_trace.py``).

Two sources of event sequences:

- runs of the real queue whose mutex and conditions are replaced by recording ones (the code of
  the queue is unchanged: :func:`recorded_queue` swaps the three conditions and the mutex right
  after the queue is built), on a fake clock, with two consumers, a producer and the sweeper
  thread; the test drives them one step at a time, waiting (on conditions, never on wall time)
  until each thread is blocked or done, so the interleaving is the one written in the test;
- hand-written sequences of the interleaving TLC found for ``sweep_notify_if_empty``
  (``tla/ThreadedQueueWakeupNotifyIfEmpty.cfg``), as the correct code and as the mutant would
  record it.

Each accepted sequence has a doctored twin (a notify removed, a wakeup before its deadline, a
sweep without the notify it owes) that TLC rejects, at the changed event. Every test name
contains ``schedule`` and ``trace``; the TLC runs need Java.
"""

from __future__ import annotations

import queue as stdqueue
import shutil
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any

import pytest

from impl import FakeClock, Message, Queue
from model_tests.support import BOUND
from tla.threaded_trace import (
    NotModelled,
    ThreadEvent,
    check_thread_events,
    roles,
    to_model_events,
)

needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="java is not installed")

# -- recording primitives ---------------------------------------------------------------------

#: Per thread: whether it is inside ``FakeClock.advance`` (its notifies are timeouts, not
#: notifies of the queue), and the deadline of the wait it is starting.
_local = threading.local()


def _me() -> str:
    name = threading.current_thread().name
    return "sweeper" if name.endswith("-sweeper") else name


def _advancing() -> bool:
    return bool(getattr(_local, "advancing", False))


class Recorder:
    """The events of one run, in the order they happened, and a way to wait for one."""

    def __init__(self) -> None:
        self.events: list[ThreadEvent] = []
        self.on = True
        self._changed = threading.Condition()

    def add(self, kind: str, detail: tuple[object, ...]) -> None:
        with self._changed:
            if self.on:
                self.events.append(ThreadEvent(_me(), kind, detail))
            self._changed.notify_all()

    def count(self, thread: str, kind: str) -> int:
        return sum(1 for e in self.events if e.thread == thread and e.kind == kind)

    def wait_until(self, predicate: Callable[[], bool], what: str) -> None:
        with self._changed:
            assert self._changed.wait_for(predicate, BOUND), f"timed out waiting until {what}"


class RecordingLock:
    """The queue's mutex (an ``RLock``), recording its outermost acquire and release."""

    def __init__(self, rec: Recorder) -> None:
        self._rec = rec
        self._lock = threading.RLock()
        self._depth = 0  # changed only by the thread that holds the lock

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not self._lock.acquire(blocking, timeout):
            return False
        self._depth += 1
        if self._depth == 1 and not _advancing():
            self._rec.add("acquire", ("mutex",))
        return True

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0 and not _advancing():
            self._rec.add("release", ("mutex",))
        self._lock.release()

    def release_all(self) -> int:
        """Let the lock go entirely (for a wait): the depth to restore."""
        depth, self._depth = self._depth, 0
        for _ in range(depth):
            self._lock.release()
        return depth

    def restore(self, depth: int) -> None:
        for _ in range(depth):
            self._lock.acquire()
        self._depth = depth

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(
        self, tp: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


class RecordingCondition:
    """A condition on a :class:`RecordingLock` that records waits, wakes and how many waiters
    each notify reached (FIFO, as CPython's)."""

    def __init__(self, lock: RecordingLock, name: str, rec: Recorder) -> None:
        self._lock = lock
        self._name = name
        self._rec = rec
        self._waiters: deque[list[Any]] = deque()  # [gate, how]

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is None, "FakeClock waits without a timeout"
        gate = threading.Lock()
        gate.acquire()
        entry: list[Any] = [gate, "notified"]
        self._waiters.append(entry)
        self._rec.add("release", ("mutex",))
        self._rec.add("wait", (self._name, getattr(_local, "deadline", None)))
        depth = self._lock.release_all()
        gate.acquire()
        self._lock.restore(depth)
        self._rec.add("acquire", ("mutex",))
        self._rec.add("wake", (self._name, entry[1]))
        return True

    def notify(self, n: int = 1) -> None:
        reached = 0
        while self._waiters and reached < n:
            entry = self._waiters.popleft()
            if _advancing():
                entry[1] = "timeout"  # FakeClock.advance: this wait's deadline came
            entry[0].release()
            reached += 1
        if not _advancing():
            self._rec.add("notify", (self._name, reached))

    def notify_all(self) -> None:
        self.notify(len(self._waiters))

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(
        self, tp: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._lock.release()


class RecordingClock(FakeClock):
    """A fake clock that records its ticks and tells a wait its deadline."""

    def __init__(self, rec: Recorder) -> None:
        super().__init__()
        self._rec = rec

    def wait(self, cond: threading.Condition, deadline: float | None) -> None:
        _local.deadline = deadline
        super().wait(cond, deadline)

    def advance(self, dt: float) -> None:
        # Recorded first: a sweeper it times out records its wake after the tick.
        self._rec.add("tick", (dt, self.now() + dt))
        _local.advancing = True
        try:
            super().advance(dt)
        finally:
            _local.advancing = False


def recorded_queue(rec: Recorder, **kw: Any) -> tuple[Queue[str], RecordingClock]:
    """An ``impl.Queue`` whose mutex and conditions record into ``rec``, and its clock."""
    clock = RecordingClock(rec)
    q = Queue[str](clock=clock, **kw)
    lock = RecordingLock(rec)
    q.mutex = lock  # type: ignore[assignment]
    q.not_empty = RecordingCondition(lock, "not_empty", rec)  # type: ignore[assignment]
    q.not_full = RecordingCondition(lock, "not_full", rec)  # type: ignore[assignment]
    q.new_deadline = RecordingCondition(lock, "new_deadline", rec)  # type: ignore[assignment]
    q._waiting = q._new_waiting()  # keyed by the conditions: the new ones
    q.record_trace(lambda step: rec.add("step", step))
    return q, clock


#: A call a worker is given: (method, args, kwargs, set when it has returned or raised).
_Call = tuple[str, tuple[Any, ...], dict[str, Any], threading.Event]


class Worker:
    """A named thread that runs the calls it is given, one at a time."""

    def __init__(self, name: str, q: Queue[str], rec: Recorder) -> None:
        self.q, self.rec = q, rec
        self.got: list[Message[str]] = []
        self.errors: list[BaseException] = []
        self._calls: stdqueue.SimpleQueue[_Call | None]
        self._calls = stdqueue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (item := self._calls.get()) is not None:
            op, args, kw, done = item
            self.rec.add("call", (op, args))
            try:
                value = getattr(self.q, op)(*args, **kw)
            except BaseException as e:  # surfaced by the test
                self.rec.add("raise", (op, type(e).__name__))
                self.errors.append(e)
            else:
                self.rec.add("return", (op, repr(value)))
                if isinstance(value, Message):
                    self.got.append(value)
            finally:
                done.set()

    def call(self, op: str, *args: Any, **kw: Any) -> threading.Event:
        done = threading.Event()
        self._calls.put((op, args, kw, done))
        return done

    def stop(self) -> None:
        self._calls.put(None)
        self.thread.join(BOUND)


def _done(event: threading.Event, worker: Worker) -> None:
    assert event.wait(BOUND), f"{worker.thread.name} did not finish its call"
    assert not worker.errors, worker.errors


def _run_redelivery() -> list[ThreadEvent]:
    """Two consumers and a producer on a real queue (capacity 2, visibility timeout 1): c1
    receives a and drops it; c2, then c1, sleep in receive(); the clock passes a's deadline,
    the sweeper re-queues a and wakes c2 (the first sleeper), which receives it (attempt 2)
    and re-aims the sweeper; c2 deletes it; p1 sends b, which wakes c1; c1 deletes b."""
    rec = Recorder()
    q, clock = recorded_queue(rec, capacity=2, visibility_timeout=1.0, max_receives=3)
    c1, c2, p1 = (Worker(n, q, rec) for n in ("c1", "c2", "p1"))
    try:
        _done(p1.call("send", "body-a", id="a"), p1)
        _done(c1.call("receive"), c1)  # a, deadline 1; starts the sweeper
        rec.wait_until(lambda: rec.count("sweeper", "wait") == 1, "the sweeper sleeps")
        second = c2.call("receive")
        rec.wait_until(lambda: rec.count("c2", "wait") == 1, "c2 sleeps")
        c1.call("receive")  # c1 dropped a (its processing failed): it sleeps too
        rec.wait_until(lambda: rec.count("c1", "wait") == 1, "c1 sleeps")
        clock.advance(1.0)  # a's deadline: the sweeper re-queues a and wakes c2
        _done(second, c2)
        rec.wait_until(lambda: rec.count("sweeper", "wait") == 3, "the sweeper re-aims")
        assert (c2.got[0].id, c2.got[0].attempt) == ("a", 2)
        _done(c2.call("delete", c2.got[0].receipt), c2)
        _done(p1.call("send", "body-b", id="b"), p1)
        rec.wait_until(lambda: rec.count("c1", "return") == 2, "c1 receives b")
        assert [m.id for m in c1.got] == ["a", "b"]
        _done(c1.call("delete", c1.got[1].receipt), c1)
    finally:
        rec.on = False
        q.close()
        for w in (c1, c2, p1):
            w.stop()
    return rec.events


@pytest.fixture(scope="module")
def redelivery() -> Iterator[list[ThreadEvent]]:
    yield _run_redelivery()


def _check(events: Sequence[ThreadEvent], bug: str = "none") -> Any:
    return check_thread_events(
        events, capacity=2, max_receives=3, visibility_timeout=1, bug=bug, timeout=120
    )


# -- the recorded run itself --------------------------------------------------------------------


def test_schedule_trace_recording_is_the_interleaving_the_test_drove(
    redelivery: list[ThreadEvent],
) -> None:
    who = roles(redelivery)
    assert (who.producers, who.consumers) == ({"p1"}, {"c1", "c2"})
    # The sweeper woke by its deadline once, then by c2's notify (c2's receive re-aimed it).
    wakes = [e.detail for e in redelivery if e.thread == "sweeper" and e.kind == "wake"]
    assert wakes == [("new_deadline", "timeout"), ("new_deadline", "notified")]
    # Each sleeper of not_empty was woken by a notify that reached exactly it: c2 by the sweep,
    # c1 by the send of b.
    woke = [(e.thread, e.detail) for e in redelivery if e.kind == "wake" and e.thread != "sweeper"]
    assert woke == [("c2", ("not_empty", "notified")), ("c1", ("not_empty", "notified"))]
    notifies = [(e.thread, e.detail) for e in redelivery if e.kind == "notify"]
    assert ("sweeper", ("not_empty", 1)) in notifies and ("p1", ("not_empty", 1)) in notifies


# -- TLC's verdicts ---------------------------------------------------------------------------


@needs_java
def test_schedule_trace_of_a_recorded_run_is_accepted(redelivery: list[ThreadEvent]) -> None:
    verdict = _check(redelivery)
    assert verdict.accepted, verdict.explain() + "\n" + verdict.result.trace()
    assert verdict.matched == len(verdict.model_events)


def _index(events: Sequence[ThreadEvent], pred: Callable[[ThreadEvent], bool]) -> int:
    return next(k for k, e in enumerate(events) if pred(e))
