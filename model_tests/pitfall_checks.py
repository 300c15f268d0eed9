"""Checks that show a seed pitfall on any queue class: the ones the learner's pages run.

``docs/pitfalls.md`` and ``docs/exercises.md`` call these on ``impl.Queue`` and on the mutants of
``model_tests/mutants.py``; ``model_tests/tests/test_mutants.py`` asserts what each says. They
live here, not in that test module, so that a page can import them with only the standard
library and this repository (no pytest): each returns ``None`` (or an empty list) when the queue
behaves, and a sentence (or the names of the failing examples) when it does not.

- :func:`lost_wakeup`: seed pitfall 5, "the sweeper flipping a message to visible must signal
  notEmpty": a receiver blocked in ``receive()`` must be woken by the sweep that makes a
  delivery visible again. No state-based check can see this bug, only a check of who waits.
- :func:`polling_sweeper`: seed pitfall 5's other half, "no busy-waiting": an idle sweeper
  waits with no deadline at all.
- :func:`seed_examples_fail`: the second seed's four examples through the scenario harness
  (``tests/data/seed_examples.jsonl``, read from the checkout).
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, cast

from impl import FakeClock, Message, Queue
from model_tests.scenario_format import QueueConfig
from model_tests.support import BOUND, ProbeClock
from model_tests.targets import ImplTarget, run_scenario

QueueClass = type[Queue[Any]]

#: The second seed's examples (inputs and expected outputs): a file of the checkout, not of the
#: installed package, like the tests that read it.
SEED_EXAMPLES_FILE: Final = (
    Path(__file__).resolve().parents[1] / "tests" / "data" / "seed_examples.jsonl"
)


# =============================================================================================
# Pitfall 5: a lost wakeup, and a sweeper that polls
# =============================================================================================


def _parked(cond: threading.Condition) -> int:
    """Threads waiting on ``cond`` that no notify has reached yet (call with its lock held).

    ``Condition.notify`` removes a waiter from the condition's queue (CPython's private
    ``_waiters``) at once, under the lock, before the woken thread runs; so this tells a
    notified receiver from a forgotten one without waiting to see whether it wakes.
    """
    return len(cast(Any, cond)._waiters)


def lost_wakeup(queue_class: QueueClass) -> str | None:
    """The check of "the sweeper must signal not_empty": ``None`` if it does, else what is wrong.

    Receiver B blocks in ``receive()`` with no timeout; A's delivery expires; the sweep makes it
    visible. B must have been notified by then, and must get the redelivery.
    """
    clock = FakeClock()
    q: Queue[str] = queue_class(visibility_timeout=1.0, clock=clock)
    got: list[object] = []
    done = threading.Event()

    def receiver_b() -> None:
        try:
            got.append(q.receive())
        except BaseException as e:
            got.append(e)
        done.set()

    b = threading.Thread(target=receiver_b, name="B", daemon=True)
    try:
        q.send("A", id="a")
        q.receive(block=False)  # A's delivery: deadline 1; the sweeper waits for it
        b.start()
        assert clock.wait_for_waiters(2), "the sweeper and B should both be waiting"
        clock.advance(1.0)  # wakes the sweeper only: B waits for a notify, not for a time
        q.sweep()  # after this line a has been released, by the sweeper thread or by us
        with q.mutex:
            parked = _parked(q.not_empty)
        if parked:
            return f"lost wakeup: a is visible again and {parked} blocked receiver was not told"
        assert done.wait(BOUND), "B was notified but did not return"
        (m,) = got
        assert isinstance(m, Message) and (m.id, m.attempt) == ("a", 2), m
        return None
    finally:
        q.close()  # wakes B (shutdown notifies everyone) if it still waits
        if b.ident is not None:
            b.join(BOUND)


def polling_sweeper(queue_class: QueueClass) -> str | None:
    """The check of "an idle queue uses no CPU": ``None`` if the idle sweeper sleeps for good.

    A delivery makes the sweeper start; the delivery is deleted, and the clock reaches the
    deadline the sweeper waited for. It wakes, finds nothing due, nothing in flight: it must
    now wait with no deadline at all, so that only a new delivery can wake it. A deadline in
    the future is polling; one already passed is spinning.
    """
    clock = ProbeClock()  # logs every wait: who, when, until when
    q: Queue[str] = queue_class(visibility_timeout=1.0, clock=clock)
    try:
        q.send("A", id="a")
        m = q.receive(block=False)
        assert clock.wait_for_waiters(1), "the sweeper should be waiting"
        assert q.delete(m.receipt)
        begun = clock.waits_begun
        clock.advance(1.0)
        assert clock.wait_for_waiters(1, after=begun), "the sweeper should wait again"
        last = [c for c in clock.calls if c.thread.endswith("-sweeper")][-1]
        if last.deadline is None:
            return None
        how = "spins" if last.deadline <= last.now else "polls"
        return f"the idle sweeper {how}: it waits until {last.deadline} at {last.now}"
    finally:
        q.close()


# =============================================================================================
# The second seed's four examples, through the harness
# =============================================================================================


@functools.cache
def seed_examples() -> list[dict[str, Any]]:
    """The second seed's examples: each a ``name``, an ``input`` scenario and its ``expected``
    outputs, in the file's order."""
    if not SEED_EXAMPLES_FILE.is_file():
        raise FileNotFoundError(
            f"{SEED_EXAMPLES_FILE}: the seed examples are a file of the repository's checkout"
        )
    lines = SEED_EXAMPLES_FILE.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _target(queue_class: QueueClass) -> Callable[[QueueConfig], ImplTarget]:
    return functools.partial(ImplTarget, queue_class=queue_class)


def seed_examples_fail(queue_class: QueueClass) -> list[str]:
    """Names of the seed examples whose output differs (or that raise) on ``queue_class``."""
    failed = []
    for e in seed_examples():
        try:
            ok = run_scenario(e["input"], _target(queue_class)) == e["expected"]
        except AssertionError:  # the queue's own self-check
            ok = False
        if not ok:
            failed.append(e["name"])
    return failed
