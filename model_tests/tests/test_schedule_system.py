"""The controlled scheduler over a system of two queues (``model_tests/schedule/
explore_system.py``, programs in ``programs_system.py``): a sweeper dead-lettering from
``src`` into ``dlq`` while a redrive moves from ``dlq`` back into ``src``, and a retry racing a
redrive. On ``impl.Queue`` every schedule up to the bound ends with no deadlock, no stuck
caller, both queues' invariants, ``system_one_state`` and ``nothing_lost``, and a commit
order that ``spec.system`` explains; the opposite lock order is found as a DEADLOCK."""

from __future__ import annotations

import pytest

from impl import Queue
from model_tests.mutants import SYSTEM_MUTANTS
from model_tests.schedule.explore import forced
from model_tests.schedule.explore_system import explore_system, replay, run_system_once
from model_tests.schedule.programs_system import SYSTEM_PROGRAMS, SYSTEM_TEETH, SystemExpectation


def test_retry_vs_redrive_every_schedule_passes_on_the_real_queue() -> None:
    program = SYSTEM_PROGRAMS["retry_vs_redrive"]
    result = explore_system(program, Queue, stop=False)
    assert result.failure is None, result.failure.failure if result.failure else None
    assert result.schedules > 100  # the bound explored more than the one default schedule


def test_sweeper_vs_redrive_without_preemption_passes_on_the_real_queue() -> None:
    result = explore_system(SYSTEM_PROGRAMS["sweeper_vs_redrive"], Queue, 0, stop=False)
    assert result.failure is None, result.failure.failure if result.failure else None


@pytest.mark.slow
def test_sweeper_vs_redrive_every_schedule_passes_on_the_real_queue() -> None:
    """Bound 1 (every schedule with one preemption: thousands, about a minute)."""
    result = explore_system(SYSTEM_PROGRAMS["sweeper_vs_redrive"], Queue, stop=False)
    assert result.failure is None, result.failure.failure if result.failure else None


@pytest.mark.parametrize("e", SYSTEM_TEETH, ids=lambda e: e.mutant)
def test_schedule_finds_every_system_concurrency_mutant(e: SystemExpectation) -> None:
    program = SYSTEM_PROGRAMS[e.program]
    found = explore_system(program, SYSTEM_MUTANTS[e.mutant])
    assert found.failure is not None and found.failure.failure is not None
    assert found.failure.failure.kind == e.kind, found.failure.failure
    assert found.failure.preemptions <= program.bound
    # The schedule replays: the same failure again from its choices alone.
    again = run_system_once(program, SYSTEM_MUTANTS[e.mutant], forced(found.failure.choices))
    assert again.failure is not None and again.failure.kind == e.kind
    # And on the real queue that schedule (a prefix of choices) ends well.
    real = run_system_once(program, Queue, forced([]))
    assert real.failure is None, real.failure


def test_the_commit_replay_rejects_a_run_whose_results_spec_system_does_not_give() -> None:
    """The NOT LINEARIZABLE check can fail: a run's commits with a redrive's new id changed
    (as a redrive that kept the old id would record) are refused by ``spec.system``."""
    program = SYSTEM_PROGRAMS["retry_vs_redrive"]
    run = run_system_once(program, Queue, forced([]))
    assert run.failure is None
    redrives = [i for i, (_, step) in enumerate(run.commits) if step[0] == "redrive"]
    assert redrives, run.commits
    q, (action, args, _, now) = run.commits[redrives[0]]
    doctored = list(run.commits)
    doctored[redrives[0]] = (q, (action, args, args[1], now))  # the old id kept
    assert replay(program, run.commits, run.returns) is None
    reason = replay(program, doctored, run.returns)
    assert reason is not None and "redrive" in reason, reason
