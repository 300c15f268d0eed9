"""Breadth-first exploration of every reachable state of the spec, for small bounds.

This is the Python twin of what TLC does with ``tla/Queue.tla``: the same actions, the same
bounds, the same invariants checked on every state (and the step halves on every edge). The
TLA+ equivalence test compares the graph built here with TLC's ``-dump dot`` graph.

A node is ``(State, now)``: the queue's state and a discrete clock. The actions are the
operations of the registry (:mod:`spec.operations`), each run by its step onto the spec with the
arguments its enumerator (:data:`ENUMERATORS`) draws from the bounds; the labels that the graph's
edges carry are the TLA+ action names with their parameters:

  ``Send(i)``                  send a fresh id ``i`` from ``Bounds.ids`` (body = id)
  ``Receive(v)``               receive with visibility timeout ``v`` (``none``: never expires),
                               enabled while the head has fewer than ``max_attempt`` deliveries
  ``Delete(i)``                delete with ``i``'s live receipt
  ``Retry(i)``                 retry with ``i``'s live receipt
  ``ChangeVisibility(i,t)``    change ``i``'s visibility to ``t`` from now
  ``Cancel(i)``                cancel an active ``i``
  ``Expire``                   the sweeper runs and something is due
  ``Tick``                     the clock moves on by 1, up to ``max_time``

Only enabled actions make edges: a rejected call changes nothing, so it is no transition.
Receipts that are not live are never tried here, because the spec returns the state unchanged
for them (the property tests check that separately).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

from spec.invariants import step_violations, violations
from spec.operations import REGISTRY, Operation, Registry
from spec.state import Config, State, Status, initial

#: A node of the graph: the queue's state and the clock.
Node = tuple[State, int]
#: An edge: source node, label, target node.
Edge = tuple[Node, str, Node]


@dataclass(frozen=True)
class Bounds:
    """What makes the state space finite. Every field has a TLA+ constant of the same meaning."""

    ids: tuple[str, ...] = ("a", "b")
    capacity: int | None = 2
    max_receives: int | None = None
    #: Receive is enabled only while the head has had fewer than this many deliveries.
    max_attempt: int = 2
    #: Visibility timeouts a receive may ask for; ``None`` means never expires.
    visibility_timeouts: tuple[int | None, ...] = (1,)
    #: Timeouts ``change_visibility`` may set (0 releases at once). Empty: no such action.
    extend_timeouts: tuple[int, ...] = ()
    #: The clock runs 0, 1, ..., max_time.
    max_time: int = 2

    def __post_init__(self) -> None:
        if len(set(self.ids)) != len(self.ids) or not self.ids:
            raise ValueError(f"ids must be distinct and non-empty, got {self.ids!r}")
        if self.max_attempt < 1:
            raise ValueError(f"max_attempt must be >= 1, got {self.max_attempt}")
        if self.max_time < 0:
            raise ValueError(f"max_time must be >= 0, got {self.max_time}")
        Config(self.capacity, self.max_receives)  # validates both

    @property
    def config(self) -> Config:
        return Config(capacity=self.capacity, max_receives=self.max_receives)


def vt_label(vt: int | None) -> str:
    return "none" if vt is None else str(vt)


def action_label(action: str, params: tuple[object, ...] = ()) -> str:
    """An edge label: the TLA+ action and its parameters, ``Send(a)``, ``Receive(none)``,
    ``ChangeVisibility(a,2)``, ``Expire`` (``None`` is written ``none``)."""
    if not params:
        return action
    return f"{action}({','.join('none' if p is None else str(p) for p in params)})"


#: What an enumerator yields: the TLA+ action's parameters (for the label) and the model
#: arguments of the registry's operation (for its step).
Candidate = tuple[tuple[object, ...], tuple[object, ...]]
#: The arguments an operation is tried with in a node, drawn from the bounds.
Enumerator = Callable[[Bounds, State, int], Iterator[Candidate]]


def _send(bounds: Bounds, s: State, now: int) -> Iterator[Candidate]:
    for i in bounds.ids:  # body = id: TLA+ has no bodies
        yield (i,), (i, i)


def _receive(bounds: Bounds, s: State, now: int) -> Iterator[Candidate]:
    if s.visible:
        head = s.get(s.visible[0])
        assert head is not None
        if head.attempt < bounds.max_attempt:
            for vt in bounds.visibility_timeouts:
                yield (vt,), (vt,)


def _live_receipts(bounds: Bounds, s: State, now: int) -> Iterator[Candidate]:
    for m in s.messages:
        if m.status is Status.IN_FLIGHT:
            yield (m.id,), (m.id, m.attempt)


def _change_visibility(bounds: Bounds, s: State, now: int) -> Iterator[Candidate]:
    for (i,), (_, attempt) in _live_receipts(bounds, s, now):
        for t in bounds.extend_timeouts:
            yield (i, t), (i, attempt, t)


def _active(bounds: Bounds, s: State, now: int) -> Iterator[Candidate]:
    for m in s.messages:
        if m.status.active:
            yield (m.id,), (m.id,)


def _tick(bounds: Bounds, s: State, now: int) -> Iterator[Candidate]:
    if now < bounds.max_time:
        yield (), (1,)


def _once(bounds: Bounds, s: State, now: int) -> Iterator[Candidate]:
    yield (), ()


#: How each operation of the registry is tried, by name. An operation without arguments needs
#: no entry (it is tried once per node); one with arguments must have one here.
ENUMERATORS: Final[Mapping[str, Enumerator]] = {
    "send": _send,
    "receive": _receive,
    "delete": _live_receipts,
    "retry": _live_receipts,
    "change_visibility": _change_visibility,
    "cancel": _active,
    "advance": _tick,
}


def enumerator(op: Operation) -> Enumerator:
    """How the explorer tries ``op``; ``KeyError`` names an operation that has none."""
    if op.name in ENUMERATORS:
        return ENUMERATORS[op.name]
    if not op.args:
        return _once
    raise KeyError(f"spec/explore.py: ENUMERATORS has no entry for the operation {op.name!r}")


def action_labels(registry: Registry = REGISTRY) -> tuple[str, ...]:
    """The names the explorer's edges carry (before the parameters): the TLA+ actions."""
    return tuple(op.tla for op in registry)


def successors(
    bounds: Bounds, node: Node, registry: Registry = REGISTRY
) -> Iterator[tuple[str, Node]]:
    """Every enabled action from ``node``, with its label and the node it leads to.

    Each operation of ``registry`` is tried with the arguments its enumerator draws from the
    bounds, by its step onto the spec; a step whose result is a rejection is no edge.
    """
    s, now = node
    for op in registry:
        for params, args in enumerator(op)(bounds, s, now):
            s2, now2, result = op.step(s, now, args)
            if op.result.enabled(result):
                yield action_label(op.tla, params), (s2, int(now2))


@dataclass
class Graph:
    """The reachable graph: nodes numbered in BFS order, edges, and what the search found."""

    bounds: Bounds
    nodes: dict[Node, int] = field(default_factory=dict)
    edges: set[tuple[int, str, int]] = field(default_factory=set)
    depth: int = 0
    violations: list[str] = field(default_factory=list)
    #: The labels on the shortest path to the first violation, if any.
    trace: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def states(self) -> int:
        return len(self.nodes)

    def labelled_edges(self) -> set[Edge]:
        by_number = {n: node for node, n in self.nodes.items()}
        return {(by_number[a], lab, by_number[b]) for a, lab, b in self.edges}


def explore(
    bounds: Bounds, stop_at_first_violation: bool = True, registry: Registry = REGISTRY
) -> Graph:
    """Breadth-first search from the empty queue at time 0, checking every invariant.

    State invariants are checked on every node, step invariants on every edge. With
    ``stop_at_first_violation`` the search ends at the first failure and ``trace`` holds the
    labels of a shortest path to it. ``registry`` gives the actions (see :func:`successors`).
    """
    started = time.perf_counter()
    g = Graph(bounds)
    start: Node = (initial(bounds.config), 0)
    g.nodes[start] = 0
    parent: dict[int, tuple[int, str] | None] = {0: None}
    level = {0: 0}
    frontier: deque[Node] = deque([start])

    def path_to(n: int, last: str | None = None) -> list[str]:
        labels = [] if last is None else [last]
        while (p := parent[n]) is not None:
            n, lab = p
            labels.append(lab)
        return labels[::-1]

    bad = violations(start[0])
    if bad:
        g.violations, g.seconds = bad, time.perf_counter() - started
        return g
    while frontier:
        node = frontier.popleft()
        n = g.nodes[node]
        for label, nxt in successors(bounds, node, registry):
            reasons = step_violations(node[0], nxt[0])
            if nxt not in g.nodes:
                m = len(g.nodes)
                g.nodes[nxt] = m
                parent[m] = (n, label)
                level[m] = level[n] + 1
                g.depth = max(g.depth, level[m])
                reasons = reasons + violations(nxt[0])
                frontier.append(nxt)
            g.edges.add((n, label, g.nodes[nxt]))
            if reasons:
                g.violations.extend(reasons)
                if not g.trace:
                    g.trace = path_to(n, label)
                if stop_at_first_violation:
                    g.seconds = time.perf_counter() - started
                    return g
    g.seconds = time.perf_counter() - started
    return g
