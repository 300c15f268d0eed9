"""A linearizability checker for concurrent histories of the queue, against the spec.

A *history* is what concurrent threads did to one queue: for each operation, the thread, the
operation with its arguments and its result, and two timestamps, taken when it was called and
when it returned. The timestamps come from one shared monotonic counter (see
:class:`HistoryRecorder`), not from a clock, so the recording does not depend on timing.

The history is *linearizable* iff the operations can be put in one sequential order that

* respects real time: if ``a`` returned before ``b`` was called, ``a`` comes first; and
* gives every operation its recorded result when the order is run on the spec
  (:mod:`spec.transitions`), from a given initial state.

:func:`check` decides this with Wing & Gong's backtracking search: repeatedly pick an operation
that may go next (no other unplaced operation returned before it was called), run it on the
spec, keep it if the result matches, backtrack otherwise. Lowe's memoisation makes it usable:
a search node is the *set* of operations placed so far (a bitset) plus the spec state, and a node
seen before is never searched again, since what can follow depends only on those two. This is
the algorithm the Porcupine checker uses; the code here is written from its description.

The answer is a value: :class:`Linearizable` with one witness order, :class:`NotLinearizable`
with the smallest failing window and how far the search got in it, or :class:`Unknown` when the
stated budget (steps or seconds) ran out. :func:`format_history` draws a history and its verdict
as an ASCII timeline, one row per thread.

Time: the checker's state is the spec state plus a clock (:class:`ModelState`). Operations that
need ``now`` read that clock, and only ``advance(dt)`` moves it. This fits concurrent runs on a
frozen fake clock: every operation reads the same ``now`` while the threads run; the clock is
moved by a recorded ``advance`` (usually from the main thread, between or during phases).
Expiry happens where a recorded ``expire`` (``Queue.sweep``) runs or, with ``sweeper=True``,
also at any moment after a timer (a deadline or a delay) is due, as a background sweeper thread
may fire it.

A batch (``send_batch``, ``receive_batch``, ``delete_batch``, ``change_visibility_batch``) is
ONE operation: one entry of the history, placed at one point of the order, its recorded result
the whole batch's (``True``/``False``, a tuple of deliveries, a tuple of bools). A batch that
an implementation splits, letting another operation run between two of its entries, records a
result that no single point explains, and the checker rejects it (contract: ``BatchAtomic``).
"""

from __future__ import annotations

import math
import queue as stdlib_queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, ParamSpec, TypeVar

from spec.operations import REGISTRY, Kind, Registry, Result
from spec.state import Config, State, Status, Time, initial
from spec.transitions import MAX_BATCH, due, fire_delay, release

# =============================================================================================
# Operations and the step function
# =============================================================================================


def signatures(registry: Registry = REGISTRY) -> dict[str, str]:
    """Operation name -> the model arguments it takes, and what its result is."""
    return {op.name: op.signature() for op in registry}


def arities(registry: Registry = REGISTRY) -> dict[str, int]:
    """Operation name -> how many model arguments it takes."""
    return {op.name: len(op.args) for op in registry}


#: Operation name -> the model arguments it takes, and what its result is (from the registry).
SIGNATURES: Final[Mapping[str, str]] = signatures()
_ARITY: Final[Mapping[str, int]] = arities()


@dataclass(frozen=True, slots=True)
class Operation:
    """One call on the queue as the checker sees it: name, model arguments, recorded result.

    The names and arguments (see :data:`SIGNATURES`) are the spec's, with a receipt written as
    ``(id, attempt)`` and a delivery as ``(id, body, attempt)``. ``receive``, ``change_visibility``
    and ``expire`` read the checker's clock; ``advance(dt)`` moves it. An ``expire`` whose result
    is ``None`` accepts whatever the spec releases (``Queue.sweep`` returns nothing to compare).
    """

    name: str
    args: tuple[object, ...] = ()
    result: object = None

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(repr, self.args))}) -> {self.result!r}"


@dataclass(frozen=True, slots=True)
class ModelState:
    """What the checker runs operations on: the spec's queue state and the clock."""

    queue: State
    now: Time = 0.0


def initial_state(config: Config | None = None, now: Time = 0.0) -> ModelState:
    """The empty queue with ``config``, with the clock at ``now``."""
    return ModelState(queue=initial(config), now=now)


def _number(name: str, value: object, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if math.isnan(value) or math.isinf(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


def _text(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {value!r}")


def _integer(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")


def _count(name: str, value: object) -> None:
    _integer(name, value)
    assert isinstance(value, int)
    if not 1 <= value <= MAX_BATCH:
        raise ValueError(f"{name} must be in 1..{MAX_BATCH}, got {value!r}")


def _batch(
    shape: str, checks: Sequence[Callable[[str, object], None]]
) -> Callable[[str, object], None]:
    """The check of a batch argument: a tuple of 1 to ``MAX_BATCH`` tuples ``shape``, each
    field checked by ``checks``."""

    def check(name: str, value: object) -> None:
        if not isinstance(value, tuple) or not 1 <= len(value) <= MAX_BATCH:
            raise TypeError(f"{name} must be a tuple of 1 to {MAX_BATCH} {shape}, got {value!r}")
        for k, entry in enumerate(value):
            if not isinstance(entry, tuple) or len(entry) != len(checks):
                raise TypeError(f"{name}[{k}] must be a tuple {shape}, got {entry!r}")
            for field, (part, field_check) in enumerate(zip(entry, checks, strict=True)):
                field_check(f"{name}[{k}][{field}]", part)

    return check


def _delay(name: str, value: object) -> None:
    _number(name, value, optional=True)


def _dedup(name: str, value: object) -> None:
    if value is not None:
        _text(name, value)


_STANDARD_ENTRIES: Final = _batch("(id, body, delay)", (_text, _text, _delay))
_FIFO_ENTRIES: Final = _batch(
    "(id, body, delay, group, dedup_id)", (_text, _text, _delay, _text, _dedup)
)


def _entries(name: str, value: object) -> None:
    """A ``send_batch``'s entries: ``(id, body, delay)``, or on a FIFO queue (all of them)
    ``(id, body, delay, group, dedup_id)``."""
    fifo = isinstance(value, tuple) and any(isinstance(e, tuple) and len(e) == 5 for e in value)
    (_FIFO_ENTRIES if fifo else _STANDARD_ENTRIES)(name, value)


_CHECKS: Final[Mapping[Kind, Callable[[str, object], None]]] = {
    Kind.ID: _text,
    Kind.BODY: _text,
    Kind.ATTEMPT: _integer,
    Kind.TIME: _number,
    Kind.OPTIONAL_TIME: lambda name, value: _number(name, value, optional=True),
    Kind.DELAY: _delay,
    Kind.COUNT: _count,
    Kind.ENTRIES: _entries,
    Kind.RECEIPTS: _batch("(id, attempt)", (_text, _integer)),
    Kind.CHANGES: _batch("(id, attempt, timeout)", (_text, _integer, _number)),
    Kind.GROUP: _text,
    Kind.DEDUP: lambda name, value: None if value is None else _text(name, value),
}


def validate_operation(op: Operation, registry: Registry = REGISTRY) -> None:
    """Raise ``TypeError``/``ValueError`` naming the bad part unless ``op`` is well formed."""
    if not isinstance(op, Operation):
        raise TypeError(f"op must be an Operation, got {op!r}")
    if op.name not in registry:
        raise ValueError(f"op.name must be one of {sorted(registry.names)}, got {op.name!r}")
    declared = registry[op.name]
    # A FIFO send also gives its options (group, dedup id) after the declared arguments.
    n = len(declared.args)
    given = len(full_args(op, registry)) if isinstance(op.args, tuple) else -1
    if not n <= given <= n + len(declared.options):
        raise TypeError(f"op.args of {op.name} must be a tuple {declared.signature()}: {op.args!r}")
    arguments = (*declared.args, *declared.options[: given - n])
    for arg, value in zip(arguments, full_args(op, registry), strict=True):
        _CHECKS[arg.kind](f"{op.name} {arg.name}", value)


def full_args(op: Operation, registry: Registry = REGISTRY) -> tuple[object, ...]:
    """``op``'s model arguments, a trailing delay left out filled in as ``None`` (the queue's):
    ``Operation("send", (id, body))`` is a send without a delay of its own."""
    declared = registry[op.name].args
    missing = declared[len(op.args) :]
    if missing and all(a.kind is Kind.DELAY for a in missing):
        return (*op.args, *(None,) * len(missing))
    return op.args


def apply(
    state: ModelState, op: Operation, registry: Registry = REGISTRY
) -> tuple[ModelState, object]:
    """Run ``op`` on the spec: the state after it and the result the spec gives.

    ``op.result`` is ignored here; compare with :func:`result_matches`. The mapping is the
    registry's step: one spec transition per operation (``advance`` moves the clock), with the
    checker's clock as ``now``.
    """
    if op.name not in registry:
        raise ValueError(f"op.name must be one of {sorted(registry.names)}, got {op.name!r}")
    q, now, result = registry[op.name].step(state.queue, state.now, full_args(op, registry))
    return ModelState(q, now), result


def result_matches(op: Operation, model_result: object, registry: Registry = REGISTRY) -> bool:
    """Whether the recorded ``op.result`` is what the spec gave; ``None`` recorded for an
    operation whose impl returns nothing (``expire``: ``Queue.sweep``) accepts anything."""
    if op.result is None and op.name in registry and not registry[op.name].observed:
        return True
    if op.name == "send" and op.result is True and model_result == op.args[0]:
        # A FIFO send returns an id either way: a duplicate of a message with the same id
        # (the only duplicate that returns the id asked for) is recorded as an acceptance.
        return True
    if op.name == "send_batch" and isinstance(op.result, tuple):
        # A FIFO batch, entry by entry as a FIFO send (above).
        entries = op.args[0] if op.args else ()
        return (
            isinstance(model_result, tuple)
            and isinstance(entries, tuple)
            and len(op.result) == len(model_result) == len(entries)
            and all(
                (type(r) is type(m) and r == m) or (r is True and m == e[0])
                for r, m, e in zip(op.result, model_result, entries, strict=True)
            )
        )
    if op.name == "send_batch" and op.result is False and isinstance(model_result, tuple):
        # A FIFO batch that raised (Full, DuplicateIdError) tells no entry's result: it
        # matches a rejection, whichever entries the spec judged duplicates.
        return False in model_result and all(m is False or isinstance(m, str) for m in model_result)
    return type(op.result) is type(model_result) and op.result == model_result


# =============================================================================================
# Histories and verdicts
# =============================================================================================


@dataclass(frozen=True, slots=True)
class Entry:
    """One operation of a history: who ran it, what it was, and when it was called and returned.

    ``ret`` is ``None`` for an operation that never returned (still blocked, or its thread
    died): it may or may not have taken effect, and its result is not compared.
    """

    thread: str
    op: Operation
    call: float
    ret: float | None

    def __str__(self) -> str:
        result = "?" if self.ret is None else repr(self.op.result)
        args = ", ".join(map(repr, self.op.args))
        return f"{self.thread}: {self.op.name}({args}) -> {result}"


@dataclass(frozen=True, slots=True)
class SweeperStep:
    """A release that no recorded operation made: the background sweeper expired ``id``."""

    id: str

    def __str__(self) -> str:
        return f"sweeper: expire -> ({self.id!r},)"


#: One element of a linearization: a recorded operation, or a background sweeper release.
Step = Entry | SweeperStep


@dataclass(frozen=True, slots=True)
class Linearizable:
    """The history is linearizable; ``order`` is one sequential order that explains it."""

    order: tuple[Step, ...]
    steps: int

    def __bool__(self) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class Mismatch:
    """``entry`` could go next in time, but there the spec gives ``expected``, not its result."""

    entry: Entry
    expected: object


@dataclass(frozen=True, slots=True)
class NotLinearizable:
    """No sequential order explains the history. What to read, smallest first:

    ``culprit``  the operation whose return first makes the history unexplainable: the history
                 cut just after it returned (the *window*) already fails, and every earlier cut
                 has an explanation (or could not be decided within the budget);
    ``window``   every operation called before that cut, in history order; those that had not
                 returned by then (``ret`` > the cut's time) count as pending in the window;
    ``longest``  the longest order of window operations the search could make agree with the
                 spec;
    ``stuck``    every operation that could go next after ``longest``, with what the spec gives
                 there instead of its recorded result.
    """

    culprit: Entry
    window: tuple[Entry, ...]
    longest: tuple[Step, ...]
    stuck: tuple[Mismatch, ...]
    steps: int

    def __bool__(self) -> bool:
        return False

    def __str__(self) -> str:
        """The verdict for a person: the culprit, the longest order the spec agrees with, and
        what the spec gives instead of each recorded result that could have come next."""
        lines = [f"not linearizable at {self.culprit}", "the spec agrees with this order:"]
        lines += [f"  {i}. {step}" for i, step in enumerate(self.longest, 1)]
        lines.append("then no operation can go next:" if self.stuck else "then nothing fits.")
        lines += [f"  {m.entry}, where the spec gives {m.expected!r}" for m in self.stuck]
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Unknown:
    """The budget ran out before the search could decide (``reason`` says which)."""

    reason: str
    steps: int

    def __bool__(self) -> bool:
        return False


Verdict = Linearizable | NotLinearizable | Unknown


def validate_history(history: Sequence[Entry], registry: Registry = REGISTRY) -> None:
    """Raise ``TypeError``/``ValueError`` naming the first bad entry of ``history``, if any."""
    for i, e in enumerate(history):
        if not isinstance(e, Entry):
            raise TypeError(f"history[{i}] must be an Entry, got {e!r}")
        try:
            validate_operation(e.op, registry)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"history[{i}]: {exc}") from None
        if not isinstance(e.thread, str):
            raise TypeError(f"history[{i}].thread must be a str, got {e.thread!r}")
        _number(f"history[{i}].call", e.call)
        if e.ret is not None:
            _number(f"history[{i}].ret", e.ret)
            if e.ret < e.call:
                raise ValueError(f"history[{i}]: ret {e.ret!r} is before call {e.call!r}")


# =============================================================================================
# The search
# =============================================================================================


class _OutOfBudget(Exception):
    pass


class _Budget:
    """Counts spec steps and reads a timer; raises ``_OutOfBudget`` once either limit is hit."""

    def __init__(self, max_steps: int | None, max_seconds: float | None) -> None:
        self.max_steps = max_steps
        self.steps = 0
        # The budget in seconds is wall time by nature; nothing else here reads a clock.
        self.deadline = None if max_seconds is None else time.perf_counter() + max_seconds

    def spend(self) -> None:
        self.steps += 1
        if self.max_steps is not None and self.steps > self.max_steps:
            raise _OutOfBudget(f"step budget of {self.max_steps} spent")
        # Read the timer only every 256 steps: it costs more than a spec step.
        deadline = self.deadline
        if deadline is not None and self.steps % 256 == 0 and time.perf_counter() > deadline:
            raise _OutOfBudget("time budget spent")


@dataclass(frozen=True, slots=True)
class _Found:
    order: tuple[int | SweeperStep, ...]


@dataclass(frozen=True, slots=True)
class _Failed:
    longest: tuple[int | SweeperStep, ...]
    stuck: tuple[tuple[int, object], ...]


def _search(
    history: Sequence[Entry],
    init: ModelState,
    sweeper: bool,
    budget: _Budget,
    registry: Registry = REGISTRY,
) -> _Found | _Failed:
    """Wing & Gong's search with Lowe's memo over ``(placed set, state)``; entries by index."""
    n = len(history)
    rets = [math.inf if e.ret is None else e.ret for e in history]
    by_call = sorted(range(n), key=lambda i: history[i].call)
    completed = sorted((i for i in range(n) if history[i].ret is not None), key=rets.__getitem__)
    goal = sum(1 << i for i in completed)

    # A child: the step taken, the placed set after it, the state after it.
    Child = tuple[int | SweeperStep, int, ModelState]

    def expand(placed: int, state: ModelState) -> tuple[list[Child], list[tuple[int, object]]]:
        # An unplaced operation may go next iff no unplaced one returned before it was called.
        bound = math.inf
        for i in completed:
            if not placed >> i & 1:
                bound = rets[i]
                break
        children: list[Child] = []
        mismatches: list[tuple[int, object]] = []
        for i in by_call:
            e = history[i]
            if e.call > bound:
                break
            if placed >> i & 1:
                continue
            budget.spend()
            after, result = apply(state, e.op, registry)
            if e.ret is None or result_matches(e.op, result, registry):
                children.append((i, placed | 1 << i, after))
            else:
                mismatches.append((i, result))
        if sweeper:
            ids = due(state.queue, state.now)
            if ids:
                budget.spend()
                after_q = _fire(state.queue, ids[0])
                children.append((SweeperStep(ids[0]), placed, ModelState(after_q, state.now)))
        return children, mismatches

    if goal == 0:
        return _Found(())
    seen: set[tuple[int, ModelState]] = {(0, init)}
    path: list[int | SweeperStep] = []
    kids, stuck = expand(0, init)
    best: tuple[tuple[int | SweeperStep, ...], list[tuple[int, object]]] = ((), stuck)
    # Each frame: its children and the index of the next one to try.
    stack: list[tuple[list[Child], list[int]]] = [(kids, [0])]
    while stack:
        kids, cursor = stack[-1]
        if cursor[0] == len(kids):
            stack.pop()
            if path:
                path.pop()
            continue
        step, placed, state = kids[cursor[0]]
        cursor[0] += 1
        if (placed, state) in seen:
            continue
        seen.add((placed, state))
        path.append(step)
        if placed & goal == goal:
            return _Found(tuple(path))
        kids, stuck = expand(placed, state)
        if len(path) > len(best[0]):
            best = (tuple(path), stuck)
        stack.append((kids, [0]))
    return _Failed(best[0], tuple(best[1]))


def _fire(q: State, id: str) -> State:
    """The first due timer of ``q`` fires: a delay makes its message visible, a deadline
    releases it (``spec.expire``'s step for one id)."""
    m = q.get(id)
    assert m is not None
    return fire_delay(q, id) if m.status is Status.DELAYED else release(q, id)


def _cut(history: Sequence[Entry], at: float) -> tuple[list[int], list[Entry]]:
    """The history as seen at time ``at``: calls up to then, unreturned ones made pending."""
    kept: list[int] = []
    view: list[Entry] = []
    for i, e in enumerate(history):
        if e.call <= at:
            kept.append(i)
            returned = e.ret is not None and e.ret <= at
            view.append(e if returned else Entry(e.thread, e.op, e.call, None))
    return kept, view


def check(
    history: Sequence[Entry],
    config: Config | None = None,
    *,
    start: ModelState | None = None,
    sweeper: bool = False,
    max_steps: int | None = 1_000_000,
    max_seconds: float | None = None,
    registry: Registry = REGISTRY,
) -> Verdict:
    """Decide whether ``history`` is linearizable with respect to the spec.

    The spec starts from ``start`` or else from the empty queue with ``config`` and the clock at
    0. ``sweeper=True`` lets the spec release any due in-flight message at any moment (between
    recorded operations), as a background sweeper thread may; by default expiry happens only
    where a recorded ``expire`` runs.

    Returns :class:`Linearizable`, :class:`NotLinearizable` (with the smallest failing window:
    the earliest return after which the history cannot be explained, found by bisection, since
    a history that can be explained up to a time can also be explained up to any earlier time),
    or :class:`Unknown` when ``max_steps`` spec steps or ``max_seconds`` seconds are spent
    (each bisection probe gets the same budget again). Raises ``TypeError``/``ValueError``
    naming the bad argument before searching. ``registry`` declares the operations.
    """
    validate_history(history, registry)
    if config is not None and not isinstance(config, Config):
        raise TypeError(f"config must be a spec Config, got {config!r}")
    if start is not None and not isinstance(start, ModelState):
        raise TypeError(f"start must be a ModelState, got {start!r}")
    if config is not None and start is not None:
        raise ValueError("give config or start, not both")
    if max_steps is not None and max_steps < 0:
        raise ValueError(f"max_steps must be >= 0 or None, got {max_steps!r}")
    if max_seconds is not None:
        _number("max_seconds", max_seconds)
    init = start if start is not None else initial_state(config)

    def run(entries: Sequence[Entry]) -> tuple[_Found | _Failed | str, int]:
        budget = _Budget(max_steps, max_seconds)
        try:
            return _search(entries, init, sweeper, budget, registry), budget.steps
        except _OutOfBudget as exc:
            return str(exc), budget.steps

    outcome, steps = run(history)
    if isinstance(outcome, str):
        return Unknown(outcome, steps)
    if isinstance(outcome, _Found):
        order = tuple(s if isinstance(s, SweeperStep) else history[s] for s in outcome.order)
        return Linearizable(order, steps)

    # Bisect over return times for the earliest cut that already fails. A probe that runs out
    # of budget proves nothing, so it counts as "passes": the window stays a proven failure.
    # ``kept`` maps a probe's entry indices back to the history's.
    rets = sorted({e.ret for e in history if e.ret is not None})
    failed, kept, cut_time = outcome, list(range(len(history))), rets[-1]
    lo, hi = 0, len(rets) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        probe_kept, view = _cut(history, rets[mid])
        probe, spent = run(view)
        steps += spent
        if isinstance(probe, _Failed):
            failed, kept, cut_time, hi = probe, probe_kept, rets[mid], mid
        else:
            lo = mid + 1

    def original(s: int | SweeperStep) -> Step:
        return s if isinstance(s, SweeperStep) else history[kept[s]]

    return NotLinearizable(
        culprit=next(e for e in history if e.ret == cut_time),
        window=tuple(e for e in history if e.call <= cut_time),
        longest=tuple(original(s) for s in failed.longest),
        stuck=tuple(Mismatch(history[kept[i]], r) for i, r in failed.stuck),
        steps=steps,
    )


# =============================================================================================
# Recording histories
# =============================================================================================

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True, eq=False)
class Call:
    """One recorded call, raw: what :class:`HistoryRecorder` saw before any adapting.

    ``value`` is what ``fn`` returned, ``error`` what it raised (both ``None`` while pending).
    ``ret`` is ``None`` while the call has not returned.
    """

    thread: str
    name: str
    args: tuple[object, ...]
    kwargs: Mapping[str, object]
    call: int
    ret: int | None = None
    value: object = None
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class Raised:
    """The result of a call that raised an exception no adapter rule maps to a spec result.

    It never equals a spec result, so the checker reports the call instead of ignoring it.
    """

    type: str
    message: str


#: Turns a raw recorded call into the checker's operation.
Adapter = Callable[[Call], Operation]


@dataclass(frozen=True, slots=True)
class QueueAdapter:
    """The default :data:`Adapter`: maps ``impl.Queue`` / ``impl.JobQueue`` calls by duck typing.

    ``visibility_timeout`` is the queue's default, used for a ``receive`` called without a
    ``visibility_timeout=`` keyword; give the same value as the queue's constructor.

    Call names are the operation names and their ``impl.Queue`` methods (``sweep`` for
    ``expire``), from ``registry``; send and receive are read as below, a receipt operation's
    arguments as a receipt (or ``(id, attempt)``) and then the rest, any other operation's as
    its model arguments. Values: a delivery is
    anything with ``.id``, ``.attempt`` and ``.body`` (or ``.payload``); a receipt anything with
    ``.id`` and ``.attempt``, or the two positional arguments ``(id, attempt)`` of the job-queue
    API. ``send`` returning an id (or ``True``) is accepted; raising ``queue.Full`` or a
    ``DuplicateIdError`` is rejected (``False``); its ``delay=`` keyword is the model's delay,
    left out without one (``None``, the queue's: :func:`full_args`). ``receive`` raising
    ``queue.Empty`` or returning ``None`` is ``None``. Any other exception becomes a
    :class:`Raised` result.

    The batches: ``send_batch(entries)`` with entries having ``.body``, ``.id`` and ``.delay``
    (``impl.Entry``; an entry without an id takes the id the call returned for it), or
    ``(id, body, delay)`` tuples; it returns the ids (accepted, ``True``) or raises
    ``queue.Full``/``DuplicateIdError`` (``False``). ``receive_batch(max_messages=10, *,
    visibility_timeout=...)`` returns the deliveries (``queue.Empty``: none, ``()``).
    ``delete_batch(receipts)`` and ``change_visibility_batch(changes)`` (``(receipt, timeout)``
    pairs) return lists of bools, recorded as tuples; ``purge()`` returns a count.

    FIFO queues (contract section 2b): ``FifoQueue.send(body, *, group, id=..., dedup_id=...)`` is
    ``send(id, body, None, group, dedup_id)`` (the registry's options after its arguments; check
    with ``Config(fifo=True)``). It returns an id either way: another id than the one asked for
    is a duplicate (recorded as that earlier id, the model's result); the id asked for, or a
    generated one, is recorded as ``True``, which :func:`result_matches` also accepts for a
    duplicate of a message with that very id. ``FifoQueue.send_batch`` (entries with a
    ``group``) is ``send_batch`` with ``(id, body, None, group, dedup_id)`` entries and a
    result per entry read the same way; a batch that raised ``Full``/``DuplicateIdError`` is
    ``False``, which matches any spec rejection (whichever entries it found duplicates).
    """

    visibility_timeout: float | None = 30.0
    registry: Registry = REGISTRY

    def __call__(self, c: Call) -> Operation:
        names = impl_names(self.registry)
        name = names.get(c.name, c.name)
        if name not in self.registry:
            raise ValueError(f"call name must be one of {sorted(names)}: {c.name!r}")
        args = self._args(name, c)
        if c.ret is None:
            return Operation(name, args, None)
        return Operation(name, args, self._result(name, c))

    def _args(self, name: str, c: Call) -> tuple[object, ...]:
        a = c.args
        if name == "send":
            if "group" in c.kwargs:  # FifoQueue.send(body, *, group, id=..., dedup_id=...)
                id = c.kwargs.get("id")
                chosen = c.value if isinstance(c.value, str) else None
                return (
                    id if id is not None else chosen,
                    a[0],
                    None,
                    c.kwargs["group"],
                    c.kwargs.get("dedup_id"),
                )
            # Without a delay= keyword, the delay is left out: the queue's (see full_args).
            delay = (c.kwargs["delay"],) if "delay" in c.kwargs else ()
            if "id" in c.kwargs:  # Queue.send(body, *, id=...)
                return (c.kwargs["id"], a[0], *delay)
            if len(a) == 2:  # JobQueue.enqueue(id, payload)
                return (a[0], a[1], *delay)
            if isinstance(c.value, str):  # Queue.send(body) chose the id
                return (c.value, a[0], *delay)
            raise ValueError(f"send: cannot tell the id of {c!r}")
        if name == "receive":
            return (c.kwargs.get("visibility_timeout", self.visibility_timeout),)
        if name == "receive_batch":
            n = a[0] if a else c.kwargs.get("max_messages", 10)
            return (n, c.kwargs.get("visibility_timeout", self.visibility_timeout))
        if name == "send_batch":
            entries = a[0] if a else c.kwargs["entries"]
            assert isinstance(entries, Iterable)
            ids = c.value if isinstance(c.value, list) else None
            if _fifo_entries(entries):  # FifoQueue.send_batch: Entry(group=, dedup_id=)
                return (tuple(_fifo_entry(k, e, ids) for k, e in enumerate(entries)),)
            return (tuple(_entry(k, e, ids) for k, e in enumerate(entries)),)
        op = self.registry[name]
        if op.takes_receipt:  # a receipt, or (id, attempt), then the other arguments
            rest = len(op.args) - 2
            head, tail = (a[:-rest], a[-rest:]) if rest else (a, ())
            return (*_receipt(name, head), *tail)
        out = []
        for arg, value in zip(op.args, a, strict=False):
            if arg.kind is Kind.RECEIPTS:
                assert isinstance(value, Iterable)
                value = tuple(_one_receipt(name, r) for r in value)
            elif arg.kind is Kind.CHANGES:
                assert isinstance(value, Iterable)
                value = tuple((*_one_receipt(name, r), t) for r, t in value)
            out.append(value)
        return tuple(out)

    def _result(self, name: str, c: Call) -> object:
        if c.error is not None:
            exc = c.error
            if name == "receive" and isinstance(exc, stdlib_queue.Empty):
                return None
            if name == "receive_batch" and isinstance(exc, stdlib_queue.Empty):
                return ()
            if name in ("send", "send_batch") and (
                isinstance(exc, stdlib_queue.Full)
                or (isinstance(exc, ValueError) and type(exc).__name__ == "DuplicateIdError")
            ):
                return False
            return Raised(type(exc).__name__, str(exc))
        v = c.value
        op = self.registry[name]
        if name == "send":
            if "group" in c.kwargs and isinstance(v, str):
                # FifoQueue.send returns the earlier id for a duplicate: another id than the
                # one asked for is a duplicate (see result_matches for the same id).
                asked = c.kwargs.get("id")
                return True if asked is None or v == asked else v
            return v is True or isinstance(v, str)
        if name == "send_batch":
            entries = c.args[0] if c.args else c.kwargs["entries"]
            assert isinstance(entries, Iterable)
            if _fifo_entries(entries) and isinstance(v, list):
                # As a FIFO send, entry by entry: another id than the one asked for is a
                # duplicate (the earlier id), the id asked for or a generated one ``True``.
                asked = [getattr(e, "id", None) for e in entries]
                return tuple(
                    True if want is None or got == want else got
                    for want, got in zip(asked, v, strict=True)
                )
            return v is True or isinstance(v, list)
        if op.result is Result.DELIVERIES:
            assert isinstance(v, Iterable)
            return tuple(_delivered(d) for d in v)
        if op.result is Result.BOOLS:
            assert isinstance(v, Iterable)
            return tuple(v)
        if op.result is Result.DELIVERY:
            return None if v is None else _delivered(v)
        if op.result is Result.NONE or not op.observed:
            return None
        return v


def _delivered(v: object) -> tuple[object, object, object]:
    """A delivery as the model writes it: ``(id, body, attempt)`` (``.payload`` for a body)."""
    body = getattr(v, "body", None)
    if body is None:
        body = getattr(v, "payload", None)
    return (getattr(v, "id", None), body, getattr(v, "attempt", None))


def _fifo_entries(entries: Iterable[object]) -> bool:
    """Whether a ``send_batch``'s entries are a FIFO queue's: ``impl.Entry``-like values with a
    ``group`` (a standard queue refuses a group, so one entry with it tells)."""
    return any(getattr(e, "group", None) is not None for e in entries)


def _fifo_entry(k: int, e: object, ids: list[object] | None) -> tuple[object, ...]:
    """Entry ``k`` of a FIFO ``send_batch`` as ``(id, body, None, group, dedup_id)``, the
    spec's FIFO batch entry (no delay of its own: the queue's); its id as :func:`_entry`."""
    id, body, _ = _entry(k, e, ids)
    return (id, body, None, getattr(e, "group", None), getattr(e, "dedup_id", None))


def _entry(k: int, e: object, ids: list[object] | None) -> tuple[object, object, object]:
    """Entry ``k`` of a ``send_batch`` as ``(id, body, delay)``: an ``impl.Entry``-like value
    (``.body``, ``.id``, ``.delay``; no id: the one the call returned for it), or a tuple."""
    if isinstance(e, tuple):
        return (e[0], e[1], e[2] if len(e) > 2 else None)
    id = getattr(e, "id", None)
    if id is None and ids is not None and k < len(ids):
        id = ids[k]
    # A rejected batch of generated ids: the ids were never chosen. "?k" is no valid id, so it
    # names no message; the checker sees the batch rejected with whatever room there was.
    return (f"?{k}" if id is None else id, getattr(e, "body", None), getattr(e, "delay", None))


def impl_names(registry: Registry = REGISTRY) -> dict[str, str]:
    """The call names :class:`QueueAdapter` accepts -> operation: each operation's name and its
    ``impl.Queue`` method (``sweep`` -> ``expire``)."""
    out = {op.name: op.name for op in registry}
    out |= {op.impl: op.name for op in registry if op.impl is not None}
    return out


def _receipt(name: str, args: tuple[object, ...]) -> tuple[object, object]:
    if len(args) == 2:
        return (args[0], args[1])
    if len(args) == 1 and hasattr(args[0], "id") and hasattr(args[0], "attempt"):
        return (getattr(args[0], "id"), getattr(args[0], "attempt"))  # noqa: B009
    raise TypeError(f"{name}: expected a receipt (.id, .attempt) or (id, attempt), got {args!r}")


def _one_receipt(name: str, r: object) -> tuple[object, object]:
    """One receipt of a batch: a receipt (``.id``, ``.attempt``) or an ``(id, attempt)`` pair."""
    if isinstance(r, tuple) and len(r) == 2:
        return (r[0], r[1])
    return _receipt(name, (r,))


class HistoryRecorder:
    """Records concurrent calls on any object as a history; safe to share between threads.

    ``rec.call("t1", "delete", q.delete, receipt)`` calls ``q.delete(receipt)`` and returns or
    raises exactly what it does, recording the call with a sequence number taken just before
    the call and another taken just after it returns or raises. Both come from one counter
    under one lock, so if call ``a`` returned before call ``b`` started, ``a.ret < b.call``:
    the real-time order the checker needs, without reading any clock. :meth:`history` turns
    the records into :class:`Entry` values through the adapter (default :class:`QueueAdapter`).
    """

    def __init__(self, adapter: Adapter | None = None) -> None:
        self._adapter: Adapter = adapter if adapter is not None else QueueAdapter()
        self._lock = threading.Lock()
        self._next = 0
        self._calls: list[Call] = []

    def call(
        self, thread: str, name: str, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs
    ) -> R:
        """Call ``fn(*args, **kwargs)`` as operation ``name`` of ``thread``, and record it."""
        if not isinstance(thread, str):
            raise TypeError(f"thread must be a str, got {thread!r}")
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {name!r}")
        with self._lock:
            self._next += 1
            slot = len(self._calls)
            started = Call(thread, name, tuple(args), dict(kwargs), self._next)
            self._calls.append(started)
        try:
            value = fn(*args, **kwargs)
        except BaseException as exc:
            self._finish(slot, started, None, exc)
            raise
        self._finish(slot, started, value, None)
        return value

    def _finish(self, slot: int, c: Call, value: object, error: BaseException | None) -> None:
        with self._lock:
            self._next += 1
            self._calls[slot] = Call(
                c.thread, c.name, c.args, c.kwargs, c.call, self._next, value, error
            )

    def calls(self) -> list[Call]:
        """The raw records so far, in call order (pending calls have ``ret`` ``None``)."""
        with self._lock:
            return list(self._calls)

    def history(self) -> list[Entry]:
        """The records so far as a history, in call order; calls still running are pending."""
        return [Entry(c.thread, self._adapter(c), c.call, c.ret) for c in self.calls()]


# =============================================================================================
# Printing
# =============================================================================================


def _step_label(s: Step, number: Mapping[Entry, int]) -> str:
    if isinstance(s, SweeperStep):
        return f"sweep({s.id!r})"
    return f"#{number[s]}" if s in number else f"({s})"  # drawn history may be a part


def format_history(history: Sequence[Entry], verdict: Verdict | None = None) -> str:
    """Draw ``history`` as an ASCII timeline, one row per thread, then a legend and the verdict.

    Operations are numbered ``#1, #2, ...`` in history order; ``[#3---]`` spans from call to
    return on a time axis that keeps only the order of the timestamps; ``>`` marks a call that
    never returned. With a :class:`NotLinearizable` verdict the legend marks the culprit ``!``,
    the rest of the window ``*``, and the window's still-running operations ``~``.
    """
    number = {e: i + 1 for i, e in reversed(list(enumerate(history)))}
    times = sorted({e.call for e in history} | {e.ret for e in history if e.ret is not None})
    col = {t: i for i, t in enumerate(times)}
    w = max(4, len(str(len(history))) + 3)
    end = (len(times) + 1) * w
    threads = list(dict.fromkeys(e.thread for e in history))
    name_w = max([len(t) for t in threads] + [6])

    lines = [f"{'thread':<{name_w}} | time runs left to right (order of call/return only)"]
    for t in threads:
        # A thread runs one call at a time, but a hand-made history may overlap its own calls:
        # those go on extra rows (lanes) under the thread's first one.
        lanes: list[list[str]] = []
        last: list[int] = []  # per lane: the last column drawn
        for e in history:
            if e.thread != t:
                continue
            a = col[e.call] * w
            b = end - 1 if e.ret is None else col[e.ret] * w
            lane = next((k for k in range(len(lanes)) if last[k] < a), len(lanes))
            if lane == len(lanes):
                lanes.append([" "] * end)
                last.append(-1)
            chars = lanes[lane]
            chars[a] = "["
            chars[a + 1 : b] = ["-"] * (b - a - 1)
            chars[b] = ">" if e.ret is None else "]"
            label = f"#{number[e]}"
            if b - a - 1 >= len(label):
                chars[a + 1 : a + 1 + len(label)] = list(label)
            last[lane] = b
        for k, chars in enumerate(lanes):
            lines.append(f"{t if k == 0 else '':<{name_w}} | {''.join(chars).rstrip()}")

    marks: dict[Entry, str] = {}
    if isinstance(verdict, NotLinearizable):
        cut = verdict.culprit.ret
        for e in verdict.window:
            pending = e.ret is None or (cut is not None and e.ret > cut)
            marks[e] = "~" if pending else "*"
        marks[verdict.culprit] = "!"
    lines.append("")
    for e in history:
        lines.append(f"{marks.get(e, ' ')} {'#' + str(number[e]):>5}  {e}")
    if verdict is not None:
        lines.append("")
        lines.extend(format_verdict(verdict, history))
    return "\n".join(lines)


def format_verdict(verdict: Verdict, history: Sequence[Entry]) -> list[str]:
    """The verdict in words, one line per item, numbering operations as :func:`format_history`."""
    number = {e: i + 1 for i, e in reversed(list(enumerate(history)))}
    if isinstance(verdict, Unknown):
        return [f"UNKNOWN: {verdict.reason} after {verdict.steps} spec steps."]
    if isinstance(verdict, Linearizable):
        order = " ".join(_step_label(s, number) for s in verdict.order)
        return [f"LINEARIZABLE, for example in this order: {order or '(nothing to order)'}"]
    c = verdict.culprit
    out = [
        f"NOT LINEARIZABLE. The smallest failing window ends when {_step_label(c, number)} "
        "returns:",
        f"no order of its {len(verdict.window)} operations (marked !, * and ~; ~ were still "
        "running then, so may or may not have taken effect) gives the spec's results.",
        "Longest order the spec agrees with: "
        + (" ".join(_step_label(s, number) for s in verdict.longest) or "(none)"),
        "After it, every operation that may go next gets another result from the spec:",
    ]
    for m in verdict.stuck:
        out.append(
            f"  {_step_label(m.entry, number)} {m.entry.thread}: {m.entry.op.name} returned "
            f"{m.entry.op.result!r}, the spec gives {m.expected!r}"
        )
    return out


def sequential(ops: Iterable[tuple[str, Operation]]) -> list[Entry]:
    """A sequential history: ``(thread, op)`` pairs, each returning before the next is called."""
    return [Entry(t, op, 2 * i, 2 * i + 1) for i, (t, op) in enumerate(ops)]
