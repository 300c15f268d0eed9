"""A system of queues linked by dead-letter targets, and every step across two of them.

docs/contract.md section 7. A :class:`System` is the value that owns what the queues of a
dead-letter system share, so that no queue's machine ever reaches into another's:

- **the id registry** (7.2): a dead-lettered message keeps its id in its target, so the queues
  of a system share one id space: every id any of them accepted, and the one counter generated
  ids come from (``msg-N``);
- **the dead-letter move** (7.3): a release that dies in a source moves the message into the
  target in the same step (:meth:`System.dead_letter`; TLA+ ``MovedIn`` in ``Release``,
  ``spec.system.release``);
- **redrive** (7.5): the tasks of each dead-letter queue and their moves, each one step across
  two queues (:meth:`System.redrive_move`; TLA+ ``Redrive``, ``spec.system.redrive_step``).

Like the machines, it never waits, reads no clock and wakes nobody: a move returns an
:class:`impl.outcome.Effect` for the queue it moved into, which its driver applies. The one lock
here is the registry's, a leaf: the queues of a system run under their own locks (7.8), so two
of them may claim ids at once; it is taken last and held only for one check-and-add.

Locks are the drivers', taken in **creation order** (:func:`in_lock_order`: lower token first);
a target is created before its sources, so a source's releasing step holds its target's lock,
then its own, and a redrive the dead-letter queue's and its destinations' in the same order. One
order for every step that holds two locks: no deadlock (``tla/ThreadedQueueSystem.tla``).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Final

from impl.errors import DuplicateIdError, RedriveRunning
from impl.machine import Machine, Record, in_lock_order
from impl.outcome import ACTED, FIRED, Effect, Outcome
from impl.redrive import RETRY_AFTER, RedriveStatus, RedriveTask
from impl.timers import Timer

__all__ = ["System", "in_lock_order"]

#: How many ids a redrive's ``ids`` may give that are already taken before the move fails.
ID_DRAWS: Final = 100


@dataclass
class _Moving:
    """A redrive task whose moves are under way: started with ``rate=None``, or its ``tick``
    fired; ``left`` moves to go (``None``: all it can)."""

    task: RedriveTask[Any]
    tick: Timer | None
    left: int | None


class System:
    """The queues of one dead-letter system (see the module docstring). Made from the first
    target a source names (its accepted ids and its counter carry over, so nothing it handed
    out can repeat), or for a queue alone when it starts a redrive."""

    def __init__(self, first: Machine[Any], name: str) -> None:
        self._lock = threading.Lock()
        self._ids: set[str] = set(first.accepted)
        #: The counter generated ids come from (every machine of the system shares it).
        self.counter = first.counter
        #: The names of the system's queues (a name is unique within a system).
        self.names: set[str] = {name}
        # Each dead-letter queue's redrive tasks, oldest first; the one whose moves are under way.
        self._tasks: weakref.WeakKeyDictionary[Machine[Any], list[RedriveTask[Any]]] = (
            weakref.WeakKeyDictionary()
        )
        self._moving: weakref.WeakKeyDictionary[Machine[Any], _Moving] = weakref.WeakKeyDictionary()
        first.system = self

    @classmethod
    def of(cls, machine: Machine[Any], name: str) -> System:
        """``machine``'s system, made from it if it is in none."""
        return machine.system if machine.system is not None else cls(machine, name)

    def join(self, source: Machine[Any], target: Machine[Any], name: str) -> None:
        """Link the new queue ``source`` (named ``name``) to ``target``, a queue of this
        system: it shares the registry and the counter, and its releases that die move there."""
        self.names.add(name)
        self._ids.update(source.accepted)
        source.counter = self.counter
        source.system = self
        source.target = target

    # -- the id registry (contract section 7.2) -------------------------------------------------

    def taken(self, id: str) -> bool:
        """Whether some queue of the system has accepted (or claimed) ``id``."""
        return id in self._ids

    def claim(self, ids: Sequence[str | None], labels: Sequence[str]) -> list[str]:
        """Check and add, in one step: each given id must be new to the system
        (``DuplicateIdError`` naming its ``labels[i]`` otherwise, and nothing added); each
        ``None`` becomes a fresh generated id. The ids, in order, all now taken."""
        with self._lock:
            known = self._ids
            for id, label in zip(ids, labels, strict=True):
                if id is not None and id in known:
                    raise DuplicateIdError(
                        f"{label} {id!r} was already accepted by a queue of this system"
                    )
            out: list[str] = []
            for given in ids:
                id = given
                while id is None or id in known or (given is None and id in ids):
                    id = f"msg-{next(self.counter)}"
                out.append(id)
                known.add(id)
            return out

    def fresh(self) -> str:
        """A fresh generated id, claimed."""
        return self.claim([None], ["id"])[0]

    def unclaim(self, ids: Iterable[str]) -> None:
        """Give back ids :meth:`claim` took for a step that was vetoed (before its commit)."""
        with self._lock:
            self._ids.difference_update(ids)

    # -- the dead-letter move (contract section 7.3) ---------------------------------------------

    def prepare_dead_letter(
        self, source: Machine[Any], dying: Sequence[Record[Any]], now: float
    ) -> None:
        """Before releases of ``source`` commit in which ``dying`` die: the target's retention
        timers for them will be armed, so its driver is asked first (it may refuse)."""
        target = source.target
        if target is None or target.retention is None or target.before_timer is None:
            return
        kept = [target.enqueue_time_of_move(rec, now) + target.retention for rec in dying]
        target.before_timer(min(kept))

    def dead_letter(self, source: Machine[Any], rec: Record[Any], now: float) -> Effect:
        """The target's half of a release in ``source`` that dies (one step with it): the
        message joins the target's visible tail (``Machine.move_in``)."""
        target = source.target
        assert target is not None
        receivers, due = target.move_in(rec, now, weakref.ref(source))
        return Effect(target, receivers, 0, due)

    # -- redrive (contract section 7.5) ----------------------------------------------------------

    def tasks(self, dlq: Machine[Any]) -> list[RedriveTask[Any]]:
        """``dlq``'s redrive tasks, oldest first."""
        return self._tasks.get(dlq, [])

    def running(self, dlq: Machine[Any]) -> RedriveTask[Any] | None:
        """``dlq``'s running task, if any (only one runs at a time)."""
        tasks = self._tasks.get(dlq)
        task = tasks[-1] if tasks else None
        return task if task is not None and task.running else None

    @staticmethod
    def source_of(dlq: Machine[Any], id: str) -> Machine[Any] | None:
        """The machine of the queue ``id`` was dead-lettered from into ``dlq``, if it lives."""
        ref = dlq.sources.get(id)
        machine: Machine[Any] | None = ref() if isinstance(ref, weakref.ref) else None
        return machine

    def destinations(
        self, dlq: Machine[Any], target: Machine[Any] | None, ids: Iterable[str]
    ) -> list[Machine[Any]]:
        """The machines a redrive of ``ids`` out of ``dlq`` may move into: ``target``, or each
        id's source queue (those that live)."""
        if target is not None:
            return [target]
        found = {}
        for id in ids:
            source = self.source_of(dlq, id)
            if source is not None:
                found[source.token] = source
        return list(found.values())

    def start_redrive(
        self,
        dlq: Machine[Any],
        destination: object,
        target: Machine[Any] | None,
        rate: float | None,
        now: float,
        *,
        ids: Callable[[], str] | None,
        lock: AbstractContextManager[Any],
    ) -> Outcome:
        """Start a task moving ``dlq``'s visible messages out, to ``target`` (the machine of
        ``destination``) or to each message's source: ``RedriveRunning`` while one runs.
        With a ``rate`` its first tick is armed, due now; without one its moves are under way
        at once (the driver calls :meth:`redrive_move` until it answers ``None``). The caller
        holds the locks of ``dlq`` and of every queue of :meth:`destinations`. Outcome:
        ``ACTED``, the task."""
        running = self.running(dlq)
        if running is not None:
            raise RedriveRunning(
                f"redrive task {running.name} is still running on queue {dlq.name!r}: "
                "cancel it or let it complete first"
            )
        if dlq.before_timer is not None:
            dlq.before_timer(now)  # before the task exists: a refusal changes nothing
        scope = list(dlq.visible)
        queues = self.destinations(dlq, target, scope)
        task = RedriveTask(
            dlq, destination, target, rate, now, scope, ids=ids, queues=queues, lock=lock
        )
        self._tasks.setdefault(dlq, []).append(task)
        if rate is None:
            self._moving[dlq] = _Moving(task, None, None)
            return Outcome(ACTED, task, 0, 0, None, ())
        dlq.arm_tick(task.name, now)  # the move k = 0, due at once: the next sweep's
        return Outcome(ACTED, task, 0, 0, now, ())

    def ticking(self, dlq: Machine[Any]) -> bool:
        """Whether a task of ``dlq`` has moves under way (:meth:`redrive_move` has work)."""
        return dlq in self._moving

    def tick(self, dlq: Machine[Any], tick: Timer, now: float) -> None:
        """``dlq``'s sweep fired the running task's ``tick``: its moves are under way (one with
        a rate, all it can without)."""
        task = self.running(dlq)
        assert task is not None and task.name == tick.id
        self._moving[dlq] = _Moving(task, tick, None if task.rate is None else 1)

    def stop_moving(self, dlq: Machine[Any], task: RedriveTask[Any]) -> None:
        """``task`` was cancelled: none of its moves is under way any more."""
        moving = self._moving.get(dlq)
        if moving is not None and moving.task is task:
            del self._moving[dlq]

    def redrive_move(self, dlq: Machine[Any], now: float) -> Outcome | None:
        """One step of the redrive under way in ``dlq``: the scope's skips, then one move
        across two queues (or, its moves done, the task's next tick armed, a retry armed, or
        the task completed). ``None``: no move is under way. If the move is vetoed (its trace
        step refused, its destination's timer refused), the tick is put back (a task started
        without a rate retries ``RETRY_AFTER`` later) and the exception propagates."""
        moving = self._moving.get(dlq)
        if moving is None:
            return None
        task = moving.task
        scope = task.scope
        while scope and moving.left != 0:
            id = scope[0]
            rec = dlq.visible.get(id)
            dest = task.target if task.target is not None else self.source_of(dlq, id)
            if rec is None or dest is None:
                scope.popleft()
                task.skipped_count += 1
                continue
            if not dest.has_room():
                return self._end_moves(dlq, moving, now, blocked=True)
            return self._move(dlq, moving, rec, dest, now)
        return self._end_moves(dlq, moving, now, blocked=False)

    def _move(
        self,
        dlq: Machine[Any],
        moving: _Moving,
        rec: Record[Any],
        dest: Machine[Any],
        now: float,
    ) -> Outcome:
        # One move: prepare (a new id, the trace step, the destination's retention timer),
        # then commit both halves in one step.
        task = moving.task
        new_id: str | None = None
        try:
            new_id = self._new_id(dest, task.ids)
            if dlq.before_step is not None:
                dlq.before_step(("redrive", (dlq.name, rec.id), new_id, now))
            if dest.retention is not None and dest.before_timer is not None:
                dest.before_timer(now + dest.retention)
        except BaseException:
            if new_id is not None and dest.system is not None:
                dest.system.unclaim([new_id])
            self._put_back(dlq, moving, now)
            raise
        task.scope.popleft()
        senders = dlq.redrive_out(rec, weakref.ref(dest), new_id)
        receivers, due = dest.accept_moved(new_id, rec.body, getattr(rec, "group", None), now)
        task.moved_count += 1
        if moving.left is not None:
            moving.left -= 1
        return Outcome(FIRED, 1, 0, senders, None, (Effect(dest, receivers, 0, due),))

    def _end_moves(
        self, dlq: Machine[Any], moving: _Moving, now: float, *, blocked: bool
    ) -> Outcome:
        # The moves under way are done: complete the task, or arm what comes next.
        del self._moving[dlq]
        task = moving.task
        due: float | None = None
        if not task.scope:
            task.state = RedriveStatus.COMPLETED
            dlq.drop_tick(task.name)
        elif task.rate is None:
            if blocked:
                due = now + RETRY_AFTER
                dlq.arm_tick(task.name, due)
        else:
            task.ticks += 1
            due = task.started_at + task.ticks / task.rate
            dlq.arm_tick(task.name, due)
        return Outcome(FIRED, 0, 0, 0, due, ())

    def _put_back(self, dlq: Machine[Any], moving: _Moving, now: float) -> None:
        # A vetoed move: the tick fires again at the next sweep, in its place; a start without
        # a rate retries later.
        del self._moving[dlq]
        if moving.tick is not None:
            dlq.restore_tick(moving.tick)
        elif moving.task.scope and moving.task.running:
            dlq.arm_tick(moving.task.name, now + RETRY_AFTER)

    def _new_id(self, dest: Machine[Any], ids: Callable[[], str] | None) -> str:
        """A fresh id for a message redriven into ``dest``, taken in its system: drawn from
        ``ids`` until one is new, else generated. ``TypeError``/``ValueError`` if ``ids`` gives
        no string, or only taken ids (the move is then vetoed)."""
        if ids is None:
            return dest.system.fresh() if dest.system is not None else dest.fresh_id()
        for _ in range(ID_DRAWS):
            id = ids()
            if not isinstance(id, str) or not id:
                raise TypeError(f"ids must return a non-empty string, got {id!r}")
            if dest.system is not None:
                try:
                    return dest.system.claim([id], ["id"])[0]
                except DuplicateIdError:
                    continue
            if not dest.taken(id):
                return id
        raise ValueError(f"ids gave only ids already taken ({ID_DRAWS} draws)")
