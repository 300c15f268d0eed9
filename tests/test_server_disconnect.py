"""A long poll whose client is gone takes nothing (docs/server.md, "Long polls and clients that
leave"): the endpoint watches a waiting ReceiveMessage's connection, and EOF, a reset or a
half-close cancels the wait through the asyncio queue's cancellation path (contract section 8;
``Cancel``/``Withdraw``/``PassOn`` in tla/AsyncQueue.tla). A message sent after the client left
goes to the next live receiver at once, never to the dead poll.

Coordination is by events and state: a spy around the real service says when the dead poll's
ReceiveMessage reached the service and when it returned, and the queue's own count of waiting
receives (``AsyncQueue.waiting``) says when a poll is parked, read on the endpoint's loop; no
test sleeps to decide anything, and the 20 s of the poll are far above every bound waited on.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

import boto3  # type: ignore[import-untyped]
import botocore.config  # type: ignore[import-untyped]
import botocore.exceptions  # type: ignore[import-untyped]
import pytest
from endpoint_loop import wait_until

import sqs_endpoint
from sqs_endpoint.service import Service

#: Seconds any one wait may take before the test fails (the dead poll waits 20 s).
TIMEOUT = 10.0
POLL_SECONDS = 20


class _Spy:
    """The real service, telling the test when a ReceiveMessage reached it and what it answered."""

    def __init__(self, inner: Service) -> None:
        self.inner = inner
        self.entered = threading.Event()
        self.ended = threading.Event()
        self.answers: list[dict[str, Any]] = []

    async def call(
        self, operation: str, params: dict[str, Any], *, base_url: str
    ) -> dict[str, Any]:
        if operation != "ReceiveMessage":
            return await self.inner.call(operation, params, base_url=base_url)
        self.entered.set()
        answer = await self.inner.call(operation, params, base_url=base_url)
        self.answers.append(answer)
        self.ended.set()
        return answer

    def queues(self) -> list[str]:
        return self.inner.queues()

    def receivers(self, name: str) -> int:
        """How many receives wait on queue ``name`` now (the impl queue's own count: no SQS
        operation says a poll is parked). Read on the endpoint's loop."""
        q: Any = self.inner._queues[name].q
        return int(q.waiting[0])

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.fixture
def served() -> Iterator[tuple[sqs_endpoint.Endpoint, _Spy]]:
    spies: list[_Spy] = []

    def build(clock: Any) -> _Spy:
        spies.append(_Spy(Service(clock)))
        return spies[-1]

    with sqs_endpoint.serve(port=0, clock="fake", service=build) as ep:
        yield ep, spies[0]


def _client(url: str, **config: Any) -> Any:
    return boto3.client(
        "sqs",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=botocore.config.Config(retries={"total_max_attempts": 1}, **config),
    )


def _name(fifo: bool) -> str:
    return "jobs.fifo" if fifo else "jobs"


def _queue(sqs: Any, fifo: bool) -> str:
    if fifo:
        attributes = {"FifoQueue": "true", "ContentBasedDeduplication": "true"}
        return str(sqs.create_queue(QueueName=_name(fifo), Attributes=attributes)["QueueUrl"])
    return str(sqs.create_queue(QueueName=_name(fifo))["QueueUrl"])


def _send(sqs: Any, url: str, fifo: bool, body: str) -> None:
    extra = {"MessageGroupId": "g"} if fifo else {}
    sqs.send_message(QueueUrl=url, MessageBody=body, **extra)


def _raw_poll(ep: sqs_endpoint.Endpoint, url: str, n: int) -> socket.socket:
    """A ReceiveMessage long poll sent over a raw socket (AWS JSON 1.0), not read."""
    body = json.dumps(
        {"QueueUrl": url, "WaitTimeSeconds": POLL_SECONDS, "MaxNumberOfMessages": n}
    ).encode()
    head = (
        f"POST / HTTP/1.1\r\nHost: {ep.host}:{ep.port}\r\n"
        "Content-Type: application/x-amz-json-1.0\r\n"
        "X-Amz-Target: AmazonSQS.ReceiveMessage\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock = socket.create_connection((ep.host, ep.port), timeout=TIMEOUT)
    sock.sendall(head + body)
    return sock


def _leave(sock: socket.socket, how: str) -> None:
    if how == "close":
        sock.close()
    elif how == "reset":
        # SO_LINGER with a zero timeout: close sends a RST instead of a FIN.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    else:  # half-close: the client's side is shut for writing, its socket stays open
        sock.shutdown(socket.SHUT_WR)


def _not_visible(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessagesNotVisible"])


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
@pytest.mark.parametrize("n", [1, 10])
@pytest.mark.parametrize("how", ["close", "reset", "half-close"])
def test_a_poll_whose_client_left_takes_nothing(
    served: tuple[sqs_endpoint.Endpoint, _Spy], fifo: bool, n: int, how: str
) -> None:
    ep, spy = served
    sqs = _client(ep.url)
    url = _queue(sqs, fifo)
    sock = _raw_poll(ep, url, n)
    assert spy.entered.wait(TIMEOUT)
    wait_until(ep, lambda: spy.receivers(_name(fifo)) == 1, "the poll is parked")
    _leave(sock, how)
    # The dead poll ends when its client leaves, not after its 20 s, answers nothing, and no
    # longer waits on the queue.
    assert spy.ended.wait(TIMEOUT)
    assert spy.answers == [{}]
    assert ep._on_loop(lambda: spy.receivers(_name(fifo))) == 0
    _send(sqs, url, fifo, "after-the-client-left")
    assert _not_visible(sqs, url) == 0
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=n, WaitTimeSeconds=0)
    assert [m["Body"] for m in got["Messages"]] == ["after-the-client-left"]
    sock.close()


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
@pytest.mark.parametrize("how", ["close", "reset", "half-close"])
def test_a_live_receiver_behind_a_dead_poll_gets_the_message_at_once(
    served: tuple[sqs_endpoint.Endpoint, _Spy], fifo: bool, how: str
) -> None:
    # The dead poll is first in line (parked first), a live one waits behind it; the dead
    # one's client leaves, then a message is sent: the live one gets it at once (not after
    # the dead poll's 20 s, not after a visibility timeout), the dead one took nothing.
    ep, spy = served
    sqs = _client(ep.url)
    url = _queue(sqs, fifo)
    name = _name(fifo)
    dead = _raw_poll(ep, url, 10)
    assert spy.entered.wait(TIMEOUT)
    wait_until(ep, lambda: spy.receivers(name) == 1, "the dead poll is parked")
    got: list[dict[str, Any]] = []

    def live() -> None:
        got.append(_client(ep.url).receive_message(QueueUrl=url, WaitTimeSeconds=POLL_SECONDS))

    receiver = threading.Thread(target=live)
    receiver.start()
    wait_until(ep, lambda: spy.receivers(name) == 2, "the live poll is parked behind it")
    _leave(dead, how)
    assert spy.ended.wait(TIMEOUT)
    assert spy.answers == [{}]  # the dead poll, first in line, ended and answered nothing
    assert ep._on_loop(lambda: spy.receivers(name)) == 1  # the live one still waits
    _send(sqs, url, fifo, "for-the-live-one")
    receiver.join(TIMEOUT)
    assert not receiver.is_alive()  # answered at once, not after the dead poll's 20 s
    assert [m["Body"] for m in got[0]["Messages"]] == ["for-the-live-one"]
    assert len(spy.answers) == 2
    dead.close()


@pytest.mark.parametrize("fifo", [False, True], ids=["standard", "fifo"])
def test_a_boto3_read_timeout_leaves_nothing_taken(
    served: tuple[sqs_endpoint.Endpoint, _Spy], fifo: bool
) -> None:
    ep, spy = served
    sqs = _client(ep.url)
    url = _queue(sqs, fifo)
    impatient = _client(ep.url, read_timeout=1)
    # botocore gives up after its read timeout and closes the connection (the server's EOF).
    with pytest.raises(botocore.exceptions.ReadTimeoutError):
        impatient.receive_message(QueueUrl=url, WaitTimeSeconds=POLL_SECONDS)
    impatient.close()
    assert spy.ended.wait(TIMEOUT)
    assert spy.answers == [{}]
    assert ep._on_loop(lambda: spy.receivers(_name(fifo))) == 0
    _send(sqs, url, fifo, "after-the-timeout")
    assert _not_visible(sqs, url) == 0
    got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0)
    assert [m["Body"] for m in got["Messages"]] == ["after-the-timeout"]
