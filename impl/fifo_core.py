"""The core of a FIFO queue (the SQS ``.fifo`` type): the standard core with contract section 2b.

:class:`FifoCore` is :class:`impl.core.Core` with the steps where FIFO differs overridden, and
nothing else: no lock and no waiting here either (the shell, ``impl.FifoQueue``, holds its lock
around every call).

- Every message has a group; a group is *locked* while any of its messages is in flight.
  ``deliverable`` is "some visible message's group is unlocked"; ``deliver`` takes the earliest
  sent such message; ``heads``/``deliver_batch`` take the first unlocked group's visible
  messages in send order, then the next group's (``GroupOrder``).
- A released message (retry, change_visibility(0), expiry) and a delay that fires go back to
  their place in send order, not to the tail (``place``).
- A message leaving flight (delete, cancel, dead-lettering) may unlock its group: the step then
  reports a receiver to wake if the group has a visible message (``wake_group``).
- A send with a ``dedup_id`` accepted less than ``dedup_interval`` seconds after an earlier
  acceptance of the same ``dedup_id`` is a duplicate (``duplicate``, checked by the shell before
  anything else); an accepted one starts its window (``remember``); a rejected one records
  nothing (``DedupWindow``).
- Contract section 7.3: a message dead-lettered into a FIFO queue takes the next place in its
  send order (the tail of its group), with its enqueue time reset to the move (AWS: "the
  enqueue timestamp resets when the message is moved to a dead-letter queue"); a move or a
  redrive into a FIFO queue is never deduplicated and records no dedup id (AWS replaces the
  dedup id by the message id, which is unique). Every FIFO record has its enqueue time (a FIFO
  send reads the clock).
"""

from __future__ import annotations

from typing import Generic

from impl.core import NOBODY, RECEIVER, Core, Record, T, Wake
from impl.message import FifoMessage, Message, SnapshotMessage

__all__ = ["FifoCore", "FifoRecord"]

# As impl.core does for Message: the slots set through their descriptors (see there).
_new = object.__new__
_set = {name: getattr(FifoMessage, name).__set__ for name in ("id", "body", "attempt", "receipt")}
_set_group = vars(FifoMessage)["group"].__set__


class FifoRecord(Record[T], Generic[T]):
    """The record of one message of a FIFO queue: a :class:`impl.core.Record` with its
    ``group`` and its send-order number ``sent`` (1 for the first message accepted)."""

    __slots__ = ("group", "sent")

    def __init__(self, id: str, body: T, group: str, sent: int) -> None:
        super().__init__(id, body)
        self.group = group
        self.sent = sent

    def message(self) -> Message[T]:
        m: FifoMessage[T] = _new(FifoMessage)
        _set["id"](m, self.id)
        _set["body"](m, self.body)
        _set["attempt"](m, self.attempt)
        _set["receipt"](m, self.receipt)
        _set_group(m, self.group)
        return m

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


class FifoCore(Core[T]):
    """The state of one FIFO queue and its steps. Extra state: every record is a
    :class:`FifoRecord`, ``visible`` is in send order (``GroupOrder``); ``dedup``: dedup id ->
    (id, accepted at) of its latest acceptance (an entry older than ``dedup_interval`` no longer
    counts, and is dropped now and then); ``sends``: messages accepted so far."""

    ready_word = "deliverable"

    def __init__(
        self,
        token: int,
        capacity: int | None,
        max_receives: int | None,
        dedup_interval: float = 300.0,
    ) -> None:
        super().__init__(token, capacity, max_receives)
        self.dedup_interval = dedup_interval
        self.dedup: dict[str, tuple[str, float]] = {}
        self.sends = 0

    # -- guards and queries ------------------------------------------------------------------

    def locked(self) -> set[str]:
        """The locked groups: those with a message in flight."""
        return {r.group for r in self.in_flight.values() if isinstance(r, FifoRecord)}

    def first(self) -> FifoRecord[T] | None:
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
        """What a receive_batch of ``n`` delivers: the first deliverable message's group's
        visible messages in send order, then the next unlocked group's (ordered by each
        group's earliest visible message), until ``n``."""
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

    def duplicate(self, dedup_id: str, now: float) -> str | None:
        """The id of the message whose acceptance with ``dedup_id`` was less than
        ``dedup_interval`` before ``now`` (so a send with it now is a duplicate), or ``None``.
        A duplicate does not extend the window."""
        hit = self.dedup.get(dedup_id)
        if hit is not None and now - hit[1] < self.dedup_interval:
            return hit[0]
        return None

    def rechecked(self, dedup_id: str, now: float) -> str | None:
        """The duplicate test again, for a send that waited for room (another sender may have
        accepted ``dedup_id`` meanwhile): :meth:`duplicate`. A step of its own so the catalogue
        can leave it out."""
        return self.duplicate(dedup_id, now)

    def dedup_records(self) -> tuple[tuple[str, str, float], ...]:
        """The dedup records ``(dedup_id, id, accepted_at)``, sorted by dedup id."""
        return tuple(sorted((k, id, at) for k, (id, at) in self.dedup.items()))

    # -- the steps ---------------------------------------------------------------------------

    def accept_fifo(
        self,
        id: str,
        body: T,
        group: str,
        dedup_id: str | None,
        visible_at: float | None,
        now: float,
    ) -> Wake:
        """A FIFO send's step: the message joins its group, visible (``visible_at`` ``None``)
        or delayed by the queue's delay until ``visible_at``, and its dedup window starts."""
        self.accepted.add(id)
        self.sends += 1
        rec = FifoRecord(id, body, group, self.sends)
        rec.enqueued_at = now
        wake = NOBODY
        if visible_at is not None:
            self.add_delayed(rec, visible_at)
        else:
            self.visible[id] = rec
            wake = RECEIVER
        self.retain(rec)
        if dedup_id is not None:
            self.remember(dedup_id, id, now)
        return wake

    def remember(self, dedup_id: str, id: str, now: float) -> None:
        """An accepted send with ``dedup_id``: its window starts at ``now``. Records whose
        window has passed are dropped now and then (O(1) amortized)."""
        dedup = self.dedup
        dedup[dedup_id] = (id, now)
        if len(dedup) > 64 and len(dedup) & (len(dedup) - 1) == 0:
            for k in [k for k, (_, t) in dedup.items() if now - t >= self.dedup_interval]:
                del dedup[k]

    def rejected(self, dedup_id: str, id: str | None, now: float) -> None:
        """A send with ``dedup_id`` (and ``id``, ``None`` if it asked for a generated one) was
        rejected at ``now`` (full, id taken, shut down): nothing is recorded, so a later send
        with ``dedup_id`` is new (``DedupWindow``). A seam for the catalogue."""

    def deliver(self, deadline: float | None) -> Record[T]:
        rec = self.first()
        assert rec is not None
        del self.visible[rec.id]
        self.stamp(rec, deadline)
        return rec

    def deliver_batch(self, n: int, deadline: float | None) -> list[Record[T]]:
        out = self.heads(n)
        for rec in out:
            del self.visible[rec.id]
            self.stamp(rec, deadline)
        return out

    def place(self, rec: Record[T]) -> None:
        """Put ``rec``, just appended to the visible tail, back in its place in send order:
        every visible message sent after it moves behind it (their order kept)."""
        assert isinstance(rec, FifoRecord)
        visible = self.visible
        later = [k for k, r in visible.items() if r.sent > rec.sent]  # type: ignore[attr-defined]
        for k in later:
            visible.move_to_end(k)

    def wake_group(self, group: str) -> int:
        """A message of ``group`` left flight: 1 (a receiver to wake) if that unlocked the group
        and it has a visible message, else 0."""
        if group in self.locked():
            return 0
        for r in self.visible.values():
            if r.group == group:  # type: ignore[attr-defined]
                return 1
        return 0

    def release(self, rec: Record[T]) -> Wake:
        wake = super().release(rec)
        assert isinstance(rec, FifoRecord)
        if wake == RECEIVER:
            self.place(rec)
            return wake
        return (self.wake_group(rec.group), wake[1])  # dead-lettered: unlocked, maybe

    def fire_delay(self, rec: Record[T]) -> Wake:
        wake = super().fire_delay(rec)
        self.place(rec)
        return wake

    def delete(self, rec: Record[T]) -> Wake:
        senders = super().delete(rec)[1]
        assert isinstance(rec, FifoRecord)
        return (self.wake_group(rec.group), senders)

    def age_out(self, rec: Record[T]) -> Wake:
        flying = rec.id in self.in_flight
        senders = super().age_out(rec)[1]
        assert isinstance(rec, FifoRecord)
        return (self.wake_group(rec.group) if flying else 0, senders)

    def enqueue_time_of_move(self, rec: Record[T], now: float) -> float:
        return now  # AWS: a move into a FIFO dead-letter queue resets the enqueue time

    def new_record(self, id: str, body: T, group: str | None) -> Record[T]:
        assert group is not None, "a FIFO queue takes in only FIFO messages"
        self.sends += 1
        return FifoRecord(id, body, group, self.sends)

    def joined(self, rec: Record[T]) -> Wake:
        # The tail of send order is the tail of its group: deliverable unless the group is
        # locked by a message of it in flight here.
        assert isinstance(rec, FifoRecord)
        return NOBODY if rec.group in self.locked() else RECEIVER

    def cancel(self, id: str) -> Wake | None:
        flying = self.in_flight.get(id)
        wake = super().cancel(id)
        if wake is None or flying is None:
            return wake
        assert isinstance(flying, FifoRecord)
        return (self.wake_group(flying.group), wake[1])
