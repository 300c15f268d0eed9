"""What the explorer page explains, checked without a browser: the meanings it shows, its
bounds table, its guide's path and the ``BatchAtomic`` check on its edges (:mod:`spec.html`).

``tests/test_explorer_browser.py`` checks that the page shows them; this file checks that they
are complete and true of the spec: a new invariant or bound without a meaning fails here, and
so does a guide whose path is not the duplicate delivery.
"""

from __future__ import annotations

from dataclasses import fields

# tests/ has no __init__.py: the shared test doubles are the top-level module broken_spec (as in
# tests/test_explore.py).
import broken_spec as broken
import pytest

from spec.explore import Bounds
from spec.html import (
    BOUND_MEANINGS,
    MEANINGS,
    GraphSpec,
    bound_rows,
    explore_graph,
    page_data,
    step_invariant_names,
    tour,
)
from spec.invariants import INVARIANTS, STEP_INVARIANTS, violations
from spec.operations import REGISTRY
from spec.state import Status


def test_every_invariant_and_every_bound_has_a_meaning() -> None:
    assert set(MEANINGS) == {*INVARIANTS, *STEP_INVARIANTS, "BatchAtomic"}
    assert set(BOUND_MEANINGS) == {f.name for f in fields(Bounds)}
    for text in (*MEANINGS.values(), *BOUND_MEANINGS.values()):
        assert 20 < len(text) < 160 and "\n" not in text, text  # one line each


def test_the_bounds_table_has_a_row_per_bound_and_reads_none_by_its_meaning() -> None:
    std = Bounds(capacity=None, visibility_timeouts=(1, None), extend_timeouts=())
    rows = {name: value for name, value, _ in bound_rows(std)}
    # The FIFO bounds only on a FIFO queue, as Bounds' repr shows them.
    assert set(rows) == {f.name for f in fields(Bounds)} - {
        "fifo",
        "groups",
        "dedup",
        "dedup_interval",
    }
    assert rows["ids"] == "a, b"
    assert rows["capacity"] == "no limit"
    assert rows["max_receives"] == "none (never dead-lettered)"
    assert rows["visibility_timeouts"] == "1, none (never expires)"
    assert rows["extend_timeouts"] == "none (no change_visibility)"
    fifo = Bounds(fifo=True, groups=(("a",), ("b",)), dedup=(("a", "b"),), dedup_interval=3)
    rows = {name: value for name, value, _ in bound_rows(fifo)}
    assert rows["groups"] == "a = {a}; b = {b}"
    assert rows["dedup"] == "a_b = {a, b}"
    assert rows["dedup_interval"] == "3" and rows["fifo"] == "yes"
    # No groups given: one group of every id, named as Bounds.group_of names it.
    (groups,) = [v for n, v, _ in bound_rows(Bounds(fifo=True)) if n == "groups"]
    assert groups == f"{Bounds(fifo=True).group_of('a')} = {{a, b}}"


@pytest.mark.parametrize(
    "bounds",
    [
        Bounds(ids=("a",)),
        Bounds(ids=("a",), visibility_timeouts=(None, 2), max_time=3),
        Bounds(fifo=True, ids=("a", "b")),
    ],
    ids=["standard", "timeout-2", "fifo"],
)
def test_the_guide_walks_to_the_duplicate_delivery(bounds: Bounds) -> None:
    g = explore_graph(GraphSpec("g", "g", bounds))
    steps = tour(g)
    here = 0
    for label, why in steps:
        (edge,) = [e for e in g.edges[here] if e[0] == label]
        here = edge[2]
        assert why
    # Where it ends: the first id in flight again, delivered twice, the clock at its first
    # deadline (the smallest timeout that expires), every invariant holding.
    s, now = g.nodes[here]
    m = s.get(bounds.ids[0])
    vt = min(v for v in bounds.visibility_timeouts if v is not None)
    assert m is not None and (m.status, m.attempt, now) == (Status.IN_FLIGHT, 2, vt)
    assert len(steps) == 4 + vt  # send, receive, vt ticks, expire, receive
    assert violations(s) == []


def test_bounds_without_a_duplicate_delivery_have_no_guide() -> None:
    for bounds in (
        Bounds(ids=("a",), visibility_timeouts=(None,)),  # nothing expires
        Bounds(ids=("a",), max_time=0),  # the clock never reaches a deadline
        Bounds(ids=("a",), max_attempt=1),  # a second delivery is not explored
        Bounds(ids=("a",), delays=(1,)),  # no send is visible at once
    ):
        assert tour(explore_graph(GraphSpec("g", "g", bounds))) == [], bounds


def test_the_page_checks_batch_atomic_on_its_batch_edges() -> None:
    bounds = Bounds(ids=("a", "b"), capacity=1, max_attempt=1, max_time=1, batch=2)
    registry = REGISTRY.replacing("send_batch", function=broken.send_batch_accepts_a_prefix)
    g = explore_graph(GraphSpec("g", "g", bounds), registry)
    bad = [reasons for row in g.edges for _, label, _, reasons in row if reasons]
    assert bad and all(r.startswith("BatchAtomic:") for rs in bad for r in rs)
    assert "BatchAtomic" in step_invariant_names(False)
    # A correct spec: no edge of the page's graphs breaks it.
    data = page_data([GraphSpec("g", "g", bounds)])
    assert not any(len(e) > 3 for row in data["graphs"]["g"]["edges"] for e in row)
    assert data["graphs"]["g"]["meanings"]["BatchAtomic"] == MEANINGS["BatchAtomic"]
