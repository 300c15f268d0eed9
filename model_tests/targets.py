"""The two things a scenario can run on, behind one small protocol, and the op dispatch they share.

``model`` (:class:`ModelTarget`) is the pure-function spec; ``impl`` (:class:`ImplTarget`) is
``impl.Queue`` on an ``impl.FakeClock``. The harness, the differential test and the hand-written
examples all go through :func:`run_scenario`, so the only difference between the targets is the
small methods of :class:`Target`. Each method is named after the contract operation it
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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeAlias

import impl
import spec
from model_tests.scenario_format import (
    QUEUE_DEFAULT,
    Dead,
    Invoke,
    New,
    Op,
    QueueConfig,
    QueueDefault,
    Scenario,
    Use,
    parse_scenario,
)
from spec.operations import REGISTRY

#: One op's output as JSON data: a bool, a count, ``null``, ``[id, payload, attempt]``, a list
#: of ids, of deliveries or of bools.
Output: TypeAlias = bool | int | list[Any] | None

#: ``[id, payload, attempt]`` of a delivery, as a tuple.
Delivered: TypeAlias = tuple[str, str, int]

#: A delay as parsed: a time, or the queue's configured delay.
Delay: TypeAlias = float | QueueDefault
#: ``[id, payload, opts]`` of an ``enqueue_batch`` entry, parsed: ``(id, body, delay)``.
BatchEntry: TypeAlias = tuple[str, str, Delay]

TargetName: TypeAlias = Literal["model", "impl"]


class Target(Protocol):
    """One run of one scenario: a list of queues (all with the same config), a current queue and
    a shared clock that starts at 0. Receipts always name the current queue."""

    def send(self, id: str, body: str, delay: Delay) -> bool:
        """Send to the current queue; ``False`` if rejected (duplicate id or full)."""
        ...

    def send_batch(self, entries: Sequence[BatchEntry]) -> bool:
        """Send every entry or none; ``False`` if the batch is rejected."""
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

    def close(self) -> None:
        """Release whatever the run holds (threads); the target is unusable afterwards."""
        ...


class ModelTarget:
    """Runs a scenario on the spec: a list of ``spec.State`` values and a number for the clock."""

    def __init__(self, config: QueueConfig) -> None:
        self._config = spec.Config(
            capacity=config.capacity, max_receives=config.max_receives, delay=config.delay
        )
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

    def send(self, id: str, body: str, delay: Delay) -> bool:
        return self._step("send", id, body, self._delay_of(delay)) is True

    def send_batch(self, entries: Sequence[BatchEntry]) -> bool:
        batch = tuple((id, body, self._delay_of(d)) for id, body, d in entries)
        return self._step("send_batch", batch) is True

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


def _bools(results: object) -> list[bool]:
    assert isinstance(results, tuple) and all(isinstance(r, bool) for r in results)
    return list(results)


class ImplTarget:
    """Runs a scenario on ``impl.Queue`` instances sharing one ``impl.FakeClock``.

    Every call is non-blocking: a send that finds no room gives ``False`` (``impl.Full``), a
    duplicate id gives ``False`` (``impl.DuplicateIdError``), a receive that finds nothing gives
    ``None`` (``impl.Empty``).
    """

    def __init__(self, config: QueueConfig) -> None:
        self._config = config
        self.clock = impl.FakeClock()
        self.queues: list[impl.Queue[str]] = []
        self._current = 0
        self.new_queue()

    @property
    def _q(self) -> impl.Queue[str]:
        return self.queues[self._current]

    def send(self, id: str, body: str, delay: Delay) -> bool:
        try:
            self._q.send(body, id=id, delay=None if delay is QUEUE_DEFAULT else delay, block=False)
        except (impl.Full, impl.DuplicateIdError):
            return False
        return True

    def send_batch(self, entries: Sequence[BatchEntry]) -> bool:
        batch = [
            impl.Entry(body, id=id, delay=None if d is QUEUE_DEFAULT else d)
            for id, body, d in entries
        ]
        # A batch that can never be accepted is a ValueError before anything happens: an id
        # repeated inside it, or more entries than the capacity. The spec rejects both.
        never = len({e[0] for e in entries}) < len(entries) or (
            self._config.capacity is not None and len(entries) > self._config.capacity
        )
        try:
            self._q.send_batch(batch, block=False)
        except (impl.Full, impl.DuplicateIdError):
            return False
        except ValueError:
            if never:
                return False
            raise
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

    def new_queue(self) -> None:
        c = self._config
        q: impl.Queue[str] = impl.Queue(
            capacity=c.capacity,
            visibility_timeout=c.visibility_timeout,
            max_receives=c.max_receives,
            delay=c.delay,
            clock=self.clock,
        )
        self.queues.append(q)
        self._current = len(self.queues) - 1

    def use(self, index: int) -> None:
        self._current = index

    def close(self) -> None:
        for q in self.queues:
            q.close()


TARGETS: Mapping[TargetName, Callable[[QueueConfig], Target]] = {
    "model": ModelTarget,
    "impl": ImplTarget,
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
