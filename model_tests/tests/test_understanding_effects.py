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

from dataclasses import dataclass, field
from pathlib import Path

from examples.effect_once import CarelessStore, EffectStore
from impl import Queue
from model_tests.support import ProbeClock
from model_tests.tests.replay import Consumers, impl_view, one_changed, tlc_view
from tla.counterexample import TraceStep, held, parse_trace
from tla.effects import TRACES, effects, keys, phases

CARELESS = TRACES["QueueEffectsCareless"]
CRASH = TRACES["QueueEffectsCrash"]


@dataclass(kw_only=True)
class Run(Consumers):
    """One replay: the queue and its consumers (what each holds, what each delete returned:
    ``finishes``), the store, and what each apply returned."""

    store: EffectStore
    #: What each store.apply returned, in order: (consumer, id, applied).
    applies: list[tuple[str, str, bool]] = field(default_factory=list)

    def play(self, prev: TraceStep, step: TraceStep) -> bool:
        """The queue's and the consumers' steps as every replay plays them; the store's here."""
        if super().play(prev, step):
            return True
        a, b = phases(prev.state), phases(step.state)
        if step.action == "Apply":
            c = one_changed(a, b)
            i = self.holding[c].id
            self.applies.append((c, i, self.store.apply(i)))
        elif step.action == "Record":
            self.store.record(self.holding[one_changed(a, b)].id)
        elif step.action == "Crash":
            # What it held in memory is gone; the store and the queue are not.
            del self.holding[one_changed(a, b)]
        else:
            return False
        return True


def _replay(trace: Path, store: EffectStore, *, compare_store: bool) -> tuple[Run, list[str]]:
    """Replay ``trace`` on a fresh queue with ``store``; the queue and the consumers must match
    TLC after every step, and the store too if ``compare_store``. Returns the run (its queue
    still open: the caller closes it) and the actions, in order."""
    steps = parse_trace(trace.read_text(encoding="utf-8"))
    clock = ProbeClock()
    run = Run(Queue[str](visibility_timeout=None, clock=clock), clock, store=store)
    try:
        for step in run.replay(steps):
            where = f"after state {step.number} ({step.action})"
            assert impl_view(run.q.snapshot()) == tlc_view(step), where
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
        run.finishes.append((c, (m.id, m.attempt), run.q.delete(m.receipt)))


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
        assert run.finishes == [("c2", (i, 2), True), ("c1", (i, 1), False)]
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
        assert run.finishes == [("c2", (i, 2), True), ("c1", (i, 1), False)]
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
        assert run.finishes == [("c1", (i, 2), True)]  # the crashed delivery is never deleted


def test_the_crash_with_the_atomic_store_applies_the_effect_once() -> None:
    run, _ = _replay(CRASH, EffectStore(), compare_store=False)
    with run.q:
        i = run.holding["c1"].id
        assert run.applies == [("c1", i, True), ("c1", i, False)]
        _finish_everyone(run)
        assert run.store.effects[i] == 1 and run.q.stats().done == 1
