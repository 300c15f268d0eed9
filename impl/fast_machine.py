"""The standard queue machine with its common steps written out: what ``impl.Queue`` runs.

:class:`impl.machine.Machine` is the reference: each step a few named parts (``deliver``,
``stamp``, ``receipt_of``, ``arm_deadline``, ...), each part a method the mutant catalogue can
break on its own, and an O(1) self-check after every step. That costs a Python call per part,
and a send-receive-delete cycle runs about twenty of them. :class:`FastMachine` is the same
machine with the three steps every message takes (send, receive, delete, and their batches)
written out in one function each, for the case every production queue is in almost always:
alone (no dead-letter system), no trace sink recording, no delay, no retention, room. Any other
case is the reference's own code (``super()``). It does not run the self-check.

It is proven equal to the reference by the project's own machinery, on every test run: the
lockstep tests run both against the spec (``model_tests/lockstep.py`` drives ``impl.Queue``,
whose machine this is, and the reference through ``model_tests.targets``), and
``model_tests/tests/test_fast_machine.py`` runs the two side by side on the same random
programs and compares every outcome and every snapshot. ``python -m bench.floor`` measures what
it buys.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Final

from impl.machine import Machine, Record, T
from impl.message import (
    Message,
    Receipt,
    new_object,
    set_message_attempt,
    set_message_body,
    set_message_id,
    set_message_receipt,
    set_receipt_attempt,
    set_receipt_id,
    set_receipt_queue,
)
from impl.outcome import ACCEPTED, ACTED, DELIVERED, Blocked, Outcome, new_outcome
from impl.timers import Timer, new_timer
from impl.validate import INF

__all__ = ["FastMachine"]

_DONE: Final = Outcome(ACTED, True, 0, 1, None, ())
_STALE: Final = Outcome(ACTED, False, 0, 0, None, ())


class FastMachine(Machine[T]):
    """:class:`impl.machine.Machine` with send, receive and delete (and their batches)
    written out for a queue alone, unrecorded, with room (see the module docstring)."""

    #: No self-check after every step: the reference's, which this one is proven equal to.
    self_check = False

    def plain(self) -> bool:
        """Whether the written-out steps apply: alone, no hook to ask, no retention."""
        return (
            self.system is None
            and self.before_step is None
            and self.before_timer is None
            and self.retention is None
        )

    def send(
        self, now: float, id: str | None, body: T, delay: float, *, waited: bool = False
    ) -> Outcome | Blocked:
        cap = self.capacity
        if (
            waited
            or id is not None
            or delay
            or self.shut
            or self.system is not None
            or self.before_step is not None
            or self.retention is not None
            or (
                cap is not None
                and len(self.visible) + len(self.in_flight) + len(self.delayed) >= cap
            )
        ):
            return super().send(now, id, body, delay, waited=waited)
        accepted = self.accepted
        while True:  # fresh_id written out
            id = f"msg-{next(self.counter)}"
            if id not in accepted:
                break
        accepted.add(id)
        self.visible[id] = Record(id, body, now)
        return new_outcome(Outcome, (ACCEPTED, id, 1, 0, None, ()))

    def receive(self, now: float, vt: float | None) -> Outcome | Blocked:
        visible = self.visible
        if (
            not visible
            or vt is None
            or self.before_step is not None
            or self.before_timer is not None
        ):
            return super().receive(now, vt)
        deadline = now + vt
        if deadline == INF:
            return super().receive(now, vt)  # raises, naming the argument
        # deliver, stamp, receipt_of, arm_deadline and message, written out
        _, rec = visible.popitem(last=False)
        rec.attempt = attempt = rec.attempt + 1
        self.started = seq = self.started + 1
        rec.seq = seq
        rec.deadline = deadline
        id = rec.id
        in_flight = self.in_flight
        in_flight[id] = rec
        r: Receipt = new_object(Receipt)
        set_receipt_queue(r, self.token)
        set_receipt_id(r, id)
        set_receipt_attempt(r, attempt)
        rec.receipt = r
        timers = self.timers
        heapq.heappush(timers, new_timer(Timer, (deadline, seq, id, attempt)))
        if len(timers) > 2 * (len(in_flight) + len(self.delayed)) + 16:
            self.compact()
        m: Message[T] = new_object(Message)
        set_message_id(m, id)
        set_message_body(m, rec.body)
        set_message_attempt(m, attempt)
        set_message_receipt(m, r)
        return new_outcome(Outcome, (DELIVERED, m, 0, 0, deadline, ()))

    def delete(self, now: float, receipt: Receipt) -> Outcome:
        if self.before_step is not None:
            return super().delete(now, receipt)
        in_flight = self.in_flight
        rec = in_flight.get(receipt.id)
        if rec is None:
            return _STALE
        live = rec.receipt
        if not (
            live is receipt or (live.attempt == receipt.attempt and live.queue == receipt.queue)
        ):
            return _STALE
        del in_flight[rec.id]  # finish, written out (a standard queue's group never unlocks)
        rec.deadline = None
        self.done.add(rec.id)
        return _DONE

    def send_batch(
        self,
        now: float,
        ids: Sequence[str | None],
        bodies: Sequence[T],
        delays: Sequence[float],
        *,
        waited: bool = False,
    ) -> Outcome | Blocked:
        if (
            waited
            or any(ids)
            or any(delays)
            or self.shut
            or not self.plain()
            or not self.accepts(len(ids))
        ):
            return super().send_batch(now, ids, bodies, delays, waited=waited)
        accepted = self.accepted
        visible = self.visible
        final = []
        for body in bodies:
            while True:
                id = f"msg-{next(self.counter)}"
                if id not in accepted:
                    break
            accepted.add(id)
            visible[id] = Record(id, body, now)
            final.append(id)
        return new_outcome(Outcome, (ACCEPTED, final, len(final), 0, None, ()))

    def receive_batch(self, now: float, n: int, vt: float | None) -> Outcome | Blocked:
        if not self.visible or vt is None or not self.plain() or now + vt == INF:
            return super().receive_batch(now, n, vt)
        deadline = now + vt
        recs = self.deliver_batch(n, deadline)
        return new_outcome(Outcome, (DELIVERED, [r.message() for r in recs], 0, 0, deadline, ()))

    def delete_batch(self, now: float, receipts: Sequence[Receipt]) -> Outcome:
        if self.before_step is not None:
            return super().delete_batch(now, receipts)
        in_flight = self.in_flight
        done = self.done
        results = []
        for receipt in receipts:
            rec = in_flight.get(receipt.id)
            ok = False
            if rec is not None:
                live = rec.receipt
                ok = live is receipt or (
                    live.attempt == receipt.attempt and live.queue == receipt.queue
                )
                if ok:
                    del in_flight[rec.id]
                    rec.deadline = None
                    done.add(rec.id)
            results.append(ok)
        return Outcome(ACTED, results, 0, sum(results), None, ())
