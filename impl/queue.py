"""The threaded queue with SQS semantics: ``impl.Queue``, shaped after CPython's ``queue.Queue``.

One lock (``mutex``) guards all state; three named conditions share it. Each transition of the
contract (section 2) is one critical section that does exactly what ``spec.transitions`` does to
the pure state, then notifies every condition whose waiters it may have enabled. Time comes only
from the injected clock; expiry is applied by :meth:`Queue.sweep`, which a lazily started sweeper
thread runs whenever the earliest deadline comes due. Nothing here sleeps or polls.

Failure model (docs/failure-model.md): every transition first does all that can raise (argument
checks, reading the clock, calling the trace sink, starting the sweeper thread), then commits
its change with code that does not raise, then notifies; so it takes full effect or none. The
sweeper holds only a weak reference to its queue, reports its own death (``Queue.health``, the
``impl.queue`` logger) and is restarted on demand; ``mutex`` is an ``RLock``, whose re-acquire
inside ``Condition.wait`` a signal handler cannot interrupt; fork handlers give a child process
fresh locks.

As in ``queue.Queue`` (whose ``_put``/``_get``/``_qsize`` a subclass may override), each public
method does the checking, locking, waiting, tracing and self-checking, and calls small steps for
the state change; those steps are the documented seam for subclasses (``Queue``'s docstring,
"Hooks for subclasses"). The mutant catalogue (``model_tests/mutants.py``) overrides them.
"""

from __future__ import annotations

import enum
import heapq
import itertools
import logging
import os
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from types import TracebackType
from typing import Any, Final, Generic, Literal, TypeVar

from impl.clock import Clock, MonotonicClock, check_clock
from impl.errors import DuplicateIdError, Empty, Full, ShutDown
from impl.message import Health, Message, Receipt, Snapshot, SnapshotMessage, Stats
from impl.validate import (
    check_bool,
    check_callable,
    check_id,
    check_int,
    check_later,
    check_optional_int,
    check_optional_time,
    check_time,
)

T = TypeVar("T")


class _Default(enum.Enum):
    """The type of the "use the queue's default" sentinel, so ``None`` can mean "never expire"."""

    QUEUE_DEFAULT = enum.auto()


_QUEUE_DEFAULT: Final = _Default.QUEUE_DEFAULT

# Identity tokens for receipts: every queue gets a distinct one, so receipts never cross queues.
_tokens = itertools.count(1)
_tokens_lock = threading.Lock()

#: Where a sweeper's death is reported (at ERROR, with its traceback).
log = logging.getLogger("impl.queue")

#: One recorded transition, ``(action, args, result, now)``: see :meth:`Queue.record_trace`.
TraceStep = tuple[str, tuple[object, ...], object, float]

#: An expiry heap entry: (deadline, receive sequence, id, attempt). Ordered by deadline, then by
#: receive order, which is exactly the order in which the contract's ``expire`` releases.
_Entry = tuple[float, int, str, int]


class _SweeperLink:
    """What a sweeper thread shares with its queue, so that it need not hold the queue itself.

    The thread keeps this and a weak reference to the queue; while it waits it holds no strong
    reference, so a queue nobody uses can be collected, and its ``__del__`` (or ``close``) sets
    ``stopped`` and notifies ``cond`` to end the thread.
    """

    __slots__ = ("clock", "cond", "mutex", "stopped", "waiting")

    def __init__(
        self,
        mutex: threading.RLock,
        cond: threading.Condition,
        clock: Clock,
        waiting: dict[threading.Condition, int],
    ) -> None:
        self.mutex = mutex
        self.cond = cond
        self.clock = clock
        self.waiting = waiting
        self.stopped = False


def _sweep_forever(ref: weakref.ReferenceType[Queue[Any]], link: _SweeperLink) -> None:
    """The sweeper thread: expire what is due, then wait for the next deadline or a notify.

    It takes a strong reference to the queue only for one round of work, under the mutex, and
    drops it before it waits. Any exception ends the thread after it is reported
    (``Queue._sweeper_died``); the next arm, ``sweep()`` or ``health()`` starts another.
    """
    with link.mutex:
        while not link.stopped:
            q = ref()
            if q is None:
                return
            try:
                target = q._sweep_round()
            except BaseException as e:
                q._sweeper_died(link, e)
                return
            del q  # may run the queue's __del__ right here, which sets link.stopped
            if link.stopped:
                return
            link.waiting[link.cond] += 1
            try:
                link.clock.wait(link.cond, target)
            except BaseException as e:
                link.waiting[link.cond] -= 1
                q = ref()
                if q is not None:
                    q._sweeper_died(link, e)
                return
            link.waiting[link.cond] -= 1


# Every live queue, for the fork handlers: the parent takes every queue's mutex before a fork
# (so no queue is copied mid-transition) and the child gives each a fresh lock and no sweeper.
_queues: weakref.WeakSet[Queue[Any]] = weakref.WeakSet()
_queues_lock = threading.Lock()
_forking: list[Queue[Any]] = []


def _before_fork() -> None:
    _tokens_lock.acquire()
    _queues_lock.acquire()
    _forking[:] = sorted(_queues, key=lambda q: q._token)
    for q in _forking:
        q.mutex.acquire()


def _after_fork_in_parent() -> None:
    for q in reversed(_forking):
        q.mutex.release()
    _forking.clear()
    _queues_lock.release()
    _tokens_lock.release()


def _after_fork_in_child() -> None:
    global _tokens_lock, _queues_lock
    _tokens_lock = threading.Lock()
    _queues_lock = threading.Lock()
    for q in _forking:
        q._reinit_after_fork()
    _forking.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )


def _not_a_receipt(value: object) -> TypeError:
    # Raised by the receipt operations; the isinstance test is inline, so the good path pays
    # no call for it.
    return TypeError(f"receipt must be a Receipt, got {type(value).__name__}")


class Record(Generic[T]):
    """The mutable record of one message; only touched under the queue's lock.

    Public so that a subclass overriding a hook (see :class:`Queue`) can name its type; not
    something a caller of the queue ever sees (it gets :class:`Message` and snapshots).
    """

    __slots__ = ("attempt", "body", "deadline", "id", "receipt", "seq")

    #: The receipt of the current (or last) delivery, made by ``Queue._receipt`` when it is
    #: delivered: while in flight, the live receipt. Unset before the first delivery.
    receipt: Receipt

    def __init__(self, id: str, body: T) -> None:
        self.id = id
        self.body = body
        self.attempt = 0
        #: Set only while in flight with a finite visibility timeout.
        self.deadline: float | None = None
        #: The receive sequence number of the current (or last) delivery; 0 before the first.
        self.seq = 0

    def snapshot(self) -> SnapshotMessage[T]:
        return SnapshotMessage(self.id, self.body, self.attempt, self.deadline)


class Queue(Generic[T]):
    """An in-memory, thread-safe queue with SQS semantics: visibility timeouts, at-least-once.

    ``send`` appends to a FIFO of visible messages; ``receive`` hands out the head and hides it
    for a visibility timeout instead of removing it; ``delete`` with the delivery's receipt
    removes it for good. A delivery not deleted in time is redelivered with ``attempt + 1``
    (or dead-lettered after ``max_receives`` deliveries), so a consumer must be idempotent.

    Shared state, all guarded by ``mutex``, and its invariants (checked by ``_check`` and by the
    model-based tests against ``spec``):

    - ``_visible``: id -> record of each ``VISIBLE`` message, in FIFO order (head first); an
      ordered dict, so ``cancel`` removes from the middle in O(1) and keeps the rest in order.
    - ``_in_flight``: id -> record of each ``IN_FLIGHT`` message, in receive order.
    - ``_dead`` (records, in order of death), ``_done`` and ``_cancelled`` (ids): terminal.
    - ``_accepted``: every id ever accepted. ``OneState``: it is the disjoint union of the five
      groups above; ``IdsReserved``: ids are only ever added to it.
    - ``CapacityBound``: ``len(_visible) + len(_in_flight) <= capacity``.
    - ``OneLiveReceipt``: the live receipt of a message is its in-flight record's ``receipt``,
      ``(token, id, attempt)``, made when it was delivered; so there is at most one, and it
      carries the current attempt.
    - A record has a ``deadline`` iff it is in flight with a finite visibility timeout, and then
      ``_expiry`` holds the entry ``(deadline, seq, id, attempt)``. ``_expiry`` is a heap that
      may also hold stale entries (deleted, released or re-armed deliveries); an entry counts
      only while it matches the in-flight record exactly, so stale ones are skipped when popped.
    - After ``shutdown()`` no message is accepted; after ``close()`` no sweeper thread runs.

    Waking: each transition notifies one waiter per unit of what it made available (a visible
    message, a free slot), which is enough because a woken waiter re-checks its predicate first
    and so takes what it was woken for, or, if it leaves without it (a sender whose id was taken
    meanwhile), passes the notify on. Shutdown notifies everyone.

    Threads: the first finite deadline starts one daemon sweeper thread; a queue whose
    deliveries never expire never starts one. The sweeper holds only a weak reference to the
    queue: a queue nobody references is collected and its sweeper ends (with a
    ``ResourceWarning`` if it still held active messages). Close the queue (or use ``with``)
    when done with it; ``close()`` joins the thread.

    Failures: every public method either takes full effect (and its notifies happen) or raises
    and leaves the queue exactly as it was, whatever raises inside it: the clock, the trace
    sink, the start of the sweeper thread. Each transition does all that can fail first, then
    commits. A sweeper that dies of an exception is logged (logger ``impl.queue``) and reported
    by :meth:`health`, and the next arm, ``sweep()`` or ``health()`` starts another. A caller
    interrupted while it waits (an exception from a signal handler) passes on the notify it may
    have taken, and holds the lock again when the exception leaves the wait (``mutex`` is an
    ``RLock``). See docs/failure-model.md for what is and is not promised.

    Hooks for subclasses: each public method checks its arguments, takes ``mutex``, waits if it
    must, calls the steps below for the state change, records the trace and runs ``_check``.
    The steps are the seam to override (as ``queue.Queue``'s ``_put`` and ``_get`` are); each is
    called with ``mutex`` held, must not release it (except to wait on a condition through
    ``_wait``), and is documented with its contract. A step that makes something available
    wakes its waiters itself, through ``_notify``, except ``_release``, whose callers do.

    Steps that change state run in the commit phase of their transition (after the trace sink
    and everything else that may fail), so they must not raise; guards (``_live``,
    ``_to_delete``) and waits run before it.

    - ``_wait_for_visible(block, wait)``: receive's wait, until something is visible.
    - ``_deliver(deadline)``: receive's step: the head becomes in flight, attempt + 1, deadline.
    - ``_receipt(rec)``: make the receipt of ``rec``'s delivery, which becomes the live one.
    - ``_live(receipt)``: the in-flight record ``receipt`` names, if it is live.
    - ``_to_delete(receipt)``: the record a delete acts on: the live one.
    - ``_delete(rec)``, ``_retry(rec)``: the steps of delete and retry.
    - ``_extend(rec, t, now)``: change_visibility's step for ``t > 0``: deadline now + ``t``.
    - ``_remove(id)``: cancel's step: take an active message out of visible or in flight.
    - ``_release(rec)``: dead-letter (if ``_dies(rec)``) or append to the visible tail.
    - ``_dies(rec)``: the dead-letter policy, asked at each release.
    - ``_arm(rec)``: put a deadline where the sweeper looks, and wake or start the sweeper.
    - ``_expire(now)``: the sweep: collect what is due, trace it, then fold ``_expire_one``.
    - ``_expire_one(rec, now)``: expiry's step for one due delivery: release it, notify.
    - ``_next_deadline()``: the deadline the sweeper sleeps until next.
    - ``_has_room()``: ``CapacityBound``'s test, for send.
    - ``_notify(cond)`` and ``_wait(cond, deadline)``: every wakeup and every wait.
    """

    def __init__(
        self,
        capacity: int | None = None,
        visibility_timeout: float | None = 30.0,
        max_receives: int | None = None,
        clock: Clock | None = None,
    ) -> None:
        """Make an empty queue, or raise ``TypeError``/``ValueError`` naming the bad argument.

        ``capacity``: bound on active (visible + in-flight) messages; ``None`` is unbounded and
        0 accepts nothing. ``visibility_timeout``: seconds a delivery stays hidden; ``None``
        means deliveries never expire. ``max_receives``: a release after this many deliveries
        dead-letters the message; ``None`` never does. ``clock``: defaults to the real clock.
        """
        self._capacity = check_optional_int("capacity", capacity, 0)
        self._visibility_timeout = check_optional_time("visibility_timeout", visibility_timeout)
        self._max_receives = check_optional_int("max_receives", max_receives, 1)
        self._clock: Clock = MonotonicClock() if clock is None else check_clock("clock", clock)
        with _tokens_lock:
            self._token = next(_tokens)

        # An RLock, not a Lock: Condition.wait re-takes an RLock in a way that a signal handler
        # cannot interrupt, and an RLock can never be released by a thread that does not hold
        # it. With a Lock, a KeyboardInterrupt while re-taking it leaves the waiter outside the
        # lock, and its ``with`` then releases a lock that another thread holds.
        self.mutex = threading.RLock()
        # Receivers wait here for a visible message. Notified once per message made visible, by
        # send and by every release to VISIBLE (retry, change_visibility(0), expiry); notified
        # all at shutdown, so blocked receivers raise ShutDown at once.
        self.not_empty = threading.Condition(self.mutex)
        # Senders wait here for room. Notified once per freed slot, by delete, cancel and
        # dead-lettering (receiving and releasing to VISIBLE free nothing); notified all at
        # shutdown, so blocked senders raise ShutDown at once.
        self.not_full = threading.Condition(self.mutex)
        # The sweeper waits here for the earliest deadline. Notified when a deadline earlier than
        # the one it waits for is armed (receive, change_visibility), and at shutdown and close.
        self.new_deadline = threading.Condition(self.mutex)
        # How many threads wait on each condition, so a transition with nobody to wake skips
        # the notify (see _notify).
        self._waiting = {self.not_empty: 0, self.not_full: 0, self.new_deadline: 0}

        self._visible: OrderedDict[str, Record[T]] = OrderedDict()
        self._in_flight: dict[str, Record[T]] = {}
        self._dead: list[Record[T]] = []
        self._done: set[str] = set()
        self._cancelled: set[str] = set()
        self._accepted: set[str] = set()
        self._expiry: list[_Entry] = []
        self._receives = 0
        self._ids = itertools.count(1)  # for generated ids
        self._shutdown = False
        self._closed = False
        # The sweeper thread, while one is alive (started by the first arm), and what it shares.
        self._sweeper: threading.Thread | None = None
        self._link: _SweeperLink | None = None
        # The deadline the sweeper is waiting for (None: it waits for a notify only).
        self._sweeper_target: float | None = None
        self._sweeper_failures = 0
        self._last_error: BaseException | None = None
        # Where record_trace sends each transition; None (the default): nowhere, at no cost.
        self._trace: Callable[[TraceStep], None] | None = None
        # The thread now inside the trace sink, so a call back into the queue from the sink is
        # refused (with an RLock it would otherwise re-enter a half-done transition).
        self._sink_thread: int | None = None
        with _queues_lock:
            _queues.add(self)

    # -- configuration ------------------------------------------------------------------------

    @property
    def clock(self) -> Clock:
        """The clock this queue reads time from and waits on."""
        return self._clock

    @property
    def capacity(self) -> int | None:
        return self._capacity

    @property
    def visibility_timeout(self) -> float | None:
        return self._visibility_timeout

    @property
    def max_receives(self) -> int | None:
        return self._max_receives

    # -- the transitions ----------------------------------------------------------------------

    def send(
        self,
        body: T,
        *,
        id: str | None = None,
        block: bool = True,
        timeout: float | None = None,
    ) -> str:
        """Append a message to the tail of the visible FIFO and return its id.

        ``id`` must be new to this queue; ``None`` asks for a fresh generated id (a ``str``
        subclass is stored as a plain ``str``). When the queue is full, wait for room
        (``block=True``, at most ``timeout`` seconds if given) or raise :class:`Full` at once
        (``block=False``). Either the message is accepted, or an exception leaves the queue
        unchanged and the id unreserved: ``TypeError``/``ValueError`` for bad arguments and
        :class:`DuplicateIdError` (a ``ValueError``) for an id already accepted, all before any
        waiting; :class:`Full` when no room came; :class:`ShutDown` after ``shutdown()``; and
        whatever the clock or the trace sink raises. An id that another sender takes while this
        one waits raises :class:`DuplicateIdError` when this one wakes.
        """
        if id is not None:
            id = check_id("id", id)
        check_bool("block", block)
        wait = check_optional_time("timeout", timeout)
        if self._sink_thread is not None:
            self._refuse_reentry("send")
        with self.mutex:
            if id is not None and id in self._accepted:
                raise DuplicateIdError(f"id {id!r} was already accepted by this queue")
            endtime = None if wait is None else check_later("timeout", self._clock.now(), wait)
            while True:
                if self._shutdown:
                    raise ShutDown("send on a queue that has been shut down")
                if id is not None and id in self._accepted:
                    # Taken while we waited. A notify meant for a sender may have woken us:
                    # pass it on, so no sender with a fresh id sleeps beside a free slot.
                    if self._has_room():
                        self._notify(self.not_full)
                    raise DuplicateIdError(f"id {id!r} was accepted while this send waited")
                if self._has_room():
                    break
                if not block:
                    raise Full("the queue is at capacity")
                if endtime is not None and self._clock.now() >= endtime:
                    raise Full(f"no room within {wait} seconds")
                self._wait(self.not_full, endtime)
            if id is None:
                id = self._fresh_id()
            if self._trace is not None:
                try:
                    self._record("send", (id,), True)
                except BaseException:
                    # A notify may have woken us for this slot: pass it on (see _wait).
                    self._notify(self.not_full)
                    raise
            # commit
            self._accepted.add(id)
            self._visible[id] = Record(id, body)
            self._notify(self.not_empty)
            self._check()
            return id

    def receive(
        self,
        *,
        block: bool = True,
        timeout: float | None = None,
        visibility_timeout: float | Literal[_Default.QUEUE_DEFAULT] | None = _QUEUE_DEFAULT,
    ) -> Message[T]:
        """Deliver the head of the visible FIFO, hiding it for a visibility timeout.

        In one critical section the head becomes in flight with ``attempt + 1``, its deadline is
        stamped (now + ``visibility_timeout``, the queue's default unless given; ``None``: never
        expires) and armed for the sweeper, and a fresh receipt is made. When nothing is
        visible, wait (``block=True``, at most ``timeout`` seconds if given) or raise
        :class:`Empty` at once (``block=False``); :class:`Empty` also when the timeout runs out.
        After ``shutdown()`` what is still visible is delivered, then :class:`ShutDown` is
        raised. Bad arguments raise ``TypeError``/``ValueError`` before any waiting. On any
        exception (including one from the clock, the trace sink or the start of the sweeper
        thread) the queue is unchanged.
        """
        check_bool("block", block)
        wait = check_optional_time("timeout", timeout)
        if visibility_timeout is _QUEUE_DEFAULT:
            vt = self._visibility_timeout
        else:
            vt = check_optional_time("visibility_timeout", visibility_timeout)
        if self._sink_thread is not None:
            self._refuse_reentry("receive")
        with self.mutex:
            if not self._visible:
                self._wait_for_visible(block, wait)
            try:
                if vt is None:
                    deadline = None
                else:
                    deadline = check_later("visibility_timeout", self._clock.now(), vt)
                    if self._sweeper is None:
                        self._start_sweeper()
                if self._trace is not None:
                    head = next(iter(self._visible.values()))
                    self._record("receive", (vt,), (head.id, head.attempt + 1, deadline))
            except BaseException:
                # A notify may have woken us for the head we leave visible: pass it on, so no
                # other receiver sleeps beside it (see _wait).
                self._notify(self.not_empty)
                raise
            # commit
            rec = self._deliver(deadline)
            receipt = rec.receipt = self._receipt(rec)
            if rec.deadline is not None:
                self._arm(rec)
            self._check()
            return Message(rec.id, rec.body, rec.attempt, receipt)

    def delete(self, receipt: Receipt) -> bool:
        """Acknowledge a delivery: if ``receipt`` is live the message is done and ``True``.

        Otherwise (stale, future or foreign receipt, unknown or finished message) ``False`` and
        the queue is unchanged. Works after shutdown and close. ``TypeError`` if ``receipt`` is
        not a :class:`Receipt`.
        """
        if not isinstance(receipt, Receipt):
            raise _not_a_receipt(receipt)
        if self._sink_thread is not None:
            self._refuse_reentry("delete")
        with self.mutex:
            rec = self._to_delete(receipt)
            if self._trace is not None:
                self._record("delete", (receipt.id, receipt.attempt), rec is not None)
            if rec is None:
                return False
            self._delete(rec)
            self._check()
            return True

    def retry(self, receipt: Receipt) -> bool:
        """Give a live delivery back at once: *release* it (see :meth:`change_visibility`).

        ``True`` if ``receipt`` was live; otherwise ``False`` and the queue is unchanged.
        """
        if not isinstance(receipt, Receipt):
            raise _not_a_receipt(receipt)
        if self._sink_thread is not None:
            self._refuse_reentry("retry")
        with self.mutex:
            rec = self._live(receipt)
            if self._trace is not None:
                self._record("retry", (receipt.id, receipt.attempt), rec is not None)
            if rec is None:
                return False
            self._retry(rec)
            self._check()
            return True

    def change_visibility(self, receipt: Receipt, timeout: float) -> bool:
        """Set a live delivery's deadline to now + ``timeout`` (from now, not added to the old).

        ``timeout == 0`` *releases* the message at once: it is dead-lettered if ``max_receives``
        is set and reached, else appended to the tail of the visible FIFO, keeping its attempt.
        ``True`` if ``receipt`` was live; otherwise ``False`` and the queue is unchanged.
        ``timeout`` must be a finite number >= 0 (``TypeError``/``ValueError`` otherwise).
        """
        if not isinstance(receipt, Receipt):
            raise _not_a_receipt(receipt)
        t = check_time("timeout", timeout)
        if self._sink_thread is not None:
            self._refuse_reentry("change_visibility")
        with self.mutex:
            rec = self._live(receipt)
            if rec is None:
                if self._trace is not None:
                    self._record("change_visibility", (receipt.id, receipt.attempt, t), False)
                return False
            if t == 0:
                if self._trace is not None:
                    self._record("change_visibility", (rec.id, rec.attempt, t), None)
                self._notify(self._release(rec))
            else:
                now = self._clock.now()
                deadline = check_later("timeout", now, t)
                if self._sweeper is None:
                    self._start_sweeper()
                if self._trace is not None:
                    self._record("change_visibility", (rec.id, rec.attempt, t), deadline, now)
                self._extend(rec, t, now)
            self._check()
            return True

    def cancel(self, id: str) -> bool:
        """Cancel a visible or in-flight message: ``True``, its receipt dies, capacity is freed.

        The other visible messages keep their order. For an unknown id or a finished message,
        ``False`` and the queue is unchanged. ``TypeError``/``ValueError`` for a malformed id.
        """
        id = check_id("id", id)
        if self._sink_thread is not None:
            self._refuse_reentry("cancel")
        with self.mutex:
            if self._trace is not None:
                active = id in self._visible or id in self._in_flight
                self._record("cancel", (id,), active)
            rec = self._remove(id)
            if rec is None:
                return False
            self._cancelled.add(id)
            self._notify(self.not_full)
            self._check()
            return True

    def receipt(self, id: str, attempt: int) -> Receipt:
        """The receipt that names delivery ``attempt`` of message ``id`` on this queue.

        This is how the job-queue API acts by ``(id, attempt)``. The receipt is live only if
        that delivery is the one in flight; attempt 0 names no delivery and is never live.
        ``TypeError``/``ValueError`` for a malformed id or an attempt that is not an int >= 0.
        """
        return Receipt(self._token, check_id("id", id), check_int("attempt", attempt, 0))

    def sweep(self) -> None:
        """Apply every expiry due now: release each in-flight message whose deadline <= now.

        In order of deadline, ties by receive order, as one atomic step (if the clock or the
        trace sink raises, no release of this sweep happens). This is what the sweeper thread
        runs; call it directly after advancing a fake clock. It also restarts a sweeper thread
        that died (see :meth:`health`).
        """
        if self._sink_thread is not None:
            self._refuse_reentry("sweep")
        with self.mutex:
            now = self._clock.now()
            if self._sweeper is None and self._expiry and not self._closed:
                self._start_sweeper()  # before the sweep commits: a failed start changes nothing
            self._expire(now)
            self._check()

    def record_trace(self, sink: Callable[[TraceStep], None] | None) -> None:
        """From now on pass every transition to ``sink``, for trace validation; ``None`` stops.

        Each call that returns (not one that raises) is passed as ``(action, args, result, now)``:
        ``("send", (id,), True, now)``, ``("receive", (vt,), (id, attempt, deadline), now)``,
        ``("delete", (id, attempt), ok, now)``, ``("retry", (id, attempt), ok, now)``,
        ``("change_visibility", (id, attempt, timeout), result, now)`` with result ``False`` (not
        live), the new deadline, or ``None`` (released), ``("cancel", (id,), ok, now)``, and one
        ``("expire", (), id, now)`` per message a sweep releases, ``now`` being the sweep's time.
        ``sink`` is called inside the transition's critical section, after everything else that
        can fail and just before the change is applied, so the order of the calls is the order
        in which the transitions took effect (their linearization order). A sink that raises
        vetoes its transition: the queue is left unchanged and the exception propagates (for a
        sweep, no release of that sweep happens). The sink must be quick, and must not call the
        queue: any call from inside the sink raises ``RuntimeError``. Off by default, and then
        each transition pays one ``is None`` test. ``tla/trace.py`` checks a recorded trace
        against ``tla/Queue.tla``. ``TypeError`` if ``sink`` is neither callable nor ``None``.
        """
        if sink is not None:
            check_callable("sink", sink)
        if self._sink_thread is not None:
            self._refuse_reentry("record_trace")
        with self.mutex:
            self._trace = sink

    # -- observation --------------------------------------------------------------------------

    def dead_letters(self) -> list[Message[T]]:
        """The dead-lettered messages, in the order they died, each with its last attempt."""
        if self._sink_thread is not None:
            self._refuse_reentry("dead_letters")
        with self.mutex:
            return [Message(r.id, r.body, r.attempt, r.receipt) for r in self._dead]

    def stats(self) -> Stats:
        """How many messages are visible, in flight, done, cancelled and dead, atomically."""
        if self._sink_thread is not None:
            self._refuse_reentry("stats")
        with self.mutex:
            return Stats(
                visible=len(self._visible),
                in_flight=len(self._in_flight),
                done=len(self._done),
                cancelled=len(self._cancelled),
                dead=len(self._dead),
            )

    def snapshot(self) -> Snapshot[T]:
        """The whole observable state, taken atomically (see :class:`Snapshot`)."""
        if self._sink_thread is not None:
            self._refuse_reentry("snapshot")
        with self.mutex:
            return Snapshot(
                visible=tuple(r.snapshot() for r in self._visible.values()),
                in_flight=tuple(r.snapshot() for r in self._in_flight.values()),
                dead=tuple(r.snapshot() for r in self._dead),
                done=frozenset(self._done),
                cancelled=frozenset(self._cancelled),
            )

    def health(self) -> Health:
        """Whether expiry is working, atomically (see :class:`Health`).

        A sweeper thread that died of an exception is reported here (and was logged at ERROR
        on the ``impl.queue`` logger when it died). If deadlines are armed and no sweeper is
        alive, this starts one first, so asking is also a way to resume expiry; if that start
        fails, its exception is reported as ``last_error`` rather than raised.
        """
        if self._sink_thread is not None:
            self._refuse_reentry("health")
        with self.mutex:
            armed = self._next_deadline() is not None
            if self._sweeper is None and armed and not self._closed:
                try:
                    self._start_sweeper()
                except Exception as e:
                    self._last_error = e
            return Health(
                sweeper_running=self._sweeper is not None,
                sweeper_failures=self._sweeper_failures,
                last_error=self._last_error,
                expiry_stalled=armed and not self._closed and self._sweeper is None,
            )

    # -- lifecycle ----------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Refuse new sends; let receives drain what is visible; wake every blocked caller.

        After this, ``send`` raises :class:`ShutDown`, ``receive`` delivers what is still
        visible and then raises :class:`ShutDown`, and blocked callers wake at once to do so.
        ``delete``, ``retry``, ``change_visibility`` and ``cancel`` keep working, and expiry
        keeps being applied (by the sweeper until ``close()``, by ``sweep()`` always), so work
        held by a consumer that dies is still released, and delivered to a receive that comes
        in time. Idempotent.
        """
        if self._sink_thread is not None:
            self._refuse_reentry("shutdown")
        with self.mutex:
            self._shutdown = True
            self.not_empty.notify_all()
            self.not_full.notify_all()
            self.new_deadline.notify_all()

    def close(self) -> None:
        """``shutdown()``, then stop the sweeper thread and join it. Idempotent.

        After this no thread of the queue runs; deadlines still armed are applied only by an
        explicit ``sweep()``. Must not be called while holding ``mutex``.
        """
        if self._sink_thread is not None:
            self._refuse_reentry("close")
        self.shutdown()
        with self.mutex:
            self._closed = True
            if self._link is not None:
                self._link.stopped = True
            self.new_deadline.notify_all()
            sweeper = self._sweeper
        if sweeper is not None and sweeper is not threading.current_thread():
            sweeper.join()
            with self.mutex:
                if self._sweeper is sweeper:
                    self._sweeper = self._link = None

    def __enter__(self) -> Queue[T]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        # Collected while never closed: end the sweeper (it holds only a weak reference to
        # us) and warn if work was lost with us, as an unclosed file does.
        link = getattr(self, "_link", None)
        if not getattr(self, "_closed", True):
            active = len(self._visible) + len(self._in_flight)
            if active:
                warnings.warn(
                    f"unclosed impl.Queue (token {self._token}) with {active} active messages",
                    ResourceWarning,
                    source=self,
                    stacklevel=1,
                )
        if link is not None:
            link.stopped = True
            with link.mutex:
                link.cond.notify_all()

    def __repr__(self) -> str:
        return (
            f"Queue(capacity={self._capacity!r}, visibility_timeout={self._visibility_timeout!r},"
            f" max_receives={self._max_receives!r}, clock={self._clock!r})"
        )

    # -- hooks for subclasses: the steps of the transitions, each called with mutex held -----

    def _wait_for_visible(self, block: bool, wait: float | None) -> None:
        """Receive's wait: return once a message is visible, or raise.

        Called when nothing is visible. Raises :class:`ShutDown` after ``shutdown()``,
        :class:`Empty` at once if not ``block`` or once ``wait`` seconds (``None``: no limit)
        have passed with nothing visible; otherwise waits on ``not_empty``.
        """
        endtime = None if wait is None else check_later("timeout", self._clock.now(), wait)
        while not self._visible:
            if self._shutdown:
                raise ShutDown("receive on a shut-down queue with nothing visible")
            if not block:
                raise Empty("no message is visible")
            if endtime is not None and self._clock.now() >= endtime:
                raise Empty(f"no message became visible within {wait} seconds")
            self._wait(self.not_empty, endtime)

    def _deliver(self, deadline: float | None) -> Record[T]:
        """Receive's step (its linearization point): deliver the head of the visible FIFO.

        Called with something visible, in the commit phase. The head leaves ``_visible`` and
        becomes in flight with ``attempt + 1``, the next receive sequence number, and
        ``deadline`` (``None``: never expires); returns its record. The caller arms the deadline
        (``_arm``) and makes the receipt (``_receipt``).
        """
        _, rec = self._visible.popitem(last=False)
        rec.attempt += 1
        self._receives += 1
        rec.seq = self._receives
        rec.deadline = deadline
        self._in_flight[rec.id] = rec
        return rec

    def _receipt(self, rec: Record[T]) -> Receipt:
        """Make the receipt of ``rec``'s current delivery: ``(this queue, id, attempt)``.

        Called once per delivery; ``receive`` keeps it on the record (``rec.receipt``), and
        :meth:`_live` accepts a receipt exactly when it equals that one (``OneLiveReceipt``).
        """
        return Receipt(self._token, rec.id, rec.attempt)

    def _live(self, receipt: Receipt) -> Record[T] | None:
        """The in-flight record whose live receipt is ``receipt`` (queue, id and attempt), or
        ``None``: the guard of retry and change_visibility (and of delete, by default)."""
        rec = self._in_flight.get(receipt.id)
        if rec is None:
            return None
        live = rec.receipt
        if live is receipt or (live.attempt == receipt.attempt and live.queue == receipt.queue):
            return rec
        return None

    def _to_delete(self, receipt: Receipt) -> Record[T] | None:
        """Delete's guard: the in-flight record a delete with ``receipt`` acts on, or ``None``
        (and the delete changes nothing): the one whose live receipt it is (``_live``)."""
        return self._live(receipt)

    def _delete(self, rec: Record[T]) -> None:
        """Delete's step: the live delivery ``rec``'s message is done (one slot freed, one
        sender woken)."""
        del self._in_flight[rec.id]
        rec.deadline = None
        self._done.add(rec.id)
        self._notify(self.not_full)

    def _retry(self, rec: Record[T]) -> None:
        """Retry's step: release the live delivery ``rec`` (``_release``) and wake whom that
        enables."""
        self._notify(self._release(rec))

    def _extend(self, rec: Record[T], t: float, now: float) -> None:
        """Change_visibility's step for ``t > 0``: the live delivery ``rec``'s deadline becomes
        ``now + t`` (from now, not added to the old one), armed for the sweeper."""
        rec.deadline = now + t
        self._arm(rec)

    def _remove(self, id: str) -> Record[T] | None:
        """Cancel's step, up to the bookkeeping: take the active message ``id`` out of the
        visible FIFO (the others keep their order) or out of flight (its receipt dies, its
        deadline is dropped); its record, or ``None`` (and no change) if ``id`` is not active."""
        rec = self._visible.pop(id, None)
        if rec is None:
            rec = self._in_flight.pop(id, None)
            if rec is not None:
                rec.deadline = None
        return rec

    def _release(self, rec: Record[T]) -> threading.Condition:
        """Take back an in-flight message: dead-letter it, or append it to the visible tail.

        The step that retry, change_visibility(0) and expiry share. It keeps the attempt, and
        returns the condition whose waiters the release may enable (``not_full`` for a slot
        freed by dead-lettering, ``not_empty`` for a message made visible); each caller passes
        it to ``_notify``, so the wakeups of each path are written where it releases.
        """
        assert self._in_flight.get(rec.id) is rec, f"release of {rec.id!r}: not in flight"
        del self._in_flight[rec.id]
        rec.deadline = None
        if self._dies(rec):
            self._dead.append(rec)
            return self.not_full
        self._visible[rec.id] = rec
        return self.not_empty

    def _dies(self, rec: Record[T]) -> bool:
        """The dead-letter policy: a release of ``rec`` dead-letters it, because it has had
        ``max_receives`` deliveries (``spec.dead_letters_on_release``, TLA+ ``Dies``)."""
        return self._max_receives is not None and rec.attempt >= self._max_receives

    def _arm(self, rec: Record[T]) -> None:
        """Record ``rec``'s deadline for expiry, and wake the sweeper if it must re-aim.

        Called in the commit phase, after ``rec``'s deadline is set (not ``None``) while it is
        in flight; the transition has already made sure a sweeper thread runs (unless the queue
        is closed). Pushes the heap entry (rebuilding the heap when stale entries outnumber
        live ones), then wakes the sweeper if this deadline is earlier than the one it sleeps
        until. After ``close()`` no thread is woken.
        """
        assert rec.deadline is not None and self._in_flight.get(rec.id) is rec
        heapq.heappush(self._expiry, (rec.deadline, rec.seq, rec.id, rec.attempt))
        if len(self._expiry) > 2 * len(self._in_flight) + 16:
            self._compact()
        if self._sweeper is not None and (
            self._sweeper_target is None or rec.deadline < self._sweeper_target
        ):
            self._notify(self.new_deadline)

    def _expire(self, now: float) -> None:
        """The sweep, one transition: every in-flight delivery with deadline <= now, by
        (deadline, receive order), is traced, then released by ``_expire_one``.

        All due deliveries are collected and traced first; if the sink raises, their heap
        entries are put back and nothing is released. Stale heap entries met on the way are
        dropped.
        """
        heap = self._expiry
        if not heap or heap[0][0] > now:
            return
        due: list[tuple[_Entry, Record[T]]] = []
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            rec = self._current(entry)
            # Equal entries (a deadline re-armed to the same time) pop one after the other.
            if rec is not None and not (due and due[-1][0] == entry):
                due.append((entry, rec))
        if self._trace is not None:
            try:
                for _, rec in due:
                    self._record("expire", (), rec.id, now)
            except BaseException:
                for entry, _ in due:
                    heapq.heappush(heap, entry)
                raise
        for _, rec in due:
            self._expire_one(rec, now)

    def _expire_one(self, rec: Record[T], now: float) -> None:
        """Expiry's step for one delivery whose deadline passed (commit phase of a sweep at
        ``now``): release it (``_release``) and wake whom that enables."""
        self._notify(self._release(rec))

    def _next_deadline(self) -> float | None:
        """The deadline the sweeper sleeps until next: the earliest armed one, dropping stale
        entries from the top of the heap; ``None`` (nothing armed): until notified."""
        while self._expiry and self._current(self._expiry[0]) is None:
            heapq.heappop(self._expiry)
        return self._expiry[0][0] if self._expiry else None

    def _has_room(self) -> bool:
        """Whether a send may be accepted now: active (visible + in flight) < capacity."""
        return self._capacity is None or len(self._visible) + len(self._in_flight) < self._capacity

    def _notify(self, cond: threading.Condition) -> None:
        """Wake one waiter of ``cond``, if any: every wakeup of a transition comes through here."""
        # Condition.notify costs about 0.3 µs even with no waiter (it tests that the caller
        # owns the lock by trying to take it); most transitions have no one to wake.
        if self._waiting[cond]:
            cond.notify()

    def _wait(self, cond: threading.Condition, deadline: float | None) -> None:
        """Wait on ``cond`` through the clock, counted in ``_waiting`` while waiting.

        A waiter that leaves by an exception (a signal handler's KeyboardInterrupt, a failing
        clock) may have taken a notify meant for someone: it passes one on before the exception
        propagates, so no other waiter sleeps beside what it was woken for. (A spurious wakeup
        costs the other waiter one check of its predicate.)
        """
        self._waiting[cond] += 1
        try:
            self._clock.wait(cond, deadline)
        except BaseException:
            self._waiting[cond] -= 1
            self._notify(cond)
            raise
        self._waiting[cond] -= 1

    # -- internals: every method below is called with mutex held -----------------------------

    def _fresh_id(self) -> str:
        # A counter, not uuid4: uuid4 took ~5 µs here, a third of a send + receive + delete
        # cycle (a UUID object built in Python, and a getrandom call that releases the GIL
        # inside this critical section, so other threads pile up on mutex). Ids need only be
        # unique within this queue; the loop skips any id that a caller chose first.
        while True:
            id = f"msg-{next(self._ids)}"
            if id not in self._accepted:
                return id

    def _record(
        self, action: str, args: tuple[object, ...], result: object, now: float | None = None
    ) -> None:
        """Pass one transition to the trace sink (called only while recording, before the
        transition's commit: if the clock or the sink raises, the transition is vetoed)."""
        sink = self._trace
        assert sink is not None
        step = (action, args, result, self._clock.now() if now is None else now)
        self._sink_thread = threading.get_ident()
        try:
            sink(step)
        finally:
            self._sink_thread = None

    def _refuse_reentry(self, method: str) -> None:
        """Raise if this thread is inside the trace sink: the transition that called the sink
        holds the lock half-done, so re-entering (an RLock would let it) must not happen."""
        if self._sink_thread == threading.get_ident():
            raise RuntimeError(
                f"Queue.{method}() called from inside the queue's trace sink: a sink must not "
                "call the queue it records"
            )

    def _compact(self) -> None:
        # Stale entries outnumber live ones: rebuild from the in-flight records. This happens at
        # most once per len(_in_flight) + 16 arms, so its cost is O(1) per arm, amortized.
        self._expiry = [
            (r.deadline, r.seq, r.id, r.attempt)
            for r in self._in_flight.values()
            if r.deadline is not None
        ]
        heapq.heapify(self._expiry)

    def _current(self, entry: _Entry) -> Record[T] | None:
        """The in-flight record that ``entry`` still stands for, or ``None`` if it is stale."""
        deadline, seq, id, attempt = entry
        rec = self._in_flight.get(id)
        if rec is None or rec.seq != seq or rec.attempt != attempt or rec.deadline != deadline:
            return None
        return rec

    def _start_sweeper(self) -> None:
        """Start the sweeper thread (none is alive and the queue is not closed), or raise and
        change nothing: called before a transition commits, so a failed start vetoes it."""
        if self._closed:
            return  # no thread outlives close(): from now on only sweep() expires
        link = _SweeperLink(self.mutex, self.new_deadline, self._clock, self._waiting)
        thread = threading.Thread(
            target=_sweep_forever,
            args=(weakref.ref(self), link),
            name=f"impl.Queue-{self._token}-sweeper",
            daemon=True,
        )
        thread.start()  # may raise RuntimeError("can't start new thread"): nothing changed
        self._sweeper, self._link = thread, link

    def _sweep_round(self) -> float | None:
        """One round of the sweeper thread: expire what is due, and return the deadline to
        sleep until (``None``: until notified)."""
        self._expire(self._clock.now())
        self._check()
        self._sweeper_target = self._next_deadline()
        return self._sweeper_target

    def _sweeper_died(self, link: _SweeperLink, error: BaseException) -> None:
        """The sweeper thread of ``link`` ends with ``error``: report it and let the next arm,
        ``sweep()`` or ``health()`` start another."""
        if self._link is link:
            self._sweeper = self._link = None
            self._sweeper_target = None
        self._sweeper_failures += 1
        self._last_error = error
        log.error(
            "impl.Queue %d: the sweeper thread died; expiry stalls until the next receive "
            "with a visibility timeout, change_visibility, sweep() or health()",
            self._token,
            exc_info=error,
        )

    def _reinit_after_fork(self) -> None:
        """In a child process: fresh lock and conditions (the parent's may be held by threads
        that do not exist here), no waiters, no sweeper (the next arm starts one)."""
        self.mutex = threading.RLock()
        self.not_empty = threading.Condition(self.mutex)
        self.not_full = threading.Condition(self.mutex)
        self.new_deadline = threading.Condition(self.mutex)
        self._waiting = {self.not_empty: 0, self.not_full: 0, self.new_deadline: 0}
        self._sweeper = self._link = None
        self._sweeper_target = None
        self._sink_thread = None
        if self._expiry and not self._closed:
            # Deliveries in flight at the fork still expire in the child.
            try:
                self._start_sweeper()
            except Exception as e:  # reported by health(); the next arm tries again
                self._last_error = e

    def _check(self) -> None:
        """Cheap (O(1)) assertions of the invariants in the class docstring."""
        active = len(self._visible) + len(self._in_flight)
        assert self._capacity is None or active <= self._capacity, "CapacityBound"
        assert len(self._accepted) == (
            active + len(self._done) + len(self._cancelled) + len(self._dead)
        ), "OneState"
