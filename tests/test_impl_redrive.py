"""``dlq.start_redrive(destination=None, *, rate=None)``: a task that moves a dead-letter queue's
messages out (the design note's rule 5).

Scope: the ids visible when the task starts, oldest first; each move one step across two
queues (MOVED in the dead-letter queue, a new message in the destination: fresh id, attempt 0,
enqueued now); skips; a rate as ticks in the dead-letter queue's one timer order; a bounded
destination that is full; cancel; one running task per queue. Time is a ``FakeClock``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from impl import (
    FakeClock,
    FifoQueue,
    Queue,
    RedriveRunning,
    RedriveStatus,
    RedriveTask,
)
from impl.redrive import RETRY_AFTER


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def dlq(clock: FakeClock) -> Iterator[Queue[str]]:
    with Queue[str](clock=clock, name="dlq") as q:
        yield q


@pytest.fixture
def src(dlq: Queue[str], clock: FakeClock) -> Iterator[Queue[str]]:
    with Queue[str](max_receives=1, clock=clock, dead_letter=dlq, name="src") as q:
        yield q


def dead_letter(q: Queue[str], *bodies: str) -> None:
    """Send each body to ``q`` and kill it there at once (``max_receives=1``)."""
    for body in bodies:
        q.send(body, id=body)
        q.retry(q.receive().receipt)


def visible(q: Queue[str] | FifoQueue[str]) -> list[tuple[str, str, int]]:
    return [(m.id, m.body, m.attempt) for m in q.snapshot().visible]


def test_an_unrated_redrive_moves_every_message_back_to_its_source_as_a_new_one(
    src: Queue[str], dlq: Queue[str]
) -> None:
    dead_letter(src, "a", "b")
    task = dlq.start_redrive()
    assert isinstance(task, RedriveTask)
    assert (task.status, task.to_move, task.moved, task.skipped) == (
        RedriveStatus.COMPLETED,
        2,
        2,
        0,
    )
    assert (task.destination, task.rate, task.started_at) == (None, None, 0.0)
    # New ids from the system's counter (a and b took none), attempt 0, oldest first.
    assert visible(src) == [("msg-1", "a", 0), ("msg-2", "b", 0)]
    assert dlq.moved_to("a") == (src, "msg-1")
    assert dlq.moved_to("b") == (src, "msg-2")
    assert src.source_of("msg-1") is None
    s = dlq.stats()
    assert (s.visible, s.moved) == (0, 2)
    assert dlq.snapshot().moved == frozenset({"a", "b"})
    assert src.stats().dead == 2  # where they died stays recorded


def test_a_redriven_message_is_new_its_attempt_restarts_and_can_die_again(
    src: Queue[str], dlq: Queue[str]
) -> None:
    dead_letter(src, "a")
    dlq.start_redrive()
    m = src.receive()
    assert (m.id, m.attempt) == ("msg-1", 1)
    src.retry(m.receipt)  # dies again, moved again
    assert [x[0] for x in visible(dlq)] == ["msg-1"]
    assert dlq.source_of("msg-1") is src


def test_a_redrive_restarts_retention(clock: FakeClock) -> None:
    with (
        Queue[str](clock=clock) as dlq,
        Queue[str](max_receives=1, retention=10, clock=clock, dead_letter=dlq) as src,
    ):
        dead_letter(src, "a")
        clock.advance(8)
        dlq.start_redrive()  # enqueued again at 8: due at 18, not 10
        clock.advance(9)
        src.sweep()
        assert src.aged_out() == []
        clock.advance(1)
        src.sweep()
        assert src.aged_out() == ["msg-1"]


def test_a_named_destination(src: Queue[str], dlq: Queue[str], clock: FakeClock) -> None:
    dead_letter(src, "a")
    with Queue[str](clock=clock) as other:
        task = dlq.start_redrive(other)
        assert task.destination is other
        assert visible(other) == [("msg-1", "a", 0)]
        assert visible(src) == []
        assert dlq.moved_to("a") == (other, "msg-1")


def test_bad_arguments_name_themselves_and_change_nothing(
    src: Queue[str], dlq: Queue[str], clock: FakeClock
) -> None:
    dead_letter(src, "a")
    with FifoQueue[str](clock=clock) as fifo, Queue[str](clock=FakeClock()) as far:
        cases: list[tuple[object, object, type, str]] = [
            ("src", None, TypeError, "destination must be an impl queue"),
            (dlq, None, ValueError, "destination must not be the dead-letter queue"),
            (fifo, None, ValueError, "destination must be a queue of the same kind"),
            (far, None, ValueError, "destination must use the same clock"),
            (None, 0, ValueError, "rate must be > 0"),
            (None, -1.0, ValueError, "rate must be > 0"),
            (None, float("inf"), ValueError, "rate must be a finite number"),
            (None, "1", TypeError, "rate must be a number"),
        ]
        for destination, rate, error, word in cases:
            with pytest.raises(error, match=word):
                dlq.start_redrive(destination, rate=rate)  # type: ignore[arg-type]
    assert dlq.redrive_tasks() == []
    assert visible(dlq) == [("a", "a", 1)]


def test_only_one_running_task_per_queue(src: Queue[str], dlq: Queue[str]) -> None:
    dead_letter(src, "a", "b")
    first = dlq.start_redrive(rate=1)
    with pytest.raises(RedriveRunning, match=first.name):
        dlq.start_redrive()
    assert isinstance(RedriveRunning("x"), RuntimeError)
    assert first.cancel() is True
    assert first.cancel() is False
    second = dlq.start_redrive()
    assert dlq.redrive_tasks() == [second, first]  # most recent first
    assert (first.status, second.status) == (RedriveStatus.CANCELLED, RedriveStatus.COMPLETED)


def test_a_rate_moves_the_kth_message_at_started_at_plus_k_over_rate(
    src: Queue[str], dlq: Queue[str], clock: FakeClock
) -> None:
    dead_letter(src, "a", "b", "c")
    clock.advance(1)
    task = dlq.start_redrive(rate=2)  # moves due at 1.0, 1.5, 2.0
    assert task.started_at == 1.0
    dlq.sweep()
    assert task.moved == 1
    clock.advance(0.4)
    dlq.sweep()
    assert task.moved == 1
    clock.advance(0.1)
    dlq.sweep()
    assert task.moved == 2
    assert task.status is RedriveStatus.RUNNING
    clock.advance(5)  # a late sweep fires what is due by now, and no more than that
    dlq.sweep()
    assert (task.moved, task.status) == (3, RedriveStatus.COMPLETED)
    assert [x[1] for x in visible(src)] == ["a", "b", "c"]


def test_a_late_sweep_moves_every_due_tick_in_order(
    src: Queue[str], dlq: Queue[str], clock: FakeClock
) -> None:
    dead_letter(src, "a", "b", "c", "d")
    task = dlq.start_redrive(rate=1)  # due at 0, 1, 2, 3
    clock.advance(2.5)
    dlq.sweep()
    assert task.moved == 3
    assert [x[1] for x in visible(src)] == ["a", "b", "c"]


def test_messages_that_arrive_after_the_start_are_not_in_scope(
    src: Queue[str], dlq: Queue[str], clock: FakeClock
) -> None:
    dead_letter(src, "a", "b")
    with Queue[str](clock=clock) as other:
        task = dlq.start_redrive(other, rate=1)
        dead_letter(src, "late")  # while the task runs
        clock.advance(10)
        dlq.sweep()
        assert (task.status, task.moved, task.to_move) == (RedriveStatus.COMPLETED, 2, 2)
        assert [x[0] for x in visible(dlq)] == ["late"]
        assert [x[1] for x in visible(other)] == ["a", "b"]


def test_a_scope_id_no_longer_visible_is_skipped(
    src: Queue[str], dlq: Queue[str], clock: FakeClock
) -> None:
    dead_letter(src, "a", "b", "c", "d")
    task = dlq.start_redrive(rate=1)
    dlq.sweep()  # tick 0 (due at once; the sweeper may have fired it): "a" moves
    taken = dlq.receive()  # "b", in flight when its turn comes
    assert taken.id == "b"
    dlq.cancel("c")
    clock.advance(1)
    dlq.sweep()  # tick 1: b and c skipped, d moved
    assert (task.skipped, task.moved) == (2, 2)
    assert task.status is RedriveStatus.COMPLETED
    assert dlq.moved_to("b") is None and dlq.moved_to("d") is not None


def test_a_message_with_no_source_is_skipped_when_going_back_to_sources(
    src: Queue[str], dlq: Queue[str]
) -> None:
    dlq.send("sent here", id="direct")
    dead_letter(src, "a")
    task = dlq.start_redrive()
    assert (task.moved, task.skipped) == (1, 1)
    assert visible(dlq) == [("direct", "sent here", 0)]
    other = dlq.start_redrive(src)  # a named destination takes it
    assert other.moved == 1


def test_cancel_mid_task_stops_the_moves_and_keeps_those_made(
    src: Queue[str], dlq: Queue[str], clock: FakeClock
) -> None:
    dead_letter(src, "a", "b", "c")
    task = dlq.start_redrive(rate=1)
    dlq.sweep()
    assert task.moved == 1
    assert task.cancel() is True
    clock.advance(10)
    dlq.sweep()
    assert (task.moved, task.status) == (1, RedriveStatus.CANCELLED)
    assert [x[0] for x in visible(dlq)] == ["b", "c"]
    assert [x[1] for x in visible(src)] == ["a"]


def test_a_full_destination_leaves_the_message_and_an_unrated_task_retries_in_a_second(
    clock: FakeClock,
) -> None:
    with (
        Queue[str](clock=clock) as dlq,
        Queue[str](capacity=2, max_receives=1, clock=clock, dead_letter=dlq) as src,
    ):
        dead_letter(src, "a", "b", "c")
        src.send("filler-1")
        task = dlq.start_redrive()  # room for one only
        assert (task.moved, task.status) == (1, RedriveStatus.RUNNING)
        assert [x[0] for x in visible(dlq)] == ["b", "c"]  # never lost
        src.delete(src.receive().receipt)  # room for one more
        clock.advance(RETRY_AFTER / 2)
        dlq.sweep()
        assert task.moved == 1
        clock.advance(RETRY_AFTER / 2)
        dlq.sweep()
        assert (task.moved, task.status) == (2, RedriveStatus.RUNNING)
        src.delete(src.receive().receipt)
        clock.advance(RETRY_AFTER)
        dlq.sweep()
        assert (task.moved, task.status) == (3, RedriveStatus.COMPLETED)
        s = dlq.stats()
        assert (s.visible, s.moved) == (0, 3)
        assert sorted(m.body for m in src.snapshot().visible) == ["b", "c"]


def test_a_full_destination_makes_a_rated_task_retry_at_its_next_tick(clock: FakeClock) -> None:
    with (
        Queue[str](clock=clock) as dlq,
        Queue[str](capacity=1, max_receives=1, clock=clock, dead_letter=dlq) as src,
    ):
        dead_letter(src, "a", "b")
        src.send("filler")
        task = dlq.start_redrive(rate=1)
        dlq.sweep()  # tick 0: no room
        assert task.moved == 0 and [x[0] for x in visible(dlq)] == ["a", "b"]
        src.delete(src.receive().receipt)
        clock.advance(1)
        dlq.sweep()  # tick 1: "a" moves
        assert task.moved == 1
        clock.advance(1)
        dlq.sweep()  # tick 2: full again (a took the slot)
        assert task.moved == 1 and [x[0] for x in visible(dlq)] == ["b"]
        assert dlq.stats().moved + dlq.stats().visible == 2  # never lost, never twice


def test_fifo_to_fifo_redrive_keeps_the_group_and_skips_dedup(clock: FakeClock) -> None:
    with (
        FifoQueue[str](clock=clock) as dlq,
        FifoQueue[str](max_receives=1, clock=clock, dead_letter=dlq) as src,
    ):
        src.send("a", group="g", id="a", dedup_id="d")
        src.retry(src.receive().receipt)
        task = dlq.start_redrive()
        assert task.moved == 1
        snap = src.snapshot()
        assert [(m.id, m.group, m.attempt) for m in snap.visible] == [("msg-1", "g", 0)]
        assert [d[0] for d in snap.dedup] == ["d"]  # the original send's record only


def test_each_move_is_a_redrive_step_of_the_dlqs_trace(src: Queue[str], dlq: Queue[str]) -> None:
    dead_letter(src, "a", "b")
    log: list[tuple[str, tuple[object, ...], object]] = []
    src_log: list[object] = []
    dlq.record_trace(lambda step: log.append(step[:3]))
    src.record_trace(src_log.append)
    dlq.start_redrive()
    assert log == [("redrive", ("dlq", "a"), "msg-1"), ("redrive", ("dlq", "b"), "msg-2")]
    assert src_log == []


def test_a_vetoed_move_is_not_made_and_the_task_tries_again(
    src: Queue[str], dlq: Queue[str], clock: FakeClock
) -> None:
    dead_letter(src, "a")

    def veto(step: object) -> None:
        raise RuntimeError("sink down")

    dlq.record_trace(veto)
    with pytest.raises(RuntimeError):
        dlq.start_redrive()
    dlq.record_trace(None)
    (task,) = dlq.redrive_tasks()
    assert (task.status, task.moved) == (RedriveStatus.RUNNING, 0)
    assert visible(dlq) == [("a", "a", 1)] and visible(src) == []
    clock.advance(RETRY_AFTER)
    dlq.sweep()
    assert (task.status, task.moved) == (RedriveStatus.COMPLETED, 1)
    # The vetoed move's id was given back (the counter moved on, as for a vetoed send).
    assert visible(src) == [("msg-2", "a", 0)]
    assert dlq.send("y", id="msg-1") == "msg-1"


def test_the_dlqs_sweeper_ticks_without_a_call(
    src: Queue[str], dlq: Queue[str], clock: FakeClock
) -> None:
    moved = threading.Event()
    dead_letter(src, "a", "b")
    dlq.record_trace(lambda step: moved.set() if step[2] == "msg-2" else None)
    task = dlq.start_redrive(rate=1)  # tick 0 due at once: the sweeper fires it
    assert clock.wait_for_waiters(1)
    clock.advance(1)  # tick 1, by the sweeper alone
    assert moved.wait(30.0)
    assert task.status is RedriveStatus.COMPLETED


def test_a_chain_redrives_back_from_its_end(clock: FakeClock) -> None:
    with (
        Queue[str](clock=clock) as c,
        Queue[str](max_receives=1, clock=clock, dead_letter=c) as b,
        Queue[str](max_receives=1, clock=clock, dead_letter=b) as a,
    ):
        a.send("x", id="x")
        a.retry(a.receive().receipt)
        b.retry(b.receive().receipt)
        assert c.start_redrive().moved == 1  # back to its source, b
        assert [m.body for m in b.snapshot().visible] == ["x"]
        assert c.moved_to("x") == (b, "msg-1")


def test_a_redrive_of_an_empty_queue_completes_at_once_or_at_its_first_tick(
    dlq: Queue[str],
) -> None:
    task = dlq.start_redrive()
    assert (task.status, task.to_move, task.moved) == (RedriveStatus.COMPLETED, 0, 0)
    task = dlq.start_redrive(rate=5.0)  # its tick 0, due at once, finds the scope exhausted
    dlq.sweep()
    assert (task.status, task.to_move, task.moved) == (RedriveStatus.COMPLETED, 0, 0)


def test_a_purge_skips_the_rest_of_a_running_task(
    src: Queue[str], dlq: Queue[str], clock: FakeClock
) -> None:
    dead_letter(src, "a", "b", "c")
    task = dlq.start_redrive(rate=1)
    dlq.sweep()  # "a" moves
    assert dlq.purge() == 2
    clock.advance(1)
    dlq.sweep()  # the task still ticks: b and c are no longer visible, so skipped
    assert (task.status, task.moved, task.skipped) == (RedriveStatus.COMPLETED, 1, 2)


# -- where a moved message's new id comes from ---------------------------------------------------


def test_ids_gives_each_moved_message_its_new_id(src: Queue[str], dlq: Queue[str]) -> None:
    dead_letter(src, "a", "b")
    given = iter(["new-a", "new-b"])
    task = dlq.start_redrive(ids=lambda: next(given))
    assert task.status is RedriveStatus.COMPLETED
    assert visible(src) == [("new-a", "a", 0), ("new-b", "b", 0)]


def test_an_id_already_taken_in_the_system_is_drawn_again(src: Queue[str], dlq: Queue[str]) -> None:
    # "a" and "b" are taken (they were the dead-lettered messages' ids): drawn again.
    dead_letter(src, "a", "b")
    given = iter(["a", "b", "x", "a", "y"])
    dlq.start_redrive(ids=lambda: next(given))
    assert [m[0] for m in visible(src)] == ["x", "y"]


@pytest.mark.parametrize(
    ("ids", "error", "match"),
    [
        ("not callable", TypeError, "ids must be a callable"),
        (lambda: 7, TypeError, "ids must return a non-empty string"),
        (lambda: "", TypeError, "ids must return a non-empty string"),
        (lambda: "a", ValueError, "only ids already taken"),
    ],
)
def test_bad_ids_are_refused_and_move_nothing(
    src: Queue[str], dlq: Queue[str], ids: object, error: type[Exception], match: str
) -> None:
    dead_letter(src, "a")
    with pytest.raises(error, match=match):
        dlq.start_redrive(ids=ids)  # type: ignore[arg-type]
    assert visible(dlq) == [("a", "a", 1)]
    assert visible(src) == []
