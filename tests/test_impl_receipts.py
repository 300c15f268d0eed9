"""``impl.Queue``: what a receipt can do (delete, retry, change_visibility), cancel, receipt().

Only a live receipt acts: the one naming the delivery in flight now, on this queue. Every other
receipt gets ``False`` and leaves the queue exactly as it was, which each test checks with
``snapshot()``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from impl import DuplicateIdError, FakeClock, Queue, Receipt


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def q(clock: FakeClock) -> Iterator[Queue[str]]:
    with Queue[str](capacity=4, visibility_timeout=10, max_receives=3, clock=clock) as queue:
        yield queue


def ids(msgs: tuple[object, ...]) -> list[str]:
    return [m.id for m in msgs]  # type: ignore[attr-defined]


# -- receipt() --------------------------------------------------------------------------------


def test_receipt_names_the_delivery_it_is_asked_for(q: Queue[str]) -> None:
    q.send("A", id="a")
    m = q.receive()
    r = q.receipt("a", 1)
    assert r == m.receipt and hash(r) == hash(m.receipt)
    assert (r.id, r.attempt) == ("a", 1)
    assert q.receipt("a", 0).attempt == 0  # nameable, never live


@pytest.mark.parametrize(
    ("id", "attempt", "error", "name"),
    [
        (1, 1, TypeError, "id"),
        ("", 1, ValueError, "id"),
        ("a!", 1, ValueError, "id"),
        ("a", "1", TypeError, "attempt"),
        ("a", 1.0, TypeError, "attempt"),
        ("a", True, TypeError, "attempt"),
        ("a", -1, ValueError, "attempt"),
    ],
)
def test_receipt_rejects_bad_arguments(
    q: Queue[str], id: object, attempt: object, error: type[Exception], name: str
) -> None:
    with pytest.raises(error, match=name):
        q.receipt(id, attempt)  # type: ignore[arg-type]


@pytest.mark.parametrize("method", ["delete", "retry", "change_visibility"])
@pytest.mark.parametrize("bad", [("q", "a", 1), None, "a", 1])
def test_a_receipt_must_be_a_receipt(q: Queue[str], method: str, bad: object) -> None:
    q.send("A", id="a")
    q.receive()
    before = q.snapshot()
    args: tuple[object, ...] = (bad, 5) if method == "change_visibility" else (bad,)
    with pytest.raises(TypeError, match="receipt"):
        getattr(q, method)(*args)
    assert q.snapshot() == before


def test_a_receipt_checks_its_field_types() -> None:
    with pytest.raises(TypeError, match="attempt"):
        Receipt(1, "a", "1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="id"):
        Receipt(1, 5, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="queue"):
        Receipt("q", "a", 1)  # type: ignore[arg-type]


# -- which receipts are live ------------------------------------------------------------------


@pytest.mark.parametrize("method", ["delete", "retry", "change_visibility"])
def test_only_the_live_receipt_acts(q: Queue[str], clock: FakeClock, method: str) -> None:
    q.send("A", id="a")
    q.send("V", id="v")  # stays visible: its receipts are never live
    first = q.receive()
    assert q.retry(first.receipt)
    q.receive()  # v
    second = q.receive()  # a again, attempt 2
    assert second.attempt == 2
    other: Queue[str] = Queue(capacity=4, visibility_timeout=None, clock=clock)
    other.send("A", id="a")
    assert other.receive().receipt == other.receipt("a", 1)
    not_live = [
        first.receipt,  # stale
        q.receipt("a", 3),  # future
        q.receipt("a", 0),  # attempt 0
        q.receipt("zz", 1),  # unknown id
        other.receipt("a", 2),  # another queue's, same id and attempt
    ]
    before = q.snapshot()
    for r in not_live:
        args: tuple[object, ...] = (r, 5) if method == "change_visibility" else (r,)
        assert getattr(q, method)(*args) is False, r
        assert q.snapshot() == before
    assert other.snapshot().in_flight[0].attempt == 1  # untouched by q's calls
    args = (second.receipt, 5) if method == "change_visibility" else (second.receipt,)
    assert getattr(q, method)(*args) is True


def test_delete_finishes_the_message_and_only_once(q: Queue[str]) -> None:
    q.send("A", id="a")
    m = q.receive()
    assert q.delete(m.receipt) is True
    s = q.snapshot()
    assert (s.done, ids(s.in_flight), ids(s.visible)) == (frozenset({"a"}), [], [])
    assert q.delete(m.receipt) is False
    assert q.retry(m.receipt) is False
    assert q.change_visibility(m.receipt, 0) is False
    assert q.snapshot() == s
    with pytest.raises(DuplicateIdError):
        q.send("A", id="a")


def test_a_visible_message_has_no_live_receipt(q: Queue[str]) -> None:
    q.send("A", id="a")
    m = q.receive()
    q.retry(m.receipt)
    before = q.snapshot()
    for attempt in (0, 1, 2):
        assert q.delete(q.receipt("a", attempt)) is False
    assert q.snapshot() == before


# -- retry ------------------------------------------------------------------------------------


def test_retry_appends_to_the_tail_and_keeps_the_attempt(q: Queue[str]) -> None:
    for i in "abc":
        q.send(i.upper(), id=i)
    a = q.receive()
    assert q.retry(a.receipt)
    s = q.snapshot()
    assert ids(s.visible) == ["b", "c", "a"]
    assert [m.attempt for m in s.visible] == [0, 0, 1]
    assert [(m.id, m.attempt) for m in (q.receive(), q.receive(), q.receive())] == [
        ("b", 1),
        ("c", 1),
        ("a", 2),
    ]


def test_retry_after_max_receives_dead_letters(q: Queue[str]) -> None:
    q.send("A", id="a")
    q.send("B", id="b")
    for attempt in (1, 2, 3):
        m = q.receive()
        while m.id != "a":
            q.retry(m.receipt)
            m = q.receive()
        assert m.attempt == attempt
        assert q.retry(m.receipt)
    s = q.snapshot()
    assert ids(s.dead) == ["a"] and s.dead[0].attempt == 3
    assert [(m.id, m.attempt) for m in q.dead_letters()] == [("a", 3)]
    assert q.stats().dead == 1
    assert q.retry(q.receipt("a", 3)) is False  # dead is terminal


# -- change_visibility ------------------------------------------------------------------------


def test_change_visibility_sets_the_deadline_from_now(q: Queue[str], clock: FakeClock) -> None:
    q.send("A", id="a")
    m = q.receive()  # deadline 10
    clock.advance(3)
    assert q.change_visibility(m.receipt, 10)
    assert q.snapshot().in_flight[0].deadline == 13.0  # from now, not 10 + 10
    clock.advance(9.5)
    q.sweep()
    assert ids(q.snapshot().in_flight) == ["a"]  # the old deadline 10 no longer counts
    clock.advance(0.5)
    q.sweep()
    s = q.snapshot()
    assert ids(s.visible) == ["a"] and s.visible[0].deadline is None
    assert q.delete(m.receipt) is False


def test_change_visibility_can_shorten_too(q: Queue[str], clock: FakeClock) -> None:
    q.send("A", id="a")
    m = q.receive()
    assert q.change_visibility(m.receipt, 1)
    clock.advance(1)
    q.sweep()
    assert ids(q.snapshot().visible) == ["a"]


def test_change_visibility_zero_releases_to_the_tail(q: Queue[str]) -> None:
    q.send("A", id="a")
    q.send("B", id="b")
    m = q.receive()
    assert q.change_visibility(m.receipt, 0)
    assert ids(q.snapshot().visible) == ["b", "a"]
    assert q.receive().id == "b"
    assert q.receive().attempt == 2


def test_change_visibility_zero_after_max_receives_dead_letters(clock: FakeClock) -> None:
    with Queue[str](visibility_timeout=None, max_receives=1, clock=clock) as q:
        q.send("A", id="a")
        assert q.change_visibility(q.receive().receipt, 0)
        assert ids(q.snapshot().dead) == ["a"]


def test_change_visibility_arms_a_message_that_never_expired(clock: FakeClock) -> None:
    with Queue[str](visibility_timeout=None, clock=clock) as q:
        q.send("A", id="a")
        m = q.receive()
        assert q.snapshot().in_flight[0].deadline is None
        assert q.change_visibility(m.receipt, 2)
        clock.advance(2)
        q.sweep()
        assert ids(q.snapshot().visible) == ["a"]


@pytest.mark.parametrize(
    ("timeout", "error"),
    [
        (-1, ValueError),
        (float("nan"), ValueError),
        (float("inf"), ValueError),
        ("5", TypeError),
        (None, TypeError),
        (True, TypeError),
    ],
)
def test_change_visibility_rejects_a_bad_timeout(
    q: Queue[str], timeout: object, error: type[Exception]
) -> None:
    q.send("A", id="a")
    m = q.receive()
    before = q.snapshot()
    with pytest.raises(error, match="timeout"):
        q.change_visibility(m.receipt, timeout)  # type: ignore[arg-type]
    assert q.snapshot() == before


# -- cancel -----------------------------------------------------------------------------------


def test_cancel_a_visible_message_keeps_the_others_in_order(q: Queue[str]) -> None:
    for i in "abcd":
        q.send(i.upper(), id=i)
    assert q.cancel("b")
    assert q.cancel("d")
    s = q.snapshot()
    assert ids(s.visible) == ["a", "c"] and s.cancelled == frozenset({"b", "d"})
    q.send("E", id="e")  # cancelling freed capacity (4)
    q.send("F", id="f")
    assert [q.receive().id for _ in range(4)] == ["a", "c", "e", "f"]


def test_cancel_an_in_flight_message_kills_its_receipt(q: Queue[str], clock: FakeClock) -> None:
    q.send("A", id="a")
    m = q.receive()
    assert q.cancel("a")
    assert q.delete(m.receipt) is False
    clock.advance(10)
    q.sweep()  # its old deadline must not bring it back
    s = q.snapshot()
    assert (ids(s.visible), ids(s.in_flight), s.cancelled) == ([], [], frozenset({"a"}))
    assert q.stats().cancelled == 1


def test_cancel_of_unknown_or_finished_ids_is_false_and_changes_nothing(q: Queue[str]) -> None:
    for i in "dcx":
        q.send(i.upper(), id=i)
    q.delete(q.receive().receipt)  # d done
    q.cancel("c")  # c cancelled; x stays visible
    before = q.snapshot()
    for i in ("d", "c", "nobody"):
        assert q.cancel(i) is False
    assert q.snapshot() == before
    with pytest.raises(DuplicateIdError):
        q.send("C", id="c")  # a cancelled id stays reserved


def test_cancel_of_a_dead_message_is_false(clock: FakeClock) -> None:
    with Queue[str](max_receives=1, clock=clock) as q:
        q.send("A", id="a")
        q.retry(q.receive().receipt)
        before = q.snapshot()
        assert ids(before.dead) == ["a"]
        assert q.cancel("a") is False
        assert q.snapshot() == before


@pytest.mark.parametrize(("id", "error"), [(None, TypeError), (3, TypeError), ("", ValueError)])
def test_cancel_rejects_a_malformed_id(q: Queue[str], id: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="id"):
        q.cancel(id)  # type: ignore[arg-type]


# -- stats ------------------------------------------------------------------------------------


def test_stats_count_every_state(clock: FakeClock) -> None:
    with Queue[str](max_receives=1, clock=clock) as q:
        for i in "vfdcx":
            q.send(i.upper(), id=i)
        q.delete(q.receive().receipt)  # v done
        q.receive()  # f in flight
        q.retry(q.receive().receipt)  # d dead
        q.cancel("c")
        st = q.stats()
        assert (st.visible, st.in_flight, st.done, st.cancelled, st.dead) == (1, 1, 1, 1, 1)
