"""The transitions as pure functions: ``(state, args) -> (state, result)``.

One function per row of the contract's table, named as in the TLA+ spec (``Send`` is ``send``,
``Receive`` is ``receive``, ...) and as the ``impl.Queue`` method that does the same thing. A
rejected call returns the *same* state object it was given, so "changes nothing" is checkable
with ``is``.

The steps of contract section 7 on one queue are here too: a retention timer in the one
timer order (``State.order``) and :func:`age_out`; :func:`move_in` and :func:`move_out`, the
halves of a move that :mod:`spec.system` joins into one step across two queues. A queue with no
retention and no redrive takes exactly the steps it always took.

Time is always an argument (``now``); nothing here reads a clock. This module is the obviously
correct version: it favours clarity over speed, and the threaded implementation is tested
against it step by step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Final

from spec.state import (
    MSG,
    RET,
    TICK,
    Config,
    Delivery,
    Msg,
    Receipt,
    State,
    Status,
    Time,
    TimerEntry,
)

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


#: What :func:`_deliver` returns: a helper of the transitions, not a transition itself (the
#: registry's test finds the transitions by their ``tuple[State, ...]`` annotation).
_Delivered = tuple[State, Delivery]


def _without(ids: tuple[str, ...], id: str) -> tuple[str, ...]:
    return tuple(x for x in ids if x != id)


# The one timer order (contract 7.4): ``State.timers`` holds the delays and deadlines, and
# ``State.order`` the whole order when a retention timer or a redrive tick runs. Every change
# to the timers goes through these two helpers, which keep both views and put ``order`` in its
# normal form (``()`` when it would say no more than ``timers``): a queue with no retention and
# no tick gets exactly the ``timers`` it always got, and ``order`` stays ``()``.


def _with_order(state: State, entries: tuple[TimerEntry, ...]) -> State:
    """``state`` with the timer order ``entries``: ``timers`` its ``msg`` entries, ``order``
    all of them if any other kind is among them, else ``()``."""
    timers = tuple(name for kind, name in entries if kind == MSG)
    extra = any(kind != MSG for kind, _ in entries)
    return replace(state, timers=timers, order=entries if extra else ())


def _drop_timers(state: State, id: str, kinds: frozenset[str] = frozenset({MSG, RET})) -> State:
    """``state`` with message ``id``'s timers of ``kinds`` stopped (default: all of them)."""
    entries = state.timer_order()
    kept = tuple(e for e in entries if not (e[1] == id and e[0] in kinds and e[0] != TICK))
    if len(kept) == len(entries):
        return state
    return _with_order(state, kept)


_MSG_ONLY: Final = frozenset({MSG})


def set_order(state: State, entries: tuple[TimerEntry, ...]) -> State:
    """``state`` with the one timer order ``entries`` (its normal form: see ``State.order``).
    For :mod:`spec.system`, which starts and stops the redrive ticks."""
    return _with_order(state, entries)


# ---------------------------------------------------------------------------------------------
# send(id, body, delay): accepted iff the id was never accepted here and active < capacity.
# ---------------------------------------------------------------------------------------------


def can_send(state: State, id: str) -> bool:
    """Whether ``send(state, id, ...)`` would accept: a fresh id and room for one more."""
    cap = state.config.capacity
    return state.get(id) is None and (cap is None or state.active < cap)


#: What :func:`send` answers: ``True`` (accepted) or ``False`` (rejected), or on a FIFO queue
#: the earlier message's id (a ``str``) for a duplicate. Spelled ``bool | Any`` rather than
#: ``bool | str`` so that the standard queue's callers, which hold the answer in a ``bool``,
#: type-check as they did; only a send with a ``dedup_id`` can answer a ``str``.
SendResult = bool | Any


def is_duplicate(state: State, dedup_id: str | None, now: Time) -> str | None:
    """FIFO queues: the id of the message accepted with ``dedup_id`` less than
    ``dedup_interval`` before ``now``, whose duplicate a send with that dedup id would be; or
    ``None``. Measured from that acceptance; exactly at the end of the interval the dedup id is
    new again. Without a dedup id a send is never a duplicate."""
    if dedup_id is None or not state.config.fifo:
        return None
    for d, id, at in state.dedup:
        if d == dedup_id and now < at + state.config.dedup_interval:
            return id
    return None


def _check_fifo_args(
    state: State, name: str, delay: object, group: object, dedup_id: object
) -> None:
    """The send arguments a queue type takes: ``group`` (required) and ``dedup_id`` on FIFO
    queues, ``delay`` on standard queues. ``name`` prefixes the argument in the error."""
    if state.config.fifo:
        if delay is not None:
            raise ValueError(
                f"{name}delay: a FIFO queue takes no per-send delay (the queue's delay applies),"
                f" got {delay!r}"
            )
        if group is None:
            raise ValueError(f"{name}group is required on a FIFO queue")
        if not isinstance(group, str):
            raise TypeError(f"{name}group must be a str, got {group!r}")
        if dedup_id is not None and not isinstance(dedup_id, str):
            raise TypeError(f"{name}dedup_id must be a str or None, got {dedup_id!r}")
    else:
        if group is not None:
            raise ValueError(f"{name}group: a standard queue has no message groups, got {group!r}")
        if dedup_id is not None:
            raise ValueError(
                f"{name}dedup_id: a standard queue does not deduplicate, got {dedup_id!r}"
            )


def _place(state: State, ids: tuple[str, ...], id: str) -> tuple[str, ...]:
    """``ids`` with ``id`` entering ``VISIBLE``: at the tail on a standard queue; at its place
    in send order on a FIFO queue (contract section 2b: a released message is delivered again
    before the later messages of its group)."""
    if not state.config.fifo:
        return (*ids, id)
    m = state.get(id)
    assert m is not None
    for k, x in enumerate(ids):
        other = state.get(x)
        assert other is not None
        if other.sent > m.sent:
            return (*ids[:k], id, *ids[k:])
    return (*ids, id)


def _record(
    state: State, dedup_id: str | None, id: str, now: Time
) -> tuple[tuple[str, str, Time], ...]:
    """The dedup records after accepting ``id`` with ``dedup_id`` at ``now``: the new record
    replaces any earlier one for that dedup id (its window restarts from this acceptance)."""
    if dedup_id is None:
        return state.dedup
    kept = [r for r in state.dedup if r[0] != dedup_id]
    return tuple(sorted((*kept, (dedup_id, id, now)), key=lambda r: r[0]))


def send(
    state: State,
    id: str,
    body: str,
    delay: Time | None = None,
    now: Time = 0.0,
    group: str | None = None,
    dedup_id: str | None = None,
) -> tuple[State, SendResult]:
    """Accept a new message, or reject it, leaving the state unchanged.

    With a delay of 0 the message is appended to the tail of ``VISIBLE``; with a delay > 0 it
    is ``DELAYED`` with ``visible_at = now + delay``, and its timer is started (appended to
    ``timers``). ``delay=None`` means the queue's (``Config.delay``, 0 unless configured).

    Rejected when the id was ever accepted by this queue (``IdsReserved``) or when the queue
    already holds ``capacity`` active messages (``CapacityBound``).

    On a FIFO queue (contract section 2b) ``group`` is required and ``delay`` must be ``None``
    (the queue's delay applies); a send whose ``dedup_id`` was accepted less than
    ``dedup_interval`` ago is a duplicate: the result is the earlier message's id (a ``str``)
    and the very same state, whatever the id and the room. A rejected send records nothing.
    ``group``/``dedup_id`` on a standard queue are a ``ValueError``.
    """
    _check_fifo_args(state, "", delay, group, dedup_id)
    d = state.config.delay if delay is None else delay
    _check_number("delay", d)
    _check_number("now", now)
    if (earlier := is_duplicate(state, dedup_id, now)) is not None:
        return state, earlier
    if not can_send(state, id):
        return state, False
    fifo = state.config.fifo
    retained = state.config.retention is not None
    msg = Msg(id=id, body=body, enqueued_at=now if retained else 0.0)
    if fifo:
        msg = replace(msg, group=group, sent=len(state.messages), dedup_id=dedup_id)
    dedup = _record(state, dedup_id, id, now) if fifo else state.dedup
    # The retention timer starts after the delay timer (contract 7.4).
    ret: tuple[TimerEntry, ...] = ((RET, id),) if retained else ()
    if d == 0:
        new = state.with_msg(msg)
        new = replace(new, visible=(*state.visible, id), dedup=dedup)
        return (_with_order(new, (*state.timer_order(), *ret)) if ret else new), True
    new = state.with_msg(replace(msg, status=Status.DELAYED, visible_at=now + d))
    new = replace(new, delayed=(*state.delayed, id), dedup=dedup)
    return _with_order(new, (*state.timer_order(), (MSG, id), *ret)), True


#: A ``send_batch`` entry: ``(id, body, delay)``, or on a FIFO queue ``(id, body, delay, group,
#: dedup_id)`` with ``delay`` ``None``.
BatchEntry = tuple[str, str, Time | None] | tuple[str, str, Time | None, str | None, str | None]


def send_batch(
    state: State, entries: Sequence[BatchEntry], now: Time = 0.0
) -> tuple[State, bool | tuple[bool | str, ...]]:
    """Accept every entry ``(id, body, delay)``, each as :func:`send` in order, in one step; or
    none of them, leaving the state unchanged (all or none; contract: ``send_batch``).

    Accepted iff the ids are distinct among themselves, none was ever accepted by this queue,
    and ``active + len(entries) <= capacity``. ``ValueError``/``TypeError`` (naming the entry)
    for a batch of 0 or more than ``MAX_BATCH`` entries or an entry that is not
    ``(id: str, body: str, delay: number >= 0 or None)``.

    On a FIFO queue the entries are ``(id, body, None, group, dedup_id)`` and the result is one
    value per entry: the earlier id (a ``str``) for each duplicate (as :func:`send` judges it
    against the state before the batch), and for the other entries all ``True`` (accepted
    together, in entry order) or all ``False`` (none accepted). A ``dedup_id`` repeated in the
    batch is a ``ValueError``.
    """
    _check_batch("entries", entries)
    _check_number("now", now)
    norm: list[tuple[str, str, Time | None, str | None, str | None]] = []
    for k, entry in enumerate(entries):
        if not isinstance(entry, tuple) or len(entry) not in (3, 5):
            shape = (
                "(id, body, delay, group, dedup_id)" if state.config.fifo else "(id, body, delay)"
            )
            raise TypeError(f"entries[{k}] must be an {shape} tuple, got {entry!r}")
        id, body, delay = entry[0], entry[1], entry[2]
        group, dedup_id = (entry[3], entry[4]) if len(entry) == 5 else (None, None)
        if not isinstance(id, str):
            raise TypeError(f"entries[{k}].id must be a str, got {id!r}")
        if not isinstance(body, str):
            raise TypeError(f"entries[{k}].body must be a str, got {body!r}")
        _check_fifo_args(state, f"entries[{k}].", delay, group, dedup_id)
        if delay is not None:
            _check_number(f"entries[{k}].delay", delay)
        if dedup_id is not None and any(e[4] == dedup_id for e in norm):
            raise ValueError(f"entries[{k}].dedup_id {dedup_id!r} is repeated in the batch")
        norm.append((id, body, delay, group, dedup_id))
    dupes = [is_duplicate(state, e[4], now) for e in norm]
    fresh = [e for e, dup in zip(norm, dupes, strict=True) if dup is None]
    ids = [e[0] for e in fresh]
    cap = state.config.capacity
    ok = not (
        len(set(ids)) != len(ids)
        or any(state.get(id) is not None for id in ids)
        or (cap is not None and state.active + len(ids) > cap)
    )
    after = state
    if ok:
        for id, body, delay, group, dedup_id in fresh:
            after, accepted = send(after, id, body, delay, now, group, dedup_id)
            assert accepted is True, f"send_batch: {id!r} rejected after the batch was accepted"
    if not state.config.fifo:
        return after, ok
    return after, tuple(ok if dup is None else dup for dup in dupes)


# ---------------------------------------------------------------------------------------------
# receive(now, vt): the head of VISIBLE becomes IN_FLIGHT, attempt + 1, deadline now + vt.
# ---------------------------------------------------------------------------------------------


def receive(state: State, now: Time, vt: Time | None) -> tuple[State, Delivery | None]:
    """Deliver the head of ``VISIBLE`` in one atomic step, or return ``None`` if nothing is visible.

    The message becomes ``IN_FLIGHT`` with ``attempt + 1`` and deadline ``now + vt`` (no deadline
    when ``vt`` is ``None``), and the delivery carries a fresh receipt for that attempt. Messages
    already in flight are never handed out again until released.

    On a FIFO queue the receive scans ``VISIBLE`` in send order, skipping locked groups (those
    with a message in flight), and delivers the first message it finds; ``None`` if every
    visible message is in a locked group.
    """
    _check_time("now", now)
    if vt is not None:
        _check_time("visibility_timeout", vt)
    deliverable = state.deliverable()
    if not deliverable:
        return state, None
    return _deliver(state, deliverable[0], now, vt)


def _deliver(state: State, id: str, now: Time, vt: Time | None) -> _Delivered:
    """One delivery of the visible message ``id``: ``IN_FLIGHT``, ``attempt + 1``, deadline
    ``now + vt``, its timer started (appended to ``timers``), a fresh receipt."""
    m = state.get(id)
    assert m is not None and m.status is Status.VISIBLE
    attempt = m.attempt + 1
    delivered = replace(
        m,
        status=Status.IN_FLIGHT,
        attempt=attempt,
        deadline=None if vt is None else now + vt,
    )
    new = _with_order(
        replace(
            state.with_msg(delivered),
            visible=_without(state.visible, id),
            in_flight=(*state.in_flight, id),
        ),
        (*state.timer_order(), (MSG, id)),
    )
    receipt = Receipt(queue=state.queue, id=id, attempt=attempt)
    return new, Delivery(id=id, body=m.body, attempt=attempt, receipt=receipt)


def receive_batch(
    state: State, now: Time, n: int, vt: Time | None
) -> tuple[State, tuple[Delivery, ...]]:
    """Deliver the first ``min(n, len(visible))`` visible messages, in FIFO order, each as
    :func:`receive` with the same deadline ``now + vt``, in one step.

    On a FIFO queue: the deliverable (visible, unlocked) groups in the order of their earliest
    visible message; the first group's visible messages in send order, then the next group's,
    until ``n`` or none is left.

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
    if state.config.fifo:
        # Group by group (contract section 2b): the deliverable groups in the order of their
        # earliest visible message, each group's visible messages in send order.
        groups: dict[str | None, list[str]] = {}
        for id in state.deliverable():
            m = state.get(id)
            assert m is not None
            groups.setdefault(m.group, []).append(id)
        picks = [id for ids in groups.values() for id in ids][:n]
        for id in picks:
            state, d = _deliver(state, id, now, vt)
            deliveries.append(d)
        return state, tuple(deliveries)
    for _ in range(min(n, len(state.visible))):
        state, d1 = receive(state, now, vt)
        assert d1 is not None
        deliveries.append(d1)
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
    ``attempt + 1``; the message never jumps back to its old place in the FIFO. On a FIFO queue
    it goes back to its place in send order instead (contract section 2b), so it is delivered
    again before the later messages of its group.
    """
    m = state.get(id)
    assert m is not None and m.status is Status.IN_FLIGHT, f"release of {id!r}: not in flight"
    in_flight = _without(state.in_flight, id)
    if dead_letters_on_release(state.config, m.attempt):
        # Dead: every timer of it stops (its deadline, and its retention timer if any).
        return replace(
            _drop_timers(state.with_msg(replace(m, status=Status.DEAD, deadline=None)), id),
            in_flight=in_flight,
            dead=(*state.dead, id),
        )
    # Visible again: its deadline stops, its retention timer (if any) runs on.
    back = state.with_msg(replace(m, status=Status.VISIBLE, deadline=None))
    return replace(
        _drop_timers(back, id, _MSG_ONLY),
        in_flight=in_flight,
        visible=_place(back, state.visible, id),
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
            _drop_timers(state.with_msg(replace(m, status=Status.DONE, deadline=None)), m.id),
            in_flight=_without(state.in_flight, receipt.id),
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
    return _end(state, m, Status.CANCELLED), True


def _end(state: State, m: Msg, status: Status) -> State:
    """The active message ``m`` ends in the terminal ``status``: out of every list, its
    receipt dead, every timer of it stopped (cancel; age_out and move_out also list it)."""
    return replace(
        _drop_timers(
            state.with_msg(replace(m, status=status, deadline=None, visible_at=None)), m.id
        ),
        visible=_without(state.visible, m.id),
        in_flight=_without(state.in_flight, m.id),
        delayed=_without(state.delayed, m.id),
    )


def recover(state: State) -> State:
    """The restart of a durable endpoint (contract section 9; TLA+ ``Recover`` of
    ``tla/QueueDurable.tla``; ``Service.recover`` in ``sqs_endpoint``): the queue as its store
    kept it, every receipt handed out before it dead. No message changes: one in flight stays
    in flight until its deadline, then is released as any expired delivery, its attempt kept.
    Only the queue's token moves on, so no earlier receipt names a delivery of this queue any
    more, as the endpoint gives each queue a new incarnation (for one queue: a system of
    queues is restarted whole, and ``spec.system`` has no restart)."""
    return replace(state, queue=state.queue + 1)


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
    # Every message timer stops; a redrive task's tick (spec.system) runs on.
    ticks = tuple(e for e in state.order if e[0] == TICK)
    return (
        _with_order(
            replace(
                state,
                messages=tuple(cancelled.get(m.id, m) for m in state.messages),
                visible=(),
                in_flight=(),
                delayed=(),
            ),
            ticks,
        ),
        len(active),
    )


# ---------------------------------------------------------------------------------------------
# expire(now): the sweeper. Every timer due at or before now fires: delays and deadlines, in the
# one timer order (by due time, ties in the order the timers were started).
# ---------------------------------------------------------------------------------------------


def timer_due(state: State, entry: TimerEntry) -> Time | None:
    """When the timer ``entry`` of ``state``'s order is due: a ``msg`` timer by
    :attr:`Msg.due`, a ``ret`` timer at ``enqueued_at + retention``; ``None`` for a tick (its
    task, in :mod:`spec.system`, knows when) or a timer that is not running."""
    kind, name = entry
    m = state.get(name) if kind != TICK else None
    if m is None:
        return None
    if kind == MSG:
        return m.due
    return state.retention_due(m) if m.status.active else None


def _due_entries(
    state: State, now: Time, tick_due: Callable[[str], Time | None] | None = None
) -> list[tuple[Time, int, TimerEntry]]:
    """The timers due at or before ``now``, in the one order: ``(due, place, entry)`` sorted
    by due time, ties by their place in the start order. ``tick_due`` says when a tick is due
    (without it ticks never are)."""
    out = []
    for place, entry in enumerate(state.timer_order()):
        if entry[0] == TICK:
            t = None if tick_due is None else tick_due(entry[1])
        else:
            t = timer_due(state, entry)
        if t is not None and t <= now:
            out.append((t, place, entry))
    out.sort(key=lambda e: (e[0], e[1]))
    return out


def due(state: State, now: Time) -> tuple[str, ...]:
    """Ids whose timer is due at or before ``now``: ``DELAYED`` messages by ``visible_at``,
    ``IN_FLIGHT`` ones by deadline and, on a queue with a retention, active ones by
    ``enqueued_at + retention``, in one order: by due time, ties by their place in the timer
    order (the order the timers were started). An id with two due timers is listed twice."""
    return tuple(entry[1] for _, _, entry in _due_entries(state, now))


def next_timer(
    state: State, now: Time, tick_due: Callable[[str], Time | None] | None = None
) -> TimerEntry | None:
    """The first timer of the one order due at or before ``now``, or ``None``: what a sweep
    fires next (``tick_due`` as in :func:`due`'s helper: ticks only with it)."""
    entries = _due_entries(state, now, tick_due)
    return entries[0][2] if entries else None


def fire_delay(state: State, id: str) -> State:
    """A delay firing: the ``DELAYED`` message is appended to the tail of ``VISIBLE`` (attempt
    unchanged, ``visible_at`` cleared) and its timer stops. On a FIFO queue it takes its place
    in send order, as a released message does, so ``VISIBLE`` stays sorted by ``Msg.sent``."""
    m = state.get(id)
    assert m is not None and m.status is Status.DELAYED, f"fire_delay of {id!r}: not delayed"
    back = state.with_msg(replace(m, status=Status.VISIBLE, visible_at=None))
    return replace(
        _drop_timers(back, id, _MSG_ONLY),
        delayed=_without(state.delayed, id),
        visible=_place(back, state.visible, id),
    )


def age_out(state: State, id: str) -> State:
    """A retention timer firing (contract 7.4): the active message ``id`` is ``AGED_OUT``,
    terminal: out of its list, its receipt dead, every timer of it stopped, its slot freed.
    Retention never dead-letters, whatever the attempt."""
    m = state.get(id)
    assert m is not None and m.status.active, f"age_out of {id!r}: not active"
    return replace(_end(state, m, Status.AGED_OUT), aged_out=(*state.aged_out, id))


def move_out(state: State, id: str) -> State:
    """A dead-letter queue's half of a redrive move (contract 7.5): the ``VISIBLE`` message
    ``id`` is ``MOVED``, terminal here (out of ``visible``, every timer of it stopped). The
    destination's half is :func:`move_in`; :mod:`spec.system` does both in one step."""
    m = state.get(id)
    assert m is not None and m.status is Status.VISIBLE, f"move_out of {id!r}: not visible"
    return replace(_end(state, m, Status.MOVED), moved=(*state.moved, id))


def move_in(
    state: State,
    id: str,
    body: str,
    now: Time,
    attempt: int = 0,
    group: str | None = None,
    enqueued_at: Time | None = None,
) -> State:
    """A message taken in by a move (contract 7.3, 7.5): ``id`` joins the visible tail
    (on a FIFO queue: the next place in the send order, so the tail of its group), with
    ``attempt`` kept (``base`` records it) and ``group``; enqueued at ``enqueued_at``
    (``None``: ``now``); its retention timer started if the queue has one. No capacity check,
    no dedup check and no dedup record: the caller checked room where room is needed.

    A dead-letter move passes the message's attempt and, into a standard queue, its original
    enqueue time (a FIFO queue resets it to ``now``); a redrive passes a fresh id, attempt 0
    and ``now``."""
    assert state.get(id) is None, f"move_in of {id!r}: already here"
    fifo = state.config.fifo
    msg = Msg(
        id=id,
        body=body,
        attempt=attempt,
        base=attempt,
        group=group if fifo else None,
        sent=len(state.messages) if fifo else 0,
        enqueued_at=now if enqueued_at is None or fifo else enqueued_at,
    )
    new = state.with_msg(msg)
    new = replace(new, visible=_place(new, state.visible, id))
    if state.config.retention is None:
        return new
    return _with_order(new, (*state.timer_order(), (RET, id)))


def fire(state: State, entry: TimerEntry) -> State:
    """One due timer of the queue fires: a delay makes its message visible
    (:func:`fire_delay`), a deadline releases it (:func:`release`), a retention timer ages it
    out (:func:`age_out`). A tick is :mod:`spec.system`'s (it moves across two queues)."""
    kind, id = entry
    assert kind != TICK, "a redrive tick is fired by spec.system.expire"
    if kind == RET:
        return age_out(state, id)
    m = state.get(id)
    assert m is not None
    return fire_delay(state, id) if m.status is Status.DELAYED else release(state, id)


def expire(state: State, now: Time) -> tuple[State, tuple[str, ...]]:
    """Fire every timer due at or before ``now``, in the one timer order (by due time, ties in
    start order), in one step; return the ids of the timers fired, in that order.

    A delay firing makes its message visible (:func:`fire_delay`); a deadline firing *releases*
    the message; a retention timer firing ages it out (:func:`age_out`). Until this runs, a
    passed deadline changes nothing: the old receipt stays live and a late delete still wins;
    once it has run, that receipt is stale. Likewise a delayed message is not delivered before
    the sweep that makes it visible. A timer that an earlier firing of the same sweep stopped
    (a message aged out, or dead) does not fire. A redrive tick never fires here (see
    :func:`spec.system.expire`).
    """
    _check_time("now", now)
    fired: list[str] = []
    while (entry := next_timer(state, now)) is not None:
        state = fire(state, entry)
        fired.append(entry[1])
    return state, tuple(fired)


def next_deadline(state: State) -> Time | None:
    """The earliest due time of any running timer (a delay, a deadline or a retention timer;
    not a tick), if any: when the sweeper next has work."""
    times = [t for e in state.timer_order() if (t := timer_due(state, e)) is not None]
    return min(times) if times else None
