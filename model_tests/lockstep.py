"""The lockstep machine: ``impl.Queue`` and the spec driven by the same random operations.

A Hypothesis ``RuleBasedStateMachine`` (the pattern of Hypothesis's ``DatabaseComparison``
example) keeps two *pairs*, each an ``impl.Queue`` and a ``spec.State``, on one shared
``impl.FakeClock``. Every rule performs one contract operation, named as in the spec and the
impl, on both sides of a pair and asserts that both give the same result. After every step the
invariants compare the whole observable state of each pair (:mod:`model_tests.projection`) and
check each contract invariant, by name, on the *implementation's* state.

Receipts live in a bundle and are never consumed: a receipt stays there after it goes stale,
because using it again (a repeated delete, a delete after expiry or after a retry) is exactly
what must be tested. Receipts of the other pair are drawn as *foreign* receipts, and
``forge_receipt`` adds receipts for any (id, attempt), including future ones and attempt 0.

The batches (contract section 2) are rules of their own, named like the rest: ``send_batch``,
``receive_batch``, ``delete_batch``, ``change_visibility_batch``, and ``purge``; ``send`` draws
a delay (the queue's, 0, or a time), and the queues have a default ``delay``. A batch's
deliveries go into the same ``receipts`` bundle as single receives, and the batch rules draw
their receipts from it: a single delete uses a batch's receipt and a ``delete_batch`` a single
receive's, fresh or stale, repeated inside one batch or not. Each batch rule also checks
``BatchAtomic`` on the implementation: its effect on the queue (snapshot before and after) is
exactly its entries applied one after another by the spec's single transitions, nothing in
between (a rejected ``send_batch``: nothing at all).

The clock moves in two ways, named after the TLA+ model's steps (``Tick`` moves the clock,
``Expire`` is the sweep): ``advance`` moves it and then sweeps every queue (a ``Tick`` and an
``Expire``), and ``tick`` moves it *quietly*, waking no one and sweeping nothing
(``ProbeClock.advance(dt, wake=False)``; the spec's ``now`` moves, no ``spec.expire``). After a
``tick`` a deadline may have passed with its sweep still to come, as when a real sweeper thread
is descheduled: in that window the receipt is still live, so a late ``delete``, ``retry`` or
``change_visibility`` still wins, and the machine generates those runs itself. ``sweep`` (an
``Expire`` alone) closes the window, as does the next ``advance``.

The run stays deterministic although each queue has a background sweeper thread, because that
thread never runs a round the spec does not also make:

- a waking ``advance`` may wake it, but ``advance`` sweeps both sides at that same time anyway;
- ``_arm`` notifies it only for a timer earlier than the one it waits for. Before each
  ``tick`` the machine makes every sweeper that could still be woken finish its round and go
  back to waiting (:meth:`QueueMachine._settle_sweepers`, while nothing is due, so that round
  changes nothing). It then waits for the earliest running timer T, a deadline or a delay
  (delays and deadlines share one heap, so a delayed send wakes the sweeper as a delivery
  does); once a ``tick`` passes T, a new timer is ``now + vt > now >= T`` or
  ``now + delay > now >= T`` (``vt > 0``: no delivery here gets a visibility timeout of 0,
  ``change_visibility(..., 0)`` releases at once without arming, and a delay of 0 starts no
  timer), so nothing wakes it until the window is closed;
- ``shutdown()`` and ``close()`` wake it too (it then runs one last round), but the machine
  calls them only in ``teardown``, after the last check.

A visibility timeout of 0 (due at once, so the sweeper thread would release it at a moment of
its choosing) is left to the harness tests, where a sweep follows every op.

The machine is a library of the cross-layer tests: ``model_tests/tests/test_lockstep.py`` runs
it, ``model_tests/lockstep_fifo.py`` extends it to FIFO queues, the mutant catalogue's tests
run it on broken queues (``queue_class``), and ``tests/test_operations.py`` checks it has a rule per
operation of the registry. Its settings profile is ``lockstep``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import hypothesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

import impl
import spec
from model_tests.projection import from_snapshot, from_state, stats_counts, to_state
from model_tests.support import ProbeClock
from spec.invariants import batch_atomic, delay_honoured_step

settings.register_profile(
    "lockstep",
    # LOCKSTEP_EXAMPLES=5000 for a longer hunt.
    max_examples=int(os.environ.get("LOCKSTEP_EXAMPLES", "200")),
    stateful_step_count=50,
    deadline=None,
    # Reproducible in CI; a fresh random exploration on every developer run.
    derandomize=bool(os.environ.get("CI")),
    suppress_health_check=[HealthCheck.too_slow],
    # One bug at a time, shrunk, without the (slow, for 50-step runs) explain phase.
    report_multiple_bugs=False,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)

IDS: Final = ("a", "b", "c", "d")
PAIRS: Final = (0, 1)
#: A send's delay: the queue's default, none, or a time.
DELAYS: Final[tuple[str | float, ...]] = ("default", 0.0, 0.5, 1.0, 2.0)
#: Visibility timeouts a receive may ask for: the queue's default, never, or a positive time.
VTS: Final = ("default", None, 0.5, 1.0, 2.0, 3.0)
#: change_visibility timeouts: 0 releases at once.
EXTENDS: Final = (0.0, 0.5, 1.0, 2.0, 5.0)

pairs = st.sampled_from(PAIRS)
ids = st.sampled_from(IDS)
bodies = st.sampled_from(("", "x", "y", "zz"))
#: Whether to use a receipt on the other pair's queue (a foreign receipt), about one time in 4.
foreign = st.sampled_from((False, False, False, True))
#: A batch's size: mostly 1 to 3, sometimes up to the limit.
batch_sizes = st.sampled_from((1, 1, 2, 2, 3, 3, 4, spec.MAX_BATCH))


def event(value: str) -> None:
    """``hypothesis.event``, but only inside a Hypothesis run: outside one (a rule called
    directly, a witness replayed step by step) there is nowhere to record it, and
    ``hypothesis.event`` raises."""
    if currently_in_test_context():
        hypothesis.event(value)


@dataclass(frozen=True)
class LockstepReceipt:
    """A receipt as both sides of the lockstep know it (``impl`` and ``spec``), issued by pair
    ``issuer``'s queue, aimed at pair ``aim``.

    Rules use it on ``aim``'s queue (or, one time in four, on the other one). ``aim`` differs
    from ``issuer`` only for the foreign receipts made by ``live_receipt``.
    """

    issuer: int
    aim: int
    impl: impl.Receipt
    spec: spec.Receipt


class QueueMachine(RuleBasedStateMachine):
    """Two (impl.Queue, spec.State) pairs in lockstep on one fake clock."""

    receipts = Bundle("receipts")
    #: The class under test. The mutant catalogue's tests swap in a broken queue here
    #: (model_tests/tests/test_mutants.py) to show that this machine catches it; the FIFO
    #: machine (``model_tests/lockstep_fifo.py``) an ``impl.FifoQueue``, with its own ``send``
    #: rules.
    queue_class: type[impl.BaseQueue[str]] = impl.Queue

    def __init__(self) -> None:
        super().__init__()
        self.clock = ProbeClock()
        self.now: spec.Time = 0.0
        self.queues: list[impl.BaseQueue[str]] = []
        self.states: list[spec.State] = []
        self.config = spec.Config()
        self.default_vt: float | None = None
        #: Impl-side history for DelayHonoured: when each delayed message may become visible.
        self.visible_at: list[dict[str, float]] = [{}, {}]
        # Impl-side history for the invariants a single state cannot show.
        # Ids each queue accepted, in order (not sorted: generated ids are random, and the draws
        # must not depend on them, or Hypothesis could not replay a run).
        self.accepted: list[list[str]] = [[], []]
        self.attempts_seen: list[dict[str, list[int]]] = [{}, {}]
        self.impl_before: list[spec.State | None] = [None, None]
        self.impl_now: list[spec.State | None] = [None, None]
        self.observed_step = -1
        self.step = 0
        #: Receipts used in the window between their deadline and its sweep, by rule and
        #: outcome ("delete: acted"): what shows that ``tick`` opens the window.
        self.late: Counter[str] = Counter()

    # -- setup and teardown -------------------------------------------------------------------

    @initialize(
        capacity=st.sampled_from((None, 2, None, 1, 3, 0)),
        vt=st.sampled_from((None, 1.0, 2.0, 3.5)),
        max_receives=st.none() | st.integers(1, 3),
        delay=st.sampled_from((0.0, 0.0, 0.0, 1.0, 1.5)),
    )
    def create_queues(
        self, capacity: int | None, vt: float | None, max_receives: int | None, delay: float = 0.0
    ) -> None:
        self.config = spec.Config(capacity=capacity, max_receives=max_receives, delay=delay)
        self.default_vt = vt
        for pair in PAIRS:
            self.queues.append(
                self.queue_class(
                    capacity=capacity,
                    visibility_timeout=vt,
                    max_receives=max_receives,
                    delay=delay,
                    clock=self.clock,
                )
            )
            self.states.append(spec.initial(self.config, queue=pair))

    def teardown(self) -> None:
        for q in self.queues:
            q.close()

    def _stepped(self) -> None:
        self.step += 1

    # -- the operations -----------------------------------------------------------------------

    @rule(pair=pairs, id=st.sampled_from((*IDS, None)), body=bodies, delay=st.sampled_from(DELAYS))
    def send(self, pair: int, id: str | None, body: str, delay: str | float = "default") -> None:
        """Send on both sides; ``id=None`` lets the impl generate one, which the spec then uses.
        ``delay``: the queue's default (``None`` on both sides), or a time (0: none)."""
        self._stepped()
        q, s = self.queues[pair], self.states[pair]
        assert isinstance(q, impl.Queue), "a standard send on a FIFO queue"
        d = None if isinstance(delay, str) else delay
        try:
            got = q.send(body, id=id, delay=d, block=False)
        except impl.DuplicateIdError:
            assert id is not None and s.get(id) is not None, "DuplicateIdError for a fresh id"
            assert spec.send(s, id, body, d, self.now) == (s, False)
            return
        except impl.Full:
            cap = self.config.capacity
            assert cap is not None and s.active >= cap, f"Full with {s.active} of {cap} active"
            if id is not None:
                assert spec.send(s, id, body, d, self.now) == (s, False)
            return
        assert id is None or got == id
        assert got not in self.accepted[pair], f"IdsReserved: {got!r} accepted twice"
        self.accepted[pair].append(got)
        self.states[pair], ok = spec.send(s, got, body, d, self.now)
        assert ok, f"impl accepted {got!r} but the spec rejects it"

    @rule(pair=pairs, data=st.data(), size=batch_sizes)
    def send_batch(self, pair: int, data: st.DataObject, size: int) -> None:
        """Send a batch on both sides: all or none. Its entries are drawn like ``send``'s, so a
        batch may repeat an id, reuse an accepted one, or not fit (then nothing changes)."""
        self._stepped()
        q, s = self.queues[pair], self.states[pair]
        assert isinstance(q, impl.Queue), "a standard send_batch on a FIFO queue"
        drawn = [
            (
                data.draw(st.sampled_from((*IDS, None)), label="id"),
                data.draw(bodies, label="body"),
                data.draw(st.sampled_from(DELAYS), label="delay"),
            )
            for _ in range(size)
        ]
        entries = [
            (id, body, None if isinstance(delay, str) else delay) for id, body, delay in drawn
        ]
        before = q.snapshot()
        # For the spec, a generated id that was never chosen is "?k": no id of the spec's.
        unchosen = [(f"?{k}" if id is None else id, b, d) for k, (id, b, d) in enumerate(entries)]
        given = [id for id, _, _ in entries if id is not None]
        cap = self.config.capacity
        try:
            got = q.send_batch(
                [impl.Entry(body, id=id, delay=d) for id, body, d in entries], block=False
            )
        except (impl.Full, impl.DuplicateIdError, ValueError) as e:
            repeated = len(set(given)) < len(given)
            if isinstance(e, impl.DuplicateIdError):
                taken = any(s.get(id) is not None for id in given)
                assert taken or repeated, f"{e} for fresh ids"
            elif isinstance(e, impl.Full):
                assert cap is not None and s.active + size > cap, f"Full: {s.active}+{size}/{cap}"
            else:  # never fits: an id repeated inside the batch, or more than the capacity
                assert repeated or (cap is not None and size > cap), f"ValueError: {e}"
            assert spec.send_batch(s, tuple(unchosen), self.now) == (s, False)
            assert q.snapshot() == before, "BatchAtomic: a rejected send_batch changed the queue"
            arguments = {"entries": tuple(unchosen), "now": self.now}
            self._batch_atomic(pair, before, s, "send_batch", arguments, False)
            event(f"send_batch: rejected ({type(e).__name__})")
            return
        assert len(got) == size and all(
            id is None or g == id for g, (id, _, _) in zip(got, entries, strict=True)
        )
        assert not set(got) & set(self.accepted[pair]), "IdsReserved: an id accepted twice"
        self.accepted[pair].extend(got)
        batch = tuple((g, b, d) for g, (_, b, d) in zip(got, entries, strict=True))
        self.states[pair], ok = spec.send_batch(s, batch, self.now)
        assert ok, f"impl accepted {got} but the spec rejects the batch"
        self._batch_atomic(pair, before, s, "send_batch", {"entries": batch, "now": self.now}, True)
        event(f"send_batch: accepted {size}")

    @rule(target=receipts, data=st.data(), vt=st.sampled_from(VTS))
    def receive(self, data: st.DataObject, vt: str | float | None) -> object:
        """Receive, usually from a pair that has something visible (else from either)."""
        self._stepped()
        ready = [p for p in PAIRS if self.states[p].visible]
        prefer_ready = bool(ready) and data.draw(st.integers(0, 3)) > 0
        pair = data.draw(st.sampled_from(ready) if prefer_ready else pairs)
        q = self.queues[pair]
        spec_vt = self.default_vt if vt == "default" else vt
        assert not isinstance(spec_vt, str)
        self.states[pair], d = spec.receive(self.states[pair], now=self.now, vt=spec_vt)
        try:
            m = (
                q.receive(block=False)
                if vt == "default"
                else q.receive(block=False, visibility_timeout=spec_vt)
            )
        except impl.Empty:
            assert d is None, f"impl is empty but the spec delivers {d}"
            return multiple()
        assert d is not None, f"impl delivered {m} but the spec has nothing visible"
        assert (m.id, m.body, m.attempt) == (d.id, d.body, d.attempt)
        assert m.receipt == q.receipt(m.id, m.attempt), "receipt() does not name the delivery"
        self.attempts_seen[pair].setdefault(m.id, []).append(m.attempt)
        return LockstepReceipt(pair, pair, m.receipt, d.receipt)

    @rule(target=receipts, data=st.data(), n=batch_sizes, vt=st.sampled_from(VTS))
    def receive_batch(self, data: st.DataObject, n: int, vt: str | float | None) -> object:
        """Receive up to ``n``, usually from a pair with something visible; every delivery's
        receipt goes into the bundle the single receives fill."""
        self._stepped()
        ready = [p for p in PAIRS if self.states[p].visible]
        prefer_ready = bool(ready) and data.draw(st.integers(0, 3)) > 0
        pair = data.draw(st.sampled_from(ready) if prefer_ready else pairs)
        q = self.queues[pair]
        spec_vt = self.default_vt if vt == "default" else vt
        assert not isinstance(spec_vt, str)
        before, s = q.snapshot(), self.states[pair]
        self.states[pair], ds = spec.receive_batch(s, self.now, n, spec_vt)
        try:
            ms = (
                q.receive_batch(n, block=False)
                if vt == "default"
                else q.receive_batch(n, block=False, visibility_timeout=spec_vt)
            )
        except impl.Empty:
            assert not ds, f"impl is empty but the spec delivers {ds}"
            return multiple()
        assert [(m.id, m.body, m.attempt) for m in ms] == [(d.id, d.body, d.attempt) for d in ds]
        got = tuple(
            spec.Delivery(m.id, m.body, m.attempt, spec.Receipt(pair, m.id, m.attempt)) for m in ms
        )
        arguments = {"n": n, "now": self.now, "vt": spec_vt}
        self._batch_atomic(pair, before, s, "receive_batch", arguments, got)
        event(f"receive_batch: {len(ms)} of {n}")
        tickets = []
        for m, d in zip(ms, ds, strict=True):
            assert m.receipt == q.receipt(m.id, m.attempt), "receipt() does not name the delivery"
            self.attempts_seen[pair].setdefault(m.id, []).append(m.attempt)
            tickets.append(LockstepReceipt(pair, pair, m.receipt, d.receipt))
        return multiple(*tickets)

    @rule(target=receipts, pair=pairs, id=ids, attempt=st.integers(0, 4))
    def forge_receipt(self, pair: int, id: str, attempt: int) -> LockstepReceipt:
        """A receipt for any (id, attempt) of a pair: live, stale, future or attempt 0."""
        self._stepped()
        return LockstepReceipt(
            pair, pair, self.queues[pair].receipt(id, attempt), spec.Receipt(pair, id, attempt)
        )

    def _late(self, ticket: LockstepReceipt, pair: int) -> bool:
        """Whether ``ticket`` names a live delivery of ``pair`` whose deadline has passed, not
        yet swept (call it before the rule's transition)."""
        m = self.states[pair].get(ticket.spec.id)
        return (
            m is not None
            and m.status is spec.Status.IN_FLIGHT
            and m.attempt == ticket.spec.attempt
            and m.deadline is not None
            and m.deadline <= self.now
        )

    def _event(
        self, rule: str, ticket: LockstepReceipt, pair: int, acted: bool, late: bool
    ) -> None:
        """Record what kind of receipt a rule used (``--hypothesis-show-statistics``)."""
        kind = "foreign" if pair != ticket.issuer else "own"
        if late:
            outcome = "acted" if acted else "refused"
            self.late[f"{rule}: {kind}, {outcome}"] += 1
            event(f"{rule}: {kind} receipt after its deadline, before its sweep, {outcome}")
        named_live = self.states[pair].get(ticket.spec.id)
        live_here = (
            named_live is not None
            and named_live.status is spec.Status.IN_FLIGHT
            and named_live.attempt == ticket.spec.attempt
        )
        event(f"{rule}: {kind} receipt, {'acted' if acted else 'refused'}")
        if kind == "foreign" and live_here:
            event(f"{rule}: foreign receipt naming a live delivery")

    def _target(self, ticket: LockstepReceipt, other: bool) -> int:
        return 1 - ticket.aim if other else ticket.aim

    @rule(ticket=receipts, other=foreign)
    def delete(self, ticket: LockstepReceipt, other: bool) -> None:
        self._stepped()
        pair = self._target(ticket, other)
        late = self._late(ticket, pair)
        self.states[pair], want = spec.delete(self.states[pair], ticket.spec)
        self._event("delete", ticket, pair, want, late)
        assert self.queues[pair].delete(ticket.impl) == want

    @rule(ticket=receipts, other=foreign)
    def retry(self, ticket: LockstepReceipt, other: bool) -> None:
        self._stepped()
        pair = self._target(ticket, other)
        late = self._late(ticket, pair)
        self.states[pair], want = spec.retry(self.states[pair], ticket.spec)
        self._event("retry", ticket, pair, want, late)
        assert self.queues[pair].retry(ticket.impl) == want

    @rule(ticket=receipts, other=foreign, timeout=st.sampled_from(EXTENDS))
    def change_visibility(self, ticket: LockstepReceipt, other: bool, timeout: float) -> None:
        self._stepped()
        pair = self._target(ticket, other)
        late = self._late(ticket, pair)
        self.states[pair], want = spec.change_visibility(
            self.states[pair], ticket.spec, timeout, self.now
        )
        self._event("change_visibility", ticket, pair, want, late)
        assert self.queues[pair].change_visibility(ticket.impl, timeout) == want

    @rule(ticket=receipts, k=st.integers(17, 24), timeout=st.sampled_from(EXTENDS[1:]))
    def heartbeats(self, ticket: LockstepReceipt, k: int, timeout: float) -> None:
        """A consumer's heartbeat loop: ``k`` change_visibility calls with one receipt, each
        an operation of its own. Enough of them leave more stale timer entries than live ones,
        so the queue rebuilds its timer heap (``Machine.compact``): the rule reaches the rebuild
        with whatever else is armed meanwhile (a delay, other deadlines)."""
        for _ in range(k):
            self.change_visibility(ticket, False, timeout)

    def _batch_pair(self, tickets: list[LockstepReceipt], other: bool) -> int:
        """The queue a batch of receipts goes to: the first one's (or the other), so that the
        rest, when issued by another queue, are foreign receipts in it."""
        return self._target(tickets[0], other)

    @rule(tickets=st.lists(receipts, min_size=1, max_size=4), other=foreign)
    def delete_batch(self, tickets: list[LockstepReceipt], other: bool) -> None:
        """Delete a batch of receipts from the bundle (a single receive's or a batch's, fresh or
        stale, maybe one twice): each as ``delete``, in order, in one step."""
        self._stepped()
        pair = self._batch_pair(tickets, other)
        q = self.queues[pair]
        before, s = q.snapshot(), self.states[pair]
        self.states[pair], want = spec.delete_batch(s, tuple(t.spec for t in tickets))
        got = q.delete_batch([t.impl for t in tickets])
        assert got == list(want)
        receipts = tuple(t.spec for t in tickets)
        self._batch_atomic(pair, before, s, "delete_batch", {"receipts": receipts}, tuple(got))
        event(f"delete_batch: {sum(want)} of {len(want)} acted")

    @rule(
        changes=st.lists(st.tuples(receipts, st.sampled_from(EXTENDS)), min_size=1, max_size=4),
        other=foreign,
    )
    def change_visibility_batch(
        self, changes: list[tuple[LockstepReceipt, float]], other: bool
    ) -> None:
        """Change the visibility of a batch of receipts from the bundle: each as
        ``change_visibility``, in order, in one step (a timeout of 0 releases)."""
        self._stepped()
        pair = self._batch_pair([t for t, _ in changes], other)
        q = self.queues[pair]
        before, s = q.snapshot(), self.states[pair]
        self.states[pair], want = spec.change_visibility_batch(
            s, tuple((t.spec, timeout) for t, timeout in changes), self.now
        )
        got = q.change_visibility_batch([(t.impl, timeout) for t, timeout in changes])
        assert got == list(want)
        # A foreign receipt names its issuer's queue: in this one it is not live.
        arguments = {"changes": tuple((t.spec, x) for t, x in changes), "now": self.now}
        self._batch_atomic(pair, before, s, "change_visibility_batch", arguments, tuple(got))
        event(f"change_visibility_batch: {sum(want)} of {len(want)} acted")

    @rule(pair=pairs, data=st.data())
    def purge(self, pair: int, data: st.DataObject) -> None:
        """Purge a queue: every delayed, visible and in-flight message is cancelled, in one step.

        Only one time in three (Hypothesis draws each rule equally often, and a purge every
        twenty steps would leave too little to do); the other times this step does nothing."""
        self._stepped()
        if data.draw(st.integers(0, 2), label="purge now") != 0:
            return
        q = self.queues[pair]
        before, s = q.snapshot(), self.states[pair]
        self.states[pair], want = spec.purge(s)
        got = q.purge()
        assert got == want
        self._batch_atomic(pair, before, s, "purge", {}, got)
        after = q.snapshot()
        assert not (after.visible or after.in_flight or after.delayed), "purge left some active"
        assert after.dead == before.dead, "purge touched the dead letters"
        event(f"purge: {want}")

    def _batch_atomic(
        self,
        pair: int,
        before: impl.Snapshot[str],
        spec_before: spec.State,
        operation: str,
        arguments: Mapping[str, object],
        result: object,
    ) -> None:
        """``BatchAtomic`` (``spec.invariants.batch_atomic``) on the implementation: the queue
        after the batch, and the batch's result, are the queue before it (``before``, its
        snapshot) with the batch's entries applied one after another by the spec's single
        transitions, nothing in between. The states are rebuilt from the snapshots
        (``spec_before`` gives finished messages their body and attempt, and the timers their
        order: a snapshot shows neither)."""
        start = to_state(before, self.config, pair, spec_before)
        after = to_state(self.queues[pair].snapshot(), self.config, pair, start)
        reason = batch_atomic(start, operation, arguments, after, result)
        assert reason is None, f"queue {pair}: {reason}"

    @rule(pair=pairs, data=st.data())
    def cancel(self, pair: int, data: st.DataObject) -> None:
        """Cancel an id: one time in three one the queue has accepted, else any of ``IDS``.

        (Hypothesis draws this rule often, so cancelling accepted ids every time would leave
        too little to receive.)"""
        self._stepped()
        accepted = self.accepted[pair]
        id = data.draw(
            st.sampled_from(accepted) if accepted and data.draw(st.integers(0, 2)) == 0 else ids,
            label="id",
        )
        self.states[pair], want = spec.cancel(self.states[pair], id)
        assert self.queues[pair].cancel(id) == want

    def _deadlines(self) -> list[float]:
        """When each running timer is due: deadlines and delays alike."""
        return sorted({t for s in self.states for m in s.messages if (t := m.due) is not None})

    def _draw_dt(self, data: st.DataObject, hows: tuple[str, ...]) -> float:
        """How far to move the clock: ``hows`` weighs "exactly onto a deadline", "just before"
        or "just after" one, and "any" amount (the only choice with no deadline)."""
        deadlines = self._deadlines()
        how = data.draw(st.sampled_from(hows) if deadlines else st.just("any"), label="how")
        if how == "any":
            dt = data.draw(st.integers(0, 12).map(lambda n: n / 4), label="dt")
        else:
            target = data.draw(st.sampled_from(deadlines), label="deadline")
            dt = max(0.0, target - self.now + {"exact": 0.0, "before": -0.25, "after": 0.25}[how])
        return dt

    @rule(data=st.data())
    def advance(self, data: st.DataObject) -> None:
        """Move the shared clock on, then sweep every queue (TLA+ ``Tick`` then ``Expire``)."""
        self._stepped()
        dt = self._draw_dt(data, ("exact", "exact", "before", "after", "any"))
        self.clock.advance(dt)
        self.now += dt
        assert self.clock.now() == self.now
        self._sweep_all()

    @rule(target=receipts, data=st.data())
    def tick(self, data: st.DataObject) -> object:
        """Move the shared clock on and sweep nothing (TLA+ ``Tick`` alone): a deadline it
        reaches has passed, its sweep has not run, its receipt is still live.

        Returns the receipts of the deliveries it made due, so that rules use them in the window
        (the bundle is drawn from uniformly: without them a late use would be rare).
        """
        self._stepped()
        # Onto a deadline or past it, mostly: what opens the window.
        dt = self._draw_dt(data, ("exact", "exact", "after", "any"))
        self._settle_sweepers()
        was_due = [set(spec.due(s, self.now)) for s in self.states]
        self.clock.advance(dt, wake=False)
        self.now += dt
        assert self.clock.now() == self.now
        made_due: list[LockstepReceipt] = []
        for pair, s in enumerate(self.states):
            for id in spec.due(s, self.now):
                m = s.get(id)
                # A due delay has no receipt: only the deliveries made due are returned.
                if id not in was_due[pair] and m is not None and m.status is spec.Status.IN_FLIGHT:
                    made_due.append(
                        LockstepReceipt(
                            pair,
                            pair,
                            self.queues[pair].receipt(id, m.attempt),
                            spec.Receipt(pair, id, m.attempt),
                        )
                    )
        return multiple(*made_due)

    def _settle_sweepers(self) -> None:
        """Make sure no queue's sweeper thread can run a round after the clock moves quietly.

        A queue with something due is skipped: its sweeper already waits, un-notified, for a
        timer that has passed, and nothing wakes it before the window closes (see the module
        docstring). So is a queue with no running timer: a round there fires nothing. Every
        other sweeper is notified here, runs one round (nothing is due: it fires nothing) and
        goes back to waiting; a notify it had pending is used up by the same round. A delayed
        message's timer counts like a deadline: it is on the same heap, and the sweeper sleeps
        until whichever is first.
        """
        for pair, s in enumerate(self.states):
            if not spec.due(s, self.now) and any(m.due is not None for m in s.messages):
                self._settle_sweeper(pair)

    def _settle_sweeper(self, pair: int) -> None:
        q = self.queues[pair]
        with q.mutex:
            # The log's WaitCalls stay in it, so their ids stay unique: "a wait not in before"
            # is a wait begun after this notify.
            before = {id(c) for c in self.clock.calls}
            q.new_deadline.notify_all()
        assert self.clock.wait_for_call(
            lambda c: c.cond is q.new_deadline and id(c) not in before
        ), f"queue {pair}: the sweeper thread did not go back to waiting"
        # It logged that wait with the lock held: once we hold the lock, it is asleep in it.
        with q.mutex:
            pass

    @precondition(lambda self: any(m.due is not None for s in self.states for m in s.messages))
    @rule()
    def sweep(self) -> None:
        """Sweep every queue with the clock unchanged (TLA+ ``Expire`` alone): what a ``tick``
        made due fires now (a deadline releases, a delay makes its message visible); after an
        ``advance`` nothing is due."""
        self._stepped()
        self._sweep_all()

    def _sweep_all(self) -> None:
        for pair in PAIRS:
            self.queues[pair].sweep()
            self.states[pair], _ = spec.expire(self.states[pair], self.now)

    @precondition(lambda self: any(s.in_flight for s in self.states))
    @rule(target=receipts, data=st.data())
    def live_receipt(self, data: st.DataObject) -> LockstepReceipt:
        """A receipt naming an in-flight delivery (id, attempt), aimed at the message's queue.

        Issued by that queue it is live; issued by the other queue it is the most dangerous
        foreign receipt, right in every field but the queue.
        """
        self._stepped()
        pair = data.draw(st.sampled_from([p for p in PAIRS if self.states[p].in_flight]))
        # Usually a delivery whose deadline has passed but not been swept, if there is one:
        # its receipt is live only until the sweep, which is what makes it worth a rule's use.
        due = spec.due(self.states[pair], self.now)
        prefer_due = bool(due) and data.draw(st.integers(0, 3), label="prefer due") > 0
        m = self.states[pair].get(
            data.draw(st.sampled_from(due if prefer_due else self.states[pair].in_flight))
        )
        assert m is not None
        issuer = data.draw(st.sampled_from((pair, 1 - pair)), label="issuer")
        return LockstepReceipt(
            issuer,
            pair,
            self.queues[issuer].receipt(m.id, m.attempt),
            spec.Receipt(issuer, m.id, m.attempt),
        )

    # -- the whole observable state -----------------------------------------------------------

    @invariant()
    def observable_state_matches_spec(self) -> None:
        for pair, (q, s) in enumerate(zip(self.queues, self.states, strict=True)):
            impl_view, spec_view = from_snapshot(q.snapshot()), from_state(s)
            assert impl_view == spec_view, f"queue {pair}: impl {impl_view} != spec {spec_view}"
            assert stats_counts(q.stats()) == spec_view.counts(), f"queue {pair}: stats"
            dead = [(m.id, m.body, m.attempt) for m in q.dead_letters()]
            assert dead == [(i.id, i.body, i.attempt) for i in spec_view.dead]

    # -- the contract's invariants, checked on the implementation -----------------------------

    def _impl_states(self, pair: int) -> tuple[spec.State | None, spec.State]:
        """(before, after) of the last step, as spec states converted from impl snapshots."""
        if self.observed_step != self.step:
            self.observed_step = self.step
            for p in range(len(self.queues)):
                self.impl_before[p] = self.impl_now[p]
                self.impl_now[p] = to_state(
                    self.queues[p].snapshot(), self.config, p, self.impl_before[p]
                )
        after = self.impl_now[pair]
        assert after is not None
        return self.impl_before[pair], after

    def _check(self, name: str) -> None:
        for pair in range(len(self.queues)):
            before, after = self._impl_states(pair)
            reason = spec.INVARIANTS[name](after)
            assert reason is None, f"queue {pair}: {reason}"
            step = spec.STEP_INVARIANTS.get(name)
            if step is not None and before is not None:
                reason = step(before, after)
                assert reason is None, f"queue {pair}: {reason}"

    @invariant()
    def OneState(self) -> None:
        self._check("OneState")

    @invariant()
    def CapacityBound(self) -> None:
        self._check("CapacityBound")
        cap = self.config.capacity
        for q in self.queues:
            st_ = q.stats()
            assert cap is None or st_.delayed + st_.visible + st_.in_flight <= cap

    @invariant()
    def OneLiveReceipt(self) -> None:
        self._check("OneLiveReceipt")

    @invariant()
    def AttemptsCount(self) -> None:
        self._check("AttemptsCount")
        for pair, q in enumerate(self.queues):
            snap = q.snapshot()
            for m in (*snap.delayed, *snap.visible, *snap.in_flight, *snap.dead):
                seen = self.attempts_seen[pair].get(m.id, [])
                assert seen == list(range(1, len(seen) + 1)), f"{m.id!r} delivered as {seen}"
                assert m.attempt == len(seen), f"{m.id!r} at attempt {m.attempt}, seen {seen}"

    @invariant()
    def FifoVisible(self) -> None:
        self._check("FifoVisible")

    @invariant()
    def IdsReserved(self) -> None:
        self._check("IdsReserved")
        for pair, q in enumerate(self.queues):
            snap = q.snapshot()
            held = {m.id for m in (*snap.delayed, *snap.visible, *snap.in_flight, *snap.dead)}
            assert set(self.accepted[pair]) == held | snap.done | snap.cancelled

    @invariant()
    def DelayHonoured(self) -> None:
        """The spec's DelayHonoured on the impl's states (its step half with the clock: a delay
        fires at ``now >= visible_at`` only), and the impl's own history: a message seen
        ``DELAYED`` until ``t`` is never seen visible, in flight or dead before ``t``."""
        self._check("DelayHonoured")
        for pair, q in enumerate(self.queues):
            before, after = self._impl_states(pair)
            if before is not None:
                reason = delay_honoured_step(before, after, self.now)
                assert reason is None, f"queue {pair}: {reason}"
            snap = q.snapshot()
            for m in snap.delayed:
                assert m.visible_at is not None, f"{m.id!r} delayed without a visible_at"
                self.visible_at[pair].setdefault(m.id, m.visible_at)
            for m in (*snap.visible, *snap.in_flight, *snap.dead):
                t = self.visible_at[pair].get(m.id)
                assert t is None or t <= self.now, f"{m.id!r} out at {self.now}, delayed to {t}"
