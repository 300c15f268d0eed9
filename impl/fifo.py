"""The threaded FIFO queue (the SQS ``.fifo`` queue type): ``impl.FifoQueue``.

The same threaded driver as ``impl.Queue`` (:class:`impl.threaded.BaseQueue`) of the FIFO
machine (:class:`impl.fifo_machine.FifoMachine`, contract section 2b: message groups and their
locks, release to the place in send order, deduplication), plus the FIFO sends: a group, a dedup
id, no per-send delay, and a duplicate check before the id and room checks (and again after
every wait for room). Their trace steps carry the group and dedup id as extra arguments (see
:meth:`FifoQueue.send`); ``tla.trace.check_trace(..., fifo=Fifo(dedup_interval))`` validates
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from impl.clock import Clock
from impl.driver import check_batch, check_fifo_entries, step_of
from impl.fifo_machine import FifoMachine, FifoRecord
from impl.machine import Machine, T
from impl.message import Entry
from impl.outcome import Blocked
from impl.threaded import BaseQueue
from impl.validate import INF, check_bool, check_id, check_optional_time, check_time

__all__ = ["FifoQueue", "FifoRecord"]


class FifoQueue(BaseQueue[T]):
    """An SQS FIFO queue: message groups, group locking, in-group order, deduplication.

    Everything :class:`impl.Queue` promises holds, with the differences of contract section
    2b; its state and steps are :class:`impl.fifo_machine.FifoMachine`'s. (``FifoQueue`` and
    ``Queue`` are siblings over :class:`impl.threaded.BaseQueue`: their sends take different
    arguments.)
    """

    machine_class: ClassVar[type[Machine[Any]]] = FifoMachine

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
        # Checked before the queue is linked into its target's system: a bad interval changes
        # nothing.
        interval = check_time("dedup_interval", dedup_interval)
        if not interval > 0:
            raise ValueError(f"dedup_interval must be > 0, got {dedup_interval!r}")
        self._dedup_interval = interval
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

    def _new_machine(
        self, capacity: int | None, max_receives: int | None, retention: float | None
    ) -> Machine[T]:
        cls = self.machine_class
        assert issubclass(cls, FifoMachine)
        machine: FifoMachine[T] = cls(
            self._token,
            capacity,
            max_receives,
            retention,
            delay=self._delay,
            dedup_interval=self._dedup_interval,
        )
        #: The same object as ``machine``, with its FIFO type.
        self._fifo: FifoMachine[T] = machine
        return machine

    @property
    def dedup_interval(self) -> float:
        return self._dedup_interval

    def __repr__(self) -> str:
        return (
            f"FifoQueue(capacity={self.capacity!r}, "
            f"visibility_timeout={self._visibility_timeout!r}, "
            f"max_receives={self.max_receives!r}, delay={self._delay!r}, "
            f"dedup_interval={self.dedup_interval!r}, clock={self._clock!r})"
        )

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
        if block is not True and block is not False:
            check_bool("block", block)
        if timeout is not None and not (type(timeout) is float and 0.0 <= timeout < INF):
            timeout = check_time("timeout", timeout)
        if self._sink_thread is not None:
            self._refuse_reentry("send")
        with self.mutex:
            m = self._fifo
            try:
                out = m.send(self._clock.now(), id, body, group, dedup_id)
            except BaseException:
                self.conditions.notify(self.not_full)  # pass on a notify we may have taken
                raise
            if isinstance(out, Blocked):
                out = self._until(
                    step_of(m.send, id, body, group, dedup_id, waited=True),
                    out,
                    block,
                    timeout,
                    "send",
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
        """Send 1 to 10 entries in one atomic step; their ids in entry order (for a duplicate,
        the earlier id).

        Each :class:`Entry` needs a ``group``; ``delay`` must be ``None`` (the queue's delay
        applies); ``dedup_id`` is optional and must not repeat inside the batch (a
        ``ValueError`` naming the entry). The duplicates are reported as such (the earlier id)
        and the other entries are accepted together or not at all, as by
        :meth:`impl.Queue.send_batch`; among those, an id repeated or already accepted is a
        :class:`DuplicateIdError` (a duplicate entry's own id is not used, so it repeats
        nothing). Trace step: ``("send_batch", (ids, delays, groups, dedup_ids), results,
        now)``, results ``True`` or the earlier id per entry.
        """
        batch = check_batch("entries", entries)
        ids, groups, dedups = check_fifo_entries(batch)
        block = check_bool("block", block)
        wait = check_optional_time("timeout", timeout)
        bodies = [e.body for e in batch]
        if self._sink_thread is not None:
            self._refuse_reentry("send_batch")
        with self.mutex:
            m = self._fifo
            try:
                out = m.send_batch(self._clock.now(), ids, bodies, groups, dedups)
            except BaseException:
                self.conditions.notify(self.not_full)
                raise
            if isinstance(out, Blocked):
                out = self._until(
                    step_of(m.send_batch, ids, bodies, groups, dedups, waited=True),
                    out,
                    block,
                    wait,
                    "send_batch",
                    len(batch),
                )
            self._apply(out)
            sent: list[str] = out.result
            return sent
