"""Redrive: a task that moves messages out of a dead-letter queue (docs/contract.md section 7.5).

``dlq.start_redrive(destination=None, *, rate=None)`` makes a :class:`RedriveTask`: this module
holds the task, its progress and its status; the moves are the system's steps
(``impl.system.System.redrive_move``), run with the locks of the dead-letter queue and of every
queue the task may move into held (in creation order). As SQS's ``StartMessageMoveTask``:

- **Scope**: the ids visible in the dead-letter queue when the task starts, oldest first (its
  visible order). Messages that arrive later are not this task's, so a poison message cannot
  cycle forever inside one task. ``to_move`` is the scope's size.
- **A move** is one step across two queues: in the dead-letter queue the message is ``MOVED``
  (``Machine.redrive_out``); the destination takes it as a new message (``Machine.accept_moved``):
  a fresh id from the destination's id space (its system's counter), attempt 0, enqueued now
  (its retention restarts), same body and group, the tail of its order, no dedup, no source.
  ``dlq.moved_to(old_id)`` then gives ``(destination, new_id)``.
- **Skips**: a scope id no longer visible when its turn comes (received, deleted, aged out), or
  with no source (or a source since collected) when the destination is each message's source,
  is skipped (``skipped``).
- **Rate**: ``rate=None`` moves the whole scope inside ``start_redrive``; ``rate=r`` makes the
  k-th tick (k = 0, 1, ...) due at ``started_at + k / r``, a timer in the dead-letter queue's
  one timer order fired by its sweep (or sweeper), each tick one move (after any skips).
- **Capacity** (a bounded destination with no room): the move does not happen and the message
  stays visible in the dead-letter queue (never lost, never duplicated). With ``rate`` the task
  tries it again at its next tick; with ``rate=None`` the task stays ``RUNNING`` with a retry
  tick at now + :data:`RETRY_AFTER` seconds, when it moves all it can again (impl choice).
- ``cancel()``: no further moves, the moved ones stay moved. Only one ``RUNNING`` task per
  dead-letter queue (``impl.errors.RedriveRunning``).

Choices where the note is silent: a move into a queue that has been shut down or closed still
happens (a move is the system's step, not a send); a tick whose trace sink raises moves nothing
and is put back, to fire at the next sweep.
"""

from __future__ import annotations

import enum
import itertools
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Final, Generic

from impl.machine import T

if TYPE_CHECKING:
    from impl.machine import Machine

__all__ = ["RETRY_AFTER", "RedriveStatus", "RedriveTask"]

#: Seconds after which a ``rate=None`` task blocked by a full destination tries again.
RETRY_AFTER: Final = 1.0

_names = itertools.count(1)


class RedriveStatus(enum.Enum):
    """Where a :class:`RedriveTask` is: moving, done with its scope, or stopped by ``cancel``."""

    RUNNING = "running"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class RedriveTask(Generic[T]):
    """One redrive of a dead-letter queue (see the module docstring). Made by
    ``start_redrive``; a user reads its progress, atomically, through the properties (which
    take the dead-letter queue's lock, ``lock``), and may :meth:`cancel` it.

    The system's moves (``impl.system.System``) read and write the plain attributes, with that
    lock held: ``scope``, ``moved_count``, ``skipped_count``, ``ticks``, ``state``,
    ``target`` and ``queues``."""

    def __init__(
        self,
        dlq: Machine[T],
        destination: object,
        target: Machine[T] | None,
        rate: float | None,
        started_at: float,
        scope: Sequence[str],
        *,
        ids: Callable[[], str] | None,
        queues: Sequence[Machine[T]],
        lock: AbstractContextManager[Any],
    ) -> None:
        #: The task's name, unique in this process (the ``id`` of its tick timers).
        self.name = f"redrive-{next(_names)}"
        #: Where its moved messages' new ids come from (``None``: the destination's own).
        self.ids = ids
        # The dead-letter queue's machine, weakly: a task kept by a user keeps no queue alive.
        self._dlq = weakref.ref(dlq)
        self._lock = lock
        self._destination = destination
        #: The destination's machine (``None``: each message's source).
        self.target = target
        self._rate = rate
        self._started_at = started_at
        #: The ids of the scope still to move or skip, oldest first.
        self.scope: deque[str] = deque(scope)
        self._to_move = len(scope)
        self.moved_count = 0
        self.skipped_count = 0
        #: Ticks fired so far (the next one is due at ``started_at + ticks / rate``).
        self.ticks = 0
        self.state = RedriveStatus.RUNNING
        #: The machines its moves may go into (their locks are held with the dead-letter
        #: queue's while it moves): the destination, or the sources of its scope.
        self.queues: list[Machine[T]] = list(queues)

    @property
    def running(self) -> bool:
        """Whether the task is ``RUNNING`` (read with the dead-letter queue's lock held)."""
        return self.state is RedriveStatus.RUNNING

    def _read(self, attr: str) -> Any:
        with self._lock:
            return getattr(self, attr)

    @property
    def destination(self) -> Any:
        """The queue every message goes to, or ``None``: each message's source."""
        return self._destination

    @property
    def rate(self) -> float | None:
        """Moves per second of the dead-letter queue's clock; ``None``: all at once."""
        return self._rate

    @property
    def started_at(self) -> float:
        return self._started_at

    @property
    def to_move(self) -> int:
        """How many messages the task's scope held when it started."""
        return self._to_move

    @property
    def moved(self) -> int:
        n: int = self._read("moved_count")
        return n

    @property
    def skipped(self) -> int:
        n: int = self._read("skipped_count")
        return n

    @property
    def status(self) -> RedriveStatus:
        s: RedriveStatus = self._read("state")
        return s

    def cancel(self) -> bool:
        """Stop the task: no further moves (those made stay made). ``True`` if it was
        running, ``False`` (and no change) if it had completed or was cancelled already."""
        with self._lock:
            dlq = self._dlq()
            if dlq is None or self.state is not RedriveStatus.RUNNING:
                return False
            self.state = RedriveStatus.CANCELLED
            dlq.drop_tick(self.name)
            if dlq.system is not None:
                dlq.system.stop_moving(dlq, self)
            return True

    def __repr__(self) -> str:
        return (
            f"RedriveTask({self.name}, status={self.state.value}, moved={self.moved_count}, "
            f"skipped={self.skipped_count}, to_move={self._to_move})"
        )
