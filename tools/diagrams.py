"""``python -m tools.diagrams``: the walkthrough's pictures, generated from the models, not drawn.

Two Mermaid diagrams, each computed from a model, so a change of the model changes the picture
and a stale picture fails a test (``tests/test_diagrams.py``):

- ``docs/diagrams/lifecycle.mmd``, a ``stateDiagram-v2`` of one message's life, FROM THE SPEC:
  ``spec.explore.explore`` walks every reachable state (``LIFECYCLE_BOUNDS``) and every edge
  that changes the first id's message is projected to (its status before, the action's name,
  its status after). A second id is there so that the batches have two messages to act on
  (a ``SendBatch`` takes two distinct ids); edges that change only the other message are
  dropped. Tick is dropped (it never changes a status); release edges are labelled with the
  relation between the message's attempt and ``max_receives`` seen on them, which is what
  separates release-to-``VISIBLE`` from release-to-``DEAD``. The two states only a system of
  queues reaches (``AGED_OUT``, ``MOVED``: contract section 7) come FROM THE SYSTEM SPEC:
  ``spec.system_explore.explore_system`` at ``LIFECYCLE_SYSTEM_BOUNDS`` (a source with
  retention and a delay, its dead-letter queue with retention, one redrive), every edge
  projected to each queue's entry of each id; its edges into those two states are drawn from
  the states the one-queue picture has, and the release into ``DEAD`` says that it moves the
  message into the dead-letter target when the queue has one, once the system graph shows
  that every such death is that move (the same id ``VISIBLE`` in the target in the same step).
- ``docs/diagrams/duplicate_race.mmd``, a ``sequenceDiagram`` of the duplicate-delivery race,
  FROM TLC'S COUNTEREXAMPLE of the ``ExactlyOnce`` model (``tla/ExactlyOnce.cfg``): each step of
  the trace becomes the messages between the consumers, the queue and the sweeper that the
  state change implies. The trace TLC printed is kept beside it as
  ``docs/diagrams/exactly_once.trace``, so the diagram (and
  ``model_tests/tests/test_understanding.py``, which replays the trace on ``impl.Queue``) can
  be checked without Java.

Both diagrams are also written into ``docs/walkthrough.md``, between the marker comments
``<!-- BEGIN name -->`` and ``<!-- END name -->``.

And one page, ``docs/explorer.html``: the interactive state explorer (:mod:`spec.html`) over
the spec's graphs at :data:`EXPLORER_GRAPHS` (a standard queue and a FIFO one), with TLC's
counterexamples of :data:`EXPLORER_TRACES` to step through: the ExactlyOnce trace above, the
delete-by-id pitfall, the lost wakeups of the threaded models and the FIFO ones. The traces are
kept as TLC printed them beside the diagrams (``docs/diagrams/*.trace``); a run with TLC
refreshes the ones this tool owns (:attr:`ExplorerTrace.owned`).

    python -m tools.diagrams            # run TLC (one model at a time), regenerate every file
    python -m tools.diagrams --no-tlc   # use the committed trace instead of running TLC
    python -m tools.diagrams --check    # write nothing; exit 1 if a file is stale
"""

from __future__ import annotations

import argparse
import functools
import itertools
import re
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from spec import system as sy
from spec.explore import Bounds, explore
from spec.html import GraphSpec, page
from spec.operations import REGISTRY, Registry
from spec.state import Config, State, Status
from spec.system_explore import SystemBounds, explore_system
from tla.counterexample import TraceStep, deadline, finished, held, messages, parse_trace
from tla.explorer import load_trace
from tla.models import discover
from tla.tlc import SetupError, run_tlc
from tla.values import Value

ROOT = Path(__file__).resolve().parent.parent
DIAGRAMS = ROOT / "docs" / "diagrams"
WALKTHROUGH = ROOT / "docs" / "walkthrough.md"
LIFECYCLE = DIAGRAMS / "lifecycle.mmd"
RACE = DIAGRAMS / "duplicate_race.mmd"
TRACE = DIAGRAMS / "exactly_once.trace"
RACE_MODEL = "ExactlyOnce"
EXPLORER = ROOT / "docs" / "explorer.html"

#: The life of message ``a`` (beside ``b``, for the batches), dead-lettered on the release after
#: its second delivery, a visibility timeout of 1, change_visibility to 0 (release) or 2
#: (extend), batches of 2 and a delay of 1: every kind of transition is reachable.
LIFECYCLE_BOUNDS = Bounds(
    ids=("a", "b"),
    capacity=2,
    max_receives=2,
    max_attempt=2,
    visibility_timeouts=(1,),
    extend_timeouts=(0, 2),
    max_time=2,
    batch=2,
    delays=(0, 1),
)


@dataclass(frozen=True)
class LifecycleSystemBounds(SystemBounds):
    """:class:`spec.system_explore.SystemBounds` with a retention on the source too (queue
    ``2``), so that a delayed message can age out before its delay fires."""

    source_retention: int | None = None

    def system(self) -> sy.System:
        return sy.build(
            ("1", Config(retention=self.dlq_retention)),
            (
                "2",
                Config(
                    capacity=self.source_capacity,
                    max_receives=self.source_max_receives,
                    retention=self.source_retention,
                ),
                "1",
            ),
        )


#: One message ``a`` sent to a source (retention 1, a delay of 0 or 2, dead-lettered on the
#: release after its first delivery) whose dead-letter queue has retention 1 and may redrive
#: once: every way into ``AGED_OUT`` and ``MOVED`` is reachable, and the dead-letter move.
LIFECYCLE_SYSTEM_BOUNDS = LifecycleSystemBounds(
    ids=("a",), delays=(0, 2), max_time=2, source_retention=1
)
#: The states only a system of queues reaches: retention's, and a redrive's in its DLQ.
SYSTEM_STATES = (Status.AGED_OUT.value, Status.MOVED.value)
#: What the label of an edge into a :data:`SYSTEM_STATES` state says about its actions.
SYSTEM_GUARDS = {
    Status.AGED_OUT.value: "retention timer",
    Status.MOVED.value: "a new id in the destination",
}
#: What the release into ``DEAD`` adds when the system graph shows every death is a move.
INTO_TARGET = "moved into the dead-letter target if the queue has one"

#: The pseudo-state before a message is accepted (and after it is terminal): Mermaid's ``[*]``.
START = "[*]"
_STATUS_ORDER = [START, *(s.value for s in Status)]
#: Actions drawn as two arrows, by what their argument does: ``ChangeVisibility`` to 0 releases,
#: to any other value sets a new deadline.
SPLIT = {"ChangeVisibility": ("ChangeVisibility(0)", "ChangeVisibility(t≠0)")}


def diagram_actions(registry: Registry = REGISTRY) -> list[str]:
    """The actions the lifecycle may show, in the order its labels list them: the registry's
    TLA+ actions, those that only move the clock left out, :data:`SPLIT` ones split."""
    return [a for op in registry if not op.moves_clock for a in SPLIT.get(op.tla, (op.tla,))]


def releasing_actions(registry: Registry = REGISTRY) -> frozenset[str]:
    """The actions that may *release* an in-flight message (spec.transitions.release)."""
    out = set()
    for op in registry:
        if op.releases:
            # Of a split action, only its first form (ChangeVisibility(0)) releases.
            out.add(SPLIT[op.tla][0] if op.tla in SPLIT else op.tla)
    return frozenset(out)


_ACTION_ORDER = diagram_actions()


def _action_key(action: str) -> tuple[int, str]:
    """The order of a label's actions: the registry's, then the system's own (``Redrive``)."""
    if action in _ACTION_ORDER:
        return _ACTION_ORDER.index(action), ""
    return len(_ACTION_ORDER), action


#: Actions that *release* an in-flight message (spec.transitions.release).
RELEASES = releasing_actions()


# -- (a) the lifecycle, from the spec -----------------------------------------------------------


@dataclass(frozen=True, order=True)
class Transition:
    """One projected edge: the message's status before and after, and the action's name."""

    before: str
    action: str
    after: str


def action_name(label: str) -> str:
    """The explorer's edge label without the message id: ``Retry(a)`` -> ``Retry``.

    ``ChangeVisibility(a,t)`` keeps what matters about ``t``: 0 releases, any other value
    sets a new deadline.
    """
    name, _, args = label.partition("(")
    if name in SPLIT:
        t = int(args.rstrip(")").split(",")[1])
        return SPLIT[name][0] if t == 0 else SPLIT[name][1]
    return name


def _names_another(label: str, id: str, ids: Sequence[str]) -> bool:
    """Whether the edge label's parameters name a message other than ``id`` and not ``id``."""
    words = set(re.findall(r"\w+", label.partition("(")[2]))
    return id not in words and any(other in words for other in ids if other != id)


def _status(state: State, id: str) -> str:
    m = state.get(id)
    return START if m is None else m.status.value


def _attempt(state: State, id: str) -> int:
    m = state.get(id)
    return 0 if m is None else m.attempt


def lifecycle_transitions(
    bounds: Bounds = LIFECYCLE_BOUNDS, registry: Registry = REGISTRY
) -> dict[Transition, set[int]]:
    """Every reachable edge of the spec that changes the message of ``bounds.ids[0]``, projected
    to that message's status.

    Maps each :class:`Transition` to the set of attempts the message had just before it.
    ``Tick`` edges (of every action that only moves the clock) are dropped: the clock moving
    never changes a status (checked here). So are edges that leave the message as it was while
    changing another one, or that change nothing and name another message (an action on
    another message); an action that changes nothing and names no other message (a no-op) is
    drawn as a loop. ``registry`` gives the actions.
    Raises ``ValueError`` if the spec breaks an invariant.
    """
    id = bounds.ids[0]
    graph = explore(bounds, stop_at_first_violation=True, registry=registry)
    clock = {op.tla for op in registry if op.moves_clock}
    if graph.violations:
        raise ValueError(f"the spec violates an invariant: {graph.violations[0]}")
    out: dict[Transition, set[int]] = defaultdict(set)
    for (s, _), label, (t, _) in graph.labelled_edges():
        before, after = _status(s, id), _status(t, id)
        if label in clock:
            assert before == after, f"{label} changed {id}'s status: {before} -> {after}"
            continue
        if s.get(id) == t.get(id) and (s != t or _names_another(label, id, bounds.ids)):
            continue  # another message's transition
        out[Transition(before, action_name(label), after)].add(_attempt(s, id))
    return dict(out)


@dataclass(frozen=True)
class SystemLifecycle:
    """What the system spec adds to the lifecycle: its edges (every queue's entry of every
    id, projected as :class:`Transition`), and whether every death in a queue with a target
    is the move into it (``moves``; ``None`` when nothing died there)."""

    edges: frozenset[Transition]
    moves: bool | None


def _entry(s: sy.System, queue: str, id: str) -> str:
    m = s.state(queue).get(id)
    return START if m is None else m.status.value


@functools.cache
def system_transitions(bounds: SystemBounds = LIFECYCLE_SYSTEM_BOUNDS) -> SystemLifecycle:
    """Every reachable edge of the system spec at ``bounds``, projected to each queue's entry
    of each id whose status it changes, and whether each death in a queue with a target came
    with the same id's arrival, ``VISIBLE``, in the target. ``ValueError`` if the system
    spec breaks an invariant."""
    graph = explore_system(bounds)
    if graph.violations:
        raise ValueError(f"the system spec violates an invariant: {graph.violations[0]}")
    nodes = {n: node for node, n in graph.nodes.items()}
    out: set[Transition] = set()
    moves: bool | None = None
    for n, label, m in graph.edges:
        s, t = nodes[n][0], nodes[m][0]
        for q in s.names():
            ids = {x.id for x in s.state(q).messages} | {x.id for x in t.state(q).messages}
            for i in sorted(ids):
                before, after = _entry(s, q, i), _entry(t, q, i)
                if before == after:
                    continue
                out.add(Transition(before, label.partition("(")[0], after))
                target = s.target(q)
                if (before, after) == (Status.IN_FLIGHT.value, Status.DEAD.value) and target:
                    moved = (_entry(s, target, i), _entry(t, target, i)) == (
                        START,
                        Status.VISIBLE.value,
                    )
                    moves = moved if moves is None else moves and moved
    return SystemLifecycle(frozenset(out), moves)


def _release_guard(
    edges: dict[Transition, set[int]], before: str, after: str, max_receives: int | None
) -> str:
    """What the spec's edges show about attempt vs max_receives on a release edge."""
    if max_receives is None or before != Status.IN_FLIGHT.value:
        return ""
    attempts = {
        a
        for tr, xs in edges.items()
        if (tr.before, tr.after) == (before, after) and tr.action in RELEASES
        for a in xs
    }
    if not attempts:
        return ""
    if max(attempts) < max_receives:
        return "release, attempt below max_receives"
    if min(attempts) == max(attempts) == max_receives:
        return "release, attempt = max_receives"
    return "release"


def render_lifecycle(
    edges: dict[Transition, set[int]],
    bounds: Bounds = LIFECYCLE_BOUNDS,
    system_bounds: SystemBounds = LIFECYCLE_SYSTEM_BOUNDS,
) -> str:
    """The Mermaid ``stateDiagram-v2``: one arrow per (before, after), its actions as the label.

    The system spec's edges (:func:`system_transitions` at ``system_bounds``) add the arrows
    into :data:`SYSTEM_STATES` from the states ``edges`` has, and the release into ``DEAD``
    says that it moves the message into the target when every death there was that move."""
    system = system_transitions(system_bounds)
    grouped: dict[tuple[str, str], list[str]] = defaultdict(list)
    for tr in edges:
        grouped[(tr.before, tr.after)].append(tr.action)
    shown = {tr.before for tr in edges} | {tr.after for tr in edges}
    for tr in sorted(system.edges):
        if tr.after in SYSTEM_STATES and tr.before in shown:
            grouped[(tr.before, tr.after)].append(tr.action)
    lines = [
        "stateDiagram-v2",
        "%% The lifecycle of one message, generated FROM THE SPEC by `python -m tools.diagrams`:",
        "%% every edge of spec.explore.explore(LIFECYCLE_BOUNDS) that changes the first id's",
        "%% message, projected to (its status before, action, status after), and the edges into",
        "%% AGED_OUT and MOVED of spec.system_explore.explore_system(LIFECYCLE_SYSTEM_BOUNDS),",
        "%% projected to each queue's entry of each id. Do not edit by hand.",
        f"%% {bounds}",
        f"%% {system_bounds}",
    ]
    key = _STATUS_ORDER.index
    for before, after in sorted(grouped, key=lambda p: (key(p[0]), key(p[1]))):
        actions = sorted(set(grouped[(before, after)]), key=_action_key)
        label = ", ".join(actions)
        if after in SYSTEM_GUARDS:
            label += f" ({SYSTEM_GUARDS[after]})"
        guard = _release_guard(edges, before, after, bounds.max_receives)
        if guard and all(a in RELEASES for a in actions):
            if after == Status.DEAD.value and system.moves:
                guard += f", {INTO_TARGET}"
            label += f" ({guard})"
        lines.append(f"    {before} --> {after} : {label}")
    for s in Status:
        if s.terminal:
            lines.append(f"    {s.value} --> {START}")
    return "\n".join(lines) + "\n"


# -- (b) the duplicate-delivery race, from TLC's counterexample -------------------------------


def _live(state: dict[str, Value], r: tuple[str, int]) -> bool:
    m = messages(state).get(r[0])
    return m is not None and m["status"] == "IN_FLIGHT" and m["attempt"] == r[1]


def _show(r: tuple[str, int]) -> str:
    return f"receipt ({r[0]}, {r[1]})"


def _tla(b: bool) -> str:
    return "TRUE" if b else "FALSE"


def render_race(steps: Sequence[TraceStep]) -> str:
    """The Mermaid ``sequenceDiagram`` that the trace's state changes imply, step by step."""
    consumers = sorted(held(steps[0].state))
    first, others = consumers[:1], consumers[1:]
    lines = [
        "sequenceDiagram",
        "%% The duplicate-delivery race, generated FROM TLC'S COUNTEREXAMPLE to ExactlyOnce",
        "%% (tla/ExactlyOnce.cfg, trace in docs/diagrams/exactly_once.trace) by",
        "%% `python -m tools.diagrams`. One block per TLC state. Do not edit by hand.",
        "    participant P as producer",
        *(f"    participant {c} as consumer {c}" for c in first),
        "    participant Q as queue",
        "    participant S as sweeper",
        *(f"    participant {c} as consumer {c}" for c in others),
    ]
    span = f"{consumers[0]},{consumers[-1]}"
    processed: dict[str, int] = defaultdict(int)
    for prev, step in itertools.pairwise(steps):
        a, b = prev.state, step.state
        lines.append(f"    %% State {step.number}: {step.action}")
        msgs_a, msgs_b = messages(a), messages(b)
        held_a, held_b = held(a), held(b)
        now = b["now"]
        if not isinstance(now, int):
            raise ValueError(f"state {step.number}: now is not an integer: {now!r}")
        if step.action == "Produce":
            for i in sorted(set(msgs_b) - set(msgs_a)):
                lines.append(f"    P->>Q: send({i})")
                lines.append(f"    Note over Q: {i} VISIBLE, attempt 0")
        elif step.action == "Consume":
            for c in consumers:
                r = held_b[c]
                if held_a[c] is None and r is not None:
                    d = deadline(msgs_b[r[0]])
                    vt = "None" if d is None else f"{d - now}"
                    lines.append(f"    {c}->>Q: receive(visibility_timeout={vt})")
                    lines.append(f"    Q-->>{c}: {r[0]}, attempt {r[1]}, {_show(r)}")
                    lines.append(f"    activate {c}")
                    lines.append(f"    Note over Q: {r[0]} IN_FLIGHT, deadline {d}")
        elif step.action == "Clock":
            due = [
                f"{c}'s deadline has passed, but its {_show(r)} is still live until the sweep"
                for c, r in held_b.items()
                if r is not None
                and _live(b, r)
                and (d := deadline(msgs_b[r[0]])) is not None
                and d <= now
            ]
            lines.append(f"    Note over {span}: time passes, now = {now}")
            lines.extend(f"    Note over {span}: {d}" for d in due)
        elif step.action == "Sweep":
            lines.append(f"    S->>Q: expire(now={now})")
            for i in sorted(msgs_b):
                before, after = msgs_a[i], msgs_b[i]
                if before["status"] == "IN_FLIGHT" and after["status"] != "IN_FLIGHT":
                    lines.append(
                        f"    Note over Q: {i} released to {after['status']}, "
                        f"attempt {after['attempt']} kept"
                    )
            for c, r in held_b.items():
                if r is not None and _live(a, r) and not _live(b, r):
                    lines.append(f"    Note over {c}: {_show(r)} is STALE from here on")
        elif step.action == "Finish":
            for c in consumers:
                r = held_a[c]
                if r is None or held_b[c] is not None:
                    continue
                deleted = (c, r, True) in finished(b)
                processed[r[0]] += 1
                nth = {1: "once", 2: "TWICE"}.get(processed[r[0]], f"{processed[r[0]]} times")
                lines.append(f"    Note over {c}: finishes the work on {r[0]}")
                lines.append(f"    {c}->>Q: delete({_show(r)})")
                lines.append(f"    Q-->>{c}: {_tla(deleted)}")
                lines.append(f"    deactivate {c}")
                if deleted:
                    lines.append(f"    Note over Q: {r[0]} DONE")
                else:
                    lines.append("    Note over Q: stale receipt, no-op: nothing changes")
                lines.append(f"    Note over {span}: {r[0]} has been processed {nth}")
        else:
            raise ValueError(f"state {step.number}: unknown action {step.action!r}")
    return "\n".join(lines) + "\n"


def run_race_trace() -> str:
    """Run TLC on the ``ExactlyOnce`` model and return its counterexample as TLC printed it.

    Raises :class:`tla.tlc.SetupError` without Java or TLC, ``RuntimeError`` if TLC does not
    find the expected violation.
    """
    (model,) = [m for m in discover() if m.name == RACE_MODEL]
    result = run_tlc(model.spec, model.cfg, check_deadlock=model.check_deadlock, timeout=300)
    if not model.met_by(result):
        raise RuntimeError(f"TLC on {RACE_MODEL}: expected {model.expected}, got {result.summary}")
    return result.trace()


# -- (c) the explorer page, from the spec's graphs and TLC's counterexamples ----------------------

#: The graphs of ``docs/explorer.html``. The standard queue's bounds reach every status
#: (a delay of 1 makes DELAYED, ``max_receives`` 2 makes DEAD, change_visibility to 0 and 2)
#: and the duplicate delivery (send, receive, tick, expire, receive again), without batches,
#: which would triple the buttons of a state. The FIFO queue's: one group ``a_b``, ``b`` a
#: producer's retry of ``a`` (one dedup id) with a window of 1, visibility timeouts 1 and
#: ``None``, so both FIFO counterexamples are paths of it.
EXPLORER_GRAPHS = (
    GraphSpec(
        "std",
        "standard queue",
        Bounds(max_receives=2, delays=(0, 1), extend_timeouts=(0, 2)),
    ),
    GraphSpec(
        "fifo",
        "FIFO queue",
        Bounds(
            fifo=True,
            max_attempt=2,
            visibility_timeouts=(1, None),
            max_time=2,
            groups=(("a", "b"),),
            dedup=(("a", "b"),),
            dedup_interval=1,
        ),
    ),
)


@dataclass(frozen=True)
class ExplorerTrace:
    """A counterexample on the explorer page: its key, TLC's model (a config name), the file it
    is kept in, a title and what a learner should look at. ``owned``: this tool refreshes the
    file from TLC (the other files have their own tests that keep them fresh)."""

    key: str
    model: str
    path: Path
    title: str
    about: str
    owned: bool = True


EXPLORER_TRACES = (
    ExplorerTrace(
        "exactly_once",
        RACE_MODEL,
        TRACE,
        "ExactlyOnce: the duplicate delivery",
        "Two consumers, one message, a visibility timeout of 1. c1 receives a (attempt 1) and "
        "is slow; the clock reaches its deadline; the sweeper re-queues a; c2 receives it "
        "(attempt 2). c1 finishes and deletes with its stale receipt (a,1): the spec makes no "
        "step. c2 deletes with (a,2). Both did the work: a is processed twice, and every "
        "invariant of the queue holds throughout: delivery is at-least-once, and exactly-once "
        "is the consumer's job (watch held and finished under the queue's state).",
    ),
    ExplorerTrace(
        "delete_by_id",
        "QueueDeleteById",
        DIAGRAMS / "delete_by_id.trace",
        "DeleteById: delete by message id, not by receipt (pitfall 3)",
        "The same race with a broken delete that finds the message by its id. At the last "
        "step c1's STALE receipt (a,1) deletes a, the copy c2 is working on as attempt 2. "
        "The queue ends where c2's delete(a,2) would have taken it, so no invariant of the "
        "queue's state can see the bug: TLC's StaleReceiptNeverActs is about who acted "
        "(finished: c1's receipt (a,1), deleted TRUE).",
    ),
    ExplorerTrace(
        "lost_wakeup",
        "ThreadedQueueWakeup",
        DIAGRAMS / "lost_wakeup.trace",
        "Lost wakeup: the sweeper re-queues without notifying (threaded)",
        "Bug = sweep_no_notify. The only consumer receives a, drops it and calls receive "
        "again, asleep on not_empty. The clock passes the deadline; the sweeper re-queues a "
        "and notifies no one: a is visible and every thread sleeps (DeadlockFree). impl.Queue "
        "notifies not_empty once per re-queued message.",
    ),
    ExplorerTrace(
        "lost_wakeup_notify_once",
        "ThreadedQueueWakeupNotifyOnce",
        DIAGRAMS / "lost_wakeup_notify_once.trace",
        "Lost wakeup: notify() where notify(n) is needed (threaded)",
        "Bug = sweep_notify_once. Two consumers each drop a delivery with the same deadline "
        "and sleep in receive; one sweep re-queues both messages and wakes one consumer: the "
        "other sleeps beside a visible message (ReceiversAwake).",
    ),
    ExplorerTrace(
        "fifo_retry_late",
        "QueueFifoRetryLate",
        DIAGRAMS / "fifo_retry_late.trace",
        "FIFO: a producer's retry after the dedup window is a new message",
        "b is a producer's retry of a (one dedup id), the window is 1. a is sent at time 0, "
        "received and deleted; at time 1 a's window has ended and the retry b is accepted as "
        "a new message and delivered: NoDuplicateFromRetry. Deduplication is a window, not a "
        "guarantee. (TLC's dedup record names the dedup set {a, b}; the explorer's, a_b.)",
        owned=False,
    ),
    ExplorerTrace(
        "fifo_slow_consumer",
        "QueueFifoSlowConsumer",
        DIAGRAMS / "fifo_slow_consumer.trace",
        "FIFO: a consumer slower than its timeout still processes twice",
        "ExactlyOnce's race on a FIFO queue: c1's receive locks a's group, its deadline "
        "passes, the sweeper releases a (unlocking the group), c2 receives and processes it, "
        "and c1's stale delete is a no-op after its work is done. (TLC's model has one id; "
        "the explorer's FIFO graph has two, b never sent here.)",
        owned=False,
    ),
    ExplorerTrace(
        "fifo_lost_wakeup",
        "ThreadedQueueFifoWakeup",
        DIAGRAMS / "fifo_lost_wakeup.trace",
        "FIFO lost wakeup: a delete unlocks a group without notifying (threaded)",
        "Bug = delete_no_notify. a and b share a group; c1 receives a, locking it; c2 finds "
        "b visible but locked and sleeps on not_empty; c1 deletes a, which unlocks the group, "
        "and wakes no receiver: c2 sleeps beside a deliverable message (ReceiversAwake). "
        "impl.FifoQueue._wake_group is the fix.",
    ),
)


def render_explorer(traces: dict[str, str], registry: Registry = REGISTRY) -> str:
    """The explorer page over :data:`EXPLORER_GRAPHS`, with each of :data:`EXPLORER_TRACES`
    read from ``traces`` (key -> TLC's text)."""
    cexs = [
        load_trace(traces[t.key], t.key, title=t.title, model=t.model, about=t.about)
        for t in EXPLORER_TRACES
    ]
    return page(EXPLORER_GRAPHS, cexs, registry, title="Queue state explorer")


def committed_traces() -> dict[str, str]:
    """Each explorer trace as committed, by key."""
    return {t.key: t.path.read_text(encoding="utf-8") for t in EXPLORER_TRACES}


def run_explorer_traces() -> dict[str, str]:
    """TLC's counterexample of each explorer trace this tool owns, run one model at a time
    (``SetupError`` without Java; ``RuntimeError`` if a model does not fail as expected)."""
    models = {m.name: m for m in discover()}
    out = {}
    for t in EXPLORER_TRACES:
        if not t.owned or t.key == "exactly_once":  # ExactlyOnce: run_race_trace
            continue
        model = models[t.model]
        result = run_tlc(model.spec, model.cfg, check_deadlock=model.check_deadlock, timeout=300)
        if not model.met_by(result):
            raise RuntimeError(f"TLC on {t.model}: expected {model.expected}, got {result.summary}")
        out[t.key] = result.trace()
    return out


# -- the walkthrough's fenced blocks -------------------------------------------------------------


def splice(doc: str, name: str, mermaid: str) -> str:
    """``doc`` with the block between ``<!-- BEGIN name -->`` and ``<!-- END name -->`` replaced
    by a fenced ``mermaid`` block of ``mermaid``. ``ValueError`` if the markers are missing."""
    pattern = re.compile(
        rf"(<!-- BEGIN {re.escape(name)} -->\n).*?(<!-- END {re.escape(name)} -->)", re.DOTALL
    )
    if not pattern.search(doc):
        raise ValueError(f"no '<!-- BEGIN {name} -->' ... '<!-- END {name} -->' markers")
    block = f"```mermaid\n{mermaid}```\n"
    return pattern.sub(lambda m: m.group(1) + block + m.group(2), doc, count=1)


def fenced(doc: str, name: str) -> str:
    """The Mermaid text between the markers ``name`` in ``doc`` (``ValueError`` if none)."""
    m = re.search(
        rf"<!-- BEGIN {re.escape(name)} -->\n```mermaid\n(.*?)```\n<!-- END {re.escape(name)} -->",
        doc,
        re.DOTALL,
    )
    if m is None:
        raise ValueError(f"no fenced mermaid block between the '{name}' markers")
    return m.group(1)


def generate(trace: str, traces: dict[str, str] | None = None) -> dict[Path, str]:
    """Every generated file's path and wanted contents, the race drawn from ``trace``; the
    explorer's other counterexamples from ``traces`` (key -> TLC's text; the committed files
    for the keys it lacks), each of them written back if it is one this tool owns."""
    lifecycle = render_lifecycle(lifecycle_transitions())
    race = render_race(parse_trace(trace))
    files = {LIFECYCLE: lifecycle, RACE: race, TRACE: trace}
    fresh = traces or {}
    every = {t.key: fresh.get(t.key) or t.path.read_text(encoding="utf-8") for t in EXPLORER_TRACES}
    every["exactly_once"] = trace
    for t in EXPLORER_TRACES:
        if t.owned and t.key in fresh:
            files[t.path] = fresh[t.key]
    files[EXPLORER] = render_explorer(every)
    if WALKTHROUGH.exists():
        doc = WALKTHROUGH.read_text(encoding="utf-8")
        files[WALKTHROUGH] = splice(splice(doc, "lifecycle", lifecycle), "duplicate_race", race)
    return files


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.diagrams", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--check", action="store_true", help="write nothing; 1 if a file is stale")
    parser.add_argument(
        "--no-tlc", action="store_true", help=f"draw the race from {TRACE.relative_to(ROOT)}"
    )
    args = parser.parse_args(argv)
    try:
        trace = TRACE.read_text(encoding="utf-8") if args.no_tlc else run_race_trace()
        traces = None if args.no_tlc else run_explorer_traces()
        files = generate(trace, traces)
    except (SetupError, RuntimeError, OSError) as e:
        print(f"python -m tools.diagrams: {e}", file=sys.stderr)
        return 2
    stale = []
    owned = {TRACE, *(t.path for t in EXPLORER_TRACES if t.owned)}
    for path, text in files.items():
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if path in owned and old is not None:
            # The trace names source lines and columns: compare what TLC found, not where.
            same = parse_trace(old) == parse_trace(text)
        else:
            same = old == text
        if same:
            continue
        stale.append(path)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{'stale' if args.check else 'wrote'} {path.relative_to(ROOT)}")
    if not stale:
        print("every diagram is up to date")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
