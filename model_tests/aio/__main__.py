"""``python -m model_tests.aio``: explore every order of the event loop, or replay one.

    python -m model_tests.aio                               # the table: every program, both mutants
    python -m model_tests.aio --mutant NoPassOnAsyncQueue   # the program that finds it
    python -m model_tests.aio --program two_receivers --bound 3
    python -m model_tests.aio --replay 'two_receivers:NoPassOnAsyncQueue:0*3.c0' --events

``--bound K`` sets the preemption bound (default: the program's); ``--events`` prints what the
tasks did (calls, returns, the queue's transitions) in the failing (or replayed) schedule.
Exit status: 0 if nothing failed (the table: if the real queues passed and every mutant was
found), 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys

from model_tests.aio.explore import decode, explore, forced, queue_classes, run_once
from model_tests.aio.programs import PROGRAMS, TEETH
from model_tests.aio.report import interleaving, table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m model_tests.aio",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--program", choices=sorted(PROGRAMS))
    ap.add_argument("--mutant", help="a queue class: AsyncQueue, AsyncFifoQueue or a mutant's name")
    ap.add_argument("--bound", type=int, help="the preemption bound (default: the program's)")
    ap.add_argument("--replay", metavar="STRING", help="re-run one schedule exactly")
    ap.add_argument("--events", action="store_true")
    a = ap.parse_args(argv)
    if a.bound is not None and a.bound < 0:
        ap.error(f"--bound must be >= 0, got {a.bound}")
    classes = queue_classes()
    if a.mutant is not None and a.mutant not in classes:
        ap.error(f"--mutant: no queue class {a.mutant!r}; one of {', '.join(sorted(classes))}")
    if a.replay:
        try:
            name, mutant, choices = decode(a.replay)
        except ValueError as e:
            ap.error(f"--replay: {e}")
        if name not in PROGRAMS or mutant not in classes:
            ap.error(f"--replay: no program {name!r} or queue class {mutant!r}")
        run = run_once(PROGRAMS[name], classes[mutant], forced(choices))
        print(interleaving(run))
        if a.events:
            print("\n".join(map(str, run.events)))
        return 1 if run.failure else 0
    real = "AsyncQueue"
    if a.program is None and a.mutant is not None:
        jobs = [(PROGRAMS[e.program], e.mutant) for e in TEETH if e.mutant == a.mutant]
        if not jobs:
            jobs = [(p, a.mutant) for p in PROGRAMS.values()]
    elif a.program is None:
        jobs = [(p, "AsyncFifoQueue" if p.fifo else real) for p in PROGRAMS.values()]
        jobs += [(PROGRAMS[e.program], e.mutant) for e in TEETH]
    else:
        p = PROGRAMS[a.program]
        jobs = [(p, a.mutant or ("AsyncFifoQueue" if p.fifo else real))]
    results = []
    for program, mutant in jobs:
        r = explore(program, classes[mutant], a.bound)
        results.append(r)
        if r.failure is not None and (a.program is not None or a.mutant is not None):
            print(interleaving(r.failure))
            if a.events:
                print("\n".join(map(str, r.failure.events)))
    print(table(results))
    if a.program is None and a.mutant is None:
        mutants = {e.mutant for e in TEETH}
        ok = all((r.failure is not None) == (r.mutant in mutants) for r in results)
        return 0 if ok else 1
    return 1 if any(r.failure is not None for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
