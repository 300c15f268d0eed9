"""``FastMachine`` is the reference ``Machine``: the same programs give the same answers.

``impl.Queue`` runs :class:`impl.fast_machine.FastMachine`, the reference machine
(:class:`impl.machine.Machine`) with its common steps written out, and its threaded driver
takes those steps' fast entries (``send_now``, ``receive_now``, ``delete_now`` and their
batches) whenever they apply. Both are checked against the spec by the lockstep tests; this
file checks them against each other, directly: Hypothesis draws a program of operations (every
operation of the contract, receipts live, stale and forged, batches, delays, a trace sink on
and off, the clock moved and swept, shutdown), runs it on a queue of each machine over its own
fake clock, and compares, after every operation, what the caller got (a result or an
exception's type and message) and the whole observable state (``snapshot()``). The same is done
for the asyncio driver (``impl.AsyncQueue``), whose steps are the machine's outcome-returning
ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impl import AsyncQueue, Entry, FakeClock, Message, Queue, Receipt
from impl.fast_machine import FastMachine
from impl.machine import Machine
from model_tests.faults import ParkedSync

IDS = ("a", "b", "c", "d")


class ParkedClock(FakeClock):
    """A fake clock whose queues' sweeper threads never run (``impl/sync.py``'s seam): every
    sweep is the program's own ``advance``, so no thread fires a timer between two of its
    steps and the two queues' states can be compared after each."""

    sync = ParkedSync()


class ReferenceQueue(Queue[str]):
    """``impl.Queue`` on the reference machine (and so its generic driver path only)."""

    machine_class = Machine


class ReferenceAsyncQueue(AsyncQueue[str]):
    """``impl.AsyncQueue`` on the reference machine."""

    machine_class = Machine


# -- programs ----------------------------------------------------------------------------------

#: One operation: (name, arguments drawn once, applied the same way to both queues).
Op = tuple[str, tuple[Any, ...]]

_vt = st.one_of(st.none(), st.sampled_from([0.0, 1.0, 2.5]))
_delay = st.sampled_from([0.0, 0.0, 1.0])
_id = st.one_of(st.none(), st.sampled_from(IDS))
_held = st.integers(0, 20)  # which delivery held so far (modulo), or a forged receipt
_ops = st.one_of(
    st.tuples(st.just("send"), st.tuples(_id, _delay)),
    st.tuples(
        st.just("send_batch"),
        st.tuples(st.lists(st.tuples(_id, _delay), min_size=1, max_size=4)),
    ),
    st.tuples(st.just("receive"), st.tuples(_vt)),
    st.tuples(st.just("receive_batch"), st.tuples(st.integers(1, 4), _vt)),
    st.tuples(st.just("delete"), st.tuples(_held)),
    st.tuples(st.just("delete_batch"), st.tuples(st.lists(_held, min_size=1, max_size=4))),
    st.tuples(st.just("retry"), st.tuples(_held)),
    st.tuples(st.just("change_visibility"), st.tuples(_held, st.sampled_from([0.0, 1.0, 3.0]))),
    st.tuples(st.just("cancel"), st.tuples(st.sampled_from(IDS))),
    st.tuples(st.just("purge"), st.tuples()),
    st.tuples(st.just("advance"), st.tuples(st.sampled_from([0.5, 1.0, 2.0]))),
    st.tuples(st.just("trace"), st.tuples(st.booleans())),
)
_programs = st.tuples(
    st.one_of(st.none(), st.integers(0, 4)),  # capacity
    st.sampled_from([None, 1.0, 2.0]),  # the queue's visibility timeout
    st.one_of(st.none(), st.integers(1, 3)),  # max_receives
    st.lists(_ops, max_size=30),
)


def _receipt(held: list[Receipt], k: int) -> Receipt:
    """The k-th receipt held (modulo), or a forged one when none is held or ``k`` is 0."""
    if not held or k == 0:
        return Receipt(0, "a", 1)
    return held[k % len(held)]


def _apply(q: Any, clock: FakeClock, held: list[Receipt], trace: list[Any], op: Op) -> Any:
    """Run ``op`` on the threaded queue ``q``: what the caller gets."""
    name, args = op
    if name == "send":
        id, delay = args
        return q.send(f"body-{id}", id=id, delay=delay, block=False)
    if name == "send_batch":
        (entries,) = args
        return q.send_batch([Entry(f"b-{i}", id=i, delay=d) for i, d in entries], block=False)
    if name in ("receive", "receive_batch"):
        if name == "receive":
            got = [q.receive(block=False, visibility_timeout=args[0])]
        else:
            got = q.receive_batch(args[0], block=False, visibility_timeout=args[1])
        held.extend(m.receipt for m in got)
        return [(m.id, m.body, m.attempt) for m in got]
    if name == "delete":
        return q.delete(_receipt(held, args[0]))
    if name == "delete_batch":
        return q.delete_batch([_receipt(held, k) for k in args[0]])
    if name == "retry":
        return q.retry(_receipt(held, args[0]))
    if name == "change_visibility":
        return q.change_visibility(_receipt(held, args[0]), args[1])
    if name == "cancel":
        return q.cancel(args[0])
    if name == "purge":
        return q.purge()
    if name == "advance":
        clock.advance(args[0])
        q.sweep()
        return None
    assert name == "trace"
    q.record_trace(trace.append if args[0] else None)
    return None


def _answer(call: Callable[[], Any]) -> Any:
    """What the caller sees: the result, or the exception's type and message."""
    try:
        return ("ok", call())
    except Exception as e:  # every error of the contract, compared as the caller sees it
        return ("raised", type(e).__name__, str(e))


@settings(max_examples=300, deadline=None)
@given(_programs)
def test_the_fast_machine_answers_as_the_reference(program: tuple[Any, ...]) -> None:
    capacity, vt, max_receives, ops = program
    worlds: list[tuple[Queue[str], FakeClock, list[Receipt], list[Any]]] = []
    for cls in (Queue, ReferenceQueue):
        clock = ParkedClock()
        worlds.append((cls(capacity, vt, max_receives, clock=clock), clock, [], []))
    fast, ref = worlds
    assert isinstance(fast[0].machine, FastMachine) and type(ref[0].machine) is Machine
    try:
        for op in ops:
            got = [_answer(partial(_apply, *w, op)) for w in worlds]
            assert got[0] == got[1], (op, got)
            assert fast[0].snapshot() == ref[0].snapshot(), op
            assert fast[3] == ref[3], op  # the traces recorded so far
    finally:
        for q, *_ in worlds:
            q.close()


@settings(max_examples=150, deadline=None)
@given(_programs)
def test_the_asyncio_driver_on_the_fast_machine_answers_as_on_the_reference(
    program: tuple[Any, ...],
) -> None:
    capacity, vt, max_receives, ops = program

    async def answers(cls: type[AsyncQueue[str]]) -> list[Any]:
        clock = FakeClock()
        q = cls(capacity, vt, max_receives, clock=clock)
        held: list[Receipt] = []
        out: list[Any] = []
        for name, args in ops:
            if name == "trace":
                continue
            try:
                if name in ("send", "send_batch", "receive", "receive_batch"):
                    value = await _async_call(q, held, name, args)
                elif name == "advance":
                    clock.advance(args[0])
                    q.sweep()
                    value = None
                else:
                    value = _apply(q, clock, held, [], (name, args))
                out.append(("ok", value, q.snapshot()))
            except Exception as e:
                out.append(("raised", type(e).__name__, str(e), q.snapshot()))
        q.close()
        return out

    fast = asyncio.run(answers(AsyncQueue))
    ref = asyncio.run(answers(ReferenceAsyncQueue))
    assert fast == ref


async def _async_call(q: AsyncQueue[str], held: list[Receipt], name: str, args: Any) -> Any:
    if name == "send":
        id, delay = args
        return await q.send(f"body-{id}", id=id, delay=delay, block=False)
    if name == "send_batch":
        entries = [Entry(f"b-{i}", id=i, delay=d) for i, d in args[0]]
        return await q.send_batch(entries, block=False)
    got: list[Message[str]]
    if name == "receive":
        got = [await q.receive(block=False, visibility_timeout=args[0])]
    else:
        got = await q.receive_batch(args[0], block=False, visibility_timeout=args[1])
    held.extend(m.receipt for m in got)
    return [(m.id, m.body, m.attempt) for m in got]


@pytest.mark.parametrize("cls", [Queue, ReferenceQueue])
def test_the_fast_entries_decline_what_they_do_not_handle(cls: type[Queue[str]]) -> None:
    """Each fast entry answers ``None``, changing nothing, outside its case; the queue then
    takes the reference's path, so what the caller gets is the same (the test above)."""
    q = cls(capacity=1, visibility_timeout=5.0, clock=FakeClock())
    m = q.machine
    if not isinstance(m, FastMachine):
        assert not hasattr(m, "send_now")
        return
    q.send("x")
    before = q.snapshot()
    assert m.send_now(0.0, "y") is None  # no room
    assert m.send_batch_now(0.0, ["y"]) is None
    assert m.receive_now(0.0, None) is None  # no deadline: the reference's step
    assert m.receive_batch_now(0.0, 2, None) is None
    assert q.snapshot() == before
    q.record_trace(lambda step: None)
    assert m.delete_now(Receipt(q.token, "msg-1", 1)) is None  # recorded: the reference's
    assert m.receive_now(0.0, 5.0) is None
    assert q.snapshot() == before
    q.close()
