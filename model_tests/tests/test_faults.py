"""Fault injection: every transition of ``impl.Queue`` takes full effect or none (issue 13).

The promise (``docs/failure-model.md``): whatever raises inside a public method (the clock's
``now`` or ``wait``, the trace sink, the start of the sweeper thread; ``InjectedFault``,
``MemoryError``, ``KeyboardInterrupt``), the method either takes full effect, or raises that
very exception and leaves the queue exactly as it was: equal ``snapshot()``, ``stats()`` and
``dead_letters()``, no step traced, and the same call, retried without a fault, then succeeds
and agrees with ``spec.transitions`` applied to the state before. No waiter sleeps beside work
afterwards. The sweeper thread too: a fault in it is logged and reported by ``health()``, its
failed sweep changes nothing, and expiry resumes after the next arm, ``sweep()`` or
``health()``.

How (the framework is :mod:`model_tests.fault_matrix`, the injectors :mod:`model_tests.faults`;
this module holds the scenarios and the tests): each scenario is run once fault-free with the
injectors only counting the calls made by the thread under test, then once more for every
injection point and every k = 1 .. that count, on a fresh queue brought to the same state, with
the k-th call failing. The scenarios are

- one call of each state-changing method in the states that matter (``CASES``), with and
  without a trace sink, alone or beside a blocked receiver or a blocked sender (the bystander,
  who must be woken exactly when the retried call makes work for it);
- blocking ``receive``/``send`` (with and without a timeout, ending in work or in the timeout),
  also with a fault raised as the thread *wakes* from its wait, and a second blocked caller who
  must then get the work (the notify is passed on);
- the sweeper thread's start and its expiry round, with each way of resuming expiry;
- a failed thread start in ``receive``, ``change_visibility``, ``sweep`` and ``health``;
- short random prefixes (Hypothesis, derandomized) to reach varied states before the call.

Nothing sleeps: "the call is blocked" is read from the failing clock (a thread inside its
``wait`` holds the queue's lock until ``Condition.wait`` releases it), and a running sweeper is
settled (woken once and seen back in its wait) before the clock moves without waking anyone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Final, Literal, TypeAlias

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spec
from impl import (
    Entry,
    Health,
    Message,
    Queue,
)
from impl.sweeper import FIRST_BACKOFF
from model_tests.fault_matrix import (
    BLOCKING_POINTS,
    DEFAULT,
    OP_THREAD,
    OTHER_FAULTS,
    POINTS,
    Bystander,
    Injection,
    Op,
    Outcome,
    Point,
    Prepared,
    Raised,
    Returned,
    Setup,
    Vt,
    World,
    body,
    check_every_fault,
    end_bystander,
    model,
    outcome_of,
    prepare,
    result_of,
    serve_bystander,
    start_bystander,
)
from model_tests.faults import (
    FailingClock,
    FailingSink,
    InjectedFault,
    failing_thread_start,
    is_sweeper,
    wait_until,
)
from model_tests.support import BOUND, Call, ProbeClock

# =============================================================================================
# Every state-changing method, in the states that matter
# =============================================================================================


def send(id: str | None) -> Op:
    return Op("send", id=id)


def receive(vt: Vt = DEFAULT) -> Op:
    return Op("receive", vt=vt)


@dataclass(frozen=True)
class Case:
    """A call in a state: the configuration, the ops that lead there, the call, the bystander
    that state can have, and the injection points the call must reach."""

    name: str
    setup: Setup
    prefix: tuple[Op, ...]
    op: Op
    bystander: Bystander | None
    reaches: frozenset[Point]


def case(
    name: str,
    op: Op,
    *prefix: Op,
    bystander: Bystander | None = None,
    reaches: str = "",
    capacity: int | None = None,
    vt: float | None = 10.0,
    max_receives: int | None = None,
) -> Case:
    points = frozenset(p for p in POINTS if p in reaches.split())
    return Case(name, Setup(capacity, vt, max_receives), prefix, op, bystander, points)


A_RECEIVED: Final = (send("a"), receive())

CASES: Final = (
    case("send with an id", send("a"), bystander="receiver", reaches="sink", capacity=2),
    case("send without an id", send(None), bystander="receiver", reaches="sink"),
    case("send when full", send("b"), send("a"), bystander="sender", capacity=1),
    case("send of a taken id", send("a"), send("a"), capacity=3),
    case("receive starting the sweeper", receive(), send("a"), send("b"), reaches="now start"),
    case("receive, sweeper running", receive(), send("a"), send("b"), receive(), reaches="now"),
    case("receive, vt None", receive(None), send("a"), reaches="sink"),
    case("receive, given vt", receive(3.0), send("a"), send("b"), receive(), reaches="now"),
    case("receive with vt None, no sweeper", receive(None), send("a"), vt=None, reaches="sink"),
    case("receive when empty", receive(), bystander="receiver"),
    case("delete", Op("delete", "a"), *A_RECEIVED, bystander="sender", capacity=1),
    case(
        "delete, stale receipt",
        Op("delete", "a", stale=True),
        *A_RECEIVED,
        Op("retry", "a"),
        receive(),
        reaches="sink",
    ),
    case("retry", Op("retry", "a"), *A_RECEIVED, bystander="receiver", reaches="sink"),
    case(
        "retry, dead-letters",
        Op("retry", "a"),
        *A_RECEIVED,
        bystander="sender",
        capacity=1,
        max_receives=1,
    ),
    case("change_visibility 0", Op("change_visibility", "a"), *A_RECEIVED, bystander="receiver"),
    case(
        "change_visibility 0, dead-letters",
        Op("change_visibility", "a"),
        *A_RECEIVED,
        bystander="sender",
        capacity=1,
        max_receives=1,
    ),
    case(
        "change_visibility t > 0, sweeper running",
        Op("change_visibility", "a", t=4.0),
        *A_RECEIVED,
        bystander="receiver",
        reaches="now",
    ),
    case(
        "change_visibility t > 0 starting the sweeper",
        Op("change_visibility", "a", t=4.0),
        *A_RECEIVED,
        vt=None,
        reaches="now start",
    ),
    case(
        "change_visibility, stale receipt",
        Op("change_visibility", "a", t=4.0, stale=True),
        *A_RECEIVED,
        Op("retry", "a"),
        receive(),
    ),
    case(
        "cancel a visible message",
        Op("cancel", "b"),
        send("a"),
        send("b"),
        send("c"),
        bystander="sender",
        capacity=3,
    ),
    case(
        "cancel a message in flight", Op("cancel", "a"), *A_RECEIVED, bystander="sender", capacity=1
    ),
    case("cancel an unknown id", Op("cancel", "z"), send("a")),
    case(
        "sweep releasing two",
        Op("sweep", t=10.0),
        send("a"),
        send("b"),
        receive(),
        receive(),
        bystander="receiver",
        reaches="now sink",
    ),
    case(
        "sweep dead-lettering two",
        Op("sweep", t=10.0),
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
        "sweep, one due of two",
        Op("sweep", t=4.0),
        send("a"),
        send("b"),
        receive(),
        receive(3.0),
        receive(),
        reaches="now sink",
    ),
    case("sweep, nothing due", Op("sweep", t=1.0), *A_RECEIVED, reaches="now"),
    # -- issue 14: delays, batches, purge ----------------------------------------------------
    case(
        "send with a delay starting the sweeper",
        Op("send", "a", t=2.0),
        bystander="receiver",
        vt=None,
        reaches="now start sink",
    ),
    case(
        "send with a delay, sweeper running",
        Op("send", "b", t=2.0),
        Op("send", "a", t=1.0),
        reaches="now sink",
    ),
    case(
        "sweep firing a delay and a deadline",
        Op("sweep", t=10.0),
        Op("send", "b", t=5.0),
        *A_RECEIVED,
        bystander="receiver",
        reaches="now sink",
    ),
    case(
        "send_batch",
        Op("send_batch", ids=("a", "", "c")),
        bystander="receiver",
        capacity=3,
        reaches="sink",
    ),
    case(
        "send_batch with delays starting the sweeper",
        Op("send_batch", ids=("a", "b"), t=1.0),
        vt=None,
        reaches="now start sink",
    ),
    case(
        "send_batch when it does not fit",
        Op("send_batch", ids=("c", "d")),
        send("a"),
        send("b"),
        bystander="sender",
        capacity=2,
    ),
    case("send_batch of a taken id", Op("send_batch", ids=("b", "a")), send("a")),
    case(
        "receive_batch starting the sweeper",
        Op("receive_batch", n=2),
        send("a"),
        send("b"),
        send("c"),
        reaches="now start sink",
    ),
    case(
        "receive_batch, vt None",
        Op("receive_batch", vt=None, n=10),
        send("a"),
        send("b"),
        reaches="sink",
    ),
    case("receive_batch when empty", Op("receive_batch"), bystander="receiver"),
    case(
        "delete_batch",
        Op("delete_batch", ids=("a", "a", "b")),
        send("a"),
        send("b"),
        receive(),
        receive(),
        bystander="sender",
        capacity=2,
        reaches="sink",
    ),
    case(
        "delete_batch, stale receipts",
        Op("delete_batch", ids=("a",), stale=True),
        *A_RECEIVED,
        reaches="sink",
    ),
    case(
        "change_visibility_batch releasing",
        Op("change_visibility_batch", ids=("a", "b", "a")),
        send("a"),
        send("b"),
        receive(),
        receive(),
        bystander="receiver",
        reaches="sink",
    ),
    case(
        "change_visibility_batch releasing, dead-letters",
        Op("change_visibility_batch", ids=("a",)),
        *A_RECEIVED,
        bystander="sender",
        capacity=1,
        max_receives=1,
        reaches="sink",
    ),
    case(
        "change_visibility_batch t > 0 starting the sweeper",
        Op("change_visibility_batch", ids=("a", "b"), t=4.0),
        send("a"),
        send("b"),
        receive(),
        receive(),
        vt=None,
        reaches="now start sink",
    ),
    case(
        "purge of every state",
        Op("purge"),
        Op("send", "d", t=3.0),
        *A_RECEIVED,
        send("b"),
        bystander="sender",
        capacity=3,
        reaches="sink",
    ),
    case("purge of nothing", Op("purge"), bystander="receiver", reaches="sink"),
)


def _ids(cases: tuple[Case, ...]) -> list[str]:
    return [c.name for c in cases]


#: Each case alone, and beside the blocked caller its state can have.
PLACED: Final = [
    pytest.param(c, by, id=f"{c.name}-{by or 'alone'}")
    for c in CASES
    for by in dict.fromkeys((None, c.bystander))
]


@pytest.mark.parametrize("traced", [True, False], ids=["traced", "untraced"])
@pytest.mark.parametrize(("c", "bystander"), PLACED)
def test_a_call_takes_full_effect_or_none_at_every_fault(
    c: Case, bystander: Bystander | None, traced: bool
) -> None:
    setup = Setup(c.setup.capacity, c.setup.vt, c.setup.max_receives, traced)
    counts = check_every_fault(setup, c.prefix, c.op, bystander)
    reaches = c.reaches if traced else c.reaches - {"sink"}
    missed = {p for p in reaches if counts[p] == 0}
    assert not missed, f"{c.name}: never reached {missed} ({counts})"


@pytest.mark.parametrize("fault", OTHER_FAULTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("c", CASES, ids=_ids(CASES))
def test_memory_errors_and_interrupts_are_faults_like_any_other(
    c: Case, fault: type[BaseException]
) -> None:
    check_every_fault(c.setup, c.prefix, c.op, c.bystander, fault=fault)


# =============================================================================================
# Random prefixes
# =============================================================================================

IDS: Final = ("a", "b", "c")


def ops(*, target: bool) -> st.SearchStrategy[Op]:
    """Operations on a few ids; a target may also be a send with a generated id."""
    ids = st.sampled_from(IDS)
    # None: the first message in flight (see prepare).
    some = st.sampled_from((None, None, *IDS))
    choices: list[st.SearchStrategy[Op]] = [
        st.builds(send, ids),
        st.builds(receive, st.sampled_from([DEFAULT, None, 5.0])),
        st.builds(lambda i, s: Op("delete", i, stale=s), some, st.booleans()),
        st.builds(lambda i: Op("retry", i), some),
        st.builds(lambda i, t: Op("change_visibility", i, t=t), some, st.sampled_from([0.0, 7.0])),
        st.builds(lambda i: Op("cancel", i), some),
        st.builds(lambda t: Op("sweep", t=t), st.sampled_from([0.0, 5.0, 10.0])),
    ]
    if target:
        choices.append(st.just(send(None)))
    return st.one_of(choices)


setups = st.builds(
    Setup,
    capacity=st.sampled_from([None, 2, 3]),
    vt=st.sampled_from([10.0, 5.0, None]),
    max_receives=st.sampled_from([None, 1, 2]),
    traced=st.booleans(),
)


@settings(
    max_examples=400,
    deadline=None,
    database=None,
    derandomize=True,  # the same states every run: a failure is a bug, not bad luck
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    setups,
    st.lists(st.sampled_from(IDS), min_size=1, max_size=3, unique=True),
    st.lists(st.sampled_from([DEFAULT, None, 5.0]), max_size=2),
    st.lists(ops(target=False), max_size=4),
    ops(target=True),
    st.booleans(),
)
def test_faults_after_random_prefixes(
    setup: Setup, sent: list[str], vts: list[Vt], prefix: list[Op], op: Op, with_bystander: bool
) -> None:
    """A few sends and receives, then a few random operations, then the call under test."""
    ops = (*(send(id) for id in sent), *(receive(vt) for vt in vts), *prefix)
    check_every_fault(setup, ops, op, "auto" if with_bystander else None)


# =============================================================================================
# Blocking calls: faults before, during and after the wait
# =============================================================================================

Kind: TypeAlias = Literal["receive", "send", "receive_batch", "send_batch"]
Ending: TypeAlias = Literal["work", "timeout"]


def blocking_exercise(
    kind: Kind,
    timeout: float | None,
    ending: Ending,
    with_bystander: bool,
    fault: Injection | None,
) -> dict[Point, int]:
    """A receive on an empty queue (or a send on a full one) blocks; then a message is sent (a
    slot freed), or the clock runs out its timeout. With a fault at any point of the blocked
    call: it raises that fault and changes nothing; the work goes to the second blocked caller
    (a bystander) if there is one (the failed waiter must not swallow the notify), else the
    retried call gets it.

    The batches (issue 14): a receive_batch blocks as a receive does; a send_batch of two
    blocks on a queue full with two deliveries, and one delete_batch frees both slots."""
    receiving = kind in ("receive", "receive_batch")
    setup = (
        Setup(capacity=None, vt=10.0)
        if receiving
        else Setup(capacity=1 if kind == "send" else 2, vt=None)
    )
    op = {
        "receive": receive(),
        "send": send("y"),
        "receive_batch": Op("receive_batch", n=2),
        "send_batch": Op("send_batch", ids=("y", "w")),
    }[kind]
    by_kind: Bystander = "receiver" if receiving else "sender"
    with failing_thread_start(None) as starts:
        w = World(setup, starts)
        q = w.q
        calls: list[Call[object]] = []
        try:
            held: list[Message[str]] = []
            if not receiving:
                q.send_batch([Entry("x", id="x"), Entry("z", id="z")][: setup.capacity])
                held = q.receive_batch(2, block=False)
            s = w.state()
            w.arm(fault, OP_THREAD)
            fn: Callable[[], object]
            if kind == "receive":
                fn = partial(q.receive, timeout=timeout)
            elif kind == "receive_batch":
                fn = partial(q.receive_batch, 2, timeout=timeout)
            elif kind == "send":
                fn = partial(q.send, body(op), id="y", timeout=timeout)
            else:
                entries = [Entry(body(op, id), id=id) for id in op.ids]
                fn = partial(q.send_batch, entries, timeout=timeout)
            call = Call(fn, OP_THREAD)
            w.blocked(call)
            by = None
            if with_bystander:
                by = start_bystander(w, by_kind)
                calls.append(by)
            now = w.clock.inner.now()
            if ending == "work":
                if not held:
                    q.send("m", id="m")
                    s = spec.send(s, "m", "m")[0]
                else:
                    assert all(q.delete_batch([m.receipt for m in held]))
                    done = [spec.Receipt(0, m.id, m.attempt) for m in held]
                    s = spec.delete_batch(s, done)[0]
            else:
                assert timeout is not None
                w.advance(timeout, wake=True)
                now += timeout
            outcome = outcome_of(call.result)
            counts = w.counts()
            where = f"blocking {kind} ({ending}) with {fault}"
            fired = w.fired()
            if fault is not None:
                assert fired is not None, f"{where}: the fault was never reached"
                assert isinstance(outcome, Raised) and outcome.error is fired, (
                    f"{where}: {fired!r} was raised inside, the caller got {outcome}"
                )
            else:
                assert fired is None
                s, expected = model(s, Prepared(op, fn, 0, now), outcome, setup)
                assert result_of(op, outcome) == expected, where
            if by is not None:
                s = serve_bystander(w, by, by_kind, s, now, where)
            w.check(s)
            if fault is not None:
                w.disarm()
                retry = prepare(w, op)
                outcome = outcome_of(retry.run)
                s, expected = model(s, retry, outcome, setup)
                assert result_of(op, outcome) == expected, f"{where}: retried"
                w.check(s)
            health = q.health()
            assert health.sweeper_failures == 0 and not health.expiry_stalled, (where, health)
        finally:
            q.close()
        call.thread.join(BOUND)
        for c in calls:
            end_bystander(c)
    return counts


#: The blocked calls, and whether a bystander (a single receive or send) may stand beside
#: it. Not beside a send_batch: the freed slots go to whichever sender runs first, and a
#: single sender that takes one leaves the batch blocked for good (both are correct).
BLOCKED: Final = [
    pytest.param(kind, by, id=f"{kind}-{'bystander' if by else 'alone'}")
    for kind in ("receive", "send", "receive_batch", "send_batch")
    for by in (False, True)
    if not (kind == "send_batch" and by)
]


@pytest.mark.parametrize(
    ("timeout", "ending"),
    [(None, "work"), (5.0, "work"), (5.0, "timeout")],
    ids=["no-timeout", "timeout-work", "timeout-runs-out"],
)
@pytest.mark.parametrize(("kind", "with_bystander"), BLOCKED)
def test_a_blocked_call_takes_full_effect_or_none_and_passes_its_wakeup_on(
    kind: Kind, timeout: float | None, ending: Ending, with_bystander: bool
) -> None:
    counts = blocking_exercise(kind, timeout, ending, with_bystander, None)
    assert counts["wait"] >= 1
    for point in BLOCKING_POINTS:
        for k in range(1, counts[point] + 1):
            blocking_exercise(kind, timeout, ending, with_bystander, (point, k, None))
    if kind == "send_batch":
        return
    for k in range(1, counts["wait"] + 1):
        blocking_exercise(kind, timeout, ending, True, ("wait-after", k, KeyboardInterrupt))


# =============================================================================================
# The sweeper thread: a fault in it is reported, changes nothing, and expiry resumes
# =============================================================================================

Phase: TypeAlias = Literal["start", "expiry"]
Resume: TypeAlias = Literal["arm", "sweep", "health"]
SWEEPER_POINTS: Final[tuple[Point, ...]] = ("now", "wait", "sink")


def sweeper_errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "impl.queue" and r.levelno >= logging.ERROR]


def expire_rest(w: World, calls: list[Call[object]]) -> None:
    """Every deadline still armed expires through the sweeper thread alone (the clock moves,
    nobody else sweeps), and a blocked receiver gets the redelivery: expiry works."""
    q = w.q
    while True:
        for _ in w.state().visible:
            q.receive(block=False, visibility_timeout=None)
        s = w.state()
        deadlines = [m.deadline for m in s.messages if m.deadline is not None]
        if not deadlines:
            return
        due = min(deadlines)
        fn: Callable[[], object] = partial(q.receive, visibility_timeout=None)
        receiver = Call(fn, "receiver")
        calls.append(receiver)
        assert w.blocked(receiver), f"nothing visible, yet the receive returned {receiver.result()}"
        w.advance(due - w.clock.inner.now(), wake=True)
        s, d = spec.receive(spec.expire(s, due)[0], due, None)
        assert d is not None
        m = receiver.result()
        assert isinstance(m, Message) and (m.id, m.attempt) == (d.id, d.attempt)
        w.check(s)


def survives(point: Point, fired: BaseException) -> bool:
    """Whether the sweeper thread outlives a fault: a failed round (its clock read or its trace
    sink raising an ``Exception``) is retried after a backoff; a failing wait, or a
    ``BaseException`` such as ``KeyboardInterrupt``, ends the thread."""
    return point != "wait" and isinstance(fired, Exception)


def sweeper_exercise(
    phase: Phase, resume: Resume, fault: Injection | None, caplog: pytest.LogCaptureFixture
) -> dict[Point, int]:
    """A fault in the sweeper thread, on its first round (``start``: the receive that armed
    ``a`` started it) or on the round that expires ``a`` and ``c`` (``expiry``).

    Then: the fault is logged at ERROR on ``impl.queue`` with its traceback, and the failed
    sweep changed nothing (a blocked receiver is still asleep). A failed round (see
    :func:`survives`) leaves the same thread running, counted by ``health()``: once the
    queue's clock passes the backoff it sweeps again by itself, and the blocked receiver gets
    ``a``, with no other call. A dead sweeper: a restart whose thread cannot start changes
    nothing (``health()`` then says expiry is stalled), and after ``resume`` (an arm,
    ``sweep()`` or ``health()``) the blocked receiver gets ``a`` again. Either way every
    deadline left expires through the sweeper.
    """
    caplog.clear()
    setup = Setup(capacity=None, vt=10.0)
    with failing_thread_start(None) as starts:
        w = World(setup, starts)
        q = w.q
        calls: list[Call[object]] = []
        by: Call[object] | None = None
        try:
            if phase == "start":
                q.send("d", id="d")
                q.send("a", id="a")
                d = q.receive(visibility_timeout=None)  # in flight, no deadline, no sweeper
                w.arm(fault, is_sweeper)
                begun = w.clock.waits_begun(is_sweeper)
                q.receive()  # a, deadline 10: starts the sweeper, whose first round may fail
            else:
                q.send("a", id="a")
                q.send("c", id="c")
                q.send("d", id="d")
                q.receive()
                q.receive()
                d = q.receive(visibility_timeout=50.0)
                w.settle()
                by = start_bystander(w, "receiver")
                calls.append(by)
                w.arm(fault, is_sweeper)
                begun = w.clock.waits_begun(is_sweeper)
            before = w.observe()
            s = w.state()
            if phase == "expiry":
                w.advance(10.0, wake=True)  # a and c are due: the sweeper wakes to expire them
            assert wait_until(
                lambda: w.fired() is not None or w.clock.waits_begun(is_sweeper) > begun
            ), "the sweeper neither failed nor went back to waiting"
            counts = w.counts()
            swept = phase == "expiry" and (fault is None or fault[0] == "wait")
            if swept:
                # The round committed (a fault on its wait comes after): the receiver got a.
                assert by is not None
                s = serve_bystander(w, by, "receiver", spec.expire(s, 10.0)[0], 10.0)
            if fault is None:
                assert not sweeper_errors(caplog)
                w.check(s)
            else:
                fired = w.fired()
                thread = w.fired_in()
                assert fired is not None and thread is not None and is_sweeper(thread)
                alive = survives(fault[0], fired)
                if alive:
                    # Back to waiting, for its backoff: the same thread, not a restart.
                    assert wait_until(lambda: w.clock.waits_begun(is_sweeper) > begun), (
                        "the sweeper did not go back to waiting after its failed round"
                    )
                    assert thread.is_alive()
                else:
                    thread.join(BOUND)
                    assert not thread.is_alive()
                errors = sweeper_errors(caplog)
                assert len(errors) == 1, errors
                assert errors[0].levelno == logging.ERROR and errors[0].exc_info is not None
                assert errors[0].exc_info[1] is fired
                if not swept:
                    assert w.observe() == before, "the failed sweep changed the queue"
                    if by is not None:
                        assert w.blocked(by)
                w.check(s)
                if alive:
                    health = q.health()
                    assert health.sweeper_running and not health.expiry_stalled, health
                    assert (health.sweeper_failures, health.last_error) == (1, fired), health
                    # Expiry resumes by itself once the queue's clock passes the backoff.
                    w.advance(FIRST_BACKOFF, wake=True)
                    if by is not None:
                        now = w.clock.inner.now()
                        s = serve_bystander(w, by, "receiver", spec.expire(s, now)[0], now)
                else:
                    s = resume_expiry(w, resume, d, s)
                    if by is not None and not swept:
                        s = serve_bystander(w, by, "receiver", spec.expire(s, 10.0)[0], 10.0)
                w.check(s)
                health = q.health()
                assert health.sweeper_running and not health.expiry_stalled, health
                assert health.sweeper_failures == 1, health
                if resume != "health" or alive:
                    assert health.last_error is fired, health
            expire_rest(w, calls)
        finally:
            q.close()
        for c in calls:
            c.thread.join(BOUND)
    return counts


def resume_expiry(w: World, resume: Resume, d: Message[str], s: spec.State) -> spec.State:
    """After the sweeper died with deadlines armed: ``resume`` tried while no thread can start
    changes nothing (``change_visibility`` and ``sweep()`` raise the start's error, ``health()``
    reports it and the stall), then ``resume`` restarts the sweeper. The state after it."""
    q = w.q
    now = w.clock.inner.now()
    assert any(m.deadline is not None for m in s.messages), "nothing armed to resume"

    def attempt() -> Outcome:
        if resume == "arm":
            return outcome_of(partial(q.change_visibility, d.receipt, 50.0 - now))
        return outcome_of(q.sweep if resume == "sweep" else q.health)

    before = w.observe()
    with failing_thread_start(1) as again:
        failed = attempt()
    assert again.fired is not None, f"{resume} did not try to restart the sweeper"
    assert w.observe() == before, f"{resume} changed the queue although its restart failed"
    if resume == "health":
        assert isinstance(failed, Returned), failed
        assert failed.value == Health(
            sweeper_running=False, sweeper_failures=1, last_error=again.fired, expiry_stalled=True
        )
    else:
        assert isinstance(failed, Raised) and failed.error is again.fired, failed
    w.check(s)
    done = attempt()
    assert isinstance(done, Returned), done
    if resume == "arm":
        assert done.value is True
        receipt = spec.Receipt(0, d.id, d.attempt)
        return spec.change_visibility(s, receipt, 50.0 - now, now)[0]
    if resume == "sweep":
        return spec.expire(s, now)[0]
    assert isinstance(done.value, Health)
    assert done.value.sweeper_running and not done.value.expiry_stalled, done.value
    return s


@pytest.mark.parametrize(
    ("phase", "point"),
    [("start", "now"), ("expiry", "now"), ("expiry", "sink")],
)
def test_a_failed_sweep_is_reported_changes_nothing_and_expiry_resumes_by_itself(
    phase: Phase, point: Point, caplog: pytest.LogCaptureFixture
) -> None:
    """Every failure point of a round (its clock read, its trace sink), at every call: the
    sweeper survives, and expiry resumes with no other call (the resume is not used)."""
    caplog.set_level(logging.ERROR, logger="impl.queue")
    counts = sweeper_exercise(phase, "health", None, caplog)
    assert counts[point] >= 1, counts
    for k in range(1, counts[point] + 1):
        sweeper_exercise(phase, "health", (point, k, None), caplog)


@pytest.mark.parametrize("resume", ["arm", "sweep", "health"])
@pytest.mark.parametrize("phase", ["start", "expiry"])
def test_a_sweeper_whose_wait_fails_dies_is_reported_and_expiry_resumes(
    phase: Phase, resume: Resume, caplog: pytest.LogCaptureFixture
) -> None:
    """A failing clock wait ends the thread (it cannot wait without it): reported, and the
    next arm, ``sweep()`` or ``health()`` starts another."""
    caplog.set_level(logging.ERROR, logger="impl.queue")
    counts = sweeper_exercise(phase, resume, None, caplog)
    assert counts["wait"] >= 1, counts
    for k in range(1, counts["wait"] + 1):
        sweeper_exercise(phase, resume, ("wait", k, None), caplog)


@pytest.mark.parametrize("fault", OTHER_FAULTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("point", SWEEPER_POINTS)
def test_a_sweeper_hit_by_memory_error_or_interrupt_is_reported_too(
    point: Point, fault: type[BaseException], caplog: pytest.LogCaptureFixture
) -> None:
    """A ``MemoryError`` in a round is a failed round like any other (retried); an interrupt
    (a ``BaseException``) ends the thread, which the next ``health()`` restarts."""
    caplog.set_level(logging.ERROR, logger="impl.queue")
    counts = sweeper_exercise("expiry", "health", None, caplog)
    for k in range(1, counts[point] + 1):
        sweeper_exercise("expiry", "health", (point, k, fault), caplog)


# =============================================================================================
# A sweeper thread that cannot start
# =============================================================================================


@pytest.mark.parametrize("repeat", [False, True], ids=["once", "every-time"])
@pytest.mark.parametrize("needs", ["receive", "change_visibility"])
def test_a_call_whose_sweeper_cannot_start_changes_nothing_and_close_works(
    needs: str, repeat: bool
) -> None:
    clock = ProbeClock()
    vt = 10.0 if needs == "receive" else None
    q = Queue[str](visibility_timeout=vt, clock=clock)
    try:
        q.send("a", id="a")
        held = None if needs == "receive" else q.receive(block=False)
        before = (q.snapshot(), q.stats(), q.dead_letters())
        with failing_thread_start(1, repeat=repeat) as starts:
            for _ in range(3 if repeat else 1):
                with pytest.raises(RuntimeError, match="can't start new thread") as info:
                    if held is None:
                        q.receive(block=False)
                    else:
                        q.change_visibility(held.receipt, 5.0)
                assert info.value is starts.fired
                assert (q.snapshot(), q.stats(), q.dead_letters()) == before
                health = q.health()
                assert not health.sweeper_running and not health.expiry_stalled, health
                assert health.sweeper_failures == 0, health
        # With threads back, the same call starts a sweeper, and expiry works through it.
        if held is None:
            m = q.receive(block=False)
            assert (m.id, m.attempt) == ("a", 1)
        else:
            assert q.change_visibility(held.receipt, 5.0)
        health = q.health()
        assert health.sweeper_running and not health.expiry_stalled, health
        receiver = Call(partial(q.receive, visibility_timeout=None), "receiver")
        assert clock.wait_for_thread(receiver.thread)
        clock.advance(10.0)
        m = receiver.result()
        assert (m.id, m.attempt) == ("a", 2)
    finally:
        q.close()


def test_close_and_with_exit_work_after_a_failed_start() -> None:
    """No join of a thread that never started: ``close()`` returns, and leaving ``with``
    propagates the start's own error (not "cannot join thread before it is started")."""
    q = Queue[str](visibility_timeout=10.0, clock=ProbeClock())
    q.send("a", id="a")
    with failing_thread_start(1) as starts, pytest.raises(RuntimeError):
        q.receive(block=False)
    assert starts.fired is not None
    q.close()
    q.close()
    assert q.health().sweeper_running is False
    with failing_thread_start(1) as starts, pytest.raises(RuntimeError) as info:  # noqa: SIM117
        with Queue[str](visibility_timeout=10.0, clock=ProbeClock()) as q2:
            q2.send("a", id="a")
            q2.receive(block=False)
    assert info.value is starts.fired
    assert q2.snapshot().visible[0].id == "a"


# =============================================================================================
# The injectors themselves
# =============================================================================================


def test_the_failing_clock_fails_once_on_the_kth_matching_call() -> None:
    clock = FailingClock()
    clock.fail_on(2, "now")
    assert clock.now() == 0.0
    cond = threading.Condition()
    with cond:
        clock.wait(cond, 0.0)  # due already: returns at once, and is not a "now" call
    with pytest.raises(InjectedFault) as info:
        clock.now()
    assert clock.fired is info.value
    assert clock.now() == 0.0  # once: it behaves afterwards
    assert (clock.now_calls, clock.wait_calls, clock.calls) == (3, 1, 4)
    assert clock.trigger.counts == {"now": 3, "wait": 1}
    clock.fail_on(1, "any", KeyboardInterrupt, thread="someone else")
    assert clock.now() == 0.0  # another thread's fault
    clock.advance(1.5)
    assert clock.now() == 1.5


def test_the_failing_sink_records_steps_and_fails_on_the_kth_call() -> None:
    sink = FailingSink()
    sink.fail_on(2, MemoryError, action=None)
    sink(("send", ("a",), True, 0.0))
    with pytest.raises(MemoryError):
        sink(("send", ("b",), True, 0.0))
    sink(("send", ("c",), True, 0.0))
    assert [s[1] for s in sink.steps] == [("a",), ("c",)]
    assert sink.calls == 3


def test_failing_thread_start_fails_only_sweepers_and_restores_start() -> None:
    original = threading.Thread.start
    with failing_thread_start(1) as starts:
        other = threading.Thread(target=lambda: None, name="sweeper-not")
        other.start()
        other.join()
        t = threading.Thread(target=lambda: None, name="x-sweeper")
        with pytest.raises(RuntimeError, match="can't start new thread"):
            t.start()
        t2 = threading.Thread(target=lambda: None, name="y-sweeper")
        t2.start()  # once only
        t2.join()
        assert starts.started == [t2]
    assert threading.Thread.start is original
