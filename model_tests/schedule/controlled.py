"""Controlled synchronisation primitives: one logical thread runs at a time, the scheduler picks.

The queue gets its lock, its conditions and its sweeper thread from ``clock.sync`` (the seam
``impl.sync.Sync``), and waits only through ``clock.wait``. :class:`ControlledClock` is a clock
that carries a :class:`ControlledSync`, so a queue built with it runs its own, unchanged code on
:class:`CLock`, :class:`CCondition` and :class:`CThread`, all driven by one :class:`Scheduler`.

Each logical thread is a real OS thread, but a gated one (as in Fray): it runs only while the
scheduler has granted it the turn, and gives the turn back at each *scheduling point*, telling
the scheduler what it is about to do (its :class:`Pending` operation). The scheduler, running in
the test's own thread, then decides which thread goes next among those whose pending operation
is enabled: an ``acquire`` only when the mutex is free (or already its own), a ``wake`` (the end
of a wait) only when the wait was notified or timed out *and* the mutex is free, a ``join`` only
when the thread joined has ended; ``call``, ``now``, ``wait`` and ``advance`` always.

The scheduling points are the operations through which threads can affect each other: taking
the mutex (``acquire``, and ``wake``, which takes it back), starting a wait, reading the clock
(``now``: the clock driver changes the time without the mutex), moving the clock (``advance``),
starting an operation of the program (``call``), starting and joining a thread. Releasing the
mutex and notifying are *not* points: they happen while the thread owns the mutex, and what any
other thread could do in between (block on the mutex, or read or move the clock) either waits
for the mutex or commutes with them (an ``advance`` that times out a waiter and a notify that
reaches it leave that waiter in the same state: woken, its notify used up). So a switch there
is the same as a switch at the thread's next point. ``Scheduler(all_points=True)`` makes them
points too, to measure what that reduction saves (docs/schedule.md).

Waits follow CPython's ``Condition`` exactly where it matters: a timed wait whose deadline the
clock passed stays in the condition's list of waiters until it has the mutex back, so a notify
in that window reaches it and is used up (the window the held-out mutant ``DeadlineFirstSend``
falls into). Time moves only by :meth:`ControlledClock.advance` (the clock driver), and a wait
never blocks the OS on real time.
"""

from __future__ import annotations

import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType, TracebackType
from typing import Any, Final, cast

from impl.sync import Sync
from model_tests.schedule.events import ThreadEvent

#: The source file whose lines an event points at (the queue's own code, or a mutant's).
_OWN_FILES: Final = (__file__,)


class Abort(BaseException):
    """Raised in a logical thread at a scheduling point when the scheduler tears a run down."""


class Interrupt(BaseException):
    """An injected interrupt (as a signal handler's ``KeyboardInterrupt``): raised in a waiter
    as it leaves its wait, when the scheduler chooses to interrupt it there."""


class OutsideScheduler(RuntimeError):
    """A blocking operation was called from a thread the scheduler does not control."""


@dataclass(eq=False)
class Waiter:
    """One wait in progress on a :class:`CCondition`."""

    thread: LThread
    cond: CCondition
    deadline: float | None
    notified: bool = False
    timed_out: bool = False

    @property
    def woken(self) -> bool:
        return self.notified or self.timed_out


@dataclass(frozen=True)
class Pending:
    """What a parked thread will do when it is granted the turn.

    ``kind``: ``start``, ``call``, ``acquire``, ``wait``, ``wake``, ``now``, ``advance``,
    ``join``, ``release`` or ``notify`` (the last two only with ``all_points``); ``what`` says
    more, for the printed interleaving; ``where`` is ``file:line`` of the code that called the
    primitive (the queue's line, for the queue's own operations).
    """

    kind: str
    what: str = ""
    where: str = ""
    lock: CLock | None = None
    waiter: Waiter | None = None
    target: LThread | None = None


@dataclass(eq=False)
class LThread:
    """A logical thread: an OS thread that runs only while the scheduler lets it."""

    index: int
    name: str
    role: str  # "caller", "sweeper" or "clock"
    fn: Callable[[], object]
    gate: threading.Lock = field(default_factory=threading.Lock)
    started: threading.Event = field(default_factory=threading.Event)
    pending: Pending | None = None
    finished: bool = False
    error: BaseException | None = None
    #: The program operation it is in (for the deadlock report), if any.
    op: tuple[str, tuple[object, ...]] | None = None
    #: Set by the scheduler before granting a ``wake``: raise it as the wait ends.
    inject: type[BaseException] | None = None
    os_thread: threading.Thread | None = None


def _where(depth: int = 2) -> str:
    """``file:line`` of the first frame outside this package's primitives."""
    f: FrameType | None = sys._getframe(depth)
    # Past the primitives, and past the driver's Conditions.wait (every wait goes through it):
    # the line of the wait loop that called it says more.
    while f is not None and (
        f.f_code.co_filename in _OWN_FILES
        or (f.f_code.co_name == "wait" and f.f_code.co_filename.endswith("threaded.py"))
    ):
        f = f.f_back
    if f is None:
        return "?"
    name = f.f_code.co_filename
    for root in ("/impl/", "/model_tests/"):
        at = name.rfind(root)
        if at >= 0:
            name = name[at + 1 :]
            break
    return f"{name}:{f.f_lineno}"


class Scheduler:
    """Runs logical threads one at a time, asking ``choose`` at every scheduling point.

    Built by the explorer for one run of one program. ``choose(options, current)`` gets the
    enabled threads (in index order) and the thread that ran last (``None`` at the start or
    when it blocked or ended) and returns the thread to run, possibly with an injected
    exception (see :meth:`run`).
    """

    def __init__(self, *, max_steps: int = 5_000, all_points: bool = False) -> None:
        self.threads: list[LThread] = []
        self.max_steps = max_steps
        self.all_points = all_points
        self.events: list[ThreadEvent] = []
        #: One line per step of the run: (thread, pending operation) as granted.
        self.steps: list[tuple[LThread, Pending]] = []
        self.current: LThread | None = None
        self.tearing_down = False
        #: Teardown gave up on letting threads finish (a livelock): every point raises Abort.
        self.killing = False
        #: After the run and its teardown: every primitive passes through (a queue's
        #: ``close`` or ``__del__`` may still take its lock, from any thread).
        self.closed = False
        #: The name under which the events of a thread the scheduler does not run are
        #: recorded (the program's setup, run by the test's own thread), or ``None``: not.
        self.outside: str | None = None
        self._to_main = threading.Semaphore(0)
        # Per scheduler, so an OS thread of an earlier run (or a reused thread id) is never
        # taken for one of this run's logical threads.
        self._local = threading.local()
        self._locks: list[CLock] = []

    # -- threads --------------------------------------------------------------------------------

    def spawn(self, name: str, role: str, fn: Callable[[], object]) -> LThread:
        """A new logical thread, started and parked at its first point (``start``)."""
        t = LThread(len(self.threads), name, role, fn)
        t.gate.acquire()
        self.threads.append(t)
        t.os_thread = threading.Thread(target=self._body, args=(t,), name=name, daemon=True)
        t.os_thread.start()
        t.started.wait()
        return t

    def _body(self, t: LThread) -> None:
        # Runs on to its first point (only its own code before it: no shared state), parks
        # there, and tells the spawner (not the scheduler: the spawner still has the turn).
        self._local.thread = t
        try:
            t.fn()
        except Abort:
            pass
        except BaseException as e:  # the program's threads catch their own: this is a bug
            if not self.killing:
                t.error = e
        finally:
            t.finished = True
            t.pending = None
            if t.started.is_set():
                self._to_main.release()
            else:
                t.started.set()  # ended before any point

    def me(self) -> LThread | None:
        """The logical thread calling, or ``None`` for a thread the scheduler does not run."""
        if self.closed:
            return None
        t: LThread | None = getattr(self._local, "thread", None)
        return t

    def point(self, t: LThread, pending: Pending) -> None:
        """Park ``t`` at a scheduling point until the scheduler grants it ``pending``."""
        # Teardown lets each thread finish the operation it is in, and starts no other.
        stop = pending.kind in ("call", "advance") and t.role != "sweeper"
        if (self.tearing_down and stop) or self.killing:
            raise Abort()
        t.pending = pending
        if t.started.is_set():
            self._to_main.release()
        else:
            t.started.set()  # the first point: the spawner waits for it, not the scheduler
        t.gate.acquire()
        if (self.tearing_down and stop) or self.killing:
            raise Abort()

    # -- running ----------------------------------------------------------------------------------

    def enabled(self, t: LThread) -> bool:
        p = t.pending
        if t.finished or p is None:
            return False
        if p.kind == "acquire":
            assert p.lock is not None
            return p.lock.owner is None or p.lock.owner is t
        if p.kind == "wake":
            assert p.waiter is not None and p.lock is not None
            return (p.waiter.woken or t.inject is not None) and p.lock.owner is None
        if p.kind == "join":
            assert p.target is not None
            return p.target.finished
        return True

    def grant(self, t: LThread) -> None:
        """Let ``t`` do its pending operation and run on to its next point (or its end)."""
        assert t.pending is not None
        self.steps.append((t, t.pending))
        self.current = t
        t.gate.release()
        self._to_main.acquire()

    def run(
        self, choose: Callable[[list[LThread], LThread | None], tuple[LThread, bool]]
    ) -> str | None:
        """Run until no thread is enabled; ``None``, or ``"livelock"`` after ``max_steps``.

        ``choose`` returns the thread and whether to interrupt it (only offered for a ``wake``).
        """
        last: LThread | None = None
        while True:
            options = [t for t in self.threads if self.enabled(t)]
            if not options:
                return None
            if len(self.steps) >= self.max_steps:
                return "livelock"
            current = last if last is not None and self.enabled(last) else None
            t, interrupt = choose(options, current)
            if interrupt:
                t.inject = Interrupt
            self.grant(t)
            last = t

    def teardown(self, stop_sweeper: Callable[[], None]) -> None:
        """End every thread: waits end by :class:`Abort` (the sweeper's normally, after
        ``stop_sweeper``), and the threads run on, lowest index first, to their ends."""
        self.tearing_down = True
        stop_sweeper()
        for n in range(2 * self.max_steps + len(self.threads)):
            alive = [t for t in self.threads if not t.finished]
            if not alive:
                self.closed = True
                return
            if n >= self.max_steps:
                # Still going after as many steps as a whole run may take: a livelock.
                # Unwind every thread by an Abort at its next point.
                self.killing = True
                self.grant(alive[0])
                continue
            for t in alive:
                p = t.pending
                if p is not None and p.kind == "wake" and p.waiter is not None:
                    if t.role == "sweeper":
                        p.waiter.notified = True
                    elif not p.waiter.woken and t.inject is None:
                        t.inject = Abort
            options = [t for t in alive if self.enabled(t)]
            if not options:
                break
            self.grant(options[0])
        stuck = [t.name for t in self.threads if not t.finished]
        raise RuntimeError(f"teardown could not end threads {stuck}")

    # -- events ---------------------------------------------------------------------------------

    def event(self, t: LThread | None, kind: str, detail: tuple[object, ...]) -> None:
        """Record what ``t`` did (``None``: a thread the scheduler does not run, recorded
        only while :attr:`outside` names it)."""
        name = t.name if t is not None else self.outside
        if name is not None and not self.tearing_down:
            self.events.append(ThreadEvent(name, kind, detail))


class Guard:
    """``with x:`` for a lock-like primitive: :meth:`acquire` on entry, :meth:`release` on
    exit. The controlled lock and condition (a condition takes its lock, as
    ``threading.Condition`` does) and the recording ones of
    ``model_tests/tests/test_schedule_trace.py`` share it."""

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        raise NotImplementedError

    def release(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(
        self, tp: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


class CLock(Guard):
    """A controlled reentrant lock (``threading.RLock``'s interface, as the queue uses it)."""

    def __init__(self, sched: Scheduler, name: str = "mutex") -> None:
        self.sched = sched
        self.name = name
        self.owner: LThread | None = None
        self.count = 0
        self.conds: list[CCondition] = []
        #: Held by a thread the scheduler does not run (the test's own, between runs).
        self._outside = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self.sched.closed:
            return True
        t = self.sched.me()
        if t is None:
            if self.owner is not None:
                raise OutsideScheduler(f"{self.name} is held by {self.owner.name}")
            self._outside += 1
            if self._outside == 1:
                self.sched.event(None, "acquire", (self.name,))
            return True
        if self.owner is t:
            self.count += 1
            return True
        assert blocking, "the queue never polls its mutex"
        self.sched.point(t, Pending("acquire", self.name, _where(), lock=self))
        assert self.owner is None and not self._outside
        self.owner, self.count = t, 1
        self.sched.event(t, "acquire", (self.name,))
        return True

    def release(self) -> None:
        if self.sched.closed:
            return
        t = self.sched.me()
        if t is None:
            assert self._outside > 0, "release of an unheld lock"
            self._outside -= 1
            if not self._outside:
                self.sched.event(None, "release", (self.name,))
            return
        if self.owner is not t:
            if self.sched.killing:
                return  # an Abort unwinding a thread that never got the lock back
            raise RuntimeError("cannot release un-acquired lock")
        if self.sched.all_points and self.count == 1 and not self.sched.tearing_down:
            self.sched.point(t, Pending("release", self.name, _where()))
        self.count -= 1
        if not self.count:
            self.owner = None
            self.sched.event(t, "release", (self.name,))

    def _is_owned(self) -> bool:
        t = self.sched.me()
        return self._outside > 0 if t is None else self.owner is t


class CCondition(Guard):
    """A controlled condition variable on a :class:`CLock`; waits go through the clock."""

    def __init__(self, lock: CLock, name: str) -> None:
        self.lock = lock
        self.name = name
        self.waiters: deque[Waiter] = deque()

    def notify(self, n: int = 1) -> None:
        sched = self.lock.sched
        t = sched.me()
        if t is not None and sched.all_points and not sched.tearing_down:
            sched.point(t, Pending("notify", self.name, _where()))
        reached = 0
        while self.waiters and reached < n:
            w = self.waiters.popleft()
            if not w.woken:
                w.notified = True
            reached += 1  # a timed-out waiter still in the list uses a notify up, as in CPython
        sched.event(t, "notify", (self.name, reached))

    def notify_all(self) -> None:
        self.notify(len(self.waiters))

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self.lock.acquire(blocking, timeout)

    def release(self) -> None:
        self.lock.release()

    def __repr__(self) -> str:
        return self.name


class CThread:
    """A controlled thread (``threading.Thread``'s interface, as the queue uses it)."""

    def __init__(
        self, sched: Scheduler, target: Callable[..., object], args: tuple[Any, ...], name: str
    ) -> None:
        self.sched = sched
        self.name = name
        self._target = target
        self._args = args
        self.lthread: LThread | None = None
        self.daemon = True

    def start(self) -> None:
        role = "sweeper" if self.name.endswith("-sweeper") else "caller"
        self.lthread = self.sched.spawn("sweeper", role, lambda: self._target(*self._args))

    def is_alive(self) -> bool:
        return self.lthread is not None and not self.lthread.finished

    def join(self, timeout: float | None = None) -> None:
        t = self.sched.me()
        if t is None or self.lthread is None:
            return
        self.sched.point(t, Pending("join", self.name, _where(), target=self.lthread))


class ControlledSync(Sync):
    """The :class:`impl.sync.Sync` that hands out controlled primitives of one scheduler."""

    __slots__ = ("sched",)

    def __init__(self, sched: Scheduler) -> None:
        self.sched = sched

    def rlock(self) -> threading.RLock:
        return cast(threading.RLock, CLock(self.sched))

    def condition(self, lock: threading.RLock) -> threading.Condition:
        # Named in the order the queue makes them (its constructor, and after a fork).
        lk = cast(CLock, lock)
        names = ("not_empty", "not_full", "new_deadline")
        made = len(lk.conds)
        cond = CCondition(lk, names[made] if made < len(names) else f"cond{made}")
        lk.conds.append(cond)
        return cast(threading.Condition, cond)

    def thread(
        self, target: Callable[..., object], args: tuple[Any, ...], name: str
    ) -> threading.Thread:
        return cast(threading.Thread, CThread(self.sched, target, args, name))


class ControlledClock:
    """A clock (``impl.clock.Clock``) whose time moves only by :meth:`advance`, whose waits are
    controlled waits, and which carries the :class:`ControlledSync` of its scheduler."""

    def __init__(self, sched: Scheduler, start: float = 0.0) -> None:
        self.sched = sched
        self.sync = ControlledSync(sched)
        self.time = start
        self.conds: list[CCondition] = []

    def now(self) -> float:
        t = self.sched.me()
        # The reading a trace sink gets (Queue._record) is no point: production reads the
        # clock there only while recording, and the schedules must be production's.
        if t is not None and sys._getframe(1).f_code.co_name != "_record":
            self.sched.point(t, Pending("now", "", _where()))
        return self.time

    def advance(self, dt: float) -> None:
        """Move the time on by ``dt``: every timed wait whose deadline it reaches times out
        (and stays in its condition's list until it has the mutex back). Called by the clock
        driver at its own scheduling point (its ``call``), so it is one atomic step."""
        self.time += dt
        for t in self.sched.threads:
            p = t.pending
            if p is not None and p.kind == "wake" and p.waiter is not None:
                w = p.waiter
                if w.deadline is not None and w.deadline <= self.time:
                    w.timed_out = True
        self.sched.event(self.sched.me(), "tick", (dt, self.time))

    def wait(self, cond: threading.Condition, deadline: float | None) -> None:
        sched = self.sched
        t = sched.me()
        if t is None:
            raise OutsideScheduler("a wait outside the scheduler would never end")
        c = cast(CCondition, cond)
        lock = c.lock
        sched.point(t, Pending("wait", f"{c.name} until {deadline}", _where()))
        if deadline is not None and self.time >= deadline:
            return  # as the real clock: a deadline already reached does not wait
        assert lock.owner is t, "wait without the mutex"
        saved, lock.owner, lock.count = lock.count, None, 0
        w = Waiter(t, c, deadline)
        c.waiters.append(w)
        sched.event(t, "release", (lock.name,))
        sched.event(t, "wait", (c.name, deadline))
        try:
            sched.point(t, Pending("wake", c.name, _where(), lock=lock, waiter=w))
        finally:
            # The mutex is free here (the point's condition): take it back, whatever comes.
            lock.owner, lock.count = t, saved
            if w in c.waiters:
                c.waiters.remove(w)
            injected, t.inject = t.inject, None
            how = "notified" if w.notified else "timeout" if w.timed_out else "interrupt"
            if injected is not None and not w.woken:
                how = "interrupt"
            sched.event(t, "acquire", (lock.name,))
            sched.event(t, "wake", (c.name, how))
        if injected is not None:
            raise injected()

    def __repr__(self) -> str:
        return f"ControlledClock({self.time!r})"


def names(threads: list[LThread]) -> Iterator[str]:
    """The names of ``threads``, in order (for messages)."""
    return (t.name for t in threads)
