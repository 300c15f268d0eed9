"""Exactly-once effects, checked against TLC: its counterexamples replayed on ``impl.Queue``.

``tla/QueueEffects.tla`` models consumers that apply each delivery's effect to a store keeping
idempotency keys. TLC proves ``EffectOnce`` when the key is recorded in the effect's own step
(``QueueEffects.cfg``) and refutes it when the key is recorded in a later step
(``QueueEffectsCareless.cfg``: a consumer slow between the two steps; ``QueueEffectsCrash.cfg``:
one that crashes there). ``tla/effects.py`` keeps those two counterexamples in
``docs/diagrams/effects_*.trace``; ``tests/test_tla.py`` checks they are what TLC finds today.

Here every TLC step becomes the call it stands for -- on ``impl.Queue`` for the queue's actions
and on ``examples/effect_once.py``'s stores for the consumers' -- and after each one the queue,
the store and the consumers must be in the state TLC printed. The careless store reproduces
TLC's trace, the duplicate effect included. The same calls with the atomic store
(``EffectStore``) leave the queue in the same states, but the redelivered copy finds the key
and the effect happens once; and each run is finished beyond the trace (record, delete) to show
what the deletes return.

Time is a ``ProbeClock``; the test plays the sweeper (``Sweep`` is ``q.sweep()``, ``Clock``
moves the time waking nobody), so a receipt is live exactly until the ``Sweep`` line.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from examples.effect_once import CarelessStore, EffectStore
from impl import Message, Queue, Snapshot
from model_tests.support import ProbeClock
from tla.counterexample import TraceStep, deadline, held, messages, parse_trace
from tla.effects import TRACES, effects, keys, phases

CARELESS = TRACES["QueueEffectsCareless"]
CRASH = TRACES["QueueEffectsCrash"]


def _queue_view_tlc(step: TraceStep) -> dict[str, object]:
    """What a TLC state says about the queue that ``impl.Queue.snapshot()`` shows too."""
    msgs = messages(step.state)

    def ids(name: str) -> list[str]:
        value = step.state[name]
        assert isinstance(value, tuple)
        return [str(x) for x in value]

    return {
        "visible": ids("visible"),
        "in_flight": ids("inFlight"),
        "status": {i: m["status"] for i, m in msgs.items()},
        # The impl forgets the attempt of a done message.
        "attempts": {i: m["attempt"] for i, m in msgs.items() if m["status"] != "DONE"},
        "deadlines": {i: deadline(m) for i, m in msgs.items() if m["status"] == "IN_FLIGHT"},
    }


def _queue_view_impl(s: Snapshot[str]) -> dict[str, object]:
    status = {m.id: "VISIBLE" for m in s.visible}
    status |= {m.id: "IN_FLIGHT" for m in s.in_flight} | {i: "DONE" for i in s.done}
    return {
        "visible": [m.id for m in s.visible],
        "in_flight": [m.id for m in s.in_flight],
        "status": status,
        "attempts": {m.id: m.attempt for m in (*s.visible, *s.in_flight)},
        "deadlines": {m.id: m.deadline for m in s.in_flight},
    }


@dataclass
class Run:
    """One replay: the queue, the store, what each consumer holds, and what happened."""

    q: Queue[str]
    clock: ProbeClock
    store: EffectStore
    holding: dict[str, Message[str]] = field(default_factory=dict)
    #: What each store.apply returned, in order: (consumer, id, applied).
    applies: list[tuple[str, str, bool]] = field(default_factory=list)
    #: What each delete returned, in order: (consumer, (id, attempt), result).
    deletes: list[tuple[str, tuple[str, int], bool]] = field(default_factory=list)


def _one_changed(before: Mapping[str, object], after: Mapping[str, object]) -> str:
    """The one consumer whose variable differs between two states."""
    (c,) = [c for c in after if before[c] != after[c]]
    return c


def _do(run: Run, prev: TraceStep, step: TraceStep) -> None:
    """The call that TLC's step ``prev -> step`` stands for."""
    a, b = prev.state, step.state
    now_a, now_b = a["now"], b["now"]
    assert isinstance(now_a, int) and isinstance(now_b, int)
    q, store = run.q, run.store
    if step.action == "Produce":
        for i in sorted(set(messages(b)) - set(messages(a))):
            q.send(i, id=i)
    elif step.action == "Consume":
        c = _one_changed(held(a), held(b))
        r = held(b)[c]
        assert r is not None
        d = deadline(messages(b)[r[0]])
        m = q.receive(block=False, visibility_timeout=None if d is None else d - now_b)
        assert (m.id, m.attempt) == r
        run.holding[c] = m
        if d is not None:  # the sweeper thread has started: let it fall asleep
            assert run.clock.wait_for_waiters(1)
    elif step.action == "Apply":
        c = _one_changed(phases(a), phases(b))
        i = run.holding[c].id
        run.applies.append((c, i, store.apply(i)))
    elif step.action == "Record":
        c = _one_changed(phases(a), phases(b))
        store.record(run.holding[c].id)
    elif step.action == "Finish":
        c = _one_changed(phases(a), phases(b))
        m = run.holding.pop(c)
        run.deletes.append((c, (m.id, m.attempt), q.delete(m.receipt)))
    elif step.action == "Crash":
        c = _one_changed(phases(a), phases(b))
        del run.holding[c]  # what it held in memory is gone; the store and the queue are not
    elif step.action == "Clock":
        run.clock.advance(now_b - now_a, wake=False)
    elif step.action == "Sweep":
        q.sweep()
    else:
        pytest.fail(f"state {step.number}: unexpected action {step.action}")


def _replay(trace: Path, store: EffectStore, *, compare_store: bool) -> tuple[Run, list[str]]:
    """Replay ``trace`` on a fresh queue with ``store``; the queue and the consumers must match
    TLC after every step, and the store too if ``compare_store``. Returns the run (its queue
    still open: the caller closes it) and the actions, in order."""
    steps = parse_trace(trace.read_text(encoding="utf-8"))
    clock = ProbeClock()
    run = Run(Queue[str](visibility_timeout=None, clock=clock), clock, store)
    try:
        for prev, step in itertools.pairwise(steps):
            _do(run, prev, step)
            where = f"after state {step.number} ({step.action})"
            assert _queue_view_impl(run.q.snapshot()) == _queue_view_tlc(step), where
            held_now = {c: (m.id, m.attempt) for c, m in run.holding.items()}
            assert held_now == {c: r for c, r in held(step.state).items() if r is not None}, where
            if compare_store:
                tlc_effects = {i: n for i, n in effects(step.state).items() if n}
                assert dict(store.effects) == tlc_effects, where
                assert store.keys == keys(step.state), where
    except BaseException:
        run.q.close()  # no sweeper thread outlives a failed replay
        raise
    return run, [s.action for s in steps]


def _finish_everyone(run: Run) -> None:
    """Beyond the trace: every consumer still holding a delivery records and deletes it, the
    live receipt first."""
    live = {m.id: m.attempt for m in run.q.snapshot().in_flight}
    order = sorted(run.holding, key=lambda c: live.get(run.holding[c].id) != run.holding[c].attempt)
    for c in order:
        m = run.holding.pop(c)
        run.store.record(m.id)
        run.deletes.append((c, (m.id, m.attempt), run.q.delete(m.receipt)))


# -- the slow careless consumer: QueueEffectsCareless.cfg ---------------------------------------


def test_the_careless_consumers_trace_replays_on_the_queue_and_applies_the_effect_twice() -> None:
    run, actions = _replay(CARELESS, CarelessStore(), compare_store=True)
    with run.q:
        # c1 receives a and applies its effect (no key yet); it is slow: the clock passes a's
        # deadline and the sweeper releases a; c2 receives it, finds no key, applies again.
        assert actions == ["Initial", "Produce", "Consume", "Apply", "Clock", "Sweep",
                           "Consume", "Apply"]  # fmt: skip
        i = run.holding["c1"].id
        assert run.holding["c2"].id == i
        assert run.applies == [("c1", i, True), ("c2", i, True)]
        assert run.store.effects[i] == 2  # EffectOnce is violated: the effect happened twice
        _finish_everyone(run)
        assert run.deletes == [("c2", (i, 2), True), ("c1", (i, 1), False)]
        assert run.store.effects[i] == 2 and run.q.stats().done == 1


def test_the_same_calls_with_the_atomic_store_apply_the_effect_once() -> None:
    # The queue goes through exactly TLC's states (the store never touches the queue); the
    # store does not: the key came with the effect, so c2's apply finds it and skips.
    run, _ = _replay(CARELESS, EffectStore(), compare_store=False)
    with run.q:
        i = run.holding["c1"].id
        assert run.applies == [("c1", i, True), ("c2", i, False)]
        assert run.store.effects[i] == 1 and run.store.keys == {i}
        _finish_everyone(run)
        assert run.deletes == [("c2", (i, 2), True), ("c1", (i, 1), False)]
        assert run.store.effects[i] == 1 and run.q.stats().done == 1


# -- the crashing careless consumer: QueueEffectsCrash.cfg --------------------------------------


def test_the_crashing_consumers_trace_replays_on_the_queue_and_applies_the_effect_twice() -> None:
    run, actions = _replay(CRASH, CarelessStore(), compare_store=True)
    with run.q:
        # One consumer only: it applies a's effect and crashes before recording the key; the
        # delivery expires, the sweeper releases a, the restarted consumer receives it again.
        assert actions == ["Initial", "Produce", "Consume", "Apply", "Crash", "Clock", "Sweep",
                           "Consume", "Apply"]  # fmt: skip
        i = run.holding["c1"].id
        assert run.applies == [("c1", i, True), ("c1", i, True)]
        assert run.store.effects[i] == 2
        _finish_everyone(run)
        assert run.deletes == [("c1", (i, 2), True)]  # the crashed delivery is never deleted


def test_the_crash_with_the_atomic_store_applies_the_effect_once() -> None:
    run, _ = _replay(CRASH, EffectStore(), compare_store=False)
    with run.q:
        i = run.holding["c1"].id
        assert run.applies == [("c1", i, True), ("c1", i, False)]
        _finish_everyone(run)
        assert run.store.effects[i] == 1 and run.q.stats().done == 1
