"""``impl.clock.TimedCallbacks``: the heap of timed callbacks that ``FakeClock`` and the endpoint's
``ServerClock`` both keep, tested on its own with a time the test sets.

The order (due time, then registration), equal due times in registration order, cancelling
before and after a callback ran (and from inside another callback), a callback registering one
due at once (it runs in the same round), a time that moves during the round, the live count, the
lock contract (no callback runs with the lock held), and a raising callback: without
``on_error`` the others still run and the first ``Exception`` is raised with the later ones in
its notes (what ``FakeClock.advance`` raises); with ``on_error`` each is handed over inside its
``except`` clause and the round goes on (what ``ServerClock`` logs); a ``KeyboardInterrupt`` ends
the round at once and the rest stay registered.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable

import pytest

from impl.clock import TimedCallbacks, TimerHandle


class Time:
    """A time a test sets by hand, read by ``run_due`` as ``now``."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def make() -> tuple[TimedCallbacks, threading.Lock, Time]:
    lock = threading.Lock()
    return TimedCallbacks(lock), lock, Time()


def note(log: list[object], name: object, now: Time) -> Callable[[], None]:
    """A callback that appends ``(name, the time it ran at)`` to ``log``."""
    return lambda: log.append((name, now()))


def test_callbacks_run_in_order_of_due_time_once_the_time_reaches_them() -> None:
    cbs, _, now = make()
    log: list[object] = []
    for name, due in (("c", 3.0), ("a", 1.0), ("d", 10.0), ("b", 2.0)):
        cbs.call_at(due, note(log, name, now))
    assert len(cbs) == 4
    now.t = 0.5
    cbs.run_due(now)
    assert log == [] and len(cbs) == 4
    now.t = 3.0  # a due time equal to the time is reached
    cbs.run_due(now)
    assert log == [("a", 3.0), ("b", 3.0), ("c", 3.0)] and len(cbs) == 1
    cbs.run_due(now)
    assert len(log) == 3  # each runs once
    now.t = 99.0
    cbs.run_due(now)
    assert log[3:] == [("d", 99.0)] and len(cbs) == 0


def test_equal_due_times_run_in_registration_order() -> None:
    cbs, _, now = make()
    log: list[object] = []
    for name in range(30):
        cbs.call_at(5.0, note(log, name, now))
    cbs.call_at(4.0, note(log, "earlier", now))
    cbs.call_at(5.0, note(log, "last", now))
    now.t = 5.0
    cbs.run_due(now)
    assert log == [("earlier", 5.0), *((name, 5.0) for name in range(30)), ("last", 5.0)]


def test_cancel_before_the_run_and_after_it() -> None:
    cbs, _, now = make()
    log: list[object] = []
    drop = cbs.call_at(1.0, note(log, "drop", now))
    keep = cbs.call_at(1.0, note(log, "keep", now))
    assert isinstance(drop, TimerHandle) and not drop.cancelled and not keep.cancelled
    drop.cancel()
    drop.cancel()  # idempotent
    assert drop.cancelled and len(cbs) == 1
    now.t = 1.0
    cbs.run_due(now)
    assert log == [("keep", 1.0)]
    assert keep.cancelled  # a callback that ran reads cancelled: it will not run again
    keep.cancel()  # cancelling one that ran changes nothing
    cbs.run_due(now)
    assert log == [("keep", 1.0)] and len(cbs) == 0


def test_a_callback_may_cancel_a_later_one_of_the_same_round() -> None:
    cbs, _, now = make()
    log: list[object] = []
    later: list[TimerHandle] = []

    def first() -> None:
        log.append("first")
        later[0].cancel()

    cbs.call_at(1.0, first)
    later.append(cbs.call_at(1.0, note(log, "cancelled", now)))
    cbs.call_at(1.0, note(log, "third", now))
    now.t = 1.0
    cbs.run_due(now)
    assert log == ["first", ("third", 1.0)] and len(cbs) == 0


def test_a_callback_registering_one_due_at_once_runs_it_in_the_same_round_in_its_place() -> None:
    cbs, _, now = make()
    log: list[object] = []

    def parent() -> None:
        log.append("parent")
        cbs.call_at(2.0, note(log, "child due now", now))  # before "b" (due 3): runs first
        cbs.call_at(3.0, note(log, "child tied with b", now))  # registered after b: after it
        cbs.call_at(9.0, note(log, "child not due", now))

    cbs.call_at(1.0, parent)
    cbs.call_at(3.0, note(log, "b", now))
    now.t = 5.0
    cbs.run_due(now)
    assert log == ["parent", ("child due now", 5.0), ("b", 5.0), ("child tied with b", 5.0)]
    assert len(cbs) == 1


def test_the_time_is_read_before_each_callback() -> None:
    # A callback that moves the time on (a clock advanced from a callback, or a running clock)
    # lets the same round reach callbacks that were not due when it began.
    cbs, _, now = make()
    log: list[object] = []

    def move_on() -> None:
        log.append("move on")
        now.t = 10.0

    cbs.call_at(1.0, move_on)
    cbs.call_at(10.0, note(log, "reached meanwhile", now))
    cbs.call_at(11.0, note(log, "not reached", now))
    now.t = 1.0
    cbs.run_due(now)
    assert log == ["move on", ("reached meanwhile", 10.0)] and len(cbs) == 1


def test_no_callback_runs_with_the_lock_held_and_now_is_read_with_it() -> None:
    cbs, lock, _ = make()
    now_held: list[bool] = []
    callback_held: list[bool] = []

    def now() -> float:
        now_held.append(lock.locked())
        return 1.0

    def callback() -> None:
        callback_held.append(lock.locked())
        assert len(cbs) == 1  # len() and call_at take the lock: held, they would deadlock
        cbs.call_at(5.0, lambda: None)

    cbs.call_at(1.0, callback)
    cbs.call_at(2.0, lambda: None)
    cbs.run_due(now)
    assert callback_held == [False]
    assert len(now_held) == 2 and all(now_held)  # before the callback, and to stop
    with lock:
        assert cbs.earliest() == 2.0  # earliest() is called with the lock held


def test_earliest_skips_cancelled_and_run_entries() -> None:
    cbs, lock, now = make()
    with lock:
        assert cbs.earliest() is None
    a = cbs.call_at(1.0, lambda: None)
    cbs.call_at(2.0, lambda: None)
    cbs.call_at(3.0, lambda: None)
    a.cancel()
    with lock:
        assert cbs.earliest() == 2.0
    now.t = 2.0
    cbs.run_due(now)
    with lock:
        assert cbs.earliest() == 3.0


def test_a_raising_callback_does_not_hold_back_the_others_and_the_first_is_raised() -> None:
    cbs, _, now = make()
    log: list[object] = []

    def fail(name: str) -> Callable[[], None]:
        def callback() -> None:
            log.append(name)
            raise RuntimeError(name)

        return callback

    cbs.call_at(1.0, fail("first"))
    cbs.call_at(2.0, note(log, "between", now))
    cbs.call_at(3.0, fail("second"))
    cbs.call_at(4.0, note(log, "after", now))
    now.t = 5.0
    with pytest.raises(RuntimeError, match="first") as raised:
        cbs.run_due(now)
    assert log == ["first", ("between", 5.0), "second", ("after", 5.0)]
    notes = getattr(raised.value, "__notes__", [])
    assert notes == ["a later callback of the same advance raised RuntimeError('second')"]
    assert len(cbs) == 0  # the failed ones ran, and will not run again
    cbs.run_due(now)
    assert len(log) == 4


def test_with_on_error_each_failure_is_handed_over_in_its_except_clause() -> None:
    cbs, _, now = make()
    log: list[object] = []
    errors: list[tuple[Exception, object]] = []

    def on_error(e: Exception) -> None:
        errors.append((e, sys.exc_info()[1]))

    def fail() -> None:
        log.append("fail")
        raise ValueError("boom")

    cbs.call_at(1.0, fail)
    cbs.call_at(1.0, note(log, "next", now))
    cbs.call_at(1.0, fail)
    now.t = 1.0
    cbs.run_due(now, on_error)  # raises nothing
    assert log == ["fail", ("next", 1.0), "fail"]
    assert len(errors) == 2
    assert all(isinstance(e, ValueError) and current is e for e, current in errors)


def test_on_error_may_log_the_traceback(caplog: pytest.LogCaptureFixture) -> None:
    cbs, _, now = make()
    log = logging.getLogger("tests.clock_timers")

    def fail() -> None:
        raise KeyError("lost")

    cbs.call_at(0.0, fail)
    with caplog.at_level(logging.ERROR, logger="tests.clock_timers"):
        cbs.run_due(now, lambda e: log.exception("a clock callback failed"))
    [record] = caplog.records
    assert record.exc_info is not None and record.exc_info[0] is KeyError


@pytest.mark.parametrize("with_on_error", [False, True])
def test_a_keyboard_interrupt_ends_the_round_and_the_rest_stay_registered(
    with_on_error: bool,
) -> None:
    cbs, _, now = make()
    log: list[object] = []

    def interrupt() -> None:
        log.append("interrupt")
        raise KeyboardInterrupt

    cbs.call_at(1.0, note(log, "before", now))
    cbs.call_at(2.0, interrupt)
    cbs.call_at(3.0, note(log, "after", now))
    now.t = 3.0
    with pytest.raises(KeyboardInterrupt):
        cbs.run_due(now, (lambda e: None) if with_on_error else None)
    assert log == [("before", 3.0), "interrupt"] and len(cbs) == 1
    cbs.run_due(now)
    assert log[2:] == [("after", 3.0)] and len(cbs) == 0


@pytest.mark.parametrize("due", [float("nan"), float("inf"), -float("inf"), 10**400])
def test_call_at_rejects_a_due_that_is_not_finite(due: float) -> None:
    cbs, _, _ = make()
    with pytest.raises(ValueError, match="due"):
        cbs.call_at(due, lambda: None)
    assert len(cbs) == 0


@pytest.mark.parametrize("due", ["1", None, True, [1.0]])
def test_call_at_rejects_a_due_that_is_not_a_number(due: object) -> None:
    cbs, _, _ = make()
    with pytest.raises(TypeError, match="due"):
        cbs.call_at(due, lambda: None)  # type: ignore[arg-type]
    assert len(cbs) == 0


def test_call_at_rejects_a_callback_that_is_not_callable() -> None:
    cbs, _, _ = make()
    with pytest.raises(TypeError, match="callback"):
        cbs.call_at(1.0, "not callable")  # type: ignore[arg-type]
    assert len(cbs) == 0
