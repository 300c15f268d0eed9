"""Test support shared by every test of the project: bounds, probe clocks, background calls.

One place for what tests used to define again and again:

- :data:`BOUND` and :data:`NEVER`: how long, in real seconds, a test waits for something that
  must happen (a safety bound, so that a bug fails the test instead of hanging it) and for a
  wakeup that, with the bug under test, never comes. Neither decides correctness by timing.
- :class:`ProbeClock`: an ``impl.FakeClock`` that tests can also *probe* (every wait is logged:
  who, when, until when, on which condition; "wait until thread X waits", "until n threads
  sleep on this condition with no deadline") and *steer* (``advance(dt, wake=False)`` moves the
  time and wakes nobody: the window between a deadline and its sweep; ``reading_step`` makes
  every reading a little later than the one before, as a real clock's are).
- :class:`RealProbeClock`: the real clock with the same wait log, for the real-clock smoke tests.
- :class:`Call`, :func:`first_finished` and :class:`Spawner` (the ``spawn`` fixture of the
  repository's ``conftest.py``): run a call in a thread and collect its outcome, bounded.

Nothing here sleeps: every "wait until" is a condition variable with :data:`BOUND` as its limit.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Generic, Protocol, TypeVar

from impl.clock import FakeClock, MonotonicClock
from impl.validate import is_number

R = TypeVar("R")

#: Real seconds any one wait for another thread may take before the test fails instead of hanging.
BOUND: Final = 10.0
#: Real seconds to wait for a wakeup that, with the bug under test, never comes.
NEVER: Final = 2.0


# =============================================================================================
# Clocks
# =============================================================================================


@dataclass(frozen=True, slots=True)
class WaitCall:
    """One call of ``Clock.wait``: the thread's name, the time it began, its deadline, where."""

    thread: str
    now: float
    deadline: float | None
    cond: threading.Condition


class _WaitLog:
    """The probe half of the clocks below: a log of every wait, and ways to wait for one.

    ``_enter`` runs before the clock's own wait and ``_leave`` after it, both in the waiting
    thread. The log's condition is never held while taking a queue's lock, so observing the
    clock cannot deadlock with the queue.
    """

    def __init__(self) -> None:
        self._log_changed = threading.Condition()
        #: Every wait, in the order they began.
        self.calls: list[WaitCall] = []
        # Untimed waits in progress, per condition: what wait_for_sleepers counts.
        self._sleepers: dict[threading.Condition, int] = {}

    def _enter(self, cond: threading.Condition, now: float, deadline: float | None) -> None:
        with self._log_changed:
            self.calls.append(WaitCall(threading.current_thread().name, now, deadline, cond))
            if deadline is None:
                self._sleepers[cond] = self._sleepers.get(cond, 0) + 1
            self._log_changed.notify_all()

    def _leave(self, cond: threading.Condition, deadline: float | None) -> None:
        if deadline is None:
            with self._log_changed:
                self._sleepers[cond] -= 1
                self._log_changed.notify_all()

    def wait_for_call(self, match: Callable[[WaitCall], bool], timeout: float = BOUND) -> bool:
        """Block until some wait for which ``match`` is true has begun; ``False`` on timeout."""
        with self._log_changed:
            return self._log_changed.wait_for(lambda: any(map(match, self.calls)), timeout)

    def wait_for_thread(self, thread: threading.Thread, timeout: float = BOUND) -> bool:
        """Block until ``thread`` has begun a wait on this clock; ``False`` on timeout."""
        return self.wait_for_call(lambda c: c.thread == thread.name, timeout)

    def wait_for_sleepers(self, cond: threading.Condition, n: int, timeout: float = BOUND) -> bool:
        """Block until ``n`` threads sleep on ``cond`` with no deadline; ``False`` on timeout.

        The sleeper still holds ``cond``'s lock until ``Condition.wait`` releases it, so once
        this returns ``True`` the queue's next critical section finds it asleep.
        """
        with self._log_changed:
            return self._log_changed.wait_for(lambda: self._sleepers.get(cond, 0) >= n, timeout)


class ProbeClock(FakeClock, _WaitLog):
    """An ``impl.FakeClock`` that tests can probe and steer (see the module docstring).

    ``reading_step``: each ``now()`` reads that much later than the one before (the time a
    transition used is then distinguishable from the time now). The steps never wake a waiter,
    and must add up to far less than the ``advance`` that makes anything due.
    """

    def __init__(self, start: float = 0.0, *, reading_step: float = 0.0) -> None:
        FakeClock.__init__(self, start)
        _WaitLog.__init__(self)
        self._reading_step = reading_step
        self._readings = 0
        self._readings_lock = threading.Lock()

    def now(self) -> float:
        if not self._reading_step:
            return super().now()
        with self._readings_lock:
            self._readings += 1
            step = self._readings * self._reading_step
        return super().now() + step

    def advance(self, dt: float, *, wake: bool = True) -> None:
        """Move the time on by ``dt``; with ``wake=False`` wake nobody, not even a wait whose
        deadline the new time reaches (a descheduled sweeper: the deadline has passed, the sweep
        has not run). A later waking ``advance`` wakes every wait whose deadline is reached."""
        if wake:
            super().advance(dt)
            return
        if not is_number(dt):
            raise TypeError(f"dt must be a number, got {type(dt).__name__}")
        if math.isnan(dt) or math.isinf(dt) or dt < 0:
            raise ValueError(f"dt must be a finite number >= 0, got {dt!r}")
        with self._lock:
            self._time += dt

    def wait(self, cond: threading.Condition, deadline: float | None) -> None:
        self._enter(cond, self.now(), deadline)
        try:
            super().wait(cond, deadline)
        finally:
            self._leave(cond, deadline)


class RealProbeClock(MonotonicClock, _WaitLog):
    """The real (monotonic) clock with the wait log of :class:`ProbeClock`."""

    def __init__(self) -> None:
        _WaitLog.__init__(self)

    def wait(self, cond: threading.Condition, deadline: float | None) -> None:
        self._enter(cond, self.now(), deadline)
        try:
            super().wait(cond, deadline)
        finally:
            self._leave(cond, deadline)

    def __repr__(self) -> str:
        return "RealProbeClock()"


# =============================================================================================
# Calls in background threads
# =============================================================================================

# Notified whenever any Call finishes: what first_finished waits on.
_call_finished = threading.Condition()


class Call(Generic[R]):
    """A call running in its own thread; the test collects its value or exception, bounded."""

    def __init__(self, fn: Callable[[], R], name: str) -> None:
        self._fn = fn
        self._finished = threading.Event()
        self._value: R | None = None
        self._error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self._value = self._fn()
        except BaseException as e:
            self._error = e
        finally:
            with _call_finished:
                self._finished.set()
                _call_finished.notify_all()

    @property
    def finished(self) -> bool:
        return self._finished.is_set()

    def result(self, timeout: float = BOUND) -> R:
        """The call's value, or its exception raised here; fails the test after ``timeout``."""
        assert self._finished.wait(timeout), f"{self.thread.name} did not finish in {timeout}s"
        self.thread.join(timeout)
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


def first_finished(*calls: Call[R], timeout: float = BOUND) -> Call[R]:
    """The first of ``calls`` that has finished, waiting (bounded) until one has."""
    with _call_finished:
        assert _call_finished.wait_for(lambda: any(c.finished for c in calls), timeout)
        return next(c for c in calls if c.finished)


class Spawn(Protocol):
    """The type of the ``spawn`` fixture."""

    def __call__(self, fn: Callable[[], R]) -> Call[R]: ...


class Spawner:
    """Starts calls in threads and remembers them, so the fixture can join them at the end."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []

    def __call__(self, fn: Callable[[], R]) -> Call[R]:
        call = Call(fn, name=f"test-call-{len(self.threads)}")
        self.threads.append(call.thread)
        return call
