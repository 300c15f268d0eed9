"""Time for the threaded queue: the ``Clock`` protocol, the real clock and a fake one for tests.

The queue never reads time or sleeps by itself. It asks its clock two things: ``now()``, and
``wait(cond, deadline)``: block on a condition until it is notified or the clock reaches a
deadline. That second method is what lets a fake clock drive timeouts and visibility expiry
deterministically: :meth:`FakeClock.advance` wakes every thread whose wait has a deadline that
the new time has reached, and each waiter re-checks its own predicate and deadline under its own
lock, exactly as it would after a real timeout. A wait with no deadline is woken only by a notify,
as on the real clock, so a transition that forgets to notify is not hidden by a clock tick. This
module is the only place ``time.monotonic`` appears.

For the asyncio driver (``impl/aio.py``), which waits on futures rather than conditions, a fake
clock also keeps callbacks: :meth:`FakeClock.call_at` registers one for a time, and
:meth:`FakeClock.advance` runs every callback the new time has reached, so a loop timer armed
on the fake clock fires when a test moves the time, not when real time passes. The heap of
those callbacks is :class:`TimedCallbacks`, which the endpoint's clock (``sqs_endpoint/clock.py``)
keeps
too.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
import time
from collections.abc import Callable
from typing import NamedTuple, Protocol, runtime_checkable

from impl.validate import is_number, to_finite


@runtime_checkable
class Clock(Protocol):
    """A source of monotonic time that can also bound a wait on a condition variable."""

    def now(self) -> float:
        """The current time in seconds; never decreases."""
        ...

    def wait(self, cond: threading.Condition, deadline: float | None) -> None:
        """Block until ``cond`` is notified or this clock reaches ``deadline`` (``None``: no bound).

        Call with ``cond``'s lock held; the lock is released while waiting and held again on
        return, as with :meth:`threading.Condition.wait`. Returns at once if ``deadline`` has
        already been reached. May return early (a spurious wakeup), so callers loop on their
        predicate and compare ``now()`` with their deadline themselves.
        """
        ...


class MonotonicClock:
    """The real clock: ``time.monotonic``, with waits bounded by ``Condition.wait(timeout)``."""

    #: ``time.monotonic`` itself: a call of ``now()`` runs no Python frame (it is read on
    #: every receive with a visibility timeout).
    now = staticmethod(time.monotonic)

    def wait(self, cond: threading.Condition, deadline: float | None) -> None:
        if deadline is None:
            cond.wait()
            return
        remaining = deadline - time.monotonic()
        if remaining > 0:
            # Condition.wait rejects timeouts above TIMEOUT_MAX; waking early is allowed.
            cond.wait(min(remaining, threading.TIMEOUT_MAX))

    def __repr__(self) -> str:
        return "MonotonicClock()"


class TimerHandle:
    """A callback registered with :meth:`TimedCallbacks.call_at` (what :meth:`FakeClock.call_at`
    returns); :meth:`cancel` stops it running.

    ``cancelled`` is true once the callback will not run: it was cancelled, or it has run (a
    callback runs at most once).
    """

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        """Do not run the callback (if it has not run yet). Idempotent."""
        self.cancelled = True


class _Callback(NamedTuple):
    # A heap entry of TimedCallbacks: ordered by due time, then registration (seq is unique, so
    # the comparison never reaches the callback).
    due: float
    seq: int
    callback: Callable[[], object]
    handle: TimerHandle


class TimedCallbacks:
    """The callbacks a clock runs once its time reaches their due time: a heap of entries
    ordered by due time, ties in registration order.

    The clock owns the time; this keeps the callbacks. The clock's ``lock`` (given here) guards
    both, so that "is the earliest callback due yet?" is one step with the reading of the time:

    - :meth:`call_at`, :meth:`run_due` and ``len()`` take ``lock`` themselves: call them without
      it. :meth:`run_due` calls its ``now`` with ``lock`` held.
    - :meth:`earliest` is for the clock's own critical sections: call it with ``lock`` held.
    - No callback runs with ``lock`` held, so a callback may register or cancel callbacks, read
      the time, or move the clock on (which runs :meth:`run_due` again, inside this one).
    """

    __slots__ = ("_heap", "_lock", "_seq")

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock
        self._heap: list[_Callback] = []
        self._seq = itertools.count()

    def call_at(self, due: float, callback: Callable[[], object]) -> TimerHandle:
        """Register ``callback`` to run at the first :meth:`run_due` whose time has reached
        ``due``; a handle whose ``cancel()`` stops it. ``TypeError``/``ValueError`` for a
        ``due`` that is not a finite number, or a ``callback`` that is not callable; nothing is
        registered then.
        """
        if not is_number(due):
            raise TypeError(f"due must be a number, got {type(due).__name__}")
        when = to_finite("due", due)
        if not callable(callback):
            raise TypeError(f"callback must be callable, got {type(callback).__name__}")
        handle = TimerHandle()
        with self._lock:
            heapq.heappush(self._heap, _Callback(when, next(self._seq), callback, handle))
        return handle

    def run_due(
        self, now: Callable[[], float], on_error: Callable[[Exception], None] | None = None
    ) -> None:
        """Run, in this thread, every live callback due by ``now()``, in order of due time, ties
        in registration order; each at most once (its handle reads cancelled from then on).

        One at a time: ``now()`` is read (with the lock held) before each, so a callback
        registered by another, due by then, runs in the same round in its place in the order,
        and one cancelled by an earlier callback of the round does not run.

        A callback that raises an ``Exception`` does not hold back the others. With
        ``on_error``, it is called with the exception (inside the ``except`` clause, so
        ``logging.exception`` shows its traceback) and the round goes on; without, every
        callback due still runs, then the first such exception is raised (any later ones are
        added to its notes). A ``BaseException`` that is not an ``Exception``
        (``KeyboardInterrupt``, ``SystemExit``) ends the round at once; the callbacks due after
        it stay registered.
        """
        first: Exception | None = None
        while True:
            with self._lock:
                if not self._heap or self._heap[0].due > now():
                    break
                entry = heapq.heappop(self._heap)
            if entry.handle.cancelled:
                continue
            entry.handle.cancelled = True
            try:
                entry.callback()
            except Exception as e:
                if on_error is not None:
                    on_error(e)
                elif first is None:
                    first = e
                else:
                    first.add_note(f"a later callback of the same advance raised {e!r}")
        if first is not None:
            raise first

    def earliest(self) -> float | None:
        """The due time of the earliest live callback, or ``None`` if there is none. Call with
        the lock held; drops the cancelled (or run) entries at the top of the heap."""
        heap = self._heap
        while heap and heap[0].handle.cancelled:
            heapq.heappop(heap)
        return heap[0].due if heap else None

    def __len__(self) -> int:
        """How many callbacks are registered and neither run nor cancelled."""
        with self._lock:
            return sum(not e.handle.cancelled for e in self._heap)


class FakeClock:
    """A clock that moves only when told to, for deterministic tests of timeouts and expiry.

    A thread that waits is recorded in a registry with its deadline (under the condition's lock,
    before it waits); :meth:`advance` moves the time and then, under each condition's lock,
    notifies every condition on which some wait's deadline has now been reached. That is what
    the real clock does: a timed wait returns when its time comes, an untimed one never does by
    itself. (Other threads waiting on the same condition wake too; that is a spurious wakeup,
    which every caller tolerates by looping on its predicate.)

    Because a waiter registers before reading the time and holds its lock until
    ``Condition.wait`` releases it, an advance can never slip between a waiter's check and its
    wait: no lost wakeup.

    Do not call :meth:`advance` while holding the lock of a condition that threads wait on with
    this clock: it takes each such lock in turn to notify it.
    """

    def __init__(self, start: float = 0.0) -> None:
        if not is_number(start):
            raise TypeError(f"start must be a number, got {type(start).__name__}")
        self._time = to_finite("start", start)
        # Guards _time, _waiting and _count. Never held while taking a condition's lock.
        self._lock = threading.Lock()
        # Notified whenever a thread starts or stops waiting: what wait_for_waiters waits on.
        self._waiters_changed = threading.Condition(self._lock)
        # Conditions with at least one thread waiting on them through this clock, with the
        # deadline of each such wait (None: no deadline).
        self._waiting: dict[threading.Condition, list[float | None]] = {}
        self._count = 0
        self._begun = 0
        # Callbacks of call_at not yet run, guarded by the same lock as the time.
        self._callbacks = TimedCallbacks(self._lock)

    def now(self) -> float:
        with self._lock:
            return self._time

    def advance(self, dt: float) -> None:
        """Move the time on by ``dt >= 0`` seconds and wake every wait whose deadline it reaches.

        Raises ``TypeError`` if ``dt`` is not a number and ``ValueError`` if it is negative, NaN
        or infinite, or if the new time would not be finite; the time is then unchanged. Then
        runs every :meth:`call_at` callback the new time reaches, in this thread; what one of
        them raises is raised from here (see :meth:`call_at`), the time having moved.
        """
        if not is_number(dt):
            raise TypeError(f"dt must be a number, got {type(dt).__name__}")
        step = to_finite("dt", dt)
        if step < 0:
            raise ValueError(f"dt must be a finite number >= 0, got {dt!r}")
        with self._lock:
            if math.isinf(self._time + step):
                raise ValueError(f"dt is too large: the time {self._time!r} + {dt!r} is not finite")
            self._time += step
            conds = [
                cond
                for cond, deadlines in self._waiting.items()
                if any(d is not None and d <= self._time for d in deadlines)
            ]
        for cond in conds:
            with cond:
                cond.notify_all()
        self._run_due()

    def call_at(self, due: float, callback: Callable[[], object]) -> TimerHandle:
        """Run ``callback()`` once this clock reaches ``due``: in the thread of the
        :meth:`advance` that reaches it, after that advance has moved the time and woken the
        waits it reached; callbacks run in order of due time, ties in registration order. A
        ``due`` already reached runs at the next advance (even by 0). Returns a handle whose
        ``cancel()`` stops the callback. ``TypeError``/``ValueError`` for a ``due`` that is not
        a finite number, or a ``callback`` that is not callable; nothing is registered then.

        A callback may register or cancel callbacks and read the time (none of the clock's
        locks is held while it runs); one it registers due by the time reached runs in the
        same advance, in its place in the order. A callback that raises an ``Exception`` does
        not hold back the others: every callback due still runs, then the advance raises the
        first such exception (any later ones are added to its notes). ``KeyboardInterrupt``,
        ``SystemExit`` and the like end the advance at once; the callbacks due after it stay
        registered, to run at the next advance.
        """
        return self._callbacks.call_at(due, callback)

    def _run_due(self) -> None:
        # Every callback due by the time (re-read before each: a callback may advance), one at
        # a time and outside the lock. One that raises an Exception does not stop the others
        # (an unrelated timer on the same clock, a queue's loop timer, must not stall behind
        # it): the first such exception is raised once all have run. A BaseException
        # (KeyboardInterrupt) propagates at once.
        self._callbacks.run_due(lambda: self._time)

    def callbacks(self) -> int:
        """How many :meth:`call_at` callbacks are registered and neither run nor cancelled."""
        return len(self._callbacks)

    def wait(self, cond: threading.Condition, deadline: float | None) -> None:
        # Every wait is registered, even without a deadline, so wait_for_waiters can see it;
        # advance wakes only the conditions with a wait whose deadline it reaches.
        with self._lock:
            if deadline is not None and self._time >= deadline:
                return
            self._waiting.setdefault(cond, []).append(deadline)
            self._count += 1
            self._begun += 1
            self._waiters_changed.notify_all()
        try:
            cond.wait()
        finally:
            with self._lock:
                deadlines = self._waiting[cond]
                deadlines.remove(deadline)
                if not deadlines:
                    del self._waiting[cond]
                self._count -= 1
                self._waiters_changed.notify_all()

    def waiters(self) -> int:
        """How many threads are blocked in :meth:`wait` on this clock right now."""
        with self._lock:
            return self._count

    @property
    def waits_begun(self) -> int:
        """How many waits have begun on this clock so far (it only grows)."""
        with self._lock:
            return self._begun

    def wait_for_waiters(self, n: int, timeout: float = 10.0, *, after: int = 0) -> bool:
        """Block until ``n`` threads are blocked in :meth:`wait` and more than ``after`` waits
        have begun in all; ``False`` if that takes more than ``timeout`` real seconds.

        For tests: "the receiver is blocked now" is a fact to wait for, not a guess made with a
        sleep. Passing ``after=clock.waits_begun`` read before an :meth:`advance` waits until a
        woken thread has gone back to waiting (so it did not return). ``timeout`` is only a
        safety bound, so a bug fails a test instead of hanging it.
        """
        with self._waiters_changed:
            return self._waiters_changed.wait_for(
                lambda: self._count >= n and self._begun > after, timeout
            )

    def __repr__(self) -> str:
        return f"FakeClock({self.now()!r})"


def check_clock(name: str, value: object) -> Clock:
    """A clock *instance* whose ``now`` and ``wait`` are callable, and whose ``now()`` reads a
    finite number; ``TypeError``/``ValueError`` naming ``name`` otherwise.

    ``runtime_checkable`` protocols only look for the attributes, so the class ``FakeClock``
    itself, or an object whose ``now`` is a number, would pass ``isinstance(value, Clock)``.
    """
    if isinstance(value, type):
        raise TypeError(f"{name} must be a Clock instance, got the class {value.__name__}")
    for method in ("now", "wait"):
        if not callable(getattr(value, method, None)):
            # A Clock has callable now() and wait(cond, deadline); this has no callable method.
            raise TypeError(f"{name} must be a Clock, got {type(value).__name__}")
    reading = value.now()  # type: ignore[attr-defined]
    if not is_number(reading):
        raise TypeError(f"{name}.now() must return a number, got {type(reading).__name__}")
    to_finite(f"{name}.now()", reading)
    return value  # type: ignore[return-value]
