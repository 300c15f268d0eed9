"""Retention, dead-lettering and redrive of the asyncio shell, fired by its loop timer alone.

The threaded queue's sweeper thread is, in ``impl/aio.py``, one loop timer per queue aimed at
the earliest due timer; on an :class:`impl.FakeClock` it runs when the test advances the clock.
So here nothing calls ``sweep()`` (except where a test says it must): retention ages messages
out (docs/contract.md section 7.4), a dying release moves the message into the dead-letter
target (7.3), and a redrive (7.5, ``impl/redrive.py``) moves messages back, all at once or one
per tick of its rate, each tick a timer of the dead-letter queue's loop timer. Receivers and
senders waiting on either queue are woken by those moves, and a woken one that is cancelled
before its step passes the wakeup on. Tasks are coordinated by awaiting them or by
``asyncio.sleep(0)`` passes, never by wall time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from impl import AsyncFifoQueue, AsyncQueue, FakeClock, Queue, RedriveRunning
from impl.redrive import RETRY_AFTER, RedriveStatus

R = TypeVar("R")

AnyQueue = AsyncQueue[str] | AsyncFifoQueue[str]


def run(coro: Coroutine[Any, Any, R]) -> R:
    return asyncio.run(coro)


async def settle() -> None:
    # Let every ready task run to its next await (a few passes of the loop).
    for _ in range(5):
        await asyncio.sleep(0)


def make(fifo: bool, clock: FakeClock, **kw: Any) -> Any:
    return AsyncFifoQueue(clock=clock, **kw) if fifo else AsyncQueue(clock=clock, **kw)


async def send(q: Any, id: str, group: str = "g", **kw: Any) -> str:
    if isinstance(q, AsyncFifoQueue):
        return await q.send(f"body-{id}", group=group, id=id, **kw)
    return str(await q.send(f"body-{id}", id=id, **kw))


FIFO = pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])


# =============================================================================================
# Retention
# =============================================================================================


@FIFO
def test_retention_ages_out_visible_delayed_and_in_flight_messages_with_no_sweep(
    fifo: bool,
) -> None:
    async def main() -> None:
        clock = FakeClock()
        q = make(fifo, clock, retention=10.0, visibility_timeout=30.0)
        await send(q, "v", group="a")
        if not fifo:  # (a FIFO queue has no per-message delay)
            await send(q, "d", delay=20.0)  # its retention comes before its delay
        await send(q, "f", group="c")
        got = [await q.receive(), await q.receive()]
        assert sorted(m.id for m in got) == ["f", "v"]
        await send(q, "w", group="d")
        clock.advance(9.0)
        assert q.stats().aged_out == 0
        clock.advance(1.0)  # the retention timers: the loop timer fires them
        s = q.stats()
        assert (s.visible, s.in_flight, s.delayed) == (0, 0, 0)
        expected = ["f", "v", "w"] if fifo else ["d", "f", "v", "w"]
        assert sorted(q.aged_out()) == expected
        assert s.aged_out == len(expected)
        assert not any(q.delete(m.receipt) for m in got)  # their receipts died with them
        assert clock.callbacks() == 0  # nothing left to time: the loop timer is not re-armed
        q.close()

    run(main())


def test_retention_arms_one_loop_timer_for_all_the_messages_not_one_each() -> None:
    async def main() -> None:
        clock = FakeClock()
        q: AsyncQueue[str] = AsyncQueue(clock=clock, retention=100.0)
        for i in range(100):  # m_i sent at t = i, due at 100 + i
            if i:
                clock.advance(1.0)
            await q.send(f"m{i}", id=f"m{i}")
            assert clock.callbacks() == 1
        clock.advance(50.0)  # t = 149: m0 .. m49 reach their retention
        assert q.stats().aged_out == 50
        assert clock.callbacks() == 1  # re-aimed at the next one (m50's, at 150)
        clock.advance(100.0)
        assert q.stats().aged_out == 100
        assert clock.callbacks() == 0
        q.close()

    run(main())


@FIFO
def test_a_sender_waiting_on_a_full_queue_gets_the_slot_retention_frees(fifo: bool) -> None:
    async def main() -> None:
        clock = FakeClock()
        q = make(fifo, clock, capacity=1, retention=5.0)
        await send(q, "old")
        first = asyncio.create_task(send(q, "new1", group="n1"))
        second = asyncio.create_task(send(q, "new2", group="n2"))
        await settle()
        assert not first.done() and not second.done()
        clock.advance(5.0)  # "old" ages out: one slot, the oldest sender's
        assert await first == "new1"
        await settle()
        assert not second.done()  # the new message holds the slot
        clock.advance(5.0)  # "new1" (accepted at 5.0) ages out in turn
        assert await second == "new2"
        assert q.aged_out() == ["old", "new1"]
        q.close()

    run(main())


@FIFO
def test_a_woken_sender_cancelled_before_its_step_passes_the_freed_slot_on(fifo: bool) -> None:
    async def main() -> None:
        clock = FakeClock()
        q = make(fifo, clock, capacity=1, retention=5.0)
        await send(q, "old")
        first = asyncio.create_task(send(q, "new1", group="n1"))
        second = asyncio.create_task(send(q, "new2", group="n2"))
        await settle()
        clock.advance(5.0)  # wakes the first sender (its future resolved) ...
        first.cancel()  # ... which is cancelled before its step: it sent nothing
        assert await second == "new2"
        with pytest.raises(asyncio.CancelledError):
            await first
        snap = q.snapshot()
        assert [m.id for m in snap.visible] == ["new2"]
        q.close()

    run(main())


def test_a_closed_queue_stops_its_loop_timer_and_only_sweep_applies_what_is_due() -> None:
    async def main() -> None:
        clock = FakeClock()
        q: AsyncQueue[str] = AsyncQueue(clock=clock, retention=5.0)
        await q.send("m", id="m")
        q.close()
        assert clock.callbacks() == 0
        clock.advance(5.0)
        assert q.stats().aged_out == 0  # the timer was stopped with the queue
        q.sweep()
        assert q.aged_out() == ["m"]

    run(main())


# =============================================================================================
# Dead-lettering by the loop timer's release
# =============================================================================================


@FIFO
def test_a_dying_release_moves_the_message_on_the_loop_timer_and_it_ages_out_in_the_target(
    fifo: bool,
) -> None:
    # A standard move keeps the message's enqueue time (it ages out in the target at 0 + 5); a
    # FIFO move restarts it (at 1 + 5): docs/contract.md section 7.4.
    async def main() -> None:
        clock = FakeClock()
        dlq = make(fifo, clock, retention=5.0)
        q = make(fifo, clock, visibility_timeout=1.0, max_receives=1, dead_letter=dlq)
        await send(q, "p")
        got = await q.receive()
        waiter = asyncio.create_task(dlq.receive(visibility_timeout=0.5))
        await settle()
        clock.advance(1.0)  # the release dies: moved into dlq, whose receiver it wakes
        moved = await waiter
        assert (moved.id, moved.body, moved.attempt) == ("p", "body-p", 2)
        assert dlq.source_of("p") is q
        assert [m.id for m in q.dead_letters()] == ["p"]
        assert not q.delete(got.receipt)
        clock.advance(0.5)  # its delivery in dlq expires: visible there again
        assert dlq.stats().visible == 1
        clock.advance(3.5)  # t = 5.0
        assert dlq.stats().aged_out == (0 if fifo else 1)
        clock.advance(1.0)  # t = 6.0
        assert dlq.aged_out() == ["p"]
        q.close()
        dlq.close()

    run(main())


def test_a_receiver_of_the_target_woken_by_a_move_and_cancelled_passes_the_wakeup_on() -> None:
    async def main() -> None:
        clock = FakeClock()
        dlq: AsyncQueue[str] = AsyncQueue(clock=clock)
        q: AsyncQueue[str] = AsyncQueue(
            visibility_timeout=1.0, max_receives=1, clock=clock, dead_letter=dlq
        )
        await q.send("p", id="p")
        await q.receive()
        first = asyncio.create_task(dlq.receive())
        second = asyncio.create_task(dlq.receive())
        await settle()
        clock.advance(1.0)  # the move wakes the first ...
        first.cancel()  # ... cancelled before its step
        assert (await second).id == "p"
        with pytest.raises(asyncio.CancelledError):
            await first
        assert [m.id for m in dlq.snapshot().in_flight] == ["p"]
        q.close()
        dlq.close()

    run(main())


# =============================================================================================
# Redrive
# =============================================================================================


async def _dead_letters(fifo: bool, n: int, **source_kw: Any) -> tuple[FakeClock, Any, Any]:
    """A source whose ``n`` messages all died at t = 1.0 into its dead-letter queue."""
    clock = FakeClock()
    dlq = make(fifo, clock)
    q = make(fifo, clock, visibility_timeout=1.0, max_receives=1, dead_letter=dlq, **source_kw)
    for i in range(n):
        await send(q, f"p{i}", group=f"g{i}")
    for _ in range(n):
        await q.receive()
    clock.advance(1.0)
    assert dlq.stats().visible == n
    return clock, q, dlq


@FIFO
def test_a_redrive_moves_every_message_back_at_once_and_wakes_the_source_receivers(
    fifo: bool,
) -> None:
    async def main() -> None:
        _, q, dlq = await _dead_letters(fifo, 2)
        receivers = [asyncio.create_task(q.receive()) for _ in range(3)]
        await settle()
        task = dlq.start_redrive()  # rate=None: every move inside this call
        assert task.status is RedriveStatus.COMPLETED
        assert (task.moved, task.to_move) == (2, 2)
        receivers[0].cancel()  # woken by the first move, cancelled before its step
        await settle()
        assert receivers[0].cancelled()
        got = [await receivers[1], await receivers[2]]  # the wakeup went on to the third
        assert sorted(m.body for m in got) == ["body-p0", "body-p1"]
        assert all(m.attempt == 1 for m in got)  # new messages of the source
        assert dlq.stats().moved == 2
        for m, old in zip(sorted(got, key=lambda m: m.body), ("p0", "p1"), strict=True):
            assert dlq.moved_to(old) == (q, m.id)
            assert q.source_of(m.id) is None
        if fifo:
            assert sorted(m.group for m in q.snapshot().in_flight) == ["g0", "g1"]
        q.close()
        dlq.close()

    run(main())


@FIFO
def test_a_redrive_with_a_rate_moves_one_message_per_tick_of_the_loop_timer(fifo: bool) -> None:
    async def main() -> None:
        clock, q, dlq = await _dead_letters(fifo, 3)
        waiter = asyncio.create_task(q.receive())
        await settle()
        task = dlq.start_redrive(rate=2.0)  # ticks at 1.0, 1.5, 2.0: the dlq's loop timer
        assert (task.status, task.moved) == (RedriveStatus.RUNNING, 0)
        moved = []
        for dt in (0.0, 0.5, 0.5):
            clock.advance(dt)
            await settle()
            moved.append(task.moved)
        assert moved == [1, 2, 3]
        assert task.status is RedriveStatus.COMPLETED
        assert (await waiter).body == "body-p0"  # woken by the first tick's move
        assert q.stats().visible == 2
        clock.advance(10.0)  # nothing more to tick
        assert dlq.stats().moved == 3
        q.close()
        dlq.close()

    run(main())


def test_a_cancelled_redrive_task_moves_no_more() -> None:
    async def main() -> None:
        clock, q, dlq = await _dead_letters(False, 3)
        task = dlq.start_redrive(rate=1.0)
        clock.advance(0.0)
        assert task.moved == 1
        assert task.cancel()
        clock.advance(5.0)
        assert (task.status, task.moved) == (RedriveStatus.CANCELLED, 1)
        assert (dlq.stats().visible, q.stats().visible) == (2, 1)
        q.close()
        dlq.close()

    run(main())


def test_a_redrive_blocked_by_a_full_source_retries_on_the_loop_timer() -> None:
    async def main() -> None:
        clock, q, dlq = await _dead_letters(False, 1, capacity=1)
        await q.send("filler", id="filler")
        task = dlq.start_redrive()
        assert (task.status, task.moved) == (RedriveStatus.RUNNING, 0)  # no room: a retry tick
        m = await q.receive()
        assert q.delete(m.receipt)  # room again, but the move waits for its tick
        assert task.moved == 0
        clock.advance(RETRY_AFTER)
        assert (task.status, task.moved) == (RedriveStatus.COMPLETED, 1)
        assert (await q.receive(block=False)).body == "body-p0"
        q.close()
        dlq.close()

    run(main())


def test_a_redriven_message_ages_out_in_a_destination_with_retention() -> None:
    async def main() -> None:
        clock, q, dlq = await _dead_letters(False, 1)
        dest: AsyncQueue[str] = AsyncQueue(clock=clock, retention=3.0)
        dlq.start_redrive(dest)  # t = 1.0: its retention restarts there
        (old, new_id) = ("p0", dlq.moved_to("p0")[1])
        assert dlq.moved_to(old)[0] is dest
        clock.advance(2.9)
        assert dest.stats().visible == 1
        clock.advance(0.1)  # t = 4.0: dest's loop timer, armed by the move
        assert dest.aged_out() == [new_id]
        for x in (q, dlq, dest):
            x.close()

    run(main())


def test_start_redrive_refuses_a_queue_of_another_shell_and_a_second_running_task() -> None:
    async def main() -> None:
        clock, q, dlq = await _dead_letters(False, 2)
        with pytest.raises(TypeError, match="destination"):
            dlq.start_redrive(Queue(clock=clock))
        task = dlq.start_redrive(rate=0.5)
        with pytest.raises(RedriveRunning):
            dlq.start_redrive()
        assert task.cancel()
        q.close()
        dlq.close()

    run(main())


def test_a_message_older_than_the_targets_retention_ages_out_in_the_advance_that_moved_it() -> None:
    # A standard move keeps the enqueue time: a message dead at t = 1 arrives in a target with
    # retention 0.5 already due; the target's loop timer fires it in that same advance, before
    # the receiver the move woke has taken its step: it finds nothing and waits on.
    async def main() -> None:
        clock = FakeClock()
        dlq: AsyncQueue[str] = AsyncQueue(clock=clock, retention=0.5)
        q: AsyncQueue[str] = AsyncQueue(
            visibility_timeout=1.0, max_receives=1, clock=clock, dead_letter=dlq
        )
        await q.send("p", id="p")
        await q.receive()
        waiter = asyncio.create_task(dlq.receive())
        await settle()
        clock.advance(1.0)  # the move (the waiter woken), then the target's retention timer
        assert dlq.aged_out() == ["p"]
        assert [m.id for m in q.dead_letters()] == ["p"]
        assert clock.callbacks() == 0
        await settle()
        assert not waiter.done()  # woken for a message that aged out first: waits again
        await dlq.send("next", id="n")
        assert (await waiter).id == "n"
        q.close()
        dlq.close()

    run(main())
