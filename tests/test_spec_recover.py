"""``spec.recover``: the crash rule of docs/contract.md section 9 in the executable spec. The
queue is unchanged but for its token: every receipt handed out before is dead, a delivery in
flight comes back at its deadline with its attempt kept, and new receipts act."""

from __future__ import annotations

from dataclasses import replace

import spec
from spec import Config, Status


def test_recover_kills_every_earlier_receipt_and_changes_no_message() -> None:
    s = spec.initial(Config())
    s, _ = spec.send(s, "a", "A")
    s, _ = spec.send(s, "b", "B")
    s, d = spec.receive(s, now=0.0, vt=10.0)
    assert d is not None
    r = spec.recover(s)
    assert replace(r, queue=s.queue) == s  # nothing else changed
    assert spec.delete(r, d.receipt) == (r, False)  # dead, and acts on nothing
    assert spec.change_visibility(r, d.receipt, 0.0, 1.0)[1] is False
    # In flight until its deadline, then released as any expired delivery is.
    r, fired = spec.expire(r, 9.0)
    a = r.get("a")
    assert fired == () and a is not None and a.status is Status.IN_FLIGHT
    r, fired = spec.expire(r, 10.0)
    assert fired == ("a",)
    r, again = spec.receive_batch(r, 10.0, 2, 10.0)
    assert [(x.id, x.attempt) for x in again] == [("b", 1), ("a", 2)]  # that receive counted
    r, ok = spec.delete(r, again[1].receipt)
    assert ok  # a receipt of after the restart acts
