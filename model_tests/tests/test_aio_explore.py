"""The asyncio explorer (``model_tests/aio``) on the real ``impl.AsyncQueue`` and on the two
teaching mutants: ``pytest -k aio_explore``.

- ``impl.AsyncQueue`` passes every program with every order of the event loop explored up to
  the program's preemption bound (cancellations, clock steps and loop timers included);
- each mutant is found, by the check ``programs.TEETH`` names, with its minimal schedule: no
  preemption, one cancellation, and the same program without cancellations finds nothing (the
  cancel is what it takes); its replay string re-runs the same failing schedule;
- a receive that polls instead of waiting is reported as a livelock, never hangs; replay
  strings round-trip; the command line prints the table and refuses unknown names.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

import impl

if not hasattr(impl, "AsyncQueue"):
    pytest.skip("impl has no asyncio driver yet", allow_module_level=True)

from model_tests.aio.__main__ import main
from model_tests.aio.explore import decode, encode, explore, forced, queue_classes, run_once
from model_tests.aio.programs import PROGRAMS, TEETH, Expectation, Program
from model_tests.aio.report import interleaving

CLASSES = queue_classes()


def _real(program: Program) -> type[Any]:
    return CLASSES["AsyncFifoQueue" if program.fifo else "AsyncQueue"]


@pytest.mark.parametrize("program", list(PROGRAMS.values()), ids=lambda p: p.name)
def test_aio_explore_real_queue_passes_every_schedule_up_to_the_bound(program: Program) -> None:
    result = explore(program, _real(program), stop=False)
    assert result.failure is None, interleaving(result.failure)
    assert result.complete and result.levels[-1].bound <= program.bound
    assert result.schedules > 1


@pytest.mark.slow
@pytest.mark.parametrize("program", list(PROGRAMS.values()), ids=lambda p: p.name)
def test_aio_explore_real_queue_passes_one_preemption_more(program: Program) -> None:
    result = explore(program, _real(program), program.bound + 1, stop=False)
    assert result.failure is None, interleaving(result.failure)


@pytest.mark.parametrize("e", TEETH, ids=lambda e: e.mutant)
def test_aio_explore_finds_each_mutant_with_its_minimal_schedule(e: Expectation) -> None:
    program = PROGRAMS[e.program]
    result = explore(program, CLASSES[e.mutant], 3)
    run = result.failure
    assert run is not None and run.failure is not None, f"{e.mutant} survived {e.program}"
    assert run.failure.kind == e.kind, interleaving(run)
    assert (run.preemptions, run.cancels) == (e.preemptions, e.cancels), interleaving(run)
    # Fewest preemptions first: no level below the one that failed had a failure.
    assert result.levels[-1].bound == run.preemptions
    # The cancellation is what it takes: without one, every order up to the bound passes.
    calm = explore(replace(program, cancels=0), CLASSES[e.mutant], program.bound, stop=False)
    assert calm.failure is None, interleaving(calm.failure)
    # The replay string re-runs exactly that schedule, to the same failure.
    name, mutant, choices = decode(encode(program, e.mutant, run.choices))
    again = run_once(PROGRAMS[name], CLASSES[mutant], forced(choices))
    assert again.failure == run.failure
    assert again.steps == run.steps


def test_aio_explore_the_mutants_pass_where_the_real_queue_passes_without_a_cancel() -> None:
    # The seams they override are used only by a cancelled waiter (NoPassOn) or change only who
    # performs the delivery (Handoff): on a program without cancellations both are correct.
    program = replace(PROGRAMS["cancelled_sender"], cancels=0)
    for e in TEETH:
        result = explore(program, CLASSES[e.mutant], 0, stop=False)
        assert result.failure is None, interleaving(result.failure)


_REAL: type[Any] = CLASSES["AsyncQueue"]


class PollingAsyncQueue(_REAL):  # type: ignore[misc]
    """A wait that yields to the loop and comes straight back (a poll, not a wait)."""

    async def _wait(self, cond: Any, deadline: float | None) -> Any:
        await asyncio.sleep(0)


def test_aio_explore_reports_a_polling_receive_as_a_livelock_and_does_not_hang() -> None:
    program = Program("poll", "A receive on an empty queue.", tasks=(("R", (("receive",),)),))
    run = run_once(program, PollingAsyncQueue, forced([]), max_steps=100)
    assert run.failure is not None and run.failure.kind == "LIVELOCK", run.failure


def test_aio_explore_replay_strings_round_trip_and_refuse_what_does_not_fit() -> None:
    program = PROGRAMS["two_receivers"]
    choices = [("r", 0)] * 3 + [("c", 1), ("r", 2), ("a", 0), ("e", 0)]
    text = encode(program, "AsyncQueue", choices)
    assert text == "two_receivers:AsyncQueue:0*3.c1.2.a.e"
    assert decode(text) == ("two_receivers", "AsyncQueue", choices)
    with pytest.raises(ValueError, match="program:queue:choices"):
        decode("nonsense")
    with pytest.raises(ValueError, match="bad choice"):
        decode("two_receivers:AsyncQueue:0.x")
    with pytest.raises(ValueError, match="does not replay"):
        run_once(program, CLASSES["AsyncQueue"], forced([("r", 7)]))


def test_aio_explore_cli_finds_a_mutant_and_replays_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--mutant", "NoPassOnAsyncQueue"]) == 1
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("replay: "))
    assert "NoSleepingWaiter" in out
    assert main(["--replay", line.removeprefix("replay: ")]) == 1
    assert "NoSleepingWaiter" in capsys.readouterr().out
    assert main(["--program", "receive_timeout", "--bound", "0"]) == 0


def test_aio_explore_cli_refuses_unknown_names(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--mutant", "NoSuchQueue"])
    assert exc.value.code == 2
    assert "--mutant: no queue class 'NoSuchQueue'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--bound", "-1"])
    assert "--bound must be >= 0" in capsys.readouterr().err
