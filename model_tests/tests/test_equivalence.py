"""The TLA+ spec and the Python spec generate the same state graph (``pytest -k equivalence``).

For each set of bounds, TLC dumps the complete state graph of ``tla/QueueGraph.tla`` (``Queue``
with a ``lastAction`` label) and :func:`spec.explore.explore` builds the explorer's graph from
``spec/transitions.py``; :func:`tla.graph.differences` compares them under the mapping that
``tla/graph.py`` documents (FIFO bound sets: ``tla/QueueFifoGraph.tla`` against the explorer's
FIFO queue). A failure prints the first differing states or edges.

The last tests make sure the comparison can fail: a graph with an edge missing, relabelled or
a node too many, an explorer whose ``retry`` lets the message jump back to the head of the
FIFO, one whose ``purge`` misses delayed messages, and one whose FIFO ``retry`` sends the
message to the tail instead of its place in its group, are all reported.
"""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest

from spec.explore import Bounds, Graph, explore
from spec.operations import REGISTRY
from spec.state import Receipt, State, Status
from spec.transitions import purge, release, retry
from tla.graph import TlcGraph, differences, tlc_graph

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="java is not installed")

#: Bound sets checked both ways. Between them: dead-lettering and change_visibility (with the
#: t = 0 release), deliveries that never expire, unbounded capacity, timeout 0 (a delivery due
#: at once), equal deadlines expiring together (ties broken by receive order); and with batches
#: (every batch operation of two entries, purge) and delays: a delay and a deadline due at the
#: same time (one timer order), send batches refused whole for want of room, delays of 1 and 2
#: firing around deliveries that dead-letter.
BOUNDS = {
    "dead-letters-and-extends": Bounds(
        ids=("a", "b"),
        capacity=2,
        max_receives=2,
        max_attempt=2,
        visibility_timeouts=(1, None),
        extend_timeouts=(0, 2),
        max_time=2,
    ),
    "vt-none": Bounds(
        ids=("a", "b"),
        capacity=1,
        max_receives=None,
        max_attempt=2,
        visibility_timeouts=(None,),
        max_time=1,
    ),
    "unbounded-capacity-and-ties": Bounds(
        ids=("a", "b", "c"),
        capacity=None,
        max_receives=1,
        max_attempt=1,
        visibility_timeouts=(0, 1),
        extend_timeouts=(1,),
        max_time=1,
    ),
    "batches-and-delays": Bounds(
        ids=("a", "b", "c"),
        capacity=2,
        max_receives=2,
        max_attempt=2,
        visibility_timeouts=(1, None),
        extend_timeouts=(0, 2),
        max_time=1,
        batch=2,
        delays=(0, 1),
    ),
    "delays-and-dead-letters": Bounds(
        ids=("a", "b"),
        capacity=2,
        max_receives=1,
        max_attempt=1,
        visibility_timeouts=(1,),
        extend_timeouts=(1,),
        max_time=2,
        batch=2,
        delays=(0, 1, 2),
    ),
    # Issue 15, FIFO queues (TLC runs tla/QueueFifoGraph.tla): two groups, so a receive skips
    # a locked group, receive_batch(2) takes a group's messages before the next group's, and
    # a retry puts a message back in its place in its group;
    "fifo-groups-and-batches": Bounds(
        ids=("a", "b", "c"),
        capacity=3,
        max_receives=None,
        max_attempt=1,
        visibility_timeouts=(1,),
        max_time=0,
        batch=2,
        fifo=True,
        groups=(("a", "b"), ("c",)),
    ),
    # ... and b a producer's retry of a (one dedup id) with a window of 1: a duplicate before
    # the clock reaches 1, a new message after; deliveries expire (to their place) or never.
    "fifo-dedup-and-expiry": Bounds(
        ids=("a", "b"),
        capacity=1,
        max_receives=None,
        max_attempt=2,
        visibility_timeouts=(1, None),
        max_time=2,
        fifo=True,
        dedup=(("a", "b"),),
        dedup_interval=1,
    ),
}

_TLC: dict[str, TlcGraph] = {}


def tlc(name: str) -> TlcGraph:
    """TLC's graph for ``BOUNDS[name]``, computed once per test session."""
    if name not in _TLC:
        _TLC[name] = tlc_graph(BOUNDS[name])
    return _TLC[name]


@pytest.mark.parametrize("name", list(BOUNDS))
def test_equivalence_tla_and_python_state_graphs(name: str) -> None:
    bounds = BOUNDS[name]
    graph = explore(bounds, stop_at_first_violation=False)
    assert graph.violations == []
    t = tlc(name)
    assert t.result.outcome == "ok"
    diff = differences(graph, t.dot)
    assert diff == [], f"{name}: TLA+ and Python graphs differ:\n" + "\n".join(diff)
    # Numbers that must agree independently of the mapping: every explorer node is at least
    # one TLC state (one per label leading into it), and TLC's depth counts states, not steps.
    assert t.result.distinct == len(t.dot.states) >= graph.states
    assert t.result.depth is not None and t.result.depth >= graph.depth + 1


def _copy(graph: Graph) -> Graph:
    return Graph(graph.bounds, dict(graph.nodes), set(graph.edges), graph.depth)


def test_equivalence_check_reports_a_missing_or_relabelled_edge() -> None:
    graph = explore(BOUNDS["vt-none"])
    edge = min(graph.edges)
    dropped = _copy(graph)
    dropped.edges.discard(edge)
    assert any("edge only in TLC" in d for d in differences(dropped, tlc("vt-none").dot))

    relabelled = _copy(graph)
    relabelled.edges.discard(edge)
    relabelled.edges.add((edge[0], "Cancel(z)", edge[2]))
    diff = differences(relabelled, tlc("vt-none").dot)
    assert any("--Cancel(z)-->" in d and "only in the explorer" in d for d in diff)


def test_equivalence_check_reports_a_state_only_one_side_has() -> None:
    graph = explore(BOUNDS["vt-none"])
    last = max(graph.nodes, key=graph.nodes.__getitem__)
    fewer = _copy(graph)
    del fewer.nodes[last]
    fewer.edges = {e for e in fewer.edges if graph.nodes[last] not in (e[0], e[2])}
    assert any(d.startswith("state only in TLC") for d in differences(fewer, tlc("vt-none").dot))


def test_equivalence_check_catches_a_retry_that_jumps_the_queue() -> None:
    """Seed pitfall: a released message must go to the tail, never back to its old place."""

    def retry_to_head(state: State, receipt: Receipt) -> tuple[State, bool]:
        released = release(state, receipt.id)
        rest = tuple(x for x in released.visible if x != receipt.id)
        if receipt.id in released.visible:
            released = replace(released, visible=(receipt.id, *rest))
        return released, True

    broken = REGISTRY.replacing("retry", function=retry_to_head)
    graph = explore(
        BOUNDS["dead-letters-and-extends"], stop_at_first_violation=False, registry=broken
    )
    diff = differences(graph, tlc("dead-letters-and-extends").dot)
    assert any("only in the explorer" in d for d in diff), diff


def test_equivalence_check_catches_a_purge_that_misses_delayed_messages() -> None:
    """Mutant of issue 14: purge cancels the visible and in-flight messages, not the delayed."""

    def purge_but_delayed(state: State) -> tuple[State, int]:
        kept = tuple(m for m in state.messages if m.status is Status.DELAYED)
        rest = replace(
            state, delayed=(), timers=tuple(i for i in state.timers if i in state.in_flight)
        )
        after, n = purge(replace(rest, messages=tuple(m for m in state.messages if m not in kept)))
        timers = tuple(i for i in state.timers if i in state.delayed)
        messages = tuple(sorted((*after.messages, *kept), key=lambda m: m.id))
        return replace(after, messages=messages, delayed=state.delayed, timers=timers), n

    broken = REGISTRY.replacing("purge", function=purge_but_delayed)
    graph = explore(
        BOUNDS["delays-and-dead-letters"], stop_at_first_violation=False, registry=broken
    )
    diff = differences(graph, tlc("delays-and-dead-letters").dot)
    assert any("--Purge-->" in d and "only in the explorer" in d for d in diff), diff


def test_equivalence_check_catches_a_fifo_retry_to_the_tail() -> None:
    """Mutant of issue 15: on a FIFO queue a released message goes back to its place in its
    group, not to the tail (where the standard queue puts it)."""

    def retry_to_tail(state: State, receipt: Receipt) -> tuple[State, bool]:
        after, ok = retry(state, receipt)
        if receipt.id in after.visible:
            rest = tuple(x for x in after.visible if x != receipt.id)
            after = replace(after, visible=(*rest, receipt.id))
        return after, ok

    broken = REGISTRY.replacing("retry", function=retry_to_tail)
    graph = explore(
        BOUNDS["fifo-groups-and-batches"], stop_at_first_violation=False, registry=broken
    )
    diff = differences(graph, tlc("fifo-groups-and-batches").dot)
    assert any("only in the explorer" in d for d in diff), diff
