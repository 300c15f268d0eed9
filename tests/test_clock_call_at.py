"""``FakeClock.call_at``: the callbacks a fake clock runs when it is advanced (what the asyncio
shell's loop timer is on a fake clock, ``impl/aio.py``), their handles and ``callbacks()``.

The order (due time, then registration), a due already reached, cancelling (before, from
another callback, after it ran), callbacks registered from inside a callback, an advance from
another thread (the callback runs there), and what a callback that raises does to the others
(they still run; the first ``Exception`` is raised from ``advance``, a ``KeyboardInterrupt`` ends
the advance at once and the rest run at the next one).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

import pytest

from impl import FakeClock
from impl.clock import TimerHandle
from model_tests.support import Spawn


def recorder(log: list[object], name: object, clock: FakeClock) -> Callable[[], None]:
    """A callback that appends ``(name, the time it ran at)`` to ``log``."""
    return lambda: log.append((name, clock.now()))


def test_callbacks_run_in_order_of_due_time_at_the_advance_that_reaches_them() -> None:
    c = FakeClock(10.0)
    log: list[object] = []
    for name, due in (("c", 13.0), ("a", 11.0), ("d", 20.0), ("b", 12.0)):
        c.call_at(due, recorder(log, name, c))
    assert c.callbacks() == 4
    c.advance(0.5)
    assert log == [] and c.callbacks() == 4  # none due yet: nothing runs
    c.advance(2.5)  # to 13: a, b and c are due; each sees the time the advance reached
    assert log == [("a", 13.0), ("b", 13.0), ("c", 13.0)]
    assert c.callbacks() == 1
    c.advance(7.0)
    assert log[3:] == [("d", 20.0)] and c.callbacks() == 0
    c.advance(100.0)
    assert len(log) == 4  # each ran once


def test_ties_run_in_registration_order() -> None:
    c = FakeClock()
    log: list[object] = []
    for name in range(20):
        c.call_at(5.0, recorder(log, name, c))
    c.call_at(4.0, recorder(log, "earlier", c))
    c.advance(5.0)
    assert log == [("earlier", 5.0)] + [(name, 5.0) for name in range(20)]


def test_a_due_already_reached_runs_at_the_next_advance_even_by_zero() -> None:
    c = FakeClock(7.0)
    log: list[object] = []
    c.call_at(3.0, recorder(log, "past", c))
    c.call_at(7.0, recorder(log, "now", c))
    assert log == []  # registering never runs anything
    c.advance(0)
    assert log == [("past", 7.0), ("now", 7.0)]


def test_a_cancelled_callback_never_runs_and_is_not_counted() -> None:
    c = FakeClock()
    log: list[object] = []
    keep = c.call_at(1.0, recorder(log, "keep", c))
    drop = c.call_at(1.0, recorder(log, "drop", c))
    assert isinstance(drop, TimerHandle) and not drop.cancelled
    drop.cancel()
    drop.cancel()  # idempotent
    assert drop.cancelled and c.callbacks() == 1
    c.advance(1.0)
    assert log == [("keep", 1.0)]
    # Once run, a handle is spent: cancelling it does nothing, it never runs again.
    assert keep.cancelled
    keep.cancel()
    c.advance(10.0)
    assert log == [("keep", 1.0)] and c.callbacks() == 0


def test_a_callback_may_cancel_one_due_in_the_same_advance() -> None:
    c = FakeClock()
    log: list[object] = []
    later: list[TimerHandle] = []

    def first() -> None:
        log.append("first")
        later[0].cancel()

    c.call_at(1.0, first)
    later.append(c.call_at(2.0, recorder(log, "second", c)))
    c.advance(5.0)  # both due: the first cancels the second before its turn
    assert log == ["first"] and c.callbacks() == 0


def test_callbacks_registered_from_a_callback_run_in_their_place() -> None:
    c = FakeClock()
    log: list[object] = []

    def a() -> None:
        log.append(("a", c.now()))
        # Reached already: runs in this advance, before "c" (due 8), after nothing earlier.
        c.call_at(6.0, recorder(log, "a's child at 6", c))
        c.call_at(9.0, recorder(log, "a's child at 9", c))
        c.call_at(50.0, recorder(log, "a's child at 50", c))

    def rearm() -> None:
        # A callback re-arming itself for the time reached runs again in the same advance,
        # once per registration (what a loop timer re-armed by its round relies on).
        log.append(("rearm", c.now()))
        if sum(1 for e in log if e == ("rearm", 10.0)) < 3:
            c.call_at(c.now(), rearm)

    c.call_at(5.0, a)
    c.call_at(8.0, recorder(log, "c", c))
    c.call_at(10.0, rearm)
    c.advance(10.0)
    assert log == [
        ("a", 10.0),
        ("a's child at 6", 10.0),
        ("c", 10.0),
        ("a's child at 9", 10.0),
        ("rearm", 10.0),
        ("rearm", 10.0),
        ("rearm", 10.0),
    ]
    assert c.callbacks() == 1  # a's child at 50
    c.advance(40.0)
    assert log[-1] == ("a's child at 50", 50.0)


def test_an_advance_from_another_thread_runs_the_callbacks_in_that_thread(spawn: Spawn) -> None:
    c = FakeClock()
    ran: list[tuple[str, float]] = []
    c.call_at(3.0, lambda: ran.append((threading.current_thread().name, c.now())))
    call = spawn(lambda: c.advance(3.0))
    call.result()
    assert len(ran) == 1
    name, at = ran[0]
    assert name == call.thread.name and name != threading.current_thread().name
    assert at == 3.0


def test_a_callback_that_raises_does_not_hold_back_the_others() -> None:
    c = FakeClock()
    log: list[object] = []

    def boom(what: str) -> None:
        log.append(what)
        raise LookupError(what)

    c.call_at(1.0, recorder(log, "before", c))
    c.call_at(1.0, lambda: boom("first"))
    c.call_at(2.0, recorder(log, "between", c))
    c.call_at(2.0, lambda: boom("second"))
    c.call_at(3.0, recorder(log, "after", c))
    c.call_at(9.0, recorder(log, "not due", c))
    with pytest.raises(LookupError, match="first") as raised:
        c.advance(3.0)
    # Every callback due ran, in order; the first error is the one raised, the later noted.
    assert log == [("before", 3.0), "first", ("between", 3.0), "second", ("after", 3.0)]
    assert any("second" in note for note in getattr(raised.value, "__notes__", []))
    assert c.now() == 3.0  # the time moved all the same
    assert c.callbacks() == 1
    c.advance(6.0)  # nothing raised this time; the failed ones do not run again
    assert log[-1] == ("not due", 9.0) and log.count("first") == 1


def test_a_keyboard_interrupt_in_a_callback_ends_the_advance_and_the_rest_run_next_time() -> None:
    c = FakeClock()
    log: list[object] = []

    def interrupted() -> None:
        log.append("interrupted")
        raise KeyboardInterrupt

    c.call_at(1.0, interrupted)
    c.call_at(1.0, recorder(log, "after", c))
    with pytest.raises(KeyboardInterrupt):
        c.advance(1.0)
    assert log == ["interrupted"] and c.now() == 1.0
    assert c.callbacks() == 1  # still registered, due: it runs at the next advance
    c.advance(0)
    assert log == ["interrupted", ("after", 1.0)] and c.callbacks() == 0


@pytest.mark.parametrize("due", [math.nan, math.inf, -math.inf])
def test_call_at_rejects_a_due_that_is_not_finite_and_registers_nothing(due: float) -> None:
    c = FakeClock()
    with pytest.raises(ValueError, match="due"):
        c.call_at(due, lambda: None)
    assert c.callbacks() == 0


@pytest.mark.parametrize("due", ["1", None, True, [1.0]])
def test_call_at_rejects_a_due_that_is_not_a_number(due: object) -> None:
    c = FakeClock()
    with pytest.raises(TypeError, match="due must be a number"):
        c.call_at(due, lambda: None)  # type: ignore[arg-type]
    assert c.callbacks() == 0


def test_call_at_rejects_a_callback_that_is_not_callable() -> None:
    c = FakeClock()
    with pytest.raises(TypeError, match="callback must be callable, got int"):
        c.call_at(1.0, 3)  # type: ignore[arg-type]
    assert c.callbacks() == 0
    c.advance(5.0)  # and nothing runs


def test_a_failed_advance_runs_no_callback() -> None:
    c = FakeClock()
    log: list[object] = []
    c.call_at(0.0, recorder(log, "due", c))
    with pytest.raises(ValueError):
        c.advance(-1.0)
    assert log == [] and c.callbacks() == 1
