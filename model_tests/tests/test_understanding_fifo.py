"""FIFO queues' "exactly-once processing", both halves, each answered by running it.

Read with ``docs/walkthrough.md`` (section "FIFO queues: what 'exactly-once processing' does and
does not mean") and ``docs/tla.md`` (FIFO section, "'Exactly-once processing', both halves"):

- (a) a producer's retry AFTER the dedup interval is a second message: TLC's counterexample to
  ``NoDuplicateFromRetry`` (``tla/QueueFifoRetryLate.cfg``) replayed on ``impl.FifoQueue``;
- (b) a consumer slower than its visibility timeout processes a FIFO message twice: TLC's
  counterexample to ``ExactlyOnce`` (``tla/QueueFifoSlowConsumer.cfg``) replayed the same way;
- (c) the half that holds (``tla/QueueFifoDedup.cfg``): a retry WITHIN the interval is a
  duplicate, so one message and one delivery, whenever the producer retries;
- (d) the threaded lost wakeup of ``tla/ThreadedQueueFifoWakeup.cfg`` passes on the real code:
  that race test is ``tests/test_impl_fifo.py::
  test_a_receiver_waiting_on_a_locked_group_is_woken_by_its_unlock[delete]`` (not repeated here).

The traces are kept as TLC printed them in ``docs/diagrams/fifo_*.trace``, so the replays run
without Java; with Java, a test checks that TLC still finds exactly those traces. Time is a
``ProbeClock`` the test moves; the test plays the sweeper (``q.sweep()`` at a ``Sweep`` step).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from impl import Empty, FifoQueue, Receipt
from model_tests.support import ProbeClock
from model_tests.tests.replay import Consumers, impl_view, now, tlc_view
from tla.counterexample import TraceStep, messages, parse_trace
from tla.models import discover
from tla.tlc import available as tlc_available
from tla.tlc import run_tlc

DIAGRAMS = Path(__file__).resolve().parents[2] / "docs" / "diagrams"
#: model name -> the committed copy of TLC's counterexample.
TRACES = {
    "QueueFifoRetryLate": DIAGRAMS / "fifo_retry_late.trace",
    "QueueFifoSlowConsumer": DIAGRAMS / "fifo_slow_consumer.trace",
}
#: Both models put every id in one group with one dedup id (Groups = DedupSets = {{a, b}}).
GROUP, DEDUP = "g", "d"

needs_java = pytest.mark.skipif(not tlc_available(), reason="TLC needs Java and tla2tools.jar")


def _steps(model: str) -> list[TraceStep]:
    return parse_trace(TRACES[model].read_text(encoding="utf-8"))


# =============================================================================================
# (a) Deduplication is a window: a retry after the interval is a second message.
# =============================================================================================


def test_a_retry_after_the_dedup_interval_replays_tlcs_counterexample() -> None:
    # QueueFifoRetryLate: b is a's retry (one dedup id), DedupInterval = 1, no visibility
    # timeout. Every TLC step becomes the impl call it stands for; after each one the queue
    # shows exactly TLC's state.
    steps = _steps("QueueFifoRetryLate")
    # State 4 is the delete (TLC names it by the disjunct of Next it came from).
    assert [s.action for s in steps] == ["Initial", "Send", "Receive", "Next", "Tick", "Send",
                                         "Receive"]  # fmt: skip
    clock = ProbeClock()
    receipts: dict[str, Receipt] = {}
    delivered: list[str] = []
    with FifoQueue[str](capacity=2, visibility_timeout=None, dedup_interval=1.0, clock=clock) as q:
        for prev, step in itertools.pairwise(steps):
            before, after = messages(prev.state), messages(step.state)
            if step.action == "Send":
                (i,) = set(after) - set(before)
                # The producer sends with the dedup id; past the window it is accepted anew.
                assert q.send(i, group=GROUP, id=i, dedup_id=DEDUP) == i
            elif step.action == "Receive":
                m = q.receive(block=False)
                receipts[m.id] = m.receipt
                delivered.append(m.id)
            elif step.action == "Tick":
                clock.advance(now(step) - now(prev), wake=False)
            elif step.action == "Next":  # the delete: the one message that became DONE
                done = [i for i, m in after.items() if m["status"] == "DONE"]
                (i,) = [i for i in done if before[i]["status"] != "DONE"]
                assert q.delete(receipts.pop(i)) is True
            else:
                pytest.fail(f"state {step.number}: unexpected action {step.action}")
            assert impl_view(q.snapshot()) == tlc_view(step), f"after state {step.number}"
    # Both a and its retry b were delivered: two messages of one dedup id, the violation of
    # NoDuplicateFromRetry. The retry came exactly dedup_interval after a's acceptance.
    assert delivered == ["a", "b"]


def test_the_window_edge_one_tick_earlier_the_retry_is_a_duplicate() -> None:
    # The same steps with the retry before the window ends: the earlier id comes back and
    # nothing changes (this is the step TLC's trace cannot take at now = 0).
    clock = ProbeClock()
    with FifoQueue[str](visibility_timeout=None, dedup_interval=1.0, clock=clock) as q:
        assert q.send("a", group=GROUP, id="a", dedup_id=DEDUP) == "a"
        m = q.receive(block=False)
        assert q.delete(m.receipt) is True
        clock.advance(0.5, wake=False)
        before = q.snapshot()
        assert q.send("b", group=GROUP, id="b", dedup_id=DEDUP) == "a"  # a duplicate
        assert q.snapshot() == before
        clock.advance(0.5, wake=False)  # now - accepted_at == dedup_interval: the window is over
        assert q.send("b", group=GROUP, id="b", dedup_id=DEDUP) == "b"
        # b's acceptance replaced a's record (TLC's state 6: [dd |-> {a, b}, at |-> 1, id |-> b]):
        # a third send within b's window is a duplicate of b.
        clock.advance(0.5, wake=False)
        assert q.send("c", group=GROUP, id="c", dedup_id=DEDUP) == "b"


# =============================================================================================
# (b) Exactly-once *processing* says nothing about consumers: the slow consumer's duplicate.
# =============================================================================================


def test_a_slow_consumer_on_a_fifo_queue_replays_tlcs_counterexample() -> None:
    # QueueFifoSlowConsumer: ExactlyOnce's trace on a FIFO queue. c1 receives a (its group is
    # locked), the clock passes its deadline, the sweep releases a (the group unlocks), c2
    # receives it and processes it; c1's stale delete is a no-op after it did the work.
    steps = _steps("QueueFifoSlowConsumer")
    assert [s.action for s in steps] == ["Initial", "Produce", "Consume", "Clock", "Sweep",
                                         "Consume", "Finish", "Finish"]  # fmt: skip
    clock = ProbeClock()  # the test plays the sweeper: Sweep steps are q.sweep()
    with FifoQueue[str](capacity=1, visibility_timeout=None, dedup_interval=5.0, clock=clock) as q:
        # Each message in the one group, deduplicated by its own id.
        consumers = Consumers(q, clock, send=lambda i: q.send(i, group=GROUP, id=i, dedup_id=i))
        for step in consumers.replay(steps):
            assert impl_view(q.snapshot()) == tlc_view(step), f"after state {step.number}"
    # Both consumers finished their work on a: processed twice. The group lock kept the two
    # deliveries apart in time (c2 could not receive while c1's delivery was in flight), but
    # expiry ended c1's flight, not c1's processing.
    assert consumers.finishes == [("c1", ("a", 1), False), ("c2", ("a", 2), True)]


# =============================================================================================
# (c) The half that holds: a producer's retry within the interval is deduplicated.
# =============================================================================================


@pytest.mark.parametrize("retry_after", ["send", "receive", "delete", "expiry"])
def test_a_retry_within_the_dedup_interval_is_one_message_one_delivery(retry_after: str) -> None:
    # QueueFifoDedup's property (NoDuplicateFromRetry, DedupWindow): b is a's retry, the
    # interval is 3 and the retry comes before it ends, whatever became of a meanwhile.
    clock = ProbeClock()
    delivered: list[tuple[str, int]] = []
    with FifoQueue[str](capacity=2, visibility_timeout=1.0, dedup_interval=3.0, clock=clock) as q:
        assert q.send("a", group=GROUP, id="a", dedup_id=DEDUP) == "a"
        if retry_after != "send":
            m = q.receive(block=False)
            delivered.append((m.id, m.attempt))
            assert clock.wait_for_waiters(1)  # the sweeper thread sleeps: only q.sweep()
            if retry_after == "delete":
                assert q.delete(m.receipt) is True
            elif retry_after == "expiry":
                clock.advance(1.0, wake=False)
                q.sweep()
        clock.advance(1.0, wake=False)  # now 1 or 2: within the window of 3
        before = q.snapshot()
        # The producer never learnt that a was accepted and retries the same send.
        assert q.send("b", group=GROUP, id="b", dedup_id=DEDUP) == "a"
        assert q.snapshot() == before  # a duplicate changes nothing: no message b
        while True:  # drain: every delivery there is, each processed and deleted
            try:
                m = q.receive(block=False)
            except Empty:
                break
            delivered.append((m.id, m.attempt))
            assert q.delete(m.receipt) is True
        ids = {i for i, _ in delivered}
        assert ids == {"a"}  # b was never delivered: one message for the two sends
        # With no slow consumer, one delivery. (Under "expiry" a's first consumer was too slow:
        # a second delivery of a, which is half (b), not a duplicate from the retry.)
        assert len(delivered) == (2 if retry_after == "expiry" else 1)


# =============================================================================================
# The committed traces are what TLC finds today.
# =============================================================================================


@needs_java
@pytest.mark.parametrize("model", sorted(TRACES))
def test_the_committed_fifo_traces_are_what_tlc_finds_today(model: str) -> None:
    (m,) = [m for m in discover() if m.name == model]
    result = run_tlc(m.spec, m.cfg, check_deadlock=m.check_deadlock, timeout=300)
    assert m.met_by(result), result.summary
    # Source positions in the action headers may move; the states and actions may not.
    assert parse_trace(result.trace()) == _steps(model)
