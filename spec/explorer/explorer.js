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

// TLC's values in the page's notation. TLC prints <<a, 1>>, (c1 :> x @@ c2 :> y),
// [f |-> x], {x, y}, "text", TRUE; the page writes a receipt-like pair (an id and a number) as
// (a, 1), another sequence as [a, b], a function as c1 → x, c2 → y, a record as
// {f: x}, a set as {x, y}, nothing (an empty sequence, set or function, None, NoReceipt) as
// none, a string without its quotes and TRUE/FALSE as Python's True/False. tlcRead returns
// null for text it cannot read, which is then shown as TLC printed it.
const TLC_TOKEN = /\s*(-?\d+|"(?:[^"\\]|\\.)*"|<<|>>|\|->|:>|@@|[\[\]{}(),]|[A-Za-z_]\w*)/y;
function tlcRead(text) {
  const toks = [];
  TLC_TOKEN.lastIndex = 0;
  const src = text.trim();
  while (TLC_TOKEN.lastIndex < src.length) {
    const m = TLC_TOKEN.exec(src);
    if (!m) return null;
    toks.push(m[1]);
  }
  let i = 0;
  const take = (want) => {
    const t = toks[i++];
    if (t === undefined || (want !== undefined && t !== want)) throw new Error("bad value");
    return t;
  };
  const items = (close, one) => {
    const out = [];
    while (toks[i] !== close) {
      out.push(one());
      if (toks[i] === ",") take(",");
      else if (toks[i] !== close) throw new Error("bad value");
    }
    take(close);
    return out;
  };
  const value = () => {
    const t = take();
    if (t === "<<") return {seq: items(">>", value)};
    if (t === "{") return {set: items("}", value)};
    if (t === "[") return {rec: items("]", () => { const k = take(); take("|->");
      return [k, value()]; })};
    if (t === "(") {
      const fn = [];
      for (;;) {
        const k = value();
        take(":>");
        fn.push([k, value()]);
        if (toks[i] === "@@") take("@@");
        else break;
      }
      take(")");
      return {fn};
    }
    if (/^-?\d+$/.test(t)) return {num: +t};
    if (t[0] === '"') return {str: JSON.parse(t)};
    return {name: t};
  };
  try {
    const v = value();
    return i === toks.length ? v : null;
  } catch (err) {
    return null;
  }
}
function tlcShow(v, nested) {
  const all = (xs) => xs.map((x) => tlcShow(x, true)).join(", ");
  if (v.num !== undefined) return String(v.num);
  if (v.str !== undefined) return v.str;
  if (v.name !== undefined) return v.name === "None" || v.name === "NoReceipt" ? "none"
    : v.name === "TRUE" ? "True" : v.name === "FALSE" ? "False" : v.name;
  if (v.seq) {
    if (!v.seq.length) return "none";
    return v.seq.length === 2 && v.seq[1].num !== undefined && v.seq[0].num === undefined
      ? "(" + all(v.seq) + ")" : "[" + all(v.seq) + "]";
  }
  if (v.set) return v.set.length ? "{" + all(v.set) + "}" : "none";
  if (v.rec) return "{" + v.rec.map(([k, x]) => k + ": " + tlcShow(x, true)).join(", ") + "}";
  const fn = v.fn.map(([k, x]) => tlcShow(k, true) + " \u2192 " + tlcShow(x, true)).join(", ");
  return nested ? "{" + fn + "}" : fn;
}
const tlcText = (text) => { const v = tlcRead(text); return v === null ? text : tlcShow(v); };
// A TLC function's entries (key -> value, both in the page's notation); {} if not a function.
const tlcMap = (text) => {
  const v = text === undefined ? null : tlcRead(text);
  if (v === null) return {};
  const pairs = v.fn || v.rec || [];
  return Object.fromEntries(pairs.map(([k, x]) => [typeof k === "string" ? k : tlcShow(k, true),
    x]));
};
// One row of TLC's variables: the name, the value in the page's notation (TLC's on hover).
const varRow = (k, v, changed) => el("tr", {class: changed ? "changed" : "", "data-var": k},
  el("td", {text: k}), el("td", {text: tlcText(v), title: "TLC: " + v}));

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
      el("code", {text: name}), el("span", {class: "meaning", text: ": " + g.meanings[name]}),
      bad[name] ? el("div", {class: "violated", text: bad[name]}) : ""));
  }
  const prev = view.pos > 0 ? view.hist[view.pos - 1].node : null;
  const si = $("step-invariants");
  const e = prev === null ? null : edges(g, prev).find((x) => x.to === n &&
    x.label === view.hist[view.pos].label);
  const halves = "The halves about history (" + g.stepInvariants.join(", ") + ") are checked " +
    "on each step: ";
  if (!e) si.textContent = halves + "there is no step into this state on this path.";
  else if (!e.bad.length) si.textContent = halves + "they hold on the step " + e.label + ".";
  else si.replaceChildren(el("span", {class: "violated", text: "Step " + e.label +
    " violates: " + e.bad.join("; ")}));
  // BatchAtomic is about the batch steps only: it has no line in the list above.
  if (g.stepInvariants.includes("BatchAtomic")) si.append(el("div", {class: "meaning",
    text: "BatchAtomic: " + g.meanings.BatchAtomic}));
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

function renderBounds(g) {
  $("bounds-title").textContent = "the " + g.title;
  $("bounds").replaceChildren(el("tr", {}, ...["bound", "value", "what it means"].map((h) =>
    el("th", {text: h}))), ...g.bounds.map(([name, value, meaning]) => el("tr",
    {"data-bound": name}, el("td", {text: name}), el("td", {text: value}),
    el("td", {text: meaning}))));
}

function renderTour(g) {
  // The guide's path, each step a link to the state it reaches (with the path as its history);
  // the steps the history has taken so far are ticked, and what the last one shows is said.
  const box = $("tour");
  box.replaceChildren();
  const taken = traceMode() ? [] : view.hist.slice(1, view.pos + 1).map((h) => h.label);
  let done = view.hist[0].node === 0 ? 0 : -1;
  while (done >= 0 && done < g.tour.length && taken[done] === g.tour[done][0]) done += 1;
  // Past the guide's last step along it (a counterexample goes on to its end): not left.
  const beyond = done === g.tour.length && taken.length > done;
  if (done >= 0 && taken.length > done && !beyond) done = -1;  // the history has left the path
  g.tour.forEach(([label], k) => {
    const path = g.tour.slice(0, k + 1).map((t) => t[0]).join("/");
    if (k) box.append(el("span", {class: "arrow", text: "\u2192"}));
    box.append(el("span", {class: "step" + (k < done ? " done" : k === done ? " next" : ""),
      "data-label": label}, (k < done ? "\u2713 " : k + 1 + ". "),
      el("a", {href: "#state=" + view.graph + ":" + path, text: label})));
  });
  const now = $("tour-now");
  const cx = DATA.cexs.find((c) => c.graph === view.graph);
  const then = cx ? " Then load TLC's counterexample \u201c" + cx.title + "\u201d (top of the " +
    "page) and step it with next." : "";
  if (!g.tour.length) now.textContent = "These bounds have no path to a duplicate delivery: " +
    "take any action below.";
  else if (done <= 0) now.textContent = done === 0 ? "Press the buttons under Enabled " +
    "actions (or click the steps above) in this order, and watch the state on the left."
    : "You have left the guide's path: restart (under History) to follow it again.";
  else if (beyond) now.textContent = "The guide's " + done + " steps are done (the " +
    "duplicate delivery, state " + (done + 1) + "); the history goes on past them: " +
    (cex() ? "the rest of TLC's counterexample, to its verdict." : "restart (under History) " +
    "to follow the guide again.");
  else now.textContent = "Step " + done + (cex() ? " (the counterexample's state " +
    (done + 1) + ")" : "") + ": " + g.tour[done - 1][1] +
    (done < g.tour.length ? " Next: " + g.tour[done][0] + "." : then);
}

function renderHistory(g) {
  const ol = $("history");
  ol.replaceChildren();
  if (traceMode()) {
    // A threaded trace is not a path of the graph: no history of the explorer goes with it.
    ol.append(el("li", {class: "empty", text: "none: a threaded model's trace is not a path " +
      "of the spec's graph (its steps are listed with the counterexample)"}));
    $("back").disabled = $("forward").disabled = true;
    return;
  }
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
  for (const [k, v] of st.vars) t.append(varRow(k, v, prev && old[k] !== v));
}

function renderCex() {
  const c = cex();
  $("cex").hidden = c === null;
  if (c === null) return;
  $("cex-select").value = c.key;
  $("cex-title").textContent = "Counterexample: " + c.title + " (" + c.model + ")";
  $("cex-action").textContent = "TLC's step " + c.steps[view.step].n + ": " +
    c.steps[view.step].action;
  $("cex-about").textContent = c.about;
  $("cex-where").textContent = c.graph !== null
    ? "Every state of this trace is a state of the graph \u201c" + DATA.graphs[c.graph].title +
      "\u201d: stepping it moves the explorer. TLC's variables beyond the queue are " +
      "shown under the queue's state."
    : "A threaded model's trace: a steppable list of TLC's states (not the spec's graph).";
  const last = c.steps.length - 1;
  // Counted as TLC counts its states (State 1 is the initial one): after the guide's step k,
  // the counterexample is at state k + 1, and the guide says both.
  $("cex-step").textContent = "state " + (view.step + 1) + " of " + c.steps.length;
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
}

function renderCexExtra() {
  // A linked trace's variables beyond the queue (the consumers' held receipts, finished), under
  // the queue's state, where they stay in view while the trace steps.
  const c = cex();
  const extra = $("cex-extra");
  extra.replaceChildren();
  extra.hidden = c === null || c.graph === null;
  if (extra.hidden) return;
  const queueVars = new Set(["msgs", "visible", "inFlight", "dead", "delayed", "timers", "now"]);
  const prev = view.step > 0 ? Object.fromEntries(c.steps[view.step - 1].vars) : {};
  const t = el("table", {id: "cex-vars"}, el("tr", {}, el("th", {text: "TLC variable"}),
    el("th", {text: "value"})));
  for (const [k, v] of c.steps[view.step].vars) if (!queueVars.has(k)) {
    t.append(varRow(k, v, view.step > 0 && prev[k] !== v));
  }
  extra.append(el("h2", {text: "TLC's variables beyond the queue (step " +
    c.steps[view.step].n + ")"}), t);
}

function renderThreads(c) {
  // A threaded model's threads, when it has them: who runs which operation where, who sleeps.
  const box = $("threads");
  box.replaceChildren();
  const vars = Object.fromEntries(c.steps[view.step].vars);
  if (!("at" in vars && "op" in vars)) return;
  const at = tlcMap(vars.at), op = tlcMap(vars.op), arg = tlcMap(vars.arg);
  const sleeping = {};
  for (const [cond, set] of Object.entries(tlcMap(vars.waiting))) {
    for (const th of set.set || []) sleeping[tlcShow(th, true)] = cond;
  }
  const shown = (v) => (v === undefined ? "" : tlcShow(v, true));
  const t = el("table", {id: "thread-table"}, el("tr", {}, ...["thread", "operation", "at",
    "argument", "asleep on"].map((h) => el("th", {text: h}))));
  for (const th of Object.keys(at)) t.append(el("tr", {"data-thread": th}, ...[th, shown(op[th]),
    shown(at[th]), shown(arg[th]), sleeping[th] || ""].map((x) => el("td", {text: x}))));
  box.append(el("p", {class: "note", text: "lock held by: " +
    (vars.lock === undefined ? "?" : tlcText(vars.lock)) +
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
  renderBounds(g);
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
    $("receipts").replaceChildren(el("li", {class: "empty", text: "none: a threaded model's " +
      "trace is not a path of the spec's graph"}));
  } else {
    const n = current();
    renderQueue(g, n);
    renderActions(g, n);
    renderInvariants(g, n);
    renderReceipts(g);
  }
  renderHistory(g);
  renderTour(g);
  renderCex();
  renderCexExtra();
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
  } else {
    // Nothing of the path before stays on the page: closing the trace returns to the empty
    // queue of the graph shown.
    view.hist = [{node: 0, label: null}];
  }
  view.pos = 0;
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
  $("cex-load").addEventListener("click", () => {
    cexOpen(DATA.cexs.findIndex((c) => c.key === $("cex-select").value), 0);
    // The player heads the right column, the state is on the left: both in view from the top.
    window.scrollTo(0, 0);
  });
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
