"""Benchmarks of the asyncio driver ``impl.AsyncQueue``, each figure beside ``asyncio.Queue``.

``python -m bench`` runs these rows with the others; ``python -m bench.aio`` runs only these
(``--quick`` for small sizes; ``docs/runs/bench-aio.txt`` is a recorded run). Every workload runs
in a fresh event loop (``asyncio.run``) on the real clock, with a visibility timeout of an hour
(nothing expires), bounded by ``asyncio.timeout(WAIT)`` so that a broken queue fails the run
instead of hanging it.

- *Cycle throughput*, P/C tasks: P producer tasks each ``await send`` N/P messages, C consumer
  tasks each ``await receive()`` + ``delete(receipt)`` N/C; baseline ``asyncio.Queue`` put and
  get + task_done, same tasks and N. Sends never wait (the queue is unbounded), for both.
- *Batch throughput*, 4/4 tasks: ``send_batch`` of ten fresh ``impl.Entry``, ``receive_batch(10)``
  + ``delete_batch``, messages per second; baseline ``asyncio.Queue`` put / get per message.
- *Floors*: the same cycle on :class:`AsyncFloor` (the floor queue's work in coroutines, no
  lock) and on :class:`AsyncObliged` (that plus each test and step the contract obliges per
  message, as ``bench.floor.ObligedQueue`` without its lock): their ratios to
  ``asyncio.Queue`` bound any asyncio queue with these semantics, and any design of
  ``impl.AsyncQueue``.
- *Against threads*: the same cycle with ``impl.Queue`` driven from the loop through
  ``asyncio.to_thread`` (send and receive in the default executor; delete, which never waits,
  called directly): what a user gets by wrapping the threaded queue instead.
- *Many waiters*: K receiver tasks waiting at once in ``receive()`` while as many messages are in
  flight as in the threaded idle figure (deadlines an hour away, so the loop timer is armed).
  Idle CPU: ``time.process_time()`` of the whole process over a quiet window (the loop sleeps;
  setup done and tasks settled first), as ``bench.realtime.idle_cpu`` measures the threaded
  queue. Wake in order: K sends, one after the other, then every receiver resumes; checked that
  the k-th receiver to wait got the k-th message, and timed from the first send to the last
  receive. Memory: ``tracemalloc`` bytes per waiting receiver (its task, coroutine frames and
  waiter future). Baselines: as many tasks waiting in ``asyncio.Queue.get()``.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import os
import platform
import queue
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from bench.floor import FloorQueue, FloorRecord, ObligedQueue
from impl.aio import AsyncQueue
from impl.clock import MonotonicClock
from impl.driver import QUEUE_DEFAULT, Default
from impl.errors import ShutDown
from impl.message import (
    Entry,
    Message,
    Receipt,
    new_object,
    set_message_attempt,
    set_message_body,
    set_message_id,
    set_message_receipt,
    set_receipt_attempt,
    set_receipt_id,
    set_receipt_queue,
)
from impl.queue import MAX_BATCH, Queue
from impl.validate import INF, check_optional_time

if TYPE_CHECKING:
    from bench.report import Row
    from bench.suite import Sizes

#: The body every message carries: small, so the figures measure the queue, not copying.
BODY = "hello"
#: Bound on a whole workload, in seconds: far above any healthy run.
WAIT = 120.0
#: Seconds the loop runs before a quiet window opens (every task reaches its wait at once;
#: this lets the process settle, as ``bench.realtime.SETTLE`` does for threads).
SETTLE = 0.2

AIO = "impl.AsyncQueue"
ASYNCIO = "asyncio.Queue"
TO_THREAD = "impl.Queue via asyncio.to_thread"
FLOOR = "the asyncio floor"
OBLIGED = "the obliged asyncio floor"

#: The thread-free configurations of the cycle rows (producer tasks, consumer tasks).
TASKS = ((1, 1), (4, 4))
#: The batch rows' tasks.
BATCH_TASKS = (4, 4)


def _split(n: int, p: int, c: int) -> tuple[int, int]:
    if n % p or n % c:
        raise ValueError(f"n={n} must be a multiple of both {p} and {c}")
    return n // p, n // c


async def _timed(workers: list[Coroutine[Any, Any, None]]) -> float:
    """Run the workers as tasks of one gather; seconds from their start to the last one's end.
    The tasks are created before the clock starts; none runs before the gather awaits."""
    tasks = [asyncio.ensure_future(w) for w in workers]
    t0 = time.perf_counter()
    async with asyncio.timeout(WAIT):
        await asyncio.gather(*tasks)
    return time.perf_counter() - t0


def _run(main: Callable[[], Awaitable[float]]) -> float:
    async def go() -> float:
        return await main()

    return asyncio.run(go())


# -- cycles ---------------------------------------------------------------------------------------


def aio_cycles(n: int, p: int, c: int) -> float:
    """Cycles per second of ``impl.AsyncQueue`` with ``p`` producer and ``c`` consumer tasks."""
    per_p, per_c = _split(n, p, c)

    async def main() -> float:
        q: AsyncQueue[str] = AsyncQueue(visibility_timeout=3600.0)

        async def produce() -> None:
            for _ in range(per_p):
                await q.send(BODY)

        async def consume() -> None:
            for _ in range(per_c):
                q.delete((await q.receive()).receipt)

        async with q:
            elapsed = await _timed([produce() for _ in range(p)] + [consume() for _ in range(c)])
            done = q.stats().done
        if done != n:
            raise RuntimeError(f"impl.AsyncQueue finished {done} of {n} messages")
        return n / elapsed

    return _run(main)


class AsyncFloor:
    """The floor queue (``bench.floor.FloorQueue``) for one event loop: the same records,
    receipts and deadline heap, with no lock (a loop's tasks need none) and coroutines where
    ``impl.AsyncQueue`` has them. It never waits (the workload sends before it receives):
    the least work any asyncio queue with these semantics does per message, so its ratio to
    ``asyncio.Queue`` bounds ``impl.AsyncQueue``'s."""

    def __init__(self, visibility_timeout: float) -> None:
        self.floor = FloorQueue(visibility_timeout)

    async def send(self, body: str) -> str:
        f = self.floor
        id = f"msg-{next(f.ids)}"
        f.accepted.add(id)
        f.visible[id] = FloorRecord(id, body)
        return id

    async def receive(self) -> tuple[str, str, int, tuple[str, int]]:
        f = self.floor
        _, rec = f.visible.popitem(last=False)
        rec.attempt += 1
        f.started += 1
        rec.seq = f.started
        rec.deadline = deadline = time.monotonic() + f.vt
        f.in_flight[rec.id] = rec
        heapq.heappush(f.timers, (deadline, rec.seq, rec.id, rec.attempt))
        return (rec.id, rec.body, rec.attempt, (rec.id, rec.attempt))

    def delete(self, receipt: tuple[str, int]) -> bool:
        f = self.floor
        rec = f.in_flight.get(receipt[0])
        if rec is None or rec.attempt != receipt[1]:
            return False
        del f.in_flight[rec.id]
        f.done.add(rec.id)
        return True


class AsyncObliged(AsyncFloor):
    """The asyncio floor doing what the contract obliges *every* asyncio queue to do per
    message, and nothing else: ``bench.floor.ObligedQueue``'s obligations (its docstring lists
    them, each with its contract section) without its lock, one loop's tasks needing none:
    check the arguments, read the time from an injected clock (``impl.MonotonicClock``), test
    the optional ``id`` and ``delay``, the shutdown, the capacity, retention and a dead-letter
    system, skip a fresh id a caller took, honour the call's visibility timeout (``None``: no
    deadline), keep the aim of the timer that fires deadlines (an earlier deadline re-aims it),
    count the waiters a step must wake, let only a live receipt of this queue act, and hand
    out :class:`impl.Message` and :class:`impl.Receipt` values, built as ``impl``'s machine
    builds them. Its ratio to ``asyncio.Queue`` is the most any design of ``impl.AsyncQueue``
    can reach. Its steps are ``ObligedQueue``'s written out again, not shared through a helper:
    a call per message would slow the floor and so understate the bound."""

    def __init__(self, visibility_timeout: float) -> None:
        self.state = ObligedQueue(visibility_timeout)  # its fields; its lock is never taken
        self.floor = self.state
        self.clock = MonotonicClock()

    async def send(
        self,
        body: str,
        *,
        id: str | None = None,
        delay: float | None = None,
        block: bool = True,
        timeout: float | None = None,
    ) -> str:
        if block is not True and block is not False:
            raise TypeError("block must be a bool")
        if timeout is not None and not (type(timeout) is float and 0.0 <= timeout < INF):
            raise TypeError("timeout must be a finite float >= 0")
        f = self.state
        if delay is None:
            delay = f.delay
        self.clock.now()  # read, as every send reads the time (a delay counts from it)
        if f.shut:
            raise ShutDown("send on a queue that has been shut down")
        if id is not None or delay or f.retention is not None or f.system is not None:
            raise f.refusal(id, delay)
        cap = f.capacity
        if cap is not None and len(f.visible) + len(f.in_flight) >= cap:
            raise queue.Full
        accepted = f.accepted
        while (fresh := f"msg-{next(f.ids)}") in accepted:
            pass  # a caller chose this one
        accepted.add(fresh)
        f.visible[fresh] = FloorRecord(fresh, body)
        if f.waiting:
            f.waiting -= 1  # a waiter's future would be resolved here; the floor has none
        return fresh

    async def receive(  # type: ignore[override]
        self,
        *,
        block: bool = True,
        timeout: float | None = None,
        visibility_timeout: float | Default | None = QUEUE_DEFAULT,
    ) -> Message[str]:
        if block is not True and block is not False:
            raise TypeError("block must be a bool")
        if timeout is not None and not (type(timeout) is float and 0.0 <= timeout < INF):
            raise TypeError("timeout must be a finite float >= 0")
        f = self.state
        if visibility_timeout is QUEUE_DEFAULT:
            vt: float | None = f.vt
        else:
            vt = check_optional_time("visibility_timeout", visibility_timeout)
        _, rec = f.visible.popitem(last=False)
        rec.attempt = attempt = rec.attempt + 1
        f.started = seq = f.started + 1
        rec.seq = seq
        id = rec.id
        f.in_flight[id] = rec
        if vt is not None:  # None: no deadline, no timer
            rec.deadline = deadline = self.clock.now() + vt
            heapq.heappush(f.timers, (deadline, seq, id, attempt))
            aim = f.aim
            if aim is None or deadline < aim:  # an earlier deadline: re-aim the loop timer
                f.aim = deadline
        r: Receipt = new_object(Receipt)
        set_receipt_queue(r, f.token)
        set_receipt_id(r, id)
        set_receipt_attempt(r, attempt)
        m: Message[str] = new_object(Message)
        set_message_id(m, id)
        set_message_body(m, rec.body)
        set_message_attempt(m, attempt)
        set_message_receipt(m, r)
        return m

    def delete(self, receipt: Any) -> bool:
        if not isinstance(receipt, Receipt):
            raise TypeError("receipt must be a Receipt")
        f = self.state
        rec = f.in_flight.get(receipt.id)
        if rec is None or rec.attempt != receipt.attempt or receipt.queue != f.token:
            return False
        del f.in_flight[rec.id]
        f.done.add(rec.id)
        if f.senders:
            f.senders -= 1  # a sender's future would be resolved here; the floor has none
        return True


def _floor_run(
    q: AsyncFloor, consume: Callable[[], Coroutine[Any, Any, None]], n: int, p: int, c: int
) -> float:
    """Cycles per second of a floor ``q``: ``p`` producer tasks sending ``n / p`` each and ``c``
    tasks of ``consume`` (each receiving and deleting ``n / c``); the producers send all before a
    consumer receives, so the floor never waits."""
    per_p, _ = _split(n, p, c)

    async def main() -> float:
        async def produce() -> None:
            for _ in range(per_p):
                await q.send(BODY)

        elapsed = await _timed([produce() for _ in range(p)] + [consume() for _ in range(c)])
        if len(q.floor.done) != n:
            raise RuntimeError(f"{type(q).__name__} finished {len(q.floor.done)} of {n}")
        return n / elapsed

    return _run(main)


def floor_cycles(n: int, p: int, c: int) -> float:
    """Cycles per second of :class:`AsyncFloor`, the tasks and N of :func:`aio_cycles`."""
    _, per_c = _split(n, p, c)
    q = AsyncFloor(3600.0)

    async def consume() -> None:
        for _ in range(per_c):
            q.delete((await q.receive())[3])

    return _floor_run(q, consume, n, p, c)


def obliged_cycles(n: int, p: int, c: int) -> float:
    """Cycles per second of :class:`AsyncObliged`, the tasks and N of :func:`aio_cycles`."""
    _, per_c = _split(n, p, c)
    q = AsyncObliged(3600.0)

    async def consume() -> None:
        for _ in range(per_c):
            q.delete((await q.receive()).receipt)

    return _floor_run(q, consume, n, p, c)


def asyncio_cycles(n: int, p: int, c: int) -> float:
    """Cycles per second of ``asyncio.Queue`` (put; get + task_done), same tasks and N."""
    per_p, per_c = _split(n, p, c)

    async def main() -> float:
        q: asyncio.Queue[str] = asyncio.Queue()

        async def produce() -> None:
            for _ in range(per_p):
                await q.put(BODY)

        async def consume() -> None:
            for _ in range(per_c):
                await q.get()
                q.task_done()

        elapsed = await _timed([produce() for _ in range(p)] + [consume() for _ in range(c)])
        if q._unfinished_tasks:  # type: ignore[attr-defined]  # no public counter
            raise RuntimeError("asyncio.Queue left tasks unfinished")
        return n / elapsed

    return _run(main)


def to_thread_cycles(n: int, p: int, c: int) -> float:
    """Cycles per second of ``impl.Queue`` driven from the loop through ``asyncio.to_thread``
    (send and receive in the default executor, delete called directly: it never waits)."""
    per_p, per_c = _split(n, p, c)

    async def main() -> float:
        q: Queue[str] = Queue(visibility_timeout=3600.0)

        async def produce() -> None:
            for _ in range(per_p):
                await asyncio.to_thread(q.send, BODY)

        async def consume() -> None:
            for _ in range(per_c):
                m = await asyncio.to_thread(q.receive, timeout=WAIT)
                q.delete(m.receipt)

        try:
            elapsed = await _timed([produce() for _ in range(p)] + [consume() for _ in range(c)])
            done = q.stats().done
        finally:
            q.close()
        if done != n:
            raise RuntimeError(f"impl.Queue via to_thread finished {done} of {n} messages")
        return n / elapsed

    return _run(main)


def aio_batches(n: int, p: int, c: int, size: int = MAX_BATCH) -> float:
    """Messages per second of ``impl.AsyncQueue`` in batches of ``size``: ``p`` producer tasks
    ``send_batch``, ``c`` consumer tasks ``receive_batch(size)`` + ``delete_batch``; raises
    ``RuntimeError`` unless every sent id was delivered exactly once."""
    per_p, per_c = _split(n, p, c)
    if per_p % size:
        raise ValueError(f"n={n} must be a multiple of {p} producers x batches of {size}")

    async def main() -> float:
        q: AsyncQueue[str] = AsyncQueue(visibility_timeout=3600.0)
        sent: list[str] = []
        delivered: list[str] = []

        async def produce() -> None:
            for _ in range(per_p // size):
                sent.extend(await q.send_batch([Entry(BODY) for _ in range(size)]))

        async def consume() -> None:
            left = per_c
            while left:
                msgs = await q.receive_batch(min(size, left))
                q.delete_batch([m.receipt for m in msgs])
                delivered.extend(m.id for m in msgs)
                left -= len(msgs)

        async with q:
            elapsed = await _timed([produce() for _ in range(p)] + [consume() for _ in range(c)])
        if len(delivered) != n or set(delivered) != set(sent) or len(set(sent)) != n:
            raise RuntimeError(
                f"impl.AsyncQueue batches: {len(sent)} sent, {len(delivered)} delivered, "
                f"{len(set(delivered))} distinct: not each exactly once"
            )
        return n / elapsed

    return _run(main)


# -- many waiters ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Waiters:
    """One run of K receivers waiting at once: the idle CPU seconds of the quiet window, the
    seconds from the first wake-up's send to the last receive, and bytes per waiter."""

    idle_cpu: float
    wake_seconds: float
    bytes_per_waiter: float


async def _settled_waiters(
    k: int, receive: Callable[[], Awaitable[str]], got: list[tuple[int, str]]
) -> tuple[list[asyncio.Task[None]], float]:
    """Start ``k`` receiver tasks and let each reach its wait; the tasks and the bytes per task
    that ``tracemalloc`` saw allocated for them (tasks, frames, futures)."""

    async def receiver(i: int) -> None:
        try:
            got.append((i, await receive()))
        except ShutDown:
            return

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tasks = [asyncio.ensure_future(receiver(i)) for i in range(k)]
        # Each task reaches its await in its first step, all before this one resumes.
        await asyncio.sleep(0)
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    if any(t.done() for t in tasks) or got:
        raise RuntimeError("a receiver did not wait")
    return tasks, used / k


async def _quiet_window(window: float) -> float:
    await asyncio.sleep(SETTLE)
    c0 = time.process_time()
    await asyncio.sleep(window)
    return time.process_time() - c0


def _check_order(got: list[tuple[int, str]], ids: list[str], who: str) -> None:
    # The k-th receiver to wait must get the k-th message, and resume k-th.
    if got != list(enumerate(ids)):
        raise RuntimeError(f"{who}: the waiting receivers were not woken in order")


def aio_waiters(k: int, in_flight: int, window: float) -> Waiters:
    """``k`` receivers waiting in ``impl.AsyncQueue.receive()``, ``in_flight`` messages held."""

    async def main() -> Waiters:
        q: AsyncQueue[str] = AsyncQueue(visibility_timeout=3600.0)
        async with q:
            for _ in range(in_flight):
                await q.send(BODY)
                await q.receive()
            got: list[tuple[int, str]] = []

            async def receive() -> str:
                m = await q.receive()
                q.delete(m.receipt)
                return m.id

            tasks, per_waiter = await _settled_waiters(k, receive, got)
            cpu = await _quiet_window(window)
            t0 = time.perf_counter()
            ids = [await q.send(BODY) for _ in range(k)]
            async with asyncio.timeout(WAIT):
                await asyncio.gather(*tasks)
            wake = time.perf_counter() - t0
        _check_order(got, ids, AIO)
        return Waiters(cpu, wake, per_waiter)

    return asyncio.run(main())


def asyncio_waiters(k: int, window: float) -> Waiters:
    """The same with ``k`` tasks waiting in ``asyncio.Queue.get()``."""

    async def main() -> Waiters:
        q: asyncio.Queue[str] = asyncio.Queue()
        got: list[tuple[int, str]] = []
        tasks, per_waiter = await _settled_waiters(k, q.get, got)
        cpu = await _quiet_window(window)
        t0 = time.perf_counter()
        ids = [str(i) for i in range(k)]
        for i in ids:
            await q.put(i)
        async with asyncio.timeout(WAIT):
            await asyncio.gather(*tasks)
        wake = time.perf_counter() - t0
        _check_order(got, ids, ASYNCIO)
        return Waiters(cpu, wake, per_waiter)

    return asyncio.run(main())


# -- what bounds the 1/1 cycle --------------------------------------------------------------------


def profile_cycles(n: int) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """``cProfile`` of :func:`aio_cycles` at 1/1 tasks: the share of own time of each file
    (``impl/aio.py``, ``impl/fast_machine.py``, ..., the event loop's ``asyncio/``), largest
    first, and of the ten costliest functions (``file:function``)."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.runcall(aio_cycles, n, 1, 1)
    raw: dict[tuple[str, int, str], tuple[Any, ...]] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in raw.values())
    by_file: dict[str, float] = {}
    by_function: dict[str, float] = {}
    for (path, _, function), v in raw.items():
        where = _short(path)
        by_file[where] = by_file.get(where, 0.0) + v[2] / total
        name = f"{where}:{function}" if where.endswith(".py") else function
        by_function[name] = by_function.get(name, 0.0) + v[2] / total
    top = sorted(by_function.items(), key=lambda kv: -kv[1])[:10]
    return sorted(by_file.items(), key=lambda kv: -kv[1]), top


def cycle_costs(n: int, repeat: int = 3) -> dict[str, float]:
    """Microseconds per cycle, best of ``repeat``, in one loop with no other task (all sends,
    then every receive + delete): ``impl.AsyncQueue``; the same calls on a plain ``impl.Queue``
    with ``block=False`` and no event loop (the machine's share); :class:`AsyncObliged` (what
    any design must spend); ``asyncio.Queue``."""

    def plain() -> float:
        q: Queue[str] = Queue(visibility_timeout=3600.0)
        t0 = time.perf_counter()
        for _ in range(n):
            q.send(BODY, block=False)
        for _ in range(n):
            q.delete(q.receive(block=False).receipt)
        elapsed = time.perf_counter() - t0
        q.close()
        return elapsed

    async def driver() -> float:
        q: AsyncQueue[str] = AsyncQueue(visibility_timeout=3600.0)
        t0 = time.perf_counter()
        for _ in range(n):
            await q.send(BODY)
        for _ in range(n):
            q.delete((await q.receive()).receipt)
        elapsed = time.perf_counter() - t0
        q.close()
        return elapsed

    async def obliged() -> float:
        q = AsyncObliged(3600.0)
        t0 = time.perf_counter()
        for _ in range(n):
            await q.send(BODY)
        for _ in range(n):
            q.delete((await q.receive()).receipt)
        return time.perf_counter() - t0

    async def stdlib() -> float:
        q: asyncio.Queue[str] = asyncio.Queue()
        t0 = time.perf_counter()
        for _ in range(n):
            await q.put(BODY)
        for _ in range(n):
            await q.get()
            q.task_done()
        return time.perf_counter() - t0

    best: dict[str, float] = {}
    for _ in range(repeat):
        for name, seconds in (
            (AIO, asyncio.run(driver())),
            ("impl.Queue, block=False, no loop", plain()),
            (OBLIGED, asyncio.run(obliged())),
            (ASYNCIO, asyncio.run(stdlib())),
        ):
            best[name] = min(best.get(name, float("inf")), seconds / n * 1e6)
    return best


def _short(path: str) -> str:
    # impl/ and bench/ files by their path in the repository; the standard library by package.
    parts = path.replace("\\", "/").split("/")
    for top in ("impl", "bench"):
        if top in parts:
            return "/".join(parts[parts.index(top) :])
    if "asyncio" in parts:
        return "asyncio (event loop, tasks, futures)"
    return "builtins and other" if path.startswith("~") or "<" in path else parts[-1]


def format_profile(n: int) -> str:
    """What :func:`profile_cycles` found, as ``python -m bench.aio --profile`` prints it."""
    costs = cycle_costs(n)
    lines = [f"one cycle (send; receive + delete), one task, {n:,} cycles, best of 3:"]
    lines += [f"  {us:6.2f} us  {name}" for name, us in costs.items()]
    from bench.suite import TARGETS  # the suite imports this module

    target = TARGETS["aio_1x1_vs_asyncio"].limit
    lines.append(
        f"  the 1/1 target ({target:g}x) needs {costs[ASYNCIO] / target:.2f} us or less per "
        f"cycle; the machine's steps alone (impl.Queue, block=False, no loop) take "
        f"{costs['impl.Queue, block=False, no loop'] / costs[ASYNCIO]:.1f}x asyncio.Queue's, "
        f"{OBLIGED} {costs[OBLIGED] / costs[ASYNCIO]:.1f}x"
    )
    files, functions = profile_cycles(n)
    lines.append(f"impl.AsyncQueue's 1/1 cycle ({n:,} cycles): own-time share by file (cProfile)")
    lines += [f"  {100 * share:5.1f}%  {where}" for where, share in files if share >= 0.005]
    lines.append("  the ten costliest functions:")
    lines += [f"  {100 * share:5.1f}%  {name}" for name, share in functions]
    return "\n".join(lines)


# -- the rows -------------------------------------------------------------------------------------


def _ratios(values: list[float], baselines: list[float]) -> str:
    return ", ".join(f"{v / b:.2f}" for v, b in zip(values, baselines, strict=True))


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def rows(sizes: Sizes, repeat: int) -> list[Row]:
    """Every row of the asyncio driver, unjudged (``bench.suite.judge`` attaches the targets)."""
    from bench.suite import row

    med = statistics.median
    n, nt, nb = sizes.aio_cycles, sizes.aio_thread_cycles, sizes.aio_batch_messages
    k = sizes.aio_waiters
    bp, bc = BATCH_TASKS
    runs: dict[str, list[float]] = {}
    waiters: dict[str, list[Waiters]] = {AIO: [], ASYNCIO: []}
    jobs: list[tuple[str, Callable[[], float]]] = []
    for p, c in TASKS:
        jobs += [
            (f"{p}x{c}:{AIO}", partial(aio_cycles, n, p, c)),
            (f"{p}x{c}:{ASYNCIO}", partial(asyncio_cycles, n, p, c)),
            (f"{p}x{c}:{FLOOR}", partial(floor_cycles, n, p, c)),
            (f"{p}x{c}:{OBLIGED}", partial(obliged_cycles, n, p, c)),
            (f"{p}x{c}:thread:{AIO}", partial(aio_cycles, nt, p, c)),
            (f"{p}x{c}:{TO_THREAD}", partial(to_thread_cycles, nt, p, c)),
        ]
    jobs.append((f"batch:{AIO}", partial(aio_batches, nb, bp, bc)))
    jobs.append((f"batch:{ASYNCIO}", partial(asyncio_cycles, nb, bp, bc)))
    for r in range(repeat):
        _progress(f"  asyncio: cycles and batches, run {r + 1}/{repeat}")
        for key, job in jobs:  # interleaved: each figure's runs beside its baseline's
            runs.setdefault(key, []).append(job())
        _progress(f"  asyncio: {k:,} waiting receivers, run {r + 1}/{repeat}")
        waiters[AIO].append(aio_waiters(k, sizes.idle_in_flight, sizes.idle_window))
        waiters[ASYNCIO].append(asyncio_waiters(k, sizes.idle_window))

    out: list[Row] = []
    for p, c in TASKS:
        a, b = runs[f"{p}x{c}:{AIO}"], runs[f"{p}x{c}:{ASYNCIO}"]
        f = runs[f"{p}x{c}:{FLOOR}"]
        out.append(
            row(f"aio_{p}x{c}_vs_asyncio", f"asyncio cycle throughput {p}/{c} tasks vs {ASYNCIO}",
                "cycles/s", med(a), "asyncio.Queue put+get", med(b),
                f"{n:,} cycles; ratio of each run: {_ratios(a, b)}")
        )  # fmt: skip
        out.append(
            row(f"aio_{p}x{c}_floor_vs_asyncio",
                f"asyncio cycle throughput {p}/{c} tasks, {FLOOR} vs {ASYNCIO}", "cycles/s",
                med(f), "asyncio.Queue put+get", med(b),
                "the floor queue's work per message in coroutines, no lock: its ratio bounds "
                f"any asyncio queue with these semantics; ratio of each run: {_ratios(f, b)}")
        )  # fmt: skip
        o = runs[f"{p}x{c}:{OBLIGED}"]
        out.append(
            row(f"aio_{p}x{c}_obliged_vs_asyncio",
                f"asyncio cycle throughput {p}/{c} tasks, {OBLIGED} vs {ASYNCIO}", "cycles/s",
                med(o), "asyncio.Queue put+get", med(b),
                "the asyncio floor plus each test and step the contract obliges per message "
                "(bench.floor.ObligedQueue's, without its lock): its ratio bounds any design of "
                f"impl.AsyncQueue; ratio of each run: {_ratios(o, b)}")
        )  # fmt: skip
    a, b = runs[f"batch:{AIO}"], runs[f"batch:{ASYNCIO}"]
    out.append(
        row(f"aio_batch_{bp}x{bc}_vs_asyncio",
            f"asyncio batch throughput {bp}/{bc} tasks vs {ASYNCIO}", "msgs/s", med(a),
            "asyncio.Queue put+get per message", med(b),
            f"{nb:,} messages, send_batch of 10 Entry; receive_batch(10) + delete_batch, each "
            f"delivered exactly once; ratio of each run: {_ratios(a, b)}")
    )  # fmt: skip
    for p, c in TASKS:
        a, b = runs[f"{p}x{c}:thread:{AIO}"], runs[f"{p}x{c}:{TO_THREAD}"]
        out.append(
            row(f"aio_{p}x{c}_vs_to_thread", f"asyncio cycle throughput {p}/{c} tasks vs "
                f"{TO_THREAD}", "cycles/s", med(a), f"{TO_THREAD} send/receive", med(b),
                f"{nt:,} cycles; ratio of each run: {_ratios(a, b)}")
        )  # fmt: skip
    per_2s = 2.0 / sizes.idle_window
    w, v = waiters[AIO], waiters[ASYNCIO]
    held = f"{sizes.idle_in_flight:,} in flight"
    out += [
        row("aio_idle_cpu", f"asyncio idle CPU: {held}, {k:,} receivers waiting", "ms per 2 s",
            med(x.idle_cpu for x in w) * per_2s * 1e3, f"asyncio.Queue, {k:,} get() waiting",
            med(x.idle_cpu for x in v) * per_2s * 1e3,
            f"window {sizes.idle_window:g} s, whole process"),
        row("aio_wake_in_order", f"asyncio wake {k:,} waiting receivers in order", "msgs/s",
            k / med(x.wake_seconds for x in w), f"asyncio.Queue, {k:,} get() waiting",
            k / med(x.wake_seconds for x in v),
            f"{k:,} sends, then every receiver resumes; the k-th to wait got the k-th message, "
            "in every run (both)"),
        row("aio_memory_per_waiter", f"asyncio memory per waiting receiver ({k:,} waiting)", "B",
            med(x.bytes_per_waiter for x in w), "asyncio.Queue get() task",
            med(x.bytes_per_waiter for x in v), "tracemalloc; the task, its frames, its future"),
    ]  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    from bench.report import format_notes, format_table, to_json
    from bench.suite import FULL, QUICK, judge

    summary = (__doc__ or "").split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m bench.aio", description=summary)
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument(
        "--repeat", type=int, help="runs per figure, median reported (default 3; 1 with --quick)"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if a target fails")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    parser.add_argument(
        "--profile", action="store_true", help="also print a cProfile of the 1/1 cycle"
    )
    args = parser.parse_args(argv)
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 3)
    if repeat < 1:
        parser.error("--repeat must be >= 1")
    sizes = QUICK if args.quick else FULL
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    report = judge(rows(sizes, repeat))
    seconds = time.perf_counter() - t0
    load_after = os.getloadavg()
    print(format_table(report))
    print()
    print(format_notes(report))
    print()
    print(
        f"{'quick' if args.quick else 'full'} run, median of {repeat}, {seconds:.0f} s; "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after"
    )
    if args.json:
        record = {
            "command": " ".join(["python -m bench.aio", *(sys.argv[1:] if argv is None else argv)]),
            "quick": args.quick,
            "repeat": repeat,
            "seconds": seconds,
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_before": list(load_before),
            "load_after": list(load_after),
            "rows": to_json(report),
        }
        with open(args.json, "w") as f:
            json.dump(record, f, indent=2, ensure_ascii=False)
            f.write("\n")
    if args.profile:
        print()
        print(format_profile(sizes.aio_cycles))
    failed = [r.key for r in report if r.passed is False]
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
