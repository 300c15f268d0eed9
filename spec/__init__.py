"""The executable specification: the queue contract as a pure-function state machine.

Immutable state in, ``(new state, result)`` out, time as an explicit argument. This is the one
obviously-correct model that the threaded implementation (``impl``) is tested against, and the
Python twin of the TLA+ spec in ``tla/Queue.tla``: the same actions under the same names. The
operations, with their names in every layer, are declared once in :data:`REGISTRY`
(:mod:`spec.operations`). A system of queues linked by dead-letter targets, with redrive and
retention (docs/contract.md section 7), is :mod:`spec.system`, its invariants
:mod:`spec.system_invariants` and its explorer :mod:`spec.system_explore`.

    >>> from spec import Config, initial, send, receive, delete
    >>> s = initial(Config(capacity=1))
    >>> s, ok = send(s, "a", "hello")
    >>> s, d = receive(s, now=0.0, vt=30.0)
    >>> d.id, d.attempt
    ('a', 1)
    >>> delete(s, d.receipt)[1]
    True
"""

from spec.invariants import (
    BATCH_OPERATIONS,
    INVARIANTS,
    STEP_INVARIANTS,
    attempts_count,
    batch_atomic,
    capacity_bound,
    dedup_window,
    dedup_window_step,
    delay_honoured,
    fifo_visible,
    group_order,
    group_order_step,
    ids_reserved,
    one_live_receipt,
    one_state,
    step_violations,
    violations,
)
from spec.operations import REGISTRY, Registry
from spec.state import (
    DEDUP_INTERVAL,
    MSG,
    RET,
    TERMINAL,
    TICK,
    Config,
    Delivery,
    Msg,
    Receipt,
    State,
    Status,
    Time,
    TimerEntry,
    initial,
)
from spec.transitions import (
    MAX_BATCH,
    age_out,
    can_send,
    cancel,
    change_visibility,
    change_visibility_batch,
    dead_letters_on_release,
    delete,
    delete_batch,
    due,
    expire,
    fire,
    fire_delay,
    is_duplicate,
    move_in,
    move_out,
    next_deadline,
    next_timer,
    purge,
    receive,
    receive_batch,
    recover,
    release,
    retry,
    send,
    send_batch,
    set_order,
    timer_due,
)

__all__ = [
    "BATCH_OPERATIONS",
    "DEDUP_INTERVAL",
    "INVARIANTS",
    "MAX_BATCH",
    "MSG",
    "REGISTRY",
    "RET",
    "STEP_INVARIANTS",
    "TERMINAL",
    "TICK",
    "Config",
    "Delivery",
    "Msg",
    "Receipt",
    "Registry",
    "State",
    "Status",
    "Time",
    "TimerEntry",
    "age_out",
    "attempts_count",
    "batch_atomic",
    "can_send",
    "cancel",
    "capacity_bound",
    "change_visibility",
    "change_visibility_batch",
    "dead_letters_on_release",
    "dedup_window",
    "dedup_window_step",
    "delay_honoured",
    "delete",
    "delete_batch",
    "due",
    "expire",
    "fifo_visible",
    "fire",
    "fire_delay",
    "group_order",
    "group_order_step",
    "ids_reserved",
    "initial",
    "is_duplicate",
    "move_in",
    "move_out",
    "next_deadline",
    "next_timer",
    "one_live_receipt",
    "one_state",
    "purge",
    "receive",
    "receive_batch",
    "recover",
    "release",
    "retry",
    "send",
    "send_batch",
    "set_order",
    "step_violations",
    "timer_due",
    "violations",
]
