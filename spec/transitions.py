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
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from spec.state import Config, Delivery, Msg, Receipt, State, Status, Time

#: The most entries a batch may hold (SQS's limit): ``send_batch``, ``receive_batch``'s ``n``,
#: ``delete_batch`` and ``change_visibility_batch``.
MAX_BATCH: Final = 10


def _check_time(name: str, value: Time) -> None:
    if math.isnan(value) or math.isinf(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


def _check_number(name: str, value: object) -> None:
    """``TypeError`` unless ``value`` is an int or float (not a bool); then as ``_check_time``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {value!r}")
    _check_time(name, value)


def _check_batch(name: str, items: object) -> Sequence[object]:
    """A batch argument must be a list or tuple of 1 to ``MAX_BATCH`` entries."""
    if not isinstance(items, list | tuple):
        raise TypeError(f"{name} must be a list or tuple, got {items!r}")
    if not 1 <= len(items) <= MAX_BATCH:
        raise ValueError(f"{name} must hold 1 to {MAX_BATCH} entries, got {len(items)}")
    return items


def _without(ids: tuple[str, ...], id: str) -> tuple[str, ...]:
    return tuple(x for x in ids if x != id)


# ---------------------------------------------------------------------------------------------
# send(id, body, delay): accepted iff the id was never accepted here and active < capacity.
# ---------------------------------------------------------------------------------------------


def can_send(state: State, id: str) -> bool:
    """Whether ``send(state, id, ...)`` would accept: a fresh id and room for one more."""
    cap = state.config.capacity
    return state.get(id) is None and (cap is None or state.active < cap)


def send(
    state: State, id: str, body: str, delay: Time | None = None, now: Time = 0.0
) -> tuple[State, bool]:
    """Accept a new message, or reject it, leaving the state unchanged.

    With a delay of 0 the message is appended to the tail of ``VISIBLE``; with a delay > 0 it
    is ``DELAYED`` with ``visible_at = now + delay``, and its timer is started (appended to
    ``timers``). ``delay=None`` means the queue's (``Config.delay``, 0 unless configured).

    Rejected when the id was ever accepted by this queue (``IdsReserved``) or when the queue
    already holds ``capacity`` active messages (``CapacityBound``).
    """
    d = state.config.delay if delay is None else delay
    _check_number("delay", d)
    _check_number("now", now)
    if not can_send(state, id):
        return state, False
    if d == 0:
        new = state.with_msg(Msg(id=id, body=body))
        return replace(new, visible=(*state.visible, id)), True
    new = state.with_msg(Msg(id=id, body=body, status=Status.DELAYED, visible_at=now + d))
    return replace(new, delayed=(*state.delayed, id), timers=(*state.timers, id)), True


def send_batch(
    state: State, entries: Sequence[tuple[str, str, Time | None]], now: Time = 0.0
) -> tuple[State, bool]:
    """Accept every entry ``(id, body, delay)``, each as :func:`send` in order, in one step; or
    none of them, leaving the state unchanged (all or none; contract: ``send_batch``).

    Accepted iff the ids are distinct among themselves, none was ever accepted by this queue,
    and ``active + len(entries) <= capacity``. ``ValueError``/``TypeError`` (naming the entry)
    for a batch of 0 or more than ``MAX_BATCH`` entries or an entry that is not
    ``(id: str, body: str, delay: number >= 0 or None)``.
    """
    _check_batch("entries", entries)
    _check_number("now", now)
    for k, entry in enumerate(entries):
        if not isinstance(entry, tuple) or len(entry) != 3:
            raise TypeError(f"entries[{k}] must be an (id, body, delay) tuple, got {entry!r}")
        id, body, delay = entry
        if not isinstance(id, str):
            raise TypeError(f"entries[{k}].id must be a str, got {id!r}")
        if not isinstance(body, str):
            raise TypeError(f"entries[{k}].body must be a str, got {body!r}")
        if delay is not None:
            _check_number(f"entries[{k}].delay", delay)
    ids = [id for id, _, _ in entries]
    cap = state.config.capacity
    if (
        len(set(ids)) != len(ids)
        or any(state.get(id) is not None for id in ids)
        or (cap is not None and state.active + len(ids) > cap)
    ):
        return state, False
    after = state
    for id, body, delay in entries:
        after, ok = send(after, id, body, delay, now)
        assert ok, f"send_batch: {id!r} rejected after the batch was accepted"
    return after, True


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
        timers=(*state.timers, head),
    )
    receipt = Receipt(queue=state.queue, id=head, attempt=attempt)
    return new, Delivery(id=head, body=m.body, attempt=attempt, receipt=receipt)


def receive_batch(
    state: State, now: Time, n: int, vt: Time | None
) -> tuple[State, tuple[Delivery, ...]]:
    """Deliver the first ``min(n, len(visible))`` visible messages, in FIFO order, each as
    :func:`receive` with the same deadline ``now + vt``, in one step.

    Returns the deliveries in order: fewer than ``n`` when fewer are visible, none (and the
    same state) when nothing is. ``n`` outside ``1..MAX_BATCH`` is a ``ValueError``.
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int, got {n!r}")
    if not 1 <= n <= MAX_BATCH:
        raise ValueError(f"n must be in 1..{MAX_BATCH}, got {n}")
    _check_number("now", now)
    if vt is not None:
        _check_number("visibility_timeout", vt)
    deliveries: list[Delivery] = []
    for _ in range(min(n, len(state.visible))):
        state, d = receive(state, now, vt)
        assert d is not None
        deliveries.append(d)
    return state, tuple(deliveries)


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
    in_flight = _without(state.in_flight, id)
    timers = _without(state.timers, id)
    if dead_letters_on_release(state.config, m.attempt):
        return replace(
            state.with_msg(replace(m, status=Status.DEAD, deadline=None)),
            in_flight=in_flight,
            timers=timers,
            dead=(*state.dead, id),
        )
    return replace(
        state.with_msg(replace(m, status=Status.VISIBLE, deadline=None)),
        in_flight=in_flight,
        timers=timers,
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
            in_flight=_without(state.in_flight, receipt.id),
            timers=_without(state.timers, receipt.id),
        ),
        True,
    )


def delete_batch(state: State, receipts: Sequence[Receipt]) -> tuple[State, tuple[bool, ...]]:
    """Each receipt as :func:`delete`, in order, in one step; one result per receipt.

    A receipt repeated in the batch gives ``False`` the second time (its message is done by
    then). ``ValueError``/``TypeError`` for 0 or more than ``MAX_BATCH`` receipts, or an entry
    that is not a :class:`Receipt`.
    """
    _check_batch("receipts", receipts)
    for k, r in enumerate(receipts):
        if not isinstance(r, Receipt):
            raise TypeError(f"receipts[{k}] must be a Receipt, got {r!r}")
    results: list[bool] = []
    for r in receipts:
        state, ok = delete(state, r)
        results.append(ok)
    return state, tuple(results)


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
    unless the receipt is live. The timer keeps its place in ``timers`` (the tie order), the
    place of the receive that delivered the message, even if that receive set no deadline.
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


def change_visibility_batch(
    state: State, changes: Sequence[tuple[Receipt, Time]], now: Time
) -> tuple[State, tuple[bool, ...]]:
    """Each ``(receipt, timeout)`` as :func:`change_visibility`, in order, in one step; one
    result per change.

    ``ValueError``/``TypeError`` (naming the entry) for 0 or more than ``MAX_BATCH`` changes or
    an entry that is not ``(Receipt, timeout >= 0)``; all are checked before any is applied.
    """
    _check_batch("changes", changes)
    _check_number("now", now)
    for k, change in enumerate(changes):
        if not isinstance(change, tuple) or len(change) != 2:
            raise TypeError(f"changes[{k}] must be a (receipt, timeout) tuple, got {change!r}")
        receipt, timeout = change
        if not isinstance(receipt, Receipt):
            raise TypeError(f"changes[{k}].receipt must be a Receipt, got {receipt!r}")
        _check_number(f"changes[{k}].timeout", timeout)
    results: list[bool] = []
    for receipt, timeout in changes:
        state, ok = change_visibility(state, receipt, timeout, now)
        results.append(ok)
    return state, tuple(results)


# ---------------------------------------------------------------------------------------------
# cancel(id) / purge(): active messages become CANCELLED; the rest keep their order.
# ---------------------------------------------------------------------------------------------


def cancel(state: State, id: str) -> tuple[State, bool]:
    """Cancel a delayed, visible or in-flight message, killing its receipt (and timer) and
    freeing capacity.

    The other visible messages keep their FIFO order. Unknown ids and terminal messages give
    ``False`` and leave the state unchanged.
    """
    m = state.get(id)
    if m is None or not m.status.active:
        return state, False
    return (
        replace(
            state.with_msg(replace(m, status=Status.CANCELLED, deadline=None, visible_at=None)),
            visible=_without(state.visible, id),
            in_flight=_without(state.in_flight, id),
            delayed=_without(state.delayed, id),
            timers=_without(state.timers, id),
        ),
        True,
    )


def purge(state: State) -> tuple[State, int]:
    """Cancel every active (delayed, visible, in-flight) message in one step; return how many.

    Every live receipt dies and every timer stops; dead letters and finished messages are
    untouched. Nothing active: 0 and the same state.
    """
    active = [m for m in state.messages if m.status.active]
    if not active:
        return state, 0
    cancelled = {
        m.id: replace(m, status=Status.CANCELLED, deadline=None, visible_at=None) for m in active
    }
    return (
        replace(
            state,
            messages=tuple(cancelled.get(m.id, m) for m in state.messages),
            visible=(),
            in_flight=(),
            delayed=(),
            timers=(),
        ),
        len(active),
    )


# ---------------------------------------------------------------------------------------------
# expire(now): the sweeper. Every timer due at or before now fires: delays and deadlines, in the
# one timer order (by due time, ties in the order the timers were started).
# ---------------------------------------------------------------------------------------------


def due(state: State, now: Time) -> tuple[str, ...]:
    """Ids whose timer is due at or before ``now``: ``DELAYED`` messages by ``visible_at`` and
    ``IN_FLIGHT`` ones by deadline, in one order: by due time, ties by their place in
    ``timers`` (the order the timers were started)."""
    order = {id: i for i, id in enumerate(state.timers)}
    expired = [(t, m.id) for m in state.messages if (t := m.due) is not None and t <= now]
    expired.sort(key=lambda e: (e[0], order.get(e[1], len(order)), e[1]))
    return tuple(id for _, id in expired)


def fire_delay(state: State, id: str) -> State:
    """A delay firing: the ``DELAYED`` message is appended to the tail of ``VISIBLE`` (attempt
    unchanged, ``visible_at`` cleared) and its timer stops."""
    m = state.get(id)
    assert m is not None and m.status is Status.DELAYED, f"fire_delay of {id!r}: not delayed"
    return replace(
        state.with_msg(replace(m, status=Status.VISIBLE, visible_at=None)),
        delayed=_without(state.delayed, id),
        timers=_without(state.timers, id),
        visible=(*state.visible, id),
    )


def expire(state: State, now: Time) -> tuple[State, tuple[str, ...]]:
    """Fire every timer due at or before ``now``, in :func:`due`'s order, in one step; return
    the ids in that order.

    A delay firing makes its message visible (:func:`fire_delay`); a deadline firing *releases*
    the message. Until this runs, a passed deadline changes nothing: the old receipt stays live
    and a late delete still wins; once it has run, that receipt is stale. Likewise a delayed
    message is not delivered before the sweep that makes it visible.
    """
    _check_time("now", now)
    fired = due(state, now)
    for id in fired:
        m = state.get(id)
        assert m is not None
        state = fire_delay(state, id) if m.status is Status.DELAYED else release(state, id)
    return state, fired


def next_deadline(state: State) -> Time | None:
    """The earliest due time of any running timer (a delay or a deadline), if any: when the
    sweeper next has work."""
    times = [t for m in state.messages if (t := m.due) is not None]
    return min(times) if times else None
