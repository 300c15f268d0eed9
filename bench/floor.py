"""What bounds the per-message targets: the least queue with these semantics, beside ``impl``.

``python -m bench.floor`` answers "is a target out of reach, and what bounds it?" with figures
from one run, not with estimates:

- :class:`FloorQueue` is the least thread-safe queue with SQS semantics that the benchmarks
  could time: one lock and one condition, an ordered dict of visible records, a dict of the
  in-flight ones, a heap of deadline tuples and a receipt per delivery, and *nothing else*: no
  argument checks, no invariant self-check, no trace, no shutdown, no sweeper, plain tuples for
  messages and receipts. It is not a queue anyone should use (a bad argument corrupts it); it
  is the floor under what ``impl.Queue`` must do per message.
- :class:`ObligedQueue` is the floor plus each test and step the contract obliges every
  implementation to make per message (argument checks, the injected clock, an ``RLock``, the
  waiters to wake, the shutdown, the capacity, a fresh id never one already used, the call's
  visibility timeout, the sweeper's aim, only this queue's live receipt acting, ``Message``
  and ``Receipt`` values, ``impl.Entry`` batches; its docstring cites the contract for each):
  its rate over the floor's bounds what any design can reach.
- :class:`ObligedMachine`, driven by :class:`ObligedDriver`, makes the same tests and steps
  split as ``impl`` splits them (a machine with no I/O, one call per operation from a thin
  driver): its rate bounds what a design of that shape can reach.
- The cycle (send, receive with a timeout, delete; visibility timeout of an hour) of
  ``queue.Queue``, the floor, the obliged floor, the obliged machine (not in batches: it has
  none) and ``impl.Queue``: in one thread (the work itself), and pinned to one CPU
  (``bench.cycle.one_cpu``) with one producer and one consumer, with four of each, and with
  four of each in batches of ten (``queue.Queue`` one message at a time, as the batch baseline
  of ``python -m bench``), each as a ratio to ``queue.Queue`` in the same run: the best of the
  rounds, and round by round each kind's rate over that round's floor (median, least, most),
  which says how far one round's ratio moves beside a target.
- Bytes per in-flight message of the floor and of ``impl.Queue`` (``tracemalloc``), and
  ``impl.Queue``'s bytes taken apart object by object (``sys.getsizeof`` of the parts one
  in-flight message holds; containers at their measured per-entry cost).
- Where ``impl.Queue``'s single-threaded cycle spends its time: ``cProfile``'s own-time share
  of each function (the profiler inflates call costs, so read shares, not microseconds).

The figures are printed and, with ``--json PATH``, written for ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import heapq
import itertools
import json
import pstats
import queue
import statistics
import sys
import threading
import time
import tracemalloc
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Final

from bench.cycle import (
    BODY,
    WAIT,
    impl_batch,
    impl_queue,
    one_cpu,
    split,
    stdlib_queue,
    timed,
)
from bench.report import Row, ratio
from impl.clock import FakeClock, MonotonicClock
from impl.driver import QUEUE_DEFAULT, Default
from impl.errors import ShutDown
from impl.machine import MAX_BATCH, Record
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
from impl.queue import Queue
from impl.validate import INF, check_optional_time

#: The visibility timeout of every cycle: an hour, so nothing expires and no sweep runs.
HOUR = 3600.0


class FloorRecord:
    """The floor's record of one message: what a delivery needs, in slots."""

    __slots__ = ("attempt", "body", "deadline", "id", "seq")

    def __init__(self, id: str, body: str) -> None:
        self.id = id
        self.body = body
        self.attempt = 0
        self.deadline = 0.0
        self.seq = 0


class FloorQueue:
    """The least thread-safe queue with SQS semantics (see the module docstring): trusts every
    argument, never checks itself, never expires anything. For measurement only."""

    def __init__(self, visibility_timeout: float) -> None:
        self.mutex = threading.Lock()
        self.not_empty = threading.Condition(self.mutex)
        self.visible: OrderedDict[str, FloorRecord] = OrderedDict()
        self.in_flight: dict[str, FloorRecord] = {}
        self.accepted: set[str] = set()  # ids stay reserved (IdsReserved)
        self.done: set[str] = set()
        self.timers: list[tuple[float, int, str, int]] = []
        self.started = 0
        self.vt = visibility_timeout
        self.ids = itertools.count(1)

    def send(self, body: str) -> str:
        with self.mutex:
            id = f"msg-{next(self.ids)}"
            self.accepted.add(id)
            self.visible[id] = FloorRecord(id, body)
            self.not_empty.notify()
            return id

    def receive(self, timeout: float) -> tuple[str, str, int, tuple[str, int]]:
        with self.mutex:
            if not self.visible:
                end = time.monotonic() + timeout
                while not self.visible:
                    if not self.not_empty.wait(end - time.monotonic()):
                        raise queue.Empty
            _, rec = self.visible.popitem(last=False)
            rec.attempt += 1
            self.started += 1
            rec.seq = self.started
            rec.deadline = deadline = time.monotonic() + self.vt
            self.in_flight[rec.id] = rec
            heapq.heappush(self.timers, (deadline, rec.seq, rec.id, rec.attempt))
            return (rec.id, rec.body, rec.attempt, (rec.id, rec.attempt))

    def delete(self, receipt: tuple[str, int]) -> bool:
        with self.mutex:
            rec = self.in_flight.get(receipt[0])
            if rec is None or rec.attempt != receipt[1]:
                return False
            del self.in_flight[rec.id]
            self.done.add(rec.id)
            return True

    # The batches: one lock round trip for up to ten messages, as impl.Queue's.

    def send_batch(self, bodies: Sequence[str]) -> list[str]:
        with self.mutex:
            ids = [f"msg-{i}" for i in itertools.islice(self.ids, len(bodies))]
            self.accepted.update(ids)
            for id, body in zip(ids, bodies, strict=True):
                self.visible[id] = FloorRecord(id, body)
            self.not_empty.notify(len(ids))  # a waiter per message, as one wake each
            return ids

    def receive_batch(self, n: int, timeout: float) -> list[tuple[str, str, int, tuple[str, int]]]:
        with self.mutex:
            if not self.visible:
                end = time.monotonic() + timeout
                while not self.visible:
                    if not self.not_empty.wait(end - time.monotonic()):
                        raise queue.Empty
            deadline = time.monotonic() + self.vt
            out = []
            for _ in range(min(n, len(self.visible))):
                _, rec = self.visible.popitem(last=False)
                rec.attempt += 1
                self.started += 1
                rec.seq = self.started
                rec.deadline = deadline
                self.in_flight[rec.id] = rec
                heapq.heappush(self.timers, (deadline, rec.seq, rec.id, rec.attempt))
                out.append((rec.id, rec.body, rec.attempt, (rec.id, rec.attempt)))
            return out

    def delete_batch(self, receipts: Sequence[tuple[str, int]]) -> list[bool]:
        with self.mutex:
            results = []
            for id, attempt in receipts:
                rec = self.in_flight.get(id)
                ok = rec is not None and rec.attempt == attempt
                if ok:
                    del self.in_flight[id]
                    self.done.add(id)
                results.append(ok)
            return results


class ObligedQueue(FloorQueue):
    """The floor queue doing what the contract obliges *every* implementation to do per
    message, and nothing else. Each obligation is a test or a step on the path of every message,
    so each is here as that test or step (``docs/contract.md``):

    - check the arguments (section 3, Errors): ``block``, ``timeout``, ``visibility_timeout``,
      the receipt's type, each batch entry;
    - read the time from an injected clock (section 3, Time: ``impl.MonotonicClock``);
    - hold an ``RLock`` (a ``KeyboardInterrupt`` in a wait cannot leave the lock with the wrong
      thread: docs/failure-model.md) and count the waiters of each condition, so that a step
      wakes whom it enabled (section 3, Locking and waking): a send the receivers, a delete the
      senders;
    - a send: the optional ``id`` and ``delay`` (``None``: a fresh id, the queue's delay), the
      shutdown (section 3, Shutdown), the capacity (section 1, ``CapacityBound``), retention
      and a dead-letter system (sections 7.2 and 7.4: a queue in neither, tested as such), and
      a fresh id never one already used (section 3, Ids: a caller may have chosen it);
    - a receive: the queue's visibility timeout or the call's, ``None`` meaning no deadline
      (section 3), and a deadline earlier than the one the sweeper waits for wakes it (section
      3, Locking and waking: "the sweeper waits for the earliest deadline, or for a new earlier
      one");
    - a delete: only a live receipt of *this* queue acts (section 1, receipts);
    - hand out :class:`impl.Message` and :class:`impl.Receipt` values, built as ``impl``'s
      machine builds them, and take :class:`impl.Entry` batches.

    What it leaves out is what no message of a benchmark run reaches, each refused by a test on
    the path rather than implemented: a caller's id, a delay, retention, a dead-letter system
    (``ValueError``), a full queue (``queue.Full``, never a wait for room) and an expiry (it keeps
    the sweeper's aim, as a driver must, but runs no sweeper thread: a run's deadlines are an
    hour away). Its rate beside the floor's is the most any design of ``impl.Queue`` can reach:
    what is left between it and ``impl.Queue`` is the design's."""

    def __init__(self, visibility_timeout: float, capacity: int | None = None) -> None:
        super().__init__(visibility_timeout)
        self.mutex = threading.RLock()  # type: ignore[assignment]
        self.not_empty = threading.Condition(self.mutex)
        self.not_full = threading.Condition(self.mutex)
        self.new_deadline = threading.Condition(self.mutex)
        self.clock = MonotonicClock()
        self.token = 1  # the queue a receipt names
        self.capacity = capacity
        self.delay = 0.0  # the queue's delay: what a send with ``delay=None`` takes
        self.retention: float | None = None
        self.system: object | None = None  # the dead-letter system, if any
        self.shut = False
        self.waiting = 0  # receivers waiting on not_empty
        self.senders = 0  # senders waiting on not_full (none: a full queue refuses)
        self.aim: float | None = None  # the deadline the sweeper waits for (None: none yet)

    @staticmethod
    def refusal(id: str | None, delay: float | None) -> Exception:
        """The error of a send the obliged floors do not implement (see the class docstring):
        only made once the send's one inline test has found one."""
        if id is not None or delay:
            return ValueError("the obliged floor takes no ids and no delays")
        return ValueError("the obliged floor measures a queue alone, without retention")

    def shutdown(self) -> None:
        """Sends raise ``ShutDown`` from now on; a waiting receiver wakes (section 3)."""
        with self.mutex:
            self.shut = True
            self.not_empty.notify_all()

    def send(
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
        if delay is None:
            delay = self.delay
        with self.mutex:
            self.clock.now()  # read, as every send reads the time (a delay counts from it)
            if self.shut:
                raise ShutDown("send on a queue that has been shut down")
            # Written out, not a call: a call per message would understate the bound.
            if id is not None or delay or self.retention is not None or self.system is not None:
                raise self.refusal(id, delay)
            cap = self.capacity
            if cap is not None and len(self.visible) + len(self.in_flight) >= cap:
                raise queue.Full
            accepted = self.accepted
            while (fresh := f"msg-{next(self.ids)}") in accepted:
                pass  # a caller chose this one
            accepted.add(fresh)
            self.visible[fresh] = FloorRecord(fresh, body)
            if self.waiting:
                self.not_empty.notify()
            return fresh

    def _wait_visible(self, timeout: float | None) -> None:
        """Wait until a message is visible (``mutex`` held), counted as a waiter, at most
        ``timeout`` seconds (``None``: no bound)."""
        end = None if timeout is None else self.clock.now() + timeout
        while not self.visible:
            if self.shut:
                raise ShutDown("receive on a shut-down queue with nothing visible")
            self.waiting += 1
            try:
                left = None if end is None else end - self.clock.now()
                if not self.not_empty.wait(left):
                    raise queue.Empty
            finally:
                self.waiting -= 1

    def receive(  # type: ignore[override]
        self,
        *,
        block: bool = True,
        timeout: float | None = None,
        visibility_timeout: float | Default | None = QUEUE_DEFAULT,
    ) -> Any:
        if block is not True and block is not False:
            raise TypeError("block must be a bool")
        if timeout is not None and not (type(timeout) is float and 0.0 <= timeout < INF):
            raise TypeError("timeout must be a finite float >= 0")
        if visibility_timeout is QUEUE_DEFAULT:
            vt: float | None = self.vt
        else:
            vt = check_optional_time("visibility_timeout", visibility_timeout)
        with self.mutex:
            if not self.visible:
                self._wait_visible(timeout)
            _, rec = self.visible.popitem(last=False)
            rec.attempt = attempt = rec.attempt + 1
            self.started = seq = self.started + 1
            rec.seq = seq
            id = rec.id
            self.in_flight[id] = rec
            if vt is not None:  # None: no deadline, no timer
                rec.deadline = deadline = self.clock.now() + vt
                heapq.heappush(self.timers, (deadline, seq, id, attempt))
                aim = self.aim
                if aim is None or deadline < aim:  # an earlier deadline: wake the sweeper
                    self.aim = deadline
                    self.new_deadline.notify()
            r: Receipt = new_object(Receipt)
            set_receipt_queue(r, self.token)
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
        with self.mutex:
            rec = self.in_flight.get(receipt.id)
            if rec is None or rec.attempt != receipt.attempt or receipt.queue != self.token:
                return False
            del self.in_flight[rec.id]
            self.done.add(rec.id)
            if self.senders:
                self.not_full.notify()
            return True

    # The batches: the caller's impl.Entry per message and each entry's checks (its type, no
    # FIFO field, its id and delay), Message values out, receipts' types checked; each message
    # as the single steps above.

    def send_entries(self, entries: Sequence[Entry[str]]) -> list[str]:
        if not 1 <= len(entries) <= MAX_BATCH:
            raise ValueError("entries must hold 1 to 10 items")
        for e in entries:
            if not isinstance(e, Entry) or e.group is not None or e.dedup_id is not None:
                raise TypeError("entries must be standard impl.Entry values")
            delay = self.delay if e.delay is None else e.delay
            if e.id is not None or delay or self.retention is not None or self.system is not None:
                raise self.refusal(e.id, delay)
        with self.mutex:
            self.clock.now()
            if self.shut:
                raise ShutDown("send_batch on a queue that has been shut down")
            cap = self.capacity
            n = len(entries)
            if cap is not None and len(self.visible) + len(self.in_flight) + n > cap:
                raise queue.Full
            accepted = self.accepted
            visible = self.visible
            ids = []
            for e in entries:
                while (id := f"msg-{next(self.ids)}") in accepted:
                    pass
                accepted.add(id)
                visible[id] = FloorRecord(id, e.body)
                ids.append(id)
            if self.waiting:
                self.not_empty.notify(n)
            return ids

    def receive_messages(self, n: int, timeout: float) -> list[Message[str]]:
        if type(n) is not int or not 1 <= n <= MAX_BATCH:
            raise ValueError("max_messages must be an int from 1 to 10")
        if timeout is not None and not (type(timeout) is float and 0.0 <= timeout < INF):
            raise TypeError("timeout must be a finite float >= 0")
        vt = self.vt
        with self.mutex:
            if not self.visible:
                self._wait_visible(timeout)
            deadline = self.clock.now() + vt
            out = []
            for _ in range(min(n, len(self.visible))):
                _, rec = self.visible.popitem(last=False)
                rec.attempt = attempt = rec.attempt + 1
                self.started = seq = self.started + 1
                rec.seq = seq
                rec.deadline = deadline
                id = rec.id
                self.in_flight[id] = rec
                heapq.heappush(self.timers, (deadline, seq, id, attempt))
                r: Receipt = new_object(Receipt)
                set_receipt_queue(r, self.token)
                set_receipt_id(r, id)
                set_receipt_attempt(r, attempt)
                m: Message[str] = new_object(Message)
                set_message_id(m, id)
                set_message_body(m, rec.body)
                set_message_attempt(m, attempt)
                set_message_receipt(m, r)
                out.append(m)
            aim = self.aim
            if aim is None or deadline < aim:
                self.aim = deadline
                self.new_deadline.notify()
            return out

    def delete_receipts(self, receipts: Sequence[Receipt]) -> list[bool]:
        for r in receipts:
            if not isinstance(r, Receipt):
                raise TypeError("receipts must be Receipt values")
        with self.mutex:
            results = []
            token = self.token
            for receipt in receipts:
                rec = self.in_flight.get(receipt.id)
                ok = rec is not None and rec.attempt == receipt.attempt and receipt.queue == token
                if ok:
                    del self.in_flight[receipt.id]
                    self.done.add(receipt.id)
                results.append(ok)
            if self.senders and any(results):
                self.not_full.notify(sum(results))
            return results


class ObligedMachine:
    """The obliged floor's state and single-message steps as a machine with no I/O: no lock, no
    clock read, no wait, no wake. Each step takes ``now`` and checked arguments and returns its
    result, or ``None`` when it is not the case the step serves (the driver then finds out why):
    the shape ``impl``'s design gives its queue (``impl.machine``, driven by the thin drivers of
    ``impl.threaded`` and ``impl.aio``), at the least it can cost. :class:`ObligedDriver`
    drives it; the two make exactly :class:`ObligedQueue`'s tests and steps, each written out
    here once more, since a shared helper would add a call per message to both."""

    def __init__(self, capacity: int | None = None) -> None:
        self.visible: OrderedDict[str, FloorRecord] = OrderedDict()
        self.in_flight: dict[str, FloorRecord] = {}
        self.accepted: set[str] = set()
        self.done: set[str] = set()
        self.timers: list[tuple[float, int, str, int]] = []
        self.started = 0
        self.ids = itertools.count(1)
        self.token = 1
        self.capacity = capacity
        self.retention: float | None = None
        self.system: object | None = None
        self.shut = False

    def send_now(self, now: float, body: str) -> str | None:
        """Accept ``body`` under a fresh id (TLA+ ``Send``), if the queue is open, alone,
        without retention and with room; else ``None``, nothing changed."""
        cap = self.capacity
        if (
            self.shut
            or self.retention is not None
            or self.system is not None
            or (cap is not None and len(self.visible) + len(self.in_flight) >= cap)
        ):
            return None
        accepted = self.accepted
        while (fresh := f"msg-{next(self.ids)}") in accepted:
            pass  # a caller chose this one
        accepted.add(fresh)
        self.visible[fresh] = FloorRecord(fresh, body)
        return fresh

    def receive_now(self, now: float, vt: float | None) -> Message[str] | None:
        """Deliver the head (TLA+ ``Receive``) with deadline ``now + vt`` (``None``: none), if
        a message is visible; else ``None``."""
        if not self.visible:
            return None
        _, rec = self.visible.popitem(last=False)
        rec.attempt = attempt = rec.attempt + 1
        self.started = seq = self.started + 1
        rec.seq = seq
        id = rec.id
        self.in_flight[id] = rec
        if vt is not None:
            rec.deadline = deadline = now + vt
            heapq.heappush(self.timers, (deadline, seq, id, attempt))
        r: Receipt = new_object(Receipt)
        set_receipt_queue(r, self.token)
        set_receipt_id(r, id)
        set_receipt_attempt(r, attempt)
        m: Message[str] = new_object(Message)
        set_message_id(m, id)
        set_message_body(m, rec.body)
        set_message_attempt(m, attempt)
        set_message_receipt(m, r)
        return m

    def delete_now(self, receipt: Receipt) -> bool:
        """Finish the delivery ``receipt`` names (TLA+ ``Delete``), if it is live here."""
        rec = self.in_flight.get(receipt.id)
        if rec is None or rec.attempt != receipt.attempt or receipt.queue != self.token:
            return False
        del self.in_flight[rec.id]
        self.done.add(rec.id)
        return True


class ObligedDriver:
    """The thin threaded driver of an :class:`ObligedMachine`: :class:`ObligedQueue`'s argument
    checks, lock, clock, waits and wakes around one call into the machine per operation. Its
    rate beside the obliged floor's is the price of that shape; beside ``impl.Queue``'s, what
    is left is ``impl``'s own design."""

    def __init__(self, visibility_timeout: float, capacity: int | None = None) -> None:
        self.machine = ObligedMachine(capacity)
        self.mutex = threading.RLock()
        self.not_empty = threading.Condition(self.mutex)
        self.not_full = threading.Condition(self.mutex)
        self.new_deadline = threading.Condition(self.mutex)
        self.clock = MonotonicClock()
        self.vt = visibility_timeout
        self.delay = 0.0
        self.waiting = 0
        self.senders = 0
        self.aim: float | None = None

    @property
    def done(self) -> set[str]:
        return self.machine.done

    def shutdown(self) -> None:
        with self.mutex:
            self.machine.shut = True
            self.not_empty.notify_all()

    def send(
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
        if delay is None:
            delay = self.delay
        with self.mutex:
            now = self.clock.now()
            m = self.machine
            fresh = None if id is not None or delay else m.send_now(now, body)
            if fresh is None:  # why not: what ObligedQueue tests inline
                if m.shut:
                    raise ShutDown("send on a queue that has been shut down")
                if id is not None or delay or m.retention is not None or m.system is not None:
                    raise ObligedQueue.refusal(id, delay)
                raise queue.Full
            if self.waiting:
                self.not_empty.notify()
            return fresh

    def receive(
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
        if visibility_timeout is QUEUE_DEFAULT:
            vt: float | None = self.vt
        else:
            vt = check_optional_time("visibility_timeout", visibility_timeout)
        with self.mutex:
            now = self.clock.now()
            m = self.machine.receive_now(now, vt)
            if m is None:
                end = None if timeout is None else now + timeout
                while (m := self.machine.receive_now(now, vt)) is None:
                    if self.machine.shut:
                        raise ShutDown("receive on a shut-down queue with nothing visible")
                    self.waiting += 1
                    try:
                        if not self.not_empty.wait(None if end is None else end - now):
                            raise queue.Empty
                    finally:
                        self.waiting -= 1
                    now = self.clock.now()
            if vt is not None:
                deadline = now + vt
                aim = self.aim
                if aim is None or deadline < aim:  # an earlier deadline: wake the sweeper
                    self.aim = deadline
                    self.new_deadline.notify()
            return m

    def delete(self, receipt: Any) -> bool:
        if not isinstance(receipt, Receipt):
            raise TypeError("receipt must be a Receipt")
        with self.mutex:
            ok = self.machine.delete_now(receipt)
            if ok and self.senders:
                self.not_full.notify()
            return ok


# -- the workloads ------------------------------------------------------------------------------

KINDS = ("queue.Queue", "floor", "obliged floor", "obliged machine", "impl.Queue")
#: The kinds of the batch workload (the obliged machine has no batch steps: the obliged floor
#: alone already bounds the batch target below it).
BATCH_KINDS: Final = ("queue.Queue", "floor", "obliged floor", "impl.Queue")
Work = Callable[[], None]


def _floor_workload(
    n: int, p: int, c: int, batch: bool, kind: str = "floor"
) -> tuple[list[Work], list[Work], Callable[[], int]]:
    """``p`` producers and ``c`` consumers moving ``n`` messages through a :class:`FloorQueue`
    (an :class:`ObligedQueue` for ``kind`` "obliged floor", an :class:`ObligedDriver` for
    "obliged machine"), one at a time or (``batch``) in tens (the floor's side of
    ``bench.cycle``'s workloads), and a count of the finished cycles."""
    per_p, per_c = split(n, p, c)
    if batch and per_p % MAX_BATCH:
        raise ValueError(f"n={n} must be a multiple of {p} producers x batches of {MAX_BATCH}")
    if kind == "obliged machine":
        if batch:
            raise ValueError("the obliged machine has no batch steps")
        od = ObligedDriver(HOUR)

        def produce_driven() -> None:
            for _ in range(per_p):
                od.send(BODY)

        def consume_driven() -> None:
            for _ in range(per_c):
                od.delete(od.receive(timeout=WAIT).receipt)

        return [produce_driven] * p, [consume_driven] * c, lambda: len(od.done)
    if kind == "obliged floor":
        oq = ObligedQueue(HOUR)

        def produce_obliged() -> None:
            if batch:
                for _ in range(per_p // MAX_BATCH):
                    oq.send_entries([Entry(BODY) for _ in range(MAX_BATCH)])
                return
            for _ in range(per_p):
                oq.send(BODY)

        def consume_obliged() -> None:
            if batch:
                left = per_c
                while left:
                    got = oq.receive_messages(min(MAX_BATCH, left), WAIT)
                    oq.delete_receipts([m.receipt for m in got])
                    left -= len(got)
                return
            for _ in range(per_c):
                oq.delete(oq.receive(timeout=WAIT).receipt)

        return [produce_obliged] * p, [consume_obliged] * c, lambda: len(oq.done)
    fq = FloorQueue(HOUR)
    if batch:

        def produce() -> None:
            for _ in range(per_p // MAX_BATCH):
                fq.send_batch([BODY] * MAX_BATCH)

        def consume() -> None:
            left = per_c
            while left:
                got = fq.receive_batch(min(MAX_BATCH, left), WAIT)
                fq.delete_batch([m[3] for m in got])
                left -= len(got)

    else:

        def produce() -> None:
            for _ in range(per_p):
                fq.send(BODY)

        def consume() -> None:
            for _ in range(per_c):
                fq.delete(fq.receive(WAIT)[3])

    return [produce] * p, [consume] * c, lambda: len(fq.done)


def one_thread(kind: str, n: int) -> float:
    """Cycles per second of ``kind`` in one thread: a send, then its receive and delete."""
    if kind == "queue.Queue":
        sq: queue.Queue[str] = queue.Queue()

        def work() -> None:
            for _ in range(n):
                sq.put(BODY)
                sq.get(timeout=WAIT)
                sq.task_done()

    elif kind == "floor":
        fq = FloorQueue(HOUR)

        def work() -> None:
            for _ in range(n):
                fq.send(BODY)
                fq.delete(fq.receive(WAIT)[3])

    elif kind in ("obliged floor", "obliged machine"):
        oq = ObligedQueue(HOUR) if kind == "obliged floor" else ObligedDriver(HOUR)

        def work() -> None:
            for _ in range(n):
                oq.send(BODY)
                oq.delete(oq.receive(timeout=WAIT).receipt)

    else:
        iq: Queue[str] = Queue(visibility_timeout=HOUR)

        def work() -> None:
            for _ in range(n):
                iq.send(BODY)
                iq.delete(iq.receive(timeout=WAIT).receipt)

    t0 = time.perf_counter()
    work()
    elapsed = time.perf_counter() - t0
    if kind == "impl.Queue":
        iq.close()
    return n / elapsed


def threaded(kind: str, n: int, p: int = 1, c: int = 1, batch: bool = False) -> float:
    """Cycles (messages) per second of ``kind`` with ``p`` producer and ``c`` consumer threads:
    ``queue.Queue`` and ``impl.Queue`` run ``python -m bench``'s own workloads (``bench.cycle``;
    ``queue.Queue`` one message at a time, also as the batch baseline), the floor the same ones
    on a :class:`FloorQueue`."""
    if kind == "queue.Queue":
        return stdlib_queue(n, p, c)
    if kind == "impl.Queue":
        return impl_batch(n, p, c) if batch else impl_queue(n, p, c)
    producers, consumers, done = _floor_workload(n, p, c, batch, kind)
    elapsed = timed(producers, consumers)
    if done() != n:
        raise RuntimeError(f"the floor finished {done()} of {n} cycles")
    return n / elapsed


def _rounds(
    measure: Callable[[str], float], repeat: int, kinds: Sequence[str] = KINDS
) -> dict[str, list[float]]:
    """Each of ``kinds``' rate in each of ``repeat`` rounds, the kinds interleaved within each
    round so that a change in the machine's load reaches all of them alike."""
    rates: dict[str, list[float]] = {kind: [] for kind in kinds}
    for _ in range(repeat):
        for kind in kinds:
            rates[kind].append(measure(kind))
    return rates


def best(rates: dict[str, list[float]]) -> dict[str, float]:
    """Each kind's best round: its least disturbed run, the figure the report compares."""
    return {kind: max(each) for kind, each in rates.items()}


def paired(rates: dict[str, list[float]], kind: str) -> dict[str, float]:
    """``kind``'s rate over the floor's round by round (a round runs the kinds back to back,
    under one load): the median, least and most of those ratios. The best rounds say what each
    kind can do; these say how far one round's ratio moves, and so how close to a target a
    best-of ratio can be read."""
    ratios = [k / f for k, f in zip(rates[kind], rates["floor"], strict=True)]
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}


# -- one operation at a time -------------------------------------------------------------------

#: The kinds :func:`per_operation` times, one operation at a time.
OP_KINDS: Final = ("floor", "obliged floor", "obliged machine", "impl.Queue")
#: The operations of a cycle, as :func:`per_operation` names them.
OPS: Final = ("send", "receive", "delete")
#: The differences the per-operation table prints, by the short name of their facts
#: (``tools.docnumbers``), each ``(label, minuend, subtrahend)``: what ``impl``'s design adds
#: to the obliged floor, and how much of that is the machine's shape (a call per operation
#: into a machine with no I/O) and how much ``impl``'s own.
DIFFERENCES: Final = {
    "design": ("the design", "impl.Queue", "obliged floor"),
    "shape": ("  the shape", "obliged machine", "obliged floor"),
    "own": ("  impl's own", "impl.Queue", "obliged machine"),
}


def _ops(kind: str, n: int) -> dict[str, float]:
    """Seconds for ``n`` sends, then ``n`` receives, then ``n`` deletes on a new queue of
    ``kind``, the garbage collector paused (it would charge one operation for all)."""
    q: Any
    if kind == "floor":
        q = FloorQueue(HOUR)

        def receive() -> Any:
            return q.receive(WAIT)

    else:
        # impl.Queue and the obliged floors take the same call (contract section 3).
        q = {"impl.Queue": Queue, "obliged floor": ObligedQueue, "obliged machine": ObligedDriver}[
            kind
        ](visibility_timeout=HOUR)
        q.send(BODY)
        q.delete(q.receive().receipt)  # impl.Queue's sweeper starts outside the timed part

        def receive() -> Any:
            return q.receive(timeout=WAIT)

    send, delete = q.send, q.delete
    clock = time.perf_counter
    gc.disable()
    try:
        t0 = clock()
        for _ in range(n):
            send(BODY)
        t1 = clock()
        got = [receive() for _ in range(n)]
        t2 = clock()
        if kind == "floor":
            for m in got:
                delete(m[3])
        else:
            for m in got:
                delete(m.receipt)
        t3 = clock()
    finally:
        gc.enable()
        if kind == "impl.Queue":
            q.close()
    return {"send": t1 - t0, "receive": t2 - t1, "delete": t3 - t2}


def per_operation(n: int, rounds: int) -> dict[str, dict[str, float]]:
    """Microseconds per send, receive and delete of each of :data:`OP_KINDS`, in one thread:
    the best of ``rounds`` rounds of ``n`` of each, the kinds interleaved within a round. What
    the cycle's rate does not say: which operation the difference between two kinds is in."""
    best = {kind: dict.fromkeys(OPS, float("inf")) for kind in OP_KINDS}
    for _ in range(rounds):
        for kind in OP_KINDS:
            for op, seconds in _ops(kind, n).items():
                best[kind][op] = min(best[kind][op], 1e6 * seconds / n)
    return best


# -- memory -------------------------------------------------------------------------------------


def _growth(work: Callable[[], object]) -> tuple[int, object]:
    tracemalloc.start()
    try:
        gc.collect()
        before, _ = tracemalloc.get_traced_memory()
        kept = work()
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return after - before, kept


def floor_memory(n: int) -> float:
    """Bytes per in-flight message of :class:`FloorQueue` (receipts not kept by the caller)."""
    fq = FloorQueue(HOUR)

    def fill() -> FloorQueue:
        for _ in range(n):
            fq.send(BODY)
            fq.receive(WAIT)
        return fq

    grown, _ = _growth(fill)
    return grown / n


def impl_memory(n: int) -> float:
    """Bytes per in-flight message of ``impl.Queue``, as ``bench.state.memory`` measures it."""
    q: Queue[str] = Queue(visibility_timeout=HOUR, clock=FakeClock())

    def fill() -> None:
        for _ in range(n):
            q.send(BODY)
            q.receive()

    grown, _ = _growth(fill)
    q.close()
    return grown / n


def _per_entry(make: Callable[[int], object], n: int) -> float:
    """Bytes per entry of the container ``make(n)`` builds (its keys and values excluded when
    ``make`` reuses existing objects)."""
    grown, _ = _growth(lambda: make(n))
    return grown / n


def impl_parts(n: int) -> dict[str, float]:
    """``impl.Queue``'s bytes per in-flight message, part by part: the objects one message
    holds (``sys.getsizeof``, which counts the garbage collector's header) and each
    container's measured cost per entry."""
    q: Queue[str] = Queue(visibility_timeout=HOUR, clock=FakeClock())
    q.send(BODY)
    q.receive()
    core = q.machine
    rec = next(iter(core.in_flight.values()))
    timer = core.timers[0]
    ids = [f"msg-{i}" for i in range(n)]
    parts = {
        f"record (Record, {len(Record.__slots__)} slots)": float(sys.getsizeof(rec)),
        "receipt (Receipt, kept for OneLiveReceipt)": float(sys.getsizeof(rec.receipt)),
        "timer (heap entry, a 4-tuple)": float(sys.getsizeof(timer)),
        "id (str)": float(sys.getsizeof(rec.id)),
        "deadline (float)": float(sys.getsizeof(rec.deadline)),
        "seq (int)": float(sys.getsizeof(rec.seq)),
        "accepted (set entry)": _per_entry(lambda k: set(ids[:k]), n),
        "in_flight (dict entry)": _per_entry(lambda k: dict.fromkeys(ids[:k]), n),
        "timers (heap list slot)": _per_entry(lambda k: [None] * k, n),
    }
    q.close()
    return parts


# -- profile ------------------------------------------------------------------------------------


def profile(n: int, top: int = 12) -> list[tuple[str, float]]:
    """The functions of ``impl.Queue``'s one-thread cycle with the largest share of own time."""
    q: Queue[str] = Queue(visibility_timeout=HOUR)

    def work() -> None:
        for _ in range(n):
            q.send(BODY)
            q.delete(q.receive(timeout=WAIT).receipt)

    prof = cProfile.Profile()
    prof.runcall(work)
    q.close()
    stats = pstats.Stats(prof)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in raw.values())
    rows = []
    for (file, _line, name), v in raw.items():
        where = (
            f"{file.rsplit('/', 2)[-2]}/{file.rsplit('/', 1)[-1]}:{name}" if "/" in file else name
        )
        rows.append((where, v[2] / total))
    rows = [r for r in rows if not r[0].startswith("bench/")]  # the driving loop is not impl's
    rows.sort(key=lambda r: -r[1])
    return rows[:top]


# -- report -------------------------------------------------------------------------------------


def run(n: int, repeat: int) -> dict[str, Any]:
    """Every figure of the report; ``n`` is rounded up to a multiple of 40 (4 producers x
    batches of ten)."""
    n = -(-n // 40) * 40
    rounds = {"one_thread": _rounds(lambda kind: one_thread(kind, n), repeat)}
    with one_cpu():
        rounds["one_cpu_1x1"] = _rounds(lambda kind: threaded(kind, n), repeat)
        rounds["one_cpu_4x4"] = _rounds(lambda kind: threaded(kind, n, 4, 4), repeat)
        rounds["one_cpu_4x4_batch"] = _rounds(
            lambda kind: threaded(kind, n, 4, 4, batch=True), repeat, BATCH_KINDS
        )
    return {
        "n": n,
        "repeat": repeat,
        **{key: best(rates) for key, rates in rounds.items()},
        "rounds": rounds,
        "memory": {"floor": floor_memory(n), "impl.Queue": impl_memory(n)},
        "impl_parts": impl_parts(n),
        "per_op": per_operation(2_000, 10 * repeat),
        "profile": profile(min(n, 20_000)),
    }


# -- the rows of ``python -m bench`` ------------------------------------------------------------

#: The thread configurations ``python -m bench`` measures beside the floor, all on one CPU.
SUITE_CONFIGS: Final = ((1, 1), (4, 4))
#: What the rows of the obliged floors say of them.
NOTES: Final = {
    "obliged floor": "; the obliged floor: the floor plus each test and step the contract "
    "obliges per message (arguments, clock, RLock, shutdown, capacity, fresh ids, the sweeper's "
    "aim, foreign receipts, Message/Receipt values); its ratio bounds any design's",
    "obliged machine": "; the obliged machine: the obliged floor's steps in a machine with no "
    "I/O, one call per operation from a thin driver (bench.floor.ObligedDriver); its ratio "
    "bounds any design of that shape, impl's",
}


def suite_rows(cycles: int, batch_messages: int, memory: int, repeat: int) -> list[Row]:
    """``python -m bench``'s rows beside the floor queue, measured in that run: ``impl.Queue``'s
    cycles at 1/1 and 4/4 threads and its batches at 4/4, all pinned to one CPU, as ratios to
    the floor's rate (and, the bounds, the obliged floor's and for the cycles the obliged
    machine's, as rows of their own); its bytes per
    in-flight message beside the floor's. The kinds alternate within each of ``repeat``
    rounds of four times the suite's sizes, and the best round of each is reported, as
    ``python -m bench.floor`` reports them: these rows measure the work per message, which the
    least disturbed round shows; the scheduler's share is the two-CPU rows'."""
    runs: dict[tuple[str, str], list[float]] = {}

    def measure(key: str, kind: str, n: int, p: int, c: int, batch: bool) -> None:
        with one_cpu():
            runs.setdefault((key, kind), []).append(threaded(kind, n, p, c, batch))

    n_cycles = -(-4 * cycles // 40) * 40
    n_batch = -(-4 * batch_messages // 40) * 40
    for _ in range(repeat):
        for p, c in SUITE_CONFIGS:
            for kind in ("floor", "obliged floor", "obliged machine", "impl.Queue"):
                measure(f"{p}x{c}", kind, n_cycles, p, c, False)
        for kind in ("floor", "obliged floor", "impl.Queue"):
            measure("batch", kind, n_batch, 4, 4, True)
    best = {k: max(v) for k, v in runs.items()}
    rows = []
    for p, c in SUITE_CONFIGS:
        cfg = f"{p}x{c}"
        floor_rate = best[(cfg, "floor")]
        for kind, key, what in (
            ("impl.Queue", f"cycle_{cfg}_one_cpu_vs_floor", "impl.Queue"),
            ("obliged floor", f"cycle_{cfg}_one_cpu_obliged_vs_floor", "the obliged floor"),
            ("obliged machine", f"cycle_{cfg}_one_cpu_machine_vs_floor", "the obliged machine"),
        ):
            value = best[(cfg, kind)]
            rows.append(
                Row(
                    key,
                    f"cycle throughput {p}/{c} threads on one CPU, {what} vs the floor queue",
                    "cycles/s",
                    value,
                    "bench.floor.FloorQueue, one CPU",
                    floor_rate,
                    ratio(value, floor_rate),
                    note=f"{n_cycles:,} cycles, best of {repeat}" + NOTES.get(kind, ""),
                )
            )
    floor_b = best[("batch", "floor")]
    for kind, key, what in (
        ("impl.Queue", "batch_4x4_one_cpu_vs_floor", "impl.Queue"),
        ("obliged floor", "batch_4x4_one_cpu_obliged_vs_floor", "the obliged floor"),
    ):
        value = best[("batch", kind)]
        rows.append(
            Row(
                key,
                f"batch throughput 4/4 threads on one CPU, {what} vs the floor queue",
                "msgs/s",
                value,
                "bench.floor.FloorQueue batches of ten, one CPU",
                floor_b,
                ratio(value, floor_b),
                note=f"{n_batch:,} messages, best of {repeat}; the callers of impl.Queue and of "
                "the obliged floor build an impl.Entry per message, which the queue checks; the "
                "floor takes bodies",
            )
        )
    mem_impl, mem_floor = impl_memory(memory), floor_memory(memory)
    rows.append(
        Row(
            "memory_in_flight_vs_floor",
            "memory per in-flight message, impl.Queue vs the floor queue",
            "B",
            mem_impl,
            "bench.floor.FloorQueue",
            mem_floor,
            ratio(mem_impl, mem_floor),
            note="tracemalloc; receipts not kept by the caller",
        )
    )
    return rows


#: The cycle figures of :func:`run`, by key, and their titles in the report.
TITLES: Final = {
    "one_thread": "one thread",
    "one_cpu_1x1": "1 producer / 1 consumer, one CPU",
    "one_cpu_4x4": "4 producers / 4 consumers, one CPU",
    "one_cpu_4x4_batch": "4 / 4 in batches of ten (queue.Queue: one at a time), one CPU",
}


def text(result: dict[str, Any]) -> str:
    lines = [f"cycles: send + receive + delete, n={result['n']}, best of {result['repeat']}"]
    for key, title in TITLES.items():
        fig = result[key]
        base = fig["queue.Queue"]
        lines.append(f"  {title}:")
        for kind in fig:
            lines.append(
                f"    {kind:<15} {fig[kind]:>10,.0f}/s  {fig[kind] / base:5.2f}x queue.Queue"
            )
        lines.append(f"    impl.Queue / floor: {fig['impl.Queue'] / fig['floor']:.2f}")
        bound = fig["obliged floor"] / fig["floor"]
        lines.append(f"    obliged floor / floor: {bound:.2f} (the most any design reaches)")
        if "obliged machine" in fig:
            shaped = fig["obliged machine"] / fig["floor"]
            lines.append(
                f"    obliged machine / floor: {shaped:.2f} (the most a machine with no I/O and "
                "a thin driver reaches)"
            )
        lines.append("    round by round, of the floor's rate: median (least to most)")
        for kind in fig:
            if kind not in ("queue.Queue", "floor"):
                r = paired(result["rounds"][key], kind)
                lines.append(
                    f"      {kind:<15} {r['median']:.2f} ({r['min']:.2f} to {r['max']:.2f})"
                )
    mem = result["memory"]
    lines.append("bytes per in-flight message (tracemalloc):")
    lines.append(f"    floor        {mem['floor']:7.1f} B")
    lines.append(f"    impl.Queue   {mem['impl.Queue']:7.1f} B")
    lines.append("  impl.Queue, part by part:")
    parts = result["impl_parts"]
    for name, size in parts.items():
        lines.append(f"    {size:7.1f} B  {name}")
    lines.append(f"    {sum(parts.values()):7.1f} B  sum of the parts")
    per_op = result["per_op"]
    lines.append(
        f"one operation at a time, one thread: microseconds, best of {10 * result['repeat']} "
        "rounds of 2,000"
    )
    lines.append(f"    {'':<15}" + "".join(f"{op:>9}" for op in OPS) + f"{'sum':>9}")
    for kind in OP_KINDS:
        us = per_op[kind]
        lines.append(
            f"    {kind:<15}" + "".join(f"{us[op]:9.3f}" for op in OPS) + f"{sum(us.values()):9.3f}"
        )
    for label, minuend, subtrahend in DIFFERENCES.values():
        d = {op: per_op[minuend][op] - per_op[subtrahend][op] for op in OPS}
        lines.append(
            f"    {label:<15}"
            + "".join(f"{d[op]:+9.3f}" for op in OPS)
            + f"{sum(d.values()):+9.3f}  ({minuend} - the {subtrahend})"
        )
    lines.append("impl.Queue's one-thread cycle: own-time share by function (cProfile)")
    for where, share in result["profile"]:
        lines.append(f"    {share:6.1%}  {where}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.floor", description=__doc__.split("\n")[0]
    )
    parser.add_argument("-n", type=int, default=100_000, help="cycles per measurement")
    parser.add_argument("--repeat", type=int, default=5, help="rounds; the best is kept")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    if args.n < 1 or args.repeat < 1:
        parser.error("-n and --repeat must be >= 1")
    result = run(args.n, args.repeat)
    print(text(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
