"""``impl.Queue``'s batches and purge (issue 14): each one critical section, each all or none.

Unit behaviour of ``send_batch``, ``receive_batch``, ``delete_batch``,
``change_visibility_batch`` and ``purge`` and of every argument error (named by argument and
entry index, raised before anything changes), their trace steps, and the races of a blocked
``send_batch`` on the fake clock without sleeps: it wakes only when *all* its entries fit
(one freed slot: still blocked, checked with a bounded wait for a wakeup that must not come),
a single sender beside it gets a slot the batch cannot use, and a batch larger than the
capacity is a ``ValueError`` at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from impl import (
    DuplicateIdError,
    Empty,
    Entry,
    FakeClock,
    Full,
    Queue,
    Receipt,
    ShutDown,
    Stats,
)
from model_tests.support import NEVER, ProbeClock, Spawn


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def q(clock: FakeClock) -> Iterator[Queue[str]]:
    with Queue[str](capacity=20, visibility_timeout=5.0, clock=clock) as queue:
        yield queue


def _entries(*ids: str) -> list[Entry[str]]:
    return [Entry(id.upper(), id=id) for id in ids]


def _visible(q: Queue[str]) -> list[str]:
    return [m.id for m in q.snapshot().visible]


# -- send_batch -------------------------------------------------------------------------------


def test_send_batch_sends_every_entry_in_order(q: Queue[str], clock: FakeClock) -> None:
    ids = q.send_batch([Entry("A", id="a"), Entry("X"), Entry("B", id="b", delay=1.0)])
    assert ids[0] == "a" and ids[2] == "b" and ids[1] not in ("a", "b")
    assert _visible(q) == ["a", ids[1]]
    assert [(m.id, m.visible_at) for m in q.snapshot().delayed] == [("b", 1.0)]
    assert q.send_batch((Entry("C", id="c"),)) == ["c"]  # a tuple is a batch too
    clock.advance(1.0)
    q.sweep()
    assert _visible(q) == ["a", ids[1], "c", "b"]


def test_generated_ids_never_collide_with_the_batch_s_own(q: Queue[str]) -> None:
    ids = q.send_batch([Entry("X"), Entry("Y", id="msg-1"), Entry("Z", id="msg-2")])
    assert ids[1:] == ["msg-1", "msg-2"] and ids[0] not in ("msg-1", "msg-2")
    assert len(set(ids)) == 3


def test_send_batch_is_all_or_none_when_full(clock: FakeClock) -> None:
    with Queue[str](capacity=3, clock=clock) as q:
        q.send("A", id="a")
        q.send("B", id="b", delay=1.0)  # delayed messages hold their slot
        before = q.snapshot()
        with pytest.raises(Full, match="no room for 2"):
            q.send_batch(_entries("c", "d"), block=False)
        with pytest.raises(Full):
            q.send_batch(_entries("c", "d"), timeout=0)
        assert q.snapshot() == before
        assert q.send_batch(_entries("c")) == ["c"]  # ids unreserved, one fits


def test_send_batch_refuses_ids_taken_or_repeated(q: Queue[str]) -> None:
    q.send("A", id="a")
    with pytest.raises(DuplicateIdError, match=r"^entries\[1\]\.id 'a' was already accepted"):
        q.send_batch(_entries("b", "a"))
    with pytest.raises(DuplicateIdError, match=r"^entries\[2\]\.id 'c' repeats entries\[0\]"):
        q.send_batch(_entries("c", "d", "c"))
    assert _visible(q) == ["a"]
    assert q.send_batch(_entries("b", "c", "d")) == ["b", "c", "d"]


@pytest.mark.parametrize(
    ("entries", "error", "message"),
    [
        ([], ValueError, r"^entries must hold 1 to 10 items, got 0"),
        ([Entry("x")] * 11, ValueError, r"^entries must hold 1 to 10 items, got 11"),
        ("abc", TypeError, r"^entries must be a list or tuple"),
        (None, TypeError, r"^entries must be a list or tuple"),
        ([Entry("x"), "y"], TypeError, r"^entries\[1\] must be an impl\.Entry"),
        ([Entry("x", id="bad id")], ValueError, r"^entries\[0\]\.id must match"),
        ([Entry("x"), Entry("y", id=5)], TypeError, r"^entries\[1\]\.id must"),  # type: ignore[arg-type]
        ([Entry("x", delay=-1.0)], ValueError, r"^entries\[0\]\.delay must be a finite"),
        ([Entry("x", delay="1")], TypeError, r"^entries\[0\]\.delay must"),  # type: ignore[arg-type]
        ([Entry("x"), Entry("y", group="g")], ValueError, r"^entries\[1\]\.group must be None"),
        ([Entry("x", dedup_id="d")], ValueError, r"^entries\[0\]\.dedup_id must be None"),
    ],
    ids=[
        "empty",
        "eleven",
        "str",
        "none",
        "not-an-entry",
        "bad-id",
        "id-type",
        "negative-delay",
        "delay-type",
        "group",
        "dedup",
    ],
)
def test_a_bad_batch_is_refused_naming_the_entry(
    q: Queue[str], entries: Any, error: type, message: str
) -> None:
    before = q.snapshot()
    with pytest.raises(error, match=message):
        q.send_batch(entries)
    assert q.snapshot() == before


def test_a_batch_that_can_never_fit_is_a_value_error_at_once(clock: FakeClock) -> None:
    with Queue[str](capacity=2, clock=clock) as q:
        q.send("A", id="a")  # full or not, a batch of 3 never fits
        with pytest.raises(ValueError, match=r"^entries: a batch of 3 can never fit"):
            q.send_batch(_entries("b", "c", "d"))  # block=True, no timeout: no waiting
        assert q.stats().visible == 1
    with Queue[str](capacity=0, clock=clock) as q, pytest.raises(ValueError):
        q.send_batch(_entries("a"))


def test_send_batch_after_shutdown(q: Queue[str]) -> None:
    q.shutdown()
    with pytest.raises(ShutDown):
        q.send_batch(_entries("a"))


# -- receive_batch ----------------------------------------------------------------------------


def test_receive_batch_delivers_the_fifo_head_with_one_deadline(
    q: Queue[str], clock: FakeClock
) -> None:
    q.send_batch(_entries("a", "b", "c"))
    clock.advance(1.0)
    ms = q.receive_batch(2)
    assert [(m.id, m.body, m.attempt) for m in ms] == [("a", "A", 1), ("b", "B", 1)]
    assert all(m.receipt == q.receipt(m.id, 1) for m in ms)
    assert [m.deadline for m in q.snapshot().in_flight] == [6.0, 6.0]
    rest = q.receive_batch(10, visibility_timeout=None)  # fewer than asked
    assert [m.id for m in rest] == ["c"]
    assert q.snapshot().in_flight[-1].deadline is None
    with pytest.raises(Empty):
        q.receive_batch(block=False)
    with pytest.raises(Empty):
        q.receive_batch(timeout=0)


@pytest.mark.parametrize(
    ("n", "error", "message"),
    [
        (0, ValueError, r"^max_messages must be >= 1"),
        (11, ValueError, r"^max_messages must be <= 10"),
        (True, TypeError, r"^max_messages must be an int"),
        (2.0, TypeError, r"^max_messages must be an int"),
    ],
)
def test_receive_batch_max_messages_must_be_1_to_10(
    q: Queue[str], n: Any, error: type, message: str
) -> None:
    q.send("A", id="a")
    with pytest.raises(error, match=message):
        q.receive_batch(n)
    assert _visible(q) == ["a"]


def test_receive_batch_after_shutdown_drains_then_raises(q: Queue[str]) -> None:
    q.send_batch(_entries("a", "b"))
    q.shutdown()
    assert [m.id for m in q.receive_batch(1)] == ["a"]
    assert [m.id for m in q.receive_batch(5)] == ["b"]
    with pytest.raises(ShutDown):
        q.receive_batch()


def test_a_blocked_receive_batch_takes_a_whole_send_batch(spawn: Spawn) -> None:
    clock = ProbeClock()
    with Queue[str](visibility_timeout=None, clock=clock) as q:
        call = spawn(lambda: q.receive_batch(10))
        assert clock.wait_for_sleepers(q.not_empty, 1)
        q.send_batch(_entries("a", "b", "c"))
        assert [m.id for m in call.result()] == ["a", "b", "c"]


# -- delete_batch, change_visibility_batch ------------------------------------------------------


def test_delete_batch_each_in_order(q: Queue[str]) -> None:
    q.send_batch(_entries("a", "b", "c"))
    a, b, c = q.receive_batch(3)
    stale = q.receipt("c", 7)
    assert q.delete_batch([a.receipt, stale, a.receipt, b.receipt]) == [True, False, False, True]
    assert q.snapshot().done == frozenset({"a", "b"})
    assert [m.id for m in q.snapshot().in_flight] == ["c"]
    assert q.delete_batch((c.receipt,)) == [True]
    assert q.stats() == Stats(visible=0, in_flight=0, done=3, cancelled=0, dead=0)


def test_change_visibility_batch_each_in_order(q: Queue[str], clock: FakeClock) -> None:
    q.send_batch(_entries("a", "b", "c"))
    a, b, c = q.receive_batch(3)
    clock.advance(1.0)
    got = q.change_visibility_batch(
        [(a.receipt, 2.0), (b.receipt, 0), (b.receipt, 3.0), (a.receipt, 4.0), (c.receipt, 0.0)]
    )
    assert got == [True, True, False, True, True]  # b released: its receipt is stale after
    assert _visible(q) == ["b", "c"]
    assert [(m.id, m.deadline) for m in q.snapshot().in_flight] == [("a", 5.0)]


def test_change_visibility_batch_dead_letters_at_max_receives(clock: FakeClock) -> None:
    with Queue[str](max_receives=1, clock=clock) as q:
        q.send("A", id="a")
        a = q.receive()
        assert q.change_visibility_batch([(a.receipt, 0), (a.receipt, 0)]) == [True, False]
        assert [m.id for m in q.dead_letters()] == ["a"]


@pytest.mark.parametrize(
    ("method", "batch", "error", "message"),
    [
        ("delete_batch", [], ValueError, r"^receipts must hold 1 to 10 items, got 0"),
        ("delete_batch", [Receipt(1, "a", 1)] * 11, ValueError, r"^receipts must hold 1 to 10"),
        ("delete_batch", "ab", TypeError, r"^receipts must be a list or tuple"),
        ("delete_batch", [Receipt(1, "a", 1), ("a", 1)], TypeError, r"^receipts\[1\] must be"),
        ("change_visibility_batch", [], ValueError, r"^changes must hold 1 to 10 items"),
        ("change_visibility_batch", [Receipt(1, "a", 1)], TypeError, r"^changes\[0\] must be a"),
        ("change_visibility_batch", [(("a", 1), 1.0)], TypeError, r"^changes\[0\]\.receipt"),
        (
            "change_visibility_batch",
            [(Receipt(1, "a", 1), 1.0), (Receipt(1, "a", 1), -1.0)],
            ValueError,
            r"^changes\[1\]\.timeout must be a finite number >= 0",
        ),
    ],
)
def test_bad_receipt_batches_are_refused_naming_the_item(
    q: Queue[str], method: str, batch: Any, error: type, message: str
) -> None:
    q.send("A", id="a")
    m = q.receive()
    before = q.snapshot()
    with pytest.raises(error, match=message):
        getattr(q, method)(batch)
    assert q.snapshot() == before
    assert q.delete(m.receipt)


# -- purge ------------------------------------------------------------------------------------


def test_purge_cancels_every_active_message_and_nothing_else(clock: FakeClock) -> None:
    with Queue[str](max_receives=1, visibility_timeout=1.0, clock=clock) as q:
        q.send_batch(_entries("dead", "done", "flying", "visible"))
        q.send("Delayed", id="delayed", delay=1.0)
        dead = q.receive()
        assert q.retry(dead.receipt)  # dead-lettered
        done = q.receive()
        assert q.delete(done.receipt)
        flying = q.receive()
        assert q.purge() == 3  # visible, in flight, delayed
        assert q.stats() == Stats(visible=0, in_flight=0, done=1, cancelled=3, dead=1)
        assert q.snapshot().cancelled == frozenset({"flying", "visible", "delayed"})
        assert q.delete(flying.receipt) is False  # its receipt died
        assert q.purge() == 0
        clock.advance(2.0)
        q.sweep()  # no timer survived
        assert q.snapshot().visible == () and q.health().expiry_stalled is False
        with pytest.raises(DuplicateIdError):
            q.send("again", id="visible")  # ids stay reserved
        q.shutdown()
        assert q.purge() == 0  # works after shutdown


def test_purge_wakes_the_blocked_senders(spawn: Spawn) -> None:
    clock = ProbeClock()
    with Queue[str](capacity=2, clock=clock) as q:
        q.send_batch(_entries("a", "b"))
        one = spawn(lambda: q.send("C", id="c"))
        two = spawn(lambda: q.send_batch(_entries("d")))
        assert clock.wait_for_sleepers(q.not_full, 2)
        assert q.purge() == 2
        assert one.result() == "c" and two.result() == ["d"]


# -- the races of a blocked send_batch --------------------------------------------------------


def test_a_blocked_send_batch_wakes_only_when_all_its_entries_fit(spawn: Spawn) -> None:
    clock = ProbeClock()
    with Queue[str](capacity=3, visibility_timeout=None, clock=clock) as q:
        q.send_batch(_entries("a", "b", "c"))
        a, b, _ = q.receive_batch(3)
        batch = spawn(lambda: q.send_batch(_entries("d", "e")))
        assert clock.wait_for_sleepers(q.not_full, 1)
        assert q.delete(a.receipt)  # one slot: not enough for two
        batch.thread.join(NEVER)  # a wakeup that must not come
        assert not batch.finished
        assert q.stats().visible == 0  # no prefix was taken
        assert q.delete(b.receipt)  # the second slot: now both fit
        assert batch.result() == ["d", "e"]
        assert _visible(q) == ["d", "e"]


def test_a_single_sender_beside_a_blocked_batch_gets_the_slot(spawn: Spawn) -> None:
    clock = ProbeClock()
    with Queue[str](capacity=2, visibility_timeout=None, clock=clock) as q:
        q.send_batch(_entries("a", "b"))
        a, _ = q.receive_batch(2)
        batch = spawn(lambda: q.send_batch(_entries("c", "d")))
        assert clock.wait_for_sleepers(q.not_full, 1)
        single = spawn(lambda: q.send("E", id="e"))
        assert clock.wait_for_sleepers(q.not_full, 2)
        assert q.delete(a.receipt)  # one slot: the batch cannot use it, the single send can
        assert single.result() == "e"
        batch.thread.join(NEVER)
        assert not batch.finished
        q.shutdown()
        with pytest.raises(ShutDown):
            batch.result()


# -- traces -----------------------------------------------------------------------------------


def test_the_trace_steps_of_the_batches(q: Queue[str], clock: FakeClock) -> None:
    steps: list[object] = []
    q.record_trace(steps.append)
    q.send_batch([Entry("A", id="a"), Entry("B", id="b", delay=2.0)])
    (a,) = q.receive_batch(3)
    q.send_batch(_entries("c"))
    (c,) = q.receive_batch(1, visibility_timeout=None)
    q.change_visibility_batch([(a.receipt, 1.0), (c.receipt, 0)])
    q.delete_batch([a.receipt, q.receipt("z", 1)])
    q.purge()
    assert steps == [
        ("send_batch", (("a", "b"), (0.0, 2.0)), True, 0.0),
        ("receive_batch", (3, 5.0), (("a", 1, 5.0),), 0.0),
        ("send_batch", (("c",), (0.0,)), True, 0.0),
        ("receive_batch", (1, None), (("c", 1, None),), 0.0),
        ("change_visibility_batch", (("a", 1, 1.0), ("c", 1, 0.0)), (1.0, None), 0.0),
        ("delete_batch", (("a", 1), ("z", 1)), (True, False), 0.0),
        ("purge", (), 2, 0.0),
    ]
