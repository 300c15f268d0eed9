"""Lockstep model-based test: ``impl.Queue`` and the spec driven by the same random operations
(and the same for ``impl.Queue`` on the reference machine, ``TestLockstepReference``).

The machine is :class:`model_tests.lockstep.QueueMachine` (its module docstring says how it keeps
two (``impl.Queue``, ``spec.State``) pairs in lockstep on one fake clock, and why the run stays
deterministic although each queue has a sweeper thread). This module runs it under the
``lockstep`` settings profile (``LOCKSTEP_EXAMPLES=5000`` for a longer hunt), and checks that
its ``tick`` opens the window between a deadline and its sweep: the machine generates late
deletes that win, and a late use right on the deadline wins every time.
"""

from __future__ import annotations

from collections import Counter
from typing import Final
from unittest import mock

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import invariant, run_state_machine_as_test

import impl
from impl.machine import Machine
from model_tests import lockstep
from model_tests.lockstep import LockstepReceipt, QueueMachine

QueueMachine.TestCase.settings = settings.get_profile("lockstep")
TestLockstep = QueueMachine.TestCase


class ReferenceQueue(impl.Queue[str]):
    """``impl.Queue`` on the reference machine (``impl.machine.Machine``), which checks itself
    after every step: the lockstep run below holds it to the spec too, so the queue's
    ``FastMachine`` and the reference are each the spec's (and each other's,
    ``test_fast_machine.py``)."""

    machine_class = Machine


class ReferenceMachine(QueueMachine):
    queue_class = ReferenceQueue


ReferenceMachine.TestCase.settings = settings.get_profile("lockstep")
TestLockstepReference = ReferenceMachine.TestCase


# -- the window between a deadline and its sweep ---------------------------------------------

#: A derandomized search, without shrinking: the same on every run, and seconds long (the
#: first example that shows the fact ends it; the bound is far above what that takes).
WINDOW_SEARCH: Final = settings(
    max_examples=2000,
    stateful_step_count=50,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
)


class LateDeleteWon(Exception):
    """Raised by :class:`LateDeleteFinder` once a delete has acted with a late receipt."""


class LateDeleteFinder(QueueMachine):
    """The machine, stopping as soon as a delete acts with a receipt used in the window."""

    @invariant()
    def no_late_delete_yet(self) -> None:
        if self.late["delete: own, acted"]:
            raise LateDeleteWon


def test_the_machine_generates_late_deletes_that_win() -> None:
    """``tick`` opens the window and the machine itself then deletes with a still-live receipt
    in it, which acts; the impl equals the spec at every step before that, although each
    queue's sweeper thread runs (a round of it after the tick would release the delivery).
    (Late retries and visibility changes are generated too, more rarely: the statistics show
    them, ``--hypothesis-show-statistics``.)"""
    with pytest.raises(LateDeleteWon):
        run_state_machine_as_test(LateDeleteFinder, settings=WINDOW_SEARCH)


class _Draws:
    """Stands in for a rule's ``st.data()``: its draws return these values, in order."""

    def __init__(self, *values: object) -> None:
        self._values = list(values)

    def draw(self, strategy: object, label: object = None) -> object:
        return self._values.pop(0)


#: A late use of the receipt, as (rule, arguments besides the receipt).
LATE_USES: Final = {
    "delete": {},
    "retry": {},
    "change_visibility": {"timeout": 2.0},
}


def _late_use(m: QueueMachine, name: str) -> None:
    """send a, receive it (deadline 1.0), tick exactly onto the deadline, then ``name`` with
    its receipt; the whole observable state is compared after each step."""
    m.create_queues(capacity=None, vt=1.0, max_receives=None)
    m.send(pair=0, id="a", body="x")
    ticket = m.receive(data=_Draws(1, 0), vt="default")
    assert isinstance(ticket, LockstepReceipt)
    m.tick(data=_Draws("exact", 1.0))
    m.observable_state_matches_spec()
    getattr(m, name)(ticket=ticket, other=False, **LATE_USES[name])
    m.observable_state_matches_spec()
    assert m.late == Counter({f"{name}: own, acted": 1})


@pytest.mark.parametrize("name", list(LATE_USES))
def test_a_late_use_after_a_tick_onto_the_deadline_wins_every_time(name: str) -> None:
    """The sweeper thread is started by the receive just before the tick: without
    ``_settle_sweepers`` its first round may run after the tick and release ``a`` (it does,
    most times), and the late use would be refused by the queue."""
    with mock.patch.object(lockstep, "event", lambda *a, **k: None):
        for _ in range(100):
            m = QueueMachine()
            try:
                _late_use(m, name)
            finally:
                m.teardown()
