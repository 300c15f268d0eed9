"""Tests of the linearizability checker (model_tests/linearizability.py).

Hand-made histories with known answers (a batch, issue 14, is one operation: interleaved with
single calls it is checked, split it is rejected), randomized histories whose answer is known by
construction (a real sequential run of the spec, its intervals widened), an independent
brute-force checker over all orders for small histories, and the recorder driven by real
threads against a small lock-protected spec-backed queue.
"""

from __future__ import annotations

import itertools
import queue
import random
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace

import pytest

from impl import Empty as ImplEmpty
from impl import Entry as ImplEntry
from impl import FakeClock
from impl import Full as ImplFull
from impl import Queue as ImplQueue
from model_tests.linearizability import (
    Call,
    Entry,
    HistoryRecorder,
    Linearizable,
    Mismatch,
    ModelState,
    NotLinearizable,
    Operation,
    QueueAdapter,
    Raised,
    SweeperStep,
    Unknown,
    apply,
    check,
    format_history,
    initial_state,
    result_matches,
    sequential,
)
from spec import Config, State
from spec import receive as spec_receive
from spec import send as spec_send
from spec.transitions import due, release


def E(
    thread: str, call: float, ret: float | None, name: str, *args: object, result: object = None
) -> Entry:
    return Entry(thread, Operation(name, tuple(args), result), call, ret)


def replays(history: Sequence[Entry], order: Sequence[object], start: ModelState) -> bool:
    """An independent check of a witness: every completed entry once, real time, same results."""
    placed = [s for s in order if isinstance(s, Entry)]
    completed = [e for e in history if e.ret is not None]
    if len(set(map(id, placed))) != len(placed) or not all(e in placed for e in completed):
        return False
    for i, a in enumerate(placed):
        for b in placed[:i]:
            if a.ret is not None and a.ret < b.call:  # a returned before b was called
                return False
    state = start
    for s in order:
        if isinstance(s, SweeperStep):
            if s.id not in due(state.queue, state.now):
                return False
            state = ModelState(release(state.queue, s.id), state.now)
            continue
        assert isinstance(s, Entry)
        state, result = apply(state, s.op)
        if s.ret is not None and not result_matches(s.op, result):
            return False
    return True


# ---------------------------------------------------------------------------------------------
# Hand-made histories
# ---------------------------------------------------------------------------------------------


def two_sends() -> list[Entry]:
    return [
        E("p", 1, 2, "send", "a", "x", result=True),
        E("p", 3, 4, "send", "b", "y", result=True),
    ]


@pytest.mark.parametrize("first", [("a", "x", 1), ("b", "y", 1)])
def test_linearizable_overlapping_receives_in_either_order(first: tuple[str, str, int]) -> None:
    second = ("b", "y", 1) if first[0] == "a" else ("a", "x", 1)
    h = [
        *two_sends(),
        E("t1", 5, 8, "receive", 30.0, result=first),
        E("t2", 6, 7, "receive", 30.0, result=second),
    ]
    v = check(h)
    assert isinstance(v, Linearizable), format_history(h, v)
    assert replays(h, v.order, initial_state())
    receives = [s for s in v.order if isinstance(s, Entry) and s.op.name == "receive"]
    assert receives[0].op.result == ("a", "x", 1)  # the head goes first, whoever called first


def test_not_linearizable_two_receives_of_the_same_attempt() -> None:
    h = [
        *two_sends(),
        E("t1", 5, 8, "receive", 30.0, result=("a", "x", 1)),
        E("t2", 6, 7, "receive", 30.0, result=("a", "x", 1)),
    ]
    v = check(h)
    assert isinstance(v, NotLinearizable), format_history(h, v)
    # When t2 returns (at 7) its result is fine: t1 is still running and may not have taken
    # effect yet. Only t1's return (at 8) makes the history unexplainable.
    assert v.culprit == h[2]
    assert v.window == tuple(h)


def test_not_linearizable_receive_that_skips_the_visible_head() -> None:
    h = [*two_sends(), E("t1", 5, 6, "receive", 30.0, result=("b", "y", 1))]
    v = check(h)
    assert isinstance(v, NotLinearizable)
    assert v.culprit == h[2]
    assert v.longest == (h[0], h[1])
    assert v.stuck == (Mismatch(h[2], ("a", "x", 1)),)
    # Printed for a person (the scheduler's reports use it): culprit, agreed order, mismatch.
    assert str(v).splitlines() == [
        "not linearizable at t1: receive(30.0) -> ('b', 'y', 1)",
        "the spec agrees with this order:",
        f"  1. {h[0]}",
        f"  2. {h[1]}",
        "then no operation can go next:",
        "  t1: receive(30.0) -> ('b', 'y', 1), where the spec gives ('a', 'x', 1)",
    ]


def delivered_then_due() -> list[Entry]:
    """a is sent, received with visibility timeout 1, and the clock moves past its deadline."""
    return [
        E("p", 1, 2, "send", "a", "x", result=True),
        E("c", 3, 4, "receive", 1.0, result=("a", "x", 1)),
        E("main", 5, 6, "advance", 1.0),
    ]


@pytest.mark.parametrize(
    ("deleted", "released", "linearizable"),
    [
        (True, None, True),  # delete won; the sweep result was not observed
        (False, None, True),  # the sweep won
        (True, (), True),  # delete won, so the sweep found nothing due
        (False, ("a",), True),  # the sweep released a, then the delete was stale
        (True, ("a",), False),  # both cannot have won
        (False, (), False),  # and one of them must have
    ],
)
def test_linearizability_of_a_delete_overlapping_an_expire(
    deleted: bool, released: tuple[str, ...] | None, linearizable: bool
) -> None:
    h = [
        *delivered_then_due(),
        E("c", 7, 10, "delete", "a", 1, result=deleted),
        E("sweeper", 8, 9, "expire", result=released),
    ]
    v = check(h)
    assert isinstance(v, Linearizable if linearizable else NotLinearizable), format_history(h, v)
    if isinstance(v, Linearizable):
        assert replays(h, v.order, initial_state())


def test_not_linearizable_delete_that_wins_after_the_sweep_returned() -> None:
    h = [
        *delivered_then_due(),
        E("sweeper", 7, 8, "expire", result=None),
        E("c", 9, 10, "delete", "a", 1, result=True),
    ]
    v = check(h)
    assert isinstance(v, NotLinearizable)
    assert v.culprit == h[4]
    assert v.stuck == (Mismatch(h[4], False),)


def test_linearizability_with_a_background_sweeper() -> None:
    # Nobody recorded a sweep, yet the delete lost: only a background sweeper explains that.
    h = [*delivered_then_due(), E("c", 7, 8, "delete", "a", 1, result=False)]
    assert isinstance(check(h), NotLinearizable)
    v = check(h, sweeper=True)
    assert isinstance(v, Linearizable)
    assert SweeperStep("a") in v.order
    assert replays(h, v.order, initial_state())
    # A sweeper releases only what is due: before the clock moved, the delete cannot lose.
    early = [*delivered_then_due()[:2], E("c", 5, 6, "delete", "a", 1, result=False)]
    assert isinstance(check(early, sweeper=True), NotLinearizable)


def test_not_linearizable_stale_delete_that_returned_true() -> None:
    h = [
        *delivered_then_due(),
        E("sweeper", 7, 8, "expire", result=("a",)),
        E("c2", 9, 10, "receive", 1.0, result=("a", "x", 2)),
        E("c", 11, 12, "delete", "a", 1, result=True),
    ]
    v = check(h)
    assert isinstance(v, NotLinearizable)
    assert v.culprit == h[5]
    assert v.longest == tuple(h[:5])
    # The live receipt is attempt 2; the same delete with it is explained.
    fixed = [*h[:5], E("c", 11, 12, "delete", "a", 2, result=True)]
    assert isinstance(check(fixed), Linearizable)


def test_linearizable_receive_overlapping_the_send_it_returns() -> None:
    h = [
        E("c", 1, 4, "receive", None, result=("a", "x", 1)),
        E("p", 2, 3, "send", "a", "x", result=True),
    ]
    v = check(h)
    assert isinstance(v, Linearizable)
    assert v.order == (h[1], h[0])


def test_linearizability_smallest_failing_window_is_a_cut_by_return() -> None:
    h = [
        E("p", 1, 2, "send", "a", "x", result=True),
        E("slow", 3, 20, "send", "b", "y", result=True),  # still running when the bug shows
        E("c", 4, 5, "receive", 30.0, result=("a", "x", 1)),
        E("c", 6, 7, "cancel", "a", result=True),  # wrong: a is in flight, cancel would work...
        E("c", 8, 9, "delete", "a", 1, result=True),  # ...so this delete cannot succeed
        E("c", 10, 11, "send", "c", "z", result=True),
        E("c", 12, 13, "receive", 30.0, result=("b", "y", 1)),
    ]
    v = check(h)
    assert isinstance(v, NotLinearizable), format_history(h, v)
    assert v.culprit == h[4]
    assert v.window == tuple(h[:5])  # the calls before the delete returned, incl. the slow send
    assert v.stuck == (Mismatch(h[4], False),) or Mismatch(h[4], False) in v.stuck
    # Minimality, checked independently: up to just before the culprit returned it is fine.
    before = [*h[:4], replace(h[4], ret=None), replace(h[1], ret=None)]
    assert isinstance(check(before), Linearizable)
    text = format_history(h, v)
    lines = text.splitlines()
    assert any(line.startswith("!    #5") for line in lines), text
    assert any(line.startswith("~    #2") for line in lines), text
    assert any(line.startswith("     #6") for line in lines), text  # outside the window


def test_linearizability_pending_operations_may_or_may_not_take_effect() -> None:
    base = [E("p", 1, 2, "send", "a", "x", result=True), E("p", 3, None, "cancel", "a")]
    took_effect = [*base, E("c", 4, 5, "receive", 30.0, result=None)]
    did_not = [*base, E("c", 4, 5, "receive", 30.0, result=("a", "x", 1))]
    assert isinstance(check(took_effect), Linearizable)
    assert isinstance(check(did_not), Linearizable)


def test_linearizability_budget_gives_unknown_on_a_pathological_history() -> None:
    # Twelve fully overlapping sends, then a receive of a message nobody sent: every order of
    # the sends is a different state, so proving failure means trying them all.
    ids = [f"m{i}" for i in range(12)]
    h = [E(f"t{i}", i, 100, "send", m, m, result=True) for i, m in enumerate(ids)]
    h.append(E("c", 101, 102, "receive", None, result=("zz", "zz", 1)))
    v = check(h, max_steps=2_000)
    assert isinstance(v, Unknown)
    assert "step budget" in v.reason
    v = check(h, max_steps=None, max_seconds=0.05)
    assert isinstance(v, Unknown)
    assert "time budget" in v.reason
    assert "UNKNOWN" in format_history(h, v)


def test_linearizability_memo_makes_commuting_overlaps_cheap() -> None:
    # Ten overlapping calls that change nothing, then an impossible receive. Without Lowe's
    # memo the search tries all 10! orders of the ten; with it, each of the 2**10 subsets once.
    h = [E(f"t{i}", i, 100, "cancel", "zz", result=False) for i in range(10)]
    h.append(E("c", 101, 102, "receive", None, result=("zz", "zz", 1)))
    v = check(h, max_steps=50_000)
    assert isinstance(v, NotLinearizable)
    assert v.culprit == h[10]
    assert len(v.longest) == 10


def test_linearizability_check_rejects_bad_histories() -> None:
    with pytest.raises(ValueError, match=r"history\[0\].*op.name"):
        check([E("t", 1, 2, "frobnicate", result=None)])
    with pytest.raises(TypeError, match=r"history\[0\].*args of send"):
        check([E("t", 1, 2, "send", "a", result=True)])
    with pytest.raises(ValueError, match=r"history\[1\].*before call"):
        check([E("t", 1, 2, "cancel", "a", result=False), E("t", 5, 4, "cancel", "a")])
    with pytest.raises(TypeError, match="history"):
        check(["not an entry"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="max_steps"):
        check([], max_steps=-1)


def test_linearizability_uses_the_given_config_and_clock() -> None:
    h = [
        E("p", 1, 2, "send", "a", "x", result=True),
        E("p", 3, 4, "send", "b", "y", result=False),  # capacity 1
        E("c", 5, 6, "receive", 2.0, result=("a", "x", 1)),
        E("c", 7, 8, "change_visibility", "a", 1, 1.0, result=True),
        E("m", 9, 10, "advance", 1.0),
        E("s", 11, 12, "expire", result=("a",)),  # deadline 10 + 1 from now, not 2 + 1 added
        E("c", 13, 14, "retry", "a", 1, result=False),
    ]
    assert isinstance(check(h, Config(capacity=1), start=None), Linearizable)
    assert isinstance(check(h), NotLinearizable)  # unbounded: the second send is accepted
    late = ModelState(queue=State(config=Config(capacity=1)), now=10.0)
    assert isinstance(check(h, start=late), Linearizable)


# ---------------------------------------------------------------------------------------------
# Randomized: real runs of the spec
# ---------------------------------------------------------------------------------------------


def spec_run(
    rng: random.Random, n: int, silent_sweeps: bool = False
) -> tuple[list[Operation], Config]:
    """``n`` operations really run on the spec, with their true results, in order.

    With ``silent_sweeps``, due messages are sometimes released between operations without a
    recorded operation, as a background sweeper does.
    """
    config = Config(capacity=rng.choice([None, 2, 3]), max_receives=rng.choice([None, 2]))
    state = initial_state(config)
    ids = ["a", "b", "c", "d"]
    receipts: list[tuple[str, int]] = [("a", 1)]
    ops: list[Operation] = []
    while len(ops) < n:
        if silent_sweeps and rng.random() < 0.3:
            d = due(state.queue, state.now)
            if d:
                state = ModelState(release(state.queue, d[0]), state.now)
        kind = rng.choice(
            [
                "send",
                "send",
                "receive",
                "receive",
                "delete",
                "retry",
                "change_visibility",
                "cancel",
                "advance",
                "expire",
            ]
        )
        r = rng.choice(receipts)
        args: tuple[object, ...] = {
            "send": (rng.choice(ids), rng.choice(["x", "y"])),
            "receive": (rng.choice([None, 1.0, 2.0]),),
            "delete": r,
            "retry": r,
            "change_visibility": (*r, rng.choice([0.0, 1.0, 3.0])),
            "cancel": (rng.choice(ids),),
            "advance": (1.0,),
            "expire": (),
        }[kind]
        state, result = apply(state, Operation(kind, args))
        if kind == "receive" and isinstance(result, tuple):
            receipts.append((result[0], result[2]))
        if kind == "expire" and rng.random() < 0.5:
            result = None  # not observed, as with Queue.sweep
        ops.append(Operation(kind, args, result))
    return ops, config


def widened(rng: random.Random, ops: Sequence[Operation], slack: int) -> list[Entry]:
    """Entries whose intervals contain their true moment 10*i, stretched by up to ``slack``."""
    out = []
    for i, op in enumerate(ops):
        p = 10 * i + 100
        out.append(
            Entry(f"t{rng.randrange(3)}", op, p - rng.randint(0, slack), p + rng.randint(0, slack))
        )
    return out


def test_linearizability_of_real_spec_runs_randomized() -> None:
    rng = random.Random(1234)
    for _ in range(150):
        ops, config = spec_run(rng, rng.randint(1, 14))
        h = widened(rng, ops, slack=rng.choice([0, 6, 15, 30]))
        v = check(h, config)
        assert isinstance(v, Linearizable), format_history(h, v)
        assert replays(h, v.order, initial_state(config))


def test_linearizability_with_background_sweeps_randomized() -> None:
    rng = random.Random(99)
    for _ in range(100):
        ops, config = spec_run(rng, rng.randint(1, 12), silent_sweeps=True)
        h = widened(rng, ops, slack=rng.choice([0, 15]))
        v = check(h, config, sweeper=True)
        assert isinstance(v, Linearizable), format_history(h, v)
        assert replays(h, v.order, initial_state(config))


def flipped(result: object) -> object:
    """A different result of the same kind."""
    if isinstance(result, bool):
        return not result
    if result is None:
        return ("a", "x", 1)
    assert isinstance(result, tuple) and len(result) == 3
    return (result[0], result[1], result[2] + 1)


def test_not_linearizable_sequential_run_with_one_result_flipped_randomized() -> None:
    # Without overlap there is one order only, and the spec is deterministic: any other result
    # is impossible, and the window ends exactly at the flipped operation.
    rng = random.Random(7)
    tried = 0
    while tried < 150:
        ops, config = spec_run(rng, rng.randint(1, 14))
        observed = [i for i, op in enumerate(ops) if op.name not in ("expire", "advance")]
        if not observed:
            continue
        tried += 1
        k = rng.choice(observed)
        ops[k] = replace(ops[k], result=flipped(ops[k].result))
        h = sequential((f"t{i % 2}", op) for i, op in enumerate(ops))
        v = check(h, config)
        assert isinstance(v, NotLinearizable), format_history(h, v)
        assert v.culprit == h[k]
        assert v.window == tuple(h[: k + 1])
        assert v.longest == tuple(h[:k])
        assert [m.entry for m in v.stuck] == [h[k]]


def brute_force(history: Sequence[Entry], config: Config) -> bool:
    """Linearizable by trying every order: the definition, with no search cleverness."""
    for order in itertools.permutations(history):
        if any(
            b.ret is not None and a.ret is not None and b.ret < a.call
            for i, a in enumerate(order)
            for b in order[i + 1 :]
        ):
            continue
        state = initial_state(config)
        for e in order:
            state, result = apply(state, e.op)
            if not result_matches(e.op, result):
                break
        else:
            return True
    return False


def test_linearizability_agrees_with_brute_force_randomized() -> None:
    rng = random.Random(2024)
    outcomes = {True: 0, False: 0}
    for _ in range(250):
        ops, config = spec_run(rng, rng.randint(2, 6))
        h = widened(rng, ops, slack=rng.choice([6, 15, 40]))
        if rng.random() < 0.6:
            k = rng.randrange(len(h))
            if h[k].op.name not in ("expire", "advance"):
                h[k] = replace(h[k], op=replace(h[k].op, result=flipped(h[k].op.result)))
        expected = brute_force(h, config)
        outcomes[expected] += 1
        v = check(h, config)
        assert isinstance(v, Linearizable if expected else NotLinearizable), format_history(h, v)
        if isinstance(v, NotLinearizable):
            # The window fails on its own, and cutting just before the culprit returned passes.
            cut = v.culprit.ret
            assert cut is not None
            inside = [
                e if e.ret is not None and e.ret <= cut else replace(e, ret=None) for e in v.window
            ]
            assert isinstance(check(inside, config), NotLinearizable)
            before = [
                replace(e, ret=None) if e.ret is not None and e.ret >= cut else e for e in v.window
            ]
            assert isinstance(check(before, config), Linearizable)
    assert outcomes[True] > 50 and outcomes[False] > 50  # both answers were really exercised


# ---------------------------------------------------------------------------------------------
# The recorder, with real threads
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FakeReceipt:
    id: str
    attempt: int


@dataclass(frozen=True)
class FakeMessage:
    id: str
    body: str
    attempt: int
    receipt: FakeReceipt


class SpecQueue:
    """A tiny impl.Queue look-alike: the spec under one lock, on a frozen clock."""

    def __init__(self, capacity: int | None = None, *, stale_attempts: bool = False) -> None:
        self.state = initial_state(Config(capacity=capacity))
        self.lock = threading.Lock()
        self.stale_attempts = stale_attempts  # a deliberate bug: every delivery says attempt 1

    def send(self, body: str, *, id: str) -> str:
        with self.lock:
            q, ok = spec_send(self.state.queue, id, body)
            if not ok:
                raise queue.Full
            self.state = ModelState(q, self.state.now)
            return id

    def receive(self, *, visibility_timeout: float | None = 30.0) -> FakeMessage:
        with self.lock:
            q, d = spec_receive(self.state.queue, self.state.now, visibility_timeout)
            if d is None:
                raise queue.Empty
            self.state = ModelState(q, self.state.now)
            attempt = 1 if self.stale_attempts else d.attempt
            return FakeMessage(d.id, d.body, attempt, FakeReceipt(d.id, d.attempt))

    def _op(self, name: str, *args: object) -> object:
        with self.lock:
            self.state, result = apply(self.state, Operation(name, args))
            return result

    def delete(self, r: FakeReceipt) -> object:
        return self._op("delete", r.id, r.attempt)

    def retry(self, r: FakeReceipt) -> object:
        return self._op("retry", r.id, r.attempt)

    def sweep(self) -> None:
        self._op("expire")


def run_workers(q: SpecQueue, rec: HistoryRecorder, workers: int = 4, rounds: int = 6) -> None:
    gate = threading.Barrier(workers, timeout=10)
    errors: list[BaseException] = []

    def work(name: str) -> None:
        try:
            gate.wait()
            for j in range(rounds):
                rec.call(name, "send", q.send, f"{name}-{j}", id=f"{name}-{j}")
                try:
                    m = rec.call(name, "receive", q.receive)
                except queue.Empty:
                    continue
                if j % 2:
                    rec.call(name, "retry", q.retry, m.receipt)
                else:
                    rec.call(name, "delete", q.delete, m.receipt)
                rec.call(name, "sweep", q.sweep)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
        assert not t.is_alive()
    assert not errors, errors


def test_linearizable_history_recorded_from_threads() -> None:
    q, rec = SpecQueue(), HistoryRecorder()
    run_workers(q, rec)
    h = rec.history()
    stamps = [s for e in h for s in (e.call, e.ret)]
    assert None not in stamps and len(set(stamps)) == len(stamps)
    assert all(e.ret is not None and e.call < e.ret for e in h)
    assert [e.call for e in h] == sorted(e.call for e in h)
    v = check(h)
    assert isinstance(v, Linearizable), format_history(h, v)
    assert replays(h, v.order, initial_state())


def test_not_linearizable_history_recorded_from_a_buggy_queue() -> None:
    q, rec = SpecQueue(stale_attempts=True), HistoryRecorder()
    rec.call("p", "send", q.send, "x", id="a")
    m1 = rec.call("c", "receive", q.receive)
    rec.call("c", "retry", q.retry, m1.receipt)
    m2 = rec.call("c", "receive", q.receive)
    assert m2.attempt == 1  # the bug
    v = check(rec.history())
    assert isinstance(v, NotLinearizable)
    assert v.culprit.op == Operation("receive", (30.0,), ("a", "x", 1))
    assert v.stuck == (Mismatch(v.culprit, ("a", "x", 2)),)


def test_linearizability_recorder_maps_exceptions_and_reraises() -> None:
    q, rec = SpecQueue(capacity=1), HistoryRecorder(QueueAdapter(visibility_timeout=5.0))
    rec.call("p", "send", q.send, "x", id="a")
    with pytest.raises(queue.Full):
        rec.call("p", "send", q.send, "y", id="b")
    m = rec.call("c", "receive", q.receive)
    with pytest.raises(queue.Empty):
        rec.call("c", "receive", q.receive)
    with pytest.raises(ZeroDivisionError):
        rec.call("c", "delete", lambda r: 1 // 0, m.receipt)
    h = rec.history()
    assert [e.op for e in h] == [
        Operation("send", ("a", "x"), True),
        Operation("send", ("b", "y"), False),
        Operation("receive", (5.0,), ("a", "x", 1)),
        Operation("receive", (5.0,), None),
        Operation(
            "delete", ("a", 1), Raised("ZeroDivisionError", "integer division or modulo by zero")
        ),
    ]
    v = check(h, Config(capacity=1))
    assert isinstance(v, NotLinearizable)  # the delete raised: no order explains that
    assert v.culprit == h[4]


def test_linearizability_recorder_keeps_unreturned_calls_pending() -> None:
    rec = HistoryRecorder()
    started, release_call = threading.Event(), threading.Event()

    def blocked_cancel(id: str) -> bool:
        started.set()
        assert release_call.wait(10)
        return True

    t = threading.Thread(target=rec.call, args=("t", "cancel", blocked_cancel, "a"))
    t.start()
    try:
        assert started.wait(10)
        h = rec.history()
        assert h == [Entry("t", Operation("cancel", ("a",), None), 1, None)]
        assert isinstance(check(h), Linearizable)  # nothing returned yet: nothing to explain
    finally:
        release_call.set()
        t.join(10)
    assert not t.is_alive()
    assert rec.history() == [Entry("t", Operation("cancel", ("a",), True), 1, 2)]


def test_linearizability_adapter_understands_the_job_queue_api() -> None:
    @dataclass(frozen=True)
    class Job:
        id: str
        payload: str
        attempt: int

    adapter = QueueAdapter(visibility_timeout=None)
    assert adapter(Call("t", "send", ("a", "x"), {}, 1, 2, True)) == Operation(
        "send", ("a", "x"), True
    )
    reserve = Call("t", "receive", (), {}, 3, 4, Job("a", "x", 1))
    assert adapter(reserve) == Operation("receive", (None,), ("a", "x", 1))
    ack = Call("t", "delete", ("a", 1), {}, 5, 6, True)
    assert adapter(ack) == Operation("delete", ("a", 1), True)
    with pytest.raises(ValueError, match="call name"):
        adapter(Call("t", "frobnicate", (), {}, 7, 8))


def test_linearizability_format_history_draws_threads_and_verdict() -> None:
    h = [
        E("producer", 1, 2, "send", "a", "x", result=True),
        E("c1", 3, 6, "receive", 30.0, result=("a", "x", 1)),
        E("c2", 4, 5, "receive", 30.0, result=("a", "x", 1)),
        E("c3", 4.5, None, "cancel", "a"),
    ]
    v = check(h)
    assert isinstance(v, NotLinearizable)
    text = format_history(h, v)
    rows = text.splitlines()
    assert rows[1].startswith("producer |") and "[#1" in rows[1]
    assert rows[2].startswith("c1") and "[#2" in rows[2] and rows[2].rstrip().endswith("]")
    assert rows[4].startswith("c3") and rows[4].rstrip().endswith(">")  # never returned
    assert "NOT LINEARIZABLE" in text and "#3 c2: receive returned" in text
    window_only = format_history(v.window, v)  # a long history: draw just the window
    assert "NOT LINEARIZABLE" in window_only and "[#3" in window_only
    ok = check(h[:2])
    assert "LINEARIZABLE, for example in this order: #1 #2" in format_history(h[:2], ok)


# ---------------------------------------------------------------------------------------------
# Batches (issue 14): a batch is ONE operation
# ---------------------------------------------------------------------------------------------

ABC = (("a", "A", None), ("b", "B", None), ("c", "C", None))


def test_linearizable_batch_interleaved_with_singles() -> None:
    """t1's receive_batch overlaps t2's receive and delete_batch: the order t2 receive, t1
    batch, t2 delete_batch explains every result (the batch takes the two heads left)."""
    h = [
        E("p", 0, 1, "send_batch", ABC, result=True),
        E("t1", 2, 10, "receive_batch", 2, None, result=(("b", "B", 1), ("c", "C", 1))),
        E("t2", 3, 5, "receive", None, result=("a", "A", 1)),
        E("t2", 6, 8, "delete_batch", (("a", 1), ("b", 1), ("a", 1)), result=(True, True, False)),
        E("t3", 7, 9, "send", "d", "D", result=True),
    ]
    v = check(h)
    assert isinstance(v, Linearizable), format_history(h, v)
    order = [s for s in v.order if isinstance(s, Entry)]
    assert order.index(h[2]) < order.index(h[1]) < order.index(h[3])
    assert replays(h, v.order, initial_state())


def test_not_linearizable_split_receive_batch() -> None:
    """A receive_batch that dropped the lock between its messages: t2's receive took b in
    between, so t1's batch got a and c. No single point of the batch explains it."""
    h = [
        E("p", 0, 1, "send_batch", ABC, result=True),
        E("t1", 2, 10, "receive_batch", 2, None, result=(("a", "A", 1), ("c", "C", 1))),
        E("t2", 3, 5, "receive", None, result=("b", "B", 1)),
    ]
    v = check(h)
    assert isinstance(v, NotLinearizable), format_history(h, v)
    # Already when t2 returns: b is the second message, and a pending whole batch would have
    # taken it (or nothing yet, leaving a for t2).
    assert v.culprit == h[2]
    # The same results from a batch and a receive that did not overlap: also rejected.
    sequential_h = [h[0], replace(h[2], call=2, ret=3), replace(h[1], call=4, ret=5)]
    assert isinstance(check(sequential_h), NotLinearizable)


def test_send_batch_is_all_or_none_for_the_checker() -> None:
    """A rejected batch reserves no id and takes no room; a batch that took only its first
    entry is no behaviour of the spec."""
    cap2 = Config(capacity=2)
    rejected = [
        E("t1", 0, 4, "send_batch", (("a", "A", None), ("b", "B", None)), result=False),
        E("t2", 1, 2, "send", "c", "C", result=True),
    ]
    assert isinstance(check(rejected, cap2), Linearizable)  # c went first: no room for two
    alone = [rejected[0]]
    assert isinstance(check(alone, cap2), NotLinearizable)  # room for both: must accept
    prefix_taken = [
        *alone,
        E("t2", 5, 6, "receive", None, result=("a", "A", 1)),
    ]
    assert isinstance(check(prefix_taken, Config(capacity=1)), NotLinearizable)
    resend = [
        E("t1", 0, 1, "send_batch", (("a", "A", None), ("a", "X", None)), result=False),
        E("t1", 2, 3, "send", "a", "A", result=True),
    ]
    assert isinstance(check(resend), Linearizable)  # the rejected batch reserved nothing


def test_linearizability_of_delays_and_purge() -> None:
    """A delayed message is not received before its delay fires, which only a sweep (here the
    background sweeper, after the clock reaches visible_at) does; purge counts the delayed."""
    sent = [
        E("p", 0, 1, "send", "a", "A", 1.0, result=True),
        E("p", 2, 3, "send", "b", "B", 0.0, result=True),
    ]
    too_early = [*sent, E("c", 4, 5, "receive", None, result=("a", "A", 1))]
    assert isinstance(check(too_early, sweeper=True), NotLinearizable)
    fired = [
        *sent,
        E("c", 4, 5, "receive", None, result=("b", "B", 1)),
        E("clock", 6, 7, "advance", 1.0),
        E("c", 8, 9, "receive", None, result=("a", "A", 1)),
    ]
    v = check(fired, sweeper=True)
    assert isinstance(v, Linearizable), format_history(fired, v)
    assert SweeperStep("a") in v.order
    assert not check(fired)  # without a sweeper nothing fires the delay
    purged = [*sent, E("c", 4, 5, "purge", result=2), E("c", 6, 7, "receive", None)]
    assert isinstance(check(purged), Linearizable)
    assert isinstance(check([*sent, E("c", 4, 5, "purge", result=1)]), NotLinearizable)


def test_linearizability_check_rejects_bad_batch_operations() -> None:
    for bad in (
        Operation("send_batch", ((),)),
        Operation("send_batch", ((("a", "A"),),)),
        Operation("receive_batch", (0, None)),
        Operation("receive_batch", (11, None)),
        Operation("delete_batch", ((("a", "1"),),)),
        Operation("change_visibility_batch", ((("a", 1, -1.0),),)),
        Operation("send", ("a", "A", -1.0)),
    ):
        with pytest.raises((TypeError, ValueError)):
            check([Entry("t", bad, 0, 1)])


def test_linearizability_adapter_maps_the_batch_calls_of_impl_queue() -> None:
    """Calls on a real impl.Queue, recorded and adapted: each batch is one operation with the
    model's arguments (receipts as (id, attempt)) and the whole batch's result."""
    clock = FakeClock()
    rec = HistoryRecorder(QueueAdapter(visibility_timeout=5.0))
    with ImplQueue[str](capacity=4, visibility_timeout=5.0, delay=0.0, clock=clock) as q:
        entries = [ImplEntry("A", id="a"), ImplEntry("B"), ImplEntry("C", id="c", delay=1.0)]
        ids = rec.call("t", "send_batch", q.send_batch, entries)
        rec.call("t", "send", q.send, "D", id="d", delay=2.0)
        ms = rec.call("t", "receive_batch", q.receive_batch, 3, visibility_timeout=2.0)
        with pytest.raises(ImplEmpty):
            rec.call("t", "receive_batch", q.receive_batch, block=False)
        with pytest.raises(ImplFull):
            rec.call("t", "send_batch", q.send_batch, [ImplEntry("E")], block=False)
        rec.call("t", "delete_batch", q.delete_batch, [ms[0].receipt, ms[0].receipt])
        rec.call("t", "change_visibility_batch", q.change_visibility_batch, [(ms[1].receipt, 0)])
        rec.call("t", "purge", q.purge)
    b = ids[1]
    assert [e.op for e in rec.history()] == [
        Operation("send_batch", ((("a", "A", None), (b, "B", None), ("c", "C", 1.0)),), True),
        Operation("send", ("d", "D", 2.0), True),
        Operation("receive_batch", (3, 2.0), (("a", "A", 1), (b, "B", 1))),
        Operation("receive_batch", (10, 5.0), ()),
        Operation("send_batch", ((("?0", "E", None),),), False),
        Operation("delete_batch", ((("a", 1), ("a", 1)),), (True, False)),
        Operation("change_visibility_batch", (((b, 1, 0),),), (True,)),
        Operation("purge", (), 3),
    ]
    v = check(rec.history(), Config(capacity=4))
    assert isinstance(v, Linearizable), format_history(rec.history(), v)


# ---------------------------------------------------------------------------------------------
# FIFO queues (issue 15): FifoQueue.send(group=, dedup_id=) is the registry's send with its
# options (group, dedup id) after the declared arguments.
# ---------------------------------------------------------------------------------------------

FIFO = Config(fifo=True, dedup_interval=300.0)


def test_not_linearizable_two_overlapping_sends_of_one_dedup_id_both_accepted() -> None:
    """DedupWindow: whichever order, the second send of dedup id x is a duplicate."""
    both = [
        E("p", 1, 3, "send", "a", "A", None, "g", "x", result=True),
        E("q", 2, 4, "send", "b", "B", None, "g", "x", result=True),
    ]
    assert isinstance(check(both, FIFO), NotLinearizable)
    one = [both[0], E("q", 2, 4, "send", "b", "B", None, "g", "x", result="a")]
    v = check(one, FIFO)
    assert isinstance(v, Linearizable), format_history(one, v)


def test_not_linearizable_a_receive_from_a_locked_group() -> None:
    """GroupOrder: while a is in flight its group is locked, so b (same group) is not
    deliverable; c (another group) is."""
    sends = [
        E("p", 1, 2, "send", "a", "A", None, "g", None, result=True),
        E("p", 3, 4, "send", "b", "B", None, "g", None, result=True),
        E("p", 5, 6, "send", "c", "C", None, "h", None, result=True),
        E("p", 7, 8, "receive", None, result=("a", "A", 1)),
    ]
    locked = [*sends, E("q", 9, 10, "receive", None, result=("b", "B", 1))]
    assert isinstance(check(locked, FIFO), NotLinearizable)
    other = [*sends, E("q", 9, 10, "receive", None, result=("c", "C", 1))]
    assert isinstance(check(other, FIFO), Linearizable)


def test_linearizability_adapter_maps_fifo_queue_sends() -> None:
    """Calls on a real impl.FifoQueue, recorded and adapted: a send's group and dedup id
    follow its (queue-default) delay; a duplicate's result is the earlier id."""
    from impl import FifoQueue

    rec = HistoryRecorder(QueueAdapter(visibility_timeout=5.0))
    with FifoQueue[str](visibility_timeout=5.0, clock=FakeClock()) as q:
        rec.call("t", "send", q.send, "A", group="g", id="a", dedup_id="x")
        rec.call("t", "send", q.send, "B", group="g", id="b", dedup_id="x")
        c = rec.call("t", "send", q.send, "C", group="h")
        rec.call("t", "receive", q.receive)
        rec.call("t", "receive", q.receive)
    assert [e.op for e in rec.history()] == [
        Operation("send", ("a", "A", None, "g", "x"), True),
        Operation("send", ("b", "B", None, "g", "x"), "a"),
        Operation("send", (c, "C", None, "h", None), True),
        Operation("receive", (5.0,), ("a", "A", 1)),
        Operation("receive", (5.0,), (c, "C", 1)),
    ]
    v = check(rec.history(), FIFO)
    assert isinstance(v, Linearizable), format_history(rec.history(), v)


def test_linearizability_adapter_maps_fifo_queue_send_batches() -> None:
    """Calls on a real impl.FifoQueue: a send_batch's entries carry their group and dedup id
    after the (queue-default) delay, a duplicate entry's result is the earlier id, and a
    rejected batch is ``False``; the history checks, and a wrong result does not."""
    from impl import FifoQueue

    rec = HistoryRecorder(QueueAdapter(visibility_timeout=5.0))
    with FifoQueue[str](capacity=3, visibility_timeout=5.0, clock=FakeClock()) as q:
        rec.call("t", "send", q.send, "A", group="g", id="a", dedup_id="x")
        batch = [
            ImplEntry("B", id="b", group="g", dedup_id="x"),  # a duplicate of "a"
            ImplEntry("C", id="c", group="h", dedup_id="y"),
            ImplEntry("D", group="g"),  # a generated id
        ]
        ids = rec.call("t", "send_batch", q.send_batch, batch)
        assert isinstance(ids, list)
        full = [ImplEntry("E", id="e", group="h"), ImplEntry("F", id="f", group="h")]
        with pytest.raises(ImplFull):
            rec.call("t", "send_batch", q.send_batch, full, block=False)
        rec.call("t", "receive", q.receive)
    d = ids[2]
    assert [e.op for e in rec.history()] == [
        Operation("send", ("a", "A", None, "g", "x"), True),
        Operation(
            "send_batch",
            ((("b", "B", None, "g", "x"), ("c", "C", None, "h", "y"), (d, "D", None, "g", None)),),
            ("a", True, True),
        ),
        Operation(
            "send_batch", ((("e", "E", None, "h", None), ("f", "F", None, "h", None)),), False
        ),
        Operation("receive", (5.0,), ("a", "A", 1)),
    ]
    config = replace(FIFO, capacity=3)
    v = check(rec.history(), config)
    assert isinstance(v, Linearizable), format_history(rec.history(), v)
    wrong = [
        replace(e, op=replace(e.op, result=(True, True, True))) if i == 1 else e
        for i, e in enumerate(rec.history())
    ]
    assert isinstance(check(wrong, config), NotLinearizable)


def test_linearizable_fifo_history_recorded_from_threads() -> None:
    """Producers retrying sends with dedup ids and consumers on a real impl.FifoQueue, from
    threads: the recorded history is linearizable with the spec's FIFO queue."""
    from impl import FifoQueue

    rec = HistoryRecorder(QueueAdapter(visibility_timeout=None))
    errors: list[BaseException] = []
    with FifoQueue[str](visibility_timeout=None, clock=FakeClock()) as q:
        gate = threading.Barrier(3, timeout=10)

        def produce(name: str) -> None:
            try:
                gate.wait()
                for j in range(4):
                    # Both producers send every message twice (a retry): same dedup id.
                    for _ in range(2):
                        rec.call(name, "send", q.send, name, group=f"g{j % 2}", dedup_id=f"m{j}")
            except BaseException as exc:
                errors.append(exc)

        def consume() -> None:
            try:
                gate.wait()
                for _ in range(6):
                    try:
                        m = rec.call("c", "receive", q.receive, block=False)
                    except ImplEmpty:
                        continue
                    rec.call("c", "delete", q.delete, m.receipt)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=produce, args=(p,)) for p in ("p", "q")]
        threads.append(threading.Thread(target=consume))
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
            assert not t.is_alive()
    assert not errors, errors
    h = rec.history()
    # A generated id comes back either way (a duplicate returns the earlier one), so the
    # sends name 4 distinct messages, one per dedup id.
    assert len({e.op.args[0] for e in h if e.op.name == "send"}) == 4
    v = check(h, FIFO)
    assert isinstance(v, Linearizable), format_history(h, v)
