"""The values the threaded queue takes and hands out: batch entries, receipts, messages, stats
and snapshots.

All are frozen dataclasses: a caller holding one can never change the queue through it, and a
value read under the queue's lock stays true to the instant it was taken.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Final, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Entry(Generic[T]):
    """One message of a ``send_batch``: its body and, optionally, its id and delay.

    ``id``: ``None`` asks for a fresh generated id; ``delay``: seconds before it becomes visible,
    ``None`` meaning the queue's default. ``group`` and ``dedup_id`` belong to FIFO queues (the
    contract's section 2b) and are refused by a standard queue. Nothing is checked here:
    ``send_batch`` checks every entry before it changes anything, naming the entry's index
    (``entries[3].id must ...``).
    """

    body: T
    _: KW_ONLY
    id: str | None = None
    delay: float | None = None
    group: str | None = None
    dedup_id: str | None = None


@dataclass(frozen=True, slots=True)
class Receipt:
    """Names one delivery: (queue, id, attempt). Live only while that delivery is in flight.

    ``queue`` is the issuing queue's identity token, so a receipt from another queue never
    matches here even when the id and attempt do. Receipts compare and hash by value.
    """

    queue: int
    id: str
    attempt: int

    def __post_init__(self) -> None:
        # Only the field types are checked: any receipt of the right shape is a fair question
        # to ask a queue, which answers False for one it did not issue or that is not live.
        # One fast test first (``type(x) is int`` also rejects bool): a receipt is made for
        # every delivery, and the loop below alone cost about 0.5 µs of each.
        if type(self.queue) is int and type(self.attempt) is int and isinstance(self.id, str):
            return
        for name, value, kind in (("queue", self.queue, int), ("attempt", self.attempt, int)):
            if not isinstance(value, kind) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if not isinstance(self.id, str):
            raise TypeError(f"id must be a str, got {type(self.id).__name__}")


@dataclass(frozen=True, slots=True)
class Message(Generic[T]):
    """One delivery of a message: what ``receive`` returns (and ``dead_letters`` lists).

    ``attempt`` is 1 on the first delivery and grows by one with each redelivery; ``receipt`` is
    the handle that ``delete``, ``retry`` and ``change_visibility`` need; ``group`` is ``None``
    except on a FIFO queue's messages (:class:`FifoMessage`).
    """

    id: str
    body: T
    attempt: int
    receipt: Receipt

    @property
    def group(self) -> str | None:
        """The message's group: ``None`` here; a FIFO queue hands out :class:`FifoMessage`,
        whose ``group`` is a field. (Not a field of its own: a frozen dataclass pays for each
        field on every construction, and one more cost every delivery of a standard queue
        about 3 % of a send-receive-delete cycle, ``bench.icount``.)"""
        return None


@dataclass(frozen=True, slots=True)
class FifoMessage(Message[T]):
    """A delivery from a FIFO queue (``impl.FifoQueue``): a :class:`Message` with its
    ``group``."""

    group: str | None = None


@dataclass(frozen=True, slots=True)
class Stats:
    """How many messages are in each state, counted in one atomic step.

    ``delayed`` comes last (with a default) so that values built before delays existed still
    compare equal; so do ``aged_out`` (messages whose retention ran out here) and ``moved``
    (messages a redrive moved out of this dead-letter queue), after it.
    """

    visible: int
    in_flight: int
    done: int
    cancelled: int
    dead: int
    delayed: int = 0
    aged_out: int = 0
    moved: int = 0


@dataclass(frozen=True, slots=True)
class SnapshotMessage(Generic[T]):
    """A message inside a :class:`Snapshot`; ``deadline`` is ``None`` unless in flight with one,
    ``visible_at`` is ``None`` unless delayed.

    FIFO queues only (else the defaults): ``group`` is the message's group and ``sent`` its
    place in the queue's send order, how many messages the queue accepted before it (as the
    spec's ``Msg.sent``).
    """

    id: str
    body: T
    attempt: int
    deadline: float | None
    visible_at: float | None = None
    group: str | None = None
    sent: int = 0


@dataclass(frozen=True, slots=True)
class Snapshot(Generic[T]):
    """The whole observable state of a queue, taken in one atomic step (for model-based tests).

    ``visible``   head first, in the order each message (re-)entered;
    ``in_flight`` in the order of their current delivery (receive order);
    ``dead``      in the order they died;
    ``done`` and ``cancelled`` as sets of ids (their bodies are no longer kept);
    ``delayed``   in the order they were sent, each with its ``visible_at``;
    ``dedup``     FIFO queues only: the deduplication records ``(dedup_id, id, accepted_at)``
                  the queue keeps, one per dedup id (that of its latest acceptance), sorted by
                  dedup id, as the spec's ``State.dedup``; records whose window has passed may
                  have been dropped. ``()`` on standard queues.
    ``aged_out`` and ``moved``, as sets of ids: the messages whose retention ran out here, and
                  those a redrive moved out of this dead-letter queue (empty, the defaults, on
                  a queue with neither, so snapshots taken before they existed compare equal).
    """

    visible: tuple[SnapshotMessage[T], ...]
    in_flight: tuple[SnapshotMessage[T], ...]
    dead: tuple[SnapshotMessage[T], ...]
    done: frozenset[str]
    cancelled: frozenset[str]
    delayed: tuple[SnapshotMessage[T], ...] = ()
    dedup: tuple[tuple[str, str, float], ...] = ()
    aged_out: frozenset[str] = frozenset()
    moved: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Health:
    """Whether expiry is working, read in one atomic step (see ``Queue.health``).

    ``sweeper_running``  a sweeper thread is alive now;
    ``sweeper_failures`` how many sweeper threads have died of an exception so far;
    ``last_error``       the latest such exception (or a failed restart), else ``None``;
    ``expiry_stalled``   deadlines are armed, the queue is not closed, and no sweeper is alive:
                         nothing expires them until the next restart.
    """

    sweeper_running: bool
    sweeper_failures: int
    last_error: BaseException | None
    expiry_stalled: bool


# A delivery's message and receipt are slotted frozen dataclasses, whose generated __init__ sets
# each field through object.__setattr__ (and Receipt's __post_init__ checks the types): a fifth
# of a send-receive-delete cycle. The queue machine, whose values are well typed by
# construction, builds them with these: an empty object, then each slot set through its
# descriptor. The result is equal, field for field, to what the constructor makes.

#: A new object of a class, without its ``__init__``.
new_object: Final = object.__new__
#: The setters of :class:`Receipt`'s slots.
set_receipt_queue: Final = vars(Receipt)["queue"].__set__
set_receipt_id: Final = vars(Receipt)["id"].__set__
set_receipt_attempt: Final = vars(Receipt)["attempt"].__set__
#: The setters of :class:`Message`'s slots (a :class:`FifoMessage` has its ``group`` too).
set_message_id: Final = vars(Message)["id"].__set__
set_message_body: Final = vars(Message)["body"].__set__
set_message_attempt: Final = vars(Message)["attempt"].__set__
set_message_receipt: Final = vars(Message)["receipt"].__set__
set_message_group: Final = vars(FifoMessage)["group"].__set__
