"""The invariant checks can fail: each one, given a hand-built broken state, names itself.

A check that never fails proves nothing. Every case below builds a state (or a step) that breaks
exactly the named invariant of the contract, and asserts that its function reports a reason that
starts with that name, that :func:`spec.violations` / :func:`spec.step_violations` pass the
reason on, and that the same function accepts the nearest good state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from spec import (
    INVARIANTS,
    STEP_INVARIANTS,
    Config,
    Msg,
    State,
    Status,
    attempts_count,
    capacity_bound,
    fifo_visible,
    ids_reserved,
    one_live_receipt,
    one_state,
    step_violations,
    violations,
)
from spec.invariants import (
    attempts_count_step,
    fifo_visible_step,
    ids_reserved_step,
    one_state_step,
)

V, F, DONE, C, DEAD = (
    Status.VISIBLE,
    Status.IN_FLIGHT,
    Status.DONE,
    Status.CANCELLED,
    Status.DEAD,
)


def msg(id: str, status: Status = V, attempt: int = 0, deadline: float | None = None) -> Msg:
    return Msg(id=id, body=id.upper(), status=status, attempt=attempt, deadline=deadline)


def state(*msgs: Msg, capacity: int | None = None, max_receives: int | None = None) -> State:
    """A consistent state holding ``msgs``: the ordered views are filled in argument order."""
    return State(
        config=Config(capacity=capacity, max_receives=max_receives),
        messages=tuple(sorted(msgs, key=lambda m: m.id)),
        visible=tuple(m.id for m in msgs if m.status is V),
        in_flight=tuple(m.id for m in msgs if m.status is F),
        dead=tuple(m.id for m in msgs if m.status is DEAD),
    )


GOOD = state(
    msg("a"),
    msg("b", F, 1, 5.0),
    msg("c", DONE, 1),
    msg("d", C),
    msg("e", DEAD, 2),
    msg("f", V, 1),
    capacity=3,
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
    # CapacityBound: 4 active with capacity 3
    ("CapacityBound", capacity_bound, state(*GOOD.messages, msg("g"), capacity=3)),
    ("CapacityBound", capacity_bound, state(msg("a"), capacity=0)),
    # OneLiveReceipt: an in-flight message whose live receipt would be attempt 0
    ("OneLiveReceipt", one_live_receipt, state(msg("a", F, 0, 1.0))),
    # AttemptsCount
    ("AttemptsCount", attempts_count, state(msg("a", V, -1))),
    ("AttemptsCount", attempts_count, state(msg("a", F, 0))),
    ("AttemptsCount", attempts_count, state(msg("a", DEAD, 0))),
    ("AttemptsCount", attempts_count, state(msg("a", F, 3), max_receives=2)),
    ("AttemptsCount", attempts_count, state(msg("a", DEAD, 1), max_receives=2)),
    # FifoVisible
    ("FifoVisible", fifo_visible, replace(GOOD, visible=("a", "f", "a"))),
    ("FifoVisible", fifo_visible, replace(GOOD, visible=("a", "f", "c"))),  # c is DONE
    ("FifoVisible", fifo_visible, replace(GOOD, visible=("a", "f", "zz"))),  # never accepted
    # IdsReserved
    ("IdsReserved", ids_reserved, replace(GOOD, messages=(*GOOD.messages, msg("c", V)))),
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
    ]
    for before, after in steps:
        assert step_violations(before, after) == [], (before, after)


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
