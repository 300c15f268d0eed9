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
