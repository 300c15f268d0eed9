"""The asyncio shell (``impl/aio.py``): what a user of ``impl.AsyncQueue`` relies on first.

Each test runs on a fake clock: time moves only by ``clock.advance``, which runs the loop timer
at once on the loop's thread; tasks are coordinated by awaiting them or by ``asyncio.sleep(0)``
(one pass of the loop), never by sleeping on wall time. The one real-clock test uses generous
bounds and decides nothing by timing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from impl import AsyncFifoQueue, AsyncQueue, Empty, Entry, FakeClock, Full, ShutDown

R = TypeVar("R")


def run(coro: Coroutine[Any, Any, R]) -> R:
    return asyncio.run(coro)


async def settle() -> None:
    # Let every ready task run to its next await (a few passes of the loop).
    for _ in range(5):
        await asyncio.sleep(0)


def test_a_waiting_receive_is_woken_by_a_send_and_the_delivery_is_hidden() -> None:
    async def main() -> None:
        clock = FakeClock()
        q: AsyncQueue[str] = AsyncQueue(visibility_timeout=30.0, clock=clock)
        waiter = asyncio.create_task(q.receive())
        await settle()
        assert not waiter.done()
        await q.send("hello", id="a")
        m = await waiter
        assert (m.id, m.body, m.attempt) == ("a", "hello", 1)
        with pytest.raises(Empty):
            await q.receive(block=False)
        assert q.stats().in_flight == 1
        assert q.delete(m.receipt)
        assert q.stats().done == 1

    run(main())


def test_the_loop_timer_redelivers_after_the_visibility_timeout_and_the_old_receipt_is_stale() -> (
    None
):
    async def main() -> None:
        clock = FakeClock()
        q: AsyncQueue[str] = AsyncQueue(visibility_timeout=30.0, clock=clock)
        await q.send("x", id="a")
        first = await q.receive()
        waiter = asyncio.create_task(q.receive())
        await settle()
        clock.advance(29.0)
        await settle()
        assert not waiter.done()
        clock.advance(1.0)  # the deadline: the loop timer fires, no sweep() called
        second = await waiter
        assert (second.id, second.attempt) == ("a", 2)
        assert not q.delete(first.receipt)
        assert q.delete(second.receipt)

    run(main())


def test_a_delayed_send_becomes_visible_when_the_clock_reaches_it() -> None:
    async def main() -> None:
        clock = FakeClock()
        q: AsyncQueue[str] = AsyncQueue(clock=clock)
        await q.send("later", id="d", delay=5.0)
        waiter = asyncio.create_task(q.receive())
        await settle()
        clock.advance(4.0)
        await settle()
        assert not waiter.done()
        clock.advance(1.0)
        assert (await waiter).id == "d"

    run(main())


def test_timeouts_run_out_on_the_fake_clock() -> None:
    async def main() -> None:
        clock = FakeClock()
        q: AsyncQueue[str] = AsyncQueue(capacity=1, clock=clock)
        receiver = asyncio.create_task(q.receive(timeout=5.0))
        await settle()
        clock.advance(5.0)
        with pytest.raises(Empty, match=r"within 5\.0 seconds"):
            await receiver
        await q.send("a", id="a")
        sender = asyncio.create_task(q.send("b", id="b", timeout=2.0))
        await settle()
        clock.advance(2.0)
        with pytest.raises(Full):
            await sender
        assert q.stats().visible == 1  # the refused send changed nothing

    run(main())


def test_a_woken_receiver_that_is_cancelled_passes_its_wakeup_on() -> None:
    async def main() -> None:
        q: AsyncQueue[str] = AsyncQueue(clock=FakeClock())
        first = asyncio.create_task(q.receive())
        second = asyncio.create_task(q.receive())
        await settle()
        await q.send("m", id="m")  # resolves the first waiter's future
        first.cancel()  # before it runs its step: it delivers nothing
        m = await second
        assert m.id == "m"
        with pytest.raises(asyncio.CancelledError):
            await first
        snap = q.snapshot()
        assert [x.id for x in snap.in_flight] == ["m"]  # held by the second task only

    run(main())


def test_wait_for_around_a_receive_delivers_nothing_when_it_times_out() -> None:
    async def main() -> None:
        q: AsyncQueue[str] = AsyncQueue(clock=FakeClock())
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(q.receive(), timeout=0.01)
        await q.send("after", id="a")
        assert (await q.receive(block=False)).attempt == 1

    run(main())


def test_a_waiting_sender_gets_the_slot_a_delete_frees() -> None:
    async def main() -> None:
        q: AsyncQueue[str] = AsyncQueue(capacity=1, clock=FakeClock())
        await q.send("a", id="a")
        sender = asyncio.create_task(q.send("b", id="b"))
        await settle()
        assert not sender.done()
        m = await q.receive()
        await settle()
        assert not sender.done()  # receiving frees no capacity
        assert q.delete(m.receipt)
        assert await sender == "b"

    run(main())


def test_a_waiting_send_batch_waits_until_all_its_entries_fit() -> None:
    async def main() -> None:
        q: AsyncQueue[str] = AsyncQueue(capacity=2, clock=FakeClock())
        await q.send("a", id="a")
        batch = asyncio.create_task(q.send_batch([Entry("b", id="b"), Entry("c", id="c")]))
        await settle()
        assert not batch.done()
        m = await q.receive()
        assert q.delete(m.receipt)
        assert await batch == ["b", "c"]

    run(main())


def test_shutdown_wakes_every_waiter_and_async_for_drains_then_ends() -> None:
    async def main() -> None:
        q: AsyncQueue[str] = AsyncQueue(clock=FakeClock())
        waiters = [asyncio.create_task(q.receive()) for _ in range(3)]
        await settle()
        q.shutdown()
        for w in waiters:
            with pytest.raises(ShutDown):
                await w
        with pytest.raises(ShutDown):
            await q.send("late")

        q2: AsyncQueue[str] = AsyncQueue(clock=FakeClock())
        for i in range(3):
            await q2.send(f"m{i}", id=f"m{i}")
        q2.shutdown()
        assert [m.id async for m in q2] == ["m0", "m1", "m2"]
        q2.close()

    run(main())


def test_many_waiting_receivers_wake_in_the_order_they_began_to_wait() -> None:
    async def main() -> None:
        clock = FakeClock()
        q: AsyncQueue[int] = AsyncQueue(clock=clock)
        n = 1000
        tasks = [asyncio.create_task(q.receive()) for _ in range(n)]
        await settle()
        assert clock.callbacks() == 0  # nothing armed while they wait: no polling
        for i in range(n):
            await q.send(i, id=f"m{i}")
        got = [(await t).body for t in tasks]
        assert got == list(range(n))

    run(main())


def test_the_fifo_queue_keeps_group_order_and_locks_a_group_in_flight() -> None:
    async def main() -> None:
        clock = FakeClock()
        q: AsyncFifoQueue[str] = AsyncFifoQueue(visibility_timeout=10.0, clock=clock)
        await q.send("g1", group="g", id="g1")
        await q.send("g2", group="g", id="g2")
        await q.send("h1", group="h", id="h1")
        assert await q.send("dup", group="g", id="g3", dedup_id="k") == "g3"
        assert await q.send("dup", group="g", id="g4", dedup_id="k") == "g3"
        a = await q.receive()
        b = await q.receive()
        assert (a.id, b.id) == ("g1", "h1")  # g is locked while g1 is in flight
        waiter = asyncio.create_task(q.receive())
        await settle()
        assert not waiter.done()
        assert q.delete(a.receipt)  # unlocks g: wakes the waiter
        assert (await waiter).id == "g2"

    run(main())


def test_a_dead_letter_target_must_be_an_async_queue_of_the_same_kind() -> None:
    clock = FakeClock()

    async def main() -> None:
        dlq: AsyncQueue[str] = AsyncQueue(clock=clock)
        q: AsyncQueue[str] = AsyncQueue(
            visibility_timeout=1.0, max_receives=1, clock=clock, dead_letter=dlq
        )
        await q.send("poison", id="p")
        await q.receive()
        waiter = asyncio.create_task(dlq.receive())
        await settle()
        clock.advance(1.0)  # the release dies: the move wakes the target's receiver
        moved = await waiter
        assert moved.body == "poison"
        assert dlq.source_of(moved.id) is q

    run(main())
    with pytest.raises(TypeError, match="dead_letter"):
        AsyncQueue(max_receives=1, dead_letter=AsyncFifoQueue(clock=clock))  # type: ignore[arg-type]


def test_bad_arguments_raise_before_any_wait_and_change_nothing() -> None:
    async def main() -> None:
        q: AsyncQueue[str] = AsyncQueue(clock=FakeClock())
        with pytest.raises(ValueError, match="timeout"):
            await q.receive(timeout=-1.0)
        with pytest.raises(TypeError, match="block"):
            await q.receive(block="yes")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="max_messages"):
            await q.receive_batch(11)
        with pytest.raises(ValueError, match="id"):
            await q.send("x", id="not an id!")
        assert q.stats().visible == 0

    run(main())


def test_an_async_queue_on_the_real_clock_redelivers_by_itself() -> None:
    async def main() -> None:
        async with AsyncQueue[str](visibility_timeout=0.05) as q:
            await q.send("r", id="r")
            first = await q.receive()
            second = await q.receive(timeout=30.0)  # generous: the loop timer redelivers
            assert (first.attempt, second.attempt) == (1, 2)

    run(main())
