"""Example: a visibility-timeout redelivery tested against the SQS endpoint, without sleeping.

The fixtures come from the endpoint's pytest plugin (sqs_endpoint/pytest_plugin.py, installed with
the
project): ``sqs_client`` is a boto3 client for an endpoint of the test's own, on a fake clock that
stands still until ``sqs_advance`` moves it. A consumer that takes a message and dies before
deleting it is the case every SQS consumer must survive: the message comes back once its
visibility timeout has passed, with its receive count raised. Run it from the repository root::

    .venv/bin/python -m pytest examples/test_sqs_redelivery.py -q

It takes well under a second, although the visibility timeout is five minutes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def test_a_message_not_deleted_comes_back_after_its_visibility_timeout(
    sqs_client: Any, sqs_advance: Callable[[float], None]
) -> None:
    url = sqs_client.create_queue(QueueName="orders", Attributes={"VisibilityTimeout": "300"})[
        "QueueUrl"
    ]
    sqs_client.send_message(QueueUrl=url, MessageBody="order 42")

    def receive() -> list[dict[str, Any]]:
        answer = sqs_client.receive_message(
            QueueUrl=url, MaxNumberOfMessages=1, MessageSystemAttributeNames=["All"]
        )
        messages: list[dict[str, Any]] = answer.get("Messages", [])
        return messages

    # The first consumer takes the message and crashes: it never deletes it.
    (first,) = receive()
    assert first["Body"] == "order 42"
    assert first["Attributes"]["ApproximateReceiveCount"] == "1"

    # While the timeout runs, nobody else sees the message, however often they ask.
    sqs_advance(299)
    assert receive() == []

    # One more second and it is visible again: the second delivery, counted as such.
    sqs_advance(1)
    (second,) = receive()
    assert second["MessageId"] == first["MessageId"]
    assert second["Attributes"]["ApproximateReceiveCount"] == "2"

    # The second consumer finishes and deletes it; the queue is empty for good.
    sqs_client.delete_message(QueueUrl=url, ReceiptHandle=second["ReceiptHandle"])
    sqs_advance(300)
    assert receive() == []
