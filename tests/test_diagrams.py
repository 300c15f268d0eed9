"""The walkthrough's diagrams are generated from the models and cannot go stale.

``tools/diagrams.py`` draws the message lifecycle from the spec's reachable graph and the
duplicate-delivery race from TLC's counterexample to ``ExactlyOnce``. These tests regenerate
both and compare them with the committed files and with the blocks in ``docs/walkthrough.md``,
and check the lifecycle against the contract's table (section 2), written out by hand here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import tools.diagrams as diagrams
from spec.explore import Bounds
from tla.counterexample import parse_trace
from tools.diagrams import (
    LIFECYCLE,
    LIFECYCLE_BOUNDS,
    RACE,
    TRACE,
    WALKTHROUGH,
    Transition,
    fenced,
    lifecycle_transitions,
    render_lifecycle,
    render_race,
    run_race_trace,
    splice,
)

needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="java is not installed")

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
