"""boto3 against the SQS endpoint, unmodified: the current release (AWS JSON 1.0) and a query-era
one.

Both do the same work (tests/sqs_client_scenario.py: create, send with message attributes,
receive, delete, batches, a redelivery after the visibility timeout, a change of visibility,
dead-lettering through a RedrivePolicy, FIFO groups with deduplication) and must see what SQS
gives. The current boto3 runs in this process, through the pytest plugin's ``sqs_client``; the
query-era one (botocore 1.34.84 in ``.venv-query``, which sends form-encoded ``Action=`` requests
and reads XML) runs the same file as a script and moves the clock through the control API.
"""

from __future__ import annotations

from typing import Any

import sqs_client_scenario as scenario
from server_clients import assert_facts, run_client, venv_python

from sqs_endpoint import Endpoint

JSON_1_0 = "application/x-amz-json-1.0"
FORM = "application/x-www-form-urlencoded; charset=utf-8"


def test_current_boto3_does_its_work_over_aws_json(sqs_client: Any, sqs_endpoint: Endpoint) -> None:
    wire = scenario.record_wire(sqs_client)
    facts = scenario.run(sqs_client, sqs_endpoint.advance)
    assert_facts(facts, scenario.EXPECTED)
    assert sqs_client.meta.service_model.protocol == "json"
    assert wire == {JSON_1_0}


def test_a_query_era_boto3_does_the_same_work_over_the_query_protocol(
    sqs_endpoint: Endpoint,
) -> None:
    python = venv_python(".venv-query", "boto3")
    facts = run_client(python, scenario.__file__, sqs_endpoint.url)
    assert_facts(facts, scenario.EXPECTED)
    assert facts["client"]["protocol"] == "query"
    assert facts["client"]["content_types"] == [FORM]
