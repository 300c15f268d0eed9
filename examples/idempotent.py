"""An idempotent consumer: two threads hold deliveries of one message; its effect happens once.

A slow consumer outlives its visibility timeout, so the message is redelivered to a second
consumer while the first still works on it (``examples.redelivery``). Both finish at the same
moment and race to apply the effect. Exactly one wins, because checking the processed ids,
applying the effect and recording the id are ONE step under one lock (in a real system: one
transaction with a unique key on the message id). The tempting ``if m.id not in done:
apply(result); done.add(m.id)`` races: both copies can pass the check before either records
its id, and both apply. The slow work stays outside the lock; a ``False`` from ``delete`` (a
stale receipt) is information, not an error.
"""

import threading

from impl import FakeClock, Message, Queue


def main() -> tuple[list[str], dict[int, tuple[bool, bool]]]:
    shipped: list[str] = []  # the effect
    done: set[str] = set()  # the ids applied; in a real system, a table with a unique key
    lock = threading.Lock()
    together = threading.Barrier(2, timeout=10.0)
    outcomes: dict[int, tuple[bool, bool]] = {}  # attempt -> (applied, deleted)

    def consume(q: Queue[str], m: Message[str]) -> None:
        parcel = m.body.upper()  # the work: slow, so outside the lock
        together.wait()  # both consumers finish their work at the same moment
        with lock:  # check, apply and record as ONE step
            applied = m.id not in done
            if applied:
                shipped.append(parcel)
                done.add(m.id)
        outcomes[m.attempt] = (applied, q.delete(m.receipt))

    clock = FakeClock()
    with Queue[str](visibility_timeout=30.0, clock=clock) as q:
        q.send("parcel 42", id="order-1")
        first = q.receive()  # consumer 1 gets attempt 1 and works on it ...
        clock.advance(31)  # ... past its visibility timeout,
        q.sweep()  # so order-1 is visible again
        second = q.receive()  # and consumer 2 gets attempt 2
        threads = [threading.Thread(target=consume, args=(q, m)) for m in (first, second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for attempt, (applied, deleted) in sorted(outcomes.items()):
        effect = "applied" if applied else "duplicate skipped"
        print(f"consumer of attempt {attempt}: {effect}; delete returned {deleted}")
    print(f"shipped: {shipped}")
    return shipped, outcomes


if __name__ == "__main__":
    main()
