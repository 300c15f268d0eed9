"""The FIFO queue machine (the SQS ``.fifo`` type): :class:`impl.machine.Machine` where FIFO
differs (contract section 2b), and nowhere else.

Three things differ, and this module is exactly them:

- **Ordering and groups.** Every message has a group; a group is *locked* while any of its
  messages is in flight. Deliverable means "visible, in an unlocked group"; a receive takes the
  earliest sent such message, a batch the rest of its group, then the next unlocked group's
  (``GroupOrder``): the hooks ``deliverable`` and ``heads``.
- **Release to its place.** A released message (and a delay that fires) goes back to its place
  in send order, not to the tail (``requeue``); a message leaving flight for good may unlock its
  group, which then wakes a receiver if it has a visible message (``left_flight``). A message
  moved in takes the tail of send order, deliverable unless its group is locked here
  (``joined``), with its enqueue time reset (``enqueue_time_of_move``).
- **Deduplication.** A send with a ``dedup_id`` accepted less than ``dedup_interval`` seconds
  after an earlier acceptance of it is a *duplicate*: it changes nothing and answers the earlier
  id (``DedupWindow``). Checked first, before the id and the room, and again after every wait
  for room. So FIFO has its own sends (a group and a dedup id; the queue's delay only).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic

from impl.errors import DuplicateIdError
from impl.machine import Machine, Record, T
from impl.message import (
    FifoMessage,
    Message,
    SnapshotMessage,
    new_object,
    set_message_attempt,
    set_message_body,
    set_message_group,
    set_message_id,
    set_message_receipt,
)
from impl.outcome import (
    ACCEPTED,
    DUPLICATE,
    NO_ROOM,
    SHUT,
    Blocked,
    Outcome,
    new_outcome,
)
from impl.validate import check_later

__all__ = ["FifoMachine", "FifoRecord"]


class FifoRecord(Record[T], Generic[T]):
    """A FIFO queue's record: a :class:`impl.machine.Record` with its ``group`` and its place
    in send order ``sent`` (1 for the first message accepted)."""

    __slots__ = ("group", "sent")

    def __init__(self, id: str, body: T, enqueued_at: float, group: str, sent: int) -> None:
        super().__init__(id, body, enqueued_at)
        self.group = group
        self.sent = sent

    def message(self) -> Message[T]:
        m: FifoMessage[T] = new_object(FifoMessage)
        set_message_id(m, self.id)
        set_message_body(m, self.body)
        set_message_attempt(m, self.attempt)
        set_message_receipt(m, self.receipt)
        set_message_group(m, self.group)
        return m

    # A snapshot's ``sent`` counts the messages accepted before this one (the spec's
    # ``Msg.sent``): one less than this 1-based place.
    def snapshot(self) -> SnapshotMessage[T]:
        return SnapshotMessage(
            self.id, self.body, self.attempt, self.deadline, None, self.group, self.sent - 1
        )

    def delayed_snapshot(self) -> SnapshotMessage[T]:
        return SnapshotMessage(
            self.id, self.body, self.attempt, None, self.visible_at, self.group, self.sent - 1
        )


class FifoMachine(Machine[T]):
    """One FIFO queue. Its extra state: ``delay`` (the queue's; no per-send delay),
    ``dedup_interval`` and ``dedup`` (dedup id -> (id, accepted at) of its latest acceptance;
    records past their window are dropped now and then), ``sends`` (messages accepted so far,
    the source of each record's ``sent``). ``visible`` is in send order."""

    ready_word = "deliverable"

    def __init__(
        self,
        token: int,
        capacity: int | None = None,
        max_receives: int | None = None,
        retention: float | None = None,
        *,
        delay: float = 0.0,
        dedup_interval: float = 300.0,
    ) -> None:
        super().__init__(token, capacity, max_receives, retention)
        self.delay = delay
        self.dedup_interval = dedup_interval
        self.dedup: dict[str, tuple[str, float]] = {}
        self.sends = 0

    # -- groups ---------------------------------------------------------------------------------

    def locked(self) -> set[str]:
        """The locked groups: those with a message in flight."""
        return {r.group for r in self.in_flight.values() if isinstance(r, FifoRecord)}

    def first(self) -> Record[T] | None:
        """The first deliverable record: in send order, of a group that is not locked."""
        locked = self.locked()
        for rec in self.visible.values():
            assert isinstance(rec, FifoRecord)
            if rec.group not in locked:
                return rec
        return None

    def deliverable(self) -> bool:
        return self.first() is not None

    def heads(self, n: int) -> list[Record[T]]:
        """The first deliverable message's group's visible messages in send order, then the
        next unlocked group's (groups ordered by their earliest visible message), up to ``n``."""
        locked = self.locked()
        by_group: dict[str, list[Record[T]]] = {}
        for rec in self.visible.values():
            assert isinstance(rec, FifoRecord)
            if rec.group not in locked:
                by_group.setdefault(rec.group, []).append(rec)
        out: list[Record[T]] = []
        for recs in by_group.values():
            out.extend(recs[: n - len(out)])
            if len(out) == n:
                break
        return out

    def requeue(self, rec: Record[T]) -> None:
        """Back to its place in send order: every visible message sent after it moves behind
        it, their order kept."""
        visible = self.visible
        visible[rec.id] = rec
        sent = rec.sent  # type: ignore[attr-defined]
        for k in [k for k, r in visible.items() if r.sent > sent]:  # type: ignore[attr-defined]
            visible.move_to_end(k)

    def left_flight(self, rec: Record[T]) -> int:
        return self.wake_group(rec.group)  # type: ignore[attr-defined]

    def wake_group(self, group: str) -> int:
        """A message of ``group`` left flight for good: 1 (a receiver to wake) if that unlocked
        the group and it has a visible message, else 0."""
        if group in self.locked():
            return 0
        return int(any(r.group == group for r in self.visible.values()))  # type: ignore[attr-defined]

    def new_record(self, id: str, body: T, group: str | None, now: float) -> Record[T]:
        assert group is not None, "a FIFO queue takes in only FIFO messages"
        self.sends += 1
        return FifoRecord(id, body, now, group, self.sends)

    def enqueue_time_of_move(self, rec: Record[T], now: float) -> float:
        return now  # AWS: a move into a FIFO dead-letter queue resets the enqueue time

    def joined(self, rec: Record[T]) -> int:
        # The tail of send order is the tail of its group: deliverable unless it is locked here.
        return 0 if rec.group in self.locked() else 1  # type: ignore[attr-defined]

    # -- deduplication --------------------------------------------------------------------------

    def duplicate(self, dedup_id: str, now: float) -> str | None:
        """The id of the message whose acceptance with ``dedup_id`` was less than
        ``dedup_interval`` before ``now`` (a send with it now is a duplicate), or ``None``."""
        hit = self.dedup.get(dedup_id)
        if hit is not None and now - hit[1] < self.dedup_interval:
            return hit[0]
        return None

    def rechecked(self, dedup_id: str, now: float) -> str | None:
        """The duplicate test again, for a send that waited for room (another sender may have
        accepted ``dedup_id`` meanwhile): :meth:`duplicate`."""
        return self.duplicate(dedup_id, now)

    def remember(self, dedup_id: str, id: str, now: float) -> None:
        """An accepted send with ``dedup_id``: its window starts at ``now``. Records past their
        window are dropped now and then (O(1) amortized)."""
        dedup = self.dedup
        dedup[dedup_id] = (id, now)
        if len(dedup) > 64 and len(dedup) & (len(dedup) - 1) == 0:
            for k in [k for k, (_, t) in dedup.items() if now - t >= self.dedup_interval]:
                del dedup[k]

    def dedup_records(self) -> tuple[tuple[str, str, float], ...]:
        return tuple(sorted((k, id, at) for k, (id, at) in self.dedup.items()))

    # -- the sends ------------------------------------------------------------------------------

    def send(  # type: ignore[override]  # a group and a dedup id, not a delay (section 2b)
        self,
        now: float,
        id: str | None,
        body: T,
        group: str,
        dedup_id: str | None,
        *,
        waited: bool = False,
    ) -> Outcome | Blocked:
        """A FIFO send (TLA+ ``Send`` of ``QueueFifo.tla``; ``spec.send`` with a group): a
        duplicate answers the earlier id (``DUPLICATE``), checked first (``waited``: again,
        after a wait for room); else as :meth:`impl.machine.Machine.send`, delayed by the
        queue's ``delay``. Trace step ``("send", (id, delay, group, dedup_id), result, now)``."""
        d = self.delay
        if dedup_id is not None:
            earlier = (self.rechecked if waited else self.duplicate)(dedup_id, now)
            if earlier is not None:
                if self.before_step is not None:
                    self.before_step(("send", (id, d, group, dedup_id), earlier, now))
                return new_outcome(Outcome, (DUPLICATE, earlier, 0, 0, None, ()))
        visible_at = check_later("delay", now, d) if d else now
        if id is not None:
            self.check_unclaimed(id, "id", "send" if waited else "")
        if self.shut:
            return SHUT
        if not self.has_room():
            return NO_ROOM
        # prepare
        system = self.system
        if system is not None:
            id = system.claim([id], ["id"])[0]
        elif id is None:
            id = self.fresh_id()
        try:
            self.vet(
                ("send", (id, d, group, dedup_id), True, now),
                self.kept_by(now, visible_at if d else None),
            )
        except BaseException:
            if system is not None:
                system.unclaim([id])
            raise
        # commit
        receivers, due = self.accept(id, body, group, dedup_id, now, visible_at if d else None)
        return new_outcome(Outcome, (ACCEPTED, id, receivers, 0, due, ()))

    def send_batch(  # type: ignore[override]  # groups and dedup ids, not delays (section 2b)
        self,
        now: float,
        ids: Sequence[str | None],
        bodies: Sequence[T],
        groups: Sequence[str],
        dedups: Sequence[str | None],
        *,
        waited: bool = False,
    ) -> Outcome | Blocked:
        """1 to 10 FIFO sends in one step: the duplicates answer their earlier ids, the others
        are accepted together or not at all (``NO_ROOM`` until all fit; a batch of duplicates
        only needs no room and is never refused). ``DuplicateIdError`` for a new entry's id
        repeated or taken, ``ValueError`` for more new entries than the capacity could ever
        hold. Trace step ``("send_batch", (ids, delays, groups, dedup_ids), results, now)``,
        results ``True`` or the earlier id per entry. Outcome ``ACCEPTED``, every entry's id."""
        d = self.delay
        if d:
            check_later("delay", now, d)
        test = self.rechecked if waited else self.duplicate
        earlier = [None if dd is None else test(dd, now) for dd in dedups]
        fresh = [i for i in range(len(ids)) if earlier[i] is None]
        self.refuse_taken(ids, fresh, "send_batch" if waited else "")
        if fresh:
            if self.shut:
                return SHUT
            if not self.accepts(len(fresh)):
                return NO_ROOM
        # prepare
        system = self.system
        given = [ids[i] for i in fresh]
        if system is not None:
            claimed = system.claim(given, [f"entries[{i}].id" for i in fresh])
        else:
            claimed = self.fresh_ids(given, [id for id in given if id is not None])
        new = iter(claimed)
        final = [next(new) if e is None else e for e in earlier]
        results = tuple(True if e is None else e for e in earlier)
        visible_at = check_later("delay", now, d) if d else None
        try:
            due = self.kept_by(now, visible_at) if fresh else None
            step = (tuple(final), (d,) * len(final), tuple(groups), tuple(dedups))
            self.vet(("send_batch", step, results, now), due)
        except BaseException:
            if system is not None:
                system.unclaim(claimed)
            raise
        # commit: each new entry as send, in order
        receivers = 0
        due = None
        for i in fresh:
            r, armed = self.accept(final[i], bodies[i], groups[i], dedups[i], now, visible_at)
            receivers += r
            if armed is not None and (due is None or armed < due):
                due = armed
        return new_outcome(Outcome, (ACCEPTED, final, receivers, 0, due, ()))

    def refuse_taken(self, ids: Sequence[str | None], fresh: Sequence[int], waited: str) -> None:
        """A batch's new entries: ``DuplicateIdError`` for an id repeated among them or taken,
        ``ValueError`` for more of them than the capacity could ever hold."""
        where: dict[str, int] = {}
        for i in fresh:
            mine = ids[i]
            if mine is None:
                continue
            if mine in where:
                raise DuplicateIdError(
                    f"entries[{i}].id {mine!r} repeats entries[{where[mine]}].id"
                )
            where[mine] = i
            self.check_unclaimed(mine, f"entries[{i}].id", waited)
        if self.capacity is not None and len(fresh) > self.capacity:
            raise ValueError(
                f"entries: a batch of {len(fresh)} new messages can never fit a "
                f"queue of capacity {self.capacity}"
            )

    def accept(
        self,
        id: str,
        body: T,
        group: str,
        dedup_id: str | None,
        now: float,
        visible_at: float | None,
    ) -> tuple[int, float | None]:
        """A FIFO send's commit: the message joins its group, visible (``visible_at`` ``None``)
        or delayed until ``visible_at``; its dedup window starts. Returns the receivers it
        enabled and the earliest timer it armed."""
        self.accepted.add(id)
        self.sends += 1
        rec = FifoRecord(id, body, now, group, self.sends)
        receivers = 0
        if visible_at is not None:
            self.add_delayed(rec, visible_at)
        else:
            self.visible[id] = rec
            receivers = 1
        due = visible_at
        if self.retention is not None:
            due = self.retain(rec, due)
        if dedup_id is not None:
            self.remember(dedup_id, id, now)
        return receivers, due
