"""The lockstep machine for the asyncio driver: ``impl.AsyncQueue`` and ``impl.AsyncFifoQueue``
against the spec, as ``impl.Queue`` and ``impl.FifoQueue`` are.

The rules, invariants and whole-state comparison are those of :mod:`model_tests.lockstep`
(:class:`~model_tests.lockstep.QueueMachine`) and of the FIFO machine
(``model_tests/lockstep_fifo.py``), not copies: :class:`AioMachine` only puts each
queue behind :class:`model_tests.targets.Blocking`, a facade that runs every call to completion
on one event loop (:class:`model_tests.targets.LoopRunner`). The machine's calls are
non-blocking (``block=False``), so each one is a single task step, as on the threaded queue.

What changes with the driver:

- Time. The async queue has no sweeper thread; its one loop timer is armed on the injected
  clock (``FakeClock.call_at``), and a callback due runs inside ``advance`` only. The machine's
  clock (:class:`LoopProbeClock`) runs a waking ``advance`` inside the loop, so a timer that
  fires sweeps at once, before the machine's own sweep of the same time (which then finds
  nothing due). A quiet ``tick`` (``advance(dt, wake=False)``) runs no callback at all, so the
  window between a deadline and its sweep opens as with a descheduled sweeper thread, and
  there is no thread to settle first (``_settle_sweepers`` does nothing).
- Two rules of its own, what only a driver with waiters has:
  ``receive_woken_by_send``: one or two receivers wait (a task each, ``block=True``, no
  timeout) on a queue with nothing deliverable; then the machine's own ``send`` rule runs; if
  the spec then delivers, the first waiter must have received exactly that delivery in its
  own step, the others still wait. With ``cancel_woken`` the first waiter is cancelled in the
  same task step as the send that woke it (before it ran): it must end cancelled, holding
  nothing, and pass its wakeup on, so the second waiter receives the message (with one
  waiter the message stays visible). ``receive_cancelled``: a waiting receive cancelled:
  delivers nothing, changes nothing. Every waiter still pending at the end of a rule is
  cancelled, and the queue must be unchanged by that: no rule leaves a task waiting.

``model_tests/tests/test_lockstep_aio.py`` runs both machines under the ``lockstep`` profile.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from hypothesis import strategies as st
from hypothesis.stateful import initialize, multiple, precondition, rule

import impl
import spec
from model_tests.lockstep import IDS, PAIRS, LockstepReceipt, QueueMachine, bodies, event
from model_tests.lockstep_fifo import DEDUPS, GROUPS, FifoMachine
from model_tests.support import ProbeClock
from model_tests.targets import Blocking, LoopRunner, async_class, blocking

#: Hypothesis's mark of an ``@initialize`` rule: the parent's strategies are read from it, so
#: the wrapper below draws its configuration exactly as the parent's rule does.
_INITIALIZE: Final = "hypothesis_stateful_initialize_rule"


class LoopProbeClock(ProbeClock):
    """The machine's ``ProbeClock``, whose waking ``advance`` runs inside the event loop.

    The loop timer's callback, run by ``FakeClock.advance`` in the advancing thread, sweeps at
    once when it runs on the loop (and only schedules the sweep otherwise, which would land at
    a moment of the loop's choosing: after a later quiet ``tick``, say). A quiet advance runs no
    callback, so it needs no loop.
    """

    def __init__(self, runner: LoopRunner) -> None:
        super().__init__()
        self.runner = runner

    def advance(self, dt: float, *, wake: bool = True) -> None:
        if not wake:
            super().advance(dt, wake=False)
            return
        self.runner.run(ProbeClock.advance, self, dt)


def to_async(q: impl.BaseQueue[str], clock: impl.FakeClock, runner: LoopRunner) -> Any:
    """An async queue of the same kind and configuration as the threaded ``q``, made on
    ``runner``'s loop (``q`` itself is closed: it was only the parent rule's way to say which)."""
    common: dict[str, Any] = {
        "capacity": q.capacity,
        "visibility_timeout": q.visibility_timeout,
        "max_receives": q.max_receives,
        "delay": q.delay,
        "clock": clock,
    }
    q.close()
    if isinstance(q, impl.FifoQueue):
        return runner.run(async_class(fifo=True), dedup_interval=q.dedup_interval, **common)
    return runner.run(async_class(fifo=False), **common)


def _deliverable(s: spec.State, now: spec.Time) -> bool:
    """Whether a receive of ``s`` at ``now`` would deliver (a FIFO group lock counts)."""
    return spec.receive(s, now=now, vt=None)[1] is not None


class _AsLeft:
    """A queue's recorded snapshot, standing in for the queue while it is observed."""

    def __init__(self, snap: impl.Snapshot[str]) -> None:
        self._snap = snap

    def snapshot(self) -> impl.Snapshot[str]:
        return self._snap


class AioMachine(QueueMachine):
    """The lockstep machine on ``impl.AsyncQueue``s (each behind a :class:`Blocking` facade)."""

    def __init__(self) -> None:
        super().__init__()
        self.runner = LoopRunner()
        self.clock = LoopProbeClock(self.runner)

    @initialize(**getattr(QueueMachine.create_queues, _INITIALIZE).arguments)
    def create_queues(self, **config: Any) -> None:
        super().create_queues(**config)
        self._go_async()

    def _go_async(self) -> None:
        threaded, self.queues = self.queues, []
        for q in threaded:
            self.queues.append(blocking(to_async(q, self.clock, self.runner), self.runner))

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            self.runner.close()

    def _settle_sweepers(self) -> None:
        """Nothing to settle: no sweeper thread, and a loop timer runs only in ``advance``."""

    def _aq(self, pair: int) -> Any:
        """The async queue of ``pair`` (its facade's queue)."""
        q: object = self.queues[pair]
        assert isinstance(q, Blocking)
        return q.queue

    def _send_arguments(self, pair: int, data: st.DataObject) -> dict[str, object]:
        """Arguments of this machine's ``send`` rule for the send that wakes the waiters (no
        delay: a delayed message would wake no one)."""
        return {
            "pair": pair,
            "id": data.draw(st.sampled_from((*IDS, None)), label="id"),
            "body": data.draw(bodies, label="body"),
            "delay": 0.0,
        }

    # -- the rules only a driver with waiters has ---------------------------------------------

    def _waiting_pair(self, data: st.DataObject) -> int:
        quiet = [p for p in PAIRS if not _deliverable(self.states[p], self.now)]
        return data.draw(st.sampled_from(quiet), label="pair")

    def _start_waiters(self, pair: int, n: int) -> list[asyncio.Task[Any]]:
        q = self._aq(pair)
        tasks = [self.runner.start(q.receive()) for _ in range(n)]
        for k, t in enumerate(tasks):
            assert not t.done(), f"receiver {k} did not wait on a queue with nothing to deliver"
        return tasks

    def _cancel_waiters(self, pair: int, tasks: list[asyncio.Task[Any]]) -> None:
        """Cancel every task still waiting; the queue must be unchanged by it."""
        before = self.queues[pair].snapshot()
        pending = [t for t in tasks if not t.done()]
        for t in pending:
            t.cancel()
        self.runner.settle()
        for t in pending:
            assert t.cancelled(), f"a cancelled waiting receive ended with {t.result()!r}"
        assert self.queues[pair].snapshot() == before, "cancelling a waiting receive changed it"

    def _observe_as_left(self, left: list[impl.Snapshot[str]]) -> None:
        """Take the queues as the send left them (``left``, before a woken waiter ran) as the
        last step's observation, so that the step invariants compare the receive with that
        state, not with the one before the send: the receive is a step of its own."""
        queues = self.queues
        self.queues = [_AsLeft(snap) for snap in left]  # type: ignore[misc]
        try:
            self._impl_states(0)
        finally:
            self.queues = queues
        self._stepped()

    @precondition(lambda self: any(not _deliverable(s, self.now) for s in self.states))
    @rule(
        target=QueueMachine.receipts,
        data=st.data(),
        waiters=st.sampled_from((1, 2)),
        cancel_woken=st.booleans(),
    )
    def receive_woken_by_send(
        self, data: st.DataObject, waiters: int, cancel_woken: bool
    ) -> object:
        """Receivers wait, the machine's ``send`` rule runs, the first waiter (or, when it is
        cancelled right after the send woke it, the next one) receives what the spec delivers."""
        self._stepped()
        pair = self._waiting_pair(data)
        tasks = self._start_waiters(pair, waiters)
        left: list[impl.Snapshot[str]] = []

        def after_send() -> None:
            # In the send's own task step, after it returns, before any waiter runs: the
            # queues as the send left them are recorded, and the first waiter, its future
            # maybe resolved already, is cancelled.
            left.extend(q.snapshot() for q in self.queues)
            if cancel_woken:
                tasks[0].cancel()

        self.runner.after_next(after_send)
        self.send(**self._send_arguments(pair, data))
        self.runner.settle()
        self._observe_as_left(left)
        s = self.states[pair]
        after, d = spec.receive(s, now=self.now, vt=self.default_vt)
        if cancel_woken:
            assert tasks[0].cancelled(), "the cancelled first waiter did not end cancelled"
        # Who must take the delivery: the first waiter, or the next one it passed its
        # wakeup on to (with one waiter, nobody: the message stays visible).
        live = [t for t in tasks if not (cancel_woken and t is tasks[0])]
        received: list[LockstepReceipt] = []
        if d is None or not live:
            for t in tasks:
                assert t.cancelled() or not t.done(), f"a receiver got {t.result()!r} from nothing"
            event("receive_woken_by_send: nobody receives")
        else:
            taker, rest = live[0], live[1:]
            which = "second" if cancel_woken else "first"
            assert taker.done(), f"NoSleepingWaiter: {d.id!r} is deliverable, the {which} waits"
            m = taker.result()
            assert (m.id, m.body, m.attempt) == (d.id, d.body, d.attempt), f"{m} != {d}"
            assert m.receipt == self.queues[pair].receipt(m.id, m.attempt)
            for t in rest:
                assert not t.done(), f"a second receiver got {t.result()!r} from one send"
            self.states[pair] = after
            self.attempts_seen[pair].setdefault(m.id, []).append(m.attempt)
            received.append(LockstepReceipt(pair, pair, m.receipt, d.receipt))
            passed = " after the first waiter's wakeup was passed on" if cancel_woken else ""
            event(f"receive_woken_by_send: delivered{passed}")
        self._cancel_waiters(pair, tasks)
        return multiple(*received)

    @precondition(lambda self: any(not _deliverable(s, self.now) for s in self.states))
    @rule(data=st.data())
    def receive_cancelled(self, data: st.DataObject) -> None:
        """A receive waits on a queue with nothing to deliver and is cancelled: it ends
        cancelled and the queue is as before."""
        self._stepped()
        pair = self._waiting_pair(data)
        self._cancel_waiters(pair, self._start_waiters(pair, 1))


class AioFifoMachine(AioMachine, FifoMachine):
    """The FIFO lockstep machine on ``impl.AsyncFifoQueue``s: :class:`AioMachine`'s facade
    and rules, :class:`FifoMachine`'s sends, clock rules and FIFO invariants."""

    @initialize(**getattr(FifoMachine.create_queues, _INITIALIZE).arguments)
    def create_queues(self, **config: Any) -> None:
        FifoMachine.create_queues(self, **config)
        self._go_async()

    def _send_arguments(self, pair: int, data: st.DataObject) -> dict[str, object]:
        return {
            "pair": pair,
            "id": data.draw(st.sampled_from((*IDS, None)), label="id"),
            "body": data.draw(bodies, label="body"),
            "group": data.draw(st.sampled_from(GROUPS), label="group"),
            "dedup": data.draw(st.sampled_from(DEDUPS), label="dedup"),
        }
