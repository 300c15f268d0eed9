"""A worker loop: receive a message, process it, delete it; stop when the queue shuts down.

``receive`` lends a message for a visibility timeout instead of removing it; only ``delete``
with the delivery's receipt finishes it (a worker that died before deleting would see its
message come back: ``examples.redelivery``). Capacity counts visible and in-flight messages, so
a sender waits for a *delete*, not a receive. ``shutdown()`` refuses new sends and lets the
workers drain what is still visible; then their ``receive`` raises ``ShutDown`` and they return.
"""

import threading

from impl import FakeClock, Queue, ShutDown, Stats


def worker(q: Queue[int], results: dict[str, int], lock: threading.Lock) -> None:
    while True:
        try:
            m = q.receive()  # blocks until a message is visible, or the queue is shut down
        except ShutDown:
            return
        with lock:
            results[m.id] = m.body * 2  # the processing
        q.delete(m.receipt)  # done: frees a slot for a waiting sender


def main() -> tuple[dict[str, int], Stats]:
    results: dict[str, int] = {}
    lock = threading.Lock()
    with Queue[int](capacity=2, visibility_timeout=30.0, clock=FakeClock()) as q:
        workers = [threading.Thread(target=worker, args=(q, results, lock)) for _ in range(2)]
        for t in workers:
            t.start()
        for n in range(1, 6):
            q.send(n * 10, id=f"order-{n}")  # waits for room while 2 messages are active
        q.shutdown()
        for t in workers:
            t.join()
        stats = q.stats()
    for id, result in sorted(results.items()):
        print(f"{id}: {result}")
    print(stats)
    return results, stats


if __name__ == "__main__":
    main()
