"""Example: a consumer that outlives its SQS endpoint, tested without sleeping.

``sqs_restart`` (the endpoint's pytest plugin, installed with the project) crashes the test's
endpoint and starts it again on its data file, at the same URL, as a ``kill -9`` and a restart
of ``sqs-endpoint --data FILE`` would: what was answered survives (docs/contract.md section 9).
The consumer had received a message and was working on it when the endpoint died: its receipt
handle is dead after the restart, so its delete is refused, and the message comes back once
its visibility timeout has passed, its receive count kept. The consumer's work must therefore
be idempotent, as with any redelivery. Run it from the repository root::

    .venv/bin/python -m pytest examples/test_sqs_restart.py -q
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import botocore.exceptions  # type: ignore[import-untyped]
import pytest


def test_a_message_in_flight_at_a_crash_comes_back_at_its_deadline(
    sqs_client: Any, sqs_advance: Callable[[float], None], sqs_restart: Callable[[], None]
) -> None:
    url = sqs_client.create_queue(QueueName="orders", Attributes={"VisibilityTimeout": "60"})[
        "QueueUrl"
    ]
    sqs_client.send_message(QueueUrl=url, MessageBody="order 42")
    sqs_client.send_message(QueueUrl=url, MessageBody="order 43")

    def receive() -> list[dict[str, Any]]:
        answer = sqs_client.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"]
        )
        messages: list[dict[str, Any]] = answer.get("Messages", [])
        return messages

    # A consumer takes "order 42"; "order 43" is done and deleted before the crash.
    first, other = receive()
    sqs_client.delete_message(QueueUrl=url, ReceiptHandle=other["ReceiptHandle"])

    sqs_restart()  # the endpoint dies and comes back on its data file

    # The consumer's handle is of the process that died: its delete is refused.
    with pytest.raises(botocore.exceptions.ClientError, match="expired"):
        sqs_client.delete_message(QueueUrl=url, ReceiptHandle=first["ReceiptHandle"])
    assert receive() == []  # still in flight until its deadline; "order 43" stays deleted

    sqs_advance(60)
    (again,) = receive()
    assert again["Body"] == "order 42"
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"  # the first receive counted
    sqs_client.delete_message(QueueUrl=url, ReceiptHandle=again["ReceiptHandle"])
