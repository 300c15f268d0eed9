"""The core of a standard queue: its state and the contract's steps, with no lock and no waiting.

This is the queue's ``MemoryChannelState`` (Trio) or the ``_put``/``_get`` half of CPython's
``queue.Queue``: every method here is called with the owning shell's lock held (``impl.Queue``
takes ``mutex`` around each call; another shell may run the same core on an event loop), never
blocks, never reads the clock (the shell passes ``now`` and deadlines in) and never notifies
anyone. Instead each step that may enable a waiter returns a :data:`Wake`, ``(receivers,
senders)``: how many messages it made deliverable and how many slots it freed, so the shell
knows whom to wake. A step that arms a timer returns nothing about it: the shell knows the due
time it asked for and aims its sweeper itself.

Each step is the contract's transition of the same name (``spec/transitions.py``,
``tla/Queue.tla``) acting on mutable records instead of pure values:

======================  =========================  =============================
core step               spec                       TLA+
======================  =========================  =============================
``accept``              ``send``                   ``Send``
``deliver``             ``receive``                ``Receive``
``deliver_batch``       ``receive_batch``          ``ReceiveBatch``
``delete``              ``delete``                 ``Delete``
``retry``               ``retry``                  ``Retry``
``extend``              ``change_visibility``      ``ChangeVisibility``
``release``             (``release``)              ``Release``
``cancel``              ``cancel``                 ``Cancel``
``purge``               ``purge``                  ``Purge``
``due`` + ``fire``      ``expire``                 ``Expire``
======================  =========================  =============================

Steps that change state run in the commit phase of their transition (after the shell did all
that can fail: argument checks, the clock, the trace sink, starting a thread), so they must not
raise; the guards (``live``, ``to_delete``, ``has_room``, ``deliverable``) change nothing.
The mutant catalogue (``model_tests/mutants.py``) subclasses this class and overrides a step.
"""

from __future__ import annotations

import heapq
import itertools
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Final, Generic, TypeVar

from impl.message import Message, Receipt, SnapshotMessage
from impl.timers import Timer, Timers, new_timer

T = TypeVar("T")

#: The most entries, receipts or changes in one batch, and the most messages a receive_batch
#: asks for (SQS's limit).
MAX_BATCH: Final = 10

#: What a step enabled: ``(receivers, senders)``, how many messages became deliverable and how
#: many slots were freed. The shell wakes at most that many waiters of each kind.
Wake = tuple[int, int]

NOBODY: Final[Wake] = (0, 0)
RECEIVER: Final[Wake] = (1, 0)
SENDER: Final[Wake] = (0, 1)
BOTH: Final[Wake] = (1, 1)

# A message and its receipt are built on every delivery. Both are slotted frozen dataclasses,
# whose generated __init__ sets each field through object.__setattr__ (and Receipt's
# __post_init__ checks the types): a fifth of a send-receive-delete cycle (bench.icount). The
# core, whose values are well typed by construction, sets the same slots through their
# descriptors instead; the result is equal, field for field, to what the constructor makes.
_new = object.__new__
_set_id = vars(Message)["id"].__set__
_set_body = vars(Message)["body"].__set__
_set_attempt = vars(Message)["attempt"].__set__
_set_receipt = vars(Message)["receipt"].__set__
_set_queue = vars(Receipt)["queue"].__set__
_set_rid = vars(Receipt)["id"].__set__
_set_rattempt = vars(Receipt)["attempt"].__set__


def make_receipt(queue: int, id: str, attempt: int) -> Receipt:
    """``Receipt(queue, id, attempt)`` for values already known to be well typed, without the
    dataclass ``__init__`` (equal to one made by it, field for field)."""
    r: Receipt = _new(Receipt)
    _set_queue(r, queue)
    _set_rid(r, id)
    _set_rattempt(r, attempt)
    return r


class Record(Generic[T]):
    """The mutable record of one message, only touched by its core (under the shell's lock).

    Public so that a core subclass (a FIFO core, a mutant) can name its type; a caller of the
    queue never sees one (it gets :class:`Message` and snapshots).
    """

    __slots__ = ("attempt", "body", "deadline", "id", "receipt", "seq", "visible_at")

    #: The receipt of the current (or last) delivery, made by ``Core.receipt_of`` when it is
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
        """As :meth:`snapshot`, for a delayed message: with its ``visible_at``."""
        return SnapshotMessage(self.id, self.body, self.attempt, None, self.visible_at)


class Core(Generic[T]):
    """The state of one standard queue and the contract's steps on it.

    State (the invariants ``Core.check`` asserts in O(1), and the model-based tests check in
    full against ``spec``):

    - ``visible``: id -> record of each ``VISIBLE`` message, in FIFO order (head first); an
      ordered dict, so ``cancel`` removes from the middle in O(1) and keeps the rest in order.
    - ``in_flight``: id -> record of each ``IN_FLIGHT`` message, in receive order.
    - ``delayed``: id -> record of each ``DELAYED`` message, in send order.
    - ``dead`` (records, in order of death), ``done`` and ``cancelled`` (ids): terminal.
    - ``accepted``: every id ever accepted. ``OneState``: it is the disjoint union of the six
      groups above; ``IdsReserved``: ids are only ever added to it.
    - ``CapacityBound``: ``len(delayed) + len(visible) + len(in_flight) <= capacity``.
    - ``OneLiveReceipt``: the live receipt of a message is its in-flight record's ``receipt``,
      ``(token, id, attempt)``, made when it was delivered.
    - A record has a ``deadline`` iff it is in flight with a finite visibility timeout, and then
      ``timers`` holds ``Timer(deadline, seq, id, attempt)``; a delayed record has
      ``Timer(visible_at, seq, id, 0)`` there. Other entries are stale (see :meth:`current`).
    """

    def __init__(self, token: int, capacity: int | None, max_receives: int | None) -> None:
        #: This queue's identity, carried by its receipts.
        self.token = token
        self.capacity = capacity
        self.max_receives = max_receives
        self.visible: OrderedDict[str, Record[T]] = OrderedDict()
        self.in_flight: dict[str, Record[T]] = {}
        self.delayed: dict[str, Record[T]] = {}
        self.dead: list[Record[T]] = []
        self.done: set[str] = set()
        self.cancelled: set[str] = set()
        self.accepted: set[str] = set()
        self.timers = Timers()
        #: Timers started so far (delayed sends and deliveries): the ``seq`` of the last one.
        self.started = 0
        self._ids = itertools.count(1)  # for generated ids

    #: The word for what a receive waits for, in its errors ("nothing visible").
    ready_word: str = "visible"

    # -- guards and queries: they change nothing ---------------------------------------------

    def active(self) -> int:
        """Delayed + visible + in flight: what ``CapacityBound`` bounds."""
        return len(self.visible) + len(self.in_flight) + len(self.delayed)

    def has_room(self) -> bool:
        """``CapacityBound``'s test for one send: active < capacity."""
        cap = self.capacity
        return cap is None or len(self.visible) + len(self.in_flight) + len(self.delayed) < cap

    def accepts(self, n: int) -> int:
        """How many of a send_batch's ``n`` entries may be accepted now: all ``n`` if active +
        ``n`` <= capacity, else none (0): a batch is accepted whole or not at all."""
        cap = self.capacity
        if cap is None or len(self.visible) + len(self.in_flight) + len(self.delayed) + n <= cap:
            return n
        return 0

    def deliverable(self) -> bool:
        """Whether a receive can deliver now (the spec's ``State.deliverable()``)."""
        return bool(self.visible)

    def heads(self, n: int) -> list[Record[T]]:
        """The records ``deliver_batch(n, ...)`` would deliver now, in delivery order, without
        delivering them (read by the trace, before the commit)."""
        return list(itertools.islice(self.visible.values(), n))

    def dedup_records(self) -> tuple[tuple[str, str, float], ...]:
        """The deduplication records a snapshot shows: none on a standard queue."""
        return ()

    def is_active(self, id: str) -> bool:
        return id in self.visible or id in self.in_flight or id in self.delayed

    def live(self, receipt: Receipt) -> Record[T] | None:
        """The in-flight record whose live receipt is ``receipt`` (queue, id and attempt), or
        ``None``: the guard of retry and change_visibility, and of delete (:meth:`to_delete`)."""
        rec = self.in_flight.get(receipt.id)
        if rec is None:
            return None
        live = rec.receipt
        if live is receipt or (live.attempt == receipt.attempt and live.queue == receipt.queue):
            return rec
        return None

    def to_delete(self, receipt: Receipt) -> Record[T] | None:
        """Delete's guard, the record a delete with ``receipt`` acts on: the live one.

        A step of its own (not just ``live``) because "an ack acts on the delivery its receipt
        names, not on the message" is the seed's pitfall 3: the catalogue breaks it here alone.
        """
        return self.live(receipt)

    def to_delete_batch(self, receipts: Sequence[Receipt]) -> list[Record[T] | None]:
        """Delete_batch's guard: for each receipt, in order, what its delete acts on, as if the
        deletes before it had been applied (a message deleted by an earlier receipt of the batch
        gives ``None``)."""
        recs: list[Record[T] | None] = []
        gone: set[str] = set()
        to_delete = self.to_delete
        for receipt in receipts:
            rec = to_delete(receipt)
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
        """The receipt of ``rec``'s current delivery: ``(this queue, id, attempt)``, made once
        per delivery; :meth:`live` accepts exactly that one (``OneLiveReceipt``)."""
        r: Receipt = _new(Receipt)  # make_receipt written out: once per delivery
        _set_queue(r, self.token)
        _set_rid(r, rec.id)
        _set_rattempt(r, rec.attempt)
        return r

    # -- ids ---------------------------------------------------------------------------------

    def fresh_id(self) -> str:
        # A counter, not uuid4: uuid4 took ~5 µs here, a third of a send + receive + delete
        # cycle (and a getrandom call that releases the GIL inside the critical section). Ids
        # need only be unique within this queue; the loop skips any id a caller chose first.
        while True:
            id = f"msg-{next(self._ids)}"
            if id not in self.accepted:
                return id

    def fresh_ids(self, ids: Sequence[str | None], taken: dict[str, int]) -> list[str]:
        """Each ``None`` of ``ids`` replaced by a fresh id that is neither accepted nor in
        ``taken`` (the batch's own ids), in order: what :meth:`fresh_id` once per ``None`` would
        give, made in one go."""
        wanted = ids.count(None)
        if not wanted:
            return [id for id in ids if id is not None]
        counter = self._ids
        fresh = [f"msg-{i}" for i in itertools.islice(counter, wanted)]
        accepted = self.accepted
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

    # -- the steps (commit phase: they must not raise) ---------------------------------------

    def accept(self, id: str, body: T) -> Wake:
        """Send's step: a new message ``id`` joins the visible tail."""
        self.accepted.add(id)
        self.visible[id] = Record(id, body)
        return RECEIVER

    def accept_batch(self, ids: Sequence[str], bodies: Sequence[T]) -> Wake:
        """Send_batch's step when no entry is delayed: each message joins the visible tail, in
        order: one receiver per message, as that many sends would wake."""
        self.accepted.update(ids)
        visible = self.visible
        for id, body in zip(ids, bodies, strict=True):
            visible[id] = Record(id, body)
        return (len(ids), 0)

    def accept_delayed(self, id: str, body: T, visible_at: float) -> Wake:
        """A delayed send's step: ``id`` is ``DELAYED`` until ``visible_at``, its timer started
        after every timer started before it. It enables nobody until it fires."""
        self.accepted.add(id)
        self.add_delayed(Record(id, body), visible_at)
        return NOBODY

    def add_delayed(self, rec: Record[T], visible_at: float) -> None:
        rec.visible_at = visible_at
        self.started += 1
        rec.seq = self.started
        self.delayed[rec.id] = rec
        self.arm_delay(rec)

    def deliver(self, deadline: float | None) -> Record[T]:
        """Receive's step (its linearization point): the head of the visible FIFO becomes in
        flight (:meth:`stamp`). Called only when :meth:`deliverable`."""
        _, rec = self.visible.popitem(last=False)
        self.stamp(rec, deadline)
        return rec

    def deliver_batch(self, n: int, deadline: float | None) -> list[Record[T]]:
        """Receive_batch's step (its one linearization point, ``BatchAtomic``): the first
        min(n, visible) messages, each as :meth:`deliver`, in FIFO order."""
        deliver = self.deliver
        return [deliver(deadline) for _ in range(min(n, len(self.visible)))]

    def stamp(self, rec: Record[T], deadline: float | None) -> None:
        """``rec``, just taken out of the visible messages, becomes in flight: ``attempt + 1``,
        the next timer sequence number, ``deadline`` (``None``: never expires, armed otherwise)
        and the delivery's fresh receipt."""
        rec.attempt += 1
        self.started += 1
        rec.seq = self.started
        rec.deadline = deadline
        self.in_flight[rec.id] = rec
        rec.receipt = self.receipt_of(rec)
        if deadline is not None:
            self.arm(rec)

    def delete(self, rec: Record[T]) -> Wake:
        """Delete's step: the live delivery ``rec``'s message is done; one slot freed."""
        del self.in_flight[rec.id]
        rec.deadline = None
        self.done.add(rec.id)
        return SENDER

    def release(self, rec: Record[T]) -> Wake:
        """Take back an in-flight message: dead-letter it (if :meth:`dies`: a slot freed) or
        append it to the visible tail (a message made visible), keeping its attempt.

        The step that retry, change_visibility(0) and expiry share."""
        assert self.in_flight.get(rec.id) is rec, f"release of {rec.id!r}: not in flight"
        del self.in_flight[rec.id]
        rec.deadline = None
        if self.dies(rec):
            self.dead.append(rec)
            return SENDER
        self.visible[rec.id] = rec
        return RECEIVER

    def retry(self, rec: Record[T]) -> Wake:
        """Retry's step: release the live delivery ``rec`` at once."""
        return self.release(rec)

    def extend(self, rec: Record[T], t: float, now: float) -> float:
        """Change_visibility's step for ``t > 0``: the live delivery's deadline becomes ``now +
        t`` (from now, not added to the old one), armed; returns it."""
        rec.deadline = deadline = now + t
        self.arm(rec)
        return deadline

    def remove(self, id: str) -> Record[T] | None:
        """Take the active message ``id`` out of the visible FIFO (the others keep their order),
        out of flight (its receipt dies, its deadline is dropped) or out of the delayed ones;
        its record, or ``None`` (and no change) if ``id`` is not active."""
        rec = self.visible.pop(id, None)
        if rec is None:
            rec = self.in_flight.pop(id, None)
            if rec is not None:
                rec.deadline = None
            else:
                rec = self.delayed.pop(id, None)
        return rec

    def cancel(self, id: str) -> Wake | None:
        """Cancel's step: the active message ``id`` is cancelled (one slot freed); ``None`` and
        no change if ``id`` is not active."""
        rec = self.remove(id)
        if rec is None:
            return None
        self.cancelled.add(id)
        return SENDER

    def purge(self) -> int:
        """Purge's step: every active message (delayed, visible, in flight) is cancelled, every
        receipt dies and every timer is dropped; how many (that many slots freed)."""
        count = 0
        for group in (self.delayed, self.visible, self.in_flight):
            for rec in group.values():
                rec.deadline = None
            self.cancelled.update(group)
            count += len(group)
            group.clear()
        self.timers.clear()
        return count

    # -- timers ------------------------------------------------------------------------------

    def arm(self, rec: Record[T]) -> None:
        """Put the in-flight ``rec``'s deadline (set, not ``None``) where the sweep looks."""
        deadline = rec.deadline
        assert deadline is not None and self.in_flight.get(rec.id) is rec
        # push_timer written out: on the path of every receive with a deadline and every
        # extension (a call and a named tuple's __new__ were 5 % of an armed cycle).
        timers = self.timers
        heapq.heappush(timers, new_timer(Timer, (deadline, rec.seq, rec.id, rec.attempt)))
        if len(timers) > 2 * (len(self.in_flight) + len(self.delayed)) + 16:
            self.compact()

    def arm_delay(self, rec: Record[T]) -> None:
        """Put the delayed ``rec``'s ``visible_at`` where the sweep looks, in its place in the
        one timer order (``rec.seq``)."""
        self.push_timer(Timer(rec.visible_at, rec.seq, rec.id, 0))

    def push_timer(self, timer: Timer) -> None:
        """Push ``timer``, rebuilding the heap (:meth:`compact`) when stale entries outnumber
        live ones: at most once per (their number + 16) pushes, so O(1) amortized."""
        timers = self.timers
        heapq.heappush(timers, timer)
        if len(timers) > 2 * (len(self.in_flight) + len(self.delayed)) + 16:
            self.compact()

    def live_timers(self) -> Iterator[Timer]:
        """The current timer of every record that has one: each armed deadline, each delay."""
        for r in self.in_flight.values():
            if r.deadline is not None:
                yield Timer(r.deadline, r.seq, r.id, r.attempt)
        for r in self.delayed.values():
            yield Timer(r.visible_at, r.seq, r.id, 0)

    def compact(self) -> None:
        """Rebuild the heap from the live timers, dropping the stale entries."""
        self.timers.rebuild(self.live_timers())

    def current(self, timer: Timer) -> Record[T] | None:
        """The record ``timer`` still stands for, or ``None`` if it is stale: for a deadline,
        the in-flight delivery it was armed for; for a delay, the message while still delayed
        (a message is delayed once, with one entry)."""
        if not timer.attempt:
            return self.delayed.get(timer.id)
        rec = self.in_flight.get(timer.id)
        if (
            rec is None
            or rec.seq != timer.seq
            or rec.attempt != timer.attempt
            or rec.deadline != timer.due
        ):
            return None
        return rec

    def next_due(self) -> float | None:
        """The earliest current timer's due time (``None``: none), dropping stale entries from
        the top of the heap."""
        timers = self.timers
        while (first := timers.first()) is not None and self.current(first) is None:
            timers.pop_first()
        return None if first is None else first.due

    def due(self, now: float) -> list[tuple[Timer, Record[T]]]:
        """Take every current timer due at ``now`` or before off the heap, in the one timer
        order, each with its record (stale entries met on the way are dropped). Nothing has
        fired yet: :meth:`fire` each, or :meth:`undo_due` to put them back."""
        timers = self.timers
        first = timers.first()
        if first is None or first.due > now:
            return []
        due: list[tuple[Timer, Record[T]]] = []
        while (first := timers.first()) is not None and first.due <= now:
            timer = timers.pop_first()
            rec = self.current(timer)
            # Equal entries (a deadline re-armed to the same time) pop one after the other.
            if rec is not None and not (due and due[-1][0] == timer):
                due.append((timer, rec))
        return due

    def undo_due(self, due: list[tuple[Timer, Record[T]]]) -> None:
        """Put back the timers :meth:`due` took (the sweep was vetoed)."""
        for timer, _ in due:
            self.timers.push(timer)

    def fire(self, timer: Timer, rec: Record[T]) -> Wake:
        """One due timer's step: a delivery's deadline expires (:meth:`expire`), a delayed
        message's ``visible_at`` makes it visible (:meth:`fire_delay`)."""
        return self.expire(rec) if timer.attempt else self.fire_delay(rec)

    def expire(self, rec: Record[T]) -> Wake:
        """Expiry's step for one delivery whose deadline passed: release it."""
        return self.release(rec)

    def fire_delay(self, rec: Record[T]) -> Wake:
        """A due delay's step: the delayed ``rec`` joins the visible tail, attempt unchanged."""
        del self.delayed[rec.id]
        self.visible[rec.id] = rec
        return RECEIVER

    # -- self-check --------------------------------------------------------------------------

    def check(self) -> None:
        """Cheap (O(1)) assertions of ``CapacityBound`` and ``OneState``'s counts."""
        active = len(self.visible) + len(self.in_flight) + len(self.delayed)
        cap = self.capacity
        assert cap is None or active <= cap, "CapacityBound"
        assert len(self.accepted) == active + len(self.done) + len(self.cancelled) + len(
            self.dead
        ), "OneState"
