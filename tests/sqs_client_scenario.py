"""One client's normal work against the SQS endpoint, written against boto3's client API.

``run(sqs, advance)`` does what an SQS user's code does: create queues, send (one and a batch,
with message attributes), receive, delete (one and a batch), a redelivery after the visibility
timeout, a change of visibility, dead-lettering through a RedrivePolicy, FIFO groups with
content-based deduplication, and an error caught by its class. It returns what it saw as plain
JSON-able facts; every client test (tests/test_server_clients_*.py) compares a client's facts
with :data:`EXPECTED`, so each client is held to the same outcome. ``advance(seconds)`` moves
the endpoint's fake clock: in-process that is ``Endpoint.advance``, from another process the
control API's ``POST /_control/clock/advance``.

Run as a script by another environment's interpreter (``.venv-query``: boto3 on a query-era
botocore), it talks to the endpoint at ``sys.argv[1]`` and prints its facts as one JSON line::

    .venv-query/bin/python tests/sqs_client_scenario.py http://127.0.0.1:PORT

It imports only boto3 and the standard library, so it runs under any boto3 the tests use.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

#: What every client must see (the facts :func:`run` returns, and the JavaScript and aiobotocore
#: scripts print): SQS's answers for this work, the same on SQS as here.
EXPECTED: dict[str, Any] = {
    "queue_path": "/000000000000/work",
    "sent_md5_of_body": hashlib.md5(b"hello").hexdigest(),
    "first": {
        "body": "hello",
        "receive_count": "1",
        "attributes": {"color": "red", "n": "7", "blob": "AAH/"},
    },
    "received_while_in_flight": 0,
    "redelivered": {"same_message": True, "receive_count": "2"},
    "received_after_delete": 0,
    "batch": {"sent": ["b0", "b1", "b2"], "received": ["m0", "m1", "m2"], "deleted": 3},
    "visibility": {"hidden_after_change": 0, "back_after_change": True},
    "dead_letters_first_receive": "doomed",
    "dead_letters": {
        "source_after_timeout": 0,
        "dead_letter_queue": ["doomed"],
        "sources": ["/000000000000/work-src"],
    },
    # An error as the client's code catches it: boto3's modelled exception class (JSON: from
    # __type and x-amzn-query-error; query: from the ErrorResponse's legacy code).
    "missing_queue_error": "QueueDoesNotExist",
    "fifo": {
        "order": ["a1", "b1", "a2"],
        "while_both_groups_in_flight": 0,
        "duplicate_delivered": False,
        "sequence_numbers": True,
    },
}


def http_advance(base_url: str) -> Callable[[float], None]:
    """``advance(seconds)`` through the endpoint's control API, for a client in another process."""

    def advance(seconds: float) -> None:
        request = urllib.request.Request(
            f"{base_url}/_control/clock/advance",
            data=json.dumps({"seconds": seconds}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200, answer.status

    return advance


def record_wire(sqs: Any) -> set[str]:
    """The Content-Type of every request ``sqs`` sends from now on (which protocol it speaks)."""
    seen: set[str] = set()

    def before_send(request: Any, **_: Any) -> None:
        value = request.headers.get("Content-Type", "")
        seen.add(value.decode("ascii") if isinstance(value, bytes) else str(value))

    sqs.meta.events.register("before-send.sqs", before_send)
    return seen


def _system_attributes(sqs: Any) -> dict[str, list[str]]:
    # Current botocore names the system attributes MessageSystemAttributeNames; older ones (the
    # query era) only AttributeNames, which current SQS still accepts: each client sends its own.
    members = sqs.meta.service_model.operation_model("ReceiveMessage").input_shape.members
    name = (
        "MessageSystemAttributeNames"
        if "MessageSystemAttributeNames" in members
        else "AttributeNames"
    )
    return {name: ["All"]}


def run(sqs: Any, advance: Callable[[float], None]) -> dict[str, Any]:
    """Do the work with the boto3 client ``sqs``; return what it saw (compare with EXPECTED)."""
    system = _system_attributes(sqs)

    def receive(url: str, n: int = 1, **extra: Any) -> list[dict[str, Any]]:
        answer = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=n, **system, **extra)
        messages: list[dict[str, Any]] = answer.get("Messages", [])
        return messages

    facts: dict[str, Any] = {}

    # Create, send with message attributes, receive, and let the visibility timeout pass.
    url = sqs.create_queue(QueueName="work", Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    facts["queue_path"] = urlsplit(url).path
    sent = sqs.send_message(
        QueueUrl=url,
        MessageBody="hello",
        MessageAttributes={
            "color": {"DataType": "String", "StringValue": "red"},
            "n": {"DataType": "Number", "StringValue": "7"},
            "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xff"},
        },
    )
    facts["sent_md5_of_body"] = sent["MD5OfMessageBody"]
    (first,) = receive(url, MessageAttributeNames=["All"])
    attributes = first.get("MessageAttributes", {})
    facts["first"] = {
        "body": first["Body"],
        "receive_count": first["Attributes"]["ApproximateReceiveCount"],
        "attributes": {
            "color": attributes["color"]["StringValue"],
            "n": attributes["n"]["StringValue"],
            # base64, as the JSON protocol carries it (and as the scripts in other languages print)
            "blob": _b64(attributes["blob"]["BinaryValue"]),
        },
    }
    facts["received_while_in_flight"] = len(receive(url))
    advance(30)
    (second,) = receive(url)
    facts["redelivered"] = {
        "same_message": second["MessageId"] == first["MessageId"],
        "receive_count": second["Attributes"]["ApproximateReceiveCount"],
    }
    sqs.delete_message(QueueUrl=url, ReceiptHandle=second["ReceiptHandle"])
    advance(30)
    facts["received_after_delete"] = len(receive(url))

    # Batches: per-entry results by Id.
    batch = sqs.send_message_batch(
        QueueUrl=url,
        Entries=[{"Id": f"b{i}", "MessageBody": f"m{i}"} for i in range(3)],
    )
    got = receive(url, 10)
    deleted = sqs.delete_message_batch(
        QueueUrl=url,
        Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)],
    )
    facts["batch"] = {
        "sent": sorted(e["Id"] for e in batch.get("Successful", [])),
        "received": sorted(m["Body"] for m in got),
        "deleted": len(deleted.get("Successful", [])),
    }

    # ChangeMessageVisibility: a consumer that needs longer asks for it.
    sqs.send_message(QueueUrl=url, MessageBody="slow")
    (slow,) = receive(url)
    sqs.change_message_visibility(
        QueueUrl=url, ReceiptHandle=slow["ReceiptHandle"], VisibilityTimeout=120
    )
    advance(60)
    hidden = len(receive(url))
    advance(60)
    back = receive(url)
    facts["visibility"] = {
        "hidden_after_change": hidden,
        "back_after_change": [m["Body"] for m in back] == ["slow"],
    }

    # Dead letters: one receive allowed, then the message belongs to the dead-letter queue.
    dead = sqs.create_queue(QueueName="work-dead")["QueueUrl"]
    dead_arn = sqs.get_queue_attributes(QueueUrl=dead, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    policy = json.dumps({"deadLetterTargetArn": dead_arn, "maxReceiveCount": "1"})
    source = sqs.create_queue(
        QueueName="work-src", Attributes={"VisibilityTimeout": "10", "RedrivePolicy": policy}
    )["QueueUrl"]
    sqs.send_message(QueueUrl=source, MessageBody="doomed")
    (doomed,) = receive(source)
    facts["dead_letters_first_receive"] = doomed["Body"]
    advance(10)
    after = receive(source)
    sources = sqs.list_dead_letter_source_queues(QueueUrl=dead).get("queueUrls", [])
    facts["dead_letters"] = {
        "source_after_timeout": len(after),
        "dead_letter_queue": [m["Body"] for m in receive(dead, 10)],
        "sources": [urlsplit(u).path for u in sources],
    }

    # An error the client's code handles by its class (dramatiq_sqs creates its queue on it).
    try:
        sqs.get_queue_url(QueueName="no-such-queue")
        facts["missing_queue_error"] = None
    except sqs.exceptions.QueueDoesNotExist as error:
        facts["missing_queue_error"] = type(error).__name__

    # FIFO: order within a group, one group's messages in flight at a time, deduplication.
    fifo = sqs.create_queue(
        QueueName="work.fifo",
        Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"},
    )["QueueUrl"]
    sends = [
        sqs.send_message(QueueUrl=fifo, MessageBody=body, MessageGroupId=group)
        for body, group in [("a1", "a"), ("a2", "a"), ("b1", "b"), ("a1", "a")]
    ]
    (m1,) = receive(fifo)
    (m2,) = receive(fifo)
    both_in_flight = len(receive(fifo, 10))
    sqs.delete_message(QueueUrl=fifo, ReceiptHandle=m1["ReceiptHandle"])
    (m3,) = receive(fifo)
    sqs.delete_message(QueueUrl=fifo, ReceiptHandle=m2["ReceiptHandle"])
    sqs.delete_message(QueueUrl=fifo, ReceiptHandle=m3["ReceiptHandle"])
    facts["fifo"] = {
        "order": [m["Body"] for m in (m1, m2, m3)],
        "while_both_groups_in_flight": both_in_flight,
        "duplicate_delivered": bool(receive(fifo, 10)),
        "sequence_numbers": all(s.get("SequenceNumber") for s in sends),
    }
    return facts


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def main(argv: list[str]) -> int:
    import boto3  # type: ignore[import-untyped, unused-ignore]

    (base_url,) = argv
    session = boto3.session.Session(
        region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    sqs = session.client("sqs", endpoint_url=base_url)
    wire = record_wire(sqs)
    facts = run(sqs, http_advance(base_url))
    facts["client"] = {
        "protocol": sqs.meta.service_model.protocol,
        "botocore": __import__("botocore").__version__,
        "content_types": sorted(wire),
    }
    print(json.dumps(facts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
