"""The standard queue machine with its common steps written out: what ``impl.Queue`` runs.

:class:`impl.machine.Machine` is the reference: each step a few named parts (``deliver``,
``stamp``, ``receipt_of``, ``arm_deadline``, ...), each part a method the mutant catalogue can
break on its own, and an O(1) self-check after every step. That costs a Python call per part,
and a send-receive-delete cycle runs about twenty of them. :class:`FastMachine` is the same
machine with the three steps every message takes (send, receive, delete, and their batches)
written out in one function each, for the case every production queue is in almost always:
alone (no dead-letter system), no trace sink recording, no delay, no retention, room. Any other
case is the reference's own code (``super()``). It does not run the self-check. In that case a
step's effects are always the same, so the three are also entry points that return the result
alone (``send_now``, ``receive_now``, ``delete_now``): the threaded driver calls them and
applies the known effects itself, which saves making and reading an outcome per message.

It is proven equal to the reference by the project's own machinery, on every test run:
``model_tests/tests/test_fast_machine.py`` runs the two side by side, through both drivers, on
the same random programs and compares every answer, snapshot and trace; and the lockstep
tests, which compare ``impl.Queue`` (whose machine this is) with the spec, run the reference
too (``model_tests/tests/test_lockstep.py``), as every mutant of the catalogue does.
``python -m bench.floor`` measures what it buys.
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
from impl.validate import INF

__all__ = ["FastMachine"]

_DONE: Final = Outcome(ACTED, True, 0, 1, None, ())
_STALE: Final = Outcome(ACTED, False, 0, 0, None, ())


class FastMachine(Machine[T]):
    """:class:`impl.machine.Machine` with send, receive and delete (and their batches)
    written out for a queue alone, unrecorded, with room (see the module docstring).

    Each of the three is written once, as an entry point that returns the step's result alone
    (:meth:`send_now`, :meth:`receive_now`, :meth:`delete_now`): in the case it handles, the
    step's effects are always the same, so its outcome is known without being made. A driver
    calls them first and applies those known effects itself; ``None`` means "not this case":
    the driver takes the generic path (:meth:`send` and the rest), which the reference's own
    code serves. The outcome-returning steps are the entry points, plus their outcome."""

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

    def send_now(self, now: float, body: T) -> str | None:
        """Send ``body`` under a fresh id, delay 0 (TLA+ ``Send``), if the queue is alone,
        unrecorded, with no retention, open and with room: the id (its effect: one message made
        deliverable, one receiver to wake); else ``None`` and nothing changed."""
        cap = self.capacity
        if (
            self.shut
            or self.system is not None
            or self.before_step is not None
            or self.retention is not None
            or (
                cap is not None
                and len(self.visible) + len(self.in_flight) + len(self.delayed) >= cap
            )
        ):
            return None
        accepted = self.accepted
        while True:  # fresh_id written out
            id = f"msg-{next(self.counter)}"
            if id not in accepted:
                break
        accepted.add(id)
        self.visible[id] = Record(id, body, now)
        return id

    def receive_now(self, now: float, vt: float | None) -> Message[T] | None:
        """Deliver the head with deadline ``now + vt`` (TLA+ ``Receive``), if a message is
        visible, ``vt`` is a time whose deadline is finite and no trace sink records: the
        delivery (its effect: a deadline armed at ``now + vt``, nobody to wake); else ``None``
        and nothing changed. (``deliver``, ``stamp``, ``receipt_of``, ``arm_deadline`` and
        ``Record.message``, written out.) It does not ask ``before_timer``: the caller knows
        that what fires its timers runs, and is due by ``now + vt``."""
        visible = self.visible
        if not visible or vt is None or self.before_step is not None:
            return None
        deadline = now + vt
        if deadline == INF:
            return None
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
        heapq.heappush(timers, (deadline, seq, id, attempt))
        if len(timers) > 2 * (len(in_flight) + len(self.delayed)) + 16:
            self.compact()
        m: Message[T] = new_object(Message)
        set_message_id(m, id)
        set_message_body(m, rec.body)
        set_message_attempt(m, attempt)
        set_message_receipt(m, r)
        return m

    def delete_now(self, receipt: Receipt) -> bool | None:
        """Delete with ``receipt`` (TLA+ ``Delete``), if nothing is recorded: whether it was
        live (its effect, when it was: one slot freed, one sender to wake); else ``None``."""
        if self.before_step is not None:
            return None
        in_flight = self.in_flight
        rec = in_flight.get(receipt.id)
        if rec is None:
            return False
        live = rec.receipt
        if not (
            live is receipt or (live.attempt == receipt.attempt and live.queue == receipt.queue)
        ):
            return False
        del in_flight[rec.id]  # finish, written out (a standard queue's group never unlocks)
        rec.deadline = None
        self.done.add(rec.id)
        return True

    def send(
        self, now: float, id: str | None, body: T, delay: float, *, waited: bool = False
    ) -> Outcome | Blocked:
        if id is None and not delay and not waited:
            sent = self.send_now(now, body)
            if sent is not None:
                return new_outcome(Outcome, (ACCEPTED, sent, 1, 0, None, ()))
        return super().send(now, id, body, delay, waited=waited)

    def receive(self, now: float, vt: float | None) -> Outcome | Blocked:
        m = None if self.before_timer is not None else self.receive_now(now, vt)
        if m is None:
            return super().receive(now, vt)
        assert vt is not None
        return new_outcome(Outcome, (DELIVERED, m, 0, 0, now + vt, ()))

    def delete(self, now: float, receipt: Receipt) -> Outcome:
        ok = self.delete_now(receipt)
        if ok is None:
            return super().delete(now, receipt)
        return _DONE if ok else _STALE

    def send_batch_now(self, now: float, bodies: Sequence[T]) -> list[str] | None:
        """Send 1 to 10 ``bodies`` under fresh ids, delay 0, in one step (TLA+ ``SendBatch``),
        in :meth:`send_now`'s case with room for all: the ids (its effect: that many messages
        made deliverable); else ``None`` and nothing changed."""
        cap = self.capacity
        n = len(bodies)
        if (
            self.shut
            or self.system is not None
            or self.before_step is not None
            or self.retention is not None
            or (
                cap is not None
                and len(self.visible) + len(self.in_flight) + len(self.delayed) + n > cap
            )
        ):
            return None
        accepted = self.accepted
        visible = self.visible
        counter = self.counter
        final = []
        for body in bodies:
            while True:  # fresh_id written out
                id = f"msg-{next(counter)}"
                if id not in accepted:
                    break
            accepted.add(id)
            visible[id] = Record(id, body, now)
            final.append(id)
        return final

    def receive_batch_now(self, now: float, n: int, vt: float | None) -> list[Message[T]] | None:
        """Deliver up to ``n`` (1 to 10) visible messages with deadline ``now + vt`` in one step
        (TLA+ ``ReceiveBatch``), in :meth:`receive_now`'s case: the deliveries in FIFO order
        (its effect: a deadline armed at ``now + vt``, nobody to wake); else ``None``. As
        :meth:`receive_now`, it does not ask ``before_timer``."""
        visible = self.visible
        if not visible or vt is None or self.before_step is not None:
            return None
        deadline = now + vt
        if deadline == INF:
            return None
        in_flight = self.in_flight
        timers = self.timers
        token = self.token
        out: list[Message[T]] = []
        for _ in range(min(n, len(visible))):
            _, rec = visible.popitem(last=False)
            rec.attempt = attempt = rec.attempt + 1
            self.started = seq = self.started + 1
            rec.seq = seq
            rec.deadline = deadline
            id = rec.id
            in_flight[id] = rec
            r: Receipt = new_object(Receipt)
            set_receipt_queue(r, token)
            set_receipt_id(r, id)
            set_receipt_attempt(r, attempt)
            rec.receipt = r
            heapq.heappush(timers, (deadline, seq, id, attempt))
            m: Message[T] = new_object(Message)
            set_message_id(m, id)
            set_message_body(m, rec.body)
            set_message_attempt(m, attempt)
            set_message_receipt(m, r)
            out.append(m)
        if len(timers) > 2 * (len(in_flight) + len(self.delayed)) + 16:
            self.compact()
        return out

    def delete_batch_now(self, receipts: Sequence[Receipt]) -> list[bool] | None:
        """Delete with 1 to 10 receipts in one step, each as :meth:`delete_now`, in order (TLA+
        ``DeleteBatch``), if nothing is recorded: a bool per receipt (its effect: one slot freed
        per ``True``); else ``None``."""
        if self.before_step is not None:
            return None
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
        return results

    def send_batch(
        self,
        now: float,
        ids: Sequence[str | None],
        bodies: Sequence[T],
        delays: Sequence[float],
        *,
        waited: bool = False,
    ) -> Outcome | Blocked:
        if not waited and not any(ids) and not any(delays):
            sent = self.send_batch_now(now, bodies)
            if sent is not None:
                return new_outcome(Outcome, (ACCEPTED, sent, len(sent), 0, None, ()))
        return super().send_batch(now, ids, bodies, delays, waited=waited)

    def receive_batch(self, now: float, n: int, vt: float | None) -> Outcome | Blocked:
        got = None if self.before_timer is not None else self.receive_batch_now(now, n, vt)
        if got is None:
            return super().receive_batch(now, n, vt)
        assert vt is not None
        return new_outcome(Outcome, (DELIVERED, got, 0, 0, now + vt, ()))

    def delete_batch(self, now: float, receipts: Sequence[Receipt]) -> Outcome:
        results = self.delete_batch_now(receipts)
        if results is None:
            return super().delete_batch(now, receipts)
        return Outcome(ACTED, results, 0, sum(results), None, ())
