"""The asyncio shell with 10,000 tasks waiting at once: no polling, order kept, cost counted.

Each test but the last runs on ``asyncio.run`` (the real event loop) with an
:class:`impl.FakeClock`, so nothing depends on wall time: a waiting task is a future in a FIFO,
and the clock holds no callback while no timer is due (``FakeClock.callbacks()`` is 0, the
figure of a queue with no timer armed). The tests assert order and state, never a duration;
the last one counts the comparisons a wait's end makes (on the deterministic loop, with futures
that count them) instead of timing it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, Final, TypeVar

import pytest

from impl import AsyncQueue, Entry, FakeClock, ShutDown
from model_tests.aio.loop import DeterministicLoop

R = TypeVar("R")

#: How many tasks wait at once.
N: Final = 10_000


def run(coro: Coroutine[Any, Any, R]) -> R:
    return asyncio.run(coro)


async def settle(q: AsyncQueue[Any], waiting: int, cond: str = "not_empty") -> None:
    """Let the loop run until ``waiting`` tasks wait on the queue's condition ``cond`` (one
    pass of the loop starts them all; a bounded number of passes, never wall time)."""
    which = 0 if cond == "not_empty" else 1
    for _ in range(10):
        await asyncio.sleep(0)
        if q.waiting[which] == waiting:
            return
    raise AssertionError(f"{q.waiting[which]} wait, not {waiting}")


def test_ten_thousand_waiting_receivers_arm_nothing_and_wake_in_the_order_they_began() -> None:
    async def main() -> None:
        clock = FakeClock()
        q: AsyncQueue[int] = AsyncQueue(clock=clock)
        idle = clock.callbacks()  # the figure of a queue with no timer armed
        assert idle == 0
        tasks = [asyncio.create_task(q.receive()) for _ in range(N)]
        await settle(q, N)
        assert clock.callbacks() == idle  # 10,000 waiters: no timer, no polling task
        assert all(not t.done() for t in tasks)
        for i in range(N):
            await q.send(i, id=f"m{i}")
        got = [(await t).body for t in tasks]
        assert got == list(range(N))  # the i-th to wait got the i-th message
        s = q.stats()
        assert (s.visible, s.in_flight) == (0, N)
        assert clock.callbacks() == 1  # the one loop timer, at the earliest deadline
        q.close()

    run(main())


def test_ten_thousand_waiting_receivers_woken_by_batches_and_half_of_them_cancelled() -> None:
    # Every other waiter is cancelled (in the order they began, as a task group cancels its
    # tasks), then batches of ten wake the rest, still in their order.
    async def main() -> None:
        clock = FakeClock()
        q: AsyncQueue[int] = AsyncQueue(clock=clock)
        tasks = [asyncio.create_task(q.receive()) for _ in range(N)]
        await settle(q, N)
        for t in tasks[1::2]:
            t.cancel()
        await settle(q, N // 2)
        assert all(t.cancelled() for t in tasks[1::2])
        for b in range(0, N // 2, 10):
            await q.send_batch([Entry(i, id=f"m{i}") for i in range(b, b + 10)])
        got = [(await t).body for t in tasks[0::2]]
        assert got == list(range(N // 2))
        assert q.stats().in_flight == N // 2
        assert q.stats().visible == 0
        q.close()

    run(main())


@pytest.mark.parametrize("n", [2_000, pytest.param(N, marks=pytest.mark.slow)])
def test_waiting_senders_get_the_freed_slots_in_the_order_they_began(n: int) -> None:
    # Each freed slot wakes the oldest sender, which takes its step before the next slot is
    # freed: the wakeups interleave with the waits (slow at 10,000 while a wait that ends
    # scans the waiters, see the last test).
    async def main() -> None:
        clock = FakeClock()
        q: AsyncQueue[int] = AsyncQueue(capacity=1, visibility_timeout=None, clock=clock)
        await q.send(-1, id="first")
        senders = [asyncio.create_task(q.send(i, id=f"s{i}")) for i in range(n)]
        await settle(q, n, "not_full")
        assert clock.callbacks() == 0
        order = []
        for _ in range(n):
            m = await q.receive()
            order.append(m.body)
            assert q.delete(m.receipt)  # frees the one slot: the oldest sender takes it
        last = await q.receive()
        order.append(last.body)
        assert order == [-1, *range(n)]
        assert [await s for s in senders] == [f"s{i}" for i in range(n)]
        q.close()

    run(main())


def test_shutdown_wakes_ten_thousand_waiters_at_once() -> None:
    async def main() -> None:
        q: AsyncQueue[int] = AsyncQueue(clock=FakeClock())
        tasks = [asyncio.create_task(q.receive()) for _ in range(N)]
        await settle(q, N)
        q.shutdown()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(r, ShutDown) for r in results)
        assert q.waiting == (0, 0)
        q.close()

    run(main())


# -- the cost of a wakeup and of a withdrawal, counted rather than timed --------------------------


class _CountingFuture(asyncio.Future[Any]):
    """A future that counts how often it is compared (a scan of a FIFO of futures compares
    each one it passes: ``in`` and ``deque.remove``)."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        _CountingFuture.compared += 1
        return self is other

    __hash__ = asyncio.Future.__hash__


class _CountingLoop(DeterministicLoop):
    def create_future(self) -> asyncio.Future[Any]:
        return _CountingFuture(loop=self)


@pytest.mark.parametrize("how", ["woken in order", "cancelled newest first"])
def test_a_wakeup_or_a_withdrawal_does_not_scan_the_other_waiters(how: str) -> None:
    n = 1_000
    loop = _CountingLoop()
    q: AsyncQueue[int] = AsyncQueue(clock=loop.clock)
    with loop.running():
        tasks = [loop.create_task(q.receive()) for _ in range(n)]
    loop.run_until_idle()
    _CountingFuture.compared = 0
    if how == "woken in order":

        async def sends() -> None:
            for i in range(n):
                await q.send(i, id=f"m{i}")
                await asyncio.sleep(0)  # the woken receiver takes its step, the others wait

        loop.run_until_complete(sends())
    else:
        for t in reversed(tasks):
            loop.cancel(t)
    loop.run_until_idle()
    assert all(t.done() for t in tasks)
    compared = _CountingFuture.compared
    with loop.running():
        q.close()
    loop.close()
    assert compared <= 10 * n, f"{compared} comparisons of futures for {n} waiters ({how})"
