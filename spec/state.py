"""The values of the pure-function state machine: messages, receipts, deliveries, queue state.

Everything here is an immutable, hashable value, so a whole reachable state space can be put in
a set and two states can be compared with ``==``. Nothing here reads a clock, takes a lock or
mutates anything: that is the point of the spec (see ``docs/contract.md``, section 2).

The state is deliberately redundant: each message carries its own ``status``, and the ordered
tuples ``visible``, ``in_flight``, ``dead``, ``delayed`` and ``timers`` say the same thing again,
in order. The invariants
in :mod:`spec.invariants` check that the two views agree, which is what catches a transition that
updates one and forgets the other.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field, replace
from typing import Final

#: A point in time. The spec never reads a clock: every timed transition takes ``now``.
Time = float


class Status(enum.Enum):
    """The states of a message (contract sections 1 and 7): three active ones, then the terminal
    ones. ``AGED_OUT`` (its retention ran out) and ``MOVED`` (a redrive took it to another queue)
    come last: a queue with no retention and no redrive never has them."""

    #: Sent with a delay, not yet deliverable: it has a ``visible_at`` time (and a timer).
    DELAYED = "DELAYED"
    VISIBLE = "VISIBLE"
    IN_FLIGHT = "IN_FLIGHT"
    DONE = "DONE"
    CANCELLED = "CANCELLED"
    DEAD = "DEAD"
    #: Its retention timer fired while it was active (contract 7.4).
    AGED_OUT = "AGED_OUT"
    #: A redrive moved it out of this dead-letter queue, as a new message (contract 7.5).
    MOVED = "MOVED"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL

    @property
    def active(self) -> bool:
        """Active messages count against capacity: delayed, visible and in-flight ones."""
        return self is Status.VISIBLE or self is Status.IN_FLIGHT or self is Status.DELAYED


TERMINAL: Final = frozenset(
    {Status.DONE, Status.CANCELLED, Status.DEAD, Status.AGED_OUT, Status.MOVED}
)

#: The kinds of timer in a queue's one timer order (:attr:`State.order`), TLA+'s strings: a
#: delay or a deadline (``Msg.due``), a retention timer, a redrive task's tick.
MSG: Final = "msg"
RET: Final = "ret"
TICK: Final = "tick"

#: One timer of the order: ``(kind, name)``, the name a message id (a task's name for a tick).
TimerEntry = tuple[str, str]

#: A FIFO queue's default deduplication interval, seconds: SQS's five minutes (contract section
#: 2b). The spec's one definition; ``model_tests/tests/test_constants.py`` checks every layer's
#: against it.
DEDUP_INTERVAL: Final = 300.0


@dataclass(frozen=True, slots=True)
class Msg:
    """One accepted message, whatever its state.

    ``attempt`` counts deliveries so far (0 before the first). ``deadline`` is set only while the
    message is ``IN_FLIGHT`` with a finite visibility timeout; ``None`` otherwise. ``visible_at``
    is set exactly while the message is ``DELAYED``: when its delay fires (at the first sweep at
    or after that time); ``None`` otherwise.

    On a FIFO queue (contract section 2b) ``group`` is the message's group, ``sent`` its place
    in the queue's send order (how many messages the queue accepted before it) and ``dedup_id``
    the deduplication id it was accepted with, if any. On a standard queue they keep their
    defaults (``None``, 0, ``None``), so standard states are the values they always were.

    ``enqueued_at`` (contract 7.4) is the time its retention counts from: set by a send to a
    queue with a ``retention`` (and by every send of a :mod:`spec.system`, whose moves carry
    it), kept by a dead-letter move into a standard queue, ``now`` after a move into a FIFO
    queue or a redrive; 0 otherwise. ``base`` is the attempt it arrived with by a dead-letter
    move (TLA+ ``base``: its deliveries in this queue are ``attempt - base``); 0 for a message
    sent or redriven here. Both last, with defaults, so earlier states are the same values.
    """

    id: str
    body: str
    status: Status = Status.VISIBLE
    attempt: int = 0
    deadline: Time | None = None
    visible_at: Time | None = None
    group: str | None = None
    sent: int = 0
    dedup_id: str | None = None
    enqueued_at: Time = 0.0
    base: int = 0

    @property
    def due(self) -> Time | None:
        """When this message's timer is due: ``visible_at`` while ``DELAYED``, the deadline while
        ``IN_FLIGHT`` with one; ``None`` when it has no running timer."""
        if self.status is Status.DELAYED:
            return self.visible_at
        if self.status is Status.IN_FLIGHT:
            return self.deadline
        return None


@dataclass(frozen=True, slots=True)
class Receipt:
    """Names one delivery: (queue, id, attempt). Live only while that delivery is in flight."""

    queue: int
    id: str
    attempt: int


@dataclass(frozen=True, slots=True)
class Delivery:
    """What ``receive`` hands out: the message as delivered, with a fresh receipt."""

    id: str
    body: str
    attempt: int
    receipt: Receipt


@dataclass(frozen=True, slots=True)
class Config:
    """The fixed parameters of one queue.

    ``capacity``: bound on *active* messages, ``None`` for unbounded, 0 accepts nothing.
    ``max_receives``: a release of a message delivered this many times dead-letters it; ``None``
    never dead-letters.
    ``delay``: the queue's default delay, used by a send whose own delay is ``None``; 0 (the
    default) makes a sent message visible at once.
    ``fifo``: a FIFO queue (contract section 2b): message groups, group locking, send order,
    deduplication; its delay is the queue's only.
    ``dedup_interval``: on a FIFO queue, how long after an acceptance a send with the same
    ``dedup_id`` is a duplicate (seconds, > 0).
    ``retention``: how long a message may stay (contract 7.4): its retention timer is due at
    ``enqueued_at + retention``; ``None`` (the default) keeps messages for ever.
    """

    capacity: int | None = None
    max_receives: int | None = None
    delay: Time = 0.0
    fifo: bool = False
    dedup_interval: Time = DEDUP_INTERVAL
    retention: Time | None = None

    def __post_init__(self) -> None:
        if self.capacity is not None and self.capacity < 0:
            raise ValueError(f"capacity must be >= 0 or None, got {self.capacity!r}")
        if self.max_receives is not None and self.max_receives < 1:
            raise ValueError(f"max_receives must be >= 1 or None, got {self.max_receives!r}")
        if isinstance(self.delay, bool) or not isinstance(self.delay, int | float):
            raise TypeError(f"delay must be a number, got {self.delay!r}")
        if not math.isfinite(self.delay) or self.delay < 0:
            raise ValueError(f"delay must be a finite number >= 0, got {self.delay!r}")
        if not isinstance(self.fifo, bool):
            raise TypeError(f"fifo must be a bool, got {self.fifo!r}")
        di = self.dedup_interval
        if isinstance(di, bool) or not isinstance(di, int | float):
            raise TypeError(f"dedup_interval must be a number, got {di!r}")
        if not math.isfinite(di) or di <= 0:
            raise ValueError(f"dedup_interval must be a finite number > 0, got {di!r}")
        r = self.retention
        if r is not None:
            if isinstance(r, bool) or not isinstance(r, int | float):
                raise TypeError(f"retention must be a number or None, got {r!r}")
            if not math.isfinite(r) or r <= 0:
                raise ValueError(f"retention must be a finite number > 0 or None, got {r!r}")


@dataclass(frozen=True, slots=True)
class State:
    """The whole state of one queue, as a value.

    Fields:
      ``messages``  every accepted message, sorted by id, so equal states are equal values
                    whatever order the sends happened in;
      ``visible``   ids of ``VISIBLE`` messages, head first, in the order they (re-)entered;
      ``in_flight`` ids of ``IN_FLIGHT`` messages, in the order they were received (this order
                    breaks ties between equal deadlines when the sweeper expires them);
      ``dead``      ids of ``DEAD`` messages, in the order they died;
      ``queue``     which queue this is, so a receipt from another queue never matches;
      ``delayed``   ids of ``DELAYED`` messages, in the order they were sent;
      ``timers``    ids of every ``DELAYED`` and ``IN_FLIGHT`` message, in the order their
                    timers were started: the one order that breaks ties between equal due times
                    when the sweeper fires them (contract section 2, *Timers*). A timer is
                    started by the send that delayed the message or by the receive that
                    delivered it, so a delayed send and every delivery append the id;
                    ``change_visibility`` keeps the id's place; whatever ends the delay or the
                    delivery removes it. A delivery without a deadline (``vt=None``) has no
                    running timer yet, but it has its place: a later ``change_visibility``
                    gives it a deadline at that place, the receive's, as the contract's "ties
                    by receive order" says. So with no delays ``timers`` is ``in_flight``.

      ``dedup``     FIFO queues only: the deduplication records ``(dedup_id, id,
                    accepted_at)``, one per dedup id, that of its latest acceptance (a
                    duplicate never touches it), sorted by dedup id; ``()`` on standard queues;
      ``aged_out``  ids of ``AGED_OUT`` messages, in the order they aged out;
      ``moved``     ids of ``MOVED`` messages, in the order they were redriven out;
      ``order``     the one timer order when it holds more than ``timers`` (contract 7.4):
                    every running timer, in start order, as ``(kind, name)``: ``("msg", id)``
                    a delay or deadline (exactly the entries of ``timers``, in the same order),
                    ``("ret", id)`` a retention timer, ``("tick", task)`` a redrive task's tick
                    (only :mod:`spec.system` starts those). ``()`` when no retention timer and
                    no tick runs: the order is then ``timers``, as it always was
                    (:meth:`timer_order` gives it either way). A retention timer is started at
                    acceptance (after the delay timer), at a move in and at a redrive in; it
                    stops when its message ends (terminal: a stale timer is simply gone).
                    With no retention and no tick, ``timers`` is the whole order.

    On a FIFO queue ``visible`` is in send order (``Msg.sent``): a released message goes back
    to its place, not to the tail (contract section 2b).

    ``delayed`` and ``timers`` come after ``queue`` so that states built positionally before
    delays existed still mean what they meant; ``dedup`` and then the fields of contract 7
    (``aged_out``, ``moved``, ``order``) come last for the same reason, so a queue with no
    retention and no redrive has the values it always had.
    """

    config: Config = field(default_factory=Config)
    messages: tuple[Msg, ...] = ()
    visible: tuple[str, ...] = ()
    in_flight: tuple[str, ...] = ()
    dead: tuple[str, ...] = ()
    queue: int = 0
    delayed: tuple[str, ...] = ()
    timers: tuple[str, ...] = ()
    dedup: tuple[tuple[str, str, Time], ...] = ()
    aged_out: tuple[str, ...] = ()
    moved: tuple[str, ...] = ()
    order: tuple[TimerEntry, ...] = ()

    # -- read-only helpers: lookups, never updates ------------------------------------------

    def get(self, id: str) -> Msg | None:
        """The message with this id, or ``None`` if the id was never accepted."""
        for m in self.messages:
            if m.id == id:
                return m
        return None

    def ids(self) -> frozenset[str]:
        return frozenset(m.id for m in self.messages)

    def count(self, status: Status) -> int:
        return sum(1 for m in self.messages if m.status is status)

    @property
    def active(self) -> int:
        """Delayed plus visible plus in-flight: what capacity bounds."""
        return sum(1 for m in self.messages if m.status.active)

    def is_live(self, receipt: Receipt) -> bool:
        """A receipt is live iff its message is in flight with exactly that attempt, here."""
        if receipt.queue != self.queue:
            return False
        m = self.get(receipt.id)
        return m is not None and m.status is Status.IN_FLIGHT and m.attempt == receipt.attempt

    def locked_groups(self) -> frozenset[str]:
        """FIFO queues: the groups with an ``IN_FLIGHT`` message, whose messages no receive
        delivers."""
        return frozenset(
            m.group for m in self.messages if m.status is Status.IN_FLIGHT and m.group is not None
        )

    def deliverable(self) -> tuple[str, ...]:
        """The visible ids a receive may take, in order: on a FIFO queue those whose group is
        not locked; on a standard queue every visible id."""
        if not self.config.fifo:
            return self.visible
        locked = self.locked_groups()
        out: list[str] = []
        for id in self.visible:
            m = self.get(id)
            if m is not None and m.group not in locked:
                out.append(id)
        return tuple(out)

    def timer_order(self) -> tuple[TimerEntry, ...]:
        """Every running timer in start order, as ``(kind, name)`` (see ``order``)."""
        return self.order if self.order else tuple((MSG, id) for id in self.timers)

    def retention_due(self, m: Msg) -> Time | None:
        """When ``m``'s retention timer is due here, or ``None`` when this queue has none."""
        r = self.config.retention
        return None if r is None else m.enqueued_at + r

    def with_msg(self, msg: Msg) -> State:
        """A copy with ``msg`` put in place of the message with the same id (or added)."""
        others = tuple(m for m in self.messages if m.id != msg.id)
        return replace(self, messages=tuple(sorted((*others, msg), key=lambda m: m.id)))


def initial(config: Config | None = None, queue: int = 0) -> State:
    """The empty queue."""
    return State(config=config if config is not None else Config(), queue=queue)
