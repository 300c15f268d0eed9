"""The JavaScript SDK (``@aws-sdk/client-sqs`` from npm, run by Node.js) against the SQS endpoint.

tests/clients/js/scenario.mjs does the shared work of tests/sqs_client_scenario.py with the SDK
as its users write it; the SDK validates MD5OfMessageBody on every send and receive (a wrong
digest throws), and the script recomputes MD5OfMessageAttributes by SQS's documented encoding.
A stub answering with a wrong digest shows the SDK's check is on (it throws), so its passing
against the endpoint means the endpoint's digests are right. The SDK's version is the one
package-lock.json locks (scripts/setup runs ``npm ci``).
"""

from __future__ import annotations

import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import sqs_client_scenario as scenario
from server_clients import CLIENTS, assert_facts, missing, run_client

from sqs_endpoint import Endpoint

JS = CLIENTS / "js"


@pytest.fixture
def node() -> str:
    found = shutil.which("node")
    if found is None:
        missing("Node.js")
    if not (JS / "node_modules" / "@aws-sdk" / "client-sqs").is_dir():
        missing("@aws-sdk/client-sqs (npm ci in tests/clients/js)")
    return found


class _WrongDigest(http.server.BaseHTTPRequestHandler):
    """Answers every request as SQS answers a SendMessage, but with a wrong MD5OfMessageBody."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = json.dumps({"MessageId": "m-1", "MD5OfMessageBody": "0" * 32}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def wrong_digest() -> Iterator[str]:
    stub = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _WrongDigest)
    thread = threading.Thread(target=stub.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{stub.server_address[1]}"
    finally:
        stub.shutdown()
        stub.server_close()
        thread.join()


def test_the_sdk_refuses_an_answer_whose_body_digest_is_wrong(node: str, wrong_digest: str) -> None:
    facts = run_client(node, JS / "send_once.mjs", wrong_digest, f"{wrong_digest}/000000000000/q")
    assert facts["ok"] is False
    assert facts["error"] == "InvalidChecksumError"  # the SDK's md5 middleware


def test_the_sdk_accepts_the_endpoints_digest(
    node: str, sqs_client: Any, sqs_endpoint: Endpoint
) -> None:
    url = sqs_client.create_queue(QueueName="js-once")["QueueUrl"]
    facts = run_client(node, JS / "send_once.mjs", sqs_endpoint.url, url)
    assert facts == {"ok": True, "md5": scenario.EXPECTED["sent_md5_of_body"]}


def test_the_javascript_sdk_does_its_work_and_checks_the_digests(
    node: str, sqs_endpoint: Endpoint
) -> None:
    facts = run_client(node, JS / "scenario.mjs", sqs_endpoint.url)
    assert_facts(facts, scenario.EXPECTED)
    assert facts["attribute_digests"] == {"sent": True, "received": True}
    assert facts["client"] == {"md5_validation": True}
