"""The lockstep machine over a system of two queues (``model_tests.lockstep_system``): impl
and ``spec.system`` in lockstep, standard and FIFO, under the ``lockstep_system`` profile
(``LOCKSTEP_EXAMPLES=2000`` for a longer hunt)."""

from __future__ import annotations

from hypothesis import settings

from model_tests.lockstep_system import FifoSystemMachine, SystemMachine

SystemMachine.TestCase.settings = settings.get_profile("lockstep_system")
FifoSystemMachine.TestCase.settings = settings.get_profile("lockstep_system")
TestSystemLockstep = SystemMachine.TestCase
TestFifoSystemLockstep = FifoSystemMachine.TestCase
