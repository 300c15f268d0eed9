"""The deterministic event loop of the asyncio explorer (``model_tests/aio/loop.py``).

- the caller picks which ready callback runs: FIFO is the real loop's order, and another pick
  runs another task's step first;
- ``time()`` is the fake clock's: ``asyncio.timeout`` and ``asyncio.sleep`` fire only when the
  clock is advanced, never on wall time;
- a cancel where a task waits is delivered at its ``await``, also after what it waited for
  completed (the window just after a wakeup);
- an exception that escapes a callback is kept, not logged; ``run_until_complete`` refuses to
  hang on an idle loop; bad arguments are refused naming the argument.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from impl import FakeClock
from model_tests.aio.loop import DeterministicLoop, Idle, describe, started, task_of, where


@pytest.fixture
def loop() -> Iterator[DeterministicLoop]:
    lp = DeterministicLoop(FakeClock())
    yield lp
    lp.close()


def test_aio_loop_fifo_runs_in_scheduling_order_and_a_chooser_can_reorder(
    loop: DeterministicLoop,
) -> None:
    def orders(choose_last: bool) -> list[str]:
        seen: list[str] = []

        async def note(name: str) -> None:
            seen.append(name)
            await asyncio.sleep(0)
            seen.append(name + "'")

        with loop.running():
            for name in "ABC":
                loop.create_task(note(name), name=name)
        loop.run_until_idle((lambda r: len(r) - 1) if choose_last else (lambda r: 0))
        return seen

    assert orders(False) == ["A", "B", "C", "A'", "B'", "C'"]
    # Always the newest ready callback: C's first step, then C again (its sleep(0) put it
    # last), and so on: an order the real loop never takes, but a real interleaving.
    assert orders(True) == ["C", "C'", "B", "B'", "A", "A'"]


def test_aio_loop_ready_names_the_task_of_each_step(loop: DeterministicLoop) -> None:
    async def idle() -> None:
        await asyncio.sleep(0)

    with loop.running():
        t = loop.create_task(idle(), name="T")
    [h] = loop.ready()
    assert task_of(h) is t and describe(h) == "step T"
    assert not started(t) and where(t) == ""
    loop.run_ready(0)
    assert started(t)
    loop.run_until_idle()
    assert t.done()


def test_aio_loop_time_is_the_fake_clock_and_timers_wait_for_advance(
    loop: DeterministicLoop,
) -> None:
    fired: list[float] = []

    async def bounded() -> None:
        try:
            async with asyncio.timeout(2.0):
                await loop.create_future()  # never completed
        except TimeoutError:
            fired.append(loop.time())

    with loop.running():
        t = loop.create_task(bounded(), name="T")
    loop.run_until_idle()
    assert loop.idle() and not t.done()
    assert [h.when() for h in loop.timers()] == [2.0]
    loop.advance(1.0)
    assert loop.idle() and fired == []  # not due yet: nothing became ready
    loop.advance(1.0)
    assert [describe(h) for h in loop.ready()] == ["timeout of T"]
    loop.run_until_idle()
    assert fired == [2.0] and t.done() and loop.clock.now() == 2.0


def test_aio_loop_a_cancel_after_the_wakeup_still_lands_at_the_await(
    loop: DeterministicLoop,
) -> None:
    fut: asyncio.Future[str] = loop.create_future()
    outcome: list[str] = []

    async def waiter() -> None:
        try:
            outcome.append(await fut)
        except asyncio.CancelledError:
            outcome.append("cancelled, result was " + fut.result())
            raise

    with loop.running():
        t = loop.create_task(waiter(), name="W")
    loop.run_until_idle()
    fut.set_result("x")  # the wakeup is now ready ...
    assert [describe(h) for h in loop.ready()] == ["step W"]
    assert loop.cancel(t)  # ... and the cancel comes first
    loop.run_until_idle()
    assert outcome == ["cancelled, result was x"] and t.cancelled()


def test_aio_loop_keeps_errors_of_callbacks_and_refuses_to_hang(loop: DeterministicLoop) -> None:
    def boom() -> None:
        raise RuntimeError("boom")

    loop.call_soon(boom)
    loop.run_until_idle()
    assert [type(e.get("exception")) for e in loop.errors] == [RuntimeError]

    async def forever() -> None:
        await loop.create_future()

    with pytest.raises(Idle, match="idle"):
        loop.run_until_complete(forever())
    with pytest.raises(RuntimeError, match="does not run by itself"):
        loop.run_forever()
    loop.run_until_idle()
    for t in asyncio.all_tasks(loop):
        loop.cancel(t)
    loop.run_until_idle()


def test_aio_loop_run_until_complete_returns_the_result_and_get_running_loop_works(
    loop: DeterministicLoop,
) -> None:
    async def which() -> bool:
        await asyncio.sleep(0)
        return asyncio.get_running_loop() is loop

    assert loop.run_until_complete(which()) is True
    assert loop.steps == 2


def test_aio_loop_refuses_bad_arguments(loop: DeterministicLoop) -> None:
    with pytest.raises(TypeError, match=r"clock must be an impl\.FakeClock"):
        DeterministicLoop(clock=object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="position must be in"):
        loop.run_ready(0)
    with pytest.raises(ValueError, match="task must be a task of this loop"):
        loop.cancel(object())  # type: ignore[arg-type]
