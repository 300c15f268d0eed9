"""The threaded driver: ``impl.Queue`` and ``impl.FifoQueue`` drive a queue machine from threads.

The queue's meaning is its machine's (``impl/machine.py``, ``impl/fifo_machine.py``); this
module is the I/O around it, and nothing else: the lock, the conditions, the waits, the clock,
the sweeper thread, the trace sink. Every operation is the one loop

    check the arguments (before the lock);
    with the lock: outcome = step(clock.now())
    while the outcome is Blocked: wait on its condition (or raise), then step again;
    apply the outcome's effects: wake receivers and senders, aim the sweeper, act on the other
    queues of the system, run the machine's self-check; return the outcome's result.

as CPython's ``queue.Queue`` is its ``_put``/``_get`` under ``with self.not_full``, and Trio's
``send`` is ``send_nowait`` plus a wait. A step that raises has changed nothing (the machine
prepares before it commits, and asks this driver's two veto points, ``before_step`` and
``before_timer``, before its commit).

Named conditions on ``mutex`` (:class:`Conditions`), each with who notifies it:

- ``not_empty``: receivers wait for a deliverable message. Notified once per message a step
  made deliverable (``Outcome.receivers``: a send, a fired delay, a release to visible, a FIFO
  group unlocked, a move in); all of them at shutdown.
- ``not_full``: senders wait for room. Notified once per slot a step freed
  (``Outcome.senders``: delete, cancel, purge, dead-lettering, ageing out, a redrive out), and
  all of them while a ``send_batch`` waits (a single notify could reach the batch, which may
  need more than one slot, while a single send that could use it sleeps on); all at shutdown.
- ``new_deadline``: the sweeper waits for the earliest timer. Notified when a step arms a timer
  earlier than the one it waits for (``Outcome.due``), and at shutdown and close.

A woken waiter steps again first, so it takes what it was woken for, or passes the notify on
when it leaves without it (a timeout, an exception): one notify per unit made available is
enough, and no waiter sleeps beside what it waits for.

Threads: one lock per queue; a step across two queues of a system (a dead-letter move, a
redrive) holds both, in creation order (contract section 7.8; ``Machine.release_queues``,
``Machine.sweep_queues``). The sweeper thread (``impl/sweeper.py``) is started before the first
step that arms a timer commits (the ``before_timer`` veto point), so a failed start vetoes it.
The fork handlers (``impl/forking.py``) give a child process fresh locks.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any, ClassVar, Generic, Literal, Self

from impl import forking
from impl.clock import Clock, MonotonicClock, check_clock
from impl.driver import (
    BATCH_SENDERS,
    QUEUE_DEFAULT,
    Default,
    Wakeups,
    check_batch,
    check_changes,
    check_destination,
    check_name,
    check_rate,
    check_receipts,
    check_retention,
    check_target,
    driver_of,
    not_a_receipt,
    step_of,
    weakly,
)
from impl.errors import Empty, Full, ShutDown
from impl.fast_machine import FastMachine
from impl.machine import MAX_BATCH, Machine, T
from impl.message import Health, Message, Receipt, Snapshot, Stats
from impl.outcome import NOTHING, SHUT, Blocked, Effect, Outcome, TraceStep
from impl.redrive import RedriveTask
from impl.sweeper import SweeperLink, log, sweep_forever
from impl.sync import sync_of
from impl.system import System
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
)

__all__ = ["QUEUE_DEFAULT", "BaseQueue", "Conditions", "Default", "TraceStep", "check_batch"]


class Conditions(Wakeups):
    """A queue's lock and its three named conditions (see the module docstring), and how
    many threads wait on each: a step with nobody to wake skips the notify (which costs about
    0.3 µs even with no waiter). Each method is called with ``mutex`` held.

    Built from the clock's threading seam (``impl/sync.py``), once per queue and after a fork,
    so a test can run this very code under a controlled scheduler; every wait goes through
    ``clock.wait``. The mutex is an ``RLock``: ``Condition.wait`` re-takes it in a way a signal
    handler cannot interrupt, and it can never be released by a thread that does not hold it."""

    def __init__(self, clock: Clock) -> None:
        sync = sync_of(clock)
        self.clock = clock
        self.mutex = sync.rlock()
        self.not_empty = sync.condition(self.mutex)
        self.not_full = sync.condition(self.mutex)
        self.new_deadline = sync.condition(self.mutex)
        self.waiting = {
            self.not_empty: 0,
            self.not_full: 0,
            self.new_deadline: 0,
            BATCH_SENDERS: 0,
        }

    def notify(self, cond: threading.Condition) -> None:
        """Wake one waiter of ``cond``, if any: every wakeup comes through here. While a
        ``send_batch`` waits on ``not_full``, wake every sender instead (see the module
        docstring)."""
        if self.waiting[cond]:
            if cond is self.not_full and self.waiting[BATCH_SENDERS]:
                cond.notify_all()
            else:
                cond.notify()

    def wait(self, cond: threading.Condition, deadline: float | None) -> None:
        """Wait on ``cond`` through the clock, counted while waiting. A waiter that leaves by
        an exception (a signal handler's ``KeyboardInterrupt``, a failing clock) may have taken
        a notify meant for someone: it passes one on before the exception propagates."""
        self.waiting[cond] += 1
        try:
            self.clock.wait(cond, deadline)
        except BaseException:
            self.waiting[cond] -= 1
            self.notify(cond)
            raise
        self.waiting[cond] -= 1

    def wake_all(self) -> None:
        """Shutdown: every blocked caller wakes (and then raises ``ShutDown``)."""
        self.not_empty.notify_all()
        self.not_full.notify_all()
        self.new_deadline.notify_all()


class BaseQueue(Generic[T]):
    """What :class:`impl.Queue` and :class:`impl.FifoQueue` share: every operation but the
    sends, driving a machine of :attr:`machine_class`. Not built directly (it has no ``send``).

    Threads: the first step that arms a timer (a finite deadline, a delay, a retention) starts
    one daemon sweeper thread; a queue that arms none never starts one. The sweeper holds only
    weak references to the queue: a queue nobody references is collected and its sweeper ends
    (with a ``ResourceWarning`` if it still held active messages). Close the queue (or use
    ``with``) when done with it; ``close()`` joins the thread.

    Failures: every public method either takes full effect (and its notifies happen) or raises
    and leaves the queue exactly as it was, whatever raises inside it: the clock, the trace
    sink, the start of the sweeper thread. A failed round of the sweeper is logged (logger
    ``impl.queue``), counted by :meth:`health` and retried after a backoff on the clock; a
    sweeper whose clock wait fails dies, is reported, and the next step that arms a timer,
    ``sweep()`` or ``health()`` starts another.
    """

    #: The machine this driver runs (a mutant names a broken one).
    machine_class: ClassVar[type[Machine[Any]]] = Machine
    #: Its conditions (a mutant of the waits names broken ones).
    conditions_class: ClassVar[type[Conditions]] = Conditions

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

        Contract section 7 (keywords): ``dead_letter``, the queue a message that dies here moves
        to (same kind, created before this one, unbounded, same clock, not closed; needs
        ``max_receives``); ``retention``, seconds (finite, > 0) a message may stay in this
        queue before it ages out (``None``: forever); ``name``, this queue's name (default
        ``queue-<token>``), unique within its system. A bad configuration raises naming the
        argument and changes nothing, the target included.
        """
        capacity = check_optional_int("capacity", capacity, 0)
        self._visibility_timeout = check_optional_time("visibility_timeout", visibility_timeout)
        max_receives = check_optional_int("max_receives", max_receives, 1)
        self._delay = check_time("delay", delay)
        if clock is None and isinstance(dead_letter, BaseQueue):
            clock = dead_letter.clock
        self._clock: Clock = MonotonicClock() if clock is None else check_clock("clock", clock)
        kept = check_retention(retention)
        self._check_dead_letter(dead_letter, max_receives)
        if name is not None:
            check_name(name, None if dead_letter is None else dead_letter.machine)
        self._token = forking.new_token()
        m = self._claim(self._new_machine(capacity, max_receives, kept), name)
        #: The dead-letter target (held: the target lives as long as its sources).
        self._dead_letter: BaseQueue[T] | None = dead_letter
        #: The lock, the three named conditions and how many wait on each (:class:`Conditions`;
        #: ``mutex``, ``not_empty``, ``not_full`` and ``new_deadline`` are its, public as
        #: ``queue.Queue``'s are).
        self.conditions = self.conditions_class(self._clock)
        self._bind_conditions()
        self._no_thread_yet()
        m.before_timer = weakly(self._before_timer)
        if dead_letter is not None:
            with dead_letter.mutex:
                System.of(dead_letter.machine, dead_letter.name).join(
                    m, dead_letter.machine, m.name
                )
        forking.register(self, self._reinit_after_fork)

    def _no_thread_yet(self) -> None:
        self._closed = False
        # The sweeper thread, while one is alive, and what it shares with this queue.
        self._sweeper: threading.Thread | None = None
        self._link: SweeperLink | None = None
        # How many sweeps failed or sweepers died, and the last error: what health() reports.
        self._failures: tuple[int, BaseException | None] = (0, None)
        # Where record_trace sends each transition, and the thread now inside that sink (a
        # call back into the queue from the sink is refused).
        self._trace: Callable[[TraceStep], None] | None = None
        self._sweeps: Callable[[float], None] | None = None
        self._sink_thread: int | None = None

    def _new_machine(
        self, capacity: int | None, max_receives: int | None, retention: float | None
    ) -> Machine[T]:
        machine: Machine[T] = self.machine_class(self._token, capacity, max_receives, retention)
        return machine

    def _claim(self, m: Machine[T], name: str | None) -> Machine[T]:
        """Make ``m`` this queue's machine: its name, its owner, what it does with the effects
        of another queue's steps on it."""
        #: The queue machine this driver drives (``impl/machine.py``): its state and steps.
        self.machine = m
        if name is not None:
            m.name = name
        m.owner = weakref.ref(self)
        m.on_effect = weakly(self._moved_in)
        self._self_check = m.self_check
        # The machine's written-out steps, when it has them (a mutant's reference has not).
        self._fast = m if isinstance(m, FastMachine) else None
        return m

    def _bind_conditions(self) -> None:
        conds = self.conditions
        self._waiting = conds.waiting
        self.mutex = conds.mutex
        self.not_empty = conds.not_empty
        self.not_full = conds.not_full
        self.new_deadline = conds.new_deadline

    def _check_dead_letter(self, target: object, max_receives: int | None) -> None:
        """Contract section 7.1: a target that cannot work is a ``ValueError`` naming
        ``dead_letter`` (``TypeError`` for one that is not a queue), before anything changes."""
        if target is None:
            return
        if not isinstance(target, BaseQueue):
            raise TypeError(f"dead_letter must be an impl queue, got {type(target).__name__}")
        check_target(self.machine_class, target.machine, max_receives)
        if target.clock is not self._clock:
            raise ValueError(
                "dead_letter must use the same clock object as this queue (its moves and "
                "retention read one time)"
            )
        if target.closed:
            raise ValueError(f"dead_letter {target.name!r} is closed")

    # -- configuration --------------------------------------------------------------------------

    @property
    def clock(self) -> Clock:
        """The clock this queue reads time from and waits on."""
        return self._clock

    @property
    def capacity(self) -> int | None:
        return self.machine.capacity

    @property
    def visibility_timeout(self) -> float | None:
        return self._visibility_timeout

    @property
    def max_receives(self) -> int | None:
        return self.machine.max_receives

    @property
    def delay(self) -> float:
        """The delay of a send that gives none, in seconds."""
        return self._delay

    @property
    def name(self) -> str:
        """This queue's name (unique within its system)."""
        return self.machine.name

    @property
    def dead_letter(self) -> BaseQueue[T] | None:
        """The queue a message that dies here moves to, or ``None`` (it stays here, DEAD)."""
        return self._dead_letter

    @property
    def retention(self) -> float | None:
        """Seconds a message may stay in this queue before it ages out (``None``: forever)."""
        return self.machine.retention

    @property
    def token(self) -> int:
        """This queue's identity: its receipts carry it, and the locks of a system of queues
        are taken in its order (creation order, ``impl.machine.in_lock_order``)."""
        return self._token

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called."""
        return self._closed

    @property
    def waiting(self) -> tuple[int, int]:
        """How many calls wait now: ``(receivers, senders)`` (a receive for a deliverable
        message, a send for room). For tests and monitoring: an idle queue's is ``(0, 0)``."""
        waiting = self.conditions.waiting
        return waiting[self.conditions.not_empty], waiting[self.conditions.not_full]

    # -- the one loop -----------------------------------------------------------------------------

    def _apply(self, out: Outcome) -> None:
        """Do what a committed step's outcome says (with every lock it held still held): wake
        its receivers and senders, aim the sweeper at its earliest timer, pass its effects on
        to the other queues it changed, and run the machine's self-check (if it has one)."""
        waiting = self._waiting
        receivers = out.receivers
        senders = out.senders
        if (receivers and waiting[self.not_empty]) or (senders and waiting[self.not_full]):
            self.conditions.wake(receivers, senders)
        due = out.due
        if due is not None:
            link = self._link
            if link is not None and (link.target is None or due < link.target):
                self.conditions.notify(self.new_deadline)  # an earlier timer: wake the sweeper
        if out.elsewhere:
            for effect in out.elsewhere:
                effect.queue.on_effect(effect)
        if self._self_check:
            self.machine.check()

    def _moved_in(self, effect: Effect) -> None:
        """Another queue's step changed this one (a move in; both locks held): its effects."""
        if effect.receivers or effect.senders:
            self.conditions.wake(effect.receivers, effect.senders)
        if effect.due is not None:
            self._aim(effect.due)
        if self._self_check:
            self.machine.check()

    def _until(
        self,
        step: Callable[[float], Outcome | Blocked],
        out: Outcome | Blocked,
        block: bool,
        wait: float | None,
        op: str,
        n: int = 1,
    ) -> Outcome:
        """The generic loop's wait (``mutex`` held): while ``out`` is Blocked, raise (shut
        down; not ``block``; ``wait`` seconds passed, counted from the first time it was
        blocked, an end that overflows the clock being refused before any wait) or wait on its
        condition, then ``step`` again. A step that raises after a wait passes a wakeup on.
        ``n``: how many messages a send needs room for (its error says)."""
        conds = self.conditions
        cond = self.not_empty if out is NOTHING else self.not_full
        batch = op == "send_batch"
        endtime: float | None = None
        while isinstance(out, Blocked):
            if out is SHUT:
                raise ShutDown(self._shut_message(op))
            if not block:
                raise self._refusal(op, None, n)
            now = self._clock.now()
            if endtime is None and wait is not None:
                endtime = check_later("timeout", now, wait)
            if endtime is not None and now >= endtime:
                raise self._refusal(op, wait, n)
            if batch:  # counted, so that every notify of not_full wakes every sender
                conds.waiting[BATCH_SENDERS] += 1
            try:
                conds.wait(cond, endtime)
            finally:
                if batch:
                    conds.waiting[BATCH_SENDERS] -= 1
            try:
                out = step(self._clock.now())
            except BaseException:
                conds.notify(cond)  # a notify may have woken us for what we leave behind
                raise
        assert isinstance(out, Outcome)
        return out

    def _shut_message(self, op: str) -> str:
        if op.startswith("receive"):
            return f"receive on a shut-down queue with nothing {self.machine.ready_word}"
        return f"{op} on a queue that has been shut down"

    def _refusal(self, op: str, wait: float | None, n: int) -> Exception:
        """The ``Empty`` (a receive) or ``Full`` (a send of ``n`` messages) of a step that
        cannot go ahead: at once (``wait`` ``None``), or after ``wait`` seconds."""
        if op.startswith("receive"):
            word = self.machine.ready_word
            if wait is None:
                return Empty(f"no message is {word}")
            return Empty(f"no message became {word} within {wait} seconds")
        if op == "send_batch":
            if wait is None:
                return Full(f"the queue has no room for {n} more messages")
            return Full(f"no room for {n} messages within {wait} seconds")
        if wait is None:
            return Full("the queue is at capacity")
        return Full(f"no room within {wait} seconds")

    def _held(self, machines: Sequence[Machine[Any]]) -> list[threading.RLock]:
        """Take the locks of the queues of ``machines`` (in lock order); those taken so far
        are let go if one raises."""
        taken: list[threading.RLock] = []
        try:
            for m in machines:
                queue = m.owner()
                assert isinstance(queue, BaseQueue), "a machine of a live system has a driver"
                queue.mutex.acquire()
                taken.append(queue.mutex)
        except BaseException:
            for lock in reversed(taken):
                lock.release()
            raise
        return taken

    @contextmanager
    def _holding(self, machines: Sequence[Machine[Any]]) -> Iterator[None]:
        """Hold the locks of ``machines``' queues (already in lock order) for the block."""
        taken = self._held(machines)
        try:
            yield
        finally:
            for lock in reversed(taken):
                lock.release()

    def _releasing(self) -> Any:
        """What a releasing step holds: this queue's lock, and its target's first (if any)."""
        if self._dead_letter is None:
            return self.mutex
        return self._holding(self.machine.release_queues())

    # -- receiving ------------------------------------------------------------------------------

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
        if block is not True and block is not False:
            check_bool("block", block)
        # None and a float in range (the common values) pass two tests and no call.
        if timeout is not None and not (type(timeout) is float and 0.0 <= timeout < INF):
            timeout = check_time("timeout", timeout)
        if visibility_timeout is QUEUE_DEFAULT:
            vt = self._visibility_timeout
        else:
            vt = check_optional_time("visibility_timeout", visibility_timeout)
        if self._sink_thread is not None:
            self._refuse_reentry("receive")
        with self.mutex:
            now = self._clock.now()
            fast = self._fast
            link = self._link  # set while a sweeper thread runs (with _sweeper)
            if fast is not None and link is not None:
                delivered = fast.receive_now(now, vt)
                if delivered is not None:  # its effect: a deadline armed at now + vt
                    assert vt is not None
                    target = link.target
                    if target is None or now + vt < target:
                        self.conditions.notify(self.new_deadline)
                    return delivered
            m = self.machine
            try:
                out = m.receive(now, vt)
            except BaseException:
                self.conditions.notify(self.not_empty)  # pass on a notify we may have taken
                raise
            if isinstance(out, Blocked):
                out = self._until(step_of(m.receive, vt), out, block, timeout, "receive")
            self._apply(out)
            message: Message[T] = out.result
            return message

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
        ``visibility_timeout``), in the machine's delivery order (a standard queue: FIFO
        order; a FIFO queue: the first unlocked group's visible messages in send order, then
        the next group's). Waits, like :meth:`receive`, until at least one message is
        deliverable (``block``, ``timeout``, :class:`Empty`, :class:`ShutDown` as there); never
        waits for more than one. ``max_messages`` outside 1..10 is a ``ValueError`` (not an
        int: ``TypeError``), before any waiting.
        """
        n = check_int("max_messages", max_messages, 1)
        if n > MAX_BATCH:
            raise ValueError(f"max_messages must be <= {MAX_BATCH}, got {n!r}")
        if block is not True and block is not False:
            check_bool("block", block)
        if timeout is not None and not (type(timeout) is float and 0.0 <= timeout < INF):
            timeout = check_time("timeout", timeout)
        if visibility_timeout is QUEUE_DEFAULT:
            vt = self._visibility_timeout
        else:
            vt = check_optional_time("visibility_timeout", visibility_timeout)
        if self._sink_thread is not None:
            self._refuse_reentry("receive_batch")
        with self.mutex:
            now = self._clock.now()
            fast = self._fast
            link = self._link  # set while a sweeper thread runs (with _sweeper)
            if fast is not None and link is not None:
                delivered = fast.receive_batch_now(now, n, vt)
                if delivered is not None:  # its effect: a deadline armed at now + vt
                    assert vt is not None
                    target = link.target
                    if target is None or now + vt < target:
                        self.conditions.notify(self.new_deadline)
                    return delivered
            m = self.machine
            try:
                out = m.receive_batch(now, n, vt)
            except BaseException:
                self.conditions.notify(self.not_empty)
                raise
            if isinstance(out, Blocked):
                out = self._until(
                    step_of(m.receive_batch, n, vt), out, block, timeout, "receive_batch"
                )
            self._apply(out)
            messages: list[Message[T]] = out.result
            return messages

    # -- acting on a delivery -------------------------------------------------------------------

    def delete(self, receipt: Receipt) -> bool:
        """Acknowledge a delivery: if ``receipt`` is live the message is done and ``True``.

        Otherwise (stale, future or foreign receipt, unknown or finished message) ``False`` and
        the queue is unchanged. Works after shutdown and close. ``TypeError`` if ``receipt`` is
        not a :class:`Receipt`.
        """
        if not isinstance(receipt, Receipt):
            raise not_a_receipt(receipt)
        if self._sink_thread is not None:
            self._refuse_reentry("delete")
        with self.mutex:
            fast = self._fast
            if fast is not None:
                done = fast.delete_now(receipt)
                if done is not None:  # its effect, when live: one slot freed
                    if done and self._waiting[self.not_full]:
                        self.conditions.wake(0, 1)
                    return done
            out = self.machine.delete(self._clock.now(), receipt)
            self._apply(out)
            ok: bool = out.result
            return ok

    def delete_batch(self, receipts: Sequence[Receipt]) -> list[bool]:
        """Delete with 1 to 10 receipts in one atomic step: each as :meth:`delete`, in order.

        A receipt repeated in the batch gives ``False`` the second time (its message is done by
        then). ``TypeError``/``ValueError`` naming the argument or the item (``receipts[1]``)
        for a batch that is not a sequence of 1 to 10 :class:`Receipt`.
        """
        batch = check_receipts(receipts)
        if self._sink_thread is not None:
            self._refuse_reentry("delete_batch")
        with self.mutex:
            fast = self._fast
            if fast is not None:
                deleted = fast.delete_batch_now(batch)
                if deleted is not None:  # its effect: one slot freed per True
                    freed = sum(deleted)
                    if freed and self._waiting[self.not_full]:
                        self.conditions.wake(0, freed)
                    return deleted
            out = self.machine.delete_batch(self._clock.now(), batch)
            self._apply(out)
            results: list[bool] = out.result
            return results

    def retry(self, receipt: Receipt) -> bool:
        """Give a live delivery back at once: *release* it (see :meth:`change_visibility`).

        ``True`` if ``receipt`` was live; otherwise ``False`` and the queue is unchanged.
        """
        if not isinstance(receipt, Receipt):
            raise not_a_receipt(receipt)
        if self._sink_thread is not None:
            self._refuse_reentry("retry")
        with self._releasing():
            out = self.machine.retry(self._clock.now(), receipt)
            self._apply(out)
            ok: bool = out.result
            return ok

    def change_visibility(self, receipt: Receipt, timeout: float) -> bool:
        """Set a live delivery's deadline to now + ``timeout`` (from now, not added to the old).

        ``timeout == 0`` *releases* the message at once: it is dead-lettered if ``max_receives``
        is set and reached, else it is visible again (a standard queue: at the tail; a FIFO
        queue: in its place in send order), keeping its attempt. ``True`` if ``receipt`` was
        live; otherwise ``False`` and the queue is unchanged. ``timeout`` must be a finite
        number >= 0 (``TypeError``/``ValueError`` otherwise).
        """
        if not isinstance(receipt, Receipt):
            raise not_a_receipt(receipt)
        t = check_time("timeout", timeout)
        if self._sink_thread is not None:
            self._refuse_reentry("change_visibility")
        with self._releasing():
            out = self.machine.change_visibility(self._clock.now(), receipt, t)
            self._apply(out)
            ok: bool = out.result
            return ok

    def change_visibility_batch(self, changes: Sequence[tuple[Receipt, float]]) -> list[bool]:
        """Apply 1 to 10 ``(receipt, timeout)`` changes in one atomic step: each as
        :meth:`change_visibility`, in order, all from the same now.

        A change whose receipt an earlier change of the batch made stale (by releasing its
        message with timeout 0) gives ``False``. ``TypeError``/``ValueError`` naming the
        argument or the item (``changes[1].timeout``) for a batch that is not a sequence of 1 to
        10 pairs of a :class:`Receipt` and a finite timeout >= 0.
        """
        checked = check_changes(changes)
        if self._sink_thread is not None:
            self._refuse_reentry("change_visibility_batch")
        with self._releasing():
            out = self.machine.change_visibility_batch(self._clock.now(), checked)
            self._apply(out)
            results: list[bool] = out.result
            return results

    # -- acting on messages ---------------------------------------------------------------------

    def cancel(self, id: str) -> bool:
        """Cancel a delayed, visible or in-flight message: ``True``, its receipt (if any) dies,
        and capacity is freed.

        The other visible messages keep their order. For an unknown id or a finished message,
        ``False`` and the queue is unchanged. ``TypeError``/``ValueError`` for a malformed id.
        """
        id = check_id("id", id)
        if self._sink_thread is not None:
            self._refuse_reentry("cancel")
        with self.mutex:
            out = self.machine.cancel(self._clock.now(), id)
            self._apply(out)
            ok: bool = out.result
            return ok

    def purge(self) -> int:
        """Cancel every active message (delayed, visible and in flight) in one atomic step.

        Every live receipt dies, every timer is dropped, and every slot is freed (waking the
        blocked senders); dead letters, done and cancelled messages are untouched, and the ids
        stay reserved. Returns how many messages were purged. Works after shutdown and close.
        """
        if self._sink_thread is not None:
            self._refuse_reentry("purge")
        with self.mutex:
            out = self.machine.purge(self._clock.now())
            self._apply(out)
            count: int = out.result
            return count

    def receipt(self, id: str, attempt: int) -> Receipt:
        """The receipt that names delivery ``attempt`` of message ``id`` on this queue.

        This is how the job-queue API acts by ``(id, attempt)``. The receipt is live only if
        that delivery is the one in flight; attempt 0 names no delivery and is never live.
        ``TypeError``/``ValueError`` for a malformed id or an attempt that is not an int >= 0.
        """
        return Receipt(self._token, check_id("id", id), check_int("attempt", attempt, 0))

    # -- the sweep ------------------------------------------------------------------------------

    def sweep(self) -> None:
        """Fire every timer due now: release each in-flight message whose deadline <= now, and
        make each delayed message whose ``visible_at`` <= now visible (and, contract section 7,
        age out, redrive).

        In order of due time, ties in the order the timers were started, as one atomic step (if
        the clock or the trace sink raises, nothing of this sweep happens). This is what the
        sweeper thread runs; call it directly after advancing a fake clock. It also restarts a
        sweeper thread that died (see :meth:`health`).
        """
        if self._sink_thread is not None:
            self._refuse_reentry("sweep")
        taken = self._hold_for_sweep()
        try:
            now = self._clock.now()
            if self._sweeper is None and len(self.machine.timers) and not self._closed:
                self._start_sweeper()  # before the sweep commits: a failed start changes nothing
            self._fire_due(now)
        finally:
            for lock in reversed(taken):
                lock.release()

    def _fire_due(self, now: float) -> None:
        """The sweep's loop (every lock it needs held): each due step, then its effects; first
        the sweep sink hears of a sweep that will fire something."""
        m = self.machine
        if self._sweeps is not None and m.due_now(now):
            self._sweeps(now)
        while (out := m.fire_due(now)) is not None:
            self._apply(out)

    def record_sweeps(self, sink: Callable[[float], None] | None) -> None:
        """From now on call ``sink(now)`` once per sweep that fires anything (a round of the
        sweeper thread, or :meth:`sweep`), ``now`` being the sweep's time, inside it: what a
        write-ahead journal needs to replay a run, since the moment a sweep runs is the one
        input of the queue that no operation carries (``sqs_endpoint/journal.py``). It is
        called before the sweep's first step: a sink that raises vetoes the sweep (nothing of
        it happens; the sweeper retries as after any failed round). The sink must be quick and
        must not call the queue. ``None`` stops. ``TypeError`` if ``sink`` is neither callable
        nor ``None``."""
        if sink is not None:
            check_callable("sink", sink)
        with self.mutex:
            self._sweeps = sink

    def _hold_for_sweep(self) -> list[threading.RLock]:
        """Take every lock a sweep needs (``Machine.sweep_queues``, in lock order); if the set
        changed while they were taken, let go and take the new one."""
        while True:
            machines = self.machine.sweep_queues()
            taken = self._held(machines)
            if self.machine.sweep_queues() == machines:
                return taken
            for lock in reversed(taken):
                lock.release()

    def _sweeper_round(self) -> float | None:
        """The sweeper thread's round, called with this queue's lock held: fire what is due
        (under every lock the sweep needs, then its own alone again, so the sweeper waits with
        the next due time read under it: no lost arm), and return the time to sleep until
        (``None``: until notified)."""
        m = self.machine
        if m.sweep_queues() == [m]:
            self._fire_due(self._clock.now())
            return m.next_due()
        mutex = self.mutex
        mutex.release()
        try:
            taken = self._hold_for_sweep()
        except BaseException:
            mutex.acquire()
            raise
        try:
            self._fire_due(self._clock.now())
            return m.next_due()
        finally:
            for lock in reversed(taken):
                if lock is not mutex:
                    lock.release()

    def _aim(self, due: float) -> None:
        """A timer due at ``due`` was armed: wake the sweeper if it sleeps until later (after
        ``close()`` there is no sweeper to wake)."""
        link = self._link
        if link is not None and (link.target is None or due < link.target):
            self.conditions.notify(self.new_deadline)

    def _before_timer(self, due: float) -> None:
        """The machine's ``before_timer`` veto point: a step arms a timer, so a sweeper must
        run; starting it may fail, which vetoes the step."""
        if self._sweeper is None and not self._closed:
            self._start_sweeper()

    def _start_sweeper(self) -> None:
        """Start the sweeper thread (none is alive and the queue is not closed), or raise and
        change nothing."""
        if self._closed:
            return  # no thread outlives close(): from now on only sweep() expires
        link = SweeperLink(
            self.conditions,
            self._clock,
            (self._sweeper_round, self._sweep_failed, self._sweeper_died),
        )
        thread = sync_of(self._clock).thread(
            sweep_forever, (link,), f"impl.Queue-{self._token}-sweeper"
        )
        thread.start()  # may raise RuntimeError("can't start new thread"): nothing changed
        self._sweeper, self._link = thread, link
        self.machine.before_timer = None  # a sweeper runs: arming needs no veto any more

    def _sweep_failed(self, error: Exception, retry_at: float) -> None:
        """A round of the sweeper raised ``error`` (and changed nothing): report it; the sweeper
        tries again at ``retry_at`` on the clock, or when a timer is armed earlier."""
        self._failures = (self._failures[0] + 1, error)
        log.error(
            "impl.Queue %d: a sweep of the sweeper thread failed; it retries at %r on the "
            "queue's clock, or sooner if an earlier timer is armed",
            self._token,
            retry_at,
            exc_info=error,
        )

    def _sweeper_died(self, link: SweeperLink, error: BaseException) -> None:
        """The sweeper of ``link`` ends with ``error``: report it and let the next step that
        arms a timer, ``sweep()`` or ``health()`` start another."""
        if self._link is link:
            self._sweeper = self._link = None
            self.machine.before_timer = weakly(self._before_timer)
        self._failures = (self._failures[0] + 1, error)
        log.error(
            "impl.Queue %d: the sweeper thread died; expiry stalls until the next receive "
            "with a visibility timeout, change_visibility, sweep() or health()",
            self._token,
            exc_info=error,
        )

    # -- the trace ------------------------------------------------------------------------------

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

        Contract section 7 adds two actions. A retention timer a sweep fires is ``("age_out",
        (), id, now)`` (in the one timer order among the ``expire`` steps). A redrive move is
        ``("redrive", (dlq_name, id), new_id, now)`` in the dead-letter queue's trace (one
        step per move); skipped ids and a move a full destination stops are not steps. A
        dead-letter move is not a step of its own: the source's releasing step whose release
        dies stands for it; the target's and the destination's sinks record nothing for a
        message moved in. So a system's run is validated from one list the queues' sinks all
        append to, each step tagged with its queue's ``name`` (each step is recorded under every
        lock it holds, so that list is in linearization order). When a sweep holds a redrive
        tick, a sink that raises vetoes that step and the steps after it, not the ones before.

        ``sink`` is called inside the transition's critical section, after everything else that
        can fail and just before the change is applied (the machine's ``before_step``), so the
        order of the calls is the order in which the transitions took effect (their
        linearization order). A sink that raises vetoes its transition: the queue is left
        unchanged and the exception propagates. The sink must be quick, and must not call the
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
            self.machine.before_step = None if sink is None else weakly(self._record)

    def _record(self, step: TraceStep) -> None:
        """The machine's ``before_step`` veto point: pass ``step`` to the trace sink."""
        sink = self._trace
        if sink is None:
            return
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

    # -- observation ----------------------------------------------------------------------------

    def dead_letters(self) -> list[Message[T]]:
        """The dead-lettered messages, in the order they died, each with its last attempt (and,
        on a FIFO queue, its group)."""
        if self._sink_thread is not None:
            self._refuse_reentry("dead_letters")
        with self.mutex:
            return [r.message() for r in self.machine.dead]

    def stats(self) -> Stats:
        """How many messages are visible, in flight, done, cancelled and dead, atomically."""
        if self._sink_thread is not None:
            self._refuse_reentry("stats")
        with self.mutex:
            return self.machine.stats()

    def snapshot(self) -> Snapshot[T]:
        """The whole observable state, taken atomically (see :class:`Snapshot`; a FIFO queue's
        has each message's ``group`` and ``sent`` and the queue's dedup records)."""
        if self._sink_thread is not None:
            self._refuse_reentry("snapshot")
        with self.mutex:
            return self.machine.snapshot()

    def aged_out(self) -> list[str]:
        """The ids of the messages whose retention ran out in this queue, in that order."""
        if self._sink_thread is not None:
            self._refuse_reentry("aged_out")
        with self.mutex:
            return list(self.machine.aged)

    def source_of(self, id: str) -> BaseQueue[T] | None:
        """The queue the message ``id`` was dead-lettered from into this one, or ``None`` (it was
        sent here, redriven here, is unknown, or its source has since been collected)."""
        id = check_id("id", id)
        if self._sink_thread is not None:
            self._refuse_reentry("source_of")
        with self.mutex:
            source = System.source_of(self.machine, id)
        return None if source is None else driver_of(source)

    def moved_to(self, id: str) -> tuple[BaseQueue[T], str] | None:
        """Where a redrive moved the message ``id`` of this dead-letter queue: ``(destination,
        new_id)``, or ``None`` (not moved, or the destination has since been collected)."""
        id = check_id("id", id)
        if self._sink_thread is not None:
            self._refuse_reentry("moved_to")
        with self.mutex:
            hit = self.machine.moved.get(id)
        if hit is None:
            return None
        ref, new_id = hit
        dest = ref() if isinstance(ref, weakref.ref) else None
        queue = None if dest is None else driver_of(dest)
        return None if queue is None else (queue, new_id)

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
            armed = self.machine.next_due() is not None
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

    # -- redrive (contract section 7.5) -----------------------------------------------------------

    def redrive_tasks(self) -> list[RedriveTask[T]]:
        """The redrive tasks started on this queue, most recent first."""
        if self._sink_thread is not None:
            self._refuse_reentry("redrive_tasks")
        with self.mutex:
            system = self.machine.system
            return [] if system is None else system.tasks(self.machine)[::-1]

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
            check_destination(self.machine, destination.machine)
            if destination.clock is not self._clock:
                raise ValueError("destination must use the same clock object as this queue")
        r = check_rate(rate, ids)
        if self._sink_thread is not None:
            self._refuse_reentry("start_redrive")
        target = None if destination is None else destination.machine
        m = self.machine
        while True:
            with self.mutex:
                system = System.of(m, m.name)
                dests = system.destinations(m, target, list(m.visible))
            machines = sorted({*dests, m}, key=lambda x: x.token)
            with self._holding(machines):
                if not set(system.destinations(m, target, list(m.visible))) <= set(machines):
                    continue  # a message came in from another source meanwhile: lock it too
                return self._start_task(system, destination, target, r, ids)

    def _start_task(
        self,
        system: System,
        destination: BaseQueue[T] | None,
        target: Machine[T] | None,
        rate: float | None,
        ids: Callable[[], str] | None,
    ) -> RedriveTask[T]:
        # start_redrive's steps, with this queue's lock and its destinations' held.
        m = self.machine
        now = self._clock.now()
        out = system.start_redrive(m, destination, target, rate, now, ids=ids, lock=self.mutex)
        self._apply(out)
        while (moved := system.redrive_move(m, now)) is not None:
            self._apply(moved)
        task: RedriveTask[T] = out.result
        return task

    # -- lifecycle ------------------------------------------------------------------------------

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
            self.machine.shutdown()
            self.conditions.wake_all()

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
            self.machine.before_timer = None
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
        # Collected while never closed: end the sweeper (it holds only weak references to
        # us) and warn if work was lost with us, as an unclosed file does.
        link = getattr(self, "_link", None)
        machine = getattr(self, "machine", None)
        if not getattr(self, "_closed", True) and machine is not None:
            active = machine.active()
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

    def _reinit_after_fork(self) -> None:
        """In a child process: fresh lock and conditions (the parent's may be held by threads
        that do not exist here), no waiters, no sweeper (the next step that arms one starts
        it)."""
        self.conditions = self.conditions_class(self._clock)
        self._bind_conditions()
        self._sweeper = self._link = None
        self._sink_thread = None
        if not self._closed:
            self.machine.before_timer = weakly(self._before_timer)
        if len(self.machine.timers) and not self._closed:
            # Deliveries in flight at the fork still expire in the child.
            try:
                self._start_sweeper()
            except Exception as e:  # reported by health(); the next arm tries again
                self._failures = (self._failures[0], e)
