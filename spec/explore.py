"""Breadth-first exploration of every reachable state of the spec, for small bounds.

This is the Python twin of what TLC does with ``tla/Queue.tla``: the same actions, the same
bounds, the same invariants checked on every state (and the step halves on every edge). The
TLA+ equivalence test compares the graph built here with TLC's ``-dump dot`` graph.

A node is ``(State, now)``: the queue's state and a discrete clock. The actions are the
operations of the registry (:mod:`spec.operations`), each run by its step onto the spec with the
arguments its enumerator (:data:`ENUMERATORS`) draws from the bounds; the labels that the graph's
edges carry are the TLA+ action names with their parameters:

  ``Send(i,d)``                send a fresh id ``i`` from ``Bounds.ids`` (body = id) with the
                               delay ``d`` from ``Bounds.delays`` (``Send(a,0)``: no delay)
  ``SendBatch(<<<<i,d>>,...>>)``  send_batch of 2..``batch`` entries ``<<i,d>>``: distinct
                               fresh ids in every order, each with every delay of ``delays``
  ``Receive(v)``               receive with visibility timeout ``v`` (``none``: never expires),
                               enabled while the head has fewer than ``max_attempt`` deliveries
  ``ReceiveBatch(n,v)``        receive_batch of ``n`` in 2..``batch`` with timeout ``v``,
                               enabled while something is visible and each of the first
                               ``min(n, visible)`` has fewer than ``max_attempt`` deliveries
  ``Delete(i)``                delete with ``i``'s live receipt
  ``DeleteBatch(<<i,j,...>>)`` delete_batch with the live receipts of 2..``batch`` distinct
                               in-flight ids, in every order
  ``Retry(i)``                 retry with ``i``'s live receipt
  ``ChangeVisibility(i,t)``    change ``i``'s visibility to ``t`` from now
  ``ChangeVisibilityBatch(<<<<i,t>>,...>>)``  change_visibility_batch of 2..``batch`` entries
                               ``<<i,t>>``: distinct in-flight ids in every order, each with
                               every ``t`` of ``extend_timeouts``, by their live receipts
  ``Cancel(i)``                cancel an active ``i``
  ``Purge``                    purge, enabled while some message is active
  ``Expire``                   the sweeper runs and something is due (a delay or a deadline)
  ``Tick``                     the clock moves on by 1, up to ``max_time``

On a FIFO queue (``Bounds.fifo``, the twin of ``tla/QueueFifo.tla``) a send takes no delay of its
own (the queue's is ``delays``' one value) and its group and dedup id are functions of the id
(``Bounds.groups``, ``Bounds.dedup``), so the send labels are QueueFifo's:

  ``Send(i)``                  send ``i`` (a duplicate is no edge: it changes nothing)
  ``SendBatch(<<i,j,...>>)``   send_batch of 2..``batch`` distinct ids in every order, no dedup
                               id twice; enabled when some entry is no duplicate and those
                               entries are accepted together

``Receive(v)`` and ``ReceiveBatch(n,v)`` take the deliverable messages (visible, in an unlocked
group) in QueueFifo's order; the other labels are Queue's.

The label format (:func:`action_label`): the action, then its parameters in parentheses,
separated by ``,`` without spaces; ``None`` is ``none``; a tuple parameter is a TLA+ sequence
``<<x,y>>`` (nested for pairs), so ``lastAction = <<"SendBatch", <<<<a, 0>>, <<b, 1>>>>>>`` in
``QueueGraph.tla`` is the label ``SendBatch(<<<<a,0>>,<<b,1>>>>)``. An action without
parameters has no parentheses. A batch of one entry is never tried (it is the single action's
edge under another name); with ``batch = 1`` (the default) there are no batch edges at all,
and with ``delays = (0,)`` (the default) no delayed sends, so the bound sets of earlier
versions have the same states. ``Purge`` is always tried: it reaches no state that cancels
cannot, so it adds edges but no states.

Only enabled actions make edges: a rejected call changes nothing, so it is no transition (a
batch whose every entry is rejected, too; a purge of nothing; a FIFO duplicate). A call whose
result says so but whose state changed all the same is an edge, so that the invariants see it.
Receipts that are not live are never tried here, because the spec returns the state unchanged
for them (the property tests check that separately).
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Final

from spec.invariants import BATCH_OPERATIONS, Reason, batch_atomic, step_violations, violations
from spec.operations import REGISTRY, Operation, Registry
from spec.state import DEDUP_INTERVAL, Config, State, Status, initial
from spec.transitions import MAX_BATCH, receive_batch

#: A node of the graph: the queue's state and the clock.
Node = tuple[State, int]
#: An edge: source node, label, target node.
Edge = tuple[Node, str, Node]


@dataclass(frozen=True, repr=False)
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
    #: The largest batch explored; batch actions take 2..batch entries. 1: no batch actions.
    batch: int = 1
    #: The delays a send (or a batch entry) may ask for; 0 is an immediate send. On a FIFO
    #: queue exactly one, the queue's delay (TLA+ ``QueueDelay``): a send takes none of its own.
    delays: tuple[int, ...] = (0,)
    #: A FIFO queue (contract section 2b; TLA+ ``QueueFifo.tla``).
    fifo: bool = False
    #: FIFO: the message groups, a partition of ``ids`` (TLA+ ``Groups``); empty: one group of
    #: every id. A group's name is its ids joined by ``_`` (:meth:`group_of`).
    groups: tuple[tuple[str, ...], ...] = ()
    #: FIFO: the sets of ids sent with one dedup id (TLA+ ``DedupSets``): ``(("a", "b"),)``
    #: makes ``b`` a producer's retry of ``a`` (a fresh id, the same dedup id). An id in no
    #: set is sent without a dedup id. The dedup id's name is its ids joined by ``_``.
    dedup: tuple[tuple[str, ...], ...] = ()
    #: FIFO: the dedup window, in clock units (TLA+ ``DedupInterval``).
    dedup_interval: int = int(DEDUP_INTERVAL)

    def __post_init__(self) -> None:
        if len(set(self.ids)) != len(self.ids) or not self.ids:
            raise ValueError(f"ids must be distinct and non-empty, got {self.ids!r}")
        if self.max_attempt < 1:
            raise ValueError(f"max_attempt must be >= 1, got {self.max_attempt}")
        if self.max_time < 0:
            raise ValueError(f"max_time must be >= 0, got {self.max_time}")
        if not 1 <= self.batch <= MAX_BATCH:
            raise ValueError(f"batch must be in 1..{MAX_BATCH}, got {self.batch}")
        if not self.delays or len(set(self.delays)) != len(self.delays):
            raise ValueError(f"delays must be distinct and non-empty, got {self.delays!r}")
        if any(d < 0 for d in self.delays):
            raise ValueError(f"delays must be >= 0, got {self.delays!r}")
        Config(self.capacity, self.max_receives)  # validates both
        if not self.fifo:
            if self.groups or self.dedup:
                raise ValueError("groups and dedup are bounds of FIFO queues (fifo=True)")
            return
        if len(self.delays) != 1:
            raise ValueError(f"a FIFO queue has one delay, the queue's, got {self.delays!r}")
        grouped = [i for g in self.groups for i in g]
        if self.groups and sorted(grouped) != sorted(self.ids):
            raise ValueError(f"groups must partition the ids {self.ids!r}, got {self.groups!r}")
        listed = [i for d in self.dedup for i in d]
        if len(set(listed)) != len(listed) or not set(listed) <= set(self.ids):
            raise ValueError(f"dedup must be disjoint sets of ids, got {self.dedup!r}")
        if any(not d for d in self.dedup) or any(not g for g in self.groups):
            raise ValueError("a group or a dedup set must not be empty")
        Config(fifo=True, dedup_interval=self.dedup_interval)  # validates the interval

    def __repr__(self) -> str:
        # The FIFO fields only on FIFO bounds, so the standard bounds print (and the generated
        # diagrams that show them) as they did before FIFO queues.
        skip = () if self.fifo else ("fifo", "groups", "dedup", "dedup_interval")
        shown = (f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.name not in skip)
        return f"Bounds({', '.join(shown)})"

    @property
    def config(self) -> Config:
        if not self.fifo:
            return Config(capacity=self.capacity, max_receives=self.max_receives)
        return Config(
            capacity=self.capacity,
            max_receives=self.max_receives,
            delay=self.delays[0],
            fifo=True,
            dedup_interval=self.dedup_interval,
        )

    def group_of(self, id: str) -> str:
        """FIFO: the group ``id`` is sent in (TLA+ ``Group[i]``), named by its ids."""
        for g in self.groups:
            if id in g:
                return "_".join(g)
        return "_".join(self.ids)

    def dedup_of(self, id: str) -> str | None:
        """FIFO: the dedup id ``id`` is sent with (TLA+ ``DedupId[i]``), or ``None``."""
        for d in self.dedup:
            if id in d:
                return "_".join(d)
        return None


def vt_label(vt: int | None) -> str:
    return "none" if vt is None else str(vt)


def _param(p: object) -> str:
    if p is None:
        return "none"
    if isinstance(p, tuple):
        return f"<<{','.join(map(_param, p))}>>"
    return str(p)


def action_label(action: str, params: tuple[object, ...] = ()) -> str:
    """An edge label: the TLA+ action and its parameters, ``Send(a,0)``, ``Receive(none)``,
    ``ChangeVisibility(a,2)``, ``DeleteBatch(<<a,b>>)``, ``Expire`` (``None`` is written
    ``none``, a tuple as the TLA+ sequence ``<<x,y>>``, recursively)."""
    if not params:
        return action
    return f"{action}({','.join(map(_param, params))})"


#: What an enumerator yields: the TLA+ action's parameters (for the label) and the model
#: arguments of the registry's operation (for its step).
Candidate = tuple[tuple[object, ...], tuple[object, ...]]
#: The arguments an operation is tried with in a node, drawn from the bounds.
Enumerator = Callable[[Bounds, State, int], Iterator[Candidate]]


def _sizes(bounds: Bounds) -> range:
    """The batch sizes tried: 2..batch (a batch of one is the single action's edge)."""
    return range(2, bounds.batch + 1)


def _send(bounds: Bounds, s: State, now: int) -> Iterator[Candidate]:
    if bounds.fifo:  # QueueFifo's Send(i): the group and dedup id are functions of the id
        for i in bounds.ids:
            yield (i,), (i, i, None, bounds.group_of(i), bounds.dedup_of(i))
        return
    for i in bounds.ids:  # body = id: TLA+ has no bodies
        for d in bounds.delays:
            yield (i, d), (i, i, d)


def _send_batch(bounds: Bounds, s: State, now: int) -> Iterator[Candidate]:
    if bounds.fifo:
        # QueueFifo's SendBatch(b): any distinct ids (a used one may be a duplicate, which is
        # checked first), no dedup id twice (an invalid batch).
        for k in _sizes(bounds):
            for ids in itertools.permutations(bounds.ids, k):
                dedups = [d for i in ids if (d := bounds.dedup_of(i)) is not None]
                if len(set(dedups)) == len(dedups):
                    entries = tuple(
                        (i, i, None, bounds.group_of(i), bounds.dedup_of(i)) for i in ids
                    )
                    yield (ids,), (entries,)
        return
    fresh = [i for i in bounds.ids if s.get(i) is None]  # a used id only gets the batch refused
    for k in _sizes(bounds):
        for ids in itertools.permutations(fresh, k):
            for ds in itertools.product(bounds.delays, repeat=k):
                yield (
                    (tuple(zip(ids, ds, strict=True)),),
                    (tuple((i, i, d) for i, d in zip(ids, ds, strict=True)),),
                )


def _receive(bounds: Bounds, s: State, now: int) -> Iterator[Candidate]:
    # The head the spec takes: on a FIFO queue the first deliverable message. With every
    # visible message locked the receive is tried on the visible head all the same (the spec
    # refuses it, no edge) so that a receive which ignores the lock is caught.
    deliverable = s.deliverable() or s.visible
    if deliverable:
        head = s.get(deliverable[0])
        assert head is not None
        if head.attempt < bounds.max_attempt:
            for vt in bounds.visibility_timeouts:
                yield (vt,), (vt,)


def _receive_batch(bounds: Bounds, s: State, now: int) -> Iterator[Candidate]:
    for n in _sizes(bounds):
        if bounds.fifo:  # the batch's order (QueueFifo's BatchOrder): as receive_batch takes
            taken = [s.get(d.id) for d in receive_batch(s, now, n, None)[1]]
        else:
            taken = [s.get(i) for i in s.visible[:n]]
        if taken and all(m is not None and m.attempt < bounds.max_attempt for m in taken):
            for vt in bounds.visibility_timeouts:
                yield (n, vt), (n, vt)


def _live_receipts(bounds: Bounds, s: State, now: int) -> Iterator[Candidate]:
    for m in s.messages:
        if m.status is Status.IN_FLIGHT:
            yield (m.id,), (m.id, m.attempt)


def _delete_batch(bounds: Bounds, s: State, now: int) -> Iterator[Candidate]:
    live = {m.id: m.attempt for m in s.messages if m.status is Status.IN_FLIGHT}
    for k in _sizes(bounds):
        for ids in itertools.permutations(live, k):
            yield (ids,), (tuple((i, live[i]) for i in ids),)


def _change_visibility(bounds: Bounds, s: State, now: int) -> Iterator[Candidate]:
    for (i,), (_, attempt) in _live_receipts(bounds, s, now):
        for t in bounds.extend_timeouts:
            yield (i, t), (i, attempt, t)


def _change_visibility_batch(bounds: Bounds, s: State, now: int) -> Iterator[Candidate]:
    live = {m.id: m.attempt for m in s.messages if m.status is Status.IN_FLIGHT}
    for k in _sizes(bounds):
        for ids in itertools.permutations(live, k):
            for ts in itertools.product(bounds.extend_timeouts, repeat=k):
                yield (
                    (tuple(zip(ids, ts, strict=True)),),
                    (tuple((i, live[i], t) for i, t in zip(ids, ts, strict=True)),),
                )


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
    "send_batch": _send_batch,
    "receive": _receive,
    "receive_batch": _receive_batch,
    "delete": _live_receipts,
    "delete_batch": _delete_batch,
    "retry": _live_receipts,
    "change_visibility": _change_visibility,
    "change_visibility_batch": _change_visibility_batch,
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
    for label, nxt, _ in _steps(bounds, node, registry):
        yield label, nxt


def _steps(
    bounds: Bounds, node: Node, registry: Registry
) -> Iterator[tuple[str, Node, Callable[[], Reason]]]:
    """:func:`successors`, each with a check of ``BatchAtomic`` for that step (run on demand:
    it replays the batch)."""
    s, now = node
    for op in registry:
        for params, args in enumerator(op)(bounds, s, now):
            s2, now2, result = op.step(s, now, args)
            # A call whose result says it did nothing (a rejection, a FIFO duplicate) but
            # that changed the state anyway is an edge too, for the invariants to judge: the
            # spec has none, a broken transition (a duplicate that moves its dedup window, a
            # rejected send that records its dedup id) does.
            if op.result.enabled(result) or (s2 is not s and s2 != s):

                def atomic(op: Operation = op, args: tuple[object, ...] = args) -> Reason:
                    if op.function is None or op.name not in BATCH_OPERATIONS:
                        return None
                    kwargs = op.arguments(s, now, args)
                    after, result = op.function(s, **kwargs)  # the spec's result, not the model's
                    return batch_atomic(s, op.name, kwargs, after, result)

                yield action_label(op.tla, params), (s2, int(now2)), atomic


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
        for label, nxt, atomic in _steps(bounds, node, registry):
            reasons = step_violations(node[0], nxt[0], node[1])
            if (r := atomic()) is not None:
                reasons = [*reasons, r]
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
