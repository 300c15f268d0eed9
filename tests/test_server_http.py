"""The endpoint's HTTP/1.1 server (sqs_endpoint/http.py) over real sockets on 127.0.0.1.

An echo handler answers every request with what the server parsed (method, path, query,
headers, body), so each test checks the parse itself: keep-alive and pipelining on one socket,
``Connection: close`` and HTTP/1.0, chunked bodies, ``Expect: 100-continue`` (the interim
``100 Continue`` comes before the body is sent), the body limit answered before the body is
read, and every malformed request answered 4xx/5xx without hurting the next connection. A
handler that raises is a 500 and the connection lives on; ``close()`` cancels a handler that
is waiting. Socket timeouts are only safety bounds: nothing waits on wall time to coordinate.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest

from sqs_endpoint.http import HttpServer, Request, Response

T = TypeVar("T")
TIMEOUT = 10.0  # a safety bound on every socket read, never a wait for something to happen


class LoopThread:
    """An event loop in a background thread, for a server the test talks to over sockets."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(TIMEOUT)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(TIMEOUT)
        self.loop.close()


async def echo(request: Request) -> Response:
    if request.path == "/fail":
        raise RuntimeError("the handler failed")
    body = json.dumps(
        {
            "method": request.method,
            "path": request.path,
            "query": request.query,
            "version": request.version,
            "headers": dict(request.headers),
            "body": request.body.decode("latin-1"),
        }
    ).encode()
    return Response(200, {"Content-Type": "application/json"}, body)


class Running:
    def __init__(self, lt: LoopThread, server: HttpServer, port: int) -> None:
        self.lt, self.server, self.port = lt, server, port


@pytest.fixture
def srv() -> Iterator[Running]:
    lt = LoopThread()
    server = HttpServer(echo, max_body=1000)
    _, port = lt.run(server.start("127.0.0.1", 0))
    try:
        yield Running(lt, server, port)
    finally:
        lt.run(server.close())
        lt.close()


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    return sock


class Reader:
    """Reads responses off a raw socket: status, headers, a Content-Length body."""

    def __init__(self, sock: socket.socket) -> None:
        self.file = sock.makefile("rb")

    def response(self) -> tuple[int, dict[str, str], bytes]:
        status_line = self.file.readline()
        assert status_line.startswith(b"HTTP/1.1 "), status_line
        status = int(status_line.split()[1])
        headers: dict[str, str] = {}
        while True:
            line = self.file.readline().rstrip(b"\r\n")
            if not line:
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        body = self.file.read(int(headers.get("content-length", "0")))
        return status, headers, body

    def at_eof(self) -> bool:
        return self.file.read(1) == b""


def one_shot(port: int, data: bytes) -> tuple[int, dict[str, str], bytes]:
    with connect(port) as sock:
        sock.sendall(data)
        return Reader(sock).response()


def parsed(body: bytes) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(body)
    return value


# -- the basics ------------------------------------------------------------------------------------


def test_a_request_through_http_client(srv: Running) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=TIMEOUT)
    conn.request("POST", "/a/b?x=1&y=2", body=b"hello", headers={"X-Thing": "v"})
    resp = conn.getresponse()
    got = parsed(resp.read())
    assert resp.status == 200
    assert got["method"] == "POST"
    assert got["path"] == "/a/b"
    assert got["query"] == "x=1&y=2"
    assert got["body"] == "hello"
    assert got["headers"]["x-thing"] == "v"
    assert got["version"] == "HTTP/1.1"
    conn.close()


def test_keep_alive_answers_many_requests_on_one_connection(srv: Running) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=TIMEOUT)
    for i in range(5):
        conn.request("POST", f"/n/{i}", body=str(i).encode())
        resp = conn.getresponse()
        assert parsed(resp.read())["body"] == str(i)
        assert resp.getheader("Connection") is None
    assert srv.server.connections == 1
    conn.close()


def test_pipelined_requests_are_answered_in_order(srv: Running) -> None:
    with connect(srv.port) as sock:
        sock.sendall(
            b"POST /1 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
            b"GET /2 HTTP/1.1\r\nHost: h\r\n\r\n"
            b"POST /3 HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nConnection: close\r\n\r\nz"
        )
        reader = Reader(sock)
        bodies = [parsed(reader.response()[2]) for _ in range(3)]
        assert [(b["path"], b["body"]) for b in bodies] == [("/1", "abc"), ("/2", ""), ("/3", "z")]
        assert reader.at_eof()  # Connection: close on the last one


def test_connection_close_closes_after_the_response(srv: Running) -> None:
    with connect(srv.port) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        reader = Reader(sock)
        status, headers, _ = reader.response()
        assert status == 200
        assert headers["connection"] == "close"
        assert reader.at_eof()


def test_http_1_0_closes_unless_keep_alive(srv: Running) -> None:
    with connect(srv.port) as sock:
        sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
        reader = Reader(sock)
        assert reader.response()[0] == 200
        assert reader.at_eof()
    with connect(srv.port) as sock:
        sock.sendall(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        reader = Reader(sock)
        status, headers, _ = reader.response()
        assert (status, headers["connection"]) == (200, "keep-alive")
        sock.sendall(b"GET /again HTTP/1.0\r\n\r\n")
        assert parsed(reader.response()[2])["path"] == "/again"


def test_empty_lines_before_the_request_line_and_bare_lf(srv: Running) -> None:
    status, _, body = one_shot(srv.port, b"\r\n\r\nGET /lf HTTP/1.1\nHost: h\n\n")
    assert status == 200
    assert parsed(body)["path"] == "/lf"


def test_head_has_no_body(srv: Running) -> None:
    with connect(srv.port) as sock:
        sock.sendall(b"HEAD / HTTP/1.1\r\nHost: h\r\n\r\nGET /next HTTP/1.1\r\nHost: h\r\n\r\n")
        reader = Reader(sock)
        status, line, _ = reader.file.readline(), None, None
        assert status.startswith(b"HTTP/1.1 200")
        headers = {}
        while (line := reader.file.readline().rstrip(b"\r\n")) != b"":
            name, _, value = line.decode().partition(":")
            headers[name.lower()] = value.strip()
        assert int(headers["content-length"]) > 0  # the length a GET would have...
        # ...but no body: the next bytes are the next response.
        assert parsed(reader.response()[2])["path"] == "/next"


def test_repeated_headers_are_joined(srv: Running) -> None:
    _, _, body = one_shot(srv.port, b"GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-a: 2\r\n\r\n")
    assert parsed(body)["headers"]["x-a"] == "1, 2"


def test_absolute_form_target(srv: Running) -> None:
    _, _, body = one_shot(srv.port, b"GET http://h:1/p/q?a=b HTTP/1.1\r\nHost: h\r\n\r\n")
    got = parsed(body)
    assert (got["path"], got["query"]) == ("/p/q", "a=b")


# -- bodies ----------------------------------------------------------------------------------------


def test_chunked_body_is_decoded(srv: Running) -> None:
    status, _, body = one_shot(
        srv.port,
        b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\n",
    )
    assert status == 200
    assert parsed(body)["body"] == "hello world"


def test_chunked_body_over_the_limit_is_413(srv: Running) -> None:
    data = b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    data += b"3e8\r\n" + b"a" * 1000 + b"\r\n" + b"1\r\nb\r\n0\r\n\r\n"
    assert one_shot(srv.port, data)[0] == 413


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd", 400),
        (
            b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n",
            400,
        ),
        (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1x\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400),
        (b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
    ],
)
def test_bad_framing_is_refused(srv: Running, request_bytes: bytes, status: int) -> None:
    got, headers, _ = one_shot(srv.port, request_bytes)
    assert got == status
    assert headers["connection"] == "close"


def test_equal_repeated_content_length_is_accepted(srv: Running) -> None:
    data = b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab"
    status, _, body = one_shot(srv.port, data)
    assert (status, parsed(body)["body"]) == (200, "ab")


def test_oversize_body_is_413_before_the_body_is_sent(srv: Running) -> None:
    # Only the head is sent: the answer comes without the server waiting for 5000 bytes.
    with connect(srv.port) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5000\r\n\r\n")
        reader = Reader(sock)
        status, headers, body = reader.response()
        assert status == 413
        assert headers["connection"] == "close"
        assert b"1000" in body  # names the limit
        assert reader.at_eof()


def test_oversize_body_sent_anyway_still_gets_the_answer(srv: Running) -> None:
    # A client that writes its whole body before reading: the server reads and drops the rest
    # (rather than resetting the connection), so the client reads the 413.
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=TIMEOUT)
    conn.request("POST", "/", body=b"x" * 200_000)
    resp = conn.getresponse()
    assert resp.status == 413
    conn.close()


def test_expect_100_continue(srv: Running) -> None:
    with connect(srv.port) as sock:
        sock.sendall(
            b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n"
        )
        reader = Reader(sock)
        # The interim response comes before any body byte was sent.
        assert reader.file.readline() == b"HTTP/1.1 100 Continue\r\n"
        assert reader.file.readline() == b"\r\n"
        sock.sendall(b"body")
        status, _, body = reader.response()
        assert (status, parsed(body)["body"]) == (200, "body")


def test_expect_100_continue_over_the_limit_is_413_without_100(srv: Running) -> None:
    with connect(srv.port) as sock:
        sock.sendall(
            b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4000\r\nExpect: 100-continue\r\n\r\n"
        )
        assert Reader(sock).response()[0] == 413


def test_unknown_expectation_is_417(srv: Running) -> None:
    data = b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nExpect: magic\r\n\r\nx"
    assert one_shot(srv.port, data)[0] == 417


# -- malformed requests ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET /\r\nHost: h\r\n\r\n", 400),
        (b"GET / HTTP/1.1 extra\r\nHost: h\r\n\r\n", 400),
        (b"G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        (b"GET \xff HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        (b"GET nopath HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        (b"GET / HTTP/x\r\nHost: h\r\n\r\n", 400),
        (b"GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505),
        (b"GET / HTTP/1.1\r\n\r\n", 400),  # no Host
        (b"GET / HTTP/1.1\r\nHost: h\r\nno colon\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: h\r\nBad Name: v\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n folded\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: h\r\nX: a\x01b\r\n\r\n", 400),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400),  # a TLS hello
        (b"\r\n" * 20, 400),
    ],
)
def test_malformed_requests_are_refused(srv: Running, request_bytes: bytes, status: int) -> None:
    assert one_shot(srv.port, request_bytes)[0] == status
    # ...and the server goes on serving.
    assert one_shot(srv.port, b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")[0] == 200


def test_a_request_line_too_long_is_414(srv: Running) -> None:
    target = b"/" + b"a" * (1024 * 1024 + 10)
    assert one_shot(srv.port, b"GET " + target + b" HTTP/1.1\r\nHost: h\r\n\r\n")[0] == 414


def test_too_many_header_bytes_is_431(srv: Running) -> None:
    headers = b"".join(b"X-%d: %s\r\n" % (i, b"v" * 1000) for i in range(70))
    assert one_shot(srv.port, b"GET / HTTP/1.1\r\nHost: h\r\n" + headers + b"\r\n")[0] == 431


def test_too_many_header_fields_is_431(srv: Running) -> None:
    headers = b"".join(b"X-%d: v\r\n" % i for i in range(150))
    assert one_shot(srv.port, b"GET / HTTP/1.1\r\nHost: h\r\n" + headers + b"\r\n")[0] == 431


def test_a_client_that_hangs_up_mid_request_does_not_hurt_the_server(srv: Running) -> None:
    for partial in (b"GET / HT", b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc"):
        with connect(srv.port) as sock:
            sock.sendall(partial)
    assert one_shot(srv.port, b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")[0] == 200


def test_a_handler_that_raises_is_500_and_the_connection_lives_on(srv: Running) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=TIMEOUT)
    conn.request("GET", "/fail")
    resp = conn.getresponse()
    assert resp.status == 500
    resp.read()
    conn.request("GET", "/ok")
    assert conn.getresponse().status == 200
    conn.close()


# -- the error hook, the socket and close ----------------------------------------------------------


def test_the_error_hook_shapes_refusals() -> None:
    seen: list[tuple[str | None, int]] = []

    def hook(request: Request | None, error: Any) -> Response:
        seen.append((None if request is None else request.path, error.status))
        return Response(error.status, {"X-Hook": "yes"}, b"hooked", close=error.close)

    lt = LoopThread()
    server = HttpServer(echo, on_error=hook, max_body=10)
    _, port = lt.run(server.start("127.0.0.1", 0))
    try:
        status, headers, body = one_shot(port, b"BAD\r\n\r\n")
        assert (status, headers["x-hook"], body) == (400, "yes", b"hooked")
        status, _, _ = one_shot(
            port, b"POST /big HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n"
        )
        assert status == 413
        assert seen == [(None, 400), ("/big", 413)]
    finally:
        lt.run(server.close())
        lt.close()


def test_accepted_sockets_have_tcp_nodelay() -> None:
    flags: list[int] = []
    read = threading.Event()
    lt = LoopThread()
    server = HttpServer(echo)

    original = server._connection

    async def spy(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, over: bool = False
    ) -> None:
        task = asyncio.ensure_future(original(reader, writer, over))
        # The connection registers itself and sets its options before its first await.
        for _ in range(1000):
            if server.connections:
                break
            await asyncio.sleep(0)
        sock = writer.get_extra_info("socket")
        flags.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        read.set()
        await task

    server._connection = spy  # type: ignore[method-assign]
    _, port = lt.run(server.start("127.0.0.1", 0))
    try:
        assert one_shot(port, b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")[0] == 200
        assert read.wait(TIMEOUT)
        assert flags[0] != 0
    finally:
        lt.run(server.close())
        lt.close()


def test_close_cancels_a_waiting_handler_and_closes_idle_connections() -> None:
    lt = LoopThread()
    entered = threading.Event()
    cancelled = threading.Event()

    async def waits(request: Request) -> Response:
        if request.path == "/wait":
            entered.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise
        return Response(200, {}, b"ok")

    server = HttpServer(waits)
    _, port = lt.run(server.start("127.0.0.1", 0))
    idle = connect(port)
    idle.sendall(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    idle_reader = Reader(idle)
    assert idle_reader.response()[0] == 200
    busy = connect(port)
    busy.sendall(b"GET /wait HTTP/1.1\r\nHost: h\r\n\r\n")
    assert entered.wait(TIMEOUT)
    lt.run(server.close())
    assert cancelled.is_set()
    assert server.connections == 0
    assert idle_reader.at_eof()
    assert busy.recv(1) == b""
    idle.close()
    busy.close()
    with pytest.raises(OSError):
        connect(port).sendall(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n" * 1000)
    lt.close()


def test_bad_constructor_arguments() -> None:
    with pytest.raises(TypeError, match="handler"):
        HttpServer(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_body"):
        HttpServer(echo, max_body=-1)
