"""The project's own checks, run on every mutant of the catalogue (``model_tests/mutants.py``).

For each mutant this shows *which* check fails and *with what message*, and that the same check
passes on ``impl.Queue``. The checks are the real ones:

- the lockstep state machine of ``model_tests/lockstep.py`` (its rules, which compare
  each result with the spec's, and its invariants, which compare the whole state and check the
  contract's invariants by name). Each mutant gets a short *witness program*: the rules a
  Hypothesis run would call, in an order that reaches the bug, run through the machine's own
  rule and invariant methods exactly as Hypothesis runs them (invariants after every step).
  That makes "which check fails" deterministic and fast. A separate test lets Hypothesis search
  on its own (derandomized) and shows it finds the same bugs unaided;
- the second seed's four examples through the scenario harness (``model_tests/targets.py``,
  run by ``model_tests.pitfall_checks.seed_examples_fail``);
- the linearizability checker, for the bug only a concurrent history shows;
- two checks of waking and waiting (a lost wakeup, a polling sweeper), which no state-based
  check can see, defined in ``model_tests/pitfall_checks.py`` (where the learner's pages import
  them from, with no pytest).

Select them with ``pytest -k mutant``.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, cast
from unittest import mock

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from impl import Entry, FakeClock, Message, Queue
from impl.machine import Machine
from impl.threaded import Conditions
from model_tests import lockstep, mutants
from model_tests.linearizability import (
    HistoryRecorder,
    Linearizable,
    NotLinearizable,
    QueueAdapter,
    Verdict,
    check,
    format_history,
)
from model_tests.mutants import (
    MUTANTS,
    CapacityFreedOnReceiveQueue,
    CompactDropsDelaysQueue,
    DeadLetterOffByOneQueue,
    DeleteBatchStopsQueue,
    DeleteByIdQueue,
    EarlyDelayQueue,
    ExpiredToHeadQueue,
    ExtendAddsQueue,
    ForgetfulSweeperQueue,
    PlainBlockingQueue,
    PollingSweeperQueue,
    PrefixSendBatchQueue,
    PurgeMissesDelayedQueue,
    RetryKeepsAttemptQueue,
    ReusedReceiptQueue,
    SeparateTimerOrderQueue,
    SplitReceiveBatchQueue,
    SplitReceiveQueue,
    SwapRemoveCancelQueue,
    UnarmedDeadlineQueue,
    UncheckedAttemptQueue,
    broken_parts,
)
from model_tests.pitfall_checks import lost_wakeup, polling_sweeper, seed_examples_fail
from model_tests.support import BOUND

QueueClass = type[Queue[Any]]


# =============================================================================================
# Running the lockstep machine on another queue class
# =============================================================================================


@contextmanager
def lockstep_builds(queue_class: QueueClass) -> Iterator[None]:
    """Make ``lockstep.QueueMachine`` build ``queue_class`` instead of ``impl.Queue``."""
    with mock.patch.object(lockstep.QueueMachine, "queue_class", queue_class):
        yield


@dataclass(frozen=True)
class Failure:
    """A check of the lockstep machine failed: ``check`` is the rule or invariant that raised."""

    check: str
    message: str
    step: int


def _invariant_names() -> list[str]:
    """The machine's invariants, in the order Hypothesis runs them (``inspect.getmembers``)."""
    return [
        name
        for name, f in inspect.getmembers(lockstep.QueueMachine)
        if getattr(f, "hypothesis_stateful_invariant", None) is not None
    ]


@dataclass(frozen=True)
class Draws:
    """In a witness program: stands in for a rule's ``st.data()``; its ``draw`` calls return
    these values, in order (a fresh copy for every run)."""

    values: tuple[object, ...]


class _Drawer:
    def __init__(self, values: tuple[object, ...]) -> None:
        self._values = list(values)

    def draw(self, strategy: object, label: object = None) -> object:
        del strategy, label
        assert self._values, "the witness program supplies fewer draws than the rule makes"
        return self._values.pop(0)


@dataclass(frozen=True)
class ReceiptOfStep:
    """In a witness program: the receipt that step ``step`` (a receive) returned."""

    step: int


#: One step of a witness program: a rule of the machine and its arguments.
Step = tuple[str, dict[str, object]]


@dataclass(frozen=True)
class Witness:
    """A program for the lockstep machine that reaches a mutant's bug, and what must fail."""

    config: dict[str, object]
    steps: Sequence[Step]
    check: str
    message: str  # a regular expression the failure's message must match
    why: str = ""


def _argument(value: object, results: list[object]) -> object:
    if isinstance(value, ReceiptOfStep):
        return results[value.step]
    if isinstance(value, list):  # a batch rule's receipts
        return [_argument(v, results) for v in value]
    if isinstance(value, Draws):
        return _Drawer(value.values)
    return value


def run_witness(queue_class: QueueClass, w: Witness) -> Failure | None:
    """Run ``w`` through the machine's rules, with every invariant after every step, as
    Hypothesis does; the first check that fails, or ``None`` if all pass."""
    invariants = _invariant_names()
    m = lockstep.QueueMachine()
    results: list[object] = []
    # Outside a Hypothesis run there is nowhere to record statistics: hypothesis.event() raises.
    quiet = (
        mock.patch.object(lockstep, "event", lambda *args, **kwargs: None)
        if hasattr(lockstep, "event")
        else contextlib.nullcontext()
    )
    steps = [("create_queues", w.config), *w.steps]
    try:
        with quiet:
            for i, (rule, kwargs) in enumerate(steps):
                args = {k: _argument(v, results) for k, v in kwargs.items()}
                try:
                    with lockstep_builds(queue_class):
                        results.append(getattr(m, rule)(**args))
                except AssertionError as e:
                    return Failure(rule, str(e), i)
                for name in invariants:
                    try:
                        getattr(m, name)()
                    except AssertionError as e:
                        return Failure(name, str(e), i)
        return None
    finally:
        m.teardown()


def _send(id: str, pair: int = 0, delay: float | None = None) -> Step:
    if delay is None:
        return ("send", {"pair": pair, "id": id, "body": id.upper()})
    return ("send", {"pair": pair, "id": id, "body": id.upper(), "delay": delay})


def _send_batch(*ids: str, pair: int = 0) -> Step:
    # The rule draws each entry's id, body and delay ("default": the queue's).
    draws = tuple(v for id in ids for v in (id, id.upper(), "default"))
    return ("send_batch", {"pair": pair, "data": Draws(draws), "size": len(ids)})


def _purge(pair: int = 0) -> Step:
    # The rule draws "purge now?" (0: yes).
    return ("purge", {"pair": pair, "data": Draws((0,))})


def _receive(pair: int = 0, vt: object = "default") -> Step:
    # The rule draws "from a pair with something visible?" (nonzero: yes), then the pair.
    return ("receive", {"data": Draws((1, pair)), "vt": vt})


def _cancel(id: str, pair: int = 0) -> Step:
    # The rule draws "an accepted id?" (0: yes), then the id.
    return ("cancel", {"pair": pair, "data": Draws((0, id))})


def _advance(dt: float) -> Step:
    # The rule draws how to move ("any": by a drawn amount), then the amount.
    return ("advance", {"data": Draws(("any", dt))})


def _with(rule: str, receive_step: int, **kwargs: object) -> Step:
    return (rule, {"ticket": ReceiptOfStep(receive_step), "other": False, **kwargs})


def _config(
    capacity: int | None = None, vt: float | None = 1.0, max_receives: int | None = None
) -> dict[str, object]:
    return {"capacity": capacity, "vt": vt, "max_receives": max_receives}


#: A stale receipt after a redelivery: receive (step 2) a, give it back, receive it again, then
#: use the first receipt. Step numbers count create_queues as step 0.
_STALE_AFTER_RETRY: Final = [_send("a"), _receive(), _with("retry", 2), _receive()]

_OBSERVED: Final = r"queue 0: impl Observed\("

WITNESSES: Final[dict[QueueClass, Witness]] = {
    PlainBlockingQueue: Witness(
        _config(),
        [_send("a"), _receive()],
        "observable_state_matches_spec",
        _OBSERVED + r".*done=frozenset\(\{'a'\}\).* != spec .*in_flight=\(Item\(id='a'",
        "right after the receive, the spec has a in flight, the queue has it done",
    ),
    UnarmedDeadlineQueue: Witness(
        _config(vt=1.0),
        [_send("a"), _receive(), _advance(1.0)],
        "observable_state_matches_spec",
        _OBSERVED
        + r"visible=\(\), in_flight=\(Item\(id='a'.*deadline=1\.0, visible_at=None\),\).* != spec "
        r"Observed\(visible=\(Item\(id='a'",
        "the deadline passed and the sweep ran: the spec released a, the queue still holds it",
    ),
    DeleteByIdQueue: Witness(
        _config(),
        [*_STALE_AFTER_RETRY, _with("delete", 2)],
        "delete",
        r"assert True == False",
        "the stale receipt of attempt 1 deleted attempt 2",
    ),
    UncheckedAttemptQueue: Witness(
        _config(),
        [*_STALE_AFTER_RETRY, _with("delete", 2)],
        "delete",
        r"assert True == False",
        "the stale receipt of attempt 1 is taken as live for attempt 2",
    ),
    ReusedReceiptQueue: Witness(
        _config(),
        _STALE_AFTER_RETRY,
        "receive",
        r"receipt\(\) does not name the delivery",
        "the second delivery hands out the first delivery's receipt",
    ),
    CapacityFreedOnReceiveQueue: Witness(
        _config(capacity=1),
        [_send("a"), _receive(), _send("b")],
        "send",
        r"^CapacityBound$",
        "the machine's own self-check (Machine.check) fails inside the accepted send",
    ),
    ExpiredToHeadQueue: Witness(
        _config(vt=1.0),
        [_send("a"), _send("b"), _receive(), _advance(1.0)],
        "FifoVisible",
        r"FifoVisible: visible went from \('b',\) to \('a', 'b'\)",
        "a expired and went ahead of b, which was visible before a re-entered",
    ),
    SwapRemoveCancelQueue: Witness(
        _config(vt=None),
        [_send("a"), _send("b"), _send("c"), _send("d"), _cancel("b")],
        "FifoVisible",
        r"FifoVisible: visible went from \('a', 'b', 'c', 'd'\) to \('a', 'd', 'c'\)",
        "cancelling b moved d ahead of c",
    ),
    RetryKeepsAttemptQueue: Witness(
        _config(),
        [_send("a"), _receive(), _with("retry", 2)],
        "AttemptsCount",
        r"AttemptsCount: 'a' went from attempt 1 to 0",
        "the retry took the attempt back",
    ),
    DeadLetterOffByOneQueue: Witness(
        _config(max_receives=1),
        [_send("a"), _receive(), _with("retry", 2)],
        "observable_state_matches_spec",
        _OBSERVED + r"visible=\(Item\(id='a'.*dead=\(\).* != spec Observed\(visible=\(\), "
        r"in_flight=\(\), dead=\(Item\(id='a'",
        "with max_receives=1 the first release must dead-letter a; it went back to visible",
    ),
    ExtendAddsQueue: Witness(
        _config(vt=1.0),
        [_send("a"), _receive(), _advance(0.5), _with("change_visibility", 2, timeout=2.0)],
        "observable_state_matches_spec",
        _OBSERVED + r".*deadline=3\.0, visible_at=None\),\).* != spec .*deadline=2\.5, visible",
        "extended at t=0.5 by 2: the deadline is 2.5 (from now), not 3.0 (added to 1.0)",
    ),
    EarlyDelayQueue: Witness(
        _config(),
        [_send("a", delay=1.0), _advance(0.75)],
        "DelayHonoured",
        r"DelayHonoured: 'a' became VISIBLE at 0\.75, before its visible_at 1\.0",
        "a quarter before a's visible_at the spec still has it delayed; the queue made it visible",
    ),
    SeparateTimerOrderQueue: Witness(
        _config(vt=1.0),
        [_send("a"), _receive(), _send("b", delay=1.0), _advance(1.0)],
        "observable_state_matches_spec",
        _OBSERVED + r"visible=\(Item\(id='b'.*Item\(id='a'.* != spec "
        r"Observed\(visible=\(Item\(id='a'.*Item\(id='b'",
        "a's deadline and b's delay are both due at 1, a's timer started first: a, then b",
    ),
    PurgeMissesDelayedQueue: Witness(
        _config(),
        [_send("a", delay=1.0), _send("b"), _purge()],
        "purge",
        r"assert 1 == 2",
        "the purge must cancel the delayed a too: 2, not 1",
    ),
    PrefixSendBatchQueue: Witness(
        _config(capacity=2),
        [_send("a"), _send_batch("b", "c")],
        "send_batch",
        r"assert \(1 == 2\)\n \+  where 1 = len\(\['b'\]\)",
        "one slot free, a batch of two: rejected whole by the spec, b accepted by the queue",
    ),
    DeleteBatchStopsQueue: Witness(
        _config(),
        [
            _send("a"),
            _send("b"),
            _receive(),
            _receive(),
            (
                "delete_batch",
                {"tickets": [ReceiptOfStep(3), ReceiptOfStep(3), ReceiptOfStep(4)], "other": False},
            ),
        ],
        "delete_batch",
        r"\[True, False, False\] == \[True, False, True\]",
        "a's receipt twice, then b's: (True, False, True); the queue stops at the False",
    ),
    CompactDropsDelaysQueue: Witness(
        _config(vt=1.0),
        [
            _send("a", delay=1.0),
            _send("b"),
            _receive(),
            # Each extension leaves a stale entry: the 19th makes 21 > 2 * 2 + 16, a rebuild.
            *[_with("change_visibility", 3, timeout=5.0) for _ in range(20)],
            _advance(1.0),
        ],
        "observable_state_matches_spec",
        _OBSERVED + r"visible=\(\),.* != spec Observed\(visible=\(Item\(id='a'",
        "the heap was rebuilt with a delayed: at its visible_at a must become visible",
    ),
}


@pytest.mark.parametrize("mutant", list(WITNESSES), ids=lambda c: c.__name__)
def test_mutant_fails_the_lockstep_checks(mutant: QueueClass) -> None:
    w = WITNESSES[mutant]
    failure = run_witness(mutant, w)
    assert failure is not None, f"{mutant.__name__} passed every lockstep check: {w.why}"
    assert (failure.check, failure.step) == (w.check, len(w.steps)), failure
    assert re.search(w.message, failure.message, re.DOTALL), failure.message


@pytest.mark.parametrize("mutant", list(WITNESSES), ids=lambda c: c.__name__)
def test_mutant_witness_passes_the_lockstep_checks_on_the_real_queue(mutant: QueueClass) -> None:
    assert run_witness(Queue, WITNESSES[mutant]) is None


# -- Hypothesis finds them unaided -------------------------------------------------------------

#: Small, derandomized and without shrinking (the first failing run is reported as it is), so
#: the test is deterministic and takes seconds; what it finds is the same on every run.
SEARCH: Final = settings(
    max_examples=60,
    stateful_step_count=25,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)

#: Mutants the derandomized search above finds, with the checks that can catch each first
#: (which one does depends on the examples the search draws, so on the machine's strategies).
#: ReusedReceiptQueue is not listed: the search found it when this file ran alone but not after
#: some other test modules had run in the same process, so finding it unaided is not a stable
#: fact; its witness program above catches it deterministically. RetryKeepsAttemptQueue was
#: found until the machine gained the issue-14 rules (delays, batches, purge): with the same
#: budget the search now spends its steps elsewhere; its witness program catches it.
FOUND_BY_SEARCH: Final[dict[QueueClass, set[str]]] = {
    PlainBlockingQueue: {
        "observable_state_matches_spec",
        "OneState",
        "delete",
        "retry",
        "receive_batch",
    },
}


def _failing_check(exc: BaseException) -> str:
    """The innermost rule or invariant of the machine in ``exc``'s traceback."""
    tb = exc.__traceback__
    names: list[str] = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == lockstep.__file__ and not code.co_name.startswith("_"):
            names.append(code.co_name)
        tb = tb.tb_next
    return names[-1] if names else "?"


@pytest.mark.parametrize("mutant", [Queue, *FOUND_BY_SEARCH], ids=lambda c: c.__name__)
def test_lockstep_search_finds_the_mutant_unaided(mutant: QueueClass) -> None:
    with lockstep_builds(mutant):
        if mutant is Queue:
            run_state_machine_as_test(lockstep.QueueMachine, settings=SEARCH)
            return
        with pytest.raises(AssertionError) as info:
            run_state_machine_as_test(lockstep.QueueMachine, settings=SEARCH)
    assert _failing_check(info.value) in FOUND_BY_SEARCH[mutant], info.value


# =============================================================================================
# The second seed's four examples, through the harness
# =============================================================================================

#: What the examples exercise: an ack with a stale attempt after a retry ("retry fences old
#: attempt"), a redelivery's attempt, in-flight messages holding capacity ("in flight
#: capacity") and acks of live deliveries. Nothing expires, nothing is dead-lettered, no
#: visible message is cancelled from between two others, nothing runs concurrently, so the
#: other mutants pass them.
CAUGHT_BY_SEED_EXAMPLES: Final = {
    PlainBlockingQueue,  # every ack of a live delivery says False
    DeleteByIdQueue,  # the stale ack ["ack", "a", 1] after the retry says True
    UncheckedAttemptQueue,  # the same
    ReusedReceiptQueue,  # the same: the stale handle is the live one
    CapacityFreedOnReceiveQueue,  # ["enqueue", "b"] with a in flight is accepted
    RetryKeepsAttemptQueue,  # the redelivery after the retry is attempt 1 again
}


@pytest.mark.parametrize("mutant", [Queue, *MUTANTS.values()], ids=lambda c: c.__name__)
def test_mutant_against_the_seed_examples(mutant: QueueClass) -> None:
    failed = seed_examples_fail(mutant)
    if mutant in CAUGHT_BY_SEED_EXAMPLES:
        assert failed, f"no seed example catches {mutant.__name__}"
    else:
        assert failed == []


# =============================================================================================
# Pitfall 2: only a concurrent history shows a split receive
# =============================================================================================


def _two_concurrent_receives(q: Queue[str], gate: Callable[[], object]) -> HistoryRecorder:
    """Send a and b, then two consumer threads receive at once; ``gate`` lines them up."""
    rec = HistoryRecorder(QueueAdapter(visibility_timeout=None))
    rec.call("producer", "send", q.send, "A", id="a")
    rec.call("producer", "send", q.send, "B", id="b")
    errors: list[BaseException] = []

    def consumer(name: str) -> None:
        try:
            gate()
            rec.call(name, "receive", q.receive, block=False)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=consumer, args=(n,), daemon=True) for n in ("c1", "c2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(BOUND)
        assert not t.is_alive()
    assert not errors, errors
    return rec


def test_mutant_split_receive_is_not_linearizable() -> None:
    # Both consumers pick before either stamps: the barrier in the window forces it every time.
    window = threading.Barrier(2, timeout=BOUND)
    q: Queue[str] = SplitReceiveQueue(
        visibility_timeout=None, clock=FakeClock(), between=window.wait
    )
    with q:
        rec = _two_concurrent_receives(q, gate=lambda: None)
    delivered = sorted((m.id, m.attempt) for c in rec.calls() if isinstance(m := c.value, Message))
    assert delivered == [("a", 1), ("a", 1)]  # one delivery, two consumers; b never handed out
    verdict = check(rec.history())
    assert isinstance(verdict, NotLinearizable), format_history(rec.history(), verdict)
    assert verdict.culprit.op.name == "receive"
    assert [m.expected for m in verdict.stuck] == [("b", "B", 1)]  # the spec gives b instead


def test_mutant_split_receive_check_passes_on_the_real_queue() -> None:
    gate = threading.Barrier(2, timeout=BOUND)  # as close together as two calls can get
    with Queue[str](visibility_timeout=None, clock=FakeClock()) as q:
        rec = _two_concurrent_receives(q, gate=gate.wait)
    verdict = check(rec.history())
    assert isinstance(verdict, Linearizable), format_history(rec.history(), verdict)


# =============================================================================================
# Issue 14: a receive_batch that drops the lock between its messages
# =============================================================================================


def split_receive_batch(
    queue_class: QueueClass,
) -> tuple[list[object], Verdict]:
    """The check of ``BatchAtomic`` for receive_batch: the linearizability checker's verdict on
    a concurrent history, with a batch as one operation (and what each call returned).

    A producer sends a, b, c; consumer c1 asks for two in one ``receive_batch``; a second
    consumer c2 receives once, inside c1's call: on the mutant in the window it opens between
    the batch's two deliveries (its ``between``), on any other queue just before c1's
    critical section (the real queue has no window). Either way c2's call lies inside c1's.
    """
    rec = HistoryRecorder(QueueAdapter(visibility_timeout=None))
    errors: list[BaseException] = []

    def c2() -> None:
        try:
            rec.call("c2", "receive", q.receive, block=False)
        except BaseException as e:
            errors.append(e)

    def run_c2() -> None:
        t = threading.Thread(target=c2, name="c2", daemon=True)
        t.start()
        t.join(BOUND)
        assert not t.is_alive(), "c2's receive did not return"

    split = queue_class is SplitReceiveBatchQueue
    kwargs: dict[str, Any] = {"between": run_c2} if split else {}
    q: Queue[str] = queue_class(visibility_timeout=None, clock=FakeClock(), **kwargs)

    def c1_batch(n: int, *, block: bool) -> list[Message[str]]:
        if not split:
            run_c2()
        return q.receive_batch(n, block=block)

    with q:
        rec.call("producer", "send_batch", q.send_batch, [Entry(x.upper(), id=x) for x in "abc"])
        rec.call("c1", "receive_batch", c1_batch, 2, block=False)
    assert not errors, errors
    got = [c.value for c in rec.calls() if c.thread != "producer"]
    return got, check(rec.history())


def test_mutant_split_receive_batch_is_not_linearizable() -> None:
    got, verdict = split_receive_batch(SplitReceiveBatchQueue)
    delivered = [
        [m.id for m in v] if isinstance(v, list) else cast(Message[str], v).id for v in got
    ]
    assert sorted(delivered, key=str) == [["a", "c"], "b"]  # a hole in c1's FIFO run
    assert isinstance(verdict, NotLinearizable), verdict
    # Already when c2 returns b: a whole batch would have taken a and b, or nothing yet.
    assert (verdict.culprit.thread, verdict.culprit.op.result) == ("c2", ("b", "B", 1))


def test_mutant_split_receive_batch_check_passes_on_the_real_queue() -> None:
    _, verdict = split_receive_batch(Queue)
    assert isinstance(verdict, Linearizable), verdict


# =============================================================================================
# Pitfall 5: a lost wakeup, and a sweeper that polls
# =============================================================================================


def test_mutant_forgetful_sweeper_loses_a_wakeup() -> None:
    assert lost_wakeup(ForgetfulSweeperQueue) == (
        "lost wakeup: a is visible again and 1 blocked receiver was not told"
    )


def test_mutant_lost_wakeup_check_passes_on_the_real_queue() -> None:
    assert lost_wakeup(Queue) is None


def test_mutant_polling_sweeper_never_sleeps_for_good() -> None:
    assert polling_sweeper(PollingSweeperQueue) == (
        "the idle sweeper polls: it waits until 1.05 at 1.0"
    )


def test_mutant_idle_sweeper_check_passes_on_the_real_queue() -> None:
    assert polling_sweeper(Queue) is None


# =============================================================================================
# The catalogue itself
# =============================================================================================

#: Which test above catches each mutant.
CAUGHT_BY: Final[dict[QueueClass, str]] = {
    **{m: "test_mutant_fails_the_lockstep_checks" for m in WITNESSES},
    SplitReceiveQueue: "test_mutant_split_receive_is_not_linearizable",
    SplitReceiveBatchQueue: "test_mutant_split_receive_batch_is_not_linearizable",
    ForgetfulSweeperQueue: "test_mutant_forgetful_sweeper_loses_a_wakeup",
    PollingSweeperQueue: "test_mutant_polling_sweeper_never_sleeps_for_good",
    # Held out until the controlled scheduler (issue 17): model_tests/tests/test_schedule.py.
    mutants.DeadlineFirstSendQueue: "test_schedule_finds_every_concurrency_mutant",
    mutants.OnlyWhenEmptySweeperQueue: "test_schedule_finds_every_concurrency_mutant",
    mutants.UnsweptIsDeadQueue: "test_schedule_finds_every_concurrency_mutant",
    # Missed until issue 22 (item 8): a batch's lost wakeup (the program batch_wakes_all).
    mutants.OneWakeSendBatchQueue: "test_schedule_finds_every_concurrency_mutant",
}


def test_every_mutant_in_the_catalogue_is_caught_and_documented() -> None:
    assert set(CAUGHT_BY) == set(MUTANTS.values())
    for name, cls in MUTANTS.items():
        doc = inspect.getdoc(cls) or ""
        assert doc.startswith("MUTANT"), f"{name}: the docstring must start with MUTANT"
        assert "The bug:" in doc and "Why the checks see it:" in doc, name
        assert issubclass(cls, Queue) and cls is not Queue


#: The most lines a mutant's broken step may have, docstring and comments included.
HOOK_LINES: Final = 15


def test_every_mutant_breaks_one_machine_step_or_wait_in_a_few_lines() -> None:
    """A mutant is the real queue with one small part replaced: one step of the reference
    machine (``impl.machine.Machine``: a step, or the effect its outcome carries) or one method
    of the driver's conditions (``impl.threaded.Conditions``, the waits), never a private
    method of the driver (the queue's constructor may wire the broken machine to public names
    of the queue), so when ``impl`` changes, the mutant changes with it."""
    for name, cls in MUTANTS.items():
        parts = broken_parts(cls)
        assert len(parts) == 1, f"{name} overrides {parts}, not one step"
        ((klass, attr),) = parts
        assert not attr.startswith("_"), f"{name} overrides {attr}, a private method"
        assert callable(getattr(Machine, attr, None)) or callable(
            getattr(Conditions, attr, None)
        ), f"{name} overrides {attr}, not a machine step or a wait"
        lines, _ = inspect.getsourcelines(getattr(klass, attr))
        assert len(lines) <= HOOK_LINES, f"{name}.{attr} has {len(lines)} lines"


def test_the_catalogue_imports_no_private_name_of_the_queue() -> None:
    tree = ast.parse(inspect.getsource(mutants))
    imported = [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("impl")
        for alias in node.names
    ]
    assert imported, "the catalogue imports nothing from impl?"
    assert [i for i in imported if i[1].startswith("_")] == []
