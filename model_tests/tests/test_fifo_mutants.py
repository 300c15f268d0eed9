"""The FIFO mutants of the catalogue (``model_tests.mutants.FIFO_MUTANTS``), each caught by a
named check, and ``impl.FifoQueue`` passing every one of those checks.

The checks, each a witness program whose expected results are the contract's (section 2b):

- ``GroupOrder``: a receive delivers, from each group it touches, that group's earliest
  non-terminal messages in send order, never a message of a group locked when it began; a
  batch takes one group's visible messages, then the next group's;
- ``DedupWindow``: within ``dedup_interval`` of an acceptance no other message with its
  ``dedup_id`` is accepted; after it the ``dedup_id`` is new again (measured from the
  acceptance); every dedup record names an accepted message (a rejected send records nothing);
  pruning the records (past 64) keeps the live ones; a send that waited for room is checked
  again (two waiting senders with one dedup id: the second is a duplicate of the first);
- ``lost wakeup (FIFO)``: a receiver blocked while the only visible message's group is locked
  is woken by the delete of that group's in-flight message (TLC's FIFO lost-wakeup scenario).

Each returns ``None`` when the queue behaves, else a message that starts with the check's name.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from typing import Any, Final

import pytest

from impl import Empty, FakeClock, FifoQueue, Full, ShutDown
from impl.fifo_machine import FifoMachine
from model_tests.mutants import (
    FIFO_MUTANTS,
    InterleavedBatchFifoQueue,
    LockBlindFifoQueue,
    PruneLiveDedupFifoQueue,
    RejectedDedupFifoQueue,
    SilentUnlockFifoQueue,
    SlidingDedupFifoQueue,
    TailReleaseFifoQueue,
    UncheckedWaitFifoQueue,
    broken_parts,
)
from model_tests.support import NEVER, Call, ProbeClock, first_finished

FifoClass = type[FifoQueue[Any]]


def _ids(got: object) -> object:
    if isinstance(got, list):
        return [m.id for m in got]
    return getattr(got, "id", got)


def group_order(cls: FifoClass) -> str | None:
    """``GroupOrder`` on a witness program: batches group by group, the lock, release to the
    head of the group."""
    with cls(clock=FakeClock(), visibility_timeout=10.0) as q:
        for id, g in (("a1", "A"), ("b1", "B"), ("a2", "A")):
            q.send(id, group=g, id=id)
        got = [m.id for m in q.receive_batch(3)]
        if got != ["a1", "a2", "b1"]:
            return f"GroupOrder: receive_batch(3) delivered {got}, the contract: [a1, a2, b1]"
        for m in q.snapshot().in_flight:
            q.cancel(m.id)
        for id, g in (("a3", "A"), ("b2", "B"), ("a4", "A")):
            q.send(id, group=g, id=id)
        head = q.receive(block=False)
        got1 = q.receive(block=False).id
        if (head.id, got1) != ("a3", "b2"):
            return (
                f"GroupOrder: receives delivered {head.id}, {got1}: {got1} of group A, "
                "locked by a3 in flight (the contract: a3, b2)"
            )
        try:
            extra = q.receive(block=False)
        except Empty:
            pass
        else:
            return f"GroupOrder: delivered {extra.id} while its group was locked"
        q.retry(head.receipt)
        got = [m.id for m in q.receive_batch(10)]
        if got != ["a3", "a4"]:
            return (
                f"GroupOrder: after a3's retry, receive_batch delivered {got}: a3 goes back "
                "to the head of group A (the contract: [a3, a4])"
            )
    return None


def dedup_window(cls: FifoClass) -> str | None:
    """``DedupWindow`` on a witness program: the window's end, measured from the acceptance,
    and a rejected send that must record nothing."""
    clock = FakeClock()
    with cls(clock=clock, dedup_interval=300.0) as q:
        q.send("x", group="A", id="m1", dedup_id="d")
        clock.advance(200.0)
        if (got := q.send("x", group="A", id="m2", dedup_id="d")) != "m1":
            return f"DedupWindow: a send with d 200 s after m1's acceptance gave {got!r}"
        clock.advance(100.0)
        if (got := q.send("x", group="A", id="m3", dedup_id="d")) != "m3":
            return (
                f"DedupWindow: a send with d 300 s after m1's acceptance (the interval) gave "
                f"{got!r}: the window is measured from the acceptance, not the duplicate"
            )
    with cls(clock=FakeClock(), capacity=1) as q:
        q.send("a", group="A", id="a")
        with contextlib.suppress(Full):
            q.send("y", group="A", id="r", dedup_id="e", block=False)
        q.delete(q.receive(block=False).receipt)
        if (got := q.send("y", group="A", id="s", dedup_id="e")) != "s":
            return (
                f"DedupWindow: the retry of a send rejected as full gave {got!r}: a dedup "
                "record names a message never accepted"
            )
    with cls(clock=FakeClock(), dedup_interval=300.0) as q:
        # 128 distinct dedup ids (past 64, a power of two: the records are pruned), all live.
        for i in range(128):
            q.send(i, group="A", id=f"p{i}", dedup_id=f"k{i}")
        if (got := q.send(0, group="A", id="again", dedup_id="k0")) != "p0":
            return (
                f"DedupWindow: a retry of k0 within the window, after the pruning at 128 "
                f"records, gave {got!r}: the pruning dropped a live record"
            )
    return dedup_after_waiting(cls)


def dedup_after_waiting(cls: FifoClass) -> str | None:
    """``DedupWindow``'s waiting half: two senders with one dedup id wait for room; the one
    accepted second must be found a duplicate of the first (its re-check after the wait)."""
    clock = ProbeClock()
    with cls(clock=clock, capacity=1, visibility_timeout=None) as q:
        q.send("x", group="A", id="x")
        s1 = Call(lambda: q.send("1", group="A", id="s1", dedup_id="w"), name="sender-1")
        s2 = Call(lambda: q.send("2", group="A", id="s2", dedup_id="w"), name="sender-2")
        assert clock.wait_for_sleepers(q.not_full, 2), "the senders never blocked"
        assert q.delete(q.receive(block=False).receipt)  # room for one: one sender goes on
        first = first_finished(s1, s2)
        other = s2 if first is s1 else s1
        accepted = first.result()
        assert q.delete(q.receive(block=False).receipt)  # room again: the other goes on
        if (got := other.result()) != accepted:
            return (
                f"DedupWindow: two senders with dedup id w waited for room; the first was "
                f"accepted as {accepted!r}, the second too, as {got!r} (a duplicate)"
            )
    return None


def lost_wakeup_fifo(cls: FifoClass) -> str | None:
    """``lost wakeup (FIFO)``: a receiver waiting for a locked group's next message is woken by
    the delete of the group's in-flight message."""
    clock = ProbeClock()
    with cls(clock=clock, visibility_timeout=None) as q:
        q.send("1", group="A", id="a1")
        q.send("2", group="A", id="a2")
        m = q.receive(block=False)
        receiver = Call(q.receive, name="fifo-receiver")
        assert clock.wait_for_sleepers(q.not_empty, 1), "the receiver never blocked"
        assert q.delete(m.receipt)
        receiver.thread.join(NEVER)
        if not receiver.finished:
            q.shutdown()  # wake it, so the thread ends
            with contextlib.suppress(ShutDown):
                receiver.result()
            return (
                "lost wakeup (FIFO): the delete unlocked group A (a2 visible) and no receiver woke"
            )
        if (got := receiver.result().id) != "a2":
            return f"lost wakeup (FIFO): the woken receiver got {got}, not a2"
    return None


CHECKS: Final[dict[str, Callable[[FifoClass], str | None]]] = {
    "GroupOrder": group_order,
    "DedupWindow": dedup_window,
    "lost wakeup (FIFO)": lost_wakeup_fifo,
}

#: Which named check catches each FIFO mutant.
CAUGHT_BY: Final[dict[FifoClass, str]] = {
    TailReleaseFifoQueue: "GroupOrder",
    LockBlindFifoQueue: "GroupOrder",
    InterleavedBatchFifoQueue: "GroupOrder",
    SlidingDedupFifoQueue: "DedupWindow",
    RejectedDedupFifoQueue: "DedupWindow",
    SilentUnlockFifoQueue: "lost wakeup (FIFO)",
    PruneLiveDedupFifoQueue: "DedupWindow",
    UncheckedWaitFifoQueue: "DedupWindow",
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mutant", list(CAUGHT_BY), ids=lambda c: c.__name__)
def test_fifo_mutant_is_caught_by_its_named_check(mutant: FifoClass) -> None:
    name = CAUGHT_BY[mutant]
    failure = CHECKS[name](mutant)
    assert failure is not None, f"{name} did not catch {mutant.__name__}"
    assert failure.startswith(name + ":"), failure


@pytest.mark.timeout(60)
@pytest.mark.parametrize("check", list(CHECKS))
def test_the_real_fifo_queue_passes_every_fifo_check(check: str) -> None:
    assert CHECKS[check](FifoQueue) is None


def test_every_fifo_mutant_is_caught_and_documented() -> None:
    assert set(CAUGHT_BY) == set(FIFO_MUTANTS.values())
    for name, cls in FIFO_MUTANTS.items():
        doc = inspect.getdoc(cls) or ""
        assert doc.startswith("MUTANT"), f"{name}: the docstring must start with MUTANT"
        assert "The bug:" in doc and "Why the checks see it:" in doc, name
        assert CAUGHT_BY[cls] in doc.partition("Why the checks see it:")[2], name
        assert issubclass(cls, FifoQueue) and cls is not FifoQueue


def test_every_fifo_mutant_overrides_one_machine_step_in_a_few_lines() -> None:
    """Each FIFO mutant's machine overrides one step of ``impl.fifo_machine.FifoMachine`` (its
    own or one it inherits from ``impl.machine.Machine``), and its queue nothing else."""
    for name, cls in FIFO_MUTANTS.items():
        parts = broken_parts(cls)
        assert len(parts) == 1, f"{name} overrides {parts}, not one step"
        ((klass, attr),) = parts
        assert not attr.startswith("_") and callable(getattr(FifoMachine, attr)), (name, attr)
        lines, _ = inspect.getsourcelines(getattr(klass, attr))
        assert len(lines) <= 15, f"{name}.{attr} has {len(lines)} lines"
