"""The conformance kit's relaxed oracle, shrinker and report (issue 16, items 3-5).

First without any SQS endpoint: hand-written (scenario, outputs) pairs, one crafted divergence
per relaxation (the relaxation is needed for it, and enough), explanations, an impossible output,
the shrinker, and the project's own mutants run through targets. Then on moto in-process and on a
``ThreadedMotoServer``: probes of the behaviours the issue measured, the kit's verdicts for the
seed of ``docs/conformance.md`` (so a moto upgrade that changes behaviour fails here), and that
page's freshness.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from impl import Queue
from model_tests import mutants
from model_tests.conformance import broken, oracle
from model_tests.conformance.oracle import (
    NO_VERDICT,
    PROFILES,
    RELAXATIONS,
    Relaxation,
    drain_ops,
    explain,
    json_line,
    judge,
    shrink,
    to_json,
    with_drain,
)
from model_tests.conformance.profile import sqs_scenarios
from model_tests.conformance.report import (
    PROBES,
    Finding,
    KitRun,
    generate_scenarios,
    group_key,
    markdown,
    probe_scenario,
    run_kit,
    section_anchor,
    summary,
)
from model_tests.scenario_format import QueueConfig, Scenario, parse_scenario
from model_tests.scenarios import scenarios
from model_tests.targets import ImplTarget, Output, run_scenario

R = Relaxation
DOCS = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"


def _mutant(cls: type[Queue[str]]) -> Callable[[QueueConfig], ImplTarget]:
    """A target that runs the scenario on the mutant queue class ``cls``."""
    return functools.partial(ImplTarget, queue_class=cls)


# =============================================================================================
# The model's own outputs are accepted
# =============================================================================================


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(scenarios())
def test_conformance_model_outputs_are_accepted_strictly_and_relaxed(sc: dict[str, Any]) -> None:
    outputs = run_scenario(sc, "model")
    assert judge(sc, outputs).accepted
    # Every relaxation only adds behaviours: the spec's own stay accepted.
    assert judge(sc, outputs, RELAXATIONS).accepted
    assert explain(sc, outputs).conforms
    # The model drains: nothing it accepted is missing after the drain.
    drained = run_scenario(with_drain(sc), "model")
    assert judge(sc, drained).accepted


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(scenarios(fifo=True))
def test_conformance_model_fifo_outputs_are_accepted(sc: dict[str, Any]) -> None:
    outputs = run_scenario(sc, "model")
    assert judge(sc, outputs).accepted
    assert judge(sc, outputs, RELAXATIONS).accepted
    drained = run_scenario(with_drain(sc), "model")
    assert judge(sc, drained).accepted


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(scenarios() | scenarios(fifo=True))
def test_conformance_to_json_round_trips(sc: dict[str, Any]) -> None:
    parsed = parse_scenario(sc)
    assert parse_scenario(to_json(parsed)) == parsed
    assert parse_scenario(json.loads(json_line(parsed))) == parsed


# =============================================================================================
# One crafted divergence per relaxation: needed, and enough
# =============================================================================================

#: The probes of :mod:`report` by what they show (the crafted divergences reuse two of them).
PROBE = dict(PROBES)
STALE_DELETE = PROBE["a stale delete after the redelivery deletes the redelivered copy"]
VISIBLE_CHANGE = PROBE["a visibility change of a visible message hides it"]
#: Two messages, the first delivered and released: the spec's redelivery order matters.
TWO_THEN_REDELIVER: list[Any] = [
    ["enqueue", "a", "A"],
    ["enqueue", "b", "B"],
    ["reserve"],
    ["advance", 2],
    ["reserve"],
]

#: (relaxation, scenario, outputs an SQS endpoint may give, the op where the spec disagrees).
CRAFTED: list[tuple[Relaxation, dict[str, Any], list[Output], int]] = [
    (
        # Best-effort order: b before a.
        R.ANY_ORDER,
        probe_scenario(TWO_THEN_REDELIVER[:3], visibility_timeout=30),
        [True, True, ["b", "B", 1]],
        2,
    ),
    (
        # a delivered again while its first delivery is still in flight.
        R.DUPLICATES,
        probe_scenario(
            [["enqueue", "a", "A"], ["reserve"], ["reserve"], ["ack", "a", 1]],
            visibility_timeout=30,
        ),
        [True, ["a", "A", 1], ["a", "A", 2], False],
        2,
    ),
    (
        # The first seed's pitfall 3, as moto does it: the stale receipt deletes the redelivery.
        R.STALE_HANDLE_ACTS,
        STALE_DELETE,
        [True, ["a", "A", 1], None, ["a", "A", 2], True, False],
        4,
    ),
    (
        # A visibility change through the receipt of a released (visible) message hides it.
        R.VISIBLE_CHANGE_HIDES,
        VISIBLE_CHANGE,
        [True, ["a", "A", 1], None, True, None, None, ["a", "A", 2]],
        3,
    ),
    (
        # Dead-lettered only at the next receive, not when the deadline passed.
        R.DEAD_LETTER_LAGS,
        PROBE["dead-lettering happens on the next receive, not at the deadline"],
        [True, ["a", "A", 1], None, [], None, ["a"]],
        3,
    ),
    (
        # SQS answers a deduplicated send with success; the message is still not delivered.
        R.DEDUP_UNREPORTED,
        probe_scenario(
            [
                ["enqueue", "a", "A", {"group": "g", "dedup": "x"}],
                ["enqueue", "b", "B", {"group": "g", "dedup": "x"}],
                ["reserve"],
                ["ack", "a", 1],
                ["reserve"],
            ],
            fifo=True,
            visibility_timeout=30,
        ),
        [True, True, ["a", "A", 1], True, None],
        1,
    ),
    (
        # A short poll sampled the server holding a only, then the next request returned b.
        R.SHORT_POLL_SAMPLES,
        probe_scenario(
            [
                ["enqueue", "a", "A"],
                ["enqueue", "b", "B"],
                ["reserve_batch", 2],
                ["reserve_batch", 2],
            ],
            visibility_timeout=30,
        ),
        [True, True, [["a", "A", 1]], [["b", "B", 1]]],
        2,
    ),
]

#: What a combination of others also explains: a hide shows only as receives that come back
#: empty, which a short poll explains too, once the stale change's success is explained.
SUBSUMED: dict[Relaxation, list[Relaxation]] = {
    R.VISIBLE_CHANGE_HIDES: [R.STALE_HANDLE_ACTS, R.SHORT_POLL_SAMPLES],
}


@pytest.mark.parametrize(("relaxation", "sc", "outputs", "at"), CRAFTED, ids=lambda x: str(x))
def test_conformance_each_relaxation_is_needed_and_enough(
    relaxation: Relaxation, sc: dict[str, Any], outputs: list[Output], at: int
) -> None:
    strict = judge(sc, outputs)
    assert not strict.accepted
    assert strict.op_index == at
    assert strict.op == sc["ops"][at]
    assert strict.observed == outputs[at]
    # Enough: this one relaxation alone explains the run.
    assert judge(sc, outputs, [relaxation]).accepted
    # Needed: every other relaxation together does not; or (SUBSUMED) only a larger set of
    # others does, so this one is still the smallest explanation.
    others = [r for r in RELAXATIONS if r is not relaxation]
    if relaxation in SUBSUMED:
        assert judge(sc, outputs, SUBSUMED[relaxation]).accepted
        assert not any(judge(sc, outputs, [r]).accepted for r in others)
    else:
        assert not judge(sc, outputs, others).accepted
    e = explain(sc, outputs)
    assert e.sets == (frozenset({relaxation}),)
    assert e.key == relaxation.name


def test_conformance_verdict_names_the_op_and_what_was_allowed() -> None:
    _, sc, outputs, _ = CRAFTED[2]
    v = judge(sc, outputs)
    assert (v.op_index, v.op, v.observed, v.allowed) == (4, ["ack", "a", 1], True, (False,))
    assert 'at op 4 ["ack","a",1]: observed true, allowed false' in str(v)
    # With the relaxation both answers are allowed there; an impossible output elsewhere is
    # reported where it happens, with what the relaxed model allowed there.
    v = judge(sc, outputs, [R.STALE_HANDLE_ACTS])
    assert v.accepted and str(v) == "accepted (STALE_HANDLE_ACTS)"
    bad = [*outputs[:3], ["a", "A", 3], *outputs[4:]]  # an attempt skipped
    v = judge(sc, bad, [R.STALE_HANDLE_ACTS])
    assert (v.op_index, v.observed, v.allowed) == (3, ["a", "A", 3], (["a", "A", 2],))


def test_conformance_explain_finds_the_smallest_set() -> None:
    # Out of order (b first), then a stale delete that acts: both relaxations are needed.
    sc = probe_scenario([*TWO_THEN_REDELIVER, ["ack", "b", 1], ["reserve"]])
    outputs: list[Output] = [True, True, ["b", "B", 1], None, ["b", "B", 2], True, ["a", "A", 1]]
    e = explain(sc, outputs)
    assert e.sets == (frozenset({R.ANY_ORDER, R.STALE_HANDLE_ACTS}),)
    assert e.key == "ANY_ORDER+STALE_HANDLE_ACTS"
    assert not judge(sc, outputs, [R.ANY_ORDER]).accepted
    assert not judge(sc, outputs, [R.STALE_HANDLE_ACTS]).accepted
    assert PROFILES["sqs-standard"].admits(e)
    assert not PROFILES["sqs-fifo"].admits(e)
    assert not PROFILES["strict"].admits(e)


def test_conformance_alternative_explanations_are_all_named() -> None:
    # A visibility change through the receipt of a released message answers true and changes
    # nothing visible here: either a stale handle that "succeeds" or one that hides (for 0 s).
    sc = probe_scenario([["enqueue", "a", "A"], ["reserve"], ["advance", 2], ["retry", "a", 1]])
    e = explain(sc, [True, ["a", "A", 1], None, True])
    assert e.sets == (
        frozenset({R.STALE_HANDLE_ACTS}),
        frozenset({R.VISIBLE_CHANGE_HIDES}),
    )
    assert e.key == "STALE_HANDLE_ACTS | VISIBLE_CHANGE_HIDES"


@pytest.mark.parametrize(
    ("outputs", "at"),
    [
        # A message that was never sent.
        ([True, ["z", "Z", 1]], 1),
        # The right message with the wrong attempt.
        ([True, ["a", "A", 2]], 1),
        # The right message with another payload.
        ([True, ["a", "B", 1]], 1),
    ],
)
def test_conformance_impossible_outputs_are_unexplained(outputs: list[Output], at: int) -> None:
    sc = probe_scenario([["enqueue", "a", "A"], ["reserve"]], visibility_timeout=30)
    e = explain(sc, outputs)
    assert e.unexplained and e.key == "unexplained"
    assert e.relaxed.op_index == at
    assert e.relaxed.allowed == (["a", "A", 1],)
    assert not any(p.admits(e) for p in PROFILES.values())


def test_conformance_an_empty_receive_is_a_short_poll() -> None:
    # Nothing delivered although a is visible: only a short poll that sampled no server
    # holding a explains it, in both SQS profiles (AWS: "FIFO or standard").
    sc = probe_scenario([["enqueue", "a", "A"], ["reserve"], ["reserve"]], visibility_timeout=30)
    outputs: list[Output] = [True, None, ["a", "A", 1]]
    others = [r for r in RELAXATIONS if r is not R.SHORT_POLL_SAMPLES]
    assert not judge(sc, outputs, others).accepted
    e = explain(sc, outputs)
    assert e.key == "SHORT_POLL_SAMPLES"
    assert PROFILES["sqs-standard"].admits(e) and PROFILES["sqs-fifo"].admits(e)
    assert not PROFILES["strict"].admits(e)
    fifo = probe_scenario(
        [["enqueue", "a", "A", {"group": "g"}], ["reserve"], ["reserve"]],
        fifo=True,
        visibility_timeout=30,
    )
    assert PROFILES["sqs-fifo"].admits(explain(fifo, outputs))
    # Fewer is not other: on a FIFO queue the sample is still the group's head (without
    # ANY_ORDER), and a short poll never delivers more than the model.
    fifo_two = probe_scenario(
        [
            ["enqueue", "a", "A", {"group": "g"}],
            ["enqueue", "b", "B", {"group": "g"}],
            ["reserve_batch", 2],
        ],
        fifo=True,
        visibility_timeout=30,
    )
    assert judge(fifo_two, [True, True, [["a", "A", 1]]], [R.SHORT_POLL_SAMPLES]).accepted
    assert not judge(fifo_two, [True, True, [["b", "B", 1]]], [R.SHORT_POLL_SAMPLES]).accepted
    assert explain(fifo_two, [True, True, [["b", "B", 1]]]).key == ("ANY_ORDER+SHORT_POLL_SAMPLES")


def test_conformance_profiles() -> None:
    assert PROFILES["strict"].relaxations == frozenset()
    assert PROFILES["sqs-fifo"].relaxations == {
        R.DEAD_LETTER_LAGS,
        R.DEDUP_UNREPORTED,
        R.SHORT_POLL_SAMPLES,
    }
    assert R.SHORT_POLL_SAMPLES in PROFILES["sqs-standard"].relaxations
    assert R.VISIBLE_CHANGE_HIDES not in PROFILES["sqs-standard"].relaxations
    for r in RELAXATIONS:
        assert r.citation.url.startswith("https://docs.aws.amazon.com/")
        assert r.citation.quote and r.meaning


# =============================================================================================
# Nothing lost is admitted: the drain, and a short poll's bound
# =============================================================================================

#: Issue 24's reproduction: a message accepted, then eleven empty receives over ten minutes.
ELEVEN_EMPTY = probe_scenario(
    [["enqueue", "a", "A"], ["reserve"]]
    + [x for _ in range(10) for x in (["advance", 60], ["reserve"])],
    visibility_timeout=5,
)


def test_conformance_eleven_empty_receives_are_a_lost_message() -> None:
    e = explain(ELEVEN_EMPTY, [True] + [None] * 21)
    assert e.key == "lost" and e.lost and e.relaxed.lost == ("a",)
    # The second empty receive in a row is where a short poll stops explaining it (AWS: a
    # subsequent request returns the messages).
    assert e.relaxed.op_index == 3
    assert not any(p.admits(e) for p in PROFILES.values())
    # One empty receive is a short poll, as before.
    once = probe_scenario([["enqueue", "a", "A"], ["reserve"], ["reserve"]])
    assert explain(once, [True, None, ["a", "A", 1]]).key == "SHORT_POLL_SAMPLES"


def test_conformance_the_drain() -> None:
    sc = probe_scenario(
        [
            ["enqueue", "a", "A", {"delay": 3}],
            ["reserve", 30],
            ["advance", 4],
            ["new"],
            ["enqueue_batch", [["b", "B"], ["c", "C"]]],
        ],
        visibility_timeout=5,
        max_receives=2,
    )
    vt = oracle.DRAIN_VISIBILITY
    # Past the latest timer (the receive's deadline at 30 s: from 4 s, 27 s), then queue 0's
    # receives and dead letters (it is not the current queue), then queue 1's.
    assert drain_ops(sc) == [
        ["advance", 27],
        ["use", 0],
        *[["reserve_batch", 10, vt]] * 2,
        ["dead"],
        ["use", 1],
        *[["reserve_batch", 10, vt]] * 2,
        ["dead"],
    ]
    fifo = probe_scenario([["enqueue", "a", "A", {"group": "g"}]], fifo=True)
    assert drain_ops(fifo) == [["advance", 1], *[["reserve_batch", 10, 0]] * 2]
    assert drain_ops(probe_scenario([["reserve"]])) == []
    assert to_json(with_drain(fifo))["ops"] == fifo["ops"] + drain_ops(fifo)
    with pytest.raises(ValueError, match=r"outputs: 2 outputs for 1 ops or 4 \(with its drain\)"):
        judge(fifo, [True, None])
    # A message the drain delivered for the last time may reach the dead-letter queue later
    # (DEAD_LETTER_LAGS); one it never delivered must be there.
    dlq = probe_scenario([["enqueue", "a", "A", {"group": "g"}]], fifo=True, max_receives=1)
    assert explain(dlq, [True, None, [["a", "A", 1]], [], ["a"]]).conforms
    assert explain(dlq, [True, None, [["a", "A", 1]], [], []]).key == "DEAD_LETTER_LAGS"
    assert explain(dlq, [True, None, [], [], []]).key == "lost"


def _loses(lose: str) -> Callable[[QueueConfig], broken.LosesMessage]:
    return functools.partial(broken.LosesMessage, lose=lose)


#: (what it is, a broken target, a scenario on which it loses a message).
LOSSES: list[tuple[str, Callable[[QueueConfig], Any], dict[str, Any]]] = [
    (
        "standard, lost",
        _loses("b"),
        probe_scenario([["enqueue", "a", "A"], ["enqueue", "b", "B"], ["reserve"]]),
    ),
    (
        "FIFO, lost, alone in its group",
        _loses("b"),
        probe_scenario(
            [["enqueue", "a", "A", {"group": "g"}], ["enqueue", "b", "B", {"group": "h"}]],
            fifo=True,
        ),
    ),
    (
        "FIFO, lost, first of its group",
        _loses("a"),
        probe_scenario(
            [
                ["enqueue", "a", "A", {"group": "g"}],
                ["enqueue", "b", "B", {"group": "g"}],
                ["reserve"],
            ],
            fifo=True,
        ),
    ),
    (
        "FIFO, lost, inside its group",
        _loses("b"),
        probe_scenario(
            [
                ["enqueue_batch", [["a", "A", {"group": "g"}], ["b", "B", {"group": "g"}]]],
                ["enqueue", "c", "C", {"group": "g"}],
                ["reserve"],
                ["ack", "a", 1],
            ],
            fifo=True,
        ),
    ),
    (
        "never redelivers",
        broken.NeverRedelivers,
        probe_scenario([["enqueue", "a", "A"], ["reserve"], ["advance", 2], ["reserve"]]),
    ),
    (
        "never redelivers, FIFO",
        broken.NeverRedelivers,
        probe_scenario(
            [["enqueue", "a", "A", {"group": "g"}], ["reserve"], ["advance", 2]], fifo=True
        ),
    ),
    (
        "UnarmedDeadlineQueue",
        _mutant(mutants.UnarmedDeadlineQueue),
        probe_scenario([["enqueue", "a", "A"], ["reserve"], ["advance", 2], ["reserve"]]),
    ),
]


@pytest.mark.parametrize(("what", "target", "sc"), LOSSES, ids=[x[0] for x in LOSSES])
def test_conformance_a_lost_message_is_admitted_by_no_profile(
    what: str, target: Callable[[QueueConfig], Any], sc: dict[str, Any]
) -> None:
    # The model's own run of the scenario conforms: the loss is the target's.
    assert explain(sc, run_scenario(with_drain(sc), "model")).conforms
    for profile in PROFILES.values():
        kit = run_kit(
            [sc],
            lambda s: run_scenario(s, target),
            profile=profile,
            endpoint=what,
            fifo=bool(sc.get("fifo")),
        )
        assert [(f.key, f.admitted) for f in kit.findings] == [("lost", False)], profile.name
        assert kit.verdict == "not admitted"
    e = kit.findings[0].explanation
    assert e.relaxed.lost and " lost (accepted and not deleted, but not delivered" in str(e.relaxed)


def test_conformance_no_verdict_when_the_budget_runs_out() -> None:
    _, sc, outputs, _ = CRAFTED[0]  # ANY_ORDER: two candidate states
    e = explain(sc, outputs, budget=0)
    assert e.no_verdict and e.key == "no verdict" and e.relaxed.exhausted
    assert "no verdict" in str(e.relaxed)
    assert not PROFILES["sqs-standard"].admits(e) and not PROFILES["sqs-standard"].decides(e)
    # Budget enough: decided.
    assert PROFILES["sqs-standard"].decides(explain(sc, outputs))
    finding = Finding("k", 1, sc, outputs, outputs, e, admitted=False)
    run = KitRun("x", False, PROFILES["sqs-standard"], 0, 1, 0, (finding,))
    assert finding.no_verdict and run.verdict == NO_VERDICT and not run.admitted
    lost = explain(ELEVEN_EMPTY, [True] + [None] * 21)
    definite = Finding("lost", 1, ELEVEN_EMPTY, [], [], lost, admitted=False)
    assert KitRun("x", False, PROFILES["strict"], 0, 2, 0, (finding, definite)).verdict == (
        "not admitted"
    )


# =============================================================================================
# The project's mutants, run through targets, explained
# =============================================================================================


def test_conformance_delete_by_id_mutant_is_a_stale_handle_that_acts() -> None:
    _, sc, _, _ = CRAFTED[2]
    outputs = run_scenario(sc, _mutant(mutants.DeleteByIdQueue))
    assert outputs[4] is True  # the stale receipt deleted the redelivery
    assert explain(sc, outputs).key == "STALE_HANDLE_ACTS"
    assert explain(sc, run_scenario(sc, "impl")).conforms


def test_conformance_expired_to_head_mutant_is_any_order() -> None:
    sc = probe_scenario(TWO_THEN_REDELIVER)
    outputs = run_scenario(sc, _mutant(mutants.ExpiredToHeadQueue))
    assert outputs[4] == ["a", "A", 2]  # back at the head, where the model has b first
    assert explain(sc, outputs).key == "ANY_ORDER"


def test_conformance_a_mutant_no_relaxation_allows_is_unexplained() -> None:
    # Off by one: a message is delivered once more than max_receives allows.
    sc = probe_scenario(
        [["enqueue", "a", "A"], ["reserve"], ["advance", 2], ["reserve"]], max_receives=1
    )
    outputs = run_scenario(sc, _mutant(mutants.DeadLetterOffByOneQueue))
    e = explain(sc, outputs)
    assert e.unexplained
    assert e.relaxed.op == ["reserve"] and e.relaxed.observed == ["a", "A", 2]


# =============================================================================================
# shrink
# =============================================================================================


def _stale_keeper(scenario: Scenario, outputs: Sequence[Output]) -> bool:
    return explain(scenario, outputs).key == "STALE_HANDLE_ACTS"


def test_conformance_shrink_reduces_a_padded_scenario_to_the_minimal_one() -> None:
    padded = {
        "capacity": None,
        "visibility_timeout": 1,
        "ops": [
            ["enqueue", "c", "C"],
            ["dead"],
            ["reserve", 30],
            ["new"],
            ["enqueue", "d", "D"],
            ["use", 0],
            ["enqueue", "a", "A"],
            ["reserve"],
            ["advance", 2],
            ["reserve"],
            ["enqueue", "e", "E"],
            ["ack_batch", [["e", 1], ["a", 1], ["c", 1]]],
            ["dead"],
            ["reserve_batch", 3],
        ],
    }
    target = _mutant(mutants.DeleteByIdQueue)
    runs: list[Scenario] = []

    def run(s: Scenario) -> list[Output]:
        runs.append(s)
        return run_scenario(s, target)

    assert _stale_keeper(parse_scenario(padded), run_scenario(padded, target))
    small = shrink(padded, run, _stale_keeper)
    assert to_json(small)["ops"] == [
        ["enqueue", "a", "A"],
        ["reserve"],
        ["advance", 2],
        ["reserve"],
        ["ack_batch", [["a", 1]]],
    ]
    assert _stale_keeper(small, run_scenario(small, target))
    assert len(runs) < 200
    with pytest.raises(ValueError, match="does not show the divergence"):
        shrink(padded, lambda s: run_scenario(s, "model"), _stale_keeper)


def test_conformance_shrink_respects_valid() -> None:
    _, sc, _, _ = CRAFTED[2]
    padded = {**sc, "ops": [["dead"], *sc["ops"]]}
    target = _mutant(mutants.DeleteByIdQueue)
    # Keep the first op whatever else goes: valid scenarios start with it.
    small = shrink(
        padded,
        lambda s: run_scenario(s, target),
        _stale_keeper,
        valid=lambda s: to_json(s)["ops"][:1] == [["dead"]],
    )
    assert to_json(small)["ops"] == [["dead"], *sc["ops"][:5]]


# =============================================================================================
# The kit's run and report, on a mutant (no SQS needed)
# =============================================================================================


def test_conformance_run_kit_groups_shrinks_and_reports() -> None:
    target = _mutant(mutants.DeleteByIdQueue)
    scs = [STALE_DELETE, CRAFTED[0][1], STALE_DELETE]

    def on_mutant(profile: str, **options: Any) -> KitRun:
        return run_kit(
            scs,
            lambda s: run_scenario(s, target),
            profile=PROFILES[profile],
            endpoint="DeleteByIdQueue",
            fifo=False,
            **options,
        )

    kit = on_mutant("sqs-standard", seed_value=3)
    assert (kit.scenarios, kit.conforming) == (3, 1)
    assert [(f.key, f.count, f.admitted) for f in kit.findings] == [("STALE_HANDLE_ACTS", 2, True)]
    f = kit.findings[0]
    assert f.scenario["ops"] == STALE_DELETE["ops"][:5]
    assert f.model == run_scenario(with_drain(f.scenario), "model")
    assert kit.admitted
    text = summary(kit)
    assert "3 scenarios (seed 3): 1 as the model, 2 divergent in 1 behaviours" in text
    assert 'op 4 ["ack","a",1]: endpoint true, model false' in text
    page = markdown(kit)
    assert "| [1](#behaviour-1) | STALE_HANDLE_ACTS |" in page
    assert json_line(f.scenario) in page
    assert "API_DeleteMessage.html" in page
    assert not on_mutant("strict", shrink_findings=False).admitted
    with pytest.raises(ValueError, match="labels: 1 labels for 3 scenarios"):
        run_kit(
            scs,
            run_scenario_model,
            profile=PROFILES["strict"],
            endpoint="x",
            fifo=False,
            labels=["one"],
        )


def run_scenario_model(s: Scenario) -> list[Output]:
    return run_scenario(s, "model")


def test_conformance_generate_scenarios_is_deterministic_and_nests() -> None:
    a = generate_scenarios(scenarios(), 15, 7)
    assert a == generate_scenarios(scenarios(), 15, 7)
    assert len(a) == 15
    assert a != generate_scenarios(scenarios(), 15, 8)
    # The first n of a seed are the same for any count >= n: a short run is a prefix.
    assert generate_scenarios(scenarios(), 40, 7)[:15] == a
    assert (
        generate_scenarios(sqs_scenarios(fifo=True), 3, 16)
        == (generate_scenarios(sqs_scenarios(fifo=True), 20, 16)[:3])
    )
    # Not one scenario over and over (Hypothesis's first example is its simplest).
    assert len({json.dumps(x) for x in a}) == 15


# =============================================================================================
# On moto: the measured behaviours, the verdicts for the docs' seed, the docs' freshness
# =============================================================================================

moto = pytest.importorskip("moto")
from model_tests.conformance import __main__ as cli  # noqa: E402
from model_tests.conformance.profile import check_profile  # noqa: E402
from model_tests.conformance.report import conformance_doc  # noqa: E402
from model_tests.conformance.sqs import SqsEndpoint, open_endpoint, run_on_sqs  # noqa: E402

#: The explanation of each probe (``report.PROBES``) on moto 5.2.5, and whether its queue
#: type's profile admits it. AWS documents the opposite of two (ChangeMessageVisibility of a
#: message not in flight is MessageNotInflight; an expired receipt handle on a FIFO queue is an
#: error); a FIFO group redelivered out of order, the later message alone: the earlier one never
#: comes back, however often the drain asks (its receives of visibility 0 get the later one
#: each time), so it is lost; nothing allows the unexplained one (a purge that forgets the
#: deduplication ids).
PROBE_VERDICTS: dict[str, tuple[str, bool]] = {
    "a stale delete after the redelivery deletes the redelivered copy": (
        "STALE_HANDLE_ACTS",
        True,
    ),
    "a stale visibility change acts on the current delivery": ("STALE_HANDLE_ACTS", True),
    "a visibility change of a visible message hides it": ("VISIBLE_CHANGE_HIDES", False),
    "a redelivered message returns to its old place, not the tail": ("ANY_ORDER", True),
    "dead-lettering happens on the next receive, not at the deadline": (
        "DEAD_LETTER_LAGS",
        True,
    ),
    "a stale delete on a FIFO queue succeeds and deletes the redelivery": (
        "STALE_HANDLE_ACTS",
        False,
    ),
    "a deduplicated FIFO send answers success": ("DEDUP_UNREPORTED", True),
    "two messages of a FIFO group received together and released: the later one comes back "
    "first, alone": ("lost", False),
    "a purge forgets the FIFO queue's deduplication ids": ("unexplained: reserve", False),
}


def test_conformance_every_probe_has_a_verdict() -> None:
    assert [what for what, _ in PROBES] == list(PROBE_VERDICTS)


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[SqsEndpoint]:
    with open_endpoint("moto") as ep:
        yield ep


@pytest.mark.parametrize(("what", "sc"), PROBES, ids=[p[0] for p in PROBES])
def test_conformance_moto_probes(moto_endpoint: SqsEndpoint, what: str, sc: dict[str, Any]) -> None:
    outputs = run_on_sqs(with_drain(sc), moto_endpoint)
    e = explain(sc, outputs)
    key, admitted = PROBE_VERDICTS[what]
    assert group_key(e) == key, (what, outputs, str(e.strict))
    profile = PROFILES["sqs-fifo" if sc.get("fifo") else "sqs-standard"]
    assert profile.admits(e) is admitted


def test_conformance_moto_server_probes() -> None:
    with open_endpoint("moto-server") as ep:
        keys = [group_key(explain(sc, run_on_sqs(with_drain(sc), ep))) for _, sc in PROBES]
    assert keys == [key for key, _ in PROBE_VERDICTS.values()]


#: moto's two FIFO deduplication bugs (issue 24; confirmed with plain boto3): a resend with the
#: dedup id of a message deleted a moment ago is delivered, and so is one after a purge. Each
#: scenario is minimal; padded, each still shows its own bug.
FORGETS_ON_DELETE = probe_scenario(
    fifo=True,
    ops=[
        ["enqueue", "a", "A", {"group": "g", "dedup": "x"}],
        ["reserve"],
        ["ack", "a", 1],
        ["enqueue", "b", "B", {"group": "g", "dedup": "x"}],
    ],
)
FORGETS_ON_PURGE = probe_scenario(
    fifo=True,
    ops=[
        ["enqueue", "a", "A", {"group": "g", "dedup": "x"}],
        ["purge"],
        ["enqueue", "b", "B", {"group": "g", "dedup": "x"}],
    ],
)
_PAD = [["enqueue", "c", "C", {"group": "h"}], ["advance", 2]]


def test_conformance_moto_dedup_bugs_are_two_findings(moto_endpoint: SqsEndpoint) -> None:
    given = [
        {**FORGETS_ON_DELETE, "ops": [*FORGETS_ON_DELETE["ops"], *_PAD]},
        FORGETS_ON_PURGE,
        FORGETS_ON_DELETE,
        {**FORGETS_ON_PURGE, "ops": [*FORGETS_ON_PURGE["ops"], *_PAD]},
    ]
    kit = run_kit(
        given,
        lambda s: run_on_sqs(s, moto_endpoint),
        profile=PROFILES["sqs-fifo"],
        endpoint="moto",
        fifo=True,
        valid=lambda s: not check_profile(s),
    )
    # One explanation (the resend is delivered, which no relaxation allows), two behaviours.
    assert [(f.key, f.count, f.admitted) for f in kit.findings] == [
        ("unexplained: reserve_batch", 2, False)
    ] * 2
    assert sorted(f.scenario["ops"] for f in kit.findings) == sorted(
        [FORGETS_ON_DELETE["ops"], FORGETS_ON_PURGE["ops"]]
    )
    for f in kit.findings:
        assert f.explanation.strict.op == f.scenario["ops"][-1]  # the resend: true, not duplicate
        # And the drain's first receive delivers it.
        first = next(o for o in f.outputs[len(f.scenario["ops"]) :] if isinstance(o, list))
        assert ["b", "B", 1] in first


@pytest.fixture(scope="module")
def doc_runs() -> dict[tuple[str, bool], KitRun]:
    """The moto in-process runs of docs/conformance.md (its seed and size, and the probes),
    by (source, fifo)."""
    runs = {}
    for fifo in (False, True):
        runs["generated", fifo] = cli.kit_run(
            "moto", fifo=fifo, scenarios=cli.DOC_SCENARIOS, seed_value=cli.DOC_SEED
        )
        runs["probes", fifo] = cli.probe_run("moto", fifo)
    return runs


#: The kit's verdicts on moto 5.2.5 for the docs' seed: (group, admitted by the profile), in
#: the report's order. Standard queues: all admitted. FIFO queues: moto reorders a group's
#: redelivered messages, forgets deduplication ids (after a delete, after a purge, after a
#: dead-lettering) and loses messages: after a redelivery it stops delivering an earlier
#: message of the group (or one sent meanwhile), however often the drain asks.
EXPECTED_STANDARD: list[tuple[str, bool]] = [
    ("ANY_ORDER", True),
    ("ANY_ORDER+STALE_HANDLE_ACTS", True),
    ("DEAD_LETTER_LAGS", True),
    ("ANY_ORDER+DEAD_LETTER_LAGS", True),
    ("ANY_ORDER+STALE_HANDLE_ACTS", True),
    ("ANY_ORDER+STALE_HANDLE_ACTS | ANY_ORDER+VISIBLE_CHANGE_HIDES", True),
    (
        "ANY_ORDER+STALE_HANDLE_ACTS+DEAD_LETTER_LAGS"
        " | ANY_ORDER+VISIBLE_CHANGE_HIDES+DEAD_LETTER_LAGS",
        True,
    ),
]
EXPECTED_FIFO: list[tuple[str, bool]] = [
    ("ANY_ORDER+DEDUP_UNREPORTED+SHORT_POLL_SAMPLES", False),
    ("ANY_ORDER+SHORT_POLL_SAMPLES", False),
    ("DEDUP_UNREPORTED", True),
    ("ANY_ORDER+DEAD_LETTER_LAGS+SHORT_POLL_SAMPLES", False),
    ("ANY_ORDER+DEAD_LETTER_LAGS+DEDUP_UNREPORTED", False),
    ("ANY_ORDER+DEAD_LETTER_LAGS+DEDUP_UNREPORTED+SHORT_POLL_SAMPLES", False),
    ("DEAD_LETTER_LAGS+DEDUP_UNREPORTED", True),
    ("DEAD_LETTER_LAGS", True),
    ("ANY_ORDER+DEAD_LETTER_LAGS", False),
    ("ANY_ORDER+DEAD_LETTER_LAGS+DEDUP_UNREPORTED+SHORT_POLL_SAMPLES", False),
    ("ANY_ORDER+DEDUP_UNREPORTED+SHORT_POLL_SAMPLES", False),
    ("DEAD_LETTER_LAGS+DEDUP_UNREPORTED", True),
    ("STALE_HANDLE_ACTS", False),
    ("STALE_HANDLE_ACTS+DEDUP_UNREPORTED", False),
    ("lost", False),
    ("unexplained: reserve_batch", False),
    ("lost", False),
    ("unexplained: dead", False),
    ("unexplained: reserve", False),
    ("unexplained: reserve_batch", False),
    ("unexplained: reserve", False),
    ("lost", False),
    ("lost", False),
    ("lost", False),
    ("unexplained: dead", False),
    ("unexplained: purge", False),
    ("unexplained: reserve_batch", False),
]


@pytest.mark.slow  # the docs' seed on moto and moto-server: about two minutes
def test_conformance_moto_verdicts_for_the_docs_seed(
    doc_runs: dict[tuple[str, bool], KitRun],
) -> None:
    std, fifo = doc_runs["generated", False], doc_runs["generated", True]
    assert [(f.key, f.admitted) for f in std.findings] == EXPECTED_STANDARD
    assert std.admitted and not any(f.key.startswith("unexplained") for f in std.findings)
    assert [(f.key, f.admitted) for f in fifo.findings] == EXPECTED_FIFO
    assert not fifo.admitted
    # moto's two deduplication bugs are findings of their own, each with its minimal scenario:
    # a resend delivered after the first message was deleted, and after a purge.
    resent = [
        [op[0] for op in f.scenario["ops"]]
        for f in fifo.findings
        if f.key.startswith("unexplained") and f.explanation.strict.op[0].startswith("enqueue")
    ]
    assert any("purge" in ops for ops in resent)
    assert any("purge" not in ops and any(o.startswith("ack") for o in ops) for ops in resent)


@pytest.mark.slow  # the docs' seed on moto and moto-server: about two minutes
def test_conformance_docs_are_fresh(doc_runs: dict[tuple[str, bool], KitRun]) -> None:
    """docs/conformance.md is what the generator writes: its header and the moto in-process
    sections are regenerated here (moto-server's are checked by the probes above: the full page
    takes minutes; regenerate it with the command in its header)."""
    page = DOCS.read_text()
    assert page.startswith(conformance_doc([], cli.DOC_COMMAND).split("## Standard")[0])
    for run in doc_runs.values():
        assert markdown(run, heading="###", anchor=section_anchor(run)) in page, (
            f"docs/conformance.md is stale: run {cli.DOC_COMMAND}"
        )


def test_conformance_cli_refuses_a_scenario_outside_the_profile(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps({"capacity": 2, "visibility_timeout": 1, "ops": []}) + "\n")
    assert cli.main(["--endpoint", "moto", "--scenario-file", str(f)]) == cli.EXIT_USAGE


def test_conformance_cli_runs_a_scenario_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps(PROBES[0][1]) + "\n")
    report = tmp_path / "r.md"
    status = cli.main(["--endpoint", "moto", "--scenario-file", str(f), "--report", str(report)])
    assert status == 0
    assert "STALE_HANDLE_ACTS" in capsys.readouterr().out
    assert "| [1](#behaviour-1) | STALE_HANDLE_ACTS |" in report.read_text()
    # The strict profile is this project's contract: moto does not meet it.
    assert cli.main(["--scenario-file", str(f), "--profile", "strict"]) == cli.EXIT_NOT_ADMITTED


def test_conformance_cli_refuses_a_wait_time_on_moto(capsys: pytest.CaptureFixture[str]) -> None:
    # moto's long poll of an empty queue would block on the kit's clock: a usage error, before
    # any scenario runs.
    status = cli.main(["--endpoint", "moto", "--wait-time", "1", "--scenarios", "1"])
    assert status == cli.EXIT_USAGE
    assert "wait_time must be 0 on moto" in capsys.readouterr().err
