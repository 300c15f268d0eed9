"""The queue machine: one standard queue's state and the contract's steps, with no I/O at all.

``Machine`` is what ``impl.Queue`` and ``impl.AsyncQueue`` drive (``impl/threaded.py``,
``impl/aio.py``): a sans-I/O state machine, as h11's ``Connection`` is for HTTP. It holds no
lock, reads no clock, starts no thread and never waits. Each operation takes the time ``now``
(the driver read its clock) and arguments the driver has checked (types and ranges), and returns
an :class:`impl.outcome.Outcome` carrying its effects: whom to wake, the earliest timer it
armed, what it did to the other queues of its system. An operation that cannot go ahead returns
a :class:`impl.outcome.Blocked` (``NOTHING``, ``NO_ROOM``, ``SHUT``) and changes nothing; the
driver waits (or raises) and asks again.

Every operation is **prepare, then commit**. Prepare does all that can fail: the guards, the
errors the contract names (a taken id, a time that overflows), the system's id claim, and the
driver's two veto points, each called just before the commit when the driver set it:

- ``before_step(step)``: the trace step about to commit, as data (``impl.outcome.TraceStep``),
  for a trace sink, which may refuse it by raising;
- ``before_timer(due)``: the step arms a timer due at ``due``; the driver makes sure something
  fires it (starts its sweeper thread, aims its loop timer), which may fail.

Commit cannot fail. So a step takes full effect or none, whatever raises.

The steps, each the same idea three times (contract section 2):

==========================  ============================  ===================================
machine step                spec (``spec/transitions``)   TLA+ (``tla/Queue.tla``)
==========================  ============================  ===================================
:meth:`send`                ``send``                      ``Send(i, d)``
:meth:`send_batch`          ``send_batch``                ``SendBatch(b)``
:meth:`receive`             ``receive``                   ``Receive(v)``
:meth:`receive_batch`       ``receive_batch``             ``ReceiveBatch(n, v)``
:meth:`delete`              ``delete``                    ``Delete(r)``
:meth:`delete_batch`        ``delete_batch``              ``DeleteBatch(rs)``
:meth:`retry`               ``retry``                     ``Retry(r)``
:meth:`change_visibility`   ``change_visibility``         ``ChangeVisibility(r, t)``
:meth:`change_visibility_batch`  ``change_visibility_batch``  ``ChangeVisibilityBatch(cs)``
:meth:`cancel`              ``cancel``                    ``Cancel(i)``
:meth:`purge`               ``purge``                     ``Purge``
:meth:`fire_due`            ``expire``                    ``Expire`` (``Fire``, ``AgeOut``)
:meth:`release`             ``release``                   ``Release(s, i)``
==========================  ============================  ===================================

A FIFO queue (``impl/fifo_machine.py``, contract section 2b) is this machine with its ordering,
groups and deduplication: it overrides the four hooks marked *FIFO hook* below and has its own
sends. A queue with a dead-letter target, a retention or a redrive task (contract section 7)
belongs to a :class:`impl.system.System`, which holds the steps across queues: a release that
dies here moves the message into the target in the same step (``System.dead_letter``), a
redrive moves messages out of a dead-letter queue (``System.redrive_move``). This machine never
touches another queue's state.

The states of a message (contract section 1) are the groups a record is in: ``delayed``,
``visible`` (an ordered dict: the FIFO of visible messages, head first), ``in_flight`` (in
receive order), and the terminal ``done``, ``cancelled``, ``dead``, ``aged`` and ``moved``.
``accepted`` holds every id ever accepted: ``OneState`` says it is the disjoint union of them
all, ``IdsReserved`` that it only grows. ``timers`` is the one timer order (``impl/timers.py``).
The mutant catalogue (``model_tests/mutants.py``) breaks this machine one step at a time.
"""

from __future__ import annotations

import heapq
import itertools
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, TypeVar

from impl.errors import DuplicateIdError
from impl.message import (
    Message,
    Receipt,
    Snapshot,
    SnapshotMessage,
    Stats,
    new_object,
    set_message_attempt,
    set_message_body,
    set_message_id,
    set_message_receipt,
    set_receipt_attempt,
    set_receipt_id,
    set_receipt_queue,
)
from impl.outcome import (
    ACCEPTED,
    ACTED,
    DELIVERED,
    FIRED,
    NO_ROOM,
    NOTHING,
    SHUT,
    Blocked,
    Effect,
    Outcome,
    TraceStep,
    new_outcome,
)
from impl.timers import DELAY, RETENTION, TICK, Timer, Timers
from impl.validate import check_later

if TYPE_CHECKING:
    from impl.system import System

T = TypeVar("T")

#: The most entries, receipts or changes in one batch, and the most messages a receive_batch
#: asks for (SQS's limit).
MAX_BATCH: Final = 10

# Built without the dataclass __init__: see impl/message.py.
_new = new_object
_set_id = set_message_id
_set_body = set_message_body
_set_attempt = set_message_attempt
_set_receipt = set_message_receipt
_set_queue = set_receipt_queue
_set_rid = set_receipt_id
_set_rattempt = set_receipt_attempt

#: The outcomes every receipt operation ends in most often, made once.
_STALE: Final = Outcome(ACTED, False, 0, 0, None, ())
_DONE: Final = Outcome(ACTED, True, 0, 1, None, ())
_REQUEUED: Final = Outcome(ACTED, True, 1, 0, None, ())


def in_lock_order(machines: Iterable[Machine[Any]]) -> list[Machine[Any]]:
    """``machines`` without repeats, in the order their queues' locks are taken: creation
    order, the token's (contract section 7.8)."""
    unique = {id(m): m for m in machines}
    return sorted(unique.values(), key=lambda m: m.token)


def make_receipt(queue: int, id: str, attempt: int) -> Receipt:
    """``Receipt(queue, id, attempt)`` for values known to be well typed (equal, field for
    field, to one the dataclass makes)."""
    r: Receipt = _new(Receipt)
    _set_queue(r, queue)
    _set_rid(r, id)
    _set_rattempt(r, attempt)
    return r


class Record(Generic[T]):
    """The mutable record of one message, touched only by its machine. A caller of the queue
    never sees one: it gets :class:`impl.Message` values and snapshots."""

    __slots__ = (
        "attempt",
        "body",
        "deadline",
        "enqueued_at",
        "id",
        "kept",
        "receipt",
        "seq",
        "visible_at",
    )

    #: The receipt of the current (or last) delivery: while in flight, the live receipt.
    receipt: Receipt
    #: When a delayed message becomes visible (read only while it is delayed).
    visible_at: float

    def __init__(self, id: str, body: T, enqueued_at: float) -> None:
        self.id = id
        self.body = body
        self.attempt = 0
        #: Set only while in flight with a finite visibility timeout.
        self.deadline: float | None = None
        #: The place in the one timer order of its current (or last) delay or delivery.
        self.seq = 0
        #: When it entered this queue, as its retention counts it (contract section 7.4).
        self.enqueued_at = enqueued_at
        #: The place in the timer order of its retention timer here; 0: none.
        self.kept = 0

    def message(self) -> Message[T]:
        """The :class:`Message` of the current delivery (or, dead, of the last one)."""
        m: Message[T] = _new(Message)
        _set_id(m, self.id)
        _set_body(m, self.body)
        _set_attempt(m, self.attempt)
        _set_receipt(m, self.receipt)
        return m

    def snapshot(self) -> SnapshotMessage[T]:
        return SnapshotMessage(self.id, self.body, self.attempt, self.deadline)

    def delayed_snapshot(self) -> SnapshotMessage[T]:
        return SnapshotMessage(self.id, self.body, self.attempt, None, self.visible_at)


def _nobody() -> None:
    """The owner of a machine no driver has claimed."""


def _ignore(effect: Effect) -> None:
    """What a machine no driver has claimed does with an effect: nothing to wake."""


#: What :meth:`Machine.current` gives for a redrive tick still current (a tick has no record).
TICK_RECORD: Final[Record[Any]] = Record("redrive-tick", None, 0.0)

#: A due timer with what it stands for, as :meth:`Machine.due` hands them out.
Due = tuple[Timer, Record[Any]]


class Machine(Generic[T]):
    """One standard queue: its state (see the module docstring) and the contract's steps."""

    #: The word for what a receive waits for, in its errors ("nothing visible").
    ready_word: str = "visible"
    #: Whether a driver runs :meth:`check` after every step (the reference does).
    self_check: ClassVar[bool] = True

    def __init__(
        self,
        token: int,
        capacity: int | None = None,
        max_receives: int | None = None,
        retention: float | None = None,
    ) -> None:
        #: This queue's identity, carried by its receipts; and its name (contract 7.1).
        self.token = token
        self.name = f"queue-{token}"
        self.capacity = capacity
        self.max_receives = max_receives
        #: Seconds a message may stay here before it ages out (``None``: for ever).
        self.retention = retention
        self.visible: OrderedDict[str, Record[T]] = OrderedDict()
        self.in_flight: dict[str, Record[T]] = {}
        self.delayed: dict[str, Record[T]] = {}
        self.dead: list[Record[T]] = []
        self.done: set[str] = set()
        self.cancelled: set[str] = set()
        #: AGED_OUT ids, in the order they aged out.
        self.aged: list[str] = []
        #: MOVED ids: id -> (the destination's owner, its new id), in move order.
        self.moved: dict[str, tuple[object, str]] = {}
        self.accepted: set[str] = set()
        #: Where each message dead-lettered into this queue came from: id -> the source's owner.
        self.sources: dict[str, object] = {}
        self.timers = Timers()
        #: How many timers were started so far: the place of the last one in the timer order.
        self.started = 0
        #: The counter of generated ids (``msg-N``); a system's, once this queue is in one.
        self.counter = itertools.count(1)
        #: Running redrive tasks' ticks: the task's name -> the place of its current tick timer.
        self.ticks: dict[str, int] = {}
        #: ``shutdown()`` was called: sends are refused, receives drain what is deliverable.
        self.shut = False
        #: The system this queue is in (``None``: alone), and its dead-letter target's machine.
        self.system: System | None = None
        self.target: Machine[T] | None = None
        #: The driver's handle on this queue (a weak reference to it), opaque here, and what it
        #: does with the effects of another queue's step on this one (a move in): set by it.
        self.owner: Callable[[], Any] = _nobody
        self.on_effect: Callable[[Effect], None] = _ignore
        #: The driver's veto points (the module docstring); ``None``: nothing to ask.
        self.before_step: Callable[[TraceStep], None] | None = None
        self.before_timer: Callable[[float], None] | None = None
        # The effects on other queues of the step in progress (dead-letter moves), handed out
        # in its outcome.
        self._elsewhere: list[Effect] = []

    # =============================================================================================
    # Guards and queries: they change nothing
    # =============================================================================================

    def active(self) -> int:
        """Delayed + visible + in flight: what ``CapacityBound`` bounds."""
        return len(self.visible) + len(self.in_flight) + len(self.delayed)

    def has_room(self) -> bool:
        """``CapacityBound``'s test for one send: active < capacity (TLA+ ``HasRoom``)."""
        cap = self.capacity
        return cap is None or len(self.visible) + len(self.in_flight) + len(self.delayed) < cap

    def accepts(self, n: int) -> int:
        """How many of a batch's ``n`` new messages may be accepted now: all ``n`` if active +
        ``n`` <= capacity, else none (0): a batch is all or none (TLA+ ``RoomFor(n)``)."""
        cap = self.capacity
        if cap is None or len(self.visible) + len(self.in_flight) + len(self.delayed) + n <= cap:
            return n
        return 0

    def deliverable(self) -> bool:
        """*FIFO hook.* Whether a receive can deliver now (``spec`` ``State.deliverable()``)."""
        return bool(self.visible)

    def heads(self, n: int) -> list[Record[T]]:
        """*FIFO hook.* What ``receive_batch(n)`` delivers now, in order: the first ``n``
        visible messages (TLA+ ``Deliveries(s, n)``)."""
        return list(itertools.islice(self.visible.values(), n))

    def is_active(self, id: str) -> bool:
        return id in self.visible or id in self.in_flight or id in self.delayed

    def taken(self, id: str) -> bool:
        """Whether ``id`` was ever accepted here or, in a system, by any of its queues."""
        return id in self.accepted or (self.system is not None and self.system.taken(id))

    def check_unclaimed(self, id: str, label: str, waited: str = "") -> None:
        """``DuplicateIdError`` naming ``label`` if ``id`` is taken (``IdsReserved``); a send
        that ``waited`` (its name) says it was taken while it waited."""
        if id in self.accepted or (self.system is not None and self.system.taken(id)):
            if waited:
                raise DuplicateIdError(f"{label} {id!r} was accepted while this {waited} waited")
            if id in self.accepted:
                raise DuplicateIdError(f"{label} {id!r} was already accepted by this queue")
            raise DuplicateIdError(f"{label} {id!r} was already accepted by a queue of this system")

    def live(self, receipt: Receipt) -> Record[T] | None:
        """The in-flight record whose live receipt is ``receipt`` (queue, id and attempt), or
        ``None``: the guard of every receipt operation (TLA+ ``Live(r)``)."""
        rec = self.in_flight.get(receipt.id)
        if rec is None:
            return None
        live = rec.receipt
        if live is receipt or (live.attempt == receipt.attempt and live.queue == receipt.queue):
            return rec
        return None

    def to_delete(self, receipt: Receipt) -> Record[T] | None:
        """Delete's guard: the record a delete with ``receipt`` acts on, the live one. A step of
        its own because "an ack acts on the delivery its receipt names, not on the message" is
        the first seed's pitfall 3."""
        return self.live(receipt)

    def to_delete_batch(self, receipts: Sequence[Receipt]) -> list[Record[T] | None]:
        """Delete_batch's guard: for each receipt, in order, what its delete acts on, as if the
        deletes before it had been applied (a message already deleted by the batch: ``None``)."""
        recs: list[Record[T] | None] = []
        gone: set[str] = set()
        for receipt in receipts:
            rec = self.to_delete(receipt)
            if rec is not None:
                if rec.id in gone:
                    rec = None
                else:
                    gone.add(rec.id)
            recs.append(rec)
        return recs

    def dies(self, rec: Record[T]) -> bool:
        """The dead-letter policy, asked at each release: ``rec`` has had ``max_receives``
        deliveries (``spec.dead_letters_on_release``, TLA+ ``Dies``)."""
        return self.max_receives is not None and rec.attempt >= self.max_receives

    def receipt_of(self, rec: Record[T]) -> Receipt:
        """The receipt of ``rec``'s current delivery, ``(this queue, id, attempt)``: made once
        per delivery, the one :meth:`live` accepts (``OneLiveReceipt``)."""
        r: Receipt = _new(Receipt)
        _set_queue(r, self.token)
        _set_rid(r, rec.id)
        _set_rattempt(r, rec.attempt)
        return r

    def fresh_id(self) -> str:
        """A generated id no queue of this queue's system has taken: ``msg-`` and the counter
        (not uuid4, which cost a third of a cycle; ids need only be unique here), skipping
        any a caller chose first. Alone only: a system claims its ids (``System.claim``)."""
        while True:
            id = f"msg-{next(self.counter)}"
            if id not in self.accepted:
                return id

    def fresh_ids(self, ids: Sequence[str | None], given: Sequence[str]) -> list[str]:
        """Each ``None`` of ``ids`` replaced by a fresh id, none of them accepted or among
        ``given`` (the batch's own ids), in counter order. Alone only, as :meth:`fresh_id`."""
        taken = set(given)
        out = []
        for id in ids:
            if id is None:
                id = self.fresh_id()
                while id in taken:
                    id = self.fresh_id()
            out.append(id)
        return out

    # =============================================================================================
    # The operations: prepare, then commit
    # =============================================================================================

    def send(
        self, now: float, id: str | None, body: T, delay: float, *, waited: bool = False
    ) -> Outcome | Blocked:
        """Send one message (TLA+ ``Send(i, d)``; ``spec.send``): ``id`` (``None``: a fresh
        one) joins the visible tail, or is ``DELAYED`` until ``now + delay``.

        Before any waiting: ``DuplicateIdError`` for a taken ``id``, ``ValueError`` for a
        ``delay`` whose end overflows the clock. Then ``SHUT`` after shutdown, ``NO_ROOM`` when
        full (``waited``: the driver asks again after a wait for room). Outcome: ``ACCEPTED``,
        the id."""
        if id is not None:
            self.check_unclaimed(id, "id", "send" if waited else "")
        visible_at = check_later("delay", now, delay) if delay else now
        if self.shut:
            return SHUT
        if not self.has_room():
            return NO_ROOM
        # prepare
        system = self.system
        if system is not None:
            id = system.claim([id], ["id"])[0]
        elif id is None:
            id = self.fresh_id()
        if self.before_step is not None or self.before_timer is not None:
            try:
                due = self.kept_by(now, visible_at if delay else None)
                self.vet(("send", (id, delay), True, now), due)
            except BaseException:
                if system is not None:
                    system.unclaim([id])
                raise
        # commit
        self.accepted.add(id)
        rec = Record(id, body, now)
        if delay:
            self.add_delayed(rec, visible_at)
            receivers, due = 0, visible_at
        else:
            self.visible[id] = rec
            receivers, due = 1, None
        if self.retention is not None:
            due = self.retain(rec, due)
        return new_outcome(Outcome, (ACCEPTED, id, receivers, 0, due, ()))

    def send_batch(
        self,
        now: float,
        ids: Sequence[str | None],
        bodies: Sequence[T],
        delays: Sequence[float],
        *,
        waited: bool = False,
    ) -> Outcome | Blocked:
        """Send 1 to 10 messages in one atomic step, all or none (TLA+ ``SendBatch(b)``;
        ``spec.send_batch``): each as :meth:`send`, in order.

        ``DuplicateIdError`` naming ``entries[i].id`` for a taken id (the batch's own repeats
        are the driver's to refuse), ``ValueError`` for a delay that overflows; then ``SHUT``,
        or ``NO_ROOM`` unless all of them fit. Outcome: ``ACCEPTED``, the ids in order."""
        for i, id in enumerate(ids):
            if id is not None:
                self.check_unclaimed(id, f"entries[{i}].id", "send_batch" if waited else "")
        longest = max(delays)
        if longest:
            check_later("delay", now, longest)
        if self.shut:
            return SHUT
        k = self.accepts(len(ids))  # all of them, or none: the reference's ``accepts``
        if not k:
            return NO_ROOM
        ids, bodies, delays = ids[:k], bodies[:k], delays[:k]
        n = len(ids)
        # prepare
        system = self.system
        if system is not None:
            final = system.claim(ids, [f"entries[{i}].id" for i in range(n)])
        else:
            final = self.fresh_ids(ids, [id for id in ids if id is not None])
        visible_at: list[float] | None = None
        first: float | None = None  # the earliest delay's end
        if longest:
            visible_at = [
                check_later(f"entries[{i}].delay", now, d) if d else now
                for i, d in enumerate(delays)
            ]
            first = min(t for t, d in zip(visible_at, delays, strict=True) if d)
        try:
            steps = ("send_batch", (tuple(final), tuple(delays)), True, now)
            self.vet(steps, self.kept_by(now, first))
        except BaseException:
            if system is not None:
                system.unclaim(final)
            raise
        # commit
        return self.accept_batch(now, final, bodies, delays, visible_at)

    def accept_batch(
        self,
        now: float,
        ids: Sequence[str],
        bodies: Sequence[T],
        delays: Sequence[float],
        visible_at: Sequence[float] | None,
    ) -> Outcome:
        """Send_batch's commit: each entry as send, in order (``visible_at``: each one's, or
        ``None`` when none is delayed)."""
        self.accepted.update(ids)
        receivers = 0
        due: float | None = None
        retention = self.retention
        for i, id in enumerate(ids):
            rec = Record(id, bodies[i], now)
            if visible_at is not None and delays[i]:
                self.add_delayed(rec, visible_at[i])
                if due is None or visible_at[i] < due:
                    due = visible_at[i]
            else:
                self.visible[id] = rec
                receivers += 1
            if retention is not None:
                due = self.retain(rec, due)
        return new_outcome(Outcome, (ACCEPTED, list(ids), receivers, 0, due, ()))

    def kept_by(self, now: float, due: float | None) -> float | None:
        """The earliest timer a message accepted at ``now`` arms: ``due`` (its delay's end, or
        ``None``), or its retention timer's if that is earlier."""
        if self.retention is not None:
            kept = now + self.retention
            if due is None or kept < due:
                return kept
        return due

    def receive(self, now: float, vt: float | None) -> Outcome | Blocked:
        """Deliver the head (TLA+ ``Receive(v)``; ``spec.receive``): it goes in flight with
        ``attempt + 1``, deadline ``now + vt`` (``None``: never expires) and a fresh receipt, in
        one step (the receive's linearization point).

        ``NOTHING`` when nothing is deliverable (``SHUT`` after shutdown): before any change,
        ``ValueError`` for a deadline that overflows. Outcome: ``DELIVERED``, the message."""
        if not self.deliverable():
            return SHUT if self.shut else NOTHING
        # prepare
        deadline = None if vt is None else check_later("visibility_timeout", now, vt)
        if self.before_step is not None or self.before_timer is not None:
            head = self.heads(1)[0]
            self.vet(("receive", (vt,), (head.id, head.attempt + 1, deadline), now), deadline)
        # commit
        rec = self.deliver(deadline)
        return new_outcome(Outcome, (DELIVERED, rec.message(), 0, 0, deadline, ()))

    def receive_batch(self, now: float, n: int, vt: float | None) -> Outcome | Blocked:
        """Deliver up to ``n`` (1 to 10) messages in one step (TLA+ ``ReceiveBatch(n, v)``;
        ``spec.receive_batch``): :meth:`heads`, each as :meth:`receive`, one deadline.
        Outcome: ``DELIVERED``, the messages in order."""
        if not self.deliverable():
            return SHUT if self.shut else NOTHING
        # prepare
        deadline = None if vt is None else check_later("visibility_timeout", now, vt)
        if self.before_step is not None or self.before_timer is not None:
            heads = tuple((r.id, r.attempt + 1, deadline) for r in self.heads(n))
            self.vet(("receive_batch", (n, vt), heads, now), deadline)
        # commit
        recs = self.deliver_batch(n, deadline)
        return new_outcome(Outcome, (DELIVERED, [r.message() for r in recs], 0, 0, deadline, ()))

    def delete(self, now: float, receipt: Receipt) -> Outcome:
        """Acknowledge a delivery (TLA+ ``Delete(r)``; ``spec.delete``): with a live receipt
        the message is ``DONE`` (one slot freed). Outcome: ``ACTED``, whether it was live."""
        rec = self.to_delete(receipt)
        if self.before_step is not None:
            self.before_step(("delete", (receipt.id, receipt.attempt), rec is not None, now))
        if rec is None:
            return _STALE
        receivers = self.finish(rec)
        return _DONE if not receivers else Outcome(ACTED, True, receivers, 1, None, ())

    def delete_batch(self, now: float, receipts: Sequence[Receipt]) -> Outcome:
        """Delete with 1 to 10 receipts in one step, each as :meth:`delete`, in order (TLA+
        ``DeleteBatch(rs)``; ``spec.delete_batch``). Outcome: ``ACTED``, a bool per receipt."""
        recs = self.to_delete_batch(receipts)
        results = [rec is not None for rec in recs]
        if self.before_step is not None:
            self.before_step(
                ("delete_batch", tuple((r.id, r.attempt) for r in receipts), tuple(results), now)
            )
        receivers = senders = 0
        for rec in recs:
            if rec is not None:
                receivers += self.finish(rec)
                senders += 1
        return Outcome(ACTED, results, receivers, senders, None, ())

    def retry(self, now: float, receipt: Receipt) -> Outcome:
        """Give a live delivery back at once (TLA+ ``Retry(r)``; ``spec.retry``): release it.
        Outcome: ``ACTED``, whether the receipt was live."""
        rec = self.live(receipt)
        if rec is not None:
            self.prepare_release([rec], now)
        if self.before_step is not None:
            self.before_step(("retry", (receipt.id, receipt.attempt), rec is not None, now))
        if rec is None:
            return _STALE
        # commit
        receivers, senders = self.release(rec, now)
        if receivers == 1 and not senders and not self._elsewhere:
            return _REQUEUED
        return Outcome(ACTED, True, receivers, senders, None, self.moves())

    def change_visibility(self, now: float, receipt: Receipt, t: float) -> Outcome:
        """Set a live delivery's deadline to ``now + t`` (TLA+ ``ChangeVisibility(r, t)``;
        ``spec.change_visibility``), counted from now; ``t == 0`` releases it. ``ValueError``
        for a deadline that overflows. Outcome: ``ACTED``, whether the receipt was live."""
        rec = self.live(receipt)
        if rec is None:
            if self.before_step is not None:
                self.before_step(
                    ("change_visibility", (receipt.id, receipt.attempt, t), False, now)
                )
            return _STALE
        if t == 0:
            self.prepare_release([rec], now)
            if self.before_step is not None:
                self.before_step(("change_visibility", (rec.id, rec.attempt, t), None, now))
            receivers, senders = self.release(rec, now)
            return Outcome(ACTED, True, receivers, senders, None, self.moves())
        deadline = check_later("timeout", now, t)
        self.vet(("change_visibility", (rec.id, rec.attempt, t), deadline, now), deadline)
        self.extend(rec, t, now)
        return Outcome(ACTED, True, 0, 0, deadline, ())

    def change_visibility_batch(
        self, now: float, changes: Sequence[tuple[Receipt, float]]
    ) -> Outcome:
        """Apply 1 to 10 ``(receipt, t)`` changes in one step, each as
        :meth:`change_visibility`, in order, from the same now (TLA+
        ``ChangeVisibilityBatch(cs)``; ``spec.change_visibility_batch``). A receipt an earlier
        change of the batch released is stale. Outcome: ``ACTED``, a bool per change."""
        recs: list[Record[T] | None] = []
        released: set[str] = set()
        for receipt, t in changes:  # each guard as if the changes before it had been applied
            rec = self.live(receipt)
            if rec is not None and rec.id in released:
                rec = None
            elif rec is not None and t == 0:
                released.add(rec.id)
            recs.append(rec)
        # prepare
        results: list[float | bool | None] = []
        due: float | None = None
        for i, (rec, (_, t)) in enumerate(zip(recs, changes, strict=True)):
            if rec is None:
                results.append(False)
            elif t == 0:
                results.append(None)
            else:
                deadline = check_later(f"changes[{i}].timeout", now, t)
                results.append(deadline)
                due = deadline if due is None or deadline < due else due
        self.prepare_release(
            [r for r, (_, t) in zip(recs, changes, strict=True) if r is not None and not t], now
        )
        steps = tuple((r.id, r.attempt, t) for r, t in changes)
        self.vet(("change_visibility_batch", steps, tuple(results), now), due)
        # commit: each change in order
        receivers = senders = 0
        for rec, (_, t) in zip(recs, changes, strict=True):
            if rec is None:
                continue
            if t == 0:
                r, s = self.release(rec, now)
                receivers += r
                senders += s
            else:
                self.extend(rec, t, now)
        return Outcome(ACTED, [r is not None for r in recs], receivers, senders, due, self.moves())

    def cancel(self, now: float, id: str) -> Outcome:
        """Cancel a delayed, visible or in-flight message (TLA+ ``Cancel(i)``;
        ``spec.cancel``): ``CANCELLED``, its receipt dies, the others keep their order, one slot
        freed. Outcome: ``ACTED``, whether it was active."""
        if self.before_step is not None:
            self.before_step(("cancel", (id,), self.is_active(id), now))
        flying = id in self.in_flight
        rec = self.remove(id)
        if rec is None:
            return _STALE
        self.cancelled.add(id)
        receivers = self.left_flight(rec) if flying else 0
        return _DONE if not receivers else Outcome(ACTED, True, receivers, 1, None, ())

    def purge(self, now: float) -> Outcome:
        """Cancel every active message in one step (TLA+ ``Purge``; ``spec.purge``): every
        receipt dies, every message timer is dropped (a running redrive keeps its tick), every
        slot is freed. Outcome: ``ACTED``, how many."""
        if self.before_step is not None:
            self.before_step(("purge", (), self.active(), now))
        count = 0
        for group in (self.delayed, self.visible, self.in_flight):
            for rec in group.values():
                rec.deadline = None
            self.cancelled.update(group)
            count += len(group)
            group.clear()
        if self.ticks:
            ticks = [t for t in self.timers.entries() if self.current(t) is TICK_RECORD]
            self.timers.rebuild(ticks)
        else:
            self.timers.clear()
        return Outcome(ACTED, count, 0, count, None, ())

    def fire_due(self, now: float) -> Outcome | None:
        """One step of the sweep (TLA+ ``Expire``; ``spec.expire``): every timer due at ``now``
        or before, in the one timer order, up to a redrive tick, fires (a deadline releases its
        delivery, a delay makes its message visible, a retention timer ages its message out);
        or one move of a redrive tick that fired (``System.redrive_move``). ``None``: nothing
        (more) is due. A sweep is a loop of these until ``None``: each one step, traced as
        ``expire``/``age_out``/``redrive`` steps before it commits.

        Outcome: ``FIRED``, how many timers fired (or moves made)."""
        system = self.system
        if system is not None and system.ticking(self):
            moved = system.redrive_move(self, now)
            if moved is not None:
                return moved
        due = self.due(now)
        if not due:
            return None
        tick = due.pop()[0] if due[-1][1] is TICK_RECORD else None
        if due:
            try:
                out = self.fire_round(due, now)
            except BaseException:
                self.undo_due(due)
                if tick is not None:
                    self.timers.push(tick)
                raise
            if tick is not None:
                self.timers.push(tick)  # its turn comes at the next fire_due, in its place
            return out
        assert tick is not None and system is not None
        self.ticks.pop(tick.id, None)
        system.tick(self, tick, now)
        return Outcome(FIRED, 0, 0, 0, None, ())

    def fire_round(self, due: list[Due], now: float) -> Outcome:
        """Fire ``due``, message timers taken off the heap in the one timer order: prepare
        (trace, what a dead-letter move needs), then fire each that is still current."""
        due = self.still_current(due)
        dying = [rec for t, rec in due if t.attempt > 0 and self.dies(rec)]
        if dying:
            self.prepare_release(dying, now)
        if self.before_step is not None:
            for timer, rec in due:
                action = "age_out" if timer.attempt == RETENTION else "expire"
                self.before_step((action, (), rec.id, now))
        receivers = senders = 0
        for timer, rec in due:
            r, s = self.fire(timer, rec, now)
            receivers += r
            senders += s
        return Outcome(FIRED, len(due), receivers, senders, None, self.moves())

    def shutdown(self) -> None:
        """Refuse sends from now on; receives drain what is deliverable, then ``SHUT``."""
        self.shut = True

    # =============================================================================================
    # The driver's veto points, and the effects of moves
    # =============================================================================================

    def vet(self, step: TraceStep, due: float | None) -> None:
        """Ask the driver, before a commit: may ``step`` be recorded, may a timer due at ``due``
        (``None``: none) be armed? Either may raise: then nothing has changed."""
        if due is not None and self.before_timer is not None:
            self.before_timer(due)
        if self.before_step is not None:
            self.before_step(step)

    def prepare_release(self, recs: Sequence[Record[T]], now: float) -> None:
        """Before releases of ``recs`` commit: those that die move into the target, whose
        driver may have to start what fires their retention timers
        (``System.prepare_dead_letter``)."""
        if self.target is not None and self.system is not None:
            dying = [rec for rec in recs if self.dies(rec)]
            if dying:
                self.system.prepare_dead_letter(self, dying, now)

    def moves(self) -> tuple[Effect, ...]:
        """The effects on other queues of the step just committed (its dead-letter moves)."""
        if not self._elsewhere:
            return ()
        out = tuple(self._elsewhere)
        self._elsewhere.clear()
        return out

    # =============================================================================================
    # The commits: they change the state and cannot fail
    # =============================================================================================

    def add_delayed(self, rec: Record[T], visible_at: float) -> None:
        """``rec`` is ``DELAYED`` until ``visible_at``; its timer is started after every timer
        started before it."""
        rec.visible_at = visible_at
        self.started += 1
        rec.seq = self.started
        self.delayed[rec.id] = rec
        self.arm_delay(rec)

    def deliver(self, deadline: float | None) -> Record[T]:
        """Receive's commit: the first of :meth:`heads` goes in flight (:meth:`stamp`)."""
        rec = self.heads(1)[0]
        del self.visible[rec.id]
        self.stamp(rec, deadline)
        return rec

    def deliver_batch(self, n: int, deadline: float | None) -> list[Record[T]]:
        """Receive_batch's commit: :meth:`heads` ``(n)``, taken together, each goes in flight."""
        recs = self.heads(n)
        for rec in recs:
            del self.visible[rec.id]
            self.stamp(rec, deadline)
        return recs

    def stamp(self, rec: Record[T], deadline: float | None) -> None:
        """``rec``, just out of the visible messages, goes in flight: ``attempt + 1``, its place
        in the timer order, its ``deadline`` (armed unless ``None``), a fresh receipt."""
        rec.attempt += 1
        self.started += 1
        rec.seq = self.started
        rec.deadline = deadline
        self.in_flight[rec.id] = rec
        rec.receipt = self.receipt_of(rec)
        if deadline is not None:
            self.arm_deadline(rec)

    def finish(self, rec: Record[T]) -> int:
        """Delete's commit: the live delivery ``rec``'s message is ``DONE``; the receivers its
        leaving flight enabled (:meth:`left_flight`)."""
        del self.in_flight[rec.id]
        rec.deadline = None
        self.done.add(rec.id)
        return self.left_flight(rec)

    def release(self, rec: Record[T], now: float) -> tuple[int, int]:
        """Take back the in-flight ``rec`` (the step retry, change_visibility(0) and expiry
        share; TLA+ ``Release``): it dies (``DEAD``, one slot freed; with a target, moved into
        it in the same step) or goes back to the visible messages, keeping its attempt.
        Returns (receivers, senders) to wake here."""
        del self.in_flight[rec.id]
        rec.deadline = None
        if self.dies(rec):
            self.dead.append(rec)
            if self.target is not None and self.system is not None:
                self._elsewhere.append(self.system.dead_letter(self, rec, now))
            return (self.left_flight(rec), 1)
        self.requeue(rec)
        return (1, 0)

    def requeue(self, rec: Record[T]) -> None:
        """*FIFO hook.* A released (or no longer delayed) ``rec`` becomes visible again: at the
        tail (a FIFO queue: in its place in send order)."""
        self.visible[rec.id] = rec

    def left_flight(self, rec: Record[T]) -> int:
        """*FIFO hook.* Receivers enabled by ``rec`` leaving flight for good (deleted,
        cancelled, dead, aged out): none here (a FIFO queue: its group may unlock)."""
        return 0

    def extend(self, rec: Record[T], t: float, now: float) -> None:
        """Change_visibility's commit for ``t > 0``: the live delivery's deadline becomes
        ``now + t`` (from now, not added to the old one), armed."""
        rec.deadline = now + t
        self.arm_deadline(rec)

    def remove(self, id: str) -> Record[T] | None:
        """Take the active message ``id`` out of its group: the visible FIFO (the others keep
        their order), flight (its receipt dies) or the delayed ones; ``None`` if not active."""
        rec = self.visible.pop(id, None)
        if rec is None:
            rec = self.in_flight.pop(id, None)
            if rec is not None:
                rec.deadline = None
            else:
                rec = self.delayed.pop(id, None)
        return rec

    def fire(self, timer: Timer, rec: Record[T], now: float) -> tuple[int, int]:
        """One due timer's commit: a deadline releases its delivery (:meth:`expire`), a delay
        makes its message visible (:meth:`fire_delay`), a retention timer ages it out."""
        if timer.attempt > 0:
            return self.expire(rec, now)
        if timer.attempt == DELAY:
            return self.fire_delay(rec)
        return self.age_out(rec)

    def expire(self, rec: Record[T], now: float) -> tuple[int, int]:
        """A delivery whose deadline passed: released."""
        return self.release(rec, now)

    def fire_delay(self, rec: Record[T]) -> tuple[int, int]:
        """A due delay: the delayed ``rec`` becomes visible, attempt unchanged."""
        del self.delayed[rec.id]
        self.requeue(rec)
        return (1, 0)

    def age_out(self, rec: Record[T]) -> tuple[int, int]:
        """A due retention timer (TLA+ ``AgeOut``; ``spec.age_out``): the active ``rec`` is
        ``AGED_OUT``: out of its group, its receipt dead; one slot freed."""
        flying = rec.id in self.in_flight
        self.remove(rec.id)
        self.aged.append(rec.id)
        return (self.left_flight(rec) if flying else 0, 1)

    def retain(self, rec: Record[T], due: float | None) -> float | None:
        """Start ``rec``'s retention timer, due at ``rec.enqueued_at + retention``, after every
        timer started before it (contract section 7.4); the earlier of it and ``due``."""
        assert self.retention is not None
        self.started += 1
        rec.kept = self.started
        kept = rec.enqueued_at + self.retention
        self.push_timer(Timer(kept, rec.kept, rec.id, RETENTION))
        return kept if due is None or kept < due else due

    # -- moves into and out of this queue (the system's steps call these, both queues held) --------

    def new_record(self, id: str, body: T, group: str | None, now: float) -> Record[T]:
        """A record for a message this queue takes in by a move (``group``: FIFO only)."""
        return Record(id, body, now)

    def enqueue_time_of_move(self, rec: Record[T], now: float) -> float:
        """The enqueue time a message dead-lettered here keeps: the original (AWS: "the enqueue
        timestamp is unchanged"); a FIFO queue resets it."""
        return rec.enqueued_at

    def joined(self, rec: Record[T]) -> int:
        """The receivers a message just moved onto the visible tail enables: one."""
        return 1

    def move_in(self, rec: Record[T], now: float, source: object) -> tuple[int, float | None]:
        """The target's half of a dead-letter move (one step with the source's release): the
        message joins the visible tail with its id, body, group (FIFO) and attempt, its
        enqueue time as :meth:`enqueue_time_of_move` says, its retention started; no dedup.
        Returns the receivers it enabled and its retention timer's due time."""
        moved = self.new_record(rec.id, rec.body, getattr(rec, "group", None), now)
        moved.attempt = rec.attempt
        moved.enqueued_at = self.enqueue_time_of_move(rec, now)
        self.accepted.add(rec.id)
        self.visible[rec.id] = moved
        self.sources[rec.id] = source
        due = self.retain(moved, None) if self.retention is not None else None
        return self.joined(moved), due

    def redrive_out(self, rec: Record[T], to: object, new_id: str) -> int:
        """The dead-letter queue's half of a redrive move: the visible ``rec`` is ``MOVED``
        (terminal here) to the queue ``to`` as ``new_id``; one slot freed (the senders)."""
        del self.visible[rec.id]
        self.moved[rec.id] = (to, new_id)
        return 1

    def accept_moved(
        self, id: str, body: T, group: str | None, now: float
    ) -> tuple[int, float | None]:
        """The destination's half of a redrive move: a new message ``id`` (attempt 0, enqueued
        now, retention restarted, no source) joins the visible tail; no dedup. Returns the
        receivers it enabled and its retention timer's due time."""
        rec = self.new_record(id, body, group, now)
        self.accepted.add(id)
        self.visible[id] = rec
        due = self.retain(rec, None) if self.retention is not None else None
        return self.joined(rec), due

    # =============================================================================================
    # The timers: one heap in the contract's one timer order (impl/timers.py)
    # =============================================================================================

    def arm_deadline(self, rec: Record[T]) -> None:
        """Put the in-flight ``rec``'s deadline (set) where the sweep looks."""
        timers = self.timers
        deadline = rec.deadline
        assert deadline is not None, "arm_deadline arms a set deadline"
        # push_timer written out (on the path of every receive with a deadline).
        heapq.heappush(timers, (deadline, rec.seq, rec.id, rec.attempt))
        if len(timers) > 2 * (len(self.in_flight) + len(self.delayed)) + 16:
            self.compact()

    def arm_delay(self, rec: Record[T]) -> None:
        """Put the delayed ``rec``'s ``visible_at`` where the sweep looks, in its place."""
        self.push_timer(Timer(rec.visible_at, rec.seq, rec.id, DELAY))

    def arm_tick(self, name: str, due: float) -> None:
        """(Re-)arm the redrive task ``name``'s tick at ``due``, after every timer started
        before it; its previous tick goes stale."""
        self.started += 1
        self.ticks[name] = self.started
        self.push_timer(Timer(due, self.started, name, TICK))

    def drop_tick(self, name: str) -> None:
        """The task ``name`` no longer ticks (completed or cancelled): its timer goes stale."""
        self.ticks.pop(name, None)

    def restore_tick(self, tick: Timer) -> None:
        """Put back a fired tick whose move was vetoed: it fires again, in its place."""
        self.ticks[tick.id] = tick.seq
        self.timers.push(tick)

    def push_timer(self, timer: Timer) -> None:
        """Push ``timer``; rebuild the heap when stale entries outnumber live ones (at most
        once per their number + 16 pushes: O(1) amortized)."""
        timers = self.timers
        heapq.heappush(timers, timer)
        if len(timers) > 2 * (len(self.in_flight) + len(self.delayed)) + 16:
            self.compact()

    def live_timers(self) -> Iterator[Timer]:
        """The current timer of everything that has one: each armed deadline, each delay,
        each retention timer, each running redrive task's tick."""
        for r in self.in_flight.values():
            if r.deadline is not None:
                yield Timer(r.deadline, r.seq, r.id, r.attempt)
        for r in self.delayed.values():
            yield Timer(r.visible_at, r.seq, r.id, DELAY)
        retention = self.retention
        if retention is not None:
            for group in (self.delayed, self.visible, self.in_flight):
                for r in group.values():
                    if r.kept:
                        yield Timer(r.enqueued_at + retention, r.kept, r.id, RETENTION)
        if self.ticks:  # a redrive task's tick has no record to rebuild it from
            for t in self.timers.entries():
                if t.attempt == TICK and self.ticks.get(t.id) == t.seq:
                    yield t

    def compact(self) -> None:
        """Rebuild the heap from :meth:`live_timers`, dropping stale entries. With a retention
        (or a tick) every active message may have a live timer: rebuild only when stale entries
        outnumber all of those too."""
        if self.retention is not None or self.ticks:
            live = len(self.in_flight) + self.active() + len(self.ticks)
            if len(self.timers) <= 2 * live + 16:
                return
        elif not self.in_flight and not self.delayed:
            self.timers.clear()  # nothing has a timer: every entry is stale
            return
        self.timers.rebuild(list(self.live_timers()))

    def current(self, timer: Timer) -> Record[T] | None:
        """The record ``timer`` still stands for, or ``None`` if it is stale: a deadline's
        delivery while in flight with it, a delay's message while delayed, a retention timer's
        message while active, :data:`TICK_RECORD` for its task's current tick."""
        attempt = timer.attempt
        if attempt == DELAY:
            return self.delayed.get(timer.id)
        if attempt == TICK:
            return TICK_RECORD if self.ticks.get(timer.id) == timer.seq else None
        id = timer.id
        if attempt == RETENTION:
            rec = self.visible.get(id) or self.in_flight.get(id) or self.delayed.get(id)
            return rec if rec is not None and rec.kept == timer.seq else None
        rec = self.in_flight.get(id)
        if rec is None or rec.seq != timer.seq or rec.attempt != attempt:
            return None
        return rec if rec.deadline == timer.due else None

    def due_now(self, now: float) -> bool:
        """Whether :meth:`fire_due` at ``now`` takes a step: a timer is due, or a redrive's
        moves are under way. (It drops stale heap entries, as :meth:`next_due` does.)"""
        system = self.system
        if system is not None and system.ticking(self):
            return True
        first = self.next_due()
        return first is not None and first <= now

    def next_due(self) -> float | None:
        """The earliest current timer's due time (``None``: none), dropping stale entries from
        the top of the heap: when the sweeper must next run."""
        timers = self.timers
        while (first := timers.first()) is not None and self.current(first) is None:
            timers.pop_first()
        return None if first is None else first.due

    def due(self, now: float) -> list[Due]:
        """Take every current timer due at ``now`` or before off the heap, in the one timer
        order, each with its record, up to and including the first redrive tick (which moves
        messages and re-arms: the next ``fire_due`` asks again). Nothing fired yet."""
        timers = self.timers
        out: list[Due] = []
        while (timer := timers.pop_due(now)) is not None:
            rec = self.current(timer)
            # Equal entries (a deadline re-armed to the same time) pop one after the other.
            if rec is not None and not (out and out[-1][0] == timer):
                out.append((timer, rec))
                if rec is TICK_RECORD:
                    break
        return out

    def undo_due(self, due: list[Due]) -> None:
        """Put back the timers :meth:`due` took (their round was vetoed)."""
        for timer, _ in due:
            self.timers.push(timer)

    def still_current(self, due: list[Due]) -> list[Due]:
        """The due timers still current when their turn comes in this round: once a timer
        makes its message terminal (a retention timer; a deadline whose release dies), that
        message's later timers of the round are stale, and neither fire nor are traced."""
        gone: set[str] = set()
        out = []
        for timer, rec in due:
            if rec.id in gone:
                continue
            out.append((timer, rec))
            if timer.attempt == RETENTION or (timer.attempt > 0 and self.dies(rec)):
                gone.add(rec.id)
        return out

    # =============================================================================================
    # The queues a step holds: this one, and those a move may touch, in lock order
    # =============================================================================================

    def release_queues(self) -> list[Machine[T]]:
        """The machines a releasing step (retry, change_visibility, a sweep) may change: this
        one and its dead-letter target, in lock order (contract section 7.8)."""
        return in_lock_order([self, self.target]) if self.target is not None else [self]

    def sweep_queues(self) -> list[Machine[T]]:
        """The machines a sweep of this queue may change, in lock order: this one, its target,
        and every queue its running redrive task may move into."""
        machines = self.release_queues()
        if self.ticks and self.system is not None:
            task = self.system.running(self)
            if task is not None:
                machines = in_lock_order([*machines, *task.queues])
        return machines

    # =============================================================================================
    # Observation, and the self-check
    # =============================================================================================

    def stats(self) -> Stats:
        """How many messages are in each state."""
        return Stats(
            visible=len(self.visible),
            in_flight=len(self.in_flight),
            done=len(self.done),
            cancelled=len(self.cancelled),
            dead=len(self.dead),
            delayed=len(self.delayed),
            aged_out=len(self.aged),
            moved=len(self.moved),
        )

    def dedup_records(self) -> tuple[tuple[str, str, float], ...]:
        """The deduplication records a snapshot shows: none on a standard queue."""
        return ()

    def snapshot(self) -> Snapshot[T]:
        """The whole observable state (see :class:`impl.Snapshot`)."""
        return Snapshot(
            visible=tuple(r.snapshot() for r in self.visible.values()),
            in_flight=tuple(r.snapshot() for r in self.in_flight.values()),
            dead=tuple(r.snapshot() for r in self.dead),
            done=frozenset(self.done),
            cancelled=frozenset(self.cancelled),
            delayed=tuple(r.delayed_snapshot() for r in self.delayed.values()),
            dedup=self.dedup_records(),
            aged_out=frozenset(self.aged),
            moved=frozenset(self.moved),
        )

    def check(self) -> None:
        """Cheap (O(1)) checks of ``CapacityBound`` and ``OneState``'s counts: a broken one
        raises ``AssertionError`` whose message is exactly the invariant's name. Explicit
        raises, not ``assert``: it holds under ``python -O``, and pytest's rewriting of the
        asserts of this distribution (it registers a pytest plugin) cannot change its message."""
        active = len(self.visible) + len(self.in_flight) + len(self.delayed)
        cap = self.capacity
        if cap is not None and active > cap:
            raise AssertionError("CapacityBound")
        terminal = len(self.done) + len(self.cancelled) + len(self.dead)
        if len(self.accepted) != active + terminal + len(self.aged) + len(self.moved):
            raise AssertionError("OneState")
