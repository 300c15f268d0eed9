"""Concurrent model-based tests: random concurrent programs on ``impl.Queue``, whose recorded
histories must be linearizable against the spec.

Hypothesis draws a *program*: a queue configuration, a sequential prefix run by the main thread,
then two to four concurrent suffixes, each run by its own thread, all released together by a
barrier, then an epilogue (a sweep and a drain) by the main thread again. Operations are the
contract's: send, non-blocking receive, delete / retry / change_visibility with receipts from
earlier deliveries (or forged ones: stale, future, attempt 0), cancel and sweep. The clock is an
``impl.FakeClock``: frozen, or moved by a recorded ``advance`` that one of the suffix threads
makes, racing the others (and the queue's own sweeper thread, which that advance may wake).

Every call goes through a :class:`~model_tests.linearizability.HistoryRecorder`, and the
history must be linearizable for ``check(..., sweeper=True)`` (the queue's background sweeper
may release a due message between any two operations). The checker's verdict is a value:
:class:`Unknown` (the budget ran out) fails the test like :class:`NotLinearizable` does, and the
sizes below keep every history small enough (at most 30 operations, at most 16 concurrent)
that the budget is never approached.

The batches (issue 14) get programs of their own (:func:`batch_programs`): the same shape,
with ``send_batch``, ``receive_batch``, ``delete_batch``, ``change_visibility_batch``, ``purge``
and delayed sends among the operations. Each batch is recorded as ONE call, so the checker must
find one point for the whole batch: a batch that let another thread in between its entries
would record a result that no point explains.

Select with ``pytest -k linearizab``.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spec
from impl import DuplicateIdError, Empty, FakeClock, Full, Message, Queue, Receipt
from impl import Entry as BatchEntry
from model_tests.linearizability import (
    Entry,
    HistoryRecorder,
    Linearizable,
    QueueAdapter,
    SweeperStep,
    Verdict,
    check,
    format_history,
)
from model_tests.mutants import DeleteByIdQueue
from model_tests.support import BOUND

#: The checker's budget in spec steps: far above what these histories need (a few thousand).
MAX_STEPS: Final = 2_000_000

IDS: Final = ("a", "b", "c")
#: A receive's visibility timeout: the queue's default, never, due at once, or a time.
VTS: Final = ("default", None, 0.0, 1.0, 2.0)
EXTENDS: Final = (0.0, 1.0, 3.0)
DTS: Final = (0.5, 1.0, 2.0)
#: Receipt references: below FORGED, the n-th delivery seen by the thread (mod how many);
#: from FORGED on, a forged receipt for (IDS[n % 3], n % 3).
FORGED: Final = 6

#: One operation of a program, as data: ``("send", id)``, ``("receive", vt)``,
#: ``("delete" | "retry", ref)``, ``("change_visibility", ref, t)``, ``("cancel", id)``,
#: ``("sweep",)``, ``("advance", dt)``; and the batches': ``("send", id, delay)``,
#: ``("send_batch", ids, delay)``, ``("receive_batch", n, vt)``, ``("delete_batch", refs)``,
#: ``("change_visibility_batch", ((ref, t), ...))``, ``("purge",)``.
Op: TypeAlias = tuple[Any, ...]


@dataclass(frozen=True)
class Program:
    """A queue configuration, a sequential prefix and 2 to 4 concurrent suffixes."""

    capacity: int | None
    visibility_timeout: float | None
    max_receives: int | None
    prefix: tuple[Op, ...]
    suffixes: tuple[tuple[Op, ...], ...]
    delay: float = 0.0

    def config(self) -> spec.Config:
        return spec.Config(capacity=self.capacity, max_receives=self.max_receives, delay=self.delay)


ids = st.sampled_from(IDS)
refs = st.integers(0, FORGED + 2)
ops: st.SearchStrategy[Op] = st.one_of(
    st.tuples(st.just("send"), ids),
    st.tuples(st.just("receive"), st.sampled_from(VTS)),
    st.tuples(st.sampled_from(("delete", "retry")), refs),
    st.tuples(st.just("change_visibility"), refs, st.sampled_from(EXTENDS)),
    st.tuples(st.just("cancel"), ids),
    st.tuples(st.just("sweep")),
)
#: A send's delay: none, or one an advance of the program may reach.
DELAYS: Final = (0.0, 1.0, 2.0)
#: The batch programs send more ids than :data:`IDS`, so that a batch is not always refused.
BATCH_IDS: Final = (*IDS, "d", "e", "f")
batch_ids = st.sampled_from(BATCH_IDS)
receive_batches: st.SearchStrategy[Op] = st.tuples(
    st.just("receive_batch"), st.sampled_from((1, 2, 3, 3)), st.sampled_from(VTS)
)
# Distinct ids: a repeated one is a ValueError, an argument error, not a queue's answer.
send_batches: st.SearchStrategy[Op] = st.tuples(
    st.just("send_batch"),
    st.lists(batch_ids, min_size=1, max_size=3, unique=True).map(tuple),
    st.sampled_from(DELAYS),
)
#: The batches' operations; sends and receives twice as often as the rest (a purge empties
#: the queue, so it is the rarest).
batch_ops: st.SearchStrategy[Op] = st.one_of(
    st.tuples(st.just("send"), batch_ids, st.sampled_from(DELAYS)),
    send_batches,
    send_batches,
    receive_batches,
    receive_batches,
    st.tuples(st.just("delete_batch"), st.lists(refs, min_size=1, max_size=3).map(tuple)),
    st.tuples(
        st.just("change_visibility_batch"),
        st.lists(st.tuples(refs, st.sampled_from(EXTENDS)), min_size=1, max_size=3).map(tuple),
    ),
    st.tuples(st.just("purge")),
)


@st.composite
def programs(draw: st.DrawFn) -> Program:
    """A program: the prefix sends one to three messages and receives some of them (so that
    suffixes have receipts to use, live or about to go stale), then does up to four random
    operations; in about two of three programs one suffix thread also advances the clock."""
    sent = draw(st.lists(ids, min_size=1, max_size=3, unique=True))
    prefix: list[Op] = [("send", id) for id in sent]
    prefix += [("receive", draw(st.sampled_from(VTS))) for _ in range(draw(st.integers(0, 3)))]
    prefix += draw(
        st.lists(st.one_of(ops, st.tuples(st.just("advance"), st.sampled_from(DTS))), max_size=4)
    )
    suffixes = draw(st.lists(st.lists(ops, min_size=1, max_size=3), min_size=2, max_size=4))
    if draw(st.integers(0, 2)):
        ticker = draw(st.integers(0, len(suffixes) - 1))
        at = draw(st.integers(0, len(suffixes[ticker])))
        suffixes[ticker].insert(at, ("advance", draw(st.sampled_from(DTS))))
    return Program(
        capacity=draw(st.none() | st.integers(1, 3)),
        visibility_timeout=draw(st.sampled_from((None, 1.0, 2.0))),
        max_receives=draw(st.none() | st.integers(1, 2)),
        prefix=tuple(prefix),
        suffixes=tuple(tuple(s) for s in suffixes),
    )


@st.composite
def batch_programs(draw: st.DrawFn) -> Program:
    """A program as :func:`programs` draws it, with the batches among its operations (about
    half of them), a queue default delay sometimes, and a capacity that a batch of three
    distinct ids fits (a batch larger than the capacity is a ValueError, not a rejection)."""
    mixed = st.one_of(ops, batch_ops, batch_ops)
    sent = draw(st.lists(batch_ids, min_size=2, max_size=3, unique=True))
    prefix: list[Op] = [("send_batch", tuple(sent), 0.0)]
    # Receipts for the suffixes, and messages left visible for their receive batches.
    prefix += [("receive_batch", 1, draw(st.sampled_from(VTS)))]
    prefix += draw(
        st.lists(st.one_of(mixed, st.tuples(st.just("advance"), st.sampled_from(DTS))), max_size=3)
    )
    suffixes = draw(st.lists(st.lists(mixed, min_size=1, max_size=3), min_size=2, max_size=4))
    if draw(st.integers(0, 2)):
        ticker = draw(st.integers(0, len(suffixes) - 1))
        at = draw(st.integers(0, len(suffixes[ticker])))
        suffixes[ticker].insert(at, ("advance", draw(st.sampled_from(DTS))))
    return Program(
        capacity=draw(st.none() | st.integers(3, 4)),
        visibility_timeout=draw(st.sampled_from((None, 1.0, 2.0))),
        max_receives=draw(st.none() | st.integers(1, 2)),
        prefix=tuple(prefix),
        suffixes=tuple(tuple(s) for s in suffixes),
        delay=draw(st.sampled_from((0.0, 0.0, 1.0))),
    )


@contextmanager
def fine_grained_switching() -> Iterator[None]:
    """Make the interpreter switch threads every microsecond instead of every 5 ms.

    A queue operation takes microseconds, so with the default interval a thread usually runs
    all its operations before the next one starts and nothing overlaps. This changes how often
    threads *may* interleave, not what any of them waits for: nothing here relies on timing.
    """
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


@dataclass
class Run:
    """What running a program produced."""

    history: list[Entry]
    verdict: Verdict
    #: (thread, op name, result) of every call that returned, for statistics.
    results: list[tuple[str, str, object]]


class _Runner:
    """Runs one program's operations on one queue, recording each call."""

    def __init__(self, q: Queue[str], clock: FakeClock, rec: HistoryRecorder) -> None:
        self.q = q
        self.clock = clock
        self.rec = rec
        self.prefix_deliveries: list[Message[str]] = []
        self.results: list[tuple[str, str, object]] = []
        self._lock = threading.Lock()

    def _receipt(self, ref: int, own: list[Message[str]]) -> Receipt:
        pool = self.prefix_deliveries + own
        if ref >= FORGED or not pool:
            return self.q.receipt(IDS[ref % len(IDS)], ref % 3)
        return pool[ref % len(pool)].receipt

    def run(self, thread: str, op: Op, own: list[Message[str]]) -> None:
        """Perform ``op`` as ``thread``; the queue's refusals (Full, Empty, a duplicate id) are
        results, recorded like any other; anything else is recorded too, and the checker
        reports it."""
        name, q, call = op[0], self.q, self.rec.call
        result: object = None
        try:
            if name == "send" and len(op) == 3:
                result = call(
                    thread, "send", q.send, op[1].upper(), id=op[1], delay=op[2], block=False
                )
            elif name == "send":
                result = call(thread, "send", q.send, op[1].upper(), id=op[1], block=False)
            elif name == "send_batch":
                entries = [BatchEntry(id.upper(), id=id, delay=op[2]) for id in op[1]]
                result = call(thread, name, q.send_batch, entries, block=False)
            elif name == "receive_batch":
                if op[2] == "default":
                    ms = call(thread, name, q.receive_batch, op[1], block=False)
                else:
                    ms = call(
                        thread, name, q.receive_batch, op[1], block=False, visibility_timeout=op[2]
                    )
                own.extend(ms)
                result = ms
            elif name == "delete_batch":
                receipts = [self._receipt(ref, own) for ref in op[1]]
                result = call(thread, name, q.delete_batch, receipts)
            elif name == "change_visibility_batch":
                changes = [(self._receipt(ref, own), t) for ref, t in op[1]]
                result = call(thread, name, q.change_visibility_batch, changes)
            elif name == "purge":
                result = call(thread, name, q.purge)
            elif name == "receive":
                if op[1] == "default":
                    m = call(thread, "receive", q.receive, block=False)
                else:
                    m = call(thread, "receive", q.receive, block=False, visibility_timeout=op[1])
                own.append(m)
                result = m
            elif name in ("delete", "retry"):
                fn = q.delete if name == "delete" else q.retry
                result = call(thread, name, fn, self._receipt(op[1], own))
            elif name == "change_visibility":
                r = self._receipt(op[1], own)
                result = call(thread, name, q.change_visibility, r, op[2])
            elif name == "cancel":
                result = call(thread, "cancel", q.cancel, op[1])
            elif name == "sweep":
                call(thread, "sweep", q.sweep)
            elif name == "advance":
                call(thread, "advance", self.clock.advance, op[1])
            else:
                raise ValueError(f"unknown op {op!r}")
        except (Full, Empty, DuplicateIdError):
            result = False
        except Exception as e:  # recorded as a Raised result: the checker points at it
            result = e
        with self._lock:
            self.results.append((thread, name, result))


def run_program(program: Program, queue_class: type[Queue[str]] = Queue) -> Run:
    """Run ``program`` on a fresh ``queue_class`` and check its history (budget: MAX_STEPS)."""
    clock = FakeClock()
    q = queue_class(
        capacity=program.capacity,
        visibility_timeout=program.visibility_timeout,
        max_receives=program.max_receives,
        delay=program.delay,
        clock=clock,
    )
    rec = HistoryRecorder(QueueAdapter(visibility_timeout=program.visibility_timeout))
    runner = _Runner(q, clock, rec)
    try:
        for op in program.prefix:
            runner.run("main", op, runner.prefix_deliveries)
        start = threading.Barrier(len(program.suffixes), timeout=BOUND)
        errors: list[BaseException] = []

        def suffix(name: str, suffix_ops: tuple[Op, ...]) -> Callable[[], None]:
            def body() -> None:
                try:
                    start.wait()
                    own: list[Message[str]] = []
                    for op in suffix_ops:
                        runner.run(name, op, own)
                except BaseException as e:
                    errors.append(e)

            return body

        threads = [
            threading.Thread(target=suffix(f"t{i + 1}", s), name=f"t{i + 1}", daemon=True)
            for i, s in enumerate(program.suffixes)
        ]
        with fine_grained_switching():
            for t in threads:
                t.start()
            for t in threads:
                t.join(BOUND)
                assert not t.is_alive(), f"{t.name} did not finish within {BOUND} s"
        assert not errors, errors
        # Epilogue: apply what is due, then take every visible message, so a message lost or
        # duplicated by the concurrent phase shows up in the results.
        runner.run("main", ("sweep",), [])
        for _ in range(len(BATCH_IDS) + 1):
            runner.run("main", ("receive", None), [])
    finally:
        q.close()
    history = rec.history()
    verdict = check(history, program.config(), sweeper=True, max_steps=MAX_STEPS)
    return Run(history, verdict, runner.results)


CONCURRENT: Final = settings(
    max_examples=150,
    derandomize=True,  # the same programs every run; any interleaving of them must pass
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@CONCURRENT
@given(programs())
def test_concurrent_histories_are_linearizable(program: Program) -> None:
    run = run_program(program)
    assert isinstance(run.verdict, Linearizable), format_history(run.history, run.verdict)


def test_linearizability_runs_reach_the_interesting_cases() -> None:
    """The generator must produce what the test above claims to cover."""
    seen: Counter[str] = Counter()

    @settings(CONCURRENT, max_examples=40)
    @given(programs())
    def collect(program: Program) -> None:
        run = run_program(program)
        assert isinstance(run.verdict, Linearizable)
        threads = len(program.suffixes)
        seen[f"{threads} threads"] += 1
        for thread, name, result in run.results:
            if thread == "main":
                continue
            if name == "advance":
                seen["advance by a thread"] += 1
            if name in ("delete", "retry", "change_visibility") and result is True:
                seen["receipt acted concurrently"] += 1
            if name == "receive" and isinstance(result, Message) and result.attempt > 1:
                seen["concurrent redelivery"] += 1
        if any(isinstance(s, SweeperStep) for s in run.verdict.order):
            seen["background sweeper release"] += 1
        calls = [(e.call, e.ret) for e in run.history if e.thread != "main" and e.ret is not None]
        if any(a[0] < b[1] and b[0] < a[1] for a in calls for b in calls if a is not b):
            seen["overlapping calls"] += 1

    collect()
    for what in (
        "2 threads",
        "3 threads",
        "4 threads",
        "advance by a thread",
        "receipt acted concurrently",
        "concurrent redelivery",
        "background sweeper release",
        "overlapping calls",
    ):
        assert seen[what] >= 1, f"never: {what!r} in {dict(seen)}"


@settings(CONCURRENT, max_examples=100)
@given(batch_programs())
def test_concurrent_histories_with_batches_are_linearizable(program: Program) -> None:
    run = run_program(program)
    assert isinstance(run.verdict, Linearizable), format_history(run.history, run.verdict)


def test_linearizability_runs_with_batches_reach_the_interesting_cases() -> None:
    """The batch programs do race batches against other calls, and the batches do act."""
    seen: Counter[str] = Counter()

    @settings(CONCURRENT, max_examples=80)
    @given(batch_programs())
    def collect(program: Program) -> None:
        run = run_program(program)
        assert isinstance(run.verdict, Linearizable)
        for thread, name, result in run.results:
            if thread == "main":
                continue
            if name == "send_batch":
                seen[f"send_batch {'accepted' if isinstance(result, list) else 'rejected'}"] += 1
            if name == "receive_batch" and isinstance(result, list) and len(result) > 1:
                seen["receive_batch of several"] += 1
            if name in ("delete_batch", "change_visibility_batch") and isinstance(result, list):
                seen[f"{name} acted"] += any(result)
            if name == "purge" and isinstance(result, int) and result > 0:
                seen["purge"] += 1
        batches = {n for n in ("send_batch", "receive_batch", "delete_batch", "purge")}
        calls = [e for e in run.history if e.thread != "main" and e.ret is not None]
        for a in calls:
            for b in calls:
                assert a.ret is not None and b.ret is not None
                overlap = a is not b and a.call < b.ret and b.call < a.ret
                if overlap and a.op.name in batches and b.op.name not in batches:
                    seen["a batch overlapping a single call"] += 1
        if any(isinstance(s, SweeperStep) for s in run.verdict.order):
            seen["background sweeper step"] += 1

    wanted = (
        "send_batch accepted",
        "send_batch rejected",
        "receive_batch of several",
        "delete_batch acted",
        "change_visibility_batch acted",
        "purge",
        "a batch overlapping a single call",
        "background sweeper step",
    )
    # Which calls overlap is the threads' scheduling, not the program's: on a loaded machine one
    # round of 80 programs may see none. Up to three rounds, stopping once every case is seen.
    for _ in range(3):
        collect()
        if all(seen[what] for what in wanted):
            break
    for what in wanted:
        assert seen[what] >= 1, f"never: {what!r} in {dict(seen)}"


def test_linearizability_of_a_receive_batch_racing_receives() -> None:
    """Hand-written: one thread takes a batch of two while two others receive one each, from
    three visible messages; whatever the interleaving, the batch's two are consecutive in FIFO
    order (a, b or b, c) and the three deliveries are the three messages once each."""
    program = Program(
        capacity=None,
        visibility_timeout=None,
        max_receives=None,
        prefix=(("send_batch", ("a", "b", "c"), 0.0),),
        suffixes=(
            (("receive_batch", 2, "default"),),
            (("receive", "default"),),
            (("receive", "default"),),
        ),
    )
    run = run_program(program)
    assert isinstance(run.verdict, Linearizable), format_history(run.history, run.verdict)
    (batch,) = [r for t, n, r in run.results if n == "receive_batch"]
    assert isinstance(batch, list)
    got = [m.id for m in batch]
    # Before both receives, between them, or after both: never a split like a, c.
    assert got in (["a", "b"], ["b", "c"], ["c"]), got
    singles = [r.id for t, n, r in run.results if isinstance(r, Message) and t != "main"]
    assert sorted(got + singles) == ["a", "b", "c"]


@pytest.mark.parametrize("threads", [2, 4])
def test_linearizability_of_a_receive_race_for_one_message(threads: int) -> None:
    """Hand-written: every thread receives the one message at once; exactly one gets it."""
    program = Program(
        capacity=None,
        visibility_timeout=None,
        max_receives=None,
        prefix=(("send", "a"),),
        suffixes=tuple((("receive", "default"),) for _ in range(threads)),
    )
    run = run_program(program)
    assert isinstance(run.verdict, Linearizable), format_history(run.history, run.verdict)
    got = [r for t, n, r in run.results if t != "main" and n == "receive"]
    assert sum(isinstance(r, Message) for r in got) == 1


def test_linearizability_of_a_late_delete_racing_an_advance() -> None:
    """Hand-written: the contract's race: a delete after the deadline against the expiry.

    Either order is correct: the delete wins (True; nothing to redeliver) or the sweep wins
    (False; the epilogue's drain redelivers ``a`` as attempt 2). The checker accepts whichever
    happened and only that one.
    """
    program = Program(
        capacity=None,
        visibility_timeout=1.0,
        max_receives=None,
        prefix=(("send", "a"), ("receive", "default")),
        suffixes=((("delete", 0),), (("advance", 1.0), ("sweep",))),
    )
    run = run_program(program)
    assert isinstance(run.verdict, Linearizable), format_history(run.history, run.verdict)
    deleted = [r for t, n, r in run.results if n == "delete"] == [True]
    drained = [
        (r.id, r.attempt) for t, n, r in run.results if t == "main" and isinstance(r, Message)
    ][1:]  # the first one is the prefix's delivery
    assert drained == ([] if deleted else [("a", 2)])


def test_linearizability_check_of_concurrent_runs_catches_a_mutant() -> None:
    """The concurrent test is not vacuous: it fails on a queue that deletes by id.

    The program is fixed rather than drawn, so the verdict does not depend on how the threads
    happen to interleave (a random search for it passed or failed with the machine's load):
    the prefix makes delivery 1 of ``a`` stale by retrying it and receiving ``a`` again; then
    one thread deletes with the stale receipt while another sends. A delete by id succeeds,
    which no order of the two threads explains; the real queue refuses it."""
    program = Program(
        capacity=None,
        visibility_timeout=None,
        max_receives=None,
        prefix=(("send", "a"), ("receive", None), ("retry", 0), ("receive", None)),
        suffixes=((("delete", 0),), (("send", "b"),)),
    )
    caught = run_program(program, DeleteByIdQueue)
    assert not isinstance(caught.verdict, Linearizable)
    assert "NOT LINEARIZABLE" in format_history(caught.history, caught.verdict)
    real = run_program(program)
    assert isinstance(real.verdict, Linearizable), format_history(real.history, real.verdict)
    assert ("t1", "delete", False) in real.results
