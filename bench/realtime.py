"""Benchmarks on the real clock: what an idle queue costs, and how punctual expiry is.

- :func:`idle_cpu`: CPU seconds the whole process uses during a quiet window while a queue holds
  10 thousand in-flight messages (deadlines an hour away) and 8 threads are blocked in
  ``receive()`` on it. Threads wait on conditions, and the sweeper waits for the earliest
  deadline, so this should be about zero. Setup is finished, and the threads have had time to
  block, before the window opens.
- :func:`redelivery`: how late after its deadline an expired message reaches a receiver that
  is blocked waiting for it: the sweeper's timed wait, the sweep, the notify and the receiver's
  wakeup, end to end. Lateness is read on the queue's own clock against the exact deadline the
  queue recorded (from ``snapshot()``).

Each has a ``queue.Queue`` baseline measured the same way: threads blocked in ``get()`` for the
idle cost; a ``get(timeout=vt)`` that runs out, for the lateness of a plain timed wait.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from dataclasses import dataclass

from impl.errors import ShutDown
from impl.queue import Queue

BODY = "hello"
#: Seconds the threads get to reach their blocking wait before a quiet window opens.
SETTLE = 0.2


def idle_cpu(in_flight: int, receivers: int, window: float) -> float:
    """CPU seconds used by the process in ``window`` real seconds around an idle ``impl.Queue``."""
    q: Queue[str] = Queue(visibility_timeout=3600.0)
    for _ in range(in_flight):
        q.send(BODY)
        q.receive()

    def blocked_receiver() -> None:
        try:
            q.receive()
        except ShutDown:
            return
        raise RuntimeError("an idle receiver got a message")

    threads = [threading.Thread(target=blocked_receiver, daemon=True) for _ in range(receivers)]
    try:
        for t in threads:
            t.start()
        cpu = _quiet_window(window)
    finally:
        q.close()  # wakes the receivers with ShutDown and stops the sweeper
        for t in threads:
            t.join(10)
    if any(t.is_alive() for t in threads):
        raise RuntimeError("a receiver outlived close()")
    return cpu


def stdlib_idle_cpu(receivers: int, window: float) -> float:
    """The same window with ``receivers`` threads blocked in ``get()`` on a ``queue.Queue``."""
    q: queue.Queue[str | None] = queue.Queue()
    threads = [threading.Thread(target=q.get, daemon=True) for _ in range(receivers)]
    try:
        for t in threads:
            t.start()
        cpu = _quiet_window(window)
    finally:
        for _ in threads:
            q.put(None)
        for t in threads:
            t.join(10)
    return cpu


def _quiet_window(window: float) -> float:
    time.sleep(SETTLE)  # a benchmark may sleep: let every thread reach its wait
    c0 = time.process_time()
    time.sleep(window)
    return time.process_time() - c0


@dataclass(frozen=True)
class Lateness:
    """Seconds between a deadline and the wakeup it caused: every sample, in measured order."""

    samples: list[float]

    def quantile(self, q: float) -> float:
        s = sorted(self.samples)
        return s[min(len(s) - 1, int(q * len(s)))]


def redelivery(samples: int, vt: float) -> Lateness:
    """Lateness of ``samples`` redeliveries, each to a receiver already blocked in ``receive()``.

    For each sample the main thread sends a message and receives it with visibility timeout
    ``vt`` (and never deletes it); then a receiver thread blocks in ``receive()`` until the
    sweeper redelivers that message, and notes the time on the queue's clock.
    """
    q: Queue[str] = Queue(visibility_timeout=vt)
    go = threading.Event()
    got = threading.Event()
    arrivals: list[tuple[float, str, int]] = []
    errors: list[BaseException] = []

    def receiver() -> None:
        try:
            for _ in range(samples):
                if not go.wait(30):
                    raise RuntimeError("never told to receive")
                go.clear()
                m = q.receive(timeout=30, visibility_timeout=None)
                arrivals.append((q.clock.now(), m.id, m.attempt))
                q.delete(m.receipt)
                got.set()
        except BaseException as e:  # re-raised in the main thread
            errors.append(e)
            got.set()

    thread = threading.Thread(target=receiver, daemon=True)
    thread.start()
    lateness = []
    try:
        for _ in range(samples):
            id = q.send(BODY)
            first = q.receive(block=False)
            (held,) = q.snapshot().in_flight
            assert held.id == id == first.id and held.deadline is not None
            got.clear()
            go.set()
            if not got.wait(30) or errors:
                raise errors[0] if errors else RuntimeError("no redelivery within 30 s")
            arrived, rid, attempt = arrivals[-1]
            if (rid, attempt) != (id, 2):
                raise RuntimeError(f"expected the redelivery of {id}, got {rid} attempt {attempt}")
            lateness.append(arrived - held.deadline)
    finally:
        q.close()
        thread.join(10)
    return Lateness(lateness)


def stdlib_timed_wait(samples: int, vt: float) -> Lateness:
    """Lateness of ``queue.Queue.get(timeout=vt)`` on an empty queue: a plain timed wait."""
    q: queue.Queue[str] = queue.Queue()
    lateness = []
    for _ in range(samples):
        t0 = time.perf_counter()
        with contextlib.suppress(queue.Empty):
            q.get(timeout=vt)
        lateness.append(time.perf_counter() - t0 - vt)
    return Lateness(lateness)
