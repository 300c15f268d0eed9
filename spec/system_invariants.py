"""The invariants of a system of queues (contract 7.7, design rule 6), one function each.

As in :mod:`spec.invariants`, each returns ``None`` when it holds and a sentence when it does
not. Per queue, every invariant of :mod:`spec.invariants` holds on each queue's state
(:func:`system_violations` runs them, named ``queue: reason``). Across the queues:

- :func:`system_one_state` (TLA+ ``SystemOneState``): every id the system accepted *ends* in
  exactly one queue, held there (``DELAYED``, ``VISIBLE``, ``IN_FLIGHT``, ``DONE``,
  ``CANCELLED``, ``AGED_OUT``, or ``DEAD`` in a queue with no target) or ``MOVED`` there (a
  redrive gives the message a new id: the old id ends at its ``MOVED`` entry, and the message
  lives on under the new one). A ``DEAD`` entry of a queue with a target and a ``MOVED``
  entry are *departed*: each points to a queue where the id it names is present, and the
  records agree (``sources``, ``redriven``, the tasks and their ticks).
- :func:`nothing_lost` (TLA+ ``NothingLost``): following the pointers from any entry leads to
  a holding entry, and every accepted id is in some queue. A move made of two steps breaks it
  between them (:func:`spec.system.move_in_two_steps`).

The note's wording ("exactly one holding state") is TLA+'s "ends in exactly one" here: an id
that was redriven has no holding entry under that id, only its ``MOVED`` end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from spec.invariants import INVARIANTS, Reason, step_violations
from spec.state import TICK, State, Status, Time
from spec.system import RedriveStatus, System


def _departed(system: System, queue: str, s: State, id: str) -> tuple[str, str] | None:
    """Where the entry ``id`` of ``queue`` points, if it is departed; else ``None``."""
    m = s.get(id)
    assert m is not None
    if m.status is Status.MOVED:
        return system.moved_to(queue, id) or ("?", id)
    target = system.target(queue)
    if m.status is Status.DEAD and target is not None:
        return target, id
    return None


def system_one_state(system: System) -> Reason:
    """See the module docstring: one end per id, and every departed entry's pointer, source
    record, redrive record and task agree with the queues."""
    names = set(system.names())
    ends: dict[str, list[str]] = {}
    for member in system.queues:
        s = member.state
        for m in s.messages:
            where = _departed(system, member.name, s, m.id)
            if where is None or m.status is Status.MOVED:
                ends.setdefault(m.id, []).append(member.name)
            if where is not None:
                q, i = where
                if q not in names or system.state(q).get(i) is None:
                    return (
                        f"SystemOneState: {m.id!r} is {m.status.value} in {member.name!r}, "
                        f"pointing to {i!r} in {q!r}, which is not there"
                    )
                if m.status is Status.DEAD and system.source_of(q, i) != member.name:
                    return (
                        f"SystemOneState: {i!r} died in {member.name!r} but {q!r} records it "
                        f"from {system.source_of(q, i)!r}"
                    )
    for id in system.accepted:
        if len(ends.get(id, [])) != 1:
            return f"SystemOneState: {id!r} ends in {ends.get(id, [])}, not in exactly one queue"
    ids = {m.id for member in system.queues for m in member.state.messages}
    if ids != set(system.accepted):
        return f"SystemOneState: the registry {system.accepted} is not the queues' ids"
    for q, i, source in system.sources:
        died = system.state(source).get(i) if source in names else None
        if died is None or died.status is not Status.DEAD or system.target(source) != q:
            return f"SystemOneState: {i!r} recorded in {q!r} from {source!r}, not dead there"
    for q, i, dest, new in system.redriven:
        out = system.state(q).get(i)
        if out is None or out.status is not Status.MOVED or system.state(dest).get(new) is None:
            return f"SystemOneState: the redrive of {i!r} from {q!r} to {new!r} in {dest!r}"
    return _tasks(system)


def _tasks(system: System) -> Reason:
    """The tasks' counts add up, at most one runs per queue, and exactly the running tasks
    with a ``next_tick`` have a tick in their queue's timer order."""
    running: set[str] = set()
    for task in system.tasks:
        if task.moved + task.skipped + len(task.scope) != task.to_move:
            return f"SystemOneState: task {task.name} moved, skipped and left do not add up"
        if task.status is RedriveStatus.RUNNING:
            if task.dlq in running:
                return f"SystemOneState: two tasks run on {task.dlq!r}"
            running.add(task.dlq)
        elif task.next_tick is not None:
            return f"SystemOneState: task {task.name} is {task.status.value} with a tick"
    for member in system.queues:
        ticks = [name for kind, name in member.state.order if kind == TICK]
        want = [x.name for x in system.tasks if x.dlq == member.name and x.next_tick is not None]
        if sorted(ticks) != sorted(want):
            return f"SystemOneState: {member.name!r} has ticks {ticks}, its tasks {want}"
    return None


def nothing_lost(system: System) -> Reason:
    """Every entry's pointers lead, following chains, to a holding entry; every accepted id is
    in some queue."""
    fuel = sum(len(m.state.messages) for m in system.queues) + 1
    for member in system.queues:
        for m in member.state.messages:
            q, i, n = member.name, m.id, fuel
            while (where := _departed(system, q, system.state(q), i)) is not None:
                q, i = where
                n -= 1
                if q not in system.names() or system.state(q).get(i) is None or n == 0:
                    return (
                        f"NothingLost: {m.id!r} left {member.name!r} and is nowhere: its chain "
                        f"breaks at {i!r} in {q!r}"
                    )
    present = {m.id for member in system.queues for m in member.state.messages}
    if lost := sorted(set(system.accepted) - present):
        return f"NothingLost: {lost} were accepted and are in no queue"
    return None


#: The invariants across the queues, by their contract names.
SYSTEM_INVARIANTS: Final[Mapping[str, Callable[[System], Reason]]] = {
    "SystemOneState": system_one_state,
    "NothingLost": nothing_lost,
}


def system_violations(system: System) -> list[str]:
    """Every failing invariant of ``system``: the two of the system, then each queue's own
    (:data:`spec.invariants.INVARIANTS`), as ``queue: reason``."""
    out = [r for f in SYSTEM_INVARIANTS.values() if (r := f(system)) is not None]
    for member in system.queues:
        out += [f"{member.name}: {r}" for f in INVARIANTS.values() if (r := f(member.state))]
    return out


def retention_honoured_step(before: System, after: System, now: Time) -> Reason:
    """A message ages out only at or after its retention timer's due time, and only from an
    active state (contract 7.4)."""
    for member in after.queues:
        old_s = before.state(member.name) if member.name in before.names() else None
        for m in member.state.messages:
            old = old_s.get(m.id) if old_s is not None else None
            if m.status is not Status.AGED_OUT or (old is not None and old.status is m.status):
                continue
            due = member.state.retention_due(m)
            if old is None or not old.status.active or due is None or now < due:
                return f"RetentionHonoured: {m.id!r} aged out in {member.name!r} at {now}"
    return None


def system_step_violations(before: System, after: System, now: Time | None = None) -> list[str]:
    """Every failing step half: each queue's (:func:`spec.invariants.step_violations`), the
    registry and the counter never shrink, and (with ``now``) ``RetentionHonoured``."""
    out = []
    for member in after.queues:
        if member.name in before.names():
            b = before.state(member.name)
            out += [f"{member.name}: {r}" for r in step_violations(b, member.state, now)]
    if not set(before.accepted) <= set(after.accepted) or after.counter < before.counter:
        out.append("IdsReserved: the system forgot an id or its counter went back")
    if now is not None and (r := retention_honoured_step(before, after, now)) is not None:
        out.append(r)
    return out
