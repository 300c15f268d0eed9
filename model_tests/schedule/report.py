"""Printing what the scheduler found: a failing schedule as a readable interleaving, and the
table of a search (program, threads x ops, preemption bound, schedules, time, result)."""

from __future__ import annotations

from collections.abc import Iterable

from model_tests.schedule.explore import Result, Run, encode


def interleaving(run: Run) -> str:
    """``run`` as one line per step (thread, what it did, the queue's ``file:line``), a mark
    where the scheduler switched threads, then its verdict and its replay string."""
    lines = [f"program {run.program.name} on {run.mutant}: {run.program.doc}"]
    last = None
    for n, (thread, p) in enumerate(run.steps):
        switch = "->" if thread != last else "  "
        what = f"{p.kind} {p.what}".strip()
        where = f"  [{p.where}]" if p.where else ""
        lines.append(f"{n:4} {switch} {thread:8} {what}{where}")
        last = thread
    if run.failure is not None:
        lines.append(f"{run.failure.kind}: {run.failure.message}")
    lines.append(f"preemptions: {run.preemptions}")
    lines.append(f"replay: {encode(run.program, run.mutant, run.choices)}")
    return "\n".join(lines)


HEADER = "| program | threads x ops | queue | bound | schedules | time (s) | result |"


def row(result: Result) -> str:
    """One row of the docs' table for ``result``."""
    p = result.program
    bound = "PCT" if result.levels and result.levels[-1].bound < 0 else str(result.levels[-1].bound)
    if result.failure is not None:
        f = result.failure
        assert f.failure is not None
        found = (
            f"{f.failure.kind}, {f.preemptions} preemption(s): `{encode(p, f.mutant, f.choices)}`"
        )
    else:
        found = "pass" + ("" if result.complete else " (budget)")
    return (
        f"| {p.name} | {p.size()} | {result.mutant} | {bound} | {result.schedules} | "
        f"{result.seconds:.2f} | {found} |"
    )


def table(results: Iterable[Result]) -> str:
    """The markdown table of ``results``."""
    return "\n".join([HEADER, "|---|---|---|---:|---:|---:|---|", *map(row, results)])
