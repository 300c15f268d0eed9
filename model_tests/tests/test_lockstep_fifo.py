"""Lockstep model-based test of FIFO queues: ``impl.FifoQueue`` and the spec with
``Config(fifo=True)`` driven by the same random operations (contract section 2b).

The machine is :class:`model_tests.lockstep_fifo.FifoMachine` (its docstring says what each
rule and invariant checks); this module runs it under the ``lockstep`` settings profile.
"""

from __future__ import annotations

from hypothesis import settings

from model_tests.lockstep_fifo import FifoMachine

FifoMachine.TestCase.settings = settings.get_profile("lockstep")
TestLockstepFifo = FifoMachine.TestCase
