"""The endpoint's clock (sqs_endpoint/clock.py): frozen, advanced, running, and its callbacks.

The callback tests run frozen (``mode="fake"``) and move the time with ``advance``: the order
of due times, ties in registration order, a cancelled callback, one registered by another, a
failing one that does not stop the rest, the thread they run in. The real-rate half is tested
through the event loop's timer it aims: the loop's ``call_later`` handle is read back (its due
time on the loop's clock) rather than waited for, and one callback due at once is awaited
through an event. ``impl.AsyncQueue`` on this clock is driven through a redelivery on the
frozen clock. Nothing sleeps.
"""

from __future__ import annotations

import asyncio
import math
import threading

import pytest

from impl import AsyncQueue, Empty
from impl.clock import Clock
from sqs_endpoint.clock import ServerClock


def test_it_is_an_impl_clock() -> None:
    assert isinstance(ServerClock(), Clock)


def test_fake_mode_is_frozen_until_advanced() -> None:
    clock = ServerClock("fake")
    assert clock.frozen
    assert clock.now() == 0.0
    assert clock.now() == 0.0
    clock.advance(2.5)
    assert clock.now() == 2.5
    clock.advance(0)
    assert clock.now() == 2.5
    assert clock.state() == {"now": 2.5, "frozen": True, "mode": "fake"}


def test_start_value() -> None:
    assert ServerClock("fake", start=100.0).now() == 100.0


def test_real_mode_runs_and_never_goes_back() -> None:
    clock = ServerClock("real")
    assert not clock.frozen
    readings = [clock.now() for _ in range(1000)]
    assert readings == sorted(readings)
    clock.advance(1000)
    assert clock.now() >= 1000 + readings[-1]


def test_freeze_and_run() -> None:
    clock = ServerClock("real")
    clock.freeze()
    assert clock.frozen
    t = clock.now()
    assert clock.now() == t
    clock.advance(5)
    assert clock.now() == t + 5
    clock.freeze()  # idempotent
    clock.run()
    assert not clock.frozen
    assert clock.now() >= t + 5  # runs on from where it stood, never back
    clock.run()  # idempotent
    assert clock.state()["mode"] == "real"


@pytest.mark.parametrize(
    ("dt", "error"),
    [
        (-1, ValueError),
        (math.nan, ValueError),
        (math.inf, ValueError),
        ("1", TypeError),
        (True, TypeError),
        (None, TypeError),
    ],
)
def test_bad_advance_changes_nothing(dt: object, error: type[Exception]) -> None:
    clock = ServerClock("fake", start=3.0)
    with pytest.raises(error, match="dt"):
        clock.advance(dt)  # type: ignore[arg-type]
    assert clock.now() == 3.0


def test_an_advance_to_a_time_that_is_not_finite_is_refused() -> None:
    clock = ServerClock("fake", start=1e308)
    with pytest.raises(ValueError, match="not finite"):
        clock.advance(1e308)
    assert clock.now() == 1e308


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="mode"):
        ServerClock("slow")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="start"):
        ServerClock(start="0")  # type: ignore[arg-type]
    clock = ServerClock("fake")
    with pytest.raises(TypeError, match="due"):
        clock.call_at("1", lambda: None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="due"):
        clock.call_at(math.nan, lambda: None)
    with pytest.raises(TypeError, match="callback"):
        clock.call_at(1, 5)  # type: ignore[arg-type]
    assert clock.callbacks() == 0


# -- callbacks on the frozen clock ---------------------------------------------------------------


def test_callbacks_run_in_due_order_when_advanced_to() -> None:
    clock = ServerClock("fake")
    ran: list[str] = []
    clock.call_at(3, lambda: ran.append("c"))
    clock.call_at(1, lambda: ran.append("a"))
    clock.call_at(2, lambda: ran.append("b1"))
    clock.call_at(2, lambda: ran.append("b2"))
    assert clock.callbacks() == 4
    clock.advance(1.5)
    assert ran == ["a"]
    clock.advance(1.5)
    assert ran == ["a", "b1", "b2", "c"]
    assert clock.callbacks() == 0


def test_a_due_time_already_reached_runs_at_the_next_advance() -> None:
    clock = ServerClock("fake", start=10)
    ran: list[int] = []
    clock.call_at(5, lambda: ran.append(1))
    assert ran == []
    clock.advance(0)
    assert ran == [1]


def test_cancel() -> None:
    clock = ServerClock("fake")
    ran: list[int] = []
    handle = clock.call_at(1, lambda: ran.append(1))
    handle.cancel()
    handle.cancel()
    assert clock.callbacks() == 0
    clock.advance(5)
    assert ran == []


def test_a_callback_may_register_another_and_read_the_time() -> None:
    clock = ServerClock("fake")
    seen: list[float] = []

    def first() -> None:
        seen.append(clock.now())
        clock.call_at(2, lambda: seen.append(clock.now()))
        clock.call_at(9, lambda: seen.append(-1))

    clock.call_at(1, first)
    clock.advance(5)
    assert seen == [5.0, 5.0]
    assert clock.callbacks() == 1


def test_a_failing_callback_is_logged_and_the_rest_run(caplog: pytest.LogCaptureFixture) -> None:
    clock = ServerClock("fake")
    ran: list[int] = []

    def boom() -> None:
        raise RuntimeError("boom")

    clock.call_at(1, boom)
    clock.call_at(2, lambda: ran.append(2))
    clock.advance(3)
    assert ran == [2]
    assert "a clock callback failed" in caplog.text


def test_callbacks_run_in_the_advancing_thread() -> None:
    clock = ServerClock("fake")
    threads: list[int] = []
    clock.call_at(1, lambda: threads.append(threading.get_ident()))
    t = threading.Thread(target=clock.advance, args=(1,))
    t.start()
    t.join()
    assert threads == [t.ident]


# -- the event loop's timer ----------------------------------------------------------------------


def _timer_due(clock: ServerClock) -> float | None:
    timer = clock._timer
    return None if timer is None else timer.when()


def test_the_loop_timer_is_aimed_at_the_earliest_callback_while_running() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        clock = ServerClock("real")
        clock.attach(loop)
        assert clock._timer is None  # nothing registered: nothing armed
        start_loop, start = loop.time(), clock.now()
        clock.call_at(start + 100, lambda: None)
        first = _timer_due(clock)
        assert first is not None
        assert first == pytest.approx(start_loop + 100, abs=1.0)
        h = clock.call_at(start + 50, lambda: None)
        second = _timer_due(clock)
        assert second is not None and second == pytest.approx(start_loop + 50, abs=1.0)
        clock.call_at(start + 70, lambda: None)  # later than the earliest: not re-aimed
        assert _timer_due(clock) == second
        # An advance brings the same due time nearer in real time: re-aimed.
        clock.advance(40)
        third = _timer_due(clock)
        assert third is not None and third == pytest.approx(start_loop + 10, abs=1.0)
        # Frozen: nothing fires from the loop; running again: aimed anew.
        clock.freeze()
        assert clock._timer is None
        clock.run()
        assert _timer_due(clock) is not None
        h.cancel()
        clock.detach()
        assert clock._timer is None

    asyncio.run(main())


def test_a_due_callback_fires_from_the_loop_while_running() -> None:
    async def main() -> list[int]:
        clock = ServerClock("real")
        clock.attach(asyncio.get_running_loop())
        fired = asyncio.Event()
        threads: list[int] = []

        def cb() -> None:
            threads.append(threading.get_ident())
            fired.set()

        clock.call_at(clock.now(), cb)  # due now: the timer fires at once
        await asyncio.wait_for(fired.wait(), 10)  # a safety bound only
        clock.detach()
        return threads

    assert asyncio.run(main()) == [threading.get_ident()]


def test_call_at_from_another_thread_aims_the_timer_on_the_loop() -> None:
    async def main() -> None:
        clock = ServerClock("real")
        clock.attach(asyncio.get_running_loop())
        fired = asyncio.Event()
        loop = asyncio.get_running_loop()
        t = threading.Thread(
            target=clock.call_at, args=(clock.now(), lambda: loop.call_soon_threadsafe(fired.set))
        )
        t.start()
        t.join()
        await asyncio.wait_for(fired.wait(), 10)
        clock.detach()

    asyncio.run(main())


def test_attach_to_a_second_loop_is_refused() -> None:
    clock = ServerClock("fake")

    async def attach() -> None:
        clock.attach(asyncio.get_running_loop())

    asyncio.run(attach())
    with pytest.raises(RuntimeError, match="another event loop"):
        asyncio.run(attach())


# -- the threaded wait ----------------------------------------------------------------------------


def test_wait_returns_at_once_for_a_deadline_reached() -> None:
    clock = ServerClock("fake", start=5)
    cond = threading.Condition()
    with cond:
        clock.wait(cond, 5)
        clock.wait(cond, 1)


def test_a_frozen_wait_is_woken_by_an_advance() -> None:
    clock = ServerClock("fake")
    cond = threading.Condition()
    done = threading.Event()

    def waiter() -> None:
        with cond:
            while clock.now() < 10:
                clock.wait(cond, 10)
        done.set()

    t = threading.Thread(target=waiter)
    t.start()
    # Advance until the waiter, registered or not yet, sees the deadline: each advance wakes
    # a registered wait, and a waiter that has not begun finds the time past.
    clock.advance(10)
    t.join(10)
    assert done.is_set()


# -- impl's asyncio queue on this clock -----------------------------------------------------------


def test_an_async_queue_redelivers_when_the_frozen_clock_is_advanced() -> None:
    async def main() -> None:
        clock = ServerClock("fake")
        clock.attach(asyncio.get_running_loop())
        q: AsyncQueue[str] = AsyncQueue(clock=clock, visibility_timeout=30)
        await q.send("m")
        first = await q.receive()
        clock.advance(29)
        with pytest.raises(Empty):
            await q.receive(block=False)
        clock.advance(1)  # the loop timer is the clock's callback: it fires in advance
        second = await q.receive(block=False)
        assert second.body == first.body == "m"
        assert second.attempt == first.attempt + 1
        q.close()
        clock.detach()

    asyncio.run(main())


# -- a durable endpoint's clock: pinned per turn, replayed, listened to ----------------------


def test_a_pinned_clock_reads_one_time_per_turn_of_its_loop() -> None:
    clock = ServerClock("fake", pinned=True)

    async def main() -> tuple[float, float, float, float]:
        clock.attach(asyncio.get_running_loop())
        first = clock.now()
        clock.replay_to(5.0)  # a change of course unpins at once
        second = clock.now()
        clock._base = 7.0  # the time moves without a change of course (as a running clock's)
        same_turn = clock.now()
        await asyncio.sleep(0)  # the next turn of the loop: read afresh
        next_turn = clock.now()
        clock.detach()
        return first, second, same_turn, next_turn

    assert asyncio.run(main()) == (0.0, 5.0, 5.0, 7.0)


def test_an_unpinned_clock_and_another_thread_read_the_time_itself() -> None:
    clock = ServerClock("fake")
    assert clock.now() == 0.0
    clock._base = 3.0
    assert clock.now() == 3.0


def test_replay_to_moves_a_frozen_clock_without_running_its_callbacks() -> None:
    clock = ServerClock("fake")
    fired: list[float] = []
    clock.call_at(1.0, lambda: fired.append(clock.now()))
    clock.replay_to(2.0)
    assert clock.now() == 2.0 and fired == []  # a replay fires only what its journal says
    clock.advance(0)
    assert fired == [2.0]
    with pytest.raises(ValueError, match="before"):
        clock.replay_to(1.0)
    clock.run()
    with pytest.raises(RuntimeError, match="frozen"):
        clock.replay_to(9.0)


def test_listeners_hear_every_change_of_course_after_its_callbacks() -> None:
    clock = ServerClock("fake")
    heard: list[tuple[str, float]] = []
    clock.call_at(1.0, lambda: heard.append(("callback", clock.now())))
    clock.on_change(lambda: heard.append(("listener", clock.now())))
    clock.advance(1.5)
    clock.run()
    clock.freeze()
    assert [h[0] for h in heard] == ["callback", "listener", "listener", "listener"]
    assert heard[1][1] == 1.5
    with pytest.raises(TypeError, match="listener"):
        clock.on_change(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pinned"):
        ServerClock(pinned=1)  # type: ignore[arg-type]
