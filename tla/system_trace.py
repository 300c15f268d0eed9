"""Trace validation of a system of queues: TLC checks that a run recorded from impl queues linked
by a dead-letter target (``A -> B``), with moves, retention and redrive, is a behaviour of
``tla/QueueSystem.tla``, through ``tla/TraceQueueSystem.tla``.

RECORDING ONE ORDERED TRACE FROM SEVERAL QUEUES. Each queue records its own transitions
(``BaseQueue.record_trace``); :class:`SystemRecorder` gives every queue of the system a sink that
appends ``(queue name, step)`` to ONE shared list, under the recorder's own lock (a leaf lock:
the sink calls nothing else). That list is a linearization of the system's run because
  1. a queue calls its sink inside the transition's critical section, holding its own lock,
     just before the change applies (a sink that raises vetoes it);
  2. a step across two queues -- a release that dead-letters (``retry``,
     ``change_visibility(..., 0)``, a sweep of the source) and a redrive move -- holds BOTH
     queues' locks (creation order, the target's first) when it calls its sink, once, in the
     queue it is a step of (the source's release; the dead-letter queue's ``redrive``); the
     target or destination records nothing for a message moved in;
  3. so two steps that touch a common queue hold that queue's lock while appending: their order
     in the list is the order in which they took effect; two steps that touch no common queue
     hold no common lock, and commute (they change different queues; the system's id registry
     only ever admits distinct ids), so either order of them is a linearization.
One caveat of (3): a step reads its ``now`` inside its critical section, so two steps on disjoint
queues may be appended out of time order (one read the clock, another thread advanced it and
recorded first). :func:`to_system_events` puts the steps in time order with a stable sort:
every pair it swaps is out of time order, hence (by 3) touches no common queue, hence commutes.

THE EVENTS (``TraceQueueSystem.tla``'s ``Trace``) are :func:`tla.trace.to_events`'s, each with
its queue's number ``q`` (1.. in creation order, as ``QueueSystem.tla`` numbers queues): ``send``,
``receive``, ``delete``, ``retry``, ``change_visibility``, ``cancel``; the steps one sweep of a
queue fired -- ``("expire", (), id, now)`` and ``("age_out", (), id, now)``, consecutive, same
queue and time -- are one ``expire`` event whose ``fired`` is ``<<"msg", id>>`` (a delay or a
deadline) or ``<<"ret", id>>`` (a retention timer) in that order; ``("redrive", (dlq, id),
new_id, now)`` is a ``redrive`` event with ``new`` and ``to``. A dead-letter move is no event:
the source's releasing event is QueueSystem's ``Release``, which moves the message in the same
step. Batches and ``purge`` are refused (:class:`NotModelled`): QueueSystem leaves them to
Queue.tla, whose trace check (``tla/trace.py``) covers them on one queue.

A REDRIVE TICK INSIDE A SWEEP. The impl fires a rated redrive's tick as a timer of the
dead-letter queue's sweep, in the one timer order, so one sweep may record ``expire x``,
``redrive y``, ``expire z``. QueueSystem's ``Expire`` fires every due timer in one step and its
``Redrive`` is a step of its own (the task's rate is an impl schedule of Redrive steps). When
the swept queue has no dead-letter target of its own, its timers change only that queue and
never the redriven message (a message the redrive moved has no timers left), so the redrive
commutes with the rest of the sweep: it is put after it, and the sweep is one event. A sweep of
a queue with a target (its firings may move into a third queue) is refused instead.

WHAT THE TRACE DOES NOT SAY. A redrive step names the dead-letter queue and the id, not the
destination: ``None`` (the message's source) is assumed, which is what ``start_redrive()``
without a destination does; pass ``destinations={dlq_name: destination_name}`` for a task
started with one. The task's rate is not checked by TLC (QueueSystem has no rate): the test
checks the recorded move times against ``started_at + k / rate`` itself.

THE NEW IDS. QueueSystem's redrive takes ``NextFresh``, ``CHOOSE n \\in RedriveIds \\
SysAccepted``. TLC's CHOOSE over strings takes the first in its own order of strings, which is
the order in which the parser first met them; the generated module therefore names the new ids
first of all, in the order they were made (``FreshOrder``). ``TraceQueueSystem.tla`` checks that
each redrive's new id is ``NextFresh``: if TLC ever chose otherwise the trace would be rejected,
never wrongly accepted.

THE INVERSION, as in ``tla/trace.py``: TLC reporting ``TraceIncomplete`` violated means the trace
was ACCEPTED; a deadlock means it was REJECTED. :class:`SystemVerdict` says it the right way
round.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Final, Protocol

from tla.trace import (
    CONFIG_TAIL,
    Event,
    Step,
    TraceCheckError,
    TraceError,
    Verdict,
    run_inverted,
    tla_value,
    to_events,
)

#: The modules a check needs next to the generated one.
_MODULES: Final = ("Queue.tla", "QueueSystem.tla", "TraceQueueSystem.tla")

#: The recorded actions that are events of ``TraceQueueSystem.tla`` (a sweep's two kinds of
#: timer become one ``expire`` event).
SYSTEM_ACTIONS: Final = (
    "send",
    "receive",
    "delete",
    "retry",
    "change_visibility",
    "cancel",
    "expire",
    "age_out",
    "redrive",
)

#: One recorded step of a system: (the name of the queue that recorded it, the step).
Tagged = tuple[str, Step]


class NotModelled(TraceError):
    """A recorded step that ``QueueSystem.tla`` has no step for (a batch, a purge)."""


class TracedQueue(Protocol):
    """What the recorder and the config read of a queue (``impl.Queue`` has all of it)."""

    @property
    def name(self) -> str: ...

    @property
    def capacity(self) -> int | None: ...

    @property
    def max_receives(self) -> int | None: ...

    @property
    def retention(self) -> float | None: ...

    @property
    def dead_letter(self) -> TracedQueue | None: ...

    def record_trace(self, sink: Callable[[Step], None] | None) -> None: ...


@dataclass(frozen=True)
class QueueConfig:
    """One queue of the system, as ``QueueSystem.tla``'s per-queue constants see it."""

    name: str
    capacity: int | None = None
    max_receives: int | None = None
    #: In whole clock units (``None``: keep for ever).
    retention: int | None = None
    #: The name of its dead-letter target (a queue earlier in the system), or ``None``.
    dead_letter: str | None = None


@dataclass(frozen=True)
class SystemConfig:
    """The queues of a system in creation order (a target before its sources)."""

    queues: tuple[QueueConfig, ...]

    def __post_init__(self) -> None:
        names = [q.name for q in self.queues]
        if len(names) < 2 or len(set(names)) != len(names):
            raise ValueError(f"queues: need two or more queues with distinct names, got {names}")
        for k, q in enumerate(self.queues):
            if q.dead_letter is not None and q.dead_letter not in names[:k]:
                raise ValueError(
                    f"queues: {q.name}'s dead_letter {q.dead_letter!r} is not a queue created "
                    "before it"
                )

    def number(self, name: str) -> int:
        """The queue's number in ``QueueSystem.tla`` (1.., creation order)."""
        for k, q in enumerate(self.queues, 1):
            if q.name == name:
                return k
        raise TraceError(f"no queue named {name!r} in the system")

    def of(self, name: str) -> QueueConfig:
        return self.queues[self.number(name) - 1]


def _units(x: float | None, what: str) -> int | None:
    if x is None:
        return None
    if x != int(x) or x <= 0:
        raise TraceError(f"{what}: {x!r} is not a whole number of clock units > 0")
    return int(x)


def system_config(queues: Sequence[TracedQueue]) -> SystemConfig:
    """The configuration of ``queues`` (given in creation order), read from the queues."""
    out = []
    for q in queues:
        target = q.dead_letter
        out.append(
            QueueConfig(
                name=q.name,
                capacity=q.capacity,
                max_receives=q.max_receives,
                retention=_units(q.retention, f"{q.name}.retention"),
                dead_letter=None if target is None else target.name,
            )
        )
    return SystemConfig(tuple(out))


class SystemRecorder:
    """One trace for a system of queues: every queue's sink appends to one list, tagged with
    the queue's name, under this recorder's lock (see the module docstring for why that list
    is in linearization order)."""

    def __init__(self, queues: Sequence[TracedQueue]) -> None:
        self.config = system_config(queues)
        self._lock = threading.Lock()
        self._steps: list[Tagged] = []
        self._queues = list(queues)
        for q in self._queues:
            q.record_trace(self._sink(q.name))

    def _sink(self, name: str) -> Callable[[Step], None]:
        def sink(step: Step) -> None:
            with self._lock:  # a leaf lock, taken inside the queues' critical sections
                self._steps.append((name, step))

        return sink

    def stop(self) -> None:
        """Stop recording on every queue."""
        for q in self._queues:
            q.record_trace(None)

    @property
    def steps(self) -> list[Tagged]:
        """The steps recorded so far, in the order they were appended."""
        with self._lock:
            return list(self._steps)


# -- steps to events ----------------------------------------------------------------------------


def _time_order(steps: Sequence[Tagged]) -> list[Tagged]:
    # Stable: only pairs out of time order move past each other (module docstring, caveat).
    return sorted(steps, key=lambda s: s[1][3])


def _sweep_then_redrives(steps: list[Tagged], config: SystemConfig) -> list[Tagged]:
    """Put each redrive that a sweep's tick made in the middle of that sweep (same queue, same
    time, timer steps on both sides) after the rest of the sweep (module docstring)."""
    out = list(steps)
    timers = ("expire", "age_out")
    k = 0
    while k < len(out):
        name, (action, _, _, now) = out[k]
        if action != "redrive" or k == 0:
            k += 1
            continue
        before = out[k - 1]
        if before[0] != name or before[1][0] not in timers or before[1][3] != now:
            k += 1
            continue
        j = k + 1
        while j < len(out) and out[j][1][0] == "redrive" and out[j][0] == name:
            j += 1
        end = j
        while end < len(out) and out[end][0] == name and out[end][1][0] in timers:
            if out[end][1][3] != now:
                break
            end += 1
        if end == j:
            k = j
            continue
        if config.of(name).dead_letter is not None:
            raise NotModelled(
                f"a redrive of {name} between two timers of one sweep of {name}, which has a "
                "dead-letter target: the redrive need not commute with the rest of the sweep"
            )
        out[k:end] = out[j:end] + out[k:j]
        k = end
    return out


def _units_after(now: object, start: float, k: int) -> int:
    if isinstance(now, bool) or not isinstance(now, int | float) or now - start != int(now - start):
        raise TraceError(f"step {k}: time {now!r} is not a whole number of units after {start!r}")
    if now < start:
        raise TraceError(f"step {k}: time {now!r} is before the clock's start {start!r}")
    return int(now - start)


def _redrive(
    name: str, step: Step, t: int, config: SystemConfig, destinations: Mapping[str, str]
) -> Event:
    _, args, result, _ = step
    if len(args) != 2 or str(args[0]) != name or not isinstance(result, str):
        raise TraceError(f"{name}: expected ('redrive', ({name!r}, id), new_id, now), got {step}")
    to = destinations.get(name)
    return {
        "op": "redrive",
        "q": config.number(name),
        "id": str(args[1]),
        "new": result,
        "to": None if to is None else config.number(to),
        "now": t,
    }


def to_system_events(
    steps: Iterable[Tagged],
    config: SystemConfig,
    start: float = 0.0,
    destinations: Mapping[str, str] | None = None,
) -> list[Event]:
    """The events of ``TraceQueueSystem.tla`` for the tagged ``steps`` of a system run.

    ``start``: the clock's start; ``destinations``: the destination of each dead-letter queue's
    redrive tasks that were started with one (by name; default: each message's source).
    Raises :class:`NotModelled` for a batch or a purge, :class:`TraceError` for a step of the
    wrong shape, an unknown queue or a time that is not a whole number of units.
    """
    dests = dict(destinations or {})
    for name in (*dests, *dests.values()):
        config.number(name)  # raises for a name that is no queue of the system
    ordered = _sweep_then_redrives(_time_order(list(steps)), config)
    events: list[Event] = []
    for k, (name, step) in enumerate(ordered):
        action = step[0]
        if action not in SYSTEM_ACTIONS:
            raise NotModelled(
                f"step {k} ({name}: {action}): QueueSystem.tla has no step for it "
                "(batches and purge are Queue.tla's: tla/trace.py)"
            )
        q = config.number(name)
        if action == "redrive":
            events.append(_redrive(name, step, _units_after(step[3], start, k), config, dests))
            continue
        kind = {"expire": "msg", "age_out": "ret"}.get(action)
        e = to_events([("expire", (), step[2], step[3]) if kind else step], start)[0]
        if kind is None:
            events.append({"op": e["op"], "q": q} | {f: v for f, v in e.items() if f != "op"})
            continue
        fired = ((kind, str(step[2])),)
        last = events[-1] if events else None
        if (
            last is not None
            and last["op"] == "expire"
            and (last["q"], last["now"]) == (q, e["now"])
        ):
            last["fired"] = (*_fired(last), *fired)
        else:
            events.append({"op": "expire", "q": q, "fired": fired, "now": e["now"]})
    return events


def _fired(e: Event) -> tuple[tuple[str, str], ...]:
    fired = e["fired"]
    assert isinstance(fired, tuple)
    return fired


# -- TLA+ text ----------------------------------------------------------------------------------


def _record(e: Event) -> str:
    return "[" + ", ".join(f"{k} |-> {tla_value(v)}" for k, v in e.items()) + "]"


def _seq(values: Iterable[object]) -> str:
    return "<<" + ", ".join(tla_value(v) for v in values) + ">>"


def _set(values: Iterable[object]) -> str:
    return "{" + ", ".join(sorted({tla_value(v) for v in values})) + "}"


def fresh_ids(events: Sequence[Event]) -> list[str]:
    """The ids the trace's redrives made, in the order they were made: QueueSystem's
    ``RedriveIds``. An id a send used, or an earlier redrive made, is no fresh id (a trace
    whose redrive names one is rejected at that redrive, as it must be)."""
    sent = {str(e["id"]) for e in events if e["op"] == "send"}
    out: list[str] = []
    for e in events:
        if e["op"] == "redrive" and (new := str(e["new"])) not in sent and new not in out:
            out.append(new)
    return out


def render_module(events: Sequence[Event], config: SystemConfig, name: str = "TraceRun") -> str:
    """A module that EXTENDS TraceQueueSystem and defines the system's per-queue constants and
    ``RecordedTrace``. The new ids come first of all (see THE NEW IDS)."""
    qs = config.queues
    targets = [None if q.dead_letter is None else config.number(q.dead_letter) for q in qs]
    body = ",\n".join(f"    {_record(e)}" for e in events)
    return (
        f"{'-' * 30} MODULE {name} {'-' * 30}\n"
        f"\\* Generated by tla/system_trace.py: {len(events)} events of a system of "
        f"{len(qs)} queues ({', '.join(q.name for q in qs)}).\n"
        "EXTENDS TraceQueueSystem\n\n"
        "\\* First: TLC's CHOOSE takes strings in the order the parser first met them.\n"
        f"FreshOrder == {_seq(fresh_ids(events))}\n"
        "SysRedriveIds == Range(FreshOrder)\n"
        f"SysDeadLetter == {_seq(targets)}\n"
        f"SysCapacity == {_seq(q.capacity for q in qs)}\n"
        f"SysMaxReceives == {_seq(q.max_receives for q in qs)}\n"
        f"SysRetention == {_seq(q.retention for q in qs)}\n\n"
        "RecordedTrace == <<\n"
        f"{body}\n"
        ">>\n"
        f"{'=' * 77}\n"
    )


def render_config(events: Sequence[Event]) -> str:
    """The TLC config: QueueSystem's constants fitted to the trace, and the inverted invariant."""
    sends = [e for e in events if e["op"] == "send"]
    attempts = [int(str(e["attempt"])) for e in events if e["op"] == "receive"]
    times = [int(str(e["now"])) for e in events]
    return (
        "\\* Generated by tla/system_trace.py. TraceIncomplete VIOLATED = the trace is ACCEPTED;\n"
        "\\* a deadlock = the trace is REJECTED (see tla/TraceQueueSystem.tla).\n"
        "CONSTANTS\n"
        f"    SendTo = {_set(e['q'] for e in sends)}\n"
        f"    Ids = {_set(e['id'] for e in sends)}\n"
        f"    MaxAttempt = {max([1, *attempts])}\n"
        f"    VisibilityTimeouts = {_set(e['vt'] for e in events if e['op'] == 'receive')}\n"
        f"    ExtendTimeouts = {_set(e['t'] for e in events if e['op'] == 'change_visibility')}\n"
        f"    Delays = {_set([0, *(e['delay'] for e in sends)])}\n"
        f"    MaxTime = {max([0, *times])}\n"
        '    Move = "atomic"\n'
        "    DeadLetter <- SysDeadLetter\n"
        "    Capacity <- SysCapacity\n"
        "    MaxReceives <- SysMaxReceives\n"
        "    Retention <- SysRetention\n"
        "    RedriveIds <- SysRedriveIds\n"
        f"{CONFIG_TAIL}"
    )


# -- the check ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SystemVerdict(Verdict):
    """TLC's answer, the right way round: was the trace a behaviour of QueueSystem?"""

    model: ClassVar[str] = "QueueSystem"


def check_system_events(
    events: Sequence[Event], config: SystemConfig, *, timeout: float = 120.0
) -> SystemVerdict:
    """Run TLC on ``events`` of the system ``config``; the verdict.

    Raises :class:`tla.trace.TraceCheckError` if TLC fails instead of answering, and
    ``tla.tlc.SetupError`` if Java or the TLA+ tools are missing.
    """
    accepted, matched, result = run_inverted(
        _MODULES,
        "TraceRun",
        render_module(events, config),
        render_config(events),
        timeout=timeout,
    )
    frozen = tuple(events)
    if accepted is not None:
        return SystemVerdict(accepted, len(frozen) if accepted else matched, result, frozen)
    raise TraceCheckError(
        f"TLC gave no verdict ({result.summary}):\n" + "\n".join(result.output[-30:])
    )


def check_system_trace(
    steps: Iterable[Tagged],
    config: SystemConfig,
    *,
    start: float = 0.0,
    destinations: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> SystemVerdict:
    """Is the tagged trace recorded from a system of impl queues a behaviour of
    ``tla/QueueSystem.tla``? (``start``: the clock's start; ``destinations``: see
    :func:`to_system_events`.)"""
    events = to_system_events(steps, config, start, destinations)
    return check_system_events(events, config, timeout=timeout)
