"""The fixed test programs of the controlled scheduler, and which bug each one is for.

A :class:`Program` is a few logical threads, each a short list of queue operations (an
:data:`Op`), plus a setup run before them (sequentially, by the test's own thread), the clock
driver's script (the ``advance`` steps it takes, at moments the scheduler chooses) and the
queue's configuration. The queue's sweeper thread, started by the queue itself through the
seam, is one more logical thread. The explorer (``model_tests/schedule/explore.py``) runs a
program under every schedule up to a preemption bound, on ``impl.Queue`` (or ``impl.FifoQueue``)
and on each mutant.

Operations (:data:`Op`), each a tuple whose last item may be a dict of keyword arguments:

- ``("send", id)``, ``("send_batch", (id, ...))``, ``("receive",)``,
  ``("receive_batch", n)``, ``("sweep",)``, ``("cancel", id)``, ``("purge",)``;
- ``("delete", ref)``, ``("retry", ref)``, ``("change_visibility", ref, timeout)``: ``ref``
  names a delivery this thread received (``0``: its first) or one the setup received (``"s0"``).
  An operation whose delivery never came (its receive raised) is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

#: One operation of a program (see the module docstring).
Op = tuple[Any, ...]


@dataclass(frozen=True)
class Program:
    """A fixed concurrent program: threads of operations, a setup, a clock script."""

    name: str
    doc: str
    threads: tuple[tuple[str, tuple[Op, ...]], ...]
    setup: tuple[Op, ...] = ()
    clock: tuple[float, ...] = ()
    queue: dict[str, Any] = field(default_factory=dict)
    fifo: bool = False
    #: How many injected interrupts (at the end of a notified wait) one schedule may have.
    interrupts: int = 0
    #: The preemption bound the tests explore every schedule of, on the real queue.
    bound: int = 2

    @property
    def visibility_timeout(self) -> float | None:
        vt: float | None = self.queue.get("visibility_timeout", 30.0)
        return vt

    def size(self) -> str:
        """``threads x ops`` as the docs' table writes it (callers only; + clock, sweeper)."""
        ops = max(len(ops) for _, ops in self.threads)
        extra = " + clock" if self.clock else ""
        return f"{len(self.threads)}x{ops}{extra}"


def _p(*programs: Program) -> dict[str, Program]:
    return {p.name: p for p in programs}


#: Every program, by name.
PROGRAMS: Final[dict[str, Program]] = _p(
    Program(
        "receive_race",
        "Two consumers receive and delete, a producer sends two: the basic race on one head "
        "(a non-atomic receive hands one message to both).",
        threads=(
            ("P", (("send", "a"), ("send", "b"))),
            ("C1", (("receive",), ("delete", 0))),
            ("C2", (("receive",), ("delete", 0))),
        ),
        queue={"visibility_timeout": None},
    ),
    Program(
        "batch_race",
        "A receive_batch of two races a receive over three visible messages: a batch that "
        "drops the lock between its deliveries comes back with a hole in its run.",
        setup=(("send", "a"), ("send", "b"), ("send", "c")),
        threads=(
            ("B", (("receive_batch", 2),)),
            ("C", (("receive",),)),
        ),
        queue={"visibility_timeout": None},
    ),
    Program(
        "expiry_wakeup",
        "A blocked receiver must be woken by the sweeper's redelivery: a delivery expires "
        "(the clock driver moves the time) while R waits with no timeout.",
        setup=(("send", "a"), ("receive",)),
        threads=(("R", (("receive",),)),),
        clock=(1.0,),
        queue={"visibility_timeout": 1.0},
    ),
    Program(
        "expiry_two_consumers",
        "Capacity 2, two deliveries expire in one sweep, two receivers wait: each release must "
        "wake one (a sweeper that notifies only when nothing was visible wakes one).",
        setup=(("send", "a"), ("send", "b"), ("receive",), ("receive",)),
        threads=(("R1", (("receive",),)), ("R2", (("receive",),))),
        clock=(1.0,),
        queue={"capacity": 2, "visibility_timeout": 1.0},
    ),
    Program(
        "stale_delete",
        "A's delivery expires and is redelivered to B; A's late delete with its stale receipt "
        "must do nothing (delete by id deletes B's delivery).",
        setup=(("send", "a"),),
        threads=(
            ("A", (("receive",), ("delete", 0))),
            ("B", (("receive",), ("delete", 0))),
        ),
        clock=(1.0,),
        queue={"visibility_timeout": 1.0},
    ),
    Program(
        "timed_send",
        "Capacity 1, full: a timed sender and an untimed one wait for room; the clock passes "
        "the timed one's deadline while a consumer frees the slot. Someone must get it.",
        setup=(("send", "x"),),
        threads=(
            ("S1", (("send", "a", {"timeout": 1.0}),)),
            ("S2", (("send", "b"),)),
            ("C", (("receive",), ("delete", 0))),
        ),
        clock=(1.0,),
        queue={"capacity": 1, "visibility_timeout": None},
    ),
    Program(
        "unswept_extend",
        "A delivery's deadline passes before the sweeper runs; its consumer extends it (still "
        "live until the sweep), then looks for visible work.",
        setup=(("send", "a"),),
        threads=(
            (
                "C",
                (
                    ("receive",),
                    ("change_visibility", 0, 5.0),
                    ("receive", {"block": False}),
                ),
            ),
        ),
        clock=(1.0,),
        queue={"visibility_timeout": 1.0},
    ),
    Program(
        "interrupted_receiver",
        "Two receivers wait, one message is sent; the receiver it wakes may be interrupted as "
        "it leaves the wait (a signal handler's exception): the other must get the message.",
        threads=(
            ("R1", (("receive",),)),
            ("R2", (("receive",),)),
            ("P", (("send", "a"),)),
        ),
        queue={"visibility_timeout": None},
        interrupts=1,
    ),
    Program(
        "fifo_unlock",
        "FIFO: a receiver waits while the only visible message's group is locked; the delete "
        "of the group's in-flight message unlocks it and must wake the receiver.",
        setup=(("send", "a1", {"group": "g"}), ("send", "a2", {"group": "g"}), ("receive",)),
        threads=(("R", (("receive",),)), ("D", (("delete", "s0"),))),
        queue={"visibility_timeout": None},
        fifo=True,
    ),
    Program(
        "batch_wakes_all",
        "Two receivers block on an empty queue, a producer sends a batch of two: each message "
        "must wake a receiver (a batch that reports one wakes one, the other sleeps on).",
        threads=(
            ("R1", (("receive",),)),
            ("R2", (("receive",),)),
            ("P", (("send_batch", ("a", "b")),)),
        ),
        queue={"visibility_timeout": None},
    ),
    Program(
        "mixed",
        "Three threads of two operations over a capacity-2 queue with expiry: sends, "
        "receives, a change_visibility and a retry, with the sweeper and one clock step.",
        threads=(
            ("P", (("send", "a"), ("send", "b"))),
            ("C1", (("receive",), ("change_visibility", 0, 2.0))),
            ("C2", (("receive",), ("retry", 0))),
        ),
        clock=(1.0,),
        queue={"capacity": 2, "visibility_timeout": 1.0},
        bound=0,
    ),
)


@dataclass(frozen=True)
class Expectation:
    """A mutant and the program (and check) that must catch it."""

    mutant: str
    program: str
    kind: str  # the failure kind the search must report first
    fifo: bool = False


#: Every concurrency mutant of the catalogue and its program, with the failure it must give.
TEETH: Final[tuple[Expectation, ...]] = (
    Expectation("PlainBlockingQueue", "receive_race", "NOT LINEARIZABLE"),
    Expectation("SplitReceiveQueue", "receive_race", "INVARIANT"),
    Expectation("DeleteByIdQueue", "stale_delete", "NOT LINEARIZABLE"),
    Expectation("ForgetfulSweeperQueue", "expiry_wakeup", "LOST WAKEUP"),
    Expectation("OnlyWhenEmptySweeperQueue", "expiry_two_consumers", "LOST WAKEUP"),
    Expectation("SplitReceiveBatchQueue", "batch_race", "NOT LINEARIZABLE"),
    Expectation("DeadlineFirstSendQueue", "timed_send", "LOST WAKEUP"),
    Expectation("UnsweptIsDeadQueue", "unswept_extend", "NOT LINEARIZABLE"),
    Expectation("SilentUnlockFifoQueue", "fifo_unlock", "LOST WAKEUP", fifo=True),
    Expectation("UnpassedInterruptQueue", "interrupted_receiver", "LOST WAKEUP"),
    Expectation("OneWakeSendBatchQueue", "batch_wakes_all", "LOST WAKEUP"),
)
