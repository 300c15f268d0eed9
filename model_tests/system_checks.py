"""``SystemOneState`` and ``NothingLost`` on the implementation: a system of ``impl`` queues
read through its snapshots, ``dead_letter``, ``source_of`` and ``moved_to``.

``spec.system_invariants`` states both on a ``spec.system.System``; these are the same two
sentences checked on what ``impl`` shows (contract section 7.7), so a check can run them on a
queue under test with no spec beside it (the fault matrix of moves, the system mutants):

- a message is *departed* from a queue when it is ``DEAD`` there and the queue has a
  dead-letter target (it went to the target, same id), or ``MOVED`` (it went to
  ``moved_to(id)``); every other state is *holding*;
- ``system_one_state``: each id is listed once per queue, and held by exactly one queue;
- ``nothing_lost``: following departures from any entry reaches a queue that lists the id
  (so a two-step move, between its steps, fails), and every id the caller knows was accepted
  is in some queue.

Each returns ``None`` or a reason that starts with the invariant's name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from impl import BaseQueue, Snapshot


def _entries(snap: Snapshot[Any]) -> list[tuple[str, str]]:
    """(id, state) for every entry of a snapshot, repeats kept (OneState reports them)."""
    out = [(m.id, "delayed") for m in snap.delayed]
    out += [(m.id, "visible") for m in snap.visible]
    out += [(m.id, "in_flight") for m in snap.in_flight]
    out += [(m.id, "dead") for m in snap.dead]
    for name, ids in (
        ("done", snap.done),
        ("cancelled", snap.cancelled),
        ("aged_out", snap.aged_out),
        ("moved", snap.moved),
    ):
        out += [(id, name) for id in sorted(ids)]
    return out


def _departure(q: BaseQueue[Any], id: str, state: str) -> tuple[BaseQueue[Any], str] | None:
    """Where an entry points, if it is a departed one."""
    if state == "dead" and q.dead_letter is not None:
        return q.dead_letter, id
    if state == "moved":
        hit = q.moved_to(id)
        assert hit is not None, f"{id!r} is MOVED in {q.name!r} and moved_to knows nothing"
        return hit
    return None


def system_one_state(queues: Sequence[BaseQueue[Any]]) -> str | None:
    """``SystemOneState`` on ``queues`` (every queue of one system)."""
    holders: dict[str, list[str]] = {}
    for q in queues:
        entries = _entries(q.snapshot())
        seen: set[str] = set()
        for id, state in entries:
            if id in seen:
                return f"SystemOneState: {id!r} is listed twice in {q.name!r}"
            seen.add(id)
            if _departure(q, id, state) is None:
                holders.setdefault(id, []).append(f"{q.name}:{state}")
    for id, where in holders.items():
        if len(where) > 1:
            return f"SystemOneState: {id!r} is held in {where}"
    return None


def nothing_lost(queues: Sequence[BaseQueue[Any]], accepted: Iterable[str] = ()) -> str | None:
    """``NothingLost`` on ``queues``; ``accepted``: ids the caller saw accepted."""
    listed = {q.name: dict(_entries(q.snapshot())) for q in queues}
    for q in queues:
        for id, state in listed[q.name].items():
            at, i, s, fuel = q, id, state, len(queues) * (len(listed[q.name]) + 1)
            while (where := _departure(at, i, s)) is not None:
                at, i = where
                fuel -= 1
                got = listed.get(at.name, {}).get(i)
                if got is None or fuel == 0:
                    return (
                        f"NothingLost: {id!r} left {q.name!r} and is nowhere: {at.name!r} does "
                        f"not have {i!r}"
                    )
                s = got
    present = {id for entries in listed.values() for id in entries}
    if lost := sorted(set(accepted) - present):
        return f"NothingLost: {lost} were accepted and are in no queue"
    return None
