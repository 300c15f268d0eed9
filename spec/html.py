"""The state explorer in the browser: one self-contained HTML page from the spec's state graph.

``python -m spec explore --html out.html`` (and ``python -m tools.diagrams``, which writes
``docs/explorer.html``) calls :func:`page`. The page needs no network and no server: its CSS, its
script and its data are inline, and it opens from a ``file://`` URL. What it holds:

- every reachable state of :func:`spec.explore.explore` at the given bounds (one or more graphs,
  e.g. a standard queue and a FIFO one), each drawn as the queue a learner pictures: the clock,
  the visible FIFO, the in-flight messages with their deadlines and attempts, the delayed ones,
  the terminal sets (done, cancelled, dead) and, on a FIFO queue, the locked groups and the
  dedup records;
- every enabled action of a state as a button, labelled with the registry's name and its model
  arguments (``receive(vt=1)``, ``delete(a,1)``; the TLA+ label, ``Receive(1)``, is its
  tooltip), so the page's vocabulary is the Python API's;
- the status of each contract invariant in each state, and of the step halves (and, on batch
  steps, ``BatchAtomic``) on the edge that led there, computed HERE in Python by
  :mod:`spec.invariants` (the page's script only shows them: it never re-implements the spec);
- what a newcomer needs to read it: a one-line meaning of each invariant (:data:`MEANINGS`),
  the bounds as a table with the meaning of each (:func:`bound_rows`, :data:`BOUND_MEANINGS`),
  and a guide on the first screen, the path to a duplicate delivery (:func:`tour`: send,
  receive, the clock to the deadline, expire, receive again), each step a link to its state;
- TLC's counterexamples (:class:`Counterexample`, read from saved traces by
  :func:`tla.explorer.load_trace`: the TLA+ layer reads TLC's output, this one only draws it),
  steppable. A trace whose every state is a queue state of one of the graphs is *linked*: each
  of its states is matched to a node of that graph (:func:`link`), so stepping it moves the
  explorer, and the variables TLC has beyond the queue (the consumers' ``held`` receipts,
  ``finished``) are shown under it. A trace of another kind of model (the threaded ones, with
  threads, a lock and condition variables) is shown as the list of TLC's states, clearly
  labelled as not on the spec's graph. The script writes TLC's values in the page's notation
  (``(c1 :> <<a, 1>> @@ c2 :> NoReceipt)`` is ``c1 → (a, 1), c2 → none``; docs/explorer.md has
  the rules), TLC's own text as each value's tooltip.

The layout keeps the state in view: the queue's state (and a trace's variables) is a sticky left
column, the counterexample's player heads the right one, and nothing is wider than a window of
1,000 px or more; every text has a contrast of at least 4.5:1 (``tests/test_explorer_browser.py``
measures all three in Chromium).

The state is shareable: the page writes ``#state=<graph>:<node>`` into the URL, with the history
that led there (``&from=<node>&path=<label>/<label>/...&at=<position>``), and restores it on
load; ``#state=<graph>:<label>/<label>/...`` walks a path of action labels (the page's or the
TLA+ ones) from the empty queue; ``#cex=<key>&step=<n>`` opens a counterexample at a step.

The page's skeleton is three asset files beside this module, shipped with ``spec`` as package
data: ``spec/explorer/explorer.html`` (the template), ``explorer.css`` and ``explorer.js``
(:func:`asset`); :func:`page` fills the template with them and the data, so the page stays one
file. This module is stdlib-only, imports nothing outside ``spec`` and reads no clock, so the
page is a pure function of the bounds, the registry and the traces (``tests/test_diagrams.py``
keeps ``docs/explorer.html`` fresh).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from importlib import resources
from typing import Any, Final

from spec.explore import Bounds, Node, _steps, action_label, enumerator, explore
from spec.invariants import INVARIANTS, STEP_INVARIANTS, step_violations
from spec.operations import REGISTRY, Kind, Operation, Registry

#: What a queue state looks like to a reader of a trace: ``(now, messages, visible,
#: in_flight, dead, delayed, timers)``, each message ``(id, status, attempt, deadline,
#: visible_at)``, sorted by id. Both a spec node and a TLC state of a queue model project to it,
#: which is how a TLC trace is matched to the spec's graph.
QueueView = tuple[
    int,
    tuple[tuple[str, str, int, int | None, int | None], ...],
    tuple[str, ...],
    tuple[str, ...],
    tuple[str, ...],
    tuple[str, ...],
    tuple[str, ...],
]

#: The invariants that mean nothing on one kind of queue (they hold vacuously there), as
#: ``python -m spec explore`` prints them: FifoVisible is the standard queue's order,
#: GroupOrder and DedupWindow the FIFO queue's.
_NOT_ON_FIFO: Final = frozenset({"FifoVisible"})
_NOT_ON_STANDARD: Final = frozenset({"GroupOrder", "DedupWindow"})

#: What each contract invariant says, in one line, as the page shows it beside the name (the
#: contract's section 2 and 2b in a learner's words; ``spec/invariants.py`` is the definition).
#: ``BatchAtomic`` is about the batch steps only (``purge`` and the ``*_batch`` calls).
MEANINGS: Final[Mapping[str, str]] = {
    "OneState": "every message is in exactly one place (visible, in flight, delayed, done, "
    "cancelled or dead), and a finished one never changes again",
    "CapacityBound": "the active messages (delayed + visible + in flight) never exceed the "
    "capacity",
    "OneLiveReceipt": "a message in flight has exactly one live receipt, (id, its current "
    "attempt); a message not in flight has none",
    "AttemptsCount": "a message's deliveries are numbered 1, 2, 3, ... with no gap and no repeat",
    "FifoVisible": "the visible messages are in the order they (re-)entered: a released "
    "message goes to the tail",
    "IdsReserved": "an accepted id is never accepted again by this queue",
    "DelayHonoured": "a delayed message is not visible, nor delivered, before its visible-at time",
    "GroupOrder": "a receive takes, from each group it touches, that group's earliest messages "
    "in send order, and nothing from a group that is locked",
    "DedupWindow": "within the dedup window of an acceptance no other message with the same "
    "dedup id is accepted",
    "BatchAtomic": "a batch (a *_batch call, or purge) is one step: its entries one after another "
    "with nothing in between, and a rejected send_batch changes nothing",
}

#: What each bound means (:class:`spec.explore.Bounds`, one row of the page's bounds table each).
BOUND_MEANINGS: Final[Mapping[str, str]] = {
    "ids": "the message ids a producer may send (a message's body is its id)",
    "capacity": "at most this many active messages (delayed + visible + in flight): a send "
    "beyond it is rejected",
    "max_receives": "a message released after this many deliveries goes to the dead-letter "
    "list instead of back to the queue",
    "max_attempt": "where the exploration stops: receive is offered only while the head has "
    "had fewer deliveries than this (a bound of the explorer, not of the queue)",
    "visibility_timeouts": "the timeouts a receive may ask for: a delivery's deadline is now + "
    "the timeout (none: it never expires)",
    "extend_timeouts": "the timeouts change_visibility may set, counted from now (0 releases "
    "the message at once)",
    "max_time": "the clock runs 0, 1, ... up to this; advance(dt=1) stops there",
    "batch": "the largest batch tried (batch actions take 2 up to this many entries; 1: no "
    "batch actions)",
    "delays": "the delays a send may ask for (0: visible at once; d: delayed until now + d)",
    "fifo": "a FIFO queue: each group is delivered in send order, and sends are deduplicated "
    "within a window",
    "groups": "the message groups: a group is locked while one of its messages is in flight",
    "dedup": "ids sent with one dedup id: the later one is a producer's retry of the earlier",
    "dedup_interval": "the dedup window, in clock units: a retry accepted within it is a "
    "duplicate (it changes nothing)",
}

#: The bounds that mean something only on a FIFO queue (not shown for a standard one, as
#: ``Bounds``' repr leaves them out).
_FIFO_BOUNDS: Final = frozenset({"fifo", "groups", "dedup", "dedup_interval"})


@dataclass(frozen=True)
class GraphSpec:
    """One graph of the page: a key for URLs (``std``), a title, the bounds it is explored at."""

    key: str
    title: str
    bounds: Bounds

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.key):
            raise ValueError(f"key must be lowercase letters, digits and _, got {self.key!r}")


@dataclass(frozen=True)
class CexStep:
    """One state of a TLC trace: its number, TLC's action, each variable as TLC printed it
    (whitespace collapsed), and the queue state it stands for (``None``: not a queue model's
    state, e.g. a threaded model's)."""

    number: int
    action: str
    variables: tuple[tuple[str, str], ...]
    queue: QueueView | None = None


@dataclass(frozen=True)
class Counterexample:
    """A counterexample TLC printed, to be stepped through on the page.

    ``key`` names it in URLs (``exactly_once``); ``violation`` is TLC's verdict line
    (``Invariant ExactlyOnce is violated.``); ``about`` says in prose what to look at;
    ``graph``, when set, is the only graph it may be linked to.
    """

    key: str
    title: str
    model: str
    violation: str
    steps: tuple[CexStep, ...]
    about: str = ""
    graph: str | None = None
    #: A FIFO queue's trace (TLA+ ``QueueFifo``: it has the variable ``sent``): linked only to a
    #: FIFO graph.
    fifo: bool = False

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.key):
            raise ValueError(f"key must be lowercase letters, digits and _, got {self.key!r}")
        if not self.steps:
            raise ValueError(f"counterexample {self.key!r} has no steps")


@dataclass
class ExploredGraph:
    """A graph as the page holds it: the nodes in BFS order, each node's outgoing edges."""

    spec: GraphSpec
    nodes: list[Node] = field(default_factory=list)
    #: Per node, in the registry's order: (display label, TLA+ label, target, step violations).
    edges: list[list[tuple[str, str, int, list[str]]]] = field(default_factory=list)
    index: dict[Node, int] = field(default_factory=dict)


# -- labels: the registry's names ---------------------------------------------------------------


def _value(v: object) -> str:
    if isinstance(v, tuple):
        return "(" + ",".join(map(_value, v)) + ")"
    return str(v)  # None is None, as Python writes it: these are the Python API's names


def display_label(op: Operation, args: Sequence[object]) -> str:
    """An action as the registry names it, with the explorer's model arguments: ``send(a,delay=0)``,
    ``receive(vt=1)``, ``delete(a,1)``, ``change_visibility(a,1,timeout=2)``, ``advance(dt=1)``,
    ``expire()``. An id and a receipt's attempt are positional; the body is left out (the
    explorer's body is the id: TLA+ has none); a FIFO send's group and dedup id are shown by
    name when set; a batch's list is written as a list of tuples."""
    parts: list[str] = []
    for arg, v in zip((*op.args, *op.options), args, strict=False):
        if arg.kind is Kind.BODY or (v is None and (arg in op.options or arg.kind is Kind.DELAY)):
            continue  # no body in the explorer; a FIFO send takes the queue's delay
        if arg.kind in (Kind.ID, Kind.ATTEMPT):
            parts.append(str(v))
        elif arg.kind is Kind.ENTRIES:
            assert isinstance(v, tuple)
            # A FIFO entry (id, body, None, group, dedup) is named by its id (its group and
            # dedup id follow from the id at these bounds); a standard one by (id, delay).
            parts.append(
                "[" + ",".join(e[0] if len(e) == 5 else f"({e[0]},{e[2]})" for e in v) + "]"
            )
        elif arg.kind in (Kind.RECEIPTS, Kind.CHANGES):
            assert isinstance(v, tuple)
            parts.append("[" + ",".join(map(_value, v)) + "]")
        else:
            parts.append(f"{arg.name}={_value(v)}")
    return f"{op.name}({','.join(parts)})"


def _labels(bounds: Bounds, node: Node, registry: Registry) -> dict[str, str]:
    """The display label of each TLA+ label tried in ``node`` (the same enumerators, in the same
    order, as :func:`spec.explore.successors` uses, so every edge it yields has one)."""
    s, now = node
    out: dict[str, str] = {}
    for op in registry:
        for params, args in enumerator(op)(bounds, s, now):
            out[action_label(op.tla, params)] = display_label(op, args)
    return out


# -- the graphs ---------------------------------------------------------------------------------


def explore_graph(spec: GraphSpec, registry: Registry = REGISTRY) -> ExploredGraph:
    """Every reachable node of ``spec.bounds`` and every edge, with the registry's labels and the
    step invariants checked on each edge (the whole graph: violations do not stop it)."""
    g = explore(spec.bounds, stop_at_first_violation=False, registry=registry)
    out = ExploredGraph(spec)
    out.nodes = sorted(g.nodes, key=g.nodes.__getitem__)
    out.index = dict(g.nodes)
    for node in out.nodes:
        names = _labels(spec.bounds, node, registry)
        row = []
        # The edges of successors(), each with BatchAtomic checked as explore() checks it.
        for label, nxt, atomic in _steps(spec.bounds, node, registry):
            bad = step_violations(node[0], nxt[0], node[1])
            if (r := atomic()) is not None:
                bad = [*bad, r]
            row.append((names[label], label, out.index[nxt], bad))
        out.edges.append(row)
    return out


def invariant_names(fifo: bool) -> list[str]:
    """The contract invariants that mean something on this kind of queue, in the contract's
    order (:data:`spec.invariants.INVARIANTS`)."""
    skip = _NOT_ON_FIFO if fifo else _NOT_ON_STANDARD
    return [n for n in INVARIANTS if n not in skip]


def step_invariant_names(fifo: bool) -> list[str]:
    """The invariants checked on each step: the step halves that mean something on this kind of
    queue, and ``BatchAtomic`` (on the batch steps: ``purge`` is one, tried at every bound)."""
    return [*(n for n in STEP_INVARIANTS if n in invariant_names(fifo)), "BatchAtomic"]


# -- what the page explains: the bounds, the guide ------------------------------------------------


def _shown(v: object, none: str = "none") -> str:
    """A bound's value as the page writes values: a tuple as its items, ``None`` as ``none``
    (or what ``none`` says it means for this bound)."""
    if v is None:
        return none
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, tuple):
        return ", ".join(_shown(x, none) for x in v) if v else "none"
    return str(v)


def bound_rows(bounds: Bounds) -> list[tuple[str, str, str]]:
    """The page's bounds table: (bound, value, meaning) for each field of ``bounds``, the FIFO
    ones only on a FIFO queue. ``KeyError`` names a bound :data:`BOUND_MEANINGS` lacks."""
    rows = []
    for f in fields(bounds):
        if f.name in _FIFO_BOUNDS and not bounds.fifo:
            continue
        v = getattr(bounds, f.name)
        if f.name in ("groups", "dedup"):
            sets = v or ((bounds.ids,) if f.name == "groups" else ())
            value = "; ".join(f"{'_'.join(g)} = {{{', '.join(g)}}}" for g in sets) or "none"
        elif f.name == "capacity":
            value = _shown(v, "no limit")
        elif f.name == "max_receives":
            value = _shown(v, "none (never dead-lettered)")
        elif f.name == "visibility_timeouts":
            value = _shown(v, "none (never expires)")
        elif f.name == "extend_timeouts" and not v:
            value = "none (no change_visibility)"
        else:
            value = _shown(v)
        meaning = BOUND_MEANINGS[f.name]
        if f.name == "delays" and bounds.fifo:
            meaning = "the queue's delay: a FIFO send takes none of its own (0: visible at once)"
        rows.append((f.name, value, meaning))
    return rows


def tour(g: ExploredGraph) -> list[tuple[str, str]]:
    """The guide's path to the duplicate delivery, as (display label, what to look at) pairs:
    send the first id, receive it with the smallest timeout that expires, advance the clock to
    its deadline, let the sweeper expire it, receive it again. ``[]`` if the graph's bounds have
    no such path (no expiring timeout, a clock too short, a single delivery)."""
    b = g.spec.bounds
    vts = sorted(v for v in b.visibility_timeouts if v is not None)
    if not vts:
        return []
    i, vt = b.ids[0], vts[0]
    send = f"Send({i})" if b.fifo else f"Send({i},0)"
    if not b.fifo and 0 not in b.delays:
        return []
    wanted = [
        (send, f"{i} is accepted: it is visible, at the head of the queue."),
        (
            f"Receive({vt})",
            f"{i} is in flight: attempt 1, deadline now + {vt}, and its receipt ({i},1) is "
            "live (a consumer holds it).",
        ),
        *[("Tick", "The clock moves on by 1.")] * (vt - 1),
        (
            "Tick",
            f"The clock reaches {i}'s deadline: it is outlined as overdue, but still in flight "
            f"(a delete with ({i},1) would still work) until the sweeper runs.",
        ),
        (
            "Expire",
            f"The sweeper releases {i}: visible again, attempt still 1; the receipt ({i},1) is "
            "now stale.",
        ),
        (
            f"Receive({vt})",
            f"{i} is delivered again, as attempt 2: the duplicate delivery. Every invariant "
            "still holds (see the receipts: one stale, one live): delivery is at-least-once.",
        ),
    ]
    out: list[tuple[str, str]] = []
    here = 0
    for tla, text in wanted:
        step = next((e for e in g.edges[here] if e[1] == tla), None)
        if step is None:
            return []
        out.append((step[0], text))
        here = step[2]
    return out


def _reason_name(reason: str) -> str:
    return reason.split(":", 1)[0]


def _num(t: float | None) -> int | float | None:
    """A time as JSON: an integral float as an int (the explorer's clock is discrete)."""
    if t is None:
        return None
    return int(t) if float(t).is_integer() else t


def _node_json(node: Node, fifo: bool) -> list[Any]:
    s, now = node
    msgs = [
        [m.id, m.status.value, m.attempt, _num(m.deadline), _num(m.visible_at)]
        + ([m.group, m.sent, m.dedup_id] if fifo else [])
        for m in s.messages
    ]
    bad = [
        [name, reason]
        for name, f in INVARIANTS.items()
        if name in invariant_names(fifo) and (reason := f(s)) is not None
    ]
    dedup = [[d, i, _num(at)] for d, i, at in s.dedup]
    return [
        now,
        msgs,
        list(s.visible),
        list(s.in_flight),
        list(s.dead),
        list(s.delayed),
        list(s.timers),
        dedup,
        bad,
    ]


def _graph_json(g: ExploredGraph) -> dict[str, Any]:
    fifo = g.spec.bounds.fifo
    names = invariant_names(fifo)
    steps = step_invariant_names(fifo)
    return {
        "title": g.spec.title,
        "bounds": [list(r) for r in bound_rows(g.spec.bounds)],
        "fifo": fifo,
        "invariants": names,
        "stepInvariants": steps,
        "meanings": {n: MEANINGS[n] for n in dict.fromkeys([*names, *steps])},
        "tour": [list(t) for t in tour(g)],
        "nodes": [_node_json(n, fifo) for n in g.nodes],
        # Step violations only where there are some: a correct spec has none, and the page
        # stays small.
        "edges": [
            [[d, t, m, bad] if bad else [d, t, m] for d, t, m, bad in row] for row in g.edges
        ],
    }


# -- counterexamples ----------------------------------------------------------------------------


def queue_view(node: Node) -> QueueView:
    """The :data:`QueueView` of a spec node."""
    s, now = node
    msgs = tuple(
        (m.id, m.status.value, m.attempt, _int(m.deadline), _int(m.visible_at)) for m in s.messages
    )
    return (now, msgs, s.visible, s.in_flight, s.dead, s.delayed, s.timers)


def _int(t: float | None) -> int | None:
    return None if t is None else int(t)


#: The spec action each consumer model's action wraps (``tla/QueueConsumers.tla``: ``Sweep ==
#: Expire``, ``Clock == Tick``, ...). When two edges reach the TLC state (an ``Expire`` and a
#: ``Retry`` both re-queue an in-flight message) the one of this action is the step taken.
TLC_ACTIONS: Final[Mapping[str, str]] = {
    "Produce": "Send",
    "Consume": "Receive",
    "Finish": "Delete",
    "FinishById": "Delete",
    "Sweep": "Expire",
    "Clock": "Tick",
}


def link(cex: Counterexample, graph: ExploredGraph) -> list[tuple[int, str | None]]:
    """The node of ``graph`` each state of ``cex`` is, with the display label of the edge that
    reaches it (``None`` for the first state and for a TLC step that leaves the queue as it
    was); ``[]`` if the trace is not a path of the graph.

    The first state must be the empty queue at time 0 (node 0); each next state is either the
    same node (a consumer's stale delete, its ``Finish`` bookkeeping) or a successor in the
    graph whose :data:`QueueView` equals the TLC state's, by preference one of the spec action
    TLC's action is or wraps (:data:`TLC_ACTIONS`), else the first in the registry's order.
    """
    if cex.graph is not None and cex.graph != graph.spec.key:
        return []
    if cex.fifo != graph.spec.bounds.fifo:
        return []  # a FIFO trace's queue views would match a standard graph's too
    views = [step.queue for step in cex.steps]
    if any(v is None for v in views) or views[0] != queue_view(graph.nodes[0]):
        return []
    path: list[tuple[int, str | None]] = [(0, None)]
    for step, view in zip(cex.steps[1:], views[1:], strict=True):
        here = path[-1][0]
        if queue_view(graph.nodes[here]) == view:
            path.append((here, None))
            continue
        nxt = [e for e in graph.edges[here] if queue_view(graph.nodes[e[2]]) == view]
        if not nxt:
            return []
        want = TLC_ACTIONS.get(step.action, step.action)
        best = [e for e in nxt if e[1].partition("(")[0] == want] or nxt
        path.append((best[0][2], best[0][0]))
    return path


def _cex_json(cex: Counterexample, graphs: Sequence[ExploredGraph]) -> dict[str, Any]:
    linked: tuple[str, list[tuple[int, str | None]]] | None = None
    for g in graphs:
        if path := link(cex, g):
            linked = (g.spec.key, path)
            break
    return {
        "key": cex.key,
        "title": cex.title,
        "model": cex.model,
        "violation": cex.violation,
        "about": cex.about,
        "graph": linked[0] if linked else None,
        "steps": [
            {
                "n": st.number,
                "action": st.action,
                "vars": [list(v) for v in st.variables],
                "node": linked[1][k][0] if linked else None,
                "label": linked[1][k][1] if linked else None,
            }
            for k, st in enumerate(cex.steps)
        ],
    }


# -- the page -----------------------------------------------------------------------------------


def page_data(
    graphs: Sequence[GraphSpec],
    counterexamples: Iterable[Counterexample] = (),
    registry: Registry = REGISTRY,
) -> dict[str, Any]:
    """Everything the page's script reads, as JSON-able values (see :func:`page`)."""
    if not graphs:
        raise ValueError("graphs must name at least one graph")
    keys = [g.key for g in graphs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"graph keys must be distinct, got {keys!r}")
    explored = [explore_graph(g, registry) for g in graphs]
    cexs = list(counterexamples)
    ckeys = [c.key for c in cexs]
    if len(set(ckeys)) != len(ckeys):
        raise ValueError(f"counterexample keys must be distinct, got {ckeys!r}")
    return {
        "order": keys,
        "graphs": {g.spec.key: _graph_json(g) for g in explored},
        "cexs": [_cex_json(c, explored) for c in cexs],
    }


def page(
    graphs: Sequence[GraphSpec],
    counterexamples: Iterable[Counterexample] = (),
    registry: Registry = REGISTRY,
    title: str = "Queue state explorer",
) -> str:
    """The whole page: HTML with the CSS, the script and :func:`page_data` inline."""
    data = json.dumps(page_data(graphs, counterexamples, registry), separators=(",", ":"))
    # Inside <script> only "</" can end the element early; JSON allows "<\/" for it.
    data = data.replace("</", "<\\/")
    return (
        asset("explorer.html")
        .replace("@TITLE@", html.escape(title))
        .replace("@CSS@", asset("explorer.css"))
        .replace("@SCRIPT@", asset("explorer.js"))
        .replace("@DATA@", data)
    )


def asset(name: str) -> str:
    """One file of the page's skeleton, ``spec/explorer/<name>``: the template
    (``explorer.html``, with the placeholders ``@TITLE@``, ``@CSS@``, ``@SCRIPT@`` and
    ``@DATA@``), its stylesheet (``explorer.css``) or its script (``explorer.js``). Read as
    package data, so it is found in an installed wheel as in the checkout."""
    return resources.files("spec").joinpath("explorer", name).read_text(encoding="utf-8")
