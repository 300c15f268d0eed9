"""Property tests of the spec: random operation sequences, every invariant after every step.

Hypothesis drives two queues of one configuration through long random runs of every
transition, with receipts drawn from all those ever issued plus forged ones (stale, future,
attempt 0, unknown id, another queue's, a terminal message's) and a clock that only moves
forward. After every step it checks each state invariant and each step invariant
(:func:`spec.violations`, :func:`spec.step_violations`), and it predicts every result from the
contract's table with its own small bookkeeping, not by asking the spec. Delays and batches
are in the same run: sends with delays, ``send_batch`` (all or none), ``receive_batch``,
``delete_batch`` and ``change_visibility_batch`` over the same receipt choices, ``purge``; every
batch step is also checked against its entries one by one (``BatchAtomic``).
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from spec import (
    Config,
    Msg,
    Receipt,
    State,
    Status,
    batch_atomic,
    cancel,
    change_visibility,
    change_visibility_batch,
    delete,
    delete_batch,
    expire,
    initial,
    purge,
    receive,
    receive_batch,
    retry,
    send,
    send_batch,
    step_violations,
    violations,
)

IDS = ("a", "b", "c", "d", "e", "f", "g", "h")
UNKNOWN = "never-sent"
FORGED = ("stale", "future", "zero", "unknown", "foreign", "terminal")

#: Queue 0 gets most of the traffic, so it holds several deliveries at once; queue 1 is there
#: to issue receipts that queue 0 must refuse.
queues = st.sampled_from([0, 0, 0, 1])
#: Clock steps: zero often (ties and "no time passed"), halves to make unequal deadlines.
dts = st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.0, 5.0])
vts = st.one_of(st.none(), st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]))
#: A receipt is one that was issued: ``("live", k)`` the one held for the k-th message in flight
#: here, ``("issued", k)`` the k-th newest this queue ever handed out (``"issued-anywhere"``: of
#: both queues); or a forged one of a named kind (``(kind, k)``), built against the k-th message
#: in flight so that it differs from the live receipt in exactly one field.
receipt_choices = st.one_of(
    st.tuples(st.just("live"), st.integers(0, 20)),
    st.tuples(st.sampled_from(["issued", "issued-anywhere"]), st.integers(0, 20)),
    st.tuples(st.sampled_from(FORGED), st.integers(0, 20)),
)


delays = st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.0])
ACTIVE = (Status.DELAYED, Status.VISIBLE, Status.IN_FLIGHT)


def _active(s: State) -> int:
    return sum(1 for m in s.messages if m.status in ACTIVE)


#: What a receipt transition returns: the new state and whether it acted.
Step = tuple[State, bool]


def _live(s: State, r: Receipt) -> bool:
    """The contract's definition of a live receipt, computed here rather than by the spec."""
    m = next((m for m in s.messages if m.id == r.id), None)
    return (
        r.queue == s.queue
        and m is not None
        and m.status is Status.IN_FLIGHT
        and m.attempt == r.attempt
    )


class SpecMachine(RuleBasedStateMachine):
    """Two queues, one clock, every transition, every invariant checked on every step."""

    def __init__(self) -> None:
        super().__init__()
        self.queues: list[State] = []
        self.accepted: list[dict[str, str]] = []
        self.issued: list[Receipt] = []
        self.now = 0.0

    @initialize(
        # Capacity 0 accepts nothing, so it gets few runs (its own tests are targeted ones).
        capacity=st.sampled_from([None, None, 1, 2, 2, 3, 3, 0]),
        max_receives=st.one_of(st.none(), st.integers(1, 3)),
        prefill=st.lists(st.tuples(queues, st.sampled_from(IDS)), max_size=4),
    )
    def setup(
        self, capacity: int | None, max_receives: int | None, prefill: list[tuple[int, str]]
    ) -> None:
        config = Config(capacity=capacity, max_receives=max_receives)
        self.queues = [initial(config, queue=0), initial(config, queue=1)]
        self.accepted = [{}, {}]
        # Start most runs with something to receive: short runs then still reach deliveries.
        for q, id in prefill:
            self.send(q, id, f"body-{id}")

    # -- helpers --------------------------------------------------------------------------------

    def _commit(self, q: int, after: State) -> None:
        """Check the step's invariants, then make ``after`` the queue's state."""
        before = self.queues[q]
        assert violations(after) == []
        assert step_violations(before, after, self.now) == []
        self.queues[q] = after

    def _batch(
        self, q: int, name: str, kwargs: dict[str, object], after: State, result: object
    ) -> None:
        """``BatchAtomic`` for a batch step on queue ``q``, then :meth:`_commit`."""
        assert batch_atomic(self.queues[q], name, kwargs, after, result) is None
        self._commit(q, after)

    def _receipt(self, q: int, choice: tuple[str, int]) -> tuple[Receipt, bool]:
        """The receipt a choice names, and whether it must be forged (never live)."""
        kind, k = choice
        s = self.queues[q]
        if kind.startswith("issued"):
            pool = [r for r in self.issued if kind == "issued-anywhere" or r.queue == q]
            if not pool:
                return Receipt(q, UNKNOWN, 1), True
            return pool[-1 - k % len(pool)], False
        flying = [m for m in s.messages if m.status is Status.IN_FLIGHT]
        if kind == "live":
            if not flying:
                return Receipt(q, UNKNOWN, 1), True
            m = flying[k % len(flying)]
            issued = Receipt(q, m.id, m.attempt)
            assert issued in self.issued, "every live receipt was handed out by receive"
            return issued, False
        terminal = [m for m in s.messages if m.status.terminal]
        if kind == "terminal":
            if not terminal:
                return Receipt(q, UNKNOWN, 1), True
            m = terminal[k % len(terminal)]
            return Receipt(q, m.id, m.attempt), True
        if kind == "unknown" or not flying:
            return Receipt(q, UNKNOWN, 1), True
        m = flying[k % len(flying)]
        attempt = {"stale": m.attempt - 1, "future": m.attempt + 1, "zero": 0}.get(kind, m.attempt)
        return Receipt(1 - q if kind == "foreign" else q, m.id, attempt), True

    def _released_as_expected(
        self, before: Msg, after: State, was_visible: tuple[str, ...]
    ) -> None:
        """*release*: DEAD after max_receives deliveries, else to the tail of VISIBLE."""
        k = after.config.max_receives
        m = after.get(before.id)
        assert m is not None and m.attempt == before.attempt and m.deadline is None
        if k is not None and before.attempt >= k:
            assert m.status is Status.DEAD and after.dead[-1] == m.id
        else:
            assert m.status is Status.VISIBLE
            assert after.visible == (*was_visible, m.id)

    # -- one rule per transition ------------------------------------------------------------------

    @rule(q=queues, id=st.sampled_from(IDS), body=st.text(max_size=4), delay=delays)
    def send(self, q: int, id: str, body: str, delay: float = 0.0) -> None:
        before = self.queues[q]
        cap = before.config.capacity
        expected = id not in self.accepted[q] and (cap is None or _active(before) < cap)
        after, ok = send(before, id, body, delay, self.now)
        event(f"send: {'accepted' if ok else 'rejected'}{' delayed' if delay else ''}")
        assert ok == expected
        if not ok:
            assert after is before
        elif delay == 0:
            assert after.visible == (*before.visible, id)
        else:
            m = after.get(id)
            assert m is not None and m.status is Status.DELAYED
            assert m.visible_at == self.now + delay and after.timers[-1] == id
            assert after.visible == before.visible
        if ok:
            self.accepted[q][id] = body
        self._commit(q, after)

    @rule(
        q=queues,
        entries=st.lists(st.tuples(st.sampled_from(IDS), delays), min_size=1, max_size=4),
    )
    def send_batch(self, q: int, entries: list[tuple[str, float]]) -> None:
        before = self.queues[q]
        cap = before.config.capacity
        ids = [id for id, _ in entries]
        expected = (
            len(set(ids)) == len(ids)
            and not set(ids) & set(self.accepted[q])
            and (cap is None or _active(before) + len(ids) <= cap)
        )
        batch = tuple((id, f"body-{id}", d) for id, d in entries)
        after, ok = send_batch(before, batch, self.now)
        event(f"send_batch: {'accepted' if ok else 'rejected'}")
        assert ok == expected
        if not ok:
            assert after is before
            return
        for id, body, _ in batch:
            self.accepted[q][id] = body
        assert after.visible == (*before.visible, *(id for id, d in entries if d == 0))
        self._batch(q, "send_batch", dict(entries=batch, now=self.now), after, ok)

    @rule(q=queues, dt=dts, vt=vts)
    def receive(self, q: int, dt: float, vt: float | None) -> None:
        self.now += dt
        before = self.queues[q]
        after, d = receive(before, self.now, vt)
        if not before.visible:
            assert d is None and after is before
            return
        assert d is not None and d.id == before.visible[0]
        old = before.get(d.id)
        assert old is not None
        assert d.body == self.accepted[q][d.id]
        assert d.attempt == old.attempt + 1
        assert d.receipt == Receipt(q, d.id, d.attempt)
        m = after.get(d.id)
        assert m is not None and m.status is Status.IN_FLIGHT
        assert m.deadline == (None if vt is None else self.now + vt)
        assert after.visible == before.visible[1:]
        self._commit(q, after)
        self.issued.append(d.receipt)
        event("receive: delivered")

    @rule(q=queues, dt=dts, n=st.integers(1, 10), vt=vts)
    def receive_batch(self, q: int, dt: float, n: int, vt: float | None) -> None:
        self.now += dt
        before = self.queues[q]
        after, ds = receive_batch(before, self.now, n, vt)
        taken = before.visible[:n]
        assert tuple(d.id for d in ds) == taken, "the first min(n, visible), in FIFO order"
        event(f"receive_batch: {'fewer than n' if len(ds) < n else 'n'}")
        if not ds:
            assert after is before
            return
        for d in ds:
            old = before.get(d.id)
            assert old is not None and d.attempt == old.attempt + 1
            assert d.receipt == Receipt(q, d.id, d.attempt) and d.body == self.accepted[q][d.id]
            m = after.get(d.id)
            assert m is not None and m.deadline == (None if vt is None else self.now + vt)
        assert after.visible == before.visible[len(ds) :]
        self._batch(q, "receive_batch", dict(now=self.now, n=n, vt=vt), after, ds)
        self.issued.extend(d.receipt for d in ds)

    def _with_receipt(
        self, q: int, choice: tuple[str, int], name: str, step: Callable[[State, Receipt], Step]
    ) -> tuple[State, State, Receipt] | None:
        """Run a receipt transition; check it acts exactly on a live receipt, and a rejection
        returns the very same state. ``(before, after, receipt)`` if it acted, else ``None``."""
        before = self.queues[q]
        r, forged = self._receipt(q, choice)
        live = _live(before, r)
        assert not (forged and live)
        after, ok = step(before, r)
        event(f"{name}: {'accepted' if ok else 'rejected'}")
        assert ok == live
        if not ok:
            assert after is before
            return None
        return before, after, r

    @rule(q=queues, choice=receipt_choices)
    def delete(self, q: int, choice: tuple[str, int]) -> None:
        acted = self._with_receipt(q, choice, "delete", delete)
        if acted is None:
            return
        before, after, r = acted
        m = after.get(r.id)
        assert m is not None and m.status is Status.DONE
        assert _active(after) == _active(before) - 1
        self._commit(q, after)

    @rule(q=queues, choices=st.lists(receipt_choices, min_size=1, max_size=4))
    def delete_batch(self, q: int, choices: list[tuple[str, int]]) -> None:
        before = self.queues[q]
        receipts = tuple(self._receipt(q, c)[0] for c in choices)
        after, results = delete_batch(before, receipts)
        expected, done = [], set()
        for r in receipts:
            expected.append(_live(before, r) and r not in done)
            done.add(r)
        assert results == tuple(expected), "each as delete, in order; a repeat is False"
        event(f"delete_batch: {sum(results)} of {len(results)}")
        assert _active(after) == _active(before) - sum(results)
        if not any(results):
            assert after is before
        self._batch(q, "delete_batch", dict(receipts=receipts), after, results)

    @rule(
        q=queues,
        choices=st.lists(receipt_choices, min_size=1, max_size=4),
        t=st.sampled_from([0.0, 0.5, 4.0]),
        dt=dts,
    )
    def change_visibility_batch(
        self, q: int, choices: list[tuple[str, int]], t: float, dt: float
    ) -> None:
        self.now += dt
        before = self.queues[q]
        changes = tuple((self._receipt(q, c)[0], t) for c in choices)
        after, results = change_visibility_batch(before, changes, self.now)
        event(f"change_visibility_batch: {sum(results)} of {len(results)}")
        if t > 0:
            assert results == tuple(_live(before, r) for r, _ in changes)
            assert after.timers == before.timers, "a moved deadline keeps its place"
        if not any(results):
            assert after is before
        kwargs: dict[str, object] = dict(changes=changes, now=self.now)
        self._batch(q, "change_visibility_batch", kwargs, after, results)

    @rule(q=queues)
    def purge(self, q: int) -> None:
        before = self.queues[q]
        after, count = purge(before)
        event(f"purge: {'some' if count else 'none'}")
        assert count == _active(before) and _active(after) == 0
        assert after.dead == before.dead
        for r in self.issued:
            assert not after.is_live(r)
        self._batch(q, "purge", {}, after, count)

    @rule(q=queues, choice=receipt_choices)
    def retry(self, q: int, choice: tuple[str, int]) -> None:
        acted = self._with_receipt(q, choice, "retry", retry)
        if acted is None:
            return
        before, after, r = acted
        old = before.get(r.id)
        assert old is not None
        self._released_as_expected(old, after, before.visible)
        self._commit(q, after)

    @rule(q=queues, choice=receipt_choices, t=st.sampled_from([0.0, 0.5, 1.0, 4.0]), dt=dts)
    def change_visibility(self, q: int, choice: tuple[str, int], t: float, dt: float) -> None:
        self.now += dt
        now = self.now
        acted = self._with_receipt(
            q, choice, "change_visibility", lambda s, r: change_visibility(s, r, t, now)
        )
        if acted is None:
            return
        before, after, r = acted
        old = before.get(r.id)
        assert old is not None
        if t == 0:
            self._released_as_expected(old, after, before.visible)
        else:
            m = after.get(r.id)
            assert m is not None and m.status is Status.IN_FLIGHT
            assert m.deadline == self.now + t
        self._commit(q, after)

    @rule(q=queues, id=st.sampled_from((*IDS, UNKNOWN)))
    def cancel(self, q: int, id: str) -> None:
        before = self.queues[q]
        old = before.get(id)
        expected = old is not None and old.status in ACTIVE
        after, ok = cancel(before, id)
        event(f"cancel: {'accepted' if ok else 'rejected'}")
        assert ok == expected
        if not ok:
            assert after is before
            return
        m = after.get(id)
        assert m is not None and m.status is Status.CANCELLED
        assert after.visible == tuple(x for x in before.visible if x != id)
        self._commit(q, after)

    @rule(q=queues, dt=dts)
    def expire(self, q: int, dt: float) -> None:
        self.now += dt
        before = self.queues[q]
        after, released = expire(before, self.now)
        due = {}
        for m in before.messages:
            if m.status is Status.IN_FLIGHT and m.deadline is not None and m.deadline <= self.now:
                due[m.id] = m.deadline
            if m.status is Status.DELAYED and m.visible_at is not None and m.visible_at <= self.now:
                due[m.id] = m.visible_at
        assert sorted(released) == sorted(due)
        keys = [(due[i], before.timers.index(i)) for i in released]
        assert keys == sorted(keys), "fired by due time, ties in the order the timers started"
        if len(released) > 1:
            in_start_order = [k[1] for k in keys] == sorted(k[1] for k in keys)
            event("expire: several, " + ("in" if in_start_order else "out of") + " start order")
        if not released:
            assert after == before
        for m in after.messages:
            assert m.status is not Status.IN_FLIGHT or m.deadline is None or m.deadline > self.now
            assert m.status is not Status.DELAYED or (m.visible_at or 0) > self.now
        self._commit(q, after)

    # -- checked after every step -----------------------------------------------------------------

    @invariant()
    def nothing_lost_and_bodies_kept(self) -> None:
        for q, s in enumerate(self.queues):
            assert violations(s) == []
            assert s.ids() == set(self.accepted[q])
            for m in s.messages:
                assert m.body == self.accepted[q][m.id]


SpecMachine.TestCase.settings = settings(
    max_examples=300,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestSpecProperties = SpecMachine.TestCase


# -- the sweeper's order, with many deliveries due at once ----------------------------------------
#
# The machine above rarely has several deliveries due at one sweep, so the order of release gets
# its own property: deliveries made at various times with various timeouts, one sweep, and the
# order predicted from (deadline, position in receive order).


@settings(max_examples=200, deadline=None)
@given(
    deliveries=st.lists(
        st.tuples(st.sampled_from([0.0, 0.5, 1.0]), st.one_of(st.none(), st.integers(0, 4))),
        min_size=1,
        max_size=6,
    ),
    sweep_at=st.integers(0, 8),
    max_receives=st.one_of(st.none(), st.just(1)),
)
def test_expire_releases_due_deliveries_by_deadline_then_receive_order(
    deliveries: list[tuple[float, int | None]], sweep_at: int, max_receives: int | None
) -> None:
    s = initial(Config(max_receives=max_receives))
    for i in range(len(deliveries)):
        s, ok = send(s, f"m{i}", "")
        assert ok
    now = 0.0
    deadlines: list[tuple[float, int, str]] = []
    for i, (dt, vt) in enumerate(deliveries):
        now += dt
        before = s
        s, d = receive(s, now, None if vt is None else float(vt))
        assert d is not None and d.id == f"m{i}"
        assert violations(s) == [] and step_violations(before, s) == []
        if vt is not None:
            deadlines.append((now + vt, i, d.id))
    at = max(now, float(sweep_at))
    expected = [x for x in deadlines if x[0] <= at]
    before = s
    s, released = expire(s, at)
    assert released == tuple(id for _, _, id in sorted(expected))
    assert violations(s) == [] and step_violations(before, s) == []
    if max_receives == 1:
        assert s.dead == released and s.visible == ()
    else:
        assert s.visible == released and s.dead == ()


# -- the one timer order, with delays and deadlines due at once --------------------------------
#
# Delayed sends and deliveries started at various times, some deadlines moved by
# change_visibility (which keeps the timer's place), one sweep: the order predicted from
# (due time, the order the timers were started), counted here, not read from the spec.


@settings(max_examples=200, deadline=None)
@given(
    starts=st.lists(
        st.tuples(
            st.sampled_from([0.0, 0.5, 1.0]),
            st.sampled_from(["delay", "deliver", "deliver-forever"]),
            st.integers(1, 4),
            st.one_of(st.none(), st.integers(1, 4)),
        ),
        min_size=1,
        max_size=6,
    ),
    sweep_at=st.integers(0, 9),
)
def test_expire_fires_delays_and_deadlines_in_one_order(
    starts: list[tuple[float, str, int, int | None]], sweep_at: int
) -> None:
    s = initial()
    now = 0.0
    timers: list[tuple[float, int, str]] = []  # (due, start position, id)
    for i, (dt, kind, t, moved) in enumerate(starts):
        now += dt
        id = f"m{i}"
        before = s
        if kind == "delay":
            s, ok = send(s, id, "", float(t), now)
            assert ok
            timers.append((now + t, i, id))
        else:
            s, _ = send(s, id, "")
            s, ds = receive_batch(s, now, 10, None if kind == "deliver-forever" else float(t))
            (d,) = ds  # the only visible message
            due: float | None = None if kind == "deliver-forever" else now + t
            if moved is not None:  # moved (or given) a deadline now: it keeps its place
                s, ok = change_visibility(s, d.receipt, float(moved), now)
                assert ok
                due = now + moved
            if due is not None:
                timers.append((due, i, id))
        assert violations(s) == [] and step_violations(before, s, now) == []
    at = max(now, float(sweep_at))
    expected = sorted(x for x in timers if x[0] <= at)
    before = s
    s, fired = expire(s, at)
    assert fired == tuple(id for _, _, id in expected)
    assert s.visible == fired, "delays fired and deliveries released alike, to the tail"
    assert violations(s) == [] and step_violations(before, s, at) == []
