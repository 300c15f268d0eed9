"""The same machine checked both ways: TLC's state graph of ``QueueGraph.tla`` vs ``spec.explore``.

For a :class:`spec.explore.Bounds`, :func:`tlc_graph` writes the matching TLC config, runs TLC
with ``-dump dot`` on ``tla/QueueGraph.tla`` (Queue plus a history variable ``lastAction``) and
reads the complete state graph back. :func:`differences` then compares it with the graph that
``spec.explore.explore`` builds from ``spec/transitions.py``.

The mapping, TLA+ state -> explorer node ``(State, now)`` (the state by
:func:`tla.counterexample.to_spec_state`):

  ``msgs``        -> ``State.messages``: one ``Msg(id, body=id, status, attempt, deadline)``
                     per accepted id (the explorer sends body = id; TLA+ has no bodies), with
                     the model value ``None`` as Python's ``None``; sorted by id
  ``visible``, ``inFlight``, ``dead`` -> ``State.visible``, ``in_flight``, ``dead``
  ``now``         -> the node's clock
  ``lastAction``  -> dropped from the node; it is the *label* of every edge into the state:
                     ``<<"Send", a>>`` -> ``Send(a)``, ``<<"Receive", None>>`` ->
                     ``Receive(none)``, ``<<"ChangeVisibility", a, 2>>`` ->
                     ``ChangeVisibility(a,2)``, ``<<"Expire">>`` -> ``Expire``; the names
                     are the registry's TLA+ actions (:mod:`spec.operations`)

FIFO bounds (``Bounds.fifo``) run ``tla/QueueFifoGraph.tla`` (``QueueFifo`` with ``lastAction``)
with the constants ``Groups``, ``DedupSets`` and ``DedupInterval`` from ``Bounds.groups``,
``dedup`` and ``dedup_interval``; their states map as above, and further:

  ``sent``        -> each message's ``Msg.sent``: its place in ``sent``, 0 first
  (the constants) -> each message's ``group`` and ``dedup_id``: ``Bounds.group_of(id)``,
                     ``Bounds.dedup_of(id)`` (a group or dedup id is named by its ids)
  ``dedup``       -> ``State.dedup``: ``(dedup_of(id), id, at)`` per record, sorted

So one explorer node is several TLC states (one per label that can lead to it), and a TLC edge
``s -> t`` is the explorer edge ``(node(s), label(t), node(t))``. What is compared:

  1. the initial states: exactly the explorer's start node, with ``lastAction = <<"Init">>``;
  2. the node sets, after the mapping: equal;
  3. the edges: every TLC state has exactly the explorer's successors of its node (so every
     copy of a node is checked, not just one), and the edge sets are equal.

What TLC's dump contains and how it is treated: edges are labelled with an action's *name* only,
and for actions that TLC splits (an ``IF`` inside, or an argument that is an expression) with
the name of the enclosing operator, ``Next``; the label is therefore only cross-checked, never
trusted for parameters. A step that changes nothing but ``lastAction`` is a real step of the
model (``ChangeVisibility(a,2)`` to the deadline it already has is a self-loop in the explorer,
too). TLC writes such self-loops; edges are compared as sets. TLC adds no stuttering edges
of its own to the dump; a deadlocked state is just a node without successors, as in the
explorer (the run uses ``-deadlock``, since the bounds always end in such states).
"""

from __future__ import annotations

import re
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from spec.explore import Bounds, Graph, Node, action_label, action_labels
from spec.operations import REGISTRY, Registry
from spec.state import State, initial
from tla.counterexample import now, read_state, to_spec_state
from tla.models import TLA_DIR
from tla.tlc import Result, run_tlc
from tla.values import ModelValue, Record, Value

GRAPH_MODULE = TLA_DIR / "QueueGraph.tla"
#: The graph module of FIFO bounds (``Bounds.fifo``): ``QueueFifo`` with ``lastAction``.
FIFO_GRAPH_MODULE = TLA_DIR / "QueueFifoGraph.tla"

_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_RESERVED = {"None", "TRUE", "FALSE", "NoReceipt"}


def _const(value: int | str | None) -> str:
    return "None" if value is None else str(value)


def bounds_cfg(bounds: Bounds) -> str:
    """The TLC config of ``QueueGraph.tla`` (and of ``Queue.tla``) for these bounds.

    Ids become model values of the same name, so they must be TLA+ identifiers.
    """
    for i in bounds.ids:
        if not _IDENT.fullmatch(i) or i in _RESERVED:
            raise ValueError(f"ids must be TLA+ identifiers other than {_RESERVED}, got {i!r}")

    def setof(xs: Iterable[int | str | None]) -> str:
        return "{" + ", ".join(_const(x) for x in xs) + "}"

    def sets(parts: Iterable[Iterable[str]]) -> str:
        return "{" + ", ".join(setof(p) for p in parts) + "}"

    fifo = (
        [
            f"    Groups = {sets(bounds.groups or (bounds.ids,))}",
            f"    DedupSets = {sets(bounds.dedup)}",
            f"    DedupInterval = {bounds.dedup_interval}",
        ]
        if bounds.fifo
        else []
    )
    return "\n".join(
        [
            f"\\* generated by tla.graph.bounds_cfg from {bounds}",
            "CONSTANTS",
            f"    Ids = {setof(bounds.ids)}",
            f"    Capacity = {_const(bounds.capacity)}",
            f"    MaxReceives = {_const(bounds.max_receives)}",
            f"    MaxAttempt = {bounds.max_attempt}",
            f"    VisibilityTimeouts = {setof(bounds.visibility_timeouts)}",
            f"    ExtendTimeouts = {setof(bounds.extend_timeouts)}",
            f"    MaxTime = {bounds.max_time}",
            f"    Delays = {setof(bounds.delays)}",
            f"    MaxBatch = {bounds.batch}",
            *fifo,
            "    None = None",
            "SPECIFICATION Spec",
            "",
        ]
    )


# -- reading the dot file ---------------------------------------------------------------------

_NODE = re.compile(r'^(-?\d+) \[label="((?:[^"\\]|\\.)*)"(,style = filled)?\]')
_EDGE = re.compile(r'^(-?\d+) -> (-?\d+) \[label="((?:[^"\\]|\\.)*)"')


def _undot(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


@dataclass
class DotGraph:
    """TLC's ``-dump dot`` file: states by fingerprint, the initial ones, the edges."""

    states: dict[str, dict[str, Value]] = field(default_factory=dict)
    initial: set[str] = field(default_factory=set)
    #: (from fingerprint, TLC's action label, to fingerprint), as listed (may repeat).
    edges: list[tuple[str, str, str]] = field(default_factory=list)


def parse_dot(text: str) -> DotGraph:
    """Read a TLC 2.15 ``-dump dot`` file (with or without ``actionlabels``)."""
    g = DotGraph()
    for line in text.splitlines():
        if m := _EDGE.match(line):
            g.edges.append((m.group(1), _undot(m.group(3)), m.group(2)))
        elif m := _NODE.match(line):
            g.states[m.group(1)] = read_state(_undot(m.group(2)))
            if m.group(3):
                g.initial.add(m.group(1))
    for a, _, b in g.edges:
        for fp in (a, b):
            if fp not in g.states:
                raise ValueError(f"edge names state {fp}, which the dot file does not define")
    return g


# -- the mapping ------------------------------------------------------------------------------


def to_node(bounds: Bounds, state: dict[str, Value]) -> Node:
    """The explorer node of a TLC state (``lastAction`` is ignored); see the module docstring."""
    s = to_spec_state(state, bounds.config)
    return (_fifo_state(bounds, state, s) if bounds.fifo else s), now(state)


def _fifo_state(bounds: Bounds, state: dict[str, Value], s: State) -> State:
    """A state of ``QueueFifo.tla`` as the explorer's: each message's group and dedup id are
    those of its id (``Bounds.group_of``, ``dedup_of``), its ``sent`` is its place in ``sent``
    (0 first); each record ``[dd, id, at]`` of ``dedup`` is ``(dedup_of(id), id, at)``,
    sorted by dedup id."""
    sent = state["sent"]
    if not isinstance(sent, tuple) or not all(isinstance(i, ModelValue) for i in sent):
        raise ValueError(f"sent is not a sequence of ids: {sent!r}")
    order = {str(i): k for k, i in enumerate(sent)}
    msgs = tuple(
        replace(m, group=bounds.group_of(m.id), sent=order[m.id], dedup_id=bounds.dedup_of(m.id))
        for m in s.messages
    )
    raw = state["dedup"]
    if not isinstance(raw, frozenset | tuple):
        raise ValueError(f"dedup is not a set of records: {raw!r}")
    records = []
    for r in raw:
        if not isinstance(r, Record) or not isinstance(r["at"], int):
            raise ValueError(f"not a dedup record: {r!r}")
        if not isinstance(r["id"], ModelValue):
            raise ValueError(f"not a dedup record: {r!r}")
        i = r["id"].name
        dd = bounds.dedup_of(i)
        if dd is None:
            raise ValueError(f"a dedup record of {i}, which has no dedup id: {r!r}")
        records.append((dd, i, r["at"]))
    return replace(s, messages=msgs, dedup=tuple(sorted(records)))


def graph_actions(registry: Registry = REGISTRY) -> tuple[str, ...]:
    """The names ``lastAction`` may carry: ``Init``, then the registry's TLA+ actions (each
    defined in ``QueueGraph.tla`` as Queue's action plus its label)."""
    return ("Init", *action_labels(registry))


def label(last: Value, registry: Registry = REGISTRY) -> str:
    """The explorer's edge label for a ``lastAction`` value: ``<<"Send", a>>`` -> ``Send(a)``.

    ``ValueError`` for a name that is not one of :func:`graph_actions`.
    """
    if not isinstance(last, tuple) or not last or not isinstance(last[0], str):
        raise ValueError(f"lastAction is not <<name, args...>>: {last!r}")
    name, args = last[0], last[1:]
    if name not in graph_actions(registry):
        raise ValueError(f"lastAction names {name!r}, no action of the registry")
    return action_label(name, tuple(_param(a) for a in args))


def _param(v: Value) -> object:
    """A ``lastAction`` parameter as the explorer's: ``None`` the model value -> ``None``, an
    id (model value) -> its name, a sequence -> a tuple of those (a batch's entries)."""
    if v == ModelValue("None"):
        return None
    if isinstance(v, ModelValue):
        return v.name
    if isinstance(v, tuple):
        return tuple(_param(x) for x in v)
    return v


# -- running TLC and comparing ----------------------------------------------------------------


@dataclass
class TlcGraph:
    """TLC's graph for some bounds, with the run's result."""

    dot: DotGraph
    result: Result


def tlc_graph(bounds: Bounds, workdir: Path | None = None) -> TlcGraph:
    """Run TLC on ``QueueGraph.tla`` with ``bounds`` and read the complete state graph it dumps.

    Raises ``RuntimeError`` with TLC's output when TLC does not finish without error.
    """
    with tempfile.TemporaryDirectory(prefix="tla-graph-") as tmp:
        where = Path(workdir or tmp)
        module = FIFO_GRAPH_MODULE if bounds.fifo else GRAPH_MODULE
        cfg = where / f"{module.stem}.cfg"
        cfg.write_text(bounds_cfg(bounds))
        dot = where / "graph.dot"
        result = run_tlc(
            module, cfg, check_deadlock=False, extra=["-dump", "dot,actionlabels", str(dot)]
        )
        if result.outcome != "ok":
            raise RuntimeError(f"TLC: {result.summary}\n" + "\n".join(result.output))
        return TlcGraph(parse_dot(dot.read_text()), result)


def _show(node: Node) -> str:
    s, now = node
    msgs = ", ".join(
        f"{m.id}:{m.status.value}/{m.attempt}" + ("" if m.deadline is None else f"@{m.deadline:g}")
        for m in s.messages
    )
    return (
        f"now={now} msgs=[{msgs}] visible={list(s.visible)} in_flight={list(s.in_flight)} "
        f"dead={list(s.dead)}"
    )


def differences(graph: Graph, tlc: DotGraph, limit: int = 5) -> list[str]:
    """How TLC's graph differs from the explorer's (first ``limit`` differences; [] = same).

    ``graph`` must be a complete exploration (``explore(..., stop_at_first_violation=False)``
    or one without violations).
    """
    bounds = graph.bounds
    out: list[str] = []
    node_of = {fp: to_node(bounds, st) for fp, st in tlc.states.items()}
    last_of = {fp: label(st["lastAction"]) for fp, st in tlc.states.items()}

    start: Node = (initial(bounds.config), 0)
    init_nodes = {node_of[fp] for fp in tlc.initial}
    if init_nodes != {start} or any(last_of[fp] != "Init" for fp in tlc.initial):
        out.append(f"initial states differ: TLC {sorted(map(_show, init_nodes))}")

    py_nodes = set(graph.nodes)
    tlc_nodes = set(node_of.values())
    for n in sorted(py_nodes - tlc_nodes, key=graph.nodes.__getitem__)[:limit]:
        out.append(f"state only in the explorer: {_show(n)}")
    for n in sorted(tlc_nodes - py_nodes, key=_show)[:limit]:
        out.append(f"state only in TLC: {_show(n)}")

    py_succ: dict[Node, set[tuple[str, Node]]] = defaultdict(set)
    for src, lab, dst in graph.labelled_edges():
        py_succ[src].add((lab, dst))
    tlc_succ: dict[str, set[tuple[str, Node]]] = defaultdict(set)
    for a, dot_label, b in tlc.edges:
        lab = last_of[b]
        if dot_label not in ("Next", lab.partition("(")[0]):
            out.append(f"TLC labels the step {lab} as {dot_label!r}")
        tlc_succ[a].add((lab, node_of[b]))
    # TLC states in the explorer's breadth-first order, so the first difference is reported.
    bfs = {fp: graph.nodes.get(node_of[fp], len(graph.nodes)) for fp in tlc.states}
    for fp in sorted(tlc.states, key=lambda f: (bfs[f], f)):
        want = py_succ.get(node_of[fp], set())
        got = tlc_succ.get(fp, set())
        if got != want:
            for lab, nxt in sorted(want - got, key=lambda e: e[0])[:1]:
                out.append(
                    f"edge only in the explorer: {_show(node_of[fp])} --{lab}--> {_show(nxt)}"
                )
            for lab, nxt in sorted(got - want, key=lambda e: e[0])[:1]:
                out.append(f"edge only in TLC: {_show(node_of[fp])} --{lab}--> {_show(nxt)}")
        if len(out) >= limit:
            break

    py_edges = graph.labelled_edges()
    tlc_edges = {(node_of[a], last_of[b], node_of[b]) for a, _, b in tlc.edges}
    if not out and py_edges != tlc_edges:
        out.append(
            f"edge sets differ: {len(py_edges - tlc_edges)} only in the explorer, "
            f"{len(tlc_edges - py_edges)} only in TLC"
        )
    return out[:limit]
