"""``impl.Queue``/``impl.FifoQueue`` with ``dead_letter=``: dead-letter queues that are queues.

The design note's rules 1 (configuration), 2 (ids unique across a system), 3 (dead-lettering is
a move, one step across two queues) and 7 (lock order) on the threaded shell. Time is a
``FakeClock`` (``advance`` then ``sweep()``); the two thread tests wait on events and the clock's
waiter count, never on wall time, and the real-clock smoke test only bounds how long a failure
takes to show.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from impl import DuplicateIdError, Entry, FakeClock, FifoQueue, MonotonicClock, Queue, Stats
from impl.threaded import BaseQueue
from model_tests.support import Spawn


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def dlq(clock: FakeClock) -> Iterator[Queue[str]]:
    with Queue[str](clock=clock, name="dlq") as q:
        yield q


@pytest.fixture
def src(dlq: Queue[str], clock: FakeClock) -> Iterator[Queue[str]]:
    with Queue[str](visibility_timeout=5, max_receives=2, clock=clock, dead_letter=dlq) as q:
        yield q


def kill(q: BaseQueue[str], times: int) -> None:
    """Receive the head and retry it, ``times`` times."""
    for _ in range(times):
        q.retry(q.receive(block=False).receipt)


def check_system(queues: list[BaseQueue[str]]) -> None:
    """The design note's rule 6 over the queues' snapshots: ``SystemOneState`` (every id is in
    exactly one holding state over all queues) and ``NothingLost`` (every departed entry, DEAD
    in a queue with a target or MOVED, leads to a holding entry, following chains)."""
    holding: dict[str, list[str]] = {}
    departed: dict[tuple[int, str], tuple[BaseQueue[str], str]] = {}
    present: set[tuple[int, str]] = set()
    for q in queues:
        snap = q.snapshot()
        groups = {
            "visible": [m.id for m in snap.visible],
            "in_flight": [m.id for m in snap.in_flight],
            "delayed": [m.id for m in snap.delayed],
            "done": sorted(snap.done),
            "cancelled": sorted(snap.cancelled),
            "aged_out": sorted(snap.aged_out),
        }
        dead = [m.id for m in snap.dead]
        if q.dead_letter is None:
            groups["dead"] = dead
        else:
            for id in dead:
                departed[(id_of(q), id)] = (q.dead_letter, id)
        for id in snap.moved:
            hit = q.moved_to(id)
            assert hit is not None, f"{q.name}: moved {id} points nowhere"
            departed[(id_of(q), id)] = hit
        for state, members in groups.items():
            for id in members:
                holding.setdefault(id, []).append(f"{q.name}.{state}")
                present.add((id_of(q), id))
    for key in list(departed):
        present.add(key)
    assert all(len(v) == 1 for v in holding.values()), {
        k: v for k, v in holding.items() if len(v) != 1
    }
    for (_, id), (dest, new_id) in departed.items():
        seen = 0
        while (id_of(dest), new_id) in departed:  # a chain: follow it
            dest, new_id = departed[(id_of(dest), new_id)]
            seen += 1
            assert seen <= len(departed), "a cycle of pointers"
        assert (id_of(dest), new_id) in present and new_id in holding, (id, dest.name, new_id)


def id_of(q: BaseQueue[str]) -> int:
    return q.token


# -- rule 1: configuration -------------------------------------------------------------------


def test_name_defaults_to_the_token_and_can_be_given(clock: FakeClock) -> None:
    with Queue[str](clock=clock) as q, Queue[str](clock=clock, name="orders") as named:
        assert q.name.startswith("queue-") and q.name != named.name
        assert named.name == "orders"
        assert q.dead_letter is None and q.retention is None


@pytest.mark.parametrize(
    ("kwargs", "error", "word"),
    [
        ({"max_receives": None}, ValueError, "dead_letter needs max_receives"),
        ({"dead_letter": "dlq"}, TypeError, "dead_letter must be an impl queue"),
        ({"name": "bad name"}, ValueError, "name must be"),
        ({"name": 3}, TypeError, "name must be a str"),
        ({"name": "dlq"}, ValueError, "name 'dlq' is taken"),
        ({"retention": 0}, ValueError, "retention must be > 0"),
        ({"retention": float("inf")}, ValueError, "retention must be a finite number"),
        ({"retention": "1"}, TypeError, "retention must be a number"),
    ],
)
def test_a_bad_configuration_names_the_argument_and_changes_nothing(
    dlq: Queue[str], clock: FakeClock, kwargs: dict[str, object], error: type, word: str
) -> None:
    dlq.send("before", id="x")
    args: dict[str, object] = {"max_receives": 2, "clock": clock, "dead_letter": dlq}
    args.update(kwargs)
    with pytest.raises(error, match=word):
        Queue[str](**args)  # type: ignore[arg-type]
    # The target is untouched: still in no system, its ids its own.
    assert dlq.machine.system is None
    assert dlq.send("after") == "msg-1"


def test_the_target_must_be_unbounded(clock: FakeClock) -> None:
    with Queue[str](capacity=3, clock=clock) as bounded:
        with pytest.raises(ValueError, match="dead_letter must be unbounded"):
            Queue[str](max_receives=1, clock=clock, dead_letter=bounded)
        assert bounded.machine.system is None


def test_the_target_must_be_of_the_same_kind(clock: FakeClock) -> None:
    with Queue[str](clock=clock) as standard, FifoQueue[str](clock=clock) as fifo:
        with pytest.raises(ValueError, match="dead_letter must be a queue of the same kind"):
            FifoQueue[str](max_receives=1, clock=clock, dead_letter=standard)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="dead_letter must be a queue of the same kind"):
            Queue[str](max_receives=1, clock=clock, dead_letter=fifo)
        assert standard.machine.system is None and fifo.machine.system is None


def test_the_target_must_share_the_clock_and_not_be_closed(dlq: Queue[str]) -> None:
    with pytest.raises(ValueError, match="dead_letter must use the same clock object"):
        Queue[str](max_receives=1, clock=FakeClock(), dead_letter=dlq)
    closed = Queue[str](clock=dlq.clock)
    closed.close()
    with pytest.raises(ValueError, match=r"dead_letter 'queue-.*' is closed"):
        Queue[str](max_receives=1, clock=dlq.clock, dead_letter=closed)


def test_without_a_clock_a_source_takes_its_targets(dlq: Queue[str]) -> None:
    with Queue[str](max_receives=1, dead_letter=dlq) as q:
        assert q.clock is dlq.clock


def test_a_bad_dedup_interval_does_not_link_the_fifo_source(clock: FakeClock) -> None:
    with FifoQueue[str](clock=clock) as target:
        with pytest.raises(ValueError, match="dedup_interval must be > 0"):
            FifoQueue[str](max_receives=1, dedup_interval=0, clock=clock, dead_letter=target)
        assert target.machine.system is None


# -- rule 2: one id space ----------------------------------------------------------------------


def test_generated_ids_come_from_one_counter(src: Queue[str], dlq: Queue[str]) -> None:
    assert [src.send("a"), dlq.send("b"), src.send("c")] == ["msg-1", "msg-2", "msg-3"]


def test_an_id_the_target_had_before_the_link_is_taken(clock: FakeClock) -> None:
    with Queue[str](clock=clock) as target:
        assert target.send("old") == "msg-1"
        with Queue[str](max_receives=1, clock=clock, dead_letter=target) as q:
            assert q.send("new") == "msg-2"
            with pytest.raises(DuplicateIdError, match="a queue of this system"):
                q.send("x", id="msg-1")


def test_a_chosen_id_is_reserved_across_the_system(src: Queue[str], dlq: Queue[str]) -> None:
    src.send("a", id="a")
    with pytest.raises(DuplicateIdError, match="'a' was already accepted by a queue"):
        dlq.send("again", id="a")
    with pytest.raises(DuplicateIdError, match=r"entries\[1\].id 'a'"):
        dlq.send_batch([Entry("b", id="b"), Entry("again", id="a")])
    assert dlq.stats() == Stats(0, 0, 0, 0, 0)
    dlq.send("b", id="b")  # the failed batch reserved nothing
    with pytest.raises(DuplicateIdError):
        src.send("b", id="b")


def test_a_vetoed_send_gives_its_id_back(src: Queue[str], dlq: Queue[str]) -> None:
    def veto(step: object) -> None:
        raise RuntimeError("sink down")

    src.record_trace(veto)
    with pytest.raises(RuntimeError):
        src.send("a", id="a")
    src.record_trace(None)
    assert dlq.send("a", id="a") == "a"


# -- rule 3: the move ----------------------------------------------------------------------------


def test_a_retry_that_dies_moves_the_message_into_the_targets_tail(
    src: Queue[str], dlq: Queue[str]
) -> None:
    dlq.send("already there", id="first")
    src.send("poison", id="p")
    kill(src, 2)
    # Here it died (listed and counted), there it is visible, at the tail, attempt kept.
    assert [m.id for m in src.dead_letters()] == ["p"]
    assert src.stats() == Stats(visible=0, in_flight=0, done=0, cancelled=0, dead=1)
    assert [m.id for m in dlq.snapshot().visible] == ["first", "p"]
    assert dlq.snapshot().visible[1].attempt == 2
    assert dlq.source_of("p") is src
    assert dlq.source_of("first") is None
    assert src.source_of("p") is None
    dlq.receive()
    m = dlq.receive()
    assert (m.id, m.body, m.attempt) == ("p", "poison", 3)


def test_the_receipt_in_the_source_dies_with_the_move(src: Queue[str], dlq: Queue[str]) -> None:
    src.send("poison", id="p")
    kill(src, 1)
    last = src.receive()
    assert src.change_visibility(last.receipt, 0) is True  # dies: moved
    assert src.delete(last.receipt) is False
    assert src.retry(last.receipt) is False
    assert dlq.stats().visible == 1


def test_expiry_by_sweep_moves_the_message(
    src: Queue[str], dlq: Queue[str], clock: FakeClock
) -> None:
    src.send("poison", id="p")
    src.receive()
    clock.advance(5)
    src.sweep()
    src.receive()
    clock.advance(5)
    src.sweep()
    assert [m.id for m in dlq.snapshot().visible] == ["p"]
    assert src.stats().dead == 1


def test_change_visibility_batch_moves_each_death(src: Queue[str], dlq: Queue[str]) -> None:
    src.send_batch([Entry("a", id="a"), Entry("b", id="b")])
    first = src.receive_batch(2)
    src.change_visibility_batch([(m.receipt, 0) for m in first])
    second = src.receive_batch(2)
    assert src.change_visibility_batch([(second[1].receipt, 0), (second[0].receipt, 7)]) == [
        True,
        True,
    ]
    assert [m.id for m in dlq.snapshot().visible] == ["b"]
    assert [m.id for m in src.snapshot().in_flight] == ["a"]


def test_a_move_wakes_a_receiver_of_the_target_and_a_sender_of_the_source(
    dlq: Queue[str], clock: FakeClock, spawn: Spawn
) -> None:
    with Queue[str](capacity=1, max_receives=1, clock=clock, dead_letter=dlq) as q:
        q.send("poison", id="p")
        m = q.receive()
        receiver = spawn(dlq.receive)
        sender = spawn(lambda: q.send("next", id="n"))
        assert clock.wait_for_waiters(2)  # both blocked: dlq empty, q full
        q.retry(m.receipt)
        assert receiver.result().id == "p"
        assert sender.result() == "n"


def test_fifo_to_fifo_keeps_the_group_takes_the_tail_and_is_never_deduplicated(
    clock: FakeClock,
) -> None:
    with (
        FifoQueue[str](clock=clock) as dlq,
        FifoQueue[str](max_receives=1, clock=clock, dead_letter=dlq) as q,
    ):
        dlq.send("direct", group="g", dedup_id="p")  # the dlq's own dedup id "p"
        q.send("poison", group="g", id="p", dedup_id="p")
        q.retry(q.receive().receipt)
        snap = dlq.snapshot()
        assert [(m.id, m.group) for m in snap.visible] == [("msg-1", "g"), ("p", "g")]
        assert snap.visible[1].sent > snap.visible[0].sent
        assert [d[0] for d in snap.dedup] == ["p"]  # only the direct send's record
        assert dlq.source_of("p") is q
        first = dlq.receive()
        assert first.id == "msg-1"
        dlq.delete(first.receipt)
        m = dlq.receive(block=False)
        assert (m.id, m.group, m.attempt) == ("p", "g", 2)


def test_a_move_into_a_locked_fifo_group_waits_for_the_unlock(clock: FakeClock) -> None:
    with (
        FifoQueue[str](clock=clock) as dlq,
        FifoQueue[str](max_receives=1, clock=clock, dead_letter=dlq) as q,
    ):
        dlq.send("holder", group="g")
        held = dlq.receive()  # group g locked in dlq
        q.send("poison", group="g", id="p")
        q.retry(q.receive().receipt)
        assert dlq.stats().visible == 1
        with pytest.raises(Exception, match="deliverable"):
            dlq.receive(block=False)
        dlq.delete(held.receipt)
        assert dlq.receive(block=False).id == "p"


def test_a_chain_moves_a_message_twice(clock: FakeClock) -> None:
    with (
        Queue[str](clock=clock, name="c") as c,
        Queue[str](max_receives=1, clock=clock, dead_letter=c, name="b") as b,
        Queue[str](max_receives=1, clock=clock, dead_letter=b, name="a") as a,
    ):
        a.send("poison", id="p")
        a.retry(a.receive().receipt)
        assert b.source_of("p") is a
        b.retry(b.receive().receipt)  # attempt 2 >= 1: dies in b too
        assert c.source_of("p") is b
        assert [m.id for m in c.snapshot().visible] == ["p"]
        assert c.snapshot().visible[0].attempt == 2
        assert (a.stats().dead, b.stats().dead) == (1, 1)
        check_system([a, b, c])
        assert a.machine.system is b.machine.system is c.machine.system
        assert a.send("x") == "msg-1"  # one counter for the three
        assert c.send("y") == "msg-2"


def test_a_move_into_a_shut_down_target_still_happens(src: Queue[str], dlq: Queue[str]) -> None:
    src.send("poison", id="p")
    dlq.shutdown()
    kill(src, 2)
    assert dlq.stats().visible == 1  # a release cannot fail: the message is kept


def test_a_vetoed_release_moves_nothing(src: Queue[str], dlq: Queue[str]) -> None:
    src.send("poison", id="p")
    kill(src, 1)
    m = src.receive()

    def veto(step: object) -> None:
        raise RuntimeError("sink down")

    src.record_trace(veto)
    with pytest.raises(RuntimeError):
        src.retry(m.receipt)
    src.record_trace(None)
    assert src.snapshot().in_flight[0].id == "p"
    assert dlq.stats() == Stats(0, 0, 0, 0, 0)
    assert src.retry(m.receipt) is True
    assert dlq.stats().visible == 1


def test_the_release_step_is_the_only_trace_step_of_a_move(
    src: Queue[str], dlq: Queue[str]
) -> None:
    log: list[tuple[str, object]] = []
    src.record_trace(lambda s: log.append(("src", s[:3])))
    dlq.record_trace(lambda s: log.append(("dlq", s[:3])))
    src.send("poison", id="p")
    kill(src, 2)
    assert log[-1] == ("src", ("retry", ("p", 2), True))
    assert [who for who, _ in log] == ["src"] * 5


# -- rule 7: locks in creation order ---------------------------------------------------------------


def test_a_sweeper_moves_a_message_with_no_call_on_a_real_clock() -> None:
    clock = MonotonicClock()
    with (
        Queue[str](clock=clock) as dlq,
        Queue[str](visibility_timeout=0.01, max_receives=1, clock=clock, dead_letter=dlq) as q,
    ):
        q.send("poison", id="p")
        q.receive()
        # Nobody calls sweep(): the source's sweeper fires the deadline and moves the message;
        # the receive blocked on the target's condition wakes for it. The bound only limits
        # how long a failure takes to show.
        m = dlq.receive(timeout=30.0)
        assert m.id == "p"
        assert q.stats().dead == 1


def test_the_sweeper_of_the_source_wakes_a_blocked_receiver_of_the_target(
    src: Queue[str], dlq: Queue[str], clock: FakeClock, spawn: Spawn
) -> None:
    src.send("poison", id="p")
    kill(src, 1)
    src.receive()
    receiver = spawn(dlq.receive)
    assert clock.wait_for_waiters(2)  # the receiver and the source's sweeper
    clock.advance(5)  # no call: the sweeper takes (dlq, src) and moves "p"
    m = receiver.result()
    assert (m.id, m.attempt) == ("p", 3)
    assert dlq.source_of("p") is src


def test_no_deadlock_between_retries_into_b_and_a_redrive_from_b_into_a(
    clock: FakeClock, spawn: Spawn
) -> None:
    rounds = 1000
    with (
        Queue[str](clock=clock, name="b") as b,
        Queue[str](max_receives=1, clock=clock, dead_letter=b, name="a") as a,
    ):
        done = threading.Event()

        def retrier() -> int:
            for i in range(rounds):
                a.send(f"m{i}")
                a.retry(a.receive().receipt)  # dies: moves into b under (b, a)
            return rounds

        def redriver() -> int:
            moved = 0
            for _ in range(rounds):
                moved += b.start_redrive(a).moved  # takes (b, a) too, in creation order
            assert done.wait(120.0)
            return moved + b.start_redrive(a).moved  # what came after the last round

        r = spawn(retrier)
        d = spawn(redriver)
        assert r.result(timeout=120.0) == rounds
        done.set()
        moved = d.result(timeout=120.0)
        # Every message: moved back to a or still waiting there; none lost, none twice.
        total = a.stats()
        assert moved >= 1
        assert total.dead == rounds
        assert b.stats().moved == moved
        assert total.visible + total.in_flight == moved
        check_system([a, b])


def test_generated_ids_skip_an_id_a_caller_chose_anywhere_in_the_system(
    src: Queue[str], dlq: Queue[str]
) -> None:
    dlq.send("chosen", id="msg-2")
    assert [src.send("a"), src.send("b")] == ["msg-1", "msg-3"]
    assert src.send_batch([Entry("c"), Entry("d", id="own")]) == ["msg-4", "own"]


def test_fifo_sends_of_a_system_share_the_id_space(clock: FakeClock) -> None:
    with (
        FifoQueue[str](clock=clock, retention=5) as dlq,
        FifoQueue[str](max_receives=1, clock=clock, dead_letter=dlq) as q,
    ):
        q.send("a", group="g", id="a")
        with pytest.raises(DuplicateIdError, match="a queue of this system"):
            dlq.send("again", group="g", id="a")
        with pytest.raises(DuplicateIdError, match=r"entries\[0\].id 'a'"):
            dlq.send_batch([Entry("again", group="g", id="a")])
        assert dlq.send_batch([Entry("b", group="g"), Entry("c", group="h")]) == [
            "msg-1",
            "msg-2",
        ]
        clock.advance(5)
        dlq.sweep()
        assert dlq.aged_out() == ["msg-1", "msg-2"]


def test_no_deadlock_between_a_sweeper_dead_lettering_and_a_redrive_on_a_real_clock(
    spawn: Spawn,
) -> None:
    # The scenario of the opposite-order deadlock: the source's sweeper moves A -> B (it holds
    # B's lock, then A's) while a redrive moves B -> A (B's, then A's). Real threads and a
    # real clock; nothing here waits on time except the bounds that limit a failure.
    rounds = 300
    clock = MonotonicClock()
    b = Queue[str](clock=clock, name="b")
    a = Queue[str](visibility_timeout=0.001, max_receives=1, clock=clock, dead_letter=b, name="a")
    expired = threading.Event()
    moves = threading.Semaphore(0)

    def sink(step: tuple[str, tuple[object, ...], object, float]) -> None:
        if step[0] == "expire":  # the sweeper, holding (b, a), about to move a message
            expired.set()
            moves.release()

    a.record_trace(sink)
    try:

        def consumer() -> int:
            for i in range(rounds):
                expired.clear()
                a.send(f"m{i}")
                a.receive(timeout=30.0)  # never acked: the sweeper expires and moves it
                assert expired.wait(30.0)
            return rounds

        def redriver() -> int:
            moved = 0
            for _ in range(rounds):
                assert moves.acquire(timeout=30.0)  # a move into b is under way
                # (b, a) too, while the sweeper runs; a few more tries widen the window in
                # which the next sweep may come
                for _ in range(20):
                    moved += b.start_redrive(a).moved
            return moved

        c = spawn(consumer)
        r = spawn(redriver)
        assert c.result(timeout=120.0) == rounds
        moved = r.result(timeout=120.0)
        a.close()  # its sweeper joined: no move after this point
        b.close()
        check_system([a, b])
        assert b.stats().moved == moved
    finally:
        a.close()
        b.close()
