"""What the two drivers of the queue machine share: the checks of their arguments and
configuration, and the arithmetic of whom a step wakes.

The threaded driver (``impl/threaded.py``) and the asyncio driver (``impl/aio.py``) differ only
in how they wait (a thread on a condition, a task on a future) and in what fires their timers
(a sweeper thread, a loop timer). Everything else a caller sees is the same, and is here once:
every argument check (each names its argument, before anything changes), the configuration
rules of a system of queues (contract section 7.1), and :class:`Wakeups`.
"""

from __future__ import annotations

import enum
import re
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Final

from impl.errors import DuplicateIdError
from impl.machine import MAX_BATCH, Machine
from impl.message import Entry, Receipt
from impl.validate import check_id, check_time, is_number, to_finite

#: A queue's name: SQS's form (1 to 80 letters, digits, ``-``, ``_``; ``.fifo`` may end it).
NAME_PATTERN: Final = re.compile(r"(?=.{1,80}$)[A-Za-z0-9_-]+(\.fifo)?")

__all__ = [
    "BATCH_SENDERS",
    "QUEUE_DEFAULT",
    "Default",
    "Wakeups",
    "check_batch",
    "check_changes",
    "check_destination",
    "check_entries",
    "check_fifo_entries",
    "check_name",
    "check_rate",
    "check_receipts",
    "check_retention",
    "check_target",
    "driver_of",
    "not_a_receipt",
    "step_of",
    "weakly",
]


class Default(enum.Enum):
    """The type of the "use the queue's default" sentinel, so ``None`` can mean "never expire"."""

    QUEUE_DEFAULT = enum.auto()


#: "The queue's own visibility timeout": the default of ``receive``'s ``visibility_timeout``.
QUEUE_DEFAULT: Final = Default.QUEUE_DEFAULT

#: The key of :attr:`Wakeups.waiting` that counts the send_batch calls waiting on
#: ``not_full``.
BATCH_SENDERS: Final = "send_batch"


def check_batch(name: str, value: object) -> list[Any]:
    """The items of a batch argument: a sequence (not a ``str``) of 1 to ``MAX_BATCH`` items,
    copied to a list; else ``TypeError``/``ValueError`` naming ``name``."""
    if not isinstance(value, Sequence) or isinstance(value, str | bytes | bytearray):
        raise TypeError(f"{name} must be a list or tuple, got {type(value).__name__}")
    items = list(value)
    if not 1 <= len(items) <= MAX_BATCH:
        raise ValueError(f"{name} must hold 1 to {MAX_BATCH} items, got {len(items)}")
    return items


class Wakeups:
    """Who waits on a queue's two conditions, and whom a step wakes: the arithmetic both
    drivers share (their waits differ: threads on ``threading.Condition``, tasks on futures).

    ``waiting`` counts the waiters of ``not_empty`` and ``not_full`` (and, under
    :data:`BATCH_SENDERS`, how many of the latter are ``send_batch`` calls). A step that made
    ``receivers`` messages deliverable wakes that many receivers (fewer if fewer wait); one that
    freed ``senders`` slots wakes that many senders, or every sender while a ``send_batch``
    waits (one wakeup could reach the batch, which may need more than the one slot it stands
    for, while a single send that could take the slot sleeps on). :meth:`notify` is the
    driver's: wake one waiter of a condition."""

    not_empty: Any
    not_full: Any
    waiting: dict[object, int]

    def notify(self, cond: Any) -> None:
        """Wake one waiter of ``cond`` (every wake of :meth:`wake` comes through here)."""
        raise NotImplementedError

    def wake(self, receivers: int, senders: int) -> None:
        """Wake whom a step enabled (see the class docstring)."""
        waiting = self.waiting
        if receivers and waiting[self.not_empty]:
            for _ in range(min(receivers, waiting[self.not_empty])):
                self.notify(self.not_empty)
        if senders and waiting[self.not_full]:
            for _ in range(1 if waiting[BATCH_SENDERS] else min(senders, waiting[self.not_full])):
                self.notify(self.not_full)


def driver_of(machine: Machine[Any]) -> Any:
    """The queue that drives ``machine`` (``None`` once collected)."""
    return machine.owner()


# -- the argument checks both drivers make -----------------------------------------------------


def check_retention(retention: object) -> float | None:
    """``retention``: ``None`` or a finite number of seconds > 0."""
    if retention is None:
        return None
    if not is_number(retention):
        raise TypeError(
            f"retention must be a number of seconds or None, got {type(retention).__name__}"
        )
    kept = to_finite("retention", retention)  # type: ignore[arg-type]
    if not kept > 0:
        raise ValueError(f"retention must be > 0 seconds (or None: forever), got {retention!r}")
    return kept


def check_name(name: object, target: Machine[Any] | None) -> None:
    """``name``: SQS's form, and not taken in ``target``'s system (contract section 7.1)."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if NAME_PATTERN.fullmatch(name) is None:
        raise ValueError(
            "name must be 1 to 80 letters, digits, '-' or '_' (a FIFO queue's may end in "
            f"'.fifo'), got {name!r}"
        )
    if target is not None:
        taken = target.system.names if target.system is not None else {target.name}
        if name in taken:
            raise ValueError(f"name {name!r} is taken by another queue of this system")


def check_target(
    machine_class: type[Machine[Any]], target: Machine[Any], max_receives: int | None
) -> None:
    """A dead-letter target that cannot work (contract section 7.1): ``ValueError``."""
    from impl.fifo_machine import FifoMachine

    fifo = issubclass(machine_class, FifoMachine)
    if isinstance(target, FifoMachine) != fifo:
        kinds = ("a FIFO queue", "a standard queue")
        raise ValueError(
            f"dead_letter must be a queue of the same kind: this is {kinds[not fifo]}, "
            f"the target is {kinds[fifo]}"
        )
    if max_receives is None:
        raise ValueError(
            "dead_letter needs max_receives: a message moves to its target only after "
            "max_receives deliveries"
        )
    if target.capacity is not None:
        raise ValueError(
            f"dead_letter must be unbounded (capacity=None), got a target of capacity "
            f"{target.capacity}: a move commits a release, which cannot wait for room"
        )


def check_destination(dlq: Machine[Any], destination: Machine[Any]) -> None:
    """A redrive's ``destination``: not the dead-letter queue itself, of the same kind."""
    from impl.fifo_machine import FifoMachine

    if destination is dlq:
        raise ValueError("destination must not be the dead-letter queue itself")
    if isinstance(destination, FifoMachine) != isinstance(dlq, FifoMachine):
        raise ValueError("destination must be a queue of the same kind (FIFO or standard)")


def check_rate(rate: object, ids: object) -> float | None:
    """A redrive's ``rate`` (``None`` or finite > 0) and ``ids`` (``None`` or callable)."""
    if ids is not None and not callable(ids):
        raise TypeError(f"ids must be a callable or None, got {type(ids).__name__}")
    if rate is None:
        return None
    if not is_number(rate):
        raise TypeError(f"rate must be a number or None, got {type(rate).__name__}")
    r = to_finite("rate", rate)  # type: ignore[arg-type]
    if not r > 0:
        raise ValueError(f"rate must be > 0 messages per second, got {rate!r}")
    return r


def check_receipts(receipts: object) -> list[Receipt]:
    """delete_batch's ``receipts``: 1 to 10 :class:`Receipt`, named by index when one is not."""
    batch = check_batch("receipts", receipts)
    for i, r in enumerate(batch):
        if not isinstance(r, Receipt):
            raise TypeError(f"receipts[{i}] must be a Receipt, got {type(r).__name__}")
    return batch


def check_changes(changes: object) -> list[tuple[Receipt, float]]:
    """change_visibility_batch's ``changes``: 1 to 10 ``(receipt, timeout)`` pairs."""
    batch = check_batch("changes", changes)
    checked: list[tuple[Receipt, float]] = []
    for i, c in enumerate(batch):
        if not isinstance(c, tuple) or len(c) != 2:
            raise TypeError(
                f"changes[{i}] must be a (receipt, timeout) pair, got {type(c).__name__}"
            )
        receipt, timeout = c
        if not isinstance(receipt, Receipt):
            raise TypeError(f"changes[{i}].receipt must be a Receipt, got {type(receipt).__name__}")
        checked.append((receipt, check_time(f"changes[{i}].timeout", timeout)))
    return checked


def check_entries(
    batch: list[Any], delay: float, capacity: int | None
) -> tuple[list[str | None], list[float]]:
    """A standard send_batch's entries: each one's id (``None``: generated) and delay
    (``delay``, the queue's, if not given), or the error naming the entry: not an
    :class:`impl.Entry`, a FIFO field, an id repeated in the batch, a batch larger than the
    ``capacity`` could ever hold."""
    ids: list[str | None] = [None] * len(batch)
    delays = [delay] * len(batch)
    explicit: dict[str, int] = {}
    for i, e in enumerate(batch):
        if not isinstance(e, Entry):
            raise TypeError(f"entries[{i}] must be an impl.Entry, got {type(e).__name__}")
        if e.group is not None or e.dedup_id is not None:
            which = "group" if e.group is not None else "dedup_id"
            raise ValueError(
                f"entries[{i}].{which} must be None: a standard queue has no message groups "
                "or deduplication (FIFO queues only)"
            )
        if e.id is not None:
            id = check_id(f"entries[{i}].id", e.id)
            if id in explicit:
                raise DuplicateIdError(f"entries[{i}].id {id!r} repeats entries[{explicit[id]}].id")
            explicit[id] = i
            ids[i] = id
        if e.delay is not None:
            delays[i] = check_time(f"entries[{i}].delay", e.delay)
    if capacity is not None and len(batch) > capacity:
        raise ValueError(
            f"entries: a batch of {len(batch)} can never fit a queue of capacity {capacity}"
        )
    return ids, delays


def check_fifo_entries(batch: list[Any]) -> tuple[list[str | None], list[str], list[str | None]]:
    """Each entry's id and dedup id (``None``: not given) and group, or the error naming the
    entry: not an :class:`Entry`, a delay, no group, a dedup id repeated in the batch."""
    n = len(batch)
    ids: list[str | None] = [None] * n
    groups: list[str] = []
    dedups: list[str | None] = [None] * n
    seen: dict[str, int] = {}
    for i, e in enumerate(batch):
        if not isinstance(e, Entry):
            raise TypeError(f"entries[{i}] must be an impl.Entry, got {type(e).__name__}")
        if e.delay is not None:
            raise ValueError(
                f"entries[{i}].delay must be None: a FIFO queue has no per-message delay "
                "(the queue's delay applies)"
            )
        if e.group is None:
            raise ValueError(f"entries[{i}].group is required on a FIFO queue")
        groups.append(check_id(f"entries[{i}].group", e.group))
        if e.id is not None:
            # A repeat is an error only among the entries that are not duplicates (told under
            # the lock, by the machine): a duplicate's id is not used.
            ids[i] = check_id(f"entries[{i}].id", e.id)
        if e.dedup_id is not None:
            dd = check_id(f"entries[{i}].dedup_id", e.dedup_id)
            if dd in seen:
                raise ValueError(
                    f"entries[{i}].dedup_id {dd!r} repeats entries[{seen[dd]}].dedup_id"
                )
            seen[dd] = i
            dedups[i] = dd
    return ids, groups, dedups


def step_of(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[[float], Any]:
    """``method`` (a machine's step) with every argument given but ``now``: what a driver's
    wait loop takes again at each new ``now``. Made here rather than as a lambda inside the
    operation: a function holding a lambda over its locals builds a closure cell for each of
    them on every call, on the path that never waits too."""
    return lambda now: method(now, *args, **kwargs)


def weakly(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` (bound), called through a weak reference: what a driver hands its machine as
    a hook, so the machine keeps no driver alive (a queue nobody holds is collected at once)."""
    ref = weakref.WeakMethod(method)

    def call(*args: Any) -> Any:
        bound = ref()
        return None if bound is None else bound(*args)

    return call


def not_a_receipt(value: object) -> TypeError:
    return TypeError(f"receipt must be a Receipt, got {type(value).__name__}")
