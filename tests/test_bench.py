"""The benchmark command runs and reports every figure beside its baseline (speed not asserted).

``python -m bench --quick`` is run once for the whole module, as a user would run it; the
tests then read its table and its JSON. How fast anything is depends on the machine and its
load, so no test here judges a figure; they check that each one was measured, has a baseline
and a ratio consistent with both, and that targets are judged and shown.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import bench.aio as bench_aio
import bench.icount as icount
import bench.leak as leak
import bench.server as bench_server
from bench.cycle import BatchRun, impl_batch_run, one_cpu, optional
from bench.report import Row, format_table
from bench.suite import TARGETS, Target
from impl import Message, Receipt, ShutDown

ROOT = Path(__file__).resolve().parent.parent

#: Every figure the brief asks for, by row key.
EXPECTED_KEYS = {
    *(
        f"cycle_{c}_vs_{b}"
        for c in ("1x1", "4x4", "8x8")
        for b in ("queue", "persistqueue", "moto")
    ),
    "cycle_time_smallest",
    "cycle_time_largest",
    "expiry_rate",
    "memory_in_flight",
    "idle_cpu",
    "redelivery_median",
    "redelivery_p99",
    "batch_4x4_vs_queue",
    # Beside the floor queue (bench.floor), pinned to one CPU.
    *(
        f"cycle_{c}_one_cpu_{what}vs_floor"
        for c in ("1x1", "4x4")
        for what in ("", "obliged_", "machine_")
    ),
    "batch_4x4_one_cpu_vs_floor",
    "batch_4x4_one_cpu_obliged_vs_floor",
    "memory_in_flight_vs_floor",
    # The asyncio driver (bench.aio).
    "aio_1x1_vs_asyncio",
    "aio_4x4_vs_asyncio",
    "aio_1x1_floor_vs_asyncio",
    "aio_4x4_floor_vs_asyncio",
    "aio_1x1_obliged_vs_asyncio",
    "aio_4x4_obliged_vs_asyncio",
    "aio_batch_4x4_vs_asyncio",
    "aio_1x1_vs_to_thread",
    "aio_4x4_vs_to_thread",
    "aio_idle_cpu",
    "aio_wake_in_order",
    "aio_memory_per_waiter",
    # The SQS endpoint (bench.server), through one boto3 client.
    *bench_server.KEYS,
}


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("bench")
    cmd = [sys.executable, "-m", "bench", "--quick", "--json", str(out / "bench.json")]
    if optional("matplotlib") is not None:
        cmd += ["--plot", str(out / "bench.png")]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "bench.json").read_text())
    return {"stdout": proc.stdout, "report": report, "dir": out}


def test_every_figure_is_reported(quick_run: dict[str, Any]) -> None:
    keys = [r["key"] for r in quick_run["report"]["rows"]]
    assert len(keys) == len(set(keys))
    assert set(keys) >= EXPECTED_KEYS


def test_each_row_has_a_figure_a_baseline_and_their_ratio(quick_run: dict[str, Any]) -> None:
    for r in quick_run["report"]["rows"]:
        if r["skipped"]:
            assert r["value"] is None and r["note"].startswith("skipped"), r
            assert "pip install" in r["note"] or "LocalStack" in r["note"], r
            continue
        assert isinstance(r["value"], int | float) and r["value"] >= 0, r
        assert isinstance(r["baseline"], int | float) and r["baseline"] >= 0, r
        assert r["baseline_name"], r
        if r["baseline"] == 0:  # a CPU figure beside an idle process's nothing: no ratio
            assert r["ratio"] is None and r["unit"] == "ms per 2 s", r
            continue
        assert math.isclose(r["ratio"], r["value"] / r["baseline"], rel_tol=1e-9), r


def test_optional_baselines_run_when_installed(quick_run: dict[str, Any]) -> None:
    rows = {r["key"]: r for r in quick_run["report"]["rows"]}
    installed = {
        "persistqueue": optional("persistqueue") is not None,
        "moto": optional("moto") is not None and optional("boto3") is not None,
    }
    for short, present in installed.items():
        row = rows[f"cycle_4x4_vs_{short}"]
        if not present:
            assert row["skipped"] and "pip install" in row["note"], row
        elif row["skipped"]:
            # It ran and failed, and says how: moto's in-process mock is not thread-safe (its
            # shared queue races at 4/4 threads, e.g. ReceiptHandleIsInvalid on a live receipt).
            assert "failed: " in row["note"], row


def test_targets_are_judged_and_shown(quick_run: dict[str, Any]) -> None:
    rows = {r["key"]: r for r in quick_run["report"]["rows"]}
    table = quick_run["stdout"]
    for key, target in TARGETS.items():
        r = rows[key]
        assert r["target"] == target.text
        if not r["skipped"]:
            assert isinstance(r["passed"], bool)
            line = next(ln for ln in table.splitlines() if ln.startswith(f"| {r['name']} "))
            assert ("PASS" if r["passed"] else "FAIL") in line
    # bench.server judges its own rows (python -m bench.server shows the same verdicts).
    judged_elsewhere = set(bench_server.KEYS)
    untargeted = [r for r in rows.values() if r["key"] not in set(TARGETS) | judged_elsewhere]
    assert all(r["passed"] is None and r["target"] == "" for r in untargeted)


def test_one_cpu_rows_where_the_platform_can_pin(quick_run: dict[str, Any]) -> None:
    rows = {r["key"]: r for r in quick_run["report"]["rows"]}
    keys = {f"cycle_{c}_one_cpu_vs_queue" for c in ("1x1", "4x4", "8x8")}
    if hasattr(os, "sched_setaffinity"):
        assert keys <= set(rows)
        for k in keys:
            assert rows[k]["note"].startswith("both pinned to one CPU"), rows[k]
            runs = rows[k]["note"].split("ratio of each run: ")[1].split(", ")
            assert len(runs) == quick_run["report"]["repeat"], rows[k]
    else:
        assert not keys & set(rows)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
def test_one_cpu_confines_the_threads_started_inside_and_restores_after() -> None:
    before = os.sched_getaffinity(0)
    seen: list[set[int]] = []
    with one_cpu() as pinned:
        t = threading.Thread(target=lambda: seen.append(os.sched_getaffinity(0)))
        t.start()
        t.join()
    assert pinned
    assert seen == [{min(before)}]
    assert os.sched_getaffinity(0) == before


def test_batch_rows_beside_queue_queue_on_every_cpu_and_pinned(quick_run: dict[str, Any]) -> None:
    rows = {r["key"]: r for r in quick_run["report"]["rows"]}
    keys = ["batch_4x4_vs_queue"]
    if hasattr(os, "sched_setaffinity"):
        keys.append("batch_4x4_one_cpu_vs_queue")
    else:
        assert "batch_4x4_one_cpu_vs_queue" not in rows
    for k in keys:
        r = rows[k]
        assert r["unit"] == "msgs/s" and r["baseline_name"].startswith("queue.Queue put+get"), r
        assert "each delivered exactly once" in r["note"], r
        runs = r["note"].split("ratio of each run: ")[1].split(", ")
        assert len(runs) == quick_run["report"]["repeat"], r
    assert rows["batch_4x4_vs_queue"]["target"] == "ratio >= 0.4"
    series = quick_run["report"]["series"]
    assert len(series["batch_cpus"]) == 2
    assert set(series["batch"]) == {"impl.Queue batches of 10", "queue.Queue put+get"}
    for values in series["batch"].values():
        assert len(values) == 2 and values[0] is not None and values[0] > 0


@pytest.mark.parametrize(("n", "p", "c"), [(400, 4, 4), (80, 1, 1), (240, 2, 3)])
def test_batch_workload_delivers_every_message_exactly_once(n: int, p: int, c: int) -> None:
    run = impl_batch_run(n, p, c)
    assert len(run.sent) == len(set(run.sent)) == n
    assert sorted(run.delivered) == sorted(run.sent)
    assert run.exactly_once()


def test_batch_workload_check_catches_a_lost_or_repeated_message() -> None:
    run = impl_batch_run(40, 1, 1)
    lost = BatchRun(run.seconds, run.sent, run.delivered[1:])
    twice = BatchRun(run.seconds, run.sent, [*run.delivered[1:], run.delivered[2]])
    assert run.exactly_once() and not lost.exactly_once() and not twice.exactly_once()


def test_table_has_one_line_per_row(quick_run: dict[str, Any]) -> None:
    lines = [ln for ln in quick_run["stdout"].splitlines() if ln.startswith("| ")]
    assert lines[0].split("|")[1].strip() == "benchmark"
    assert len(lines) == 1 + len(quick_run["report"]["rows"])


def test_series_for_the_plot(quick_run: dict[str, Any]) -> None:
    series = quick_run["report"]["series"]
    assert len(series["throughput"]["impl.Queue"]) == len(series["threads"]) == 3
    assert len(series["cycle_time_us"]["impl.Queue"]) == len(series["in_flight"])
    if optional("matplotlib") is not None:
        assert (quick_run["dir"] / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_fails_at_once_with_a_clear_message(tmp_path: Path) -> None:
    # None in sys.modules makes "import matplotlib" raise ImportError, as when not installed.
    code = (
        "import sys; sys.modules['matplotlib'] = None; from bench.suite import main; "
        f"sys.exit(main(['--quick', '--plot', {str(tmp_path / 'x.png')!r}]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert "pip install matplotlib" in proc.stderr
    assert proc.stdout == "" and not (tmp_path / "x.png").exists()


def test_target_verdicts() -> None:
    at_least = Target("ratio", ">=", 0.5, "ratio >= 0.5")
    at_most = Target("value", "<=", 2.0, "< 2 ms")

    def measured(value: float, baseline: float) -> Row:
        return Row("k", "n", "u", value, "b", baseline, value / baseline)

    assert at_least.met(measured(6.0, 10.0)) is True
    assert at_least.met(measured(4.0, 10.0)) is False
    assert at_most.met(measured(1.5, 100.0)) is True
    assert at_most.met(measured(2.5, 0.1)) is False
    assert at_least.met(Row("k", "n", "u", None, "b", None, None)) is None


def test_skipped_row_is_shown_as_skipped() -> None:
    skipped = Row("k", "cycle vs moto", "cycles/s", None, "moto", None, None,
                  note="skipped (pip install moto[sqs] boto3)")  # fmt: skip
    line = format_table([skipped]).splitlines()[-1]
    assert "skipped (pip install moto[sqs] boto3)" in line and line.rstrip(" |").endswith("skipped")


# -- bench.icount: instruction counts against a base revision ------------------------------------


def test_icount_reads_the_instruction_total_from_callgrinds_summary() -> None:
    out = "==41== Callgrind, a call-graph profiler\n==41==\n==41== I   refs:      298,061,620\n"
    assert icount.parse_refs(out) == 298_061_620


def test_icount_says_clearly_when_there_is_no_count_or_no_valgrind(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(icount.IcountError, match="no 'I refs' line"):
        icount.parse_refs("==41== Events    : Ir\n")
    monkeypatch.setattr("bench.icount.shutil.which", lambda name: None)
    assert icount.main(["--base", "HEAD"]) == 1
    assert "valgrind is not installed" in capsys.readouterr().err


def test_icount_batch_program_needs_send_batch(tmp_path: Path) -> None:
    (tmp_path / "impl").mkdir()
    (tmp_path / "impl" / "queue.py").write_text("class Queue:\n    def send(self): ...\n")
    assert not icount.has_needs("batch10_send_receive_delete", tmp_path)
    assert icount.has_needs("send_receive_delete", tmp_path)
    assert icount.has_needs("batch10_send_receive_delete", ROOT)
    rows = [icount.Row("batch10_send_receive_delete", None, 40_000.0)]
    assert icount.format_rows(rows, "main").splitlines()[-1].split() == [
        "batch10_send_receive_delete",
        "-",
        "40,000",
        "-",
    ]


def test_icount_takes_impl_from_the_base_revision(tmp_path: Path) -> None:
    root = icount.extract_impl("HEAD", tmp_path)
    assert (root / "impl" / "queue.py").read_text().startswith('"""')
    assert not (root / "spec").exists()


# -- bench.leak: never-closed queues (issue 13) --------------------------------------------------


def test_leak_never_closed_queues_leave_no_thread_behind() -> None:
    start = threading.active_count()
    figures = leak.run(200, closed=False)
    assert figures.threads_before == start
    assert figures.threads_peak > start  # each queue's receive did start a sweeper
    assert (figures.threads_after, figures.lingering) == (start, 0)
    assert figures.resource_warnings == 200  # each was dropped with a message in flight


def test_leak_closed_baseline_leaves_no_thread_and_no_warning() -> None:
    start = threading.active_count()
    figures = leak.run(200, closed=True)
    assert (figures.threads_before, figures.threads_after, figures.lingering) == (start, start, 0)
    assert figures.resource_warnings == 0


def test_leak_command_prints_each_figure_beside_the_closed_baseline() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.leak", "--queues", "200"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    rows = {ln.split("|")[1].strip(): ln for ln in proc.stdout.splitlines() if ln.startswith("| ")}
    threads = rows["threads after 200 never-closed queues"]
    # A fresh interpreter: only its main thread is left, before and after (a count, not a time).
    assert "| 1 threads " in threads and "200 closed queues" in threads and "PASS" in threads
    assert "most threads alive while making 200" in rows
    if leak.memory() != (None, None):
        assert {
            "VmRSS after 200 never-closed queues",
            "VmSize after 200 never-closed queues",
        } <= set(rows)
    assert "- ResourceWarnings: 200 (closed: 0)" in proc.stdout


# -- bench.aio: the asyncio shell beside asyncio.Queue -------------------------------------------


def test_aio_rows_name_their_asyncio_baselines(quick_run: dict[str, Any]) -> None:
    rows = {r["key"]: r for r in quick_run["report"]["rows"]}
    for key in ("aio_1x1_vs_asyncio", "aio_4x4_vs_asyncio", "aio_batch_4x4_vs_asyncio"):
        assert rows[key]["baseline_name"].startswith("asyncio.Queue put+get"), rows[key]
        runs = rows[key]["note"].split("ratio of each run: ")[1].split(", ")
        assert len(runs) == quick_run["report"]["repeat"], rows[key]
    for key in ("aio_1x1_vs_to_thread", "aio_4x4_vs_to_thread"):
        assert rows[key]["baseline_name"].startswith("impl.Queue via asyncio.to_thread"), rows[key]
    assert rows["aio_1x1_vs_asyncio"]["target"] == TARGETS["aio_1x1_vs_asyncio"].text
    assert "the k-th to wait got the k-th message" in rows["aio_wake_in_order"]["note"]


@pytest.mark.parametrize(("p", "c"), [(1, 1), (4, 4), (2, 3)])
def test_aio_workloads_finish_every_message(p: int, c: int) -> None:
    # Each workload raises unless every message was sent, delivered and deleted (batches:
    # each exactly once); a rate comes back only then.
    assert bench_aio.aio_cycles(120, p, c) > 0
    assert bench_aio.asyncio_cycles(120, p, c) > 0
    assert bench_aio.to_thread_cycles(12 * p * c, p, c) > 0
    assert bench_aio.floor_cycles(120, p, c) > 0
    assert bench_aio.obliged_cycles(120, p, c) > 0


def test_the_obliged_asyncio_floor_does_what_the_contract_obliges() -> None:
    # Its ratio bounds impl.AsyncQueue only if it does the work every design must do: check
    # its arguments and hand out impl's Message and Receipt, whose receipt deletes once.
    async def main() -> None:
        q = bench_aio.AsyncObliged(3600.0)
        with pytest.raises(TypeError, match="block"):
            await q.send("x", block=1)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="timeout"):
            await q.send("x", timeout=-1.0)
        sent = await q.send("x")
        with pytest.raises(TypeError, match="timeout"):
            await q.receive(timeout=float("inf"))
        m = await q.receive()
        assert isinstance(m, Message) and isinstance(m.receipt, Receipt)
        assert (m.id, m.body, m.attempt) == (sent, "x", 1)
        with pytest.raises(TypeError, match="receipt"):
            q.delete((m.id, 1))
        other = bench_aio.AsyncObliged(3600.0)
        other.state.token = 2
        await other.send("y")
        foreign = (await other.receive()).receipt
        assert (foreign.id, foreign.attempt) == (m.id, m.attempt)
        assert q.delete(foreign) is False, "a receipt of another queue never acts"
        assert q.delete(m.receipt) is True
        assert q.delete(m.receipt) is False
        # The per-message obligations of bench.floor.ObligedQueue, without its lock.
        with pytest.raises(ValueError, match="ids"):
            await q.send("x", id="mine")
        q.state.accepted.add("msg-2")  # as if a caller had chosen the next fresh id
        assert await q.send("x") == "msg-3", "a generated id never collides with a used one"
        n = await q.receive(visibility_timeout=None)
        assert n.id not in [t[2] for t in q.state.timers], "no deadline: no timer"
        q.state.capacity = 1
        with pytest.raises(queue.Full):
            await q.send("x")
        q.state.shut = True
        with pytest.raises(ShutDown):
            await q.send("x")

    asyncio.run(main())


def test_aio_batches_deliver_each_message_exactly_once() -> None:
    assert bench_aio.aio_batches(400, 4, 4) > 0
    with pytest.raises(ValueError, match="multiple of 4 producers x batches of 10"):
        bench_aio.aio_batches(60, 4, 4)


def test_aio_waiters_are_woken_in_the_order_they_waited() -> None:
    for run in (bench_aio.aio_waiters(200, 50, 0.01), bench_aio.asyncio_waiters(200, 0.01)):
        assert run.wake_seconds > 0 and run.bytes_per_waiter > 0 and run.idle_cpu >= 0


def test_aio_order_check_catches_a_waiter_woken_out_of_turn() -> None:
    bench_aio._check_order([(0, "a"), (1, "b")], ["a", "b"], "q")
    with pytest.raises(RuntimeError, match="not woken in order"):
        bench_aio._check_order([(1, "a"), (0, "b")], ["a", "b"], "q")


def test_aio_profile_names_the_driver_and_the_machine() -> None:
    text = bench_aio.format_profile(400)
    assert "impl/aio.py" in text and "impl/fast_machine.py" in text
    assert "asyncio.Queue" in text and "1/1 target" in text


def test_aio_command_prints_only_the_asyncio_rows_and_writes_them_as_json(tmp_path: Path) -> None:
    out = tmp_path / "aio.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.aio", "--quick", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    record = json.loads(out.read_text())
    keys = [r["key"] for r in record["rows"]]
    assert set(keys) == {k for k in EXPECTED_KEYS if k.startswith("aio_")}
    assert record["command"].startswith("python -m bench.aio --quick")
    table = [ln for ln in proc.stdout.splitlines() if ln.startswith("| ")]
    assert len(table) == 1 + len(keys)
    line = next(ln for ln in table if ln.startswith("| asyncio cycle throughput 1/1 tasks "))
    assert "ratio >= 0.3" in line and ("PASS" in line or "FAIL" in line)


def test_the_recorded_asyncio_run_printed_what_its_json_holds() -> None:
    # docs/runs/bench-aio.txt (quoted whole in docs/benchmarks.md) and bench-aio.json (its rows,
    # for the figures a page may quote) are one run: the JSON's rows print as the text's table.
    runs = ROOT / "docs" / "runs"
    text = (runs / "bench-aio.txt").read_text()
    record = json.loads((runs / "bench-aio.json").read_text())
    assert text.splitlines()[0].startswith(f"# {record['command']} ")
    rows = [Row(**{k: v for k, v in r.items() if k != "skipped"}) for r in record["rows"]]
    assert format_table(rows) in text
    assert {r.key for r in rows} == {k for k in EXPECTED_KEYS if k.startswith("aio_")}


def test_server_rows_are_measured_beside_moto_when_boto3_and_moto_are_installed(
    quick_run: dict[str, Any],
) -> None:
    rows = {r["key"]: r for r in quick_run["report"]["rows"]}
    if bench_server.missing():
        assert all("not installed" in rows[k]["note"] for k in bench_server.KEYS)
        return
    measured = (
        "server_cycle_vs_moto_server",
        "server_cycle_vs_client_alone",
        "server_cycle_vs_canned_server",
        "server_batch_msgs",
        "server_batch_vs_client_alone",
        "server_batch_vs_canned_server",
        # The durable endpoint beside the in-memory one, its commits and its replay.
        "server_durable_cycle_vs_memory",
        "server_durable_normal_cycle_vs_memory",
        "server_durable_batch_vs_memory",
        "server_durable_commit",
        "server_durable_replay",
    )
    for key in measured:
        row = rows[key]
        assert row["value"] > 0 and row["baseline"] > 0, row
        assert math.isclose(row["ratio"], row["value"] / row["baseline"], rel_tol=1e-6)
    # Nothing answers faster through boto3 than boto3 answering itself.
    assert rows["server_cycle_vs_client_alone"]["ratio"] < 1.0
    assert rows["server_batch_vs_client_alone"]["ratio"] < 1.0
    targets = {
        "server_cycle_vs_moto_server": "ratio >= 10",
        "server_batch_msgs": ">= 2,600 msgs/s",
        "server_longpoll_idle_cpu": "< 10 ms per 2 s",
        "server_longpoll_answer_median": "median < 5 ms",
    }
    for key, text in targets.items():
        if not rows[key]["skipped"]:
            assert rows[key]["target"] == text and isinstance(rows[key]["passed"], bool), key


def test_server_rows_are_skipped_with_the_missing_packages_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bench_server, "missing", lambda: ["moto"])
    rows = bench_server.rows(quick=True)
    assert [r.key for r in rows] == list(bench_server.KEYS)
    assert all(r.value is None and "moto not installed" in r.note for r in rows)


def test_boto3_alone_answers_every_call_of_a_cycle_without_a_socket() -> None:
    if bench_server.missing():
        pytest.skip(f"{bench_server.missing()} not installed")
    sqs = bench_server.client_alone()
    # Port 9 (discard) has no listener here: a call that reached a socket would fail.
    assert bench_server.cycles_per_second(sqs, 5) > 0
    assert bench_server.batch_messages_per_second(bench_server.client_alone(4), 2, threads=2) > 0


def test_the_canned_server_answers_a_client_over_a_socket() -> None:
    if bench_server.missing():
        pytest.skip(f"{bench_server.missing()} not installed")
    with bench_server.spawn(bench_server._CANNED_CODE, "canned") as canned:
        sqs = bench_server.client(canned.url)
        assert bench_server.cycles_per_second(sqs, 5) > 0
        assert bench_server.batch_messages_per_second(bench_server.client(canned.url), 2, 2) > 0
