"""The threading seam: where a threaded queue gets its lock, its conditions and its threads.

The default (:data:`THREADING`) hands out ``threading.RLock``, ``threading.Condition`` and daemon
``threading.Thread`` objects. A clock may carry another :class:`Sync` as its ``sync``
attribute: a queue built with that clock then takes its primitives from it, so a test can put
the lock, the conditions and the sweeper under a controlled scheduler (``model_tests/schedule``)
while the queue's code stays what production runs. Waits need no factory: every wait already
goes through ``clock.wait(cond, deadline)``. A queue asks for primitives only when it is built,
when it starts a sweeper and after a fork, never per operation, so the seam costs a production
queue nothing on its hot path.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Final

from impl.clock import Clock

__all__ = ["THREADING", "Sync", "sync_of"]


class Sync:
    """A factory of the queue's threading primitives (see the module docstring).

    A replacement must behave as the threading module's objects do (``acquire``/``release`` and
    the context manager of an ``RLock``; ``notify``/``notify_all`` of a ``Condition`` whose lock
    it is; ``start``/``join``/``is_alive`` of a ``Thread``).
    """

    __slots__ = ()

    def rlock(self) -> threading.RLock:
        """A new reentrant lock: the queue's ``mutex``."""
        return threading.RLock()

    def condition(self, lock: threading.RLock) -> threading.Condition:
        """A new condition variable on ``lock``: ``not_empty``, ``not_full``, ``new_deadline``."""
        return threading.Condition(lock)

    def thread(
        self, target: Callable[..., object], args: tuple[Any, ...], name: str
    ) -> threading.Thread:
        """A new, not yet started daemon thread running ``target(*args)``: the sweeper."""
        return threading.Thread(target=target, args=args, name=name, daemon=True)


#: The default :class:`Sync`: the threading module's own primitives.
THREADING: Final = Sync()


def sync_of(clock: Clock) -> Sync:
    """The :class:`Sync` a queue with ``clock`` uses: ``clock.sync`` if it has one, else
    :data:`THREADING`."""
    sync = getattr(clock, "sync", None)
    return THREADING if sync is None else sync
