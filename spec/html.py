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
- the status of each contract invariant in each state, and of the step halves on the edge that
  led there, computed HERE in Python by :mod:`spec.invariants` (the page's script only shows
  them: it never re-implements the spec);
- TLC's counterexamples (:class:`Counterexample`, read from saved traces by :func:`load_trace`),
  steppable. A trace whose every state is a queue state of one of the graphs is *linked*: each
  of its states is matched to a node of that graph (:func:`link`), so stepping it moves the
  explorer, and the variables TLC has beyond the queue (the consumers' ``held`` receipts,
  ``finished``) are shown beside it. A trace of another kind of model (the threaded ones, with
  threads, a lock and condition variables) is shown as the list of TLC's states, clearly
  labelled as not on the spec's graph.

The state is shareable: the page writes ``#state=<graph>:<node>`` into the URL, with the history
that led there (``&from=<node>&path=<label>/<label>/...&at=<position>``), and restores it on
load; ``#state=<graph>:<label>/<label>/...`` walks a path of action labels (the page's or the
TLA+ ones) from the empty queue; ``#cex=<key>&step=<n>`` opens a counterexample at a step.

This module is stdlib-only and reads no clock, so the page is a pure function of the bounds,
the registry and the traces (``tests/test_diagrams.py`` keeps ``docs/explorer.html`` fresh).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from spec.explore import Bounds, Node, action_label, enumerator, explore, successors
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
        for label, nxt in successors(spec.bounds, node, registry):
            bad = step_violations(node[0], nxt[0], node[1])
            row.append((names[label], label, out.index[nxt], bad))
        out.edges.append(row)
    return out


def invariant_names(fifo: bool) -> list[str]:
    """The contract invariants that mean something on this kind of queue, in the contract's
    order (:data:`spec.invariants.INVARIANTS`)."""
    skip = _NOT_ON_FIFO if fifo else _NOT_ON_STANDARD
    return [n for n in INVARIANTS if n not in skip]


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
    return {
        "title": g.spec.title,
        "bounds": repr(g.spec.bounds),
        "fifo": fifo,
        "invariants": invariant_names(fifo),
        "stepInvariants": [n for n in STEP_INVARIANTS if n in invariant_names(fifo)],
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


_HEADER: Final = re.compile(r"^State (\d+): <(\w+)[^>]*>\s*$")
_VERDICT: Final = re.compile(r"^Error: (.*is violated\.?)\s*$")


def _attempt(v: object) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise ValueError(f"a message's attempt is not an integer: {v!r}")
    return v


def _raw_states(text: str) -> list[list[tuple[str, str]]]:
    """Each state's variables as TLC printed them, in printed order, whitespace collapsed."""
    states: list[list[tuple[str, str]]] = []
    current: list[str] | None = None

    def flush() -> None:
        if current is None:
            return
        block = "\n".join(current)
        variables = []
        for part in re.split(r"(?:^|\n)\s*/\\\s+", block):
            if part.strip():
                name, _, value = part.partition("=")
                variables.append((name.strip(), " ".join(value.split())))
        states.append(variables)

    for line in text.splitlines():
        if _HEADER.match(line):
            flush()
            current = []
        elif current is not None and line.strip():
            current.append(line)
    flush()
    return states


def load_trace(
    text: str, key: str, title: str = "", model: str = "", about: str = "", graph: str | None = None
) -> Counterexample:
    """A :class:`Counterexample` from a trace as TLC printed it (``tla.tlc.Result.trace()``,
    saved as ``docs/diagrams/*.trace``). A state with the queue's variables (``msgs``,
    ``visible``, ``inFlight``, ``dead``, ``now``; ``delayed`` and ``timers`` if the model has
    them) gets its :data:`QueueView`, so that :func:`link` can put it on a graph.

    ``ValueError`` if ``text`` is not a TLC trace.
    """
    # tla reads TLC's values; it ships in the same wheel as spec and imports spec, so it is
    # imported here, when a trace is read, and not when spec is.
    from tla.counterexample import messages, parse_trace

    parsed = parse_trace(text)
    raw = _raw_states(text)
    verdict = next((m.group(1) for line in text.splitlines() if (m := _VERDICT.match(line))), "")
    steps = []
    for st, variables in zip(parsed, raw, strict=True):
        view: QueueView | None = None
        v = st.state
        if {"msgs", "visible", "inFlight", "dead", "now"} <= set(v):

            def ids(name: str, v: Mapping[str, object] = v) -> tuple[str, ...]:
                seq = v.get(name, ())
                assert isinstance(seq, tuple), f"{name} is not a sequence: {seq!r}"
                return tuple(str(x) for x in seq)

            def opt(x: object) -> int | None:
                return x if isinstance(x, int) and not isinstance(x, bool) else None

            now = v["now"]
            assert isinstance(now, int)
            msgs = tuple(
                sorted(
                    (
                        i,
                        str(r["status"]),
                        _attempt(r["attempt"]),
                        opt(r["deadline"]),
                        opt(r.get("visibleAt")),
                    )
                    for i, r in messages(v).items()
                )
            )
            view = (
                now,
                msgs,
                ids("visible"),
                ids("inFlight"),
                ids("dead"),
                ids("delayed"),
                ids("timers"),
            )
        steps.append(CexStep(st.number, st.action, tuple(variables), view))
    return Counterexample(
        key=key,
        title=title or key,
        model=model,
        violation=verdict,
        steps=tuple(steps),
        about=about,
        graph=graph,
        fifo=any("sent" in st.state for st in parsed),
    )


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
        _TEMPLATE.replace("@TITLE@", html.escape(title))
        .replace("@CSS@", _CSS)
        .replace("@SCRIPT@", _SCRIPT)
        .replace("@DATA@", data)
    )


_CSS: Final = """
body{font:15px/1.4 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{padding:.6em 1em;background:#24292f;color:#fff}
header h1{font-size:1.2em;margin:0 0 .2em}
header .bounds{font:12px monospace;opacity:.85}
main{display:flex;flex-wrap:wrap;gap:1em;padding:1em}
section{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:.6em .8em}
.col{flex:1 1 420px;display:flex;flex-direction:column;gap:1em;min-width:320px}
h2{font-size:1em;margin:.1em 0 .5em}
.row{display:flex;flex-wrap:wrap;gap:.4em;align-items:center;min-height:2.2em}
span.row{display:inline-flex;vertical-align:middle}
.msg{border:2px solid #888;border-radius:6px;padding:.2em .5em;font-family:monospace;
 background:#fff}
.VISIBLE{border-color:#1a7f37;background:#dafbe1}.IN_FLIGHT{border-color:#bf8700;
 background:#fff8c5}.DELAYED{border-color:#8250df;background:#fbefff}
.DONE{border-color:#57606a;background:#eaeef2}.CANCELLED{border-color:#57606a;
 background:#f6f8fa;text-decoration:line-through}.DEAD{border-color:#cf222e;background:#ffebe9}
.overdue{outline:3px dashed #cf222e}
.empty{color:#8c959f;font-style:italic}
.arrow{color:#8c959f}
button{font:13px monospace;padding:.25em .6em;border:1px solid #8c959f;border-radius:4px;
 background:#f6f8fa;cursor:pointer}
button:hover:not(:disabled){background:#ddf4ff}
button:disabled{opacity:.45;cursor:default}
#actions button{margin:.15em}
.ok{color:#1a7f37}.violated{color:#cf222e;font-weight:bold}
ol,ul{margin:.2em 0;padding-left:1.6em}
#history li,#cex-steps li{cursor:pointer;font-family:monospace}
#history li.current,#cex-steps li.current{background:#ddf4ff;font-weight:bold}
.clock{font:bold 1.4em monospace}
.note{font-size:.9em;color:#57606a}
.banner{padding:.4em .6em;border-radius:4px;background:#ffebe9;border:1px solid #cf222e}
.tlc{background:#fff8c5;border:1px solid #bf8700;border-radius:4px;padding:.3em .6em}
table{border-collapse:collapse;font:12px monospace}
td,th{border:1px solid #d0d7de;padding:.15em .4em;text-align:left;vertical-align:top}
tr.changed td{background:#fff8c5}
kbd{border:1px solid #8c959f;border-radius:3px;padding:0 .3em;font-size:.85em}
"""

_TEMPLATE: Final = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@TITLE@</title>
<!-- Generated by spec/html.py from the spec's state graph; do not edit by hand. -->
<style>@CSS@</style>
</head>
<body>
<header>
<h1>@TITLE@</h1>
<div>graph: <select id="graph" aria-label="graph"></select>
 <span id="graph-size" class="note"></span></div>
<div class="bounds" id="bounds"></div>
<div class="note">Keys: <kbd>&larr;</kbd>/<kbd>&rarr;</kbd> back/forward,
 <kbd>1</kbd>&ndash;<kbd>9</kbd> the first nine actions,
 <kbd>n</kbd>/<kbd>p</kbd> next/previous counterexample step,
 <kbd>Esc</kbd> leave the counterexample.</div>
</header>
<main>
<div class="col">
<section id="queue-view" aria-label="the queue's state">
<h2>State <span id="node-id"></span> &middot; clock <span class="clock" id="now"></span></h2>
<h3 class="note">visible FIFO (head first; receive takes the head)</h3>
<div class="row" id="visible"></div>
<h3 class="note">in flight (deadline: when the sweeper may release it)</h3>
<div class="row" id="inflight"></div>
<h3 class="note">delayed (visible at)</h3>
<div class="row" id="delayed"></div>
<h3 class="note">terminal</h3>
<div>done: <span class="row" id="done"></span></div>
<div>cancelled: <span class="row" id="cancelled"></span></div>
<div>dead: <span class="row" id="dead"></span></div>
<div id="fifo-extra"></div>
</section>
<section id="trace-view" hidden aria-label="TLC's state">
<h2>TLC state <span id="trace-n"></span>: <span id="trace-action"></span></h2>
<p class="banner">Not a state of the spec's graph: this model has threads, a lock and
condition variables that the spec does not. The variables are TLC's, as it printed them;
the ones this step changed are highlighted.</p>
<div id="threads"></div>
<table id="trace-vars"></table>
</section>
<section>
<h2>Receipts handed out along this path</h2>
<ul id="receipts"></ul>
<p class="note">A receipt is live while its delivery is in flight; every earlier one is
stale, and the spec makes no step for it (delete, retry, change_visibility return False).</p>
</section>
</div>
<div class="col">
<section>
<h2>Enabled actions</h2>
<div id="actions"></div>
<p class="note" id="actions-note"></p>
</section>
<section>
<h2>Invariants (checked in Python by spec/invariants.py)</h2>
<ul id="invariants"></ul>
<div id="step-invariants" class="note"></div>
</section>
<section>
<h2>History</h2>
<button id="back" title="back (left arrow)">&larr; back</button>
<button id="forward" title="forward (right arrow)">forward &rarr;</button>
<button id="restart" title="the empty queue">restart</button>
<ol id="history" start="0"></ol>
<p class="note">Share this state: the page's URL holds it (<code id="fragment"></code>).</p>
</section>
<section>
<h2>TLC's counterexamples</h2>
<select id="cex-select" aria-label="counterexample"></select>
<button id="cex-load">load</button>
<div id="cex" hidden>
<h3 id="cex-title"></h3>
<p id="cex-about"></p>
<p class="note" id="cex-where"></p>
<button id="cex-first">|&larr;</button>
<button id="cex-prev" title="previous step (p)">&larr; prev</button>
<span id="cex-step"></span>
<button id="cex-next" title="next step (n)">next &rarr;</button>
<button id="cex-last">&rarr;|</button>
<button id="cex-close" title="Esc">close</button>
<div id="cex-verdict"></div>
<ol id="cex-steps"></ol>
<div id="cex-extra"></div>
</div>
</section>
</div>
</main>
<script type="application/json" id="data">@DATA@</script>
<script>@SCRIPT@</script>
</body>
</html>
"""

_SCRIPT: Final = r"""
"use strict";
const DATA = JSON.parse(document.getElementById("data").textContent);
const $ = (id) => document.getElementById(id);
// The explorer's state: the graph shown, the history (a list of {node, label}) and where in it
// we are, and the counterexample being stepped, if any.
const view = {graph: DATA.order[0], hist: [{node: 0, label: null}], pos: 0, cex: null, step: 0};
let written = "";

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}
const G = () => DATA.graphs[view.graph];
const node = (g, n) => {
  const [now, msgs, visible, inflight, dead, delayed, timers, dedup, bad] = g.nodes[n];
  const byId = {};
  for (const m of msgs) byId[m[0]] = {id: m[0], status: m[1], attempt: m[2], deadline: m[3],
    visibleAt: m[4], group: m[5], sent: m[6], dedup: m[7]};
  return {now, msgs: msgs.map((m) => byId[m[0]]), byId, visible, inflight, dead, delayed,
    timers, dedup, bad};
};
const edges = (g, n) => g.edges[n].map((e) => ({label: e[0], tla: e[1], to: e[2],
  bad: e[3] || []}));
const current = () => view.hist[view.pos].node;
const cex = () => (view.cex === null ? null : DATA.cexs[view.cex]);
const traceMode = () => cex() !== null && cex().graph === null;

function card(m, extra, cls) {
  const d = el("span", {class: "msg " + m.status + (cls ? " " + cls : ""),
    "data-id": m.id, "data-attempt": m.attempt});
  d.append(el("b", {text: m.id}), " attempt " + m.attempt + (extra ? ", " + extra : ""));
  return d;
}
function fill(id, items, empty) {
  const box = $(id);
  box.replaceChildren();
  if (!items.length) box.append(el("span", {class: "empty", text: empty || "none"}));
  items.forEach((x, i) => {
    if (i && id === "visible") box.append(el("span", {class: "arrow", text: "\u2190"}));
    box.append(x);
  });
}

function renderQueue(g, n) {
  const s = node(g, n);
  $("node-id").textContent = "#" + n;
  $("now").textContent = "now = " + s.now;
  const grp = (m) => (g.fifo ? "group " + m.group : "");
  fill("visible", s.visible.map((i, k) => card(s.byId[i],
    [k === 0 ? "head" : "", grp(s.byId[i])].filter(Boolean).join(", "))), "empty");
  fill("inflight", s.inflight.map((i) => {
    const m = s.byId[i];
    const due = m.deadline === null ? "no deadline (never expires)"
      : "deadline " + m.deadline + (m.deadline <= s.now ? " (passed: due for the sweeper)" : "");
    return card(m, [due, "live receipt (" + m.id + "," + m.attempt + ")", grp(m)]
      .filter(Boolean).join(", "), m.deadline !== null && m.deadline <= s.now ? "overdue" : "");
  }));
  fill("delayed", s.delayed.map((i) => card(s.byId[i], "visible at " + s.byId[i].visibleAt)));
  for (const [id, st] of [["done", "DONE"], ["cancelled", "CANCELLED"], ["dead", "DEAD"]]) {
    const ids = st === "DEAD" ? s.dead : s.msgs.filter((m) => m.status === st).map((m) => m.id);
    fill(id, ids.map((i) => card(s.byId[i])));
  }
  const fx = $("fifo-extra");
  fx.replaceChildren();
  if (g.fifo) {
    const locked = [...new Set(s.inflight.map((i) => s.byId[i].group))];
    fx.append(
      el("h3", {class: "note", text: "FIFO: locked groups (a message of theirs is in flight)"}),
      el("div", {id: "locked", text: locked.length ? locked.join(", ") : "none"}),
      el("h3", {class: "note", text: "FIFO: dedup records (dedup id, accepted id, at)"}),
      el("div", {id: "dedup", text: s.dedup.length ? s.dedup.map((d) => "(" + d.join(", ") + ")")
        .join(" ") : "none"}));
  }
  return s;
}

function renderInvariants(g, n) {
  const s = node(g, n);
  const bad = Object.fromEntries(s.bad.map(([k, r]) => [k, r]));
  const ul = $("invariants");
  ul.replaceChildren();
  for (const name of g.invariants) {
    const st = name in bad ? "violated" : "ok";
    ul.append(el("li", {"data-name": name, "data-status": st},
      el("span", {class: st, text: st === "ok" ? "\u2713 ok " : "\u2717 violated "}),
      el("code", {text: name}), bad[name] ? " \u2014 " + bad[name] : ""));
  }
  const prev = view.pos > 0 ? view.hist[view.pos - 1].node : null;
  const si = $("step-invariants");
  const e = prev === null ? null : edges(g, prev).find((x) => x.to === n &&
    x.label === view.hist[view.pos].label);
  if (!e) si.textContent = "Step halves (" + g.stepInvariants.join(", ") + "): no step into " +
    "this state on this path.";
  else if (!e.bad.length) si.textContent = "Step halves (" + g.stepInvariants.join(", ") +
    ") hold on the step " + e.label + ".";
  else si.replaceChildren(el("span", {class: "violated", text: "Step " + e.label +
    " violates: " + e.bad.join("; ")}));
}

function renderActions(g, n) {
  const box = $("actions");
  box.replaceChildren();
  const es = edges(g, n);
  es.forEach((e, k) => box.append(el("button", {
    "data-label": e.label, "data-tla": e.tla, "data-to": e.to,
    title: "TLA+ " + e.tla + " \u2192 state #" + e.to + (k < 9 ? " (key " + (k + 1) + ")" : ""),
    text: e.label, onclick: () => act(e)})));
  if (!es.length) box.append(el("span", {class: "empty", text: "none: nothing is enabled"}));
  $("actions-note").textContent = "Only enabled actions are shown: a call the spec rejects " +
    "(a stale receipt, a full queue) changes nothing, so it is no step.";
}

function renderHistory(g) {
  const ol = $("history");
  ol.replaceChildren();
  view.hist.forEach((h, k) => ol.append(el("li", {
    class: k === view.pos ? "current" : "", "data-node": h.node,
    text: (h.label === null ? "start" : h.label) + " \u2192 #" + h.node,
    onclick: () => { view.pos = k; render(); }})));
  $("back").disabled = view.pos === 0;
  $("forward").disabled = view.pos === view.hist.length - 1;
}

function renderReceipts(g) {
  // Every delivery along the history up to here: where a message's attempt rose.
  const ul = $("receipts");
  ul.replaceChildren();
  const now = node(g, current());
  let before = null;
  view.hist.slice(0, view.pos + 1).forEach((h, k) => {
    const s = node(g, h.node);
    for (const m of s.msgs) {
      const old = before && before.byId[m.id];
      if (m.status === "IN_FLIGHT" && (!old || old.attempt < m.attempt)) {
        const cur = now.byId[m.id];
        const live = cur && cur.status === "IN_FLIGHT" && cur.attempt === m.attempt;
        ul.append(el("li", {"data-receipt": m.id + "," + m.attempt,
          "data-live": live ? "live" : "stale",
          text: "(" + m.id + "," + m.attempt + ") handed out by step " + k + " (" + h.label +
            ") at time " + s.now + ": " + (live ? "LIVE" : "stale")}));
      }
    }
    before = s;
  });
  if (!ul.children.length) ul.append(el("li", {class: "empty", text: "none yet"}));
}

function renderTrace(c) {
  const st = c.steps[view.step];
  const prev = view.step > 0 ? c.steps[view.step - 1] : null;
  $("trace-n").textContent = st.n;
  $("trace-action").textContent = st.action;
  const old = prev ? Object.fromEntries(prev.vars) : {};
  const t = $("trace-vars");
  t.replaceChildren(el("tr", {}, el("th", {text: "variable"}), el("th", {text: "value"})));
  for (const [k, v] of st.vars) t.append(el("tr", {class: prev && old[k] !== v ? "changed" : "",
    "data-var": k}, el("td", {text: k}), el("td", {text: v})));
}

function renderCex() {
  const c = cex();
  $("cex").hidden = c === null;
  if (c === null) return;
  $("cex-select").value = c.key;
  $("cex-title").textContent = c.title + " (" + c.model + ")";
  $("cex-about").textContent = c.about;
  $("cex-where").textContent = c.graph !== null
    ? "Every state of this trace is a state of the graph \u201c" + DATA.graphs[c.graph].title +
      "\u201d: stepping it moves the explorer. TLC's variables beyond the queue are below."
    : "A threaded model's trace: a steppable list of TLC's states (not the spec's graph).";
  const last = c.steps.length - 1;
  $("cex-step").textContent = "step " + (view.step + 1) + " of " + c.steps.length;
  $("cex-prev").disabled = $("cex-first").disabled = view.step === 0;
  $("cex-next").disabled = $("cex-last").disabled = view.step === last;
  $("cex-verdict").replaceChildren(view.step === last
    ? el("p", {class: "banner", text: "TLC: " + c.violation}) : "");
  const ol = $("cex-steps");
  ol.replaceChildren();
  c.steps.forEach((st, k) => ol.append(el("li", {class: k === view.step ? "current" : "",
    text: "State " + st.n + ": " + st.action + (k > 0 && c.graph !== null
      ? " [" + (st.label === null ? "no step of the queue" : "spec: " + st.label) + "]" : ""),
    onclick: () => cexGo(k)})));
  const extra = $("cex-extra");
  extra.replaceChildren();
  if (c.graph !== null) {
    const queueVars = new Set(["msgs", "visible", "inFlight", "dead", "delayed", "timers", "now"]);
    const prev = view.step > 0 ? Object.fromEntries(c.steps[view.step - 1].vars) : {};
    const t = el("table", {id: "cex-vars"}, el("tr", {}, el("th", {text: "TLC variable"}),
      el("th", {text: "value"})));
    for (const [k, v] of c.steps[view.step].vars) if (!queueVars.has(k)) {
      t.append(el("tr", {class: view.step > 0 && prev[k] !== v ? "changed" : "", "data-var": k},
        el("td", {text: k}), el("td", {text: v})));
    }
    extra.append(el("p", {class: "tlc", text: "TLC's step: " + c.steps[view.step].action}), t);
  }
}

function renderThreads(c) {
  // A threaded model's threads, when it has them: who runs which operation where, who sleeps.
  const box = $("threads");
  box.replaceChildren();
  const vars = Object.fromEntries(c.steps[view.step].vars);
  if (!("at" in vars && "op" in vars)) return;
  const fn = (text) => Object.fromEntries([...text.matchAll(/(\w+) :> ("[^"]*"|<<[^>]*>>|\w+)/g)]
    .map((m) => [m[1], m[2].replace(/"/g, "")]));
  const at = fn(vars.at), op = fn(vars.op), arg = fn(vars.arg || "");
  const sleeping = {};
  for (const m of (vars.waiting || "").matchAll(/(\w+) \|-> \{([^}]*)\}/g)) {
    for (const t of m[2].split(",").map((x) => x.trim()).filter(Boolean)) sleeping[t] = m[1];
  }
  const t = el("table", {id: "thread-table"}, el("tr", {}, ...["thread", "operation", "at",
    "argument", "asleep on"].map((h) => el("th", {text: h}))));
  for (const th of Object.keys(at)) t.append(el("tr", {"data-thread": th}, ...[th, op[th], at[th],
    arg[th] || "", sleeping[th] || ""].map((x) => el("td", {text: x}))));
  box.append(el("p", {class: "note", text: "lock held by: " + (vars.lock || "?") +
    (vars.clock !== undefined ? ", clock = " + vars.clock : "")}), t);
}

function writeFragment() {
  // The state, and the history that led there as the labels of its actions: node numbers
  // alone would be ambiguous (expire() and retry(a,1) may reach the same node).
  let f;
  const c = cex();
  if (c !== null) f = "#cex=" + c.key + "&step=" + (view.step + 1);
  else f = "#state=" + view.graph + ":" + current() + "&from=" + view.hist[0].node + "&path=" +
    view.hist.slice(1).map((h) => h.label).join("/") + "&at=" + view.pos;
  $("fragment").textContent = f;
  if (f === location.hash) return;
  written = f;
  try { history.replaceState(null, "", f); } catch (err) { location.hash = f; }
}

function walk(g, from, labels) {
  // The history that follows the labels (the page's or TLA+'s) from a node; null if one is
  // not enabled where it is taken.
  const hist = [{node: from, label: null}];
  for (const label of labels) {
    const e = edges(g, hist[hist.length - 1].node).find((x) => x.label === label ||
      x.tla === label);
    if (!e) return null;
    hist.push({node: e.to, label: e.label});
  }
  return hist;
}

function render() {
  const c = cex();
  const trace = traceMode();
  $("queue-view").hidden = trace;
  $("trace-view").hidden = !trace;
  const g = G();
  $("graph").value = view.graph;
  $("bounds").textContent = g.title + ": " + g.bounds;
  $("graph-size").textContent = g.nodes.length + " states, " +
    g.edges.reduce((a, r) => a + r.length, 0) + " transitions";
  if (trace) {
    renderTrace(c);
    renderThreads(c);
    $("actions").replaceChildren(el("span", {class: "empty",
      text: "none: this is a TLC trace of a threaded model, not a state of the spec"}));
    $("invariants").replaceChildren(el("li", {text: "TLC checks this model's invariants; at " +
      "the last step: " + c.violation}));
    $("step-invariants").textContent = "";
  } else {
    const n = current();
    renderQueue(g, n);
    renderActions(g, n);
    renderInvariants(g, n);
    renderReceipts(g);
  }
  renderHistory(g);
  renderCex();
  writeFragment();
}

function act(e) {
  if (cex() !== null) view.cex = null;  // an action leaves the counterexample, keeps its path
  view.hist = view.hist.slice(0, view.pos + 1);
  view.hist.push({node: e.to, label: e.label});
  view.pos += 1;
  render();
}
function back() {
  if (cex() !== null) return cexGo(view.step - 1);
  if (view.pos > 0) { view.pos -= 1; render(); }
}
function forward() {
  if (cex() !== null) return cexGo(view.step + 1);
  if (view.pos < view.hist.length - 1) { view.pos += 1; render(); }
}

function cexOpen(k, step) {
  if (k < 0 || k >= DATA.cexs.length) return;
  view.cex = k;
  const c = DATA.cexs[k];
  if (c.graph !== null) {
    view.graph = c.graph;
    view.hist = c.steps.map((st, i) => ({node: st.node, label: i === 0 ? null
      : (st.label === null ? "(" + st.action + ": no step of the queue)" : st.label)}));
  }
  cexGo(step);
}
function cexGo(step) {
  const c = cex();
  if (c === null) return;
  view.step = Math.max(0, Math.min(c.steps.length - 1, step));
  if (c.graph !== null) view.pos = view.step;
  render();
}
function cexClose() {
  view.cex = null;
  render();
}

function restore(hash) {
  // #state=<graph>:<node>[&from=<node>&path=<label>/<label>...&at=<k>],
  // #state=<graph>:<label>/<label>/... (a path from the empty queue), #cex=<key>&step=<n>.
  // Anything unreadable leaves the empty queue (or the named node without its history).
  const p = new URLSearchParams(hash.replace(/^#/, ""));
  view.cex = null;
  if (p.has("cex")) {
    const k = DATA.cexs.findIndex((c) => c.key === p.get("cex"));
    if (k >= 0) return cexOpen(k, (parseInt(p.get("step"), 10) || 1) - 1);
  }
  let spec = p.get("state") || "";
  let key = DATA.order[0];
  const colon = spec.indexOf(":");
  if (colon > 0 && spec.slice(0, colon) in DATA.graphs) {
    key = spec.slice(0, colon);
    spec = spec.slice(colon + 1);
  }
  const g = DATA.graphs[key];
  const isNode = (x) => /^\d+$/.test(x) && +x < g.nodes.length;
  view.graph = key;
  view.hist = [{node: 0, label: null}];
  view.pos = 0;
  if (isNode(spec)) {
    const n = +spec;
    const from = p.get("from") || "";
    const path = p.get("path") || "";
    const hist = isNode(from) ? walk(g, +from, path ? path.split("/") : []) : null;
    const at = parseInt(p.get("at"), 10);
    const pos = hist && Number.isInteger(at) && at >= 0 && at < hist.length ? at
      : (hist ? hist.length - 1 : 0);
    if (hist && hist[pos].node === n) { view.hist = hist; view.pos = pos; }
    else view.hist = [{node: n, label: null}];
  } else if (spec) {
    // As far as the labels go: a wrong one stops the walk there.
    for (const label of spec.split("/")) {
      const e = edges(g, current()).find((x) => x.label === label || x.tla === label);
      if (!e) break;
      view.hist.push({node: e.to, label: e.label});
      view.pos += 1;
    }
  }
  render();
}

function init() {
  for (const k of DATA.order) $("graph").append(el("option", {value: k,
    text: DATA.graphs[k].title}));
  $("graph").addEventListener("change", () => {
    view.graph = $("graph").value;
    view.cex = null;
    view.hist = [{node: 0, label: null}];
    view.pos = 0;
    render();
  });
  DATA.cexs.forEach((c, k) => $("cex-select").append(el("option", {value: c.key,
    text: c.title})));
  if (!DATA.cexs.length) {
    $("cex-select").append(el("option", {text: "(none in this page)"}));
    $("cex-select").disabled = $("cex-load").disabled = true;
  }
  $("cex-load").addEventListener("click", () =>
    cexOpen(DATA.cexs.findIndex((c) => c.key === $("cex-select").value), 0));
  $("cex-first").addEventListener("click", () => cexGo(0));
  $("cex-prev").addEventListener("click", () => cexGo(view.step - 1));
  $("cex-next").addEventListener("click", () => cexGo(view.step + 1));
  $("cex-last").addEventListener("click", () => cexGo(Infinity));
  $("cex-close").addEventListener("click", cexClose);
  $("back").addEventListener("click", back);
  $("forward").addEventListener("click", forward);
  $("restart").addEventListener("click", () => restore("#state=" + view.graph + ":0"));
  document.addEventListener("keydown", (ev) => {
    if (ev.target.tagName === "SELECT" || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.key === "ArrowLeft") back();
    else if (ev.key === "ArrowRight") forward();
    else if (ev.key === "n") cexGo(view.step + 1);
    else if (ev.key === "p") cexGo(view.step - 1);
    else if (ev.key === "Escape") cexClose();
    else if (/^[1-9]$/.test(ev.key) && !traceMode()) {
      const e = edges(G(), current())[+ev.key - 1];
      if (e) act(e);
    } else return;
    ev.preventDefault();
  });
  window.addEventListener("hashchange", () => {
    if (location.hash !== written) restore(location.hash);
  });
  restore(location.hash);
}
init();
"""
