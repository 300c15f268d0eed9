"""Mutants that only the controlled scheduler can express: the interrupt bug of a wait.

``docs/failure-model.md`` names two bugs of ``queue.Queue`` under a signal handler's exception
(an interrupt) and shows that ``impl.Queue`` has neither. The first, a notify used up by a
waiter that then leaves by the exception, is a bug of the queue's own code
(``impl.threaded.Conditions.wait`` passes the notify on); :class:`UnpassedInterruptQueue` is
the queue without that line, and the
scheduler injects the interrupt at the end of a notified wait (``Program.interrupts``). The
second, a plain ``Lock`` whose re-acquire inside ``Condition.wait`` an interrupt can break, is
a property of the lock, not of the queue's code: the controlled lock replaces it (it is always
re-taken before the interrupt is raised, as an ``RLock``'s is), so it is not expressed here;
``tests/test_impl_interrupts.py`` shows it with real signals.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Final, TypeVar

from impl import Queue
from impl.threaded import Conditions

T = TypeVar("T")


class UnpassedInterruptConditions(Conditions):
    """The conditions of :class:`UnpassedInterruptQueue`."""

    def wait(self, cond: threading.Condition, deadline: float | None) -> None:
        self.waiting[cond] += 1
        try:
            self.clock.wait(cond, deadline)
        finally:
            self.waiting[cond] -= 1  # BUG: an exception leaves without self.notify(cond)


class UnpassedInterruptQueue(Queue[T]):
    """MUTANT (interrupts): a wait that leaves by an exception does not pass its notify on.

    The bug: ``queue.Queue``'s: a receiver woken by a notify is interrupted (Ctrl-C) before it
    returns; the notify meant for "one message is visible" is used up, and another receiver
    sleeps beside the message. ``Conditions.wait`` passes one notify on before re-raising; this
    one only keeps the count of waiters right.

    Why the checks see it: the scheduler interrupts the notified receiver as it leaves its
    wait; the other receiver ends blocked with no timer beside a deliverable message: LOST
    WAKEUP.
    """

    conditions_class = UnpassedInterruptConditions


#: The scheduler's own mutants, by name.
LOCAL_MUTANTS: Final[Mapping[str, type[Queue[Any]]]] = {
    cls.__name__: cls for cls in (UnpassedInterruptQueue,)
}
