"""Benchmarks of ``impl.Queue``, each figure beside a baseline measured in the same run.

This module is the suite: the sizes, the targets, every row of the report, and the command line
that ``python -m bench`` runs:

    python -m bench                      # full run, about 6 minutes on 2 cores
    python -m bench --quick              # small sizes, a few seconds (the test's mode)
    python -m bench --json docs/bench/bench.json --plot docs/bench/bench.png

Prints one table: the figure, its baseline, their ratio (always figure / baseline) and, where
the project sets one, the target with PASS or FAIL. Each figure is the median of ``--repeat``
runs; the runs of a figure and of its baseline are interleaved, so background load hits both.
The optional baselines (persist-queue, moto) are skipped with a note when not installed.
``--check`` makes the exit status 1 when a target fails (the default is 0: a benchmark on a
shared machine reports, it does not gate).

The batch rows move messages ten at a time through 4 producers and 4 consumers and
compare messages per second with ``queue.Queue``'s one put and one get per message. The rows
"vs the floor queue" put ``impl.Queue`` beside ``bench.floor.FloorQueue``, the least queue with
these semantics, each pinned to one CPU (``bench.floor``, also ``python -m bench.floor``), and
beside it the obliged floor, the floor plus each test and step the contract obliges any
implementation to make per message: the ratio no design can pass. The last
rows are the asyncio driver's beside ``asyncio.Queue`` (``bench.aio``, also ``python -m
bench.aio``), then the SQS endpoint's beside moto's server, through one boto3 client
(``bench.server``, also ``python -m bench.server``; its own repeats, about a minute).

What each figure means, and how it is measured, is in ``bench.cycle``,
``bench.state`` and ``bench.realtime``; ``docs/benchmarks.md`` has a recorded run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from bench import aio as bench_aio
from bench import cycle as bench_cycle
from bench import floor as bench_floor
from bench import plot as bench_plot
from bench import realtime as bench_realtime
from bench import server as bench_server
from bench import state as bench_state
from bench.report import Row, format_notes, format_table, ratio, to_json


@dataclass(frozen=True)
class Sizes:
    """How much work each benchmark does."""

    cycles: int  # messages per throughput run of impl.Queue and queue.Queue
    pq_cycles: int  # ... of persist-queue (SQLite is slower)
    moto_cycles: int  # ... of moto (HTTP-shaped calls, milliseconds each)
    threads: tuple[tuple[int, int], ...]
    in_flight: tuple[int, ...]  # loads for the time-per-cycle curve; first and last are compared
    window: int  # cycles per timed window at each load
    expiry: int
    memory: int
    idle_in_flight: int
    idle_receivers: int
    idle_window: float  # seconds; figures are scaled to CPU per 2 s
    redeliveries: int
    vt: float  # visibility timeout of the redelivery benchmark, seconds
    batch_messages: int  # messages per batch-throughput run (and per run of its baseline)
    aio_cycles: int  # messages per asyncio cycle run (impl.AsyncQueue and asyncio.Queue)
    aio_thread_cycles: int  # ... against impl.Queue through asyncio.to_thread (a thread hop each)
    aio_batch_messages: int  # messages per asyncio batch run
    aio_waiters: int  # receiver tasks waiting at once (idle CPU, wake order, memory)
    server_quick: bool  # the SQS endpoint's rows at bench.server's quick sizes


FULL = Sizes(
    cycles=24_000,
    pq_cycles=2_400,
    moto_cycles=240,
    threads=((1, 1), (4, 4), (8, 8)),
    in_flight=(1_000, 10_000, 100_000, 1_000_000),
    window=20_000,
    expiry=100_000,
    memory=100_000,
    idle_in_flight=10_000,
    idle_receivers=8,
    idle_window=2.0,
    redeliveries=200,
    vt=0.01,
    batch_messages=48_000,
    aio_cycles=24_000,
    aio_thread_cycles=2_400,
    aio_batch_messages=24_000,
    aio_waiters=10_000,
    server_quick=False,
)

QUICK = replace(
    FULL,
    cycles=1_600,
    pq_cycles=160,
    moto_cycles=16,
    in_flight=(1_000, 10_000),
    window=2_000,
    expiry=5_000,
    memory=5_000,
    idle_in_flight=1_000,
    idle_window=0.25,
    redeliveries=20,
    batch_messages=1_600,
    aio_cycles=1_600,
    aio_thread_cycles=160,
    aio_batch_messages=1_600,
    aio_waiters=1_000,
    server_quick=True,
)

#: The batch rows' threads: 4 producers, 4 consumers.
BATCH_THREADS = (4, 4)

#: The two systems every throughput row compares, plus the optional baselines by import name.
IMPL = "impl.Queue"
STDLIB = "queue.Queue"
PERSIST = "persist-queue"
MOTO = "moto SQS"


@dataclass(frozen=True)
class Target:
    """A goal for one row: ``what`` (its ratio or its value) ``op`` ``limit``."""

    what: str  # "ratio" or "value"
    op: str  # ">=" or "<="
    limit: float
    text: str

    def met(self, row: Row) -> bool | None:
        x = row.ratio if self.what == "ratio" else row.value
        if x is None:
            return None
        return x >= self.limit if self.op == ">=" else x <= self.limit


#: The project's targets, by row key (docs/benchmarks.md).
TARGETS = {
    "cycle_4x4_vs_queue": Target("ratio", ">=", 0.5, "ratio >= 0.5"),
    "cycle_4x4_vs_moto": Target("ratio", ">=", 10.0, "ratio >= 10"),
    "batch_4x4_vs_queue": Target("ratio", ">=", 0.4, "ratio >= 0.4"),
    # Beside the floor queue (bench.floor: the least queue with these semantics), each pinned
    # to one CPU: what the design costs over the semantics.
    "cycle_1x1_one_cpu_vs_floor": Target("ratio", ">=", 0.8, "ratio >= 0.8"),
    "cycle_4x4_one_cpu_vs_floor": Target("ratio", ">=", 0.8, "ratio >= 0.8"),
    "batch_4x4_one_cpu_vs_floor": Target("ratio", ">=", 0.8, "ratio >= 0.8"),
    "memory_in_flight_vs_floor": Target("ratio", "<=", 1.3, "ratio <= 1.3"),
    "cycle_time_largest": Target("ratio", "<=", 1.5, "ratio <= 1.5"),
    "idle_cpu": Target("value", "<=", 10.0, "< 10 ms per 2 s"),
    "redelivery_median": Target("value", "<=", 2.0, "< 2 ms"),
    # The asyncio driver's send + receive + delete against asyncio.Queue's put + get.
    "aio_1x1_vs_asyncio": Target("ratio", ">=", 0.3, "ratio >= 0.3"),
}


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _median(xs: list[float]) -> float:
    return statistics.median(xs)


def row(
    key: str, name: str, unit: str, value: float, label: str, base: float, note: str = ""
) -> Row:
    """A measured row: ``value`` beside the baseline ``base`` (named ``label``), and their ratio."""
    return Row(key, name, unit, value, label, base, ratio(value, base), note=note)


def throughput(sizes: Sizes, repeat: int) -> tuple[list[Row], dict[str, list[float | None]]]:
    """Cycle throughput rows for every thread configuration, and the series for the plot."""
    pq = bench_cycle.optional("persistqueue")
    moto, boto3 = bench_cycle.optional("moto"), bench_cycle.optional("boto3")
    systems: dict[str, Callable[[int, int], float] | None] = {
        IMPL: lambda p, c: bench_cycle.impl_queue(sizes.cycles, p, c),
        STDLIB: lambda p, c: bench_cycle.stdlib_queue(sizes.cycles, p, c),
        PERSIST: None
        if pq is None
        else lambda p, c: bench_cycle.persist_queue(pq, sizes.pq_cycles, p, c),
        MOTO: None
        if moto is None or boto3 is None
        else lambda p, c: bench_cycle.moto_sqs(moto, boto3, sizes.moto_cycles, p, c),
    }
    runs: dict[tuple[str, tuple[int, int]], list[float]] = {}
    one_cpu_runs: dict[tuple[str, tuple[int, int]], list[float]] = {}
    # An optional baseline that fails (moto under 4 threads has answered a delete with
    # ReceiptHandleIsInvalid, or lost messages) gets skipped rows saying why; the run goes on.
    failed: dict[str, str] = {}
    pinned = False
    for r in range(repeat):
        for config in sizes.threads:
            progress(f"  throughput {config[0]}/{config[1]} threads, run {r + 1}/{repeat}")
            for name, run in systems.items():
                if run is None or name in failed:
                    continue
                try:
                    value = run(*config)
                except Exception as e:
                    if name in (IMPL, STDLIB):
                        raise
                    failed[name] = f"{type(e).__name__} at {config[0]}/{config[1]} threads"
                    progress(f"  {name} failed: {e!r}; its rows are skipped")
                    continue
                runs.setdefault((name, config), []).append(value)
            for name in (IMPL, STDLIB):
                with bench_cycle.one_cpu() as could_pin:
                    figure = systems[name]
                    assert figure is not None
                    one_cpu_runs.setdefault((name, config), []).append(figure(*config))
                pinned = could_pin
    med = {k: _median(v) for k, v in runs.items()}

    rows = []
    baselines = [
        (STDLIB, "queue", "queue.Queue put+get", "python stdlib"),
        (PERSIST, "persistqueue", "persist-queue SQLiteAckQueue(':memory:')", "persist-queue"),
        (MOTO, "moto", "moto mock_aws SQS via boto3", "moto[sqs] boto3"),
    ]
    for system, short, label, package in baselines:
        for p, c in sizes.threads:
            key = f"cycle_{p}x{c}_vs_{short}"
            name = f"cycle throughput {p}/{c} threads vs {system}"
            base = None if system in failed else med.get((system, (p, c)))
            if base is None:
                skip = (
                    f"skipped ({system} failed: {failed[system]})"
                    if system in failed
                    else f"skipped (pip install {package})"
                )
                rows.append(Row(key, name, "cycles/s", None, label, None, None, note=skip))
                continue
            note = ""
            if system == STDLIB:
                note = "ratio of each run: " + _ratios(runs[(IMPL, (p, c))], runs[(STDLIB, (p, c))])
            rows.append(row(key, name, "cycles/s", med[(IMPL, (p, c))], label, base, note))
    if pinned:
        for p, c in sizes.threads:
            impl_runs, base_runs = one_cpu_runs[(IMPL, (p, c))], one_cpu_runs[(STDLIB, (p, c))]
            rows.append(
                row(
                    f"cycle_{p}x{c}_one_cpu_vs_queue",
                    f"cycle throughput {p}/{c} threads on one CPU vs {STDLIB}",
                    "cycles/s",
                    _median(impl_runs),
                    "queue.Queue put+get, one CPU",
                    _median(base_runs),
                    "both pinned to one CPU (no lock convoys); ratio of each run: "
                    + _ratios(impl_runs, base_runs),
                )
            )
    series = {
        name: [None if name in failed else med.get((name, config)) for config in sizes.threads]
        for name in systems
    }
    if pinned:
        for name in (IMPL, STDLIB):
            series[f"{name}, one CPU"] = [
                _median(one_cpu_runs[(name, config)]) for config in sizes.threads
            ]
    return rows, series


def _ratios(values: list[float], baselines: list[float]) -> str:
    """The per-run ratios, so a reader sees how far the runs spread around the median."""
    return ", ".join(f"{ratio(v, b):.2f}" for v, b in zip(values, baselines, strict=True))


def batches(sizes: Sizes, repeat: int) -> tuple[list[Row], dict[str, list[float | None]]]:
    """Batch throughput rows: messages per second of ``impl.Queue`` moved ten at a time
    (``send_batch``; ``receive_batch`` + ``delete_batch``) beside ``queue.Queue``'s one put and
    one get per message, 4/4 threads, on every CPU and pinned to one; and the plot's series."""
    p, c = BATCH_THREADS
    n = sizes.batch_messages
    runs: dict[tuple[str, bool], list[float]] = {}
    pinned = False
    systems: dict[str, Callable[[], float]] = {
        IMPL: lambda: bench_cycle.impl_batch(n, p, c),
        STDLIB: lambda: bench_cycle.stdlib_queue(n, p, c),
    }
    for r in range(repeat):
        progress(f"  batches of 10, {p}/{c} threads, run {r + 1}/{repeat}")
        for name, run in systems.items():
            runs.setdefault((name, False), []).append(run())
        for name, run in systems.items():
            with bench_cycle.one_cpu() as could_pin:
                runs.setdefault((name, True), []).append(run())
            pinned = could_pin
    how = f"{n:,} messages, send_batch of 10 Entry; receive_batch(10) + delete_batch"
    once = "each delivered exactly once"
    rows = [
        row(
            f"batch_{p}x{c}_vs_queue",
            f"batch throughput {p}/{c} threads vs {STDLIB}",
            "msgs/s",
            _median(runs[(IMPL, False)]),
            "queue.Queue put+get per message",
            _median(runs[(STDLIB, False)]),
            f"{how}, {once}; ratio of each run: "
            + _ratios(runs[(IMPL, False)], runs[(STDLIB, False)]),
        )
    ]
    if pinned:
        rows.append(
            row(
                f"batch_{p}x{c}_one_cpu_vs_queue",
                f"batch throughput {p}/{c} threads on one CPU vs {STDLIB}",
                "msgs/s",
                _median(runs[(IMPL, True)]),
                "queue.Queue put+get per message, one CPU",
                _median(runs[(STDLIB, True)]),
                f"both pinned to one CPU; {how}, {once}; ratio of each run: "
                + _ratios(runs[(IMPL, True)], runs[(STDLIB, True)]),
            )
        )
    series: dict[str, list[float | None]] = {
        f"{name} {'batches of 10' if name == IMPL else 'put+get'}": [
            _median(runs[(name, False)]),
            _median(runs[(name, True)]) if pinned else None,
        ]
        for name in (IMPL, STDLIB)
    }
    return rows, series


def scaling(sizes: Sizes, repeat: int) -> tuple[list[Row], dict[str, list[float]]]:
    """Time per cycle at each load; the largest load is compared with the smallest."""
    loads = ", ".join(f"{n:,}" for n in sizes.in_flight)
    progress(f"  time per cycle with {loads} in flight")
    times = bench_state.cycle_times(sizes.in_flight, sizes.window, repeat)

    rows = []
    first = times[0]
    for i, t in enumerate(times):
        us = t.seconds * 1e6
        notes = [f"setup {t.setup_seconds:.1f} s"]
        if t.rss_growth is not None and t.rss_growth >= 2**24:  # smaller: lost in reused memory
            notes.append(f"RSS +{t.rss_growth / 2**20:,.0f} MiB ({t.rss_growth / t.n:,.0f} B/msg)")
        notes.append(f"heap rebuild pause {t.rebuild_seconds * 1e3:.1f} ms")
        if t.rebuild_share:
            notes.append(f"its share {t.rebuild_share * 1e6:.2f} µs/cycle included")
        note = "; ".join(notes)
        name = f"time per cycle, {t.n:,} in flight"
        if i == 0:
            label, base = f"queue.Queue put+get, {t.n:,} queued", t.stdlib_seconds * 1e6
            rows.append(row("cycle_time_smallest", name, "µs", us, label, base, note))
        else:
            key = "cycle_time_largest" if i == len(times) - 1 else f"cycle_time_{t.n}"
            label, base = f"impl.Queue, {first.n:,} in flight", first.seconds * 1e6
            rows.append(row(key, name, "µs", us, label, base, note))
    series = {
        IMPL: [t.seconds * 1e6 for t in times],
        STDLIB: [t.stdlib_seconds * 1e6 for t in times],
    }
    return rows, series


def expiry_and_memory(sizes: Sizes, repeat: int) -> list[Row]:
    progress(f"  expiry of {sizes.expiry:,} messages")
    rate = bench_state.expiry(sizes.expiry, repeat)
    put_rate = bench_state.stdlib_put_rate(sizes.expiry, repeat)
    progress(f"  memory of {sizes.memory:,} in-flight messages")
    mem = bench_state.memory(sizes.memory)
    base_mem = bench_state.stdlib_memory(sizes.memory)
    n = sizes.expiry
    return [
        row("expiry_rate", f"sweep() re-queues {n:,} expired", "msgs/s", rate,
            f"queue.Queue.put of {n:,}", put_rate),
        row("memory_in_flight", "memory per in-flight message, body excluded", "B", mem,
            "queue.Queue of (32-char id, body)", base_mem,
            "tracemalloc; id, record, indexes, heap entry"),
    ]  # fmt: skip


def realtime(sizes: Sizes, repeat: int) -> list[Row]:
    per_2s = 2.0 / sizes.idle_window
    idle, base_idle = [], []
    for r in range(repeat):
        progress(f"  idle CPU, run {r + 1}/{repeat}")
        idle.append(
            bench_realtime.idle_cpu(sizes.idle_in_flight, sizes.idle_receivers, sizes.idle_window)
        )
        base_idle.append(bench_realtime.stdlib_idle_cpu(sizes.idle_receivers, sizes.idle_window))
    idle_ms = _median(idle) * per_2s * 1e3
    base_ms = _median(base_idle) * per_2s * 1e3

    progress(f"  redelivery lateness, {sizes.redeliveries} samples")
    late = bench_realtime.redelivery(sizes.redeliveries, sizes.vt)
    base_late = bench_realtime.stdlib_timed_wait(sizes.redeliveries, sizes.vt)
    med, base_med = late.quantile(0.5) * 1e3, base_late.quantile(0.5) * 1e3
    p99, base_p99 = late.quantile(0.99) * 1e3, base_late.quantile(0.99) * 1e3
    vt_ms = f"vt {sizes.vt * 1e3:g} ms, {sizes.redeliveries} samples"
    waited = "timed wait queue.Queue.get(timeout=vt)"
    k = sizes.idle_receivers
    return [
        row("idle_cpu", f"idle CPU: {sizes.idle_in_flight:,} in flight, {k} receivers blocked",
            "ms per 2 s", idle_ms, f"queue.Queue, {k} get() blocked", base_ms,
            f"window {sizes.idle_window:g} s, whole process"),
        row("redelivery_median", "redelivery lateness, median", "ms", med, waited, base_med, vt_ms),
        row("redelivery_p99", "redelivery lateness, p99", "ms", p99, waited, base_p99, vt_ms),
    ]  # fmt: skip


def judge(rows: list[Row]) -> list[Row]:
    """Attach each row's target and verdict."""
    out = []
    for r in rows:
        target = TARGETS.get(r.key)
        out.append(r if target is None else replace(r, target=target.text, passed=target.met(r)))
    return out


def run(sizes: Sizes, repeat: int) -> tuple[list[Row], dict[str, Any]]:
    """Every benchmark, in order; the judged rows and the series for the plot."""
    progress("cycle throughput")
    rows, thr = throughput(sizes, repeat)
    progress("batch throughput")
    batch_rows, batch_series = batches(sizes, repeat)
    rows += batch_rows
    progress("beside the floor queue, one CPU")
    rows += bench_floor.suite_rows(sizes.cycles, sizes.batch_messages, sizes.memory, repeat)
    progress("scaling")
    scale_rows, times = scaling(sizes, repeat)
    progress("expiry and memory")
    rows += scale_rows + expiry_and_memory(sizes, repeat)
    progress("real-clock behaviour")
    rows += realtime(sizes, repeat)
    progress("asyncio driver")
    rows += bench_aio.rows(sizes, repeat)
    progress("the SQS endpoint")
    rows += bench_server.rows(sizes.server_quick)
    series = {
        "threads": [list(c) for c in sizes.threads],
        "throughput": thr,
        "batch_cpus": [f"{os.cpu_count()} CPUs", "one CPU"],
        "batch": batch_series,
        "in_flight": list(sizes.in_flight),
        "cycle_time_us": times,
    }
    return judge(rows), series


def main(argv: list[str] | None = None) -> int:
    summary = (__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m bench", description=summary)
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument(
        "--repeat", type=int, help="runs per figure, median reported (default 3; 1 with --quick)"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    parser.add_argument("--plot", metavar="PATH", help="also write a PNG plot (needs matplotlib)")
    parser.add_argument("--check", action="store_true", help="exit 1 if a target fails")
    args = parser.parse_args(argv)
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 3)
    if repeat < 1:
        parser.error("--repeat must be >= 1")
    if args.plot and not bench_plot.available():
        # Refuse before minutes of measuring, not after.
        parser.error("--plot needs matplotlib, which is not installed: pip install matplotlib")
    sizes = QUICK if args.quick else FULL

    load_before = os.getloadavg()
    t0 = time.perf_counter()
    rows, series = run(sizes, repeat)
    seconds = time.perf_counter() - t0
    load_after = os.getloadavg()

    context = (
        f"{'quick' if args.quick else 'full'} run, median of {repeat}, {seconds:.0f} s; "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after"
    )
    print(format_table(rows))
    print()
    print(format_notes(rows))
    print()
    print(context)
    if args.json:
        report = {
            "command": " ".join(["python -m bench", *(sys.argv[1:] if argv is None else argv)]),
            "quick": args.quick,
            "repeat": repeat,
            "seconds": seconds,
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_before": list(load_before),
            "load_after": list(load_after),
            "rows": to_json(rows),
            "series": series,
        }
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2, ensure_ascii=False)
            f.write("\n")
    if args.plot:
        bench_plot.plot(series, args.plot, "impl.Queue benchmarks — " + context)
    failed = [r.key for r in rows if r.passed is False]
    return 1 if args.check and failed else 0
