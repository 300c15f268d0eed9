"""The threaded queue with SQS semantics: ``impl.Queue``, shaped after CPython's ``queue.Queue``.

One lock (``mutex``) guards all state; three named conditions share it. Each transition of the
contract (section 2) is one critical section that does exactly what ``spec.transitions`` does to
the pure state, then notifies every condition whose waiters it may have enabled. Time comes only
from the injected clock; expiry is applied by :meth:`Queue.sweep`, which a lazily started sweeper
thread runs whenever the earliest deadline comes due. Nothing here sleeps or polls.

As in ``queue.Queue`` (whose ``_put``/``_get``/``_qsize`` a subclass may override), each public
method does the checking, locking, waiting, tracing and self-checking, and calls small steps for
the state change; those steps are the documented seam for subclasses (``Queue``'s docstring,
"Hooks for subclasses"). The mutant catalogue (``model_tests/mutants.py``) overrides them.
"""

from __future__ import annotations

import enum
import heapq
import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable
from types import TracebackType
from typing import Final, Generic, Literal, TypeVar

from impl.clock import Clock, MonotonicClock
from impl.errors import DuplicateIdError, Empty, Full, ShutDown
from impl.message import Message, Receipt, Snapshot, SnapshotMessage, Stats
from impl.validate import (
    check_bool,
    check_id,
    check_int,
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

#: One recorded transition, ``(action, args, result, now)``: see :meth:`Queue.record_trace`.
TraceStep = tuple[str, tuple[object, ...], object, float]

#: An expiry heap entry: (deadline, receive sequence, id, attempt). Ordered by deadline, then by
#: receive order, which is exactly the order in which the contract's ``expire`` releases.
_Entry = tuple[float, int, str, int]


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
    deliveries never expire never starts one. The sweeper keeps the queue alive, so close the
    queue (or use ``with``) when done with it; ``close()`` joins the thread.

    Hooks for subclasses: each public method checks its arguments, takes ``mutex``, waits if it
    must, calls the steps below for the state change, records the trace and runs ``_check``.
    The steps are the seam to override (as ``queue.Queue``'s ``_put`` and ``_get`` are); each is
    called with ``mutex`` held, must not release it (except to wait on a condition through
    ``_wait``), and is documented with its contract. A step that makes something available
    wakes its waiters itself, through ``_notify``, except ``_release``, whose callers do.

    - ``_wait_for_visible(block, wait)``: receive's wait, until something is visible.
    - ``_deliver(vt)``: receive's step: the head becomes in flight, attempt + 1, deadline.
    - ``_receipt(rec)``: make the receipt of ``rec``'s delivery, which becomes the live one.
    - ``_live(receipt)``: the in-flight record ``receipt`` names, if it is live.
    - ``_delete(receipt)``, ``_retry(receipt)``: the steps of delete and retry.
    - ``_extend(rec, t)``: change_visibility's step for ``t > 0``: deadline now + ``t``, armed.
    - ``_remove(id)``: cancel's step: take an active message out of visible or in flight.
    - ``_release(rec)``: dead-letter (if ``_dies(rec)``) or append to the visible tail.
    - ``_dies(rec)``: the dead-letter policy, asked at each release.
    - ``_arm(rec)``: put a deadline where the sweeper looks, and wake or start the sweeper.
    - ``_expire(now)``: the sweep, a fold of ``_expire_one(rec, now)`` over what is due.
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
        if clock is None:
            clock = MonotonicClock()
        elif not isinstance(clock, Clock):
            raise TypeError(f"clock must be a Clock, got {type(clock).__name__}")
        self._clock: Clock = clock
        with _tokens_lock:
            self._token = next(_tokens)

        self.mutex = threading.Lock()
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
        self._sweeper: threading.Thread | None = None
        # The deadline the sweeper is waiting for (None: it waits for a notify only).
        self._sweeper_target: float | None = None
        # Where record_trace sends each transition; None (the default): nowhere, at no cost.
        self._trace: Callable[[TraceStep], None] | None = None

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

        ``id`` must be new to this queue; ``None`` asks for a fresh generated id. When the queue
        is full, wait for room (``block=True``, at most ``timeout`` seconds if given) or raise
        :class:`Full` at once (``block=False``). Either the message is accepted, or an exception
        leaves the queue unchanged and the id unreserved: ``TypeError``/``ValueError`` for bad
        arguments and :class:`DuplicateIdError` (a ``ValueError``) for an id already accepted,
        all before any waiting; :class:`Full` when no room came; :class:`ShutDown` after
        ``shutdown()``. An id that another sender takes while this one waits raises
        :class:`DuplicateIdError` when this one wakes.
        """
        if id is not None:
            check_id("id", id)
        check_bool("block", block)
        wait = check_optional_time("timeout", timeout)
        with self.mutex:
            if id is not None and id in self._accepted:
                raise DuplicateIdError(f"id {id!r} was already accepted by this queue")
            endtime = None if wait is None else self._clock.now() + wait
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
            self._accepted.add(id)
            self._visible[id] = Record(id, body)
            if self._trace is not None:
                self._record("send", (id,), True)
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
        exception the queue is unchanged.
        """
        check_bool("block", block)
        wait = check_optional_time("timeout", timeout)
        if visibility_timeout is _QUEUE_DEFAULT:
            vt = self._visibility_timeout
        else:
            vt = check_optional_time("visibility_timeout", visibility_timeout)
        with self.mutex:
            if not self._visible:
                self._wait_for_visible(block, wait)
            rec = self._deliver(vt)
            receipt = rec.receipt = self._receipt(rec)
            if rec.deadline is not None:
                self._arm(rec)
            if self._trace is not None:
                self._record("receive", (vt,), (rec.id, rec.attempt, rec.deadline))
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
        with self.mutex:
            rec = self._delete(receipt)
            if self._trace is not None:
                self._record("delete", (receipt.id, receipt.attempt), rec is not None)
            if rec is None:
                return False
            self._check()
            return True

    def retry(self, receipt: Receipt) -> bool:
        """Give a live delivery back at once: *release* it (see :meth:`change_visibility`).

        ``True`` if ``receipt`` was live; otherwise ``False`` and the queue is unchanged.
        """
        if not isinstance(receipt, Receipt):
            raise _not_a_receipt(receipt)
        with self.mutex:
            rec = self._retry(receipt)
            if self._trace is not None:
                self._record("retry", (receipt.id, receipt.attempt), rec is not None)
            if rec is None:
                return False
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
        with self.mutex:
            rec = self._live(receipt)
            if rec is None:
                if self._trace is not None:
                    self._record("change_visibility", (receipt.id, receipt.attempt, t), False)
                return False
            if t == 0:
                self._notify(self._release(rec))
            else:
                self._extend(rec, t)
            if self._trace is not None:
                self._record("change_visibility", (rec.id, rec.attempt, t), rec.deadline)
            self._check()
            return True

    def cancel(self, id: str) -> bool:
        """Cancel a visible or in-flight message: ``True``, its receipt dies, capacity is freed.

        The other visible messages keep their order. For an unknown id or a finished message,
        ``False`` and the queue is unchanged. ``TypeError``/``ValueError`` for a malformed id.
        """
        check_id("id", id)
        with self.mutex:
            rec = self._remove(id)
            if self._trace is not None:
                self._record("cancel", (id,), rec is not None)
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

        In order of deadline, ties by receive order, as one atomic step. This is what the
        sweeper thread runs; call it directly after advancing a fake clock.
        """
        with self.mutex:
            self._expire(self._clock.now())
            self._check()

    def record_trace(self, sink: Callable[[TraceStep], None] | None) -> None:
        """From now on pass every transition to ``sink``, for trace validation; ``None`` stops.

        Each call that returns (not one that raises) is passed as ``(action, args, result, now)``:
        ``("send", (id,), True, now)``, ``("receive", (vt,), (id, attempt, deadline), now)``,
        ``("delete", (id, attempt), ok, now)``, ``("retry", (id, attempt), ok, now)``,
        ``("change_visibility", (id, attempt, timeout), result, now)`` with result ``False`` (not
        live), the new deadline, or ``None`` (released), ``("cancel", (id,), ok, now)``, and one
        ``("expire", (), id, now)`` per message a sweep releases, ``now`` being the sweep's time.
        ``sink`` is called inside the transition's critical section, so the order of the calls
        is the order in which the transitions took effect (their linearization order); it must
        be quick and must not call the queue. Off by default, and then each transition pays one
        ``is None`` test. ``tla/trace.py`` checks a recorded trace against ``tla/Queue.tla``.
        """
        with self.mutex:
            self._trace = sink

    # -- observation --------------------------------------------------------------------------

    def dead_letters(self) -> list[Message[T]]:
        """The dead-lettered messages, in the order they died, each with its last attempt."""
        with self.mutex:
            return [Message(r.id, r.body, r.attempt, r.receipt) for r in self._dead]

    def stats(self) -> Stats:
        """How many messages are visible, in flight, done, cancelled and dead, atomically."""
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
        with self.mutex:
            return Snapshot(
                visible=tuple(r.snapshot() for r in self._visible.values()),
                in_flight=tuple(r.snapshot() for r in self._in_flight.values()),
                dead=tuple(r.snapshot() for r in self._dead),
                done=frozenset(self._done),
                cancelled=frozenset(self._cancelled),
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
        self.shutdown()
        with self.mutex:
            self._closed = True
            self.new_deadline.notify_all()
            sweeper = self._sweeper
        if sweeper is not None:
            sweeper.join()

    def __enter__(self) -> Queue[T]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

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
        endtime = None if wait is None else self._clock.now() + wait
        while not self._visible:
            if self._shutdown:
                raise ShutDown("receive on a shut-down queue with nothing visible")
            if not block:
                raise Empty("no message is visible")
            if endtime is not None and self._clock.now() >= endtime:
                raise Empty(f"no message became visible within {wait} seconds")
            self._wait(self.not_empty, endtime)

    def _deliver(self, vt: float | None) -> Record[T]:
        """Receive's step (its linearization point): deliver the head of the visible FIFO.

        Called with something visible. The head leaves ``_visible`` and becomes in flight with
        ``attempt + 1``, the next receive sequence number, and deadline now + ``vt`` (``None``:
        never expires); returns its record. The caller arms the deadline (``_arm``) and makes
        the receipt (``_receipt``).
        """
        _, rec = self._visible.popitem(last=False)
        rec.attempt += 1
        self._receives += 1
        rec.seq = self._receives
        rec.deadline = None if vt is None else self._clock.now() + vt
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
        ``None``: the guard of delete, retry and change_visibility."""
        rec = self._in_flight.get(receipt.id)
        if rec is None:
            return None
        live = rec.receipt
        if live is receipt or (live.attempt == receipt.attempt and live.queue == receipt.queue):
            return rec
        return None

    def _delete(self, receipt: Receipt) -> Record[T] | None:
        """Delete's step: if ``receipt`` is live, its message is done (one slot freed, one
        sender woken) and its record returned; otherwise ``None`` and nothing changes."""
        rec = self._live(receipt)
        if rec is not None:
            del self._in_flight[rec.id]
            rec.deadline = None
            self._done.add(rec.id)
            self._notify(self.not_full)
        return rec

    def _retry(self, receipt: Receipt) -> Record[T] | None:
        """Retry's step: if ``receipt`` is live, release its message (``_release``), wake whom
        that enables, and return its record; otherwise ``None`` and nothing changes."""
        rec = self._live(receipt)
        if rec is not None:
            self._notify(self._release(rec))
        return rec

    def _extend(self, rec: Record[T], t: float) -> None:
        """Change_visibility's step for ``t > 0``: the live delivery ``rec``'s deadline becomes
        now + ``t`` (from now, not added to the old one), armed for the sweeper."""
        rec.deadline = self._clock.now() + t
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
        """Record ``rec``'s deadline for expiry, and make sure a sweeper will act on it.

        Called after ``rec``'s deadline is set (not ``None``) while it is in flight. Pushes the
        heap entry (rebuilding the heap when stale entries outnumber live ones), then starts the
        sweeper thread if there is none, or wakes it if this deadline is earlier than the one
        it sleeps until. After ``close()`` no thread is started or woken.
        """
        assert rec.deadline is not None and self._in_flight.get(rec.id) is rec
        heapq.heappush(self._expiry, (rec.deadline, rec.seq, rec.id, rec.attempt))
        if len(self._expiry) > 2 * len(self._in_flight) + 16:
            self._compact()
        if self._closed:
            return  # no thread outlives close(): from now on only sweep() expires
        if self._sweeper is None:
            self._sweeper = threading.Thread(
                target=self._run_sweeper, name=f"impl.Queue-{self._token}-sweeper", daemon=True
            )
            self._sweeper.start()
        elif self._sweeper_target is None or rec.deadline < self._sweeper_target:
            self._notify(self.new_deadline)

    def _expire(self, now: float) -> None:
        """The sweep: ``_expire_one`` for every in-flight delivery with deadline <= now, by
        (deadline, receive order), dropping the stale heap entries met on the way."""
        while self._expiry and self._expiry[0][0] <= now:
            rec = self._current(heapq.heappop(self._expiry))
            if rec is not None:
                self._expire_one(rec, now)

    def _expire_one(self, rec: Record[T], now: float) -> None:
        """Expiry's step for one delivery whose deadline passed: release it (``_release``) and
        wake whom that enables, then trace it at the sweep's time ``now``."""
        self._notify(self._release(rec))
        if self._trace is not None:
            self._record("expire", (), rec.id, now)

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
        """Wait on ``cond`` through the clock, counted in ``_waiting`` while waiting."""
        self._waiting[cond] += 1
        try:
            self._clock.wait(cond, deadline)
        finally:
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
        """Pass one transition to the trace sink (called only while recording)."""
        assert self._trace is not None
        self._trace((action, args, result, self._clock.now() if now is None else now))

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

    def _run_sweeper(self) -> None:
        """The sweeper thread: expire what is due, then wait for the next deadline or a notify."""
        with self.mutex:
            while not self._closed:
                self._expire(self._clock.now())
                self._check()
                self._sweeper_target = self._next_deadline()
                self._wait(self.new_deadline, self._sweeper_target)
            self._sweeper_target = None

    def _check(self) -> None:
        """Cheap (O(1)) assertions of the invariants in the class docstring."""
        active = len(self._visible) + len(self._in_flight)
        assert self._capacity is None or active <= self._capacity, "CapacityBound"
        assert len(self._accepted) == (
            active + len(self._done) + len(self._cancelled) + len(self._dead)
        ), "OneState"
