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
from spec.state import MSG, RET, TICK, Receipt, State, Status, Time

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

    Contract 7: ``aged_out`` and ``moved`` list exactly the ``AGED_OUT`` and ``MOVED``
    messages, once each; the one timer order ``order`` is ``()`` or holds more than
    ``timers``, its ``msg`` entries are ``timers`` in the same order, and its ``ret`` entries
    are one per active message on a queue with a retention (none on a queue without).
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
        ("aged_out", s.aged_out, Status.AGED_OUT),
        ("moved", s.moved, Status.MOVED),
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
    return _one_order(s)


def _one_order(s: State) -> Reason:
    """OneState's half for the one timer order of contract 7 (see :func:`one_state`)."""
    if not s.order:
        if s.config.retention is not None and any(m.status.active for m in s.messages):
            return "OneState: a queue with a retention has active messages but no ret timers"
        return None
    if len(set(s.order)) != len(s.order):
        return f"OneState: a timer is listed twice in order {s.order}"
    if all(kind == MSG for kind, _ in s.order):
        return f"OneState: order {s.order} says no more than timers (it should be ())"
    if any(kind not in (MSG, RET, TICK) for kind, _ in s.order):
        return f"OneState: order {s.order} has a timer of an unknown kind"
    if tuple(name for kind, name in s.order if kind == MSG) != s.timers:
        return f"OneState: order {s.order} and timers {s.timers} disagree"
    kept = {name for kind, name in s.order if kind == RET}
    want = set()
    if s.config.retention is not None:
        want = {m.id for m in s.messages if m.status.active}
    if kept != want:
        return f"OneState: the ret timers are of {sorted(kept)}, the active messages {sorted(want)}"
    return None


def one_state_step(before: State, after: State) -> Reason:
    """Terminal states are terminal: a DONE, CANCELLED, DEAD, AGED_OUT or MOVED message never
    changes again."""
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

    A message dead-lettered into this queue (contract 7.3) arrived with the attempt ``base``
    it had, kept: it is delivered at least once here before it can die again, so its limit is
    ``max(max_receives, base + 1)`` (``max_receives`` itself when ``base`` is 0), and it
    never has fewer than ``base`` deliveries.
    """
    for m in s.messages:
        k = s.config.max_receives
        if k is not None and m.base:
            k = max(k, m.base + 1)
        if m.attempt < m.base:
            return f"AttemptsCount: {m.id!r} has attempt {m.attempt} below its base {m.base}"
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
        # A message new here arrives with attempt 0, or with its kept attempt (``base``) by
        # a dead-letter move (contract 7.3).
        prev = m.base if old is None else old.attempt
        delivered = m.status is Status.IN_FLIGHT and (old is None or old.status is Status.VISIBLE)
        want = prev + 1 if delivered else prev
        if m.attempt != want:
            return f"AttemptsCount: {m.id!r} went from attempt {prev} to {m.attempt}"
    return None


# -- FifoVisible ------------------------------------------------------------------------------


def fifo_visible(s: State) -> Reason:
    """``visible`` is a duplicate-free sequence of exactly the ``VISIBLE`` messages.

    The order half of FifoVisible is a property of steps (see :func:`fifo_visible_step`).
    Standard queues only: on a FIFO queue :func:`group_order` replaces it (contract 2b).
    """
    if s.config.fifo:
        return None
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
    Standard queues only (on a FIFO queue a released message goes back to its place).
    """
    if before.config.fifo or after.config.fifo:
        return None
    kept = tuple(x for x in before.visible if x in after.visible)
    if after.visible[: len(kept)] != kept:
        return f"FifoVisible: visible went from {before.visible} to {after.visible}"
    newcomers = after.visible[len(kept) :]
    if any(x in before.visible for x in newcomers):
        return f"FifoVisible: visible went from {before.visible} to {after.visible}"
    return None


# -- GroupOrder (FIFO queues, contract section 2b) ---------------------------------------------


def group_order(s: State) -> Reason:
    """On a FIFO queue: every message has a group, the send order numbers the accepted messages
    0, 1, 2, ... and ``visible`` holds exactly the ``VISIBLE`` messages once each, in send
    order (a released message is back in its place). On a standard queue no message has a
    group, a send order or a dedup id.

    Which messages a receive may take is a property of steps (see :func:`group_order_step`).
    """
    if not s.config.fifo:
        for m in s.messages:
            if m.group is not None or m.sent != 0 or m.dedup_id is not None:
                return f"GroupOrder: {m.id!r} of a standard queue has a FIFO field: {m}"
        return None
    for m in s.messages:
        if m.group is None:
            return f"GroupOrder: {m.id!r} of a FIFO queue has no group"
    sent = sorted(m.sent for m in s.messages)
    if sent != list(range(len(sent))):
        return f"GroupOrder: the send order numbers {sent}, not 0..{len(sent) - 1}"
    if d := _dupes(s.visible):
        return f"GroupOrder: {sorted(d)} twice in visible"
    order = []
    for id in s.visible:
        v = s.get(id)
        if v is None or v.status is not Status.VISIBLE:
            return f"GroupOrder: {id!r} is in visible but is {v and v.status.value}"
        order.append(v.sent)
    if order != sorted(order):
        return f"GroupOrder: visible {s.visible} is not in send order"
    return None


def _delivered(before: State, after: State) -> list[str]:
    """The ids a step delivered (their attempt went up), in delivery order."""
    out = []
    for id in after.in_flight:
        m, old = after.get(id), before.get(id)
        if m is not None and m.attempt > (old.attempt if old is not None else 0):
            out.append(id)
    return out


def group_order_step(before: State, after: State) -> Reason:
    """On a FIFO queue a step delivers, from each group it touches, that group's earliest
    non-terminal messages in send order, never a message of a group locked when it began; it
    takes the deliverable groups in the order of their earliest visible message, and moves to
    the next group only once it has taken every visible message of the one before."""
    if not before.config.fifo:
        return None
    delivered = _delivered(before, after)
    if not delivered:
        return None
    locked = before.locked_groups()
    groups: list[str | None] = []
    taken: dict[str | None, list[str]] = {}
    for id in delivered:
        m = after.get(id)
        assert m is not None
        if m.group in locked:
            return f"GroupOrder: {id!r} delivered from group {m.group!r}, which was locked"
        if groups and m.group != groups[-1] and m.group in taken:
            return f"GroupOrder: the deliveries {delivered} go back to group {m.group!r}"
        if not groups or m.group != groups[-1]:
            groups.append(m.group)
        taken.setdefault(m.group, []).append(id)
    for g, ids in taken.items():
        pending = sorted(
            (m for m in before.messages if m.group == g and not m.status.terminal),
            key=lambda m: m.sent,
        )
        earliest = [m.id for m in pending[: len(ids)]]
        if ids != earliest:
            return f"GroupOrder: delivered {ids} of group {g!r}, its earliest are {earliest}"
    for g in groups[:-1]:
        left = [
            id
            for id in before.visible
            if (m := before.get(id)) and m.group == g and id not in taken[g]
        ]
        if left:
            return f"GroupOrder: went on past group {g!r} while {left} of it were visible"
    ranked: list[str | None] = []
    for id in before.deliverable():
        m = before.get(id)
        assert m is not None
        if m.group not in ranked:
            ranked.append(m.group)
    if groups != ranked[: len(groups)]:
        return f"GroupOrder: took the groups {groups}; by their earliest message, {ranked}"
    return None


# -- DedupWindow (FIFO queues, contract section 2b) ---------------------------------------------


def dedup_window(s: State) -> Reason:
    """The dedup records are one per dedup id, sorted, each naming the latest message accepted
    with it; every message accepted with a dedup id has its record (none on a standard queue).
    A record of a send that was rejected names no such message."""
    if not s.config.fifo:
        return f"DedupWindow: a standard queue has dedup records {s.dedup}" if s.dedup else None
    keys = [d for d, _, _ in s.dedup]
    if keys != sorted(set(keys)):
        return f"DedupWindow: the dedup records {s.dedup} are not one per dedup id, sorted"
    latest: dict[str, tuple[int, str]] = {}
    for m in s.messages:
        if m.dedup_id is not None and (m.dedup_id not in latest or m.sent > latest[m.dedup_id][0]):
            latest[m.dedup_id] = (m.sent, m.id)
    recorded = {d: id for d, id, _ in s.dedup}
    want = {d: id for d, (_, id) in latest.items()}
    if recorded != want:
        return f"DedupWindow: the dedup records name {recorded}, the latest acceptances are {want}"
    return None


def dedup_window_step(before: State, after: State, now: Time | None = None) -> Reason:
    """Within ``dedup_interval`` of an acceptance no other message with the same dedup id is
    accepted (when the step's ``now`` is given), and a new acceptance records its own time;
    the records change only by an acceptance (a duplicate or a rejected send leaves them)."""
    if not after.config.fifo:
        return None
    new = [m for m in after.messages if before.get(m.id) is None]
    if not new and after.dedup != before.dedup:
        return f"DedupWindow: the records went from {before.dedup} to {after.dedup} by no send"
    interval = after.config.dedup_interval
    for m in new:
        if m.dedup_id is None:
            continue
        for d, id, at in before.dedup:
            if d == m.dedup_id and now is not None and now < at + interval:
                return (
                    f"DedupWindow: {m.id!r} accepted at {now} with dedup id {d!r}, within "
                    f"{interval} of {id!r} accepted at {at}"
                )
        if now is not None and (m.dedup_id, m.id, now) not in after.dedup:
            return f"DedupWindow: {m.id!r} accepted at {now} without its record: {after.dedup}"
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
    ``now >= visible_at``, when ``now`` is given), ``CANCELLED`` (cancel, purge) or
    ``AGED_OUT`` (its retention ran out, contract 7.4), so it is never delivered, done or
    dead-lettered while delayed."""
    for m in after.messages:
        old = before.get(m.id)
        if m.status is Status.DELAYED:
            if old is not None and (old.status is not Status.DELAYED or old != m):
                return f"DelayHonoured: {m.id!r} went from {old} to {m}"
            continue
        if old is None or old.status is not Status.DELAYED:
            continue
        if m.status not in (Status.VISIBLE, Status.CANCELLED, Status.AGED_OUT):
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
    if operation == "send_batch" and before.config.fifo:
        return _send_batch_one_by_one(before, a)
    if operation == "receive_batch" and before.config.fifo:
        return _receive_batch_one_by_one(before, a)
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


def _send_batch_one_by_one(before: State, a: Mapping[str, object]) -> tuple[State, object]:
    """FIFO ``send_batch``: the duplicates (judged against the state before the batch) change
    nothing and answer their earlier ids; the other entries are sent one by one, and if one is
    refused, none is."""
    entries, now = a["entries"], a.get("now", 0.0)
    assert isinstance(entries, tuple | list) and isinstance(now, int | float)
    dupes = [transitions.is_duplicate(before, e[4], now) for e in entries]
    s, ok = before, True
    for e, dup in zip(entries, dupes, strict=True):
        if dup is None:
            s, one = transitions.send(s, e[0], e[1], e[2], now, e[3], e[4])
            ok = ok and one is True
    if not ok:
        s = before
    return s, tuple(ok if dup is None else dup for dup in dupes)


def _receive_batch_one_by_one(before: State, a: Mapping[str, object]) -> tuple[State, object]:
    """FIFO ``receive_batch``: the deliverable messages ranked by group (groups in the order of
    their earliest visible message) then send order; the first ``n`` delivered one by one."""
    n, now, vt = a["n"], a["now"], a["vt"]
    assert isinstance(n, int) and isinstance(now, int | float)
    assert vt is None or isinstance(vt, int | float)
    ranked: list[str | None] = []
    for id in before.deliverable():
        m = before.get(id)
        assert m is not None
        if m.group not in ranked:
            ranked.append(m.group)

    def rank(id: str) -> tuple[int, int]:
        m = before.get(id)
        assert m is not None
        return ranked.index(m.group), m.sent

    s, out = before, []
    for id in sorted(before.deliverable(), key=rank)[:n]:
        s, d = transitions._deliver(s, id, now, vt)  # one delivery, as receive makes it
        out.append(d)
    return s, tuple(out)


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
    "GroupOrder": group_order,
    "DedupWindow": dedup_window,
}

#: The step halves of the invariants that speak of history, by contract name.
STEP_INVARIANTS: Mapping[str, Callable[[State, State], Reason]] = {
    "OneState": one_state_step,
    "AttemptsCount": attempts_count_step,
    "FifoVisible": fifo_visible_step,
    "IdsReserved": ids_reserved_step,
    "DelayHonoured": delay_honoured_step,
    "GroupOrder": group_order_step,
    "DedupWindow": dedup_window_step,
}

#: The step halves that also take the step's time.
_TIMED: Final = frozenset({"DelayHonoured", "DedupWindow"})


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
        if name not in _TIMED and (r := f(before, after)) is not None
    ]
    if (r := delay_honoured_step(before, after, now)) is not None:
        out.append(r)
    if (r := dedup_window_step(before, after, now)) is not None:
        out.append(r)
    return out
