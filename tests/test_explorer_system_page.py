"""The explorer page of two queues, ``docs/explorer-system.html`` (:mod:`spec.html_system`),
checked without a browser: the committed page is what the module writes, its graph is
:func:`spec.system_explore.explore_system`'s at the page's bounds, a dead-letter move and a
redrive move are each one edge that changes both queues, and its guides end where they say.
"""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from spec import html_system
from spec.html_system import BOUND_MEANINGS, PAGE_BOUNDS, effects, page, page_data
from spec.state import Status
from spec.system_explore import SystemBounds, explore_system

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "explorer-system.html"
REGENERATE = "run: .venv/bin/python -m spec.html_system docs/explorer-system.html"


def _data(text: str) -> dict[str, Any]:
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.DOTALL)
    assert m is not None, "the page has no data"
    data: dict[str, Any] = json.loads(m.group(1))
    return data


def test_the_committed_page_is_what_the_module_writes() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert text == page(), REGENERATE
    # One light file that needs nothing else: no network, no server, no placeholder left.
    assert len(text.encode()) < 500_000
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", text)
    assert "fetch(" not in text and "XMLHttpRequest" not in text
    assert not re.search(r"@(?:TITLE|CSS|SCRIPT|DATA)@", text)


def test_the_main_writes_the_page_and_wants_one_path(tmp_path: Path) -> None:
    out = tmp_path / "p.html"
    assert html_system.main([str(out)]) == 0
    assert out.read_text(encoding="utf-8") == PAGE.read_text(encoding="utf-8")
    with pytest.raises(SystemExit) as no_path:
        html_system.main([])
    assert no_path.value.code == 2


def test_the_page_holds_the_system_graph_at_its_bounds_a_few_hundred_states() -> None:
    g = explore_system(PAGE_BOUNDS)
    data = _data(PAGE.read_text(encoding="utf-8"))
    assert data["states"] == g.states == len(data["nodes"]) and 100 <= g.states <= 500
    assert data["edgeCount"] == len(g.edges)
    shown = {(n, label, to) for n, row in enumerate(data["edges"]) for label, to, _, _ in row}
    assert shown == g.edges
    # The count the reader sees is the data's, written by the script (not typed in the page).
    assert 'D.states + " states and "' in PAGE.read_text(encoding="utf-8")
    # Every action the layers name is on some edge, and so is an AgeOut in a sweep.
    names = {label.partition("(")[0] for _, label, _ in g.edges}
    assert {"Send", "Receive", "Delete", "Retry", "Expire", "Redrive", "Tick"} <= names
    assert any("AgeOut(1," in what for row in data["edges"] for _, _, what, _ in row)
    assert {row[0] for row in data["bounds"]} == {f.name for f in fields(SystemBounds)}
    assert set(BOUND_MEANINGS) == {f.name for f in fields(SystemBounds)}


def _walk(data: dict[str, Any], labels: list[str]) -> tuple[int, list[Any]]:
    here, edge = 0, []
    for label in labels:
        (edge,) = [e for e in data["edges"][here] if e[0] == label]
        here = edge[1]
    return here, edge


def test_a_dead_letter_move_is_one_edge_that_changes_both_queues() -> None:
    data = page_data()
    nodes = sorted(explore_system(PAGE_BOUNDS).nodes.items(), key=lambda kv: kv[1])
    here, edge = _walk(data, ["Send(2,a,0)", "Receive(2,1)", "Retry(2,a)"])
    system, _ = nodes[here][0]
    src, dlq = system.state("2").get("a"), system.state("1").get("a")
    assert src is not None and src.status is Status.DEAD
    assert dlq is not None and dlq.status is Status.VISIBLE and dlq.attempt == 1
    assert edge[3] is True and "dead-lettered into 1" in edge[2]
    # The same move done by the sweep is one edge too; a plain send or receive is not marked.
    _, sweep = _walk(data, ["Send(2,a,0)", "Receive(2,1)", "Tick", "Expire(2)"])
    assert sweep[3] is True and "dead-lettered into 1" in sweep[2]
    _, send = _walk(data, ["Send(2,a,0)"])
    assert send[3] is False
    # A redrive is the other step across two queues: the old id MOVED, a new one in 2.
    here, redrive = _walk(data, ["Send(2,a,0)", "Receive(2,1)", "Retry(2,a)", "Redrive(1,a,2)"])
    system, _ = nodes[here][0]
    moved = system.state("1").get("a")
    assert moved is not None and moved.status is Status.MOVED
    assert [m.status for m in system.state("2").messages if m.id != "a"] == [Status.VISIBLE]
    assert redrive[3] is True and "redriven to 2 as" in redrive[2]
    # Marked exactly where a step changed both queues' states.
    for n, row in enumerate(data["edges"]):
        for _, to, _, both in row:
            a, b = nodes[n][0][0], nodes[to][0][0]
            assert both == all(a.state(q) != b.state(q) for q in ("1", "2"))


def test_the_guides_end_where_they_say() -> None:
    data = page_data()
    nodes = sorted(explore_system(PAGE_BOUNDS).nodes.items(), key=lambda kv: kv[1])
    assert len(data["guides"]) == 3
    for title, path, why in data["guides"]:
        assert title and why
        here, _ = _walk(data, [label for label, _ in path])
        assert here == path[-1][1]
    # The retention guide: a moved a tick after its send ages out in 1 at the send + retention.
    *_, (_, last) = data["guides"][-1][1]
    system, now = nodes[last][0]
    m = system.state("1").get("a")
    assert m is not None and m.status is Status.AGED_OUT
    assert PAGE_BOUNDS.dlq_retention is not None
    assert now == m.enqueued_at + PAGE_BOUNDS.dlq_retention


def test_effects_name_what_a_step_did() -> None:
    start = PAGE_BOUNDS.system()
    g = explore_system(PAGE_BOUNDS)
    (sent,) = [nxt for nxt, n in g.nodes.items() if n == 1]
    words, changed = effects(start, sent[0])
    assert (words, changed) == (["a sent to 2 (visible)"], ["2"])
    assert effects(start, start) == ([], [])
