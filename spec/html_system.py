"""The state explorer for two queues: one self-contained HTML page from the system's state graph.

The one-queue page (:mod:`spec.html`, ``docs/explorer.html``) shows :mod:`spec.explore`'s graph;
this page shows :func:`spec.system_explore.explore_system`'s, the graph TLC checks in
``tla/QueueSystem.tla``: a source queue (``2``, dead-lettering after ``source_max_receives``
deliveries) and its dead-letter queue (``1``, with retention), at :data:`PAGE_BOUNDS`, small
enough that every state is in the page. Each node is drawn as both queues side by side (the
clock, each queue's messages by status with attempt, deadline, enqueue time, where a
dead-lettered one came from and where a redriven one went); each enabled action is a button
named as in every layer (``Send(2,a,0)``, ``Receive(2,1)``, ``Delete``, ``Retry``,
``Expire(q)``, ``Redrive(1,a,2)``, ``Tick``) with what it does underneath (:func:`effects`:
``a dead-lettered into 1``, ``AgeOut(1,a)``), and a step that changes both queues (a dead-letter
move, a redrive move) is marked as the one step it is. The system invariants
(:func:`spec.system_invariants.system_violations`) are computed HERE, per node; the page's
script only shows them.

``python -m spec.html_system docs/explorer-system.html`` writes the committed page
(``tests/test_explorer_system_page.py`` keeps it fresh). The page is a pure function of the
bounds: stdlib only, no clock, no network; it reuses the one-queue page's stylesheet
(:func:`spec.html.asset`).
"""

from __future__ import annotations

import argparse
import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, Final

from spec import system as sy
from spec.html import asset
from spec.invariants import INVARIANTS
from spec.state import Status
from spec.system_explore import SystemBounds, SystemNode, explore_system
from spec.system_invariants import SYSTEM_INVARIANTS, system_violations

#: The page's bounds: QueueSystem.cfg's, with one id and the clock to 2, so that a dead-letter
#: move, a redrive back and a retention that runs out are all reachable in a few hundred states.
PAGE_BOUNDS: Final = SystemBounds(ids=("a",), max_time=2)

#: What each bound means (one row of the page's bounds table each).
BOUND_MEANINGS: Final[Mapping[str, str]] = {
    "ids": "the message ids a producer may send (a message's body is its id)",
    "send_to": "the queues producers send to (2: the source; 1 is its dead-letter queue)",
    "redrives": "how many redrive moves the search makes at most (TLA+ RedriveIds)",
    "max_attempt": "receive is offered only while the head has had fewer deliveries than this "
    "(a bound of the explorer, not of the queue)",
    "visibility_timeouts": "the timeouts a receive may ask for: the deadline is now + timeout",
    "extend_timeouts": "the timeouts change_visibility may set (none: no change_visibility)",
    "delays": "the delays a send may ask for (0: visible at once)",
    "max_time": "the clock runs 0, 1, ... up to this; Tick stops there",
    "source_capacity": "at most this many active messages in the source: a send beyond is rejected",
    "source_max_receives": "a message of the source released after this many deliveries is "
    "moved to the dead-letter queue",
    "dlq_retention": "a message of the dead-letter queue ages out this long after its ORIGINAL "
    "enqueue time (kept by the move)",
}

#: The guides on the first screen: (title, TLA+ labels from the empty system, what the last
#: step shows). :func:`guides` keeps those whose path the graph has.
_GUIDES: Final = (
    (
        "A dead-letter move is one step",
        ("Send(2,a,0)", "Receive(2,1)", "Retry(2,a)"),
        "One edge changed both queues: a is DEAD in 2 and, in the same step, visible at the "
        "tail of 1, with its attempt and its enqueue time kept. No state has it in neither.",
    ),
    (
        "Redrive it back",
        ("Send(2,a,0)", "Receive(2,1)", "Retry(2,a)", "Redrive(1,a,2)"),
        "One edge again: a is MOVED in 1, and a new message (a fresh id, attempt 0, enqueued "
        "now) is visible in 2.",
    ),
    (
        "Retention counts from the first send",
        ("Send(2,a,0)", "Tick", "Receive(2,1)", "Retry(2,a)", "Expire(1)"),
        "a was sent a tick before it was moved; the move keeps its enqueue time, so the "
        "dead-letter queue's retention, counted from the send, has run out already: AgeOut, a "
        "terminal state of its own (counted from the move, a would still wait).",
    ),
)

_MOVE_STATUSES: Final = {
    Status.VISIBLE: "visible",
    Status.IN_FLIGHT: "in flight",
    Status.DELAYED: "delayed",
}


def _num(t: float | None) -> int | float | None:
    """A time as JSON: an integral float as an int (the explored clock is discrete)."""
    if t is None:
        return None
    return int(t) if float(t).is_integer() else t


def effects(before: sy.System, after: sy.System) -> tuple[list[str], list[str]]:
    """What a step did, in words, and the queues it changed (in creation order): each message
    whose status changed or that is new, named by what happened to it (``a sent to 2``, ``a
    delivered from 2 (attempt 1)``, ``a dead-lettered into 1``, ``AgeOut(1,a)``, ``a redriven
    to 2 as msg-1``)."""
    words: list[str] = []
    changed = [q for q in after.names() if before.state(q) != after.state(q)]
    for q in after.names():
        old_s = before.state(q)
        for m in after.state(q).messages:
            old = old_s.get(m.id)
            if old is None:
                src = after.source_of(q, m.id)
                redriven = [r for r in after.redriven if r[3] == m.id]
                if src is not None:
                    continue  # said by its DEAD half in the source
                if redriven:
                    continue  # said by its MOVED half in the dead-letter queue
                words.append(f"{m.id} sent to {q} ({_MOVE_STATUSES.get(m.status, m.status.value)})")
                continue
            if old.status is m.status:
                if old.deadline != m.deadline:
                    words.append(f"{m.id}'s deadline in {q} is now {_num(m.deadline)}")
                continue
            st = m.status
            if st is Status.DEAD:
                target = after.target(q)
                words.append(
                    f"{m.id} dead-lettered into {target}" if target else f"{m.id} dead in {q}"
                )
            elif st is Status.MOVED:
                dest = after.moved_to(q, m.id)
                assert dest is not None
                words.append(f"{m.id} redriven to {dest[0]} as {dest[1]}")
            elif st is Status.AGED_OUT:
                words.append(f"AgeOut({q},{m.id})")
            elif st is Status.IN_FLIGHT:
                words.append(f"{m.id} delivered from {q} (attempt {m.attempt})")
            elif st is Status.VISIBLE:
                was = "released" if old.status is Status.IN_FLIGHT else "visible"
                words.append(f"{m.id} {was} in {q}")
            else:
                words.append(f"{m.id} {st.value.lower()} in {q}")
    return words, changed


def _queue_json(system: sy.System, q: str) -> dict[str, Any]:
    s = system.state(q)
    c = s.config
    target = system.target(q)
    role = f"source, dead-letter target {target}" if target else "dead-letter queue"
    conf = [
        f"capacity {c.capacity}" if c.capacity is not None else "unbounded",
        f"max_receives {c.max_receives}" if c.max_receives is not None else "",
        f"retention {_num(c.retention)}" if c.retention is not None else "",
    ]
    msgs = []
    for m in s.messages:
        extra = []
        if (src := system.source_of(q, m.id)) is not None:
            extra.append(f"from {src}")
        if (moved := system.moved_to(q, m.id)) is not None:
            extra.append(f"to {moved[0]} as {moved[1]}")
        msgs.append(
            [
                m.id,
                m.status.value,
                m.attempt,
                _num(m.deadline),
                _num(m.enqueued_at),
                ", ".join(extra),
            ]
        )
    return {
        "name": q,
        "role": role,
        "config": ", ".join(x for x in conf if x),
        "visible": list(s.visible),
        "msgs": msgs,
    }


def _node_json(node: SystemNode) -> list[Any]:
    system, now = node
    return [now, [_queue_json(system, q) for q in system.names()], system_violations(system)]


def guides(
    nodes: Sequence[SystemNode], edges: Sequence[Sequence[tuple[str, int]]]
) -> list[tuple[str, list[tuple[str, int]], str]]:
    """The guides whose path the graph has: (title, [(label, node reached)], what to see)."""
    out = []
    for title, labels, text in _GUIDES:
        here, path = 0, []
        for label in labels:
            nxt = [m for lab, m in edges[here] if lab == label]
            if not nxt:
                break
            here = nxt[0]
            path.append((label, here))
        else:
            out.append((title, path, text))
    assert nodes, "a graph has its start node"
    return out


def page_data(bounds: SystemBounds = PAGE_BOUNDS) -> dict[str, Any]:
    """Everything the page's script reads, as JSON-able values."""
    g = explore_system(bounds)
    if g.violations:
        raise ValueError(f"the system breaks its invariants at {bounds}: {g.violations[:3]}")
    nodes = sorted(g.nodes, key=g.nodes.__getitem__)
    out_edges: list[list[tuple[str, int]]] = [[] for _ in nodes]
    for src, label, dst in sorted(g.edges):
        out_edges[src].append((label, dst))
    edges_json = []
    for n, row in enumerate(out_edges):
        cells = []
        for label, dst in sorted(row, key=lambda e: (_order(e[0]), e[0], e[1])):
            words, changed = effects(nodes[n][0], nodes[dst][0])
            cells.append([label, dst, "; ".join(words), len(changed) > 1])
        edges_json.append(cells)
    return {
        "states": g.states,
        "edgeCount": len(g.edges),
        "bounds": [
            [f.name, _shown(getattr(bounds, f.name)), BOUND_MEANINGS[f.name]]
            for f in fields(bounds)
        ],
        "invariants": [*SYSTEM_INVARIANTS, *(f"each queue's {n}" for n in INVARIANTS)],
        "guides": [[t, [list(p) for p in path], why] for t, path, why in guides(nodes, out_edges)],
        "nodes": [_node_json(n) for n in nodes],
        "edges": edges_json,
    }


_ACTIONS: Final = ("Send", "Receive", "Delete", "Retry", "ChangeVisibility", "Cancel", "Expire")


def _order(label: str) -> int:
    """Buttons in the layers' order of actions: Send, Receive, ..., Redrive, Tick last."""
    name = label.partition("(")[0]
    return _ACTIONS.index(name) if name in _ACTIONS else len(_ACTIONS) + (name == "Tick")


def _shown(v: object) -> str:
    if v is None:
        return "none"
    if isinstance(v, tuple):
        return ", ".join(_shown(x) for x in v) if v else "none"
    return str(v)


def page(bounds: SystemBounds = PAGE_BOUNDS) -> str:
    """The whole page: HTML with the one-queue page's CSS, this page's script and the data."""
    data = json.dumps(page_data(bounds), separators=(",", ":")).replace("</", "<\\/")
    title = "Two queues: state explorer"
    return (
        _TEMPLATE.replace("@TITLE@", html.escape(title))
        .replace("@CSS@", asset("explorer.css") + _CSS)
        .replace("@SCRIPT@", _SCRIPT)
        .replace("@DATA@", data)
    )


_CSS: Final = """
.AGED_OUT{border-color:#57606a;background:#eaeef2;font-style:italic}
.MOVED{border-color:#0550ae;background:#ddf4ff}
.queues{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:.6em}
.both{font:bold 11px system-ui,sans-serif;color:#fff;background:#0550ae;border-radius:3px;
 padding:0 .3em;margin-left:.4em}
#actions li{margin:.2em 0}
"""

_TEMPLATE: Final = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@TITLE@</title>
<style>@CSS@</style>
</head>
<body>
<header><h1>@TITLE@</h1>
<p class="note" id="summary"></p></header>
<main>
<div class="col" id="state-col">
<section><h2>The system <span class="clock" id="clock"></span></h2>
<div class="queues" id="queues"></div></section>
<section><h2>Invariants</h2><p id="invariants"></p></section>
</div>
<div class="col">
<section><h2>Start here</h2><div id="guides"></div></section>
<section><h2>Enabled actions</h2><ul id="actions"></ul></section>
<section><h2>History</h2>
<p><button id="back">back</button> <button id="reset">start again</button></p>
<ol id="history"></ol></section>
<section><h2>The bounds</h2><table id="bounds"></table></section>
</div>
</main>
<script type="application/json" id="data">@DATA@</script>
<script>@SCRIPT@</script>
</body>
</html>
"""

_SCRIPT: Final = r"""
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
let hist = [[0, null]];
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
function go(n, label) { hist.push([n, label]); draw(); }
function drawQueue(q, now) {
  const box = el("div");
  box.appendChild(el("h3", "queue " + q.name + " (" + q.role + ")"));
  box.appendChild(el("p", q.config, "note"));
  const order = q.visible;
  const msgs = q.msgs.slice().sort((x, y) => {
    const a = order.indexOf(x[0]), b = order.indexOf(y[0]);
    return (a < 0 ? 99 : a) - (b < 0 ? 99 : b);
  });
  const row = el("div", null, "row");
  if (!msgs.length) row.appendChild(el("span", "empty", "empty"));
  for (const [id, st, att, dl, enq, extra] of msgs) {
    let t = id + " " + st + " attempt " + att;
    if (dl !== null) t += " deadline " + dl;
    t += " sent " + enq;
    if (extra) t += " (" + extra + ")";
    const m = el("span", t, "msg " + st);
    if (st === "IN_FLIGHT" && dl !== null && dl <= now) m.classList.add("overdue");
    row.appendChild(m);
  }
  box.appendChild(row);
  return box;
}
function draw() {
  const [n] = hist[hist.length - 1];
  const [now, queues, bad] = D.nodes[n];
  document.getElementById("clock").textContent = "now = " + now + " (state " + n + ")";
  const qs = document.getElementById("queues");
  qs.replaceChildren(...queues.slice().reverse().map(q => drawQueue(q, now)));
  const inv = document.getElementById("invariants");
  inv.replaceChildren();
  if (bad.length) for (const b of bad) inv.appendChild(el("div", b, "violated"));
  else inv.appendChild(el("span", "ok: " + D.invariants.join(", "), "ok"));
  const acts = document.getElementById("actions");
  acts.replaceChildren();
  D.edges[n].forEach(([label, to, what, both], k) => {
    const li = el("li");
    const b = el("button", label);
    b.title = "to state " + to;
    b.addEventListener("click", () => go(to, label));
    li.appendChild(b);
    if (both) li.appendChild(el("span", "one step, both queues", "both"));
    if (what) li.appendChild(el("div", what, "note"));
    acts.appendChild(li);
  });
  if (!D.edges[n].length) acts.appendChild(el("li", "none: the bounds end here", "empty"));
  const h = document.getElementById("history");
  h.replaceChildren();
  hist.forEach(([m, label], k) => {
    const li = el("li", (label || "the empty system") + " \u2192 state " + m);
    if (k === hist.length - 1) li.className = "current";
    li.addEventListener("click", () => { hist = hist.slice(0, k + 1); draw(); });
    h.appendChild(li);
  });
  history.replaceState(null, "", "#state=" + n);
}
function init() {
  document.getElementById("summary").textContent =
    D.states + " states and " + D.edgeCount + " edges: every state the spec's system of two " +
    "queues (spec.system_explore, the graph TLC checks in tla/QueueSystem.tla) reaches at the " +
    "bounds below. Each action is one step; a blue mark shows a step that changes both queues.";
  const gs = document.getElementById("guides");
  for (const [title, path, why] of D.guides) {
    const p = el("p");
    p.appendChild(el("strong", title + ": "));
    path.forEach(([label, to], k) => {
      const a = el("a", label);
      a.href = "#state=" + to;
      a.addEventListener("click", ev => {
        ev.preventDefault();
        hist = [[0, null], ...path.slice(0, k + 1).map(([l, to2]) => [to2, l])];
        draw();
      });
      p.appendChild(a);
      if (k < path.length - 1) p.appendChild(el("span", " \u2192 ", "arrow"));
    });
    p.appendChild(el("div", why, "note"));
    gs.appendChild(p);
  }
  const t = document.getElementById("bounds");
  t.appendChild(el("tr")).append(el("th", "bound"), el("th", "value"), el("th", "meaning"));
  for (const [name, v, m] of D.bounds) {
    t.appendChild(el("tr")).append(el("td", name), el("td", v), el("td", m));
  }
  document.getElementById("back").addEventListener("click", () => {
    if (hist.length > 1) { hist.pop(); draw(); }
  });
  document.getElementById("reset").addEventListener("click", () => { hist = [[0, null]]; draw(); });
  const m = /state=(\d+)/.exec(location.hash);
  if (m && +m[1] < D.nodes.length) hist = [[0, null], [+m[1], "from the link"]];
  draw();
}
init();
"""


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m spec.html_system OUT``: write the page at :data:`PAGE_BOUNDS` to ``OUT``."""
    parser = argparse.ArgumentParser(
        prog="python -m spec.html_system",
        description="Write the explorer page of two queues (source and dead-letter queue).",
    )
    parser.add_argument("out", type=Path, help="the page to write, e.g. docs/explorer-system.html")
    args = parser.parse_args(argv)
    args.out.write_text(page(), encoding="utf-8")
    print(f"wrote {args.out}: {explore_system(PAGE_BOUNDS).states} states at {PAGE_BOUNDS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
