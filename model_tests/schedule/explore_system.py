"""Running a :class:`~model_tests.schedule.programs_system.SystemProgram` under the controlled
scheduler, and searching its schedules with a preemption bound (as ``explore.explore``).

:func:`run_system_once` builds one scheduler and clock, a dead-letter queue ``dlq`` and its
source ``src`` on it (each with its own controlled lock, conditions and sweeper thread), runs
the setup, starts the program's threads and the clock driver, and lets a strategy choose at
every scheduling point. Unlike the one-queue runner it never narrows the choices while a
thread holds a lock: with two locks, what another thread does while one is held (take the
*other* lock) is exactly the interleaving that deadlocks. Then :func:`judge_system`:

- LIVELOCK, CRASH (a thread or a sweeper died) and DEADLOCK (a thread waits for a lock or a
  thread, for ever) as in ``explore.judge``;
- STUCK: a caller still waits at the end, un-notified (every program's receive has a message
  coming, so this is a lost wakeup or a lost message);
- INVARIANT: each queue's own ``_check``, and ``system_one_state`` and ``nothing_lost``
  (:mod:`model_tests.system_checks`) on the two queues' snapshots;
- NOT LINEARIZABLE: the run's commits replayed on ``spec.system`` do not give the results the
  calls returned. The one-queue checker (``model_tests.linearizability``, Wing & Gong over
  ``spec.transitions``) knows no move across queues, so it does not apply to a system as a
  whole; here the linearization order is the one the queues' trace sinks saw (each step is
  recorded under every lock it holds, so their common list is in commit order, and each
  commit lies between its call's start and return), and the check is that this sequential
  order, run on ``spec.system`` from the setup's start, gives every step's recorded result and
  every returned call its value (the redrive's new ids included).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import spec
from impl import Message, Queue
from model_tests import system_checks
from model_tests.exploration import Failure
from model_tests.schedule.controlled import (
    Abort,
    ControlledClock,
    LThread,
    Pending,
    Scheduler,
)
from model_tests.schedule.explore import (
    MAX_STEPS,
    Choice,
    Decision,
    Strategy,
    forced,
)
from model_tests.schedule.programs_system import SysOp, SystemProgram
from spec import system as ss

#: The queues of a system program, in creation order.
NAMES = ("dlq", "src")


@dataclass
class SystemRun:
    """One run of a system program under one schedule, and its verdict."""

    program: SystemProgram
    mutant: str
    decisions: list[Decision]
    steps: list[tuple[str, Pending]]
    commits: list[tuple[str, tuple[Any, ...]]]
    failure: Failure | None = None
    #: (thread, queue, operation, arguments, value or exception name) of each call that ended.
    returns: list[tuple[str, str, str, tuple[Any, ...], object]] = field(default_factory=list)

    @property
    def choices(self) -> list[Choice]:
        return [d.chosen for d in self.decisions]

    @property
    def preemptions(self) -> int:
        return sum(d.costs[d.options.index(d.chosen)] for d in self.decisions)


def _body(id: str) -> str:
    return f"body-{id}"


def run_system_once(
    program: SystemProgram,
    src_class: type[Queue[Any]],
    strategy: Strategy,
    *,
    dlq_class: type[Queue[Any]] = Queue,
    max_steps: int = MAX_STEPS,
) -> SystemRun:
    """Run ``program`` once (``src`` of ``src_class``, ``dlq`` of ``dlq_class``), choosing by
    ``strategy``; the checked run."""
    sched = Scheduler(max_steps=max_steps)
    clock = ControlledClock(sched)
    dlq: Queue[Any] = dlq_class(clock=clock, name="dlq", **program.dlq)
    src: Queue[Any] = src_class(clock=clock, name="src", dead_letter=dlq, **program.src)
    queues = {"dlq": dlq, "src": src}
    commits: list[tuple[str, tuple[Any, ...]]] = []

    def sink_of(name: str) -> Callable[[Any], None]:
        return lambda step: commits.append((name, tuple(step)))

    for name, q in queues.items():
        q.record_trace(sink_of(name))
    #: (thread, queue, op, args, value or exception type name), per call that ended.
    returns: list[tuple[str, str, str, tuple[Any, ...], object]] = []
    setup_got: list[Message[Any]] = []

    def do(who: str, t: LThread | None, op: SysOp, own: list[Message[Any]]) -> None:
        qname, name, *args = op
        q = queues[qname]
        if t is not None:
            sched.point(t, Pending("call", f"{qname}.{name}{tuple(args)!r}"))
            t.op = (name, tuple(args))
        try:
            if name == "send":
                value: object = q.send(_body(args[0]), id=args[0])
            elif name == "receive":
                got = q.receive()
                own.append(got)
                value = got
            elif name in ("retry", "delete"):
                ref = args[0]
                pool = setup_got if isinstance(ref, str) else own
                i = int(ref[1:]) if isinstance(ref, str) else ref
                if i >= len(pool):
                    return
                value = getattr(q, name)(pool[i].receipt)
            elif name == "start_redrive":
                task = q.start_redrive()
                value = (task.to_move, task.moved, task.skipped)
            else:
                raise ValueError(f"unknown operation {op!r}")
        except Abort:
            raise
        except Exception as e:
            returns.append((who, qname, name, tuple(args), type(e).__name__))
        else:
            returns.append((who, qname, name, tuple(args), value))
        finally:
            if t is not None:
                t.op = None

    for op in program.setup:
        do("setup", None, op, setup_got)
    setup_commits = len(commits)

    def body(name: str, ops: tuple[SysOp, ...]) -> Callable[[], None]:
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
                clock.advance(dt)
                commits.append(("clock", ("advance", (dt,), None, clock.time)))

        sched.spawn("clock", "clock", driver)

    decisions: list[Decision] = []

    def choose(options: list[LThread], current: LThread | None) -> tuple[LThread, bool]:
        alts: list[Choice] = [(t.index, False) for t in options]
        preemptible = current is not None and current.pending is not None
        free = not preemptible or (
            current is not None
            and current.pending is not None
            and current.pending.kind in ("call", "advance")
        )
        costs = [0 if free or t is current else 1 for t in options]
        default: Choice = (current.index, False) if current is not None else alts[0]
        if len(alts) == 1:
            return options[0], False
        chosen = strategy(alts, costs, default)
        decisions.append(Decision(tuple(alts), tuple(costs), chosen))
        return sched.threads[chosen[0]], False

    try:
        ended = sched.run(choose)
        failure = judge_system(program, queues, sched, ended, commits[setup_commits:], returns)
        steps = [(t.name, p) for t, p in sched.steps]
    finally:
        _teardown(sched, queues)
    return SystemRun(
        program, src_class.__name__, decisions, steps, commits[setup_commits:], failure, returns
    )


def _teardown(sched: Scheduler, queues: dict[str, Queue[Any]]) -> None:
    """End every thread: a deadlocked run's threads by an Abort at their point, the others as
    ``Scheduler.teardown`` does."""

    def stop() -> None:
        for q in queues.values():
            link = getattr(q, "_link", None)
            if link is not None:
                link.stopped = True

    if any(
        not t.finished and t.pending is not None and t.pending.kind in ("acquire", "join")
        for t in sched.threads
    ):
        sched.tearing_down = sched.killing = True
        for _ in range(len(sched.threads) * 4):
            alive = [t for t in sched.threads if not t.finished]
            if not alive:
                break
            sched.grant(alive[0])
        sched.closed = True
    else:
        sched.teardown(stop)
    for q in queues.values():
        q.close()


def judge_system(
    program: SystemProgram,
    queues: dict[str, Queue[Any]],
    sched: Scheduler,
    ended: str | None,
    commits: list[tuple[str, tuple[Any, ...]]],
    returns: list[tuple[str, str, str, tuple[Any, ...], object]],
) -> Failure | None:
    """The first check that fails on the end of a run (see the module docstring)."""
    if ended == "livelock":
        return Failure("LIVELOCK", f"no end after {sched.max_steps} steps")
    for t in sched.threads:
        if t.error is not None:
            return Failure("CRASH", f"{t.name} died: {t.error!r}")
    for t in sched.threads:
        p = t.pending
        if t.finished or p is None:
            continue
        if p.kind in ("acquire", "join"):
            holder = p.lock.owner.name if p.lock is not None and p.lock.owner else p.what
            return Failure("DEADLOCK", f"{t.name} waits for {holder} at {p.where}")
    for name, q in queues.items():
        if q.health().sweeper_failures:
            return Failure("CRASH", f"{name}'s sweeper died: {q.health().last_error!r}")
    for t in sched.threads:
        p = t.pending
        waiting = p is not None and p.kind == "wake" and p.waiter is not None
        if not t.finished and t.role == "caller" and waiting:
            assert p is not None and p.waiter is not None
            if not p.waiter.woken:
                return Failure("STUCK", f"{t.name} still waits in {t.op} at {p.where}")
    try:
        for q in queues.values():
            q.machine.check()
    except AssertionError as e:
        return Failure("INVARIANT", f"Machine.check: {e}")
    ordered = [queues[n] for n in NAMES]
    accepted = [args[0] for _, _, op, args, v in returns if op == "send" and v == args[0]]
    for reason in (
        system_checks.system_one_state(ordered),
        system_checks.nothing_lost(ordered, accepted),
    ):
        if reason is not None:
            return Failure("INVARIANT", reason)
    reason = replay(program, commits, returns)
    if reason is not None:
        return Failure("NOT LINEARIZABLE", reason)
    return None


def _initial(program: SystemProgram) -> ss.System:
    def config(kw: dict[str, Any]) -> spec.Config:
        return spec.Config(
            capacity=kw.get("capacity"),
            max_receives=kw.get("max_receives"),
            retention=kw.get("retention"),
        )

    return ss.build(("dlq", config(program.dlq)), ("src", config(program.src), "dlq"))


def replay(
    program: SystemProgram,
    commits: list[tuple[str, tuple[Any, ...]]],
    returns: list[tuple[str, str, str, tuple[Any, ...], object]],
) -> str | None:
    """The setup, then the run's commits, in their order, on ``spec.system``: ``None`` if each
    gives its recorded result and every call returned what its commit gave, else why not."""
    system = _initial(program)
    vts = {
        "dlq": program.dlq.get("visibility_timeout", 30.0),
        "src": program.src.get("visibility_timeout", 30.0),
    }
    index = {n: i for i, n in enumerate(NAMES)}
    setup = [r for r in returns if r[0] == "setup"]
    # The setup ran alone: its own commits are replayed from its calls.
    for _, qname, op, args, value in setup:
        system, got = _apply_call(system, qname, op, args, value, vts, index)
        if got is not None:
            return f"setup: {got}"
    for qname, (action, args, result, now) in commits:
        if qname == "clock":
            continue
        system, why = _apply_step(system, qname, action, args, result, now, vts, index)
        if why is not None:
            return f"{qname}: {action}{args!r} -> {result!r}: {why}"
    for who, qname, op, _, value in returns:
        if who != "setup" and op == "start_redrive" and isinstance(value, tuple):
            tasks = system.redrive_tasks(qname)
            if not tasks and value == (0, 0, 0):
                continue  # an empty scope: a task that moved nothing, no step to replay
            if not tasks or (tasks[0].to_move, tasks[0].moved, tasks[0].skipped) != value:
                return f"{who}: start_redrive returned {value}, the spec's task is {tasks[:1]}"
    return None


def _apply_call(
    system: ss.System,
    qname: str,
    op: str,
    args: tuple[Any, ...],
    value: object,
    vts: dict[str, Any],
    index: dict[str, int],
) -> tuple[ss.System, str | None]:
    """A setup call on the spec (the clock is at 0 then)."""
    if op == "send":
        system, ok = ss.send(system, qname, args[0], _body(args[0]), None, 0.0)
        return system, None if ok is True else f"send {args[0]!r} refused"
    if op == "receive":
        system, d = ss.receive(system, qname, 0.0, vts[qname])
        got = getattr(value, "id", None)
        return system, None if d is not None and d.id == got else f"receive gave {d}"
    if op in ("retry", "delete"):
        # The setup's own deliveries, in order: the receipt is the latest delivery of an id.
        s = system.state(qname)
        ids = [m.id for m in s.messages if m.status is spec.Status.IN_FLIGHT]
        for id in ids:
            msg = s.get(id)
            assert msg is not None
            receipt = spec.Receipt(index[qname], id, msg.attempt)
            if op == "retry":
                system, ok = ss.retry(system, qname, receipt, 0.0)
            else:
                system, ok = ss.delete(system, qname, receipt)
            return system, None if ok == value else f"{op} gave {ok}"
    return system, f"unknown setup call {op}"


def _apply_step(
    system: ss.System,
    qname: str,
    action: str,
    args: tuple[Any, ...],
    result: object,
    now: float,
    vts: dict[str, Any],
    index: dict[str, int],
) -> tuple[ss.System, str | None]:
    """One committed step on the spec, and whether it gave the recorded result."""
    if action == "send":
        system, ok = ss.send(system, qname, args[0], _body(args[0]), None, now)
        return system, None if ok is True else f"the spec gives {ok!r}"
    if action == "receive":
        system, d = ss.receive(system, qname, now, args[0])
        got = None if d is None else (d.id, d.attempt)
        want = result[:2] if isinstance(result, tuple) else result
        return system, None if got == want else f"the spec delivers {got}"
    if action in ("retry", "delete"):
        receipt = spec.Receipt(index[qname], args[0], args[1])
        if action == "retry":
            system, ok = ss.retry(system, qname, receipt, now)
        else:
            system, ok = ss.delete(system, qname, receipt)
        return system, None if ok == result else f"the spec gives {ok!r}"
    if action == "expire":
        m = system.state(qname).get(str(result))
        if m is None or m.status is not spec.Status.IN_FLIGHT or (m.deadline or now + 1) > now:
            return system, f"the spec has no due deadline of {result!r} ({m})"
        return ss.release(system, qname, str(result), now), None
    if action == "age_out":
        return ss.age_out(system, qname, str(result)), None
    if action == "redrive":
        dlq, id = args
        if not system.redrive_tasks(dlq):
            # The program's one start_redrive (rate=None): its moves are this step and the
            # ones that follow it at once (it holds both locks for all of them).
            system, _ = ss.start_redrive(system, dlq, now)
        hit = system.moved_to(dlq, id)
        return system, None if hit is not None and hit[1] == result else f"the spec: {hit}"
    return system, f"no replay for {action!r}"


# =============================================================================================
# Search
# =============================================================================================


@dataclass
class SystemResult:
    """What a search found: schedules run, seconds, and the first failing run, if any."""

    program: SystemProgram
    mutant: str
    bound: int
    schedules: int = 0
    seconds: float = 0.0
    failure: SystemRun | None = None
    runs: list[SystemRun] = field(default_factory=list)


def explore_system(
    program: SystemProgram,
    src_class: type[Queue[Any]],
    bound: int | None = None,
    *,
    stop: bool = True,
) -> SystemResult:
    """Every schedule of ``program`` with at most ``bound`` preemptions (the program's own by
    default), fewest preemptions first (iterative bounding, as ``explore.explore``)."""
    k_max = program.bound if bound is None else bound
    result = SystemResult(program, src_class.__name__, k_max)
    began = time.perf_counter()
    frontier: list[list[Choice]] = [[]]
    for k in range(k_max + 1):
        stack, frontier = frontier, []
        while stack:
            prefix = stack.pop()
            run = run_system_once(program, src_class, forced(prefix))
            result.schedules += 1
            if run.failure is not None and result.failure is None:
                result.failure = run
                if stop:
                    result.seconds = time.perf_counter() - began
                    return result
            spent = 0
            for i, d in enumerate(run.decisions):
                if i >= len(prefix):
                    for alt, cost in zip(d.options, d.costs, strict=True):
                        if alt == d.chosen:
                            continue
                        total = spent + cost
                        branch = [*run.choices[:i], alt]
                        if total <= k:
                            stack.append(branch)
                        elif total == k + 1:
                            frontier.append(branch)
                spent += d.costs[d.options.index(d.chosen)]
        if not frontier:
            break
    result.seconds = time.perf_counter() - began
    return result
