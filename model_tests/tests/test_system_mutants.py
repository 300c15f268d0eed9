"""The system mutants of the catalogue (``model_tests.mutants.SYSTEM_MUTANTS``, issue 25),
each caught by a named check, and ``impl.Queue`` passing every one of those checks.

The checks (each returns ``None`` when the queues behave, else a message starting with its
name):

- ``fault_matrix_of_moves``: ``model_tests.fault_matrix.check_move_faults`` on a dying
  ``retry`` and ``sweep``: a fault at any point leaves both queues as they were and
  ``nothing_lost`` holds;
- ``scheduler_sweeper_vs_redrive``: the controlled scheduler's ``sweeper_vs_redrive`` program
  (``model_tests/schedule/programs_system.py``) up to its preemption bound;
- ``lockstep_system``: a witness run of the lockstep machine over a system
  (``model_tests.lockstep_system.SystemMachine``), its rules and invariants called as
  Hypothesis calls them;
- ``retention_counts_from_the_original_enqueue`` and ``redrive_resets_the_message``: the AWS
  rules of contract section 7, as two short programs whose expected values are AWS's;
- ``redrive_wakes_a_blocked_sender``, ``rate_limited_redrive_survives_compaction``,
  ``scheduler_dead_letters_wake_every_receiver`` and ``retention_fires_beside_an_expiry``:
  the wakeups and timers around the steps (a race test on a probe clock, two fake-clock
  programs and a scheduler program), each written for a one-line slip that every
  state-based check passed.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from typing import Any, Final

import pytest

from impl import FakeClock, Queue, RedriveStatus, ShutDown
from model_tests.fault_matrix import check_move_faults
from model_tests.lockstep_system import SRC, SystemMachine
from model_tests.mutants import (
    SYSTEM_MUTANTS,
    CompactDropsTicksQueue,
    ExpiryDropsTimersQueue,
    OneWakeDeadLetterQueue,
    OppositeLockOrderQueue,
    RedriveKeepsQueue,
    RetentionFromMoveQueue,
    SilentRedriveOutQueue,
    TwoStepMoveQueue,
)
from model_tests.schedule.explore_system import explore_system
from model_tests.schedule.programs_system import SYSTEM_PROGRAMS
from model_tests.support import NEVER, Call, ProbeClock

QueueClass = type[Queue[Any]]


def fault_matrix_of_moves(cls: QueueClass) -> str | None:
    for op in ("retry", "sweep"):
        try:
            check_move_faults(cls, op)
        except AssertionError as e:
            return f"fault_matrix_of_moves: {e}"
    return None


def scheduler_sweeper_vs_redrive(cls: QueueClass) -> str | None:
    found = explore_system(SYSTEM_PROGRAMS["sweeper_vs_redrive"], cls).failure
    if found is None or found.failure is None:
        return None
    return f"scheduler_sweeper_vs_redrive: {found.failure.kind}: {found.failure.message}"


class _Draws:
    """Stands in for a rule's ``st.data()``: its draws return these values, in order."""

    def __init__(self, *values: object) -> None:
        self._values = list(values)

    def draw(self, strategy: object, label: object = None) -> object:
        return self._values.pop(0)


def _witness(cls: QueueClass, steps: Callable[[SystemMachine], None]) -> str | None:
    """Run ``steps`` on the machine over queues of ``cls``, every invariant after each rule
    (the machine's ``check`` hook), and report the first failure."""
    machine = SystemMachine()
    machine.queue_class = cls
    try:
        steps(machine)
    except AssertionError as e:
        return f"lockstep_system: {e}"
    finally:
        machine.teardown()
    return None


def _checked(m: SystemMachine) -> None:
    m.matches_spec()
    m.system_one_state()
    m.nothing_lost()


def _retention_witness(m: SystemMachine) -> None:
    # dlq keeps a message 4 s from its *original* enqueue: sent at 0, moved at 2, gone at 4.
    m.create_system(max_receives=1, vt=2.0, src_retention=None, dlq_retention=4.0, capacity=None)
    _checked(m)
    m.send(SRC, "a", "x", "g", 0.0)
    _checked(m)
    m.receive(_Draws(SRC), "default")
    _checked(m)
    for _ in range(2):
        m.advance(_Draws(False, 8))
        _checked(m)


def _redrive_witness(m: SystemMachine) -> None:
    m.create_system(max_receives=1, vt=2.0, src_retention=None, dlq_retention=None, capacity=None)
    m.send(SRC, "a", "x", "g", 0.0)
    ticket = m.receive(_Draws(SRC), "default")
    m.retry(ticket, False)
    _checked(m)
    m.start_redrive(None, None)
    _checked(m)


def lockstep_system(cls: QueueClass) -> str | None:
    return _witness(cls, _retention_witness) or _witness(cls, _redrive_witness)


def retention_counts_from_the_original_enqueue(cls: QueueClass) -> str | None:
    """Sent at 0 into ``src`` (vt 6, max_receives 1), dead-lettered at 6 into a standard
    ``dlq`` with ``retention=10``: AWS keeps the original enqueue time, so it ages out at 10."""
    clock = FakeClock()
    make: Any = cls
    with (
        make(clock=clock, name="dlq", retention=10.0) as dlq,
        make(
            clock=clock, name="src", max_receives=1, dead_letter=dlq, visibility_timeout=6.0
        ) as src,
    ):
        src.send("x", id="x")
        src.receive(block=False)
        clock.advance(6.0)
        src.sweep()
        clock.advance(4.0)
        dlq.sweep()
        if dlq.aged_out() != ["x"]:
            return (
                "retention_counts_from_the_original_enqueue: at 10 the dead-letter queue "
                f"still holds {dlq.snapshot().visible}, aged out {dlq.aged_out()}"
            )
    return None


def redrive_resets_the_message(cls: QueueClass) -> str | None:
    """Dead-lettered after 2 receives, redriven: a new message, whose first delivery is
    attempt 1 and whose retention (``src``'s, 10 s) counts from the redrive."""
    clock = FakeClock()
    make: Any = cls
    with (
        make(clock=clock, name="dlq") as dlq,
        make(
            clock=clock,
            name="src",
            max_receives=2,
            dead_letter=dlq,
            visibility_timeout=None,
            retention=10.0,
        ) as src,
    ):
        src.send("x", id="x")
        for _ in range(2):
            src.retry(src.receive(block=False).receipt)
        clock.advance(8.0)
        dlq.start_redrive()
        clock.advance(5.0)  # 13: 5 s after the redrive, 13 s after the original send
        src.sweep()
        got = src.receive(block=False, timeout=None) if src.stats().visible else None
        if got is None or got.attempt != 1:
            seen = None if got is None else (got.id, got.attempt)
            return f"redrive_resets_the_message: the redriven message is {seen}, not attempt 1"
    return None


def redrive_wakes_a_blocked_sender(cls: QueueClass) -> str | None:
    """A sender blocks on a full queue of capacity 1; its one message is redriven to another
    queue, which frees the slot: the sender is woken and its message accepted."""
    clock = ProbeClock()
    make: Any = cls
    with (
        make(clock=clock, name="dest") as dest,
        make(clock=clock, name="full", capacity=1, visibility_timeout=None) as q,
    ):
        q.send("x", id="x")
        sender = Call(lambda: q.send("z", id="z"), name="blocked-sender")
        assert clock.wait_for_sleepers(q.not_full, 1), "the sender never blocked"
        task = q.start_redrive(destination=dest)
        if task.moved != 1:
            return f"redrive_wakes_a_blocked_sender: the redrive moved {task.moved}, not 1"
        try:
            got: object = sender.result(NEVER)
        except AssertionError:
            q.shutdown()  # release the sender the redrive did not wake
            with contextlib.suppress(ShutDown):
                sender.result()
            return "redrive_wakes_a_blocked_sender: the sender sleeps beside the freed slot"
        if got != "z" or q.stats().visible != 1:
            return f"redrive_wakes_a_blocked_sender: the sender got {got!r}, {q.stats()}"
    return None


def rate_limited_redrive_survives_compaction(cls: QueueClass) -> str | None:
    """A ``rate=1`` redrive of three dead-lettered messages; while it runs, 40 extensions of
    another message's delivery leave stale deadlines enough to rebuild the heap; 10 s later
    every tick has fired: the task moved all three and completed."""
    clock = FakeClock()
    make: Any = cls
    with (
        make(clock=clock, name="dlq", visibility_timeout=30.0) as dlq,
        make(
            clock=clock, name="src", max_receives=1, dead_letter=dlq, visibility_timeout=None
        ) as src,
    ):
        for id in ("a", "b", "c"):
            src.send(id, id=id)
            src.retry(src.receive(block=False).receipt)
        task = dlq.start_redrive(rate=1.0)
        # Tick 0 is due at once, for the next sweep: fire it here, not whenever the sweeper
        # thread gets to it, which could be while ``z``'s loop holds a scope message in
        # flight, and a scope message not visible when its turn comes is skipped (contract
        # section 7.5). Tick 1 is due at 1 s: nothing fires until the clock moves.
        dlq.sweep()
        dlq.send("z", id="z")
        z = None
        while z is None or z.id != "z":  # the head may be a scope message: give it back
            if z is not None:
                dlq.retry(z.receipt)
            z = dlq.receive(block=False)
        for i in range(40):
            dlq.change_visibility(z.receipt, 30.0 + i)
        dlq.delete(z.receipt)
        clock.advance(10.0)
        dlq.sweep()
        if task.status is not RedriveStatus.COMPLETED or task.moved != 3:
            return (
                "rate_limited_redrive_survives_compaction: 10 s after a rate=1 start the task "
                f"is {task.status.value} with {task.moved} of 3 moved"
            )
    return None


def scheduler_dead_letters_wake_every_receiver(cls: QueueClass) -> str | None:
    found = explore_system(SYSTEM_PROGRAMS["dead_letters_wake_every_receiver"], cls).failure
    if found is None or found.failure is None:
        return None
    return (
        f"scheduler_dead_letters_wake_every_receiver: {found.failure.kind}: {found.failure.message}"
    )


def retention_fires_beside_an_expiry(cls: QueueClass) -> str | None:
    """Sent at 0 with ``retention=10``, received with a visibility timeout of 3, the clock
    moved to 10 in one step: one sweep expires the delivery (it does not die: no
    ``max_receives``), then ages the message out."""
    clock = FakeClock()
    make: Any = cls
    with make(clock=clock, retention=10.0, visibility_timeout=3.0) as q:
        q.send("x", id="x")
        q.receive(block=False)
        clock.advance(10.0)
        q.sweep()
        clock.advance(100.0)
        q.sweep()
        if q.aged_out() != ["x"]:
            return (
                "retention_fires_beside_an_expiry: past its retention the message is still "
                f"held ({q.stats()}), aged out {q.aged_out()}"
            )
    return None


CHECKS: Final[dict[str, Callable[[QueueClass], str | None]]] = {
    f.__name__: f
    for f in (
        fault_matrix_of_moves,
        scheduler_sweeper_vs_redrive,
        lockstep_system,
        retention_counts_from_the_original_enqueue,
        redrive_resets_the_message,
        redrive_wakes_a_blocked_sender,
        rate_limited_redrive_survives_compaction,
        scheduler_dead_letters_wake_every_receiver,
        retention_fires_beside_an_expiry,
    )
}

#: Each system mutant and the check that catches it (its docstring names it).
CAUGHT_BY: Final[dict[QueueClass, str]] = {
    TwoStepMoveQueue: "fault_matrix_of_moves",
    OppositeLockOrderQueue: "scheduler_sweeper_vs_redrive",
    RetentionFromMoveQueue: "retention_counts_from_the_original_enqueue",
    RedriveKeepsQueue: "redrive_resets_the_message",
    SilentRedriveOutQueue: "redrive_wakes_a_blocked_sender",
    CompactDropsTicksQueue: "rate_limited_redrive_survives_compaction",
    OneWakeDeadLetterQueue: "scheduler_dead_letters_wake_every_receiver",
    ExpiryDropsTimersQueue: "retention_fires_beside_an_expiry",
}
#: Mutants the lockstep machine's witnesses also catch.
ALSO_LOCKSTEP: Final = (RetentionFromMoveQueue, RedriveKeepsQueue)


#: The scheduler's search takes seconds on a mutant and a minute on the real queue:
#: ``test_schedule_system.py`` runs the mutant's by default, these only with ``-m slow``.
SLOW: Final = pytest.mark.slow


@pytest.mark.parametrize(
    "mutant",
    [pytest.param(m, marks=SLOW) if m is OppositeLockOrderQueue else m for m in CAUGHT_BY],
    ids=lambda m: m.__name__,
)
def test_system_mutant_is_caught_by_its_check(mutant: QueueClass) -> None:
    name = CAUGHT_BY[mutant]
    failure = CHECKS[name](mutant)
    assert failure is not None, f"{name} did not catch {mutant.__name__}"
    assert failure.startswith(name + ":"), failure


@pytest.mark.parametrize("mutant", ALSO_LOCKSTEP, ids=lambda m: m.__name__)
def test_system_mutant_is_caught_by_the_lockstep_machine(mutant: QueueClass) -> None:
    failure = lockstep_system(mutant)
    assert failure is not None and failure.startswith("lockstep_system:"), failure


@pytest.mark.parametrize(
    "check",
    [pytest.param(c, marks=SLOW) if c == "scheduler_sweeper_vs_redrive" else c for c in CHECKS],
)
def test_the_real_queue_passes_every_system_check(check: str) -> None:
    assert CHECKS[check](Queue) is None


def test_every_system_mutant_is_caught_and_documented() -> None:
    assert set(CAUGHT_BY) == set(SYSTEM_MUTANTS.values())
    for name, cls in SYSTEM_MUTANTS.items():
        doc = inspect.getdoc(cls) or ""
        assert doc.startswith("MUTANT (system)"), name
        assert "The bug:" in doc and "Why the checks see it:" in doc, name
        why = doc.partition("Why the checks see it:")[2]
        assert CAUGHT_BY[cls] in why, name
