"""The rows of the benchmark report (``python -m bench``): one figure beside its baseline.

A :class:`Row` is one measured figure, the baseline measured beside it in the same run, their
ratio (always ``figure / baseline``, whichever way is better), and, for the figures that have
one, a target with its verdict. This module only formats rows, as a text table and as JSON; the
measuring is done by ``bench.cycle``, ``bench.state`` and ``bench.realtime``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Row:
    """One line of the report.

    ``value`` and ``baseline`` are ``None`` only when the row was skipped (an optional package is
    missing), and ``note`` then says what to install. ``passed`` is ``None`` when the row has no
    target.
    """

    key: str  # a stable name for scripts and tests, e.g. "cycle_4x4_vs_queue"
    name: str  # what was measured, for people
    unit: str
    value: float | None
    baseline_name: str
    baseline: float | None
    ratio: float | None
    target: str = ""  # e.g. "ratio >= 0.5"; empty when the row has no target
    passed: bool | None = None
    note: str = ""

    @property
    def skipped(self) -> bool:
        return self.value is None


def ratio(value: float, baseline: float) -> float:
    """``value / baseline``; infinite when the baseline is zero (a figure beside nothing)."""
    return value / baseline if baseline else math.inf


def fmt(value: float | None) -> str:
    """A figure with 3 significant digits, thousands separated; ``-`` for no figure."""
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def format_table(rows: list[Row]) -> str:
    """The rows as a Markdown table (it reads well in a terminal too)."""
    header = ["benchmark", "figure", "baseline (same run)", "ratio", "target", "result"]
    lines = [header]
    for r in rows:
        if r.skipped:
            lines.append([r.name, r.note, r.baseline_name, "-", r.target or "-", "skipped"])
            continue
        verdict = "-" if r.passed is None else ("PASS" if r.passed else "FAIL")
        lines.append(
            [
                r.name,
                f"{fmt(r.value)} {r.unit}",
                f"{fmt(r.baseline)} {r.unit} ({r.baseline_name})",
                "-" if r.ratio is None or math.isinf(r.ratio) else f"{fmt(r.ratio)}x",
                r.target or "-",
                verdict,
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for n, line in enumerate(lines):
        out.append("| " + " | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) + " |")
        if n == 0:
            out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(out)


def format_notes(rows: list[Row]) -> str:
    """The notes of the measured rows (how, and at what cost), one line each."""
    return "\n".join(f"- {r.name}: {r.note}" for r in rows if r.note and not r.skipped)


def to_json(rows: list[Row]) -> list[dict[str, Any]]:
    """The rows as JSON-ready dicts (infinite ratios become ``None``, which JSON can carry)."""
    out = []
    for r in rows:
        d = asdict(r)
        for k in ("value", "baseline", "ratio"):
            v = d[k]
            if isinstance(v, float) and not math.isfinite(v):
                d[k] = None
        d["skipped"] = r.skipped
        out.append(d)
    return out


def run_command(
    prog: str, doc: str | None, run: Callable[[bool], list[Row]], argv: list[str] | None
) -> int:
    """The command line of a benchmark module whose rows are ``run(quick)`` (``python -m
    bench.server``, ``python -m bench.http_stacks``): ``--quick`` and ``--json PATH``; prints
    the table, the notes and the run's context (its time, Python, CPUs, load before and after)."""
    parser = argparse.ArgumentParser(prog=prog, description=(doc or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    rows = run(args.quick)
    seconds = time.perf_counter() - t0
    load_after = os.getloadavg()
    print(format_table(rows))
    print()
    print(format_notes(rows))
    print()
    print(
        f"{'quick' if args.quick else 'full'} run, {seconds:.0f} s; Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs, load average "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(to_json(rows), indent=2) + "\n")
    return 0
