"""Trace validation: TLC checks that a trace recorded from ``impl.Queue`` is a behaviour of Queue.

``impl.Queue.record_trace(sink)`` makes the queue call ``sink(step)`` for every transition,
inside its critical section, so the steps arrive in the order the transitions took effect (the
linearization order). A step is ``(action, args, result, now)``:

  ``("send", (id,), True, now)``
  ``("receive", (vt,), (id, attempt, deadline), now)``       deadline: None if vt is None
  ``("delete", (id, attempt), ok, now)``                     ok: what delete returned
  ``("retry", (id, attempt), ok, now)``
  ``("change_visibility", (id, attempt, t), result, now)``   result: False (receipt not live),
                                                             the new deadline, or None (t = 0)
  ``("cancel", (id,), ok, now)``
  ``("expire", (), id, now)``                                one per message a sweep released

:func:`to_events` turns them into the events of ``tla/TraceQueue.tla`` (one kind per operation
of the registry that ``impl.Queue`` records, :func:`event_ops`): times become integers
counted from the clock's start (so advance a ``FakeClock`` by whole numbers), the releases of
one sweep become one ``expire`` event, and the time of a receive or change_visibility is the one
its deadline was computed from (the clock may move between that reading and the step's own
``now``). :func:`check_trace` writes a module whose constant ``Trace`` is those events, runs TLC
on it, and reads the verdict.

THE INVERSION. TLC 2.15 cannot be told "succeed when you reach this state", so the check's
invariant ``TraceIncomplete`` claims the whole trace is never matched: TLC reporting that
invariant VIOLATED means the trace was ACCEPTED, and TLC reporting a DEADLOCK means it was
REJECTED (no step of Queue matches the next event; TLC's ``step`` says how many did).
:class:`Verdict` states the result the right way round.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from spec.operations import REGISTRY, Kind, Registry
from tla.models import TLA_DIR
from tla.tlc import Result, run_tlc

#: One transition as ``impl.Queue`` records it: (action, args, result, now).
Step = tuple[str, tuple[object, ...], object, float]

#: One event of ``TraceQueue.tla``'s ``Trace``: field -> value (``None`` is TLA+'s ``None``).
Event = dict[str, object]

#: The modules a check needs next to the generated one.
_MODULES = ("Queue.tla", "TraceQueue.tla")
_STEP = re.compile(r"^/\\ step = (\d+)$")


class TraceError(ValueError):
    """A recorded trace that cannot be turned into events (bad shape, non-integer time)."""


class TraceCheckError(RuntimeError):
    """TLC neither accepted nor rejected the trace: it failed (its message is included)."""


def _time(x: object, start: float, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int | float):
        raise TraceError(f"{what}: a time must be a number, got {x!r}")
    t = x - start
    if t != int(t) or t < 0:
        raise TraceError(f"{what}: time {x!r} is not a whole number of units after {start!r}")
    return int(t)


def _int(x: object, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int | float) or x != int(x):
        raise TraceError(f"{what}: expected a whole number, got {x!r}")
    return int(x)


def event_ops(registry: Registry = REGISTRY) -> tuple[str, ...]:
    """The ``op`` of ``TraceQueue.tla``'s events: the operations ``impl.Queue`` records, i.e.
    those with an ``impl.Queue`` method (the clock's moves are ``Tick`` steps, not events)."""
    return tuple(op.name for op in registry if op.impl is not None)


Builder = Callable[[str, Step, int, float], Event]


def _send(where: str, step: Step, t: int, start: float) -> Event:
    # Only accepted sends are recorded, so the event has no result.
    return {"op": "send", "id": str(step[1][0]), "now": t}


def _receive(where: str, step: Step, t: int, start: float) -> Event:
    _, args, result, _ = step
    vt = None if args[0] is None else _int(args[0], where)
    if not isinstance(result, tuple) or len(result) != 3:
        raise TraceError(f"{where}: expected (id, attempt, deadline), got {result!r}")
    id, attempt, deadline = result
    if vt is not None:  # the time the deadline was computed from
        t = _time(deadline, start, where) - vt
    return {"op": "receive", "id": str(id), "attempt": _int(attempt, where), "vt": vt, "now": t}


def _change_visibility(where: str, step: Step, t: int, start: float) -> Event:
    action, args, result, _ = step
    timeout = _int(args[2], where)
    ok = result is not False
    if ok and result is not None:  # the time the new deadline was computed from
        t = _time(result, start, where) - timeout
    return {
        "op": action,
        "id": str(args[0]),
        "attempt": _int(args[1], where),
        "t": timeout,
        "ok": ok,
        "now": t,
    }


def _expire(where: str, step: Step, t: int, start: float) -> Event:
    return {"op": "expire", "released": (str(step[2]),), "now": t}


#: The events whose fields are not the generic ones (see :func:`_event`).
_BUILDERS: Final[Mapping[str, Builder]] = {
    "send": _send,
    "receive": _receive,
    "change_visibility": _change_visibility,
    "expire": _expire,
}


def _event(k: int, step: Step, start: float, registry: Registry = REGISTRY) -> Event:
    """The event of one recorded step (an ``expire`` step still carries a single id).

    An operation without a builder of its own gives the generic event: its model arguments by
    name (an id as text, an attempt as a whole number), ``ok`` (what it returned) and ``now``.
    """
    action, args, result, now = step
    where = f"step {k} ({action})"
    t = _time(now, start, where)
    if action not in event_ops(registry):
        raise TraceError(f"{where}: unknown action {action!r}")
    if action in _BUILDERS:
        return _BUILDERS[action](where, step, t, start)
    op = registry[action]
    event: Event = {"op": action}
    for arg, value in zip(op.args, args, strict=True):
        event[arg.name] = _int(value, where) if arg.kind is Kind.ATTEMPT else str(value)
    return event | {"ok": bool(result), "now": t}


def to_events(
    steps: Iterable[Step], start: float = 0.0, registry: Registry = REGISTRY
) -> list[Event]:
    """The events of ``TraceQueue.tla`` for the recorded ``steps`` (``start``: the clock's start).

    Consecutive ``expire`` steps with the same time are the releases of one sweep: a sweep
    releases everything due at its time, so a second sweep at that time could only release a
    deadline armed in between, by a step that would stand between them. They become one event.
    Raises :class:`TraceError` for a step of the wrong shape or a time that is not a whole number.
    """
    events: list[Event] = []
    for k, step in enumerate(steps):
        e = _event(k, step, start, registry)
        last = events[-1] if events else None
        same_sweep = last is not None and last["op"] == "expire" and last["now"] == e["now"]
        if e["op"] == "expire" and same_sweep:
            assert last is not None
            last["released"] = (*_released(last), *_released(e))
            continue
        events.append(e)
    for k in range(1, len(events)):
        if _now(events[k]) < _now(events[k - 1]):
            raise TraceError(f"event {k} goes back in time: {events[k - 1]} then {events[k]}")
    return events


def _released(e: Event) -> tuple[str, ...]:
    r = e["released"]
    assert isinstance(r, tuple)
    return tuple(str(x) for x in r)


def _now(e: Event) -> int:
    t = e["now"]
    assert isinstance(t, int)
    return t


# -- TLA+ text ----------------------------------------------------------------------------------


def tla_value(v: object) -> str:
    """``v`` written as a TLA+ value: strings quoted, ``None`` the model value, tuples ``<<>>``."""
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        if not re.fullmatch(r"[A-Za-z0-9_.:-]*", v):
            raise TraceError(f"cannot write {v!r} as a TLA+ string")
        return f'"{v}"'
    if isinstance(v, tuple):
        return "<<" + ", ".join(tla_value(x) for x in v) + ">>"
    raise TraceError(f"cannot write {v!r} as a TLA+ value")


def _record(e: Event) -> str:
    return "[" + ", ".join(f"{k} |-> {tla_value(v)}" for k, v in e.items()) + "]"


def render_module(events: Sequence[Event], name: str = "TraceRun") -> str:
    """A module that EXTENDS TraceQueue and defines ``RecordedTrace``, the events in order."""
    body = ",\n".join(f"    {_record(e)}" for e in events)
    return (
        f"{'-' * 30} MODULE {name} {'-' * 30}\n"
        f"\\* Generated by tla/trace.py: {len(events)} events recorded from impl.Queue.\n"
        "EXTENDS TraceQueue\n\n"
        "RecordedTrace == <<\n"
        f"{body}\n"
        ">>\n"
        f"{'=' * 77}\n"
    )


def _set(values: Iterable[object]) -> str:
    return "{" + ", ".join(sorted({tla_value(v) for v in values})) + "}"


def render_config(events: Sequence[Event], capacity: int | None, max_receives: int | None) -> str:
    """The TLC config: Queue's constants fitted to the trace, and the inverted invariant."""
    ids = {e["id"] for e in events if "id" in e}
    ids |= {i for e in events if e["op"] == "expire" for i in _released(e)}
    attempts = [e["attempt"] for e in events if e["op"] == "receive"]
    vts = {e["vt"] for e in events if e["op"] == "receive"}
    extends = {e["t"] for e in events if e["op"] == "change_visibility"}
    max_attempt = max([1, *(int(str(a)) for a in attempts)])
    max_time = max([0, *(_now(e) for e in events)])
    return (
        "\\* Generated by tla/trace.py. TraceIncomplete VIOLATED = the trace is ACCEPTED;\n"
        "\\* a deadlock = the trace is REJECTED (see tla/TraceQueue.tla).\n"
        "CONSTANTS\n"
        f"    Ids = {_set(ids)}\n"
        f"    Capacity = {tla_value(capacity)}\n"
        f"    MaxReceives = {tla_value(max_receives)}\n"
        f"    MaxAttempt = {max_attempt}\n"
        f"    VisibilityTimeouts = {_set(vts)}\n"
        f"    ExtendTimeouts = {_set(extends)}\n"
        f"    MaxTime = {max_time}\n"
        "    None = None\n"
        "    Trace <- RecordedTrace\n"
        "INIT TraceInit\n"
        "NEXT TraceNext\n"
        "INVARIANT TraceIncomplete\n"
    )


# -- the check ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """TLC's answer, the right way round: was the trace a behaviour of Queue?"""

    accepted: bool
    #: How many events TLC matched (all of them when accepted).
    matched: int
    events: tuple[Event, ...]
    result: Result

    @property
    def rejected_event(self) -> Event | None:
        """The first event no step of Queue matches, when rejected."""
        return None if self.accepted else self.events[self.matched]

    def explain(self) -> str:
        if self.accepted:
            return f"accepted: all {len(self.events)} events are steps of Queue"
        return (
            f"rejected at event {self.matched} of {len(self.events)}: "
            f"{self.rejected_event} is no step of Queue after the {self.matched} before it"
        )


def _matched(result: Result) -> int:
    steps = [int(m.group(1)) for line in result.output if (m := _STEP.match(line.strip()))]
    return steps[-1] if steps else 0


def check_events(
    events: Sequence[Event],
    *,
    capacity: int | None,
    max_receives: int | None,
    timeout: float = 120.0,
) -> Verdict:
    """Run TLC on ``events`` with Queue's ``capacity`` and ``max_receives``; the verdict.

    Raises :class:`TraceCheckError` if TLC fails instead of answering (a setup problem, a
    malformed event), and ``tla.tlc.SetupError`` if Java or the TLA+ tools are missing.
    """
    with tempfile.TemporaryDirectory(prefix="trace-") as tmp:
        d = Path(tmp)
        for name in _MODULES:
            shutil.copy(TLA_DIR / name, d / name)
        (d / "TraceRun.tla").write_text(render_module(events))
        (d / "TraceRun.cfg").write_text(render_config(events, capacity, max_receives))
        result = run_tlc(d / "TraceRun.tla", d / "TraceRun.cfg", timeout=timeout)
    frozen = tuple(events)
    if result.outcome == "violation" and result.detail == "Invariant TraceIncomplete":
        return Verdict(True, len(frozen), frozen, result)
    if result.outcome == "violation" and result.detail == "Deadlock":
        return Verdict(False, _matched(result), frozen, result)
    raise TraceCheckError(
        f"TLC gave no verdict ({result.summary}):\n" + "\n".join(result.output[-30:])
    )


def check_trace(
    steps: Iterable[Step],
    *,
    capacity: int | None,
    max_receives: int | None,
    start: float = 0.0,
    timeout: float = 120.0,
) -> Verdict:
    """Is the trace recorded from an ``impl.Queue`` a behaviour of ``tla/Queue.tla``?

    ``capacity`` and ``max_receives`` are the queue's; ``start`` is its clock's start time.
    """
    events = to_events(steps, start)
    return check_events(events, capacity=capacity, max_receives=max_receives, timeout=timeout)
