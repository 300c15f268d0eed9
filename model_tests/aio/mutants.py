"""The two teaching bugs of the asyncio shell, as mutants of ``impl.AsyncQueue``.

Each overrides only the seams the design names (``_pass_on``, ``_wake_next``, ``_wait``), never
a public method, so the explorer runs the real queue's code everywhere else:

- :class:`NoPassOnAsyncQueue`: a woken waiter that is cancelled does not pass its wakeup on
  (``_pass_on`` does nothing): another receiver sleeps beside a visible message
  (``NoSleepingWaiter`` fails);
- :class:`HandoffAsyncQueue`: the waker delivers on the waiter's behalf (a core receive at
  wake time, the waiter's future resolved with the Message): a waiter cancelled after that
  strands an in-flight message no task holds (``HeldDeliveries`` fails).

Defined only when ``impl`` has the asyncio shell (``MUTANTS`` is empty otherwise).
"""

from __future__ import annotations

from typing import Any, Final

import impl

MUTANTS: Final[dict[str, type[Any]]] = {}

if hasattr(impl, "AsyncQueue"):  # pragma: no branch - depends on the checkout
    _Base: type[Any] = impl.AsyncQueue

    class NoPassOnAsyncQueue(_Base):  # type: ignore[misc]
        """A cancelled woken waiter keeps its wakeup: nobody else is woken."""

        def _pass_on(self, cond: Any) -> None:
            pass

    class HandoffAsyncQueue(_Base):  # type: ignore[misc]
        """The waker receives for the receiver it wakes, and hands it the Message."""

        def _wake_next(self, cond: Any) -> None:
            if cond is not self._q.not_empty:
                super()._wake_next(cond)
                return
            waiters = self._waiters[cond]
            while waiters:
                fut = waiters.popleft()
                if not fut.done():
                    fut.set_result(self._q.receive(block=False))
                    return

        async def _wait(self, cond: Any, deadline: float | None) -> Any:
            return await super()._wait(cond, deadline)

    MUTANTS.update(NoPassOnAsyncQueue=NoPassOnAsyncQueue, HandoffAsyncQueue=HandoffAsyncQueue)
