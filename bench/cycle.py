"""Cycle throughput: P producer and C consumer threads moving N messages through a queue.

One *cycle* is a message's whole life: the producer sends it, a consumer receives it and
deletes (acknowledges) it. Every system runs the same workload: producers each send ``N / P``
messages, consumers each receive and acknowledge ``N / C``, all threads start together behind a
barrier, and the time is taken from that start to the last join. Threads are created before the
clock starts, and every wait is bounded, so a broken system fails the benchmark instead of
hanging it.

*Batch throughput* moves the same messages ten at a time: producers each ``send_batch`` lists of
ten :class:`impl.Entry` (built inside the timed loop, as a caller would), consumers each
``receive_batch(10)`` and ``delete_batch`` the receipts of what they got, and the figure is
messages per second; its baseline is ``queue.Queue`` with one put and one get per message
(:func:`stdlib_queue`). Every delivered id is kept and checked after the run: each sent id
delivered exactly once.

The systems: ``impl.Queue`` on the real clock (visibility timeout of an hour, so nothing
expires), the standard library's ``queue.Queue`` (put, get, task_done), persist-queue's
``SQLiteAckQueue`` on an in-memory database (put, get, ack) and moto's in-process SQS through a
boto3 client (send_message, receive_message with long polling, delete_message). The last two
are optional: :func:`optional` imports them by name, so a missing package skips its rows.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from impl.message import Entry, Message
from impl.queue import MAX_BATCH, Queue

#: The body every message carries: small, so the figures measure the queue, not copying.
BODY = "hello"
#: Bound on any single wait in a workload, in seconds: far above any healthy wait.
WAIT = 60.0

#: pip package names of the optional baselines, by import name.
EXTRAS = {"persistqueue": "persist-queue", "moto": "moto[sqs]", "boto3": "boto3"}


def optional(name: str) -> ModuleType | None:
    """The module ``name`` if it is installed, else ``None`` (its rows are then skipped)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


@contextlib.contextmanager
def one_cpu() -> Iterator[bool]:
    """Confine the threads started inside the block to one CPU; yields whether it could.

    On Linux the calling thread's CPU set is narrowed to its lowest CPU and restored on exit;
    threads inherit the set of the thread that starts them, so every worker of a run started
    inside shares that one CPU. Elsewhere (no ``os.sched_setaffinity``) it yields ``False`` and
    changes nothing.

    Why: with the GIL only one thread runs Python at a time whatever the number of CPUs, but on
    two CPUs a thread blocked on the queue's mutex is woken on the other CPU and must win the
    GIL back across CPUs first. Once such hand-offs queue up they feed themselves (a lock
    convoy), and a run falls into a mode several times slower; whether it does is close to
    chance, for ``queue.Queue`` as for ``impl.Queue``. On one CPU there is no such mode, so the
    one-CPU figures measure what each queue's work costs.
    """
    getter = getattr(os, "sched_getaffinity", None)
    setter = getattr(os, "sched_setaffinity", None)
    if getter is None or setter is None:
        yield False
        return
    before = getter(0)
    setter(0, {min(before)})
    try:
        yield True
    finally:
        setter(0, before)


def timed(producers: list[Callable[[], None]], consumers: list[Callable[[], None]]) -> float:
    """Run the workers together; the seconds from their common start to the last one's end.

    An exception in any worker is raised here after all have been joined.
    """
    workers = producers + consumers
    start = threading.Barrier(len(workers) + 1)
    errors: list[BaseException] = []

    def run(work: Callable[[], None]) -> None:
        try:
            start.wait(WAIT)
            work()
        except BaseException as e:  # re-raised in the main thread below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(w,), daemon=True) for w in workers]
    for t in threads:
        t.start()
    start.wait(WAIT)
    t0 = time.perf_counter()
    for t in threads:
        t.join(WAIT)
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    if any(t.is_alive() for t in threads):
        raise RuntimeError(f"a worker was still running after {WAIT} s")
    return elapsed


def split(n: int, p: int, c: int) -> tuple[int, int]:
    if n % p or n % c:
        raise ValueError(f"n={n} must be a multiple of both {p} and {c}")
    return n // p, n // c


def impl_queue(n: int, p: int, c: int) -> float:
    """Cycles per second of ``impl.Queue`` with ``p`` producers and ``c`` consumers."""
    per_p, per_c = split(n, p, c)
    q: Queue[str] = Queue(visibility_timeout=3600.0)

    def produce() -> None:
        for _ in range(per_p):
            q.send(BODY)

    def consume() -> None:
        for _ in range(per_c):
            q.delete(q.receive(timeout=WAIT).receipt)

    try:
        elapsed = timed([produce] * p, [consume] * c)
        done = q.stats().done
    finally:
        q.close()
    if done != n:
        raise RuntimeError(f"impl.Queue finished {done} of {n} messages")
    return n / elapsed


@dataclass(frozen=True)
class BatchRun:
    """One run of the batch workload: its time, every id sent and every id delivered."""

    seconds: float
    sent: list[str]
    delivered: list[str]

    def exactly_once(self) -> bool:
        """Whether every sent id was delivered exactly once, and nothing else was."""
        once = Counter(self.delivered)
        return len(self.sent) == len(once) == len(self.delivered) and set(self.sent) == set(once)


def impl_batch_run(n: int, p: int, c: int, size: int = MAX_BATCH) -> BatchRun:
    """``n`` messages through ``impl.Queue`` in batches of ``size``: ``p`` producers
    ``send_batch``, ``c`` consumers ``receive_batch(size)`` + ``delete_batch``."""
    per_p, per_c = split(n, p, c)
    if per_p % size:
        raise ValueError(f"n={n} must be a multiple of {p} producers x batches of {size}")
    q: Queue[str] = Queue(visibility_timeout=3600.0)
    sent: list[list[str]] = [[] for _ in range(p)]
    got: list[list[Message[str]]] = [[] for _ in range(c)]

    def producer(ids: list[str]) -> Callable[[], None]:
        def produce() -> None:
            for _ in range(per_p // size):
                ids.extend(q.send_batch([Entry(BODY) for _ in range(size)]))

        return produce

    def consumer(out: list[Message[str]]) -> Callable[[], None]:
        def consume() -> None:
            left = per_c
            while left:
                msgs = q.receive_batch(min(size, left), timeout=WAIT)
                q.delete_batch([m.receipt for m in msgs])
                out.extend(msgs)
                left -= len(msgs)

        return consume

    try:
        elapsed = timed([producer(ids) for ids in sent], [consumer(out) for out in got])
        done = q.stats().done
    finally:
        q.close()
    if done != n:
        raise RuntimeError(f"impl.Queue batches finished {done} of {n} messages")
    return BatchRun(elapsed, [i for ids in sent for i in ids], [m.id for ms in got for m in ms])


def impl_batch(n: int, p: int, c: int) -> float:
    """Messages per second of ``impl.Queue`` in batches of ten (see :func:`impl_batch_run`);
    raises ``RuntimeError`` unless every message was delivered exactly once."""
    run = impl_batch_run(n, p, c)
    if not run.exactly_once():
        raise RuntimeError(
            f"impl.Queue batches: {len(run.sent)} sent, {len(run.delivered)} delivered, "
            f"{len(set(run.delivered))} distinct: not each exactly once"
        )
    return n / run.seconds


def stdlib_queue(n: int, p: int, c: int) -> float:
    """Cycles per second of ``queue.Queue`` (put; get + task_done) in the same configuration."""
    per_p, per_c = split(n, p, c)
    q: queue.Queue[str] = queue.Queue()

    def produce() -> None:
        for _ in range(per_p):
            q.put(BODY)

    def consume() -> None:
        for _ in range(per_c):
            q.get(timeout=WAIT)
            q.task_done()

    elapsed = timed([produce] * p, [consume] * c)
    if q.unfinished_tasks:
        raise RuntimeError(f"queue.Queue left {q.unfinished_tasks} tasks unfinished")
    return n / elapsed


def persist_queue(pq: ModuleType, n: int, p: int, c: int) -> float:
    """Cycles per second of persist-queue's ack queue on an in-memory SQLite database.

    ``get(raw=True)`` returns the row id, so ``ack(id=...)`` names the row directly instead of
    searching the unacknowledged items for the body object.
    """
    per_p, per_c = split(n, p, c)
    q: Any = pq.SQLiteAckQueue(path=":memory:", multithreading=True, auto_resume=False)

    def produce() -> None:
        for _ in range(per_p):
            q.put(BODY)

    def consume() -> None:
        for _ in range(per_c):
            item = q.get(timeout=WAIT, raw=True)
            q.ack(id=item["pqid"])

    try:
        elapsed = timed([produce] * p, [consume] * c)
        acked = q.acked_count()
    finally:
        q.close()
    if acked != n:
        raise RuntimeError(f"persist-queue acknowledged {acked} of {n} messages")
    return n / elapsed


def moto_sqs(moto: ModuleType, boto3: ModuleType, n: int, p: int, c: int) -> float:
    """Cycles per second of moto's in-process SQS, one boto3 client shared by all threads.

    Consumers long-poll (``WaitTimeSeconds=1``), as SQS clients should, so an empty queue does
    not make them spin.
    """
    per_p, per_c = split(n, p, c)
    with moto.mock_aws():
        # Dummy credentials for the mock: nothing leaves the process.
        sqs: Any = boto3.client(
            "sqs",
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        url = sqs.create_queue(QueueName="bench")["QueueUrl"]

        def produce() -> None:
            for _ in range(per_p):
                sqs.send_message(QueueUrl=url, MessageBody=BODY)

        def consume() -> None:
            got = 0
            deadline = time.perf_counter() + WAIT
            while got < per_c:
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"moto delivered {got} of {per_c} within {WAIT} s")
                reply = sqs.receive_message(
                    QueueUrl=url, MaxNumberOfMessages=1, VisibilityTimeout=3600, WaitTimeSeconds=1
                )
                for m in reply.get("Messages", []):
                    sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
                    got += 1

        return n / timed([produce] * p, [consume] * c)
