"""The same scenarios on ``asyncio.Queue`` and on ``impl.AsyncQueue``: what each promises under
cancellation, timeouts, a task group failing half-way and shutdown (``docs/failure-model.md``,
"asyncio: ..." section; each row of its table names the test here that backs it).

Each scenario runs through a small adapter, :class:`Side`, with the same moves on both queues:
``put`` is ``asyncio.Queue.put`` or ``AsyncQueue.send``, ``get`` is ``asyncio.Queue.get`` or
``AsyncQueue.receive`` (the adapter keeps the delivery, so a test can ``ack`` it: ``task_done``
or ``delete`` with its receipt). Where the two promise the same, one assertion covers both;
where they differ (an item taken is gone from ``asyncio.Queue``, a message received is only
lent by ``AsyncQueue``; ``shutdown``), the test asserts each one's own behaviour.

Coordination is by the loop only: ``asyncio.sleep(0)`` passes, awaiting tasks, ``Task.cancel``,
``asyncio.timeout(0)``; the ``impl.AsyncQueue`` side runs on a ``FakeClock``, so its visibility
timeouts pass only by ``clock.advance``. The one ``wait_for`` with a positive timeout decides
nothing by how long it takes.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from impl import AsyncQueue, Empty, FakeClock, Full, Message, ShutDown

R = TypeVar("R")

#: The visibility timeout of the impl.AsyncQueue side (fake seconds).
VT = 30.0


def run(coro: Coroutine[Any, Any, R]) -> R:
    return asyncio.run(coro)


async def settle() -> None:
    # Let every ready task run to its next await (a few passes of the loop).
    for _ in range(5):
        await asyncio.sleep(0)


class Side:
    """One queue behind the moves the scenarios make (the base is ``asyncio.Queue``)."""

    name = "asyncio.Queue"
    Empty: type[Exception] = asyncio.QueueEmpty
    Full: type[Exception] = asyncio.QueueFull

    def __init__(self, capacity: int | None = None) -> None:
        self.q: asyncio.Queue[str] = asyncio.Queue(maxsize=capacity or 0)

    async def put(self, item: str) -> None:
        await self.q.put(item)

    async def put_nowait(self, item: str) -> None:
        self.q.put_nowait(item)

    async def get(self) -> str:
        return await self.q.get()

    async def get_nowait(self) -> str:
        return self.q.get_nowait()

    def ack(self, item: str) -> None:
        """The item is processed: ``task_done`` (``delete`` with its receipt on the other)."""
        self.q.task_done()

    def waiting_items(self) -> int:
        """Items a get could take now."""
        return self.q.qsize()

    def close(self) -> None:
        pass


class AioSide(Side):
    """``impl.AsyncQueue`` on a fake clock; each item is sent with itself as its id."""

    name = "impl.AsyncQueue"
    Empty = Empty
    Full = Full

    def __init__(self, capacity: int | None = None) -> None:
        self.clock = FakeClock()
        self.aq: AsyncQueue[str] = AsyncQueue(
            capacity=capacity, visibility_timeout=VT, clock=self.clock
        )
        self.held: dict[str, Message[str]] = {}

    async def put(self, item: str) -> None:
        await self.aq.send(item, id=item)

    async def put_nowait(self, item: str) -> None:
        await self.aq.send(item, id=item, block=False)

    async def get(self) -> str:
        return self._keep(await self.aq.receive())

    async def get_nowait(self) -> str:
        return self._keep(await self.aq.receive(block=False))

    def _keep(self, m: Message[str]) -> str:
        self.held[m.body] = m
        return m.body

    def ack(self, item: str) -> None:
        assert self.aq.delete(self.held.pop(item).receipt) is True

    def waiting_items(self) -> int:
        return self.aq.stats().visible

    def close(self) -> None:
        self.aq.close()


SIDES: list[type[Side]] = [Side, AioSide]
ids = [s.name for s in SIDES]


def both(test: Callable[..., None]) -> Callable[..., None]:
    """Run ``test`` once on each queue."""
    marked: Callable[..., None] = pytest.mark.parametrize("side_type", SIDES, ids=ids)(test)
    return marked


def scenario(side_type: type[Side], body: Callable[[Side], Awaitable[None]], **kw: Any) -> None:
    async def main() -> None:
        side = side_type(**kw)
        try:
            await body(side)
        finally:
            side.close()

    run(main())


# -- cancellation ---------------------------------------------------------------------------------


@both
def test_a_waiting_get_cancelled_before_any_put_takes_nothing(side_type: type[Side]) -> None:
    async def body(s: Side) -> None:
        first, second = asyncio.create_task(s.get()), asyncio.create_task(s.get())
        await settle()
        first.cancel()  # its future is still pending: it is withdrawn
        with pytest.raises(asyncio.CancelledError):
            await first
        await s.put("a")
        assert await second == "a"  # the put went to the waiter still there
        assert s.waiting_items() == 0

    scenario(side_type, body)


@both
def test_a_get_cancelled_right_after_a_put_woke_it_passes_the_wakeup_on(
    side_type: type[Side],
) -> None:
    # The window of the lost wakeup: the put resolved the first getter's future, and the
    # getter is cancelled before it runs. Neither queue hands the item over in the put (a get
    # takes its item in its own step, after its await), so the cancelled getter took nothing,
    # and each passes the wakeup to the next getter (asyncio.Queue: _wakeup_next in get's
    # except clause; AsyncQueue: _pass_on).
    async def body(s: Side) -> None:
        first, second = asyncio.create_task(s.get()), asyncio.create_task(s.get())
        await settle()
        await s.put("a")  # wakes `first`, which has not run yet
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        assert await second == "a"
        assert s.waiting_items() == 0

    scenario(side_type, body)


@both
def test_a_lone_get_cancelled_after_its_wakeup_leaves_the_item_for_the_next_get(
    side_type: type[Side],
) -> None:
    async def body(s: Side) -> None:
        only = asyncio.create_task(s.get())
        await settle()
        await s.put("a")
        only.cancel()
        with pytest.raises(asyncio.CancelledError):
            await only
        assert s.waiting_items() == 1  # not taken, not stranded
        assert await s.get_nowait() == "a"

    scenario(side_type, body)


@both
def test_a_get_nowait_that_runs_before_the_woken_getter_wins_and_the_getter_waits_again(
    side_type: type[Side],
) -> None:
    # A put woke a getter; before it runs, another caller's get_nowait takes the item. The
    # woken getter re-checks (both loop on "still empty?") and waits again, for the next put.
    async def body(s: Side) -> None:
        getter = asyncio.create_task(s.get())
        await settle()
        await s.put("a")
        assert await s.get_nowait() == "a"  # no await suspended in between: getter not run
        await settle()
        assert not getter.done()  # woken, found nothing, waits again: no error, no loss
        await s.put("b")
        assert await getter == "b"

    scenario(side_type, body)


@both
def test_waiting_getters_are_woken_in_the_order_they_began_to_wait(side_type: type[Side]) -> None:
    async def body(s: Side) -> None:
        getters = [asyncio.create_task(s.get()) for _ in range(3)]
        await settle()
        for item in ("a", "b", "c"):
            await s.put(item)
        assert [await g for g in getters] == ["a", "b", "c"]

    scenario(side_type, body)


def test_the_wakeup_scenarios_fail_on_the_two_wrong_designs() -> None:
    # The scenarios above are not vacuous: on the mutants of model_tests/aio/mutants.py (each
    # one wrong design), the same moves strand a message or leave a getter asleep beside one.
    from model_tests.aio.mutants import HandoffAsyncQueue, NoPassOnAsyncQueue

    async def main(kind: type[AsyncQueue[str]], receivers: int) -> tuple[bool, int, int]:
        # `receivers` wait, a send wakes the first, which is cancelled before it runs: did
        # another receiver get "a", and how many messages are visible and in flight then?
        q = kind(visibility_timeout=VT, clock=FakeClock())
        tasks = [asyncio.create_task(q.receive()) for _ in range(receivers)]
        await settle()
        await q.send("a", id="a")
        tasks[0].cancel()
        with pytest.raises(asyncio.CancelledError):
            await tasks[0]
        await settle()
        got = any(t.done() for t in tasks[1:])
        stats = q.stats()
        for t in tasks:
            t.cancel()
        q.close()
        return got, stats.visible, stats.in_flight

    assert run(main(AsyncQueue, 2)) == (True, 0, 1)  # the second receiver holds "a"
    assert run(main(NoPassOnAsyncQueue, 2)) == (False, 1, 0)  # asleep beside a visible "a"
    assert run(main(AsyncQueue, 1)) == (False, 1, 0)  # "a" left visible for the next one
    assert run(main(HandoffAsyncQueue, 1)) == (False, 0, 1)  # "a" in flight, held by nobody


# -- a full queue ---------------------------------------------------------------------------------


@both
def test_a_put_on_a_full_queue_cancelled_while_it_waits_puts_nothing(
    side_type: type[Side],
) -> None:
    async def body(s: Side) -> None:
        await s.put("a")
        putter = asyncio.create_task(s.put("b"))
        await settle()
        assert not putter.done()  # waiting for room
        putter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await putter
        assert s.waiting_items() == 1  # only "a"
        s.ack(await s.get_nowait())
        await s.put_nowait("b")  # "b" was never put (AsyncQueue: its id is not reserved)
        assert await s.get_nowait() == "b"

    scenario(side_type, body, capacity=1)


@both
def test_a_put_cancelled_right_after_room_woke_it_passes_the_wakeup_to_the_next_putter(
    side_type: type[Side],
) -> None:
    # Room is made (asyncio.Queue: a get; AsyncQueue: a delete, since an in-flight message
    # still counts against capacity) and the first waiting putter is woken, then cancelled
    # before it runs: the second putter gets the room.
    async def body(s: Side) -> None:
        await s.put("a")
        first, second = asyncio.create_task(s.put("b")), asyncio.create_task(s.put("c"))
        await settle()
        got = await s.get_nowait()
        s.ack(got)  # the room is made here on both (a get suffices on asyncio.Queue)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        await second
        assert s.waiting_items() == 1
        assert await s.get_nowait() == "c"

    scenario(side_type, body, capacity=1)


@both
def test_nowait_calls_raise_each_queues_own_exceptions(side_type: type[Side]) -> None:
    async def body(s: Side) -> None:
        with pytest.raises(s.Empty):
            await s.get_nowait()
        await s.put_nowait("a")
        with pytest.raises(s.Full):
            await s.put_nowait("b")

    scenario(side_type, body, capacity=1)


# -- timeouts -------------------------------------------------------------------------------------


@both
def test_asyncio_timeout_around_a_waiting_get_takes_nothing(side_type: type[Side]) -> None:
    async def body(s: Side) -> None:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0):  # cancels the get at its first await
                await s.get()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(s.get(), timeout=0.01)
        await s.put("a")
        assert await s.get_nowait() == "a"
        if isinstance(s, AioSide):
            assert s.held["a"].attempt == 1  # the timed-out receives delivered nothing

    scenario(side_type, body)


def test_only_async_queue_takes_a_timeout_and_it_runs_on_the_queues_clock() -> None:
    # asyncio.Queue.get has no timeout (wrap it in asyncio.timeout or wait_for); AsyncQueue's
    # receive(timeout=) is the threaded queue's: impl.Empty once the queue's clock passes it.
    assert "timeout" not in inspect.signature(asyncio.Queue.get).parameters
    assert "timeout" in inspect.signature(AsyncQueue.receive).parameters

    async def main() -> None:
        s = AioSide()
        waiter = asyncio.create_task(s.aq.receive(timeout=5.0))
        await settle()
        s.clock.advance(5.0)
        with pytest.raises(Empty):
            await waiter
        s.close()

    run(main())


# -- a task group failing half-way ----------------------------------------------------------------


@both
def test_a_task_group_failing_half_way_loses_taken_items_only_on_asyncio_queue(
    side_type: type[Side],
) -> None:
    # Two workers each take an item and are still processing it when a sibling task fails;
    # the task group cancels them. asyncio.Queue's get removed the items: they are gone (and
    # unfinished for join()). AsyncQueue's receive lent them: they are in flight, and come back
    # when the visibility timeout passes, attempt 2.
    async def body(s: Side) -> None:
        for item in ("a", "b", "c"):
            await s.put(item)
        taken: list[str] = []
        never = asyncio.Event()

        async def worker() -> None:
            taken.append(await s.get())
            await never.wait()  # the processing, cancelled half-way

        async def failing() -> None:
            await settle()
            raise ValueError("a sibling failed")

        with pytest.raises(ExceptionGroup) as failed:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(worker())
                tg.create_task(worker())
                tg.create_task(failing())
        assert failed.group_contains(ValueError)
        assert sorted(taken) == ["a", "b"]
        assert s.waiting_items() == 1  # only "c" can be taken now, on both
        if isinstance(s, AioSide):
            assert s.aq.stats().in_flight == 2
            s.clock.advance(VT)  # the loop timer releases both deliveries
            again = [await s.get_nowait() for _ in range(3)]
            assert sorted(again) == ["a", "b", "c"]
            assert sorted(s.held[x].attempt for x in again) == [1, 2, 2]
        else:
            assert await s.get_nowait() == "c"
            with pytest.raises(asyncio.QueueEmpty):
                await s.get_nowait()  # "a" and "b" are gone with the cancelled workers
            s.ack("c")
            joined = asyncio.create_task(s.q.join())
            await settle()
            assert not joined.done()  # "a" and "b" were never task_done: join() waits on
            joined.cancel()

    scenario(side_type, body)


# -- shutdown -------------------------------------------------------------------------------------


def test_async_queue_shutdown_drains_then_wakes_every_waiter_with_shutdown() -> None:
    async def main() -> None:
        s = AioSide()
        await s.put("a")
        s.aq.shutdown()
        with pytest.raises(ShutDown):
            await s.put("b")  # sends are refused at once
        assert await s.get() == "a"  # what is visible is still delivered
        with pytest.raises(ShutDown):
            await s.get()  # then every receive raises, waiting or not
        waiting = AioSide()
        getter = asyncio.create_task(waiting.get())
        await settle()
        waiting.aq.shutdown()
        with pytest.raises(ShutDown):
            await getter
        s.close()
        waiting.close()

    run(main())


@pytest.mark.skipif(hasattr(asyncio.Queue, "shutdown"), reason="asyncio.Queue has shutdown()")
def test_asyncio_queue_before_3_13_has_no_shutdown_a_waiting_get_ends_only_by_cancel() -> None:
    async def main() -> None:
        s = Side()
        getter = asyncio.create_task(s.get())
        await settle()
        assert not hasattr(s.q, "shutdown")
        assert not getter.done()  # nothing but a put or a cancel ends it
        getter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await getter

    run(main())


@pytest.mark.skipif(not hasattr(asyncio.Queue, "shutdown"), reason="asyncio.Queue.shutdown: 3.13")
def test_asyncio_queue_shutdown_from_3_13_drains_then_raises_queue_shutdown() -> None:
    async def main() -> None:
        s = Side()
        await s.put("a")
        shut_down: type[Exception] = asyncio.QueueShutDown  # type: ignore[attr-defined,unused-ignore]
        s.q.shutdown()  # type: ignore[attr-defined,unused-ignore]
        with pytest.raises(shut_down):
            await s.put("b")
        assert await s.get() == "a"
        with pytest.raises(shut_down):
            await s.get()
        waiting = Side()
        getter = asyncio.create_task(waiting.get())
        await settle()
        waiting.q.shutdown()  # type: ignore[attr-defined,unused-ignore]
        with pytest.raises(shut_down):
            await getter

    run(main())


# -- the page these tests back --------------------------------------------------------------------


def test_every_row_of_the_failure_model_table_names_tests_of_this_file_and_each_is_named() -> None:
    page = Path(__file__).resolve().parents[1] / "docs" / "failure-model.md"
    section = page.read_text().partition("## asyncio: `asyncio.Queue` and `impl.AsyncQueue`")[2]
    table = [ln for ln in section.split("\n\n")[2].splitlines() if ln.startswith("| ")][1:]
    assert len(table) >= 10
    here = {name for name in globals() if name.startswith("test_")}
    named: set[str] = set()
    for row in table:
        tests = set(re.findall(r"`(test_\w+)`", row.rsplit(" | ", 1)[1]))
        assert tests and tests <= here, row
        named |= tests
    scenarios = here - {
        "test_the_wakeup_scenarios_fail_on_the_two_wrong_designs",  # named in the prose
        "test_every_row_of_the_failure_model_table_names_tests_of_this_file_and_each_is_named",
    }
    assert scenarios <= named, sorted(scenarios - named)
