"""The scenario format of the harness (contract section 4): its values and its strict parser.

A scenario is one JSON object per line::

    {"capacity": 2, "visibility_timeout": 30, "max_receives": 3, "ops": [["enqueue", "a", "A"]]}

This module turns such a line into a :class:`Scenario` of typed operations, or raises
:class:`ScenarioError` with one sentence saying what is wrong. The ops that act on a queue are
the operations of the registry (:mod:`spec.operations`) under their harness names, each argument
checked by its kind (:func:`op_table`); ``dead``, ``new`` and ``use`` are the harness's own.
It runs nothing: both targets of the harness (:mod:`model_tests.targets`) share this parser, so
they can never disagree about what a scenario means.

Choices the contract leaves open, made here and documented in ``docs/testing.md``:

- ``capacity`` is required; ``null`` means unbounded, otherwise an integer >= 0.
- ``visibility_timeout`` (default ``null``: never expires) is a finite number >= 0;
  ``max_receives`` (default ``null``: never dead-letter) is an integer >= 1.
- ``["reserve", null]`` is a delivery that never expires; ``["reserve"]`` uses the queue's
  ``visibility_timeout``.
- Times (``vt``, ``t``, ``dt``) are finite numbers in ``[0, MAX_TIME]``; attempts and queue
  indexes are integers >= 0 (``true``/``false`` are not numbers here); ids match
  ``[A-Za-z0-9_-]{1,128}``; payloads are any JSON string.
- ``["use", i]`` must name a queue that exists at that point of the scenario (queue 0 exists
  from the start, each ``["new"]`` adds the next index). This is checked before anything runs.
- ``delay`` (default 0) is the queue's default delay, a time like the others; an
  ``["enqueue", id, payload]`` without a ``"delay"`` option (or a batch entry without one) uses
  it.
- ``"fifo": true`` (contract section 2b) makes every queue of the scenario a FIFO queue, with
  ``dedup_interval`` (a time > 0, default 300; accepted but unused on standard queues). On a FIFO
  queue every ``enqueue`` (and batch entry) needs ``{"group": g}`` (an id) and may carry
  ``"dedup"`` (an id); ``"delay"`` is refused there (the queue's ``delay`` applies), and
  ``"group"``/``"dedup"`` are refused on a standard queue.
- Batches (``enqueue_batch``, ``ack_batch``, ``extend_batch``) take 1 to 10 entries and
  ``reserve_batch`` an ``n`` in 1..10; anything else is invalid, as is an unknown option. An id
  repeated inside one ``enqueue_batch`` is a valid scenario: the batch is rejected (``false``), as
  one that does not fit is. A ``dedup`` repeated inside one FIFO ``enqueue_batch`` is an invalid
  batch (contract section 2b), so an invalid scenario.
- Unknown keys, duplicate keys and the non-standard JSON constants ``NaN``/``Infinity`` are
  errors, so that a typo cannot silently fall back to a default.

A system of queues (contract section 7): dead-letter targets, redrive, retention.

- ``"retention"`` (default ``null``: messages never age out) is a time > 0, the retention of
  every queue made with the scenario's settings (queue 0 and each ``["new"]``).
- ``"dead_letter": {"visibility_timeout": vt, "retention": r}`` (both keys optional: ``vt``
  defaults to the scenario's ``visibility_timeout``, ``r`` to ``null``) gives queue 0 a
  dead-letter target: queue 1, made with queue 0 (before it, as the target of a system must
  be), of the same kind, unbounded (``capacity`` null), no ``delay``, no ``max_receives``
  (so no chain). It needs ``max_receives`` (a message moves only when its receives run out).
  A message that dies in queue 0 moves to queue 1's visible tail; ``["use", 1]`` makes queue 1
  current, so every op (``reserve``, ``ack``, ``dead``...) acts on it; each ``["new"]`` then
  adds index 2, 3, ... (a queue with no target, as before).
- The system ops (:data:`SYSTEM_OPS`), each valid only where it can mean something:
  ``["redrive"]`` or ``["redrive", {"rate": r, "to": i}]`` starts a redrive of queue 1 (the
  dead-letter target, whichever queue is current): ``rate`` messages per second (a time > 0;
  without it the whole scope moves at once), ``to`` the destination, which can only be 0, the
  one other queue of the system (a ``["new"]`` queue is in no system; without ``to`` each
  message goes back to its source, queue 0 too: SQS's ``DestinationArn`` named or not); it
  outputs ``true``, or ``false`` when a task of queue 1 is already running.
  ``["redrive_cancel"]`` cancels queue 1's most recent task: ``true`` if it was running.
  ``["redrive_status"]`` outputs that task as ``[status, moved, skipped, to_move]`` (status
  ``"running"``, ``"completed"`` or ``"cancelled"``), ``null`` before any task. These three need
  ``"dead_letter"``. ``["aged"]``: ids of the current queue's aged-out messages, in the order
  they aged out (always valid; ``[]`` without retention).
- A scenario with neither key, and without the system ops, means what it meant before.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, NoReturn, TypeAlias

from spec.operations import REGISTRY, Arg, Kind, Operation, Registry

#: Largest time value (seconds) a scenario may use; keeps every clock sum finite and exact enough.
MAX_TIME: Final = 1e9

#: The id form of the contract (section 3).
ID_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")

_KEYS: Final = frozenset(
    {
        "capacity",
        "visibility_timeout",
        "max_receives",
        "delay",
        "fifo",
        "dedup_interval",
        "ops",
        "retention",
        "dead_letter",
    }
)

#: The keys of a scenario's ``"dead_letter"`` object.
_DEAD_LETTER_KEYS: Final = ("visibility_timeout", "retention")

#: The index of queue 0's dead-letter target in a scenario with ``"dead_letter"``.
DLQ_INDEX: Final = 1

#: How many entries a batch may have (contract section 2, as SQS): 1 to ``MAX_BATCH``.
MAX_BATCH: Final = 10

#: The options of an ``enqueue`` (or of a batch entry) that a standard queue takes.
OPTIONS: Final = ("delay",)
#: The options only a FIFO queue takes (contract section 2b).
FIFO_OPTIONS: Final = ("group", "dedup")
#: The default deduplication interval of a FIFO queue, seconds (SQS's five minutes).
DEDUP_INTERVAL: Final = 300.0


class ScenarioError(ValueError):
    """A line that is not a valid scenario; the message says what is wrong, on one line."""


class QueueDefault(enum.Enum):
    """Marks a ``reserve`` without a ``vt`` (use the queue's configured visibility timeout), or a
    send without a ``"delay"`` option (use the queue's configured delay)."""

    QUEUE_DEFAULT = "queue default"


QUEUE_DEFAULT: Final = QueueDefault.QUEUE_DEFAULT


# -- the operations ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Invoke:
    """An op of the registry (:mod:`spec.operations`): ``["enqueue", id, payload]`` is
    ``Invoke("send", (id, payload))``, ``["reserve"]`` is ``Invoke("receive", (QUEUE_DEFAULT,))``,
    ``["ack", id, attempt]`` is ``Invoke("delete", (id, attempt))``, and so on: ``name`` is the
    operation's (the targets' method), ``args`` its model arguments, parsed.

    A receipt (``id, attempt``) names the current queue. ``advance`` moves the shared clock,
    then every queue sweeps.

    The ops of delays, batches and purge (contract section 2): ``["enqueue", id, payload, {"delay":
    d}]`` is
    ``Invoke("send", (id, payload, d))`` (``QUEUE_DEFAULT`` for the delay without the option);
    ``["enqueue_batch", [[id, payload], [id, payload, opts], ...]]`` is
    ``Invoke("send_batch", (((id, payload, delay), ...),))``; ``["reserve_batch", n, vt]`` is
    ``Invoke("receive_batch", (n, vt))``; ``["ack_batch", [[id, attempt], ...]]`` is
    ``Invoke("delete_batch", (((id, attempt), ...),))``; ``["extend_batch", [[id, attempt, t],
    ...]]`` is ``Invoke("change_visibility_batch", (((id, attempt, t), ...),))``; ``["purge"]``
    is ``Invoke("purge")``.

    On a FIFO queue (contract section 2b) a send carries its group and dedup id after its delay
    (always
    ``QUEUE_DEFAULT`` there): ``["enqueue", id, payload, {"group": g, "dedup": d}]`` is
    ``Invoke("send", (id, payload, QUEUE_DEFAULT, g, d))`` (``d`` is ``None`` without the
    option), and each ``enqueue_batch`` entry is such a 5-tuple.
    """

    name: str
    args: tuple[object, ...] = ()


@dataclass(frozen=True, slots=True)
class Dead:
    """``["dead"]``: ids of the current queue's dead letters, in the order they died."""


@dataclass(frozen=True, slots=True)
class New:
    """``["new"]``: create another queue (same configuration) and make it current."""


@dataclass(frozen=True, slots=True)
class Use:
    """``["use", i]``: make queue ``i`` current (0 is the scenario's first queue)."""

    index: int


@dataclass(frozen=True, slots=True)
class Redrive:
    """``["redrive", {"rate": r, "to": i}]``: start a redrive of the dead-letter target
    (queue 1): ``rate`` messages per second (``None``: all at once), to queue ``to``
    (``None``: each message's source)."""

    rate: float | None = None
    to: int | None = None


@dataclass(frozen=True, slots=True)
class RedriveCancel:
    """``["redrive_cancel"]``: cancel the dead-letter target's most recent redrive task."""


@dataclass(frozen=True, slots=True)
class RedriveStatus:
    """``["redrive_status"]``: ``[status, moved, skipped, to_move]`` of the dead-letter
    target's most recent redrive task, or ``null``."""


@dataclass(frozen=True, slots=True)
class Aged:
    """``["aged"]``: ids of the current queue's aged-out messages, in order."""


Op: TypeAlias = Invoke | Dead | New | Use | Redrive | RedriveCancel | RedriveStatus | Aged


@dataclass(frozen=True, slots=True)
class DeadLetterConfig:
    """Queue 0's dead-letter target (queue 1): its own visibility timeout and retention; it is
    unbounded, has no delay and no ``max_receives``, and is of queue 0's kind."""

    visibility_timeout: float | None = None
    retention: float | None = None


@dataclass(frozen=True, slots=True)
class QueueConfig:
    """The configuration every queue of a scenario is created with; ``dead_letter`` is queue
    0's alone (queue 1, made with it; a ``["new"]`` queue has no target)."""

    capacity: int | None
    visibility_timeout: float | None = None
    max_receives: int | None = None
    delay: float = 0.0
    fifo: bool = False
    dedup_interval: float = DEDUP_INTERVAL
    #: Seconds a message may stay in the queue before it ages out; ``None``: forever.
    retention: float | None = None
    #: Queue 0's dead-letter target (queue 1), or ``None``.
    dead_letter: DeadLetterConfig | None = None

    def dead_letter_config(self) -> QueueConfig:
        """Queue 1's configuration, as a :class:`QueueConfig` (unbounded, no delay, no
        ``max_receives``, no target; queue 0's kind and dedup interval)."""
        if self.dead_letter is None:
            raise ValueError("dead_letter: this configuration has no dead-letter target")
        return QueueConfig(
            capacity=None,
            visibility_timeout=self.dead_letter.visibility_timeout,
            fifo=self.fifo,
            dedup_interval=self.dedup_interval,
            retention=self.dead_letter.retention,
        )


@dataclass(frozen=True, slots=True)
class Scenario:
    """A parsed, valid scenario: a queue configuration and its operations, in order."""

    config: QueueConfig
    ops: tuple[Op, ...]


# -- the parser --------------------------------------------------------------------------------


def _fail(where: str, what: str) -> NoReturn:
    raise ScenarioError(f"{where}: {what}" if where else what)


def _show(value: object) -> str:
    """A short one-line rendering of a JSON fragment for error messages."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=True)
    return text if len(text) <= 60 else text[:57] + "..."


def _int(where: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        _fail(where, f"expected an integer, got {_show(value)}")
    if value < minimum:
        _fail(where, f"must be >= {minimum}, got {value}")
    return value


def _time(where: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        _fail(where, f"expected a number, got {_show(value)}")
    try:
        t = float(value)
    except OverflowError:
        _fail(where, f"must be a number in [0, {MAX_TIME:g}], got {value}")
    if not math.isfinite(t) or t < 0 or t > MAX_TIME:
        _fail(where, f"must be a number in [0, {MAX_TIME:g}], got {value}")
    return t


def _id(where: str, value: object) -> str:
    if not isinstance(value, str):
        _fail(where, f"expected an id string, got {_show(value)}")
    if ID_PATTERN.fullmatch(value) is None:
        _fail(where, f"id {_show(value)} does not match [A-Za-z0-9_-]{{1,128}}")
    return value


def harness_ops(registry: Registry = REGISTRY) -> dict[str, Operation]:
    """The registry's operations by their harness op name (``enqueue`` -> ``send``)."""
    return {op.harness: op for op in registry if op.harness is not None}


#: The ops of the format that act on no queue state: not operations of the registry.
_OWN: Final[Mapping[str, tuple[str, ...]]] = {"dead": (), "new": (), "use": ("i",)}

#: The ops of a system of queues (contract section 7): not in :func:`op_table`, which lists the ops
#: of
#: one queue (the registry's and the format's own); a name in brackets may be left out.
SYSTEM_OPS: Final[Mapping[str, tuple[str, ...]]] = {
    "redrive": ("[opts]",),
    "redrive_cancel": (),
    "redrive_status": (),
    "aged": (),
}
#: The ``redrive`` options.
REDRIVE_OPTIONS: Final = ("rate", "to")


def _shape(arg: Arg) -> str:
    # An optional time may be left out (the queue's default), so it is shown in brackets.
    return f"[{arg.harness_name}]" if arg.kind is Kind.OPTIONAL_TIME else arg.harness_name


#: The shape after the op's name of the registry ops whose harness arguments are not their
#: model arguments one for one (options, lists of entries), by operation name; a name in
#: brackets may be left out.
_SHAPES: Final[Mapping[str, tuple[str, ...]]] = {
    "send": ("id", "payload", "[opts]"),
    "send_batch": ("entries",),
    "receive_batch": ("n", "[vt]"),
    "delete_batch": ("receipts",),
    "change_visibility_batch": ("changes",),
    "purge": (),
}


def op_table(registry: Registry = REGISTRY) -> dict[str, tuple[str, ...]]:
    """The shape of each op after its name: the argument names, for arity errors."""
    table = {
        name: _SHAPES[op.name] if op.name in _SHAPES else tuple(map(_shape, op.args))
        for name, op in harness_ops(registry).items()
    }
    return table | dict(_OWN)


#: The harness's op names and their arguments (the registry's ops, then ``dead``, ``new``, ``use``).
_ARITY: Final[Mapping[str, tuple[str, ...]]] = op_table()


def _argument(where: str, arg: Arg, value: object) -> object:
    """One argument of a registry op, checked by its kind."""
    match arg.kind:
        case Kind.ID:
            return _id(where, value)
        case Kind.BODY:
            if not isinstance(value, str):
                _fail(where, f"{arg.harness_name} must be a string, got {_show(value)}")
            return value
        case Kind.ATTEMPT:
            return _int(f"{where} {arg.harness_name}", value, 0)
        case Kind.TIME:
            return _time(f"{where} {arg.harness_name}", value)
        case Kind.OPTIONAL_TIME:
            return None if value is None else _time(f"{where} {arg.harness_name}", value)
        case _:
            # Options and batch lists: their ops have parsers of their own (_PARSERS).
            raise AssertionError(f"{arg.kind} is parsed by its op's parser, not by kind")


def _invoke(where: str, op: Operation, raw: list[object]) -> Invoke:
    """The registry op ``op`` with the raw JSON arguments ``raw`` (their number checked)."""
    values: list[object] = [*raw, *(QUEUE_DEFAULT,) * (len(op.args) - len(raw))]
    # Bodies are checked first, then the rest in order: the order of the harness's messages.
    order = sorted(range(len(op.args)), key=lambda i: op.args[i].kind is not Kind.BODY)
    for i in order:
        if values[i] is not QUEUE_DEFAULT:
            values[i] = _argument(where, op.args[i], values[i])
    return Invoke(op.name, tuple(values))


def _options(where: str, value: object) -> float | QueueDefault:
    """A standard queue's ``enqueue`` (or batch entry) options: its delay, or ``QUEUE_DEFAULT``."""
    if not isinstance(value, Mapping):
        _fail(where, f'opts must be an object like {{"delay": 5}}, got {_show(value)}')
    for key in value:
        if key in FIFO_OPTIONS:
            _fail(where, f'option {_show(key)} is for FIFO queues only ("fifo": true)')
        if key not in OPTIONS:
            _fail(where, f"unknown option {_show(key)} (known: {', '.join(OPTIONS)})")
    if "delay" in value:
        return _time(f"{where} delay", value["delay"])
    return QUEUE_DEFAULT


def _fifo_options(where: str, value: object) -> tuple[str, str | None]:
    """A FIFO queue's ``enqueue`` (or batch entry) options: ``(group, dedup)``."""
    if not isinstance(value, Mapping):
        _fail(where, f'opts must be an object like {{"group": "g"}}, got {_show(value)}')
    for key in value:
        if key in OPTIONS:
            _fail(where, f"option {_show(key)} is not taken by a FIFO queue (the queue's delay)")
        if key not in FIFO_OPTIONS:
            _fail(where, f"unknown option {_show(key)} (known: {', '.join(FIFO_OPTIONS)})")
    if "group" not in value:
        _fail(where, 'a send on a FIFO queue needs a group: {"group": g}')
    group = _id(f"{where} group", value["group"])
    dedup = _id(f"{where} dedup", value["dedup"]) if "dedup" in value else None
    return group, dedup


def _body(where: str, value: object) -> str:
    if not isinstance(value, str):
        _fail(where, f"payload must be a string, got {_show(value)}")
    return value


def _message(where: str, raw: Sequence[object], fifo: bool = False) -> tuple[object, ...]:
    """``id, payload[, opts]`` of an ``enqueue`` or a batch entry: ``(id, body, delay)``, and on
    a FIFO queue ``(id, body, QUEUE_DEFAULT, group, dedup)``."""
    body = _body(where, raw[1])
    if fifo:
        group, dedup = _fifo_options(where, raw[2] if len(raw) == 3 else {})
        return _id(where, raw[0]), body, QUEUE_DEFAULT, group, dedup
    delay = _options(where, raw[2]) if len(raw) == 3 else QUEUE_DEFAULT
    return _id(where, raw[0]), body, delay


def _batch(where: str, what: str, value: object, shape: str) -> list[object]:
    """A batch's list of entries: a JSON list of 1 to :data:`MAX_BATCH` entries."""
    if not isinstance(value, list):
        _fail(where, f"{what} must be a list of entries like {shape}, got {_show(value)}")
    if not 1 <= len(value) <= MAX_BATCH:
        _fail(where, f"a batch takes 1 to {MAX_BATCH} {what}, got {len(value)}")
    return value


def _entry(where: str, value: object, sizes: tuple[int, ...], shape: str) -> list[object]:
    if not isinstance(value, list) or len(value) not in sizes:
        _fail(where, f"expected {shape}, got {_show(value)}")
    return value


def _send_args(where: str, raw: list[object], fifo: bool = False) -> tuple[object, ...]:
    return _message(where, raw, fifo)


def _send_batch_args(where: str, raw: list[object], fifo: bool = False) -> tuple[object, ...]:
    shape = "[id, payload] or [id, payload, opts]"
    entries = _batch(where, "entries", raw[0], f"[{shape}, ...]")
    parsed = tuple(
        _message(f"{where} entry {i}", _entry(f"{where} entry {i}", e, (2, 3), shape), fifo)
        for i, e in enumerate(entries)
    )
    dedups = [e[4] for e in parsed if fifo and e[4] is not None]
    if len(set(dedups)) < len(dedups):
        _fail(where, "a dedup id repeated inside one enqueue_batch is an invalid batch")
    return (parsed,)


def _receive_batch_args(where: str, raw: list[object]) -> tuple[object, ...]:
    n = _int(f"{where} n", raw[0], 1)
    if n > MAX_BATCH:
        _fail(f"{where} n", f"must be <= {MAX_BATCH}, got {n}")
    if len(raw) == 1:
        return (n, QUEUE_DEFAULT)
    return (n, None if raw[1] is None else _time(f"{where} vt", raw[1]))


def _receipt(where: str, value: object, shape: str, timed: bool) -> tuple[object, ...]:
    e = _entry(where, value, (3,) if timed else (2,), shape)
    receipt = (_id(where, e[0]), _int(f"{where} attempt", e[1], 0))
    return (*receipt, _time(f"{where} t", e[2])) if timed else receipt


def _delete_batch_args(where: str, raw: list[object]) -> tuple[object, ...]:
    entries = _batch(where, "receipts", raw[0], "[[id, attempt], ...]")
    return (
        tuple(
            _receipt(f"{where} entry {i}", e, "[id, attempt]", timed=False)
            for i, e in enumerate(entries)
        ),
    )


def _change_visibility_batch_args(where: str, raw: list[object]) -> tuple[object, ...]:
    entries = _batch(where, "changes", raw[0], "[[id, attempt, t], ...]")
    return (
        tuple(
            _receipt(f"{where} entry {i}", e, "[id, attempt, t]", timed=True)
            for i, e in enumerate(entries)
        ),
    )


#: The parsers of the ops in :data:`_SHAPES`: the raw JSON arguments (their number checked)
#: to the model arguments of :class:`Invoke`.
_PARSERS: Final[Mapping[str, Callable[[str, list[object]], tuple[object, ...]]]] = {
    "send": _send_args,
    "send_batch": _send_batch_args,
    "receive_batch": _receive_batch_args,
    "delete_batch": _delete_batch_args,
    "change_visibility_batch": _change_visibility_batch_args,
    "purge": lambda where, raw: (),
}


def _redrive(where: str, args: list[object], queues: int) -> Redrive:
    """``["redrive"]`` or ``["redrive", {"rate": r, "to": i}]``."""
    if not args:
        return Redrive()
    opts = args[0]
    if not isinstance(opts, Mapping):
        _fail(where, f'opts must be an object like {{"rate": 2, "to": 0}}, got {_show(opts)}')
    for key in opts:
        if key not in REDRIVE_OPTIONS:
            _fail(where, f"unknown option {_show(key)} (known: {', '.join(REDRIVE_OPTIONS)})")
    rate = None
    if "rate" in opts:
        rate = _time(f"{where} rate", opts["rate"])
        if rate == 0:
            _fail(f"{where} rate", "must be > 0, got 0")
    to = None
    if "to" in opts:
        to = _int(f"{where} to", opts["to"], 0)
        if to == DLQ_INDEX:
            _fail(f"{where} to", "a redrive cannot move into the dead-letter queue itself (1)")
        if to != 0:
            # A "new" queue is in no system (its ids are its own), and a redrive moves only
            # inside one: the spec's system holds queues 0 and 1 (spec.system).
            _fail(f"{where} to", f"must be 0, the one other queue of the system, got {to}")
    return Redrive(rate=rate, to=to)


def _system_op(where: str, name: str, args: list[object], queues: int, dead_letter: bool) -> Op:
    """One of :data:`SYSTEM_OPS` (its number of arguments checked)."""
    if name != "aged" and not dead_letter:
        _fail(where, f'{name} needs a dead-letter target (the scenario key "dead_letter")')
    match name:
        case "redrive":
            return _redrive(where, args, queues)
        case "redrive_cancel":
            return RedriveCancel()
        case "redrive_status":
            return RedriveStatus()
        case _:  # "aged"
            return Aged()


def parse_op(
    raw: object,
    queues: int,
    where: str = "op",
    registry: Registry = REGISTRY,
    fifo: bool = False,
    dead_letter: bool = False,
) -> Op:
    """Parse one op; ``queues`` is how many queues exist when it runs (for ``use``), ``fifo``
    whether they are FIFO queues (which changes the options a send takes), ``dead_letter``
    whether queue 0 has a dead-letter target (queue 1; the redrive ops need one).

    Raises :class:`ScenarioError`, its message starting with ``where``.
    """
    if not isinstance(raw, list) or not raw or not isinstance(raw[0], str):
        _fail(where, f'expected an op like ["name", args...], got {_show(raw)}')
    name, args = raw[0], raw[1:]
    table = _ARITY if registry is REGISTRY else op_table(registry)
    if name not in table and name not in SYSTEM_OPS:
        known = ", ".join([*table, *SYSTEM_OPS])
        _fail(where, f"unknown op {_show(name)} (known: {known})")
    if name in SYSTEM_OPS:
        expected = SYSTEM_OPS[name]
        required = sum(1 for e in expected if not e.startswith("["))
        if not required <= len(args) <= len(expected):
            shape = ", ".join([f'"{name}"', *expected])
            _fail(where, f"{name} takes [{shape}], got {_show(raw)}")
        return _system_op(where, name, args, queues, dead_letter)
    expected = table[name]
    # Trailing optional times may be left out.
    required = len(expected) - sum(1 for e in reversed(expected) if e.startswith("["))
    if not required <= len(args) <= len(expected):
        shape = ", ".join([f'"{name}"', *expected])
        _fail(where, f"{name} takes [{shape}], got {_show(raw)}")
    ops = harness_ops(registry)
    if name in ops:
        op = ops[name]
        if op.name in ("send", "send_batch"):
            parse = _send_args if op.name == "send" else _send_batch_args
            return Invoke(op.name, parse(where, args, fifo))
        if op.name in _PARSERS:
            return Invoke(op.name, _PARSERS[op.name](where, args))
        return _invoke(where, op, args)
    match name:
        case "dead":
            return Dead()
        case "new":
            return New()
        case _:  # "use"
            index = _int(f"{where} queue index", args[0], 0)
            if index >= queues:
                _fail(where, f"use {index}: only queues 0..{queues - 1} exist at this point")
            return Use(index)


def parse_scenario(obj: object) -> Scenario:
    """Validate a decoded JSON value as a scenario; raise :class:`ScenarioError` if it is not one.

    Every op is checked before the scenario is returned, so a scenario either parses whole or
    not at all.
    """
    if not isinstance(obj, Mapping):
        _fail("", f"expected a scenario object, got {_show(obj)}")
    unknown = sorted(set(obj) - _KEYS)
    if unknown:
        _fail("", f"unknown key {_show(unknown[0])} (known: {', '.join(sorted(_KEYS))})")
    for key in ("capacity", "ops"):
        if key not in obj:
            _fail("", f'missing key "{key}"')
    fifo = obj.get("fifo", False)
    if not isinstance(fifo, bool):
        _fail("fifo", f"expected true or false, got {_show(fifo)}")
    interval = _time("dedup_interval", obj.get("dedup_interval", DEDUP_INTERVAL))
    if interval == 0:
        _fail("dedup_interval", "must be > 0, got 0")
    capacity = obj["capacity"]
    vt = obj.get("visibility_timeout")
    max_receives = obj.get("max_receives")
    config = QueueConfig(
        capacity=None if capacity is None else _int("capacity", capacity, 0),
        visibility_timeout=None if vt is None else _time("visibility_timeout", vt),
        max_receives=None if max_receives is None else _int("max_receives", max_receives, 1),
        delay=_time("delay", obj.get("delay", 0)),
        fifo=fifo,
        dedup_interval=interval,
        retention=_retention("retention", obj.get("retention")),
    )
    dead_letter = None
    if "dead_letter" in obj:
        dead_letter = _dead_letter(obj["dead_letter"], config)
        config = dataclasses.replace(config, dead_letter=dead_letter)
    raw_ops = obj["ops"]
    if not isinstance(raw_ops, list):
        _fail("ops", f"expected a list of ops, got {_show(raw_ops)}")
    ops: list[Op] = []
    queues = 1 if dead_letter is None else 2
    for i, raw in enumerate(raw_ops):
        where = f"op {i} {_show(raw)}"
        op = parse_op(raw, queues, where, fifo=fifo, dead_letter=dead_letter is not None)
        if isinstance(op, New):
            queues += 1
        ops.append(op)
    return Scenario(config=config, ops=tuple(ops))


def _retention(where: str, value: object) -> float | None:
    """A retention: ``null`` (forever) or a time > 0."""
    if value is None:
        return None
    t = _time(where, value)
    if t == 0:
        _fail(where, "must be > 0 (or null: forever), got 0")
    return t


def _dead_letter(value: object, config: QueueConfig) -> DeadLetterConfig:
    """The ``"dead_letter"`` object: queue 1's settings (``config`` is queue 0's)."""
    if not isinstance(value, Mapping):
        _fail("dead_letter", f'expected an object like {{"retention": 60}}, got {_show(value)}')
    for key in value:
        if key not in _DEAD_LETTER_KEYS:
            _fail(
                "dead_letter", f"unknown key {_show(key)} (known: {', '.join(_DEAD_LETTER_KEYS)})"
            )
    if config.max_receives is None:
        _fail("dead_letter", 'needs "max_receives": a message moves only when its receives run out')
    vt = value.get("visibility_timeout", config.visibility_timeout)
    return DeadLetterConfig(
        visibility_timeout=None if vt is None else _time("dead_letter visibility_timeout", vt),
        retention=_retention("dead_letter retention", value.get("retention")),
    )


def _no_constants(name: str) -> NoReturn:
    raise ScenarioError(f"{name} is not a JSON number")


def _no_duplicate_keys(pairs: Sequence[tuple[str, object]]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            raise ScenarioError(f'duplicate key "{key}"')
        result[key] = value
    return result


def parse_line(text: str) -> Scenario:
    """Decode one line of JSON and validate it as a scenario (see :func:`parse_scenario`)."""
    try:
        obj = json.loads(text, parse_constant=_no_constants, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as e:
        raise ScenarioError(f"not valid JSON: {e.msg} at column {e.colno}") from None
    except RecursionError:
        raise ScenarioError("not valid JSON: nested too deeply") from None
    return parse_scenario(obj)
