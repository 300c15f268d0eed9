"""Dead-letter queues: a poison message moves to a queue of its own, and a redrive sends it back.

``examples/dead_letters.py`` keeps a dead message in a list inside its own queue. Here the queue
``orders`` names a dead-letter queue, ``orders-dlq``, an ordinary queue created before it
(docs/contract.md, section 7). A body the consumer cannot parse is delivered ``max_receives``
times; the release after the last delivery (here: an expired visibility timeout, fired by the
sweep on the fake clock) makes it ``DEAD`` in ``orders`` and, in the same step, visible in
``orders-dlq``, with the same id, body and attempt, and ``source_of`` naming where it came from.
An operator receives it there, sees the bug, and gives it back; once the consumer is fixed, a
redrive moves it back to ``orders`` as a new message: a new id, attempt 0.

Run it with ``python3 examples/dead_letter_queues.py`` (or ``python3 -m
examples.dead_letter_queues``): nothing to install, no real time waited, the same output every
time.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

if not __package__:  # run as a script: the repository root holds the impl package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from impl import Empty, FakeClock, Queue, RedriveStatus, Stats

#: The orders: the second one's amount has a thousands separator that ``int`` refuses.
ORDERS = [("order-1", "250"), ("order-2", "1,000"), ("order-3", "75")]
#: Seconds a delivery stays hidden before the sweep takes it back.
VISIBILITY = 30.0


@dataclass(frozen=True)
class Shown:
    """What the run showed, for the tests: the facts the printed lines state."""

    processed: dict[str, int]
    dead_in_orders: list[str]
    source: str | None
    dlq_delivery: tuple[str, str, int]
    redriven_as: str
    redriven_attempt: int
    task: tuple[RedriveStatus, int, int, int]
    orders: Stats
    dlq: Stats


def strict(body: str) -> int:
    """The consumer as first written: an amount must be plain digits."""
    return int(body)


def fixed(body: str) -> int:
    """The consumer after the fix: a thousands separator is fine."""
    return int(body.replace(",", ""))


def consume(
    q: Queue[str], parse: Callable[[str], int], clock: FakeClock, processed: dict[str, int]
) -> None:
    """Receive until nothing is visible; a body that does not parse is left in flight (the
    worker gives up on it), so it comes back after its visibility timeout."""
    while True:
        try:
            m = q.receive(block=False)
        except Empty:
            if q.stats().in_flight == 0:
                return
            clock.advance(VISIBILITY)  # the abandoned delivery times out ...
            q.sweep()  # ... and the sweep releases it: redelivered, or dead-lettered
            print(f"{clock.now():g}s: the sweep takes back what timed out")
            continue
        try:
            amount = parse(m.body)
        except ValueError:
            print(f"{q.name}: {m.id} attempt {m.attempt}: cannot parse {m.body!r}, left in flight")
            continue
        processed[m.id] = amount
        q.delete(m.receipt)
        print(f"{q.name}: {m.id} attempt {m.attempt}: processed {amount}")


def main() -> Shown:
    clock = FakeClock()
    processed: dict[str, int] = {}
    with (
        Queue[str](name="orders-dlq", clock=clock) as dlq,
        Queue[str](
            name="orders",
            visibility_timeout=VISIBILITY,
            max_receives=2,
            dead_letter=dlq,
            clock=clock,
        ) as orders,
    ):
        for id, body in ORDERS:
            orders.send(body, id=id)
        consume(orders, strict, clock, processed)

        dead = [m.id for m in orders.dead_letters()]
        source = dlq.source_of("order-2")
        print(f"{orders.name}: dead letters {dead}; {dlq.name}: {dlq.stats().visible} visible")
        print(f"{dlq.name}: order-2 came from {source.name if source else None}")

        m = dlq.receive(block=False)  # the operator looks at it: an ordinary delivery
        print(f"{dlq.name}: {m.id} attempt {m.attempt}: body {m.body!r}; given back")
        dlq_delivery = (m.id, m.body, m.attempt)
        dlq.retry(m.receipt)  # visible in the dead-letter queue again (it has no max_receives)

        task = dlq.start_redrive()  # the consumer is fixed: send the dead letters back
        moved = dlq.moved_to("order-2")
        assert moved is not None
        new_id = moved[1]
        print(
            f"redrive {task.status.name}: moved {task.moved} of {task.to_move}, "
            f"order-2 is {new_id} in {moved[0].name}"
        )
        again = orders.receive(block=False)
        print(f"{orders.name}: {again.id} attempt {again.attempt}: body {again.body!r}")
        processed[again.id] = fixed(again.body)
        orders.delete(again.receipt)
        print(f"{orders.name}: {again.id} processed {processed[again.id]}")

        shown = Shown(
            processed=processed,
            dead_in_orders=dead,
            source=source.name if source else None,
            dlq_delivery=dlq_delivery,
            redriven_as=new_id,
            redriven_attempt=again.attempt,
            task=(task.status, task.moved, task.skipped, task.to_move),
            orders=orders.stats(),
            dlq=dlq.stats(),
        )
    print(f"{orders.name}: {shown.orders}")
    print(f"{dlq.name}: {shown.dlq}")
    return shown


if __name__ == "__main__":
    main()
