"""dramatiq with its SQS broker (dramatiq_sqs) against the SQS endpoint, unmodified.

The broker creates its queues (and, with ``dead_letter=True``, a ``_dlq`` queue beside each) and a
worker in this process runs an actor's messages. A message a consumer took and never acknowledged
is hidden until its visibility timeout passes (``advance``), then the worker runs it. An actor
that fails with no retries left is dead-lettered the way dramatiq_sqs does it (the consumer's
``nack`` sends the message to the ``_dlq`` queue and deletes it). dramatiq_sqs sends no
MessageGroupId, so it has no FIFO queues to test. The test waits on bounded events, never on time.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from server_clients import WORK_BOUND, client_module

from sqs_endpoint import Endpoint
from sqs_endpoint.pytest_plugin import DUMMY_CREDENTIALS, REGION

dramatiq = client_module("dramatiq")
SQSBroker = client_module("dramatiq_sqs").SQSBroker

VISIBILITY = 30


@pytest.fixture
def broker(sqs_endpoint: Endpoint) -> Iterator[Any]:
    broker = SQSBroker(
        namespace="dq",
        dead_letter=True,
        visibility_timeout=VISIBILITY,
        endpoint_url=sqs_endpoint.url,
        region_name=REGION,
        **DUMMY_CREDENTIALS,
    )
    yield broker
    broker.close()


def run_worker(broker: Any) -> Any:
    # worker_timeout=1000 ms: the consumer's long polls last one real second at most, so stop()
    # never waits longer (the fake clock is frozen; a send or an advance answers them at once).
    worker = dramatiq.Worker(broker, worker_threads=1, worker_timeout=1000)
    worker.start()
    return worker


def test_a_worker_runs_an_actors_message(broker: Any) -> None:
    done = threading.Event()
    seen: list[str] = []

    @dramatiq.actor(broker=broker, queue_name="work", max_retries=0)  # type: ignore[untyped-decorator]
    def greet(name: str) -> None:
        seen.append(f"hello {name}")
        done.set()

    greet.send("sqs")
    worker = run_worker(broker)
    try:
        assert done.wait(WORK_BOUND), "the worker did not run the actor"
    finally:
        worker.stop()
    assert seen == ["hello sqs"]


def test_a_message_taken_and_not_acknowledged_runs_after_its_visibility_timeout(
    broker: Any, sqs_endpoint: Endpoint
) -> None:
    done = threading.Event()
    seen: list[str] = []

    @dramatiq.actor(broker=broker, queue_name="redelivery", max_retries=0)  # type: ignore[untyped-decorator]
    def job(n: int) -> None:
        seen.append(str(n))
        done.set()

    sent = job.send(7)
    # A consumer takes the message and dies with it, never acknowledging.
    lost = broker.consume("redelivery", timeout=0)
    taken = next(lost)
    assert taken.message_id == sent.message_id
    worker = run_worker(broker)
    try:
        assert not done.is_set()
        sqs_endpoint.advance(VISIBILITY)  # the timeout passes: the worker's receive gets it
        assert done.wait(WORK_BOUND), "the message did not come back to the worker"
    finally:
        worker.stop()
    assert seen == ["7"]


def test_a_failing_actor_is_dead_lettered(broker: Any, sqs_client: Any) -> None:
    failed = threading.Event()

    @dramatiq.actor(broker=broker, queue_name="poison", max_retries=0)  # type: ignore[untyped-decorator]
    def poison() -> None:
        failed.set()
        raise RuntimeError("cannot be done")

    sent = poison.send()
    worker = run_worker(broker)
    try:
        assert failed.wait(WORK_BOUND), "the worker did not run the actor"
        worker.join()  # the failure handled: the message nacked to the dead-letter queue
    finally:
        worker.stop()
    dead = sqs_client.get_queue_url(QueueName="dq_poison_dlq")["QueueUrl"]
    (moved,) = sqs_client.receive_message(QueueUrl=dead, MaxNumberOfMessages=10)["Messages"]
    assert json.loads(base64.b64decode(moved["Body"]))["message_id"] == sent.message_id
    source = sqs_client.get_queue_url(QueueName="dq_poison")["QueueUrl"]
    assert sqs_client.receive_message(QueueUrl=source).get("Messages", []) == []
