"""Tests of the breadth-first explorer (``spec.explore``).

Three things: the explorer agrees with state counts worked out by hand for tiny bounds; on
larger small bounds it finishes in seconds, finds no violation and gives the same figures every
run; and it *does* report a violated invariant by name, with a trace, when a transition is
broken (the broken transition goes into a copy of the operation registry for one test).
"""

from __future__ import annotations

import re
import time
from dataclasses import replace

# tests/ has no __init__.py: pytest puts it on sys.path for its test files, and mypy checks its
# files as top-level modules, so the shared test doubles are the module broken_spec.
import broken_spec as broken
import pytest

from spec import transitions
from spec.explore import Bounds, action_label, action_labels, explore
from spec.operations import REGISTRY, Registry
from spec.state import Delivery, Receipt, State, Time

# -- counts worked out by hand ------------------------------------------------------------------
#
# One id "a", capacity 1, the clock stuck at 0, visibility timeout 1 (so nothing ever expires),
# at most one delivery. Writing V/F/D/C for visible/in flight/done/cancelled and the attempt:
#
#   (empty) --Send(a,0)--> V0 --Receive(1)--> F1 --Delete(a)--> D1
#                         |                  |--Retry(a)---> V1 --Cancel(a)--> C1
#                         |                  `--Cancel(a)---------------------> C1
#                         `--Cancel(a)--> C0
#
# and Purge from each state with an active message (V0, F1, V1) to C0, C1, C1.
# 7 states (empty, V0, F1, D1, V1, C0, C1), 10 edges, longest shortest path 3.

ONE = Bounds(ids=("a",), capacity=1, max_attempt=1, visibility_timeouts=(1,), max_time=0)


def test_one_id_no_time_matches_the_hand_count() -> None:
    g = explore(ONE)
    assert g.violations == []
    assert (g.states, len(g.edges), g.depth) == (7, 10, 3)
    labels = sorted(label for _, label, _ in g.edges)
    assert labels == sorted(
        ["Send(a,0)", "Receive(1)", "Cancel(a)", "Delete(a)", "Retry(a)", "Cancel(a)", "Cancel(a)"]
        + ["Purge"] * 3
    )


def test_dead_letter_bound_matches_the_hand_count() -> None:
    # As above with max_receives 1: Retry from F1 dead-letters, so V1 (and its Cancel) is gone
    # and a DEAD state takes its place: empty, V0, F1, D1, DEAD1, C0, C1 with 6 edges, and a
    # Purge from V0 and F1.
    g = explore(replace(ONE, max_receives=1, max_attempt=2))
    assert g.violations == []
    assert (g.states, len(g.edges)) == (7, 8)
    dead = [node for node in g.nodes if node[0].dead]
    assert len(dead) == 1 and dead[0][0].dead == ("a",)


def test_one_tick_matches_the_hand_count() -> None:
    # The 7 states at time 0, each ticked to time 1 (7 more), plus one state only reachable at
    # time 1: a receive at time 1 has deadline 2, unlike F1 ticked from time 0 (deadline 1).
    g = explore(replace(ONE, max_time=1))
    assert g.violations == []
    assert g.states == 7 + 7 + 1
    expire_edges = [e for e in g.labelled_edges() if e[1] == "Expire"]
    assert len(expire_edges) == 1, "only F1 with deadline 1 at time 1 is due"
    (before, _), _, (after, _) = expire_edges[0]
    assert before.in_flight == ("a",) and after.visible == ("a",)


def test_visibility_timeout_none_never_expires() -> None:
    # Without deadlines a receive at time 1 is the same state as one at time 0 ticked: 7 + 7.
    g = explore(replace(ONE, visibility_timeouts=(None,), max_time=1))
    assert g.violations == []
    assert g.states == 14
    assert all(label != "Expire" for _, label, _ in g.edges)


# -- larger small bounds: no violation, fast, stable --------------------------------------------

SMALL = Bounds(
    ids=("a", "b"),
    capacity=2,
    max_receives=2,
    max_attempt=2,
    visibility_timeouts=(1, None),
    extend_timeouts=(0, 2),
    max_time=2,
)


@pytest.mark.parametrize(
    "bounds",
    [
        Bounds(),
        SMALL,
        replace(SMALL, capacity=1, max_receives=None),
        replace(SMALL, ids=("a", "b", "c"), capacity=2, extend_timeouts=(), max_time=1),
        replace(SMALL, capacity=0),
        replace(SMALL, capacity=None, max_time=1),
    ],
    ids=["default", "small", "capacity-1", "three-ids", "capacity-0", "unbounded"],
)
def test_small_bounds_hold_every_invariant_and_are_stable(bounds: Bounds) -> None:
    started = time.perf_counter()
    g = explore(bounds, stop_at_first_violation=False)
    assert time.perf_counter() - started < 20, "small bounds must finish in seconds"
    assert g.violations == [] and g.trace == []
    assert g.states > 1 or bounds.capacity == 0
    again = explore(bounds, stop_at_first_violation=False)
    assert (again.states, again.edges, again.depth) == (g.states, g.edges, g.depth)
    assert list(again.nodes) == list(g.nodes), "BFS numbering is deterministic"


def test_capacity_zero_has_only_the_empty_queue() -> None:
    g = explore(replace(SMALL, capacity=0))
    assert g.states == SMALL.max_time + 1  # the empty queue at each time
    assert all(label == "Tick" for _, label, _ in g.edges)


# -- a broken transition is caught, by name, with a trace ---------------------------------------


# Each bug is a spec transition with a slip; it goes into the explorer through the registry
# (``REGISTRY.replacing(name, function=bug)``), called with the spec's keyword arguments.


def receive_forgets_in_flight(
    s: State, now: Time, vt: Time | None
) -> tuple[State, Delivery | None]:
    after, d = transitions.receive(s, now, vt)
    return replace(after, in_flight=s.in_flight), d


def retry_to_the_head(s: State, receipt: Receipt) -> tuple[State, bool]:
    after, ok = transitions.retry(s, receipt)
    if ok and after.visible and after.visible[-1] == receipt.id:
        after = replace(after, visible=(receipt.id, *after.visible[:-1]))
    return after, ok


def send_ignores_capacity(
    s: State, id: str, body: str, delay: Time | None, now: Time
) -> tuple[State, bool]:
    unbounded = replace(s, config=replace(s.config, capacity=None))
    after, ok = transitions.send(unbounded, id, body, delay, now)
    return (replace(after, config=s.config), True) if ok else (s, False)


def delete_forgets_the_message(s: State, receipt: Receipt) -> tuple[State, bool]:
    after, ok = transitions.delete(s, receipt)
    if ok:
        after = replace(after, messages=tuple(m for m in after.messages if m.id != receipt.id))
    return after, ok


def delete_resets_the_attempt(s: State, receipt: Receipt) -> tuple[State, bool]:
    after, ok = transitions.delete(s, receipt)
    if ok:
        m = after.get(receipt.id)
        assert m is not None
        after = after.with_msg(replace(m, attempt=0))
    return after, ok


def cancel_leaves_it_visible(s: State, id: str) -> tuple[State, bool]:
    after, ok = transitions.cancel(s, id)
    return (replace(after, visible=s.visible), ok) if ok else (after, ok)


TWO = Bounds(ids=("a", "b"), capacity=1, max_attempt=1, visibility_timeouts=(1,), max_time=0)
TWO_ROOMY = replace(TWO, capacity=2)


@pytest.mark.parametrize(
    ("name", "bug", "bounds", "invariant", "trace"),
    [
        ("receive", receive_forgets_in_flight, ONE, "OneState", ["Send(a,0)", "Receive(1)"]),
        ("send", send_ignores_capacity, TWO, "CapacityBound", ["Send(a,0)", "Send(b,0)"]),
        (
            "delete",
            delete_forgets_the_message,
            ONE,
            "IdsReserved",
            ["Send(a,0)", "Receive(1)", "Delete(a)"],
        ),
        (
            "delete",
            delete_resets_the_attempt,
            ONE,
            "AttemptsCount",
            ["Send(a,0)", "Receive(1)", "Delete(a)"],
        ),
        ("cancel", cancel_leaves_it_visible, ONE, "OneState", ["Send(a,0)", "Cancel(a)"]),
        ("retry", retry_to_the_head, TWO_ROOMY, "FifoVisible", None),
    ],
    ids=[
        "receive-forgets-in-flight",
        "send-ignores-capacity",
        "delete-forgets-message",
        "delete-resets-attempt",
        "cancel-leaves-visible",
        "retry-to-head",
    ],
)
def test_a_broken_transition_is_reported_by_invariant_name_with_a_trace(
    name: str,
    bug: object,
    bounds: Bounds,
    invariant: str,
    trace: list[str] | None,
) -> None:
    assert explore(bounds).violations == [], "the bounds are clean before the bug goes in"
    assert REGISTRY[name].function is getattr(transitions, name), "the registry runs the spec"
    g = explore(bounds, registry=REGISTRY.replacing(name, function=bug))
    assert g.violations, f"the explorer missed a broken {name}"
    assert any(r.startswith(f"{invariant}: ") for r in g.violations), g.violations
    assert g.trace, "a violation comes with the path that leads to it"
    if trace is not None:
        assert g.trace == trace
    else:
        # Shortest way to put a released message ahead of another visible one.
        assert g.trace[-1] == "Retry(a)" and len(g.trace) == 4
        assert sorted(g.trace[:-1]) == ["Receive(1)", "Send(a,0)", "Send(b,0)"]


# -- batches and delays ---------------------------------------------------------------------------

BATCHED = Bounds(
    ids=("a", "b"),
    capacity=2,
    max_attempt=1,
    visibility_timeouts=(1,),
    extend_timeouts=(0, 2),
    max_time=2,
    batch=2,
    delays=(0, 1),
)


def test_the_defaults_explore_no_batch_and_no_delay() -> None:
    g = explore(Bounds(), stop_at_first_violation=False)
    labels = {label.partition("(")[0] for _, label, _ in g.edges}
    assert not labels & {"SendBatch", "ReceiveBatch", "DeleteBatch", "ChangeVisibilityBatch"}
    assert all(not n[0].delayed for n in g.nodes)
    assert {label for _, label, _ in g.edges if label.startswith("Send(")} == {
        "Send(a,0)",
        "Send(b,0)",
    }


def test_batches_and_delays_hold_every_invariant() -> None:
    g = explore(BATCHED, stop_at_first_violation=False)
    assert g.violations == []
    labels = {label for _, label, _ in g.edges}
    names = {label.partition("(")[0] for label in labels}
    assert names == set(action_labels())
    # Each label in the format TLA+'s lastAction maps to (see the module docstring).
    for label in (
        "Send(a,1)",
        "SendBatch(<<<<a,0>>,<<b,1>>>>)",
        "SendBatch(<<<<b,1>>,<<a,1>>>>)",
        "ReceiveBatch(2,1)",
        "DeleteBatch(<<a,b>>)",
        "DeleteBatch(<<b,a>>)",
        "ChangeVisibilityBatch(<<<<a,0>>,<<b,2>>>>)",
        "Purge",
    ):
        assert label in labels, label
    assert any(n[0].delayed for n in g.nodes)


def test_a_batch_of_one_is_never_an_edge_and_sizes_stop_at_batch() -> None:
    g = explore(replace(BATCHED, ids=("a", "b", "c"), capacity=3, max_time=0, delays=(0,)))
    for _, label, _ in g.edges:
        if label.startswith("SendBatch("):
            assert label.count("<<") == 3, label  # two entries: <<, <<a,0>>, <<b,0>>
        if label.startswith("ReceiveBatch("):
            assert label.startswith("ReceiveBatch(2,")


def test_a_send_batch_that_does_not_fit_is_no_edge() -> None:
    g = explore(replace(BATCHED, capacity=1))
    assert not any(label.startswith("SendBatch") for _, label, _ in g.edges)
    assert g.violations == []


def test_receive_batch_with_fewer_visible_than_n_is_an_edge() -> None:
    bounds = replace(BATCHED, ids=("a",), capacity=1, delays=(0,), max_time=0)
    g = explore(bounds)
    start = next(n for n, i in g.nodes.items() if i == 0)
    (one,) = [dst for src, lab, dst in g.labelled_edges() if src == start]  # Send(a,0)
    out = {lab: dst for src, lab, dst in g.labelled_edges() if src == one}
    assert out["ReceiveBatch(2,1)"] == out["Receive(1)"]


def test_a_purge_adds_edges_but_no_state() -> None:
    bounds = replace(SMALL, max_time=1)
    base = explore(bounds, registry=_without("purge"))
    full = explore(bounds)
    assert full.states == base.states and len(full.edges) > len(base.edges)


def _without(name: str) -> Registry:
    return Registry(op for op in REGISTRY if op.name != name)


def test_the_label_format() -> None:
    assert action_label("Purge") == "Purge"
    assert action_label("Send", ("a", 0)) == "Send(a,0)"
    assert action_label("ReceiveBatch", (2, None)) == "ReceiveBatch(2,none)"
    assert action_label("DeleteBatch", (("a", "b"),)) == "DeleteBatch(<<a,b>>)"
    assert action_label("SendBatch", ((("a", 0), ("b", 1)),)) == "SendBatch(<<<<a,0>>,<<b,1>>>>)"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(batch=0), "batch must be in 1..10, got 0"),
        (dict(batch=11), "batch must be in 1..10, got 11"),
        (dict(delays=()), "delays must be distinct and non-empty"),
        (dict(delays=(1, 1)), "delays must be distinct and non-empty"),
        (dict(delays=(-1,)), "delays must be >= 0"),
    ],
)
def test_bad_batch_or_delay_bounds_are_rejected(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Bounds(**kwargs)  # type: ignore[arg-type]


# -- broken delay and batch transitions are caught, by name ---------------------------------------


def expire_fires_delays_a_tick_early(s: State, now: Time) -> tuple[State, tuple[str, ...]]:
    return transitions.expire(s, now + 1) if s.delayed else transitions.expire(s, now)


def expire_orders_delays_after_deadlines(s: State, now: Time) -> tuple[State, tuple[str, ...]]:
    fired = sorted(transitions.due(s, now), key=lambda i: i in s.delayed)
    for id in fired:
        s = transitions.fire_delay(s, id) if id in s.delayed else transitions.release(s, id)
    return s, tuple(fired)


# (A delete_batch that stops at the first False is not here: the explorer tries live receipts
# only. tests/test_spec_invariants.py and tests/test_spec_crosshair.py catch it.)


def change_visibility_restarts_the_timer(
    s: State, receipt: Receipt, timeout: Time, now: Time
) -> tuple[State, bool]:
    after, ok = transitions.change_visibility(s, receipt, timeout, now)
    if ok and receipt.id in after.timers:
        after = replace(after, timers=(*(i for i in after.timers if i != receipt.id), receipt.id))
    return after, ok


DELAYED = Bounds(
    ids=("a", "b"), capacity=2, max_attempt=1, visibility_timeouts=(1,), max_time=2, delays=(0, 1)
)


@pytest.mark.parametrize(
    ("name", "bug", "bounds", "invariant"),
    [
        ("expire", expire_fires_delays_a_tick_early, DELAYED, "DelayHonoured"),
        ("expire", expire_orders_delays_after_deadlines, replace(DELAYED, delays=(0, 2)), None),
        ("purge", broken.purge_misses_delayed, DELAYED, "BatchAtomic"),
        (
            "send_batch",
            broken.send_batch_accepts_a_prefix,
            replace(BATCHED, capacity=1),
            "BatchAtomic",
        ),
        # Drops the lock between messages: a sweep a moment later runs between two receives.
        ("receive_batch", broken.receive_batch_with_a_sweep(1), BATCHED, "BatchAtomic"),
        ("change_visibility", change_visibility_restarts_the_timer, BATCHED, "OneState"),
    ],
    ids=[
        "delay-fires-early",
        "delays-after-deadlines",
        "purge-misses-delayed",
        "send-batch-prefix",
        "receive-batch-drops-lock",
        "change-visibility-restarts-timer",
    ],
)
def test_a_broken_delay_or_batch_transition_is_caught(
    name: str, bug: object, bounds: Bounds, invariant: str | None
) -> None:
    assert explore(bounds).violations == [], "the bounds are clean before the bug goes in"
    g = explore(bounds, registry=REGISTRY.replacing(name, function=bug))
    if invariant is None:
        # No invariant speaks of the order within one sweep: the graph differs (an Expire edge
        # leads elsewhere), which is what the TLC equivalence and the lockstep tests catch.
        good = explore(bounds, stop_at_first_violation=False)
        assert g.violations == [] and g.labelled_edges() != good.labelled_edges()
        return
    assert any(r.startswith(f"{invariant}: ") for r in g.violations), g.violations
    assert g.trace


def test_the_command_line_explores_batches_and_delays(capsys: pytest.CaptureFixture[str]) -> None:
    from spec.__main__ import main

    args = ["explore", "--ids", "2", "--capacity", "2", "--max-attempt", "1", "--max-time", "2"]
    assert main([*args, "--batch", "2", "--delays", "0", "1"]) == 0
    out = capsys.readouterr().out
    assert "batch=2" in out and "delays=(0, 1)" in out
    assert f"states:       {explore(BATCHED_CLI).states}\n" in out
    assert "DelayHonoured BatchAtomic hold" in out
    with pytest.raises(SystemExit):
        main([*args, "--batch", "11"])
    assert "batch must be in 1..10" in capsys.readouterr().err


BATCHED_CLI = Bounds(ids=("a", "b"), capacity=2, max_attempt=1, max_time=2, batch=2, delays=(0, 1))
