"""A deterministic asyncio event loop for tests: the test, not the loop, picks what runs next.

:class:`DeterministicLoop` is an ``asyncio.BaseEventLoop`` with no selector and no thread of its
own. Its ``time()`` is the ``now()`` of an injected :class:`impl.FakeClock`, so ``loop.call_at``
timers (``asyncio.timeout``, ``asyncio.sleep``, ``wait_for``) become due only when the test
moves that clock (:meth:`DeterministicLoop.advance`), never on wall time. It does not run
``run_forever``; instead the caller drives it one callback at a time:

- :meth:`~DeterministicLoop.ready` lists the ready callbacks (``asyncio.Handle``) in the order
  the real loop would run them (FIFO: the order they were scheduled; timers that came due are
  appended in due order, as ``BaseEventLoop._run_once`` does);
- :meth:`~DeterministicLoop.run_ready` runs the one at a position the caller chose, a task's
  step running to its next ``await`` as on the real loop;
- :meth:`~DeterministicLoop.cancel` cancels a task where it is suspended (``Task.cancel``: its
  next step raises ``CancelledError`` at the ``await`` it waits in, even when what it waited for
  has already completed: the window of a cancellation just after a wakeup);
- :meth:`~DeterministicLoop.advance` moves the clock, which runs the clock's own ``call_at``
  callbacks at once (``FakeClock.call_at``, on this thread) and makes the loop's due timers ready.

Everything runs in the caller's thread, with this loop set as the running loop during each
step (``asyncio.get_running_loop()`` works inside). Exceptions that escape a callback go to
:attr:`~DeterministicLoop.errors` (the context the real loop would log), so a test can assert
that none did. :meth:`~DeterministicLoop.run_until_complete` is the FIFO order (or a chooser's)
until a future is done, refusing to hang when the loop goes idle first.
"""

from __future__ import annotations

import asyncio
import collections
import heapq
import inspect
import sys
import threading
from asyncio import base_events, events
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from types import CoroutineType, FrameType
from typing import Any, TypeVar, cast

from impl import FakeClock

R = TypeVar("R")

#: Picks the position (in :meth:`DeterministicLoop.ready`) of the callback to run next.
Chooser = Callable[[Sequence[asyncio.Handle]], int]


def fifo(ready: Sequence[asyncio.Handle]) -> int:
    """The real loop's order: the oldest ready callback first."""
    return 0


class Idle(RuntimeError):
    """The loop has nothing ready, and what it was asked to finish is not done."""


class DeterministicLoop(base_events.BaseEventLoop):
    """An event loop driven step by step by its caller, on a fake clock (module docstring)."""

    # BaseEventLoop's own fields this loop drives (typeshed does not declare them).
    _ready: collections.deque[asyncio.Handle]
    _scheduled: list[asyncio.TimerHandle]
    _thread_id: int | None
    _timer_cancelled_count: int

    def __init__(self, clock: FakeClock | None = None) -> None:
        super().__init__()
        if clock is not None and not isinstance(clock, FakeClock):
            self.close()  # nothing ran on it: closed, so it is not reported as unclosed
            raise TypeError(f"clock must be an impl.FakeClock, got {type(clock).__name__}")
        self.clock = FakeClock() if clock is None else clock
        #: The contexts of exceptions that escaped a callback (the real loop logs them).
        self.errors: list[dict[str, Any]] = []
        #: How many callbacks have run.
        self.steps = 0

    # -- what BaseEventLoop asks of a concrete loop ---------------------------------------------

    def time(self) -> float:
        return self.clock.now()

    def _write_to_self(self) -> None:
        # call_soon_threadsafe wakes a selector; this loop is polled by its caller instead.
        pass

    def _process_events(self, event_list: list[Any]) -> None:
        pass

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        self.errors.append(dict(context))

    def run_forever(self) -> None:
        raise RuntimeError(
            "DeterministicLoop does not run by itself: drive it with run_ready(), "
            "run_until_idle() or run_until_complete()"
        )

    # -- driving ----------------------------------------------------------------------------------

    @contextmanager
    def running(self) -> Iterator[None]:
        """This loop is the running loop of this thread (``get_running_loop``, ``is_running``)
        for the duration: every step, cancel and advance runs inside it."""
        outer = events._get_running_loop()
        saved = self._thread_id
        events._set_running_loop(self)
        self._thread_id = threading.get_ident()
        try:
            yield
        finally:
            self._thread_id = saved
            events._set_running_loop(outer)

    def ready(self) -> list[asyncio.Handle]:
        """The ready callbacks, oldest first; timers due on the clock are appended first (in
        due order) and cancelled handles dropped, as the real loop's next iteration does."""
        self._promote()
        return list(self._ready)

    def idle(self) -> bool:
        """Whether nothing is ready (only timers still to come, or nothing at all)."""
        return not self.ready()

    def run_ready(self, position: int) -> asyncio.Handle:
        """Run the ready callback at ``position`` of :meth:`ready`; return it."""
        ready = self.ready()
        if not isinstance(position, int) or not 0 <= position < len(ready):
            raise ValueError(f"position must be in 0..{len(ready) - 1}, got {position!r}")
        handle = ready[position]
        del self._ready[position]
        self.steps += 1
        with self.running():
            cast(Any, handle)._run()
        return handle

    def cancel(self, task: asyncio.Task[Any], msg: object = None) -> bool:
        """``task.cancel(msg)``: its next step raises ``CancelledError`` where it waits."""
        if not isinstance(task, asyncio.Task) or task.get_loop() is not self:
            raise ValueError(f"task must be a task of this loop, got {task!r}")
        with self.running():
            return task.cancel(msg)

    def advance(self, dt: float) -> None:
        """Move the clock on by ``dt`` (``FakeClock.advance``: its ``call_at`` callbacks run
        now, on this thread, as the running loop's); the loop's timers that came due become
        ready (see :meth:`ready`)."""
        with self.running():
            self.clock.advance(dt)
        self._promote()

    def run_until_idle(self, choose: Chooser = fifo, max_steps: int = 10_000) -> int:
        """Run ready callbacks, picked by ``choose``, until none is ready; how many ran."""
        n = 0
        while ready := self.ready():
            if n >= max_steps:
                raise RuntimeError(f"still busy after {max_steps} steps")
            self.run_ready(choose(ready))
            n += 1
        return n

    def run_until_complete(  # type: ignore[override]
        self, future: Awaitable[R], choose: Chooser = fifo, max_steps: int = 10_000
    ) -> R:
        """Run (``choose`` picking, FIFO by default) until ``future`` is done; its result.

        Raises :class:`Idle` if nothing is ready before it is done (it waits for a timer
        the clock has not reached, or for something nobody will do): advance the clock first.
        """
        with self.running():
            fut = asyncio.ensure_future(future, loop=self)
        n = 0
        while not fut.done():
            ready = self.ready()
            if not ready:
                raise Idle(f"the loop is idle and {fut!r} is not done")
            if n >= max_steps:
                raise RuntimeError(f"still busy after {max_steps} steps")
            self.run_ready(choose(ready))
            n += 1
        return fut.result()

    def _promote(self) -> None:
        """Move every timer due on the clock to the ready queue, in due order."""
        now = self.time()
        sched = self._scheduled
        while sched and (sched[0].cancelled() or sched[0].when() <= now):
            handle = heapq.heappop(sched)
            if handle.cancelled():
                self._timer_cancelled_count = max(0, self._timer_cancelled_count - 1)
                continue
            cast(Any, handle)._scheduled = False
            self._ready.append(handle)
        if any(h.cancelled() for h in self._ready):
            live = [h for h in self._ready if not h.cancelled()]
            self._ready.clear()
            self._ready.extend(live)

    def timers(self) -> list[asyncio.TimerHandle]:
        """The loop's timers still to come, earliest first."""
        return sorted((h for h in self._scheduled if not h.cancelled()), key=lambda h: h.when())


# =============================================================================================
# Reading handles and tasks (for choosers and printed schedules)
# =============================================================================================


def task_of(handle: asyncio.Handle) -> asyncio.Task[Any] | None:
    """The task a ready callback steps (its ``__step`` or its wakeup), or ``None``."""
    owner = getattr(cast(Any, handle)._callback, "__self__", None)
    return owner if isinstance(owner, asyncio.Task) else None


def describe(handle: asyncio.Handle) -> str:
    """A ready callback in words: ``step T`` for a task's step, ``timeout of T`` for an
    ``asyncio.timeout`` firing, else the callback's qualified name."""
    task = task_of(handle)
    if task is not None:
        return f"step {task.get_name()}"
    cb = cast(Any, handle)._callback
    owner = getattr(cb, "__self__", None)
    inner = getattr(owner, "_task", None)
    if isinstance(owner, asyncio.Timeout) and isinstance(inner, asyncio.Task):
        return f"timeout of {inner.get_name()}"
    return str(getattr(cb, "__qualname__", repr(cb)))


def _frames(task: asyncio.Task[Any]) -> list[FrameType]:
    """The frames of ``task``'s coroutine chain, outermost first (where each awaits)."""
    out: list[FrameType] = []
    coro: object = task.get_coro()
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is None:
            break
        out.append(frame)
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return out


def where(task: asyncio.Task[Any]) -> str:
    """``file:line`` where ``task`` is suspended: the innermost coroutine frame, past a
    ``_wait`` helper (every wait of the queue goes through one: its caller's line says more);
    ``""`` if it has not started or is done."""
    if not started(task) or task.done():
        return ""
    frames = _frames(task)
    if not frames:
        return ""
    f = frames[-1]
    if f.f_code.co_name == "_wait" and len(frames) > 1:
        f = frames[-2]
    return _short(f.f_code.co_filename) + f":{f.f_lineno}"


def started(task: asyncio.Task[Any]) -> bool:
    """Whether ``task``'s coroutine has begun running."""
    coro = task.get_coro()
    if isinstance(coro, CoroutineType):
        return inspect.getcoroutinestate(coro) != inspect.CORO_CREATED
    return True


def _short(path: str) -> str:
    for root in ("/impl/", "/model_tests/"):
        at = path.rfind(root)
        if at >= 0:
            return path[at + 1 :]
    return path.rsplit("/", 1)[-1]


def current_line(depth: int = 1) -> str:
    """``file:line`` of a caller (for events recorded inside a step)."""
    f: FrameType | None = sys._getframe(depth + 1)
    return "?" if f is None else _short(f.f_code.co_filename) + f":{f.f_lineno}"


__all__ = [
    "Chooser",
    "DeterministicLoop",
    "Idle",
    "current_line",
    "describe",
    "fifo",
    "started",
    "task_of",
    "where",
]
