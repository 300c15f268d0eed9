"""The fault matrix of moves (``model_tests.fault_matrix.check_move_faults``, issue 25): a
failing clock reading or trace sink (of either queue) at every point of a move, a dying
release into the dead-letter queue or a redrive back out of it, standard and FIFO, leaves
both queues as they were, ``system_one_state`` and ``nothing_lost`` holding; the call made
again then does what the fault-free call does."""

from __future__ import annotations

import pytest

from impl import FifoQueue, Queue
from model_tests.fault_matrix import MOVES, check_move_faults


@pytest.mark.parametrize("op", MOVES)
def test_a_fault_during_a_move_leaves_both_queues_as_they_were(op: str) -> None:
    counts = check_move_faults(Queue, op)
    # The move reads the clock or calls a sink at least once: the matrix injected something.
    assert sum(counts.values()) >= 1, counts


@pytest.mark.parametrize("op", MOVES)
def test_a_fault_during_a_fifo_move_leaves_both_queues_as_they_were(op: str) -> None:
    counts = check_move_faults(FifoQueue, op, fifo=True)
    assert sum(counts.values()) >= 1, counts
