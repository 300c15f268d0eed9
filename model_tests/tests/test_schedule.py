"""The controlled scheduler (``model_tests/schedule``) on the real queue and on every
concurrency mutant: ``pytest -k schedule``.

- every concurrency mutant of the catalogue (and the interrupt mutant only the scheduler can
  express) is found, by the check named in ``programs.TEETH``, with the fewest preemptions,
  and its replay string re-runs the same failing schedule;
- ``impl.Queue`` and ``impl.FifoQueue`` pass the same programs with every schedule explored up
  to each program's bound (the larger ``mixed`` program: PCT here, exhaustively under
  ``slow``);
- a busy-spin is reported as a livelock, never hangs; the seam hands out the threading
  module's primitives by default; the thread-level events have the agreed shape.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from impl import FakeClock, Queue
from impl.threaded import Conditions
from model_tests.schedule.__main__ import main
from model_tests.schedule.controlled import CLock, ControlledClock, Scheduler
from model_tests.schedule.events import KINDS
from model_tests.schedule.explore import (
    decode,
    encode,
    explore,
    forced,
    pct,
    queue_classes,
    run_once,
)
from model_tests.schedule.programs import PROGRAMS, TEETH, Expectation, Program
from model_tests.schedule.report import interleaving

CLASSES = queue_classes()

#: The fewest preemptions each mutant's failing schedule needs (measured; docs/schedule.md).
MIN_PREEMPTIONS = {
    "PlainBlockingQueue": 0,
    "SplitReceiveQueue": 1,
    "DeleteByIdQueue": 0,
    "ForgetfulSweeperQueue": 0,
    "OnlyWhenEmptySweeperQueue": 0,
    "SplitReceiveBatchQueue": 1,
    "DeadlineFirstSendQueue": 0,
    "UnsweptIsDeadQueue": 0,
    "SilentUnlockFifoQueue": 0,
    "UnpassedInterruptQueue": 0,
    "OneWakeSendBatchQueue": 0,
}


def _real(program: Program) -> type[Queue[Any]]:
    return CLASSES["FifoQueue" if program.fifo else "Queue"]


@pytest.mark.parametrize("e", TEETH, ids=lambda e: e.mutant)
def test_schedule_finds_every_concurrency_mutant(e: Expectation) -> None:
    program = PROGRAMS[e.program]
    result = explore(program, CLASSES[e.mutant], 3)
    run = result.failure
    assert run is not None and run.failure is not None, f"{e.mutant} survived {e.program}"
    assert run.failure.kind == e.kind, interleaving(run)
    assert run.preemptions == MIN_PREEMPTIONS[e.mutant], interleaving(run)
    # Fewest first: no level below the one that failed had a failure.
    assert result.levels[-1].bound == run.preemptions
    # The replay string re-runs exactly that schedule, to the same failure.
    name, mutant, choices = decode(encode(program, e.mutant, run.choices))
    again = run_once(PROGRAMS[name], CLASSES[mutant], forced(choices))
    assert again.failure == run.failure
    assert [(t, p.kind, p.where) for t, p in again.steps] == [
        (t, p.kind, p.where) for t, p in run.steps
    ]


@pytest.mark.parametrize(
    "program", [p for p in PROGRAMS.values() if p.name != "mixed"], ids=lambda p: p.name
)
def test_schedule_real_queue_passes_every_schedule_up_to_the_bound(program: Program) -> None:
    result = explore(program, _real(program), stop=False)
    assert result.failure is None, interleaving(result.failure)
    assert result.complete and result.levels[-1].bound <= program.bound
    assert result.schedules > 1


def test_schedule_real_queue_passes_pct_on_the_larger_program() -> None:
    result = pct(PROGRAMS["mixed"], Queue, 150, seed=17)
    assert result.failure is None, interleaving(result.failure)
    assert result.schedules == 150


def test_schedule_pct_finds_a_race_and_replays_it() -> None:
    program = PROGRAMS["receive_race"]
    result = pct(program, CLASSES["SplitReceiveQueue"], 300, seed=1)
    assert result.failure is not None
    text = encode(program, "SplitReceiveQueue", result.failure.choices)
    assert main(["--replay", text]) == 1


@pytest.mark.slow
def test_schedule_real_queue_passes_the_larger_program_exhaustively() -> None:
    result = explore(PROGRAMS["mixed"], Queue, 0, stop=False)
    assert result.failure is None, interleaving(result.failure)
    assert result.schedules > 5000


@pytest.mark.slow
@pytest.mark.parametrize(
    "program", [p for p in PROGRAMS.values() if p.name != "mixed"], ids=lambda p: p.name
)
def test_schedule_real_queue_passes_one_preemption_more(program: Program) -> None:
    result = explore(program, _real(program), program.bound + 1, stop=False)
    assert result.failure is None, interleaving(result.failure)


class SpinningConditions(Conditions):
    """A wait that busy-waits (lets the lock go and takes it back) instead of waiting."""

    def wait(self, cond: threading.Condition, deadline: float | None) -> None:
        self.mutex.release()
        self.mutex.acquire()


class SpinningQueue(Queue[Any]):
    """A receive that busy-waits instead of waiting."""

    conditions_class = SpinningConditions


def test_schedule_reports_a_busy_spin_as_a_livelock_and_does_not_hang() -> None:
    program = Program("spin", "A receive on an empty queue.", threads=(("R", (("receive",),)),))
    run = run_once(program, SpinningQueue, forced([]))
    assert run.failure is not None and run.failure.kind == "LIVELOCK", run.failure


def test_schedule_replay_strings_round_trip() -> None:
    program = PROGRAMS["timed_send"]
    choices = [(0, False)] * 4 + [(1, False), (2, True), (2, True), (0, False)]
    text = encode(program, "Queue", choices)
    assert text == "timed_send:Queue:0*4.1.2!*2.0"
    assert decode(text) == ("timed_send", "Queue", choices)
    with pytest.raises(ValueError, match="program:mutant:choices"):
        decode("nonsense")


def test_schedule_replay_refuses_a_schedule_that_does_not_fit() -> None:
    with pytest.raises(ValueError, match="does not replay"):
        run_once(PROGRAMS["receive_race"], Queue, forced([(7, False)]))


def test_schedule_seam_gives_threading_primitives_by_default_and_controlled_ones_on_request() -> (
    None
):
    plain = Queue[str](clock=FakeClock())
    assert isinstance(plain.mutex, type(threading.RLock()))
    assert isinstance(plain.not_empty, threading.Condition)
    controlled = Queue[str](clock=ControlledClock(Scheduler()))
    assert isinstance(controlled.mutex, CLock)
    assert [c.name for c in controlled.mutex.conds] == ["not_empty", "not_full", "new_deadline"]


def test_schedule_events_of_an_expiry_have_the_agreed_shape() -> None:
    run = run_once(PROGRAMS["expiry_wakeup"], Queue, forced([]))
    assert run.failure is None
    kinds = [e.kind for e in run.events]
    assert set(kinds) <= KINDS
    for kind in ("call", "acquire", "release", "wait", "wake", "notify", "step", "return", "tick"):
        assert kind in kinds, kind
    # The redelivery: the sweeper's expire step, its notify, and R's wake and receive step.
    steps = [(e.thread, e.detail[0]) for e in run.events if e.kind == "step"]
    assert ("sweeper", "expire") in steps and steps[-1] == ("R", "receive")


def test_schedule_all_points_explores_more_and_finds_the_same() -> None:
    program = PROGRAMS["expiry_wakeup"]
    reduced = explore(program, Queue, 1, stop=False)
    full = explore(program, Queue, 1, stop=False, all_points=True)
    assert reduced.failure is None and full.failure is None
    assert full.schedules > reduced.schedules


def test_schedule_cli_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--program", "expiry_wakeup", "--mutant", "ForgetfulSweeperQueue"]) == 1
    out = capsys.readouterr().out
    assert "LOST WAKEUP" in out and "replay: expiry_wakeup:ForgetfulSweeperQueue:" in out


def test_schedule_cli_mutant_alone_runs_the_programs_that_find_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--mutant", "OnlyWhenEmptySweeperQueue"]) == 1
    out = capsys.readouterr().out
    assert "LOST WAKEUP" in out and "replay: expiry_two_consumers:OnlyWhenEmptySweeperQueue:" in out
    # The real queue passes the same way of asking: every program, no failure.
    assert main(["--mutant", "FifoQueue", "--preemptions", "0"]) == 0


def test_schedule_cli_rejects_an_unknown_queue_class(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--mutant", "NoSuchQueue"])
    assert exc.value.code == 2
    assert "--mutant: no queue class 'NoSuchQueue'" in capsys.readouterr().err
