"""aiobotocore (asyncio, over aiohttp; in ``.venv-clients``) against the SQS endpoint, unmodified.

tests/clients/aio_scenario.py does the shared work of tests/sqs_client_scenario.py with
aiobotocore's client on an event loop, moving the clock through the control API, then a long
poll that a send from another task of the same loop answers before its wait ends.
"""

from __future__ import annotations

import sqs_client_scenario as scenario
from server_clients import CLIENTS, assert_facts, run_client, venv_python

from sqs_endpoint import Endpoint


def test_aiobotocore_does_its_work_and_a_long_poll_is_answered_by_a_send(
    sqs_endpoint: Endpoint,
) -> None:
    python = venv_python(".venv-clients", "aiobotocore")
    facts = run_client(python, CLIENTS / "aio_scenario.py", sqs_endpoint.url)
    assert_facts(facts, scenario.EXPECTED)
    assert facts["client"] == {"protocol": "json"}
    assert facts["long_poll"] == {"bodies": ["wake up"], "before_the_wait_ended": True}
