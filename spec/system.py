"""A system of named queues linked by dead-letter targets, as one value, and its transitions.

The pure twin of ``tla/QueueSystem.tla`` and of ``impl``'s queues with ``dead_letter=``,
``retention=`` and ``start_redrive`` (docs/contract.md section 7).
A :class:`System` is an immutable, hashable value: its queues in creation order, each a
:class:`spec.state.State` with its :class:`spec.state.Config` and its dead-letter target's
name; the system's id registry and the counter of generated ids; where each dead-lettered
message came from; where each redriven message went; and the redrive tasks. Every transition
is ``(system, queue name, args) -> (system, result)``, named as in every layer, and a step
that changes two queues (a dead-letter move, a redrive move) is ONE function returning ONE new
value: no state exists in which the message is in neither queue or in both.

The rules, as coded here:

- **Build** (:func:`add_queue`): a queue's ``dead_letter`` is a queue added before it (so no
  cycle), of the same kind, unbounded, and the queue needs ``max_receives``; otherwise a
  ``ValueError`` naming ``dead_letter``. Names have SQS's form and are unique in the system
  (``ValueError`` naming ``name``). A queue's receipts carry its creation index
  (``State.queue``), so a receipt of another queue is never live.
- **Ids** (rule 2): one id space. A send whose id any queue has accepted is rejected
  (``False``, the same system: the spec's rejection, ``DuplicateIdError`` in impl). Generated
  ids (a redrive's new ids) are ``msg-N``: the smallest ``N`` above :attr:`System.counter`
  whose id no queue has accepted (impl skips taken ids the same way).
- **Enqueue time**: every send of a system stamps ``Msg.enqueued_at = now`` (TLA+'s
  ``enqueuedAt``), so a move can carry it.
- **Move** (rule 3): a release that dead-letters in a queue with a target makes the message
  ``DEAD`` there and, in the same step, :func:`spec.transitions.move_in` puts it at the
  target's visible tail: same id, body, group, attempt kept (``base``), enqueue time kept on a
  standard target and ``now`` on a FIFO one, no dedup; :meth:`System.source_of` records where
  it came from. Several releases in one step (a batch, a sweep) move in the order they die.
- **Retention** (rule 4): per queue, in :mod:`spec.transitions` (``State.order``).
- **Redrive** (rule 5): :func:`redrive_step` is the one atomic move (``MOVED`` in the
  dead-letter queue, a new message in the destination: fresh id, attempt 0, enqueued now, no
  source, no dedup). :func:`start_redrive` makes a :class:`RedriveTask` whose scope is the
  visible ids, oldest first. ``rate=None``: the whole scope moves inside ``start_redrive``;
  ``rate=r``: the task's tick, a timer ``("tick", task name)`` in the dead-letter queue's one
  timer order, is started at ``now`` (the move k = 0 is due at once, fired by the next
  :func:`expire` of that queue) and re-armed after each firing at ``started_at + k / r`` (a
  new start, so after every timer already running). Each tick makes one move, after any skips
  (a skip takes no tick). A full destination: no move, the message stays ``VISIBLE``; the next
  tick tries again, and a ``rate=None`` task stays ``RUNNING`` with a tick at
  ``now + RETRY_AFTER``. An empty scope completes a ``rate=None`` task at once, and a
  ``rate`` task at its first tick (as impl does). These are impl's choices (``impl/redrive.py``),
  taken over so that the two agree step for step.
- **Sweep** (:func:`expire`): the queue's timers due by ``now`` fire one at a time in the one
  order (by due time, ties by start order): delays, deadlines (releases, with the move),
  retention timers and ticks; a tick re-armed to a time already passed fires in the same sweep,
  in its new place. The result lists the fired timers as ``(kind, name)`` entries.

Where this spec is narrower than impl (say so before relying on it): every queue of a
:class:`System` shares its id space, including a redrive destination that impl would keep in
no system (impl gives such a queue's redriven ids from its own counter); clocks and closing
are not modelled (one time, ``now``, is every argument).
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from spec import transitions as t
from spec.state import TICK, Config, Delivery, Receipt, State, Status, Time, initial

#: Seconds after which a ``rate=None`` task that a full destination stopped tries again
#: (impl's ``impl.redrive.RETRY_AFTER``).
RETRY_AFTER: Final = 1.0

_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,80}")


class RedriveStatus(enum.Enum):
    """Where a redrive task is (impl's ``impl.RedriveStatus``, the same values)."""

    RUNNING = "running"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


class RedriveRunning(RuntimeError):
    """:func:`start_redrive` on a queue that has a ``RUNNING`` task (impl's
    ``impl.errors.RedriveRunning``)."""


@dataclass(frozen=True, slots=True)
class RedriveTask:
    """One redrive of a dead-letter queue, as a value.

    ``scope`` holds the ids still to consider, in order (the visible ids at the start, oldest
    first, less those moved or skipped); ``to_move`` is the scope's size at the start, so
    ``moved + skipped + len(scope) == to_move``. ``ticks`` counts the ticks fired (a ``rate``
    task's next is due at ``started_at + ticks / rate``); ``next_tick`` is when its tick is
    due, ``None`` when none runs (a ``rate=None`` task that moved all it could, or a task
    that is not ``RUNNING``).
    """

    name: str
    dlq: str
    destination: str | None
    rate: Time | None
    started_at: Time
    to_move: int
    scope: tuple[str, ...]
    moved: int = 0
    skipped: int = 0
    status: RedriveStatus = RedriveStatus.RUNNING
    ticks: int = 0
    next_tick: Time | None = None


@dataclass(frozen=True, slots=True)
class Member:
    """One queue of a system: its name, its state (with its config), its dead-letter target."""

    name: str
    state: State
    dead_letter: str | None = None


@dataclass(frozen=True, slots=True)
class System:
    """A system of queues as one value (see the module docstring).

    ``queues``: the members, in creation order (a target before its sources);
    ``accepted``: every id any queue has accepted, sorted (the id registry, rule 2);
    ``counter``: the number of the last generated id (``msg-N``);
    ``sources``: ``(queue, id, source)`` for each message dead-lettered into ``queue``, sorted;
    ``redriven``: ``(dlq, id, destination, new id)`` for each redrive move, sorted;
    ``tasks``: the redrive tasks, oldest first.
    """

    queues: tuple[Member, ...] = ()
    accepted: tuple[str, ...] = ()
    counter: int = 0
    sources: tuple[tuple[str, str, str], ...] = ()
    redriven: tuple[tuple[str, str, str, str], ...] = ()
    tasks: tuple[RedriveTask, ...] = ()

    # -- read-only helpers ---------------------------------------------------------------------

    def names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.queues)

    def member(self, name: str) -> Member:
        """The member ``name``; ``ValueError`` naming ``queue`` if there is none."""
        for m in self.queues:
            if m.name == name:
                return m
        raise ValueError(f"queue {name!r} is not a queue of this system: {list(self.names())}")

    def state(self, name: str) -> State:
        return self.member(name).state

    def target(self, name: str) -> str | None:
        """The dead-letter target of queue ``name``, or ``None``."""
        return self.member(name).dead_letter

    def source_of(self, queue: str, id: str) -> str | None:
        """The queue the message ``id`` was dead-lettered from into ``queue``, or ``None``."""
        for q, i, source in self.sources:
            if q == queue and i == id:
                return source
        return None

    def moved_to(self, queue: str, id: str) -> tuple[str, str] | None:
        """Where a redrive moved the message ``id`` of ``queue``: ``(destination, new id)``."""
        for q, i, dest, new in self.redriven:
            if q == queue and i == id:
                return dest, new
        return None

    def redrive_tasks(self, queue: str) -> tuple[RedriveTask, ...]:
        """The redrive tasks of ``queue``, most recent first."""
        return tuple(task for task in reversed(self.tasks) if task.dlq == queue)

    def task(self, name: str) -> RedriveTask:
        """The task called ``name``; ``ValueError`` naming ``task`` if there is none."""
        for task in self.tasks:
            if task.name == name:
                return task
        raise ValueError(f"task {name!r} is not a redrive task of this system")

    def running(self, queue: str) -> RedriveTask | None:
        """The ``RUNNING`` task of ``queue``, if any."""
        for task in self.tasks:
            if task.dlq == queue and task.status is RedriveStatus.RUNNING:
                return task
        return None


# -- building a system ------------------------------------------------------------------------


def add_queue(
    system: System, name: str, config: Config | None = None, *, dead_letter: str | None = None
) -> System:
    """``system`` with a new queue ``name`` (empty, with ``config``) whose dead-letter target
    is the queue ``dead_letter`` of the system, or none.

    ``TypeError``/``ValueError`` naming ``name`` for a name that is not a ``str``, not of
    SQS's form (1 to 80 letters, digits, ``-`` or ``_``; a FIFO queue's may end in ``.fifo``)
    or already in the system. ``ValueError`` naming ``dead_letter`` (rule 1) for a target that
    is not a queue of the system (so it is always added first: no cycle), a queue without
    ``max_receives``, a target of the other kind, or a bounded target (a move is the commit of
    a release, which cannot wait for room).
    """
    config = config if config is not None else Config()
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {name!r}")
    base = name[: -len(".fifo")] if config.fifo and name.endswith(".fifo") else name
    if not _NAME.fullmatch(base) or len(name) > 80:
        raise ValueError(
            f"name must be 1 to 80 letters, digits, '-' or '_' (a FIFO queue's may end in "
            f"'.fifo'), got {name!r}"
        )
    if name in system.names():
        raise ValueError(f"name {name!r} is already a queue of this system")
    if dead_letter is not None:
        if not isinstance(dead_letter, str):
            raise TypeError(f"dead_letter must be a queue name or None, got {dead_letter!r}")
        if dead_letter not in system.names():
            raise ValueError(
                f"dead_letter {dead_letter!r} is not a queue of this system (a target is "
                "created before its sources)"
            )
        target = system.state(dead_letter).config
        if config.max_receives is None:
            raise ValueError("dead_letter needs max_receives: nothing would be dead-lettered")
        if target.fifo != config.fifo:
            raise ValueError(
                f"dead_letter {dead_letter!r} must be of the same kind (FIFO or standard)"
            )
        if target.capacity is not None:
            raise ValueError(
                f"dead_letter {dead_letter!r} must be unbounded (capacity None): a move cannot "
                "wait for room"
            )
    member = Member(name, initial(config, len(system.queues)), dead_letter)
    return replace(system, queues=(*system.queues, member))


def build(*queues: tuple[str, Config] | tuple[str, Config, str | None]) -> System:
    """A system of ``queues``, each ``(name, config)`` or ``(name, config, dead_letter)``,
    added in order by :func:`add_queue` (so a target comes before its sources)."""
    system = System()
    for entry in queues:
        name, config = entry[0], entry[1]
        target = entry[2] if len(entry) == 3 else None
        system = add_queue(system, name, config, dead_letter=target)
    return system


# -- internal steps ---------------------------------------------------------------------------


def _put(system: System, name: str, state: State) -> System:
    return replace(
        system,
        queues=tuple(replace(m, state=state) if m.name == name else m for m in system.queues),
    )


def _accept(system: System, ids: Sequence[str]) -> System:
    if not ids:
        return system
    return replace(system, accepted=tuple(sorted({*system.accepted, *ids})))


def _dead_letter_move(system: System, source: str, target: str, id: str, now: Time) -> System:
    """The target's half of a dead-letter move (the release in ``source`` is done): the
    message joins ``target``'s visible tail (rule 3)."""
    m = system.state(source).get(id)
    assert m is not None and m.status is Status.DEAD
    into = t.move_in(
        system.state(target),
        id,
        m.body,
        now,
        attempt=m.attempt,
        group=m.group,
        enqueued_at=m.enqueued_at,
    )
    system = _put(system, target, into)
    return replace(system, sources=tuple(sorted((*system.sources, (target, id, source)))))


def _commit(system: System, name: str, before: State, after: State, now: Time) -> System:
    """``system`` after queue ``name`` went from ``before`` to ``after`` by one of its own
    transitions: the state put in, new ids registered, and each message that died there
    moved into the target, in the order they died, in the same step."""
    if after is before:
        return system
    system = _put(system, name, after)
    new = [m.id for m in after.messages if before.get(m.id) is None]
    system = _accept(system, new)
    target = system.target(name)
    if target is not None:
        for id in after.dead[len(before.dead) :]:
            system = _dead_letter_move(system, name, target, id, now)
    return system


def _fresh(system: System) -> tuple[str, int]:
    """The next generated id and the counter after it."""
    taken = set(system.accepted)
    n = system.counter + 1
    while f"msg-{n}" in taken:
        n += 1
    return f"msg-{n}", n


def _has_room(s: State) -> bool:
    cap = s.config.capacity
    return cap is None or s.active < cap


# -- the transitions, per queue -----------------------------------------------------------------


def send(
    system: System,
    queue: str,
    id: str,
    body: str,
    delay: Time | None = None,
    now: Time = 0.0,
    group: str | None = None,
    dedup_id: str | None = None,
) -> tuple[System, t.SendResult]:
    """:func:`spec.transitions.send` on ``queue``, with the id space of the system: an id any
    queue has accepted is rejected (``False``, the same system). The accepted message is
    stamped ``enqueued_at = now``."""
    before = system.state(queue)
    after, result = t.send(before, id, body, delay, now, group, dedup_id)
    if after is not before:
        if id in system.accepted:  # another queue of the system took it: rejected
            return system, False
        m = after.get(id)
        assert m is not None
        after = after.with_msg(replace(m, enqueued_at=now))
    return _commit(system, queue, before, after, now), result


def send_batch(
    system: System, queue: str, entries: Sequence[t.BatchEntry], now: Time = 0.0
) -> tuple[System, bool | tuple[bool | str, ...]]:
    """:func:`spec.transitions.send_batch` on ``queue``, all or none, with the system's id
    space: if an entry that would be accepted has an id another queue accepted, none is (the
    queue's own answer for a refused batch)."""
    before = system.state(queue)
    after, result = t.send_batch(before, entries, now)
    new = [m for m in after.messages if before.get(m.id) is None]
    if any(m.id in system.accepted for m in new):
        if isinstance(result, tuple):
            return system, tuple(False if r is True else r for r in result)
        return system, False
    for m in new:
        after = after.with_msg(replace(m, enqueued_at=now))
    return _commit(system, queue, before, after, now), result


def receive(
    system: System, queue: str, now: Time, vt: Time | None
) -> tuple[System, Delivery | None]:
    before = system.state(queue)
    after, d = t.receive(before, now, vt)
    return _commit(system, queue, before, after, now), d


def receive_batch(
    system: System, queue: str, now: Time, n: int, vt: Time | None
) -> tuple[System, tuple[Delivery, ...]]:
    before = system.state(queue)
    after, ds = t.receive_batch(before, now, n, vt)
    return _commit(system, queue, before, after, now), ds


def delete(system: System, queue: str, receipt: Receipt) -> tuple[System, bool]:
    before = system.state(queue)
    after, ok = t.delete(before, receipt)
    return _commit(system, queue, before, after, 0.0), ok


def delete_batch(
    system: System, queue: str, receipts: Sequence[Receipt]
) -> tuple[System, tuple[bool, ...]]:
    before = system.state(queue)
    after, oks = t.delete_batch(before, receipts)
    return _commit(system, queue, before, after, 0.0), oks


def retry(system: System, queue: str, receipt: Receipt, now: Time = 0.0) -> tuple[System, bool]:
    """:func:`spec.transitions.retry`; a release that dies moves the message into the target
    in the same step (``now``: the time of the step, the FIFO target's enqueue time)."""
    before = system.state(queue)
    after, ok = t.retry(before, receipt)
    return _commit(system, queue, before, after, now), ok


def change_visibility(
    system: System, queue: str, receipt: Receipt, timeout: Time, now: Time
) -> tuple[System, bool]:
    before = system.state(queue)
    after, ok = t.change_visibility(before, receipt, timeout, now)
    return _commit(system, queue, before, after, now), ok


def change_visibility_batch(
    system: System, queue: str, changes: Sequence[tuple[Receipt, Time]], now: Time
) -> tuple[System, tuple[bool, ...]]:
    before = system.state(queue)
    after, oks = t.change_visibility_batch(before, changes, now)
    return _commit(system, queue, before, after, now), oks


def cancel(system: System, queue: str, id: str) -> tuple[System, bool]:
    before = system.state(queue)
    after, ok = t.cancel(before, id)
    return _commit(system, queue, before, after, 0.0), ok


def purge(system: System, queue: str) -> tuple[System, int]:
    """:func:`spec.transitions.purge`; a running redrive task's tick runs on (its scope ids are
    then skipped)."""
    before = system.state(queue)
    after, n = t.purge(before)
    return _commit(system, queue, before, after, 0.0), n


def release(system: System, queue: str, id: str, now: Time) -> System:
    """The release of the in-flight ``id`` of ``queue`` with the move (rule 3): dead-letter
    it (and, with a target, move it there in the same step) or make it visible again."""
    before = system.state(queue)
    return _commit(system, queue, before, t.release(before, id), now)


def age_out(system: System, queue: str, id: str) -> System:
    """The retention timer of the active ``id`` of ``queue`` fires: ``AGED_OUT`` (rule 4)."""
    before = system.state(queue)
    return _commit(system, queue, before, t.age_out(before, id), 0.0)


def expire(system: System, queue: str, now: Time) -> tuple[System, tuple[tuple[str, str], ...]]:
    """``queue``'s sweep, one step: every timer of it due at or before ``now`` fires, one at a
    time, in the one order (due time, then start order): delays, deadlines (a release, with
    the move), retention timers (:func:`age_out`) and redrive ticks; returns the fired timers
    as ``(kind, name)``, in order. A tick re-armed to a time already passed fires in the same
    sweep, in its place."""
    t._check_time("now", now)
    fired: list[tuple[str, str]] = []

    def tick_due(name: str) -> Time | None:
        return system.task(name).next_tick

    while (entry := t.next_timer(system.state(queue), now, tick_due)) is not None:
        kind, name = entry
        if kind == TICK:
            system = _fire_tick(system, name, now)
        else:
            before = system.state(queue)
            system = _commit(system, queue, before, t.fire(before, entry), now)
        fired.append(entry)
    return system, tuple(fired)


# -- redrive ------------------------------------------------------------------------------------


def redrive_step(
    system: System, queue: str, id: str, destination: str, now: Time
) -> tuple[System, str | None]:
    """One redrive move, one atomic step across two queues (rule 5): the ``VISIBLE`` message
    ``id`` of ``queue`` becomes ``MOVED`` there and a new message in ``destination`` (a fresh
    id, attempt 0, enqueued ``now``, the same body and group, the tail, no source, no dedup);
    returns the new id. ``None`` and the same system when it cannot happen: ``id`` is not
    visible in ``queue``, or ``destination`` is ``queue`` itself, of the other kind, or full.
    """
    src, dst = system.state(queue), system.state(destination)
    m = src.get(id)
    if (
        m is None
        or m.status is not Status.VISIBLE
        or destination == queue
        or dst.config.fifo != src.config.fifo
        or not _has_room(dst)
    ):
        return system, None
    new_id, counter = _fresh(system)
    system = _put(system, queue, t.move_out(src, id))
    system = _put(system, destination, t.move_in(dst, new_id, m.body, now, group=m.group))
    system = replace(
        _accept(system, [new_id]),
        counter=counter,
        redriven=tuple(sorted((*system.redriven, (queue, id, destination, new_id)))),
    )
    return system, new_id


def _put_task(system: System, task: RedriveTask) -> System:
    return replace(system, tasks=tuple(task if x.name == task.name else x for x in system.tasks))


def _arm(system: System, task: RedriveTask, due: Time) -> System:
    """Start ``task``'s tick at ``due``: a new timer at the end of its queue's order."""
    s = system.state(task.dlq)
    system = _put(system, task.dlq, t.set_order(s, (*s.timer_order(), (TICK, task.name))))
    return _put_task(system, replace(task, next_tick=due))


def _disarm(system: System, task: RedriveTask) -> System:
    """Stop ``task``'s tick, if it runs."""
    s = system.state(task.dlq)
    entries = tuple(e for e in s.timer_order() if e != (TICK, task.name))
    system = _put(system, task.dlq, t.set_order(s, entries))
    return _put_task(system, replace(task, next_tick=None))


def _moves(system: System, name: str, now: Time, limit: int | None) -> tuple[System, bool]:
    """Move up to ``limit`` (``None``: all) of task ``name``'s scope, skipping the ids no longer
    visible or with nowhere to go, each move one :func:`redrive_step`. ``True`` if a full
    destination stopped it. The task completes when its scope is exhausted."""
    task = system.task(name)
    moved, blocked = 0, False
    while task.scope and (limit is None or moved < limit):
        id = task.scope[0]
        m = system.state(task.dlq).get(id)
        dest = task.destination
        if dest is None:
            dest = system.source_of(task.dlq, id)
        if m is None or m.status is not Status.VISIBLE or dest is None:
            task = replace(task, scope=task.scope[1:], skipped=task.skipped + 1)
            continue
        if not _has_room(system.state(dest)):
            blocked = True
            break
        system, new_id = redrive_step(system, task.dlq, id, dest, now)
        assert new_id is not None
        task = replace(task, scope=task.scope[1:], moved=task.moved + 1)
        moved += 1
    system = _put_task(system, task)
    if not task.scope:
        system = _disarm(system, task)
        system = _put_task(system, replace(system.task(name), status=RedriveStatus.COMPLETED))
    return system, blocked


def _fire_tick(system: System, name: str, now: Time) -> System:
    """Task ``name``'s tick fires: its tick stops, it moves (one, or all with ``rate=None``),
    and if it still runs its next tick starts: ``started_at + ticks / rate``, or, for a
    ``rate=None`` task a full destination stopped, ``now + RETRY_AFTER``."""
    system = _disarm(system, system.task(name))
    task = system.task(name)
    system, blocked = _moves(system, name, now, None if task.rate is None else 1)
    task = system.task(name)
    if task.status is not RedriveStatus.RUNNING:
        return system
    rate = task.rate
    if rate is None:
        return _arm(system, task, now + RETRY_AFTER) if blocked else system
    task = replace(task, ticks=task.ticks + 1)
    return _arm(system, task, task.started_at + task.ticks / rate)


def start_redrive(
    system: System,
    queue: str,
    now: Time,
    destination: str | None = None,
    rate: Time | None = None,
) -> tuple[System, RedriveTask]:
    """Start a redrive task on ``queue`` (rule 5) and return the system and the task (as it
    is after the moves ``start_redrive`` itself makes).

    ``destination`` ``None``: each message goes to its source (one with none is skipped);
    else a queue of the system of the same kind, not ``queue``. ``rate`` ``None``: the whole
    scope moves now; else finite > 0 moves per second, by the ticks of ``queue``'s sweep.
    ``ValueError``/``TypeError`` naming ``destination`` or ``rate`` for a bad one, and
    :class:`RedriveRunning` while a task of ``queue`` runs; nothing changes then.
    """
    t._check_number("now", now)
    dlq = system.state(queue)
    if destination is not None:
        if not isinstance(destination, str):
            raise TypeError(f"destination must be a queue name or None, got {destination!r}")
        if destination not in system.names():
            raise ValueError(f"destination {destination!r} is not a queue of this system")
        if destination == queue:
            raise ValueError("destination must not be the dead-letter queue itself")
        if system.state(destination).config.fifo != dlq.config.fifo:
            raise ValueError("destination must be a queue of the same kind (FIFO or standard)")
    if rate is not None:
        if isinstance(rate, bool) or not isinstance(rate, int | float):
            raise TypeError(f"rate must be a number or None, got {rate!r}")
        if not math.isfinite(rate) or rate <= 0:
            raise ValueError(f"rate must be a finite number > 0 or None, got {rate!r}")
    running = system.running(queue)
    if running is not None:
        raise RedriveRunning(
            f"redrive task {running.name} is still running on queue {queue!r}: cancel it or "
            "let it complete first"
        )
    task = RedriveTask(
        name=f"redrive-{len(system.tasks) + 1}",
        dlq=queue,
        destination=destination,
        rate=rate,
        started_at=now,
        to_move=len(dlq.visible),
        scope=dlq.visible,
    )
    system = replace(system, tasks=(*system.tasks, task))
    if rate is not None:
        system = _arm(system, task, now)  # the move k = 0, due at once: the next sweep's
        return system, system.task(task.name)
    system, blocked = _moves(system, task.name, now, None)
    if blocked:
        system = _arm(system, system.task(task.name), now + RETRY_AFTER)
    return system, system.task(task.name)


def cancel_redrive(system: System, task: str) -> tuple[System, bool]:
    """Stop the redrive task ``task``: no further moves (those made stay made). ``True`` if it
    was ``RUNNING``; ``False`` and the same system otherwise."""
    current = system.task(task)
    if current.status is not RedriveStatus.RUNNING:
        return system, False
    system = _disarm(system, current)
    return _put_task(system, replace(system.task(task), status=RedriveStatus.CANCELLED)), True


def next_due(system: System, queue: str) -> Time | None:
    """When ``queue``'s sweep next has work: its earliest timer, a running task's tick too."""
    times = [x for x in (t.next_deadline(system.state(queue)),) if x is not None]
    times += [
        task.next_tick for task in system.tasks if task.dlq == queue and task.next_tick is not None
    ]
    return min(times) if times else None


# -- a teaching aid: the move done wrong ----------------------------------------------------------


def move_in_two_steps(
    system: System, queue: str, receipt: Receipt, now: Time = 0.0
) -> tuple[System, System]:
    """MUTANT, for teaching and for the tests of :func:`spec.system_invariants.nothing_lost`:
    a ``retry`` whose dead-letter move is made of two steps, as a careless implementation
    would do it (release here; later, add there). Returns ``(between, after)``: the system
    between the two steps, in which the message is ``DEAD`` in ``queue`` and in no target
    (``NothingLost`` fails there), and the system after both (equal to :func:`retry`'s).
    Not a transition of the system: nothing in the spec calls it."""
    before = system.state(queue)
    after, ok = t.retry(before, receipt)
    between = _accept(_put(system, queue, after), [])
    target = system.target(queue)
    if not ok or target is None:
        return between, between
    done = between
    for id in after.dead[len(before.dead) :]:
        done = _dead_letter_move(done, queue, target, id, now)
    return between, done


__all__ = [
    "RETRY_AFTER",
    "Member",
    "RedriveRunning",
    "RedriveStatus",
    "RedriveTask",
    "System",
    "add_queue",
    "age_out",
    "build",
    "cancel",
    "cancel_redrive",
    "change_visibility",
    "change_visibility_batch",
    "delete",
    "delete_batch",
    "expire",
    "move_in_two_steps",
    "next_due",
    "purge",
    "receive",
    "receive_batch",
    "redrive_step",
    "release",
    "retry",
    "send",
    "send_batch",
    "start_redrive",
]
