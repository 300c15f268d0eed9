"""The clocks of ``impl.clock``: FakeClock's time, its waits and its wakeups; the real clock."""

from __future__ import annotations

import threading

import pytest

from impl import Clock, FakeClock, MonotonicClock
from model_tests.support import Spawn


def test_fake_clock_starts_where_told_and_moves_only_on_advance() -> None:
    c = FakeClock()
    assert c.now() == 0.0
    c.advance(1.5)
    c.advance(0)
    assert c.now() == 1.5
    assert FakeClock(start=7).now() == 7.0


@pytest.mark.parametrize("dt", [-1, -0.001, float("nan"), float("inf")])
def test_advance_rejects_bad_values_and_keeps_the_time(dt: float) -> None:
    c = FakeClock(3.0)
    with pytest.raises(ValueError, match="dt"):
        c.advance(dt)
    assert c.now() == 3.0


@pytest.mark.parametrize("dt", ["1", None, True])
def test_advance_rejects_non_numbers(dt: object) -> None:
    c = FakeClock()
    with pytest.raises(TypeError, match="dt"):
        c.advance(dt)  # type: ignore[arg-type]
    assert c.now() == 0.0


def test_fake_clock_rejects_a_bad_start() -> None:
    with pytest.raises(TypeError, match="start"):
        FakeClock("0")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="start"):
        FakeClock(float("nan"))


def test_both_clocks_satisfy_the_protocol() -> None:
    assert isinstance(FakeClock(), Clock)
    assert isinstance(MonotonicClock(), Clock)


def test_wait_returns_at_once_when_the_deadline_has_passed() -> None:
    c = FakeClock(5.0)
    cond = threading.Condition()
    with cond:
        c.wait(cond, 5.0)  # due exactly now: no wait
        c.wait(cond, 1.0)
    assert c.waiters() == 0 and c.waits_begun == 0


def test_advance_wakes_a_waiter_and_it_sees_the_new_time(spawn: Spawn) -> None:
    c = FakeClock()
    cond = threading.Condition()

    def waiter() -> float:
        with cond:
            while c.now() < 10:
                c.wait(cond, 10.0)
            return c.now()

    call = spawn(waiter)
    assert c.wait_for_waiters(1)
    c.advance(9)
    # Short of its deadline: not woken (as on the real clock), still blocked.
    assert c.waiters() == 1 and c.waits_begun == 1
    assert not call.finished
    c.advance(1)
    assert call.result() == 10.0
    assert c.waiters() == 0


class CountingCondition(threading.Condition):
    """A condition that counts notify_all calls, to see which ones an advance wakes."""

    def __init__(self) -> None:
        super().__init__()
        self.notified = 0

    def notify_all(self) -> None:
        self.notified += 1
        super().notify_all()


def test_advance_wakes_only_waits_whose_deadline_it_reaches(spawn: Spawn) -> None:
    c = FakeClock()
    untimed, later, due = CountingCondition(), CountingCondition(), CountingCondition()
    stop = threading.Event()

    def waiter(cond: CountingCondition, deadline: float | None) -> None:
        with cond:
            while not stop.is_set() and (deadline is None or c.now() < deadline):
                c.wait(cond, deadline)

    calls = [
        spawn(lambda: waiter(untimed, None)),
        spawn(lambda: waiter(later, 5.0)),
        spawn(lambda: waiter(due, 2.0)),
    ]
    assert c.wait_for_waiters(3)
    c.advance(2)  # notifies synchronously, before it returns
    # An untimed wait is woken only by a notify: a clock tick must not hide a missing one.
    assert (untimed.notified, later.notified, due.notified) == (0, 0, 1)
    calls[2].result()
    stop.set()
    for cond in (untimed, later):
        with cond:
            cond.notify_all()
    for call in calls[:2]:
        call.result()


def test_advance_wakes_waiters_on_many_conditions(spawn: Spawn) -> None:
    c = FakeClock()
    conds = [threading.Condition() for _ in range(3)]

    def waiter(cond: threading.Condition) -> float:
        with cond:
            c.wait(cond, 1.0)
            return c.now()

    calls = [spawn(lambda cond=cond: waiter(cond)) for cond in conds]  # type: ignore[misc]
    assert c.wait_for_waiters(3)
    c.advance(1)
    assert [call.result() for call in calls] == [1.0, 1.0, 1.0]


def test_a_notify_ends_a_wait_without_a_deadline(spawn: Spawn) -> None:
    c = FakeClock()
    cond = threading.Condition()
    flag: list[int] = []

    def waiter() -> bool:
        with cond:
            while not flag:
                c.wait(cond, None)
            return True

    call = spawn(waiter)
    assert c.wait_for_waiters(1)
    with cond:
        flag.append(1)
        cond.notify_all()
    assert call.result() is True


def test_wait_for_waiters_times_out_when_nobody_waits() -> None:
    assert FakeClock().wait_for_waiters(1, timeout=0.01) is False


def test_monotonic_clock_never_goes_back_and_its_wait_returns() -> None:
    c = MonotonicClock()
    a = c.now()
    cond = threading.Condition()
    with cond:
        c.wait(cond, a - 1.0)  # already past: returns at once
        while c.now() < a + 0.01:  # a real wait, ended by its deadline (may wake early)
            c.wait(cond, a + 0.01)
    assert c.now() >= a + 0.01
