"""``impl.Queue`` across ``os.fork()`` (issue 13, point 5).

The fork handlers of ``impl.queue`` take every queue's mutex before a fork (so no queue is
copied mid-transition) and give the child fresh locks and conditions, no waiters and a sweeper
of its own. So in a child a queue made by the parent keeps its messages and works: send,
receive, delete, a blocked receive woken by a send from another thread of the child, expiry of
what was in flight at the fork, close; and the parent's queue is unaffected. A fork while
another thread of the parent holds the mutex, or is in the middle of a sweep, waits for it and
does not deadlock the child.

Each check runs in a child process that reports through its exit status (0: every check
passed; 1: one failed, with its traceback on stderr); the parent waits for the child with a
bound and kills it if that runs out, so no child outlives its test. Forking a process with
threads is what this file is about: Python 3.12+ warns about it, and the warning is filtered.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable

import pytest

from impl import Queue, TraceStep
from model_tests.support import BOUND, Call, ProbeClock, RealProbeClock, Spawn

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
    pytest.mark.filterwarnings(r"ignore:.*fork\(\) may lead to deadlocks:DeprecationWarning"),
]

#: Real seconds the parent waits for a child, whose own checks wait up to BOUND each.
CHILD_BOUND = 3 * BOUND

# Set by this module's before-fork handler when a test arms it: "a fork has begun". Registered
# after impl.queue's handlers, so it runs before them (before-fork handlers run in reverse
# order of registration): it fires before impl.queue's handler waits for the queues' mutexes.
_fork_begun: threading.Event | None = None


def _note_fork() -> None:
    if _fork_begun is not None:
        _fork_begun.set()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_note_fork)


def fork(check: Callable[[], None]) -> int:
    """Fork; the child runs ``check`` and exits with 0 if it returned, 1 if it raised (its
    traceback on stderr), never returning into the test. Returns the child's pid."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            check()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    return pid


def exit_code(pid: int) -> int:
    """Wait (bounded) for the child ``pid`` and return its exit code; kill it if it hangs."""
    waiter = Call(lambda: os.waitpid(pid, 0)[1], name=f"waitpid-{pid}")
    try:
        status = waiter.result(CHILD_BOUND)
    except AssertionError:
        os.kill(pid, signal.SIGKILL)
        waiter.result(BOUND)
        raise AssertionError(f"child {pid} still ran after {CHILD_BOUND}s: killed") from None
    return os.waitstatus_to_exitcode(status)


def run_in_child(check: Callable[[], None]) -> None:
    code = exit_code(fork(check))
    assert code == 0, f"the child's checks failed (exit code {code}; traceback in stderr)"


def sweepers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.endswith("-sweeper")]


# -- the child's queue works; the parent's is unaffected --------------------------------------


def test_the_child_gets_a_working_queue_with_what_the_parent_had(spawn: Spawn) -> None:
    clock, idle_clock = RealProbeClock(), RealProbeClock()
    with (
        Queue[str](visibility_timeout=3600, clock=clock) as q,
        Queue[str](clock=idle_clock) as idle,
    ):
        for i in "abc":
            q.send(i.upper(), id=i)
        a = q.receive()  # in flight an hour: the parent's sweeper waits for it
        assert any(t.name.endswith("-sweeper") for t in threading.enumerate())
        # A receiver of the parent blocked at the fork: the child must not count it.
        parent_receiver = spawn(lambda: idle.receive())
        assert idle_clock.wait_for_sleepers(idle.not_empty, 1)
        before = q.snapshot()

        def child() -> None:
            assert q.snapshot() == before
            b, c = q.receive(), q.receive()
            assert [(m.id, m.attempt) for m in (b, c)] == [("b", 1), ("c", 1)]
            assert q.delete(b.receipt)
            assert q.delete(a.receipt)  # a receipt the parent got is live in the child
            assert q.cancel("c")
            # A receive blocked in one thread of the child, woken by a send from another.
            receiver = Call(lambda: q.receive(), name="child-receiver")
            assert clock.wait_for_sleepers(q.not_empty, 1)
            q.send("D", id="d")
            got = receiver.result(BOUND)
            assert (got.id, got.body, got.attempt) == ("d", "D", 1)
            assert q.delete(got.receipt)
            assert (q.stats().done, q.stats().cancelled) == (3, 1)
            # The parent's blocked receiver is not here: a send and a receive just work.
            idle.send("X", id="x")
            assert idle.receive(block=False).id == "x"
            q.close()
            idle.close()
            assert sweepers() == []

        run_in_child(child)
        # The parent's queues are as they were, their locks free, their threads working.
        assert q.snapshot() == before
        assert q.health().sweeper_running
        assert q.delete(a.receipt)
        idle.send("Y", id="y")
        assert parent_receiver.result(BOUND).id == "y"


def test_what_was_in_flight_at_the_fork_expires_in_the_child() -> None:
    with Queue[str]() as q:
        q.send("A", id="a")
        # Holding the mutex (an RLock) keeps the parent's sweeper from expiring "a" before the
        # fork, so the expiry the child sees is its own sweeper's.
        with q.mutex:
            q.receive(visibility_timeout=0.05)
            # What the child starts from: "a" in flight, taken under the mutex the fork holds.
            (held,) = q.snapshot().in_flight
            assert (held.id, held.attempt) == ("a", 1) and held.deadline is not None

            def child() -> None:
                # The child's sweeper starts in the fork handler, before this thread runs, and
                # the deadline is real time: on a loaded machine the sweeper may have expired
                # "a" already. Either way "a" has had its one delivery and nothing else.
                snap = q.snapshot()
                assert [(s.id, s.attempt) for s in (*snap.in_flight, *snap.visible)] == [("a", 1)]
                assert not (snap.done or snap.cancelled or snap.dead or snap.delayed)
                # No arm, sweep() or health() here: the child's sweeper must come by itself.
                again = q.receive(timeout=BOUND)  # the real clock passes the deadline
                assert (again.id, again.attempt) == ("a", 2)
                assert q.delete(again.receipt)
                q.close()

            pid = fork(child)
        assert exit_code(pid) == 0, "the child's checks failed (traceback in stderr)"
        # And in the parent, its own sweeper redelivers it as well.
        again = q.receive(timeout=BOUND)
        assert (again.id, again.attempt) == ("a", 2)


def test_a_deadline_armed_in_the_child_expires_there() -> None:
    with Queue[str](visibility_timeout=None) as q:
        q.send("A", id="a")
        m = q.receive()  # never expires: no sweeper anywhere yet

        def child() -> None:
            assert q.change_visibility(m.receipt, 0.05)  # the first arm starts a sweeper
            again = q.receive(timeout=BOUND)
            assert (again.id, again.attempt) == ("a", 2)
            q.close()

        run_in_child(child)
        assert sweepers() == []
        assert q.snapshot().in_flight[0].deadline is None


# -- a fork during another thread's critical section ------------------------------------------


def _fork_while_held(spawn: Spawn, release: threading.Event, check: Callable[[], None]) -> int:
    """Fork from another thread while the caller's critical section holds the mutex; release it
    once the fork has begun (so the fork handler must wait for it); the child's exit code."""
    global _fork_begun
    _fork_begun = threading.Event()
    try:
        forker = spawn(lambda: fork(check))
        assert _fork_begun.wait(BOUND), "the fork did not begin"
    finally:
        release.set()
        _fork_begun = None
    return exit_code(forker.result(BOUND))


def test_a_fork_while_another_thread_holds_the_mutex_does_not_deadlock_the_child(
    spawn: Spawn,
) -> None:
    with Queue[str](visibility_timeout=3600) as q:
        q.send("A", id="a")
        q.send("B", id="b")
        a = q.receive()
        holding, release = threading.Event(), threading.Event()

        def hold() -> None:
            with q.mutex:
                holding.set()
                assert release.wait(BOUND)

        holder = spawn(hold)
        assert holding.wait(BOUND)

        def child() -> None:
            b = q.receive(block=False)
            assert (b.id, b.attempt) == ("b", 1)
            assert q.delete(b.receipt)
            assert q.change_visibility(a.receipt, 0)
            assert q.receive(block=False).attempt == 2
            q.send("C", id="c")
            q.close()

        assert _fork_while_held(spawn, release, child) == 0, "child failed (stderr)"
        holder.result(BOUND)
        assert q.receive(block=False).id == "b"  # the parent's queue was untouched


def test_a_fork_in_the_middle_of_a_sweep_waits_for_it_to_finish(spawn: Spawn) -> None:
    clock = ProbeClock()
    with Queue[str](clock=clock) as q:
        q.send("A", id="a")
        q.receive(visibility_timeout=1)
        in_sweep, release = threading.Event(), threading.Event()

        def sink(step: TraceStep) -> None:
            if step[0] == "expire":
                in_sweep.set()
                assert release.wait(BOUND)

        q.record_trace(sink)
        clock.advance(1)  # the sweeper wakes and stops inside its sweep, holding the mutex
        assert in_sweep.wait(BOUND)

        def child() -> None:
            # The fork came after the sweep committed, never in its middle.
            snap = q.snapshot()
            assert [(s.id, s.attempt) for s in snap.visible] == [("a", 1)]
            assert snap.in_flight == ()
            q.record_trace(None)
            again = q.receive(block=False)
            assert (again.id, again.attempt) == ("a", 2)
            assert q.delete(again.receipt)
            q.close()

        assert _fork_while_held(spawn, release, child) == 0, "child failed (stderr)"
        q.record_trace(None)
        assert [s.id for s in q.snapshot().visible] == ["a"]


def test_a_system_of_queues_works_in_the_child_while_the_parent_kept_sending() -> None:
    """The system's id registry lock is taken only inside a queue's lock, and the fork handlers
    hold every queue's lock, so no thread holds the registry's at the fork: the child's system
    accepts sends and still refuses an id any of its queues took."""
    clock = RealProbeClock()
    with (
        Queue[str](visibility_timeout=None, clock=clock, name="dlq") as dlq,
        Queue[str](visibility_timeout=None, max_receives=1, dead_letter=dlq, name="src") as src,
    ):
        stop = threading.Event()

        def keep_sending() -> None:
            while not stop.is_set():
                src.cancel(src.send("B"))

        sender = threading.Thread(target=keep_sending, name="system-sender")
        sender.start()
        try:
            src.send("A", id="a")
            for _ in range(5):

                def child() -> None:
                    stop.set()  # the parent's sender is not here; the flag is for symmetry
                    generated = {src.send("C"), dlq.send("D")}
                    assert len(generated) == 2 and "a" not in generated
                    with pytest.raises(ValueError, match="already accepted"):
                        dlq.send("again", id="a")
                    m = src.receive(block=False)
                    while m.id != "a":  # the parent's cancelled sends are gone; skip C
                        m = src.receive(block=False)
                    assert src.retry(m.receipt)  # max_receives=1: dead-lettered into dlq
                    assert dlq.source_of("a") is src

                run_in_child(child)
        finally:
            stop.set()
            sender.join(BOUND)
        assert not sender.is_alive()
        assert dlq.source_of("a") is None  # the child's move stayed in the child
