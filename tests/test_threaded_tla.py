"""The implementation-level TLA+ model ``tla/ThreadedQueue.tla``, checked by TLC.

- The Wakeup models (injected notify bugs) fail, and their counterexamples are the lost
  wakeups docs/levels.md explains: the final state has a receiver asleep on ``not_empty`` beside
  a visible message.
- The refinement ``ThreadedQueue => Queue`` is not vacuous: a mutant of the one release that
  re-queues at the head instead of the tail, and a sweep that fires the due timers in the order
  they were started instead of by due time, each violate ``QueueSpec``.
- The wakeups of the new critical sections are not vacuous: a sweep that does not notify
  ``not_empty`` when a delay fires leaves a receiver asleep beside the message it made visible
  (``NoLostWakeup``), and a ``delete_batch`` that notifies ``not_full`` once for the whole
  batch leaves a sender asleep beside a free slot.
- Issue 17: a sweep that notifies ``not_empty`` only into an empty ``VISIBLE`` fails
  ``ThreadedQueueWakeupNotifyIfEmpty`` and the ``Bug = "none"`` model with capacity 2 and two
  consumers (``ThreadedQueueTwoConsumers``), and passes the capacity-1 ``ThreadedQueue.cfg``:
  the blind spot that model closes.
- The correct models pass (invariants, no lost wakeup, deadlock freedom, refinement, liveness);
  they take 20-40 s each, so they are marked ``slow``.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tla.models import TLA_DIR, Model, discover
from tla.tlc import Result, run_tlc
from tla.tlc import available as tlc_available
from tla.values import Function, ModelValue, Record, Value, parse_state

needs_java = pytest.mark.skipif(not tlc_available(), reason="TLC needs Java and tla2tools.jar")

_STATE = re.compile(r"^State (\d+): <(\w+)")


def threaded_models() -> dict[str, Model]:
    return {m.name: m for m in discover(large=True) if m.module == "ThreadedQueue"}


def run(name: str) -> Result:
    m = threaded_models()[name]
    return run_tlc(m.spec, m.cfg, check_deadlock=m.check_deadlock, timeout=600)


def states(result: Result) -> list[tuple[str, dict[str, Value]]]:
    """The counterexample: (action name, state) per step, the first one ``Initial``."""
    out: list[tuple[str, dict[str, Value]]] = []
    block: list[str] = []
    action = ""
    for line in [*result.output, "State 0: <End"]:
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


# -- discovery ----------------------------------------------------------------------------------


def test_threaded_models_declare_their_expected_outcomes() -> None:
    models = threaded_models()
    assert {
        "ThreadedQueue",
        "ThreadedQueueCancel.large",
        "ThreadedQueueExtend.large",
        "ThreadedQueueLiveness",
        "ThreadedQueueWakeup",
        "ThreadedQueueWakeupNotifyOnce",
        "ThreadedQueueDelay",
        "ThreadedQueueBatch",
        "ThreadedQueueTwoConsumers",
        "ThreadedQueueWakeupNotifyIfEmpty",
    } <= set(models)
    for name, m in models.items():
        assert m.spec == TLA_DIR / "ThreadedQueue.tla"
        assert not m.check_deadlock  # DeadlockFree is the invariant that matters
        if "Wakeup" in name:
            assert m.expect == "violation" and m.expect_name, name
        else:
            assert m.expected == "ok", name
    assert models["ThreadedQueueWakeup"].expect_name == "DeadlockFree"
    assert models["ThreadedQueueWakeupNotifyOnce"].expect_name == "ReceiversAwake"
    assert models["ThreadedQueueWakeupNotifyIfEmpty"].expect_name == "ReceiversAwake"
    # Issue 17: the Bug = "none" model with two messages and two consumers runs by default.
    assert not models["ThreadedQueueTwoConsumers"].large


def test_threaded_model_states_the_refinement_theorem() -> None:
    text = (TLA_DIR / "ThreadedQueue.tla").read_text()
    assert "Queue == INSTANCE Queue" in text
    assert "THEOREM Spec => QueueSpec" in text
    for cfg in (
        "ThreadedQueue",
        "ThreadedQueueCancel.large",
        "ThreadedQueueExtend.large",
        "ThreadedQueueDelay",
        "ThreadedQueueBatch",
    ):
        assert "PROPERTIES QueueSpec" in (TLA_DIR / f"{cfg}.cfg").read_text()


# -- the lost wakeups ---------------------------------------------------------------------------


@needs_java
def test_threaded_wakeup_model_shows_a_receiver_sleeping_through_a_redelivery() -> None:
    result = run("ThreadedQueueWakeup")
    assert (result.outcome, result.detail) == ("violation", "Invariant DeadlockFree")
    trace = states(result)
    actions = [a for a, _ in trace]
    assert actions[0] == "Initial" and actions[-1] == "SweepCS"
    assert "Drop" in actions and "Tick" in actions
    before, last = trace[-2][1], trace[-1][1]
    # The sweep made the message visible again ...
    assert before["qVisible"] == () and last["qVisible"] == (mv("a"),)
    # ... and woke no one: the consumer is still in not_empty's wait set, as is everyone else.
    waiting = last["waiting"]
    assert isinstance(waiting, Record)
    assert waiting["not_empty"] == frozenset({mv("c1")})
    at = last["at"]
    assert isinstance(at, Function)
    assert at[mv("c1")] == "wait" and at[mv("s")] == "wait" and at[mv("p1")] == "none"
    assert last["target"] == mv("None")  # the sweeper waits for a notify that never comes


@needs_java
def test_threaded_notify_once_model_leaves_one_receiver_asleep_beside_a_message() -> None:
    result = run("ThreadedQueueWakeupNotifyOnce")
    assert (result.outcome, result.detail) == ("violation", "Invariant ReceiversAwake")
    trace = states(result)
    assert trace[-1][0] == "SweepCS"
    before, last = trace[-2][1], trace[-1][1]
    w_before, w_last = before["waiting"], last["waiting"]
    assert isinstance(w_before, Record) and isinstance(w_last, Record)
    assert w_before["not_empty"] == frozenset({mv("c1"), mv("c2")})
    # Two messages re-queued, one receiver woken (on its way to the lock), one still asleep.
    visible = last["qVisible"]
    assert isinstance(visible, tuple) and len(visible) == 2
    assert len(w_last["not_empty"]) == 1  # type: ignore[arg-type]


def _with_bug(tmp_path: Path, cfg: str, bug: str) -> Result:
    """TLC on the model ``cfg`` with its ``Bug`` replaced by ``bug``."""
    text = (TLA_DIR / f"{cfg}.cfg").read_text()
    assert text.count('Bug = "none"') == 1
    for name in ("ThreadedQueue.tla", "Queue.tla"):
        shutil.copy(TLA_DIR / name, tmp_path / name)
    (tmp_path / "Mutant.cfg").write_text(text.replace('Bug = "none"', f'Bug = "{bug}"'))
    return run_tlc(tmp_path / "ThreadedQueue.tla", tmp_path / "Mutant.cfg", check_deadlock=False)


@needs_java
def test_threaded_notify_if_empty_model_leaves_a_receiver_asleep_beside_a_requeued_message() -> (
    None
):
    """Issue 17: the sweep notifies not_empty only into an empty VISIBLE. A send has woken c1,
    which has not yet taken the lock when the sweep re-queues a behind b: no one is told."""
    result = run("ThreadedQueueWakeupNotifyIfEmpty")
    assert (result.outcome, result.detail) == ("violation", "Invariant ReceiversAwake")
    trace = states(result)
    assert trace[-1][0] == "SweepCS"
    before, last = trace[-2][1], trace[-1][1]
    assert before["qVisible"] == (mv("b"),) and last["qVisible"] == (mv("b"), mv("a"))
    waiting = last["waiting"]
    assert isinstance(waiting, Record) and waiting["not_empty"] == frozenset({mv("c2")})
    at = last["at"]
    assert isinstance(at, Function) and at[mv("c1")] == "lock"  # on its way, for b only


@needs_java
def test_threaded_two_consumer_model_catches_the_notify_if_empty_sweep(tmp_path: Path) -> None:
    """Issue 17: the Bug = "none" model with capacity 2 and two consumers has the teeth the
    capacity-1 models lack: with the bug, its invariants fail."""
    result = _with_bug(tmp_path, "ThreadedQueueTwoConsumers", "sweep_notify_if_empty")
    assert (result.outcome, result.detail) == ("violation", "Invariant NoLostWakeup")
    assert states(result)[-1][0] == "SweepCS"


@needs_java
@pytest.mark.slow
def test_threaded_capacity_one_model_misses_the_notify_if_empty_sweep(tmp_path: Path) -> None:
    """Issue 17, the blind spot the two-consumer model closes: with capacity 1 no second
    message can be visible when the sweep re-queues, so the bug passes ThreadedQueue.cfg."""
    result = _with_bug(tmp_path, "ThreadedQueue", "sweep_notify_if_empty")
    assert result.outcome == "ok", result.summary + "\n" + result.trace()


# -- the refinement is not vacuous --------------------------------------------------------------

_MUTANT_CFG = """CONSTANTS
    Producers = {p1}
    Consumers = {c1}
    Sweeper = s
    Ids = {a, b}
    Capacity = 2
    MaxReceives = 2
    VT = 1
    ExtendTimeouts = %s
    WithCancel = FALSE
    WithPurge = FALSE
    Delays = {0}
    Batch = 1
    MaxTime = %d
    Bug = "none"
    None = None
SPECIFICATION Spec
PROPERTIES QueueSpec
"""


@needs_java
@pytest.mark.parametrize(
    ("correct", "mutant", "extend", "max_time", "caught_at"),
    [
        # The release (shared by retry, change_visibility(0) and the sweep) puts the message
        # back at the head: the first release that TLC reaches is a retry's.
        (
            "!.qVisible = IF dies THEN @ ELSE Append(@, i)",
            "!.qVisible = IF dies THEN @ ELSE <<i>> \\o @",
            "{}",
            1,
            "RetryCS",
        ),
        # The sweep fires in the order the timers were started, ignoring due times: wrong once
        # a delivery received first has had its deadline moved past a later one's.
        (
            "FireAll(State, ExpiryOrder)",
            "FireAll(State, SelectSeq(qTimers, LAMBDA i : i \\in Due))",
            "{2}",
            2,
            "SweepCS",
        ),
    ],
    ids=["release-requeues-at-the-head", "sweep-in-receive-order"],
)
def test_threaded_refinement_catches_a_wrong_release(
    tmp_path: Path, correct: str, mutant: str, extend: str, max_time: int, caught_at: str
) -> None:
    text = (TLA_DIR / "ThreadedQueue.tla").read_text()
    assert text.count(correct) == 1
    (tmp_path / "ThreadedQueue.tla").write_text(text.replace(correct, mutant))
    shutil.copy(TLA_DIR / "Queue.tla", tmp_path / "Queue.tla")
    (tmp_path / "Mutant.cfg").write_text(_MUTANT_CFG % (extend, max_time))
    result = run_tlc(tmp_path / "ThreadedQueue.tla", tmp_path / "Mutant.cfg", check_deadlock=False)
    assert result.outcome == "violation" and "Action property" in result.detail, result.summary
    assert states(result)[-1][0] == caught_at


#: Two senders asleep on not_full while a consumer holds a batch that fills the queue: the
#: delete_batch frees two slots, and each sender must be woken (no time passes).
_TWO_SLOTS_CFG = """CONSTANTS
    Producers = {p1, p2}
    Consumers = {c1}
    Sweeper = s
    Ids = {a, b, c, d}
    Capacity = 2
    MaxReceives = 1
    VT = 1
    ExtendTimeouts = {}
    WithCancel = FALSE
    WithPurge = FALSE
    Delays = {0}
    Batch = 2
    MaxTime = 0
    Bug = "none"
    None = None
SPECIFICATION Spec
INVARIANTS NoLostWakeup
"""


def _mutant(tmp_path: Path, correct: str, mutant: str, cfg: str) -> Result:
    """TLC on ThreadedQueue with ``correct`` replaced by ``mutant``; ``cfg``: a model's name or
    a config's text."""
    text = (TLA_DIR / "ThreadedQueue.tla").read_text()
    assert text.count(correct) == 1
    (tmp_path / "ThreadedQueue.tla").write_text(text.replace(correct, mutant))
    shutil.copy(TLA_DIR / "Queue.tla", tmp_path / "Queue.tla")
    if "\n" in cfg:
        (tmp_path / "Mutant.cfg").write_text(cfg)
    else:
        shutil.copy(TLA_DIR / f"{cfg}.cfg", tmp_path / "Mutant.cfg")
    return run_tlc(tmp_path / "ThreadedQueue.tla", tmp_path / "Mutant.cfg", check_deadlock=False)


@needs_java
def test_threaded_delay_firing_must_notify_a_receiver(tmp_path: Path) -> None:
    """Issue 14: a delay firing is a message made visible: the sweep owes not_empty a notify."""
    result = _mutant(
        tmp_path,
        "SweepNotifies(Requeued(s))",
        "SweepNotifies(Requeued(s) - Len(SelectSeq(ExpiryOrder, LAMBDA i : visibleAt[i] # None)))",
        "ThreadedQueueDelay",
    )
    assert (result.outcome, result.detail) == ("violation", "Invariant NoLostWakeup")
    trace = states(result)
    assert trace[-1][0] == "SweepCS"
    last = trace[-1][1]
    waiting = last["waiting"]
    assert isinstance(waiting, Record) and waiting["not_empty"] == frozenset({mv("c1")})
    assert last["qVisible"] != () and last["qDelayed"] == ()


@needs_java
def test_threaded_delete_batch_must_notify_per_freed_slot(tmp_path: Path) -> None:
    """Issue 14: delete_batch frees one slot per message deleted, and owes a notify for each."""
    result = _mutant(
        tmp_path,
        "IN SetState(s) /\\ Return(c, 0, Finished(s), 0)",
        "IN SetState(s) /\\ Return(c, 0, IF Finished(s) > 0 THEN 1 ELSE 0, 0)",
        _TWO_SLOTS_CFG,
    )
    assert (result.outcome, result.detail) == ("violation", "Invariant NoLostWakeup")
    trace = states(result)
    assert trace[-1][0] == "DeleteBatchCS"
    waiting = trace[-1][1]["waiting"]
    assert isinstance(waiting, Record) and len(waiting["not_full"]) == 1  # type: ignore[arg-type]


# -- the correct models pass (slow) -------------------------------------------------------------


@needs_java
@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        "ThreadedQueue",
        "ThreadedQueueCancel.large",
        "ThreadedQueueExtend.large",
        "ThreadedQueueLiveness",
        "ThreadedQueueDelay",
        "ThreadedQueueBatch",
        "ThreadedQueueTwoConsumers",
    ],
)
def test_threaded_model_passes(name: str) -> None:
    result = run(name)
    assert result.outcome == "ok", result.summary + "\n" + result.trace()
    assert result.distinct is not None and result.distinct > 1000
