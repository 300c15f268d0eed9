"""Fault injection on the asyncio shell: every call of ``impl.AsyncQueue``, and the loop
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

from typing import Final

import pytest

from model_tests.fault_matrix import (
    OTHER_FAULTS,
    TIMER,
    AioPoint,
    Bystander,
    Op,
    Setup,
    check_every_fault_aio,
)
from model_tests.tests.test_faults import A_RECEIVED, CASES, Case, case, receive, send

#: The threaded points a call reaches that the async shell has too ("start", a sweeper
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
