"""Contracts on the transitions, for CrossHair to search for counterexamples.

Each ``*_contract`` function is one condition in CrossHair's ``asserts`` style: its leading
``assert`` statements are preconditions, every later ``assert`` is a promise that must hold for
all inputs meeting them. CrossHair explores the inputs symbolically; pytest
(``tests/test_spec_crosshair.py``) calls the same functions on concrete examples.

Run it (a bounded search: at most 15 CPU seconds per contract, about 1 m 45 s in all)::

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

from spec.invariants import step_violations, violations
from spec.state import Config, Receipt, State, Status, Time, initial
from spec.transitions import cancel, change_visibility, delete, expire, receive, retry, send

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
    if op is Op.SEND:
        if len(s.messages) == len(IDS):
            return node
        id = IDS[len(s.messages)]
        return send(s, id, f"body-{id}")[0], now
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


def _step_ok(before: State, after: State) -> bool:
    """Every invariant holds after the step, and every step invariant holds for the step."""
    bad = violations(after) + step_violations(before, after)
    assert not bad, bad
    cap = after.config.capacity
    active = sum(1 for m in after.messages if m.status in (Status.VISIBLE, Status.IN_FLIGHT))
    assert cap is None or active <= cap, "CapacityBound"
    return True


# -- one contract per transition ----------------------------------------------------------------


def send_contract(
    capacity: int | None, max_receives: int | None, script: list[Op], id: str, body: str
) -> None:
    """``send`` accepts exactly a fresh id when there is room, at the tail of ``VISIBLE``."""
    assert _valid(capacity, max_receives, script)
    before, _ = reach(capacity, max_receives, script)
    after, ok = send(before, id, body)
    assert _step_ok(before, after)
    fresh = before.get(id) is None
    room = capacity is None or before.active < capacity
    assert ok == (fresh and room)
    if ok:
        m = after.get(id)
        assert m is not None and m.body == body and m.attempt == 0
        assert after.visible == (*before.visible, id)
    else:
        assert after is before


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
    """``expire`` releases exactly the due deliveries, by deadline then receive order."""
    assert _valid(capacity, max_receives, script)
    assert _time_ok(dt)
    before, now = reach(capacity, max_receives, script)
    now += dt
    after, released = expire(before, now)
    assert _step_ok(before, after)
    due = {
        m.id
        for m in before.messages
        if m.status is Status.IN_FLIGHT and m.deadline is not None and m.deadline <= now
    }
    assert set(released) == due and len(released) == len(due)
    if not released:
        assert after is before
    keys = []
    for id in released:
        m = before.get(id)
        assert m is not None and m.deadline is not None
        keys.append((m.deadline, before.in_flight.index(id)))
    assert keys == sorted(keys)
    for m in after.messages:
        assert not (m.status is Status.IN_FLIGHT and m.deadline is not None and m.deadline <= now)
