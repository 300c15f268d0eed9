"""The pure spec of FIFO queues (contract section 2b): groups, locking, send order, deduplication.

Each test drives ``spec.transitions`` on a ``Config(fifo=True)`` state and checks results and
state; the last part injects the bugs of issue 15 into a transition and checks that the named
invariant (``GroupOrder``, ``DedupWindow``) says so.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spec import (
    REGISTRY,
    Config,
    Delivery,
    Receipt,
    State,
    Status,
    batch_atomic,
    cancel,
    dedup_window,
    dedup_window_step,
    delete,
    expire,
    group_order,
    group_order_step,
    initial,
    purge,
    receive,
    receive_batch,
    retry,
    send,
    send_batch,
    step_violations,
    violations,
)
from spec.__main__ import main
from spec.explore import Bounds, explore
from spec.invariants import fifo_visible_step
from spec.transitions import _deliver, change_visibility


def fifo(**config: object) -> State:
    return initial(Config(fifo=True, **config))  # type: ignore[arg-type]


def put(s: State, *sends: tuple[str, str], now: float = 0.0) -> State:
    """Send each ``(id, group)`` (body = id), each accepted."""
    for id, group in sends:
        s, ok = send(s, id, id, now=now, group=group)
        assert ok is True
    return s


def take(s: State, now: float = 0.0, vt: float | None = None) -> tuple[State, Delivery]:
    after, d = receive(s, now, vt)
    assert d is not None
    assert violations(after) == [] and step_violations(s, after, now) == []
    return after, d


def status(s: State, id: str) -> Status:
    m = s.get(id)
    assert m is not None
    return m.status


# -- groups, locking, send order ---------------------------------------------------------------


def test_a_group_is_delivered_in_send_order_and_locked_while_in_flight() -> None:
    s = put(fifo(), ("a1", "g"), ("a2", "g"), ("b1", "h"))
    s, d = take(s)
    assert d.id == "a1"
    s, d = take(s)
    assert d.id == "b1"  # g is locked by a1: the scan skips a2
    assert receive(s, 0.0, None) == (s, None)  # every visible message is in a locked group
    s, ok = delete(s, receipt_of(s, "a1"))
    assert ok
    s, d = take(s)
    assert (d.id, d.attempt) == ("a2", 1)


def receipt_of(s: State, id: str) -> Receipt:
    m = s.get(id)
    assert m is not None
    return Receipt(s.queue, id, m.attempt)


def test_messages_carry_group_and_send_order() -> None:
    s = put(fifo(), ("b", "g"), ("a", "h"))
    a, b = s.get("a"), s.get("b")
    assert a is not None and b is not None
    assert (b.group, b.sent, a.group, a.sent) == ("g", 0, "h", 1)
    assert s.visible == ("b", "a")


def test_a_released_message_comes_back_at_the_head_of_its_group() -> None:
    s = put(fifo(), ("a1", "g"), ("b1", "h"), ("a2", "g"))
    s, d = take(s)
    before = s
    s, ok = retry(s, d.receipt)
    assert ok and s.visible == ("a1", "b1", "a2")  # its place in send order, not the tail
    assert fifo_visible_step(before, s) is None  # FifoVisible does not apply to FIFO queues
    s, d = take(s)
    assert (d.id, d.attempt) == ("a1", 2)


def test_an_expired_delivery_comes_back_at_the_head_of_its_group() -> None:
    s = put(fifo(), ("a1", "g"), ("a2", "g"))
    s, d = take(s, now=0.0, vt=5.0)
    s, fired = expire(s, 5.0)
    assert fired == ("a1",) and s.visible == ("a1", "a2")
    assert change_visibility(s, d.receipt, 0.0, 5.0) == (s, False)  # its receipt died
    s, again = take(s, now=5.0)
    assert (again.id, again.attempt) == ("a1", 2)


def test_a_dead_lettered_head_unlocks_its_group() -> None:
    s = put(fifo(max_receives=1), ("a1", "g"), ("a2", "g"))
    s, d = take(s)
    s, ok = retry(s, d.receipt)
    assert ok and status(s, "a1") is Status.DEAD and s.dead == ("a1",)
    s, d = take(s)
    assert d.id == "a2"


def test_the_queue_delay_keeps_send_order() -> None:
    s = fifo(delay=2.0)
    s = put(s, ("a1", "g"))
    s = put(s, ("a2", "g"), now=1.0)
    assert receive(s, 1.0, None)[1] is None
    s, _ = expire(s, 3.0)
    assert s.visible == ("a1", "a2")


# -- receive_batch: group by group -------------------------------------------------------------


def test_a_batch_takes_a_group_then_the_next() -> None:
    s = put(fifo(), ("a1", "g"), ("b1", "h"), ("a2", "g"), ("c1", "k"), ("b2", "h"))
    after, ds = receive_batch(s, 0.0, 4, None)
    assert [d.id for d in ds] == ["a1", "a2", "b1", "b2"]
    assert after.in_flight == ("a1", "a2", "b1", "b2") and after.visible == ("c1",)
    assert violations(after) == [] and step_violations(s, after, 0.0) == []
    args = {"now": 0.0, "n": 4, "vt": None}
    assert batch_atomic(s, "receive_batch", args, after, ds) is None


def test_a_batch_stops_at_n_inside_a_group_and_skips_locked_groups() -> None:
    s = put(fifo(), ("a1", "g"), ("a2", "g"), ("a3", "g"), ("b1", "h"))
    after, ds = receive_batch(s, 0.0, 2, None)
    assert [d.id for d in ds] == ["a1", "a2"]
    after, ds = receive_batch(after, 0.0, 10, None)
    assert [d.id for d in ds] == ["b1"]  # g is locked
    assert receive_batch(after, 0.0, 10, None) == (after, ())


# -- deduplication ------------------------------------------------------------------------------


def test_a_duplicate_within_the_interval_changes_nothing_and_names_the_earlier_id() -> None:
    s, ok = send(fifo(), "a", "A", now=0.0, group="g", dedup_id="x")
    assert ok is True and s.dedup == (("x", "a", 0.0),)
    after, result = send(s, "b", "B", now=299.5, group="g", dedup_id="x")
    assert after is s and result == "a"


def test_exactly_at_the_interval_the_dedup_id_is_new_again_and_its_window_restarts() -> None:
    s, _ = send(fifo(dedup_interval=10.0), "a", "A", now=0.0, group="g", dedup_id="x")
    s, ok = send(s, "b", "B", now=10.0, group="g", dedup_id="x")
    assert ok is True and s.dedup == (("x", "b", 10.0),)
    assert send(s, "c", "C", now=19.0, group="g", dedup_id="x") == (s, "b")
    assert send(s, "c", "C", now=20.0, group="g", dedup_id="x")[1] is True


def test_a_duplicate_does_not_extend_the_window() -> None:
    s, _ = send(fifo(dedup_interval=10.0), "a", "A", now=0.0, group="g", dedup_id="x")
    assert send(s, "b", "B", now=9.0, group="g", dedup_id="x") == (s, "a")
    s, ok = send(s, "b", "B", now=10.0, group="g", dedup_id="x")
    assert ok is True  # measured from a's acceptance, not from the duplicate at 9


def test_a_duplicate_is_checked_before_id_and_room_whatever_became_of_the_earlier() -> None:
    s, _ = send(fifo(capacity=1), "a", "A", now=0.0, group="g", dedup_id="x")
    assert send(s, "b", "B", now=1.0, group="g", dedup_id="x") == (s, "a")  # full, yet "a"
    assert send(s, "a", "A", now=1.0, group="g", dedup_id="x") == (s, "a")  # id taken, yet "a"
    s, d = take(s)
    s, _ = delete(s, d.receipt)
    assert send(s, "b", "B", now=2.0, group="g", dedup_id="x") == (s, "a")  # a is DONE


def test_a_rejected_send_records_nothing() -> None:
    s = put(fifo(capacity=1), ("a", "g"))
    after, ok = send(s, "b", "B", now=0.0, group="g", dedup_id="y")
    assert after is s and ok is False and s.dedup == ()  # full
    after, ok = send(s, "a", "A", now=0.0, group="g", dedup_id="y")
    assert after is s and ok is False  # id taken
    s, d = take(s)
    s, _ = delete(s, d.receipt)
    s, ok = send(s, "b", "B", now=1.0, group="g", dedup_id="y")
    assert ok is True  # y was never recorded


def test_without_a_dedup_id_a_send_is_never_a_duplicate() -> None:
    s = put(fifo(), ("a", "g"))
    s, ok = send(s, "b", "a", group="g")
    assert ok is True and s.dedup == ()


# -- send_batch -------------------------------------------------------------------------------


def test_a_batch_reports_duplicates_per_entry_and_accepts_the_rest_together() -> None:
    s, _ = send(fifo(), "a", "A", now=0.0, group="g", dedup_id="x")
    entries = (("b", "B", None, "g", "x"), ("c", "C", None, "h", "y"), ("d", "D", None, "g", None))
    after, result = send_batch(s, entries, 1.0)
    assert result == ("a", True, True)
    assert after.visible == ("a", "c", "d") and after.dedup == (("x", "a", 0.0), ("y", "c", 1.0))
    assert batch_atomic(s, "send_batch", {"entries": entries, "now": 1.0}, after, result) is None
    assert violations(after) == [] and step_violations(s, after, 1.0) == []


def test_a_batch_whose_other_entries_do_not_fit_accepts_none_of_them() -> None:
    s, _ = send(fifo(capacity=2), "a", "A", now=0.0, group="g", dedup_id="x")
    entries = (("b", "B", None, "g", "x"), ("c", "C", None, "h", "y"), ("d", "D", None, "g", None))
    after, result = send_batch(s, entries, 1.0)
    assert after is s and result == ("a", False, False)
    assert send_batch(s, (("b", "B", None, "g", "x"),), 1.0) == (s, ("a",))


def test_a_dedup_id_repeated_in_a_batch_is_invalid() -> None:
    entries = (("b", "B", None, "g", "x"), ("c", "C", None, "h", "x"))
    with pytest.raises(ValueError, match=r"^entries\[1\]\.dedup_id"):
        send_batch(fifo(), entries, 0.0)


# -- argument errors name the argument ----------------------------------------------------------


@pytest.mark.parametrize(
    ("fifo_queue", "kwargs", "error", "message"),
    [
        (True, {}, ValueError, r"^group is required"),
        (True, {"group": 1}, TypeError, r"^group must be a str"),
        (True, {"group": "g", "delay": 1.0}, ValueError, r"^delay: a FIFO queue"),
        (True, {"group": "g", "delay": 0.0}, ValueError, r"^delay: a FIFO queue"),
        (True, {"group": "g", "dedup_id": 3}, TypeError, r"^dedup_id must be"),
        (False, {"group": "g"}, ValueError, r"^group: a standard queue"),
        (False, {"dedup_id": "x"}, ValueError, r"^dedup_id: a standard queue"),
    ],
)
def test_send_names_the_bad_argument(
    fifo_queue: bool, kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        send(initial(Config(fifo=fifo_queue)), "a", "A", **kwargs)  # type: ignore[arg-type]


def test_send_batch_names_the_bad_entry() -> None:
    with pytest.raises(ValueError, match=r"^entries\[1\]\.group is required"):
        send_batch(fifo(), (("a", "A", None, "g", None), ("b", "B", None)), 0.0)
    with pytest.raises(ValueError, match=r"^entries\[0\]\.delay: a FIFO queue"):
        send_batch(fifo(), (("a", "A", 1.0, "g", None),), 0.0)
    with pytest.raises(ValueError, match=r"^entries\[0\]\.group: a standard queue"):
        send_batch(initial(), (("a", "A", None, "g", None),), 0.0)


@pytest.mark.parametrize("interval", [0, -1.0, float("inf"), float("nan")])
def test_the_dedup_interval_must_be_positive_and_finite(interval: float) -> None:
    with pytest.raises(ValueError, match=r"^dedup_interval"):
        Config(fifo=True, dedup_interval=interval)


# -- the invariants catch the bugs of issue 15 -------------------------------------------------


def test_group_order_catches_a_release_to_the_tail_of_the_group() -> None:
    s = put(fifo(), ("a1", "g"), ("a2", "g"))
    s, d = take(s)
    after, _ = retry(s, d.receipt)
    broken = replace(after, visible=("a2", "a1"))
    assert group_order(after) is None
    reason = group_order(broken)
    assert reason is not None and reason.startswith("GroupOrder: visible")


def test_group_order_catches_a_receive_that_ignores_the_lock() -> None:
    s = put(fifo(), ("a1", "g"), ("a2", "g"))
    s, _ = take(s)
    broken, _ = _deliver(s, "a2", 0.0, None)  # the head of visible, although g is locked
    reason = group_order_step(s, broken)
    assert reason is not None and "locked" in reason
    assert any(r.startswith("GroupOrder") for r in step_violations(s, broken, 0.0))


def test_group_order_catches_a_batch_that_leaves_a_group_before_exhausting_it() -> None:
    s = put(fifo(), ("a1", "g"), ("b1", "h"), ("a2", "g"))
    broken, d1 = _deliver(s, "a1", 0.0, None)
    broken, d2 = _deliver(broken, "b1", 0.0, None)
    reason = group_order_step(s, broken)
    assert reason is not None and "went on past group 'g'" in reason
    args = {"now": 0.0, "n": 2, "vt": None}
    atomic = batch_atomic(s, "receive_batch", args, broken, (d1, d2))
    assert atomic is not None and atomic.startswith("BatchAtomic")


def test_group_order_catches_a_batch_that_starts_with_a_later_group() -> None:
    s = put(fifo(), ("a1", "g"), ("b1", "h"))
    broken, _ = _deliver(s, "b1", 0.0, None)
    reason = group_order_step(s, broken)
    assert reason is not None and reason.startswith("GroupOrder: took the groups")


def test_dedup_window_catches_a_window_measured_from_the_latest_duplicate() -> None:
    s, _ = send(fifo(dedup_interval=10.0), "a", "A", now=0.0, group="g", dedup_id="x")
    # The bug: a duplicate at 9 moves the record's time to 9 (and would refuse "b" at 10).
    broken = replace(s, dedup=(("x", "a", 9.0),))
    reason = dedup_window_step(s, broken, 9.0)
    assert reason is not None and "by no send" in reason


def test_dedup_window_catches_a_record_of_a_rejected_send() -> None:
    s = put(fifo(capacity=1), ("a", "g"))
    broken = replace(s, dedup=(("y", "b", 0.0),))  # b was refused (full) but recorded
    assert dedup_window(s) is None
    state_reason = dedup_window(broken)
    assert state_reason is not None and state_reason.startswith("DedupWindow")
    assert dedup_window_step(s, broken, 0.0) is not None


def test_dedup_window_catches_a_second_acceptance_within_the_interval() -> None:
    s, _ = send(fifo(dedup_interval=10.0), "a", "A", now=0.0, group="g", dedup_id="x")
    # The bug: no dedup check at all, so b is accepted at 5 with the same dedup id.
    broken = replace(s.with_msg(replace(s.messages[0], id="b", body="B", sent=1)))
    broken = replace(broken, visible=("a", "b"), dedup=(("x", "b", 5.0),))
    reason = dedup_window_step(s, broken, 5.0)
    assert reason is not None and "within 10.0" in reason


def test_standard_queues_keep_no_fifo_fields() -> None:
    s, ok = send(initial(), "a", "A")
    m = s.get("a")
    assert ok is True and m is not None and (m.group, m.sent, m.dedup_id) == (None, 0, None)
    assert s.dedup == () and violations(s) == []


# -- the explorer on FIFO bounds (the twin of tla/QueueFifo.tla) -------------------------------

#: tla/QueueFifo.cfg's constants.
QUEUE_FIFO = Bounds(
    ids=("a", "b", "c"),
    capacity=3,
    max_receives=2,
    extend_timeouts=(0,),
    batch=2,
    fifo=True,
    groups=(("a", "b"), ("c",)),
    dedup=(("a", "c"),),
    dedup_interval=2,
)
#: tla/QueueFifoDedup.cfg's constants: b is a's retry, the clock ends within the interval.
QUEUE_FIFO_DEDUP = Bounds(
    ids=("a", "b"),
    capacity=2,
    max_receives=2,
    extend_timeouts=(0,),
    fifo=True,
    groups=(("a", "b"),),
    dedup=(("a", "b"),),
    dedup_interval=3,
)

#: Two messages of one group, no dedup ids.
ONE_GROUP = Bounds(ids=("a", "b"), capacity=2, fifo=True)


def test_the_fifo_bound_sets_hold_every_invariant_with_tlcs_state_counts() -> None:
    g = explore(QUEUE_FIFO)
    assert (g.violations, g.states) == ([], 10867)  # docs/tla.md: QueueFifo, 10867 states
    labels = {label for _, label, _ in g.edges}
    assert {"Send(a)", "SendBatch(<<a,b>>)", "ReceiveBatch(2,1)", "Receive(1)"} <= labels
    assert not any(label.startswith("Send(") and "," in label for label in labels)
    # c is sent with a's dedup id: never both accepted within the interval of 2 ...
    both = [s for s, now in g.nodes if s.get("a") and s.get("c")]
    assert both and all(max(at for _, _, at in s.dedup) >= 2 for s in both)
    g = explore(QUEUE_FIFO_DEDUP)
    assert (g.violations, g.states) == ([], 139)  # docs/tla.md: QueueFifoDedup, 139 states
    # ... and with the clock ending inside the interval, a producer's retry never is.
    assert not any(s.get("a") and s.get("b") for s, _ in g.nodes)


def _retry_to_the_tail(state: State, receipt: Receipt) -> tuple[State, bool]:
    after, ok = retry(state, receipt)
    if ok and receipt.id in after.visible:
        rest = tuple(x for x in after.visible if x != receipt.id)
        after = replace(after, visible=(*rest, receipt.id))
    return after, ok


def _receive_ignoring_the_lock(
    state: State, now: float, vt: float | None
) -> tuple[State, Delivery | None]:
    if not state.visible:
        return state, None
    return _deliver(state, state.visible[0], now, vt)


def _receive_batch_one_per_group(
    state: State, now: float, n: int, vt: float | None
) -> tuple[State, tuple[Delivery, ...]]:
    firsts: dict[str | None, str] = {}
    for id in state.deliverable():
        m = state.get(id)
        assert m is not None
        firsts.setdefault(m.group, id)
    rest = [id for id in state.deliverable() if id not in firsts.values()]
    out = []
    for id in [*firsts.values(), *rest][:n]:
        state, d = _deliver(state, id, now, vt)
        out.append(d)
    return state, tuple(out)


def _send_moving_the_window(
    state: State,
    id: str,
    body: str,
    delay: float | None = None,
    now: float = 0.0,
    group: str | None = None,
    dedup_id: str | None = None,
) -> tuple[State, object]:
    after, result = send(state, id, body, delay, now, group, dedup_id)
    if isinstance(result, str):  # the bug: the duplicate restarts the window
        after = replace(
            state, dedup=tuple((d, i, now if d == dedup_id else at) for d, i, at in state.dedup)
        )
    return after, result


def _send_recording_a_rejection(
    state: State,
    id: str,
    body: str,
    delay: float | None = None,
    now: float = 0.0,
    group: str | None = None,
    dedup_id: str | None = None,
) -> tuple[State, object]:
    after, result = send(state, id, body, delay, now, group, dedup_id)
    if result is False and dedup_id is not None:  # the bug: a refused send is recorded
        kept = tuple(r for r in state.dedup if r[0] != dedup_id)
        after = replace(state, dedup=tuple(sorted((*kept, (dedup_id, id, now)))))
    return after, result


@pytest.mark.parametrize(
    ("operation", "broken", "bounds", "invariant"),
    [
        ("retry", _retry_to_the_tail, ONE_GROUP, "GroupOrder"),
        ("receive", _receive_ignoring_the_lock, ONE_GROUP, "GroupOrder"),
        ("receive_batch", _receive_batch_one_per_group, QUEUE_FIFO, "GroupOrder"),
        ("send", _send_moving_the_window, QUEUE_FIFO_DEDUP, "DedupWindow"),
        (
            "send",
            _send_recording_a_rejection,
            Bounds(ids=("a", "b"), capacity=1, fifo=True, dedup=(("b",),)),
            "DedupWindow",
        ),
    ],
    ids=[
        "release-to-the-tail",
        "receive-ignores-the-lock",
        "batch-leaves-a-group-early",
        "window-from-the-latest-duplicate",
        "rejected-send-recorded",
    ],
)
def test_the_explorer_names_the_invariant_an_injected_fifo_bug_breaks(
    operation: str, broken: object, bounds: Bounds, invariant: str
) -> None:
    g = explore(bounds, registry=REGISTRY.replacing(operation, function=broken))
    assert g.violations and g.trace
    assert any(r.startswith(f"{invariant}:") for r in g.violations), g.violations


def test_cancel_and_purge_unlock_a_group() -> None:
    s = put(fifo(), ("a1", "g"), ("a2", "g"))
    s, _ = take(s)
    assert receive(s, 0.0, None)[1] is None
    cancelled, ok = cancel(s, "a1")
    assert ok and take(cancelled)[1].id == "a2"
    s = put(s, ("a3", "g"))
    purged, count = purge(s)
    assert count == 3 and purged.visible == () and purged.locked_groups() == frozenset()


def test_change_visibility_zero_puts_the_message_back_in_its_place() -> None:
    s = put(fifo(), ("a1", "g"), ("b1", "h"), ("a2", "g"))
    s, d = take(s)
    s, ok = change_visibility(s, d.receipt, 0.0, 0.0)
    assert ok and s.visible == ("a1", "b1", "a2")


def test_bounds_refuse_fifo_fields_on_a_standard_queue_and_a_bad_partition() -> None:
    with pytest.raises(ValueError, match="FIFO"):
        Bounds(groups=(("a", "b"),))
    with pytest.raises(ValueError, match="partition"):
        Bounds(fifo=True, groups=(("a",),))
    with pytest.raises(ValueError, match="one delay"):
        Bounds(fifo=True, delays=(0, 1))
    with pytest.raises(ValueError, match="disjoint"):
        Bounds(fifo=True, dedup=(("a",), ("a", "b")))
    b = Bounds(fifo=True, groups=(("a",), ("b",)), dedup=(("a", "b"),))
    assert (b.group_of("b"), b.dedup_of("a"), Bounds(fifo=True).group_of("a")) == (
        "b",
        "a_b",
        "a_b",
    )
    assert "fifo" not in repr(Bounds()) and "fifo=True" in repr(b)


def test_the_command_line_explores_fifo_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["explore", "--fifo", "--extend", "0", "--max-receives", "2", "--dedup", "ab"]
    assert main([*argv, "--groups", "ab", "--dedup-interval", "3"]) == 0
    out = capsys.readouterr().out
    assert "states:       139\n" in out and "GroupOrder DedupWindow" in out
    with pytest.raises(SystemExit) as exit:
        main(["explore", "--groups", "ab"])
    assert exit.value.code == 2


# -- random walks longer than the explorer's bounds ---------------------------------------------

_IDS = ("a", "b", "c", "d", "e", "f")
_STEP = st.one_of(
    st.tuples(
        st.just("send"),
        st.sampled_from(_IDS),
        st.sampled_from(("g", "h")),
        st.sampled_from((None, "x", "y")),
    ),
    st.tuples(st.just("send_batch"), st.lists(st.sampled_from(_IDS), min_size=1, max_size=3)),
    st.tuples(st.just("receive"), st.sampled_from((1.0, 3.0, None))),
    st.tuples(st.just("receive_batch"), st.integers(1, 4)),
    st.tuples(st.just("retry"), st.sampled_from(_IDS)),
    st.tuples(st.just("delete"), st.sampled_from(_IDS)),
    st.tuples(st.just("cancel"), st.sampled_from(_IDS)),
    st.tuples(st.just("advance"), st.sampled_from((0.5, 1.0, 2.0))),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_STEP, max_size=25), st.sampled_from((None, 3)), st.sampled_from((None, 2)))
def test_random_fifo_walks_keep_every_invariant(
    steps: list[tuple[object, ...]], capacity: int | None, max_receives: int | None
) -> None:
    s = fifo(capacity=capacity, max_receives=max_receives, dedup_interval=2.0)
    now = 0.0
    for step in steps:
        before = s
        result: object = None
        match step:
            case ("send", str(id), str(group), dedup):
                assert dedup is None or isinstance(dedup, str)
                s, result = send(s, id, id, now=now, group=group, dedup_id=dedup)
            case ("send_batch", list(ids)):
                if len(set(ids)) < len(ids):
                    continue
                entries = tuple((i, i, None, "g" if i < "d" else "h", i) for i in ids)
                s, result = send_batch(s, entries, now)
                atomic = batch_atomic(
                    before, "send_batch", {"entries": entries, "now": now}, s, result
                )
                assert atomic is None
            case ("receive", vt):
                assert vt is None or isinstance(vt, float)
                s, result = receive(s, now, vt)
            case ("receive_batch", int(n)):
                s, result = receive_batch(s, now, n, 1.0)
                args = {"now": now, "n": n, "vt": 1.0}
                assert batch_atomic(before, "receive_batch", args, s, result) is None
            case ("retry" | "delete" as name, str(id)):
                m = s.get(id)
                receipt = Receipt(s.queue, id, m.attempt if m is not None else 1)
                s, result = (retry if name == "retry" else delete)(s, receipt)
            case ("cancel", str(id)):
                s, result = cancel(s, id)
            case ("advance", float(dt)):
                now += dt
                s, result = expire(s, now)
        if result is False or isinstance(result, str) or result is None:
            assert s is before, step  # nothing done: the very same state
        assert violations(s) == [], step
        assert step_violations(before, s, now) == [], step
