"""The lockstep machine of FIFO queues: ``impl.FifoQueue`` and the spec with
``Config(fifo=True)`` driven by the same random operations (contract section 2b).

A library of the cross-layer tests: ``model_tests/tests/test_lockstep_fifo.py`` runs it, and
:mod:`model_tests.lockstep_aio` puts it on the asyncio FIFO queue.

:class:`FifoMachine` is the lockstep machine of :mod:`model_tests.lockstep` (its pairs,
receipts bundle, clock rules, whole-state comparison and invariants) with FIFO queues: ``send``
and ``send_batch`` draw a group and, half the time, a dedup id (an ``enqueue_batch`` never
repeats one: that is an invalid batch), the queues get a short ``dedup_interval`` so that
windows end within a run, and the clock rules (``advance``, ``tick``) also aim at the end of a
dedup window.
``receive``, ``receive_batch``, ``delete``, ``retry``, ``change_visibility``, their batches,
``cancel`` and ``purge`` are the inherited rules: the same calls on both sides, now on FIFO
queues, where the whole-state comparison after every step checks the group lock, the order of
each group and the place a released message goes back to.

``GroupOrder`` and ``DedupWindow`` are checked by name on the implementation's states, as the
base machine checks the others, on the implementation's own groups, send order and dedup
records (``impl.Snapshot``), which the whole-state comparison (``projection.Observed``) also
checks against the spec's. Only what the snapshot does not show, each message's dedup id and
the groups of done and cancelled messages, :func:`model_tests.projection.with_fifo_fields`
takes from the spec's twin (all fixed at acceptance).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

import impl
import spec
from model_tests.lockstep import IDS, PAIRS, QueueMachine, batch_sizes, bodies, pairs
from model_tests.projection import to_state, with_fifo_fields
from spec.invariants import batch_atomic, dedup_window_step

GROUPS: Final = ("g", "h")
DEDUPS: Final[tuple[str | None, ...]] = (None, None, "x", "y")


class FifoMachine(QueueMachine):
    """Two (impl.FifoQueue, spec.State with fifo=True) pairs in lockstep on one fake clock."""

    queue_class: type[impl.BaseQueue[str]] = impl.FifoQueue

    @initialize(
        capacity=st.sampled_from((None, 3, None, 2)),
        vt=st.sampled_from((None, 1.0, 2.0, 3.5)),
        max_receives=st.none() | st.integers(1, 3),
        delay=st.sampled_from((0.0, 0.0, 0.0, 1.0)),
        dedup_interval=st.sampled_from((1.0, 2.0, spec.DEDUP_INTERVAL)),
    )
    def create_queues(
        self,
        capacity: int | None,
        vt: float | None,
        max_receives: int | None,
        delay: float = 0.0,
        dedup_interval: float = spec.DEDUP_INTERVAL,
    ) -> None:
        self.config = spec.Config(
            capacity=capacity,
            max_receives=max_receives,
            delay=delay,
            fifo=True,
            dedup_interval=dedup_interval,
        )
        self.default_vt = vt
        for pair in PAIRS:
            self.queues.append(
                impl.FifoQueue(
                    capacity=capacity,
                    visibility_timeout=vt,
                    max_receives=max_receives,
                    delay=delay,
                    dedup_interval=dedup_interval,
                    clock=self.clock,
                )
            )
            self.states.append(spec.initial(self.config, queue=pair))

    def _fifo(self, pair: int) -> impl.FifoQueue[str]:
        q = self.queues[pair]
        assert isinstance(q, impl.FifoQueue)
        return q

    # -- the sends ----------------------------------------------------------------------------

    @rule(
        pair=pairs,
        id=st.sampled_from((*IDS, None)),
        body=bodies,
        group=st.sampled_from(GROUPS),
        dedup=st.sampled_from(DEDUPS),
    )
    def send(self, pair: int, id: str | None, body: str, group: str, dedup: str | None) -> None:
        """Send on both sides with a group and maybe a dedup id; ``id=None`` lets the impl
        generate one. A duplicate returns the earlier id on both sides and changes nothing."""
        self._stepped()
        q, s = self._fifo(pair), self.states[pair]
        earlier = spec.is_duplicate(s, dedup, self.now) if dedup is not None else None
        mine = id if id is not None else "?"
        try:
            got = q.send(body, group=group, id=id, dedup_id=dedup, block=False)
        except impl.DuplicateIdError:
            assert earlier is None, f"DuplicateIdError for a duplicate of {earlier!r}"
            assert id is not None and s.get(id) is not None, "DuplicateIdError for a fresh id"
            assert spec.send(s, id, body, None, self.now, group, dedup) == (s, False)
            return
        except impl.Full:
            assert earlier is None, f"Full for a duplicate of {earlier!r}"
            cap = self.config.capacity
            assert cap is not None and s.active >= cap, f"Full with {s.active} of {cap} active"
            if id is not None:
                assert spec.send(s, id, body, None, self.now, group, dedup) == (s, False)
            return
        if earlier is not None:
            assert got == earlier, f"a duplicate returned {got!r}, not {earlier!r}"
            after, result = spec.send(s, mine, body, None, self.now, group, dedup)
            assert (after, result) == (s, earlier)
            event("send: duplicate")
            return
        assert id is None or got == id
        assert got not in self.accepted[pair], f"IdsReserved: {got!r} accepted twice"
        self.accepted[pair].append(got)
        self.states[pair], ok = spec.send(s, got, body, None, self.now, group, dedup)
        assert ok is True, f"impl accepted {got!r} but the spec gives {ok!r}"
        event(f"send: accepted{' with a dedup id' if dedup else ''}")

    @rule(pair=pairs, data=st.data(), size=batch_sizes)
    def send_batch(self, pair: int, data: st.DataObject, size: int) -> None:
        """Send a FIFO batch on both sides: the duplicates reported per entry, the others
        accepted or rejected together (``BatchAtomic`` checked on the impl)."""
        self._stepped()
        q, s = self._fifo(pair), self.states[pair]
        drawn: list[tuple[str | None, str, str, str | None]] = []
        for _ in range(size):
            id = data.draw(st.sampled_from((*IDS, None)), label="id")
            body = data.draw(bodies, label="body")
            group = data.draw(st.sampled_from(GROUPS), label="group")
            dedup = data.draw(st.sampled_from(DEDUPS), label="dedup")
            if dedup in {d for *_, d in drawn if d is not None}:
                dedup = None  # a dedup id repeated inside a batch is an invalid batch
            drawn.append((id, body, group, dedup))
        before = q.snapshot()
        unchosen = tuple(
            (f"?{k}" if id is None else id, b, None, g, d) for k, (id, b, g, d) in enumerate(drawn)
        )
        try:
            got = q.send_batch(
                [impl.Entry(b, id=id, group=g, dedup_id=d) for id, b, g, d in drawn], block=False
            )
        except (impl.Full, impl.DuplicateIdError, ValueError) as e:
            after, want = spec.send_batch(s, unchosen, self.now)
            assert after is s, f"impl refused ({e}) but the spec accepts: {want}"
            assert isinstance(want, tuple) and False in want, f"{e}, spec: {want}"
            assert q.snapshot() == before, "BatchAtomic: a rejected send_batch changed the queue"
            event(f"send_batch: rejected ({type(e).__name__})")
            return
        assert len(got) == size
        earlier = [None if d is None else spec.is_duplicate(s, d, self.now) for *_, d in drawn]
        batch = tuple(
            (g_id if dup_of is None else u[0], *u[1:])
            for g_id, dup_of, u in zip(got, earlier, unchosen, strict=True)
        )
        self.states[pair], want = spec.send_batch(s, batch, self.now)
        assert isinstance(want, tuple)
        assert list(want) == [True if d is None else d for d in earlier], want
        for k, (g, dup_of) in enumerate(zip(got, earlier, strict=True)):
            assert dup_of is None or g == dup_of, f"entry {k}, duplicate of {dup_of!r}, gave {g!r}"
            assert dup_of is not None or drawn[k][0] in (None, g), f"entry {k} accepted as {g!r}"
        fresh = [g for g, r in zip(got, want, strict=True) if r is True]
        assert not set(fresh) & set(self.accepted[pair]), "IdsReserved: an id accepted twice"
        self.accepted[pair].extend(fresh)
        self._batch_atomic(pair, before, s, "send_batch", {"entries": batch, "now": self.now}, want)
        event(f"send_batch: {len(fresh)} accepted, {size - len(fresh)} duplicates")

    # -- the clock also aims at the end of a dedup window --------------------------------------

    def _deadlines(self) -> list[float]:
        ends = {at + s.config.dedup_interval for s in self.states for _, _, at in s.dedup}
        return sorted(set(super()._deadlines()) | {t for t in ends if t > self.now})

    # -- the implementation's states, with the fields its snapshot does not show ---------------

    def _impl_states(self, pair: int) -> tuple[spec.State | None, spec.State]:
        if self.observed_step != self.step:
            self.observed_step = self.step
            for p in range(len(self.queues)):
                self.impl_before[p] = self.impl_now[p]
                converted = to_state(self.queues[p].snapshot(), self.config, p, self.impl_before[p])
                self.impl_now[p] = with_fifo_fields(converted, self.states[p])
        after = self.impl_now[pair]
        assert after is not None
        return self.impl_before[pair], after

    def _batch_atomic(
        self,
        pair: int,
        before: impl.Snapshot[str],
        spec_before: spec.State,
        operation: str,
        arguments: Mapping[str, object],
        result: object,
    ) -> None:
        start = with_fifo_fields(to_state(before, self.config, pair, spec_before), spec_before)
        converted = to_state(self.queues[pair].snapshot(), self.config, pair, start)
        after = with_fifo_fields(converted, self.states[pair])
        reason = batch_atomic(start, operation, arguments, after, result)
        assert reason is None, f"queue {pair}: {reason}"

    # -- the FIFO invariants (contract section 2b) ---------------------------------------------

    @invariant()
    def GroupOrder(self) -> None:
        self._check("GroupOrder")

    @invariant()
    def DedupWindow(self) -> None:
        for pair in range(len(self.queues)):
            before, after = self._impl_states(pair)
            reason = spec.INVARIANTS["DedupWindow"](after)
            assert reason is None, f"queue {pair}: {reason}"
            if before is not None:
                reason = dedup_window_step(before, after, self.now)
                assert reason is None, f"queue {pair}: {reason}"
