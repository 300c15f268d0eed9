"""The asyncio shell: ``impl.AsyncQueue`` and ``impl.AsyncFifoQueue``, on the same core.

An asyncio queue here is the threaded shell's non-blocking half plus a wait on a future (as
Trio's ``send`` is ``send_nowait`` plus a wait). Each :class:`AsyncQueue` holds an inner shell
queue (a private subclass of :class:`impl.Queue` or :class:`impl.FifoQueue` that overrides only
the shell's seams, never a public method) and calls its public methods with ``block=False``.
When one raises :class:`impl.Empty` (or :class:`impl.Full`) and the caller may wait, the task
awaits a waiter future of the condition, then tries again. So every queue transition is the
threaded queue's own code, with the same arguments, results, exceptions and trace.

Who wakes whom. The inner queue's conditions ``not_empty`` and ``not_full`` are
:class:`_Waiters`: a FIFO of the futures of the tasks waiting on them. Every wakeup of a
transition goes through the shell's ``_notify(cond)``, which calls ``cond.notify()``, which
calls :meth:`AsyncQueue._wake_next`: the first pending future is resolved (``set_result``). The
shell's arithmetic is unchanged: one wakeup per unit a step made available, all of them at
shutdown, all senders while a ``send_batch`` waits (``impl/shell.py``).

Cancellation (the asyncio version of the lost wakeup). A woken task delivers in its own step
after it resumes: there is no ``await`` between the core step and the return, so a task
cancelled at its await (``Task.cancel``, ``asyncio.timeout``, ``wait_for``, a failing task
group) has taken nothing. If its future had already been resolved, the wakeup it took is
passed on (:meth:`AsyncQueue._pass_on`), as asyncio's own ``Queue`` does with
``_wakeup_next``; otherwise its future is simply withdrawn. So no message is in flight without a
task that holds its delivery (``HeldDeliveries``), and no waiter sleeps while what it waits for
is there (``NoSleepingWaiter``). ``model_tests/aio/mutants.py`` breaks each half on purpose.

Time. The threaded shell's sweeper thread is replaced by one loop timer for the earliest due
time (``core.next_due()``), re-armed after each round and whenever an earlier timer is armed;
never a polling task. On a clock with ``call_at`` (:class:`impl.FakeClock`) the timer is a
callback of the clock, run when a test advances it (on the loop's thread at once, from another
thread through ``loop.call_soon_threadsafe``); on the real clock it is ``loop.call_at``, the two
being monotonic clocks of the same machine. A ``timeout=`` is a timer of the same kind that
wakes the waiter, which then re-checks its predicate before raising.

Faults (``docs/failure-model.md``). Arming the loop timer can fail (the clock's ``call_at``), so
it is done before the step that needs it commits, where the threaded shell starts its sweeper
(:meth:`_AsyncBase._arming`): a call whose arming fails raises that exception and changes
nothing. After the commit there is nothing left to arm. The timer's round keeps the sweeper
thread's promise: a round that fails changed nothing, is logged and counted in ``health()``, and
is retried after a backoff on the clock (``impl.sweeper.backoff``); what the timer cannot go on
without (its re-arming ``call_at``, the clock read for the backoff, ``KeyboardInterrupt``, which
is re-raised) ends it, reported the same way, until the next step that arms a timer,
``sweep()`` or ``health()`` arms it again.

Threads. An AsyncQueue is bound to the event loop that first waits on it or arms a timer for it
(``RuntimeError`` from another loop) and, like ``asyncio.Queue``, is not thread-safe: call it
from that loop's thread.
"""

from __future__ import annotations

import asyncio
import math
import threading
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from types import TracebackType
from typing import Any, Final, Generic, Literal, Self, TypeVar, cast

from impl.clock import Clock
from impl.core import T
from impl.errors import Empty, Full, ShutDown
from impl.fifo import FifoQueue
from impl.message import Entry, Health, Message, Receipt, Snapshot, Stats
from impl.queue import Queue
from impl.redrive import RedriveTask
from impl.shell import BATCH_SENDERS, QUEUE_DEFAULT, BaseQueue, Default, TraceStep
from impl.sweeper import backoff, log
from impl.validate import check_bool, check_later, check_time

__all__ = ["AsyncFifoQueue", "AsyncQueue"]

R = TypeVar("R")
INF: Final = math.inf


class _Waiters:
    """Stands in for a ``threading.Condition`` of the inner queue: the futures of the tasks
    waiting on it, oldest first. ``notify`` and ``notify_all`` are what the shell calls."""

    __slots__ = ("futures", "owner")

    def __init__(self) -> None:
        self.futures: deque[asyncio.Future[Any]] = deque()
        self.owner: weakref.ReferenceType[_AsyncBase[Any]] | None = None

    def notify(self, n: int = 1) -> None:
        owner = None if self.owner is None else self.owner()
        for _ in range(n):
            if owner is not None:
                owner._wake_next(self)
            else:
                _resolve_first(self.futures)

    def notify_all(self) -> None:
        # Shutdown and close: every waiting task wakes (it then raises ShutDown).
        while any(not f.done() for f in self.futures):
            self.notify()


#: What a wait's own timeout timer resolves its future with: a wakeup no waker gave.
_TIMED_OUT: Final = object()


def _resolve_first(futures: deque[asyncio.Future[Any]], result: object = None) -> bool:
    """Resolve the first pending future of ``futures`` (dropping the done ones before it)."""
    while futures:
        fut = futures.popleft()
        if not fut.done():
            fut.set_result(result)
            return True
    return False


class _LoopTimer(threading.Thread):
    """What the inner queue's ``_sweeper`` holds once its timer is started: no thread is ever
    started; ``join`` returns at once (``close`` joins its sweeper)."""

    def join(self, timeout: float | None = None) -> None:
        return None


class _LoopSeams:
    """The seams of the threaded shell, overridden for an event loop (mixed into the inner
    queue classes). Called with the inner queue's ``mutex`` held, as the shell calls them."""

    _outer: weakref.ReferenceType[_AsyncBase[Any]]

    def _make_sync(self) -> None:
        q = cast(BaseQueue[Any], self)
        q.mutex = threading.RLock()
        q.not_empty = cast(threading.Condition, _Waiters())
        q.not_full = cast(threading.Condition, _Waiters())
        q.new_deadline = cast(threading.Condition, _Waiters())
        q._waiting = q._new_waiting()
        outer = getattr(self, "_outer", None)
        if outer is not None:  # after a fork: the new conditions belong to the same shell
            for cond in (q.not_empty, q.not_full, q.new_deadline):
                cast(_Waiters, cond).owner = outer

    def _start_sweeper(self) -> None:
        # No thread: the loop timer. The shell calls this before a step that arms a timer
        # commits (the outer queue makes it do so for every such step, see _AsyncBase._arming),
        # so arming the loop timer here can fail and veto the step: nothing has changed yet.
        q = cast(BaseQueue[Any], self)
        if q._closed:
            return
        outer = self._outer()
        if outer is not None:
            outer._timer_ready()
            outer._pre_arm()
        q._sweeper = _TIMER

    def _aim(self, due: float) -> None:
        # After the commit: the loop timer was armed before it, due no later than ``due``
        # (_AsyncBase._arming); only a step that could not be armed for is armed here.
        outer = self._outer()
        if outer is not None and not cast(BaseQueue[Any], self)._closed:
            outer._aim(due)

    def _prepare_release(self, dying: bool, now: float | None = None) -> float:
        # Before a release that may move a message into the target commits: a move into a
        # target with a retention starts a retention timer there, due at the message's enqueue
        # time + the retention, which it keeps and which may have passed already; the target's
        # loop timer due by ``now`` covers it (one already reached runs at the next move of the
        # clock), so it is armed first and its failure vetoes the release.
        q = cast(BaseQueue[Any], self)
        at = super()._prepare_release(dying, now)  # type: ignore[misc]
        target = q._dlq
        if dying and target is not None and target._core.retention is not None:
            outer = _outer_of(target)
            if outer is not None and not target._closed:
                outer._pre_arm(at)
        return cast(float, at)


#: What the inner queue's ``_sweeper`` holds while its loop timer is alive (one for all).
_TIMER: Final = _LoopTimer(name="impl.AsyncQueue-timer")


class _LoopQueue(_LoopSeams, Queue[Any]):
    """The inner queue of an :class:`AsyncQueue`."""


class _LoopFifoQueue(_LoopSeams, FifoQueue[Any]):
    """The inner queue of an :class:`AsyncFifoQueue`."""


class _AsyncBase(Generic[T]):
    """What :class:`AsyncQueue` and :class:`AsyncFifoQueue` share: everything but the sends."""

    _q: BaseQueue[Any]

    def _setup(self, inner: BaseQueue[Any]) -> None:
        self._q = inner
        inner._outer = weakref.ref(self)  # type: ignore[attr-defined]
        ref = weakref.ref(self)
        conds = (inner.not_empty, inner.not_full, inner.new_deadline)
        for cond in conds:
            cast(_Waiters, cond).owner = ref
        #: The waiter futures of each condition, oldest first (what the seams work on).
        self._waiters: dict[object, deque[asyncio.Future[Any]]] = {
            cond: cast(_Waiters, cond).futures for cond in conds
        }
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        # The one loop timer: its due time and handle (None: none armed).
        self._armed: float | None = None
        self._handle: asyncio.TimerHandle | Any | None = None
        self._failures_in_a_row = 0
        # Whether the loop timer is alive (armed when a timer is): False until the first timer,
        # and after a death (_died) until the next step that arms one.
        self._alive = False
        # The latest reading of the clock here (a lower bound of every later one), the floor
        # the step in progress arms the loop timer by (_arming), whether its round is running.
        self._seen = -INF
        self._floor: float | None = None
        self._in_round = False

    # -- configuration, as the threaded queue's ---------------------------------------------------

    @property
    def clock(self) -> Clock:
        return self._q.clock

    @property
    def capacity(self) -> int | None:
        return self._q.capacity

    @property
    def visibility_timeout(self) -> float | None:
        return self._q.visibility_timeout

    @property
    def max_receives(self) -> int | None:
        return self._q.max_receives

    @property
    def delay(self) -> float:
        return self._q.delay

    @property
    def name(self) -> str:
        return self._q.name

    @property
    def retention(self) -> float | None:
        return self._q.retention

    @property
    def dead_letter(self) -> _AsyncBase[T] | None:
        target = self._q.dead_letter
        return None if target is None else _outer_of(target)

    # -- the blocking operations: the non-blocking step plus a wait -------------------------------

    async def receive(
        self,
        *,
        block: bool = True,
        timeout: float | None = None,
        visibility_timeout: float | Literal[Default.QUEUE_DEFAULT] | None = QUEUE_DEFAULT,
    ) -> Message[T]:
        """As :meth:`impl.Queue.receive`, awaiting instead of blocking. Cancelled while it
        waits, it has delivered nothing and passes on any wakeup it took."""
        block, timeout = _check_wait(block, timeout)
        q = self._q
        vt = q.visibility_timeout if visibility_timeout is QUEUE_DEFAULT else visibility_timeout
        endtime: float | None = None
        while True:
            try:
                return self._arming(
                    vt, lambda: q.receive(block=False, visibility_timeout=visibility_timeout)
                )
            except Empty:
                if not block:
                    raise
            endtime = self._endtime(endtime, timeout, Empty, "no message became deliverable")
            got = await self._wait(q.not_empty, endtime)
            if isinstance(got, Message):  # a handed-over delivery (see _wait)
                return got

    async def receive_batch(
        self,
        max_messages: int = 10,
        *,
        block: bool = True,
        timeout: float | None = None,
        visibility_timeout: float | Literal[Default.QUEUE_DEFAULT] | None = QUEUE_DEFAULT,
    ) -> list[Message[T]]:
        """As :meth:`impl.Queue.receive_batch`, awaiting instead of blocking (cancellation as
        :meth:`receive`)."""
        block, timeout = _check_wait(block, timeout)
        q = self._q
        vt = q.visibility_timeout if visibility_timeout is QUEUE_DEFAULT else visibility_timeout
        endtime: float | None = None
        while True:
            try:
                return self._arming(
                    vt,
                    lambda: q.receive_batch(
                        max_messages, block=False, visibility_timeout=visibility_timeout
                    ),
                )
            except Empty:
                if not block:
                    raise
            endtime = self._endtime(endtime, timeout, Empty, "no message became deliverable")
            got = await self._wait(q.not_empty, endtime)
            if isinstance(got, Message):
                return [got]

    async def _send_waiting(
        self,
        attempt: Callable[[], Any],
        block: bool,
        timeout: float | None,
        batch: bool,
        offset: object,
    ) -> Any:
        # Every send: the non-blocking step, else a wait on not_full, then the step again.
        # ``offset``: how long after its time the earliest timer a step may arm is due.
        q = self._q
        endtime: float | None = None
        while True:
            try:
                return self._arming(offset, attempt)
            except Full:
                if not block:
                    raise
            endtime = self._endtime(endtime, timeout, Full, "no room")
            if not batch:
                await self._wait(q.not_full, endtime)
                continue
            # Counted, so that the shell wakes every sender while a batch may need several slots.
            q._waiting[BATCH_SENDERS] += 1
            try:
                await self._wait(q.not_full, endtime)
            finally:
                q._waiting[BATCH_SENDERS] -= 1

    def _endtime(
        self, endtime: float | None, timeout: float | None, error: type[Exception], what: str
    ) -> float | None:
        # The end of the wait, fixed at the first time the step could not go ahead; raise the
        # threaded queue's exception once it has passed.
        if timeout is None:
            return None
        now = self._q.clock.now()
        if endtime is None:
            endtime = check_later("timeout", now, timeout)
        if now >= endtime:
            raise error(f"{what} within {timeout} seconds")
        return endtime

    # -- seams: every wait, every wakeup, every passed-on wakeup ----------------------------------

    async def _wait(self, cond: object, deadline: float | None) -> object:
        """Await a new waiter future of ``cond`` (until ``deadline`` on the clock, if given) and
        return what it was resolved with: ``None`` from a wakeup or a timeout (the caller
        re-checks its step); a ``Message`` only from a waker that delivered on the waiter's
        behalf, which this shell never does (``model_tests/aio/mutants.py`` does, to show why).
        Cancelled: withdraw the future, or pass its wakeup on if it was already resolved."""
        loop = self._get_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        timer = None
        if deadline is not None:  # first: a call_at that fails leaves no waiter behind
            timer = self._call_at(deadline, lambda: _resolve_first(deque([fut]), _TIMED_OUT))
        waiters = self._waiters[cond]
        waiters.append(fut)
        q = self._q
        q._waiting[cond] += 1
        try:
            got = await fut
            return None if got is _TIMED_OUT else got
        except asyncio.CancelledError:
            # Pass on a wakeup a waker gave (it was meant for a waiter); not the one this
            # wait's own timer gave, which woke nobody else's turn.
            if fut.done() and not fut.cancelled() and fut.result() is not _TIMED_OUT:
                self._pass_on(cond)
            raise
        finally:
            q._waiting[cond] -= 1
            if timer is not None:
                timer.cancel()
            # A future a waker resolved was popped by it. A withdrawn one (cancelled, or
            # resolved by this wait's own timer) stays in the FIFO, skipped by every waker,
            # until withdrawn ones are half of it: then the FIFO is compacted. So a wakeup
            # and a withdrawal cost O(1) amortized however many tasks wait (a scan of the
            # FIFO for each is quadratic in the waiters).
            if not fut.done():
                fut.cancel()
            if len(waiters) > 2 * q._waiting[cond] + 16:
                live = self._live_waiters(waiters)
                waiters.clear()
                waiters.extend(live)

    def _live_waiters(self, waiters: deque[asyncio.Future[Any]]) -> list[asyncio.Future[Any]]:
        """What the compaction of a waiter FIFO keeps: the pending futures, oldest first (a
        done one was resolved by a waker, which popped it, or withdrawn)."""
        return [f for f in waiters if not f.done()]

    def _wake_next(self, cond: object) -> None:
        """Wake one waiter of ``cond``: resolve its first pending future (what every notify of
        the shell does)."""
        _resolve_first(self._waiters[cond])

    def _pass_on(self, cond: object) -> None:
        """A task woken on ``cond`` was cancelled before it took its step: wake the next one."""
        cast(_Waiters, cond).notify()

    # -- the loop timer ---------------------------------------------------------------------------

    def _get_loop(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop, self._loop_thread = loop, threading.get_ident()
        elif self._loop is not loop:
            raise RuntimeError(f"{self!r} is bound to a different event loop")
        return loop

    def _timer_ready(self) -> None:
        # Before the first timer commits: a clock without call_at needs a loop to arm on.
        if not hasattr(self._q.clock, "call_at") and self._loop is None:
            self._get_loop()

    def _call_at(self, due: float, callback: Callable[[], object]) -> Any:
        clock = self._q.clock
        call_at = getattr(clock, "call_at", None)
        if call_at is not None:
            return call_at(due, lambda: self._on_loop(callback))
        loop = self._loop if self._loop is not None else self._get_loop()
        return loop.call_at(loop.time() + (due - self._read_clock()), callback)

    def _on_loop(self, callback: Callable[[], object]) -> None:
        # A fake clock's callback, run in the advancing thread: at once on the loop's thread
        # (or before any loop is bound), else handed to the loop.
        loop = self._loop
        if loop is None or threading.get_ident() == self._loop_thread or loop.is_closed():
            callback()
        else:
            loop.call_soon_threadsafe(callback)

    def _read_clock(self) -> float:
        # The queue's clock, remembering the latest reading: any reading is a lower bound of
        # the time a later step reads (see _arming).
        now = self._q.clock.now()
        if now > self._seen:
            self._seen = now
        return now

    def _arming(self, offset: object, step: Callable[[], R]) -> R:
        """Run ``step``, a call of the inner queue that may arm a timer due ``offset`` seconds
        or more after the time it reads, so that the loop timer is armed before it commits.

        The threaded shell starts its sweeper before the commit and only wakes it after (which
        cannot fail); here arming *is* the fallible part (the clock's ``call_at``), so it must
        come first: the shell calls ``_start_sweeper`` before every step that arms a timer
        when it holds no sweeper, so the inner queue holds none during ``step``, and
        ``_start_sweeper`` (:meth:`_pre_arm`) makes sure the loop timer is due by now +
        ``offset``, ``now`` read here first (a lower bound of the step's own reading). After
        the commit the shell's ``_aim(due)`` then finds it armed early enough and arms nothing.
        When the loop timer is already due by the latest reading + ``offset``, nothing is read
        or armed (the common case: deadlines of one visibility timeout come in order).
        ``offset`` ``None``: the step arms no timer. One that is not a number is the step's to
        reject; the loop timer is then made due by now, should it arm one after all."""
        if offset is None:
            return step()
        off = _number(offset)
        armed = self._armed
        if armed is not None and armed <= self._seen + off:
            return step()
        self._floor = self._read_clock() + off
        q = self._q
        q._sweeper = None
        try:
            return step()
        finally:
            self._floor = None
            q._sweeper = _TIMER if self._alive else None

    def _pre_arm(self, floor: float | None = None) -> None:
        """Before a step that arms a timer commits: make sure the loop timer is due no later
        than ``floor`` (or the floor :meth:`_arming` set), and, if it had died, no later than
        the timers already armed. May raise (the clock's ``call_at``): nothing has changed."""
        if floor is None:
            floor = self._floor
        if not self._alive:
            due = self._q._core.next_due()
            if due is not None and (floor is None or due < floor):
                floor = due
        if floor is not None:
            self._arm(floor)
        self._alive = True

    def _arm(self, due: float) -> None:
        """Aim the one loop timer at ``due`` if it is due later (or not armed): the new handle
        first, so that a failing ``call_at`` leaves the old one armed."""
        if self._armed is not None and self._armed <= due:
            return
        handle = self._call_at(due, self._fire)
        old = self._handle
        self._armed, self._handle = due, handle
        if old is not None:
            old.cancel()

    def _aim(self, due: float) -> None:
        """After a step committed a timer due at ``due``: the loop timer was armed for it
        before the commit (:meth:`_arming`, :meth:`_pre_arm`), so nothing is left to do, but on a
        path that did not (a redrive's move into a destination with a retention): arming can
        no longer veto the step, so a failure is reported as the timer's death (as the threaded
        sweeper's, see :meth:`_died`). Inside the timer's round nothing is armed: the round
        aims at the next due time when it ends."""
        if self._in_round or (self._armed is not None and self._armed <= due):
            return
        if not self._alive:
            return  # dead: the next step that arms a timer, sweep() or health() restarts it
        try:
            self._arm(due)
        except BaseException as e:
            self._died(e)
            if not isinstance(e, Exception):
                raise

    def _fire(self) -> None:
        # The loop timer's round: fire what is due (the sweeper thread's round), then aim at the
        # next due time. A round that fails changed nothing (every transition commits after all
        # that can fail); it is logged and counted in health() and retried after a backoff on
        # the clock, as the sweeper thread's (impl/sweeper.py). As there, what the timer cannot
        # go on without ends it: KeyboardInterrupt and the like (re-raised, as asyncio does), a
        # clock that cannot be read for the backoff, a call_at that fails; that death is logged
        # and counted, health() reports expiry stalled, and the next step that arms a timer,
        # sweep() or health() arms it again.
        self._armed = self._handle = None
        q = self._q
        if q._closed or not self._alive:
            return
        target: float | None
        with q.mutex:
            self._in_round = True
            try:
                target = q._sweep_round() if q._alone() else q._sweep_round_locked()
                self._failures_in_a_row = 0
            except Exception as e:
                self._failures_in_a_row += 1
                try:
                    target = self._read_clock() + backoff(self._failures_in_a_row)
                except BaseException as clock_error:
                    self._died(clock_error)
                    if not isinstance(clock_error, Exception):
                        raise
                    return
                q._sweep_failed(e, target)
            except BaseException as e:
                self._died(e)
                raise
            finally:
                self._in_round = False
            if target is not None:
                try:
                    self._arm(target)
                except BaseException as e:
                    self._died(e)
                    if not isinstance(e, Exception):
                        raise

    def _died(self, error: BaseException) -> None:
        """The loop timer ends with ``error``: report it (logged, counted in health(), which
        then reports expiry stalled while timers are armed); the next step that arms a timer,
        ``sweep()`` or ``health()`` arms it again (the shell calls ``_start_sweeper`` when its
        queue holds no sweeper)."""
        q = self._q
        self._alive = False
        if self._handle is not None:
            self._handle.cancel()
        self._armed = self._handle = None
        q._sweeper = None
        q._failures = (q._failures[0] + 1, error)
        log.error(
            "impl.AsyncQueue %d: the loop timer could not go on; expiry stalls until the next "
            "step that arms a timer, sweep() or health()",
            q._token,
            exc_info=error,
        )

    # -- the operations that never wait: the threaded queue's -------------------------------------

    def delete(self, receipt: Receipt) -> bool:
        return self._q.delete(receipt)

    def delete_batch(self, receipts: Sequence[Receipt]) -> list[bool]:
        return self._q.delete_batch(receipts)

    def retry(self, receipt: Receipt) -> bool:
        return self._q.retry(receipt)

    def change_visibility(self, receipt: Receipt, timeout: float) -> bool:
        q = self._q
        offset = timeout if _number(timeout) > 0 else None
        return self._arming(offset, lambda: q.change_visibility(receipt, timeout))

    def change_visibility_batch(self, changes: Sequence[tuple[Receipt, float]]) -> list[bool]:
        q = self._q
        if isinstance(changes, list | tuple):
            pairs = [c for c in changes if isinstance(c, tuple) and len(c) == 2]
            offset = _least_delay([t for _, t in pairs], None)
        else:
            offset = 0.0  # the step's to reject; were it to arm, by now
        return self._arming(offset, lambda: q.change_visibility_batch(changes))

    def cancel(self, id: str) -> bool:
        return self._q.cancel(id)

    def purge(self) -> int:
        return self._q.purge()

    def receipt(self, id: str, attempt: int) -> Receipt:
        return self._q.receipt(id, attempt)

    def sweep(self) -> None:
        q = self._q
        if q._core.ticks:  # a redrive tick's round re-arms it (due by now at the earliest)
            self._arming(0.0, q.sweep)
        else:
            q.sweep()

    def record_trace(self, sink: Callable[[TraceStep], None] | None) -> None:
        self._q.record_trace(sink)

    def dead_letters(self) -> list[Message[T]]:
        return self._q.dead_letters()

    def stats(self) -> Stats:
        return self._q.stats()

    def snapshot(self) -> Snapshot[T]:
        return self._q.snapshot()

    def health(self) -> Health:
        return self._q.health()

    def aged_out(self) -> list[str]:
        return self._q.aged_out()

    def redrive_tasks(self) -> list[RedriveTask[T]]:
        return self._q.redrive_tasks()

    def start_redrive(
        self,
        destination: _AsyncBase[T] | None = None,
        *,
        rate: float | None = None,
        ids: Callable[[], str] | None = None,
    ) -> RedriveTask[T]:
        if destination is not None and not isinstance(destination, _AsyncBase):
            raise TypeError(
                f"destination must be an impl asyncio queue or None, got "
                f"{type(destination).__name__}"
            )
        inner = None if destination is None else destination._q
        # Its first tick (or retry) is due by now at the earliest.
        return self._arming(0.0, lambda: self._q.start_redrive(inner, rate=rate, ids=ids))

    def source_of(self, id: str) -> _AsyncBase[T] | None:
        source = self._q.source_of(id)
        return None if source is None else _outer_of(source)

    def moved_to(self, id: str) -> tuple[_AsyncBase[T], str] | None:
        hit = self._q.moved_to(id)
        if hit is None:
            return None
        outer = _outer_of(hit[0])
        return None if outer is None else (outer, hit[1])

    # -- lifecycle --------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """As :meth:`impl.Queue.shutdown`: every waiting task wakes and raises ShutDown (after
        what is still deliverable is delivered)."""
        self._q.shutdown()

    def close(self) -> None:
        """``shutdown()``, then stop the loop timer. Idempotent; timers still armed are applied
        only by an explicit ``sweep()``."""
        if self._handle is not None:
            self._handle.cancel()
        self._armed = self._handle = None
        self._alive = False
        self._q.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __aiter__(self) -> AsyncIterator[Message[T]]:
        return self._messages()

    async def _messages(self) -> AsyncIterator[Message[T]]:
        # The consumer loop: receive until the queue is shut down and drained.
        while True:
            try:
                message = await self.receive()
            except ShutDown:
                return
            yield message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._q!r})"


def _least_delay(delays: Sequence[object], retention: float | None) -> float | None:
    """The least of the delays > 0 and ``retention``: how long after a send's time its earliest
    timer is due (``None``: it arms none). What is not a number > 0 is left out (a delay of 0
    arms nothing; anything else the send rejects before it arms)."""
    least = retention
    for d in delays:
        if (t := _number(d)) > 0 and (least is None or t < least):
            least = t
    return least


def _number(value: object) -> float:
    """``value`` as a float if it is an int or a float (not a bool), else 0.0: a step given
    something else rejects it before it arms anything."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return 0.0


def _batch_offset(entries: object, default: float, retention: float | None) -> float | None:
    """:func:`_least_delay` of a send_batch's entries (a delay ``None``: the queue's
    ``default``); a batch that is not a list or tuple is the step's to reject: 0 (by now)."""
    if not isinstance(entries, list | tuple):
        return 0.0
    delays = [default if (d := getattr(e, "delay", None)) is None else d for e in entries]
    return _least_delay(delays, retention)


def _outer_of(inner: BaseQueue[Any]) -> Any:
    ref = getattr(inner, "_outer", None)
    return None if ref is None else ref()


def _check_wait(block: object, timeout: object) -> tuple[bool, float | None]:
    # The arguments of every wait, checked before anything happens.
    if block is not True and block is not False:
        check_bool("block", block)
    return bool(block), None if timeout is None else check_time("timeout", timeout)


def _inner_target(dead_letter: object, kind: type[_AsyncBase[Any]]) -> BaseQueue[Any] | None:
    if dead_letter is None:
        return None
    if not isinstance(dead_letter, kind):
        raise TypeError(
            f"dead_letter must be an impl.{kind.__name__}, got {type(dead_letter).__name__}"
        )
    return dead_letter._q


class AsyncQueue(_AsyncBase[T]):
    """The SQS-style queue of :class:`impl.Queue` for asyncio: the same arguments, results,
    exceptions and contract, with ``async def`` where the threaded queue may block."""

    def __init__(
        self,
        capacity: int | None = None,
        visibility_timeout: float | None = 30.0,
        max_receives: int | None = None,
        delay: float = 0.0,
        clock: Clock | None = None,
        *,
        dead_letter: AsyncQueue[T] | None = None,
        retention: float | None = None,
        name: str | None = None,
    ) -> None:
        """As :class:`impl.Queue`; ``dead_letter`` must be an :class:`AsyncQueue`."""
        target = _inner_target(dead_letter, AsyncQueue)
        self._setup(
            _LoopQueue(
                capacity,
                visibility_timeout,
                max_receives,
                delay,
                clock,
                dead_letter=target,
                retention=retention,
                name=name,
            )
        )

    async def send(
        self,
        body: T,
        *,
        id: str | None = None,
        delay: float | None = None,
        block: bool = True,
        timeout: float | None = None,
    ) -> str:
        """As :meth:`impl.Queue.send`, awaiting room instead of blocking. Cancelled while it
        waits, it has sent nothing and passes on any wakeup it took."""
        block, timeout = _check_wait(block, timeout)
        q = cast(Queue[Any], self._q)
        return cast(
            str,
            await self._send_waiting(
                lambda: q.send(body, id=id, delay=delay, block=False),
                block,
                timeout,
                False,
                _least_delay([q.delay if delay is None else delay], q.retention),
            ),
        )

    async def send_batch(
        self, entries: Sequence[Entry[T]], *, block: bool = True, timeout: float | None = None
    ) -> list[str]:
        """As :meth:`impl.Queue.send_batch` (all or none), awaiting room for all of them."""
        block, timeout = _check_wait(block, timeout)
        q = cast(Queue[Any], self._q)
        return cast(
            list[str],
            await self._send_waiting(
                lambda: q.send_batch(entries, block=False),
                block,
                timeout,
                True,
                _batch_offset(entries, q.delay, q.retention),
            ),
        )


class AsyncFifoQueue(_AsyncBase[T]):
    """The SQS FIFO queue of :class:`impl.FifoQueue` for asyncio (groups, deduplication)."""

    def __init__(
        self,
        capacity: int | None = None,
        visibility_timeout: float | None = 30.0,
        max_receives: int | None = None,
        delay: float = 0.0,
        dedup_interval: float = 300.0,
        clock: Clock | None = None,
        *,
        dead_letter: AsyncFifoQueue[T] | None = None,
        retention: float | None = None,
        name: str | None = None,
    ) -> None:
        """As :class:`impl.FifoQueue`; ``dead_letter`` must be an :class:`AsyncFifoQueue`."""
        target = _inner_target(dead_letter, AsyncFifoQueue)
        self._setup(
            _LoopFifoQueue(
                capacity,
                visibility_timeout,
                max_receives,
                delay,
                dedup_interval,
                clock,
                dead_letter=cast(FifoQueue[Any] | None, target),
                retention=retention,
                name=name,
            )
        )

    @property
    def dedup_interval(self) -> float:
        return cast(FifoQueue[Any], self._q).dedup_interval

    async def send(
        self,
        body: T,
        *,
        group: str,
        id: str | None = None,
        dedup_id: str | None = None,
        block: bool = True,
        timeout: float | None = None,
    ) -> str:
        """As :meth:`impl.FifoQueue.send` (a duplicate returns the earlier id), awaiting room."""
        block, timeout = _check_wait(block, timeout)
        q = cast(FifoQueue[Any], self._q)
        return cast(
            str,
            await self._send_waiting(
                lambda: q.send(body, group=group, id=id, dedup_id=dedup_id, block=False),
                block,
                timeout,
                False,
                _least_delay([q.delay], q.retention),
            ),
        )

    async def send_batch(
        self, entries: Sequence[Entry[T]], *, block: bool = True, timeout: float | None = None
    ) -> list[str]:
        """As :meth:`impl.FifoQueue.send_batch`, awaiting room for the entries that need it."""
        block, timeout = _check_wait(block, timeout)
        q = cast(FifoQueue[Any], self._q)
        return cast(
            list[str],
            await self._send_waiting(
                lambda: q.send_batch(entries, block=False),
                block,
                timeout,
                True,
                _least_delay([q.delay], q.retention),  # a FIFO queue's delay is the queue's
            ),
        )
