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
``age_out``             ``expire`` (retention)     ``AgeOut``
``release`` + ``move_in``  ``system.release``      ``Move``/``DeadLetter``
``redrive_out`` +       ``system.redrive_step``    ``Redrive``
``accept_moved``
======================  =========================  =============================

Dead-letter queues that are queues, retention and redrive (docs/contract.md section 7). A core may
have a ``target`` (the core of its dead-letter queue, set by the shell,
which holds both queues' locks around every releasing step): a release that dies then also
moves the message into the target in the same step (:meth:`Core.move_in`), and the receivers
that move enabled in the target are counted in ``moved_receivers`` for the shell to wake. A
core with ``retention`` starts a retention timer for each message it takes in (a send, a
move-in, a redrive), a third kind of timer in the one timer order (``impl/timers.py``): when it
fires, the active message is ``AGED_OUT`` (:meth:`Core.age_out`). A redrive moves a visible
message out (:meth:`Core.redrive_out`, ``MOVED`` here) into a destination that takes it as a
new message (:meth:`Core.accept_moved`). The two new terminal groups, ``aged`` and ``moved``,
count in ``OneState``. A core with no target and no retention does exactly what it did before.

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
from typing import Any, Final, Generic, TypeVar

from impl.message import Message, Receipt, SnapshotMessage
from impl.timers import RETENTION, TICK, Timer, Timers, new_timer

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
        #: When the message entered this queue, as its retention counts it: set when the queue
        #: reads the clock at acceptance (a queue with a retention or a dead-letter target, and
        #: every FIFO queue), or kept from the source by a move into a standard queue.
        self.enqueued_at = 0.0
        #: The sequence number of its retention timer in this queue; 0: none.
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
        """As :meth:`snapshot`, for a delayed message: with its ``visible_at``."""
        return SnapshotMessage(self.id, self.body, self.attempt, None, self.visible_at)


#: What :meth:`Core.current` gives for a redrive tick that is current (a tick has no record).
TICK_RECORD: Final[Record[Any]] = Record("redrive-tick", None)


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
        #: Seconds a message may stay in this queue (its retention timer); ``None``: forever.
        self.retention: float | None = None
        #: The core of this queue's dead-letter target, set by the shell; ``None``: none.
        self.target: Core[T] | None = None
        #: This queue as its target records it (``source_of``): an opaque handle the shell
        #: sets (a weak reference to the shell).
        self.handle: object = None
        #: The time of the releasing step now running, set by the shell before a releasing
        #: step of a core with a target (a move needs it: FIFO resets the enqueue time).
        self.now = 0.0
        #: Receivers that moves into ``target`` enabled there since the shell last looked.
        self.moved_receivers = 0
        #: AGED_OUT ids, in the order they aged out (terminal).
        self.aged: list[str] = []
        #: MOVED ids (terminal): id -> (the destination's handle, the new id), in move order.
        self.moved: dict[str, tuple[object, str]] = {}
        #: Where each dead-lettered message that moved in came from: id -> the source's handle.
        self.sources: dict[str, object] = {}
        #: Running redrive tasks' ticks: the task's name -> the seq of its current tick timer.
        self.ticks: dict[str, int] = {}

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
        """Take back an in-flight message: dead-letter it (if :meth:`dies`: a slot freed; with
        a ``target``, moved into it in the same step) or append it to the visible tail (a
        message made visible), keeping its attempt.

        The step that retry, change_visibility(0) and expiry share."""
        assert self.in_flight.get(rec.id) is rec, f"release of {rec.id!r}: not in flight"
        del self.in_flight[rec.id]
        rec.deadline = None
        if self.dies(rec):
            self.dead.append(rec)
            target = self.target
            if target is not None:  # the same step moves it into the dead-letter queue
                self.moved_receivers += target.move_in(rec, self.now, self.handle)[0]
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
        if self.ticks:  # a running redrive task keeps ticking (its scope ids are now skipped)
            self.timers.rebuild(
                [t for t in self.timers if t.attempt == TICK and self.ticks.get(t.id) == t.seq]
            )
        else:
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
        retention = self.retention
        if retention is not None:
            for group in (self.delayed, self.visible, self.in_flight):
                for r in group.values():
                    if r.kept:
                        yield Timer(r.enqueued_at + retention, r.kept, r.id, RETENTION)
        timers = self.timers
        for t in timers:
            if t.attempt == TICK and self.ticks.get(t.id) == t.seq:
                yield t

    def compact(self) -> None:
        """Rebuild the heap from the live timers, dropping the stale entries.

        With a retention every active message has a live timer: the heap is rebuilt only when
        stale entries outnumber those too (else every push would rebuild it)."""
        if self.retention is not None or self.ticks:
            live = len(self.in_flight) + self.active() + len(self.ticks)
            if len(self.timers) <= 2 * live + 16:
                return
        self.timers.rebuild(list(self.live_timers()))

    def current(self, timer: Timer) -> Record[T] | None:
        """The record ``timer`` still stands for, or ``None`` if it is stale: for a deadline,
        the in-flight delivery it was armed for; for a delay, the message while still delayed
        (a message is delayed once, with one entry); for a retention timer, the message while
        active; for a redrive tick, :data:`TICK_RECORD` while it is its task's current tick."""
        attempt = timer.attempt
        if not attempt:
            return self.delayed.get(timer.id)
        if attempt < 0:
            return self.current_other(timer)
        rec = self.in_flight.get(timer.id)
        if (
            rec is None
            or rec.seq != timer.seq
            or rec.attempt != timer.attempt
            or rec.deadline != timer.due
        ):
            return None
        return rec

    def current_other(self, timer: Timer) -> Record[T] | None:
        """:meth:`current` for a retention timer or a redrive tick."""
        if timer.attempt == TICK:
            return TICK_RECORD if self.ticks.get(timer.id) == timer.seq else None
        id = timer.id
        rec = self.visible.get(id) or self.in_flight.get(id) or self.delayed.get(id)
        return rec if rec is not None and rec.kept == timer.seq else None

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
                if rec is TICK_RECORD:
                    # A tick re-arms its task's next tick, which may be due by now too: the
                    # shell fires this much, then asks again, so that order stays one order.
                    break
        return due

    def undo_due(self, due: list[tuple[Timer, Record[T]]]) -> None:
        """Put back the timers :meth:`due` took (the sweep was vetoed)."""
        for timer, _ in due:
            self.timers.push(timer)

    def fire(self, timer: Timer, rec: Record[T]) -> Wake:
        """One due timer's step: a delivery's deadline expires (:meth:`expire`), a delayed
        message's ``visible_at`` makes it visible (:meth:`fire_delay`), a retention timer ages
        the message out (:meth:`age_out`). (A redrive tick is the shell's: it moves across two
        queues.)"""
        attempt = timer.attempt
        if attempt > 0:
            return self.expire(rec)
        if not attempt:
            return self.fire_delay(rec)
        assert attempt == RETENTION, "a redrive tick is fired by the shell"
        return self.age_out(rec)

    def expire(self, rec: Record[T]) -> Wake:
        """Expiry's step for one delivery whose deadline passed: release it."""
        return self.release(rec)

    def fire_delay(self, rec: Record[T]) -> Wake:
        """A due delay's step: the delayed ``rec`` joins the visible tail, attempt unchanged."""
        del self.delayed[rec.id]
        self.visible[rec.id] = rec
        return RECEIVER

    # -- retention, moves and redrive (contract section 7) -----------------------------------------

    def retain(self, rec: Record[T]) -> None:
        """Start ``rec``'s retention timer, due at ``rec.enqueued_at + retention``, after every
        timer started before it (nothing without a retention)."""
        retention = self.retention
        if retention is None:
            return
        self.started += 1
        rec.kept = self.started
        self.push_timer(Timer(rec.enqueued_at + retention, rec.kept, rec.id, RETENTION))

    def accept_at(self, id: str, body: T, now: float) -> Wake:
        """:meth:`accept` on a queue that reads the clock at acceptance: the message's enqueue
        time is ``now`` and its retention timer starts."""
        self.accepted.add(id)
        self.visible[id] = rec = Record(id, body)
        rec.enqueued_at = now
        self.retain(rec)
        return RECEIVER

    def accept_batch_at(self, ids: Sequence[str], bodies: Sequence[T], now: float) -> Wake:
        """:meth:`accept_batch` on a queue that reads the clock at acceptance (see
        :meth:`accept_at`): each entry as one ``accept_at``, in order."""
        for id, body in zip(ids, bodies, strict=True):
            self.accept_at(id, body, now)
        return (len(ids), 0)

    def accept_delayed_at(self, id: str, body: T, visible_at: float, now: float) -> Wake:
        """:meth:`accept_delayed` on a queue that reads the clock at acceptance: its delay
        timer first, then its retention timer (contract section 7.4)."""
        self.accepted.add(id)
        rec = Record(id, body)
        rec.enqueued_at = now
        self.add_delayed(rec, visible_at)
        self.retain(rec)
        return NOBODY

    def age_out(self, rec: Record[T]) -> Wake:
        """A due retention timer's step: the active ``rec`` is AGED_OUT (terminal): out of its
        group (its receipt dies, its deadline or delay timer goes stale); one slot freed."""
        self.remove(rec.id)
        self.aged.append(rec.id)
        return SENDER

    def enqueue_time_of_move(self, rec: Record[T], now: float) -> float:
        """The enqueue time a message dead-lettered into this queue keeps: a standard queue
        keeps the original (AWS: "the enqueue timestamp is unchanged"); a FIFO queue resets it
        (:class:`impl.fifo_core.FifoCore`)."""
        return rec.enqueued_at

    def new_record(self, id: str, body: T, group: str | None) -> Record[T]:
        """A record for a message this queue takes in by a move (``group``: FIFO only)."""
        return Record(id, body)

    def joined(self, rec: Record[T]) -> Wake:
        """The wake of a message just appended to the visible tail by a move: a receiver."""
        return RECEIVER

    def move_in(self, rec: Record[T], now: float, source: object) -> Wake:
        """The target's half of a dead-letter move (one step with the source's release): the
        message ``rec`` that died in ``source`` joins this queue's visible tail with the same
        id, body, group (FIFO) and attempt, its enqueue time as :meth:`enqueue_time_of_move`
        says, its retention timer started; no dedup check, no dedup record."""
        moved = self.new_record(rec.id, rec.body, getattr(rec, "group", None))
        moved.attempt = rec.attempt
        moved.enqueued_at = self.enqueue_time_of_move(rec, now)
        self.accepted.add(rec.id)
        self.visible[rec.id] = moved
        self.sources[rec.id] = source
        self.retain(moved)
        return self.joined(moved)

    def redrive_out(self, rec: Record[T], to: object, new_id: str) -> Wake:
        """The dead-letter queue's half of a redrive move: the visible ``rec`` is MOVED
        (terminal here), to the queue ``to`` as ``new_id``; one slot freed."""
        del self.visible[rec.id]
        self.moved[rec.id] = (to, new_id)
        return SENDER

    def accept_moved(self, id: str, body: T, group: str | None, now: float) -> Wake:
        """The destination's half of a redrive move: a new message ``id`` (attempt 0, enqueued
        ``now``, retention restarted, no source) joins the visible tail; no dedup."""
        rec = self.new_record(id, body, group)
        rec.enqueued_at = now
        self.accepted.add(id)
        self.visible[id] = rec
        self.retain(rec)
        return self.joined(rec)

    def arm_tick(self, name: str, due: float) -> None:
        """(Re-)arm the redrive task ``name``'s tick at ``due``, after every timer started
        before it; its previous tick goes stale."""
        self.started += 1
        self.ticks[name] = self.started
        self.push_timer(Timer(due, self.started, name, TICK))

    def drop_tick(self, name: str) -> None:
        """The task ``name`` no longer ticks (completed or cancelled): its timer goes stale."""
        self.ticks.pop(name, None)

    # -- self-check --------------------------------------------------------------------------

    def check(self) -> None:
        """Cheap (O(1)) checks of ``CapacityBound`` and ``OneState``'s counts: a broken one
        raises ``AssertionError`` whose message is exactly the invariant's name.

        Explicit raises, not ``assert`` statements: the check must hold under ``python -O``
        too, and its message must not depend on who imported this module (pytest rewrites the
        asserts of every package of a distribution that registers a pytest plugin, as this one
        does with ``sqs_endpoint.pytest_plugin``, and the rewritten message would carry the
        operands).
        """
        active = len(self.visible) + len(self.in_flight) + len(self.delayed)
        cap = self.capacity
        if cap is not None and active > cap:
            raise AssertionError("CapacityBound")
        if len(self.accepted) != active + len(self.done) + len(self.cancelled) + len(
            self.dead
        ) + len(self.aged) + len(self.moved):
            raise AssertionError("OneState")
