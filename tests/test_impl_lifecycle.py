"""``impl.Queue``: shutdown, close and the context manager.

After ``shutdown()`` sends fail, receives drain what is visible and then fail, blocked callers
wake at once, and receipt operations and expiry keep working so no held work is lost.
``close()`` adds stopping the sweeper; no thread outlives a closed queue (the autouse fixture in
``conftest.py`` checks that after every test).
"""

from __future__ import annotations

import functools
import threading

import pytest

import impl
from impl import FakeClock, Queue, ShutDown
from model_tests.support import Spawn


def sweepers() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.endswith("-sweeper")]


def test_shutdown_is_a_subclass_of_the_stdlib_one_where_there_is_one() -> None:
    import queue

    base = getattr(queue, "ShutDown", Exception)
    assert issubclass(ShutDown, base)


def test_after_shutdown_sends_fail_and_receives_drain_then_fail() -> None:
    clock = FakeClock()
    with Queue[str](visibility_timeout=None, clock=clock) as q:
        q.send("A", id="a")
        q.send("B", id="b")
        q.shutdown()
        before = q.snapshot()
        with pytest.raises(ShutDown):
            q.send("C")
        with pytest.raises(ShutDown):
            q.send("C", block=False)
        with pytest.raises(ShutDown):
            q.send("C", id="c")
        assert q.snapshot() == before
        assert [q.receive().id, q.receive(block=False).id] == ["a", "b"]
        with pytest.raises(ShutDown):
            q.receive()  # would block forever without the shutdown
        with pytest.raises(ShutDown):
            q.receive(block=False)


def test_a_duplicate_or_malformed_id_is_still_a_value_error_after_shutdown() -> None:
    with Queue[str](clock=FakeClock()) as q:
        q.send("A", id="a")
        q.shutdown()
        with pytest.raises(impl.DuplicateIdError):
            q.send("A", id="a")
        with pytest.raises(ValueError, match="id"):
            q.send("A", id="")


def test_receipt_operations_keep_working_after_shutdown() -> None:
    clock = FakeClock()
    with Queue[str](visibility_timeout=10, clock=clock) as q:
        for i in "abcd":
            q.send(i.upper(), id=i)
        a, b, c = q.receive(), q.receive(), q.receive()
        q.shutdown()
        assert q.delete(a.receipt)
        assert q.change_visibility(b.receipt, 20)
        assert q.retry(c.receipt)
        assert q.cancel("d")
        s = q.snapshot()
        assert (s.done, s.cancelled) == (frozenset("a"), frozenset("d"))
        assert [m.id for m in s.visible] == ["c"] and s.in_flight[0].deadline == 20.0
        assert q.receive().id == "c"  # what retry made visible can still be received


def test_expiry_continues_after_shutdown_so_held_work_is_redelivered(spawn: Spawn) -> None:
    clock = FakeClock()
    with Queue[str](visibility_timeout=5, clock=clock) as q:
        q.send("A", id="a")
        m = q.receive()
        q.shutdown()
        assert clock.wait_for_waiters(1)  # the sweeper still waits for the deadline
        clock.advance(5)
        # No sweep() here: the sweeper thread keeps running after shutdown (until close).
        # Both outcomes are allowed, but "a" is never lost: once the sweeper has run it is
        # visible and a receive gets it; if the sweep is explicit, the same holds.
        q.sweep()
        again = q.receive()
        assert (again.id, again.attempt) == ("a", 2)
        assert q.delete(m.receipt) is False


def test_shutdown_wakes_a_blocked_receiver_at_once(spawn: Spawn) -> None:
    clock = FakeClock()
    with Queue[str](clock=clock) as q:
        call = spawn(q.receive)  # no timeout: only shutdown can end this
        assert clock.wait_for_waiters(1)
        q.shutdown()
        with pytest.raises(ShutDown):
            call.result()


def test_shutdown_wakes_a_blocked_sender_at_once(spawn: Spawn) -> None:
    clock = FakeClock()
    with Queue[str](capacity=1, clock=clock) as q:
        q.send("A", id="a")
        call = spawn(lambda: q.send("B", id="b"))
        assert clock.wait_for_waiters(1)
        q.shutdown()
        with pytest.raises(ShutDown):
            call.result()
        assert [m.id for m in q.snapshot().visible] == ["a"]  # "b" was not accepted


def test_shutdown_wakes_every_blocked_caller_with_timeouts_too(spawn: Spawn) -> None:
    clock = FakeClock()
    with Queue[str](capacity=1, clock=clock) as full, Queue[str](clock=clock) as empty:
        full.send("A", id="a")

        def send(n: int) -> str:
            return full.send("X", id=f"x{n}", timeout=100)

        calls = [spawn(functools.partial(send, n)) for n in range(3)]
        calls += [spawn(lambda: empty.receive(timeout=100).id) for _ in range(3)]
        assert clock.wait_for_waiters(6)
        full.shutdown()
        empty.shutdown()
        for call in calls:
            with pytest.raises(ShutDown):
                call.result()


def test_close_is_shutdown_plus_joining_the_sweeper_and_is_idempotent() -> None:
    clock = FakeClock()
    q: Queue[str] = Queue(visibility_timeout=5, clock=clock)
    q.send("A", id="a")
    q.receive()
    assert len(sweepers()) == 1
    q.close()
    assert sweepers() == []
    with pytest.raises(ShutDown):
        q.send("B", id="b")
    q.close()
    q.shutdown()


def test_the_context_manager_closes_on_exit_even_after_an_error() -> None:
    clock = FakeClock()
    with pytest.raises(RuntimeError), Queue[str](visibility_timeout=5, clock=clock) as q:
        q.send("A", id="a")
        q.receive()
        assert len(sweepers()) == 1
        raise RuntimeError("boom")
    assert sweepers() == []
    with pytest.raises(ShutDown):
        q.send("B")
