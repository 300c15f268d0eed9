"""The asyncio driver's mutants of the catalogue (``model_tests.mutants.ASYNC_MUTANTS``), each
caught by a named check, and ``impl.AsyncQueue`` passing every one of those checks.

- ``waiter_compaction_keeps_the_live_waiters``: a deterministic race on one event loop (no
  clock moves, no sleeping: the loop runs until nothing is ready): a receiver waits, twenty
  more wait and are cancelled, so the withdrawn futures outnumber the live ones and the FIFO
  is compacted, then one send. ``NoSleepingWaiter``: the first receiver, still waiting, gets
  the message.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any, Final

import pytest

from impl import AsyncQueue, FakeClock
from model_tests.mutants import ASYNC_MUTANTS, WithdrawnKeptAsyncQueue

AsyncClass = type[AsyncQueue[Any]]

#: Event-loop turns a woken receiver may take to finish (it needs two or three).
TURNS: Final = 100


async def _settle(task: asyncio.Task[Any]) -> None:
    """Let the loop run until ``task`` is done or ``TURNS`` turns have passed."""
    for _ in range(TURNS):
        if task.done():
            return
        await asyncio.sleep(0)  # one turn of the loop: no time passes


async def _compaction_race(cls: AsyncClass) -> str | None:
    q = cls(clock=FakeClock(), visibility_timeout=None)
    first = asyncio.create_task(q.receive())
    withdrawn = [asyncio.create_task(q.receive()) for _ in range(20)]
    await asyncio.sleep(0)  # every task starts and waits: nothing is visible
    if first.done():
        return f"waiter_compaction_keeps_the_live_waiters: the receiver did not wait: {first}"
    for t in withdrawn:
        t.cancel()
    await asyncio.gather(*withdrawn, return_exceptions=True)
    await q.send("x", id="x")
    await _settle(first)
    if not first.done():
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        return (
            "waiter_compaction_keeps_the_live_waiters: NoSleepingWaiter: the first receiver "
            f"sleeps beside a visible message ({q.stats()})"
        )
    got = first.result()
    if got.id != "x" or got.attempt != 1:
        return f"waiter_compaction_keeps_the_live_waiters: the receiver got {got}"
    return None


def waiter_compaction_keeps_the_live_waiters(cls: AsyncClass) -> str | None:
    return asyncio.run(_compaction_race(cls))


CHECKS: Final[dict[str, Callable[[AsyncClass], str | None]]] = {
    f.__name__: f for f in (waiter_compaction_keeps_the_live_waiters,)
}

#: Each asyncio mutant and the check that catches it (its docstring names it).
CAUGHT_BY: Final[dict[AsyncClass, str]] = {
    WithdrawnKeptAsyncQueue: "waiter_compaction_keeps_the_live_waiters",
}


@pytest.mark.parametrize("mutant", CAUGHT_BY, ids=lambda m: m.__name__)
def test_async_mutant_is_caught_by_its_check(mutant: AsyncClass) -> None:
    name = CAUGHT_BY[mutant]
    failure = CHECKS[name](mutant)
    assert failure is not None, f"{name} did not catch {mutant.__name__}"
    assert failure.startswith(name + ":"), failure


@pytest.mark.parametrize("check", CHECKS)
def test_the_real_async_queue_passes_every_async_check(check: str) -> None:
    assert CHECKS[check](AsyncQueue) is None


def test_every_async_mutant_is_caught_and_documented() -> None:
    assert set(CAUGHT_BY) == set(ASYNC_MUTANTS.values())
    for name, cls in ASYNC_MUTANTS.items():
        doc = inspect.getdoc(cls) or ""
        assert doc.startswith("MUTANT (asyncio)"), name
        assert "The bug:" in doc and "Why the checks see it:" in doc, name
        assert CAUGHT_BY[cls] in doc.partition("Why the checks see it:")[2], name
