"""What a step of the queue machine returns: an outcome value, carrying its effects.

A machine step (``impl/machine.py``) never blocks, never notifies and never reads a clock, so
everything its driver must do afterwards is in the value it returns (as h11's ``Connection``
returns events and never touches a socket):

- :class:`Outcome` for a step that took place: its ``kind`` and the caller's ``result``, and its
  effects on this queue (``receivers`` to wake, ``senders`` to wake, the earliest timer ``due``
  it armed, for the sweeper) and on the other queues of its system (``elsewhere``: a message
  dead-lettered or redriven into another queue is one step across both).
- :class:`Blocked` for a step that could not take place and changed nothing: ``NOTHING`` (no
  message is deliverable: a receive waits on ``not_empty``), ``NO_ROOM`` (a send waits on
  ``not_full``) or ``SHUT`` (the queue is shut down: the call raises ``ShutDown``).

The drivers apply an outcome the same way: the threaded one notifies its conditions
(``impl/threaded.py``), the asyncio one resolves waiter futures (``impl/aio.py``). The trace
steps of an outcome are data too (:data:`TraceStep`), handed to the driver before the commit
(the machine's ``before_step`` veto point), since a trace sink may refuse its step.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any, Final, NamedTuple

__all__ = [
    "ACCEPTED",
    "ACTED",
    "DELIVERED",
    "DUPLICATE",
    "FIRED",
    "NOTHING",
    "NO_ROOM",
    "SHUT",
    "Blocked",
    "Effect",
    "Outcome",
    "TraceStep",
    "new_outcome",
]

#: One recorded transition, ``(action, args, result, now)``: what a queue's trace sink is given
#: (``BaseQueue.record_trace``; ``tla/trace.py`` checks a list of them against ``Queue.tla``).
TraceStep = tuple[str, tuple[object, ...], object, float]

#: ``Outcome.kind`` of a send that accepted its message(s): ``result`` is the id (the ids).
ACCEPTED: Final = "accepted"
#: ... of a FIFO send deduplicated (contract section 2b): ``result`` is the earlier id.
DUPLICATE: Final = "duplicate"
#: ... of a receive: ``result`` is the delivery (the deliveries, in order).
DELIVERED: Final = "delivered"
#: ... of every other operation: ``result`` is its answer (a bool, a list of bool, a count).
ACTED: Final = "acted"
#: ... of a sweep's round (``fire_due``): ``result`` is how many timers fired.
FIRED: Final = "fired"


class Effect(NamedTuple):
    """What a step did to another queue of its system (a dead-letter move, a redrive move):
    ``queue`` is that queue's machine (its driver is ``queue.owner``), and the rest as the
    fields of :class:`Outcome` of the same names."""

    queue: Any
    receivers: int
    senders: int
    due: float | None


class Outcome(NamedTuple):
    """A step that took place (see the module docstring). Tuples: cheap to make, read by name."""

    #: What happened: :data:`ACCEPTED`, :data:`DUPLICATE`, :data:`DELIVERED`, :data:`ACTED`,
    #: :data:`FIRED`.
    kind: str
    #: What the caller of the operation gets.
    result: Any
    #: How many messages the step made deliverable here: wake that many receivers.
    receivers: int
    #: How many slots the step freed here: wake that many senders.
    senders: int
    #: The earliest timer the step armed here (``None``: none): the sweeper must wake by then.
    due: float | None
    #: Its effects on other queues of its system, in the order they happened.
    elsewhere: tuple[Effect, ...]


#: ``Outcome(kind, result, receivers, senders, due, elsewhere)`` without the Python-level
#: ``__new__`` of a named tuple, for the steps every message takes:
#: ``new_outcome(Outcome, (kind, result, receivers, senders, due, elsewhere))``.
new_outcome: Final[Callable[[type[Outcome], tuple[Any, ...]], Outcome]] = tuple.__new__


class Blocked(enum.Enum):
    """A step that could not take place, and changed nothing (see the module docstring)."""

    #: Nothing is deliverable: a receive waits on ``not_empty`` (or raises ``Empty``).
    NOTHING = "not_empty"
    #: No room: a send waits on ``not_full`` (or raises ``Full``).
    NO_ROOM = "not_full"
    #: The queue is shut down: the call raises ``ShutDown``.
    SHUT = "shut down"


NOTHING: Final = Blocked.NOTHING
NO_ROOM: Final = Blocked.NO_ROOM
SHUT: Final = Blocked.SHUT
