"""Contracts on the transitions, for CrossHair to search for counterexamples.

Each ``*_contract`` function is one condition in CrossHair's ``asserts`` style: its leading
``assert`` statements are preconditions, every later ``assert`` is a promise that must hold for
all inputs meeting them. CrossHair explores the inputs symbolically; pytest
(``tests/test_spec_crosshair.py``) calls the same functions on concrete examples.

Run it (a bounded search: at most 15 CPU seconds per contract, about 3 minutes in all)::

    crosshair check --analysis_kind=asserts --per_condition_timeout=15 spec/contracts.py

It prints nothing and exits 0 when it finds no counterexample. See ``docs/crosshair.md``.

Why the state is built from a *script*: a symbolic ``State`` would almost never satisfy all the
invariants, so CrossHair would spend its time failing the precondition and find nothing. Instead
each contract takes a short script of steps (:class:`Op`) and builds a *reachable* state by
running the spec's own transitions from the empty queue. The transition under test then gets
symbolic arguments: any receipt (see :func:`any_receipt`: live, stale, future, attempt 0,
unknown id, another queue's, a terminal message's), any id or body, any time. The promises
checked on every one:

- every state invariant holds after the step, and every step invariant holds for it;
- a call that is rejected (or a receipt that is not live) returns the very same state object;
- capacity is never exceeded;
- the result is the one the contract's transition table gives.
"""

from __future__ import annotations

import enum
import math

from spec.invariants import one_by_one, step_violations, violations
from spec.state import Config, Receipt, State, Status, Time, initial
from spec.transitions import (
    MAX_BATCH,
    cancel,
    change_visibility,
    change_visibility_batch,
    delete,
    delete_batch,
    expire,
    purge,
    receive,
    receive_batch,
    retry,
    send,
    send_batch,
)

#: The ids a script may send. Three are enough for every ordering question (head, middle, tail).
IDS = ("a", "b", "c")
#: Longest script: long enough to send two messages, receive both, let time pass and expire.
MAX_SCRIPT = 5
#: An id that no script ever sends.
UNKNOWN_ID = "z"

Node = tuple[State, Time]


class Op(enum.Enum):
    """One step of a script. Each runs a real transition; a step that does not apply is skipped."""

    SEND = "send the next id of IDS (duplicates are send_contract's business)"
    SEND_DELAYED = "send the next id of IDS with a delay of 2"
    RECEIVE = "receive with visibility timeout 1"
    RECEIVE_LONG = "receive with visibility timeout 3"
    RECEIVE_FOREVER = "receive, never to expire"
    DELETE = "delete the oldest delivery"
    RETRY = "retry the oldest delivery"
    EXTEND = "change the oldest delivery's visibility to 2"
    RELEASE = "change the oldest delivery's visibility to 0"
    CANCEL_HEAD = "cancel the head of VISIBLE"
    CANCEL_NEWEST = "cancel the newest delivery"
    TICK = "the clock moves on by 1"
    EXPIRE = "the sweeper runs"


_RECEIVE_TIMEOUTS: dict[Op, Time | None] = {
    Op.RECEIVE: 1.0,
    Op.RECEIVE_LONG: 3.0,
    Op.RECEIVE_FOREVER: None,
}


def _oldest_receipt(s: State) -> Receipt | None:
    """The live receipt of the message received longest ago, if any is in flight."""
    if not s.in_flight:
        return None
    m = s.get(s.in_flight[0])
    assert m is not None
    return Receipt(s.queue, m.id, m.attempt)


def step(node: Node, op: Op) -> Node:
    """Run one script step on (state, now)."""
    s, now = node
    if op in (Op.SEND, Op.SEND_DELAYED):
        if len(s.messages) == len(IDS):
            return node
        id = IDS[len(s.messages)]
        return send(s, id, f"body-{id}", 2.0 if op is Op.SEND_DELAYED else 0.0, now)[0], now
    if op in _RECEIVE_TIMEOUTS:
        return receive(s, now, _RECEIVE_TIMEOUTS[op])[0], now
    if op is Op.CANCEL_HEAD:
        return (cancel(s, s.visible[0])[0] if s.visible else s), now
    if op is Op.CANCEL_NEWEST:
        return (cancel(s, s.in_flight[-1])[0] if s.in_flight else s), now
    if op is Op.TICK:
        return s, now + 1.0
    if op is Op.EXPIRE:
        return expire(s, now)[0], now
    r = _oldest_receipt(s)
    if r is None:
        return node
    if op is Op.DELETE:
        return delete(s, r)[0], now
    if op is Op.RETRY:
        return retry(s, r)[0], now
    return change_visibility(s, r, 2.0 if op is Op.EXTEND else 0.0, now)[0], now


def reach(capacity: int | None, max_receives: int | None, script: list[Op]) -> Node:
    """The state and clock reached from the empty queue (time 0) by running ``script``."""
    node: Node = (initial(Config(capacity, max_receives)), 0.0)
    for op in script:
        node = step(node, op)
    return node


def any_receipt(s: State, pick: int, delta: int, foreign: bool) -> tuple[Receipt, bool]:
    """Any receipt at all, named relative to ``s`` so the search lands on the interesting ones.

    ``pick`` chooses an accepted message (out of range: an id never accepted), ``delta`` is
    added to its attempt (0: its current attempt; negative: stale or attempt 0; positive: a
    future attempt), ``foreign`` makes it another queue's. Liveness depends only on equality
    with (queue, id, attempt), so these cover every kind of receipt there is.

    Also returns whether the receipt is live, decided from the contract's definition (this
    queue, an in-flight message, its current attempt) rather than by :meth:`State.is_live`, so
    a bug there is caught too.
    """
    if 0 <= pick < len(s.messages):
        m = s.messages[pick]
        live = not foreign and delta == 0 and m.status is Status.IN_FLIGHT
        return Receipt(s.queue + int(foreign), m.id, m.attempt + delta), live
    return Receipt(s.queue + int(foreign), UNKNOWN_ID, delta), False


def _valid(capacity: int | None, max_receives: int | None, script: list[Op]) -> bool:
    """The shared precondition: small bounds, so the search stays within reach."""
    return (
        (capacity is None or 0 <= capacity <= 3)
        and (max_receives is None or 1 <= max_receives <= 3)
        and len(script) <= MAX_SCRIPT
    )


def _time_ok(t: Time) -> bool:
    return not math.isnan(t) and not math.isinf(t) and 0 <= t <= 1e6


_ACTIVE = (Status.DELAYED, Status.VISIBLE, Status.IN_FLIGHT)


def _step_ok(before: State, after: State, now: Time | None = None) -> bool:
    """Every invariant holds after the step, and every step invariant holds for the step."""
    bad = violations(after) + step_violations(before, after, now)
    assert not bad, bad
    cap = after.config.capacity
    active = sum(1 for m in after.messages if m.status in _ACTIVE)
    assert cap is None or active <= cap, "CapacityBound"
    return True


def _batch_ok(
    before: State, name: str, arguments: dict[str, object], after: State, result: object
) -> bool:
    """``BatchAtomic``: the batch is its entries one after another, nothing in between.

    (A helper of the contracts, not one itself: CrossHair takes a function whose body begins
    with an ``assert`` for a contract, so this one begins with the computation.)"""
    expected = one_by_one(before, name, arguments)
    assert (after, result) == expected, "BatchAtomic"
    return True


# -- one contract per transition ----------------------------------------------------------------


def send_contract(
    capacity: int | None,
    max_receives: int | None,
    script: list[Op],
    id: str,
    body: str,
    delay: Time = 0.0,
    dt: Time = 0.0,
) -> None:
    """``send`` accepts exactly a fresh id when there is room: at the tail of ``VISIBLE``
    without a delay, ``DELAYED`` until ``now + delay`` (its timer last) with one."""
    assert _valid(capacity, max_receives, script)
    assert _time_ok(delay) and _time_ok(dt)
    before, now = reach(capacity, max_receives, script)
    now += dt
    after, ok = send(before, id, body, delay, now)
    assert _step_ok(before, after, now)
    fresh = before.get(id) is None
    room = capacity is None or before.active < capacity
    assert ok == (fresh and room)
    if not ok:
        assert after is before
        return
    m = after.get(id)
    assert m is not None and m.body == body and m.attempt == 0
    if delay == 0:
        assert m.status is Status.VISIBLE and after.visible == (*before.visible, id)
    else:
        assert m.status is Status.DELAYED and m.visible_at == now + delay
        assert after.delayed == (*before.delayed, id) and after.timers == (*before.timers, id)
        assert after.visible == before.visible


#: The ids a batch may name: the script's, and two it never sends.
BATCH_IDS = (*IDS, "d", "e")


def send_batch_contract(
    capacity: int | None,
    max_receives: int | None,
    script: list[Op],
    picks: list[int],
    delay: Time,
    dt: Time,
) -> None:
    """``send_batch`` accepts all its entries, in order, or none (state unchanged): all iff
    the ids are distinct and fresh and they all fit. Odd entries ask for ``delay``."""
    assert _valid(capacity, max_receives, script)
    assert 1 <= len(picks) <= MAX_BATCH and _time_ok(delay) and _time_ok(dt)
    before, now = reach(capacity, max_receives, script)
    now += dt
    ids = [BATCH_IDS[p % len(BATCH_IDS)] for p in picks]
    entries = tuple((id, f"b{k}", delay if k % 2 else 0.0) for k, id in enumerate(ids))
    after, ok = send_batch(before, entries, now)
    assert _step_ok(before, after, now)
    assert _batch_ok(before, "send_batch", dict(entries=entries, now=now), after, ok)
    fits = capacity is None or before.active + len(ids) <= capacity
    assert ok == (len(set(ids)) == len(ids) and all(before.get(i) is None for i in ids) and fits)
    if not ok:
        assert after is before
        return
    assert after.active == before.active + len(ids)
    assert after.visible[: len(before.visible)] == before.visible
    assert after.visible[len(before.visible) :] == tuple(id for id, _, d in entries if d == 0)


def receive_contract(
    capacity: int | None,
    max_receives: int | None,
    script: list[Op],
    dt: Time,
    vt: Time | None,
) -> None:
    """``receive`` hands out the head with the next attempt and a live receipt, or nothing."""
    assert _valid(capacity, max_receives, script)
    assert _time_ok(dt)
    assert vt is None or _time_ok(vt)
    before, now = reach(capacity, max_receives, script)
    now += dt
    after, d = receive(before, now, vt)
    assert _step_ok(before, after)
    if not before.visible:
        assert d is None and after is before
        return
    assert d is not None and d.id == before.visible[0]
    old = before.get(d.id)
    m = after.get(d.id)
    assert old is not None and m is not None
    assert d.attempt == old.attempt + 1 == m.attempt and d.body == old.body
    assert m.status is Status.IN_FLIGHT and d.receipt == Receipt(before.queue, d.id, d.attempt)
    assert m.deadline == (None if vt is None else now + vt)
    assert after.in_flight == (*before.in_flight, d.id)


def receive_batch_contract(
    capacity: int | None,
    max_receives: int | None,
    script: list[Op],
    dt: Time,
    n: int,
    vt: Time | None,
) -> None:
    """``receive_batch`` hands out the first ``min(n, visible)`` visible messages in FIFO
    order, each as ``receive`` with the same deadline, or nothing (state unchanged)."""
    assert _valid(capacity, max_receives, script)
    assert _time_ok(dt) and 1 <= n <= MAX_BATCH
    assert vt is None or _time_ok(vt)
    before, now = reach(capacity, max_receives, script)
    now += dt
    after, ds = receive_batch(before, now, n, vt)
    assert _step_ok(before, after, now)
    assert _batch_ok(before, "receive_batch", dict(now=now, n=n, vt=vt), after, ds)
    taken = before.visible[:n]
    assert tuple(d.id for d in ds) == taken
    if not ds:
        assert after is before
        return
    assert after.visible == before.visible[len(taken) :]
    assert after.in_flight == (*before.in_flight, *taken)
    for d in ds:
        m, old = after.get(d.id), before.get(d.id)
        assert m is not None and old is not None and d.attempt == old.attempt + 1 == m.attempt
        assert m.deadline == (None if vt is None else now + vt)
        assert d.receipt == Receipt(before.queue, d.id, d.attempt) and after.is_live(d.receipt)


def delete_contract(
    capacity: int | None,
    max_receives: int | None,
    script: list[Op],
    pick: int,
    delta: int,
    foreign: bool,
) -> None:
    """``delete`` acts exactly on a live receipt: the message is ``DONE``; else nothing changes."""
    assert _valid(capacity, max_receives, script)
    before, _ = reach(capacity, max_receives, script)
    r, live = any_receipt(before, pick, delta, foreign)
    after, ok = delete(before, r)
    assert _step_ok(before, after)
    assert ok == live
    if ok:
        m = after.get(r.id)
        assert m is not None and m.status is Status.DONE and not after.is_live(r)
        assert after.active == before.active - 1
    else:
        assert after is before


def retry_contract(
    capacity: int | None,
    max_receives: int | None,
    script: list[Op],
    pick: int,
    delta: int,
    foreign: bool,
) -> None:
    """``retry`` releases exactly a live delivery, to the tail of ``VISIBLE`` or to ``DEAD``."""
    assert _valid(capacity, max_receives, script)
    before, _ = reach(capacity, max_receives, script)
    r, live = any_receipt(before, pick, delta, foreign)
    after, ok = retry(before, r)
    assert _step_ok(before, after)
    assert ok == live
    if not ok:
        assert after is before
        return
    assert not after.is_live(r)
    if max_receives is not None and r.attempt >= max_receives:
        assert after.dead == (*before.dead, r.id) and after.visible == before.visible
    else:
        assert after.visible == (*before.visible, r.id) and after.dead == before.dead


def change_visibility_contract(
    capacity: int | None,
    max_receives: int | None,
    script: list[Op],
    pick: int,
    delta: int,
    foreign: bool,
    timeout: Time,
    dt: Time,
) -> None:
    """``change_visibility`` sets the deadline to now + timeout (0 releases), only when live."""
    assert _valid(capacity, max_receives, script)
    assert _time_ok(timeout) and _time_ok(dt)
    before, now = reach(capacity, max_receives, script)
    now += dt
    r, live = any_receipt(before, pick, delta, foreign)
    after, ok = change_visibility(before, r, timeout, now)
    assert _step_ok(before, after)
    assert ok == live
    if not ok:
        assert after is before
        return
    m = after.get(r.id)
    assert m is not None
    if timeout == 0:
        assert m.status is not Status.IN_FLIGHT and not after.is_live(r)
    else:
        assert after.is_live(r) and m.deadline == now + timeout
        assert after.in_flight == before.in_flight and after.visible == before.visible


def delete_batch_contract(
    capacity: int | None,
    max_receives: int | None,
    script: list[Op],
    receipts: list[tuple[int, int, bool]],
) -> None:
    """``delete_batch`` is each receipt's ``delete`` in order: a live one is done (once: the
    same receipt again gives ``False``), anything else gives ``False`` and changes nothing."""
    assert _valid(capacity, max_receives, script)
    assert 1 <= len(receipts) <= MAX_BATCH
    before, _ = reach(capacity, max_receives, script)
    named = [any_receipt(before, *r) for r in receipts]
    rs = tuple(r for r, _ in named)
    after, results = delete_batch(before, rs)
    assert _step_ok(before, after)
    assert _batch_ok(before, "delete_batch", dict(receipts=rs), after, results)
    seen: set[Receipt] = set()
    for (r, live), ok in zip(named, results, strict=True):
        assert ok == (live and r not in seen)
        seen.add(r)
        assert not after.is_live(r)
    assert after.active == before.active - sum(results)
    if not any(results):
        assert after is before


def change_visibility_batch_contract(
    capacity: int | None,
    max_receives: int | None,
    script: list[Op],
    receipts: list[tuple[int, int, bool]],
    timeout: Time,
    dt: Time,
) -> None:
    """``change_visibility_batch`` is each change in order; the timers keep their order."""
    assert _valid(capacity, max_receives, script)
    assert 1 <= len(receipts) <= MAX_BATCH and _time_ok(timeout) and _time_ok(dt)
    before, now = reach(capacity, max_receives, script)
    now += dt
    named = [any_receipt(before, *r) for r in receipts]
    changes = tuple((r, timeout) for r, _ in named)
    after, results = change_visibility_batch(before, changes, now)
    assert _step_ok(before, after, now)
    assert _batch_ok(
        before, "change_visibility_batch", dict(changes=changes, now=now), after, results
    )
    # A receipt repeated: with a timeout the second change is live again, with 0 it is not.
    assert results[0] == named[0][1]
    if timeout > 0:
        assert results == tuple(live for _, live in named)
        assert after.timers == before.timers and after.in_flight == before.in_flight
    if not any(results):
        assert after is before


def purge_contract(capacity: int | None, max_receives: int | None, script: list[Op]) -> None:
    """``purge`` cancels every active message at once, and says how many; the rest stay."""
    assert _valid(capacity, max_receives, script)
    before, _ = reach(capacity, max_receives, script)
    after, count = purge(before)
    assert _step_ok(before, after)
    assert _batch_ok(before, "purge", {}, after, count)
    assert count == before.active and after.active == 0
    assert after.visible == after.in_flight == after.delayed == after.timers == ()
    assert after.dead == before.dead
    for m in before.messages:
        a = after.get(m.id)
        assert a is not None
        assert a.status is (Status.CANCELLED if m.status.active else m.status)
        assert a.attempt == m.attempt
    if count == 0:
        assert after is before


def cancel_contract(
    capacity: int | None, max_receives: int | None, script: list[Op], id: str
) -> None:
    """``cancel`` ends exactly an active message; the others keep their order."""
    assert _valid(capacity, max_receives, script)
    before, _ = reach(capacity, max_receives, script)
    after, ok = cancel(before, id)
    assert _step_ok(before, after)
    old = before.get(id)
    assert ok == (old is not None and old.status.active)
    if not ok:
        assert after is before
        return
    m = after.get(id)
    assert m is not None and m.status is Status.CANCELLED
    assert after.visible == tuple(x for x in before.visible if x != id)
    assert after.in_flight == tuple(x for x in before.in_flight if x != id)
    assert after.active == before.active - 1


def expire_contract(
    capacity: int | None, max_receives: int | None, script: list[Op], dt: Time
) -> None:
    """``expire`` fires exactly the due timers, delays and deadlines, by due time, ties in the
    order the timers were started (``timers``)."""
    assert _valid(capacity, max_receives, script)
    assert _time_ok(dt)
    before, now = reach(capacity, max_receives, script)
    now += dt
    after, fired = expire(before, now)
    assert _step_ok(before, after, now)
    due = {m.id for m in before.messages if m.due is not None and m.due <= now}
    assert set(fired) == due and len(fired) == len(due)
    if not fired:
        assert after is before
    keys = []
    for id in fired:
        m = before.get(id)
        assert m is not None and m.due is not None
        keys.append((m.due, before.timers.index(id)))
    assert keys == sorted(keys)
    # Delays fired become visible at the tail, in firing order, after the survivors.
    assert after.visible[: len(before.visible)] == before.visible
    newly = after.visible[len(before.visible) :]
    back = {m.id for m in after.messages if m.status is Status.VISIBLE}
    assert newly == tuple(id for id in fired if id in back)
    for m in after.messages:
        assert m.due is None or m.due > now
