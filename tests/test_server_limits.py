"""The endpoint's connection limits (docs/server.md, "Connection limits"): an idle keep-alive
timeout, a header timeout and a cap on open connections, each a ``serve()`` keyword and a
``python -m sqs_endpoint`` flag; a waiting long poll is not idle.

The limits are real-time transport bounds, so the tests set them small (a fraction of a second)
and wait for the server's answer or EOF with bounds far above them: what is decided is what
arrives (EOF, a 408, a 503), never how long it took.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import boto3  # type: ignore[import-untyped]
import botocore.config  # type: ignore[import-untyped]
import pytest

import sqs_endpoint
from sqs_endpoint.http import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
)

#: Seconds a read waits for the server before the test fails (the limits are 0.2-0.3 s).
TIMEOUT = 10.0


def connect(ep: sqs_endpoint.Endpoint) -> socket.socket:
    return socket.create_connection((ep.host, ep.port), timeout=TIMEOUT)


def list_queues(ep: sqs_endpoint.Endpoint) -> bytes:
    body = b"{}"
    return (
        f"POST / HTTP/1.1\r\nHost: {ep.host}:{ep.port}\r\n"
        "Content-Type: application/x-amz-json-1.0\r\nX-Amz-Target: AmazonSQS.ListQueues\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def read_response(sock: socket.socket) -> tuple[int, bytes]:
    """One response (status, body) from a kept-alive connection (Content-Length framing)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a response: {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk
        rest += chunk
    return int(head.split(b" ", 2)[1]), rest[:length]


@pytest.fixture
def quick() -> Iterator[sqs_endpoint.Endpoint]:
    with sqs_endpoint.serve(port=0, idle_timeout=0.3, header_timeout=0.3) as ep:
        yield ep


def test_a_connection_that_sends_nothing_is_closed(quick: sqs_endpoint.Endpoint) -> None:
    with connect(quick) as sock:
        assert read_all(sock) == b""  # EOF, no answer: nothing was asked


def test_a_kept_alive_connection_is_closed_once_idle(quick: sqs_endpoint.Endpoint) -> None:
    with connect(quick) as sock:
        sock.sendall(list_queues(quick))
        status, _ = read_response(sock)
        assert status == 200
        sock.sendall(list_queues(quick))  # a second request on it is served as well
        assert read_response(sock)[0] == 200
        assert read_all(sock) == b""


@pytest.mark.parametrize(
    "partial",
    [b"POST / HTTP/1.1\r\nHost: x\r\n", b"GET /?Action=ListQueues HT", b"P"],
    ids=["headers", "request-line", "one-byte"],
)
def test_half_a_request_is_answered_408_and_closed(
    quick: sqs_endpoint.Endpoint, partial: bytes
) -> None:
    with connect(quick) as sock:
        sock.sendall(partial)
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408 "), answer


def test_a_body_that_stops_is_answered_408(quick: sqs_endpoint.Endpoint) -> None:
    with connect(quick) as sock:
        sock.sendall(list_queues(quick).replace(b"Content-Length: 2", b"Content-Length: 20"))
        answer = read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b"MalformedHttpRequestException" in answer


def test_a_waiting_long_poll_is_not_idle(quick: sqs_endpoint.Endpoint) -> None:
    # A 2 s poll on a server whose idle timeout is 0.3 s: answered (empty) as SQS answers,
    # the connection not closed under it.
    sqs = boto3.client(
        "sqs",
        endpoint_url=quick.url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=botocore.config.Config(retries={"total_max_attempts": 1}, read_timeout=30),
    )
    url = sqs.create_queue(QueueName="polled")["QueueUrl"]
    answer = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=2)
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert "Messages" not in answer


def test_past_the_cap_a_request_is_answered_503_and_closed() -> None:
    with sqs_endpoint.serve(port=0, max_connections=2) as ep:
        held = [connect(ep), connect(ep)]
        try:
            for sock in held:  # both served (so both counted), and kept open
                sock.sendall(list_queues(ep))
                assert read_response(sock)[0] == 200
            with connect(ep) as third:
                third.sendall(list_queues(ep))
                answer = read_all(third)
            head, _, body = answer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 503 "), answer
            assert "ServiceUnavailable" in json.loads(body)["__type"]
            # The held connections still work; one closed makes room for a new one.
            held[0].sendall(list_queues(ep))
            assert read_response(held[0])[0] == 200
            held.pop().close()
            served = False
            for _ in range(200):  # the server sees the close in a loop pass or two
                with connect(ep) as again:
                    again.sendall(list_queues(ep))
                    if read_response(again)[0] == 200:
                        served = True
                        break
            assert served
        finally:
            for sock in held:
                sock.close()


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"idle_timeout": 0}, "idle_timeout"),
        ({"idle_timeout": float("inf")}, "idle_timeout"),
        ({"header_timeout": -1}, "header_timeout"),
        ({"header_timeout": "5"}, "header_timeout"),
        ({"max_connections": 0}, "max_connections"),
        ({"max_connections": 2.5}, "max_connections"),
        ({"max_connections": True}, "max_connections"),
    ],
)
def test_bad_limits_are_refused_naming_the_argument(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        sqs_endpoint.serve(port=0, **kwargs)


def test_the_flags_and_their_defaults() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sqs_endpoint", "--help"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert f"(default {DEFAULT_IDLE_TIMEOUT:g};" in text and "--idle-timeout" in text
    assert f"(default {DEFAULT_HEADER_TIMEOUT:g})" in text and "--header-timeout" in text
    assert f"(default {DEFAULT_MAX_CONNECTIONS})" in text and "--max-connections" in text
    bad = subprocess.run(
        [sys.executable, "-m", "sqs_endpoint", "--port", "0", "--idle-timeout", "-1"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "--idle-timeout" in bad.stderr, bad.stderr
