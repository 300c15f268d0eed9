"""Tests written to kill mutants that survived the mutation run (``scripts/mutation``).

Each test here pins down a promise that the other tests left loose, found because mutmut
changed the code and nothing failed. The promise is stated in the test's docstring; the
mutants it kills are named in ``docs/mutation-survivors.md`` (with the survivors that no test
can kill, and why).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

import pytest

import spec
from impl import (
    DuplicateIdError,
    Empty,
    FakeClock,
    Full,
    JobQueue,
    MonotonicClock,
    Queue,
    Receipt,
    ShutDown,
)
from impl.machine import Machine
from model_tests.support import BOUND, ProbeClock

#: A call with a bad argument, the exception it must raise, and the argument its message names.
BadCall = tuple[Callable[[], object], type[Exception], str]


def _queue() -> Queue[str]:
    return Queue[str](visibility_timeout=None, clock=FakeClock())


def _bad_calls() -> dict[str, BadCall]:
    q = _queue()
    jq = JobQueue(1)
    clock = FakeClock()
    r = q.receipt("a", 1)
    calls: dict[str, BadCall] = {
        "Queue(capacity=-1)": (lambda: Queue(capacity=-1), ValueError, "capacity"),
        "Queue(capacity='1')": (lambda: Queue(capacity=cast_any("1")), TypeError, "capacity"),
        "Queue(visibility_timeout=-1)": (
            lambda: Queue(visibility_timeout=-1.0),
            ValueError,
            "visibility_timeout",
        ),
        "Queue(max_receives=0)": (lambda: Queue(max_receives=0), ValueError, "max_receives"),
        "Queue(clock=1)": (lambda: Queue(clock=cast_any(1)), TypeError, "clock"),
        "send(id=1)": (lambda: q.send("x", id=cast_any(1)), TypeError, "id"),
        "send(id='')": (lambda: q.send("x", id=""), ValueError, "id"),
        "send(block=1)": (lambda: q.send("x", block=cast_any(1)), TypeError, "block"),
        "send(timeout=-1)": (lambda: q.send("x", timeout=-1.0), ValueError, "timeout"),
        "receive(block=None)": (lambda: q.receive(block=cast_any(None)), TypeError, "block"),
        "receive(timeout=nan)": (
            lambda: q.receive(timeout=float("nan")),
            ValueError,
            "timeout",
        ),
        "receive(visibility_timeout=inf)": (
            lambda: q.receive(visibility_timeout=float("inf")),
            ValueError,
            "visibility_timeout",
        ),
        "change_visibility(timeout=-1)": (
            lambda: q.change_visibility(r, -1.0),
            ValueError,
            "timeout",
        ),
        "change_visibility(receipt=None)": (
            lambda: q.change_visibility(cast_any(None), 1.0),
            TypeError,
            "receipt",
        ),
        "delete(receipt=('a', 1))": (lambda: q.delete(cast_any(("a", 1))), TypeError, "receipt"),
        "cancel(id=None)": (lambda: q.cancel(cast_any(None)), TypeError, "id"),
        "receipt(attempt=-1)": (lambda: q.receipt("a", -1), ValueError, "attempt"),
        "receipt(id='a b')": (lambda: q.receipt("a b", 1), ValueError, "id"),
        "JobQueue(capacity='2')": (lambda: JobQueue(cast_any("2")), TypeError, "capacity"),
        "JobQueue(capacity=-1)": (lambda: JobQueue(-1), ValueError, "capacity"),
        "enqueue(id=1)": (lambda: jq.enqueue(cast_any(1), "A"), TypeError, "id"),
        "enqueue(payload=1)": (lambda: jq.enqueue("a", cast_any(1)), TypeError, "payload"),
        "FakeClock(start=nan)": (lambda: FakeClock(float("nan")), ValueError, "start"),
        "FakeClock(start='0')": (lambda: FakeClock(cast_any("0")), TypeError, "start"),
        "advance(dt=-1)": (lambda: clock.advance(-1.0), ValueError, "dt"),
        "advance(dt=None)": (lambda: clock.advance(cast_any(None)), TypeError, "dt"),
        "Receipt(attempt='1')": (lambda: Receipt(1, "a", cast_any("1")), TypeError, "attempt"),
    }
    return calls


def cast_any(value: object) -> Any:
    """A value of the wrong type, passed where the signature forbids it on purpose."""
    return value


BAD_CALLS = _bad_calls()


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_a_bad_argument_error_starts_with_the_arguments_own_name(case: str) -> None:
    """The message *begins* with the argument's name as the caller wrote it ("timeout must be
    ..."), not merely contains it somewhere: "XXtimeoutXX must" or "visibility_timeout" for
    "timeout" would pass a looser match."""
    call, error, name = BAD_CALLS[case]
    with pytest.raises(error) as info:
        call()
    assert re.match(rf"{name} must ", str(info.value)), str(info.value)


def test_a_wrong_type_error_names_the_type_given() -> None:
    """ "got int" names the type of the value passed, so the caller sees what they passed."""
    with pytest.raises(TypeError, match=r"^payload must be a str, got int$"):
        JobQueue(1).enqueue("a", cast_any(7))
    with pytest.raises(TypeError, match=r"^id must be a str, got float$"):
        _queue().send("x", id=cast_any(1.5))
    with pytest.raises(TypeError, match=r"^dt must be a number, got str$"):
        FakeClock().advance(cast_any("1"))
    with pytest.raises(TypeError, match=r"^receipt must be a Receipt, got str$"):
        _queue().delete(cast_any("a"))
    with pytest.raises(TypeError, match=r"^attempt must be an int, got str$"):
        _queue().receipt("a", cast_any("1"))
    with pytest.raises(TypeError, match=r"^start must be a number, got str$"):
        FakeClock(cast_any("0"))
    with pytest.raises(TypeError, match=r"^clock must be a Clock, got int$"):
        Queue(clock=cast_any(1))
    with pytest.raises(TypeError, match=r"^block must be a bool, got int$"):
        _queue().send("x", block=cast_any(1))
    with pytest.raises(TypeError, match=r"^timeout must be a number, got str$"):
        _queue().change_visibility(_queue().receipt("a", 1), cast_any("1"))
    with pytest.raises(TypeError, match=r"^queue must be an int, got str$"):
        Receipt(cast_any("1"), "a", 1)
    with pytest.raises(TypeError, match=r"^attempt must be an int, got bool$"):
        Receipt(1, "a", cast_any(True))
    with pytest.raises(TypeError, match=r"^id must be a str, got int$"):
        Receipt(1, cast_any(2), 1)


def test_expiry_still_fires_after_the_expiry_heap_is_compacted() -> None:
    """Re-arming one delivery leaves stale heap entries; when they outnumber the live ones the
    heap is rebuilt from the in-flight deliveries, and the live deadline must survive the
    rebuild (else the message would never expire). The rebuild comes every 17 to 19 re-arms,
    so trying every count up to 40 makes the last re-arm itself trigger one."""
    for extends in range(41):
        clock = FakeClock()
        with Queue[str](visibility_timeout=10.0, clock=clock) as q:
            q.send("A", id="a")
            m = q.receive(block=False)
            for t in range(1, extends + 1):
                assert q.change_visibility(m.receipt, 10.0 + t)
            clock.advance(10.0 + extends)  # exactly the last deadline set
            q.sweep()
            visible = [(x.id, x.attempt) for x in q.snapshot().visible]
            assert visible == [("a", 1)], f"not expired after {extends} re-arms"


def test_dead_letters_carry_the_receipt_of_their_last_delivery() -> None:
    """A dead letter is a :class:`Message` like any other: its receipt names its last
    delivery (no longer live, so it acts on nothing)."""
    with Queue[str](visibility_timeout=None, max_receives=1, clock=FakeClock()) as q:
        q.send("A", id="a")
        m = q.receive(block=False)
        assert q.retry(m.receipt)
        (dead,) = q.dead_letters()
        assert dead.receipt == q.receipt("a", 1) == m.receipt
        assert q.delete(dead.receipt) is False


def test_the_real_clock_blocks_until_the_deadline() -> None:
    """``MonotonicClock.wait`` with a deadline ahead blocks until it (or a notify); it does not
    return early and leave its caller to spin, however short the wait. (A lower bound on the
    time waited: this can only fail if the wait returned early, never because a machine is
    slow. CPython's ``Condition.wait`` has no spurious wakeups, so without a notify the wait
    ends at the deadline.)"""
    clock = MonotonicClock()
    cond = threading.Condition()
    for remaining in (0.05, 0.3):
        deadline = clock.now() + remaining
        with cond:
            clock.wait(cond, deadline)
        assert clock.now() >= deadline


def test_the_trace_records_each_transition_as_the_docstring_says() -> None:
    """``record_trace``: one ``(action, args, result, now)`` per transition that returns, in the
    forms its docstring lists, with ``now`` the time the transition used: for the releases of
    one sweep, the sweep's time, the same for all of them."""
    clock = FakeClock()
    steps: list[tuple[str, tuple[object, ...], object, float]] = []
    with Queue[str](visibility_timeout=2.0, clock=clock) as q:
        q.record_trace(steps.append)
        q.send("A", id="a")
        q.send("B", id="b")
        a = q.receive(block=False)
        b = q.receive(block=False, visibility_timeout=None)
        assert q.change_visibility(q.receipt("a", 2), 1.0) is False
        assert q.change_visibility(a.receipt, 3.0) is True
        assert q.change_visibility(b.receipt, 0) is True  # released at once
        assert q.cancel("b") is True
        assert q.cancel("z") is False
        assert q.delete(q.receipt("a", 9)) is False
        assert q.retry(q.receipt("a", 9)) is False
        clock.advance(3.0)
        q.sweep()  # a expires (by the sweeper thread or here: the trace is the same)
        a2 = q.receive(block=False)
        assert q.retry(a2.receipt) is True
        a3 = q.receive(block=False)
        assert q.delete(a3.receipt) is True
        q.record_trace(None)
        q.send("C", id="c")  # not recorded
    assert steps == [
        ("send", ("a", 0.0), True, 0.0),
        ("send", ("b", 0.0), True, 0.0),
        ("receive", (2.0,), ("a", 1, 2.0), 0.0),
        ("receive", (None,), ("b", 1, None), 0.0),
        ("change_visibility", ("a", 2, 1.0), False, 0.0),
        ("change_visibility", ("a", 1, 3.0), 3.0, 0.0),
        ("change_visibility", ("b", 1, 0.0), None, 0.0),
        ("cancel", ("b",), True, 0.0),
        ("cancel", ("z",), False, 0.0),
        ("delete", ("a", 9), False, 0.0),
        ("retry", ("a", 9), False, 0.0),
        ("expire", (), "a", 3.0),
        ("receive", (2.0,), ("a", 2, 5.0), 3.0),
        ("retry", ("a", 2), True, 3.0),
        ("receive", (2.0,), ("a", 3, 5.0), 3.0),
        ("delete", ("a", 3), True, 3.0),
    ]


def test_the_releases_of_one_sweep_are_traced_at_the_sweeps_time() -> None:
    # Every reading a little later than the one before, as a real clock's readings are: the
    # time a transition used is then told apart from the time now.
    clock = ProbeClock(reading_step=1e-6)
    steps: list[tuple[str, tuple[object, ...], object, float]] = []
    with Queue[str](visibility_timeout=None, clock=clock) as q:
        for id in ("a", "b", "c"):
            q.send(id.upper(), id=id)
            q.receive(block=False, visibility_timeout=1.0)
        q.record_trace(steps.append)
        clock.advance(10.0)  # wakes the sweeper thread, which may release some of them first
        q.sweep()
        q.record_trace(None)
    expired = [s for s in steps if s[0] == "expire"]
    assert [s[2] for s in expired] == ["a", "b", "c"]
    by_time: dict[float, list[object]] = {}
    for _, _, released, now in expired:
        by_time.setdefault(now, []).append(released)
    # One sweep releases everything due at its time: a later sweep finds nothing left, so all
    # three releases come from one sweep and carry one time.
    assert len(by_time) == 1, by_time


def test_state_count_counts_the_messages_in_one_status() -> None:
    """``spec.State.count(status)``: how many messages are in that status, no more."""
    s = spec.initial()
    for id in ("a", "b", "c"):
        s, _ = spec.send(s, id, id.upper())
    s, d = spec.receive(s, 0.0, None)
    assert d is not None
    s, _ = spec.cancel(s, "c")
    counts = {status: s.count(status) for status in spec.Status}
    assert counts == {
        spec.Status.DELAYED: 0,
        spec.Status.VISIBLE: 1,
        spec.Status.IN_FLIGHT: 1,
        spec.Status.DONE: 0,
        spec.Status.CANCELLED: 1,
        spec.Status.DEAD: 0,
        spec.Status.AGED_OUT: 0,
        spec.Status.MOVED: 0,
    }


def test_the_real_clock_has_a_plain_repr() -> None:
    """A queue's repr shows its clock; the real one is written as it is built."""
    assert repr(MonotonicClock()) == "MonotonicClock()"
    assert repr(Queue[str](visibility_timeout=None)).endswith("clock=MonotonicClock())")


def test_the_sweeper_drops_a_stale_entry_from_the_top_and_keeps_serving() -> None:
    """After a sweep the sweeper picks its next deadline from the top of the expiry heap,
    first dropping entries that no longer stand for a delivery (here a deleted one), and then
    waits again: it must neither choke on them nor stop serving the queue."""
    clock = FakeClock()
    with Queue[str](visibility_timeout=10.0, clock=clock) as q:
        q.send("A", id="a")
        q.send("B", id="b")
        q.receive(block=False)  # a: deadline 10
        b = q.receive(block=False, visibility_timeout=20.0)  # b: deadline 20
        assert clock.wait_for_waiters(1), "the sweeper never waited for the first deadline"
        assert q.delete(b.receipt)  # b's heap entry (20) is stale from now on
        begun = clock.waits_begun
        clock.advance(10.0)  # the sweeper expires a, then meets b's stale entry on top
        assert clock.wait_for_waiters(1, after=begun), "the sweeper did not wait again"
        begun = clock.waits_begun
        again = q.receive(block=False)  # deadline 20: wakes the sweeper, which had none
        assert (again.id, again.attempt) == ("a", 2)
        assert clock.wait_for_waiters(1, after=begun), "the sweeper did not wait for 20"
        begun = clock.waits_begun
        clock.advance(10.0)  # a's second deadline: the same sweeper thread must expire it
        assert clock.wait_for_waiters(1, after=begun), "the sweeper did not wait again"
        assert [(m.id, m.attempt) for m in q.snapshot().visible] == [("a", 2)]


def _count_notifies(monkeypatch: pytest.MonkeyPatch, cond: threading.Condition) -> list[int]:
    """Make ``cond.notify`` record each call (its ``n``) in the returned list, then notify."""
    calls: list[int] = []
    real = cond.notify

    def counting(n: int = 1) -> None:
        calls.append(n)
        real(n)

    monkeypatch.setattr(cond, "notify", counting)
    return calls


def test_a_transition_notifies_only_when_someone_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Conditions.notify`` skips ``Condition.notify`` when no thread waits on the condition
    (the waiting counts kept by ``Conditions.wait`` say so), and notifies once when one does;
    once the waiter has left, nobody is counted any more."""
    clock = FakeClock()
    with Queue[str](visibility_timeout=None, clock=clock) as q:
        notified = _count_notifies(monkeypatch, q.not_empty)
        room = _count_notifies(monkeypatch, q.not_full)
        q.send("A", id="a")  # nobody waits
        assert notified == []
        assert q.delete(q.receive(block=False).receipt)  # nobody waits for room either
        assert room == []
        got: list[str] = []
        receiver = threading.Thread(target=lambda: got.append(q.receive().id))
        receiver.start()
        assert clock.wait_for_waiters(1), "the receiver never blocked"
        q.send("B", id="b")  # one receiver waits: one notify
        receiver.join(BOUND)
        assert not receiver.is_alive() and got == ["b"]
        assert notified == [1]
        q.send("C", id="c")  # the receiver has left: nobody to wake
        assert notified == [1], "a waiter that left is still counted"


def test_a_deadline_no_earlier_than_the_sweepers_does_not_wake_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sweeper waits for the earliest deadline; arming a deadline at or after that one
    must not wake it (it would only go back to sleep), an earlier one must."""
    clock = FakeClock()
    with Queue[str](visibility_timeout=10.0, clock=clock) as q:
        for id in ("a", "b", "c"):
            q.send(id.upper(), id=id)
        q.receive(block=False)  # deadline 10: starts the sweeper
        assert clock.wait_for_waiters(1), "the sweeper never waited"
        woken = _count_notifies(monkeypatch, q.new_deadline)
        q.receive(block=False)  # deadline 10 as well: what the sweeper already waits for
        assert woken == []
        q.receive(block=False, visibility_timeout=5.0)  # deadline 5: earlier, so wake it
        assert woken == [1]


def test_the_sweeper_is_a_daemon_thread_named_after_its_queue() -> None:
    """The class docstring promises a *daemon* sweeper, so a queue that is never closed does not
    keep the interpreter from exiting."""
    with Queue[str](visibility_timeout=10.0, clock=FakeClock()) as q:
        q.send("A")
        q.receive()
        sweepers = [
            t
            for t in threading.enumerate()
            if t.name.startswith("impl.Queue-") and t.name.endswith("-sweeper")
        ]
        assert len(sweepers) == 1
        assert sweepers[0].daemon


def test_the_expiry_heap_is_rebuilt_when_it_passes_its_bound_and_no_oftener(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Re-arming leaves stale entries in the expiry heap. The heap is rebuilt from the in-flight
    deliveries exactly when it would exceed 2 x in flight + 16 entries, so it never holds more,
    and a rebuild (O(in flight)) comes at most once per in flight + 16 arms: O(1) per arm,
    amortized. Closing the queue first keeps a sweeper thread from dropping entries meanwhile
    (receives still drain what is visible, and receipts still act)."""
    n, arms = 100, 1_000
    q = Queue[str](visibility_timeout=10.0, clock=FakeClock())
    for _ in range(n):
        q.send("x")
    q.close()
    held = [q.receive(block=False) for _ in range(n)]
    rebuilds = 0
    real = q.machine.compact

    def counting() -> None:
        nonlocal rebuilds
        rebuilds += 1
        real()

    monkeypatch.setattr(q.machine, "compact", counting)
    largest = 0
    for k in range(arms):
        assert q.change_visibility(held[0].receipt, 10.0 + k)
        largest = max(largest, len(q.machine.timers))
    assert largest == 2 * n + 16, "the heap is not rebuilt exactly when it passes its bound"
    assert 1 <= rebuilds <= arms // (n + 16) + 1


def test_empty_full_and_shutdown_say_which_case_they_are() -> None:
    """The blocking API's exceptions carry a message naming the case: nothing visible at once,
    nothing within the timeout, no room at once or within the timeout, a duplicate id, a
    send or a drained receive after shutdown. The type alone does not tell them apart."""
    q = Queue[str](capacity=1, visibility_timeout=None, clock=FakeClock())
    with pytest.raises(Empty, match=r"^no message is visible$"):
        q.receive(block=False)
    with pytest.raises(Empty, match=r"^no message became visible within 0\.0 seconds$"):
        q.receive(timeout=0)
    q.send("A", id="a")
    with pytest.raises(DuplicateIdError, match=r"^id 'a' was already accepted by this queue$"):
        q.send("B", id="a")
    with pytest.raises(Full, match=r"^the queue is at capacity$"):
        q.send("B", block=False)
    with pytest.raises(Full, match=r"^no room within 0\.0 seconds$"):
        q.send("B", timeout=0)
    q.shutdown()
    with pytest.raises(ShutDown, match=r"^send on a queue that has been shut down$"):
        q.send("B")
    assert q.receive().id == "a"  # shutdown still delivers what is visible
    with pytest.raises(ShutDown, match=r"^receive on a shut-down queue with nothing visible$"):
        q.receive()
    q.close()


def test_the_self_check_names_the_invariant_it_finds_broken() -> None:
    """The reference machine (``impl.machine.Machine``) runs ``Machine.check`` after every
    step, and the driver calls it; when the state breaks an invariant its assertion says which
    one, by the contract's name. Here an id is slipped into the accepted set behind the
    queue's back, so the ids no longer add up: ``OneState``. (``impl.Queue``'s own machine,
    ``FastMachine``, is proven equal to the reference instead of checking itself.)"""

    class Checked(Queue[str]):
        machine_class = Machine

    q = Checked(clock=FakeClock())
    q.machine.accepted.add("ghost")  # no message of any state has this id
    with pytest.raises(AssertionError, match=r"^OneState$"):
        q.send("x")


def test_a_sender_whose_id_was_taken_while_it_waited_is_told_so() -> None:
    """Two senders wait for room with the same id; the first to get room sends it, and the
    other, woken by the next free slot, learns that its id was taken while it waited."""
    clock = FakeClock()
    with Queue[str](capacity=1, visibility_timeout=None, clock=clock) as q:
        q.send("X", id="x")
        results: dict[str, object] = {}

        def sender(body: str) -> None:
            try:
                results[body] = q.send(body, id="a")
            except DuplicateIdError as e:
                results[body] = e

        threads = [threading.Thread(target=sender, args=(b,)) for b in ("A1", "A2")]
        for t in threads:
            t.start()
        assert clock.wait_for_waiters(2), "the senders never blocked"
        assert q.delete(q.receive().receipt)  # room for one: one sender sends "a"
        winner = q.receive()  # blocks until that send is in
        assert winner.id == "a"
        assert q.delete(winner.receipt)  # room again: the other sender wakes
        for t in threads:
            t.join(BOUND)
            assert not t.is_alive()
        loser = results["A2" if winner.body == "A1" else "A1"]
        assert results[winner.body] == "a"
        assert isinstance(loser, DuplicateIdError)
        assert str(loser) == "id 'a' was accepted while this send waited"
