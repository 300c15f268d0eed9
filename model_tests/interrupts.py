"""Real signals aimed at the windows of a condition wait: the tools of the interrupt tests.

Only the main thread runs Python signal handlers, so the thread under test is the main thread:
it blocks in a wait, another thread sends it ``SIGUSR1`` with ``signal.pthread_kill``, and the
handler raises :class:`Interrupt` (a ``BaseException``, as ``KeyboardInterrupt`` is). A waiter
can be hit in two windows that matter:

(a) *after a notify woke it*: ``Condition.notify`` has removed its waiter from the condition's
    list, so the notify is used up; if the waiter now leaves by the exception, the work it was
    woken for stays behind and no other waiter is told (a lost wakeup, unless it passes the
    notify on).
(b) *while it re-takes the lock* inside ``Condition.wait`` (``_acquire_restore``), another
    thread holding it: a plain ``Lock``'s acquire is interruptible, so the exception leaves the
    wait without the lock and the caller's ``with`` then releases a lock another thread holds;
    an ``RLock``'s ``_acquire_restore`` is not, so the handler runs only once the lock is back.

Nothing here guesses with timing; each window is reached by construction:

- :class:`CondProbe` wraps one condition's ``wait`` and ``notify`` (instance attributes): it
  keeps the line of waiting threads in the order they began waiting (which is the order
  ``notify`` wakes them in, as both happen under the lock), how each wait ended, and runs a
  one-shot hook right after the next real notify, in the notifying thread, lock still held.
- :meth:`SignalStorm.interrupt_main` sends the signal and then blocks until it has been
  *delivered*: the C-level handler writes to a wakeup fd (``signal.set_wakeup_fd``) after it
  has flagged the pending call, so once the byte is read the main thread will run the Python
  handler at its next check. Called from the notify hook, this happens while the notifier still
  holds the lock, so the woken main thread cannot have left the wait yet: window (a).
- :class:`ReacquireProbe` (``sys.setprofile`` in the main thread, removed as soon as it fires)
  tells the notifier when the main thread calls the lock's re-acquire in ``Condition.wait``; the
  notifier then sends the signal while it holds the lock: window (b). The main thread gives up
  the GIL only inside that acquire, so the signal lands while it blocks there, except in the
  rare case where it arrives in the few machine instructions before the blocking call.

:func:`measure_reacquire` runs window (b) on a bare condition for a given lock type and counts
what happened; ``python -m model_tests.interrupts`` prints it for ``Lock`` and ``RLock``.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Any, Final, Protocol

from model_tests.support import BOUND

#: The signal the storm sends (SIGINT would do the same, but would look like a real Ctrl-C).
SIGNAL: Final = signal.SIGUSR1


class Interrupt(BaseException):
    """What the storm's signal handler raises: a ``BaseException``, as ``KeyboardInterrupt``."""


class Lockish(Protocol):
    """A ``threading.Lock`` or ``threading.RLock``."""

    def acquire(self, blocking: bool = ..., timeout: float = ...) -> bool: ...

    def release(self) -> None: ...


def owns(lock: Lockish) -> bool | None:
    """Whether the calling thread owns ``lock`` (an ``RLock``); ``None`` for a plain ``Lock``,
    which has no owner (any thread may release it)."""
    is_owned: Callable[[], bool] | None = getattr(lock, "_is_owned", None)
    return None if is_owned is None else bool(is_owned())


def is_held(lock: Lockish) -> bool:
    """Whether some thread holds ``lock`` (for an ``RLock``: the caller, or another thread)."""
    if owns(lock):
        return True
    if lock.acquire(False):
        lock.release()
        return False
    return True


# =============================================================================================
# The signal and its handler
# =============================================================================================


@dataclass(frozen=True, slots=True)
class HandlerRun:
    """One run of the storm's handler: where it interrupted the main thread, and the lock."""

    #: Name of the innermost Python function the handler interrupted (``_acquire_restore``:
    #: a plain Lock's re-acquire inside ``Condition.wait``).
    frame: str
    #: The watched lock was held by some thread when the handler ran.
    held: bool
    #: The main thread owned it then (``None`` for a plain Lock, which has no owner).
    mine: bool | None


#: Real seconds to wait for the handler before sending the signal again (``until_handled``);
#: a handler that is pending runs within microseconds, so this decides no outcome.
RESEND = 1.0


class SignalStorm:
    """``SIGUSR1`` to the main thread, whose handler raises :class:`Interrupt`.

    A context manager, entered and left in the main thread: it installs the handler and a
    wakeup fd, and restores what was there before. ``watch(lock)`` names the lock whose state
    each handler run records (:class:`HandlerRun`, in ``runs``).
    """

    def __init__(self, lock: Lockish | None = None) -> None:
        self._watched = lock
        #: Every run of the handler, in order.
        self.runs: list[HandlerRun] = []
        #: Set by the handler; cleared by :meth:`interrupt_main` before each signal.
        self.ran = threading.Event()
        # One Interrupt per interrupt_main call, however many signals it had to send.
        self._armed = False
        main = threading.main_thread().ident
        assert main is not None
        self._main = main
        # The wakeup fd's two ends, made on entry.
        self._reader: socket.socket | None = None
        self._writer: socket.socket | None = None
        self._old_fd = -1
        self._old_handler: Any = None

    def watch(self, lock: Lockish | None) -> None:
        self._watched = lock

    def __enter__(self) -> SignalStorm:
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("a SignalStorm is installed from the main thread")
        self._reader, self._writer = socket.socketpair()
        self._reader.setblocking(False)
        self._writer.setblocking(False)
        self._old_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        self._old_handler = signal.signal(SIGNAL, self._handle)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        signal.signal(SIGNAL, self._old_handler)
        signal.set_wakeup_fd(self._old_fd)
        for end in (self._reader, self._writer):
            if end is not None:
                end.close()
        self._reader = self._writer = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if not self._armed:
            return  # a re-sent signal whose round was already interrupted: absorbed
        self._armed = False
        lock = self._watched
        self.runs.append(
            HandlerRun(
                frame="?" if frame is None else frame.f_code.co_name,
                held=lock is not None and is_held(lock),
                mine=None if lock is None else owns(lock),
            )
        )
        self.ran.set()
        raise Interrupt(f"signal {signum}")

    def interrupt_main(self, timeout: float = BOUND, *, until_handled: bool = False) -> None:
        """Send the signal to the main thread and return once it has been delivered.

        Called from another thread. On return the interpreter has flagged the pending handler
        (the wakeup byte is written after that), so the main thread raises :class:`Interrupt`
        at its next check for pending calls: in a blocking lock acquire at once if that acquire
        is interruptible, otherwise as soon as it returns to Python code.

        ``until_handled``: also wait until the handler has run, sending the signal again while
        it has not. For a main thread that is (about to be) blocked in a lock acquire: CPython
        checks for signals before it blocks, so a signal that lands after that check but
        before the thread enters the kernel's wait is seen only when the wait ends (for an
        untimed wait, never). Only one :class:`Interrupt` is raised per call: the handler
        absorbs the signals of a round it already interrupted.
        """
        assert threading.get_ident() != self._main, "interrupt_main is for other threads"
        reader = self._reader
        assert reader is not None, "the storm is not installed"
        self.ran.clear()
        self._armed = True
        end = time.monotonic() + timeout
        while True:
            self._drain(reader)
            signal.pthread_kill(self._main, SIGNAL)
            while True:
                ready, _, _ = select.select([reader], [], [], timeout)
                assert ready, f"signal {SIGNAL} not delivered to the main thread in {timeout}s"
                if SIGNAL in reader.recv(64):
                    break
            if not until_handled or self.ran.wait(RESEND):
                return
            assert time.monotonic() < end, f"the handler did not run in {timeout}s"

    @staticmethod
    def _drain(reader: socket.socket) -> None:
        try:
            while reader.recv(64):
                pass
        except BlockingIOError:
            pass


# =============================================================================================
# Probes
# =============================================================================================


@dataclass(frozen=True, slots=True)
class WaitExit:
    """A wait on a probed condition that ended by an exception."""

    thread: str
    error: BaseException
    #: The thread owned the lock as the exception left ``Condition.wait`` (``None``: a plain
    #: Lock, which has no owner).
    owned: bool | None


class CondProbe:
    """Wraps one condition's ``wait`` and ``notify`` (instance attributes; :meth:`close` undoes).

    ``line``: the threads waiting on it, in the order they began, which is the order
    ``notify`` wakes them in (a waiter joins the line and the condition's waiter list under the
    same lock hold). ``exits``: the waits that ended by an exception. :meth:`arm`: a hook run
    once, right after the next real notify, in the notifying thread, with the lock held.
    """

    def __init__(self, cond: threading.Condition, lock: Lockish) -> None:
        self.cond = cond
        self._lock = lock
        self._real_wait = cond.wait
        self._real_notify = cond.notify
        # Never held while taking the condition's lock: observing cannot deadlock the queue.
        self._changed = threading.Condition()
        self.line: list[threading.Thread] = []
        self.exits: list[WaitExit] = []
        self._after_notify: Callable[[], None] | None = None
        setattr(cond, "wait", self._wait)  # noqa: B010 (an instance attribute, on purpose)
        setattr(cond, "notify", self._notify)  # noqa: B010

    def close(self) -> None:
        delattr(self.cond, "wait")
        delattr(self.cond, "notify")

    def arm(self, after_notify: Callable[[], None]) -> None:
        """Run ``after_notify`` once, right after the next notify of this condition."""
        self._after_notify = after_notify

    def wait_for_line(self, *threads: threading.Thread, timeout: float = BOUND) -> bool:
        """Block until exactly ``threads`` wait, in this order; ``False`` on timeout. Once it
        returns ``True``, the next holder of the lock finds them all in ``Condition.wait``."""
        with self._changed:
            return self._changed.wait_for(lambda: self.line == list(threads), timeout)

    def _wait(self, timeout: float | None = None) -> bool:
        me = threading.current_thread()
        with self._changed:
            self.line.append(me)
            self._changed.notify_all()
        try:
            return self._real_wait(timeout)
        except BaseException as e:
            self.exits.append(WaitExit(me.name, e, owns(self._lock)))
            raise
        finally:
            with self._changed:
                self.line.remove(me)
                self._changed.notify_all()

    def _notify(self, n: int = 1) -> None:
        self._real_notify(n)
        hook, self._after_notify = self._after_notify, None
        if hook is not None:
            hook()


class ReacquireProbe:
    """Tells another thread when the main thread starts re-taking ``lock`` in ``Condition.wait``.

    A ``sys.setprofile`` hook in the main thread, active inside the ``with`` block and removed
    as soon as it fires: it sets ``reached`` on the call of the lock's re-acquire (an ``RLock``'s
    ``_acquire_restore``, or a plain Lock's ``acquire`` from ``Condition._acquire_restore``).
    That call happens only after the waiter was woken; it blocks while another thread holds
    the lock, and the main thread releases the GIL only inside it. :meth:`wait` also waits
    until the kernel reports the main thread asleep, so the signal interrupts the blocked call
    instead of arriving in the instructions just before it.
    """

    def __init__(self, lock: Lockish) -> None:
        self._lock = lock
        self.reached = threading.Event()
        self._old: Any = None

    def __enter__(self) -> ReacquireProbe:
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("a ReacquireProbe watches the main thread, from the main thread")
        self._old = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        sys.setprofile(self._old)

    def wait(self, timeout: float = BOUND) -> bool:
        """From another thread: block until the main thread has called the re-acquire and is
        asleep; ``False`` if it never called it within ``timeout``."""
        if not self.reached.wait(timeout):
            return False
        main_asleep(timeout)
        return True

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "c_call" or getattr(arg, "__self__", None) is not self._lock:
            return
        name = getattr(arg, "__name__", "")
        if name == "_acquire_restore" or (
            name == "acquire" and frame.f_code.co_name == "_acquire_restore"
        ):
            sys.setprofile(self._old)
            self.reached.set()


def main_asleep(timeout: float = BOUND) -> bool:
    """Poll (yielding the CPU, bounded) until the kernel reports the main thread asleep ("S" in
    ``/proc/self/task/<id>/stat``); ``True`` at once where there is no such file.

    The one poll in these tools: whether a thread has entered a blocking call is known only to
    the kernel. Called right after :class:`ReacquireProbe` fired, it normally succeeds on the
    first read; it narrows a window of a few instructions, it does not decide any outcome.
    """
    path = f"/proc/self/task/{threading.main_thread().native_id}/stat"
    if not os.path.exists(path):
        return True
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open(path, "rb") as f:
            stat = f.read()
        if stat[stat.rindex(b")") + 2 :].startswith(b"S"):
            return True
        os.sched_yield()
    return False


# =============================================================================================
# Measurement: window (b) on a bare condition
# =============================================================================================


@dataclass(frozen=True, slots=True)
class ReacquireMeasurement:
    """What :func:`measure_reacquire` counted: for each outcome, in how many rounds."""

    lock: str
    rounds: int
    #: The exception left ``Condition.wait`` with the waiter not holding the lock. Counted by
    #: its consequence: the one ``RuntimeError('release unlocked lock')`` such a round causes,
    #: in the waiter (the notifier released first) or in the notifier (the waiter's release
    #: took the lock from under it).
    left_without_lock: int
    #: ... of which the handler ran while the notifier still held the lock (it ran before the
    #: notifier's release): the exception surfaced while another thread held the lock.
    while_other_held: int
    #: The signal had been delivered, but the handler had not run when the notifier released
    #: the lock: it was deferred (an ``RLock``: until the waiter had the lock back).
    deferred: int
    #: The waiter owned the lock when the exception left the wait (``RLock`` only).
    left_owning: int


def measure_reacquire(make_lock: Callable[[], Lockish], rounds: int) -> ReacquireMeasurement:
    """Interrupt the main thread ``rounds`` times while it re-takes the lock in ``cond.wait()``.

    Each round: the main thread takes the lock and waits on a fresh condition; a notifier takes
    the lock, notifies, waits until the main thread blocks in the re-acquire
    (:class:`ReacquireProbe`), sends the signal and waits until it is delivered
    (:meth:`SignalStorm.interrupt_main`), notes whether the handler has run yet, and releases.
    Then the main thread releases the lock (as a ``with`` block would). Main thread only.
    """
    lock = make_lock()
    counts = {"without": 0, "other_held": 0, "deferred": 0, "owning": 0}
    with SignalStorm(lock) as storm:
        for _ in range(rounds):
            errors, ran_before_release, owning = _reacquire_round(lock, storm)
            counts["without"] += errors
            counts["other_held"] += errors == 1 and ran_before_release
            counts["deferred"] += not ran_before_release
            counts["owning"] += owning is True
    return ReacquireMeasurement(
        lock="Lock" if owns(lock) is None else "RLock",
        rounds=rounds,
        left_without_lock=counts["without"],
        while_other_held=counts["other_held"],
        deferred=counts["deferred"],
        left_owning=counts["owning"],
    )


def _reacquire_round(lock: Lockish, storm: SignalStorm) -> tuple[int, bool, bool | None]:
    """One round of :func:`measure_reacquire`: how many ``release unlocked lock`` errors,
    whether the handler ran before the notifier released, whether the waiter owned the lock
    as the exception left the wait."""
    cond = threading.Condition(lock)  # type: ignore[arg-type]
    probe = ReacquireProbe(lock)
    ran_before_release: list[bool] = []

    def notify() -> None:
        with cond:  # the main thread is in cond.wait(): it released the lock there
            cond.notify()
            if not probe.wait():
                raise AssertionError("the waiter never re-took the lock")
            storm.interrupt_main()
            ran_before_release.append(storm.ran.is_set())

    lock.acquire()
    notifier = _Thread(notify)
    try:
        with probe:
            cond.wait()
    except Interrupt:
        pass
    else:
        raise AssertionError("the wait returned: the handler did not interrupt it")
    owning = owns(lock)
    errors = 0
    try:
        lock.release()  # what the waiter's ``with`` block does next
    except RuntimeError as e:
        assert "release unlocked lock" in str(e), e
        errors += 1
    error = notifier.join()
    if isinstance(error, RuntimeError) and "release unlocked lock" in str(error):
        errors += 1
    elif error is not None:
        raise error
    assert errors <= 1, "one acquire, two releases: at most one of them fails"
    return errors, ran_before_release == [True], owning


class _Thread:
    """A thread whose exception, if any, is returned by :meth:`join` (bounded)."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self._fn = fn
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="notifier", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._fn()
        except BaseException as e:
            self._error = e

    def join(self) -> BaseException | None:
        self._thread.join(BOUND)
        assert not self._thread.is_alive(), "the notifier did not finish"
        return self._error


def main(argv: list[str] | None = None) -> None:
    """Print :func:`measure_reacquire` for a plain ``Lock`` and an ``RLock``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args(argv)
    for make_lock in (threading.Lock, threading.RLock):
        print(measure_reacquire(make_lock, args.rounds))


if __name__ == "__main__":
    main()
