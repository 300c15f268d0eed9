"""The walkthrough's diagrams and the explorer page are generated from the models and cannot go
stale.

``tools/diagrams.py`` draws the message lifecycle from the spec's reachable graph and the
duplicate-delivery race from TLC's counterexample to ``ExactlyOnce``. These tests regenerate
both and compare them with the committed files and with the blocks in ``docs/walkthrough.md``,
and check the lifecycle against the contract's table (section 2), written out by hand here.

It also writes ``docs/explorer.html`` (:mod:`spec.html`): the tests below check that the
committed page is what the tool writes, that its graphs are the explorer's (every edge of
``spec.explore.explore``), that TLC's counterexamples land on the graph nodes they should, and
that ``python -m spec explore --html`` writes a page. ``tests/test_explorer_browser.py`` clicks
through the page in a real browser.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import tools.diagrams as diagrams
from spec.__main__ import main as spec_main
from spec.explore import Bounds, explore
from spec.html import GraphSpec, asset, display_label, explore_graph, page_data
from spec.operations import REGISTRY
from tla.counterexample import parse_trace
from tla.explorer import load_trace
from tla.tlc import available as tlc_available
from tools.diagrams import (
    EXPLORER,
    EXPLORER_GRAPHS,
    EXPLORER_TRACES,
    LIFECYCLE,
    LIFECYCLE_BOUNDS,
    RACE,
    ROOT,
    TRACE,
    WALKTHROUGH,
    Transition,
    committed_traces,
    fenced,
    lifecycle_transitions,
    render_explorer,
    render_lifecycle,
    render_race,
    run_explorer_traces,
    run_race_trace,
    splice,
)

needs_java = pytest.mark.skipif(not tlc_available(), reason="TLC needs Java and tla2tools.jar")

V, F, D, C, X, START = "VISIBLE", "IN_FLIGHT", "DONE", "CANCELLED", "DEAD", "[*]"
W = "DELAYED"

#: The contract's table (section 2), projected to one message: every (before, action, after).
#: A batch acts on the message as its single operation does; purge cancels it from any active
#: state; a delay firing (Expire) makes a delayed message visible.
CONTRACT = {
    *(Transition(START, a, after) for a in ("Send", "SendBatch") for after in (V, W)),
    Transition(W, "Expire", V),
    Transition(W, "Cancel", C),
    Transition(W, "Purge", C),
    Transition(V, "Receive", F),
    Transition(V, "ReceiveBatch", F),
    Transition(V, "Cancel", C),
    Transition(V, "Purge", C),
    Transition(F, "Delete", D),
    Transition(F, "DeleteBatch", D),
    Transition(F, "Cancel", C),
    Transition(F, "Purge", C),
    Transition(F, "ChangeVisibility(t≠0)", F),
    Transition(F, "ChangeVisibilityBatch", F),
    # release: to the visible tail, or dead-lettered once attempt >= max_receives
    *(
        Transition(F, a, after)
        for a in ("Retry", "ChangeVisibility(0)", "ChangeVisibilityBatch", "Expire")
        for after in (V, X)
    ),
}


def test_lifecycle_has_exactly_the_transitions_the_contract_allows() -> None:
    edges = lifecycle_transitions()
    assert set(edges) == CONTRACT
    terminal = {D, C, X}
    assert not [t for t in edges if t.before in terminal]  # e.g. no DONE -> VISIBLE
    assert not [t for t in edges if t.before == W and t.after in (F, D, X)]  # DelayHonoured
    mr = LIFECYCLE_BOUNDS.max_receives
    assert mr is not None
    for t, attempts in edges.items():
        if t.after == X:
            assert attempts == {mr}, t  # dies only on the release after max_receives deliveries
        elif t.before == F and t.after == V:
            assert max(attempts) < mr, t  # survives below it


def test_lifecycle_is_computed_from_the_spec_not_drawn() -> None:
    # Other bounds, another picture: without max_receives nothing ever dies, without
    # change_visibility bounds there is no such arrow.
    edges = lifecycle_transitions(Bounds(ids=("a",), capacity=1, max_attempt=2, max_time=2))
    assert {t.after for t in edges} == {V, F, D, C}
    assert not any(t.action.startswith("ChangeVisibility") for t in edges)
    text = render_lifecycle(edges, Bounds(ids=("a",)))
    assert "DEAD" not in text.replace("DEAD --> [*]", "")
    # Without delays nothing is DELAYED; with one id no batch of two distinct ids is sent.
    assert "DELAYED" not in text and "SendBatch" not in text
    # Only the first id's message is drawn: b's own transitions leave it as it was.
    two = lifecycle_transitions(Bounds(ids=("a", "b"), capacity=2, max_attempt=1, max_time=1))
    assert not [t for t in two if t.before == t.after]
    assert Transition(START, "Send", V) in two


def test_the_committed_lifecycle_diagram_is_up_to_date() -> None:
    assert LIFECYCLE.read_text(encoding="utf-8") == render_lifecycle(lifecycle_transitions())


def test_the_lifecycle_diagram_separates_release_to_visible_from_release_to_dead() -> None:
    lines = LIFECYCLE.read_text(encoding="utf-8").splitlines()
    assert "stateDiagram-v2" in lines
    to_visible = [x for x in lines if x.strip().startswith("IN_FLIGHT --> VISIBLE")]
    to_dead = [x for x in lines if x.strip().startswith("IN_FLIGHT --> DEAD")]
    assert len(to_visible) == len(to_dead) == 1
    assert "attempt below max_receives" in to_visible[0]
    assert "attempt = max_receives" in to_dead[0]
    for action in ("Retry", "ChangeVisibility(0)", "ChangeVisibilityBatch", "Expire"):
        assert action in to_visible[0] and action in to_dead[0]
    assert "    DELAYED --> VISIBLE : Expire" in lines
    assert not [x for x in lines if x.strip().startswith(("DONE -->", "CANCELLED -->", "DEAD -->"))
                and not x.strip().endswith("[*]")]  # fmt: skip


def test_the_committed_race_diagram_is_drawn_from_the_committed_trace() -> None:
    assert RACE.read_text(encoding="utf-8") == render_race(
        parse_trace(TRACE.read_text(encoding="utf-8"))
    )


def test_the_race_diagram_shows_the_stale_delete_losing() -> None:
    lines = [x.strip() for x in RACE.read_text(encoding="utf-8").splitlines()]
    assert lines[0] == "sequenceDiagram"

    def at(text: str) -> int:
        return lines.index(text)

    # Order of events, as TLC found them: c1 receives, the sweeper releases, c1's receipt is
    # stale, c2 receives attempt 2, c1's delete is FALSE, c2's is TRUE.
    order = [
        at("Q-->>c1: a, attempt 1, receipt (a, 1)"),
        at("S->>Q: expire(now=1)"),
        at("Note over c1: receipt (a, 1) is STALE from here on"),
        at("Q-->>c2: a, attempt 2, receipt (a, 2)"),
        at("c1->>Q: delete(receipt (a, 1))"),
        at("Q-->>c2: TRUE"),
    ]
    assert order == sorted(order)
    assert lines[at("c1->>Q: delete(receipt (a, 1))") + 1] == "Q-->>c1: FALSE"
    assert lines[-1] == "Note over c1,c2: a has been processed TWICE"


def test_the_walkthrough_shows_the_committed_diagrams() -> None:
    doc = WALKTHROUGH.read_text(encoding="utf-8")
    assert fenced(doc, "lifecycle") == LIFECYCLE.read_text(encoding="utf-8")
    assert fenced(doc, "duplicate_race") == RACE.read_text(encoding="utf-8")


def test_splice_replaces_only_the_marked_block() -> None:
    doc = "intro\n<!-- BEGIN x -->\n```mermaid\nold\n```\n<!-- END x -->\nrest\n"
    new = splice(doc, "x", "graph TD\n")
    assert new == "intro\n<!-- BEGIN x -->\n```mermaid\ngraph TD\n```\n<!-- END x -->\nrest\n"
    assert fenced(new, "x") == "graph TD\n"
    with pytest.raises(ValueError, match="markers"):
        splice(doc, "y", "graph TD\n")


def test_check_mode_reports_a_stale_file_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("LIFECYCLE", "RACE", "TRACE"):
        copy = tmp_path / getattr(diagrams, name).name
        copy.write_text(getattr(diagrams, name).read_text(encoding="utf-8"), encoding="utf-8")
        monkeypatch.setattr(diagrams, name, copy)
    explorer = tmp_path / "explorer.html"
    explorer.write_text(EXPLORER.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(diagrams, "EXPLORER", explorer)
    monkeypatch.setattr(diagrams, "ROOT", tmp_path)
    monkeypatch.setattr(diagrams, "WALKTHROUGH", tmp_path / "walkthrough.md")
    assert diagrams.main(["--check", "--no-tlc"]) == 0
    assert "up to date" in capsys.readouterr().out

    stale = tmp_path / "lifecycle.mmd"
    stale.write_text(
        stale.read_text(encoding="utf-8").replace("Delete", "Remove"), encoding="utf-8"
    )
    assert diagrams.main(["--check", "--no-tlc"]) == 1
    assert "stale lifecycle.mmd" in capsys.readouterr().out
    assert "Remove" in stale.read_text(encoding="utf-8")  # --check wrote nothing
    assert diagrams.main(["--no-tlc"]) == 0
    assert stale.read_text(encoding="utf-8") == LIFECYCLE.read_text(encoding="utf-8")


@needs_java
def test_the_committed_trace_is_what_tlc_finds_today() -> None:
    # TLC (one worker, breadth-first) finds the shortest counterexample; source positions in
    # the action headers may move, the states and actions may not.
    fresh = parse_trace(run_race_trace())
    assert fresh == parse_trace(TRACE.read_text(encoding="utf-8"))
    assert render_race(fresh) == RACE.read_text(encoding="utf-8")


# -- the explorer page ---------------------------------------------------------------------------


def _data(text: str) -> dict[str, Any]:
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.DOTALL)
    assert m is not None, "the page has no data"
    data: dict[str, Any] = json.loads(m.group(1))
    return data


def test_the_committed_explorer_page_is_what_the_tool_writes() -> None:
    text = EXPLORER.read_text(encoding="utf-8")
    assert text == render_explorer(committed_traces()), "run: python -m tools.diagrams --no-tlc"
    # One file that needs nothing else: no network, no server, under 2 MB.
    assert len(text.encode()) < 2_000_000
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", text)
    assert "fetch(" not in text and "XMLHttpRequest" not in text


def test_the_page_inlines_its_asset_files_and_leaves_no_placeholder() -> None:
    # spec/explorer/ holds the skeleton; the page is still the one file, with each asset in it.
    text = EXPLORER.read_text(encoding="utf-8")
    for name in ("explorer.css", "explorer.js"):
        body = asset(name)
        assert body.strip() and body in text, name
        assert body == (ROOT / "spec" / "explorer" / name).read_text(encoding="utf-8")
    head = asset("explorer.html").partition("@TITLE@")[0]
    assert text.startswith(head) and head.startswith("<!DOCTYPE html>")
    assert not re.search(r"@(?:TITLE|CSS|SCRIPT|DATA)@", text)


def test_the_page_holds_the_spec_graph_and_its_edges() -> None:
    data = page_data(EXPLORER_GRAPHS[:1])
    bounds = EXPLORER_GRAPHS[0].bounds
    g = explore(bounds, stop_at_first_violation=False)
    page_graph = data["graphs"]["std"]
    assert len(page_graph["nodes"]) == g.states
    edges = {(n, e[1], e[2]) for n, row in enumerate(page_graph["edges"]) for e in row}
    assert edges == g.edges
    # Every state invariant that means something on a standard queue, all holding.
    assert page_graph["invariants"] == [
        "OneState",
        "CapacityBound",
        "OneLiveReceipt",
        "AttemptsCount",
        "FifoVisible",
        "IdsReserved",
        "DelayHonoured",
    ]
    assert not any(node[-1] for node in page_graph["nodes"])
    assert not any(len(e) > 3 for row in page_graph["edges"] for e in row)  # no step violated


def test_actions_carry_the_registry_names() -> None:
    ops = {op.name: op for op in REGISTRY}
    assert display_label(ops["receive"], (1,)) == "receive(vt=1)"
    assert display_label(ops["receive"], (None,)) == "receive(vt=None)"
    assert display_label(ops["delete"], ("a", 1)) == "delete(a,1)"
    assert display_label(ops["send"], ("a", "a", 0)) == "send(a,delay=0)"
    assert display_label(ops["send"], ("a", "a", None, "a_b", None)) == "send(a,group=a_b)"
    assert (
        display_label(ops["change_visibility"], ("a", 2, 0)) == "change_visibility(a,2,timeout=0)"
    )
    assert display_label(ops["advance"], (1,)) == "advance(dt=1)"
    assert display_label(ops["expire"], ()) == "expire()"
    assert display_label(ops["send_batch"], ((("a", "a", 0), ("b", "b", 1)),)) == (
        "send_batch([(a,0),(b,1)])"
    )
    assert display_label(ops["delete_batch"], ((("a", 1), ("b", 1)),)) == (
        "delete_batch([(a,1),(b,1)])"
    )
    # Every label of one node is distinct, so a button names one edge.
    graph = explore_graph(GraphSpec("std", "std", Bounds(batch=2, extend_timeouts=(0, 2))))
    for row in graph.edges:
        assert len({d for d, _, _, _ in row}) == len(row)


def test_tlc_counterexamples_land_on_the_graph_they_belong_to() -> None:
    data = _data(EXPLORER.read_text(encoding="utf-8"))
    cexs = {c["key"]: c for c in data["cexs"]}
    assert set(cexs) == {t.key for t in EXPLORER_TRACES}
    assert {k: c["graph"] for k, c in cexs.items()} == {
        "exactly_once": "std",
        "delete_by_id": "std",
        "lost_wakeup": None,  # threaded models: a list of TLC's states
        "lost_wakeup_notify_once": None,
        "fifo_retry_late": "fifo",
        "fifo_slow_consumer": "fifo",
        "fifo_lost_wakeup": None,
    }
    labels = [s["label"] for s in cexs["exactly_once"]["steps"]]
    assert labels == [
        None,
        "send(a,delay=0)",
        "receive(vt=1)",
        "advance(dt=1)",
        "expire()",  # TLC's Sweep, not the retry(a,1) that reaches the same state
        "receive(vt=1)",
        None,  # c1's stale delete: no step of the queue
        "delete(a,2)",
    ]
    # DeleteById ends where the right delete would have: the bug is who acted, not the state.
    assert cexs["delete_by_id"]["steps"][-1]["node"] == cexs["exactly_once"]["steps"][-1]["node"]
    assert cexs["delete_by_id"]["violation"] == "Action property StaleReceiptNeverActs is violated."
    for c in cexs.values():
        assert c["violation"].endswith("is violated."), c["key"]
        assert all(s["node"] is None for s in c["steps"]) == (c["graph"] is None)


def test_a_trace_of_other_bounds_is_not_linked() -> None:
    # The ExactlyOnce trace needs a visibility timeout of 1: on a graph whose receive never
    # expires it is no path, so it is shown as a list of TLC's states.
    trace = load_trace(TRACE.read_text(encoding="utf-8"), "eo")
    data = page_data([GraphSpec("std", "vt none", Bounds(visibility_timeouts=(None,)))], [trace])
    (cex,) = data["cexs"]
    assert cex["graph"] is None and cex["steps"][0]["node"] is None
    with pytest.raises(ValueError, match="not a TLC trace"):
        load_trace("hello", "x")


def test_spec_explore_writes_a_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.html"
    assert spec_main(["explore", "--ids", "1", "--html", str(out), "--trace", str(TRACE)]) == 0
    assert f"html:         {out}" in capsys.readouterr().out
    data = _data(out.read_text(encoding="utf-8"))
    assert data["order"] == ["std"]
    (cex,) = data["cexs"]
    assert cex["key"] == "exactly_once" and cex["graph"] == "std"
    bad = tmp_path / "bad.trace"
    bad.write_text("not a trace", encoding="utf-8")
    assert spec_main(["explore", "--html", str(out), "--trace", str(bad)]) == 2
    assert "bad.trace" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        spec_main(["explore", "--trace", str(TRACE)])  # --trace needs --html


@needs_java
def test_the_committed_explorer_traces_are_what_tlc_finds_today() -> None:
    fresh = run_explorer_traces()
    assert set(fresh) == {t.key for t in EXPLORER_TRACES if t.owned} - {"exactly_once"}
    for t in EXPLORER_TRACES:
        if t.key in fresh:
            assert parse_trace(fresh[t.key]) == parse_trace(t.path.read_text(encoding="utf-8"))
