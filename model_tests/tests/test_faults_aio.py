"""Fault injection on the asyncio driver: every call of ``impl.AsyncQueue``, and the loop
timer's own sweep round, takes full effect or none when the clock or the trace sink fails.

The promise is the threaded queue's (``docs/failure-model.md``; ``test_faults.py``): whatever
raises inside a call (the clock's ``now``, the arming of the loop timer on the clock's
``call_at``, the trace sink; ``InjectedFault``, ``MemoryError``, ``KeyboardInterrupt``), the call
raises that very exception and leaves the queue exactly as it was, nothing traced, and the same
call retried then agrees with the spec. A waiting task beside it (a receiver or a sender, the
bystander) is neither stranded nor served by the failed call, and is woken exactly when the
retried call makes work for it. The loop timer is armed before the call commits, so a failing
``call_at`` vetoes the call like any other fault. After every call, expiry resumes: the clock
moved onto the next due time releases what is due with no ``sweep()`` called (and a bystander
still waiting takes what that made for it).

The loop timer's round is nobody's call: it keeps the threaded sweeper's promise
(``impl/sweeper.py``, ``test_faults.py``'s sweeper tests). A failed round changes nothing; an
``Exception`` in it is logged and counted in ``health()``, not raised to whoever moved the clock,
and the round runs again by itself once the clock passes the backoff. A failing ``call_at`` (the
re-arming after a round, which has committed: the counterpart of the sweeper's ``wait``) or a
``KeyboardInterrupt`` (re-raised to whoever moved the clock, as asyncio does) ends the timer:
``health()`` reports the stall, and restarts it (:func:`model_tests.fault_matrix.timer_survives`).

The calls and states are ``test_faults.py``'s ``CASES`` (each alone and beside its bystander),
plus the loop timer's round (:data:`model_tests.fault_matrix.TIMER`) in the states where it
releases, dead-letters or fires a delay. The framework is :mod:`model_tests.fault_matrix`'s
async section (:func:`~model_tests.fault_matrix.check_every_fault_aio`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Final, Literal

import pytest

from impl import AsyncQueue, FakeClock, Health
from impl.clock import TimerHandle
from impl.sweeper import FIRST_BACKOFF
from model_tests.fault_matrix import (
    OTHER_FAULTS,
    TIMER,
    AioPoint,
    Bystander,
    Op,
    Setup,
    check_every_fault_aio,
)
from model_tests.faults import InjectedFault
from model_tests.tests.test_faults import A_RECEIVED, CASES, Case, case, receive, send

#: The threaded points a call reaches that the asyncio driver has too ("start", a sweeper
#: thread's start, has no counterpart: the timer is armed on the clock instead).
SHARED_POINTS: Final[tuple[AioPoint, ...]] = ("now", "sink")


def _missed(c: Case, counts: dict[AioPoint, int], traced: bool) -> set[AioPoint]:
    """The shared points ``c`` must reach (the sink only when traced) that it never did, and
    ``call_at`` where the threaded call starts its sweeper: the first timer arms the loop
    timer, before the call commits."""
    want: set[AioPoint] = {p for p in SHARED_POINTS if p in c.reaches and (traced or p != "sink")}
    if "start" in c.reaches:
        want.add("call_at")
    return {p for p in want if counts[p] == 0}


PLACED: Final = [
    pytest.param(c, by, id=f"{c.name}-{by or 'alone'}")
    for c in CASES
    for by in dict.fromkeys((None, c.bystander))
]


@pytest.mark.parametrize("traced", [True, False], ids=["traced", "untraced"])
@pytest.mark.parametrize(("c", "bystander"), PLACED)
def test_an_async_call_takes_full_effect_or_none_at_every_fault(
    c: Case, bystander: Bystander | None, traced: bool
) -> None:
    setup = Setup(c.setup.capacity, c.setup.vt, c.setup.max_receives, traced)
    counts = check_every_fault_aio(setup, c.prefix, c.op, bystander)
    missed = _missed(c, counts, traced)
    assert not missed, f"{c.name}: never reached {missed} ({counts})"


#: The loop timer's round, in the states where it does something: each as the threaded
#: sweep cases of test_faults.py, the clock moved (waking) instead of ``sweep()`` called.
TIMER_CASES: Final = (
    case(
        "timer releasing two",
        Op(TIMER, t=10.0),
        send("a"),
        send("b"),
        receive(),
        receive(),
        bystander="receiver",
        reaches="now sink",
    ),
    case(
        "timer dead-lettering two",
        Op(TIMER, t=10.0),
        send("a"),
        send("b"),
        receive(),
        receive(),
        bystander="sender",
        capacity=2,
        max_receives=1,
        reaches="now sink",
    ),
    case(
        "timer, one due of two",
        Op(TIMER, t=4.0),
        send("a"),
        send("b"),
        receive(),
        receive(3.0),
        receive(),
        reaches="now sink",
    ),
    case(
        "timer firing a delay and a deadline",
        Op(TIMER, t=10.0),
        Op("send", "b", t=5.0),
        *A_RECEIVED,
        bystander="receiver",
        reaches="now sink",
    ),
    case("timer, nothing due yet", Op(TIMER, t=1.0), *A_RECEIVED),
)


@pytest.mark.parametrize("traced", [True, False], ids=["traced", "untraced"])
@pytest.mark.parametrize("c", TIMER_CASES, ids=[c.name for c in TIMER_CASES])
def test_the_loop_timers_round_takes_full_effect_or_none_and_expiry_resumes(
    c: Case, traced: bool
) -> None:
    setup = Setup(c.setup.capacity, c.setup.vt, c.setup.max_receives, traced)
    counts = check_every_fault_aio(setup, c.prefix, c.op, c.bystander)
    missed = _missed(c, counts, traced)
    assert not missed, f"{c.name}: never reached {missed} ({counts})"


@pytest.mark.parametrize("fault", OTHER_FAULTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("c", (*CASES, *TIMER_CASES), ids=lambda c: c.name)
def test_memory_errors_and_interrupts_are_faults_like_any_other(
    c: Case, fault: type[BaseException]
) -> None:
    check_every_fault_aio(c.setup, c.prefix, c.op, c.bystander, fault=fault)


# =============================================================================================
# The loop timer's death and restart, a target's timer, a timed wait: by hand
# =============================================================================================


class ArmingClock(FakeClock):
    """A fake clock whose next ``call_at`` raises :attr:`fail` (once), if set."""

    def __init__(self) -> None:
        super().__init__()
        self.fail: BaseException | None = None

    def call_at(self, due: float, callback: Callable[[], object]) -> TimerHandle:
        fault, self.fail = self.fail, None
        if fault is not None:
            raise fault
        return super().call_at(due, callback)


def timer_errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "impl.queue" and r.levelno >= logging.ERROR]


def visible(q: AsyncQueue[str]) -> list[str]:
    return [m.id for m in q.snapshot().visible]


@pytest.mark.parametrize("resume", ["arm", "sweep", "health"])
def test_a_dead_loop_timer_is_reported_and_restarted_by_an_arm_a_sweep_or_health(
    resume: Literal["arm", "sweep", "health"], caplog: pytest.LogCaptureFixture
) -> None:
    """The timer's re-arming after a round that released ``a`` fails: the round stands, the
    death is logged and counted, and ``c`` is not released when its deadline passes. A restart
    that fails too changes nothing (``health()`` reports it and the stall); the next one
    (``resume``) arms the timer again: ``c``, overdue, is released at the clock's next move and
    ``e`` at its deadline, with no other call."""
    caplog.set_level(logging.ERROR, logger="impl.queue")

    async def main() -> None:
        clock = ArmingClock()
        q: AsyncQueue[str] = AsyncQueue(visibility_timeout=10.0, clock=clock)
        for id in ("a", "c", "e", "d"):
            await q.send(id, id=id)
        await q.receive()  # a, due at 10
        await q.receive(visibility_timeout=30.0)  # c, due at 30
        await q.receive(visibility_timeout=50.0)  # e, due at 50
        died = InjectedFault("the re-arm after the round")
        clock.fail = died
        clock.advance(10.0)  # the round releases a, then cannot re-arm for c
        assert visible(q) == ["d", "a"]
        errors = timer_errors(caplog)
        assert len(errors) == 1 and errors[0].exc_info is not None
        assert errors[0].exc_info[1] is died
        clock.advance(20.0)
        assert visible(q) == ["d", "a"], "a dead timer released c"
        before = q.snapshot()
        again = InjectedFault("the restart")
        clock.fail = again
        if resume == "health":
            assert q.health() == Health(
                sweeper_running=False, sweeper_failures=1, last_error=again, expiry_stalled=True
            )
        else:
            with pytest.raises(InjectedFault) as raised:
                if resume == "arm":  # a step that arms a timer restarts it before it commits
                    await q.receive(visibility_timeout=100.0)
                else:
                    q.sweep()  # restarts it before the sweep commits: c is not released
            assert raised.value is again
        assert q.snapshot() == before, "a failed restart changed the queue"
        if resume == "arm":
            assert (await q.receive(visibility_timeout=100.0)).id == "d"
        elif resume == "sweep":
            q.sweep()
            assert "c" in visible(q)  # the sweep itself
        else:
            q.health()
        health = q.health()
        assert health.sweeper_running and not health.expiry_stalled, health
        assert health.sweeper_failures == 1, health
        clock.advance(0)  # what was due fires at the clock's next move, with no other call
        assert "c" in visible(q)
        clock.advance(19.0)
        assert "e" not in visible(q)
        clock.advance(1.0)  # 50: e's deadline
        assert "e" in visible(q)
        q.close()

    asyncio.run(main())


def test_a_failed_round_is_logged_counted_and_retried_after_the_backoff(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The trace sink raises in the timer's round: nothing is released, nothing raised to the
    advance, the failure logged at ERROR with its traceback and counted; the round runs again
    once the clock passes the backoff, and not before."""
    caplog.set_level(logging.ERROR, logger="impl.queue")
    broken = InjectedFault("the sink")

    async def main() -> None:
        clock = FakeClock()
        q: AsyncQueue[str] = AsyncQueue(visibility_timeout=10.0, clock=clock)
        await q.send("a", id="a")
        await q.receive()
        failing = [True]

        def sink(step: object) -> None:
            if failing[0]:
                failing[0] = False
                raise broken

        q.record_trace(sink)
        clock.advance(10.0)
        assert visible(q) == []
        errors = timer_errors(caplog)
        assert len(errors) == 1 and errors[0].exc_info is not None
        assert errors[0].exc_info[1] is broken
        assert q.health() == Health(True, 1, broken, False)
        clock.advance(FIRST_BACKOFF / 2)
        assert visible(q) == []
        clock.advance(FIRST_BACKOFF / 2)
        assert visible(q) == ["a"]
        q.close()

    asyncio.run(main())


def test_a_release_into_a_target_with_a_retention_arms_the_targets_timer_before_it_commits() -> (
    None
):
    """A dead-lettering ``retry`` starts a retention timer in the target: the target's loop
    timer is armed first, so a failing ``call_at`` vetoes the release (both queues as they
    were); retried, the message moves and ages out of the target with no other call."""

    async def main() -> None:
        clock = ArmingClock()
        dlq: AsyncQueue[str] = AsyncQueue(clock=clock, retention=100.0, name="dlq")
        src: AsyncQueue[str] = AsyncQueue(
            clock=clock, max_receives=1, dead_letter=dlq, name="src", visibility_timeout=None
        )
        await src.send("x", id="x")
        m = await src.receive()
        before = (src.snapshot(), dlq.snapshot())
        fault = InjectedFault("the target's call_at")
        clock.fail = fault
        with pytest.raises(InjectedFault) as raised:
            src.retry(m.receipt)
        assert raised.value is fault
        assert (src.snapshot(), dlq.snapshot()) == before
        assert src.retry(m.receipt) is True
        assert [d.id for d in dlq.snapshot().visible] == ["x"]
        clock.advance(100.0)  # its retention, from its first enqueue at 0
        assert dlq.snapshot().visible == () and dlq.aged_out() == ["x"]
        src.close()
        dlq.close()

    asyncio.run(main())


def test_a_timed_wait_whose_timer_cannot_be_armed_leaves_no_waiter_behind() -> None:
    """``receive(timeout=...)`` on an empty queue arms a timer for its end before it waits; if
    that fails, the call raises it and leaves no waiter behind: a later send wakes the receiver
    that does wait (a stale waiter first in line would swallow that wakeup)."""

    async def main() -> None:
        clock = ArmingClock()
        q: AsyncQueue[str] = AsyncQueue(clock=clock)
        fault = InjectedFault("the timeout's call_at")
        clock.fail = fault
        with pytest.raises(InjectedFault) as raised:
            await q.receive(timeout=5.0)
        assert raised.value is fault
        waiter = asyncio.create_task(q.receive(visibility_timeout=None))
        for _ in range(3):
            await asyncio.sleep(0)
        assert not waiter.done()
        await q.send("a", id="a")
        for _ in range(3):  # its wakeup is one loop iteration away
            await asyncio.sleep(0)
        assert waiter.done(), "the waiting receiver sleeps beside a"
        assert waiter.result().id == "a"
        q.close()

    asyncio.run(main())
