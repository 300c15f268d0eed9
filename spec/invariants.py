"""The contract's invariants (section 2), one function each, under the contract's names.

Each function returns ``None`` when the invariant holds and a sentence saying what is wrong
when it does not, so a failing test or explorer run can print the reason as it stands.

Some invariants speak of history ("never accepted again", "attempts 1, 2, 3 with no gap",
"ordered by the time each message re-entered"). A single state cannot show history, so each of
those has two halves: a *state* half that every reachable state must satisfy, and a *step* half
(``*_step(before, after)``) that every transition must satisfy. Together they are the invariant:
the step half is what TLC would check as an action property ``[][...]_vars``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping

from spec.state import Receipt, State, Status

Reason = str | None


def _dupes(xs: tuple[str, ...]) -> set[str]:
    return {x for x, n in Counter(xs).items() if n > 1}


# -- OneState ---------------------------------------------------------------------------------


def one_state(s: State) -> Reason:
    """Every accepted id is in exactly one state, and the ordered views agree with the statuses.

    Visible ids are exactly the ``VISIBLE`` messages, in-flight ids exactly the ``IN_FLIGHT``
    ones, dead ids exactly the ``DEAD`` ones, each listed once; no id is in two lists.
    """
    ids = [m.id for m in s.messages]
    if len(ids) != len(set(ids)):
        return f"OneState: an id is recorded twice in messages: {sorted(ids)}"
    if ids != sorted(ids):
        return "OneState: messages are not sorted by id (state is not canonical)"
    for name, xs, status in (
        ("visible", s.visible, Status.VISIBLE),
        ("in_flight", s.in_flight, Status.IN_FLIGHT),
        ("dead", s.dead, Status.DEAD),
    ):
        if d := _dupes(xs):
            return f"OneState: {sorted(d)} listed more than once in {name}"
        expected = {m.id for m in s.messages if m.status is status}
        if set(xs) != expected:
            return (
                f"OneState: {name} lists {sorted(set(xs))} but the {status.value} messages are "
                f"{sorted(expected)}"
            )
    for m in s.messages:
        if m.status is not Status.IN_FLIGHT and m.deadline is not None:
            return f"OneState: {m.id!r} is {m.status.value} but still has a deadline"
    return None


def one_state_step(before: State, after: State) -> Reason:
    """Terminal states are terminal: a DONE, CANCELLED or DEAD message never changes again."""
    for m in before.messages:
        if m.status.terminal and after.get(m.id) != m:
            return f"OneState: terminal message {m.id!r} changed from {m} to {after.get(m.id)}"
    return None


# -- CapacityBound ----------------------------------------------------------------------------


def capacity_bound(s: State) -> Reason:
    """Active (visible + in-flight) messages never exceed capacity."""
    cap = s.config.capacity
    if cap is not None and s.active > cap:
        return f"CapacityBound: {s.active} active messages, capacity {cap}"
    return None


# -- OneLiveReceipt ---------------------------------------------------------------------------


def one_live_receipt(s: State) -> Reason:
    """At most one live receipt per message, carrying the current attempt.

    In the spec a receipt is live iff its message is ``IN_FLIGHT`` with that exact attempt, so
    the live receipt of a message is ``(queue, id, attempt)``. This checks that such a receipt
    names a real delivery (attempt >= 1) and that no other attempt of the same message is live.
    """
    for m in s.messages:
        live = [a for a in range(0, m.attempt + 2) if s.is_live(Receipt(s.queue, m.id, a))]
        if m.status is Status.IN_FLIGHT:
            if live != [m.attempt] or m.attempt < 1:
                return f"OneLiveReceipt: {m.id!r} in flight with attempt {m.attempt}, live {live}"
        elif live:
            return f"OneLiveReceipt: {m.id!r} is {m.status.value} but attempts {live} are live"
    return None


# -- AttemptsCount ----------------------------------------------------------------------------


def attempts_count(s: State) -> Reason:
    """Attempts are within bounds for each state.

    In flight: at least 1 (it has been delivered). Dead: at least 1, and exactly ``max_receives``
    when that is set (it died on the release after its last allowed delivery). Never above
    ``max_receives``.
    """
    k = s.config.max_receives
    for m in s.messages:
        if m.attempt < 0:
            return f"AttemptsCount: {m.id!r} has negative attempt {m.attempt}"
        if m.status in (Status.IN_FLIGHT, Status.DEAD) and m.attempt < 1:
            return f"AttemptsCount: {m.id!r} is {m.status.value} with attempt {m.attempt}"
        if k is not None and m.attempt > k:
            return f"AttemptsCount: {m.id!r} delivered {m.attempt} times, max_receives {k}"
        if k is not None and m.status is Status.DEAD and m.attempt != k:
            return f"AttemptsCount: {m.id!r} dead after {m.attempt} deliveries, max_receives {k}"
    return None


def attempts_count_step(before: State, after: State) -> Reason:
    """A step changes a message's attempt only by delivering it, and then by exactly one."""
    for m in after.messages:
        old = before.get(m.id)
        prev = 0 if old is None else old.attempt
        delivered = m.status is Status.IN_FLIGHT and (old is None or old.status is Status.VISIBLE)
        want = prev + 1 if delivered else prev
        if m.attempt != want:
            return f"AttemptsCount: {m.id!r} went from attempt {prev} to {m.attempt}"
    return None


# -- FifoVisible ------------------------------------------------------------------------------


def fifo_visible(s: State) -> Reason:
    """``visible`` is a duplicate-free sequence of exactly the ``VISIBLE`` messages.

    The order half of FifoVisible is a property of steps (see :func:`fifo_visible_step`).
    """
    if d := _dupes(s.visible):
        return f"FifoVisible: {sorted(d)} twice in the visible FIFO"
    for id in s.visible:
        m = s.get(id)
        if m is None or m.status is not Status.VISIBLE:
            return f"FifoVisible: {id!r} is in the visible FIFO but is {m and m.status.value}"
    return None


def fifo_visible_step(before: State, after: State) -> Reason:
    """Messages leave ``VISIBLE`` from anywhere but enter only at the tail, in entry order.

    So the survivors keep their relative order and come first, and every newcomer follows them.
    """
    kept = tuple(x for x in before.visible if x in after.visible)
    if after.visible[: len(kept)] != kept:
        return f"FifoVisible: visible went from {before.visible} to {after.visible}"
    newcomers = after.visible[len(kept) :]
    if any(x in before.visible for x in newcomers):
        return f"FifoVisible: visible went from {before.visible} to {after.visible}"
    return None


# -- IdsReserved ------------------------------------------------------------------------------


def ids_reserved(s: State) -> Reason:
    """Each accepted id stands for one message (no two records share an id)."""
    ids = [m.id for m in s.messages]
    if len(ids) != len(set(ids)):
        return f"IdsReserved: an id is held by two messages in {ids}"
    return None


def ids_reserved_step(before: State, after: State) -> Reason:
    """An accepted id is never forgotten, and a new message never reuses one."""
    lost = before.ids() - after.ids()
    if lost:
        return f"IdsReserved: ids {sorted(lost)} were forgotten"
    for m in after.messages:
        old = before.get(m.id)
        if old is not None and (old.body != m.body):
            return f"IdsReserved: {m.id!r} was accepted again with a new body"
    return None


#: Every state invariant, by its contract name.
INVARIANTS: Mapping[str, Callable[[State], Reason]] = {
    "OneState": one_state,
    "CapacityBound": capacity_bound,
    "OneLiveReceipt": one_live_receipt,
    "AttemptsCount": attempts_count,
    "FifoVisible": fifo_visible,
    "IdsReserved": ids_reserved,
}

#: The step halves of the invariants that speak of history, by contract name.
STEP_INVARIANTS: Mapping[str, Callable[[State, State], Reason]] = {
    "OneState": one_state_step,
    "AttemptsCount": attempts_count_step,
    "FifoVisible": fifo_visible_step,
    "IdsReserved": ids_reserved_step,
}


def violations(s: State) -> list[str]:
    """The reasons of every state invariant that fails in ``s`` (empty: all hold)."""
    return [r for f in INVARIANTS.values() if (r := f(s)) is not None]


def step_violations(before: State, after: State) -> list[str]:
    """The reasons of every step invariant that fails for ``before -> after`` (empty: all hold)."""
    return [r for f in STEP_INVARIANTS.values() if (r := f(before, after)) is not None]
