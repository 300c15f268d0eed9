"""Benchmarks of how the queue's cost grows with its state, on a fake clock, in one thread.

- :func:`cycle_times`: the time of one send + receive + delete cycle while ``n`` other messages
  are in flight. Expiry is kept in a heap ordered by deadline, so this should barely depend on
  ``n``. Each cycle deletes the *oldest* delivery still held (receipts are kept in receive
  order), as consumers that finish in turn would, so the measurement touches old, cold memory
  rather than only the message it just made.
- :func:`expiry`: how fast one ``sweep()`` re-queues ``n`` messages whose deadlines all passed.
- :func:`memory`: bytes of Python memory per in-flight message, excluding its body (all
  messages share one body object), as ``tracemalloc`` counts them.

Each comes with the standard library's ``queue.Queue`` doing the nearest equivalent work, as the
baseline measured beside it.
"""

from __future__ import annotations

import collections
import gc
import os
import queue
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass

from impl.clock import FakeClock
from impl.message import Receipt
from impl.queue import Queue

BODY = "hello"
#: A visibility timeout far beyond any benchmark: nothing expires unless the clock is advanced.
LONG = 1e9


def rss_bytes() -> int | None:
    """The process's resident memory now, from ``/proc`` (``None`` where there is none)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class CycleTime:
    """Seconds per cycle with ``n`` in flight (median over the repeats), and what it took."""

    n: int
    seconds: float  # heap-rebuild share included, see cycle_times
    stdlib_seconds: float  # queue.Queue put + get with n items queued, the same way
    setup_seconds: float
    rss_growth: int | None  # bytes of resident memory the n in-flight messages took
    rebuild_seconds: float  # one rebuild of the expiry heap at this load (a pause)
    rebuild_share: float  # its cost per cycle, added to seconds when the window missed it


class _Loaded:
    """An ``impl.Queue`` holding ``n`` in-flight messages, and their receipts in receive order."""

    def __init__(self, n: int) -> None:
        gc.collect()
        rss0 = rss_bytes()
        t0 = time.perf_counter()
        self.n = n
        self.q: Queue[str] = Queue(visibility_timeout=LONG, clock=FakeClock())
        self.held: collections.deque[Receipt] = collections.deque()
        for _ in range(n):
            self.q.send(BODY)
            self.held.append(self.q.receive().receipt)
        self.setup = time.perf_counter() - t0
        rss1 = rss_bytes()
        self.rss_growth = None if rss0 is None or rss1 is None else rss1 - rss0

    def window(self, cycles: int) -> float:
        """Seconds per cycle over ``cycles`` cycles; the load stays at ``n``."""
        q, held = self.q, self.held
        t0 = time.perf_counter()
        for _ in range(cycles):
            q.send(BODY)
            received = q.receive()
            q.delete(held.popleft())  # the oldest delivery: cold memory, as in a real backlog
            held.append(received.receipt)
        return (time.perf_counter() - t0) / cycles

    def rebuild(self) -> float:
        """Seconds one rebuild of the expiry heap takes (it runs under the lock: a pause)."""
        # Internal, but timing it directly is the honest way to charge for it. The cyclic GC is
        # paused meanwhile: a full collection that the rebuild's allocations happen to trigger
        # walks every object of the process (the other loads too), and is not the rebuild's cost.
        gc.collect()
        gc.disable()
        try:
            with self.q.mutex:
                t0 = time.perf_counter()
                self.q.machine.compact()
                return time.perf_counter() - t0
        finally:
            gc.enable()

    def close(self) -> None:
        in_flight = self.q.stats().in_flight
        self.q.close()
        if in_flight != self.n:
            raise RuntimeError(f"{in_flight} in flight, expected {self.n}")


class _Queued:
    """A ``queue.Queue`` holding ``n`` items: the baseline of :class:`_Loaded`."""

    def __init__(self, n: int) -> None:
        self.q: queue.Queue[str] = queue.Queue()
        for _ in range(n):
            self.q.put(BODY)

    def window(self, cycles: int) -> float:
        q = self.q
        t0 = time.perf_counter()
        for _ in range(cycles):
            q.put(BODY)
            q.get()
            q.task_done()
        return (time.perf_counter() - t0) / cycles


def cycle_times(loads: tuple[int, ...], cycles: int, repeat: int) -> list[CycleTime]:
    """Seconds per send + receive + delete cycle of ``impl.Queue`` at each load.

    All loads are built first, then measured in turns (every load once per repeat, each beside
    its ``queue.Queue`` baseline), so background noise spreads over all of them alike.

    Deleting leaves a stale entry in the expiry heap, and the heap is rebuilt (O(n), under the
    lock) once stale entries outnumber live ones, i.e. once per about ``n`` cycles. A window
    shorter than that would miss the rebuild at large ``n`` and flatter the figure, so the
    rebuild is timed on its own and its share per cycle added whenever ``cycles < n``.
    """
    built = [(_Loaded(n), _Queued(n)) for n in loads]
    try:
        times: list[list[float]] = [[] for _ in loads]
        stdlib: list[list[float]] = [[] for _ in loads]
        for _ in range(repeat):
            for i, (loaded, queued) in enumerate(built):
                times[i].append(loaded.window(cycles))
                stdlib[i].append(queued.window(cycles))
        results = []
        for i, (loaded, _) in enumerate(built):
            rebuild = loaded.rebuild()
            share = rebuild / (loaded.n + 16) if cycles < loaded.n else 0.0
            results.append(
                CycleTime(loaded.n, _median(times[i]) + share, _median(stdlib[i]),
                          loaded.setup, loaded.rss_growth, rebuild, share)
            )  # fmt: skip
    finally:
        for loaded, _ in built:
            loaded.close()
    return results


def expiry(n: int, repeat: int) -> float:
    """Messages per second that one ``sweep()`` re-queues when ``n`` deadlines pass at once."""
    rates = []
    for _ in range(repeat):
        clock = FakeClock()
        q: Queue[str] = Queue(visibility_timeout=10.0, clock=clock)
        for _ in range(n):
            q.send(BODY)
        # Closed before the first receive, so no sweeper thread exists: the timed sweep() below
        # is the only thing that expires, and nothing races it. Receives still drain what is
        # visible after a shutdown.
        q.close()
        for _ in range(n):
            q.receive()
        clock.advance(10.0)
        t0 = time.perf_counter()
        q.sweep()
        elapsed = time.perf_counter() - t0
        stats = q.stats()
        if stats.visible != n or stats.in_flight != 0:
            raise RuntimeError(f"sweep left {stats.in_flight} in flight, {stats.visible} visible")
        rates.append(n / elapsed)
    return _median(rates)


def stdlib_put_rate(n: int, repeat: int) -> float:
    """Items per second that ``queue.Queue.put`` makes available: the baseline for expiry."""
    rates = []
    for _ in range(repeat):
        q: queue.Queue[str] = queue.Queue()
        t0 = time.perf_counter()
        for _ in range(n):
            q.put(BODY)
        rates.append(n / (time.perf_counter() - t0))
    return _median(rates)


def memory(n: int) -> float:
    """Bytes per in-flight message of ``impl.Queue`` (generated ids; body shared, so excluded).

    Sends and receives alternate, so the visible FIFO never grows and the figure is the cost of
    an in-flight message alone: its id, record, index entries and expiry heap entry.
    """
    q: Queue[str] = Queue(visibility_timeout=LONG, clock=FakeClock())
    try:

        def fill() -> None:
            for _ in range(n):
                q.send(BODY)
                q.receive()

        growth = _traced_growth(fill)
        stats = q.stats()
    finally:
        q.close()
    if stats.in_flight != n:
        raise RuntimeError(f"{stats.in_flight} in flight, expected {n}")
    return growth / n


def stdlib_memory(n: int) -> float:
    """Bytes per item of ``queue.Queue`` holding ``(id, body)`` pairs with 32-character ids.

    The least a FIFO of identified messages needs; impl.Queue's generated ids are 32 characters.
    """
    q: queue.Queue[tuple[str, str]] = queue.Queue()

    def fill() -> None:
        for i in range(n):
            q.put((f"{i:032x}", BODY))

    return _traced_growth(fill) / n


def _traced_growth(work: Callable[[], None]) -> int:
    """Bytes of Python memory that ``work()`` left allocated, as ``tracemalloc`` counts them."""
    tracemalloc.start()
    try:
        gc.collect()
        before, _ = tracemalloc.get_traced_memory()
        work()
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return after - before


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2
