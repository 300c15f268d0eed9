"""kombu's SQS transport against the SQS endpoint, unmodified: its synchronous channel and the
asynchronous one that an event loop (kombu's Hub, what a Celery worker runs) drives over pycurl.

Synchronous: a SimpleQueue sends and receives, a message taken and not acknowledged is hidden
until the visibility timeout passes (``advance``) and then comes back, marked redelivered by its
receive count; acknowledging deletes it; a queue whose RedrivePolicy allows one receive hands a
rejected message to its dead-letter queue; a FIFO queue keeps a group's order and drops a
duplicate. Asynchronous: a Consumer registered with a Hub
receives through kombu's AsyncSQSConnection and acknowledges; the loop turns until the callback
has run, bounded in time.
"""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from server_clients import WORK_BOUND, client_module

from sqs_endpoint import Endpoint

kombu = client_module("kombu")
event_loop = client_module("kombu.asynchronous")

VISIBILITY = 30
# kombu's pycurl client calls what pycurl deprecates; nothing of the endpoint's.
pytestmark = [
    pytest.mark.filterwarnings("ignore:IOCTLFUNCTION is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:socket_all is deprecated:DeprecationWarning"),
]


def transport_options(**extra: Any) -> dict[str, Any]:
    # wait_time_seconds=1: a long poll of one real second at most (the fake clock is frozen; a
    # send or an advance answers it at once), so closing a connection never waits long.
    return {
        "region": "us-east-1",
        "is_secure": False,
        "visibility_timeout": VISIBILITY,
        "wait_time_seconds": 1,
        "polling_interval": 0,
        **extra,
    }


@pytest.fixture
def connect(sqs_endpoint: Endpoint) -> Iterator[Any]:
    where = urlsplit(sqs_endpoint.url)
    opened: list[Any] = []

    def connect(**options: Any) -> Any:
        connection = kombu.Connection(
            f"sqs://testing:testing@{where.hostname}:{where.port}",
            transport_options=transport_options(**options),
        )
        opened.append(connection)
        return connection

    yield connect
    for connection in opened:
        connection.release()


def receive_count(message: Any) -> int:
    return int(message.delivery_info["sqs_message"]["Attributes"]["ApproximateReceiveCount"])


def test_a_simple_queue_sends_receives_and_acknowledges(connect: Any) -> None:
    with connect().SimpleQueue("kombu-work") as work:
        work.put({"order": 42})
        message = work.get(timeout=WORK_BOUND)
        assert message.payload == {"order": 42}
        message.ack()
        with pytest.raises(work.Empty):
            work.get(block=False)


def test_an_unacknowledged_message_comes_back_after_the_visibility_timeout(
    connect: Any, sqs_endpoint: Endpoint
) -> None:
    with connect().SimpleQueue("kombu-redelivery") as work:
        work.put({"order": 7})
        first = work.get(timeout=WORK_BOUND)
        assert receive_count(first) == 1
        # The consumer died with it: nobody gets it while the timeout runs.
        sqs_endpoint.advance(VISIBILITY - 1)
        with pytest.raises(work.Empty):
            work.get(block=False)
        sqs_endpoint.advance(1)
        second = work.get(timeout=WORK_BOUND)
        assert second.payload == {"order": 7}
        assert receive_count(second) == 2
        second.ack()
        sqs_endpoint.advance(VISIBILITY)
        with pytest.raises(work.Empty):
            work.get(block=False)


def test_a_redrive_policy_moves_an_unacknowledged_message_to_the_dead_letter_queue(
    connect: Any, sqs_client: Any, sqs_endpoint: Endpoint
) -> None:
    # The queues exist before the consumers, as in a deployment: kombu uses them as predefined.
    dead = sqs_client.create_queue(QueueName="kombu-dead")["QueueUrl"]
    arn = sqs_client.get_queue_attributes(QueueUrl=dead, AttributeNames=["QueueArn"])
    policy = {"deadLetterTargetArn": arn["Attributes"]["QueueArn"], "maxReceiveCount": "1"}
    source = sqs_client.create_queue(
        QueueName="kombu-source",
        Attributes={"VisibilityTimeout": str(VISIBILITY), "RedrivePolicy": json.dumps(policy)},
    )["QueueUrl"]
    credentials = {"access_key_id": "testing", "secret_access_key": "testing"}
    predefined = {
        "kombu-source": {"url": source, **credentials},
        "kombu-dead": {"url": dead, **credentials},
    }
    connection = connect(predefined_queues=predefined)
    with connection.SimpleQueue("kombu-source") as work:
        work.put({"poison": True})
        message = work.get(timeout=WORK_BOUND)
        message.reject()  # kombu leaves it for the queue's redrive policy
        sqs_endpoint.advance(VISIBILITY)
        with pytest.raises(work.Empty):
            work.get(block=False)
    with connection.SimpleQueue("kombu-dead") as dead_letters:
        moved = dead_letters.get(timeout=WORK_BOUND)
        assert moved.payload == {"poison": True}
        moved.ack()


def test_a_fifo_queue_keeps_each_groups_order_and_drops_a_duplicate(connect: Any) -> None:
    with connect().SimpleQueue("kombu-jobs.fifo") as jobs:
        for body, group in [("a1", "a"), ("b1", "b"), ("a2", "a")]:
            jobs.put(body, MessageGroupId=group, MessageDeduplicationId=body)
        # A duplicate of a1 (same deduplication id, within the window) is not delivered again.
        jobs.put("a1", MessageGroupId="a", MessageDeduplicationId="a1")
        got = [jobs.get(timeout=WORK_BOUND) for _ in range(3)]
        bodies = [m.payload for m in got]
        assert sorted(bodies) == ["a1", "a2", "b1"]
        assert bodies.index("a1") < bodies.index("a2")  # a group's order
        for message in got:
            message.ack()
        with pytest.raises(jobs.Empty):
            jobs.get(block=False)


def test_the_asynchronous_transport_consumes_through_an_event_loop(connect: Any) -> None:
    connection = connect()
    hub = event_loop.Hub()
    # A channel takes the current event loop when it is made, as in a Celery worker's consumer.
    event_loop.set_event_loop(hub)
    connection.register_with_event_loop(hub)
    got: queue.Queue[Any] = queue.Queue()

    def on_message(body: Any, message: Any) -> None:
        message.ack()
        got.put(body)

    work = kombu.Queue("kombu-async")
    with connection.Producer() as producer:
        producer.publish({"n": 1}, routing_key="kombu-async", declare=[work])
        producer.publish({"n": 2}, routing_key="kombu-async", declare=[work])
    channel = connection.default_channel
    # The asynchronous half: kombu's own SQS connection over its pycurl client, on this hub.
    assert type(channel.asynsqs()._httpclient).__name__ == "CurlClient"
    with kombu.Consumer(channel, queues=[work], callbacks=[on_message], accept=["json"]):
        deadline = time.monotonic() + WORK_BOUND
        while got.qsize() < 2 and time.monotonic() < deadline:
            hub.run_once()
    hub.close()
    event_loop.set_event_loop(None)
    assert sorted(got.get_nowait()["n"] for _ in range(got.qsize())) == [1, 2]
    # Both acknowledged: the queue is empty.
    with connection.SimpleQueue("kombu-async") as again, pytest.raises(again.Empty):
        again.get(block=False)
