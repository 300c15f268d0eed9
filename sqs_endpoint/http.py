"""A small HTTP/1.1 server on asyncio streams: what the SQS endpoint speaks, with no dependency.

SQS clients send short requests and read short answers over kept-alive connections, and a long
poll holds its connection open for up to 20 s without costing anything while it waits; an event
loop with one task per connection does both (a waiting receive is a future, never a thread).
What is implemented is what those clients need, done strictly enough that no request can crash
the server or hang a connection:

- the request line and headers (RFC 9112): a method token, a target, ``HTTP/1.0`` or
  ``HTTP/1.1``; ``name: value`` header lines (a folded line, a space before the colon or a
  control character is refused); HTTP/1.1 requires ``Host``;
- bodies by ``Content-Length`` or ``Transfer-Encoding: chunked`` (decoded, trailers read and
  dropped); another transfer coding is 501, both framings at once 400 (the request smuggling
  rule of RFC 9112 section 6.3);
- ``Expect: 100-continue`` (botocore sends it for large bodies): ``100 Continue`` once the
  body's size is known to be acceptable, or the final answer instead of it;
- a limit on the body (``max_body``) and on the head: a larger request is answered (413, 431,
  414) without reading the rest, and the connection is closed;
- keep-alive: HTTP/1.1's default, ``Connection: close`` honoured, HTTP/1.0 only with
  ``Connection: keep-alive``; requests pipelined on one connection are answered in order;
- ``TCP_NODELAY`` on every accepted socket: a response is one write, sent at once;
- connection limits, in real seconds (the ``DEFAULT_*`` constants): a connection that sends no
  request, or does not read its answer, for ``idle_timeout`` is dropped; a request not whole
  ``header_timeout`` after its first byte is answered 408; past ``max_connections`` open ones
  a new connection's request is answered 503. A handler that runs (a long poll) is not idle;
- the client leaving is seen while a handler runs: each connection's reader sets an event when
  the peer's EOF or a reset arrives (the stream protocol's ``eof_received`` and
  ``connection_lost``), without reading a byte, so request bytes pipelined meanwhile stay
  buffered for the next request. :func:`client_gone` gives a handler that event (a
  ``contextvars`` variable of the connection's task); the SQS service ends a long poll with it.

A request the parser refuses becomes an :class:`HttpError`, which the server's ``on_error``
hook turns into a response (the SQS app answers in the protocol the head names); a handler that
raises is logged and answered 500 by the same hook. :meth:`HttpServer.close` stops listening,
cancels every connection's task (a handler waiting in a long poll is cancelled, which the
asyncio queue's contract makes safe) and waits for them and for their sockets to close. A
cancelled connection ends quietly: the task is the server's own (not ``asyncio.start_server``'s,
whose done-callback reports a cancelled task as an error), and close() first stops accepting
and lets the connections asyncio has already accepted be made, so none is half made when the
listening socket closes (asyncio would then fail the connection's transport, log an
``AssertionError`` in debug mode and leave its socket to the garbage collector).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import re
import socket
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import urlsplit

__all__ = [
    "DEFAULT_MAX_BODY",
    "ErrorHook",
    "Handler",
    "HttpError",
    "HttpServer",
    "Request",
    "Response",
    "client_gone",
]

log = logging.getLogger("sqs_endpoint.http")

#: The largest request body read (bytes). A legal SQS request carries at most 1 MiB of
#: message data, which JSON's ``\u00XX`` escapes make up to six times longer and a form's
#: ``%XX`` three times; 8 MiB is above both with room for attributes, and bounds the memory one
#: request can take. The SQS size errors themselves (a message over the limit) are the
#: operations', this is only the transport's bound.
DEFAULT_MAX_BODY = 8 * 1024 * 1024
#: Connections the kernel queues before they are accepted. asyncio's default (100) is too few
#: for a test that opens a thousand long polls at once: a connection past the backlog is
#: retried by the client's kernel a second later (``python -m bench.http_stacks`` measures the
#: time to accept a thousand). The kernel caps it at ``net.core.somaxconn``.
LISTEN_BACKLOG = 1024
#: Seconds a connection may wait for the first byte of its next request (and a new connection
#: for its first): a kept-alive client that sends nothing is closed, silently. A waiting long
#: poll is not idle (the handler runs, no request is awaited). botocore opens a new connection
#: when a pooled one was closed, so a closed idle connection costs a client nothing. An answer
#: its client has not read within as long is dropped with its connection (a client that reads
#: nothing holds nothing).
DEFAULT_IDLE_TIMEOUT = 60.0
#: Seconds a request's head and body may take to arrive from its first byte: a client that
#: sends half a request is answered 408 and closed.
DEFAULT_HEADER_TIMEOUT = 30.0
#: The most connections open at once: past it a connection's first request is answered 503
#: (SQS's ``ServiceUnavailable``, which SQS clients retry) and the connection closed. Above a
#: thousand waiting long polls (``python -m bench``), under a default file-descriptor limit.
DEFAULT_MAX_CONNECTIONS = 4096
#: The longest request line: a query-protocol GET carries its whole request in the URL.
MAX_REQUEST_LINE = 1024 * 1024
#: The most bytes and lines of headers one request may have.
MAX_HEADER_BYTES = 64 * 1024
MAX_HEADERS = 100
#: The longest chunk-size line or trailer line of a chunked body.
_MAX_CHUNK_LINE = 4096

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VERSION = re.compile(rb"HTTP/([0-9])\.([0-9])")
_TARGET = re.compile(rb"[\x21-\x7e]+")  # visible ASCII: no space, no control, no 8-bit byte
_FIELD_VALUE_BAD = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_DIGITS = re.compile(r"[0-9]+")
#: How long and how much a refused request's remaining bytes are read and dropped (_linger).
_LINGER_SECONDS = 2.0
_LINGER_BYTES = 64 * 1024 * 1024
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")


class HttpError(Exception):
    """A request refused at the HTTP level: ``status`` and a message naming what is wrong.

    ``close`` (default True): the connection cannot be trusted to be at a request boundary
    any more (the body was not read), so it is closed after the answer.
    """

    def __init__(self, status: int, message: str, *, close: bool = True) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.close = close


@dataclass(frozen=True, slots=True)
class Request:
    """One parsed request. ``headers`` has lower-case names; repeated fields are joined with
    ``", "`` (RFC 9110 section 5.3). ``path`` and ``query`` are the target's parts, still
    percent-encoded. ``local`` is the server's (host, port) the connection came in on."""

    method: str
    target: str
    version: str
    headers: Mapping[str, str]
    body: bytes
    path: str
    query: str
    local: tuple[str, int]

    def header(self, name: str, default: str | None = None) -> str | None:
        """The value of header ``name`` (any case), or ``default``."""
        return self.headers.get(name.lower(), default)


@dataclass(slots=True)
class Response:
    """What a handler answers. ``Content-Length`` (and ``Connection`` when closing) are added
    by the server; ``close`` closes the connection after this response."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    close: bool = False


Handler = Callable[[Request], Awaitable[Response]]
#: Turns a refused request into a response: the request's head (body empty) if it was parsed
#: that far, else None.
ErrorHook = Callable[[Request | None, HttpError], Response]


def plain_error(request: Request | None, error: HttpError) -> Response:
    """The default ``on_error``: the status and the message as text."""
    return Response(
        error.status,
        {"Content-Type": "text/plain; charset=utf-8"},
        (error.message + "\n").encode("utf-8"),
        close=error.close,
    )


#: The event of the connection whose request the current task handles (see client_gone).
_GONE: contextvars.ContextVar[asyncio.Event | None] = contextvars.ContextVar(
    "sqs_endpoint_http_gone", default=None
)


def client_gone() -> asyncio.Event | None:
    """The event set once the client of the request being handled has closed its side of the
    connection (EOF, also a half-close: ``shutdown(SHUT_WR)``) or reset it; None outside an
    :class:`HttpServer` handler. It never clears: neither an EOF nor a reset is undone."""
    return _GONE.get()


class _Reader(asyncio.StreamReader):
    """A StreamReader that says when the peer is gone: ``gone`` is set by the protocol's EOF
    (``feed_eof``) or connection loss with an error (``set_exception``). Nothing is read for
    it, so bytes already buffered (a pipelined request) stay for the next request. Once the
    buffer holds over twice the limit the transport stops reading and a later EOF is seen only
    when the buffer drains: a client that pipelines megabytes behind a long poll is not
    watched."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit=limit)
        self.gone = asyncio.Event()

    def feed_eof(self) -> None:
        super().feed_eof()
        self.gone.set()

    def set_exception(self, exc: Exception) -> None:
        super().set_exception(exc)
        self.gone.set()


class _Closed(Exception):
    """The client closed the connection (or sent a partial request and then closed it)."""


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _has_token(value: str | None, token: str) -> bool:
    # A comma-separated list header (Connection, Transfer-Encoding, Expect) names ``token``.
    if value is None:
        return False
    return any(part.strip().lower() == token for part in value.split(","))


def check_limits(idle_timeout: float, header_timeout: float, max_connections: int) -> None:
    """``ValueError`` naming the first connection limit that is not one (see the ``DEFAULT_*``
    constants): timeouts are finite seconds > 0, the cap an int >= 1."""
    for name, value in (("idle_timeout", idle_timeout), ("header_timeout", header_timeout)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1e9:
            raise ValueError(f"{name} must be a finite number of seconds > 0, got {value!r}")
    if isinstance(max_connections, bool) or not isinstance(max_connections, int):
        raise ValueError(f"max_connections must be an int >= 1, got {max_connections!r}")
    if max_connections < 1:
        raise ValueError(f"max_connections must be an int >= 1, got {max_connections!r}")


class HttpServer:
    """Serve ``handler`` over HTTP/1.1 on one event loop (start it on the loop that runs it).

    ``on_error`` makes the response for a refused request (default: text); ``max_body`` bounds a
    request's body in bytes; ``idle_timeout``, ``header_timeout`` (seconds, real time: transport
    limits, not the queues' clock) and ``max_connections`` are the connection limits of the
    ``DEFAULT_*`` constants.
    """

    def __init__(
        self,
        handler: Handler,
        *,
        on_error: ErrorHook | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        header_timeout: float = DEFAULT_HEADER_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        if not callable(handler):
            raise TypeError(f"handler must be callable, got {type(handler).__name__}")
        if isinstance(max_body, bool) or not isinstance(max_body, int) or max_body < 0:
            raise ValueError(f"max_body must be an int >= 0, got {max_body!r}")
        check_limits(idle_timeout, header_timeout, max_connections)
        self.idle_timeout = float(idle_timeout)
        self.header_timeout = float(header_timeout)
        self.max_connections = max_connections
        self._handler = handler
        self._on_error = on_error if on_error is not None else plain_error
        self.max_body = max_body
        self._server: asyncio.Server | None = None
        # Every connection's task, from the moment the connection is made, with its writer.
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        # The tasks that are closing their connection already (in _connection's finally): not
        # cancelled by close(), which would cancel the close-waiter future they await (a future
        # the writer shares with every other waiter), only waited for.
        self._ending: set[asyncio.Task[None]] = set()
        # The connections under the cap (max_connections): every one but those refused past it.
        self._admitted: set[asyncio.Task[None]] = set()
        self._address: tuple[str, int] | None = None
        self._closing = False

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) listened on (the real port when started with port 0)."""
        if self._address is None:
            raise RuntimeError("the server is not started")
        return self._address

    @property
    def connections(self) -> int:
        """How many connections are open right now."""
        return len(self._connections)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> tuple[str, int]:
        """Listen on ``host``:``port`` (0: a free port); returns the address listened on."""
        if self._server is not None:
            raise RuntimeError("the server is already started")
        loop = asyncio.get_running_loop()

        def protocol() -> asyncio.StreamReaderProtocol:
            # asyncio.start_server's factory, with a reader that watches for the peer leaving.
            reader = _Reader(MAX_REQUEST_LINE + 1024)
            return asyncio.StreamReaderProtocol(reader, self._accepted, loop=loop)

        self._server = await loop.create_server(
            protocol, host, port, reuse_address=True, backlog=LISTEN_BACKLOG
        )
        name = self._server.sockets[0].getsockname()
        self._address = (str(name[0]), int(name[1]))
        return self._address

    async def close(self) -> None:
        """Stop listening, cancel every connection (and the handler it runs) and wait for them
        and for their sockets to close; an answer still unread by its client is dropped, not
        waited for. Idempotent."""
        self._closing = True
        server = self._server
        if server is not None and server.is_serving():
            # Stop accepting, then let the loop make the connections it has accepted already
            # (two passes: the transport is built in the first, connection_made, which
            # registers the task, runs in the second) before the listening socket closes; see
            # the module's docstring. Each such connection ends at once (_closing).
            loop = asyncio.get_running_loop()
            for sock in server.sockets:
                with contextlib.suppress(NotImplementedError):  # a loop without add_reader
                    loop.remove_reader(sock.fileno())
            for _ in range(2):
                await asyncio.sleep(0)
        if server is not None:
            server.close()
        while self._connections:  # a connection made meanwhile is closed too
            pending = dict(self._connections)
            for task, writer in pending.items():
                if task not in self._ending:
                    task.cancel()
                elif writer.transport.get_write_buffer_size():
                    # Closing already, its last answer not yet flushed to a client that may
                    # never read it: the server stopping does not wait for that client.
                    writer.transport.abort()
            await asyncio.gather(*pending, return_exceptions=True)
            for writer in pending.values():
                with contextlib.suppress(Exception):
                    await writer.wait_closed()
        if server is not None:
            await server.wait_closed()

    # -- one connection ---------------------------------------------------------------------------

    def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Called by asyncio when a connection is made. The task is made here, not by
        # asyncio.start_server: close() sees it from this moment, even before it first runs, and
        # no done-callback of asyncio's reports its cancellation as an error.
        # Past the cap, the connection's one request is refused. Only the admitted connections
        # count: a refused one lingers until its client has read the 503 (_linger), and counting
        # it would refuse the next client after a slot was freed.
        over = len(self._admitted) >= self.max_connections
        task = asyncio.get_running_loop().create_task(self._connection(reader, writer, over))
        self._connections[task] = writer
        if not over:
            self._admitted.add(task)
        task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._ending.discard(task)
        self._admitted.discard(task)
        writer = self._connections.pop(task, None)
        if writer is None:
            return
        # Closed by _connection's finally already, except for a task cancelled before it ever
        # ran (close() came first): its connection is closed here.
        writer.close()
        error = None if task.cancelled() else task.exception()
        if error is not None:
            # A bug (every expected failure ends the task normally): reported as asyncio
            # reports one of a start_server task.
            task.get_loop().call_exception_handler(
                {
                    "message": "Unhandled exception in client_connected_cb",
                    "exception": error,
                    "transport": writer.transport,
                }
            )

    async def _connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, over: bool = False
    ) -> None:
        try:
            if self._closing:
                return  # made while close() stopped accepting: closed at once
            sock = writer.get_extra_info("socket")
            if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
                # A response is written in one piece: send it now, not after the peer's ACK.
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            name = writer.get_extra_info("sockname")
            local = (str(name[0]), int(name[1])) if name else self.address
            if isinstance(reader, _Reader):
                # This task's own context (create_task copied it): seen by its handler only.
                _GONE.set(reader.gone)
            await self._requests(reader, writer, local, over)
        except (_Closed, ConnectionError, OSError):
            pass  # the peer went away: nothing to answer
        except asyncio.CancelledError:
            # close() cancelled it (a long poll's handler is cancelled with it, which takes
            # nothing): the connection's normal end, not an error.
            pass
        finally:
            task = asyncio.current_task()
            if task is not None:
                self._ending.add(task)
            await self._close_writer(writer)

    async def _requests(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        local: tuple[str, int],
        over: bool = False,
    ) -> None:
        while True:
            head: Request | None = None
            try:
                try:
                    # Idle: waiting for the next request's first byte (nothing consumed by the
                    # wait but that byte, handed to the head's reader).
                    async with asyncio.timeout(self.idle_timeout):
                        first = await reader.readexactly(1)
                except asyncio.IncompleteReadError:
                    return  # closed between requests
                except TimeoutError:
                    return  # idle too long: closed without an answer, as servers do
                try:
                    async with asyncio.timeout(self.header_timeout):
                        head = await self._read_head(reader, local, first)
                        if head is None:
                            return  # closed before the request line ended
                        if over:
                            raise HttpError(503, "too many connections open; retry later")
                        body = await self._read_body(reader, writer, head)
                except TimeoutError:
                    raise HttpError(
                        408, f"the request did not arrive within {self.header_timeout:g} s"
                    ) from None
            except HttpError as error:
                await self._write(writer, self._refused(head, error), head, close=True)
                await self._linger(reader, writer)
                return
            request = Request(
                head.method,
                head.target,
                head.version,
                head.headers,
                body,
                head.path,
                head.query,
                local,
            )
            try:
                response = await self._handler(request)
            except Exception as e:
                log.exception("the handler failed on %s %s", request.method, request.path)
                response = self._refused(request, HttpError(500, f"internal error: {e}"))
            close = response.close or self._closing or not self._keep_alive(head)
            await self._write(writer, response, head, close=close)
            if close:
                return

    async def _close_writer(self, writer: asyncio.StreamWriter) -> None:
        # Closing a transport first flushes what it still buffers, and a client that reads
        # nothing would hold that flush, and this task, forever: the flush is bounded as a
        # write is (_write), and not waited for at all once the server is closing.
        if self._closing and writer.transport.get_write_buffer_size():
            writer.transport.abort()
        writer.close()
        try:
            async with asyncio.timeout(self.idle_timeout):
                await writer.wait_closed()
        except TimeoutError:
            writer.transport.abort()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        except Exception:
            pass  # the connection's error (a reset): it is closed all the same

    def _refused(self, request: Request | None, error: HttpError) -> Response:
        try:
            return self._on_error(request, error)
        except Exception:
            log.exception("the error hook failed on %s", error.message)
            return plain_error(request, error)

    @staticmethod
    def _keep_alive(head: Request) -> bool:
        connection = head.header("connection")
        if _has_token(connection, "close"):
            return False
        if head.version == "HTTP/1.0":
            return _has_token(connection, "keep-alive")
        return True

    # -- reading ----------------------------------------------------------------------------------

    @staticmethod
    async def _line(reader: asyncio.StreamReader, limit: int, status: int, what: str) -> bytes:
        # One line without its CRLF (a bare LF is accepted, as RFC 9112 section 2.2 allows).
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.LimitOverrunError:
            raise HttpError(status, f"the {what} is longer than {limit} bytes") from None
        except asyncio.IncompleteReadError as e:
            raise _Closed from e
        if len(line) > limit + 2:
            raise HttpError(status, f"the {what} is longer than {limit} bytes")
        return line[:-2] if line.endswith(b"\r\n") else line[:-1]

    async def _read_head(
        self, reader: asyncio.StreamReader, local: tuple[str, int], first: bytes = b""
    ) -> Request | None:
        # The request line; empty lines before it are skipped (RFC 9112 section 2.2). ``first``
        # is its first byte, already read by the idle wait.
        for _ in range(8):
            try:
                if first == b"\n":
                    line = b""  # a bare LF: an empty line
                else:
                    line = await self._line(reader, MAX_REQUEST_LINE, 414, "request line")
                    line = first + line if first != b"\r" else line
            except _Closed:
                return None
            first = b""
            if line:
                break
        else:
            raise HttpError(400, "no request line")
        parts = line.split(b" ")
        if len(parts) != 3:
            raise HttpError(400, "the request line is not 'METHOD TARGET HTTP/1.1'")
        method, target, version = parts
        if not _TOKEN.fullmatch(method):
            raise HttpError(400, "the request method is not a token")
        if not _TARGET.fullmatch(target):
            raise HttpError(400, "the request target is empty or not visible ASCII")
        match = _VERSION.fullmatch(version)
        if match is None:
            raise HttpError(400, "the HTTP version is not HTTP/<digit>.<digit>")
        if match.group(1) != b"1":
            raise HttpError(505, f"HTTP version {version.decode('ascii')} is not supported")
        headers: dict[str, str] = {}
        lengths: list[str] = []
        total = 0
        while True:
            raw = await self._line(reader, MAX_HEADER_BYTES, 431, "header section")
            if not raw:
                break
            total += len(raw) + 2
            if total > MAX_HEADER_BYTES or len(headers) + len(lengths) > MAX_HEADERS:
                raise HttpError(
                    431,
                    f"the header section is over {MAX_HEADER_BYTES} bytes or {MAX_HEADERS} fields",
                )
            if raw[:1] in (b" ", b"\t"):
                raise HttpError(400, "a folded header line (obsolete line folding)")
            name, colon, value = raw.partition(b":")
            if not colon or not _TOKEN.fullmatch(name):
                raise HttpError(400, "a header line is not 'name: value'")
            value = value.strip(b" \t")
            if _FIELD_VALUE_BAD.search(value):
                raise HttpError(400, f"the header {name.decode('ascii')} has a control character")
            key = name.decode("ascii").lower()
            text = value.decode("latin-1")
            if key == "content-length":
                lengths.append(text)
                continue
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        if lengths:
            headers["content-length"] = ", ".join(lengths)
        version_text = version.decode("ascii")
        if version_text == "HTTP/1.1" and "host" not in headers:
            raise HttpError(400, "an HTTP/1.1 request must have a Host header")
        target_text = target.decode("ascii")
        path, query = self._split_target(target_text)
        return Request(
            method.decode("ascii"), target_text, version_text, headers, b"", path, query, local
        )

    @staticmethod
    def _split_target(target: str) -> tuple[str, str]:
        if target.startswith(("http://", "https://")):  # absolute form (RFC 9112 3.2.2)
            parts = urlsplit(target)
            return parts.path or "/", parts.query
        if target == "*":
            return "*", ""
        if not target.startswith("/"):
            raise HttpError(400, "the request target is not a path")
        path, _, query = target.partition("?")
        return path, query.partition("#")[0]

    async def _read_body(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: Request
    ) -> bytes:
        coding = head.header("transfer-encoding")
        length_text = head.header("content-length")
        if coding is not None and length_text is not None:
            raise HttpError(400, "both Transfer-Encoding and Content-Length are given")
        length: int | None = None
        if coding is not None:
            codings = [c.strip().lower() for c in coding.split(",")]
            if codings != ["chunked"]:
                raise HttpError(501, f"the transfer coding {coding!r} is not supported")
            if head.version == "HTTP/1.0":
                raise HttpError(400, "Transfer-Encoding in an HTTP/1.0 request")
        elif length_text is not None:
            values = {v.strip() for v in length_text.split(",")}
            if len(values) != 1 or not _DIGITS.fullmatch(next(iter(values))):
                raise HttpError(400, f"Content-Length {length_text!r} is not one number")
            length = int(next(iter(values)))
            if length > self.max_body:
                raise HttpError(
                    413, f"the body is {length} bytes, more than the limit of {self.max_body}"
                )
        else:
            return b""  # a request with neither has no body (RFC 9112 section 6.3)
        expect = head.header("expect")
        if expect is not None:
            if expect.strip().lower() != "100-continue":
                raise HttpError(417, f"the expectation {expect!r} is not supported")
            if head.version == "HTTP/1.1" and length != 0:
                writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                await writer.drain()
        if length is not None:
            try:
                return await reader.readexactly(length)
            except asyncio.IncompleteReadError as e:
                raise _Closed from e
        return await self._read_chunked(reader)

    async def _read_chunked(self, reader: asyncio.StreamReader) -> bytes:
        chunks: list[bytes] = []
        total = 0
        while True:
            line = await self._line(reader, _MAX_CHUNK_LINE, 400, "chunk size line")
            size_text = line.split(b";", 1)[0].strip(b" \t")
            if not _HEX.fullmatch(size_text):
                raise HttpError(400, "a chunk size is not a hexadecimal number")
            size = int(size_text, 16)
            if size == 0:
                break
            total += size
            if total > self.max_body:
                raise HttpError(413, f"the body is more than the limit of {self.max_body} bytes")
            try:
                chunks.append(await reader.readexactly(size))
                end = await reader.readexactly(2)
            except asyncio.IncompleteReadError as e:
                raise _Closed from e
            if end != b"\r\n":
                raise HttpError(400, "a chunk does not end with CRLF")
        # The trailer section: read to its end, kept nowhere (nothing here uses trailers).
        count = 0
        while await self._line(reader, _MAX_CHUNK_LINE, 400, "trailer line"):
            count += 1
            if count > MAX_HEADERS:
                raise HttpError(431, f"more than {MAX_HEADERS} trailer fields")
        return b"".join(chunks)

    @staticmethod
    async def _linger(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # After refusing a request whose rest was not read: half-close, then read and drop what
        # the client still sends for a moment. Closing with unread data would make the kernel
        # answer with a reset, and a client still writing its body would see that instead of the
        # response. Bounded in bytes and in (real, transport) time.
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()
            dropped = 0
            async with asyncio.timeout(_LINGER_SECONDS):
                while dropped < _LINGER_BYTES:
                    data = await reader.read(65536)
                    if not data:
                        return
                    dropped += len(data)

    # -- writing ----------------------------------------------------------------------------------

    async def _write(
        self,
        writer: asyncio.StreamWriter,
        response: Response,
        head: Request | None,
        *,
        close: bool,
    ) -> None:
        status = response.status
        lines = [f"HTTP/1.1 {status} {_reason(status)}"]
        for name, value in response.headers.items():
            lower = name.lower()
            if lower in ("content-length", "connection", "transfer-encoding"):
                continue  # the server's own framing
            # A header value never carries CR or LF (no response splitting, whatever a handler
            # put there).
            clean = value.replace("\r", " ").replace("\n", " ")
            lines.append(f"{name}: {clean}")
        bodyless = status in (204, 304) or 100 <= status < 200
        if not bodyless:
            lines.append(f"Content-Length: {len(response.body)}")
        if close:
            lines.append("Connection: close")
        elif head is not None and head.version == "HTTP/1.0":
            lines.append("Connection: keep-alive")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
        if not bodyless and (head is None or head.method != "HEAD"):
            data += response.body
        writer.write(data)
        try:
            # A client that does not read its answer would hold the connection, and the
            # answer's buffer, for as long as it likes: it has idle_timeout seconds to read
            # it, as it has to send its next request; then the connection is dropped.
            async with asyncio.timeout(self.idle_timeout):
                await writer.drain()
        except TimeoutError:
            writer.transport.abort()
            raise _Closed from None
