"""The lost wakeups that TLC finds in ``tla/ThreadedQueue.tla``, injected into ``impl.Queue``.

Each test mirrors one expected-to-fail model:

- ``ThreadedQueueWakeup.cfg`` (``Bug = "sweep_no_notify"``): the sweep re-queues an expired
  message without notifying ``not_empty``. A receiver blocked in ``receive()`` sleeps through
  the redelivery. With the real queue it is woken and gets attempt 2.
- ``ThreadedQueueWakeupNotifyOnce.cfg`` (``Bug = "sweep_notify_once"``): the sweep notifies
  ``not_empty`` once, however many messages it re-queued. Of two blocked receivers one sleeps
  beside a visible message. With the real queue (one notify per message) both are woken.

The bug is injected as an effect of the machine: a sweep's outcome says to wake no receiver
(or at most one), so its notifies of ``not_empty`` never happen -- exactly the bug.

The clock: ``FakeClock.advance`` wakes only timed waits whose deadline it reaches, as the real
clock does (an untimed ``Condition.wait`` is woken only by a notify), so the outcome is decided
by the notifies alone, deterministically. The test's :class:`~model_tests.support.ProbeClock`
also counts, per condition, the threads asleep on it without a deadline
(``wait_for_sleepers``), so a test can wait until the receivers are asleep on ``not_empty``
before it moves the clock.

A receiver "still blocked" is checked after a bounded wait (:data:`~model_tests.support.NEVER`)
that in the buggy queue always runs out, because nothing will ever notify it; in the real queue
the same wait ends at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from impl import Message, Queue
from impl.machine import Machine
from impl.outcome import Outcome as OutcomeValue
from model_tests.support import BOUND, NEVER, Call, ProbeClock


class SweepWithoutNotifyMachine(Machine[str]):
    """The machine of :class:`SweepWithoutNotify`: a sweep's round wakes at most ``allowed``
    receivers, however many messages it re-queued (the outcome's effect, cut down)."""

    allowed = 0

    def fire_due(self, now: float) -> OutcomeValue | None:
        out = super().fire_due(now)
        if out is None:
            return None
        return out._replace(receivers=min(out.receivers, self.allowed))  # the bug


class SweepNotifyOnceMachine(SweepWithoutNotifyMachine):
    allowed = 1


class SweepWithoutNotify(Queue[str]):
    """impl.Queue with ``Bug = "sweep_no_notify"``: a sweep wakes no receiver."""

    machine_class = SweepWithoutNotifyMachine


class SweepNotifyOnce(Queue[str]):
    """impl.Queue with ``Bug = "sweep_notify_once"``: a sweep wakes at most one receiver."""

    machine_class = SweepNotifyOnceMachine


@dataclass
class Outcome:
    """What the receivers got before the queue was closed, and what was still visible then."""

    woken: list[Message[str]]
    visible: int


def redelivery_while_blocked(queue_class: type[Queue[str]], ids: list[str]) -> Outcome:
    """The trace of the Wakeup models, run on the implementation.

    Each id is sent and received (attempt 1, deadline 1), and the delivery is dropped (the
    consumer's processing failed). One receiver per id then blocks in ``receive()``. The clock
    passes the deadline and the queue sweeps: every message is visible again. Each receiver is
    given a bounded time to be woken; then the outcome is taken and the queue closed.
    """
    clock = ProbeClock()
    q = queue_class(capacity=len(ids), visibility_timeout=1.0, clock=clock)
    receivers: list[Call[Message[str]]] = []
    try:
        for id in ids:
            q.send(f"body-{id}", id=id)
            assert q.receive(block=False).id == id  # delivered, then dropped
        receivers = [Call(q.receive, f"receiver-{k}") for k in range(len(ids))]
        assert clock.wait_for_sleepers(q.not_empty, len(ids)), "receivers never went to sleep"
        clock.advance(1.0)
        q.sweep()  # (if the sweeper thread has not already): every message is visible again
        for r in receivers:
            r.thread.join(NEVER)  # a Call has finished once its thread has ended
        woken = [r.result() for r in receivers if r.finished]
        return Outcome(woken, q.stats().visible)
    finally:
        q.close()  # shutdown wakes every receiver, so no thread outlives the test
        for r in receivers:
            r.thread.join(BOUND)
            assert not r.thread.is_alive()


def _deliveries(outcome: Outcome) -> list[tuple[str, int]]:
    return sorted((m.id, m.attempt) for m in outcome.woken)


def test_real_queue_wakes_a_receiver_for_a_redelivery() -> None:
    outcome = redelivery_while_blocked(Queue, ["a"])
    assert _deliveries(outcome) == [("a", 2)] and outcome.visible == 0


def test_sweep_without_notify_lets_a_receiver_sleep_through_the_redelivery() -> None:
    # ThreadedQueueWakeup.cfg on the implementation: the redelivered message is visible and
    # the only receiver sleeps beside it; nothing will ever wake it but close().
    outcome = redelivery_while_blocked(SweepWithoutNotify, ["a"])
    assert outcome.woken == [] and outcome.visible == 1


def test_real_queue_wakes_one_receiver_per_redelivered_message() -> None:
    outcome = redelivery_while_blocked(Queue, ["a", "b"])
    assert _deliveries(outcome) == [("a", 2), ("b", 2)] and outcome.visible == 0


def test_sweep_notify_once_leaves_a_receiver_asleep_beside_a_message() -> None:
    # ThreadedQueueWakeupNotifyOnce.cfg on the implementation: one sweep re-queues both
    # messages but wakes one receiver; the other sleeps while a message is visible.
    outcome = redelivery_while_blocked(SweepNotifyOnce, ["a", "b"])
    assert len(outcome.woken) == 1 and outcome.woken[0].attempt == 2
    assert outcome.visible == 1
