"""The two things a scenario can run on, behind one small protocol, and the op dispatch they share.

``model`` (:class:`ModelTarget`) is the pure-function spec; ``impl`` (:class:`ImplTarget`) is
``impl.Queue`` (``impl.FifoQueue`` for a ``"fifo": true`` scenario) on an ``impl.FakeClock``;
``aio`` (:class:`AioTarget`) is ``impl.AsyncQueue`` (``impl.AsyncFifoQueue``) on one event loop,
through :class:`Blocking`, a facade that runs each call to completion on that loop, so that the
``impl`` target's own methods drive it unchanged.
The harness, the differential test and the hand-written examples all go through
:func:`run_scenario`, so the only difference between the targets is the small methods of
:class:`Target`. Each method is named after the contract operation it
performs, the registry's name (:mod:`spec.operations`); the parser maps the scenario's op names
(the job-queue's vocabulary) to them, and :func:`apply` calls the method of that name. The model
target runs every operation by the registry's step onto the spec.

When the sweeper runs: after *every* op, every queue of the scenario sweeps at the current time.
Only ``advance`` moves the clock, so in practice only ``advance`` makes anything due (a delay as
well as a deadline); the other case is a delivery whose deadline is already due when it is set
(``["reserve", 0]``), which ``impl.Queue``'s own sweeper thread would release at once. Sweeping
after every op makes both targets release it at the same point, so the output does not depend on
thread timing.

A batch is one op with one output: ``enqueue_batch`` ``true``/``false`` (all or none),
``reserve_batch`` a list of deliveries, ``ack_batch``/``extend_batch`` a list of bools. An
``enqueue_batch`` that ``impl.Queue`` refuses with ``ValueError`` although the scenario is valid
(an id repeated inside the batch, more entries than the capacity) is rejected, ``false``, as the
spec rejects it: both are a batch that can never be accepted.

FIFO queues (contract section 2b): a send carries ``group`` and ``dedup`` after its
delay, and its output is ``"duplicate"`` when the queue deduplicated it (the spec returns the
earlier message's id; ``impl.FifoQueue.send`` returns it too, told apart from an acceptance by
the target's record of the ids each queue accepted). An ``enqueue_batch`` on a FIFO queue
outputs a list: ``"duplicate"`` for each deduplicated entry, ``true``/``false`` for the others
(accepted or rejected together).

A system of queues (contract section 7): with ``"dead_letter"`` queue 1 is queue 0's
dead-letter target. The model target is then :class:`SystemModelTarget`, queues 0 and 1 one
``spec.system.System``; impl's queue 0 is made with ``dead_letter=`` queue 1 (created first),
so the two share one id space; a ``["new"]`` queue is in no system on either. ``"retention"``
is ``spec.Config.retention`` / impl's ``retention=``. ``redrive`` is ``start_redrive`` on
queue 1 (``RedriveRunning`` is ``false``), ``redrive_cancel`` cancels queue 1's most recent
task, ``redrive_status`` reads it, ``aged`` is the current queue's aged-out ids. The sweep after
every op sweeps the queues in index order, queue 0 before queue 1, on both targets (a message
that queue 0's sweep moves in is swept in queue 1 in the same op); a redrive's ticks are queue
1's timers, so they fire there.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Generic, Literal, Protocol, TypeAlias, TypeVar, cast

import impl
import spec
import spec.system as spec_system
import spec.transitions
from model_tests.scenario_format import (
    QUEUE_DEFAULT,
    Aged,
    Dead,
    Invoke,
    New,
    Op,
    QueueConfig,
    QueueDefault,
    Redrive,
    RedriveCancel,
    RedriveStatus,
    Scenario,
    Use,
    parse_scenario,
)
from spec.operations import REGISTRY

#: One op's output as JSON data: a bool, a count, ``null``, ``[id, payload, attempt]``, a list
#: of ids, of deliveries or of bools, ``"duplicate"`` (a FIFO send deduplicated).
Output: TypeAlias = bool | int | str | list[Any] | None

#: The output of a FIFO send that the queue deduplicated (contract section 4).
DUPLICATE = "duplicate"
#: A send's output: accepted, rejected, or :data:`DUPLICATE`.
Sent: TypeAlias = bool | str

#: ``[id, payload, attempt]`` of a delivery, as a tuple.
Delivered: TypeAlias = tuple[str, str, int]

#: A delay as parsed: a time, or the queue's configured delay.
Delay: TypeAlias = float | QueueDefault
#: ``[id, payload, opts]`` of an ``enqueue_batch`` entry, parsed: ``(id, body, delay)``, and on
#: a FIFO queue ``(id, body, QUEUE_DEFAULT, group, dedup)``.
BatchEntry: TypeAlias = tuple[str, str, Delay] | tuple[str, str, Delay, str, str | None]


def _fifo_parts(entry: BatchEntry) -> tuple[str | None, str | None]:
    """``(group, dedup)`` of a batch entry; ``(None, None)`` for a standard queue's."""
    if len(entry) == 5:
        return entry[3], entry[4]
    return None, None


TargetName: TypeAlias = Literal["model", "impl", "aio"]

#: ``[status, moved, skipped, to_move]`` of a redrive task (``redrive_status``'s output; an SQS
#: endpoint has no ``skipped`` count: ``None``).
Progress: TypeAlias = list[str | int | None]


class Target(Protocol):
    """One run of one scenario: a list of queues (all with the same config), a current queue and
    a shared clock that starts at 0. Receipts always name the current queue."""

    def send(
        self, id: str, body: str, delay: Delay, group: str | None = None, dedup: str | None = None
    ) -> Sent:
        """Send to the current queue; ``False`` if rejected (duplicate id or full),
        :data:`DUPLICATE` if a FIFO queue deduplicated it."""
        ...

    def send_batch(self, entries: Sequence[BatchEntry]) -> bool | list[Sent]:
        """Send every entry or none; ``False`` if the batch is rejected. On a FIFO queue, one
        result per entry: :data:`DUPLICATE`, or the batch's ``True``/``False``."""
        ...

    def receive(self, vt: float | QueueDefault | None) -> Delivered | None:
        """Receive from the current queue without waiting; ``None`` if nothing is visible."""
        ...

    def receive_batch(self, n: int, vt: float | QueueDefault | None) -> list[Delivered]:
        """Receive up to ``n`` without waiting; empty if nothing is visible."""
        ...

    def delete(self, id: str, attempt: int) -> bool: ...

    def delete_batch(self, receipts: Sequence[tuple[str, int]]) -> list[bool]: ...

    def retry(self, id: str, attempt: int) -> bool: ...

    def change_visibility(self, id: str, attempt: int, t: float) -> bool: ...

    def change_visibility_batch(self, changes: Sequence[tuple[str, int, float]]) -> list[bool]: ...

    def cancel(self, id: str) -> bool: ...

    def purge(self) -> int:
        """Cancel every active message of the current queue; how many."""
        ...

    def dead_letters(self) -> list[str]:
        """Ids of the current queue's dead letters, in the order they died."""
        ...

    def advance(self, dt: float) -> None:
        """Move the shared clock on by ``dt``."""
        ...

    def sweep_all(self) -> None:
        """Every queue applies every expiry due at the current time."""
        ...

    def new_queue(self) -> None:
        """Create another queue with the scenario's config and make it current."""
        ...

    def use(self, index: int) -> None: ...

    def redrive(self, rate: float | None, to: int | None) -> bool | str:
        """Start a redrive of queue 1 (queue 0's dead-letter target): ``rate`` messages per
        second (``None``: all at once) to queue ``to`` (``None``: each message's source);
        ``False`` if a task of queue 1 is already running. (A string: an endpoint's answer the
        model never gives, such as the kit's ``"unsupported"``.)"""
        ...

    def redrive_cancel(self) -> bool | str:
        """Cancel queue 1's most recent redrive task; ``True`` if it was running."""
        ...

    def redrive_status(self) -> Progress | str | None:
        """``[status, moved, skipped, to_move]`` of queue 1's most recent task, or ``None``."""
        ...

    def aged(self) -> list[str]:
        """Ids of the current queue's aged-out messages, in the order they aged out."""
        ...

    def close(self) -> None:
        """Release whatever the run holds (threads); the target is unusable afterwards."""
        ...


class ModelTarget:
    """Runs a scenario on the spec: a list of ``spec.State`` values and a number for the clock."""

    def __init__(self, config: QueueConfig) -> None:
        if config.dead_letter is not None:
            raise ValueError("dead_letter: a system of queues runs on SystemModelTarget")
        self._config = spec_config(config)
        self._vt = config.visibility_timeout
        self._delay = config.delay
        self._now: spec.Time = 0.0
        self.states: list[spec.State] = [spec.initial(self._config, queue=0)]
        self._current = 0

    @property
    def now(self) -> spec.Time:
        """The shared clock."""
        return self._now

    @property
    def current(self) -> int:
        """The index of the current queue."""
        return self._current

    def _set(self, state: spec.State) -> None:
        self.states[self._current] = state

    def _step(self, name: str, *args: object) -> object:
        """The registry's step of ``name`` on the current queue (receipts name it)."""
        state, self._now, result = REGISTRY[name].step(self.states[self._current], self._now, args)
        self._set(state)
        return result

    def _delay_of(self, delay: Delay) -> float:
        return self._delay if delay is QUEUE_DEFAULT else delay

    def _vt_of(self, vt: float | QueueDefault | None) -> float | None:
        return self._vt if vt is QUEUE_DEFAULT else vt

    def send(
        self, id: str, body: str, delay: Delay, group: str | None = None, dedup: str | None = None
    ) -> Sent:
        if group is None:
            return self._step("send", id, body, self._delay_of(delay)) is True
        # A FIFO send: the spec's send with its group and dedup id (the registry's step has
        # no place for them); a duplicate's result is the earlier message's id.
        s = self.states[self._current]
        after, result = spec.send(s, id, body, None, self._now, group=group, dedup_id=dedup)
        self._set(after)
        return DUPLICATE if isinstance(result, str) else result is True

    def send_batch(self, entries: Sequence[BatchEntry]) -> bool | list[Sent]:
        if not self._config.fifo:
            batch = tuple((e[0], e[1], self._delay_of(e[2])) for e in entries)
            return self._step("send_batch", batch) is True
        fifo = tuple((e[0], e[1], None, *_fifo_parts(e)) for e in entries)
        after, results = spec.send_batch(self.states[self._current], fifo, self._now)
        self._set(after)
        return _sent_list(results)

    def receive(self, vt: float | QueueDefault | None) -> Delivered | None:
        d = self._step("receive", self._vt_of(vt))
        assert d is None or isinstance(d, tuple)
        return d

    def receive_batch(self, n: int, vt: float | QueueDefault | None) -> list[Delivered]:
        ds = self._step("receive_batch", n, self._vt_of(vt))
        assert isinstance(ds, tuple)
        return [_delivered(d) for d in ds]

    def delete(self, id: str, attempt: int) -> bool:
        return self._step("delete", id, attempt) is True

    def delete_batch(self, receipts: Sequence[tuple[str, int]]) -> list[bool]:
        return _bools(self._step("delete_batch", tuple(receipts)))

    def retry(self, id: str, attempt: int) -> bool:
        return self._step("retry", id, attempt) is True

    def change_visibility(self, id: str, attempt: int, t: float) -> bool:
        return self._step("change_visibility", id, attempt, t) is True

    def change_visibility_batch(self, changes: Sequence[tuple[str, int, float]]) -> list[bool]:
        return _bools(self._step("change_visibility_batch", tuple(changes)))

    def cancel(self, id: str) -> bool:
        return self._step("cancel", id) is True

    def purge(self) -> int:
        n = self._step("purge")
        assert isinstance(n, int)
        return n

    def dead_letters(self) -> list[str]:
        return list(self.states[self._current].dead)

    def advance(self, dt: float) -> None:
        self._step("advance", dt)

    def sweep_all(self) -> None:
        self.states = [spec.expire(s, self._now)[0] for s in self.states]

    def new_queue(self) -> None:
        self.states.append(spec.initial(self._config, queue=len(self.states)))
        self._current = len(self.states) - 1

    def use(self, index: int) -> None:
        self._current = index

    def redrive(self, rate: float | None, to: int | None) -> bool | str:
        raise ValueError("redrive: a scenario without a dead-letter target (parser refuses it)")

    def redrive_cancel(self) -> bool | str:
        raise ValueError("redrive_cancel: a scenario without a dead-letter target")

    def redrive_status(self) -> Progress | str | None:
        raise ValueError("redrive_status: a scenario without a dead-letter target")

    def aged(self) -> list[str]:
        return list(self.states[self._current].aged_out)

    def close(self) -> None:
        pass


def spec_config(config: QueueConfig) -> spec.Config:
    """The spec's configuration of a queue of ``config`` (its dead-letter target aside)."""
    if config.fifo:
        return spec.Config(
            capacity=config.capacity,
            max_receives=config.max_receives,
            delay=config.delay,
            fifo=True,
            dedup_interval=config.dedup_interval,
            retention=config.retention,
        )
    return spec.Config(
        capacity=config.capacity,
        max_receives=config.max_receives,
        delay=config.delay,
        retention=config.retention,
    )


class SystemModelTarget(ModelTarget):
    """The model target of a scenario with a dead-letter target: queues 0 and 1 are one
    :class:`spec.system.System` (queue 1, ``"dlq"``, added first as a target must be; queue 0,
    ``"q0"``, naming it), run by :mod:`spec.system`'s transitions; a ``["new"]`` queue (2, 3,
    ...) is a queue of its own, as in :class:`ModelTarget`. ``states`` mirrors every queue's
    state after each op, so a guide reads it as before."""

    #: The system's queue names by harness index.
    NAMES: tuple[str, str] = ("q0", "dlq")

    def __init__(self, config: QueueConfig) -> None:
        super().__init__(replace(config, dead_letter=None))
        dl = config.dead_letter_config()
        self._dlq_vt = dl.visibility_timeout
        self.system = spec_system.build(("dlq", spec_config(dl)), ("q0", self._config, "dlq"))
        self.states.append(self.system.state("dlq"))
        self._sync()

    def _sync(self) -> None:
        self.states[0] = self.system.state("q0")
        self.states[1] = self.system.state("dlq")

    @property
    def _name(self) -> str | None:
        """The system name of the current queue, ``None`` for a queue of its own."""
        return self.NAMES[self._current] if self._current < 2 else None

    def _receipt(self, id: str, attempt: int) -> spec.Receipt:
        assert self._name is not None
        return spec.Receipt(self.system.state(self._name).queue, id, attempt)

    def _vt_of(self, vt: float | QueueDefault | None) -> float | None:
        if vt is QUEUE_DEFAULT and self._current == 1:
            return self._dlq_vt
        return super()._vt_of(vt)

    def _send_delay(self, name: str, delay: Delay) -> float:
        # Queue 1 has no delay of its own; a send's own option applies on either queue.
        if delay is QUEUE_DEFAULT:
            return 0.0 if name == "dlq" else self._delay
        return delay

    def send(
        self, id: str, body: str, delay: Delay, group: str | None = None, dedup: str | None = None
    ) -> Sent:
        name = self._name
        if name is None:
            return super().send(id, body, delay, group, dedup)
        d = None if group is not None else self._send_delay(name, delay)
        self.system, result = spec_system.send(
            self.system, name, id, body, d, self._now, group=group, dedup_id=dedup
        )
        self._sync()
        return DUPLICATE if isinstance(result, str) else result is True

    def send_batch(self, entries: Sequence[BatchEntry]) -> bool | list[Sent]:
        name = self._name
        if name is None:
            return super().send_batch(entries)
        batch: tuple[spec.transitions.BatchEntry, ...]
        if self._config.fifo:
            batch = tuple((e[0], e[1], None, *_fifo_parts(e)) for e in entries)
        else:
            batch = tuple((e[0], e[1], self._send_delay(name, e[2])) for e in entries)
        self.system, results = spec_system.send_batch(self.system, name, batch, self._now)
        self._sync()
        return _sent_list(results) if self._config.fifo else results is True

    def receive(self, vt: float | QueueDefault | None) -> Delivered | None:
        name = self._name
        if name is None:
            return super().receive(vt)
        self.system, d = spec_system.receive(self.system, name, self._now, self._vt_of(vt))
        self._sync()
        return None if d is None else _delivered(d)

    def receive_batch(self, n: int, vt: float | QueueDefault | None) -> list[Delivered]:
        name = self._name
        if name is None:
            return super().receive_batch(n, vt)
        self.system, ds = spec_system.receive_batch(
            self.system, name, self._now, n, self._vt_of(vt)
        )
        self._sync()
        return [_delivered(d) for d in ds]

    def delete(self, id: str, attempt: int) -> bool:
        name = self._name
        if name is None:
            return super().delete(id, attempt)
        self.system, ok = spec_system.delete(self.system, name, self._receipt(id, attempt))
        self._sync()
        return ok

    def delete_batch(self, receipts: Sequence[tuple[str, int]]) -> list[bool]:
        name = self._name
        if name is None:
            return super().delete_batch(receipts)
        rs = [self._receipt(id, attempt) for id, attempt in receipts]
        self.system, oks = spec_system.delete_batch(self.system, name, rs)
        self._sync()
        return list(oks)

    def retry(self, id: str, attempt: int) -> bool:
        name = self._name
        if name is None:
            return super().retry(id, attempt)
        receipt = self._receipt(id, attempt)
        self.system, ok = spec_system.retry(self.system, name, receipt, self._now)
        self._sync()
        return ok

    def change_visibility(self, id: str, attempt: int, t: float) -> bool:
        name = self._name
        if name is None:
            return super().change_visibility(id, attempt, t)
        receipt = self._receipt(id, attempt)
        self.system, ok = spec_system.change_visibility(self.system, name, receipt, t, self._now)
        self._sync()
        return ok

    def change_visibility_batch(self, changes: Sequence[tuple[str, int, float]]) -> list[bool]:
        name = self._name
        if name is None:
            return super().change_visibility_batch(changes)
        cs = [(self._receipt(id, attempt), t) for id, attempt, t in changes]
        self.system, oks = spec_system.change_visibility_batch(self.system, name, cs, self._now)
        self._sync()
        return list(oks)

    def cancel(self, id: str) -> bool:
        name = self._name
        if name is None:
            return super().cancel(id)
        self.system, ok = spec_system.cancel(self.system, name, id)
        self._sync()
        return ok

    def purge(self) -> int:
        name = self._name
        if name is None:
            return super().purge()
        self.system, n = spec_system.purge(self.system, name)
        self._sync()
        return n

    def dead_letters(self) -> list[str]:
        return list(self.states[self._current].dead)

    def sweep_all(self) -> None:
        # Every queue in index order, as on every target: queue 0, then queue 1 (so a message
        # queue 0's sweep moved in is swept in queue 1 at once: one past its retention there
        # ages out in the same op), then the rest.
        for name in self.NAMES:
            self.system, _ = spec_system.expire(self.system, name, self._now)
        self._sync()
        self.states[2:] = [spec.expire(s, self._now)[0] for s in self.states[2:]]

    def redrive(self, rate: float | None, to: int | None) -> bool | str:
        destination = None if to is None else self.NAMES[to]
        try:
            self.system, _ = spec_system.start_redrive(
                self.system, "dlq", self._now, destination=destination, rate=rate
            )
        except spec_system.RedriveRunning:
            return False
        self._sync()
        return True

    def redrive_cancel(self) -> bool | str:
        tasks = self.system.redrive_tasks("dlq")
        if not tasks:
            return False
        self.system, ok = spec_system.cancel_redrive(self.system, tasks[0].name)
        self._sync()
        return ok

    def redrive_status(self) -> Progress | str | None:
        tasks = self.system.redrive_tasks("dlq")
        if not tasks:
            return None
        t = tasks[0]
        return [t.status.value, t.moved, t.skipped, t.to_move]

    def close(self) -> None:
        pass


def _delivered(d: object) -> Delivered:
    """A delivery of the registry's step: ``(id, body, attempt)`` (or a ``spec.Delivery``)."""
    if isinstance(d, spec.Delivery):
        return (d.id, d.body, d.attempt)
    assert isinstance(d, tuple) and len(d) == 3
    id, body, attempt = d
    assert isinstance(id, str) and isinstance(body, str) and isinstance(attempt, int)
    return (id, body, attempt)


def _sent_list(results: object) -> list[Sent]:
    """A FIFO ``send_batch``'s per-entry results: an earlier id (deduplicated) is
    :data:`DUPLICATE`, a bool stays itself."""
    assert isinstance(results, tuple), results
    return [DUPLICATE if isinstance(r, str) else r is True for r in results]


def _bools(results: object) -> list[bool]:
    assert isinstance(results, tuple) and all(isinstance(r, bool) for r in results)
    return list(results)


class ImplTarget:
    """Runs a scenario on ``impl.Queue`` instances sharing one ``impl.FakeClock``
    (``queue_class``: another class with ``impl.Queue``'s constructor, such as a mutant).

    Every call is non-blocking: a send that finds no room gives ``False`` (``impl.Full``), a
    duplicate id gives ``False`` (``impl.DuplicateIdError``), a receive that finds nothing gives
    ``None`` (``impl.Empty``).
    """

    def __init__(
        self, config: QueueConfig, queue_class: type[impl.BaseQueue[str]] | None = None
    ) -> None:
        self._config = config
        # A standard queue's class (impl.Queue, or a mutant of it); FIFO scenarios use FifoQueue.
        self._queue_class = impl.Queue if queue_class is None else queue_class
        self.clock = impl.FakeClock()
        self.queues: list[impl.BaseQueue[str]] = []
        # The ids each queue accepted and, on FIFO queues, when each dedup id was last accepted:
        # what tells a duplicate (which returns an earlier id, possibly its own) from an
        # acceptance, and which entries of a rejected FIFO batch were duplicates.
        # (By queue index, filled as used: a subclass's new_queue need not know of them.)
        self._accepted: defaultdict[int, set[str]] = defaultdict(set)
        self._dedup: defaultdict[int, dict[str, float]] = defaultdict(dict)
        self._current = 0
        # A dead-letter target is created first (a system's target before its sources) and
        # is queue 1; queue 0 names it.
        self._dlq: impl.BaseQueue[str] | None = None
        if config.dead_letter is not None:
            self._dlq = self._make(config.dead_letter_config(), None)
        self.queues.append(self._make(config, self._dlq))
        if self._dlq is not None:
            self.queues.append(self._dlq)

    @property
    def _q(self) -> impl.BaseQueue[str]:
        return self.queues[self._current]

    @property
    def _std(self) -> impl.Queue[str]:
        """The current queue, a standard one (the sends without a group)."""
        q = self._q
        assert isinstance(q, impl.Queue), "a standard send on a FIFO queue"
        return q

    def send(
        self, id: str, body: str, delay: Delay, group: str | None = None, dedup: str | None = None
    ) -> Sent:
        if group is not None:
            return self._send_fifo(id, body, group, dedup)
        try:
            d = None if delay is QUEUE_DEFAULT else delay
            self._std.send(body, id=id, delay=d, block=False)
        except (impl.Full, impl.DuplicateIdError):
            return False
        self._accepted[self._current].add(id)
        return True

    def _is_duplicate(self, dedup: str | None) -> bool:
        at = self._dedup[self._current].get(dedup) if dedup is not None else None
        return at is not None and self.clock.now() < at + self._config.dedup_interval

    def _record(self, id: str, dedup: str | None) -> None:
        self._accepted[self._current].add(id)
        if dedup is not None:
            self._dedup[self._current][dedup] = self.clock.now()

    def _send_fifo(self, id: str, body: str, group: str, dedup: str | None) -> Sent:
        q = self._q
        assert isinstance(q, impl.FifoQueue)
        known = id in self._accepted[self._current]
        try:
            got = q.send(body, group=group, id=id, dedup_id=dedup, block=False)
        except (impl.Full, impl.DuplicateIdError):
            return False
        if got != id or known:
            return DUPLICATE
        self._record(id, dedup)
        return True

    def _send_batch_fifo(self, entries: Sequence[BatchEntry]) -> list[Sent]:
        q = self._q
        assert isinstance(q, impl.FifoQueue)
        parts = [_fifo_parts(e) for e in entries]
        batch = [
            impl.Entry(e[1], id=e[0], group=g, dedup_id=d)
            for e, (g, d) in zip(entries, parts, strict=True)
        ]
        # Which entries are duplicates is decided before anything else, from the acceptances
        # this target saw; an accepted batch's returned ids must agree with it.
        dups = [self._is_duplicate(d) for _, d in parts]
        fresh = [e[0] for e, dup in zip(entries, dups, strict=True) if not dup]
        never = len(set(fresh)) < len(fresh) or (
            self._config.capacity is not None and len(fresh) > self._config.capacity
        )
        try:
            got = q.send_batch(batch, block=False)
        except (impl.Full, impl.DuplicateIdError):
            return [DUPLICATE if dup else False for dup in dups]
        except ValueError:
            if never:
                return [DUPLICATE if dup else False for dup in dups]
            raise
        before = set(self._accepted[self._current])
        out: list[Sent] = []
        for e, (_, d), r in zip(entries, parts, got, strict=True):
            if r != e[0] or e[0] in before:
                out.append(DUPLICATE)
            else:
                self._record(e[0], d)
                out.append(True)
        return out

    def send_batch(self, entries: Sequence[BatchEntry]) -> bool | list[Sent]:
        if self._config.fifo:
            return self._send_batch_fifo(entries)
        batch = [
            impl.Entry(body, id=id, delay=None if d is QUEUE_DEFAULT else d)
            for id, body, d, *_ in entries
        ]
        # A batch that can never be accepted is a ValueError before anything happens: an id
        # repeated inside it, or more entries than the capacity. The spec rejects both.
        never = len({e[0] for e in entries}) < len(entries) or (
            self._config.capacity is not None and len(entries) > self._config.capacity
        )
        try:
            self._std.send_batch(batch, block=False)
        except (impl.Full, impl.DuplicateIdError):
            return False
        except ValueError:
            if never:
                return False
            raise
        self._accepted[self._current].update(e[0] for e in entries)
        return True

    def receive(self, vt: float | QueueDefault | None) -> Delivered | None:
        try:
            if vt is QUEUE_DEFAULT:
                m = self._q.receive(block=False)
            else:
                m = self._q.receive(block=False, visibility_timeout=vt)
        except impl.Empty:
            return None
        return (m.id, m.body, m.attempt)

    def receive_batch(self, n: int, vt: float | QueueDefault | None) -> list[Delivered]:
        try:
            if vt is QUEUE_DEFAULT:
                ms = self._q.receive_batch(n, block=False)
            else:
                ms = self._q.receive_batch(n, block=False, visibility_timeout=vt)
        except impl.Empty:
            return []
        return [(m.id, m.body, m.attempt) for m in ms]

    def delete(self, id: str, attempt: int) -> bool:
        return self._q.delete(self._q.receipt(id, attempt))

    def delete_batch(self, receipts: Sequence[tuple[str, int]]) -> list[bool]:
        return self._q.delete_batch([self._q.receipt(id, attempt) for id, attempt in receipts])

    def retry(self, id: str, attempt: int) -> bool:
        return self._q.retry(self._q.receipt(id, attempt))

    def change_visibility(self, id: str, attempt: int, t: float) -> bool:
        return self._q.change_visibility(self._q.receipt(id, attempt), t)

    def change_visibility_batch(self, changes: Sequence[tuple[str, int, float]]) -> list[bool]:
        return self._q.change_visibility_batch(
            [(self._q.receipt(id, attempt), t) for id, attempt, t in changes]
        )

    def cancel(self, id: str) -> bool:
        return self._q.cancel(id)

    def purge(self) -> int:
        return self._q.purge()

    def dead_letters(self) -> list[str]:
        return [m.id for m in self._q.dead_letters()]

    def advance(self, dt: float) -> None:
        self.clock.advance(dt)

    def sweep_all(self) -> None:
        for q in self.queues:
            q.sweep()

    def _make(self, c: QueueConfig, dead_letter: impl.BaseQueue[str] | None) -> impl.BaseQueue[str]:
        """A queue of configuration ``c`` on the shared clock; the keywords of contract section 7
        only when
        they are set, so a mutant class without them still runs every other scenario."""
        extra: dict[str, Any] = {}
        if c.retention is not None:
            extra["retention"] = c.retention
        if dead_letter is not None:
            extra["dead_letter"] = dead_letter
        if c.fifo:
            return impl.FifoQueue(
                capacity=c.capacity,
                visibility_timeout=c.visibility_timeout,
                max_receives=c.max_receives,
                delay=c.delay,
                dedup_interval=c.dedup_interval,
                clock=self.clock,
                **extra,
            )
        return self._queue_class(
            capacity=c.capacity,
            visibility_timeout=c.visibility_timeout,
            max_receives=c.max_receives,
            delay=c.delay,
            clock=self.clock,
            **extra,
        )

    def new_queue(self) -> None:
        # A new queue has the scenario's settings but no dead-letter target.
        self.queues.append(self._make(replace(self._config, dead_letter=None), None))
        self._current = len(self.queues) - 1

    def use(self, index: int) -> None:
        self._current = index

    def _target(self) -> impl.BaseQueue[str]:
        assert self._dlq is not None, "a redrive op in a scenario without a dead-letter target"
        return self._dlq

    def redrive(self, rate: float | None, to: int | None) -> bool:
        dlq = self._target()
        try:
            dlq.start_redrive(None if to is None else self.queues[to], rate=rate)
        except impl.errors.RedriveRunning:
            return False
        return True

    def redrive_cancel(self) -> bool:
        tasks = self._target().redrive_tasks()
        return bool(tasks) and tasks[0].cancel()

    def redrive_status(self) -> Progress | None:
        tasks = self._target().redrive_tasks()
        if not tasks:
            return None
        t = tasks[0]
        return [t.status.value, t.moved, t.skipped, t.to_move]

    def aged(self) -> list[str]:
        return self._q.aged_out()

    def close(self) -> None:
        # In index order: queue 0, a source, before queue 1, its target.
        for q in self.queues:
            q.close()


R = TypeVar("R")
A = TypeVar("A")


def async_class(*, fifo: bool) -> Any:
    """``impl.AsyncFifoQueue`` or ``impl.AsyncQueue``; ``None`` while ``impl`` has no asyncio
    driver (the tests of its targets are skipped then)."""
    return vars(impl).get("AsyncFifoQueue" if fifo else "AsyncQueue")


class LoopRunner:
    """One event loop on which every call runs to completion, one call at a time.

    :meth:`run` calls a function inside a task of the loop (so that the async queue finds its
    running loop, binds to it and may arm its timer on it) and, if the call gives an awaitable,
    awaits it; the loop runs until that task is done. Tasks the caller started
    (:meth:`start`) stay pending between calls and run whenever the loop runs again.
    ``after_next`` runs hooks in the same task step right after the next call returns (or
    raises), before any other task runs: what a test needs to observe the queue, or cancel a
    task, right after this very call woke it.
    """

    #: How many loop iterations :meth:`settle` runs: a woken task's step is scheduled with
    #: ``call_soon``, one iteration away; a handful leaves the loop idle in every run here.
    SETTLE_ITERATIONS = 8

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._after: list[Callable[[], None]] = []

    def run(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` inside the loop, awaited if it gives an awaitable.

        Called from inside the loop (a hook, a task), a plain call runs at once; a coroutine
        cannot be run to completion there, and is a ``RuntimeError``."""
        if self.loop.is_running():
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):
                if inspect.iscoroutine(result):
                    result.close()  # never awaited: closed, not left to warn
                raise RuntimeError(f"{fn!r} gave an awaitable inside the running loop")
            return result
        hooks, self._after = self._after, []

        async def call() -> Any:
            try:
                result = fn(*args, **kwargs)
                if inspect.isawaitable(result):
                    result = await result
                return result
            finally:
                for hook in hooks:
                    hook()

        return self.loop.run_until_complete(call())

    def after_next(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` right after the next :meth:`run`'s call returns, in its task step."""
        self._after.append(hook)

    def start(self, coro: Any) -> asyncio.Task[Any]:
        """A task of ``coro`` on the loop, run up to where it waits (or to its end)."""
        task = self.loop.create_task(coro)
        self.settle()
        return task

    def settle(self) -> None:
        """Run the loop until every ready task has run (a few iterations; no wall time)."""

        async def iterations() -> None:
            for _ in range(self.SETTLE_ITERATIONS):
                await asyncio.sleep(0)

        self.loop.run_until_complete(iterations())

    def close(self) -> None:
        """Cancel the tasks still pending, let them finish, close the loop."""
        pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.close()


class Blocking(Generic[A]):
    """An async queue seen as a threaded one: each method call runs to completion on ``runner``.

    A coroutine method (``send``, ``receive``, the batches) is awaited; a plain one is called
    inside the loop too (the queue is bound to its loop and is used from it only). Arguments
    that are facades are unwrapped (a ``start_redrive`` target is the async queue itself).
    ``__class__`` answers the threaded class of the same kind (``impl.Queue`` or
    ``impl.FifoQueue``): the callers written for threaded queues tell the two kinds apart by
    ``isinstance``, and that is the one thing they ask of the class.
    """

    def __init__(self, queue: A, runner: LoopRunner) -> None:
        self.queue = queue
        self.runner = runner

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return impl.FifoQueue if isinstance(self.queue, async_class(fifo=True)) else impl.Queue

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.queue, name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            args = tuple(unwrap(a) for a in args)
            kwargs = {k: unwrap(v) for k, v in kwargs.items()}
            return self.runner.run(value, *args, **kwargs)

        return call

    def __repr__(self) -> str:
        return f"Blocking({self.queue!r})"


def unwrap(value: object) -> object:
    """The async queue behind a :class:`Blocking` facade; anything else as it is."""
    return value.queue if type(value) is Blocking else value


def blocking(queue: object, runner: LoopRunner) -> impl.BaseQueue[str]:
    """``queue`` (an async queue) behind a :class:`Blocking` facade, typed as the threaded
    queue whose methods it offers to callers written for one."""
    return cast(impl.BaseQueue[str], Blocking(queue, runner))


class AioTarget(ImplTarget):
    """Runs a scenario on ``impl.AsyncQueue`` (``impl.AsyncFifoQueue``) instances on one event
    loop and one ``impl.FakeClock``: :class:`ImplTarget` with each queue behind a
    :class:`Blocking` facade, every call non-blocking (``block=False``) as there. The clock
    moves inside the loop, so a loop timer it fires sweeps at once, as a threaded queue's
    sweeper round would (the sweep after every op makes the outputs the same either way)."""

    def __init__(self, config: QueueConfig) -> None:
        self.runner = LoopRunner()
        super().__init__(config)

    def _make(self, c: QueueConfig, dead_letter: impl.BaseQueue[str] | None) -> impl.BaseQueue[str]:
        extra: dict[str, Any] = {}
        if c.retention is not None:
            extra["retention"] = c.retention
        if dead_letter is not None:
            extra["dead_letter"] = unwrap(dead_letter)
        common: dict[str, Any] = {
            "capacity": c.capacity,
            "visibility_timeout": c.visibility_timeout,
            "max_receives": c.max_receives,
            "delay": c.delay,
            "clock": self.clock,
            **extra,
        }

        def make() -> object:
            if c.fifo:
                return async_class(fifo=True)(dedup_interval=c.dedup_interval, **common)
            return async_class(fifo=False)(**common)

        return blocking(self.runner.run(make), self.runner)

    def advance(self, dt: float) -> None:
        self.runner.run(self.clock.advance, dt)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.runner.close()


def model_target(config: QueueConfig) -> ModelTarget:
    """The model target of ``config``: a system of queues with a dead-letter target, else the
    plain spec."""
    return ModelTarget(config) if config.dead_letter is None else SystemModelTarget(config)


TARGETS: Mapping[TargetName, Callable[[QueueConfig], Target]] = {
    "model": model_target,
    "impl": ImplTarget,
    "aio": AioTarget,
}


def apply(target: Target, op: Op) -> Output:
    """Perform one op on ``target`` and return its output; then every queue sweeps (see above)."""
    out: Output
    match op:
        case Invoke(name, args):
            # The registry's name is the target's method; a delivery becomes a JSON list.
            out = _json(getattr(target, name)(*args))
        case Dead():
            out = target.dead_letters()
        case New():
            target.new_queue()
            out = None
        case Use(index):
            target.use(index)
            out = None
        case Redrive(rate, to):
            out = target.redrive(rate, to)
        case RedriveCancel():
            out = target.redrive_cancel()
        case RedriveStatus():
            out = _json(target.redrive_status())
        case Aged():
            out = target.aged()
    target.sweep_all()
    return out


def _json(result: object) -> Any:
    """A target's result as JSON data: tuples (deliveries) become lists, also inside lists."""
    if isinstance(result, tuple | list):
        return [_json(x) for x in result]
    assert result is None or isinstance(result, bool | int | str), result
    return result


def run_scenario(
    scenario: Scenario | Mapping[str, Any], target: TargetName | Callable[[QueueConfig], Target]
) -> list[Output]:
    """Run one scenario from fresh queues and return the output of each op, in order.

    ``scenario`` may be a parsed :class:`Scenario` or its JSON object (validated first, raising
    ``ScenarioError``). The target's queues are closed before this returns, whatever happens.
    """
    parsed = scenario if isinstance(scenario, Scenario) else parse_scenario(scenario)
    make = TARGETS[target] if isinstance(target, str) else target
    t = make(parsed.config)
    try:
        return [apply(t, op) for op in parsed.ops]
    finally:
        t.close()
