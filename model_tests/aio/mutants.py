"""The two teaching bugs of the asyncio driver, as mutants of ``impl.AsyncQueue``.

Each names broken conditions (``conditions_class``: a subclass of ``impl.aio.Futures``, the
public class of the driver's waits), never a private method, so the explorer runs the real
queue's code everywhere else:

- :class:`NoPassOnAsyncQueue`: a woken waiter that is cancelled does not pass its wakeup on
  (``Futures.pass_on`` does nothing): another receiver sleeps beside a visible message
  (``NoSleepingWaiter`` fails);
- :class:`HandoffAsyncQueue`: the waker delivers on the waiter's behalf (the machine's receive
  at wake time, the waiter's future resolved with its outcome, which the woken task takes as its
  own step's): a waiter cancelled after that strands an in-flight message no task holds
  (``HeldDeliveries`` fails).
"""

from __future__ import annotations

from typing import Any, Final

from impl.aio import AsyncQueue, Futures, Waiters
from impl.outcome import Outcome


class NoPassOnFutures(Futures):
    """A cancelled woken waiter keeps its wakeup: nobody else is woken."""

    def pass_on(self, cond: Waiters) -> None:
        pass  # BUG: not self.notify(cond)


class NoPassOnAsyncQueue(AsyncQueue[Any]):
    """The asyncio queue whose cancelled woken waiters keep their wakeups."""

    conditions_class = NoPassOnFutures


class HandoffFutures(Futures):
    """The waker receives for the receiver it wakes, and hands it the outcome."""

    #: The queue whose receives this waker makes (set by :class:`HandoffAsyncQueue`).
    queue: AsyncQueue[Any] | None = None

    def notify(self, cond: Waiters) -> None:
        q = self.queue
        if cond is not self.not_empty or q is None or not self.waiting[cond]:
            super().notify(cond)
            return
        while cond.futures:
            fut = cond.futures.popleft()
            if not fut.done():
                # BUG: the step is the waiter's to take, after it resumes
                out = q.machine.receive(q.clock.now(), q.visibility_timeout)
                fut.set_result(out if isinstance(out, Outcome) else None)
                return


class HandoffAsyncQueue(AsyncQueue[Any]):
    """The asyncio queue whose wakers receive on their waiters' behalf."""

    conditions_class = HandoffFutures

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        assert isinstance(self.conditions, HandoffFutures)
        self.conditions.queue = self


MUTANTS: Final[dict[str, type[Any]]] = {
    "NoPassOnAsyncQueue": NoPassOnAsyncQueue,
    "HandoffAsyncQueue": HandoffAsyncQueue,
}
