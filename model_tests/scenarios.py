"""A Hypothesis strategy for harness scenarios: JSON objects in the format of contract section 4.

Purely random ops would almost never act on a live receipt or move the clock exactly onto a
deadline, which is where the interesting behaviour is. So the strategy builds a scenario op by op
while running it on the spec (:class:`model_tests.targets.ModelTarget`) as a guide, and biases
each draw by what the spec says is there: ``ack``/``retry``/``extend`` mostly name a live
delivery (but also stale, future and attempt-0 ones), ``cancel`` mostly names an accepted id,
and ``advance`` often lands exactly on the next timer (a deadline or a delay), or just before or
after it. Batches are mostly small (1 to 3 entries, sometimes up to the limit of 10), their
entries drawn like the single ops' (an ``enqueue_batch`` sometimes repeats an id, or does not
fit); ``purge`` is drawn as often as ``cancel``, one op in 26. The spec only guides the drawing;
the tests compare the outputs of both targets, never with the guide. The conformance kit's SQS
profile (:mod:`model_tests.conformance.profile`) draws its ops the same way, through
:func:`guided_ops`, :func:`own_op` and :func:`enqueue_args`.

FIFO scenarios (``scenarios(fifo=True)``, contract section 2b) send with a group from
:data:`GROUPS` and, half the time, a dedup id from :data:`DEDUPS`; their dedup interval is short
(1 to 3 s, sometimes the default 300) and ``advance`` also aims at the end of a dedup window, so
duplicates, windows that end and ids sent again after them all occur. An ``enqueue_batch`` never
repeats a dedup id (that is an invalid scenario).

Times are multiples of 1/4, so every clock sum and deadline is exact in binary floating point and
"exactly on the deadline" really is exact.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st

import spec
from model_tests.scenario_format import MAX_BATCH, op_table, parse_op, parse_scenario
from model_tests.targets import ModelTarget, apply, model_target

#: Every op name of the format (from the registry, then ``dead``, ``new``, ``use``);
#: :func:`scenarios` draws all of them.
OPS = tuple(op_table())

IDS = ("a", "b", "c", "d", "e")
PAYLOADS = ("", "A", "B", "x y", "~!")
#: The message groups and dedup ids of FIFO scenarios.
GROUPS = ("g", "h", "k")
FIFO_IDS = ("f", "m", "n")
DEDUPS = ("x", "y")

#: Durations in quarters of a second: exact in binary floating point.
quarters = st.integers(min_value=0, max_value=16).map(lambda n: n / 4)
positive_quarters = st.integers(min_value=1, max_value=16).map(lambda n: n / 4)


def _json_time(t: float) -> int | float:
    """Whole numbers as JSON integers, so scenarios also exercise integer times."""
    return int(t) if t.is_integer() else t


def timers(states: list[spec.State]) -> list[float]:
    """When each running timer of ``states`` is due: deadlines and delays alike, and on FIFO
    queues the end of each dedup window (no timer, but where behaviour changes)."""
    return [
        t for s in states for m in s.messages for t in (m.deadline, m.visible_at) if t is not None
    ] + [at + s.config.dedup_interval for s in states for _, _, at in s.dedup]


@st.composite
def _advance(draw: st.DrawFn, model: ModelTarget) -> list[Any]:
    """An ``advance`` biased to land exactly on, just before or just after the next timer."""
    deadlines = timers(model.states)
    if deadlines and draw(st.integers(0, 3)) > 0:
        gap = min(deadlines) - model.now
        dt = max(0.0, gap + draw(st.sampled_from((0.0, 0.0, -0.25, 0.25))))
    else:
        dt = draw(quarters)
    return ["advance", _json_time(dt)]


@st.composite
def receipt_args(draw: st.DrawFn, model: ModelTarget) -> tuple[str, int]:
    """(id, attempt): usually a live delivery of the current queue, else anything nearby."""
    state = model.states[model.current]
    live = [(m.id, m.attempt) for m in state.messages if m.status is spec.Status.IN_FLIGHT]
    if live and draw(st.integers(0, 3)) > 0:
        id, attempt = draw(st.sampled_from(live))
        return id, max(0, attempt + draw(st.sampled_from((0, 0, 0, -1, 1))))
    return draw(st.sampled_from(IDS)), draw(st.integers(0, 4))


@st.composite
def _message(draw: st.DrawFn, fifo: bool = False, dedups: tuple[str, ...] = DEDUPS) -> list[Any]:
    """``id, payload``, and one time in three ``{"delay": d}`` (0 included) or ``{}``; on a FIFO
    queue ``{"group": g}``, half the time with a ``"dedup"`` from ``dedups``."""
    # A FIFO queue draws from more ids: it needs several messages at once to show its groups.
    id = draw(st.sampled_from(IDS + FIFO_IDS if fifo else IDS))
    return enqueue_args(draw, id, fifo, dedups, lambda d: _json_time(d(quarters)))


def enqueue_args(
    draw: st.DrawFn,
    id: str,
    fifo: bool,
    dedups: tuple[str, ...],
    delay: Callable[[st.DrawFn], int | float],
) -> list[Any]:
    """An ``enqueue``'s arguments: ``id``, a payload, and one time in three ``{"delay": d}``
    (``d = delay(draw)``) or ``{}``; on a FIFO queue ``{"group": g}`` instead, half the time
    with a ``"dedup"`` from ``dedups``."""
    out: list[Any] = [id, draw(st.sampled_from(PAYLOADS))]
    if fifo:
        opts: dict[str, str] = {"group": draw(st.sampled_from(GROUPS))}
        with_dedup = draw(st.booleans())
        if dedups and with_dedup:
            opts["dedup"] = draw(st.sampled_from(dedups))
        return [*out, opts]
    form = draw(st.integers(0, 5))
    if form == 0:
        out.append({"delay": delay(draw)})
    elif form == 1:
        out.append({})
    return out


def batch_size(draw: st.DrawFn) -> int:
    """A batch's size: mostly 1 to 3, sometimes up to :data:`MAX_BATCH`."""
    return draw(st.integers(1, 3) if draw(st.integers(0, 4)) else st.integers(1, MAX_BATCH))


def _fifo_batch(draw: st.DrawFn, size: int) -> list[list[Any]]:
    """A FIFO ``enqueue_batch``'s entries: no dedup id twice (ids may repeat, beside a
    duplicate entry or not)."""
    entries: list[list[Any]] = []
    for _ in range(size):
        used = {e[2].get("dedup") for e in entries}
        entries.append(draw(_message(True, tuple(d for d in DEDUPS if d not in used))))
    return entries


@st.composite
def _op(draw: st.DrawFn, model: ModelTarget) -> list[Any]:
    fifo = model.states[0].config.fifo
    # A FIFO queue shows its groups only with several messages held at once: more sends,
    # fewer switches to a fresh queue.
    name = draw(
        st.sampled_from(
            ("enqueue",) * (8 if fifo else 4)
            + ("reserve",) * 4
            + ("ack", "ack", "retry", "extend", "cancel")
            + ("advance",) * 3
            + (("dead", "new", "use") if not fifo or draw(st.integers(0, 3)) == 0 else ("dead",))
            + ("enqueue_batch", "enqueue_batch", "reserve_batch", "reserve_batch")
            + ("ack_batch", "extend_batch", "purge")
        )
    )
    if name == "enqueue":
        return ["enqueue", *draw(_message(fifo))]
    if name == "enqueue_batch":
        if fifo:
            return ["enqueue_batch", _fifo_batch(draw, batch_size(draw))]
        return ["enqueue_batch", [draw(_message()) for _ in range(batch_size(draw))]]
    if name == "reserve":
        form = draw(st.integers(0, 3))
        if form == 0:
            return ["reserve"] if draw(st.booleans()) else ["reserve", None]
        return ["reserve"] if form == 1 else ["reserve", _json_time(draw(quarters))]
    if name == "reserve_batch":
        n = batch_size(draw)
        form = draw(st.integers(0, 3))
        if form == 0:
            return ["reserve_batch", n, None]
        return ["reserve_batch", n] if form == 1 else ["reserve_batch", n, draw(_vt())]
    if name == "ack_batch":
        return ["ack_batch", [list(draw(receipt_args(model))) for _ in range(batch_size(draw))]]
    if name == "extend_batch":
        return [
            "extend_batch",
            [
                [*draw(receipt_args(model)), _json_time(draw(quarters))]
                for _ in range(batch_size(draw))
            ],
        ]
    if name == "purge":
        return ["purge"]
    if name in ("ack", "retry"):
        return [name, *draw(receipt_args(model))]
    if name == "extend":
        id, attempt = draw(receipt_args(model))
        return ["extend", id, attempt, _json_time(draw(quarters))]
    if name == "cancel":
        accepted = sorted(model.states[model.current].ids())
        pick_accepted = draw(st.booleans())
        if accepted and pick_accepted:
            return ["cancel", draw(st.sampled_from(accepted))]
        return ["cancel", draw(st.sampled_from(IDS))]
    if name == "advance":
        return draw(_advance(model))
    return own_op(draw, name, model)


def own_op(draw: st.DrawFn, name: str, model: ModelTarget) -> list[Any]:
    """One of the format's own ops, by ``name``: ``["new"]`` while ``model`` has fewer than 4
    queues (else ``["dead"]``), ``["use", i]`` naming any queue it has, and ``["dead"]`` for
    any other name."""
    if name == "new":
        return ["new"] if len(model.states) < 4 else ["dead"]
    if name == "use":
        return ["use", draw(st.integers(0, len(model.states) - 1))]
    return ["dead"]


@st.composite
def _vt(draw: st.DrawFn) -> int | float:
    return _json_time(draw(quarters))


@st.composite
def scenarios(draw: st.DrawFn, max_ops: int = 30, fifo: bool = False) -> dict[str, Any]:
    """A valid scenario object (as decoded JSON) of up to ``max_ops`` ops; a FIFO queue's if
    ``fifo``."""
    # FIFO scenarios need several messages held at once (one group locked, another group's
    # message behind it), so their queues are roomier and their deliveries last longer.
    capacity = st.sampled_from((None, None, 2, 3, 4)) if fifo else st.none() | st.integers(0, 4)
    scenario: dict[str, Any] = {"capacity": draw(capacity)}
    if fifo:
        scenario["fifo"] = True
        interval = draw(st.sampled_from(("absent", 1, 2, 3, 2.5)))
        if interval != "absent":
            scenario["dedup_interval"] = interval
    vts = ("absent", None, 1, 2, 3) if fifo else ("absent", None, 0, 0.5, 1, 2, 3)
    vt = draw(st.sampled_from(vts))
    if vt != "absent":
        scenario["visibility_timeout"] = vt
    k = draw(st.sampled_from(("absent", None, 1, 2, 3)))
    if k != "absent":
        scenario["max_receives"] = k
    delay = draw(st.sampled_from(("absent", "absent", 0, 0.5, 1, 2)))
    if delay != "absent":
        scenario["delay"] = delay
    scenario["ops"] = guided_ops(draw, scenario, _op, max_ops)
    return scenario


def guided_ops(
    draw: st.DrawFn,
    scenario: Mapping[str, Any],
    op: Callable[[ModelTarget], st.SearchStrategy[list[Any]]],
    max_ops: int,
) -> list[list[Any]]:
    """Up to ``max_ops`` ops for ``scenario`` (its queue settings; its ops, if any, are not
    looked at), each drawn from ``op(model)``: ``model`` is the spec, run on the ops drawn so
    far, as the guide."""
    # Keep the draws (which strategies, in which order) as they are: a seed must go on
    # generating the same scenarios, since docs/conformance.md and its test keep the verdicts
    # on the scenarios of one seed.
    model = ModelTarget(parse_scenario({**scenario, "ops": []}).config)
    fifo = model.states[0].config.fifo
    ops: list[list[Any]] = []
    for _ in range(draw(st.integers(0, max_ops))):
        raw = draw(op(model))
        apply(model, parse_op(raw, queues=len(model.states), fifo=fifo))
        ops.append(raw)
    return ops


# -- systems of queues (contract section 7): a dead-letter target, redrive, retention --------------


_ACTIVE = frozenset({spec.Status.DELAYED, spec.Status.VISIBLE, spec.Status.IN_FLIGHT})


def system_timers(model: ModelTarget) -> list[float]:
    """:func:`timers`, and each retention timer (``enqueued_at + retention`` of an active
    message) and running redrive tick of a system's model target."""
    out = timers(model.states)
    for s in model.states:
        r = s.config.retention
        if r is not None:
            out += [m.enqueued_at + r for m in s.messages if m.status in _ACTIVE]
    system = getattr(model, "system", None)
    if system is not None:
        out += [t.next_tick for t in system.tasks if t.next_tick is not None]
    return out


@st.composite
def _system_op(draw: st.DrawFn, model: ModelTarget) -> list[Any]:
    """One op of a system scenario: the one-queue ops (queue 0, 1 or a new one), more
    switches between queues 0 and 1, advances aimed at every timer, the redrive ops."""
    form = draw(st.integers(0, 9))
    if form == 0:
        return ["use", draw(st.integers(0, min(1, len(model.states) - 1)))]
    if form == 1:
        opts: dict[str, Any] = {}
        if draw(st.booleans()):
            opts["rate"] = draw(st.sampled_from((0.5, 1, 2, 4)))
        if draw(st.integers(0, 3)) == 0:
            opts["to"] = 0
        return ["redrive", opts] if opts else ["redrive"]
    if form in (2, 3):
        return [
            draw(st.sampled_from(("redrive_cancel", "redrive_status", "redrive_status", "aged")))
        ]
    if form == 4:
        return ["reserve"]
    if form in (5, 6):
        due = system_timers(model)
        if due and draw(st.integers(0, 3)) > 0:
            gap = max(0.0, min(due) - model.now)
            return ["advance", _json_time(max(0.0, gap + draw(st.sampled_from((0.0, 0.25)))))]
        return ["advance", _json_time(draw(quarters))]
    return draw(_op(model))


@st.composite
def system_scenarios(draw: st.DrawFn, max_ops: int = 30, fifo: bool = False) -> dict[str, Any]:
    """A valid scenario with ``"dead_letter"`` (queue 1) and, half the time, ``"retention"``
    on either queue; a FIFO system's if ``fifo``. (Its own strategy: :func:`scenarios`'s draws
    stay as they are, for the docs' seed.)"""
    scenario: dict[str, Any] = {
        "capacity": draw(st.sampled_from((None, None, 2, 3))),
        "visibility_timeout": draw(st.sampled_from((1, 2, 3))),
        "max_receives": draw(st.sampled_from((1, 1, 2))),
    }
    if fifo:
        scenario["fifo"] = True
        scenario["dedup_interval"] = draw(st.sampled_from((1, 2, 300)))
    if draw(st.booleans()):
        scenario["retention"] = draw(st.sampled_from((2, 3, 5)))
    dead_letter: dict[str, Any] = {}
    if draw(st.booleans()):
        dead_letter["retention"] = draw(st.sampled_from((2, 4, 6)))
    if draw(st.booleans()):
        dead_letter["visibility_timeout"] = draw(st.sampled_from((1, 2)))
    scenario["dead_letter"] = dead_letter
    model = model_target(parse_scenario({**scenario, "ops": []}).config)
    ops: list[list[Any]] = []
    queues = len(model.states)
    # Most scenarios start with dead letters in queue 1: a few sends, all received, and the
    # deadline passed (they die at once with max_receives 1); a redrive then has a scope.
    prefix: list[list[Any]] = []
    if draw(st.integers(0, 3)) > 0:
        ids = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=3, unique=True))
        for id in ids:
            prefix.append(["enqueue", *enqueue_args(draw, id, fifo, (), lambda d: 0)])
        prefix += [["reserve_batch", len(ids)], ["advance", scenario["visibility_timeout"]]]
    for _ in range(draw(st.integers(0, max_ops))):
        raw = prefix.pop(0) if prefix else draw(_system_op(model))
        op = parse_op(raw, queues=queues, fifo=fifo, dead_letter=True)
        apply(model, op)
        queues = len(model.states)
        ops.append(raw)
    scenario["ops"] = ops
    return scenario
