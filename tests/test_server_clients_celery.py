"""A Celery worker runs tasks through ``sqs://`` against the SQS endpoint, unmodified.

The worker runs in this process (celery.contrib.testing's ``start_worker``, the solo pool), so
its consumer is Celery's own: kombu's asynchronous SQS transport on the worker's event loop,
over pycurl. The queues are predefined (created first, as a deployment does): a task queue; a
queue whose RedrivePolicy allows three receives, where a task that rejects itself once (an
``acks_late`` task, so its message stays in flight) runs again when the visibility timeout has
passed (``advance``); one allowing a single receive, whose dead-letter queue gets such a task;
and a FIFO queue, whose tasks of one message group run in the order sent. The test waits for
the tasks' effects on bounded events, never on time.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from server_clients import WORK_BOUND, client_module

from sqs_endpoint import Endpoint

celery = client_module("celery")
kombu = client_module("kombu")
start_worker = client_module("celery.contrib.testing.worker").start_worker
Reject = client_module("celery.exceptions").Reject

# kombu's pycurl client calls what pycurl deprecates; nothing of the endpoint's.
pytestmark = [
    pytest.mark.filterwarnings("ignore:IOCTLFUNCTION is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:socket_all is deprecated:DeprecationWarning"),
]

VISIBILITY = 30
CREDENTIALS = {"access_key_id": "testing", "secret_access_key": "testing"}


@pytest.fixture
def queues(sqs_client: Any) -> dict[str, str]:
    dead = sqs_client.create_queue(QueueName="celery-dead")["QueueUrl"]
    arn = sqs_client.get_queue_attributes(QueueUrl=dead, AttributeNames=["QueueArn"])
    policy = {"deadLetterTargetArn": arn["Attributes"]["QueueArn"], "maxReceiveCount": "1"}
    attributes = {"VisibilityTimeout": str(VISIBILITY)}
    retry = {**policy, "maxReceiveCount": "3"}
    fifo = {"FifoQueue": "true", "ContentBasedDeduplication": "true", **attributes}
    return {
        "celery-work": sqs_client.create_queue(QueueName="celery-work", Attributes=attributes)[
            "QueueUrl"
        ],
        "celery-source": sqs_client.create_queue(
            QueueName="celery-source",
            Attributes={**attributes, "RedrivePolicy": json.dumps(policy)},
        )["QueueUrl"],
        "celery-retry": sqs_client.create_queue(
            QueueName="celery-retry",
            Attributes={**attributes, "RedrivePolicy": json.dumps(retry)},
        )["QueueUrl"],
        "celery-jobs.fifo": sqs_client.create_queue(QueueName="celery-jobs.fifo", Attributes=fifo)[
            "QueueUrl"
        ],
        "celery-dead": dead,
    }


@pytest.fixture
def app(sqs_endpoint: Endpoint, queues: dict[str, str]) -> Iterator[Any]:
    where = urlsplit(sqs_endpoint.url)
    app = celery.Celery("sqs-endpoint-test", set_as_current=False)
    app.conf.update(
        broker_url=f"sqs://testing:testing@{where.hostname}:{where.port}",
        broker_transport_options={
            "region": "us-east-1",
            "is_secure": False,
            "predefined_queues": {
                name: {"url": url, **CREDENTIALS} for name, url in queues.items()
            },
            "visibility_timeout": VISIBILITY,
            # A long poll of one real second at most: the worker's shutdown never waits longer.
            "wait_time_seconds": 1,
            "polling_interval": 0,
        },
        task_default_queue="celery-work",
        task_create_missing_queues=False,
        # SQS has no broadcast: no remote control, no events (Celery's documented SQS setup).
        worker_enable_remote_control=False,
        worker_send_task_events=False,
        task_ignore_result=True,
        broker_connection_retry_on_startup=False,
    )
    consumed = ("celery-work", "celery-source", "celery-retry", "celery-jobs.fifo")
    app.conf.task_queues = [kombu.Queue(name) for name in consumed]
    yield app
    app.close()


def test_a_worker_runs_a_task_sent_through_sqs(app: Any, queues: dict[str, str]) -> None:
    done = threading.Event()
    seen: list[int] = []

    @app.task(name="add")  # type: ignore[untyped-decorator]
    def add(x: int, y: int) -> None:
        seen.append(x + y)
        done.set()

    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=WORK_BOUND):
        add.delay(2, 3)
        assert done.wait(WORK_BOUND), "the worker did not run the task"
    assert seen == [5]


def test_a_rejected_task_reaches_the_dead_letter_queue_after_its_visibility_timeout(
    app: Any, queues: dict[str, str], sqs_client: Any, sqs_endpoint: Endpoint
) -> None:
    tried = threading.Event()

    @app.task(name="poison", acks_late=True)  # type: ignore[untyped-decorator]
    def poison() -> None:
        tried.set()
        raise Reject("cannot be done", requeue=False)

    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=WORK_BOUND):
        poison.apply_async(queue="celery-source")
        assert tried.wait(WORK_BOUND), "the worker did not run the task"
    # kombu leaves a rejected message on a queue with a redrive policy for SQS to dead-letter:
    # one receive allowed, so once the visibility timeout passes it is in the dead-letter queue.
    sqs_endpoint.advance(VISIBILITY)
    answer = sqs_client.receive_message(QueueUrl=queues["celery-dead"], MaxNumberOfMessages=10)
    (moved,) = answer.get("Messages", [])
    envelope = json.loads(base64.b64decode(moved["Body"]))
    assert envelope["headers"]["task"] == "poison"
    assert sqs_client.receive_message(QueueUrl=queues["celery-source"]).get("Messages", []) == []


def test_a_rejected_task_runs_again_once_its_visibility_timeout_has_passed(
    app: Any, sqs_endpoint: Endpoint
) -> None:
    attempts: list[int] = []
    first, second = threading.Event(), threading.Event()

    @app.task(name="flaky", acks_late=True)  # type: ignore[untyped-decorator]
    def flaky() -> None:
        attempts.append(len(attempts) + 1)
        if len(attempts) == 1:
            first.set()
            raise Reject("not yet", requeue=False)  # left in flight for the redrive policy
        second.set()

    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=WORK_BOUND):
        flaky.apply_async(queue="celery-retry")
        assert first.wait(WORK_BOUND), "the worker did not run the task"
        assert not second.is_set()
        sqs_endpoint.advance(VISIBILITY)
        assert second.wait(WORK_BOUND), "the task did not come back"
    assert attempts == [1, 2]


def test_a_fifo_queues_tasks_of_one_group_run_in_the_order_sent(app: Any) -> None:
    ran: list[int] = []
    all_done = threading.Event()

    @app.task(name="step")  # type: ignore[untyped-decorator]
    def step(n: int) -> None:
        ran.append(n)
        if len(ran) == 5:
            all_done.set()

    for n in range(5):
        step.apply_async((n,), queue="celery-jobs.fifo", MessageGroupId="order-42")
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=WORK_BOUND):
        assert all_done.wait(WORK_BOUND), f"the worker ran {ran}"
    assert ran == [0, 1, 2, 3, 4]
