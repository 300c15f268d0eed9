"""The fault-injection matrix: one call of ``impl.Queue``, run again with a fault at every point.

The framework of ``model_tests/tests/test_faults.py`` (docs/failure-model.md; the promise is
``docs/failure-model.md``'s): a scenario is a queue configuration (:class:`Setup`) and the calls
that bring the queue to a state, then the call under test (:class:`Op`). :class:`World` is one
queue on a failing clock (``model_tests.faults.FailingClock`` around a ``ProbeClock``) with a
failing trace sink, brought to the scenario's state; :func:`prepare` binds the call to it,
:func:`model` says what ``spec.transitions`` makes of it, :func:`result_of` what the caller
sees. :func:`exercise` runs a call once with one injection (or none, counting the calls each
injection point sees) and checks that it took full effect or none, that the retried call then
agrees with the spec, and that a bystander (a blocked receiver or sender, :func:`start_bystander`)
is woken exactly when the call makes work for it; :func:`check_every_fault` runs it for every
point and every k-th call.

The injectors themselves (the failing clock, sink and thread start) are
:mod:`model_tests.faults`; the scenarios and the tests are ``test_faults.py``'s.

The asyncio driver (``impl.AsyncQueue``) has its own section at the end: :class:`AioWorld` (the
queue behind a :class:`model_tests.targets.Blocking` facade on one event loop, its clock a
:class:`FailingLoopClock` whose ``call_at``, the loop timer's arming, is a point too), a
bystander that is a waiting task, and :func:`exercise_aio`, which also runs the loop timer's
own sweep round (:data:`TIMER`) and checks after every call that expiry resumes: the clock
moved onto the next due time releases it with no ``sweep()`` called.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Final, Literal, TypeAlias

import spec
from impl import (
    BaseQueue,
    DuplicateIdError,
    Empty,
    Entry,
    Full,
    Health,
    Message,
    Queue,
    ShutDown,
    Snapshot,
    Stats,
)
from impl.sweeper import FIRST_BACKOFF
from model_tests.faults import (
    FailingClock,
    FailingSink,
    Fault,
    InjectedFault,
    ParkedSync,
    ThreadMatch,
    ThreadStarts,
    failing_thread_start,
    is_sweeper,
    wait_until,
)
from model_tests.projection import from_snapshot, from_state, stats_counts, to_state
from model_tests.support import Call, ProbeClock
from model_tests.targets import LoopRunner, async_class, blocking

#: Where a fault is injected: the k-th call of the clock's ``now``, of its ``wait`` (raised
#: instead of waiting, or, ``wait-after``, when the wait returns), of the trace sink, or the
#: k-th start of a sweeper thread.
Point: TypeAlias = Literal["now", "wait", "wait-after", "sink", "start"]
#: The points a call that does not wait can reach.
POINTS: Final[tuple[Point, ...]] = ("now", "wait", "sink", "start")
#: The points a blocking call can reach.
BLOCKING_POINTS: Final[tuple[Point, ...]] = ("now", "wait", "wait-after", "sink", "start")
#: Exceptions other than InjectedFault that a transition must survive the same way.
OTHER_FAULTS: Final[tuple[type[BaseException], ...]] = (MemoryError, KeyboardInterrupt)

#: A fault to inject: where, at which matching call, and what (None: the point's default).
Injection: TypeAlias = tuple[Point, int, Fault | None]

DEFAULT: Final = "default"
Vt: TypeAlias = float | Literal["default"] | None
OpName: TypeAlias = Literal[
    "send",
    "send_batch",
    "receive",
    "receive_batch",
    "delete",
    "delete_batch",
    "retry",
    "change_visibility",
    "change_visibility_batch",
    "cancel",
    "purge",
    "sweep",
    # The asyncio driver's loop timer firing its sweep round (exercise_aio only).
    "timer",
]
RECEIPT_OPS: Final = frozenset({"delete", "retry", "change_visibility"})
BATCH_RECEIPT_OPS: Final = frozenset({"delete_batch", "change_visibility_batch"})
ANY_ID_OPS: Final = RECEIPT_OPS | {"cancel"}
Bystander: TypeAlias = Literal["receiver", "sender"]
BYSTANDER: Final = "bystander"
OP_THREAD: Final = "faulty-op"


# =============================================================================================
# Scenarios: a queue configuration, operations, and how each runs on the impl and the spec
# =============================================================================================


@dataclass(frozen=True)
class Setup:
    """The queue's configuration, and whether a trace sink is attached."""

    capacity: int | None = None
    vt: float | None = 10.0
    max_receives: int | None = None
    traced: bool = True

    @property
    def config(self) -> spec.Config:
        return spec.Config(capacity=self.capacity, max_receives=self.max_receives)


@dataclass(frozen=True)
class Op:
    """One call of a state-changing method, by name as in every layer.

    ``id``: send's id (``None``: generated), or the message a receipt operation or cancel
    names. Receipt operations use the receipt of the message's current delivery, or with
    ``stale`` the one before it. ``vt``: receive's visibility timeout. ``t``: change_visibility's
    timeout; for ``sweep``, how far the clock moves (waking nobody) before it; for ``send``
    and ``send_batch``, the delay (0: none). The batches (contract section 2): ``ids`` are a
    send_batch's
    ids (``""``: generated), or the messages a delete_batch or change_visibility_batch names
    (each with ``t``); ``n`` is receive_batch's ``max_messages``.
    """

    name: OpName
    id: str | None = None
    vt: Vt = DEFAULT
    t: float = 0.0
    stale: bool = False
    ids: tuple[str, ...] = ()
    n: int = 2

    def __str__(self) -> str:
        args = {
            "send": f"id={self.id}",
            "receive": f"vt={self.vt}",
            "receive_batch": f"{self.n}, vt={self.vt}",
            "sweep": f"after {self.t}",
            "purge": "",
        }
        if self.name in ("send_batch", *BATCH_RECEIPT_OPS):
            args[self.name] = f"{list(self.ids)}"
        timed = ("change_visibility", "change_visibility_batch", "send", "send_batch")
        extra = f", t={self.t}" if self.name in timed and self.t else ""
        stale = " (stale)" if self.stale else ""
        return f"{self.name}({args.get(self.name, self.id)}{extra}){stale}"


@dataclass(frozen=True)
class Returned:
    value: object


@dataclass(frozen=True)
class Raised:
    error: BaseException


Outcome: TypeAlias = Returned | Raised


def outcome_of(fn: Callable[[], object]) -> Outcome:
    try:
        return Returned(fn())
    except BaseException as e:  # KeyboardInterrupt too: it is one of the injected faults
        return Raised(e)


@dataclass(frozen=True)
class Prepared:
    """An operation ready to run: the operation (its id resolved), the call, the attempt its
    receipt names, the time it runs at (the clock does not move during it)."""

    op: Op
    run: Callable[[], object]
    attempt: int
    now: float
    receipts: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Observation:
    """Everything a caller can read about the queue's messages."""

    snapshot: Snapshot[str]
    stats: Stats
    dead: tuple[Message[str], ...]


def body(op: Op, id: str | None = None) -> str:
    return f"body-{id or op.id or 'generated'}"


def current_attempt(snap: Snapshot[str], id: str) -> int:
    """The attempt of ``id``'s current (or last) delivery; 1 for a message no longer shown."""
    for m in (*snap.visible, *snap.in_flight, *snap.dead):
        if m.id == id:
            return m.attempt
    return 1


class World:
    """One queue on a failing clock (around a ProbeClock) with a failing sink, for one run."""

    def __init__(self, setup: Setup, starts: ThreadStarts) -> None:
        self.setup = setup
        self.clock: FailingClock[ProbeClock] = FailingClock(ProbeClock())
        self.sink = FailingSink()
        self.starts = starts
        self.q: Queue[str] = Queue(
            capacity=setup.capacity,
            visibility_timeout=setup.vt,
            max_receives=setup.max_receives,
            clock=self.clock,
        )
        if setup.traced:
            self.q.record_trace(self.sink)

    # -- injection ------------------------------------------------------------------------

    def arm(self, fault: Injection | None, thread: ThreadMatch) -> None:
        """Count the calls ``thread`` makes at every point; fail at ``fault``'s point's k-th."""
        point, k, exc = fault if fault is not None else (None, None, None)
        raised = InjectedFault if exc is None else exc
        clock_k = k if point in ("now", "wait", "wait-after") else None
        method: Literal["now", "wait", "any"] = (
            "now" if point == "now" else "wait" if point in ("wait", "wait-after") else "any"
        )
        self.clock.fail_on(clock_k, method, raised, thread=thread, after_wait=point == "wait-after")
        self.sink.fail_on(k if point == "sink" else None, raised, thread=thread)
        self.starts.fail_on(k if point == "start" else None, exc, thread=thread)

    def disarm(self) -> None:
        self.clock.disarm()
        self.sink.disarm()
        self.starts.disarm()

    def counts(self) -> dict[Point, int]:
        waits = self.clock.trigger.counts["wait"]
        return {
            "now": self.clock.trigger.counts["now"],
            "wait": waits,
            "wait-after": waits,
            "sink": self.sink.trigger.total,
            "start": self.starts.trigger.total,
        }

    def fired(self) -> BaseException | None:
        return self.clock.fired or self.sink.fired or self.starts.fired

    def fired_in(self) -> threading.Thread | None:
        return (
            self.clock.trigger.fired_in
            or self.sink.trigger.fired_in
            or self.starts.trigger.fired_in
        )

    # -- observation ----------------------------------------------------------------------

    def observe(self) -> Observation:
        return Observation(self.q.snapshot(), self.q.stats(), tuple(self.q.dead_letters()))

    def check(self, expected: spec.State | None = None) -> None:
        """The queue's own invariants, the spec's on its projection, and (if given) that it
        shows exactly ``expected``."""
        self.self_check()
        snap = self.q.snapshot()
        assert not spec.violations(to_state(snap, self.setup.config, 0))
        if expected is not None:
            want = from_state(expected)
            assert from_snapshot(snap) == want
            assert stats_counts(self.q.stats()) == want.counts()
            dead = [(m.id, m.body, m.attempt) for m in self.q.dead_letters()]
            assert dead == [(m.id, m.body, m.attempt) for m in want.dead]

    def self_check(self) -> None:
        """The queue's own consistency check (``_check``), under its lock."""
        with self.q.mutex:
            self.q.machine.check()

    def state(self) -> spec.State:
        return to_state(self.q.snapshot(), self.setup.config, 0)

    # -- threads --------------------------------------------------------------------------

    def settle(self) -> None:
        """Let a running sweeper reach its wait with no wakeup pending.

        Before the clock moves without waking anyone, so that a sweeper still on its way to its
        wait (just started, or woken by an arm) cannot see the new time and expire in the
        middle of the test: wake it once and wait until it begins its next wait.
        """
        if not any(is_sweeper(t) and t.is_alive() for t in threading.enumerate()):
            return
        begun = self.clock.waits_begun(is_sweeper)
        with self.q.new_deadline:
            self.q.new_deadline.notify_all()
        assert wait_until(lambda: self.clock.waits_begun(is_sweeper) > begun), "sweeper stuck"

    def blocked(self, call: Call[object]) -> bool:
        """Wait (bounded) until ``call`` is asleep in the clock; ``False`` if it finished."""
        assert wait_until(lambda: self.clock.asleep(call.thread) > 0 or call.finished), (
            f"{call.thread.name} neither blocked nor finished"
        )
        return not call.finished

    def advance(self, dt: float, *, wake: bool) -> None:
        if not wake:
            self.settle()
        self.clock.inner.advance(dt, wake=wake)


def prepare(w: World, op: Op) -> Prepared:
    """Make ``op`` ready to run on ``w``: its receipt is looked up, a sweep's clock is moved.

    A receipt operation or cancel with no id acts on the first message in flight (else the
    first visible one): random prefixes then reach live receipts often."""
    q = w.q
    attempt = 0
    if op.name in ANY_ID_OPS and op.id is None:
        snap = q.snapshot()
        first = next(iter((*snap.in_flight, *snap.visible)), None)
        op = replace(op, id="a" if first is None else first.id)
    if op.name in RECEIPT_OPS:
        assert op.id is not None
        attempt = max(current_attempt(q.snapshot(), op.id) - op.stale, 0)
    receipts = tuple(
        (id, max(current_attempt(q.snapshot(), id) - op.stale, 0))
        for id in (op.ids if op.name in BATCH_RECEIPT_OPS else ())
    )
    run: Callable[[], object]
    match op.name:
        case "send":
            if op.t:
                run = partial(q.send, body(op), id=op.id, delay=op.t, block=False)
            else:
                run = partial(q.send, body(op), id=op.id, block=False)
        case "send_batch":
            entries = [Entry(body(op, id), id=id or None, delay=op.t or None) for id in op.ids]
            run = partial(q.send_batch, entries, block=False)
        case "receive_batch":
            if op.vt == DEFAULT:
                run = partial(q.receive_batch, op.n, block=False)
            else:
                run = partial(q.receive_batch, op.n, block=False, visibility_timeout=op.vt)
        case "delete_batch":
            run = partial(q.delete_batch, [q.receipt(id, a) for id, a in receipts])
        case "change_visibility_batch":
            changes = [(q.receipt(id, a), op.t) for id, a in receipts]
            run = partial(q.change_visibility_batch, changes)
        case "purge":
            run = q.purge
        case "receive":
            if op.vt == DEFAULT:
                run = partial(q.receive, block=False)
            else:
                run = partial(q.receive, block=False, visibility_timeout=op.vt)
        case "delete" | "retry" | "change_visibility":
            assert op.id is not None
            receipt = q.receipt(op.id, attempt)
            if op.name == "delete":
                run = partial(q.delete, receipt)
            elif op.name == "retry":
                run = partial(q.retry, receipt)
            else:
                run = partial(q.change_visibility, receipt, op.t)
        case "cancel":
            assert op.id is not None
            run = partial(q.cancel, op.id)
        case "sweep":
            if op.t:
                w.advance(op.t, wake=False)
            run = q.sweep
        case "timer":
            raise ValueError("the loop timer's round is the asyncio driver's: see exercise_aio")
    return Prepared(op, run, attempt, w.clock.inner.now(), receipts)


def model(s: spec.State, p: Prepared, outcome: Outcome, setup: Setup) -> tuple[spec.State, object]:
    """What the spec says ``p.op`` does to ``s``, and its result in the form of
    :func:`result_of`. A send without an id gets the id the queue generated."""
    op = p.op
    receipt = spec.Receipt(s.queue, op.id or "", p.attempt)
    match op.name:
        case "send":
            id = op.id
            if id is None:
                made = outcome.value if isinstance(outcome, Returned) else None
                id = made if isinstance(made, str) else "never-accepted"
            return spec.send(s, id, body(op), op.t, p.now)
        case "send_batch":
            made = outcome.value if isinstance(outcome, Returned) else None
            ids = made if isinstance(made, list) else [id or "never-accepted" for id in op.ids]
            pairs = zip(ids, op.ids, strict=True)
            entries = tuple((id, body(op, given), op.t) for id, given in pairs)
            return spec.send_batch(s, entries, p.now)
        case "receive_batch":
            vt = setup.vt if op.vt == DEFAULT else op.vt
            after, ds = spec.receive_batch(s, p.now, op.n, vt)
            return after, tuple((d.id, d.body, d.attempt) for d in ds)
        case "delete_batch":
            return spec.delete_batch(s, [spec.Receipt(s.queue, id, a) for id, a in p.receipts])
        case "change_visibility_batch":
            changes = [(spec.Receipt(s.queue, id, a), op.t) for id, a in p.receipts]
            return spec.change_visibility_batch(s, changes, p.now)
        case "purge":
            return spec.purge(s)
        case "receive":
            vt = setup.vt if op.vt == DEFAULT else op.vt
            after, d = spec.receive(s, p.now, vt)
            return after, None if d is None else (d.id, d.body, d.attempt)
        case "delete":
            return spec.delete(s, receipt)
        case "retry":
            return spec.retry(s, receipt)
        case "change_visibility":
            return spec.change_visibility(s, receipt, op.t, p.now)
        case "cancel":
            assert op.id is not None
            return spec.cancel(s, op.id)
        case "sweep":
            return spec.expire(s, p.now)[0], None
        case "timer":
            # exercise_aio prepares the timer's round as a sweep at the time it moves to.
            raise ValueError("the loop timer's round is modelled as a sweep")


def result_of(op: Op, outcome: Outcome) -> object:
    """The impl's outcome in the spec's terms: a rejected send is ``False``, a receive that
    finds nothing ``None``, a delivery ``(id, body, attempt)``. Anything else raised fails."""
    if isinstance(outcome, Raised):
        e = outcome.error
        if op.name in ("send", "send_batch") and isinstance(e, Full | DuplicateIdError):
            return False
        if op.name == "receive" and isinstance(e, Empty):
            return None
        if op.name == "receive_batch" and isinstance(e, Empty):
            return ()
        raise AssertionError(f"{op} raised {e!r}") from e
    value = outcome.value
    if op.name == "send":
        assert isinstance(value, str)
        return True
    if op.name == "send_batch":
        assert isinstance(value, list) and len(value) == len(op.ids)
        return True
    if op.name == "receive":
        assert isinstance(value, Message)
        return (value.id, value.body, value.attempt)
    if op.name == "receive_batch":
        assert isinstance(value, list)
        return tuple((m.id, m.body, m.attempt) for m in value)
    if op.name in BATCH_RECEIPT_OPS:
        assert isinstance(value, list)
        return tuple(value)
    return value


# =============================================================================================
# Bystanders: a blocked receiver or sender beside the call under test
# =============================================================================================


def start_bystander(w: World, kind: Bystander) -> Call[object]:
    """A receiver (no visibility timeout: it starts no sweeper) or a sender of id ``by``,
    blocked on the queue before the call under test runs."""
    q = w.q
    fn: Callable[[], object]
    if kind == "receiver":
        fn = partial(q.receive, visibility_timeout=None)
    else:
        fn = partial(q.send, "by", id="by")
    call = Call(fn, BYSTANDER)
    assert w.blocked(call), f"the {kind} did not block: {call.result()!r}"
    return call


def serve_bystander(
    w: World, call: Call[object], kind: Bystander, s: spec.State, now: float, where: str = ""
) -> spec.State:
    """If ``s`` has work for the blocked bystander, it must be woken and take it: the state
    after that. Otherwise it must still be asleep (not woken beside nothing to take)."""
    work = bool(s.visible) if kind == "receiver" else spec.can_send(s, "by")
    if not work:
        assert w.blocked(call), f"{where}: the {kind} left with nothing to take: {call.result()}"
        return s
    try:
        value = call.result()
    except AssertionError as e:  # Call.result's bound ran out
        what = f"visible {s.visible}" if kind == "receiver" else "a free slot"
        raise AssertionError(f"{where}: the blocked {kind} sleeps beside {what}") from e
    if kind == "sender":
        assert value == "by", value
        return spec.send(s, "by", "by")[0]
    s, d = spec.receive(s, now, None)
    assert d is not None and isinstance(value, Message), value
    assert (value.id, value.body, value.attempt) == (d.id, d.body, d.attempt)
    return s


def end_bystander(call: Call[object]) -> None:
    """After close: a bystander still blocked was woken by the shutdown."""
    if call.finished:
        with contextlib.suppress(ShutDown):
            call.result()
        return
    try:
        value = call.result()
    except ShutDown:
        return
    raise AssertionError(f"a bystander still blocked at close returned {value!r}, not ShutDown")


def bystander_for(s: spec.State) -> Bystander | None:
    """The bystander a state can have: a receiver when nothing is visible, a sender when full."""
    if not s.visible:
        return "receiver"
    if s.config.capacity is not None and s.active >= s.config.capacity:
        return "sender"
    return None


# =============================================================================================
# One run of a call that does not wait
# =============================================================================================


def exercise(
    setup: Setup,
    prefix: tuple[Op, ...],
    op: Op,
    bystander: Bystander | Literal["auto"] | None,
    fault: Injection | None,
) -> dict[Point, int]:
    """Bring a fresh queue to the state ``prefix`` leads to, run ``op`` (with ``fault``), check
    it, and return how many calls ``op`` made at each injection point.

    With a fault: it must fire and be what the call raises, the queue must be exactly as
    before (with a bystander still asleep), and the retried call must then succeed. Either
    way the call's result and the state after it must agree with the spec, a bystander must
    be woken iff there is work for it, and expiry must be healthy.
    """
    me = threading.current_thread()
    with failing_thread_start(None) as starts:
        w = World(setup, starts)
        by: Call[object] | None = None
        try:
            for p in prefix:
                result_of(p, outcome_of(prepare(w, p).run))
            kind = bystander_for(w.state()) if bystander == "auto" else bystander
            if kind is not None:
                by = start_bystander(w, kind)
            prepared = prepare(w, op)
            op = prepared.op
            before = w.observe()
            s0 = w.state()
            traced = len(w.sink.steps)
            w.arm(fault, me)
            outcome = outcome_of(prepared.run)
            counts = w.counts()
            where = f"{op} with a fault at {fault[0]} #{fault[1]}" if fault else str(op)
            if fault is not None:
                fired = w.fired()
                assert fired is not None, f"{where}: the fault was never reached"
                assert isinstance(outcome, Raised) and outcome.error is fired, (
                    f"{where}: {fired!r} was raised inside, the caller got {outcome}"
                )
                assert w.observe() == before, f"{where}: the failed call changed the queue"
                w.check()
                if op.name != "sweep":
                    assert w.sink.steps[traced:] == [], f"{where}: a failed call was traced"
                if by is not None:
                    assert w.blocked(by), f"{where}: the bystander left: {by.result()!r}"
                w.disarm()
                outcome = outcome_of(prepared.run)
            s1, expected = model(s0, prepared, outcome, setup)
            assert result_of(op, outcome) == expected, where
            if by is not None and kind is not None:
                s1 = serve_bystander(w, by, kind, s1, prepared.now, where)
            w.check(s1)
            health = w.q.health()
            assert health.sweeper_failures == 0 and health.last_error is None, (where, health)
            assert not health.expiry_stalled, (where, health)
        finally:
            w.q.close()
        if by is not None:
            end_bystander(by)
    return counts


def check_every_fault(
    setup: Setup,
    prefix: tuple[Op, ...],
    op: Op,
    bystander: Bystander | Literal["auto"] | None,
    points: tuple[Point, ...] = POINTS,
    fault: Fault | None = None,
) -> dict[Point, int]:
    """:func:`exercise` fault-free, counting, then with a fault at every point and every k."""
    counts = exercise(setup, prefix, op, bystander, None)
    for point in points:
        for k in range(1, counts[point] + 1):
            exercise(setup, prefix, op, bystander, (point, k, fault))
    return counts


# =============================================================================================
# Moves across two queues (contract section 7): a failing clock or trace sink during a move
# =============================================================================================

#: The calls that move a message from one queue to another, by name: a dying release
#: (``retry``, ``change_visibility`` with 0, a ``sweep`` firing a deadline) moves it from
#: ``src`` into its dead-letter queue ``dlq``; a redrive (``start_redrive`` all at once, or a
#: ``redrive_tick``: the sweep of ``dlq`` firing a rate task's tick) moves it back.
MOVES: Final = ("retry", "change_visibility", "sweep", "start_redrive", "redrive_tick")
#: Where a fault is injected during a move: the k-th clock reading, or the k-th call of the
#: trace sink of ``src`` or of ``dlq``.
MovePoint: TypeAlias = Literal["now", "sink:src", "sink:dlq"]
MOVE_POINTS: Final[tuple[MovePoint, ...]] = ("now", "sink:src", "sink:dlq")


class ParkedFailingClock(FailingClock[ProbeClock]):
    """A :class:`FailingClock` around a ``ProbeClock`` whose queues' sweepers never run."""

    sync = ParkedSync()

    def __init__(self) -> None:
        super().__init__(ProbeClock())


@dataclass
class MoveWorld:
    """A dead-letter queue and its source on one failing clock, each with a failing sink,
    brought to the state just before the move ``op``; ``call`` makes it."""

    clock: ParkedFailingClock
    dlq: BaseQueue[str]
    src: BaseQueue[str]
    sinks: dict[str, FailingSink]
    call: Callable[[], object]

    @property
    def queues(self) -> list[BaseQueue[str]]:
        return [self.dlq, self.src]

    def close(self) -> None:
        self.src.close()
        self.dlq.close()


def move_world(cls: type[BaseQueue[str]], op: str, *, fifo: bool = False) -> MoveWorld:
    """The scenario of the move ``op`` (one of :data:`MOVES`) on queues of class ``cls``:
    ``x`` sent to ``src`` (``max_receives=1``, ``dlq`` with a retention) and received; for a
    redrive, dead-lettered first."""
    clock = ParkedFailingClock()
    kw: dict[str, object] = {}
    make: Any = cls
    dlq = make(clock=clock, name="dlq", visibility_timeout=2.0, retention=100.0)
    src = make(clock=clock, name="src", max_receives=1, dead_letter=dlq, visibility_timeout=2.0)
    if fifo:
        kw["group"] = "g"
    src.send("body-x", id="x", **kw)
    m = src.receive(block=False)
    call: Callable[[], object]
    if op == "retry":
        call = partial(src.retry, m.receipt)
    elif op == "change_visibility":
        call = partial(src.change_visibility, m.receipt, 0.0)
    elif op == "sweep":
        clock.inner.advance(2.0, wake=False)
        call = src.sweep
    elif op == "start_redrive":
        src.retry(m.receipt)
        call = dlq.start_redrive
    elif op == "redrive_tick":
        src.retry(m.receipt)
        dlq.start_redrive(rate=1.0)  # its first move is due at once, at dlq's next sweep
        call = dlq.sweep
    else:
        raise ValueError(f"op must be one of {MOVES}, got {op!r}")
    sinks = {"dlq": FailingSink(), "src": FailingSink()}
    dlq.record_trace(sinks["dlq"])
    src.record_trace(sinks["src"])
    return MoveWorld(clock, dlq, src, sinks, call)


def system_view(w: MoveWorld) -> tuple[object, ...]:
    """Everything both queues show about their messages: snapshots, stats, dead letters,
    where each message came from and where each redriven one went."""
    out: list[object] = []
    for q in w.queues:
        snap = q.snapshot()
        ids = sorted(
            {m.id for m in (*snap.visible, *snap.in_flight, *snap.dead, *snap.delayed)}
            | snap.done
            | snap.cancelled
            | snap.aged_out
            | snap.moved
        )
        sources = [(i, getattr(q.source_of(i), "name", None)) for i in ids]
        moved = [(i, (h[0].name, h[1]) if (h := q.moved_to(i)) else None) for i in ids]
        out += [snap, q.stats(), [m.id for m in q.dead_letters()], sources, moved]
    return tuple(out)


def _generated_ids_renamed(view: tuple[object, ...]) -> str:
    """``view`` as text with each generated id (``msg-N``) renamed by its first appearance: a
    vetoed step may have used up a number of the system's counter (as a vetoed send with a
    generated id does on a queue alone), which is no state the queues show."""
    names: dict[str, str] = {}
    return re.sub(r"msg-\d+", lambda m: names.setdefault(m[0], f"<gen{len(names)}>"), repr(view))


def _arm(w: MoveWorld, point: MovePoint, k: int | None) -> None:
    me = threading.current_thread()
    if point == "now":
        w.clock.fail_on(k, "now", thread=me)
    else:
        w.sinks[point.partition(":")[2]].fail_on(k, thread=me)


def _count(w: MoveWorld, point: MovePoint) -> int:
    if point == "now":
        return w.clock.trigger.counts["now"]
    return w.sinks[point.partition(":")[2]].trigger.total


def check_move_faults(
    cls: type[BaseQueue[str]], op: str, *, fifo: bool = False
) -> dict[MovePoint, int]:
    """Run the move ``op`` fault-free (counting each point's calls), then once per point and
    per k with the k-th call failing: the call raises the fault, both queues are as they were
    (:func:`system_view`), ``system_one_state`` and ``nothing_lost`` hold on them, and (for a
    release or a tick) the same call made again, fault-free, leaves them as the fault-free run
    does. ``AssertionError`` with the scenario and the injection otherwise; the counts."""
    from model_tests import system_checks

    w = move_world(cls, op, fifo=fifo)
    try:
        for point in MOVE_POINTS:
            _arm(w, point, None)
        w.call()
        clean = system_view(w)
        counts = {p: _count(w, p) for p in MOVE_POINTS}
    finally:
        w.close()
    for point in MOVE_POINTS:
        for k in range(1, counts[point] + 1):
            where = f"{cls.__name__} {op}, fault at {point} #{k}"
            w = move_world(cls, op, fifo=fifo)
            try:
                before = system_view(w)
                _arm(w, point, k)
                outcome = outcome_of(w.call)
                assert isinstance(outcome, Raised) and isinstance(outcome.error, InjectedFault), (
                    f"{where}: the call gave {outcome}"
                )
                for reason in (
                    system_checks.system_one_state(w.queues),
                    system_checks.nothing_lost(w.queues, ["x"]),
                ):
                    assert reason is None, f"{where}: {reason}"
                assert system_view(w) == before, f"{where}: the queues changed"
                if op != "start_redrive":  # a failed start leaves its task (impl/redrive.py)
                    w.clock.disarm()
                    for sink in w.sinks.values():
                        sink.disarm()
                    w.call()
                    again = _generated_ids_renamed(system_view(w))
                    assert again == _generated_ids_renamed(clean), (
                        f"{where}: the retried call differs"
                    )
            finally:
                w.close()
    return counts


# =============================================================================================
# The asyncio driver: impl.AsyncQueue on one event loop, a failing clock and trace sink
# =============================================================================================

#: Where a fault is injected in the asyncio driver: the k-th clock reading, the k-th arming of
#: the loop timer (``call_at`` on the injected clock), the k-th call of the trace sink. There is
#: no thread to start and no ``wait``: a waiting task awaits a future.
AioPoint: TypeAlias = Literal["now", "call_at", "sink"]
AIO_POINTS: Final[tuple[AioPoint, ...]] = ("now", "call_at", "sink")
#: The op name (:class:`Op` with ``t``) of the loop timer's own sweep round: the clock moves on
#: by ``t``, waking, and the timer armed for the earliest due time sweeps, in the loop.
TIMER: Final = "timer"
AioInjection: TypeAlias = tuple[AioPoint, int, Fault | None]


class FailingLoopClock(FailingClock[ProbeClock]):
    """A :class:`FailingClock` that also offers the wrapped fake clock's ``call_at``, so that
    the async queue arms its one timer on it (a clock without ``call_at`` would make it use the
    loop's own, real, time); each ``call_at`` is counted and may fail as ``"call_at"``."""

    def call_at(self, due: float, callback: Callable[[], object]) -> Any:
        with self._lock:
            self.call_at_calls += 1
        fault = self.trigger.hit("call_at")
        if fault is not None:
            raise fault
        return self.inner.call_at(due, callback)

    call_at_calls = 0


class AioWorld(World):
    """One ``impl.AsyncQueue`` on a :class:`FailingLoopClock` (around a ``ProbeClock``) with a
    failing sink, behind a :class:`Blocking` facade on one event loop, for one run."""

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.runner = LoopRunner()
        self.clock = FailingLoopClock(ProbeClock())
        self.sink = FailingSink()
        self.aq: Any = self.runner.run(
            async_class(fifo=False),
            capacity=setup.capacity,
            visibility_timeout=setup.vt,
            max_receives=setup.max_receives,
            clock=self.clock,
        )
        self.q = blocking(self.aq, self.runner)  # type: ignore[assignment]
        self.started: list[Any] = []
        if setup.traced:
            self.q.record_trace(self.sink)

    def arm(self, fault: AioInjection | None, thread: ThreadMatch) -> None:  # type: ignore[override]
        point, k, exc = fault if fault is not None else (None, None, None)
        raised = InjectedFault if exc is None else exc
        if point == "call_at":
            self.clock.trigger.arm(k, raised, label="call_at", thread=thread)
        else:
            self.clock.fail_on(k if point == "now" else None, "now", raised, thread=thread)
        self.sink.fail_on(k if point == "sink" else None, raised, thread=thread)

    def disarm(self) -> None:
        self.clock.disarm()
        self.sink.disarm()

    def counts(self) -> dict[AioPoint, int]:  # type: ignore[override]
        return {
            "now": self.clock.trigger.counts["now"],
            "call_at": self.clock.trigger.counts["call_at"],
            "sink": self.sink.trigger.total,
        }

    def fired(self) -> BaseException | None:
        return self.clock.fired or self.sink.fired

    def self_check(self) -> None:
        """The queue machine's own check (``Machine.check``: its O(1) counts)."""
        self.aq.machine.check()

    def settle(self) -> None:
        """No sweeper thread: the loop timer runs only inside a waking ``advance``."""

    def advance(self, dt: float, *, wake: bool) -> None:
        if wake:
            self.runner.run(self.clock.inner.advance, dt)
        else:
            self.clock.inner.advance(dt, wake=False)

    # -- bystanders: a waiting task --------------------------------------------------------

    def start_bystander(self, kind: Bystander) -> Any:
        """A receiver (no visibility timeout) or a sender of id ``by``, waiting as a task."""
        if kind == "receiver":
            task = self.runner.start(self.aq.receive(visibility_timeout=None))
        else:
            task = self.runner.start(self.aq.send("by", id="by"))
        self.started.append(task)
        assert not task.done(), f"the {kind} did not wait: {task.result()!r}"
        return task

    def serve_bystander(
        self, task: Any, kind: Bystander, s: spec.State, now: float, where: str
    ) -> spec.State:
        """As :func:`serve_bystander`: woken and served iff ``s`` has work for it."""
        self.runner.settle()
        work = bool(s.visible) if kind == "receiver" else spec.can_send(s, "by")
        if not work:
            assert not task.done(), f"{where}: the {kind} left with nothing: {task.result()!r}"
            return s
        assert task.done(), f"{where}: NoSleepingWaiter: the waiting {kind} sleeps beside work"
        value = task.result()
        if kind == "sender":
            assert value == "by", value
            return spec.send(s, "by", "by")[0]
        s, d = spec.receive(s, now, None)
        assert d is not None and isinstance(value, Message), value
        assert (value.id, value.body, value.attempt) == (d.id, d.body, d.attempt)
        return s

    def close(self) -> None:
        """Close the queue: a bystander still waiting raises ``ShutDown``; close the loop."""
        try:
            self.q.close()
            self.runner.settle()
            # Every task started here (asyncio.all_tasks lists only the pending ones): each has
            # finished, and its result is read (else asyncio warns of an unretrieved ShutDown).
            for task in self.started:
                if task.done() and not task.cancelled():
                    with contextlib.suppress(ShutDown):
                        task.result()
                else:
                    raise AssertionError(f"a waiting task was not woken by close: {task!r}")
        finally:
            self.runner.close()


def _prepare_aio(w: AioWorld, op: Op) -> Prepared:
    """:func:`prepare`, and the loop timer's round (:data:`TIMER`): the clock moves on by
    ``op.t``, waking, in the loop; the spec's view of it is a sweep at the new time."""
    if op.name != TIMER:
        return prepare(w, op)
    now = w.clock.inner.now() + op.t
    return Prepared(replace(op, name="sweep", t=0.0), partial(w.advance, op.t, wake=True), 0, now)


def _resumes_expiry(
    w: AioWorld, s: spec.State, where: str, by: Any, kind: Bystander | None
) -> spec.State:
    """Expiry resumes: the clock moved (waking) onto the earliest due time releases what is due
    there with no ``sweep()`` called, as ``spec.expire`` at that time says; a bystander still
    waiting is then served iff that made work for it (a release makes a message visible for a
    receiver, a dead-lettering frees room for a sender). The state after it."""
    due = [m.due for m in s.messages if m.due is not None]
    if not due:
        return s
    now = w.clock.inner.now()
    dt = max(0.0, min(due) - now)
    waiting = by is not None and not by.done()
    w.advance(dt, wake=True)
    w.runner.settle()
    expected = spec.expire(s, now + dt)[0]
    if waiting and kind is not None:
        expected = w.serve_bystander(by, kind, expected, now + dt, where)
    assert from_snapshot(w.q.snapshot()) == from_state(expected), (
        f"{where}: expiry did not resume: the loop timer did not release what is due at {now + dt}"
    )
    return expected


def timer_survives(point: AioPoint, fired: BaseException) -> bool:
    """Whether the loop timer outlives a fault in its round, as the threaded sweeper does
    (``impl/sweeper.py``; ``test_faults.py``'s ``survives``): a failed round (its clock read or
    its trace sink raising an ``Exception``) is retried after a backoff. A ``call_at`` that
    fails (the timer's re-arming after its round, the counterpart of the sweeper's clock
    ``wait``), or a ``BaseException`` such as ``KeyboardInterrupt``, ends it."""
    return point != "call_at" and isinstance(fired, Exception)


def _after_a_timer_fault(
    w: AioWorld,
    prepared: Prepared,
    outcome: Outcome,
    fault: AioInjection,
    before: Observation,
    by: Any,
    where: str,
) -> tuple[Prepared, Outcome]:
    """The loop timer's round with ``fault``: what the threaded sweeper promises.

    Not the call's promise (the round is nobody's call): an ``Exception`` is not raised to
    whoever moved the clock (the sweeper thread's is not raised anywhere either), only logged
    and counted in ``health()``; a ``BaseException`` is re-raised to it, as asyncio re-raises
    ``KeyboardInterrupt`` from a callback. A failed round changed nothing (the bystander still
    waits). If the timer survives (:func:`timer_survives`), ``health()`` says so with the fault
    counted, and once the clock passes the backoff the round runs again with no other call. If
    it died (a failing ``call_at`` comes after a round that committed: that round stands), a
    ``health()`` whose restart fails changes nothing and reports the stall; the next one
    restarts it, and what is due fires at the next move of the clock. Returns the round that
    then ran and its outcome, for the model."""
    fired = w.fired()
    assert fired is not None, f"{where}: the fault was never reached"
    if isinstance(fired, Exception):
        assert isinstance(outcome, Returned), (
            f"{where}: the round's {fired!r} reached whoever moved the clock: {outcome}"
        )
    else:
        assert isinstance(outcome, Raised) and outcome.error is fired, (
            f"{where}: {fired!r} was raised in the round, whoever moved the clock got {outcome}"
        )
    committed = fault[0] == "call_at"
    w.runner.settle()
    if not committed:
        assert w.observe() == before, f"{where}: the failed round changed the queue"
        if by is not None:
            assert not by.done(), f"{where}: the bystander left: {by.result()!r}"
    w.check()
    q = w.q
    if timer_survives(fault[0], fired):
        health = q.health()
        assert health == Health(
            sweeper_running=True, sweeper_failures=1, last_error=fired, expiry_stalled=False
        ), f"{where}: {health}"
        # The round again, by itself, once the queue's clock passes the backoff.
        retried = replace(prepared, now=w.clock.inner.now() + FIRST_BACKOFF)
        return retried, outcome_of(partial(w.advance, FIRST_BACKOFF, wake=True))
    stalled = any(m.due is not None for m in w.state().messages)
    me = threading.current_thread()
    w.arm(("call_at", 1, None), me)
    failed = q.health()
    again = w.fired()
    w.disarm()
    if stalled:
        assert again is not None, f"{where}: health() did not try to restart the loop timer"
    assert failed == Health(
        sweeper_running=False,
        sweeper_failures=1,
        last_error=fired if again is None else again,
        expiry_stalled=stalled,
    ), f"{where}: after the timer died: {failed}"
    w.check()
    health = q.health()
    assert health.sweeper_running == stalled and not health.expiry_stalled, f"{where}: {health}"
    if committed:  # the round's effect stands: the model's is the fault-free round's
        return prepared, Returned(None)
    # The round vetoed: what was due fires once the clock moves again (here, by nothing).
    return prepared, outcome_of(partial(w.advance, 0.0, wake=True))


def exercise_aio(
    setup: Setup,
    prefix: tuple[Op, ...],
    op: Op,
    bystander: Bystander | Literal["auto"] | None,
    fault: AioInjection | None,
) -> dict[AioPoint, int]:
    """:func:`exercise` for ``impl.AsyncQueue``: bring a fresh queue to ``prefix``'s state, run
    ``op`` (or the loop timer's round, :data:`TIMER`) with ``fault``, and check it.

    With a fault: it must fire and be what the call raises, the queue must be exactly as before
    (a waiting bystander still waiting: not stranded, not served), nothing traced, and the
    retried call must then agree with the spec. Either way the bystander is woken iff there is
    work for it, and expiry resumes (:func:`_resumes_expiry`). Only the call's own task step is
    counted and may fail: the counts are taken, and the injectors disarmed, in that step right
    after the call (before a task it woke runs on the same thread).
    """
    me = threading.current_thread()
    timer = op.name == TIMER
    w = AioWorld(setup)
    try:
        for p in prefix:
            result_of(p, outcome_of(_prepare_aio(w, p).run))
        kind = bystander_for(w.state()) if bystander == "auto" else bystander
        by = w.start_bystander(kind) if kind is not None else None
        prepared = _prepare_aio(w, op)
        op = prepared.op
        before = w.observe()
        s0 = w.state()
        traced = len(w.sink.steps)
        counted: dict[AioPoint, int] = {}

        def stop_counting() -> None:
            counted.update(w.counts())
            w.disarm()

        w.arm(fault, me)
        w.runner.after_next(stop_counting)
        outcome = outcome_of(prepared.run)
        where = f"{op} with a fault at {fault[0]} #{fault[1]}" if fault else str(op)
        if timer:
            where = f"the loop timer's round: {where}"
        if fault is not None and timer:
            prepared, outcome = _after_a_timer_fault(w, prepared, outcome, fault, before, by, where)
        elif fault is not None:
            fired = w.fired()
            assert fired is not None, f"{where}: the fault was never reached"
            assert isinstance(outcome, Raised) and outcome.error is fired, (
                f"{where}: {fired!r} was raised inside, the caller got {outcome}"
            )
            w.runner.settle()
            assert w.observe() == before, f"{where}: the failed call changed the queue"
            w.check()
            if op.name != "sweep":
                assert w.sink.steps[traced:] == [], f"{where}: a failed call was traced"
            if by is not None:
                assert not by.done(), f"{where}: the bystander left: {by.result()!r}"
            outcome = outcome_of(prepared.run)
        s1, expected = model(s0, prepared, outcome, setup)
        assert result_of(op, outcome) == expected, where
        if by is not None and kind is not None:
            s1 = w.serve_bystander(by, kind, s1, prepared.now, where)
        w.check(s1)
        _resumes_expiry(w, s1, where, by, kind)
    finally:
        w.close()
    return counted


def check_every_fault_aio(
    setup: Setup,
    prefix: tuple[Op, ...],
    op: Op,
    bystander: Bystander | Literal["auto"] | None,
    points: tuple[AioPoint, ...] = AIO_POINTS,
    fault: Fault | None = None,
) -> dict[AioPoint, int]:
    """:func:`exercise_aio` fault-free, counting, then with a fault at every point and k."""
    counts = exercise_aio(setup, prefix, op, bystander, None)
    for point in points:
        for k in range(1, counts[point] + 1):
            exercise_aio(setup, prefix, op, bystander, (point, k, fault))
    return counts
