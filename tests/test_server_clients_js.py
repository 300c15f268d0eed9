"""The JavaScript SDK (``@aws-sdk/client-sqs`` from npm, run by Node.js) against the SQS endpoint.

tests/clients/js/scenario.mjs does the shared work of tests/sqs_client_scenario.py with the SDK
as its users write it; the SDK validates MD5OfMessageBody on every send and receive (a wrong
digest throws), and the script recomputes MD5OfMessageAttributes by SQS's documented encoding.
The SDK's version is the one package-lock.json locks (scripts/setup runs ``npm ci``).
"""

from __future__ import annotations

import shutil

import sqs_client_scenario as scenario
from server_clients import CLIENTS, assert_facts, missing, run_client

from server import Endpoint

JS = CLIENTS / "js"


def test_the_javascript_sdk_does_its_work_and_checks_the_digests(sqs_endpoint: Endpoint) -> None:
    node = shutil.which("node")
    if node is None:
        missing("Node.js")
    if not (JS / "node_modules" / "@aws-sdk" / "client-sqs").is_dir():
        missing("@aws-sdk/client-sqs (npm ci in tests/clients/js)")
    facts = run_client(node, JS / "scenario.mjs", sqs_endpoint.url)
    assert_facts(facts, scenario.EXPECTED)
    assert facts["attribute_digests"] == {"sent": True, "received": True}
    assert facts["client"] == {"md5_validation": True}
