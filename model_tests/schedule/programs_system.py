"""The controlled scheduler's programs over a system of two queues (contract section 7), and
which bug each one is for.

A :class:`SystemProgram` is like :class:`model_tests.schedule.programs.Program`, over two
queues: ``dlq`` (created first) and ``src`` (``dead_letter=dlq``, with ``max_receives``).
Each operation names its queue first: ``("src", "send", id)``, ``("src", "receive")``,
``("src", "retry", ref)``, ``("src", "delete", ref)`` (``ref`` as in ``programs``: ``0`` this
thread's first delivery, ``"s0"`` the setup's), ``("dlq", "receive")``,
``("dlq", "start_redrive")``. Each queue's sweeper thread (started by the queue itself
through the seam) is one more logical thread; the clock driver's script moves the time.
The runner is :mod:`model_tests.schedule.explore_system`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

#: One operation: (queue name, operation, arguments...).
SysOp = tuple[Any, ...]


@dataclass(frozen=True)
class SystemProgram:
    """A fixed concurrent program over a dead-letter queue and its source."""

    name: str
    doc: str
    threads: tuple[tuple[str, tuple[SysOp, ...]], ...]
    setup: tuple[SysOp, ...] = ()
    clock: tuple[float, ...] = ()
    src: dict[str, Any] = field(default_factory=dict)
    dlq: dict[str, Any] = field(default_factory=dict)
    #: The preemption bound the default tests explore every schedule of.
    bound: int = 1

    def size(self) -> str:
        ops = max(len(ops) for _, ops in self.threads)
        extra = " + clock" if self.clock else ""
        return f"{len(self.threads)}x{ops}{extra}"


def _p(*programs: SystemProgram) -> dict[str, SystemProgram]:
    return {p.name: p for p in programs}


#: Every system program, by name.
SYSTEM_PROGRAMS: Final[dict[str, SystemProgram]] = _p(
    SystemProgram(
        "sweeper_vs_redrive",
        "The source's sweeper dead-letters y from src into dlq (its deadline passes) while a "
        "redrive moves x from dlq back into src and a consumer waits on src for what comes "
        "back: the two moves take the same two locks, in one order or they deadlock; nothing "
        "is lost or duplicated.",
        setup=(
            ("src", "send", "x"),
            ("src", "receive"),
            ("src", "retry", "s0"),  # x dies (max_receives 1): moved into dlq
            ("src", "send", "y"),
            ("src", "receive"),  # y in flight until 1.0: the sweeper's
        ),
        threads=(
            ("R", (("dlq", "start_redrive"),)),
            ("C", (("src", "receive"),)),
        ),
        clock=(1.0,),
        src={"max_receives": 1, "visibility_timeout": 1.0},
        dlq={"visibility_timeout": None},
        bound=1,
    ),
    SystemProgram(
        "retry_vs_redrive",
        "A consumer's retry dead-letters y (a release under both locks, target first) while a "
        "redrive moves x back into src, and another consumer receives from src.",
        setup=(
            ("src", "send", "x"),
            ("src", "receive"),
            ("src", "retry", "s0"),
            ("src", "send", "y"),
            ("src", "receive"),
        ),
        threads=(
            ("K", (("src", "retry", "s1"),)),
            ("R", (("dlq", "start_redrive"),)),
            ("C", (("src", "receive"),)),
        ),
        src={"max_receives": 1, "visibility_timeout": None},
        dlq={"visibility_timeout": None},
        bound=1,
    ),
    SystemProgram(
        "dead_letters_wake_every_receiver",
        "Two receivers wait on the empty dead-letter queue; x's and y's deliveries, due "
        "together, die in one sweep of src: two messages moved in, two receivers woken "
        "(contract section 7).",
        setup=(
            ("src", "send", "x"),
            ("src", "send", "y"),
            ("src", "receive"),
            ("src", "receive"),  # both in flight until 1.0, each on its last receive
        ),
        threads=(
            ("D1", (("dlq", "receive"),)),
            ("D2", (("dlq", "receive"),)),
        ),
        clock=(1.0,),
        src={"max_receives": 1, "visibility_timeout": 1.0},
        dlq={"visibility_timeout": None},
        bound=0,
    ),
)


@dataclass(frozen=True)
class SystemExpectation:
    """A system mutant and the program (and failure kind) that must catch it."""

    mutant: str
    program: str
    kind: str


#: The system mutants the scheduler catches, with the failure it must report.
SYSTEM_TEETH: Final[tuple[SystemExpectation, ...]] = (
    SystemExpectation("OppositeLockOrderQueue", "sweeper_vs_redrive", "DEADLOCK"),
    SystemExpectation("OneWakeDeadLetterQueue", "dead_letters_wake_every_receiver", "STUCK"),
)
