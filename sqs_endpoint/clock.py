"""The endpoint's clock: real time that a test can freeze, move on and let run again.

The queues behind the endpoint read time only from their clock (``impl.Clock``), and the asyncio
queue arms its one timer through the clock's ``call_at`` when the clock has one (``impl/aio.py``
duck-types it, as it does for ``impl.FakeClock``). :class:`ServerClock` is such a clock with two
states:

- *running*: the time moves at the real rate, read from ``impl.MonotonicClock`` (the one place
  the real time is read), from wherever it was when it started running;
- *frozen*: the time stands still until :meth:`ServerClock.advance` moves it.

It starts running (``mode="real"``) or frozen (``mode="fake"``); :meth:`~ServerClock.freeze` and
:meth:`~ServerClock.run` switch between the states at any time, and :meth:`~ServerClock.advance`
jumps forward in either, so a test crosses a visibility timeout, a delay or a retention period at
once. The time never goes back.

Callbacks of :meth:`~ServerClock.call_at` run once the clock reaches their due time, in order of
due time (ties in registration order), as ``impl.FakeClock`` runs them: in the thread of the
:meth:`~ServerClock.advance` that reaches them, or, while the clock runs at the real rate, from a
timer of the event loop the clock is attached to (:meth:`~ServerClock.attach`), aimed at the
earliest due callback and re-aimed whenever that changes (a registration, an advance, a freeze,
a run). The asyncio queue hands a callback run in another thread to its loop itself.

``wait(cond, deadline)``, the threaded half of ``impl.Clock``, is kept for any threaded queue on
this clock: a wait is bounded by the real time left to its deadline while the clock runs, and
woken by every change of the clock's course (an advance, a run), after which the caller
re-checks its deadline, as it does after any wakeup.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import threading
from collections.abc import Callable
from typing import Literal

from impl.clock import MonotonicClock, TimedCallbacks, TimerHandle
from impl.validate import is_number, to_finite

__all__ = ["Mode", "ServerClock"]

log = logging.getLogger("sqs_endpoint.clock")

Mode = Literal["real", "fake"]


class ServerClock:
    """A clock that runs at the real rate or stands frozen, and can be moved on in both.

    ``mode``: ``"real"`` starts it running, ``"fake"`` frozen. ``start`` is its first reading.
    """

    def __init__(self, mode: Mode = "real", *, start: float = 0.0, pinned: bool = False) -> None:
        if mode not in ("real", "fake"):
            raise ValueError(f"mode must be 'real' or 'fake', got {mode!r}")
        if not is_number(start):
            raise TypeError(f"start must be a number, got {type(start).__name__}")
        if pinned is not True and pinned is not False:
            raise TypeError(f"pinned must be a bool, got {type(pinned).__name__}")
        self.mode: Mode = mode
        # Pinned (a durable endpoint's clock): on the attached loop's thread every reading
        # within one turn of the loop is the turn's first, so each operation, which runs
        # within one turn, sees one time, the time its journal entry records and its replay
        # sets (sqs_endpoint/journal.py). Unpinned at the next turn, and by any change of
        # course.
        self._pinning = pinned
        self._pin: float | None = None
        # Told after every change of course (advance, freeze, run): a journal keeps the time.
        self._listeners: list[Callable[[], None]] = []
        self._real = MonotonicClock().now
        # The time is _base while frozen, else _base + (real now - _real_base).
        self._base = to_finite("start", start)
        self._real_base = self._real()
        self._frozen = mode == "fake"
        # Guards the time, the callbacks and the waits. Never held while a callback runs or
        # while a condition's lock is taken.
        self._lock = threading.Lock()
        self._callbacks = TimedCallbacks(self._lock)
        # Conditions a thread waits on through this clock, with each wait's deadline.
        self._waiting: dict[threading.Condition, list[float | None]] = {}
        # The event loop whose timer fires callbacks while the clock runs, its thread, and the
        # timer now armed with the due time it is aimed at.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_due: float | None = None

    # -- reading ----------------------------------------------------------------------------------

    def _now_locked(self) -> float:
        if self._frozen:
            return self._base
        return self._base + (self._real() - self._real_base)

    def now(self) -> float:
        """The current time in seconds; never decreases. On a pinned clock, read on its
        loop's thread: the same reading for the rest of the loop's turn."""
        if self._pinning and threading.get_ident() == self._loop_thread:
            pin = self._pin
            if pin is None:
                loop = self._loop
                with self._lock:
                    pin = self._pin = self._now_locked()
                if loop is not None:
                    loop.call_soon(self._unpin)
            return pin
        with self._lock:
            return self._now_locked()

    def _unpin(self) -> None:
        self._pin = None

    def replay_to(self, t: float) -> None:
        """Set a frozen clock to ``t`` (not before its time) without running the callbacks
        that ``t`` reaches: a journal's replay moves the time to each entry's and fires the
        sweeps the journal recorded, no others. ``RuntimeError`` if the clock runs,
        ``ValueError`` if ``t`` is before its time or not finite."""
        t = to_finite("t", t)
        with self._lock:
            if not self._frozen:
                raise RuntimeError("replay_to needs a frozen clock")
            if t < self._base:
                raise ValueError(f"t must not be before the clock's time {self._base!r}, got {t!r}")
            self._base = t
            self._pin = None

    @property
    def frozen(self) -> bool:
        """True while the time stands still (until :meth:`run`)."""
        with self._lock:
            return self._frozen

    def state(self) -> dict[str, object]:
        """``{"now": ..., "frozen": ..., "mode": ...}``: what the control API reports. ``mode``
        is the state the clock started in (``"real"`` running, ``"fake"`` frozen)."""
        with self._lock:
            return {"now": self._now_locked(), "frozen": self._frozen, "mode": self.mode}

    # -- changing its course ----------------------------------------------------------------------

    def advance(self, dt: float) -> None:
        """Move the time on by ``dt >= 0`` seconds, frozen or running, then wake the waits and
        run the callbacks the new time has reached.

        ``TypeError`` if ``dt`` is not a number, ``ValueError`` if it is negative, NaN or
        infinite or the new time would not be finite; the time is then unchanged.
        """
        if not is_number(dt):
            raise TypeError(f"dt must be a number, got {type(dt).__name__}")
        step = to_finite("dt", dt)
        if step < 0:
            raise ValueError(f"dt must be a finite number >= 0, got {dt!r}")
        with self._lock:
            now = self._now_locked()
            if math.isinf(now + step):
                raise ValueError(f"dt is too large: the time {now!r} + {dt!r} is not finite")
            self._base = now + step
            self._real_base = self._real()
        self._changed()

    def freeze(self) -> None:
        """Stop the time where it is (until :meth:`run`). Idempotent."""
        with self._lock:
            if self._frozen:
                return
            self._base = self._now_locked()
            self._frozen = True
        self._changed()

    def run(self) -> None:
        """Let the time run at the real rate again, from where it stands. Idempotent."""
        with self._lock:
            if not self._frozen:
                return
            self._real_base = self._real()
            self._frozen = False
        self._changed()

    def _changed(self) -> None:
        # After any change of course: wake the timed waits (each re-checks its deadline, and a
        # wait on a running clock re-computes its real timeout), run what is due, re-aim.
        with self._lock:
            self._pin = None
            conds = [
                cond
                for cond, deadlines in self._waiting.items()
                if any(d is not None for d in deadlines)
            ]
        for cond in conds:
            with cond:
                cond.notify_all()
        self._run_due()
        # Forced: a timer aimed at the same due time was computed for the old course (an
        # advance brings it nearer in real time, a run restarts it).
        self._reaim(force=True)
        for listener in list(self._listeners):
            listener()

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` after every change of course (:meth:`advance`, :meth:`freeze`,
        :meth:`run`), once its callbacks have run: a durable endpoint's journal keeps the
        time it moved to. ``TypeError`` if ``listener`` is not callable."""
        if not callable(listener):
            raise TypeError(f"listener must be callable, got {type(listener).__name__}")
        self._listeners.append(listener)

    # -- callbacks --------------------------------------------------------------------------------

    def call_at(self, due: float, callback: Callable[[], object]) -> TimerHandle:
        """Run ``callback()`` once this clock reaches ``due`` (see the module's docstring for
        where). A ``due`` already reached runs at the next advance, or at once from the loop's
        timer while the clock runs. Returns a handle whose ``cancel()`` stops it.
        ``TypeError``/``ValueError`` for a ``due`` that is not a finite number or a
        ``callback`` that is not callable; nothing is registered then.
        """
        handle = self._callbacks.call_at(due, callback)
        with self._lock:
            # Read after the push, in a second critical section: a re-aim in between has seen
            # the new callback, so the timer is aimed at it or at an earlier one (or, if it
            # fired meanwhile, is None and re-aimed once more: harmless). float(due) is the
            # time call_at registered (it accepted due: a finite int or float).
            earlier = self._timer_due is None or float(due) < self._timer_due
        if earlier:
            self._reaim()
        return handle

    def callbacks(self) -> int:
        """How many :meth:`call_at` callbacks are registered and neither run nor cancelled."""
        return len(self._callbacks)

    def _run_due(self) -> None:
        # Every callback due by now (re-read before each: the clock may be running, or a
        # callback may advance), one at a time and outside the lock. A callback that raises is
        # logged and the round goes on: one queue's failure must not stop another queue's
        # timers.
        self._callbacks.run_due(self._now_locked, _log_failure)

    # -- the event loop's timer -------------------------------------------------------------------

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Fire callbacks from ``loop``'s timer while the clock runs. Call on ``loop``'s thread."""
        with self._lock:
            if self._loop is not None and self._loop is not loop:
                raise RuntimeError("the clock is already attached to another event loop")
            self._loop = loop
            self._loop_thread = threading.get_ident()
        self._reaim()

    def detach(self) -> None:
        """Cancel the loop's timer and forget the loop (callbacks then run only on advance)."""
        with self._lock:
            timer, self._timer, self._timer_due = self._timer, None, None
            self._loop = self._loop_thread = None
        if timer is not None:
            timer.cancel()

    def _reaim(self, force: bool = False) -> None:
        # Aim the loop's timer at the earliest live callback, or disarm it (frozen, or nothing
        # due). Done on the loop's thread; from another thread it is handed to the loop.
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        if threading.get_ident() != self._loop_thread:
            # RuntimeError: the loop closed meanwhile, nothing to fire any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._reaim, force)
            return
        with self._lock:
            earliest = self._callbacks.earliest()
            due = None if self._frozen else earliest
            if due == self._timer_due and not force:
                return
            old, self._timer, self._timer_due = self._timer, None, due
            if due is not None:
                delay = max(0.0, due - self._now_locked())
                self._timer = loop.call_later(delay, self._on_timer)
        if old is not None:
            old.cancel()

    def _on_timer(self) -> None:
        with self._lock:
            self._timer = self._timer_due = None
        self._run_due()
        self._reaim()

    # -- the threaded half of impl.Clock ----------------------------------------------------------

    def wait(self, cond: threading.Condition, deadline: float | None) -> None:
        """Block on ``cond`` (its lock held) until notified, or until this clock reaches
        ``deadline``; may return early, as ``impl.Clock`` allows."""
        with self._lock:
            if deadline is not None and self._now_locked() >= deadline:
                return
            timeout = None if deadline is None or self._frozen else deadline - self._now_locked()
            self._waiting.setdefault(cond, []).append(deadline)
        try:
            if timeout is None:
                cond.wait()
            else:
                cond.wait(min(timeout, threading.TIMEOUT_MAX))
        finally:
            with self._lock:
                deadlines = self._waiting[cond]
                deadlines.remove(deadline)
                if not deadlines:
                    del self._waiting[cond]

    def __repr__(self) -> str:
        state = self.state()
        return f"ServerClock(now={state['now']!r}, frozen={state['frozen']!r})"


def _log_failure(error: Exception) -> None:
    # Called inside the except clause of the failed callback: the log shows its traceback.
    log.exception("a clock callback failed")
