"""A Hypothesis strategy for harness scenarios: JSON objects in the format of contract section 4.

Purely random ops would almost never act on a live receipt or move the clock exactly onto a
deadline, which is where the interesting behaviour is. So the strategy builds a scenario op by op
while running it on the spec (:class:`model_tests.targets.ModelTarget`) as a guide, and biases
each draw by what the spec says is there: ``ack``/``retry``/``extend`` mostly name a live
delivery (but also stale, future and attempt-0 ones), ``cancel`` mostly names an accepted id,
and ``advance`` often lands exactly on the next deadline, or just before or after it. The spec
only guides the drawing; the tests compare the outputs of both targets, never with the guide.

Times are multiples of 1/4, so every clock sum and deadline is exact in binary floating point and
"exactly on the deadline" really is exact.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

import spec
from model_tests.scenario_format import op_table, parse_op, parse_scenario
from model_tests.targets import ModelTarget, apply

#: Every op name of the format (from the registry, then ``dead``, ``new``, ``use``);
#: :func:`scenarios` draws all of them.
OPS = tuple(op_table())

IDS = ("a", "b", "c", "d", "e")
PAYLOADS = ("", "A", "B", "x y", "~!")

#: Durations in quarters of a second: exact in binary floating point.
quarters = st.integers(min_value=0, max_value=16).map(lambda n: n / 4)
positive_quarters = st.integers(min_value=1, max_value=16).map(lambda n: n / 4)


def _json_time(t: float) -> int | float:
    """Whole numbers as JSON integers, so scenarios also exercise integer times."""
    return int(t) if t.is_integer() else t


@st.composite
def _advance(draw: st.DrawFn, model: ModelTarget) -> list[Any]:
    """An ``advance`` biased to land exactly on, just before or just after the next deadline."""
    deadlines = [d for s in model.states if (d := spec.next_deadline(s)) is not None]
    if deadlines and draw(st.integers(0, 3)) > 0:
        gap = min(deadlines) - model.now
        dt = max(0.0, gap + draw(st.sampled_from((0.0, 0.0, -0.25, 0.25))))
    else:
        dt = draw(quarters)
    return ["advance", _json_time(dt)]


@st.composite
def _receipt_args(draw: st.DrawFn, model: ModelTarget) -> tuple[str, int]:
    """(id, attempt): usually a live delivery of the current queue, else anything nearby."""
    state = model.states[model.current]
    live = [(m.id, m.attempt) for m in state.messages if m.status is spec.Status.IN_FLIGHT]
    if live and draw(st.integers(0, 3)) > 0:
        id, attempt = draw(st.sampled_from(live))
        return id, max(0, attempt + draw(st.sampled_from((0, 0, 0, -1, 1))))
    return draw(st.sampled_from(IDS)), draw(st.integers(0, 4))


@st.composite
def _op(draw: st.DrawFn, model: ModelTarget) -> list[Any]:
    name = draw(
        st.sampled_from(
            ("enqueue",) * 4
            + ("reserve",) * 4
            + ("ack", "ack", "retry", "extend", "cancel")
            + ("advance",) * 3
            + ("dead", "new", "use")
        )
    )
    if name == "enqueue":
        return ["enqueue", draw(st.sampled_from(IDS)), draw(st.sampled_from(PAYLOADS))]
    if name == "reserve":
        form = draw(st.integers(0, 3))
        if form == 0:
            return ["reserve"] if draw(st.booleans()) else ["reserve", None]
        return ["reserve"] if form == 1 else ["reserve", _json_time(draw(quarters))]
    if name in ("ack", "retry"):
        return [name, *draw(_receipt_args(model))]
    if name == "extend":
        id, attempt = draw(_receipt_args(model))
        return ["extend", id, attempt, _json_time(draw(quarters))]
    if name == "cancel":
        accepted = sorted(model.states[model.current].ids())
        pick_accepted = draw(st.booleans())
        if accepted and pick_accepted:
            return ["cancel", draw(st.sampled_from(accepted))]
        return ["cancel", draw(st.sampled_from(IDS))]
    if name == "advance":
        return draw(_advance(model))
    if name == "new":
        return ["new"] if len(model.states) < 4 else ["dead"]
    if name == "use":
        return ["use", draw(st.integers(0, len(model.states) - 1))]
    return ["dead"]


@st.composite
def scenarios(draw: st.DrawFn, max_ops: int = 30) -> dict[str, Any]:
    """A valid scenario object (as decoded JSON) of up to ``max_ops`` ops."""
    scenario: dict[str, Any] = {"capacity": draw(st.none() | st.integers(0, 4))}
    vt = draw(st.sampled_from(("absent", None, 0, 0.5, 1, 2, 3)))
    if vt != "absent":
        scenario["visibility_timeout"] = vt
    k = draw(st.sampled_from(("absent", None, 1, 2, 3)))
    if k != "absent":
        scenario["max_receives"] = k
    model = ModelTarget(parse_scenario({**scenario, "ops": []}).config)
    ops: list[list[Any]] = []
    for _ in range(draw(st.integers(0, max_ops))):
        raw = draw(_op(model))
        apply(model, parse_op(raw, queues=len(model.states)))
        ops.append(raw)
    scenario["ops"] = ops
    return scenario
