"""An asyncio consumer of ``impl.AsyncQueue``: ``async for``, delete with the receipt, an
idempotent effect (order-2's first consumer dies before deleting; the loop timer redelivers it
on the fake clock). Run: ``python3 examples/async_consumer.py``."""

import asyncio
import sys
from pathlib import Path

if not __package__:  # run as a script: the repository root holds the impl package
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from impl import AsyncQueue, FakeClock, Stats


async def main() -> tuple[list[str], Stats]:
    clock, done, log, died = FakeClock(), set[str](), list[str](), asyncio.Event()
    async with AsyncQueue[int](visibility_timeout=30.0, clock=clock) as q:

        async def consume() -> None:
            async for m in q:  # until the queue is shut down and drained
                log.append(f"{m.id} #{m.attempt}: {'already' if m.id in done else 'charged'}")
                done.add(m.id)  # check, charge, record: one step (no await, no task between)
                if (m.id, m.attempt) == ("order-2", 1):
                    died.set()  # this consumer dies before its delete
                    continue
                q.delete(m.receipt)

        workers = [asyncio.create_task(consume()) for _ in range(2)]
        for n in range(1, 4):
            await q.send(n * 10, id=f"order-{n}")
        await died.wait()
        clock.advance(31.0)  # past the visibility timeout: order-2 is visible again
        q.shutdown()
        await asyncio.gather(*workers)
    print(*log, q.stats(), sep="\n")
    return log, q.stats()


if __name__ == "__main__":
    asyncio.run(main())
