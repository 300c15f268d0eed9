"""The endpoint's connection limits (docs/server.md, "Connection limits"): an idle keep-alive
timeout, a header timeout and a cap on open connections, each a ``serve()`` keyword and a
``python -m sqs_endpoint`` flag; a waiting long poll is not idle.

The limits are real-time transport bounds, so the tests set them small (a fraction of a second)
and wait for the server's answer or EOF with bounds far above them: what is decided is what
arrives (EOF, a 408, a 503, a cut answer), never how long it took.
"""

from __future__ import annotations

import json
import resource
import select
import selectors
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3  # type: ignore[import-untyped]
import botocore.config  # type: ignore[import-untyped]
import botocore.exceptions  # type: ignore[import-untyped]
import pytest
from endpoint_loop import wait_until

import sqs_endpoint
from sqs_endpoint.__main__ import FILES_BESIDE_CONNECTIONS
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


def test_a_request_trickled_in_is_answered_408_when_its_time_is_up(
    quick: sqs_endpoint.Endpoint,
) -> None:
    # A slow client (slowloris): every byte comes, one at a time, each well within the idle
    # timeout; the header timeout runs from the first byte, so the request, never whole in
    # time, is answered 408. The pace is the wait for that answer (a select on the socket).
    request = list_queues(quick)
    sent = 0
    with connect(quick) as sock:
        while sent < len(request):
            readable, _, _ = select.select([sock], [], [], 0.1)
            if readable:
                break
            sock.sendall(request[sent : sent + 1])
            sent += 1
        answer = read_all(sock)
    assert sent < len(request), "the whole request went out before any answer"
    assert answer.startswith(b"HTTP/1.1 408 "), answer


#: A body near SQS's 256 KiB limit: ten of them make an answer of 2.5 MB; ASKED answers (each
#: receive releases its messages at once, VisibilityTimeout 0, for the next) are far more than
#: the socket buffers between the server and a client that reads nothing hold (Linux's
#: default caps: 4 MiB to send, and the client's window is made small).
BIG_BODY = "x" * 250_000
ASKED = 8


def unread_answer(ep: sqs_endpoint.Endpoint) -> tuple[socket.socket, int]:
    """A client that asks for ten big messages ASKED times on one connection and reads
    nothing, once the server is stuck writing an answer (its transport holds what the socket
    does not take); and the answers' size, were they all sent."""
    url = ep.call("CreateQueue", {"QueueName": "big"})["QueueUrl"]
    for _ in range(10):
        ep.call("SendMessage", {"QueueUrl": url, "MessageBody": BIG_BODY})
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window, set early
    sock.settimeout(TIMEOUT)
    sock.connect((ep.host, ep.port))
    params = {"QueueUrl": url, "MaxNumberOfMessages": 10, "VisibilityTimeout": 0}
    body = json.dumps(params).encode()
    request = (
        f"POST / HTTP/1.1\r\nHost: {ep.host}:{ep.port}\r\n"
        "Content-Type: application/x-amz-json-1.0\r\nX-Amz-Target: AmazonSQS.ReceiveMessage\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    sock.sendall(request * ASKED)
    http = ep._http
    assert http is not None
    wait_until(
        ep,
        lambda: any(w.transport.get_write_buffer_size() for w in http._connections.values()),
        "the server is writing an answer the client does not read",
    )
    return sock, ASKED * 10 * len(BIG_BODY)


def test_an_answer_not_read_within_the_idle_timeout_is_dropped(
    quick: sqs_endpoint.Endpoint,
) -> None:
    # A client that asks and then reads nothing holds nothing: once it has not read for the
    # idle timeout, the server drops the connection with the rest of the answer.
    sock, size = unread_answer(quick)
    with sock:
        http = quick._http
        assert http is not None
        wait_until(quick, lambda: http.connections == 0, "the connection is dropped")
        received = 0
        try:
            while chunk := sock.recv(65536):
                received += len(chunk)
        except ConnectionResetError:
            pass  # the server closed with the answer's rest unsent: a reset is fair too
    assert received < size  # cut: the server did not wait for the client to read it all


def test_closing_the_endpoint_does_not_wait_for_a_client_that_reads_nothing() -> None:
    # The default idle timeout (60 s) is far above this test's bound: Endpoint.close (what
    # SIGTERM runs) drops the unread answer's connection at once rather than wait for it.
    ep = sqs_endpoint.serve(port=0)
    closing = threading.Thread(target=ep.close, daemon=True)
    try:
        sock, _ = unread_answer(ep)
    finally:
        closing.start()  # whether or not the client got stuck as meant: no endpoint left over
    with sock:
        closing.join(TIMEOUT)
        assert not closing.is_alive(), "Endpoint.close waits for a client that reads nothing"


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


def test_past_the_cap_boto3_retries_and_then_reports_service_unavailable() -> None:
    # What a real client makes of the 503: a retryable ServiceUnavailable (a 5xx that is the
    # endpoint's own answer, not a failure), retried on a new connection, refused again while
    # the one allowed connection stays held.
    with sqs_endpoint.serve(port=0, max_connections=1) as ep, connect(ep) as held:
        held.sendall(list_queues(ep))
        assert read_response(held)[0] == 200
        retries = botocore.config.Config(retries={"total_max_attempts": 2, "mode": "standard"})
        sqs = boto3.client(
            "sqs", endpoint_url=ep.url, region_name="us-east-1", aws_access_key_id="x",
            aws_secret_access_key="x", config=retries,
        )  # fmt: skip
        with pytest.raises(botocore.exceptions.ClientError) as info:
            sqs.list_queues()
        answer = info.value.response
        assert answer["Error"]["Code"] == "ServiceUnavailable"
        assert answer["ResponseMetadata"]["HTTPStatusCode"] == 503
        assert answer["ResponseMetadata"]["RetryAttempts"] == 1
        sqs.close()


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


def soft_file_limit(pid: int) -> int:
    """The soft limit on open files of process ``pid`` (Linux's /proc)."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError("no 'Max open files' line")


@pytest.mark.skipif(not Path("/proc/self/limits").is_file(), reason="reads Linux's /proc")
@pytest.mark.parametrize("hard", ["enough", "too low"])
def test_the_command_raises_its_open_file_limit_for_the_cap(hard: str) -> None:
    # A soft limit of 512 (as 1024, common, it is below the default cap): the command raises
    # it to room for --max-connections, up to the hard limit; if the hard limit is lower, it
    # says so in one line on stderr, and serves all the same.
    wanted = DEFAULT_MAX_CONNECTIONS + FILES_BESIDE_CONNECTIONS
    _, hard_now = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == "enough" and hard_now != resource.RLIM_INFINITY and hard_now < wanted:
        pytest.skip(f"the hard limit here ({hard_now}) is below {wanted}")
    low_hard = 600 if hard == "too low" else hard_now
    # python -m sqs_endpoint --port 0, in a process whose limits are set first.
    code = (
        "import resource, runpy, sys; "
        f"resource.setrlimit(resource.RLIMIT_NOFILE, (512, {low_hard})); "
        "sys.argv = ['sqs_endpoint', '--port', '0']; "
        "runpy.run_module('sqs_endpoint', run_name='__main__', alter_sys=True)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        with selectors.DefaultSelector() as ready:
            ready.register(process.stdout, selectors.EVENT_READ)
            assert ready.select(60), "no banner"
        assert process.stdout.readline().startswith("SQS endpoint on http://")
        expected = wanted if hard == "enough" else low_hard
        assert soft_file_limit(process.pid) == expected
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0 and out.splitlines()[-1] == "stopped", out + err
        warnings = [line for line in err.splitlines() if "open-file limit" in line]
        if hard == "enough":
            assert warnings == [], err
        else:
            assert len(warnings) == 1 and "--max-connections" in warnings[0], err
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
