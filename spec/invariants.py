"""The contract's invariants (section 2), one function each, under the contract's names.

Each function returns ``None`` when the invariant holds and a sentence saying what is wrong
when it does not, so a failing test or explorer run can print the reason as it stands.

Some invariants speak of history ("never accepted again", "attempts 1, 2, 3 with no gap",
"ordered by the time each message re-entered"). A single state cannot show history, so each of
those has two halves: a *state* half that every reachable state must satisfy, and a *step* half
(``*_step(before, after)``) that every transition must satisfy. Together they are the invariant:
the step half is what TLC would check as an action property ``[][...]_vars``.

``DelayHonoured``'s step half also takes the step's ``now`` (a delay may fire only at or after
its ``visible_at``); ``BatchAtomic`` is a property of the batch steps alone, and needs the
operation and its arguments: :func:`batch_atomic` replays the batch's entries one after another
with the single transitions and compares.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Final

from spec import transitions
from spec.state import Receipt, State, Status, Time

Reason = str | None


def _dupes(xs: tuple[str, ...]) -> set[str]:
    return {x for x, n in Counter(xs).items() if n > 1}


# -- OneState ---------------------------------------------------------------------------------


def one_state(s: State) -> Reason:
    """Every accepted id is in exactly one state, and the ordered views agree with the statuses.

    Visible ids are exactly the ``VISIBLE`` messages, in-flight ids exactly the ``IN_FLIGHT``
    ones, dead ids exactly the ``DEAD`` ones, delayed ids exactly the ``DELAYED`` ones, each
    listed once; no id is in two lists. ``timers`` lists exactly the ``DELAYED`` and
    ``IN_FLIGHT`` messages, once each, and agrees with ``delayed`` (send order) and
    ``in_flight`` (receive order) on the order of each kind.
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
        ("delayed", s.delayed, Status.DELAYED),
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
    if d := _dupes(s.timers):
        return f"OneState: {sorted(d)} listed more than once in timers"
    timed = {m.id for m in s.messages if m.status in (Status.DELAYED, Status.IN_FLIGHT)}
    if set(s.timers) != timed:
        return (
            f"OneState: timers lists {sorted(set(s.timers))} but the DELAYED and IN_FLIGHT "
            f"messages are {sorted(timed)}"
        )
    for name, xs in (("delayed", s.delayed), ("in_flight", s.in_flight)):
        if tuple(x for x in s.timers if x in xs) != xs:
            return f"OneState: timers {s.timers} and {name} {xs} disagree on the order"
    return None


def one_state_step(before: State, after: State) -> Reason:
    """Terminal states are terminal: a DONE, CANCELLED or DEAD message never changes again."""
    for m in before.messages:
        if m.status.terminal and after.get(m.id) != m:
            return f"OneState: terminal message {m.id!r} changed from {m} to {after.get(m.id)}"
    return None


# -- CapacityBound ----------------------------------------------------------------------------


def capacity_bound(s: State) -> Reason:
    """Active (delayed + visible + in-flight) messages never exceed capacity."""
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
        if m.status is Status.DELAYED and m.attempt != 0:
            return f"AttemptsCount: {m.id!r} is DELAYED with attempt {m.attempt}"
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


# -- DelayHonoured -----------------------------------------------------------------------------


def delay_honoured(s: State) -> Reason:
    """Exactly the ``DELAYED`` messages have a ``visible_at``, and each is in ``delayed`` and
    ``timers`` (so the sweeper will fire it)."""
    for m in s.messages:
        if m.status is Status.DELAYED:
            if m.visible_at is None:
                return f"DelayHonoured: {m.id!r} is DELAYED without a visible_at"
            if m.id not in s.delayed or m.id not in s.timers:
                return f"DelayHonoured: DELAYED {m.id!r} is missing from delayed or timers"
        elif m.visible_at is not None:
            return f"DelayHonoured: {m.id!r} is {m.status.value} but still has a visible_at"
    return None


def delay_honoured_step(before: State, after: State, now: Time | None = None) -> Reason:
    """A message becomes ``DELAYED`` only when it is sent, and stays so with the same
    ``visible_at`` until it leaves; it leaves only for ``VISIBLE`` (its delay fired: at a
    ``now >= visible_at``, when ``now`` is given) or ``CANCELLED`` (cancel, purge), so it is
    never delivered, done or dead-lettered while delayed."""
    for m in after.messages:
        old = before.get(m.id)
        if m.status is Status.DELAYED:
            if old is not None and (old.status is not Status.DELAYED or old != m):
                return f"DelayHonoured: {m.id!r} went from {old} to {m}"
            continue
        if old is None or old.status is not Status.DELAYED:
            continue
        if m.status not in (Status.VISIBLE, Status.CANCELLED):
            return f"DelayHonoured: DELAYED {m.id!r} became {m.status.value}"
        due = old.visible_at
        if m.status is Status.VISIBLE and now is not None and due is not None and now < due:
            return f"DelayHonoured: {m.id!r} became VISIBLE at {now}, before its visible_at {due}"
    return None


# -- BatchAtomic ------------------------------------------------------------------------------

#: The operations that ``BatchAtomic`` speaks of.
BATCH_OPERATIONS: Final = frozenset(
    {"send_batch", "receive_batch", "delete_batch", "change_visibility_batch", "purge"}
)


def one_by_one(
    before: State, operation: str, arguments: Mapping[str, object]
) -> tuple[State, object]:
    """What the batch ``operation`` must do: its entries, one after another, by the single
    transitions, with nothing in between; a ``send_batch`` some entry of which is refused
    changes nothing. ``arguments`` are the spec function's keyword arguments."""
    s = before
    a = dict(arguments)
    if operation == "send_batch":
        entries = a["entries"]
        assert isinstance(entries, tuple | list)
        for id, body, delay in entries:
            s, ok = transitions.send(s, id, body, delay, a.get("now", 0.0))  # type: ignore[arg-type]
            if not ok:
                return before, False
        return s, True
    if operation == "receive_batch":
        n, now, vt = a["n"], a["now"], a["vt"]
        assert isinstance(n, int) and isinstance(now, int | float)
        assert vt is None or isinstance(vt, int | float)
        out = []
        for _ in range(n):
            s, d = transitions.receive(s, now, vt)
            if d is None:
                break
            out.append(d)
        return s, tuple(out)
    if operation == "delete_batch":
        receipts = a["receipts"]
        assert isinstance(receipts, tuple | list)
        results = []
        for r in receipts:
            s, ok = transitions.delete(s, r)
            results.append(ok)
        return s, tuple(results)
    if operation == "change_visibility_batch":
        changes, now = a["changes"], a["now"]
        assert isinstance(changes, tuple | list) and isinstance(now, int | float)
        results = []
        for r, t in changes:
            s, ok = transitions.change_visibility(s, r, t, now)
            results.append(ok)
        return s, tuple(results)
    if operation == "purge":
        count = 0
        for m in before.messages:
            s, ok = transitions.cancel(s, m.id)
            count += ok
        return s, count
    raise ValueError(f"operation must be one of {sorted(BATCH_OPERATIONS)}, got {operation!r}")


def batch_atomic(
    before: State,
    operation: str,
    arguments: Mapping[str, object],
    after: State,
    result: object,
) -> Reason:
    """A batch step (``after, result`` from ``before``) is its entries applied one after
    another with nothing in between: the same state and the same results (see
    :func:`one_by_one`); a refused ``send_batch`` changes nothing. ``None`` for any other
    operation."""
    if operation not in BATCH_OPERATIONS:
        return None
    want_state, want = one_by_one(before, operation, arguments)
    if result != want:
        return f"BatchAtomic: {operation} gave {result!r}, its entries one by one give {want!r}"
    if after != want_state:
        return f"BatchAtomic: {operation} left {after}, its entries one by one leave {want_state}"
    return None


#: Every state invariant, by its contract name.
INVARIANTS: Mapping[str, Callable[[State], Reason]] = {
    "OneState": one_state,
    "CapacityBound": capacity_bound,
    "OneLiveReceipt": one_live_receipt,
    "AttemptsCount": attempts_count,
    "FifoVisible": fifo_visible,
    "IdsReserved": ids_reserved,
    "DelayHonoured": delay_honoured,
}

#: The step halves of the invariants that speak of history, by contract name.
STEP_INVARIANTS: Mapping[str, Callable[[State, State], Reason]] = {
    "OneState": one_state_step,
    "AttemptsCount": attempts_count_step,
    "FifoVisible": fifo_visible_step,
    "IdsReserved": ids_reserved_step,
    "DelayHonoured": delay_honoured_step,
}


def violations(s: State) -> list[str]:
    """The reasons of every state invariant that fails in ``s`` (empty: all hold)."""
    return [r for f in INVARIANTS.values() if (r := f(s)) is not None]


def step_violations(before: State, after: State, now: Time | None = None) -> list[str]:
    """The reasons of every step invariant that fails for ``before -> after`` (empty: all hold).

    ``now``, the time of the step, when known, lets ``DelayHonoured`` check that a delay fired
    no earlier than its ``visible_at``. (``BatchAtomic`` needs the operation: :func:`batch_atomic`.)
    """
    out = [
        r
        for name, f in STEP_INVARIANTS.items()
        if name != "DelayHonoured" and (r := f(before, after)) is not None
    ]
    if (r := delay_honoured_step(before, after, now)) is not None:
        out.append(r)
    return out
