"""Breadth-first exploration of every reachable state of a small system of queues.

The twin of :mod:`spec.explore` for :mod:`spec.system`, and of what TLC does with
``tla/QueueSystem.tla``: the same actions under the same names, with the same bounds
(``tla/QueueSystem.cfg``: a source, capacity 2, dead-lettering after one delivery, into a
dead-letter queue, unbounded, retention 1), checking every invariant of the system
(:func:`spec.system_invariants.system_violations`) on every state and the step halves on every
edge. A node is ``(System, now)``. The labels are QueueSystem.tla's actions, the queue first:

  ``Send(q,i,d)``       send the fresh id ``i`` (body = id) with delay ``d`` to a queue of
                        ``send_to``
  ``Receive(q,v)``      receive from ``q`` with timeout ``v``, while the head's attempt (its
                        life count) is below ``max_attempt``
  ``Delete(q,i)``, ``Retry(q,i)``, ``ChangeVisibility(q,i,x)``  with ``i``'s live receipt
  ``Cancel(q,i)``       cancel the active ``i``
  ``Expire(q)``         ``q``'s sweep, when something of ``q`` is due
  ``Redrive(q,i,d)``    one redrive move (:func:`spec.system.redrive_step`) of the visible
                        ``i`` of a dead-letter queue ``q`` to another queue ``d`` with room,
                        while fewer than ``redrives`` moves were made (TLA+ ``RedriveIds``)
  ``Tick``              the clock moves on by 1, up to ``max_time``

Queues are named by their creation number (``1`` the dead-letter queue, ``2`` its source), as
QueueSystem.tla numbers them. The redrive *task* (scope, rate) is not explored: as in
QueueSystem.tla, any visible message of a dead-letter queue may be redriven at any time, which
includes every order a task takes. ``python -m spec.system_explore`` prints the count.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from spec import system as sy
from spec.state import Config, Receipt, Status
from spec.system_invariants import system_step_violations, system_violations

#: A node: the system and the clock.
SystemNode = tuple[sy.System, int]


@dataclass(frozen=True)
class SystemBounds:
    """The bounds, QueueSystem.cfg's constants by default."""

    ids: tuple[str, ...] = ("a", "b")
    #: The queues producers send to, by name.
    send_to: tuple[str, ...] = ("2",)
    #: How many redrive moves the search makes at most (TLA+: the size of ``RedriveIds``).
    redrives: int = 1
    max_attempt: int = 2
    visibility_timeouts: tuple[int | None, ...] = (1,)
    extend_timeouts: tuple[int, ...] = ()
    delays: tuple[int, ...] = (0,)
    max_time: int = 1
    source_capacity: int | None = 2
    source_max_receives: int = 1
    dlq_retention: int | None = 1

    def system(self) -> sy.System:
        """The empty system: queue ``1``, the dead-letter queue; queue ``2``, its source."""
        return sy.build(
            ("1", Config(retention=self.dlq_retention)),
            (
                "2",
                Config(capacity=self.source_capacity, max_receives=self.source_max_receives),
                "1",
            ),
        )


def _label(action: str, *params: object) -> str:
    shown = ["none" if p is None else str(p) for p in params]
    return f"{action}({','.join(shown)})" if shown else action


def successors(bounds: SystemBounds, node: SystemNode) -> Iterator[tuple[str, SystemNode]]:
    """Every enabled action from ``node``, with its label and the node it leads to."""
    system, now = node
    dlqs = {m.dead_letter for m in system.queues if m.dead_letter is not None}
    for q in system.names():
        s = system.state(q)
        if q in bounds.send_to:
            for i in bounds.ids:
                for d in bounds.delays:
                    after, ok = sy.send(system, q, i, i, d, now)
                    if ok is True:
                        yield _label("Send", q, i, d), (after, now)
        if s.visible:
            head = s.get(s.visible[0])
            assert head is not None
            if head.attempt < bounds.max_attempt:
                for v in bounds.visibility_timeouts:
                    after, _ = sy.receive(system, q, now, v)
                    yield _label("Receive", q, v), (after, now)
        for m in s.messages:
            if m.status is Status.IN_FLIGHT:
                r = Receipt(s.queue, m.id, m.attempt)
                yield _label("Delete", q, m.id), (sy.delete(system, q, r)[0], now)
                yield _label("Retry", q, m.id), (sy.retry(system, q, r, now)[0], now)
                for x in bounds.extend_timeouts:
                    after, _ = sy.change_visibility(system, q, r, x, now)
                    yield _label("ChangeVisibility", q, m.id, x), (after, now)
            if m.status.active:
                yield _label("Cancel", q, m.id), (sy.cancel(system, q, m.id)[0], now)
        after, fired = sy.expire(system, q, now)
        if fired:
            yield _label("Expire", q), (after, now)
        if q in dlqs and len(system.redriven) < bounds.redrives:
            for i in s.visible:
                for dest in system.names():
                    after, new = sy.redrive_step(system, q, i, dest, now)
                    if new is not None:
                        yield _label("Redrive", q, i, dest), (after, now)
    if now < bounds.max_time:
        yield "Tick", (system, now + 1)


@dataclass
class SystemGraph:
    """The reachable graph: nodes numbered in BFS order, labelled edges, what was found."""

    bounds: SystemBounds
    nodes: dict[SystemNode, int] = field(default_factory=dict)
    edges: set[tuple[int, str, int]] = field(default_factory=set)
    violations: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def states(self) -> int:
        return len(self.nodes)


def explore_system(bounds: SystemBounds | None = None) -> SystemGraph:
    """Breadth-first search from the empty system at time 0; every state invariant on every
    node, every step half on every edge; every violation is collected."""
    bounds = bounds if bounds is not None else SystemBounds()
    started = time.perf_counter()
    g = SystemGraph(bounds)
    start: SystemNode = (bounds.system(), 0)
    g.nodes[start] = 0
    g.violations += system_violations(start[0])
    frontier: deque[SystemNode] = deque([start])
    while frontier:
        node = frontier.popleft()
        n = g.nodes[node]
        for label, nxt in successors(bounds, node):
            g.violations += [
                f"{label}: {r}" for r in system_step_violations(node[0], nxt[0], node[1])
            ]
            if nxt not in g.nodes:
                g.nodes[nxt] = len(g.nodes)
                g.violations += [f"after {label}: {r}" for r in system_violations(nxt[0])]
                frontier.append(nxt)
            g.edges.add((n, label, g.nodes[nxt]))
    g.seconds = time.perf_counter() - started
    return g


if __name__ == "__main__":
    graph = explore_system()
    print(
        f"{graph.states} states, {len(graph.edges)} edges, {len(graph.violations)} violations "
        f"({graph.seconds:.1f} s) at {graph.bounds}"
    )
