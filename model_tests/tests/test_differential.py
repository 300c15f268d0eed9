"""Differential test: thousands of generated scenarios through both harness targets, same output.

Each scenario goes the whole way a user's would: encoded as one JSON line, parsed by the
harness's parser, run on the spec and on ``impl.Queue``. Any difference in any op's output is a
bug in one of them (or in the contract's reading of one of them).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings

from model_tests.scenario_format import Invoke, parse_line
from model_tests.scenarios import OPS, scenarios
from model_tests.targets import ModelTarget, apply, run_scenario


@settings(
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(scenarios())
def test_model_and_impl_give_identical_outputs(scenario: dict[str, Any]) -> None:
    parsed = parse_line(json.dumps(scenario))
    assert run_scenario(parsed, "impl") == run_scenario(parsed, "model")


def test_the_strategy_reaches_every_op_and_exact_deadlines() -> None:
    """The generator must actually produce what the differential test claims to cover."""
    ops: Counter[str] = Counter()
    landings: Counter[str] = Counter()

    # A fixed seed: this checks the generator, and must not fail on an unlucky draw.
    @settings(max_examples=300, deadline=None, database=None, derandomize=True)
    @given(scenarios())
    def collect(scenario: dict[str, Any]) -> None:
        parsed = parse_line(json.dumps(scenario))
        model = ModelTarget(parsed.config)
        for raw, op in zip(scenario["ops"], parsed.ops, strict=True):
            ops[raw[0]] += 1
            if isinstance(op, Invoke) and op.name == "advance":
                deadlines = {
                    m.deadline for s in model.states for m in s.messages if m.deadline is not None
                }
                (dt,) = op.args
                assert isinstance(dt, float)
                if model.now + dt in deadlines:
                    landings["exact"] += 1
            result = apply(model, op)
            if raw[0] in ("ack", "retry", "extend") and result is True:
                landings["live receipt"] += 1
            if raw[0] == "reserve" and isinstance(result, list) and result[2] != 1:
                landings["redelivery"] += 1
        if any(s.dead for s in model.states):
            landings["dead letter"] += 1

    collect()
    assert set(ops) == set(OPS), f"ops never drawn: {set(OPS) - set(ops)}"
    for what in ("exact", "live receipt", "redelivery", "dead letter"):
        assert landings[what] >= 5, f"only {landings[what]} x {what!r} in 300 scenarios"
