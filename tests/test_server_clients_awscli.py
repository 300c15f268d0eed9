"""The AWS CLI (aws-cli v1, in ``.venv-clients``) against the SQS endpoint, unmodified.

Each step is an ``aws sqs ...`` command line as a user types it, with ``--endpoint-url`` and
dummy credentials from the environment; the endpoint's clock is moved from the test between
commands. The CLI sends AWS JSON 1.0 through its own botocore. The installed ``aws`` executable
runs once; the other commands go to the CLI's own driver (``awscli.clidriver``, what the
executable runs) in one process, tests/clients/aws_shell.py, because starting the executable
costs seconds per command on a busy machine. Three tests: a message's life (create, send with
an attribute, receive, hidden while in flight, back after the visibility timeout with its
receive count raised, deleted), dead-lettering through a RedrivePolicy, and FIFO groups.
"""

from __future__ import annotations

import json
import selectors
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from server_clients import CLIENTS, ROOT, SUBPROCESS_BOUND, client_env, missing, venv_python

from sqs_endpoint import Endpoint

AWS = ROOT / ".venv-clients" / "bin" / "aws"


def test_the_installed_aws_command_lists_the_queues(
    sqs_endpoint: Endpoint, sqs_client: Any
) -> None:
    if not AWS.is_file():
        missing("aws-cli (.venv-clients)")
    url = sqs_client.create_queue(QueueName="cli-listed")["QueueUrl"]
    done = subprocess.run(
        [str(AWS), "sqs", "list-queues", "--endpoint-url", sqs_endpoint.url, "--output", "json"],
        env=client_env(),
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_BOUND,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["QueueUrls"] == [url]


@pytest.fixture
def aws(sqs_endpoint: Endpoint) -> Iterator[Any]:
    python = venv_python(".venv-clients", "awscli")
    shell = subprocess.Popen(
        [str(python), str(CLIENTS / "aws_shell.py")],
        env=client_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert shell.stdin is not None and shell.stdout is not None
    answers = selectors.DefaultSelector()
    answers.register(shell.stdout, selectors.EVENT_READ)

    def aws(*args: str, input_json: dict[str, Any] | None = None) -> dict[str, Any]:
        argv = ["sqs", *args, "--endpoint-url", sqs_endpoint.url, "--output", "json"]
        if input_json is not None:
            argv += ["--cli-input-json", json.dumps(input_json)]
        assert shell.stdin is not None and shell.stdout is not None
        shell.stdin.write(json.dumps(argv) + "\n")
        shell.stdin.flush()
        assert answers.select(SUBPROCESS_BOUND), f"aws {' '.join(args)}: no answer"
        done = json.loads(shell.stdout.readline())
        assert done["rc"] == 0, f"aws sqs {' '.join(args)}: {done['stderr']}"
        # An answer with nothing in it (a receive that found no message) prints nothing.
        answer: dict[str, Any] = json.loads(done["stdout"]) if done["stdout"].strip() else {}
        return answer

    try:
        yield aws
    finally:
        shell.stdin.close()  # the shell ends at the end of its input
        try:
            shell.wait(SUBPROCESS_BOUND)
        finally:
            if shell.poll() is None:
                shell.kill()
            answers.close()
            shell.stdout.close()


def test_a_message_is_sent_received_redelivered_and_deleted(
    aws: Any, sqs_endpoint: Endpoint
) -> None:
    url = aws("create-queue", "--queue-name", "cli-work", "--attributes", "VisibilityTimeout=30")[
        "QueueUrl"
    ]
    assert url == f"{sqs_endpoint.url}/000000000000/cli-work"
    attributes = '{"color": {"DataType": "String", "StringValue": "red"}}'
    sent = aws(
        "send-message", "--queue-url", url, "--message-body", "hello",
        "--message-attributes", attributes,
    )  # fmt: skip
    assert sent["MD5OfMessageBody"] == "5d41402abc4b2a76b9719d911017c592"
    receive = ["receive-message", "--queue-url", url, "--attribute-names", "All",
               "--message-attribute-names", "All"]  # fmt: skip
    (first,) = aws(*receive)["Messages"]
    assert first["Body"] == "hello"
    assert first["MessageAttributes"]["color"]["StringValue"] == "red"
    assert first["Attributes"]["ApproximateReceiveCount"] == "1"
    assert aws(*receive) == {}
    sqs_endpoint.advance(30)
    (second,) = aws(*receive)["Messages"]
    assert second["MessageId"] == first["MessageId"]
    assert second["Attributes"]["ApproximateReceiveCount"] == "2"
    aws("delete-message", "--queue-url", url, "--receipt-handle", second["ReceiptHandle"])
    sqs_endpoint.advance(30)
    assert aws(*receive) == {}


def test_a_redrive_policy_dead_letters_a_message_received_too_often(
    aws: Any, sqs_endpoint: Endpoint
) -> None:
    dead = aws("create-queue", "--queue-name", "cli-dead")["QueueUrl"]
    arn = aws("get-queue-attributes", "--queue-url", dead, "--attribute-names", "QueueArn")
    policy = {"deadLetterTargetArn": arn["Attributes"]["QueueArn"], "maxReceiveCount": "1"}
    source = aws(
        "create-queue",
        input_json={
            "QueueName": "cli-source",
            "Attributes": {"VisibilityTimeout": "10", "RedrivePolicy": json.dumps(policy)},
        },
    )["QueueUrl"]
    aws("send-message", "--queue-url", source, "--message-body", "doomed")
    assert [m["Body"] for m in aws("receive-message", "--queue-url", source)["Messages"]] == [
        "doomed"
    ]
    sqs_endpoint.advance(10)
    assert aws("receive-message", "--queue-url", source) == {}
    moved = aws("receive-message", "--queue-url", dead)["Messages"]
    assert [m["Body"] for m in moved] == ["doomed"]
    sources = aws("list-dead-letter-source-queues", "--queue-url", dead)["queueUrls"]
    assert sources == [source]


def test_a_fifo_queue_holds_a_group_while_its_message_is_in_flight(aws: Any) -> None:
    url = aws(
        "create-queue", "--queue-name", "cli-jobs.fifo",
        "--attributes", "FifoQueue=true,ContentBasedDeduplication=true",
    )["QueueUrl"]  # fmt: skip
    for body, group in [("a1", "a"), ("a2", "a"), ("b1", "b")]:
        sent = aws("send-message", "--queue-url", url, "--message-body", body,
                   "--message-group-id", group)  # fmt: skip
        assert sent["SequenceNumber"]
    one = ["receive-message", "--queue-url", url, "--max-number-of-messages", "1"]
    (a1,) = aws(*one)["Messages"]
    (b1,) = aws(*one)["Messages"]
    assert (a1["Body"], b1["Body"]) == ("a1", "b1")  # group a held while a1 is in flight
    assert aws(*one) == {}
    aws("delete-message", "--queue-url", url, "--receipt-handle", a1["ReceiptHandle"])
    (a2,) = aws(*one)["Messages"]
    assert a2["Body"] == "a2"
