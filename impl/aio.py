"""The asyncio driver: ``impl.AsyncQueue`` and ``impl.AsyncFifoQueue`` drive the queue machine
from one event loop.

The same machine as the threaded driver (``impl/machine.py``, ``impl/fifo_machine.py``), driven
by the same loop (``impl/threaded.py``: step, and while Blocked wait and step again, then apply
the outcome), with the two things a loop does differently:

- **Waits are futures.** A task that cannot take its step awaits a future of the condition it
  waits on (:class:`Waiters`: ``not_empty``, ``not_full``), in the order tasks began to wait.
  An outcome's effects resolve the first pending futures, one per unit it made available
  (:class:`impl.driver.Wakeups`, the arithmetic the threaded driver uses), all at shutdown.
- **Timers are one loop timer**, aimed at the machine's earliest due timer, re-aimed after each
  round and before every step that arms an earlier one (the machine's ``before_timer`` veto
  point: arming can fail, the clock's ``call_at``, and then the step changes nothing). On a
  clock with ``call_at`` (:class:`impl.FakeClock`) the timer is a callback of the clock, run
  when a test advances it (on the loop's thread at once, from another thread through
  ``loop.call_soon_threadsafe``); on the real clock it is ``loop.call_at``. A round that fails
  changed nothing; it is logged, counted in ``health()`` and retried after a backoff on the
  clock (``impl.sweeper.backoff``); what the timer cannot go on without ends it, reported the
  same way, until the next step that arms a timer, ``sweep()`` or ``health()``.

Cancellation (contract section 8; the asyncio version of the lost wakeup). A woken task takes
its step itself after it resumes: no ``await`` lies between the step and the return, so a task
cancelled at its await (``Task.cancel``, ``asyncio.timeout``, ``wait_for``, a failing task
group) has taken nothing. If its future had already been resolved, the wakeup it took is passed
on (:meth:`Futures.pass_on`), as asyncio's own ``Queue`` does with ``_wakeup_next``;
otherwise its future is withdrawn. So no message is in flight without a task that holds its
delivery (``HeldDeliveries``), and no waiter sleeps while what it waits for is there
(``NoSleepingWaiter``): ``tla/AsyncQueue.tla``; ``model_tests/aio`` breaks each half on purpose.

Threads. An AsyncQueue is bound to the event loop that first waits on it or arms a timer for it
(``RuntimeError`` from another loop) and, like ``asyncio.Queue``, is not thread-safe: call it
from that loop's thread. It holds no lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from types import TracebackType
from typing import Any, ClassVar, Final, Generic, Literal, Self

from impl.clock import Clock, MonotonicClock, check_clock
from impl.driver import (
    BATCH_SENDERS,
    QUEUE_DEFAULT,
    Default,
    Wakeups,
    check_batch,
    check_changes,
    check_destination,
    check_entries,
    check_fifo_entries,
    check_name,
    check_rate,
    check_receipts,
    check_retention,
    check_target,
    driver_of,
    not_a_receipt,
    step_of,
    weakly,
)
from impl.errors import Empty, Full, ShutDown
from impl.fast_machine import FastMachine
from impl.fifo_machine import FifoMachine
from impl.forking import new_token
from impl.machine import MAX_BATCH, Machine, T
from impl.message import Entry, Health, Message, Receipt, Snapshot, Stats
from impl.outcome import NOTHING, SHUT, Blocked, Effect, Outcome, TraceStep
from impl.redrive import RedriveTask
from impl.sweeper import backoff
from impl.system import System
from impl.validate import (
    INF,
    check_bool,
    check_callable,
    check_id,
    check_int,
    check_later,
    check_optional_int,
    check_optional_time,
    check_time,
)

__all__ = ["AsyncFifoQueue", "AsyncQueue", "Futures", "Waiters"]

#: Where the loop timer's failures and deaths are reported (the sweeper's logger).
log = logging.getLogger("impl.queue")

#: What a wait's own timeout timer resolves its future with: a wakeup no waker gave.
_TIMED_OUT: Final = object()


class Waiters:
    """A condition of the asyncio driver: the futures of the tasks waiting on it, oldest first.

    A future a waker resolved is popped by it. A withdrawn one (a cancelled task, a wait that
    timed out) stays in the FIFO, skipped by every waker, until withdrawn ones are half of it:
    then the FIFO is compacted to :meth:`live`. So a wakeup and a withdrawal cost O(1)
    amortized however many tasks wait (a scan of the FIFO for each is quadratic)."""

    __slots__ = ("futures", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.futures: deque[asyncio.Future[Any]] = deque()

    def resolve_first(self, result: object = None) -> bool:
        """Resolve the first pending future (dropping the done ones before it)."""
        futures = self.futures
        while futures:
            fut = futures.popleft()
            if not fut.done():
                fut.set_result(result)
                return True
        return False

    def live(self) -> list[asyncio.Future[Any]]:
        """What the compaction keeps: the pending futures, oldest first."""
        return [f for f in self.futures if not f.done()]

    def compact(self, waiting: int) -> None:
        """Drop the withdrawn futures once they are half of the FIFO (``waiting`` wait)."""
        if len(self.futures) > 2 * waiting + 16:
            live = self.live()
            self.futures.clear()
            self.futures.extend(live)


class Futures(Wakeups):
    """An asyncio queue's two conditions, ``not_empty`` and ``not_full``, as :class:`Waiters`,
    how many tasks wait on each, and what a wakeup is: resolving the first pending future.
    (:class:`impl.driver.Wakeups` says how many a step wakes.) A mutant of the waits names
    another class (``AsyncQueue.conditions_class``)."""

    #: The FIFO of futures each condition keeps.
    waiters_class: ClassVar[type[Waiters]] = Waiters

    def __init__(self) -> None:
        self.not_empty = self.waiters_class("not_empty")
        self.not_full = self.waiters_class("not_full")
        self.waiting = {self.not_empty: 0, self.not_full: 0, BATCH_SENDERS: 0}

    def notify(self, cond: Waiters) -> None:
        """Wake one task waiting on ``cond`` (every task waiting on ``not_full`` while a
        ``send_batch`` waits there)."""
        if self.waiting[cond]:
            if cond is self.not_full and self.waiting[BATCH_SENDERS]:
                self.notify_all(cond)
            else:
                cond.resolve_first()

    def notify_all(self, cond: Waiters) -> None:
        """Wake every task waiting on ``cond`` (shutdown)."""
        while cond.resolve_first():
            pass

    def pass_on(self, cond: Waiters) -> None:
        """A task woken on ``cond`` was cancelled before it took its step: wake the next one
        (contract section 8: a cancelled task passes on the wakeup it took)."""
        self.notify(cond)


class _AsyncBase(Generic[T]):
    """What :class:`AsyncQueue` and :class:`AsyncFifoQueue` share: everything but the sends."""

    #: The machine this driver runs, and its conditions (a mutant names broken ones).
    machine_class: ClassVar[type[Machine[Any]]] = Machine
    conditions_class: ClassVar[type[Futures]] = Futures

    machine: Machine[T]

    def _setup(
        self,
        capacity: int | None,
        visibility_timeout: float | None,
        max_receives: int | None,
        delay: float,
        clock: Clock | None,
        dead_letter: _AsyncBase[T] | None,
        retention: float | None,
        name: str | None,
    ) -> None:
        capacity = check_optional_int("capacity", capacity, 0)
        self._visibility_timeout = check_optional_time("visibility_timeout", visibility_timeout)
        max_receives = check_optional_int("max_receives", max_receives, 1)
        self._delay = check_time("delay", delay)
        if clock is None and isinstance(dead_letter, _AsyncBase):
            clock = dead_letter.clock
        self._clock: Clock = MonotonicClock() if clock is None else check_clock("clock", clock)
        kept = check_retention(retention)
        self._check_dead_letter(dead_letter, max_receives)
        if name is not None:
            check_name(name, None if dead_letter is None else dead_letter.machine)
        self._token = new_token()
        m = self._new_machine(capacity, max_receives, kept)
        #: The queue machine this driver drives (``impl/machine.py``): its state and steps.
        self.machine = m
        # The machine's written-out steps, when it has them (a mutant's reference has not).
        self._fast = m if isinstance(m, FastMachine) else None
        if name is not None:
            m.name = name
        m.owner = weakref.ref(self)
        m.on_effect = weakly(self._moved_in)
        m.before_timer = weakly(self._before_timer)
        self._dead_letter = dead_letter
        #: The two conditions, ``not_empty`` and ``not_full``, and their waiting tasks
        #: (:class:`Futures`).
        self.conditions = self.conditions_class()
        self._closed = False
        self._trace: Callable[[TraceStep], None] | None = None
        self._sweeps: Callable[[float], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        # The one loop timer: its due time and handle (None: none armed); whether it is alive
        # (False until the first timer, and after a death until the next step that arms one).
        self._armed: float | None = None
        self._handle: Any = None
        self._alive = False
        self._in_round = False
        self._failures_in_a_row = 0
        self._failures: tuple[int, BaseException | None] = (0, None)
        if dead_letter is not None:
            System.of(dead_letter.machine, dead_letter.name).join(m, dead_letter.machine, m.name)

    def _new_machine(
        self, capacity: int | None, max_receives: int | None, retention: float | None
    ) -> Machine[T]:
        machine: Machine[T] = self.machine_class(self._token, capacity, max_receives, retention)
        return machine

    def _check_dead_letter(self, target: object, max_receives: int | None) -> None:
        if target is None:
            return
        if not isinstance(target, type(self)):
            raise TypeError(
                f"dead_letter must be an impl.{type(self).__name__}, got {type(target).__name__}"
            )
        check_target(self.machine_class, target.machine, max_receives)
        if target.clock is not self._clock:
            raise ValueError(
                "dead_letter must use the same clock object as this queue (its moves and "
                "retention read one time)"
            )
        if target.closed:
            raise ValueError(f"dead_letter {target.name!r} is closed")

    # -- configuration, as the threaded queue's -------------------------------------------------

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def capacity(self) -> int | None:
        return self.machine.capacity

    @property
    def visibility_timeout(self) -> float | None:
        return self._visibility_timeout

    @property
    def max_receives(self) -> int | None:
        return self.machine.max_receives

    @property
    def delay(self) -> float:
        return self._delay

    @property
    def name(self) -> str:
        return self.machine.name

    @property
    def retention(self) -> float | None:
        return self.machine.retention

    @property
    def dead_letter(self) -> _AsyncBase[T] | None:
        return self._dead_letter

    @property
    def token(self) -> int:
        return self._token

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def waiting(self) -> tuple[int, int]:
        """How many calls wait now: ``(receivers, senders)`` (a receive for a deliverable
        message, a send for room). For tests and monitoring: an idle queue's is ``(0, 0)``."""
        waiting = self.conditions.waiting
        return waiting[self.conditions.not_empty], waiting[self.conditions.not_full]

    # -- the one loop ---------------------------------------------------------------------------

    def _apply(self, out: Outcome) -> None:
        """Do what a committed step's outcome says (as the threaded driver's ``_apply``)."""
        if out.receivers or out.senders:
            self.conditions.wake(out.receivers, out.senders)
        if out.due is not None:
            self._aim(out.due)
        if out.elsewhere:
            for effect in out.elsewhere:
                effect.queue.on_effect(effect)
        if self.machine.self_check:
            self.machine.check()

    def _moved_in(self, effect: Effect) -> None:
        """Another queue's step changed this one (a move in): its effects here."""
        if effect.receivers or effect.senders:
            self.conditions.wake(effect.receivers, effect.senders)
        if effect.due is not None:
            self._aim(effect.due)
        if self.machine.self_check:
            self.machine.check()

    async def _until(
        self,
        step: Callable[[float], Outcome | Blocked],
        out: Outcome | Blocked,
        block: bool,
        wait: float | None,
        op: str,
        n: int = 1,
    ) -> Outcome:
        """While ``out`` is Blocked, raise or await a waiter future of its condition, then
        ``step`` again (the threaded driver's ``_until``, awaiting instead of blocking)."""
        waits = self.conditions
        cond = waits.not_empty if out is NOTHING else waits.not_full
        batch = op == "send_batch"
        endtime: float | None = None
        while isinstance(out, Blocked):
            if out is SHUT:
                raise ShutDown(self._shut_message(op))
            if not block:
                raise self._refusal(op, None, n)
            now = self._clock.now()
            if endtime is None and wait is not None:
                endtime = check_later("timeout", now, wait)
            if endtime is not None and now >= endtime:
                raise self._refusal(op, wait, n)
            if batch:  # counted, so that every wakeup of not_full wakes every sender
                waits.waiting[BATCH_SENDERS] += 1
            try:
                got = await self._wait(cond, endtime)
            finally:
                if batch:
                    waits.waiting[BATCH_SENDERS] -= 1
            if isinstance(got, Outcome):  # a waker took the step for us (never the drivers')
                out = got
                continue
            try:
                out = step(self._clock.now())
            except BaseException:
                waits.notify(cond)  # a wakeup may have been ours: pass it on
                raise
        assert isinstance(out, Outcome)
        return out

    def _shut_message(self, op: str) -> str:
        if op.startswith("receive"):
            return f"receive on a shut-down queue with nothing {self.machine.ready_word}"
        return f"{op} on a queue that has been shut down"

    def _refusal(self, op: str, wait: float | None, n: int) -> Exception:
        if op.startswith("receive"):
            word = self.machine.ready_word
            if wait is None:
                return Empty(f"no message is {word}")
            return Empty(f"no message became {word} within {wait} seconds")
        if op == "send_batch":
            if wait is None:
                return Full(f"the queue has no room for {n} more messages")
            return Full(f"no room for {n} messages within {wait} seconds")
        if wait is None:
            return Full("the queue is at capacity")
        return Full(f"no room within {wait} seconds")

    def _step(self, step: Callable[[float], Outcome | Blocked], cond: Waiters) -> Any:
        """The first step of an operation that may wait; one that raises passes on a wakeup
        this task may have been given (none, usually)."""
        try:
            return step(self._clock.now())
        except BaseException:
            self.conditions.notify(cond)
            raise

    async def _wait(self, cond: Waiters, deadline: float | None) -> object:
        """Await a new waiter future of ``cond`` (until ``deadline`` on the clock, if given),
        and return what it was resolved with: ``None`` from a wakeup or a timeout (the caller
        steps again). Cancelled: withdraw the future, or pass its wakeup on if a waker had
        resolved it."""
        loop = self._get_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        timer = None
        if deadline is not None:  # first: a call_at that fails leaves no waiter behind
            timer = self._call_at(deadline, lambda: _resolve(fut, _TIMED_OUT))
        cond.futures.append(fut)
        waiting = self.conditions.waiting
        waiting[cond] += 1
        try:
            got = await fut
            return None if got is _TIMED_OUT else got
        except asyncio.CancelledError:
            # Pass on a wakeup a waker gave (it was meant for a waiter); not the one this
            # wait's own timer gave, which woke nobody else's turn.
            if fut.done() and not fut.cancelled() and fut.result() is not _TIMED_OUT:
                self.conditions.pass_on(cond)
            raise
        finally:
            waiting[cond] -= 1
            if timer is not None:
                timer.cancel()
            if not fut.done():
                fut.cancel()
            cond.compact(waiting[cond])

    # -- receiving and acting on deliveries -------------------------------------------------

    async def receive(
        self,
        *,
        block: bool = True,
        timeout: float | None = None,
        visibility_timeout: float | Literal[Default.QUEUE_DEFAULT] | None = QUEUE_DEFAULT,
    ) -> Message[T]:
        """As :meth:`impl.Queue.receive`, awaiting instead of blocking. Cancelled while it
        waits, it has delivered nothing and passes on any wakeup it took."""
        if block is not True and block is not False:
            check_bool("block", block)
        if timeout is not None and not (type(timeout) is float and 0.0 <= timeout < INF):
            timeout = check_time("timeout", timeout)
        if visibility_timeout is QUEUE_DEFAULT:
            vt = self._visibility_timeout
        else:
            vt = check_optional_time("visibility_timeout", visibility_timeout)
        fast = self._fast
        if fast is not None and vt is not None and self._alive:
            now = self._clock.now()
            armed = self._armed
            if armed is not None and armed <= now + vt:  # the loop timer fires its deadline
                delivered = fast.receive_now(now, vt)
                if delivered is not None:
                    return delivered
        m = self.machine
        step = step_of(m.receive, vt)
        out = self._step(step, self.conditions.not_empty)
        if isinstance(out, Blocked):
            out = await self._until(step, out, block, timeout, "receive")
        self._apply(out)
        message: Message[T] = out.result
        return message

    async def receive_batch(
        self,
        max_messages: int = MAX_BATCH,
        *,
        block: bool = True,
        timeout: float | None = None,
        visibility_timeout: float | Literal[Default.QUEUE_DEFAULT] | None = QUEUE_DEFAULT,
    ) -> list[Message[T]]:
        """As :meth:`impl.Queue.receive_batch`, awaiting instead of blocking (cancellation as
        :meth:`receive`)."""
        n = check_int("max_messages", max_messages, 1)
        if n > MAX_BATCH:
            raise ValueError(f"max_messages must be <= {MAX_BATCH}, got {n!r}")
        block = check_bool("block", block)
        timeout = check_optional_time("timeout", timeout)
        if visibility_timeout is QUEUE_DEFAULT:
            vt = self._visibility_timeout
        else:
            vt = check_optional_time("visibility_timeout", visibility_timeout)
        m = self.machine
        step = step_of(m.receive_batch, n, vt)
        out = self._step(step, self.conditions.not_empty)
        if isinstance(out, Blocked):
            out = await self._until(step, out, block, timeout, "receive_batch")
        self._apply(out)
        messages: list[Message[T]] = out.result
        return messages

    def delete(self, receipt: Receipt) -> bool:
        """As :meth:`impl.Queue.delete`."""
        if not isinstance(receipt, Receipt):
            raise not_a_receipt(receipt)
        fast = self._fast
        if fast is not None:
            done = fast.delete_now(receipt)
            if done is not None:  # its effect, when live: one slot freed
                if done and self.conditions.waiting[self.conditions.not_full]:
                    self.conditions.wake(0, 1)
                return done
        result: bool = self._act(self.machine.delete(self._clock.now(), receipt))
        return result

    def delete_batch(self, receipts: Sequence[Receipt]) -> list[bool]:
        """As :meth:`impl.Queue.delete_batch`."""
        batch = check_receipts(receipts)
        result: list[bool] = self._act(self.machine.delete_batch(self._clock.now(), batch))
        return result

    def retry(self, receipt: Receipt) -> bool:
        """As :meth:`impl.Queue.retry`."""
        if not isinstance(receipt, Receipt):
            raise not_a_receipt(receipt)
        result: bool = self._act(self.machine.retry(self._clock.now(), receipt))
        return result

    def change_visibility(self, receipt: Receipt, timeout: float) -> bool:
        """As :meth:`impl.Queue.change_visibility`."""
        if not isinstance(receipt, Receipt):
            raise not_a_receipt(receipt)
        t = check_time("timeout", timeout)
        result: bool = self._act(self.machine.change_visibility(self._clock.now(), receipt, t))
        return result

    def change_visibility_batch(self, changes: Sequence[tuple[Receipt, float]]) -> list[bool]:
        """As :meth:`impl.Queue.change_visibility_batch`."""
        checked = check_changes(changes)
        result: list[bool] = self._act(
            self.machine.change_visibility_batch(self._clock.now(), checked)
        )
        return result

    def cancel(self, id: str) -> bool:
        """As :meth:`impl.Queue.cancel`."""
        id = check_id("id", id)
        result: bool = self._act(self.machine.cancel(self._clock.now(), id))
        return result

    def purge(self) -> int:
        """As :meth:`impl.Queue.purge`."""
        result: int = self._act(self.machine.purge(self._clock.now()))
        return result

    def _act(self, out: Outcome) -> Any:
        self._apply(out)
        return out.result

    def receipt(self, id: str, attempt: int) -> Receipt:
        """As :meth:`impl.Queue.receipt`."""
        return Receipt(self._token, check_id("id", id), check_int("attempt", attempt, 0))

    def sweep(self) -> None:
        """As :meth:`impl.Queue.sweep`: fire every timer due now (and re-arm the loop timer if
        it had died)."""
        now = self._clock.now()
        if not self._alive and len(self.machine.timers) and not self._closed:
            self._before_timer(now)  # before the sweep commits: a failed arming changes nothing
        self._fire_due(now)

    def _fire_due(self, now: float) -> None:
        m = self.machine
        if self._sweeps is not None and m.due_now(now):
            self._sweeps(now)
        while (out := m.fire_due(now)) is not None:
            self._apply(out)

    def record_sweeps(self, sink: Callable[[float], None] | None) -> None:
        """As :meth:`impl.Queue.record_sweeps`: ``sink(now)`` once per round of the loop timer
        (or :meth:`sweep`) that fires anything."""
        if sink is not None:
            check_callable("sink", sink)
        self._sweeps = sink

    # -- the trace, observation -----------------------------------------------------------------

    def record_trace(self, sink: Callable[[TraceStep], None] | None) -> None:
        """As :meth:`impl.Queue.record_trace`."""
        if sink is not None:
            check_callable("sink", sink)
        self._trace = sink
        self.machine.before_step = None if sink is None else weakly(self._record)

    def _record(self, step: TraceStep) -> None:
        if self._trace is not None:
            self._trace(step)

    def dead_letters(self) -> list[Message[T]]:
        return [r.message() for r in self.machine.dead]

    def stats(self) -> Stats:
        return self.machine.stats()

    def snapshot(self) -> Snapshot[T]:
        return self.machine.snapshot()

    def aged_out(self) -> list[str]:
        return list(self.machine.aged)

    def source_of(self, id: str) -> _AsyncBase[T] | None:
        source = System.source_of(self.machine, check_id("id", id))
        return None if source is None else driver_of(source)

    def moved_to(self, id: str) -> tuple[_AsyncBase[T], str] | None:
        hit = self.machine.moved.get(check_id("id", id))
        if hit is None:
            return None
        ref, new_id = hit
        dest = ref() if isinstance(ref, weakref.ref) else None
        queue = None if dest is None else driver_of(dest)
        return None if queue is None else (queue, new_id)

    def health(self) -> Health:
        """As :meth:`impl.Queue.health`: ``sweeper_running`` is the loop timer's life."""
        due = self.machine.next_due()
        armed = due is not None
        if not self._alive and armed and not self._closed:
            try:
                assert due is not None
                self._before_timer(due)
            except Exception as e:
                self._failures = (self._failures[0], e)
        return Health(
            sweeper_running=self._alive,
            sweeper_failures=self._failures[0],
            last_error=self._failures[1],
            expiry_stalled=armed and not self._closed and not self._alive,
        )

    # -- redrive --------------------------------------------------------------------------------

    def redrive_tasks(self) -> list[RedriveTask[T]]:
        system = self.machine.system
        return [] if system is None else system.tasks(self.machine)[::-1]

    def start_redrive(
        self,
        destination: _AsyncBase[T] | None = None,
        *,
        rate: float | None = None,
        ids: Callable[[], str] | None = None,
    ) -> RedriveTask[T]:
        """As :meth:`impl.Queue.start_redrive`; ``destination`` an asyncio queue."""
        if destination is not None:
            if not isinstance(destination, _AsyncBase):
                raise TypeError(
                    f"destination must be an impl asyncio queue or None, got "
                    f"{type(destination).__name__}"
                )
            check_destination(self.machine, destination.machine)
            if destination.clock is not self._clock:
                raise ValueError("destination must use the same clock object as this queue")
        r = check_rate(rate, ids)
        m = self.machine
        system = System.of(m, m.name)
        target = None if destination is None else destination.machine
        now = self._clock.now()
        out = system.start_redrive(
            m, destination, target, r, now, ids=ids, lock=contextlib.nullcontext()
        )
        self._apply(out)
        while (moved := system.redrive_move(m, now)) is not None:
            self._apply(moved)
        task: RedriveTask[T] = out.result
        return task

    # -- the loop timer -------------------------------------------------------------------------

    def _get_loop(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop, self._loop_thread = loop, threading.get_ident()
        elif self._loop is not loop:
            raise RuntimeError(f"{self!r} is bound to a different event loop")
        return loop

    def _call_at(self, due: float, callback: Callable[[], object]) -> Any:
        call_at = getattr(self._clock, "call_at", None)
        if call_at is not None:
            return call_at(due, lambda: self._on_loop(callback))
        loop = self._loop if self._loop is not None else self._get_loop()
        return loop.call_at(loop.time() + (due - self._clock.now()), callback)

    def _on_loop(self, callback: Callable[[], object]) -> None:
        # A fake clock's callback, run in the advancing thread: at once on the loop's thread
        # (or before any loop is bound), else handed to the loop.
        loop = self._loop
        if loop is None or threading.get_ident() == self._loop_thread or loop.is_closed():
            callback()
        else:
            loop.call_soon_threadsafe(callback)

    def _before_timer(self, due: float) -> None:
        """The machine's ``before_timer`` veto point: a step arms a timer due at ``due``, so
        the loop timer must be due by then (and, if it had died, by the timers already
        armed). May raise (the clock's ``call_at``, no running loop): the step is vetoed."""
        if self._closed:
            return
        if self._alive and self._armed is not None and self._armed <= due:
            return
        if not self._alive:
            first = self.machine.next_due()
            if first is not None and first < due:
                due = first
        if not hasattr(self._clock, "call_at") and self._loop is None:
            self._get_loop()
        if not self._in_round:
            self._arm(due)
        self._alive = True

    def _arm(self, due: float) -> None:
        """Aim the one loop timer at ``due`` if it is due later (or not armed): the new handle
        first, so that a failing ``call_at`` leaves the old one armed."""
        if self._armed is not None and self._armed <= due:
            return
        handle = self._call_at(due, self._fire)
        old = self._handle
        self._armed, self._handle = due, handle
        if old is not None:
            old.cancel()

    def _aim(self, due: float) -> None:
        """After a step committed a timer due at ``due``: the loop timer was armed for it
        before the commit, but on the paths that arm nothing first (a redrive's next tick, a
        move in): arming can no longer veto the step, so a failure is reported as the timer's
        death. Inside the timer's round nothing is armed: the round aims when it ends."""
        if self._in_round or not self._alive or self._closed:
            return
        if self._armed is not None and self._armed <= due:
            return
        try:
            self._arm(due)
        except BaseException as e:
            self._died(e)
            if not isinstance(e, Exception):
                raise

    def _fire(self) -> None:
        """The loop timer's round: fire what is due, then aim at the next due time. A round
        that fails changed nothing: it is reported and retried after a backoff on the clock.
        What the timer cannot go on without ends it (reported): ``KeyboardInterrupt`` and the
        like (re-raised, as asyncio does), a clock that cannot be read for the backoff, a
        ``call_at`` that fails."""
        self._armed = self._handle = None
        if self._closed or not self._alive:
            return
        self._in_round = True
        try:
            self._fire_due(self._clock.now())
            target = self.machine.next_due()
            self._failures_in_a_row = 0
        except Exception as e:
            target = self._backoff(e)
            if target is None:
                return
        except BaseException as e:
            self._died(e)
            raise
        finally:
            self._in_round = False
        if target is not None:
            try:
                self._arm(target)
            except BaseException as e:
                self._died(e)
                if not isinstance(e, Exception):
                    raise

    def _backoff(self, error: Exception) -> float | None:
        """A failed round: report it; the time to retry at, or ``None`` if the clock could not
        be read for it (the timer's death, reported)."""
        self._failures_in_a_row += 1
        try:
            target = self._clock.now() + backoff(self._failures_in_a_row)
        except BaseException as clock_error:
            self._died(clock_error)
            if not isinstance(clock_error, Exception):
                raise
            return None
        self._failures = (self._failures[0] + 1, error)
        log.error(
            "impl.AsyncQueue %d: a round of the loop timer failed; it retries at %r on the "
            "queue's clock, or sooner if an earlier timer is armed",
            self._token,
            target,
            exc_info=error,
        )
        return target

    def _died(self, error: BaseException) -> None:
        """The loop timer ends with ``error``: report it; the next step that arms a timer,
        ``sweep()`` or ``health()`` arms it again."""
        self._alive = False
        if self._handle is not None:
            self._handle.cancel()
        self._armed = self._handle = None
        self._failures = (self._failures[0] + 1, error)
        log.error(
            "impl.AsyncQueue %d: the loop timer could not go on; expiry stalls until the next "
            "step that arms a timer, sweep() or health()",
            self._token,
            exc_info=error,
        )

    # -- lifecycle ------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """As :meth:`impl.Queue.shutdown`: every waiting task wakes and raises ShutDown (after
        what is still deliverable is delivered)."""
        self.machine.shutdown()
        self.conditions.notify_all(self.conditions.not_empty)
        self.conditions.notify_all(self.conditions.not_full)

    def close(self) -> None:
        """``shutdown()``, then stop the loop timer. Idempotent; timers still armed are applied
        only by an explicit ``sweep()``."""
        self.shutdown()
        if self._handle is not None:
            self._handle.cancel()
        self._armed = self._handle = None
        self._alive = False
        self._closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __aiter__(self) -> AsyncIterator[Message[T]]:
        return self._messages()

    async def _messages(self) -> AsyncIterator[Message[T]]:
        # The consumer loop: receive until the queue is shut down and drained.
        while True:
            try:
                message = await self.receive()
            except ShutDown:
                return
            yield message

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(capacity={self.capacity!r}, "
            f"visibility_timeout={self._visibility_timeout!r}, "
            f"max_receives={self.max_receives!r}, delay={self._delay!r}, clock={self._clock!r})"
        )


def _resolve(fut: asyncio.Future[Any], result: object) -> None:
    if not fut.done():
        fut.set_result(result)


def _check_wait(block: object, timeout: object) -> tuple[bool, float | None]:
    # The arguments of every wait, checked before anything happens.
    if block is not True and block is not False:
        check_bool("block", block)
    return bool(block), None if timeout is None else check_time("timeout", timeout)


class AsyncQueue(_AsyncBase[T]):
    """The SQS-style queue of :class:`impl.Queue` for asyncio: the same arguments, results,
    exceptions and contract, with ``async def`` where the threaded queue may block."""

    machine_class: ClassVar[type[Machine[Any]]] = FastMachine

    def __init__(
        self,
        capacity: int | None = None,
        visibility_timeout: float | None = 30.0,
        max_receives: int | None = None,
        delay: float = 0.0,
        clock: Clock | None = None,
        *,
        dead_letter: AsyncQueue[T] | None = None,
        retention: float | None = None,
        name: str | None = None,
    ) -> None:
        """As :class:`impl.Queue`; ``dead_letter`` must be an :class:`AsyncQueue`."""
        self._setup(
            capacity, visibility_timeout, max_receives, delay, clock, dead_letter, retention, name
        )

    async def send(
        self,
        body: T,
        *,
        id: str | None = None,
        delay: float | None = None,
        block: bool = True,
        timeout: float | None = None,
    ) -> str:
        """As :meth:`impl.Queue.send`, awaiting room instead of blocking. Cancelled while it
        waits, it has sent nothing and passes on any wakeup it took."""
        if id is not None:
            id = check_id("id", id)
        d = self._delay if delay is None else check_time("delay", delay)
        if block is not True and block is not False:
            check_bool("block", block)
        if timeout is not None and not (type(timeout) is float and 0.0 <= timeout < INF):
            timeout = check_time("timeout", timeout)
        fast = self._fast
        if fast is not None and id is None and not d:
            fresh = fast.send_now(self._clock.now(), body)
            if fresh is not None:  # its effect: one message made deliverable
                if self.conditions.waiting[self.conditions.not_empty]:
                    self.conditions.wake(1, 0)
                return fresh
        m = self.machine
        out = self._step(step_of(m.send, id, body, d), self.conditions.not_full)
        if isinstance(out, Blocked):
            out = await self._until(
                step_of(m.send, id, body, d, waited=True), out, block, timeout, "send"
            )
        self._apply(out)
        sent: str = out.result
        return sent

    async def send_batch(
        self, entries: Sequence[Entry[T]], *, block: bool = True, timeout: float | None = None
    ) -> list[str]:
        """As :meth:`impl.Queue.send_batch` (all or none), awaiting room for all of them."""
        batch = check_batch("entries", entries)
        ids, delays = check_entries(batch, self._delay, self.machine.capacity)
        block, wait = _check_wait(block, timeout)
        bodies = [e.body for e in batch]
        m = self.machine
        out = self._step(step_of(m.send_batch, ids, bodies, delays), self.conditions.not_full)
        if isinstance(out, Blocked):
            out = await self._until(
                step_of(m.send_batch, ids, bodies, delays, waited=True),
                out,
                block,
                wait,
                "send_batch",
                len(batch),
            )
        self._apply(out)
        sent: list[str] = out.result
        return sent


class AsyncFifoQueue(_AsyncBase[T]):
    """The SQS FIFO queue of :class:`impl.FifoQueue` for asyncio (groups, deduplication)."""

    machine_class: ClassVar[type[Machine[Any]]] = FifoMachine

    def __init__(
        self,
        capacity: int | None = None,
        visibility_timeout: float | None = 30.0,
        max_receives: int | None = None,
        delay: float = 0.0,
        dedup_interval: float = 300.0,
        clock: Clock | None = None,
        *,
        dead_letter: AsyncFifoQueue[T] | None = None,
        retention: float | None = None,
        name: str | None = None,
    ) -> None:
        """As :class:`impl.FifoQueue`; ``dead_letter`` must be an :class:`AsyncFifoQueue`."""
        interval = check_time("dedup_interval", dedup_interval)
        if not interval > 0:
            raise ValueError(f"dedup_interval must be > 0, got {dedup_interval!r}")
        self._dedup_interval = interval
        self._setup(
            capacity, visibility_timeout, max_receives, delay, clock, dead_letter, retention, name
        )

    def _new_machine(
        self, capacity: int | None, max_receives: int | None, retention: float | None
    ) -> Machine[T]:
        cls = self.machine_class
        assert issubclass(cls, FifoMachine)
        machine: FifoMachine[T] = cls(
            self._token,
            capacity,
            max_receives,
            retention,
            delay=self._delay,
            dedup_interval=self._dedup_interval,
        )
        #: The same object as ``machine``, with its FIFO type.
        self._fifo: FifoMachine[T] = machine
        return machine

    @property
    def dedup_interval(self) -> float:
        return self._dedup_interval

    async def send(
        self,
        body: T,
        *,
        group: str,
        id: str | None = None,
        dedup_id: str | None = None,
        block: bool = True,
        timeout: float | None = None,
    ) -> str:
        """As :meth:`impl.FifoQueue.send` (a duplicate returns the earlier id), awaiting room."""
        if group is None:
            raise ValueError("group is required on a FIFO queue")
        group = check_id("group", group)
        if id is not None:
            id = check_id("id", id)
        if dedup_id is not None:
            dedup_id = check_id("dedup_id", dedup_id)
        block, wait = _check_wait(block, timeout)
        m = self._fifo
        out = self._step(step_of(m.send, id, body, group, dedup_id), self.conditions.not_full)
        if isinstance(out, Blocked):
            out = await self._until(
                step_of(m.send, id, body, group, dedup_id, waited=True),
                out,
                block,
                wait,
                "send",
            )
        self._apply(out)
        sent: str = out.result
        return sent

    async def send_batch(
        self, entries: Sequence[Entry[T]], *, block: bool = True, timeout: float | None = None
    ) -> list[str]:
        """As :meth:`impl.FifoQueue.send_batch`, awaiting room for the entries that need it."""
        batch = check_batch("entries", entries)
        ids, groups, dedups = check_fifo_entries(batch)
        block, wait = _check_wait(block, timeout)
        bodies = [e.body for e in batch]
        m = self._fifo
        out = self._step(
            step_of(m.send_batch, ids, bodies, groups, dedups), self.conditions.not_full
        )
        if isinstance(out, Blocked):
            out = await self._until(
                step_of(m.send_batch, ids, bodies, groups, dedups, waited=True),
                out,
                block,
                wait,
                "send_batch",
                len(batch),
            )
        self._apply(out)
        sent: list[str] = out.result
        return sent
