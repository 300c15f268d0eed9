"""Closing the endpoint (and its HTTP server) while clients still hold connections open is quiet.

Three kinds of open connection when ``Endpoint.close`` runs: a kept-alive one that has had its
answer, one whose ``ReceiveMessage`` is parked in a 20 s long poll, and one connected that has
sent nothing. Closing logs nothing at WARNING or above (with asyncio's debug mode on, so that
what asyncio reports only then is seen too), calls the loop's exception handler for nothing,
writes no traceback to stderr, and every socket sees EOF; the cancelled long poll has taken
nothing and left no waiter behind. And a connection that asyncio has accepted just as
``HttpServer.close`` begins (its transport not yet made) is closed like the others, with nothing
reported.

Nothing here waits on wall time: the long poll having begun is read from the queue's state
(as tests/test_impl_aio_scale.py reads it), the connections from the server's count, each in a
bounded number of hops to the endpoint's loop; socket timeouts are only safety bounds.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import Callable
from typing import Any

import pytest

import sqs_endpoint
from sqs_endpoint.http import HttpServer, Request, Response
from sqs_endpoint.service import Service

TIMEOUT = 10.0  # a safety bound on every socket read, never a wait for something to happen
HOPS = 10_000  # a safety bound on the loop hops a wait for the server's state may take


def request(op: str, params: dict[str, Any]) -> bytes:
    """One SQS JSON request, whole, as bytes on the wire."""
    body = json.dumps(params).encode()
    head = (
        f"POST / HTTP/1.1\r\nHost: h\r\nX-Amz-Target: AmazonSQS.{op}\r\n"
        f"Content-Type: application/x-amz-json-1.0\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def read_response(sock: socket.socket) -> bytes:
    """One response with a Content-Length body (what the endpoint writes)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"EOF before a whole response head: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "EOF inside a response body"
        body += chunk
    assert len(body) == length, "more bytes than one response"
    return head


def sees_eof(sock: socket.socket) -> bool:
    """Whether the peer closed: the next read is EOF (nothing unread before it)."""
    sock.settimeout(TIMEOUT)
    return sock.recv(1) == b""


class Waiting:
    """The endpoint's service, keeping the test told what its queues are doing; on ``aclose``
    (after the HTTP server has closed every connection, before the queues close) it records
    what each queue holds and how many receives still wait on it."""

    def __init__(self, inner: Service) -> None:
        self.inner = inner
        self.at_close: dict[str, tuple[Any, int]] = {}

    async def call(
        self, operation: str, params: dict[str, Any], *, base_url: str
    ) -> dict[str, Any]:
        return await self.inner.call(operation, params, base_url=base_url)

    def queues(self) -> list[str]:
        return self.inner.queues()

    def receivers(self, name: str) -> int:
        """How many receives wait on queue ``name`` (the queue's own count: no SQS
        operation says a poll is parked)."""
        q: Any = self.inner._queues[name].q
        return int(q.waiting[0])

    async def aclose(self) -> None:
        for name in self.inner.queues():
            self.at_close[name] = (self.inner._queues[name].q.stats(), self.receivers(name))
        await self.inner.aclose()


def wait_until(ep: sqs_endpoint.Endpoint, what: Callable[[], bool], about: str) -> None:
    """Hop to the endpoint's loop until ``what()`` holds there (a bounded number of hops)."""
    for _ in range(HOPS):
        if ep._on_loop(what):
            return
    raise AssertionError(f"never happened: {about}")


def test_closing_with_open_connections_is_quiet_and_closes_every_one(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    spy: list[Waiting] = []
    reported: list[dict[str, Any]] = []  # what the loop's exception handler is called with

    def factory(clock: Any) -> Waiting:
        spy.append(Waiting(Service(clock)))
        return spy[0]

    caplog.set_level(logging.DEBUG)
    ep = sqs_endpoint.serve(port=0, clock="fake", service=factory)
    sockets: list[socket.socket] = []
    http = ep._http
    loop = ep._loop
    assert http is not None and loop is not None
    try:

        def watch() -> None:
            # Debug mode: asyncio reports more (a transport it failed to make, say); no slow
            # callback warning, which would only say the machine is loaded.
            loop.set_debug(True)
            loop.slow_callback_duration = 3600.0
            loop.set_exception_handler(lambda _loop, context: reported.append(context))

        ep._on_loop(watch)
        url = ep.call("CreateQueue", {"QueueName": "q"})["QueueUrl"]

        kept = socket.create_connection(("127.0.0.1", ep.port), timeout=TIMEOUT)
        sockets.append(kept)
        kept.sendall(request("ListQueues", {}))
        assert read_response(kept).startswith(b"HTTP/1.1 200 ")

        polling = socket.create_connection(("127.0.0.1", ep.port), timeout=TIMEOUT)
        sockets.append(polling)
        polling.sendall(request("ReceiveMessage", {"QueueUrl": url, "WaitTimeSeconds": 20}))
        wait_until(ep, lambda: spy[0].receivers("q") == 1, "the long poll is parked")

        silent = socket.create_connection(("127.0.0.1", ep.port), timeout=TIMEOUT)
        sockets.append(silent)
        wait_until(ep, lambda: http.connections == 3, "three connections are open")
    finally:
        ep.close()

    assert all(sees_eof(s) for s in sockets)
    assert http.connections == 0  # close() waited for every connection's task
    for s in sockets:
        s.close()
    # The cancelled long poll took nothing and waits no more (the queue's contract).
    stats, receivers = spy[0].at_close["q"]
    assert (stats.visible, stats.in_flight, receivers) == (0, 0, 0)
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert loud == [], [f"{r.name}: {r.getMessage()}" for r in loud]
    assert reported == []
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception ignored" not in err, err


async def ok(request: Request) -> Response:
    return Response(200, {}, b"ok")


@pytest.mark.parametrize("passes", range(5))
def test_a_connection_accepted_as_close_begins_is_closed_quietly(
    passes: int, caplog: pytest.LogCaptureFixture
) -> None:
    # A client connects, the loop runs ``passes`` times (in one of them asyncio accepts the
    # connection and schedules the making of its transport), then close() begins: for some
    # number of passes, between the accept and the transport (a window closing the listening
    # socket at once fell into, asyncio then failing the transport in debug mode's report).
    caplog.set_level(logging.DEBUG)
    outcome: list[bytes | str] = []
    reported: list[dict[str, Any]] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.slow_callback_duration = 3600.0
        loop.set_exception_handler(lambda _loop, context: reported.append(context))
        http = HttpServer(ok)
        _, port = await http.start("127.0.0.1", 0)
        # A blocking connect on the loop's own thread: on loopback the kernel completes it at
        # once (the server accepts it later, from the loop).
        client = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        try:
            for _ in range(passes):
                await asyncio.sleep(0)
            await http.close()
            assert http.connections == 0
            client.settimeout(TIMEOUT)
            try:
                outcome.append(client.recv(1))  # EOF: the server made and closed it
            except ConnectionResetError:
                outcome.append("reset")  # never accepted: the kernel refused it at close
        finally:
            client.close()

    asyncio.run(main(), debug=True)
    assert outcome in ([b""], ["reset"])
    assert reported == []
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert loud == [], [f"{r.name}: {r.getMessage()}" for r in loud]
