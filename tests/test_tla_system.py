"""The system-of-queues models of issue 25, checked by TLC: ``tla/QueueSystem.tla`` (the dead-letter
move, redrive and retention across queues) and ``tla/ThreadedQueueSystem.tla`` (one lock per
queue).

- The configs declare their outcomes: the two correct models pass, the two teaching models fail
  (the two-step move violates ``NothingLost``; opposite lock orders deadlock).
- The teaching models' counterexamples are the ones docs/tla.md walks through: the retry that
  kills ``a`` in its source while its target does not have it; the redrive and the source's
  sweeper each holding one lock and waiting for the other's.
- The checks are not vacuous: each witness invariant of ``QueueSystem.tla`` (a move in, an age
  out after a move, an age out in flight, a redrive, a second death) is false in some reachable
  state of ``QueueSystem.cfg``'s bounds; and mutants of the model fail by name: retention counted
  from the move (``RetentionKeepsEnqueueTime``), a redrive that keeps the attempt
  (``RefinesQueue``: the arrival is no ``Send`` of ``Queue.tla``), a sweeper round that takes only
  its own lock (``LockedWrites``).
- The correct models' full runs (7-17 s each on a loaded machine) are marked ``slow``; the
  others take 2-3 s each.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tla.__main__ import main
from tla.counterexample import parse_trace
from tla.models import TLA_DIR, Model, discover
from tla.tlc import Result, run_tlc
from tla.tlc import available as tlc_available
from tla.values import Function, ModelValue, Record

needs_java = pytest.mark.skipif(not tlc_available(), reason="TLC needs Java and tla2tools.jar")

SYSTEM_MODELS = {
    "QueueSystem": "ok",
    "QueueSystemTwoStep": "violation NothingLost",
    "ThreadedQueueSystem": "ok",
    "ThreadedQueueSystemOppositeOrder": "violation Deadlock",
}


def models() -> dict[str, Model]:
    return {m.name: m for m in discover() if m.name in SYSTEM_MODELS}


def run(model: Model) -> Result:
    return run_tlc(model.spec, model.cfg, check_deadlock=model.check_deadlock, timeout=600)


def copy_modules(tmp_path: Path, *names: str) -> None:
    for name in names:
        shutil.copy(TLA_DIR / f"{name}.tla", tmp_path / f"{name}.tla")


def mutant(tmp_path: Path, module: str, correct: str, wrong: str, cfg: str) -> Result:
    """TLC on ``module`` with ``correct`` replaced by ``wrong``, with the config ``cfg``."""
    copy_modules(tmp_path, "Queue", "QueueSystem", "ThreadedQueueSystem")
    text = (TLA_DIR / f"{module}.tla").read_text()
    assert text.count(correct) == 1, f"the mutant's anchor is not in {module}.tla once"
    (tmp_path / f"{module}.tla").write_text(text.replace(correct, wrong))
    shutil.copy(TLA_DIR / f"{cfg}.cfg", tmp_path / "Mutant.cfg")
    model = models()[cfg]
    return run_tlc(
        tmp_path / f"{module}.tla", tmp_path / "Mutant.cfg", check_deadlock=model.check_deadlock
    )


def mv(name: str) -> ModelValue:
    return ModelValue(name)


# -- discovery ----------------------------------------------------------------------------------


def test_the_system_models_declare_their_expected_outcomes() -> None:
    found = models()
    assert {n: m.expected for n, m in found.items()} == SYSTEM_MODELS
    assert found["QueueSystemTwoStep"].spec == TLA_DIR / "QueueSystem.tla"
    assert found["ThreadedQueueSystemOppositeOrder"].spec == TLA_DIR / "ThreadedQueueSystem.tla"
    # TLC's own deadlock check is what says "deadlock free" for the threaded system.
    assert found["ThreadedQueueSystem"].check_deadlock
    assert found["ThreadedQueueSystemOppositeOrder"].check_deadlock
    # The teaching models differ from their correct twin in the one constant they are about.
    assert 'Move = "two_step"' in found["QueueSystemTwoStep"].cfg.read_text()
    assert 'Move = "atomic"' in found["QueueSystem"].cfg.read_text()
    opposite = found["ThreadedQueueSystemOppositeOrder"].cfg.read_text()
    assert 'LockOrder = "opposite"' in opposite
    assert 'LockOrder = "creation"' in found["ThreadedQueueSystem"].cfg.read_text()


# -- the correct models -------------------------------------------------------------------------


@needs_java
@pytest.mark.slow
@pytest.mark.parametrize("name", ["QueueSystem", "ThreadedQueueSystem"])
def test_the_correct_system_models_pass(name: str) -> None:
    result = run(models()[name])
    assert result.outcome == "ok", result.detail
    assert result.distinct is not None and result.distinct > 1000


# -- the teaching models and their counterexamples ----------------------------------------------


@needs_java
def test_a_move_in_two_steps_loses_the_message_between_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--model", "QueueSystemTwoStep", "--quiet"]) == 0
    assert "counterexample found, as expected" in capsys.readouterr().out
    steps = parse_trace((TLA_DIR / "_runs" / "QueueSystemTwoStep.trace").read_text())
    assert [s.action for s in steps] == ["Initial", "Send", "Receive", "Retry"]
    last = steps[-1].state
    a = mv("a")
    assert last["transit"] == frozenset({(1, 2, a)})  # the move: into 1, from 2, of a
    data = last["data"]
    assert isinstance(data, tuple)
    dlq, source = data
    assert isinstance(dlq, Record) and isinstance(source, Record)
    assert dlq["msgs"] == ()  # the target does not have a ...
    msgs = source["msgs"]
    assert isinstance(msgs, Function)
    rec = msgs[a]
    assert isinstance(rec, Record) and rec["status"] == "DEAD"  # ... and the source let it go
    assert source["dead"] == (a,)


@needs_java
def test_opposite_lock_orders_deadlock_the_redrive_and_the_sweeper(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--model", "ThreadedQueueSystemOppositeOrder", "--quiet"]) == 0
    assert "counterexample found, as expected" in capsys.readouterr().out
    text = (TLA_DIR / "_runs" / "ThreadedQueueSystemOppositeOrder.trace").read_text()
    assert text.startswith("Error: Deadlock reached.")
    steps = parse_trace(text)
    last = steps[-1].state
    redrive, sweeper = ("redrive", 1), ("sweeper", 2)
    # The redrive holds the DLQ's lock (1), the source's sweeper the source's (2) ...
    assert last["owner"] == (redrive, sweeper)
    want = last["want"]
    assert isinstance(want, Function)
    # ... and each waits for the other's.
    assert want[redrive] == (2,) and want[sweeper] == (1,)
    # The steps docs/tla.md lists: the five calls, then the two lock takes.
    assert [s.action for s in steps] == [
        "Initial",
        "StartSend",
        "StartReceive",
        "StartSweep",
        "StartSweep",
        "StartRedrive",
        "Acquire",
        "Acquire",
    ]


# -- the checks are not vacuous -----------------------------------------------------------------

WITNESSES = ["NoMoveIn", "NoAgedOutAfterMove", "NoAgedOutInFlight", "NoRedrive", "NoSecondDeath"]


@needs_java
@pytest.mark.parametrize("witness", WITNESSES)
def test_each_behaviour_of_the_system_is_reached(tmp_path: Path, witness: str) -> None:
    cfg = models()["QueueSystem"].cfg.read_text()
    head, _, _ = cfg.partition("INVARIANTS")
    (tmp_path / "Witness.cfg").write_text(f"{head}INVARIANTS {witness}\n")
    result = run_tlc(TLA_DIR / "QueueSystem.tla", tmp_path / "Witness.cfg", check_deadlock=False)
    assert (result.outcome, result.detail) == ("violation", f"Invariant {witness}")


@needs_java
def test_retention_counted_from_the_move_is_caught(tmp_path: Path) -> None:
    result = mutant(
        tmp_path,
        "QueueSystem",
        "!.source = a, !.movedTo = None]",
        "!.source = a, !.movedTo = None, !.enqueuedAt = now]",
        "QueueSystem",
    )
    assert (result.outcome, result.detail) == ("violation", "Invariant RetentionKeepsEnqueueTime")


@needs_java
def test_a_redrive_that_keeps_the_attempt_is_caught(tmp_path: Path) -> None:
    result = mutant(
        tmp_path,
        "QueueSystem",
        "    IN Sent(gone, d, n, 0, t)",
        "    IN [Sent(gone, d, n, 0, t) EXCEPT ![d].msgs[n].attempt = s[q].msgs[i].attempt]",
        "QueueSystem",
    )
    assert (result.outcome, result.detail) == ("violation", "Action property RefinesQueue")


@needs_java
def test_a_sweeper_round_under_its_own_lock_only_is_caught(tmp_path: Path) -> None:
    result = mutant(
        tmp_path,
        "ThreadedQueueSystem",
        '"sweep"}            -> ReleaseLocks(o.q)',
        '"sweep"}            -> <<o.q>>',
        "ThreadedQueueSystem",
    )
    assert (result.outcome, result.detail) == ("violation", "Action property LockedWrites")
