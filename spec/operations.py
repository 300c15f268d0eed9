"""The registry of operations: each operation of the queue declared once, every table derived.

An operation has one name in every layer: the spec function (:mod:`spec.transitions`), the
``impl.Queue`` method, the Hypothesis rule of the lockstep machine, the linearizability
checker's operation. Its other names and shapes are declared beside it, here and nowhere else:
the TLA+ action (``Receive``), the scenario harness's op (``reserve``), the model arguments with
their kinds, the result's shape, the row of the contract's table (section 2), whether it reads
the clock, and the step onto :mod:`spec.transitions`.

Whatever enumerates operations derives its table from a :class:`Registry`: the checker's
signatures and arities (:mod:`model_tests.linearizability`), the explorer's actions and labels
(:mod:`spec.explore`), the diagram tool's action order (``tools/diagrams.py``), the TLC bridges
(:mod:`tla.graph`, :mod:`tla.trace`) and the harness's op table
(:mod:`model_tests.scenario_format`). Each of them takes the registry as an argument that
defaults to :data:`REGISTRY`, so a test can extend it (``REGISTRY.with_operation(...)``) and see
every table grow.

The model arguments are the checker's: a receipt is written ``(id, attempt)`` (of the queue the
step runs on) and a delivery ``(id, body, attempt)``; the batches' lists are tuples of those
(:class:`Kind` says each one's form), and a batch's results are tuples. ``advance`` is no
transition of the queue: it moves the model's clock (TLA+ ``Tick``; the harness's ``advance``;
``FakeClock.advance``), and is declared here because the checker, the explorer and the harness
all treat it as one more step.
"""

from __future__ import annotations

import enum
import functools
import inspect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Final

from spec.state import Delivery, Receipt, State, Time
from spec.transitions import (
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


class Kind(enum.Enum):
    """What a model argument is; each layer validates and converts it by its kind."""

    #: A message id (``str``).
    ID = "id"
    #: A message body (``str``); the harness calls it the payload.
    BODY = "body"
    #: A delivery's attempt (``int``); always right after an ``ID``: the two are a receipt.
    ATTEMPT = "attempt"
    #: A duration: a finite number >= 0.
    TIME = "time"
    #: A duration or ``None`` (never expires).
    OPTIONAL_TIME = "optional time"
    #: A send's delay: a duration, or ``None`` for the queue's (``Config.delay``). The harness
    #: writes it in the op's options object, ``{"delay": d}``; left out, it is the queue's.
    DELAY = "delay"
    #: A batch size ``n``: an ``int`` in ``1..MAX_BATCH``.
    COUNT = "count"
    #: ``send_batch``'s entries: a tuple of ``(id, body, delay)``, ``delay`` as :attr:`DELAY`;
    #: on a FIFO queue ``(id, body, None, group, dedup_id)`` (contract section 2b).
    #: The harness writes ``[[id, payload], [id, payload, opts], ...]``.
    ENTRIES = "entries"
    #: A tuple of receipts, each ``(id, attempt)`` on the step's queue (the spec function gets
    #: :class:`~spec.state.Receipt` values). The harness writes ``[[id, attempt], ...]``.
    RECEIPTS = "receipts"
    #: A tuple of changes, each ``(id, attempt, timeout)`` (the spec function gets
    #: ``(Receipt, timeout)`` pairs). The harness writes ``[[id, attempt, t], ...]``.
    CHANGES = "changes"
    #: A FIFO send's message group (``str``; ``None`` on a standard queue). The harness writes
    #: it in the op's options object, ``{"group": g}``.
    GROUP = "group"
    #: A FIFO send's deduplication id (``str``, or ``None``: never a duplicate). The harness
    #: writes it in the op's options object, ``{"dedup": d}``.
    DEDUP = "dedup id"


class Result(enum.Enum):
    """The shape of an operation's result in the model (its value is the checker's wording)."""

    BOOL = "bool"
    #: ``(id, body, attempt)``, or ``None`` when nothing was delivered.
    DELIVERY = "(id, body, attempt) | None"
    #: The ids released, in order.
    RELEASED = "tuple of released ids"
    #: A batch's results, one bool per entry, in order.
    BOOLS = "tuple of bool"
    #: A batch's deliveries in order, each ``(id, body, attempt)``; possibly empty.
    DELIVERIES = "tuple of (id, body, attempt)"
    #: How many messages the step affected (``purge``).
    COUNT = "int"
    NONE = "None"

    def enabled(self, result: object) -> bool:
        """Whether a step with this result did something: a rejected call is no transition.

        A batch of bools did something iff one entry did; a batch of deliveries iff it
        delivered one; a count iff it is not 0. A FIFO duplicate's result (the earlier id, a
        ``str``) changed nothing; a FIFO ``send_batch``'s per-entry tuple did something iff an
        entry was accepted (``True``).
        """
        if self is Result.BOOL:
            if isinstance(result, tuple):
                return any(r is True for r in result)
            return result is True
        if self is Result.DELIVERY:
            return result is not None
        if self in (Result.RELEASED, Result.DELIVERIES):
            return bool(result)
        if self is Result.BOOLS:
            assert isinstance(result, tuple)
            return any(result)
        if self is Result.COUNT:
            assert isinstance(result, int)
            return result > 0
        return True


@dataclass(frozen=True, slots=True)
class Arg:
    """One model argument: its name (the spec function's parameter), its kind, and the name the
    harness's error messages use where it says it otherwise (``payload``, ``t``)."""

    name: str
    kind: Kind
    harness: str | None = None

    @property
    def harness_name(self) -> str:
        return self.harness or self.name


#: A spec transition, called as ``function(state, **arguments)``.
Transition = Callable[..., tuple[State, Any]]


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation, in every layer's vocabulary (see the module docstring).

    ``name``      the spec function, the ``impl.Queue`` method (but see ``impl``), the checker's
                  operation and the lockstep machine's rule;
    ``tla``       the TLA+ action of ``tla/Queue.tla``;
    ``args``      the model arguments, in order;
    ``result``    the model result's shape;
    ``contract``  the operation's cell in the contract's table (section 2); ``None``: not a row
                  (the clock);
    ``harness``   the scenario harness's op name; ``None``: the harness has no such op;
    ``impl``      the ``impl.Queue`` method (``expire`` is ``sweep``); ``None``: the queue has
                  none (the clock is ``FakeClock``'s);
    ``function``  the spec transition; ``None``: the operation moves the clock by its argument;
    ``reads_clock``  the transition takes ``now``;
    ``releases``  its effect may be the contract's *release* (to ``VISIBLE`` or ``DEAD``);
    ``observed``  the impl method returns the result (``Queue.sweep`` returns nothing);
    ``options``   model arguments after ``args`` that a step may leave out (then ``None``):
                  ``send``'s FIFO ``group`` and ``dedup_id`` (contract section 2b). The tables
                  derived from ``args`` (arities, signatures, harness shapes) do not see them,
                  so the standard queue's tables are what they were.
    """

    name: str
    tla: str
    args: tuple[Arg, ...]
    result: Result
    contract: str | None
    harness: str | None
    impl: str | None
    function: Transition | None
    reads_clock: bool = False
    releases: bool = False
    observed: bool = True
    options: tuple[Arg, ...] = ()

    def __post_init__(self) -> None:
        kinds = [a.kind for a in self.args]
        for i, k in enumerate(kinds):
            if k is Kind.ATTEMPT and (i == 0 or kinds[i - 1] is not Kind.ID):
                raise ValueError(f"{self.name}: an attempt must follow an id (a receipt)")
        if self.function is None and (kinds != [Kind.TIME] or self.reads_clock):
            raise ValueError(f"{self.name}: a clock move takes one time and reads no clock")

    @property
    def moves_clock(self) -> bool:
        """The operation moves the model's clock instead of changing the queue."""
        return self.function is None

    @property
    def rule(self) -> str:
        """The lockstep machine's rule: the ``impl.Queue`` method, or else the name."""
        return self.impl or self.name

    @property
    def takes_receipt(self) -> bool:
        return len(self.args) >= 2 and (self.args[0].kind, self.args[1].kind) == (
            Kind.ID,
            Kind.ATTEMPT,
        )

    def signature(self) -> str:
        """``(id, attempt) -> bool``: the model arguments and the result's shape."""
        unobserved = "" if self.observed else ", or None when not observed"
        names = ", ".join(a.name for a in self.args)
        return f"({names}) -> {self.result.value}{unobserved}"

    def arguments(self, state: State, now: Time, args: tuple[object, ...]) -> dict[str, object]:
        """The keyword arguments of :attr:`function` for the model arguments ``args``."""
        out: dict[str, object] = {}
        rest = args
        if self.takes_receipt:
            id, attempt = args[0], args[1]
            assert isinstance(id, str) and isinstance(attempt, int)
            out["receipt"] = Receipt(queue=state.queue, id=id, attempt=attempt)
            rest = args[2:]
        declared = self.args[len(args) - len(rest) :]
        extra = rest[len(declared) :]
        if len(extra) > len(self.options):
            raise TypeError(f"{self.name}: {len(args)} arguments, more than it takes: {args!r}")
        for arg, value in zip(declared, rest[: len(declared)], strict=True):
            out[arg.name] = _to_spec(arg.kind, state.queue, value)
        for k, arg in enumerate(self.options):
            value = extra[k] if k < len(extra) else None
            # An option left out is passed only to a function that takes it, so a replacement
            # written for the standard queue (a mutant, a broken transition) still runs.
            if value is not None or arg.name in _parameters(self.function):
                out[arg.name] = value
        if self.reads_clock:
            out["now"] = now
        return out

    def step(self, state: State, now: Time, args: tuple[object, ...]) -> tuple[State, Time, object]:
        """Run the operation on the model: the queue's state and clock after it, and the result
        in the checker's form (a delivery as ``(id, body, attempt)``)."""
        if self.function is None:
            (dt,) = args
            assert isinstance(dt, int | float)
            return state, now + dt, None
        after, result = self.function(state, **self.arguments(state, now, args))
        if isinstance(result, Delivery):
            return after, now, _delivery(result)
        if isinstance(result, tuple) and all(isinstance(d, Delivery) for d in result):
            return after, now, tuple(map(_delivery, result))
        return after, now, result


@functools.cache
def _parameters(function: Transition | None) -> frozenset[str]:
    return (
        frozenset(inspect.signature(function).parameters) if function is not None else frozenset()
    )


def _delivery(d: Delivery) -> tuple[str, str, int]:
    return (d.id, d.body, d.attempt)


def _to_spec(kind: Kind, queue: int, value: object) -> object:
    """A model argument as the spec function takes it: receipts ``(id, attempt)`` of the
    step's queue become :class:`Receipt` values. Anything not of the kind's form is passed on
    as it is, for the spec function to refuse with an error naming the argument."""
    if kind is Kind.RECEIPTS and isinstance(value, tuple | list):
        return tuple(
            Receipt(queue, r[0], r[1]) if isinstance(r, tuple | list) and len(r) == 2 else r
            for r in value
        )
    if kind is Kind.CHANGES and isinstance(value, tuple | list):
        return tuple(
            (Receipt(queue, c[0], c[1]), c[2]) if isinstance(c, tuple | list) and len(c) == 3 else c
            for c in value
        )
    if kind is Kind.ENTRIES and isinstance(value, list):
        return tuple(tuple(e) if isinstance(e, list) else e for e in value)
    return value


class Registry:
    """An ordered set of operations, found by name; immutable, extended by copying."""

    def __init__(self, operations: Iterable[Operation]) -> None:
        self._ops: tuple[Operation, ...] = tuple(operations)
        self._by_name = {op.name: op for op in self._ops}
        for what, names in (
            ("name", [op.name for op in self._ops]),
            ("TLA+ action", [op.tla for op in self._ops]),
            ("harness op", [op.harness for op in self._ops if op.harness is not None]),
            ("rule", [op.rule for op in self._ops]),
        ):
            dup = sorted({n for n in names if names.count(n) > 1})
            if dup:
                raise ValueError(f"two operations with the {what} {dup[0]!r}")

    def __iter__(self) -> Iterator[Operation]:
        return iter(self._ops)

    def __len__(self) -> int:
        return len(self._ops)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> Operation:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no operation {name!r} in the registry ({self.names})") from None

    def __repr__(self) -> str:
        return f"Registry({', '.join(self.names)})"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(op.name for op in self._ops)

    def by_tla(self, action: str) -> Operation:
        """The operation whose TLA+ action is ``action``."""
        for op in self._ops:
            if op.tla == action:
                return op
        raise KeyError(f"no operation with the TLA+ action {action!r}")

    def with_operation(self, op: Operation) -> Registry:
        """This registry and ``op``, last."""
        return Registry((*self._ops, op))

    def replacing(self, name: str, **changes: Any) -> Registry:
        """This registry with the operation ``name`` changed (e.g. ``function=`` a broken one)."""
        self[name]  # a KeyError naming the registry for an unknown name
        return Registry(replace(op, **changes) if op.name == name else op for op in self._ops)


_ID = Arg("id", Kind.ID)
_RECEIPT = (_ID, Arg("attempt", Kind.ATTEMPT))

#: The operations of the queue, in the order of the contract's table and of TLA+'s ``Next``.
REGISTRY: Final = Registry(
    [
        Operation(
            name="send",
            tla="Send",
            args=(_ID, Arg("body", Kind.BODY, harness="payload"), Arg("delay", Kind.DELAY, "opts")),
            result=Result.BOOL,
            contract="send(id, body, delay)",
            harness="enqueue",
            impl="send",
            function=send,
            reads_clock=True,
            options=(Arg("group", Kind.GROUP, "opts"), Arg("dedup_id", Kind.DEDUP, "opts")),
        ),
        Operation(
            name="send_batch",
            tla="SendBatch",
            args=(Arg("entries", Kind.ENTRIES),),
            result=Result.BOOL,
            contract="send_batch([(id, body, delay), …])",
            harness="enqueue_batch",
            impl="send_batch",
            function=send_batch,
            reads_clock=True,
        ),
        Operation(
            name="receive",
            tla="Receive",
            args=(Arg("vt", Kind.OPTIONAL_TIME),),
            result=Result.DELIVERY,
            contract="receive(now, vt)",
            harness="reserve",
            impl="receive",
            function=receive,
            reads_clock=True,
        ),
        Operation(
            name="receive_batch",
            tla="ReceiveBatch",
            args=(Arg("n", Kind.COUNT), Arg("vt", Kind.OPTIONAL_TIME)),
            result=Result.DELIVERIES,
            contract="receive_batch(now, n, vt)",
            harness="reserve_batch",
            impl="receive_batch",
            function=receive_batch,
            reads_clock=True,
        ),
        Operation(
            name="delete",
            tla="Delete",
            args=_RECEIPT,
            result=Result.BOOL,
            contract="delete(receipt)",
            harness="ack",
            impl="delete",
            function=delete,
        ),
        Operation(
            name="delete_batch",
            tla="DeleteBatch",
            args=(Arg("receipts", Kind.RECEIPTS),),
            result=Result.BOOLS,
            contract="delete_batch([receipt, …])",
            harness="ack_batch",
            impl="delete_batch",
            function=delete_batch,
        ),
        Operation(
            name="retry",
            tla="Retry",
            args=_RECEIPT,
            result=Result.BOOL,
            contract="retry(receipt)",
            harness="retry",
            impl="retry",
            function=retry,
            releases=True,
        ),
        Operation(
            name="change_visibility",
            tla="ChangeVisibility",
            args=(*_RECEIPT, Arg("timeout", Kind.TIME, harness="t")),
            result=Result.BOOL,
            contract="change_visibility(receipt, t, now)",
            harness="extend",
            impl="change_visibility",
            function=change_visibility,
            reads_clock=True,
            releases=True,
        ),
        Operation(
            name="change_visibility_batch",
            tla="ChangeVisibilityBatch",
            args=(Arg("changes", Kind.CHANGES),),
            result=Result.BOOLS,
            contract="change_visibility_batch([(receipt, t), …], now)",
            harness="extend_batch",
            impl="change_visibility_batch",
            function=change_visibility_batch,
            reads_clock=True,
            releases=True,
        ),
        Operation(
            name="cancel",
            tla="Cancel",
            args=(_ID,),
            result=Result.BOOL,
            contract="cancel(id)",
            harness="cancel",
            impl="cancel",
            function=cancel,
        ),
        Operation(
            name="purge",
            tla="Purge",
            args=(),
            result=Result.COUNT,
            contract="purge()",
            harness="purge",
            impl="purge",
            function=purge,
        ),
        Operation(
            name="expire",
            tla="Expire",
            args=(),
            result=Result.RELEASED,
            contract="expire(now)",
            harness=None,
            impl="sweep",
            function=expire,
            reads_clock=True,
            releases=True,
            observed=False,
        ),
        Operation(
            name="advance",
            tla="Tick",
            args=(Arg("dt", Kind.TIME),),
            result=Result.NONE,
            contract=None,
            harness="advance",
            impl=None,
            function=None,
        ),
    ]
)
