"""The fixed test programs of the asyncio explorer, and which bug each one is for.

A :class:`Program` is a few tasks, each a short list of queue operations (an :data:`Op`, as in
``model_tests/schedule/programs.py``), plus a setup run before them (sequentially, to its end),
the clock script (the ``advance`` steps the explorer places among the loop's steps), the
queue's configuration and how many cancellations one schedule may inject (``cancels``: the
explorer may cancel a task wherever it is suspended inside an operation). The explorer
(``model_tests/aio/explore.py``) runs a program under every order of the event loop up to a
preemption bound, on ``impl.AsyncQueue`` (or ``impl.AsyncFifoQueue``) and on each mutant.

Operations, each a tuple whose last item may be a dict of keyword arguments:

- ``("send", id)``, ``("send_batch", (id, ...))``, ``("receive",)``, ``("receive_batch", n)``,
  ``("cancel", id)``, ``("purge",)``;
- ``("delete", ref)``, ``("retry", ref)``, ``("change_visibility", ref, timeout)``: ``ref``
  names a delivery this task received (``0``: its first) or the setup's (``"s0"``); skipped if
  that delivery never came.

The keyword ``within`` is not the queue's: ``{"within": 1.0}`` runs the operation inside
``asyncio.timeout(1.0)`` (a loop timer on the fake clock, which cancels the task when due), the
way an asyncio service bounds a call; the others are the queue method's (``timeout``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

#: One operation of a program (see the module docstring).
Op = tuple[Any, ...]


@dataclass(frozen=True)
class Program:
    """A fixed asyncio program: tasks of operations, a setup, a clock script, cancellations."""

    name: str
    doc: str
    tasks: tuple[tuple[str, tuple[Op, ...]], ...]
    setup: tuple[Op, ...] = ()
    clock: tuple[float, ...] = ()
    queue: dict[str, Any] = field(default_factory=dict)
    fifo: bool = False
    #: How many cancellations (``Task.cancel`` where the task waits) one schedule may inject.
    cancels: int = 0
    #: The preemption bound the tests explore every schedule of, on the real queue.
    bound: int = 1

    @property
    def visibility_timeout(self) -> float | None:
        vt: float | None = self.queue.get("visibility_timeout", 30.0)
        return vt

    def size(self) -> str:
        """``tasks x ops`` as the docs' table writes it (+ clock, + cancels)."""
        ops = max(len(ops) for _, ops in self.tasks)
        extra = " + clock" if self.clock else ""
        extra += f" + {self.cancels} cancel" if self.cancels else ""
        return f"{len(self.tasks)}x{ops}{extra}"


def _p(*programs: Program) -> dict[str, Program]:
    return {p.name: p for p in programs}


#: Every program, by name.
PROGRAMS: Final[dict[str, Program]] = _p(
    Program(
        "two_receivers",
        "Two receivers wait on an empty queue, a sender sends one message; either receiver may "
        "be cancelled at any await, also just after the send woke it: the other must get it, "
        "and no message may be left in flight without a task holding it.",
        tasks=(
            ("R1", (("receive",),)),
            ("R2", (("receive",),)),
            ("S", (("send", "a"),)),
        ),
        queue={"visibility_timeout": None},
        cancels=1,
        bound=2,
    ),
    Program(
        "receive_timeout",
        "A receive with timeout=1 races a send and the clock passing its end time: it gets "
        "the message or raises Empty, and then the message stays visible.",
        tasks=(
            ("R", (("receive", {"timeout": 1.0}),)),
            ("S", (("send", "a"),)),
        ),
        clock=(1.0,),
        queue={"visibility_timeout": None},
        bound=2,
    ),
    Program(
        "within_timeout",
        "R1 receives inside asyncio.timeout(1) (the loop's timer cancels it), R2 receives "
        "with no bound, a sender sends one message while the clock passes R1's end: whoever "
        "was woken and is cancelled passes the wakeup on.",
        tasks=(
            ("R1", (("receive", {"within": 1.0}),)),
            ("R2", (("receive",),)),
            ("S", (("send", "a"),)),
        ),
        clock=(1.0,),
        queue={"visibility_timeout": None},
        bound=1,
    ),
    Program(
        "cancelled_sender",
        "Capacity 1, full: two senders wait for room, a consumer receives and deletes; a "
        "sender may be cancelled, also just after the delete woke it: the other must get the "
        "slot.",
        setup=(("send", "x"),),
        tasks=(
            ("S1", (("send", "a"),)),
            ("S2", (("send", "b"),)),
            ("C", (("receive",), ("delete", 0))),
        ),
        queue={"capacity": 1, "visibility_timeout": None},
        cancels=1,
        bound=1,
    ),
    Program(
        "send_batch",
        "Capacity 2 with one message in: a send_batch of two and a single send wait for room, "
        "a consumer frees one slot and then another; a cancelled waiter never takes room.",
        setup=(("send", "x"), ("send", "y")),
        tasks=(
            ("B", (("send_batch", ("a", "b")),)),
            ("S", (("send", "c"),)),
            ("C", (("receive",), ("delete", 0))),
        ),
        queue={"capacity": 2, "visibility_timeout": None},
        cancels=1,
        bound=1,
    ),
    Program(
        "expiry",
        "A delivery expires (the clock passes its deadline: the queue's one loop timer sweeps) "
        "while two receivers wait; either may be cancelled: the redelivery must reach the "
        "other.",
        setup=(("send", "a"), ("receive",)),
        tasks=(("R1", (("receive",),)), ("R2", (("receive",),))),
        clock=(1.0,),
        queue={"visibility_timeout": 1.0},
        cancels=1,
        bound=1,
    ),
)


@dataclass(frozen=True)
class Expectation:
    """A mutant and the program (and check) that must catch it."""

    mutant: str
    program: str
    kind: str  # the failure kind the search must report first
    #: The fewest preemptions and cancellations of a failing schedule (minimal schedule).
    preemptions: int = 0
    cancels: int = 1


#: The two teaching bugs, each with the program that finds it and the check that fails.
TEETH: Final[tuple[Expectation, ...]] = (
    Expectation("NoPassOnAsyncQueue", "two_receivers", "NoSleepingWaiter"),
    Expectation("HandoffAsyncQueue", "two_receivers", "HeldDeliveries"),
)
