"""Lockstep model-based test of the asyncio driver: ``impl.AsyncQueue`` and
``impl.AsyncFifoQueue`` against the spec (:mod:`model_tests.lockstep_aio`).

The machines are the threaded ones' (every rule, invariant and whole-state comparison) with
each queue behind a facade that runs each call to completion on one event loop, plus the two
rules only a driver with waiters has: receivers woken by a send (the first one, or after a
cancelled woken first one passes its wakeup on, the second) and a cancelled waiting receive.
They run under the ``lockstep`` settings profile with fewer examples than the threaded
machines' (the rules are the same; ``LOCKSTEP_EXAMPLES`` still sets a longer hunt). Below, the
async-only rules are also run step by step on hand-picked states, so that each of their
outcomes is known to be reached.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from unittest import mock

import pytest
from hypothesis import settings

from model_tests import lockstep, lockstep_aio, lockstep_fifo
from model_tests.lockstep import LockstepReceipt
from model_tests.lockstep_aio import AioFifoMachine, AioMachine
from model_tests.targets import async_class

pytestmark = pytest.mark.skipif(
    async_class(fifo=False) is None, reason="impl has no asyncio driver"
)

#: The threaded machines run the same rules 200 times; here fewer keeps the default run short.
AIO_LOCKSTEP = settings(
    settings.get_profile("lockstep"),
    max_examples=int(os.environ.get("LOCKSTEP_EXAMPLES", "60")),
)

AioMachine.TestCase.settings = AIO_LOCKSTEP
AioFifoMachine.TestCase.settings = AIO_LOCKSTEP
TestLockstepAio = AioMachine.TestCase
TestLockstepAioFifo = AioFifoMachine.TestCase


class _Draws:
    """Stands in for a rule's ``st.data()``: its draws return these values, in order."""

    def __init__(self, *values: object) -> None:
        self._values = list(values)

    def draw(self, strategy: object, label: object = None) -> object:
        return self._values.pop(0)


@pytest.fixture
def machine() -> Iterator[AioMachine]:
    with (
        mock.patch.object(lockstep, "event", lambda *a, **k: None),
        mock.patch.object(lockstep_aio, "event", lambda *a, **k: None),
    ):
        m = AioMachine()
        m.create_queues(capacity=None, vt=2.0, max_receives=None, delay=0.0)
        try:
            yield m
        finally:
            m.teardown()


def _check(m: AioMachine) -> None:
    m.observable_state_matches_spec()
    m.OneState()
    m.OneLiveReceipt()
    m.AttemptsCount()


def _draws(pair: int, id: str | None, body: str) -> _Draws:
    """The draws of ``receive_woken_by_send``: the waiting pair, then the send's id and body."""
    return _Draws(pair, id, body)


@pytest.mark.parametrize("waiters", [1, 2])
def test_a_waiting_receiver_is_woken_by_a_send_and_receives_it(
    machine: AioMachine, waiters: int
) -> None:
    got = machine.receive_woken_by_send(
        data=_draws(0, "a", "x"), waiters=waiters, cancel_woken=False
    )
    tickets = list(got.values)
    assert [(t.impl.id, t.impl.attempt) for t in tickets] == [("a", 1)]
    assert isinstance(tickets[0], LockstepReceipt)
    _check(machine)
    # The delivery is in flight with the receipt the waiter was given: a delete acts.
    machine.delete(ticket=tickets[0], other=False)
    _check(machine)
    assert "a" in machine.queues[0].snapshot().done


def test_a_cancelled_woken_waiter_passes_its_wakeup_on(machine: AioMachine) -> None:
    got = machine.receive_woken_by_send(data=_draws(1, "b", "y"), waiters=2, cancel_woken=True)
    tickets = list(got.values)
    assert [(t.impl.id, t.aim) for t in tickets] == [("b", 1)]
    _check(machine)


def test_a_lone_cancelled_woken_waiter_leaves_the_message_visible(machine: AioMachine) -> None:
    got = machine.receive_woken_by_send(data=_draws(0, "c", "z"), waiters=1, cancel_woken=True)
    assert list(got.values) == []
    assert [m.id for m in machine.queues[0].snapshot().visible] == ["c"]
    _check(machine)


def test_a_send_that_is_refused_wakes_nobody(machine: AioMachine) -> None:
    machine.send(pair=0, id="a", body="x", delay=0.0)
    machine.receive(data=_Draws(1, 0), vt="default")
    # Nothing deliverable on queue 0 now; the same id again is a duplicate: refused.
    got = machine.receive_woken_by_send(data=_draws(0, "a", "x"), waiters=2, cancel_woken=False)
    assert list(got.values) == []
    _check(machine)


def test_a_cancelled_waiting_receive_changes_nothing(machine: AioMachine) -> None:
    machine.send(pair=1, id="a", body="x", delay=2.0)  # delayed: nothing deliverable yet
    before = machine.queues[1].snapshot()
    machine.receive_cancelled(data=_Draws(1))
    assert machine.queues[1].snapshot() == before
    _check(machine)


def test_a_quiet_tick_leaves_the_loop_timer_unfired_until_the_sweep(machine: AioMachine) -> None:
    """The window between a deadline and its sweep, on the asyncio driver: the delivery's loop
    timer is armed, the quiet tick passes its time, and only the sweep releases it."""
    machine.send(pair=0, id="a", body="x", delay=0.0)
    machine.receive(data=_Draws(1, 0), vt="default")
    machine.tick(data=_Draws("exact", 2.0))
    assert [m.id for m in machine.queues[0].snapshot().in_flight] == ["a"]
    _check(machine)
    machine.sweep()
    assert [m.id for m in machine.queues[0].snapshot().visible] == ["a"]
    _check(machine)


def test_a_waking_advance_fires_the_loop_timer(machine: AioMachine) -> None:
    """A waking advance runs the loop timer's sweep round itself, before the machine sweeps:
    the clock alone releases the delivery."""
    machine.send(pair=0, id="a", body="x", delay=0.0)
    machine.receive(data=_Draws(1, 0), vt="default")
    machine.clock.advance(2.0)
    machine.now += 2.0
    assert [m.id for m in machine.queues[0].snapshot().visible] == ["a"]


def test_the_fifo_machine_wakes_a_waiter_with_a_group_send() -> None:
    with (
        mock.patch.object(lockstep, "event", lambda *a, **k: None),
        mock.patch.object(lockstep_aio, "event", lambda *a, **k: None),
        mock.patch.object(lockstep_fifo, "event", lambda *a, **k: None),
    ):
        m = AioFifoMachine()
        m.create_queues(capacity=None, vt=2.0, max_receives=None, delay=0.0, dedup_interval=1.0)
        try:
            got = m.receive_woken_by_send(
                data=_Draws(0, "a", "x", "g", None), waiters=2, cancel_woken=True
            )
            assert [t.impl.id for t in got.values] == ["a"]
            m.observable_state_matches_spec()
            m.GroupOrder()
            # Group g is locked by a's delivery: a second message of g wakes nobody.
            got = m.receive_woken_by_send(
                data=_Draws(0, "b", "y", "g", None), waiters=1, cancel_woken=False
            )
            assert list(got.values) == []
            m.observable_state_matches_spec()
        finally:
            m.teardown()


def test_the_machines_have_the_threaded_machines_rules_and_two_more() -> None:
    def rules(cls: type) -> set[str]:
        return {n for n in dir(cls) if hasattr(getattr(cls, n), "hypothesis_stateful_rule")}

    assert rules(AioMachine) - rules(lockstep.QueueMachine) == {
        "receive_woken_by_send",
        "receive_cancelled",
    }
    assert rules(lockstep.QueueMachine) <= rules(AioMachine)
