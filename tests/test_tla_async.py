"""The asyncio shell's TLA+ model ``tla/AsyncQueue.tla``, checked by TLC.

- The models are registered with their expected outcomes: ``AsyncQueue`` passes (the contract's
  invariants, ``NothingLost``, ``HeldDeliveries``, ``NoSleepingWaiter`` and the refinement of
  ``Queue``), the two teaching models fail with the invariant they are about.
- The teaching models' counterexamples are the ones docs/tla.md walks through, step by step, and
  the copies saved in ``docs/runs/`` are what TLC prints today.
- The checks are not vacuous: a notify that gives its wakeup to a cancelled future (instead of
  skipping it) leaves a receiver asleep beside a message (``NoSleepingWaiter``), and a retry that
  re-queues at the head is no behaviour of ``Queue`` (``QueueSpec``); nor is a handoff, whose
  send also delivers.
- The correct model passes (about 20 s with one worker, so marked ``slow``).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Final

import pytest

from tla.models import TLA_DIR, Model, discover
from tla.tlc import Result, run_tlc
from tla.tlc import available as tlc_available
from tla.values import Function, ModelValue, Value, parse_state

needs_java = pytest.mark.skipif(not tlc_available(), reason="TLC needs Java and tla2tools.jar")

ROOT: Final = Path(__file__).resolve().parents[1]
#: The teaching models' counterexamples as committed (TLC's trace from its first ``Error:``).
SAVED: Final = {
    "AsyncQueueHandoff": ROOT / "docs" / "runs" / "tla-AsyncQueueHandoff.trace",
    "AsyncQueueNoPassOn": ROOT / "docs" / "runs" / "tla-AsyncQueueNoPassOn.trace",
}

_STATE = re.compile(r"^State (\d+): <(\w+)")


def async_models() -> dict[str, Model]:
    return {m.name: m for m in discover(large=True) if m.module == "AsyncQueue"}


def run(name: str) -> Result:
    m = async_models()[name]
    return run_tlc(m.spec, m.cfg, check_deadlock=m.check_deadlock, timeout=600)


def states(trace: str) -> list[tuple[str, dict[str, Value]]]:
    """A counterexample's steps: (action name, state), the first one ``Initial``."""
    out: list[tuple[str, dict[str, Value]]] = []
    block: list[str] = []
    action = ""
    for line in [*trace.splitlines(), "State 0: <End"]:
        m = _STATE.match(line)
        if m is None:
            if action and line.startswith(("/\\", " ")):
                block.append(line)
            continue
        if action:
            out.append((action, parse_state("\n".join(block))))
        action, block = m.group(2), []
    return out


def mv(name: str) -> ModelValue:
    return ModelValue(name)


def of(state: dict[str, Value], var: str, task: str) -> Value:
    """The value of the function ``var`` at the task (or id) ``task``."""
    f = state[var]
    assert isinstance(f, Function)
    return f[mv(task)]


# -- the registry -------------------------------------------------------------------------------


def test_async_models_declare_their_expected_outcomes() -> None:
    models = async_models()
    assert set(models) == {"AsyncQueue", "AsyncQueueHandoff", "AsyncQueueNoPassOn"}
    for m in models.values():
        assert m.spec == TLA_DIR / "AsyncQueue.tla"
        assert not m.large  # all three run in scripts/check
        assert m.check_deadlock  # a Cancel or a call is always possible: no end state
    assert models["AsyncQueue"].expected == "ok"
    assert models["AsyncQueueHandoff"].expected == "violation HeldDeliveries"
    assert models["AsyncQueueNoPassOn"].expected == "violation NoSleepingWaiter"
    assert 'Bug = "handoff"' in models["AsyncQueueHandoff"].cfg.read_text()
    assert 'Bug = "no_pass_on"' in models["AsyncQueueNoPassOn"].cfg.read_text()


def test_async_model_checks_the_refinement_and_every_invariant_by_name() -> None:
    text = (TLA_DIR / "AsyncQueue.tla").read_text()
    assert "Queue == INSTANCE Queue" in text
    assert 'THEOREM (Bug # "handoff") => (Spec => QueueSpec)' in text
    for action in ("Send", "Receive", "Wait", "Resume", "Cancel", "Withdraw", "PassOn"):
        assert re.search(rf"^{action}\(", text, re.MULTILINE), action
        assert f" : {action}(" in text, f"{action} is not a disjunct of Next"
    assert re.search(r"^Wake\(s, c\) ==", text, re.MULTILINE)
    # The asyncio primitive each part models is named beside it.
    for primitive in ("Future.set_result", "Task.cancel", "loop.call_soon", "_wakeup_next"):
        assert primitive in text, primitive
    cfg = (TLA_DIR / "AsyncQueue.cfg").read_text()
    assert "PROPERTIES QueueSpec QueueSteps" in cfg
    invariants = cfg.split("INVARIANTS")[1].splitlines()[0].split()
    assert {"NothingLost", "HeldDeliveries", "NoSleepingWaiter", "QueueInvariants"} <= set(
        invariants
    )


# -- the teaching models ------------------------------------------------------------------------


@needs_java
def test_handoff_model_strands_a_message_in_flight_that_no_task_holds() -> None:
    result = run("AsyncQueueHandoff")
    assert (result.outcome, result.detail) == ("violation", "Invariant HeldDeliveries")
    trace = states(result.trace())
    assert [a for a, _ in trace] == ["Initial", "Wait", "Send", "Cancel", "PassOn"]
    _, waited, sent, cancelled, passed = (s for _, s in trace)
    assert of(waited, "fut", "r1") == "pending"
    assert waited["waiters"] == {"not_empty": (mv("r1"),), "not_full": ()}
    # The send's wakeup delivered a into r1's future: in flight, r1 not yet run.
    assert sent["qInFlight"] == (mv("a"),) and sent["qVisible"] == ()
    assert of(sent, "fut", "r1") == "resolved"
    assert of(sent, "result", "r1") == (mv("a"), 1)
    # Task.cancel() finds the future resolved: r1 will raise when it runs.
    assert of(cancelled, "mustCancel", "r1") is True
    # r1 raises CancelledError and passes the wakeup on (to nobody); the receipt is dropped.
    assert passed["qInFlight"] == (mv("a"),)
    assert of(passed, "held", "r1") == mv("None") and of(passed, "result", "r1") == mv("None")
    assert of(passed, "op", "r1") == "none"


@needs_java
def test_no_pass_on_model_leaves_a_receiver_asleep_beside_a_visible_message() -> None:
    result = run("AsyncQueueNoPassOn")
    assert (result.outcome, result.detail) == ("violation", "Invariant NoSleepingWaiter")
    trace = states(result.trace())
    assert [a for a, _ in trace] == ["Initial", "Wait", "Wait", "Send", "Cancel", "Withdraw"]
    sent, last = trace[3][1], trace[-1][1]
    # The send woke the first waiter only: one future resolved, one still pending.
    waiting = {of(sent, "fut", r) for r in ("r1", "r2")}
    assert waiting == {"resolved", "pending"}
    (woken,) = [r for r in ("r1", "r2") if of(sent, "fut", r) == "resolved"]
    (other,) = {"r1", "r2"} - {woken}
    assert sent["waiters"] == {"not_empty": (mv(other),), "not_full": ()}
    # The woken task withdrew: nobody is ready, a is visible, the other still sleeps.
    assert last["qVisible"] == (mv("a"),)
    assert of(last, "fut", woken) == mv("None") and of(last, "fut", other) == "pending"
    assert of(last, "fut", "s1") == mv("None")


@needs_java
@pytest.mark.parametrize("name", sorted(SAVED))
def test_saved_counterexample_is_what_tlc_prints(name: str) -> None:
    result = run(name)
    assert result.trace() == SAVED[name].read_text(), (
        f"re-save {SAVED[name].relative_to(ROOT)} from tla/_runs/{name}.trace "
        f"(`python -m tla --model {name}`) and check the walk-through in docs/tla.md"
    )


# -- the checks are not vacuous -----------------------------------------------------------------


def _mutant(tmp_path: Path, correct: str, mutant: str, cfg: str) -> Result:
    """TLC on AsyncQueue with ``correct`` replaced by ``mutant`` (``""``: the module as it is),
    with the config text ``cfg``."""
    text = (TLA_DIR / "AsyncQueue.tla").read_text()
    if correct:
        assert text.count(correct) == 1
        text = text.replace(correct, mutant)
    (tmp_path / "AsyncQueue.tla").write_text(text)
    shutil.copy(TLA_DIR / "Queue.tla", tmp_path / "Queue.tla")
    (tmp_path / "Mutant.cfg").write_text(cfg)
    return run_tlc(tmp_path / "AsyncQueue.tla", tmp_path / "Mutant.cfg", timeout=300)


_CFG: Final = """CONSTANTS
    Receivers = {r1, r2}
    Senders = {s1}
    Ids = %s
    Capacity = %d
    MaxReceives = %d
    Bug = "none"
    None = None
SPECIFICATION Spec
%s
"""


@needs_java
def test_a_wakeup_given_to_a_cancelled_future_is_lost(tmp_path: Path) -> None:
    """_notify must skip futures that are already done: popping the head of the deque whatever
    its state gives the wakeup to a waiter cancelled before it ran, which will not use it."""
    result = _mutant(
        tmp_path,
        'pending == {k \\in DOMAIN w : s.fut[w[k]] = "pending"}',
        'pending == IF w = <<>> THEN {} ELSE IF s.fut[w[1]] = "pending" THEN {1} ELSE {}',
        _CFG % ("{a}", 1, 1, "INVARIANTS NoSleepingWaiter"),
    )
    assert (result.outcome, result.detail) == ("violation", "Invariant NoSleepingWaiter")
    trace = states(result.trace())
    assert [a for a, _ in trace] == ["Initial", "Wait", "Wait", "Cancel", "Send", "Withdraw"]
    last = trace[-1][1]
    assert last["qVisible"] == (mv("a"),)
    assert {of(last, "fut", r) for r in ("r1", "r2")} == {mv("None"), "pending"}


@needs_java
def test_refinement_catches_a_retry_that_requeues_at_the_head(tmp_path: Path) -> None:
    result = _mutant(
        tmp_path,
        "!.visible = IF dies THEN @ ELSE Append(@, i)",
        "!.visible = IF dies THEN @ ELSE <<i>> \\o @",
        _CFG % ("{a, b}", 2, 2, "PROPERTIES QueueSpec"),
    )
    assert result.outcome == "violation" and "Action property" in result.detail, result.summary
    assert states(result.trace())[-1][0] == "Retry"


@needs_java
def test_a_handoff_is_no_refinement_of_queue(tmp_path: Path) -> None:
    """The handoff's send also delivers: two of Queue's steps (Send, Receive) in one."""
    cfg = async_models()["AsyncQueueHandoff"].cfg.read_text()
    assert cfg.count("INVARIANTS HeldDeliveries") == 1
    result = _mutant(
        tmp_path, "", "", cfg.replace("INVARIANTS HeldDeliveries", "PROPERTIES QueueSpec")
    )
    assert result.outcome == "violation" and "Action property" in result.detail, result.summary
    trace = states(result.trace())
    assert [a for a, _ in trace] == ["Initial", "Wait", "Send"]
    assert trace[-1][1]["qInFlight"] == (mv("a"),)  # sent and delivered in one step


# -- the correct model passes (slow) ------------------------------------------------------------


@needs_java
@pytest.mark.slow
def test_async_model_passes() -> None:
    result = run("AsyncQueue")
    assert result.outcome == "ok", result.summary + "\n" + result.trace()
    assert result.distinct is not None and result.distinct > 10000
