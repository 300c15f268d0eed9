"""The threaded standard queue with SQS semantics: ``impl.Queue``, shaped after ``queue.Queue``.

``Queue`` is the threaded driver (:class:`impl.threaded.BaseQueue`: the lock, three named
conditions, the waits, the trace, the sweeper) of the standard queue machine
(:class:`impl.machine.Machine`: the state and the contract's steps, with no I/O), plus the
standard sends. Each transition of the contract (section 2), batches included, is one critical
section in which the machine does exactly what ``spec.transitions`` does to the pure state,
then the driver wakes whom the step enabled. Time comes only from the injected clock; nothing
here sleeps or polls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from impl.driver import check_batch, check_entries, step_of
from impl.fast_machine import FastMachine
from impl.machine import MAX_BATCH, Machine, T
from impl.message import Entry
from impl.outcome import Blocked
from impl.threaded import BaseQueue, TraceStep
from impl.validate import INF, check_bool, check_id, check_optional_time, check_time

__all__ = ["MAX_BATCH", "Queue", "TraceStep"]


class Queue(BaseQueue[T]):
    """An in-memory, thread-safe queue with SQS semantics: visibility timeouts, at-least-once.

    ``send`` appends to a FIFO of visible messages (or, with a delay, holds the message until
    its ``visible_at`` and then appends it); ``receive`` hands out the head and hides it for a
    visibility timeout instead of removing it; ``delete`` with the delivery's receipt removes it
    for good. A delivery not deleted in time is redelivered with ``attempt + 1`` (or
    dead-lettered after ``max_receives`` deliveries), so a consumer must be idempotent. The
    batch methods (``send_batch``, ``receive_batch``, ``delete_batch``,
    ``change_visibility_batch``) do up to ten of those in one critical section; ``purge``
    cancels every active message at once.

    The state and its invariants are the machine's (:class:`impl.machine.Machine`); the
    threads, the conditions and the failure model are the driver's
    (:class:`impl.threaded.BaseQueue`).
    """

    machine_class: ClassVar[type[Machine[Any]]] = FastMachine

    def send(
        self,
        body: T,
        *,
        id: str | None = None,
        delay: float | None = None,
        block: bool = True,
        timeout: float | None = None,
    ) -> str:
        """Append a message to the tail of the visible FIFO and return its id.

        ``id`` must be new to this queue; ``None`` asks for a fresh generated id (a ``str``
        subclass is stored as a plain ``str``). ``delay`` (``None``: the queue's): a message
        sent with a delay > 0 is ``DELAYED`` until now + ``delay``, when the sweep appends it to
        the visible tail; it holds its slot meanwhile. When the queue is full, wait for room
        (``block=True``, at most ``timeout`` seconds if given) or raise :class:`Full` at once
        (``block=False``). Either the message is accepted, or an exception leaves the queue
        unchanged and the id unreserved: ``TypeError``/``ValueError`` for bad arguments and
        :class:`DuplicateIdError` (a ``ValueError``) for an id already accepted, all before any
        waiting; :class:`Full` when no room came; :class:`ShutDown` after ``shutdown()``; and
        whatever the clock or the trace sink raises. An id that another sender takes while this
        one waits raises :class:`DuplicateIdError` when this one wakes.
        """
        if id is not None:
            id = check_id("id", id)
        d = self._delay if delay is None else check_time("delay", delay)
        if block is not True and block is not False:
            check_bool("block", block)
        # None and a float in range (the common values) pass two tests and no call.
        if timeout is not None and not (type(timeout) is float and 0.0 <= timeout < INF):
            timeout = check_time("timeout", timeout)
        if self._sink_thread is not None:
            self._refuse_reentry("send")
        with self.mutex:
            now = self._clock.now()
            fast = self._fast
            if fast is not None and id is None and not d:
                fresh = fast.send_now(now, body)
                if fresh is not None:  # its effect: one message made deliverable
                    if self._waiting[self.not_empty]:
                        self.conditions.wake(1, 0)
                    return fresh
            m = self.machine
            try:
                out = m.send(now, id, body, d)
            except BaseException:
                self.conditions.notify(self.not_full)  # pass on a notify we may have taken
                raise
            if isinstance(out, Blocked):
                out = self._until(
                    step_of(m.send, id, body, d, waited=True), out, block, timeout, "send"
                )
            self._apply(out)
            sent: str = out.result
            return sent

    def send_batch(
        self,
        entries: Sequence[Entry[T]],
        *,
        block: bool = True,
        timeout: float | None = None,
    ) -> list[str]:
        """Send 1 to 10 messages in one atomic step, all or none; their ids, in entry order.

        Each :class:`Entry` is sent as by :meth:`send` (its ``id``, ``None`` for a generated
        one; its ``delay``, ``None`` for the queue's), in order, with nothing in between. When
        the queue has no room for *all* of them, wait until it has (``block=True``, at most
        ``timeout`` seconds if given) or raise :class:`Full` (``block=False``, or the timeout
        ran out): a batch is never accepted in part. Before any waiting, and changing nothing:
        ``TypeError``/``ValueError`` naming the argument or the entry (``entries[2].delay
        must ...``) for a batch that is not a sequence of 1 to 10 entries, a bad entry, a
        ``group`` or ``dedup_id`` (FIFO queues only), or a batch larger than the capacity (it
        could never fit); :class:`DuplicateIdError` (a ``ValueError``) for an id repeated in
        the batch or already accepted. :class:`ShutDown` after ``shutdown()``; an id taken by
        another sender while this batch waits raises :class:`DuplicateIdError` when it wakes.
        """
        batch = check_batch("entries", entries)
        ids, delays = check_entries(batch, self._delay, self.machine.capacity)
        block = check_bool("block", block)
        wait = check_optional_time("timeout", timeout)
        bodies = [e.body for e in batch]
        if self._sink_thread is not None:
            self._refuse_reentry("send_batch")
        with self.mutex:
            now = self._clock.now()
            fast = self._fast
            if fast is not None and not any(ids) and not any(delays):
                fresh = fast.send_batch_now(now, bodies)
                if fresh is not None:  # its effect: that many messages made deliverable
                    if self._waiting[self.not_empty]:
                        self.conditions.wake(len(fresh), 0)
                    return fresh
            m = self.machine
            try:
                out = m.send_batch(now, ids, bodies, delays)
            except BaseException:
                self.conditions.notify(self.not_full)
                raise
            if isinstance(out, Blocked):
                out = self._until(
                    step_of(m.send_batch, ids, bodies, delays, waited=True),
                    out,
                    block,
                    wait,
                    "send_batch",
                    len(batch),
                )
            self._apply(out)
            sent: list[str] = out.result
            return sent
