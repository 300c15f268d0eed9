"""The sweeper thread of a threaded queue: it fires each timer when it comes due, and survives.

One daemon thread per queue, started by the first timer armed (a finite deadline or a delay).
It loops: take the queue's lock, run one round (``SweeperLink.round``, the queue's
``BaseQueue._sweeper_round``, which runs ``BaseQueue._sweep_round``: fire what is due, return
the next due time), then wait on the ``new_deadline`` condition through the queue's clock until
that time or until a transition arms an earlier timer. It never polls: with no timer armed it
waits with no deadline at all, so an idle queue uses no CPU.

A queue with a dead-letter target (or a running redrive task) runs its round under the locks
of every queue the round may move messages into, taken in creation order
(``BaseQueue._sweep_round_locked``), and waits under its own lock alone.

It knows its queue only through the :class:`SweeperLink` the queue made for it: the queue's
lock, condition, clock and waiter counts, and the three methods it calls (its round and its
reports of a failed round and of the thread's death), held as weak methods and taken strongly
for one round at a time, so a queue nobody uses can be collected; the queue's ``__del__`` (or
``close``) sets ``link.stopped`` and notifies the condition, and the thread ends.

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
from collections.abc import Callable
from typing import Final

from impl.clock import Clock

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


#: The queue's side of its sweeper: ``(round, failed, died)``, methods of the queue (see
#: :class:`SweeperLink`).
Seams = tuple[
    Callable[[], float | None],
    Callable[[Exception, float], None],
    Callable[["SweeperLink", BaseException], None],
]


class SweeperLink:
    """What a sweeper thread shares with its queue, so that it need not hold the queue itself.

    While it waits the thread holds this, which holds the queue's methods it calls as weak
    methods, no strong reference to the queue.
    """

    __slots__ = (
        "clock",
        "cond",
        "died",
        "failed",
        "mutex",
        "round",
        "stopped",
        "target",
        "waiting",
    )

    def __init__(
        self,
        mutex: threading.RLock,
        cond: threading.Condition,
        clock: Clock,
        waiting: dict[object, int],
        seams: Seams,
    ) -> None:
        self.mutex = mutex
        self.cond = cond
        self.clock = clock
        #: The queue's count of waiters per condition (the sweeper's wait is counted in it).
        self.waiting = waiting
        round, failed, died = seams
        #: The queue's round, called with its lock held: fire what is due, return the time to
        #: sleep until (``None``: until notified). May raise: then it changed nothing.
        self.round = weakref.WeakMethod(round)
        #: ``failed(error, retry_at)``: the queue's report of a round that raised ``error``
        #: (logged and counted in its ``health()``); the thread retries at ``retry_at``.
        self.failed = weakref.WeakMethod(failed)
        #: ``died(link, error)``: the queue's report that its sweeper of ``link`` ends with
        #: ``error``; the queue's next arm, ``sweep()`` or ``health()`` starts another.
        self.died = weakref.WeakMethod(died)
        self.stopped = False
        #: The time the sweeper waits until (``None``: until notified), so that a new timer
        #: wakes it only if it is due earlier.
        self.target: float | None = None


def sweep_forever(link: SweeperLink) -> None:
    """The sweeper thread's body (see the module docstring)."""
    in_a_row = 0
    with link.mutex:
        while not link.stopped:
            round = link.round()
            if round is None:  # the queue was collected
                return
            # While ``round`` holds the queue, so do the weak methods of its reports.
            failed, died = link.failed(), link.died()
            assert failed is not None and died is not None
            try:
                # A queue with a dead-letter target or a running redrive needs other queues'
                # locks for its round (taken in creation order, then back to its own alone).
                target = round()
                in_a_row = 0
            except Exception as e:
                in_a_row += 1
                try:
                    target = link.clock.now() + backoff(in_a_row)
                except BaseException as clock_error:
                    died(link, clock_error)
                    return
                failed(e, target)
            except BaseException as e:  # SystemExit and the like: not a round to retry
                died(link, e)
                return
            link.target = target
            # May run the queue's __del__ right here, which sets link.stopped.
            del round, failed, died
            if link.stopped:
                return
            link.waiting[link.cond] += 1
            try:
                link.clock.wait(link.cond, target)
            except BaseException as e:
                link.waiting[link.cond] -= 1
                died = link.died()
                if died is not None:
                    died(link, e)
                return
            link.waiting[link.cond] -= 1
