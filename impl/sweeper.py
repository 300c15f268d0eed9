"""The sweeper thread of a threaded queue: it fires each timer when it comes due, and survives.

One daemon thread per queue, started before the first step that arms a timer commits. It is a
small loop over the queue machine's ``fire_due`` and ``next_due``: take the queue's lock, run
one round (``SweeperLink.round``: the queue fires what is due, ``Machine.fire_due`` until it
answers ``None``, applying each outcome, and returns ``Machine.next_due()``), then wait on the
``new_deadline`` condition (the queue's ``Conditions.wait``, through its clock) until that time
or until a step arms an earlier timer. It never polls: with no timer armed it waits with no
deadline at all, so an idle queue uses no CPU.

A queue with a dead-letter target (or a running redrive task) runs its round under the locks
of every queue the round may move messages into, taken in creation order
(``Machine.sweep_queues``), and waits under its own lock alone.

It knows its queue only through the :class:`SweeperLink` the queue made for it: the queue's
lock, condition and conditions, and the three methods it calls (its round and its
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
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from impl.clock import Clock

if TYPE_CHECKING:
    from impl.threaded import Conditions

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
        "conditions",
        "died",
        "failed",
        "mutex",
        "round",
        "stopped",
        "target",
    )

    def __init__(self, conditions: Conditions, clock: Clock, seams: Seams) -> None:
        #: The queue's conditions: the sweeper waits on ``new_deadline`` through their
        #: ``wait``, counted as every waiter is.
        self.conditions = conditions
        self.mutex = conditions.mutex
        self.cond = conditions.new_deadline
        self.clock = clock
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
            try:
                link.conditions.wait(link.cond, target)
            except BaseException as e:
                died = link.died()
                if died is not None:
                    died(link, e)
                return
