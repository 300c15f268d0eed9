"""``python -m examples.demo``: watch at-least-once delivery happen, on the real clock, in a second.

Producers send orders and one poison message to an :class:`impl.Queue` with a short visibility
timeout; consumer threads process them. Four things happen, each by construction rather than by
luck, and a timeline (relative time, thread, event) shows them as they happen:

- **normal work**: workers receive, process and delete; a producer that finds the queue full
  waits for room (receiving does not free capacity, deleting does);
- **a crash**: a consumer receives a message and dies without deleting it; after the visibility
  timeout the sweeper makes it visible again and a worker processes it;
- **a lost race**: a slow consumer's work takes longer than the visibility timeout, so its
  message is redelivered to a worker *while it is still working*. It finishes anyway, its late
  delete returns ``False`` (its receipt went stale when the sweeper released the message) and the
  message has been processed twice;
- **a poison message**: every attempt to process it fails, and the worker leaves it (no delete,
  no retry: the visibility timeout is the back-off); the sweeper brings it back each time, and
  on the release after ``max_receives`` deliveries it dead-letters it.

The timeline shows the **sweeper** too: each of its releases and dead-letterings is a line of
its own, written from the queue's :meth:`impl.Queue.record_trace` as the sweep happens (the
trace sink runs inside the sweep's critical section, so the sweeper's line always comes before
the redelivery it makes possible).

With ``--idempotent`` the consumers share a set of processed ids and apply a message's effect
only if its id is not in it (an idempotent consumer keyed by message id): the duplicate is then
detected and skipped, and the summary says "processed twice: 0 (1 duplicate skipped)".

With ``--fifo`` it shows a FIFO queue (:class:`impl.FifoQueue`, contract section 2b) instead,
scripted on a fake clock (the clock column shows its seconds): each customer's orders are one
message group, delivered in order while the group is locked by an in-flight message; a producer
that retries a send (its acknowledgement lost) within the five-minute deduplication interval
creates no second message, but a retry after it does; and a consumer slower than its visibility
timeout still processes a message twice, as on a standard queue: "exactly-once processing"
deduplicates sends, not deliveries.

``time.sleep`` appears here only to *simulate work* (the slow consumer's processing and the
workers' short jobs); every phase is coordinated with events, and the slow consumer finishes only
after its message has been redelivered and deleted by another consumer, so the race is shown
every time. The queue is always closed, even on Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from impl.clock import FakeClock, MonotonicClock
from impl.errors import Empty, Full, ShutDown
from impl.fifo import FifoQueue
from impl.message import Message
from impl.queue import Queue, TraceStep

#: The body of a message that no consumer can process.
POISON = "poison"

#: A bound on every wait for another thread, in real seconds: a bug ends the demo, not hangs it.
PATIENCE = 10.0


@dataclass(frozen=True)
class DemoConfig:
    """What the demo runs. The defaults finish in about a second."""

    visibility_timeout: float = 0.3
    max_receives: int = 3
    capacity: int = 4
    orders: int = 6
    workers: int = 2
    #: The slow consumer works this many visibility timeouts: > 1 makes it lose the race.
    slow_factor: float = 2.5
    idempotent: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.visibility_timeout > 0:
            raise ValueError(f"visibility_timeout must be > 0, got {self.visibility_timeout!r}")
        if self.max_receives < 1:
            raise ValueError(f"max_receives must be >= 1, got {self.max_receives!r}")
        if self.capacity < 3:
            raise ValueError(f"capacity must be >= 3, got {self.capacity!r}")
        if self.orders < 2:
            raise ValueError(
                f"orders must be >= 2 (one to crash on, one to be slow on), got {self.orders!r}"
            )
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers!r}")
        if not self.slow_factor > 1:
            raise ValueError(f"slow_factor must be > 1, got {self.slow_factor!r}")


@dataclass(frozen=True)
class Summary:
    """The facts of one run, counted from the consumers' records and the queue's own stats."""

    sent: int
    orders: int
    #: Successful receives, first deliveries and redeliveries alike.
    delivered: int
    #: Deliveries with attempt > 1.
    redelivered: int
    #: Messages done (``q.stats().done``).
    deleted: int
    #: Deletes that returned ``False``: (id, attempt) of each.
    late_deletes: tuple[tuple[str, int], ...]
    #: The slow consumer's delivery (id, attempt) and what its delete returned.
    slow_delivery: tuple[str, int]
    slow_delete_result: bool
    #: The crashed consumer's delivery (id, attempt).
    crashed_delivery: tuple[str, int]
    #: Dead letters as (id, attempt), in the order they died.
    dead_letters: tuple[tuple[str, int], ...]
    #: The sweeper's steps, from the queue's trace: (id, attempt, "release" or "dead-letter").
    swept: tuple[tuple[str, int, str], ...]
    #: Ids whose effect was applied more than once.
    processed_twice: tuple[str, ...]
    duplicates_skipped: int
    idempotent: bool
    seconds: float

    def lines(self) -> list[str]:
        """The closing summary, one fact per line."""
        skipped = self.duplicates_skipped
        dup = f"processed twice: {len(self.processed_twice)}"
        if self.idempotent:
            dup += f" ({skipped} duplicate{'' if skipped == 1 else 's'} skipped)"
        elif self.processed_twice:
            dup += f" ({', '.join(self.processed_twice)}: the effect was applied twice)"
        late = ", ".join(f"{i} attempt {a}" for i, a in self.late_deletes) or "none"
        dead = ", ".join(f"{i} after {a} receives" for i, a in self.dead_letters) or "none"
        sid, satt = self.slow_delivery
        cid, catt = self.crashed_delivery
        return [
            f"sent: {self.sent} ({self.orders} orders, {self.sent - self.orders} poison)",
            f"delivered: {self.delivered}",
            f"redelivered: {self.redelivered}",
            f"deleted: {self.deleted}",
            f"late deletes returning False: {len(self.late_deletes)} ({late})",
            f"slow consumer: {sid} attempt {satt}, its late delete returned "
            f"{self.slow_delete_result}",
            f"crashed consumer: {cid} attempt {catt}, never deleted, redelivered",
            f"dead-lettered: {len(self.dead_letters)} ({dead})",
            f"sweeper: {sum(k == 'release' for *_, k in self.swept)} releases, "
            f"{sum(k == 'dead-letter' for *_, k in self.swept)} dead-lettered",
            dup,
            f"time: {self.seconds:.2f} s",
        ]


# -- the timeline -------------------------------------------------------------------------------

_RESET = "\x1b[0m"
_THREAD_COLOURS = {
    "main": "\x1b[2m",  # dim
    "producer": "\x1b[34m",  # blue
    "worker": "\x1b[32m",  # green
    "crasher": "\x1b[31m",  # red
    "slow": "\x1b[35m",  # magenta
    "sweeper": "\x1b[36m",  # cyan
}
_KIND_COLOURS = {
    "bad": "\x1b[1;31m",  # bold red: a late delete, a dead letter, a duplicate effect
    "warn": "\x1b[33m",  # yellow: a redelivery, a full queue, a skipped duplicate
    "good": "\x1b[1m",  # bold: the summary
}


def use_colour(flag: bool | None, stream: TextIO, environ: dict[str, str]) -> bool:
    """``--color``/``--no-color`` if given; else colour iff ``stream`` is a tty and ``NO_COLOR``
    is unset or empty (https://no-color.org)."""
    if flag is not None:
        return flag
    return not environ.get("NO_COLOR") and stream.isatty()


@dataclass(frozen=True)
class Event:
    """One line of the timeline: seconds since the start, the thread, what happened."""

    t: float
    thread: str
    kind: str
    text: str


class Timeline:
    """Prints events as they happen (unless quiet) and keeps them, in order, for tests."""

    def __init__(self, out: TextIO, *, colour: bool, quiet: bool) -> None:
        self._out = out
        self._colour = colour
        self._quiet = quiet
        self._clock = MonotonicClock()
        self._start = self._clock.now()
        self._lock = threading.Lock()
        self.events: list[Event] = []
        #: Set when the reader went away (``| head``): the run goes on, printing nothing more.
        self.broken = False

    def elapsed(self) -> float:
        return self._clock.now() - self._start

    def log(self, text: str, kind: str = "", *, thread: str | None = None) -> None:
        """Record one event of the calling thread (named after its role), or of ``thread``."""
        with self._lock:
            me = threading.current_thread()
            name = thread or ("main" if me is threading.main_thread() else me.name)
            e = Event(self.elapsed(), name, kind, text)
            self.events.append(e)
            if not self._quiet:
                self._write(self._format(e))

    def _format(self, e: Event) -> str:
        stamp, who = f"+{e.t:6.3f}s", f"{e.thread:<10}"
        if not self._colour:
            return f"{stamp}  {who}  {e.text}"
        role = e.thread.rstrip("-0123456789")
        who = f"{_THREAD_COLOURS.get(role, '')}{who}{_RESET}"
        text = f"{_KIND_COLOURS[e.kind]}{e.text}{_RESET}" if e.kind in _KIND_COLOURS else e.text
        return f"\x1b[2m{stamp}{_RESET}  {who}  {text}"

    def heading(self, text: str) -> None:
        """A line of the summary (printed even when quiet)."""
        line = f"{_KIND_COLOURS['good']}{text}{_RESET}" if self._colour and text else text
        with self._lock:
            self._write(line)

    def _write(self, line: str) -> None:
        # Called with _lock held.
        if self.broken:
            return
        try:
            self._out.write(line + "\n")
            self._out.flush()
        except BrokenPipeError:
            self.broken = True


# -- the sweeper, seen through the queue's trace -------------------------------------------------


class SweeperLog:
    """A sink for :meth:`impl.Queue.record_trace` that turns the sweeper's steps into lines.

    The trace gives one ``("expire", (), id, now)`` step per timer a sweep fires, and leaves the
    kind of firing to the message's state: this sink keeps that state from the steps before
    (``send`` with a delay, ``receive``, ``receive_batch``). A delivery's deadline firing is a
    *release*: back to the tail of the queue (``back_to``: a FIFO queue puts it back in its
    group's order), or dead-lettered if the message has had ``max_receives`` deliveries. Every
    step is also passed to ``also`` (the demo counts sends and settled messages there).

    The sink runs inside the queue's critical section: it must be quick and must not call the
    queue. It only updates two dicts and writes one line through ``say`` (the timeline, which
    never calls the queue), so the lines are in the order the transitions took effect.
    """

    def __init__(
        self,
        max_receives: int | None,
        say: Callable[[str, str], None],
        also: Callable[[TraceStep], None] = lambda step: None,
        *,
        back_to: str = "the tail of the queue",
    ) -> None:
        self._max_receives = max_receives
        self._back_to = back_to
        self._say = say
        self._also = also
        self._attempt: dict[str, int] = {}
        self._delayed: set[str] = set()
        #: (id, attempt, "release" / "dead-letter" / "visible") per firing, in order.
        self.steps: list[tuple[str, int, str]] = []

    def __call__(self, step: TraceStep) -> None:
        action, args, result, _ = step
        if action == "send" and isinstance(args[1], int | float) and args[1] > 0:
            self._delayed.add(str(args[0]))
        deliveries = (
            [result] if action == "receive" else result if action == "receive_batch" else ()
        )
        for d in deliveries if isinstance(deliveries, list | tuple) else ():
            if isinstance(d, tuple) and isinstance(d[1], int):
                self._attempt[str(d[0])] = d[1]
        if action == "expire":
            self._fired(str(result))
        self._also(step)

    def _fired(self, id: str) -> None:
        attempt = self._attempt.get(id, 0)
        if id in self._delayed:
            self._delayed.discard(id)
            self.steps.append((id, attempt, "visible"))
            self._say(f"{id}: its delay is over, it joins the tail of the queue", "")
        elif self._max_receives is not None and attempt >= self._max_receives:
            self.steps.append((id, attempt, "dead-letter"))
            self._say(
                f"DEAD-LETTERS {id}: attempt {attempt} expired, the release after "
                f"max_receives {self._max_receives} deliveries",
                "bad",
            )
        else:
            self.steps.append((id, attempt, "release"))
            self._say(
                f"releases {id}: attempt {attempt} expired, back to {self._back_to} "
                "(its receipt is stale now)",
                "warn",
            )


# -- the consumers' side: what was processed, and the idempotency store -------------------------


class Ledger:
    """The consumers' side effect (think: rows written to a database), shared by all consumers.

    ``commit(id)`` applies a message's effect. An idempotent ledger keeps the set of processed
    ids and, in the same atomic step, skips an id it has already seen: that check-and-record
    being one step is what makes the consumer idempotent.
    """

    def __init__(self, idempotent: bool) -> None:
        self.idempotent = idempotent
        self._lock = threading.Lock()
        self._applied: Counter[str] = Counter()
        self._processed_ids: set[str] = set()
        self.skipped = 0

    def commit(self, id: str) -> bool:
        """Apply the effect of message ``id``: ``True``, or ``False`` if skipped as a duplicate."""
        with self._lock:
            if self.idempotent:
                if id in self._processed_ids:
                    self.skipped += 1
                    return False
                self._processed_ids.add(id)
            self._applied[id] += 1
            return True

    def twice(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(sorted(i for i, n in self._applied.items() if n > 1))


class Tally:
    """What the consumers saw, and the events the phases of the demo wait for."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.delivered = 0
        self.redelivered = 0
        self.late_deletes: list[tuple[str, int]] = []
        self._done_events: dict[str, threading.Event] = {}
        #: Set when every sent message is done or dead.
        self.settled = threading.Event()

    def received(self, m: Message[str]) -> None:
        with self._lock:
            self.delivered += 1
            self.redelivered += m.attempt > 1

    def deleted(self, m: Message[str], ok: bool) -> None:
        if ok:
            self.done_event(m.id).set()
        else:
            with self._lock:
                self.late_deletes.append((m.id, m.attempt))

    def done_event(self, id: str) -> threading.Event:
        """Set once message ``id`` has been deleted by some consumer."""
        with self._lock:
            return self._done_events.setdefault(id, threading.Event())


# -- the demo -----------------------------------------------------------------------------------


class Demo:
    """One run: the queue, its producers and consumers, and the timeline."""

    def __init__(self, config: DemoConfig, timeline: Timeline) -> None:
        self.cfg = config
        self.log = timeline.log
        self.timeline = timeline
        self.rng = random.Random(config.seed)
        self.rng_lock = threading.Lock()
        self.q: Queue[str] = Queue(
            capacity=config.capacity,
            visibility_timeout=config.visibility_timeout,
            max_receives=config.max_receives,
            clock=MonotonicClock(),
        )
        self.ledger = Ledger(config.idempotent)
        self.tally = Tally()
        self.ids = [f"order-{k}" for k in range(1, config.orders + 1)]
        self.sent = 0
        self.sent_lock = threading.Lock()
        # Phase 1: the crasher and the slow consumer each hold one of the first two orders.
        self.crasher_holds = threading.Event()
        self.slow_holds = threading.Event()
        # Phase 2 starts when main sets this: workers start, producers send the rest.
        self.go = threading.Event()
        self.crashed_delivery: tuple[str, int] = ("", 0)
        self.slow_delivery: tuple[str, int] = ("", 0)
        self.slow_delete_result = True
        self.errors: list[BaseException] = []
        # The sweeper's lines, and the count of settled messages, from the queue's own trace.
        self.settled_count = 0
        self.sends_seen = 0
        self.sweeper = SweeperLog(
            config.max_receives,
            lambda text, kind: self.log(text, kind, thread="sweeper"),
            self.count_settled,
        )
        self.q.record_trace(self.sweeper)

    # -- helpers ----------------------------------------------------------------------------

    def work_time(self) -> float:
        """How long a worker's ordinary job takes: a small fraction of the visibility timeout."""
        with self.rng_lock:
            return self.rng.uniform(0.02, 0.12) * self.cfg.visibility_timeout

    def send(self, body: str, id: str) -> None:
        """Send, showing the wait when the queue is full (capacity counts in-flight messages)."""
        try:
            self.q.send(body, id=id, block=False)
        except Full:
            stats = self.q.stats()
            self.log(
                f"queue full ({stats.visible} visible + {stats.in_flight} in flight = "
                f"capacity {self.cfg.capacity}): {id} waits for room",
                "warn",
            )
            self.q.send(body, id=id, timeout=PATIENCE)
        with self.sent_lock:
            self.sent += 1

    def count_settled(self, step: TraceStep) -> None:
        """Part of the trace sink (inside the queue's critical section): set ``settled`` once
        every message has been sent and is done or dead. Counted from the trace because the
        last message may settle in the sweeper, where no demo code runs."""
        action, args, result, _ = step
        if action == "send":
            # Logged here, inside the send's critical section, so the line comes before the
            # line of any receive of it (a receiver logs after its receive returns).
            self.sends_seen += 1
            self.log(f"send {args[0]}")
        elif (action == "delete" and result is True) or (
            action == "expire" and self.sweeper.steps and self.sweeper.steps[-1][2] == "dead-letter"
        ):
            self.settled_count += 1
        total = len(self.ids) + 1
        if self.sends_seen == total and self.settled_count == total:
            self.tally.settled.set()

    def thread(self, name: str, target: Callable[[], None]) -> threading.Thread:
        def run() -> None:
            try:
                target()
            except BaseException as e:  # reported by main, never lost with the thread
                self.errors.append(e)
                self.log(f"error: {e!r}", "bad")

        t = threading.Thread(target=run, name=name, daemon=True)
        t.start()
        return t

    # -- the roles --------------------------------------------------------------------------

    def producer_1(self) -> None:
        for id in self.ids[:2]:
            self.send(f"{id} body", id)
        if not self.go.wait(PATIENCE):
            raise TimeoutError("phase 2 never started")
        for id in self.ids[2 : 2 + (len(self.ids) - 2) // 2]:
            self.send(f"{id} body", id)

    def producer_2(self) -> None:
        if not self.go.wait(PATIENCE):
            raise TimeoutError("phase 2 never started")
        for id in self.ids[2 + (len(self.ids) - 2) // 2 :]:
            self.send(f"{id} body", id)
        self.send(POISON, "poison")

    def crasher(self) -> None:
        m = self.q.receive(timeout=PATIENCE)
        self.tally.received(m)
        self.crashed_delivery = (m.id, m.attempt)
        self.log(
            f"receive {m.id} (attempt {m.attempt}), then CRASH mid-processing: never deletes; "
            f"{m.id} comes back after the {self.cfg.visibility_timeout:.2f}s visibility timeout",
            "bad",
        )
        self.crasher_holds.set()

    def slow(self) -> None:
        vt = self.cfg.visibility_timeout
        # The crasher receives first, so the slow consumer's message is always the second order
        # and every run prints the same summary (the walkthrough quotes it).
        if not self.crasher_holds.wait(PATIENCE):
            raise TimeoutError("the crasher did not receive")
        m = self.q.receive(timeout=PATIENCE)
        self.tally.received(m)
        self.slow_delivery = (m.id, m.attempt)
        work = self.cfg.slow_factor * vt
        self.log(
            f"receive {m.id} (attempt {m.attempt}); starts {work:.2f}s of work, longer than "
            f"its {vt:.2f}s visibility timeout"
        )
        self.slow_holds.set()
        time.sleep(work)  # simulated work, not coordination
        # By construction the slow consumer finishes after its message was redelivered and
        # deleted by another consumer: this wait only guards against a heavily loaded machine.
        if not self.tally.done_event(m.id).wait(PATIENCE):
            raise TimeoutError(f"{m.id} was never redelivered")
        self.log(f"finishes its work on {m.id} (attempt {m.attempt}) at last")
        self.apply(m)
        ok = self.q.delete(m.receipt)
        self.slow_delete_result = ok
        self.tally.deleted(m, ok)
        self.log(
            f"delete {m.id} attempt {m.attempt} -> {ok}: "
            + (
                "its receipt went stale when the sweeper released the message, so the late "
                "delete is a no-op and cannot harm the redelivered copy"
                if not ok
                else "the delete won (the sweeper had not run yet)"
            ),
            "bad" if not ok else "",
        )

    def apply(self, m: Message[str]) -> None:
        """Commit the effect of processing ``m``, noting a duplicate."""
        if self.ledger.commit(m.id):
            if self.ledger.idempotent or m.attempt == 1:
                self.log(f"processed {m.id}")
            else:
                self.log(f"processed {m.id} (attempt {m.attempt})")
            if m.id in self.ledger.twice():
                self.log(f"{m.id} has now been processed TWICE", "bad")
        else:
            self.log(
                f"{m.id} already processed (id in the processed-ids set): duplicate skipped", "warn"
            )

    def worker(self) -> None:
        while True:
            try:
                m = self.q.receive()
            except ShutDown:
                return
            self.tally.received(m)
            again = f" (attempt {m.attempt}: a REDELIVERY)" if m.attempt > 1 else ""
            self.log(f"receive {m.id}{again}", "warn" if again else "")
            if m.body == POISON:
                # No delete and no retry: the visibility timeout is the back-off, and the
                # sweeper decides between another delivery and the dead-letter list.
                self.log(
                    f"cannot process {m.id} (attempt {m.attempt} of max_receives "
                    f"{self.cfg.max_receives}): leaves it for the sweeper"
                )
            else:
                time.sleep(self.work_time())  # simulated work, not coordination
                self.apply(m)
                ok = self.q.delete(m.receipt)
                self.tally.deleted(m, ok)
                self.log(f"delete {m.id} attempt {m.attempt} -> {ok}", "" if ok else "bad")

    # -- the run ----------------------------------------------------------------------------

    def run(self) -> Summary:
        cfg = self.cfg
        self.log(
            f"queue: capacity {cfg.capacity}, visibility timeout {cfg.visibility_timeout:.2f}s, "
            f"max_receives {cfg.max_receives}; consumers "
            + ("ARE idempotent (processed-ids set)" if cfg.idempotent else "are NOT idempotent")
        )
        threads: list[threading.Thread] = []
        try:
            threads.append(self.thread("crasher", self.crasher))
            threads.append(self.thread("slow", self.slow))
            threads.append(self.thread("producer-1", self.producer_1))
            for e in (self.crasher_holds, self.slow_holds):
                if not e.wait(PATIENCE):
                    raise TimeoutError("the crasher and the slow consumer did not receive")
            self.go.set()
            for k in range(1, cfg.workers + 1):
                threads.append(self.thread(f"worker-{k}", self.worker))
            threads.append(self.thread("producer-2", self.producer_2))
            if not self.tally.settled.wait(PATIENCE) and not self.errors:
                raise TimeoutError(f"messages not settled: {self.q.stats()}")
            threads[1].join(PATIENCE)  # the slow consumer's late delete comes after settling
            self.log("every message is done or dead: shutdown, the workers stop")
        finally:
            self.q.close()
            for t in threads:
                t.join(PATIENCE)
        if self.errors:
            raise RuntimeError(f"the demo failed: {self.errors[0]!r}") from self.errors[0]
        stats = self.q.stats()
        return Summary(
            sent=self.sent,
            orders=len(self.ids),
            delivered=self.tally.delivered,
            redelivered=self.tally.redelivered,
            deleted=stats.done,
            late_deletes=tuple(self.tally.late_deletes),
            slow_delivery=self.slow_delivery,
            slow_delete_result=self.slow_delete_result,
            crashed_delivery=self.crashed_delivery,
            dead_letters=tuple((m.id, m.attempt) for m in self.q.dead_letters()),
            swept=tuple((i, a, k) for i, a, k in self.sweeper.steps),
            processed_twice=self.ledger.twice(),
            duplicates_skipped=self.ledger.skipped,
            idempotent=cfg.idempotent,
            seconds=self.timeline.elapsed(),
        )


def run(config: DemoConfig, timeline: Timeline) -> Summary:
    """Run the demo once and return its summary; the queue is closed on return."""
    return Demo(config, timeline).run()


# -- the FIFO demo (--fifo) -----------------------------------------------------------------------


@dataclass(frozen=True)
class FifoSummary:
    """What ``--fifo`` showed."""

    #: Every delivery as (id, attempt), in order.
    deliveries: tuple[tuple[str, int], ...]
    #: A receive that found visible messages, all in locked groups: how many were visible.
    locked_out: int
    #: The retry within the interval: the id it returned, and the messages before and after.
    retry_returned: str
    messages_before_retry: int
    messages_after_retry: int
    #: The retry after the interval: the new message's id.
    late_retry_id: str
    #: The slow consumer's message, and its late delete's result.
    slow_id: str
    slow_delete_result: bool
    processed_twice: tuple[str, ...]

    def lines(self) -> list[str]:
        order = ", ".join(f"{i}#{a}" for i, a in self.deliveries)
        return [
            f"deliveries, in order: {order}",
            f"a receive with {self.locked_out} visible but every group locked: nothing delivered",
            f"producer retry within 5 minutes: returned {self.retry_returned}, messages "
            f"{self.messages_before_retry} -> {self.messages_after_retry} (deduplicated)",
            f"producer retry after 5 minutes: a second message, {self.late_retry_id}",
            f"slow consumer: {self.slow_id} redelivered while it worked, its late delete "
            f"returned {self.slow_delete_result}",
            f"processed twice: {len(self.processed_twice)} ({', '.join(self.processed_twice)})",
        ]


def run_fifo(timeline: Timeline) -> FifoSummary:
    """The FIFO script, on a :class:`FakeClock` (so the five-minute interval takes no time);
    the queue is closed on return."""
    clock = FakeClock()
    deliveries: list[tuple[str, int]] = []
    applied: Counter[str] = Counter()

    def say(text: str, kind: str = "", *, at: float | None = None, who: str | None = None) -> None:
        stamp = clock.now() if at is None else at
        timeline.log(f"[clock {stamp:5.0f}s] {text}", kind, thread=who)

    def advance(dt: float) -> None:
        say(f"{dt:.0f} s pass", at=clock.now() + dt)  # first: the sweeper may wake at once
        clock.advance(dt)
        q.sweep()  # what the sweeper thread does at this time; explicit, so the run is fixed

    def receive(who: str) -> Message[str] | None:
        try:
            m = q.receive(block=False)
        except Empty:
            say(f"{who}: receive -> nothing deliverable ({q.stats().visible} visible)", "warn")
            return None
        deliveries.append((m.id, m.attempt))
        redelivered = " (redelivered)" if m.attempt > 1 else ""
        say(f"{who}: receive -> {m.id} attempt {m.attempt}{redelivered}", "warn" * (m.attempt > 1))
        return m

    def process(who: str, m: Message[str]) -> bool:
        applied[m.id] += 1
        twice = applied[m.id] > 1
        say(
            f"{who}: processes {m.id}{' AGAIN: its effect is applied twice' * twice}", "bad" * twice
        )
        ok = q.delete(m.receipt)
        say(f"{who}: delete {m.id} attempt {m.attempt} -> {ok}", "" if ok else "bad")
        return ok

    with FifoQueue[str](visibility_timeout=30.0, dedup_interval=300.0, clock=clock) as q:
        # The sweeper's releases, as lines of the timeline (see SweeperLog).
        q.record_trace(
            SweeperLog(
                None,
                lambda text, kind: say(text, kind, who="sweeper"),
                back_to="its place in its group's send order",
            )
        )
        timeline.heading("message groups: each customer's orders in order, one at a time")
        for order in ("alice-1", "bob-1", "alice-2", "bob-2", "alice-3"):
            customer = order.split("-")[0]
            q.send(order, group=customer, id=order, dedup_id=order)
            say(f"producer: send {order} (group {customer}, dedup id {order})")
        a1 = receive("consumer A")
        b1 = receive("consumer B")
        locked_out = q.stats().visible
        receive("consumer C")
        assert a1 is not None and b1 is not None
        process("consumer A", a1)
        a2 = receive("consumer C")
        assert a2 is not None
        process("consumer B", b1)
        process("consumer C", a2)

        timeline.heading("deduplication: a producer retries a send it thinks was lost")
        before = len(q.snapshot().visible)
        advance(10)
        returned = q.send("alice-3", group="alice", id="alice-3-retry", dedup_id="alice-3")
        after = len(q.snapshot().visible)
        say(f"producer: retry alice-3 (same dedup id) -> {returned}: no new message", "warn")
        advance(300)
        late = q.send("alice-3", group="alice", id="alice-3-late", dedup_id="alice-3")
        say(f"producer: retry alice-3 again, after the interval -> {late}: a second message", "bad")

        timeline.heading("a slow consumer: FIFO does not stop a redelivery")
        slow = receive("slow consumer")
        assert slow is not None
        say(f"slow consumer: works on {slow.id} for 45 s (visibility timeout 30 s)")
        advance(45)
        again = receive("consumer B")
        assert again is not None and again.id == slow.id
        process("consumer B", again)
        slow_result = process("slow consumer", slow)
        for _ in q.snapshot().visible:  # the rest, in order
            got = receive("consumer A")
            if got is not None:
                process("consumer A", got)
        return FifoSummary(
            deliveries=tuple(deliveries),
            locked_out=locked_out,
            retry_returned=returned,
            messages_before_retry=before,
            messages_after_retry=after,
            late_retry_id=late,
            slow_id=slow.id,
            slow_delete_result=slow_result,
            processed_twice=tuple(i for i, n in applied.items() if n > 1),
        )


#: ``--help``'s text: plain, with no markup (the module docstring is for readers of the code).
HELP_DESCRIPTION = "Watch at-least-once delivery happen, on the real clock, in about a second."
HELP_EPILOG = """\
The timeline has one line per event: time since the start, thread, what
happened. Producers send orders and one poison message; workers receive,
process and delete them.
  - a consumer crashes holding a message: the sweeper releases it after the
    visibility timeout, and a worker processes it;
  - a slow consumer works longer than its visibility timeout: the sweeper
    releases its message, a worker processes it too, and the slow consumer's
    late delete returns False;
  - the poison message fails every time: the sweeper releases it until it
    has been received max_receives times, then dead-letters it.
The sweeper's lines come from the queue's own trace (Queue.record_trace).

With --idempotent the consumers skip a message whose id they have already
processed. With --fifo it shows a FIFO queue on a fake clock instead: message
groups, deduplication of a producer's retry, and the slow-consumer duplicate
that FIFO does not prevent.
"""


def main(
    argv: Sequence[str] | None = None,
    out: TextIO | None = None,
    environ: dict[str, str] | None = None,
) -> int:
    """The command line; prints the timeline and the summary to ``out`` (default stdout)."""
    stream = sys.stdout if out is None else out
    # Python 3.14's argparse colours its help by default; --help stays plain text.
    plain: dict[str, Any] = {"color": False} if sys.version_info >= (3, 14) else {}
    parser = argparse.ArgumentParser(
        prog="python -m examples.demo",
        description=HELP_DESCRIPTION,
        epilog=HELP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **plain,
    )
    parser.add_argument(
        "--idempotent",
        action="store_true",
        help="consumers keep a processed-ids set, so a redelivered duplicate is skipped",
    )
    parser.add_argument(
        "--color",
        "--colour",
        dest="color",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="colour the timeline (default: when stdout is a terminal and NO_COLOR is unset)",
    )
    parser.add_argument(
        "--fifo",
        action="store_true",
        help="show a FIFO queue: group order, a deduplicated producer retry, and the "
        "slow-consumer duplicate it does not prevent (on a fake clock)",
    )
    parser.add_argument("--quiet", action="store_true", help="print only the summary")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated work times")
    parser.add_argument(
        "--visibility-timeout",
        type=float,
        default=DemoConfig.visibility_timeout,
        metavar="SECONDS",
        help="the queue's visibility timeout (default %(default)s)",
    )
    args = parser.parse_args(argv)
    try:
        config = DemoConfig(
            visibility_timeout=args.visibility_timeout, idempotent=args.idempotent, seed=args.seed
        )
    except ValueError as e:
        parser.error(str(e))
    colour = use_colour(args.color, stream, dict(os.environ) if environ is None else environ)
    timeline = Timeline(stream, colour=colour, quiet=args.quiet)
    summary: Summary | FifoSummary = run_fifo(timeline) if args.fifo else run(config, timeline)
    if not args.quiet:
        timeline.heading("")
    timeline.heading("summary")
    for line in summary.lines():
        timeline.heading(f"  {line}")
    if timeline.broken and stream is sys.stdout:
        # Python flushes stdout once more at exit: point it at /dev/null so that is quiet too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
