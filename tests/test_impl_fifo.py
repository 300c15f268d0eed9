"""Single-layer tests of ``impl.FifoQueue`` (contract section 2b): message groups, the group
lock, head-of-group redelivery, the dedup window on a fake clock, batches, argument errors, and
the wake-up of a receiver waiting for a locked group's next message (no sleeps:
``model_tests.support``)."""

from __future__ import annotations

import pytest

import impl
from impl import Entry, FakeClock, FifoQueue
from model_tests.support import ProbeClock, Spawn


def make(**kw: object) -> FifoQueue[str]:
    kw.setdefault("clock", FakeClock())
    kw.setdefault("visibility_timeout", 10.0)
    return FifoQueue[str](**kw)  # type: ignore[arg-type]


def visible(q: FifoQueue[str]) -> list[str]:
    return [m.id for m in q.snapshot().visible]


# -- groups and the group lock ------------------------------------------------------------------


def test_constructor_and_defaults() -> None:
    with FifoQueue[str]() as q:
        # Siblings over one shell: a FIFO send takes other arguments than a standard one.
        assert isinstance(q, impl.BaseQueue) and not isinstance(q, impl.Queue)
        assert q.dedup_interval == 300.0 and q.delay == 0.0 and q.visibility_timeout == 30.0
    for bad in (-1.0, 0.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="dedup_interval"):
            FifoQueue[str](dedup_interval=bad)
    with pytest.raises(TypeError, match="dedup_interval"):
        FifoQueue[str](dedup_interval="5")  # type: ignore[arg-type]


def test_within_a_group_messages_are_delivered_in_send_order_one_group_at_a_time() -> None:
    with make() as q:
        for id, g in (("a1", "A"), ("b1", "B"), ("a2", "A"), ("b2", "B")):
            assert q.send(id.upper(), group=g, id=id) == id
        m1 = q.receive(block=False)
        assert (m1.id, m1.group, m1.attempt) == ("a1", "A", 1)
        # A is locked while a1 is in flight: the scan skips a2 and takes B's head.
        m2 = q.receive(block=False)
        assert (m2.id, m2.group) == ("b1", "B")
        with pytest.raises(impl.Empty):
            q.receive(block=False)  # a2 and b2 are visible, but both groups are locked
        assert visible(q) == ["a2", "b2"]
        assert q.delete(m1.receipt)
        assert q.receive(block=False).id == "a2"
        assert q.delete(m2.receipt)
        assert q.receive(block=False).id == "b2"


def test_group_is_required_and_of_the_id_form_and_no_per_send_delay() -> None:
    with make() as q:
        with pytest.raises(TypeError):
            q.send("x")  # type: ignore[call-arg]
        with pytest.raises(ValueError, match="group is required"):
            q.send("x", group=None)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="group"):
            q.send("x", group="no spaces")
        with pytest.raises(ValueError, match="dedup_id"):
            q.send("x", group="A", dedup_id="")
        with pytest.raises(TypeError):
            q.send("x", group="A", delay=1.0)  # type: ignore[call-arg]
        assert q.stats() == impl.Stats(0, 0, 0, 0, 0, 0)


def test_a_released_message_comes_back_at_the_head_of_its_group() -> None:
    clock = FakeClock()
    with make(clock=clock) as q:
        q.send("1", group="A", id="a1")
        q.send("x", group="B", id="b1")
        q.send("2", group="A", id="a2")
        m = q.receive(block=False)
        assert q.retry(m.receipt)
        assert visible(q) == ["a1", "b1", "a2"]  # back in its place, not at the tail
        m = q.receive(block=False)
        assert (m.id, m.attempt) == ("a1", 2)
        assert q.change_visibility(m.receipt, 0)
        assert visible(q) == ["a1", "b1", "a2"]
        m = q.receive(block=False)
        assert (m.id, m.attempt) == ("a1", 3)
        clock.advance(10.0)  # its deadline: expiry releases it to its place too
        q.sweep()
        assert visible(q) == ["a1", "b1", "a2"]
        assert q.receive(block=False).id == "a1"


def test_dead_lettering_unlocks_the_group() -> None:
    with make(max_receives=1) as q:
        q.send("1", group="A", id="a1")
        q.send("2", group="A", id="a2")
        m = q.receive(block=False)
        assert q.retry(m.receipt)  # its one delivery used up: dead-lettered
        assert [(d.id, d.group) for d in q.dead_letters()] == [("a1", "A")]
        assert q.receive(block=False).id == "a2"


def test_cancel_and_purge_unlock() -> None:
    with make() as q:
        q.send("1", group="A", id="a1")
        q.send("2", group="A", id="a2")
        q.receive(block=False)
        assert q.cancel("a1")
        m = q.receive(block=False)
        assert m.id == "a2"
        assert q.purge() == 1
        q.send("3", group="A", id="a3")
        assert q.receive(block=False).id == "a3"


def test_queue_delay_applies_and_a_fired_delay_keeps_send_order() -> None:
    clock = FakeClock()
    with make(clock=clock, delay=5.0) as q:
        q.send("1", group="A", id="a1")
        clock.advance(1.0)
        q.send("2", group="A", id="a2")
        assert q.stats().delayed == 2
        clock.advance(4.0)
        q.sweep()
        assert visible(q) == ["a1"]
        clock.advance(1.0)
        q.sweep()
        assert visible(q) == ["a1", "a2"]


# -- deduplication --------------------------------------------------------------------------------


def test_a_duplicate_within_the_interval_returns_the_earlier_id_and_changes_nothing() -> None:
    clock = FakeClock()
    with make(clock=clock, dedup_interval=300.0) as q:
        first = q.send("x", group="A", dedup_id="d")
        before = q.snapshot()
        clock.advance(299.0)
        # Even with an id already taken or another group: the dedup check comes first.
        assert q.send("y", group="B", dedup_id="d", id=first) == first
        assert q.send("y", group="B", dedup_id="d") == first
        assert q.snapshot() == before
        # Whatever became of the earlier message: still a duplicate.
        assert q.delete(q.receive(block=False).receipt)
        assert q.send("z", group="A", dedup_id="d") == first


def test_the_window_is_measured_from_the_first_acceptance_and_ends_at_the_interval() -> None:
    clock = FakeClock()
    with make(clock=clock, dedup_interval=300.0) as q:
        first = q.send("x", group="A", dedup_id="d")
        clock.advance(200.0)
        assert q.send("x", group="A", dedup_id="d") == first  # does not extend the window
        clock.advance(100.0)  # exactly the interval after the first acceptance: new again
        second = q.send("x", group="A", dedup_id="d")
        assert second != first
        clock.advance(299.0)
        assert q.send("x", group="A", dedup_id="d") == second  # the window restarted
        clock.advance(1.0)
        assert q.send("x", group="A", dedup_id="d") not in (first, second)


def test_without_a_dedup_id_a_send_is_never_a_duplicate() -> None:
    with make() as q:
        assert q.send("x", group="A") != q.send("x", group="A")


def test_a_rejected_send_records_nothing() -> None:
    with make(capacity=1) as q:
        q.send("x", group="A", id="a")
        with pytest.raises(impl.Full):
            q.send("y", group="A", dedup_id="d", block=False)
        with pytest.raises(impl.DuplicateIdError):
            q.send("y", group="A", dedup_id="e", id="a")
        q.delete(q.receive(block=False).receipt)
        assert q.send("y", group="A", dedup_id="d") != "a"
        q.delete(q.receive(block=False).receipt)
        assert q.send("z", group="A", dedup_id="e", id="e1") == "e1"


def test_a_duplicate_needs_no_room() -> None:
    with make(capacity=1) as q:
        first = q.send("x", group="A", dedup_id="d")
        assert q.send("x", group="A", dedup_id="d", block=False) == first


# -- batches ----------------------------------------------------------------------------------


def test_receive_batch_takes_a_group_in_send_order_then_the_next_group() -> None:
    with make() as q:
        for id, g in (("a1", "A"), ("b1", "B"), ("a2", "A"), ("c1", "C"), ("b2", "B")):
            q.send(id, group=g, id=id)
        assert [m.id for m in q.receive_batch(3)] == ["a1", "a2", "b1"]
        assert [(m.id, m.group) for m in q.receive_batch(10)] == [("c1", "C")]


def test_send_batch_reports_duplicates_per_entry_and_takes_the_rest_whole() -> None:
    clock = FakeClock()
    with make(clock=clock, capacity=3) as q:
        first = q.send("x", group="A", dedup_id="d")
        ids = q.send_batch(
            [Entry("p", group="A", dedup_id="d"), Entry("q", group="B", id="q", dedup_id="e")]
        )
        assert ids == [first, "q"]
        assert q.send("again", group="B", dedup_id="e") == "q"
        # Two new entries do not fit (one slot left): none is accepted, the duplicate is no help.
        with pytest.raises(impl.Full):
            q.send_batch(
                [Entry("r", group="A", dedup_id="d"), Entry("s", group="C"), Entry("t", group="C")],
                block=False,
            )
        assert q.stats().visible == 2
        # A batch of duplicates only needs no room at all.
        assert q.send_batch([Entry("r", group="A", dedup_id="d")], block=False) == [first]


def test_an_id_repeated_only_beside_a_duplicate_entry_is_no_repeat() -> None:
    with make() as q:
        q.send("B", group="g", id="b", dedup_id="x")
        entries = [Entry("A", group="g", id="a"), Entry("A", group="g", id="a", dedup_id="x")]
        assert q.send_batch(entries) == ["a", "b"]
        with pytest.raises(
            impl.DuplicateIdError, match=r"entries\[1\].id 'c' repeats entries\[0\]"
        ):
            q.send_batch([Entry("C", group="g", id="c"), Entry("C", group="g", id="c")])
        assert visible(q) == ["b", "a"]


def test_send_batch_argument_errors_name_the_entry() -> None:
    with make() as q:
        with pytest.raises(ValueError, match=r"entries\[1\].dedup_id .* repeats entries\[0\]"):
            q.send_batch([Entry("a", group="A", dedup_id="d"), Entry("b", group="A", dedup_id="d")])
        with pytest.raises(ValueError, match=r"entries\[1\].group is required"):
            q.send_batch([Entry("a", group="A"), Entry("b")])
        with pytest.raises(ValueError, match=r"entries\[0\].delay"):
            q.send_batch([Entry("a", group="A", delay=1.0)])
        with pytest.raises(ValueError, match=r"entries\[0\].group"):
            q.send_batch([Entry("a", group="bad group")])
        assert q.stats().visible == 0
        # The standard queue refuses FIFO entries (unchanged).
    with impl.Queue[str]() as std, pytest.raises(ValueError, match="group"):
        std.send_batch([Entry("a", group="A")])


def test_the_trace_names_what_is_delivered_and_the_fifo_send_arguments() -> None:
    clock = FakeClock()
    with make(clock=clock) as q:
        steps: list[impl.TraceStep] = []
        q.record_trace(steps.append)
        q.send("1", group="A", id="a1", dedup_id="d")
        q.send("2", group="B", id="b1")
        q.send("again", group="A", dedup_id="d")
        q.receive(block=False)
        q.receive_batch(5)
        assert steps == [
            ("send", ("a1", 0.0, "A", "d"), True, 0.0),
            ("send", ("b1", 0.0, "B", None), True, 0.0),
            ("send", (None, 0.0, "A", "d"), "a1", 0.0),
            ("receive", (10.0,), ("a1", 1, 10.0), 0.0),
            ("receive_batch", (5, 10.0), (("b1", 1, 10.0),), 0.0),
        ]


# -- wake-ups: every unlock of a group with a visible message wakes a waiting receiver ---------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("unlock", ["delete", "retry", "change_visibility", "cancel", "dead"])
def test_a_receiver_waiting_on_a_locked_group_is_woken_by_its_unlock(
    spawn: Spawn, unlock: str
) -> None:
    # The scenario of TLC's FIFO lost-wakeup model: the only visible message (a2) belongs to a
    # locked group, so a receiver blocks with no timeout; the transition that ends a1's
    # flight must wake it, or it sleeps beside a deliverable message forever.
    clock = ProbeClock()
    with make(clock=clock, max_receives=1 if unlock == "dead" else None) as q:
        q.send("1", group="A", id="a1")
        q.send("2", group="A", id="a2")
        m = q.receive(block=False)
        receiver = spawn(q.receive)
        assert clock.wait_for_sleepers(q.not_empty, 1), "the receiver never blocked"
        assert not receiver.finished
        if unlock == "delete":
            assert q.delete(m.receipt)
            want = "a2"
        elif unlock == "retry":
            assert q.retry(m.receipt)
            want = "a1"
        elif unlock == "change_visibility":
            assert q.change_visibility(m.receipt, 0)
            want = "a1"
        elif unlock == "cancel":
            assert q.cancel("a1")
            want = "a2"
        else:
            assert q.retry(m.receipt)  # max_receives=1: dead-lettered
            want = "a2"
        assert receiver.result().id == want  # fails the test if the unlock did not wake it


@pytest.mark.timeout(60)
def test_a_receiver_waiting_on_a_locked_group_is_woken_by_expiry(spawn: Spawn) -> None:
    clock = ProbeClock()
    with make(clock=clock) as q:
        q.send("1", group="A", id="a1")
        q.send("2", group="A", id="a2")
        q.receive(block=False)
        receiver = spawn(q.receive)
        assert clock.wait_for_sleepers(q.not_empty, 1), "the receiver never blocked"
        spawn(lambda: clock.advance(10.0)).result()
        m = receiver.result()  # the sweeper's release must wake it
        assert (m.id, m.attempt) == ("a1", 2)


@pytest.mark.timeout(60)
def test_a_send_to_a_locked_group_does_not_satisfy_a_waiting_receiver(spawn: Spawn) -> None:
    clock = ProbeClock()
    with make(clock=clock) as q:
        q.send("1", group="A", id="a1")
        m = q.receive(block=False)
        receiver = spawn(lambda: q.receive(timeout=5.0))
        assert clock.wait_for_thread(receiver.thread)
        q.send("2", group="A", id="a2")  # may wake it; it must go back to sleep
        with q.mutex:
            assert not receiver.finished
        q.send("3", group="B", id="b1")
        assert receiver.result().id == "b1"
        assert q.delete(m.receipt)


def test_shutdown_with_only_locked_groups_visible_raises_shutdown() -> None:
    with make() as q:
        q.send("1", group="A", id="a1")
        q.send("2", group="A", id="a2")
        q.receive(block=False)
        q.shutdown()
        with pytest.raises(impl.ShutDown):
            q.receive()


def test_messages_carry_their_group_and_standard_messages_none() -> None:
    with make() as q, impl.Queue[str]() as std:
        q.send("x", group="A", id="a")
        m = q.receive(block=False)
        assert isinstance(m, impl.FifoMessage) and isinstance(m, impl.Message)
        assert m.group == "A" and q.dead_letters() == []
        std.send("y", id="b")
        s = std.receive(block=False)
        assert type(s) is impl.Message and s.group is None


@pytest.mark.timeout(60)
def test_a_batch_receiver_waiting_on_a_locked_group_is_woken_by_the_delete(spawn: Spawn) -> None:
    clock = ProbeClock()
    with make(clock=clock) as q:
        for id in ("a1", "a2", "a3"):
            q.send(id, group="A", id=id)
        m = q.receive(block=False)
        receiver = spawn(lambda: q.receive_batch(10))
        assert clock.wait_for_sleepers(q.not_empty, 1), "the receiver never blocked"
        assert q.delete(m.receipt)
        assert [x.id for x in receiver.result()] == ["a2", "a3"]


def test_snapshot_shows_groups_send_order_and_dedup_records() -> None:
    clock = FakeClock()
    q = make(clock=clock, dedup_interval=10.0)
    q.send("x", group="g", id="a", dedup_id="d1")
    clock.advance(1.0)
    q.send_batch([Entry("y", id="b", group="h"), Entry("z", id="c", group="g", dedup_id="d0")])
    assert q.send("dup", group="h", dedup_id="d1") == "a"  # a duplicate records nothing
    m = q.receive(block=False)
    snap = q.snapshot()
    assert [(s.id, s.group, s.sent) for s in snap.in_flight] == [("a", "g", 0)]
    assert [(s.id, s.group, s.sent) for s in snap.visible] == [("b", "h", 1), ("c", "g", 2)]
    t0 = clock.now() - 1.0
    assert snap.dedup == (("d0", "c", t0 + 1.0), ("d1", "a", t0))
    assert q.delete(m.receipt)
    # A standard queue's snapshot keeps the defaults.
    std = impl.Queue[str](clock=FakeClock())
    std.send("x", id="a")
    assert std.snapshot() == impl.Snapshot(
        visible=(impl.SnapshotMessage("a", "x", 0, None),),
        in_flight=(),
        dead=(),
        done=frozenset(),
        cancelled=frozenset(),
    )
