"""Targeted tests of the spec: each row of the contract's transition table, each rejection.

Every expected value here is written from the contract (``docs/contract.md``, section 2),
not read back from the spec. Every test also checks that the invariants hold along the way
(:func:`run`), so a transition that gets the answer right but breaks the state still fails.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from spec import (
    MAX_BATCH,
    Config,
    Delivery,
    Receipt,
    State,
    Status,
    batch_atomic,
    cancel,
    change_visibility,
    change_visibility_batch,
    delete,
    delete_batch,
    due,
    expire,
    fire_delay,
    initial,
    next_deadline,
    purge,
    receive,
    receive_batch,
    retry,
    send,
    send_batch,
    step_violations,
    violations,
)


def checked(before: State, after: State, now: float | None = None) -> State:
    """``after``, once every state and step invariant has been checked for the step."""
    assert violations(after) == []
    assert step_violations(before, after, now) == []
    return after


def queue(*ids: str, capacity: int | None = None, max_receives: int | None = None) -> State:
    """A queue holding ``ids`` (body: the id upper-cased), all visible, in that order."""
    s = initial(Config(capacity=capacity, max_receives=max_receives))
    for id in ids:
        after, ok = send(s, id, id.upper())
        assert ok
        s = checked(s, after)
    return s


def take(s: State, now: float = 0.0, vt: float | None = 10.0) -> tuple[State, Delivery]:
    after, d = receive(s, now, vt)
    assert d is not None
    return checked(s, after), d


def status(s: State, id: str) -> Status:
    m = s.get(id)
    assert m is not None
    return m.status


def attempt(s: State, id: str) -> int:
    m = s.get(id)
    assert m is not None
    return m.attempt


def deadline(s: State, id: str) -> float | None:
    m = s.get(id)
    assert m is not None
    return m.deadline


# -- send -------------------------------------------------------------------------------------


def test_send_appends_to_the_tail_of_visible() -> None:
    s = queue("a", "b")
    after, ok = send(s, "c", "C")
    assert ok
    after = checked(s, after)
    assert after.visible == ("a", "b", "c")
    assert after.get("c") is not None and after.get("c") == after.messages[2]
    assert (status(after, "c"), attempt(after, "c"), deadline(after, "c")) == (
        Status.VISIBLE,
        0,
        None,
    )


def test_send_rejects_a_duplicate_id_of_an_active_message() -> None:
    s = queue("a")
    after, ok = send(s, "a", "other")
    assert not ok and after is s


@pytest.mark.parametrize("end", ["delete", "cancel", "dead"])
def test_send_rejects_an_id_whose_message_has_ended(end: str) -> None:
    s, d = take(queue("a", max_receives=1))
    if end == "delete":
        s, ok = delete(s, d.receipt)
    elif end == "cancel":
        s, ok = cancel(s, "a")
    else:
        s, ok = retry(s, d.receipt)
    assert ok and status(s, "a").terminal and s.active == 0
    after, ok = send(s, "a", "again")
    assert not ok and after is s


def test_send_rejects_when_full_and_accepts_once_room_is_freed() -> None:
    s = queue("a", "b", capacity=2)
    after, ok = send(s, "c", "C")
    assert not ok and after is s
    s, d = take(s)
    after, ok = send(s, "c", "C")
    assert not ok and after is s, "receiving does not free capacity"
    s, ok = delete(s, d.receipt)
    assert ok
    after, ok = send(s, "c", "C")
    assert ok and checked(s, after).visible == ("b", "c")


def test_a_rejected_send_does_not_reserve_its_id() -> None:
    s = queue("a", capacity=1)
    s2, ok = send(s, "b", "B")
    assert not ok and s2 is s
    s, ok = cancel(s, "a")
    assert ok
    after, ok = send(s, "b", "B")
    assert ok and checked(s, after).visible == ("b",)


def test_capacity_zero_accepts_nothing() -> None:
    s = initial(Config(capacity=0))
    for id in ("a", "b"):
        after, ok = send(s, id, "x")
        assert not ok and after is s


def test_capacity_none_is_unbounded() -> None:
    ids = [f"m{i}" for i in range(50)]
    s = queue(*ids)
    assert s.visible == tuple(ids) and s.active == 50


def test_separate_queues_share_nothing() -> None:
    q0 = queue("a")
    q1 = initial(Config(), queue=1)
    q1, ok = send(q1, "a", "in queue 1")
    assert ok, "an id reserved by one queue is free in another"
    q1, d1 = take(q1)
    after, ok = delete(q0, Receipt(1, "a", 1))
    assert not ok and after is q0
    q0, d0 = take(q0)
    assert d0.receipt != d1.receipt
    after, ok = delete(q0, d1.receipt)
    assert not ok and after is q0, "another queue's receipt with the same id and attempt"


# -- receive ----------------------------------------------------------------------------------


def test_receive_hands_out_the_head_with_attempt_one_and_a_deadline() -> None:
    s = queue("a", "b")
    s2, d = take(s, now=5.0, vt=30.0)
    assert (d.id, d.body, d.attempt, d.receipt) == ("a", "A", 1, Receipt(0, "a", 1))
    assert s2.visible == ("b",) and s2.in_flight == ("a",)
    assert status(s2, "a") is Status.IN_FLIGHT and deadline(s2, "a") == 35.0


def test_receive_from_an_empty_queue_returns_nothing_and_the_same_state() -> None:
    s = initial()
    after, d = receive(s, 0.0, 1.0)
    assert d is None and after is s
    s, _ = take(queue("a"))
    after, d = receive(s, 0.0, 1.0)
    assert d is None and after is s, "an in-flight message is not handed out again"


def test_receive_with_vt_none_never_expires() -> None:
    s, d = take(queue("a"), vt=None)
    assert deadline(s, "a") is None and next_deadline(s) is None
    after, released = expire(s, 1e12)
    assert released == () and after == s
    assert delete(s, d.receipt)[1]


@pytest.mark.parametrize(
    ("name", "now", "vt"),
    [("now", -1.0, 1.0), ("now", math.nan, 1.0), ("visibility_timeout", 0.0, math.inf)],
)
def test_receive_rejects_bad_times(name: str, now: float, vt: float) -> None:
    with pytest.raises(ValueError, match=rf"^{name} must be a finite number >= 0, got "):
        receive(queue("a"), now, vt)


def test_each_delivery_makes_the_next_attempt() -> None:
    s = queue("a")
    for n in (1, 2, 3):
        s, d = take(s)
        assert d.attempt == n and d.receipt.attempt == n
        s, ok = retry(s, d.receipt)
        assert ok and attempt(s, "a") == n, "release keeps the attempt counter"


# -- delete and the rejected receipts ------------------------------------------------------------


def test_delete_with_a_live_receipt_makes_the_message_done() -> None:
    s, d = take(queue("a", "b", capacity=2))
    after, ok = delete(s, d.receipt)
    assert ok
    after = checked(s, after)
    assert status(after, "a") is Status.DONE and after.in_flight == () and after.active == 1
    assert deadline(after, "a") is None
    again, ok = delete(after, d.receipt)
    assert not ok and again is after, "a second delete with the same receipt"


def forged(s: State, kind: str) -> Receipt:
    """A receipt of the named kind for message ``a``, which must be in flight at attempt 2."""
    assert status(s, "a") is Status.IN_FLIGHT and attempt(s, "a") == 2
    return {
        "stale": Receipt(0, "a", 1),
        "future": Receipt(0, "a", 3),
        "zero": Receipt(0, "a", 0),
        "negative": Receipt(0, "a", -1),
        "unknown id": Receipt(0, "zzz", 2),
        "another queue's": Receipt(1, "a", 2),
    }[kind]


def in_flight_twice() -> State:
    """``a`` delivered, given back, delivered again: in flight at attempt 2."""
    s, d = take(queue("a", "b"))
    s, ok = retry(s, d.receipt)
    assert ok
    s, d = take(s)  # b
    s, d = take(s)  # a again
    assert d.id == "a" and d.attempt == 2
    return s


KINDS = ["stale", "future", "zero", "negative", "unknown id", "another queue's"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("op", ["delete", "retry", "change_visibility", "change_visibility(0)"])
def test_a_receipt_that_is_not_live_changes_nothing(kind: str, op: str) -> None:
    s = in_flight_twice()
    r = forged(s, kind)
    if op == "delete":
        after, ok = delete(s, r)
    elif op == "retry":
        after, ok = retry(s, r)
    else:
        after, ok = change_visibility(s, r, 0.0 if op.endswith("(0)") else 5.0, 1.0)
    assert ok is False and after is s


@pytest.mark.parametrize("end", ["delete", "cancel", "dead"])
@pytest.mark.parametrize("op", ["delete", "retry", "change_visibility"])
def test_the_receipt_of_a_terminal_message_is_dead(end: str, op: str) -> None:
    s, d = take(queue("a", max_receives=1))
    if end == "delete":
        s, _ = delete(s, d.receipt)
    elif end == "cancel":
        s, _ = cancel(s, "a")
    else:
        s, _ = retry(s, d.receipt)
    assert status(s, "a") is {"delete": Status.DONE, "cancel": Status.CANCELLED}.get(
        end, Status.DEAD
    )
    if op == "delete":
        after, ok = delete(s, d.receipt)
    elif op == "retry":
        after, ok = retry(s, d.receipt)
    else:
        after, ok = change_visibility(s, d.receipt, 5.0, 0.0)
    assert ok is False and after is s


def test_a_stale_receipt_never_matches_a_redelivery() -> None:
    s, first = take(queue("a"), vt=1.0)
    s, _ = expire(s, 1.0)
    s, second = take(s, now=1.0)
    assert first.receipt != second.receipt
    after, ok = delete(s, first.receipt)
    assert not ok and after is s
    assert delete(s, second.receipt)[1]


# -- retry and release ------------------------------------------------------------------------


def test_retry_releases_to_the_tail_never_to_the_old_place() -> None:
    s, d = take(queue("a", "b", "c"))
    after, ok = retry(s, d.receipt)
    assert ok
    after = checked(s, after)
    assert after.visible == ("b", "c", "a") and after.in_flight == ()
    assert deadline(after, "a") is None and attempt(after, "a") == 1


def test_release_keeps_capacity() -> None:
    s, d = take(queue("a", capacity=1))
    s, ok = retry(s, d.receipt)
    assert ok and s.active == 1
    after, ok = send(s, "b", "B")
    assert not ok and after is s


@pytest.mark.parametrize("how", ["retry", "change_visibility(0)", "expire"])
def test_release_dead_letters_once_attempt_reaches_max_receives(how: str) -> None:
    s = queue("a", "b", capacity=2, max_receives=2)
    now = 0.0
    for n in (1, 2):
        s, d = take(s, now=now, vt=1.0)
        assert d.id == "a" and d.attempt == n
        if how == "retry":
            s, ok = retry(s, d.receipt)
        elif how == "change_visibility(0)":
            s, ok = change_visibility(s, d.receipt, 0.0, now)
        else:
            before = s
            now += 1.0
            s, released = expire(s, now)
            ok = released == ("a",)
            s = checked(before, s)
        assert ok
        if n == 1:
            assert s.visible == ("b", "a") and status(s, "a") is Status.VISIBLE
            s, db = take(s, now=now, vt=None)  # b out of the way
            assert db.id == "b"
    assert status(s, "a") is Status.DEAD and s.dead == ("a",) and attempt(s, "a") == 2
    assert s.visible == () and s.active == 1, "dead-lettering frees capacity"
    assert send(s, "c", "C")[1]


def test_dead_letters_are_listed_in_the_order_they_died() -> None:
    s = queue("a", "b", "c", max_receives=1)
    s, da = take(s)
    s, db = take(s)
    s, dc = take(s)
    for d in (db, dc, da):
        s, ok = retry(s, d.receipt)
        assert ok
    assert s.dead == ("b", "c", "a")


# -- change_visibility ------------------------------------------------------------------------


def test_change_visibility_sets_now_plus_t_not_added_to_the_old_deadline() -> None:
    s, d = take(queue("a"), now=0.0, vt=10.0)
    after, ok = change_visibility(s, d.receipt, 5.0, 3.0)
    assert ok and deadline(checked(s, after), "a") == 8.0  # 3 + 5, not 10 + 5
    after2, ok = change_visibility(after, d.receipt, 1.0, 4.0)
    assert ok and deadline(after2, "a") == 5.0, "it may also shorten the deadline"
    assert after2.in_flight == ("a",) and attempt(after2, "a") == 1
    assert after2.is_live(d.receipt), "the receipt stays live"


def test_change_visibility_gives_a_deadline_to_a_delivery_that_had_none() -> None:
    s, d = take(queue("a"), vt=None)
    s, ok = change_visibility(s, d.receipt, 2.0, 1.0)
    assert ok and deadline(s, "a") == 3.0
    s, released = expire(s, 3.0)
    assert released == ("a",)


def test_change_visibility_zero_releases_at_once() -> None:
    s, d = take(queue("a", "b"))
    after, ok = change_visibility(s, d.receipt, 0.0, 1.0)
    assert ok
    after = checked(s, after)
    assert after.visible == ("b", "a") and status(after, "a") is Status.VISIBLE
    assert not after.is_live(d.receipt)


@pytest.mark.parametrize(("t", "now"), [(-1.0, 0.0), (math.nan, 0.0), (1.0, math.inf)])
def test_change_visibility_rejects_bad_times_and_changes_nothing(t: float, now: float) -> None:
    s, d = take(queue("a"))
    name = "timeout" if t != 1.0 else "now"
    with pytest.raises(ValueError, match=rf"^{name} must be a finite number >= 0, got "):
        change_visibility(s, d.receipt, t, now)


# -- cancel -----------------------------------------------------------------------------------


def test_cancel_a_visible_message_keeps_the_others_in_fifo_order() -> None:
    s = queue("a", "b", "c", "d")
    after, ok = cancel(s, "b")
    assert ok
    after = checked(s, after)
    assert after.visible == ("a", "c", "d") and status(after, "b") is Status.CANCELLED
    assert after.active == 3


def test_cancel_an_in_flight_message_kills_its_receipt() -> None:
    s, d = take(queue("a", "b"))
    after, ok = cancel(s, "a")
    assert ok
    after = checked(s, after)
    assert after.in_flight == () and after.visible == ("b",) and deadline(after, "a") is None
    for result in (delete(after, d.receipt), retry(after, d.receipt)):
        assert result == (after, False) and result[0] is after


@pytest.mark.parametrize("id", ["unknown", "done", "cancelled", "dead"])
def test_cancel_rejects_unknown_and_terminal(id: str) -> None:
    s = queue("done", "cancelled", "dead", max_receives=1)
    s, d = take(s)
    s, _ = delete(s, d.receipt)
    s, _ = cancel(s, "cancelled")
    s, d = take(s)
    s, _ = retry(s, d.receipt)
    assert (status(s, "done"), status(s, "cancelled"), status(s, "dead")) == (
        Status.DONE,
        Status.CANCELLED,
        Status.DEAD,
    )
    after, ok = cancel(s, id)
    assert not ok and after is s


# -- expire: the sweeper ----------------------------------------------------------------------


def test_expiry_needs_the_sweeper_and_releases_at_the_deadline() -> None:
    s, d = take(queue("a"), now=0.0, vt=2.0)
    assert due(s, 1.9) == ()
    after, released = expire(s, 1.9)
    assert released == () and after == s
    after, released = expire(s, 2.0)
    assert released == ("a",), "deadline <= now is due"
    after = checked(s, after)
    assert after.visible == ("a",) and not after.is_live(d.receipt)


def test_expiry_order_is_by_deadline_then_by_receive_order() -> None:
    s = queue("a", "b", "c", "d")
    s, _ = take(s, now=0.0, vt=5.0)  # deadline 5
    s, _ = take(s, now=0.0, vt=3.0)  # deadline 3
    s, _ = take(s, now=1.0, vt=2.0)  # deadline 3, received after b
    s, _ = take(s, now=1.0, vt=1.0)  # deadline 2
    assert next_deadline(s) == 2.0
    before = s
    s, released = expire(s, 10.0)
    assert released == ("d", "b", "c", "a")
    assert checked(before, s).visible == ("d", "b", "c", "a")


def test_ties_follow_the_latest_receive_not_the_first() -> None:
    s, da = take(queue("a", "b"), now=0.0, vt=1.0)
    s, ok = retry(s, da.receipt)
    assert ok and s.visible == ("b", "a")
    s, _ = take(s, now=1.0, vt=1.0)  # b: deadline 2
    s, da = take(s, now=1.0, vt=1.0)  # a again: deadline 2, received after b
    assert expire(s, 2.0)[1] == ("b", "a")


def test_expire_releases_only_what_is_due() -> None:
    s, _ = take(queue("a", "b", "c"), now=0.0, vt=1.0)
    s, _ = take(s, now=0.0, vt=3.0)
    s, _ = take(s, now=0.0, vt=None)
    before = s
    s, released = expire(s, 2.0)
    assert released == ("a",)
    s = checked(before, s)
    assert s.in_flight == ("b", "c") and s.visible == ("a",)


def test_a_late_delete_before_the_sweep_wins() -> None:
    s, d = take(queue("a"), now=0.0, vt=1.0)
    # The deadline has passed (now would be 5), but the sweeper has not run.
    after, ok = delete(s, d.receipt)
    assert ok and status(after, "a") is Status.DONE
    swept, released = expire(after, 5.0)
    assert released == () and swept == after


def test_a_late_delete_after_the_sweep_loses() -> None:
    s, d = take(queue("a"), now=0.0, vt=1.0)
    s, released = expire(s, 5.0)
    assert released == ("a",)
    after, ok = delete(s, d.receipt)
    assert not ok and after is s
    assert status(s, "a") is Status.VISIBLE, "the message is visible again, to be redelivered"


@pytest.mark.parametrize("now", [-1.0, math.nan, math.inf])
def test_expire_rejects_a_bad_time(now: float) -> None:
    s, _ = take(queue("a"))
    with pytest.raises(ValueError, match=r"^now must be a finite number >= 0, got "):
        expire(s, now)


def test_a_bad_configuration_is_rejected_by_name() -> None:
    with pytest.raises(ValueError, match=r"^capacity must be >= 0 or None, got -1$"):
        Config(capacity=-1)
    with pytest.raises(ValueError, match=r"^max_receives must be >= 1 or None, got 0$"):
        Config(max_receives=0)


# -- delays: send with a delay, the second kind of timer ----------------------------------------


def visible_at(s: State, id: str) -> float | None:
    m = s.get(id)
    assert m is not None
    return m.visible_at


def test_a_delayed_send_is_delayed_until_now_plus_delay() -> None:
    s = queue("a")
    after, ok = send(s, "b", "B", delay=5.0, now=2.0)
    assert ok
    s = checked(s, after)
    assert status(s, "b") is Status.DELAYED and visible_at(s, "b") == 7.0
    assert s.visible == ("a",) and s.delayed == ("b",) and s.timers == ("b",)
    assert attempt(s, "b") == 0 and s.active == 2


def test_a_zero_delay_and_the_default_are_immediate() -> None:
    s, ok = send(initial(), "a", "A", delay=0.0, now=3.0)
    assert ok and s.visible == ("a",) and visible_at(s, "a") is None and s.timers == ()
    s, ok = send(s, "b", "B")
    assert ok and s.visible == ("a", "b")


def test_a_send_without_a_delay_takes_the_queues() -> None:
    s = initial(Config(delay=4.0))
    s, ok = send(s, "a", "A", now=1.0)
    assert ok and status(s, "a") is Status.DELAYED and visible_at(s, "a") == 5.0
    s, ok = send(s, "b", "B", delay=0.0, now=1.0)  # an explicit 0 overrides the queue's
    assert ok and s.visible == ("b",)


def test_a_delayed_message_counts_against_capacity_and_reserves_its_id() -> None:
    s, ok = send(initial(Config(capacity=1)), "a", "A", delay=1.0)
    assert ok
    assert send(s, "b", "B") == (s, False)
    roomy = replace(s, config=Config(capacity=None))
    assert send(roomy, "a", "A") == (roomy, False)


def test_a_delayed_message_is_not_delivered_before_the_sweep() -> None:
    s, _ = send(initial(), "a", "A", delay=1.0)
    assert receive(s, 5.0, 1.0) == (s, None), "past visible_at, but the sweeper has not run"
    after, fired = expire(s, 0.5)
    assert fired == () and after is s
    after, fired = expire(s, 1.0)
    assert fired == ("a",)
    s = checked(s, after, 1.0)
    assert s.visible == ("a",) and s.delayed == () and s.timers == ()
    assert visible_at(s, "a") is None and attempt(s, "a") == 0
    s, d = take(s, now=1.0)
    assert d.id == "a" and d.attempt == 1


def test_a_fired_delay_goes_to_the_tail_of_visible() -> None:
    s, _ = send(initial(), "a", "A", delay=1.0)
    s, _ = send(s, "b", "B")
    s, _ = expire(s, 1.0)
    assert s.visible == ("b", "a")


def test_cancel_ends_a_delayed_message_and_its_timer() -> None:
    s, _ = send(queue("a"), "b", "B", delay=1.0)
    after, ok = cancel(s, "b")
    assert ok
    s = checked(s, after)
    assert status(s, "b") is Status.CANCELLED and visible_at(s, "b") is None
    assert s.delayed == () and s.timers == () and s.visible == ("a",)
    assert expire(s, 9.0)[1] == ()


def test_fire_delay_needs_a_delayed_message() -> None:
    with pytest.raises(AssertionError, match="not delayed"):
        fire_delay(queue("a"), "a")


# -- the one timer order: by due time, ties in the order the timers were started -------------------


def test_a_delay_and_a_deadline_due_together_fire_in_start_order() -> None:
    # a's delay is started (at 0) before b's deadline (received at 1): both due at 2.
    s, _ = send(initial(), "a", "A", delay=2.0, now=0.0)
    s, _ = send(s, "b", "B")
    s, d = take(s, now=1.0, vt=1.0)
    assert d.id == "b" and s.timers == ("a", "b")
    assert due(s, 2.0) == ("a", "b")
    after, fired = expire(s, 2.0)
    assert fired == ("a", "b") and after.visible == ("a", "b")
    # The other way round: b's deadline started (at 0) before a's delay (sent at 1).
    s, _ = send(initial(), "b", "B")
    s, _ = take(s, now=0.0, vt=2.0)
    s, _ = send(s, "a", "A", delay=1.0, now=1.0)
    assert s.timers == ("b", "a") and due(s, 2.0) == ("b", "a")
    assert expire(s, 2.0)[0].visible == ("b", "a")


def test_earlier_due_times_fire_first_whatever_the_start_order() -> None:
    s, _ = send(initial(), "a", "A", delay=3.0)
    s, _ = send(s, "b", "B", delay=1.0)
    s, _ = send(s, "c", "C")
    s, _ = take(s, now=0.0, vt=2.0)
    assert s.timers == ("a", "b", "c")
    assert due(s, 1.0) == ("b",) and due(s, 2.0) == ("b", "c") and due(s, 5.0) == ("b", "c", "a")
    assert next_deadline(s) == 1.0
    s, fired = expire(s, 5.0)
    assert fired == ("b", "c", "a") and s.visible == ("b", "c", "a") and next_deadline(s) is None


def test_change_visibility_keeps_the_timers_place() -> None:
    s, _ = send(initial(), "a", "A")
    s, _ = send(s, "b", "B", delay=2.0, now=0.0)
    s, d = take(s, now=0.0, vt=9.0)  # a's deadline started after b's delay
    after, ok = change_visibility(s, d.receipt, 2.0, now=0.0)
    assert ok
    s = checked(s, after)
    assert s.timers == ("b", "a"), "moved, not restarted: a keeps its place behind b"
    assert expire(s, 2.0)[1] == ("b", "a")


def test_a_delivery_without_a_deadline_has_its_place_by_receive_order() -> None:
    # The contract: with no delays, ties go by receive order, whatever change_visibility did.
    s = queue("a", "b")
    s, da = take(s, now=0.0, vt=None)
    s, _ = take(s, now=0.0, vt=2.0)
    assert s.timers == ("a", "b") and next_deadline(s) == 2.0 and due(s, 9.0) == ("b",)
    s, ok = change_visibility(s, da.receipt, 2.0, now=0.0)
    assert ok and s.timers == ("a", "b")
    assert expire(s, 2.0)[1] == ("a", "b")


# -- send_batch: all or none ---------------------------------------------------------------------


def test_send_batch_accepts_every_entry_in_order_in_one_step() -> None:
    s = queue("a")
    after, ok = send_batch(s, (("b", "B", 0.0), ("c", "C", 3.0), ("d", "D", None)), now=1.0)
    assert ok
    s2 = checked(s, after, 1.0)
    assert s2.visible == ("a", "b", "d") and s2.delayed == ("c",) and visible_at(s2, "c") == 4.0
    assert [m.body for m in s2.messages] == ["A", "B", "C", "D"]
    assert (
        batch_atomic(
            s,
            "send_batch",
            dict(entries=(("b", "B", 0.0), ("c", "C", 3.0), ("d", "D", None)), now=1.0),
            after,
            ok,
        )
        is None
    )


@pytest.mark.parametrize(
    ("entries", "why"),
    [
        ((("b", "B", 0.0), ("a", "A2", 0.0)), "a was accepted before"),
        ((("b", "B", 0.0), ("b", "B2", 0.0)), "b twice in the batch"),
        ((("b", "B", 0.0), ("c", "C", 0.0), ("d", "D", 0.0)), "3 do not fit in 2 places"),
    ],
)
def test_send_batch_accepts_none_when_one_entry_would_be_refused(
    entries: tuple[tuple[str, str, float], ...], why: str
) -> None:
    s = queue("a", capacity=3)
    assert send_batch(s, entries, 0.0) == (s, False), why


def test_send_batch_fills_the_queue_exactly() -> None:
    s = queue("a", capacity=3)
    s, ok = send_batch(s, (("b", "B", 0.0), ("c", "C", 1.0)), 0.0)
    assert ok and s.active == 3
    assert send_batch(s, (("d", "D", 0.0),), 0.0) == (s, False)


@pytest.mark.parametrize(
    ("entries", "error", "message"),
    [
        ((), ValueError, r"^entries must hold 1 to 10 entries, got 0$"),
        (tuple((f"i{k}", "x", 0.0) for k in range(11)), ValueError, r"got 11$"),
        ("abc", TypeError, r"^entries must be a list or tuple"),
        ((("a", "A"),), TypeError, r"^entries\[0\] must be an \(id, body, delay\) tuple"),
        ((("a", "A", 0.0), ["b", "B", 0.0]), TypeError, r"^entries\[1\] must be"),
        ((("a", "A", 0.0), (1, "B", 0.0)), TypeError, r"^entries\[1\]\.id must be a str"),
        ((("a", 2, 0.0),), TypeError, r"^entries\[0\]\.body must be a str"),
        ((("a", "A", -1.0),), ValueError, r"^entries\[0\]\.delay must be a finite number"),
        ((("a", "A", math.nan),), ValueError, r"^entries\[0\]\.delay must be a finite"),
        ((("a", "A", "1"),), TypeError, r"^entries\[0\]\.delay must be a number"),
    ],
)
def test_send_batch_rejects_a_bad_batch_by_name(
    entries: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        send_batch(initial(), entries, 0.0)  # type: ignore[arg-type]


def test_send_batch_of_the_maximum_size() -> None:
    entries = tuple((f"i{k}", "x", 0.0) for k in range(MAX_BATCH))
    s, ok = send_batch(initial(), entries, 0.0)
    assert ok and len(s.visible) == MAX_BATCH == 10


# -- receive_batch: FIFO, fewer than n ---------------------------------------------------------


def test_receive_batch_takes_the_first_n_in_fifo_order_with_one_deadline() -> None:
    s = queue("a", "b", "c")
    after, ds = receive_batch(s, 1.0, 2, 5.0)
    s2 = checked(s, after, 1.0)
    assert [(d.id, d.body, d.attempt) for d in ds] == [("a", "A", 1), ("b", "B", 1)]
    assert [d.receipt for d in ds] == [Receipt(0, "a", 1), Receipt(0, "b", 1)]
    assert s2.visible == ("c",) and s2.in_flight == ("a", "b") and s2.timers == ("a", "b")
    assert deadline(s2, "a") == deadline(s2, "b") == 6.0


def test_receive_batch_gives_fewer_than_n_when_fewer_are_visible() -> None:
    s, _ = send(queue("a", "b"), "c", "C", delay=1.0)
    after, ds = receive_batch(s, 0.0, 10, None)
    assert [d.id for d in ds] == ["a", "b"], "the delayed message is not deliverable"
    assert after.visible == () and deadline(after, "a") is None
    assert after.timers == ("c", "a", "b")
    assert receive_batch(after, 0.0, 3, None) == (after, ())


def test_receive_batch_of_redelivered_messages_counts_attempts() -> None:
    s, d = take(queue("a", "b"))
    s, _ = retry(s, d.receipt)  # visible is now (b, a)
    s, ds = receive_batch(s, 0.0, 2, 1.0)
    assert [(d.id, d.attempt) for d in ds] == [("b", 1), ("a", 2)]


@pytest.mark.parametrize(
    ("n", "error", "message"),
    [
        (0, ValueError, r"^n must be in 1\.\.10, got 0$"),
        (11, ValueError, r"^n must be in 1\.\.10, got 11$"),
        (-1, ValueError, r"got -1$"),
        (2.0, TypeError, r"^n must be an int, got 2\.0$"),
        (True, TypeError, r"^n must be an int, got True$"),
    ],
)
def test_receive_batch_rejects_a_bad_n(n: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        receive_batch(queue("a"), 0.0, n, 1.0)  # type: ignore[arg-type]


def test_receive_batch_rejects_a_bad_time() -> None:
    with pytest.raises(ValueError, match=r"^visibility_timeout must be a finite number"):
        receive_batch(queue("a"), 0.0, 2, -1.0)
    with pytest.raises(ValueError, match=r"^now must be a finite number"):
        receive_batch(queue("a"), math.inf, 2, 1.0)


# -- delete_batch -------------------------------------------------------------------------------


def test_delete_batch_deletes_each_live_receipt_in_order() -> None:
    s, ds = receive_batch(queue("a", "b", "c"), 0.0, 3, 5.0)
    stale = Receipt(0, "a", 7)
    after, results = delete_batch(s, (ds[2].receipt, stale, ds[0].receipt))
    s2 = checked(s, after)
    assert results == (True, False, True)
    assert status(s2, "a") is Status.DONE and status(s2, "c") is Status.DONE
    assert s2.in_flight == ("b",) and s2.timers == ("b",) and s2.active == 1


def test_delete_batch_with_a_repeated_receipt_is_false_the_second_time() -> None:
    s, d = take(queue("a"))
    after, results = delete_batch(s, (d.receipt, d.receipt))
    assert results == (True, False) and status(after, "a") is Status.DONE


def test_delete_batch_of_no_live_receipt_changes_nothing() -> None:
    s, _ = take(queue("a"))
    assert delete_batch(s, (Receipt(1, "a", 1), Receipt(0, "z", 1))) == (s, (False, False))


@pytest.mark.parametrize(
    ("receipts", "error", "message"),
    [
        ((), ValueError, r"^receipts must hold 1 to 10 entries, got 0$"),
        ((Receipt(0, "a", 1),) * 11, ValueError, r"got 11$"),
        (Receipt(0, "a", 1), TypeError, r"^receipts must be a list or tuple"),
        ((Receipt(0, "a", 1), ("a", 1)), TypeError, r"^receipts\[1\] must be a Receipt"),
    ],
)
def test_delete_batch_rejects_a_bad_batch_by_name(
    receipts: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        delete_batch(queue("a"), receipts)  # type: ignore[arg-type]


# -- change_visibility_batch --------------------------------------------------------------------


def test_change_visibility_batch_applies_each_change_in_order() -> None:
    s, ds = receive_batch(queue("a", "b", "c"), 0.0, 3, 5.0)
    changes = ((ds[0].receipt, 0.0), (ds[1].receipt, 9.0), (Receipt(0, "a", 1), 3.0))
    after, results = change_visibility_batch(s, changes, now=1.0)
    s2 = checked(s, after, 1.0)
    # a is released first, so the third change names a receipt that is no longer live.
    assert results == (True, True, False)
    assert s2.visible == ("a",) and deadline(s2, "b") == 10.0 and deadline(s2, "c") == 5.0
    assert s2.timers == ("b", "c"), "b moved, keeping its place"


def test_change_visibility_batch_releases_in_entry_order() -> None:
    s, ds = receive_batch(queue("a", "b"), 0.0, 2, 5.0)
    after, results = change_visibility_batch(s, ((ds[1].receipt, 0.0), (ds[0].receipt, 0.0)), 0.0)
    assert results == (True, True) and after.visible == ("b", "a")


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ((), ValueError, r"^changes must hold 1 to 10 entries, got 0$"),
        (((Receipt(0, "a", 1), 1.0),) * 11, ValueError, r"got 11$"),
        ((Receipt(0, "a", 1),), TypeError, r"^changes\[0\] must be a \(receipt, timeout\)"),
        ((("a", 1.0),), TypeError, r"^changes\[0\]\.receipt must be a Receipt"),
        (((Receipt(0, "a", 1), -1.0),), ValueError, r"^changes\[0\]\.timeout must be a finite"),
        (((Receipt(0, "a", 1), None),), TypeError, r"^changes\[0\]\.timeout must be a number"),
    ],
)
def test_change_visibility_batch_rejects_a_bad_batch_by_name(
    changes: object, error: type[Exception], message: str
) -> None:
    s, _ = take(queue("a"))
    with pytest.raises(error, match=message):
        change_visibility_batch(s, changes, 0.0)  # type: ignore[arg-type]


def test_a_bad_change_anywhere_changes_nothing() -> None:
    s, d = take(queue("a"))
    with pytest.raises(ValueError, match=r"changes\[1\]"):
        change_visibility_batch(s, ((d.receipt, 0.0), (d.receipt, math.inf)), 0.0)
    assert s.is_live(d.receipt)


# -- purge --------------------------------------------------------------------------------------


def test_purge_cancels_every_active_message_delayed_ones_too() -> None:
    s, d = take(queue("a", "b", "c", max_receives=1))
    s, _ = retry(s, d.receipt)  # a is dead
    s, d = take(s)  # b in flight
    s, _ = send(s, "x", "X", delay=5.0)
    after, count = purge(s)
    s2 = checked(s, after)
    assert count == 3  # b in flight, c visible, x delayed
    assert {m.id: m.status for m in s2.messages} == {
        "a": Status.DEAD,
        "b": Status.CANCELLED,
        "c": Status.CANCELLED,
        "x": Status.CANCELLED,
    }
    assert s2.visible == s2.in_flight == s2.delayed == s2.timers == () and s2.dead == ("a",)
    assert not s2.is_live(d.receipt) and s2.active == 0 and visible_at(s2, "x") is None
    assert attempt(s2, "b") == 1, "attempts are kept"
    assert expire(s2, 10.0)[1] == ()


def test_purge_frees_capacity_and_keeps_the_ids_reserved() -> None:
    s, _ = purge(queue("a", "b", capacity=2))
    assert s.active == 0
    assert send(s, "a", "A") == (s, False)
    assert send(s, "c", "C")[1]


def test_purge_of_nothing_active_is_zero_and_changes_nothing() -> None:
    s = initial()
    assert purge(s) == (s, 0)
    s, d = take(queue("a"))
    s, _ = delete(s, d.receipt)
    assert purge(s) == (s, 0)


# -- bad arguments to send, and the queue's delay ------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(delay=-1.0), ValueError, r"^delay must be a finite number >= 0, got -1\.0$"),
        (dict(delay=math.inf), ValueError, r"^delay must be a finite number"),
        (dict(delay="1"), TypeError, r"^delay must be a number, got '1'$"),
        (dict(now=-1.0), ValueError, r"^now must be a finite number"),
    ],
)
def test_send_rejects_a_bad_delay_or_time(
    kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        send(initial(), "a", "A", **kwargs)  # type: ignore[arg-type]


def test_a_bad_queue_delay_is_rejected_by_name() -> None:
    with pytest.raises(ValueError, match=r"^delay must be a finite number >= 0, got -1$"):
        Config(delay=-1)
    with pytest.raises(TypeError, match=r"^delay must be a number, got True$"):
        Config(delay=True)
