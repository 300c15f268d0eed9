"""``python -m model_tests.schedule``: explore a program's schedules, or replay one.

    python -m model_tests.schedule                       # the table: every program and mutant
    python -m model_tests.schedule --mutant DeadlineFirstSendQueue  # the programs that find it
    python -m model_tests.schedule --program timed_send --mutant DeadlineFirstSendQueue
    python -m model_tests.schedule --program mixed --pct 500 --seed 7
    python -m model_tests.schedule --replay 'timed_send:DeadlineFirstSendQueue:0*4.1*3.2*4.3'

``--preemptions K`` sets the bound (default: the program's); ``--all-points`` makes releases
and notifies scheduling points too (to measure that reduction); ``--events`` prints the
thread-level event sequence of the failing (or replayed) schedule.
"""

from __future__ import annotations

import argparse
import sys

from impl import FifoQueue
from model_tests.schedule.explore import decode, explore, forced, pct, queue_classes, run_once
from model_tests.schedule.programs import PROGRAMS, TEETH
from model_tests.schedule.report import interleaving, table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m model_tests.schedule",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--program", choices=sorted(PROGRAMS))
    ap.add_argument("--mutant", help="a queue class: Queue, FifoQueue or a mutant's name")
    ap.add_argument("--preemptions", type=int, help="the preemption bound")
    ap.add_argument("--pct", type=int, metavar="N", help="N randomized PCT schedules instead")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--replay", metavar="STRING", help="re-run one schedule exactly")
    ap.add_argument("--all-points", action="store_true")
    ap.add_argument("--events", action="store_true")
    a = ap.parse_args(argv)
    classes = queue_classes()
    if a.mutant is not None and a.mutant not in classes:
        ap.error(f"--mutant: no queue class {a.mutant!r}; one of {', '.join(sorted(classes))}")
    if a.replay:
        name, mutant, choices = decode(a.replay)
        run = run_once(PROGRAMS[name], classes[mutant], forced(choices), all_points=a.all_points)
        print(interleaving(run))
        if a.events:
            print("\n".join(map(str, run.events)))
        return 1 if run.failure else 0
    if a.program is None and a.mutant is not None:
        # The programs that the catalogue says find this mutant (or, for a queue class that no
        # program is expected to fail, every program of its queue type).
        jobs = [(PROGRAMS[e.program], e.mutant) for e in TEETH if e.mutant == a.mutant]
        if not jobs:
            fifo = issubclass(classes[a.mutant], FifoQueue)
            jobs = [(p, a.mutant) for p in PROGRAMS.values() if p.fifo == fifo]
    elif a.program is None:
        jobs = [(p, "FifoQueue" if p.fifo else "Queue") for p in PROGRAMS.values()]
        jobs += [(PROGRAMS[e.program], e.mutant) for e in TEETH]
    else:
        p = PROGRAMS[a.program]
        jobs = [(p, a.mutant or ("FifoQueue" if p.fifo else "Queue"))]
    results = []
    for program, mutant in jobs:
        if a.pct:
            r = pct(program, classes[mutant], a.pct, seed=a.seed)
        else:
            r = explore(program, classes[mutant], a.preemptions, all_points=a.all_points)
        results.append(r)
        if r.failure is not None and (a.program is not None or a.mutant is not None):
            print(interleaving(r.failure))
            if a.events:
                print("\n".join(map(str, r.failure.events)))
    print(table(results))
    if a.program is None and a.mutant is None:
        return 0  # the table: failures of the mutants are expected
    return 1 if any(r.failure is not None for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
