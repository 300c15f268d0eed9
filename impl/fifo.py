"""The threaded FIFO queue (the SQS ``.fifo`` queue type): ``impl.FifoQueue``.

A subclass of :class:`impl.Queue` (contract section 2b) that shares its lock, conditions, timer
heap and sweeper and changes only the steps that FIFO queues do differently, through the hooks
of ``impl.Queue`` ("Hooks for subclasses"):

- every message has a group; a group is *locked* while any of its messages is in flight, and a
  receive scans the visible messages in send order, skipping locked groups (``_deliver``,
  ``_heads``, ``_locked``); ``receive_batch`` takes the first group's visible messages in send
  order, then the next group's (``_heads``);
- a released message goes back to its place in send order, not to the tail (``_release``,
  ``_fire_delay``, through ``_place``);
- a send with a ``dedup_id`` accepted less than ``dedup_interval`` seconds after an earlier
  acceptance of the same ``dedup_id`` is a duplicate: it changes nothing and returns the earlier
  id (``_duplicate``, ``_remember``);
- every transition that unlocks a group with a visible message wakes a receiver: delete
  (``_delete``), cancel (``_remove``), dead-lettering (``_release``), and retry, expiry and
  change_visibility(0) through the ``not_empty`` that ``_release`` returns; purge leaves
  nothing visible.

``send`` and ``send_batch`` are FIFO's own (a group, a dedup id, no per-send delay, a duplicate
check before the id and room checks); ``receive`` and ``receive_batch`` wait until a message is
*deliverable* (visible, in an unlocked group) and then run ``impl.Queue``'s, re-entering its
``RLock``. The trace steps of a FIFO send carry the group and dedup id as extra arguments (see
:meth:`FifoQueue.send`); ``tla.trace.check_trace(..., fifo=Fifo(dedup_interval))`` validates them.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from impl.clock import Clock
from impl.errors import DuplicateIdError, Empty, Full, ShutDown
from impl.message import Entry, FifoMessage, Message, Snapshot, SnapshotMessage
from impl.queue import (
    _QUEUE_DEFAULT,
    MAX_BATCH,
    Queue,
    Record,
    T,
    _check_batch,
    _Default,
)
from impl.validate import (
    check_bool,
    check_id,
    check_int,
    check_later,
    check_optional_time,
    check_time,
)

__all__ = ["FifoQueue", "FifoRecord"]


class FifoRecord(Record[T]):
    """The record of one message of a FIFO queue: a :class:`impl.queue.Record` with its
    ``group`` and its send-order number ``sent`` (1 for the first message accepted)."""

    __slots__ = ("group", "sent")

    def __init__(self, id: str, body: T, group: str, sent: int) -> None:
        super().__init__(id, body)
        self.group = group
        self.sent = sent

    # The snapshot's ``sent`` counts the messages accepted before this one (the spec's
    # ``Msg.sent``), one less than this record's 1-based number.
    def snapshot(self) -> SnapshotMessage[T]:
        return SnapshotMessage(
            self.id, self.body, self.attempt, self.deadline, None, self.group, self.sent - 1
        )

    def delayed_snapshot(self) -> SnapshotMessage[T]:
        return SnapshotMessage(
            self.id, self.body, self.attempt, None, self.visible_at, self.group, self.sent - 1
        )


class FifoQueue(Queue[T]):
    """An SQS FIFO queue: message groups, group locking, in-group order, deduplication.

    Everything :class:`impl.Queue` promises holds, with the differences of contract section
    2b. Extra state, guarded by ``mutex`` like the rest:

    - every record is a :class:`FifoRecord`; ``_visible`` is in send order (``GroupOrder``);
    - ``_dedup``: dedup id -> (id, accepted at) of its latest acceptance; an entry older than
      ``dedup_interval`` no longer counts (``DedupWindow``) and is dropped now and then;
    - ``_sends``: messages accepted so far, the ``sent`` of the next one.

    Hooks for subclasses, in addition to ``impl.Queue``'s (``_deliver``, ``_deliver_batch``,
    ``_heads``, ``_release``, ``_fire_delay``, ``_delete``, ``_remove`` are overridden here),
    each called with ``mutex`` held:

    - ``_locked()``: the locked groups (with a message in flight).
    - ``_first()``: the first deliverable record (send order, unlocked group), or ``None``.
    - ``_place(rec)``: put a record just appended to the visible tail back in its send-order
      place (release, delay fired).
    - ``_duplicate(dedup_id, now)``: the earlier id if a send with ``dedup_id`` now is a
      duplicate (a pure test: it records nothing).
    - ``_remember(dedup_id, id, now)``: an accepted send's dedup window starts (commit phase).
    - ``_rejected(dedup_id, id, now)``: a send with ``dedup_id`` was rejected (full, id taken,
      shut down): it records nothing (``DedupWindow``); a seam for observers and mutants.
    - ``_wake_group(group)``: a message of ``group`` left flight: wake a receiver if that
      unlocked a group with a visible message.
    """

    def __init__(
        self,
        capacity: int | None = None,
        visibility_timeout: float | None = 30.0,
        max_receives: int | None = None,
        delay: float = 0.0,
        dedup_interval: float = 300.0,
        clock: Clock | None = None,
    ) -> None:
        """As :class:`impl.Queue`, plus ``dedup_interval``: seconds (finite, > 0) after an
        acceptance during which a send with the same ``dedup_id`` is a duplicate."""
        super().__init__(capacity, visibility_timeout, max_receives, delay, clock)
        self._dedup_interval = check_time("dedup_interval", dedup_interval)
        if not self._dedup_interval > 0:
            raise ValueError(f"dedup_interval must be > 0, got {dedup_interval!r}")
        self._dedup: dict[str, tuple[str, float]] = {}
        self._sends = 0

    @property
    def dedup_interval(self) -> float:
        return self._dedup_interval

    def __enter__(self) -> FifoQueue[T]:
        return self

    def __repr__(self) -> str:
        return (
            f"FifoQueue(capacity={self._capacity!r}, "
            f"visibility_timeout={self._visibility_timeout!r}, "
            f"max_receives={self._max_receives!r}, delay={self._delay!r}, "
            f"dedup_interval={self._dedup_interval!r}, clock={self._clock!r})"
        )

    # -- sends ---------------------------------------------------------------------------------

    def send(  # type: ignore[override]
        self,
        body: T,
        *,
        group: str,
        id: str | None = None,
        dedup_id: str | None = None,
        block: bool = True,
        timeout: float | None = None,
    ) -> str:
        """Send a message to ``group`` and return its id; a duplicate returns the earlier id.

        ``group`` (required) and ``dedup_id`` have the id form. A send whose ``dedup_id`` was
        accepted less than ``dedup_interval`` seconds ago (measured from that acceptance) is a
        *duplicate*: nothing changes and the earlier message's id is returned, whatever became
        of it; this is checked first, before the id and the room. There is no per-send delay:
        the queue's ``delay`` applies. Otherwise as :meth:`impl.Queue.send` (waiting for room,
        :class:`Full`, :class:`ShutDown`, :class:`DuplicateIdError`). A rejected send records
        no dedup id. Trace step: ``("send", (id, delay, group, dedup_id), result, now)`` with
        result ``True``, or the earlier id for a duplicate.
        """
        if group is None:
            raise ValueError("group is required on a FIFO queue")
        group = check_id("group", group)
        if id is not None:
            id = check_id("id", id)
        if dedup_id is not None:
            dedup_id = check_id("dedup_id", dedup_id)
        check_bool("block", block)
        wait = check_optional_time("timeout", timeout)
        if self._sink_thread is not None:
            self._refuse_reentry("send")
        with self.mutex:
            if dedup_id is not None:
                now = self._clock.now()
                earlier = self._duplicate(dedup_id, now)
                if earlier is not None:
                    if self._trace is not None:
                        self._record("send", (id, self._delay, group, dedup_id), earlier, now)
                    return earlier
            d = self._delay
            if d:
                check_later("delay", self._clock.now(), d)
            endtime = None if wait is None else check_later("timeout", self._clock.now(), wait)
            settled: list[str] = []
            named = () if id is None else (("id", id),)

            def need() -> int:
                # Accepted by another sender while this one waited: now a duplicate.
                if dedup_id is not None:
                    now = self._clock.now()
                    earlier = self._duplicate(dedup_id, now)
                    if earlier is not None:
                        if self._has_room():
                            self._notify(self.not_full)  # pass on a notify we may have taken
                        if self._trace is not None:
                            self._record("send", (id, self._delay, group, dedup_id), earlier, now)
                        settled.append(earlier)
                        return 0
                return self._unclaimed("send", named, 1)

            try:
                if id is not None and id in self._accepted:
                    raise DuplicateIdError(f"id {id!r} was already accepted by this queue")
                if not self._wait_for_room("send", need, block, endtime, wait):
                    return settled[0]
            except (Full, DuplicateIdError, ShutDown):
                if dedup_id is not None:
                    self._rejected(dedup_id, id, self._clock.now())
                raise
            # prepare: everything that may raise
            if id is None:
                id = self._fresh_id()
            try:
                now = self._clock.now()
                visible_at = check_later("delay", now, d) if d else now
                if d and self._sweeper is None:
                    self._start_sweeper()
                if self._trace is not None:
                    self._record("send", (id, d, group, dedup_id), True, now)
            except BaseException:
                self._notify(self.not_full)  # a notify may have woken us for this slot
                raise
            # commit
            self._accept(id, body, group, dedup_id, d, visible_at, now)
            self._check()
            return id

    def send_batch(
        self,
        entries: Sequence[Entry[T]],
        *,
        block: bool = True,
        timeout: float | None = None,
    ) -> list[str]:
        """Send 1 to 10 entries in one atomic step; their ids in entry order (for a duplicate,
        the earlier id).

        Each :class:`Entry` needs a ``group``; ``delay`` must be ``None`` (the queue's delay
        applies); ``dedup_id`` is optional and must not repeat inside the batch (a
        ``ValueError`` naming the entry). The duplicates are reported as such (the earlier id)
        and the other entries are accepted together or not at all, as by
        :meth:`impl.Queue.send_batch`; among those, an id repeated or already accepted is a
        :class:`DuplicateIdError` (a duplicate entry's own id is not used, so it repeats
        nothing). Trace step: ``("send_batch", (ids, delays, groups,
        dedup_ids), results, now)``, results ``True`` or the earlier id per entry.
        """
        batch = _check_batch("entries", entries)
        n = len(batch)
        ids: list[str | None] = [None] * n
        groups: list[str] = []
        dedups: list[str | None] = [None] * n
        explicit: dict[str, int] = {}
        seen: dict[str, int] = {}
        for i, e in enumerate(batch):
            if not isinstance(e, Entry):
                raise TypeError(f"entries[{i}] must be an impl.Entry, got {type(e).__name__}")
            if e.delay is not None:
                raise ValueError(
                    f"entries[{i}].delay must be None: a FIFO queue has no per-message delay "
                    "(the queue's delay applies)"
                )
            if e.group is None:
                raise ValueError(f"entries[{i}].group is required on a FIFO queue")
            groups.append(check_id(f"entries[{i}].group", e.group))
            if e.id is not None:
                id = check_id(f"entries[{i}].id", e.id)
                # A repeat is an error only among the entries that are not duplicates (told
                # under the lock): a duplicate's id is not used.
                explicit.setdefault(id, i)
                ids[i] = id
            if e.dedup_id is not None:
                dd = check_id(f"entries[{i}].dedup_id", e.dedup_id)
                if dd in seen:
                    raise ValueError(
                        f"entries[{i}].dedup_id {dd!r} repeats entries[{seen[dd]}].dedup_id"
                    )
                seen[dd] = i
                dedups[i] = dd
        check_bool("block", block)
        wait = check_optional_time("timeout", timeout)
        if self._sink_thread is not None:
            self._refuse_reentry("send_batch")
        with self.mutex:
            d = self._delay
            if d:
                check_later("delay", self._clock.now(), d)
            endtime = None if wait is None else check_later("timeout", self._clock.now(), wait)
            earlier: list[str | None] = [None] * n

            def classify() -> list[int]:
                # Which entries are duplicates (checked before ids and room, and again after
                # each wait: another sender may have accepted a dedup id meanwhile); the others.
                now = self._clock.now() if seen else 0.0
                earlier[:] = [None if dd is None else self._duplicate(dd, now) for dd in dedups]
                return [i for i in range(n) if earlier[i] is None]

            fresh = classify()
            where: dict[str, int] = {}
            for i in fresh:
                mine = ids[i]
                if mine is not None and mine in where:
                    raise DuplicateIdError(
                        f"entries[{i}].id {mine!r} repeats entries[{where[mine]}].id"
                    )
                if mine is not None:
                    where[mine] = i
                if mine is not None and mine in self._accepted:
                    raise DuplicateIdError(
                        f"entries[{i}].id {mine!r} was already accepted by this queue"
                    )
            if self._capacity is not None and len(fresh) > self._capacity:
                raise ValueError(
                    f"entries: a batch of {len(fresh)} new messages can never fit a "
                    f"queue of capacity {self._capacity}"
                )
            rounds = 0

            def need() -> int:
                nonlocal fresh, rounds
                rounds += 1
                if rounds > 1:  # the first round's classification is the one just made
                    fresh = classify()
                named = [(f"entries[{i}].id", mine) for i in fresh if (mine := ids[i]) is not None]
                return self._unclaimed("send_batch", named, len(fresh))

            if fresh:  # a batch of duplicates only needs no room, and waits for nothing
                self._wait_for_room("send_batch", need, block, endtime, wait)
            # prepare: everything that may raise
            new_ids = iter(self._fresh_ids([ids[i] for i in fresh], explicit))
            final: list[str] = []
            results: list[object] = []
            for i in range(n):
                e_id = earlier[i]
                if e_id is None:
                    final.append(next(new_ids))
                    results.append(True)
                else:
                    final.append(e_id)
                    results.append(e_id)
            try:
                now = self._clock.now()
                visible_at = check_later("delay", now, d) if d else now
                if d and fresh and self._sweeper is None:
                    self._start_sweeper()
                if self._trace is not None:
                    self._record(
                        "send_batch",
                        (tuple(final), (d,) * n, tuple(groups), tuple(dedups)),
                        tuple(results),
                        now,
                    )
            except BaseException:
                self._notify(self.not_full)
                raise
            # commit: each new entry as send, in order
            for i in fresh:
                self._accept(final[i], batch[i].body, groups[i], dedups[i], d, visible_at, now)
            self._check()
            return final

    def _accept(
        self,
        id: str,
        body: T,
        group: str,
        dedup_id: str | None,
        delay: float,
        visible_at: float,
        now: float,
    ) -> None:
        # Commit of one accepted send: the message joins its group (visible, or delayed by the
        # queue's delay), its dedup id starts its window, and one receiver is woken.
        self._accepted.add(id)
        self._sends += 1
        rec = FifoRecord(id, body, group, self._sends)
        if delay:
            self._add_delayed(rec, visible_at)
        else:
            self._visible[id] = rec
            self._notify(self.not_empty)
        if dedup_id is not None:
            self._remember(dedup_id, id, now)

    # -- receives ------------------------------------------------------------------------------

    def receive(
        self,
        *,
        block: bool = True,
        timeout: float | None = None,
        visibility_timeout: float | Literal[_Default.QUEUE_DEFAULT] | None = _QUEUE_DEFAULT,
    ) -> Message[T]:
        """Deliver the first deliverable message: the earliest-sent visible message of a group
        with nothing in flight (which locks the group until it has nothing in flight again).

        Waits while nothing is deliverable (``block``, ``timeout``, :class:`Empty`,
        :class:`ShutDown` as :meth:`impl.Queue.receive`). The message has its ``group``.
        """
        check_bool("block", block)
        wait = check_optional_time("timeout", timeout)
        if visibility_timeout is not _QUEUE_DEFAULT:
            check_optional_time("visibility_timeout", visibility_timeout)
        if self._sink_thread is not None:
            self._refuse_reentry("receive")
        with self.mutex:
            self._wait_for_deliverable(block, wait)
            m = super().receive(block=False, visibility_timeout=visibility_timeout)
            return self._with_group(m)

    def receive_batch(
        self,
        max_messages: int = MAX_BATCH,
        *,
        block: bool = True,
        timeout: float | None = None,
        visibility_timeout: float | Literal[_Default.QUEUE_DEFAULT] | None = _QUEUE_DEFAULT,
    ) -> list[Message[T]]:
        """Deliver up to ``max_messages`` deliverable messages: the first unlocked group's
        visible messages in send order, then the next group's, until ``max_messages`` or none
        is left. Waits like :meth:`receive` for one deliverable message."""
        n = check_int("max_messages", max_messages, 1)
        if n > MAX_BATCH:
            raise ValueError(f"max_messages must be <= {MAX_BATCH}, got {n!r}")
        check_bool("block", block)
        wait = check_optional_time("timeout", timeout)
        if visibility_timeout is not _QUEUE_DEFAULT:
            check_optional_time("visibility_timeout", visibility_timeout)
        if self._sink_thread is not None:
            self._refuse_reentry("receive_batch")
        with self.mutex:
            self._wait_for_deliverable(block, wait)
            out = super().receive_batch(n, block=False, visibility_timeout=visibility_timeout)
            return [self._with_group(m) for m in out]

    def dead_letters(self) -> list[Message[T]]:
        """As :meth:`impl.Queue.dead_letters`, each with its group."""
        if self._sink_thread is not None:
            self._refuse_reentry("dead_letters")
        with self.mutex:
            return [
                FifoMessage(r.id, r.body, r.attempt, r.receipt, r.group)  # type: ignore[attr-defined]
                for r in self._dead
            ]

    def snapshot(self) -> Snapshot[T]:
        """As :meth:`impl.Queue.snapshot`, with each message's ``group`` and ``sent`` and the
        queue's dedup records (``Snapshot.dedup``), all in one atomic step."""
        if self._sink_thread is not None:
            self._refuse_reentry("snapshot")
        with self.mutex:
            snap = super().snapshot()
            records = sorted((k, id, at) for k, (id, at) in self._dedup.items())
            return replace(snap, dedup=tuple(records))

    def _with_group(self, m: Message[T]) -> Message[T]:
        rec = self._in_flight[m.id]
        assert isinstance(rec, FifoRecord)
        return FifoMessage(m.id, m.body, m.attempt, m.receipt, rec.group)

    def _wait_for_deliverable(self, block: bool, wait: float | None) -> None:
        """Return once some message is deliverable, or raise :class:`ShutDown` (after
        ``shutdown()``, with nothing deliverable) or :class:`Empty` (not ``block``, or ``wait``
        seconds passed); waits on ``not_empty``, which every unlock of a group with a visible
        message notifies."""
        if self._first() is not None:
            return
        endtime = None if wait is None else check_later("timeout", self._clock.now(), wait)
        while self._first() is None:
            if self._shutdown:
                raise ShutDown("receive on a shut-down queue with nothing deliverable")
            if not block:
                raise Empty("no message is deliverable")
            if endtime is not None and self._clock.now() >= endtime:
                raise Empty(f"no message became deliverable within {wait} seconds")
            self._wait(self.not_empty, endtime)

    def _wait_for_visible(self, block: bool, wait: float | None) -> None:
        self._wait_for_deliverable(block, wait)

    # -- hooks: the FIFO steps -----------------------------------------------------------------

    def _locked(self) -> set[str]:
        """The locked groups: those with a message in flight."""
        return {r.group for r in self._in_flight.values() if isinstance(r, FifoRecord)}

    def _first(self) -> FifoRecord[T] | None:
        """The first deliverable record: in send order, of a group that is not locked."""
        locked = self._locked()
        for rec in self._visible.values():
            assert isinstance(rec, FifoRecord)
            if rec.group not in locked:
                return rec
        return None

    def _heads(self, n: int) -> list[Record[T]]:
        """What a receive_batch of ``n`` delivers: the first deliverable message's group's
        visible messages in send order, then the next unlocked group's (ordered by each
        group's earliest visible message), until ``n``."""
        locked = self._locked()
        by_group: dict[str, list[Record[T]]] = {}
        for rec in self._visible.values():
            assert isinstance(rec, FifoRecord)
            if rec.group not in locked:
                by_group.setdefault(rec.group, []).append(rec)
        out: list[Record[T]] = []
        for recs in by_group.values():
            out.extend(recs[: n - len(out)])
            if len(out) == n:
                break
        return out

    def _deliver(self, deadline: float | None) -> Record[T]:
        rec = self._first()
        assert rec is not None
        self._visible.move_to_end(rec.id, last=False)
        return super()._deliver(deadline)

    def _deliver_batch(self, n: int, deadline: float | None) -> list[Record[T]]:
        deliver = super()._deliver
        out: list[Record[T]] = []
        for rec in self._heads(n):
            self._visible.move_to_end(rec.id, last=False)
            out.append(deliver(deadline))
        return out

    def _place(self, rec: Record[T]) -> None:
        """Put ``rec``, just appended to the visible tail, back in its place in send order:
        every visible message sent after it moves behind it (their order kept)."""
        assert isinstance(rec, FifoRecord)
        visible = self._visible
        later = [k for k, r in visible.items() if r.sent > rec.sent]  # type: ignore[attr-defined]
        for k in later:
            visible.move_to_end(k)

    def _release(self, rec: Record[T]) -> threading.Condition:
        cond = super()._release(rec)
        assert isinstance(rec, FifoRecord)
        if cond is self.not_empty:
            self._place(rec)
        else:
            self._wake_group(rec.group)  # dead-lettered: its group may be unlocked now
        return cond

    def _fire_delay(self, rec: Record[T]) -> None:
        super()._fire_delay(rec)
        self._place(rec)

    def _delete(self, rec: Record[T]) -> None:
        super()._delete(rec)
        assert isinstance(rec, FifoRecord)
        self._wake_group(rec.group)

    def _remove(self, id: str) -> Record[T] | None:
        was_in_flight = id in self._in_flight
        rec = super()._remove(id)
        if was_in_flight and rec is not None:
            assert isinstance(rec, FifoRecord)
            self._wake_group(rec.group)
        return rec

    def _wake_group(self, group: str) -> None:
        """A message of ``group`` left flight: if that unlocked the group and it has a visible
        message, wake one receiver (a receiver may be waiting for exactly that message)."""
        if not self._waiting[self.not_empty]:
            return
        if group in self._locked():
            return
        for r in self._visible.values():
            if r.group == group:  # type: ignore[attr-defined]
                self._notify(self.not_empty)
                return

    def _rejected(self, dedup_id: str, id: str | None, now: float) -> None:
        """A send with ``dedup_id`` (and ``id``, ``None`` if it asked for a generated one) was
        rejected at ``now``: nothing is recorded, so a later send with ``dedup_id`` is new."""

    def _duplicate(self, dedup_id: str, now: float) -> str | None:
        """The id of the message whose acceptance with ``dedup_id`` was less than
        ``dedup_interval`` before ``now`` (so a send with it now is a duplicate), or ``None``.
        A duplicate does not extend the window."""
        hit = self._dedup.get(dedup_id)
        if hit is not None and now - hit[1] < self._dedup_interval:
            return hit[0]
        return None

    def _remember(self, dedup_id: str, id: str, now: float) -> None:
        """Commit of an accepted send with ``dedup_id``: its window starts at ``now``. Records
        whose window has passed are dropped now and then (O(1) amortized)."""
        dedup = self._dedup
        dedup[dedup_id] = (id, now)
        if len(dedup) > 64 and len(dedup) & (len(dedup) - 1) == 0:
            for k in [k for k, (_, t) in dedup.items() if now - t >= self._dedup_interval]:
                del dedup[k]
