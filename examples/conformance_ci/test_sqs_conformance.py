"""Our SQS endpoint, with our queue's attributes, judged against the model by the kit."""

from pathlib import Path

from model_tests.conformance.pytest_plugin import Conformance

#: The attributes our production queue has (the scenario format's names).
OUR_QUEUE = {"visibility_timeout": 30, "max_receives": 5}


def test_generated_scenarios_on_our_queue_conform(sqs_conformance: Conformance) -> None:
    # Ten scenarios of the SQS profile, each run on a fresh queue with our attributes.
    sqs_conformance.check(queue=OUR_QUEUE, scenarios=10, seed=1)


def test_our_own_flows_conform(sqs_conformance: Conformance) -> None:
    # The flows our consumer relies on, written in the harness's JSON lines.
    sqs_conformance.check(scenarios_file=Path(__file__).with_name("scenarios.jsonl"))
