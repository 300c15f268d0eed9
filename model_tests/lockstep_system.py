"""The lockstep machine over a system of two queues: ``impl`` and ``spec.system`` driven by the
same random operations (docs/contract.md sections 7.1-7.7).

A Hypothesis ``RuleBasedStateMachine`` like :mod:`model_tests.lockstep`'s, over one *system*:
a dead-letter queue ``dlq`` (created first, index 0) and a source ``src`` (index 1) with
``max_receives`` and ``dead_letter=dlq``; either may have a ``retention``, the source a
capacity. The impl side is two ``impl.Queue`` (or ``impl.FifoQueue``) objects on one fake
clock; the spec side one ``spec.system.System`` value. Every rule is one operation, named as
in every layer, done on both sides, with the results compared: ``send``, ``receive``,
``delete``, ``retry``, ``change_visibility`` (0 releases), ``cancel``, ``advance`` (the clock
moves, then both queues are swept, source first), ``tick`` (the clock moves, no sweep: a
deadline or retention timer may be due with its sweep still to come), ``sweep`` (one queue),
``start_redrive`` (to each message's source or to a named destination, all at once or at a
rate; ``RedriveRunning`` on both sides while one runs) and ``cancel_redrive``.

After every rule the invariants compare, per queue, the whole observable state
(:mod:`model_tests.projection` plus the ``AGED_OUT`` and ``MOVED`` sets, ``stats()``,
``dead_letters()``, ``source_of``, ``moved_to`` and the redrive tasks' progress) and check
``system_one_state`` and ``nothing_lost``, by name, on the spec (``spec.system_invariants``)
and on the implementation (:mod:`model_tests.system_checks`).

Determinism: the machine's clock carries a :class:`impl.sync.Sync` whose sweeper threads are
*parked* (made, never run): every sweep is a rule of the machine, so no background round can
fire a timer at a moment the spec does not (the background sweeper's timing, and the locks of
a move, are the controlled scheduler's business: ``model_tests/schedule/programs_system.py``).

Sends use the machine's ids (``IDS``), never generated ones: the system's counter then gives
the redrive's new ids (``msg-N``) on both sides alike, and ``start_redrive`` compares them.

The machine is a library: ``model_tests/tests/test_lockstep_system.py`` runs it (standard and
FIFO), ``test_system_mutants.py`` on broken queues (``queue_class``). Its settings profile is
``lockstep_system``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Final

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
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
from model_tests import system_checks
from model_tests.faults import ParkedSync
from model_tests.lockstep import event
from model_tests.projection import from_snapshot, from_state
from spec import system as ss
from spec import system_invariants as si

settings.register_profile(
    "lockstep_system",
    # LOCKSTEP_EXAMPLES=2000 for a longer hunt.
    max_examples=int(os.environ.get("LOCKSTEP_EXAMPLES", "60")),
    stateful_step_count=40,
    deadline=None,
    derandomize=bool(os.environ.get("CI")),
    suppress_health_check=[HealthCheck.too_slow],
    report_multiple_bugs=False,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
)

#: The queues, in creation order (the spec's receipts carry this index).
NAMES: Final = ("dlq", "src")
DLQ: Final = 0
SRC: Final = 1
IDS: Final = ("a", "b", "c", "d", "e")
GROUPS: Final = ("g", "h")
VTS: Final = ("default", 0.5, 1.0, 2.0)
EXTENDS: Final = (0.0, 0.0, 1.0, 2.5)

queues = st.sampled_from((DLQ, SRC, SRC))  # the source, where messages are born, twice as often
bodies = st.sampled_from(("x", "y"))


class ParkedClock(impl.FakeClock):
    """A fake clock whose queues' sweepers never run (see :class:`ParkedSync`)."""

    sync = ParkedSync()


@dataclass(frozen=True)
class SystemReceipt:
    """A receipt as both sides know it, issued by queue ``issuer`` (an index of ``NAMES``)."""

    issuer: int
    impl: impl.Receipt
    spec: spec.Receipt


class SystemMachine(RuleBasedStateMachine):
    """A dead-letter queue and its source, impl and spec.system in lockstep."""

    receipts = Bundle("system_receipts")
    #: The class of both queues; the system mutants' tests swap in a broken one.
    queue_class: type[impl.BaseQueue[str]] = impl.Queue
    fifo: bool = False

    def __init__(self) -> None:
        super().__init__()
        self.clock = ParkedClock()
        self.now = 0.0
        self.queues: list[impl.BaseQueue[str]] = []
        self.system = ss.System()
        self.default_vt: float | None = 1.0
        #: Ids the impl accepted (sends and redrive moves), for nothing_lost.
        self.accepted: list[str] = []

    # -- setup ------------------------------------------------------------------------------

    @initialize(
        max_receives=st.integers(1, 2),
        vt=st.sampled_from((1.0, 2.0)),
        src_retention=st.sampled_from((None, None, 3.0, 6.0)),
        dlq_retention=st.sampled_from((None, 2.0, 4.0, 8.0)),
        capacity=st.sampled_from((None, None, 2)),
    )
    def create_system(
        self,
        max_receives: int,
        vt: float,
        src_retention: float | None,
        dlq_retention: float | None,
        capacity: int | None,
    ) -> None:
        self.default_vt = vt
        cfg_dlq = spec.Config(fifo=self.fifo, retention=dlq_retention)
        cfg_src = spec.Config(
            capacity=capacity, max_receives=max_receives, fifo=self.fifo, retention=src_retention
        )
        self.system = ss.build(("dlq", cfg_dlq), ("src", cfg_src, "dlq"))
        cls: Any = self.queue_class
        dlq = cls(visibility_timeout=vt, clock=self.clock, retention=dlq_retention, name="dlq")
        src = cls(
            capacity=capacity,
            visibility_timeout=vt,
            max_receives=max_receives,
            clock=self.clock,
            dead_letter=dlq,
            retention=src_retention,
            name="src",
        )
        self.queues = [dlq, src]

    def teardown(self) -> None:
        for q in reversed(self.queues):
            q.close()

    def _q(self, i: int) -> Any:
        return self.queues[i]

    # -- the operations ---------------------------------------------------------------------

    @rule(
        q=queues,
        id=st.sampled_from(IDS),
        body=bodies,
        group=st.sampled_from(GROUPS),
        delay=st.sampled_from((0.0, 0.0, 1.0)),
    )
    def send(self, q: int, id: str, body: str, group: str, delay: float) -> None:
        """Send with the machine's id (any queue's id taken: refused on both sides)."""
        name = NAMES[q]
        kw: dict[str, Any] = {"group": group} if self.fifo else {"delay": delay}
        d = None if self.fifo else delay
        self.system, want = ss.send(
            self.system, name, id, body, d, self.now, group if self.fifo else None
        )
        try:
            got = self._q(q).send(body, id=id, block=False, **kw)
        except (impl.DuplicateIdError, impl.Full) as e:
            assert want is False, f"send {id!r} to {name}: impl raised {e!r}, spec gives {want!r}"
            event(f"send: refused ({type(e).__name__})")
            return
        assert want is True and got == id, f"send {id!r} to {name}: impl {got!r}, spec {want!r}"
        self.accepted.append(id)

    @rule(target=receipts, data=st.data(), vt=st.sampled_from(VTS))
    def receive(self, data: st.DataObject, vt: str | float) -> object:
        """Receive, usually from a queue that has something visible."""
        ready = [i for i in (DLQ, SRC) if self.system.state(NAMES[i]).visible]
        q = data.draw(st.sampled_from(ready) if ready else queues, label="queue")
        v = self.default_vt if vt == "default" else vt
        assert not isinstance(v, str)
        self.system, d = ss.receive(self.system, NAMES[q], self.now, v)
        try:
            m = (
                self._q(q).receive(block=False)
                if vt == "default"
                else self._q(q).receive(block=False, visibility_timeout=v)
            )
        except impl.Empty:
            assert d is None, f"{NAMES[q]}: impl is empty, the spec delivers {d}"
            return multiple()
        assert d is not None, f"{NAMES[q]}: impl delivered {m}, the spec nothing"
        assert (m.id, m.body, m.attempt) == (d.id, d.body, d.attempt), f"{m} != {d}"
        event(f"receive from {NAMES[q]}")
        return SystemReceipt(q, m.receipt, d.receipt)

    def _aim(self, ticket: SystemReceipt, other: bool) -> int:
        return 1 - ticket.issuer if other else ticket.issuer

    @rule(ticket=receipts, other=st.sampled_from((False, False, False, True)))
    def delete(self, ticket: SystemReceipt, other: bool) -> None:
        q = self._aim(ticket, other)
        self.system, want = ss.delete(self.system, NAMES[q], ticket.spec)
        assert self._q(q).delete(ticket.impl) == want

    @rule(ticket=receipts, other=st.sampled_from((False, False, False, True)))
    def retry(self, ticket: SystemReceipt, other: bool) -> None:
        """Retry: a release, which dead-letters (a move into ``dlq``) at ``max_receives``."""
        q = self._aim(ticket, other)
        self.system, want = ss.retry(self.system, NAMES[q], ticket.spec, self.now)
        assert self._q(q).retry(ticket.impl) == want
        event(f"retry on {NAMES[q]}: {want}")

    @rule(ticket=receipts, timeout=st.sampled_from(EXTENDS))
    def change_visibility(self, ticket: SystemReceipt, timeout: float) -> None:
        q = ticket.issuer
        self.system, want = ss.change_visibility(
            self.system, NAMES[q], ticket.spec, timeout, self.now
        )
        assert self._q(q).change_visibility(ticket.impl, timeout) == want

    @rule(q=queues, id=st.sampled_from(IDS))
    def cancel(self, q: int, id: str) -> None:
        self.system, want = ss.cancel(self.system, NAMES[q], id)
        assert self._q(q).cancel(id) == want

    def _due_times(self) -> list[float]:
        times = [ss.next_due(self.system, n) for n in NAMES]
        return sorted({t for t in times if t is not None})

    def _draw_dt(self, data: st.DataObject) -> float:
        due = self._due_times()
        onto: bool = data.draw(st.booleans(), label="onto a timer")
        if due and onto:
            return max(0.0, data.draw(st.sampled_from(due), label="timer") - self.now)
        return float(data.draw(st.integers(0, 8), label="quarters")) / 4

    @rule(data=st.data())
    def advance(self, data: st.DataObject) -> None:
        """Move the clock, then sweep the source and then the dead-letter queue."""
        dt = self._draw_dt(data)
        self.clock.advance(dt)
        self.now += dt
        for q in (SRC, DLQ):
            self._sweep(q)

    @rule(data=st.data())
    def tick(self, data: st.DataObject) -> None:
        """Move the clock and sweep nothing: what is due now waits for a ``sweep``."""
        dt = self._draw_dt(data)
        self.clock.advance(dt)
        self.now += dt

    @rule(q=queues)
    def sweep(self, q: int) -> None:
        """Sweep one queue: its due delays, deadlines (with the move), retention timers and
        redrive ticks fire, in the one timer order."""
        self._sweep(q)

    def _sweep(self, q: int) -> None:
        self.system, fired = ss.expire(self.system, NAMES[q], self.now)
        self._q(q).sweep()
        for kind, _ in fired:
            event(f"sweep {NAMES[q]}: {kind}")

    @rule(
        destination=st.sampled_from((None, None, "src")),
        rate=st.sampled_from((None, None, 1.0, 2.0)),
    )
    def start_redrive(self, destination: str | None, rate: float | None) -> None:
        """Start a redrive of ``dlq`` (to each message's source, or to ``src`` by name)."""
        dest = None if destination is None else self.queues[SRC]
        try:
            self.system, task = ss.start_redrive(self.system, "dlq", self.now, destination, rate)
        except ss.RedriveRunning:
            try:
                self._q(DLQ).start_redrive(dest, rate=rate)
            except impl.errors.RedriveRunning:
                event("start_redrive: one is running")
                return
            raise AssertionError(
                "start_redrive: the spec raises RedriveRunning, impl does not"
            ) from None
        got = self._q(DLQ).start_redrive(dest, rate=rate)
        assert (got.to_move, got.moved, got.skipped) == (task.to_move, task.moved, task.skipped)
        event(f"start_redrive: {task.to_move} in scope, {task.moved} moved at once")

    @precondition(lambda self: self.system.running("dlq") is not None)
    @rule()
    def cancel_redrive(self) -> None:
        running = self.system.running("dlq")
        assert running is not None
        self.system, want = ss.cancel_redrive(self.system, running.name)
        tasks = self._q(DLQ).redrive_tasks()
        assert tasks and tasks[0].cancel() == want

    # -- the whole observable state ---------------------------------------------------------

    @invariant()
    def matches_spec(self) -> None:
        """Per queue: the projection, AGED_OUT and MOVED, stats, dead letters, sources,
        redrive destinations and the redrive tasks equal the spec's."""
        if not self.queues:
            return
        for new in (n for _, _, _, n in self.system.redriven):
            if new not in self.accepted:
                self.accepted.append(new)
        for i, name in enumerate(NAMES):
            q, s = self._q(i), self.system.state(name)
            snap = q.snapshot()
            mine, theirs = from_snapshot(snap), from_state(s)
            assert mine == theirs, f"{name}: impl {mine} != spec {theirs}"
            assert snap.aged_out == frozenset(s.aged_out), f"{name}: aged out {snap.aged_out}"
            assert snap.moved == frozenset(s.moved), f"{name}: moved {snap.moved}"
            stats = q.stats()
            counts = (*theirs.counts(), len(s.aged_out), len(s.moved))
            assert (
                stats.visible,
                stats.in_flight,
                stats.done,
                stats.cancelled,
                stats.dead,
                stats.delayed,
                stats.aged_out,
                stats.moved,
            ) == counts, f"{name}: stats {stats} != {counts}"
            for m in s.messages:
                src = q.source_of(m.id)
                want_src = self.system.source_of(name, m.id)
                assert (src.name if src else None) == want_src, f"{name}: source_of({m.id!r})"
                hit = q.moved_to(m.id)
                want_hit = self.system.moved_to(name, m.id)
                got_hit = (hit[0].name, hit[1]) if hit else None
                assert got_hit == want_hit, f"{name}: moved_to({m.id!r}) {got_hit} != {want_hit}"
        impl_tasks = self._q(DLQ).redrive_tasks()
        spec_tasks = self.system.redrive_tasks("dlq")
        assert len(impl_tasks) == len(spec_tasks)
        for got, want in zip(impl_tasks, spec_tasks, strict=True):
            assert (got.status.value, got.moved, got.skipped, got.to_move) == (
                want.status.value,
                want.moved,
                want.skipped,
                want.to_move,
            ), f"redrive task {got} != {want}"

    @invariant()
    def system_one_state(self) -> None:
        if not self.queues:
            return
        reason = si.system_one_state(self.system)
        assert reason is None, f"spec: {reason}"
        reason = system_checks.system_one_state(self.queues)
        assert reason is None, f"impl: {reason}"

    @invariant()
    def nothing_lost(self) -> None:
        if not self.queues:
            return
        reason = si.nothing_lost(self.system)
        assert reason is None, f"spec: {reason}"
        reason = system_checks.nothing_lost(self.queues, self.accepted)
        assert reason is None, f"impl: {reason}"


class FifoSystemMachine(SystemMachine):
    """The same machine over a FIFO dead-letter queue and a FIFO source."""

    queue_class: type[impl.BaseQueue[str]] = impl.FifoQueue
    fifo = True
