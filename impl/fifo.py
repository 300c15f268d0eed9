"""The threaded FIFO queue (the SQS ``.fifo`` queue type): ``impl.FifoQueue``.

The same threaded shell as ``impl.Queue`` (:class:`impl.shell.BaseQueue`) over the FIFO core
(:class:`impl.fifo_core.FifoCore`, contract section 2b: message groups and their locks, release
to the place in send order, deduplication), plus the FIFO sends. Receiving, the receipt
operations, cancel, purge, the sweep and the lifecycle are the shell's, unchanged: a receive
waits until the core has a *deliverable* message (visible, in an unlocked group) and every step
that unlocks a group with a visible message reports a receiver to wake.

``send`` and ``send_batch`` are FIFO's own: a group, a dedup id, no per-send delay, and a
duplicate check before the id and room checks (and again after every wait for room). The trace
steps of a FIFO send carry the group and dedup id as extra arguments (see
:meth:`FifoQueue.send`); ``tla.trace.check_trace(..., fifo=Fifo(dedup_interval))`` validates
them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from impl.clock import Clock
from impl.core import T
from impl.errors import DuplicateIdError, Full, ShutDown
from impl.fifo_core import FifoCore, FifoRecord
from impl.message import Entry
from impl.shell import BaseQueue, check_batch
from impl.validate import check_bool, check_id, check_later, check_optional_time, check_time

__all__ = ["FifoQueue", "FifoRecord"]


class FifoQueue(BaseQueue[T]):
    """An SQS FIFO queue: message groups, group locking, in-group order, deduplication.

    Everything :class:`impl.Queue` promises holds, with the differences of contract section
    2b; its state and steps are :class:`impl.fifo_core.FifoCore`'s. (``FifoQueue`` and
    ``Queue`` are siblings over :class:`impl.shell.BaseQueue`: their sends take different
    arguments.)
    """

    _core_class = FifoCore

    def __init__(
        self,
        capacity: int | None = None,
        visibility_timeout: float | None = 30.0,
        max_receives: int | None = None,
        delay: float = 0.0,
        dedup_interval: float = 300.0,
        clock: Clock | None = None,
        *,
        dead_letter: FifoQueue[T] | None = None,
        retention: float | None = None,
        name: str | None = None,
    ) -> None:
        """As :class:`impl.Queue`, plus ``dedup_interval``: seconds (finite, > 0) after an
        acceptance during which a send with the same ``dedup_id`` is a duplicate. A
        ``dead_letter`` target must be a FIFO queue too."""
        # Checked before the shell links this queue into its target's system: a bad interval
        # must change nothing.
        interval = check_time("dedup_interval", dedup_interval)
        if not interval > 0:
            raise ValueError(f"dedup_interval must be > 0, got {dedup_interval!r}")
        super().__init__(
            capacity,
            visibility_timeout,
            max_receives,
            delay,
            clock,
            dead_letter=dead_letter,
            retention=retention,
            name=name,
        )
        core = self._core
        assert isinstance(core, FifoCore)
        core.dedup_interval = interval
        #: The same object as ``_core``, with its FIFO type.
        self._fcore: FifoCore[T] = core

    @property
    def dedup_interval(self) -> float:
        return self._fcore.dedup_interval

    def __repr__(self) -> str:
        return (
            f"FifoQueue(capacity={self.capacity!r}, "
            f"visibility_timeout={self._visibility_timeout!r}, "
            f"max_receives={self.max_receives!r}, delay={self._delay!r}, "
            f"dedup_interval={self.dedup_interval!r}, clock={self._clock!r})"
        )

    # -- sends ---------------------------------------------------------------------------------

    def send(
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
                earlier = self._fcore.duplicate(dedup_id, now)
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
                    earlier = self._fcore.rechecked(dedup_id, now)
                    if earlier is not None:
                        if self._fcore.has_room():
                            self._notify(self.not_full)  # pass on a notify we may have taken
                        if self._trace is not None:
                            self._record("send", (id, self._delay, group, dedup_id), earlier, now)
                        settled.append(earlier)
                        return 0
                return self._unclaimed("send", named, 1)

            system = self._system
            try:
                if id is not None and id in self._fcore.accepted:
                    raise DuplicateIdError(f"id {id!r} was already accepted by this queue")
                if id is not None and system is not None and system.taken(id):
                    raise DuplicateIdError(
                        f"id {id!r} was already accepted by a queue of this system"
                    )
                if not self._wait_for_room("send", need, block, endtime, wait):
                    return settled[0]
                reserved = [] if system is None else system.reserve([id], ["id"])
            except (Full, DuplicateIdError, ShutDown):
                if dedup_id is not None:
                    self._fcore.rejected(dedup_id, id, self._clock.now())
                raise
            # prepare: everything that may raise
            if id is None:
                id = self._fcore.fresh_id() if system is None else reserved[0]
            try:
                now = self._clock.now()
                visible_at = check_later("delay", now, d) if d else now
                if (d or self._fcore.retention is not None) and self._sweeper is None:
                    self._start_sweeper()
                if self._trace is not None:
                    self._record("send", (id, d, group, dedup_id), True, now)
            except BaseException:
                if system is not None:
                    system.unreserve(reserved)
                self._notify(self.not_full)  # a notify may have woken us for this slot
                raise
            # commit
            self._accept(id, body, group, dedup_id, visible_at if d else None, now)
            self._aim_retention()
            self._fcore.check()
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
        batch = check_batch("entries", entries)
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

            def classify(test: Callable[[str, float], str | None]) -> list[int]:
                # Which entries are duplicates (checked before ids and room, and again after
                # each wait: another sender may have accepted a dedup id meanwhile); the others.
                now = self._clock.now() if seen else 0.0
                earlier[:] = [None if dd is None else test(dd, now) for dd in dedups]
                return [i for i in range(n) if earlier[i] is None]

            fresh = classify(self._fcore.duplicate)
            where: dict[str, int] = {}
            for i in fresh:
                mine = ids[i]
                if mine is not None and mine in where:
                    raise DuplicateIdError(
                        f"entries[{i}].id {mine!r} repeats entries[{where[mine]}].id"
                    )
                if mine is not None:
                    where[mine] = i
                if mine is not None and mine in self._fcore.accepted:
                    raise DuplicateIdError(
                        f"entries[{i}].id {mine!r} was already accepted by this queue"
                    )
                if mine is not None and self._system is not None and self._system.taken(mine):
                    raise DuplicateIdError(
                        f"entries[{i}].id {mine!r} was already accepted by a queue of this system"
                    )
            if self._fcore.capacity is not None and len(fresh) > self._fcore.capacity:
                raise ValueError(
                    f"entries: a batch of {len(fresh)} new messages can never fit a "
                    f"queue of capacity {self._fcore.capacity}"
                )
            rounds = 0

            def need() -> int:
                nonlocal fresh, rounds
                rounds += 1
                if rounds > 1:  # the first round's classification is the one just made
                    fresh = classify(self._fcore.rechecked)
                named = [(f"entries[{i}].id", mine) for i in fresh if (mine := ids[i]) is not None]
                return self._unclaimed("send_batch", named, len(fresh))

            if fresh:  # a batch of duplicates only needs no room, and waits for nothing
                self._wait_for_room("send_batch", need, block, endtime, wait)
            # prepare: everything that may raise
            system = self._system
            reserved: list[str] = []
            if system is None:
                new_ids = iter(self._fcore.fresh_ids([ids[i] for i in fresh], explicit))
            else:
                try:
                    reserved = system.reserve(
                        [ids[i] for i in fresh], [f"entries[{i}].id" for i in fresh]
                    )
                except BaseException:
                    self._notify(self.not_full)
                    raise
                new_ids = iter(reserved)
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
                timed = d or self._fcore.retention is not None
                if timed and fresh and self._sweeper is None:
                    self._start_sweeper()
                if self._trace is not None:
                    self._record(
                        "send_batch",
                        (tuple(final), (d,) * n, tuple(groups), tuple(dedups)),
                        tuple(results),
                        now,
                    )
            except BaseException:
                if system is not None:
                    system.unreserve(reserved)
                self._notify(self.not_full)
                raise
            # commit: each new entry as send, in order
            for i in fresh:
                self._accept(
                    final[i], batch[i].body, groups[i], dedups[i], visible_at if d else None, now
                )
            self._aim_retention()
            self._fcore.check()
            return final

    def _accept(
        self,
        id: str,
        body: T,
        group: str,
        dedup_id: str | None,
        visible_at: float | None,
        now: float,
    ) -> None:
        # Commit of one accepted send: the message joins its group (visible, or delayed by the
        # queue's delay until visible_at), its dedup id starts its window; wake whom it enables.
        self._wake(self._fcore.accept_fifo(id, body, group, dedup_id, visible_at, now))
        if visible_at is not None:
            self._aim(visible_at)
