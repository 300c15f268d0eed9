"""Never-closed queues: what a careless user's dropped queues leave behind.

    python -m bench.leak                  # 10,000 queues, about 10 s
    python -m bench.leak --queues 200     # a smoke run

Each run makes ``--queues`` N queues on the real clock, one after the other; each receives one
message with a finite visibility timeout (an hour: nothing expires during the run), which starts
its sweeper thread. The queues are never closed and every reference to them is dropped (the
loop variable is rebound). Then ``gc.collect()``, a bounded join of the sweeper threads the run
started, and the figures: the process's thread count and its memory, ``VmRSS`` (resident) and
``VmSize`` (virtual) from ``/proc/self/status``, before and after, and the most threads alive at
any point of the run. The baseline is the same N queues, each closed after its receive.

Each of the two runs is made in a fresh interpreter (``--only``, which prints its figures as
JSON), so neither inherits the other's memory. Targets (``docs/benchmarks.md``): as many threads
after as before (about 1: the main thread), and no RSS growth beyond the closed baseline's
(within :data:`RSS_SLACK`, the allocator's noise). A sweeper thread that held its queue would
keep every dropped queue alive with its sleeping thread (what that design cost is in
``CHANGELOG.md``).

:func:`run` is the measurement itself, for tests: in-process, any N.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import re
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final

from bench.report import Row, format_notes, format_table, ratio
from impl.queue import Queue

BODY: Final = "hello"
#: The visibility timeout of each receive: finite (so a sweeper thread starts), and far beyond
#: the run (so nothing expires: each queue ends the run with one message in flight).
VT: Final = 3600.0
#: Seconds, in all, that the sweeper threads get to end after the collection.
JOIN_BOUND: Final = 30.0
#: Bytes of RSS growth beyond the closed baseline's that still count as "no growth".
RSS_SLACK: Final = 8 * 2**20
SWEEPER: Final = re.compile(r"impl\.Queue-\d+-sweeper")
MIB: Final = 2**20


@dataclass(frozen=True)
class Figures:
    """One run: N queues, closed or not; thread counts, and memory in bytes (``None``: no
    ``/proc``)."""

    queues: int
    closed: bool
    threads_before: int
    threads_peak: int
    threads_after: int
    #: Sweeper threads still running when the bounded join gave up.
    lingering: int
    rss_before: int | None
    rss_after: int | None
    vm_before: int | None
    vm_after: int | None
    resource_warnings: int
    seconds: float

    @property
    def rss_growth(self) -> int | None:
        return _growth(self.rss_before, self.rss_after)

    @property
    def vm_growth(self) -> int | None:
        return _growth(self.vm_before, self.vm_after)


def _growth(before: int | None, after: int | None) -> int | None:
    return None if before is None or after is None else after - before


def memory() -> tuple[int | None, int | None]:
    """``(VmRSS, VmSize)`` of this process in bytes, from ``/proc/self/status``."""
    try:
        with open("/proc/self/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return None, None

    def kib(name: str) -> int | None:
        value = fields.get(name, "").split()
        return int(value[0]) * 1024 if value and value[0].isdigit() else None

    return kib("VmRSS"), kib("VmSize")


def _sweepers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if SWEEPER.fullmatch(t.name)}


def run(queues: int, *, closed: bool, join_bound: float = JOIN_BOUND) -> Figures:
    """Make ``queues`` queues one after the other, each receiving one message with a finite
    visibility timeout; close each (``closed``) or drop it unclosed; measure (module docstring)."""
    gc.collect()
    threads_before = threading.active_count()
    sweepers_before = _sweepers()
    rss_before, vm_before = memory()
    warned = 0

    def count(*args: object, **kwargs: object) -> None:
        # Counted, not recorded: a recorded warning keeps its source, the queue, alive.
        nonlocal warned
        warned += 1

    t0 = time.perf_counter()
    peak = threads_before
    with warnings.catch_warnings():
        warnings.simplefilter("always", ResourceWarning)
        warnings.showwarning = count
        for _ in range(queues):
            q: Queue[str] = Queue(visibility_timeout=VT)
            q.send(BODY)
            q.receive()
            peak = max(peak, threading.active_count())
            if closed:
                q.close()
        if queues:
            del q
        gc.collect()
        # The sweepers of collected queues are ending; give them a bounded time to.
        deadline = time.monotonic() + join_bound
        for t in _sweepers() - sweepers_before:
            t.join(max(0.0, deadline - time.monotonic()))
    seconds = time.perf_counter() - t0
    rss_after, vm_after = memory()
    return Figures(
        queues=queues,
        closed=closed,
        threads_before=threads_before,
        threads_peak=peak,
        threads_after=threading.active_count(),
        lingering=len(_sweepers() - sweepers_before),
        rss_before=rss_before,
        rss_after=rss_after,
        vm_before=vm_before,
        vm_after=vm_after,
        resource_warnings=warned,
        seconds=seconds,
    )


def run_fresh(queues: int, *, closed: bool) -> Figures:
    """:func:`run` in a fresh interpreter, so it starts from a clean heap."""
    root = Path(__file__).resolve().parent.parent
    which = "closed" if closed else "unclosed"
    cmd = [sys.executable, "-m", "bench.leak", "--queues", str(queues), "--only", which]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return Figures(**json.loads(proc.stdout))


def _mib(n: int | None) -> float | None:
    return None if n is None else n / MIB


def _signed_mib(n: int | None) -> str:
    return "-" if n is None else f"{n / MIB:+,.1f} MiB"


def rows(leak: Figures, base: Figures) -> list[Row]:
    """The report: each figure of the never-closed run beside the closed baseline's."""
    n = f"{leak.queues:,}"
    label = f"{base.queues:,} closed queues"
    out = [
        Row(
            "leak_threads_after",
            f"threads after {n} never-closed queues",
            "threads",
            leak.threads_after,
            label,
            base.threads_after,
            ratio(leak.threads_after, base.threads_after),
            target=f"= threads before ({leak.threads_before})",
            passed=leak.threads_after <= leak.threads_before,
            note=(
                f"before {leak.threads_before} (closed: {base.threads_before}); sweepers still"
                f" running after the {JOIN_BOUND:g} s join: {leak.lingering}"
                f" (closed: {base.lingering})"
            ),
        ),
        Row(
            "leak_threads_peak",
            f"most threads alive while making {n}",
            "threads",
            leak.threads_peak,
            label,
            base.threads_peak,
            ratio(leak.threads_peak, base.threads_peak),
            note="sampled after each queue's receive",
        ),
    ]
    if None not in (leak.rss_after, base.rss_after, leak.vm_after, base.vm_after):
        rss, base_rss = _mib(leak.rss_after), _mib(base.rss_after)
        vm, base_vm = _mib(leak.vm_after), _mib(base.vm_after)
        assert rss is not None and base_rss is not None and vm is not None and base_vm is not None
        growth, base_growth = leak.rss_growth, base.rss_growth
        assert growth is not None and base_growth is not None
        out += [
            Row(
                "leak_rss_after",
                f"VmRSS after {n} never-closed queues",
                "MiB",
                rss,
                label,
                base_rss,
                ratio(rss, base_rss),
                target=f"growth <= closed's + {RSS_SLACK // MIB} MiB",
                passed=growth <= base_growth + RSS_SLACK,
                note=(
                    f"before {_mib(leak.rss_before):,.1f} MiB, growth {_signed_mib(growth)}"
                    f" (closed: before {_mib(base.rss_before):,.1f} MiB,"
                    f" growth {_signed_mib(base_growth)})"
                ),
            ),
            Row(
                "leak_vmsize_after",
                f"VmSize after {n} never-closed queues",
                "MiB",
                vm,
                label,
                base_vm,
                ratio(vm, base_vm),
                note=(
                    f"before {_mib(leak.vm_before):,.1f} MiB, growth"
                    f" {_signed_mib(leak.vm_growth)} (closed: before"
                    f" {_mib(base.vm_before):,.1f} MiB, growth {_signed_mib(base.vm_growth)})"
                ),
            ),
        ]
    return out


def main(argv: list[str] | None = None) -> int:
    summary = (__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m bench.leak", description=summary)
    parser.add_argument("--queues", type=int, default=10_000, help="queues per run (default 10000)")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target fails")
    parser.add_argument(
        "--only",
        choices=["closed", "unclosed"],
        help="make one run in this process and print its figures as JSON (used internally)",
    )
    args = parser.parse_args(argv)
    if args.queues < 0:
        parser.error("--queues must be >= 0")
    if args.only is not None:
        print(json.dumps(asdict(run(args.queues, closed=args.only == "closed"))))
        return 0

    load_before = os.getloadavg()
    t0 = time.perf_counter()
    base = run_fresh(args.queues, closed=True)
    leak = run_fresh(args.queues, closed=False)
    seconds = time.perf_counter() - t0
    load_after = os.getloadavg()
    report = rows(leak, base)
    print(format_table(report))
    print()
    print(format_notes(report))
    print(
        f"- ResourceWarnings: {leak.resource_warnings:,} (closed: {base.resource_warnings:,});"
        f" run time {leak.seconds:.1f} s (closed: {base.seconds:.1f} s)"
    )
    print()
    print(
        f"{args.queues:,} queues per run, each run in a fresh interpreter, {seconds:.0f} s;"
        f" Python {platform.python_version()}, {os.cpu_count()} CPUs,"
        f" load average {load_before[0]:.2f} before, {load_after[0]:.2f} after"
    )
    failed = [r.key for r in report if r.passed is False]
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
