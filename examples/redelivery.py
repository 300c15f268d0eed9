"""At-least-once in one page: a consumer slower than its visibility timeout loses its message.

A receive hides the message for ``visibility_timeout`` seconds. When that passes without a
delete, the queue cannot tell a slow consumer from a crashed one: the sweep makes the message
visible again, and the next receive delivers it with ``attempt`` 2 and a new receipt. The slow
consumer's receipt is stale from then on: its late delete returns ``False`` and changes nothing,
while the new owner's delete wins. The work was done twice, which is why consumers must be
idempotent (``examples.idempotent``). A FakeClock stands in for time: no waiting, same result.
"""

from impl import FakeClock, Queue


def main() -> list[tuple[str, object]]:
    clock = FakeClock()
    events: list[tuple[str, object]] = []
    with Queue[str](visibility_timeout=30.0, clock=clock) as q:
        q.send("charge card", id="order-1")
        slow = q.receive()  # hidden until t = 30
        events.append(("slow consumer receives, attempt", slow.attempt))
        clock.advance(31)  # the slow consumer is still working ...
        q.sweep()  # ... and the deadline has passed: order-1 is visible again
        fast = q.receive()
        events.append(("fast consumer receives, attempt", fast.attempt))
        events.append(("fast consumer deletes", q.delete(fast.receipt)))
        events.append(("slow consumer deletes, late", q.delete(slow.receipt)))
        events.append(("messages done", q.stats().done))
    for what, result in events:
        print(f"{what}: {result}")
    return events


if __name__ == "__main__":
    main()
