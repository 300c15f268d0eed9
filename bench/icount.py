"""Hot-path cost in instructions, not seconds: this checkout's ``impl`` against a base revision's.

``python -m bench.icount --base REV`` runs a few fixed single-threaded programs (send, receive,
retry, change_visibility, delete cycles; and batches of ten, counted per message) under
``valgrind --tool=callgrind`` twice each, once with ``impl`` as it is in the working tree and
once with ``impl`` as it was at ``REV`` (taken with ``git archive``), and prints the
instructions per cycle of each and their ratio (``--program`` picks some). A program that needs
what the base revision lacks (the batch one, on a revision without batches) gets ``-`` there.

Why instructions: wall-clock throughput on a shared two-core machine moves by tens of percent
from run to run (lock convoys, the other core's load; see docs/benchmarks.md), so it cannot
show a change of a few percent in the code's own cost. Instruction counts are repeatable for
the same interpreter and program whatever else the machine does. Each figure is the difference
between a long and a short run divided by the difference in cycles, so start-up and import cost
cancel out. It measures the code, not contention: the convoy figures stay with ``python -m
bench``. Needs valgrind (``apt-get install -y valgrind``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The programs: each runs ``n`` cycles on one queue; ``{root}`` is where ``impl`` is imported.
PROGRAMS: dict[str, str] = {
    "send_receive_delete": """
q = Queue(visibility_timeout=None)
for _ in range(n):
    q.send("x")
    q.delete(q.receive().receipt)
""",
    "send_receive_retry_receive_delete": """
q = Queue(visibility_timeout=None)
for _ in range(n):
    q.send("x")
    q.retry(q.receive().receipt)
    q.delete(q.receive().receipt)
""",
    "armed_receive_extend_delete": """
q = Queue(visibility_timeout=30.0, clock=FakeClock())
for _ in range(n):
    q.send("x")
    m = q.receive()
    q.change_visibility(m.receipt, 5.0)
    q.delete(m.receipt)
""",
    # Per message, not per call: n messages in batches of ten (n a multiple of 10), each batch
    # built of fresh entries as a producer would. No deadlines: an armed deadline wakes the
    # sweeper thread at times that depend on the wall clock, which moved counts by 2-4 %.
    "batch10_send_receive_delete": """
from impl import Entry
q = Queue(visibility_timeout=None)
for _ in range(n // 10):
    q.send_batch([Entry("x") for _ in range(10)])
    q.delete_batch([m.receipt for m in q.receive_batch(10)])
""",
}

#: What a program needs of ``impl`` (a text in ``impl/queue.py``): a base revision without it
#: (one without batches) gets no figure for that program instead of failing.
NEEDS: dict[str, str] = {"batch10_send_receive_delete": "def send_batch("}

_PRELUDE = """
import sys
sys.path.insert(0, {root!r})
import impl
assert impl.__file__.startswith({root!r}), impl.__file__
from impl import FakeClock, Queue
n = int(sys.argv[1])
"""
_EPILOGUE = "\nq.close()\n"

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


class IcountError(RuntimeError):
    """valgrind is missing, a run failed, or its output had no instruction count."""


def parse_refs(valgrind_output: str) -> int:
    """The total instruction count (``I refs``) in callgrind's summary on standard error."""
    m = _REFS.search(valgrind_output)
    if m is None:
        raise IcountError(f"no 'I refs' line in valgrind's output:\n{valgrind_output[-2000:]}")
    return int(m.group(1).replace(",", ""))


def instructions(program: str, root: Path, cycles: int) -> int:
    """Instructions executed by ``program`` with ``impl`` from ``root``, for ``cycles`` cycles."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise IcountError("valgrind is not installed: apt-get install -y valgrind")
    source = _PRELUDE.format(root=str(root)) + program + _EPILOGUE
    done = subprocess.run(
        [
            valgrind,
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            "-c",
            source,
            str(cycles),
        ],
        capture_output=True,
        text=True,
        check=False,
        # One string hash seed for every run: with random ones, set and dict layouts (and so
        # their probing) differ from run to run, which moved counts by up to 3 %.
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    if done.returncode != 0:
        raise IcountError(f"the program failed under valgrind:\n{done.stderr[-2000:]}")
    return parse_refs(done.stderr)


def per_cycle(program: str, root: Path, short: int, long: int) -> float:
    """Instructions per cycle: the long run minus the short one, over the extra cycles."""
    return (instructions(program, root, long) - instructions(program, root, short)) / (long - short)


def extract_impl(rev: str, into: Path) -> Path:
    """``impl/`` as it was at git revision ``rev``, unpacked under ``into``; returns ``into``."""
    done = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", rev, "impl"],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise IcountError(f"git archive {rev} impl failed: {done.stderr.decode().strip()}")
    with tarfile.open(fileobj=BytesIO(done.stdout)) as tar:
        into.mkdir(parents=True, exist_ok=True)
        tar.extractall(into, filter="data")
    return into


@dataclass(frozen=True)
class Row:
    program: str
    base: float | None  # None: the base revision lacks what the program needs
    this: float | None

    @property
    def ratio(self) -> float | None:
        return None if self.base is None or self.this is None else self.this / self.base


def has_needs(program: str, root: Path) -> bool:
    """Whether ``impl`` under ``root`` has what ``program`` needs (see ``NEEDS``)."""
    need = NEEDS.get(program)
    return need is None or need in (root / "impl" / "queue.py").read_text()


def compare(
    base_rev: str,
    short: int,
    long: int,
    this_rev: str | None = None,
    programs: Sequence[str] | None = None,
) -> list[Row]:
    """Instructions per cycle of every program (or of ``programs``), at ``base_rev`` and in the
    working tree (or at ``this_rev``)."""
    names = list(PROGRAMS) if programs is None else list(programs)
    unknown = [p for p in names if p not in PROGRAMS]
    if unknown:
        raise IcountError(f"no such program: {', '.join(unknown)} (known: {', '.join(PROGRAMS)})")
    with tempfile.TemporaryDirectory(prefix="icount-") as tmp:
        base = extract_impl(base_rev, Path(tmp) / "base")
        this = ROOT if this_rev is None else extract_impl(this_rev, Path(tmp) / "this")

        def figure(name: str, root: Path) -> float | None:
            if not has_needs(name, root):
                return None
            return per_cycle(PROGRAMS[name], root, short, long)

        return [Row(name, figure(name, base), figure(name, this)) for name in names]


def format_rows(rows: Sequence[Row], base_rev: str, this_rev: str | None = None) -> str:
    this = "this tree" if this_rev is None else this_rev[:10]

    def cell(x: float | None, spec: str) -> str:
        return f"{'-':>{spec.split(',')[0].split('.')[0]}}" if x is None else format(x, spec)

    lines = [
        "instructions per cycle (batch programs: per message)",
        f"{'program':<36} {base_rev[:13]:>14} {this:>14} {'ratio':>7}",
    ]
    lines += [
        f"{r.program:<36} {cell(r.base, '14,.0f')} {cell(r.this, '14,.0f')} {cell(r.ratio, '7.3f')}"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.icount", description=__doc__)
    parser.add_argument("--base", default="HEAD", help="git revision to compare with (HEAD)")
    parser.add_argument(
        "--this", default=None, help="git revision to measure (default: the working tree)"
    )
    parser.add_argument("--short", type=int, default=2_000, help="cycles of the short run")
    parser.add_argument("--long", type=int, default=12_000, help="cycles of the long run")
    parser.add_argument(
        "--program",
        action="append",
        choices=list(PROGRAMS),
        help="measure only this program (repeatable; default: all)",
    )
    args = parser.parse_args(argv)
    if not 0 < args.short < args.long:
        parser.error("need 0 < --short < --long")
    if args.short % 10 or args.long % 10:
        parser.error("--short and --long must be multiples of 10 (the batch programs)")
    try:
        rows = compare(args.base, args.short, args.long, args.this, args.program)
    except IcountError as e:
        print(f"icount: {e}", file=sys.stderr)
        return 1
    print(format_rows(rows, args.base, args.this))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
