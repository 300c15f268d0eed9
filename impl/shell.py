"""The threaded shell around a queue core: the lock, the conditions, the waits, the trace.

:class:`BaseQueue` is what ``impl.Queue`` and ``impl.FifoQueue`` share: everything but their
sends. Each public method checks its arguments (once, before the lock), takes ``mutex``, waits
while its step is not enabled (``while not core.deliverable(): wait``), does all that can fail
(the clock, the trace sink, starting the sweeper), then calls the core's step, which cannot fail
and returns what it enabled (:data:`impl.core.Wake`); the shell wakes that many waiters and
runs the core's O(1) self-check. The core (``impl/core.py``, ``impl/fifo_core.py``) holds the
state and the contract's steps; this module holds no queue semantics of its own.

Named conditions on ``mutex``, each with who notifies it:

- ``not_empty``: receivers wait for a deliverable message. Notified once per message a step
  made deliverable (send, a fired delay, every release to visible, for FIFO every unlock of a
  group with a visible message); notified all at shutdown.
- ``not_full``: senders wait for room. Notified once per slot freed (delete, cancel, purge,
  dead-lettering: receiving and releasing to visible free nothing), and all of them while a
  ``send_batch`` waits (a single notify could reach the batch, which may need more than one
  slot, while a single send that could use it sleeps on); notified all at shutdown.
- ``new_deadline``: the sweeper waits for the earliest timer. Notified when a timer earlier
  than the one it waits for is armed (:meth:`BaseQueue._aim`), and at shutdown and close.

A woken waiter re-checks its predicate first, so it takes what it was woken for, or passes the
notify on when it leaves without it (a timeout, an exception, an id taken meanwhile): so one
notify per unit made available is enough, and no waiter sleeps beside what it waits for.

Seams for the mutant catalogue (``model_tests/mutants.py``), besides every core step:
``_notify(cond)`` (every wakeup), ``_wait(cond, deadline)`` (every wait),
``_wait_for_room(...)`` (the wait of every send), ``_aim(due)`` (waking the sweeper for a new
timer), ``_sleep_until()`` (the time the sweeper sleeps until), and for a system of queues
``_release_locks()`` (the two locks of a releasing operation, in creation order),
``_sweep_queues()`` (the queues whose locks a sweep holds, in creation order),
``_after_moves()`` (the target's half of a releasing step's moves: its wakes and its sweeper)
and ``_still_current(due)`` (which of a sweep's due timers still fire once an earlier one
made its message terminal).

Failure model (docs/failure-model.md): every transition does all that can raise before its
commit, so it takes full effect or none; the sweeper (``impl/sweeper.py``) survives a failed
round; fork handlers (``impl/forking.py``) give a child process fresh locks.

Dead-letter queues that are queues, retention and redrive (docs/contract.md
section 7): a queue may name a ``dead_letter`` target (a queue of the same kind, created
before it, unbounded, on the same clock, with ``max_receives`` set here). Such queues form a
system sharing one id registry (``impl/system.py``). Every releasing operation of a queue with
a target (retry, change_visibility(0), change_visibility_batch, sweep and the sweeper's round)
holds the target's lock and then its own (creation order) and reads the clock first, so a
release that dies moves the message into the target in the same step (``Core.release`` ->
``Core.move_in``); it then wakes a sender here and the receivers the move enabled there, and
aims the target's sweeper at its retention timers. A redrive (``start_redrive``,
``impl/redrive.py``) holds the dead-letter queue's lock and its destinations' in creation
order. ``retention`` adds a retention timer per message (``impl/timers.py``).

Choices where the note is silent: a queue with a ``dead_letter`` and no ``clock`` takes its
target's clock; ``name`` follows SQS's queue names (1 to 80 letters, digits, ``-``, ``_``, a
FIFO queue's may end in ``.fifo``) and is unique within a system; a move into a target that has
been shut down or closed still happens (a release cannot fail); a dead-letter move is not a
trace step of its own: the release's step in the source's trace stands for it (the source's
dead-letter configuration says it moves), and the target's sink records nothing for it (record
both queues into one list to see the system's order: each step is recorded under every lock it
holds). A retention timer that fires is an ``age_out`` step, a redrive move a ``redrive`` step
(see :meth:`BaseQueue.record_trace`). The system's id registry needs nothing after a fork:
its lock is a leaf, taken only inside a queue's lock for one check-and-add, and the fork
handlers hold every queue's lock, so no thread holds it when the process forks.
"""

from __future__ import annotations

import enum
import re
import threading
import warnings
import weakref
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, ClassVar, Final, Generic, Literal, Self

from impl import forking
from impl.clock import Clock, MonotonicClock, check_clock
from impl.core import MAX_BATCH, TICK_RECORD, Core, Record, T, Wake
from impl.errors import DuplicateIdError, Empty, Full, RedriveRunning, ShutDown
from impl.fifo_core import FifoCore
from impl.message import Health, Message, Receipt, Snapshot, Stats
from impl.redrive import RETRY_AFTER, RedriveStatus, RedriveTask
from impl.sweeper import SweeperLink, log, sweep_forever
from impl.sync import sync_of
from impl.system import System, hold, in_lock_order
from impl.timers import Timer
from impl.validate import (
    INF,
    check_bool,
    check_callable,
    check_id,
    check_int,
    check_later,
    check_optional_int,
    check_optional_time,
    check_time,
    is_number,
    to_finite,
)

#: A queue's name: SQS's form (1 to 80 letters, digits, ``-``, ``_``; ``.fifo`` may end it).
NAME_PATTERN: Final = re.compile(r"(?=.{1,80}$)[A-Za-z0-9_-]+(\.fifo)?")

__all__ = ["QUEUE_DEFAULT", "BaseQueue", "Default", "TraceStep", "check_batch"]


def _deref(ref: object) -> Any:
    """The object a weak reference of the core's (a handle) points to, or ``None``."""
    return ref() if isinstance(ref, weakref.ref) else None


class Default(enum.Enum):
    """The type of the "use the queue's default" sentinel, so ``None`` can mean "never expire"."""

    QUEUE_DEFAULT = enum.auto()


#: "The queue's own visibility timeout": the default of ``receive``'s ``visibility_timeout``.
QUEUE_DEFAULT: Final = Default.QUEUE_DEFAULT

#: One recorded transition, ``(action, args, result, now)``: see :meth:`BaseQueue.record_trace`.
TraceStep = tuple[str, tuple[object, ...], object, float]

#: The key of ``BaseQueue._waiting`` that counts the send_batch calls waiting on ``not_full``.
BATCH_SENDERS: Final = "send_batch"


def check_batch(name: str, value: object) -> list[Any]:
    """The items of a batch argument: a sequence (not a ``str``) of 1 to ``MAX_BATCH`` items,
    copied to a list; else ``TypeError``/``ValueError`` naming ``name``."""
    if not isinstance(value, Sequence) or isinstance(value, str | bytes | bytearray):
        raise TypeError(f"{name} must be a list or tuple, got {type(value).__name__}")
    items = list(value)
    if not 1 <= len(items) <= MAX_BATCH:
        raise ValueError(f"{name} must hold 1 to {MAX_BATCH} items, got {len(items)}")
    return items


def _not_a_receipt(value: object) -> TypeError:
    # Raised by the receipt operations; the isinstance test is inline, so the good path pays
    # no call for it.
    return TypeError(f"receipt must be a Receipt, got {type(value).__name__}")


#: How many ids a redrive's ``ids`` may give that are already taken before the move fails.
_ID_DRAWS: Final = 100


class BaseQueue(Generic[T]):
    """What :class:`impl.Queue` and :class:`impl.FifoQueue` share: every operation but the
    sends, on a core of :attr:`_core_class`. Not built directly (it has no ``send``).

    Threads: the first timer (a finite deadline or a delay) starts one daemon sweeper thread;
    a queue with neither never starts one. The sweeper holds only a weak reference to the
    queue: a queue nobody references is collected and its sweeper ends (with a
    ``ResourceWarning`` if it still held active messages). Close the queue (or use ``with``)
    when done with it; ``close()`` joins the thread. The lock, the three conditions and the
    sweeper thread come from ``clock.sync`` when the clock has that attribute (an
    :class:`impl.sync.Sync`; else the threading module's), and every wait goes through
    ``clock.wait``: that is the seam through which ``model_tests/schedule`` runs this very code
    under a controlled scheduler. It is read when the queue is built, when a sweeper starts and
    after a fork, never per operation.

    Failures: every public method either takes full effect (and its notifies happen) or raises
    and leaves the queue exactly as it was, whatever raises inside it: the clock, the trace
    sink, the start of the sweeper thread. A failed sweep of the sweeper thread is logged
    (logger ``impl.queue``), counted by :meth:`health` and retried after a backoff on the
    queue's clock; a sweeper whose clock wait fails dies, is reported, and the next arm,
    ``sweep()`` or ``health()`` starts another. A caller interrupted while it waits (an
    exception from a signal handler) passes on the notify it may have taken, and holds the lock
    again when the exception leaves the wait (``mutex`` is an ``RLock``).
    """

    #: The core this shell runs (a mutant's shell names a broken one).
    _core_class: ClassVar[type[Core[Any]]] = Core

    def __init__(
        self,
        capacity: int | None = None,
        visibility_timeout: float | None = 30.0,
        max_receives: int | None = None,
        delay: float = 0.0,
        clock: Clock | None = None,
        *,
        dead_letter: BaseQueue[T] | None = None,
        retention: float | None = None,
        name: str | None = None,
    ) -> None:
        """Make an empty queue, or raise ``TypeError``/``ValueError`` naming the bad argument.

        ``capacity``: bound on active (delayed + visible + in-flight) messages; ``None`` is
        unbounded and 0 accepts nothing. ``visibility_timeout``: seconds a delivery stays
        hidden; ``None`` means deliveries never expire. ``max_receives``: a release after this
        many deliveries dead-letters the message; ``None`` never does. ``delay``: seconds a sent
        message stays delayed unless its send says otherwise (0: visible at once). ``clock``:
        defaults to the real clock (with a ``dead_letter``: to the target's clock).

        Contract section 7 (keywords): ``dead_letter``, the queue a message that dies here moves to
        (same kind, created before this one, unbounded, same clock, not closed; needs
        ``max_receives``); ``retention``, seconds (finite, > 0) a message may stay in this
        queue before it ages out (``None``: forever); ``name``, this queue's name (default
        ``queue-<token>``), unique within its system. A bad configuration raises naming the
        argument and changes nothing, the target included.
        """
        capacity = check_optional_int("capacity", capacity, 0)
        self._visibility_timeout = check_optional_time("visibility_timeout", visibility_timeout)
        max_receives = check_optional_int("max_receives", max_receives, 1)
        self._delay = check_time("delay", delay)
        if clock is None and dead_letter is not None and isinstance(dead_letter, BaseQueue):
            clock = dead_letter.clock
        self._clock: Clock = MonotonicClock() if clock is None else check_clock("clock", clock)
        kept = self._check_retention(retention)
        self._check_dead_letter(dead_letter, max_receives)
        if name is not None:
            self._check_name(name, dead_letter)
        self._token = forking.new_token()
        self._core: Core[T] = self._core_class(self._token, capacity, max_receives)
        self._name = f"queue-{self._token}" if name is None else name
        self._core.retention = kept
        self._core.handle = weakref.ref(self)
        #: The dead-letter target, and the system of queues this one is in (``None``: alone).
        self._dlq: BaseQueue[T] | None = dead_letter
        self._system: System | None = None
        #: Whether a send reads the clock for the message's enqueue time (the core's
        #: ``accept_at`` steps): with a retention or a target (a move keeps that time).
        self._stamped = kept is not None or dead_letter is not None
        #: Redrive tasks started on this queue, oldest first.
        self._tasks: list[RedriveTask[T]] = []

        # An RLock, not a Lock: Condition.wait re-takes an RLock in a way that a signal handler
        # cannot interrupt, and an RLock can never be released by a thread that does not hold
        # it. With a Lock, a KeyboardInterrupt while re-taking it leaves the waiter outside the
        # lock, and its ``with`` then releases a lock that another thread holds.
        self._make_sync()
        self._shutdown = False
        self._closed = False
        # The sweeper thread, while one is alive (started by the first arm), and what it shares.
        self._sweeper: threading.Thread | None = None
        self._link: SweeperLink | None = None
        # How many sweeps failed or sweeper threads died, and the last error (of a sweep, a
        # sweeper or a failed restart): what health() reports.
        self._failures: tuple[int, BaseException | None] = (0, None)
        # Where record_trace sends each transition; None (the default): nowhere, at no cost.
        self._trace: Callable[[TraceStep], None] | None = None
        # The thread now inside the trace sink, so a call back into the queue from the sink is
        # refused (with an RLock it would otherwise re-enter a half-done transition).
        self._sink_thread: int | None = None
        if dead_letter is not None:
            self._join(dead_letter)
        forking.register(self)

    # -- configuration checks and the system (contract section 7) ----------------------------------

    @staticmethod
    def _check_retention(retention: object) -> float | None:
        if retention is None:
            return None
        if not is_number(retention):
            raise TypeError(
                f"retention must be a number of seconds or None, got {type(retention).__name__}"
            )
        kept = to_finite("retention", retention)  # type: ignore[arg-type]
        if not kept > 0:
            raise ValueError(f"retention must be > 0 seconds (or None: forever), got {retention!r}")
        return kept

    def _check_dead_letter(self, target: object, max_receives: int | None) -> None:
        """Contract section 7.1: a target that cannot work is a ``ValueError`` naming
        ``dead_letter`` (``TypeError`` for one that is not a queue), before anything changes."""
        if target is None:
            return
        if not isinstance(target, BaseQueue):
            raise TypeError(f"dead_letter must be an impl queue, got {type(target).__name__}")
        fifo = issubclass(self._core_class, FifoCore)
        if isinstance(target._core, FifoCore) != fifo:
            kinds = ("a FIFO queue", "a standard queue")
            raise ValueError(
                f"dead_letter must be a queue of the same kind: this is {kinds[not fifo]}, "
                f"the target is {kinds[fifo]}"
            )
        if max_receives is None:
            raise ValueError(
                "dead_letter needs max_receives: a message moves to its target only after "
                "max_receives deliveries"
            )
        if target.capacity is not None:
            raise ValueError(
                f"dead_letter must be unbounded (capacity=None), got a target of capacity "
                f"{target.capacity}: a move commits a release, which cannot wait for room"
            )
        if target.clock is not self._clock:
            raise ValueError(
                "dead_letter must use the same clock object as this queue (its moves and "
                "retention read one time)"
            )
        if target._closed:
            raise ValueError(f"dead_letter {target.name!r} is closed")

    def _check_name(self, name: object, target: BaseQueue[T] | None) -> None:
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        if NAME_PATTERN.fullmatch(name) is None:
            raise ValueError(
                "name must be 1 to 80 letters, digits, '-' or '_' (a FIFO queue's may end in "
                f"'.fifo'), got {name!r}"
            )
        if target is not None:
            system = target._system
            taken = system.names if system is not None else {target.name}
            if name in taken:
                raise ValueError(f"name {name!r} is taken by another queue of this system")

    def _join(self, target: BaseQueue[T]) -> None:
        """Link this new queue to ``target``: join its system (made from the target if it is in
        none: its accepted ids and counter carry over), under the target's lock."""
        with target.mutex:
            system = target._system
            if system is None:
                tcore = target._core
                system = System(tcore.accepted, tcore._ids)
                system.names.add(target.name)
                target._system = system
            system.names.add(self._name)
            self._system = system
            self._core._ids = system.counter
            self._core.target = target._core

    def _make_sync(self) -> None:
        # The lock, the three conditions (see the module docstring for who notifies each) and
        # the count of waiters per condition, so a transition with nobody to wake skips the
        # notify (see _notify). From the threading seam: once, not per operation.
        sync = sync_of(self._clock)
        self.mutex = sync.rlock()
        self.not_empty = sync.condition(self.mutex)
        self.not_full = sync.condition(self.mutex)
        self.new_deadline = sync.condition(self.mutex)
        self._waiting = self._new_waiting()

    def _new_waiting(self) -> dict[object, int]:
        # Waiters per condition, and how many of the not_full ones are send_batch calls.
        return {self.not_empty: 0, self.not_full: 0, self.new_deadline: 0, BATCH_SENDERS: 0}

    # -- configuration ------------------------------------------------------------------------

    @property
    def clock(self) -> Clock:
        """The clock this queue reads time from and waits on."""
        return self._clock

    @property
    def capacity(self) -> int | None:
        return self._core.capacity

    @property
    def visibility_timeout(self) -> float | None:
        return self._visibility_timeout

    @property
    def max_receives(self) -> int | None:
        return self._core.max_receives

    @property
    def delay(self) -> float:
        """The delay of a send that gives none, in seconds."""
        return self._delay

    @property
    def name(self) -> str:
        """This queue's name (unique within its system)."""
        return self._name

    @property
    def dead_letter(self) -> BaseQueue[T] | None:
        """The queue a message that dies here moves to, or ``None`` (it stays here, DEAD)."""
        return self._dlq

    @property
    def retention(self) -> float | None:
        """Seconds a message may stay in this queue before it ages out (``None``: forever)."""
        return self._core.retention

    # -- receiving ----------------------------------------------------------------------------

    def receive(
        self,
        *,
        block: bool = True,
        timeout: float | None = None,
        visibility_timeout: float | Literal[Default.QUEUE_DEFAULT] | None = QUEUE_DEFAULT,
    ) -> Message[T]:
        """Deliver the next deliverable message, hiding it for a visibility timeout.

        In one critical section the message becomes in flight with ``attempt + 1``, its
        deadline is stamped (now + ``visibility_timeout``, the queue's default unless given;
        ``None``: never expires) and armed for the sweeper, and a fresh receipt is made. When
        nothing is deliverable, wait (``block=True``, at most ``timeout`` seconds if given) or
        raise :class:`Empty` at once (``block=False``); :class:`Empty` also when the timeout
        runs out. After ``shutdown()`` what is still deliverable is delivered, then
        :class:`ShutDown` is raised. Bad arguments raise ``TypeError``/``ValueError`` before any
        waiting. On any exception (including one from the clock, the trace sink or the start of
        the sweeper thread) the queue is unchanged.
        """
        # The common arguments pass two identity tests; the checks name the bad ones.
        if block is not True and block is not False:
            check_bool("block", block)
        # None and a float in range (the common values) pass two tests and no call.
        if timeout is not None and not (type(timeout) is float and 0.0 <= timeout < INF):
            timeout = check_time("timeout", timeout)
        wait = timeout
        if visibility_timeout is QUEUE_DEFAULT:
            vt = self._visibility_timeout
        else:
            vt = check_optional_time("visibility_timeout", visibility_timeout)
        if self._sink_thread is not None:
            self._refuse_reentry("receive")
        with self.mutex:
            core = self._core
            if not core.deliverable():
                self._wait_deliverable(block, wait)
            try:
                if vt is None:
                    deadline = None
                else:
                    now = self._clock.now()
                    deadline = now + vt  # check_later written out: one call less per receive
                    if deadline == INF:
                        check_later("visibility_timeout", now, vt)  # raises, naming the argument
                    if self._sweeper is None:
                        self._start_sweeper()
                if self._trace is not None:
                    head = core.heads(1)[0]
                    self._record("receive", (vt,), (head.id, head.attempt + 1, deadline))
            except BaseException:
                # A notify may have woken us for the message we leave deliverable: pass it on,
                # so no other receiver sleeps beside it (see _wait).
                self._notify(self.not_empty)
                raise
            # commit
            rec = core.deliver(deadline)
            if deadline is not None:
                self._aim(deadline)
            core.check()
            return rec.message()

    def receive_batch(
        self,
        max_messages: int = MAX_BATCH,
        *,
        block: bool = True,
        timeout: float | None = None,
        visibility_timeout: float | Literal[Default.QUEUE_DEFAULT] | None = QUEUE_DEFAULT,
    ) -> list[Message[T]]:
        """Deliver up to ``max_messages`` (1 to 10) deliverable messages in one atomic step.

        Each is delivered as by :meth:`receive`, all with the same deadline (now +
        ``visibility_timeout``), in the core's delivery order (a standard queue: FIFO order;
        a FIFO queue: the first unlocked group's visible messages in send order, then the next
        group's). Waits, like :meth:`receive`, until at least one message is deliverable
        (``block``, ``timeout``, :class:`Empty`, :class:`ShutDown` as there); never waits for
        more than one. ``max_messages`` outside 1..10 is a ``ValueError`` (not an int:
        ``TypeError``), before any waiting.
        """
        n = check_int("max_messages", max_messages, 1)
        if n > MAX_BATCH:
            raise ValueError(f"max_messages must be <= {MAX_BATCH}, got {n!r}")
        # The common arguments pass two identity tests; the checks name the bad ones.
        if block is not True and block is not False:
            check_bool("block", block)
        # None and a float in range (the common values) pass two tests and no call.
        if timeout is not None and not (type(timeout) is float and 0.0 <= timeout < INF):
            timeout = check_time("timeout", timeout)
        wait = timeout
        if visibility_timeout is QUEUE_DEFAULT:
            vt = self._visibility_timeout
        else:
            vt = check_optional_time("visibility_timeout", visibility_timeout)
        if self._sink_thread is not None:
            self._refuse_reentry("receive_batch")
        with self.mutex:
            core = self._core
            if not core.deliverable():
                self._wait_deliverable(block, wait)
            try:
                now = None
                deadline = None
                if vt is not None:
                    now = self._clock.now()
                    deadline = check_later("visibility_timeout", now, vt)
                    if self._sweeper is None:
                        self._start_sweeper()
                if self._trace is not None:
                    result = tuple((r.id, r.attempt + 1, deadline) for r in core.heads(n))
                    self._record("receive_batch", (n, vt), result, now)
            except BaseException:
                self._notify(self.not_empty)  # pass on a notify we may have taken (see _wait)
                raise
            # commit
            recs = core.deliver_batch(n, deadline)
            if deadline is not None:
                for _ in recs:  # one aim per deadline armed, as that many receives would
                    self._aim(deadline)
            core.check()
            return [rec.message() for rec in recs]

    # -- acting on a delivery -----------------------------------------------------------------

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
            core = self._core
            rec = core.to_delete(receipt)
            if self._trace is not None:
                self._record("delete", (receipt.id, receipt.attempt), rec is not None)
            if rec is None:
                return False
            self._wake(core.delete(rec))
            core.check()
            return True

    def delete_batch(self, receipts: Sequence[Receipt]) -> list[bool]:
        """Delete with 1 to 10 receipts in one atomic step: each as :meth:`delete`, in order.

        A receipt repeated in the batch gives ``False`` the second time (its message is done by
        then). ``TypeError``/``ValueError`` naming the argument or the item (``receipts[1]``)
        for a batch that is not a sequence of 1 to 10 :class:`Receipt`.
        """
        batch = check_batch("receipts", receipts)
        for i, r in enumerate(batch):
            if not isinstance(r, Receipt):
                raise TypeError(f"receipts[{i}] must be a Receipt, got {type(r).__name__}")
        if self._sink_thread is not None:
            self._refuse_reentry("delete_batch")
        with self.mutex:
            core = self._core
            recs = core.to_delete_batch(batch)
            results = [rec is not None for rec in recs]
            if self._trace is not None:
                self._record(
                    "delete_batch", tuple((r.id, r.attempt) for r in batch), tuple(results)
                )
            # commit
            for rec in recs:
                if rec is not None:
                    self._wake(core.delete(rec))
            core.check()
            return results

    def retry(self, receipt: Receipt) -> bool:
        """Give a live delivery back at once: *release* it (see :meth:`change_visibility`).

        ``True`` if ``receipt`` was live; otherwise ``False`` and the queue is unchanged.
        """
        if not isinstance(receipt, Receipt):
            raise _not_a_receipt(receipt)
        if self._sink_thread is not None:
            self._refuse_reentry("retry")
        with self.mutex if self._dlq is None else self._release_locks():
            core = self._core
            rec = core.live(receipt)
            now = None
            if self._dlq is not None and rec is not None:
                now = self._prepare_release(core.dies(rec))
            if self._trace is not None:
                self._record("retry", (receipt.id, receipt.attempt), rec is not None, now)
            if rec is None:
                return False
            self._wake(core.retry(rec))
            if self._dlq is not None:
                self._after_moves()
            core.check()
            return True

    def change_visibility(self, receipt: Receipt, timeout: float) -> bool:
        """Set a live delivery's deadline to now + ``timeout`` (from now, not added to the old).

        ``timeout == 0`` *releases* the message at once: it is dead-lettered if ``max_receives``
        is set and reached, else it is visible again (a standard queue: at the tail; a FIFO
        queue: in its place in send order), keeping its attempt. ``True`` if ``receipt`` was
        live; otherwise ``False`` and the queue is unchanged. ``timeout`` must be a finite
        number >= 0 (``TypeError``/``ValueError`` otherwise).
        """
        if not isinstance(receipt, Receipt):
            raise _not_a_receipt(receipt)
        t = check_time("timeout", timeout)
        if self._sink_thread is not None:
            self._refuse_reentry("change_visibility")
        with self.mutex if self._dlq is None else self._release_locks():
            core = self._core
            rec = core.live(receipt)
            if rec is None:
                if self._trace is not None:
                    self._record("change_visibility", (receipt.id, receipt.attempt, t), False)
                return False
            if t == 0:
                now = None
                if self._dlq is not None:
                    now = self._prepare_release(core.dies(rec))
                if self._trace is not None:
                    self._record("change_visibility", (rec.id, rec.attempt, t), None, now)
                self._wake(core.release(rec))
                if self._dlq is not None:
                    self._after_moves()
            else:
                now = self._clock.now()
                deadline = check_later("timeout", now, t)
                if self._sweeper is None:
                    self._start_sweeper()
                if self._trace is not None:
                    self._record("change_visibility", (rec.id, rec.attempt, t), deadline, now)
                self._aim(core.extend(rec, t, now))
            core.check()
            return True

    def change_visibility_batch(self, changes: Sequence[tuple[Receipt, float]]) -> list[bool]:
        """Apply 1 to 10 ``(receipt, timeout)`` changes in one atomic step: each as
        :meth:`change_visibility`, in order, all from the same now.

        A change whose receipt an earlier change of the batch made stale (by releasing its
        message with timeout 0) gives ``False``. ``TypeError``/``ValueError`` naming the
        argument or the item (``changes[1].timeout``) for a batch that is not a sequence of 1 to
        10 pairs of a :class:`Receipt` and a finite timeout >= 0.
        """
        batch = check_batch("changes", changes)
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
        with self.mutex if self._dlq is None else self._release_locks():
            core = self._core
            # The guards, as if the changes before each had been applied: only a release
            # (timeout 0) ends a receipt's life within the batch.
            recs: list[Record[T] | None] = []
            released: set[str] = set()
            for receipt, t in checked:
                rec = core.live(receipt)
                if rec is not None and rec.id in released:
                    rec = None
                elif rec is not None and t == 0:
                    released.add(rec.id)
                recs.append(rec)
            extends = any(rec is not None and t for rec, (_, t) in zip(recs, checked, strict=True))
            now = self._clock.now() if extends else None
            if self._dlq is not None and released:
                # A release may move a message into the target: it needs the time (and maybe
                # the target's sweeper); read once, as the batch's one now.
                dying = any(
                    rec is not None and not t and core.dies(rec)
                    for rec, (_, t) in zip(recs, checked, strict=True)
                )
                now = self._prepare_release(dying)
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
                    self._wake(core.release(rec))
                else:
                    assert now is not None
                    self._aim(core.extend(rec, t, now))
            if self._dlq is not None:
                self._after_moves()
            core.check()
            return [rec is not None for rec in recs]

    # -- acting on messages -------------------------------------------------------------------

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
            core = self._core
            if self._trace is not None:
                self._record("cancel", (id,), core.is_active(id))
            wake = core.cancel(id)
            if wake is None:
                return False
            self._wake(wake)
            core.check()
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
            core = self._core
            if self._trace is not None:
                self._record("purge", (), core.active())
            count = core.purge()
            self._wake((0, count))
            core.check()
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
        make each delayed message whose ``visible_at`` <= now visible.

        In order of due time, ties in the order the timers were started, as one atomic step (if
        the clock or the trace sink raises, nothing of this sweep happens). This is what the
        sweeper thread runs; call it directly after advancing a fake clock. It also restarts a
        sweeper thread that died (see :meth:`health`).
        """
        if self._sink_thread is not None:
            self._refuse_reentry("sweep")
        if not self._alone():
            held = self._hold_for_sweep()
            try:
                self._sweep_now()
            finally:
                for q in reversed(held):
                    q.mutex.release()
            return
        with self.mutex:
            now = self._clock.now()
            if self._sweeper is None and len(self._core.timers) and not self._closed:
                self._start_sweeper()  # before the sweep commits: a failed start changes nothing
            self._expire(now)
            self._core.check()

    def _sweep_now(self) -> None:
        # sweep()'s body, with every lock it needs held (_hold_for_sweep).
        now = self._clock.now()
        if self._sweeper is None and len(self._core.timers) and not self._closed:
            self._start_sweeper()
        self._expire(now)
        self._core.check()

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
        message's state tells which), ``now`` being the sweep's time. (A FIFO queue's sends
        carry more: see ``impl.FifoQueue.send``.)

        Contract section 7 adds two actions and no argument to the old ones. A retention timer a
        sweep
        fires is ``("age_out", (), id, now)`` (in the one timer order among the ``expire``
        steps). A redrive move is ``("redrive", (dlq_name, id), new_id, now)`` in the
        dead-letter queue's trace (one step per move, from ``start_redrive`` with ``rate=None``
        or from the sweep that fires a tick, in order among that sweep's steps); skipped ids
        and a move a full destination stops are not steps. A dead-letter move is not a step of
        its own: the source's releasing step (``retry``, ``change_visibility`` with 0, an entry
        of ``change_visibility_batch``, an ``expire``) whose release dies stands for it, since
        the source's ``dead_letter`` and ``max_receives`` say it moves; the target's and the
        destination's sinks record nothing for a message moved in. So a system's run is
        validated from one list the queues' sinks all append to, each step tagged with its
        queue's ``name`` (each step is recorded under every lock it holds, so that list is in
        linearization order), plus the system's configuration. When a sweep holds a redrive
        tick, a sink that raises vetoes that step and the steps after it, not the ones before.
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
        """The dead-lettered messages, in the order they died, each with its last attempt (and,
        on a FIFO queue, its group)."""
        if self._sink_thread is not None:
            self._refuse_reentry("dead_letters")
        with self.mutex:
            return [r.message() for r in self._core.dead]

    def stats(self) -> Stats:
        """How many messages are visible, in flight, done, cancelled and dead, atomically."""
        if self._sink_thread is not None:
            self._refuse_reentry("stats")
        with self.mutex:
            core = self._core
            return Stats(
                visible=len(core.visible),
                in_flight=len(core.in_flight),
                done=len(core.done),
                cancelled=len(core.cancelled),
                dead=len(core.dead),
                delayed=len(core.delayed),
                aged_out=len(core.aged),
                moved=len(core.moved),
            )

    def snapshot(self) -> Snapshot[T]:
        """The whole observable state, taken atomically (see :class:`Snapshot`; a FIFO queue's
        has each message's ``group`` and ``sent`` and the queue's dedup records)."""
        if self._sink_thread is not None:
            self._refuse_reentry("snapshot")
        with self.mutex:
            core = self._core
            return Snapshot(
                visible=tuple(r.snapshot() for r in core.visible.values()),
                in_flight=tuple(r.snapshot() for r in core.in_flight.values()),
                dead=tuple(r.snapshot() for r in core.dead),
                done=frozenset(core.done),
                cancelled=frozenset(core.cancelled),
                delayed=tuple(r.delayed_snapshot() for r in core.delayed.values()),
                dedup=core.dedup_records(),
                aged_out=frozenset(core.aged),
                moved=frozenset(core.moved),
            )

    def health(self) -> Health:
        """Whether expiry is working, atomically (see :class:`Health`).

        Failed sweeps and sweeper deaths are counted here (and were logged at ERROR on the
        ``impl.queue`` logger). If timers are armed and no sweeper is alive, this starts one
        first, so asking is also a way to resume expiry; if that start fails, its exception is
        reported as ``last_error`` rather than raised.
        """
        if self._sink_thread is not None:
            self._refuse_reentry("health")
        with self.mutex:
            armed = self._core.next_due() is not None
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
        """Refuse new sends; let receives drain what is deliverable; wake every blocked caller.

        After this, ``send`` raises :class:`ShutDown`, ``receive`` delivers what is still
        deliverable and then raises :class:`ShutDown`, and blocked callers wake at once to do
        so. ``delete``, ``retry``, ``change_visibility`` and ``cancel`` keep working, and expiry
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

        After this no thread of the queue runs; timers still armed are applied only by an
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

    def __enter__(self) -> Self:
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
        core = getattr(self, "_core", None)
        if not getattr(self, "_closed", True) and core is not None:
            active = core.active()
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
            f"Queue(capacity={self.capacity!r}, visibility_timeout={self._visibility_timeout!r},"
            f" max_receives={self.max_receives!r}, delay={self._delay!r}, clock={self._clock!r})"
        )

    # -- shell seams, each called with mutex held ---------------------------------------------

    def _wake(self, wake: Wake) -> None:
        """Wake whom a core step enabled: ``(receivers, senders)``, that many of each at most
        (fewer if fewer wait: ``_notify`` is called only for a condition with waiters)."""
        receivers, senders = wake
        waiting = self._waiting
        if receivers and waiting[self.not_empty]:
            for _ in range(min(receivers, waiting[self.not_empty])):
                self._notify(self.not_empty)
        if senders and waiting[self.not_full]:
            for _ in range(1 if waiting[BATCH_SENDERS] else min(senders, waiting[self.not_full])):
                self._notify(self.not_full)

    def _notify(self, cond: threading.Condition) -> None:
        """Wake one waiter of ``cond``, if any: every wakeup of a transition comes through here.

        While a ``send_batch`` waits on ``not_full``, wake every sender instead: one notify
        might reach the batch, which may need more than the one slot it stands for, while a
        single send that could take the slot sleeps on.
        """
        # Condition.notify costs about 0.3 µs even with no waiter (it tests that the caller
        # owns the lock by trying to take it); most transitions have no one to wake.
        if self._waiting[cond]:
            if cond is self.not_full and self._waiting[BATCH_SENDERS]:
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

    def _wait_deliverable(self, block: bool, wait: float | None) -> None:
        """Receive's wait: return once the core has a deliverable message, or raise
        :class:`ShutDown` (after ``shutdown()``), :class:`Empty` (at once if not ``block``, or
        once ``wait`` seconds have passed); waits on ``not_empty``."""
        core = self._core
        endtime = None if wait is None else check_later("timeout", self._clock.now(), wait)
        while not core.deliverable():
            word = core.ready_word
            if self._shutdown:
                raise ShutDown(f"receive on a shut-down queue with nothing {word}")
            if not block:
                raise Empty(f"no message is {word}")
            if endtime is not None and self._clock.now() >= endtime:
                raise Empty(f"no message became {word} within {wait} seconds")
            self._wait(self.not_empty, endtime)

    def _wait_for_room(
        self,
        op: Literal["send", "send_batch"],
        need: Callable[[], int],
        block: bool,
        endtime: float | None,
        wait: float | None,
    ) -> int:
        """Wait until the send ``op`` may go ahead; return how many messages it takes room for
        (0: none, it was settled while it waited; for a batch, what ``core.accepts`` granted).

        Every round (the first at once, then after each wake-up on ``not_full``): raise
        :class:`ShutDown` after shutdown; call ``need()``, which raises what ends the send (an
        id accepted meanwhile: see :meth:`_unclaimed`) and returns how many messages still need
        room (a FIFO send that became a duplicate needs none); return once they fit
        (``core.has_room`` for one ``send``, ``core.accepts(n)`` for a batch, which is whole or
        nothing), else raise :class:`Full` (at once without ``block``, or once ``endtime`` has
        passed) or wait for room. Every send of every queue type waits here.
        """
        batch = op == "send_batch"
        core = self._core
        while True:
            if self._shutdown:
                raise ShutDown(f"{op} on a queue that has been shut down")
            n = need()
            if not n:
                return 0
            if batch:
                k = core.accepts(n)  # how many the core lets in: all n, or none
                if k:
                    return k
            elif core.has_room():
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
            self._waiting[BATCH_SENDERS] += 1
            try:
                self._wait(self.not_full, endtime)
            finally:
                self._waiting[BATCH_SENDERS] -= 1

    def _unclaimed(self, op: str, named: Sequence[tuple[str, str]], n: int) -> int:
        """``n``, unless one of the ``(label, id)`` pairs was accepted while ``op`` waited:
        then :class:`DuplicateIdError` naming the first. A notify meant for a sender may have
        woken this one: it is passed on first, so no sender with a fresh id sleeps beside a
        free slot."""
        accepted = self._core.accepted
        system = self._system
        for label, id in named:
            if id in accepted or (system is not None and system.taken(id)):
                if self._core.has_room():
                    self._notify(self.not_full)
                raise DuplicateIdError(f"{label} {id!r} was accepted while this {op} waited")
        return n

    def _aim(self, due: float) -> None:
        """A timer due at ``due`` was just armed: wake the sweeper if it sleeps until later
        (after ``close()`` there is no sweeper to wake)."""
        link = self._link
        if link is not None and (link.target is None or due < link.target):
            self._notify(self.new_deadline)

    def _sleep_until(self) -> float | None:
        """The time the sweeper sleeps until after a round: the earliest timer's due time
        (``None``, no timer: until notified)."""
        return self._core.next_due()

    def _expire(self, now: float) -> None:
        """The sweep, one transition: every timer due at ``now`` or before, in the one timer
        order, is traced, then fired by the core (``Core.fire``), waking whom each enabled.
        If the sink raises, the timers are put back and nothing fires."""
        core = self._core
        due = core.due(now)
        if not due:
            return
        if self._dlq is None and not core.ticks and core.retention is None:
            # A queue with no target, no redrive and no retention: the sweep as it always was.
            if self._trace is not None:
                try:
                    for _, rec in due:
                        self._record("expire", (), rec.id, now)
                except BaseException:
                    core.undo_due(due)
                    raise
            for timer, rec in due:
                self._wake(core.fire(timer, rec))
            return
        self._expire_system(due, now)

    def _expire_system(self, due: list[tuple[Timer, Record[T]]], now: float) -> None:
        """:meth:`_expire` for a queue with a target, a retention or a redrive tick: every lock
        a move needs is held. A retention timer is traced as ``("age_out", (), id, now)``. A
        tick (``Core.due`` ends a batch at it) moves what it is due to move, re-arms its next
        tick, and the timers due by ``now`` are asked for again, so the order stays one."""
        core = self._core
        while due:
            tick: Timer | None = None
            if due[-1][1] is TICK_RECORD:
                tick = due.pop()[0]
            taken = due
            due = self._still_current(due)
            if taken:
                try:
                    if self._dlq is not None:
                        dying = any(t.attempt > 0 and core.dies(r) for t, r in due)
                        self._prepare_release(dying, now)
                    if self._trace is not None:
                        for timer, rec in due:
                            action = "age_out" if timer.attempt < 0 else "expire"
                            self._record(action, (), rec.id, now)
                except BaseException:
                    core.undo_due(taken)
                    if tick is not None:
                        core.timers.push(tick)
                    raise
                for timer, rec in due:
                    self._wake(core.fire(timer, rec))
                if self._dlq is not None:
                    self._after_moves()
            if tick is None:
                return
            self._fire_tick(tick, now)
            due = core.due(now)

    # -- dead-letter moves, redrive (contract section 7) -------------------------------------------

    def source_of(self, id: str) -> BaseQueue[T] | None:
        """The queue the message ``id`` was dead-lettered from into this one, or ``None`` (it was
        sent here, redriven here, is unknown, or its source has since been collected)."""
        id = check_id("id", id)
        if self._sink_thread is not None:
            self._refuse_reentry("source_of")
        with self.mutex:
            ref = self._core.sources.get(id)
        source: BaseQueue[T] | None = _deref(ref)
        return source

    def moved_to(self, id: str) -> tuple[BaseQueue[T], str] | None:
        """Where a redrive moved the message ``id`` of this dead-letter queue: ``(destination,
        new_id)``, or ``None`` (not moved, or the destination has since been collected)."""
        id = check_id("id", id)
        if self._sink_thread is not None:
            self._refuse_reentry("moved_to")
        with self.mutex:
            hit = self._core.moved.get(id)
        if hit is None:
            return None
        dest = _deref(hit[0])
        return None if dest is None else (dest, hit[1])

    def aged_out(self) -> list[str]:
        """The ids of the messages whose retention ran out in this queue, in that order."""
        if self._sink_thread is not None:
            self._refuse_reentry("aged_out")
        with self.mutex:
            return list(self._core.aged)

    def redrive_tasks(self) -> list[RedriveTask[T]]:
        """The redrive tasks started on this queue, most recent first."""
        if self._sink_thread is not None:
            self._refuse_reentry("redrive_tasks")
        with self.mutex:
            return self._tasks[::-1]

    def start_redrive(
        self,
        destination: BaseQueue[T] | None = None,
        *,
        rate: float | None = None,
        ids: Callable[[], str] | None = None,
    ) -> RedriveTask[T]:
        """Start moving this dead-letter queue's visible messages out (``impl/redrive.py``):
        to each message's source (``destination=None``) or to ``destination`` (a queue of the
        same kind, on the same clock, not this one), all at once (``rate=None``) or ``rate``
        moves per second of the clock (finite, > 0), fired by this queue's sweep. Each moved
        message gets a new id (contract section 7): from ``ids`` (a callable returning a fresh
        string, e.g. a UUID, called with the locks held; an id already taken in the
        destination's system is drawn again), or the destination's own counter (``msg-N``).

        ``TypeError``/``ValueError`` naming the argument for a bad one, and
        :class:`impl.errors.RedriveRunning` while another task of this queue runs; nothing
        changes then. Trace: one ``("redrive", (this queue's name, id), new_id, now)`` step per
        move, in this queue's trace."""
        if destination is not None:
            if not isinstance(destination, BaseQueue):
                raise TypeError(
                    f"destination must be an impl queue or None, got {type(destination).__name__}"
                )
            if destination is self:
                raise ValueError("destination must not be the dead-letter queue itself")
            if isinstance(destination._core, FifoCore) != isinstance(self._core, FifoCore):
                raise ValueError("destination must be a queue of the same kind (FIFO or standard)")
            if destination.clock is not self._clock:
                raise ValueError("destination must use the same clock object as this queue")
        if ids is not None and not callable(ids):
            raise TypeError(f"ids must be a callable or None, got {type(ids).__name__}")
        r: float | None = None
        if rate is not None:
            if not is_number(rate):
                raise TypeError(f"rate must be a number or None, got {type(rate).__name__}")
            r = to_finite("rate", rate)
            if not r > 0:
                raise ValueError(f"rate must be > 0 messages per second, got {rate!r}")
        if self._sink_thread is not None:
            self._refuse_reentry("start_redrive")
        while True:
            with self.mutex:
                dests = self._destinations(destination, list(self._core.visible))
            queues = in_lock_order([self, *dests])
            with hold(queues):
                scope = list(self._core.visible)
                dests = self._destinations(destination, scope)
                if not {id(q) for q in dests} <= {id(q) for q in queues}:
                    continue  # a message came in from another source meanwhile: lock it too
                return self._start_task(destination, r, scope, dests, ids)

    def _destinations(self, destination: BaseQueue[T] | None, ids: list[str]) -> list[Any]:
        """The queues a redrive of ``ids`` may move into (with the lock held)."""
        if destination is not None:
            return [destination]
        sources = self._core.sources
        found = {}
        for id in ids:
            q = _deref(sources.get(id))
            if q is not None:
                found[q._token] = q
        return list(found.values())

    def _start_task(
        self,
        destination: BaseQueue[T] | None,
        rate: float | None,
        scope: list[str],
        dests: list[BaseQueue[T]],
        ids: Callable[[], str] | None = None,
    ) -> RedriveTask[T]:
        # start_redrive's body, with this queue's lock and its destinations' held.
        running = self._running()
        if running is not None:
            raise RedriveRunning(
                f"redrive task {running.name} is still running on queue {self._name!r}: "
                "cancel it or let it complete first"
            )
        now = self._clock.now()
        if self._sweeper is None and not self._closed:
            self._start_sweeper()  # before the task exists: a failed start changes nothing
        task = RedriveTask(self, destination, rate, now, scope, ids)
        task._queues = dests
        self._tasks.append(task)
        core = self._core
        if rate is not None:
            core.arm_tick(task.name, now)  # the move k = 0, due at once: the next sweep's
            self._aim(now)
            return task
        try:
            blocked = self._redrive_moves(task, now, None)
        except BaseException:
            self._schedule_retry(task, now)
            raise
        if blocked:
            self._schedule_retry(task, now)
        core.check()
        return task

    def _still_current(self, due: list[tuple[Timer, Record[T]]]) -> list[tuple[Timer, Record[T]]]:
        """The due timers that will still be current when their turn comes in this sweep: a
        message may have two (its retention timer and a deadline or delay); once one makes it
        terminal (a retention timer; a deadline whose release dies), its later ones are stale
        and neither fire nor are traced."""
        gone: set[str] = set()
        out = []
        dies = self._core.dies
        for timer, rec in due:
            if rec.id in gone:
                continue
            out.append((timer, rec))
            if timer.attempt < 0 or (timer.attempt > 0 and dies(rec)):
                gone.add(rec.id)
        return out

    def _schedule_retry(self, task: RedriveTask[T], now: float) -> None:
        # A rate=None task that could not move everything: try again RETRY_AFTER from now.
        if task._scope and task._status is RedriveStatus.RUNNING:
            self._core.arm_tick(task.name, now + RETRY_AFTER)
            self._aim(now + RETRY_AFTER)

    def _running(self) -> RedriveTask[T] | None:
        task = self._tasks[-1] if self._tasks else None
        return task if task is not None and task._status is RedriveStatus.RUNNING else None

    def _fire_tick(self, tick: Timer, now: float) -> None:
        """A due redrive tick (every lock of its task held): its moves, then its next tick."""
        task = self._running()
        core = self._core
        assert task is not None and task.name == tick.id
        core.drop_tick(task.name)
        try:
            if task._rate is None:
                blocked = self._redrive_moves(task, now, None)
            else:
                blocked = self._redrive_moves(task, now, 1)
        except BaseException:
            core.ticks[task.name] = tick.seq  # not fired: put back, for the next sweep
            core.timers.push(tick)
            raise
        if task._status is not RedriveStatus.RUNNING:
            return
        if task._rate is None:
            if blocked:
                self._schedule_retry(task, now)
            return
        task.ticks += 1
        due = task._started_at + task.ticks / task._rate
        core.arm_tick(task.name, due)
        self._aim(due)

    def _redrive_moves(self, task: RedriveTask[T], now: float, limit: int | None) -> bool:
        """Move up to ``limit`` (``None``: all) of ``task``'s scope, skipping what is no longer
        visible or has nowhere to go; each move one step. ``True`` if a full destination
        stopped it. Completes the task when its scope is exhausted."""
        core = self._core
        scope = task._scope
        moved = 0
        blocked = False
        while scope and (limit is None or moved < limit):
            id = scope[0]
            rec = core.visible.get(id)
            dest = task._destination
            if rec is not None and dest is None:
                dest = _deref(core.sources.get(id))
            if rec is None or dest is None:
                scope.popleft()
                task._skipped += 1
                continue
            dcore = dest._core
            if not dcore.has_room():
                blocked = True
                break
            # prepare: everything that can fail
            new_id = dest._fresh_moved_id(task.ids)
            try:
                if dcore.retention is not None and dest._sweeper is None and not dest._closed:
                    dest._start_sweeper()
                if self._trace is not None:
                    self._record("redrive", (self._name, id), new_id, now)
            except BaseException:
                if dest._system is not None:
                    dest._system.unreserve([new_id])
                raise
            # commit: one step across the two queues
            scope.popleft()
            self._wake(core.redrive_out(rec, weakref.ref(dest), new_id))
            dest._wake(dcore.accept_moved(new_id, rec.body, getattr(rec, "group", None), now))
            if dcore.retention is not None:
                due = dcore.next_due()
                if due is not None:
                    dest._aim(due)
            task._moved += 1
            moved += 1
            dcore.check()
        if not scope:
            task._status = RedriveStatus.COMPLETED
            core.drop_tick(task.name)
        return blocked

    def _fresh_moved_id(self, ids: Callable[[], str] | None = None) -> str:
        """A fresh id for a message redriven into this queue, reserved in its system: drawn
        from ``ids`` until one is new, else from the system's registry or this queue's own
        counter. A ``TypeError``/``ValueError`` if ``ids`` gives no string, or only taken ids:
        raised in the move's prepare phase (nothing moved), the task retries as after any
        failed move."""
        if ids is None:
            if self._system is not None:
                return self._system.fresh()
            return self._core.fresh_id()
        for _ in range(_ID_DRAWS):
            id = ids()
            if not isinstance(id, str) or not id:
                raise TypeError(f"ids must return a non-empty string, got {id!r}")
            if self._system is not None:
                try:
                    return self._system.reserve([id], ["id"])[0]
                except DuplicateIdError:
                    continue
            if not self._taken(id):
                return id
        raise ValueError(f"ids gave only ids already taken ({_ID_DRAWS} draws)")

    def _alone(self) -> bool:
        """Whether a sweep of this queue holds only its own lock: no target, no redrive tick."""
        return self._dlq is None and not self._core.ticks

    def _sweep_queues(self) -> list[BaseQueue[Any]]:
        """The queues whose locks a sweep of this queue holds, in lock order: this one, its
        target, and every queue its running redrive task may move into."""
        queues: list[BaseQueue[Any]] = [self]
        if self._dlq is not None:
            queues.append(self._dlq)
        if self._core.ticks:
            task = self._running()
            if task is not None:
                queues.extend(task._queues)
        return in_lock_order(queues)

    def _hold_for_sweep(self) -> list[BaseQueue[Any]]:
        """Take every lock a sweep needs (:meth:`_sweep_queues`, in lock order) and return those
        queues; if the set changed while they were taken, let go and take the new set."""
        while True:
            queues = self._sweep_queues()
            taken: list[BaseQueue[Any]] = []
            try:
                for q in queues:
                    q.mutex.acquire()
                    taken.append(q)
            except BaseException:
                for q in reversed(taken):
                    q.mutex.release()
                raise
            if self._sweep_queues() == queues:
                return queues
            for q in reversed(taken):
                q.mutex.release()

    def _sweep_round_locked(self) -> float | None:
        """The sweeper's round for a queue that is not alone (called with its own lock held
        once): let go of it, take every lock the sweep needs in lock order, run the round, let
        go of the others and keep its own: the sweeper then waits under its own lock alone,
        with the next due time read under it (no lost arm)."""
        mutex = self.mutex
        mutex.release()
        try:
            held = self._hold_for_sweep()
        except BaseException:
            mutex.acquire()
            raise
        try:
            return self._sweep_round()
        finally:
            for q in reversed(held):
                if q is not self:
                    q.mutex.release()

    def _release_locks(self) -> AbstractContextManager[None]:
        """What a releasing operation of a queue with a target holds: the target's lock, then
        its own (creation order: the target is older)."""
        assert self._dlq is not None and self._dlq._token < self._token
        return hold((self._dlq, self))

    def _prepare_release(self, dying: bool, now: float | None = None) -> float:
        """Before a releasing step of a queue with a target commits: the time (a move needs
        it), and the target's sweeper if a message may move into a target with a retention.
        May raise: then nothing has changed."""
        target = self._dlq
        assert target is not None
        if now is None:
            now = self._clock.now()
        if (
            dying
            and target._core.retention is not None
            and target._sweeper is None
            and not target._closed
        ):
            target._start_sweeper()
        self._core.now = now
        return now

    def _after_moves(self) -> None:
        """After a releasing step of a queue with a target: wake the receivers its moves
        enabled in the target, and aim the target's sweeper at the retention timers started."""
        target = self._dlq
        assert target is not None
        core = self._core
        n = core.moved_receivers
        if n:
            core.moved_receivers = 0
            target._wake((n, 0))
        tcore = target._core
        if tcore.retention is not None:
            due = tcore.next_due()
            if due is not None:
                target._aim(due)
        tcore.check()

    def _aim_retention(self) -> None:
        """After a step that started retention timers here: aim the sweeper at the earliest."""
        if self._core.retention is not None:
            due = self._core.next_due()
            if due is not None:
                self._aim(due)

    def _taken(self, id: str) -> bool:
        """Whether ``id`` was accepted here or, in a system, by any of its queues."""
        return id in self._core.accepted or (self._system is not None and self._system.taken(id))

    # -- internals ----------------------------------------------------------------------------

    def _check(self) -> None:
        """Cheap (O(1)) assertions of the invariants (``Core.check``)."""
        self._core.check()

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

    def _start_sweeper(self) -> None:
        """Start the sweeper thread (none is alive and the queue is not closed), or raise and
        change nothing: called before a transition commits, so a failed start vetoes it."""
        if self._closed:
            return  # no thread outlives close(): from now on only sweep() expires
        link = SweeperLink(self.mutex, self.new_deadline, self._clock, self._waiting)
        thread = sync_of(self._clock).thread(
            sweep_forever, (weakref.ref(self), link), f"impl.Queue-{self._token}-sweeper"
        )
        thread.start()  # may raise RuntimeError("can't start new thread"): nothing changed
        self._sweeper, self._link = thread, link

    def _sweep_round(self) -> float | None:
        """One round of the sweeper thread: expire what is due, and return the time to sleep
        until (``None``: until notified)."""
        self._expire(self._clock.now())
        self._core.check()
        return self._sleep_until()

    def _sweep_failed(self, error: Exception, retry_at: float) -> None:
        """A round of the sweeper thread raised ``error`` (and changed nothing): report it; the
        sweeper tries again at ``retry_at`` on the queue's clock, or when a timer is armed
        earlier."""
        self._failures = (self._failures[0] + 1, error)
        log.error(
            "impl.Queue %d: a sweep of the sweeper thread failed; it retries at %r on the "
            "queue's clock, or sooner if an earlier timer is armed",
            self._token,
            retry_at,
            exc_info=error,
        )

    def _sweeper_died(self, link: SweeperLink, error: BaseException) -> None:
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
        self._make_sync()
        self._sweeper = self._link = None
        self._sink_thread = None
        if len(self._core.timers) and not self._closed:
            # Deliveries in flight at the fork still expire in the child.
            try:
                self._start_sweeper()
            except Exception as e:  # reported by health(); the next arm tries again
                self._failures = (self._failures[0], e)
