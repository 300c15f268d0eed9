"""Trace validation: TLC checks that a trace recorded from ``impl.Queue`` is a behaviour of Queue.

``impl.Queue.record_trace(sink)`` makes the queue call ``sink(step)`` for every transition,
inside its critical section, so the steps arrive in the order the transitions took effect (the
linearization order). A step is ``(action, args, result, now)``:

  ``("send", (id, delay), True, now)``                       delay 0: an immediate send (the old
                                                             ``(id,)`` form is read as delay 0)
  ``("send_batch", (ids, delays), ok, now)``                 ok: accepted (all) or not (none)
  ``("receive", (vt,), (id, attempt, deadline), now)``       deadline: None if vt is None
  ``("receive_batch", (n, vt), ((id, attempt, deadline), ...), now)``
  ``("delete", (id, attempt), ok, now)``                     ok: what delete returned
  ``("delete_batch", ((id, attempt), ...), (ok, ...), now)``
  ``("retry", (id, attempt), ok, now)``
  ``("change_visibility", (id, attempt, t), result, now)``   result: False (receipt not live),
                                                             the new deadline, or None (t = 0)
  ``("change_visibility_batch", ((id, attempt, t), ...), (result, ...), now)``
  ``("cancel", (id,), ok, now)``
  ``("purge", (), count, now)``
  ``("expire", (), id, now)``                                one per timer a sweep fired (a
                                                             delay or a deadline)

``impl.FifoQueue`` records the same steps, but its sends carry the group and dedup id:

  ``("send", (id, delay, group, dedup_id), result, now)``    result: True, or the earlier id
                                                             for a duplicate (id may be None)
  ``("send_batch", (ids, delays, groups, dedup_ids), results, now)``  results: one per entry,
                                                             True or the earlier id (ids holds
                                                             the earlier id for a duplicate)

and they become the events of ``tla/TraceQueueFifo.tla`` (pass ``fifo=Fifo(dedup_interval)``
to :func:`check_trace` / :func:`check_events`): a duplicate's own id is not always recorded, so
it gets a made-up one (``dup<k>``, ``dup<k>_<i>``), never accepted, in its group and dedup set.

:func:`to_events` turns them into the events of ``tla/TraceQueue.tla`` (one kind per operation
of the registry that ``impl.Queue`` records, :func:`event_ops`): times become integers
counted from the clock's start (so advance a ``FakeClock`` by whole numbers), the timers one
sweep fired become one ``expire`` event, and the time of a receive, a receive_batch, a
change_visibility or a change_visibility_batch is the one its deadlines were computed from (the
clock may move between that reading and the step's own ``now``). Whether a fired timer was a
delay or a deadline is not recorded: ``TraceQueue.tla`` knows it from the message's state.
:func:`check_trace` writes a module whose constant ``Trace`` is those events, runs TLC on it,
and reads the verdict.

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
from typing import ClassVar, Final

from spec.operations import REGISTRY, Kind, Registry
from tla.models import TLA_DIR
from tla.tlc import Result, run_tlc

#: One transition as ``impl.Queue`` records it: (action, args, result, now).
Step = tuple[str, tuple[object, ...], object, float]

#: One event of ``TraceQueue.tla``'s ``Trace``: field -> value (``None`` is TLA+'s ``None``).
Event = dict[str, object]

#: The end of every trace-validation config (this one's and ``tla/threaded_trace.py``'s): the
#: recorded trace as the constant ``Trace``, the trace's own Init and Next, and the inverted
#: invariant (see THE INVERSION above).
CONFIG_TAIL: Final = (
    "    None = None\n"
    "    Trace <- RecordedTrace\n"
    "INIT TraceInit\n"
    "NEXT TraceNext\n"
    "INVARIANT TraceIncomplete\n"
)

#: The largest batch the models take: ``tla/Queue.tla``'s ``ASSUME MaxBatch \in 1..10`` (the
#: contract's 10 entries). The TLA+ layer's one definition; equal to the other layers'
#: (``model_tests/tests/test_constants.py``).
MAX_BATCH: Final = 10

#: The modules a check needs next to the generated one.
_MODULES = ("Queue.tla", "TraceQueue.tla")
_FIFO_MODULES = ("Queue.tla", "QueueFifo.tla", "TraceQueueFifo.tla")


@dataclass(frozen=True)
class Fifo:
    """The trace is an ``impl.FifoQueue``'s: check it against ``tla/QueueFifo.tla``."""

    #: The queue's ``dedup_interval``, in whole clock units.
    dedup_interval: int


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


def _delay(x: object, where: str) -> int:
    return 0 if x is None else _int(x, where)


def _send(where: str, step: Step, t: int, start: float) -> Event:
    # Only accepted sends are recorded, so the event has no result.
    args = step[1]
    delay = _delay(args[1], where) if len(args) > 1 else 0
    if len(args) == 4:
        return _fifo_send(where, step, delay, t)
    return {"op": "send", "id": str(args[0]), "delay": delay, "now": t}


def _fifo_send(where: str, step: Step, delay: int, t: int) -> Event:
    # A FIFO send: also its group and dedup id, and whether it was a duplicate (no step).
    _, (id, _, group, dedup), result, _ = step
    dup = result is not True
    if id is None and not dup:
        raise TraceError(f"{where}: an accepted send without an id")
    return {
        "op": "send",
        "id": None if id is None else str(id),
        "delay": delay,
        "group": str(group),
        "dedup": None if dedup is None else str(dedup),
        "dup": dup,
        "earlier": str(result) if dup else None,
        "now": t,
    }


def _pairs(x: object, where: str, what: str, size: int) -> list[tuple[object, ...]]:
    if not isinstance(x, tuple | list) or not all(
        isinstance(p, tuple | list) and len(p) == size for p in x
    ):
        raise TraceError(f"{where}: expected a tuple of {what}, got {x!r}")
    return [tuple(p) for p in x]


def _send_batch(where: str, step: Step, t: int, start: float) -> Event:
    _, args, result, _ = step
    if len(args) == 4:
        return _fifo_send_batch(where, step, t)
    if len(args) != 2:
        raise TraceError(f"{where}: expected (ids, delays), got {args!r}")
    ids, delays = args
    if not isinstance(ids, tuple | list) or not isinstance(delays, tuple | list):
        raise TraceError(f"{where}: expected (ids, delays), got {args!r}")
    if len(ids) != len(delays):
        raise TraceError(f"{where}: {len(ids)} ids but {len(delays)} delays")
    entries = tuple((str(i), _delay(d, where)) for i, d in zip(ids, delays, strict=True))
    return {"op": "send_batch", "entries": entries, "ok": bool(result), "now": t}


def _fifo_send_batch(where: str, step: Step, t: int) -> Event:
    _, args, result, _ = step
    ids, delays, groups, dedups = (a if isinstance(a, tuple | list) else () for a in args)
    n = len(ids)
    if not (len(delays) == len(groups) == len(dedups) == n) or not isinstance(result, tuple | list):
        raise TraceError(f"{where}: expected (ids, delays, groups, dedup_ids), got {args!r}")
    if len(result) != n:
        raise TraceError(f"{where}: expected one result per entry, got {result!r}")
    dups = tuple(r is not True for r in result)
    return {
        "op": "send_batch",
        # A duplicate's id is the earlier one: it is named later (see _name_duplicates).
        "entries": tuple(
            (None if d else str(i), _delay(x, where))
            for i, x, d in zip(ids, delays, dups, strict=True)
        ),
        "groups": tuple(str(g) for g in groups),
        "dedups": tuple(None if d is None else str(d) for d in dedups),
        "dups": dups,
        "earliers": tuple(str(r) if d else None for r, d in zip(result, dups, strict=True)),
        "ok": True,
        "now": t,
    }


def _name_duplicates(events: list[Event]) -> None:
    """Give each FIFO duplicate without an id of its own a made-up, never-accepted one."""
    for k, e in enumerate(events):
        if e["op"] == "send" and e.get("dup") and e["id"] is None:
            e["id"] = f"dup{k}"
        elif e["op"] == "send_batch" and "dups" in e:
            entries = _seq(e["entries"])
            dups = e["dups"]
            assert isinstance(dups, tuple)
            e["entries"] = tuple(
                (f"dup{k}_{j}" if dup else i, d)
                for j, ((i, d), dup) in enumerate(zip(entries, dups, strict=True))
            )


def _receive(where: str, step: Step, t: int, start: float) -> Event:
    _, args, result, _ = step
    vt = None if args[0] is None else _int(args[0], where)
    if not isinstance(result, tuple) or len(result) != 3:
        raise TraceError(f"{where}: expected (id, attempt, deadline), got {result!r}")
    id, attempt, deadline = result
    if vt is not None:  # the time the deadline was computed from
        t = _time(deadline, start, where) - vt
    return {"op": "receive", "id": str(id), "attempt": _int(attempt, where), "vt": vt, "now": t}


def _receive_batch(where: str, step: Step, t: int, start: float) -> Event:
    _, args, result, _ = step
    if len(args) != 2:
        raise TraceError(f"{where}: expected (n, vt), got {args!r}")
    n = _int(args[0], where)
    vt = None if args[1] is None else _int(args[1], where)
    got = _pairs(result, where, "(id, attempt, deadline)", 3)
    if got and vt is not None:  # the time the deadlines were computed from (one for all)
        t = _time(got[0][2], start, where) - vt
    receipts = tuple((str(i), _int(a, where)) for i, a, _ in got)
    return {"op": "receive_batch", "n": n, "vt": vt, "got": receipts, "now": t}


def _delete_batch(where: str, step: Step, t: int, start: float) -> Event:
    _, args, result, _ = step
    receipts = tuple((str(i), _int(a, where)) for i, a in _pairs(args, where, "receipts", 2))
    if not isinstance(result, tuple | list) or len(result) != len(receipts):
        raise TraceError(f"{where}: expected one result per receipt, got {result!r}")
    oks = tuple(bool(r) for r in result)
    return {"op": "delete_batch", "receipts": receipts, "oks": oks, "now": t}


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


def _change_visibility_batch(where: str, step: Step, t: int, start: float) -> Event:
    _, args, result, _ = step
    changes = _pairs(args, where, "(id, attempt, t)", 3)
    if not isinstance(result, tuple | list) or len(result) != len(changes):
        raise TraceError(f"{where}: expected one result per change, got {result!r}")
    for (_, _, timeout), r in zip(changes, result, strict=True):
        if r is not False and r is not None:  # the time the new deadlines were computed from
            t = _time(r, start, where) - _int(timeout, where)
            break
    return {
        "op": "change_visibility_batch",
        "changes": tuple(((str(i), _int(a, where)), _int(x, where)) for i, a, x in changes),
        "oks": tuple(r is not False for r in result),
        "now": t,
    }


def _purge(where: str, step: Step, t: int, start: float) -> Event:
    return {"op": "purge", "count": _int(step[2], where), "now": t}


def _expire(where: str, step: Step, t: int, start: float) -> Event:
    return {"op": "expire", "fired": (str(step[2]),), "now": t}


#: The events whose fields are not the generic ones (see :func:`_event`).
_BUILDERS: Final[Mapping[str, Builder]] = {
    "send": _send,
    "send_batch": _send_batch,
    "receive": _receive,
    "receive_batch": _receive_batch,
    "delete_batch": _delete_batch,
    "change_visibility": _change_visibility,
    "change_visibility_batch": _change_visibility_batch,
    "purge": _purge,
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

    Consecutive ``expire`` steps with the same time are the timers one sweep fired: a sweep
    fires everything due at its time, so a second sweep at that time could only fire a timer
    started in between, by a step that would stand between them. They become one event.
    Raises :class:`TraceError` for a step of the wrong shape or a time that is not a whole number.
    """
    events: list[Event] = []
    for k, step in enumerate(steps):
        e = _event(k, step, start, registry)
        last = events[-1] if events else None
        same_sweep = last is not None and last["op"] == "expire" and last["now"] == e["now"]
        if e["op"] == "expire" and same_sweep:
            assert last is not None
            last["fired"] = (*_fired(last), *_fired(e))
            continue
        events.append(e)
    _name_duplicates(events)
    for k in range(1, len(events)):
        if _now(events[k]) < _now(events[k - 1]):
            raise TraceError(f"event {k} goes back in time: {events[k - 1]} then {events[k]}")
    return events


def _fired(e: Event) -> tuple[str, ...]:
    r = e["fired"]
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


def render_module(events: Sequence[Event], name: str = "TraceRun", *, fifo: bool = False) -> str:
    """A module that EXTENDS TraceQueue (TraceQueueFifo if ``fifo``) and defines
    ``RecordedTrace``, the events in order."""
    body = ",\n".join(f"    {_record(e)}" for e in events)
    base = "TraceQueueFifo" if fifo else "TraceQueue"
    return (
        f"{'-' * 30} MODULE {name} {'-' * 30}\n"
        f"\\* Generated by tla/trace.py: {len(events)} events recorded from impl.Queue.\n"
        f"EXTENDS {base}\n\n"
        "RecordedTrace == <<\n"
        f"{body}\n"
        ">>\n"
        f"{'=' * 77}\n"
    )


def _set(values: Iterable[object]) -> str:
    return "{" + ", ".join(sorted({tla_value(v) for v in values})) + "}"


def _receipt_ids(e: Event) -> set[str]:
    """The ids an event names, whatever its op."""
    op = e["op"]
    if "id" in e:
        return {str(e["id"])}
    if op == "expire":
        return set(_fired(e))
    if op == "send_batch":
        return {str(i) for i, _ in _seq(e["entries"])}
    if op in ("receive_batch", "delete_batch"):
        return {str(i) for i, _ in _seq(e["got" if op == "receive_batch" else "receipts"])}
    if op == "change_visibility_batch":
        return {str(i) for (i, _), _ in map(_seq_pair, _seq(e["changes"]))}
    return set()


def _seq_pair(change: tuple[object, object]) -> tuple[tuple[object, object], object]:
    receipt, t = change
    assert isinstance(receipt, tuple) and len(receipt) == 2
    return (receipt[0], receipt[1]), t


def _seq(x: object) -> list[tuple[object, object]]:
    """An event's sequence of pairs (entries, receipts, changes)."""
    assert isinstance(x, tuple)
    out: list[tuple[object, object]] = []
    for p in x:
        assert isinstance(p, tuple) and len(p) == 2
        out.append((p[0], p[1]))
    return out


def _fifo_constants(events: Sequence[Event], fifo: Fifo) -> str:
    """QueueFifo's extra constants: the groups and dedup sets the trace's sends name."""
    groups: dict[str, set[str]] = {}
    dedups: dict[str, set[str]] = {}
    for e in events:
        if e["op"] == "send":
            sends = [(e["id"], e["group"], e["dedup"])]
        elif e["op"] == "send_batch":
            assert isinstance(e["groups"], tuple) and isinstance(e["dedups"], tuple)
            sends = [
                (i, g, d)
                for (i, _), g, d in zip(_seq(e["entries"]), e["groups"], e["dedups"], strict=True)
            ]
        else:
            continue
        for i, g, d in sends:
            groups.setdefault(str(g), set()).add(str(i))
            if d is not None:
                dedups.setdefault(str(d), set()).add(str(i))

    def sets(m: dict[str, set[str]]) -> str:
        return "{" + ", ".join(_set(ids) for _, ids in sorted(m.items())) + "}"

    return (
        f"    Groups = {sets(groups)}\n"
        f"    DedupSets = {sets(dedups)}\n"
        f"    DedupInterval = {fifo.dedup_interval}\n"
    )


def render_config(
    events: Sequence[Event],
    capacity: int | None,
    max_receives: int | None,
    fifo: Fifo | None = None,
) -> str:
    """The TLC config: Queue's (QueueFifo's) constants fitted to the trace, and the inverted
    invariant."""
    ids: set[str] = set().union(*(_receipt_ids(e) for e in events))
    attempts = [int(str(e["attempt"])) for e in events if e["op"] == "receive"]
    attempts += [
        int(str(a)) for e in events if e["op"] == "receive_batch" for _, a in _seq(e["got"])
    ]
    vts = {e["vt"] for e in events if e["op"] in ("receive", "receive_batch")}
    extends = {e["t"] for e in events if e["op"] == "change_visibility"}
    extends |= {
        t for e in events if e["op"] == "change_visibility_batch" for _, t in _seq(e["changes"])
    }
    delays = {e["delay"] for e in events if e["op"] == "send"}
    delays |= {d for e in events if e["op"] == "send_batch" for _, d in _seq(e["entries"])}
    if fifo is None or not delays:  # a FIFO queue has one delay: its own
        delays |= {0}
    sizes = [len(_seq(e[k])) for e in events for k in ("entries", "receipts", "changes") if k in e]
    sizes += [int(str(e["n"])) for e in events if e["op"] == "receive_batch"]
    max_attempt = max([1, *attempts])
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
        f"    Delays = {_set(delays)}\n"
        f"    MaxBatch = {min(MAX_BATCH, max([1, *sizes]))}\n"
        f"{'' if fifo is None else _fifo_constants(events, fifo)}"
        f"{CONFIG_TAIL}"
    )


# -- the check ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TraceVerdict:
    """What TLC said of a trace (:func:`run_inverted`), the right way round: the fields
    :class:`Verdict` and ``tla.threaded_trace.ThreadVerdict`` share."""

    accepted: bool
    #: How many steps of the trace TLC matched (all of them when accepted).
    matched: int
    result: Result


@dataclass(frozen=True)
class Verdict(TraceVerdict):
    """TLC's answer, the right way round: was the trace a behaviour of :attr:`model`?"""

    #: The module the trace was checked against (``tla.system_trace``'s verdict overrides it).
    model: ClassVar[str] = "Queue"

    events: tuple[Event, ...]

    @property
    def rejected_event(self) -> Event | None:
        """The first event no step of the model matches, when rejected."""
        return None if self.accepted else self.events[self.matched]

    def explain(self) -> str:
        m = self.model
        if self.accepted:
            return f"accepted: all {len(self.events)} events are steps of {m}"
        return (
            f"rejected at event {self.matched} of {len(self.events)}: "
            f"{self.rejected_event} is no step of {m} after the {self.matched} before it"
        )


def _steps(lines: Iterable[str]) -> list[int]:
    """The values of ``step`` in TLC's printed states."""
    return [int(m.group(1)) for line in lines if (m := _STEP.match(line.strip()))]


def run_inverted(
    modules: Iterable[str],
    name: str,
    module: str,
    config: str,
    *,
    timeout: float,
    every_path: bool = False,
) -> tuple[bool | None, int, Result]:
    """Run TLC on a generated trace-validation module and read THE INVERSION the right way
    round: ``(accepted, matched, result)``, ``accepted`` ``None`` when TLC gave no verdict.

    The module ``name`` (text ``module``, config ``config``) is written next to copies of
    ``modules`` from ``tla/``. ``every_path=False`` (a trace with one way to be matched, as
    ``TraceQueue.tla``'s): rejected = a deadlock, ``matched`` = the ``step`` of its last
    state. ``every_path=True`` (``TraceThreadedQueue.tla``: the events may be matched in more
    than one way, and a way that gets stuck proves nothing): no deadlock check and every
    state dumped; rejected = TLC finished without error, ``matched`` = the largest ``step``
    of the states it reached. Accepted, either way: ``TraceIncomplete`` violated.
    """
    with tempfile.TemporaryDirectory(prefix=f"{name}-") as tmp:
        d = Path(tmp)
        for m in modules:
            shutil.copy(TLA_DIR / m, d / m)
        (d / f"{name}.tla").write_text(module)
        (d / f"{name}.cfg").write_text(config)
        result = run_tlc(
            d / f"{name}.tla",
            d / f"{name}.cfg",
            check_deadlock=not every_path,
            extra=("-dump", str(d / "states")) if every_path else (),
            timeout=timeout,
        )
        if every_path:
            dumps = [f for f in d.glob("states*") if f.is_file()]
            matched = max((n for f in dumps for n in _steps(f.read_text().splitlines())), default=0)
        else:
            matched = (_steps(result.output) or [0])[-1]
    if result.outcome == "violation" and result.detail == "Invariant TraceIncomplete":
        return True, matched, result
    if every_path:
        rejected = result.outcome == "ok"
    else:
        rejected = result.outcome == "violation" and result.detail == "Deadlock"
    return (False if rejected else None), matched, result


def check_events(
    events: Sequence[Event],
    *,
    capacity: int | None,
    max_receives: int | None,
    timeout: float = 120.0,
    fifo: Fifo | None = None,
) -> Verdict:
    """Run TLC on ``events`` with Queue's ``capacity`` and ``max_receives``; the verdict.
    With ``fifo``: against ``tla/QueueFifo.tla``, through ``tla/TraceQueueFifo.tla``.

    Raises :class:`TraceCheckError` if TLC fails instead of answering (a setup problem, a
    malformed event), and ``tla.tlc.SetupError`` if Java or the TLA+ tools are missing.
    """
    accepted, matched, result = run_inverted(
        _MODULES if fifo is None else _FIFO_MODULES,
        "TraceRun",
        render_module(events, fifo=fifo is not None),
        render_config(events, capacity, max_receives, fifo),
        timeout=timeout,
    )
    frozen = tuple(events)
    if accepted is not None:
        return Verdict(accepted, len(frozen) if accepted else matched, result, events=frozen)
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
    fifo: Fifo | None = None,
) -> Verdict:
    """Is the trace recorded from an ``impl.Queue`` a behaviour of ``tla/Queue.tla``?

    ``capacity`` and ``max_receives`` are the queue's; ``start`` is its clock's start time.
    With ``fifo``: is the trace of an ``impl.FifoQueue`` a behaviour of ``tla/QueueFifo.tla``?
    """
    events = to_events(steps, start)
    return check_events(
        events, capacity=capacity, max_receives=max_receives, timeout=timeout, fifo=fifo
    )
