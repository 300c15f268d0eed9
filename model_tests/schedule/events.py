"""The thread-level event record of one explored schedule: :class:`ThreadEvent`.

A schedule run by :mod:`model_tests.schedule` is written down as the sequence of what each
logical thread did at its synchronisation points, in the one order the scheduler let them run:
``ThreadEvent(thread, kind, detail)``. ``tla/threaded_trace.py`` defines the same shape and
validates such sequences against ``tla/ThreadedQueue.tla``; this module defines it for the
scheduler's side, and uses that definition when it exists, so both sides share one type.

Kinds (``KINDS``): ``call`` (an operation starts: ``(op, args)``), ``acquire`` and ``release``
of the queue's mutex, ``wait`` (a wait on a condition begins: ``(cond, deadline)``), ``wake``
(the wait ends, the mutex held again: ``(cond, how)``, how being ``notified``, ``timeout`` or
``interrupt``), ``notify`` (``(cond, n)``, n the waiters it reached), ``step`` (a transition
committed, from ``Queue.record_trace``: ``(action, args, result)``), ``return`` and
``raise`` (the operation ends: ``(op, value)`` / ``(op, exception type)``), ``tick`` (the
clock driver moved the time: ``(dt, now)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

#: The kinds of :class:`ThreadEvent`, in the order the module docstring lists them.
KINDS: Final = frozenset(
    {"call", "acquire", "release", "wait", "wake", "notify", "step", "return", "raise", "tick"}
)


@dataclass(frozen=True, slots=True)
class _ThreadEvent:
    """One thing one logical thread did at a synchronisation point (see the module docstring)."""

    thread: str
    kind: str
    detail: tuple[object, ...] = ()

    def __str__(self) -> str:
        return f"{self.thread}: {self.kind} {self.detail!r}"


if TYPE_CHECKING:  # the type is the validator's, so events pass to it as they are
    from tla.threaded_trace import ThreadEvent
else:
    try:  # the validator's own definition, when the TLA+ side is present (the same shape)
        from tla.threaded_trace import ThreadEvent
    except ImportError:  # pragma: no cover - depends on the checkout
        ThreadEvent = _ThreadEvent

__all__ = ["KINDS", "ThreadEvent"]
