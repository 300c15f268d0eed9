"""The transitions as pure functions: ``(state, args) -> (state, result)``.

One function per row of the contract's table, named as in the TLA+ spec (``Send`` is ``send``,
``Receive`` is ``receive``, ...) and as the ``impl.Queue`` method that does the same thing. A
rejected call returns the *same* state object it was given, so "changes nothing" is checkable
with ``is``.

Time is always an argument (``now``); nothing here reads a clock. This module is the obviously
correct version: it favours clarity over speed, and the threaded implementation is tested
against it step by step.
"""

from __future__ import annotations

import math
from dataclasses import replace

from spec.state import Config, Delivery, Msg, Receipt, State, Status, Time


def _check_time(name: str, value: Time) -> None:
    if math.isnan(value) or math.isinf(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


# ---------------------------------------------------------------------------------------------
# send(id, body): accepted iff the id was never accepted here and active < capacity.
# ---------------------------------------------------------------------------------------------


def can_send(state: State, id: str) -> bool:
    """Whether ``send(state, id, ...)`` would accept: a fresh id and room for one more."""
    cap = state.config.capacity
    return state.get(id) is None and (cap is None or state.active < cap)


def send(state: State, id: str, body: str) -> tuple[State, bool]:
    """Append a new message to the tail of ``VISIBLE``; or reject, leaving the state unchanged.

    Rejected when the id was ever accepted by this queue (``IdsReserved``) or when the queue
    already holds ``capacity`` active messages (``CapacityBound``).
    """
    if not can_send(state, id):
        return state, False
    new = state.with_msg(Msg(id=id, body=body))
    return replace(new, visible=(*state.visible, id)), True


# ---------------------------------------------------------------------------------------------
# receive(now, vt): the head of VISIBLE becomes IN_FLIGHT, attempt + 1, deadline now + vt.
# ---------------------------------------------------------------------------------------------


def receive(state: State, now: Time, vt: Time | None) -> tuple[State, Delivery | None]:
    """Deliver the head of ``VISIBLE`` in one atomic step, or return ``None`` if nothing is visible.

    The message becomes ``IN_FLIGHT`` with ``attempt + 1`` and deadline ``now + vt`` (no deadline
    when ``vt`` is ``None``), and the delivery carries a fresh receipt for that attempt. Messages
    already in flight are never handed out again until released.
    """
    _check_time("now", now)
    if vt is not None:
        _check_time("visibility_timeout", vt)
    if not state.visible:
        return state, None
    head = state.visible[0]
    m = state.get(head)
    assert m is not None and m.status is Status.VISIBLE
    attempt = m.attempt + 1
    delivered = replace(
        m,
        status=Status.IN_FLIGHT,
        attempt=attempt,
        deadline=None if vt is None else now + vt,
    )
    new = replace(
        state.with_msg(delivered),
        visible=state.visible[1:],
        in_flight=(*state.in_flight, head),
    )
    receipt = Receipt(queue=state.queue, id=head, attempt=attempt)
    return new, Delivery(id=head, body=m.body, attempt=attempt, receipt=receipt)


# ---------------------------------------------------------------------------------------------
# release: what retry, change_visibility(0) and expiry do to a live in-flight message.
# ---------------------------------------------------------------------------------------------


def dead_letters_on_release(config: Config, attempt: int) -> bool:
    """The dead-letter policy: a release after ``max_receives`` deliveries kills the message."""
    return config.max_receives is not None and attempt >= config.max_receives


def release(state: State, id: str) -> State:
    """Take an in-flight message back: dead-letter it, or append it to the tail of ``VISIBLE``.

    Precondition: ``id`` is ``IN_FLIGHT``. The attempt counter is kept, so the next delivery is
    ``attempt + 1``; the message never jumps back to its old place in the FIFO.
    """
    m = state.get(id)
    assert m is not None and m.status is Status.IN_FLIGHT, f"release of {id!r}: not in flight"
    in_flight = tuple(x for x in state.in_flight if x != id)
    if dead_letters_on_release(state.config, m.attempt):
        return replace(
            state.with_msg(replace(m, status=Status.DEAD, deadline=None)),
            in_flight=in_flight,
            dead=(*state.dead, id),
        )
    return replace(
        state.with_msg(replace(m, status=Status.VISIBLE, deadline=None)),
        in_flight=in_flight,
        visible=(*state.visible, id),
    )


# ---------------------------------------------------------------------------------------------
# delete / retry / change_visibility: act only through a live receipt.
# ---------------------------------------------------------------------------------------------


def delete(state: State, receipt: Receipt) -> tuple[State, bool]:
    """Acknowledge a delivery: its message becomes ``DONE``, freeing capacity.

    Either the receipt is live and the message is done, or the result is ``False`` and the state
    is returned unchanged (stale, future, zero or foreign receipts; unknown or terminal ids).
    """
    if not state.is_live(receipt):
        return state, False
    m = state.get(receipt.id)
    assert m is not None
    return (
        replace(
            state.with_msg(replace(m, status=Status.DONE, deadline=None)),
            in_flight=tuple(x for x in state.in_flight if x != receipt.id),
        ),
        True,
    )


def retry(state: State, receipt: Receipt) -> tuple[State, bool]:
    """Give a delivery back at once: *release* it. ``False`` and unchanged unless live."""
    if not state.is_live(receipt):
        return state, False
    return release(state, receipt.id), True


def change_visibility(
    state: State, receipt: Receipt, timeout: Time, now: Time
) -> tuple[State, bool]:
    """Set a live delivery's deadline to ``now + timeout`` (from now, not added to the old one).

    ``timeout == 0`` releases the message at once, like ``retry``. ``False`` and unchanged
    unless the receipt is live.
    """
    _check_time("timeout", timeout)
    _check_time("now", now)
    if not state.is_live(receipt):
        return state, False
    if timeout == 0:
        return release(state, receipt.id), True
    m = state.get(receipt.id)
    assert m is not None
    return state.with_msg(replace(m, deadline=now + timeout)), True


# ---------------------------------------------------------------------------------------------
# cancel(id): an active message becomes CANCELLED; the rest keep their order.
# ---------------------------------------------------------------------------------------------


def cancel(state: State, id: str) -> tuple[State, bool]:
    """Cancel a visible or in-flight message, killing its receipt and freeing capacity.

    The other visible messages keep their FIFO order. Unknown ids and terminal messages give
    ``False`` and leave the state unchanged.
    """
    m = state.get(id)
    if m is None or not m.status.active:
        return state, False
    return (
        replace(
            state.with_msg(replace(m, status=Status.CANCELLED, deadline=None)),
            visible=tuple(x for x in state.visible if x != id),
            in_flight=tuple(x for x in state.in_flight if x != id),
        ),
        True,
    )


# ---------------------------------------------------------------------------------------------
# expire(now): the sweeper. Every in-flight deadline <= now is released, earliest first.
# ---------------------------------------------------------------------------------------------


def due(state: State, now: Time) -> tuple[str, ...]:
    """In-flight ids whose deadline is ``<= now``, by deadline, ties broken by receive order."""
    order = {id: i for i, id in enumerate(state.in_flight)}
    expired = [
        m
        for m in state.messages
        if m.status is Status.IN_FLIGHT and m.deadline is not None and m.deadline <= now
    ]
    expired.sort(key=lambda m: (m.deadline, order[m.id]))
    return tuple(m.id for m in expired)


def expire(state: State, now: Time) -> tuple[State, tuple[str, ...]]:
    """Release every in-flight message whose deadline has passed; return their ids in order.

    Until this runs, a passed deadline changes nothing: the old receipt stays live and a late
    delete still wins. Once it has run, that receipt is stale.
    """
    _check_time("now", now)
    released = due(state, now)
    for id in released:
        state = release(state, id)
    return state, released


def next_deadline(state: State) -> Time | None:
    """The earliest in-flight deadline, if any: when the sweeper next has work."""
    deadlines = [
        m.deadline
        for m in state.messages
        if m.status is Status.IN_FLIGHT and m.deadline is not None
    ]
    return min(deadlines) if deadlines else None
