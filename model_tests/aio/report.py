"""Printing what the asyncio explorer found: a failing schedule as a readable sequence of loop
steps, and the table of a search (program, tasks x ops, queue, bound, schedules, time, result),
in the shape of ``model_tests/schedule/report.py``."""

from __future__ import annotations

from collections.abc import Iterable

from model_tests.aio.explore import Result, Run, encode


def interleaving(run: Run) -> str:
    """``run`` as one line per step (who, what, the ``file:line`` a task resumed at), a mark
    where the actor changed, then its verdict and its replay string."""
    lines = [f"program {run.program.name} on {run.mutant}: {run.program.doc}"]
    last = None
    for n, s in enumerate(run.steps):
        switch = "->" if s.actor != last else "  "
        where = f"  [{s.where}]" if s.where else ""
        lines.append(f"{n:4} {switch} {s.actor:8} {s.what}{where}")
        last = s.actor
    if run.failure is not None:
        lines.append(f"{run.failure.kind}: {run.failure.message}")
    lines.append(f"preemptions: {run.preemptions}, cancellations: {run.cancels}")
    lines.append(f"replay: {encode(run.program, run.mutant, run.choices)}")
    return "\n".join(lines)


HEADER = "| program | tasks x ops | queue | bound | schedules | time (s) | result |"


def row(result: Result) -> str:
    """One row of the docs' table for ``result``."""
    p = result.program
    bound = str(result.levels[-1].bound) if result.levels else "-"
    if result.failure is not None:
        f = result.failure
        assert f.failure is not None
        found = (
            f"{f.failure.kind}, {f.preemptions} preemption(s), {f.cancels} cancel(s): "
            f"`{encode(p, f.mutant, f.choices)}`"
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
