"""Cancellation and timeouts of the asyncio shell at every await point it reaches.

The promise of ``impl/aio.py`` (docs/contract.md section 8): a waiting operation takes its step
in its own task after it wakes, with no ``await`` between that step and its return, so an
operation cancelled at any await (``Task.cancel``, ``asyncio.timeout``, ``asyncio.wait_for``,
the queue's own ``timeout=``, a task group that fails) has received or sent nothing, and a
wakeup it had already been given goes on to the next waiter.

How the await points are found, rather than guessed. Each test builds a *world*: a fresh
:class:`impl.FakeClock`, a :class:`~model_tests.aio.loop.DeterministicLoop` on it, a queue, a
few tasks that wait in it (the *target* among other waiters of both kinds) and a *script* of
actions that make their conditions true one unit at a time (a send, a send and a snatch in the
same step, a batch, a delete). A run is a sequence of steps: one ready callback of the loop,
or, when the loop is idle, the script's next action. :func:`sweep` runs the world once with a
*strike* (a cancel, a clock advance that makes a timeout expire, a task group's failing task)
after k = 0, 1, 2, ... steps, until the target completes before its strike: so the strike
lands once at every point the target passes through (not started, waiting on its future,
woken with its wakeup not yet run, waiting again after losing the race), in the loop's order
and in other orders (:func:`lifo`, :func:`timers_first`).

The invariants, after every step (the first two) and whenever the loop is idle (the third):

- ``NothingLost``: the ids in the queue are exactly the ids whose sends returned (so a
  cancelled send sent nothing), each in exactly one state, and ``stats()`` counts them so;
- ``HeldDeliveries``: every in-flight delivery ``(id, attempt)`` was returned to a task (or is
  the result of a finished inner task of ``wait_for`` that its caller has not resumed to take
  yet; none is left when the loop is idle), and every delivery a task holds and has not
  deleted is still in flight;
- ``NoSleepingWaiter``: no task waits in a receive while a message is deliverable (FIFO: its
  group is not locked), none in a send while there is room for it.

No wall time: the loop's time is the fake clock's, and only the tests move it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dis
import random
import types
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from functools import partial
from typing import Any, Final, cast

import pytest

from impl import AsyncFifoQueue, AsyncQueue, Empty, Entry, FakeClock, Full, Message, ShutDown
from model_tests.aio.loop import DeterministicLoop, fifo, started, where

#: The timeout of every timed wait here: the strike of a timeout test advances the clock by it.
D: Final = 5.0

#: How a target's operation is wrapped: not at all, ``async with asyncio.timeout(D)``,
#: ``asyncio.wait_for(..., D)``, or the queue's own ``timeout=D``.
PLAIN: Final = "plain"
TIMEOUT_CM: Final = "asyncio.timeout"
WAIT_FOR: Final = "wait_for"
TIMEOUT_ARG: Final = "timeout="
WRAPS: Final = (PLAIN, TIMEOUT_CM, WAIT_FOR, TIMEOUT_ARG)

Chooser = Callable[[Sequence[asyncio.Handle]], int]


def lifo(ready: Sequence[asyncio.Handle]) -> int:
    """The newest ready callback first: another order than the real loop's."""
    return len(ready) - 1


def timers_first(ready: Sequence[asyncio.Handle]) -> int:
    """A loop timer that came due (``asyncio.timeout``, ``wait_for``) before the wakeups that
    came with it in the same iteration: the other side of the timeout race."""
    for i, h in enumerate(ready):
        if isinstance(h, asyncio.TimerHandle):
            return i
    return 0


CHOOSERS: Final = {"fifo": fifo, "lifo": lifo, "timers_first": timers_first}


class Boom(Exception):
    """The failure of a task group's failing task."""


# =============================================================================================
# A world: a clock, a deterministic loop, a queue, tasks, a script, and the checks
# =============================================================================================


class World:
    """One run's queue and tasks, and what the tasks were given (see the module docstring)."""

    def __init__(
        self, *, fifo_queue: bool = False, queue_class: type[Any] | None = None, **queue_kw: Any
    ) -> None:
        self.clock = FakeClock()
        self.loop = DeterministicLoop(self.clock)
        self.fifo_queue = fifo_queue
        cls: Any = queue_class or (AsyncFifoQueue if fifo_queue else AsyncQueue)
        self.q: Any = cls(clock=self.clock, **queue_kw)
        #: Ids whose sends returned (the queue's answer: a duplicate's earlier id included).
        self.accepted: set[str] = set()
        #: Deliveries returned to a task, by (id, attempt), in the order they were returned.
        self.held: dict[tuple[str, int], Message[str]] = {}
        #: Deliveries the script deleted.
        self.deleted: set[tuple[str, int]] = set()
        #: Whether held deliveries may expire (the clock passes their deadlines).
        self.expiring = False
        #: The task of each operation still running, and what it waits for.
        self.waiting: dict[asyncio.Task[Any], tuple[str, int]] = {}
        #: The inner tasks made for ``wait_for``, whose results are in transit to their callers.
        self.inner: list[asyncio.Task[Any]] = []
        #: How each named operation ended: "ok", or the exception's class name.
        self.outcomes: dict[str, str] = {}
        #: Deliveries each named operation got.
        self.got: dict[str, list[str]] = {}
        self.crashes: list[str] = []
        self.script: list[Callable[[], None]] = []
        self.target: asyncio.Task[Any] | None = None
        #: The task whose ``await`` is the queue's future (the target, or its wait_for inner).
        self.probe: asyncio.Task[Any] | None = None
        #: Instead of one probe, the members of a task group (their points, joined).
        self.members: list[asyncio.Task[Any]] = []
        #: What a task group's failing task waits for (opened by the strike).
        self.gate: asyncio.Future[None] | None = None

    # -- tasks --------------------------------------------------------------------------------

    def spawn(self, name: str, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        with self.loop.running():
            return self.loop.create_task(coro, name=name)

    def op(
        self,
        name: str,
        kind: str,
        n: int,
        call: Callable[..., Awaitable[Any]],
        wrap: str = PLAIN,
        *,
        target: bool = False,
    ) -> asyncio.Task[Any]:
        """A task running one operation (``kind`` "receive" or "send", for ``n`` messages)."""
        task = self.spawn(name, self._run_op(name, kind, n, call, wrap))
        if target:
            self.target = self.probe = task
        return task

    async def _run_op(
        self, name: str, kind: str, n: int, call: Callable[..., Awaitable[Any]], wrap: str
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.waiting[task] = (kind, n)
        try:
            if wrap == PLAIN:
                result = await call()
            elif wrap == TIMEOUT_CM:
                async with asyncio.timeout(D):
                    result = await call()
            elif wrap == WAIT_FOR:
                inner = asyncio.ensure_future(call())
                self.inner.append(inner)
                if self.probe is task:
                    self.probe = inner
                result = await asyncio.wait_for(inner, D)
            elif wrap == TIMEOUT_ARG:
                result = await call(timeout=D)
            else:
                raise ValueError(f"wrap must be one of {WRAPS}, got {wrap!r}")
        except asyncio.CancelledError:
            self.outcomes[name] = "CancelledError"
            raise
        except Boom:
            self.outcomes[name] = "Boom"
            raise
        except (TimeoutError, Empty, Full, ShutDown) as e:
            self.outcomes[name] = type(e).__name__
        except BaseException as e:
            self.crashes.append(f"{name} died: {e!r}")
            raise
        else:
            # No await between the operation's return and this record: the task holds it.
            self.outcomes[name] = "ok"
            self._record(name, result)
        finally:
            del self.waiting[task]

    def _record(self, name: str, result: object) -> None:
        items = result if isinstance(result, list) else [result]
        got = self.got.setdefault(name, [])
        for x in items:
            if isinstance(x, Message):
                self.held[(x.id, x.attempt)] = x
                got.append(x.id)
            elif isinstance(x, str):
                self.accepted.add(x)

    # -- operations, as zero-argument calls (a wrap may add timeout=) ----------------------------

    def receive(self) -> Callable[..., Awaitable[Any]]:
        return lambda **kw: self.q.receive(**kw)

    def receive_batch(self, n: int) -> Callable[..., Awaitable[Any]]:
        return lambda **kw: self.q.receive_batch(n, **kw)

    def anext(self) -> Callable[..., Awaitable[Any]]:
        # ``async for``'s one step: __anext__ of the queue's iterator (no timeout= of its own).
        def call(**kw: Any) -> Awaitable[Any]:
            if kw:
                raise TypeError("async for takes no timeout")
            return cast(Awaitable[Any], self.q.__aiter__().__anext__())

        return call

    def send(self, id: str, group: str = "g", **extra: Any) -> Callable[..., Awaitable[Any]]:
        if self.fifo_queue:
            return lambda **kw: self.q.send(f"body-{id}", group=group, id=id, **extra, **kw)
        return lambda **kw: self.q.send(f"body-{id}", id=id, **extra, **kw)

    def send_batch(
        self, ids: Sequence[str], groups: Sequence[str] | None = None
    ) -> Callable[..., Awaitable[Any]]:
        gs = list(groups) if groups is not None else ["g"] * len(ids)
        if self.fifo_queue:
            entries = [Entry(f"body-{i}", id=i, group=g) for i, g in zip(ids, gs, strict=True)]
        else:
            entries = [Entry(f"body-{i}", id=i) for i in ids]
        return lambda **kw: self.q.send_batch(entries, **kw)

    # -- script actions (run when the loop is idle) ----------------------------------------------

    def later(self, name: str, kind: str, n: int, call: Callable[..., Awaitable[Any]]) -> None:
        """Append a script action that starts an operation's task: it begins to wait behind
        every task that waits by then."""

        def start() -> None:
            self.op(name, kind, n, call)

        self.script.append(start)

    def act(self, name: str, body: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Append a script action: a task running ``body`` (which never waits here)."""
        self.script.append(lambda: self._act_now(name, body))

    def _act_now(self, name: str, body: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        async def run() -> None:
            try:
                await body()
            except ShutDown:
                pass  # an action after a shutdown strike: refused, it changed nothing
            except BaseException as e:
                self.crashes.append(f"script action {name} died: {e!r}")
                raise

        self.spawn(name, run())

    def act_send(self, id: str, group: str = "g") -> None:
        async def body() -> None:
            self._record("script", await self.send(id, group)(block=False))

        self.act(f"send {id}", body)

    def act_send_batch(self, ids: Sequence[str], groups: Sequence[str] | None = None) -> None:
        async def body() -> None:
            self._record("script", await self.send_batch(ids, groups)(block=False))

        self.act(f"send_batch {ids}", body)

    def act_send_and_snatch(self, id: str, group: str = "g") -> None:
        """A send, and in the same step a non-waiting receive that takes the message: the
        waiter the send woke finds nothing when it runs and waits again."""

        async def body() -> None:
            self._record("script", await self.send(id, group)(block=False))
            with contextlib.suppress(Empty):  # only where a waker took it (a mutant hands over)
                self._record("script", await self.q.receive(block=False))

        self.act(f"send and snatch {id}", body)

    def act_free(self) -> None:
        """Receive one message and delete it in the same step: one slot freed."""

        async def body() -> None:
            m = await self.q.receive(block=False)
            self._record("script", m)
            assert self.q.delete(m.receipt)
            self.deleted.add((m.id, m.attempt))

        self.act("free", body)

    def act_free_and_fill(self, id: str, group: str = "g") -> None:
        """Free one slot and fill it in the same step: the sender it woke finds it full."""

        async def body() -> None:
            m = await self.q.receive(block=False)
            self._record("script", m)
            assert self.q.delete(m.receipt)
            self.deleted.add((m.id, m.attempt))
            self._record("script", await self.send(id, group)(block=False))

        self.act(f"free and fill {id}", body)

    def act_delete_oldest(self) -> None:
        """Delete the oldest delivery a task holds and has not deleted (if any)."""

        def run() -> None:
            for key, m in self.held.items():
                if key not in self.deleted:
                    assert self.q.delete(m.receipt)
                    self.deleted.add(key)
                    return

        self.script.append(run)

    # -- running ------------------------------------------------------------------------------

    def setup(self, body: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Run ``body`` to its end before any task of the world exists."""
        self.loop.run_until_complete(body())
        self.check_always()

    def step(self, choose: Chooser = fifo) -> bool:
        """One step (a ready callback, or at idle the script's next action), then the checks;
        ``False`` if the loop is idle and the script done."""
        ready = self.loop.ready()
        if ready:
            self.loop.run_ready(choose(ready))
        else:
            self.check_idle()
            if not self.script:
                return False
            action = self.script.pop(0)
            with self.loop.running():
                action()
        self.check_always()
        return True

    def finish(self, choose: Chooser = fifo, max_steps: int = 2_000) -> None:
        for _ in range(max_steps):
            if not self.step(choose):
                return
        raise AssertionError(f"still busy after {max_steps} steps")

    def point(self) -> str:
        """Where the probed task is (the group's members: each, joined by commas)."""
        if self.members:
            return ",".join(_point(t) for t in self.members)
        return _point(self.probe)

    def close(self) -> None:
        """End every task where it waits, close the queue and the loop."""
        loop = self.loop
        tasks = [*self.waiting, *self.inner, *self.members]
        if self.target is not None:
            tasks.append(self.target)
        for t in tasks:
            if not t.done():
                loop.cancel(t)
        loop.run_until_idle()
        with loop.running():
            self.q.close()
        loop.run_until_idle()
        loop.close()

    # -- the checks ---------------------------------------------------------------------------

    def in_transit(self) -> tuple[set[tuple[str, int]], set[str]]:
        """What finished inner tasks of ``wait_for`` returned that their callers have not
        taken (yet): deliveries, and ids of accepted sends."""
        got: set[tuple[str, int]] = set()
        sent: set[str] = set()
        for t in self.inner:
            if t.done() and not t.cancelled() and t.exception() is None:
                r = t.result()
                for x in r if isinstance(r, list) else [r]:
                    if isinstance(x, Message):
                        got.add((x.id, x.attempt))
                    elif isinstance(x, str):
                        sent.add(x)
        return got - set(self.held), sent - self.accepted

    def check_always(self) -> None:
        assert not self.loop.errors, self.loop.errors
        assert not self.crashes, self.crashes
        self.q.machine.check()  # the machine's own invariants (Machine.check)
        snap = self.q.snapshot()
        stats = self.q.stats()
        # NothingLost: the ids present are exactly the accepted ones, each in one state.
        groups = {
            "visible": [m.id for m in snap.visible],
            "in_flight": [m.id for m in snap.in_flight],
            "dead": [m.id for m in snap.dead],
            "delayed": [m.id for m in snap.delayed],
            "done": sorted(snap.done),
            "cancelled": sorted(snap.cancelled),
            "aged_out": sorted(snap.aged_out),
            "moved": sorted(snap.moved),
        }
        every = [id for ids in groups.values() for id in ids]
        assert len(every) == len(set(every)), f"NothingLost: an id in two states: {groups}"
        got_on_the_way, sent_on_the_way = self.in_transit()
        assert self.accepted <= set(every) <= self.accepted | sent_on_the_way, (
            f"NothingLost: present {sorted(every)} != accepted {sorted(self.accepted)}"
        )
        for state, ids in groups.items():
            assert getattr(stats, state) == len(ids), f"stats().{state} != snapshot: {stats}"
        # HeldDeliveries: every in-flight delivery is held (or in transit to its holder).
        flying = {(m.id, m.attempt) for m in snap.in_flight}
        holders = set(self.held) | got_on_the_way
        assert flying <= holders, f"HeldDeliveries: {sorted(flying - holders)} held by no task"
        if not self.expiring:
            live = set(self.held) - self.deleted
            assert live <= flying, f"held deliveries no longer in flight: {sorted(live - flying)}"

    def deliverable(self) -> bool:
        snap = self.q.snapshot()
        if not self.fifo_queue:
            return bool(snap.visible)
        locked = {m.group for m in snap.in_flight}
        return any(m.group not in locked for m in snap.visible)

    def room(self, n: int) -> bool:
        cap = self.q.capacity
        s = self.q.stats()
        return cap is None or s.visible + s.in_flight + s.delayed + n <= cap

    def check_idle(self) -> None:
        assert self.in_transit() == (set(), set()), "a finished operation's result was not taken"
        for task, (kind, n) in self.waiting.items():
            if kind == "receive":
                assert not self.deliverable(), (
                    f"NoSleepingWaiter: {task.get_name()} waits while a message is "
                    f"deliverable: {self.q.snapshot()}"
                )
            else:
                assert not self.room(n), (
                    f"NoSleepingWaiter: {task.get_name()} waits to send {n} while there is "
                    f"room: {self.q.stats()}"
                )


def _point(t: asyncio.Task[Any] | None) -> str:
    """Where a task is: not started, waiting on a pending future, woken (its future resolved,
    its step not yet run), ready (to run for another reason), done."""
    if t is None or not started(t):
        return "not started"
    if t.done():
        return "done"
    fut = getattr(t, "_fut_waiter", None)
    if fut is None:
        return "ready"
    return "woken" if fut.done() else "waiting"


# =============================================================================================
# The sweep
# =============================================================================================


def sweep(
    build: Callable[[], World],
    strike: Callable[[World], None],
    choose: Chooser = fifo,
    max_k: int = 400,
    sites: set[str] | None = None,
    after: Callable[[World], None] | None = None,
) -> list[str]:
    """Run ``build()``'s world with ``strike`` after k steps, for k = 0, 1, ... until the target
    completes before k steps (checking every run to its end); the points struck, in order.
    ``sites`` collects the ``file:line`` of the shell where the probed task was suspended;
    ``after`` is a further check of each struck run, at its end."""
    points: list[str] = []
    for k in range(max_k):
        w = build()
        if isinstance(choose, Seeded):
            choose.reset()
        try:
            n = 0
            while n < k and w.step(choose):
                n += 1
            assert w.target is not None
            if w.target.done():
                w.finish(choose)  # the target ends before any strike: every point was struck
                return points
            points.append(w.point())
            if sites is not None and w.probe is not None and points[-1] in ("waiting", "woken"):
                sites.add(where(w.probe))
            with w.loop.running():
                strike(w)
            w.finish(choose)
            if after is not None:
                after(w)
            if n < k:  # idle with the script done: the target waits for ever, struck there
                return points
        finally:
            w.close()
    raise AssertionError(f"the target still runs after {max_k} steps")


def cancel_target(w: World) -> None:
    assert w.target is not None
    w.loop.cancel(w.target)


def expire(w: World) -> None:
    """The clock reaches every timed wait's end: its timer fires in this very advance."""
    w.loop.advance(D)


# =============================================================================================
# The worlds
# =============================================================================================

RECEIVE_KINDS: Final = ("receive", "receive_batch", "async for")
SEND_KINDS: Final = ("send", "send_batch")


def receivers_world(
    fifo_queue: bool, kind: str, pos: int, wrap: str, queue_class: type[Any] | None = None
) -> World:
    """Four receivers (the target at ``pos``) wait on an empty queue; the script sends one
    that is snatched in the same step (the woken one waits again), one, then a batch of two
    (two wakeups at once). Three deliverable messages for four receivers: whenever the target
    is woken another receiver still waits, to be given the wakeup if the target is cancelled.
    FIFO: the second send is to the snatched message's group, locked until it is deleted."""
    w = World(fifo_queue=fifo_queue, queue_class=queue_class, visibility_timeout=30.0)
    for i in range(4):
        if i == pos:
            call = {
                "receive": w.receive(),
                "receive_batch": w.receive_batch(2),
                "async for": w.anext(),
            }[kind]
            w.op("T", "receive", 1, call, wrap, target=True)
        else:
            w.op(f"R{i}", "receive", 1, w.receive())
    w.act_send_and_snatch("a", group="g")
    w.act_send("b", group="g")
    if fifo_queue:
        w.act_delete_oldest()  # the snatched a: unlocks g (b becomes deliverable)
    w.act_send_batch(["c", "d"], groups=["h", "k"])
    return w


def senders_world(
    fifo_queue: bool, kind: str, pos: int, wrap: str, queue_class: type[Any] | None = None
) -> World:
    """A full queue (capacity 3) and four senders (the target at ``pos``; a send_batch target
    sends two); the script frees a slot and fills it in the same step (the woken sender finds
    it full and waits again), then frees three slots one at a time: fewer than the senders
    need, so whenever the target is woken another sender still waits."""
    w = World(fifo_queue=fifo_queue, queue_class=queue_class, capacity=3, visibility_timeout=30.0)

    async def fill() -> None:
        for i in range(3):
            w._record("setup", await w.send(f"p{i}", group=f"p{i}")(block=False))

    w.setup(fill)
    for i in range(4):
        if i == pos:
            call = (
                w.send_batch(["t1", "t2"], groups=["t", "t"])
                if kind == "send_batch"
                else w.send("t1", group="t")
            )
            w.op("T", "send", 2 if kind == "send_batch" else 1, call, wrap, target=True)
        else:
            w.op(f"S{i}", "send", 1, w.send(f"s{i}", group=f"s{i}"))
    w.act_free_and_fill("x", group="x")
    for _ in range(3):
        w.act_free()
    return w


def mixed_fifo_world(target_kind: str, wrap: str) -> World:
    """A FIFO queue of capacity 2, full, whose one visible message's group is locked: receivers
    and senders both wait. The script deletes the oldest held delivery, one at a time; each
    delete frees a slot (a sender's wakeup) and unlocks a group (a receiver's)."""
    w = World(fifo_queue=True, capacity=2, visibility_timeout=30.0)

    async def fill() -> None:
        for id in ("g1", "g2"):
            w._record("setup", await w.send(id, group="g")(block=False))
        w._record("setup", await w.q.receive(block=False))

    w.setup(fill)
    w.op("R0", "receive", 1, w.receive())
    w.op("S0", "send", 1, w.send("s0", group="s0"))
    if target_kind == "receive":
        w.op("T", "receive", 1, w.receive(), wrap, target=True)
    else:
        w.op("T", "send", 1, w.send("t1", group="t"), wrap, target=True)
    w.op("R1", "receive", 1, w.receive())
    w.op("S1", "send", 1, w.send("s1", group="s1"))
    for _ in range(6):
        w.act_delete_oldest()
    return w


def timers_world(fifo_queue: bool, pos: int, delays: bool) -> World:
    """Four receivers (the target at ``pos``) wait; the messages they get are made visible by
    the loop timer alone, one per advance of the script: deliveries whose visibility timeouts
    run out at 1, 2 and 3 (``delays``: standard sends delayed by 1, 2 and 3 instead)."""
    w = World(fifo_queue=fifo_queue, visibility_timeout=30.0)
    w.expiring = True

    async def fill() -> None:
        for i, id in enumerate(("a", "b", "c"), 1):
            if delays:
                w._record("setup", await w.q.send(f"body-{id}", id=id, delay=float(i)))
            else:
                w._record("setup", await w.send(id, group=id)(block=False))
        if not delays:
            for i in (1, 2, 3):
                w._record("setup", await w.q.receive(visibility_timeout=float(i)))

    w.setup(fill)
    for i in range(4):
        w.op("T" if i == pos else f"R{i}", "receive", 1, w.receive(), target=i == pos)
    for _ in range(3):
        w.script.append(lambda: w.loop.advance(1.0))
    return w


# =============================================================================================
# 1. Task.cancel at every await point, every blocking operation, with other waiters
# =============================================================================================


def _assert_swept(points: list[str]) -> None:
    # The sweep reached the two windows that matter: waiting, and woken before its step.
    assert "waiting" in points, points
    assert "woken" in points, points


@pytest.mark.parametrize("order", ["fifo", "lifo"])
@pytest.mark.parametrize("pos", [0, 1, 2, 3])
@pytest.mark.parametrize("kind", RECEIVE_KINDS)
@pytest.mark.parametrize("fifo_queue", [False, True], ids=["standard", "fifo"])
def test_a_receive_cancelled_at_any_await_point_delivers_nothing_and_passes_its_wakeup_on(
    fifo_queue: bool, kind: str, pos: int, order: str
) -> None:
    points = sweep(
        lambda: receivers_world(fifo_queue, kind, pos, PLAIN), cancel_target, CHOOSERS[order]
    )
    _assert_swept(points)


@pytest.mark.parametrize("order", ["fifo", "lifo"])
@pytest.mark.parametrize("pos", [0, 1, 2, 3])
@pytest.mark.parametrize("kind", SEND_KINDS)
@pytest.mark.parametrize("fifo_queue", [False, True], ids=["standard", "fifo"])
def test_a_send_cancelled_at_any_await_point_sends_nothing_and_passes_its_wakeup_on(
    fifo_queue: bool, kind: str, pos: int, order: str
) -> None:
    points = sweep(
        lambda: senders_world(fifo_queue, kind, pos, PLAIN), cancel_target, CHOOSERS[order]
    )
    _assert_swept(points)


@pytest.mark.parametrize(
    ("order", "pos"), [("fifo", 0), ("fifo", 1), ("fifo", 2), ("lifo", 1), ("lifo", 3)]
)
@pytest.mark.parametrize(("fifo_queue", "delays"), [(False, False), (False, True), (True, False)])
def test_a_receive_woken_by_the_loop_timer_and_cancelled_passes_its_wakeup_on(
    fifo_queue: bool, delays: bool, order: str, pos: int
) -> None:
    # The wakeups here are the loop timer's (a released delivery, a delay run out), fired
    # inside the clock's advance rather than by another task. (Three messages for four
    # receivers: the positions are those that get one, the last to wait in each order not.)
    points = sweep(lambda: timers_world(fifo_queue, pos, delays), cancel_target, CHOOSERS[order])
    _assert_swept(points)


@pytest.mark.parametrize("order", ["fifo", "lifo"])
@pytest.mark.parametrize("target_kind", ["receive", "send"])
def test_cancelled_at_any_point_among_waiting_receivers_and_senders_of_a_fifo_queue(
    target_kind: str, order: str
) -> None:
    points = sweep(lambda: mixed_fifo_world(target_kind, PLAIN), cancel_target, CHOOSERS[order])
    _assert_swept(points)


def shut_down(w: World) -> None:
    w.q.shutdown()


def _every_wait_ended(w: World) -> None:
    # After a shutdown nobody waits, and every operation returned or raised ShutDown.
    assert not w.waiting, [t.get_name() for t in w.waiting]
    assert set(w.outcomes.values()) <= {"ok", "ShutDown"}, w.outcomes


@pytest.mark.parametrize("order", ["fifo", "lifo"])
@pytest.mark.parametrize(
    ("fifo_queue", "world"),
    [(f, k) for f in (False, True) for k in ("receivers", "senders")] + [(True, "mixed")],
)
def test_a_shutdown_at_any_point_ends_every_wait_and_loses_nothing(
    fifo_queue: bool, world: str, order: str
) -> None:
    # shutdown() wakes every waiter: receivers take what is still deliverable, then raise
    # ShutDown, as senders do; at whatever point the shutdown finds each of them.
    def build() -> World:
        if world == "receivers":
            return receivers_world(fifo_queue, "receive", 1, PLAIN)
        if world == "senders":
            return senders_world(fifo_queue, "send", 1, PLAIN)
        return mixed_fifo_world("receive", PLAIN)

    points = sweep(build, shut_down, CHOOSERS[order], after=_every_wait_ended)
    _assert_swept(points)


def _wait_call_lines(module: Any) -> set[int]:
    """The lines of ``module``'s functions that call ``self._wait``, read from the compiled
    code the tests run (so an edit of the file since its import cannot shift them)."""
    lines: set[int] = set()
    todo = [
        f.__code__
        for cls in vars(module).values()
        if isinstance(cls, type) and cls.__module__ == module.__name__
        for f in vars(cls).values()
        if hasattr(f, "__code__")
    ]
    while todo:
        code = todo.pop()
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        for ins in dis.get_instructions(code):
            if ins.argval == "_wait" and ins.opname in ("LOAD_METHOD", "LOAD_ATTR"):
                assert ins.positions is not None and ins.positions.lineno is not None
                lines.add(ins.positions.lineno)
    return lines


def test_the_sweeps_strike_every_await_site_of_the_driver() -> None:
    # The await points are found by running, not listed by hand: every line of impl/aio.py
    # where an operation awaits its waiter future (a call of ``self._wait``) is a line where
    # some sweep found the target suspended, waiting or woken, and struck it there; and the
    # sweeps found it suspended nowhere else in the driver. Every operation waits in the one
    # loop (``_AsyncBase._until``): one site, reached by all four kinds of call below.
    import impl.aio

    expected = {f"impl/aio.py:{line}" for line in _wait_call_lines(impl.aio)}
    assert len(expected) == 1, expected
    seen: set[str] = set()
    for f in (False, True):
        for kind in RECEIVE_KINDS:
            sweep(partial(receivers_world, f, kind, 1, PLAIN), cancel_target, sites=seen)
        for kind in SEND_KINDS:
            sweep(partial(senders_world, f, kind, 1, PLAIN), cancel_target, sites=seen)
    # (where() cannot look inside an async generator's __anext__: async for's task shows the
    # test's own line, its wait being receive's, struck through the receive sweeps)
    assert {s for s in seen if s.startswith("impl/")} == expected


def test_the_sweep_catches_the_two_teaching_mutants() -> None:
    # The checks have teeth: a shell whose cancelled woken waiter keeps its wakeup leaves a
    # receiver (and a sender) asleep beside what it waits for; one whose waker receives on the
    # waiter's behalf leaves an in-flight message with no task holding it.
    from model_tests.aio.mutants import HandoffAsyncQueue, NoPassOnAsyncQueue

    with pytest.raises(AssertionError, match="NoSleepingWaiter"):
        sweep(
            lambda: receivers_world(False, "receive", 1, PLAIN, NoPassOnAsyncQueue), cancel_target
        )
    with pytest.raises(AssertionError, match="NoSleepingWaiter"):
        sweep(lambda: senders_world(False, "send", 1, PLAIN, NoPassOnAsyncQueue), cancel_target)
    with pytest.raises(AssertionError, match="HeldDeliveries"):
        sweep(lambda: receivers_world(False, "receive", 1, PLAIN, HandoffAsyncQueue), cancel_target)


class _AwaitAfterTheReceive(AsyncQueue[Any]):
    """A broken shell: an ``await`` between a receive's step and its return, where a cancel
    lands after the step has taken the delivery."""

    async def receive(self, **kw: Any) -> Message[Any]:
        m = await super().receive(**kw)
        await asyncio.sleep(0)
        return m


class _AwaitAfterTheSend(AsyncQueue[Any]):
    """The same between a send's step and its return."""

    async def send(self, body: Any, **kw: Any) -> str:
        id = await super().send(body, **kw)
        await asyncio.sleep(0)
        return id


def test_the_sweep_catches_an_await_between_the_step_and_the_return() -> None:
    # The promise the shell keeps, broken on purpose. The checks of every step flag the window
    # itself (a step taken whose result has not reached its task by the end of that step),
    # where a cancel would leave a delivery nobody holds (HeldDeliveries) or a message
    # accepted though its sender saw the send fail (NothingLost: an id no send returned).
    with pytest.raises(AssertionError, match="HeldDeliveries"):
        sweep(
            lambda: receivers_world(False, "receive", 1, PLAIN, _AwaitAfterTheReceive),
            cancel_target,
        )
    with pytest.raises(AssertionError, match="NothingLost"):
        sweep(lambda: senders_world(False, "send", 1, PLAIN, _AwaitAfterTheSend), cancel_target)


# =============================================================================================
# 2. Timeouts: asyncio.timeout, asyncio.wait_for and timeout= expiring at every await point
# =============================================================================================

TIMED: Final = (TIMEOUT_CM, WAIT_FOR, TIMEOUT_ARG)


@pytest.mark.parametrize("order", ["fifo", "timers_first"])
@pytest.mark.parametrize("pos", [0, 1, 3])
@pytest.mark.parametrize(
    ("kind", "wrap"),
    [(k, w) for k in RECEIVE_KINDS for w in TIMED if (k, w) != ("async for", TIMEOUT_ARG)],
)
@pytest.mark.parametrize("fifo_queue", [False, True], ids=["standard", "fifo"])
def test_a_receive_whose_timeout_expires_at_any_await_point_delivers_nothing(
    fifo_queue: bool, kind: str, wrap: str, pos: int, order: str
) -> None:
    # async for has no timeout= of its own: only asyncio.timeout and wait_for around it.
    points = sweep(lambda: receivers_world(fifo_queue, kind, pos, wrap), expire, CHOOSERS[order])
    _assert_swept(points)


@pytest.mark.parametrize("order", ["fifo", "timers_first"])
@pytest.mark.parametrize("wrap", TIMED)
@pytest.mark.parametrize("pos", [0, 1, 3])
@pytest.mark.parametrize("kind", SEND_KINDS)
@pytest.mark.parametrize("fifo_queue", [False, True], ids=["standard", "fifo"])
def test_a_send_whose_timeout_expires_at_any_await_point_sends_nothing(
    fifo_queue: bool, kind: str, pos: int, wrap: str, order: str
) -> None:
    points = sweep(lambda: senders_world(fifo_queue, kind, pos, wrap), expire, CHOOSERS[order])
    _assert_swept(points)


@pytest.mark.parametrize("pos", [0, 1, 3])
@pytest.mark.parametrize("wrap", [TIMEOUT_CM, WAIT_FOR])
@pytest.mark.parametrize("world", ["receivers", "senders"])
def test_a_timed_wait_cancelled_from_outside_at_any_point_changes_nothing(
    world: str, wrap: str, pos: int
) -> None:
    # Task.cancel on a task inside asyncio.timeout or wait_for (the outer task of wait_for):
    # a cancellation that is not the timeout's own.
    if world == "receivers":
        points = sweep(lambda: receivers_world(False, "receive", pos, wrap), cancel_target)
    else:
        points = sweep(lambda: senders_world(False, "send", pos, wrap), cancel_target)
    _assert_swept(points)


@pytest.mark.parametrize("order", ["fifo", "timers_first"])
@pytest.mark.parametrize("target_kind", ["receive", "send"])
@pytest.mark.parametrize("wrap", TIMED)
def test_timeouts_among_waiting_receivers_and_senders_of_a_fifo_queue(
    wrap: str, target_kind: str, order: str
) -> None:
    points = sweep(lambda: mixed_fifo_world(target_kind, wrap), expire, CHOOSERS[order])
    _assert_swept(points)


# -- the race: the timeout fires in the same loop iteration as the wakeup -----------------------


def _race_world(kind: str, wrap: str) -> World:
    """T (``wrap``-ped, its timeout due at D) and then O wait (O from the script's first action,
    so behind T even when T's wait is wait_for's inner task); at D the clock also makes what
    they wait for available (a receive: a message sent with delay D becomes visible; a send:
    a message with retention D ages out and frees the one slot). The script's second
    action advances the clock to D, so the queue's timer wakes T in the same advance in which T's
    timeout comes due."""
    if kind == "receive":
        w = World(visibility_timeout=30.0)

        async def delayed() -> None:
            w._record("setup", await w.q.send("later", id="m", delay=D))

        w.setup(delayed)
        w.op("T", "receive", 1, w.receive(), wrap, target=True)
        w.later("O", "receive", 1, w.receive())
    else:
        w = World(capacity=1, retention=D, visibility_timeout=30.0)

        async def full() -> None:
            w._record("setup", await w.q.send("old", id="old"))

        w.setup(full)
        w.op("T", "send", 1, w.send("t1"), wrap, target=True)
        w.later("O", "send", 1, w.send("o1"))
    w.script.append(lambda: w.loop.advance(D))
    return w


@pytest.mark.parametrize("kind", ["receive", "send"])
@pytest.mark.parametrize("wrap", [TIMEOUT_CM, WAIT_FOR])
def test_a_timeout_due_in_the_same_iteration_as_the_wakeup_either_wins_and_nothing_is_lost(
    wrap: str, kind: str
) -> None:
    # Each order of the loop decides the race one way: the woken task's step first (it takes
    # what it was woken for and its timeout is disarmed), or the timeout first (the task
    # raises TimeoutError having taken nothing, and its wakeup goes on to O, which takes it).
    outcomes = set()
    for name, order in CHOOSERS.items():
        w = _race_world(kind, wrap)
        try:
            w.finish(order)
            t, o = w.outcomes.get("T"), w.outcomes.get("O")
            if t == "ok":
                assert o is None, (name, w.outcomes)  # O still waits, and may: nothing left
            else:
                assert (t, o) == ("TimeoutError", "ok"), (name, w.outcomes)
            outcomes.add(t)
        finally:
            w.close()
    assert outcomes == {"ok", "TimeoutError"}, "the race was not run both ways"


@pytest.mark.parametrize("kind", ["receive", "send"])
@pytest.mark.parametrize("order", list(CHOOSERS))
def test_the_queues_own_timeout_due_with_the_wakeup_loses_to_the_step(
    kind: str, order: str
) -> None:
    # timeout= is a timer of the queue's clock: when it and the wakeup come due together the
    # task runs once and takes its step before it looks at the time, so it succeeds.
    w = _race_world(kind, TIMEOUT_ARG)
    try:
        w.finish(CHOOSERS[order])
        assert w.outcomes.get("T") == "ok", w.outcomes
        assert "O" not in w.outcomes  # O waits on, with nothing there for it
    finally:
        w.close()


def test_a_timed_out_waiter_cancelled_before_its_step_leaves_the_others_in_their_order() -> None:
    w = World(visibility_timeout=30.0)
    t = w.op("T", "receive", 1, w.receive(), TIMEOUT_ARG, target=True)
    w.op("O", "receive", 1, w.receive())
    w.op("P", "receive", 1, w.receive())
    try:
        w.finish()  # all three wait, O before P
        w.loop.advance(D)  # T's timeout= timer resolves T's future: no message came
        w.loop.cancel(t)  # and T is cancelled before its step (a failing group, a timeout)
        w.act_send("x")
        w.finish()
        assert w.outcomes.get("T") == "CancelledError"
        assert w.got.get("O") == ["x"], f"P got it, though O began to wait first: {w.got}"
    finally:
        w.close()


# =============================================================================================
# 3. Task groups that fail half-way
# =============================================================================================


def group_world(kind: str, fail: str) -> World:
    """A task group ``G`` (the target) of three receivers (``kind`` "receivers": an empty
    queue, the script as in :func:`receivers_world`) or three senders ("senders": a full queue
    of capacity 3, the script as in :func:`senders_world`), and one more waiter ``E`` outside
    the group that begins to wait after them (the script's first action). The group fails:
    ``fail`` "bomb", a fourth task raises when the strike opens its gate; "member", the first
    member whose operation returns raises right after it (holding what it got)."""
    w = World(capacity=3 if kind == "senders" else None, visibility_timeout=30.0)
    if kind == "senders":

        async def fill() -> None:
            for i in range(3):
                w._record("setup", await w.send(f"p{i}")(block=False))

        w.setup(fill)
    with w.loop.running():
        gate: asyncio.Future[None] = w.loop.create_future()
    w.gate = gate

    failed: list[str] = []

    def member_call(i: int) -> Callable[..., Awaitable[Any]]:
        plain = w.receive() if kind == "receivers" else w.send(f"s{i}")
        if fail != "member":
            return plain

        async def then_fail(**kw: Any) -> Any:
            result = await plain(**kw)
            if failed:
                return result
            failed.append(f"G{i}")
            w._record(f"G{i}", result)  # it holds what it got, then fails
            raise Boom

        return then_fail

    async def bomb() -> None:
        await gate
        raise Boom

    async def group() -> None:
        try:
            async with asyncio.TaskGroup() as tg:
                for i in range(3):
                    op = w._run_op(
                        f"G{i}",
                        "receive" if kind == "receivers" else "send",
                        1,
                        member_call(i),
                        PLAIN,
                    )
                    w.members.append(tg.create_task(op, name=f"G{i}"))
                if fail == "bomb":
                    tg.create_task(bomb(), name="bomb")
        except* Boom:
            w.outcomes["G"] = "Boom"
        else:
            w.outcomes["G"] = "ok"

    w.target = w.spawn("G", group())

    if kind == "receivers":
        w.later("E", "receive", 1, w.receive())
    else:
        w.later("E", "send", 1, w.send("e1"))
    if kind == "receivers":
        w.act_send_and_snatch("a")
        w.act_send("b")
        w.act_send_batch(["c", "d"])
    else:
        w.act_free_and_fill("x")
        for _ in range(3):
            w.act_free()
    return w


def open_gate(w: World) -> None:
    assert w.gate is not None
    if not w.gate.done():
        w.gate.set_result(None)


@pytest.mark.parametrize("order", ["fifo", "lifo"])
@pytest.mark.parametrize("kind", ["receivers", "senders"])
def test_a_task_group_that_fails_at_any_point_cancels_its_waiters_and_loses_nothing(
    kind: str, order: str
) -> None:
    points = sweep(lambda: group_world(kind, "bomb"), open_gate, CHOOSERS[order])
    # The group failed with members waiting, and with members woken but not yet run.
    assert any("waiting" in p for p in points), points
    assert any("woken" in p for p in points), points


@pytest.mark.parametrize("order", list(CHOOSERS))
@pytest.mark.parametrize("kind", ["receivers", "senders"])
def test_a_task_group_whose_member_fails_after_its_step_cancels_the_rest_in_that_iteration(
    kind: str, order: str
) -> None:
    # The first member raises right after its operation returns: in the loop iteration of its
    # wakeup, with the other members woken by the same batch or still waiting.
    w = group_world(kind, "member")
    try:
        w.finish(CHOOSERS[order])
        assert w.outcomes["G"] == "Boom", w.outcomes
        members = [w.outcomes.get(f"G{i}") for i in range(3)]
        assert members.count("Boom") == 1, w.outcomes
        assert set(members) <= {"Boom", "ok", "CancelledError"}, w.outcomes
    finally:
        w.close()


# =============================================================================================
# More strikes and more orders
# =============================================================================================


def cancel_target_and_the_woken(w: World) -> None:
    """Cancel the target and, in the same iteration, every other task whose wakeup is pending:
    several wakeups to pass on at once (a batch woke two, a freed slot and an unlocked group)."""
    cancel_target(w)
    for task in list(w.waiting):
        if task is not w.target and _point(task) == "woken":
            w.loop.cancel(task)


def _world(name: str, fifo_queue: bool, wrap: str = PLAIN) -> World:
    if name == "receivers":
        return receivers_world(fifo_queue, "receive", 1, wrap)
    if name == "batch receivers":
        return receivers_world(fifo_queue, "receive_batch", 2, wrap)
    if name == "senders":
        return senders_world(fifo_queue, "send", 1, wrap)
    if name == "batch senders":
        return senders_world(fifo_queue, "send_batch", 2, wrap)
    return mixed_fifo_world("send", wrap)


WORLDS: Final = [
    (f, name)
    for f in (False, True)
    for name in ("receivers", "batch receivers", "senders", "batch senders")
] + [(True, "mixed")]


@pytest.mark.parametrize(("fifo_queue", "world"), WORLDS)
def test_several_woken_waiters_cancelled_in_one_iteration_pass_every_wakeup_on(
    fifo_queue: bool, world: str
) -> None:
    points = sweep(partial(_world, world, fifo_queue), cancel_target_and_the_woken)
    _assert_swept(points)


class Seeded:
    """A random order of the ready callbacks, the same for the same seed: :func:`sweep`
    restarts it for each run, so that every run takes the same steps up to its strike."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.reset()

    def reset(self) -> None:
        self.rng = random.Random(self.seed)

    def __call__(self, ready: Sequence[asyncio.Handle]) -> int:
        return self.rng.randrange(len(ready))


@pytest.mark.parametrize(
    "seed", [0, 1, *(pytest.param(s, marks=pytest.mark.slow) for s in range(2, 10))]
)
@pytest.mark.parametrize(("fifo_queue", "world"), WORLDS)
def test_cancels_and_timeouts_in_random_orders_of_the_loop(
    fifo_queue: bool, world: str, seed: int
) -> None:
    # The same sweeps in orders no scheduler picks on purpose (each order a seed's, so a
    # failure replays): a cancel, and an asyncio.timeout expiring, at every point.
    sweep(partial(_world, world, fifo_queue), cancel_target, Seeded(seed))
    sweep(partial(_world, world, fifo_queue, TIMEOUT_CM), expire, Seeded(seed))
