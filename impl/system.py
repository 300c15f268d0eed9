"""A system of queues linked by dead-letter targets: its shared id registry and its lock order.

docs/contract.md sections 7.2 and 7.8. A dead-lettered message keeps its id in its target, so
the queues linked by dead-letter targets share one id space: a :class:`System` holds every id
any of its queues has accepted (a caller's id is refused if any queue of the system took it)
and the one counter generated ids come from (``msg-N``, the format of a queue alone). A queue
in no system (no dead-letter target, and no source naming it) never meets one and keeps its
own counter and ``accepted`` set, exactly as before.

The registry's lock is a *leaf*: taken last, after every queue lock a step holds, and held only
for one check-and-add, so it never orders against anything.

Queue locks are taken in **creation order** (:func:`in_lock_order`: lower token first). A
dead-letter queue is created before its sources, so a source's releasing step takes its
target's lock and then its own; a redrive takes the dead-letter queue's lock and its
destinations' in the same order. One total order for every step that holds two locks: no
deadlock (``tla/`` checks the threaded model; taking them in opposite orders is a mutant).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from impl.errors import DuplicateIdError

if TYPE_CHECKING:
    from impl.shell import BaseQueue

__all__ = ["System", "hold", "in_lock_order"]


class System:
    """The id registry of a system of queues: every id accepted by any of them, and the counter
    of generated ids. Made from the first dead-letter target a source names (its accepted ids
    and its counter carry over, so nothing it already handed out can repeat)."""

    __slots__ = ("_counter", "_ids", "_lock", "names")

    def __init__(self, ids: Iterable[str], counter: itertools.count[int]) -> None:
        self._lock = threading.Lock()
        self._ids: set[str] = set(ids)
        self._counter = counter
        #: The names of the system's queues (a name is unique within a system).
        self.names: set[str] = set()

    @property
    def counter(self) -> itertools.count[int]:
        """The counter generated ids come from (shared with every queue of the system)."""
        return self._counter

    def taken(self, id: str) -> bool:
        """Whether some queue of the system has accepted ``id`` (a read: no check-and-add)."""
        return id in self._ids

    def reserve(self, ids: Sequence[str | None], labels: Sequence[str]) -> list[str]:
        """Check and add, in one step: each given id must be new to the system
        (:class:`DuplicateIdError` naming its ``labels[i]`` otherwise, and nothing added); each
        ``None`` becomes a fresh generated id. The ids, in order, now all reserved."""
        with self._lock:
            known = self._ids
            for id, label in zip(ids, labels, strict=True):
                if id is not None and id in known:
                    raise DuplicateIdError(
                        f"{label} {id!r} was already accepted by a queue of this system"
                    )
            out: list[str] = []
            for given in ids:
                id = given
                while id is None or id in known or (given is None and id in ids):
                    id = f"msg-{next(self._counter)}"
                out.append(id)
            known.update(out)
            return out

    def fresh(self) -> str:
        """A fresh generated id, reserved."""
        return self.reserve([None], ["id"])[0]

    def unreserve(self, ids: Iterable[str]) -> None:
        """Give back ids :meth:`reserve` took for a step that was vetoed (it raised before its
        commit), so the system is as if it had never been tried."""
        with self._lock:
            self._ids.difference_update(ids)


def in_lock_order(queues: Iterable[BaseQueue[Any]]) -> list[BaseQueue[Any]]:
    """``queues`` without repeats, in the order their locks must be taken: creation order."""
    unique = {id(q): q for q in queues}
    return sorted(unique.values(), key=lambda q: q._token)


@contextmanager
def hold(queues: Sequence[BaseQueue[Any]]) -> Iterator[None]:
    """Hold the locks of ``queues`` (already in lock order) for the ``with`` block; released in
    the opposite order. If taking one raises, those already taken are released."""
    taken: list[threading.RLock] = []
    try:
        for q in queues:
            q.mutex.acquire()
            taken.append(q.mutex)
        yield
    finally:
        for m in reversed(taken):
            m.release()
