"""Fault injection for the threaded queue: a clock, a trace sink and thread starts that fail on cue.

In the style of CPython's ``test_queue.py`` ``FailingQueue``: each injector counts the calls made
through it and raises on the k-th one it is armed for, once (after that it behaves), so a test
can first run a scenario fault-free to count the calls, then run it again with a fault at each
k = 1 .. count in turn and check that the queue either completed the transition or is exactly as
it was ("exception safety", docs/failure-model.md; ``model_tests/tests/test_faults.py``).

- :class:`FailingClock`: wraps a clock (a fresh ``impl.FakeClock`` by default) and raises on the
  k-th call of ``now``, of ``wait``, or of either; a fault on ``wait`` may also be raised *after*
  the wait returned (a thread interrupted as it wakes: it has used up the notify that woke it).
  It also tells which threads are asleep in it, so a test can wait until a call is blocked.
- :class:`FailingSink`: a trace sink (``Queue.record_trace``) that records the steps it is given
  and raises on the k-th call.
- :func:`failing_thread_start`: a context manager patching ``threading.Thread.start`` so that the
  k-th start of a thread whose name ends in ``-sweeper`` raises
  ``RuntimeError("can't start new thread")``, as CPython does when it cannot make a thread.

Every injector can be restricted to calls made by some threads (a thread, a thread's name, or a
predicate), so that a fault meant for one caller does not hit the sweeper, or the other way round.
The default exception is :class:`InjectedFault`, which nothing else raises; ``MemoryError``,
``KeyboardInterrupt`` or any other exception (class or instance) may be given instead.

:func:`wait_until` waits (bounded, never sleeping) for a condition on the injectors: each of them
notifies one shared condition whenever a fault fires or a thread starts or stops waiting.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, Literal, TypeAlias, TypeVar, overload

from impl import Clock, FakeClock, TraceStep
from impl.sync import Sync
from model_tests.support import BOUND

C = TypeVar("C", bound=Clock)

#: Which method of the clock a fault is for: ``now``, ``wait``, or whichever is called.
Method: TypeAlias = Literal["now", "wait", "any"]
#: Whose calls an injector counts: every thread (``None``), one thread, the threads with this
#: name, or the threads a predicate accepts.
ThreadMatch: TypeAlias = threading.Thread | str | Callable[[threading.Thread], bool] | None
#: What a fault raises: this exception, or a new instance of this class.
Fault: TypeAlias = BaseException | type[BaseException]

SWEEPER_SUFFIX = "-sweeper"


class InjectedFault(Exception):
    """The exception an injector raises by default; nothing else ever raises it."""


def is_sweeper(thread: threading.Thread) -> bool:
    """Whether ``thread`` is a queue's sweeper thread (by its name), for an injector's filter."""
    return thread.name.endswith(SWEEPER_SUFFIX)


# Notified whenever a fault fires or a thread starts or stops waiting in a FailingClock. Taken
# (briefly) while the queue's lock is held, never the other way round: a predicate given to
# wait_until only reads the injectors' counters.
_activity = threading.Condition()


def wait_until(predicate: Callable[[], bool], timeout: float = BOUND) -> bool:
    """Block until ``predicate()`` is true, re-testing it whenever an injector reports activity
    (a fault fired, a wait began or ended); ``False`` if that takes ``timeout`` real seconds."""
    with _activity:
        return _activity.wait_for(predicate, timeout)


def _report_activity() -> None:
    with _activity:
        _activity.notify_all()


def _matches(match: ThreadMatch, thread: threading.Thread) -> bool:
    if match is None:
        return True
    if isinstance(match, threading.Thread):
        return thread is match
    if isinstance(match, str):
        return thread.name == match
    return match(thread)


class Trigger:
    """The counting and firing shared by the injectors.

    Counts, per label (``"now"``, ``"wait"``, a trace action, ``"start"``), the calls made by the
    matching threads since it was last armed, and hands out the fault for the k-th call with the
    armed label (any label if none was given): once, or, with ``repeat``, on every call from the
    k-th on. ``k=None`` only counts.
    """

    def __init__(self, what: str) -> None:
        self._what = what
        self._lock = threading.Lock()
        self._k: int | None = None
        self._label: str | None = None
        self._fault: Fault = InjectedFault
        self._thread: ThreadMatch = None
        self._repeat = False
        self._spent = False
        #: Matching calls since armed, per label.
        self.counts: Counter[str] = Counter()
        #: Matching calls with the armed label since armed (what ``k`` counts).
        self.seen = 0
        #: The exception raised by the last fault that fired since armed, and in which thread.
        self.fired: BaseException | None = None
        self.fired_in: threading.Thread | None = None

    def arm(
        self,
        k: int | None,
        fault: Fault = InjectedFault,
        *,
        label: str | None = None,
        thread: ThreadMatch = None,
        repeat: bool = False,
    ) -> None:
        """Start counting afresh; raise ``fault`` on the ``k``-th matching call (never if
        ``None``) with ``label`` (any if ``None``) made by a thread ``thread`` matches."""
        if k is not None and (not isinstance(k, int) or k < 1):
            raise ValueError(f"k must be an int >= 1 or None, got {k!r}")
        with self._lock:
            self._k, self._fault, self._label = k, fault, label
            self._thread, self._repeat, self._spent = thread, repeat, False
            self.counts = Counter()
            self.seen = 0
            self.fired = self.fired_in = None

    def disarm(self) -> None:
        """Count on, but never fire again until armed anew (the counts are kept)."""
        with self._lock:
            self._k = None

    @property
    def total(self) -> int:
        """Matching calls since armed, whatever their label."""
        with self._lock:
            return sum(self.counts.values())

    def hit(self, label: str) -> BaseException | None:
        """Count one call with ``label`` by the current thread; the fault to raise, if it is due.

        The fault is recorded as fired at once; an injector that raises it later (a clock that
        raises after its wait returns) calls :meth:`take` first and :meth:`fire` when it raises.
        """
        fault = self.take(label)
        if fault is not None:
            self.fire(fault)
        return fault

    def take(self, label: str) -> BaseException | None:
        """As :meth:`hit`, but without recording the fault as fired yet."""
        thread = threading.current_thread()
        with self._lock:
            if not _matches(self._thread, thread):
                return None
            self.counts[label] += 1
            if self._label is not None and label != self._label:
                return None
            self.seen += 1
            if self._k is None or self.seen < self._k or (self._spent and not self._repeat):
                return None
            self._spent = True
            fault = self._fault
            if isinstance(fault, type):
                fault = fault(f"injected fault: {self._what} {label!r}, matching call {self.seen}")
            return fault

    def fire(self, fault: BaseException) -> None:
        """Record ``fault`` as raised now, by the current thread, and report it."""
        with self._lock:
            self.fired = fault
            self.fired_in = threading.current_thread()
        _report_activity()


class FailingClock(Generic[C]):
    """A clock that delegates to ``inner`` and raises on the k-th call of ``now`` or ``wait``.

    Arm it with :meth:`fail_on`; :attr:`trigger` then counts the matching calls (``counts["now"]``,
    ``counts["wait"]``) and holds the fault that fired. :attr:`now_calls`, :attr:`wait_calls` and
    :attr:`calls` count every call, from every thread. A fault on ``wait`` is raised instead of
    waiting, or, with ``after_wait=True``, when the wait returns (the thread was woken, then
    interrupted). :meth:`asleep` and :meth:`waits_begun` tell, per thread, who is inside
    ``wait`` now and how many waits each has begun, for :func:`wait_until`.

    ``advance``, ``waiters``, ``waits_begun_total`` and ``wait_for_waiters`` delegate to the
    wrapped ``FakeClock`` (``AttributeError`` if ``inner`` has no such method); anything else
    of the wrapped clock is reached through :attr:`inner`.
    """

    @overload
    def __init__(self: FailingClock[FakeClock], inner: None = None) -> None: ...

    @overload
    def __init__(self, inner: C) -> None: ...

    def __init__(self, inner: C | FakeClock | None = None) -> None:
        self._inner = FakeClock() if inner is None else inner
        self.trigger = Trigger("clock")
        self._after_wait = False
        self._lock = threading.Lock()
        self.now_calls = 0
        self.wait_calls = 0
        # Per thread, guarded by _activity: waits in progress, and waits begun in all.
        self._asleep: Counter[threading.Thread] = Counter()
        self._begun: Counter[threading.Thread] = Counter()

    @property
    def inner(self) -> C:
        """The wrapped clock."""
        return self._inner  # type: ignore[return-value]

    @property
    def calls(self) -> int:
        """Calls of ``now`` and ``wait`` together, from every thread."""
        with self._lock:
            return self.now_calls + self.wait_calls

    def fail_on(
        self,
        k: int | None,
        method: Method = "any",
        fault: Fault = InjectedFault,
        *,
        thread: ThreadMatch = None,
        after_wait: bool = False,
        repeat: bool = False,
    ) -> None:
        """Raise ``fault`` on the ``k``-th call of ``method`` made (from now on) by a thread that
        ``thread`` matches; ``k=None`` only counts. ``after_wait``: a fault on ``wait`` is raised
        when the wait returns, not instead of waiting."""
        self._after_wait = after_wait
        self.trigger.arm(
            k, fault, label=None if method == "any" else method, thread=thread, repeat=repeat
        )

    def watch(self, *, thread: ThreadMatch = None) -> None:
        """Count the calls of ``thread`` from now on, without ever failing."""
        self.fail_on(None, thread=thread)

    def disarm(self) -> None:
        self.trigger.disarm()

    @property
    def fired(self) -> BaseException | None:
        """The fault raised since armed, if any."""
        return self.trigger.fired

    def now(self) -> float:
        with self._lock:
            self.now_calls += 1
        fault = self.trigger.hit("now")
        if fault is not None:
            raise fault
        return self._inner.now()

    def wait(self, cond: threading.Condition, deadline: float | None) -> None:
        with self._lock:
            self.wait_calls += 1
        after = self._after_wait
        fault = self.trigger.take("wait")
        if fault is not None and not after:
            self.trigger.fire(fault)
            raise fault
        me = threading.current_thread()
        with _activity:
            self._asleep[me] += 1
            self._begun[me] += 1
            _activity.notify_all()
        try:
            self._inner.wait(cond, deadline)
        finally:
            with _activity:
                self._asleep[me] -= 1
                _activity.notify_all()
        if fault is not None:
            self.trigger.fire(fault)
            raise fault

    def asleep(self, thread: ThreadMatch = None) -> int:
        """How many threads (of those ``thread`` matches) are inside ``wait`` now.

        Such a thread holds the queue's lock until ``Condition.wait`` releases it, so once this
        counts it, the next critical section finds it waiting.
        """
        return self._tally(self._asleep, thread)

    def waits_begun(self, thread: ThreadMatch = None) -> int:
        """How many waits the matching threads have begun on this clock so far."""
        return self._tally(self._begun, thread)

    def _tally(self, counter: Counter[threading.Thread], thread: ThreadMatch) -> int:
        with _activity:
            return sum(n for t, n in counter.items() if _matches(thread, t))

    # -- delegation to the wrapped FakeClock -------------------------------------------------

    def advance(self, dt: float) -> None:
        """``inner.advance(dt)``: move a fake clock on, waking the waits it makes due."""
        self._fake().advance(dt)

    def waiters(self) -> int:
        return self._fake().waiters()

    @property
    def waits_begun_total(self) -> int:
        """The wrapped FakeClock's ``waits_begun`` (waits begun by every thread)."""
        return self._fake().waits_begun

    def wait_for_waiters(self, n: int, timeout: float = 10.0, *, after: int = 0) -> bool:
        return self._fake().wait_for_waiters(n, timeout, after=after)

    def _fake(self) -> FakeClock:
        if not isinstance(self._inner, FakeClock):
            raise AttributeError(f"{self._inner!r} is not a FakeClock")
        return self._inner

    def __repr__(self) -> str:
        return f"FailingClock({self._inner!r})"


class FailingSink:
    """A trace sink (``Queue.record_trace``) that records each step and raises on the k-th call.

    :attr:`steps` holds the steps of the calls that returned (not the one that raised);
    :attr:`calls` counts every call. Arm with :meth:`fail_on`; ``action`` restricts ``k`` to the
    steps of one action (``"expire"``, ``"receive"``, ...); :attr:`trigger` counts the matching
    calls per action.
    """

    def __init__(self) -> None:
        self.trigger = Trigger("trace sink")
        self._lock = threading.Lock()
        self.steps: list[TraceStep] = []
        self.calls = 0

    def fail_on(
        self,
        k: int | None,
        fault: Fault = InjectedFault,
        *,
        action: str | None = None,
        thread: ThreadMatch = None,
        repeat: bool = False,
    ) -> None:
        self.trigger.arm(k, fault, label=action, thread=thread, repeat=repeat)

    def watch(self, *, thread: ThreadMatch = None) -> None:
        self.fail_on(None, thread=thread)

    def disarm(self) -> None:
        self.trigger.disarm()

    @property
    def fired(self) -> BaseException | None:
        return self.trigger.fired

    def __call__(self, step: TraceStep) -> None:
        with self._lock:
            self.calls += 1
        fault = self.trigger.hit(step[0])
        if fault is not None:
            raise fault
        with self._lock:
            self.steps.append(step)


def cannot_start() -> RuntimeError:
    """The exception CPython raises when it cannot make a new thread."""
    return RuntimeError("can't start new thread")


class ThreadStarts:
    """What :func:`failing_thread_start` yields: the trigger for thread starts, and the threads
    it let start. Its calls are labelled ``"start"``; ``thread`` filters by the thread calling
    ``start`` (the one whose transition needs a sweeper), not by the thread being started."""

    def __init__(self, suffix: str) -> None:
        self.suffix = suffix
        self.trigger = Trigger("thread start")
        self.started: list[threading.Thread] = []

    def fail_on(
        self,
        k: int | None,
        fault: Fault | None = None,
        *,
        thread: ThreadMatch = None,
        repeat: bool = False,
    ) -> None:
        self.trigger.arm(
            k, cannot_start() if fault is None else fault, thread=thread, repeat=repeat
        )

    def watch(self, *, thread: ThreadMatch = None) -> None:
        self.fail_on(None, thread=thread)

    def disarm(self) -> None:
        self.trigger.disarm()

    @property
    def fired(self) -> BaseException | None:
        return self.trigger.fired


@contextmanager
def failing_thread_start(
    k: int | None = 1,
    fault: Fault | None = None,
    *,
    suffix: str = SWEEPER_SUFFIX,
    thread: ThreadMatch = None,
    repeat: bool = False,
) -> Iterator[ThreadStarts]:
    """Make ``threading.Thread.start`` fail for the ``k``-th thread named ``*suffix`` started
    inside this block (every one from the k-th on with ``repeat``; none with ``k=None``, which
    only counts), raising ``fault`` (default ``RuntimeError("can't start new thread")``) with the
    thread left unstarted, as CPython leaves it. Other threads start normally. The yielded
    :class:`ThreadStarts` can be re-armed inside the block; ``start`` is restored on exit.
    """
    starts = ThreadStarts(suffix)
    starts.fail_on(k, fault, thread=thread, repeat=repeat)
    original = threading.Thread.start

    def start(self: threading.Thread) -> None:
        if self.name.endswith(starts.suffix):
            failure = starts.trigger.hit("start")
            if failure is not None:
                raise failure
            starts.started.append(self)
        original(self)

    setattr(threading.Thread, "start", start)  # noqa: B010 (mypy forbids assigning a method)
    try:
        yield starts
    finally:
        setattr(threading.Thread, "start", original)  # noqa: B010


class _Parked:
    """A sweeper thread that is made and never runs (``threading.Thread``'s interface as the
    queue uses it)."""

    daemon = True

    def __init__(self, name: str) -> None:
        self.name = name
        self._started = False

    def start(self) -> None:
        self._started = True

    def is_alive(self) -> bool:
        return self._started

    def join(self, timeout: float | None = None) -> None:
        pass


class ParkedSync(Sync):
    """The threading module's lock and conditions, and sweeper threads that never run: a clock
    carrying it (``clock.sync``) gives queues whose every sweep is the test's own call, so no
    background round fires a timer, or meets a fault, at a moment the test did not choose."""

    __slots__ = ()

    def thread(
        self, target: Callable[..., object], args: tuple[Any, ...], name: str
    ) -> threading.Thread:
        return _Parked(name)  # type: ignore[return-value]
