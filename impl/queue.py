"""The threaded queue with SQS semantics: ``impl.Queue``, shaped after CPython's ``queue.Queue``.

One lock (``mutex``) guards all state; three named conditions share it. Each transition of the
contract (section 2), batches included, is one critical section that does exactly what
``spec.transitions`` does to the pure state, then notifies every condition whose waiters it may
have enabled. Time comes only from the injected clock. Two kinds of timer, a delayed message's
``visible_at`` and a delivery's deadline, share one heap ordered by (due time, the order the
timers were started); :meth:`Queue.sweep` fires what is due, and a lazily started sweeper thread
runs it whenever the earliest timer comes due. Nothing here sleeps or polls.

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
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Final, Generic, Literal, TypeVar

from impl.clock import Clock, MonotonicClock, check_clock
from impl.errors import DuplicateIdError, Empty, Full, ShutDown
from impl.message import Entry, Health, Message, Receipt, Snapshot, SnapshotMessage, Stats
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

#: A timer heap entry: (due time, timer sequence, id, attempt). A delivery's deadline has the
#: delivery's attempt (>= 1); a delayed message's ``visible_at`` has attempt 0. Ordered by due
#: time, then by the order the timers were started (one counter for both kinds), which is
#: exactly the order in which the contract's ``expire`` fires them.
_Entry = tuple[float, int, str, int]

#: The most entries, receipts or changes in one batch, and the most messages a receive_batch
#: asks for (SQS's limit).
MAX_BATCH: Final = 10

#: The key of ``Queue._waiting`` that counts the send_batch calls waiting on ``not_full``.
_BATCH_SENDERS: Final = "send_batch"


class Sync:
    """Where a queue gets its lock, its conditions and its sweeper thread: the threading seam.

    The default (:data:`THREADING`) hands out ``threading.RLock``, ``threading.Condition`` and
    daemon ``threading.Thread`` objects. A clock may carry another one as its ``sync``
    attribute: a queue built with that clock then takes its primitives from it, so a test can
    put the lock, the conditions and the sweeper under a controlled scheduler
    (``model_tests/schedule``) while the queue's code stays what production runs. Waits need
    no factory: every wait already goes through ``clock.wait(cond, deadline)``. The queue asks
    for primitives only when it is built, when it starts a sweeper and after a fork, never per
    operation, so the seam costs a production queue nothing on its hot path. A replacement
    must behave as the threading module's objects do (``acquire``/``release`` and the context
    manager of an ``RLock``; ``notify``/``notify_all`` of a ``Condition`` whose lock it is;
    ``start``/``join``/``is_alive`` of a ``Thread``).
    """

    __slots__ = ()

    def rlock(self) -> threading.RLock:
        """A new reentrant lock: the queue's ``mutex``."""
        return threading.RLock()

    def condition(self, lock: threading.RLock) -> threading.Condition:
        """A new condition variable on ``lock``: ``not_empty``, ``not_full``, ``new_deadline``."""
        return threading.Condition(lock)

    def thread(
        self, target: Callable[..., object], args: tuple[Any, ...], name: str
    ) -> threading.Thread:
        """A new, not yet started daemon thread running ``target(*args)``: the sweeper."""
        return threading.Thread(target=target, args=args, name=name, daemon=True)


#: The default :class:`Sync`: the threading module's own primitives.
THREADING: Final = Sync()


def sync_of(clock: Clock) -> Sync:
    """The :class:`Sync` a queue with ``clock`` uses: ``clock.sync`` if it has one, else
    :data:`THREADING`."""
    sync = getattr(clock, "sync", None)
    return THREADING if sync is None else sync


class _SweeperLink:
    """What a sweeper thread shares with its queue, so that it need not hold the queue itself.

    The thread keeps this and a weak reference to the queue; while it waits it holds no strong
    reference, so a queue nobody uses can be collected, and its ``__del__`` (or ``close``) sets
    ``stopped`` and notifies ``cond`` to end the thread.
    """

    __slots__ = ("clock", "cond", "mutex", "stopped", "target", "waiting")

    def __init__(
        self,
        mutex: threading.RLock,
        cond: threading.Condition,
        clock: Clock,
        waiting: dict[object, int],
    ) -> None:
        self.mutex = mutex
        self.cond = cond
        self.clock = clock
        self.waiting = waiting
        self.stopped = False
        #: The time the sweeper waits until (``None``: until notified), so that a new timer
        #: wakes it only if it is due earlier.
        self.target: float | None = None


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
                target = link.target = q._sweep_round()
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

    __slots__ = ("attempt", "body", "deadline", "id", "receipt", "seq", "visible_at")

    #: The receipt of the current (or last) delivery, made by ``Queue._receipt`` when it is
    #: delivered: while in flight, the live receipt. Unset before the first delivery.
    receipt: Receipt
    #: When a delayed message becomes visible: set by a delayed send (and read only while the
    #: message is delayed); unset for a message sent without a delay.
    visible_at: float

    def __init__(self, id: str, body: T) -> None:
        self.id = id
        self.body = body
        self.attempt = 0
        #: Set only while in flight with a finite visibility timeout.
        self.deadline: float | None = None
        #: The sequence number of its current (or last) timer: the delay of a delayed send, or
        #: the delivery (one counter for both; a delivery takes its place in the timer order
        #: even without a deadline, and change_visibility keeps it); 0 before either.
        self.seq = 0

    def snapshot(self) -> SnapshotMessage[T]:
        return SnapshotMessage(self.id, self.body, self.attempt, self.deadline)

    def delayed_snapshot(self) -> SnapshotMessage[T]:
        """As :meth:`snapshot`, for a delayed message: with its ``visible_at``."""
        return SnapshotMessage(self.id, self.body, self.attempt, None, self.visible_at)


class Queue(Generic[T]):
    """An in-memory, thread-safe queue with SQS semantics: visibility timeouts, at-least-once.

    ``send`` appends to a FIFO of visible messages (or, with a delay, holds the message until
    its ``visible_at`` and then appends it); ``receive`` hands out the head and hides it for a
    visibility timeout instead of removing it; ``delete`` with the delivery's receipt removes it
    for good. A delivery not deleted in time is redelivered with ``attempt + 1`` (or
    dead-lettered after ``max_receives`` deliveries), so a consumer must be idempotent. The
    batch methods (``send_batch``, ``receive_batch``, ``delete_batch``,
    ``change_visibility_batch``) do up to ten of those in one critical section; ``purge``
    cancels every active message at once.

    Shared state, all guarded by ``mutex``, and its invariants (checked by ``_check`` and by the
    model-based tests against ``spec``):

    - ``_visible``: id -> record of each ``VISIBLE`` message, in FIFO order (head first); an
      ordered dict, so ``cancel`` removes from the middle in O(1) and keeps the rest in order.
    - ``_in_flight``: id -> record of each ``IN_FLIGHT`` message, in receive order.
    - ``_delayed``: id -> record of each ``DELAYED`` message, in send order; each has its
      ``visible_at``, and ``_expiry`` holds its entry ``(visible_at, seq, id, 0)``.
    - ``_dead`` (records, in order of death), ``_done`` and ``_cancelled`` (ids): terminal.
    - ``_accepted``: every id ever accepted. ``OneState``: it is the disjoint union of the six
      groups above; ``IdsReserved``: ids are only ever added to it.
    - ``CapacityBound``: ``len(_delayed) + len(_visible) + len(_in_flight) <= capacity``.
    - ``OneLiveReceipt``: the live receipt of a message is its in-flight record's ``receipt``,
      ``(token, id, attempt)``, made when it was delivered; so there is at most one, and it
      carries the current attempt.
    - A record has a ``deadline`` iff it is in flight with a finite visibility timeout, and then
      ``_expiry`` holds the entry ``(deadline, seq, id, attempt)``. ``_expiry`` is one heap for
      both kinds of timer (``DelayHonoured``, and the contract's one timer order: by due time,
      ties by ``seq``, the order the timers were started). It may also hold stale entries
      (deleted, released, re-armed, cancelled or purged); a deadline entry counts only while it
      matches the in-flight record exactly, a delay entry (attempt 0) only while its message is
      delayed, so stale ones are skipped when popped.
    - After ``shutdown()`` no message is accepted; after ``close()`` no sweeper thread runs.

    Waking: each transition notifies one waiter per unit of what it made available (a visible
    message, a free slot), which is enough because a woken waiter re-checks its predicate first
    and so takes what it was woken for, or, if it leaves without it (a sender whose id was taken
    meanwhile), passes the notify on. One exception: while a ``send_batch`` waits for room for
    all its entries, a freed slot wakes every sender on ``not_full`` (a single notify could
    reach the batch, which cannot use one slot, while a single send that could sleeps on; and
    a batch passing it on could pass it to another batch, round and round). A delay firing is
    one message made visible: one ``not_empty`` notify. Shutdown notifies everyone.

    Threads: the first timer (a finite deadline or a delay) starts one daemon sweeper thread;
    a queue with neither never starts one. The sweeper holds only a weak reference to the
    queue: a queue nobody references is collected and its sweeper ends (with a
    ``ResourceWarning`` if it still held active messages). Close the queue (or use ``with``)
    when done with it; ``close()`` joins the thread. The lock, the three conditions and the
    sweeper thread come from ``clock.sync`` when the clock has that attribute (a :class:`Sync`;
    else the threading module's), and every wait goes through ``clock.wait``: that is the seam
    through which ``model_tests/schedule`` runs this very code under a controlled scheduler. It
    is read when the queue is built and when a sweeper starts, never per operation.

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
    - ``_deliver_batch(n, deadline)``: receive_batch's step: ``_deliver`` the first min(n,
      visible) messages, with the lock held throughout.
    - ``_heads(n)``: the records ``_deliver_batch(n, ...)`` would deliver (for the trace).
    - ``_receipt(rec)``: make the receipt of ``rec``'s delivery, which becomes the live one.
    - ``_live(receipt)``: the in-flight record ``receipt`` names, if it is live.
    - ``_to_delete(receipt)``: the record a delete acts on: the live one.
    - ``_to_delete_batch(receipts)``: delete_batch's guard: ``_to_delete`` for each receipt,
      as if the earlier ones of the batch had been applied.
    - ``_delete(rec)``, ``_retry(rec)``: the steps of delete and retry.
    - ``_extend(rec, t, now)``: change_visibility's step for ``t > 0``: deadline now + ``t``.
    - ``_remove(id)``: cancel's step: take an active message out of delayed, visible or in
      flight.
    - ``_purge()``: purge's step: every active message cancelled, every timer dropped.
    - ``_release(rec)``: dead-letter (if ``_dies(rec)``) or append to the visible tail.
    - ``_dies(rec)``: the dead-letter policy, asked at each release.
    - ``_arm(rec)``: put a deadline where the sweeper looks, and wake the sweeper.
    - ``_arm_delay(rec)``: put a delayed message's ``visible_at`` where the sweeper looks.
    - ``_expire(now)``: the sweep: collect every due timer, trace it, then fire each by
      ``_expire_one`` (a deadline) or ``_fire_delay`` (a delay).
    - ``_expire_one(rec, now)``: expiry's step for one due delivery: release it, notify.
    - ``_fire_delay(rec)``: a due delay's step: the message joins the visible tail, notify.
    - ``_next_deadline()``: the due time the sweeper sleeps until next (of either kind).
    - ``_wait_for_room(op, need, block, endtime, wait)``: the wait of every send and
      send_batch (of every queue type), until the shutdown check, ``need()`` and the room test
      let it go ahead; :meth:`_unclaimed` is the id check ``need`` usually makes.
    - ``_has_room()``: ``CapacityBound``'s test, for send.
    - ``_accepts(n)``: ``CapacityBound``'s test for a send_batch of ``n``: how many of its
      entries may be accepted now (all or none).
    - ``_notify(cond)`` and ``_wait(cond, deadline)``: every wakeup and every wait.
    """

    def __init__(
        self,
        capacity: int | None = None,
        visibility_timeout: float | None = 30.0,
        max_receives: int | None = None,
        delay: float = 0.0,
        clock: Clock | None = None,
    ) -> None:
        """Make an empty queue, or raise ``TypeError``/``ValueError`` naming the bad argument.

        ``capacity``: bound on active (delayed + visible + in-flight) messages; ``None`` is
        unbounded and 0 accepts nothing. ``visibility_timeout``: seconds a delivery stays
        hidden; ``None`` means deliveries never expire. ``max_receives``: a release after this
        many deliveries dead-letters the message; ``None`` never does. ``delay``: seconds a sent
        message stays delayed unless its send says otherwise (0: visible at once). ``clock``:
        defaults to the real clock.
        """
        self._capacity = check_optional_int("capacity", capacity, 0)
        self._visibility_timeout = check_optional_time("visibility_timeout", visibility_timeout)
        self._max_receives = check_optional_int("max_receives", max_receives, 1)
        self._delay = check_time("delay", delay)
        self._clock: Clock = MonotonicClock() if clock is None else check_clock("clock", clock)
        with _tokens_lock:
            self._token = next(_tokens)

        # An RLock, not a Lock: Condition.wait re-takes an RLock in a way that a signal handler
        # cannot interrupt, and an RLock can never be released by a thread that does not hold
        # it. With a Lock, a KeyboardInterrupt while re-taking it leaves the waiter outside the
        # lock, and its ``with`` then releases a lock that another thread holds.
        sync = sync_of(self._clock)  # the threading seam (see Sync): once, not per operation
        self.mutex = sync.rlock()
        # Receivers wait here for a visible message. Notified once per message made visible, by
        # send and by every release to VISIBLE (retry, change_visibility(0), expiry); notified
        # all at shutdown, so blocked receivers raise ShutDown at once.
        self.not_empty = sync.condition(self.mutex)
        # Senders wait here for room. Notified once per freed slot, by delete, cancel and
        # dead-lettering (receiving and releasing to VISIBLE free nothing); notified all at
        # shutdown, so blocked senders raise ShutDown at once.
        self.not_full = sync.condition(self.mutex)
        # The sweeper waits here for the earliest deadline. Notified when a deadline earlier than
        # the one it waits for is armed (receive, change_visibility), and at shutdown and close.
        self.new_deadline = sync.condition(self.mutex)
        # How many threads wait on each condition, so a transition with nobody to wake skips
        # the notify (see _notify).
        self._waiting = self._new_waiting()

        self._visible: OrderedDict[str, Record[T]] = OrderedDict()
        self._in_flight: dict[str, Record[T]] = {}
        self._delayed: dict[str, Record[T]] = {}
        self._dead: list[Record[T]] = []
        self._done: set[str] = set()
        self._cancelled: set[str] = set()
        self._accepted: set[str] = set()
        self._expiry: list[_Entry] = []
        # Timers started so far (delayed sends and deliveries): the ``seq`` of the next one.
        self._timers = 0
        self._ids = itertools.count(1)  # for generated ids
        self._shutdown = False
        self._closed = False
        # The sweeper thread, while one is alive (started by the first arm), and what it shares.
        self._sweeper: threading.Thread | None = None
        self._link: _SweeperLink | None = None
        # How many sweeper threads died of an exception, and the last error (of a sweeper or
        # of a failed restart): what health() reports.
        self._failures: tuple[int, BaseException | None] = (0, None)
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

    @property
    def delay(self) -> float:
        """The delay of a send that gives none, in seconds."""
        return self._delay

    # -- the transitions ----------------------------------------------------------------------

    def send(
        self,
        body: T,
        *,
        id: str | None = None,
        delay: float | None = None,
        block: bool = True,
        timeout: float | None = None,
    ) -> str:
        """Append a message to the tail of the visible FIFO and return its id.

        ``id`` must be new to this queue; ``None`` asks for a fresh generated id (a ``str``
        subclass is stored as a plain ``str``). ``delay`` (``None``: the queue's): a message
        sent with a delay > 0 is ``DELAYED`` until now + ``delay``, when the sweep appends it to
        the visible tail; it holds its slot meanwhile. When the queue is full, wait for room
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
        d = self._delay if delay is None else check_time("delay", delay)
        check_bool("block", block)
        wait = check_optional_time("timeout", timeout)
        if self._sink_thread is not None:
            self._refuse_reentry("send")
        with self.mutex:
            if id is not None and id in self._accepted:
                raise DuplicateIdError(f"id {id!r} was already accepted by this queue")
            if d:
                check_later("delay", self._clock.now(), d)  # an argument error: before waiting
            endtime = None if wait is None else check_later("timeout", self._clock.now(), wait)
            if self._shutdown or not self._has_room():  # the common path never calls the hook
                named = () if id is None else (("id", id),)
                self._wait_for_room(
                    "send", lambda: self._unclaimed("send", named, 1), block, endtime, wait
                )
            if id is None:
                id = self._fresh_id()
            if d:
                return self._send_delayed(id, body, d)
            if self._trace is not None:
                try:
                    self._record("send", (id, 0.0), True)
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

    def _send_delayed(self, id: str, body: T, delay: float) -> str:
        # The rest of send for a delay > 0 (kept out of send, whose common path it would slow):
        # prepare (the clock, the sweeper, the trace), then commit the DELAYED message.
        try:
            now = self._clock.now()
            visible_at = check_later("delay", now, delay)
            if self._sweeper is None:
                self._start_sweeper()
            if self._trace is not None:
                self._record("send", (id, delay), True, now)
        except BaseException:
            self._notify(self.not_full)  # a notify may have woken us for this slot (see _wait)
            raise
        # commit
        self._accepted.add(id)
        self._add_delayed(Record(id, body), visible_at)
        self._check()
        return id

    def send_batch(
        self,
        entries: Sequence[Entry[T]],
        *,
        block: bool = True,
        timeout: float | None = None,
    ) -> list[str]:
        """Send 1 to 10 messages in one atomic step, all or none; their ids, in entry order.

        Each :class:`Entry` is sent as by :meth:`send` (its ``id``, ``None`` for a generated
        one; its ``delay``, ``None`` for the queue's), in order, with nothing in between. When
        the queue has no room for *all* of them, wait until it has (``block=True``, at most
        ``timeout`` seconds if given) or raise :class:`Full` (``block=False``, or the timeout
        ran out): a batch is never accepted in part. Before any waiting, and changing nothing:
        ``TypeError``/``ValueError`` naming the argument or the entry (``entries[2].delay
        must ...``) for a batch that is not a sequence of 1 to 10 entries, a bad entry, a
        ``group`` or ``dedup_id`` (FIFO queues only), or a batch larger than the capacity (it
        could never fit); :class:`DuplicateIdError` (a ``ValueError``) for an id repeated in
        the batch or already accepted. :class:`ShutDown` after ``shutdown()``; an id taken by
        another sender while this batch waits raises :class:`DuplicateIdError` when it wakes.
        """
        batch = _check_batch("entries", entries)
        n = len(batch)
        # Filled in for the entries that give an id or a delay; most give neither.
        ids: list[str | None] = [None] * n
        delays = [self._delay] * n
        explicit: dict[str, int] = {}
        for i, e in enumerate(batch):
            if not isinstance(e, Entry):
                raise TypeError(f"entries[{i}] must be an impl.Entry, got {type(e).__name__}")
            if e.group is not None or e.dedup_id is not None:
                which = "group" if e.group is not None else "dedup_id"
                raise ValueError(
                    f"entries[{i}].{which} must be None: a standard queue has no message groups "
                    "or deduplication (FIFO queues only)"
                )
            if e.id is not None:
                id = check_id(f"entries[{i}].id", e.id)
                if id in explicit:
                    raise DuplicateIdError(
                        f"entries[{i}].id {id!r} repeats entries[{explicit[id]}].id"
                    )
                explicit[id] = i
                ids[i] = id
            if e.delay is not None:
                delays[i] = check_time(f"entries[{i}].delay", e.delay)
        check_bool("block", block)
        wait = check_optional_time("timeout", timeout)
        if self._capacity is not None and n > self._capacity:
            raise ValueError(
                f"entries: a batch of {n} can never fit a queue of capacity {self._capacity}"
            )
        if self._sink_thread is not None:
            self._refuse_reentry("send_batch")
        with self.mutex:
            for id, i in explicit.items():
                if id in self._accepted:
                    raise DuplicateIdError(
                        f"entries[{i}].id {id!r} was already accepted by this queue"
                    )
            longest = max(delays)
            if longest:
                check_later("delay", self._clock.now(), longest)  # before waiting
            endtime = None if wait is None else check_later("timeout", self._clock.now(), wait)
            named = [(f"entries[{i}].id", id) for id, i in explicit.items()]
            k = self._wait_for_room(
                "send_batch", lambda: self._unclaimed("send_batch", named, n), block, endtime, wait
            )
            # prepare: everything that may raise
            final = self._fresh_ids(ids[:k], explicit)
            try:
                now = None
                visible_at: list[float] = []
                if longest:
                    now = self._clock.now()
                    visible_at = [
                        check_later(f"entries[{i}].delay", now, d) if d else 0.0
                        for i, d in enumerate(delays[:k])
                    ]
                    if self._sweeper is None:
                        self._start_sweeper()
                if self._trace is not None:
                    self._record("send_batch", (tuple(final), tuple(delays[:k])), True, now)
            except BaseException:
                self._notify(self.not_full)  # a notify may have woken us for this room
                raise
            # commit: each entry as send, in order
            self._accepted.update(final)
            if not longest:  # the common batch: every entry visible at once
                visible = self._visible
                for id, e in zip(final, batch, strict=False):
                    visible[id] = Record(id, e.body)
                # One notify per message made visible, as k sends would (none if none waits).
                for _ in range(min(k, self._waiting[self.not_empty])):
                    self._notify(self.not_empty)
            else:
                for i, id in enumerate(final):
                    rec = Record(id, batch[i].body)
                    if delays[i]:
                        self._add_delayed(rec, visible_at[i])
                    else:
                        self._visible[id] = rec
                        self._notify(self.not_empty)
            self._check()
            return final

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
                    head = self._heads(1)[0]
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

    def receive_batch(
        self,
        max_messages: int = MAX_BATCH,
        *,
        block: bool = True,
        timeout: float | None = None,
        visibility_timeout: float | Literal[_Default.QUEUE_DEFAULT] | None = _QUEUE_DEFAULT,
    ) -> list[Message[T]]:
        """Deliver the first ``max_messages`` (1 to 10) visible messages, or as many as there are.

        One critical section: each is delivered as by :meth:`receive`, in FIFO order, all with
        the same deadline (now + ``visibility_timeout``). Waits, like :meth:`receive`, until at
        least one message is visible (``block``, ``timeout``, :class:`Empty`,
        :class:`ShutDown` as there); never waits for more than one. ``max_messages`` outside
        1..10 is a ``ValueError`` (not an int: ``TypeError``), before any waiting.
        """
        n = check_int("max_messages", max_messages, 1)
        if n > MAX_BATCH:
            raise ValueError(f"max_messages must be <= {MAX_BATCH}, got {n!r}")
        check_bool("block", block)
        wait = check_optional_time("timeout", timeout)
        if visibility_timeout is _QUEUE_DEFAULT:
            vt = self._visibility_timeout
        else:
            vt = check_optional_time("visibility_timeout", visibility_timeout)
        if self._sink_thread is not None:
            self._refuse_reentry("receive_batch")
        with self.mutex:
            if not self._visible:
                self._wait_for_visible(block, wait)
            try:
                now = None
                deadline = None
                if vt is not None:
                    now = self._clock.now()
                    deadline = check_later("visibility_timeout", now, vt)
                    if self._sweeper is None:
                        self._start_sweeper()
                if self._trace is not None:
                    result = tuple((r.id, r.attempt + 1, deadline) for r in self._heads(n))
                    self._record("receive_batch", (n, vt), result, now)
            except BaseException:
                self._notify(self.not_empty)  # pass on a notify we may have taken (see _wait)
                raise
            # commit
            recs = self._deliver_batch(n, deadline)
            receipt_of, arm = self._receipt, self._arm
            out: list[Message[T]] = []
            for rec in recs:
                receipt = rec.receipt = receipt_of(rec)
                if rec.deadline is not None:
                    arm(rec)
                out.append(Message(rec.id, rec.body, rec.attempt, receipt))
            self._check()
            return out

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

    def delete_batch(self, receipts: Sequence[Receipt]) -> list[bool]:
        """Delete with 1 to 10 receipts in one atomic step: each as :meth:`delete`, in order.

        A receipt repeated in the batch gives ``False`` the second time (its message is done by
        then). ``TypeError``/``ValueError`` naming the argument or the item (``receipts[1]``)
        for a batch that is not a sequence of 1 to 10 :class:`Receipt`.
        """
        batch = _check_batch("receipts", receipts)
        for r in batch:
            if not isinstance(r, Receipt):
                i = next(i for i, r in enumerate(batch) if not isinstance(r, Receipt))
                raise TypeError(f"receipts[{i}] must be a Receipt, got {type(r).__name__}")
        if self._sink_thread is not None:
            self._refuse_reentry("delete_batch")
        with self.mutex:
            recs = self._to_delete_batch(batch)
            results = [rec is not None for rec in recs]
            if self._trace is not None:
                self._record(
                    "delete_batch", tuple((r.id, r.attempt) for r in batch), tuple(results)
                )
            # commit
            delete = self._delete
            for rec in recs:
                if rec is not None:
                    delete(rec)
            self._check()
            return results

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

    def change_visibility_batch(self, changes: Sequence[tuple[Receipt, float]]) -> list[bool]:
        """Apply 1 to 10 ``(receipt, timeout)`` changes in one atomic step: each as
        :meth:`change_visibility`, in order, all from the same now.

        A change whose receipt an earlier change of the batch made stale (by releasing its
        message with timeout 0) gives ``False``. ``TypeError``/``ValueError`` naming the
        argument or the item (``changes[1].timeout``) for a batch that is not a sequence of 1 to
        10 pairs of a :class:`Receipt` and a finite timeout >= 0.
        """
        batch = _check_batch("changes", changes)
        checked: list[tuple[Receipt, float]] = []
        for i, c in enumerate(batch):
            if not isinstance(c, tuple) or len(c) != 2:
                raise TypeError(
                    f"changes[{i}] must be a (receipt, timeout) pair, got {type(c).__name__}"
                )
            receipt, timeout = c
            if not isinstance(receipt, Receipt):
                raise TypeError(
                    f"changes[{i}].receipt must be a Receipt, got {type(receipt).__name__}"
                )
            checked.append((receipt, check_time(f"changes[{i}].timeout", timeout)))
        if self._sink_thread is not None:
            self._refuse_reentry("change_visibility_batch")
        with self.mutex:
            # The guards, as if the changes before each had been applied: only a release
            # (timeout 0) ends a receipt's life within the batch.
            recs: list[Record[T] | None] = []
            released: set[str] = set()
            for receipt, t in checked:
                rec = self._live(receipt)
                if rec is not None and rec.id in released:
                    rec = None
                elif rec is not None and t == 0:
                    released.add(rec.id)
                recs.append(rec)
            extends = any(rec is not None and t for rec, (_, t) in zip(recs, checked, strict=True))
            now = self._clock.now() if extends else None
            results: list[float | bool | None] = []
            for i, (rec, (_, t)) in enumerate(zip(recs, checked, strict=True)):
                if rec is None:
                    results.append(False)
                elif t == 0:
                    results.append(None)
                else:
                    assert now is not None
                    results.append(check_later(f"changes[{i}].timeout", now, t))
            if extends and self._sweeper is None:
                self._start_sweeper()
            if self._trace is not None:
                self._record(
                    "change_visibility_batch",
                    tuple((r.id, r.attempt, t) for r, t in checked),
                    tuple(results),
                    now,
                )
            # commit: each change in order
            for rec, (_, t) in zip(recs, checked, strict=True):
                if rec is None:
                    continue
                if t == 0:
                    self._notify(self._release(rec))
                else:
                    assert now is not None
                    self._extend(rec, t, now)
            self._check()
            return [rec is not None for rec in recs]

    def cancel(self, id: str) -> bool:
        """Cancel a delayed, visible or in-flight message: ``True``, its receipt (if any) dies, and
        capacity is freed.

        The other visible messages keep their order. For an unknown id or a finished message,
        ``False`` and the queue is unchanged. ``TypeError``/``ValueError`` for a malformed id.
        """
        id = check_id("id", id)
        if self._sink_thread is not None:
            self._refuse_reentry("cancel")
        with self.mutex:
            if self._trace is not None:
                active = id in self._visible or id in self._in_flight or id in self._delayed
                self._record("cancel", (id,), active)
            rec = self._remove(id)
            if rec is None:
                return False
            self._cancelled.add(id)
            self._notify(self.not_full)
            self._check()
            return True

    def purge(self) -> int:
        """Cancel every active message (delayed, visible and in flight) in one atomic step.

        Every live receipt dies, every timer is dropped, and every slot is freed (waking the
        blocked senders); dead letters, done and cancelled messages are untouched, and the ids
        stay reserved. Returns how many messages were purged. Works after shutdown and close.
        """
        if self._sink_thread is not None:
            self._refuse_reentry("purge")
        with self.mutex:
            if self._trace is not None:
                active = len(self._delayed) + len(self._visible) + len(self._in_flight)
                self._record("purge", (), active)
            count = self._purge()
            for _ in range(min(count, self._waiting[self.not_full])):
                self._notify(self.not_full)
            self._check()
            return count

    def receipt(self, id: str, attempt: int) -> Receipt:
        """The receipt that names delivery ``attempt`` of message ``id`` on this queue.

        This is how the job-queue API acts by ``(id, attempt)``. The receipt is live only if
        that delivery is the one in flight; attempt 0 names no delivery and is never live.
        ``TypeError``/``ValueError`` for a malformed id or an attempt that is not an int >= 0.
        """
        return Receipt(self._token, check_id("id", id), check_int("attempt", attempt, 0))

    def sweep(self) -> None:
        """Fire every timer due now: release each in-flight message whose deadline <= now, and
        append each delayed message whose ``visible_at`` <= now to the visible tail.

        In order of due time, ties in the order the timers were started, as one atomic step (if
        the clock or the trace sink raises, nothing of this sweep happens). This is what the
        sweeper thread runs; call it directly after advancing a fake clock. It also restarts a
        sweeper thread that died (see :meth:`health`).
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
        ``("send", (id, delay), True, now)`` (delay 0.0 for an immediate send),
        ``("send_batch", (ids, delays), True, now)``, ``("receive", (vt,), (id, attempt,
        deadline), now)``, ``("receive_batch", (n, vt), ((id, attempt, deadline), ...), now)``,
        ``("delete", (id, attempt), ok, now)``, ``("delete_batch", ((id, attempt), ...), (ok,
        ...), now)``, ``("retry", (id, attempt), ok, now)``, ``("change_visibility", (id,
        attempt, timeout), result, now)`` with result ``False`` (not live), the new deadline, or
        ``None`` (released), ``("change_visibility_batch", ((id, attempt, timeout), ...),
        (result, ...), now)``, ``("cancel", (id,), ok, now)``, ``("purge", (), count, now)``,
        and one ``("expire", (), id, now)`` per timer a sweep fires (a deadline or a delay: the
        message's state tells which), ``now`` being the sweep's time.
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
                delayed=len(self._delayed),
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
                delayed=tuple(r.delayed_snapshot() for r in self._delayed.values()),
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
                    self._failures = (self._failures[0], e)
            return Health(
                sweeper_running=self._sweeper is not None,
                sweeper_failures=self._failures[0],
                last_error=self._failures[1],
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
            active = len(self._delayed) + len(self._visible) + len(self._in_flight)
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
            f" max_receives={self._max_receives!r}, delay={self._delay!r}, clock={self._clock!r})"
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
        self._timers += 1
        rec.seq = self._timers
        rec.deadline = deadline
        self._in_flight[rec.id] = rec
        return rec

    def _deliver_batch(self, n: int, deadline: float | None) -> list[Record[T]]:
        """Receive_batch's step (its one linearization point): deliver the first min(n,
        visible) messages, each by ``_deliver`` with ``deadline``, in FIFO order, with the lock
        held throughout (``BatchAtomic``). Called with something visible, in the commit phase;
        the caller arms and makes the receipts, in delivery order."""
        deliver = self._deliver
        return [deliver(deadline) for _ in range(min(n, len(self._visible)))]

    def _heads(self, n: int) -> list[Record[T]]:
        """The records that ``_deliver_batch(n, ...)`` would deliver now, in delivery order,
        without delivering them: the first min(n, visible) of the visible FIFO. Read only by
        the trace of receive and receive_batch (before their commit), so that a subclass that
        delivers in another order (``impl.FifoQueue``) traces what it delivers."""
        return list(itertools.islice(self._visible.values(), n))

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

    def _to_delete_batch(self, receipts: list[Receipt]) -> list[Record[T] | None]:
        """Delete_batch's guard: for each receipt, in order, the record its delete acts on
        (``_to_delete``), or ``None``: as if the deletes before it had been applied, so a
        message already deleted by an earlier receipt of the batch gives ``None``."""
        recs: list[Record[T] | None] = []
        gone: set[str] = set()
        to_delete = self._to_delete
        for receipt in receipts:
            rec = to_delete(receipt)
            if rec is not None:
                if rec.id in gone:
                    rec = None
                else:
                    gone.add(rec.id)
            recs.append(rec)
        return recs

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
        visible FIFO (the others keep their order), out of flight (its receipt dies, its
        deadline is dropped) or out of the delayed ones (its delay is dropped); its record, or
        ``None`` (and no change) if ``id`` is not active."""
        rec = self._visible.pop(id, None)
        if rec is None:
            rec = self._in_flight.pop(id, None)
            if rec is not None:
                rec.deadline = None
            else:
                rec = self._delayed.pop(id, None)
        return rec

    def _purge(self) -> int:
        """Purge's step (commit phase): every active message (delayed, visible, in flight) is
        cancelled, every receipt dies and every timer is dropped; how many. The caller wakes
        the senders."""
        count = 0
        for group in (self._delayed, self._visible, self._in_flight):
            for rec in group.values():
                rec.deadline = None
            self._cancelled.update(group)
            count += len(group)
            group.clear()
        self._expiry.clear()
        return count

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
        is closed). Pushes the heap entry (as ``_push_timer`` does: rebuilding the heap when
        stale entries outnumber live ones, and waking the sweeper if this deadline is earlier
        than the time it sleeps until). After ``close()`` no thread is woken.
        """
        deadline = rec.deadline
        assert deadline is not None and self._in_flight.get(rec.id) is rec
        # _push_timer written out: this is on the path of every receive with a deadline and
        # every extension, and the call cost 2 % of an armed receive-extend-delete cycle.
        heapq.heappush(self._expiry, (deadline, rec.seq, rec.id, rec.attempt))
        if len(self._expiry) > 2 * (len(self._in_flight) + len(self._delayed)) + 16:
            self._compact()
        link = self._link
        if link is not None and (link.target is None or deadline < link.target):
            self._notify(self.new_deadline)

    def _arm_delay(self, rec: Record[T]) -> None:
        """Put the delayed message ``rec``'s ``visible_at`` on the timer heap, in its place in
        the one timer order (``rec.seq``), and wake the sweeper if it must re-aim.

        Called in the commit phase of a delayed send, after ``rec`` joined ``_delayed``; as for
        ``_arm``, a sweeper thread already runs unless the queue is closed.
        """
        self._push_timer((rec.visible_at, rec.seq, rec.id, 0))

    def _expire(self, now: float) -> None:
        """The sweep, one transition: every timer due at ``now`` or before, by (due time, timer
        order), is traced, then fired: a delivery's deadline by ``_expire_one``, a delayed
        message's ``visible_at`` by ``_fire_delay``.

        All due timers are collected and traced first; if the sink raises, their heap entries
        are put back and nothing fires. Stale heap entries met on the way are dropped.
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
        for entry, rec in due:
            if entry[3]:
                self._expire_one(rec, now)
            else:
                self._fire_delay(rec)

    def _expire_one(self, rec: Record[T], now: float) -> None:
        """Expiry's step for one delivery whose deadline passed (commit phase of a sweep at
        ``now``): release it (``_release``) and wake whom that enables."""
        self._notify(self._release(rec))

    def _fire_delay(self, rec: Record[T]) -> None:
        """A due delay's step (commit phase of a sweep): the delayed message ``rec`` is
        appended to the tail of the visible FIFO, its attempt unchanged, and one receiver is
        woken."""
        del self._delayed[rec.id]
        self._visible[rec.id] = rec
        self._notify(self.not_empty)

    def _next_deadline(self) -> float | None:
        """The time the sweeper sleeps until next: the earliest timer (deadline or delay),
        dropping stale entries from the top of the heap; ``None`` (none): until notified."""
        while self._expiry and self._current(self._expiry[0]) is None:
            heapq.heappop(self._expiry)
        return self._expiry[0][0] if self._expiry else None

    def _wait_for_room(
        self,
        op: Literal["send", "send_batch"],
        need: Callable[[], int],
        block: bool,
        endtime: float | None,
        wait: float | None,
    ) -> int:
        """Hook: wait, holding the mutex, until the send ``op`` may go ahead; return how many
        messages it takes room for (0: none, it was settled while it waited; for a batch, what
        ``_accepts`` granted).

        Every round (the first at once, then after each wake-up on ``not_full``): raise
        :class:`ShutDown` after shutdown; call ``need()``, which raises what ends the send (an
        id accepted meanwhile: see :meth:`_unclaimed`) and returns how many messages still need
        room (a FIFO send that became a duplicate needs none); return once they fit
        (``_has_room`` for one ``send``, ``_accepts(n)`` for a batch, which is whole or
        nothing), else raise :class:`Full` (at once without ``block``, or once ``endtime`` has
        passed) or wait for room. Every send of every queue type waits here: ``send`` calls it
        only when the queue is shut down or full, so the common path costs one test.
        """
        batch = op == "send_batch"
        while True:
            if self._shutdown:
                raise ShutDown(f"{op} on a queue that has been shut down")
            n = need()
            if not n:
                return 0
            if batch:
                k = self._accepts(n)  # how many the hook lets in: all n, or none
                if k:
                    return k
            elif self._has_room():
                return n
            if not block:
                raise Full(
                    f"the queue has no room for {n} more messages"
                    if batch
                    else "the queue is at capacity"
                )
            if endtime is not None and self._clock.now() >= endtime:
                raise Full(
                    f"no room for {n} messages within {wait} seconds"
                    if batch
                    else f"no room within {wait} seconds"
                )
            if not batch:
                self._wait(self.not_full, endtime)
                continue
            # Counted, so that _notify wakes every sender while a batch may need several slots.
            self._waiting[_BATCH_SENDERS] += 1
            try:
                self._wait(self.not_full, endtime)
            finally:
                self._waiting[_BATCH_SENDERS] -= 1

    def _unclaimed(self, op: str, named: Sequence[tuple[str, str]], n: int) -> int:
        """``n``, unless one of the ``(label, id)`` pairs was accepted while ``op`` waited:
        then :class:`DuplicateIdError` naming the first. A notify meant for a sender may have
        woken this one: it is passed on first, so no sender with a fresh id sleeps beside a
        free slot."""
        for label, id in named:
            if id in self._accepted:
                if self._has_room():
                    self._notify(self.not_full)
                raise DuplicateIdError(f"{label} {id!r} was accepted while this {op} waited")
        return n

    def _has_room(self) -> bool:
        """Whether a send may be accepted now: active (delayed + visible + in flight) <
        capacity."""
        cap = self._capacity
        return cap is None or len(self._visible) + len(self._in_flight) + len(self._delayed) < cap

    def _accepts(self, n: int) -> int:
        """How many of a send_batch's ``n`` entries may be accepted now: all ``n`` if active +
        ``n`` <= capacity, else none (0): a batch is accepted whole or not at all."""
        cap = self._capacity
        if cap is None or len(self._visible) + len(self._in_flight) + len(self._delayed) + n <= cap:
            return n
        return 0

    def _notify(self, cond: threading.Condition) -> None:
        """Wake one waiter of ``cond``, if any: every wakeup of a transition comes through here.

        While a ``send_batch`` waits on ``not_full``, wake every sender instead: one notify
        might reach the batch, which may need more than the one slot it stands for, while a
        single send that could take the slot sleeps on.
        """
        # Condition.notify costs about 0.3 µs even with no waiter (it tests that the caller
        # owns the lock by trying to take it); most transitions have no one to wake.
        if self._waiting[cond]:
            if cond is self.not_full and self._waiting[_BATCH_SENDERS]:
                cond.notify_all()
            else:
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

    def _fresh_ids(self, ids: list[str | None], taken: dict[str, int]) -> list[str]:
        # send_batch's ids: each None in ``ids`` replaced by a fresh id that is neither accepted
        # nor in ``taken`` (the batch's own ids), in order: the ids that _fresh_id called once
        # per None (skipping those in ``taken`` too) would give, made in one go.
        wanted = ids.count(None)
        if not wanted:
            return [id for id in ids if id is not None]
        counter = self._ids
        fresh = [f"msg-{i}" for i in itertools.islice(counter, wanted)]
        accepted = self._accepted
        if not accepted.isdisjoint(fresh) or not taken.keys().isdisjoint(fresh):
            # A caller chose one of them first (rare): keep the others, in counter order.
            fresh = [id for id in fresh if id not in accepted and id not in taken]
            while len(fresh) < wanted:
                id = f"msg-{next(counter)}"
                if id not in accepted and id not in taken:
                    fresh.append(id)
        if wanted == len(ids):
            return fresh
        it = iter(fresh)
        return [next(it) if id is None else id for id in ids]

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

    def _push_timer(self, entry: _Entry) -> None:
        # Push a timer (commit phase), rebuilding the heap when stale entries outnumber live
        # ones, then wake the sweeper if the timer is due before the time it sleeps until.
        # After close() no thread is woken.
        heapq.heappush(self._expiry, entry)
        if len(self._expiry) > 2 * (len(self._in_flight) + len(self._delayed)) + 16:
            self._compact()
        link = self._link
        if link is not None and (link.target is None or entry[0] < link.target):
            self._notify(self.new_deadline)

    def _add_delayed(self, rec: Record[T], visible_at: float) -> None:
        # Commit of a delayed send (of send or send_batch): rec becomes DELAYED until
        # visible_at, and its timer starts now, after every timer started before it.
        rec.visible_at = visible_at
        self._timers += 1
        rec.seq = self._timers
        self._delayed[rec.id] = rec
        self._arm_delay(rec)

    def _new_waiting(self) -> dict[object, int]:
        # Waiters per condition, and how many of the not_full ones are send_batch calls. (One
        # dict, not another attribute: a queue has at most 29 instance attributes, beyond which
        # CPython 3.11 gives up its compact shared-key instance dict and every attribute
        # access on the hot path gets slower; bench.icount measured 12 %.)
        return {self.not_empty: 0, self.not_full: 0, self.new_deadline: 0, _BATCH_SENDERS: 0}

    def _compact(self) -> None:
        # Stale entries outnumber live ones: rebuild from the in-flight and delayed records.
        # This happens at most once per (their number + 16) pushes, so its cost is O(1) per
        # push, amortized.
        self._expiry = [
            (r.deadline, r.seq, r.id, r.attempt)
            for r in self._in_flight.values()
            if r.deadline is not None
        ]
        self._expiry.extend((r.visible_at, r.seq, r.id, 0) for r in self._delayed.values())
        heapq.heapify(self._expiry)

    def _current(self, entry: _Entry) -> Record[T] | None:
        """The record that ``entry`` still stands for, or ``None`` if it is stale: for a
        deadline, the in-flight delivery it was armed for; for a delay (attempt 0), the message
        while it is still delayed (a message is delayed once, with one entry)."""
        deadline, seq, id, attempt = entry
        if not attempt:
            return self._delayed.get(id)
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
        thread = sync_of(self._clock).thread(
            _sweep_forever, (weakref.ref(self), link), f"impl.Queue-{self._token}-sweeper"
        )
        thread.start()  # may raise RuntimeError("can't start new thread"): nothing changed
        self._sweeper, self._link = thread, link

    def _sweep_round(self) -> float | None:
        """One round of the sweeper thread: expire what is due, and return the deadline to
        sleep until (``None``: until notified)."""
        self._expire(self._clock.now())
        self._check()
        return self._next_deadline()

    def _sweeper_died(self, link: _SweeperLink, error: BaseException) -> None:
        """The sweeper thread of ``link`` ends with ``error``: report it and let the next arm,
        ``sweep()`` or ``health()`` start another."""
        if self._link is link:
            self._sweeper = self._link = None
        self._failures = (self._failures[0] + 1, error)
        log.error(
            "impl.Queue %d: the sweeper thread died; expiry stalls until the next receive "
            "with a visibility timeout, change_visibility, sweep() or health()",
            self._token,
            exc_info=error,
        )

    def _reinit_after_fork(self) -> None:
        """In a child process: fresh lock and conditions (the parent's may be held by threads
        that do not exist here), no waiters, no sweeper (the next arm starts one)."""
        sync = sync_of(self._clock)
        self.mutex = sync.rlock()
        self.not_empty = sync.condition(self.mutex)
        self.not_full = sync.condition(self.mutex)
        self.new_deadline = sync.condition(self.mutex)
        self._waiting = self._new_waiting()
        self._sweeper = self._link = None
        self._sink_thread = None
        if self._expiry and not self._closed:
            # Deliveries in flight at the fork still expire in the child.
            try:
                self._start_sweeper()
            except Exception as e:  # reported by health(); the next arm tries again
                self._failures = (self._failures[0], e)

    def _check(self) -> None:
        """Cheap (O(1)) assertions of the invariants in the class docstring."""
        active = len(self._visible) + len(self._in_flight) + len(self._delayed)
        assert self._capacity is None or active <= self._capacity, "CapacityBound"
        assert len(self._accepted) == (
            active + len(self._done) + len(self._cancelled) + len(self._dead)
        ), "OneState"


def _check_batch(name: str, value: object) -> list[Any]:
    """The items of a batch argument: a sequence (not a ``str``) of 1 to ``MAX_BATCH`` items,
    copied to a list; else ``TypeError``/``ValueError`` naming ``name``."""
    if not isinstance(value, Sequence) or isinstance(value, str | bytes | bytearray):
        raise TypeError(f"{name} must be a list or tuple, got {type(value).__name__}")
    items = list(value)
    if not 1 <= len(items) <= MAX_BATCH:
        raise ValueError(f"{name} must hold 1 to {MAX_BATCH} items, got {len(items)}")
    return items
