"""``python -m tools.docnumbers``: the numbers the reference pages quote, from the code and from
recorded runs, never typed by hand.

A page marks a number it quotes with a comment right after it, ``16,518<!-- =tlc.Queue.states
-->``: the word before the comment (digits, digits with commas, or a number word such as
``four``) must be the fact's value. A block it quotes whole sits between ``<!-- begin: KEY -->``
and ``<!-- end: KEY -->``. :func:`facts` and :func:`block` compute both:

- from the code: ``models.default`` (the models ``python -m tla`` runs), ``models.large``,
  ``models.teaching`` (the default models that must fail), ``targets`` (the classes in
  ``model_tests/`` that implement the harness's ``Target`` protocol), ``schedule.programs``
  (the controlled scheduler's programs), ``schedule.validated`` (those that
  ``model_tests/tests/test_schedule_trace.py`` validates with TLC), ``equivalence.bound_sets``
  (the bounds ``model_tests/tests/test_equivalence.py`` compares TLC's graph and the Python
  explorer's on), ``crosshair.contracts`` (the contracts of ``spec/contracts.py``),
  ``readme.orders`` (the reading orders of the README's
  "Start here");
- from the recorded TLC runs :data:`TLA_RUN` and :data:`TLA_LARGE_RUN` (what ``python -m tla
  --quiet`` printed, and ``--large``): ``tlc.MODEL.states``, ``tlc.MODEL.depth``,
  ``tlc.MODEL.seconds``, ``tlc.run.models``, ``tlc.run.seconds`` (the whole default run), and the
  block ``tlc MODEL MODEL ...`` (the table's header and those models' rows);
- from the recorded explorer run :data:`EXPLORE_RUN`: ``explore.states``,
  ``explore.transitions``, ``explore.depth``;
- from the recorded run :data:`INTERRUPTS_RUN`: ``interrupts.LOCK.FIELD`` for each field of
  ``python -m model_tests.interrupts``'s measurement of a ``Lock`` and an ``RLock``;
- from the recorded timings of the checks :data:`CHECKS_RUN` (``--record-checks``):
  ``checks.KEY.wall``, ``checks.KEY.cpu``, ``checks.KEY.tests`` for each key of :data:`CHECKS`;
- from the recorded mutation run :data:`MUTATION_RUN`: ``mutation.total``, ``mutation.killed``,
  ``mutation.timeout``, ``mutation.survived``, ``mutation.percent``, ``mutation.minutes``, ...
  (:func:`mutation_facts`), and ``mutation.first.*`` for the first full run;
- from the benchmarks: the sizes of a full ``python -m bench`` run (``bench.size.FIELD``, from
  ``bench.suite.FULL``); the recorded run :data:`BENCH_RUN` (``python -m bench --json``):
  ``bench.ROW.value``, ``.baseline``, ``.ratio`` of each measured row, as the report prints
  them (:func:`bench_facts`), and the block ``bench-run`` (its table, notes and context line);
  the recorded floor run :data:`FLOOR_RUN` (``python -m bench.floor --json``, printed in
  :data:`FLOOR_TEXT`): ``floor.*`` (:func:`floor_facts`); the recorded instruction counts
  :data:`ICOUNT_RUN`: ``icount.PROGRAM.base``, ``.this``, ``.ratio`` (:func:`icount_facts`).

    python -m tools.docnumbers            # rewrite every marked number and block in docs/
    python -m tools.docnumbers --check    # write nothing; list what differs, exit 1 if any
    python -m tools.docnumbers --record-checks   # re-time the checks (a few minutes)

After a new TLC run, save its output over the recorded file (``python -m tla --quiet >
docs/runs/tla.txt``, keeping the header lines) and run the first command.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
DOCS: Final = ROOT / "docs"
#: The recorded default TLC run: ``python -m tla --quiet``'s output, under ``#`` header lines.
TLA_RUN: Final = DOCS / "runs" / "tla.txt"
#: The recorded run of the ``*.large.cfg`` models.
TLA_LARGE_RUN: Final = DOCS / "runs" / "tla-large.txt"
#: The recorded run of the Python explorer on ``Queue.cfg``'s bounds (``python -m spec explore``).
EXPLORE_RUN: Final = DOCS / "runs" / "spec-explore.txt"
#: The recorded result of the last mutation run (``scripts/mutation``'s summary).
MUTATION_RUN: Final = DOCS / "runs" / "mutation.json"

#: The recorded run of ``python -m bench --json`` that ``docs/benchmarks.md`` quotes.
BENCH_RUN: Final = DOCS / "bench" / "bench.json"
#: The recorded run of ``python -m bench.floor --json`` (the floor queue beside ``impl.Queue``).
FLOOR_RUN: Final = DOCS / "bench" / "floor.json"
#: What that run printed.
FLOOR_TEXT: Final = DOCS / "runs" / "floor.txt"
#: The recorded run of ``python -m bench.icount --base REV``.
ICOUNT_RUN: Final = DOCS / "runs" / "icount.txt"

#: The recorded run of ``python -m model_tests.interrupts`` (signals in a condition's wait).
INTERRUPTS_RUN: Final = DOCS / "runs" / "interrupts.txt"
#: The recorded timings of the checks of ``docs/mutation.md``'s table (``--record-checks``).
CHECKS_RUN: Final = DOCS / "runs" / "checks.txt"
#: The checks ``--record-checks`` times, by key: each a pytest command line.
CHECKS: Final = {
    "tla_runner": ["tests/test_tla.py"],
    "equivalence": ["model_tests/tests/test_equivalence.py"],
    "explore": ["tests/test_explore.py"],
    "crosshair_scripts": ["tests/test_spec_crosshair.py"],
    "spec_properties": ["tests/test_spec_properties.py"],
    "lockstep": ["model_tests/tests/test_lockstep.py"],
    "differential": ["model_tests/tests/test_differential.py"],
    "harness": ["model_tests/tests/test_harness.py"],
    "races": ["model_tests/tests/test_races.py"],
    "linearizability": ["model_tests/tests/test_linearizability.py"],
    "concurrent": ["model_tests/tests/test_concurrent.py"],
    "mutants": ["model_tests/tests/test_mutants.py"],
    "bench_quick": ["tests/test_bench.py"],
}

#: A marked number: the word before the comment, and the fact's key.
MARK: Final = re.compile(r"([\w.,-]+)<!-- =([\w.-]+) -->")
#: A generated block: its key and its text.
BLOCK: Final = re.compile(r"<!-- begin: (.+?) -->(.*?)<!-- end: \1 -->", re.DOTALL)

_WORDS: Final = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS: Final = [
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
]


def number_word(n: int) -> str:
    """``n`` (0 to 99) in English words: ``27`` is ``twenty-seven``."""
    if not 0 <= n < 100:
        raise ValueError(f"number_word: n must be 0 to 99, got {n}")
    if n < 20:
        return _WORDS[n]
    tens, ones = divmod(n, 10)
    return _TENS[tens - 2] + ("" if ones == 0 else f"-{_WORDS[ones]}")


def _word_value(word: str) -> int | None:
    for n in range(100):
        if number_word(n) == word.lower():
            return n
    return None


@dataclass(frozen=True)
class Row:
    """One model's line of a recorded TLC run's table."""

    model: str
    #: model, expected, actual, distinct states, depth, seconds.
    cells: tuple[str, str, str, str, str, str]
    states: str
    depth: str
    seconds: str


@dataclass(frozen=True)
class Run:
    """A recorded ``python -m tla --quiet`` run: its table's rows, and the whole run's model
    count and seconds (the runner's last line)."""

    rows: dict[str, Row]
    models: int
    seconds: str


def read_run(path: Path) -> Run:
    """The recorded run in ``path``; ``ValueError`` naming the file if it has no table."""
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    starts = [k for k, line in enumerate(lines) if line.startswith("model ")]
    if len(starts) != 1 or not lines[starts[0] + 1].startswith("---"):
        raise ValueError(f"{path}: no table of `python -m tla --quiet` found")
    at = starts[0]
    rows: dict[str, Row] = {}
    for line in lines[at + 2 :]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) < 6:
            raise ValueError(f"{path}: a table row with {len(cells)} cells: {line!r}")
        six = (cells[0], cells[1], cells[2], cells[3], cells[4], cells[5])
        rows[cells[0]] = Row(cells[0], six, cells[3], cells[4], cells[5])
    total = re.search(
        r"^(\d+) models in ([\d.]+) s: every outcome as expected$", "\n".join(lines), re.M
    )
    if total is None:
        raise ValueError(f"{path}: no line 'N models in S s: every outcome as expected'")
    return Run(rows, int(total.group(1)), total.group(2))


_HEAD: Final = ("model", "expected", "actual", "distinct states", "depth", "seconds")


def _table(rows: list[tuple[str, ...]]) -> str:
    """``rows`` laid out as ``python -m tla`` prints its table (numbers to the right)."""
    widths = [max(len(r[k]) for r in [_HEAD, *rows]) for k in range(len(_HEAD))]

    def line(row: tuple[str, ...]) -> str:
        cells = [
            c.rjust(w) if k >= 3 else c.ljust(w)
            for k, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    return "\n".join([line(_HEAD), "  ".join("-" * w for w in widths), *map(line, rows)])


@cache
def _runs() -> tuple[Run, Run]:
    return read_run(TLA_RUN), read_run(TLA_LARGE_RUN)


def _python_sources(package: Path) -> Iterable[tuple[Path, ast.Module]]:
    for path in sorted(package.rglob("*.py")):
        if "tests" not in path.relative_to(package).parts:
            yield path, ast.parse(path.read_text())


def _methods(cls: ast.ClassDef) -> set[str]:
    return {f.name for f in cls.body if isinstance(f, ast.FunctionDef)}


def target_classes() -> list[str]:
    """The classes of ``model_tests/`` (its tests aside) that define every method of the
    ``Target`` protocol of ``model_tests/targets.py``."""
    classes = [
        c
        for _, tree in _python_sources(ROOT / "model_tests")
        for c in ast.walk(tree)
        if isinstance(c, ast.ClassDef)
    ]
    (protocol,) = [c for c in classes if c.name == "Target"]
    wanted = _methods(protocol)
    return sorted(c.name for c in classes if c is not protocol and wanted <= _methods(c))


def _literal_len(path: Path, name: str) -> int:
    """How many items the module-level literal ``name = (...)``, ``[...]`` or ``{...}`` of
    ``path`` has (read, not imported: ``path`` may be a test module)."""
    for node in ast.parse(path.read_text()).body:
        target: ast.expr | None = None
        if isinstance(node, ast.AnnAssign):
            target = node.target
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id == name:
            if isinstance(value, ast.Tuple | ast.List | ast.Set):
                return len(value.elts)
            if isinstance(value, ast.Dict):
                return len(value.keys)
    raise ValueError(f"{path}: no literal {name}")


def read_explore(path: Path) -> dict[str, str]:
    """The ``states``, ``transitions`` and ``depth`` lines of a recorded ``python -m spec
    explore`` run."""
    found = dict(re.findall(r"^(states|transitions|depth):\s+(\d+)$", path.read_text(), re.M))
    if set(found) != {"states", "transitions", "depth"}:
        raise ValueError(f"{path}: not the output of `python -m spec explore`")
    return found


def reduction_table(path: Path) -> str:
    """The table of a recorded reduction run: per program, its schedules (and seconds) at
    bound 1 with the reductions and with ``--all-points``, and the ratio of the two counts.
    ``path`` holds lines ``reduced<TAB>ROW`` and ``all-points<TAB>ROW``, each ROW a row of
    ``python -m model_tests.schedule --program P --preemptions 1 [--all-points]``."""
    found: dict[str, dict[str, tuple[int, str]]] = {}
    for line in path.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        mode, row = line.split("\t")
        cells = [c.strip() for c in row.strip("|").split("|")]
        found.setdefault(cells[0], {})[mode] = (int(cells[4]), cells[5])
    rows = ["| program | reduced | `--all-points` | ratio |", "|---|---:|---:|---:|"]
    for program, modes in found.items():
        (n, s), (m, u) = modes["reduced"], modes["all-points"]
        rows.append(f"| {program} | {n:,} ({s} s) | {m:,} ({u} s) | {m / n:.1f} |")
    return "\n".join(rows)


def crosshair_contracts() -> list[str]:
    """The contracts of ``spec/contracts.py`` (its functions named ``*_contract``), in order."""
    text = (ROOT / "spec/contracts.py").read_text()
    return re.findall(r"^def (\w+_contract)\(", text, flags=re.MULTILINE)


def readme_orders() -> list[str]:
    """The reading orders of the README's "Start here": its paragraphs that open with a bold
    ``**To ...**``."""
    text = (ROOT / "README.md").read_text()
    section = text.partition("\n## Start here\n")[2].partition("\n## ")[0]
    return re.findall(r"^\*\*(To [^*]+?)\*\*", section, flags=re.MULTILINE)


def record_checks(out: Callable[[str], None]) -> str:
    """Run each of :data:`CHECKS` alone (``python -m pytest -q``) and return the record: one
    line per check, its key, the wall seconds, the CPU seconds (user + system of pytest and of
    the child processes it waited for, TLC's JVM among them) and pytest's summary line."""
    lines = [
        "# python -m tools.docnumbers --record-checks: each check alone, `pytest -q FILE`",
        f"# recorded {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} at commit "
        + subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
        ).stdout.strip()
        + f", load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores",
        "# key\twall s\tcpu s\tpytest's summary",
    ]
    for key, files in CHECKS.items():
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        summary = (proc.stdout.strip().splitlines() or [""])[-1].strip("= ")
        lines.append(f"{key}\t{wall:.1f}\t{cpu:.1f}\t{summary}")
        out(lines[-1])
    return "\n".join(lines) + "\n"


def mutation_facts(record: dict[str, object]) -> dict[str, str]:
    """The facts of a mutation record: its numbers (``first.killed`` for the nested
    ``first``), and for the run and its ``first``: ``survived`` (total - killed) and
    ``percent`` (killed / total); ``other_killed``: total - equivalent."""
    out: dict[str, str] = {}
    runs = {"mutation": record, "mutation.first": record.get("first", {})}
    for prefix, run in runs.items():
        assert isinstance(run, dict), f"{MUTATION_RUN}: {prefix} is not an object"
        for key, value in run.items():
            if isinstance(value, int):
                out[f"{prefix}.{key}"] = str(value)
    total = int(out["mutation.total"])
    for prefix in runs:
        killed = int(out[f"{prefix}.killed"])
        out[f"{prefix}.survived"] = str(total - killed)
        out[f"{prefix}.percent"] = f"{100 * killed / total:.1f}"
    out["mutation.other_killed"] = str(total - int(out["mutation.equivalent"]))
    return out


def _figure(value: float) -> str:
    """``value`` as ``python -m bench``'s report prints it (3 significant digits), no commas."""
    from bench.report import fmt

    return fmt(value).replace(",", "")


def bench_facts(record: dict[str, Any]) -> dict[str, str]:
    """The facts of a recorded ``python -m bench --json`` run: each measured row's value,
    baseline and ratio, and each judged row's verdict (``PASS``, ``FAIL``, ``-`` if skipped);
    the run's repeat, seconds and load; ``bench.convoy.impl`` and
    ``bench.convoy.queue``, how many times faster each queue ran at 4/4 threads pinned to one
    CPU than on every CPU (one decimal)."""
    out = {
        "bench.run.repeat": str(record["repeat"]),
        "bench.run.seconds": f"{record['seconds']:.0f}",
        "bench.run.cpus": str(record["cpus"]),
        "bench.run.load_before": f"{record['load_before'][0]:.2f}",
        "bench.run.load_after": f"{record['load_after'][0]:.2f}",
    }
    rows = {row["key"]: row for row in record["rows"]}
    for key, row in rows.items():
        if not row["skipped"]:
            for field in ("value", "baseline", "ratio"):
                out[f"bench.{key}.{field}"] = _figure(row[field])
        if row.get("target"):
            # The run's own verdict, so a page never types PASS or FAIL by hand.
            passed = row.get("passed")
            out[f"bench.{key}.verdict"] = "-" if passed is None else "PASS" if passed else "FAIL"
    two, one = rows["cycle_4x4_vs_queue"], rows["cycle_4x4_one_cpu_vs_queue"]
    out["bench.convoy.impl"] = f"{one['value'] / two['value']:.1f}"
    out["bench.convoy.queue"] = f"{one['baseline'] / two['baseline']:.1f}"
    return out


def bench_block(record: dict[str, Any]) -> str:
    """The recorded run as ``python -m bench`` printed it: the table, the notes, the context."""
    from bench.report import Row, format_notes, format_table

    rows = [Row(**{k: v for k, v in r.items() if k != "skipped"}) for r in record["rows"]]
    context = (
        f"{'quick' if record['quick'] else 'full'} run, median of {record['repeat']}, "
        f"{record['seconds']:.0f} s; Python {record['python']}, {record['cpus']} CPUs, "
        f"load average {record['load_before'][0]:.2f} before, "
        f"{record['load_after'][0]:.2f} after"
    )
    return f"\n{format_table(rows)}\n\n{format_notes(rows)}\n\n{context}\n\n"


#: The floor run's workloads, by the short name of their facts.
FLOOR_RUNS: Final = {
    "one_thread": "one_thread",
    "1x1": "one_cpu_1x1",
    "4x4": "one_cpu_4x4",
    "batch": "one_cpu_4x4_batch",
}
FLOOR_SYSTEMS: Final = {
    "queue": "queue.Queue",
    "floor": "floor",
    "obliged": "obliged floor",
    "machine": "obliged machine",
    "impl": "impl.Queue",
}


#: How cProfile names a builtin function of the ``builtins`` module.
BUILTIN: Final = "<built-in method builtins."


def floor_facts(record: dict[str, Any]) -> dict[str, str]:
    """The facts of a recorded ``python -m bench.floor --json`` run, rounded as it prints them:
    ``floor.RUN.SYSTEM`` (cycles or messages per second) and ``floor.RUN.SYSTEM.ratio`` (to
    ``queue.Queue``, two decimals) for RUN in ``one_thread``, ``1x1``, ``4x4``, ``batch`` and
    SYSTEM in ``queue``, ``floor``, ``obliged``, ``machine`` (the obliged machine: not in
    ``batch``), ``impl``; ``floor.RUN.S_floor`` for S in ``obliged``, ``machine``, ``impl``
    (its best over the floor's best), and round by round ``floor.RUN.S_floor.STAT`` (STAT in
    ``median``, ``min``, ``max``: ``bench.floor.paired``); ``floor.memory.floor``,
    ``floor.memory.impl``, ``floor.part.NAME`` (bytes, one decimal: ``record``, ``receipt``,
    ``timer``, ``id``, ...) and ``floor.parts.sum``; ``floor.profile.FUNCTION``, the percent
    of own time of each ``impl/`` function profiled (``floor.profile.builtin.NAME`` of a
    builtin); ``floor.op.SYSTEM.OP`` (microseconds, three decimals, OP in ``send``,
    ``receive``, ``delete`` and ``sum``; SYSTEM in ``floor``, ``obliged``, ``machine``,
    ``impl`` and the differences of ``bench.floor.DIFFERENCES``, ``design``, ``shape`` and
    ``own``, which the run prints signed); ``floor.n``, ``floor.repeat``."""
    from bench.floor import DIFFERENCES, paired

    out = {"floor.n": str(record["n"]), "floor.repeat": str(record["repeat"])}
    for short, name in FLOOR_RUNS.items():
        rates = record[name]
        for system, full in FLOOR_SYSTEMS.items():
            if full not in rates:
                continue  # the obliged machine has no batch steps
            out[f"floor.{short}.{system}"] = f"{rates[full]:.0f}"
            out[f"floor.{short}.{system}.ratio"] = f"{rates[full] / rates['queue.Queue']:.2f}"
            if system not in ("queue", "floor"):
                out[f"floor.{short}.{system}_floor"] = f"{rates[full] / rates['floor']:.2f}"
                for stat, value in paired(record["rounds"][name], full).items():
                    out[f"floor.{short}.{system}_floor.{stat}"] = f"{value:.2f}"
    per_op: dict[str, dict[str, float]] = record["per_op"]
    for system, full in FLOOR_SYSTEMS.items():
        if full in per_op:
            for op, us in per_op[full].items():
                out[f"floor.op.{system}.{op}"] = f"{us:.3f}"
            out[f"floor.op.{system}.sum"] = f"{sum(per_op[full].values()):.3f}"
    for what, (_, minuend, subtrahend) in DIFFERENCES.items():
        d = {op: us - per_op[subtrahend][op] for op, us in per_op[minuend].items()}
        for op, us in d.items():
            out[f"floor.op.{what}.{op}"] = f"{us:.3f}"
        out[f"floor.op.{what}.sum"] = f"{sum(d.values()):.3f}"
    out["floor.memory.floor"] = f"{record['memory']['floor']:.1f}"
    out["floor.memory.impl"] = f"{record['memory']['impl.Queue']:.1f}"
    parts: dict[str, float] = record["impl_parts"]
    for part, size in parts.items():
        out[f"floor.part.{part.split()[0]}"] = f"{size:.1f}"
    out["floor.parts.sum"] = f"{sum(parts.values()):.1f}"
    for function, share in record["profile"]:
        if function.startswith("impl/"):
            out[f"floor.profile.{function.rpartition(':')[2]}"] = f"{100 * share:.1f}"
        elif function.startswith(BUILTIN):
            # A builtin's own time (``len``, ``time.monotonic``) as
            # ``floor.profile.builtin.NAME``.
            name = function.removeprefix(BUILTIN).rstrip(">")
            out[f"floor.profile.builtin.{name}"] = f"{100 * share:.1f}"
    return out


def icount_facts(path: Path) -> dict[str, str]:
    """The instruction counts of a recorded ``python -m bench.icount`` run: per program, the
    base revision's count, the tree's and their ratio."""
    out: dict[str, str] = {}
    for program, base, this, ratio in re.findall(
        r"^(\w+)\s+([\d,]+)\s+([\d,]+)\s+([\d.]+)$", path.read_text(), re.M
    ):
        out[f"icount.{program}.base"] = base.replace(",", "")
        out[f"icount.{program}.this"] = this.replace(",", "")
        out[f"icount.{program}.ratio"] = ratio
    if not out:
        raise ValueError(f"{path}: not the output of `python -m bench.icount`")
    return out


def bench_size_facts() -> dict[str, str]:
    """The sizes of a full ``python -m bench`` run (``bench.suite.FULL``), ints as digits,
    seconds as ``:g`` (``bench.size.vt_ms`` in milliseconds), ``bench.size.settle``; the limit
    of each target of ``bench.suite.TARGETS`` (``target.ROW``); and ``python -m bench.leak``'s
    ``bench.leak.join_bound`` (seconds) and ``bench.leak.rss_slack_mib``."""
    from dataclasses import fields

    from bench.leak import JOIN_BOUND, MIB, RSS_SLACK
    from bench.realtime import SETTLE
    from bench.suite import FULL, TARGETS

    out: dict[str, str] = {}
    for field in fields(FULL):
        value = getattr(FULL, field.name)
        if isinstance(value, float):
            out[f"bench.size.{field.name}"] = f"{value:g}"
        elif isinstance(value, int):
            out[f"bench.size.{field.name}"] = str(value)
    out["bench.size.vt_ms"] = f"{FULL.vt * 1000:g}"
    out["bench.size.in_flight.first"] = str(FULL.in_flight[0])
    out["bench.size.in_flight.last"] = str(FULL.in_flight[-1])
    out["bench.size.settle"] = f"{SETTLE:g}"
    out |= {f"target.{key}": f"{t.limit:g}" for key, t in TARGETS.items()}
    out["bench.leak.join_bound"] = f"{JOIN_BOUND:g}"
    out["bench.leak.rss_slack_mib"] = f"{RSS_SLACK / MIB:g}"
    return out


@cache
def facts() -> dict[str, str]:
    """Every fact a page may quote, by key, as its digits (seconds with one decimal)."""
    from model_tests.schedule.programs import PROGRAMS
    from tla.models import discover

    default = discover()
    large = [m for m in discover(large=True) if m.large]
    out = {
        "models.default": str(len(default)),
        "models.large": str(len(large)),
        "models.teaching": str(sum(m.expect == "violation" for m in default)),
        "targets": str(len(target_classes())),
        "schedule.programs": str(len(PROGRAMS)),
        "readme.orders": str(len(readme_orders())),
        "crosshair.contracts": str(len(crosshair_contracts())),
        "schedule.validated": str(
            _literal_len(ROOT / "model_tests/tests/test_schedule_trace.py", "VALIDATED")
        ),
        "equivalence.bound_sets": str(
            _literal_len(ROOT / "model_tests/tests/test_equivalence.py", "BOUNDS")
        ),
    }
    out |= {f"explore.{k}": v for k, v in read_explore(EXPLORE_RUN).items()}
    for lock, fields in re.findall(r"lock='(\w+)', (.*)\)", INTERRUPTS_RUN.read_text()):
        for key, value in re.findall(r"(\w+)=(\d+)", fields):
            out[f"interrupts.{lock}.{key}"] = value
    run, large_run = _runs()
    out["tlc.run.models"] = str(run.models)
    out["tlc.run.seconds"] = run.seconds
    out["tlc.large.seconds"] = large_run.seconds
    for row in [*run.rows.values(), *large_run.rows.values()]:
        out[f"tlc.{row.model}.states"] = row.states
        out[f"tlc.{row.model}.depth"] = row.depth
        out[f"tlc.{row.model}.seconds"] = row.seconds
    for line in CHECKS_RUN.read_text().splitlines():
        if line.startswith("#"):
            continue
        key, wall, cpu, summary = line.split("\t")
        out[f"checks.{key}.wall"] = wall
        out[f"checks.{key}.cpu"] = cpu
        passed = re.search(r"(\d+) passed", summary)
        if passed:
            out[f"checks.{key}.tests"] = passed.group(1)
    out |= mutation_facts(json.loads(MUTATION_RUN.read_text()))
    out |= bench_facts(json.loads(BENCH_RUN.read_text()))
    out |= floor_facts(json.loads(FLOOR_RUN.read_text()))
    out |= icount_facts(ICOUNT_RUN)
    out |= bench_size_facts()
    return out


def block(key: str) -> str:
    """The text of the generated block ``key``: ``tlc MODEL ...`` is a fenced table of the
    recorded runs' rows of those models; ``file NAME`` the recorded run ``docs/runs/NAME``
    without its ``#`` header lines; ``reduction`` the table of :func:`reduction_table`;
    ``crosshair-contracts`` the contracts' names;
    ``readme-orders`` the README's reading orders; ``bench-run`` the recorded benchmark run
    (:func:`bench_block`)."""
    name, *args = key.split()
    if name == "tlc":
        run, large_run = _runs()
        rows = {**run.rows, **large_run.rows}
        unknown = [m for m in args if m not in rows]
        if unknown or not args:
            raise KeyError(f"block {key!r}: no recorded row for {unknown or 'any model'}")
        return "\n```\n" + _table([rows[m].cells for m in args]) + "\n```\n"
    if name == "file" and len(args) == 1 and "/" not in args[0]:
        path = DOCS / "runs" / args[0]
        if not path.is_file():
            raise KeyError(f"block {key!r}: no recorded run {path.relative_to(ROOT)}")
        text = path.read_text()
        return "\n" + "\n".join(x for x in text.splitlines() if not x.startswith("#")) + "\n\n"
    if name == "reduction" and not args:
        path = DOCS / "runs" / "schedule-reduction.txt"
        if not path.is_file():
            raise KeyError(f"block {key!r}: no recorded run {path.relative_to(ROOT)}")
        return "\n" + reduction_table(path) + "\n\n"
    if name == "crosshair-contracts" and not args:
        return ", ".join(f"`{c}`" for c in crosshair_contracts())
    if name == "bench-run" and not args:
        return bench_block(json.loads(BENCH_RUN.read_text()))
    if name == "readme-orders" and not args:
        return "; ".join(o[0].lower() + o[1:] for o in readme_orders())
    raise KeyError(f"no generated block named {key!r}")


def _same(word: str, value: str) -> bool:
    as_word = _word_value(word)
    if as_word is not None:
        return str(as_word) == value
    return word.replace(",", "") == value


def _render(word: str, value: str) -> str:
    """``value`` written as ``word`` is: in words, with thousands commas, or as digits."""
    if _word_value(word) is not None and value.isdigit() and int(value) < 100:
        return number_word(int(value))
    if "," in word and value.isdigit():
        return f"{int(value):,}"
    return value


def problems(text: str, known: dict[str, str]) -> list[str]:
    """What differs in ``text``: each marked number that is not its fact, each unknown key,
    each stale block."""
    found = []
    for m in MARK.finditer(text):
        word, key = m.groups()
        if key not in known:
            found.append(f"{word}: no fact {key!r}")
        elif not _same(word, known[key]):
            found.append(f"{word}: {key} is {known[key]}")
    for m in BLOCK.finditer(text):
        try:
            want = block(m.group(1))
        except KeyError as e:
            found.append(str(e))
            continue
        if m.group(2) != want:
            found.append(f"block {m.group(1)!r} is stale")
    return found


def rewrite(text: str, known: dict[str, str]) -> str:
    """``text`` with every marked number and block regenerated (unknown keys left as they
    are)."""

    def number(m: re.Match[str]) -> str:
        word, key = m.groups()
        value = known.get(key)
        return m.group(0) if value is None else f"{_render(word, value)}<!-- ={key} -->"

    def generated(m: re.Match[str]) -> str:
        try:
            return f"<!-- begin: {m.group(1)} -->{block(m.group(1))}<!-- end: {m.group(1)} -->"
        except KeyError:
            return m.group(0)

    return BLOCK.sub(generated, MARK.sub(number, text))


def pages() -> list[Path]:
    """The pages whose numbers are checked: every Markdown page of ``docs/`` and the
    contributors' guide (the README and the changelog quote none)."""
    return [*sorted(DOCS.glob("*.md")), ROOT / "CONTRIBUTING.md"]


def main(argv: list[str] | None = None, out: Callable[[str], None] = print) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.docnumbers", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a page differs"
    )
    parser.add_argument(
        "--record-checks",
        action="store_true",
        help=f"time each check of docs/mutation.md's table into {CHECKS_RUN.relative_to(ROOT)}",
    )
    args = parser.parse_args(argv)
    if args.record_checks:
        CHECKS_RUN.write_text(record_checks(out))
        return 0
    known = facts()
    bad = 0
    for page in pages():
        text = page.read_text()
        if args.check:
            for problem in problems(text, known):
                out(f"{page.relative_to(ROOT)}: {problem}")
                bad += 1
        else:
            new = rewrite(text, known)
            if new != text:
                page.write_text(new)
                out(f"rewrote {page.relative_to(ROOT)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
