"""The mutant catalogue: every pitfall of the first seed and the classic bugs, as broken queues.

Each mutant is a subclass of ``impl.Queue`` (or ``impl.FifoQueue``, ``impl.AsyncQueue``) with
exactly one bug in a few lines, named and explained in its docstring: what the bug is, why it is
wrong, and which of the project's checks catch it. A mutant breaks the queue machine, never the
driver's private code:

- most bugs are in a **step** of the machine: the mutant is a machine class (``XMachine``, a
  subclass of the reference ``impl.machine.Machine`` or of ``impl.fifo_machine.FifoMachine``,
  overriding one step) and a queue that names it (``machine_class = XMachine``);
- a lost wakeup is a wrong **effect**: the machine's step is right and its outcome says to wake
  too few (``Outcome.receivers``, ``Outcome.senders``, ``Outcome.elsewhere``);
- a bug of the waits is in the driver's **conditions** (``impl.threaded.Conditions``,
  ``impl.aio.Futures``, public classes a queue names as ``conditions_class``);
- a bug that makes one step two (a move in two steps, a receive picked and stamped in two
  critical sections) overrides a public method of the queue, so the second step is visible.

A broken machine that needs something of its driver (a window with the lock released, a
clock) is handed it by its queue's constructor, through public names. A mutant imports no
private name of ``impl``; when the real step changes, the mutant changes with it.
``model_tests/tests/test_mutants.py`` runs those checks on every mutant and asserts that they fail,
with the failure they should give, and that the same checks pass on ``impl.Queue``. So the
catalogue is teaching material (read a mutant beside the step it breaks) and the proof that
the checks have teeth.

Every mutant takes the constructor arguments of ``impl.Queue`` (``capacity``,
``visibility_timeout``, ``max_receives``, ``delay``, ``clock``), so any test that can build a
queue can build a mutant instead: ``MUTANTS`` maps each name to its class. The mutants are
deliberately broken, but never in more than the one way they are named after.

Seed pitfalls (``docs/sources.md``, the first seed) and the mutants that commit them:

1. a plain blocking queue, no visibility ........ :class:`PlainBlockingQueue`
2. receive picks and stamps in two steps ........ :class:`SplitReceiveQueue`,
                                                  :class:`UnarmedDeadlineQueue`
3. delete by message identity, not by handle .... :class:`DeleteByIdQueue`
4. receipt handles not rotated .................. :class:`UncheckedAttemptQueue`,
                                                  :class:`ReusedReceiptQueue`
5. busy-waiting sweeper; sweeper forgets to signal not_empty
                                                  :class:`PollingSweeperQueue`,
                                                  :class:`ForgetfulSweeperQueue`

Classic bugs of the same family: :class:`CapacityFreedOnReceiveQueue`,
:class:`ExpiredToHeadQueue`, :class:`SwapRemoveCancelQueue`, :class:`RetryKeepsAttemptQueue`,
:class:`DeadLetterOffByOneQueue`, :class:`ExtendAddsQueue`. (Pitfall 6, claiming exactly-once,
is a claim, not code: ``model_tests/tests/test_understanding.py`` Q1 shows the duplicate that
refutes it.)

Delays, batches and purge (contract section 2): :class:`EarlyDelayQueue`,
:class:`SeparateTimerOrderQueue`, :class:`PurgeMissesDelayedQueue`,
:class:`PrefixSendBatchQueue`, :class:`SplitReceiveBatchQueue`,
:class:`DeleteBatchStopsQueue`.

Held out until the controlled scheduler (each survived the rest of the suite, or was
caught only by interleaving luck), caught by ``model_tests/tests/test_schedule.py``:
:class:`DeadlineFirstSendQueue`, :class:`OnlyWhenEmptySweeperQueue`,
:class:`UnsweptIsDeadQueue`.

Missed by the suite until the speed work's review: :class:`OneWakeSendBatchQueue` (a
send_batch wakes one receiver; the scheduler's ``batch_wakes_all``),
:class:`CompactDropsDelaysQueue` (the timer heap's rebuild drops the delays; a lockstep witness).

FIFO queues (contract section 2b): subclasses of ``impl.FifoQueue``, each naming a machine that
overrides one step of ``impl.fifo_machine.FifoMachine``, kept apart in :data:`FIFO_MUTANTS` (their
API is the FIFO one: the standard-queue checks do not apply);
``model_tests/tests/test_fifo_mutants.py`` catches each by a named check:
:class:`TailReleaseFifoQueue`, :class:`LockBlindFifoQueue`,
:class:`InterleavedBatchFifoQueue`, :class:`SlidingDedupFifoQueue`,
:class:`RejectedDedupFifoQueue`, :class:`SilentUnlockFifoQueue`; and, from the speed work's review,
:class:`PruneLiveDedupFifoQueue` (pruning drops live dedup records) and
:class:`UncheckedWaitFifoQueue` (a send that waited for room is not re-checked).

The plumbing of a system (contract section 7), in :data:`SYSTEM_MUTANTS`: the wakeups and
timers around the steps, each a one-line slip that every state-based check passes:
:class:`SilentRedriveOutQueue`, :class:`CompactDropsTicksQueue`,
:class:`OneWakeDeadLetterQueue`, :class:`ExpiryDropsTimersQueue`; and the asyncio driver's
waiter FIFO, in :data:`ASYNC_MUTANTS`: :class:`WithdrawnKeptAsyncQueue`.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Final, TypeVar

from impl.aio import AsyncQueue, Futures, Waiters
from impl.clock import Clock
from impl.errors import Full
from impl.fifo import FifoQueue
from impl.fifo_machine import FifoMachine
from impl.machine import Machine, Record
from impl.message import Receipt
from impl.outcome import ACTED, DELIVERED, NO_ROOM, NOTHING, SHUT, Blocked, Effect, Outcome
from impl.queue import Queue
from impl.threaded import Conditions
from impl.timers import DELAY, TICK, Timer

T = TypeVar("T")


def _nothing() -> None:
    """The default ``between`` of the windowed mutants (no other consumer runs in the window)."""


def broken_parts(cls: type[Any]) -> list[tuple[type, str]]:
    """What a mutant breaks: ``(class, name)`` for each step of the reference machine
    (``impl.machine.Machine``, ``impl.fifo_machine.FifoMachine``) its machine redefines, each
    method of the driver's conditions (``impl.threaded.Conditions``, ``impl.aio.Futures``,
    ``impl.aio.Waiters``) its conditions redefine, and each public method of the queue it
    redefines (a bug that makes one step two). A mutant has one, and no private one."""
    parts: list[tuple[type, str]] = []

    def own(klass: type, base: type) -> None:
        for k in klass.__mro__:
            if k is base or k is object:
                break
            parts.extend(
                (k, a)
                for a, v in vars(k).items()
                if callable(v)
                and not isinstance(v, type)  # a class attribute naming a class, not a step
                and not a.startswith("__")
                and hasattr(base, a)
            )

    queue_base = next(b for b in (FifoQueue, Queue, AsyncQueue) if issubclass(cls, b))
    if cls.machine_class is not queue_base.machine_class:
        real_machine = FifoMachine if issubclass(cls.machine_class, FifoMachine) else Machine
        own(cls.machine_class, real_machine)
    conditions = cls.conditions_class
    if conditions is not queue_base.conditions_class:
        own(conditions, Futures if issubclass(conditions, Futures) else Conditions)
        waiters = getattr(conditions, "waiters_class", None)
        if waiters is not None and waiters is not Waiters:
            own(waiters, Waiters)
    own(cls, queue_base)
    return [(k, a) for k, a in parts if a not in ("machine_class", "conditions_class")]


class _Wired(Queue[T]):
    """The real queue, for a broken machine that needs something of its driver (the lock, the
    clock): ``wire`` hands it over, through public names, once the queue is built. Not a mutant
    itself."""

    def __init__(
        self,
        capacity: int | None = None,
        visibility_timeout: float | None = 30.0,
        max_receives: int | None = None,
        delay: float = 0.0,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(capacity, visibility_timeout, max_receives, delay, clock)
        self.wire(self.machine)

    def wire(self, machine: Machine[T]) -> None:
        """Give ``machine`` what its broken step needs of this queue."""


# =============================================================================================
# Seed pitfall 1: a plain blocking queue
# =============================================================================================


class PlainBlockingMachine(Machine[T]):
    """The machine of :class:`PlainBlockingQueue`: receiving removes the message."""

    def receive(self, now: float, vt: float | None) -> Outcome | Blocked:
        if not self.visible:
            return SHUT if self.shut else NOTHING
        _, rec = self.visible.popitem(last=False)
        rec.attempt += 1
        rec.receipt = self.receipt_of(rec)
        self.done.add(rec.id)  # BUG: gone on delivery; nothing is ever in flight
        # A plain queue's get frees its slot: one sender to wake; nothing armed.
        return Outcome(DELIVERED, rec.message(), 0, 1, None, ())


class PlainBlockingQueue(Queue[T]):
    """MUTANT (seed pitfall 1): ``receive`` removes the message, as ``queue.Queue.get`` does.

    The bug: this is the bounded blocking queue the problem starts from, called done. There is
    no visibility timeout, no in-flight state and no redelivery: a message is gone (``DONE``)
    the moment it is handed out, so a consumer that crashes before finishing loses it for good,
    and the receipt it got can never act (``delete`` says ``False``, ``retry`` cannot give the
    message back). At-most-once delivery where the contract promises at-least-once.

    Why the checks see it: right after one receive the spec has the message ``IN_FLIGHT`` and
    the queue has it ``DONE``, so the lockstep test's comparison of the observable state fails
    (and ``OneState``'s step half: a delete acted on nothing). Capacity is freed on receive too,
    as in :class:`CapacityFreedOnReceiveQueue`, because that is what a plain queue does.
    """

    machine_class = PlainBlockingMachine


# =============================================================================================
# Seed pitfall 2: receive is not one atomic step
# =============================================================================================


class WindowedMachine(Machine[T]):
    """A machine whose broken step opens a window: ``window()``, set by its queue, releases
    the lock, runs the queue's ``between`` and takes the lock back."""

    window: Callable[[], None] = staticmethod(_nothing)


class _Windowed(_Wired[T]):
    """The real queue with a ``between`` callable (a keyword argument of the constructor; by
    default nothing) that a mutant runs in the window its bug opens, with the lock released, so
    a test places another thread's step there deterministically. Not a mutant itself."""

    machine_class: ClassVar[type[Machine[Any]]] = WindowedMachine

    def __init__(
        self,
        capacity: int | None = None,
        visibility_timeout: float | None = 30.0,
        max_receives: int | None = None,
        delay: float = 0.0,
        clock: Clock | None = None,
        *,
        between: Callable[[], object] = _nothing,
    ) -> None:
        self.between = between
        super().__init__(capacity, visibility_timeout, max_receives, delay, clock)

    def wire(self, machine: Machine[T]) -> None:
        assert isinstance(machine, WindowedMachine)
        machine.window = self.window

    def window(self) -> None:
        self.mutex.release()  # the lock is free here: another caller may run a whole step
        try:
            self.between()
        finally:
            self.mutex.acquire()


class SplitReceiveMachine(WindowedMachine[T]):
    """The machine of :class:`SplitReceiveQueue`."""

    def deliver(self, deadline: float | None) -> Record[T]:
        rec = next(iter(self.visible.values()))  # critical section 1: PICK the head
        attempt = rec.attempt
        self.window()  # BUG: the window. Another consumer may pick the same head here.
        self.visible.pop(rec.id, None)  # critical section 2: STAMP it and record it in flight
        rec.attempt = attempt
        self.stamp(rec, deadline)
        return rec


class SplitReceiveQueue(_Windowed[T]):
    """MUTANT (seed pitfall 2): ``receive`` picks the head in one critical section and stamps it
    (attempt, deadline, in flight) in a second one.

    The bug: between the two sections the lock is free, so a second consumer can pick the same
    head, and both stamp it: one message, one attempt, two consumers each holding "the" live
    receipt, while the next visible message sits unclaimed. The linearization point of receive
    must be one atomic visible -> in-flight step; here there are two.

    ``between`` (a keyword argument of the constructor; by default nothing) runs in the window,
    with the lock released, so a test forces the bad interleaving deterministically: a
    ``threading.Barrier(2).wait`` there makes two concurrent receives both pick before either
    stamps. Without a hook the window is a few bytecodes wide and tests would hit it by luck.

    Why the checks see it: single-threaded, nothing can run in the window, so the lockstep test
    passes; only a concurrent history shows the bug, and the linearizability checker rejects it
    (no sequential order of the spec delivers ``(a, 1)`` twice).
    """

    machine_class = SplitReceiveMachine


class UnarmedDeadlineMachine(Machine[T]):
    """The machine of :class:`UnarmedDeadlineQueue`."""

    def arm_deadline(self, rec: Record[T]) -> None:
        """BUG: the deadline is recorded on the message but never put where the sweeper looks.
        (``change_visibility`` also arms through here, so its new deadlines are lost too.)
        """


class UnarmedDeadlineQueue(Queue[T]):
    """MUTANT (seed pitfall 2, second half): receive stamps the deadline but never arms it.

    The bug: the seed's other failure of a non-atomic receive, "the deadline is never armed":
    the record says "in flight until t", but the sweeper's heap never hears of it, so the
    message is "received but never expiring". A consumer that dies holds it forever; it is
    never redelivered, and never dead-lettered.

    Why the checks see it: after the clock passes the deadline and a sweep runs, the spec has
    released the message and the queue still has it in flight: the lockstep test's comparison
    of the observable state fails.
    """

    machine_class = UnarmedDeadlineMachine


# =============================================================================================
# Seed pitfall 3: delete by message identity
# =============================================================================================


class DeleteByIdMachine(Machine[T]):
    """The machine of :class:`DeleteByIdQueue`."""

    def to_delete(self, receipt: Receipt) -> Record[T] | None:
        return self.in_flight.get(receipt.id)  # BUG: by id; not self.live(receipt)


class DeleteByIdQueue(Queue[T]):
    """MUTANT (seed pitfall 3): ``delete`` removes the in-flight message with the receipt's id,
    whatever delivery (and whatever queue) the receipt names.

    The bug: consumer A's delivery timed out and was redelivered to B; A finally deletes with
    its stale receipt, and the message B is still processing is deleted under B's feet. If B
    then fails, the message is lost: at-least-once is broken. An ack must match the *live*
    receipt (queue, id, attempt), or do nothing.

    Why the checks see it: the lockstep test deletes with stale, forged and foreign receipts;
    the spec says ``False``, this queue says ``True``.
    """

    machine_class = DeleteByIdMachine


# =============================================================================================
# Seed pitfall 4: receipt handles not rotated
# =============================================================================================


class UncheckedAttemptMachine(Machine[T]):
    """The machine of :class:`UncheckedAttemptQueue`."""

    def live(self, receipt: Receipt) -> Record[T] | None:
        rec = self.in_flight.get(receipt.id)
        if rec is None or rec.receipt.queue != receipt.queue:
            return None
        return rec  # BUG: rec.receipt.attempt != receipt.attempt is never asked


class UncheckedAttemptQueue(Queue[T]):
    """MUTANT (seed pitfall 4): a receipt is "live" if its message is in flight, at any attempt.

    The bug: every delivery does get a fresh receipt, but the guard never looks at the part
    that makes it fresh, so the stale-handle guard cannot tell old from new: A's receipt from
    attempt 1 deletes, retries or extends B's attempt 2. Same damage as
    :class:`DeleteByIdQueue`, for every receipt operation at once.

    Why the checks see it: the lockstep test uses stale receipts (after a retry, an expiry or
    a redelivery) and forged future ones; the spec refuses them, this queue acts on them.
    """

    machine_class = UncheckedAttemptMachine


class ReusedReceiptMachine(Machine[T]):
    """The machine of :class:`ReusedReceiptQueue`."""

    def receipt_of(self, rec: Record[T]) -> Receipt:
        return Receipt(self.token, rec.id, 1)  # BUG: not rec.attempt: the same every delivery


class ReusedReceiptQueue(Queue[T]):
    """MUTANT (seed pitfall 4): every delivery of a message hands out the same receipt.

    The bug: the handle is made once per message, "(queue, id, 1)", instead of once per
    delivery, and the guard accepts that handle for whatever delivery is in flight (the guard
    is right: a receipt is live when it is the one made for the delivery in flight, and that is
    the same handle every time). A handle that never changes can never go stale, so the
    redelivered copy and the timed-out one share it: exactly the stale-ack disaster of pitfall 3.

    Why the checks see it: on the first redelivery the lockstep test finds that the receipt
    handed out is not the one that names the delivery (``receipt(id, attempt)``); with that
    assertion gone, the stale deletes that follow fail like :class:`UncheckedAttemptQueue`'s.
    """

    machine_class = ReusedReceiptMachine


# =============================================================================================
# Seed pitfall 5: the sweeper busy-waits, or forgets to signal not_empty
# =============================================================================================


class ForgetfulSweeperMachine(Machine[T]):
    """The machine of :class:`ForgetfulSweeperQueue`."""

    def expire(self, rec: Record[T], now: float) -> tuple[int, int]:
        _, senders = self.release(rec, now)
        return (0, senders)  # BUG: made visible, and no receiver is told


class ForgetfulSweeperQueue(Queue[T]):
    """MUTANT (seed pitfall 5): expiry makes a message visible again but does not signal
    ``not_empty``.

    The bug: a lost wakeup. A consumer blocked in ``receive`` (no timeout) waits on
    ``not_empty`` for a message; the sweeper re-queues one and tells nobody, so the consumer
    sleeps beside a visible message until some unrelated send or retry happens to signal. The
    release itself is right; only the notify is missing, and only on the expiry path (retry
    and ``change_visibility(0)`` still signal, which is what makes this bug easy to miss).

    Why the checks see it: every non-blocking check (lockstep, harness, linearizability) is
    blind to it: the state is right, only a wakeup is missing. The check that catches it blocks
    a receiver, expires a message, and asks whether the receiver was woken.
    """

    machine_class = ForgetfulSweeperMachine


class PollingSweeperConditions(Conditions):
    """The conditions of :class:`PollingSweeperQueue`."""

    POLL: Final = 0.05

    def wait(self, cond: threading.Condition, deadline: float | None) -> None:
        if cond is self.new_deadline:
            # BUG: wake again soon whatever is due; not the earliest deadline, not "never"
            deadline = self.clock.now() + self.POLL
        super().wait(cond, deadline)


class PollingSweeperQueue(Queue[T]):
    """MUTANT (seed pitfall 5): the sweeper polls: it wakes every ``POLL`` seconds to look.

    The bug: busy-waiting with a sleep in it. Every in-flight deadline is still applied (late by
    up to ``POLL``), so every state-based check passes, but an idle queue is never idle: its
    sweeper wakes ``1 / POLL`` times a second forever, burning CPU and battery, and shortening
    ``POLL`` to cut the lateness burns more. The contract: the sweeper waits for the earliest
    deadline or for a new earlier one, and an idle queue uses no CPU.

    Why the checks see it: the idle-sweeper check empties a queue whose sweeper has run, lets
    the sweeper go back to sleep, and asks how it sleeps: the real one waits with no deadline
    at all (only a notify can wake it), this one with a deadline ``POLL`` seconds away.
    """

    conditions_class = PollingSweeperConditions
    POLL: Final = PollingSweeperConditions.POLL


# =============================================================================================
# Classic bugs
# =============================================================================================


class CapacityFreedOnReceiveMachine(Machine[T]):
    """The machine of :class:`CapacityFreedOnReceiveQueue`."""

    def has_room(self) -> bool:
        cap = self.capacity
        return cap is None or len(self.visible) < cap  # BUG: + len(self.in_flight) missing


class CapacityFreedOnReceiveQueue(Queue[T]):
    """MUTANT: capacity counts only visible messages, so receiving a message frees its slot.

    The bug: the plain blocking queue's notion of "full" kept in a queue where a received
    message is not gone. Producers can then pile up any number of in-flight messages beyond the
    bound, and when they time out the queue holds more than its capacity: the bound that was to
    protect memory (and apply back-pressure) protects nothing. ``CapacityBound`` bounds
    *active* = visible + in flight.

    Why the checks see it: the lockstep test sends to a queue whose slots are all in flight; the
    queue accepts, and its own self-check (``Machine.check``, the ``CapacityBound`` test
    run at the end of every step) fails inside ``send``.
    """

    machine_class = CapacityFreedOnReceiveMachine


class ExpiredToHeadMachine(Machine[T]):
    """The machine of :class:`ExpiredToHeadQueue`."""

    def expire(self, rec: Record[T], now: float) -> tuple[int, int]:
        wake = super().expire(rec, now)
        if rec.id in self.visible:
            self.visible.move_to_end(rec.id, last=False)  # BUG: to the head
        return wake


class ExpiredToHeadQueue(Queue[T]):
    """MUTANT: an expired message goes back to the *head* of the visible FIFO, "where it was".

    The bug: release appends to the tail; putting a redelivery first lets one poison message
    that keeps timing out starve every message behind it, and breaks ``FifoVisible`` (the FIFO
    is ordered by the time each message re-entered it). The seed says it plainly: a
    redelivered message re-enters visible, it does not jump to its old slot.

    Why the checks see it: the lockstep test expires a message while another is visible, and
    ``FifoVisible`` (checked on the queue's state after every step) finds the order wrong.
    """

    machine_class = ExpiredToHeadMachine


class SwapRemoveCancelMachine(Machine[T]):
    """The machine of :class:`SwapRemoveCancelQueue`."""

    def remove(self, id: str) -> Record[T] | None:
        if id not in self.visible:  # in flight, unknown or finished: as the real cancel
            return super().remove(id)
        items = list(self.visible.items())
        i = [k for k, _ in items].index(id)
        rec = items[i][1]
        items[i] = items[-1]  # BUG: the tail takes the cancelled message's place
        items.pop()
        self.visible = OrderedDict(items)
        return rec


class SwapRemoveCancelQueue(Queue[T]):
    """MUTANT: ``cancel`` of a visible message moves the tail into its slot ("swap-remove").

    The bug: the O(1) array trick for deleting from the middle (overwrite with the last element,
    drop the last) is right for a set and wrong for a queue: the youngest message jumps ahead
    of everything between, so cancelling one message reorders the others. The contract: cancel
    leaves the others in their FIFO order.

    Why the checks see it: the lockstep test cancels a visible message from the middle of three
    or more, and ``FifoVisible`` finds the tail ahead of older messages.
    """

    machine_class = SwapRemoveCancelMachine


class RetryKeepsAttemptMachine(Machine[T]):
    """The machine of :class:`RetryKeepsAttemptQueue`."""

    def retry(self, now: float, receipt: Receipt) -> Outcome:
        out = super().retry(now, receipt)
        rec = self.visible.get(receipt.id)
        if out.result and rec is not None:
            rec.attempt -= 1  # BUG: the delivery is "uncounted"
        return out


class RetryKeepsAttemptQueue(Queue[T]):
    """MUTANT: a retried delivery does not count: ``retry`` takes its attempt back.

    The bug: "the consumer gave it back, so it was not really a delivery" sounds reasonable and
    breaks two things. ``AttemptsCount``: the next delivery repeats the attempt number, so two
    deliveries carry the same attempt; and receipts: the retried delivery's receipt
    ``(id, attempt)`` names the redelivery too, so the consumer that gave the message back can
    still delete it from under its new owner. It also makes a message that is always retried
    immortal under ``max_receives``.

    Why the checks see it: after a retry the queue shows the message at the old attempt minus
    one; ``AttemptsCount``'s step half (attempts never go down) fails on the next check.
    """

    machine_class = RetryKeepsAttemptMachine


class DeadLetterOffByOneMachine(Machine[T]):
    """The machine of :class:`DeadLetterOffByOneQueue`."""

    def dies(self, rec: Record[T]) -> bool:
        max_receives = self.max_receives
        return max_receives is not None and rec.attempt > max_receives  # BUG: > for >=


class DeadLetterOffByOneQueue(Queue[T]):
    """MUTANT: a message is dead-lettered after ``max_receives + 1`` deliveries, not after
    ``max_receives``.

    The bug: ``attempt > max_receives`` where the policy says ``attempt >= max_receives``: a
    poison message gets one delivery more than configured (with ``max_receives=1``, "deliver at
    most once", it is delivered twice). Off-by-one errors in a redrive policy are classic
    because both readings of "after N receives" sound right; the contract fixes one.

    Why the checks see it: the lockstep test releases a message that has had ``max_receives``
    deliveries; the spec dead-letters it, this queue makes it visible again, and the
    comparison of the observable state fails.
    """

    machine_class = DeadLetterOffByOneMachine


class ExtendAddsMachine(Machine[T]):
    """The machine of :class:`ExtendAddsQueue`."""

    def extend(self, rec: Record[T], t: float, now: float) -> None:
        old = rec.deadline if rec.deadline is not None else now
        rec.deadline = old + t  # BUG: not now + t
        self.arm_deadline(rec)


class ExtendAddsQueue(Queue[T]):
    """MUTANT: ``change_visibility(receipt, t)`` adds ``t`` to the old deadline.

    The bug: SQS's ChangeMessageVisibility sets the timeout *from now*; adding to the old
    deadline gives a consumer that extends every few seconds an ever-growing lease (and one that
    extends after its deadline passed a deadline still in the past). The contract says "from
    now, not added", because that is what a heartbeat needs.

    Why the checks see it: the lockstep test compares in-flight deadlines after every step; the
    first extension of a delivery whose deadline is not ``now`` differs.
    """

    machine_class = ExtendAddsMachine


# =============================================================================================
# Delays, batches and purge (contract section 2)
# =============================================================================================


class EarlyDelayMachine(Machine[T]):
    """The machine of :class:`EarlyDelayQueue`."""

    TICK: Final = 0.25

    def arm_delay(self, rec: Record[T]) -> None:
        self.push_timer(Timer(rec.visible_at - self.TICK, rec.seq, rec.id, DELAY))  # BUG: - TICK


class EarlyDelayQueue(Queue[T]):
    """MUTANT: a delayed message becomes visible one tick (``TICK`` seconds) before its
    ``visible_at``.

    The bug: the delay's timer is armed for ``visible_at - TICK``, the kind of off-by-one a
    timer wheel with a coarse tick makes ("fire in the tick that contains the due time", taken
    from the start of that tick). The message's ``visible_at`` is right, so a snapshot of the
    delayed message looks right; it only becomes deliverable too soon. The contract's
    ``DelayHonoured``: a message is never visible or delivered before its ``visible_at``. (A
    deadline that fired early would break at-least-once less visibly; a delay firing early
    breaks every "retry in 30 seconds" built on it.)

    Why the checks see it: the lockstep test sends with a delay of 1 and moves the clock a
    quarter short of it ("before" a timer): the queue's sweep makes the message visible, and
    the lockstep's ``DelayHonoured`` invariant (checked on the queue's state after every step)
    finds it visible at 0.75, before its ``visible_at`` 1.0.
    """

    machine_class = EarlyDelayMachine
    TICK: Final = EarlyDelayMachine.TICK


class SeparateTimerOrderMachine(Machine[T]):
    """The machine of :class:`SeparateTimerOrderQueue`."""

    def arm_delay(self, rec: Record[T]) -> None:
        # BUG: every delay sorts before every deadline (seqs are > 0): two orders, not one.
        self.push_timer(Timer(rec.visible_at, rec.seq - 2**62, rec.id, DELAY))


class SeparateTimerOrderQueue(Queue[T]):
    """MUTANT: delays and deadlines are ordered separately; at equal due times every delay
    fires before every deadline.

    The bug: what a sweeper with two heaps does when it drains the delay heap first, then the
    deadline heap (here: delays sort before any deadline at the same due time, each kind in its
    own start order). Each kind is in order; together they are not. The contract has one order
    for both kinds: by due time, ties in the order the timers were started. So a message whose
    delivery timed out at t and one whose delay ended at t re-enter the visible FIFO in the
    wrong order when the receive came first, and ``FifoVisible`` (ordered by the time each
    message re-entered) disagrees with the spec.

    Why the checks see it: the lockstep test receives a (deadline 1), then sends b with a delay
    of 1 (due 1 too, its timer started after a's) and advances to 1: the spec's visible FIFO
    is a, b; the queue's is b, a; the comparison of the observable state fails.
    """

    machine_class = SeparateTimerOrderMachine


class PurgeMissesDelayedMachine(Machine[T]):
    """The machine of :class:`PurgeMissesDelayedQueue`."""

    def purge(self, now: float) -> Outcome:
        if self.before_step is not None:
            self.before_step(("purge", (), self.active(), now))
        count = 0
        for group in (self.visible, self.in_flight):  # BUG: self.delayed is forgotten
            for rec in group.values():
                rec.deadline = None
            self.cancelled.update(group)
            count += len(group)
            group.clear()
        return Outcome(ACTED, count, 0, count, None, ())


class PurgeMissesDelayedQueue(Queue[T]):
    """MUTANT: ``purge`` cancels the visible and in-flight messages and forgets the delayed ones.

    The bug: purge written before delays existed ("everything in the FIFO and everything
    handed out"), not updated when a third active state came: the delayed messages survive the
    purge, hold their slots, and appear later, after the user was told the queue was emptied.
    The contract: every active message (``DELAYED``, ``VISIBLE``, ``IN_FLIGHT``) becomes
    ``CANCELLED``, and purge returns how many.

    Why the checks see it: the lockstep test purges a queue holding a delayed message; the spec
    counts it and this queue does not, so the purge rule's comparison of the counts fails.
    """

    machine_class = PurgeMissesDelayedMachine


class PrefixSendBatchMachine(Machine[T]):
    """The machine of :class:`PrefixSendBatchQueue`."""

    def accepts(self, n: int) -> int:
        cap = self.capacity
        if cap is None:
            return n
        return max(0, min(n, cap - self.active()))  # BUG: what fits, not all or none


class PrefixSendBatchQueue(Queue[T]):
    """MUTANT: a ``send_batch`` that does not fit accepts the entries that do (a prefix).

    The bug: "send as many as there is room for" is SQS's partial batch success carried over to
    a bounded queue: the caller asked for all or none, gets some, and (returning only the ids it
    accepted) must now work out which of its messages are in the queue and resend the rest,
    racing other senders for the room. The contract's ``send_batch`` is all or none (and
    ``BatchAtomic``: a rejected batch changes nothing).

    Why the checks see it: the lockstep test sends a batch of two to a queue with one free
    slot; the spec rejects it, this queue accepts the first entry and returns one id, and the
    send_batch rule's check that every entry got an id fails.
    """

    machine_class = PrefixSendBatchMachine


class SplitReceiveBatchMachine(WindowedMachine[T]):
    """The machine of :class:`SplitReceiveBatchQueue`."""

    def deliver_batch(self, n: int, deadline: float | None) -> list[Record[T]]:
        recs = [self.deliver(deadline)]
        while len(recs) < n:
            self.window()  # BUG: the window between two deliveries of one batch
            if not self.visible:
                break
            recs.append(self.deliver(deadline))
        return recs


class SplitReceiveBatchQueue(_Windowed[T]):
    """MUTANT: ``receive_batch`` is a loop of single receives that drops the lock between them.

    The bug: a batch built from the single operation, releasing the lock after each message
    ("so other consumers are not held up"). Each delivery is atomic; the batch is not: another
    consumer can receive in the window, so the batch comes back with a hole in its FIFO run (a,
    c while b went elsewhere), which no order of whole operations produces. The contract's
    ``BatchAtomic``: no other operation interleaves with a batch's entries. TLC's teaching model
    ``tla/QueueBatchSplit.tla`` finds the same interleaving.

    ``between`` (a keyword argument of the constructor, as for :class:`SplitReceiveQueue`) runs
    in each window with the lock released, so a test places another consumer's receive there
    deterministically.

    Why the checks see it: single-threaded, nothing runs in the windows and every sequential
    check passes; the linearizability checker, with a batch as one operation, rejects the
    concurrent history.
    """

    machine_class = SplitReceiveBatchMachine


class DeleteBatchStopsMachine(Machine[T]):
    """The machine of :class:`DeleteBatchStopsQueue`."""

    def to_delete_batch(self, receipts: Sequence[Receipt]) -> list[Record[T] | None]:
        recs: list[Record[T] | None] = []
        for receipt in receipts:
            if recs and recs[-1] is None:
                recs.append(None)  # BUG: gave up at the first receipt that was not live
                continue
            rec = self.to_delete(receipt)
            recs.append(None if rec is not None and any(rec is r for r in recs) else rec)
        return recs


class DeleteBatchStopsQueue(Queue[T]):
    """MUTANT: ``delete_batch`` stops at the first receipt that is not live: every receipt
    after it gives ``False`` and deletes nothing.

    The bug: a loop that breaks on the first failure ("the batch failed") where each entry is
    its own delete. One stale receipt in a batch then leaves the live deliveries behind it
    undeleted, to be redelivered when their timeouts expire: duplicates nobody asked for. The
    contract: each receipt as ``delete``, in order, in one step; the results are independent.

    Why the checks see it: the lockstep test deletes a batch (a, a, b) with both live: the
    spec says (True, False, True), this queue (True, False, False), and the delete_batch
    rule's comparison of the results fails.
    """

    machine_class = DeleteBatchStopsMachine


# =============================================================================================
# Held out: bugs that survived every check until the controlled scheduler
# =============================================================================================


class DeadlineFirstConditions(Conditions):
    """The conditions of :class:`DeadlineFirstSendQueue`."""

    def wait(self, cond: threading.Condition, deadline: float | None) -> None:
        super().wait(cond, deadline)
        if cond is self.not_full and deadline is not None and self.clock.now() >= deadline:
            raise Full("no room within the timeout")  # BUG: before looking for the room


class DeadlineFirstSendQueue(Queue[T]):
    """MUTANT (held out): a timed ``send`` that wakes checks its deadline before it
    re-checks for room.

    The bug: after each wait on ``not_full`` the sender asks "has my time run out?" first and
    raises :class:`Full` if so, even when the wakeup brought the room. In CPython a timed wait
    whose timeout has passed stays in the condition's list of waiters until it has the lock
    back, so the one notify of a freed slot can reach it: the timed sender then raises Full
    beside a free slot, the notify used up, while an untimed sender sleeps on. The real loop
    tests the room first and the deadline only when there is none.

    Why the checks see it: the controlled scheduler's ``timed_send`` program (a full queue, a
    timed and an untimed sender, a consumer freeing the slot, the clock passing the timed
    sender's deadline) finds the schedule where the notify reaches the timed-out sender; the
    untimed one ends asleep with no timer beside the room: LOST WAKEUP.
    """

    conditions_class = DeadlineFirstConditions


class OnlyWhenEmptySweeperMachine(Machine[T]):
    """The machine of :class:`OnlyWhenEmptySweeperQueue`."""

    def expire(self, rec: Record[T], now: float) -> tuple[int, int]:
        was_empty = not self.visible
        receivers, senders = self.release(rec, now)
        if was_empty:
            return (receivers, senders)
        return (0, senders)  # BUG: not once per message released


class OnlyWhenEmptySweeperQueue(Queue[T]):
    """MUTANT (held out): expiry notifies ``not_empty`` only when nothing was visible
    before the release.

    The bug: "a receiver waits only when the queue is empty, so only the first message made
    visible needs a notify". But a sweep can release several deliveries in one step, and each
    waiting receiver needs its own notify: the first release wakes one receiver, the second
    (the queue no longer empty) wakes nobody, and the second receiver sleeps beside a visible
    message. It survived pytest and TLC alike, because every ``Bug = "none"`` threaded model had
    capacity 1 or one id: two deliveries expiring in one sweep never happened there.

    Why the checks see it: the controlled scheduler's ``expiry_two_consumers`` program
    (capacity 2, two deliveries expiring together, two receivers waiting) ends with one
    receiver asleep with no timer beside a visible message: LOST WAKEUP.
    """

    machine_class = OnlyWhenEmptySweeperMachine


class UnsweptIsDeadMachine(Machine[T]):
    """The machine of :class:`UnsweptIsDeadQueue`: ``now`` is read through ``clock``, set by
    its queue (a machine has no clock of its own: that is the bug's shape)."""

    clock: Clock

    def live(self, receipt: Receipt) -> Record[T] | None:
        rec = super().live(receipt)
        if rec is not None and rec.deadline is not None and rec.deadline <= self.clock.now():
            return None  # BUG: passed but not swept is still in flight, and live
        return rec


class UnsweptIsDeadQueue(_Wired[T]):
    """MUTANT (held out): a delivery whose deadline has passed but which the sweep
    has not yet released is treated as expired: its receipt is no longer live.

    The bug: the guard compares the deadline with the clock ("it has timed out, so it is
    gone") instead of asking whether the delivery is still in flight. The contract's expiry is
    a transition (the sweep): until it runs, the delivery is in flight and its receipt live, so
    a heartbeat (``change_visibility``) that comes late but before the sweep still extends it.
    Here it says ``False`` and leaves the message in flight, where no receive can take it until
    the sweep comes: the consumer was told its work is gone while nobody else can have it.

    Why the checks see it: the controlled scheduler's ``unswept_extend`` program runs the
    consumer's ``change_visibility`` after the clock passed the deadline and before the
    sweeper ran: it answers ``False``, so the message must have expired and be visible, and the
    consumer's next ``receive(block=False)`` raises Empty: no order of the spec gives both
    (NOT LINEARIZABLE). With real threads this needed interleaving luck (5 runs in 10).
    """

    machine_class = UnsweptIsDeadMachine

    def wire(self, machine: Machine[T]) -> None:
        assert isinstance(machine, UnsweptIsDeadMachine)
        machine.clock = self.clock


class OneWakeSendBatchMachine(Machine[T]):
    """The machine of :class:`OneWakeSendBatchQueue`."""

    def send_batch(
        self, now: float, ids: Sequence[str | None], bodies: Sequence[T], *args: Any, **kw: Any
    ) -> Outcome | Blocked:
        out = super().send_batch(now, ids, bodies, *args, **kw)
        if isinstance(out, Outcome):
            return out._replace(receivers=min(1, out.receivers))  # BUG: one, however many
        return out


class OneWakeSendBatchQueue(Queue[T]):
    """MUTANT: a ``send_batch`` wakes one blocked receiver, not one per message.

    The bug: the batch's step reports one deliverable message, as a single send does (its outcome's
    ``receivers`` is 1), so the driver notifies one waiter. Two receivers blocked on an empty queue,
    a batch of two arrives: one receiver gets a message, the other sleeps on with a visible message
    in the queue (a lost wakeup, in batches only; every state-based check passes: the state is
    right).


    Why the checks see it: the controlled scheduler's ``batch_wakes_all`` program
    (``test_schedule_finds_every_concurrency_mutant``) reports a LOST WAKEUP with no
    preemption: the run ends with a receiver asleep while a message is visible.
    """

    machine_class = OneWakeSendBatchMachine


class CompactDropsDelaysMachine(Machine[T]):
    """The machine of :class:`CompactDropsDelaysQueue`."""

    def live_timers(self) -> Iterator[Timer]:
        for r in self.in_flight.values():
            if r.deadline is not None:
                yield Timer(r.deadline, r.seq, r.id, r.attempt)
        # BUG: the delayed messages' timers are left out of the rebuilt heap


class CompactDropsDelaysQueue(Queue[T]):
    """MUTANT: the timer heap's rebuild keeps the deadlines and drops the delays.

    The bug: ``Machine.compact`` (run when stale entries outnumber the live ones, e.g. after many
    ``change_visibility`` calls) rebuilds the heap from ``live_timers``, which here yields only
    the in-flight deadlines. A delayed message whose entry is rebuilt away has no timer left:
    it stays ``DELAYED`` for ever (capacity held, never delivered). Only a delay and enough
    stale entries at once reach it.

    Why the checks see it: the lockstep witness (``test_mutant_fails_the_lockstep_checks``)
    sends a delayed message, extends one delivery until the heap is rebuilt, and moves the
    clock past the delay: ``observable_state_matches_spec`` has it visible in the spec and
    delayed in the queue.
    """

    machine_class = CompactDropsDelaysMachine


_ALL: tuple[type[Queue[Any]], ...] = (
    PlainBlockingQueue,
    SplitReceiveQueue,
    UnarmedDeadlineQueue,
    DeleteByIdQueue,
    UncheckedAttemptQueue,
    ReusedReceiptQueue,
    ForgetfulSweeperQueue,
    PollingSweeperQueue,
    CapacityFreedOnReceiveQueue,
    ExpiredToHeadQueue,
    SwapRemoveCancelQueue,
    RetryKeepsAttemptQueue,
    DeadLetterOffByOneQueue,
    ExtendAddsQueue,
    EarlyDelayQueue,
    SeparateTimerOrderQueue,
    PurgeMissesDelayedQueue,
    PrefixSendBatchQueue,
    SplitReceiveBatchQueue,
    DeleteBatchStopsQueue,
    DeadlineFirstSendQueue,
    OnlyWhenEmptySweeperQueue,
    UnsweptIsDeadQueue,
    OneWakeSendBatchQueue,
    CompactDropsDelaysQueue,
)

#: Every mutant by name (its class name), in the order of the module docstring.
MUTANTS: Final[Mapping[str, type[Queue[Any]]]] = {cls.__name__: cls for cls in _ALL}


# =============================================================================================
# FIFO queues (contract section 2b): message groups and deduplication
# =============================================================================================


class TailReleaseFifoMachine(FifoMachine[T]):
    """The machine of :class:`TailReleaseFifoQueue`."""

    def requeue(self, rec: Record[T]) -> None:
        self.visible[rec.id] = rec  # BUG: left at the tail, behind its group's later messages


class TailReleaseFifoQueue(FifoQueue[T]):
    """MUTANT (FIFO): a released message goes to the tail of the queue (so of its group).

    The bug: the standard queue's release, kept on a FIFO queue. A message given back (retry,
    ``change_visibility(0)``, expiry) is delivered after the later messages of its group, so a
    consumer that failed on message 1 next sees message 2: group order is lost exactly when
    something went wrong, which is when order matters most.

    Why the checks see it: ``GroupOrder``: after a retry of a group's head, the next receive of
    that group delivers a later message of the group before the released one.
    """

    machine_class = TailReleaseFifoMachine


class LockBlindFifoMachine(FifoMachine[T]):
    """The machine of :class:`LockBlindFifoQueue`."""

    def locked(self) -> set[str]:
        return set()  # BUG: no group is ever locked


class LockBlindFifoQueue(FifoQueue[T]):
    """MUTANT (FIFO): a receive ignores the group lock.

    The bug: the receive scan takes the first visible message whatever its group, so two
    consumers hold two messages of one group at once and may finish them out of order: the
    group's order is gone, as on a standard queue.

    Why the checks see it: ``GroupOrder``: a receive delivers a message of a group that was
    locked when it began.
    """

    machine_class = LockBlindFifoMachine


class InterleavedBatchFifoMachine(FifoMachine[T]):
    """The machine of :class:`InterleavedBatchFifoQueue`."""

    def heads(self, n: int) -> list[Record[T]]:
        locked = self.locked()
        # BUG: send order across groups, not group by group.
        return [r for r in self.visible.values() if getattr(r, "group", None) not in locked][:n]


class InterleavedBatchFifoQueue(FifoQueue[T]):
    """MUTANT (FIFO): a batch takes the deliverable messages in send order across groups.

    The bug: ``receive_batch`` takes from a second group before it has exhausted the first
    (b1 between a1 and a2), where SQS takes the first group's visible messages, then the next
    group's. Each group's own order is kept, so it looks harmless; but the batch holds more
    groups locked than it needs, and its order is not the contract's.

    Why the checks see it: ``GroupOrder`` (a batch's groups are contiguous, each but the last
    exhausted): a batch over two groups returns them interleaved.
    """

    machine_class = InterleavedBatchFifoMachine


class SlidingDedupFifoMachine(FifoMachine[T]):
    """The machine of :class:`SlidingDedupFifoQueue`."""

    def duplicate(self, dedup_id: str, now: float) -> str | None:
        earlier = super().duplicate(dedup_id, now)
        if earlier is not None:
            self.dedup[dedup_id] = (earlier, now)  # BUG: a duplicate extends the window
        return earlier


class SlidingDedupFifoQueue(FifoQueue[T]):
    """MUTANT (FIFO): the dedup window is measured from the latest duplicate.

    The bug: each duplicate restarts the window, so a producer that keeps retrying within the
    interval is deduplicated forever, and a send after the interval (measured from the one
    acceptance, as SQS does) is wrongly dropped as a duplicate: a lost message.

    Why the checks see it: ``DedupWindow`` (its edge: the same ``dedup_id`` is new again
    ``dedup_interval`` after the acceptance, whatever duplicates came in between).
    """

    machine_class = SlidingDedupFifoMachine


class RejectedDedupFifoMachine(FifoMachine[T]):
    """The machine of :class:`RejectedDedupFifoQueue`."""

    def send(  # type: ignore[override]
        self, now: float, id: str | None, body: T, group: str, dedup_id: str | None, **kw: bool
    ) -> Outcome | Blocked:
        rejected = True  # if the send raises (the id taken), as if refused
        try:
            out = super().send(now, id, body, group, dedup_id, **kw)
            rejected = out is NO_ROOM or out is SHUT
            return out
        finally:
            if rejected and dedup_id is not None:
                self.remember(dedup_id, id or "rejected", now)  # BUG: records a rejected send


class RejectedDedupFifoQueue(FifoQueue[T]):
    """MUTANT (FIFO): a rejected send records its dedup id.

    The bug: the dedup id is remembered even when the send is refused (queue full, id taken),
    so the producer's retry of that send, once there is room, is "deduplicated" against a
    message that was never accepted: it is dropped, and the duplicate's answer names an id the
    queue never had. A lost message, from the mechanism meant to prevent duplicates.

    Why the checks see it: ``DedupWindow`` (its state half: every dedup record names an
    accepted message): the retry of a send rejected as full gets the rejected id back.
    """

    machine_class = RejectedDedupFifoMachine


class SilentUnlockFifoMachine(FifoMachine[T]):
    """The machine of :class:`SilentUnlockFifoQueue`."""

    def finish(self, rec: Record[T]) -> int:
        del self.in_flight[rec.id]
        rec.deadline = None
        self.done.add(rec.id)
        return 0  # BUG: not self.left_flight(rec): the unlocked group wakes nobody


class SilentUnlockFifoQueue(FifoQueue[T]):
    """MUTANT (FIFO): a delete unlocks the group without waking a receiver.

    The bug: a lost wakeup. A receiver blocked while the only visible message's group is locked
    waits on ``not_empty``; the delete of the group's in-flight message unlocks it, making that
    message deliverable, and tells nobody (as a standard queue's delete would: it frees a slot,
    not a message). The receiver sleeps beside a deliverable message. TLC's FIFO lost-wakeup
    model shows the same interleaving.

    Why the checks see it: the state-based checks are blind to it; the ``lost wakeup (FIFO)``
    check blocks a receiver on a locked group, deletes the group's in-flight message, and asks
    whether the receiver was woken.
    """

    machine_class = SilentUnlockFifoMachine


class PruneLiveDedupFifoMachine(FifoMachine[T]):
    """The machine of :class:`PruneLiveDedupFifoQueue`."""

    def remember(self, dedup_id: str, id: str, now: float) -> None:
        dedup = self.dedup
        dedup[dedup_id] = (id, now)
        if len(dedup) > 64 and len(dedup) & (len(dedup) - 1) == 0:
            # BUG: drops the records still inside their window, keeps the expired ones
            for k in [k for k, (_, t) in dedup.items() if now - t < self.dedup_interval]:
                del dedup[k]


class PruneLiveDedupFifoQueue(FifoQueue[T]):
    """MUTANT (FIFO): the dedup records' pruning drops the live records.

    The bug: past 64 records, each time their count reaches a power of two, the records whose
    window has passed should be dropped; the comparison is turned round, so the records still
    inside their window are dropped instead. After the 128th distinct dedup id, a producer's
    retry of any of them within the interval is accepted as a new message: a duplicate.

    Why the checks see it: ``DedupWindow`` (its pruning half): 128 sends with distinct dedup
    ids within the window, then a retry of the first, which must be a duplicate.
    """

    machine_class = PruneLiveDedupFifoMachine


class UncheckedWaitFifoMachine(FifoMachine[T]):
    """The machine of :class:`UncheckedWaitFifoQueue`."""

    def rechecked(self, dedup_id: str, now: float) -> str | None:
        return None  # BUG: a send that waited for room is never a duplicate


class UncheckedWaitFifoQueue(FifoQueue[T]):
    """MUTANT (FIFO): a send that waited for room skips the dedup re-check.

    The bug: the duplicate test is made once, before the send waits for room; while it waits
    another sender may accept the same ``dedup_id``. Two producers retrying one message into a
    full queue both wait; when room comes, both are accepted: a duplicate the dedup window was
    there to prevent.

    Why the checks see it: ``DedupWindow`` (its waiting half): two senders with one dedup id
    block on a full queue of capacity 1; a consumer frees the slot twice; the second sender
    must get the first one's id back, not a new message.
    """

    machine_class = UncheckedWaitFifoMachine


#: Every FIFO mutant by name, in the order of the module docstring (apart from :data:`MUTANTS`:
#: they take ``impl.FifoQueue``'s constructor and API).
FIFO_MUTANTS: Final[Mapping[str, type[FifoQueue[Any]]]] = {
    cls.__name__: cls
    for cls in (
        TailReleaseFifoQueue,
        LockBlindFifoQueue,
        InterleavedBatchFifoQueue,
        SlidingDedupFifoQueue,
        RejectedDedupFifoQueue,
        SilentUnlockFifoQueue,
        PruneLiveDedupFifoQueue,
        UncheckedWaitFifoQueue,
    )
}


# =============================================================================================
# Systems of queues (contract section 7): the dead-letter move, the lock order, retention, redrive
# =============================================================================================
#
# Each of these is a queue of a *system* (``dead_letter=``): its bug is in a step that spans
# two queues, so a test builds the whole system from the mutant's class (the source and its
# target, or the dead-letter queue and its destination). They are kept apart in
# :data:`SYSTEM_MUTANTS`: the single-queue checks of ``test_mutants.py`` never meet their bug.
# A step across two queues has two halves (one per queue, ``Machine.release`` +
# ``Machine.move_in``, ``Machine.redrive_out`` + ``Machine.accept_moved``), so a system mutant
# may override the two halves of its one broken step; ``model_tests/tests/test_system_mutants.py``
# runs the check that catches each, and the same check on ``impl.Queue``.


class TwoStepMoveMachine(Machine[T]):
    """The machine of :class:`TwoStepMoveQueue`: a dying release only removes; the add is
    left for a step of its own."""

    def release(self, rec: Record[T], now: float) -> tuple[int, int]:
        target, self.target = self.target, None
        try:
            wake = super().release(rec, now)  # BUG: step 1, DEAD here and not yet in the target
        finally:
            self.target = target
        if target is not None and self.dead and self.dead[-1] is rec:
            self.unmoved.append(rec)
        return wake

    @property
    def unmoved(self) -> list[Record[T]]:
        if "_unmoved" not in vars(self):
            vars(self)["_unmoved"] = []
        got: list[Record[T]] = vars(self)["_unmoved"]
        return got


class TwoStepMoveQueue(Queue[T]):
    """MUTANT (system): dead-lettering is two steps, remove from the source, then add to the
    target, the second reading the clock again.

    The bug: the obvious way to write a move: ``source.remove(m)`` and then
    ``target.add(m)``. Between the two the message is in neither queue; whatever fails there
    (here the clock read that stamps the add, any exception, a crash) leaves it DEAD in the
    source, pointing at a target that never got it: lost, although the caller saw an
    exception and was promised "all or nothing". ``tla/QueueSystem.tla``'s two-step teaching
    model is the same bug.

    Why the checks see it: ``fault_matrix_of_moves`` (``test_system_mutants.py``; the fault
    matrix of moves, ``model_tests.fault_matrix.check_move_faults``) fails the
    clock's second read inside a dying ``retry`` or ``sweep``: the call raises, but the source
    has changed (the message is DEAD there) and ``nothing_lost`` fails on the snapshots
    (a departed message that no queue holds). Without a fault both steps run and every
    state-based check passes.
    """

    machine_class = TwoStepMoveMachine

    def retry(self, receipt: Receipt) -> bool:
        ok = super().retry(receipt)
        self.add_moved()
        return ok

    def change_visibility(self, receipt: Receipt, timeout: float) -> bool:
        ok = super().change_visibility(receipt, timeout)
        self.add_moved()
        return ok

    def sweep(self) -> None:
        super().sweep()
        self.add_moved()

    def add_moved(self) -> None:
        """Step 2 of the move: the add into the target, a step of its own."""
        machine = self.machine
        target = self.dead_letter
        assert isinstance(machine, TwoStepMoveMachine) and target is not None
        with target.mutex, self.mutex:
            unmoved, machine.unmoved[:] = list(machine.unmoved), []
            if not unmoved:
                return
            now = self.clock.now()  # BUG: the add is a step of its own, which can fail here
            for rec in unmoved:
                receivers, due = target.machine.move_in(rec, now, weakref.ref(machine))
                target.machine.on_effect(Effect(target.machine, receivers, 0, due))


class OppositeLockOrderMachine(Machine[T]):
    """The machine of :class:`OppositeLockOrderQueue`."""

    def sweep_queues(self) -> list[Machine[T]]:
        # BUG: the reverse of lock order: this queue first, then its target (and the rest).
        return super().sweep_queues()[::-1]


class OppositeLockOrderQueue(Queue[T]):
    """MUTANT (system): a source queue takes its own lock before its dead-letter target's.

    The bug: "lock the queue you work on, then the one you move into" reads naturally, and a
    source's sweeper does it; but a redrive works the other way round (it holds the
    dead-letter queue, then moves into the source). A sweeper dead-lettering from A into B
    while a redrive moves from B into A then holds A and waits for B while the redrive holds
    B and waits for A: a deadlock, the textbook one (and ``tla/``'s opposite-order teaching
    model). Contract section 7.8 fixes one order for every two-lock step: creation order,
    the target first.

    Why the checks see it: ``scheduler_sweeper_vs_redrive`` (``test_system_mutants.py`` and
    ``test_schedule_system.py``): the controlled scheduler's ``sweeper_vs_redrive`` program
    (``model_tests/schedule/programs_system.py``) finds, with one
    preemption, the schedule where the sweeper holds A's lock and the redrive B's: DEADLOCK.
    """

    machine_class = OppositeLockOrderMachine


class RetentionFromMoveMachine(Machine[T]):
    """The machine of :class:`RetentionFromMoveQueue`."""

    def enqueue_time_of_move(self, rec: Record[T], now: float) -> float:
        return now  # BUG: a standard queue keeps the original enqueue time (AWS)


class RetentionFromMoveQueue(Queue[T]):
    """MUTANT (system): a standard dead-letter queue counts a moved-in message's retention
    from the move, not from the message's original enqueue time.

    The bug: "the message arrived in the dead-letter queue now, so its clock starts now"
    sounds right, and is what AWS does for a FIFO queue; for a standard queue AWS documents
    the opposite ("the expiration of a message is always based on its original enqueue
    timestamp"), so a message that spent most of its retention failing in the source may
    expire in its dead-letter queue sooner than the queue's retention suggests. Operators
    who size a DLQ's retention rely on that; this queue keeps messages longer than SQS would.

    Why the checks see it: ``retention_counts_from_the_original_enqueue``
    (``test_system_mutants.py``): a message sent at 0 to a source with ``retention=10``,
    dead-lettered at 6 into a standard DLQ with ``retention=10``, must age out there at 10;
    this queue still holds it. The lockstep machine over a system
    (``model_tests.lockstep_system``) compares the same with ``spec.system`` when it draws
    such a run.
    """

    machine_class = RetentionFromMoveMachine


class RedriveKeepsMachine(Machine[T]):
    """The machine of :class:`RedriveKeepsQueue`: the two halves of a redrive move pass the
    old record along, and the destination's half keeps its attempt and enqueue time."""

    def redrive_out(self, rec: Record[T], to: object, new_id: str) -> int:
        senders = super().redrive_out(rec, to, new_id)
        dest = to() if isinstance(to, weakref.ref) else None
        if isinstance(dest, Machine):
            vars(dest)["_carried"] = rec
        return senders

    def accept_moved(
        self, id: str, body: T, group: str | None, now: float
    ) -> tuple[int, float | None]:
        wake = super().accept_moved(id, body, group, now)
        old: Record[T] | None = vars(self).pop("_carried", None)
        if old is not None:  # BUG: a redriven message is not a new one: nothing is reset
            self.visible[id].attempt, self.visible[id].enqueued_at = old.attempt, old.enqueued_at
        return wake


class RedriveKeepsQueue(Queue[T]):
    """MUTANT (system): a redrive moves a message back with its receive count and enqueue
    time, as if it had never left.

    The bug: "move it back" done as a move of the record, not as a new message. AWS: "all
    redriven messages are treated as new messages: they get a new messageID and
    enqueueTime" (and the receive count starts again). Kept, the attempt count is still
    ``max_receives``: the message that the operator fixed the consumer for dies again at its
    first failed delivery, straight back into the dead-letter queue; kept, the old enqueue
    time makes it age out early.

    Why the checks see it: ``redrive_resets_the_message`` (``test_system_mutants.py``): a
    redriven message's first delivery must be attempt 1 (here: ``max_receives + 1``); and the
    lockstep machine over a system (``model_tests.lockstep_system``), whose whole-state
    comparison after ``start_redrive`` finds the source's new message at the old attempt,
    not the spec's 0.
    """

    machine_class = RedriveKeepsMachine


# The plumbing of a system: each of these four (and :class:`WithdrawnKeptAsyncQueue`) is a
# one-line slip in the wakeups and timers around the steps, which every state-based check of
# the suite passed before its named check was written.


class SilentRedriveOutMachine(Machine[T]):
    """The machine of :class:`SilentRedriveOutQueue`."""

    def redrive_out(self, rec: Record[T], to: object, new_id: str) -> int:
        super().redrive_out(rec, to, new_id)
        return 0  # BUG: the slot the move frees wakes no sender


class SilentRedriveOutQueue(Queue[T]):
    """MUTANT (system): a redrive out of a bounded queue frees a slot and wakes no sender
    blocked on it.

    The bug: the redriven queue's half of a redrive move (``Machine.redrive_out``) says it
    enabled nobody, where it freed one slot (contract section 7: a moved message is terminal
    there, so it no longer counts against ``capacity``). A dead-letter queue is unbounded,
    but ``start_redrive(destination=...)`` moves the visible messages out of any queue: a
    producer blocked on a full queue sleeps beside the room the redrive made, a lost wakeup
    that every state-based check passes (the states are the spec's).

    Why the checks see it: ``redrive_wakes_a_blocked_sender`` (``test_system_mutants.py``):
    a sender blocks on a full queue of capacity 1; the queue's one message is redriven to
    another queue; the sender must be woken and its message accepted.
    """

    machine_class = SilentRedriveOutMachine


class CompactDropsTicksMachine(Machine[T]):
    """The machine of :class:`CompactDropsTicksQueue`."""

    def live_timers(self) -> Iterator[Timer]:
        # BUG: the rebuild forgets the running redrive task's tick
        return (t for t in super().live_timers() if t.attempt != TICK)


class CompactDropsTicksQueue(Queue[T]):
    """MUTANT (system): the timer heap's rebuild drops a running rate-limited redrive's tick.

    The bug: ``Machine.live_timers`` lists every kind of timer the rebuild keeps; leave out the
    redrive tick (the one kind that belongs to a task, not to a message) and the first
    compaction while a ``rate=`` task runs (stale deadlines outnumbering the live timers:
    repeated ``change_visibility``, say) takes the task's only tick away. Nothing fires it
    again: the task stays ``RUNNING`` forever with its scope unmoved (contract section 7: the
    k-th move is due at ``started_at + k / rate``).

    Why the checks see it: ``rate_limited_redrive_survives_compaction``
    (``test_system_mutants.py``): a ``rate=1`` task over three messages, a compaction forced
    by 40 extensions of another message, then the clock 10 s on: the task must have moved
    all three and completed.
    """

    machine_class = CompactDropsTicksMachine


class OneWakeDeadLetterMachine(Machine[T]):
    """The machine of :class:`OneWakeDeadLetterQueue`."""

    def moves(self) -> tuple[Effect, ...]:
        effects = super().moves()
        return effects[-1:]  # BUG: each move's wake overwrites the one before (keep them all)


class OneWakeDeadLetterQueue(Queue[T]):
    """MUTANT (system): two messages dead-lettered in one sweep wake one receiver of the
    dead-letter queue.

    The bug: each move of a releasing step into the target is an ``Effect`` of its outcome
    (``Outcome.elsewhere``: the receivers it enabled there), which the driver applies after
    the step; here the machine keeps only the last move's effect, each overwriting the one
    before instead of adding to it, so a sweep that moves two messages wakes
    one of two receivers blocked on the dead-letter queue. The other sleeps beside a
    visible message: a lost wakeup (the same arithmetic as :class:`OneWakeSendBatchQueue`,
    across two queues).

    Why the checks see it: ``scheduler_dead_letters_wake_every_receiver``
    (``test_system_mutants.py`` and ``test_schedule_system.py``): the controlled scheduler's
    ``dead_letters_wake_every_receiver`` program blocks two receivers on the dead-letter
    queue while two deliveries of the source, due together, die in one sweep: one receiver
    is STUCK.
    """

    machine_class = OneWakeDeadLetterMachine


class ExpiryDropsTimersMachine(Machine[T]):
    """The machine of :class:`ExpiryDropsTimersQueue`."""

    def still_current(
        self, due: list[tuple[Timer, Record[Any]]]
    ) -> list[tuple[Timer, Record[Any]]]:
        gone: set[str] = set()
        out = []
        for timer, rec in due:
            if rec.id in gone:
                continue
            out.append((timer, rec))
            if timer.attempt < 0 or timer.attempt > 0:  # BUG: not ``and self.dies(rec)``
                gone.add(rec.id)
        return out


class ExpiryDropsTimersQueue(Queue[T]):
    """MUTANT (system): an expiry that does not kill its message drops the message's other
    timers due in the same sweep.

    The bug: a message may have two timers due in one sweep (its deadline and its
    retention timer); once one of them makes it terminal, the later ones are stale and must
    neither fire nor be traced (``Machine.still_current``). Counting every expiry as
    terminal, not only one whose release dead-letters, also drops the retention timer of a
    message that an expiry merely made visible again: the retention timer was taken off the
    heap and is never put back, so the message outlives its retention for good (contract
    section 7: retention counts from the enqueue, whatever happens to the deliveries).

    Why the checks see it: ``retention_fires_beside_an_expiry`` (``test_system_mutants.py``):
    a message with ``retention=10`` received with a visibility timeout of 3, the clock moved
    to 10 in one step: one sweep expires the delivery and must then age the message out.
    """

    machine_class = ExpiryDropsTimersMachine


#: The system mutants by name (apart from :data:`MUTANTS`: each needs a system of queues).
SYSTEM_MUTANTS: Final[Mapping[str, type[Queue[Any]]]] = {
    cls.__name__: cls
    for cls in (
        TwoStepMoveQueue,
        OppositeLockOrderQueue,
        RetentionFromMoveQueue,
        RedriveKeepsQueue,
        SilentRedriveOutQueue,
        CompactDropsTicksQueue,
        OneWakeDeadLetterQueue,
        ExpiryDropsTimersQueue,
    )
}


# =============================================================================================
# The asyncio driver's waiter FIFO
# =============================================================================================


class WithdrawnKeptWaiters(Waiters):
    """The waiter FIFO of :class:`WithdrawnKeptAsyncQueue`."""

    def live(self) -> list[asyncio.Future[Any]]:
        return [f for f in self.futures if f.done()]  # BUG: ``not f.done()``


class WithdrawnKeptFutures(Futures):
    """The conditions of :class:`WithdrawnKeptAsyncQueue`: their FIFOs are broken ones."""

    waiters_class = WithdrawnKeptWaiters


class WithdrawnKeptAsyncQueue(AsyncQueue[T]):
    """MUTANT (asyncio): the waiter FIFO's compaction keeps the withdrawn futures and drops
    the live ones.

    The bug: a withdrawn waiter (a cancelled task, a timed-out wait) leaves its future in the
    condition's FIFO, skipped by every waker, until withdrawn ones are half of it; then the
    FIFO is compacted to its pending futures (``Waiters.live``). The test turned
    round keeps the done futures instead: every task still waiting loses its place, and the
    next send resolves nobody. The receiver sleeps beside a visible message
    (``NoSleepingWaiter``), though it was first in line; only a FIFO of more than 16
    withdrawn futures reaches the compaction, which is why the explorer's small programs
    pass it.

    Why the checks see it: ``waiter_compaction_keeps_the_live_waiters``
    (``model_tests/tests/test_async_mutants.py``): a receiver waits, twenty more wait and are
    cancelled (the nineteenth compacts the FIFO), then a send: the first receiver must get
    the message.
    """

    conditions_class = WithdrawnKeptFutures


#: The asyncio driver's mutants by name (they take ``impl.AsyncQueue``'s constructor and API).
ASYNC_MUTANTS: Final[Mapping[str, type[AsyncQueue[Any]]]] = {
    cls.__name__: cls for cls in (WithdrawnKeptAsyncQueue,)
}
