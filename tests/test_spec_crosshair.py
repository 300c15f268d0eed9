"""The CrossHair contracts of ``spec.contracts``, run on concrete examples in the normal test run.

``crosshair check`` searches the contracts symbolically (see the module's docstring for the
command); here the same functions run on every script of up to two steps and on hand-picked
deeper ones, so a broken contract or a broken transition fails the ordinary ``pytest`` run too.
The last tests show that the contracts can fail: a transition with a bug planted in
``spec.contracts``' namespace trips them.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import broken_spec as broken
import pytest

import spec.contracts
from spec import transitions
from spec.contracts import (
    IDS,
    UNKNOWN_ID,
    Op,
    any_receipt,
    cancel_contract,
    change_visibility_batch_contract,
    change_visibility_contract,
    delete_batch_contract,
    delete_contract,
    expire_contract,
    purge_contract,
    reach,
    receive_batch_contract,
    receive_contract,
    retry_contract,
    send_batch_contract,
    send_contract,
)
from spec.state import Receipt, State, Status

CONFIGS = [(None, None), (0, None), (1, 1), (2, 2), (3, None)]
SHORT_SCRIPTS = [list(s) for n in range(3) for s in itertools.product(Op, repeat=n)]
DEEP_SCRIPTS = [
    [Op.SEND, Op.SEND, Op.RECEIVE, Op.RECEIVE, Op.EXTEND],  # deadlines out of receive order
    [Op.SEND, Op.SEND, Op.RECEIVE_LONG, Op.RECEIVE, Op.TICK],
    [Op.SEND, Op.RECEIVE, Op.RETRY, Op.RECEIVE, Op.RETRY],  # dead-letters when max_receives 2
    [Op.SEND, Op.SEND, Op.SEND, Op.RECEIVE, Op.CANCEL_HEAD],
    [Op.SEND, Op.RECEIVE, Op.TICK, Op.EXPIRE, Op.RECEIVE_FOREVER],
    [Op.SEND, Op.RECEIVE, Op.DELETE, Op.SEND, Op.RECEIVE],
    [Op.SEND, Op.SEND, Op.RECEIVE, Op.RELEASE, Op.CANCEL_NEWEST],
    # a delay and a deadline due together (at 2): the delay's timer was started first
    [Op.SEND_DELAYED, Op.SEND, Op.TICK, Op.RECEIVE],
    [Op.SEND, Op.RECEIVE, Op.SEND_DELAYED, Op.EXTEND, Op.SEND],  # deadline 2 started first
    [Op.SEND_DELAYED, Op.SEND_DELAYED, Op.SEND, Op.RECEIVE_FOREVER, Op.TICK],
]
#: (pick, delta, foreign): live, stale, future, attempt 0 or below, foreign, unknown id.
RECEIPTS = [(0, 0, False), (1, 0, False), (0, -1, False), (0, 1, False), (1, -5, False)]
RECEIPTS += [(0, 0, True), (9, 0, False), (-1, 1, False), (2, 0, False)]


def all_cases() -> list[tuple[int | None, int | None, list[Op]]]:
    return [(c, k, s) for c, k in CONFIGS for s in SHORT_SCRIPTS + DEEP_SCRIPTS]


def test_every_short_script_meets_every_contract() -> None:
    for capacity, k, script in all_cases():
        for id in (*IDS, UNKNOWN_ID):
            send_contract(capacity, k, script, id, "body")
            cancel_contract(capacity, k, script, id)
        for dt, vt in ((0.0, 1.0), (2.5, None), (1.0, 0.0)):
            receive_contract(capacity, k, script, dt, vt)
        for pick, delta, foreign in RECEIPTS:
            delete_contract(capacity, k, script, pick, delta, foreign)
            retry_contract(capacity, k, script, pick, delta, foreign)
            for timeout, dt in ((0.0, 0.0), (2.0, 1.5), (0.5, 0.0)):
                change_visibility_contract(capacity, k, script, pick, delta, foreign, timeout, dt)
        for dt in (0.0, 1.0, 2.0, 5.0):
            expire_contract(capacity, k, script, dt)
        purge_contract(capacity, k, script)


#: Batches of ids by index into BATCH_IDS (a, b, c are the scripts', d and e never sent).
PICKS = [[3], [3, 4], [4, 3], [0, 3], [3, 3], [3, 4, 0], list(range(5)) * 2, [0]]
#: Batches of receipts (pick, delta, foreign), as RECEIPTS; a repeated live one included.
RECEIPT_BATCHES = [[r] for r in RECEIPTS] + [
    [(0, 0, False), (1, 0, False)],
    [(1, 0, False), (0, 0, False), (0, 0, False)],
    [(0, -1, False), (0, 0, True), (0, 0, False)],
    RECEIPTS[:10],
]


def test_every_short_script_meets_every_batch_contract() -> None:
    for capacity, k, script in all_cases():
        for picks in PICKS:
            for delay, dt in ((0.0, 0.0), (2.0, 1.0)):
                send_batch_contract(capacity, k, script, picks, delay, dt)
        for delay, dt in ((2.0, 0.0), (0.5, 1.0)):
            send_contract(capacity, k, script, "d", "body", delay, dt)
        for n in (1, 2, 3, 10):
            for dt, vt in ((0.0, 1.0), (2.5, None)):
                receive_batch_contract(capacity, k, script, dt, n, vt)
        for batch in RECEIPT_BATCHES:
            delete_batch_contract(capacity, k, script, batch)
            for timeout, dt in ((0.0, 0.0), (2.0, 1.5)):
                change_visibility_batch_contract(capacity, k, script, batch, timeout, dt)


def test_the_delay_scripts_reach_the_ties_they_are_for() -> None:
    s, now = reach(None, None, DEEP_SCRIPTS[7])
    a, b = s.get("a"), s.get("b")
    assert a is not None and b is not None and now == 1.0
    assert (a.status, a.visible_at, b.status, b.deadline) == (
        Status.DELAYED,
        2.0,
        Status.IN_FLIGHT,
        2.0,
    )
    assert s.timers == ("a", "b")
    s, _ = reach(None, None, DEEP_SCRIPTS[8])
    assert s.timers == ("a", "b") and [m.due for m in s.messages[:2]] == [2.0, 2.0]


def test_the_deep_scripts_reach_the_states_they_are_for() -> None:
    s, now = reach(None, None, DEEP_SCRIPTS[0])
    assert s.in_flight == ("a", "b") and [m.deadline for m in s.messages] == [2.0, 1.0]
    s, _ = reach(2, 2, DEEP_SCRIPTS[2])
    assert s.dead == ("a",)
    s, now = reach(None, None, DEEP_SCRIPTS[4])
    assert now == 1.0 and s.in_flight == ("a",) and s.messages[0].attempt == 2


def test_any_receipt_knows_which_receipts_are_live() -> None:
    for capacity, k, script in all_cases():
        s, _ = reach(capacity, k, script)
        for pick, delta, foreign in RECEIPTS:
            r, live = any_receipt(s, pick, delta, foreign)
            assert live == s.is_live(r)


def test_preconditions_reject_out_of_bounds_inputs() -> None:
    with pytest.raises(AssertionError):
        send_contract(4, None, [], "a", "x")
    with pytest.raises(AssertionError):
        delete_contract(None, None, [Op.SEND] * 6, 0, 0, False)
    with pytest.raises(AssertionError):
        receive_contract(None, None, [Op.SEND], -1.0, None)
    with pytest.raises(AssertionError):
        receive_batch_contract(None, None, [Op.SEND], 0.0, 11, None)
    with pytest.raises(AssertionError):
        send_batch_contract(None, None, [], [], 0.0, 0.0)
    with pytest.raises(AssertionError):
        delete_batch_contract(None, None, [], [(0, 0, False)] * 11)


# -- the contracts can fail -------------------------------------------------------------------


def delete_ignores_the_attempt(s: State, r: Receipt) -> tuple[State, bool]:
    m = s.get(r.id)
    if m is None or m.status is not Status.IN_FLIGHT:
        return s, False
    return transitions.delete(s, replace(r, queue=s.queue, attempt=m.attempt))


def retry_to_the_head(s: State, r: Receipt) -> tuple[State, bool]:
    after, ok = transitions.retry(s, r)
    if ok and after.visible and after.visible[-1] == r.id:
        after = replace(after, visible=(r.id, *after.visible[:-1]))
    return after, ok


def test_a_delete_that_ignores_the_attempt_breaks_its_contract(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = [Op.SEND, Op.RECEIVE]
    delete_contract(None, None, script, 0, -1, False)  # a stale receipt: rejected, as it should
    monkeypatch.setattr(spec.contracts, "delete", delete_ignores_the_attempt)
    delete_contract(None, None, script, 0, 0, False)  # the live receipt still works
    with pytest.raises(AssertionError):
        delete_contract(None, None, script, 0, -1, False)


def test_a_retry_to_the_head_breaks_its_contract(monkeypatch: pytest.MonkeyPatch) -> None:
    script = [Op.SEND, Op.SEND, Op.RECEIVE]
    retry_contract(None, None, script, 0, 0, False)
    monkeypatch.setattr(spec.contracts, "retry", retry_to_the_head)
    with pytest.raises(AssertionError, match="FifoVisible"):
        retry_contract(None, None, script, 0, 0, False)


def test_a_send_batch_that_accepts_a_prefix_breaks_its_contract(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = [Op.SEND]
    send_batch_contract(2, None, script, [3, 4], 0.0, 0.0)  # does not fit: refused whole
    monkeypatch.setattr(spec.contracts, "send_batch", broken.send_batch_accepts_a_prefix)
    send_batch_contract(3, None, script, [3, 4], 0.0, 0.0)  # fits: the same either way
    with pytest.raises(AssertionError, match="BatchAtomic"):
        send_batch_contract(2, None, script, [3, 4], 0.0, 0.0)


def test_a_purge_that_misses_delayed_messages_breaks_its_contract(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = [Op.SEND_DELAYED, Op.SEND]
    purge_contract(None, None, script)
    monkeypatch.setattr(spec.contracts, "purge", broken.purge_misses_delayed)
    purge_contract(None, None, [Op.SEND])  # nothing delayed: the same either way
    with pytest.raises(AssertionError, match="BatchAtomic"):
        purge_contract(None, None, script)


def test_an_expire_that_fires_deadlines_before_delays_breaks_its_contract(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = DEEP_SCRIPTS[7]  # a delayed until 2, then b in flight until 2: a fires first

    def deadlines_first(s: State, now: float) -> tuple[State, tuple[str, ...]]:
        delayed = set(s.delayed)
        order = sorted(transitions.due(s, now), key=lambda i: i in delayed)  # stable: a tie kept
        for id in order:
            m = s.get(id)
            assert m is not None
            s = (
                transitions.fire_delay(s, id)
                if m.status is Status.DELAYED
                else transitions.release(s, id)
            )
        return s, tuple(order)

    expire_contract(None, None, script, 1.0)
    monkeypatch.setattr(spec.contracts, "expire", deadlines_first)
    with pytest.raises(AssertionError):
        expire_contract(None, None, script, 1.0)
