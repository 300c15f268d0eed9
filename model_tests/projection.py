"""What the spec's state and the implementation's snapshot have in common, as one comparable value.

The model-based tests never compare a ``spec.State`` with an ``impl.Snapshot`` directly: each is
projected to an :class:`Observed` value holding exactly what both can show, and the two
projections must be equal. The implementation forgets the body and attempt of a done or
cancelled message, so :class:`Observed` keeps only their ids.

:func:`to_state` goes the other way, turning a snapshot into a ``spec.State`` so that the spec's
own invariant functions (``spec.violations``, ``spec.step_violations``) can be run on the
implementation. For done and cancelled messages, whose attempt and body the snapshot no longer
has, it carries them over from the previous converted state (where the message was last
active), which is what lets the step invariants compare two converted states.

The snapshot does not show the order in which timers were started (the spec's ``timers``, which
breaks ties between equal due times), so :func:`to_state` rebuilds it: the previous state's
order for every timer still running (the same delay, or the same delivery: a delivery holds
its receive's place even without a deadline), then the timers started by the last step, delays
in send order and then deliveries in delivery order. One step starts the timers of one
operation only, so this is the order it started them in. Whether the impl *fires* timers in
that order is what the lockstep compares, step by step, through the observable state.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import spec
from impl import Snapshot, SnapshotMessage, Stats


@dataclass(frozen=True, slots=True)
class Item:
    """One message as both layers show it; ``deadline`` is ``None`` unless in flight with one,
    ``visible_at`` unless delayed; ``group`` and ``sent`` (send order) are a FIFO queue's, the
    defaults on a standard queue."""

    id: str
    body: object
    attempt: int
    deadline: float | None = None
    visible_at: float | None = None
    group: str | None = None
    sent: int = 0

    def __repr__(self) -> str:
        # A standard queue's items read as before FIFO queues existed (failure messages, and
        # the patterns that match them, stay the same).
        fifo = f", group={self.group!r}, sent={self.sent!r}" if self.group is not None else ""
        return (
            f"Item(id={self.id!r}, body={self.body!r}, attempt={self.attempt!r}, "
            f"deadline={self.deadline!r}, visible_at={self.visible_at!r}{fifo})"
        )


@dataclass(frozen=True, slots=True)
class Observed:
    """The observable state of one queue.

    ``visible`` head first; ``in_flight`` in receive order; ``dead`` in order of death;
    ``done`` and ``cancelled`` as id sets; ``delayed`` in send order; ``dedup`` a FIFO
    queue's dedup records ``(dedup_id, id, accepted_at)`` sorted by dedup id (the impl drops
    records whose window has passed only once it holds more than 64, which no test reaches).
    """

    visible: tuple[Item, ...]
    in_flight: tuple[Item, ...]
    dead: tuple[Item, ...]
    done: frozenset[str]
    cancelled: frozenset[str]
    delayed: tuple[Item, ...] = ()
    dedup: tuple[tuple[str, str, float], ...] = ()

    def counts(self) -> tuple[int, int, int, int, int, int]:
        """(visible, in_flight, done, cancelled, dead, delayed), the order of ``impl.Stats``'
        fields."""
        return (
            len(self.visible),
            len(self.in_flight),
            len(self.done),
            len(self.cancelled),
            len(self.dead),
            len(self.delayed),
        )


def stats_counts(stats: Stats) -> tuple[int, int, int, int, int, int]:
    """``impl.Stats`` as the tuple :meth:`Observed.counts` returns."""
    return (stats.visible, stats.in_flight, stats.done, stats.cancelled, stats.dead, stats.delayed)


def from_state(s: spec.State) -> Observed:
    """Project a spec state."""

    def items(ids: Iterable[str]) -> tuple[Item, ...]:
        out = []
        for id in ids:
            m = s.get(id)
            assert m is not None, f"{id!r} listed but not recorded"
            out.append(Item(m.id, m.body, m.attempt, m.deadline, m.visible_at, m.group, m.sent))
        return tuple(out)

    return Observed(
        visible=items(s.visible),
        in_flight=items(s.in_flight),
        dead=items(s.dead),
        done=frozenset(m.id for m in s.messages if m.status is spec.Status.DONE),
        cancelled=frozenset(m.id for m in s.messages if m.status is spec.Status.CANCELLED),
        delayed=items(s.delayed),
        dedup=s.dedup,
    )


def _items(ms: Iterable[SnapshotMessage[Any]]) -> tuple[Item, ...]:
    return tuple(
        Item(m.id, m.body, m.attempt, m.deadline, m.visible_at, m.group, m.sent) for m in ms
    )


def from_snapshot(snap: Snapshot[Any]) -> Observed:
    """Project an implementation snapshot."""
    return Observed(
        visible=_items(snap.visible),
        in_flight=_items(snap.in_flight),
        dead=_items(snap.dead),
        done=snap.done,
        cancelled=snap.cancelled,
        delayed=_items(snap.delayed),
        dedup=snap.dedup,
    )


def to_state(
    snap: Snapshot[Any], config: spec.Config, queue: int, previous: spec.State | None = None
) -> spec.State:
    """The ``spec.State`` that a snapshot shows, for running the spec's invariants on the impl.

    Done and cancelled messages take their body and attempt from ``previous`` (the state
    converted from the snapshot before), or ``("", 0)`` when it has none. An id that appears in
    two places of the snapshot is recorded once per place, so ``OneState`` reports it. The
    ``timers`` order is rebuilt from ``previous`` (see the module docstring).
    """
    msgs: list[spec.Msg] = []

    def add(ms: Iterable[SnapshotMessage[Any]], status: spec.Status) -> tuple[str, ...]:
        ids = []
        for m in ms:
            # Kept as the snapshot says even when not in flight, so OneState can object.
            msgs.append(
                spec.Msg(
                    m.id,
                    m.body,
                    status,
                    m.attempt,
                    m.deadline,
                    m.visible_at,
                    group=m.group,
                    sent=m.sent,
                )
            )
            ids.append(m.id)
        return tuple(ids)

    visible = add(snap.visible, spec.Status.VISIBLE)
    in_flight = add(snap.in_flight, spec.Status.IN_FLIGHT)
    dead = add(snap.dead, spec.Status.DEAD)
    delayed = add(snap.delayed, spec.Status.DELAYED)
    timers = _timers(snap, previous)
    for ids, status in ((snap.done, spec.Status.DONE), (snap.cancelled, spec.Status.CANCELLED)):
        for id in sorted(ids):
            old = previous.get(id) if previous is not None else None
            body, attempt = (old.body, old.attempt) if old is not None else ("", 0)
            msgs.append(spec.Msg(id, body, status, attempt, None))
    return spec.State(
        config=config,
        messages=tuple(sorted(msgs, key=lambda m: m.id)),
        visible=visible,
        in_flight=in_flight,
        dead=dead,
        queue=queue,
        delayed=delayed,
        timers=timers,
        dedup=snap.dedup,
    )


def _timers(snap: Snapshot[Any], previous: spec.State | None) -> tuple[str, ...]:
    """The spec's ``timers`` for ``snap``: still-running timers in ``previous``'s order, then
    the ones the last step started (delays in send order, then deliveries in delivery order)."""
    running = {m.id: (True, m.attempt) for m in snap.delayed}
    running |= {m.id: (False, m.attempt) for m in snap.in_flight}

    def same_timer(id: str) -> bool:
        old = previous.get(id) if previous is not None else None
        return (
            old is not None
            and old.status in (spec.Status.DELAYED, spec.Status.IN_FLIGHT)
            and running[id] == (old.status is spec.Status.DELAYED, old.attempt)
        )

    kept = [id for id in (previous.timers if previous else ()) if id in running and same_timer(id)]
    started = [id for id in running if id not in kept]
    return (*kept, *started)


def with_fifo_fields(state: spec.State, twin: spec.State) -> spec.State:
    """``state`` (converted from a FIFO queue's snapshot) with what that snapshot does not
    show taken from ``twin``, the spec's state of the same queue: each message's dedup id, and
    the group and send order of done and cancelled messages (the snapshot keeps only their ids).

    The groups and send order of the messages still kept, and the dedup records, are the
    implementation's own (``impl.Snapshot``); the lockstep's whole-state comparison
    (``projection.Observed``) checks them against the spec's. Dedup ids and done messages'
    groups are fixed when a message is accepted, and the lockstep checks that both sides accept
    the same ids. An id the twin does not know keeps what the snapshot showed.
    """
    gone = (spec.Status.DONE, spec.Status.CANCELLED)
    messages = []
    for m in state.messages:
        t = twin.get(m.id)
        if t is None:
            messages.append(m)
        elif m.status in gone:
            messages.append(replace(m, group=t.group, sent=t.sent, dedup_id=t.dedup_id))
        else:
            messages.append(replace(m, dedup_id=t.dedup_id))
    return replace(state, messages=tuple(messages))
