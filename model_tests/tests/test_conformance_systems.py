"""The conformance kit on a system of queues (issue 25): the SQS mapping of ``"dead_letter"``,
``"retention"`` and the redrive ops, and the judge of :mod:`model_tests.conformance.systems`.

The mapping is read back from moto (in-process ``mock_aws``): the attributes the kit sets, and
what it refuses. Where moto differs from the model, the test states what moto does (an
observation of moto 5.2.5, recorded in ``docs/runs/moto-dlq.txt``), so that an upgrade that
changes it fails here and is noticed.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from model_tests.conformance import systems
from model_tests.conformance.measure_dlq import measure
from model_tests.conformance.oracle import judge as oracle_judge
from model_tests.conformance.profile import check_profile
from model_tests.conformance.sqs import UNSUPPORTED, SqsEndpoint, SqsTarget, open_endpoint
from model_tests.conformance.systems import SCENARIOS, Behaviour, judge
from model_tests.scenario_format import parse_scenario
from model_tests.targets import apply, run_scenario


@pytest.fixture(scope="module")
def moto() -> Iterator[SqsEndpoint]:
    with open_endpoint("moto") as opened:
        yield opened


def _target(scenario: dict[str, Any], endpoint: SqsEndpoint) -> SqsTarget:
    return SqsTarget(parse_scenario({**scenario, "ops": []}).config, endpoint)


def _attributes(endpoint: SqsEndpoint, url: str) -> dict[str, str]:
    got = endpoint.client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
    return dict(got["Attributes"])


DLQ: dict[str, Any] = {
    "capacity": None,
    "visibility_timeout": 5,
    "max_receives": 2,
    "retention": 120,
    "dead_letter": {"visibility_timeout": 7, "retention": 60},
}


def test_a_dead_letter_scenario_makes_queue_1_the_redrive_policy_target(
    moto: SqsEndpoint,
) -> None:
    target = _target(DLQ, moto)
    try:
        q0, q1 = target.queues
        a0, a1 = _attributes(moto, q0.url), _attributes(moto, q1.url)
        policy = json.loads(a0["RedrivePolicy"])
        assert policy == {"deadLetterTargetArn": a1["QueueArn"], "maxReceiveCount": 2}
        assert (a0["MessageRetentionPeriod"], a1["MessageRetentionPeriod"]) == ("120", "60")
        assert (a0["VisibilityTimeout"], a1["VisibilityTimeout"]) == ("5", "7")
        # Queue 1 is the target only: no redrive policy, no dead-letter queue of its own.
        assert "RedrivePolicy" not in a1 and q1.dlq_url is None and q0.dlq_url is None
    finally:
        target.close()


def test_a_queue_without_retention_in_a_retention_scenario_keeps_messages_14_days(
    moto: SqsEndpoint,
) -> None:
    target = _target({**DLQ, "retention": None, "dead_letter": {}}, moto)
    try:
        assert [_attributes(moto, q.url)["MessageRetentionPeriod"] for q in target.queues] == [
            "1209600",
            "1209600",
        ]
    finally:
        target.close()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"retention": 59}, "retention must be >= 60 s on SQS"),
        ({"retention": 60.5}, "retention must be whole seconds"),
        ({"dead_letter": {"retention": 30}}, "dead_letter retention must be >= 60 s"),
        ({"dead_letter": {"visibility_timeout": None}}, "dead_letter visibility_timeout"),
    ],
)
def test_what_sqs_cannot_express_is_refused(
    moto: SqsEndpoint, change: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        _target({**DLQ, **change}, moto)


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ([["dead"]], "dead: queue 0's dead letters move to queue 1"),
        ([["aged"]], "aged: SQS deletes an aged-out message without a trace"),
        ([["redrive", {"rate": 0.5}]], "rate must be whole messages per second in 1..500"),
    ],
)
def test_ops_sqs_cannot_answer_are_refused(moto: SqsEndpoint, ops: list[Any], message: str) -> None:
    scenario = parse_scenario({**DLQ, "ops": ops})
    target = SqsTarget(scenario.config, moto)
    try:
        with pytest.raises(ValueError, match=message):
            apply(target, scenario.ops[0])
    finally:
        target.close()


def test_moto_does_not_implement_the_move_task_calls(moto: SqsEndpoint) -> None:
    # Measured (docs/runs/moto-dlq.txt, "move tasks"): NotImplementedError for all three.
    scenario = {**DLQ, "ops": [["redrive"], ["redrive_status"], ["redrive_cancel"]]}
    assert run_scenario(scenario, lambda c: SqsTarget(c, moto)) == [UNSUPPORTED] * 3


def test_moto_dead_letters_into_queue_1_at_the_next_receive(moto: SqsEndpoint) -> None:
    ops = [
        ["enqueue", "a", "A"],
        ["reserve"],
        ["advance", 5],
        ["reserve"],
        ["advance", 5],
        ["use", 1],
        ["reserve"],
        ["use", 0],
        ["reserve"],
        ["use", 1],
        ["reserve"],
    ]
    got = run_scenario({**DLQ, "ops": ops}, lambda c: SqsTarget(c, moto))
    # Two receives in queue 0, the message still there after the second timeout (queue 1 is
    # empty) until queue 0's next receive moves it; queue 1 then delivers it with its count.
    assert got == [
        True,
        ["a", "A", 1],
        None,
        ["a", "A", 2],
        None,
        None,
        None,
        None,
        None,
        None,
        ["a", "A", 3],
    ]


def test_the_project_queue_conforms_on_every_system_scenario() -> None:
    verdicts = systems.run("impl")
    assert [v.name for v in verdicts if not v.conforms] == []
    assert len(verdicts) == len(SCENARIOS)


def test_moto_diverges_in_the_named_ways_and_no_other(moto: SqsEndpoint) -> None:
    by_name = {v.name: v for v in systems.run(moto)}
    named = {n: [b.value for b in v.explained_by] for n, v in by_name.items() if not v.conforms}
    assert named == {
        "dead letter reaches queue 1 at the release": ["dead-letter-lags"],
        "an aged-out message is no longer counted": ["retention-lazy"],
        "an aged-out message does not hide a younger one": ["retention-stops-receive"],
        "fifo dead-letter retention restarts at the move": ["fifo-dlq-enqueue-kept"],
        "redrive moves dead letters back as new messages": ["move-tasks-unsupported"],
        "redrive at a rate, then cancel": ["move-tasks-unsupported"],
    }


def test_a_divergence_no_behaviour_explains_is_unexplained() -> None:
    scenario = SCENARIOS["dead letter keeps id and receive count"]
    model = run_scenario(scenario, "model")
    # The dead letter delivered from queue 1 with its receive count reset: no named behaviour.
    index = model.index(["a", "A", 2])
    broken = [*model[:index], ["a", "A", 1], *model[index + 1 :]]
    verdict = judge("reset count", scenario, broken)
    assert verdict.at is not None and verdict.at.index == index and verdict.unexplained


def test_a_run_equal_to_the_model_conforms() -> None:
    for name, scenario in SCENARIOS.items():
        assert judge(name, scenario, run_scenario(scenario, "model")).conforms, name


@pytest.mark.parametrize("behaviour", list(Behaviour))
def test_each_behaviour_has_a_meaning_and_a_source(behaviour: Behaviour) -> None:
    assert behaviour.meaning and "docs/runs/moto-dlq.txt" in behaviour.source


def test_the_recorded_moto_measurement_is_what_moto_does_now() -> None:
    # docs/runs/moto-dlq.txt is where the docs' claims about moto's dead-letter queues,
    # retention and move tasks come from: a moto upgrade that changes one fails here.
    recorded = Path(__file__).resolve().parents[2] / "docs" / "runs" / "moto-dlq.txt"
    out = io.StringIO()
    measure(out)
    now, then = out.getvalue().splitlines(), recorded.read_text().splitlines()[1:]
    # The first line names the releases measured (the recording's, for the docs' citations); a
    # newer moto that behaves the same passes, one that behaves otherwise fails on the rest.
    assert now[0].startswith("moto ") and then[0].startswith("moto "), (now[0], then[0])
    assert now[1:] == then[1:]


@pytest.mark.parametrize(
    "scenario",
    [
        {**DLQ, "ops": []},
        {"capacity": None, "visibility_timeout": 5, "retention": 60, "ops": []},
        {"capacity": None, "visibility_timeout": 5, "ops": [["aged"]]},
    ],
    ids=["dead_letter", "retention", "aged"],
)
def test_the_one_queue_profile_sends_a_system_scenario_to_the_system_check(
    scenario: dict[str, Any],
) -> None:
    reasons = check_profile(scenario)
    assert any("python -m model_tests.conformance.systems" in r for r in reasons), reasons


@pytest.mark.parametrize(
    "scenario",
    [
        {**DLQ, "ops": []},
        {"capacity": None, "visibility_timeout": 5, "retention": 60, "ops": []},
        {"capacity": None, "visibility_timeout": 5, "ops": [["aged"]]},
    ],
    ids=["dead_letter", "retention", "aged"],
)
def test_the_one_queue_oracle_refuses_a_system_scenario(scenario: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"model_tests\.conformance\.systems"):
        oracle_judge(scenario, [])


def test_a_remote_endpoint_needs_yes(capsys: pytest.CaptureFixture[str]) -> None:
    assert systems.main(["--endpoint", "https://sqs.eu-west-1.amazonaws.com"]) == 2
    assert "give --yes" in capsys.readouterr().err


def test_the_command_on_impl_is_strictly_clean(capsys: pytest.CaptureFixture[str]) -> None:
    assert systems.main(["--endpoint", "impl", "--strict"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    n = len(SCENARIOS)
    assert last == f"impl: {n} scenarios, {n} conform, 0 diverge in a named way, 0 unexplained"


def test_the_main_command_runs_the_system_check(capsys: pytest.CaptureFixture[str]) -> None:
    from model_tests.conformance.__main__ import main

    assert main(["--endpoint", "impl", "--systems", "--profile", "strict"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("impl: ")
