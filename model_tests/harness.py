"""The scenario harness (contract section 4): ``python -m model_tests.harness --target T``.

Reads scenarios from standard input, one JSON object per line, and writes one JSON array per
line to standard output: the outputs of that scenario's operations, in order. ``--target model``
runs the pure-function spec, ``--target impl`` runs ``impl.Queue`` (``impl.FifoQueue`` for a
``"fifo": true`` scenario) on an ``impl.FakeClock``, ``--target aio`` runs ``impl.AsyncQueue``
(``impl.AsyncFifoQueue``) the same way on one event loop; all share the parser
(:mod:`model_tests.scenario_format`) and the op dispatch (:mod:`model_tests.targets`).

Lines are handled one at a time: each line is parsed whole before any of its ops runs, and its
output line is written and flushed before the next line is read. The first line that is not a
valid scenario stops the harness: one line on standard error, ``line N: what is wrong``, and exit
status 2. The outputs of the valid lines before it have already been written; nothing of the bad
line or of any later line is run. Blank lines are skipped (but counted in line numbers).

    $ echo '{"capacity":1,"ops":[["enqueue","a","A"],["reserve"]]}' \\
        | python -m model_tests.harness --target model
    [true,["a","A",1]]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TextIO, get_args

from model_tests.scenario_format import ScenarioError, parse_line
from model_tests.targets import TargetName, run_scenario

#: Exit status for a malformed scenario (and, via argparse, for bad command-line arguments).
EXIT_MALFORMED = 2


def run_lines(lines: TextIO, out: TextIO, err: TextIO, target: TargetName) -> int:
    """Run every scenario line of ``lines`` on ``target``; return the exit status (0 or 2)."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            scenario = parse_line(line)
        except ScenarioError as e:
            print(f"line {number}: {e}", file=err, flush=True)
            return EXIT_MALFORMED
        outputs = run_scenario(scenario, target)
        out.write(json.dumps(outputs, separators=(",", ":")) + "\n")
        out.flush()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m model_tests.harness",
        description="Run queue scenarios (JSON lines on stdin) and print their outputs.",
    )
    parser.add_argument(
        "--target",
        required=True,
        choices=get_args(TargetName),
        help=(
            "model: the pure-function spec; impl: impl.Queue (or FifoQueue) on a FakeClock; "
            "aio: impl.AsyncQueue (or AsyncFifoQueue) on a FakeClock and one event loop"
        ),
    )
    args = parser.parse_args(argv)
    return run_lines(sys.stdin, sys.stdout, sys.stderr, args.target)


if __name__ == "__main__":
    sys.exit(main())
