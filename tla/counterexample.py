"""TLC's states as Python values: traces and their states, read once, for every reader in the repo.

TLC prints a counterexample (``tla.tlc.Result.trace()``) as numbered states, each a conjunction
``/\\ var = value`` under a header ``State N: <Action line ...>``; its ``-dump dot`` file labels
each node with the same conjunction. This module reads both kinds of state
(:func:`read_state`), a whole trace (:func:`parse_trace`: each state's values, and its variables
as TLC printed them) and its verdict line (:func:`verdict`), the queue's variables in them
(:func:`messages`, :func:`held`, :func:`finished`, :func:`deadline`), and converts a state of
``tla/Queue.tla`` into the ``spec.State`` it stands for (:func:`to_spec_state`).

It is the repository's one reader of TLC's traces. Its users: the diagram tool
(``tools/diagrams.py``, the race drawn from TLC's counterexample), the explorer page's traces
(:mod:`tla.explorer`), the equivalence bridge (:mod:`tla.graph`, TLC's state graph against the
explorer's) and the tests that replay the counterexamples on ``impl.Queue``
(``model_tests/tests/test_understanding*.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from spec.state import Config, Msg, State, Status
from tla.values import Function, ModelValue, Record, Value, parse_state, parse_value

#: What separates the conjuncts ``/\\ var = value`` of a state TLC printed.
_CONJUNCT = re.compile(r"(?:^|\n)\s*/\\\s+")


@dataclass(frozen=True)
class TraceStep:
    """One state of a TLC trace: its number, the action that led to it, the variables.

    ``printed`` is each variable as TLC printed it, in printed order, whitespace collapsed (what
    the explorer page shows beside the parsed ``state``); two steps with the same values are
    equal however TLC laid them out.
    """

    number: int
    action: str
    state: dict[str, Value]
    printed: tuple[tuple[str, str], ...] = field(default=(), compare=False)


def _printed(text: str) -> tuple[tuple[str, str], ...]:
    """The conjuncts ``/\\ var = value`` of a state as (var, value) pairs, whitespace collapsed."""
    out: list[tuple[str, str]] = []
    for part in _CONJUNCT.split(text):
        if part.strip():
            name, _, value = part.partition("=")
            out.append((name.strip(), " ".join(value.split())))
    return tuple(out)


def read_state(text: str) -> dict[str, Value]:
    """``tla.values.parse_state``, but a set of records (TLC prints ``finished`` as one) is read
    as a tuple in printed order: ``tla.values`` cannot put its unhashable records in a set."""
    out: dict[str, Value] = {}
    for part in _CONJUNCT.split(text.strip()):
        if not part.strip():
            continue
        name, _, rest = part.partition("=")
        try:
            out.update(parse_state(f"/\\ {part}"))
        except TypeError:
            inner = rest.strip()
            if not (inner.startswith("{") and inner.endswith("}")):
                raise
            out[name.strip()] = parse_value(f"<<{inner[1:-1]}>>")
    return out


_HEADER = re.compile(r"^State (\d+): <(\w+)[^>]*>\s*$")


def parse_trace(text: str) -> list[TraceStep]:
    """The states of a TLC counterexample as TLC prints it (``Result.trace()``).

    ``Initial predicate`` is the action ``Initial``. Raises ``ValueError`` if there is no state.
    """
    steps: list[TraceStep] = []
    header: tuple[int, str] | None = None
    body: list[str] = []

    def flush() -> None:
        if header is not None:
            block = "\n".join(body)
            steps.append(TraceStep(header[0], header[1], read_state(block), _printed(block)))

    for line in text.splitlines():
        if m := _HEADER.match(line):
            flush()
            header, body = (int(m.group(1)), m.group(2)), []
        elif header is not None and line.strip():
            body.append(line)
    flush()
    if not steps:
        raise ValueError("no 'State N: <Action ...>' lines: not a TLC trace")
    return steps


_VERDICT = re.compile(r"^Error: (.*is violated\.?)\s*$")


def verdict(text: str) -> str:
    """TLC's verdict in a trace it printed (``Invariant ExactlyOnce is violated.``), or ``""``."""
    return next((m.group(1) for line in text.splitlines() if (m := _VERDICT.match(line))), "")


# -- the queue's variables ----------------------------------------------------------------------


def function(v: Value) -> Function:
    """A TLA+ function; TLC prints the empty one as ``<< >>``."""
    if isinstance(v, Function):
        return v
    if v == ():
        return Function()
    raise ValueError(f"not a function: {v!r}")


def record(v: Value) -> Record:
    if not isinstance(v, Record):
        raise ValueError(f"not a record: {v!r}")
    return v


def receipt(v: Value) -> tuple[str, int] | None:
    """``<<a, 1>>`` -> ``("a", 1)``; the model value ``NoReceipt`` -> ``None``."""
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], int):
        return str(v[0]), v[1]
    return None


def messages(state: dict[str, Value]) -> dict[str, Record]:
    """``msgs`` of a queue state: id -> ``[status, attempt, deadline]``."""
    return {str(i): record(m) for i, m in function(state["msgs"]).items()}


def held(state: dict[str, Value]) -> dict[str, tuple[str, int] | None]:
    """``held`` of a QueueConsumers state: consumer -> the receipt (id, attempt) it works on."""
    return {str(c): receipt(r) for c, r in function(state["held"]).items()}


def finished(state: dict[str, Value]) -> list[tuple[str, tuple[str, int], bool]]:
    """``finished`` of a QueueConsumers state: (consumer, receipt, what delete returned)."""
    v = state["finished"]
    if not isinstance(v, frozenset | tuple):
        raise ValueError(f"finished is not a set: {v!r}")
    out = []
    for f in v:
        r, rc = record(f), receipt(record(f)["receipt"])
        if rc is None or not isinstance(r["deleted"], bool):
            raise ValueError(f"not a finished delivery: {f!r}")
        out.append((str(r["consumer"]), rc, r["deleted"]))
    return sorted(out)


def deadline(m: Record) -> int | None:
    """A message's deadline; the model value ``None`` -> ``None``."""
    d = m["deadline"]
    return d if isinstance(d, int) else None


# -- a state of Queue.tla as a spec.State ------------------------------------------------------


def _id(v: Value) -> str:
    if not isinstance(v, ModelValue):
        raise ValueError(f"expected an id (a model value), got {v!r}")
    return v.name


def _ids(v: Value) -> tuple[str, ...]:
    if not isinstance(v, tuple):
        raise ValueError(f"expected a sequence of ids, got {v!r}")
    return tuple(_id(x) for x in v)


def _opt_int(v: Value) -> int | None:
    if v == ModelValue("None"):
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    raise ValueError(f"expected an integer or None, got {v!r}")


def to_spec_state(state: dict[str, Value], config: Config, queue: int = 0) -> State:
    """The ``spec.State`` a state of ``tla/Queue.tla`` stands for (``now`` and any other
    variable are not part of it; see :func:`now`).

    ``msgs`` -> ``State.messages``: one ``Msg(id, body=id, status, attempt, deadline)`` per
    accepted id (TLA+ has no bodies: the body is the id, as the explorer sends it), with the
    model value ``None`` as Python's ``None``, sorted by id; ``visible``, ``inFlight``, ``dead``
    -> ``State.visible``, ``in_flight``, ``dead``. ``ValueError`` names what is not of that form.
    """
    msgs = []
    try:
        raw = function(state["msgs"])
    except ValueError:
        raise ValueError(f"msgs is not a function: {state['msgs']!r}") from None
    for key, rec in raw.items():
        if not isinstance(rec, Record) or not isinstance(rec["status"], str):
            raise ValueError(f"msgs[{key}] is not a message record: {rec!r}")
        attempt = rec["attempt"]
        if not isinstance(attempt, int):
            raise ValueError(f"msgs[{key}].attempt is not an integer: {attempt!r}")
        i = _id(key)
        visible_at = _opt_int(rec.get("visibleAt", ModelValue("None")))
        msgs.append(
            Msg(i, i, Status(rec["status"]), attempt, _opt_int(rec["deadline"]), visible_at)
        )
    return State(
        config=config,
        messages=tuple(sorted(msgs, key=lambda m: m.id)),
        visible=_ids(state["visible"]),
        in_flight=_ids(state["inFlight"]),
        dead=_ids(state["dead"]),
        queue=queue,
        delayed=_ids(state.get("delayed", ())),
        timers=_ids(state.get("timers", ())),
    )


def now(state: dict[str, Value]) -> int:
    """The clock of a TLC state, ``now``."""
    t = state["now"]
    if not isinstance(t, int):
        raise ValueError(f"now is not an integer: {t!r}")
    return t
