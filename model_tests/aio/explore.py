"""Running an asyncio program under one order of the event loop, and searching the orders.

The event-loop backend of the one exploration engine (:mod:`model_tests.exploration`: the
decisions, the search, the replay strings), whose thread backend is
``model_tests/schedule/explore.py``. :func:`run_once` builds a fresh
:class:`impl.FakeClock`, a :class:`~model_tests.aio.loop.DeterministicLoop` on it and the queue
(``impl.AsyncQueue`` or a mutant), runs the program's setup to its end, creates one task per
program task, and then lets a *strategy* pick every step. A step is one of:

- ``run k``: run the ready callback at position ``k`` of the loop's ready queue (a task's step
  to its next ``await``, or a timer's callback that came due): position 0 is what the real loop
  would run next (it is FIFO), any other position is a *preemption*;
- ``cancel i``: ``Task.cancel()`` on task ``i``, offered while the task is suspended inside an
  operation (also when what it waits for has already completed: the window just after a
  wakeup), at most ``Program.cancels`` times per schedule;
- ``advance``: the clock's next step (``Program.clock``), which runs the queue's timer at once
  (``FakeClock.call_at``) and makes the loop's due timers (``asyncio.timeout``) ready;
- ``end``: when the loop is idle and the clock script is done, stop (instead of a cancel).

Checks, after every step (the first failure ends the run):

- CRASH: an exception escaped a loop callback (``loop.errors``) or a task died of one that is
  no queue result;
- ``OneState``: ``Machine.check`` of the queue's machine, and every invariant of
  ``spec/invariants.py`` on the snapshot projected to a spec state (and the step halves between
  two snapshots);
- ``NothingLost``: every id whose send returned is in the queue, in one state
  (``model_tests.system_checks.nothing_lost``);
- ``HeldDeliveries``: every in-flight message's current delivery ``(id, attempt)`` was returned
  to a task (the result of a completed receive, or of the setup's), or is in transit to one:
  the result of the future a live task waits on, its wakeup pending;
- ``NoSleepingWaiter``, whenever the loop is idle (nothing ready): no task waits in a receive
  while a message is deliverable, and none in a send while the queue has room for it (not
  shut down); a task still waiting then would wait for a timer, late, or for ever;
- LIVELOCK: more than ``max_steps`` steps;

and at the end NOT LINEARIZABLE: ``model_tests.linearizability.check(..., sweeper=True)`` on
the history of every call and return (the clock's ``advance`` steps included; a cancelled
call, which by the contract changed nothing, is left out, so a cancelled call that did change
something shows as a history with no sequential explanation).

A schedule is the list of choices made at the *decision points* (where more than one step was
possible). :func:`explore` enumerates every schedule with at most ``k`` preemptions, for k = 0,
1, ..., as the threaded explorer does (each schedule run once, those with one preemption more
started from the points found at the level below), so the first failure has the fewest
preemptions; with ``minimal`` it finishes that level and returns its smallest failing schedule
(fewest cancellations, then fewest steps). A failing schedule replays from its string
(:func:`encode`, :func:`decode`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import spec
from impl import Entry as BatchEntry
from impl import FakeClock, Message
from impl.outcome import Outcome
from model_tests import exploration
from model_tests.aio.loop import DeterministicLoop, describe, started, task_of, where
from model_tests.aio.programs import Op, Program
from model_tests.exploration import Failure
from model_tests.linearizability import Call, Entry, Linearizable, QueueAdapter, check
from model_tests.projection import to_state
from model_tests.system_checks import nothing_lost

#: The steps one schedule may take before it is reported as a livelock.
MAX_STEPS: Final = 500

#: The task name of the program's setup and of the clock, in the history and the events.
SETUP: Final = "setup"
CLOCK: Final = "clock"

#: One choice: ``("r", k)`` run ready callback k, ``("c", i)`` cancel task i, ``("a", 0)``
#: advance the clock, ``("e", 0)`` end the run.
Choice = tuple[str, int]

RUN: Final = "r"
CANCEL: Final = "c"
ADVANCE: Final = "a"
END: Final = "e"


#: A decision point of a run of this backend (:class:`model_tests.exploration.Decision`).
Decision = exploration.Decision[Choice]


@dataclass(frozen=True)
class Step:
    """One step of a run, as printed: who, what, and the ``file:line`` it resumed at."""

    actor: str
    what: str
    where: str = ""


@dataclass(frozen=True)
class Event:
    """What a task did inside a step: ``call``, ``return``, ``raise``, ``cancelled``,
    ``step`` (a transition, from the queue's trace sink) or ``tick``."""

    task: str
    kind: str
    detail: tuple[object, ...] = ()

    def __str__(self) -> str:
        return f"{self.task}: {self.kind} {self.detail!r}"


class Run(exploration.Run[Program, Choice, Step, Event, Entry]):
    """One run of a program under one schedule, and its verdict."""

    @property
    def cancels(self) -> int:
        return sum(1 for d in self.decisions if d.chosen[0] == CANCEL)


# =============================================================================================
# Strategies
# =============================================================================================

#: Picks a choice from the options (with their costs), given the default (no preemption).
Strategy = exploration.Strategy[Choice]


def forced(prefix: Sequence[Choice]) -> Strategy:
    """Follow ``prefix`` at the first decision points, then the default (no preemption)."""
    return exploration.forced(prefix, _token)


# =============================================================================================
# One run
# =============================================================================================


def queue_classes() -> dict[str, type[Any]]:
    """Every queue the explorer can run, by name: the real ones and the two mutants."""
    import impl
    from model_tests.aio.mutants import MUTANTS

    if not hasattr(impl, "AsyncQueue"):
        raise RuntimeError("impl has no AsyncQueue: the asyncio driver is not in this checkout")
    real = {name: getattr(impl, name) for name in ("AsyncQueue", "AsyncFifoQueue")}
    return {**real, **MUTANTS}


@dataclass(eq=False)
class _Task:
    """What the explorer knows of one program task."""

    index: int
    name: str
    task: asyncio.Task[None] | None = None
    #: The operation it is in: (name, args), or ``None`` between operations.
    op: tuple[str, tuple[Any, ...]] | None = None


def _resolve(ref: object, own: list[Message[Any]], setup: list[Message[Any]]) -> Any:
    if isinstance(ref, str) and ref.startswith("s"):
        i = int(ref[1:])
        return setup[i].receipt if i < len(setup) else None
    assert isinstance(ref, int)
    return own[ref].receipt if ref < len(own) else None


def _perform(
    q: Any, op: Op, own: list[Message[Any]], setup: list[Message[Any]]
) -> tuple[str, tuple[Any, ...], dict[str, Any], Callable[..., Any], float | None] | None:
    """The call ``op`` makes: (name, args, kwargs, method, within), or ``None`` to skip it."""
    kw: dict[str, Any] = dict(op[-1]) if op and isinstance(op[-1], dict) else {}
    within = kw.pop("within", None)
    a = op[1:-1] if op and isinstance(op[-1], dict) else op[1:]
    name = op[0]
    if name == "send":
        kw["id"] = a[0]
        return name, (f"body-{a[0]}",), kw, q.send, within
    if name == "send_batch":
        entries = [BatchEntry(f"body-{i}", id=i) for i in a[0]]
        return name, (entries,), kw, q.send_batch, within
    if name in ("receive", "purge"):
        return name, (), kw, getattr(q, name), within
    if name == "receive_batch":
        return name, (a[0],), kw, q.receive_batch, within
    if name == "cancel":
        return name, (a[0],), kw, q.cancel, within
    if name in ("delete", "retry", "change_visibility"):
        receipt = _resolve(a[0], own, setup)
        if receipt is None:
            return None
        return name, (receipt, *a[1:]), kw, getattr(q, name), within
    raise ValueError(f"unknown operation {op!r}")


def _brief(v: object) -> str:
    if isinstance(v, Message):
        return f"<{v.id}#{v.attempt}>"
    if isinstance(v, list):
        return "[" + ", ".join(_brief(x) for x in v) + "]"
    return repr(v) if not isinstance(v, BatchEntry) else f"Entry({v.id!r})"


def _messages(value: object) -> list[Message[Any]]:
    if isinstance(value, Outcome):  # a waker's hand-over (a mutant's: never the driver's)
        value = value.result
    if isinstance(value, Message):
        return [value]
    if isinstance(value, list | tuple):
        return [m for m in value if isinstance(m, Message)]
    return []


class _Recorder:
    """The history of one run: calls and returns stamped from one counter (as
    ``linearizability.HistoryRecorder``, whose ``call`` cannot span an ``await``)."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.dropped: set[int] = set()
        self._next = 0

    def start(self, who: str, name: str, args: tuple[Any, ...], kw: dict[str, Any]) -> int:
        self._next += 1
        self.calls.append(Call(who, name, args, dict(kw), self._next))
        return len(self.calls) - 1

    def finish(self, slot: int, value: object, error: BaseException | None) -> None:
        self._next += 1
        c = self.calls[slot]
        self.calls[slot] = Call(
            c.thread, c.name, c.args, c.kwargs, c.call, self._next, value, error
        )

    def history(self, adapter: QueueAdapter) -> list[Entry]:
        out = []
        for i, c in enumerate(self.calls):
            if i in self.dropped:
                continue
            if c.ret is None:
                c = Call(c.thread, c.name, c.args, c.kwargs, c.call)
            out.append(Entry(c.thread, adapter(c), c.call, c.ret))
        return out


def config_of(program: Program) -> spec.Config:
    q = program.queue
    return spec.Config(
        capacity=q.get("capacity"),
        max_receives=q.get("max_receives"),
        delay=q.get("delay", 0.0),
        fifo=program.fifo,
    )


def run_once(
    program: Program,
    queue_class: type[Any],
    strategy: Strategy,
    *,
    max_steps: int = MAX_STEPS,
    lin_cache: dict[tuple[Entry, ...], bool] | None = None,
) -> Run:
    """Run ``program`` on ``queue_class`` once, choosing by ``strategy``; the checked run."""
    clock = FakeClock()
    loop = DeterministicLoop(clock)
    q = queue_class(clock=clock, **program.queue)
    rec = _Recorder()
    events: list[Event] = []
    steps: list[Step] = []
    decisions: list[Decision] = []
    accepted: list[str] = []
    held: set[tuple[str, int]] = set()
    setup_got: list[Message[Any]] = []
    crashes: list[str] = []
    now_acting = [SETUP]

    def sink(step: tuple[str, tuple[object, ...], object, float]) -> None:
        events.append(Event(now_acting[0], "step", step))

    if hasattr(q, "record_trace"):
        q.record_trace(sink)

    async def do(who: str, info: _Task | None, op: Op, own: list[Message[Any]]) -> None:
        made = _perform(q, op, own, setup_got)
        if made is None:
            return
        name, args, kw, fn, within = made
        if info is not None:
            info.op = (name, args)
        events.append(Event(who, "call", (name, tuple(_brief(x) for x in args))))
        slot = rec.start(who, name, args, kw)
        try:
            if within is not None:
                async with asyncio.timeout(within):
                    value = fn(*args, **kw)
                    if asyncio.iscoroutine(value):
                        value = await value
            else:
                value = fn(*args, **kw)
                if asyncio.iscoroutine(value):
                    value = await value
        except (asyncio.CancelledError, TimeoutError) as e:
            # Cancelled (by the explorer, or by asyncio.timeout, which turns it into a
            # TimeoutError): the contract says it changed nothing, so it leaves the history.
            rec.finish(slot, None, e)
            rec.dropped.add(slot)
            events.append(Event(who, "cancelled", (name, type(e).__name__)))
            if info is not None:
                info.op = None
            raise
        except Exception as e:
            rec.finish(slot, None, e)
            events.append(Event(who, "raise", (name, type(e).__name__)))
        else:
            rec.finish(slot, value, None)
            events.append(Event(who, "return", (name, _brief(value))))
            got = _messages(value)
            own.extend(got)
            held.update((m.id, m.attempt) for m in got)
            if name == "send" and isinstance(value, str):
                accepted.append(value)
            elif name == "send_batch" and isinstance(value, list):
                accepted.extend(v for v in value if isinstance(v, str))
        if info is not None:
            info.op = None

    async def setup() -> None:
        for op in program.setup:
            await do(SETUP, None, op, setup_got)

    loop.run_until_complete(setup())

    tasks = [_Task(i, name) for i, (name, _) in enumerate(program.tasks)]
    by_task: dict[asyncio.Task[Any], _Task] = {}

    def body(info: _Task, ops: tuple[Op, ...]) -> Callable[[], Any]:
        async def run() -> None:
            own: list[Message[Any]] = []
            try:
                for op in ops:
                    await do(info.name, info, op, own)
            except (asyncio.CancelledError, TimeoutError):
                return  # the task ends where it was cancelled
            except BaseException as e:
                crashes.append(f"{info.name} died: {e!r}")
                raise

        return run

    with loop.running():
        for info, (_, ops) in zip(tasks, program.tasks, strict=True):
            info.task = loop.create_task(body(info, ops)(), name=info.name)
            by_task[info.task] = info

    clock_left = list(program.clock)
    cancels_left = [program.cancels]
    adapter = QueueAdapter(visibility_timeout=program.visibility_timeout)
    config = config_of(program)
    previous: list[spec.State | None] = [None]
    failure: Failure | None = None

    def cancellable() -> list[_Task]:
        if cancels_left[0] <= 0:
            return []
        return [
            t
            for t in tasks
            if t.task is not None
            and t.op is not None
            and not t.task.done()
            and started(t.task)
            and t.task.cancelling() == 0
        ]

    try:
        while True:
            failure = _check_step(
                q, loop, crashes, accepted, held, tasks, config, previous, program
            )
            if failure is not None:
                break
            ready = loop.ready()
            if not ready:
                failure = _no_sleeping_waiter(q, tasks)
                if failure is not None:
                    break
            alts: list[Choice] = [(RUN, k) for k in range(len(ready))]
            if clock_left:
                alts.append((ADVANCE, 0))
            alts.extend((CANCEL, t.index) for t in cancellable())
            if not ready and not clock_left and alts:
                alts.insert(0, (END, 0))  # idle: ending is the default, a cancel the choice
            if not alts:
                break
            if len(steps) >= max_steps:
                busy = sorted({s.actor for s in steps[-50:]})
                failure = Failure("LIVELOCK", f"no end after {max_steps} steps; busy: {busy}")
                break
            costs = [1 if c[0] == RUN and c[1] > 0 else 0 for c in alts]
            default = alts[0]
            if len(alts) == 1:
                chosen = default
            else:
                chosen = strategy(alts, costs, default)
                decisions.append(Decision(tuple(alts), tuple(costs), chosen))
            kind, arg = chosen
            if kind == END:
                break
            if kind == ADVANCE:
                dt = clock_left.pop(0)
                now_acting[0] = CLOCK
                slot = rec.start(CLOCK, "advance", (dt,), {})
                loop.advance(dt)
                rec.finish(slot, None, None)
                events.append(Event(CLOCK, "tick", (dt, clock.now())))
                steps.append(Step(CLOCK, f"advance({dt}) -> now {clock.now()}"))
            elif kind == CANCEL:
                cancels_left[0] -= 1
                t = tasks[arg]
                assert t.task is not None
                steps.append(Step("explorer", f"cancel {t.name}", where(t.task)))
                loop.cancel(t.task)
            else:
                handle = ready[arg]
                task = task_of(handle)
                if task is not None and task in by_task:
                    actor = by_task[task].name
                    what = "resume" if started(task) else "start"
                    if task.cancelling() and what == "resume":
                        what = "resume (cancelled)"
                    at = where(task)
                else:
                    actor, what, at = "loop", describe(handle), ""
                now_acting[0] = actor
                steps.append(Step(actor, what, at))
                loop.run_ready(arg)
        history = rec.history(adapter)
        if failure is None:
            failure = _linearizable(history, config, lin_cache)
    finally:
        _teardown(loop, tasks, q)
    return Run(program, queue_class.__name__, decisions, steps, events, history, failure)


def _teardown(loop: DeterministicLoop, tasks: list[_Task], q: Any) -> None:
    """End every task (cancelled where it waits), close the queue and the loop."""
    for t in tasks:
        if t.task is not None and not t.task.done():
            loop.cancel(t.task)
    try:
        loop.run_until_idle(max_steps=1_000)
    finally:
        with loop.running():
            q.close()
        loop.run_until_idle(max_steps=1_000)
        loop.close()


# =============================================================================================
# The checks
# =============================================================================================


def _check_step(
    q: Any,
    loop: DeterministicLoop,
    crashes: list[str],
    accepted: list[str],
    held: set[tuple[str, int]],
    tasks: list[_Task],
    config: spec.Config,
    previous: list[spec.State | None],
    program: Program,
) -> Failure | None:
    """The checks of every step (module docstring), on the state the step left."""
    if loop.errors:
        ctx = loop.errors[0]
        return Failure("CRASH", f"{ctx.get('message')}: {ctx.get('exception')!r}")
    if crashes:
        return Failure("CRASH", crashes[0])
    try:
        q.machine.check()
        snap = q.snapshot()
    except AssertionError as e:
        return Failure("OneState", f"Machine.check: {e}")
    state = to_state(snap, config, 0, previous[0])
    broken = spec.violations(state)
    if previous[0] is not None:
        broken += spec.step_violations(previous[0], state)
    previous[0] = state
    if broken:
        return Failure("OneState", "; ".join(broken))
    lost = nothing_lost([q], accepted)
    if lost is not None:
        return Failure("NothingLost", lost)
    transit = _in_transit(tasks)
    for m in snap.in_flight:
        if (m.id, m.attempt) not in held and (m.id, m.attempt) not in transit:
            return Failure(
                "HeldDeliveries",
                f"{m.id!r} is in flight (attempt {m.attempt}) and no task holds that delivery "
                "or is about to get it",
            )
    return None


def _in_transit(tasks: list[_Task]) -> set[tuple[str, int]]:
    """The deliveries on their way to a live task: the result of the future it waits on,
    already set, its wakeup not yet run."""
    out: set[tuple[str, int]] = set()
    for t in tasks:
        task = t.task
        if task is None or task.done():
            continue
        fut = getattr(task, "_fut_waiter", None)
        if (
            isinstance(fut, asyncio.Future)
            and fut.done()
            and not fut.cancelled()
            and fut.exception() is None
        ):
            out.update((m.id, m.attempt) for m in _messages(fut.result()))
    return out


def _no_sleeping_waiter(q: Any, tasks: list[_Task]) -> Failure | None:
    """``NoSleepingWaiter`` on an idle loop: see the module docstring."""
    core = q.machine
    for t in tasks:
        if t.task is None or t.task.done() or t.op is None:
            continue
        name, args = t.op
        at = where(t.task)
        if name.startswith("receive") and core.heads(1):
            head = core.heads(1)[0].id
            return Failure(
                "NoSleepingWaiter",
                f"{t.name} sleeps in {name} at {at} while {head!r} is deliverable",
            )
        if name.startswith("send") and not core.shut:
            n = len(args[0]) if name == "send_batch" else 1
            room = core.accepts(n) == n if name == "send_batch" else core.has_room()
            if room:
                return Failure(
                    "NoSleepingWaiter", f"{t.name} sleeps in {name} at {at} while there is room"
                )
    return None


def _linearizable(
    history: list[Entry], config: spec.Config, cache: dict[tuple[Entry, ...], bool] | None
) -> Failure | None:
    key = tuple(history)
    ok = cache.get(key) if cache is not None else None
    if ok is None:
        verdict = check(history, config, sweeper=True, max_steps=200_000)
        ok = isinstance(verdict, Linearizable)
        if cache is not None:
            cache[key] = ok
        if not ok:
            return Failure("NOT LINEARIZABLE", str(verdict))
    if not ok:
        return Failure("NOT LINEARIZABLE", "(the same history failed before)")
    return None


# =============================================================================================
# Search
# =============================================================================================


#: What a search found (:class:`model_tests.exploration.Result`).
Result = exploration.Result[Program, Run]


def _smaller(a: Run, b: Run) -> bool:
    """Whether failing run ``a`` is a smaller counterexample than ``b``."""
    return (a.preemptions, a.cancels, len(a.steps)) < (b.preemptions, b.cancels, len(b.steps))


def explore(
    program: Program,
    queue_class: type[Any],
    bound: int | None = None,
    *,
    stop: bool = True,
    minimal: bool = True,
    max_schedules: int | None = None,
) -> Result:
    """Every schedule of ``program`` with at most ``bound`` preemptions (the program's own
    bound by default), fewest preemptions first. With ``stop``, stop at the level of the first
    failure: at once, or (``minimal``) after that level, with its smallest failing schedule."""
    cache: dict[tuple[Entry, ...], bool] = {}

    def run_prefix(prefix: list[Choice]) -> Run:
        return run_once(program, queue_class, forced(prefix), lin_cache=cache)

    k_max = program.bound if bound is None else bound
    result = Result(program, queue_class.__name__)
    return exploration.search(
        result,
        run_prefix,
        k_max,
        stop=stop,
        minimal=minimal,
        smaller=_smaller,
        max_schedules=max_schedules,
    )


# =============================================================================================
# Replay strings
# =============================================================================================


def _token(c: Choice) -> str:
    kind, arg = c
    if kind == RUN:
        return str(arg)
    if kind == CANCEL:
        return f"c{arg}"
    return kind


def _parse(c: str) -> Choice:
    if c in (ADVANCE, END):
        return (c, 0)
    if c.startswith(CANCEL):
        return (CANCEL, int(c[1:]))
    return (RUN, int(c))


def encode(program: Program, mutant: str, choices: Sequence[Choice]) -> str:
    """The short string :func:`decode` (and ``--replay``) turns back into the schedule:
    ``program:queue:choices``: ``k`` runs the ready callback at position k, ``cI`` cancels
    task I, ``a`` advances the clock, ``e`` ends; runs of one choice as ``k*n``, separated by
    ``.``."""
    return exploration.encode(program.name, mutant, choices, _token)


def decode(text: str) -> tuple[str, str, list[Choice]]:
    """``(program, queue, choices)`` from a replay string; ``ValueError`` if malformed."""
    return exploration.decode(text, _parse, "queue")
