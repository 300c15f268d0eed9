"""The durable endpoint (``sqs_endpoint --data FILE``) beside the in-memory one, in one run.

``bench.server`` calls :func:`rows` with its in-memory endpoint's client; this module starts the
durable endpoints (a process each, the real clock, a data file in a temporary directory) and
measures, interleaved with the in-memory endpoint so background load hits them alike:

- ``server_durable_cycle_vs_memory``: send + receive + delete cycles per second through one
  boto3 client, ``--data-sync full`` (the default: an answered operation survives a power
  cut), beside the in-memory endpoint;
- ``server_durable_normal_cycle_vs_memory``: the same with ``--data-sync normal`` (it survives
  a crash of the process, not of the machine);
- ``server_durable_batch_vs_memory``: batches of ten (``bench.server``'s batch workload),
  ``full``, beside the in-memory endpoint;
- ``server_durable_commit``: what one operation's commit costs in the journal alone
  (``sqs_endpoint.journal.Journal``: append a ``SendMessage`` entry, commit), microseconds,
  ``synchronous=FULL`` beside ``NORMAL``, in this process, on the same file system;
- ``server_durable_replay``: journal entries replayed per second by a start on the cycle run's
  data file, beside the rate the same operations ran live through boto3.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any, Final

from bench.report import Row, ratio

#: A durable endpoint's process: the data file and the sync level are formatted in.
_DURABLE_CODE: Final = """
import sys, sqs_endpoint
with sqs_endpoint.serve(host="127.0.0.1", port=0, clock="real", data={data!r},
                        data_sync={sync!r}) as ep:
    print(ep.url, flush=True)
    sys.stdin.read()
"""
#: Commits timed per sync level for the commit row.
COMMITS: Final = 300
KEYS: Final = (
    "server_durable_cycle_vs_memory",
    "server_durable_normal_cycle_vs_memory",
    "server_durable_batch_vs_memory",
    "server_durable_commit",
    "server_durable_replay",
)


def commit_micros(path: Path, sync: str, n: int = COMMITS) -> float:
    """Microseconds per append + commit of a ``SendMessage`` entry in a fresh journal."""
    from sqs_endpoint.journal import Journal

    journal = Journal(path, sync=sync)  # type: ignore[arg-type]
    params = {"QueueUrl": "http://127.0.0.1:9324/000000000000/jobs", "MessageBody": "x" * 64}
    try:
        start = time.perf_counter()
        for i in range(n):
            journal.append("op", "SendMessage", float(i), i, params, "http://127.0.0.1", f"id{i}")
            journal.commit()
        return (time.perf_counter() - start) / n * 1e6
    finally:
        journal.close()


def replay_per_second(data: Path) -> tuple[float, int]:
    """Entries per second that a start on ``data`` replays, and how many it replayed."""
    import sqs_endpoint

    start = time.perf_counter()
    with sqs_endpoint.serve(port=0, clock="fake", data=data) as ep:
        seconds = time.perf_counter() - start
        return ep.recovered / seconds, ep.recovered


def rows(memory: Any, sizes: Any, median: Any) -> list[Row]:
    """The rows (see the module docstring); ``memory`` is the in-memory endpoint's client,
    ``sizes`` bench.server's sizes, ``median`` its median."""
    from bench import server

    out: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        full_data, normal_data = Path(tmp) / "full.sqlite3", Path(tmp) / "normal.sqlite3"
        full_code = _DURABLE_CODE.format(data=str(full_data), sync="full")
        normal_code = _DURABLE_CODE.format(data=str(normal_data), sync="normal")
        with (
            server.spawn(full_code, "the durable endpoint (full)") as full,
            server.spawn(normal_code, "the durable endpoint (normal)") as normal,
        ):
            server.progress("the durable endpoint: cycles")
            c_full, c_normal, c_mem = server.client(full.url), server.client(normal.url), memory
            fulls, normals, mems = [], [], []
            for _ in range(sizes.repeat):
                fulls.append(server.cycles_per_second(c_full, sizes.cycles))
                normals.append(server.cycles_per_second(c_normal, sizes.cycles))
                mems.append(server.cycles_per_second(c_mem, sizes.cycles))
            f, n, m = median(fulls), median(normals), median(mems)
            how = f"{sizes.cycles} cycles, median of {sizes.repeat}, interleaved"
            out.append(
                Row(
                    "server_durable_cycle_vs_memory",
                    "SQS cycle, the durable endpoint (--data-sync full) beside in memory",
                    "cycles/s",
                    f,
                    "this server in memory",
                    m,
                    ratio(f, m),
                    note=f"{how}; three commits a cycle, each before its answer",
                )
            )
            out.append(
                Row(
                    "server_durable_normal_cycle_vs_memory",
                    "SQS cycle, the durable endpoint (--data-sync normal) beside in memory",
                    "cycles/s",
                    n,
                    "this server in memory",
                    m,
                    ratio(n, m),
                    note=f"{how}; normal: no fsync per commit (a killed process loses nothing, "
                    "a power cut may lose the last commits)",
                )
            )
            server.progress("the durable endpoint: batches")
            pool_full = server.client(full.url, server.BATCH_THREADS * 2)
            pool_mem = server.client(memory_url(memory), server.BATCH_THREADS * 2)
            b_full, b_mem = [], []
            for _ in range(sizes.repeat):
                b_full.append(server.batch_messages_per_second(pool_full, sizes.batch_rounds))
                b_mem.append(server.batch_messages_per_second(pool_mem, sizes.batch_rounds))
            bf, bm = median(b_full), median(b_mem)
            out.append(
                Row(
                    "server_durable_batch_vs_memory",
                    "SQS batches of 10, the durable endpoint (full) beside in memory",
                    "msgs/s",
                    bf,
                    "this server in memory",
                    bm,
                    ratio(bf, bm),
                    note=f"{server.BATCH_THREADS} threads, {sizes.batch_rounds} rounds each; a "
                    "batch is one commit",
                )
            )
        server.progress("the durable endpoint: commits and replay")
        full_us = commit_micros(Path(tmp) / "commit-full.sqlite3", "full")
        normal_us = commit_micros(Path(tmp) / "commit-normal.sqlite3", "normal")
        out.append(
            Row(
                "server_durable_commit",
                "one operation's journal commit, synchronous=FULL",
                "us",
                full_us,
                "synchronous=NORMAL",
                normal_us,
                ratio(full_us, normal_us),
                note=f"append + commit of a SendMessage entry, {COMMITS} in a row, WAL mode",
            )
        )
        rate, entries = replay_per_second(full_data)
        live = 3 * f  # the cycle run's operations per second, live through boto3
        out.append(
            Row(
                "server_durable_replay",
                "journal entries replayed per second at a start",
                "entries/s",
                rate,
                "the same operations live through boto3",
                live,
                ratio(rate, live),
                note=f"{entries} entries (every run of this benchmark's durable endpoint)",
            )
        )
    return out


def memory_url(client: Any) -> str:
    """The endpoint URL a boto3 client was made for."""
    url: str = client.meta.endpoint_url
    return url
