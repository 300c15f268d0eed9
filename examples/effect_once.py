"""Exactly-once effects on an at-least-once queue: record the key in the effect's own step.

The queue may deliver a message twice (a consumer slower than its visibility timeout, or one
that crashes). What must happen once is the message's *effect*, and only the consumer can make
it so: its store keeps an idempotency key (the message id) per effect done, and checks the key,
applies the effect and records the key in ONE step (one lock here; in a database, one
transaction with the key as a unique column). ``CarelessStore`` records the key in a second
step, after the effect: a consumer that is slow (or crashes) between the two leaves a gap in
which a redelivered copy finds no key and applies the effect again.

This is ``tla/QueueEffects.tla`` in Python: ``EffectStore.apply`` is its ``Apply`` with
``AtomicRecord``; ``CarelessStore.apply`` and ``.record`` are ``Apply`` and ``Record`` without.
TLC proves ``EffectOnce`` for the first (``tla/QueueEffects.cfg``) and refutes it for the second
(``tla/QueueEffectsCareless.cfg``); ``main()`` runs that counterexample with two threads.
(``examples/idempotent.py`` shows the other mistake: checking the key in one step and applying
in another.)
"""

import threading
from collections import Counter
from collections.abc import Callable

from impl import FakeClock, Message, Queue


class EffectStore:
    """The consumers' durable store: the effects done and their idempotency keys."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.effects: Counter[str] = Counter()  # id -> how many times its effect was applied
        self.keys: set[str] = set()

    def apply(self, key: str) -> bool:
        """Check the key, apply the effect, record the key: ONE step. ``False``: a duplicate."""
        with self.lock:
            if key in self.keys:
                return False
            self.effects[key] += 1
            self.keys.add(key)
            return True

    def record(self, key: str) -> None:
        """Nothing to do: ``apply`` recorded the key with the effect."""


class CarelessStore(EffectStore):
    """The mistake: the key is recorded after the effect, in a second step."""

    def apply(self, key: str) -> bool:
        with self.lock:
            if key in self.keys:
                return False
            self.effects[key] += 1  # ... and the key only when record() comes
            return True

    def record(self, key: str) -> None:
        with self.lock:
            self.keys.add(key)


def consume(
    q: Queue[str], store: EffectStore, m: Message[str], pause: Callable[[], object]
) -> bool:
    """One delivery's work: apply, record, delete (what delete returned). The consumer is slow
    in ``pause``, between the effect and the key: where a careless consumer is exposed."""
    store.apply(m.id)
    pause()
    store.record(m.id)
    return q.delete(m.receipt)


def race(store: EffectStore) -> tuple[int, list[bool]]:
    """Consumer 1 is slower than its visibility timeout; consumer 2 gets the redelivery.
    Returns how many times the effect was applied and what the deletes returned, in the order
    they happened: consumer 2's (live receipt), then consumer 1's (stale)."""
    clock = FakeClock()
    paused, resume = threading.Event(), threading.Event()
    deleted: list[bool] = []

    def slowly() -> None:  # consumer 1 is slow here: it waits for main, not for time
        paused.set()
        resume.wait(10.0)

    with Queue[str](visibility_timeout=30.0, clock=clock) as q:
        q.send("ship parcel 42", id="order-1")
        first = q.receive(block=False)  # consumer 1: attempt 1
        c1 = threading.Thread(target=lambda: deleted.append(consume(q, store, first, slowly)))
        c1.start()
        paused.wait(10.0)  # consumer 1 applied the effect and is now slow ...
        clock.advance(31.0)  # ... past its visibility timeout,
        q.sweep()  # so the sweeper releases order-1
        second = q.receive(block=False)  # and consumer 2 gets attempt 2
        deleted.append(consume(q, store, second, lambda: None))
        resume.set()  # consumer 1 finishes at last, with a stale receipt
        c1.join(10.0)
    return store.effects["order-1"], deleted


def main() -> dict[str, tuple[int, list[bool]]]:
    results = {"atomic": race(EffectStore()), "careless": race(CarelessStore())}
    for name, (times, deleted) in results.items():
        print(f"{name} store: effect applied {times}x; deletes returned {deleted}")
    return results


if __name__ == "__main__":
    main()
