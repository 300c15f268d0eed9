"""Running a program under one schedule, and searching the schedules: DFS with a preemption
bound (iterative context bounding, as CHESS) and randomized PCT.

:func:`run_once` builds a fresh scheduler, clock and queue, runs the program's setup, starts its
threads and the clock driver, and lets a *strategy* pick at every scheduling point. Then it
checks the run (:func:`judge`):

- LIVELOCK: the run passed the step bound (a busy-spin is reported, never hangs);
- CRASH: a logical thread died of an exception the program does not expect, or the sweeper
  died (``Queue.health``);
- DEADLOCK: every unfinished thread waits for the mutex or for a thread that waits;
- LOST WAKEUP: every unfinished thread is blocked (the clock driver's script is done, so no
  timer fires any more), and one of them sleeps, not notified, beside what it waits for: a
  receiver beside a deliverable message, a sender beside room (not shut down), the sweeper
  beside a due timer. (A waiter with a deadline still to come counts too: it would get what it
  waits for only when its timeout fires, late.)
- INVARIANT: ``Machine.check`` or an invariant of ``spec/invariants.py`` fails on the final state
  (the snapshot projected to a spec state, ``model_tests.projection.to_state``);
- NOT LINEARIZABLE: the history (every call and return, with results; the clock driver's
  ``advance`` steps included) has no sequential explanation in the spec
  (``model_tests.linearizability.check`` with ``sweeper=True``).

A schedule is the list of choices made at the *decision points* (the scheduling points where
more than one thread, or an injected interrupt, could go next). Switching away from a thread
that could go on is a *preemption*, except at the start of one of its operations (a ``call``:
between two operations a thread holds nothing, and which operation goes first is what the
sequential tests already enumerate). :func:`explore` enumerates every schedule with at most
``k`` preemptions for k = 0, 1, ... (each schedule run once: those with one preemption more are
started from the points found at the level below), so the first failure it reports has the
fewest preemptions. :func:`pct` runs ``n`` randomized schedules with the PCT algorithm (random
priorities, ``d - 1`` priority change points).

This is the thread backend of the one exploration engine (:mod:`model_tests.exploration`: the
decisions, the search, the replay strings); the event-loop backend is
:mod:`model_tests.aio.explore`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Final, cast

import spec
from impl import Entry as BatchEntry
from impl import FifoQueue, Message, Queue
from model_tests import exploration
from model_tests.exploration import Failure, Level
from model_tests.linearizability import (
    Call,
    Entry,
    HistoryRecorder,
    Linearizable,
    QueueAdapter,
    check,
)
from model_tests.projection import to_state
from model_tests.schedule.controlled import (
    Abort,
    CLock,
    ControlledClock,
    Interrupt,
    LThread,
    Pending,
    Scheduler,
)
from model_tests.schedule.events import ThreadEvent
from model_tests.schedule.programs import Op, Program

#: The steps one schedule may take before it is reported as a livelock.
MAX_STEPS: Final = 2_000

#: The thread name of the program's setup, in the history and in the events.
SETUP: Final = "setup"

#: Whether switching away from a thread between two of its operations is free (no preemption).
FREE_CALLS = True

#: One choice at a decision point: a thread's index, and whether to interrupt its wake.
Choice = tuple[int, bool]


#: A decision point of a run of this backend (:class:`model_tests.exploration.Decision`).
Decision = exploration.Decision[Choice]


class Run(exploration.Run[Program, Choice, tuple[str, Pending], ThreadEvent, Entry]):
    """One run of a program under one schedule, and its verdict: the steps are each thread's
    pending point, the events the thread-level ones (``events.py``)."""


#: Picks a choice from the options (with their costs), given the default (no preemption).
Strategy = exploration.Strategy[Choice]


def forced(prefix: Sequence[Choice]) -> Strategy:
    """Follow ``prefix`` at the first decision points, then the default (no preemption)."""
    return exploration.forced(prefix)


# =============================================================================================
# One run
# =============================================================================================


def queue_classes() -> dict[str, type[Queue[Any]]]:
    """Every queue the scheduler can run, by name: the real ones and every mutant."""
    from model_tests.mutants import FIFO_MUTANTS, MUTANTS
    from model_tests.schedule.local_mutants import LOCAL_MUTANTS

    return {"Queue": Queue, "FifoQueue": FifoQueue, **MUTANTS, **FIFO_MUTANTS, **LOCAL_MUTANTS}


def _resolve(ref: object, own: list[Message[Any]], setup: list[Message[Any]]) -> Any:
    if isinstance(ref, str) and ref.startswith("s"):
        i = int(ref[1:])
        return setup[i].receipt if i < len(setup) else None
    assert isinstance(ref, int)
    return own[ref].receipt if ref < len(own) else None


def _perform(
    q: Queue[Any],
    rec: HistoryRecorder,
    who: str,
    op: Op,
    own: list[Message[Any]],
    setup: list[Message[Any]],
) -> tuple[str, tuple[Any, ...], dict[str, Any], Callable[..., Any]] | None:
    """The call ``op`` makes: (name, args, kwargs, method), or ``None`` to skip it."""
    kw: dict[str, Any] = dict(op[-1]) if op and isinstance(op[-1], dict) else {}
    a = op[1:-1] if kw else op[1:]
    name = op[0]
    if name == "send":
        kw["id"] = a[0]
        return name, (f"body-{a[0]}",), kw, q.send
    if name == "send_batch":
        entries = [BatchEntry(f"body-{i}", id=i) for i in a[0]]
        return name, (entries,), kw, q.send_batch
    if name in ("receive", "purge"):
        return name, (), kw, getattr(q, name)
    if name == "receive_batch":
        return name, (a[0],), kw, q.receive_batch
    if name == "sweep":
        return name, (), kw, q.sweep
    if name == "cancel":
        return name, (a[0],), kw, q.cancel
    if name in ("delete", "retry", "change_visibility"):
        receipt = _resolve(a[0], own, setup)
        if receipt is None:
            return None
        return name, (receipt, *a[1:]), kw, getattr(q, name)
    raise ValueError(f"unknown operation {op!r}")


def run_once(
    program: Program,
    queue_class: type[Queue[Any]],
    strategy: Strategy,
    *,
    all_points: bool = False,
    max_steps: int = MAX_STEPS,
    lin_cache: dict[tuple[Entry, ...], bool] | None = None,
) -> Run:
    """Run ``program`` on ``queue_class`` once, choosing by ``strategy``; the checked run."""
    sched = Scheduler(max_steps=max_steps, all_points=all_points)
    clock = ControlledClock(sched)
    q: Queue[Any] = queue_class(clock=clock, **program.queue)
    adapter = QueueAdapter(visibility_timeout=program.visibility_timeout)
    rec = HistoryRecorder(adapter)
    dropped: set[int] = set()  # recorder slots of interrupted calls (they change nothing)
    setup_got: list[Message[Any]] = []

    def sink(step: tuple[str, tuple[object, ...], object, float]) -> None:
        # The whole step, its `now` included: where the transition sits among the ticks.
        sched.event(sched.me(), "step", step)

    q.record_trace(sink)

    def do(who: str, t: LThread | None, op: Op, own: list[Message[Any]]) -> None:
        made = _perform(q, rec, who, op, own, setup_got)
        if made is None:
            return
        name, args, kw, fn = made
        if t is not None:
            sched.point(t, Pending("call", f"{name}{_show(args, kw)}"))
            t.op = (name, args)
        sched.event(t, "call", (name, args))
        slot = len(rec.calls())
        try:
            value = rec.call(who, name, fn, *args, **kw)
        except Abort:
            raise
        except Interrupt:
            dropped.add(slot)
            sched.event(t, "raise", (name, "Interrupt"))
        except Exception as e:
            sched.event(t, "raise", (name, type(e).__name__))
        else:
            sched.event(t, "return", (name, _brief(value)))
            if isinstance(value, Message):
                own.append(value)
            elif isinstance(value, list) and value and isinstance(value[0], Message):
                own.extend(value)
        finally:
            if t is not None:
                t.op = None

    # The setup's events are recorded too, as those of a thread named "setup" (the test's
    # own thread runs it, before any logical thread): the model starts from an empty queue.
    sched.outside = SETUP
    try:
        for op in program.setup:
            do(SETUP, None, op, setup_got)
    finally:
        sched.outside = None

    def body(name: str, ops: tuple[Op, ...]) -> Callable[[], None]:
        def run() -> None:
            t = sched.me()
            assert t is not None
            own: list[Message[Any]] = []
            for op in ops:
                do(name, t, op, own)

        return run

    for name, ops in program.threads:
        sched.spawn(name, "caller", body(name, ops))
    if program.clock:

        def driver() -> None:
            t = sched.me()
            assert t is not None
            for dt in program.clock:
                sched.point(t, Pending("advance", f"advance({dt})"))
                rec.call("clock", "advance", clock.advance, dt)

        sched.spawn("clock", "clock", driver)

    decisions: list[Decision] = []
    interrupts = [program.interrupts]

    mutex = cast(CLock, q.mutex)

    def choose(options: list[LThread], current: LThread | None) -> tuple[LThread, bool]:
        if current is not None and mutex.owner is current and not all_points:
            # While it holds the mutex, a switch matters only to the clock driver: any other
            # thread could only start an operation and block on the mutex (see the module
            # docstring: the same run, with that call stamped earlier).
            options = [t for t in options if t is current or t.role == "clock"]
        alts: list[Choice] = []
        costs: list[int] = []
        preemptible = current is not None and current.pending is not None
        free = not preemptible or (current is not None and _free(current))
        for t in options:
            cost = 0 if free or t is current else 1
            alts.append((t.index, False))
            costs.append(cost)
            p = t.pending
            if (
                interrupts[0] > 0
                and p is not None
                and p.kind == "wake"
                and p.waiter is not None
                and p.waiter.notified
                and t.role == "caller"
            ):
                alts.append((t.index, True))
                costs.append(cost)
        if current is not None:
            default: Choice = (current.index, False)
        else:
            default = alts[0]
        if len(alts) == 1:
            return options[0], False
        chosen = strategy(alts, costs, default)
        decisions.append(Decision(tuple(alts), tuple(costs), chosen))
        if chosen[1]:
            interrupts[0] -= 1
        return sched.threads[chosen[0]], chosen[1]

    def stop_sweeper() -> None:
        link = getattr(q, "_link", None)
        if link is not None:
            link.stopped = True

    try:
        ended = sched.run(choose)
        history = _history(rec, adapter, dropped)
        failure = judge(program, q, clock, sched, ended, history, lin_cache)
        steps = [(t.name, p) for t, p in sched.steps]
        events = list(sched.events)
    finally:
        sched.teardown(stop_sweeper)
        q.close()  # every primitive passes through now: this only marks the queue closed
    return Run(program, queue_class.__name__, decisions, steps, events, history, failure)


def _free(t: LThread) -> bool:
    """Whether switching away from ``t`` costs no preemption: it is between operations."""
    p = t.pending
    return FREE_CALLS and p is not None and p.kind in ("call", "advance")


def _show(args: tuple[Any, ...], kw: dict[str, Any]) -> str:
    parts = [_brief(a) for a in args] + [f"{k}={v!r}" for k, v in kw.items()]
    return "(" + ", ".join(parts) + ")"


def _brief(v: object) -> str:
    if isinstance(v, Message):
        return f"<{v.id}#{v.attempt}>"
    if isinstance(v, list):
        return "[" + ", ".join(_brief(x) for x in v) + "]"
    r = getattr(v, "id", None)
    if r is not None and hasattr(v, "attempt"):
        return f"receipt({r}#{getattr(v, 'attempt')})"  # noqa: B009
    if isinstance(v, str):
        return repr(v)
    return repr(v) if not isinstance(v, BatchEntry) else f"Entry({v.id!r})"


def _history(rec: HistoryRecorder, adapter: QueueAdapter, dropped: set[int]) -> list[Entry]:
    """The recorded calls as a history: an interrupted call is left out (it changed nothing),
    a call ended by the teardown (or still blocked) is pending."""
    out: list[Entry] = []
    for i, c in enumerate(rec.calls()):
        if i in dropped:
            continue
        if c.ret is None or isinstance(c.error, Abort):
            c = Call(c.thread, c.name, c.args, c.kwargs, c.call)
        out.append(Entry(c.thread, adapter(c), c.call, c.ret))
    return out


# =============================================================================================
# The checks
# =============================================================================================


def config_of(program: Program) -> spec.Config:
    q = program.queue
    return spec.Config(
        capacity=q.get("capacity"),
        max_receives=q.get("max_receives"),
        delay=q.get("delay", 0.0),
        fifo=program.fifo,
    )


def judge(
    program: Program,
    q: Queue[Any],
    clock: ControlledClock,
    sched: Scheduler,
    ended: str | None,
    history: list[Entry],
    lin_cache: dict[tuple[Entry, ...], bool] | None,
) -> Failure | None:
    """The first check that fails on the end of a run (see the module docstring)."""
    if ended == "livelock":
        busy = sorted({t.name for t, _ in sched.steps[-50:]})
        return Failure("LIVELOCK", f"no end after {sched.max_steps} steps; busy: {busy}")
    for t in sched.threads:
        if t.error is not None:
            return Failure("CRASH", f"{t.name} died: {t.error!r}")
    if q.health().sweeper_failures:
        return Failure("CRASH", f"the sweeper died: {q.health().last_error!r}")
    stuck = blocked(q, clock, sched)
    if stuck is not None:
        return stuck
    try:
        q.machine.check()
        snap = q.snapshot()
    except AssertionError as e:
        return Failure("INVARIANT", f"Machine.check: {e}")
    state = to_state(snap, config_of(program), 0)
    if program.fifo:
        state = _fifo_gone(state, history)
    broken = spec.violations(state)
    if broken:
        return Failure("INVARIANT", "; ".join(broken))
    key = tuple(history)
    ok = lin_cache.get(key) if lin_cache is not None else None
    if ok is None:
        verdict = check(history, config_of(program), sweeper=True, max_steps=200_000)
        ok = isinstance(verdict, Linearizable)
        if lin_cache is not None:
            lin_cache[key] = ok
        if not ok:
            return Failure("NOT LINEARIZABLE", str(verdict))
    if not ok:
        return Failure("NOT LINEARIZABLE", "(the same history failed before)")
    return None


def _fifo_gone(state: spec.State, history: list[Entry]) -> spec.State:
    """``state`` with the group and send order of its done and cancelled messages, which a
    FIFO snapshot does not keep, taken from the history: each accepted send's group, and its
    place among the accepted sends (they commit in the order they return: no scheduling point
    lies between a send's commit and its return)."""
    sends = sorted(
        (e for e in history if e.op.name == "send" and e.ret is not None and e.op.result),
        key=lambda e: e.ret or 0,
    )
    fields: dict[object, tuple[Any, int]] = {
        e.op.args[0]: (e.op.args[3], n) for n, e in enumerate(sends)
    }
    gone = (spec.Status.DONE, spec.Status.CANCELLED)
    messages = tuple(
        replace(m, group=fields[m.id][0], sent=fields[m.id][1])
        if m.status in gone and m.id in fields
        else m
        for m in state.messages
    )
    return replace(state, messages=messages)


def blocked(q: Queue[Any], clock: ControlledClock, sched: Scheduler) -> Failure | None:
    """DEADLOCK or LOST WAKEUP, if the run ended with threads that can never go on."""
    alive = [t for t in sched.threads if not t.finished]
    waiting_for = []
    for t in alive:
        p = t.pending
        assert p is not None
        if p.kind in ("acquire", "join"):
            holder = p.lock.owner.name if p.lock is not None and p.lock.owner else p.what
            return Failure("DEADLOCK", f"{t.name} waits for {holder} at {p.where}")
        if p.kind != "wake" or p.waiter is None:
            continue
        if not p.waiter.woken:
            waiting_for.append((t, p))
    for t, p in waiting_for:
        cond = p.what
        if t.role == "sweeper":
            due = q.machine.next_due()
            if due is not None and due <= clock.time:
                return Failure(
                    "LOST WAKEUP",
                    f"the sweeper sleeps at {p.where} while a timer was due at {due} "
                    f"(now {clock.time})",
                )
            continue
        op = t.op[0] if t.op else "?"
        if cond == "not_empty" and op.startswith("receive") and q.machine.heads(1):
            head = q.machine.heads(1)[0].id
            return Failure(
                "LOST WAKEUP",
                f"{t.name} sleeps in {op} at {p.where} while {head!r} is deliverable",
            )
        if cond == "not_full" and op.startswith("send") and not q.machine.shut:
            n = len(cast(list[Any], t.op[1][0])) if t.op and op == "send_batch" else 1
            if q.machine.accepts(n) == n if op == "send_batch" else q.machine.has_room():
                return Failure(
                    "LOST WAKEUP", f"{t.name} sleeps in {op} at {p.where} while there is room"
                )
    return None


# =============================================================================================
# Search
# =============================================================================================


#: What a search found (:class:`model_tests.exploration.Result`).
Result = exploration.Result[Program, Run]


def explore(
    program: Program,
    queue_class: type[Queue[Any]],
    bound: int | None = None,
    *,
    all_points: bool = False,
    stop: bool = True,
    max_schedules: int | None = None,
) -> Result:
    """Every schedule of ``program`` with at most ``bound`` preemptions (the program's own
    bound by default), fewest preemptions first; stops at the first failure if ``stop``."""
    cache: dict[tuple[Entry, ...], bool] = {}

    def run_prefix(prefix: list[Choice]) -> Run:
        return run_once(
            program, queue_class, forced(prefix), all_points=all_points, lin_cache=cache
        )

    k_max = program.bound if bound is None else bound
    result = Result(program, queue_class.__name__)
    return exploration.search(result, run_prefix, k_max, stop=stop, max_schedules=max_schedules)


def _pct_strategy(rng: random.Random, changes: set[int]) -> Strategy:
    """One PCT schedule: random priorities (drawn as threads first appear), the highest
    enabled thread runs; at each decision point in ``changes`` the running thread drops below
    all others. An injected interrupt, where one is offered, with probability 0.2."""
    prio: dict[int, float] = {}
    step = [0]
    low = [0.0]

    def choose(options: list[Choice], costs: list[int], default: Choice) -> Choice:
        step[0] += 1
        for i, _ in options:
            prio.setdefault(i, rng.random() + 1.0)
        if step[0] in changes:
            low[0] -= 1.0
            prio[default[0]] = low[0]
        best = max(options, key=lambda o: (prio[o[0]], not o[1]))
        if (best[0], True) in options and rng.random() < 0.2:
            return (best[0], True)
        return best

    return choose


def pct(
    program: Program,
    queue_class: type[Queue[Any]],
    runs: int,
    *,
    seed: int = 0,
    depth: int = 3,
    stop: bool = True,
) -> Result:
    """``runs`` randomized schedules by PCT (Burckhardt et al. 2010): each thread gets a random
    priority, the highest enabled one runs, and at ``depth - 1`` random steps the running
    thread drops below every other. Seeded, so a run is reproducible; its failures replay."""
    rng = random.Random(seed)
    result = Result(program, queue_class.__name__, complete=False)
    level = Level(-1)
    result.levels.append(level)
    began = time.perf_counter()
    estimate = 60  # decision points of a run, for placing the change points
    for _ in range(runs):
        changes = set(rng.sample(range(1, estimate), min(depth - 1, estimate - 1)))
        choose = _pct_strategy(rng, changes)
        run = run_once(program, queue_class, choose)
        estimate = max(estimate, len(run.decisions) + 1)
        level.schedules += 1
        if run.failure is not None and result.failure is None:
            result.failure = run
            if stop:
                break
    level.seconds = time.perf_counter() - began
    return result


# =============================================================================================
# Replay strings
# =============================================================================================


def _token(c: Choice) -> str:
    return f"{c[0]}{'!' if c[1] else ''}"


def _parse(c: str) -> Choice:
    return (int(c.rstrip("!")), c.endswith("!"))


def encode(program: Program, mutant: str, choices: Sequence[Choice]) -> str:
    """The short string that :func:`decode` (and ``--replay``) turns back into the schedule:
    ``program:mutant:choices``, the choices as thread indices, ``!`` for an interrupt, runs of
    one choice as ``i*n``, separated by ``.``."""
    return exploration.encode(program.name, mutant, choices, _token)


def decode(text: str) -> tuple[str, str, list[Choice]]:
    """``(program, mutant, choices)`` from a replay string; ``ValueError`` if malformed."""
    return exploration.decode(text, _parse, "mutant")
