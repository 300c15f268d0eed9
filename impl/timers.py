"""The timer heap of one queue: delays, visibility deadlines, retention and redrive ticks in the
contract's one timer order.

A queue has up to four kinds of timer: a delayed message's ``visible_at``, a delivery's
deadline, a message's retention (due at ``enqueued_at + retention``, contract section 7.4) and
the tick of a running redrive task of a dead-letter queue (rule 5). All live in one heap of
:class:`Timer` entries ordered by ``(due, seq)``: by due time, ties in the order the timers
were started (one counter for every kind). That is exactly the order in which the contract's
``expire`` fires them (``tla/Queue.tla``'s ``Expire``, ``spec.expire``).

The kind is encoded in ``attempt``: ``>= 1`` a delivery's deadline (that delivery's attempt),
:data:`DELAY` (0) a delay, :data:`RETENTION` (-1) a retention timer, :data:`TICK` (-2) a
redrive tick (its ``id`` is then the task's name). A queue with no retention and no redrive
has only the first two, exactly as before.

The heap may hold stale entries (a delivery deleted, released or re-armed, a delay cancelled):
removing from the middle of a heap is O(n), so an entry is left in place and skipped when it
reaches the top; the owner says which entries are still current. When stale entries outnumber
live ones the owner rebuilds the heap (:meth:`Timers.rebuild`), which keeps every push O(log n)
amortized. This module knows nothing about messages: no lock, no clock, no thread.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import Final, NamedTuple

#: ``Timer.attempt`` of a delayed message's ``visible_at``.
DELAY: Final = 0
#: ``Timer.attempt`` of a message's retention timer.
RETENTION: Final = -1
#: ``Timer.attempt`` of a redrive task's tick (``Timer.id`` is the task's name).
TICK: Final = -2


class Timer(NamedTuple):
    """One timer: due at ``due``; ``seq``, its place in start order; the message ``id``; and
    ``attempt``, the delivery whose deadline it is (>= 1), or the kind of the other timers:
    :data:`DELAY`, :data:`RETENTION`, :data:`TICK` (see the module docstring). Tuples order
    field by field, so the heap order is (due, seq) and total:
    two timers never share a ``seq``."""

    due: float
    seq: int
    id: str
    attempt: int

    @property
    def is_delay(self) -> bool:
        """Whether this is a delayed message's ``visible_at``."""
        return not self.attempt

    @property
    def is_deadline(self) -> bool:
        """Whether this is a delivery's deadline."""
        return self.attempt > 0

    @property
    def is_retention(self) -> bool:
        """Whether this is a message's retention timer."""
        return self.attempt == RETENTION

    @property
    def is_tick(self) -> bool:
        """Whether this is a redrive task's tick."""
        return self.attempt == TICK


#: A heap entry: a :class:`Timer`'s four fields as a plain tuple, which the heap orders alike.
#: A receive pushes one per delivery, and a plain tuple costs a quarter of a named tuple to
#: make (``python -m bench.floor``'s profile); what reads the heap gets :class:`Timer` values.
Entry = tuple[float, int, str, int]


class Timers(list[Entry]):
    """A heap of timer entries, earliest first: a list kept in ``heapq`` order.

    A list itself (not a wrapper of one) so that the hot path pays no method call: the machine
    pushes with ``heapq.heappush(timers, (due, seq, id, attempt))`` and counts with
    ``len(timers)``. Entries go in as plain tuples or :class:`Timer` values (both order alike)
    and come out as :class:`Timer` values, read by name: :meth:`first`, :meth:`pop_first`,
    :meth:`pop_due`, :meth:`entries`. Only the queue's machine touches it, with the queue's
    lock held.
    """

    __slots__ = ()

    def push(self, timer: Timer) -> None:
        heapq.heappush(self, timer)

    def first(self) -> Timer | None:
        """The earliest entry, current or stale, or ``None`` when empty."""
        return new_timer(Timer, self[0]) if self else None

    def pop_first(self) -> Timer:
        """Remove and return the earliest entry (the heap must not be empty)."""
        return new_timer(Timer, heapq.heappop(self))

    def pop_due(self, now: float) -> Timer | None:
        """Remove and return the earliest entry if it is due at ``now`` or before (current or
        stale), else ``None`` and nothing changes."""
        if self and self[0][0] <= now:  # an entry's first field is its due time
            return new_timer(Timer, heapq.heappop(self))
        return None

    def entries(self) -> Iterator[Timer]:
        """Every entry, current or stale, in heap (not time) order."""
        for entry in self:
            yield new_timer(Timer, entry)

    def rebuild(self, current: Iterable[Timer]) -> None:
        """Replace every entry by ``current``: the owner's live timers, stale ones dropped."""
        self[:] = current
        heapq.heapify(self)


#: ``Timer(due, seq, id, attempt)`` without the Python-level ``__new__`` of a named tuple:
#: ``new_timer(Timer, entry)`` views a heap entry as a :class:`Timer`.
new_timer = tuple.__new__
