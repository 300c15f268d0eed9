"""The invariant checks can fail: each one, given a hand-built broken state, names itself.

A check that never fails proves nothing. Every case below builds a state (or a step) that breaks
exactly the named invariant of the contract, and asserts that its function reports a reason that
starts with that name, that :func:`spec.violations` / :func:`spec.step_violations` pass the
reason on, and that the same function accepts the nearest good state. ``BatchAtomic`` is a
property of a batch step and its arguments: each batch transition, broken one way, is caught.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

# tests/ has no __init__.py: pytest puts it on sys.path for its test files, and mypy checks its
# files as top-level modules, so the shared test doubles are the module broken_spec.
import broken_spec as broken
import pytest

from spec import (
    INVARIANTS,
    STEP_INVARIANTS,
    Config,
    Msg,
    Receipt,
    State,
    Status,
    attempts_count,
    capacity_bound,
    fifo_visible,
    ids_reserved,
    one_live_receipt,
    one_state,
    step_violations,
    transitions,
    violations,
)
from spec.invariants import (
    BATCH_OPERATIONS,
    attempts_count_step,
    batch_atomic,
    delay_honoured,
    delay_honoured_step,
    fifo_visible_step,
    ids_reserved_step,
    one_by_one,
    one_state_step,
)

V, F, DONE, C, DEAD, DL = (
    Status.VISIBLE,
    Status.IN_FLIGHT,
    Status.DONE,
    Status.CANCELLED,
    Status.DEAD,
    Status.DELAYED,
)


def msg(
    id: str,
    status: Status = V,
    attempt: int = 0,
    deadline: float | None = None,
    visible_at: float | None = None,
) -> Msg:
    return Msg(
        id=id,
        body=id.upper(),
        status=status,
        attempt=attempt,
        deadline=deadline,
        visible_at=visible_at,
    )


def state(*msgs: Msg, capacity: int | None = None, max_receives: int | None = None) -> State:
    """A consistent state holding ``msgs``: the ordered views are filled in argument order."""
    return State(
        config=Config(capacity=capacity, max_receives=max_receives),
        messages=tuple(sorted(msgs, key=lambda m: m.id)),
        visible=tuple(m.id for m in msgs if m.status is V),
        in_flight=tuple(m.id for m in msgs if m.status is F),
        dead=tuple(m.id for m in msgs if m.status is DEAD),
        delayed=tuple(m.id for m in msgs if m.status is DL),
        timers=tuple(m.id for m in msgs if m.status in (DL, F)),
    )


GOOD = state(
    msg("a"),
    msg("b", F, 1, 5.0),
    msg("c", DONE, 1),
    msg("d", C),
    msg("e", DEAD, 2),
    msg("f", V, 1),
    msg("g", DL, 0, None, 4.0),
    capacity=4,
    max_receives=2,
)


def test_the_good_state_is_good() -> None:
    assert violations(GOOD) == []
    assert step_violations(GOOD, GOOD) == []


StateCheck = Callable[[State], str | None]

STATE_CASES: list[tuple[str, StateCheck, State]] = [
    # OneState
    ("OneState", one_state, replace(GOOD, in_flight=())),  # b in flight but not listed
    ("OneState", one_state, replace(GOOD, visible=("a", "f", "b"))),  # b listed twice
    ("OneState", one_state, replace(GOOD, visible=("a", "a", "f"))),
    ("OneState", one_state, replace(GOOD, dead=())),
    ("OneState", one_state, replace(GOOD, messages=GOOD.messages[::-1])),  # not canonical
    ("OneState", one_state, replace(GOOD, messages=(*GOOD.messages, msg("a", DONE, 1)))),
    ("OneState", one_state, state(msg("a", V, 1, 3.0))),  # visible, yet with a deadline
    ("OneState", one_state, state(msg("a", DONE, 1, 3.0))),
    ("OneState", one_state, replace(GOOD, delayed=())),  # g delayed but not listed
    ("OneState", one_state, replace(GOOD, delayed=("g", "g"))),
    ("OneState", one_state, replace(GOOD, timers=("b",))),  # g's timer is missing
    ("OneState", one_state, replace(GOOD, timers=("b", "g", "a"))),  # a has no timer
    ("OneState", one_state, replace(GOOD, timers=("b", "g", "b"))),
    (  # timers and in_flight disagree on the order of the deliveries
        "OneState",
        one_state,
        replace(state(msg("a", F, 1, 2.0), msg("b", F, 1, 2.0)), timers=("b", "a")),
    ),
    (  # timers and delayed disagree on the order of the delayed sends
        "OneState",
        one_state,
        replace(state(msg("a", DL, 0, None, 1.0), msg("b", DL, 0, None, 1.0)), timers=("b", "a")),
    ),
    # CapacityBound: 5 active with capacity 4; a delayed message counts
    ("CapacityBound", capacity_bound, state(*GOOD.messages, msg("h"), capacity=4)),
    ("CapacityBound", capacity_bound, state(msg("a"), capacity=0)),
    ("CapacityBound", capacity_bound, state(msg("a", DL, 0, None, 1.0), capacity=0)),
    # OneLiveReceipt: an in-flight message whose live receipt would be attempt 0
    ("OneLiveReceipt", one_live_receipt, state(msg("a", F, 0, 1.0))),
    # AttemptsCount
    ("AttemptsCount", attempts_count, state(msg("a", V, -1))),
    ("AttemptsCount", attempts_count, state(msg("a", F, 0))),
    ("AttemptsCount", attempts_count, state(msg("a", DEAD, 0))),
    ("AttemptsCount", attempts_count, state(msg("a", F, 3), max_receives=2)),
    ("AttemptsCount", attempts_count, state(msg("a", DEAD, 1), max_receives=2)),
    ("AttemptsCount", attempts_count, state(msg("a", DL, 1, None, 1.0))),  # delayed only at send
    # FifoVisible
    ("FifoVisible", fifo_visible, replace(GOOD, visible=("a", "f", "a"))),
    ("FifoVisible", fifo_visible, replace(GOOD, visible=("a", "f", "c"))),  # c is DONE
    ("FifoVisible", fifo_visible, replace(GOOD, visible=("a", "f", "zz"))),  # never accepted
    # IdsReserved
    ("IdsReserved", ids_reserved, replace(GOOD, messages=(*GOOD.messages, msg("c", V)))),
    # DelayHonoured: a delayed message without a visible_at; a visible_at left behind
    ("DelayHonoured", delay_honoured, state(msg("a", DL))),
    ("DelayHonoured", delay_honoured, state(msg("a", V, 0, None, 1.0))),
    ("DelayHonoured", delay_honoured, state(msg("a", F, 1, 2.0, 1.0))),
    ("DelayHonoured", delay_honoured, state(msg("a", C, 0, None, 1.0))),
]


@pytest.mark.parametrize(("name", "check", "bad"), STATE_CASES)
def test_each_state_invariant_detects_a_broken_state(
    name: str, check: StateCheck, bad: State
) -> None:
    assert INVARIANTS[name] is check
    assert check(GOOD) is None
    reason = check(bad)
    assert reason is not None and reason.startswith(f"{name}: ")
    assert reason in violations(bad)


StepCheck = Callable[[State, State], str | None]

# Each pair is (before, after) of an impossible step.
STEP_CASES: list[tuple[str, StepCheck, State, State]] = [
    # OneState: a terminal message comes back, or changes in place.
    ("OneState", one_state_step, state(msg("a", DONE, 1)), state(msg("a", V, 1))),
    ("OneState", one_state_step, state(msg("a", DEAD, 1)), state(msg("a", DEAD, 2))),
    ("OneState", one_state_step, state(msg("a", C)), state()),
    # AttemptsCount: a delivery that skips an attempt, a release that resets or bumps it.
    ("AttemptsCount", attempts_count_step, state(msg("a")), state(msg("a", F, 2, 1.0))),
    ("AttemptsCount", attempts_count_step, state(msg("a", F, 1)), state(msg("a", V, 0))),
    ("AttemptsCount", attempts_count_step, state(msg("a", F, 1)), state(msg("a", V, 2))),
    ("AttemptsCount", attempts_count_step, state(msg("a", F, 1)), state(msg("a", F, 2))),
    ("AttemptsCount", attempts_count_step, state(), state(msg("a", V, 1))),
    # FifoVisible: a release back to the head; survivors reordered.
    (
        "FifoVisible",
        fifo_visible_step,
        state(msg("a", F, 1), msg("b")),
        state(msg("a", V, 1), msg("b")),  # visible (a, b): a jumped ahead of b
    ),
    ("FifoVisible", fifo_visible_step, state(msg("a"), msg("b")), state(msg("b"), msg("a"))),
    (
        "FifoVisible",
        fifo_visible_step,
        state(msg("a"), msg("b"), msg("c")),
        state(msg("a"), msg("c"), msg("b")),
    ),
    # DelayHonoured: delivered, done or dead-lettered while delayed; delayed again after it was
    # visible; its visible_at moved.
    (
        "DelayHonoured",
        delay_honoured_step,
        state(msg("a", DL, 0, None, 1.0)),
        state(msg("a", F, 1, 2.0)),
    ),
    (
        "DelayHonoured",
        delay_honoured_step,
        state(msg("a", DL, 0, None, 1.0)),
        state(msg("a", DONE)),
    ),
    (
        "DelayHonoured",
        delay_honoured_step,
        state(msg("a", DL, 0, None, 1.0)),
        state(msg("a", DEAD)),
    ),
    ("DelayHonoured", delay_honoured_step, state(msg("a")), state(msg("a", DL, 0, None, 1.0))),
    (
        "DelayHonoured",
        delay_honoured_step,
        state(msg("a", DL, 0, None, 1.0)),
        state(msg("a", DL, 0, None, 2.0)),
    ),
    # IdsReserved: an id forgotten; an id accepted again with a new body.
    ("IdsReserved", ids_reserved_step, state(msg("a", DONE, 1)), state()),
    (
        "IdsReserved",
        ids_reserved_step,
        state(msg("a")),
        state(replace(msg("a"), body="another body")),
    ),
]


@pytest.mark.parametrize(("name", "check", "before", "after"), STEP_CASES)
def test_each_step_invariant_detects_a_broken_step(
    name: str, check: StepCheck, before: State, after: State
) -> None:
    assert STEP_INVARIANTS[name] is check
    assert check(before, before) is None, "doing nothing is always a good step"
    reason = check(before, after)
    assert reason is not None and reason.startswith(f"{name}: ")
    assert reason in step_violations(before, after)


def test_good_steps_pass_every_step_invariant() -> None:
    """The real shapes of each transition, built by hand, are accepted."""
    steps = [
        (state(msg("a")), state(msg("a"), msg("b"))),  # send
        (state(msg("a"), msg("b")), state(msg("a", F, 1, 3.0), msg("b"))),  # receive
        (state(msg("a", F, 1), msg("b")), state(msg("b"), msg("a", V, 1))),  # release to tail
        (state(msg("a", F, 2)), state(msg("a", DEAD, 2))),  # dead-letter
        (state(msg("a"), msg("b"), msg("c")), state(msg("a"), msg("b", C), msg("c"))),  # cancel
        (state(msg("a", F, 1, 1.0)), state(msg("a", F, 1, 9.0))),  # change_visibility
        (state(msg("a")), state(msg("a"), msg("b", DL, 0, None, 2.0))),  # delayed send
        (state(msg("a"), msg("b", DL, 0, None, 2.0)), state(msg("a"), msg("b"))),  # delay fires
        (state(msg("b", DL, 0, None, 2.0)), state(msg("b", C))),  # cancel or purge while delayed
        (state(), state(msg("a"), msg("b", DL, 0, None, 2.0))),  # send_batch
    ]
    for before, after in steps:
        assert step_violations(before, after, now=2.0) == [], (before, after)


def test_a_delay_fires_no_earlier_than_its_visible_at() -> None:
    """``DelayHonoured``'s step half knows the step's time when it is given: a delayed message
    becoming visible before its ``visible_at`` is a violation, at or after it is not."""
    before, after = state(msg("a", DL, 0, None, 2.0)), state(msg("a"))
    assert delay_honoured_step(before, after) is None, "without the time it cannot tell"
    assert delay_honoured_step(before, after, now=2.0) is None
    assert delay_honoured_step(before, after, now=3.0) is None
    reason = delay_honoured_step(before, after, now=1.5)
    assert reason == "DelayHonoured: 'a' became VISIBLE at 1.5, before its visible_at 2.0"
    assert reason in step_violations(before, after, now=1.5)
    assert step_violations(before, after) == []


# -- BatchAtomic ------------------------------------------------------------------------------

R = Receipt


def _busy() -> State:
    """a and b in flight (deadlines 5 and 6), c and d visible, e delayed until 3."""
    s = State(config=Config(capacity=6))
    for id in "abcd":
        s, _ = transitions.send(s, id, id.upper())
    s, _ = transitions.send(s, "e", "E", delay=3.0)
    s, _ = transitions.receive(s, 0.0, 5.0)
    s, _ = transitions.receive(s, 1.0, 5.0)
    return s


BUSY = _busy()


def _delete_batch_stops_at_false(
    s: State, receipts: tuple[Receipt, ...]
) -> tuple[State, tuple[bool, ...]]:
    out: list[bool] = []
    for r in receipts:
        s, ok = transitions.delete(s, r)
        out.append(ok)
        if not ok:
            break
    return s, tuple(out) + (False,) * (len(receipts) - len(out))


def _change_visibility_batch_reversed(
    s: State, changes: tuple[tuple[Receipt, float], ...], now: float
) -> tuple[State, tuple[bool, ...]]:
    after, results = transitions.change_visibility_batch(s, changes[::-1], now)
    return after, results[::-1]


BATCH_BUGS = [
    (
        "send_batch",
        broken.send_batch_accepts_a_prefix,
        dict(entries=(("x", "X", 0.0), ("y", "Y", None), ("z", "Z", 1.0)), now=1.0),
    ),
    # The sweep comes 10 s after the batch's now, past a's and b's deadlines and e's delay.
    ("receive_batch", broken.receive_batch_with_a_sweep(10), dict(now=1.0, n=3, vt=1.0)),
    ("delete_batch", _delete_batch_stops_at_false, dict(receipts=(R(0, "z", 1), R(0, "a", 1)))),
    (
        "change_visibility_batch",
        _change_visibility_batch_reversed,
        dict(changes=((R(0, "a", 1), 0.0), (R(0, "b", 1), 0.0)), now=1.0),
    ),
    ("purge", broken.purge_misses_delayed, {}),
]


@pytest.mark.parametrize(("name", "bug", "kwargs"), BATCH_BUGS, ids=[b[0] for b in BATCH_BUGS])
def test_batch_atomic_catches_a_broken_batch(
    name: str, bug: Callable[..., tuple[State, object]], kwargs: dict[str, object]
) -> None:
    assert name in BATCH_OPERATIONS
    good: Callable[..., tuple[State, object]] = getattr(transitions, name)
    after, result = good(BUSY, **kwargs)
    assert batch_atomic(BUSY, name, kwargs, after, result) is None
    assert one_by_one(BUSY, name, kwargs) == (after, result)
    after, result = bug(BUSY, **kwargs)
    reason = batch_atomic(BUSY, name, kwargs, after, result)
    assert reason is not None and reason.startswith("BatchAtomic: "), reason


def test_batch_atomic_speaks_only_of_batches() -> None:
    after, ok = transitions.send(BUSY, "x", "X")
    assert batch_atomic(BUSY, "send", dict(id="x", body="X"), after, ok) is None
    with pytest.raises(ValueError, match="operation must be one of"):
        one_by_one(BUSY, "send", {})


def test_a_refused_send_batch_must_change_nothing() -> None:
    entries = (("x", "X", 0.0), ("a", "A", 0.0))  # a was accepted: the batch is refused
    assert transitions.send_batch(BUSY, entries, 0.0) == (BUSY, False)
    after, _ = transitions.send(BUSY, "x", "X")
    reason = batch_atomic(BUSY, "send_batch", dict(entries=entries, now=0.0), after, False)
    assert reason is not None and reason.startswith("BatchAtomic: send_batch left ")


def test_the_one_state_reasons_name_the_view_and_the_change() -> None:
    """A ``OneState`` reason names the ordered view that disagrees with the statuses (by its
    field name), and for a step the terminal message that changed and what it became, so a
    failing check points at the bug rather than only at the invariant."""
    assert one_state(replace(GOOD, visible=("a",))) == (
        "OneState: visible lists ['a'] but the VISIBLE messages are ['a', 'f']"
    )
    assert one_state(replace(GOOD, in_flight=())) == (
        "OneState: in_flight lists [] but the IN_FLIGHT messages are ['b']"
    )
    assert one_state(replace(GOOD, dead=())) == (
        "OneState: dead lists [] but the DEAD messages are ['e']"
    )
    assert one_state(replace(GOOD, visible=("a", "a", "f"))) == (
        "OneState: ['a'] listed more than once in visible"
    )
    before, after = state(msg("a", DONE, 1)), state(msg("a", V, 1))
    assert one_state_step(before, after) == (
        f"OneState: terminal message 'a' changed from {before.get('a')} to {after.get('a')}"
    )


def test_the_one_live_receipt_reason_lists_every_live_attempt() -> None:
    """The reason lists the attempts whose receipts are live, attempt 0 included: an in-flight
    message with attempt 0 has the (impossible) live receipt ``(queue, id, 0)``."""
    assert one_live_receipt(state(msg("a", F, 0, 1.0))) == (
        "OneLiveReceipt: 'a' in flight with attempt 0, live [0]"
    )
