"""Broken spec transitions: test doubles that the checks must catch.

Each function here has the signature of the ``spec.transitions`` function it breaks, so it can
stand in for it: in a copy of the operation registry (``REGISTRY.replacing``), where the
explorer must find the invariant it violates (``tests/test_explore.py``), or called in its
place, where ``spec.invariants.batch_atomic`` must name the broken batch
(``tests/test_spec_invariants.py``). One copy of each, so the two tests break a transition the
same way.

Not a test module (pytest collects ``test_*.py`` only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from spec import transitions
from spec.state import Delivery, State, Status, Time

#: The signature of ``transitions.receive_batch``.
ReceiveBatch = Callable[[State, Time, int, Time | None], tuple[State, tuple[Delivery, ...]]]


def send_batch_accepts_a_prefix(
    s: State, entries: tuple[tuple[str, str, Time | None], ...], now: Time
) -> tuple[State, bool]:
    """Accepts the entries that fit, one by one, instead of all or none."""
    ok = False
    for id, body, delay in entries:
        s, one = transitions.send(s, id, body, delay, now)
        ok = ok or one
    return s, ok


def receive_batch_with_a_sweep(later: Time) -> ReceiveBatch:
    """A ``receive_batch`` that drops the lock after the first message: the sweeper runs in
    between, ``later`` than the batch's ``now`` (so the timers due by then fire mid-batch)."""

    def receive_batch(
        s: State, now: Time, n: int, vt: Time | None
    ) -> tuple[State, tuple[Delivery, ...]]:
        s, first = transitions.receive_batch(s, now, 1, vt)
        s, _ = transitions.expire(s, now + later)
        s, rest = transitions.receive_batch(s, now, n - 1, vt) if n > 1 else (s, ())
        return s, first + rest

    return receive_batch


def purge_misses_delayed(s: State) -> tuple[State, int]:
    """Cancels the active messages but the delayed ones: they stay delayed, timers running."""
    delayed = [m for m in s.messages if m.status is Status.DELAYED]
    after, n = transitions.purge(s)
    for m in delayed:
        after = after.with_msg(m)
    return replace(after, delayed=s.delayed, timers=s.delayed), n - len(delayed)
