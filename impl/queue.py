"""The threaded standard queue with SQS semantics: ``impl.Queue``, shaped after ``queue.Queue``.

``Queue`` is the threaded shell (:class:`impl.shell.BaseQueue`: the lock, three named
conditions, the waits, the trace, the sweeper) over the standard core (:class:`impl.core.Core`:
the state and the contract's steps, with no lock and no waiting), plus the standard sends. Each
transition of the contract (section 2), batches included, is one critical section that does
exactly what ``spec.transitions`` does to the pure state, then wakes whom the step enabled.
Time comes only from the injected clock; nothing here sleeps or polls.
"""

from __future__ import annotations

from collections.abc import Sequence

from impl.core import MAX_BATCH, Core, T
from impl.errors import DuplicateIdError
from impl.message import Entry
from impl.shell import BaseQueue, TraceStep, check_batch
from impl.validate import INF, check_bool, check_id, check_later, check_optional_time, check_time

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

    The state and its invariants are the core's (:class:`impl.core.Core`); the threads, the
    conditions and the failure model are the shell's (:class:`impl.shell.BaseQueue`).
    """

    _core_class = Core

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
        wait = timeout
        if self._sink_thread is not None:
            self._refuse_reentry("send")
        with self.mutex:
            core = self._core
            if id is not None and id in core.accepted:
                raise DuplicateIdError(f"id {id!r} was already accepted by this queue")
            if id is not None and self._system is not None and self._system.taken(id):
                raise DuplicateIdError(f"id {id!r} was already accepted by a queue of this system")
            if d:
                check_later("delay", self._clock.now(), d)  # an argument error: before waiting
            endtime = None if wait is None else check_later("timeout", self._clock.now(), wait)
            if self._shutdown or not core.has_room():  # the common path never waits
                named = () if id is None else (("id", id),)
                self._wait_for_room(
                    "send", lambda: self._unclaimed("send", named, 1), block, endtime, wait
                )
            if self._stamped or self._system is not None:
                return self._send_system(id, body, d)
            if id is None:
                id = core.fresh_id()
            if d:
                return self._send_delayed(id, body, d)
            if self._trace is not None:
                try:
                    self._record("send", (id, 0.0), True)
                except BaseException:
                    # A notify may have woken us for this slot: pass it on (see _wait).
                    self._notify(self.not_full)
                    raise
            # commit
            self._wake(core.accept(id, body))
            core.check()
            return id

    def _send_delayed(self, id: str, body: T, delay: float) -> str:
        # The rest of send for a delay > 0 (kept out of send, whose common path it would slow):
        # prepare (the clock, the sweeper, the trace), then commit the DELAYED message.
        try:
            now = self._clock.now()
            visible_at = check_later("delay", now, delay)
            if self._sweeper is None:
                self._start_sweeper()
            if self._trace is not None:
                self._record("send", (id, delay), True, now)
        except BaseException:
            self._notify(self.not_full)  # a notify may have woken us for this slot (see _wait)
            raise
        # commit
        self._wake(self._core.accept_delayed(id, body, visible_at))
        self._aim(visible_at)
        self._core.check()
        return id

    def _send_system(self, id: str | None, body: T, delay: float) -> str:
        # The rest of send for a queue in a system, or one that reads the clock at acceptance
        # (a retention or a target): reserve the id system-wide, read the time, start the
        # sweeper for a delay or a retention timer, trace; then commit.
        core = self._core
        system = self._system
        reserved: list[str] = []
        try:
            if system is not None:
                reserved = system.reserve([id], ["id"])
                id = reserved[0]
            elif id is None:
                id = core.fresh_id()
            now = self._clock.now()
            visible_at = check_later("delay", now, delay) if delay else now
            if (delay or core.retention is not None) and self._sweeper is None:
                self._start_sweeper()
            if self._trace is not None:
                self._record("send", (id, delay), True, now)
        except BaseException:
            if system is not None:
                system.unreserve(reserved)
            self._notify(self.not_full)  # a notify may have woken us for this slot (see _wait)
            raise
        # commit
        if delay:
            self._wake(core.accept_delayed_at(id, body, visible_at, now))
            self._aim(visible_at)
        elif self._stamped:
            self._wake(core.accept_at(id, body, now))
        else:
            self._wake(core.accept(id, body))
        self._aim_retention()
        core.check()
        return id

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
        n = len(batch)
        # Filled in for the entries that give an id or a delay; most give neither.
        ids: list[str | None] = [None] * n
        delays = [self._delay] * n
        explicit: dict[str, int] = {}
        for i, e in enumerate(batch):
            if not isinstance(e, Entry):
                raise TypeError(f"entries[{i}] must be an impl.Entry, got {type(e).__name__}")
            if e.group is not None or e.dedup_id is not None:
                which = "group" if e.group is not None else "dedup_id"
                raise ValueError(
                    f"entries[{i}].{which} must be None: a standard queue has no message groups "
                    "or deduplication (FIFO queues only)"
                )
            if e.id is not None:
                id = check_id(f"entries[{i}].id", e.id)
                if id in explicit:
                    raise DuplicateIdError(
                        f"entries[{i}].id {id!r} repeats entries[{explicit[id]}].id"
                    )
                explicit[id] = i
                ids[i] = id
            if e.delay is not None:
                delays[i] = check_time(f"entries[{i}].delay", e.delay)
        check_bool("block", block)
        wait = check_optional_time("timeout", timeout)
        capacity = self._core.capacity
        if capacity is not None and n > capacity:
            raise ValueError(
                f"entries: a batch of {n} can never fit a queue of capacity {capacity}"
            )
        if self._sink_thread is not None:
            self._refuse_reentry("send_batch")
        with self.mutex:
            core = self._core
            for id, i in explicit.items():
                if id in core.accepted:
                    raise DuplicateIdError(
                        f"entries[{i}].id {id!r} was already accepted by this queue"
                    )
                if self._system is not None and self._system.taken(id):
                    raise DuplicateIdError(
                        f"entries[{i}].id {id!r} was already accepted by a queue of this system"
                    )
            longest = max(delays)
            if longest:
                check_later("delay", self._clock.now(), longest)  # before waiting
            endtime = None if wait is None else check_later("timeout", self._clock.now(), wait)
            named = [(f"entries[{i}].id", id) for id, i in explicit.items()]
            k = self._wait_for_room(
                "send_batch", lambda: self._unclaimed("send_batch", named, n), block, endtime, wait
            )
            # prepare: everything that may raise
            system = self._system
            stamped = self._stamped
            reserved: list[str] = []
            if system is None:
                final = core.fresh_ids(ids[:k], explicit)
            else:
                try:
                    final = reserved = system.reserve(
                        ids[:k], [f"entries[{i}].id" for i in range(k)]
                    )
                except BaseException:
                    self._notify(self.not_full)  # another queue took an id while this waited
                    raise
            try:
                now = None
                visible_at: list[float] = []
                if stamped:
                    now = self._clock.now()
                    if core.retention is not None and self._sweeper is None:
                        self._start_sweeper()
                if longest:
                    now = self._clock.now() if now is None else now
                    visible_at = [
                        check_later(f"entries[{i}].delay", now, d) if d else 0.0
                        for i, d in enumerate(delays[:k])
                    ]
                    if self._sweeper is None:
                        self._start_sweeper()
                if self._trace is not None:
                    self._record("send_batch", (tuple(final), tuple(delays[:k])), True, now)
            except BaseException:
                if system is not None:
                    system.unreserve(reserved)
                self._notify(self.not_full)  # a notify may have woken us for this room
                raise
            # commit: each entry as send, in order
            if stamped:
                assert now is not None
                for i, id in enumerate(final):
                    if delays[i]:
                        self._wake(core.accept_delayed_at(id, batch[i].body, visible_at[i], now))
                        self._aim(visible_at[i])
                    else:
                        self._wake(core.accept_at(id, batch[i].body, now))
                self._aim_retention()
            elif not longest:  # the common batch: every entry visible at once
                self._wake(core.accept_batch(final, [e.body for e in batch[:k]]))
            else:
                for i, id in enumerate(final):
                    if delays[i]:
                        self._wake(core.accept_delayed(id, batch[i].body, visible_at[i]))
                        self._aim(visible_at[i])
                    else:
                        self._wake(core.accept(id, batch[i].body))
            core.check()
            return final
