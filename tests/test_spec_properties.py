"""Property tests of the spec: random operation sequences, every invariant after every step.

Hypothesis drives two queues of one configuration through long random runs of every
transition, with receipts drawn from all those ever issued plus forged ones (stale, future,
attempt 0, unknown id, another queue's, a terminal message's) and a clock that only moves
forward. After every step it checks each state invariant and each step invariant
(:func:`spec.violations`, :func:`spec.step_violations`), and it predicts every result from the
contract's table with its own small bookkeeping, not by asking the spec.
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
    cancel,
    change_visibility,
    delete,
    expire,
    initial,
    receive,
    retry,
    send,
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


def _active(s: State) -> int:
    return sum(1 for m in s.messages if m.status in (Status.VISIBLE, Status.IN_FLIGHT))


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
        assert step_violations(before, after) == []
        self.queues[q] = after

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

    @rule(q=queues, id=st.sampled_from(IDS), body=st.text(max_size=4))
    def send(self, q: int, id: str, body: str) -> None:
        before = self.queues[q]
        cap = before.config.capacity
        expected = id not in self.accepted[q] and (cap is None or _active(before) < cap)
        after, ok = send(before, id, body)
        event(f"send: {'accepted' if ok else 'rejected'}")
        assert ok == expected
        if ok:
            self.accepted[q][id] = body
            assert after.visible == (*before.visible, id)
        else:
            assert after is before
        self._commit(q, after)

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
        expected = old is not None and old.status in (Status.VISIBLE, Status.IN_FLIGHT)
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
        due = [
            m
            for m in before.messages
            if m.status is Status.IN_FLIGHT and m.deadline is not None and m.deadline <= self.now
        ]
        assert sorted(released) == sorted(m.id for m in due)
        deadline = {m.id: m.deadline for m in due}
        keys = [(deadline[i], before.in_flight.index(i)) for i in released]
        assert keys == sorted(keys), "released by deadline, ties by receive order"
        if len(released) > 1:
            in_receive_order = [k[1] for k in keys] == sorted(k[1] for k in keys)
            event("expire: several, " + ("in" if in_receive_order else "out of") + " receive order")
        if not released:
            assert after == before
        for m in after.messages:
            assert m.status is not Status.IN_FLIGHT or m.deadline is None or m.deadline > self.now
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
