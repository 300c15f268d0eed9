"""The sweeper thread of a threaded queue: it fires each timer when it comes due, and survives.

One daemon thread per queue, started by the first timer armed (a finite deadline or a delay).
It loops: take the queue's lock, run one round (``BaseQueue._sweep_round``: fire what is due,
return the next due time), then wait on the ``new_deadline`` condition through the queue's
clock until that time or until a transition arms an earlier timer. It never polls: with no
timer armed it waits with no deadline at all, so an idle queue uses no CPU.

A queue with a dead-letter target (or a running redrive task) runs its round under the locks
of every queue the round may move messages into, taken in creation order
(``BaseQueue._sweep_round_locked``), and waits under its own lock alone.

It holds only a weak reference to its queue, taken strongly for one round at a time, so a queue
nobody uses can be collected; the queue's ``__del__`` (or ``close``) sets ``link.stopped`` and
notifies the condition, and the thread ends.

A round that raises (a trace sink or a clock ``now`` that fails) changed nothing: the sweep is
one transition that commits only after everything that can fail. The thread survives it: the
failure is logged (logger ``impl.queue``, at ERROR, with its traceback) and counted in
``health()``, and the round is tried again after a backoff measured on the queue's clock
(:func:`backoff`: 10 ms doubling to at most 1 s), or sooner if a transition arms an earlier
timer. So expiry resumes by itself once the cause goes away, and a failure that persists costs
at most one round a second. Only a failure of the clock's ``wait`` itself (or of the clock read
that aims the backoff) ends the thread, since it cannot wait without it: that death is logged and
reported too, and the next arm, ``sweep()`` or ``health()`` starts another.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any, Final

from impl.clock import Clock

if TYPE_CHECKING:
    from impl.shell import BaseQueue

__all__ = ["FIRST_BACKOFF", "MAX_BACKOFF", "SweeperLink", "backoff", "log", "sweep_forever"]

#: Where a sweeper's failures and deaths are reported (at ERROR, with the traceback).
log = logging.getLogger("impl.queue")

#: The wait after the first failed round, in seconds of the queue's clock; it doubles with each
#: failed round in a row, up to :data:`MAX_BACKOFF`.
FIRST_BACKOFF: Final = 0.01
MAX_BACKOFF: Final = 1.0


def backoff(failures_in_a_row: int) -> float:
    """How long the sweeper waits after its ``failures_in_a_row``-th failed round in a row."""
    return min(MAX_BACKOFF, FIRST_BACKOFF * 2.0 ** min(failures_in_a_row - 1, 16))


class SweeperLink:
    """What a sweeper thread shares with its queue, so that it need not hold the queue itself.

    While it waits the thread holds this and a weak reference to the queue, no strong one.
    """

    __slots__ = ("clock", "cond", "mutex", "stopped", "target", "waiting")

    def __init__(
        self,
        mutex: threading.RLock,
        cond: threading.Condition,
        clock: Clock,
        waiting: dict[object, int],
    ) -> None:
        self.mutex = mutex
        self.cond = cond
        self.clock = clock
        #: The queue's count of waiters per condition (the sweeper's wait is counted in it).
        self.waiting = waiting
        self.stopped = False
        #: The time the sweeper waits until (``None``: until notified), so that a new timer
        #: wakes it only if it is due earlier.
        self.target: float | None = None


def sweep_forever(ref: weakref.ReferenceType[BaseQueue[Any]], link: SweeperLink) -> None:
    """The sweeper thread's body (see the module docstring)."""
    in_a_row = 0
    with link.mutex:
        while not link.stopped:
            q = ref()
            if q is None:
                return
            try:
                # A queue with a dead-letter target or a running redrive needs other queues'
                # locks for its round (taken in creation order, then back to its own alone).
                target = q._sweep_round() if q._alone() else q._sweep_round_locked()
                in_a_row = 0
            except Exception as e:
                in_a_row += 1
                try:
                    target = link.clock.now() + backoff(in_a_row)
                except BaseException as clock_error:
                    q._sweeper_died(link, clock_error)
                    return
                q._sweep_failed(e, target)
            except BaseException as e:  # SystemExit and the like: not a round to retry
                q._sweeper_died(link, e)
                return
            link.target = target
            del q  # may run the queue's __del__ right here, which sets link.stopped
            if link.stopped:
                return
            link.waiting[link.cond] += 1
            try:
                link.clock.wait(link.cond, target)
            except BaseException as e:
                link.waiting[link.cond] -= 1
                q = ref()
                if q is not None:
                    q._sweeper_died(link, e)
                return
            link.waiting[link.cond] -= 1
